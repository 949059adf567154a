/* kernels.h: the table of hot-loop kernels, filled per ISA at run time. */
#ifndef LINATTN_SIMD_KERNELS_H
#define LINATTN_SIMD_KERNELS_H

#include <stddef.h>

/* Rows a blocked linear-attention state keeps before folding them into its
 * sums (engine/attention_linear.c): the most linear_block_read takes. */
#define LINATTN_BLOCK_ROWS 16

/* All tensors fp32, row-major. Pointers need no alignment. n may be 0. */
typedef struct linattn_kernels {
    /* sum a[i]*b[i] */
    float (*dot)(const float *a, const float *b, size_t n);
    /* max x[i]; -inf when n == 0 */
    float (*max)(const float *x, size_t n);
    /* sum x[i] */
    float (*sum)(const float *x, size_t n);
    /* y += a*x */
    void (*axpy)(float *y, float a, const float *x, size_t n);
    /* x *= a */
    void (*scale)(float *x, float a, size_t n);
    /* y = exp(x - m), returns sum y (the softmax row core). m is finite;
     * x may be -inf (gives 0). y may alias x. */
    float (*exp_sub_sum)(float *y, const float *x, float m, size_t n);
    /* y = elu(x) + 1: x + 1 for x > 0, exp(x) otherwise. y may alias x. */
    void (*elu1)(float *y, const float *x, size_t n);
    /* y = max(x, 0). y may alias x. */
    void (*relu)(float *y, const float *x, size_t n);
    /* y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). y may alias x. */
    void (*gelu)(float *y, const float *x, size_t n);
    /* y = (x - mean) / sqrt(var + eps) * w + b (biased variance). y may alias x. */
    void (*layernorm)(float *y, const float *x, const float *w, const float *b,
                      size_t n, float eps);
    /* y = x / sqrt(mean(x^2) + eps) * w. y may alias x. */
    void (*rmsnorm)(float *y, const float *x, const float *w, size_t n, float eps);
    /* One query row of one head against a blocked linear-attention state
     * (the state is only read):
     *   w_j = pw[j] (phiq . K_j) for j < n;
     *   out = (c phiq^T S + sum_j w_j V_j) / (c phiq . z + sum_j w_j + eps)
     * S is dk x dv row-major, z dk; K (n x dk) and V (n x dv) are dense
     * rows, 0 <= n <= LINATTN_BLOCK_ROWS; pw[n] and c are weights >= 0 (1
     * without decay). The division: by a reciprocal while den >= FLT_MIN,
     * elementwise below it (1/den would overflow), out = 0 when den == 0. */
    void (*linear_block_read)(float *out, const float *phiq, const float *S, const float *z,
                              const float *K, const float *V, const float *pw, int n, float c,
                              size_t dk, size_t dv, float eps);
    /* y[r] = W[r,:] . x + (b ? b[r] : 0), W is rows x cols with row stride ldw. */
    void (*gemv)(float *y, const float *W, size_t ldw, const float *x, const float *b,
                 size_t rows, size_t cols);
    /* C[M x N] += A[M x K] . B[N x K]^T, leading dimensions lda, ldb, ldc. */
    void (*gemm_nt)(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                    size_t ldb, size_t M, size_t N, size_t K);
    /* C[M x N] += A[M x K] . B[K x N], leading dimensions lda, ldb, ldc.
     * Each C element's K-term sum is formed apart from C and added to it
     * once (per 256 terms): a linear state folds a block of keys into a
     * large S this way without losing their low bits (checked by checkasm). */
    void (*gemm_nn)(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                    size_t ldb, size_t M, size_t N, size_t K);
} linattn_kernels;

/* Fills k with the scalar kernels, then the best ones the flags
 * (LINATTN_CPU_* bits) allow. flags = 0 gives pure scalar. */
void linattn_kernels_init(linattn_kernels *k, unsigned flags);

/* Per-ISA fillers, each in its own ISA-flagged file. */
void linattn_kernels_init_scalar(linattn_kernels *k);
void linattn_kernels_init_avx2(linattn_kernels *k);
void linattn_kernels_init_neon(linattn_kernels *k);

#endif
