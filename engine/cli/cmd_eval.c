/* cmd_eval.c: `linattn eval`: bits per byte of a text, overall and by position, at prefill speed; or llama-perplexity's chunked perplexity. */
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
    "usage: linattn eval CONFIG --text FILE [--block N | --window N | --ctx N]\n"
    "                    [--threads N] [--isa ISA] [--json FILE]\n"
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
    "  --ctx N        llama.cpp's llama-perplexity instead (below): chunks of N\n"
    "                 tokens, the second half of each scored, perplexity per token\n"
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
    "tokens.\n"
    "\n"
    "--ctx N scores what llama-perplexity -c N scores: the text is encoded once\n"
    "(bos first when the tokenizer adds one) and cut into floor(T / N) chunks of\n"
    "N tokens (the rest is not read); each chunk is a fresh stream whose first\n"
    "token is replaced by bos (when the tokenizer adds one), and only the\n"
    "tokens at positions N/2 + 1 .. N - 1 of a chunk are scored (N - N/2 - 1 a\n"
    "chunk), each predicted from all the chunk before it. It prints the\n"
    "perplexity exp(mean -ln p) after each chunk and at the end with\n"
    "llama-perplexity's error estimate; T must be at least 2 N, N at least 4\n"
    "(and at most max_seq_len for a softmax model without a window). JSON:\n"
    "  {\"perplexity\": P, \"perplexity_error\": E, \"nll\": X, \"tokens\": N,\n"
    "   \"chunks\": C, \"ctx\": N, \"tokens_per_second\": R, \"running\": [P1, ...]}\n"
    "(nll: the mean -ln p in nats; running: the perplexity after each chunk).\n";

#define MAX_TEXT_BYTES (1ull << 30)
/* Tokens per feed: the logits of a slice (slice x vocab floats) are held at once. */
#define SLICE 1024
/* Bytes of text encoded at once (more where the tokenizer cannot cut there:
 * linattn_tokenizer_cut) */
#define PART_BYTES ((size_t)1 << 20)

enum { OPT_TEXT = 256, OPT_BLOCK, OPT_WINDOW, OPT_CTX, OPT_THREADS, OPT_ISA, OPT_JSON };

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

/* -ln p(target): the same log-sum-exp in nats, as llama-perplexity reports. */
static double nats_of(const float *logits, int vocab, int target)
{
    return bits_of(logits, vocab, target) * log(2.0);
}

/* Blocks of the file by the offset of the predicted byte. */
typedef struct block_stat {
    size_t offset, bytes;
    double bits;
} block_stat;

/* The text is encoded a part at a time (linattn_tokenizer_cut) and scored
 * as its tokens come: what is held is the text, one part's tokens and a
 * slice's logits, never every token. Slices are those of one pass over all
 * the tokens (a stream's first SLICE, the next, ...; the last stops before
 * the last token), so the figures do not depend on the parts. */
typedef struct eval_run {
    linattn_session *sess;
    const linattn_tokenizer *tokz;
    size_t window;   /* 0: one stream */
    int vocab;
    float *logits;   /* [SLICE][vocab] */
    /* tokens not fed yet: ids, where their bytes start in the file, how many */
    int *tok;
    size_t *off, *len;
    size_t head, count, cap;
    size_t fed;      /* tokens fed in all */
    size_t ntok;     /* tokens received in all */
    size_t at;       /* bytes the received tokens decode to */
    int prev;        /* the last token received (decoding depends on it) */
    size_t text_bytes;
    size_t block;
    block_stat *blocks;
    double total;
    size_t scored_bytes, shown;
    int tty;
} eval_run;

/* Feeds what can be fed: whole slices while more tokens may come (last 0),
 * everything but the final token at the end. */
