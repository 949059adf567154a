/* f16.h: exact half-precision (IEEE binary16) and bfloat16 to fp32 conversion. */
#ifndef LINATTN_ENGINE_F16_H
#define LINATTN_ENGINE_F16_H

#include <stdint.h>

/* Every binary16 value, subnormals, infinities and NaN payloads included. */
float linattn_f16_to_f32(uint16_t h);
/* bfloat16 is the top half of an fp32. */
float linattn_bf16_to_f32(uint16_t h);

#endif
