/* test_attention.c: both attention operators and the linear decode state against a double-precision reference. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../engine/attention.h"
#include "../engine/f16.h"
#include "../engine/cli/npy.h"
#include "testutil.h"

/* ------------------------------------------------------------------------ */
/* Data and reference                                                        */
/* ------------------------------------------------------------------------ */

static uint64_t rng_state;

static void seed(uint64_t s)
{
    rng_state = s * 0x9e3779b97f4a7c15ull + 1;
}

static double uniform(void) /* (0, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
    return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
}

static float *randn(size_t n)
{
    float *x = malloc(n * sizeof(float) + 1);
    cr_assert(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)normal();
    return x;
}

enum variant { SOFTMAX, LINEAR };

/* A problem: shapes, options and dense (B, H, L, D) tensors. */
typedef struct problem {
    int B, H, Lq, Lk, dk, dv, causal;
    int *lengths; /* NULL: all valid */
    float scale, eps;
    int threads;
    float *q, *k, *v;
    const float *decay; /* [H] or NULL (linear, causal) */
} problem;

static problem make(int B, int H, int Lq, int Lk, int dk, int dv, int causal, uint64_t s)
{
    problem p = {B, H, Lq, Lk, dk, dv, causal, NULL, 0.0f, 1e-6f, 1, NULL, NULL, NULL, NULL};
    seed(s);
    p.q = randn((size_t)B * H * Lq * dk);
    p.k = randn((size_t)B * H * Lk * dk);
    p.v = randn((size_t)B * H * Lk * dv);
    return p;
}

static void drop(problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->lengths);
}

static size_t out_size(const problem *p)
{
    return (size_t)p->B * p->H * p->Lq * p->dv;
}

/* The linear algorithm every operator call and state of these tests uses
 * (AUTO unless a test forces one). */
static linattn_linear_mode test_mode = LINATTN_LINEAR_AUTO;

static void set_mode(linattn_linear_mode mode)
{
    test_mode = mode;
}

/* A linear state that prefills with test_mode. */
static linattn_status make_state(int H, int dk, int dv, float eps, const float *decay,
                                 linattn_linear_state **s)
{
    linattn_status st = linattn_linear_state_create(H, dk, dv, eps, decay, s);
    if (st == LINATTN_OK)
        cr_assert_eq(linattn_linear_state_set_mode(*s, test_mode), LINATTN_OK);
    return st;
}

static linattn_attention_desc desc_of(const problem *p)
{
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = p->B;
    d.heads = p->H;
    d.len_q = p->Lq;
    d.len_k = p->Lk;
    d.d_k = p->dk;
    d.d_v = p->dv;
    d.causal = p->causal;
    d.lengths = p->lengths;
    d.scale = p->scale;
    d.eps = p->eps;
    d.decay = p->decay;
    d.threads = p->threads;
    d.linear_mode = test_mode;
    return d;
}

static linattn_status run(enum variant var, const problem *p, float *out)
{
    linattn_attention_desc d = desc_of(p);
    return var == SOFTMAX ? linattn_attention_softmax(&d, p->q, p->k, p->v, out)
                          : linattn_attention_linear(&d, p->q, p->k, p->v, out);
}

static float *run_new(enum variant var, const problem *p)
{
    float *out = malloc(out_size(p) * sizeof(float));
    cr_assert(out);
    linattn_status st = run(var, p, out);
    cr_assert_eq(st, LINATTN_OK, "%s", linattn_last_error());
    return out;
}


static double phi(double x)
{
    return x > 0 ? x + 1 : exp(x);
}

/* The reference: one query row at a time, in double. A decayed (linear,
 * causal) head weighs key j for query i by g^(i + Lk - Lq - j); a softmax
 * window W > 0 (causal) hides keys j <= i + Lk - Lq - W. */
static double *reference_window(enum variant var, const problem *p, int window)
{
    const int off = p->Lk - p->Lq;
    const double scale = p->scale != 0.0f ? p->scale : 1.0 / sqrt((double)p->dk);
    double *out = calloc(out_size(p), sizeof(double));
    double *w = malloc((size_t)p->Lk * sizeof(double));
    /* linear: phi of every key and of the query row, once */
    double *pk = malloc((size_t)p->Lk * p->dk * sizeof(double) + 1);
    double *pq = malloc((size_t)p->dk * sizeof(double));
    cr_assert(out && w && pk && pq);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++) {
            size_t bh = (size_t)b * p->H + h;
            const float *K = p->k + bh * p->Lk * p->dk, *V = p->v + bh * p->Lk * p->dv;
            int len = p->lengths ? p->lengths[b] : p->Lk;
            for (size_t j = 0; j < (size_t)len * p->dk; j++)
                pk[j] = var == SOFTMAX ? K[j] : phi(K[j]);
            for (int i = 0; i < p->Lq; i++) {
                const float *qi = p->q + (bh * p->Lq + i) * p->dk;
                for (int c = 0; c < p->dk; c++)
                    pq[c] = var == SOFTMAX ? qi[c] : phi(qi[c]);
                double *o = out + (bh * p->Lq + i) * p->dv;
                int end = len; /* visible keys [0, end) */
                if (p->causal && i + off + 1 < end)
                    end = i + off + 1;
                const int start = window > 0 && i + off - window + 1 > 0 ? i + off - window + 1 : 0;
                if (end <= start)
                    continue;
                double mx = -INFINITY, sum = 0;
                for (int j = start; j < end; j++) {
                    double s = 0;
                    for (int c = 0; c < p->dk; c++)
                        s += pq[c] * pk[(size_t)j * p->dk + c];
                    w[j] = var == SOFTMAX ? s * scale : s;
                    if (var == LINEAR && p->decay)
                        w[j] *= pow((double)p->decay[h], (double)(i + off - j));
                    mx = w[j] > mx ? w[j] : mx;
                }
                for (int j = start; j < end; j++) {
                    if (var == SOFTMAX)
                        w[j] = exp(w[j] - mx);
                    sum += w[j];
                }
                if (var == LINEAR)
                    sum += p->eps;
                for (int j = start; j < end; j++)
                    for (int c = 0; c < p->dv; c++)
                        o[c] += w[j] / sum * V[(size_t)j * p->dv + c];
            }
        }
    free(w);
    free(pk);
    free(pq);
    return out;
}

static double *reference(enum variant var, const problem *p)
{
    return reference_window(var, p, 0);
}

/* max |a - b| over the rows of real queries (all rows unless skip_pad). */
static double max_err_ref(const problem *p, const float *a, const double *ref)
{
    double e = 0;
    for (size_t i = 0; i < out_size(p); i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (!(d <= e)) /* catches NaN */
            e = isnan(d) ? INFINITY : d;
    }
    return e;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= e))
            e = isnan(d) ? INFINITY : d;
    }
    return e;
}

static void check_against_reference(enum variant var, const problem *p, double tol)
{
    float *out = run_new(var, p);
    double *ref = reference(var, p);
    double e = max_err_ref(p, out, ref);
    cr_expect(e <= tol,
              "%s B=%d H=%d Lq=%d Lk=%d dk=%d dv=%d causal=%d threads=%d: max error %g > %g",
              var == SOFTMAX ? "softmax" : "linear", p->B, p->H, p->Lq, p->Lk, p->dk, p->dv,
              p->causal, p->threads, e, tol);
    free(out);
    free(ref);
}

/* ------------------------------------------------------------------------ */
/* Worked examples                                                           */
/* ------------------------------------------------------------------------ */

Test(softmax, worked_two_keys)
{
    float q[] = {1}, k[] = {1, 0}, v[] = {2, 0, 0, 4}, out[2];
    problem p = {1, 1, 1, 2, 1, 2, 0, NULL, 1.0f, 0, 1, q, k, v, NULL};
    cr_assert_eq(run(SOFTMAX, &p, out), LINATTN_OK);
    /* weights e/(e+1) = 0.731059, 1/(e+1) = 0.268941 */
    cr_expect_float_eq(out[0], 1.462117f, 1e-5);
    cr_expect_float_eq(out[1], 1.075766f, 1e-5);
}

Test(softmax, worked_weights_from_logs)
{
    float q[] = {1}, k[] = {logf(0.5f), logf(0.3f), logf(0.2f)}, v[] = {2, 4, 10}, out[1];
    problem p = {1, 1, 1, 3, 1, 1, 0, NULL, 1.0f, 0, 1, q, k, v, NULL};
    cr_assert_eq(run(SOFTMAX, &p, out), LINATTN_OK);
    cr_expect_float_eq(out[0], 4.2f, 1e-5);
}

Test(softmax, identical_keys_give_the_mean)
{
    problem p = make(1, 1, 5, 7, 4, 3, 0, 11);
    for (int j = 1; j < p.Lk; j++)
        memcpy(p.k + j * p.dk, p.k, (size_t)p.dk * sizeof(float));
    float *out = run_new(SOFTMAX, &p);
    for (int c = 0; c < p.dv; c++) {
        double mean = 0;
        for (int j = 0; j < p.Lk; j++)
            mean += p.v[j * p.dv + c] / p.Lk;
        for (int i = 0; i < p.Lq; i++)
            cr_expect_float_eq(out[i * p.dv + c], (float)mean, 1e-5, "query %d col %d", i, c);
    }
    free(out);
    drop(&p);
}

Test(softmax, padded_key_gets_no_weight)
{
    /* scores 1, 2, 3, the third key padded: weights (0.269, 0.731, 0) */
    float q[] = {1}, k[] = {1, 2, 3}, v[] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, out[3];
    int len[] = {2};
    problem p = {1, 1, 1, 3, 1, 3, 0, len, 1.0f, 0, 1, q, k, v, NULL};
    cr_assert_eq(run(SOFTMAX, &p, out), LINATTN_OK);
    cr_expect_float_eq(out[0], 0.268941f, 1e-5);
    cr_expect_float_eq(out[1], 0.731059f, 1e-5);
    cr_expect_eq(out[2], 0.0f);
}

Test(linear, worked_example)
{
    /* phi(1) = 2, phi(0) = 1: weights 2*2 = 4 and 2*1 = 2 over 6 */
    float q[] = {1}, k[] = {1, 0}, v[] = {3, 9}, out[1];
    problem p = {1, 1, 1, 2, 1, 1, 0, NULL, 0, 0.0f, 1, q, k, v, NULL};
    cr_assert_eq(run(LINEAR, &p, out), LINATTN_OK);
    cr_expect_float_eq(out[0], (4 * 3 + 2 * 9) / 6.0f, 1e-5);
}

/* ------------------------------------------------------------------------ */
/* Scale statistics                                                          */
/* ------------------------------------------------------------------------ */

/* Each head has one query and two keys, k and 0, so the weights are
 * sigmoid(score) and its complement and log(w0 / w1) recovers the scaled
 * score the operator used. */
Test(softmax, scale_keeps_score_std_near_one)
{
    const int dks[] = {4, 64, 1024};
    const int N = 2000;
    for (size_t t = 0; t < 3; t++) {
        int dk = dks[t];
        problem p = make(1, N, 1, 2, dk, 2, 0, 100 + t);
        for (int h = 0; h < N; h++)
            memset(p.k + ((size_t)h * 2 + 1) * dk, 0, (size_t)dk * sizeof(float));
        for (int h = 0; h < N; h++) { /* V = identity */
            float *v = p.v + (size_t)h * 4;
            v[0] = 1, v[1] = 0, v[2] = 0, v[3] = 1;
        }
        float *out = run_new(SOFTMAX, &p);
        double raw = 0, raw2 = 0, sc = 0, sc2 = 0;
        for (int h = 0; h < N; h++) {
            double s = 0;
            for (int c = 0; c < dk; c++)
                s += (double)p.q[(size_t)h * dk + c] * p.k[(size_t)h * 2 * dk + c];
            double y = log((double)out[h * 2] / out[h * 2 + 1]);
            raw += s, raw2 += s * s, sc += y, sc2 += y * y;
        }
        double raw_std = sqrt(raw2 / N - (raw / N) * (raw / N));
        double sc_std = sqrt(sc2 / N - (sc / N) * (sc / N));
        cr_expect(raw_std > 0.9 * sqrt(dk) && raw_std < 1.1 * sqrt(dk),
                  "d_k=%d raw std %g, expected about %g", dk, raw_std, sqrt(dk));
        cr_expect(sc_std > 0.9 && sc_std < 1.1, "d_k=%d scaled std %g", dk, sc_std);
        free(out);
        drop(&p);
    }
}

/* ------------------------------------------------------------------------ */
/* Properties                                                                */
/* ------------------------------------------------------------------------ */

static void perturb_row(float *x, int row, int d)
{
    for (int c = 0; c < d; c++)
        x[(size_t)row * d + c] += 0.5f + 0.25f * (float)c;
}

