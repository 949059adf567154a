/* test_window.c: sliding-window softmax attention (desc.window) against a double-precision reference. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "testutil.h"

static uint64_t rng;

static double uniform(void) /* [0, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static float *randn(size_t n)
{
    float *x = malloc(n * sizeof(float) + 1);
    cr_assert(x);
    for (size_t i = 0; i < n; i++) /* sum of 4 uniforms: mean 0, roughly normal */
        x[i] = (float)((uniform() + uniform() + uniform() + uniform() - 2.0) * 1.7);
    return x;
}

typedef struct wcase {
    int B, H, G, Lq, Lk, dk, dv, W, threads;
    const int *lengths;
    float *q, *k, *v;
} wcase;

static wcase make(int B, int H, int G, int Lq, int Lk, int dk, int dv, int W, uint64_t seed)
{
    wcase c = {B, H, G, Lq, Lk, dk, dv, W, 1, NULL, NULL, NULL, NULL};
    rng = seed;
    c.q = randn((size_t)B * H * Lq * dk);
    c.k = randn((size_t)B * G * Lk * dk);
    c.v = randn((size_t)B * G * Lk * dv);
    return c;
}

static void drop(wcase *c)
{
    free(c->q);
    free(c->k);
    free(c->v);
}

static size_t out_size(const wcase *c)
{
    return (size_t)c->B * c->H * c->Lq * c->dv;
}

static linattn_status run(const wcase *c, float *out)
{
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = c->B;
    d.heads = c->H;
    d.kv_heads = c->G;
    d.len_q = c->Lq;
    d.len_k = c->Lk;
    d.d_k = c->dk;
    d.d_v = c->dv;
    d.causal = 1;
    d.window = c->W;
    d.lengths = c->lengths;
    d.threads = c->threads;
    return linattn_attention_softmax(&d, c->q, c->k, c->v, out);
}

static float *run_new(const wcase *c)
{
    float *out = malloc(out_size(c) * sizeof(float));
    cr_assert(out);
    cr_assert_eq(run(c, out), LINATTN_OK, "%s", linattn_last_error());
    return out;
}

/* The definition, one row at a time in double: query i at key position
 * p = i + Lk - Lq sees keys j with max(0, p - W + 1) <= j <= p, j < len. */
static double *reference(const wcase *c)
{
    double *out = calloc(out_size(c), sizeof(double));
    double *w = malloc((size_t)c->Lk * sizeof(double));
    cr_assert(out && w);
    const double scale = 1.0 / sqrt((double)c->dk);
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            int g = h / (c->H / c->G);
            const float *K = c->k + ((size_t)b * c->G + g) * c->Lk * c->dk;
            const float *V = c->v + ((size_t)b * c->G + g) * c->Lk * c->dv;
            int len = c->lengths ? c->lengths[b] : c->Lk;
            for (int i = 0; i < c->Lq; i++) {
                const float *qi = c->q + (((size_t)b * c->H + h) * c->Lq + i) * c->dk;
                double *o = out + (((size_t)b * c->H + h) * c->Lq + i) * c->dv;
                int p = i + c->Lk - c->Lq;
                int lo = c->W > 0 && p - c->W + 1 > 0 ? p - c->W + 1 : 0;
                int hi = p + 1 < len ? p + 1 : len;
                if (hi <= lo)
                    continue; /* no visible key: zeros */
                double mx = -INFINITY, sum = 0;
                for (int j = lo; j < hi; j++) {
                    double s = 0;
                    for (int x = 0; x < c->dk; x++)
                        s += (double)qi[x] * K[(size_t)j * c->dk + x];
                    w[j] = s * scale;
                    mx = w[j] > mx ? w[j] : mx;
                }
                for (int j = lo; j < hi; j++)
                    sum += (w[j] = exp(w[j] - mx));
                for (int j = lo; j < hi; j++)
                    for (int x = 0; x < c->dv; x++)
                        o[x] += w[j] / sum * V[(size_t)j * c->dv + x];
            }
        }
    free(w);
    return out;
}

static double max_err(const float *a, const double *ref, size_t n)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (!(d <= e))
            e = isnan(d) ? INFINITY : d;
    }
    return e;
}


/* fp32 against the double reference: each output is a convex combination
 * of at most W values of |v| <= 3.4 whose weights carry a few ulps of
 * error from the dot products and exp; 2e-5 leaves room for d = 64 sums. */
#define TOL 2e-5

