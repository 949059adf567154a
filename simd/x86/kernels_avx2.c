/* kernels_avx2.c: AVX2+FMA elementwise, reduction, norm and linear-attention kernels. */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <sleef.h>

#include "../kernels.h"
#include "avx2.h"

float linattn_dot_avx2(const float *a, const float *b, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
    }
    return avx2_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

/* max(x, acc) keeps acc when x is NaN, as the scalar compare does. */
float linattn_max_avx2(const float *x, size_t n)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
        m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
        m2 = _mm256_max_ps(_mm256_loadu_ps(x + i + 16), m2);
        m3 = _mm256_max_ps(_mm256_loadu_ps(x + i + 24), m3);
    }
    for (; i + 8 <= n; i += 8)
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        __m256 t = _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
        m1 = _mm256_max_ps(t, m1);
    }
    __m256 v = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

float linattn_sum_avx2(const float *x, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_add_ps(_mm256_loadu_ps(x + i), s0);
        s1 = _mm256_add_ps(_mm256_loadu_ps(x + i + 8), s1);
        s2 = _mm256_add_ps(_mm256_loadu_ps(x + i + 16), s2);
        s3 = _mm256_add_ps(_mm256_loadu_ps(x + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_add_ps(_mm256_loadu_ps(x + i), s0);
    if (i < n)
        s1 = _mm256_add_ps(_mm256_maskload_ps(x + i, avx2_tail_mask(n - i)), s1);
    return avx2_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

void linattn_axpy_avx2(float *y, float a, const float *x, size_t n)
{
    const __m256 va = _mm256_set1_ps(a);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 y0 = _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
        __m256 y1 = _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8));
        _mm256_storeu_ps(y + i, y0);
        _mm256_storeu_ps(y + i + 8, y1);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        __m256 t = _mm256_fmadd_ps(va, _mm256_maskload_ps(x + i, m), _mm256_maskload_ps(y + i, m));
        _mm256_maskstore_ps(y + i, m, t);
    }
}

void linattn_scale_avx2(float *x, float a, size_t n)
{
    const __m256 va = _mm256_set1_ps(a);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 x0 = _mm256_mul_ps(va, _mm256_loadu_ps(x + i));
        __m256 x1 = _mm256_mul_ps(va, _mm256_loadu_ps(x + i + 8));
        _mm256_storeu_ps(x + i, x0);
        _mm256_storeu_ps(x + i + 8, x1);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(va, _mm256_loadu_ps(x + i)));
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        _mm256_maskstore_ps(x + i, m, _mm256_mul_ps(va, _mm256_maskload_ps(x + i, m)));
    }
}

float linattn_exp_sub_sum_avx2(float *y, const float *x, float m, size_t n)
{
    const __m256 vm = _mm256_set1_ps(m);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 e0 = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        __m256 e1 = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
        _mm256_storeu_ps(y + i, e0);
        _mm256_storeu_ps(y + i + 8, e1);
        s0 = _mm256_add_ps(s0, e0);
        s1 = _mm256_add_ps(s1, e1);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(y + i, e);
        s0 = _mm256_add_ps(s0, e);
    }
    if (i < n) {
        __m256i mk = avx2_tail_mask(n - i);
        __m256 e = Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_maskload_ps(x + i, mk), vm));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(mk)); /* the lanes past n do not count */
        _mm256_maskstore_ps(y + i, mk, e);
        s1 = _mm256_add_ps(s1, e);
    }
    return avx2_hsum(_mm256_add_ps(s0, s1));
}

LINATTN_INLINE __m256 elu1_8(__m256 x)
{
    __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
    __m256 e = Sleef_expf8_u10avx2(x);
    return _mm256_blendv_ps(e, _mm256_add_ps(x, _mm256_set1_ps(1.0f)), pos);
}

void linattn_elu1_avx2(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, elu1_8(_mm256_loadu_ps(x + i)));
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        _mm256_maskstore_ps(y + i, m, elu1_8(_mm256_maskload_ps(x + i, m)));
    }
}

void linattn_relu_avx2(float *y, const float *x, size_t n)
{
    const __m256 zero = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_max_ps(_mm256_loadu_ps(x + i), zero);
        __m256 b = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), zero);
        _mm256_storeu_ps(y + i, a);
        _mm256_storeu_ps(y + i + 8, b);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_max_ps(_mm256_loadu_ps(x + i), zero));
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        _mm256_maskstore_ps(y + i, m, _mm256_max_ps(_mm256_maskload_ps(x + i, m), zero));
    }
}

