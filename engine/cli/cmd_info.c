/* cmd_info.c: `linattn info`: version, compiler, CPU features, ISA and why, threads, SLEEF. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: linattn info [CONFIG] [--isa ISA] [--threads N]\n"
    "\n"
    "Prints the version, compiler, detected CPU features, the ISA the kernels\n"
    "would use and why (auto, env LINATTN_ISA, config, flag), OpenMP threads and\n"
    "SLEEF. With CONFIG, also a model summary: parameters, the weights file with\n"
    "its dtypes and bytes as stored and as used (weights_dtype), weight bytes, and\n"
    "the per-stream state (linear) or KV-cache bytes (softmax).\n"
    "\n"
    "  --isa ISA    auto|scalar|avx2|avx512|neon (overrides the config and LINATTN_ISA)\n"
    "  --threads N  threads (overrides the config)\n"
    "  -h, --help  this text\n";

/* The option getopt rejected: "-z" of a cluster like "-zq" (optopt, when it is
 * no option of ours), else the argument it stopped at ("--bogus", "--help=x"). */
static const char *bad_option(char **argv, const char *known, char buf[3])
{
    if (optopt > 0 && optopt < 256 && !strchr(known, optopt)) {
        buf[0] = '-';
        buf[1] = (char)optopt;
        buf[2] = '\0';
        return buf;
    }
    return argv[optind - 1];
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        {"isa", required_argument, 0, 'i'},
        {"threads", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *isa_flag = NULL, *threads_flag = NULL;
    int c;
    char opt_buf[3];
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': isa_flag = optarg; break;
        case 't': threads_flag = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case ':': return cli_fail("info", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_fail("info", "unknown option '%s' (try 'linattn info --help')",
                            bad_option(argv, "h", opt_buf));
        }
    }
    if (optind + 1 < argc)
        return cli_fail("info", "unexpected argument '%s'", argv[optind + 1]);
    long threads = -1;
    if (threads_flag && cli_parse_long("info", "--threads", threads_flag, 0, 1024, &threads))
        return 1;
    if (threads_flag && optind >= argc)
        cli_warn("info", "--threads applies to a config's model; without CONFIG it is ignored");
    /* With a config: its sizes come from the shape; a weights file is
     * loaded too (its tensors checked), random weights are not made. */
    linattn_config *cfg = NULL;
    linattn_model *model = NULL; /* a weights file's model (not random weights) */
    linattn_tokenizer *tokz = NULL;
    linattn_model_sizes sizes;
    if (optind < argc) {
        if (!(cfg = malloc(sizeof *cfg)))
            return cli_fail("info", "out of memory");
        linattn_status cst = cli_load_config(argv[optind], cfg, NULL, NULL);
        int failed = cst != LINATTN_OK ? cli_fail_status("info", cst)
                                       : cli_choose_isa("info", isa_flag, cfg->isa);
        if (!failed && threads >= 0)
            cfg->threads = (int)threads;
        if (!failed && (cst = linattn_config_sizes(cfg, &sizes)) != LINATTN_OK)
            failed = cli_fail_status("info", cst);
        if (!failed && strncmp(cfg->weights, "random:", 7) != 0 &&
            (cst = linattn_model_from_config(cfg, &model)) != LINATTN_OK)
            failed = cli_fail_status("info", cst);
        /* the tokenizer alone (random weights build no model) */
        if (!failed && (cst = linattn_tokenizer_load(cfg->tokenizer, &tokz)) != LINATTN_OK)
            failed = cli_fail("info", "%s: [model] key 'tokenizer': %s", cfg->path,
                              linattn_last_error());
        if (failed) {
            linattn_model_free(model);
            linattn_tokenizer_free(tokz);
            free(cfg);
            return 1;
        }
    } else if (cli_choose_isa("info", isa_flag, LINATTN_ISA_AUTO)) {
        return 1;
    }

    linattn_isa isa;
    linattn_isa_source source;
    linattn_status st = linattn_get_isa(&isa, &source);
    if (st != LINATTN_OK) {
        linattn_model_free(model);
        linattn_tokenizer_free(tokz);
        free(cfg);
        return cli_fail_status("isa", st);
    }

    printf("linattn %s\n", linattn_version());
#if defined(__clang__)
    printf("compiler: clang %s\n", __clang_version__);
#elif defined(__GNUC__)
    printf("compiler: gcc %d.%d.%d\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#endif
#if defined(__x86_64__)
    printf("arch: x86_64\n");
#elif defined(__aarch64__)
    printf("arch: aarch64\n");
#endif
    printf("cpu features: %s\n", linattn_cpu_features_str());
    printf("isa: %s (%s)\n", linattn_isa_name(isa), linattn_isa_source_name(source));
    printf("openmp: %s, %d threads\n", linattn_has_openmp() ? "yes" : "no", linattn_max_threads());
    printf("sleef: %s\n", linattn_sleef_version());
    if (cfg) {
        const linattn_config *c = cfg;
        int linear = c->attention == LINATTN_ATTN_LINEAR;
        /* constant memory: linear, or any window (softmax's ring, hybrid) */
        int fixed = linear || c->window > 0;
        static const char *const kinds[] = {"softmax", "linear", "hybrid"};
        printf("model: %s\n", c->path);
        printf("  attention: %s, %d layers, d_model %d, %d heads, d_ff %d, vocab %d\n",
               kinds[c->attention], c->n_layers, c->d_model, c->n_heads, c->d_ff,
               c->vocab_size);
        if (c->window > 0)
            printf("  window: %d tokens of softmax%s\n", c->window,
                   c->attention == LINATTN_ATTN_HYBRID ? ", a decayed linear tail beyond" : "");
        if (c->attention == LINATTN_ATTN_HYBRID)
            printf("  feature dim: %d (%s)\n",
                   c->feature_dim > 0 ? c->feature_dim : c->d_model / c->n_heads,
                   c->feature_dim > 0 ? "learned maps wq_phi, wk_phi" : "phi on q and k");
        float *g = c->attention != LINATTN_ATTN_SOFTMAX && c->decay.kind != LINATTN_DECAY_NONE
                       ? malloc((size_t)c->n_heads * sizeof *g)
                       : NULL;
        if (g && linattn_decay_values(&c->decay, c->n_heads, g, NULL) == LINATTN_OK) {
            /* a head's horizon: tokens until a key's weight falls below 1/e */
            const int shown = c->n_heads < 16 ? c->n_heads : 16;
            printf("  decay per head:");
            for (int h = 0; h < shown; h++)
                printf("%s%.7g", h ? "," : " ", (double)g[h]);
            printf("%s; horizons", shown < c->n_heads ? ",..." : "");
            for (int h = 0; h < shown; h++)
                if (g[h] < 1.0f)
                    printf(" %.0f", -1.0 / log((double)g[h]));
                else
                    printf(" inf");
            printf("%s tokens\n", shown < c->n_heads ? " ..." : "");
        }
        free(g);
        printf("  tokenizer: %s%s%s%s, vocab %d", linattn_tokenizer_name(tokz),
               linattn_tokenizer_path(tokz)[0] ? " (" : "", linattn_tokenizer_path(tokz),
               linattn_tokenizer_path(tokz)[0] ? ")" : "", linattn_tokenizer_vocab(tokz));
        if (linattn_tokenizer_bos(tokz) >= 0)
            printf(", bos %d%s", linattn_tokenizer_bos(tokz),
                   linattn_tokenizer_adds_bos(tokz) ? " (starts a text)" : "");
        if (linattn_tokenizer_eos(tokz) >= 0)
            printf(", eos %d", linattn_tokenizer_eos(tokz));
        printf("\n");
        linattn_tokenizer_free(tokz);
        printf("  parameters: %llu\n", (unsigned long long)sizes.params);
        const char *keep = c->weights_dtype == LINATTN_WEIGHTS_F32 ? "f32" : "stored";
        if (model)
            printf("  weights: %s, %s, %zu bytes as stored, %zu as used (weights_dtype %s)\n",
                   c->weights, linattn_model_weight_dtypes(model),
                   linattn_model_weight_bytes_stored(model), linattn_model_weight_bytes(model),
                   keep);
        else
            printf("  weights: %s, F32, made at load\n", c->weights);
        printf("  weight bytes: %zu\n", model ? linattn_model_weight_bytes(model)
                                               : sizes.weight_bytes);
        if (fixed && c->positions == LINATTN_POS_LEARNED)
            printf("  state bytes per stream: %zu (fixed); token limit %d (learned position "
                   "table)\n", sizes.state_bytes, c->max_seq_len);
        else if (fixed)
            printf("  state bytes per stream: %zu (fixed, whatever the length); no token "
                   "limit\n", sizes.state_bytes);
        else
            printf("  kv-cache bytes: %zu per token, %zu at max_seq_len %d (the token limit; "
                   "kv_cache %s)\n", sizes.state_bytes,
                   sizes.state_bytes * (size_t)c->max_seq_len, c->max_seq_len,
                   c->kv_cache == LINATTN_KV_F16 ? "f16" : "f32");
        if (c->threads > 0)
            printf("  threads: %d\n", c->threads);
        else
            printf("  threads: auto (up to %d, fewer while other processes hold cores)\n",
                   linattn_max_threads());
        linattn_model_free(model);
        free(cfg);
    }
    return 0;
}
