/* quant_gemm_body.h: gemm_quant_xq, a prompt's integer tiles over packed weight panels, written once over the vector vocabulary. */

/* A panel is VL weight rows (C's columns) by QG_KC of K, as bytes in the
 * order the tile reads them: per block of 32, per 4 of its values, the VL
 * rows' 4 bytes side by side (one vector, vi_dot4's weights), then the
 * blocks' scales (and Q4_K's mins, or Q6_K's second scale of its two 16s)
 * as VL floats. QG_NC rows (QG_NC / VL
 * panels) are packed at once, so each activation tile, loaded once into
 * L1, meets them all; the pack stays in L1/L2 while every row of the
 * prompt passes over it, which pays for the packing. */
#define QG_KC 512
#define QG_NC (8 * VL)

typedef struct qg_pack {
    _Alignas(64) uint8_t v[QG_NC / VL][QG_KC / 32][8][4 * VL];
    _Alignas(64) float d[QG_NC / VL][QG_KC / 32][VL];
    _Alignas(64) float m[QG_NC / VL][QG_KC / 32][VL];
} qg_pack;

/* Bytes in 64-bit words, no carry between them. */
#define QG_LO4 0x0F0F0F0F0F0F0F0Full
#define QG_B3 0x0808080808080808ull

/* The 32 values of a Q4_0 or Q8_0 block as 4 words of 8 bytes (elements
 * 8i..8i+7 in word i), for vi_dot4: signed (q - 8, q) when VQ_SIGNED,
 * else unsigned (q, q + 128: the tile takes 8 or 128 times the
 * activations' sums away). Q4_0's q - 8 is q ^ 8 (q - 8 mod 16) with its
 * bit 3 spread to the high nibble (a byte times 0x1E never carries). */
LINATTN_INLINE void qg_values(uint64_t out[4], const uint8_t *blk, int type)
{
    if (type == LINATTN_QUANT_Q4_0) {
        uint64_t p[2];
        memcpy(p, blk + 2, 16);
        for (int h = 0; h < 2; h++) {
            uint64_t lo = p[h] & QG_LO4, hi = (p[h] >> 4) & QG_LO4;
            if (VQ_SIGNED) {
                lo ^= QG_B3;
                hi ^= QG_B3;
                lo |= (lo & QG_B3) * 0x1E;
                hi |= (hi & QG_B3) * 0x1E;
            }
            out[h] = lo;     /* elements 8h.. of the low nibbles: 0..15 */
            out[2 + h] = hi; /* and of the high ones: 16..31 */
        }
    } else {
        memcpy(out, blk + 2, 32);
        if (!VQ_SIGNED)
            for (int i = 0; i < 4; i++)
                out[i] ^= 0x8080808080808080ull;
    }
}

/* One block's 32 values (4 words) into column c of panel p's block b. */
LINATTN_INLINE void qg_put(qg_pack *P, size_t p, size_t b, size_t c, const uint64_t q[4])
{
    for (int g = 0; g < 8; g++) {
        uint32_t w4 = (uint32_t)(q[g / 2] >> (32 * (g % 2)));
        memcpy(&P->v[p][b][g][4 * c], &w4, 4);
    }
}

/* A Q6_K super-block at blk into column c of panel p, its 8 blocks of 32
 * from b0: block 4h + k is the low (k < 2) or high nibbles of ql[64 h +
 * 32 (k & 1)..] with bits 2k, 2k + 1 of qh[32 h..] above them (0..63:
 * less 32 when VQ_SIGNED, else the tile takes 32 times the activations'
 * sums per 16 away); its two 16s' scales d times their int8 scales
 * (exact in fp32: 11 by 8 bits) as d and m. */
LINATTN_INLINE void qg_pack_q6k(qg_pack *P, size_t p, size_t c, const uint8_t *blk, size_t b0)
{
    const int8_t *s8 = (const int8_t *)(const void *)(blk + 192);
    float d = vhalf(blk + 208);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++) {
            uint64_t lo[4], hi[4], v[4];
            memcpy(lo, blk + 64 * h + 32 * (k & 1), 32);
            memcpy(hi, blk + 128 + 32 * h, 32);
            for (int e = 0; e < 4; e++) {
                v[e] = ((lo[e] >> (4 * (k >> 1))) & QG_LO4) |
                       (((hi[e] >> (2 * k)) & 0x0303030303030303ull) << 4);
                if (VQ_SIGNED) { /* v - 32: v ^ 32 with bit 5 spread to bits 6, 7 */
                    v[e] ^= 0x2020202020202020ull;
                    v[e] |= (v[e] & 0x2020202020202020ull) * 6;
                }
            }
            size_t b = b0 + 4 * (size_t)h + (size_t)k;
            qg_put(P, p, b, c, v);
            P->d[p][b][c] = d * (float)s8[8 * h + 2 * k];
            P->m[p][b][c] = d * (float)s8[8 * h + 2 * k + 1];
        }
}

