/* kernels_body.h: the elementwise, reduction, norm and linear-attention kernels, written once over
 * a vector vocabulary (x86/vec_avx2.h, x86/vec_avx512.h or arm/vec_neon.h, included first); no ISA
 * is named here. */

#include <float.h>
#include <math.h>

#include "../kernels.h"

/* The vocabulary (one vec_*.h a translation unit) gives:
 *   VL floats a vector, VREGS vector registers, FN(name) the ISA's kernel
 *   name, LINATTN_INLINE;
 *   vf, and vmask = the first n lanes (vmask_n(n), 0 <= n <= VL);
 *   vzero vset1 vbcast vload vstore, vpin (v in a register: loaded once for
 *   several FMAs), vload_m (0 past the mask) and vstore_m
 *   (nothing past the mask written), which touch no memory past the mask;
 *   vadd vsub vmul vdiv, vfma(a, b, c) = a b + c (fused), vmin/vmax (b
 *   where a is NaN), vkeep vblend vpos_sel (selects);
 *   vhsum vhmax, vhsum4_add (four sums at once); vexp (ours, inline: exp_body.h,
 *   under 1 ulp) and vexp_nonpos (vexp's bits of exp(min(x, 0)));
 *   vload_f16 vload_bf16 (VL halfs / bfloat16s as floats, exact) and their
 *   _m forms (only the mask's lanes read, 0 past them);
 *   for gemm_body.h: GEMM_MR, vprefetch, and TB with vtranspose_block. */
#if !defined(VL) || !defined(FN) || !defined(GEMM_MR)
#error "include a vector vocabulary (vec_*.h) before kernels_body.h"
#endif

/* Tails: the last n % VL elements through masked loads and stores, which
 * never touch memory past the end (a masked load gives 0 past it). */

float FN(dot)(const float *a, const float *b, size_t n)
{
    vf s0 = vzero(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 4 * VL <= n; i += 4 * VL) {
        s0 = vfma(vload(a + i), vload(b + i), s0);
        s1 = vfma(vload(a + i + VL), vload(b + i + VL), s1);
        s2 = vfma(vload(a + i + 2 * VL), vload(b + i + 2 * VL), s2);
        s3 = vfma(vload(a + i + 3 * VL), vload(b + i + 3 * VL), s3);
    }
    for (; i + VL <= n; i += VL)
        s0 = vfma(vload(a + i), vload(b + i), s0);
    if (i < n) {
        vmask m = vmask_n(n - i);
        s1 = vfma(vload_m(a + i, m), vload_m(b + i, m), s1);
    }
    return vhsum(vadd(vadd(s0, s1), vadd(s2, s3)));
}

/* vmax keeps acc when x is NaN, as the scalar compare does, so NaN and
 * +-inf are caught apart: f += x 0 is NaN exactly when x is not finite, and
 * m + f (f is +-0 otherwise) is the max or NaN. */
float FN(max)(const float *x, size_t n)
{
    const vf ninf = vset1(-INFINITY), zero = vzero();
    vf m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    vf f0 = zero, f1 = zero, f2 = zero, f3 = zero;
    size_t i = 0;
    for (; i + 4 * VL <= n; i += 4 * VL) {
        const vf x0 = vload(x + i), x1 = vload(x + i + VL);
        const vf x2 = vload(x + i + 2 * VL), x3 = vload(x + i + 3 * VL);
        m0 = vmax(x0, m0);
        m1 = vmax(x1, m1);
        m2 = vmax(x2, m2);
        m3 = vmax(x3, m3);
        f0 = vfma(x0, zero, f0);
        f1 = vfma(x1, zero, f1);
        f2 = vfma(x2, zero, f2);
        f3 = vfma(x3, zero, f3);
    }
    for (; i + VL <= n; i += VL) {
        const vf x0 = vload(x + i);
        m0 = vmax(x0, m0);
        f0 = vfma(x0, zero, f0);
    }
    if (i < n) {
        vmask m = vmask_n(n - i);
        const vf xt = vload_m(x + i, m); /* 0 past the mask */
        m1 = vmax(vblend(ninf, xt, m), m1);
        f1 = vfma(xt, zero, f1);
    }
    return vhmax(vmax(vmax(m0, m1), vmax(m2, m3))) + vhsum(vadd(vadd(f0, f1), vadd(f2, f3)));
}

