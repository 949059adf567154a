/* sample.c: greedy, temperature, top-k and top-p sampling with a seeded generator. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

typedef struct candidate {
    float p;
    int token;
} candidate;

struct linattn_sampler {
    int vocab;
    float temperature, top_p;
    int top_k;
    uint64_t state;
    candidate *scratch; /* [vocab] */
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
    if (s)
        s->scratch = mem_alloc((size_t)vocab * sizeof *s->scratch);
    if (!s || !s->scratch) {
        mem_free(s);
        return linattn_err(LINATTN_ERR_NOMEM, "sampler: out of memory");
    }
    s->vocab = vocab;
    s->temperature = temperature;
    s->top_k = top_k;
    s->top_p = top_p;
    s->state = seed;
    *out = s;
    return LINATTN_OK;
}

void linattn_sampler_free(linattn_sampler *s)
{
    if (s)
        mem_free(s->scratch);
    mem_free(s);
}

uint64_t linattn_sampler_get_state(const linattn_sampler *s) { return s->state; }
void linattn_sampler_set_state(linattn_sampler *s, uint64_t state) { s->state = state; }

/* Most probable first; equal ones by token, so the order is deterministic. */
static int by_prob_desc(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? 1 : -1;
    return (x->token > y->token) - (x->token < y->token);
}

linattn_status linattn_sample(linattn_sampler *s, const float *logits, int *token)
{
    int V = s->vocab, best = 0;
    for (int i = 0; i < V; i++) {
        if (!isfinite(logits[i]))
            return linattn_err(LINATTN_ERR_INVALID, "sample: logit %d is not finite", i);
        if (logits[i] > logits[best])
            best = i;
    }
    if (s->temperature == 0.0f) {
        *token = best;
        return LINATTN_OK;
    }
    double m = logits[best];
    for (int i = 0; i < V; i++) {
        s->scratch[i].p = (float)exp(((double)logits[i] - m) / s->temperature);
        s->scratch[i].token = i;
    }
    qsort(s->scratch, (size_t)V, sizeof *s->scratch, by_prob_desc);
    int keep = s->top_k > 0 && s->top_k < V ? s->top_k : V;
    /* top-p: the smallest prefix whose mass reaches top_p (of what top-k kept) */
    double kept = 0.0;
    for (int i = 0; i < keep; i++)
        kept += s->scratch[i].p;
    if (s->top_p < 1.0f) {
        double cum = 0.0;
        for (int i = 0; i < keep; i++) {
            cum += s->scratch[i].p;
            if (cum >= s->top_p * kept) {
                keep = i + 1;
                kept = cum;
                break;
            }
        }
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