/* Changing token t's q, k and v leaves every output before t bit for bit
 * and changes output t. */
static void check_causality(enum variant var)
{
    const int L = 150, dk = 8, dv = 5;
    const int ts[] = {0, 1, 37, 63, 64, 65, 128, 149};
    problem p = make(1, 2, L, L, dk, dv, 1, 7);
    float *base = run_new(var, &p);
    for (size_t n = 0; n < sizeof ts / sizeof ts[0]; n++) {
        int t = ts[n];
        problem x = make(1, 2, L, L, dk, dv, 1, 7);
        for (int h = 0; h < 2; h++) {
            perturb_row(x.q, h * L + t, dk);
            perturb_row(x.k, h * L + t, dk);
            perturb_row(x.v, h * L + t, dv);
        }
        float *out = run_new(var, &x);
        for (int h = 0; h < 2; h++) {
            size_t before = (size_t)(h * L + t) * dv;
            cr_expect(!memcmp(out + (size_t)h * L * dv, base + (size_t)h * L * dv,
                              (size_t)t * dv * sizeof(float)),
                      "t=%d head %d: an output before t changed", t, h);
            cr_expect(max_diff(out + before, base + before, (size_t)dv) > 1e-4,
                      "t=%d head %d: output t did not change (control)", t, h);
        }
        free(out);
        drop(&x);
    }
    free(base);
    drop(&p);
}

/* Causality holds for bad values too: an inf or NaN in a later position's
 * q, k or v never reaches an earlier row, for every ISA, both linear
 * algorithms and the softmax tiles (diagonal tiles included: L spans
 * several 64 x 128 tiles and positions sit inside, at the start and at the
 * end of tiles). */
static void check_causality_bad_values(enum variant var)
{
    const int L = 300, H = 2, dk = 9, dv = 6;
    const int ts[] = {0, 5, 63, 64, 127, 128, 200, 299};
    const float bad[] = {INFINITY, -INFINITY, NAN};
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (int ii = 0; ii < ni; ii++) {
        if (linattn_set_isa(isas[ii]) != LINATTN_OK)
            continue;
        for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++) {
            if (var == SOFTMAX && mode == LINATTN_LINEAR_CHUNKED)
                continue;
            set_mode((linattn_linear_mode)mode);
            problem p = make(1, H, L, L, dk, dv, 1, 9);
            float *base = run_new(var, &p);
            for (size_t n = 0; n < sizeof ts / sizeof ts[0]; n++)
                for (int which = 0; which < 3; which++) { /* q, k, v */
                    int t = ts[n];
                    problem x = make(1, H, L, L, dk, dv, 1, 9);
                    float *tensor = which == 0 ? x.q : which == 1 ? x.k : x.v;
                    int width = which == 2 ? dv : dk;
                    for (int h = 0; h < H; h++)
                        tensor[((size_t)h * L + t) * width + (size_t)(t % width)] = bad[(n + which) % 3];
                    float *out = run_new(var, &x);
                    for (int h = 0; h < H; h++)
                        cr_expect(!memcmp(out + (size_t)h * L * dv, base + (size_t)h * L * dv,
                                          (size_t)t * dv * sizeof(float)),
                                  "%s isa %s mode %d: a bad %s at %d reached an earlier row",
                                  var == SOFTMAX ? "softmax" : "linear",
                                  linattn_isa_name(isas[ii]), mode, which == 0 ? "q"
                                  : which == 1 ? "k" : "v", t);
                    free(out);
                    drop(&x);
                }
            free(base);
            drop(&p);
        }
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
    set_mode(LINATTN_LINEAR_AUTO);
}

Test(softmax, causality_with_inf_and_nan)
{
    check_causality_bad_values(SOFTMAX);
}

Test(linear, causality_with_inf_and_nan)
{
    check_causality_bad_values(LINEAR);
}

Test(softmax, causality_by_perturbation)
{
    check_causality(SOFTMAX);
}

Test(linear, causality_by_perturbation)
{
    set_mode(LINATTN_LINEAR_RECURRENT);
    check_causality(LINEAR);
    set_mode(LINATTN_LINEAR_CHUNKED);
    check_causality(LINEAR);
    set_mode(LINATTN_LINEAR_AUTO);
}

/* Real tokens padded with NaN to a longer length give the same outputs as
 * the unpadded sequence. Batch 0 is the padded copy, batch 1 all real. */
static void check_padding(enum variant var, int causal)
{
    const int L = 70, pad = 30, dk = 6, dv = 4, H = 2, LP = L + pad;
    problem small = make(1, H, L, L, dk, dv, causal, 21);
    problem big = make(2, H, LP, LP, dk, dv, causal, 22);
    int lengths[2] = {L, LP};
    big.lengths = lengths;
    big.threads = small.threads = 2;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < LP; i++) {
            size_t at = (size_t)h * LP + i;
            for (int c = 0; c < dk; c++) {
                big.q[at * dk + c] = i < L ? small.q[((size_t)h * L + i) * dk + c] : NAN;
                big.k[at * dk + c] = i < L ? small.k[((size_t)h * L + i) * dk + c] : NAN;
            }
            for (int c = 0; c < dv; c++)
                big.v[at * dv + c] = i < L ? small.v[((size_t)h * L + i) * dv + c] : NAN;
        }
    float *a = run_new(var, &small), *b = run_new(var, &big);
    for (int h = 0; h < H; h++)
        cr_expect(max_diff(a + (size_t)h * L * dv, b + (size_t)h * LP * dv, (size_t)L * dv) <=
                      1e-6,
                  "%s causal=%d head %d: padding changed real outputs",
                  var == SOFTMAX ? "softmax" : "linear", causal, h);
    for (size_t i = (size_t)H * LP * dv; i < out_size(&big); i++)
        cr_expect(isfinite(b[i]), "batch 1 (no padding) output %zu is %g", i, (double)b[i]);
    free(a);
    free(b);
    big.lengths = NULL;
    drop(&small);
    drop(&big);
}

Test(softmax, padding_invariance)
{
    check_padding(SOFTMAX, 0);
    check_padding(SOFTMAX, 1);
}

Test(linear, padding_invariance)
{
    check_padding(LINEAR, 0);
    check_padding(LINEAR, 1);
    set_mode(LINATTN_LINEAR_CHUNKED);
    check_padding(LINEAR, 1);
    set_mode(LINATTN_LINEAR_AUTO);
}

/* Non-causal and unmasked: permuting the keys (with their values) changes
 * nothing; permuting the queries permutes the outputs. */
static void check_permutation(enum variant var)
{
    const int Lq = 40, Lk = 90, dk = 7, dv = 9;
    problem p = make(1, 1, Lq, Lk, dk, dv, 0, 31);
    problem x = make(1, 1, Lq, Lk, dk, dv, 0, 31);
    int qperm[40], kperm[90];
    for (int i = 0; i < Lq; i++)
        qperm[i] = (i * 17 + 5) % Lq;
    for (int j = 0; j < Lk; j++)
        kperm[j] = (j * 31 + 2) % Lk;
    for (int i = 0; i < Lq; i++)
        memcpy(x.q + i * dk, p.q + qperm[i] * dk, dk * sizeof(float));
    for (int j = 0; j < Lk; j++) {
        memcpy(x.k + j * dk, p.k + kperm[j] * dk, dk * sizeof(float));
        memcpy(x.v + j * dv, p.v + kperm[j] * dv, dv * sizeof(float));
    }
    float *a = run_new(var, &p), *b = run_new(var, &x);
    for (int i = 0; i < Lq; i++)
        cr_expect(max_diff(b + i * dv, a + qperm[i] * dv, dv) <= 1e-5, "query %d", i);
    free(a);
    free(b);
    drop(&p);
    drop(&x);
}

Test(softmax, permutation_equivariance)
{
    check_permutation(SOFTMAX);
}

Test(linear, permutation_equivariance)
{
    check_permutation(LINEAR);
}

/* Rows with no visible key output exact zeros, never NaN: every key padded,
 * and causal with more queries than keys (the first Lq - Lk see nothing). */
static void check_all_masked(enum variant var, float eps)
{
    problem p = make(2, 3, 20, 20, 5, 4, 1, 41);
    p.eps = eps;
    int lengths[2] = {0, 20};
    p.lengths = lengths;
    float *out = run_new(var, &p);
    for (size_t i = 0; i < 3 * 20 * 4; i++)
        cr_expect(out[i] == 0.0f, "batch 0 (length 0) element %zu is %g", i, (double)out[i]);
    for (size_t i = 3 * 20 * 4; i < out_size(&p); i++)
        cr_expect(isfinite(out[i]));
    p.lengths = NULL;
    free(out);
    drop(&p);

    problem c = make(1, 2, 30, 12, 5, 4, 1, 43); /* off = -18 */
    c.eps = eps;
    out = run_new(var, &c);
    double *ref = reference(var, &c);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 30; i++)
            for (int j = 0; j < 4; j++) {
                float o = out[(h * 30 + i) * 4 + j];
                if (i < 18)
                    cr_expect(o == 0.0f, "row %d sees no key but outputs %g", i, (double)o);
                else
                    cr_expect(fabs(o - ref[(h * 30 + i) * 4 + j]) < 1e-5);
            }
    free(out);
    free(ref);
    drop(&c);
}

Test(softmax, rows_with_no_key_are_zero)
{
    check_all_masked(SOFTMAX, 1e-6f);
}

Test(linear, rows_with_no_key_are_zero)
{
    check_all_masked(LINEAR, 1e-6f);
    check_all_masked(LINEAR, 0.0f);
    set_mode(LINATTN_LINEAR_CHUNKED);
    check_all_masked(LINEAR, 0.0f);
    set_mode(LINATTN_LINEAR_AUTO);
}

/* eps = 0 with keys whose phi underflows: to zero (k = -120: every
 * denominator is 0, so every row outputs 0) or to denormals (k = -95: 1/den
 * would overflow, yet the ratio is the mean of the visible values). One
 * rule on every path: recurrent, chunked, non-causal, split over threads,
 * and the step API. */
Test(linear, underflowing_denominators)
{
    const int H = 2, L = 100, dk = 8, dv = 4;
    const float keys[2] = {-120.0f, -95.0f};
    for (int kk = 0; kk < 2; kk++)
        for (int path = 0; path < 4; path++) {
            problem p = make(1, H, L, L, dk, dv, path != 2, 700);
            p.eps = 0.0f;
            p.threads = path == 3 ? 2 : 1;
            for (size_t i = 0; i < (size_t)H * L * dk; i++)
                p.k[i] = keys[kk];
            set_mode(path == 1 ? LINATTN_LINEAR_CHUNKED : LINATTN_LINEAR_RECURRENT);
            float *out = run_new(LINEAR, &p);
            for (int h = 0; h < H; h++) {
                double sum[4] = {0}, all[4] = {0};
                for (int j = 0; j < L; j++)
                    for (int c = 0; c < dv; c++)
                        all[c] += p.v[((size_t)h * L + j) * dv + c];
                for (int i = 0; i < L; i++) {
                    const float *vi = p.v + ((size_t)h * L + i) * dv;
                    for (int c = 0; c < dv; c++)
                        sum[c] = path == 2 ? all[c] : sum[c] + vi[c];
                    int seen = path == 2 ? L : i + 1;
                    for (int c = 0; c < dv; c++) {
                        float o = out[((size_t)h * L + i) * dv + c];
                        if (kk == 0)
                            cr_expect(o == 0.0f, "k=-120 path %d row %d: %g, want 0", path, i,
                                      (double)o);
                        else
                            cr_expect(fabs(o - sum[c] / seen) < 1e-2,
                                      "k=-95 path %d row %d: %g, want the mean %g", path, i,
                                      (double)o, sum[c] / seen);
                    }
                }
            }
            free(out);
            drop(&p);
        }
    set_mode(LINATTN_LINEAR_AUTO);

    /* the step API */
    for (int kk = 0; kk < 2; kk++) {
        linattn_linear_state *s;
        cr_assert_eq(make_state(1, dk, dv, 0.0f, NULL, &s), LINATTN_OK);
        float q[8] = {0.5f, 1, 0, -1, 2, 0.1f, 0, 0}, k[8], v[4] = {1, -2, 3, 0.5f}, o[4];
        for (int c = 0; c < dk; c++)
            k[c] = keys[kk];
        for (int t = 0; t < 5; t++) {
            cr_assert_eq(linattn_linear_step(s, q, k, v, o), LINATTN_OK);
            for (int c = 0; c < dv; c++)
                cr_expect(kk == 0 ? o[c] == 0.0f : fabs(o[c] - v[c]) < 1e-2,
                          "step, k=%g: out %g, v %g", (double)keys[kk], (double)o[c], (double)v[c]);
        }
        linattn_linear_state_free(s);
    }
}

