/* linattn-bench.c: times named workloads with each ISA (and scalar) and thread count; prints a table. */
#include <getopt.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "linattn.h"
#include "../engine/attention.h"
#include "peak.h"

static const char usage[] =
    "usage: linattn-bench [--isa ISA] [--threads N[,N...]] [--quick] [--filter NAME]\n"
    "                     [--peak GFLOPS] [--cpu-time] [--busy N] [--list]\n"
    "\n"
    "Runs each workload with each ISA this machine has (and scalar), and\n"
    "prints the median of repeated runs.\n"
    "\n"
    "  --isa ISA         only this ISA (auto|scalar|avx2|avx512|neon)\n"
    "  --threads LIST    thread counts for the prefill and model workloads (default 1,2;\n"
    "                    single-thread workloads stay at 1); auto: the library's\n"
    "                    default, which follows the cores other processes leave free\n"
    "  --quick           fewer, shorter runs (for CI)\n"
    "  --filter NAME     only workloads whose name contains NAME\n"
    "  --peak GFLOPS     FMA peak of one core for the % column, instead of the\n"
    "                    peak each ISA measures at the start of the run\n"
    "  --cpu-time        time with the process's CPU clock instead of the wall\n"
    "                    clock: steadier on a busy machine, but with N threads\n"
    "                    it sums them (and their spinning), so read it for 1\n"
    "  --busy N          run N busy-loop processes beside the workloads (a loaded\n"
    "                    machine: compare --threads 1,2,auto)\n"
    "  --list            list the workloads and exit\n"
    "  -h, --help        this text\n"
    "\n"
    "Softmax GFLOP/s counts 2*H*L^2*d per call, the full square as ggml does\n"
    "(for causal that is the work actually done: half of QK^T plus half of PV).\n";

/* ------------------------------------------------------------------------ */
/* Timing                                                                    */
/* ------------------------------------------------------------------------ */

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec t;
    clock_gettime(clock_id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct options {
    int quick;
    double peak;     /* --peak: GFLOP/s of one core for every ISA; 0: measured */
    double peak_now; /* the peak of the ISA and threads of the run in progress */
} options;

/* One measured configuration. */
typedef struct result {
    double seconds; /* median of one call */
    int runs;
    double rate;      /* in the unit below */
    const char *unit; /* "GFLOP/s", "tok/s", "us/tok" */
    double peak_pct;  /* GFLOP/s only; < 0: none */
    char note[64];
} result;

static void fill_rand(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 40) / (double)(1 << 24) * 2.0 - 1.0);
    }
}

/* ------------------------------------------------------------------------ */
/* Workloads                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct workload workload;
typedef int (*bench_fn)(const workload *w, int threads, const options *o, result *r);

struct workload {
    const char *name;
    const char *what;
    bench_fn run;
    int heads, len, d;
    long ctx;                 /* decode: tokens already in the state */
    linattn_linear_mode mode; /* linear prefill algorithm */
    int threaded;             /* 1: run at each --threads count; 0: one thread */
    int decay;                /* linear: 1 for RetNet's per-head decays, 0 for none */
};

/* RetNet's decays for H heads (g_h = 1 - 2^(-5-h)), or NULL without decay. */
static const float *workload_decay(const workload *w)
{
    static float g[64];
    if (!w->decay || w->heads > 64)
        return NULL;
    linattn_decay d = {LINATTN_DECAY_RETNET, 0, {0}};
    return linattn_decay_values(&d, w->heads, g, NULL) == LINATTN_OK ? g : NULL;
}

/* Repeats call() until `reps` runs or the time budget is spent (at least
 * one run), returns the median seconds. */
