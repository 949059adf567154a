/* testutil.c: helpers shared by the Criterion suites (see testutil.h). */
#include "testutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a temporary folder per test ------------------------------------------- */

static char dir[256];

void tu_make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/linattn-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
}

void tu_remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
    closedir(d);
    rmdir(dir);
}

const char *tu_dir(void)
{
    return dir;
}

const char *tu_path(const char *name)
{
    static char ring[8][512];
    static int next;
    /* a suite without .init = tu_make_dir would write into / */
    cr_assert(dir[0], "tu_path('%s') before tu_make_dir (give the suite .init = tu_make_dir)",
              name);
    char *p = ring[next++ % 8];
    snprintf(p, sizeof ring[0], "%s/%s", dir, name);
    return p;
}

int tu_count_files(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* ---- files ----------------------------------------------------------------- */

void tu_write_file(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(bytes, 1, n, f), n, "%s", path);
    cr_assert_eq(fclose(f), 0, "%s", path);
}

void tu_write_text(const char *path, const char *text)
{
    tu_write_file(path, text, strlen(text));
}

/* The rest of an open stream from its start, NUL-terminated. */
static char *read_stream(FILE *f, size_t *n)
{
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    cr_assert(size >= 0);
    rewind(f);
    char *buf = malloc((size_t)size + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    buf[size] = '\0';
    *n = (size_t)size;
    return buf;
}

char *tu_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    char *buf = read_stream(f, n);
    fclose(f);
    return buf;
}

/* ---- tests/data ------------------------------------------------------------ */

const char *tu_data_dir(void)
{
    const char *d = getenv("LINATTN_DATA");
    cr_assert_not_null(d, "LINATTN_DATA must point at tests/data");
    return d;
}

const char *tu_data(const char *name)
{
    static char ring[8][1024];
    static int next;
    const char *d = tu_data_dir();
    char *p = ring[next++ % 8];
    snprintf(p, sizeof ring[0], "%s/%s", d, name);
    return p;
}

void tu_each_data_file(const char *suffix, void (*check)(const char *path))
{
    const char *data = tu_data_dir();
    DIR *d = opendir(data);
    cr_assert_not_null(d);
    size_t slen = strlen(suffix);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < slen || strcmp(e->d_name + len - slen, suffix) != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", data, e->d_name);
        check(path);
        n++;
    }
    closedir(d);
    cr_assert_gt(n, 0);
}

/* ---- fuzzing --------------------------------------------------------------- */

int tu_skip_figures(void)
{
    const char *v = getenv("LINATTN_SKIP_FIGURES");
    return v && strcmp(v, "1") == 0;
}

int tu_fuzz_iters(void)
{
    const char *iters = getenv("LINATTN_FUZZ_ITERS");
    return iters ? atoi(iters) : 200;
}

static uint32_t rng_state;

void tu_rng_seed(uint32_t seed)
{
    rng_state = seed;
}

