/* model_bench.c: whole models from config files (and F16 and int8 copies of the random ones): prefill and decode tokens/s, decode against the weights' bandwidth floor, streams stepped together. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"
#include "../engine/model.h" /* linattn_model_random_safetensors */

/* Contexts each config is prefilled to (then decoded after). */
static const long full_contexts[] = {1024, 4096, 16384};
static const long quick_contexts[] = {64};
#define DECODE_STEPS(p) ((p)->quick ? 8 : 32)

typedef struct bench_model {
    const char *path;
    char label[48]; /* "linear" for bench-linear.ini: the rows' names */
    linattn_config *cfg;
    linattn_model *m;
    char note[48]; /* "built-in shape" when the default file is missing; F16 copies */
    void *bytes;   /* an F16 copy's safetensors image (the model reads it in place) */
} bench_model;

/* The copies of a random-weights model the suite also runs, and how its
 * matrices and vectors are stored. */
static const struct twin {
    const char *suffix, *name, *what;
    linattn_dtype matrices, vectors;
} twins[] = {
    {"-f16", "F16", " (F16 weights)", LINATTN_DTYPE_F16, LINATTN_DTYPE_F16},
    {"-q8", "int8", " (int8 weights)", LINATTN_DTYPE_I8, LINATTN_DTYPE_F32},
};
#define N_TWINS ((int)(sizeof twins / sizeof twins[0]))
#define MAX_MODELS (BENCH_MAX_CONFIGS * 3) /* each config and its two twins */
static bench_model models[MAX_MODELS];
static int n_models;

/* "configs/bench-linear.ini" -> "linear"; "my-model.ini" -> "my-model". */
static void label_of(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strncmp(base, "bench-", 6))
        base += 6;
    snprintf(out, n, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && !strcmp(dot, ".ini"))
        *dot = 0;
}

static long max_context(const bench_plan *p)
{
    return p->quick ? quick_contexts[0] : full_contexts[2];
}

/* The shape of configs/bench-*.ini, for a binary run away from its source
 * tree: the same model, built in. */
static void builtin_config(linattn_config *c, const char *label)
{
    linattn_config_defaults(c);
    snprintf(c->weights, sizeof c->weights, "random:1");
    c->vocab_size = 256, c->d_model = 512, c->n_heads = 8, c->n_layers = 8, c->d_ff = 2048;
    c->max_seq_len = 16384;
    c->attention = strstr(label, "softmax") ? LINATTN_ATTN_SOFTMAX : LINATTN_ATTN_LINEAR;
    if (strstr(label, "hybrid")) {
        c->attention = LINATTN_ATTN_HYBRID;
        c->window = 64;
        c->feature_dim = 128;
        c->decay.kind = LINATTN_DECAY_RETNET;
    }
}

/* A stream's state is fixed (linear, a window, hybrid): its decode is also
 * timed far down a stream (model-*-decode-1M). */
static int fixed_state(const linattn_config *c)
{
    return c->attention == LINATTN_ATTN_LINEAR || c->window > 0;
}

/* The position a decode-1M row jumps to. */
#define FAR_POSITION 1048576

/* Loads every config once (the models serve every ISA and thread count). */
static int load_models(const bench_plan *p)
{
    if (n_models)
        return 0;
    for (int i = 0; i < p->n_configs; i++) {
        bench_model *bm = &models[n_models];
        memset(bm, 0, sizeof *bm);
        bm->path = p->configs[i];
        label_of(bm->path, bm->label, sizeof bm->label);
        bm->cfg = malloc(sizeof *bm->cfg);
        if (!bm->cfg)
            return -1;
        struct stat st;
        if (p->configs_default && stat(bm->path, &st) != 0) {
            builtin_config(bm->cfg, bm->label);
            snprintf(bm->note, sizeof bm->note, "built-in shape (no file)");
        } else if (linattn_config_load(bm->path, bm->cfg) != LINATTN_OK) {
            fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
            free(bm->cfg);
            return -1;
        }
        /* the bench chooses ISA and threads; room to decode after the
         * longest context */
        bm->cfg->isa = LINATTN_ISA_AUTO;
        long need = max_context(p) + DECODE_STEPS(p) + 16;
        if (bm->cfg->max_seq_len < need)
            bm->cfg->max_seq_len = (int)need;
        if (linattn_model_from_config(bm->cfg, &bm->m) != LINATTN_OK) {
            fprintf(stderr, "linattn-bench: %s: %s\n", bm->path, linattn_last_error());
            free(bm->cfg);
            return -1;
        }
        n_models++;
    }
    /* Twins of every random-weights model ("linear-f16", "linear-q8"): the
     * same random model stored as F16, or as int8 with its scales, and used
     * as stored (weights_dtype = stored), after the configs so their
     * indices stay the configs'. */
    for (int tw = 0; tw < N_TWINS; tw++)
        for (int i = 0, n = p->n_configs; i < n && i < n_models && n_models < MAX_MODELS;
             i++) {
            const bench_model *base = &models[i];
            if (strncmp(base->cfg->weights, "random:", 7) != 0)
                continue;
            bench_model *bm = &models[n_models];
            memset(bm, 0, sizeof *bm);
            bm->path = base->path;
            snprintf(bm->label, sizeof bm->label, "%.40s%s", base->label, twins[tw].suffix);
            snprintf(bm->note, sizeof bm->note, "%s copy of the random weights%s%s",
                     twins[tw].name, base->note[0] ? "; " : "",
                     base->note[0] ? "built-in shape" : "");
            size_t size;
            if (!(bm->cfg = malloc(sizeof *bm->cfg)))
                return -1;
            *bm->cfg = *base->cfg;
            bm->cfg->weights_dtype = LINATTN_WEIGHTS_STORED;
            if (linattn_model_random_safetensors(base->cfg, twins[tw].matrices, twins[tw].vectors,
                                                 &bm->bytes, &size) != LINATTN_OK ||
                linattn_model_from_config_mem(bm->cfg, bm->bytes, size, &bm->m) != LINATTN_OK) {
                fprintf(stderr, "linattn-bench: %s (%s): %s\n", bm->path, twins[tw].name,
                        linattn_last_error());
                free(bm->bytes);
                free(bm->cfg);
                return -1;
            }
            n_models++;
        }
    return 0;
}

