/* kernels.h: the one list of hot-loop kernels, the table generated from it, and every ISA's declarations. */
#ifndef LINATTN_SIMD_KERNELS_H
#define LINATTN_SIMD_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Rows a blocked linear-attention state keeps before folding them into its
 * sums (engine/attention_linear.c): the most linear_block_read takes. */
#define LINATTN_BLOCK_ROWS 16
/* Weights per scale of an int8 (Q8) matrix, along its rows. */
#define LINATTN_Q8_GROUP 32

/* The kernels. All tensors fp32, row-major; pointers need no alignment; n
 * may be 0. "y may alias x" where said.
 *
 * dot          sum a[i]*b[i]
 * max          max x[i]; NaN when any x[i] is NaN or +-inf (a score that is
 *              not finite is never dropped); -inf when n == 0
 * sum          sum x[i]
 * axpy         y += a*x
 * scale        x *= a
 * exp_sub_sum  y = exp(x - m), returns sum y (the softmax row core). m is
 *              finite (or NaN: every y and the sum NaN); x may be -inf
 *              (gives 0). y may alias x.
 * elu1         y = elu(x) + 1: x + 1 for x > 0, exp(x) otherwise. Aliases.
 * relu         y = max(x, 0). Aliases.
 * gelu         y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Aliases.
 * silu_mul     y = g / (1 + exp(-g)) * u: SwiGLU's silu(gate) times up. y may
 *              alias g. Below g = -88.7 exp(-g) overflows and y is 0.
 * layernorm    y = (x - mean) / sqrt(var + eps) * w + b (biased variance;
 *              b may be NULL). Aliases.
 * rmsnorm      y = x / sqrt(mean(x^2) + eps) * w. Aliases.
 * linear_block_read
 *              One query row of one head against a blocked linear-attention
 *              state (only read):
 *                w_j = pw[j] (phiq . K_j) for j < n;
 *                out = (c phiq^T S + sum_j w_j V_j) / (c phiq . z + sum_j w_j + eps)
 *              S is dk x dv, z dk; K (n x dk) and V (n x dv) dense rows,
 *              0 <= n <= LINATTN_BLOCK_ROWS; pw[n] and c are weights >= 0 (1
 *              without decay). The division: by a reciprocal while
 *              den >= FLT_MIN, elementwise below it (1/den would overflow),
 *              out = 0 when den == 0.
 * linear_block_rows
 *              m consecutive query rows (phiq: m rows of dk) against one
 *              state whose waiting rows grow by one a row: row r (0 <= r < m)
 *              is linear_block_read(out + r ldo, phiq + r dk, S, z, K, V,
 *              pw + (m - 1 - r), n0 + r + 1, c[r], dk, dv, eps), bit for bit
 *              this ISA's (a prefill's rows are the decode step's), with S
 *              read once per few rows. n0 >= 0, n0 + m <= LINATTN_BLOCK_ROWS.
 * gemv         y[r] = W[r,:] . x + (b ? b[r] : 0), W rows x cols, stride ldw.
 * gemv_f16, gemv_bf16
 *              gemv with W stored as IEEE half or bfloat16 (uint16_t, ldw in
 *              elements), converted to fp32 in registers (exactly); x, b, y
 *              fp32. A weight matrix used as the file stores it.
 * gemm_nt      C[M x N] += A[M x K] . B[N x K]^T (leading dimensions given).
 * gemm_nt_f16, gemm_nt_bf16
 *              gemm_nt with B stored as half or bfloat16 (converted while
 *              packing or loading); A and C fp32.
 * gemm_nn      C[M x N] += A[M x K] . B[K x N]. Each C element's K-term sum
 *              is formed apart from C and added to it once (per 256 terms):
 *              a linear state folds a block of keys into a large S this way
 *              without losing their low bits (checked exactly by checkasm).
 * gemm_nn_f16  gemm_nn with B stored as half (a KV cache in F16): the same
 *              FMAs in the same order as gemm_nn on B's values in fp32.
 * gemv_q8      gemv with W stored as int8 with one fp32 scale per
 *              LINATTN_Q8_GROUP columns of a row: W[r, c] = Wq[r, c] S[r, c/32]
 *              (S row stride ldw / 32); cols and ldw multiples of 32.
 * gemm_nt_q8   gemm_nt with B int8 and scales S likewise (K, ldb multiples
 *              of 32); each weight dequantized (w s, rounded once) while
 *              packing.
 * gemv_q8_0    gemv with W in ggml's Q8_0 blocks (simd/q8_0.h; ldw in bytes,
 *              cols a multiple of 32): x quantized per block as ggml does
 *              (linattn_q8_0_quantize, the same on every ISA), then per block
 *              the exact integer dot product times d_w d_x, summed in fp32
 *              onto b (y may alias b: a prefill adds into its output rows).
 * gemv_quant   gemv with W in another ggml block type (type: its ggml number,
 *              simd/quants.h; ldw in bytes, cols a multiple of the block):
 *              x quantized as for gemv_q8_0 (the K-quants: as Q8_K, one
 *              fp32 scale per 256, linattn_q8_K_quantize), exact integer
 *              dot products per block (a K-quant's whole super-block, its
 *              integer scales included), scaled in fp32, the offsets
 *              against x's sums, onto b (y may alias b).
 * gemm_quant   C[M x N] += A[M x K] . W^T with W's N rows in ggml blocks of
 *              type (ldw bytes apart): row i of C is, bit for bit, this ISA's
 *              gemv_q8_0 (type Q8_0) or gemv_quant (the others) of W and
 *              A's row i onto C's row i as b: a few rows (a batch of
 *              streams' steps, a short prompt) as the steps, each weight
 *              block read once for four rows.
 * gemm_quant_xq
 *              C[M x N] += A . W^T for a prompt, W's N rows in ggml blocks of
 *              type (ldw bytes apart; linattn_quant_xq_takes(type): Q4_0,
 *              Q8_0, Q4_K, Q6_K) and A's M rows already quantized as the decode
 *              step quantizes them for type (linattn_q8_0_quantize, the
 *              K-quants linattn_q8_K_quantize): row i's K int8 at Aq + i
 *              lda, per 32 of them the scale Ad (fp32: the half's value, or
 *              Q8_K's scale of its 256 again for each 32) and the sum of the
 *              32 q As, both at i (lda / 32) + K / 32 of the row's blocks;
 *              lda and K multiples of 32 (of 256 for the K-quants). Per 32
 *              the exact integer dot product (the weights' offset against
 *              As), times d_w and d_a in fp32 (Q4_K: its sub-block's scale d
 *              sc, less its min dmin m times d_a As; Q6_K: per 16, d sc),
 *              summed over the blocks and onto
 *              C: a row equals gemv_q8_0 / gemv_quant's on the same x to fp32
 *              rounding (only the order of the fp32 sums differs).
 * quantize_q8_0
 *              x (n, a multiple of 32) quantized per 32 as
 *              linattn_q8_0_quantize does, bit for bit (q[n], the scales'
 *              values d[n / 32]: NaN for a block with a NaN or an infinity,
 *              whose q are 0), and s[n / 32] the sums of each 32 q: a
 *              prompt's rows for gemm_quant_xq.
 * quantize_q8_K
 *              x (n, a multiple of 256) quantized per 256 as
 *              linattn_q8_K_quantize does, bit for bit (q[n]; its scales
 *              given again for each 32, d[n / 32]), and s[n / 32] the sums
 *              of each 32 q: a prompt's rows for gemm_quant_xq's K-quants.
 * dequant      y (rows x cols, dense) = W's values in ggml blocks of type
 *              as floats, bit for bit linattn_quant_values' (scale q - min).
 * to_f16       y[i] = x[i] as IEEE half, rounded to nearest even; overflow
 *              gives +-inf, NaN stays NaN (quiet; payload not kept).
 * gemm_tn      gemm_nn with A stored transposed: C[M x N] += A^T . B[K x N],
 *              A's element (i, p) at A[p lda + i] (A is K x M); the same
 *              contract. A block of key rows folds into S as they are.
 *
 * X(name, return type, (parameters)): adding a kernel is one line here, its
 * implementations (linattn_<name>_<isa> in each ISA's files), and its check
 * in tests/checkasm.c (which will not build without one). */