float FN(sum)(const float *x, size_t n)
{
    vf s0 = vzero(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 4 * VL <= n; i += 4 * VL) {
        s0 = vadd(vload(x + i), s0);
        s1 = vadd(vload(x + i + VL), s1);
        s2 = vadd(vload(x + i + 2 * VL), s2);
        s3 = vadd(vload(x + i + 3 * VL), s3);
    }
    for (; i + VL <= n; i += VL)
        s0 = vadd(vload(x + i), s0);
    if (i < n)
        s1 = vadd(vload_m(x + i, vmask_n(n - i)), s1);
    return vhsum(vadd(vadd(s0, s1), vadd(s2, s3)));
}

void FN(axpy)(float *y, float a, const float *x, size_t n)
{
    const vf va = vset1(a);
    size_t i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vf y0 = vfma(va, vload(x + i), vload(y + i));
        vf y1 = vfma(va, vload(x + i + VL), vload(y + i + VL));
        vstore(y + i, y0);
        vstore(y + i + VL, y1);
    }
    for (; i + VL <= n; i += VL)
        vstore(y + i, vfma(va, vload(x + i), vload(y + i)));
    if (i < n) {
        vmask m = vmask_n(n - i);
        vstore_m(y + i, vfma(va, vload_m(x + i, m), vload_m(y + i, m)), m);
    }
}

void FN(scale)(float *x, float a, size_t n)
{
    const vf va = vset1(a);
    size_t i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vf x0 = vmul(va, vload(x + i));
        vf x1 = vmul(va, vload(x + i + VL));
        vstore(x + i, x0);
        vstore(x + i + VL, x1);
    }
    for (; i + VL <= n; i += VL)
        vstore(x + i, vmul(va, vload(x + i)));
    if (i < n) {
        vmask m = vmask_n(n - i);
        vstore_m(x + i, vmul(va, vload_m(x + i, m)), m);
    }
}

float FN(exp_sub_sum)(float *y, const float *x, float m, size_t n)
{
    const vf vm = vset1(m);
    vf s0 = vzero(), s1 = s0;
    size_t i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vf e0 = vexp(vsub(vload(x + i), vm));
        vf e1 = vexp(vsub(vload(x + i + VL), vm));
        vstore(y + i, e0);
        vstore(y + i + VL, e1);
        s0 = vadd(s0, e0);
        s1 = vadd(s1, e1);
    }
    for (; i + VL <= n; i += VL) {
        vf e = vexp(vsub(vload(x + i), vm));
        vstore(y + i, e);
        s0 = vadd(s0, e);
    }
    if (i < n) {
        vmask mk = vmask_n(n - i);
        vf e = vkeep(vexp(vsub(vload_m(x + i, mk), vm)), mk); /* lanes past n do not count */
        vstore_m(y + i, e, mk);
        s1 = vadd(s1, e);
    }
    return vhsum(vadd(s0, s1));
}

LINATTN_INLINE vf elu1_v(vf x)
{
    return vpos_sel(x, vadd(x, vset1(1.0f)), vexp_nonpos(x));
}

void FN(elu1)(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        vstore(y + i, elu1_v(vload(x + i)));
    if (i < n) {
        vmask m = vmask_n(n - i);
        vstore_m(y + i, elu1_v(vload_m(x + i, m)), m);
    }
}

void FN(to_f16)(uint16_t *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        vstore_f16(y + i, vload(x + i));
    if (i < n) {
        vmask m = vmask_n(n - i);
        vstore_f16_m(y + i, vload_m(x + i, m), m);
    }
}

