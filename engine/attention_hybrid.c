/* attention_hybrid.c: a stream's hybrid attention: a softmax window of W keys plus a decayed linear tail of older keys, one normalisation. */
#include <math.h>
#include <string.h>

#include "attention.h"
#include "f16.h"
#include "model.h"

/* For query i with window scores s_ij = q_i . k_j scale (i - W < j <= i)
 * and c_i their max, the weights are e^(s_ij - c_i) in the window and
 * e^(lambda - c_i) g^(i - j) phi(q_i) . phi(k_j) for j <= i - W. With the
 * window's normalised output o_w and log-sum-exp l, and the tail's
 * normalised output o_t and mass D (its sums' denominator), the mean over
 * both is
 *     out = (o_w + rho o_t) / (1 + rho),  rho = e^(lambda - l) g^W D,
 * a convex combination: |out| <= max |v| however large rho is, and no
 * e^(lambda - c) is ever formed, so nothing overflows. The tail's state
 * holds the keys that left the window, each entering it W tokens after
 * its own position: its sums are those of time i - W, g^W away. */

/* A token's buffers, shared by the threads of its groups (at the start
 * of the stream's scratch): the leaving k, v [kvd]; q, k through the maps
 * [H][F]; v per query head, the tail's output [H][dh]. */
static size_t row_floats(const linattn_model *m)
{
    const size_t H = (size_t)m->h, F = (size_t)m->fdim, dh = (size_t)m->dh;
    return 2 * (size_t)m->kvd + 2 * H * F + 2 * H * dh;
}

typedef struct row_bufs {
    float *kl, *vl, *qf, *kf, *vh, *ot;
} row_bufs;

static row_bufs row_carve(const linattn_session *s)
{
    const linattn_model *m = s->m;
    const size_t HF = (size_t)m->h * m->fdim, Hd = (size_t)m->h * m->dh;
    row_bufs b;
    b.kl = s->row_ws;
    b.vl = b.kl + m->kvd;
    b.qf = b.vl + m->kvd;
    b.kf = b.qf + HF;
    b.vh = b.kf + HF;
    b.ot = b.vh + Hd;
    return b;
}

/* A chunk's scratch (hybrid_chunk), carved in this order */
static size_t chunk_floats(const linattn_model *m)
{
    const size_t H = (size_t)m->h, F = (size_t)m->fdim, dh = (size_t)m->dh, C = LINATTN_CHUNK;
    return H * C /* lse */ + 2 * C * H * F /* q, k through the maps */ +
           2 * C * H * dh /* v per query head, o_t */ + 2 * C * (size_t)m->kvd /* k, v widened */ +
           2 * H * F /* per head: z, phi(q) */;
}

size_t linattn_hybrid_scratch_floats(const linattn_model *m)
{
    /* a chunk's, or the row buffers of a step's streams (one a stream) */
    size_t r = (size_t)LINATTN_CHUNK * row_floats(m), c = chunk_floats(m);
    return c > r ? c : r;
}