#define LINATTN_KERNELS(X)                                                                         \
    X(dot, float, (const float *a, const float *b, size_t n))                                      \
    X(max, float, (const float *x, size_t n))                                                      \
    X(sum, float, (const float *x, size_t n))                                                      \
    X(axpy, void, (float *y, float a, const float *x, size_t n))                                   \
    X(scale, void, (float *x, float a, size_t n))                                                  \
    X(exp_sub_sum, float, (float *y, const float *x, float m, size_t n))                           \
    X(elu1, void, (float *y, const float *x, size_t n))                                            \
    X(relu, void, (float *y, const float *x, size_t n))                                            \
    X(gelu, void, (float *y, const float *x, size_t n))                                            \
    X(silu_mul, void, (float *y, const float *g, const float *u, size_t n))                        \
    X(layernorm, void,                                                                             \
      (float *y, const float *x, const float *w, const float *b, size_t n, float eps))            \
    X(rmsnorm, void, (float *y, const float *x, const float *w, size_t n, float eps))              \
    X(linear_block_read, void,                                                                     \
      (float *out, const float *phiq, const float *S, const float *z, const float *K,             \
       const float *V, const float *pw, int n, float c, size_t dk, size_t dv, float eps))        \
    X(gemv, void,                                                                                  \
      (float *y, const float *W, size_t ldw, const float *x, const float *b, size_t rows,         \
       size_t cols))                                                                               \
    X(gemm_nt, void,                                                                               \
      (float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb, size_t M,    \
       size_t N, size_t K))                                                                        \
    X(gemv_f16, void,                                                                              \
      (float *y, const uint16_t *W, size_t ldw, const float *x, const float *b, size_t rows,      \
       size_t cols))                                                                               \
    X(gemv_bf16, void,                                                                             \
      (float *y, const uint16_t *W, size_t ldw, const float *x, const float *b, size_t rows,      \
       size_t cols))                                                                               \
    X(gemm_nt_f16, void,                                                                           \
      (float *C, size_t ldc, const float *A, size_t lda, const uint16_t *B, size_t ldb, size_t M, \
       size_t N, size_t K))                                                                        \
    X(gemm_nt_bf16, void,                                                                          \
      (float *C, size_t ldc, const float *A, size_t lda, const uint16_t *B, size_t ldb, size_t M, \
       size_t N, size_t K))                                                                        \
    X(gemm_nn, void,                                                                               \
      (float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb, size_t M,    \
       size_t N, size_t K))                                                                        \
    X(gemm_nn_f16, void,                                                                           \
      (float *C, size_t ldc, const float *A, size_t lda, const uint16_t *B, size_t ldb, size_t M, \
       size_t N, size_t K))                                                                        \
    X(to_f16, void, (uint16_t *y, const float *x, size_t n))                                       \
    X(gemv_q8, void,                                                                               \
      (float *y, const int8_t *W, const float *S, size_t ldw, const float *x, const float *b,     \
       size_t rows, size_t cols))                                                                  \
    X(gemm_nt_q8, void,                                                                            \
      (float *C, size_t ldc, const float *A, size_t lda, const int8_t *B, const float *S,         \
       size_t ldb, size_t M, size_t N, size_t K))                                                  \
    X(gemm_tn, void,                                                                               \
      (float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb, size_t M,    \
       size_t N, size_t K))                                                                        \
    X(dequant, void,                                                                               \
      (float *y, const uint8_t *W, size_t ldw, int type, size_t rows, size_t cols))              \
    X(quantize_q8_0, void, (int8_t *q, float *d, int32_t *s, const float *x, size_t n))           \
    X(quantize_q8_K, void, (int8_t *q, float *d, int32_t *s, const float *x, size_t n))           \
    X(linear_block_rows, void,                                                                     \
      (float *out, size_t ldo, const float *phiq, const float *S, const float *z, const float *K, \
       const float *V, const float *pw, const float *c, int n0, int m, size_t dk, size_t dv,      \
       float eps))                                                                                 \
    LINATTN_DOT_KERNELS(X)

