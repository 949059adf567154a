/* sample.c: repetition penalty, logit bias, temperature, top-k, top-p and min-p sampling with a seeded generator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "internal.h"
#include "sample.h"

typedef struct candidate {
    float p;
    int token;
} candidate;

struct linattn_sampler {
    int vocab;
    float temperature, top_p, min_p, penalty;
    int top_k;
    uint64_t seed, state;
    candidate *scratch; /* [vocab] */
    float *weights;     /* [vocab]: exp((adjusted - max) / temperature) */
    double *adjusted;   /* [vocab]: the logits after the penalty and the bias */
    float *bias;        /* [vocab], NULL while no bias is set */
    /* the last last_n accepted tokens: a ring written at next; while it is
     * not full, its n_recent tokens sit at 0..n_recent-1 */
    int *recent;        /* [last_n], NULL when last_n is 0 */
    int last_n, n_recent, next;
};

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

linattn_status linattn_sampler_new(int vocab, float temperature, int top_k, float top_p,
                                   uint64_t seed, linattn_sampler **out)
{
    if (!out)
        return linattn_err(LINATTN_ERR_INVALID, "sampler: out is NULL");
    *out = NULL;
    if (vocab < 1)
        return linattn_err(LINATTN_ERR_INVALID, "sampler: vocab %d must be positive", vocab);
    if (!(temperature >= 0.0f) || !isfinite(temperature))
        return linattn_err(LINATTN_ERR_INVALID, "sampler: temperature %g must be >= 0", (double)temperature);
    if (top_k < 0)
        return linattn_err(LINATTN_ERR_INVALID, "sampler: top_k %d must be >= 0", top_k);
    if (!(top_p > 0.0f && top_p <= 1.0f))
        return linattn_err(LINATTN_ERR_INVALID, "sampler: top_p %g must be in (0, 1]", (double)top_p);
    linattn_sampler *s = mem_calloc(1, sizeof *s);
    if (s) {
        s->scratch = mem_alloc((size_t)vocab * sizeof *s->scratch);
        s->adjusted = mem_alloc((size_t)vocab * sizeof *s->adjusted);
        s->weights = mem_alloc((size_t)vocab * sizeof *s->weights);
    }
    if (!s || !s->scratch || !s->adjusted || !s->weights) {
        if (s) {
            mem_free(s->scratch);
            mem_free(s->adjusted);
            mem_free(s->weights);
        }
        mem_free(s);
        return linattn_err(LINATTN_ERR_NOMEM, "sampler: out of memory");
    }
    s->vocab = vocab;
    s->temperature = temperature;
    s->top_k = top_k;
    s->top_p = top_p;
    s->penalty = 1.0f;
    s->seed = s->state = seed;
    *out = s;
    return LINATTN_OK;
}

void linattn_sampler_free(linattn_sampler *s)
{
    if (s) {
        mem_free(s->scratch);
        mem_free(s->adjusted);
        mem_free(s->weights);
        mem_free(s->bias);
        mem_free(s->recent);
    }
    mem_free(s);
}

uint64_t linattn_sampler_get_state(const linattn_sampler *s) { return s->state; }
void linattn_sampler_set_state(linattn_sampler *s, uint64_t state) { s->state = state; }

void linattn_sampler_reset(linattn_sampler *s)
{
    s->state = s->seed;
    s->n_recent = 0;
    s->next = 0;
}

linattn_status linattn_sampler_set_repetition_penalty(linattn_sampler *s, float penalty,
                                                      int last_n)
{
    if (!s)
        return linattn_err(LINATTN_ERR_INVALID, "sampler: NULL");
    if (!(penalty > 0.0f) || !isfinite(penalty))
        return linattn_err(LINATTN_ERR_INVALID,
                           "sampler: repeat_penalty %g must be a finite number > 0 (1: off)",
                           (double)penalty);
    if (last_n < 0 || last_n > LINATTN_MAX_REPEAT_LAST_N)
        return linattn_err(LINATTN_ERR_INVALID, "sampler: repeat_last_n %d must be in 0..%d",
                           last_n, LINATTN_MAX_REPEAT_LAST_N);
    if (last_n != s->last_n) {
        /* a new ring holding the newest tokens, oldest first from 0 */
        int *ring = NULL;
        if (last_n > 0 && !(ring = mem_alloc((size_t)last_n * sizeof *ring)))
            return linattn_err(LINATTN_ERR_NOMEM, "sampler: out of memory for a window of %d tokens",
                               last_n);
        int keep = s->n_recent < last_n ? s->n_recent : last_n;
        linattn_sampler_recent(s, ring, keep);
        for (int i = 0, j = keep - 1; i < j; i++, j--) {
            int t = ring[i];
            ring[i] = ring[j];
            ring[j] = t;
        }
        mem_free(s->recent);
        s->recent = ring;
        s->last_n = last_n;
        s->n_recent = keep;
        s->next = last_n > 0 ? keep % last_n : 0;
    }
    s->penalty = penalty;
    return LINATTN_OK;
}