static int score(eval_run *r, int last)
{
    const size_t span = r->window ? r->window : SIZE_MAX; /* tokens of one stream */
    while (r->count - r->head >= 2) {
        /* a new stream starts at every multiple of span */
        if (r->fed % span == 0)
            linattn_session_reset(r->sess);
        size_t left = span - r->fed % span, c = left < SLICE ? left : SLICE;
        if (c > r->count - r->head - 1) { /* the slice needs c + 1 tokens */
            if (!last)
                return 0;
            c = r->count - r->head - 1;
        }
        const int *t = r->tok + r->head;
        linattn_status st = linattn_session_feed_all(r->sess, t, (int)c, r->logits);
        if (st != LINATTN_OK) {
            if (r->tty)
                fputs("\r\033[K", stderr);
            return cli_fail_status("eval", st);
        }
        for (size_t i = 0; i < c; i++) {
            const float *row = r->logits + i * (size_t)r->vocab;
            double bits = bits_of(row, r->vocab, t[i + 1]);
            if (!isfinite(bits)) { /* a NaN or inf logit: no figure to report, not "nan" */
                int at = 0;
                while (at + 1 < r->vocab && isfinite(row[at]))
                    at++;
                if (r->tty)
                    fputs("\r\033[K", stderr);
                return cli_fail("eval", "the model's logits after token %zu of the text (0-based) "
                                        "are not finite (logit %d is %g): no bits per byte",
                                r->fed + i, at, (double)row[at]);
            }
            block_stat *b = &r->blocks[r->off[r->head + i + 1] / r->block];
            b->bits += bits;
            b->bytes += r->len[r->head + i + 1];
            r->total += bits;
            r->scored_bytes += r->len[r->head + i + 1];
        }
        r->fed += c;
        r->head += c;
        size_t done = r->off[r->head];
        if (r->tty && done - r->shown >= 65536) {
            fprintf(stderr, "\reval %zu/%zu bytes", done, r->text_bytes);
            r->shown = done;
        }
    }
    return 0;
}

/* Encodes text[from..to) and appends its tokens (with their places in the
 * file) to those not fed yet. */
static int take_part(eval_run *r, const char *text, size_t from, size_t to, int add_bos)
{
    if (r->head > 0) { /* what is left of the last part goes first */
        size_t k = r->count - r->head;
        memmove(r->tok, r->tok + r->head, k * sizeof *r->tok);
        memmove(r->off, r->off + r->head, k * sizeof *r->off);
        memmove(r->len, r->len + r->head, k * sizeof *r->len);
        r->count = k;
        r->head = 0;
    }
    for (;;) {
        size_t n = 0;
        linattn_status st = LINATTN_ERR_INVALID;
        if (r->tok) /* (NULL would ask for the count only) */
            st = linattn_tokenizer_encode_part(r->tokz, text, from, to, add_bos, r->tok + r->count,
                                               r->cap - r->count, &n);
        if (st == LINATTN_OK) {
            for (size_t i = r->count; i < r->count + n; i++) {
                const char *piece;
                size_t pl = 0;
                /* an added bos decodes to nothing; bytes past the file's
                 * end count in its last block */
                if (!(add_bos && r->ntok == 0 && i == 0) &&
                    linattn_tokenizer_decode(r->tokz, r->prev, r->tok[i], &piece, &pl) !=
                        LINATTN_OK)
                    pl = 0;
                r->off[i] = r->at < r->text_bytes ? r->at : r->text_bytes - 1;
                r->len[i] = pl;
                r->at += pl;
                r->prev = r->tok[i];
            }
            r->count += n;
            r->ntok += n;
            return 0;
        }
        if (r->tok && r->count + n <= r->cap) /* not a size problem */
            return cli_fail_status("eval", st);
        size_t cap = r->count + (n > 4096 ? n : 4096) + 1024;
        int *tok = realloc(r->tok, cap * sizeof *tok);
        if (tok)
            r->tok = tok;
        size_t *off = tok ? realloc(r->off, cap * sizeof *off) : NULL;
        if (off)
            r->off = off;
        size_t *len = off ? realloc(r->len, cap * sizeof *len) : NULL;
        if (!len)
            return cli_fail("eval", "out of memory for %zu tokens", cap);
        r->len = len;
        r->cap = cap;
    }
}

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

