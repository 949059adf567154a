/* gemm_avx2.c: register-blocked AVX2+FMA gemv and gemms (6x16 broadcast tile, dot tiles). */
#include <immintrin.h>

#include "../kernels.h"
#include "avx2.h"

/* k block: a packed 256 x 16 panel of B is 16 KiB and stays in L1 while
 * every 6-row tile of A streams past it. */
#define KC 256
#define NR 16
#define MR 6
/* Measured (Sapphire Rapids): below 64 rows of C, gemm_nt's dot tiles are as
 * fast as packing B or faster; at 64 (the flash-attention score tile) the
 * packed 6x16 tile wins by about 10%. */
#define NT_DOTS_MAX_M 64
/* From 32 rows of C, gemm_nn's copy of each B panel pays for itself. */
#define NN_PACK_MIN_M 32
/* Floats of A that comfortably stay in L2 (512 KiB). */
#define A_IN_L2 (128 * 1024)

/* ------------------------------------------------------------------------ */
/* gemv and dot tiles: C[i][j] += A[i,:] . B[j,:] with horizontal sums       */
/* ------------------------------------------------------------------------ */

/* rows x cols dot products of A rows against B rows (both contiguous in k),
 * summed into out[r * ldo + c]. Each A chunk is held in a register while
 * each B chunk is loaded once and hits all rows: rows + 1 loads per
 * rows * cols FMAs. rows * cols <= 12, cols a multiple of 4 or 1..4. */
LINATTN_INLINE void dot_tile(float *out, size_t ldo, const float *A, size_t lda, const float *B,
                             size_t ldb, size_t K, int rows, int cols)
{
    __m256 acc[3][8] = {{{0}}};
    size_t p = 0;
    for (; p + 8 <= K; p += 8) {
        __m256 a[3];
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++)
            a[r] = _mm256_loadu_ps(A + r * lda + p);
#pragma GCC unroll 8
        for (int c = 0; c < cols; c++) {
            __m256 b = _mm256_loadu_ps(B + c * ldb + p);
#pragma GCC unroll 8
            for (int r = 0; r < rows; r++)
                acc[r][c] = _mm256_fmadd_ps(a[r], b, acc[r][c]);
        }
    }
    if (p < K) {
        __m256i m = avx2_tail_mask(K - p);
        __m256 a[3];
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++)
            a[r] = _mm256_maskload_ps(A + r * lda + p, m);
#pragma GCC unroll 8
        for (int c = 0; c < cols; c++) {
            __m256 b = _mm256_maskload_ps(B + c * ldb + p, m);
#pragma GCC unroll 8
            for (int r = 0; r < rows; r++)
                acc[r][c] = _mm256_fmadd_ps(a[r], b, acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c + 4 <= cols; c += 4) {
            __m128 s = avx2_hsum4(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
            float *o = out + r * ldo + c;
            _mm_storeu_ps(o, _mm_add_ps(_mm_loadu_ps(o), s));
        }
        if (cols < 4)
#pragma GCC unroll 8
            for (int c = 0; c < cols; c++)
                out[r * ldo + c] += avx2_hsum(acc[r][c]);
    }
}

/* y[r] = W[r,:] . x + b[r]: four rows share each x chunk; two chunks per
 * step give eight independent FMA chains. */
void linattn_gemv_avx2(float *y, const float *W, size_t ldw, const float *x, const float *b,
                       size_t rows, size_t cols)
{
    size_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float *w0 = W + r * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        size_t p = 0;
        for (; p + 16 <= cols; p += 16) {
            __m256 x0 = _mm256_loadu_ps(x + p), x1 = _mm256_loadu_ps(x + p + 8);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + p), x0, a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + p), x0, a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + p), x0, a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + p), x0, a3);
            b0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + p + 8), x1, b0);
            b1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + p + 8), x1, b1);
            b2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + p + 8), x1, b2);
            b3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + p + 8), x1, b3);
        }
        for (; p + 8 <= cols; p += 8) {
            __m256 x0 = _mm256_loadu_ps(x + p);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + p), x0, a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + p), x0, a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + p), x0, a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + p), x0, a3);
        }
        if (p < cols) {
            __m256i m = avx2_tail_mask(cols - p);
            __m256 x1 = _mm256_maskload_ps(x + p, m);
            b0 = _mm256_fmadd_ps(_mm256_maskload_ps(w0 + p, m), x1, b0);
            b1 = _mm256_fmadd_ps(_mm256_maskload_ps(w1 + p, m), x1, b1);
            b2 = _mm256_fmadd_ps(_mm256_maskload_ps(w2 + p, m), x1, b2);
            b3 = _mm256_fmadd_ps(_mm256_maskload_ps(w3 + p, m), x1, b3);
        }
        __m128 s = avx2_hsum4(_mm256_add_ps(a0, b0), _mm256_add_ps(a1, b1),
                              _mm256_add_ps(a2, b2), _mm256_add_ps(a3, b3));
        if (b)
            s = _mm_add_ps(s, _mm_loadu_ps(b + r));
        _mm_storeu_ps(y + r, s);
    }
    for (; r < rows; r++) {
        float t = 0.0f;
        dot_tile(&t, 0, W + r * ldw, 0, x, 0, cols, 1, 1);
        y[r] = t + (b ? b[r] : 0.0f);
    }
}

