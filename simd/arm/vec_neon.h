/* vec_neon.h: the vector vocabulary of the shared kernel bodies (simd/body/) in aarch64 NEON (4 lanes). */
#ifndef LINATTN_SIMD_VEC_H
#define LINATTN_SIMD_VEC_H

#include <arm_neon.h>
#include <string.h>
#include <stddef.h>
#include <stdint.h>

#define LINATTN_INLINE static inline __attribute__((always_inline))

#define VL 4                             /* floats per vector */
#define VREGS 32                         /* vector registers */
#if defined(__ARM_FEATURE_DOTPROD) /* the capability's own files: the dot-product kernels alone */
#define FN(name) linattn_##name##_neondot
#else
#define FN(name) linattn_##name##_neon /* the kernel names of this ISA */
#endif
/* Rows of a gemm micro-tile: 20 accumulators + 2 B vectors + 10 A values
 * = 32 registers. GCC turns the broadcasts into scalar loads, all issued at
 * the top of a k step, and by-element FMAs, so every row's A value holds a
 * register: with 11 or 12 rows the k loop spills accumulators (GCC 12). */
#define GEMM_MR 10

typedef float32x4_t vf;
/* NEON has no masked loads or stores: a mask is the number of leading lanes
 * (0..VL), and a tail moves in pieces of 2 and 1 floats, so nothing past
 * the end is ever read or written. */
typedef size_t vmask;

LINATTN_INLINE vmask vmask_n(size_t n) { return n; } /* lanes 0..n-1, n <= VL */

/* All ones on lanes 0..m-1: for the selects, which need a lane mask. */
LINATTN_INLINE uint32x4_t neon_lanes(vmask m)
{
    static const uint32_t index[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(index), vdupq_n_u32((uint32_t)m));
}

LINATTN_INLINE vf vzero(void) { return vdupq_n_f32(0.0f); }
LINATTN_INLINE vf vset1(float a) { return vdupq_n_f32(a); }
LINATTN_INLINE vf vbcast(const float *p) { return vld1q_dup_f32(p); }
LINATTN_INLINE vf vload(const float *p) { return vld1q_f32(p); }
/* The first m floats of p, 0 past them. */
LINATTN_INLINE vf vload_m(const float *p, vmask m)
{
    const float32x2_t z = vdup_n_f32(0.0f);
    switch (m) {
    case 0: return vdupq_n_f32(0.0f);
    case 1: return vcombine_f32(vld1_lane_f32(p, z, 0), z);
    case 2: return vcombine_f32(vld1_f32(p), z);
    case 3: return vcombine_f32(vld1_f32(p), vld1_lane_f32(p + 2, z, 0));
    default: return vld1q_f32(p);
    }
}
/* VL halfs (IEEE binary16) or bfloat16s at p as floats, exactly (fcvtl;
 * bfloat16 is the top half of an fp32: a widening shift by 16). The _m
 * forms read the first m only and give 0 past them. */
LINATTN_INLINE vf vload_f16(const uint16_t *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
LINATTN_INLINE vf vload_bf16(const uint16_t *p)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}
LINATTN_INLINE uint16x4_t neon_load_halfs_m(const uint16_t *p, vmask m)
{
    uint16_t t[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < m && i < 4; i++)
        t[i] = p[i];
    return vld1_u16(t);
}
LINATTN_INLINE vf vload_f16_m(const uint16_t *p, vmask m)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(neon_load_halfs_m(p, m)));
}
LINATTN_INLINE vf vload_bf16_m(const uint16_t *p, vmask m)
{
    return vreinterpretq_f32_u32(vshll_n_u16(neon_load_halfs_m(p, m), 16));
}
LINATTN_INLINE void vstore(float *p, vf v) { vst1q_f32(p, v); }
/* The first m lanes of v to p; nothing past them is written. */
LINATTN_INLINE void vstore_m(float *p, vf v, vmask m)
{
    switch (m) {
    case 0: break;
    case 1: vst1q_lane_f32(p, v, 0); break;
    case 2: vst1_f32(p, vget_low_f32(v)); break;
    case 3:
        vst1_f32(p, vget_low_f32(v));
        vst1q_lane_f32(p + 2, v, 2);
        break;
    default: vst1q_f32(p, v); break;
    }
}
/* v as VL halfs at p, rounded to nearest even (fcvtn in the default
 * rounding mode; overflow gives infinity, NaN stays NaN); the _m form
 * writes the first m only. */
