/* quant_body.h: gemv and gemm over ggml block-quantized weights by integer dot products, written once over the vector vocabulary. */
#include "../q8_0.h"
#include "../quants.h"

/* Columns of x quantized at a time (on the stack). */
#define Q8_0_CHUNK 4096
/* Rows of x a gemm_quant tile takes at once (each weight block is loaded
 * and decoded once for them); a vocabulary with few registers sets fewer. */
#ifndef QUANT_XR
#define QUANT_XR 4
#endif

/* Bytes ahead a one-row pass over W prefetches (its rows follow each other
 * in memory: one stream): without it a model past the last-level cache
 * stalls on every block's scale load (docs/vs_llamacpp.md). Rows taken
 * side by side fetch the next rows' blocks instead (quant_rows32). */
#define QUANT_PF 4096

/* x's rows as the dot products take them: per row nc int8 values (q), one
 * scale per 32 (d), the sum of each 16 values (s) and, for the offsets,
 * each 32's sum (s32: fixed offsets, in integers) and that times its scale
 * (ms: d s32, one rounding: a block's minimum); for the K-quants q of
 * Q8_K, its scales dk, s, and its sums per 32 again as int16 (for the
 * integer dot product with a super-block's mins). */
typedef struct quant_x {
    int8_t q[QUANT_XR][Q8_0_CHUNK];
    float d[QUANT_XR][Q8_0_CHUNK / 32];
    float ms[QUANT_XR][Q8_0_CHUNK / 32];
    int32_t s[QUANT_XR][Q8_0_CHUNK / 16];
    float dk[QUANT_XR][Q8_0_CHUNK / 256]; /* the K-quants': q and s as Q8_K, its scales, */
    int16_t h32[QUANT_XR][Q8_0_CHUNK / 32]; /* and its sums per 32 (at most 32 127: int16) */
    int16_t h16[QUANT_XR][Q8_0_CHUNK / 16]; /* and per 16 (s again, as int16) */
    int32_t s32[QUANT_XR][Q8_0_CHUNK / 32];
    int32_t c8[QUANT_XR][Q8_0_CHUNK / 4]; /* Q4_0's offset -8 s32 again, 8 int32 a block: that and 7 zeros */
} quant_x;


/* Up to 4 rows of W (stride ldw bytes) in Q8_0 against nx quantized x rows
 * (nb blocks): C[j ldc + q] += sum over blocks of d_w d_x (q_w . q_x). Each
 * (row, x row) sums as the one-row gemv does, so a tile's rows are its. */
