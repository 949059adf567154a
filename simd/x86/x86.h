/* x86.h: helpers every x86 kernel file shares (AVX2 instructions: the AVX-512 files use them too). */
#ifndef LINATTN_SIMD_X86_H
#define LINATTN_SIMD_X86_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LINATTN_INLINE static inline __attribute__((always_inline))

/* Lanes 0..r-1 set (r in 0..8): masked loads of a tail never touch memory
 * past the end, and masked stores never write it. */
LINATTN_INLINE __m256i avx2_tail_mask(size_t r)
{
    static const int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(const void *)(bits + 8 - r));
}

/* The first n (0..8) halfs of p in the low lanes, 0 past them; nothing
 * past p + n is read (for the tails of half and bfloat16 rows). */
LINATTN_INLINE __m128i x86_load_halfs_n(const uint16_t *p, size_t n)
{
    uint16_t t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n; i++)
        t[i] = p[i];
    return _mm_loadu_si128((const __m128i *)(const void *)t);
}

/* The first n (0..8) halfs of h to p; nothing past p + n is written. */
LINATTN_INLINE void x86_store_halfs_n(uint16_t *p, __m128i h, size_t n)
{
    uint16_t t[8];
    _mm_storeu_si128((__m128i *)(void *)t, h);
    for (size_t i = 0; i < n; i++)
        p[i] = t[i];
}

LINATTN_INLINE float avx2_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* {hsum(a), hsum(b), hsum(c), hsum(d)} */
LINATTN_INLINE __m128 avx2_hsum4(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 ab = _mm256_hadd_ps(a, b);
    __m256 cd = _mm256_hadd_ps(c, d);
    __m256 abcd = _mm256_hadd_ps(ab, cd);
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

/* In-register 8x8 transpose of r[0..7]. */
LINATTN_INLINE void avx2_transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* dst[q * ldd + j] = src[j * lds + q] for q < w and j < 8, rows j >= h of
 * src read as 0 (w, h <= 8): an 8x8 block of the gemm's B packing,
 * transposed in registers; a row is masked past w, so nothing past the end
 * is read. dst is 32-byte aligned. */
LINATTN_INLINE void avx2_transpose_block(float *dst, size_t ldd, const float *src, size_t lds,
                                         size_t h, size_t w)
{
    __m256i m = avx2_tail_mask(w);
    __m256 r[8];
    for (size_t j = 0; j < 8; j++) {
        if (j >= h)
            r[j] = _mm256_setzero_ps();
        else
            r[j] = w == 8 ? _mm256_loadu_ps(src + j * lds) : _mm256_maskload_ps(src + j * lds, m);
    }
    avx2_transpose8(r);
    for (size_t q = 0; q < w; q++)
        _mm256_store_ps(dst + q * ldd, r[q]);
}

/* The half at p (unaligned) as a float: F16C's vcvtph2ps, exact. */
LINATTN_INLINE float x86_half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* Block-quantized dot products in 256 bits (AVX2; the AVX-512 vocabulary
 * widens them), for vec_avx2.h and vec_avx512.h. */
/* 4-bit values dotted with 32 int8 x, as 8 int32 sums (lanes 0-3: elements
 * 0..15, 4-7: 16..31): x86_nib32 the low (shift 0) or high (shift 4)
 * nibbles of p[0..32) (a K-quant's sub-block), x86_nib16 the low then the
 * high nibbles of p[0..16) (Q4_0, Q4_1). The values are 0..15, unsigned:
 * vpmaddubsw takes them as they are. */
/* Unsigned bytes u by signed bytes b, each 4 summed in int32 (lane i:
 * bytes 4i..4i+3): one vpdpbusd with a VNNI capability, vpmaddubsw then
 * vpmaddwd without. The same exact sums either way: the int16 pairs of
 * vpmaddubsw never saturate on the callers' ranges (u <= 128, |b| <= 127). */
LINATTN_INLINE __m256i x86_dot_u8i8_acc(__m256i acc, __m256i u, __m256i b)
{
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, b);
#elif defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, u, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, b), _mm256_set1_epi16(1)));
#endif
}
LINATTN_INLINE __m256i x86_dot_u8i8(__m256i u, __m256i b)
{
    return x86_dot_u8i8_acc(_mm256_setzero_si256(), u, b);
}
/* acc + the pair sums of u (unsigned bytes) by x's 32 signed bytes
 * (vpmaddubsw, exact on the callers' ranges) times the int16 scales sc,
 * pairs of pairs summed (vpmaddwd; with VNNI vpdpwssd, which adds into
 * acc in the same step). 8 exact int32 lanes, lane i: bytes 4i..4i+3. */
