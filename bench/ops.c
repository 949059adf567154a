/* ops.c: the attention operators: causal softmax and linear prefill, decode against context, algorithm and decay rows. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "../engine/f16.h"

typedef enum op_kind {
    OP_SOFTMAX_PREFILL, /* causal, L queries against L keys: GFLOP/s */
    OP_LINEAR_PREFILL,  /* causal, L tokens: tokens/s */
    OP_SOFTMAX_DECODE,  /* one query against ctx keys: us/token */
    OP_LINEAR_STEP,     /* one step of a state that has seen ctx tokens: us/token */
    OP_SAMPLE,          /* one draw from `len` logits (heads: top_k, d: top_p in %): us/token */
} op_kind;

typedef struct op_workload {
    char name[48];
    char what[128];
    op_kind kind;
    int heads, len, d;
    long ctx;                 /* decode: tokens already in the cache or state */
    linattn_linear_mode mode; /* linear prefill algorithm */
    int threaded;             /* 1: at each --threads count; 0: one thread */
    int decay;                /* linear: RetNet's per-head decays */
    int quick;                /* also in --quick */
    int curve;                /* a point of plot 1 (decode against context) */
    int kv16;                 /* softmax: k and v as halfs (kv_cache = f16) */
} op_workload;

#define AUTO LINATTN_LINEAR_AUTO
#define REC LINATTN_LINEAR_RECURRENT
#define CHUNK LINATTN_LINEAR_CHUNKED
#define SP OP_SOFTMAX_PREFILL
#define LP OP_LINEAR_PREFILL
#define SD OP_SOFTMAX_DECODE
#define LS OP_LINEAR_STEP
#define SA OP_SAMPLE

/* Fixed rows before and after the decode curves (whose contexts come from
 * --lengths). */
static const op_workload head_rows[] = {
    {"softmax-causal-1k", "causal softmax prefill, H=8 L=1024 d=64", SP, 8, 1024, 64, 0, AUTO, 1, 0, 1, 0, 0},
    {"softmax-causal-4k", "causal softmax prefill, H=8 L=4096 d=64", SP, 8, 4096, 64, 0, AUTO, 1, 0, 0, 0, 0},
    {"linear-causal-4k", "causal linear prefill, H=8 L=4096 d=64 (size rule)", LP, 8, 4096, 64, 0, AUTO, 1, 0, 1, 0, 0},
};

