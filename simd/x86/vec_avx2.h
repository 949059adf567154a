/* vec_avx2.h: the vector vocabulary of the shared kernel bodies (simd/body/) in AVX2+FMA (8 lanes). */
#ifndef LINATTN_SIMD_VEC_H
#define LINATTN_SIMD_VEC_H

#include "x86.h"

#define VL 8                             /* floats per vector */
#define VREGS 16                         /* vector registers */
#if defined(__AVXVNNI__) /* the capability's own files: the dot-product kernels alone */
#define FN(name) linattn_##name##_avx2vnni
#else
#define FN(name) linattn_##name##_avx2 /* the kernel names of this ISA */
#endif
#define GEMM_MR 6                        /* rows of a gemm micro-tile: 12 + 3 of 16 registers */

typedef __m256 vf;
typedef __m256i vmask;

LINATTN_INLINE vmask vmask_n(size_t n) { return avx2_tail_mask(n); } /* lanes 0..n-1, n <= VL */
LINATTN_INLINE vf vzero(void) { return _mm256_setzero_ps(); }
LINATTN_INLINE vf vset1(float a) { return _mm256_set1_ps(a); }
LINATTN_INLINE vf vbcast(const float *p) { return _mm256_broadcast_ss(p); }
LINATTN_INLINE vf vload(const float *p) { return _mm256_loadu_ps(p); }
LINATTN_INLINE vf vload_m(const float *p, vmask m) { return _mm256_maskload_ps(p, m); }
/* VL halfs (IEEE binary16) or bfloat16s at p as floats: exact (F16C
 * vcvtph2ps; bfloat16 is the top half of an fp32). The _m forms read only
 * the lanes of m and give 0 past them. */
LINATTN_INLINE vf vload_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}
LINATTN_INLINE vf vload_bf16(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
LINATTN_INLINE size_t avx2_mask_lanes(vmask m)
{
    return (size_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)));
}
LINATTN_INLINE vf vload_f16_m(const uint16_t *p, vmask m)
{
    return _mm256_cvtph_ps(x86_load_halfs_n(p, avx2_mask_lanes(m)));
}
LINATTN_INLINE vf vload_bf16_m(const uint16_t *p, vmask m)
{
    __m256i w = _mm256_cvtepu16_epi32(x86_load_halfs_n(p, avx2_mask_lanes(m)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
LINATTN_INLINE void vstore(float *p, vf v) { _mm256_storeu_ps(p, v); }
LINATTN_INLINE void vstore_m(float *p, vf v, vmask m) { _mm256_maskstore_ps(p, m, v); }
/* VL int8s at p as floats (exact). */
LINATTN_INLINE vf vload_i8(const int8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)));
}
/* VL integral floats of -127..127 as int8s at p (exact). */
LINATTN_INLINE void vstore_i8(int8_t *p, vf v)
{
    __m256i i = _mm256_cvtps_epi32(v);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
    _mm_storel_epi64((__m128i *)(void *)p, _mm_packs_epi16(w, w));
}
/* v as VL halfs at p, rounded to nearest even (F16C vcvtps2ph; overflow
 * gives infinity, NaN stays NaN); the _m form writes the lanes of m only. */
LINATTN_INLINE void vstore_f16(uint16_t *p, vf v)
{
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
LINATTN_INLINE void vstore_f16_m(uint16_t *p, vf v, vmask m)
{
    x86_store_halfs_n(p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT), avx2_mask_lanes(m));
}
/* v, kept in a register: a vector several FMAs read is loaded once
 * (else the compiler may fold the load into each of them) */
