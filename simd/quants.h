/* quants.h: ggml's block-quantized weight types (GGUF), each decoded into int8 values with a scale and an offset per 16: the one reading of their layouts. */
#ifndef LINATTN_SIMD_QUANTS_H
#define LINATTN_SIMD_QUANTS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "f16.h"

/* The ggml type numbers (as GGUF stores them) of the types decoded here. */
enum {
    LINATTN_QUANT_Q4_0 = 2,
    LINATTN_QUANT_Q4_1 = 3,
    LINATTN_QUANT_Q5_0 = 6,
    LINATTN_QUANT_Q5_1 = 7,
    LINATTN_QUANT_Q8_0 = 8,
    LINATTN_QUANT_Q4_K = 12,
    LINATTN_QUANT_Q5_K = 13,
    LINATTN_QUANT_Q6_K = 14,
};

/* Elements and bytes of one block of a type; 0 when it is not one of these. */
static inline int linattn_quant_block(int type, size_t *elems, size_t *bytes)
{
    switch (type) {
    case LINATTN_QUANT_Q4_0: *elems = 32, *bytes = 18; return 1;   /* d, 16 bytes of nibbles */
    case LINATTN_QUANT_Q4_1: *elems = 32, *bytes = 20; return 1;   /* d, m, nibbles */
    case LINATTN_QUANT_Q5_0: *elems = 32, *bytes = 22; return 1;   /* d, 4 bytes of 5th bits, nibbles */
    case LINATTN_QUANT_Q5_1: *elems = 32, *bytes = 24; return 1;   /* d, m, 5th bits, nibbles */
    case LINATTN_QUANT_Q8_0: *elems = 32, *bytes = 34; return 1;   /* d, 32 int8 */
    case LINATTN_QUANT_Q4_K: *elems = 256, *bytes = 144; return 1; /* d, dmin, 12 scale bytes, 128 nibble bytes */
    case LINATTN_QUANT_Q5_K: *elems = 256, *bytes = 176; return 1; /* Q4_K's and 32 bytes of 5th bits */
    case LINATTN_QUANT_Q6_K: *elems = 256, *bytes = 210; return 1; /* 128 low nibbles, 64 high pairs, 16 int8 scales, d */
    default: *elems = 0, *bytes = 0; return 0;
    }
}

static inline float linattn_quant_half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return linattn_f16_to_f32(h);
}

/* Q4_K and Q5_K: the 6-bit scale and min of sub-block j (of 8, 32
 * elements each), packed in 12 bytes. */
