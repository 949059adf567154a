/* gemm_neon.c: register-blocked NEON gemv and gemms (6x16 broadcast tile, dot tiles). */
#include <arm_neon.h>
#include <math.h>

#include "../kernels.h"
#include "neon.h"

/* k block: a packed 256 x 16 panel of B is 16 KiB and stays in L1 while
 * every 6-row tile of A streams past it. */
#define KC 256
#define NR 16
#define MR 6
/* Below this many rows of C, gemm_nt uses dot tiles and packs nothing. */
#define NT_DOTS_MAX_M 8
/* From this many rows of C, gemm_nn copies each B panel. */
#define NN_PACK_MIN_M 32
/* floats of A that comfortably stay in L2 (512 KiB) */
#define A_IN_L2 (128 * 1024)

/* ------------------------------------------------------------------------ */
/* gemv and dot tiles: C[i][j] += A[i,:] . B[j,:] with horizontal sums       */
/* ------------------------------------------------------------------------ */

/* rows x cols (rows <= 4, cols 4 or 1) dot products of A rows against B
 * rows, summed into out[r * ldo + c]; the A chunks stay in registers while
 * each B chunk is loaded once for all rows. */
LINATTN_INLINE void dot_tile(float *out, size_t ldo, const float *A, size_t lda, const float *B,
                             size_t ldb, size_t K, int rows, int cols)
{
    float32x4_t acc[4][4] = {{{0}}};
    size_t p = 0;
    for (; p + 4 <= K; p += 4) {
        float32x4_t a[4];
#pragma GCC unroll 4
        for (int r = 0; r < rows; r++)
            a[r] = vld1q_f32(A + r * lda + p);
#pragma GCC unroll 4
        for (int c = 0; c < cols; c++) {
            float32x4_t b = vld1q_f32(B + c * ldb + p);
#pragma GCC unroll 4
            for (int r = 0; r < rows; r++)
                acc[r][c] = vfmaq_f32(acc[r][c], a[r], b);
        }
    }
    if (p < K) {
        float32x4_t a[4];
#pragma GCC unroll 4
        for (int r = 0; r < rows; r++)
            a[r] = neon_load_tail(A + r * lda + p, K - p);
#pragma GCC unroll 4
        for (int c = 0; c < cols; c++) {
            float32x4_t b = neon_load_tail(B + c * ldb + p, K - p);
#pragma GCC unroll 4
            for (int r = 0; r < rows; r++)
                acc[r][c] = vfmaq_f32(acc[r][c], a[r], b);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) {
        float *o = out + r * ldo;
        if (cols == 4)
            vst1q_f32(o, vaddq_f32(vld1q_f32(o), neon_hsum4(acc[r][0], acc[r][1], acc[r][2],
                                                            acc[r][3])));
        else
#pragma GCC unroll 4
            for (int c = 0; c < cols; c++)
                o[c] += vaddvq_f32(acc[r][c]);
    }
}

/* y[r] = W[r,:] . x + b[r]: four rows share each x chunk; two chunks per
 * step give eight independent FMA chains. */
void linattn_gemv_neon(float *y, const float *W, size_t ldw, const float *x, const float *b,
                       size_t rows, size_t cols)
{
    size_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float *w0 = W + r * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
        float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
        float32x4_t b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        size_t p = 0;
        for (; p + 8 <= cols; p += 8) {
            float32x4_t x0 = vld1q_f32(x + p), x1 = vld1q_f32(x + p + 4);
            a0 = vfmaq_f32(a0, vld1q_f32(w0 + p), x0);
            a1 = vfmaq_f32(a1, vld1q_f32(w1 + p), x0);
            a2 = vfmaq_f32(a2, vld1q_f32(w2 + p), x0);
            a3 = vfmaq_f32(a3, vld1q_f32(w3 + p), x0);
            b0 = vfmaq_f32(b0, vld1q_f32(w0 + p + 4), x1);
            b1 = vfmaq_f32(b1, vld1q_f32(w1 + p + 4), x1);
            b2 = vfmaq_f32(b2, vld1q_f32(w2 + p + 4), x1);
            b3 = vfmaq_f32(b3, vld1q_f32(w3 + p + 4), x1);
        }
        for (; p + 4 <= cols; p += 4) {
            float32x4_t x0 = vld1q_f32(x + p);
            a0 = vfmaq_f32(a0, vld1q_f32(w0 + p), x0);
            a1 = vfmaq_f32(a1, vld1q_f32(w1 + p), x0);
            a2 = vfmaq_f32(a2, vld1q_f32(w2 + p), x0);
            a3 = vfmaq_f32(a3, vld1q_f32(w3 + p), x0);
        }
        if (p < cols) {
            float32x4_t x1 = neon_load_tail(x + p, cols - p);
            b0 = vfmaq_f32(b0, neon_load_tail(w0 + p, cols - p), x1);
            b1 = vfmaq_f32(b1, neon_load_tail(w1 + p, cols - p), x1);
            b2 = vfmaq_f32(b2, neon_load_tail(w2 + p, cols - p), x1);
            b3 = vfmaq_f32(b3, neon_load_tail(w3 + p, cols - p), x1);
        }
        float32x4_t s = neon_hsum4(vaddq_f32(a0, b0), vaddq_f32(a1, b1), vaddq_f32(a2, b2),
                                   vaddq_f32(a3, b3));
        if (b)
            s = vaddq_f32(s, vld1q_f32(b + r));
        vst1q_f32(y + r, s);
    }
    for (; r < rows; r++) {
        float t = 0.0f;
        dot_tile(&t, 0, W + r * ldw, 0, x, 0, cols, 1, 1);
        y[r] = t + (b ? b[r] : 0.0f);
    }
}

