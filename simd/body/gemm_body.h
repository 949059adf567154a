/* gemm_body.h: gemv and the gemms, written once: blocking, packing and tails here, over a vector
 * vocabulary (vec_*.h) and its micro-tile height GEMM_MR; included after kernels_body.h. gemv and
 * gemm_nt also take fp16/bf16 weights (converted in registers or while packing). */

#include "../kernels.h"

#if !defined(VL) || !defined(GEMM_MR) || !defined(TB)
#error "include a vector vocabulary (vec_*.h) and kernels_body.h before gemm_body.h"
#endif

/* A B panel is NR = 2 vectors wide (8 floats in NEON, 16 in AVX2, 32 in
 * AVX-512); a k block of it, KC x NR, stays in L1 (8, 16 or 32 KiB) while
 * every GEMM_MR-row tile of A streams past it. */
#define KC 256
#define NR (2 * VL)
_Static_assert(GEMM_MR >= 6 && GEMM_MR <= 12, "panel_rows has remainder cases for 6 to 12 rows");
_Static_assert(NR % TB == 0, "pack_bt fills a panel in whole TB-wide blocks");
/* Measured (AVX2, Sapphire Rapids): below 64 rows of C, gemm_nt's dot tiles
 * are as fast as packing B or faster; at 64 (the flash-attention score
 * tile) the packed tile wins by about 10%. The other ISAs take the same
 * limits (not measured on Arm hardware). */
#define NT_DOTS_MAX_M 64
/* From 32 rows of C, gemm_nn's copy of each B panel pays for itself. */
#define NN_PACK_MIN_M 32
/* Floats of A that comfortably stay in L2 (512 KiB). */
#define A_IN_L2 (128 * 1024)

/* ------------------------------------------------------------------------ */
/* gemv and dot tiles: C[i][j] += A[i,:] . B[j,:] with horizontal sums       */
/* ------------------------------------------------------------------------ */

/* What the weight operand (gemv's W, gemm_nt's B) holds: one body serves
 * fp32, half and bfloat16 weights. The type is a constant in each kernel,
 * so these fold to one load (and convert) per vector. */
enum { WT_F32, WT_F16, WT_BF16 };

LINATTN_INLINE vf wload(const void *W, size_t i, int wt)
{
    if (wt == WT_F16)
        return vload_f16((const uint16_t *)W + i);
    if (wt == WT_BF16)
        return vload_bf16((const uint16_t *)W + i);
    return vload((const float *)W + i);
}

LINATTN_INLINE vf wload_m(const void *W, size_t i, vmask m, int wt)
{
    if (wt == WT_F16)
        return vload_f16_m((const uint16_t *)W + i, m);
    if (wt == WT_BF16)
        return vload_bf16_m((const uint16_t *)W + i, m);
    return vload_m((const float *)W + i, m);
}

/* dst[0..n) = W[i..i + n) as floats (exactly). */
LINATTN_INLINE void w_to_f32(float *dst, const void *W, size_t i, size_t n, int wt)
{
    size_t p = 0;
    for (; p + VL <= n; p += VL)
        vstore(dst + p, wload(W, i + p, wt));
    if (p < n) {
        vmask m = vmask_n(n - p);
        vstore_m(dst + p, wload_m(W, i + p, m, wt), m);
    }
}

/* &W[i] */
LINATTN_INLINE const void *wptr(const void *W, size_t i, int wt)
{
    return (const char *)W + i * (wt == WT_F32 ? sizeof(float) : sizeof(uint16_t));
}

/* rows x cols dot products of A rows against B rows (both contiguous in k;
 * B of weight type wt), summed into out[r * ldo + c]. Each A chunk is held
 * in a register while each B chunk is loaded once and hits all rows:
 * rows + 1 loads per rows * cols FMAs. rows * cols <= 12, cols a multiple
 * of 4 or 1..4. */
LINATTN_INLINE void dot_tile(float *out, size_t ldo, const float *A, size_t lda, const void *B,
                             size_t ldb, size_t K, int rows, int cols, int wt)
{
    vf acc[3][8];
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 8
        for (int c = 0; c < cols; c++)
            acc[r][c] = vzero();
    size_t p = 0;
    for (; p + VL <= K; p += VL) {
        vf a[3];
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++)
            a[r] = vload(A + r * lda + p);
#pragma GCC unroll 8
        for (int c = 0; c < cols; c++) {
            vf b = vpin(wload(B, c * ldb + p, wt)); /* one load for the rows */
#pragma GCC unroll 8
            for (int r = 0; r < rows; r++)
                acc[r][c] = vfma(a[r], b, acc[r][c]);
        }
    }
    if (p < K) {
        vmask m = vmask_n(K - p);
        vf a[3];
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++)
            a[r] = vload_m(A + r * lda + p, m);