/* C rows i0.. (3 of them, or the rows that remain) += A . B[j0..j0+ncols)^T. */
static void dots_rows(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                      size_t ldb, size_t rows, size_t ncols, size_t K)
{
    switch (rows * 8 + (ncols == 4 ? 4 : ncols == 8 ? 0 : 1)) {
    case 8 + 0: dot_tile(C, ldc, A, lda, B, ldb, K, 1, 8); break;
    case 8 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 1, 4); break;
    case 8 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 1, 1); break;
    case 16 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 2, 4); break;
    case 16 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 2, 1); break;
    case 24 + 4: dot_tile(C, ldc, A, lda, B, ldb, K, 3, 4); break;
    case 24 + 1: dot_tile(C, ldc, A, lda, B, ldb, K, 3, 1); break;
    default: break;
    }
}

/* C += A . B^T by dot tiles (3x4; 1x8 when M = 1), for M < NT_DOTS_MAX_M:
 * no packing at all. Columns outer: a few B rows stay in L1 while every
 * row block of A passes, so B is read from memory once. */
static void gemm_nt_dots(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                         size_t ldb, size_t M, size_t N, size_t K)
{
    size_t step = M == 1 ? 8 : 4;
    for (size_t j = 0; j < N;) {
        size_t ncols = N - j >= step ? step : N - j >= 4 ? 4 : 1;
        for (size_t i = 0; i < M; i += 3) {
            size_t rows = M - i < 3 ? M - i : 3;
            dots_rows(C + i * ldc + j, ldc, A + i * lda, lda, B + j * ldb, ldb, rows, ncols, K);
        }
        j += ncols;
    }
}

/* ------------------------------------------------------------------------ */
/* 6x16 broadcast micro-tile over a B panel laid out [k][16]                */
/* ------------------------------------------------------------------------ */

/* C[rows x 16] += A[rows x kc] . Bp[kc x 16] (Bp row stride ldbp). Twelve
 * accumulators, two B loads and six broadcasts per k: 12 FMAs for 8 loads.
 * Only the first ncols columns of C are touched (masks ml, mh). */
LINATTN_INLINE void tile_6x16(float *C, size_t ldc, const float *A, size_t lda,
                              const float *Bp, size_t ldbp, size_t kc, int rows, int full,
                              __m256i ml, __m256i mh)
{
    __m256 c0[MR] = {0}, c1[MR] = {0};
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        /* C is read only after the k loop: fetch it now so that read does not stall */
        _mm_prefetch((const char *)(C + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(C + r * ldc + 15), _MM_HINT_T0);
    }
    for (size_t p = 0; p < kc; p++) {
        __m256 b0 = _mm256_loadu_ps(Bp + p * ldbp);
        __m256 b1 = _mm256_loadu_ps(Bp + p * ldbp + 8);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            __m256 a = _mm256_broadcast_ss(A + r * lda + p);
            c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        float *c = C + r * ldc;
        if (full) {
            _mm256_storeu_ps(c, _mm256_add_ps(_mm256_loadu_ps(c), c0[r]));
            _mm256_storeu_ps(c + 8, _mm256_add_ps(_mm256_loadu_ps(c + 8), c1[r]));
        } else {
            _mm256_maskstore_ps(c, ml, _mm256_add_ps(_mm256_maskload_ps(c, ml), c0[r]));
            _mm256_maskstore_ps(c + 8, mh, _mm256_add_ps(_mm256_maskload_ps(c + 8, mh), c1[r]));
        }
    }
}

/* Few rows leave few independent accumulators; two k-parities double them
 * so the FMA latency stays hidden. */
