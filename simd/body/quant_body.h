/* quant_body.h: gemv over ggml block-quantized weights (Q8_0) by integer dot products, written once over the vector vocabulary. */
#include "../q8_0.h"
#include "../quants.h"

/* Columns of x quantized at a time (on the stack). */
#define Q8_0_CHUNK 4096

/* Up to 4 rows of W (stride ldw bytes) against the quantized x (nb
 * blocks): out[q] += sum over blocks of d_w d_x (q_w . q_x). */
static inline void q8_0_rows(float *out, const uint8_t *W, size_t ldw, const int8_t *xq,
                             const float *xd, size_t nb, int nr)
{
    vf acc[4] = {vzero(), vzero(), vzero(), vzero()};
    for (size_t g = 0; g < nb; g++) {
#pragma GCC unroll 4
        for (int q = 0; q < nr; q++) {
            const uint8_t *blk = W + (size_t)q * ldw + g * LINATTN_Q8_0_BYTES;
            vf t = vdot_i8x32((const int8_t *)(const void *)(blk + 2), xq + g * LINATTN_Q8_0_BLOCK);
            acc[q] = vfma(t, vset1(vhalf(blk) * xd[g]), acc[q]);
        }
    }
    if (nr == 4)
        vhsum4_add(out, acc[0], acc[1], acc[2], acc[3]);
    else
        for (int q = 0; q < nr; q++)
            out[q] += vhsum(acc[q]);
}

void FN(gemv_q8_0)(float *y, const uint8_t *W, size_t ldw, const float *x, const float *b,
                   size_t rows, size_t cols)
{
    int8_t xq[Q8_0_CHUNK];
    float xd[Q8_0_CHUNK / LINATTN_Q8_0_BLOCK];
    for (size_t r = 0; r < rows; r++) /* b first: y may alias it */
        y[r] = b ? b[r] : 0.0f;
    for (size_t c0 = 0; c0 < cols; c0 += Q8_0_CHUNK) {
        size_t nc = cols - c0 < Q8_0_CHUNK ? cols - c0 : Q8_0_CHUNK;
        linattn_q8_0_quantize(xq, xd, x + c0, nc);
        const uint8_t *Wc = W + c0 / LINATTN_Q8_0_BLOCK * LINATTN_Q8_0_BYTES;
        for (size_t r = 0; r < rows; r += 4) {
            int nr = rows - r < 4 ? (int)(rows - r) : 4;
            q8_0_rows(y + r, Wc + r * ldw, ldw, xq, xd, nc / LINATTN_Q8_0_BLOCK, nr);
        }
    }
}

/* Any other ggml block type (simd/quants.h): each block decoded into int8
 * values with a scale and an offset per 16, then the same integer dot
 * products against x quantized as for Q8_0; the offsets meet the sums of
 * x's quantized values per 16. */
