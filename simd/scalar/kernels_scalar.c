/* kernels_scalar.c: the reference kernels; always built, the checker's oracle. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../f16.h"
#include "../kernels.h"
#include "../q8_0.h"
#include "../quants.h"

float linattn_dot_scalar(const float *a, const float *b, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

float linattn_max_scalar(const float *x, size_t n)
{
    float m = -INFINITY, f = 0.0f; /* f: NaN once an x is NaN or +-inf */
    for (size_t i = 0; i < n; i++) {
        m = x[i] > m ? x[i] : m;
        f += x[i] * 0.0f;
    }
    return m + f;
}

float linattn_sum_scalar(const float *x, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

void linattn_axpy_scalar(float *y, float a, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

void linattn_scale_scalar(float *x, float a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= a;
}

float linattn_exp_sub_sum_scalar(float *y, const float *x, float m, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++) {
        y[i] = expf(x[i] - m);
        s += y[i];
    }
    return s;
}

void linattn_elu1_scalar(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] + 1.0f : expf(x[i]);
}

void linattn_relu_scalar(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void linattn_gelu_scalar(float *y, const float *x, size_t n)
{
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
}

void linattn_silu_mul_scalar(float *y, const float *g, const float *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void linattn_layernorm_scalar(float *y, const float *x, const float *w, const float *b,
                             size_t n, float eps)
{
    float mean = 0.0f, var = 0.0f;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (float)n;
    for (size_t i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean);
    var /= (float)n;
    float inv = 1.0f / sqrtf(var + eps);
    for (size_t i = 0; i < n; i++)
        y[i] = (x[i] - mean) * inv * w[i] + (b ? b[i] : 0.0f);
}

void linattn_rmsnorm_scalar(float *y, const float *x, const float *w, size_t n, float eps)
{
    float ss = 0.0f;
    for (size_t i = 0; i < n; i++)
        ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] * inv * w[i];
}

void linattn_linear_block_read_scalar(float *out, const float *phiq, const float *S,
                                     const float *z, const float *K, const float *V,
                                     const float *pw, int n, float c, size_t dk, size_t dv,
                                     float eps)
{
    float w[LINATTN_BLOCK_ROWS];
    float den = c * linattn_dot_scalar(phiq, z, dk);
    for (int j = 0; j < n; j++) {
        w[j] = pw[j] * linattn_dot_scalar(phiq, K + (size_t)j * dk, dk);
        den += w[j];
    }
    for (size_t col = 0; col < dv; col++)
        out[col] = 0.0f;
    for (size_t i = 0; i < dk; i++)
        linattn_axpy_scalar(out, phiq[i], S + i * dv, dv);
    for (size_t col = 0; col < dv; col++)
        out[col] *= c;
    for (int j = 0; j < n; j++)
        linattn_axpy_scalar(out, w[j], V + (size_t)j * dv, dv);
    float d = den + eps;
    if (d >= FLT_MIN) {
        float inv = 1.0f / d;
        for (size_t col = 0; col < dv; col++)
            out[col] *= inv;
    } else {
        for (size_t col = 0; col < dv; col++)
            out[col] = d == 0.0f ? 0.0f : out[col] / d;
    }
}

void linattn_linear_block_rows_scalar(float *out, size_t ldo, const float *phiq, const float *S,
                                      const float *z, const float *K, const float *V,
                                      const float *pw, const float *c, int n0, int m, size_t dk,
                                      size_t dv, float eps)
{
    for (int r = 0; r < m; r++)
        linattn_linear_block_read_scalar(out + (size_t)r * ldo, phiq + (size_t)r * dk, S, z, K, V,
                                         pw + (m - 1 - r), n0 + r + 1, c[r], dk, dv, eps);
}

void linattn_gemv_scalar(float *y, const float *W, size_t ldw, const float *x, const float *b,
                        size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        y[r] = linattn_dot_scalar(W + r * ldw, x, cols) + (b ? b[r] : 0.0f);
}

void linattn_gemm_nt_scalar(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                           size_t ldb, size_t M, size_t N, size_t K)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C[i * ldc + j] += linattn_dot_scalar(A + i * lda, B + j * ldb, K);
}