/* 0.5 x (1 + tanh(c (x + 0.044715 x^3))), in the scalar kernel's order. */
LINATTN_INLINE __m256 gelu_8(__m256 x)
{
    const __m256 c = _mm256_set1_ps(0.7978845608028654f);
    __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    __m256 u = _mm256_mul_ps(c, _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
    /* tanh u = expm1(2u) / (expm1(2u) + 2): twice as fast as SLEEF's tanh.
     * Past |u| = 10 the quotient rounds to exactly +-1, as tanh does, and
     * clamping there keeps expm1 from overflowing. */
    __m256 lim = _mm256_set1_ps(10.0f);
    u = _mm256_max_ps(_mm256_min_ps(u, lim), _mm256_sub_ps(_mm256_setzero_ps(), lim));
    __m256 e = Sleef_expm1f8_u10avx2(_mm256_add_ps(u, u));
    __m256 t = _mm256_div_ps(e, _mm256_add_ps(e, _mm256_set1_ps(2.0f)));
    __m256 hx = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
    return _mm256_fmadd_ps(hx, t, hx);
}

void linattn_gelu_avx2(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, gelu_8(_mm256_loadu_ps(x + i)));
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        _mm256_maskstore_ps(y + i, m, gelu_8(_mm256_maskload_ps(x + i, m)));
    }
}

/* sum (x[i] - mean)^2; the masked tail lanes load 0 and must not count. */
static float sum_sq_dev(const float *x, float mean, size_t n)
{
    const __m256 vm = _mm256_set1_ps(mean);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
        __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm);
        s0 = _mm256_fmadd_ps(d0, d0, s0);
        s1 = _mm256_fmadd_ps(d1, d1, s1);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
        s0 = _mm256_fmadd_ps(d, d, s0);
    }
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        __m256 d = _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), vm),
                                 _mm256_castsi256_ps(m));
        s1 = _mm256_fmadd_ps(d, d, s1);
    }
    return avx2_hsum(_mm256_add_ps(s0, s1));
}

void linattn_layernorm_avx2(float *y, const float *x, const float *w, const float *b, size_t n,
                           float eps)
{
    if (n == 0)
        return;
    float mean = linattn_sum_avx2(x, n) / (float)n;
    float var = sum_sq_dev(x, mean, n) / (float)n;
    const __m256 vm = _mm256_set1_ps(mean);
    const __m256 vinv = _mm256_set1_ps(1.0f / sqrtf(var + eps));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vinv);
        __m256 bb = b ? _mm256_loadu_ps(b + i) : _mm256_setzero_ps();
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(t, _mm256_loadu_ps(w + i), bb));
    }
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), vm), vinv);
        __m256 bb = b ? _mm256_maskload_ps(b + i, m) : _mm256_setzero_ps();
        _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(t, _mm256_maskload_ps(w + i, m), bb));
    }
}

void linattn_rmsnorm_avx2(float *y, const float *x, const float *w, size_t n, float eps)
{
    if (n == 0)
        return;
    float ss = linattn_dot_avx2(x, x, n);
    const __m256 vinv = _mm256_set1_ps(1.0f / sqrtf(ss / (float)n + eps));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 t = _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(t, _mm256_loadu_ps(w + i)));
    }
    if (i < n) {
        __m256i m = avx2_tail_mask(n - i);
        __m256 t = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), vinv);
        _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(t, _mm256_maskload_ps(w + i, m)));
    }
}

LINATTN_INLINE __m256 load_chunk(const float *p, int masked, __m256i m)
{
    return masked ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}

LINATTN_INLINE void store_chunk(float *p, __m256 v, int masked, __m256i m)
{
    if (masked)
        _mm256_maskstore_ps(p, m, v);
    else
        _mm256_storeu_ps(p, v);
}

/* Columns [0, 8 nc) of out: c phiq^T S + sum_j w_j V_j, times inv, with the
 * out block (8 nc floats) in registers; S is read once, two rows per
 * iteration. With tail set the last chunk is the masked tail. With nc <= 4
 * the odd rows get their own accumulators, else the FMA chains would be
 * too few to hide the FMA latency. */