LINATTN_INLINE void vstore_f16(uint16_t *p, vf v)
{
    vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v)));
}
/* VL int8s at p as floats (exact): widened twice, then converted. */
LINATTN_INLINE vf vload_i8(const int8_t *p)
{
    int32_t four;
    memcpy(&four, p, sizeof four);
    int16x8_t w = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(w)));
}
/* VL integral floats of -127..127 as int8s at p (exact). */
LINATTN_INLINE void vstore_i8(int8_t *p, vf v)
{
    int16x4_t h = vmovn_s32(vcvtq_s32_f32(v));
    int8x8_t b = vmovn_s16(vcombine_s16(h, h));
    int32_t w = vget_lane_s32(vreinterpret_s32_s8(b), 0);
    memcpy(p, &w, 4);
}
LINATTN_INLINE void vstore_f16_m(uint16_t *p, vf v, vmask m)
{
    uint16_t t[4];
    vst1_u16(t, vreinterpret_u16_f16(vcvt_f16_f32(v)));
    for (size_t i = 0; i < m && i < 4; i++)
        p[i] = t[i];
}
/* v, kept in a register: a vector several FMAs read is loaded once
 * (else the compiler may fold the load into each of them) */
LINATTN_INLINE vf vpin(vf v)
{
    __asm__("" : "+w"(v));
    return v;
}
LINATTN_INLINE vf vadd(vf a, vf b) { return vaddq_f32(a, b); }
LINATTN_INLINE vf vsub(vf a, vf b) { return vsubq_f32(a, b); }
LINATTN_INLINE vf vmul(vf a, vf b) { return vmulq_f32(a, b); }
LINATTN_INLINE vf vdiv(vf a, vf b) { return vdivq_f32(a, b); }
/* minNum and maxNum give the number where one operand is a (quiet) NaN: b
 * where a is NaN, as the bodies need (max(x, acc) keeps acc when x is NaN,
 * relu gives 0, gelu's clamp gives the limit); a where b is NaN, which the
 * bodies never pass. */
LINATTN_INLINE vf vmin(vf a, vf b) { return vminnmq_f32(a, b); }
LINATTN_INLINE vf vmax(vf a, vf b) { return vmaxnmq_f32(a, b); }
LINATTN_INLINE vf vfma(vf a, vf b, vf c) { return vfmaq_f32(c, a, b); } /* a b + c */
/* v on the lanes of m, 0 elsewhere */
LINATTN_INLINE vf vkeep(vf v, vmask m)
{
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), neon_lanes(m)));
}
/* b on the lanes of m, a elsewhere */
LINATTN_INLINE vf vblend(vf a, vf b, vmask m) { return vbslq_f32(neon_lanes(m), b, a); }
/* x > 0 (ordered) ? a : b */
LINATTN_INLINE vf vpos_sel(vf x, vf a, vf b) { return vbslq_f32(vcgtzq_f32(x), a, b); }
/* Pairwise, (v0 + v1) + (v2 + v3): the tree vhsum4_add uses too. */
LINATTN_INLINE float vhsum(vf v) { return vaddvq_f32(v); }
LINATTN_INLINE float vhmax(vf v) { return vmaxnmvq_f32(v); }
/* out[0..3] += {hsum a, hsum b, hsum c, hsum d} */
LINATTN_INLINE void vhsum4_add(float *out, vf a, vf b, vf c, vf d)
{
    vst1q_f32(out, vaddq_f32(vld1q_f32(out), vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d))));
}
#include "../body/exp_body.h"
/* exp(x), ours (../body/exp_body.h). fmin and fmax (not the minNum forms
 * of vmin, vmax) give NaN where x is NaN. p 2^n as p 2^(n>>1)
 * 2^(n - (n>>1)): both factors normal for n in [-150, 128], the first
 * product exact, the second rounded once (into the subnormals too). */