void FN(relu)(float *y, const float *x, size_t n)
{
    const vf zero = vzero();
    size_t i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vf a = vmax(vload(x + i), zero);
        vf b = vmax(vload(x + i + VL), zero);
        vstore(y + i, a);
        vstore(y + i + VL, b);
    }
    for (; i + VL <= n; i += VL)
        vstore(y + i, vmax(vload(x + i), zero));
    if (i < n) {
        vmask m = vmask_n(n - i);
        vstore_m(y + i, vmax(vload_m(x + i, m), zero), m);
    }
}

/* g / (1 + exp(-g)) * u, in the scalar kernel's order. */
LINATTN_INLINE vf silu_mul_v(vf g, vf u)
{
    return vmul(vdiv(g, vadd(vset1(1.0f), vexp(vsub(vzero(), g)))), u);
}

void FN(silu_mul)(float *y, const float *g, const float *u, size_t n)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        vstore(y + i, silu_mul_v(vload(g + i), vload(u + i)));
    if (i < n) {
        vmask m = vmask_n(n - i);
        vstore_m(y + i, silu_mul_v(vload_m(g + i, m), vload_m(u + i, m)), m);
    }
}

/* 0.5 x (1 + tanh(u)), u = c (x + 0.044715 x^3), as x / (1 + exp(-2u)):
 * the same function (1 + tanh u = 2 / (1 + e^-2u)) on the inline exp, where
 * the tanh form needed SLEEF's expm1 by call (6% of a kjv-linear step of 32
 * streams). No cancellation for x < 0 either: the quotient keeps its
 * relative precision where 1 + tanh lost it. vexp clamps its argument, so
 * e stays finite and a large |x| gives x or a tiny x / e, as tanh's +-1 do. */
LINATTN_INLINE vf gelu_v(vf x)
{
    const vf c = vset1(0.7978845608028654f);
    vf x3 = vmul(vmul(x, x), x);
    vf u = vmul(c, vfma(vset1(0.044715f), x3, x));
    vf e = vexp(vmul(vset1(-2.0f), u));
    return vdiv(x, vadd(vset1(1.0f), e));
}

void FN(gelu)(float *y, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        vstore(y + i, gelu_v(vload(x + i)));
    if (i < n) {
        vmask m = vmask_n(n - i);
        vstore_m(y + i, gelu_v(vload_m(x + i, m)), m);
    }
}

/* sum (x[i] - mean)^2; the masked tail lanes load 0 and must not count. */
static float sum_sq_dev(const float *x, float mean, size_t n)
{
    const vf vm = vset1(mean);
    vf s0 = vzero(), s1 = s0;
    size_t i = 0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vf d0 = vsub(vload(x + i), vm);
        vf d1 = vsub(vload(x + i + VL), vm);
        s0 = vfma(d0, d0, s0);
        s1 = vfma(d1, d1, s1);
    }
    for (; i + VL <= n; i += VL) {
        vf d = vsub(vload(x + i), vm);
        s0 = vfma(d, d, s0);
    }
    if (i < n) {
        vmask m = vmask_n(n - i);
        vf d = vkeep(vsub(vload_m(x + i, m), vm), m);
        s1 = vfma(d, d, s1);
    }
    return vhsum(vadd(s0, s1));
}

void FN(layernorm)(float *y, const float *x, const float *w, const float *b, size_t n, float eps)
{
    if (n == 0)
        return;
    float mean = FN(sum)(x, n) / (float)n;
    float var = sum_sq_dev(x, mean, n) / (float)n;
    const vf vm = vset1(mean);
    const vf vinv = vset1(1.0f / sqrtf(var + eps));
    size_t i = 0;
    for (; i + VL <= n; i += VL) {
        vf t = vmul(vsub(vload(x + i), vm), vinv);
        vf bb = b ? vload(b + i) : vzero();
        vstore(y + i, vfma(t, vload(w + i), bb));
    }
    if (i < n) {
        vmask m = vmask_n(n - i);
        vf t = vmul(vsub(vload_m(x + i, m), vm), vinv);
        vf bb = b ? vload_m(b + i, m) : vzero();
        vstore_m(y + i, vfma(t, vload_m(w + i, m), bb), m);
    }
}

