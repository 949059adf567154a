/* neon.h: inline helpers shared by the NEON files, and the gemm entry points. */
#ifndef LINATTN_SIMD_ARM_NEON_H
#define LINATTN_SIMD_ARM_NEON_H

#include <arm_neon.h>
#include <stddef.h>
#include <string.h>

#define LINATTN_INLINE static inline __attribute__((always_inline))

/* The first r (< 4) floats of p in a vector, zeros past them: tails go
 * through a small copy, so nothing past the end is ever read. */
LINATTN_INLINE float32x4_t neon_load_tail(const float *p, size_t r)
{
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(t, p, r * sizeof(float));
    return vld1q_f32(t);
}

LINATTN_INLINE void neon_store_tail(float *p, float32x4_t v, size_t r)
{
    float t[4];
    vst1q_f32(t, v);
    memcpy(p, t, r * sizeof(float));
}

/* {sum a, sum b, sum c, sum d} */
LINATTN_INLINE float32x4_t neon_hsum4(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d)
{
    return vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d));
}

#endif