#pragma GCC unroll 8
        for (int c = 0; c < cols; c++) {
            vf b = wload_m(B, c * ldb + p, m, wt);
#pragma GCC unroll 8
            for (int r = 0; r < rows; r++)
                acc[r][c] = vfma(a[r], b, acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c + 4 <= cols; c += 4)
            vhsum4_add(out + r * ldo + c, acc[r][c], acc[r][c + 1], acc[r][c + 2],
                       acc[r][c + 3]);
        if (cols < 4)
#pragma GCC unroll 8
            for (int c = 0; c < cols; c++)
                out[r * ldo + c] += vhsum(acc[r][c]);
    }
}

/* y[r] = W[r,:] . x + b[r]: four rows share each x chunk; two chunks per
 * step give eight independent FMA chains. W of weight type wt. */
LINATTN_INLINE void gemv_w(float *y, const void *W, size_t ldw, const float *x, const float *b,
                           size_t rows, size_t cols, int wt)
{
    size_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const size_t w0 = r * ldw, w1 = w0 + ldw, w2 = w1 + ldw, w3 = w2 + ldw;
        vf a0 = vzero(), a1 = a0, a2 = a0, a3 = a0;
        vf b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        size_t p = 0;
        /* The next 4 rows are fetched while these stream (a line of each
         * per step of half weights, two of fp32): the hardware prefetcher
         * alone leaves the core waiting. Measured here (Zen 5), one core:
         * 64 MB of F16 rows 4.1 -> 3.5 ms; whole-model fp32 decode, 97 MiB
         * of weights a token, 4.1 -> 2.7 ms (AVX-512), 3.6 -> 3.0 ms (AVX2),
         * and x1.34 on two threads (llama2.c's 42M shape). Fetching 8 rows
         * ahead instead of 4 was 10% slower. */
        const size_t es = wt == WT_F32 ? sizeof(float) : sizeof(uint16_t);
        for (; p + 2 * VL <= cols; p += 2 * VL) {
            if (r + 8 <= rows)
                for (size_t o = 0; o < 2 * VL * es; o += 64)
                    for (size_t q = 4; q < 8; q++)
                        vprefetch((const float *)(const void *)((const char *)W +
                                                                ((r + q) * ldw + p) * es + o));
            vf x0 = vload(x + p), x1 = vload(x + p + VL);
            a0 = vfma(wload(W, w0 + p, wt), x0, a0);
            a1 = vfma(wload(W, w1 + p, wt), x0, a1);
            a2 = vfma(wload(W, w2 + p, wt), x0, a2);
            a3 = vfma(wload(W, w3 + p, wt), x0, a3);
            b0 = vfma(wload(W, w0 + p + VL, wt), x1, b0);
            b1 = vfma(wload(W, w1 + p + VL, wt), x1, b1);
            b2 = vfma(wload(W, w2 + p + VL, wt), x1, b2);
            b3 = vfma(wload(W, w3 + p + VL, wt), x1, b3);
        }
        for (; p + VL <= cols; p += VL) {
            vf x0 = vload(x + p);
            a0 = vfma(wload(W, w0 + p, wt), x0, a0);
            a1 = vfma(wload(W, w1 + p, wt), x0, a1);
            a2 = vfma(wload(W, w2 + p, wt), x0, a2);
            a3 = vfma(wload(W, w3 + p, wt), x0, a3);
        }
        if (p < cols) {
            vmask m = vmask_n(cols - p);
            vf x1 = vload_m(x + p, m);
            b0 = vfma(wload_m(W, w0 + p, m, wt), x1, b0);
            b1 = vfma(wload_m(W, w1 + p, m, wt), x1, b1);
            b2 = vfma(wload_m(W, w2 + p, m, wt), x1, b2);
            b3 = vfma(wload_m(W, w3 + p, m, wt), x1, b3);
        }
        float s[4] = {0, 0, 0, 0};
        vhsum4_add(s, vadd(a0, b0), vadd(a1, b1), vadd(a2, b2), vadd(a3, b3));
        for (int q = 0; q < 4; q++)
            y[r + q] = s[q] + (b ? b[r + q] : 0.0f);
    }
    for (; r < rows; r++) {
        float t = 0.0f;
        dot_tile(&t, 0, x, 0, wptr(W, r * ldw, wt), 0, cols, 1, 1, wt);
        y[r] = t + (b ? b[r] : 0.0f);
    }
}

void FN(gemv)(float *y, const float *W, size_t ldw, const float *x, const float *b, size_t rows,
              size_t cols)
{
    gemv_w(y, W, ldw, x, b, rows, cols, WT_F32);
}

