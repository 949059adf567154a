/* cmd_generate.c: `linattn generate`: prompt in, text streamed out, state saved and resumed. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../file.h"
#include "chat_template.h"
#include "cli.h"

static const char usage[] =
    "usage: linattn generate CONFIG|MODEL [options]\n"
    "       linattn generate -m CONFIG|MODEL [options]\n"
    "\n"
    "Feeds a prompt to the model CONFIG describes and streams the text it writes.\n"
    "MODEL: a llama2.c checkpoint or Hugging Face folder alone (see docs/cli.md).\n"
    "\n"
    "  -m, --model PATH     the config or model (instead of the first argument)\n"
    "  --config FILE        with a MODEL: a config laid over it (runtime keys, and\n"
    "                       [model] keys changed on purpose; no weights)\n"
    "  -p, --prompt TEXT    prompt (default: the config's [generate] prompt)\n"
    "  -f, --prompt-file F  read the prompt from F ('-': standard input)\n"
    "  -n, --tokens N       tokens to generate (default: max_new_tokens; -1: until the\n"
    "                       end of text, a --stop text, Ctrl-C or a full context)\n"
    "  --stop TEXT          stop once the text written ends with TEXT (printed);\n"
    "                       repeatable, up to 16\n"
    "  -c, --ctx-size N     max_seq_len N instead of the config's (softmax: the KV\n"
    "                       cache; learned positions: at most the table's rows);\n"
    "                       past the context the model was trained for it warns.\n"
    "                       --ctx N is the same\n"
    "  --ctx-overflow MODE  when a softmax model's cache is full: stop (default), or\n"
    "                       window: go on as a sliding window of the cache's length\n"
    "                       (every relative distance one the model was trained on\n"
    "                       with RoPE; not with learned positions; its state files\n"
    "                       load only with the same flag)\n"
    "  --no-display-prompt  do not echo the prompt\n"
    "  --print-ids          print token ids (space-separated) instead of text\n"
    "  --ignore-eos         go on past the tokenizer's end-of-text token (by default\n"
    "                       it ends the text, or the answer with -i; a llama2.c\n"
    "                       tokenizer's BOS too, which separates its stories, as\n"
    "                       run.c stops there)\n";
static const char usage_more[] =
    "  -i, --interactive    a conversation: after each answer, read a line from stdin,\n"
    "                       feed it and answer it (each answer up to -n tokens, ending\n"
    "                       at a newline unless --stop says otherwise); end of input\n"
    "                       ends it ('linattn chat CONFIG' is the same). A line is at\n"
    "                       most 1 MiB (1048576 bytes with its newline): a longer one,\n"
    "                       or a read error, ends the conversation as the end of\n"
    "                       input does (--save-state, --stats), then exits with 1\n"
    "  --chat-template NAME with -i: each line as a user turn of that chat format\n"
    "                       (the answer ends at its end mark): auto (default:\n"
    "                       tokenizer_config.json's, recognised; else plain, the\n"
    "                       line as it is), plain, chatml, llama2, llama3, zephyr,\n"
    "                       mistral, phi3, gemma\n"
    "  --temperature T      0 = greedy (default: config, else 0.8)\n"
    "  --top-k K            keep the K most likely tokens; 0 = all\n"
    "  --top-p P            keep the smallest set with probability >= P; 1 = all\n"
    "  -s, --seed S         sampler seed; the same seed gives the same text\n"
    "  --repeat-penalty R   divide a positive logit (multiply a negative one) of the\n"
    "                       tokens in the window by R; 1 = off (default: config, else 1)\n"
    "  --repeat-last-n N    the window: the last N tokens of prompt and text (default 64)\n"
    "  --min-p P            keep tokens at least P times as likely as the top one; 0 = off\n"
    "  --logit-bias T=B     add B to token T's logit (B = -inf bans it); repeatable\n"
    "  -t, --threads N      threads (0 = auto: the cores other processes leave free)\n"
    "  --isa ISA            auto|scalar|avx2|avx512|neon\n"
    "  --stats              print speed and memory figures to stderr at the end\n"
    "  --save-state FILE    save the stream (and sampler) at the end\n"
    "  --load-state FILE    continue a saved stream; --prompt is then optional\n"
    "  -h, --help           this text\n"
    "\n"
    "Ctrl-C ends the text (in a conversation: the answer, and the next line is\n"
    "read) and keeps it: the stats and --save-state as at a normal end; the run\n"
    "then exits with status 130 (a conversation goes on). A second Ctrl-C\n"
    "exits at once. SIGTERM ends and keeps it likewise, then exits with 143.\n";

enum { OPT_PROMPT = 256, OPT_PROMPT_FILE, OPT_TOKENS, OPT_TEMP, OPT_TOPK, OPT_TOPP, OPT_SEED,
       OPT_THREADS, OPT_ISA, OPT_STATS, OPT_SAVE, OPT_LOAD, OPT_PENALTY, OPT_LAST_N, OPT_MIN_P,
       OPT_BIAS, OPT_STOP, OPT_CTX, OPT_NO_DISPLAY, OPT_PRINT_IDS, OPT_INTERACTIVE,
       OPT_IGNORE_EOS, OPT_CHAT_TEMPLATE, OPT_CTX_OVERFLOW, OPT_CONFIG };

#define MAX_STOPS 16

/* What a saved stream carries for us besides the model state. */
typedef struct resume_info {
    uint64_t sampler_state;
    int32_t pending;   /* sampled and printed, not fed (the context was full); -1: none */
    int32_t n_recent;  /* the sampler's repetition window follows, newest first (files
                        * from before it hold 0 here: no window) */
    int recent[];
} resume_info;
_Static_assert(sizeof(int) == 4 && sizeof(resume_info) == 16, "the state file's layout");

/* --logit-bias flags, applied once the sampler exists */
#define MAX_LOGIT_BIAS 1024
typedef struct logit_bias {
    int token;
    float bias;
} logit_bias;