Test(linear, outputs_bounded_by_values)
{
    problem p = make(2, 2, 130, 130, 16, 8, 1, 51);
    for (size_t i = 0; i < (size_t)2 * 2 * 130 * 16; i++) { /* wide range of phi */
        p.q[i] *= 4;
        p.k[i] *= 4;
    }
    double vmax = 0;
    for (size_t i = 0; i < (size_t)2 * 2 * 130 * 8; i++)
        vmax = fabs(p.v[i]) > vmax ? fabs(p.v[i]) : vmax;
    for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++) {
        set_mode((linattn_linear_mode)mode);
        for (int causal = 0; causal < 2; causal++) {
            p.causal = causal;
            float *out = run_new(LINEAR, &p);
            for (size_t i = 0; i < out_size(&p); i++)
                cr_expect(fabs(out[i]) <= vmax * (1 + 1e-5), "|out| %g > max|v| %g",
                          (double)out[i], vmax);
            free(out);
        }
    }
    set_mode(LINATTN_LINEAR_AUTO);
    drop(&p);
}

Test(softmax, weights_sum_to_one)
{
    const int L = 100;
    problem p = make(1, 2, L, L, 8, L, 1, 61);
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < L; j++)
            for (int c = 0; c < L; c++)
                p.v[((size_t)h * L + j) * L + c] = j == c ? 1.0f : 0.0f;
    for (int causal = 0; causal < 2; causal++) {
        p.causal = causal;
        float *out = run_new(SOFTMAX, &p);
        for (int r = 0; r < 2 * L; r++) {
            double s = 0;
            for (int c = 0; c < L; c++) {
                s += out[(size_t)r * L + c];
                if (causal && c > r % L)
                    cr_expect(out[(size_t)r * L + c] == 0.0f, "row %d col %d is masked", r, c);
            }
            cr_expect(fabs(s - 1) < 1e-5, "row %d sums to %g", r, s);
        }
        free(out);
    }
    drop(&p);
}

/* ------------------------------------------------------------------------ */
/* Prefill then decode                                                       */
/* ------------------------------------------------------------------------ */

static double rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        num = d > num || isnan(d) ? d : num;
        den = fabs((double)b[i]) > den ? fabs((double)b[i]) : den;
    }
    return num / (den > 0 ? den : 1);
}

/* The state: prefill P tokens then step the rest, against stepping every
 * token from an empty state, and against the operator. */
