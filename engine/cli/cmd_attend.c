/* cmd_attend.c: `linattn attend`: one attention operator call on .npy tensors, from flags or a config's [attention]. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "../file.h"
#include "cli.h"

static const char usage[] =
    "usage: linattn attend [CONFIG] --variant softmax|linear [--causal] [--lengths N,N...]\n"
    "                      [--scale S] [--eps E] [--decay none|retnet|G,G...] [--window W]\n"
    "                      --q Q.npy --k K.npy --v V.npy --out OUT.npy [--isa ISA] [--threads N]\n"
    "\n"
    "Runs one attention operator on (B, H, L, D) fp32 tensors stored as .npy\n"
    "(<f4 or <f8, C order; <f8 is converted) and writes OUT.npy (<f4), shape\n"
    "(B, H, Lq, d_v). q is (B, H, Lq, d_k), k (B, G, Lk, d_k), v (B, G, Lk, d_v)\n"
    "with G = H, or G dividing H: a k/v head shared by H/G query heads\n"
    "(G = 1: multi-query, else grouped-query attention).\n"
    "\n"
    "CONFIG is an INI file whose [attention] section sets variant, causal,\n"
    "lengths, scale, eps, decay, window, q, k, v, out (paths relative to the file's folder);\n"
    "its [runtime] section sets isa and threads. Flags override the file.\n"
    "Without CONFIG, --variant, --q, --k, --v and --out are required.\n"
    "\n"
    "  --variant V     softmax or linear (phi = elu + 1)\n"
    "  --causal        query i sees keys j <= i + Lk - Lq (bottom-right aligned)\n"
    "  --no-causal     every valid key (overrides a config's causal = true)\n"
    "  --lengths LIST  valid keys per sequence, one per batch entry (default: all)\n"
    "  --scale S       softmax score scale (default 1/sqrt(d_k))\n"
    "  --eps E         linear denominator epsilon (default 1e-6)\n"
    "  --decay D       causal linear only: per-head decay, S_t = g S_{t-1} + phi(k) v^T;\n"
    "                  none (default), retnet (g_h = 1 - 2^(-5-h)) or one value in\n"
    "                  (0, 1] per head, comma-separated\n"
    "  --window W      causal softmax only: query i sees keys p - W < j <= p,\n"
    "                  p = i + Lk - Lq (a sliding window; 0, the default: off)\n"
    "  --q, --k, --v, --out FILE   the tensors\n"
    "  --isa ISA       auto|scalar|avx2|avx512|neon (overrides LINATTN_ISA and the config)\n"
    "  --threads N     OpenMP threads (0: default)\n"
    "  -h, --help      this text\n"
    "\n"
    "A row with no visible key outputs zeros. On any error nothing is written.\n"
    "OUT.npy is written whole or not at all (a temporary file renamed over it);\n"
    "a symlink is followed; a folder, device, FIFO or socket is refused.\n";

/* What the call needs, from the config then the flags. */
typedef struct attend_args {
    const char *variant;
    int causal;
    int *lengths;
    int n_lengths;
    float scale, eps;
    linattn_decay decay;
    int window;
    const char *path[4]; /* q, k, v, out */
    const char *isa;        /* --isa */
    linattn_isa config_isa; /* the config's (AUTO: none) */
    int threads;
} attend_args;

static const char *const tensor_names[4] = {"q", "k", "v", "out"};

/* "5,3" into a new array; the CLI's own copy so that any count works. */
static int parse_lengths(const char *text, int **out, int *n)
{
    int cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    int *v = malloc((size_t)cap * sizeof(int));
    if (!v)
        return cli_fail("attend", "out of memory");
    const char *p = text;
    int count = 0;
    for (;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > 0x7fffffff || (*end && *end != ',')) {
            free(v);
            return cli_fail("attend", "--lengths: expected non-negative integers like 5,3, got '%s'",
                            text);
        }
        v[count++] = (int)x;
        if (!*end)
            break;
        p = end + 1;
    }
    *out = v;
    *n = count;
    return 0;
}

/* The config's [attention] and [runtime] values as defaults (att holds
 * the paths a points at). */
