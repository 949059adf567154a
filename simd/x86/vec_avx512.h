/* vec_avx512.h: the vector vocabulary of the shared kernel bodies (simd/body/) in AVX-512 F/BW/DQ/VL (16 lanes). */
#ifndef LINATTN_SIMD_VEC_H
#define LINATTN_SIMD_VEC_H


#include "x86.h"

#define VL 16                             /* floats per vector */
#define VREGS 32                          /* vector registers */
#if defined(__AVX512VNNI__) /* the capability's own files: the dot-product kernels alone */
#define FN(name) linattn_##name##_avx512vnni
#else
#define FN(name) linattn_##name##_avx512 /* the kernel names of this ISA */
#endif
#define GEMM_MR 12                        /* rows of a gemm micro-tile: 24 + 3 of 32 registers */

typedef __m512 vf;
typedef __mmask16 vmask;

LINATTN_INLINE vmask vmask_n(size_t n) { return (vmask)((1u << n) - 1u); } /* n <= VL */
LINATTN_INLINE vf vzero(void) { return _mm512_setzero_ps(); }
LINATTN_INLINE vf vset1(float a) { return _mm512_set1_ps(a); }
LINATTN_INLINE vf vbcast(const float *p) { return _mm512_set1_ps(*p); }
LINATTN_INLINE vf vload(const float *p) { return _mm512_loadu_ps(p); }
LINATTN_INLINE vf vload_m(const float *p, vmask m) { return _mm512_maskz_loadu_ps(m, p); }
/* VL halfs or bfloat16s at p as floats, exactly (see vec_avx2.h); the _m
 * forms by masked 16-bit loads (AVX512BW), 0 past the mask. */
LINATTN_INLINE vf vload_f16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
}
LINATTN_INLINE vf vload_bf16(const uint16_t *p)
{
    __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
LINATTN_INLINE vf vload_f16_m(const uint16_t *p, vmask m)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
LINATTN_INLINE vf vload_bf16_m(const uint16_t *p, vmask m)
{
    __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
LINATTN_INLINE void vstore(float *p, vf v) { _mm512_storeu_ps(p, v); }
LINATTN_INLINE void vstore_m(float *p, vf v, vmask m) { _mm512_mask_storeu_ps(p, m, v); }
/* VL int8s at p as floats (exact). */
LINATTN_INLINE vf vload_i8(const int8_t *p)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)));
}
/* VL integral floats of -127..127 as int8s at p (exact). */
LINATTN_INLINE void vstore_i8(int8_t *p, vf v)
{
    _mm_storeu_si128((__m128i *)(void *)p, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
}
/* v as VL halfs at p, rounded to nearest even (see vec_avx2.h); the _m
 * form by a masked 16-bit store (AVX512BW). */
LINATTN_INLINE void vstore_f16(uint16_t *p, vf v)
{
    _mm256_storeu_si256((__m256i *)(void *)p, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
LINATTN_INLINE void vstore_f16_m(uint16_t *p, vf v, vmask m)
{
    _mm256_mask_storeu_epi16(p, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
/* v, kept in a register: a vector several FMAs read is loaded once
 * (else the compiler may fold the load into each of them) */
LINATTN_INLINE vf vpin(vf v)
{
    __asm__("" : "+v"(v));
    return v;
}
LINATTN_INLINE vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
LINATTN_INLINE vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
LINATTN_INLINE vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
LINATTN_INLINE vf vdiv(vf a, vf b) { return _mm512_div_ps(a, b); }
LINATTN_INLINE vf vmin(vf a, vf b) { return _mm512_min_ps(a, b); }
/* b where either is NaN: max(x, acc) keeps acc when x is NaN */
LINATTN_INLINE vf vmax(vf a, vf b) { return _mm512_max_ps(a, b); }
LINATTN_INLINE vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); } /* a b + c */
LINATTN_INLINE vf vkeep(vf v, vmask m) { return _mm512_maskz_mov_ps(m, v); }
LINATTN_INLINE vf vblend(vf a, vf b, vmask m) { return _mm512_mask_blend_ps(m, a, b); }
LINATTN_INLINE vf vpos_sel(vf x, vf a, vf b)
{
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), b, a);
}
/* The halves through the AVX2 reductions, so sums add in the same tree. */
LINATTN_INLINE float vhsum(vf v)
{
    return avx2_hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}
LINATTN_INLINE float vhmax(vf v) { return _mm512_reduce_max_ps(v); }
LINATTN_INLINE void vhsum4_add(float *out, vf a, vf b, vf c, vf d)
{
#define LINATTN_HALF(x) _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1))
    _mm_storeu_ps(out, _mm_add_ps(_mm_loadu_ps(out), avx2_hsum4(LINATTN_HALF(a), LINATTN_HALF(b),
                                                                  LINATTN_HALF(c), LINATTN_HALF(d))));
#undef LINATTN_HALF
}
#include "../body/exp_body.h"
/* exp(x), ours (../body/exp_body.h): see vec_avx2.h. vscalefps is p 2^n
 * rounded once, subnormal and overflowing results included, and needs no
 * assist for them (a 2^32 sweep: no slower below -104). */
LINATTN_INLINE vf vexp(vf x)
{
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(89.0f), x));
    vf n, p = vexp_reduced(x, &n);
    return _mm512_scalef_ps(p, n);
}
/* exp(min(x, 0)) (vec_avx2.h's): vexp, whose scalef is one instruction
 * already; min gives x where x is NaN. */