LINATTN_INLINE vf vpin(vf v)
{
    __asm__("" : "+x"(v));
    return v;
}
LINATTN_INLINE vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
LINATTN_INLINE vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
LINATTN_INLINE vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
LINATTN_INLINE vf vdiv(vf a, vf b) { return _mm256_div_ps(a, b); }
LINATTN_INLINE vf vmin(vf a, vf b) { return _mm256_min_ps(a, b); }
/* b where either is NaN: max(x, acc) keeps acc when x is NaN */
LINATTN_INLINE vf vmax(vf a, vf b) { return _mm256_max_ps(a, b); }
LINATTN_INLINE vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); } /* a b + c */
/* v on the lanes of m, 0 elsewhere */
LINATTN_INLINE vf vkeep(vf v, vmask m) { return _mm256_and_ps(v, _mm256_castsi256_ps(m)); }
/* b on the lanes of m, a elsewhere */
LINATTN_INLINE vf vblend(vf a, vf b, vmask m) { return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(m)); }
/* x > 0 (ordered) ? a : b */
LINATTN_INLINE vf vpos_sel(vf x, vf a, vf b)
{
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
}
LINATTN_INLINE float vhsum(vf v) { return avx2_hsum(v); }
LINATTN_INLINE float vhmax(vf v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* out[0..3] += {hsum a, hsum b, hsum c, hsum d} */
LINATTN_INLINE void vhsum4_add(float *out, vf a, vf b, vf c, vf d)
{
    _mm_storeu_ps(out, _mm_add_ps(_mm_loadu_ps(out), avx2_hsum4(a, b, c, d)));
}
#include "../body/exp_body.h"
/* exp(x), ours (../body/exp_body.h). x < -104 (and -inf) is computed as 0
 * and cleared after: its result would underflow to 0 in the multiply,
 * which takes a microcode assist (AMD Zen 5: 3x the time a vector; results
 * that are subnormal, x in (-104, -87.3), still take it).
 * min_ps gives its second operand where either is NaN, so x goes second.
 * p 2^n as p 2^(n>>1) 2^(n - (n>>1)): both factors normal for n in
 * [-150, 128], the first product exact, the second rounded once (into the
 * subnormals too). */
LINATTN_INLINE vf vexp(vf x)
{
    const __m256 zero = _mm256_cmp_ps(x, _mm256_set1_ps(-104.0f), _CMP_LT_OQ);
    vf n, p = vexp_reduced(_mm256_andnot_ps(zero, _mm256_min_ps(_mm256_set1_ps(89.0f), x)), &n);
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_andnot_ps(zero, _mm256_mul_ps(_mm256_mul_ps(p, s1), s2));
}
/* exp(min(x, 0)), bit for bit vexp's: where every lane is at least -86
 * (or NaN) the result p 2^n is normal, so one multiply by 2^n rounds as
 * vexp's two do, and 2^n comes from the rounding's own bits (the shifter
 * biased by 127) instead of vexp's clamps, conversion and integer steps:
 * elu + 1 is most of phi, and phi a fifth of the linear prefill
 * (docs/benchmarks.md). Below -86 (and -inf) vexp itself. */
LINATTN_INLINE vf vexp_nonpos(vf x)
{
    x = _mm256_min_ps(_mm256_setzero_ps(), x); /* NaN stays (second operand) */
    const __m256 low = _mm256_cmp_ps(x, _mm256_set1_ps(-86.0f), _CMP_LT_OQ);
    if (__builtin_expect(!_mm256_testz_ps(low, low), 0))
        return vexp(x);
    const vf shifter = vset1(VEXP_SHIFTER + 127.0f);
    const vf t = vfma(x, vset1(0x1.715476p+0f), shifter);
    const vf p = vexp_poly(x, vsub(t, shifter));
    /* t's low bits are n + 127 in [2, 127]: shifted into the exponent */
    return vmul(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23)));
}
/* Fetches the cache line of p into all levels, for a read soon. */
LINATTN_INLINE void vprefetch(const float *p) { _mm_prefetch((const char *)p, _MM_HINT_T0); }
/* pack_bt's blocks: TB x TB, transposed by the AVX2 8x8 shuffles. */
#define TB 8
LINATTN_INLINE void vtranspose_block(float *dst, size_t ldd, const float *src, size_t lds,
                                     size_t h, size_t w)
{
    avx2_transpose_block(dst, ldd, src, lds, h, w);
}

