/* attention_softmax.c: tiled (flash-style) softmax attention: online softmax over key tiles, no Lq x Lk buffer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

#ifdef LINATTN_HAVE_OPENMP
#include <omp.h>
#endif

/* A tile is SM_BQ queries x SM_BK keys: the scores tile is 64 KiB, the
 * query block and output accumulator 32 KiB each at d = 64. Measured at
 * L = 1024 and 4096 (AVX2, one thread) 64 x 128 was 2-5% ahead of 64 x 64,
 * 128 x 64 and 48 x 64 and level with 128 x 128 (whose scores tile
 * overflows a 48 KiB L1); but each query block reads its keys and values
 * again (1 MiB a block at L = 4096, d = 64: from L3 once a head's K and V
 * outgrow L2), and two threads share that traffic: on a Zen 5 (AVX-512,
 * H = 8, alternating binaries, three runs each) 128 x 128 against 64 x 128
 * gave at L = 4096 one thread 139-142 against 134-137 GFLOP/s and two
 * threads 253-269 (x1.78-1.94) against 212-216 (x1.58), at L = 1024 two
 * threads x1.75-1.88 against x1.50-1.60, at d = 128 x1.85-1.92 against
 * x1.78-1.80; with AVX2 level at one thread and 1-5% ahead at two. */
#ifndef SM_BQ
#define SM_BQ 128
#endif
#ifndef SM_BK
#define SM_BK 128
#endif

/* One thread's buffers, carved from the workspace. */
typedef struct sm_buffers {
    float *qs; /* [SM_BQ][dk]     queries of the block, times scale */
    float *s;  /* [SM_BQ][SM_BK]  scores, then probabilities */
    float *o;  /* [SM_BQ][dv]     unnormalised output accumulator */
    float *m;  /* [SM_BQ]         running row max */
    float *l;  /* [SM_BQ]         running row sum of exp(score - m) */
    float *vr; /* [dv]            a value row converted from half (F16 k, v) */
} sm_buffers;

static size_t sm_thread_floats(size_t dk, size_t dv)
{
    size_t f = attn_round(attn_mul(SM_BQ, dk));
    f = attn_add(f, attn_round((size_t)SM_BQ * SM_BK));
    f = attn_add(f, attn_round(attn_mul(SM_BQ, dv)));
    f = attn_add(f, 2 * attn_round(SM_BQ));
    return attn_add(f, attn_round(dv));
}

static sm_buffers sm_carve(float *base, size_t dk, size_t dv)
{
    sm_buffers b;
    b.qs = base;
    b.s = b.qs + attn_round(SM_BQ * dk);
    b.o = b.s + attn_round((size_t)SM_BQ * SM_BK);
    b.m = b.o + attn_round(SM_BQ * dv);
    b.l = b.m + attn_round(SM_BQ);
    b.vr = b.l + attn_round(SM_BQ);
    return b;
}



/* Pointers to the (b, h) slices of the four tensors; k and v hold fp32,
 * or IEEE halfs when kv16 (linattn_attention_softmax_f16kv). */
typedef struct sm_head {
    const float *q;
    const void *k, *v;
    float *out;
    float *lse; /* [Lq] each row's log-sum-exp of its visible scores, or NULL */
    int len;    /* valid keys */
    int kv16;   /* k, v are halfs */
} sm_head;

/* &x[i] of a k or v tensor of fp32 or (kv16) halfs */
static const void *sm_at(const void *x, size_t i, int kv16)
{
    return (const char *)x + i * (kv16 ? sizeof(uint16_t) : sizeof(float));
}

static sm_head sm_head_at(const attn_plan *p, const float *q, const void *k, const void *v,
                          float *out, float *lse, size_t bh, int kv16)
{
    size_t b = bh / (size_t)p->H, h = bh % (size_t)p->H;
    sm_head hd;
    hd.q = q + b * p->q.batch + h * p->q.head;
    hd.k = sm_at(k, b * p->k.batch + h / (size_t)p->group * p->k.head, kv16);
    hd.v = sm_at(v, b * p->v.batch + h / (size_t)p->group * p->v.head, kv16);
    hd.out = out + b * p->out.batch + h * p->out.head;
    hd.lse = lse ? lse + bh * (size_t)p->Lq : NULL;
    hd.len = attn_len(p, (int)b);
    hd.kv16 = kv16;
    return hd;
}