LINATTN_INLINE void lbr_block(float *out, const float *phiq, const float *S, const float *V,
                              const float *w, int n, float c, size_t dk, size_t dv, float inv,
                              int nc, int tail, __m256i tm)
{
    __m256 acc[8] = {0}, odd[4] = {0};
    size_t i = 0;
    for (; i + 2 <= dk; i += 2) {
        const float *s0 = S + i * dv, *s1 = s0 + dv;
        __m256 q0 = _mm256_broadcast_ss(phiq + i), q1 = _mm256_broadcast_ss(phiq + i + 1);
#pragma GCC unroll 8
        for (int k = 0; k < nc; k++) {
            int mk = tail && k == nc - 1;
            acc[k] = _mm256_fmadd_ps(q0, load_chunk(s0 + 8 * k, mk, tm), acc[k]);
            if (nc <= 4)
                odd[k & 3] = _mm256_fmadd_ps(q1, load_chunk(s1 + 8 * k, mk, tm), odd[k & 3]);
            else
                acc[k] = _mm256_fmadd_ps(q1, load_chunk(s1 + 8 * k, mk, tm), acc[k]);
        }
    }
    if (nc <= 4) {
#pragma GCC unroll 4
        for (int k = 0; k < nc; k++)
            acc[k] = _mm256_add_ps(acc[k], odd[k & 3]);
    }
    if (i < dk) {
        __m256 q0 = _mm256_broadcast_ss(phiq + i);
#pragma GCC unroll 8
        for (int k = 0; k < nc; k++)
            acc[k] = _mm256_fmadd_ps(q0, load_chunk(S + i * dv + 8 * k, tail && k == nc - 1, tm),
                                     acc[k]);
    }
    const __m256 vc = _mm256_set1_ps(c);
#pragma GCC unroll 8
    for (int k = 0; k < nc; k++)
        acc[k] = _mm256_mul_ps(acc[k], vc);
    for (int j = 0; j < n; j++) {
        __m256 wj = _mm256_broadcast_ss(w + j);
        const float *vj = V + (size_t)j * dv;
#pragma GCC unroll 8
        for (int k = 0; k < nc; k++)
            acc[k] = _mm256_fmadd_ps(wj, load_chunk(vj + 8 * k, tail && k == nc - 1, tm), acc[k]);
    }
    const __m256 vinv = _mm256_set1_ps(inv);
#pragma GCC unroll 8
    for (int k = 0; k < nc; k++)
        store_chunk(out + 8 * k, _mm256_mul_ps(acc[k], vinv), tail && k == nc - 1, tm);
}

/* One copy per block width so nc and tail are constants in each. */
static void lbr_dispatch(float *out, const float *phiq, const float *S, const float *V,
                         const float *w, int n, float c, size_t dk, size_t dv, float inv,
                         size_t width)
{
    size_t nc = (width + 7) / 8;
    int tail = (width & 7) != 0;
    __m256i tm = avx2_tail_mask(tail ? width & 7 : 8);
#define LBR(nc_, tail_) lbr_block(out, phiq, S, V, w, n, c, dk, dv, inv, nc_, tail_, tm)
    switch (nc * 2 + (size_t)tail) {
    case 2: LBR(1, 0); break;
    case 3: LBR(1, 1); break;
    case 4: LBR(2, 0); break;
    case 5: LBR(2, 1); break;
    case 6: LBR(3, 0); break;
    case 7: LBR(3, 1); break;
    case 8: LBR(4, 0); break;
    case 9: LBR(4, 1); break;
    case 10: LBR(5, 0); break;
    case 11: LBR(5, 1); break;
    case 12: LBR(6, 0); break;
    case 13: LBR(6, 1); break;
    case 14: LBR(7, 0); break;
    case 15: LBR(7, 1); break;
    case 16: LBR(8, 0); break;
    case 17: LBR(8, 1); break;
    default: break;
    }
#undef LBR
}

/* The row weights and the denominator first (dots), then out in column
 * blocks of up to 64 so each block's accumulator stays in registers. */
void linattn_linear_block_read_avx2(float *out, const float *phiq, const float *S, const float *z,
                                   const float *K, const float *V, const float *pw, int n,
                                   float c, size_t dk, size_t dv, float eps)
{
    float w[LINATTN_BLOCK_ROWS];
    float den = c * linattn_dot_avx2(phiq, z, dk);
    for (int j = 0; j < n; j++) {
        w[j] = pw[j] * linattn_dot_avx2(phiq, K + (size_t)j * dk, dk);
        den += w[j];
    }
    const float d = den + eps;
    const int normal = d >= FLT_MIN; /* else out is the numerator, divided below */
    const float inv = normal ? 1.0f / d : 1.0f;
    for (size_t j = 0; j < dv; j += 64)
        lbr_dispatch(out + j, phiq, S + j, V + j, w, n, c, dk, dv, inv,
                     dv - j < 64 ? dv - j : 64);
    if (!normal)
        for (size_t j = 0; j < dv; j++)
            out[j] = d == 0.0f ? 0.0f : out[j] / d;
}