LINATTN_INLINE vf vexp_nonpos(vf x) { return vexp(_mm512_min_ps(_mm512_setzero_ps(), x)); }
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
/* The dot product of 32 int8 pairs as VL floats that sum to it: AVX2's
 * (vec_avx2.h) in the low 8 lanes, zeros above. */
LINATTN_INLINE vf vdot_i8x32(const int8_t *w, const int8_t *x)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)w);
    return _mm512_zextps256_ps512(_mm256_cvtepi32_ps(x86_i8_dot(a, x)));
}
LINATTN_INLINE vf vdot_nib16(const uint8_t *p, const int8_t *x, int32_t c)
{
    return _mm512_zextps256_ps512(_mm256_cvtepi32_ps(x86_nib_dot(x86_nib16(p), x, c)));
}
LINATTN_INLINE vf vdot_q5x32(const uint8_t *p, uint32_t qh, const int8_t *x, int32_t c)
{
    return _mm512_zextps256_ps512(_mm256_cvtepi32_ps(x86_nib_dot(x86_q5_values(p, qh), x, c)));
}
/* acc + h0 dx[0] (the nibbles of p0 . x[0..32) + c[0..8)'s sum) + h1 dx[1]
 * (p1's . x[32..64) + c[8..16)'s), h0 and h1 halves: two Q4_0 or Q4_1
 * blocks in one 512-bit dot product, block 0 in lanes 0-7 (as vdot_nib16
 * gives it), block 1 in 8-15; the two scales (each h dx rounded once)
 * multiplied side by side and spread to their lanes. */
LINATTN_INLINE vf vdot_nib16x2_fma(vf acc, const uint8_t *p0, const uint8_t *p1, const uint8_t *h0,
                                   const uint8_t *h1, const int8_t *x, const int32_t *c,
                                   const float *dx)
{
    /* 128-bit lanes p0, p0, p1, p1 by two broadcast loads (no shuffle),
     * the second and fourth shifted: x's order, nibbles low then high */
    __m512i w = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)p0));
    w = _mm512_mask_broadcast_i32x4(w, 0xFF00, _mm_loadu_si128((const __m128i *)(const void *)p1));
    w = _mm512_mask_srli_epi16(w, 0xFF00FF00u, w, 4);
    w = _mm512_and_si512(w, _mm512_set1_epi8(0x0F));
    __m512i b = _mm512_loadu_si512((const void *)x), s = _mm512_loadu_si512((const void *)c);
