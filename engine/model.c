/* model.c: the decoder's forward pass: one layer recipe for a chunk of tokens and for one token in a team of threads, attention by kind. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "f16.h"
#include "mem.h"
#include "model.h"
#include "../simd/q8_0.h"
#include "../simd/quants.h"

#ifdef LINATTN_HAVE_OPENMP
#include <omp.h>
#endif


/* W's rows from `row` on (cols columns), its scales too. */
static linattn_matrix matrix_rows(linattn_matrix W, size_t row, size_t cols)
{
    linattn_matrix r = W;
    r.data = (const char *)W.data + row * linattn_dtype_row_bytes(W.dtype, cols);
    if (W.scales)
        r.scales = W.scales + row * (cols / LINATTN_Q8_GROUP);
    return r;
}

/* y[rows] = W[rows, cols] x + b by the gemv of W's dtype. */
static void gemv_any(const linattn_kernels *k, float *y, linattn_matrix W, size_t cols,
                     const float *x, const float *b, size_t rows)
{
    switch (W.dtype) {
    case LINATTN_DTYPE_F16: k->gemv_f16(y, W.data, cols, x, b, rows, cols); break;
    case LINATTN_DTYPE_BF16: k->gemv_bf16(y, W.data, cols, x, b, rows, cols); break;
    case LINATTN_DTYPE_I8: k->gemv_q8(y, W.data, W.scales, cols, x, b, rows, cols); break;
    case LINATTN_DTYPE_Q8_0:
        k->gemv_q8_0(y, W.data, linattn_dtype_row_bytes(W.dtype, cols), x, b, rows, cols);
        break;
    case LINATTN_DTYPE_F32: k->gemv(y, W.data, cols, x, b, rows, cols); break;
    default: /* the other block types */
        k->gemv_quant(y, W.data, linattn_dtype_row_bytes(W.dtype, cols), linattn_dtype_quant(W.dtype), x, b,
                      rows, cols);
        break;
    }
}

/* C[M, N] (stride ldc) += A[M, K] B[N, K]^T by the gemm_nt of B's dtype. */
static void gemm_nt_any(const linattn_kernels *k, float *C, size_t ldc, const float *A,
                        linattn_matrix B, size_t M, size_t N, size_t K)
{
    switch (B.dtype) {
    case LINATTN_DTYPE_F16: k->gemm_nt_f16(C, ldc, A, K, B.data, K, M, N, K); break;
    case LINATTN_DTYPE_BF16: k->gemm_nt_bf16(C, ldc, A, K, B.data, K, M, N, K); break;
    case LINATTN_DTYPE_I8: k->gemm_nt_q8(C, ldc, A, K, B.data, B.scales, K, M, N, K); break;
    case LINATTN_DTYPE_F32: k->gemm_nt(C, ldc, A, K, B.data, K, M, N, K); break;
    default: {
        /* block types, a few rows (see linattn_project_gemm): gemm_quant,
         * whose rows are the one-row gemv's bit for bit (each activation
         * quantized as the one-token path does). The weights go by in
         * slices of about 256 KiB (within L2, as the gemm body's A_IN_L2
         * assumes) that every row of the prompt passes over before the
         * next: read from memory once, not once a row. */
        size_t rb = linattn_dtype_row_bytes(B.dtype, K), slice = rb ? (256u << 10) / rb : N;
        slice = slice < 16 ? 16 : slice / 16 * 16; /* the decode path's 16-row cuts */
        int type = linattn_dtype_quant(B.dtype);
        for (size_t j0 = 0; j0 < N; j0 += slice) {
            size_t nj = N - j0 < slice ? N - j0 : slice;
            k->gemm_quant(C + j0, ldc, A, K, matrix_rows(B, j0, K).data, rb, type, M, nj, K);
        }
        break;
    }
    }
}

/* r rounded up to a multiple of 16, at most out. */
static size_t cut16(size_t r, size_t out)
{
    r = (r + 15) / 16 * 16;
    return r < out ? r : out;
}

/* Thread t of T's rows [*lo, *hi) of a projection of `out` rows: an equal
 * share, cut at a multiple of 16 rows. A 16-row cut starts a cache line of
 * W for every shape whose rows are whole lines, and the kernel's groups of
 * 4 rows start at the same rows whatever T, so every row is summed alike. */
static void share_rows(size_t out, int t, int T, size_t *lo, size_t *hi)
{
    *lo = cut16(out * (size_t)t / (size_t)T, out);
    *hi = cut16(out * (size_t)(t + 1) / (size_t)T, out);
}

/* Rows [lo, hi) of one row's projection p: y[lo..hi) = W[lo..hi) x + b. */
static void project_rows(const linattn_kernels *k, const linattn_proj *p, const float *x, int in,
                         size_t lo, size_t hi)
{
    if (hi > lo)
        gemv_any(k, p->y + lo, matrix_rows(p->W, lo, (size_t)in), (size_t)in, x,
                 p->b ? p->b + lo : NULL, hi - lo);
}

/* Thread t of T's part of count projections of the same row x[in]: the
 * rows of all the matrices, one after the other, cut into T equal shares
 * (each cut at a multiple of 16 rows of its matrix), so the threads stream
 * equal parts of the weights. */
static void project_share(const linattn_kernels *k, const linattn_proj *p, int count,
                          const float *x, int in, int t, int T)
{
    size_t total = 0;
    for (int i = 0; i < count; i++)
        total += (size_t)p[i].out;
    size_t v0 = total * (size_t)t / (size_t)T, v1 = total * (size_t)(t + 1) / (size_t)T, base = 0;
    for (int i = 0; i < count; i++) {
        size_t out = (size_t)p[i].out;
        size_t lo = v0 > base ? cut16(v0 - base, out) : 0;
        size_t hi = v1 > base ? cut16(v1 - base, out) : 0;
        project_rows(k, &p[i], x, in, lo, hi);
        base += out;
    }
}

void linattn_project_one(const linattn_kernels *k, const linattn_proj *p, int count,
                         const float *x, int in, int threads)
{
    size_t total = 0;
    for (int i = 0; i < count; i++)
        total += (size_t)p[i].out;
    int par = threads > 1 && total * (size_t)in >= LINATTN_PARALLEL_MIN_GEMV;
    (void)par; /* used by the pragma only */
#pragma omp parallel num_threads(threads) if (par)
    {
        int t = 0, T = 1;
#ifdef LINATTN_HAVE_OPENMP
        t = omp_get_thread_num();
        T = omp_get_num_threads();
#endif
        project_share(k, p, count, x, in, t, T);
    }
}