LINATTN_INLINE __m256i x86_dot_scaled_acc(__m256i acc, __m256i u, __m256i b, __m256i sc)
{
    __m256i p = _mm256_maddubs_epi16(u, b);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(acc, p, sc);
#elif defined(__AVXVNNI__)
    return _mm256_dpwssd_avx_epi32(acc, p, sc);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
#endif
}
/* q . x plus c (in lane 0: an integer offset folded into the sum). */
LINATTN_INLINE __m256i x86_nib_dot(__m256i q, const int8_t *x, int32_t c)
{
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)x);
    return x86_dot_u8i8_acc(_mm256_zextsi128_si256(_mm_cvtsi32_si128(c)), q, b);
}
LINATTN_INLINE __m256i x86_nib32(const uint8_t *p, int shift)
{
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8(0x0F));
}
LINATTN_INLINE __m256i x86_nib16(const uint8_t *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m256i w = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
    return _mm256_and_si256(w, _mm256_set1_epi8(0x0F));
}
/* 32 values of a K-quant sub-block (simd/quants.h): the nibbles of
 * ql[0..32) (low, shift 0, or high, shift 4) with the bits of qh[0..32)
 * from bit hshift on, masked by hmask, above them (Q5_K: one bit, Q6_K:
 * two; no carry across bytes: the shifts are masked after). */
LINATTN_INLINE __m256i x86_q_values(const uint8_t *ql, int shift, const uint8_t *qh, int hshift,
                                    int hmask)
{
    __m256i lo = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(const void *)ql), shift),
                                  _mm256_set1_epi8(0x0F));
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(const void *)qh), hshift),
                                  _mm256_set1_epi8((char)hmask));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
}
/* Q5_0 and Q5_1's 32 values: the nibbles of p[0..16) (low then high) with
 * bit i of qh as element i's fifth bit (each byte of the bits spread to 8
 * bytes, then tested against its own bit). */
LINATTN_INLINE __m256i x86_q5_values(const uint8_t *p, uint32_t qh)
{
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread);
    __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(b, bit), bit);
    return _mm256_or_si256(x86_nib16(p), _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
}
/* The int8 a and 32 int8 x: |a| times x with a's sign (vpmaddubsw:
 * unsigned by signed, pairs in int16, at most 2 * 128 * 127), pairs then
 * summed in int32. x must not hold -128 (the quantizer gives -127..127);
 * a may. */
LINATTN_INLINE __m256i x86_i8_dot(__m256i a, const int8_t *x)
{
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)x);
    return x86_dot_u8i8(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

/* The K-quants' sub-block steps of the vocabulary (simd/body/quant_body.h),
 * the same in AVX2 and AVX-512: a super-block's integer sum vk, plus the 32
 * values times x's 32 int8 (Q8_K) times the sub-block's integer scale
 * (Q6_K: one per 16, of the 8 at s8 those of its quarter k: 2k for elements
 * 0..15 in lanes 0-3, 2k+1 for 16..31 in lanes 4-7; the others: scale i of
 * the 8 at sc8); vk_zero starts one,
 * the vocabulary's vk_fma ends it. */
typedef __m256i vk;
LINATTN_INLINE vk vk_zero(void) { return _mm256_setzero_si256(); }
/* Scale i of the 8 at sc8 (uint8) as int16 in every lane: the 8 widened
 * and in both halves (the same for every i: the compiler keeps one), then
 * one shuffle. */
LINATTN_INLINE __m256i x86_k_scale(const uint8_t *sc8, int i)
{
    static const int8_t pick[8][32] = {
#define LINATTN_PICK(i) {2 * i, 2 * i + 1, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1, \
                         2 * i, 2 * i + 1, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1, \
                         2 * i, 2 * i + 1, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1, \
                         2 * i, 2 * i + 1, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1, 2 * i, 2 * i + 1}
        LINATTN_PICK(0), LINATTN_PICK(1), LINATTN_PICK(2), LINATTN_PICK(3),
        LINATTN_PICK(4), LINATTN_PICK(5), LINATTN_PICK(6), LINATTN_PICK(7),
#undef LINATTN_PICK
    };
    __m256i all = _mm256_broadcastsi128_si256(
        _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)sc8)));
    return _mm256_shuffle_epi8(all, _mm256_loadu_si256((const __m256i *)(const void *)pick[i]));
}
LINATTN_INLINE vk vk_nib32(vk acc, const uint8_t *p, int shift, const int8_t *x,
                           const uint8_t *sc8, int i)
{
    return x86_dot_scaled_acc(acc, x86_nib32(p, shift),
                              _mm256_loadu_si256((const __m256i *)(const void *)x),
                              x86_k_scale(sc8, i));
}
LINATTN_INLINE vk vk_q5k32(vk acc, const uint8_t *ql, int shift, const uint8_t *qh,
                         int j, const int8_t *x, const uint8_t *sc8)
{
    return x86_dot_scaled_acc(acc, x86_q_values(ql, shift, qh, j, 1),
                              _mm256_loadu_si256((const __m256i *)(const void *)x),
                              x86_k_scale(sc8, j));
}
/* The 4 int32 lanes of v summed (exact: the callers' sums fit). */
LINATTN_INLINE int32_t x86_hsum_i32x4(__m128i v)
{
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
    return _mm_cvtsi128_si32(v);
}
/* linattn_quant_k4_scales in one vector: the 12 scale bytes of a Q4_K or
 * Q5_K super-block at s (16 read: the nibbles follow them) as its 8 scales
 * then its 8 mins, 6 bits each, into sm[16]. One 16-byte store, which the
 * steps' 8-byte loads of either half take from the store buffer: the C
 * unpacking's four words through the stack stalled each super-block. */