LINATTN_INLINE void q8_0_rows(float *C, size_t ldc, const uint8_t *W, size_t ldw,
                             const quant_x *X, size_t nb, int nr, int nx)
{
    vf acc[QUANT_XR][4];
    for (int j = 0; j < QUANT_XR; j++)
        for (int q = 0; q < 4; q++)
            acc[j][q] = vzero();
    for (size_t g = 0; g < nb; g++) {
#pragma GCC unroll 4
        for (int q = 0; q < nr; q++) {
            const uint8_t *blk = W + (size_t)q * ldw + g * LINATTN_Q8_0_BYTES;
            const int8_t *w = (const int8_t *)(const void *)(blk + 2);
            float d = vhalf(blk);
            /* the next 4 rows' block: the stream runs ahead of the loads */
            __builtin_prefetch(blk + 4 * ldw);
#pragma GCC unroll 4
            for (int j = 0; j < nx; j++) {
                vf t = vdot_i8x32(w, X->q[j] + g * LINATTN_Q8_0_BLOCK);
                acc[j][q] = vfma(t, vset1(d * X->d[j][g]), acc[j][q]);
            }
        }
    }
    for (int j = 0; j < nx; j++) {
        if (nr == 4)
            vhsum4_add(C + (size_t)j * ldc, acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
        else
            for (int q = 0; q < nr; q++)
                C[(size_t)j * ldc + q] += vhsum(acc[j][q]);
    }
}

/* nr (1..4) rows of W in Q4_0, Q4_1, Q5_0 or Q5_1 (nc columns) against nx
 * quantized x rows: C[j ldc + q] += row q . x_j, nibbles (and fifth bits)
 * straight into the dot products. Q4_0's and Q5_0's offsets (8, 16) meet
 * x's sums in the integer sum, as ggml's signed values do (exact); a
 * block's minimum (Q4_1, Q5_1) meets them in fp32. Each (row, x row) sums
 * as the one-row gemv does whatever nr: the rows only run side by side,
 * so that one x row has nr chains of fp32 sums in flight rather than one. */
LINATTN_INLINE void quant_rows32(float *C, size_t ldc, const uint8_t *W, size_t ldw, int type,
                                 size_t bb, const quant_x *X, size_t nc, int nr, int nx)
{
    vf acc[4][QUANT_XR];
    float off[4][QUANT_XR];
    for (int q = 0; q < 4; q++)
        for (int j = 0; j < QUANT_XR; j++) {
            acc[q][j] = vzero();
            off[q][j] = 0.0f;
        }
    const int has_m = type == LINATTN_QUANT_Q4_1 || type == LINATTN_QUANT_Q5_1;
    const int five = type == LINATTN_QUANT_Q5_0 || type == LINATTN_QUANT_Q5_1;
    const int32_t bias = has_m ? 0 : five ? 16 : 8;
    const size_t nb = nc / 32, pairs = five ? 0 : nb / 2; /* Q4_0, Q4_1: blocks two at a time */
    for (size_t g2 = 0; g2 < pairs; g2++) {
        const size_t g = 2 * g2;
#pragma GCC unroll 4
        for (int q = 0; q < nr; q++) {
            const uint8_t *blk = W + (size_t)q * ldw + g * bb, *p = blk + 2 + 2 * has_m;
            /* the same blocks of the next nr rows: rows side by side are nr
             * streams, and fetching ahead within each (1 KiB) left them all
             * waiting (Q4_0, 16384 x 4096 from memory, one core: 10.6 ->
             * 22-28 GB/s). 4 blocks are at most 96 bytes: two lines. */
            if (g2 % 2 == 0) {
                __builtin_prefetch(blk + (size_t)nr * ldw);
                __builtin_prefetch(blk + (size_t)nr * ldw + 64);
            }
#pragma GCC unroll 4
            for (int j = 0; j < nx; j++) {
                acc[q][j] = vdot_nib16x2_fma(acc[q][j], p, p + bb, blk, blk + bb, X->q[j] + 32 * g,
                                             X->c8[j] + 8 * g, X->d[j] + g);
                if (has_m) { /* the minimum as the one-block step below takes it */
                    off[q][j] += -vhalf(blk + 2) * X->ms[j][g];
                    off[q][j] += -vhalf(blk + bb + 2) * X->ms[j][g + 1];
                }
            }
        }
    }
    for (size_t g = 2 * pairs; g < nb; g++) {
#pragma GCC unroll 4
        for (int q = 0; q < nr; q++) {
            const uint8_t *blk = W + (size_t)q * ldw + g * bb, *p = blk + 2 + 2 * has_m;
            if (g % 4 == 0) {
                __builtin_prefetch(blk + (size_t)nr * ldw);
                __builtin_prefetch(blk + (size_t)nr * ldw + 64);
            }
            float d = vhalf(blk), m = has_m ? -vhalf(blk + 2) : 0.0f;
            uint32_t qh = 0;
            if (five)
                memcpy(&qh, p, 4);
#pragma GCC unroll 4
            for (int j = 0; j < nx; j++) {
                int32_t c = -bias * X->s32[j][g];
                vf t = five ? vdot_q5x32(p + 4, qh, X->q[j] + 32 * g, c)
                            : vdot_nib16(p, X->q[j] + 32 * g, c);
                acc[q][j] = vfma(t, vset1(d * X->d[j][g]), acc[q][j]);
                if (has_m)
                    off[q][j] += m * X->ms[j][g];
            }
        }
    }
    for (int q = 0; q < nr; q++)
        for (int j = 0; j < nx; j++)
            C[(size_t)j * ldc + q] += vhsum(acc[q][j]) - off[q][j];
}

/* The K-quants' sub-blocks two at a time: a vocabulary with wide vectors
 * defines VK_PAIRS and its own (vec_avx512.h); the others take two of
 * their steps, in the same order (the same integer sums). */
#ifndef VK_PAIRS
typedef vk vk2;
LINATTN_INLINE vk2 vk2_zero(void) { return vk_zero(); }
LINATTN_INLINE vk2 vk2_nib64(vk2 acc, const uint8_t *p, const int8_t *x, const uint8_t *sc8, int c)
{
    return vk_nib32(vk_nib32(acc, p, 0, x, sc8, 2 * c), p, 4, x + 32, sc8, 2 * c + 1);
}
LINATTN_INLINE vk2 vk2_q5k64(vk2 acc, const uint8_t *ql, const uint8_t *qh, int c, const int8_t *x,
                             const uint8_t *sc8)
{
    return vk_q5k32(vk_q5k32(acc, ql, 0, qh, 2 * c, x, sc8), ql, 4, qh, 2 * c + 1, x + 32, sc8);
}
LINATTN_INLINE vk2 vk2_q6x64(vk2 acc, const uint8_t *ql, int kk, const uint8_t *qh, const int8_t *x,
                             const int8_t *s8)
{
    acc = vk_q6x32(acc, ql, 4 * kk, qh, 2 * kk, x, s8);
    return vk_q6x32(acc, ql + 32, 4 * kk, qh, 2 * kk + 1, x + 32, s8);
}
LINATTN_INLINE vf vk2_fma(vk2 s, float d, vf acc) { return vk_fma(s, d, acc); }
#endif

/* A Q4_K or Q5_K super-block's scales then mins (16 bytes): the C
 * unpacking, unless the vocabulary has its own (VK_K4_SCALES). */
#ifndef VK_K4_SCALES
LINATTN_INLINE void vk_k4_scales(const uint8_t *s, uint8_t sm[16])
{
    linattn_quant_k4_scales(s, sm, sm + 8);
}
#endif

/* One row of W in a K-quant of simd/quants.h (Q4_K, Q5_K, Q6_K; nc
 * columns) against nx quantized x rows: C[j ldc] += the row . x_j. Each
 * block's values built in registers once for all nx rows; per row the same
 * steps as the one-row gemv, so a tile's rows are its. The offsets (a
 * block's minimum, Q6_K's 32) meet the sums of x's quantized values. One
 * row at a time: rows side by side (as quant_rows32 takes them) read
 * slower from memory here (docs/vs_llamacpp.md). */
LINATTN_INLINE void quant_row_k(float *C, size_t ldc, const uint8_t *row, int type, size_t bb,
                                const quant_x *X, size_t nc, int nx)
{
    vf acc[QUANT_XR];
    vkm off[QUANT_XR]; /* the offsets: Q4_K's and Q5_K's mins, Q6_K's 32 */
    for (int j = 0; j < QUANT_XR; j++) {
        acc[j] = vzero();
        off[j] = vkm_zero();
    }
    for (size_t e0 = 0; e0 < nc; e0 += 256) {
        const size_t sb = e0 / 256;
        const uint8_t *blk = row + sb * bb;
        for (size_t b = 0; b < bb; b += 64)
            __builtin_prefetch(blk + QUANT_PF + b);
        vk2 sum[QUANT_XR];
        if (type == LINATTN_QUANT_Q4_K || type == LINATTN_QUANT_Q5_K) {
            /* in integers: the 8 sub-blocks' dot products times their
             * 6-bit scales, and their 6-bit mins times x's sums; then each
             * scaled once (d d_x, dmin d_x), as ggml's vec_dot_q4_K_q8_K */
            const int five = type == LINATTN_QUANT_Q5_K;
            const uint8_t *ql = blk + 16 + 32 * five;
            float dmin = vhalf(blk + 2);
            _Alignas(16) uint8_t sc[16];
            const uint8_t *mn = sc + 8;
            vk_k4_scales(blk + 4, sc);
            for (int j = 0; j < nx; j++) {
                off[j] = vkm_fma(off[j], mn, X->h32[j] + 8 * sb, dmin * X->dk[j][sb]);
                sum[j] = vk2_zero();
            }
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) { /* sub-blocks 2c and 2c + 1 */
                const uint8_t *p = ql + 32 * c;
#pragma GCC unroll 4
                for (int j = 0; j < nx; j++) {
                    const int8_t *xq = X->q[j] + e0 + 64 * (size_t)c;
                    sum[j] = five ? vk2_q5k64(sum[j], p, blk + 16, c, xq, sc)
                                  : vk2_nib64(sum[j], p, xq, sc, c);
                }
            }
        } else { /* Q6_K: values -32..31, int8 scales per 16 */
            const int8_t *s8 = (const int8_t *)(const void *)(blk + 192);
            for (int j = 0; j < nx; j++) {
                sum[j] = vk2_zero();
#if VK_Q6_OFFSET /* the stored values' 32, against x's sums per 16 */
                off[j] = vkm_fma16_i8(off[j], s8, X->h16[j] + 16 * sb,
                                       vhalf(blk + 208) * X->dk[j][sb] * (float)VK_Q6_OFFSET);
#endif
            }
            for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
                for (int kk = 0; kk < 2; kk++) {
#pragma GCC unroll 4
                    for (int j = 0; j < nx; j++) /* quarters 2kk, 2kk + 1: scales 8h + 4kk .. + 3 */
                        sum[j] = vk2_q6x64(sum[j], blk + 64 * h, kk, blk + 128 + 32 * h,
                                           X->q[j] + e0 + 128 * (size_t)h + 64 * (size_t)kk,
                                           s8 + 8 * h);
                }
        }
        float d = vhalf(type == LINATTN_QUANT_Q6_K ? blk + 208 : blk);
        for (int j = 0; j < nx; j++)
            acc[j] = vk2_fma(sum[j], d * X->dk[j][sb], acc[j]);
    }
    for (int j = 0; j < nx; j++)
        C[(size_t)j * ldc] += vhsum(acc[j]) - vkm_sum(off[j]);
}