void linattn_project(const linattn_kernels *k, float *y, const float *x, linattn_matrix W,
                     const float *b, int n, int out, int in, int threads)
{
    if (n == 1) {
        linattn_proj p = {y, W, b, out};
        linattn_project_one(k, &p, 1, x, in, threads);
        return;
    }
    linattn_project_gemm(k, y, x, W, b, n, out, in, threads, 0);
}

/* Prompt rows from which a block-quantized projection goes through a
 * gemm (integer tiles, or the fp32 gemm on dequantized weights) rather
 * than gemm_quant's four rows at a time. */
#define QUANT_GEMM_ROWS 16

/* How a prompt's rows are quantized for gemm_quant_xq against weights of
 * the ggml type: 0 not (the fp32 gemm on dequantized weights), 1 as Q8_0,
 * 2 as Q8_K (the K-quants). Projections of the same rows whose weights
 * take the same kind share one quantization. */
static int xq_kind(int type)
{
    if (!linattn_quant_xq_takes(type))
        return 0;
    return linattn_quant_takes_q8_K(type) ? 2 : 1;
}

/* x (n rows of in) as the block kernels quantize it for weights of the
 * ggml type (Q8_K for the K-quants, Q8_0 for the rest), written back as
 * the fp32 values d q: exact for Q8_0's half scales, one rounding each for
 * Q8_K's fp32 ones. */
static void quantized_rows(float *xq, const float *x, int type, int n, int in)
{
    enum { CH = 4096 };
    int8_t q[CH];
    float d[CH / 32];
    int32_t bs[CH / 16];
    const int kq = linattn_quant_takes_q8_K(type);
    const size_t per = kq ? LINATTN_Q8_K_BLOCK : LINATTN_Q8_0_BLOCK;
    for (int r = 0; r < n; r++)
        for (size_t c0 = 0; c0 < (size_t)in; c0 += CH) {
            size_t nc = (size_t)in - c0 < CH ? (size_t)in - c0 : CH;
            const float *src = x + (size_t)r * (size_t)in + c0;
            float *dst = xq + (size_t)r * (size_t)in + c0;
            if (kq)
                linattn_q8_K_quantize(q, d, bs, src, nc);
            else
                linattn_q8_0_quantize(q, d, src, nc);
            for (size_t i = 0; i < nc; i++)
                dst[i] = d[i / per] * (float)q[i];
        }
}

/* x (n rows of in) quantized once as the decode step does for weights of
 * its kind (1, Q8_0: int8 and a half scale per 32; 2, Q8_K: an fp32 scale
 * per 256, given again for each 32), for gemm_quant_xq: q[n in], d and the
 * sums of each 32 q s[n in / 32]. Rows over threads (each row alike
 * whatever the split). */
typedef struct xq_rows {
    int kind; /* 0: none */
    int8_t *q;
    float *d;
    int32_t *s;
} xq_rows;

static void xq_row(const linattn_kernels *k, const xq_rows *a, const float *xr, size_t r,
                   size_t in)
{
    /* linattn_q8_0_quantize's and linattn_q8_K_quantize's bits, in vectors */
    if (a->kind == 1)
        k->quantize_q8_0(a->q + r * in, a->d + r * in / 32, a->s + r * in / 32, xr, in);
    else
        k->quantize_q8_K(a->q + r * in, a->d + r * in / 32, a->s + r * in / 32, xr, in);
}

/* 1 if a holds x quantized for kind (done now if it did not). */
static int xq_rows_get(const linattn_kernels *k, xq_rows *a, const float *x, int kind, int n,
                       int in, int threads)
{
    if (a->kind == kind)
        return 1;
    size_t e = (size_t)n * (size_t)in, nb = e / LINATTN_Q8_0_BLOCK;
    if (!a->q) {
        char *m = mem_alloc(nb * (sizeof *a->d + sizeof *a->s) + e);
        if (!m)
            return 0;
        a->d = (float *)(void *)m;
        a->s = (int32_t *)(void *)(m + nb * sizeof *a->d);
        a->q = (int8_t *)(m + nb * (sizeof *a->d + sizeof *a->s));
    }
    a->kind = kind;
    int par = threads > 1 && e >= 16384;
    (void)par; /* used by the pragma only */
#pragma omp parallel for num_threads(threads) if (par) schedule(static)
    for (int r = 0; r < n; r++)
        xq_row(k, a, x + (size_t)r * (size_t)in, (size_t)r, (size_t)in);
    return 1;
}

static void xq_rows_free(xq_rows *a)
{
    mem_free(a->d); /* the one allocation */
}

/* Rows of one kernel call for rows alike: below the 64 where gemm_nt
 * leaves its dot tiles (whose sums of a row do not depend on the rows
 * beside it) for packed panels (which sum in another order). */
#define ALIKE_ROWS 63

/* linattn_project_gemm with x's quantization in aq (reused, or made and
 * kept there, when W's type takes one). */