static void check_linear_stream(linattn_linear_mode mode, int threads, const float *decay)
{
    const int H = 3, L = 300, P = 200, dk = 16, dv = 12;
    set_mode(mode);
    problem p = make(1, H, L, L, dk, dv, 1, 71);
    p.threads = threads;
    p.decay = decay;
    float *op = run_new(LINEAR, &p);

    /* (H, L, D) tensors: token t of head h at h*L + t */
    float *out_a = malloc((size_t)H * L * dv * sizeof(float));
    float *out_b = malloc((size_t)H * L * dv * sizeof(float));
    float qt[3 * 16], kt[3 * 16], vt[3 * 12], ot[3 * 12];
    linattn_linear_state *a, *b;
    cr_assert_eq(make_state(H, dk, dv, 1e-6f, decay, &a), LINATTN_OK);
    cr_assert_eq(make_state(H, dk, dv, 1e-6f, decay, &b), LINATTN_OK);
    linattn_layout lay[4] = {{0, (size_t)L * dk, dk}, {0, (size_t)L * dk, dk},
                             {0, (size_t)L * dv, dv}, {0, (size_t)L * dv, dv}};
    cr_assert_eq(linattn_linear_prefill_strided(a, p.q, p.k, p.v, P, out_a, lay, threads),
                 LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(linattn_linear_state_tokens(a), (uint64_t)P);
    for (int t = 0; t < L; t++) {
        for (int h = 0; h < H; h++) {
            memcpy(qt + h * dk, p.q + ((size_t)h * L + t) * dk, dk * sizeof(float));
            memcpy(kt + h * dk, p.k + ((size_t)h * L + t) * dk, dk * sizeof(float));
            memcpy(vt + h * dv, p.v + ((size_t)h * L + t) * dv, dv * sizeof(float));
        }
        cr_assert_eq(linattn_linear_step(b, qt, kt, vt, ot), LINATTN_OK);
        for (int h = 0; h < H; h++)
            memcpy(out_b + ((size_t)h * L + t) * dv, ot + h * dv, dv * sizeof(float));
        if (t >= P) {
            cr_assert_eq(linattn_linear_step(a, qt, kt, vt, ot), LINATTN_OK);
            for (int h = 0; h < H; h++)
                memcpy(out_a + ((size_t)h * L + t) * dv, ot + h * dv, dv * sizeof(float));
        }
    }
    cr_expect_eq(linattn_linear_state_tokens(a), (uint64_t)L);
    cr_expect_eq(linattn_linear_state_tokens(b), (uint64_t)L);
    double e1 = rel_err(out_a, out_b, (size_t)H * L * dv);
    double e2 = rel_err(op, out_b, (size_t)H * L * dv);
    double e3 = rel_err(linattn_linear_state_S(a, 2), linattn_linear_state_S(b, 2),
                        (size_t)dk * dv);
    const int dc = decay != NULL;
    cr_expect(e1 <= 1e-5, "mode %d threads %d decay %d: prefill+step vs steps: %g", mode,
              threads, dc, e1);
    cr_expect(e2 <= 1e-5, "mode %d threads %d decay %d: operator vs steps: %g", mode, threads,
              dc, e2);
    cr_expect(e3 <= 1e-5, "mode %d threads %d decay %d: final S: %g", mode, threads, dc, e3);
    if (mode == LINATTN_LINEAR_RECURRENT && threads == 1)
        cr_expect(e1 == 0, "the recurrent prefill is the step, bit for bit (%g)", e1);
    linattn_linear_state_free(a);
    linattn_linear_state_free(b);
    free(out_a);
    free(out_b);
    free(op);
    drop(&p);
    set_mode(LINATTN_LINEAR_AUTO);
}

/* Recurrent = chunked = stepped, with and without decay, on every ISA. */
Test(linear, prefill_then_step_equals_steps)
{
    /* a short, a medium and RetNet's first horizon */
    const float decay[3] = {0.5f, 0.9f, 0.96875f};
    linattn_isa isas[LINATTN_ISA_COUNT];
    int n = tu_cpu_isas(isas);
    for (int i = 0; i < n; i++) {
        if (linattn_set_isa(isas[i]) != LINATTN_OK)
            continue; /* the CPU has it but this build does not */
        for (int dc = 0; dc < 2; dc++) {
            const float *g = dc ? decay : NULL;
            check_linear_stream(LINATTN_LINEAR_AUTO, 1, g);
            check_linear_stream(LINATTN_LINEAR_RECURRENT, 1, g);
            check_linear_stream(LINATTN_LINEAR_CHUNKED, 1, g);
            check_linear_stream(LINATTN_LINEAR_RECURRENT, 2, g);
            check_linear_stream(LINATTN_LINEAR_CHUNKED, 2, g);
        }
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
}

/* Softmax decode: the cache is a K/V prefix; one query against the first
 * t+1 keys (strided views into the same buffers) equals row t of the full
 * causal call. */
Test(softmax, prefill_then_step_equals_steps)
{
    const int H = 2, L = 150, dk = 16, dv = 12;
    problem p = make(1, H, L, L, dk, dv, 1, 81);
    float *full = run_new(SOFTMAX, &p);
    float out[2 * 12];
    for (int t = 0; t < L; t++) {
        linattn_attention_desc d;
        linattn_attention_desc_init(&d);
        d.batch = 1, d.heads = H, d.len_q = 1, d.len_k = t + 1, d.d_k = dk, d.d_v = dv;
        d.causal = 1;
        d.q = (linattn_layout){0, (size_t)L * dk, dk};
        d.k = (linattn_layout){0, (size_t)L * dk, dk};
        d.v = (linattn_layout){0, (size_t)L * dv, dv};
        d.out = (linattn_layout){0, dv, dv};
        d.threads = 1;
        cr_assert_eq(linattn_attention_softmax(&d, p.q + (size_t)t * dk, p.k, p.v, out),
                     LINATTN_OK, "%s", linattn_last_error());
        for (int h = 0; h < H; h++)
            cr_expect(rel_err(out + h * dv, full + ((size_t)h * L + t) * dv, dv) <= 1e-5,
                      "t=%d head %d", t, h);
    }
    free(full);
    drop(&p);
}

Test(linear, chunked_equals_recurrent)
{
    const int shapes[][6] = {
        /* B, H, Lq, Lk, dk, dv */
        {1, 1, 1, 1, 1, 1},     {1, 2, 63, 63, 3, 5},    {2, 3, 64, 64, 8, 8},
        {1, 1, 65, 65, 64, 64}, {1, 2, 200, 300, 17, 9}, {1, 2, 300, 200, 9, 17},
        {1, 1, 1000, 1000, 32, 32},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int *x = shapes[s];
        problem p = make(x[0], x[1], x[2], x[3], x[4], x[5], 1, 90 + s);
        set_mode(LINATTN_LINEAR_RECURRENT);
        float *a = run_new(LINEAR, &p);
        set_mode(LINATTN_LINEAR_CHUNKED);
        float *b = run_new(LINEAR, &p);
        double e = rel_err(b, a, out_size(&p));
        cr_expect(e <= 1e-5, "shape %zu: chunked vs recurrent %g", s, e);
        free(a);
        free(b);
        drop(&p);
    }
    set_mode(LINATTN_LINEAR_AUTO);
}

/* ------------------------------------------------------------------------ */
/* ISAs, threads, shapes                                                     */
/* ------------------------------------------------------------------------ */

Test(attention, every_isa_agrees)
{
    linattn_isa isas[LINATTN_ISA_COUNT];
    int n = tu_cpu_isas(isas);
    problem p = make(2, 3, 130, 150, 33, 20, 1, 101);
    int lengths[2] = {150, 97};
    p.lengths = lengths;
    for (int var = SOFTMAX; var <= LINEAR; var++) {
        double *ref = reference((enum variant)var, &p);
        for (int i = 0; i < n; i++) {
            if (linattn_set_isa(isas[i]) != LINATTN_OK)
                continue; /* the CPU has it but this build does not */
            for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++) {
                set_mode((linattn_linear_mode)mode);
                float *out = run_new((enum variant)var, &p);
                double e = max_err_ref(&p, out, ref);
                cr_expect(e <= 1e-5, "%s isa %s mode %d: max error %g",
                          var == SOFTMAX ? "softmax" : "linear", linattn_isa_name(isas[i]), mode,
                          e);
                free(out);
            }
        }
        free(ref);
    }
    p.lengths = NULL;
    linattn_set_isa(LINATTN_ISA_AUTO);
    set_mode(LINATTN_LINEAR_AUTO);
    drop(&p);
}

/* 1 and 2 threads, with fewer heads than threads (split by query blocks,
 * and for linear by segments) and with more. */
Test(attention, one_and_two_threads_agree)
{
    const int shapes[][5] = {{1, 1, 1500, 1500, 32}, {1, 3, 700, 700, 16}, {2, 1, 600, 900, 24}};
    for (size_t s = 0; s < 3; s++)
        for (int var = SOFTMAX; var <= LINEAR; var++)
            for (int causal = 0; causal < 2; causal++) {
                const int *x = shapes[s];
                problem p = make(x[0], x[1], x[2], x[3], x[4], x[4], causal, 111 + s);
                p.threads = 1;
                float *a = run_new((enum variant)var, &p);
                p.threads = 2;
                float *b = run_new((enum variant)var, &p);
                double e = rel_err(b, a, out_size(&p));
                if (var == SOFTMAX)
                    cr_expect(e == 0, "softmax shape %zu causal %d: 1 vs 2 threads %g", s,
                              causal, e);
                else
                    cr_expect(e <= 1e-6, "linear shape %zu causal %d: 1 vs 2 threads %g", s,
                              causal, e);
                free(a);
                free(b);
                drop(&p);
            }
}

/* Flash-decoding: a block of at most 64 queries against more than 1024
 * keys is cut into key segments computed apart and merged. Against the
 * double reference (one and two segments' worth of keys, a last segment of
 * one key, lengths, d_v != d_k, causal and not), on every ISA; the cut
 * depends on the shape only, so 1, 2 and 3 threads agree bit for bit. */
Test(softmax, split_keys_against_reference)
{
    const int shapes[][7] = {
        /* B, H, Lq, Lk, dk, dv, causal */
        {1, 1, 1, 5000, 64, 64, 1}, {1, 1, 1, 1025, 16, 16, 0}, {1, 2, 3, 2049, 17, 9, 1},
        {2, 1, 64, 1100, 8, 128, 1}, {1, 3, 5, 3000, 33, 20, 0},
    };
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int *x = shapes[s];
        problem p = make(x[0], x[1], x[2], x[3], x[4], x[5], x[6], 500 + s);
        int lengths[2] = {x[3], x[3] * 2 / 3};
        if (x[0] > 1)
            p.lengths = lengths;
        double *ref = reference(SOFTMAX, &p);
        for (int i = 0; i < ni; i++) {
            cr_assert_eq(linattn_set_isa(isas[i]), LINATTN_OK);
            float *first = NULL;
            for (int t = 1; t <= 3; t++) {
                p.threads = t;
                float *out = run_new(SOFTMAX, &p);
                double e = max_err_ref(&p, out, ref);
                cr_expect(e <= 1e-5, "shape %zu isa %s threads %d: max error %g", s,
                          linattn_isa_name(isas[i]), t, e);
                if (!first)
                    first = out;
                else {
                    cr_expect(!memcmp(first, out, out_size(&p) * sizeof(float)),
                              "shape %zu isa %s: 1 and %d threads differ", s,
                              linattn_isa_name(isas[i]), t);
                    free(out);
                }
            }
            free(first);
        }
        free(ref);
        p.lengths = NULL;
        drop(&p);
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
}

/* Split keys keep causality for bad values: 4 queries against 3000 keys
 * (bottom-right aligned, query i sees keys up to 2996 + i), an inf or NaN
 * in a key or value only a later query sees never reaches an earlier one,
 * and a batch row whose length ends in the first segment is unaffected by
 * bad values in the others. */
Test(softmax, split_keys_keep_causality_with_inf_and_nan)
{
    const int Lq = 4, Lk = 3000, dk = 8, dv = 5;
    const float bad[] = {INFINITY, -INFINITY, NAN};
    problem p = make(1, 1, Lq, Lk, dk, dv, 1, 77);
    p.threads = 2;
    float *base = run_new(SOFTMAX, &p);
    for (int t = 1; t < Lq; t++)
        for (int which = 1; which < 3; which++) { /* k, v */
            problem x = make(1, 1, Lq, Lk, dk, dv, 1, 77);
            x.threads = 2;
            float *tensor = which == 1 ? x.k : x.v;
            int width = which == 1 ? dk : dv, key = Lk - Lq + t;
            tensor[(size_t)key * width + (size_t)(t % width)] = bad[(t + which) % 3];
            float *out = run_new(SOFTMAX, &x);
            cr_expect(!memcmp(out, base, (size_t)t * dv * sizeof(float)),
                      "a bad %s at key %d reached a query before %d", which == 1 ? "k" : "v",
                      key, t);
            free(out);
            drop(&x);
        }
    free(base);
    drop(&p);

    problem b = make(2, 1, 1, 3000, dk, dv, 0, 78);
    int lengths[2] = {700, 3000};
    b.lengths = lengths;
    b.threads = 2;
    float *clean = run_new(SOFTMAX, &b);
    for (int j = 700; j < 3000; j += 113)
        b.k[(size_t)j * dk] = b.v[(size_t)j * dv] = bad[j % 3];
    float *dirty = run_new(SOFTMAX, &b);
    cr_expect(!memcmp(clean, dirty, (size_t)dv * sizeof(float)),
              "bad values past a row's length reached it");
    for (int c = 0; c < dv; c++)
        cr_expect(isfinite(clean[c]), "%g", (double)clean[c]);
    free(clean);
    free(dirty);
    b.lengths = NULL;
    drop(&b);
}

Test(attention, tail_shapes_against_reference)
{
    const int ds[] = {1, 3, 8, 63, 64, 65, 128};
    const int Ls[] = {1, 2, 63, 64, 65};
    for (size_t a = 0; a < sizeof ds / sizeof ds[0]; a++)
        for (size_t b = 0; b < sizeof Ls / sizeof Ls[0]; b++)
            for (int var = SOFTMAX; var <= LINEAR; var++) {
                int d = ds[a], L = Ls[b];
                problem p = make(1, 2, L, L, d, d, (int)(a + b) % 2, 200 + a * 10 + b);
                check_against_reference((enum variant)var, &p, 2e-5);
                drop(&p);
            }
    /* long sequences, Lq != Lk both ways, d_v != d_k, B*H < threads */
    const int big[][7] = {
        /* B, H, Lq, Lk, dk, dv, threads */
        {1, 1, 1000, 1000, 64, 64, 2}, {1, 1, 1000, 1000, 3, 65, 2}, {1, 2, 65, 1000, 63, 8, 2},
        {2, 1, 1000, 63, 8, 128, 2},   {1, 1, 1, 1000, 128, 1, 1},   {3, 1, 100, 130, 1, 3, 4},
    };
    for (size_t s = 0; s < sizeof big / sizeof big[0]; s++)
        for (int var = SOFTMAX; var <= LINEAR; var++)
            for (int causal = 0; causal < 2; causal++) {
                const int *x = big[s];
                problem p = make(x[0], x[1], x[2], x[3], x[4], x[5], causal, 300 + s);
                p.threads = x[6];
                int lengths[3] = {x[3], x[3] * 2 / 3, 1};
                if (x[0] > 1)
                    p.lengths = lengths;
                check_against_reference((enum variant)var, &p, 2e-5);
                p.lengths = NULL;
                drop(&p);
            }
}

/* Head views of an (L, H*D) buffer, a caller's workspace, and keys shared
 * by every head (stride 0) give the dense results. */
Test(attention, strided_views_and_workspace)
{
    const int H = 3, L = 70, D = 8;
    problem p = make(1, H, L, L, D, D, 1, 401);
    float *q2 = malloc((size_t)H * L * D * sizeof(float)), *k2 = malloc((size_t)H * L * D * 4),
          *v2 = malloc((size_t)H * L * D * 4), *o2 = malloc((size_t)H * L * D * 4);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < L; i++)
            for (int c = 0; c < D; c++) {
                size_t dense = ((size_t)h * L + i) * D + c, view = ((size_t)i * H + h) * D + c;
                q2[view] = p.q[dense];
                k2[view] = p.k[dense];
                v2[view] = p.v[dense];
            }
    for (int var = SOFTMAX; var <= LINEAR; var++) {
        float *dense = run_new((enum variant)var, &p);
        linattn_attention_desc d = desc_of(&p);
        linattn_layout view = {0, D, (size_t)H * D};
        d.q = d.k = d.v = d.out = view;
        size_t bytes = var == SOFTMAX ? linattn_attention_softmax_workspace(&d)
                                      : linattn_attention_linear_workspace(&d);
        cr_assert(bytes > 0);
        d.workspace = malloc(bytes);
        d.workspace_bytes = bytes;
        linattn_status st = var == SOFTMAX ? linattn_attention_softmax(&d, q2, k2, v2, o2)
                                           : linattn_attention_linear(&d, q2, k2, v2, o2);
        cr_assert_eq(st, LINATTN_OK, "%s", linattn_last_error());
        for (int h = 0; h < H; h++)
            for (int i = 0; i < L; i++)
                cr_expect(max_diff(o2 + ((size_t)i * H + h) * D, dense + ((size_t)h * L + i) * D,
                                   D) == 0);
        d.workspace_bytes = bytes - 1;
        st = var == SOFTMAX ? linattn_attention_softmax(&d, q2, k2, v2, o2)
                            : linattn_attention_linear(&d, q2, k2, v2, o2);
        cr_expect_eq(st, LINATTN_ERR_INVALID, "a workspace too small is refused");
        free(d.workspace);

        /* every head reads head 0's keys and values */
        linattn_attention_desc g = desc_of(&p);
        g.k = g.v = (linattn_layout){0, 0, D};
        problem x = p;
        x.k = malloc((size_t)H * L * D * 4);
        x.v = malloc((size_t)H * L * D * 4);
        for (int h = 0; h < H; h++) {
            memcpy(x.k + (size_t)h * L * D, p.k, (size_t)L * D * 4);
            memcpy(x.v + (size_t)h * L * D, p.v, (size_t)L * D * 4);
        }
        float *want = run_new((enum variant)var, &x);
        st = var == SOFTMAX ? linattn_attention_softmax(&g, p.q, p.k, p.v, o2)
                            : linattn_attention_linear(&g, p.q, p.k, p.v, o2);
        cr_assert_eq(st, LINATTN_OK, "%s", linattn_last_error());
        cr_expect(max_diff(o2, want, (size_t)H * L * D) == 0);
        free(want);
        free(x.k);
        free(x.v);
        free(dense);
    }
    free(q2);
    free(k2);
    free(v2);
    free(o2);
    drop(&p);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

static void expect_invalid(const linattn_attention_desc *d, const float *q, const float *k,
                           const float *v, float *out, const char *what)
{
    for (int var = SOFTMAX; var <= LINEAR; var++) {
        linattn_status st = var == SOFTMAX ? linattn_attention_softmax(d, q, k, v, out)
                                           : linattn_attention_linear(d, q, k, v, out);
        cr_expect_eq(st, LINATTN_ERR_INVALID, "%s: %s gave %d", what,
                     var == SOFTMAX ? "softmax" : "linear", st);
        cr_expect(linattn_last_error()[0] != '\0', "%s: no message", what);
    }
}

Test(attention, bad_descriptors)
{
    float buf[4096] = {0};
    int lengths[2] = {4, 4};
    linattn_attention_desc good;
    linattn_attention_desc_init(&good);
    good.batch = 2, good.heads = 2, good.len_q = 4, good.len_k = 4, good.d_k = 8, good.d_v = 8;
    good.lengths = lengths;
    cr_assert_eq(linattn_attention_softmax(&good, buf, buf, buf, buf + 2048), LINATTN_OK);
    cr_assert_eq(linattn_attention_linear(&good, buf, buf, buf, buf + 2048), LINATTN_OK);

    expect_invalid(NULL, buf, buf, buf, buf + 2048, "NULL desc");
    int *fields[] = {&good.batch, &good.heads, &good.len_q, &good.len_k, &good.d_k, &good.d_v};
    for (size_t i = 0; i < 6; i++)
        for (int bad = -1; bad <= 0; bad++) {
            linattn_attention_desc d = good;
            int *f = (int *)((char *)&d + ((char *)fields[i] - (char *)&good));
            *f = bad;
            expect_invalid(&d, buf, buf, buf, buf + 2048, "non-positive dim");
        }
    expect_invalid(&good, NULL, buf, buf, buf, "NULL q");
    expect_invalid(&good, buf, NULL, buf, buf, "NULL k");
    expect_invalid(&good, buf, buf, NULL, buf, "NULL v");
    expect_invalid(&good, buf, buf, buf, NULL, "NULL out");
    int badlen[2][2] = {{4, 5}, {-1, 4}};
    for (int i = 0; i < 2; i++) {
        linattn_attention_desc d = good;
        d.lengths = badlen[i];
        expect_invalid(&d, buf, buf, buf, buf + 2048, "length out of range");
    }
    linattn_attention_desc d = good;
    d.threads = -1;
    expect_invalid(&d, buf, buf, buf, buf + 2048, "negative threads");
    d = good;
    d.scale = NAN;
    expect_invalid(&d, buf, buf, buf, buf + 2048, "NaN scale");
    d = good;
    d.eps = -1;
    expect_invalid(&d, buf, buf, buf, buf + 2048, "negative eps");
    d = good;
    d.k = (linattn_layout){64, 32, 7};
    expect_invalid(&d, buf, buf, buf, buf + 2048, "k row stride < d_k");
    d = good;
    d.out = (linattn_layout){64, 8, 8};
    expect_invalid(&d, buf, buf, buf, buf + 2048, "overlapping out heads");
    d = good;
    d.out = (linattn_layout){0, 32, 8};
    expect_invalid(&d, buf, buf, buf, buf + 2048, "out batches alias");
    d = good;
    d.workspace = buf;
    d.workspace_bytes = 16;
    expect_invalid(&d, buf, buf, buf, buf + 2048, "workspace too small");
    d = good;
    d.linear_mode = (linattn_linear_mode)3;
    expect_invalid(&d, buf, buf, buf, buf + 2048, "linear_mode 3");
}

Test(linear, state_errors_and_accessors)
{
    linattn_linear_state *s = NULL;
    cr_expect_eq(make_state(0, 4, 4, 1e-6f, NULL, &s), LINATTN_ERR_INVALID);
    cr_expect_eq(make_state(2, 4, -1, 1e-6f, NULL, &s), LINATTN_ERR_INVALID);
    cr_expect_eq(make_state(2, 4, 4, -1.0f, NULL, &s), LINATTN_ERR_INVALID);
    cr_expect_eq(make_state(2, 4, 4, NAN, NULL, &s), LINATTN_ERR_INVALID);
    cr_expect_eq(make_state(2, 4, 4, 1e-6f, NULL, NULL), LINATTN_ERR_INVALID);
    cr_assert_eq(make_state(2, 4, 3, 1e-6f, NULL, &s), LINATTN_OK);
    cr_expect_eq(linattn_linear_state_bytes(s),
                 2 * (4 * 3 + 4 + LINATTN_LINEAR_BLOCK * (4 + 3)) * sizeof(float));
    cr_expect_null(linattn_linear_state_S(s, 2));
    cr_expect_eq(linattn_linear_state_set_mode(s, (linattn_linear_mode)3), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_linear_state_set_mode(NULL, LINATTN_LINEAR_CHUNKED), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_linear_state_set_mode(s, LINATTN_LINEAR_CHUNKED), LINATTN_OK);
    cr_expect_null(linattn_linear_state_z(s, -1));
    float x[64] = {0};
    cr_expect_eq(linattn_linear_step(s, NULL, x, x, x), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_linear_prefill(s, x, x, x, -1, x), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_linear_prefill(NULL, x, x, x, 1, x), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_linear_prefill(s, x, x, x, 0, x), LINATTN_OK);
    linattn_layout bad[4] = {{0, 0, 4}, {0, 0, 2}, {0, 0, 3}, {0, 0, 3}};
    cr_expect_eq(linattn_linear_prefill_strided(s, x, x, x, 2, x, bad, 1), LINATTN_ERR_INVALID);
    cr_expect(linattn_last_error()[0] != '\0');
    cr_expect_eq(linattn_linear_step(s, x, x, x, x), LINATTN_OK);
    cr_expect_eq(linattn_linear_state_tokens(s), 1);
    cr_expect_null(linattn_linear_state_rows_k(s, 2));
    cr_expect_null(linattn_linear_state_rows_v(s, -1));
    cr_expect_gt(linattn_linear_state_rows_k(s, 1)[0], 0.0f, "the key waits as a row");
    cr_expect_eq(linattn_linear_state_z(s, 1)[0], 0.0f, "no block folded yet");
    for (int t = 1; t < LINATTN_LINEAR_BLOCK; t++)
        cr_expect_eq(linattn_linear_step(s, x, x, x, x), LINATTN_OK);
    cr_expect_gt(linattn_linear_state_z(s, 1)[0], 0.0f, "a whole block folded into z");
    linattn_linear_state_set_tokens(s, 77);
    cr_expect_eq(linattn_linear_state_tokens(s), 77);
    linattn_linear_state_reset(s);
    cr_expect_eq(linattn_linear_state_tokens(s), 0);
    cr_expect_eq(linattn_linear_state_z(s, 1)[0], 0.0f);
    linattn_linear_state_free(s);
    linattn_linear_state_free(NULL);
}

/* ------------------------------------------------------------------------ */
/* Decayed linear attention                                                  */
/* ------------------------------------------------------------------------ */

/* Per-head decays for H heads: a spread from a few tokens to none. */
static const float decays8[8] = {0.5f, 0.875f, 0.01f, 0.96875f, 0.999f, 1.0f, 0.7f, 0.99f};

/* Against the double reference, both algorithms, with lengths (padding
 * before the end of a causal sequence: rows past it read the decayed
 * state), bottom-right alignment both ways, d_v != d_k, odd sizes, and
 * thread counts that split one head (parallel absorb, segments). */
Test(decay, against_reference)
{
    const int shapes[][7] = {
        /* B, H, Lq, Lk, dk, dv, threads */
        {1, 4, 1, 1, 1, 1, 1},      {2, 3, 37, 37, 5, 7, 1},    {2, 2, 20, 90, 9, 4, 1},
        {2, 2, 90, 20, 4, 9, 1},    {1, 8, 65, 65, 16, 16, 1},  {2, 3, 130, 150, 33, 20, 2},
        {1, 1, 1500, 1500, 16, 8, 2}, {1, 2, 100, 1400, 8, 12, 2}, {1, 1, 1200, 1300, 7, 5, 2},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++) {
            const int *x = shapes[s];
            set_mode((linattn_linear_mode)mode);
            problem p = make(x[0], x[1], x[2], x[3], x[4], x[5], 1, 500 + s);
            p.threads = x[6];
            p.decay = decays8;
            int lengths[2] = {x[3], x[3] * 2 / 3};
            if (x[0] > 1)
                p.lengths = lengths;
            float *out = run_new(LINEAR, &p);
            double *ref = reference(LINEAR, &p);
            double e = max_err_ref(&p, out, ref);
            cr_expect(e <= 2e-5, "shape %zu mode %d: max error %g", s, mode, e);
            free(out);
            free(ref);
            p.lengths = NULL;
            drop(&p);
        }
    set_mode(LINATTN_LINEAR_AUTO);
}

/* A decay of 1 on every head is the undecayed operator, bit for bit, on
 * every path (recurrent, chunked, split over threads) and in the state. */
Test(decay, ones_are_no_decay_bit_for_bit)
{
    const float ones[3] = {1.0f, 1.0f, 1.0f};
    const int shapes[][5] = {{2, 3, 70, 90, 1}, {1, 1, 1500, 1500, 2}, {1, 1, 600, 1700, 2}};
    for (size_t s = 0; s < 3; s++)
        for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++) {
            const int *x = shapes[s];
            set_mode((linattn_linear_mode)mode);
            problem p = make(x[0], x[1], x[2], x[3], 12, 10, 1, 600 + s);
            p.threads = x[4];
            float *a = run_new(LINEAR, &p);
            p.decay = ones;
            float *b = run_new(LINEAR, &p);
            cr_expect(!memcmp(a, b, out_size(&p) * sizeof(float)), "shape %zu mode %d", s, mode);
            free(a);
            free(b);
            drop(&p);
        }
    set_mode(LINATTN_LINEAR_AUTO);

    linattn_linear_state *a, *b;
    const int H = 3, dk = 8, dv = 8, L = 100;
    problem p = make(1, H, L, L, dk, dv, 1, 610);
    cr_assert_eq(make_state(H, dk, dv, 1e-6f, NULL, &a), LINATTN_OK);
    cr_assert_eq(make_state(H, dk, dv, 1e-6f, ones, &b), LINATTN_OK);
    float *oa = malloc(out_size(&p) * sizeof(float)), *ob = malloc(out_size(&p) * sizeof(float));
    cr_assert_eq(linattn_linear_prefill(a, p.q, p.k, p.v, L, oa), LINATTN_OK);
    cr_assert_eq(linattn_linear_prefill(b, p.q, p.k, p.v, L, ob), LINATTN_OK);
    cr_expect(!memcmp(oa, ob, out_size(&p) * sizeof(float)));
    cr_expect(!memcmp(oa, ob, out_size(&p) * sizeof(float)));
    cr_assert_eq(linattn_linear_step(a, p.q, p.k, p.v, oa), LINATTN_OK);
    cr_assert_eq(linattn_linear_step(b, p.q, p.k, p.v, ob), LINATTN_OK);
    cr_expect(!memcmp(oa, ob, (size_t)H * dv * sizeof(float)));
    for (int h = 0; h < H; h++)
        cr_expect(!memcmp(linattn_linear_state_S(a, h), linattn_linear_state_S(b, h),
                          (size_t)dk * dv * sizeof(float)));
    linattn_linear_state_free(a);
    linattn_linear_state_free(b);
    free(oa);
    free(ob);
    drop(&p);
}