typedef int (*call_fn)(void *ctx);
static double median_time(call_fn call, void *ctx, const options *o, int *runs)
{
    const int reps = o->quick ? 3 : 9;
    const double budget = o->quick ? 0.5 : 4.0;
    double t[16];
    int n = 0;
    double start = now();
    call(ctx); /* warm-up: page faults, thread pool, caches */
    while (n < reps && (n == 0 || now() - start < budget)) {
        double t0 = now();
        if (call(ctx) != 0)
            return -1;
        t[n++] = now() - t0;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    *runs = n;
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

typedef struct attn_ctx {
    linattn_attention_desc desc;
    float *q, *k, *v, *out;
    int linear;
} attn_ctx;

static int attn_call(void *p)
{
    attn_ctx *c = p;
    linattn_status st = c->linear ? linattn_attention_linear(&c->desc, c->q, c->k, c->v, c->out)
                                  : linattn_attention_softmax(&c->desc, c->q, c->k, c->v, c->out);
    if (st != LINATTN_OK) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        return -1;
    }
    return 0;
}

/* Causal prefill of B=1, H heads, L tokens, d_k = d_v = d; or (w->ctx > 0)
 * one query against ctx keys (softmax decode: the cache read). */
static int run_prefill(const workload *w, int threads, const options *o, result *r, int linear)
{
    attn_ctx c;
    const int lk = w->ctx > 0 ? (int)w->ctx : w->len, lq = w->ctx > 0 ? 1 : w->len;
    size_t n = (size_t)w->heads * lk * w->d;
    linattn_attention_desc_init(&c.desc);
    c.desc.batch = 1, c.desc.heads = w->heads, c.desc.len_q = lq, c.desc.len_k = lk;
    c.desc.d_k = c.desc.d_v = w->d, c.desc.causal = 1, c.desc.threads = threads;
    c.desc.decay = linear ? workload_decay(w) : NULL;
    c.linear = linear;
    c.q = malloc(n * sizeof(float));
    c.k = malloc(n * sizeof(float));
    c.v = malloc(n * sizeof(float));
    c.out = malloc(n * sizeof(float));
    size_t ws = linear ? linattn_attention_linear_workspace(&c.desc)
                       : linattn_attention_softmax_workspace(&c.desc);
    c.desc.workspace = malloc(ws);
    c.desc.workspace_bytes = ws;
    if (!c.q || !c.k || !c.v || !c.out || !c.desc.workspace) {
        fprintf(stderr, "linattn-bench: out of memory\n");
        return -1;
    }
    fill_rand(c.q, n, 1);
    fill_rand(c.k, n, 2);
    fill_rand(c.v, n, 3);
    c.desc.linear_mode = w->mode;
    r->seconds = median_time(attn_call, &c, o, &r->runs);
    free(c.q), free(c.k), free(c.v), free(c.out), free(c.desc.workspace);
    if (r->seconds < 0)
        return -1;
    if (w->ctx > 0) {
        r->rate = r->seconds * 1e6;
        r->unit = "us/tok";
        r->peak_pct = -1;
    } else if (linear) {
        r->rate = w->len / r->seconds;
        r->unit = "tok/s";
        r->peak_pct = -1;
    } else {
        double flops = 2.0 * w->heads * (double)w->len * w->len * w->d;
        r->rate = flops / r->seconds * 1e-9;
        r->unit = "GFLOP/s";
        r->peak_pct = o->peak_now > 0 ? 100.0 * r->rate / o->peak_now : -1;
    }
    return 0;
}

static int bench_softmax_prefill(const workload *w, int threads, const options *o, result *r)
{
    return run_prefill(w, threads, o, r, 0);
}

static int bench_linear_prefill(const workload *w, int threads, const options *o, result *r)
{
    return run_prefill(w, threads, o, r, 1);
}

typedef struct step_ctx {
    linattn_linear_state *s;
    float *q, *k, *v, *out;
    int tokens; /* steps per call */
    int d;
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

/* One decode step of all heads against a state that has seen ctx tokens.
 * The state is filled by stepping (up to 64k tokens; beyond, the token
 * count is set: the state's size and the step's work do not change). */
static int bench_linear_step(const workload *w, int threads, const options *o, result *r)
{
    (void)threads;
    step_ctx c;
    size_t n = (size_t)w->heads * w->d;
    if (linattn_linear_state_create(w->heads, w->d, w->d, 1e-6f, workload_decay(w), &c.s) !=
        LINATTN_OK) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        return -1;
    }
    c.q = malloc(n * sizeof(float)), c.k = malloc(n * sizeof(float));
    c.v = malloc(n * sizeof(float)), c.out = malloc(n * sizeof(float));
    c.d = w->d;
    fill_rand(c.q, n, 4);
    fill_rand(c.k, n, 5);
    fill_rand(c.v, n, 6);
    long fill = w->ctx < 65536 ? w->ctx : 65536;
    c.tokens = (int)fill;
    step_call(&c);
    if (w->ctx > fill)
        linattn_linear_state_set_tokens(c.s, (uint64_t)w->ctx);
    c.tokens = o->quick ? 200 : 2000;
    r->seconds = median_time(step_call, &c, o, &r->runs) / c.tokens;
    if (w->ctx > fill)
        snprintf(r->note, sizeof r->note, "state: %ld steps, tokens set", fill);
    linattn_linear_state_free(c.s);
    free(c.q), free(c.k), free(c.v), free(c.out);
    if (r->seconds < 0)
        return -1;
    r->rate = r->seconds * 1e6;
    r->unit = "us/tok";
    r->peak_pct = -1;
    return 0;
}

/* ---- whole models: the issue-4 shape with random weights ----------------- */

/* d_model 512, 8 layers, 8 heads, d_ff 2048, vocab 256 (configs/bench-*.ini),
 * made once per variant; max_seq_len leaves room for decoding after 16k. */
static linattn_model *bench_model(int linear)
{
    static linattn_model *cache[2];
    if (cache[linear])
        return cache[linear];
    linattn_config c;
    linattn_config_defaults(&c);
    snprintf(c.weights, sizeof c.weights, "random:1");
    c.vocab_size = 256, c.d_model = 512, c.n_heads = 8, c.n_layers = 8, c.d_ff = 2048;
    c.max_seq_len = 16384 + 256;
    c.attention = linear ? LINATTN_ATTN_LINEAR : LINATTN_ATTN_SOFTMAX;
    if (linattn_model_from_config(&c, &cache[linear]) != LINATTN_OK) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        return NULL;
    }
    return cache[linear];
}