/* A half as fp32, exactly, inline (the hot loops below; f16.c's
 * linattn_f16_to_f32 is the reference it is checked against by checkasm):
 * rebias the exponent; infinities and NaNs get the top exponent; a
 * subnormal is rebuilt as 2^-14 (1.m) - 2^-14 = 0.m 2^-14 by one exact
 * float subtraction. */
static inline float f16_value(uint16_t h)
{
    const uint32_t shifted_exp = 0x7c00u << 13;
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13, exp = o & shifted_exp;
    o += (uint32_t)(127 - 15) << 23;
    float f;
    if (exp == shifted_exp) {
        o += (uint32_t)(128 - 16) << 23;
    } else if (exp == 0) {
        o += 1u << 23;
        memcpy(&f, &o, sizeof f);
        f -= 0x1p-14f;
        memcpy(&o, &f, sizeof o);
    }
    o |= (uint32_t)(h & 0x8000u) << 16;
    memcpy(&f, &o, sizeof f);
    return f;
}

static inline float bf16_value(uint16_t h)
{
    uint32_t o = (uint32_t)h << 16;
    float f;
    memcpy(&f, &o, sizeof f);
    return f;
}

/* sum w[i]*x[i], w halfs (bf = 0) or bfloat16s (bf = 1), in the order of
 * dot_scalar. */
static inline float dot_half(const uint16_t *w, const float *x, size_t n, int bf)
{
    float s = 0.0f;
    if (bf)
        for (size_t i = 0; i < n; i++)
            s += bf16_value(w[i]) * x[i];
    else
        for (size_t i = 0; i < n; i++)
            s += f16_value(w[i]) * x[i];
    return s;
}

void linattn_gemv_f16_scalar(float *y, const uint16_t *W, size_t ldw, const float *x,
                            const float *b, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        y[r] = dot_half(W + r * ldw, x, cols, 0) + (b ? b[r] : 0.0f);
}

void linattn_gemv_bf16_scalar(float *y, const uint16_t *W, size_t ldw, const float *x,
                             const float *b, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        y[r] = dot_half(W + r * ldw, x, cols, 1) + (b ? b[r] : 0.0f);
}

void linattn_gemm_nt_f16_scalar(float *C, size_t ldc, const float *A, size_t lda,
                               const uint16_t *B, size_t ldb, size_t M, size_t N, size_t K)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C[i * ldc + j] += dot_half(B + j * ldb, A + i * lda, K, 0);
}

void linattn_gemm_nt_bf16_scalar(float *C, size_t ldc, const float *A, size_t lda,
                                const uint16_t *B, size_t ldb, size_t M, size_t N, size_t K)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C[i * ldc + j] += dot_half(B + j * ldb, A + i * lda, K, 1);
}

/* C += A . B, A's element (i, p) at A[i lda + p], or at A[p lda + i] when
 * at (gemm_tn); B fp32, or halfs when half. Each row's sums are formed in
 * t, then added to C once (see kernels.h); the same order for every
 * variant, so a half B gives what its values in fp32 give. */
static void gemm_nn_rows(float *C, size_t ldc, const float *A, size_t lda, int at, const void *B,
                         int half, size_t ldb, size_t M, size_t N, size_t K)
{
    float t[64];
    for (size_t i = 0; i < M; i++)
        for (size_t j0 = 0; j0 < N; j0 += 64) {
            size_t w = N - j0 < 64 ? N - j0 : 64;
            for (size_t j = 0; j < w; j++)
                t[j] = 0.0f;
            for (size_t p = 0; p < K; p++) {
                float a = at ? A[p * lda + i] : A[i * lda + p];
                const float *bf = (const float *)B + p * ldb + j0;
                const uint16_t *bh = (const uint16_t *)B + p * ldb + j0;
                for (size_t j = 0; j < w; j++)
                    t[j] += a * (half ? f16_value(bh[j]) : bf[j]);
            }
            for (size_t j = 0; j < w; j++)
                C[i * ldc + j0 + j] += t[j];
        }
}

void linattn_gemm_nn_scalar(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                           size_t ldb, size_t M, size_t N, size_t K)
{
    gemm_nn_rows(C, ldc, A, lda, 0, B, 0, ldb, M, N, K);
}

void linattn_gemm_nn_f16_scalar(float *C, size_t ldc, const float *A, size_t lda,
                               const uint16_t *B, size_t ldb, size_t M, size_t N, size_t K)
{
    gemm_nn_rows(C, ldc, A, lda, 0, B, 1, ldb, M, N, K);
}