linattn_status linattn_sampler_accept(linattn_sampler *s, int token)
{
    if (!s)
        return linattn_err(LINATTN_ERR_INVALID, "sampler: NULL");
    if (token < 0 || token >= s->vocab)
        return linattn_err(LINATTN_ERR_INVALID,
                           "sampler: accepted token %d is outside the vocabulary (0..%d)", token,
                           s->vocab - 1);
    if (s->last_n == 0)
        return LINATTN_OK;
    s->recent[s->next] = token;
    s->next = s->next + 1 == s->last_n ? 0 : s->next + 1;
    if (s->n_recent < s->last_n)
        s->n_recent++;
    return LINATTN_OK;
}

int linattn_sampler_recent(const linattn_sampler *s, int *tokens, int cap)
{
    int n = s->n_recent < cap ? s->n_recent : cap;
    for (int j = 0, at = s->next; j < n; j++) {
        at = at == 0 ? s->last_n - 1 : at - 1;
        tokens[j] = s->recent[at];
    }
    return n > 0 ? n : 0;
}

linattn_status linattn_sampler_set_min_p(linattn_sampler *s, float min_p)
{
    if (!s)
        return linattn_err(LINATTN_ERR_INVALID, "sampler: NULL");
    if (!(min_p >= 0.0f && min_p <= 1.0f))
        return linattn_err(LINATTN_ERR_INVALID, "sampler: min_p %g must be in [0, 1] (0: off)",
                           (double)min_p);
    s->min_p = min_p;
    return LINATTN_OK;
}

linattn_status linattn_sampler_set_logit_bias(linattn_sampler *s, int token, float bias)
{
    if (!s)
        return linattn_err(LINATTN_ERR_INVALID, "sampler: NULL");
    if (token < 0 || token >= s->vocab)
        return linattn_err(LINATTN_ERR_INVALID,
                           "sampler: logit bias token %d is outside the vocabulary (0..%d)", token,
                           s->vocab - 1);
    /* +inf would tie every token it touched at an infinite logit */
    if (!isfinite(bias) && bias != -INFINITY)
        return linattn_err(LINATTN_ERR_INVALID,
                           "sampler: logit bias %g for token %d must be finite or -inf", (double)bias,
                           token);
    if (!s->bias) {
        if (bias == 0.0f)
            return LINATTN_OK;
        if (!(s->bias = mem_calloc((size_t)s->vocab, sizeof *s->bias)))
            return linattn_err(LINATTN_ERR_NOMEM, "sampler: out of memory for the logit bias");
    }
    s->bias[token] = bias;
    return LINATTN_OK;
}

void linattn_sampler_clear_logit_bias(linattn_sampler *s)
{
    mem_free(s->bias);
    s->bias = NULL;
}

/* The order of the cuts: most probable first, equal ones by token. */
static int before(const candidate *x, const candidate *y)
{
    return x->p != y->p ? x->p > y->p : x->token < y->token;
}

static void swap(candidate *a, candidate *b)
{
    candidate t = *a;
    *a = *b;
    *b = t;
}

/* Partitions c[lo..hi) around a pivot drawn from *rng: returns its index
 * i, with c[lo..i) before it in the order and c(i..hi) after it. */
static int partition(candidate *c, int lo, int hi, uint64_t *rng)
{
    swap(&c[lo + (int)(next_u64(rng) % (uint64_t)(hi - lo))], &c[hi - 1]);
    const candidate pv = c[hi - 1];
    int i = lo;
    for (int j = lo; j < hi - 1; j++)
        if (before(&c[j], &pv))
            swap(&c[i++], &c[j]);
    swap(&c[i], &c[hi - 1]);
    return i;
}

/* The weights of c[0..n) added in four chains (one chain waits on the
 * adder's latency at every element: 4x slower at vocab 32,000). */
static double sum_p(const candidate *c, int n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += c[i].p;
        s1 += c[i + 1].p;
        s2 += c[i + 2].p;
        s3 += c[i + 3].p;
    }
    for (; i < n; i++)
        s0 += c[i].p;
    return (s0 + s1) + (s2 + s3);
}