static int from_config(const char *path, linattn_config *cfg, cli_attention *att, attend_args *a,
                       int **owned)
{
    linattn_status st = cli_load_config(path, cfg, NULL, att);
    if (st != LINATTN_OK)
        return cli_fail_status("attend", st);
    if (!att->present)
        return cli_fail("attend", "%s: no [attention] section", path);
    a->variant = cli_variant_name(att->variant);
    a->causal = att->causal;
    if (att->n_lengths > 0) {
        *owned = malloc((size_t)att->n_lengths * sizeof(int));
        if (!*owned)
            return cli_fail("attend", "out of memory");
        memcpy(*owned, att->lengths, (size_t)att->n_lengths * sizeof(int));
        a->lengths = *owned;
        a->n_lengths = att->n_lengths;
    }
    a->scale = att->scale;
    a->eps = att->eps;
    a->decay = att->decay;
    a->window = att->window;
    const char *paths[4] = {att->q, att->k, att->v, att->out};
    for (int i = 0; i < 4; i++)
        a->path[i] = paths[i][0] ? paths[i] : NULL;
    a->config_isa = cfg->isa;
    a->threads = cfg->threads;
    return 0;
}

/* Shapes: q (B,H,Lq,dk), k (B,H,Lk,dk), v (B,H,Lk,dv). */
static int check_shapes(const attend_args *a, const linattn_npy t[3])
{
    char s0[128], s1[128];
    for (int i = 0; i < 3; i++) {
        if (t[i].ndim != 4)
            return cli_fail("attend", "%s: expected a 4-D (B, H, L, D) array, got shape %s",
                            a->path[i], linattn_npy_shape_str(&t[i], s0, sizeof s0));
        for (int j = 0; j < 4; j++)
            if (t[i].shape[j] == 0 || t[i].shape[j] > 0x7fffffff)
                return cli_fail("attend", "%s: shape %s has a dimension that is 0 or too large",
                                a->path[i], linattn_npy_shape_str(&t[i], s0, sizeof s0));
    }
    for (int i = 1; i < 3; i++)
        if (t[i].shape[0] != t[0].shape[0])
            return cli_fail("attend", "%s has shape %s but %s has %s: the batch must match",
                            a->path[i], linattn_npy_shape_str(&t[i], s0, sizeof s0), a->path[0],
                            linattn_npy_shape_str(&t[0], s1, sizeof s1));
    /* k and v: H heads, or G dividing H shared by groups of query heads
     * (1: multi-query, else grouped-query) */
    if (t[2].shape[1] != t[1].shape[1])
        return cli_fail("attend", "%s has %zu heads but %s has %zu: k and v must match",
                        a->path[2], t[2].shape[1], a->path[1], t[1].shape[1]);
    if (t[0].shape[1] % t[1].shape[1] != 0)
        return cli_fail("attend",
                        "%s has %zu heads, which do not divide the %zu query heads of %s (k/v "
                        "heads: H, or G dividing H for grouped-query attention)",
                        a->path[1], t[1].shape[1], t[0].shape[1], a->path[0]);
    if (t[1].shape[3] != t[0].shape[3])
        return cli_fail("attend", "%s has d_k = %zu but %s has d_k = %zu", a->path[1],
                        t[1].shape[3], a->path[0], t[0].shape[3]);
    if (t[2].shape[2] != t[1].shape[2])
        return cli_fail("attend", "%s has %zu keys (L) but %s has %zu", a->path[2], t[2].shape[2],
                        a->path[1], t[1].shape[2]);
    if (a->lengths) {
        if ((size_t)a->n_lengths != t[0].shape[0])
            return cli_fail("attend", "lengths has %d values but the batch is %zu", a->n_lengths,
                            t[0].shape[0]);
        for (int b = 0; b < a->n_lengths; b++)
            if ((size_t)a->lengths[b] > t[1].shape[2])
                return cli_fail("attend", "lengths[%d] = %d exceeds the %zu keys of %s", b,
                                a->lengths[b], t[1].shape[2], a->path[1]);
    }
    return 0;
}

/* Flags and config values, merged, through the config's own checks: one
 * rule for "--scale -1" and "scale = -1". */
static int validate(const attend_args *a)
{
    cli_generate g;
    cli_attention *v = malloc(sizeof *v);
    if (!v)
        return cli_fail("attend", "out of memory");
    cli_config_defaults(&g, v);
    if (strcmp(a->variant, "softmax") != 0 && strcmp(a->variant, "linear") != 0) {
        free(v);
        return cli_fail("attend", "--variant: expected softmax or linear, got '%s'", a->variant);
    }
    v->variant = !strcmp(a->variant, "softmax") ? CLI_VARIANT_SOFTMAX : CLI_VARIANT_LINEAR;
    v->causal = a->causal;
    v->scale = a->scale;
    v->eps = a->eps;
    v->decay = a->decay;
    v->window = a->window;
    /* the CLI takes any number of lengths; the checks look at a config's */
    v->n_lengths = a->n_lengths <= CLI_MAX_LENGTHS ? a->n_lengths : 0;
    if (v->n_lengths)
        memcpy(v->lengths, a->lengths, (size_t)v->n_lengths * sizeof(int));
    linattn_status st = cli_config_check(&g, v);
    free(v);
    if (st == LINATTN_OK && (a->threads < 0 || a->threads > LINATTN_MAX_THREADS))
        return cli_fail("attend", "threads %d is out of range (0..%d)", a->threads,
                        LINATTN_MAX_THREADS);
    return st == LINATTN_OK ? 0 : cli_fail_status("attend", st);
}