uint32_t tu_rng(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* ---- running the built binaries -------------------------------------------- */

static char next_stdin[512];

void tu_next_stdin(const char *path)
{
    snprintf(next_stdin, sizeof next_stdin, "%s", path);
}

static char next_stdout[4096];

void tu_next_stdout(const char *path)
{
    snprintf(next_stdout, sizeof next_stdout, "%s", path);
}

/* exe argv, its output captured; sigs[0..nsig) sent in turn, each once
 * the program has written after_bytes more to stdout than at the last. */
static tu_run_result run_signalled(const char *exe, char *const argv[], const int *sigs,
                                   int nsig, long after_bytes)
{
    FILE *o = tmpfile(), *e = tmpfile();
    cr_assert(o && e);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int in = open(next_stdin[0] ? next_stdin : "/dev/null", O_RDONLY);
        const int closed = !strcmp(next_stdout, "-");
        int out = closed ? -1 : next_stdout[0] ? open(next_stdout, O_WRONLY) : fileno(o);
        if (in < 0 || dup2(in, 0) < 0 || dup2(fileno(e), 2) < 0 ||
            (closed ? close(1) : dup2(out, 1)) < 0)
            _exit(126);
        execv(exe, argv);
        _exit(127);
    }
    next_stdin[0] = '\0';
    next_stdout[0] = '\0';
    long seen = 0;
    for (int i = 0; i < nsig; i++) {
        struct stat stt;
        int waited = 0, st;
        while (fstat(fileno(o), &stt) == 0 && stt.st_size < seen + after_bytes) {
            if (waitpid(pid, &st, WNOHANG) == pid)
                cr_assert_fail("the child exited (status %d) before signal %d", st, i + 1);
            cr_assert_lt(waited++, 6000, "no output for signal %d within 60 s", i + 1);
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
        seen = (long)stt.st_size;
        cr_assert_eq(kill(pid, sigs[i]), 0);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    tu_run_result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = read_stream(o, &r.out_len);
    r.err = read_stream(e, &r.err_len);
    fclose(o);
    fclose(e);
    return r;
}

tu_run_result tu_run_argv(const char *exe, char *const argv[])
{
    return run_signalled(exe, argv, NULL, 0, 0);
}

/* $LINATTN_EXE and argv "linattn" args... into argv[64] */
static const char *linattn_argv(const char *const *args, char *argv[64])
{
    const char *exe = getenv("LINATTN_EXE");
    cr_assert_not_null(exe, "LINATTN_EXE must point at the built linattn");
    int n = 0;
    argv[n++] = (char *)"linattn";
    for (; *args; args++) {
        cr_assert(n < 63, "too many arguments");
        argv[n++] = (char *)*args;
    }
    argv[n] = NULL;
    return exe;
}

tu_run_result tu_run_signalled(const char *const *args, const int *sigs, int nsig,
                               long after_bytes)
{
    char *argv[64];
    const char *exe = linattn_argv(args, argv);
    return run_signalled(exe, argv, sigs, nsig, after_bytes);
}

tu_run_result tu_run_args(const char *const *args)
{
    char *argv[64];
    const char *exe = linattn_argv(args, argv);
    return tu_run_argv(exe, argv);
}

tu_run_result tu_run(const char *first, ...)
{
    const char *args[64];
    int n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        cr_assert(n < 63, "too many arguments");
        args[n++] = a;
    }
    va_end(ap);
    args[n] = NULL;
    return tu_run_args(args);
}

void tu_run_free(tu_run_result *r)
{
    free(r->out);
    free(r->err);
}

void tu_assert_ok(const tu_run_result *r)
{
    cr_assert_eq(r->status, 0, "exit %d, stderr: %s", r->status, r->err);
}

double tu_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int tu_count_lines(const char *s, size_t n)
{
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += s[i] == '\n';
    return lines;
}

int tu_cpu_isas(linattn_isa isas[LINATTN_ISA_COUNT])
{
    int n = 0;
    for (int i = LINATTN_ISA_SCALAR; i < LINATTN_ISA_COUNT; i++)
        if (linattn_set_isa((linattn_isa)i) == LINATTN_OK)
            isas[n++] = (linattn_isa)i;
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_AUTO), LINATTN_OK);
    return n;
}

/* GPT-2's printable character for byte b (computed here, not taken from
 * the engine): the printable bytes stand for themselves, the others
 * (0-32, 127-160, 173) for 256, 257, ... in order. */
static int tu_byte_char(int b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))
        return b;
    int n = 0;
    for (int c = 0; c < b; c++)
        n += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255));
    return 256 + n;
}

size_t tu_byte_vocab_json(char *json, size_t m, size_t cap)
{
    for (int b = 0; b < 256; b++) {
        int cp = tu_byte_char(b);
        char c[2];
        size_t l = 1;
        if (cp < 0x80) {
            c[0] = (char)cp;
        } else { /* all below 0x800 */
            c[0] = (char)(0xC0 | cp >> 6);
            c[1] = (char)(0x80 | (cp & 0x3F));
            l = 2;
        }
        m += (size_t)snprintf(json + m, cap - m, "\"%s%.*s\": %d, ",
                              c[0] == '"' || c[0] == '\\' ? "\\" : "", (int)l, c, b);
        cr_assert_lt(m, cap, "the JSON buffer is too small");
    }
    return m;
}

size_t tu_decode_all(const linattn_tokenizer *t, const int *ids, size_t n, char *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p;
        size_t l;
        cr_assert_eq(linattn_tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], &p, &l), LINATTN_OK,
                     "%s", linattn_last_error());
        memcpy(out + m, p, l);
        m += l;
    }
    out[m] = '\0';
    return m;
}