LINATTN_INLINE void tile_small_16(float *C, size_t ldc, const float *A, size_t lda,
                                  const float *Bp, size_t ldbp, size_t kc, int rows, int full,
                                  __m256i ml, __m256i mh)
{
    __m256 c0[3] = {0}, c1[3] = {0}, d0[3] = {0}, d1[3] = {0};
    size_t p = 0;
    for (; p + 2 <= kc; p += 2) {
        const float *bp = Bp + p * ldbp;
        __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
        __m256 e0 = _mm256_loadu_ps(bp + ldbp), e1 = _mm256_loadu_ps(bp + ldbp + 8);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            __m256 a = _mm256_broadcast_ss(A + r * lda + p);
            __m256 a2 = _mm256_broadcast_ss(A + r * lda + p + 1);
            c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
            d0[r] = _mm256_fmadd_ps(a2, e0, d0[r]);
            d1[r] = _mm256_fmadd_ps(a2, e1, d1[r]);
        }
    }
    if (p < kc) {
        __m256 b0 = _mm256_loadu_ps(Bp + p * ldbp), b1 = _mm256_loadu_ps(Bp + p * ldbp + 8);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            __m256 a = _mm256_broadcast_ss(A + r * lda + p);
            c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        float *c = C + r * ldc;
        __m256 s0 = _mm256_add_ps(c0[r], d0[r]), s1 = _mm256_add_ps(c1[r], d1[r]);
        if (full) {
            _mm256_storeu_ps(c, _mm256_add_ps(_mm256_loadu_ps(c), s0));
            _mm256_storeu_ps(c + 8, _mm256_add_ps(_mm256_loadu_ps(c + 8), s1));
        } else {
            _mm256_maskstore_ps(c, ml, _mm256_add_ps(_mm256_maskload_ps(c, ml), s0));
            _mm256_maskstore_ps(c + 8, mh, _mm256_add_ps(_mm256_maskload_ps(c + 8, mh), s1));
        }
    }
}

/* All M rows of C against one panel: C[M x ncols] += A[M x kc] . Bp[kc x 16]. */
static void panel_rows(float *C, size_t ldc, const float *A, size_t lda, const float *Bp,
                       size_t ldbp, size_t M, size_t kc, size_t ncols)
{
    int full = ncols == NR;
    __m256i ml = avx2_tail_mask(ncols < 8 ? ncols : 8);
    __m256i mh = avx2_tail_mask(ncols > 8 ? ncols - 8 : 0);
    size_t i = 0;
    for (; i + MR <= M; i += MR)
        tile_6x16(C + i * ldc, ldc, A + i * lda, lda, Bp, ldbp, kc, 6, full, ml, mh);
    float *c = C + i * ldc;
    const float *a = A + i * lda;
    switch (M - i) {
    case 5: tile_6x16(c, ldc, a, lda, Bp, ldbp, kc, 5, full, ml, mh); break;
    case 4: tile_6x16(c, ldc, a, lda, Bp, ldbp, kc, 4, full, ml, mh); break;
    case 3: tile_small_16(c, ldc, a, lda, Bp, ldbp, kc, 3, full, ml, mh); break;
    case 2: tile_small_16(c, ldc, a, lda, Bp, ldbp, kc, 2, full, ml, mh); break;
    case 1: tile_small_16(c, ldc, a, lda, Bp, ldbp, kc, 1, full, ml, mh); break;
    default: break;
    }
}

/* In-register 8x8 transpose of r[0..7]. */
LINATTN_INLINE void transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Bp[p][j] = B[j][p] for j < nrows (B rows of length kc, stride ldb), 0 for
 * nrows <= j < 16; 8x8 blocks transposed in registers. */
static void pack_bt(float *Bp, const float *B, size_t ldb, size_t nrows, size_t kc)
{
    for (size_t j0 = 0; j0 < NR; j0 += 8) {
        for (size_t p = 0; p < kc; p += 8) {
            size_t w = kc - p < 8 ? kc - p : 8;
            __m256i m = avx2_tail_mask(w);
            __m256 r[8];
            for (size_t j = 0; j < 8; j++) {
                const float *src = B + (j0 + j) * ldb + p;
                if (j0 + j >= nrows)
                    r[j] = _mm256_setzero_ps();
                else
                    r[j] = w == 8 ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, m);
            }
            transpose8(r);
            for (size_t q = 0; q < w; q++)
                _mm256_store_ps(Bp + (p + q) * NR + j0, r[q]);
        }
    }
}

/* Bp[p][j] = B[p][j] for j < ncols, 0 past them: a contiguous copy of a
 * gemm_nn panel, zero-padded at the right edge. */
static void pack_bn(float *Bp, const float *B, size_t ldb, size_t ncols, size_t kc)
{
    if (ncols == NR) {
        for (size_t p = 0; p < kc; p++) {
            _mm256_store_ps(Bp + p * NR, _mm256_loadu_ps(B + p * ldb));
            _mm256_store_ps(Bp + p * NR + 8, _mm256_loadu_ps(B + p * ldb + 8));
        }
        return;
    }
    __m256i ml = avx2_tail_mask(ncols < 8 ? ncols : 8);
    __m256i mh = avx2_tail_mask(ncols > 8 ? ncols - 8 : 0);
    for (size_t p = 0; p < kc; p++) {
        _mm256_store_ps(Bp + p * NR, _mm256_maskload_ps(B + p * ldb, ml));
        _mm256_store_ps(Bp + p * NR + 8, _mm256_maskload_ps(B + p * ldb + 8, mh));
    }
}