static int run(const attend_args *a)
{
    int softmax = !strcmp(a->variant, "softmax");
    for (int i = 0; i < 4; i++)
        if (!a->path[i])
            return cli_fail("attend", "no --%s given", tensor_names[i]);
    if (cli_choose_isa("attend", a->isa, a->config_isa))
        return 1;

    /* a path that cannot be written fails before the work */
    linattn_status chk = safe_file_check(a->path[3], ".npy output");
    if (chk != LINATTN_OK)
        return cli_fail_status("attend", chk);

    linattn_npy t[3];
    memset(t, 0, sizeof t);
    int rc = 0;
    for (int i = 0; i < 3 && !rc; i++) {
        linattn_status st = linattn_npy_read(a->path[i], &t[i]);
        if (st != LINATTN_OK)
            rc = cli_fail_status("attend", st);
    }
    if (!rc)
        rc = check_shapes(a, t);
    float *out = NULL, *decay = NULL;
    if (!rc && a->decay.kind != LINATTN_DECAY_NONE) {
        size_t H = t[0].shape[1];
        if (!(decay = malloc(H * sizeof *decay)))
            rc = cli_fail("attend", "out of memory");
        else if (a->decay.kind == LINATTN_DECAY_LIST && (size_t)a->decay.n != H)
            rc = cli_fail("attend", "decay has %d values but %s has %zu heads: give one per head",
                          a->decay.n, a->path[0], H);
        else if (linattn_decay_values(&a->decay, (int)H, decay, NULL) != LINATTN_OK)
            rc = cli_fail_status("attend", LINATTN_ERR_INVALID);
    }
    if (!rc) {
        linattn_attention_desc d;
        linattn_attention_desc_init(&d);
        d.batch = (int)t[0].shape[0];
        d.heads = (int)t[0].shape[1];
        d.kv_heads = (int)t[1].shape[1];
        d.len_q = (int)t[0].shape[2];
        d.len_k = (int)t[1].shape[2];
        d.d_k = (int)t[0].shape[3];
        d.d_v = (int)t[2].shape[3];
        d.scale = a->scale;
        d.causal = a->causal;
        d.lengths = a->lengths;
        d.eps = a->eps;
        d.decay = decay;
        d.window = a->window;
        d.threads = a->threads;
        size_t shape[4] = {t[0].shape[0], t[0].shape[1], t[0].shape[2], t[2].shape[3]};
        size_t n = shape[0] * shape[1] * shape[2] * shape[3];
        out = malloc(n * sizeof(float));
        if (!out) {
            rc = cli_fail("attend", "cannot allocate the output (%zu floats)", n);
        } else {
            linattn_status st = softmax
                                    ? linattn_attention_softmax(&d, t[0].data, t[1].data,
                                                                t[2].data, out)
                                    : linattn_attention_linear(&d, t[0].data, t[1].data,
                                                               t[2].data, out);
            if (st == LINATTN_OK)
                st = linattn_npy_write(a->path[3], out, 4, shape);
            if (st != LINATTN_OK)
                rc = cli_fail_status("attend", st);
        }
    }
    free(out);
    free(decay);
    for (int i = 0; i < 3; i++)
        linattn_npy_free(&t[i]);
    return rc;
}