/* Every ISA, both algorithms, against the reference. */
Test(decay, every_isa_agrees)
{
    linattn_isa isas[LINATTN_ISA_COUNT];
    int n = tu_cpu_isas(isas);
    problem p = make(2, 3, 130, 150, 33, 20, 1, 620);
    int lengths[2] = {150, 97};
    p.lengths = lengths;
    p.decay = decays8 + 1;
    double *ref = reference(LINEAR, &p);
    for (int i = 0; i < n; i++) {
        if (linattn_set_isa(isas[i]) != LINATTN_OK)
            continue; /* the CPU has it but this build does not */
        for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++) {
            set_mode((linattn_linear_mode)mode);
            float *out = run_new(LINEAR, &p);
            double e = max_err_ref(&p, out, ref);
            cr_expect(e <= 1e-5, "isa %s mode %d: max error %g", linattn_isa_name(isas[i]), mode,
                      e);
            free(out);
        }
    }
    free(ref);
    p.lengths = NULL;
    linattn_set_isa(LINATTN_ISA_AUTO);
    set_mode(LINATTN_LINEAR_AUTO);
    drop(&p);
}

/* 1 and 2 threads agree on a head split in segments and absorb parts. */
Test(decay, one_and_two_threads_agree)
{
    const int shapes[][4] = {{1, 1, 1500, 1500}, {1, 3, 700, 700}, {1, 1, 300, 1800}};
    for (size_t s = 0; s < 3; s++)
        for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++) {
            const int *x = shapes[s];
            set_mode((linattn_linear_mode)mode);
            problem p = make(x[0], x[1], x[2], x[3], 24, 24, 1, 630 + s);
            p.decay = decays8 + 3;
            p.threads = 1;
            float *a = run_new(LINEAR, &p);
            p.threads = 2;
            float *b = run_new(LINEAR, &p);
            double e = rel_err(b, a, out_size(&p));
            cr_expect(e <= 1e-6, "shape %zu mode %d: 1 vs 2 threads %g", s, mode, e);
            free(a);
            free(b);
            drop(&p);
        }
    set_mode(LINATTN_LINEAR_AUTO);
}

/* Causality holds with a decay, for bad values too: NaN and inf at later
 * positions never reach earlier rows; outputs stay within max |v|. */
Test(decay, causal_and_bounded)
{
    const int L = 150, H = 3, dk = 8, dv = 5;
    for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++) {
        set_mode((linattn_linear_mode)mode);
        problem p = make(1, H, L, L, dk, dv, 1, 640);
        p.decay = decays8;
        float *base = run_new(LINEAR, &p);
        double vmax = 0;
        for (size_t i = 0; i < (size_t)H * L * dv; i++)
            vmax = fabs(p.v[i]) > vmax ? fabs(p.v[i]) : vmax;
        for (size_t i = 0; i < out_size(&p); i++)
            cr_expect(fabs(base[i]) <= vmax * (1 + 1e-5), "|out| %g > max|v| %g",
                      (double)base[i], vmax);
        const int t = 77;
        for (int h = 0; h < H; h++) {
            p.q[((size_t)h * L + t) * dk] = NAN;
            p.k[((size_t)h * L + t) * dk + 1] = INFINITY;
            p.v[((size_t)h * L + t) * dv + 2] = NAN;
        }
        float *out = run_new(LINEAR, &p);
        for (int h = 0; h < H; h++)
            cr_expect(!memcmp(out + (size_t)h * L * dv, base + (size_t)h * L * dv,
                              (size_t)t * dv * sizeof(float)),
                      "mode %d head %d: a NaN at %d reached an earlier row", mode, h, t);
        free(out);
        free(base);
        drop(&p);
    }
    set_mode(LINATTN_LINEAR_AUTO);
}

/* A decayed state stays bounded over a long stream (it forgets): after
 * 100k steps of keys with phi ~ 1 its z is near 1/(1 - g) per component. */
Test(decay, long_stream_stays_bounded)
{
    const float g[2] = {0.5f, 0.99f};
    linattn_linear_state *s;
    cr_assert_eq(make_state(2, 4, 4, 1e-6f, g, &s), LINATTN_OK);
    float q[8] = {0}, k[8] = {0}, v[8] = {1, 1, 1, 1, 1, 1, 1, 1}, o[8];
    for (int t = 0; t < 100000; t++)
        cr_assert_eq(linattn_linear_step(s, q, k, v, o), LINATTN_OK);
    for (int h = 0; h < 2; h++)
        for (int c = 0; c < 4; c++) {
            double want = 1.0 / (1.0 - g[h]);
            double z = linattn_linear_state_z(s, h)[c];
            cr_expect(fabs(z - want) <= 1e-4 * want, "head %d z %g, want %g", h, z, want);
        }
    for (int j = 0; j < 8; j++)
        cr_expect(fabs(o[j] - 1.0f) < 1e-5, "out %g", (double)o[j]);
    linattn_linear_state_free(s);
}