static const op_workload tail_rows[] = {
    {"linear-step-ctx1", "linear decode step, 8 heads d=64, context 1", LS, 8, 0, 64, 1, AUTO, 0, 0, 1, 0, 0},
    /* The chunked-vs-recurrent size rule: both algorithms across d. */
    {"linear-mode-recurrent-d64", "linear prefill H=8 L=4096 d=64, recurrent", LP, 8, 4096, 64, 0, REC, 0, 0, 0, 0, 0},
    {"linear-mode-chunked-d64", "linear prefill H=8 L=4096 d=64, chunked", LP, 8, 4096, 64, 0, CHUNK, 0, 0, 0, 0, 0},
    {"linear-mode-recurrent-d32", "linear prefill H=8 L=4096 d=32, recurrent", LP, 8, 4096, 32, 0, REC, 0, 0, 0, 0, 0},
    {"linear-mode-chunked-d32", "linear prefill H=8 L=4096 d=32, chunked", LP, 8, 4096, 32, 0, CHUNK, 0, 0, 0, 0, 0},
    {"linear-mode-recurrent-d128", "linear prefill H=8 L=4096 d=128, recurrent", LP, 8, 4096, 128, 0, REC, 0, 0, 0, 0, 0},
    {"linear-mode-chunked-d128", "linear prefill H=8 L=4096 d=128, chunked", LP, 8, 4096, 128, 0, CHUNK, 0, 0, 0, 0, 0},
    {"linear-mode-recurrent-d256", "linear prefill H=2 L=4096 d=256, recurrent", LP, 2, 4096, 256, 0, REC, 0, 0, 0, 0, 0},
    {"linear-mode-chunked-d256", "linear prefill H=2 L=4096 d=256, chunked", LP, 2, 4096, 256, 0, CHUNK, 0, 0, 0, 0, 0},
    /* One head: the split over threads is what 2 threads measure. */
    {"linear-split-1head-4k", "causal linear prefill, H=1 L=4096 d=64 (split over threads)", LP, 1, 4096, 64, 0, AUTO, 1, 0, 0, 0, 0},
    /* One query against a long cache: with fewer heads than threads the
     * keys are split over threads (flash-decoding). */
    {"softmax-decode-1head-64k", "softmax decode, one query, H=1 d=64, 64k keys", SD, 1, 0, 64, 65536, AUTO, 1, 0, 0, 0, 0},
    /* The same reads with k and v in half (kv_cache = f16): half the bytes
     * of a cache that lives in memory, against softmax-decode-8head-*. */
    {"softmax-decode-8head-4k-f16kv", "as softmax-decode-8head-4k, K and V in F16", SD, 8, 0, 64, 4096, AUTO, 1, 0, 0, 0, 1},
    {"softmax-decode-8head-16k-f16kv", "as softmax-decode-8head-16k, K and V in F16", SD, 8, 0, 64, 16384, AUTO, 1, 0, 1, 0, 1},
    {"softmax-decode-8head-64k-f16kv", "as softmax-decode-8head-64k, K and V in F16", SD, 8, 0, 64, 65536, AUTO, 1, 0, 0, 0, 1},
    /* The head size of most real models: d=128, H=4. */
    {"softmax-causal-4k-d128", "causal softmax prefill, H=4 L=4096 d=128", SP, 4, 4096, 128, 0, AUTO, 1, 0, 0, 0, 0},
    {"linear-causal-4k-d128", "causal linear prefill, H=4 L=4096 d=128 (size rule)", LP, 4, 4096, 128, 0, AUTO, 1, 0, 0, 0, 0},
    {"linear-mode-recurrent-d128h4", "linear prefill H=4 L=4096 d=128, recurrent", LP, 4, 4096, 128, 0, REC, 0, 0, 0, 0, 0},
    {"linear-mode-chunked-d128h4", "linear prefill H=4 L=4096 d=128, chunked", LP, 4, 4096, 128, 0, CHUNK, 0, 0, 0, 0, 0},
    {"linear-step-ctx1k-d128", "linear decode step, 4 heads d=128, context 1k", LS, 4, 0, 128, 1024, AUTO, 0, 0, 0, 0, 0},
    /* Decay (RetNet's per-head values) against the rows above: the extra
     * multiply per state element, the chunk powers, the segment rebuild. */
    {"linear-decay-causal-4k", "as linear-causal-4k, RetNet decays", LP, 8, 4096, 64, 0, AUTO, 1, 1, 0, 0, 0},
    {"linear-decay-step-ctx1k", "as linear-step-ctx1k, RetNet decays", LS, 8, 0, 64, 1024, AUTO, 0, 1, 0, 0, 0},
    {"linear-decay-mode-chunked-d64", "as linear-mode-chunked-d64, RetNet decays", LP, 8, 4096, 64, 0, CHUNK, 0, 1, 0, 0, 0},
    {"linear-decay-mode-chunked-d128", "as linear-mode-chunked-d128, RetNet decays", LP, 8, 4096, 128, 0, CHUNK, 0, 1, 0, 0, 0},
    {"linear-decay-split-1head-4k", "as linear-split-1head-4k, RetNet decay", LP, 1, 4096, 64, 0, AUTO, 1, 1, 0, 0, 0},
    /* The sampler at a llama vocabulary (32,000): the CLI's defaults (T 0.8,
     * top-k 40, top-p 0.95), top-p alone, and no truncation. A 15M-shape
     * token costs about 1.5 ms here: 5% of it is 75 us. */
    {"sample-32k-topk40-topp95", "one draw, vocab 32000, T=0.8 top-k 40 top-p 0.95", SA, 40, 32000, 95, 0, AUTO, 0, 0, 1, 0, 0},
    {"sample-32k-topp95", "one draw, vocab 32000, T=0.8 top-p 0.95", SA, 0, 32000, 95, 0, AUTO, 0, 0, 0, 0, 0},
    {"sample-32k-full", "one draw, vocab 32000, T=0.8, no truncation", SA, 0, 32000, 100, 0, AUTO, 0, 0, 0, 0, 0},
};