int cmd_attend(int argc, char **argv)
{
    enum { O_VARIANT = 256, O_CAUSAL, O_NO_CAUSAL, O_LENGTHS, O_SCALE, O_EPS, O_DECAY, O_Q, O_K,
           O_V, O_OUT, O_ISA, O_THREADS, O_WINDOW };
    static const struct option opts[] = {
        {"variant", required_argument, 0, O_VARIANT},
        {"causal", no_argument, 0, O_CAUSAL},
        {"no-causal", no_argument, 0, O_NO_CAUSAL},
        {"lengths", required_argument, 0, O_LENGTHS},
        {"scale", required_argument, 0, O_SCALE},
        {"eps", required_argument, 0, O_EPS},
        {"decay", required_argument, 0, O_DECAY},
        {"window", required_argument, 0, O_WINDOW},
        {"q", required_argument, 0, O_Q},
        {"k", required_argument, 0, O_K},
        {"v", required_argument, 0, O_V},
        {"out", required_argument, 0, O_OUT},
        {"isa", required_argument, 0, O_ISA},
        {"threads", required_argument, 0, O_THREADS},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    /* Flags first into `flags`, applied over the config's values after. */
    attend_args flags = {0}, a = {0};
    int set_causal = 0, set_scale = 0, set_eps = 0, set_threads = 0, set_decay = 0;
    int set_window = 0;
    int *flag_lengths = NULL, *cfg_lengths = NULL;
    int rc = 0, c;
    opterr = 0;
    optind = 1;
    while (!rc && (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_VARIANT: flags.variant = optarg; break;
        case O_CAUSAL: flags.causal = 1, set_causal = 1; break;
        case O_NO_CAUSAL: flags.causal = 0, set_causal = 1; break;
        case O_LENGTHS:
            free(flag_lengths);
            flag_lengths = NULL;
            rc = parse_lengths(optarg, &flag_lengths, &flags.n_lengths);
            flags.lengths = flag_lengths;
            break;
        case O_SCALE:
            rc = cli_parse_float("attend", "--scale", optarg, -HUGE_VAL, HUGE_VAL, &flags.scale);
            set_scale = 1;
            break;
        case O_EPS:
            rc = cli_parse_float("attend", "--eps", optarg, -HUGE_VAL, HUGE_VAL, &flags.eps);
            set_eps = 1;
            break;
        case O_DECAY:
            set_decay = 1;
            if (linattn_decay_parse(optarg, &flags.decay) != LINATTN_OK)
                rc = cli_fail("attend", "--decay: %s", linattn_last_error());
            break;
        case O_WINDOW: {
            long w = 0;
            rc = cli_parse_long("attend", "--window", optarg, 0, 0x7fffffff, &w);
            flags.window = (int)w;
            set_window = 1;
            break;
        }
        case O_Q: flags.path[0] = optarg; break;
        case O_K: flags.path[1] = optarg; break;
        case O_V: flags.path[2] = optarg; break;
        case O_OUT: flags.path[3] = optarg; break;
        case O_ISA: flags.isa = optarg; break;
        case O_THREADS: {
            long t = 0;
            rc = cli_parse_long("attend", "--threads", optarg, 0, LINATTN_MAX_THREADS, &t);
            flags.threads = (int)t;
            set_threads = 1;
            break;
        }
        case 'h': fputs(usage, stdout); free(flag_lengths); return 0;
        case ':': rc = cli_fail("attend", "option '%s' needs a value", argv[optind - 1]); break;
        default:
            rc = cli_fail("attend", "unknown option '%s' (try 'linattn attend --help')",
                          argv[optind - 1]);
        }
    }
    if (!rc && argc - optind > 1)
        rc = cli_fail("attend", "unexpected argument '%s' (at most one CONFIG)", argv[optind + 1]);

    linattn_config *cfg = NULL;
    cli_attention *att = NULL;
    a.eps = 1e-6f;
    if (!rc && optind < argc) {
        cfg = malloc(sizeof *cfg);
        att = malloc(sizeof *att);
        rc = cfg && att ? from_config(argv[optind], cfg, att, &a, &cfg_lengths)
                        : cli_fail("attend", "out of memory");
    }
    if (!rc) {
        if (flags.variant)
            a.variant = flags.variant;
        if (set_causal)
            a.causal = flags.causal;
        if (flags.lengths) {
            a.lengths = flags.lengths;
            a.n_lengths = flags.n_lengths;
        }
        if (set_scale)
            a.scale = flags.scale;
        if (set_eps)
            a.eps = flags.eps;
        if (set_decay)
            a.decay = flags.decay;
        if (set_window)
            a.window = flags.window;
        for (int i = 0; i < 4; i++)
            if (flags.path[i])
                a.path[i] = flags.path[i];
        a.isa = flags.isa;
        if (set_threads)
            a.threads = flags.threads;
        if (a.variant && set_scale && !strcmp(a.variant, "linear"))
            cli_warn("attend", "--scale applies to softmax attention; the linear variant "
                               "ignores it");
        if (a.variant && set_eps && !strcmp(a.variant, "softmax"))
            cli_warn("attend", "--eps applies to linear attention; the softmax variant "
                               "ignores it");
        if (!a.variant)
            rc = cli_fail("attend", "no --variant given (softmax or linear)");
        else if (!(rc = validate(&a)))
            rc = run(&a);
    }
    free(cfg);
    free(att);
    free(cfg_lengths);
    free(flag_lengths);
    return rc;
}