static void project_gemm_xq(const linattn_kernels *k, xq_rows *aq, float *y, const float *x,
                            linattn_matrix W, const float *b, int n, int out, int in,
                            int threads, int alike)
{
    /* A prompt against block-quantized weights: x quantized once as the
     * decode step quantizes it, then for the types of xq_kind the integer
     * tiles of gemm_quant_xq on it (each block's dot product exact, as the
     * step's), for the others the fp32 gemm on its exact values d q and
     * the weights dequantized; either way a prompt's rows are the decode
     * step's to fp32 rounding (the sums go in another order). Without the
     * memory, gemm_quant (the one-row kernel's sums, four rows at a time)
     * does it. */
    int type = linattn_dtype_quant(W.dtype), kind = xq_kind(type), xq_ok = 0;
    size_t rb = linattn_dtype_row_bytes(W.dtype, (size_t)in);
    float *xq = NULL;
    /* alike (rows of streams stepped together): the same kernels for any
     * n, so a row's bits do not depend on how many rows share the call */
    if (type && (n >= QUANT_GEMM_ROWS || alike)) {
        if (kind)
            xq_ok = xq_rows_get(k, aq, x, kind, n, in, threads);
        else if ((xq = mem_alloc((size_t)n * (size_t)in * sizeof *xq)))
            quantized_rows(xq, x, type, n, in);
    }
    /* Column blocks of 64 outputs (128 for the integer tiles, whose
     * activation tiles then meet twice the weights): each thread reads its
     * own rows of W. */
    const int bw = xq_ok ? 128 : 64, blocks = (out + bw - 1) / bw;
    int par = threads > 1 && (size_t)n * out * in >= LINATTN_PARALLEL_MIN_WORK;
    (void)par; /* used by the pragma only */
#pragma omp parallel num_threads(threads) if (par)
    {
        float *wq = xq ? mem_alloc((size_t)64 * (size_t)in * sizeof *wq) : NULL;
#pragma omp for schedule(static)
        for (int j = 0; j < blocks; j++) {
            int j0 = j * bw, nj = out - j0 < bw ? out - j0 : bw;
            for (int r = 0; r < n; r++) {
                float *row = y + (size_t)r * out + j0;
                if (b)
                    memcpy(row, b + j0, (size_t)nj * sizeof(float));
                else
                    memset(row, 0, (size_t)nj * sizeof(float));
            }
            const uint8_t *Wj = matrix_rows(W, (size_t)j0, (size_t)in).data;
            if (wq)
                k->dequant(wq, Wj, rb, type, (size_t)nj, (size_t)in);
            /* alike: slabs of at most ALIKE_ROWS rows, each its own call
             * (the block's weights stay in cache between them) */
            for (int r0 = 0, nr; r0 < n; r0 += nr) {
                nr = n - r0;
                if (alike && nr > ALIKE_ROWS) /* near-equal slabs: never one row alone */
                    nr = (nr + (nr + ALIKE_ROWS - 1) / ALIKE_ROWS - 1) /
                         ((nr + ALIKE_ROWS - 1) / ALIKE_ROWS);
                float *yr = y + (size_t)r0 * out + j0;
                const size_t rs = (size_t)r0 * (size_t)in;
                if (xq_ok)
                    k->gemm_quant_xq(yr, (size_t)out, aq->q + rs, aq->d + rs / 32,
                                     aq->s + rs / 32, (size_t)in, Wj, rb, type, (size_t)nr,
                                     (size_t)nj, (size_t)in);
                else if (wq)
                    k->gemm_nt(yr, (size_t)out, xq + rs, (size_t)in, wq, (size_t)in, (size_t)nr,
                               (size_t)nj, (size_t)in);
                else
                    gemm_nt_any(k, yr, (size_t)out, x + rs,
                                matrix_rows(W, (size_t)j0, (size_t)in), (size_t)nr, (size_t)nj,
                                (size_t)in);
            }
        }
        mem_free(wq);
    }
    mem_free(xq);
}

void linattn_project_gemm(const linattn_kernels *k, float *y, const float *x, linattn_matrix W,
                          const float *b, int n, int out, int in, int threads, int alike)
{
    xq_rows aq = {0, NULL, NULL, NULL};
    project_gemm_xq(k, &aq, y, x, W, b, n, out, in, threads, alike);
    xq_rows_free(&aq);
}

void linattn_project_gemm_many(const linattn_kernels *k, const linattn_proj *p, int count,
                               const float *x, int n, int in, int threads, int alike)
{
    xq_rows aq = {0, NULL, NULL, NULL};
    for (int i = 0; i < count; i++)
        project_gemm_xq(k, &aq, p[i].y, x, p[i].W, p[i].b, n, p[i].out, in, threads, alike);
    xq_rows_free(&aq);
}

static void norm_rows(const linattn_model *m, const linattn_kernels *k, float *y,
                      const float *x, const float *w, const float *b, int n)
{
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * m->d;
        float *yr = y + (size_t)r * m->d;
        if (m->cfg.norm == LINATTN_NORM_LAYERNORM)
            k->layernorm(yr, xr, w, b, (size_t)m->d, m->cfg.norm_eps);
        else
            k->rmsnorm(yr, xr, w, (size_t)m->d, m->cfg.norm_eps);
    }
}

/* xr[d] = row `token` of the embedding, converted from its dtype (exact). */
static void embed_row(float *xr, linattn_matrix E, int token, int d)
{
    linattn_matrix r = matrix_rows(E, (size_t)token, (size_t)d);
    const void *row = r.data;
    if (E.dtype == LINATTN_DTYPE_I8)
        for (int i = 0; i < d; i++)
            xr[i] = (float)((const int8_t *)row)[i] * r.scales[i / LINATTN_Q8_GROUP];
    else if (E.dtype == LINATTN_DTYPE_F16)
        for (int i = 0; i < d; i++)
            xr[i] = linattn_f16_to_f32(((const uint16_t *)row)[i]);
    else if (E.dtype == LINATTN_DTYPE_BF16)
        for (int i = 0; i < d; i++)
            xr[i] = linattn_bf16_to_f32(((const uint16_t *)row)[i]);
    else if (linattn_dtype_quant(E.dtype)) {
        size_t be, bb;
        linattn_quant_block(linattn_dtype_quant(E.dtype), &be, &bb);
        for (size_t e0 = 0; e0 < (size_t)d; e0 += be)
            linattn_quant_values(linattn_dtype_quant(E.dtype), (const uint8_t *)row + e0 / be * bb,
                                 xr + e0);
    }
    else
        memcpy(xr, row, (size_t)d * sizeof(float));
}

/* Row t of x: token embedding + position term at pos[t]. */
static void embed(const linattn_model *m, float *x, const int *tokens, int n,
                  linattn_session *const *streams, uint64_t pos0)
{
    int d = m->d;
    for (int t = 0; t < n; t++) {
        float *xr = x + (size_t)t * d;
        embed_row(xr, m->tok_emb, tokens[t], d);
        uint64_t p = streams ? streams[t]->tokens : pos0 + (uint64_t)t;
        if (m->cfg.positions == LINATTN_POS_LEARNED) {
            const float *pe = m->pos_emb + (size_t)p * d;
            for (int i = 0; i < d; i++)
                xr[i] += pe[i];
        } else if (m->cfg.positions == LINATTN_POS_SINCOS) {
            /* double: p reaches the millions in a long stream */
            for (int i = 0; i < d / 2; i++) {
                double a = (double)p * m->inv_freq[i];
                xr[2 * i] += (float)sin(a);
                xr[2 * i + 1] += (float)cos(a);
            }
        }
    }
}

/* ---- attention of a layer: one set of functions per kind ------------------ */

/* A one-head (or all-heads) softmax call on s's cache rows. */
static linattn_attention_desc softmax_desc(const linattn_session *s, int heads, int n, int len_k,
                                           int causal, int threads)
{
    const linattn_model *m = s->m;
    linattn_attention_desc desc;
    linattn_attention_desc_init(&desc);
    desc.batch = 1;
    desc.heads = heads;
    desc.kv_heads = heads == m->h ? m->g : 1;
    desc.len_q = n;
    desc.len_k = len_k;
    desc.d_k = desc.d_v = m->dh;
    desc.causal = causal;
    desc.threads = threads;
    return desc;
}

static linattn_status softmax_call(const linattn_session *s, const linattn_attention_desc *d,
                                   const float *q, const void *k, const void *v, float *a)
{
    return s->kv16 ? linattn_attention_softmax_f16kv(d, q, k, v, a)
                   : linattn_attention_softmax(d, q, k, v, a);
}

