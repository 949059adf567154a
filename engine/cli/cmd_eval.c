/* cmd_eval.c: `linattn eval`: bits per byte of a text, overall and by position, at prefill speed. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../file.h"
#include "cli.h"

static const char usage[] =
    "usage: linattn eval CONFIG --text FILE [--block N] [--window N] [--threads N]\n"
    "                    [--isa ISA] [--json FILE]\n"
    "\n"
    "Feeds FILE byte by byte to the model CONFIG describes and reports how well\n"
    "it predicts each next byte: cross-entropy in bits per byte, overall and\n"
    "for each block of N bytes of the file, and the tokens per second of the\n"
    "feeding (prefill speed: all logits of a slice come from one pass).\n"
    "\n"
    "By default the file is one stream: a linear, hybrid or windowed softmax\n"
    "model (without learned positions) reads any length at constant memory; a\n"
    "softmax model without a window (or learned positions) reads at most\n"
    "max_seq_len bytes. With --window N (not the model's window key) the\n"
    "file is cut into fresh streams of N bytes, each starting from an empty\n"
    "state at position 0 (the last byte of a window is predicted from it too,\n"
    "so every byte after the first is scored once in both modes).\n"
    "\n"
    "  --text FILE    the text (a regular file; at most 1 GiB)\n"
    "  --block N      bytes per reported block (default 4096)\n"
    "  --window N     fresh streams of N bytes instead of one stream\n"
    "  --threads N    threads (0 = auto: the cores other processes leave free)\n"
    "  --isa ISA      auto|scalar|avx2|avx512|neon\n"
    "  --json FILE    also write the figures as JSON:\n"
    "                 {\"bits_per_byte\": X, \"bytes\": N, \"tokens_per_second\": R,\n"
    "                  \"blocks\": [{\"offset\": O, \"bytes\": N, \"bits_per_byte\": X}, ...]}\n"
    "  -h, --help     this text\n"
    "\n"
    "Block k covers bytes [k N, (k+1) N) of the file; 'bytes' counts the bytes\n"
    "scored in it (byte 0 of the file has no prediction).\n"
    "\n"
    "With a model's tokenizer other than bytes ([model] tokenizer), the text is\n"
    "encoded (bos first when the tokenizer adds one) and each token after the\n"
    "first is scored: bits per byte are its bits over the bytes it decodes to,\n"
    "a token counts in the block where its bytes start, and --window counts\n"
    "tokens.\n";

#define MAX_TEXT_BYTES (1ull << 30)
/* Tokens per feed: the logits of a slice (slice x vocab floats) are held at once. */
#define SLICE 1024

enum { OPT_TEXT = 256, OPT_BLOCK, OPT_WINDOW, OPT_THREADS, OPT_ISA, OPT_JSON };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* -log2 p(target) from one row of logits: log-sum-exp in double. */
static double bits_of(const float *logits, int vocab, int target)
{
    double mx = -INFINITY;
    for (int i = 0; i < vocab; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)logits[i] - mx);
    return (log(sum) + mx - (double)logits[target]) / log(2.0);
}

/* Bits of every prediction: bits[i] for byte i + 1. */
typedef struct eval_run {
    linattn_session *sess;
    const int *tokens;
    size_t n;        /* tokens in the text */
    size_t window;   /* 0: one stream */
    int vocab;
    float *logits;   /* [SLICE][vocab] */
    double *bits;    /* [n - 1] */
} eval_run;