/* Every row of W: the K-quants one at a time; the others against one x row
 * 4 at a time, against more one at a time (their accumulators fill the
 * registers already). */
LINATTN_INLINE void quant_rows_all(float *C, size_t ldc, const uint8_t *Wc, size_t ldw, int type,
                                   size_t bb, const quant_x *X, size_t nc, size_t N, int nx)
{
    size_t r = 0;
    if (linattn_quant_takes_q8_K(type)) {
        for (; r < N; r++)
            quant_row_k(C + r, ldc, Wc + r * ldw, type, bb, X, nc, nx);
        return;
    }
    if (nx == 1)
        for (; r + 4 <= N; r += 4)
            quant_rows32(C + r, ldc, Wc + r * ldw, ldw, type, bb, X, nc, 4, nx);
    for (; r < N; r++)
        quant_rows32(C + r, ldc, Wc + r * ldw, ldw, type, bb, X, nc, 1, nx);
}

/* Every row of W (one chunk of nc columns) against the nx rows of X. */
LINATTN_INLINE void quant_panel(float *C, size_t ldc, const uint8_t *Wc, size_t ldw, int type,
                                size_t bb, const quant_x *X, size_t nc, size_t N,
                                int nx)
{
    if (type == LINATTN_QUANT_Q8_0) {
        size_t r = 0;
        for (; r + 4 <= N; r += 4)
            q8_0_rows(C + r, ldc, Wc + r * ldw, ldw, X, nc / LINATTN_Q8_0_BLOCK, 4, nx);
        if (r < N)
            q8_0_rows(C + r, ldc, Wc + r * ldw, ldw, X, nc / LINATTN_Q8_0_BLOCK, (int)(N - r), nx);
    } else
        switch (type) { /* constant types and row counts: no tests in the loops */
        case LINATTN_QUANT_Q4_0: quant_rows_all(C, ldc, Wc, ldw, LINATTN_QUANT_Q4_0, bb, X, nc, N, nx); break;
        case LINATTN_QUANT_Q4_1: quant_rows_all(C, ldc, Wc, ldw, LINATTN_QUANT_Q4_1, bb, X, nc, N, nx); break;
        case LINATTN_QUANT_Q5_0: quant_rows_all(C, ldc, Wc, ldw, LINATTN_QUANT_Q5_0, bb, X, nc, N, nx); break;
        case LINATTN_QUANT_Q5_1: quant_rows_all(C, ldc, Wc, ldw, LINATTN_QUANT_Q5_1, bb, X, nc, N, nx); break;
        case LINATTN_QUANT_Q4_K: quant_rows_all(C, ldc, Wc, ldw, LINATTN_QUANT_Q4_K, bb, X, nc, N, nx); break;
        case LINATTN_QUANT_Q5_K: quant_rows_all(C, ldc, Wc, ldw, LINATTN_QUANT_Q5_K, bb, X, nc, N, nx); break;
        default: quant_rows_all(C, ldc, Wc, ldw, LINATTN_QUANT_Q6_K, bb, X, nc, N, nx); break;
        }
}

