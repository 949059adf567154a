/* kernels_neon.c: NEON (aarch64) elementwise, reduction, norm and linear-attention kernels. */
#include <arm_neon.h>
#include <float.h>
#include <math.h>
#include <sleef.h>

#include "../kernels.h"
#include "neon.h"

float linattn_dot_neon(const float *a, const float *b, size_t n)
{
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    if (i < n)
        s1 = vfmaq_f32(s1, neon_load_tail(a + i, n - i), neon_load_tail(b + i, n - i));
    return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

/* maxNum ignores a NaN x, as the scalar compare does. */
float linattn_max_neon(const float *x, size_t n)
{
    const float32x4_t ninf = vdupq_n_f32(-INFINITY);
    float32x4_t m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = vmaxnmq_f32(m0, vld1q_f32(x + i));
        m1 = vmaxnmq_f32(m1, vld1q_f32(x + i + 4));
        m2 = vmaxnmq_f32(m2, vld1q_f32(x + i + 8));
        m3 = vmaxnmq_f32(m3, vld1q_f32(x + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        m0 = vmaxnmq_f32(m0, vld1q_f32(x + i));
    float m = vmaxnmvq_f32(vmaxnmq_f32(vmaxnmq_f32(m0, m1), vmaxnmq_f32(m2, m3)));
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

float linattn_sum_neon(const float *x, size_t n)
{
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vaddq_f32(s0, vld1q_f32(x + i));
        s1 = vaddq_f32(s1, vld1q_f32(x + i + 4));
        s2 = vaddq_f32(s2, vld1q_f32(x + i + 8));
        s3 = vaddq_f32(s3, vld1q_f32(x + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vaddq_f32(s0, vld1q_f32(x + i));
    if (i < n)
        s1 = vaddq_f32(s1, neon_load_tail(x + i, n - i));
    return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

void linattn_axpy_neon(float *y, float a, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
        vst1q_f32(y + i + 4, vfmaq_n_f32(vld1q_f32(y + i + 4), vld1q_f32(x + i + 4), a));
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; i++)
        y[i] = fmaf(a, x[i], y[i]);
}

void linattn_scale_neon(float *x, float a, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), a));
        vst1q_f32(x + i + 4, vmulq_n_f32(vld1q_f32(x + i + 4), a));
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), a));
    for (; i < n; i++)
        x[i] *= a;
}

float linattn_exp_sub_sum_neon(float *y, const float *x, float m, size_t n)
{
    const float32x4_t vm = vdupq_n_f32(m);
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float32x4_t e0 = Sleef_expf4_u10advsimd(vsubq_f32(vld1q_f32(x + i), vm));
        float32x4_t e1 = Sleef_expf4_u10advsimd(vsubq_f32(vld1q_f32(x + i + 4), vm));
        vst1q_f32(y + i, e0);
        vst1q_f32(y + i + 4, e1);
        s0 = vaddq_f32(s0, e0);
        s1 = vaddq_f32(s1, e1);
    }
    for (; i + 4 <= n; i += 4) {
        float32x4_t e = Sleef_expf4_u10advsimd(vsubq_f32(vld1q_f32(x + i), vm));
        vst1q_f32(y + i, e);
        s0 = vaddq_f32(s0, e);
    }
    if (i < n) {
        /* the padding lanes hold -inf: exp gives 0 and they do not count */
        float t[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        memcpy(t, x + i, (n - i) * sizeof(float));
        float32x4_t e = Sleef_expf4_u10advsimd(vsubq_f32(vld1q_f32(t), vm));
        neon_store_tail(y + i, e, n - i);
        s1 = vaddq_f32(s1, e);
    }
    return vaddvq_f32(vaddq_f32(s0, s1));
}

LINATTN_INLINE float32x4_t elu1_4(float32x4_t x)
{
    uint32x4_t pos = vcgtq_f32(x, vdupq_n_f32(0.0f));
    return vbslq_f32(pos, vaddq_f32(x, vdupq_n_f32(1.0f)), Sleef_expf4_u10advsimd(x));
}

void linattn_elu1_neon(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, elu1_4(vld1q_f32(x + i)));
    if (i < n)
        neon_store_tail(y + i, elu1_4(neon_load_tail(x + i, n - i)), n - i);
}