LINATTN_INLINE vf vexp(vf x)
{
    x = vmaxq_f32(vminq_f32(x, vdupq_n_f32(89.0f)), vdupq_n_f32(-104.0f));
    vf n, p = vexp_reduced(x, &n);
    int32x4_t ni = vcvtq_s32_f32(n);
    int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
    const int32x4_t bias = vdupq_n_s32(127);
    vf s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    vf s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
    return vmulq_f32(vmulq_f32(p, s1), s2);
}
/* exp(min(x, 0)), bit for bit vexp's: as vec_avx2.h's, one multiply by
 * 2^n from the rounding's bits where every lane is at least -86 (fmin
 * keeps NaN; a NaN lane makes the minimum NaN, which is not below -86). */
LINATTN_INLINE vf vexp_nonpos(vf x)
{
    x = vminq_f32(x, vdupq_n_f32(0.0f));
    if (__builtin_expect(vminvq_f32(x) < -86.0f, 0))
        return vexp(x);
    const vf shifter = vset1(VEXP_SHIFTER + 127.0f);
    const vf t = vfma(x, vset1(0x1.715476p+0f), shifter);
    const vf p = vexp_poly(x, vsub(t, shifter));
    return vmulq_f32(p, vreinterpretq_f32_s32(vshlq_n_s32(vreinterpretq_s32_f32(t), 23)));
}
/* Fetches the cache line of p into all levels, for a read soon. */
LINATTN_INLINE void vprefetch(const float *p) { __builtin_prefetch(p); }

/* pack_bt's blocks: TB x TB, transposed by trn1/trn2 on 32- then 64-bit
 * elements. */
#define TB 4
/* dst[q * ldd + j] = src[j * lds + q] for q < w and j < 4, rows j >= h of
 * src read as 0 (w, h <= 4). */
LINATTN_INLINE void vtranspose_block(float *dst, size_t ldd, const float *src, size_t lds,
                                     size_t h, size_t w)
{
    float32x4_t r[4];
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; j++)
        r[j] = j < h ? vload_m(src + j * lds, w) : vdupq_n_f32(0.0f);
    /* {a0 b0 a2 b2}, {a1 b1 a3 b3}, {c0 d0 c2 d2}, {c1 d1 c3 d3} */
    float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r[0], r[1]));
    float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(r[0], r[1]));
    float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r[2], r[3]));
    float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(r[2], r[3]));
    r[0] = vreinterpretq_f32_f64(vtrn1q_f64(t0, t2));
    r[1] = vreinterpretq_f32_f64(vtrn1q_f64(t1, t3));
    r[2] = vreinterpretq_f32_f64(vtrn2q_f64(t0, t2));
    r[3] = vreinterpretq_f32_f64(vtrn2q_f64(t1, t3));
#pragma GCC unroll 4
    for (size_t q = 0; q < w; q++)
        vst1q_f32(dst + q * ldd, r[q]);
}

/* The half at p (unaligned) as a float: fcvtl, exact. */
LINATTN_INLINE float vhalf(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}
/* The dot products of 32 int8 pairs a . b (a0, b0: elements 0..15; a1,
 * b1: 16..31) as 4 exact int32 sums: lane 0 elements 0-3 and 8-11, lane 1
 * 4-7 and 12-15, lanes 2-3 the same of 16..31. With dotprod, sdot gives the
 * sums of 4 and two zips put them in that order, so both give the same
 * lanes (and the same floats after). */