/* 1 if config i has random weights (it then gets its twins). */
static int config_random(const bench_plan *p, int i)
{
    if (n_models > i)
        return !strncmp(models[i].cfg->weights, "random:", 7);
    linattn_config *c = malloc(sizeof *c);
    struct stat st;
    int r = 1; /* the built-in shape of a missing default file is random */
    if (c && !(p->configs_default && stat(p->configs[i], &st) != 0))
        r = linattn_config_load(p->configs[i], c) == LINATTN_OK &&
            !strncmp(c->weights, "random:", 7);
    free(c);
    return r;
}

static void free_models(void)
{
    for (int i = 0; i < n_models; i++) {
        linattn_model_free(models[i].m);
        free(models[i].cfg);
        free(models[i].bytes);
    }
    n_models = 0;
}

/* ------------------------------------------------------------------------ */
/* The plan: contexts x configs, then the batch rows                         */
/* ------------------------------------------------------------------------ */

static void row_name(char *buf, size_t n, const char *label, const char *what, long ctx)
{
    char c[24];
    bench_count_label(c, sizeof c, ctx);
    snprintf(buf, n, "model-%s-%s-%s", label, what, c);
}

/* The streams-stepped-together rows (sessions_step): full runs only, on
 * the first linear and the first softmax config. */
typedef struct batch_row {
    const char *name, *what;
    int linear, streams, ctx;
} batch_row;
static const batch_row batch_rows[] = {
    {"batch8-linear-step", "linear model, 8 streams stepped together (sessions_step)", 1, 8, 64},
    {"batch8-softmax-step-1k", "softmax model, 8 streams after 1k tokens, stepped together", 0, 8, 1024},
    {"batch2-linear-step", "linear model, 2 streams stepped together", 1, 2, 64},
};

/* The serving rows (step<N>-<model>), full runs only, on every model: N
 * streams each fed a STEP_PROMPT-token prompt, then STEP_GEN
 * linattn_sessions_step calls advancing all of them a token (issue 20's
 * workload: 128 + 128 tokens a stream). A sample is one such run (the
 * prompts fed again, untimed); the row's min..max is over runs, its
 * note has the inter-token latency (one step) over all runs' steps. */
static const int step_streams[] = {1, 8, 32, 128};
enum { STEP_PROMPT = 128, STEP_GEN = 128, N_STEP_ROWS = 4 };

static void step_name(char *buf, size_t n, int streams, const char *label)
{
    snprintf(buf, n, "step%d-%s", streams, label);
}

/* The hybrid model's decode against the linear one's of the same shape,
 * interleaved token by token (one step of each in turn, the order
 * alternating), so a shared machine's swings in memory bandwidth, which
 * move two decode rows timed one after the other apart, fall on both
 * alike: the row is the median of the per-pair speed ratios. */
static const char pair_name[] = "pair-hybrid-linear-decode-1k";
enum { PAIR_CTX = 1024 };

static int thread_counts(const bench_plan *p, int *out)
{
    int n = 0;
    /* --quick: one thread (each model's rows at two threads were a third
     * of a quick run, which must stay under a minute on two slow vCPUs) */
    for (int i = 0; i < p->n_threads; i++)
        if ((p->threads[i] == 1 || linattn_has_openmp()) && (!p->quick || p->threads[i] == 1))
            out[n++] = p->threads[i];
    return n;
}

/* Whether row step<k>- of config i (its twin tw, or itself: -1) is wanted;
 * its name into a. */