/* The half at p (unaligned) as a float: F16C's vcvtph2ps, exact. */
LINATTN_INLINE float vhalf(const uint8_t *p) { return x86_half(p); }
/* The dot product of 32 int8 pairs as VL floats that sum to it (exact
 * integers): |w| times x with w's sign (vpmaddubsw: unsigned by signed,
 * pairs summed in int16, at most 2 * 128 * 127), then pairs summed in int32.
 * x must not hold -128 (the quantizer gives -127..127); w may. */
LINATTN_INLINE vf vdot_i8x32(const int8_t *w, const int8_t *x)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)w);
    return _mm256_cvtepi32_ps(x86_i8_dot(a, x));
}
LINATTN_INLINE vf vdot_nib16(const uint8_t *p, const int8_t *x, int32_t c)
{
    return _mm256_cvtepi32_ps(x86_nib_dot(x86_nib16(p), x, c));
}
/* Q5_0 and Q5_1's 32 values (0..31, unsigned) dotted with x. */
LINATTN_INLINE vf vdot_q5x32(const uint8_t *p, uint32_t qh, const int8_t *x, int32_t c)
{
    return _mm256_cvtepi32_ps(x86_nib_dot(x86_q5_values(p, qh), x, c));
}
/* acc + h0 dx[0] (the nibbles of p0 . x[0..32) + c[0..8)'s sum) + h1 dx[1]
 * (p1's . x[32..64) + c[8..16)'s), h0 and h1 halves: two Q4_0 or Q4_1
 * blocks, one after the other. */
LINATTN_INLINE vf vdot_nib16x2_fma(vf acc, const uint8_t *p0, const uint8_t *p1, const uint8_t *h0,
                                   const uint8_t *h1, const int8_t *x, const int32_t *c,
                                   const float *dx)
{
    float s0 = vhalf(h0) * dx[0], s1 = vhalf(h1) * dx[1];
    __m256i c0 = _mm256_loadu_si256((const __m256i *)(const void *)c);
    __m256i c1 = _mm256_loadu_si256((const __m256i *)(const void *)(c + 8));
    __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)x);
    __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(x + 32));
    acc = vfma(_mm256_cvtepi32_ps(x86_dot_u8i8_acc(c0, x86_nib16(p0), b0)), vset1(s0), acc);
    return vfma(_mm256_cvtepi32_ps(x86_dot_u8i8_acc(c1, x86_nib16(p1), b1)), vset1(s1), acc);
}
/* A K-quant super-block's integer sum (vk, x86.h) scaled once into fp32. */
LINATTN_INLINE vf vk_fma(vk s, float d, vf acc) { return vfma(_mm256_cvtepi32_ps(s), vset1(d), acc); }

/* gemm_quant_xq's integer tiles (simd/body/quant_gemm_body.h): vi holds VL
 * int32 lanes, each the dot product of 4 weight bytes (one column) with 4
 * activation bytes broadcast to every lane. With VNNI one vpdpbusd takes
 * the weights unsigned, 0..255 (VQ_SIGNED 0: the body packs them with an
 * offset, taken away against the activations' sums); without it the
 * weights are signed and vpmaddubsw takes |w| against a with w's sign
 * (int16 pairs at most 2 * 128 * 127, no saturation), then vpmaddwd. */
typedef __m256i vi;
#if defined(__AVXVNNI__)
#define VQ_SIGNED 0
#else
#define VQ_SIGNED 1
#endif
#define QUANT_MR 4 /* rows a tile: 4 integer and 4 fp32 sums, 4 weight vectors, scales */
LINATTN_INLINE vi vi_load(const uint8_t *p) { return _mm256_load_si256((const __m256i *)(const void *)p); }
LINATTN_INLINE vi vi_set1(int32_t a) { return _mm256_set1_epi32(a); }
LINATTN_INLINE vf vi_tof(vi a) { return _mm256_cvtepi32_ps(a); }
LINATTN_INLINE vi vi_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
LINATTN_INLINE vi vi_dot4(vi acc, vi w, const int8_t *a)
{
    int32_t a4;
    memcpy(&a4, a, 4);
    __m256i b = _mm256_set1_epi32(a4);
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, w, b);
#else
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(b, w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

#endif