float *linattn_hybrid_row_ws(const linattn_session *w, int i)
{
    return w->sc->hyb_ws + (size_t)i * row_floats(w->m);
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

/* One head's window: o[dh] = softmax(q . K^T scale) V over the n ring rows
 * (k/v rows ld elements apart, fp32 or halfs); returns the log-sum-exp of
 * the scores. Every row of the ring is visible (it only holds the window). */
static float window_head(const linattn_kernels *kt, const float *q, const void *K, const void *V,
                         size_t ld, int n, int dh, int kv16, float scale, float *sc, float *qs,
                         float *o)
{
    for (int c = 0; c < dh; c++)
        qs[c] = q[c] * scale;
    if (kv16)
        kt->gemv_f16(sc, K, ld, qs, NULL, (size_t)n, (size_t)dh);
    else
        kt->gemv(sc, K, ld, qs, NULL, (size_t)n, (size_t)dh);
    float mx = kt->max(sc, (size_t)n);
    memset(o, 0, (size_t)dh * sizeof(float));
    if (isnan(mx) || mx == INFINITY) { /* never hidden: the row becomes NaN */
        for (int c = 0; c < dh; c++)
            o[c] = NAN;
        return NAN;
    }
    float sum = kt->exp_sub_sum(sc, sc, mx, (size_t)n);
    if (kv16)
        kt->gemm_nn_f16(o, (size_t)dh, sc, (size_t)n, V, ld, 1, (size_t)dh, (size_t)n);
    else
        kt->gemm_nn(o, (size_t)dh, sc, (size_t)n, V, ld, 1, (size_t)dh, (size_t)n);
    kt->scale(o, 1.0f / sum, (size_t)dh);
    if (!kv16 && !all_finite(o, (size_t)dh)) {
        /* the unnormalised sum of up to W values near FLT_MAX overflows
         * (or a value is not finite): again with the weights normalised
         * first, a convex combination, |o| <= max |v| (a NaN or inf in v
         * still reaches o). Halfs never come near FLT_MAX. */
        kt->scale(sc, 1.0f / sum, (size_t)n);
        memset(o, 0, (size_t)dh * sizeof(float));
        kt->gemm_nn(o, (size_t)dh, sc, (size_t)n, V, ld, 1, (size_t)dh, (size_t)n);
    }
    return mx + logf(sum);
}

/* Row r (one head) of a chunk's window again, by weights e^(s - lse) that
 * sum to 1, when the operator's unnormalised sum overflowed: the keys K,
 * values V [n][ld] fp32 that the row sees, lse its log-sum-exp. */
static void window_row_convex(const linattn_kernels *kt, const float *q, const float *K,
                              const float *V, size_t ld, int n, int dh, float scale, float lse,
                              float *o)
{
    memset(o, 0, (size_t)dh * sizeof(float));
    for (int j = 0; j < n; j++) {
        float s = kt->dot(q, K + (size_t)j * ld, (size_t)dh) * scale;
        kt->axpy(o, expf(s - lse), V + (size_t)j * ld, (size_t)dh);
    }
}

/* A cache row as fp32 into dst (copied, or widened from halfs). */
static void row_f32(const linattn_kernels *kt, float *dst, const void *src, size_t n, int kv16)
{
    if (!kv16) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    static const float one = 1.0f; /* 0 + 1 * v: exact */
    memset(dst, 0, n * sizeof(float));
    kt->gemm_nn_f16(dst, n, &one, 1, src, n, 1, n, 1);
}

/* alpha = rho / (1 + rho) from log rho, without overflow either way */
static float tail_share(float lr)
{
    if (isnan(lr))
        return NAN;
    float e = expf(-fabsf(lr));
    return lr >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

/* A thread's scratch for hybrid_group: scores [W], the scaled query
 * [dh], phi(q) [F], then the linear step's (aligned). */
size_t linattn_hybrid_group_bytes(const linattn_session *s, int layer)
{
    const linattn_model *m = s->m;
    size_t floats = (size_t)m->window + (size_t)m->dh + (size_t)m->fdim;
    floats = (floats + 15) / 16 * 16;
    return floats * sizeof(float) + linattn_linear_step_scratch_bytes(s->lin[layer]) +
           2 * ATTN_ALIGN;
}

void linattn_hybrid_begin(linattn_session *s, const linattn_kernels *kt, int layer,
                          const float *k, const float *v)
{
    const linattn_model *m = s->m;
    const uint64_t pos = s->tokens;
    const size_t kvd = (size_t)m->kvd;
    if (pos >= (uint64_t)m->window) { /* the key W tokens old leaves (its slot is this row's) */
        row_bufs b = row_carve(s);
        row_f32(kt, b.kl, linattn_cache_at(s, 0, layer, pos), kvd, s->kv16);
        row_f32(kt, b.vl, linattn_cache_at(s, 1, layer, pos), kvd, s->kv16);
    }
    linattn_cache_put(s, kt, layer, pos, k, v, kvd);
}

linattn_status linattn_hybrid_group(linattn_session *s, const linattn_kernels *kt, int layer,
                                    int g, const float *q, float *out, void *scratch)
{
    const linattn_model *m = s->m;
    const linattn_layer *L = &m->layers[layer];
    const int dh = m->dh, F = m->fdim, W = m->window, group = m->h / m->g;
    const int h0 = g * group, h1 = h0 + group;
    const size_t kvd = (size_t)m->kvd;
    const uint64_t pos = s->tokens;
    const int tail = pos >= (uint64_t)W;
    row_bufs b = row_carve(s);
    uintptr_t al = ((uintptr_t)scratch + ATTN_ALIGN - 1) & ~(uintptr_t)(ATTN_ALIGN - 1);
    float *sc = (float *)al, *qs = sc + W, *pq = qs + dh;
    void *step_ws = (char *)scratch +
                    ((size_t)(W + dh + F + 15) / 16 * 16) * sizeof(float) + ATTN_ALIGN;
    if (tail) { /* the leaving key joins the tail's sums; each head reads them */
        float *kg = b.kf + (size_t)h0 * F;
        if (L->wq_phi) /* its k/v head's map, once a group */
            kt->gemv(kg, L->wk_phi + (size_t)g * F * dh, (size_t)dh, b.kl + (size_t)g * dh, NULL,
                     (size_t)F, (size_t)dh);
        else
            memcpy(kg, b.kl + (size_t)g * dh, (size_t)dh * sizeof(float));
        for (int h = h0; h < h1; h++) {
            if (L->wq_phi)
                kt->gemv(b.qf + (size_t)h * F, L->wq_phi + (size_t)h * F * dh, (size_t)dh,
                         q + (size_t)h * dh, NULL, (size_t)F, (size_t)dh);
            else
                memcpy(b.qf + (size_t)h * F, q + (size_t)h * dh, (size_t)dh * sizeof(float));
            if (h > h0)
                memcpy(b.kf + (size_t)h * F, kg, (size_t)F * sizeof(float));
            memcpy(b.vh + (size_t)h * dh, b.vl + (size_t)g * dh, (size_t)dh * sizeof(float));
        }
        linattn_status st =
            linattn_linear_step_heads(s->lin[layer], h0, h1, b.qf, b.kf, b.vh, b.ot, step_ws);
        if (st != LINATTN_OK)
            return st;
    }
    const int n = pos + 1 < (uint64_t)W ? (int)pos + 1 : W; /* keys in the ring */
    const float scale = 1.0f / sqrtf((float)dh);
    const size_t off = (size_t)g * dh * linattn_cache_elem(s); /* the k/v head in a row */
    const char *K = (const char *)linattn_cache_at(s, 0, layer, 0) + off;
    const char *V = (const char *)linattn_cache_at(s, 1, layer, 0) + off;
    for (int h = h0; h < h1; h++) {
        float *o = out + (size_t)h * dh;
        float lse = window_head(kt, q + (size_t)h * dh, K, V, kvd, n, dh, s->kv16, scale, sc, qs,
                                o);
        if (!tail)
            continue;
        kt->elu1(pq, b.qf + (size_t)h * F, (size_t)F);
        float D = linattn_linear_state_den(s->lin[layer], kt, h, pq, 1);
        if (D == 0.0f)
            continue; /* every phi underflowed: the tail weighs nothing */
        float alpha = tail_share(L->lin_scale[h] - lse + m->log_gw[h] + logf(D));
        const float *t = b.ot + (size_t)h * dh;
        for (int c = 0; c < dh; c++)
            o[c] += alpha * (t[c] - o[c]);
    }
    return LINATTN_OK;
}

void linattn_hybrid_end(linattn_session *s, int layer)
{
    if (s->tokens >= (uint64_t)s->m->window)
        linattn_linear_step_done(s->lin[layer]);
}

/* n rows from position t0, by the operators (each tiled or chunked,
 * split over threads as their own calls are):
 *  1. the window: the softmax operator with a band of W over the ring's
 *     rows before the chunk and the chunk's own, with each row's lse;
 *  2. the tail: row r's key is the one W tokens older (position
 *     t0 + r - W, from the ring or the chunk), so the tail is a causal
 *     linear prefill of the chunk's rows paired with those keys, on the
 *     stream's state, for the rows r >= W - t0 that have one;
 *  3. each row's tail mass D = phi(q) . z, z carried along the rows from
 *     the state's as a read weighs it (z = g z + phi(k) a row), and the
 *     mix of hybrid_row.
 * The same sums as the rows one by one, in another order: the rows' and
 * this form agree to rounding (tests: prefill against steps). */
static linattn_status hybrid_chunk(linattn_session *s, const linattn_kernels *kt, int layer,
                                   uint64_t t0, const float *q, const float *k, const float *v,
                                   float *out, int n, int threads, float *ws)
{
    const linattn_model *m = s->m;
    const linattn_layer *L = &m->layers[layer];
    const int H = m->h, dh = m->dh, F = m->fdim, W = m->window, group = m->h / m->g;
    const size_t kvd = (size_t)m->kvd, d = (size_t)m->d, elem = linattn_cache_elem(s);
    const size_t HF = (size_t)H * F, Hd = (size_t)H * dh, C = LINATTN_CHUNK;
    const int T = attn_threads(threads);
    float *lse = ws;                           /* [H][n] */
    float *qf = lse + (size_t)H * C;           /* [rows][H][F]: q through the maps */
    float *kf = qf + C * HF;                   /* [rows][H][F]: the older keys, per query head */
    float *vh = kf + C * HF;                   /* [rows][H][dh]: their values */
    float *ot = vh + C * Hd;                   /* [rows][H][dh]: the tail's output */
    float *kw = ot + C * Hd, *vw = kw + C * kvd; /* [rows][kvd]: keys, values widened */
    float *zs = vw + C * kvd, *ph = zs + HF;   /* [H][F] each */

    /* the ring's rows from t0 - W (the first to leave the window) up to the
     * chunk, then the chunk's, in position order; then the last W rows
     * stay in the ring */
    const int prev = t0 < (uint64_t)W ? (int)t0 : W;
    char *gk = s->sc->gather_k, *gv = s->sc->gather_v;
    linattn_window_gather(s, kt, layer, k, v, n, prev);

    /* 1. the window (the leaving row t0 - W is not in it) */
    const int skip = prev == W ? 1 : 0;
    linattn_attention_desc desc;
    linattn_attention_desc_init(&desc);
    desc.batch = 1;
    desc.heads = H;
    desc.kv_heads = m->g;
    desc.len_q = n;
    desc.len_k = prev - skip + n;
    desc.d_k = desc.d_v = dh;
    desc.causal = 1;
    desc.window = W;
    desc.threads = threads;
    desc.q = desc.out = (linattn_layout){0, (size_t)dh, d};
    desc.k = desc.v = (linattn_layout){0, (size_t)dh, kvd};
    desc.workspace = s->sc->attn_ws;
    desc.workspace_bytes = s->sc->attn_ws_bytes;
    linattn_status st = linattn_attention_softmax_lse(&desc, q, gk + (size_t)skip * kvd * elem,
                                                      gv + (size_t)skip * kvd * elem, out, lse,
                                                      s->kv16);
    if (st != LINATTN_OK)
        return st;
    if (!s->kv16) { /* rows whose unnormalised window sum overflowed, as window_head */
        const float *Kw = (const float *)(const void *)gk + (size_t)skip * kvd;
        const float *Vw = (const float *)(const void *)gv + (size_t)skip * kvd;
        const float scale = 1.0f / sqrtf((float)dh);
        for (int r = 0; r < n; r++)
            for (int h = 0; h < H; h++) {
                float *o = out + (size_t)r * d + (size_t)h * dh;
                const float l = lse[(size_t)h * n + (size_t)r];
                if (all_finite(o, (size_t)dh) || !isfinite(l))
                    continue;
                const int last = r + prev - skip, first = last - W + 1 > 0 ? last - W + 1 : 0;
                const size_t g = (size_t)(h / group) * dh;
                window_row_convex(kt, q + (size_t)r * d + (size_t)h * dh,
                                  Kw + (size_t)first * kvd + g, Vw + (size_t)first * kvd + g, kvd,
                                  last - first + 1, dh, scale, l, o);
            }
    }

    /* 2. the tail: rows [r0, n), row r's key at gathered row r - W + prev */
    const int r0 = t0 >= (uint64_t)W ? 0 : (W - (int)t0 < n ? W - (int)t0 : n), nr = n - r0;
    if (nr == 0)
        return LINATTN_OK;
    linattn_linear_state *lin = s->lin[layer];
    for (int h = 0; h < H; h++) /* before the prefill moves it */
        linattn_linear_state_z_now(lin, kt, h, zs + (size_t)h * F);
    const float *K = (const float *)(const void *)(gk + (size_t)(r0 - W + prev) * kvd * elem);
    const float *V = (const float *)(const void *)(gv + (size_t)(r0 - W + prev) * kvd * elem);
    if (s->kv16) { /* 0 + 1 * v: exact */
        for (int i = 0; i < nr; i++) {
            row_f32(kt, kw + (size_t)i * kvd,
                    gk + (size_t)(r0 - W + prev + i) * kvd * elem, kvd, 1);
            row_f32(kt, vw + (size_t)i * kvd,
                    gv + (size_t)(r0 - W + prev + i) * kvd * elem, kvd, 1);
        }
        K = kw, V = vw;
    }
    const float *qr = q + (size_t)r0 * d; /* the tail's query rows */
    linattn_layout ql = {0, (size_t)dh, d};
    const int maps = L->wq_phi != NULL;
    int par = T > 1 && (double)nr * H * F * dh >= (double)LINATTN_PARALLEL_MIN_WORK;
    (void)par;
#pragma omp parallel for num_threads(T) \
    schedule(static) if (par)
    for (int h = 0; h < H; h++) {
        const int g = h / group;
        float *qh = qf + (size_t)h * F, *kh = kf + (size_t)h * F, *vq = vh + (size_t)h * dh;
        if (maps) {
            for (int i = 0; i < nr; i++) {
                memset(qh + (size_t)i * HF, 0, (size_t)F * sizeof(float));
                memset(kh + (size_t)i * HF, 0, (size_t)F * sizeof(float));
            }
            kt->gemm_nt(qh, HF, qr + (size_t)h * dh, d, L->wq_phi + (size_t)h * F * dh,
                        (size_t)dh, (size_t)nr, (size_t)F, (size_t)dh);
            kt->gemm_nt(kh, HF, K + (size_t)g * dh, kvd, L->wk_phi + (size_t)g * F * dh,
                        (size_t)dh, (size_t)nr, (size_t)F, (size_t)dh);
        } else {
            for (int i = 0; i < nr; i++)
                memcpy(kh + (size_t)i * HF, K + (size_t)i * kvd + (size_t)g * dh,
                       (size_t)dh * sizeof(float));
        }
        for (int i = 0; i < nr; i++)
            memcpy(vq + (size_t)i * Hd, V + (size_t)i * kvd + (size_t)g * dh,
                   (size_t)dh * sizeof(float));
    }
    if (maps)
        ql = (linattn_layout){0, (size_t)F, HF};
    const linattn_layout lay[4] = {ql, {0, (size_t)F, HF}, {0, (size_t)dh, Hd},
                                   {0, (size_t)dh, Hd}};
    st = linattn_linear_prefill_strided(lin, maps ? qf : qr, kf, vh, nr, ot, lay, threads);
    if (st != LINATTN_OK)
        return st;

    /* 3. each row's tail mass, and the mix */
#pragma omp parallel for num_threads(T) \
    schedule(static) if (par)
    for (int h = 0; h < H; h++) {
        float *z = zs + (size_t)h * F, *p = ph + (size_t)h * F;
        const float gd = m->decay ? m->decay[h] : 1.0f;
        const float *qsrc = maps ? qf + (size_t)h * F : qr + (size_t)h * dh;
        const size_t qrow = maps ? HF : d;
        for (int i = 0; i < nr; i++) {
            const int r = r0 + i;
            kt->elu1(p, kf + (size_t)i * HF + (size_t)h * F, (size_t)F);
            if (gd != 1.0f)
                kt->scale(z, gd, (size_t)F);
            kt->axpy(z, 1.0f, p, (size_t)F);
            kt->elu1(p, qsrc + (size_t)i * qrow, (size_t)F);
            float D = kt->dot(p, z, (size_t)F);
            float *o = out + (size_t)r * d + (size_t)h * dh;
            const float l = lse[(size_t)h * n + (size_t)r];
            if (!(l < INFINITY) || isnan(l)) { /* as a row: a NaN or inf score is never hidden */
                for (int c = 0; c < dh; c++)
                    o[c] = NAN;
                continue;
            }
            if (D == 0.0f)
                continue; /* every phi underflowed: the tail weighs nothing */
            float alpha = tail_share(L->lin_scale[h] - l + m->log_gw[h] + logf(D));
            const float *t = ot + (size_t)i * Hd + (size_t)h * dh;
            for (int c = 0; c < dh; c++)
                o[c] += alpha * (t[c] - o[c]);
        }
    }
    return LINATTN_OK;
}

linattn_status linattn_hybrid_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                   const float *q, const float *k, const float *v, float *out,
                                   int n, int threads)
{
    return hybrid_chunk(s, kt, layer, s->tokens, q, k, v, out, n, threads, s->sc->hyb_ws);
}