void FN(gemv_f16)(float *y, const uint16_t *W, size_t ldw, const float *x, const float *b,
                  size_t rows, size_t cols)
{
    gemv_w(y, W, ldw, x, b, rows, cols, WT_F16);
}

void FN(gemv_bf16)(float *y, const uint16_t *W, size_t ldw, const float *x, const float *b,
                   size_t rows, size_t cols)
{
    gemv_w(y, W, ldw, x, b, rows, cols, WT_BF16);
}

/* C rows i0.. (3 of them, or the rows that remain) += A . B[j0..j0+ncols)^T. */
LINATTN_INLINE void dots_rows(float *C, size_t ldc, const float *A, size_t lda, const void *B,
                              size_t ldb, size_t rows, size_t ncols, size_t K, int wt)
{
    switch (rows * 8 + (ncols == 4 ? 4 : ncols == 8 ? 0 : 1)) {
    case 8 + 0: dot_tile(C, ldc, A, lda, B, ldb, K, 1, 8, wt); break;
    case 8 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 1, 4, wt); break;
    case 8 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 1, 1, wt); break;
    case 16 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 2, 4, wt); break;
    case 16 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 2, 1, wt); break;
    case 24 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 3, 4, wt); break;
    case 24 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 3, 1, wt); break;
    default: break;
    }
}

/* Floats of half B rows gemm_nt_dots converts once for all its row
 * blocks (a 4-row strip of K up to 2048: 32 KiB of stack, in L1). */
#define DOTS_STRIP (4 * 2048)
/* From how many rows the strip pays (measured, Sapphire Rapids-class Xeon,
 * K 256 and 1024: AVX-512 gains from 4 rows; AVX2, whose conversion is
 * one cheap instruction, loses 6-13% at 4 and 8 rows and gains from 12;
 * NEON takes its register count's rule, not measured on Arm hardware). */
#define DOTS_STRIP_MIN_M (VREGS >= 32 ? 4 : 12)

/* Lines [q0, q1) of the next strip: rows B (stride ldb elements of esz
 * bytes), `lines` cache lines a row. */
LINATTN_INLINE void prefetch_lines(const void *B, size_t ldb, size_t esz, size_t lines,
                                   size_t q0, size_t q1)
{
    if (q0 >= q1)
        return;
    /* one division for the run, not one a line (a divq each cost about as
     * much as the line's share of the tile's FMAs) */
    size_t r = q0 / lines, l = q0 % lines;
    const char *row = (const char *)B + r * ldb * esz;
    for (size_t q = q0; q < q1; q++) {
        vprefetch((const float *)(const void *)(row + l * 64));
        if (++l == lines) {
            l = 0;
            row += ldb * esz;
        }
    }
}

/* C += A . B^T by dot tiles (3x4; 1x8 when M = 1), for M < NT_DOTS_MAX_M:
 * no packing at all. Columns outer: a few B rows stay in L1 while every
 * row block of A passes, so B is read from memory once. Half weights
 * against more than one row block are converted once per strip into
 * floats (exactly: the same bits as converting in registers), since in
 * registers each row block would convert them again: at 32 rows, the 11
 * conversions of each B vector took the port the FMAs need (AVX-512,
 * 32 x 1024 x 256: 110 GFLOP/s against fp32's 164; 156 with the strip).
 * Each row block also fetches a share of the next strip's lines: only the
 * first block reads a strip from memory, the hardware prefetcher does not
 * run ahead of that burst, and the core waited on it (sessions_step, 15M
 * llama2.c shape, 32 streams, the LM head 37 MB of fp32 a step: 1.65k ->
 * 1.92k tokens/s, AVX2 1.32k -> 1.68k; two strips ahead was no better). */
LINATTN_INLINE void gemm_nt_dots(float *C, size_t ldc, const float *A, size_t lda, const void *B,
                                 size_t ldb, size_t M, size_t N, size_t K, int wt, float *S)
{
    size_t step = M == 1 ? 8 : 4;
    const int strip = S != NULL; /* then wt is a half type, M > 1, 4 K <= DOTS_STRIP */
    for (size_t j = 0; j < N;) {
        size_t ncols = N - j >= step ? step : N - j >= 4 ? 4 : 1;
        const void *b = wptr(B, j * ldb, wt);
        size_t ldbs = ldb;
        if (strip) {
            for (size_t c = 0; c < ncols; c++)
                w_to_f32(S + c * K, b, c * ldb, K, wt);
            b = S;
            ldbs = K;
        }
        const size_t esz = wt == WT_F32 ? sizeof(float) : sizeof(uint16_t);
        const size_t lines = (K * esz + 63) / 64;
        const size_t all = M > 3 && j + 2 * step <= N ? step * lines : 0;
        const size_t per = (all + (M + 2) / 3 - 1) / ((M + 2) / 3);
        const void *next = wptr(B, (j + step) * ldb, wt);
        for (size_t i = 0, q = 0; i < M; i += 3, q += per) {
            size_t rows = M - i < 3 ? M - i : 3;
            prefetch_lines(next, ldb, esz, lines, q < all ? q : all, q + per < all ? q + per : all);
            if (strip)
                dots_rows(C + i * ldc + j, ldc, A + i * lda, lda, b, ldbs, rows, ncols, K,
                          WT_F32);
            else
                dots_rows(C + i * ldc + j, ldc, A + i * lda, lda, b, ldbs, rows, ncols, K, wt);
        }
        j += ncols;
    }
}