/* C rows (up to 4) += A . B[ncols rows]^T. */
static void dots_rows(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                      size_t ldb, size_t rows, size_t ncols, size_t K)
{
    switch (rows * 8 + ncols) {
    case 8 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 1, 4); break;
    case 8 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 1, 1); break;
    case 16 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 2, 4); break;
    case 16 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 2, 1); break;
    case 24 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 3, 4); break;
    case 24 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 3, 1); break;
    case 32 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 4, 4); break;
    case 32 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 4, 1); break;
    default: break;
    }
}

/* C += A . B^T by 4x4 dot tiles, columns outer so a few B rows stay in L1
 * while every row block of A passes: for small M, where packing B would
 * not be paid back. */
static void gemm_nt_dots(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                         size_t ldb, size_t M, size_t N, size_t K)
{
    for (size_t j = 0; j < N;) {
        size_t ncols = N - j >= 4 ? 4 : 1;
        for (size_t i = 0; i < M; i += 4) {
            size_t rows = M - i < 4 ? M - i : 4;
            dots_rows(C + i * ldc + j, ldc, A + i * lda, lda, B + j * ldb, ldb, rows, ncols, K);
        }
        j += ncols;
    }
}

/* ------------------------------------------------------------------------ */
/* 6x16 broadcast micro-tile over a B panel laid out [k][16]                */
/* ------------------------------------------------------------------------ */

/* C[rows x ncols] += A[rows x kc] . Bp[kc x 16] (Bp row stride ldbp):
 * 24 accumulators, four B loads and six broadcasts per k. A partial tile
 * (ncols < 16) goes through a stack copy so C past ncols is not touched. */
LINATTN_INLINE void tile_6x16(float *C, size_t ldc, const float *A, size_t lda,
                              const float *Bp, size_t ldbp, size_t kc, int rows, size_t ncols)
{
    float32x4_t c[MR][4] = {{{0}}};
    /* C is read only after the k loop: fetch it now so that read does not stall */
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        __builtin_prefetch(C + r * ldc);
        __builtin_prefetch(C + r * ldc + 15);
    }
    for (size_t p = 0; p < kc; p++) {
        const float *bp = Bp + p * ldbp;
        float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4);
        float32x4_t b2 = vld1q_f32(bp + 8), b3 = vld1q_f32(bp + 12);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            float32x4_t a = vld1q_dup_f32(A + r * lda + p);
            c[r][0] = vfmaq_f32(c[r][0], a, b0);
            c[r][1] = vfmaq_f32(c[r][1], a, b1);
            c[r][2] = vfmaq_f32(c[r][2], a, b2);
            c[r][3] = vfmaq_f32(c[r][3], a, b3);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        float *cr = C + r * ldc;
        if (ncols == NR) {
            for (int q = 0; q < 4; q++)
                vst1q_f32(cr + 4 * q, vaddq_f32(vld1q_f32(cr + 4 * q), c[r][q]));
        } else {
            float t[NR];
            for (int q = 0; q < 4; q++)
                vst1q_f32(t + 4 * q, c[r][q]);
            for (size_t j = 0; j < ncols; j++)
                cr[j] += t[j];
        }
    }
}

