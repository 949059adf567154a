/* quant_gemm_body.h: gemm_quant_xq, a prompt's integer tiles over packed weight panels, written once over the vector vocabulary. */

/* A panel is VL weight rows (C's columns) by QG_KC of K, as bytes in the
 * order the tile reads them: per block of 32, per 4 of its values, the VL
 * rows' 4 bytes side by side (one vector, vi_dot4's weights), then the
 * blocks' half scales as VL floats. QG_NC rows (QG_NC / VL panels) are
 * packed at once, so each activation tile, loaded once into L1, meets
 * them all; the pack (about 36 KiB at 16 lanes) stays in L1/L2 while every
 * row of the prompt passes over it, which pays for the packing. */
#define QG_KC 512
#define QG_NC (4 * VL)

typedef struct qg_pack {
    _Alignas(64) uint8_t v[QG_NC / VL][QG_KC / 32][8][4 * VL];
    _Alignas(64) float d[QG_NC / VL][QG_KC / 32][VL];
} qg_pack;

/* The 32 values of a Q4_0 or Q8_0 block as 4 words of 8 bytes (elements
 * 8i..8i+7 in word i), for vi_dot4: signed (q - 8, q) when VQ_SIGNED,
 * else unsigned (q, q + 128: the tile takes 8 or 128 times the
 * activations' sums away). Bytes in 64-bit words, no carry between them:
 * Q4_0's q - 8 is q ^ 8 (q - 8 mod 16) with its bit 3 spread to the high
 * nibble (a byte times 0x1E never carries). */