void linattn_gemm_tn_scalar(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                           size_t ldb, size_t M, size_t N, size_t K)
{
    gemm_nn_rows(C, ldc, A, lda, 1, B, 0, ldb, M, N, K);
}

void linattn_to_f16_scalar(uint16_t *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = linattn_f32_to_f16(x[i]);
}

/* The group sums in order, each scaled into the row's sum (the SIMD
 * kernels' association, one lane). */
void linattn_gemv_q8_scalar(float *y, const int8_t *W, const float *S, size_t ldw, const float *x,
                           const float *b, size_t rows, size_t cols)
{
    const size_t G = LINATTN_Q8_GROUP, lds = ldw / G;
    for (size_t r = 0; r < rows; r++) {
        float acc = 0.0f;
        for (size_t g = 0; g * G < cols; g++) {
            float t = 0.0f;
            for (size_t i = 0; i < G; i++)
                t += (float)W[r * ldw + g * G + i] * x[g * G + i];
            acc += t * S[r * lds + g];
        }
        y[r] = acc + (b ? b[r] : 0.0f);
    }
}

void linattn_gemm_nt_q8_scalar(float *C, size_t ldc, const float *A, size_t lda, const int8_t *B,
                              const float *S, size_t ldb, size_t M, size_t N, size_t K)
{
    const size_t G = LINATTN_Q8_GROUP, lds = ldb / G;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            float s = 0.0f;
            for (size_t p = 0; p < K; p++)
                s += (float)B[j * ldb + p] * S[j * lds + p / G] * A[i * lda + p];
            C[i * ldc + j] += s;
        }
}

/* Per block: the exact integer dot product, times d_w d_x, into the row's
 * sum (ggml's vec_dot_q8_0_q8_0, one lane). */
void linattn_gemv_q8_0_scalar(float *y, const uint8_t *W, size_t ldw, const float *x,
                              const float *b, size_t rows, size_t cols)
{
    enum { CHUNK = 4096 };
    int8_t xq[CHUNK];
    float xd[CHUNK / LINATTN_Q8_0_BLOCK];
    for (size_t r = 0; r < rows; r++) /* b first: y may alias it */
        y[r] = b ? b[r] : 0.0f;
    for (size_t c0 = 0; c0 < cols; c0 += CHUNK) {
        size_t nc = cols - c0 < CHUNK ? cols - c0 : CHUNK;
        linattn_q8_0_quantize(xq, xd, x + c0, nc);
        for (size_t r = 0; r < rows; r++) {
            const uint8_t *row = W + r * ldw + c0 / LINATTN_Q8_0_BLOCK * LINATTN_Q8_0_BYTES;
            float acc = y[r];
            for (size_t g = 0; g < nc / LINATTN_Q8_0_BLOCK; g++) {
                const uint8_t *blk = row + g * LINATTN_Q8_0_BYTES;
                const int8_t *qw = (const int8_t *)(const void *)(blk + 2);
                int32_t s = 0;
                for (int i = 0; i < LINATTN_Q8_0_BLOCK; i++)
                    s += (int32_t)qw[i] * xq[g * LINATTN_Q8_0_BLOCK + i];
                acc += (float)s * (linattn_quant_half(blk) * xd[g]);
            }
            y[r] = acc;
        }
    }
}

/* The K-quants with x as Q8_K (one fp32 scale per 256), the SIMD kernels'
 * arithmetic in one lane: per super-block the exact integer sum of each
 * sub-block's integer scale times its dot product (Q6_K: per 16), and of
 * the mins times x's sums, each then scaled once (ggml's
 * vec_dot_q4_K_q8_K ... q6_K_q8_K). y holds b already. */