/* C[M x N] += A . V[K x N] for fp32 or half V (the same FMAs either way). */
static void sm_gemm_nn(const linattn_kernels *kt, float *C, size_t ldc, const float *A,
                       size_t lda, const void *V, size_t ldv, size_t M, size_t N, size_t K,
                       int kv16)
{
    if (kv16)
        kt->gemm_nn_f16(C, ldc, A, lda, (const uint16_t *)V, ldv, M, N, K);
    else
        kt->gemm_nn(C, ldc, A, lda, (const float *)V, ldv, M, N, K);
}

/* o[r] += s[r][lo[r]..vis[r]) . v_tile rows, for rows [0, nq): each row
 * reads only the values it sees, so a later (or, in a window, an older)
 * position's inf or NaN value never meets a masked zero (0 * inf is NaN).
 * Runs of fully visible rows take one gemm; a causal diagonal's partial rows
 * go 8 at a time, by gemm over their common visible columns, then axpy over
 * each row's few remaining ones; a row whose window starts inside the tile
 * takes a gemm of its own. */
static void sm_accumulate(const linattn_kernels *kt, float *o, size_t dv, const float *s,
                          const int *lo, const int *vis, int nq, const void *v, size_t vrow,
                          int n, int kv16, float *vr)
{
    int r = 0;
    while (r < nq) {
        if (vis[r] <= lo[r]) {
            r++;
            continue;
        }
        if (lo[r] > 0) {
            sm_gemm_nn(kt, o + (size_t)r * dv, dv, s + (size_t)r * SM_BK + lo[r], SM_BK,
                       sm_at(v, (size_t)lo[r] * vrow, kv16), vrow, 1, dv,
                       (size_t)(vis[r] - lo[r]), kv16);
            r++;
            continue;
        }
        int r2 = r + 1;
        if (vis[r] == n) {
            while (r2 < nq && vis[r2] == n && lo[r2] == 0)
                r2++;
            sm_gemm_nn(kt, o + (size_t)r * dv, dv, s + (size_t)r * SM_BK, SM_BK, v, vrow,
                       (size_t)(r2 - r), dv, (size_t)n, kv16);
            r = r2;
            continue;
        }
        int common = vis[r];
        while (r2 < nq && r2 - r < 8 && lo[r2] == 0 && vis[r2] > 0 && vis[r2] < n) {
            common = vis[r2] < common ? vis[r2] : common;
            r2++;
        }
        sm_gemm_nn(kt, o + (size_t)r * dv, dv, s + (size_t)r * SM_BK, SM_BK, v, vrow,
                   (size_t)(r2 - r), dv, (size_t)common, kv16);
        for (int x = r; x < r2; x++)
            for (int j = common; j < vis[x]; j++) {
                const void *vj = sm_at(v, (size_t)j * vrow, kv16);
                const float *row = vj;
                if (kv16) { /* the row in fp32, exactly: 0 + 1 * v */
                    static const float one = 1.0f;
                    memset(vr, 0, dv * sizeof(float));
                    kt->gemm_nn_f16(vr, dv, &one, 1, vj, dv, 1, dv, 1);
                    row = vr;
                }
                kt->axpy(o + (size_t)x * dv, s[(size_t)x * SM_BK + j], row, dv);
            }
        r = r2;
    }
}

/* Queries [i0, i0 + nq) of one head against the key tiles of [kbeg, kstop)
 * they can see, into b's unnormalised o, running max m and sum l. Query i
 * sees keys j < len, and j <= p = i + (Lk - Lq) when causal, and j > p - W
 * with a window W. Key tiles past the last visible key, or before the first
 * row's window, are never computed. */