static int step_wanted(const bench_plan *p, int i, int tw, int k, char *a, size_t n)
{
    char label[48];
    label_of(p->configs[i], label, sizeof label);
    if (tw >= 0)
        strncat(label, twins[tw].suffix, sizeof label - strlen(label) - 1);
    step_name(a, n, step_streams[k], label);
    return bench_wanted(p, a);
}

/* Config i keeps a fixed state (read from its file before the models load). */
static int config_fixed(const bench_plan *p, int i)
{
    if (n_models > i)
        return fixed_state(models[i].cfg);
    linattn_config *c = malloc(sizeof *c);
    struct stat st;
    char label[48];
    label_of(p->configs[i], label, sizeof label);
    int r = !strstr(label, "softmax"); /* a missing default file: its built-in shape */
    if (c && !(p->configs_default && stat(p->configs[i], &st) != 0))
        r = linattn_config_load(p->configs[i], c) == LINATTN_OK && fixed_state(c);
    free(c);
    return r;
}

static int config_linear(const bench_plan *p, int i)
{
    char label[48];
    label_of(p->configs[i], label, sizeof label);
    if (n_models > i)
        return models[i].cfg->attention == LINATTN_ATTN_LINEAR;
    return !strstr(label, "softmax") && !strstr(label, "hybrid"); /* before loading: --list */
}

static int batch_config(const bench_plan *p, int linear)
{
    for (int i = 0; i < p->n_configs; i++)
        if (config_linear(p, i) == linear)
            return i;
    return -1;
}

/* The first hybrid config (-1: none). */
static int hybrid_config(const bench_plan *p)
{
    for (int i = 0; i < p->n_configs; i++) {
        char label[48];
        label_of(p->configs[i], label, sizeof label);
        if (n_models > i ? models[i].cfg->attention == LINATTN_ATTN_HYBRID
                         : strstr(label, "hybrid") != NULL)
            return i;
    }
    return -1;
}

static int pair_wanted(const bench_plan *p)
{
    return !p->quick && bench_wanted(p, pair_name) && hybrid_config(p) >= 0 &&
           batch_config(p, 1) >= 0;
}

/* The scalar table runs the model rows at the first context only: at 70
 * tokens/s its 16k prefills alone took over half an hour of a full run,
 * and its speed against the SIMD tables is read at 1k as well. */
static int model_isa_at(linattn_isa isa, size_t c)
{
    return isa != LINATTN_ISA_SCALAR || c == 0;
}

static size_t model_isas_at(const bench_plan *p, size_t c)
{
    size_t n = 0;
    for (int ii = 0; ii < p->n_isas; ii++)
        n += (size_t)model_isa_at(p->isas[ii], c);
    return n;
}

size_t model_units(const bench_plan *p)
{
    int t[BENCH_MAX_THREADS], nt = thread_counts(p, t);
    size_t n = 0, nctx = p->quick ? 1 : 3;
    for (size_t c = 0; c < nctx; c++) {
        long ctx = p->quick ? quick_contexts[c] : full_contexts[c];
        for (int i = 0; i < p->n_configs; i++)
            for (int tw = -1; tw < (config_random(p, i) ? N_TWINS : 0); tw++) {
                char label[48], a[96], b[96];
                label_of(p->configs[i], label, sizeof label);
                if (tw >= 0)
                    strncat(label, twins[tw].suffix, sizeof label - strlen(label) - 1);
                row_name(a, sizeof a, label, "prefill", ctx);
                row_name(b, sizeof b, label, "decode", ctx);
                if (bench_wanted(p, a) || bench_wanted(p, b))
                    n += model_isas_at(p, c) * (size_t)nt;
                if (!bench_wanted(p, a) && !bench_wanted(p, b) && !p->quick && c == 0 &&
                    config_fixed(p, i)) { /* the decode-1M row alone (run with the 1k ones) */
                    row_name(b, sizeof b, label, "decode", FAR_POSITION);
                    if (bench_wanted(p, b))
                        n += model_isas_at(p, c) * (size_t)nt;
                }
            }
    }
    for (size_t i = 0; !p->quick && i < sizeof batch_rows / sizeof batch_rows[0]; i++)
        if (bench_wanted(p, batch_rows[i].name) && batch_config(p, batch_rows[i].linear) >= 0)
            n += (size_t)p->n_isas * (size_t)nt;
    for (int i = 0; !p->quick && i < p->n_configs; i++)
        for (int tw = -1; tw < (config_random(p, i) ? N_TWINS : 0); tw++)
            for (int k = 0; k < N_STEP_ROWS; k++) {
                char a[96];
                if (step_wanted(p, i, tw, k, a, sizeof a))
                    n += (size_t)p->n_isas * (size_t)nt;
            }
    if (pair_wanted(p))
        n += (size_t)p->n_isas * (size_t)nt;
    return n;
}