LINATTN_INLINE int32x4_t neon_dot32(int8x16_t a0, int8x16_t a1, int8x16_t b0, int8x16_t b1)
{
#if defined(__ARM_FEATURE_DOTPROD)
    int64x2_t s = vreinterpretq_s64_s32(vdotq_s32(vdupq_n_s32(0), a0, b0));
    int64x2_t t = vreinterpretq_s64_s32(vdotq_s32(vdupq_n_s32(0), a1, b1));
    return vaddq_s32(vreinterpretq_s32_s64(vzip1q_s64(s, t)),
                     vreinterpretq_s32_s64(vzip2q_s64(s, t)));
#else
    int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(a0), vget_low_s8(b0)));
    s = vpadalq_s16(s, vmull_s8(vget_high_s8(a0), vget_high_s8(b0)));
    int32x4_t t = vpaddlq_s16(vmull_s8(vget_low_s8(a1), vget_low_s8(b1)));
    t = vpadalq_s16(t, vmull_s8(vget_high_s8(a1), vget_high_s8(b1)));
    return vpaddq_s32(s, t);
#endif
}
/* The dot product of 32 int8 pairs as VL floats that sum to it: lanes 0-1
 * hold elements 0..15, lanes 2-3 elements 16..31. */
LINATTN_INLINE vf vdot_i8x32(const int8_t *w, const int8_t *x)
{
    return vcvtq_f32_s32(neon_dot32(vld1q_s8(w), vld1q_s8(w + 16), vld1q_s8(x), vld1q_s8(x + 16)));
}
/* 4-bit values (0..15) dotted with 32 int8 x, laid out as vdot_i8x32's
 * sums: neon_nib32 gives the low (shift 0) or high (shift 4) nibbles of
 * p[0..32), vdot_nib16 takes the low then the high nibbles of p[0..16). */
LINATTN_INLINE vf neon_nib_dot(uint8x16_t q0, uint8x16_t q1, const int8_t *x, int32_t c)
{
    int32x4_t s = neon_dot32(vreinterpretq_s8_u8(q0), vreinterpretq_s8_u8(q1), vld1q_s8(x),
                             vld1q_s8(x + 16));
    return vcvtq_f32_s32(vaddq_s32(s, vsetq_lane_s32(c, vdupq_n_s32(0), 0)));
}
/* The low (shift 0) or high (shift 4) nibbles of p[0..32) in v[0..2). */
LINATTN_INLINE void neon_nib32(const uint8_t *p, int shift, uint8x16_t v[2])
{
    uint8x16_t m = vdupq_n_u8(0x0F), v0 = vld1q_u8(p), v1 = vld1q_u8(p + 16);
    if (shift) {
        v0 = vshrq_n_u8(v0, 4);
        v1 = vshrq_n_u8(v1, 4);
    }
    v[0] = vandq_u8(v0, m);
    v[1] = vandq_u8(v1, m);
}
LINATTN_INLINE vf vdot_nib16(const uint8_t *p, const int8_t *x, int32_t c)
{
    uint8x16_t v = vld1q_u8(p);
    return neon_nib_dot(vandq_u8(v, vdupq_n_u8(0x0F)), vshrq_n_u8(v, 4), x, c);
}
/* acc + h0 dx[0] (the nibbles of p0 . x[0..32) + c[0..4)'s sum) + h1 dx[1]
 * (p1's . x[32..64) + c[8..12)'s), h0 and h1 halves: two Q4_0 or Q4_1
 * blocks, one after the other. */
LINATTN_INLINE vf vdot_nib16x2_fma(vf acc, const uint8_t *p0, const uint8_t *p1, const uint8_t *h0,
                                   const uint8_t *h1, const int8_t *x, const int32_t *c,
                                   const float *dx)
{
    float s0 = vhalf(h0) * dx[0], s1 = vhalf(h1) * dx[1];
    uint8x16_t m = vdupq_n_u8(0x0F), v0 = vld1q_u8(p0), v1 = vld1q_u8(p1);
    int32x4_t t0 = neon_dot32(vreinterpretq_s8_u8(vandq_u8(v0, m)), vreinterpretq_s8_u8(vshrq_n_u8(v0, 4)),
                              vld1q_s8(x), vld1q_s8(x + 16));
    int32x4_t t1 = neon_dot32(vreinterpretq_s8_u8(vandq_u8(v1, m)), vreinterpretq_s8_u8(vshrq_n_u8(v1, 4)),
                              vld1q_s8(x + 32), vld1q_s8(x + 48));
    acc = vfma(vcvtq_f32_s32(vaddq_s32(t0, vld1q_s32(c))), vset1(s0), acc);
    return vfma(vcvtq_f32_s32(vaddq_s32(t1, vld1q_s32(c + 8))), vset1(s1), acc);
}
/* Q5_0 and Q5_1's 32 values: the nibbles of p[0..16) (low then high), bit i
 * of qh as element i's fifth bit; dotted with x. */