/* C[M x N] (stride ldc) += A[M x K] (stride lda) . W^T, W's N rows in ggml
 * blocks of type (Q8_0 as gemv_q8_0, the others as gemv_quant): QUANT_XR
 * rows of A at a time, quantized per chunk of columns, every row of W
 * against them. */
static void quant_gemm(float *C, size_t ldc, const float *A, size_t lda, const uint8_t *W,
                       size_t ldw, int type, size_t M, size_t N, size_t K)
{
    quant_x X;
    size_t be, bb;
    linattn_quant_block(type, &be, &bb);
    const int q8 = type == LINATTN_QUANT_Q8_0;
#if QUANT_XR > 4
#error "quant_gemm's switch takes tiles of up to 4 rows"
#endif
    for (size_t m0 = 0; m0 < M; m0 += QUANT_XR) {
        int nx = M - m0 < QUANT_XR ? (int)(M - m0) : QUANT_XR;
        float *Cm = C + m0 * ldc;
        for (size_t c0 = 0; c0 < K; c0 += Q8_0_CHUNK) {
            size_t nc = K - c0 < Q8_0_CHUNK ? K - c0 : Q8_0_CHUNK;
            for (int j = 0; j < nx; j++) {
                const float *a = A + (m0 + (size_t)j) * lda + c0;
                if (linattn_quant_takes_q8_K(type)) {
                    linattn_q8_K_quantize(X.q[j], X.dk[j], X.s[j], a, nc);
                    for (size_t g = 0; g < nc / 32; g++)
                        X.h32[j][g] = (int16_t)(X.s[j][2 * g] + X.s[j][2 * g + 1]);
                    for (size_t g = 0; g < nc / 16; g++)
                        X.h16[j][g] = (int16_t)X.s[j][g];
                    continue;
                }
                linattn_q8_0_quantize(X.q[j], X.d[j], a, nc);
                if (!q8) {
                    for (size_t g = 0; g < nc / 16; g++) {
                        int32_t s = 0;
                        for (int i = 0; i < 16; i++)
                            s += X.q[j][16 * g + i];
                        X.s[j][g] = s;
                    }
                    for (size_t g = 0; g < nc / 32; g++) {
                        X.s32[j][g] = X.s[j][2 * g] + X.s[j][2 * g + 1];
                        X.ms[j][g] = X.d[j][g] * (float)X.s32[j][g];
                        memset(X.c8[j] + 8 * g, 0, 8 * sizeof X.c8[j][0]);
                        X.c8[j][8 * g] = type == LINATTN_QUANT_Q4_0 ? -8 * X.s32[j][g] : 0;
                    }
                }
            }
            const uint8_t *Wc = W + c0 / be * bb;
            switch (nx) { /* constant tile sizes: the accumulators stay in registers */
            case 1: quant_panel(Cm, ldc, Wc, ldw, type, bb, &X, nc, N, 1); break;
            case 2: quant_panel(Cm, ldc, Wc, ldw, type, bb, &X, nc, N, 2); break;
            case 3: quant_panel(Cm, ldc, Wc, ldw, type, bb, &X, nc, N, 3); break;
            default: quant_panel(Cm, ldc, Wc, ldw, type, bb, &X, nc, N, QUANT_XR); break;
            }
        }
    }
}