#define VK_K4_SCALES 1
LINATTN_INLINE void vk_k4_scales(const uint8_t *s, uint8_t sm[16])
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    /* words (u0, u2, u1, u2): low 6 bits of u0 and u1, low and high
     * nibbles of u2 */
    __m128i a = _mm_shuffle_epi32(v, 0x98);
    a = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                      _mm_setr_epi32(0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F));
    /* words (u0, u0, u1, u1): their top 2 bits as bits 4-5 of words 1, 3 */
    __m128i b = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(v, 0x50), 2),
                              _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    _mm_storeu_si128((__m128i *)(void *)sm, _mm_or_si128(a, b));
}
/* A K-quant row's offsets (a super-block's mins against x's sums), in
 * four fp32 lanes summed once a row: vkm_fma adds s times the products
 * a[i] b[i] of 8 uint8 a and int16 b, pairs (i, i + 4) summed exactly
 * (vpmaddwd), lane by lane; vkm_sum ends it. No horizontal sum and no
 * trip through a general register each super-block. */
typedef __m128 vkm;
LINATTN_INLINE vkm vkm_zero(void) { return _mm_setzero_ps(); }
LINATTN_INLINE vkm vkm_fma(vkm acc, const uint8_t *a, const int16_t *b, float s)
{
    __m128i a16 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)a));
    __m128i p = _mm_madd_epi16(a16, _mm_loadu_si128((const __m128i *)(const void *)b));
    return _mm_fmadd_ps(_mm_cvtepi32_ps(p), _mm_set1_ps(s), acc);
}
/* the same for 16 int8 a (Q6_K's scales against x's sums per 16) */
LINATTN_INLINE vkm vkm_fma16_i8(vkm acc, const int8_t *a, const int16_t *b, float s)
{
    __m128i a8 = _mm_loadu_si128((const __m128i *)(const void *)a);
    __m128i p = _mm_madd_epi16(_mm_cvtepi8_epi16(a8), _mm_loadu_si128((const __m128i *)(const void *)b));
    p = _mm_add_epi32(p, _mm_madd_epi16(_mm_cvtepi8_epi16(_mm_unpackhi_epi64(a8, a8)),
                                        _mm_loadu_si128((const __m128i *)(const void *)(b + 8))));
    return _mm_fmadd_ps(_mm_cvtepi32_ps(p), _mm_set1_ps(s), acc);
}
LINATTN_INLINE float vkm_sum(vkm v)
{
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}
LINATTN_INLINE vk vk_q6x32(vk acc, const uint8_t *ql, int shift, const uint8_t *qh,
                         int k, const int8_t *x, const int8_t *s8)
{
    /* scales 2k and 2k+1 of the 8 at s8 as int16, one per 128-bit half:
     * the 8 widened and in both halves, then one shuffle picks them */
    static const int8_t pick[4][32] = {
        {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3},
        {4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7},
        {8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9,
         10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11},
        {12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13,
         14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15},
    };
    __m256i all = _mm256_broadcastsi128_si256(
        _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)s8)));
    __m256i sc = _mm256_shuffle_epi8(all, _mm256_loadu_si256((const __m256i *)(const void *)pick[k]));
    /* the values as stored, 0..63 (unsigned, as vpmaddubsw takes them): 32
     * too many of each, which VK_Q6_OFFSET tells the body to take away */
    __m256i u = x86_q_values(ql, shift, qh, 2 * k, 3);
    return x86_dot_scaled_acc(acc, u, _mm256_loadu_si256((const __m256i *)(const void *)x), sc);
}
/* vk_q6x32 sums the stored values (q + 32): the body subtracts 32 times
 * the scales' sums of x. */
#define VK_Q6_OFFSET 32

#endif