LINATTN_INLINE vf vdot_q5x32(const uint8_t *p, uint32_t qh, const int8_t *x, int32_t c)
{
    static const uint8_t lo_idx[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    static const uint8_t hi_idx[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    static const uint8_t bits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t b = vreinterpretq_u8_u32(vdupq_n_u32(qh)), m = vld1q_u8(bits);
    uint8x16_t h0 = vandq_u8(vtstq_u8(vqtbl1q_u8(b, vld1q_u8(lo_idx)), m), vdupq_n_u8(0x10));
    uint8x16_t h1 = vandq_u8(vtstq_u8(vqtbl1q_u8(b, vld1q_u8(hi_idx)), m), vdupq_n_u8(0x10));
    uint8x16_t v = vld1q_u8(p);
    return neon_nib_dot(vorrq_u8(vandq_u8(v, vdupq_n_u8(0x0F)), h0), vorrq_u8(vshrq_n_u8(v, 4), h1),
                        x, c);
}
/* Q5_K's sub-block j: bit j of qh above the nibbles (0..31). */
LINATTN_INLINE void neon_q5k32(const uint8_t *ql, int shift, const uint8_t *qh, int j,
                               uint8x16_t v[2])
{
    neon_nib32(ql, shift, v);
    int8x16_t s = vnegq_s8(vdupq_n_s8((int8_t)j));
    uint8x16_t h0 = vandq_u8(vshlq_u8(vld1q_u8(qh), s), vdupq_n_u8(1));
    uint8x16_t h1 = vandq_u8(vshlq_u8(vld1q_u8(qh + 16), s), vdupq_n_u8(1));
    v[0] = vorrq_u8(v[0], vshlq_n_u8(h0, 4));
    v[1] = vorrq_u8(v[1], vshlq_n_u8(h1, 4));
}
/* Q6_K's 32 values of one quarter (see vec_avx2.h), -32..31. */
LINATTN_INLINE void neon_q6x32(const uint8_t *ql, int shift, const uint8_t *qh, int k,
                               int8x16_t v[2])
{
    uint8x16_t l[2];
    neon_nib32(ql, shift, l);
    int8x16_t s = vnegq_s8(vdupq_n_s8((int8_t)(2 * k))); /* vshlq by a negative count: right */
    uint8x16_t h0 = vandq_u8(vshlq_u8(vld1q_u8(qh), s), vdupq_n_u8(3));
    uint8x16_t h1 = vandq_u8(vshlq_u8(vld1q_u8(qh + 16), s), vdupq_n_u8(3));
    v[0] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l[0], vshlq_n_u8(h0, 4))), vdupq_n_s8(32));
    v[1] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l[1], vshlq_n_u8(h1, 4))), vdupq_n_s8(32));
}
/* A K-quant super-block's integer sum (see simd/x86/x86.h): the 32 values
 * times x's 32 int8 (Q8_K) times the sub-block's scale (Q6_K: of the 8 at
 * s8, 2k for elements 0..15 in lanes 0-1, 2k+1 for 16..31 in lanes 2-3),
 * added in int32. */