static void gemv_k_scalar(float *y, const uint8_t *W, size_t ldw, int type, const float *x,
                          size_t rows, size_t cols)
{
    enum { CHUNK = 4096 };
    int8_t xq[CHUNK], q[256];
    float xd[CHUNK / 256], sc[16], mn[16];
    int32_t bs[CHUNK / 16];
    size_t be, bb;
    linattn_quant_block(type, &be, &bb);
    for (size_t c0 = 0; c0 < cols; c0 += CHUNK) {
        size_t nc = cols - c0 < CHUNK ? cols - c0 : CHUNK;
        linattn_q8_K_quantize(xq, xd, bs, x + c0, nc);
        for (size_t r = 0; r < rows; r++) {
            const uint8_t *row = W + r * ldw + c0 / be * bb;
            float acc = 0.0f, off = 0.0f;
            for (size_t e0 = 0; e0 < nc; e0 += 256) {
                const uint8_t *blk = row + e0 / 256 * bb;
                linattn_quant_decode(type, blk, q, sc, mn); /* the values q */
                int32_t sumi = 0, summ = 0;
                float d;
                if (type == LINATTN_QUANT_Q6_K) {
                    const int8_t *s8 = (const int8_t *)(const void *)(blk + 192);
                    d = linattn_quant_half(blk + 208);
                    for (int g = 0; g < 16; g++) {
                        int32_t dot = 0;
                        for (int i = 0; i < 16; i++)
                            dot += (int32_t)q[16 * g + i] * xq[e0 + 16 * (size_t)g + i];
                        sumi += s8[g] * dot;
                    }
                } else {
                    d = linattn_quant_half(blk);
                    for (int g = 0; g < 8; g++) {
                        int s, m;
                        int32_t dot = 0;
                        linattn_quant_k4_scale(blk + 4, g, &s, &m);
                        for (int i = 0; i < 32; i++)
                            dot += (int32_t)q[32 * g + i] * xq[e0 + 32 * (size_t)g + i];
                        sumi += s * dot;
                        summ += m * (bs[(e0 + 32 * (size_t)g) / 16] + bs[(e0 + 32 * (size_t)g) / 16 + 1]);
                    }
                    off += linattn_quant_half(blk + 2) * xd[e0 / 256] * (float)summ;
                }
                acc += (float)sumi * (d * xd[e0 / 256]);
            }
            y[r] += acc - off;
        }
    }
}

/* The SIMD kernels' arithmetic, one lane: per 16 values the exact integer
 * dot product times scale d_x, less the offset times d_x times the sum of
 * x's quantized values. */
void linattn_gemv_quant_scalar(float *y, const uint8_t *W, size_t ldw, int type, const float *x,
                               const float *b, size_t rows, size_t cols)
{
    enum { CHUNK = 4096 };
    int8_t xq[CHUNK], q[256];
    float xd[CHUNK / 32], sc[16], mn[16];
    size_t be, bb;
    linattn_quant_block(type, &be, &bb);
    for (size_t r = 0; r < rows; r++) /* b first: y may alias it */
        y[r] = b ? b[r] : 0.0f;
    if (linattn_quant_takes_q8_K(type)) {
        gemv_k_scalar(y, W, ldw, type, x, rows, cols);
        return;
    }
    for (size_t c0 = 0; c0 < cols; c0 += CHUNK) {
        size_t nc = cols - c0 < CHUNK ? cols - c0 : CHUNK;
        linattn_q8_0_quantize(xq, xd, x + c0, nc);
        for (size_t r = 0; r < rows; r++) {
            const uint8_t *row = W + r * ldw + c0 / be * bb;
            float acc = 0.0f, off = 0.0f;
            for (size_t e0 = 0; e0 < nc; e0 += be) {
                linattn_quant_decode(type, row + e0 / be * bb, q, sc, mn);
                for (size_t g = 0; g < be / 16; g++) {
                    int32_t dot = 0, sum = 0;
                    for (int i = 0; i < 16; i++) {
                        dot += (int32_t)q[16 * g + i] * xq[e0 + 16 * g + i];
                        sum += xq[e0 + 16 * g + i];
                    }
                    float dx = xd[(e0 + 16 * g) / 32];
                    acc += (float)dot * (sc[g] * dx);
                    off += mn[g] * (float)sum * dx;
                }
            }
            y[r] += acc - off;
        }
    }
}

/* Row by row: the contract's definition. */
void linattn_gemm_quant_scalar(float *C, size_t ldc, const float *A, size_t lda, const uint8_t *W,
                               size_t ldw, int type, size_t M, size_t N, size_t K)
{
    for (size_t i = 0; i < M; i++) {
        float *c = C + i * ldc;
        if (type == LINATTN_QUANT_Q8_0)
            linattn_gemv_q8_0_scalar(c, W, ldw, A + i * lda, c, N, K);
        else
            linattn_gemv_quant_scalar(c, W, ldw, type, A + i * lda, c, N, K);
    }
}