#define MAX_OPS 128

/* The run's workloads, in order: head rows, the decode curves (softmax
 * then linear, by context; linear also at 1M unless --lengths), tail rows;
 * --quick keeps the rows marked quick, --filter the matching ones. */
static int plan_ops(const bench_plan *p, op_workload *out)
{
    int n = 0;
    for (size_t i = 0; i < sizeof head_rows / sizeof head_rows[0]; i++)
        out[n++] = head_rows[i];
    for (int v = 0; v < 2; v++) {
        int extra = v == 1 && !p->lengths_given;
        for (int i = 0; i < p->n_lengths + extra && n < MAX_OPS; i++) {
            long ctx = i < p->n_lengths ? p->lengths[i] : 1048576;
            char label[24];
            bench_count_label(label, sizeof label, ctx);
            op_workload *w = &out[n++];
            memset(w, 0, sizeof *w);
            w->heads = 8, w->d = 64, w->ctx = ctx, w->quick = 1, w->curve = 1, w->mode = AUTO;
            if (v == 0) {
                snprintf(w->name, sizeof w->name, "softmax-decode-8head-%s", label);
                snprintf(w->what, sizeof w->what, "softmax decode, one query, H=8 d=64, %s keys",
                         label);
                w->kind = OP_SOFTMAX_DECODE, w->threaded = 1;
            } else {
                snprintf(w->name, sizeof w->name, "linear-step-ctx%s", label);
                snprintf(w->what, sizeof w->what, "linear decode step, 8 heads d=64, context %s",
                         label);
                w->kind = OP_LINEAR_STEP;
            }
        }
    }
    for (size_t i = 0; i < sizeof tail_rows / sizeof tail_rows[0] && n < MAX_OPS; i++)
        out[n++] = tail_rows[i];
    int kept = 0;
    for (int i = 0; i < n; i++) {
        int dup = 0; /* --lengths 1 would repeat linear-step-ctx1 */
        for (int j = 0; j < kept; j++)
            dup |= !strcmp(out[j].name, out[i].name);
        if (!dup && (!p->quick || out[i].quick) && bench_wanted(p, out[i].name))
            out[kept++] = out[i];
    }
    return kept;
}

/* Thread counts a workload runs at (a threaded one at each count asked;
 * more than one only with OpenMP). */
static int op_threads(const bench_plan *p, const op_workload *w, int *out)
{
    if (!w->threaded) {
        out[0] = 1;
        return 1;
    }
    int n = 0;
    for (int i = 0; i < p->n_threads; i++)
        if (p->threads[i] == 1 || linattn_has_openmp())
            out[n++] = p->threads[i];
    return n;
}

size_t ops_units(const bench_plan *p)
{
    op_workload w[MAX_OPS];
    int n = plan_ops(p, w);
    size_t units = 0;
    for (int i = 0; i < n; i++) {
        int t[BENCH_MAX_THREADS];
        units += (size_t)p->n_isas * (size_t)op_threads(p, &w[i], t);
    }
    return units;
}

void ops_list(const bench_plan *p)
{
    op_workload w[MAX_OPS];
    int n = plan_ops(p, w);
    for (int i = 0; i < n; i++)
        printf("%-30s ops      %s%s\n", w[i].name, w[i].what, w[i].threaded ? "" : " (1 thread)");
}

/* ------------------------------------------------------------------------ */
/* Inputs: one pool of q, k, v, out for every workload                       */
/* ------------------------------------------------------------------------ */

/* Values do not change the cost, so buffers are filled once and grown
 * when a workload needs more (a 64k-key cache of 8 heads is 128 MiB a
 * tensor: filled once, not per ISA and thread count). */
static struct {
    float *q, *k, *v, *out;
    size_t nq, nk;
    uint16_t *hk, *hv; /* k, v as halfs (the first nh of them) */
    size_t nh;
} pool;

static void fill_rand(float *x, size_t from, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = from; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 40) / (double)(1 << 24) * 2.0 - 1.0);
    }
}

static int grow(float **p, size_t have, size_t want, uint64_t seed)
{
    float *g = realloc(*p, want * sizeof(float));
    if (!g)
        return -1;
    fill_rand(g, have, want, seed);
    *p = g;
    return 0;
}