/* nr (<= QG_NC) rows of W, nb blocks of 32 each from Wc, into P; the rows
 * past nr of the last panel zero (scale 0: their columns are never
 * stored). Q4_K's sub-block j of a super-block: the low (j even) or high
 * nibbles of its 32 bytes j / 2, 0..15 as they are (no offset: its min,
 * dmin times the 6-bit min, goes by the activations' sums in fp32), the
 * scale d times the 6-bit scale (exact in fp32: 11 by 6 bits), the min
 * likewise. */
static void qg_pack_rows(qg_pack *P, const uint8_t *Wc, size_t ldw, int type, size_t bb,
                         size_t nr, size_t nb)
{
    const uint64_t zero[4] = {0, 0, 0, 0};
    size_t panels = (nr + VL - 1) / VL;
    for (size_t j = 0; j < panels * VL; j++) {
        size_t p = j / VL, c = j % VL;
        if (j >= nr) {
            for (size_t b = 0; b < nb; b++) {
                qg_put(P, p, b, c, zero);
                P->d[p][b][c] = P->m[p][b][c] = 0.0f;
            }
            continue;
        }
        const uint8_t *row = Wc + j * ldw;
        if (type == LINATTN_QUANT_Q6_K) {
            for (size_t sb = 0; sb < nb / 8; sb++)
                qg_pack_q6k(P, p, c, row + sb * bb, 8 * sb);
            continue;
        }
        if (type == LINATTN_QUANT_Q4_K) {
            for (size_t sb = 0; sb < nb / 8; sb++) {
                const uint8_t *blk = row + sb * bb;
                float d = vhalf(blk), dmin = vhalf(blk + 2);
                uint8_t sc[8], mn[8];
                linattn_quant_k4_scales(blk + 4, sc, mn);
                for (int i = 0; i < 4; i++) {
                    uint64_t w[4], lo[4], hi[4];
                    memcpy(w, blk + 16 + 32 * i, 32);
                    for (int e = 0; e < 4; e++) {
                        lo[e] = w[e] & QG_LO4;
                        hi[e] = (w[e] >> 4) & QG_LO4;
                    }
                    size_t b = 8 * sb + 2 * (size_t)i;
                    qg_put(P, p, b, c, lo);
                    qg_put(P, p, b + 1, c, hi);
                    P->d[p][b][c] = d * (float)sc[2 * i];
                    P->d[p][b + 1][c] = d * (float)sc[2 * i + 1];
                    P->m[p][b][c] = dmin * (float)mn[2 * i];
                    P->m[p][b + 1][c] = dmin * (float)mn[2 * i + 1];
                }
            }
            continue;
        }
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + b * bb;
            uint64_t q[4];
            qg_values(q, blk, type);
            qg_put(P, p, b, c, q);
            P->d[p][b][c] = vhalf(blk);
        }
    }
}

/* A tile of up to QUANT_MR activation rows, nb blocks, as the tile reads
 * it: per block the rows' 32 int8 side by side, their scales, the
 * integer sums' starts (-off times the block's sum of q: the weights'
 * offset) and, for the mins, the block's sum times its scale (ms, one
 * rounding), so every row is a fixed displacement from one pointer. */
typedef struct qg_atile {
    _Alignas(64) int8_t q[QG_KC / 32][QUANT_MR][32];
    float d[QG_KC / 32][QUANT_MR];
    float ms[QG_KC / 32][QUANT_MR];
    int32_t c[QG_KC / 32][QUANT_MR];
    int32_t c1[QG_KC / 32][QUANT_MR]; /* Q6_K: the second 16's start (c: the first's) */
} qg_atile;

/* mode: QG_PLAIN (Q4_0, Q8_0), QG_MINS (Q4_K), QG_HALVES (Q6_K: a scale
 * per 16, so two integer sums a block). */
enum { QG_PLAIN, QG_MINS, QG_HALVES };