/* The kernels built on integer dot products: an ISA's capability (AVX-VNNI,
 * AVX-512 VNNI, Armv8.2 dotprod) gives them again in its own files,
 * linattn_<name>_<isa><capability>, bit for bit the ISA's own (the integer
 * sums are exact either way), and the ladder swaps them in. */
#define LINATTN_DOT_KERNELS(X)                                                                     \
    X(gemv_q8_0, void,                                                                             \
      (float *y, const uint8_t *W, size_t ldw, const float *x, const float *b, size_t rows,       \
       size_t cols))                                                                               \
    X(gemv_quant, void,                                                                            \
      (float *y, const uint8_t *W, size_t ldw, int type, const float *x, const float *b,         \
       size_t rows, size_t cols))                                                                  \
    X(gemm_quant, void,                                                                            \
      (float *C, size_t ldc, const float *A, size_t lda, const uint8_t *W, size_t ldw, int type,  \
       size_t M, size_t N, size_t K))                                                              \
    X(gemm_quant_xq, void,                                                                         \
      (float *C, size_t ldc, const int8_t *Aq, const float *Ad, const int32_t *As, size_t lda,    \
       const uint8_t *W, size_t ldw, int type, size_t M, size_t N, size_t K))

typedef struct linattn_kernels {
#define LINATTN_KERNEL_FIELD(name, ret, params) ret(*name) params;
    LINATTN_KERNELS(LINATTN_KERNEL_FIELD)
#undef LINATTN_KERNEL_FIELD
    /* What callers choose algorithms by (not the ISA's name): */
    int blocked_gemm; /* gemm_nn/gemm_nt are register-blocked (not dot by dot) */
} linattn_kernels;