#if defined(__AVX512VNNI__)
    s = _mm512_dpbusd_epi32(s, w, b);
#else
    s = _mm512_add_epi32(s, _mm512_madd_epi16(_mm512_maddubs_epi16(w, b), _mm512_set1_epi16(1)));
#endif
    uint16_t a, b2;
    memcpy(&a, h0, 2);
    memcpy(&b2, h1, 2);
    __m128 d = _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)a | (uint32_t)b2 << 16)));
    d = _mm_mul_ps(d, _mm_castpd_ps(_mm_load_sd((const double *)(const void *)dx)));
    vf sc = _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
                                  _mm512_castps128_ps512(d));
    return vfma(_mm512_cvtepi32_ps(s), sc, acc);
}
/* A K-quant super-block's integer sum (vk, x86.h) scaled once into fp32,
 * in the low 8 lanes. */
LINATTN_INLINE vf vk_fma(vk s, float d, vf acc)
{
    return vfma(_mm512_zextps256_ps512(_mm256_cvtepi32_ps(s)), vset1(d), acc);
}

/* The K-quants' sub-blocks two at a time (quant_body.h's vk2 steps): 64
 * values in one 512-bit vector, the first sub-block's sums in the low 8
 * int32 lanes and the second's in the high 8, each lane as vk_nib32 and
 * the others give it. vk2_fma adds the halves in integers first, so each
 * of the 8 lanes holds the very sum the 256-bit steps give: the same bits. */
#define VK_PAIRS 1
typedef __m512i vk2;
LINATTN_INLINE vk2 vk2_zero(void) { return _mm512_setzero_si512(); }
/* acc + the pair sums of u by x's 64 bytes times the int16 scales sc
 * (x86_dot_scaled_acc in 512 bits) */
LINATTN_INLINE vk2 x86_dot_scaled_acc512(vk2 acc, __m512i u, const int8_t *x, __m512i sc)
{
    __m512i p = _mm512_maddubs_epi16(u, _mm512_loadu_si512((const void *)x));
#if defined(__AVX512VNNI__)
    return _mm512_dpwssd_epi32(acc, p, sc);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, sc));
#endif
}
/* The 8 scales at sc8 (uint8, or int8 when is_signed) as int16, word w of
 * the result scale pick[w / 8] ... as the caller's index vector says. */
LINATTN_INLINE __m512i x86_scales512(const uint8_t *sc8, int is_signed, __m512i idx)
{
    __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)sc8);
    __m128i w = is_signed ? _mm_cvtepi8_epi16(b) : _mm_cvtepu8_epi16(b);
    return _mm512_permutexvar_epi16(idx, _mm512_castsi128_si512(w));
}
/* 32 bytes at p in both halves, the high half's shifted right by 4 more */
LINATTN_INLINE __m512i x86_both_halves(const uint8_t *p, int shift, int more)
{
    __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)p));
    v = _mm512_srli_epi16(v, (unsigned)shift);
    return _mm512_mask_srli_epi16(v, 0xFFFF0000u, v, (unsigned)more);
}
/* Q4_K: sub-blocks 2c (low nibbles of p[0..32)) and 2c+1 (high) */
LINATTN_INLINE vk2 vk2_nib64(vk2 acc, const uint8_t *p, const int8_t *x, const uint8_t *sc8, int c)
{
    __m512i u = _mm512_and_si512(x86_both_halves(p, 0, 4), _mm512_set1_epi8(0x0F));
    __m512i idx = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16((short)(2 * c)),
                                          _mm512_set1_epi16((short)(2 * c + 1)));
    return x86_dot_scaled_acc512(acc, u, x, x86_scales512(sc8, 0, idx));
}
/* Q5_K: the same with qh's bits 2c and 2c+1 as the fifth bits */
LINATTN_INLINE vk2 vk2_q5k64(vk2 acc, const uint8_t *ql, const uint8_t *qh, int c, const int8_t *x,
                             const uint8_t *sc8)
{
    __m512i lo = _mm512_and_si512(x86_both_halves(ql, 0, 4), _mm512_set1_epi8(0x0F));
    __m512i hi = _mm512_and_si512(x86_both_halves(qh, 2 * c, 1), _mm512_set1_epi8(1));
    __m512i u = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
    __m512i idx = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16((short)(2 * c)),
                                          _mm512_set1_epi16((short)(2 * c + 1)));
    return x86_dot_scaled_acc512(acc, u, x, x86_scales512(sc8, 0, idx));
}
/* Q6_K: quarters 2kk and 2kk+1 of a half (vk_q6x32's k): ql[0..64) by
 * 4 kk, qh's bits 4 kk (the first) and 4 kk + 2 (the second), the scales
 * 4 kk .. 4 kk + 3 of the 8 at s8, one per 16 values */