/* Prefill w->ctx tokens from empty (timed once: long runs vary little),
 * then for decode rows time single-token steps and take the median. */
static int run_model(const workload *w, int threads, const options *o, result *r, int linear,
                     int decode)
{
    linattn_model *m = bench_model(linear);
    linattn_session *s;
    if (!m || linattn_session_new(m, &s) != LINATTN_OK) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        return -1;
    }
    linattn_session_set_threads(s, threads);
    int n = (int)w->ctx;
    int *tokens = malloc((size_t)n * sizeof *tokens);
    float *logits = malloc(256 * sizeof *logits);
    int rc = -1;
    if (!tokens || !logits)
        goto out;
    for (int i = 0; i < n; i++)
        tokens[i] = (i * 7919 + 13) & 255;
    /* warm-up: thread pool, page faults of the weights */
    if (linattn_session_feed(s, tokens, 8, logits) != LINATTN_OK)
        goto out;
    linattn_session_reset(s);
    double t0 = now();
    if (linattn_session_feed(s, tokens, n, logits) != LINATTN_OK)
        goto out;
    double prefill = now() - t0;
    if (!decode) {
        r->seconds = prefill;
        r->runs = 1;
        r->rate = n / prefill;
        r->unit = "tok/s";
    } else {
        double t[64];
        int steps = o->quick ? 8 : 32;
        for (int i = 0; i < steps; i++) {
            int tok = tokens[i % n];
            double a = now();
            if (linattn_session_feed(s, &tok, 1, logits) != LINATTN_OK)
                goto out;
            t[i] = now() - a;
        }
        qsort(t, (size_t)steps, sizeof t[0], cmp_double);
        r->seconds = 0.5 * (t[steps / 2 - 1] + t[steps / 2]);
        r->runs = steps;
        r->rate = 1.0 / r->seconds;
        r->unit = "tok/s";
    }
    r->peak_pct = -1;
    snprintf(r->note, sizeof r->note, "%s %zu B/stream", linear ? "state" : "kv-cache",
             linattn_session_state_bytes(s));
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
    linattn_session_free(s);
    free(tokens);
    free(logits);
    return rc;
}