/* maxNum(x, 0) gives 0 for a NaN x, as the scalar compare does. */
void linattn_relu_neon(float *y, const float *x, size_t n)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vst1q_f32(y + i, vmaxnmq_f32(vld1q_f32(x + i), zero));
        vst1q_f32(y + i + 4, vmaxnmq_f32(vld1q_f32(x + i + 4), zero));
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vmaxnmq_f32(vld1q_f32(x + i), zero));
    for (; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* 0.5 x (1 + tanh(c (x + 0.044715 x^3))), in the scalar kernel's order. */
LINATTN_INLINE float32x4_t gelu_4(float32x4_t x)
{
    float32x4_t x3 = vmulq_f32(vmulq_f32(x, x), x);
    float32x4_t u = vmulq_n_f32(vfmaq_n_f32(x, x3, 0.044715f), 0.7978845608028654f);
    /* tanh u = expm1(2u) / (expm1(2u) + 2): about twice as fast as SLEEF's
     * tanh. Past |u| = 10 the quotient rounds to exactly +-1, as tanh does,
     * and clamping there keeps expm1 from overflowing (maxNum keeps NaN out
     * of the clamp, x carries it to the result). */
    u = vmaxnmq_f32(vminnmq_f32(u, vdupq_n_f32(10.0f)), vdupq_n_f32(-10.0f));
    float32x4_t e = Sleef_expm1f4_u10advsimd(vaddq_f32(u, u));
    float32x4_t t = vdivq_f32(e, vaddq_f32(e, vdupq_n_f32(2.0f)));
    float32x4_t hx = vmulq_n_f32(x, 0.5f);
    return vfmaq_f32(hx, hx, t);
}

void linattn_gelu_neon(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, gelu_4(vld1q_f32(x + i)));
    if (i < n)
        neon_store_tail(y + i, gelu_4(neon_load_tail(x + i, n - i)), n - i);
}

static float sum_sq_dev(const float *x, float mean, size_t n)
{
    const float32x4_t vm = vdupq_n_f32(mean);
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float32x4_t d0 = vsubq_f32(vld1q_f32(x + i), vm);
        float32x4_t d1 = vsubq_f32(vld1q_f32(x + i + 4), vm);
        s0 = vfmaq_f32(s0, d0, d0);
        s1 = vfmaq_f32(s1, d1, d1);
    }
    for (; i + 4 <= n; i += 4) {
        float32x4_t d = vsubq_f32(vld1q_f32(x + i), vm);
        s0 = vfmaq_f32(s0, d, d);
    }
    float s = vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++)
        s += (x[i] - mean) * (x[i] - mean);
    return s;
}

void linattn_layernorm_neon(float *y, const float *x, const float *w, const float *b, size_t n,
                           float eps)
{
    if (n == 0)
        return;
    float mean = linattn_sum_neon(x, n) / (float)n;
    float var = sum_sq_dev(x, mean, n) / (float)n;
    float inv = 1.0f / sqrtf(var + eps);
    const float32x4_t vm = vdupq_n_f32(mean);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t t = vmulq_n_f32(vsubq_f32(vld1q_f32(x + i), vm), inv);
        float32x4_t bb = b ? vld1q_f32(b + i) : vdupq_n_f32(0.0f);
        vst1q_f32(y + i, vfmaq_f32(bb, t, vld1q_f32(w + i)));
    }
    for (; i < n; i++)
        y[i] = fmaf((x[i] - mean) * inv, w[i], b ? b[i] : 0.0f);
}

void linattn_rmsnorm_neon(float *y, const float *x, const float *w, size_t n, float eps)
{
    if (n == 0)
        return;
    float inv = 1.0f / sqrtf(linattn_dot_neon(x, x, n) / (float)n + eps);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), inv), vld1q_f32(w + i)));
    for (; i < n; i++)
        y[i] = x[i] * inv * w[i];
}

/* Columns [0, 4 nc) of out: c phiq^T S + sum_j w_j V_j, times inv, with the
 * out block (4 nc <= 64 floats, up to 16 registers of the 32) held in
 * registers; S is read once, two rows per iteration. */