void model_list(const bench_plan *p)
{
    size_t nctx = p->quick ? 1 : 3;
    for (size_t c = 0; c < nctx; c++) {
        long ctx = p->quick ? quick_contexts[c] : full_contexts[c];
        for (int i = 0; i < p->n_configs; i++)
            for (int tw = -1; tw < (config_random(p, i) ? N_TWINS : 0); tw++) {
                char label[48], a[96];
                const char *w = tw >= 0 ? twins[tw].what : "";
                label_of(p->configs[i], label, sizeof label);
                if (tw >= 0)
                    strncat(label, twins[tw].suffix, sizeof label - strlen(label) - 1);
                row_name(a, sizeof a, label, "prefill", ctx);
                if (bench_wanted(p, a))
                    printf("%-30s model    %s%s, prefill %ld tokens\n", a, p->configs[i], w, ctx);
                row_name(a, sizeof a, label, "decode", ctx);
                if (bench_wanted(p, a))
                    printf("%-30s model    %s%s, decode after %ld tokens\n", a, p->configs[i], w,
                           ctx);
                row_name(a, sizeof a, label, "decode", FAR_POSITION);
                if (!p->quick && c == 0 && config_fixed(p, i) && bench_wanted(p, a))
                    printf("%-30s model    %s%s, decode at position 1M\n", a, p->configs[i], w);
            }
    }
    for (size_t i = 0; !p->quick && i < sizeof batch_rows / sizeof batch_rows[0]; i++)
        if (bench_wanted(p, batch_rows[i].name))
            printf("%-30s model    %s\n", batch_rows[i].name, batch_rows[i].what);
    for (int i = 0; !p->quick && i < p->n_configs; i++)
        for (int tw = -1; tw < (config_random(p, i) ? N_TWINS : 0); tw++)
            for (int k = 0; k < N_STEP_ROWS; k++) {
                char a[96];
                if (step_wanted(p, i, tw, k, a, sizeof a))
                    printf("%-30s model    %s%s, %d stream%s of %d prompt + %d stepped tokens\n",
                           a, p->configs[i], tw >= 0 ? twins[tw].what : "", step_streams[k],
                           step_streams[k] > 1 ? "s" : "",
                           STEP_PROMPT, STEP_GEN);
            }
    if (pair_wanted(p))
        printf("%-30s model    %s over %s: decode speed after %d tokens, token by token in "
               "turn\n", pair_name, p->configs[hybrid_config(p)], p->configs[batch_config(p, 1)],
               PAIR_CTX);
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                      */
/* ------------------------------------------------------------------------ */

/* Nominal prefill work of n tokens: 2 flops a parameter a token (the
 * projections, FFN and LM head), plus attention: softmax the causal
 * square as the ops rows count it (2 n^2 d_model a layer), linear the
 * state update and read (4 n d_model d_head a layer). */
static double prefill_flops(const bench_model *bm, long n)
{
    const linattn_config *c = bm->cfg;
    double dense = 2.0 * (double)linattn_model_params(bm->m) * (double)n;
    double dh = (double)c->d_model / c->n_heads, keys = (double)n;
    if (c->window > 0 && keys > c->window) /* a window's band: W keys a row */
        keys = c->window;
    double attn = c->attention == LINATTN_ATTN_LINEAR ? 4.0 * (double)n * c->d_model * dh
                                                       : 2.0 * (double)n * keys * c->d_model;
    if (c->attention == LINATTN_ATTN_HYBRID) /* and the tail's update and read */
        attn += 4.0 * (double)n * c->d_model * (c->feature_dim > 0 ? c->feature_dim : dh);
    return dense + attn * c->n_layers;
}

typedef struct prefill_ctx {
    linattn_session *s;
    const int *tokens;
    int n;
    float *logits;
} prefill_ctx;

static int prefill_call(void *p)
{
    prefill_ctx *c = p;
    linattn_session_reset(c->s);
    if (linattn_session_feed(c->s, c->tokens, c->n, c->logits) != LINATTN_OK) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        return -1;
    }
    return 0;
}

static void model_row(bench_row *r, const bench_model *bm, const char *name, linattn_isa isa,
                      int threads)
{
    bench_row_init(r);
    snprintf(r->suite, sizeof r->suite, "model");
    bench_copy(r->name, sizeof r->name, name);
    snprintf(r->isa, sizeof r->isa, "%s", linattn_isa_name(isa));
    snprintf(r->unit, sizeof r->unit, "tok/s");
    static const char *const kinds[] = {"softmax", "linear", "hybrid"};
    snprintf(r->variant, sizeof r->variant, "%s", kinds[bm->cfg->attention]);
    r->threads = threads;
}

/* Times `steps` single-token decode steps of s (tokens[steps]) and emits
 * row `name`, saying `what` it decodes. t holds the samples. */