/* All M rows of C against one panel: C[M x ncols] += A[M x kc] . Bp[kc x 16]. */
static void panel_rows(float *C, size_t ldc, const float *A, size_t lda, const float *Bp,
                       size_t ldbp, size_t M, size_t kc, size_t ncols)
{
    size_t i = 0;
    for (; i + MR <= M; i += MR)
        tile_6x16(C + i * ldc, ldc, A + i * lda, lda, Bp, ldbp, kc, 6, ncols);
    float *c = C + i * ldc;
    const float *a = A + i * lda;
    switch (M - i) {
    case 5: tile_6x16(c, ldc, a, lda, Bp, ldbp, kc, 5, ncols); break;
    case 4: tile_6x16(c, ldc, a, lda, Bp, ldbp, kc, 4, ncols); break;
    case 3: tile_6x16(c, ldc, a, lda, Bp, ldbp, kc, 3, ncols); break;
    case 2: tile_6x16(c, ldc, a, lda, Bp, ldbp, kc, 2, ncols); break;
    case 1: tile_6x16(c, ldc, a, lda, Bp, ldbp, kc, 1, ncols); break;
    default: break;
    }
}

/* Bp[p][j] = B[j][p] for j < nrows, 0 for nrows <= j < 16; full 4x4 blocks
 * are transposed in registers, the edges element by element. */
static void pack_bt(float *Bp, const float *B, size_t ldb, size_t nrows, size_t kc)
{
    size_t p4 = kc & ~(size_t)3;
    for (size_t j0 = 0; j0 < NR; j0 += 4) {
        if (j0 + 4 <= nrows) {
            const float *b = B + j0 * ldb;
            for (size_t p = 0; p < p4; p += 4) {
                float32x4_t r0 = vld1q_f32(b + p), r1 = vld1q_f32(b + ldb + p);
                float32x4_t r2 = vld1q_f32(b + 2 * ldb + p), r3 = vld1q_f32(b + 3 * ldb + p);
                float32x4_t t0 = vtrn1q_f32(r0, r1), t1 = vtrn2q_f32(r0, r1);
                float32x4_t t2 = vtrn1q_f32(r2, r3), t3 = vtrn2q_f32(r2, r3);
                float64x2_t u0 = vreinterpretq_f64_f32(t0), u1 = vreinterpretq_f64_f32(t1);
                float64x2_t u2 = vreinterpretq_f64_f32(t2), u3 = vreinterpretq_f64_f32(t3);
                vst1q_f32(Bp + (p + 0) * NR + j0, vreinterpretq_f32_f64(vtrn1q_f64(u0, u2)));
                vst1q_f32(Bp + (p + 1) * NR + j0, vreinterpretq_f32_f64(vtrn1q_f64(u1, u3)));
                vst1q_f32(Bp + (p + 2) * NR + j0, vreinterpretq_f32_f64(vtrn2q_f64(u0, u2)));
                vst1q_f32(Bp + (p + 3) * NR + j0, vreinterpretq_f32_f64(vtrn2q_f64(u1, u3)));
            }
            for (size_t p = p4; p < kc; p++)
                for (size_t j = 0; j < 4; j++)
                    Bp[p * NR + j0 + j] = b[j * ldb + p];
        } else {
            for (size_t p = 0; p < kc; p++)
                for (size_t j = j0; j < j0 + 4; j++)
                    Bp[p * NR + j] = j < nrows ? B[j * ldb + p] : 0.0f;
        }
    }
}

/* Bp[p][j] = B[p][j] for j < ncols, 0 past them: a contiguous copy of a
 * gemm_nn panel, zero-padded at the right edge. */
static void pack_bn(float *Bp, const float *B, size_t ldb, size_t ncols, size_t kc)
{
    if (ncols == NR) {
        for (size_t p = 0; p < kc; p++)
            for (size_t q = 0; q < NR; q += 4)
                vst1q_f32(Bp + p * NR + q, vld1q_f32(B + p * ldb + q));
        return;
    }
    for (size_t p = 0; p < kc; p++)
        for (size_t j = 0; j < NR; j++)
            Bp[p * NR + j] = j < ncols ? B[p * ldb + j] : 0.0f;
}

/* c[0, 4 nc) += sum_p a[p] B[p, 0..4 nc): one row of C in registers, each
 * row of B read start to end. */
LINATTN_INLINE void row_block(float *c, const float *a, const float *B, size_t ldb, size_t K,
                              int nc)
{
    float32x4_t acc[16] = {0};
    for (size_t p = 0; p < K; p++) {
        const float *b = B + p * ldb;
#pragma GCC unroll 16
        for (int q = 0; q < nc; q++)
            acc[q] = vfmaq_n_f32(acc[q], vld1q_f32(b + 4 * q), a[p]);
    }
#pragma GCC unroll 16
    for (int q = 0; q < nc; q++)
        vst1q_f32(c + 4 * q, vaddq_f32(vld1q_f32(c + 4 * q), acc[q]));
}

/* One row of A (decode: one query's probabilities times V): blocks of up to
 * 64 columns so B streams row by row; the last N % 4 columns as dots. */