static void sm_range(const linattn_kernels *kt, const attn_plan *p, const sm_head *hd, int i0,
                     int nq, int kbeg, int kstop, sm_buffers *b)
{
    const size_t dk = (size_t)p->dk, dv = (size_t)p->dv;
    const int off = p->Lk - p->Lq;
    int kend = hd->len < kstop ? hd->len : kstop; /* keys [kbeg, kend) are visible to some row */
    if (p->causal && i0 + nq + off < kend)
        kend = i0 + nq + off;
    for (int r = 0; r < nq; r++) {
        b->m[r] = -INFINITY;
        b->l[r] = 0.0f;
    }
    memset(b->o, 0, (size_t)nq * dv * sizeof(float));
    if (p->window > 0 && i0 + off - p->window + 1 > kbeg)
        kbeg = i0 + off - p->window + 1; /* the block's first row sees no older key */
    if (kend <= kbeg)
        return;
    for (int r = 0; r < nq; r++) {
        const float *src = hd->q + (size_t)(i0 + r) * p->q.row;
        float *dst = b->qs + (size_t)r * dk;
        for (size_t c = 0; c < dk; c++)
            dst[c] = src[c] * p->scale;
    }

    int vis_of[SM_BQ], lo_of[SM_BQ];
    for (int j0 = kbeg; j0 < kend; j0 += SM_BK) {
        const int n = kend - j0 < SM_BK ? kend - j0 : SM_BK;
        for (int r = 0; r < nq; r++)
            memset(b->s + (size_t)r * SM_BK, 0, (size_t)n * sizeof(float));
        /* s = qs . k_tile^T  [nq x n] */
        const void *ktile = sm_at(hd->k, (size_t)j0 * p->k.row, hd->kv16);
        if (hd->kv16)
            kt->gemm_nt_f16(b->s, SM_BK, b->qs, dk, (const uint16_t *)ktile, p->k.row, (size_t)nq,
                            (size_t)n, dk);
        else
            kt->gemm_nt(b->s, SM_BK, b->qs, dk, (const float *)ktile, p->k.row, (size_t)nq,
                        (size_t)n, dk);

        for (int r = 0; r < nq; r++) {
            float *row = b->s + (size_t)r * SM_BK;
            int vis = n; /* columns [0, vis) of this row are visible */
            if (p->causal) {
                int last = i0 + r + off - j0; /* last visible column */
                vis = last < 0 ? 0 : last + 1 < n ? last + 1 : n;
            }
            int lo = 0; /* the window's first column in this tile */
            if (p->window > 0) {
                int first = i0 + r + off - p->window + 1 - j0;
                lo = first > 0 ? first : 0;
            }
            vis_of[r] = vis;
            lo_of[r] = lo;
            if (vis <= lo)
                continue;
            /* NaN when a visible score is not finite (a NaN in q or k, or
             * q.k scale overflowing): the running max, then l and o, carry
             * it to the row's output; NaN is never dropped by a compare. */
            float mx = kt->max(row + lo, (size_t)(vis - lo));
            float m_old = b->m[r];
            float m_new = mx > m_old || isnan(mx) ? mx : m_old;
            float sum = kt->exp_sub_sum(row + lo, row + lo, m_new, (size_t)(vis - lo));
            if (m_new != m_old && b->l[r] != 0.0f) {
                /* Rescale what earlier tiles accumulated to the new max. */
                float alpha = expf(m_old - m_new);
                b->l[r] *= alpha;
                kt->scale(b->o + (size_t)r * dv, alpha, dv);
            }
            b->l[r] += sum;
            b->m[r] = m_new;
        }
        /* o += p . v_tile  [nq x dv], visible columns only */
        sm_accumulate(kt, b->o, dv, b->s, lo_of, vis_of, nq,
                      sm_at(hd->v, (size_t)j0 * p->v.row, hd->kv16), p->v.row, n, hd->kv16,
                      b->vr);
    }
}

static int sm_all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

/* Row i of one head (fp32 k, v) again, with its weights normalised before
 * they meet the values, into dst[dv]: for a row whose unnormalised sum
 * o = sum e^(s - m) v overflowed (n values near FLT_MAX / n, or mixed signs
 * giving inf - inf) while its scores were finite. sum w_j v_j with
 * w_j = e^(s_j - m) / l summing to 1 is a convex combination, so
 * |dst| <= max |v| (to rounding); an inf or NaN value the row sees still
 * reaches it. qs: the row's query times scale [dk]. Reads only the keys the
 * row sees (causal, window, valid length), as sm_range. */
