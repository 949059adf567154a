/* f16.c: exact half-precision and bfloat16 to fp32 conversion, and the rounding back; built with no ISA flags. */
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

static uint32_t to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

uint16_t linattn_f32_to_f16(float f)
{
    uint32_t x = to_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN: keep the top of the payload, force quiet */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* rounds to 65520 or more: infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half (or zero) */
        if (ax < 0x33000000u) /* at most 2^-25: rounds to zero (a tie goes to even 0) */
            return sign;
        uint32_t e = ax >> 23, mant = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* value = mant 2^(e-150); half units are 2^-24 */
        uint32_t q = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (q & 1)))
            q++;
        return (uint16_t)(sign | q);
    }
    /* normal: rebias 127 -> 15, round the 13 dropped bits to nearest even
     * (a carry into the exponent is the right result) */
    uint32_t r = ax - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

uint16_t linattn_f32_to_bf16(float f)
{
    uint32_t x = to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