void FN(rmsnorm)(float *y, const float *x, const float *w, size_t n, float eps)
{
    if (n == 0)
        return;
    float ss = FN(dot)(x, x, n);
    const vf vinv = vset1(1.0f / sqrtf(ss / (float)n + eps));
    size_t i = 0;
    for (; i + VL <= n; i += VL) {
        vf t = vmul(vload(x + i), vinv);
        vstore(y + i, vmul(t, vload(w + i)));
    }
    if (i < n) {
        vmask m = vmask_n(n - i);
        vf t = vmul(vload_m(x + i, m), vinv);
        vstore_m(y + i, vmul(t, vload_m(w + i, m)), m);
    }
}

LINATTN_INLINE vf load_chunk(const float *p, int masked, vmask m)
{
    return masked ? vload_m(p, m) : vload(p);
}

LINATTN_INLINE void store_chunk(float *p, vf v, int masked, vmask m)
{
    if (masked)
        vstore_m(p, v, m);
    else
        vstore(p, v);
}

/* Columns [0, VL nc) of out: c phiq^T S + sum_j w_j V_j, times inv, with the
 * out block (nc vectors) in registers; S is read once, two rows per
 * iteration. With tail set the last chunk is the masked tail. With nc <= 4
 * the odd rows get their own accumulators, else the FMA chains would be
 * too few to hide the FMA latency. */
LINATTN_INLINE void lbr_block(float *out, const float *phiq, const float *S, const float *V,
                              const float *w, int n, float c, size_t dk, size_t dv, float inv,
                              int nc, int tail, vmask tm)
{
    vf acc[8], odd[4];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        acc[k] = vzero();
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        odd[k] = vzero();
    size_t i = 0;
    for (; i + 2 <= dk; i += 2) {
        const float *s0 = S + i * dv, *s1 = s0 + dv;
        vf q0 = vbcast(phiq + i), q1 = vbcast(phiq + i + 1);
#pragma GCC unroll 8
        for (int k = 0; k < nc; k++) {
            int mk = tail && k == nc - 1;
            acc[k] = vfma(q0, load_chunk(s0 + VL * k, mk, tm), acc[k]);
            if (nc <= 4)
                odd[k & 3] = vfma(q1, load_chunk(s1 + VL * k, mk, tm), odd[k & 3]);
            else
                acc[k] = vfma(q1, load_chunk(s1 + VL * k, mk, tm), acc[k]);
        }
    }
    if (nc <= 4) {
#pragma GCC unroll 4
        for (int k = 0; k < nc; k++)
            acc[k] = vadd(acc[k], odd[k & 3]);
    }
    if (i < dk) {
        vf q0 = vbcast(phiq + i);
#pragma GCC unroll 8
        for (int k = 0; k < nc; k++)
            acc[k] = vfma(q0, load_chunk(S + i * dv + VL * k, tail && k == nc - 1, tm), acc[k]);
    }
    const vf vc = vset1(c);
#pragma GCC unroll 8
    for (int k = 0; k < nc; k++)
        acc[k] = vmul(acc[k], vc);
    for (int j = 0; j < n; j++) {
        vf wj = vbcast(w + j);
        const float *vj = V + (size_t)j * dv;
#pragma GCC unroll 8
        for (int k = 0; k < nc; k++)
            acc[k] = vfma(wj, load_chunk(vj + VL * k, tail && k == nc - 1, tm), acc[k]);
    }
    const vf vinv = vset1(inv);
#pragma GCC unroll 8
    for (int k = 0; k < nc; k++)
        store_chunk(out + VL * k, vmul(acc[k], vinv), tail && k == nc - 1, tm);
}