static int bench_model_linear_prefill(const workload *w, int t, const options *o, result *r)
{
    return run_model(w, t, o, r, 1, 0);
}
static int bench_model_linear_decode(const workload *w, int t, const options *o, result *r)
{
    return run_model(w, t, o, r, 1, 1);
}
static int bench_model_softmax_prefill(const workload *w, int t, const options *o, result *r)
{
    return run_model(w, t, o, r, 0, 0);
}
static int bench_model_softmax_decode(const workload *w, int t, const options *o, result *r)
{
    return run_model(w, t, o, r, 0, 1);
}

/* w->len streams (sessions of one model), each fed w->ctx tokens, then
 * linattn_sessions_step advancing all of them one token: tokens/s over all
 * streams (median of the steps). The group runs on the first session's
 * threads. */
static int run_batch(const workload *w, int threads, const options *o, result *r, int linear)
{
    enum { MAX_STREAMS = 64 };
    linattn_model *m = bench_model(linear);
    linattn_session *s[MAX_STREAMS] = {0};
    float *logits[MAX_STREAMS] = {0};
    int tokens[MAX_STREAMS], ns = w->len < MAX_STREAMS ? w->len : MAX_STREAMS, rc = -1;
    int n = (int)w->ctx;
    int *prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof *prompt);
    if (!m || !prompt)
        goto out;
    for (int i = 0; i < n; i++)
        prompt[i] = (i * 7919 + 13) & 255;
    for (int i = 0; i < ns; i++) {
        if (linattn_session_new(m, &s[i]) != LINATTN_OK || !(logits[i] = malloc(256 * sizeof(float))))
            goto out;
        linattn_session_set_threads(s[i], threads);
        if (n > 0 && linattn_session_feed(s[i], prompt, n, NULL) != LINATTN_OK)
            goto out;
        tokens[i] = (i * 31 + 7) & 255;
    }
    double t[64];
    int steps = o->quick ? 8 : 32;
    if (linattn_sessions_step(s, tokens, ns, logits) != LINATTN_OK) /* warm-up */
        goto out;
    for (int k = 0; k < steps; k++) {
        double a = now();
        if (linattn_sessions_step(s, tokens, ns, logits) != LINATTN_OK)
            goto out;
        t[k] = now() - a;
    }
    qsort(t, (size_t)steps, sizeof t[0], cmp_double);
    r->seconds = 0.5 * (t[steps / 2 - 1] + t[steps / 2]);
    r->runs = steps;
    r->rate = ns / r->seconds;
    r->unit = "tok/s";
    r->peak_pct = -1;
    snprintf(r->note, sizeof r->note, "%d streams, context %d", ns, n);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
    for (int i = 0; i < ns; i++) {
        linattn_session_free(s[i]);
        free(logits[i]);
    }
    free(prompt);
    return rc;
}

static int bench_batch_linear(const workload *w, int t, const options *o, result *r)
{
    return run_batch(w, t, o, r, 1);
}
static int bench_batch_softmax(const workload *w, int t, const options *o, result *r)
{
    return run_batch(w, t, o, r, 0);
}