Test(decay, bad_values_are_refused)
{
    float buf[4096] = {0};
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = 1, d.heads = 2, d.len_q = 4, d.len_k = 4, d.d_k = 8, d.d_v = 8, d.causal = 1;
    const float good[2] = {0.5f, 1.0f};
    d.decay = good;
    cr_expect_eq(linattn_attention_linear(&d, buf, buf, buf, buf + 2048), LINATTN_OK);
    cr_expect_eq(linattn_attention_softmax(&d, buf, buf, buf, buf + 2048), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "linear attention only"), "%s", linattn_last_error());
    d.causal = 0;
    cr_expect_eq(linattn_attention_linear(&d, buf, buf, buf, buf + 2048), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "causal"), "%s", linattn_last_error());
    d.causal = 1;
    const float bad[][2] = {{0.0f, 0.5f}, {0.5f, 1.5f}, {NAN, 0.5f}, {0.5f, -0.25f},
                            {INFINITY, 0.5f}};
    linattn_linear_state *s = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d.decay = bad[i];
        cr_expect_eq(linattn_attention_linear(&d, buf, buf, buf, buf + 2048), LINATTN_ERR_INVALID,
                     "case %zu", i);
        cr_expect(strstr(linattn_last_error(), "decay["), "%s", linattn_last_error());
        cr_expect_eq(make_state(2, 4, 4, 1e-6f, bad[i], &s), LINATTN_ERR_INVALID);
        cr_expect_null(s);
    }
}

/* tests/data/NAME.SUFFIX.npy (written by tools/reference.py). */
static linattn_npy read_golden(const char *name, const char *suffix)
{
    char file[256];
    snprintf(file, sizeof file, "%s.%s.npy", name, suffix);
    linattn_npy a;
    cr_assert_eq(linattn_npy_read(tu_data(file), &a), LINATTN_OK, "%s", linattn_last_error());
    return a;
}

/* The operator against tools/reference.py's float64 NumPy loop, written
 * from the definition: lengths, Lq < Lk and Lq > Lk, d_v != d_k, odd sizes,
 * both algorithms and 1 and 2 threads. 1e-5 absolute: outputs are convex
 * combinations of values of size ~1 and fp32 sums of a few hundred terms
 * stay near 1e-6 (the reference itself is stored as <f8, read as fp32). */
Test(decay, matches_numpy_float64_reference)
{
    static const char *const names[] = {"decay-op-odd", "decay-op-fewer-queries",
                                         "decay-op-more-queries", "decay-op-long"};
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        linattn_npy q = read_golden(names[n], "q"), k = read_golden(names[n], "k");
        linattn_npy v = read_golden(names[n], "v"), g = read_golden(names[n], "decay");
        linattn_npy len = read_golden(names[n], "lengths"), want = read_golden(names[n], "out");
        cr_assert_eq(q.ndim, 4);
        int lengths[8];
        cr_assert(len.count <= 8);
        for (size_t b = 0; b < len.count; b++)
            lengths[b] = (int)len.data[b];
        linattn_attention_desc d;
        linattn_attention_desc_init(&d);
        d.batch = (int)q.shape[0], d.heads = (int)q.shape[1], d.len_q = (int)q.shape[2];
        d.len_k = (int)k.shape[2], d.d_k = (int)q.shape[3], d.d_v = (int)v.shape[3];
        d.causal = 1;
        d.lengths = lengths;
        d.decay = g.data;
        cr_assert_eq(g.count, (size_t)d.heads);
        float *out = malloc(want.count * sizeof(float));
        for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++)
            for (int threads = 1; threads <= 2; threads++) {
                d.linear_mode = (linattn_linear_mode)mode;
                d.threads = threads;
                cr_assert_eq(linattn_attention_linear(&d, q.data, k.data, v.data, out), LINATTN_OK,
                             "%s", linattn_last_error());
                double e = max_diff(out, want.data, want.count);
                cr_expect(e <= 1e-5, "%s mode %d threads %d: max error %g", names[n], mode,
                          threads, e);
            }
        set_mode(LINATTN_LINEAR_AUTO);
        free(out);
        linattn_npy *all[] = {&q, &k, &v, &g, &len, &want};
        for (size_t i = 0; i < 6; i++)
            linattn_npy_free(all[i]);
    }
}

/* A stream of 10M tokens against float64 sums: the blocked state (keys
 * summed 16 at a time before they join S) stays within 1e-3 of float64,
 * the target; adding key by key drifted to 5e-3 by 10M (z stops
 * absorbing near 2^24 times a key's phi). Undecayed, so the sums grow
 * without bound; values with a mean, so S grows too. */
Test(linear, ten_million_tokens_stay_accurate)
{
    enum { D = 8, T = 10000000 };
    linattn_linear_state *s;
    cr_assert_eq(make_state(1, D, D, 1e-6f, NULL, &s), LINATTN_OK);
    double S[D][D] = {{0}}, z[D] = {0};
    float q[D], k[D], v[D], o[D];
    uint32_t x = 2463534242u;
    double worst = 0;
    for (long t = 1; t <= T; t++) {
        for (int i = 0; i < D; i++) { /* xorshift32: uniform in [-2, 2), v with mean 0.5 */
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            q[i] = (float)(x >> 8) * 0x1p-22f - 2.0f;
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            k[i] = (float)(x >> 8) * 0x1p-22f - 2.0f;
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            v[i] = (float)(x >> 8) * 0x1p-22f - 1.5f;
        }
        cr_assert_eq(linattn_linear_step(s, q, k, v, o), LINATTN_OK);
        double fk[D];
        for (int i = 0; i < D; i++) {
            fk[i] = phi(k[i]);
            z[i] += fk[i];
            for (int j = 0; j < D; j++)
                S[i][j] += fk[i] * v[j];
        }
        if (t == 1000000 || t == T) {
            double den = 1e-6, num[D] = {0}, ref_max = 0, err = 0;
            for (int i = 0; i < D; i++) {
                den += phi(q[i]) * z[i];
                for (int j = 0; j < D; j++)
                    num[j] += phi(q[i]) * S[i][j];
            }
            for (int j = 0; j < D; j++) {
                ref_max = fmax(ref_max, fabs(num[j] / den));
                err = fmax(err, fabs(num[j] / den - o[j]));
            }
            worst = err / ref_max;
            cr_expect(worst <= 1e-3, "t = %ld: relative error %g against float64 sums", t, worst);
            cr_log_info("t = %ld: relative error %.3g against float64 sums", t, worst);
        }
    }
    linattn_linear_state_free(s);
}

/* Grouped-query attention: G k/v heads shared by groups of H / G query
 * heads give, bit for bit, the dense call on k/v expanded to H heads; a G
 * that does not divide H is INVALID. Both variants, causal and not, with
 * decays for linear. */
Test(attention, grouped_query_heads_equal_expanded)
{
    const int B = 2, H = 6, L = 70, dk = 9, dv = 7;
    const int groups[] = {1, 2, 3, 6};
    const float decay[6] = {0.5f, 0.9f, 0.99f, 1.0f, 0.8f, 0.95f};
    for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
        for (int var = SOFTMAX; var <= LINEAR; var++)
            for (int causal = 0; causal < 2; causal++) {
                const int G = groups[gi];
                problem p = make(B, H, L, L, dk, dv, causal, 900 + gi);
                problem g = make(B, G, L, L, dk, dv, causal, 950 + gi); /* its k, v: (B, G, L, D) */
                if (var == LINEAR && causal)
                    p.decay = decay;
                for (int b = 0; b < B; b++) /* expand g's k/v into p's */
                    for (int h = 0; h < H; h++) {
                        int kh = h / (H / G);
                        memcpy(p.k + ((size_t)(b * H + h) * L) * dk, g.k + ((size_t)(b * G + kh) * L) * dk,
                               (size_t)L * dk * sizeof(float));
                        memcpy(p.v + ((size_t)(b * H + h) * L) * dv, g.v + ((size_t)(b * G + kh) * L) * dv,
                               (size_t)L * dv * sizeof(float));
                    }
                float *dense = run_new((enum variant)var, &p);
                linattn_attention_desc d = desc_of(&p);
                d.kv_heads = G;
                float *out = malloc(out_size(&p) * sizeof(float));
                linattn_status st = var == SOFTMAX
                                        ? linattn_attention_softmax(&d, p.q, g.k, g.v, out)
                                        : linattn_attention_linear(&d, p.q, g.k, g.v, out);
                cr_assert_eq(st, LINATTN_OK, "%s", linattn_last_error());
                cr_expect(!memcmp(out, dense, out_size(&p) * sizeof(float)),
                          "%s G=%d causal=%d: grouped differs from expanded",
                          var == SOFTMAX ? "softmax" : "linear", G, causal);
                free(out);
                free(dense);
                p.decay = NULL;
                drop(&p);
                drop(&g);
            }
    float buf[64] = {0};
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = 1, d.heads = 6, d.len_q = 1, d.len_k = 1, d.d_k = 2, d.d_v = 2, d.kv_heads = 4;
    expect_invalid(&d, buf, buf, buf, buf + 32, "kv_heads 4 of 6");
    d.kv_heads = -1;
    expect_invalid(&d, buf, buf, buf, buf + 32, "kv_heads -1");
}

/* ------------------------------------------------------------------------ */
/* k and v stored as halfs (a KV cache in F16)                              */
/* ------------------------------------------------------------------------ */

/* x rounded to halfs (h) and those halfs' values in fp32 (x itself). */
static uint16_t *to_halfs(float *x, size_t n)
{
    uint16_t *h = malloc(n * sizeof *h + 1);
    cr_assert(h);
    for (size_t i = 0; i < n; i++) {
        h[i] = linattn_f32_to_f16(x[i]);
        x[i] = linattn_f16_to_f32(h[i]);
    }
    return h;
}

/* linattn_attention_softmax_f16kv gives bit for bit what the fp32 operator
 * gives for k, v holding the halfs' values: tiles with causal diagonals
 * (partial rows), lengths, d_v != d_k, grouped k/v heads, one query against
 * split keys (decode), on every ISA at 1 and 2 threads. */
Test(softmax_f16kv, equals_fp32_on_the_same_values)
{
    const int shapes[][8] = {
        /* B, H, Lq, Lk, dk, dv, causal, kv_heads */
        {2, 3, 130, 150, 33, 20, 1, 0}, {1, 4, 1, 5000, 64, 64, 1, 2}, {1, 2, 70, 70, 16, 9, 0, 1},
        {2, 2, 3, 2049, 17, 31, 1, 0},  {1, 8, 64, 1100, 64, 64, 1, 8},
    };
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int *x = shapes[s];
        const int G = x[7] ? x[7] : x[1];
        problem p = make(x[0], x[1], x[2], x[3], x[4], x[5], x[6], 1200 + s);
        size_t nk = (size_t)x[0] * G * x[3];
        uint16_t *hk = to_halfs(p.k, nk * (size_t)x[4]), *hv = to_halfs(p.v, nk * (size_t)x[5]);
        int lengths[2] = {x[3], x[3] * 2 / 3};
        if (x[0] > 1)
            p.lengths = lengths;
        float *a = malloc(out_size(&p) * sizeof(float)), *b = malloc(out_size(&p) * sizeof(float));
        cr_assert(a && b);
        for (int i = 0; i < ni; i++) {
            cr_assert_eq(linattn_set_isa(isas[i]), LINATTN_OK);
            for (int t = 1; t <= 2; t++) {
                p.threads = t;
                linattn_attention_desc d = desc_of(&p);
                d.kv_heads = x[7];
                cr_assert_eq(linattn_attention_softmax(&d, p.q, p.k, p.v, a), LINATTN_OK, "%s",
                             linattn_last_error());
                cr_assert_eq(linattn_attention_softmax_f16kv(&d, p.q, hk, hv, b), LINATTN_OK,
                             "%s", linattn_last_error());
                cr_expect(!memcmp(a, b, out_size(&p) * sizeof(float)),
                          "shape %zu isa %s threads %d: F16 k/v differ from fp32 k/v holding "
                          "the same values (max diff %g)", s, linattn_isa_name(isas[i]), t,
                          max_diff(a, b, out_size(&p)));
            }
        }
        free(a);
        free(b);
        free(hk);
        free(hv);
        p.lengths = NULL;
        drop(&p);
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
}

/* What storing k and v in half costs against the exact result (double
 * reference on the unrounded k, v), bounded per row: a key's score moves
 * by at most delta = scale sum_i |q_i| |k_i| 2^-11 (half's relative
 * rounding, plus 2^-25 absolute below half's normal range), so each
 * probability by a factor within e^(+-2 delta) and the output by at most
 * (e^(2 delta) - 1) max|v|; the values' own rounding adds 2^-11 max|v|
 * (and 2^-25); fp32 arithmetic 1e-5 relative to max|v|. Query/key scales
 * of 1 and 3 (sharper attention, larger deltas). */