static void sm_row_convex(const linattn_kernels *kt, const attn_plan *p, const sm_head *hd, int i,
                          const float *qs, float *dst)
{
    const size_t dk = (size_t)p->dk, dv = (size_t)p->dv;
    const int pos = i + p->Lk - p->Lq;
    int lo = 0, hi = hd->len;
    if (p->causal && pos + 1 < hi)
        hi = pos + 1;
    if (p->window > 0 && pos - p->window + 1 > lo)
        lo = pos - p->window + 1;
    const float *K = hd->k, *V = hd->v;
    float m = -INFINITY, l = 0.0f;
    for (int j = lo; j < hi; j++) {
        float s = kt->dot(qs, K + (size_t)j * p->k.row, dk);
        if (s > m) {
            l *= expf(m - s);
            m = s;
        }
        l += expf(s - m);
    }
    memset(dst, 0, dv * sizeof(float));
    const float inv = 1.0f / l;
    for (int j = lo; j < hi; j++) {
        float s = kt->dot(qs, K + (size_t)j * p->k.row, dk);
        kt->axpy(dst, expf(s - m) * inv, V + (size_t)j * p->v.row, dv);
    }
}

/* Whether a row's output dst[dv] must be made again by sm_row_convex: it is
 * not finite while its max m and sum l are (every score it saw finite).
 * Halfs (kv16) never come near FLT_MAX: n of them sum past it only for
 * n > 5e33 keys. Rows with finite outputs, nearly all, keep their bits. */
static int sm_overflowed(const sm_head *hd, const float *dst, size_t dv, float m, float l)
{
    return !hd->kv16 && !sm_all_finite(dst, dv) && isfinite(m) && isfinite(l) && l > 0.0f;
}

/* Rows [i0, i0 + nq) of out = o / l; a row that saw no key (l = 0: a key
 * seen adds at least e^0) is zeros (the contract), its log-sum-exp -inf; a
 * row whose l is NaN (a score that was not finite) is NaN; a row whose o
 * overflowed is made again by sm_row_convex. */
static void sm_finish(const linattn_kernels *kt, const attn_plan *p, const sm_head *hd, int i0,
                      int nq, const sm_buffers *b)
{
    const size_t dv = (size_t)p->dv;
    for (int r = 0; r < nq; r++) {
        if (hd->lse)
            hd->lse[i0 + r] = b->l[r] != 0.0f ? b->m[r] + logf(b->l[r]) : -INFINITY;
        float *dst = hd->out + (size_t)(i0 + r) * p->out.row;
        const float *acc = b->o + (size_t)r * dv;
        if (b->l[r] != 0.0f) {
            float inv = 1.0f / b->l[r];
            for (size_t c = 0; c < dv; c++)
                dst[c] = acc[c] * inv;
            if (sm_overflowed(hd, dst, dv, b->m[r], b->l[r]))
                sm_row_convex(kt, p, hd, i0 + r, b->qs + (size_t)r * p->dk, dst);
        } else {
            memset(dst, 0, dv * sizeof(float));
        }
    }
}

/* Flash-decoding: a block of at most SM_BQ queries (decode: one) against
 * more than SM_SPLIT_KEYS keys is cut into key segments of SM_SPLIT_KEYS,
 * each computed apart (on any thread) into a partial (o, m, l), then the
 * partials are merged in segment order. The cut depends on the shape only,
 * never on the thread count, so every thread count gives the same result;
 * it lets two threads share one head's long cache. 8 tiles a segment: the
 * merge (dv + 2 floats a row per segment) is under 1% of a segment's work. */
#define SM_SPLIT_KEYS (8 * SM_BK)

static int sm_segments(int Lq, int Lk)
{
    return Lq <= SM_BQ && Lk > SM_SPLIT_KEYS ? (Lk + SM_SPLIT_KEYS - 1) / SM_SPLIT_KEYS : 1;
}

/* floats of one partial: nq rows of o, then m and l */
static size_t sm_partial_floats(int nq, size_t dv)
{
    return attn_round(attn_mul((size_t)nq, attn_add(dv, 2)));
}

static void sm_partial_store(float *part, int nq, size_t dv, const sm_buffers *b)
{
    memcpy(part, b->o, (size_t)nq * dv * sizeof(float));
    memcpy(part + (size_t)nq * dv, b->m, (size_t)nq * sizeof(float));
    memcpy(part + (size_t)nq * (dv + 1), b->l, (size_t)nq * sizeof(float));
}

/* out rows = the merge of nseg partials: M = max m over segments that saw
 * a key, o = sum o_s e^(m_s - M) / sum l_s e^(m_s - M); a segment whose m
 * or l is NaN (a score that was not finite) makes the row NaN; a row whose
 * o overflowed (in a segment or in the merge) is made again by
 * sm_row_convex, qs [dk] its scratch. */
