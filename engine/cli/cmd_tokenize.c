/* cmd_tokenize.c: `linattn tokenize` (text to ids or pieces) and `linattn detokenize` (ids to text), with a config's tokenizer or any the engine loads. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../escape.h"
#include "cli.h"

static const char usage_tok[] =
    "usage: linattn tokenize CONFIG [TEXT] [options]\n"
    "       linattn tokenize --tokenizer SPEC [TEXT] [options]\n"
    "\n"
    "Prints the token ids of TEXT (or of --file FILE, or of stdin when neither\n"
    "is given) under the tokenizer of CONFIG's model (its [model] tokenizer, or\n"
    "the one of its Hugging Face folder; bytes by default) or of SPEC. The text\n"
    "is taken as it is: no newline is added or removed.\n"
    "\n"
    "  --tokenizer SPEC  bytes, llama2c:PATH (tokenizer.bin), hf:PATH\n"
    "                    (tokenizer.json or its folder) or gguf:PATH (a GGUF file's\n"
    "                    vocabulary), instead of CONFIG\n"
    "  -f, --file FILE   the text to encode ('-': stdin)\n"
    "  --ids             the ids on one line, separated by spaces (default)\n"
    "  --pieces          one token a line: its id, a tab, its bytes (control\n"
    "                    bytes and broken UTF-8 as \\xNN)\n"
    "  --count           only the number of tokens\n"
    "  --bos, --no-bos   begin with the tokenizer's bos or not (default: as the\n"
    "                    tokenizer does, e.g. llama2.c yes, bytes no)\n"
    "  -h, --help        this text\n"
    "\n"
    "Example: linattn tokenize configs/kjv-llama.ini 'In the beginning' --pieces\n";

static const char usage_detok[] =
    "usage: linattn detokenize CONFIG [ID...] [options]\n"
    "       linattn detokenize --tokenizer SPEC [ID...] [options]\n"
    "\n"
    "Writes the text of the token ids given (or read from stdin, separated by\n"
    "spaces, commas or newlines) to stdout, byte for byte as the tokens decode,\n"
    "under the tokenizer of CONFIG's model or of SPEC: the inverse of\n"
    "'linattn tokenize'. A leading bos gives no text (and the space a\n"
    "sentencepiece tokenizer puts after it is dropped), so tokenize then\n"
    "detokenize gives the text back.\n"
    "\n"
    "  --tokenizer SPEC  bytes, llama2c:PATH, hf:PATH or gguf:PATH, instead of CONFIG\n"
    "  -h, --help        this text\n";

/* The tokenizer of --tokenizer SPEC, else of the config at path. */
static int open_tokenizer(const char *cmd, const char *spec, const char *config,
                          linattn_tokenizer **out)
{
    linattn_status st;
    if (spec) {
        if ((st = linattn_tokenizer_load(spec, out)) != LINATTN_OK)
            return cli_fail_status(cmd, st);
        return 0;
    }
    linattn_config *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return cli_fail(cmd, "out of memory");
    st = cli_load_config(config, cfg, NULL, NULL);
    if (st == LINATTN_OK)
        st = linattn_tokenizer_load(cfg->tokenizer, out);
    free(cfg);
    return st == LINATTN_OK ? 0 : cli_fail_status(cmd, st);
}