/* One copy per block width (up to 8 vectors) so nc and tail are constants
 * in each. */
static void lbr_dispatch(float *out, const float *phiq, const float *S, const float *V,
                         const float *w, int n, float c, size_t dk, size_t dv, float inv,
                         size_t width)
{
    size_t nc = (width + VL - 1) / VL;
    int tail = (width % VL) != 0;
    vmask tm = vmask_n(tail ? width % VL : VL);
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

/* d[0..4) += phiq . r[0..4) (rows of dk): four dots in one pass, their
 * sums reduced together (one horizontal step for four dots). */
LINATTN_INLINE void dots4(float *d, const float *phiq, const float *const r[4], size_t dk)
{
    vf a0 = vzero(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + VL <= dk; i += VL) {
        vf q = vload(phiq + i);
        a0 = vfma(q, vload(r[0] + i), a0);
        a1 = vfma(q, vload(r[1] + i), a1);
        a2 = vfma(q, vload(r[2] + i), a2);
        a3 = vfma(q, vload(r[3] + i), a3);
    }
    if (i < dk) {
        vmask m = vmask_n(dk - i);
        vf q = vload_m(phiq + i, m);
        a0 = vfma(q, vload_m(r[0] + i, m), a0);
        a1 = vfma(q, vload_m(r[1] + i, m), a1);
        a2 = vfma(q, vload_m(r[2] + i, m), a2);
        a3 = vfma(q, vload_m(r[3] + i, m), a3);
    }
    vhsum4_add(d, a0, a1, a2, a3);
}

/* The row weights w[0..n) and the denominator d of one query row from its
 * dots (d4[0] = phiq . z, d4[1 + j] = phiq . K_j); returns the factor out
 * is scaled by (1/d, or 1 when d is below FLT_MIN: then out is divided
 * after). */
LINATTN_INLINE float lbr_weights_of(float *w, float *d, const float *d4, const float *pw, int n,
                                    float c, float eps)
{
    float den = c * d4[0];
    for (int j = 0; j < n; j++) {
        w[j] = pw[j] * d4[1 + j];
        den += w[j];
    }
    *d = den + eps;
    return *d >= FLT_MIN ? 1.0f / *d : 1.0f;
}

/* The 4 dots of a group (r[0..4): z or rows of K) at j0 (dots, four at a
 * time): d4[1 + j] for j < n, groups past n + 1 repeat z (their sums are
 * not used). */
LINATTN_INLINE void lbr_group_rows(const float *r[4], int j0, const float *z, const float *K,
                                   int n, size_t dk)
{
    for (int t = 0; t < 4; t++)
        r[t] = j0 + t == 0 || j0 + t > n ? z : K + (size_t)(j0 + t - 1) * dk;
}

LINATTN_INLINE float lbr_weights(float *w, float *d, const float *phiq, const float *z,
                                 const float *K, const float *pw, int n, float c, size_t dk,
                                 float eps)
{
    float d4[LINATTN_BLOCK_ROWS + 4] = {0};
    for (int j0 = 0; j0 < n + 1; j0 += 4) {
        const float *r[4];
        lbr_group_rows(r, j0, z, K, n, dk);
        dots4(d4 + j0, phiq, r, dk);
    }
    return lbr_weights_of(w, d, d4, pw, n, c, eps);
}

/* dots4 for R (<= 3) rows of phiq at once (row stride dk), each r[t]
 * vector loaded once for them: 12 sums, 3 rows' vectors and one r vector
 * in 16 registers. Each row's sums are dots4's, term for term. */
LINATTN_INLINE void dots4_rows(float (*d)[LINATTN_BLOCK_ROWS + 4], int j0, const float *phiq,
                               const float *const r[4], size_t dk, int R)
{
    vf a[3][4];
#pragma GCC unroll 3
    for (int q = 0; q < R; q++)
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++)
            a[q][t] = vzero();
    size_t i = 0;
    for (; i + VL <= dk; i += VL) {
        vf x[3];
#pragma GCC unroll 3
        for (int q = 0; q < R; q++)
            x[q] = vload(phiq + (size_t)q * dk + i);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            const vf k = vload(r[t] + i);
#pragma GCC unroll 3
            for (int q = 0; q < R; q++)
                a[q][t] = vfma(x[q], k, a[q][t]);
        }
    }
    if (i < dk) {
        vmask m = vmask_n(dk - i);
        vf x[3];
#pragma GCC unroll 3
        for (int q = 0; q < R; q++)
            x[q] = vload_m(phiq + (size_t)q * dk + i, m);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            const vf k = vload_m(r[t] + i, m);
#pragma GCC unroll 3
            for (int q = 0; q < R; q++)
                a[q][t] = vfma(x[q], k, a[q][t]);
        }
    }