static int pool_get(size_t nq, size_t nk)
{
    if (nq > pool.nq) {
        if (grow(&pool.q, pool.nq, nq, 1) || grow(&pool.out, pool.nq, nq, 7))
            return -1;
        pool.nq = nq;
    }
    if (nk > pool.nk) {
        if (grow(&pool.k, pool.nk, nk, 2) || grow(&pool.v, pool.nk, nk, 3))
            return -1;
        pool.nk = nk;
    }
    return 0;
}

/* The first nk values of k and v as halfs (after pool_get). */
static int pool_halfs(size_t nk)
{
    if (nk <= pool.nh)
        return 0;
    uint16_t *hk = realloc(pool.hk, nk * sizeof *hk);
    if (hk)
        pool.hk = hk;
    uint16_t *hv = hk ? realloc(pool.hv, nk * sizeof *hv) : NULL;
    if (!hv)
        return -1;
    pool.hv = hv;
    for (size_t i = pool.nh; i < nk; i++) {
        pool.hk[i] = linattn_f32_to_f16(pool.k[i]);
        pool.hv[i] = linattn_f32_to_f16(pool.v[i]);
    }
    pool.nh = nk;
    return 0;
}

static void pool_free(void)
{
    free(pool.q), free(pool.k), free(pool.v), free(pool.out);
    free(pool.hk), free(pool.hv);
    memset(&pool, 0, sizeof pool);
}

/* RetNet's decays for H heads (g_h = 1 - 2^(-5-h)), or NULL without decay. */
static const float *workload_decay(const op_workload *w)
{
    static float g[64];
    if (!w->decay || w->heads > 64)
        return NULL;
    linattn_decay d = {LINATTN_DECAY_RETNET, 0, {0}};
    return linattn_decay_values(&d, w->heads, g, NULL) == LINATTN_OK ? g : NULL;
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct attn_ctx {
    linattn_attention_desc desc;
    int linear, kv16;
} attn_ctx;

static int attn_call(void *p)
{
    attn_ctx *c = p;
    linattn_status st =
        c->linear ? linattn_attention_linear(&c->desc, pool.q, pool.k, pool.v, pool.out)
        : c->kv16 ? linattn_attention_softmax_f16kv(&c->desc, pool.q, pool.hk, pool.hv, pool.out)
                  : linattn_attention_softmax(&c->desc, pool.q, pool.k, pool.v, pool.out);
    if (st != LINATTN_OK) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        return -1;
    }
    return 0;
}

/* Prefill (L queries, L keys) or softmax decode (1 query, ctx keys). */
static int run_attention(const bench_plan *p, const op_workload *w, int threads, double *s,
                         int *runs)
{
    int linear = w->kind == OP_LINEAR_PREFILL, decode = w->kind == OP_SOFTMAX_DECODE;
    const int lk = decode ? (int)w->ctx : w->len, lq = decode ? 1 : w->len;
    if (pool_get((size_t)w->heads * lq * w->d, (size_t)w->heads * lk * w->d) != 0 ||
        (w->kv16 && pool_halfs((size_t)w->heads * lk * w->d) != 0)) {
        fprintf(stderr, "linattn-bench: out of memory\n");
        return -1;
    }
    attn_ctx c;
    linattn_attention_desc_init(&c.desc);
    c.desc.batch = 1, c.desc.heads = w->heads, c.desc.len_q = lq, c.desc.len_k = lk;
    c.desc.d_k = c.desc.d_v = w->d, c.desc.causal = 1, c.desc.threads = threads;
    c.desc.decay = linear ? workload_decay(w) : NULL;
    c.desc.linear_mode = linear ? w->mode : LINATTN_LINEAR_AUTO;
    c.linear = linear;
    c.kv16 = w->kv16;
    size_t ws = linear ? linattn_attention_linear_workspace(&c.desc)
                       : linattn_attention_softmax_workspace(&c.desc);
    c.desc.workspace = malloc(ws ? ws : 1);
    c.desc.workspace_bytes = ws;
    if (!c.desc.workspace) {
        fprintf(stderr, "linattn-bench: out of memory\n");
        return -1;
    }
    *runs = bench_time(attn_call, &c, p, 1, s, BENCH_MAX_SAMPLES);
    free(c.desc.workspace);
    return *runs > 0 ? 0 : -1;
}

