/* cli_config.h: the CLI's [generate] and [attention] config sections (the library owns [model] and [runtime]). */
#ifndef LINATTN_CLI_CONFIG_H
#define LINATTN_CLI_CONFIG_H

#include <stdint.h>

#include "linattn.h"

#define CLI_MAX_LENGTHS 64 /* values of [attention] lengths */

/* [generate]: what `linattn generate` does by default. */
typedef struct cli_generate {
    char prompt[4096];    /* default "" */
    int max_new_tokens;   /* >= 0, default 200 */
    float temperature;    /* >= 0 (0: greedy), default 0.8 */
    int top_k;            /* >= 0 (0: off), default 40 */
    float top_p;          /* 0 < top_p <= 1, default 0.95 */
    uint64_t seed;        /* default 42 */
    float repeat_penalty; /* finite > 0, default 1 (off) */
    int repeat_last_n;    /* 0..LINATTN_MAX_REPEAT_LAST_N, default 64 */
    float min_p;          /* 0..1, default 0 (off) */
} cli_generate;

enum { CLI_VARIANT_SOFTMAX = 0, CLI_VARIANT_LINEAR = 1 };

/* [attention], for `linattn attend`. */
typedef struct cli_attention {
    int present;          /* 1: the file set a key of [attention] */
    int variant;          /* CLI_VARIANT_*, default linear */
    int causal;           /* default 1 */
    int lengths[CLI_MAX_LENGTHS]; /* valid keys per sequence, each >= 0 */
    int n_lengths;        /* 0 (default): no padding */
    float scale;          /* >= 0, 0 (default): 1/sqrt(d_k) */
    float eps;            /* >= 0, default 1e-6 */
    linattn_decay decay;  /* default none; linear and causal only */
    int window;           /* >= 0, 0 (default): off; softmax and causal only */
    char q[4096], k[4096], v[4096], out[4096]; /* .npy paths resolved from the config's
                                                * folder, "" if unset */
} cli_attention;

void cli_config_defaults(cli_generate *g, cli_attention *a);
/* linattn_config_load with the two sections: defaults, the file, checks
 * ("FILE:LINE: [section] key 'name': why", as the library's). */
linattn_status cli_config_load(const char *path, linattn_config *c, cli_generate *g,
                               cli_attention *a);
/* The same over base (a model given alone: linattn_config_load_over). */
linattn_status cli_config_load_over(const char *path, const linattn_config *base,
                                    linattn_config *c, cli_generate *g, cli_attention *a);
/* The same checks on values from flags ("command line: ..."). */
linattn_status cli_config_check(const cli_generate *g, const cli_attention *a);
const char *cli_variant_name(int variant);

#endif