void FN(gemv_q8_0)(float *y, const uint8_t *W, size_t ldw, const float *x, const float *b,
                   size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) /* b first: y may alias it */
        y[r] = b ? b[r] : 0.0f;
    quant_gemm(y, 0, x, 0, W, ldw, LINATTN_QUANT_Q8_0, 1, rows, cols);
}

void FN(gemv_quant)(float *y, const uint8_t *W, size_t ldw, int type, const float *x,
                    const float *b, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) /* b first: y may alias it */
        y[r] = b ? b[r] : 0.0f;
    quant_gemm(y, 0, x, 0, W, ldw, type, 1, rows, cols);
}

void FN(gemm_quant)(float *C, size_t ldc, const float *A, size_t lda, const uint8_t *W,
                    size_t ldw, int type, size_t M, size_t N, size_t K)
{
    quant_gemm(C, ldc, A, lda, W, ldw, type, M, N, K);
}

#include "quant_gemm_body.h"

#if !defined(QUANT_DOT_ONLY) /* a capability's files have the dot-product kernels alone */
/* linattn_q8_0_quantize in vectors, the same IEEE operations on each value
 * (|x|'s max, x times 127 / max, rounded by adding and taking away 1.5 *
 * 2^23, clamped), so the same bits; a NaN or an infinity found by x * 0
 * (NaN for those, 0 for the rest) summed. The sums of q from the rounded
 * values (exact integers in fp32). */