static int score(eval_run *r)
{
    const int tty = isatty(STDERR_FILENO);
    const size_t span = r->window ? r->window : r->n; /* tokens of one stream */
    size_t done = 0, shown = 0;
    while (done < r->n - 1) {
        /* a new stream starts at every multiple of span */
        if (done % span == 0)
            linattn_session_reset(r->sess);
        size_t end = done - done % span + span; /* the stream's end */
        if (end > r->n - 1)
            end = r->n - 1; /* the last token has nothing to predict */
        size_t c = end - done < SLICE ? end - done : SLICE;
        linattn_status st = linattn_session_feed_all(r->sess, r->tokens + done, (int)c, r->logits);
        if (st != LINATTN_OK) {
            if (tty)
                fputs("\r\033[K", stderr);
            return cli_fail_status("eval", st);
        }
        for (size_t i = 0; i < c; i++) {
            const float *row = r->logits + i * (size_t)r->vocab;
            double b = bits_of(row, r->vocab, r->tokens[done + i + 1]);
            if (!isfinite(b)) { /* a NaN or inf logit: no figure to report, not "nan" */
                int at = 0;
                while (at + 1 < r->vocab && isfinite(row[at]))
                    at++;
                if (tty)
                    fputs("\r\033[K", stderr);
                return cli_fail("eval", "the model's logits after token %zu of the text (0-based) "
                                        "are not finite (logit %d is %g): no bits per byte",
                                done + i, at, (double)row[at]);
            }
            r->bits[done + i] = b;
        }
        done += c;
        if (tty && (done - shown >= 16384 || done == r->n - 1)) {
            fprintf(stderr, "\reval %zu/%zu bytes", done + 1, r->n);
            shown = done;
        }
    }
    if (tty && r->n > 16384)
        fputs("\r\033[K", stderr);
    return 0;
}

/* Blocks of the file by the offset of the predicted byte. */
typedef struct block_stat {
    size_t offset, bytes;
    double bits;
} block_stat;