static void check(wcase *c)
{
    double *ref = reference(c);
    linattn_isa isas[LINATTN_ISA_COUNT];
    int n = tu_cpu_isas(isas);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(linattn_set_isa(isas[i]), LINATTN_OK);
        for (int t = 1; t <= 2; t++) {
            c->threads = t;
            float *out = run_new(c);
            double e = max_err(out, ref, out_size(c));
            cr_expect(e <= TOL,
                      "%s threads %d B=%d H=%d G=%d Lq=%d Lk=%d dk=%d dv=%d W=%d: max error %g",
                      linattn_isa_name(isas[i]), t, c->B, c->H, c->G, c->Lq, c->Lk, c->dk, c->dv,
                      c->W, e);
            free(out);
        }
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
    free(ref);
}

Test(window, against_reference)
{
    /* windows inside a tile, across tile edges (128), longer than L;
     * Lq = Lk, fewer queries (a cache), GQA, d_v != d_k, padding */
    static const int shapes[][8] = {
        /* B H G Lq Lk dk dv W */
        {1, 2, 2, 40, 40, 8, 8, 1},      {1, 2, 1, 40, 40, 8, 5, 7},
        {2, 4, 2, 300, 300, 16, 12, 64}, {1, 2, 2, 300, 300, 16, 16, 129},
        {1, 3, 3, 70, 500, 24, 16, 200}, {1, 4, 2, 1, 2500, 32, 32, 1500},
        {1, 1, 1, 260, 260, 64, 64, 127}, {2, 2, 1, 33, 90, 9, 7, 40},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int *x = shapes[s];
        wcase c = make(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], 100 + s);
        check(&c);
        drop(&c);
    }
    wcase c = make(2, 2, 2, 50, 80, 8, 8, 20, 7);
    int lengths[2] = {80, 45}; /* the second sequence's last rows see no key */
    c.lengths = lengths;
    check(&c);
    drop(&c);
}

/* W >= Lk takes the plain causal path: bit for bit W = 0. */
Test(window, wide_window_is_plain_causal)
{
    wcase c = make(1, 3, 3, 200, 260, 16, 16, 0, 5);
    float *plain = run_new(&c);
    for (int W = 260; W <= 1000; W += 740) {
        c.W = W;
        float *wide = run_new(&c);
        cr_expect(!memcmp(plain, wide, out_size(&c) * sizeof(float)), "W = %d differs from W = 0",
                  W);
        free(wide);
    }
    free(plain);
    drop(&c);
}

/* A key that has left every later row's window cannot reach them, even as
 * inf or NaN (masked weights never multiply values), in every tile layout
 * and on the split (flash-decoding) path of one query against many keys. */
Test(window, old_bad_values_do_not_reach_later_rows)
{
    const float bad[] = {INFINITY, NAN};
    for (int b = 0; b < 2; b++) {
        wcase c = make(1, 2, 2, 300, 300, 8, 6, 50, 11);
        int t = 130; /* rows t + 50 .. see nothing of key t */
        for (int h = 0; h < 2; h++) {
            c.k[((size_t)h * 300 + t) * 8] = bad[b];
            c.v[((size_t)h * 300 + t) * 6 + 2] = bad[b];
        }
        float *out = run_new(&c);
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 300; i++) {
                int sees = i >= t && i < t + 50;
                const float *o = out + ((size_t)h * 300 + i) * 6;
                int finite = 1;
                for (int x = 0; x < 6; x++)
                    finite &= isfinite(o[x]) != 0;
                if (!sees)
                    cr_expect(finite, "bad %d head %d row %d: a key outside its window reached it",
                              b, h, i);
            }
        free(out);
        drop(&c);
    }
    /* one query, 3000 keys (split in segments), the bad key before its window */
    wcase c = make(1, 1, 1, 1, 3000, 16, 16, 700, 12);
    c.v[100 * 16] = NAN;
    c.k[2000 * 16] = INFINITY * 0.0f;
    float *out = run_new(&c);
    for (int x = 0; x < 16; x++)
        cr_expect(isfinite(out[x]), "split path: an old NaN reached the query");
    free(out);
    drop(&c);
}

Test(window, bad_descriptors)
{
    wcase c = make(1, 1, 1, 4, 4, 4, 4, 2, 3);
    float out[16];
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = d.heads = 1;
    d.len_q = d.len_k = d.d_k = d.d_v = 4;
    d.causal = 0;
    d.window = 2;
    cr_expect_eq(linattn_attention_softmax(&d, c.q, c.k, c.v, out), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "window needs causal"), "%s", linattn_last_error());
    d.causal = 1;
    d.window = -1;
    cr_expect_eq(linattn_attention_softmax(&d, c.q, c.k, c.v, out), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "window must be >= 0"), "%s", linattn_last_error());
    d.window = 2;
    cr_expect_eq(linattn_attention_linear(&d, c.q, c.k, c.v, out), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "softmax attention only"), "%s", linattn_last_error());
    drop(&c);
}