/* --ctx: llama-perplexity's figure (tools/perplexity/perplexity.cpp,
 * perplexity()) from every token of the text, r->tok[0..r->count). Chunk k is
 * tokens [k ctx, (k+1) ctx), a fresh stream with bos (if the tokenizer adds
 * one) in place of its first token; the logits after positions
 * first .. ctx-2 (first = ctx/2) score the tokens after them. Feeding stops
 * before position ctx-1: its logits score nothing and cannot change the
 * earlier ones. */
static int score_chunks(eval_run *r, size_t ctx, int bos, const char *config_path,
                        const char *text_path, size_t text_bytes, const char *json, int threads)
{
    const size_t nchunk = r->count / ctx, first = ctx / 2;
    int *chunk = malloc(ctx * sizeof *chunk);
    double *running = malloc(nchunk * sizeof *running);
    if (!chunk || !running) {
        free(chunk);
        free(running);
        return cli_fail("eval", "out of memory");
    }
    double nll = 0, nll2 = 0, t0 = now_s();
    size_t count = 0;
    int rc = 1;
    for (size_t k = 0; k < nchunk; k++) {
        memcpy(chunk, r->tok + k * ctx, ctx * sizeof *chunk);
        if (bos >= 0)
            chunk[0] = bos;
        linattn_session_reset(r->sess);
        for (size_t at = 0; at < ctx - 1;) {
            size_t c = ctx - 1 - at < SLICE ? ctx - 1 - at : SLICE;
            linattn_status st = linattn_session_feed_all(r->sess, chunk + at, (int)c, r->logits);
            if (st != LINATTN_OK) {
                rc = cli_fail_status("eval", st);
                goto out;
            }
            for (size_t i = at < first ? first - at : 0; i < c; i++) {
                const float *row = r->logits + i * (size_t)r->vocab;
                double x = nats_of(row, r->vocab, chunk[at + i + 1]);
                if (!isfinite(x)) {
                    int bad = 0;
                    while (bad + 1 < r->vocab && isfinite(row[bad]))
                        bad++;
                    rc = cli_fail("eval", "the model's logits after token %zu of the text (0-based) "
                                          "are not finite (logit %d is %g): no perplexity",
                                  k * ctx + at + i, bad, (double)row[bad]);
                    goto out;
                }
                nll += x;
                nll2 += x * x;
                count++;
            }
            at += c;
        }
        running[k] = exp(nll / (double)count);
        if (r->tty)
            fprintf(stderr, "\reval chunk %zu/%zu", k + 1, nchunk);
    }
    if (r->tty)
        fputs("\r\033[K", stderr);
    double secs = now_s() - t0;
    double tps = secs > 0 ? (double)(nchunk * (ctx - 1)) / secs : 0;
    /* llama-perplexity's estimate: the standard error of the mean -ln p,
     * carried to the perplexity (d exp(m) = exp(m) dm) */
    double mean = nll / (double)count, var = nll2 / (double)count - mean * mean;
    double ppl = exp(mean), err = var > 0 && count > 1 ? sqrt(var / (double)(count - 1)) * ppl : 0;
    if (json) {
        int finite = isfinite(ppl) && isfinite(err) && isfinite(tps);
        size_t cap = 512 + nchunk * 32, len = 0;
        char *buf = finite ? malloc(cap) : NULL;
        if (!finite) {
            rc = cli_fail("eval", "a figure for the JSON output is not finite");
            goto out;
        }
        if (!buf) {
            rc = cli_fail("eval", "out of memory");
            goto out;
        }
        len += (size_t)snprintf(buf + len, cap - len,
                                "{\"perplexity\": %.6f, \"perplexity_error\": %.6f, \"nll\": %.8f, "
                                "\"tokens\": %zu, \"chunks\": %zu, \"ctx\": %zu, "
                                "\"tokens_per_second\": %.1f, \"running\": [",
                                ppl, err, mean, count, nchunk, ctx, tps);
        for (size_t k = 0; k < nchunk; k++)
            len += (size_t)snprintf(buf + len, cap - len, "%s%.6f", k ? ", " : "", running[k]);
        len += (size_t)snprintf(buf + len, cap - len, "]}\n");
        linattn_status st = cli_write_file(json, "the JSON output", buf, len);
        free(buf);
        if (st != LINATTN_OK) {
            rc = cli_fail_status("json", st);
            goto out;
        }
    }
    linattn_isa cur = LINATTN_ISA_SCALAR;
    linattn_get_isa(&cur, NULL);
    printf("%s on %s (%zu bytes), chunks of %zu tokens as llama-perplexity -c %zu\n", config_path,
           text_path, text_bytes, ctx, ctx);
    printf("tokenizer %s (%s): %zu tokens, %zu chunks, bos %s; positions %zu..%zu of each scored\n",
           linattn_tokenizer_name(r->tokz), linattn_tokenizer_path(r->tokz), r->count, nchunk,
           bos >= 0 ? "at each chunk's start" : "none", first + 1, ctx - 1);
    for (size_t k = 0; k < nchunk; k++)
        printf("[%zu]%.4f,", k + 1, running[k]);
    printf("\n");
    printf("perplexity %.4f +/- %.5f over %zu tokens (mean -ln p %.6f); %.0f tokens/s "
           "(isa %s, threads %d)\n",
           ppl, err, count, mean, tps, linattn_isa_name(cur),
           threads > 0 ? threads : linattn_max_threads());
    rc = cli_stdout_ok() ? 0 : 1;
out:
    free(chunk);
    free(running);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    static const struct option opts[] = {
        {"text", required_argument, 0, OPT_TEXT},
        {"block", required_argument, 0, OPT_BLOCK},
        {"window", required_argument, 0, OPT_WINDOW},
        {"ctx", required_argument, 0, OPT_CTX},
        {"threads", required_argument, 0, OPT_THREADS},
        {"isa", required_argument, 0, OPT_ISA},
        {"json", required_argument, 0, OPT_JSON},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *text_path = NULL, *isa = NULL, *json = NULL;
    long block = 4096, window = 0, ctx = 0, threads = -1;
    int block_given = 0;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_TEXT: text_path = optarg; break;
        case OPT_BLOCK: if (cli_parse_long("eval", "--block", optarg, 1, LONG_MAX, &block)) return 1; block_given = 1; break;
        case OPT_WINDOW: if (cli_parse_long("eval", "--window", optarg, 1, INT_MAX, &window)) return 1; break;
        case OPT_CTX: if (cli_parse_long("eval", "--ctx", optarg, 4, INT_MAX, &ctx)) return 1; break;
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
    /* --ctx is llama-perplexity's figure: its own chunks, no blocks */
    if (ctx && window)
        return cli_fail("eval", "--ctx and --window exclude each other (--ctx makes its own chunks)");
    if (ctx && block_given)
        return cli_fail("eval", "--block has no meaning with --ctx (it reports per chunk)");
    if (json && safe_file_check(json, "the JSON output") != LINATTN_OK)
        return cli_fail_status("json", LINATTN_ERR_IO);
    const char *config_path = argv[optind];

    int rc = 1;
    linattn_config *cfg = malloc(sizeof *cfg);
    unsigned char *text = NULL;
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
    int add_bos = !bytes_tok && linattn_tokenizer_adds_bos(tokz);
    /* a bounded model must hold each stream: the whole file, or a window */
    int bounded = (cfg->attention == LINATTN_ATTN_SOFTMAX && cfg->window == 0) ||
                  cfg->positions == LINATTN_POS_LEARNED;
    if (ctx && bounded && ctx > cfg->max_seq_len) {
        cli_fail("eval", "--ctx %ld is longer than the model's max_seq_len (%d)", ctx,
                 cfg->max_seq_len);
        goto out;
    }
    size_t ntok = n;
    if (bounded && !window && !ctx && !bytes_tok) { /* the whole file's tokens, counted a part at a time */
        ntok = 0;
        for (size_t from = 0, to; from < n; from = to) {
            size_t k = 0;
            to = linattn_tokenizer_cut(tokz, (const char *)text, n, from, PART_BYTES);
            if ((st = linattn_tokenizer_encode_part(tokz, (const char *)text, from, to, add_bos,
                                                    NULL, 0, &k)) != LINATTN_OK) {
                cli_fail_status("eval", st);
                goto out;
            }
            ntok += k;
        }
    }
    /* tokens fed per stream: a window, or all but the last token */
    if (!ctx && bounded && (window ? (size_t)window : ntok - 1) > (size_t)cfg->max_seq_len &&
        (window || ntok >= 2)) {
        if (window)
            cli_fail("eval", "--window %ld is longer than the model's max_seq_len (%d)", window,
                     cfg->max_seq_len);
        else /* the byte tokenizer counts bytes, any other tokens */
            cli_fail("eval",
                     "%s: %zu %s do not fit the model's context (max_seq_len %d, %s): "
                     "use --window N with N <= %d",
                     text_path, ntok, bytes_tok ? "bytes" : "tokens", cfg->max_seq_len,
                     cfg->attention == LINATTN_ATTN_SOFTMAX ? "softmax attention"
                                                             : "learned positions",
                     cfg->max_seq_len);
        goto out;
    }
    r.logits = malloc((size_t)SLICE * (size_t)cfg->vocab_size * sizeof *r.logits);
    size_t nblocks = (n + (size_t)block - 1) / (size_t)block;
    blocks = calloc(nblocks, sizeof *blocks);
    if (!r.logits || !blocks) {
        cli_fail("eval", "out of memory");
        goto out;
    }
    linattn_session_set_threads(r.sess, cfg->threads);
    r.tokz = tokz;
    r.window = (size_t)window;
    r.vocab = cfg->vocab_size;
    r.prev = -1;
    r.text_bytes = n;
    r.block = (size_t)block;
    r.blocks = blocks;
    r.tty = isatty(STDERR_FILENO);

    if (ctx) { /* every token first: the chunks are counted in tokens */
        for (size_t from = 0, to; from < n; from = to) {
            to = linattn_tokenizer_cut(tokz, (const char *)text, n, from, PART_BYTES);
            if (take_part(&r, (const char *)text, from, to, add_bos))
                goto out;
        }
        if (r.count < 2 * (size_t)ctx) {
            cli_fail("eval", "%s: %zu tokens; --ctx %ld needs at least %ld, as llama-perplexity does",
                     text_path, r.count, ctx, 2 * ctx);
            goto out;
        }
        rc = score_chunks(&r, (size_t)ctx, add_bos ? linattn_tokenizer_bos(tokz) : -1, config_path,
                          text_path, n, json, cfg->threads);
        goto out;
    }
    double t0 = now_s();
    for (size_t from = 0, to; from < n; from = to) {
        to = linattn_tokenizer_cut(tokz, (const char *)text, n, from, PART_BYTES);
        if (take_part(&r, (const char *)text, from, to, add_bos) || score(&r, to == n))
            goto out;
    }
    if (r.tty && r.shown > 0)
        fputs("\r\033[K", stderr);
    double secs = now_s() - t0;
    ntok = r.ntok;
    if (ntok < 2) {
        cli_fail("eval", "%s: %zu token%s; at least 2 are needed (one to predict)", text_path,
                 ntok, ntok == 1 ? "" : "s");
        goto out;
    }
    if (r.scored_bytes == 0) {
        cli_fail("eval", "%s: the scored tokens decode to no bytes", text_path);
        goto out;
    }
    double tps = secs > 0 ? (double)(ntok - 1) / secs : 0;
    size_t scored_bytes = r.scored_bytes;
    double total = r.total;
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
    free(r.logits);
    free(r.tok);
    free(r.off);
    free(r.len);
    free(blocks);
    free(text);
    free(cfg);
    return rc;
}