/* softmax: n new rows q, k, v of stream s against every key it keeps. The
 * cache holds them in position order; a window's ring (slot pos % W) is
 * read in place by one row, which sees every key it holds, and for a
 * prefill copied in order, with the rows, into the gather buffers. */
static linattn_status softmax_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                   const float *q, const float *k, const float *v, float *a,
                                   int n, int threads)
{
    const linattn_model *m = s->m;
    const size_t kvd = (size_t)m->kvd;
    const uint64_t t0 = s->tokens;
    linattn_layout views = {0, (size_t)m->dh, (size_t)m->d}; /* head h: columns h*dh.. */
    linattn_layout kv_views = {0, (size_t)m->dh, kvd};
    const void *kc = linattn_cache_at(s, 0, layer, 0), *vc = linattn_cache_at(s, 1, layer, 0);
    int len_k = (int)t0 + n, causal = 1;
    if (m->window > 0 && n == 1) {
        linattn_cache_put(s, kt, layer, t0, k, v, kvd);
        len_k = t0 + 1 < (uint64_t)m->window ? (int)t0 + 1 : m->window;
        causal = 0; /* the ring holds exactly the window */
    } else if (m->window > 0) {
        const int W = m->window, prev = t0 < (uint64_t)(W - 1) ? (int)t0 : W - 1;
        char *gk = s->sc->gather_k, *gv = s->sc->gather_v;
        linattn_window_gather(s, kt, layer, k, v, n, prev);
        kc = gk;
        vc = gv;
        len_k = prev + n;
    } else {
        linattn_cache_put(s, kt, layer, t0, k, v, (size_t)n * kvd);
    }
    linattn_attention_desc desc = softmax_desc(s, m->h, n, len_k, causal, threads);
    desc.window = causal ? m->window : 0;
    desc.q = desc.out = views;
    desc.k = desc.v = kv_views;
    desc.workspace = s->sc->attn_ws;
    desc.workspace_bytes = s->sc->attn_ws_bytes;
    return softmax_call(s, &desc, q, kc, vc, a);
}

/* linear: k, v [n, kvd], one row of each state head, or [n, d] repeated per
 * query head (s->sc->kx: a decayed grouped model). */
static linattn_status linear_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                  const float *q, const float *k, const float *v, float *a,
                                  int n, int threads)
{
    const linattn_model *m = s->m;
    (void)kt;
    linattn_linear_state *st = s->lin[layer];
    if (n == 1)
        return linattn_linear_step(st, q, k, v, a);
    linattn_layout views = {0, (size_t)m->dh, (size_t)m->d};
    linattn_layout kvl = {0, (size_t)m->dh, s->sc->kx ? (size_t)m->d : (size_t)m->kvd};
    linattn_layout lay[4] = {views, kvl, kvl, views};
    return linattn_linear_prefill_strided(st, q, k, v, n, a, lay, threads);
}

static linattn_status hybrid_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                  const float *q, const float *k, const float *v, float *a,
                                  int n, int threads)
{
    return linattn_hybrid_rows(s, kt, layer, q, k, v, a, n, threads);
}

/* One token's attention is cut into units that may run on any threads
 * (a batch step's (stream, unit) pairs, the team's shares): heads
 * (softmax), state heads (linear), k/v heads with their query heads
 * (hybrid: a group shares its key's feature map). */
static int softmax_units(const linattn_model *m) { return m->h; }
static int linear_units(const linattn_model *m) { return m->lin_heads; }
static int hybrid_units(const linattn_model *m) { return m->g; }

/* Scratch bytes of one unit: a one-head softmax call against the longest
 * cache, the linear fold's, or a hybrid group's. */
static size_t softmax_unit_bytes(const linattn_session *w, int layer)
{
    (void)layer;
    linattn_attention_desc desc = softmax_desc(w, 1, 1, w->m->cache_rows, 1, 1);
    return linattn_attention_softmax_workspace(&desc);
}

static size_t linear_unit_bytes(const linattn_session *w, int layer)
{
    return linattn_linear_step_scratch_bytes(w->lin[layer]);
}

static size_t hybrid_unit_bytes(const linattn_session *w, int layer)
{
    return linattn_hybrid_group_bytes(w, layer);
}

/* Before the units of a batch step: this token's k, v into the stream's cache. */
static void softmax_before(linattn_session *s, const linattn_kernels *kt, int layer,
                           const float *k, const float *v)
{
    linattn_cache_put(s, kt, layer, s->tokens, k, v, (size_t)s->m->kvd);
}

/* Unit h of stream s's token (q, a: [d]; k, v: a row of the batch). */
static linattn_status softmax_unit(linattn_session *s, const linattn_kernels *kt, int layer,
                                   int h, const float *q, const float *k, const float *v,
                                   float *a, void *scratch, size_t bytes)
{
    const linattn_model *m = s->m;
    (void)kt, (void)k, (void)v;
    const int dh = m->dh;
    const char *kc = linattn_cache_at(s, 0, layer, 0), *vc = linattn_cache_at(s, 1, layer, 0);
    size_t off = (size_t)(h / (m->h / m->g)) * dh * linattn_cache_elem(s); /* its k/v head */
    int len_k = (int)s->tokens + 1;
    if (m->window > 0 && len_k > m->window)
        len_k = m->window; /* the ring: every row it holds is in the window */
    linattn_attention_desc desc = softmax_desc(s, 1, 1, len_k, m->window == 0, 1);
    linattn_layout one = {0, 0, (size_t)m->d};    /* one head, rows d apart */
    linattn_layout kv = {0, 0, (size_t)m->kvd}; /* its k/v head, rows kvd apart */
    desc.q = desc.out = one;
    desc.k = desc.v = kv;
    desc.workspace = scratch;
    desc.workspace_bytes = bytes;
    return softmax_call(s, &desc, q + (size_t)h * dh, kc + off, vc + off, a + (size_t)h * dh);
}

static linattn_status linear_unit(linattn_session *s, const linattn_kernels *kt, int layer, int h,
                                  const float *q, const float *k, const float *v, float *a,
                                  void *scratch, size_t bytes)
{
    (void)kt, (void)bytes;
    return linattn_linear_step_heads(s->lin[layer], h, h + 1, q, k, v, a, scratch);
}

static linattn_status hybrid_unit(linattn_session *s, const linattn_kernels *kt, int layer, int g,
                                  const float *q, const float *k, const float *v, float *a,
                                  void *scratch, size_t bytes)
{
    (void)k, (void)v, (void)bytes;
    return linattn_hybrid_group(s, kt, layer, g, q, a, scratch);
}