static void sm_merge(const linattn_kernels *kt, const attn_plan *p, const sm_head *hd, int nq,
                     const float *parts, size_t stride, int nseg, float *qs)
{
    const size_t dv = (size_t)p->dv;
    for (int r = 0; r < nq; r++) {
        float M = -INFINITY;
        for (int g = 0; g < nseg; g++) {
            const float *pg = parts + (size_t)g * stride;
            float l = pg[(size_t)nq * (dv + 1) + r], m = pg[(size_t)nq * dv + r];
            if (isnan(l) || (l > 0.0f && isnan(m))) {
                M = NAN;
                break;
            }
            if (l > 0.0f && m > M)
                M = m;
        }
        float *dst = hd->out + (size_t)r * p->out.row;
        if (isnan(M)) {
            for (size_t c = 0; c < dv; c++)
                dst[c] = NAN;
            if (hd->lse)
                hd->lse[r] = NAN;
            continue;
        }
        memset(dst, 0, dv * sizeof(float));
        float L = 0.0f;
        for (int g = 0; g < nseg && M > -INFINITY; g++) {
            const float *pg = parts + (size_t)g * stride;
            float l = pg[(size_t)nq * (dv + 1) + r], m = pg[(size_t)nq * dv + r];
            if (!(l > 0.0f))
                continue;
            float w = expf(m - M);
            L += l * w;
            kt->axpy(dst, w, pg + (size_t)r * dv, dv);
        }
        if (L > 0.0f)
            kt->scale(dst, 1.0f / L, dv);
        if (sm_overflowed(hd, dst, dv, M, L)) {
            const float *src = hd->q + (size_t)r * p->q.row;
            for (size_t c = 0; c < (size_t)p->dk; c++)
                qs[c] = src[c] * p->scale;
            sm_row_convex(kt, p, hd, r, qs, dst);
        }
        if (hd->lse)
            hd->lse[r] = L > 0.0f ? M + logf(L) : -INFINITY;
    }
}

/* The partials of a split call: B H segments, each min(Lq, SM_BQ) rows. */
static size_t sm_split_floats(long heads, int Lq, int Lk, size_t dv)
{
    int nseg = sm_segments(Lq, Lk);
    if (nseg == 1)
        return 0;
    return attn_mul(attn_mul((size_t)heads, (size_t)nseg), sm_partial_floats(Lq, dv));
}

/* Enough for any call with len_q and len_k up to the descriptor's (a
 * session sizes it once for its longest chunk and cache). */
size_t linattn_attention_softmax_workspace(const linattn_attention_desc *d)
{
    if (!d || d->d_k <= 0 || d->d_v <= 0 || d->threads < 0)
        return 0;
    size_t split = 0;
    if (d->batch > 0 && d->heads > 0 && d->len_q > 0 && d->len_k > 0)
        split = sm_split_floats((long)d->batch * d->heads, d->len_q < SM_BQ ? d->len_q : SM_BQ,
                                d->len_k, (size_t)d->d_v);
    return attn_workspace_bytes(split, sm_thread_floats((size_t)d->d_k, (size_t)d->d_v),
                                attn_threads_max(d->threads));
}