/* Moves the k first of c[0..n) in the order to c[0..k), in no particular
 * order (quickselect: expected O(n)). */
static void select_count(candidate *c, int n, int k, uint64_t *rng)
{
    int lo = 0, hi = n;
    while (hi - lo > 1) {
        int i = partition(c, lo, hi, rng);
        if (k <= i)
            hi = i;
        else if (k > i + 1)
            lo = i + 1;
        else
            return;
    }
}

/* Moves the fewest first of c[0..n) in the order whose weights reach
 * target to c[0..m) (no particular order) and returns m, their weight in
 * *sum; all n when they do not reach it. Quickselect on mass: a partition,
 * then the side that holds the boundary (expected O(n)). */
static int select_mass(candidate *c, int n, double target, uint64_t *rng, double *sum)
{
    int lo = 0, hi = n;
    double acc = 0.0; /* weight of c[0..lo), all taken */
    while (lo < hi) {
        int i = partition(c, lo, hi, rng);
        double up = sum_p(c + lo, i - lo);
        if (acc + up >= target) {
            hi = i; /* the boundary is before the pivot */
            continue;
        }
        acc += up + c[i].p;
        if (acc >= target) {
            *sum = acc;
            return i + 1;
        }
        lo = i + 1;
    }
    *sum = acc;
    return lo;
}

/* Steps 1-6 of the order in linattn.h: leaves the kept tokens in
 * scratch[0..*keep) with weights p (the most probable has 1) summing to
 * *mass in that order (so a draw that adds them up in that order ends
 * exactly at *mass). Greedy: the argmax alone.
 *
 * Nothing sorts: the sets the cuts define do not depend on an order, only
 * their boundaries do, and those are found by selection (top-k: the k
 * first; top-p: the fewest first reaching the mass; min-p: a threshold).
 * The draw walks the kept set in the order selection left it, which is
 * deterministic; every order gives the same distribution. The pivots come
 * from a generator of their own, so draws do not move the sampler's. */
