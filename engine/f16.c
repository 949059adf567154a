/* f16.c: exact half-precision and bfloat16 to fp32 conversion. */
#include <string.h>

#include "f16.h"

static float from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float linattn_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0x1f) /* inf, or NaN with its payload kept */
        return from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) /* normal: rebias 15 -> 127 */
        return from_bits(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0)
        return from_bits(sign);
    /* Subnormal mant * 2^-24: shift the leading 1 into the implicit bit;
     * every such value is a normal fp32. */
    int e = -1;
    do {
        mant <<= 1;
        e++;
    } while (!(mant & 0x400u));
    return from_bits(sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13));
}

float linattn_bf16_to_f32(uint16_t h)
{
    return from_bits((uint32_t)h << 16);
}