/* ------------------------------------------------------------------------ */
/* The micro-tile: rows x NR of C over a B panel laid out [k][NR]           */
/* ------------------------------------------------------------------------ */

/* A's element (i, p): A[i lda + p], or A[p lda + i] when at (A stored
 * transposed, gemm_tn). at is a constant in every copy. */
LINATTN_INLINE const float *a_elem(const float *A, size_t lda, size_t i, size_t p, int at)
{
    return at ? A + p * lda + i : A + i * lda + p;
}

/* C[rows x NR] += A[rows x kc] . Bp[kc x NR] (Bp row stride ldbp): 2 rows
 * accumulators, two B loads and rows broadcasts per k. Only the first
 * ncols columns of C are touched (masks ml, mh). The k-term sums are
 * formed in registers and added to C once (the gemm_nn contract). */
LINATTN_INLINE void tile(float *C, size_t ldc, const float *A, size_t lda, const float *Bp,
                         size_t ldbp, size_t kc, int rows, int full, vmask ml, vmask mh, int at)
{
    vf c0[GEMM_MR], c1[GEMM_MR];
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++) {
        c0[r] = vzero();
        c1[r] = vzero();
        /* C is read only after the k loop: fetch it now so that read does not stall */
        vprefetch(C + r * ldc);
        vprefetch(C + r * ldc + NR - 1);
    }
    for (size_t p = 0; p < kc; p++) {
        vf b0 = vload(Bp + p * ldbp);
        vf b1 = vload(Bp + p * ldbp + VL);
#pragma GCC unroll 16
        for (int r = 0; r < rows; r++) {
            vf a = vbcast(a_elem(A, lda, (size_t)r, p, at));
            c0[r] = vfma(a, b0, c0[r]);
            c1[r] = vfma(a, b1, c1[r]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < rows; r++) {
        float *c = C + r * ldc;
        if (full) {
            vstore(c, vadd(vload(c), c0[r]));
            vstore(c + VL, vadd(vload(c + VL), c1[r]));
        } else {
            vstore_m(c, vadd(vload_m(c, ml), c0[r]), ml);
            vstore_m(c + VL, vadd(vload_m(c + VL, mh), c1[r]), mh);
        }
    }
}

/* Few rows leave few independent accumulators; two k-parities double them
 * so the FMA latency stays hidden. */
LINATTN_INLINE void tile_small(float *C, size_t ldc, const float *A, size_t lda, const float *Bp,
                               size_t ldbp, size_t kc, int rows, int full, vmask ml, vmask mh,
                               int at)
{
    vf c0[3], c1[3], d0[3], d1[3];
#pragma GCC unroll 3
    for (int r = 0; r < rows; r++)
        c0[r] = c1[r] = d0[r] = d1[r] = vzero();
    size_t p = 0;
    for (; p + 2 <= kc; p += 2) {
        const float *bp = Bp + p * ldbp;
        vf b0 = vload(bp), b1 = vload(bp + VL);
        vf e0 = vload(bp + ldbp), e1 = vload(bp + ldbp + VL);
#pragma GCC unroll 3
        for (int r = 0; r < rows; r++) {
            vf a = vbcast(a_elem(A, lda, (size_t)r, p, at));
            vf a2 = vbcast(a_elem(A, lda, (size_t)r, p + 1, at));
            c0[r] = vfma(a, b0, c0[r]);
            c1[r] = vfma(a, b1, c1[r]);
            d0[r] = vfma(a2, e0, d0[r]);
            d1[r] = vfma(a2, e1, d1[r]);
        }
    }
    if (p < kc) {
        vf b0 = vload(Bp + p * ldbp), b1 = vload(Bp + p * ldbp + VL);
#pragma GCC unroll 3
        for (int r = 0; r < rows; r++) {
            vf a = vbcast(a_elem(A, lda, (size_t)r, p, at));
            c0[r] = vfma(a, b0, c0[r]);
            c1[r] = vfma(a, b1, c1[r]);
        }
    }
#pragma GCC unroll 3
    for (int r = 0; r < rows; r++) {
        float *c = C + r * ldc;
        vf s0 = vadd(c0[r], d0[r]), s1 = vadd(c1[r], d1[r]);
        if (full) {
            vstore(c, vadd(vload(c), s0));
            vstore(c + VL, vadd(vload(c + VL), s1));
        } else {
            vstore_m(c, vadd(vload_m(c, ml), s0), ml);
            vstore_m(c + VL, vadd(vload_m(c + VL, mh), s1), mh);
        }
    }
}

/* All M rows of C against one panel: C[M x ncols] += A[M x kc] . Bp[kc x NR]
 * (A transposed when at). */
LINATTN_INLINE void panel_rows_any(float *C, size_t ldc, const float *A, size_t lda,
                                   const float *Bp, size_t ldbp, size_t M, size_t kc,
                                   size_t ncols, int at)
{
    int full = ncols == NR;
    vmask ml = vmask_n(ncols < VL ? ncols : VL);
    vmask mh = vmask_n(ncols > VL ? ncols - VL : 0);
    size_t i = 0;
    for (; i + GEMM_MR <= M; i += GEMM_MR)
        tile(C + i * ldc, ldc, a_elem(A, lda, i, 0, at), lda, Bp, ldbp, kc, GEMM_MR, full, ml, mh,
             at);
    float *c = C + i * ldc;
    const float *a = a_elem(A, lda, i, 0, at);
#define TILE(rows) tile(c, ldc, a, lda, Bp, ldbp, kc, rows, full, ml, mh, at)
    /* one case for every remainder below GEMM_MR (and none above: a tile
     * of more rows would overrun its accumulator arrays) */
    switch (M - i) {
#if GEMM_MR > 11
    case 11: TILE(11); break;
#endif
#if GEMM_MR > 10
    case 10: TILE(10); break;
#endif
#if GEMM_MR > 9
    case 9: TILE(9); break;
#endif
#if GEMM_MR > 8
    case 8: TILE(8); break;
#endif
#if GEMM_MR > 7
    case 7: TILE(7); break;
#endif
#if GEMM_MR > 6
    case 6: TILE(6); break;
#endif
    case 5: TILE(5); break;
    case 4: TILE(4); break;
    case 3: tile_small(c, ldc, a, lda, Bp, ldbp, kc, 3, full, ml, mh, at); break;
    case 2: tile_small(c, ldc, a, lda, Bp, ldbp, kc, 2, full, ml, mh, at); break;
    case 1: tile_small(c, ldc, a, lda, Bp, ldbp, kc, 1, full, ml, mh, at); break;
    default: break;
    }
#undef TILE
}

static void panel_rows(float *C, size_t ldc, const float *A, size_t lda, const float *Bp,
                       size_t ldbp, size_t M, size_t kc, size_t ncols)
{
    panel_rows_any(C, ldc, A, lda, Bp, ldbp, M, kc, ncols, 0);
}

static void panel_rows_tn(float *C, size_t ldc, const float *A, size_t lda, const float *Bp,
                          size_t ldbp, size_t M, size_t kc, size_t ncols)
{
    panel_rows_any(C, ldc, A, lda, Bp, ldbp, M, kc, ncols, 1);
}

/* Bp[p][j] = B[j][p] for j < nrows (B rows of length kc, stride ldb), 0 for
 * nrows <= j < NR; TB x TB blocks transposed in registers by the vocabulary
 * (w x h at the edges). */
static void pack_bt(float *Bp, const float *B, size_t ldb, size_t nrows, size_t kc)
{
    for (size_t j0 = 0; j0 < NR; j0 += TB) {
        size_t h = nrows <= j0 ? 0 : nrows - j0 < TB ? nrows - j0 : TB;
        for (size_t p = 0; p < kc; p += TB) {
            size_t w = kc - p < TB ? kc - p : TB;
            vtranspose_block(Bp + p * NR + j0, NR, B + j0 * ldb + p, ldb, h, w);
        }
    }
}

/* Bp[p][j] = B[p][j] for j < ncols, 0 past them: a contiguous copy of a
 * gemm_nn panel, zero-padded at the right edge. */
static void pack_bn(float *Bp, const float *B, size_t ldb, size_t ncols, size_t kc)
{
    if (ncols == NR) {
        for (size_t p = 0; p < kc; p++) {
            vstore(Bp + p * NR, vload(B + p * ldb));
            vstore(Bp + p * NR + VL, vload(B + p * ldb + VL));
        }
        return;
    }
    vmask ml = vmask_n(ncols < VL ? ncols : VL);
    vmask mh = vmask_n(ncols > VL ? ncols - VL : 0);
    for (size_t p = 0; p < kc; p++) {
        vstore(Bp + p * NR, vload_m(B + p * ldb, ml));
        vstore(Bp + p * NR + VL, vload_m(B + p * ldb + VL, mh));
    }
}

/* pack_bt for B of weight type wt: the strip's rows converted to floats
 * (exactly, whole vectors) into S, then packed like fp32 rows. */
LINATTN_INLINE void pack_bt_w(float *Bp, const void *B, size_t ldb, size_t nrows, size_t kc,
                              int wt)
{
    if (wt == WT_F32) {
        pack_bt(Bp, B, ldb, nrows, kc);
        return;
    }
    _Alignas(64) float S[NR * KC];
    for (size_t j = 0; j < nrows; j++)
        w_to_f32(S + j * KC, B, j * ldb, kc, wt);
    pack_bt(Bp, S, KC, nrows, kc);
}

LINATTN_INLINE void gemm_nt_w(float *C, size_t ldc, const float *A, size_t lda, const void *B,
                              size_t ldb, size_t M, size_t N, size_t K, int wt)
{
    if (M == 0 || N == 0 || K == 0)
        return;
    if (M < NT_DOTS_MAX_M) {
        if (wt != WT_F32 && M >= DOTS_STRIP_MIN_M && 4 * K <= DOTS_STRIP) {
            _Alignas(64) float S[DOTS_STRIP];
            gemm_nt_dots(C, ldc, A, lda, B, ldb, M, N, K, wt, S);
        } else
            gemm_nt_dots(C, ldc, A, lda, B, ldb, M, N, K, wt, NULL);
        return;
    }
    _Alignas(64) float Bp[KC * NR];
    if (M * K <= A_IN_L2) {
        /* All of A stays in L2: walk each panel's B rows start to end, so
         * the hardware prefetcher streams them from memory. */
        for (size_t j0 = 0; j0 < N; j0 += NR) {
            size_t nc = N - j0 < NR ? N - j0 : NR;
            for (size_t k0 = 0; k0 < K; k0 += KC) {
                size_t kc = K - k0 < KC ? K - k0 : KC;
                pack_bt_w(Bp, wptr(B, j0 * ldb + k0, wt), ldb, nc, kc, wt);
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
            pack_bt_w(Bp, wptr(B, j0 * ldb + k0, wt), ldb, nc, kc, wt);
            panel_rows(C + j0, ldc, A + k0, lda, Bp, NR, M, kc, nc);
        }
    }
}

void FN(gemm_nt)(float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb,
                 size_t M, size_t N, size_t K)
{
    gemm_nt_w(C, ldc, A, lda, B, ldb, M, N, K, WT_F32);
}

void FN(gemm_nt_f16)(float *C, size_t ldc, const float *A, size_t lda, const uint16_t *B,
                     size_t ldb, size_t M, size_t N, size_t K)
{
    gemm_nt_w(C, ldc, A, lda, B, ldb, M, N, K, WT_F16);
}

void FN(gemm_nt_bf16)(float *C, size_t ldc, const float *A, size_t lda, const uint16_t *B,
                      size_t ldb, size_t M, size_t N, size_t K)
{
    gemm_nt_w(C, ldc, A, lda, B, ldb, M, N, K, WT_BF16);
}

/* c[0, VL nc) += sum_p a[p] B[p, 0..VL nc): one row of C in registers (the
 * last chunk masked when tail), each row of B (of weight type wt) read
 * start to end. */
LINATTN_INLINE void row_block(float *c, const float *a, const void *B, size_t ldb, size_t K,
                              int nc, int tail, vmask tm, int wt)
{
    vf acc[8];
#pragma GCC unroll 8
    for (int q = 0; q < nc; q++)
        acc[q] = vzero();
    for (size_t p = 0; p < K; p++) {
        vf ap = vbcast(a + p);
        size_t b = p * ldb;
#pragma GCC unroll 8
        for (int q = 0; q < nc; q++) {
            vf bq = tail && q == nc - 1 ? wload_m(B, b + VL * q, tm, wt) : wload(B, b + VL * q, wt);
            acc[q] = vfma(ap, bq, acc[q]);
        }
    }
#pragma GCC unroll 8
    for (int q = 0; q < nc; q++) {
        int mk = tail && q == nc - 1;
        store_chunk(c + VL * q, vadd(load_chunk(c + VL * q, mk, tm), acc[q]), mk, tm);
    }
}

/* One row of A (decode: one query's probabilities times V): blocks of up to
 * 8 vectors of columns, so B streams row by row instead of in NR strips. */
LINATTN_INLINE void gemm_nn_row(float *c, const float *a, const void *B, size_t ldb, size_t N,
                                size_t K, int wt)
{
    for (size_t j = 0; j < N; j += 8 * VL) {
        size_t w = N - j < 8 * VL ? N - j : 8 * VL;
        int tail = (w % VL) != 0;
        vmask tm = vmask_n(tail ? w % VL : VL);
        const void *b = wptr(B, j, wt);
#define ROW(nc_, tail_) row_block(c + j, a, b, ldb, K, nc_, tail_, tm, wt)
        switch ((w + VL - 1) / VL * 2 + (size_t)tail) {
        case 2: ROW(1, 0); break;
        case 3: ROW(1, 1); break;
        case 4: ROW(2, 0); break;
        case 5: ROW(2, 1); break;
        case 6: ROW(3, 0); break;
        case 7: ROW(3, 1); break;
        case 8: ROW(4, 0); break;
        case 9: ROW(4, 1); break;
        case 10: ROW(5, 0); break;
        case 11: ROW(5, 1); break;
        case 12: ROW(6, 0); break;
        case 13: ROW(6, 1); break;
        case 14: ROW(7, 0); break;
        case 15: ROW(7, 1); break;
        case 16: ROW(8, 0); break;
        case 17: ROW(8, 1); break;
        default: break;
        }
#undef ROW
    }
}

/* pack_bn for B of weight type wt: converted to floats (exactly) while
 * copied. */
LINATTN_INLINE void pack_bn_w(float *Bp, const void *B, size_t ldb, size_t ncols, size_t kc,
                              int wt)
{
    if (wt == WT_F32) {
        pack_bn(Bp, B, ldb, ncols, kc);
        return;
    }
    vmask ml = vmask_n(ncols < VL ? ncols : VL);
    vmask mh = vmask_n(ncols > VL ? ncols - VL : 0);
    for (size_t p = 0; p < kc; p++) {
        size_t b = p * ldb;
        vstore(Bp + p * NR, ncols >= VL ? wload(B, b, wt) : wload_m(B, b, ml, wt));
        vstore(Bp + p * NR + VL, ncols == NR ? wload(B, b + VL, wt) : wload_m(B, b + VL, mh, wt));
    }
}

/* B rows are already contiguous in n, but a panel read in place strides by
 * ldb, and a large power-of-two ldb maps all its rows to a few L1 sets:
 * copying it (once per NR columns, for all M rows) makes it contiguous. A
 * few rows do not repay the copy; then full fp32 panels are read in place
 * (half panels are always converted into the copy). The same FMAs in the
 * same order whatever B's type: a half B gives bit for bit what fp32 B
 * holding the same values gives. at: A stored transposed (gemm_tn). */
LINATTN_INLINE void gemm_nn_any(float *C, size_t ldc, const float *A, size_t lda, const void *B,
                                size_t ldb, size_t M, size_t N, size_t K, int at, int wt)
{
    if (M == 0 || N == 0 || K == 0)
        return;
    if (M == 1 && !at) {
        gemm_nn_row(C, A, B, ldb, N, K, wt);
        return;
    }
    _Alignas(64) float Bp[KC * NR];
    for (size_t k0 = 0; k0 < K; k0 += KC) {
        size_t kc = K - k0 < KC ? K - k0 : KC;
        const float *a = a_elem(A, lda, 0, k0, at);
        for (size_t j0 = 0; j0 < N; j0 += NR) {
            size_t nc = N - j0 < NR ? N - j0 : NR;
            const void *b = wptr(B, k0 * ldb + j0, wt);
            const float *bp = b;
            size_t ldbp = ldb;
            if (wt != WT_F32 || nc != NR || M >= NN_PACK_MIN_M) {
                pack_bn_w(Bp, b, ldb, nc, kc, wt);
                bp = Bp, ldbp = NR;
            }
            if (at)
                panel_rows_tn(C + j0, ldc, a, lda, bp, ldbp, M, kc, nc);
            else
                panel_rows(C + j0, ldc, a, lda, bp, ldbp, M, kc, nc);
        }
    }
}

void FN(gemm_nn)(float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb,
                 size_t M, size_t N, size_t K)
{
    gemm_nn_any(C, ldc, A, lda, B, ldb, M, N, K, 0, WT_F32);
}

void FN(gemm_nn_f16)(float *C, size_t ldc, const float *A, size_t lda, const uint16_t *B,
                     size_t ldb, size_t M, size_t N, size_t K)
{
    gemm_nn_any(C, ldc, A, lda, B, ldb, M, N, K, 0, WT_F16);
}

/* ------------------------------------------------------------------------ */
/* int8 weights, one fp32 scale per group of LINATTN_Q8_GROUP along a row   */
/* ------------------------------------------------------------------------ */

#define QG LINATTN_Q8_GROUP
_Static_assert(QG % VL == 0, "a group is a whole number of vectors");

/* sum over groups g of s[g] (W[g] . x[g]) for `nr` (1..4) rows: each
 * group's products summed in one chain (a multiply, then FMAs), then
 * scaled into one of two running sums a row (even and odd groups, so the
 * scaling FMAs of consecutive groups do not wait on each other). */
LINATTN_INLINE void q8_rows(float *out, const int8_t *W, const float *S, size_t ldw, size_t lds,
                            const float *x, size_t cols, int nr, int prefetch)
{
    vf acc0[4] = {vzero(), vzero(), vzero(), vzero()};
    vf acc1[4] = {vzero(), vzero(), vzero(), vzero()};
    size_t g = 0;
    for (; (g + 1) * QG <= cols; g++) {
        const size_t p0 = g * QG;
        /* the next 4 rows' line of these columns, while these stream (as
         * gemv_w does for half weights) */
        if (prefetch && p0 % 64 == 0)
            for (size_t q = 4; q < 8; q++)
                vprefetch((const float *)(const void *)(W + q * ldw + p0));
        vf xv[QG / VL];
#pragma GCC unroll 8
        for (size_t v = 0; v < QG / VL; v++)
            xv[v] = vload(x + p0 + v * VL);
#pragma GCC unroll 4
        for (int q = 0; q < nr; q++) {
            const int8_t *w = W + (size_t)q * ldw + p0;
            vf t = vmul(vload_i8(w), xv[0]);
#pragma GCC unroll 8
            for (size_t v = 1; v < QG / VL; v++)
                t = vfma(vload_i8(w + v * VL), xv[v], t);
            vf sc = vset1(S[(size_t)q * lds + g]);
            if (g & 1)
                acc1[q] = vfma(t, sc, acc1[q]);
            else
                acc0[q] = vfma(t, sc, acc0[q]);
        }
    }
    if (nr == 4) {
        vhsum4_add(out, vadd(acc0[0], acc1[0]), vadd(acc0[1], acc1[1]), vadd(acc0[2], acc1[2]),
                   vadd(acc0[3], acc1[3]));
    } else {
        for (int q = 0; q < nr; q++)
            out[q] += vhsum(vadd(acc0[q], acc1[q]));
    }
}

void FN(gemv_q8)(float *y, const int8_t *W, const float *S, size_t ldw, const float *x,
                 const float *b, size_t rows, size_t cols)
{
    const size_t lds = ldw / QG;
    for (size_t r = 0; r < rows; r += 4) {
        int nr = rows - r < 4 ? (int)(rows - r) : 4;
        float s[4] = {0, 0, 0, 0};
        q8_rows(s, W + r * ldw, S + r * lds, ldw, lds, x, cols, nr, r + 8 <= rows);
        for (int q = 0; q < nr; q++)
            y[r + q] = s[q] + (b ? b[r + q] : 0.0f);
    }
}

/* C += A . B^T with B int8 (scales S): rows of B dequantized (w s, one
 * rounding) into a strip, then packed and multiplied as fp32. */
void FN(gemm_nt_q8)(float *C, size_t ldc, const float *A, size_t lda, const int8_t *B,
                    const float *S, size_t ldb, size_t M, size_t N, size_t K)
{
    if (M == 0 || N == 0 || K == 0)
        return;
    const size_t lds = ldb / QG;
    _Alignas(64) float Bp[KC * NR];
    _Alignas(64) float T[NR * KC];
    for (size_t j0 = 0; j0 < N; j0 += NR) {
        size_t nc = N - j0 < NR ? N - j0 : NR;
        for (size_t k0 = 0; k0 < K; k0 += KC) {
            size_t kc = K - k0 < KC ? K - k0 : KC;
            for (size_t j = 0; j < nc; j++) {
                const int8_t *w = B + (j0 + j) * ldb + k0;
                const float *s = S + (j0 + j) * lds + k0 / QG;
                for (size_t p = 0; p < kc; p += VL)
                    vstore(T + j * KC + p, vmul(vload_i8(w + p), vset1(s[p / QG])));
            }
            pack_bt(Bp, T, KC, nc, kc);
            panel_rows(C + j0, ldc, A + k0, lda, Bp, NR, M, kc, nc);
        }
    }
}

/* gemm_nn with A stored transposed: a block of keys (rows of A) folds into
 * a state without copying them into columns. */
void FN(gemm_tn)(float *C, size_t ldc, const float *A, size_t lda, const float *B, size_t ldb,
                 size_t M, size_t N, size_t K)
{
    gemm_nn_any(C, ldc, A, lda, B, ldb, M, N, K, 1, WT_F32);
}