static int write_json(const char *path, double bpb, size_t bytes, double tps,
                      const block_stat *blocks, size_t nblocks)
{
    /* a JSON number is finite: score() refused non-finite bits, this holds it */
    int finite = isfinite(bpb) && isfinite(tps);
    for (size_t b = 0; b < nblocks; b++)
        finite = finite && isfinite(blocks[b].bits);
    if (!finite)
        return cli_fail("eval", "a figure for the JSON output is not finite");
    size_t cap = 256 + nblocks * 96, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return cli_fail("eval", "out of memory");
    len += (size_t)snprintf(buf + len, cap - len,
                            "{\"bits_per_byte\": %.6f, \"bytes\": %zu, \"tokens_per_second\": %.1f, "
                            "\"blocks\": [",
                            bpb, bytes, tps);
    for (size_t b = 0; b < nblocks; b++)
        len += (size_t)snprintf(buf + len, cap - len,
                                "%s\n  {\"offset\": %zu, \"bytes\": %zu, \"bits_per_byte\": %.6f}",
                                b ? "," : "", blocks[b].offset, blocks[b].bytes,
                                blocks[b].bytes ? blocks[b].bits / (double)blocks[b].bytes : 0.0);
    len += (size_t)snprintf(buf + len, cap - len, "%s]}\n", nblocks ? "\n" : "");
    linattn_status st = cli_write_file(path, "the JSON output", buf, len);
    int rc = st == LINATTN_OK ? 0 : cli_fail_status("json", st);
    free(buf);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    static const struct option opts[] = {
        {"text", required_argument, 0, OPT_TEXT},
        {"block", required_argument, 0, OPT_BLOCK},
        {"window", required_argument, 0, OPT_WINDOW},
        {"threads", required_argument, 0, OPT_THREADS},
        {"isa", required_argument, 0, OPT_ISA},
        {"json", required_argument, 0, OPT_JSON},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *text_path = NULL, *isa = NULL, *json = NULL;
    long block = 4096, window = 0, threads = -1;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_TEXT: text_path = optarg; break;
        case OPT_BLOCK: if (cli_parse_long("eval", "--block", optarg, 1, LONG_MAX, &block)) return 1; break;
        case OPT_WINDOW: if (cli_parse_long("eval", "--window", optarg, 1, INT_MAX, &window)) return 1; break;
        case OPT_THREADS: if (cli_parse_long("eval", "--threads", optarg, 0, 1024, &threads)) return 1; break;
        case OPT_ISA: isa = optarg; break;
        case OPT_JSON: json = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case ':': return cli_fail("eval", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_fail("eval", "unknown option '%s' (try 'linattn eval --help')",
                            argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_fail("eval", "no config file given (usage: linattn eval CONFIG --text FILE)");
    if (optind + 1 < argc)
        return cli_fail("eval", "unexpected argument '%s'", argv[optind + 1]);
    if (!text_path)
        return cli_fail("eval", "no --text FILE given");
    if (json && safe_file_check(json, "the JSON output") != LINATTN_OK)
        return cli_fail_status("json", LINATTN_ERR_IO);
    const char *config_path = argv[optind];

    int rc = 1;
    linattn_config *cfg = malloc(sizeof *cfg);
    unsigned char *text = NULL;
    int *tokens = NULL;
    size_t *offsets = NULL, *lens = NULL; /* a non-byte tokenizer's tokens in the file */
    linattn_model *model = NULL;
    eval_run r = {0};
    block_stat *blocks = NULL;
    if (!cfg) {
        cli_fail("eval", "out of memory");
        goto out;
    }
    linattn_status st = cli_load_config(config_path, cfg, NULL, NULL);
    if (st != LINATTN_OK) {
        cli_fail_status("config", st);
        goto out;
    }
    if (cli_choose_isa("eval", isa, cfg->isa))
        goto out;
    if (threads >= 0)
        cfg->threads = (int)threads;
    if (!linattn_config_has_model(cfg)) {
        cli_fail("eval", "%s: no [model] section", config_path);
        goto out;
    }

    size_t n = 0;
    if ((st = safe_read_all(text_path, "the text", MAX_TEXT_BYTES, (char **)&text, &n)) !=
        LINATTN_OK) {
        cli_fail_status("eval", st);
        goto out;
    }
    if (n < 2) {
        cli_fail("eval", "%s: %s; at least 2 bytes are needed (one to predict)", text_path,
                 n ? "1 byte" : "empty");
        goto out;
    }
    if ((st = linattn_model_from_config(cfg, &model)) != LINATTN_OK ||
        (st = linattn_session_new(model, &r.sess)) != LINATTN_OK) {
        cli_fail_status("eval", st);
        goto out;
    }
    const linattn_tokenizer *tokz = linattn_model_tokenizer(model);
    const int bytes_tok = !strcmp(linattn_tokenizer_name(tokz), "bytes");
    size_t ntok = n;
    int add_bos = !bytes_tok && linattn_tokenizer_adds_bos(tokz);
    if (!bytes_tok &&
        (st = linattn_tokenizer_encode(tokz, (const char *)text, n, add_bos, NULL, 0, &ntok)) !=
            LINATTN_OK) {
        cli_fail_status("eval", st);
        goto out;
    }
    if (ntok < 2) {
        cli_fail("eval", "%s: %zu token%s; at least 2 are needed (one to predict)", text_path,
                 ntok, ntok == 1 ? "" : "s");
        goto out;
    }
    /* a bounded model must hold each stream: the whole file, or a window */
    int bounded = (cfg->attention == LINATTN_ATTN_SOFTMAX && cfg->window == 0) ||
                  cfg->positions == LINATTN_POS_LEARNED;
    /* tokens fed per stream: a window, or all but the last token */
    size_t fed = window ? (size_t)window : ntok - 1;
    if (bounded && fed > (size_t)cfg->max_seq_len) {
        if (window)
            cli_fail("eval", "--window %ld is longer than the model's max_seq_len (%d)", window,
                     cfg->max_seq_len);
        else /* the byte tokenizer counts bytes, any other tokens */
            cli_fail("eval",
                     "%s: %zu %s do not fit the model's context (max_seq_len %d, %s): "
                     "use --window N with N <= %d",
                     text_path, bytes_tok ? n : ntok, bytes_tok ? "bytes" : "tokens",
                     cfg->max_seq_len,
                     cfg->attention == LINATTN_ATTN_SOFTMAX ? "softmax attention"
                                                             : "learned positions",
                     cfg->max_seq_len);
        goto out;
    }
    if (ntok > (size_t)INT_MAX) {
        cli_fail("eval", "%s: too long", text_path);
        goto out;
    }
    tokens = malloc(ntok * sizeof *tokens);
    if (!bytes_tok) { /* a byte's offset is its index, its length 1 */
        offsets = malloc(ntok * sizeof *offsets);
        lens = malloc(ntok * sizeof *lens);
    }
    r.bits = malloc((ntok - 1) * sizeof *r.bits);
    r.logits = malloc((size_t)SLICE * (size_t)cfg->vocab_size * sizeof *r.logits);
    size_t nblocks = (n + (size_t)block - 1) / (size_t)block;
    blocks = calloc(nblocks, sizeof *blocks);
    if (!tokens || (!bytes_tok && (!offsets || !lens)) || !r.bits || !r.logits || !blocks) {
        cli_fail("eval", "out of memory");
        goto out;
    }
    if (bytes_tok)
        linattn_tokenize((const char *)text, n, tokens);
    else if ((st = linattn_tokenizer_encode(tokz, (const char *)text, n, add_bos, tokens, ntok,
                                            &ntok)) != LINATTN_OK) {
        cli_fail_status("eval", st);
        goto out;
    }
    /* where each token's bytes start in the file, and how many it has (an
     * added bos none); bytes past the file's end count in its last block */
    for (size_t i = 0, at = 0; offsets && i < ntok; i++) {
        const char *piece;
        size_t pl = 0;
        if (!(add_bos && i == 0) &&
            linattn_tokenizer_decode(tokz, i ? tokens[i - 1] : -1, tokens[i], &piece, &pl) !=
                LINATTN_OK)
            pl = 0;
        offsets[i] = at < n ? at : n - 1;
        lens[i] = pl;
        at += pl;
    }
    size_t scored_bytes = 0;
    for (size_t i = 1; i < ntok; i++) {
        size_t bytes = offsets ? lens[i] : 1;
        blocks[(offsets ? offsets[i] : i) / (size_t)block].bytes += bytes;
        scored_bytes += bytes;
    }
    if (scored_bytes == 0) {
        cli_fail("eval", "%s: the scored tokens decode to no bytes", text_path);
        goto out;
    }
    linattn_session_set_threads(r.sess, cfg->threads);
    r.tokens = tokens;
    r.n = ntok;
    r.window = (size_t)window;
    r.vocab = cfg->vocab_size;

    double t0 = now_s();
    if (score(&r))
        goto out;
    double secs = now_s() - t0;
    double tps = secs > 0 ? (double)(ntok - 1) / secs : 0;

    double total = 0;
    for (size_t i = 0; i + 1 < ntok; i++) { /* bits[i] scores token i + 1 */
        blocks[(offsets ? offsets[i + 1] : i + 1) / (size_t)block].bits += r.bits[i];
        total += r.bits[i];
    }
    for (size_t b = 0; b < nblocks; b++)
        blocks[b].offset = b * (size_t)block;
    double bpb = total / (double)scored_bytes;

    if (json && write_json(json, bpb, scored_bytes, tps, blocks, nblocks))
        goto out;
    linattn_isa cur = LINATTN_ISA_SCALAR;
    linattn_get_isa(&cur, NULL);
    printf("%s on %s (%zu bytes), %s\n", config_path, text_path, n,
           window ? "fresh windows" : "one stream");
    if (window)
        printf("window %ld %s\n", window, bytes_tok ? "bytes" : "tokens");
    if (!bytes_tok)
        printf("tokenizer %s (%s): %zu tokens, %.3f bytes a token\n", linattn_tokenizer_name(tokz),
               linattn_tokenizer_path(tokz), ntok, (double)n / (double)ntok);
    printf("%12s %10s %10s\n", "offset", "bytes", "bits/byte");
    for (size_t b = 0; b < nblocks; b++)
        printf("%12zu %10zu %10.4f\n", blocks[b].offset, blocks[b].bytes,
               blocks[b].bytes ? blocks[b].bits / (double)blocks[b].bytes : 0.0);
    printf("bits/byte %.4f over %zu bytes; %.0f tokens/s (isa %s, threads %d)\n", bpb, scored_bytes, tps,
           linattn_isa_name(cur), cfg->threads > 0 ? cfg->threads : linattn_max_threads());
    if (cli_stdout_ok())
        rc = 0;
out:
    linattn_session_free(r.sess);
    linattn_model_free(model);
    free(r.bits);
    free(r.logits);
    free(blocks);
    free(tokens);
    free(offsets);
    free(lens);
    free(text);
    free(cfg);
    return rc;
}
