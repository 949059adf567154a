/* main.c: the `linattn` program: picks a subcommand and hands it the rest of argv. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../escape.h"
#include "../file.h"
#include "cli.h"

static const char usage[] =
    "usage: linattn COMMAND [ARGS]\n"
    "       linattn --version | --help\n"
    "\n"
    "commands:\n"
    "  attend      run an attention operator on .npy tensors (flags or a config)\n"
    "  chat        a conversation on stdin: 'generate --interactive'\n"
    "  detokenize  token ids back to text\n"
    "  eval        bits per byte of a text under a model, overall and by position\n"
    "  generate    stream text from a model (a GGUF, llama2.c or Hugging Face file, or a config)\n"
    "  info        version, CPU features, selected ISA, threads (and a model summary)\n"
    "  quantize    write a model as a GGUF file in ggml's block types (llama.cpp reads it)\n"
    "  serve       an HTTP server: OpenAI-style completions and constant-size streams\n"
    "  tokenize    text to token ids (or pieces) under a model's tokenizer\n"
    "\n"
    "Run 'linattn COMMAND --help' for a command's options; 'linattn --version'\n"
    "prints the version.\n"
    "Environment: LINATTN_ISA=auto|scalar|avx2|avx512|neon picks the kernels\n"
    "(a command's --isa flag wins over it; it wins over a config's isa key).\n";

/* "linattn: WHAT: KIND" then the message, escaped (it quotes values from
 * argv and files), on one line of stderr. */
static void say(const char *what, const char *kind, const char *fmt, va_list ap)
{
    char raw[1024], safe[1024];
    vsnprintf(raw, sizeof raw, fmt, ap);
    linattn_escape(safe, sizeof safe, raw);
    fprintf(stderr, "linattn: %s: %s%s\n", what, kind, safe);
}

int cli_fail(const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(what, "", fmt, ap);
    va_end(ap);
    return 1;
}

/* Digits (with an optional '-' when signed) from the first byte to the last:
 * no leading blanks, no sign on unsigned values, nothing after. */
static int plain_number(const char *text, int allow_minus)
{
    const char *p = text + (allow_minus && text[0] == '-');
    return *p >= '0' && *p <= '9';
}

int cli_parse_long(const char *cmd, const char *flag, const char *text, long lo, long hi,
                   long *out)
{
    char *end;
    errno = 0;
    long v = plain_number(text, lo < 0) ? strtol(text, &end, 10) : 0;
    if (!plain_number(text, lo < 0) || errno || *end || v < lo || v > hi)
        return cli_fail(cmd, "%s: expected an integer in [%ld, %ld], got '%s'", flag, lo, hi,
                        text);
    *out = v;
    return 0;
}

int cli_parse_u64(const char *cmd, const char *flag, const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = plain_number(text, 0) ? strtoull(text, &end, 10) : 0;
    if (!plain_number(text, 0) || errno || *end)
        return cli_fail(cmd, "%s: expected a non-negative integer, got '%s'", flag, text);
    *out = v;
    return 0;
}

int cli_parse_float(const char *cmd, const char *flag, const char *text, double lo, double hi,
                    float *out)
{
    char *end;
    errno = 0;
    int plain = plain_number(text, 1) || (text[0] == '.' && plain_number(text + 1, 0)) ||
                (text[0] == '-' && text[1] == '.');
    double v = plain ? strtod(text, &end) : 0;
    /* the value kept is a float: one that overflows it (1e39) is refused too */
    if (!plain || errno || *end || !isfinite((float)v) || !(v >= lo && v <= hi)) {
        /* nan, inf and overflow are never accepted, whatever the bounds */
        if (isinf(lo) && isinf(hi))
            return cli_fail(cmd, "%s: expected a finite number, got '%s'", flag, text);
        if (isinf(hi))
            return cli_fail(cmd, "%s: expected a finite number >= %g, got '%s'", flag, lo, text);
        if (isinf(lo))
            return cli_fail(cmd, "%s: expected a finite number <= %g, got '%s'", flag, hi, text);
        return cli_fail(cmd, "%s: expected a number in [%g, %g], got '%s'", flag, lo, hi, text);
    }
    *out = (float)v;
    return 0;
}

/* Set at the first failed write to stdout, so the reason is told once. */
static int stdout_failed;
static int stdout_errno; /* why a cli_put failed, when stdio keeps no reason */

void cli_put(const char *text)
{
    if (fputs(text, stdout) == EOF && !stdout_errno)
        stdout_errno = errno;
}