LINATTN_INLINE vk2 vk2_q6x64(vk2 acc, const uint8_t *ql, int kk, const uint8_t *qh, const int8_t *x,
                             const int8_t *s8)
{
    __m512i lo = _mm512_and_si512(_mm512_srli_epi16(_mm512_loadu_si512((const void *)ql), (unsigned)(4 * kk)),
                                  _mm512_set1_epi8(0x0F));
    __m512i hi = _mm512_and_si512(x86_both_halves(qh, 4 * kk, 2), _mm512_set1_epi8(3));
    __m512i u = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
    const short k4 = (short)(4 * kk);
    __m512i idx = _mm512_set_epi16(k4 + 3, k4 + 3, k4 + 3, k4 + 3, k4 + 3, k4 + 3, k4 + 3, k4 + 3,
                                   k4 + 2, k4 + 2, k4 + 2, k4 + 2, k4 + 2, k4 + 2, k4 + 2, k4 + 2,
                                   k4 + 1, k4 + 1, k4 + 1, k4 + 1, k4 + 1, k4 + 1, k4 + 1, k4 + 1,
                                   k4, k4, k4, k4, k4, k4, k4, k4);
    return x86_dot_scaled_acc512(acc, u, x, x86_scales512((const uint8_t *)(const void *)s8, 1, idx));
}
LINATTN_INLINE vf vk2_fma(vk2 s, float d, vf acc)
{
    return vk_fma(_mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1)), d, acc);
}

/* gemm_quant_xq's integer tiles (see vec_avx2.h), 16 columns a vector:
 * vpdpbusd with VNNI (weights unsigned); without it vpmaddubsw on |w| and a
 * negated where w < 0 (AVX512BW has no vpsignb), then vpmaddwd. */
typedef __m512i vi;
#if defined(__AVX512VNNI__)
#define VQ_SIGNED 0
#else
#define VQ_SIGNED 1
#endif
#define QUANT_MR 12 /* rows a tile: 12 integer and 12 fp32 sums, 4 weight vectors, scales */
LINATTN_INLINE vi vi_load(const uint8_t *p) { return _mm512_load_si512((const void *)p); }
LINATTN_INLINE vi vi_set1(int32_t a) { return _mm512_set1_epi32(a); }
LINATTN_INLINE vf vi_tof(vi a) { return _mm512_cvtepi32_ps(a); }
LINATTN_INLINE vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
LINATTN_INLINE vi vi_dot4(vi acc, vi w, const int8_t *a)
{
    int32_t a4;
    memcpy(&a4, a, 4);
    __m512i b = _mm512_set1_epi32(a4);
#if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(acc, w, b);
#else
    __mmask64 neg = _mm512_movepi8_mask(w);
    __m512i sb = _mm512_mask_sub_epi8(b, neg, _mm512_setzero_si512(), b);
    __m512i p = _mm512_maddubs_epi16(_mm512_abs_epi8(w), sb);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
#endif
}

#endif