static void gemm_nn_row(float *c, const float *a, const float *B, size_t ldb, size_t N, size_t K)
{
    size_t full = N & ~(size_t)3;
    for (size_t j = 0; j < full; j += 64) {
        size_t nc = (full - j < 64 ? full - j : 64) / 4;
        const float *b = B + j;
        switch (nc) {
        case 1: row_block(c + j, a, b, ldb, K, 1); break;
        case 2: row_block(c + j, a, b, ldb, K, 2); break;
        case 3: row_block(c + j, a, b, ldb, K, 3); break;
        case 4: row_block(c + j, a, b, ldb, K, 4); break;
        case 5: row_block(c + j, a, b, ldb, K, 5); break;
        case 6: row_block(c + j, a, b, ldb, K, 6); break;
        case 7: row_block(c + j, a, b, ldb, K, 7); break;
        case 8: row_block(c + j, a, b, ldb, K, 8); break;
        case 9: row_block(c + j, a, b, ldb, K, 9); break;
        case 10: row_block(c + j, a, b, ldb, K, 10); break;
        case 11: row_block(c + j, a, b, ldb, K, 11); break;
        case 12: row_block(c + j, a, b, ldb, K, 12); break;
        case 13: row_block(c + j, a, b, ldb, K, 13); break;
        case 14: row_block(c + j, a, b, ldb, K, 14); break;
        case 15: row_block(c + j, a, b, ldb, K, 15); break;
        case 16: row_block(c + j, a, b, ldb, K, 16); break;
        default: break;
        }
    }
    for (size_t j = full; j < N; j++) {
        float s = 0.0f;
        for (size_t p = 0; p < K; p++)
            s = fmaf(a[p], B[p * ldb + j], s);
        c[j] += s;
    }
}

void linattn_gemm_nt_neon(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                          size_t ldb, size_t M, size_t N, size_t K)
{
    if (M == 0 || N == 0 || K == 0)
        return;
    if (M < NT_DOTS_MAX_M) {
        gemm_nt_dots(C, ldc, A, lda, B, ldb, M, N, K);
        return;
    }
    _Alignas(16) float Bp[KC * NR];
    if (M * K <= A_IN_L2) {
        /* All of A stays in L2: walk each panel's B rows start to end, so
         * the hardware prefetcher streams them from memory. */
        for (size_t j0 = 0; j0 < N; j0 += NR) {
            size_t nc = N - j0 < NR ? N - j0 : NR;
            for (size_t k0 = 0; k0 < K; k0 += KC) {
                size_t kc = K - k0 < KC ? K - k0 : KC;
                pack_bt(Bp, B + j0 * ldb + k0, ldb, nc, kc);
                panel_rows(C + j0, ldc, A + k0, lda, Bp, NR, M, kc, nc);
            }
        }
        return;
    }
    /* A k-block of A (M x KC) stays in L2 while all panels pass. */
    for (size_t k0 = 0; k0 < K; k0 += KC) {
        size_t kc = K - k0 < KC ? K - k0 : KC;
        for (size_t j0 = 0; j0 < N; j0 += NR) {
            size_t nc = N - j0 < NR ? N - j0 : NR;
            pack_bt(Bp, B + j0 * ldb + k0, ldb, nc, kc);
            panel_rows(C + j0, ldc, A + k0, lda, Bp, NR, M, kc, nc);
        }
    }
}

/* B rows are already contiguous in n, but a panel read in place strides by
 * ldb, and a power-of-two ldb puts all its rows in a few cache sets: with
 * many rows of C the panel is copied (once per 16 columns, for all rows). */
void linattn_gemm_nn_neon(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                          size_t ldb, size_t M, size_t N, size_t K)
{
    if (M == 0 || N == 0 || K == 0)
        return;
    if (M == 1) {
        gemm_nn_row(C, A, B, ldb, N, K);
        return;
    }
    _Alignas(16) float Bp[KC * NR];
    for (size_t k0 = 0; k0 < K; k0 += KC) {
        size_t kc = K - k0 < KC ? K - k0 : KC;
        for (size_t j0 = 0; j0 < N; j0 += NR) {
            size_t nc = N - j0 < NR ? N - j0 : NR;
            const float *b = B + k0 * ldb + j0;
            if (nc == NR && M < NN_PACK_MIN_M) {
                panel_rows(C + j0, ldc, A + k0, lda, b, ldb, M, kc, nc);
            } else {
                pack_bn(Bp, b, ldb, nc, kc);
                panel_rows(C + j0, ldc, A + k0, lda, Bp, NR, M, kc, nc);
            }
        }
    }
}