typedef struct step_ctx {
    linattn_linear_state *s;
    const float *q, *k, *v;
    float *out;
    int tokens; /* steps per call */
} step_ctx;

static int step_call(void *p)
{
    step_ctx *c = p;
    for (int t = 0; t < c->tokens; t++) {
        /* the same token each time: the cost does not depend on values */
        if (linattn_linear_step(c->s, c->q, c->k, c->v, c->out) != LINATTN_OK) {
            fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
            return -1;
        }
    }
    return 0;
}

/* One decode step of all heads against a state that has seen ctx tokens:
 * filled by stepping (up to 64k tokens, 4k in --quick), beyond that the
 * token count is set (the state's size and a step's work do not change).
 * Seconds per token into s; the state's bytes into *bytes. */
static int run_step(const bench_plan *p, const op_workload *w, double *s, int *runs,
                    double *bytes, char *note, size_t note_len)
{
    step_ctx c;
    size_t n = (size_t)w->heads * w->d;
    if (pool_get(n, n) != 0)
        return -1;
    if (linattn_linear_state_create(w->heads, w->d, w->d, 1e-6f, workload_decay(w), &c.s) !=
        LINATTN_OK) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        return -1;
    }
    c.q = pool.q, c.k = pool.k, c.v = pool.v, c.out = pool.out;
    long cap = p->quick ? 4096 : 65536;
    long fill = w->ctx < cap ? w->ctx : cap;
    c.tokens = (int)fill;
    int rc = step_call(&c);
    if (rc == 0 && w->ctx > fill) {
        linattn_linear_state_set_tokens(c.s, (uint64_t)w->ctx);
        snprintf(note, note_len, "state: %ld steps, tokens set", fill);
    }
    c.tokens = p->quick ? 200 : 2000;
    if (rc == 0)
        *runs = bench_time(step_call, &c, p, 1, s, BENCH_MAX_SAMPLES);
    for (int i = 0; rc == 0 && i < *runs; i++)
        s[i] /= c.tokens;
    *bytes = (double)linattn_linear_state_bytes(c.s);
    linattn_linear_state_free(c.s);
    return rc == 0 && *runs > 0 ? 0 : -1;
}

typedef struct sample_ctx {
    linattn_sampler *s;
    const float *logits;
    int draws; /* per call */
} sample_ctx;

static int sample_call(void *p)
{
    sample_ctx *c = p;
    for (int i = 0; i < c->draws; i++) {
        int tok;
        if (linattn_sample(c->s, c->logits, &tok) != LINATTN_OK) {
            fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
            return -1;
        }
    }
    return 0;
}

/* Draws from logits shaped like a language model's: a few strong tokens
 * over a long normal tail (standard deviation 2). Seconds per draw into s. */
static int run_sample(const bench_plan *p, const op_workload *w, double *s, int *runs)
{
    int V = w->len;
    float *logits = malloc((size_t)V * sizeof *logits);
    if (!logits) {
        fprintf(stderr, "linattn-bench: out of memory\n");
        return -1;
    }
    uint64_t r = 12345;
    for (int i = 0; i < V; i++) {
        double u1 = 0, u2 = 0;
        while (u1 == 0) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            u1 = (double)(r >> 11) * 0x1.0p-53;
        }
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        u2 = (double)(r >> 11) * 0x1.0p-53;
        logits[i] = (float)(2.0 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    for (int i = 0; i < 8; i++)
        logits[(i * 7919) % V] += 8.0f;
    sample_ctx c = {NULL, logits, p->quick ? 20 : 200};
    if (linattn_sampler_new(V, 0.8f, w->heads, (float)w->d / 100.0f, 7, &c.s) != LINATTN_OK) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        free(logits);
        return -1;
    }
    *runs = bench_time(sample_call, &c, p, 1, s, BENCH_MAX_SAMPLES);
    for (int i = 0; i < *runs; i++)
        s[i] /= c.draws;
    linattn_sampler_free(c.s);
    free(logits);
    return *runs > 0 ? 0 : -1;
}

