/* kernels_scalar.c: the reference kernels; always built, the checker's oracle. */
#include <float.h>
#include <math.h>

#include "../kernels.h"

static float dot_scalar(const float *a, const float *b, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static float max_scalar(const float *x, size_t n)
{
    float m = -INFINITY;
    for (size_t i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

static float sum_scalar(const float *x, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

static void axpy_scalar(float *y, float a, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void scale_scalar(float *x, float a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= a;
}

static float exp_sub_sum_scalar(float *y, const float *x, float m, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++) {
        y[i] = expf(x[i] - m);
        s += y[i];
    }
    return s;
}

static void elu1_scalar(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] + 1.0f : expf(x[i]);
}

static void relu_scalar(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void gelu_scalar(float *y, const float *x, size_t n)
{
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
}

static void layernorm_scalar(float *y, const float *x, const float *w, const float *b,
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

static void rmsnorm_scalar(float *y, const float *x, const float *w, size_t n, float eps)
{
    float ss = 0.0f;
    for (size_t i = 0; i < n; i++)
        ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] * inv * w[i];
}

static void linear_block_read_scalar(float *out, const float *phiq, const float *S,
                                     const float *z, const float *K, const float *V,
                                     const float *pw, int n, float c, size_t dk, size_t dv,
                                     float eps)
{
    float w[LINATTN_BLOCK_ROWS];
    float den = c * dot_scalar(phiq, z, dk);
    for (int j = 0; j < n; j++) {
        w[j] = pw[j] * dot_scalar(phiq, K + (size_t)j * dk, dk);
        den += w[j];
    }
    for (size_t col = 0; col < dv; col++)
        out[col] = 0.0f;
    for (size_t i = 0; i < dk; i++)
        axpy_scalar(out, phiq[i], S + i * dv, dv);
    for (size_t col = 0; col < dv; col++)
        out[col] *= c;
    for (int j = 0; j < n; j++)
        axpy_scalar(out, w[j], V + (size_t)j * dv, dv);
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

static void gemv_scalar(float *y, const float *W, size_t ldw, const float *x, const float *b,
                        size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        y[r] = dot_scalar(W + r * ldw, x, cols) + (b ? b[r] : 0.0f);
}

static void gemm_nt_scalar(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                           size_t ldb, size_t M, size_t N, size_t K)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C[i * ldc + j] += dot_scalar(A + i * lda, B + j * ldb, K);
}

/* Each row's sums are formed in t, then added to C once (see kernels.h). */
static void gemm_nn_scalar(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                           size_t ldb, size_t M, size_t N, size_t K)
{
    float t[64];
    for (size_t i = 0; i < M; i++)
        for (size_t j0 = 0; j0 < N; j0 += 64) {
            size_t w = N - j0 < 64 ? N - j0 : 64;
            for (size_t j = 0; j < w; j++)
                t[j] = 0.0f;
            for (size_t p = 0; p < K; p++)
                axpy_scalar(t, A[i * lda + p], B + p * ldb + j0, w);
            for (size_t j = 0; j < w; j++)
                C[i * ldc + j0 + j] += t[j];
        }
}

void linattn_kernels_init_scalar(linattn_kernels *k)
{
    k->dot = dot_scalar;
    k->max = max_scalar;
    k->sum = sum_scalar;
    k->axpy = axpy_scalar;
    k->scale = scale_scalar;
    k->exp_sub_sum = exp_sub_sum_scalar;
    k->elu1 = elu1_scalar;
    k->relu = relu_scalar;
    k->gelu = gelu_scalar;
    k->layernorm = layernorm_scalar;
    k->rmsnorm = rmsnorm_scalar;
    k->linear_block_read = linear_block_read_scalar;
    k->gemv = gemv_scalar;
    k->gemm_nt = gemm_nt_scalar;
    k->gemm_nn = gemm_nn_scalar;
}