#pragma GCC unroll 3
    for (int q = 0; q < R; q++)
        vhsum4_add(d[q] + j0, a[q][0], a[q][1], a[q][2], a[q][3]);
}

LINATTN_INLINE void lbr_finish(float *out, size_t dv, float d)
{
    if (!(d >= FLT_MIN))
        for (size_t j = 0; j < dv; j++)
            out[j] = d == 0.0f ? 0.0f : out[j] / d;
}

/* The row weights and the denominator first, then out in column blocks of
 * up to 8 vectors so each block's accumulator stays in registers. */
void FN(linear_block_read)(float *out, const float *phiq, const float *S, const float *z,
                           const float *K, const float *V, const float *pw, int n, float c,
                           size_t dk, size_t dv, float eps)
{
    float w[LINATTN_BLOCK_ROWS], d;
    const float inv = lbr_weights(w, &d, phiq, z, K, pw, n, c, dk, eps);
    for (size_t j = 0; j < dv; j += 8 * VL)
        lbr_dispatch(out + j, phiq, S + j, V + j, w, n, c, dk, dv, inv,
                     dv - j < 8 * VL ? dv - j : 8 * VL);
    lbr_finish(out, dv, d);
}

/* The end of lbr_rows4 and lbr_rows4x2: rows 1.. of the group add their
 * own waiting rows from j on (nr[] grows by one a row), in order, then
 * every row is scaled by its inv and stored (4 vectors). */
LINATTN_INLINE void lbr_rows_end(vf acc[3][4], float *out, size_t ldo, const float *V,
                                 size_t dv, const float *const *w, const int *nr, int j,
                                 const float *inv, int R)
{
#pragma GCC unroll 3
    for (int r = 1; r < R; r++)
        for (int jr = j; jr < nr[r]; jr++) {
            const vf wj = vbcast(w[r] + jr);
            const float *vj = V + (size_t)jr * dv;
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                acc[r][k] = vfma(wj, vload(vj + VL * k), acc[r][k]);
        }
#pragma GCC unroll 3
    for (int r = 0; r < R; r++) {
        const vf vinv = vset1(inv[r]);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            vstore(out + (size_t)r * ldo + VL * k, vmul(acc[r][k], vinv));
    }
}

/* linear_block_rows: R (<= 3) query rows at once against 4 full vectors of
 * S's columns, each S vector loaded once for the R rows: 12 sums, 3
 * broadcasts and the S vector fill 16 registers. Each row's column sums are
 * lbr_block's for an 8-vector block, term for term: one chain over S's rows
 * in order, then c, the row's waiting rows in order (nr[r] of them), inv. */
LINATTN_INLINE void lbr_rows4(float *out, size_t ldo, const float *phiq, size_t dk,
                              const float *S, size_t dv, const float *V, const float *const *w,
                              const int *nr, const float *c, const float *inv, int R)
{
    vf acc[3][4];
#pragma GCC unroll 3
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            acc[r][k] = vzero();
    for (size_t i = 0; i < dk; i++) {
        const float *s0 = S + i * dv;
        vf q[3];
#pragma GCC unroll 3
        for (int r = 0; r < R; r++)
            q[r] = vbcast(phiq + (size_t)r * dk + i);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const vf sv = vload(s0 + VL * k);
#pragma GCC unroll 3
            for (int r = 0; r < R; r++)
                acc[r][k] = vfma(q[r], sv, acc[r][k]);
        }
    }
