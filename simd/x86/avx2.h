/* avx2.h: inline helpers shared by the AVX2 files, and the gemm entry points. */
#ifndef LINATTN_SIMD_X86_AVX2_H
#define LINATTN_SIMD_X86_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define LINATTN_INLINE static inline __attribute__((always_inline))

/* Lanes 0..r-1 set (r in 0..8): masked loads of a tail never touch memory
 * past the end, and masked stores never write it. */
LINATTN_INLINE __m256i avx2_tail_mask(size_t r)
{
    static const int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(const void *)(bits + 8 - r));
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

#endif