/* Every ISA's kernels, linattn_<name>_<isa>: one line an ISA (declaring an
 * ISA this build lacks is harmless; nothing refers to it). */
#define LINATTN_KERNEL_DECL(isa, name, ret, params) ret linattn_##name##_##isa params;
#define LINATTN_DECL_scalar(name, ret, params) LINATTN_KERNEL_DECL(scalar, name, ret, params)
#define LINATTN_DECL_avx2(name, ret, params) LINATTN_KERNEL_DECL(avx2, name, ret, params)
#define LINATTN_DECL_avx512(name, ret, params) LINATTN_KERNEL_DECL(avx512, name, ret, params)
#define LINATTN_DECL_neon(name, ret, params) LINATTN_KERNEL_DECL(neon, name, ret, params)
LINATTN_KERNELS(LINATTN_DECL_scalar)
LINATTN_KERNELS(LINATTN_DECL_avx2)
LINATTN_KERNELS(LINATTN_DECL_avx512)
LINATTN_KERNELS(LINATTN_DECL_neon)
#define LINATTN_DECL_avx2vnni(name, ret, params) LINATTN_KERNEL_DECL(avx2vnni, name, ret, params)
#define LINATTN_DECL_avx512vnni(name, ret, params) LINATTN_KERNEL_DECL(avx512vnni, name, ret, params)
#define LINATTN_DECL_neondot(name, ret, params) LINATTN_KERNEL_DECL(neondot, name, ret, params)
LINATTN_DOT_KERNELS(LINATTN_DECL_avx2vnni)
LINATTN_DOT_KERNELS(LINATTN_DECL_avx512vnni)
LINATTN_DOT_KERNELS(LINATTN_DECL_neondot)

/* Fills k with the scalar kernels, then climbs the ladder (scalar -> avx2 ->
 * avx512 on x86-64, scalar -> neon on aarch64) as far as the flags (LINATTN_CPU_*
 * bits) allow, each step's dot-product kernels replaced when its capability
 * is among the flags. flags = 0 gives pure scalar. Built without ISA flags: only
 * stores pointers. */
void linattn_kernels_init(linattn_kernels *k, unsigned flags);

#endif