#pragma GCC unroll 3
    for (int r = 0; r < R; r++) {
        const vf vc = vset1(c[r]);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            acc[r][k] = vmul(acc[r][k], vc);
    }
    /* the waiting rows every row sees, for all rows at once (12 chains),
     * then each row's own (nr[] grows by one a row) */
    int j = 0;
    for (; j < nr[0]; j++) {
        const float *vj = V + (size_t)j * dv;
        vf wj[3];
#pragma GCC unroll 3
        for (int r = 0; r < R; r++)
            wj[r] = vbcast(w[r] + j);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
#pragma GCC unroll 3
            for (int r = 0; r < R; r++)
                acc[r][k] = vfma(wj[r], vload(vj + VL * k), acc[r][k]);
    }
    lbr_rows_end(acc, out, ldo, V, dv, w, nr, j, inv, R);
}

/* R (2 or 3) query rows against a column block of exactly 4 vectors,
 * each column summed as lbr_block sums that block (nc = 4): S's even rows
 * in one chain and its odd rows in another, added, then the last row when
 * dk is odd, c, the waiting rows in order, inv. Each S vector is loaded
 * once for the R rows (vpin: else the compiler folds the load into every
 * FMA, and the loop is bound by its loads as one row at a time is: a load
 * per FMA and a broadcast per 4). 8 R sums: for 32 registers (VREGS). */
LINATTN_INLINE void lbr_rows4x2(float *out, size_t ldo, const float *phiq, size_t dk,
                                const float *S, size_t dv, const float *V, const float *const *w,
                                const int *nr, const float *c, const float *inv, int R)
{
    vf acc[3][4], odd[3][4];
#pragma GCC unroll 3
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            acc[r][k] = odd[r][k] = vzero();
    size_t i = 0;
    for (; i + 2 <= dk; i += 2) {
        const float *s0 = S + i * dv, *s1 = s0 + dv;
        vf q0[3], q1[3];
#pragma GCC unroll 3
        for (int r = 0; r < R; r++) {
            q0[r] = vbcast(phiq + (size_t)r * dk + i);
            q1[r] = vbcast(phiq + (size_t)r * dk + i + 1);
        }
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const vf a = vpin(vload(s0 + VL * k)), b = vpin(vload(s1 + VL * k));
#pragma GCC unroll 3
            for (int r = 0; r < R; r++) {
                acc[r][k] = vfma(q0[r], a, acc[r][k]);
                odd[r][k] = vfma(q1[r], b, odd[r][k]);
            }
        }
    }
#pragma GCC unroll 3
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            acc[r][k] = vadd(acc[r][k], odd[r][k]);
    if (i < dk) {
#pragma GCC unroll 3
        for (int r = 0; r < R; r++) {
            const vf q0 = vbcast(phiq + (size_t)r * dk + i);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                acc[r][k] = vfma(q0, vload(S + i * dv + VL * k), acc[r][k]);
        }
    }
#pragma GCC unroll 3
    for (int r = 0; r < R; r++) {
        const vf vc = vset1(c[r]);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            acc[r][k] = vmul(acc[r][k], vc);
    }
    int j = 0;
    for (; j < nr[0]; j++) {
        const float *vj = V + (size_t)j * dv;
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const vf x = vload(vj + VL * k);
#pragma GCC unroll 3
            for (int r = 0; r < R; r++)
                acc[r][k] = vfma(vbcast(w[r] + j), x, acc[r][k]);
        }
    }
    lbr_rows_end(acc, out, ldo, V, dv, w, nr, j, inv, R);
}

