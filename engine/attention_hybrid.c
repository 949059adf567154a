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

size_t linattn_hybrid_scratch_floats(const linattn_model *m)
{
    const size_t H = (size_t)m->h, F = (size_t)m->fdim, dh = (size_t)m->dh;
    return (size_t)m->window /* scores */ + 2 * (size_t)m->kvd /* the leaving k, v */ +
           3 * H * F /* q, k through the maps, phi(q) */ + 2 * H * dh /* v per head, o_t */ +
           2 * dh /* the scaled query, a converted row */ + 16;
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
    return mx + logf(sum);
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

/* One row at position pos. */
static linattn_status hybrid_row(linattn_session *s, const linattn_kernels *kt, int layer,
                                 uint64_t pos, const float *q, const float *k, const float *v,
                                 float *out, float *ws)
{
    const linattn_model *m = s->m;
    const linattn_layer *L = &m->layers[layer];
    const int H = m->h, dh = m->dh, F = m->fdim, W = m->window, group = m->h / m->g;
    const size_t kvd = (size_t)m->kvd;
    float *sc = ws, *kl = sc + W, *vl = kl + kvd, *qf = vl + kvd, *kf = qf + (size_t)H * F;
    float *pq = kf + (size_t)H * F, *vh = pq + (size_t)H * F, *ot = vh + (size_t)H * dh;
    float *qs = ot + (size_t)H * dh;
    const int tail = pos >= (uint64_t)W;
    /* the key W tokens old leaves the ring (its slot is this row's) */
    if (tail) {
        row_f32(kt, kl, linattn_cache_at(s, 0, layer, pos), kvd, s->kv16);
        row_f32(kt, vl, linattn_cache_at(s, 1, layer, pos), kvd, s->kv16);
    }
    linattn_cache_put(s, kt, layer, pos, k, v, kvd);
    if (tail) { /* it joins the tail's sums; each head reads them */
        for (int h = 0; h < H; h++) {
            const int g = h / group;
            if (L->wq_phi) {
                kt->gemv(qf + (size_t)h * F, L->wq_phi + (size_t)h * F * dh, (size_t)dh,
                         q + (size_t)h * dh, NULL, (size_t)F, (size_t)dh);
                if (h % group == 0) /* its k/v head's map, once a group */
                    kt->gemv(kf + (size_t)h * F, L->wk_phi + (size_t)g * F * dh, (size_t)dh,
                             kl + (size_t)g * dh, NULL, (size_t)F, (size_t)dh);
                else
                    memcpy(kf + (size_t)h * F, kf + (size_t)(h - h % group) * F,
                           (size_t)F * sizeof(float));
            } else {
                memcpy(qf + (size_t)h * F, q + (size_t)h * dh, (size_t)dh * sizeof(float));
                memcpy(kf + (size_t)h * F, kl + (size_t)g * dh, (size_t)dh * sizeof(float));
            }
            memcpy(vh + (size_t)h * dh, vl + (size_t)g * dh, (size_t)dh * sizeof(float));
        }
        linattn_status st = linattn_linear_step(s->lin[layer], qf, kf, vh, ot);
        if (st != LINATTN_OK)
            return st;
        kt->elu1(pq, qf, (size_t)H * F);
    }
    const int n = pos + 1 < (uint64_t)W ? (int)pos + 1 : W; /* keys in the ring */
    const float scale = 1.0f / sqrtf((float)dh);
    const size_t elem = linattn_cache_elem(s);
    for (int h = 0; h < H; h++) {
        const size_t off = (size_t)(h / group) * dh * elem; /* its k/v head in a row */
        const char *K = (const char *)linattn_cache_at(s, 0, layer, 0) + off;
        const char *V = (const char *)linattn_cache_at(s, 1, layer, 0) + off;
        float *o = out + (size_t)h * dh;
        float lse = window_head(kt, q + (size_t)h * dh, K, V, kvd, n, dh, s->kv16, scale, sc, qs,
                                o);
        if (!tail)
            continue;
        float D = linattn_linear_state_den(s->lin[layer], kt, h, pq + (size_t)h * F);
        if (D == 0.0f)
            continue; /* every phi underflowed: the tail weighs nothing */
        /* alpha = rho / (1 + rho) from log rho, without overflow either way */
        float lr = L->lin_scale[h] - lse + m->log_gw[h] + logf(D);
        float e = expf(-fabsf(lr));
        float alpha = lr >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
        if (isnan(lr))
            alpha = NAN;
        const float *t = ot + (size_t)h * dh;
        for (int c = 0; c < dh; c++)
            o[c] += alpha * (t[c] - o[c]);
    }
    return LINATTN_OK;
}

linattn_status linattn_hybrid_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                   uint64_t pos, const float *q, const float *k, const float *v,
                                   float *out, int n, float *scratch)
{
    const linattn_model *m = s->m;
    for (int r = 0; r < n; r++) {
        linattn_status st = hybrid_row(s, kt, layer, pos + (uint64_t)r, q + (size_t)r * m->d,
                                       k + (size_t)r * m->kvd, v + (size_t)r * m->kvd,
                                       out + (size_t)r * m->d, scratch);
        if (st != LINATTN_OK)
            return st;
    }
    return LINATTN_OK;
}