static void linear_prefetch(const linattn_session *s, int layer, int h)
{
    linattn_linear_prefetch_head(s->lin[layer], h);
}

/* After every unit of the step: the linear states count the token. */
static void linear_after(linattn_session *s, int layer)
{
    linattn_linear_step_done(s->lin[layer]);
}

typedef struct attn_kind {
    /* n rows of one stream (a prefill chunk, or one token) */
    linattn_status (*rows)(linattn_session *s, const linattn_kernels *kt, int layer,
                           const float *q, const float *k, const float *v, float *a, int n,
                           int threads);
    int (*units)(const linattn_model *m);
    size_t (*unit_bytes)(const linattn_session *w, int layer);
    void (*before)(linattn_session *s, const linattn_kernels *kt, int layer, const float *k,
                   const float *v); /* may be NULL */
    linattn_status (*unit)(linattn_session *s, const linattn_kernels *kt, int layer, int h,
                           const float *q, const float *k, const float *v, float *a,
                           void *scratch, size_t bytes);
    void (*after)(linattn_session *s, int layer); /* may be NULL */
    /* fetch unit h's state ahead of its turn in a batched step (may be NULL) */
    void (*prefetch)(const linattn_session *s, int layer, int h);
} attn_kind;

static const attn_kind attn_kinds[] = {
    [LINATTN_ATTN_SOFTMAX] = {softmax_rows, softmax_units, softmax_unit_bytes, softmax_before,
                              softmax_unit, NULL, NULL},
    [LINATTN_ATTN_LINEAR] = {linear_rows, linear_units, linear_unit_bytes, NULL, linear_unit,
                             linear_after, linear_prefetch},
    [LINATTN_ATTN_HYBRID] = {hybrid_rows, hybrid_units, hybrid_unit_bytes, linattn_hybrid_begin,
                             hybrid_unit, linattn_hybrid_end, NULL},
};

static const attn_kind *kind_of(const linattn_model *m)
{
    return &attn_kinds[m->cfg.attention];
}

/* a[n, d] = attention of n new rows q, k, v of stream s against everything
 * it saw before; advances its state. */
static linattn_status attend_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                  const float *q, const float *k, const float *v, float *a, int n,
                                  int threads)
{
    return kind_of(s->m)->rows(s, kt, layer, q, k, v, a, n, threads);
}

/* w's scratch for T units of per bytes at once (one a thread). */
static linattn_status unit_scratch(linattn_session *w, size_t per, int T)
{
    if (per == SIZE_MAX || (size_t)T > SIZE_MAX / per)
        return linattn_err(LINATTN_ERR_NOMEM, "attention: unit scratch size overflows");
    if (w->sc->batch_ws_bytes >= per * (size_t)T)
        return LINATTN_OK;
    void *p = mem_realloc(w->sc->batch_ws, per * (size_t)T);
    if (!p)
        return linattn_err(LINATTN_ERR_NOMEM, "attention: cannot allocate %zu bytes of scratch",
                           per * (size_t)T);
    w->sc->batch_ws = p;
    w->sc->batch_ws_bytes = per * (size_t)T;
    return LINATTN_OK;
}

/* One token of each stream (row i of w's q, k, v, a): OpenMP over (stream,
 * unit) pairs, so a few streams still fill the threads. Each pair does what
 * the stream's own step does for that unit. */
static linattn_status attend_batch(linattn_session *w, const linattn_kernels *kt,
                                   linattn_session *const *streams, int layer,
                                   const float *kin, const float *vin, int n)
{
    const linattn_model *m = w->m;
    const attn_kind *kind = kind_of(m);
    const int d = m->d, dh = m->dh, H = m->h, T = w->threads;
    /* k, v rows: kvd wide, or d wide when repeated per query head (w->sc->kx) */
    const size_t kvrow = w->sc->kx ? (size_t)d : (size_t)m->kvd;
    const int HP = kind->units(m);
    const size_t per = kind->unit_bytes(w, layer);
    linattn_status st0 = unit_scratch(w, per, T);
    if (st0 != LINATTN_OK)
        return st0;
    double work = 0; /* flops of the attention of all pairs */
    for (int i = 0; i < n; i++) {
        linattn_session *s = streams[i];
        if (m->cfg.attention == LINATTN_ATTN_HYBRID)
            s->row_ws = linattn_hybrid_row_ws(w, i);
        if (kind->before)
            kind->before(s, kt, layer, kin + (size_t)i * kvrow, vin + (size_t)i * kvrow);
        double keys = m->cfg.attention == LINATTN_ATTN_LINEAR ? dh : (double)s->tokens + 1;
        if (m->window > 0 && keys > m->window)
            keys = m->window + (m->cfg.attention == LINATTN_ATTN_HYBRID ? 2 * m->fdim : 0);
        work += 4.0 * H * dh * keys;
    }
    int failed = 0;
    int par = T > 1 && n * HP > 1 && work >= (double)LINATTN_PARALLEL_MIN_WORK;
    (void)par; /* used by the pragma only */
#pragma omp parallel for num_threads(T) schedule(static) if (par) reduction(|| : failed)
    for (int it = 0; it < n * HP; it++) {
        const int i = it / HP, h = it % HP;
        const size_t row = (size_t)i * d;
        if (kind->prefetch && it + 1 < n * HP)
            kind->prefetch(streams[(it + 1) / HP], layer, (it + 1) % HP);
        char *scratch = (char *)w->sc->batch_ws + (size_t)attn_thread_id() * per;
        linattn_status st = kind->unit(streams[i], kt, layer, h, w->sc->q + row,
                                       kin + (size_t)i * kvrow, vin + (size_t)i * kvrow,
                                       w->sc->a + row, scratch, per);
        if (st != LINATTN_OK)
            failed = 1;
    }
    if (failed)
        return linattn_err(LINATTN_ERR_INVALID, "batched attention failed");
    if (kind->after)
        for (int i = 0; i < n; i++)
            kind->after(streams[i], layer);
    return LINATTN_OK;
}

static void activate(const linattn_model *m, const linattn_kernels *k, float *u, size_t n)
{
    if (m->cfg.ffn == LINATTN_FFN_GELU)
        k->gelu(u, u, n);
    else
        k->relu(u, u, n);
}

/* cs[t * dh ..]: cos of each pair's angle, then its sin, for row t at
 * position pos[t] (streams) or pos0 + t; once a pass, for every layer.
 * The angle is formed in double: positions reach the millions. */