LINATTN_INLINE void qg_pack_a(qg_atile *T, const int8_t *aq, const float *ad, const int32_t *as,
                              size_t lda, int32_t off, int mode, int mr, size_t nb)
{
    const size_t lds = lda / 32;
    for (int r = 0; r < mr; r++)
        for (size_t b = 0; b < nb; b++) {
            const int8_t *a = aq + (size_t)r * lda + 32 * b;
            int32_t s = as[(size_t)r * lds + b];
            memcpy(T->q[b][r], a, 32);
            T->d[b][r] = ad[(size_t)r * lds + b];
            if (mode == QG_MINS)
                T->ms[b][r] = T->d[b][r] * (float)s;
            if (mode == QG_HALVES) { /* the first 16's sum; the second's the rest */
                int32_t s0 = 0;
                for (int i = 0; i < 16; i++)
                    s0 += a[i];
                T->c1[b][r] = (int32_t)(0u - (uint32_t)off * (uint32_t)(s - s0));
                s = s0;
            }
            /* unsigned: no overflow on any input (a real sum is at most 32 * 127) */
            T->c[b][r] = (int32_t)(0u - (uint32_t)off * (uint32_t)s);
        }
}

/* mr (a constant where inlined) rows of T against one panel, nb blocks:
 * per block and row the exact integer sums of VL columns, then scaled by
 * d_a and d_w and added into fp32 sums (less the weights' mins times the
 * activation's scaled sums, with mins); those onto C's nc (<= VL)
 * columns. The rows go innermost, each with its own sum, so a dot
 * product's sum was last touched mr instructions before (the latency
 * hidden without the scheduler's help), with half a block's weight
 * vectors live at a time. */
LINATTN_INLINE void qg_tile(float *C, size_t ldc, const uint8_t *v, const float *dw,
                            const float *mw, size_t nb, const qg_atile *T, int mode, int mr,
                            size_t nc)
{
    vf acc[QUANT_MR];
    for (int r = 0; r < mr; r++)
        acc[r] = vzero();
    for (size_t b = 0; b < nb; b++) {
        vi s[QUANT_MR], s1[QUANT_MR];
#pragma GCC unroll 16
        for (int r = 0; r < mr; r++) {
            s[r] = vi_set1(T->c[b][r]);
            if (mode == QG_HALVES)
                s1[r] = vi_set1(T->c1[b][r]);
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            vi w[4];
#pragma GCC unroll 4
            for (int g = 0; g < 4; g++)
                w[g] = vi_load(v + (b * 8 + 4 * (size_t)h + (size_t)g) * 4 * VL);
#pragma GCC unroll 4
            for (int g = 0; g < 4; g++)
#pragma GCC unroll 16
                for (int r = 0; r < mr; r++) {
                    if (mode == QG_HALVES && h)
                        s1[r] = vi_dot4(s1[r], w[g], T->q[b][r] + 16 + 4 * g);
                    else
                        s[r] = vi_dot4(s[r], w[g], T->q[b][r] + 16 * h + 4 * g);
                }
        }
        vf d = vload(dw + b * VL);
#pragma GCC unroll 16
        for (int r = 0; r < mr; r++)
            acc[r] = vfma(vmul(vi_tof(s[r]), vset1(T->d[b][r])), d, acc[r]);
        if (mode == QG_HALVES) {
            vf d1 = vload(mw + b * VL);
#pragma GCC unroll 16
            for (int r = 0; r < mr; r++)
                acc[r] = vfma(vmul(vi_tof(s1[r]), vset1(T->d[b][r])), d1, acc[r]);
        }
        if (mode == QG_MINS) {
            vf m = vload(mw + b * VL);
#pragma GCC unroll 16
            for (int r = 0; r < mr; r++)
                acc[r] = vfma(m, vset1(-T->ms[b][r]), acc[r]);
        }
    }
    for (int r = 0; r < mr; r++) {
        float *c = C + (size_t)r * ldc;
        if (nc == VL)
            vstore(c, vadd(vload(c), acc[r]));
        else {
            vmask m = vmask_n(nc);
            vstore_m(c, vadd(vload_m(c, m), acc[r]), m);
        }
    }
}

/* The weights the next packing reads: rows of bytes (ldw apart), whose
 * cache lines the row tiles fetch into L2 a share each, so that packing
 * finds them there (its rows are short streams the hardware does not
 * follow). */
typedef struct qg_next {
    const uint8_t *w;        /* the next line's row */
    size_t ldw, rows, lines; /* rows left; lines of 64 bytes a row */
    size_t line, per;        /* the next line in its row; a tile's share */
} qg_next;