static linattn_status filter(linattn_sampler *s, const float *logits, int *keep, double *mass)
{
    int V = s->vocab;
    double *a = s->adjusted;
    /* an exponent of all ones is an infinity or a NaN; tested bit-wise and
     * without an exit in the loop, so that it vectorises */
    unsigned bad = 0;
    for (int i = 0; i < V; i++) {
        uint32_t bits;
        memcpy(&bits, &logits[i], sizeof bits);
        bad |= (~bits & 0x7f800000u) == 0;
        a[i] = logits[i];
    }
    for (int i = 0; bad && i < V; i++)
        if (!isfinite(logits[i]))
            return linattn_err(LINATTN_ERR_INVALID, "sample: logit %d is not finite", i);
    /* Computed from the logit, not from a[t]: a token the window holds many
     * times is penalised once, as in CTRL and llama.cpp. Doubles: a huge
     * logit times the penalty cannot overflow to an infinity. */
    if (s->penalty != 1.0f)
        for (int j = 0; j < s->n_recent; j++) {
            int t = s->recent[j];
            a[t] = logits[t] > 0.0f ? (double)logits[t] / s->penalty
                                    : (double)logits[t] * s->penalty;
        }
    if (s->bias)
        for (int i = 0; i < V; i++)
            a[i] += s->bias[i];
    /* the largest in four chains, then its first index (lowest on ties);
     * banned tokens (-inf) never win, and all banned leaves -inf */
    double m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
    int i4 = 0;
    for (; i4 + 4 <= V; i4 += 4) {
        m0 = a[i4] > m0 ? a[i4] : m0;
        m1 = a[i4 + 1] > m1 ? a[i4 + 1] : m1;
        m2 = a[i4 + 2] > m2 ? a[i4 + 2] : m2;
        m3 = a[i4 + 3] > m3 ? a[i4 + 3] : m3;
    }
    for (; i4 < V; i4++)
        m0 = a[i4] > m0 ? a[i4] : m0;
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    const double m = m2 > m0 ? m2 : m0;
    if (m == -INFINITY)
        return linattn_err(LINATTN_ERR_INVALID,
                           "sample: every token is banned (logit bias -inf): nothing to draw");
    int best = 0;
    while (a[best] != m)
        best++;
    if (s->temperature == 0.0f) {
        s->scratch[0].p = 1.0f;
        s->scratch[0].token = best;
        *keep = 1;
        *mass = 1.0;
        return LINATTN_OK;
    }
    /* weights exp((a - max) / T) with the SIMD exp; banned tokens get 0
     * and are no candidates at all */
    const linattn_kernels *kern;
    linattn_status st = linattn_kernels_current(&kern);
    if (st != LINATTN_OK)
        return st;
    const double inv_t = 1.0 / s->temperature;
    float *w = s->weights;
    for (int i = 0; i < V; i++)
        w[i] = (float)((a[i] - m) * inv_t);
    /* banned tokens weigh exp(-inf) = 0: in no sum, and below any cut */
    double total = kern->exp_sub_sum(w, w, 0.0f, (size_t)V);
    w[best] = 1.0f; /* exactly, as exp(0) */
    candidate *c = s->scratch;
    int n = 0;
    /* With a cut on, first only the tokens of weight >= 2^-12 (of the most
     * probable's 1): a language model leaves few of them, and they are the
     * first in the order, so when they hold top-k's k tokens, top-p's mass
     * or everything min-p keeps, the cuts need nothing else. Otherwise (a
     * flat distribution) every token is a candidate. */
    const float tau = 0x1p-12f;
    int top_k = s->top_k > 0 && s->top_k < V ? s->top_k : 0;
    if (top_k || s->top_p < 1.0f || s->min_p > 0.0f) {
        for (int i = 0; i < V; i++) { /* without a branch: the test is random */
            c[n] = (candidate){w[i], i};
            n += w[i] >= tau;
        }
        int enough = top_k ? n >= top_k
                     : s->top_p < 1.0f ? sum_p(c, n) >= s->top_p * total
                                       : s->min_p >= tau;
        if (!enough)
            n = 0;
    }
    if (n == 0) {
        if (s->bias) {
            for (int i = 0; i < V; i++)
                if (a[i] != -INFINITY) /* banned: no candidate at all */
                    c[n++] = (candidate){w[i], i};
        } else { /* only a bias bans */
            for (int i = 0; i < V; i++)
                c[i] = (candidate){w[i], i};
            n = V;
        }
        total = sum_p(c, n);
    }
    double kept = total; /* top-p's reference without top-k: every token's mass */
    uint64_t rng = 0x5eed5eed5eed5eedull;
    int k = n;
    if (top_k) {
        k = top_k < n ? top_k : n;
        if (k < n)
            select_count(c, n, k, &rng);
        kept = sum_p(c, k);
    }
    /* top-p against the mass of top-k's set */
    if (s->top_p < 1.0f)
        k = select_mass(c, k, s->top_p * kept, &rng, &kept);
    /* min-p: the most probable weighs 1 and every cut keeps it, so the
     * threshold is min_p itself, compared exactly: p == min_p is kept */
    if (s->min_p > 0.0f) {
        int j = 0;
        kept = 0.0;
        for (int i = 0; i < k; i++)
            if (c[i].p >= s->min_p) {
                c[j++] = c[i];
                kept += c[i].p;
            }
        k = j;
    }
    *keep = k;
    *mass = kept;
    return LINATTN_OK;
}

linattn_status linattn_sampler_probs(linattn_sampler *s, const float *logits, double *probs)
{
    int keep;
    double mass;
    linattn_status st = filter(s, logits, &keep, &mass);
    if (st != LINATTN_OK)
        return st;
    for (int i = 0; i < s->vocab; i++)
        probs[i] = 0.0;
    for (int i = 0; i < keep; i++)
        probs[s->scratch[i].token] = s->scratch[i].p / mass;
    return LINATTN_OK;
}

linattn_status linattn_sample(linattn_sampler *s, const float *logits, int *token)
{
    int keep;
    double kept;
    linattn_status st = filter(s, logits, &keep, &kept);
    if (st != LINATTN_OK)
        return st;
    if (s->temperature == 0.0f) {
        *token = s->scratch[0].token; /* greedy draws nothing: the generator stays put */
        return LINATTN_OK;
    }
    /* whole blocks of 64 skipped by their sums (four chains each), then
     * the block that holds u walked token by token */
    double u = (double)(next_u64(&s->state) >> 11) * 0x1.0p-53 * kept, cum = 0.0;
    const candidate *c = s->scratch;
    int i = 0;
    for (; i + 64 <= keep; i += 64) {
        double b = sum_p(c + i, 64);
        if (u < cum + b)
            break;
        cum += b;
    }
    for (; i < keep; i++) {
        cum += c[i].p;
        if (u < cum) {
            *token = c[i].token;
            return LINATTN_OK;
        }
    }
    *token = c[keep - 1].token;
    return LINATTN_OK;
}
