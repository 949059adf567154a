/* sample.c: repetition penalty, logit bias, temperature, top-k, top-p and min-p sampling with a seeded generator. */
#include <math.h>
#include <stdlib.h>

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
    }
    if (!s || !s->scratch || !s->adjusted) {
        if (s) {
            mem_free(s->scratch);
            mem_free(s->adjusted);
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

/* Most probable first; equal ones by token, so the order is deterministic. */
static int by_prob_desc(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? 1 : -1;
    return (x->token > y->token) - (x->token < y->token);
}

/* Steps 1-6 of the order in linattn.h: leaves the kept tokens in
 * scratch[0..*keep), most probable first, with weights p (the first is 1)
 * summing to *mass in that order (so a draw that adds them up in that order
 * ends exactly at *mass). Greedy: the argmax alone. */
static linattn_status filter(linattn_sampler *s, const float *logits, int *keep, double *mass)
{
    int V = s->vocab;
    double *a = s->adjusted;
    for (int i = 0; i < V; i++) {
        if (!isfinite(logits[i]))
            return linattn_err(LINATTN_ERR_INVALID, "sample: logit %d is not finite", i);
        a[i] = logits[i];
    }
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
    int best = -1;
    for (int i = 0; i < V; i++)
        if (a[i] != -INFINITY && (best < 0 || a[i] > a[best]))
            best = i;
    if (best < 0)
        return linattn_err(LINATTN_ERR_INVALID,
                           "sample: every token is banned (logit bias -inf): nothing to draw");
    if (s->temperature == 0.0f) {
        s->scratch[0].p = 1.0f;
        s->scratch[0].token = best;
        *keep = 1;
        *mass = 1.0;
        return LINATTN_OK;
    }
    double m = a[best];
    int n = 0;
    for (int i = 0; i < V; i++) {
        if (a[i] == -INFINITY)
            continue; /* banned: not a candidate at all */
        s->scratch[n].p = (float)exp((a[i] - m) / s->temperature);
        s->scratch[n].token = i;
        n++;
    }
    qsort(s->scratch, (size_t)n, sizeof *s->scratch, by_prob_desc);
    int k = s->top_k > 0 && s->top_k < n ? s->top_k : n;
    /* top-p: the smallest prefix whose mass reaches top_p (of what top-k kept) */
    double kept = 0.0;
    for (int i = 0; i < k; i++)
        kept += s->scratch[i].p;
    if (s->top_p < 1.0f) {
        double cum = 0.0;
        for (int i = 0; i < k; i++) {
            cum += s->scratch[i].p;
            if (cum >= s->top_p * kept) {
                k = i + 1;
                kept = cum;
                break;
            }
        }
    }
    /* min-p: scratch[0] (p = 1) is the most probable, so the threshold is
     * min_p itself, compared exactly: p == min_p is kept */
    if (s->min_p > 0.0f) {
        double cut = (double)s->min_p * s->scratch[0].p;
        int j = 1;
        while (j < k && s->scratch[j].p >= cut)
            j++;
        if (j < k) {
            k = j;
            kept = 0.0;
            for (int i = 0; i < k; i++)
                kept += s->scratch[i].p;
        }
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
    double u = (double)(next_u64(&s->state) >> 11) * 0x1.0p-53 * kept, cum = 0.0;
    for (int i = 0; i < keep; i++) {
        cum += s->scratch[i].p;
        if (u < cum) {
            *token = s->scratch[i].token;
            return LINATTN_OK;
        }
    }
    *token = s->scratch[keep - 1].token;
    return LINATTN_OK;
}