int cli_stdout_ok(void)
{
    if (stdout_failed)
        return 0;
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return 1;
    /* glibc keeps the unwritten bytes, so this flush fails again with the
     * reason; else the reason a cli_put saw (a text longer than the buffer
     * fails while it is written); EIO when stdio said nothing more */
    stdout_failed = 1;
    cli_fail("writing the output", "%s",
             strerror(errno ? errno : stdout_errno ? stdout_errno : EIO));
    return 0;
}

/* The end of every command: what is still buffered is written, and stdout
 * closed (the last write error shows only then); a failure is exit 1 even
 * when the command itself succeeded, since its output is lost. */
static int finish(int rc)
{
    if (!cli_stdout_ok())
        return rc ? rc : 1;
    if (fclose(stdout) != 0) {
        cli_fail("writing the output", "%s", strerror(errno));
        return rc ? rc : 1;
    }
    return rc;
}

/* A closed 0, 1 or 2 is given /dev/null opened the wrong way round, so that
 * the first file the command opens cannot become its stdout (text written
 * into a state file) and a read or write there fails (EBADF) and is told. */
static void hold_closed_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
            open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY); /* the lowest free: fd */
}

void cli_warn(const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(what, "warning: ", fmt, ap);
    va_end(ap);
}

void cli_check_threads(const char *what, long threads)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (threads > 0 && cores > 0 && threads > cores)
        cli_warn(what, "--threads %ld is more than the %ld cores here: threads will share cores "
                       "and every parallel step waits for the slowest", threads, cores);
}

linattn_status cli_load_config(const char *path, linattn_config *cfg, cli_generate *gen,
                               cli_attention *att)
{
    return cli_load_model(path, NULL, cfg, gen, att);
}

linattn_status cli_load_model(const char *path, const char *over, linattn_config *cfg,
                              cli_generate *gen, cli_attention *att)
{
    /* the sections a command does not use are still read (and checked) */
    cli_generate g0;
    cli_attention *a0 = att ? NULL : malloc(sizeof *a0);
    if (!att && !a0)
        return cli_err(LINATTN_ERR_NOMEM, "out of memory");
    if (!gen)
        gen = &g0;
    if (!att)
        att = a0;
    const char *use = path;
#ifdef LINATTN_DATADIR
    /* a relative path that is not here: the installed demo files, as
     * given (configs/kjv-linear.ini), under configs/ (kjv-linear.ini), or
     * a bare name (kjv-linear) */
    char installed[4096];
    static const char *const forms[] = {"%s/%s", "%s/configs/%s", "%s/configs/%s.ini"};
    for (size_t i = 0; path && path[0] && path[0] != '/' && access(path, F_OK) != 0 &&
                       use == path && i < sizeof forms / sizeof forms[0];
         i++) {
        size_t n = (size_t)snprintf(installed, sizeof installed, forms[i], LINATTN_DATADIR, path);
        if (n < sizeof installed && access(installed, F_OK) == 0)
            use = installed;
    }
#endif
    /* a model file or folder given alone (-m stories15M.bin, -m DIR): its
     * own shape, attention and tokenizer, the defaults for the rest */
    linattn_status st = linattn_config_from_model(use, cfg);
    if (st == LINATTN_OK) {
        if (over) { /* its runtime choices, and model keys changed on purpose */
            linattn_config *base = malloc(sizeof *base);
            if (!base) {
                free(a0);
                return cli_err(LINATTN_ERR_NOMEM, "out of memory");
            }
            *base = *cfg;
            st = cli_config_load_over(over, base, cfg, gen, att);
            free(base);
        } else {
            cli_config_defaults(gen, att);
        }
        free(a0);
        return st;
    }
    if (st != LINATTN_ERR_INVALID) { /* a model, damaged or of a kind not read */
        free(a0);
        return st;
    }
    char not_model[1024];
    snprintf(not_model, sizeof not_model, "%s", linattn_last_error());
    if (over && access(use, F_OK) != 0) { /* no such file: say that, not what it is not */
        int e = errno;
        free(a0);
        return cli_err(LINATTN_ERR_IO, "%s: cannot open the model: %s", path, strerror(e));
    }
    if (over) {
        free(a0);
        return cli_err(LINATTN_ERR_INVALID,
                       "--config %s: adds to a model file or folder, but %s is a config "
                       "already (give the model's file, or one config)", over, path);
    }
    st = cli_config_load(use, cfg, gen, att);
    /* a binary file that is not a model either: say what it is not */
    if (st == LINATTN_ERR_FORMAT && strstr(linattn_last_error(), "not a text file"))
        st = cli_err(LINATTN_ERR_FORMAT, "%s, nor a config (INI)", not_model);
    free(a0);
    return st;
}