/* The operator over fp32 or (kv16) half k and v. */
static linattn_status softmax_run(const linattn_attention_desc *d, const float *q, const void *k,
                                  const void *v, float *out, float *lse, int kv16)
{
    attn_plan p;
    const char *op = kv16 ? "softmax_f16kv" : "softmax";
    linattn_status st = attn_plan_make(d, op, q, (const float *)k, (const float *)v, out, &p);
    if (st != LINATTN_OK)
        return st;
    const linattn_kernels *kt;
    if ((st = linattn_kernels_current(&kt)) != LINATTN_OK)
        return st;

    const size_t dk = (size_t)p.dk, dv = (size_t)p.dv;
    const size_t per_thread = sm_thread_floats(dk, dv);
    const long heads = (long)p.B * p.H;
    const size_t split = sm_split_floats(heads, p.Lq, p.Lk, dv);
    float *ws = NULL;
    void *owned;
    st = attn_workspace_get(d, attn_workspace_bytes(split, per_thread, p.threads), op, &ws,
                            &owned);
    if (st != LINATTN_OK)
        return st;

    const long nqb = (p.Lq + SM_BQ - 1) / SM_BQ;
    const int band = p.window > 0 && p.window < p.Lk ? p.window : p.Lk; /* keys a row sees */
    double work = (double)heads * p.Lq * band * (p.dk + p.dv);
    const int nt = attn_threads_for_work(p.threads, p.causal && band == p.Lk ? work / 2 : work);
    const int nseg = sm_segments(p.Lq, p.Lk);
    if (nseg > 1) {
        /* One block of queries a head: (head, key segment) pairs, then the
         * merge by heads. The partials sit after the threads' buffers. */
        float *parts = ws + per_thread * (size_t)p.threads;
        const size_t stride = sm_partial_floats(p.Lq, dv);
#ifdef LINATTN_HAVE_OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
        {
#ifdef LINATTN_HAVE_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long it = 0; it < heads * nseg; it++) {
                sm_buffers b = sm_carve(ws + (size_t)attn_thread_id() * per_thread, dk, dv);
                sm_head hd = sm_head_at(&p, q, k, v, out, lse, (size_t)(it / nseg), kv16);
                int g = (int)(it % nseg);
                sm_range(kt, &p, &hd, 0, p.Lq, g * SM_SPLIT_KEYS, (g + 1) * SM_SPLIT_KEYS, &b);
                sm_partial_store(parts + (size_t)it * stride, p.Lq, dv, &b);
            }
#ifdef LINATTN_HAVE_OPENMP
#pragma omp for schedule(static)
#endif
            for (long bh = 0; bh < heads; bh++) {
                sm_head hd = sm_head_at(&p, q, k, v, out, lse, (size_t)bh, kv16);
                float *qs = ws + (size_t)attn_thread_id() * per_thread; /* its buffers' qs */
                sm_merge(kt, &p, &hd, p.Lq, parts + (size_t)bh * nseg * stride, stride, nseg,
                         qs);
            }
        }
    } else if (heads >= nt) {
        /* Enough (b, h) pairs to go round: a thread keeps one head's K, V hot. */
#ifdef LINATTN_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
#endif
        for (long bh = 0; bh < heads; bh++) {
            sm_buffers b = sm_carve(ws + (size_t)attn_thread_id() * per_thread, dk, dv);
            sm_head hd = sm_head_at(&p, q, k, v, out, lse, (size_t)bh, kv16);
            for (long qb = 0; qb < nqb; qb++) {
                int i0 = (int)qb * SM_BQ, nq = p.Lq - i0 < SM_BQ ? p.Lq - i0 : SM_BQ;
                sm_range(kt, &p, &hd, i0, nq, 0, p.Lk, &b);
                sm_finish(kt, &p, &hd, i0, nq, &b);
            }
        }
    } else {
        /* Fewer heads than threads: split by query blocks too, the last (in
         * causal, the longest) blocks first so the short ones fill the gaps. */
#ifdef LINATTN_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
#endif
        for (long it = 0; it < heads * nqb; it++) {
            sm_buffers b = sm_carve(ws + (size_t)attn_thread_id() * per_thread, dk, dv);
            sm_head hd = sm_head_at(&p, q, k, v, out, lse, (size_t)(it % heads), kv16);
            int i0 = (int)(nqb - 1 - it / heads) * SM_BQ, nq = p.Lq - i0 < SM_BQ ? p.Lq - i0 : SM_BQ;
            sm_range(kt, &p, &hd, i0, nq, 0, p.Lk, &b);
            sm_finish(kt, &p, &hd, i0, nq, &b);
        }
    }
    mem_free(owned);
    return LINATTN_OK;
}

linattn_status linattn_attention_softmax(const linattn_attention_desc *d, const float *q,
                                         const float *k, const float *v, float *out)
{
    return softmax_run(d, q, k, v, out, NULL, 0);
}

linattn_status linattn_attention_softmax_f16kv(const linattn_attention_desc *d, const float *q,
                                               const uint16_t *k, const uint16_t *v, float *out)
{
    return softmax_run(d, q, k, v, out, NULL, 1);
}

linattn_status linattn_attention_softmax_lse(const linattn_attention_desc *d, const float *q,
                                             const void *k, const void *v, float *out, float *lse,
                                             int kv16)
{
    return softmax_run(d, q, k, v, out, lse, kv16);
}