static void rope_angles(const linattn_model *m, float *cs, int n, linattn_session *const *streams,
                        uint64_t pos0)
{
    const int dh = m->dh, half = dh / 2;
    for (int t = 0; t < n; t++) {
        uint64_t p = streams ? streams[t]->tokens : pos0 + (uint64_t)t;
        float *c = cs + (size_t)t * dh;
        for (int i = 0; i < half; i++) {
            double ang = (double)p * m->rope_freq[i];
            c[i] = (float)cos(ang);
            c[half + i] = (float)sin(ang);
        }
    }
}

/* Rotates pairs of dimensions of every head of q [n, d] and k [n, kvd]
 * by the angles rope_angles left in cs. */
static void rope_rows(const linattn_model *m, float *q, float *k, int n, const float *cs)
{
    const int dh = m->dh, half = dh / 2, d = m->d, kvd = m->kvd;
    const int interleaved = m->cfg.rope_pairing == LINATTN_ROPE_INTERLEAVED;
    const int a_step = interleaved ? 2 : 1, b_off = interleaved ? 1 : half;
    for (int t = 0; t < n; t++) {
        float *qr = q + (size_t)t * d, *kr = k + (size_t)t * kvd;
        const float *ct = cs + (size_t)t * dh;
        for (int i = 0; i < half; i++) {
            const float c = ct[i], sn = ct[half + i];
            int a = i * a_step, b = a + b_off;
            for (int j = 0; j < d; j += dh) {
                float x0 = qr[j + a], x1 = qr[j + b];
                qr[j + a] = x0 * c - x1 * sn;
                qr[j + b] = x0 * sn + x1 * c;
            }
            for (int j = 0; j < kvd; j += dh) {
                float x0 = kr[j + a], x1 = kr[j + b];
                kr[j + a] = x0 * c - x1 * sn;
                kr[j + b] = x0 * sn + x1 * c;
            }
        }
    }
}

/* k, v [n, kvd] repeated per query head into kx, vx [n, d]: query head h
 * reads k/v head h / (n_heads / n_kv_heads). */
static void repeat_kv(const linattn_model *m, float *kx, float *vx, const float *k,
                      const float *v, int n)
{
    const int dh = m->dh, group = m->h / m->g;
    const size_t d = (size_t)m->d, kvd = (size_t)m->kvd;
    for (int t = 0; t < n; t++)
        for (int h = 0; h < m->h; h++) {
            size_t src = (size_t)t * kvd + (size_t)(h / group) * dh, dst = (size_t)t * d + (size_t)h * dh;
            memcpy(kx + dst, k + src, (size_t)dh * sizeof(float));
            memcpy(vx + dst, v + src, (size_t)dh * sizeof(float));
        }
}

