/* kernels.h: the table of hot-loop kernels, filled per ISA at run time. */
#ifndef LINATTN_SIMD_KERNELS_H
#define LINATTN_SIMD_KERNELS_H

#include <stddef.h>

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
    /* One head, one token, one pass over S (dk x dv, row-major):
     *   S = decay S + phik v^T;  z = decay z + phik;
     *   out = (phiq^T S) / (phiq^T z + eps)
     * S and z are the updated sums (they include this token). decay is in
     * (0, 1]; decay == 1 runs the undecayed loop, bit for bit. The division:
     * by a reciprocal while den >= FLT_MIN, elementwise below it (1/den
     * would overflow), and out = 0 when den == 0. */
    void (*linear_update_read)(float *S, float *z, const float *phik, const float *v,
                               const float *phiq, float *out, size_t dk, size_t dv,
                               float eps, float decay);
    /* y[r] = W[r,:] . x + (b ? b[r] : 0), W is rows x cols with row stride ldw. */
    void (*gemv)(float *y, const float *W, size_t ldw, const float *x, const float *b,
                 size_t rows, size_t cols);
    /* C[M x N] += A[M x K] . B[N x K]^T, leading dimensions lda, ldb, ldc. */
    void (*gemm_nt)(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                    size_t ldb, size_t M, size_t N, size_t K);
    /* C[M x N] += A[M x K] . B[K x N], leading dimensions lda, ldb, ldc. */
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