Test(softmax_f16kv, error_against_exact_is_bounded)
{
    for (int sharp = 0; sharp < 2; sharp++) {
        const int Lq = 40, Lk = 1500, dk = 64, dv = 64;
        problem p = make(1, 2, Lq, Lk, dk, dv, 1, 1300 + sharp);
        if (sharp)
            for (size_t i = 0; i < (size_t)2 * Lq * dk; i++)
                p.q[i] *= 3.0f;
        double *ref = reference(SOFTMAX, &p);
        size_t nk = (size_t)2 * Lk;
        float *k0 = malloc(nk * dk * sizeof(float)), *v0 = malloc(nk * dv * sizeof(float));
        cr_assert(k0 && v0);
        memcpy(k0, p.k, nk * dk * sizeof(float));
        memcpy(v0, p.v, nk * dv * sizeof(float));
        uint16_t *hk = to_halfs(p.k, nk * dk), *hv = to_halfs(p.v, nk * dv);
        float *out = malloc(out_size(&p) * sizeof(float));
        linattn_attention_desc d = desc_of(&p);
        cr_assert_eq(linattn_attention_softmax_f16kv(&d, p.q, hk, hv, out), LINATTN_OK);
        const double scale = 1.0 / sqrt((double)dk), u = 0x1p-11, tiny = 0x1p-25;
        double worst = 0, worst_err = 0;
        for (int h = 0; h < 2; h++) {
            double vmax = 0;
            for (size_t i = 0; i < (size_t)Lk * dv; i++)
                vmax = fmax(vmax, fabs(v0[(size_t)h * Lk * dv + i]));
            for (int r = 0; r < Lq; r++) {
                const float *q = p.q + ((size_t)h * Lq + r) * dk;
                double delta = 0;
                for (int j = 0; j <= r + Lk - Lq; j++) {
                    const float *k = k0 + ((size_t)h * Lk + j) * dk;
                    double s = 0;
                    for (int i = 0; i < dk; i++)
                        s += fabs(q[i]) * (fabs(k[i]) * u + tiny);
                    delta = fmax(delta, scale * s);
                }
                double bound = (expm1(2 * delta) + u + 1e-5) * vmax + tiny;
                for (int c = 0; c < dv; c++) {
                    size_t at = ((size_t)h * Lq + r) * dv + c;
                    double e = fabs(out[at] - ref[at]);
                    cr_expect(e <= bound, "sharp %d head %d row %d col %d: error %g, bound %g",
                              sharp, h, r, c, e, bound);
                    worst = fmax(worst, e / bound);
                    worst_err = fmax(worst_err, e);
                }
            }
        }
        cr_log_info("F16 k/v, q x%d: max error %.3g (%.2f of the bound)", sharp ? 3 : 1, worst_err,
                    worst);
        free(out);
        free(ref);
        free(k0);
        free(v0);
        free(hk);
        free(hv);
        drop(&p);
    }
}

/* ------------------------------------------------------------------------ */
/* Non-finite values reach the rows that see them                            */
/* ------------------------------------------------------------------------ */

/* 0: every value finite, 1: every value NaN, 2: only column c NaN (the rest
 * finite), 3: anything else */
static int row_kind(const float *row, int dv, int c)
{
    int nan = 0, fin = 0;
    for (int i = 0; i < dv; i++) {
        nan += isnan(row[i]) != 0;
        fin += isfinite(row[i]) != 0;
    }
    if (fin == dv)
        return 0;
    if (nan == dv)
        return 1;
    if (nan == 1 && fin == dv - 1 && isnan(row[c]))
        return 2;
    return 3;
}

static float *run_window(enum variant var, const problem *p, int window)
{
    linattn_attention_desc d = desc_of(p);
    d.window = window;
    float *out = malloc(out_size(p) * sizeof(float));
    cr_assert(out);
    linattn_status st = var == SOFTMAX ? linattn_attention_softmax(&d, p->q, p->k, p->v, out)
                                       : linattn_attention_linear(&d, p->q, p->k, p->v, out);
    cr_assert_eq(st, LINATTN_OK, "%s", linattn_last_error());
    return out;
}

/* One NaN in q at row t, in k at key t, or in v at key t (column c), on
 * every ISA, both linear algorithms and the softmax tiles (causal, L over
 * three query blocks and several key tiles, 1 and 2 threads, and a window
 * of 50): the row with the NaN query, and every row that sees the key, is
 * NaN (a NaN value: its column); every other row is what it was. Softmax
 * and linear agree. */
static void check_nan_reaches(enum variant var, int window)
{
    const int L = 300, H = 2, dk = 9, dv = 6;
    const int ts[] = {0, 5, 127, 128, 200, 299};
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (int ii = 0; ii < ni; ii++) {
        if (linattn_set_isa(isas[ii]) != LINATTN_OK)
            continue;
        for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++)
            for (int threads = 1; threads <= 2; threads++) {
                if (var == SOFTMAX && mode == LINATTN_LINEAR_CHUNKED)
                    continue;
                set_mode((linattn_linear_mode)mode);
                problem p = make(1, H, L, L, dk, dv, 1, 19);
                p.threads = threads;
                float *base = run_window(var, &p, window);
                for (size_t n = 0; n < sizeof ts / sizeof ts[0]; n++)
                    for (int which = 0; which < 3; which++) {
                        const int t = ts[n], c = t % dv;
                        problem x = make(1, H, L, L, dk, dv, 1, 19);
                        x.threads = threads;
                        float *tensor = which == 0 ? x.q : which == 1 ? x.k : x.v;
                        int width = which == 2 ? dv : dk;
                        for (int h = 0; h < H; h++)
                            tensor[((size_t)h * L + t) * width + (size_t)(t % width)] = NAN;
                        float *out = run_window(var, &x, window);
                        for (int h = 0; h < H; h++)
                            for (int i = 0; i < L; i++) {
                                size_t at = ((size_t)h * L + i) * dv;
                                int sees = which == 0 ? i == t
                                                      : i >= t && (window == 0 || i < t + window);
                                int want = !sees ? 0 : which == 2 ? 2 : 1;
                                int got = row_kind(out + at, dv, c);
                                cr_expect(got == want,
                                          "%s isa %s mode %d threads %d window %d: NaN in %s at "
                                          "%d, row %d: kind %d, expected %d",
                                          var == SOFTMAX ? "softmax" : "linear",
                                          linattn_isa_name(isas[ii]), mode, threads, window,
                                          which == 0 ? "q" : which == 1 ? "k" : "v", t, i, got,
                                          want);
                                if (!sees)
                                    cr_expect(!memcmp(out + at, base + at, dv * sizeof(float)),
                                              "%s isa %s: NaN in %s at %d changed row %d",
                                              var == SOFTMAX ? "softmax" : "linear",
                                              linattn_isa_name(isas[ii]),
                                              which == 0 ? "q" : which == 1 ? "k" : "v", t, i);
                                if (got != want)
                                    goto next; /* one message a case */
                            }
                    next:
                        free(out);
                        drop(&x);
                    }
                free(base);
                drop(&p);
            }
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
    set_mode(LINATTN_LINEAR_AUTO);
}

Test(softmax, nan_reaches_the_rows_that_see_it)
{
    check_nan_reaches(SOFTMAX, 0);
}

Test(softmax, nan_reaches_the_rows_of_its_window)
{
    check_nan_reaches(SOFTMAX, 50);
}

Test(linear, nan_reaches_the_rows_that_see_it)
{
    check_nan_reaches(LINEAR, 0);
}

/* Scores that overflow (a scale of 3e38, or q.k past -FLT_MAX: every score
 * -inf) are not finite: every row is NaN, never the zeros of a row that saw
 * no key. On every ISA, the tiled prefill and one query against split keys
 * (decode, 2 threads), fp32 and half k, v. */
