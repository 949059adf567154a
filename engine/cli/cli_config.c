/* cli_config.c: the CLI's own config sections, [generate] and [attention], parsed by the library's config reader. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_config.h"

static const char *const variant_names[] = {"softmax", "linear", NULL};

void cli_config_defaults(cli_generate *g, cli_attention *a)
{
    memset(g, 0, sizeof *g);
    g->max_new_tokens = 200;
    g->temperature = 0.8f;
    g->top_k = 40;
    g->top_p = 0.95f;
    g->seed = 42;
    g->repeat_penalty = 1.0f;
    g->repeat_last_n = 64;
    memset(a, 0, sizeof *a);
    a->variant = CLI_VARIANT_LINEAR;
    a->causal = 1;
    a->eps = 1e-6f;
}

/* The table of the two sections' keys, pointing into g and a. */
enum {
    G_PROMPT, G_MAX_NEW, G_TEMPERATURE, G_TOP_K, G_TOP_P, G_SEED, G_PENALTY, G_LAST_N, G_MIN_P,
    A_VARIANT, A_CAUSAL, A_LENGTHS, A_SCALE, A_EPS, A_DECAY, A_WINDOW, A_Q, A_K, A_V, A_OUT, N_CLI_KEYS
};

static void make_keys(linattn_config_key k[N_CLI_KEYS], cli_generate *g, cli_attention *a)
{
#define KEY(id, sec, nm, ty, fld, sz, ch, cnt) \
    k[id] = (linattn_config_key){sec, nm, ty, fld, sz, ch, cnt, 0}
    KEY(G_PROMPT, "generate", "prompt", LINATTN_KEY_STRING, g->prompt, sizeof g->prompt, NULL, NULL);
    KEY(G_MAX_NEW, "generate", "max_new_tokens", LINATTN_KEY_INT, &g->max_new_tokens, 0, NULL, NULL);
    KEY(G_TEMPERATURE, "generate", "temperature", LINATTN_KEY_FLOAT, &g->temperature, 0, NULL, NULL);
    KEY(G_TOP_K, "generate", "top_k", LINATTN_KEY_INT, &g->top_k, 0, NULL, NULL);
    KEY(G_TOP_P, "generate", "top_p", LINATTN_KEY_FLOAT, &g->top_p, 0, NULL, NULL);
    KEY(G_SEED, "generate", "seed", LINATTN_KEY_U64, &g->seed, 0, NULL, NULL);
    KEY(G_PENALTY, "generate", "repeat_penalty", LINATTN_KEY_FLOAT, &g->repeat_penalty, 0, NULL,
        NULL);
    KEY(G_LAST_N, "generate", "repeat_last_n", LINATTN_KEY_INT, &g->repeat_last_n, 0, NULL, NULL);
    KEY(G_MIN_P, "generate", "min_p", LINATTN_KEY_FLOAT, &g->min_p, 0, NULL, NULL);
    KEY(A_VARIANT, "attention", "variant", LINATTN_KEY_CHOICE, &a->variant, 0, variant_names, NULL);
    KEY(A_CAUSAL, "attention", "causal", LINATTN_KEY_BOOL, &a->causal, 0, NULL, NULL);
    KEY(A_LENGTHS, "attention", "lengths", LINATTN_KEY_INTS, a->lengths, CLI_MAX_LENGTHS, NULL,
        &a->n_lengths);
    KEY(A_SCALE, "attention", "scale", LINATTN_KEY_FLOAT, &a->scale, 0, NULL, NULL);
    KEY(A_EPS, "attention", "eps", LINATTN_KEY_FLOAT, &a->eps, 0, NULL, NULL);
    KEY(A_DECAY, "attention", "decay", LINATTN_KEY_DECAY, &a->decay, 0, NULL, NULL);
    KEY(A_WINDOW, "attention", "window", LINATTN_KEY_INT, &a->window, 0, NULL, NULL);
    KEY(A_Q, "attention", "q", LINATTN_KEY_PATH, a->q, sizeof a->q, NULL, NULL);
    KEY(A_K, "attention", "k", LINATTN_KEY_PATH, a->k, sizeof a->k, NULL, NULL);
    KEY(A_V, "attention", "v", LINATTN_KEY_PATH, a->v, sizeof a->v, NULL, NULL);
    KEY(A_OUT, "attention", "out", LINATTN_KEY_PATH, a->out, sizeof a->out, NULL, NULL);
#undef KEY
}

#define BAD(id, ...) \
    linattn_config_report(LINATTN_ERR_INVALID, path, lines ? lines[id] : 0, \
                          id < A_VARIANT ? "generate" : "attention", names[id], __VA_ARGS__)