LINATTN_INLINE void lbr_block(float *out, const float *phiq, const float *S, const float *V,
                              const float *w, int n, float c, size_t dk, size_t dv, float inv,
                              int nc)
{
    float32x4_t acc[16];
#pragma GCC unroll 16
    for (int k = 0; k < nc; k++)
        acc[k] = vdupq_n_f32(0.0f);
    size_t i = 0;
    for (; i + 2 <= dk; i += 2) {
        const float *s0 = S + i * dv, *s1 = s0 + dv;
        float q0 = phiq[i], q1 = phiq[i + 1];
#pragma GCC unroll 16
        for (int k = 0; k < nc; k++) {
            acc[k] = vfmaq_n_f32(acc[k], vld1q_f32(s0 + 4 * k), q0);
            acc[k] = vfmaq_n_f32(acc[k], vld1q_f32(s1 + 4 * k), q1);
        }
    }
    if (i < dk) {
#pragma GCC unroll 16
        for (int k = 0; k < nc; k++)
            acc[k] = vfmaq_n_f32(acc[k], vld1q_f32(S + i * dv + 4 * k), phiq[i]);
    }
#pragma GCC unroll 16
    for (int k = 0; k < nc; k++)
        acc[k] = vmulq_n_f32(acc[k], c);
    for (int j = 0; j < n; j++) {
        const float *vj = V + (size_t)j * dv;
#pragma GCC unroll 16
        for (int k = 0; k < nc; k++)
            acc[k] = vfmaq_n_f32(acc[k], vld1q_f32(vj + 4 * k), w[j]);
    }
#pragma GCC unroll 16
    for (int k = 0; k < nc; k++)
        vst1q_f32(out + 4 * k, vmulq_n_f32(acc[k], inv));
}

/* One copy per chunk count so nc is a constant in each. */
static void lbr_dispatch(float *out, const float *phiq, const float *S, const float *V,
                         const float *w, int n, float c, size_t dk, size_t dv, float inv,
                         size_t nc)
{
#define LBR(nc_) lbr_block(out, phiq, S, V, w, n, c, dk, dv, inv, nc_)
    switch (nc) {
    case 1: LBR(1); break;
    case 2: LBR(2); break;
    case 3: LBR(3); break;
    case 4: LBR(4); break;
    case 5: LBR(5); break;
    case 6: LBR(6); break;
    case 7: LBR(7); break;
    case 8: LBR(8); break;
    case 9: LBR(9); break;
    case 10: LBR(10); break;
    case 11: LBR(11); break;
    case 12: LBR(12); break;
    case 13: LBR(13); break;
    case 14: LBR(14); break;
    case 15: LBR(15); break;
    case 16: LBR(16); break;
    default: break;
    }
#undef LBR
}

/* The row weights and the denominator first (dots), then out in column
 * blocks of up to 64 (registers); the last dv % 4 columns one at a time. */
void linattn_linear_block_read_neon(float *out, const float *phiq, const float *S, const float *z,
                                   const float *K, const float *V, const float *pw, int n,
                                   float c, size_t dk, size_t dv, float eps)
{
    float w[LINATTN_BLOCK_ROWS];
    float den = c * linattn_dot_neon(phiq, z, dk);
    for (int j = 0; j < n; j++) {
        w[j] = pw[j] * linattn_dot_neon(phiq, K + (size_t)j * dk, dk);
        den += w[j];
    }
    const float d = den + eps;
    const int normal = d >= FLT_MIN; /* else out is the numerator, divided below */
    const float inv = normal ? 1.0f / d : 1.0f;
    size_t full = dv & ~(size_t)3;
    for (size_t j = 0; j < full; j += 64) {
        size_t width = full - j < 64 ? full - j : 64;
        lbr_dispatch(out + j, phiq, S + j, V + j, w, n, c, dk, dv, inv, width / 4);
    }
    for (size_t col = full; col < dv; col++) {
        float o = 0.0f;
        for (size_t i = 0; i < dk; i++)
            o = fmaf(phiq[i], S[i * dv + col], o);
        o *= c;
        for (int j = 0; j < n; j++)
            o = fmaf(w[j], V[(size_t)j * dv + col], o);
        out[col] = o * inv;
    }
    if (!normal)
        for (size_t col = 0; col < dv; col++)
            out[col] = d == 0.0f ? 0.0f : out[col] / d;
}