void FN(quantize_q8_0)(int8_t *q, float *d, int32_t *s, const float *x, size_t n)
{
    enum { NV = 32 / VL };
    for (size_t b = 0; b < n / 32; b++) {
        const float *xb = x + 32 * b;
        vf v[NV], m = vzero(), z = vzero();
        for (int i = 0; i < NV; i++) {
            v[i] = vload(xb + i * VL);
            m = vmax(vmax(v[i], vsub(vzero(), v[i])), m); /* a NaN keeps m */
            z = vadd(z, vmul(v[i], vzero()));
        }
        float amax = vhmax(m);
        if (!(amax <= 3.4028235e38f) || vhsum(z) != 0.0f) {
            memset(q + 32 * b, 0, 32);
            d[b] = NAN;
            s[b] = 0;
            continue;
        }
        float sc = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        if (!(inv <= 3.4028235e38f)) { /* max under about 2^-121: 127 / max overflows */
            linattn_q8_0_quantize(q + 32 * b, d + b, xb, 32);
            int32_t t = 0;
            for (int i = 0; i < 32; i++)
                t += q[32 * b + (size_t)i];
            s[b] = t;
            continue;
        }
        vf t = vzero();
        for (int i = 0; i < NV; i++) {
            vf r = vsub(vadd(vmul(v[i], vset1(inv)), vset1(12582912.0f)), vset1(12582912.0f));
            r = vmax(vmin(r, vset1(127.0f)), vset1(-127.0f));
            vstore_i8(q + 32 * b + i * VL, r);
            t = vadd(t, r);
        }
        d[b] = linattn_f16_to_f32(linattn_f32_to_f16(sc));
        s[b] = (int32_t)vhsum(t);
    }
}