#define MODEL_ROWS(ctx, label)                                                                  \
    {"model-linear-prefill-" label, "d512 L8 H8 ff2048 model, linear, prefill " label " tokens", \
     bench_model_linear_prefill, 8, 0, 512, ctx, LINATTN_LINEAR_AUTO, 1, 0},                      \
    {"model-linear-decode-" label, "same, linear, decode after " label " tokens",                \
     bench_model_linear_decode, 8, 0, 512, ctx, LINATTN_LINEAR_AUTO, 1, 0},                       \
    {"model-softmax-prefill-" label, "same, softmax, prefill " label " tokens",                  \
     bench_model_softmax_prefill, 8, 0, 512, ctx, LINATTN_LINEAR_AUTO, 1, 0},                     \
    {"model-softmax-decode-" label, "same, softmax, decode after " label " tokens",              \
     bench_model_softmax_decode, 8, 0, 512, ctx, LINATTN_LINEAR_AUTO, 1, 0}

#define H8 8
static const workload workloads[] = {
    {"softmax-causal-1k", "causal softmax prefill, H=8 L=1024 d=64", bench_softmax_prefill,
     H8, 1024, 64, 0, LINATTN_LINEAR_AUTO, 1, 0},
    {"softmax-causal-4k", "causal softmax prefill, H=8 L=4096 d=64", bench_softmax_prefill,
     H8, 4096, 64, 0, LINATTN_LINEAR_AUTO, 1, 0},
    {"linear-causal-4k", "causal linear prefill, H=8 L=4096 d=64 (size rule)",
     bench_linear_prefill, H8, 4096, 64, 0, LINATTN_LINEAR_AUTO, 1, 0},
    {"linear-step-ctx1", "linear decode step, 8 heads d=64, context 1", bench_linear_step, H8, 0,
     64, 1, LINATTN_LINEAR_AUTO, 0, 0},
    {"linear-step-ctx1k", "linear decode step, 8 heads d=64, context 1k", bench_linear_step, H8,
     0, 64, 1024, LINATTN_LINEAR_AUTO, 0, 0},
    {"linear-step-ctx1M", "linear decode step, 8 heads d=64, context 1M", bench_linear_step, H8,
     0, 64, 1048576, LINATTN_LINEAR_AUTO, 0, 0},
    /* The chunked-vs-recurrent size rule: both algorithms on one head
     * (so the split path is what 2 threads measure) and across d. */
    {"linear-mode-recurrent-d64", "linear prefill H=8 L=4096 d=64, recurrent",
     bench_linear_prefill, H8, 4096, 64, 0, LINATTN_LINEAR_RECURRENT, 0, 0},
    {"linear-mode-chunked-d64", "linear prefill H=8 L=4096 d=64, chunked", bench_linear_prefill,
     H8, 4096, 64, 0, LINATTN_LINEAR_CHUNKED, 0, 0},
    {"linear-mode-recurrent-d32", "linear prefill H=8 L=4096 d=32, recurrent",
     bench_linear_prefill, H8, 4096, 32, 0, LINATTN_LINEAR_RECURRENT, 0, 0},
    {"linear-mode-chunked-d32", "linear prefill H=8 L=4096 d=32, chunked", bench_linear_prefill,
     H8, 4096, 32, 0, LINATTN_LINEAR_CHUNKED, 0, 0},
    {"linear-mode-recurrent-d128", "linear prefill H=8 L=4096 d=128, recurrent",
     bench_linear_prefill, H8, 4096, 128, 0, LINATTN_LINEAR_RECURRENT, 0, 0},
    {"linear-mode-chunked-d128", "linear prefill H=8 L=4096 d=128, chunked",
     bench_linear_prefill, H8, 4096, 128, 0, LINATTN_LINEAR_CHUNKED, 0, 0},
    {"linear-mode-recurrent-d256", "linear prefill H=2 L=4096 d=256, recurrent",
     bench_linear_prefill, 2, 4096, 256, 0, LINATTN_LINEAR_RECURRENT, 0, 0},
    {"linear-mode-chunked-d256", "linear prefill H=2 L=4096 d=256, chunked",
     bench_linear_prefill, 2, 4096, 256, 0, LINATTN_LINEAR_CHUNKED, 0, 0},
    {"linear-split-1head-4k", "causal linear prefill, H=1 L=4096 d=64 (split over threads)",
     bench_linear_prefill, 1, 4096, 64, 0, LINATTN_LINEAR_AUTO, 1, 0},
    /* One query against a long cache: with fewer heads than threads the
     * keys are split over threads (flash-decoding). */
    {"softmax-decode-1head-64k", "softmax decode, one query, H=1 d=64, 64k keys",
     bench_softmax_prefill, 1, 0, 64, 65536, LINATTN_LINEAR_AUTO, 1, 0},
    {"softmax-decode-8head-16k", "softmax decode, one query, H=8 d=64, 16k keys",
     bench_softmax_prefill, H8, 0, 64, 16384, LINATTN_LINEAR_AUTO, 1, 0},
    /* The head size of most real models: d=128, H=4. */
    {"softmax-causal-4k-d128", "causal softmax prefill, H=4 L=4096 d=128",
     bench_softmax_prefill, 4, 4096, 128, 0, LINATTN_LINEAR_AUTO, 1, 0},
    {"linear-causal-4k-d128", "causal linear prefill, H=4 L=4096 d=128 (size rule)",
     bench_linear_prefill, 4, 4096, 128, 0, LINATTN_LINEAR_AUTO, 1, 0},
    {"linear-mode-recurrent-d128h4", "linear prefill H=4 L=4096 d=128, recurrent",
     bench_linear_prefill, 4, 4096, 128, 0, LINATTN_LINEAR_RECURRENT, 0, 0},
    {"linear-mode-chunked-d128h4", "linear prefill H=4 L=4096 d=128, chunked",
     bench_linear_prefill, 4, 4096, 128, 0, LINATTN_LINEAR_CHUNKED, 0, 0},
    {"linear-step-ctx1k-d128", "linear decode step, 4 heads d=128, context 1k",
     bench_linear_step, 4, 0, 128, 1024, LINATTN_LINEAR_AUTO, 0, 0},
    /* Decay (RetNet's per-head values) against the rows above: the cost of
     * the extra multiply per state element, of the chunk powers and of the
     * segment rebuild. */
    {"linear-decay-causal-4k", "as linear-causal-4k, RetNet decays", bench_linear_prefill, H8,
     4096, 64, 0, LINATTN_LINEAR_AUTO, 1, 1},
    {"linear-decay-step-ctx1k", "as linear-step-ctx1k, RetNet decays", bench_linear_step, H8, 0,
     64, 1024, LINATTN_LINEAR_AUTO, 0, 1},
    {"linear-decay-mode-chunked-d64", "as linear-mode-chunked-d64, RetNet decays",
     bench_linear_prefill, H8, 4096, 64, 0, LINATTN_LINEAR_CHUNKED, 0, 1},
    {"linear-decay-mode-chunked-d128", "as linear-mode-chunked-d128, RetNet decays",
     bench_linear_prefill, H8, 4096, 128, 0, LINATTN_LINEAR_CHUNKED, 0, 1},
    {"linear-decay-split-1head-4k", "as linear-split-1head-4k, RetNet decay",
     bench_linear_prefill, 1, 4096, 64, 0, LINATTN_LINEAR_AUTO, 1, 1},
    {"batch8-linear-step", "same model, linear, 8 streams stepped together (sessions_step)",
     bench_batch_linear, 8, 8, 512, 64, LINATTN_LINEAR_AUTO, 1, 0},
    {"batch8-softmax-step-1k", "same, softmax, 8 streams after 1k tokens, stepped together",
     bench_batch_softmax, 8, 8, 512, 1024, LINATTN_LINEAR_AUTO, 1, 0},
    {"batch2-linear-step", "same, linear, 2 streams stepped together",
     bench_batch_linear, 8, 2, 512, 64, LINATTN_LINEAR_AUTO, 1, 0},
    MODEL_ROWS(1024, "1k"),
    MODEL_ROWS(4096, "4k"),
    MODEL_ROWS(16384, "16k"),
};
#define N_WORKLOADS (sizeof workloads / sizeof workloads[0])

