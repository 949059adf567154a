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
    "usage: linattn generate CONFIG [options]\n"
    "       linattn generate -m CONFIG [options]\n"
    "\n"
    "Feeds a prompt to the model CONFIG describes and streams the text it writes.\n"
    "\n"
    "  -m, --model CONFIG   the config (instead of the first argument)\n"
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
    "                       run.c stops there)\n"
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
       OPT_IGNORE_EOS, OPT_CHAT_TEMPLATE, OPT_CTX_OVERFLOW };

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

int cmd_generate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},
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
    const char *prompt = NULL, *prompt_file = NULL, *isa = NULL, *save = NULL, *load = NULL;
    const char *model_flag = NULL, *stops[MAX_STOPS];
    int n_stops = 0, display_prompt = 1, print_ids = 0, interactive = 0, ignore_eos = 0;
    const char *chat_name = "auto", *overflow = "stop";
    long tokens = -1, top_k = -1, threads = -1, last_n = -1, ctx = -1;
    float temperature = -1.0f, top_p = -1.0f, penalty = -1.0f, min_p = -1.0f;
    logit_bias biases[MAX_LOGIT_BIAS];
    int n_biases = 0;
    uint64_t seed = 0;
    int have_seed = 0, stats = 0, c;
    char opt_buf[3];
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":him:p:f:n:t:s:c:", opts, NULL)) != -1) {
        switch (c) {
        case 'i': interactive = 1; break;
        case 'm': model_flag = optarg; break;
        case 'p': /* fall through */
        case OPT_PROMPT: prompt = optarg; break;
        case 'f': /* fall through */
        case OPT_PROMPT_FILE: prompt_file = optarg; break;
        case 'n': /* fall through */
        case OPT_TOKENS:
            if (cli_parse_long("generate", "--tokens", optarg, -1, INT_MAX, &tokens))
                return 1;
            if (tokens == -1)
                tokens = INT_MAX; /* until the end of text, a stop, a signal or a full context */
            break;
        case OPT_STOP:
            if (n_stops == MAX_STOPS)
                return cli_fail("generate", "--stop: more than %d given", MAX_STOPS);
            if (!optarg[0])
                return cli_fail("generate", "--stop: an empty text would stop at once");
            stops[n_stops++] = optarg;
            break;
        case 'c': /* fall through */
        case OPT_CTX: if (cli_parse_long("generate", c == 'c' ? "--ctx-size" : "--ctx", optarg, 1, LINATTN_MAX_SEQ_LEN, &ctx)) return 1; break;
        case OPT_CTX_OVERFLOW: overflow = optarg; break;
        case OPT_NO_DISPLAY: display_prompt = 0; break;
        case OPT_PRINT_IDS: print_ids = 1; break;
        case OPT_IGNORE_EOS: ignore_eos = 1; break;
        case OPT_CHAT_TEMPLATE: chat_name = optarg; break;
        case OPT_TEMP: if (cli_parse_float("generate", "--temperature", optarg, 0, 100, &temperature)) return 1; break;
        case OPT_TOPK: if (cli_parse_long("generate", "--top-k", optarg, 0, INT_MAX, &top_k)) return 1; break;
        case OPT_TOPP: if (cli_parse_float("generate", "--top-p", optarg, 1e-9, 1, &top_p)) return 1; break;
        case 's': /* fall through */
        case OPT_SEED: if (cli_parse_u64("generate", "--seed", optarg, &seed)) return 1; have_seed = 1; break;
        case 't': /* fall through */
        case OPT_THREADS: if (cli_parse_long("generate", "--threads", optarg, 0, 1024, &threads)) return 1; break;
        case OPT_ISA: isa = optarg; break;
        case OPT_STATS: stats = 1; break;
        case OPT_SAVE: save = optarg; break;
        case OPT_LOAD: load = optarg; break;
        case OPT_PENALTY: if (cli_parse_float("generate", "--repeat-penalty", optarg, 1e-9, 1e9, &penalty)) return 1; break;
        case OPT_LAST_N: if (cli_parse_long("generate", "--repeat-last-n", optarg, 0, LINATTN_MAX_REPEAT_LAST_N, &last_n)) return 1; break;
        case OPT_MIN_P: if (cli_parse_float("generate", "--min-p", optarg, 0, 1, &min_p)) return 1; break;
        case OPT_BIAS:
            if (n_biases == MAX_LOGIT_BIAS)
                return cli_fail("generate", "--logit-bias: more than %d given", MAX_LOGIT_BIAS);
            if (parse_logit_bias(optarg, &biases[n_biases++]))
                return 1;
            break;
        case 'h': fputs(usage, stdout); return 0;
        case ':': return cli_fail("generate", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_fail("generate", "unknown option '%s' (try 'linattn generate --help')",
                            bad_option(argv, "himpfntsc", opt_buf));
        }
    }
    if (!model_flag && optind >= argc)
        return cli_fail("generate", "no config file given (usage: linattn generate CONFIG ...)");
    if (optind + (model_flag ? 0 : 1) < argc)
        return cli_fail("generate", "unexpected argument '%s'", argv[optind + (model_flag ? 0 : 1)]);
    if (prompt && prompt_file)
        return cli_fail("generate", "give --prompt or --prompt-file, not both");
    const char *config_path = model_flag ? model_flag : argv[optind];
    if (interactive && prompt_file && !strcmp(prompt_file, "-"))
        return cli_fail("generate", "--interactive reads the conversation from stdin: "
                                    "--prompt-file - cannot read it too");
    cli_chat chat = CLI_CHAT_PLAIN;
    if (strcmp(chat_name, "auto") && cli_chat_by_name(chat_name, &chat) != 0)
        return cli_fail("generate", "--chat-template: '%s' is none of auto, %s", chat_name,
                        cli_chat_names());
    if (strcmp(overflow, "stop") && strcmp(overflow, "window"))
        return cli_fail("generate", "--ctx-overflow: '%s' is neither stop nor window", overflow);
    const int slide = !strcmp(overflow, "window");
    const int default_stop = interactive && n_stops == 0; /* the chat format's end, once known */
    cli_check_threads("generate", threads);

    linattn_config *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return cli_fail("generate", "out of memory");
    int rc = 1;
    char *prompt_buf = NULL;
    int *toks = NULL;
    float *logits = NULL;
    linattn_model *model = NULL;
    linattn_session *sess = NULL;
    linattn_sampler *sampler = NULL;
    resume_info *info = NULL;
    char *tail = NULL; /* the end of the text written, for --stop */
    char *line = NULL; /* a line of the conversation */
    cli_generate *gen = malloc(sizeof *gen);
    if (!gen) {
        free(cfg);
        return cli_fail("generate", "out of memory");
    }
    linattn_status st = cli_load_config(config_path, cfg, gen, NULL);
    if (st != LINATTN_OK) {
        cli_fail_status("config", st);
        goto out;
    }
    if (!linattn_config_has_model(cfg)) {
        cli_fail("generate", "%s: no [model] section: nothing to generate with", cfg->path);
        goto out;
    }
    if (cli_choose_isa("generate", isa, cfg->isa))
        goto out;
    if (ctx > 0) {
        /* the context the model was trained for: its config's (or file's) */
        const int trained = cfg->max_seq_len;
        cfg->max_seq_len = (int)ctx;
        if ((st = linattn_config_validate(cfg)) != LINATTN_OK) {
            cli_fail_status("ctx", st);
            goto out;
        }
        if (trained > 0 && ctx > trained &&
            (cfg->attention != LINATTN_ATTN_LINEAR || cfg->positions != LINATTN_POS_NONE))
            cli_warn("generate", "--ctx %ld passes the %d tokens this model was trained for "
                                 "(max_seq_len of %s): past them its text may turn to noise",
                     ctx, trained, cfg->path[0] ? cfg->path : "its config");
    }
    if (slide && cfg->attention == LINATTN_ATTN_SOFTMAX && cfg->window == 0) {
        if (cfg->positions == LINATTN_POS_LEARNED) {
            cli_fail("generate", "--ctx-overflow window: this model's learned positions end at "
                                 "%d tokens; a window cannot go past them",
                     cfg->max_seq_len);
            goto out;
        }
        /* the cache's length as a window: the same text until it fills (a
         * query sees every key), then it slides */
        cfg->window = cfg->max_seq_len;
        if ((st = linattn_config_validate(cfg)) != LINATTN_OK) {
            cli_fail_status("ctx-overflow", st);
            goto out;
        }
    }
    if (threads >= 0)
        cfg->threads = (int)threads;
    if (tokens >= 0)
        gen->max_new_tokens = (int)tokens;
    if (temperature >= 0)
        gen->temperature = temperature;
    if (top_k >= 0)
        gen->top_k = (int)top_k;
    if (top_p > 0)
        gen->top_p = top_p;
    if (have_seed)
        gen->seed = seed;
    if (penalty > 0)
        gen->repeat_penalty = penalty;
    if (last_n >= 0)
        gen->repeat_last_n = (int)last_n;
    if (min_p >= 0)
        gen->min_p = min_p;
    /* everything checkable about the save path, before the generation it would lose */
    if (save && (st = safe_file_check(save, "state file")) != LINATTN_OK) {
        cli_fail_status("save-state", st);
        goto out;
    }

    size_t plen = 0;
    if (prompt_file) {
        if (!(prompt_buf = read_prompt(prompt_file, &plen)))
            goto out;
    } else {
        /* a conversation starts from what the user types, not the config's prompt */
        const char *p = prompt ? prompt : load || interactive ? "" : gen->prompt;
        plen = strlen(p);
        prompt_buf = malloc(plen + 1);
        if (prompt_buf)
            memcpy(prompt_buf, p, plen + 1);
    }
    if (!prompt_buf) {
        cli_fail("generate", "out of memory");
        goto out;
    }
    if (plen == 0 && !load && !interactive) {
        cli_fail("generate", "empty prompt: give --prompt, --prompt-file or [generate] prompt");
        goto out;
    }
    if (plen > INT_MAX - 1) {
        cli_fail("generate", "prompt of %zu bytes is too long", plen);
        goto out;
    }

    if ((st = linattn_model_from_config(cfg, &model)) != LINATTN_OK ||
        (st = linattn_session_new(model, &sess)) != LINATTN_OK ||
        (st = linattn_sampler_new(cfg->vocab_size, gen->temperature, gen->top_k, gen->top_p,
                                  gen->seed, &sampler)) != LINATTN_OK ||
        (st = linattn_sampler_set_repetition_penalty(sampler, gen->repeat_penalty,
                                                     gen->repeat_last_n)) != LINATTN_OK ||
        (st = linattn_sampler_set_min_p(sampler, gen->min_p)) != LINATTN_OK) {
        cli_fail_status("generate", st);
        goto out;
    }
    for (int i = 0; i < n_biases; i++)
        if ((st = linattn_sampler_set_logit_bias(sampler, biases[i].token, biases[i].bias)) !=
            LINATTN_OK) {
            cli_fail_status("logit-bias", st);
            goto out;
        }
    if (gen->max_new_tokens > 0 || interactive) { /* refused before the prefill it would waste */
        unsigned char *banned = calloc((size_t)cfg->vocab_size, 1);
        int n_banned = 0;
        if (!banned) {
            cli_fail("generate", "out of memory");
            goto out;
        }
        for (int i = 0; i < n_biases; i++) /* a later flag for a token wins */
            banned[biases[i].token] = biases[i].bias == -INFINITY;
        for (int t = 0; t < cfg->vocab_size; t++)
            n_banned += banned[t];
        free(banned);
        if (n_banned == cfg->vocab_size) {
            cli_fail("logit-bias", "every token is banned (all %d at -inf): nothing could be "
                                   "drawn", cfg->vocab_size);
            goto out;
        }
    }
    linattn_session_set_threads(sess, cfg->threads);
    const linattn_tokenizer *tokz = linattn_model_tokenizer(model);
    if (interactive && !strcmp(chat_name, "auto")) /* the model's own, tokenizer_config.json's */
        cli_chat_from_tokenizer(linattn_tokenizer_path(tokz), &chat);
    if (default_stop)
        stops[n_stops++] = cli_chat_end(chat); /* plain: an answer is a line */
    /* a new stream starts with the tokenizer's bos (a resumed one goes on) */
    int add_bos = !load && plen > 0 && linattn_tokenizer_adds_bos(tokz);
    size_t n_prompt = 0;
    if ((st = linattn_tokenizer_encode(tokz, prompt_buf, plen, add_bos, NULL, 0, &n_prompt)) !=
        LINATTN_OK) {
        cli_fail_status("prompt", st);
        goto out;
    }
    if (n_prompt > INT_MAX - 1) {
        cli_fail("prompt", "%zu tokens are too many", n_prompt);
        goto out;
    }
    toks = malloc((n_prompt + 1) * sizeof *toks);
    logits = malloc((size_t)cfg->vocab_size * sizeof *logits);
    /* the window is kept (and saved) even with the penalty off, so a resumed
     * run that turns it on sees the same tokens as one long run would */
    size_t info_bytes = sizeof *info + (size_t)gen->repeat_last_n * sizeof info->recent[0];
    info = malloc(info_bytes);
    if (!toks || !logits || !info) {
        cli_fail("generate", "out of memory");
        goto out;
    }

    /* The tokens to feed first: a resumed stream's pending token (one that
     * did not fit before), then the prompt. */
    int n_in = 0;
    if (load) {
        size_t got = 0;
        if ((st = linattn_session_load(sess, load, info, info_bytes, &got)) != LINATTN_OK) {
            cli_fail_status("load-state", st);
            goto out;
        }
        if (got < sizeof *info || info->n_recent < 0 ||
            got != sizeof *info + (size_t)info->n_recent * sizeof info->recent[0]) {
            cli_fail("load-state", "%s: not saved by 'linattn generate'", load);
            goto out;
        }
        if (!have_seed)
            linattn_sampler_set_state(sampler, info->sampler_state);
        /* stored newest first, so a smaller window than the saved one got the
         * newest; accepted oldest first */
        int n_recent = info->n_recent < gen->repeat_last_n ? info->n_recent : gen->repeat_last_n;
        for (int i = n_recent - 1; i >= 0; i--)
            if ((st = linattn_sampler_accept(sampler, info->recent[i])) != LINATTN_OK) {
                cli_fail_status("load-state", st);
                goto out;
            }
        if (info->pending >= 0)
            toks[n_in++] = info->pending; /* accepted before it was saved */
    }
    int first_new = n_in;
    if ((st = linattn_tokenizer_encode(tokz, prompt_buf, plen, add_bos, toks + n_in, n_prompt,
                                       &n_prompt)) != LINATTN_OK) {
        cli_fail_status("prompt", st);
        goto out;
    }
    if (check_vocab("prompt", toks + n_in, n_prompt, cfg->vocab_size))
        goto out;
    n_in += (int)n_prompt;
    /* the prompt enters the window (only its last repeat_last_n tokens can stay) */
    int from = n_in - first_new > gen->repeat_last_n ? n_in - gen->repeat_last_n : first_new;
    for (int i = from; i < n_in; i++)
        if ((st = linattn_sampler_accept(sampler, toks[i])) != LINATTN_OK) {
            cli_fail_status("prompt", st);
            goto out;
        }

    if ((uint64_t)n_in > linattn_session_tokens_left(sess)) {
        cli_fail("prompt", "context full: %llu tokens fed, %d more would pass max_seq_len %d (%s)",
                 (unsigned long long)linattn_session_tokens(sess), n_in, cfg->max_seq_len,
                 cfg->attention == LINATTN_ATTN_SOFTMAX ? "softmax KV cache"
                                                        : "learned position table");
        goto out;
    }
    /* Ctrl-C from here on ends the generation (or, in a conversation, the
     * answer) and keeps the work: stats, --save-state; SIGTERM likewise,
     * then exits; a second Ctrl-C exits at once */
    cli_signals_install();
    int signalled = 0; /* the signal that ended the run, or 0 */
    double t0 = now_s();
    int prompt_tokens = n_in;
    if (n_in > 0 && (st = feed_prompt(sess, toks, n_in, logits)) != LINATTN_OK) {
        cli_fail_status("prompt", st);
        goto out;
    }
    if (n_in == 0) { /* a resumed stream samples from the logits it was saved with */
        const float *kept = linattn_session_logits(sess);
        if (!kept && gen->max_new_tokens > 0 && !interactive) {
            cli_fail("generate", "%s: nothing to continue from (give --prompt)", load);
            goto out;
        }
        if (kept)
            memcpy(logits, kept, (size_t)cfg->vocab_size * sizeof(float));
    }
    double t1 = now_s();
    if (!load && display_prompt && !print_ids)
        fwrite(prompt_buf, 1, plen, stdout);
    if (!cli_stdout_ok()) /* the text would be lost: nothing is generated or saved */
        goto out;
    size_t stop_max = 0;
    for (int i = 0; i < n_stops; i++)
        stop_max = strlen(stops[i]) > stop_max ? strlen(stops[i]) : stop_max;
    tail = stop_max ? calloc(stop_max + 1, 1) : NULL;
    size_t tail_len = 0;
    if (stop_max && !tail) {
        cli_fail("generate", "out of memory");
        goto out;
    }
    int warned_no_text = 0;
    const int eos = ignore_eos ? -1 : linattn_tokenizer_eos(tokz);
    /* llama2.c's models separate stories with BOS and never write EOS:
     * run.c stops at it */
    const int bos_ends = ignore_eos || strcmp(linattn_tokenizer_name(tokz), "llama2c")
                             ? -1
                             : linattn_tokenizer_bos(tokz);
    /* the token before the next one, for decoding (-1: a text's start;
     * INT_MAX: unknown, not a start) */
    int prev = n_in > 0 ? toks[n_in - 1]
               : load && info->n_recent > 0 ? info->recent[0]
               : load ? INT_MAX : -1;
    cli_utf8 utf8 = {{0}, 0, 0};
    char piece_out[64 + 4];

    /* Every printed token is fed (the last one too when saving or in a
     * conversation), so a saved stream holds all the text and its logits: a
     * resume samples at once. Interactive: after each turn a line of stdin is
     * fed, and the next turn answers it. */
    int pending = -1, made = 0, stopped = 0, keep_all = save || interactive;
    int need_input = interactive && n_in == 0; /* no prompt: the user speaks first */
    int input_failed = 0; /* the conversation ended on a bad line or a read error */
    /* --stats counts the model's time: not the user's typing, and a line's
     * feed as prefill */
    double waited = 0, line_feed = 0;
    int line_tokens = 0;
    for (;;) {
        if (need_input) {
            if (isatty(STDIN_FILENO))
                fputs("> ", stderr);
            double w0 = now_s();
            long got = read_chat_line(&line);
            waited += now_s() - w0;
            if (got == LINE_ERROR && (errno == EINTR || cli_signal_pending()))
                got = LINE_END; /* Ctrl-C at the prompt ends the conversation */
            if (got == LINE_END) {
                signalled = cli_signal_pending();
                break;
            }
            if (got == LINE_NOMEM) {
                cli_fail(argv[0], "out of memory");
                goto out;
            }
            if (got < 0) { /* the conversation so far is kept, as at its end */
                if (got == LINE_TOO_LONG)
                    cli_fail(argv[0], "standard input: a line longer than %zu bytes (the limit "
                                      "of one line); the conversation ends here",
                             MAX_CHAT_LINE_BYTES);
                else
                    cli_fail(argv[0], "reading standard input: %s", strerror(errno));
                input_failed = 1;
                break;
            }
            if (line[got - 1] != '\n') { /* the last line without its newline */
                line[got++] = '\n';
                line[got] = '\0';
            }
            int line_bos = linattn_session_tokens(sess) == 0 && linattn_tokenizer_adds_bos(tokz);
            size_t nl = 0;
            int *lt = NULL;
            char *turn = line; /* plain: the line as it is */
            size_t turn_len = (size_t)got;
            if (chat != CLI_CHAT_PLAIN) { /* the line as a user turn, the answer opened */
                line[got - 1] = '\0';
                cli_chat_msg um = {"user", line};
                if (cli_chat_render(chat, &um, 1, linattn_session_tokens(sess) == 0, &turn,
                                    &turn_len) != 0) {
                    cli_fail("generate", "out of memory");
                    goto out;
                }
            }
            if ((st = linattn_tokenizer_encode(tokz, turn, turn_len, line_bos, NULL, 0, &nl)) !=
                    LINATTN_OK ||
                !(lt = malloc((nl + 1) * sizeof *lt)) ||
                (st = linattn_tokenizer_encode(tokz, turn, turn_len, line_bos, lt, nl, &nl)) !=
                    LINATTN_OK) {
                free(lt);
                if (turn != line)
                    free(turn);
                if (st != LINATTN_OK)
                    cli_fail_status("generate", st);
                else
                    cli_fail("generate", "out of memory");
                goto out;
            }
            if (turn != line)
                free(turn);
            if (check_vocab("line", lt, nl, cfg->vocab_size)) {
                free(lt);
                goto out;
            }
            if (nl > 0)
                prev = lt[nl - 1];
            for (size_t k = 0; k < nl && st == LINATTN_OK; k++)
                st = linattn_sampler_accept(sampler, lt[k]);
            double f0 = now_s();
            if (st == LINATTN_OK && nl > 0) /* nl <= 2 got + 2: a line fits an int */
                st = linattn_session_feed(sess, lt, (int)nl, logits);
            line_feed += now_s() - f0;
            line_tokens += (int)nl;
            free(lt);
            if (st == LINATTN_ERR_CONTEXT_FULL) {
                stopped = 1;
                break;
            }
            if (st != LINATTN_OK) {
                cli_fail_status("generate", st);
                goto out;
            }
            tail_len = 0;
        }
        need_input = interactive;
    for (int i = 0; i < gen->max_new_tokens; i++) {
        int tok;
        if ((signalled = cli_signal_pending()) != 0)
            break; /* every token so far is fed: the stream stands whole */
        if ((st = linattn_sample(sampler, logits, &tok)) != LINATTN_OK ||
            (st = linattn_sampler_accept(sampler, tok)) != LINATTN_OK) {
            cli_fail_status("generate", st);
            goto out;
        }
        /* the token's text: its bytes after prev (none for the end of text) */
        const char *piece = "";
        size_t piece_len = 0;
        int stop_now = tok == eos || (bos_ends >= 0 && tok == bos_ends);
        if (!stop_now && linattn_tokenizer_decode(tokz, prev, tok, &piece, &piece_len) !=
                             LINATTN_OK) {
            piece_len = 0;
            if (!print_ids && !warned_no_text) {
                if (!strcmp(linattn_tokenizer_name(tokz), "bytes"))
                    cli_warn("generate", "token %d is not a byte and this model has no tokenizer "
                                         "for it: such tokens print nothing (--print-ids shows "
                                         "ids)", tok);
                else
                    cli_warn("generate", "token %d is past the %d tokens of the tokenizer (%s): "
                                         "such tokens print nothing (--print-ids shows ids)",
                             tok, linattn_tokenizer_vocab(tokz), linattn_tokenizer_name(tokz));
                warned_no_text = 1;
            }
        }
        prev = tok;
        if (print_ids)
            printf("%s%d", made ? " " : "", tok);
        else
            for (size_t at = 0; at < piece_len; at += 64) {
                size_t c = piece_len - at < 64 ? piece_len - at : 64;
                fwrite(piece_out, 1, cli_utf8_take(&utf8, piece + at, c, piece_out), stdout);
            }
        if (!cli_stdout_ok())
            goto out;
        made++;
        for (size_t b = 0; tail && b < piece_len && !stop_now; b++) {
            if (tail_len == stop_max)
                memmove(tail, tail + 1, --tail_len);
            tail[tail_len++] = piece[b];
            for (int k = 0; k < n_stops && !stop_now; k++) {
                size_t sl = strlen(stops[k]);
                stop_now = tail_len >= sl && !memcmp(tail + tail_len - sl, stops[k], sl);
            }
        }
        if ((i + 1 == gen->max_new_tokens || stop_now) && !keep_all)
            break;
        st = linattn_session_feed(sess, &tok, 1, logits);
        if (st == LINATTN_ERR_CONTEXT_FULL) {
            pending = tok;
            stopped = 1;
            break;
        }
        if (st != LINATTN_OK) {
            cli_fail_status("generate", st);
            goto out;
        }
        if (stop_now)
            break;
    }
        fwrite(piece_out, 1, cli_utf8_flush(&utf8, piece_out), stdout);
        if (signalled == SIGINT && interactive) { /* the answer ends; the conversation goes on */
            cli_signal_handled();
            signalled = 0;
        }
        if (!interactive || stopped || signalled)
            break;
        if (!tail_len || tail[tail_len - 1] != '\n')
            putchar('\n');
        if (!cli_stdout_ok())
            goto out;
    }
    double t2 = now_s();
    if (!interactive)
        putchar('\n');
    if (!cli_stdout_ok())
        goto out;
    if (signalled)
        fprintf(stderr, "linattn: generate: %s after %d token%s%s\n",
                signalled == SIGTERM ? "terminated (SIGTERM)" : "interrupted (Ctrl-C)", made,
                made == 1 ? "" : "s", save ? "; saving the stream" : "");
    if (stopped)
        fprintf(stderr, "linattn: generate: stopped after %d token%s: the context is full "
                        "(max_seq_len %d, %s)%s\n",
                made, made == 1 ? "" : "s", cfg->max_seq_len,
                cfg->attention == LINATTN_ATTN_SOFTMAX ? "softmax KV cache"
                                                       : "learned position table",
                cfg->attention == LINATTN_ATTN_SOFTMAX
                    ? "; --ctx-overflow window goes on as a sliding window"
                    : "");
    if (save) {
        info->sampler_state = linattn_sampler_get_state(sampler);
        info->pending = pending;
        info->n_recent = linattn_sampler_recent(sampler, info->recent, gen->repeat_last_n);
        size_t bytes = sizeof *info + (size_t)info->n_recent * sizeof info->recent[0];
        if ((st = linattn_session_save(sess, save, info, bytes)) != LINATTN_OK) {
            cli_fail_status("save-state", st);
            goto out;
        }
    }
    if (stats) {
        linattn_isa used;
        linattn_get_isa(&used, NULL);
        /* made tokens took made - 1 decode steps (the first sample needs
         * none); the rate is per step, the count the tokens written */
        int steps = made > 0 ? made - 1 : 0;
        const double prefill_s = (t1 - t0) + line_feed, decode_s = (t2 - t1) - waited - line_feed;
        fprintf(stderr,
                "stats: prompt %d tokens, prefill %.1f tokens/s, decode %d tokens %.1f tokens/s "
                "(%.3f ms/token), isa %s, threads %d, %s %zu bytes\n",
                prompt_tokens + line_tokens,
                (prompt_tokens + line_tokens) / (prefill_s > 0 ? prefill_s : 1e-9), made,
                steps / (decode_s > 0 ? decode_s : 1e-9), steps ? 1e3 * decode_s / steps : 0.0,
                linattn_isa_name(used),
                cfg->threads > 0 ? cfg->threads : linattn_max_threads(),
                cfg->attention == LINATTN_ATTN_LINEAR || cfg->window > 0 ? "state" : "kv-cache",
                linattn_session_state_bytes(sess));
    }
    /* as a shell reports a signal, after the work is kept */
    rc = input_failed ? 1 : signalled ? 128 + signalled : 0;
out:
    cli_signals_restore();
    free(line);
    free(gen);
    free(tail);
    free(info);
    linattn_sampler_free(sampler);
    linattn_session_free(sess);
    linattn_model_free(model);
    free(logits);
    free(toks);
    free(prompt_buf);
    free(cfg);
    return rc;
}