/* linattn_q8_K_quantize in vectors: |x|'s max in vectors, then the
 * first value of that magnitude (its sign sets the scale's, as the C one
 * takes the first), then the same IEEE operations on each value; a block
 * whose -127 / max overflows takes the C one's way. Its scale given for
 * each 32, and the sums of each 32 q. */
void FN(quantize_q8_K)(int8_t *q, float *d, int32_t *s, const float *x, size_t n)
{
    enum { NV = 256 / VL, PER = 32 / VL };
    for (size_t b = 0; b < n / 256; b++) {
        const float *xb = x + 256 * b;
        int8_t *qb = q + 256 * b;
        vf m = vzero(), z = vzero();
        for (int i = 0; i < NV; i++) {
            vf v = vload(xb + i * VL);
            m = vmax(vmax(v, vsub(vzero(), v)), m); /* a NaN keeps m */
            z = vadd(z, vmul(v, vzero()));
        }
        float amax = vhmax(m), max = 0.0f;
        int bad = !(amax <= 3.4028235e38f) || vhsum(z) != 0.0f;
        if (!bad && amax > 0.0f)
            for (int i = 0; i < 256; i++)
                if (fabsf(xb[i]) == amax) {
                    max = xb[i];
                    break;
                }
        float sc = bad || amax == 0.0f ? 0.0f : -127.0f / max;
        if (bad || !(fabsf(sc) <= 3.4028235e38f)) { /* bad: q 0, d NaN; or max under 2^-121 */
            int32_t s16[16];
            float dk;
            linattn_q8_K_quantize(qb, &dk, s16, xb, 256);
            for (int g = 0; g < 8; g++) {
                d[8 * b + (size_t)g] = dk;
                s[8 * b + (size_t)g] = s16[2 * g] + s16[2 * g + 1];
            }
            continue;
        }
        for (int g = 0; g < 8; g++) {
            vf t = vzero();
            for (int i = 0; i < PER; i++) {
                const size_t e = 32 * (size_t)g + (size_t)i * VL;
                vf r = vmul(vload(xb + e), vset1(sc));
                r = vsub(vadd(r, vset1(12582912.0f)), vset1(12582912.0f));
                r = vmax(vmin(r, vset1(127.0f)), vset1(-127.0f));
                vstore_i8(qb + e, r);
                t = vadd(t, r);
            }
            d[8 * b + (size_t)g] = sc != 0.0f ? 1.0f / sc : 0.0f;
            s[8 * b + (size_t)g] = (int32_t)vhsum(t);
        }
    }
}

/* y (rows x cols, dense) = W's values as floats: each block decoded
 * (simd/quants.h), then scale q - min by a product and a difference, as
 * linattn_quant_values rounds them; VL divides the 16 values of a scale. */
void FN(dequant)(float *y, const uint8_t *W, size_t ldw, int type, size_t rows, size_t cols)
{
    size_t be, bb;
    int8_t q[256];
    float sc[16], mn[16];
    linattn_quant_block(type, &be, &bb);
    for (size_t r = 0; r < rows; r++)
        for (size_t e0 = 0; e0 < cols; e0 += be) {
            linattn_quant_decode(type, W + r * ldw + e0 / be * bb, q, sc, mn);
            float *o = y + r * cols + e0;
            for (size_t e = 0; e < be; e += 16) {
                vf s = vset1(sc[e / 16]), m = vset1(mn[e / 16]);
                for (size_t v = 0; v < 16; v += VL)
                    vstore(o + e + v, vsub(vmul(s, vload_i8(q + e + v)), m));
            }
        }
}
#endif