static inline void linattn_quant_k4_scale(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Whether the kernels quantize the activation for weights of type as
 * Q8_K (the K-quants, as ggml does) rather than as Q8_0. */
static inline int linattn_quant_takes_q8_K(int type)
{
    return type == LINATTN_QUANT_Q4_K || type == LINATTN_QUANT_Q5_K || type == LINATTN_QUANT_Q6_K;
}

/* Whether gemm_quant_xq (a prompt on activations quantized once, integer
 * tiles) takes weights of type: those whose values pack as bytes with one
 * scale (and min) per 32, or two (Q6_K), a fixed offset or none. */
static inline int linattn_quant_xq_takes(int type)
{
    return type == LINATTN_QUANT_Q4_0 || type == LINATTN_QUANT_Q8_0 || type == LINATTN_QUANT_Q4_K ||
           type == LINATTN_QUANT_Q6_K;
}

/* All 8 scales and mins of a Q4_K/Q5_K block's 12 packed bytes at s at
 * once (each as linattn_quant_k4_scale gives it), by 32-bit words. */
static inline void linattn_quant_k4_scales(const uint8_t *s, uint8_t sc[8], uint8_t mn[8])
{
    uint32_t u[3], o[4];
    memcpy(u, s, 12);
    o[0] = u[0] & 0x3F3F3F3Fu;                                           /* sc 0..3 */
    o[1] = (u[2] & 0x0F0F0F0Fu) | (((u[0] >> 6) & 0x03030303u) << 4);  /* sc 4..7 */
    o[2] = u[1] & 0x3F3F3F3Fu;                                           /* mn 0..3 */
    o[3] = ((u[2] >> 4) & 0x0F0F0F0Fu) | (((u[1] >> 6) & 0x03030303u) << 4); /* mn 4..7 */
    memcpy(sc, o, 8);
    memcpy(mn, o + 2, 8);
}

/* One block of type at blk, as q[elems] (int8) with scale[elems / 16] and
 * min[elems / 16]: element e is scale[e / 16] q[e] - min[e / 16] (in
 * fp32, as ggml's dequantize_row_* forms it: a K-quant's scale is d times
 * its 6-bit scale, rounded once). q has room for 256, scale and min for
 * 16 (the largest block); a type that is none of these gives zeros. */
static inline void linattn_quant_decode(int type, const uint8_t *blk, int8_t *q, float *scale,
                                        float *min)
{
    switch (type) {
    case LINATTN_QUANT_Q8_0: {
        float d = linattn_quant_half(blk);
        memcpy(q, blk + 2, 32);
        scale[0] = scale[1] = d;
        min[0] = min[1] = 0.0f;
        return;
    }
    case LINATTN_QUANT_Q4_0:
    case LINATTN_QUANT_Q4_1:
    case LINATTN_QUANT_Q5_0:
    case LINATTN_QUANT_Q5_1: {
        const int has_m = type == LINATTN_QUANT_Q4_1 || type == LINATTN_QUANT_Q5_1;
        const int five = type == LINATTN_QUANT_Q5_0 || type == LINATTN_QUANT_Q5_1;
        float d = linattn_quant_half(blk), m = has_m ? linattn_quant_half(blk + 2) : 0.0f;
        const uint8_t *p = blk + 2 + 2 * has_m;
        uint32_t qh = 0;
        if (five) {
            memcpy(&qh, p, 4);
            p += 4;
        }
        /* byte j holds element j (low nibble) and j + 16 (high); bit j of
         * qh is element j's fifth bit. Q4_0 and Q5_0's values q - 8, q -
         * 16 are d q less an offset of 8 d, 16 d (the same values: each
         * side is exact), so every type's q is unsigned */
        const int bias = has_m ? 0 : five ? 16 : 8;
        for (int j = 0; j < 16; j++) {
            int lo = p[j] & 0xF, hi = p[j] >> 4;
            if (five) {
                lo |= (int)((qh >> j) & 1) << 4;
                hi |= (int)((qh >> (j + 16)) & 1) << 4;
            }
            q[j] = (int8_t)lo;
            q[j + 16] = (int8_t)hi;
        }
        scale[0] = scale[1] = d;
        min[0] = min[1] = has_m ? -m : (float)bias * d; /* w = d q + m, or d (q - bias) */
        return;
    }
    case LINATTN_QUANT_Q4_K:
    case LINATTN_QUANT_Q5_K: {
        const int five = type == LINATTN_QUANT_Q5_K;
        float d = linattn_quant_half(blk), dmin = linattn_quant_half(blk + 2);
        const uint8_t *sc = blk + 4, *qh = blk + 16, *ql = blk + 16 + (five ? 32 : 0);
        /* 4 chunks of 64: 32 low nibbles, then the same bytes' high nibbles */
        for (int c = 0; c < 4; c++) {
            for (int half = 0; half < 2; half++) {
                int j = 2 * c + half, s, m;
                linattn_quant_k4_scale(sc, j, &s, &m);
                for (int l = 0; l < 32; l++) {
                    int v = half ? ql[32 * c + l] >> 4 : ql[32 * c + l] & 0xF;
                    if (five)
                        v |= ((qh[l] >> j) & 1) << 4;
                    q[32 * j + l] = (int8_t)v;
                }
                scale[2 * j] = scale[2 * j + 1] = d * (float)s;
                min[2 * j] = min[2 * j + 1] = dmin * (float)m;
            }
        }
        return;
    }
    case LINATTN_QUANT_Q6_K: {
        const uint8_t *ql = blk, *qh = blk + 128;
        const int8_t *sc = (const int8_t *)(const void *)(blk + 192);
        float d = linattn_quant_half(blk + 208);
        /* two halves of 128; in each, quarter k of 32: low or high nibbles
         * of ql[0..32) or ql[32..64), and bits 2k, 2k+1 of qh */
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 32; l++) {
                    int b = ql[64 * h + l + 32 * (k & 1)];
                    int v = (k < 2 ? b & 0xF : b >> 4) | ((qh[32 * h + l] >> (2 * k)) & 3) << 4;
                    q[128 * h + 32 * k + l] = (int8_t)(v - 32);
                }
        for (int g = 0; g < 16; g++) {
            scale[g] = d * (float)sc[g];
            min[g] = 0.0f;
        }
        return;
    }
    default: /* not a block type: zeros, so every caller reads defined values */
        memset(q, 0, 256);
        memset(scale, 0, 16 * sizeof *scale);
        memset(min, 0, 16 * sizeof *min);
        return;
    }
}

/* One block's values as floats (out[elems]): scale q - min, as the
 * loader's fp32 copies and the embedding rows take them. */
static inline void linattn_quant_values(int type, const uint8_t *blk, float *out)
{
    int8_t q[256];
    float scale[16], min[16];
    size_t elems, bytes;
    linattn_quant_decode(type, blk, q, scale, min);
    linattn_quant_block(type, &elems, &bytes);
    for (size_t e = 0; e < elems; e++)
        out[e] = scale[e / 16] * (float)q[e] - min[e / 16];
}

#endif