void linattn_gemm_nt_avx2(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                          size_t ldb, size_t M, size_t N, size_t K)
{
    if (M == 0 || N == 0 || K == 0)
        return;
    if (M < NT_DOTS_MAX_M) {
        gemm_nt_dots(C, ldc, A, lda, B, ldb, M, N, K);
        return;
    }
    _Alignas(32) float Bp[KC * NR];
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

/* c[0, 8 nc) += sum_p a[p] B[p, 0..8 nc): one row of C in registers (the
 * last chunk masked when tail), each row of B read start to end. */
LINATTN_INLINE void row_block(float *c, const float *a, const float *B, size_t ldb, size_t K,
                              int nc, int tail, __m256i tm)
{
    __m256 acc[8] = {0};
    for (size_t p = 0; p < K; p++) {
        __m256 ap = _mm256_broadcast_ss(a + p);
        const float *b = B + p * ldb;
#pragma GCC unroll 8
        for (int q = 0; q < nc; q++) {
            __m256 bq = tail && q == nc - 1 ? _mm256_maskload_ps(b + 8 * q, tm)
                                            : _mm256_loadu_ps(b + 8 * q);
            acc[q] = _mm256_fmadd_ps(ap, bq, acc[q]);
        }
    }
#pragma GCC unroll 8
    for (int q = 0; q < nc; q++) {
        if (tail && q == nc - 1)
            _mm256_maskstore_ps(c + 8 * q, tm,
                                _mm256_add_ps(_mm256_maskload_ps(c + 8 * q, tm), acc[q]));
        else
            _mm256_storeu_ps(c + 8 * q, _mm256_add_ps(_mm256_loadu_ps(c + 8 * q), acc[q]));
    }
}

/* One row of A (decode: one query's probabilities times V): blocks of up to
 * 64 columns, so B streams row by row instead of in 16-column strips. */
static void gemm_nn_row(float *c, const float *a, const float *B, size_t ldb, size_t N, size_t K)
{
    for (size_t j = 0; j < N; j += 64) {
        size_t w = N - j < 64 ? N - j : 64;
        int tail = (w & 7) != 0;
        __m256i tm = avx2_tail_mask(tail ? w & 7 : 8);
        const float *b = B + j;
        switch ((w + 7) / 8 * 2 + (size_t)tail) {
        case 2: row_block(c + j, a, b, ldb, K, 1, 0, tm); break;
        case 3: row_block(c + j, a, b, ldb, K, 1, 1, tm); break;
        case 4: row_block(c + j, a, b, ldb, K, 2, 0, tm); break;
        case 5: row_block(c + j, a, b, ldb, K, 2, 1, tm); break;
        case 6: row_block(c + j, a, b, ldb, K, 3, 0, tm); break;
        case 7: row_block(c + j, a, b, ldb, K, 3, 1, tm); break;
        case 8: row_block(c + j, a, b, ldb, K, 4, 0, tm); break;
        case 9: row_block(c + j, a, b, ldb, K, 4, 1, tm); break;
        case 10: row_block(c + j, a, b, ldb, K, 5, 0, tm); break;
        case 11: row_block(c + j, a, b, ldb, K, 5, 1, tm); break;
        case 12: row_block(c + j, a, b, ldb, K, 6, 0, tm); break;
        case 13: row_block(c + j, a, b, ldb, K, 6, 1, tm); break;
        case 14: row_block(c + j, a, b, ldb, K, 7, 0, tm); break;
        case 15: row_block(c + j, a, b, ldb, K, 7, 1, tm); break;
        case 16: row_block(c + j, a, b, ldb, K, 8, 0, tm); break;
        case 17: row_block(c + j, a, b, ldb, K, 8, 1, tm); break;
        default: break;
        }
    }
}

/* B rows are already contiguous in n, but a panel read in place strides by
 * ldb, and a large power-of-two ldb maps all its rows to a few L1 sets:
 * copying it (once per 16 columns, for all M rows) makes it contiguous. A
 * few rows do not repay the copy; then full panels are read in place. */
void linattn_gemm_nn_avx2(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                          size_t ldb, size_t M, size_t N, size_t K)
{
    if (M == 0 || N == 0 || K == 0)
        return;
    if (M == 1) {
        gemm_nn_row(C, A, B, ldb, N, K);
        return;
    }
    _Alignas(32) float Bp[KC * NR];
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