/* Element by element: per block of 32 the integer dot product of the
 * stored values (Q4_0's less its 8) with the activation's, scaled by d_w
 * d_a (Q4_K: less the sub-block's min times d_a and the block's sum),
 * summed over the blocks, then onto C. */
void linattn_gemm_quant_xq_scalar(float *C, size_t ldc, const int8_t *Aq, const float *Ad,
                                  const int32_t *As, size_t lda, const uint8_t *W, size_t ldw,
                                  int type, size_t M, size_t N, size_t K)
{
    size_t be, bb;
    if (!linattn_quant_xq_takes(type) || !linattn_quant_block(type, &be, &bb))
        return;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            float acc = 0.0f;
            for (size_t b = 0; b < K / 32; b++) {
                const int8_t *a = Aq + i * lda + 32 * b;
                const float da = Ad[i * (lda / 32) + b];
                int32_t dot = 0;
                if (type == LINATTN_QUANT_Q6_K) { /* per 16: its int8 scale */
                    const uint8_t *blk = W + j * ldw + b / 8 * bb;
                    int8_t q[256];
                    float sc[16], mn[16];
                    linattn_quant_decode(type, blk, q, sc, mn);
                    size_t e0 = 32 * (b % 8);
                    for (int h = 0; h < 2; h++) {
                        int32_t t = 0;
                        for (int e = 0; e < 16; e++)
                            t += q[e0 + 16 * (size_t)h + (size_t)e] * a[16 * h + e];
                        acc += sc[e0 / 16 + (size_t)h] * da * (float)t;
                    }
                    continue;
                }
                if (type == LINATTN_QUANT_Q4_K) {
                    const uint8_t *blk = W + j * ldw + b / 8 * bb;
                    int sub = (int)(b % 8), sc, mn;
                    linattn_quant_k4_scale(blk + 4, sub, &sc, &mn);
                    for (int e = 0; e < 32; e++)
                        dot += (blk[16 + 32 * (sub / 2) + e] >> (4 * (sub % 2)) & 0xF) * a[e];
                    acc += linattn_quant_half(blk) * (float)sc * da * (float)dot;
                    acc -= linattn_quant_half(blk + 2) * (float)mn * da *
                           (float)As[i * (lda / 32) + b];
                    continue;
                }
                const uint8_t *blk = W + j * ldw + b * bb;
                for (int e = 0; e < 32; e++) {
                    int w = type == LINATTN_QUANT_Q8_0
                                ? (int8_t)blk[2 + e]
                                : (e < 16 ? blk[2 + e] & 0xF : blk[2 + e - 16] >> 4) - 8;
                    dot += w * a[e];
                }
                acc += linattn_quant_half(blk) * da * (float)dot;
            }
            C[i * ldc + j] += acc;
        }
}

void linattn_quantize_q8_0_scalar(int8_t *q, float *d, int32_t *s, const float *x, size_t n)
{
    linattn_q8_0_quantize(q, d, x, n);
    for (size_t b = 0; b < n / 32; b++) {
        int32_t t = 0;
        for (int i = 0; i < 32; i++)
            t += q[32 * b + (size_t)i];
        s[b] = t;
    }
}

void linattn_quantize_q8_K_scalar(int8_t *q, float *d, int32_t *s, const float *x, size_t n)
{
    for (size_t b = 0; b < n / 256; b++) {
        int32_t s16[16];
        float dk;
        linattn_q8_K_quantize(q + 256 * b, &dk, s16, x + 256 * b, 256);
        for (int g = 0; g < 8; g++) {
            d[8 * b + (size_t)g] = dk;
            s[8 * b + (size_t)g] = s16[2 * g] + s16[2 * g + 1];
        }
    }
}

void linattn_dequant_scalar(float *y, const uint8_t *W, size_t ldw, int type, size_t rows,
                            size_t cols)
{
    size_t be, bb;
    linattn_quant_block(type, &be, &bb);
    for (size_t r = 0; r < rows; r++)
        for (size_t e0 = 0; e0 < cols; e0 += be)
            linattn_quant_values(type, W + r * ldw + e0 / be * bb, y + r * cols + e0);
}
