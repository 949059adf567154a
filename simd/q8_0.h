/* q8_0.h: ggml's Q8_0 block (32 int8 and a half scale) and the activation quantizers (Q8_0, Q8_K) every ISA shares. */
#ifndef LINATTN_SIMD_Q8_0_H
#define LINATTN_SIMD_Q8_0_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "f16.h"

/* A Q8_0 block, as GGUF stores it: the half scale d, then 32 int8 q; the
 * values are d q. 34 bytes, no alignment: read the scale with memcpy. */
#define LINATTN_Q8_0_BLOCK 32
#define LINATTN_Q8_0_BYTES 34


/* Activations quantized for an integer dot product with Q8_0 weights, as
 * ggml's quantize_row_q8_0 does on x86 and arm (so that linattn's Q8_0
 * arithmetic is llama.cpp's): per block of 32, d = max|x| / 127, q = x
 * 127 / max|x| rounded to nearest (ties to even, as ggml's SIMD rounding),
 * d kept as a half (the value used in the product). Plain C, the same on every ISA: the
 * kernels then differ only in the order of their fp32 sums. n is a
 * multiple of 32; d[n / 32]. A block with a NaN or an infinity gets d =
 * NaN, so the dot products that read it are NaN, never a silent 0. */
static inline void linattn_q8_0_quantize(int8_t *q, float *d, const float *x, size_t n)
{
    for (size_t b = 0; b < n / LINATTN_Q8_0_BLOCK; b++) {
        const float *xb = x + b * LINATTN_Q8_0_BLOCK;
        float amax = 0.0f;
        int bad = 0;
        for (int i = 0; i < LINATTN_Q8_0_BLOCK; i++) {
            float a = fabsf(xb[i]);
            bad |= !(a <= 3.4028235e38f);
            amax = a > amax ? a : amax;
        }
        /* ggml's SIMD quantizers take 127 / max, not 1 / d (the reference
         * C one does): their values, a q differs by one now and then */
        float s = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (int i = 0; i < LINATTN_Q8_0_BLOCK; i++) {
            /* |x inv| <= 127.0000x: adding and taking away 1.5 * 2^23
             * rounds it to an integer, ties to even, without libm */
            float v = bad ? 0.0f : xb[i] * inv;
            float r = (v + 12582912.0f) - 12582912.0f;
            q[b * LINATTN_Q8_0_BLOCK + i] = (int8_t)(r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r);
        }
        d[b] = bad ? NAN : linattn_f16_to_f32(linattn_f32_to_f16(s));
    }
}

/* Activations quantized for the K-quants' integer dot products, as ggml's
 * quantize_row_q8_K (its C reference, which x86 and arm call): per 256, m
 * = the value of largest magnitude (the first such), s = -127 / m, q =
 * round(s x) (ties to even) at most 127, d = 1 / s in fp32 (not a half),
 * and bs = the sums of each 16 q. One fp32 scale per 256 lets a kernel sum
 * a whole super-block in integers (the sub-blocks' 6-bit scales times
 * their dot products) and scale once, as llama.cpp does. n is a multiple
 * of 256; d[n / 256], bs[n / 16]. A block with a NaN or an infinity gets d
 * = NaN (q = 0); one of zeros d = 0. */
#define LINATTN_Q8_K_BLOCK 256
static inline void linattn_q8_K_quantize(int8_t *q, float *d, int32_t *bs, const float *x,
                                         size_t n)
{
    for (size_t b = 0; b < n / LINATTN_Q8_K_BLOCK; b++) {
        const float *xb = x + b * LINATTN_Q8_K_BLOCK;
        int8_t *qb = q + b * LINATTN_Q8_K_BLOCK;
        float amax = 0.0f, max = 0.0f;
        int bad = 0;
        for (int i = 0; i < LINATTN_Q8_K_BLOCK; i++) {
            float a = fabsf(xb[i]);
            bad |= !(a <= 3.4028235e38f);
            if (a > amax) {
                amax = a;
                max = xb[i];
            }
        }
        float s = bad || amax == 0.0f ? 0.0f : -127.0f / max;
        for (int i = 0; i < LINATTN_Q8_K_BLOCK; i++) {
            float r = (xb[i] * s + 12582912.0f) - 12582912.0f; /* |x s| <= 127 */
            qb[i] = (int8_t)(r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r);
        }
        for (int g = 0; g < LINATTN_Q8_K_BLOCK / 16; g++) {
            int32_t t = 0;
            for (int i = 0; i < 16; i++)
                t += qb[16 * g + i];
            bs[b * (LINATTN_Q8_K_BLOCK / 16) + (size_t)g] = t;
        }
        d[b] = bad ? NAN : s != 0.0f ? 1.0f / s : 0.0f;
    }
}

#endif