static int decode_row(const bench_plan *p, const bench_model *bm, linattn_session *s,
                      const int *tokens, int steps, float *logits, double *t, const char *name,
                      linattn_isa isa, int threads, double context, const char *what)
{
    for (int i = 0; i < steps; i++) {
        double a = bench_now(p);
        if (linattn_session_feed(s, &tokens[i], 1, logits) != LINATTN_OK) {
            fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
            return -1;
        }
        t[i] = bench_now(p) - a;
    }
    bench_row r;
    model_row(&r, bm, name, isa, threads);
    char full[4096 + 160];
    snprintf(full, sizeof full, "%s (%s), %s", bm->path, bm->label, what);
    bench_copy(r.what, sizeof r.what, full);
    bench_stats_of_rate(t, steps, 1.0, &r.st);
    bench_stats sec;
    bench_stats_of(t, steps, &sec);
    r.seconds = sec.median;
    /* a token reads every weight once, and the whole state or cache */
    double weights = (double)linattn_model_weight_bytes(bm->m);
    double state = (double)linattn_session_state_bytes(s);
    r.bytes = weights + state;
    r.context = context;
    snprintf(r.note, sizeof r.note, "weights %s %.0f MiB + %s %.1f MiB a token%s%s",
             linattn_model_weight_dtypes(bm->m), weights / 1048576,
             fixed_state(bm->cfg) ? "state" : "kv-cache", state / 1048576,
             bm->note[0] ? "; " : "", bm->note);
    bench_row_ratios(&r, isa, r.bytes, r.seconds);
    bench_emit(&r);
    return 0;
}

/* Prefill ctx tokens from empty (repeated by the plan's rule), then time
 * single-token decode steps after the last prefill. */
static int run_model(const bench_plan *p, const bench_model *bm, long ctx, linattn_isa isa,
                     int threads)
{
    char pname[96], dname[96];
    row_name(pname, sizeof pname, bm->label, "prefill", ctx);
    row_name(dname, sizeof dname, bm->label, "decode", ctx);
    int want_p = bench_wanted(p, pname), want_d = bench_wanted(p, dname);
    int steps = DECODE_STEPS(p), n = (int)ctx, vocab = bm->cfg->vocab_size, rc = -1;
    linattn_session *s = NULL;
    int *tokens = malloc((size_t)(n + steps) * sizeof *tokens);
    float *logits = malloc((size_t)vocab * sizeof *logits);
    double t[BENCH_MAX_SAMPLES];
    if (!tokens || !logits || linattn_session_new(bm->m, &s) != LINATTN_OK)
        goto out;
    linattn_session_set_threads(s, threads);
    bench_pin(bench_resolve_threads(threads));
    for (int i = 0; i < n + steps; i++)
        tokens[i] = (i * 7919 + 13) % vocab;
    /* warm-up: thread pool, page faults of the weights */
    if (linattn_session_feed(s, tokens, n < 8 ? n : 8, logits) != LINATTN_OK)
        goto out;
    prefill_ctx pc = {s, tokens, n, logits};
    int runs = want_p ? bench_time(prefill_call, &pc, p, 0, t, BENCH_MAX_SAMPLES)
                      : (prefill_call(&pc) == 0);
    if (runs <= 0)
        goto out;
    size_t state = linattn_session_state_bytes(s);
    const char *what_state = fixed_state(bm->cfg) ? "state" : "kv-cache";
    if (want_p) {
        bench_row r;
        model_row(&r, bm, pname, isa, threads);
        snprintf(r.what, sizeof r.what, "%s (%s), prefill %ld tokens", bm->path, bm->label, ctx);
        snprintf(r.note, sizeof r.note, "%s %zu B/stream%s%s", what_state, state,
                 bm->note[0] ? "; " : "", bm->note);
        bench_stats_of_rate(t, runs, (double)n, &r.st);
        bench_stats sec;
        bench_stats_of(t, runs, &sec);
        r.seconds = sec.median;
        r.flops = prefill_flops(bm, ctx);
        r.context = (double)ctx;
        bench_row_ratios(&r, isa, 0, 0);
        bench_emit(&r);
    }
    char what[96];
    snprintf(what, sizeof what, "decode after %ld tokens", ctx);
    if (want_d && decode_row(p, bm, s, tokens + n, steps, logits, t, dname, isa, threads,
                             (double)ctx, what) != 0)
        goto out;
    row_name(dname, sizeof dname, bm->label, "decode", FAR_POSITION);
    if (!p->quick && ctx == full_contexts[0] && fixed_state(bm->cfg) && bench_wanted(p, dname)) {
        /* the same stream moved to position 1M: a fixed state does the
         * same work at any position (the ring and sums stay full), so
         * this times what a real stream a million tokens long decodes at */
        s->tokens = FAR_POSITION;
        snprintf(what, sizeof what, "decode at position 1M (after %ld tokens)", ctx);
        if (decode_row(p, bm, s, tokens + n, steps, logits, t, dname, isa, threads,
                       (double)FAR_POSITION, what) != 0)
            goto out;
    }
    rc = 0;
out:
    if (rc && s)
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
    linattn_session_free(s);
    free(tokens);
    free(logits);
    return rc;
}

/* ns sessions of bm's model at `threads`, each with logits of its vocab;
 * 0 on success (what was made is in s and logits either way). */