static const char *const names[N_CLI_KEYS] = {
    "prompt", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "repeat_penalty",
    "repeat_last_n", "min_p", "variant", "causal", "lengths", "scale", "eps", "decay", "window", "q", "k",
    "v", "out"};

/* Ranges and cross-checks; lines (may be NULL) say where each key was set. */
static linattn_status check(const char *path, const int *lines, const cli_generate *g,
                            const cli_attention *a)
{
    if (g->max_new_tokens < 0)
        return BAD(G_MAX_NEW, "%d is out of range (0..%d)", g->max_new_tokens, INT_MAX);
    if (!(isfinite(g->temperature) && g->temperature >= 0))
        return BAD(G_TEMPERATURE, "expected a finite number >= 0, got %g", (double)g->temperature);
    if (g->top_k < 0)
        return BAD(G_TOP_K, "%d is out of range (0..%d)", g->top_k, INT_MAX);
    if (!(g->top_p > 0 && g->top_p <= 1))
        return BAD(G_TOP_P, "expected 0 < top_p <= 1, got %g", (double)g->top_p);
    if (!(g->repeat_penalty > 0 && isfinite(g->repeat_penalty)))
        return BAD(G_PENALTY, "expected a finite number > 0 (1: off), got %g",
                   (double)g->repeat_penalty);
    if (g->repeat_last_n < 0 || g->repeat_last_n > LINATTN_MAX_REPEAT_LAST_N)
        return BAD(G_LAST_N, "%d is out of range (0..%d)", g->repeat_last_n,
                   LINATTN_MAX_REPEAT_LAST_N);
    if (!(g->min_p >= 0 && g->min_p <= 1))
        return BAD(G_MIN_P, "expected 0 <= min_p <= 1, got %g", (double)g->min_p);
    for (int i = 0; i < a->n_lengths; i++)
        if (a->lengths[i] < 0)
            return BAD(A_LENGTHS, "length %d is negative (%d)", i, a->lengths[i]);
    if (!(isfinite(a->scale) && a->scale >= 0))
        return BAD(A_SCALE, "expected a finite number >= 0, got %g", (double)a->scale);
    if (!(isfinite(a->eps) && a->eps >= 0))
        return BAD(A_EPS, "expected a finite number >= 0, got %g", (double)a->eps);
    if (a->decay.kind != LINATTN_DECAY_NONE && (a->variant != CLI_VARIANT_LINEAR || !a->causal))
        return BAD(A_DECAY, "decay needs variant = linear and causal = true");
    if (a->window < 0)
        return BAD(A_WINDOW, "expected an integer >= 0 (0: off), got %d", a->window);
    if (a->window > 0 && (a->variant != CLI_VARIANT_SOFTMAX || !a->causal))
        return BAD(A_WINDOW, "window needs variant = softmax and causal = true");
    return LINATTN_OK;
}

linattn_status cli_config_check(const cli_generate *g, const cli_attention *a)
{
    return check("command line", NULL, g, a);
}

linattn_status cli_config_load(const char *path, linattn_config *c, cli_generate *g,
                               cli_attention *a)
{
    return cli_config_load_over(path, NULL, c, g, a);
}

linattn_status cli_config_load_over(const char *path, const linattn_config *base,
                                    linattn_config *c, cli_generate *g, cli_attention *a)
{
    cli_config_defaults(g, a);
    linattn_config_key keys[N_CLI_KEYS];
    make_keys(keys, g, a);
    /* c changes only once everything is checked */
    linattn_config *tmp = malloc(sizeof *tmp);
    if (!tmp)
        return linattn_config_report(LINATTN_ERR_NOMEM, path, 0, NULL, NULL, "out of memory");
    linattn_status st = base ? linattn_config_load_over(path, base, tmp, keys, N_CLI_KEYS)
                             : linattn_config_load_keys(path, tmp, keys, N_CLI_KEYS);
    if (st == LINATTN_OK) {
        int lines[N_CLI_KEYS];
        for (int i = 0; i < N_CLI_KEYS; i++)
            lines[i] = keys[i].line;
        for (int i = A_VARIANT; i < N_CLI_KEYS; i++)
            a->present |= lines[i] != 0;
        st = check(path, lines, g, a);
    }
    if (st == LINATTN_OK)
        *c = *tmp;
    free(tmp);
    return st;
}

const char *cli_variant_name(int variant)
{
    return variant == CLI_VARIANT_SOFTMAX ? "softmax" : "linear";
}