static int run_one(const bench_plan *p, const op_workload *w, linattn_isa isa, int threads)
{
    bench_row r;
    bench_row_init(&r);
    snprintf(r.suite, sizeof r.suite, "ops");
    bench_copy(r.name, sizeof r.name, w->name);
    bench_copy(r.what, sizeof r.what, w->what);
    snprintf(r.isa, sizeof r.isa, "%s", linattn_isa_name(isa));
    r.threads = threads;
    snprintf(r.variant, sizeof r.variant, "%s",
             w->kind == OP_SAMPLE ? "sampler"
             : w->kind == OP_SOFTMAX_PREFILL || w->kind == OP_SOFTMAX_DECODE ? "softmax"
                                                                           : "linear");
    double s[BENCH_MAX_SAMPLES], bytes = NAN;
    int runs = 0;
    int rc = w->kind == OP_LINEAR_STEP ? run_step(p, w, s, &runs, &bytes, r.note, sizeof r.note)
             : w->kind == OP_SAMPLE    ? run_sample(p, w, s, &runs)
                                       : run_attention(p, w, threads, s, &runs);
    if (rc != 0)
        return -1;
    bench_stats sec;
    bench_stats_of(s, runs, &sec);
    r.seconds = sec.median;
    switch (w->kind) {
    case OP_SOFTMAX_PREFILL:
        /* the full square, as ggml counts: for causal, half of QK^T plus
         * half of PV, the work actually done */
        r.flops = 2.0 * w->heads * (double)w->len * w->len * w->d;
        snprintf(r.unit, sizeof r.unit, "GFLOP/s");
        bench_stats_of_rate(s, runs, r.flops * 1e-9, &r.st);
        snprintf(r.group, sizeof r.group, "prefill");
        r.context = w->len;
        bench_row_ratios(&r, isa, 0, 0);
        break;
    case OP_LINEAR_PREFILL:
        snprintf(r.unit, sizeof r.unit, "tok/s");
        bench_stats_of_rate(s, runs, w->len, &r.st);
        r.context = w->len;
        break;
    case OP_SAMPLE:
        snprintf(r.unit, sizeof r.unit, "us/tok");
        for (int i = 0; i < runs; i++)
            s[i] *= 1e6;
        bench_stats_of(s, runs, &r.st);
        r.context = w->len;
        break;
    case OP_SOFTMAX_DECODE:
    case OP_LINEAR_STEP:
        snprintf(r.unit, sizeof r.unit, "us/tok");
        for (int i = 0; i < runs; i++)
            s[i] *= 1e6;
        bench_stats_of(s, runs, &r.st);
        /* the softmax cache read once (K and V); the linear state read once */
        if (w->kind == OP_SOFTMAX_DECODE)
            bytes = 2.0 * w->heads * (double)w->ctx * w->d *
                    (w->kv16 ? sizeof(uint16_t) : sizeof(float));
        r.bytes = bytes;
        r.context = (double)w->ctx;
        if (w->curve)
            snprintf(r.group, sizeof r.group, "decode");
        bench_row_ratios(&r, isa, bytes, r.seconds);
        break;
    }
    bench_emit(&r);
    return 0;
}

int suite_ops(const bench_plan *p)
{
    op_workload w[MAX_OPS];
    int n = plan_ops(p, w), failed = 0;
    for (int wi = 0; wi < n; wi++) {
        for (int ii = 0; ii < p->n_isas; ii++) {
            int t[BENCH_MAX_THREADS], nt = op_threads(p, &w[wi], t);
            for (int ti = 0; ti < nt; ti++) {
                char label[96], thr[8];
                snprintf(thr, sizeof thr, t[ti] ? "%dt" : "auto", t[ti]);
                snprintf(label, sizeof label, "%.47s %s %s", w[wi].name,
                         linattn_isa_name(p->isas[ii]), thr);
                bench_progress_step(label);
                linattn_set_isa(p->isas[ii]);
                bench_pin(bench_resolve_threads(t[ti]));
                failed |= run_one(p, &w[wi], p->isas[ii], t[ti]) != 0;
            }
        }
    }
    pool_free();
    return failed ? -1 : 0;
}