LINATTN_INLINE void qg_values(uint64_t out[4], const uint8_t *blk, int type)
{
    const uint64_t lo4 = 0x0F0F0F0F0F0F0F0Full, b3 = 0x0808080808080808ull;
    if (type == LINATTN_QUANT_Q4_0) {
        uint64_t p[2];
        memcpy(p, blk + 2, 16);
        for (int h = 0; h < 2; h++) {
            uint64_t lo = p[h] & lo4, hi = (p[h] >> 4) & lo4;
            if (VQ_SIGNED) {
                lo ^= b3;
                hi ^= b3;
                lo |= (lo & b3) * 0x1E;
                hi |= (hi & b3) * 0x1E;
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

/* nr (<= QG_NC) rows of W, nb blocks each from Wc, into P; the rows past
 * nr of the last panel zero (scale 0: their columns are never stored). */
static void qg_pack_rows(qg_pack *P, const uint8_t *Wc, size_t ldw, int type, size_t bb,
                         size_t nr, size_t nb)
{
    size_t panels = (nr + VL - 1) / VL;
    for (size_t j = 0; j < panels * VL; j++) {
        size_t p = j / VL, c = j % VL;
        for (size_t b = 0; b < nb; b++) {
            uint64_t q[4] = {0, 0, 0, 0};
            float d = 0.0f;
            if (j < nr) {
                const uint8_t *blk = Wc + j * ldw + b * bb;
                qg_values(q, blk, type);
                d = vhalf(blk);
            }
            for (int g = 0; g < 8; g++) {
                uint32_t w4 = (uint32_t)(q[g / 2] >> (32 * (g % 2)));
                memcpy(&P->v[p][b][g][4 * c], &w4, 4);
            }
            P->d[p][b][c] = d;
        }
    }
}

/* A tile of up to QUANT_MR activation rows, nb blocks, as the tile reads
 * it: per block the rows' 32 int8 side by side, their scales, and the
 * integer sums' starts (-off times the block's sum of q: the weights'
 * offset), so every row is a fixed displacement from one pointer. */
typedef struct qg_atile {
    _Alignas(64) int8_t q[QG_KC / 32][QUANT_MR][32];
    float d[QG_KC / 32][QUANT_MR];
    int32_t c[QG_KC / 32][QUANT_MR];
} qg_atile;

LINATTN_INLINE void qg_pack_a(qg_atile *T, const int8_t *aq, const float *ad, const int32_t *as,
                              size_t lda, int32_t off, int mr, size_t nb)
{
    const size_t lds = lda / 32;
    for (int r = 0; r < mr; r++)
        for (size_t b = 0; b < nb; b++) {
            memcpy(T->q[b][r], aq + (size_t)r * lda + 32 * b, 32);
            T->d[b][r] = ad[(size_t)r * lds + b];
            /* unsigned: no overflow on any input (a real sum is at most 32 * 127) */
            T->c[b][r] = (int32_t)(0u - (uint32_t)off * (uint32_t)as[(size_t)r * lds + b]);
        }
}

/* mr (a constant where inlined) rows of T against one panel, nb blocks:
 * per block and row the exact integer sums of VL columns (two chains of 4
 * dot products, for latency), then scaled by d_a and d_w and added into
 * fp32 sums; those onto C's nc (<= VL) columns. */
LINATTN_INLINE void qg_tile(float *C, size_t ldc, const uint8_t *v, const float *dw, size_t nb,
                            const qg_atile *T, int mr, size_t nc)
{
    vf acc[QUANT_MR];
    for (int r = 0; r < mr; r++)
        acc[r] = vzero();
    for (size_t b = 0; b < nb; b++) {
        vi w[8];
        for (int g = 0; g < 8; g++)
            w[g] = vi_load(v + (b * 8 + (size_t)g) * 4 * VL);
        vf d = vload(dw + b * VL);
#pragma GCC unroll 12
        for (int r = 0; r < mr; r++) {
            const int8_t *a = T->q[b][r];
            vi s0 = vi_set1(T->c[b][r]), s1 = vi_set1(0);
#pragma GCC unroll 4
            for (int g = 0; g < 4; g++) {
                s0 = vi_dot4(s0, w[g], a + 4 * g);
                s1 = vi_dot4(s1, w[g + 4], a + 16 + 4 * g);
            }
            acc[r] = vfma(vmul(vi_tof(vi_add(s0, s1)), vset1(T->d[b][r])), d, acc[r]);
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

/* Row tiles of QUANT_MR, then of 4, 2 and 1: constant sizes, the sums in
 * registers. Each tile packed once for all the panels. */
LINATTN_INLINE void qg_rows(float *C, size_t ldc, const qg_pack *P, size_t panels, size_t nr,
                            size_t nb, const int8_t *aq, const float *ad, const int32_t *as,
                            size_t lda, int32_t off, size_t M)
{
    const size_t lds = lda / 32;
    qg_atile T;
    size_t m0 = 0;
#define QG_ROWS(R)                                                                                 \
    for (; m0 + (R) <= M; m0 += (R)) {                                                            \
        qg_pack_a(&T, aq + m0 * lda, ad + m0 * lds, as + m0 * lds, lda, off, (R), nb);            \
        for (size_t p = 0; p < panels; p++) {                                                      \
            size_t nc = nr - p * VL < VL ? nr - p * VL : VL;                                       \
            qg_tile(C + m0 * ldc + p * VL, ldc, P->v[p][0][0], P->d[p][0], nb, &T, (R), nc);      \
        }                                                                                          \
    }
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
    const int32_t off = VQ_SIGNED ? 0 : type == LINATTN_QUANT_Q4_0 ? 8 : 128;
    for (size_t n0 = 0; n0 < N; n0 += QG_NC) {
        size_t nr = N - n0 < QG_NC ? N - n0 : QG_NC, panels = (nr + VL - 1) / VL;
        for (size_t k0 = 0; k0 < K; k0 += QG_KC) {
            size_t nb = (K - k0 < QG_KC ? K - k0 : QG_KC) / 32;
            qg_pack_rows(&P, W + n0 * ldw + k0 / 32 * bb, ldw, type, bb, nr, nb);
            qg_rows(C + n0, ldc, &P, panels, nr, nb, Aq + k0, Ad + k0 / 32, As + k0 / 32, lda,
                    off, M);
        }
    }
}