/* Errors of the CLI's own .npy and file code (built with LINATTN_CLI_SIDE,
 * where linattn_err means this): the message waits here for the printer. */
static char cli_error[1024];

linattn_status cli_err(linattn_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cli_error, sizeof cli_error, fmt, ap);
    va_end(ap);
    return status;
}

int cli_fail_status(const char *what, linattn_status st)
{
    char msg[sizeof cli_error];
    snprintf(msg, sizeof msg, "%s", cli_error[0] ? cli_error : linattn_last_error());
    cli_error[0] = '\0';
    return cli_fail(what, "%s", msg[0] ? msg : linattn_status_str(st));
}

linattn_status cli_write_file(const char *path, const char *what, const void *data, size_t len)
{
    safe_file w;
    linattn_status st = safe_file_begin(&w, path, what);
    if (st == LINATTN_OK) {
        safe_file_write(&w, data, len);
        st = safe_file_commit(&w, what);
    }
    return st;
}

static int apply_isa(const char *cmd, const char *text, linattn_isa_source source)
{
    linattn_isa isa;
    linattn_status st = linattn_isa_parse(text, &isa);
    if (st == LINATTN_OK)
        st = linattn_set_isa_from(isa, source);
    return st == LINATTN_OK ? 0 : cli_fail_status(cmd, st);
}

int cli_choose_isa(const char *cmd, const char *flag, linattn_isa config_isa)
{
    /* A bad LINATTN_ISA is an error whatever else is given: a typo there
     * would otherwise go unseen until a run without the flag. */
    const char *env = getenv("LINATTN_ISA");
    linattn_isa env_isa = LINATTN_ISA_AUTO;
    if (env && *env && linattn_isa_parse(env, &env_isa) != LINATTN_OK)
        return cli_fail(cmd, "LINATTN_ISA: unknown ISA '%s' (expected %s)", env,
                        linattn_isa_choices());
    if (flag)
        return apply_isa(cmd, flag, LINATTN_ISA_FROM_FLAG);
    if (env && *env) {
        linattn_status st = linattn_set_isa_from(env_isa, LINATTN_ISA_FROM_ENV);
        return st == LINATTN_OK ? 0 : cli_fail_status(cmd, st);
    }
    if (config_isa != LINATTN_ISA_AUTO) {
        linattn_status st = linattn_set_isa_from(config_isa, LINATTN_ISA_FROM_CONFIG);
        return st == LINATTN_OK ? 0 : cli_fail_status(cmd, st);
    }
    return 0; /* auto */
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("linattn %s\n", linattn_version());
        return 0;
    }
    if (!strcmp(cmd, "attend"))
        return cmd_attend(argc - 1, argv + 1);
    if (!strcmp(cmd, "eval"))
        return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(cmd, "generate"))
        return cmd_generate(argc - 1, argv + 1);
    if (!strcmp(cmd, "chat")) { /* generate --interactive */
        char **args = malloc(((size_t)argc + 1) * sizeof *args);
        if (!args)
            return cli_fail("chat", "out of memory");
        args[0] = (char *)"chat";
        args[1] = (char *)"--interactive";
        for (int i = 2; i < argc; i++)
            args[i] = argv[i];
        args[argc] = NULL;
        int rc = cmd_generate(argc, args);
        free(args);
        return rc;
    }
    if (!strcmp(cmd, "info"))
        return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "tokenize"))
        return cmd_tokenize(argc - 1, argv + 1);
    if (!strcmp(cmd, "quantize"))
        return cmd_quantize(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve"))
#ifdef LINATTN_HAVE_SERVE
        return cmd_serve(argc - 1, argv + 1);
#else
        return cli_fail("serve", "this linattn was built without libmicrohttpd "
                                 "(install libmicrohttpd-dev and rebuild)");
#endif
    if (!strcmp(cmd, "detokenize"))
        return cmd_detokenize(argc - 1, argv + 1);
    return cli_fail("usage", "unknown command '%s' (try 'linattn --help')", cmd);
}

int main(int argc, char **argv)
{
    hold_closed_std_fds();
    return finish(run(argc, argv));
}