static int new_streams(const bench_model *bm, int ns, int threads, linattn_session **s,
                       float **logits)
{
    for (int i = 0; i < ns; i++) {
        if (linattn_session_new(bm->m, &s[i]) != LINATTN_OK ||
            !(logits[i] = malloc((size_t)bm->cfg->vocab_size * sizeof(float))))
            return -1;
        linattn_session_set_threads(s[i], threads);
    }
    return 0;
}

/* b->streams sessions of one model, each fed b->ctx tokens, then
 * linattn_sessions_step advancing all of them one token: tokens/s over
 * all streams. The group runs on the first session's threads. */
static int run_batch(const bench_plan *p, const batch_row *b, const bench_model *bm,
                     linattn_isa isa, int threads)
{
    enum { MAX_STREAMS = 64 };
    linattn_session *s[MAX_STREAMS] = {0};
    float *logits[MAX_STREAMS] = {0};
    int tokens[MAX_STREAMS], ns = b->streams < MAX_STREAMS ? b->streams : MAX_STREAMS, rc = -1;
    int n = b->ctx, vocab = bm->cfg->vocab_size;
    int *prompt = malloc((size_t)(n > 0 ? n : 1) * sizeof *prompt);
    double t[BENCH_MAX_SAMPLES];
    int steps = DECODE_STEPS(p);
    if (!prompt)
        goto out;
    for (int i = 0; i < n; i++)
        prompt[i] = (i * 7919 + 13) % vocab;
    bench_pin(bench_resolve_threads(threads));
    if (new_streams(bm, ns, threads, s, logits) != 0)
        goto out;
    for (int i = 0; i < ns; i++) {
        if (n > 0 && linattn_session_feed(s[i], prompt, n, NULL) != LINATTN_OK)
            goto out;
        tokens[i] = (i * 31 + 7) % vocab;
    }
    if (linattn_sessions_step(s, tokens, ns, logits) != LINATTN_OK) /* warm-up */
        goto out;
    for (int k = 0; k < steps; k++) {
        double a = bench_now(p);
        if (linattn_sessions_step(s, tokens, ns, logits) != LINATTN_OK)
            goto out;
        t[k] = bench_now(p) - a;
    }
    bench_row r;
    model_row(&r, bm, b->name, isa, threads);
    snprintf(r.what, sizeof r.what, "%s: %s", bm->path, b->what);
    snprintf(r.note, sizeof r.note, "%d streams, context %d", ns, n);
    bench_stats_of_rate(t, steps, (double)ns, &r.st);
    bench_stats sec;
    bench_stats_of(t, steps, &sec);
    r.seconds = sec.median;
    r.context = n;
    bench_emit(&r);
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

/* The share of the parameters a token multiplies with: all but an untied
 * embedding table, of which it reads one row (a llama.cpp GGUF of a
 * llama2.c checkpoint has its own output matrix: 9.2M of 24.4M
 * parameters at the 15M shape are the embedding). */
static double used_share(const bench_model *bm)
{
    const linattn_config *c = bm->cfg;
    double all = (double)linattn_model_params(bm->m);
    double emb = c->tie_embeddings ? 0 : (double)c->vocab_size * c->d_model;
    return all > emb && all > 0 ? (all - emb) / all : 1;
}

/* Work of one decode token at context ctx: 2 flops a parameter it uses,
 * plus attention as prefill_flops counts it (softmax 4 ctx d_model a
 * layer, linear 4 d_model d_head). */
static double token_flops(const bench_model *bm, double ctx)
{
    const linattn_config *c = bm->cfg;
    double dh = (double)c->d_model / c->n_heads, keys = ctx;
    if (c->window > 0 && keys > c->window)
        keys = c->window;
    double attn = c->attention == LINATTN_ATTN_LINEAR ? 4.0 * c->d_model * dh
                                                       : 4.0 * keys * c->d_model;
    if (c->attention == LINATTN_ATTN_HYBRID)
        attn += 4.0 * c->d_model * (c->feature_dim > 0 ? c->feature_dim : dh);
    return 2.0 * (double)linattn_model_params(bm->m) * used_share(bm) + attn * c->n_layers;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The step<ns>-<label> row: ns streams of STEP_PROMPT + STEP_GEN tokens. */
static int run_steps(const bench_plan *p, const bench_model *bm, int ns, linattn_isa isa,
                     int threads)
{
    enum { MAX_STREAMS = 128 };
    linattn_session *s[MAX_STREAMS] = {0};
    float *logits[MAX_STREAMS] = {0};
    int tokens[MAX_STREAMS], prompt[STEP_PROMPT], rc = -1, vocab = bm->cfg->vocab_size;
    int runs = p->repeat < BENCH_MAX_SAMPLES ? p->repeat : BENCH_MAX_SAMPLES;
    double run_t[BENCH_MAX_SAMPLES];
    double *lat = malloc((size_t)runs * STEP_GEN * sizeof *lat);
    char name[96];
    step_name(name, sizeof name, ns, bm->label);
    if (!lat || ns > MAX_STREAMS)
        goto out;
    bench_pin(bench_resolve_threads(threads));
    if (new_streams(bm, ns, threads, s, logits) != 0)
        goto out;
    for (int r = 0; r < runs; r++) {
        for (int i = 0; i < ns; i++) { /* each stream its own prompt */
            for (int j = 0; j < STEP_PROMPT; j++)
                prompt[j] = (j * 7919 + i * 104729 + 13) % vocab;
            linattn_session_reset(s[i]);
            if (linattn_session_feed(s[i], prompt, STEP_PROMPT, NULL) != LINATTN_OK)
                goto out;
            tokens[i] = (i * 31 + 7) % vocab;
        }
        run_t[r] = 0;
        for (int g = 0; g < STEP_GEN; g++) {
            double a = bench_now(p);
            if (linattn_sessions_step(s, tokens, ns, logits) != LINATTN_OK)
                goto out;
            double d = bench_now(p) - a;
            lat[r * STEP_GEN + g] = d;
            run_t[r] += d;
            for (int i = 0; i < ns; i++)
                tokens[i] = (tokens[i] * 31 + g + 1) % vocab;
        }
    }
    bench_row r;
    model_row(&r, bm, name, isa, threads);
    char what[4096 + 96];
    snprintf(what, sizeof what, "%s (%s), %d streams of %d prompt + %d stepped tokens", bm->path,
             bm->label, ns, STEP_PROMPT, STEP_GEN);
    bench_copy(r.what, sizeof r.what, what);
    bench_stats_of_rate(run_t, runs, (double)ns * STEP_GEN, &r.st);
    bench_stats sec;
    bench_stats_of(run_t, runs, &sec);
    r.seconds = sec.median / STEP_GEN; /* one step: ns tokens */
    r.flops = (double)ns * token_flops(bm, STEP_PROMPT + STEP_GEN / 2.0);
    /* a step reads every weight it uses once (an untied embedding's share
     * of the bytes taken as its share of the parameters) and every
     * stream's cache or state */
    double state = 0;
    for (int i = 0; i < ns; i++)
        state += (double)linattn_session_state_bytes(s[i]);
    if (!fixed_state(bm->cfg)) /* a cache read at the mean context, not the last */
        state *= (STEP_PROMPT + STEP_GEN / 2.0) / (STEP_PROMPT + STEP_GEN);
    r.bytes = (double)linattn_model_weight_bytes(bm->m) * used_share(bm) + state;
    r.context = STEP_PROMPT + STEP_GEN;
    size_t nl = (size_t)runs * STEP_GEN;
    qsort(lat, nl, sizeof *lat, cmp_double);
    snprintf(r.note, sizeof r.note,
             "%d stream%s; a step p50 %.2f ms, p99 %.2f ms; worst run %.2f of the median", ns,
             ns > 1 ? "s" : "",
             lat[nl / 2] * 1e3, lat[(size_t)(0.99 * (double)(nl - 1))] * 1e3,
             r.st.min / r.st.median);
    bench_row_ratios(&r, isa, r.bytes, r.seconds);
    bench_emit(&r);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "linattn-bench: %s: %s\n", name,
                lat ? linattn_last_error() : "out of memory");
    for (int i = 0; i < ns; i++) {
        linattn_session_free(s[i]);
        free(logits[i]);
    }
    free(lat);
    return rc;
}

/* The pair row (pair_name): a's decode speed over b's. */
static int run_pair(const bench_plan *p, const bench_model *a, const bench_model *b,
                    linattn_isa isa, int threads)
{
    const bench_model *bm[2] = {a, b};
    linattn_session *s[2] = {0};
    float *logits[2] = {0};
    int steps = 2 * DECODE_STEPS(p), rc = -1, *prompt = malloc(PAIR_CTX * sizeof *prompt);
    double t[2][BENCH_MAX_SAMPLES], ratio[BENCH_MAX_SAMPLES];
    if (steps > BENCH_MAX_SAMPLES)
        steps = BENCH_MAX_SAMPLES;
    if (!prompt)
        goto out;
    bench_pin(bench_resolve_threads(threads));
    for (int i = 0; i < 2; i++) {
        const int vocab = bm[i]->cfg->vocab_size;
        for (int j = 0; j < PAIR_CTX; j++)
            prompt[j] = (j * 7919 + 13) % vocab;
        if (linattn_session_new(bm[i]->m, &s[i]) != LINATTN_OK ||
            !(logits[i] = malloc((size_t)vocab * sizeof(float))))
            goto out;
        linattn_session_set_threads(s[i], threads);
        if (linattn_session_feed(s[i], prompt, PAIR_CTX, logits[i]) != LINATTN_OK)
            goto out;
    }
    for (int k = 0; k < steps; k++)
        for (int j = 0; j < 2; j++) {
            const int i = (k + j) % 2, tok = (k * 31 + 7) % bm[i]->cfg->vocab_size;
            double t0 = bench_now(p);
            if (linattn_session_feed(s[i], &tok, 1, logits[i]) != LINATTN_OK)
                goto out;
            t[i][k] = bench_now(p) - t0;
        }
    for (int k = 0; k < steps; k++)
        ratio[k] = t[1][k] / t[0][k];
    bench_row r;
    model_row(&r, a, pair_name, isa, threads);
    snprintf(r.unit, sizeof r.unit, "x");
    char what[2 * 4096 + 96];
    snprintf(what, sizeof what, "%s over %s: decode speed after %d tokens, token by token in turn",
             a->path, b->path, PAIR_CTX);
    bench_copy(r.what, sizeof r.what, what);
    bench_stats_of(ratio, steps, &r.st);
    bench_stats sa, sb;
    bench_stats_of_rate(t[0], steps, 1.0, &sa);
    bench_stats_of_rate(t[1], steps, 1.0, &sb);
    snprintf(r.note, sizeof r.note, "%s %.1f tok/s, %s %.1f tok/s (medians)", a->label,
             sa.median, b->label, sb.median);
    r.context = PAIR_CTX;
    bench_emit(&r);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "linattn-bench: %s: %s\n", pair_name, linattn_last_error());
    for (int i = 0; i < 2; i++) {
        linattn_session_free(s[i]);
        free(logits[i]);
    }
    free(prompt);
    return rc;
}