/* All of stream f into *buf (NUL-terminated), *len bytes. */
static int read_all(const char *cmd, FILE *f, const char *name, char **buf, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    if (!b)
        return cli_fail(cmd, "out of memory");
    for (;;) {
        if (n + 1 == cap) {
            char *nb = cap > ((size_t)-1) / 2 ? NULL : realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return cli_fail(cmd, "%s: too large to hold in memory", name);
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        int e = errno;
        free(b);
        return cli_fail(cmd, "%s: cannot read: %s", name, strerror(e));
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

/* The text of --file (or '-', or none: stdin). */
static int read_text(const char *cmd, const char *file, char **buf, size_t *len)
{
    if (!file || !strcmp(file, "-"))
        return read_all(cmd, stdin, "stdin", buf, len);
    FILE *f = fopen(file, "rb");
    if (!f)
        return cli_fail(cmd, "%s: cannot open: %s", file, strerror(errno));
    int rc = read_all(cmd, f, file, buf, len);
    fclose(f);
    return rc;
}

/* A piece's bytes for one line: printable UTF-8 as it is, the rest \xNN
 * (tab and newline too, so one token stays one line). */
static void put_piece(const char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        const unsigned char c = (unsigned char)p[i];
        size_t u = c >= 0x80 ? linattn_utf8_len((const unsigned char *)p + i, n - i) : 0;
        if (u > 0) {
            fwrite(p + i, 1, u, stdout);
            i += u;
        } else if (c >= 0x20 && c < 0x7f && c != '\\') {
            putchar(c);
            i++;
        } else if (c == '\\') {
            fputs("\\\\", stdout);
            i++;
        } else {
            printf("\\x%02x", c);
            i++;
        }
    }
}

int cmd_tokenize(int argc, char **argv)
{
    static const char cmd[] = "tokenize";
    static const struct option opts[] = {
        {"tokenizer", required_argument, 0, 'T'}, {"file", required_argument, 0, 'f'},
        {"ids", no_argument, 0, 'I'},             {"pieces", no_argument, 0, 'P'},
        {"count", no_argument, 0, 'C'},           {"bos", no_argument, 0, 'B'},
        {"no-bos", no_argument, 0, 'N'},          {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *spec = NULL, *file = NULL;
    int mode = 'I', bos = -1, c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hf:", opts, NULL)) != -1) {
        switch (c) {
        case 'T': spec = optarg; break;
        case 'f': file = optarg; break;
        case 'I': case 'P': case 'C': mode = c; break;
        case 'B': bos = 1; break;
        case 'N': bos = 0; break;
        case 'h': fputs(usage_tok, stdout); return 0;
        case ':': return cli_fail(cmd, "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_fail(cmd, "unknown option '%s' (try 'linattn tokenize --help')",
                            argv[optind - 1]);
        }
    }
    const char *config = NULL, *text_arg = NULL;
    if (!spec) {
        if (optind >= argc)
            return cli_fail(cmd, "give a CONFIG or --tokenizer SPEC (try 'linattn tokenize --help')");
        config = argv[optind++];
    }
    if (optind < argc)
        text_arg = argv[optind++];
    if (optind < argc)
        return cli_fail(cmd, "unexpected argument '%s' (quote a text with spaces)", argv[optind]);
    if (text_arg && file)
        return cli_fail(cmd, "give the text or --file, not both");
    linattn_tokenizer *t = NULL;
    if (open_tokenizer(cmd, spec, config, &t))
        return 1;
    char *text = NULL;
    size_t len = 0;
    if (text_arg) {
        len = strlen(text_arg);
        text = malloc(len + 1);
        if (text)
            memcpy(text, text_arg, len + 1);
    } else if (read_text(cmd, file, &text, &len)) {
        linattn_tokenizer_free(t);
        return 1;
    }
    int *ids = NULL, rc = 0;
    size_t n = 0;
    const int add_bos = bos >= 0 ? bos : linattn_tokenizer_adds_bos(t);
    if (bos == 1 && linattn_tokenizer_bos(t) < 0)
        cli_warn(cmd, "--bos: the tokenizer (%s) has no bos token", linattn_tokenizer_name(t));
    linattn_status st = text ? linattn_tokenizer_encode(t, text, len, add_bos, NULL, 0, &n)
                             : LINATTN_ERR_NOMEM;
    if (st == LINATTN_OK && !(ids = malloc((n ? n : 1) * sizeof *ids)))
        st = LINATTN_ERR_NOMEM;
    if (st == LINATTN_OK)
        st = linattn_tokenizer_encode(t, text, len, add_bos, ids, n, &n);
    if (st != LINATTN_OK) {
        rc = st == LINATTN_ERR_NOMEM && !linattn_last_error()[0] ? cli_fail(cmd, "out of memory")
                                                                 : cli_fail_status(cmd, st);
    } else if (mode == 'C') {
        printf("%zu\n", n);
    } else if (mode == 'I') {
        for (size_t i = 0; i < n; i++)
            printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    } else {
        for (size_t i = 0; i < n; i++) {
            const char *p;
            size_t pl;
            if ((st = linattn_tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], &p, &pl)) !=
                LINATTN_OK) {
                rc = cli_fail_status(cmd, st);
                break;
            }
            printf("%d\t", ids[i]);
            put_piece(p, pl);
            putchar('\n');
        }
    }
    if (rc == 0 && !cli_stdout_ok())
        rc = 1;
    free(ids);
    free(text);
    linattn_tokenizer_free(t);
    return rc;
}

int cmd_detokenize(int argc, char **argv)
{
    static const char cmd[] = "detokenize";
    static const struct option opts[] = {
        {"tokenizer", required_argument, 0, 'T'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *spec = NULL;
    int c;
    opterr = 0;
    optind = 1;
    /* "+": ids are operands, and a negative one must not read as an option */
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case 'T': spec = optarg; break;
        case 'h': fputs(usage_detok, stdout); return 0;
        case ':': return cli_fail(cmd, "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_fail(cmd, "unknown option '%s' (try 'linattn detokenize --help')",
                            argv[optind - 1]);
        }
    }
    const char *config = NULL;
    if (!spec) {
        if (optind >= argc)
            return cli_fail(cmd, "give a CONFIG or --tokenizer SPEC (try 'linattn detokenize --help')");
        config = argv[optind++];
    }
    linattn_tokenizer *t = NULL;
    if (open_tokenizer(cmd, spec, config, &t))
        return 1;
    char *in = NULL;
    size_t len = 0;
    int rc = 0;
    if (optind < argc) { /* the ids as operands, joined by spaces */
        for (int i = optind; i < argc; i++)
            len += strlen(argv[i]) + 1;
        if ((in = malloc(len + 1))) {
            in[0] = '\0';
            for (int i = optind; i < argc; i++) {
                strcat(in, argv[i]);
                strcat(in, " ");
            }
        } else {
            rc = cli_fail(cmd, "out of memory");
        }
    } else {
        rc = read_text(cmd, NULL, &in, &len);
    }
    /* every id is checked before any text is written: a bad one leaves no
     * partial output behind */
    const int vocab = linattn_tokenizer_vocab(t);
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        int prev = -1;
        size_t count = 0;
        for (char *p = in; rc == 0 && p && *p;) {
            while (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t' || *p == '\r')
                p++;
            if (!*p)
                break;
            char *end;
            errno = 0;
            long id = strtol(p, &end, 10);
            if (end == p || (*end && !strchr(" ,\n\t\r", *end))) {
                size_t wl = strcspn(p, " ,\n\t\r");
                rc = cli_fail(cmd, "id %zu: expected an integer, got '%.*s%s'", count + 1,
                              (int)(wl < 24 ? wl : 24), p, wl > 24 ? "..." : "");
                break;
            }
            if (errno == ERANGE || id < 0 || id >= vocab) {
                rc = cli_fail(cmd, "id %zu: %.*s is not a token of this tokenizer (0..%d)",
                              count + 1, (int)(end - p), p, vocab - 1);
                break;
            }
            const char *bytes = NULL;
            size_t bl = 0;
            linattn_status st = LINATTN_OK;
            if (count > 0 || id != linattn_tokenizer_bos(t)) /* a leading bos: no text */
                st = linattn_tokenizer_decode(t, prev, (int)id, &bytes, &bl);
            if (st != LINATTN_OK)
                rc = cli_fail_status(cmd, st);
            else if (pass == 1 && bl > 0)
                fwrite(bytes, 1, bl, stdout);
            prev = (int)id;
            count++;
            p = end;
        }
    }
    if (rc == 0 && !cli_stdout_ok())
        rc = 1;
    free(in);
    linattn_tokenizer_free(t);
    return rc;
}