/* ------------------------------------------------------------------------ */
/* Driver                                                                    */
/* ------------------------------------------------------------------------ */

static void format_time(char *buf, size_t n, double s)
{
    if (s >= 1)
        snprintf(buf, n, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.2f ms", s * 1e3);
    else
        snprintf(buf, n, "%.3f us", s * 1e6);
}

static void format_rate(char *buf, size_t n, const result *r)
{
    if (!strcmp(r->unit, "tok/s") && r->rate >= 1e4)
        snprintf(buf, n, "%.0fk tok/s", r->rate * 1e-3);
    else if (!strcmp(r->unit, "tok/s"))
        snprintf(buf, n, "%.1f tok/s", r->rate);
    else if (!strcmp(r->unit, "GFLOP/s"))
        snprintf(buf, n, r->peak_pct >= 0 ? "%.1f GFLOP/s (%.0f%%)" : "%.1f GFLOP/s", r->rate,
                 r->peak_pct);
    else
        snprintf(buf, n, "%.3f %s", r->rate, r->unit);
}

static int parse_threads(const char *text, int *list, int max)
{
    int n = 0;
    const char *p = text;
    while (*p && n < max) {
        char *end;
        long v;
        if (!strncmp(p, "auto", 4)) {
            v = 0;
            end = (char *)p + 4;
        } else {
            v = strtol(p, &end, 10);
            if (end == p || v < 1 || v > 1024)
                return -1;
        }
        list[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

/* n child processes spinning until this one exits (PR_SET_PDEATHSIG: even
 * when it is killed). */
static int start_busy(int n)
{
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("linattn-bench: fork");
            return -1;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() == 1)
                _exit(0);
            volatile unsigned long spin = 0;
            for (;;)
                spin++;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"isa", required_argument, 0, 'i'},   {"threads", required_argument, 0, 't'},
        {"quick", no_argument, 0, 'q'},       {"filter", required_argument, 0, 'f'},
        {"peak", required_argument, 0, 'p'},  {"list", no_argument, 0, 'l'},
        {"cpu-time", no_argument, 0, 'c'},    {"busy", required_argument, 0, 'b'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0},
    };
    options o = {0, 0.0, 0.0};
    const char *isa_text = NULL, *filter = NULL;
    int thread_list[8] = {1, 2}, n_threads = 2, list_only = 0, busy = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': isa_text = optarg; break;
        case 't':
            n_threads = parse_threads(optarg, thread_list, 8);
            if (n_threads <= 0) {
                fprintf(stderr, "linattn-bench: --threads: expected N|auto[,...], got '%s'\n",
                        optarg);
                return 1;
            }
            break;
        case 'q': o.quick = 1; break;
        case 'f': filter = optarg; break;
        case 'p':
            o.peak = atof(optarg);
            if (!(o.peak > 0)) {
                fprintf(stderr, "linattn-bench: --peak: expected a positive number\n");
                return 1;
            }
            break;
        case 'l': list_only = 1; break;
        case 'b': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 0 || v > 64) {
                fprintf(stderr, "linattn-bench: --busy: expected 0..64 processes, got '%s'\n",
                        optarg);
                return 1;
            }
            busy = (int)v;
            break;
        }
        case 'c': clock_id = CLOCK_PROCESS_CPUTIME_ID; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "linattn-bench: unexpected argument '%s'\n", argv[optind]);
        return 1;
    }
    if (list_only) {
        for (size_t i = 0; i < N_WORKLOADS; i++)
            printf("%-28s %s\n", workloads[i].name, workloads[i].what);
        return 0;
    }

    linattn_isa isas[LINATTN_ISA_COUNT];
    int n_isas = 0;
    if (isa_text) {
        if (linattn_isa_parse(isa_text, &isas[0]) != LINATTN_OK ||
            linattn_set_isa(isas[0]) != LINATTN_OK) {
            fprintf(stderr, "linattn-bench: --isa: %s\n", linattn_last_error());
            return 1;
        }
        linattn_get_isa(&isas[0], NULL);
        n_isas = 1;
    } else {
        for (int i = LINATTN_ISA_SCALAR; i < LINATTN_ISA_COUNT; i++)
            if (linattn_set_isa((linattn_isa)i) == LINATTN_OK)
                isas[n_isas++] = (linattn_isa)i;
    }

    if (busy && start_busy(busy) != 0)
        return 1;
    printf("linattn %s, cpu: %s, openmp: %s (%d threads)%s%s",
           linattn_version(), linattn_cpu_features_str(), linattn_has_openmp() ? "yes" : "no",
           linattn_max_threads(), o.quick ? ", quick" : "",
           clock_id == CLOCK_MONOTONIC ? "" : ", process CPU time");
    if (busy)
        printf(", %d busy-loop process%s beside", busy, busy > 1 ? "es" : "");
    printf("\n");
    /* The denominators of every "% of peak": each ISA's FMA peak at each
     * thread count, measured now (or --peak x threads). */
    double peaks[LINATTN_ISA_COUNT][8];
    int any_gflops = 0;
    for (size_t wi = 0; wi < N_WORKLOADS; wi++)
        any_gflops |= (!filter || strstr(workloads[wi].name, filter)) &&
                      (workloads[wi].run == bench_softmax_prefill && workloads[wi].ctx == 0);
    for (int ii = 0; ii < n_isas && any_gflops; ii++) {
        printf("peak %-7s", linattn_isa_name(isas[ii]));
        for (int ti = 0; ti < n_threads; ti++) {
            int t = thread_list[ti] > 0 ? thread_list[ti] : linattn_max_threads();
            if (t > 1 && !linattn_has_openmp())
                t = 1;
            peaks[ii][ti] = o.peak > 0 ? o.peak * t : peak_gflops(isas[ii], t, o.quick ? 0.03 : 0.1);
            printf("  %d thread%s %.1f GFLOP/s", t, t > 1 ? "s" : "", peaks[ii][ti]);
        }
        printf(o.peak > 0 ? "  (--peak)\n" : "  (measured: FMA loop in registers)\n");
    }
    printf("%-28s %-7s %4s %11s %26s %7s  %s\n", "workload", "isa", "thr", "median", "rate",
           "vs 1t", "note");
    int failed = 0, ran = 0;
    for (size_t wi = 0; wi < N_WORKLOADS; wi++) {
        const workload *w = &workloads[wi];
        if (filter && !strstr(w->name, filter))
            continue;
        for (int ii = 0; ii < n_isas; ii++) {
            linattn_set_isa(isas[ii]);
            double one_thread = 0;
            int nt = w->threaded ? n_threads : 1;
            for (int ti = 0; ti < nt; ti++) {
                int threads = w->threaded ? thread_list[ti] : 1;
                if (threads != 1 && !linattn_has_openmp())
                    continue;
                result r;
                memset(&r, 0, sizeof r);
                o.peak_now = any_gflops ? peaks[ii][w->threaded ? ti : 0] : 0;
                if (!w->threaded && thread_list[0] != 1)
                    o.peak_now = 0; /* no peak measured for one thread */
                if (w->run(w, threads, &o, &r) != 0) {
                    failed = 1;
                    continue;
                }
                ran++;
                char t[32], rate[48], speed[16] = "";
                format_time(t, sizeof t, r.seconds);
                format_rate(rate, sizeof rate, &r);
                if (threads == 1)
                    one_thread = r.seconds;
                else if (one_thread > 0)
                    snprintf(speed, sizeof speed, "x%.2f", one_thread / r.seconds);
                char thr[8];
                snprintf(thr, sizeof thr, threads ? "%d" : "auto", threads);
                printf("%-28s %-7s %4s %11s %26s %7s  %s\n", w->name,
                       linattn_isa_name(isas[ii]), thr, t, rate, speed, r.note);
                fflush(stdout);
            }
        }
    }
    if (!ran && !failed) {
        fprintf(stderr, "linattn-bench: no workload matches '%s' (see --list)\n",
                filter ? filter : "");
        return 1;
    }
    return failed;
}