typedef int32x4_t vk;
LINATTN_INLINE vk vk_zero(void) { return vdupq_n_s32(0); }
LINATTN_INLINE vk vk_nib32(vk acc, const uint8_t *p, int shift, const int8_t *x,
                           const uint8_t *sc8, int i)
{
    int sc = sc8[i];
    uint8x16_t v[2];
    neon_nib32(p, shift, v);
    return vmlaq_n_s32(acc, neon_dot32(vreinterpretq_s8_u8(v[0]), vreinterpretq_s8_u8(v[1]),
                                       vld1q_s8(x), vld1q_s8(x + 16)), sc);
}
LINATTN_INLINE vk vk_q5k32(vk acc, const uint8_t *ql, int shift, const uint8_t *qh, int j,
                           const int8_t *x, const uint8_t *sc8)
{
    int sc = sc8[j];
    uint8x16_t v[2];
    neon_q5k32(ql, shift, qh, j, v);
    return vmlaq_n_s32(acc, neon_dot32(vreinterpretq_s8_u8(v[0]), vreinterpretq_s8_u8(v[1]),
                                       vld1q_s8(x), vld1q_s8(x + 16)), sc);
}
LINATTN_INLINE vk vk_q6x32(vk acc, const uint8_t *ql, int shift, const uint8_t *qh, int k,
                           const int8_t *x, const int8_t *s8)
{
    int8x16_t v[2];
    neon_q6x32(ql, shift, qh, k, v);
    return vmlaq_s32(acc, neon_dot32(v[0], v[1], vld1q_s8(x), vld1q_s8(x + 16)),
                     vcombine_s32(vdup_n_s32(s8[2 * k]), vdup_n_s32(s8[2 * k + 1])));
}
#define VK_Q6_OFFSET 0 /* vk_q6x32 sums the values themselves (-32..31) */
/* A K-quant row's offsets in four fp32 lanes (see x86.h): s times a[i] b[i]
 * of 8 uint8 a and int16 b, pairs (i, i + 4) summed exactly, lane by lane. */
typedef float32x4_t vkm;
LINATTN_INLINE vkm vkm_zero(void) { return vdupq_n_f32(0.0f); }
LINATTN_INLINE vkm vkm_fma(vkm acc, const uint8_t *a, const int16_t *b, float s)
{
    int16x8_t a16 = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(a))), b16 = vld1q_s16(b);
    int32x4_t p = vmull_s16(vget_low_s16(a16), vget_low_s16(b16));
    p = vmlal_s16(p, vget_high_s16(a16), vget_high_s16(b16));
    return vfmaq_n_f32(acc, vcvtq_f32_s32(p), s);
}
LINATTN_INLINE float vkm_sum(vkm v) { return vaddvq_f32(v); }
LINATTN_INLINE vf vk_fma(vk s, float d, vf acc) { return vfma(vcvtq_f32_s32(s), vset1(d), acc); }

/* gemm_quant_xq's integer tiles (simd/body/quant_gemm_body.h): vi holds 4
 * int32 lanes, each the dot product of 4 signed weight bytes (one column)
 * with 4 activation bytes broadcast to every lane (VQ_SIGNED: the body
 * packs the weights as their signed values). sdot with dotprod; without
 * it vmull_s8 and two pairwise adds. */
typedef int32x4_t vi;
#define VQ_SIGNED 1
#define QUANT_MR 8 /* rows a tile: 8 integer and 8 fp32 sums, 4 weight vectors, scales */
LINATTN_INLINE vi vi_load(const uint8_t *p) { return vreinterpretq_s32_u8(vld1q_u8(p)); }
LINATTN_INLINE vi vi_set1(int32_t a) { return vdupq_n_s32(a); }
LINATTN_INLINE vf vi_tof(vi a) { return vcvtq_f32_s32(a); }
LINATTN_INLINE vi vi_add(vi a, vi b) { return vaddq_s32(a, b); }
LINATTN_INLINE vi vi_dot4(vi acc, vi w, const int8_t *a)
{
    int32_t a4;
    memcpy(&a4, a, 4);
    int8x16_t b = vreinterpretq_s8_s32(vdupq_n_s32(a4)), ws = vreinterpretq_s8_s32(w);
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, ws, b);
#else
    int16x8_t lo = vmull_s8(vget_low_s8(ws), vget_low_s8(b));
    int16x8_t hi = vmull_s8(vget_high_s8(ws), vget_high_s8(b));
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
#endif
}

#endif
