/* f16.h: half-precision (IEEE binary16) and bfloat16 to and from fp32: the scalar kernels' reference conversion. */
#ifndef LINATTN_SIMD_F16_H
#define LINATTN_SIMD_F16_H

#include <stdint.h>

/* Every binary16 value, subnormals, infinities and NaN payloads included. */
float linattn_f16_to_f32(uint16_t h);
/* bfloat16 is the top half of an fp32. */
float linattn_bf16_to_f32(uint16_t h);
/* Rounded to nearest, ties to even; overflow gives infinity, NaN stays NaN
 * (quiet). For writing F16/BF16 files of a model (tests, the bench). */
uint16_t linattn_f32_to_f16(float f);
uint16_t linattn_f32_to_bf16(float f);

#endif