/* Rows [0, R) of a group of linear_block_rows (R <= 3), one column block of
 * linear_block_read (j, width) at a time: lbr_rows4 where the block is 8
 * full vectors (summed in one chain, as lbr_rows4 sums); lbr_rows4x2 where
 * it is exactly 4 (two chains) and there are 32 registers (AVX-512 and
 * NEON at d = 64 and 16); else row by row (with 16 registers, 3 rows'
 * 24 sums of a 4-vector block do not fit). */
static void lbr_rows_group(float *out, size_t ldo, const float *phiq, const float *S,
                           const float *V, float (*w)[LINATTN_BLOCK_ROWS], const int *nr,
                           const float *c, const float *inv, size_t dk, size_t dv, int R)
{
    const float *wp[3] = {w[0], R > 1 ? w[1] : w[0], R > 2 ? w[2] : w[0]};
    for (size_t j = 0; j < dv; j += 8 * VL) {
        const size_t width = dv - j < 8 * VL ? dv - j : 8 * VL;
        if (R > 1 && width == 8 * VL) {
            for (size_t h = 0; h < 8 * VL; h += 4 * VL) {
                if (R == 3)
                    lbr_rows4(out + j + h, ldo, phiq, dk, S + j + h, dv, V + j + h, wp, nr, c, inv, 3);
                else
                    lbr_rows4(out + j + h, ldo, phiq, dk, S + j + h, dv, V + j + h, wp, nr, c, inv, 2);
            }
        } else if (VREGS >= 32 && R > 1 && width == 4 * VL) {
            if (R == 3)
                lbr_rows4x2(out + j, ldo, phiq, dk, S + j, dv, V + j, wp, nr, c, inv, 3);
            else
                lbr_rows4x2(out + j, ldo, phiq, dk, S + j, dv, V + j, wp, nr, c, inv, 2);
        } else {
            for (int r = 0; r < R; r++)
                lbr_dispatch(out + (size_t)r * ldo + j, phiq + (size_t)r * dk, S + j, V + j, w[r],
                             nr[r], c[r], dk, dv, inv[r], width);
        }
    }
}

/* Each row exactly as linear_block_read (see kernels.h); S read once per
 * group of rows instead of once per row. */
void FN(linear_block_rows)(float *out, size_t ldo, const float *phiq, const float *S,
                           const float *z, const float *K, const float *V, const float *pw,
                           const float *c, int n0, int m, size_t dk, size_t dv, float eps)
{
    for (int r0 = 0; r0 < m; r0 += 3) {
        const int R = m - r0 < 3 ? m - r0 : 3;
        float w[3][LINATTN_BLOCK_ROWS], d[3], inv[3];
        float d4[3][LINATTN_BLOCK_ROWS + 4] = {{0}};
        int nr[3];
        /* the dots of the group's last row (which sees the most rows) for
         * all: an earlier row's extra ones are not used */
        const int nmax = n0 + r0 + R;
        for (int j0 = 0; j0 < nmax + 1; j0 += 4) {
            const float *g[4];
            lbr_group_rows(g, j0, z, K, nmax, dk);
            if (R == 3)
                dots4_rows(d4, j0, phiq + (size_t)r0 * dk, g, dk, 3);
            else if (R == 2)
                dots4_rows(d4, j0, phiq + (size_t)r0 * dk, g, dk, 2);
            else
                dots4(d4[0] + j0, phiq + (size_t)r0 * dk, g, dk);
        }
        for (int r = 0; r < R; r++) {
            const int row = r0 + r;
            nr[r] = n0 + row + 1;
            inv[r] = lbr_weights_of(w[r], &d[r], d4[r], pw + (m - 1 - row), nr[r], c[row], eps);
        }
        float *o = out + (size_t)r0 * ldo;
        lbr_rows_group(o, ldo, phiq + (size_t)r0 * dk, S, V, w, nr, c + r0, inv, dk, dv, R);
        for (int r = 0; r < R; r++)
            lbr_finish(o + (size_t)r * ldo, dv, d[r]);
    }
}