Test(softmax, overflowing_scores_give_nan)
{
    const int dk = 9, dv = 6;
    const int shapes[2][2] = {{300, 300}, {1, 2100}};
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (int ii = 0; ii < ni; ii++) {
        if (linattn_set_isa(isas[ii]) != LINATTN_OK)
            continue;
        for (int sh = 0; sh < 2; sh++)
            for (int how = 0; how < 2; how++)
                for (int kv16 = 0; kv16 < 2; kv16++) {
                    const int Lq = shapes[sh][0], Lk = shapes[sh][1];
                    problem p = make(1, 2, Lq, Lk, dk, dv, 1, 23);
                    p.threads = 2;
                    size_t nq = (size_t)2 * Lq * dk, nk = (size_t)2 * Lk * dk;
                    if (how == 0) { /* q scale = inf */
                        p.scale = 3e38f;
                        for (size_t i = 0; i < nq; i++)
                            p.q[i] = 2.0f;
                    } else { /* each q_c k_c below -1e40 */
                        for (size_t i = 0; i < nq; i++)
                            p.q[i] = 1e36f;
                        for (size_t i = 0; i < nk; i++)
                            p.k[i] = -3e20f;
                    }
                    float *out = malloc(out_size(&p) * sizeof(float));
                    cr_assert(out);
                    linattn_attention_desc d = desc_of(&p);
                    if (kv16) {
                        uint16_t *k16 = to_halfs(p.k, nk);
                        uint16_t *v16 = to_halfs(p.v, (size_t)2 * Lk * dv);
                        if (how == 1)
                            for (size_t i = 0; i < nk; i++)
                                k16[i] = linattn_f32_to_f16(-60000.0f);
                        cr_assert_eq(linattn_attention_softmax_f16kv(&d, p.q, k16, v16, out),
                                     LINATTN_OK);
                        free(k16);
                        free(v16);
                    } else {
                        cr_assert_eq(linattn_attention_softmax(&d, p.q, p.k, p.v, out),
                                     LINATTN_OK);
                    }
                    for (size_t i = 0; i < out_size(&p); i++)
                        if (!isnan(out[i])) {
                            cr_expect(0, "isa %s Lq %d Lk %d case %d kv16 %d: out[%zu] = %g",
                                      linattn_isa_name(isas[ii]), Lq, Lk, how, kv16, i,
                                      (double)out[i]);
                            break;
                        }
                    free(out);
                    drop(&p);
                }
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
}

/* The decode paths: one query against split keys (2100 of them, 2 threads;
 * a window of 500 too) with a NaN key or value at t, and a linear state
 * prefilled (both algorithms) then stepped with a NaN in q, k or v at t
 * (inside the prefill, and in a step): the rows that see it are NaN (a NaN
 * value: its column), the rows before are the clean run's. */
Test(attention, nan_reaches_decoded_rows)
{
    const int dk = 9, dv = 6;
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (int ii = 0; ii < ni; ii++) {
        if (linattn_set_isa(isas[ii]) != LINATTN_OK)
            continue;
        const int Lk = 2100, ks[] = {0, 1000, 1700, 2099};
        for (size_t n = 0; n < 4; n++)
            for (int which = 1; which < 3; which++)
                for (int window = 0; window <= 500; window += 500) {
                    problem p = make(1, 2, 1, Lk, dk, dv, 1, 29);
                    p.threads = 2;
                    const int t = ks[n], width = which == 1 ? dk : dv;
                    (which == 1 ? p.k : p.v)[(size_t)t * width + 1] = NAN;
                    (which == 1 ? p.k : p.v)[((size_t)Lk + t) * width + 1] = NAN;
                    float *out = run_window(SOFTMAX, &p, window);
                    int sees = window == 0 || t > Lk - 1 - window;
                    int want = !sees ? 0 : which == 2 ? 2 : 1;
                    for (int h = 0; h < 2; h++)
                        cr_expect(row_kind(out + (size_t)h * dv, dv, 1) == want,
                                  "isa %s: NaN %s at key %d window %d: kind %d, expected %d",
                                  linattn_isa_name(isas[ii]), which == 1 ? "k" : "v", t, window,
                                  row_kind(out + (size_t)h * dv, dv, 1), want);
                    free(out);
                    drop(&p);
                }

        const int H = 2, L = 60, P = 40;
        for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++)
            for (int which = 0; which < 3; which++)
                for (int t = 10; t < L; t += 35) { /* 10: in the prefill, 45: a step */
                    set_mode((linattn_linear_mode)mode);
                    problem p = make(1, H, L, L, dk, dv, 1, 31);
                    float *clean = run_new(LINEAR, &p);
                    float *tensor = which == 0 ? p.q : which == 1 ? p.k : p.v;
                    const int width = which == 2 ? dv : dk;
                    for (int h = 0; h < H; h++)
                        tensor[((size_t)h * L + t) * width + 2] = NAN;
                    float *out = malloc((size_t)H * L * dv * sizeof(float));
                    linattn_linear_state *s;
                    cr_assert_eq(make_state(H, dk, dv, 1e-6f, NULL, &s), LINATTN_OK);
                    linattn_layout lay[4] = {{0, (size_t)L * dk, dk}, {0, (size_t)L * dk, dk},
                                             {0, (size_t)L * dv, dv}, {0, (size_t)L * dv, dv}};
                    cr_assert_eq(
                        linattn_linear_prefill_strided(s, p.q, p.k, p.v, P, out, lay, 1),
                        LINATTN_OK);
                    float qt[2 * 9], kt[2 * 9], vt[2 * 6], ot[2 * 6];
                    for (int i = P; i < L; i++) {
                        for (int h = 0; h < H; h++) {
                            memcpy(qt + h * dk, p.q + ((size_t)h * L + i) * dk, dk * sizeof(float));
                            memcpy(kt + h * dk, p.k + ((size_t)h * L + i) * dk, dk * sizeof(float));
                            memcpy(vt + h * dv, p.v + ((size_t)h * L + i) * dv, dv * sizeof(float));
                        }
                        cr_assert_eq(linattn_linear_step(s, qt, kt, vt, ot), LINATTN_OK);
                        for (int h = 0; h < H; h++)
                            memcpy(out + ((size_t)h * L + i) * dv, ot + h * dv, dv * sizeof(float));
                    }
                    for (int h = 0; h < H; h++)
                        for (int i = 0; i < L; i++) {
                            size_t at = ((size_t)h * L + i) * dv;
                            int sees = which == 0 ? i == t : i >= t;
                            int want = !sees ? 0 : which == 2 ? 2 : 1;
                            int got = row_kind(out + at, dv, 2);
                            cr_expect(got == want,
                                      "isa %s mode %d: NaN in %s at %d, decoded row %d: kind %d, "
                                      "expected %d",
                                      linattn_isa_name(isas[ii]), mode,
                                      which == 0 ? "q" : which == 1 ? "k" : "v", t, i, got, want);
                            if (i < t)
                                cr_expect(rel_err(out + at, clean + at, (size_t)dv) <= 1e-6);
                            if (got != want)
                                break;
                        }
                    linattn_linear_state_free(s);
                    free(out);
                    free(clean);
                    drop(&p);
                }
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
    set_mode(LINATTN_LINEAR_AUTO);
}

/* ------------------------------------------------------------------------ */
/* Large finite inputs: |out| <= max |v|                                     */
/* ------------------------------------------------------------------------ */

static double max_abs(const float *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* The problem's inputs made large: 0 |v| ~ 1e37, 1 max |v| = 3e38, 2 a few
 * keys ~ 1e30 (and every key at 1e4), 3 a few queries ~ 1e30, 4 all at
 * once with |v| from 1e-3 to 3e38 along the sequence. */
static void make_large(problem *p, int how)
{
    const size_t nq = (size_t)p->B * p->H * p->Lq * p->dk, nk = (size_t)p->B * p->H * p->Lk * p->dk;
    const size_t nv = (size_t)p->B * p->H * p->Lk * p->dv;
    if (how == 0 || how == 1) {
        double m = max_abs(p->v, nv);
        for (size_t i = 0; i < nv; i++)
            p->v[i] = how == 0 ? p->v[i] * 1e37f : (float)(p->v[i] / m * 3e38);
    }
    if (how == 2 || how == 4)
        for (size_t i = 0; i < nk; i++)
            p->k[i] = i % 37 == 5 ? p->k[i] * 1e30f : p->k[i] * 1e4f;
    if (how == 3 || how == 4)
        for (size_t i = 0; i < nq; i++)
            p->q[i] = i % 29 == 3 ? fabsf(p->q[i]) * 1e30f : p->q[i];
    if (how == 4)
        for (size_t i = 0; i < nv; i++)
            p->v[i] = (float)(p->v[i] * pow(10.0, -3 + 41.0 * (double)(i % ((size_t)p->Lk * p->dv)) /
                                                 ((double)p->Lk * p->dv)));
}

/* out against the double reference (var's, with a softmax window), relative
 * to max |v|, and every output finite with |out| <= max |v| (up to
 * rounding). */
static void expect_bounded_as(enum variant var, const problem *p, int window, const float *out,
                              const char *what)
{
    double *ref = reference_window(var, p, window);
    double vmax = max_abs(p->v, (size_t)p->B * p->H * p->Lk * p->dv);
    double e = max_err_ref(p, out, ref) / vmax;
    cr_expect(e <= 1e-5, "%s: max error %g of max |v| %g", what, e, vmax);
    for (size_t i = 0; i < out_size(p); i++)
        if (!(fabs(out[i]) <= vmax * (1 + 1e-5))) {
            cr_expect(0, "%s: out[%zu] = %g, max |v| %g", what, i, (double)out[i], vmax);
            break;
        }
    free(ref);
}

static void expect_bounded(const problem *p, const float *out, const char *what)
{
    expect_bounded_as(LINEAR, p, 0, out, what);
}

/* The operator: recurrent and chunked, causal and not, with and without
 * decay, 1 and 2 threads, one head split over 2 threads (600 rows), on
 * every ISA. */
Test(linear, large_inputs_keep_out_within_max_v)
{
    const float decay[2] = {0.9f, 0.96875f};
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (int ii = 0; ii < ni; ii++) {
        if (linattn_set_isa(isas[ii]) != LINATTN_OK)
            continue;
        for (int how = 0; how < 5; how++)
            for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++)
                for (int v = 0; v < 5; v++) {
                    set_mode((linattn_linear_mode)mode);
                    const int split = v == 4, causal = v != 1, dc = v == 2;
                    problem p = split ? make(1, 1, 600, 600, 16, 8, 1, 41)
                                      : make(1, 2, 130, 130, 16, 8, causal, 41 + (uint64_t)how);
                    p.threads = v >= 3 ? 2 : 1;
                    p.decay = dc ? decay : NULL;
                    make_large(&p, how);
                    float *out = run_new(LINEAR, &p);
                    char what[128];
                    snprintf(what, sizeof what, "isa %s case %d mode %d causal %d decay %d threads %d%s",
                             linattn_isa_name(isas[ii]), how, mode, causal, dc, p.threads,
                             split ? " (one head split)" : "");
                    expect_bounded(&p, out, what);
                    free(out);
                    drop(&p);
                }
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
    set_mode(LINATTN_LINEAR_AUTO);
}

/* The stream: a state prefilled (each algorithm) then stepped, with and
 * without decay, and one stepped 2000 tokens of |v| ~ 1e37 (the sums of an
 * unscaled state pass FLT_MAX after some 30): every output against the
 * double reference, on every ISA; a saved and loaded state continues with
 * the same range (linattn_linear_state_exps). */
static float *stream_outputs(const problem *p, int P, linattn_linear_state **keep)
{
    const int H = p->H, L = p->Lq, dk = p->dk, dv = p->dv;
    float *out = malloc((size_t)H * L * dv * sizeof(float));
    cr_assert(out && H <= 2 && dk <= 16 && dv <= 8);
    linattn_linear_state *s;
    cr_assert_eq(make_state(H, dk, dv, p->eps, p->decay, &s), LINATTN_OK);
    linattn_layout lay[4] = {{0, (size_t)L * dk, dk}, {0, (size_t)L * dk, dk},
                             {0, (size_t)L * dv, dv}, {0, (size_t)L * dv, dv}};
    cr_assert_eq(linattn_linear_prefill_strided(s, p->q, p->k, p->v, P, out, lay, p->threads),
                 LINATTN_OK);
    float qt[2 * 16], kt[2 * 16], vt[2 * 8], ot[2 * 8];
    for (int i = P; i < L; i++) {
        for (int h = 0; h < H; h++) {
            memcpy(qt + h * dk, p->q + ((size_t)h * L + i) * dk, dk * sizeof(float));
            memcpy(kt + h * dk, p->k + ((size_t)h * L + i) * dk, dk * sizeof(float));
            memcpy(vt + h * dv, p->v + ((size_t)h * L + i) * dv, dv * sizeof(float));
        }
        cr_assert_eq(linattn_linear_step(s, qt, kt, vt, ot), LINATTN_OK);
        for (int h = 0; h < H; h++)
            memcpy(out + ((size_t)h * L + i) * dv, ot + h * dv, dv * sizeof(float));
    }
    if (keep)
        *keep = s;
    else
        linattn_linear_state_free(s);
    return out;
}

Test(linear, large_inputs_in_a_stream)
{
    const float decay[2] = {0.9f, 0.96875f};
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (int ii = 0; ii < ni; ii++) {
        if (linattn_set_isa(isas[ii]) != LINATTN_OK)
            continue;
        for (int how = 0; how < 5; how++)
            for (int mode = LINATTN_LINEAR_RECURRENT; mode <= LINATTN_LINEAR_CHUNKED; mode++)
                for (int dc = 0; dc < 2; dc++)
                    for (int P = 0; P <= 100; P += 50) {
                        set_mode((linattn_linear_mode)mode);
                        problem p = make(1, 2, 130, 130, 16, 8, 1, 43 + (uint64_t)how);
                        p.decay = dc ? decay : NULL;
                        make_large(&p, how);
                        float *out = stream_outputs(&p, P, NULL);
                        char what[128];
                        snprintf(what, sizeof what, "isa %s case %d mode %d decay %d prefill %d",
                                 linattn_isa_name(isas[ii]), how, mode, dc, P);
                        expect_bounded(&p, out, what);
                        free(out);
                        drop(&p);
                    }
        problem p = make(1, 1, 2000, 2000, 8, 8, 1, 47);
        make_large(&p, 0);
        linattn_linear_state *s;
        float *out = stream_outputs(&p, 3, &s);
        expect_bounded(&p, out, "2000 steps of |v| ~ 1e37");
        cr_expect(linattn_linear_state_exps(s, 0)[1] > 0, "the values' range was raised");
        linattn_linear_state_free(s);
        free(out);
        drop(&p);
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
    set_mode(LINATTN_LINEAR_AUTO);
}

/* Softmax values near FLT_MAX: the unnormalised sum e^(s - m) v of n
 * visible keys passes FLT_MAX long before the division by the sum of
 * weights. Values: 0 |v| ~ 1e37 of one sign, 1 ~ 3e38 of one sign, 2
 * +-3e38 alternating by key (the partial sums meet inf - inf: NaN), 3 the
 * problem's normal values scaled to max |v| = 3e38 (mixed signs, per
 * column); scores equal (q = 0: every weight 1/n, the worst case) or the
 * problem's own (q, k normal). Paths: the tiled prefill, causal (300 rows:
 * three query blocks, three key tiles) and not, a window of 100, one head
 * over 2 threads (query blocks split), and decode, one query against 2100
 * keys on 2 threads (three key segments, merged), with a window of 500
 * too; 1 and 2 threads, every ISA. Every output finite, |out| <=
 * max |v| (1 + 1e-5), and within 1e-5 max |v| of the double reference: the
 * fp32 rounding of n <= 2100 weights and sums, a few ulps of max |v| at
 * the sizes run (the finite paths' own tolerance, expect_bounded). */
static void make_huge_values(problem *p, int how, int equal)
{
    const size_t nq = (size_t)p->B * p->H * p->Lq * p->dk;
    const size_t nv = (size_t)p->B * p->H * p->Lk * p->dv;
    if (equal)
        memset(p->q, 0, nq * sizeof(float));
    double m = max_abs(p->v, nv);
    for (size_t i = 0; i < nv; i++) {
        const double u = 0.5 + 0.5 * fabs(p->v[i]) / m; /* (0.5, 1]: no two alike */
        const size_t key = i / (size_t)p->dv;
        p->v[i] = how == 0   ? (float)(1e37 * u)
                  : how == 1 ? (float)(3e38 * u)
                  : how == 2 ? (float)(key % 2 ? -3e38 * u : 3e38 * u)
                             : (float)(p->v[i] / m * 3e38);
    }
}

Test(softmax, huge_values_keep_out_within_max_v)
{
    /* Lq, Lk, heads, causal, window, threads */
    static const int shapes[][6] = {
        {300, 300, 2, 1, 0, 1},  {300, 300, 2, 1, 0, 2}, {130, 130, 2, 0, 0, 1},
        {300, 300, 2, 1, 100, 1}, {300, 300, 2, 1, 100, 2}, {300, 300, 1, 1, 0, 2},
        {1, 2100, 2, 1, 0, 2},    {1, 2100, 2, 1, 0, 1},  {1, 2100, 2, 1, 500, 2},
    };
    linattn_isa isas[LINATTN_ISA_COUNT];
    int ni = tu_cpu_isas(isas);
    for (int ii = 0; ii < ni; ii++) {
        if (linattn_set_isa(isas[ii]) != LINATTN_OK)
            continue;
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
            for (int how = 0; how < 4; how++)
                for (int equal = 0; equal < 2; equal++) {
                    const int *x = shapes[sh];
                    problem p = make(1, x[2], x[0], x[1], 16, 8, x[3], 53 + (uint64_t)how);
                    p.threads = x[5];
                    make_huge_values(&p, how, equal);
                    float *out = run_window(SOFTMAX, &p, x[4]);
                    char what[160];
                    snprintf(what, sizeof what,
                             "isa %s Lq %d Lk %d heads %d causal %d window %d threads %d "
                             "values %d equal scores %d",
                             linattn_isa_name(isas[ii]), x[0], x[1], x[2], x[3], x[4], x[5], how,
                             equal);
                    expect_bounded_as(SOFTMAX, &p, x[4], out, what);
                    free(out);
                    drop(&p);
                }
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
}
