/* main.c: the `linattn` program: picks a subcommand and hands it the rest of argv. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
    "usage: linattn COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  attend    run an attention operator on .npy tensors (flags or a config)\n"
    "  eval      bits per byte of a text under a model, overall and by position\n"
    "  generate  stream text from a model described by a config file\n"
    "  info      version, CPU features, selected ISA, threads (and a model summary)\n"
    "\n"
    "Run 'linattn COMMAND --help' for a command's options.\n"
    "Environment: LINATTN_ISA=auto|scalar|avx2|neon picks the kernels\n"
    "(a command's --isa flag or a config's isa key wins over it).\n";

int cli_fail(const char *what, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "linattn: %s: ", what);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int cli_fail_status(const char *what, linattn_status st)
{
    const char *msg = linattn_last_error();
    return cli_fail(what, "%s", msg && *msg ? msg : linattn_status_str(st));
}

/* PATH.tmp.PID, malloc'd; NULL with errno set. */
static char *temp_name(const char *path)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        errno = ENOMEM;
    else
        snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    return tmp;
}

int cli_probe_write(const char *path)
{
    char *tmp = temp_name(path);
    if (!tmp)
        return -1;
    FILE *f = fopen(tmp, "wb");
    int err = f ? 0 : errno;
    if (f) {
        fclose(f);
        unlink(tmp);
    }
    free(tmp);
    errno = err;
    return err ? -1 : 0;
}

int cli_write_file(const char *path, const void *data, size_t len)
{
    char *tmp = temp_name(path);
    if (!tmp)
        return -1;
    FILE *f = fopen(tmp, "wb");
    int err = 0;
    if (!f) {
        err = errno;
    } else {
        if (fwrite(data, 1, len, f) != len || fflush(f) != 0 || fsync(fileno(f)) != 0)
            err = errno ? errno : EIO;
        if (fclose(f) != 0 && !err)
            err = errno;
        if (!err && rename(tmp, path) != 0)
            err = errno;
        if (err)
            unlink(tmp);
    }
    free(tmp);
    errno = err;
    return err ? -1 : 0;
}

int cli_apply_isa(const char *text, linattn_isa_source source)
{
    linattn_isa isa;
    linattn_status st = linattn_isa_parse(text, &isa);
    if (st == LINATTN_OK)
        st = linattn_set_isa_from(isa, source);
    return st == LINATTN_OK ? 0 : cli_fail_status("isa", st);
}

int main(int argc, char **argv)
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
    if (!strcmp(cmd, "info"))
        return cmd_info(argc - 1, argv + 1);
    return cli_fail("usage", "unknown command '%s' (try 'linattn --help')", cmd);
}