static void add_rows(float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

/* ---- the forward pass ------------------------------------------------------ */

/* Thread t of a team of T: in a parallel region, or t = 0 of 1. */
typedef struct team {
    int t, T;
} team;

static team team_me(void)
{
    team tm = {0, 1};
#ifdef LINATTN_HAVE_OPENMP
    tm.t = omp_get_thread_num();
    tm.T = omp_get_num_threads();
#endif
    return tm;
}

/* How a pass runs n rows through the layers, in s's buffers: one token in
 * one team of threads (team: each thread its share of every matrix's rows,
 * meeting at a barrier where a step reads what others wrote), or a chunk
 * (or one row of each of several streams) by the caller, each projection
 * one gemm spread over T threads. The layer recipe below is written once
 * for both; each step picks its form. */
typedef struct pass {
    linattn_session *s;
    const linattn_kernels *k;
    int n;
    int in_team; /* 1: inside the one-token team, tm says which thread */
    team tm;
    int T;       /* chunk: threads of each projection */
    int gemm;    /* rows of streams: every projection a gemm, one row too, so a
                  * stream's bits do not depend on the rows beside it */
} pass;

/* y = x W^T + b over the pass's rows, out of the team. */
static void project_pass(const pass *p, float *y, const float *x, linattn_matrix W, const float *b,
                         int out, int in)
{
    if (p->gemm)
        linattn_project_gemm(p->k, y, x, W, b, p->n, out, in, p->T, 1);
    else
        linattn_project(p->k, y, x, W, b, p->n, out, in, p->T);
}

/* The others of the team have written what comes next (no-op for a chunk). */
static void meet(const pass *p)
{
    if (p->in_team) {
#pragma omp barrier
    }
}

/* A pre-norm sublayer's input, norm(x): a chunk's rows into hbuf; in the
 * team each thread norms the one row for itself (row t of hbuf) rather
 * than wait at a barrier for one. */
static const float *norm_input(const pass *p, const float *w, const float *b)
{
    linattn_session *s = p->s;
    float *h = s->sc->hbuf + (p->in_team ? (size_t)p->tm.t * (size_t)s->m->d : 0);
    norm_rows(s->m, p->k, h, s->sc->x, w, b, p->in_team ? 1 : p->n);
    return h;
}

/* x = norm(x) after a sublayer (post-norm); in the team thread 0 norms it
 * and the others wait. */
static void norm_output(const pass *p, const float *w, const float *b)
{
    linattn_session *s = p->s;
    if (!p->in_team) {
        norm_rows(s->m, p->k, s->sc->x, s->sc->x, w, b, p->n);
        return;
    }
    if (p->tm.t == 0)
        norm_rows(s->m, p->k, s->sc->x, s->sc->x, w, b, 1);
    meet(p);
}

/* q, k, v of the input rows: in the team this thread's rows of the three. */
static void project_qkv(const pass *p, const linattn_layer *L, const float *in)
{
    linattn_session *s = p->s;
    const linattn_model *m = s->m;
    linattn_proj pr[3] = {{s->sc->q, L->wq, L->bq, m->d}, {s->sc->k, L->wk, L->bk, m->kvd},
                          {s->sc->v, L->wv, L->bv, m->kvd}};
    if (p->in_team)
        project_share(p->k, pr, 3, in, m->d, p->tm.t, p->tm.T);
    else if (p->n == 1 && !p->gemm) /* one row: the three in one parallel region */
        linattn_project_one(p->k, pr, 3, in, m->d, p->T);
    else /* more rows, or rows of streams: by gemm, x quantized once for the three */
        linattn_project_gemm_many(p->k, pr, 3, in, p->n, m->d, p->T, p->gemm);
}

/* x += y W^T + b (a residual), y [n, in]; whole at the end. In the team
 * the output passes through q, which is free once attention has read it. */
static void project_add_x(const pass *p, linattn_matrix W, const float *b, const float *y,
                          int out, int in)
{
    linattn_session *s = p->s;
    if (!p->in_team) {
        project_pass(p, s->sc->hbuf, y, W, b, out, in);
        add_rows(s->sc->x, s->sc->hbuf, (size_t)p->n * (size_t)out);
        return;
    }
    size_t lo, hi;
    linattn_proj pr = {s->sc->q, W, b, out};
    share_rows((size_t)out, p->tm.t, p->tm.T, &lo, &hi);
    project_rows(p->k, &pr, y, in, lo, hi);
    add_rows(s->sc->x + lo, s->sc->q + lo, hi - lo);
    meet(p);
}

/* u = act(up in) (or silu(gate in) * up in): in the team this thread's
 * rows of u (and of u2, the same rows), which need nothing else, so the
 * activation follows at once. */
static void ffn_hidden(const pass *p, const linattn_layer *L, const float *in)
{
    linattn_session *s = p->s;
    const linattn_model *m = s->m;
    const linattn_kernels *k = p->k;
    const int d = m->d, swiglu = m->cfg.ffn == LINATTN_FFN_SWIGLU;
    if (p->in_team) {
        size_t lo, hi;
        share_rows((size_t)m->dff, p->tm.t, p->tm.T, &lo, &hi);
        linattn_proj up = {swiglu ? s->sc->u2 : s->sc->u, L->up_w, L->up_b, m->dff};
        if (swiglu) {
            linattn_proj gate = {s->sc->u, L->gate_w, L->gate_b, m->dff};
            project_rows(k, &gate, in, d, lo, hi);
            project_rows(k, &up, in, d, lo, hi);
            k->silu_mul(s->sc->u + lo, s->sc->u + lo, s->sc->u2 + lo, hi - lo);
        } else {
            project_rows(k, &up, in, d, lo, hi);
            activate(m, k, s->sc->u + lo, hi - lo);
        }
        meet(p);
        return;
    }
    const size_t nf = (size_t)p->n * (size_t)m->dff;
    if (swiglu && p->n == 1 && !p->gemm) {
        linattn_proj pr[2] = {{s->sc->u, L->gate_w, L->gate_b, m->dff},
                              {s->sc->u2, L->up_w, L->up_b, m->dff}};
        linattn_project_one(k, pr, 2, in, d, p->T);
        k->silu_mul(s->sc->u, s->sc->u, s->sc->u2, nf);
    } else if (swiglu) { /* by gemm, x quantized once for the two */
        linattn_proj pr[2] = {{s->sc->u, L->gate_w, L->gate_b, m->dff},
                              {s->sc->u2, L->up_w, L->up_b, m->dff}};
        linattn_project_gemm_many(k, pr, 2, in, p->n, d, p->T, p->gemm);
        k->silu_mul(s->sc->u, s->sc->u, s->sc->u2, nf);
    } else {
        project_pass(p, s->sc->u, in, L->up_w, L->up_b, m->dff, d);
        activate(m, k, s->sc->u, nf);
    }
}

/* Layer l up to attention: norm1 (pre-norm), then q, k, v. The team meets
 * before attention reads them. */
static void layer_start(const pass *p, int l)
{
    const linattn_model *m = p->s->m;
    const linattn_layer *L = &m->layers[l];
    const int pre = m->cfg.norm_position == LINATTN_NORM_PRE;
    project_qkv(p, L, pre ? norm_input(p, L->norm1_w, L->norm1_b) : p->s->sc->x);
}

/* Layer l from attention's output a on: x += a Wo^T, norm, x += FFN(x),
 * norm; x is whole at the end. */
static void layer_end(const pass *p, int l)
{
    linattn_session *s = p->s;
    const linattn_model *m = s->m;
    const linattn_layer *L = &m->layers[l];
    const int pre = m->cfg.norm_position == LINATTN_NORM_PRE, d = m->d;
    project_add_x(p, L->wo, L->bo, s->sc->a, d, d);
    if (!pre)
        norm_output(p, L->norm1_w, L->norm1_b);
    ffn_hidden(p, L, pre ? norm_input(p, L->norm2_w, L->norm2_b) : s->sc->x);
    project_add_x(p, L->down_w, L->down_b, s->sc->u, d, m->dff);
    if (!pre)
        norm_output(p, L->norm2_w, L->norm2_b);
}

/* Layer l's attention of n rows of q, k, v (rope, k/v repeated per query
 * head where the state needs it) into a: of s's stream, or (streams) one
 * row of each stream. */
static linattn_status attend_layer(linattn_session *s, const linattn_kernels *k, int l, int n,
                                   linattn_session *const *streams, int threads)
{
    const linattn_model *m = s->m;
    if (m->cfg.positions == LINATTN_POS_ROPE)
        rope_rows(m, s->sc->q, s->sc->k, n, s->sc->rope);
    const float *kk = s->sc->k, *vv = s->sc->v;
    if (s->sc->kx) { /* linear, grouped k/v: one per query head */
        repeat_kv(m, s->sc->kx, s->sc->vx, s->sc->k, s->sc->v, n);
        kk = s->sc->kx;
        vv = s->sc->vx;
    }
    return streams ? attend_batch(s, k, streams, l, kk, vv, n)
                   : attend_rows(s, k, l, s->sc->q, kk, vv, s->sc->a, n, threads);
}

/* Layer l's attention of the team's one token: thread 0 ropes q and k
 * and runs the kind's `before` (the token into the cache or ring); the
 * units are shared out among the team; thread 0 runs `after` (a state
 * counts the token), which nothing reads before the team meets again.
 * Each unit does for its heads what the stream's own step does, in its
 * thread's share of s's unit scratch (team_scratch), so the bits do not
 * depend on the team's size. */
static void attend_team(const pass *p, int l, int *failed)
{
    linattn_session *s = p->s;
    const linattn_model *m = s->m;
    const attn_kind *kind = kind_of(m);
    const float *kk = s->sc->kx ? s->sc->kx : s->sc->k, *vv = s->sc->kx ? s->sc->vx : s->sc->v;
    if (p->tm.t == 0) {
        if (m->cfg.attention == LINATTN_ATTN_HYBRID)
            s->row_ws = linattn_hybrid_row_ws(s, 0);
        if (m->cfg.positions == LINATTN_POS_ROPE)
            rope_rows(m, s->sc->q, s->sc->k, 1, s->sc->rope);
        if (s->sc->kx) /* linear, grouped k/v: one per query head */
            repeat_kv(m, s->sc->kx, s->sc->vx, s->sc->k, s->sc->v, 1);
        if (kind->before)
            kind->before(s, p->k, l, kk, vv);
    }
    meet(p);
    const size_t units = (size_t)kind->units(m);
    const size_t per = s->sc->batch_ws_bytes / (size_t)p->tm.T / ATTN_ALIGN * ATTN_ALIGN;
    const size_t lo = units * (size_t)p->tm.t / (size_t)p->tm.T;
    const size_t hi = units * (size_t)(p->tm.t + 1) / (size_t)p->tm.T;
    char *scratch = (char *)s->sc->batch_ws + (size_t)p->tm.t * per;
    for (size_t u = lo; u < hi; u++)
        if (kind->unit(s, p->k, l, (int)u, s->sc->q, kk, vv, s->sc->a, scratch, per) != LINATTN_OK) {
#pragma omp atomic write
            *failed = 1;
        }
    meet(p);
    if (p->tm.t == 0 && kind->after)
        kind->after(s, l);
}

/* The largest unit scratch of any layer of s, aligned. */
static size_t team_unit_bytes(const linattn_session *s)
{
    const attn_kind *kind = kind_of(s->m);
    size_t per = 0;
    for (int l = 0; l < s->m->cfg.n_layers; l++) {
        size_t b = kind->unit_bytes(s, l);
        per = b > per ? b : per;
    }
    return (per + ATTN_ALIGN - 1) / ATTN_ALIGN * ATTN_ALIGN;
}

linattn_status linattn_model_size_team(linattn_session *s, int threads)
{
    if (threads > LINATTN_CHUNK)
        threads = LINATTN_CHUNK; /* team_size's cap */
    return unit_scratch(s, team_unit_bytes(s), threads < 1 ? 1 : threads);
}

/* Whether attention of one query against the cache spreads over threads
 * itself (softmax against a long cache, as linattn_attention_softmax
 * decides): it then runs between parallel regions. */
static int attention_apart(const linattn_session *s, int T)
{
    const linattn_model *m = s->m;
    if (m->cfg.attention != LINATTN_ATTN_SOFTMAX || T < 2)
        return 0;
    double keys = (double)s->tokens + 1, work;
    if (m->window > 0 && keys > m->window)
        keys = m->window;
    work = (double)m->h * keys * 2.0 * m->dh;
    return attn_threads_for_work(T, work / 2) > 1;
}

/* The threads one token's team runs with: s's, up to one hbuf row each,
 * and 1 for a model too small to split. */
static int team_size(const linattn_session *s)
{
    const linattn_model *m = s->m;
    const double layer_work = (double)m->d * (2.0 * m->d + 2.0 * m->kvd) +
                              (double)m->d * m->dff * (m->cfg.ffn == LINATTN_FFN_SWIGLU ? 3 : 2);
    int T = s->threads < LINATTN_CHUNK ? s->threads : LINATTN_CHUNK;
    return layer_work < (double)LINATTN_PARALLEL_MIN_LAYER ? 1 : T;
}

linattn_status linattn_model_forward(linattn_session *s, linattn_session *const *streams,
                                     const int *tokens, int n)
{
    const linattn_model *m = s->m;
    const int nl = m->cfg.n_layers;
    const linattn_kernels *k;
    linattn_status st = linattn_kernels_current(&k);
    if (st != LINATTN_OK)
        return st;
    embed(m, s->sc->x, tokens, n, streams, s->tokens);
    if (m->cfg.positions == LINATTN_POS_ROPE)
        rope_angles(m, s->sc->rope, n, streams, s->tokens);
    /* one token of one stream (llama2.c's forward): the layers in one team
     * of threads; attention on thread 0 inside it, or, when it spreads
     * over threads itself, between regions (region l: the end of layer
     * l - 1 and the start of layer l). The same bits at any thread count:
     * every row is summed alike. */
    const int T = n == 1 && !streams ? team_size(s) : 1;
    if (n == 1 && !streams && attention_apart(s, T)) {
        for (int l = 0; l <= nl && st == LINATTN_OK; l++) {
#pragma omp parallel num_threads(T) if (T > 1)
            {
                pass p = {s, k, 1, 1, team_me(), 1, 0};
                if (l > 0)
                    layer_end(&p, l - 1);
                if (l < nl)
                    layer_start(&p, l);
            }
            if (l < nl)
                st = attend_layer(s, k, l, 1, NULL, T);
        }
    } else if (n == 1 && !streams) {
        /* the unit scratch was sized with the session (a step allocates
         * nothing): a team larger than it was sized for is cut to fit */
        const size_t fit = s->sc->batch_ws_bytes / team_unit_bytes(s);
        const int Tf = (size_t)T < fit ? T : fit > 0 ? (int)fit : 1;
        (void)Tf; /* used by the pragma only */
        if (fit == 0)
            return linattn_err(LINATTN_ERR_NOMEM, "decode step: no attention scratch");
        int failed = 0;
#pragma omp parallel num_threads(Tf) if (Tf > 1)
        {
            pass p = {s, k, 1, 1, team_me(), 1, 0};
            for (int l = 0; l < nl; l++) {
                layer_start(&p, l);
                meet(&p);
                attend_team(&p, l, &failed);
                int stop;
#pragma omp atomic read
                stop = failed;
                if (stop)
                    break; /* every thread reads it after the same meeting */
                layer_end(&p, l);
            }
        }
        if (failed)
            return linattn_err(LINATTN_ERR_INVALID, "decode step: attention failed");
    } else {
        /* a chunk of one stream, or one row of each of several */
        pass p = {s, k, n, 0, {0, 1}, s->threads, streams != NULL};
        for (int l = 0; l < nl && st == LINATTN_OK; l++) {
            layer_start(&p, l);
            st = attend_layer(s, k, l, n, streams, s->threads);
            if (st == LINATTN_OK)
                layer_end(&p, l);
        }
    }
    if (st != LINATTN_OK)
        return st;
    if (streams)
        for (int i = 0; i < n; i++)
            streams[i]->tokens++;
    else
        s->tokens += (uint64_t)n;
    return LINATTN_OK;
}

void linattn_model_logits(const linattn_model *m, const linattn_kernels *k, float *x,
                          float *logits, int threads)
{
    linattn_model_logits_rows(m, k, x, 1, logits, threads);
}

static void logits_of(const linattn_model *m, const linattn_kernels *k, float *x, int n,
                      float *logits, int threads, int gemm)
{
    if (m->cfg.norm_position == LINATTN_NORM_PRE)
        norm_rows(m, k, x, x, m->norm_f_w, m->norm_f_b, n);
    if (gemm)
        linattn_project_gemm(k, logits, x, m->lm_head, NULL, n, m->vocab, m->d, threads, 1);
    else
        linattn_project(k, logits, x, m->lm_head, NULL, n, m->vocab, m->d, threads);
}

void linattn_model_logits_rows(const linattn_model *m, const linattn_kernels *k, float *x, int n,
                               float *logits, int threads)
{
    logits_of(m, k, x, n, logits, threads, 0);
}

void linattn_model_logits_gemm(const linattn_model *m, const linattn_kernels *k, float *x, int n,
                               float *logits, int threads)
{
    logits_of(m, k, x, n, logits, threads, 1);
}