/* TOKEN=BIAS: a token id, and a number or -inf. */
static int parse_logit_bias(const char *text, logit_bias *out)
{
    const char *eq = strchr(text, '=');
    char token[24];
    size_t n = eq ? (size_t)(eq - text) : 0;
    long t;
    float b = -INFINITY;
    if (n == 0 || n >= sizeof token)
        return cli_fail("generate", "--logit-bias: expected TOKEN=BIAS, got '%s'", text);
    memcpy(token, text, n);
    token[n] = '\0';
    if (cli_parse_long("generate", "--logit-bias TOKEN", token, 0, INT_MAX, &t) ||
        (strcmp(eq + 1, "-inf") != 0 &&
         cli_parse_float("generate", "--logit-bias BIAS (a number or -inf)", eq + 1, -1e30, 1e30,
                         &b)))
        return 1;
    out->token = (int)t;
    out->bias = b;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

/* The prompt file: a regular file, or standard input for "-", at most
 * MAX_PROMPT_BYTES either way. */
#define MAX_PROMPT_BYTES ((size_t)64 << 20)
static char *read_prompt(const char *path, size_t *len)
{
    if (strcmp(path, "-") != 0) {
        char *buf;
        linattn_status st = safe_read_all(path, "the prompt file", MAX_PROMPT_BYTES, &buf, len);
        if (st != LINATTN_OK) {
            cli_fail_status("prompt-file", st);
            return NULL;
        }
        return buf;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (n < cap)
            break;
        if (cap >= MAX_PROMPT_BYTES) {
            cli_fail("prompt-file", "standard input: more than the %zu-byte limit for a prompt",
                     MAX_PROMPT_BYTES);
            free(buf);
            return NULL;
        }
        char *bigger = realloc(buf, cap * 2 + 1);
        if (!bigger)
            break;
        buf = bigger;
        cap *= 2;
    }
    if (!buf || ferror(stdin)) {
        cli_fail("prompt-file", "standard input: %s", buf ? strerror(errno) : "out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* A conversation's line is at most this many bytes with its newline: all
 * its tokens are fed at once, so this bounds what one line may cost; far
 * above what a person types or pastes, and a line without end (stdin from
 * /dev/zero) fails at once instead of growing to the memory limit. */
#define MAX_CHAT_LINE_BYTES ((size_t)1 << 20)

enum { LINE_END = 0, LINE_ERROR = -1, LINE_TOO_LONG = -2, LINE_NOMEM = -3 };

/* The next line of stdin, newline kept (the last line may lack it), into
 * *line (MAX_CHAT_LINE_BYTES + 2 bytes, allocated on first use) with a NUL
 * after it: its length; LINE_END at the end of input; LINE_ERROR after a
 * read error (errno says which), LINE_TOO_LONG, LINE_NOMEM. */
static long read_chat_line(char **line)
{
    if (!*line && !(*line = malloc(MAX_CHAT_LINE_BYTES + 2)))
        return LINE_NOMEM;
    size_t n = 0;
    int c = 0, err = 0;
    flockfile(stdin);
    while (n < MAX_CHAT_LINE_BYTES && (c = getc_unlocked(stdin)) != EOF) {
        (*line)[n++] = (char)c;
        if (c == '\n')
            break;
    }
    if (c == EOF && ferror(stdin))
        err = errno;
    funlockfile(stdin);
    (*line)[n] = '\0';
    if (err)
        return errno = err, LINE_ERROR;
    if (n == MAX_CHAT_LINE_BYTES && (*line)[n - 1] != '\n')
        return LINE_TOO_LONG;
    return (long)n;
}

/* Every token of a text the user gave (a prompt, a line) is one the model
 * has: else "the prompt's token I of N (id X) is past the model's
 * vocab_size V", before any work (a byte tokenizer gives bytes up to 255). */
static int check_vocab(const char *what, const int *toks, size_t n, int vocab)
{
    for (size_t i = 0; i < n; i++)
        if (toks[i] < 0 || toks[i] >= vocab)
            return cli_fail(what, "the %s's token %zu of %zu (id %d) is past the model's "
                                  "vocab_size %d (ids 0..%d)",
                            what, i + 1, n, toks[i], vocab, vocab - 1);
    return 0;
}

/* Feeds tokens in slices, showing progress on a terminal. */
static linattn_status feed_prompt(linattn_session *s, const int *tokens, int n, float *logits)
{
    int tty = isatty(STDERR_FILENO);
    const int slice = tty && n > 512 ? 256 : n;
    linattn_status st = LINATTN_OK;
    for (int done = 0; st == LINATTN_OK && done < n; done += slice) {
        int c = n - done < slice ? n - done : slice;
        st = linattn_session_feed(s, tokens + done, c, done + c == n ? logits : NULL);
        if (tty && slice < n)
            fprintf(stderr, "\rprefill %d/%d tokens", done + c, n);
    }
    if (tty && slice < n)
        fputs("\r\033[K", stderr);
    return st;
}

static const struct option generate_opts[] = {
    {"model", required_argument, 0, 'm'},
    {"config", required_argument, 0, OPT_CONFIG},
    {"prompt", required_argument, 0, OPT_PROMPT},
    {"prompt-file", required_argument, 0, OPT_PROMPT_FILE},
    {"tokens", required_argument, 0, OPT_TOKENS},
    {"stop", required_argument, 0, OPT_STOP},
    {"ctx", required_argument, 0, OPT_CTX},
    {"ctx-size", required_argument, 0, 'c'},
    {"ctx-overflow", required_argument, 0, OPT_CTX_OVERFLOW},
    {"no-display-prompt", no_argument, 0, OPT_NO_DISPLAY},
    {"print-ids", no_argument, 0, OPT_PRINT_IDS},
    {"ignore-eos", no_argument, 0, OPT_IGNORE_EOS},
    {"chat-template", required_argument, 0, OPT_CHAT_TEMPLATE},
    {"interactive", no_argument, 0, 'i'},
    {"temperature", required_argument, 0, OPT_TEMP},
    {"top-k", required_argument, 0, OPT_TOPK},
    {"top-p", required_argument, 0, OPT_TOPP},
    {"seed", required_argument, 0, OPT_SEED},
    {"threads", required_argument, 0, OPT_THREADS},
    {"isa", required_argument, 0, OPT_ISA},
    {"stats", no_argument, 0, OPT_STATS},
    {"save-state", required_argument, 0, OPT_SAVE},
    {"load-state", required_argument, 0, OPT_LOAD},
    {"repeat-penalty", required_argument, 0, OPT_PENALTY},
    {"repeat-last-n", required_argument, 0, OPT_LAST_N},
    {"min-p", required_argument, 0, OPT_MIN_P},
    {"logit-bias", required_argument, 0, OPT_BIAS},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

/* The flags as given: -1 (NULL) where one was not, so the config's value stands. */
typedef struct gen_opts {
    const char *cmd; /* argv[0], "generate" or "chat": messages about the conversation name it */
    const char *model_flag, *config_path, *over, *prompt, *prompt_file, *isa, *save, *load;
    const char *overflow, *chat_name;
    const char *stops[MAX_STOPS]; /* with -i and none given, the chat format's end is added */
    int n_stops;
    int display_prompt, print_ids, interactive, ignore_eos, stats, have_seed;
    int slide; /* --ctx-overflow window */
    cli_chat chat;
    long tokens, top_k, threads, last_n, ctx;
    float temperature, top_p, penalty, min_p;
    uint64_t seed;
    logit_bias biases[MAX_LOGIT_BIAS];
    int n_biases;
} gen_opts;

/* What a run holds: the model and its stream, the text as it is written,
 * and the figures --stats prints. */
typedef struct gen_run {
    linattn_config *cfg;
    cli_generate *gen;
    linattn_model *model;
    linattn_session *sess;
    linattn_sampler *sampler;
    const linattn_tokenizer *tokz;
    resume_info *info;
    size_t info_bytes;
    char *prompt_buf;
    size_t plen;
    int *toks; /* fed first: a resumed stream's pending token, then the prompt */
    int n_in;
    size_t n_prompt;
    int add_bos;
    float *logits;
    char *line; /* a line of the conversation */
    char *tail; /* the end of the text written, for --stop */
    size_t tail_len, stop_max;
    int eos, bos_ends; /* the tokens that end a text; -1: none */
    /* the token before the next one, for decoding (-1: a text's start;
     * INT_MAX: unknown, not a start) */
    int prev;
    int warned_no_text;
    cli_utf8 utf8;
    char piece_out[64 + 4];
    int pending; /* sampled and printed, not fed (the context was full); -1: none */
    int made, stopped, keep_all;
    int signalled;    /* the signal that ended the run, or 0 */
    int input_failed; /* the conversation ended on a bad line or a read error */
    /* --stats counts the model's time: not the user's typing, and a line's
     * feed as prefill */
    double t0, t1, t2, waited, line_feed;
    int prompt_tokens, line_tokens;
} gen_run;

/* What the flags say together, once all are read: -1, or the exit status. */
static int check_generate_args(int argc, char **argv, gen_opts *o)
{
    if (!o->model_flag && optind >= argc)
        return cli_fail("generate", "no config file given (usage: linattn generate CONFIG ...)");
    if (optind + (o->model_flag ? 0 : 1) < argc)
        return cli_fail("generate", "unexpected argument '%s'",
                        argv[optind + (o->model_flag ? 0 : 1)]);
    if (o->prompt && o->prompt_file)
        return cli_fail("generate", "give --prompt or --prompt-file, not both");
    o->config_path = o->model_flag ? o->model_flag : argv[optind];
    if (o->interactive && o->prompt_file && !strcmp(o->prompt_file, "-"))
        return cli_fail("generate", "--interactive reads the conversation from stdin: "
                                    "--prompt-file - cannot read it too");
    if (strcmp(o->chat_name, "auto") && cli_chat_by_name(o->chat_name, &o->chat) != 0)
        return cli_fail("generate", "--chat-template: '%s' is none of auto, %s", o->chat_name,
                        cli_chat_names());
    if (strcmp(o->overflow, "stop") && strcmp(o->overflow, "window"))
        return cli_fail("generate", "--ctx-overflow: '%s' is neither stop nor window",
                        o->overflow);
    o->slide = !strcmp(o->overflow, "window");
    cli_check_threads("generate", o->threads);
    return -1;
}

/* Fills o from the flags: -1 to go on, else the exit status (0 after --help). */
static int parse_generate_args(int argc, char **argv, gen_opts *o)
{
    *o = (gen_opts){.cmd = argv[0], .overflow = "stop", .chat_name = "auto",
                    .display_prompt = 1, .chat = CLI_CHAT_PLAIN, .tokens = -1, .top_k = -1,
                    .threads = -1, .last_n = -1, .ctx = -1, .temperature = -1.0f,
                    .top_p = -1.0f, .penalty = -1.0f, .min_p = -1.0f};
    char opt_buf[3];
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":him:p:f:n:t:s:c:", generate_opts, NULL)) != -1) {
        switch (c) {
        case 'i': o->interactive = 1; break;
        case 'm': o->model_flag = optarg; break;
        case OPT_CONFIG: o->over = optarg; break;
        case 'p': /* fall through */
        case OPT_PROMPT: o->prompt = optarg; break;
        case 'f': /* fall through */
        case OPT_PROMPT_FILE: o->prompt_file = optarg; break;
        case 'n': /* fall through */
        case OPT_TOKENS:
            if (cli_parse_long("generate", "--tokens", optarg, -1, INT_MAX, &o->tokens))
                return 1;
            if (o->tokens == -1)
                o->tokens = INT_MAX; /* until the end of text, a stop, a signal or a full context */
            break;
        case OPT_STOP:
            if (o->n_stops == MAX_STOPS)
                return cli_fail("generate", "--stop: more than %d given", MAX_STOPS);
            if (!optarg[0])
                return cli_fail("generate", "--stop: an empty text would stop at once");
            o->stops[o->n_stops++] = optarg;
            break;
        case 'c': /* fall through */
        case OPT_CTX: if (cli_parse_long("generate", c == 'c' ? "--ctx-size" : "--ctx", optarg, 1, LINATTN_MAX_SEQ_LEN, &o->ctx)) return 1; break;
        case OPT_CTX_OVERFLOW: o->overflow = optarg; break;
        case OPT_NO_DISPLAY: o->display_prompt = 0; break;
        case OPT_PRINT_IDS: o->print_ids = 1; break;
        case OPT_IGNORE_EOS: o->ignore_eos = 1; break;
        case OPT_CHAT_TEMPLATE: o->chat_name = optarg; break;
        case OPT_TEMP: if (cli_parse_float("generate", "--temperature", optarg, 0, 100, &o->temperature)) return 1; break;
        case OPT_TOPK: if (cli_parse_long("generate", "--top-k", optarg, 0, INT_MAX, &o->top_k)) return 1; break;
        case OPT_TOPP: if (cli_parse_float("generate", "--top-p", optarg, 1e-9, 1, &o->top_p)) return 1; break;
        case 's': /* fall through */
        case OPT_SEED: if (cli_parse_u64("generate", "--seed", optarg, &o->seed)) return 1; o->have_seed = 1; break;
        case 't': /* fall through */
        case OPT_THREADS: if (cli_parse_long("generate", "--threads", optarg, 0, 1024, &o->threads)) return 1; break;
        case OPT_ISA: o->isa = optarg; break;
        case OPT_STATS: o->stats = 1; break;
        case OPT_SAVE: o->save = optarg; break;
        case OPT_LOAD: o->load = optarg; break;
        case OPT_PENALTY: if (cli_parse_float("generate", "--repeat-penalty", optarg, 1e-9, 1e9, &o->penalty)) return 1; break;
        case OPT_LAST_N: if (cli_parse_long("generate", "--repeat-last-n", optarg, 0, LINATTN_MAX_REPEAT_LAST_N, &o->last_n)) return 1; break;
        case OPT_MIN_P: if (cli_parse_float("generate", "--min-p", optarg, 0, 1, &o->min_p)) return 1; break;
        case OPT_BIAS:
            if (o->n_biases == MAX_LOGIT_BIAS)
                return cli_fail("generate", "--logit-bias: more than %d given", MAX_LOGIT_BIAS);
            if (parse_logit_bias(optarg, &o->biases[o->n_biases++]))
                return 1;
            break;
        case 'h': cli_put(usage); cli_put(usage_more); return 0;
        case ':': return cli_fail("generate", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_fail("generate", "unknown option '%s' (try 'linattn generate --help')",
                            bad_option(argv, "himpfntsc", opt_buf));
        }
    }
    return check_generate_args(argc, argv, o);
}

/* The config, with the flags over it: 0, or 1 after saying why. */
static int setup_config(const gen_opts *o, gen_run *r)
{
    linattn_config *cfg = r->cfg;
    cli_generate *gen = r->gen;
    linattn_status st = cli_load_model(o->config_path, o->over, cfg, gen, NULL);
    if (st != LINATTN_OK)
        return cli_fail_status("config", st);
    if (!linattn_config_has_model(cfg))
        return cli_fail("generate", "%s: no [model] section: nothing to generate with",
                        cfg->path);
    if (cli_choose_isa("generate", o->isa, cfg->isa))
        return 1;
    if (o->ctx > 0) {
        /* the context the model was trained for: its config's (or file's) */
        const int trained = cfg->max_seq_len;
        cfg->max_seq_len = (int)o->ctx;
        if ((st = linattn_config_validate(cfg)) != LINATTN_OK)
            return cli_fail_status("ctx", st);
        if (trained > 0 && o->ctx > trained &&
            (cfg->attention != LINATTN_ATTN_LINEAR || cfg->positions != LINATTN_POS_NONE))
            cli_warn("generate", "--ctx %ld passes the %d tokens this model was trained for "
                                 "(max_seq_len of %s): past them its text may turn to noise",
                     o->ctx, trained, cfg->path[0] ? cfg->path : "its config");
    }
    if (o->slide && cfg->attention == LINATTN_ATTN_SOFTMAX && cfg->window == 0) {
        if (cfg->positions == LINATTN_POS_LEARNED)
            return cli_fail("generate", "--ctx-overflow window: this model's learned positions "
                                        "end at %d tokens; a window cannot go past them",
                            cfg->max_seq_len);
        /* the cache's length as a window: the same text until it fills (a
         * query sees every key), then it slides */
        cfg->window = cfg->max_seq_len;
        if ((st = linattn_config_validate(cfg)) != LINATTN_OK)
            return cli_fail_status("ctx-overflow", st);
    }
    if (o->threads >= 0)
        cfg->threads = (int)o->threads;
    if (o->tokens >= 0)
        gen->max_new_tokens = (int)o->tokens;
    if (o->temperature >= 0)
        gen->temperature = o->temperature;
    if (o->top_k >= 0)
        gen->top_k = (int)o->top_k;
    if (o->top_p > 0)
        gen->top_p = o->top_p;
    if (o->have_seed)
        gen->seed = o->seed;
    if (o->penalty > 0)
        gen->repeat_penalty = o->penalty;
    if (o->last_n >= 0)
        gen->repeat_last_n = (int)o->last_n;
    if (o->min_p >= 0)
        gen->min_p = o->min_p;
    /* everything checkable about the save path, before the generation it would lose */
    if (o->save && (st = safe_file_check(o->save, "state file")) != LINATTN_OK)
        return cli_fail_status("save-state", st);
    return 0;
}

/* The prompt's text into r->prompt_buf: 0, or 1 after saying why. */
static int load_prompt_text(const gen_opts *o, gen_run *r)
{
    if (o->prompt_file) {
        if (!(r->prompt_buf = read_prompt(o->prompt_file, &r->plen)))
            return 1;
    } else {
        /* a conversation starts from what the user types, not the config's prompt */
        const char *p = o->prompt ? o->prompt : o->load || o->interactive ? "" : r->gen->prompt;
        r->plen = strlen(p);
        r->prompt_buf = malloc(r->plen + 1);
        if (r->prompt_buf)
            memcpy(r->prompt_buf, p, r->plen + 1);
    }
    if (!r->prompt_buf)
        return cli_fail("generate", "out of memory");
    if (r->plen == 0 && !o->load && !o->interactive)
        return cli_fail("generate",
                        "empty prompt: give --prompt, --prompt-file or [generate] prompt");
    if (r->plen > INT_MAX - 1)
        return cli_fail("generate", "prompt of %zu bytes is too long", r->plen);
    return 0;
}

/* 1 (after saying so) when --logit-bias bans every token, so nothing could be drawn. */
static int all_banned(const gen_opts *o, int vocab)
{
    unsigned char *banned = calloc((size_t)vocab, 1);
    int n_banned = 0;
    if (!banned)
        return cli_fail("generate", "out of memory");
    for (int i = 0; i < o->n_biases; i++) /* a later flag for a token wins */
        banned[o->biases[i].token] = o->biases[i].bias == -INFINITY;
    for (int t = 0; t < vocab; t++)
        n_banned += banned[t];
    free(banned);
    if (n_banned == vocab)
        return cli_fail("logit-bias", "every token is banned (all %d at -inf): nothing could be "
                                      "drawn", vocab);
    return 0;
}

/* The model, its session, sampler and tokenizer, and the chat format the
 * tokenizer names: 0, or 1 after saying why. */
static int open_model(gen_opts *o, gen_run *r)
{
    const linattn_config *cfg = r->cfg;
    const cli_generate *gen = r->gen;
    linattn_status st;
    if ((st = linattn_model_from_config(cfg, &r->model)) != LINATTN_OK ||
        (st = linattn_session_new(r->model, &r->sess)) != LINATTN_OK ||
        (st = linattn_sampler_new(cfg->vocab_size, gen->temperature, gen->top_k, gen->top_p,
                                  gen->seed, &r->sampler)) != LINATTN_OK ||
        (st = linattn_sampler_set_repetition_penalty(r->sampler, gen->repeat_penalty,
                                                     gen->repeat_last_n)) != LINATTN_OK ||
        (st = linattn_sampler_set_min_p(r->sampler, gen->min_p)) != LINATTN_OK)
        return cli_fail_status("generate", st);
    for (int i = 0; i < o->n_biases; i++)
        if ((st = linattn_sampler_set_logit_bias(r->sampler, o->biases[i].token,
                                                 o->biases[i].bias)) != LINATTN_OK)
            return cli_fail_status("logit-bias", st);
    /* refused before the prefill it would waste */
    if ((gen->max_new_tokens > 0 || o->interactive) && all_banned(o, cfg->vocab_size))
        return 1;
    linattn_session_set_threads(r->sess, cfg->threads);
    r->tokz = linattn_model_tokenizer(r->model);
    if (o->interactive && !strcmp(o->chat_name, "auto")) /* tokenizer_config.json's */
        cli_chat_from_tokenizer(linattn_tokenizer_path(r->tokz), &o->chat);
    if (o->interactive && o->n_stops == 0)
        o->stops[o->n_stops++] = cli_chat_end(o->chat); /* plain: an answer is a line */
    return 0;
}

/* Counts the prompt's tokens and allocates what the input needs: 0, or 1. */
static int size_input(const gen_opts *o, gen_run *r)
{
    /* a new stream starts with the tokenizer's bos (a resumed one goes on) */
    r->add_bos = !o->load && r->plen > 0 && linattn_tokenizer_adds_bos(r->tokz);
    linattn_status st = linattn_tokenizer_encode(r->tokz, r->prompt_buf, r->plen, r->add_bos,
                                                 NULL, 0, &r->n_prompt);
    if (st != LINATTN_OK)
        return cli_fail_status("prompt", st);
    if (r->n_prompt > INT_MAX - 1)
        return cli_fail("prompt", "%zu tokens are too many", r->n_prompt);
    r->toks = malloc((r->n_prompt + 1) * sizeof *r->toks);
    r->logits = malloc((size_t)r->cfg->vocab_size * sizeof *r->logits);
    /* the window is kept (and saved) even with the penalty off, so a resumed
     * run that turns it on sees the same tokens as one long run would */
    r->info_bytes = sizeof *r->info + (size_t)r->gen->repeat_last_n * sizeof r->info->recent[0];
    r->info = malloc(r->info_bytes);
    if (!r->toks || !r->logits || !r->info)
        return cli_fail("generate", "out of memory");
    return 0;
}

/* --load-state: the stream, the sampler's state and window, and the
 * pending token as the first to feed: 0, or 1 after saying why. */
static int resume_stream(const gen_opts *o, gen_run *r)
{
    resume_info *info = r->info;
    size_t got = 0;
    linattn_status st = linattn_session_load(r->sess, o->load, info, r->info_bytes, &got);
    if (st != LINATTN_OK)
        return cli_fail_status("load-state", st);
    if (got < sizeof *info || info->n_recent < 0 ||
        got != sizeof *info + (size_t)info->n_recent * sizeof info->recent[0])
        return cli_fail("load-state", "%s: not saved by 'linattn generate'", o->load);
    if (!o->have_seed)
        linattn_sampler_set_state(r->sampler, info->sampler_state);
    /* stored newest first, so a smaller window than the saved one got the
     * newest; accepted oldest first */
    int n_recent =
        info->n_recent < r->gen->repeat_last_n ? info->n_recent : r->gen->repeat_last_n;
    for (int i = n_recent - 1; i >= 0; i--)
        if ((st = linattn_sampler_accept(r->sampler, info->recent[i])) != LINATTN_OK)
            return cli_fail_status("load-state", st);
    if (info->pending >= 0)
        r->toks[r->n_in++] = info->pending; /* accepted before it was saved */
    return 0;
}

/* The prompt's tokens after the pending one, into the sampler's window,
 * and checked to fit the context: 0, or 1 after saying why. */
static int add_prompt(gen_run *r)
{
    const linattn_config *cfg = r->cfg;
    const int first_new = r->n_in;
    linattn_status st = linattn_tokenizer_encode(r->tokz, r->prompt_buf, r->plen, r->add_bos,
                                                 r->toks + r->n_in, r->n_prompt, &r->n_prompt);
    if (st != LINATTN_OK)
        return cli_fail_status("prompt", st);
    if (check_vocab("prompt", r->toks + r->n_in, r->n_prompt, cfg->vocab_size))
        return 1;
    r->n_in += (int)r->n_prompt;
    /* the prompt enters the window (only its last repeat_last_n tokens can stay) */
    const int last_n = r->gen->repeat_last_n;
    int from = r->n_in - first_new > last_n ? r->n_in - last_n : first_new;
    for (int i = from; i < r->n_in; i++)
        if ((st = linattn_sampler_accept(r->sampler, r->toks[i])) != LINATTN_OK)
            return cli_fail_status("prompt", st);
    if ((uint64_t)r->n_in > linattn_session_tokens_left(r->sess))
        return cli_fail("prompt",
                        "context full: %llu tokens fed, %d more would pass max_seq_len %d (%s)",
                        (unsigned long long)linattn_session_tokens(r->sess), r->n_in,
                        cfg->max_seq_len,
                        cfg->attention == LINATTN_ATTN_SOFTMAX ? "softmax KV cache"
                                                               : "learned position table");
    return 0;
}

/* Feeds the input (or takes a resumed stream's logits), echoes the prompt,
 * and readies the text's state: 0, or 1 after saying why. */
static int start_stream(const gen_opts *o, gen_run *r)
{
    linattn_status st;
    /* Ctrl-C from here on ends the generation (or, in a conversation, the
     * answer) and keeps the work: stats, --save-state; SIGTERM likewise,
     * then exits; a second Ctrl-C exits at once */
    cli_signals_install();
    r->t0 = now_s();
    r->prompt_tokens = r->n_in;
    if (r->n_in > 0 && (st = feed_prompt(r->sess, r->toks, r->n_in, r->logits)) != LINATTN_OK)
        return cli_fail_status("prompt", st);
    if (r->n_in == 0) { /* a resumed stream samples from the logits it was saved with */
        const float *kept = linattn_session_logits(r->sess);
        if (!kept && r->gen->max_new_tokens > 0 && !o->interactive)
            return cli_fail("generate", "%s: nothing to continue from (give --prompt)", o->load);
        if (kept)
            memcpy(r->logits, kept, (size_t)r->cfg->vocab_size * sizeof(float));
    }
    r->t1 = now_s();
    if (!o->load && o->display_prompt && !o->print_ids)
        fwrite(r->prompt_buf, 1, r->plen, stdout);
    if (!cli_stdout_ok()) /* the text would be lost: nothing is generated or saved */
        return 1;
    for (int i = 0; i < o->n_stops; i++)
        r->stop_max = strlen(o->stops[i]) > r->stop_max ? strlen(o->stops[i]) : r->stop_max;
    r->tail = r->stop_max ? calloc(r->stop_max + 1, 1) : NULL;
    if (r->stop_max && !r->tail)
        return cli_fail("generate", "out of memory");
    r->eos = o->ignore_eos ? -1 : linattn_tokenizer_eos(r->tokz);
    /* llama2.c's models separate stories with BOS and never write EOS:
     * run.c stops at it */
    r->bos_ends = o->ignore_eos || strcmp(linattn_tokenizer_name(r->tokz), "llama2c")
                      ? -1
                      : linattn_tokenizer_bos(r->tokz);
    r->prev = r->n_in > 0                          ? r->toks[r->n_in - 1]
              : o->load && r->info->n_recent > 0 ? r->info->recent[0]
              : o->load                          ? INT_MAX
                                                 : -1;
    /* Every printed token is fed (the last one too when saving or in a
     * conversation), so a saved stream holds all the text and its logits: a
     * resume samples at once. */
    r->keep_all = o->save || o->interactive;
    return 0;
}

/* The user's next line, with its newline: its length; 0 when the
 * conversation ends here (end of input, Ctrl-C at the prompt, or a bad
 * line: then input_failed); -1 after a failure. */
static long read_turn(const gen_opts *o, gen_run *r)
{
    if (isatty(STDIN_FILENO))
        fputs("> ", stderr);
    double w0 = now_s();
    long got = read_chat_line(&r->line);
    r->waited += now_s() - w0;
    if (got == LINE_ERROR && (errno == EINTR || cli_signal_pending()))
        got = LINE_END; /* Ctrl-C at the prompt ends the conversation */
    if (got == LINE_END) {
        r->signalled = cli_signal_pending();
        return 0;
    }
    if (got == LINE_NOMEM) {
        cli_fail(o->cmd, "out of memory");
        return -1;
    }
    if (got < 0) { /* the conversation so far is kept, as at its end */
        if (got == LINE_TOO_LONG)
            cli_fail(o->cmd, "standard input: a line longer than %zu bytes (the limit "
                             "of one line); the conversation ends here",
                     MAX_CHAT_LINE_BYTES);
        else
            cli_fail(o->cmd, "reading standard input: %s", strerror(errno));
        r->input_failed = 1;
        return 0;
    }
    if (r->line[got - 1] != '\n') { /* the last line without its newline */
        r->line[got++] = '\n';
        r->line[got] = '\0';
    }
    return got;
}

/* The line of got bytes as the user's turn (in the chat format), encoded
 * into *lt (*nl tokens, malloc'd): 0, or 1 after saying why. */
static int encode_turn(const gen_opts *o, gen_run *r, size_t got, int **lt, size_t *nl)
{
    int line_bos = linattn_session_tokens(r->sess) == 0 && linattn_tokenizer_adds_bos(r->tokz);
    char *turn = r->line; /* plain: the line as it is */
    size_t turn_len = got;
    linattn_status st = LINATTN_OK;
    *lt = NULL;
    *nl = 0;
    if (o->chat != CLI_CHAT_PLAIN) { /* the line as a user turn, the answer opened */
        r->line[got - 1] = '\0';
        cli_chat_msg um = {"user", r->line};
        if (cli_chat_render(o->chat, &um, 1, linattn_session_tokens(r->sess) == 0, &turn,
                            &turn_len) != 0)
            return cli_fail("generate", "out of memory");
    }
    if ((st = linattn_tokenizer_encode(r->tokz, turn, turn_len, line_bos, NULL, 0, nl)) !=
            LINATTN_OK ||
        !(*lt = malloc((*nl + 1) * sizeof **lt)) ||
        (st = linattn_tokenizer_encode(r->tokz, turn, turn_len, line_bos, *lt, *nl, nl)) !=
            LINATTN_OK) {
        free(*lt);
        *lt = NULL;
        if (turn != r->line)
            free(turn);
        if (st != LINATTN_OK)
            return cli_fail_status("generate", st);
        return cli_fail("generate", "out of memory");
    }
    if (turn != r->line)
        free(turn);
    if (check_vocab("line", *lt, *nl, r->cfg->vocab_size)) {
        free(*lt);
        *lt = NULL;
        return 1;
    }
    return 0;
}

/* Feeds the user's line of got bytes: 0 when the answer may start; 1 when
 * the context is full (stopped); -1 after a failure. */
static int feed_turn(const gen_opts *o, gen_run *r, size_t got)
{
    int *lt;
    size_t nl;
    if (encode_turn(o, r, got, &lt, &nl))
        return -1;
    if (nl > 0)
        r->prev = lt[nl - 1];
    linattn_status st = LINATTN_OK;
    for (size_t k = 0; k < nl && st == LINATTN_OK; k++)
        st = linattn_sampler_accept(r->sampler, lt[k]);
    double f0 = now_s();
    if (st == LINATTN_OK && nl > 0) /* nl <= 2 got + 2: a line fits an int */
        st = linattn_session_feed(r->sess, lt, (int)nl, r->logits);
    r->line_feed += now_s() - f0;
    r->line_tokens += (int)nl;
    free(lt);
    if (st == LINATTN_ERR_CONTEXT_FULL) {
        r->stopped = 1;
        return 1;
    }
    if (st != LINATTN_OK) {
        cli_fail_status("generate", st);
        return -1;
    }
    r->tail_len = 0;
    return 0;
}

/* Writes token tok (its text after prev, or its id; an end token has no
 * text), its text left in *piece, *len: 0, or 1 when the output is lost. */
static int write_token(const gen_opts *o, gen_run *r, int tok, int is_end, const char **piece,
                       size_t *len)
{
    *piece = "";
    *len = 0;
    if (!is_end && linattn_tokenizer_decode(r->tokz, r->prev, tok, piece, len) != LINATTN_OK) {
        *len = 0;
        if (!o->print_ids && !r->warned_no_text) {
            if (!strcmp(linattn_tokenizer_name(r->tokz), "bytes"))
                cli_warn("generate", "token %d is not a byte and this model has no tokenizer "
                                     "for it: such tokens print nothing (--print-ids shows "
                                     "ids)", tok);
            else
                cli_warn("generate", "token %d is past the %d tokens of the tokenizer (%s): "
                                     "such tokens print nothing (--print-ids shows ids)",
                         tok, linattn_tokenizer_vocab(r->tokz), linattn_tokenizer_name(r->tokz));
            r->warned_no_text = 1;
        }
    }
    r->prev = tok;
    if (o->print_ids)
        printf("%s%d", r->made ? " " : "", tok);
    else
        for (size_t at = 0; at < *len; at += 64) {
            size_t c = *len - at < 64 ? *len - at : 64;
            fwrite(r->piece_out, 1, cli_utf8_take(&r->utf8, *piece + at, c, r->piece_out),
                   stdout);
        }
    if (!cli_stdout_ok())
        return 1;
    r->made++;
    return 0;
}

/* Adds a token's text to the tail of the text: 1 once the text ends with a --stop text. */
static int tail_hits_stop(const gen_opts *o, gen_run *r, const char *piece, size_t len)
{
    int hit = 0;
    for (size_t b = 0; r->tail && b < len && !hit; b++) {
        if (r->tail_len == r->stop_max)
            memmove(r->tail, r->tail + 1, --r->tail_len);
        r->tail[r->tail_len++] = piece[b];
        for (int k = 0; k < o->n_stops && !hit; k++) {
            size_t sl = strlen(o->stops[k]);
            hit = r->tail_len >= sl && !memcmp(r->tail + r->tail_len - sl, o->stops[k], sl);
        }
    }
    return hit;
}

/* The token loop, for a text and for each answer of a conversation alike:
 * up to max_new_tokens tokens sampled, written and fed, ending at the end
 * of text, a stop text, a full context (pending, stopped) or a signal
 * (signalled): 0, or 1 after a failure. */
static int generate_answer(const gen_opts *o, gen_run *r)
{
    const int max_new = r->gen->max_new_tokens;
    linattn_status st;
    for (int i = 0; i < max_new; i++) {
        int tok;
        if ((r->signalled = cli_signal_pending()) != 0)
            break; /* every token so far is fed: the stream stands whole */
        if ((st = linattn_sample(r->sampler, r->logits, &tok)) != LINATTN_OK ||
            (st = linattn_sampler_accept(r->sampler, tok)) != LINATTN_OK)
            return cli_fail_status("generate", st);
        int stop_now = tok == r->eos || (r->bos_ends >= 0 && tok == r->bos_ends);
        const char *piece;
        size_t piece_len;
        if (write_token(o, r, tok, stop_now, &piece, &piece_len))
            return 1;
        if (!stop_now)
            stop_now = tail_hits_stop(o, r, piece, piece_len);
        if ((i + 1 == max_new || stop_now) && !r->keep_all)
            break;
        st = linattn_session_feed(r->sess, &tok, 1, r->logits);
        if (st == LINATTN_ERR_CONTEXT_FULL) {
            r->pending = tok;
            r->stopped = 1;
            break;
        }
        if (st != LINATTN_OK)
            return cli_fail_status("generate", st);
        if (stop_now)
            break;
    }
    return 0;
}

/* The text, or the conversation: after each answer a line of stdin is
 * fed and the next answer answers it (with no prompt, the user speaks
 * first), until the input ends, the context fills or a signal ends it:
 * 0, or 1 after a failure. */
static int run_turns(const gen_opts *o, gen_run *r)
{
    int need_input = o->interactive && r->n_in == 0;
    for (;;) {
        if (need_input) {
            long got = read_turn(o, r);
            if (got < 0)
                return 1;
            if (got == 0)
                break;
            int fed = feed_turn(o, r, (size_t)got);
            if (fed < 0)
                return 1;
            if (fed > 0)
                break;
        }
        need_input = o->interactive;
        if (generate_answer(o, r))
            return 1;
        fwrite(r->piece_out, 1, cli_utf8_flush(&r->utf8, r->piece_out), stdout);
        if (r->signalled == SIGINT && o->interactive) { /* the answer ends; the conversation goes on */
            cli_signal_handled();
            r->signalled = 0;
        }
        if (!o->interactive || r->stopped || r->signalled)
            break;
        if (!r->tail_len || r->tail[r->tail_len - 1] != '\n')
            putchar('\n');
        if (!cli_stdout_ok())
            return 1;
    }
    return 0;
}

/* Why the text ended early, on stderr: a signal, or a full context. */
static void report_end(const gen_opts *o, const gen_run *r)
{
    const linattn_config *cfg = r->cfg;
    const int made = r->made;
    if (r->signalled)
        fprintf(stderr, "linattn: generate: %s after %d token%s%s\n",
                r->signalled == SIGTERM ? "terminated (SIGTERM)" : "interrupted (Ctrl-C)", made,
                made == 1 ? "" : "s", o->save ? "; saving the stream" : "");
    if (r->stopped)
        fprintf(stderr, "linattn: generate: stopped after %d token%s: the context is full "
                        "(max_seq_len %d, %s)%s\n",
                made, made == 1 ? "" : "s", cfg->max_seq_len,
                cfg->attention == LINATTN_ATTN_SOFTMAX ? "softmax KV cache"
                                                       : "learned position table",
                cfg->attention == LINATTN_ATTN_SOFTMAX
                    ? "; --ctx-overflow window goes on as a sliding window"
                    : "");
}

/* --save-state: the stream with the sampler's state, window and the
 * pending token: 0, or 1 after saying why. */
static int save_stream(const gen_opts *o, gen_run *r)
{
    resume_info *info = r->info;
    info->sampler_state = linattn_sampler_get_state(r->sampler);
    info->pending = r->pending;
    info->n_recent = linattn_sampler_recent(r->sampler, info->recent, r->gen->repeat_last_n);
    size_t bytes = sizeof *info + (size_t)info->n_recent * sizeof info->recent[0];
    linattn_status st = linattn_session_save(r->sess, o->save, info, bytes);
    if (st != LINATTN_OK)
        return cli_fail_status("save-state", st);
    return 0;
}

/* --stats: speed and memory, on stderr. */
static void print_stats(const gen_run *r)
{
    const linattn_config *cfg = r->cfg;
    linattn_isa used;
    linattn_get_isa(&used, NULL);
    /* made tokens took made - 1 decode steps (the first sample needs
     * none); the rate is per step, the count the tokens written */
    const int made = r->made, steps = made > 0 ? made - 1 : 0;
    const int prompt = r->prompt_tokens + r->line_tokens;
    const double prefill_s = (r->t1 - r->t0) + r->line_feed,
                 decode_s = (r->t2 - r->t1) - r->waited - r->line_feed;
    fprintf(stderr,
            "stats: prompt %d tokens, prefill %.1f tokens/s, decode %d tokens %.1f tokens/s "
            "(%.3f ms/token), isa %s, threads %d, %s %zu bytes\n",
            prompt, prompt / (prefill_s > 0 ? prefill_s : 1e-9), made,
            steps / (decode_s > 0 ? decode_s : 1e-9), steps ? 1e3 * decode_s / steps : 0.0,
            linattn_isa_name(used), cfg->threads > 0 ? cfg->threads : linattn_max_threads(),
            cfg->attention == LINATTN_ATTN_LINEAR || cfg->window > 0 ? "state" : "kv-cache",
            linattn_session_state_bytes(r->sess));
}

static void free_run(gen_run *r)
{
    cli_signals_restore();
    free(r->line);
    free(r->gen);
    free(r->tail);
    free(r->info);
    linattn_sampler_free(r->sampler);
    linattn_session_free(r->sess);
    linattn_model_free(r->model);
    free(r->logits);
    free(r->toks);
    free(r->prompt_buf);
    free(r->cfg);
}

int cmd_generate(int argc, char **argv)
{
    gen_opts o;
    int rc = parse_generate_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    gen_run r = {.pending = -1};
    if (!(r.cfg = malloc(sizeof *r.cfg)))
        return cli_fail("generate", "out of memory");
    if (!(r.gen = malloc(sizeof *r.gen))) {
        free(r.cfg);
        return cli_fail("generate", "out of memory");
    }
    rc = 1;
    if (setup_config(&o, &r) || load_prompt_text(&o, &r) || open_model(&o, &r) ||
        size_input(&o, &r) || (o.load && resume_stream(&o, &r)) || add_prompt(&r) ||
        start_stream(&o, &r) || run_turns(&o, &r))
        goto out;
    r.t2 = now_s();
    if (!o.interactive)
        putchar('\n');
    if (!cli_stdout_ok())
        goto out;
    report_end(&o, &r);
    if (o.save && save_stream(&o, &r))
        goto out;
    if (o.stats)
        print_stats(&r);
    /* as a shell reports a signal, after the work is kept */
    rc = r.input_failed ? 1 : r.signalled ? 128 + r.signalled : 0;
out:
    free_run(&r);
    return rc;
}