void FN(gemv_quant)(float *y, const uint8_t *W, size_t ldw, int type, const float *x,
                    const float *b, size_t rows, size_t cols)
{
    int8_t xq[Q8_0_CHUNK], q[256];
    float xd[Q8_0_CHUNK / 32], sc[16], mn[16];
    int32_t xs[Q8_0_CHUNK / 16];
    size_t be, bb;
    linattn_quant_block(type, &be, &bb);
    for (size_t r = 0; r < rows; r++) /* b first: y may alias it */
        y[r] = b ? b[r] : 0.0f;
    for (size_t c0 = 0; c0 < cols; c0 += Q8_0_CHUNK) {
        size_t nc = cols - c0 < Q8_0_CHUNK ? cols - c0 : Q8_0_CHUNK;
        linattn_q8_0_quantize(xq, xd, x + c0, nc);
        for (size_t g = 0; g < nc / 16; g++) {
            int32_t s = 0;
            for (int i = 0; i < 16; i++)
                s += xq[16 * g + i];
            xs[g] = s;
        }
        for (size_t r = 0; r < rows; r++) {
            const uint8_t *row = W + r * ldw + c0 / be * bb;
            vf acc = vzero();
            float off = 0.0f;
            if (type == LINATTN_QUANT_Q4_0 || type == LINATTN_QUANT_Q4_1 ||
                type == LINATTN_QUANT_Q5_0 || type == LINATTN_QUANT_Q5_1) {
                /* nibbles (and fifth bits) straight into the dot products:
                 * the same arithmetic as the decode below, without the copy */
                const int has_m = type == LINATTN_QUANT_Q4_1 || type == LINATTN_QUANT_Q5_1;
                const int five = type == LINATTN_QUANT_Q5_0 || type == LINATTN_QUANT_Q5_1;
                for (size_t g = 0; g < nc / 32; g++) {
                    const uint8_t *blk = row + g * bb, *p = blk + 2 + 2 * has_m;
                    float d = vhalf(blk);
                    float m = has_m ? -vhalf(blk + 2) : (five ? 16.0f : 8.0f) * d;
                    vf t;
                    if (five) {
                        uint32_t qh;
                        memcpy(&qh, p, 4);
                        t = vdot_q5x32(p + 4, qh, xq + 32 * g);
                    } else
                        t = vdot_nib16(p, xq + 32 * g);
                    acc = vfma(t, vset1(d * xd[g]), acc);
                    off += (m * (float)xs[2 * g] + m * (float)xs[2 * g + 1]) * xd[g];
                }
                y[r] += vhsum(acc) - off;
                continue;
            }
            if (type == LINATTN_QUANT_Q4_K || type == LINATTN_QUANT_Q5_K) {
                const int five = type == LINATTN_QUANT_Q5_K;
                for (size_t e0 = 0; e0 < nc; e0 += 256) {
                    const uint8_t *blk = row + e0 / 256 * bb, *ql = blk + 16 + 32 * five;
                    float d = vhalf(blk), dmin = vhalf(blk + 2);
                    for (int j = 0; j < 8; j++) {
                        int s, m;
                        linattn_quant_k4_scale(blk + 4, j, &s, &m);
                        size_t g = (e0 + 32 * (size_t)j) / 32;
                        const uint8_t *p = ql + 32 * (j / 2);
                        vf t = five ? vdot_q5kx32(p, 4 * (j % 2), blk + 16, j, xq + 32 * g)
                                    : vdot_nib32(p, 4 * (j % 2), xq + 32 * g);
                        float es = d * (float)s, em = dmin * (float)m;
                        acc = vfma(t, vset1(es * xd[g]), acc);
                        off += (em * (float)xs[2 * g] + em * (float)xs[2 * g + 1]) * xd[g];
                    }
                }
                y[r] += vhsum(acc) - off;
                continue;
            }
            if (type == LINATTN_QUANT_Q6_K) { /* values built in registers, no offsets */
                for (size_t e0 = 0; e0 < nc; e0 += 256) {
                    const uint8_t *blk = row + e0 / 256 * bb;
                    const int8_t *s8 = (const int8_t *)(const void *)(blk + 192);
                    float d = vhalf(blk + 208);
                    for (int h = 0; h < 2; h++)
                        for (int k = 0; k < 4; k++) {
                            size_t g = (e0 + 128 * (size_t)h + 32 * (size_t)k) / 32;
                            vf t = vdot_q6x32(blk + 64 * h + 32 * (k & 1), k < 2 ? 0 : 4,
                                              blk + 128 + 32 * h, k, xq + 32 * g);
                            int i16 = 8 * h + 2 * k; /* the scales of its two 16s */
                            float s0 = d * (float)s8[i16], s1 = d * (float)s8[i16 + 1];
                            acc = vfma(t, vscale2(s0 * xd[g], s1 * xd[g]), acc);
                        }
                }
                y[r] += vhsum(acc);
                continue;
            }
            for (size_t e0 = 0; e0 < nc; e0 += be) {
                linattn_quant_decode(type, row + e0 / be * bb, q, sc, mn);
                for (size_t c = 0; c < be / 32; c++) {
                    size_t g = (e0 + 32 * c) / 32;
                    vf t = vdot_i8x32(q + 32 * c, xq + 32 * g);
                    acc = vfma(t, vscale2(sc[2 * c] * xd[g], sc[2 * c + 1] * xd[g]), acc);
                    off += (mn[2 * c] * (float)xs[2 * g] + mn[2 * c + 1] * (float)xs[2 * g + 1]) *
                           xd[g];
                }
            }
            y[r] += vhsum(acc) - off;
        }
    }
}