LINATTN_INLINE void qg_fetch(qg_next *f)
{
    for (size_t i = 0; i < f->per && f->rows; i++) {
        __builtin_prefetch(f->w + 64 * f->line, 0, 2);
        if (++f->line == f->lines) {
            f->line = 0;
            f->w += f->ldw;
            f->rows--;
        }
    }
}

/* Row tiles of QUANT_MR, then of 4, 2 and 1: constant sizes, the sums in
 * registers. Each tile packed once for all the panels. */
LINATTN_INLINE void qg_rows(float *C, size_t ldc, const qg_pack *P, size_t panels, size_t nr,
                            size_t nb, const int8_t *aq, const float *ad, const int32_t *as,
                            size_t lda, int32_t off, int mode, size_t M, qg_next *f)
{
    const size_t lds = lda / 32;
    qg_atile T;
    size_t m0 = 0;
    f->per = (f->rows * f->lines) / (M / QUANT_MR + 3) + 1;
#define QG_ROWS(R)                                                                                 \
    for (; m0 + (R) <= M; m0 += (R)) {                                                            \
        qg_fetch(f);                                                                               \
        qg_pack_a(&T, aq + m0 * lda, ad + m0 * lds, as + m0 * lds, lda, off, mode, (R), nb);      \
        for (size_t p = 0; p < panels; p++) {                                                      \
            size_t nc = nr - p * VL < VL ? nr - p * VL : VL;                                       \
            qg_tile(C + m0 * ldc + p * VL, ldc, P->v[p][0][0], P->d[p][0], P->m[p][0], nb, &T,    \
                    mode, (R), nc);                                                                \
        }                                                                                          \
    }
    if (mode == QG_HALVES) /* two sums a row: half the rows in registers */
        QG_ROWS(QUANT_MR / 2)
    else
        QG_ROWS(QUANT_MR)
    QG_ROWS(4)
    QG_ROWS(2)
    QG_ROWS(1)
#undef QG_ROWS
}

void FN(gemm_quant_xq)(float *C, size_t ldc, const int8_t *Aq, const float *Ad, const int32_t *As,
                       size_t lda, const uint8_t *W, size_t ldw, int type, size_t M, size_t N,
                       size_t K)
{
    qg_pack P;
    size_t be, bb;
    if (!linattn_quant_xq_takes(type) || !linattn_quant_block(type, &be, &bb))
        return;
    const int mode = type == LINATTN_QUANT_Q4_K   ? QG_MINS
                     : type == LINATTN_QUANT_Q6_K ? QG_HALVES
                                                  : QG_PLAIN;
    const int32_t off = VQ_SIGNED || mode == QG_MINS ? 0
                        : type == LINATTN_QUANT_Q4_0 ? 8
                        : type == LINATTN_QUANT_Q6_K ? 32
                                                     : 128;
    for (size_t n0 = 0; n0 < N; n0 += QG_NC) {
        size_t nr = N - n0 < QG_NC ? N - n0 : QG_NC, panels = (nr + VL - 1) / VL;
        for (size_t k0 = 0; k0 < K; k0 += QG_KC) { /* QG_KC: whole super-blocks */
            size_t nb = (K - k0 < QG_KC ? K - k0 : QG_KC) / 32;
            qg_pack_rows(&P, W + n0 * ldw + k0 / be * bb, ldw, type, bb, nr, nb);
            /* what the next packing reads: this rows' next chunk, or the
             * next rows' first */
            size_t k1 = k0 + QG_KC < K ? k0 + QG_KC : 0, n1 = k1 ? n0 : n0 + QG_NC;
            size_t r1 = n1 < N ? (N - n1 < QG_NC ? N - n1 : QG_NC) : 0;
            size_t kc1 = K - k1 < QG_KC ? K - k1 : QG_KC;
            qg_next f = {W + n1 * ldw + k1 / be * bb, ldw, r1, (kc1 / be * bb + 63) / 64, 0, 0};
            /* a constant mode: the plain tiles keep their registers */
            if (mode == QG_MINS)
                qg_rows(C + n0, ldc, &P, panels, nr, nb, Aq + k0, Ad + k0 / 32, As + k0 / 32, lda,
                        off, QG_MINS, M, &f);
            else if (mode == QG_HALVES)
                qg_rows(C + n0, ldc, &P, panels, nr, nb, Aq + k0, Ad + k0 / 32, As + k0 / 32, lda,
                        off, QG_HALVES, M, &f);
            else
                qg_rows(C + n0, ldc, &P, panels, nr, nb, Aq + k0, Ad + k0 / 32, As + k0 / 32, lda,
                        off, QG_PLAIN, M, &f);
        }
    }
}