/* The progress line of row `name` at isa and threads, and that ISA set. */
static void begin_row(const char *name, linattn_isa isa, int threads)
{
    char label[160], thr[8];
    snprintf(thr, sizeof thr, threads ? "%dt" : "auto", threads);
    snprintf(label, sizeof label, "%s %s %s", name, linattn_isa_name(isa), thr);
    bench_progress_step(label);
    linattn_set_isa(isa);
}

int suite_model(const bench_plan *p)
{
    if (load_models(p) != 0)
        return -1;
    int t[BENCH_MAX_THREADS], nt = thread_counts(p, t), failed = 0;
    size_t nctx = p->quick ? 1 : 3;
    for (size_t c = 0; c < nctx; c++) {
        long ctx = p->quick ? quick_contexts[c] : full_contexts[c];
        for (int i = 0; i < n_models; i++) {
            char a[96], b[96];
            row_name(a, sizeof a, models[i].label, "prefill", ctx);
            row_name(b, sizeof b, models[i].label, "decode", ctx);
            int far = 0; /* the decode-1M row, timed with the first context's */
            if (!p->quick && c == 0 && fixed_state(models[i].cfg)) {
                char f[96];
                row_name(f, sizeof f, models[i].label, "decode", FAR_POSITION);
                far = bench_wanted(p, f);
            }
            if (!bench_wanted(p, a) && !bench_wanted(p, b) && !far)
                continue;
            for (int ii = 0; ii < p->n_isas; ii++)
                for (int ti = 0; ti < nt && model_isa_at(p->isas[ii], c); ti++) {
                    char label[128], thr[8];
                    snprintf(thr, sizeof thr, t[ti] ? "%dt" : "auto", t[ti]);
                    snprintf(label, sizeof label, "model-%s-%ld %s %s", models[i].label, ctx,
                             linattn_isa_name(p->isas[ii]), thr);
                    bench_progress_step(label);
                    linattn_set_isa(p->isas[ii]);
                    failed |= run_model(p, &models[i], ctx, p->isas[ii], t[ti]) != 0;
                }
        }
    }
    for (size_t bi = 0; !p->quick && bi < sizeof batch_rows / sizeof batch_rows[0]; bi++) {
        const batch_row *b = &batch_rows[bi];
        int mi = batch_config(p, b->linear);
        if (!bench_wanted(p, b->name) || mi < 0)
            continue;
        for (int ii = 0; ii < p->n_isas; ii++)
            for (int ti = 0; ti < nt; ti++) {
                begin_row(b->name, p->isas[ii], t[ti]);
                failed |= run_batch(p, b, &models[mi], p->isas[ii], t[ti]) != 0;
            }
    }
    for (int i = 0; !p->quick && i < n_models; i++)
        for (int k = 0; k < N_STEP_ROWS; k++) {
            char a[96];
            step_name(a, sizeof a, step_streams[k], models[i].label);
            if (!bench_wanted(p, a))
                continue;
            for (int ii = 0; ii < p->n_isas; ii++)
                for (int ti = 0; ti < nt; ti++) {
                    begin_row(a, p->isas[ii], t[ti]);
                    failed |= run_steps(p, &models[i], step_streams[k], p->isas[ii], t[ti]) != 0;
                }
        }
    for (int ii = 0; pair_wanted(p) && ii < p->n_isas; ii++)
        for (int ti = 0; ti < nt; ti++) {
            begin_row(pair_name, p->isas[ii], t[ti]);
            failed |= run_pair(p, &models[hybrid_config(p)], &models[batch_config(p, 1)],
                               p->isas[ii], t[ti]) != 0;
        }
    free_models();
    return failed ? -1 : 0;
}
