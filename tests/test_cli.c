/* test_cli.c: `linattn generate` and `info` end to end, their errors, and the embedding example. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LINEAR "tiny-linear-pre-ln-gelu-sincos.ini"
#define SOFTMAX "tiny-softmax-pre-ln-gelu-sincos.ini"

/* The tiny golden shape: d_model 32, 4 heads, 2 layers, d_ff 64, vocab 256, max_seq_len 64. */
enum { D = 32, H = 4, LAYERS = 2, DFF = 64, VOCAB = 256, MAX_SEQ = 64, DH = D / H };

/* ---- helpers -------------------------------------------------------------- */

static char tmpdir[256]; /* per test (each runs in its own process) */

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/linattn-cli-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp");
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(tmpdir);
}

/* No .timeout: Criterion 2.4 leaks its timer request when a test beats it
 * (LeakSanitizer then fails the run); meson's test timeout bounds us instead. */
TestSuite(cli, .init = make_tmpdir, .fini = remove_tmpdir);
TestSuite(cli_errors, .init = make_tmpdir, .fini = remove_tmpdir);
TestSuite(cli_info_model);
TestSuite(example, .init = make_tmpdir, .fini = remove_tmpdir);

/* A path in this test's folder; a few live at once, so a ring of buffers. */
static const char *tmp(const char *name)
{
    static char ring[8][512];
    static int next;
    char *p = ring[next++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static const char *data(const char *name)
{
    static char ring[8][1024];
    static int next;
    const char *dir = getenv("LINATTN_DATA");
    cr_assert_not_null(dir, "LINATTN_DATA must point at tests/data");
    char *p = ring[next++ % 8];
    snprintf(p, 1024, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static char *read_all(FILE *f, size_t *len)
{
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert(n >= 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* What a run printed (binary-safe: a token may be any byte, NUL included). */
typedef struct run_result {
    int status; /* exit status; 128 + signal if killed */
    char *out, *err;
    size_t out_len, err_len;
} run_result;

/* Runs exe with argv (NULL-terminated, argv[0] included); stdin is /dev/null,
 * stdout and stderr are files, so stderr is no terminal. */
static run_result run_argv(const char *exe, char *const argv[])
{
    FILE *o = tmpfile(), *e = tmpfile();
    cr_assert(o && e);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        if (in < 0 || dup2(in, 0) < 0 || dup2(fileno(o), 1) < 0 || dup2(fileno(e), 2) < 0)
            _exit(126);
        execv(exe, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    run_result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = read_all(o, &r.out_len);
    r.err = read_all(e, &r.err_len);
    fclose(o);
    fclose(e);
    return r;
}

/* linattn with the given arguments, ending with NULL. */
static run_result run(const char *first, ...)
{
    const char *exe = getenv("LINATTN_EXE");
    cr_assert_not_null(exe, "LINATTN_EXE must point at the built linattn");
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)"linattn";
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        cr_assert(n < 63);
        argv[n++] = (char *)a;
    }
    va_end(ap);
    argv[n] = NULL;
    return run_argv(exe, argv);
}

static void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
}

static int count_lines(const char *s, size_t n)
{
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += s[i] == '\n';
    return lines;
}

static void assert_ok(const run_result *r)
{
    cr_assert_eq(r->status, 0, "exit %d, stderr: %s", r->status, r->err);
}

static void assert_same_out(const run_result *a, const run_result *b)
{
    cr_assert_eq(a->out_len, b->out_len, "lengths %zu vs %zu", a->out_len, b->out_len);
    cr_assert(!memcmp(a->out, b->out, a->out_len), "the texts differ");
}

/* ---- generate: seeds and determinism --------------------------------------- */

static run_result sample40(const char *seed, const char *temperature)
{
    return run("generate", data(LINEAR), "--prompt", "Hello", "--tokens", "40", "--seed", seed,
               "--temperature", temperature, NULL);
}

Test(cli, same_seed_same_text)
{
    run_result a = sample40("3", "0.9"), b = sample40("3", "0.9");
    assert_ok(&a);
    assert_ok(&b);
    cr_assert_eq(a.out_len, 5 + 40 + 1, "prompt, 40 one-byte tokens and a newline: %zu", a.out_len);
    cr_assert(!memcmp(a.out, "Hello", 5));
    cr_assert_eq(a.out[a.out_len - 1], '\n');
    cr_assert_eq(a.err_len, 0, "quiet stderr: %s", a.err);
    assert_same_out(&a, &b);
    run_free(&a);
    run_free(&b);
}

Test(cli, other_seed_other_text)
{
    run_result a = sample40("3", "0.9"), b = sample40("4", "0.9");
    assert_ok(&a);
    assert_ok(&b);
    cr_assert(a.out_len != b.out_len || memcmp(a.out, b.out, a.out_len),
              "seeds 3 and 4 wrote the same 40 tokens");
    run_free(&a);
    run_free(&b);
}

Test(cli, greedy_ignores_seed)
{
    run_result a = sample40("3", "0"), b = sample40("4", "0"), c = sample40("3", "0");
    assert_ok(&a);
    assert_ok(&b);
    assert_same_out(&a, &b);
    assert_same_out(&a, &c);
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

/* ---- generate: save and resume ---------------------------------------------- */

/* PROMPT + n tokens saved, then n more resumed, print exactly one 2n-token run. */
static void check_resume(const char *config, const char *prompt, const char *n, const char *n2)
{
    const char *state = tmp("stream.state");
    run_result a = run("generate", data(config), "--prompt", prompt, "--tokens", n, "--seed", "3",
                       "--temperature", "0.9", "--save-state", state, NULL);
    assert_ok(&a);
    /* the sampler's state travels in the file: no --seed on resume */
    run_result b = run("generate", data(config), "--tokens", n, "--temperature", "0.9",
                       "--load-state", state, NULL);
    assert_ok(&b);
    run_result whole = run("generate", data(config), "--prompt", prompt, "--tokens", n2, "--seed",
                           "3", "--temperature", "0.9", NULL);
    assert_ok(&whole);
    cr_assert_eq(a.out_len, strlen(prompt) + (size_t)atoi(n) + 1);
    cr_assert_eq(b.out_len, (size_t)atoi(n) + 1, "the resumed run prints no prompt");
    /* a's text without its newline, then b's */
    cr_assert_eq(a.out_len - 1 + b.out_len, whole.out_len);
    cr_assert(!memcmp(whole.out, a.out, a.out_len - 1), "first half differs");
    cr_assert(!memcmp(whole.out + a.out_len - 1, b.out, b.out_len),
              "the resumed half differs from the one-run text");
    cr_assert_eq(a.err_len + b.err_len + whole.err_len, 0, "%s%s%s", a.err, b.err, whole.err);
    run_free(&a);
    run_free(&b);
    run_free(&whole);
}

Test(cli, resume_linear_equals_one_run)
{
    check_resume(LINEAR, "Hello", "60", "120");
}

Test(cli, resume_softmax_equals_one_run)
{
    /* max_seq_len 64: 2 + 40 tokens fit */
    check_resume(SOFTMAX, "Hi", "20", "40");
}

/* Saving after the prompt alone (--tokens 0) leaves something to resume from. */
Test(cli, resume_after_prompt_only)
{
    const char *models[] = {LINEAR, SOFTMAX};
    for (int i = 0; i < 2; i++) {
        const char *state = tmp("prompt.state");
        run_result a = run("generate", data(models[i]), "--prompt", "Hello", "--tokens", "0",
                           "--save-state", state, NULL);
        assert_ok(&a);
        cr_assert_eq(a.out_len, 6);
        cr_assert(!memcmp(a.out, "Hello\n", 6));
        run_result b = run("generate", data(models[i]), "--tokens", "10", "--seed", "5",
                           "--load-state", state, NULL);
        assert_ok(&b);
        run_result whole = run("generate", data(models[i]), "--prompt", "Hello", "--tokens", "10",
                               "--seed", "5", NULL);
        assert_ok(&whole);
        cr_assert_eq(b.out_len + 5, whole.out_len, "%s", models[i]);
        cr_assert(!memcmp(b.out, whole.out + 5, b.out_len), "%s: resumed text differs", models[i]);
        run_free(&a);
        run_free(&b);
        run_free(&whole);
    }
}

/* ---- generate: context, stats, text ----------------------------------------- */

Test(cli, softmax_stops_cleanly_at_its_context)
{
    run_result r =
        run("generate", data(SOFTMAX), "--prompt", "Hi", "--tokens", "200", "--seed", "1", NULL);
    assert_ok(&r);
    cr_assert(strstr(r.err, "context is full"), "%s", r.err);
    cr_assert_eq(count_lines(r.err, r.err_len), 1, "%s", r.err);
    /* 2 prompt tokens + 62 fed fill the 64 slots; the 63rd sample is printed, not fed */
    cr_assert_eq(r.out_len, 2 + 63 + 1, "%zu bytes", r.out_len);
    run_free(&r);
}

Test(cli, linear_runs_past_max_seq_len)
{
    run_result r = run("generate", data(LINEAR), "--prompt", "Hi", "--tokens", "500", NULL);
    assert_ok(&r);
    cr_assert_eq(r.out_len, 2 + 500 + 1);
    cr_assert_eq(r.err_len, 0, "%s", r.err);
    run_free(&r);
}

static void check_stats(const char *config, const char *memory)
{
    run_result r = run("generate", data(config), "--prompt", "Hello", "--tokens", "10", "--stats",
                       "--isa", "scalar", "--threads", "1", NULL);
    assert_ok(&r);
    cr_assert_eq(count_lines(r.err, r.err_len), 1, "%s", r.err);
    cr_assert(!strncmp(r.err, "stats:", 6), "%s", r.err);
    cr_assert(strstr(r.err, "prompt 5 tokens"), "%s", r.err);
    cr_assert(strstr(r.err, "tokens/s"), "%s", r.err);
    cr_assert(strstr(r.err, "isa scalar"), "%s", r.err);
    cr_assert(strstr(r.err, "threads 1"), "%s", r.err);
    cr_assert(strstr(r.err, memory), "want '%s' in: %s", memory, r.err);
    cr_assert_eq(r.out_len, 5 + 10 + 1, "stats stay off stdout");
    run_free(&r);
}

Test(cli, stats_linear_reports_state_bytes)
{
    char want[64];
    snprintf(want, sizeof want, "state %d bytes", LAYERS * H * (DH * DH + DH) * 4);
    check_stats(LINEAR, want);
}

Test(cli, stats_softmax_reports_kv_cache)
{
    /* 5 prompt tokens and 9 of the 10 samples were fed: K and V rows of d floats per layer */
    char want[64];
    snprintf(want, sizeof want, "kv-cache %d bytes", (5 + 9) * LAYERS * 2 * D * 4);
    check_stats(SOFTMAX, want);
}

Test(cli, utf8_prompt_round_trips)
{
    const char *prompt = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93"; /* héllo wörld ✓ */
    run_result r = run("generate", data(LINEAR), "--prompt", prompt, "--tokens", "0", NULL);
    assert_ok(&r);
    cr_assert_eq(r.out_len, strlen(prompt) + 1);
    cr_assert(!memcmp(r.out, prompt, strlen(prompt)));
    cr_assert_eq(r.out[strlen(prompt)], '\n');
    run_free(&r);
}

Test(cli, prompt_file_equals_prompt)
{
    const char *path = tmp("prompt.txt");
    write_file(path, "Hello", 5);
    run_result a = run("generate", data(LINEAR), "--prompt-file", path, "--tokens", "20", "--seed",
                       "9", NULL);
    run_result b = run("generate", data(LINEAR), "--prompt", "Hello", "--tokens", "20", "--seed",
                       "9", NULL);
    assert_ok(&a);
    assert_ok(&b);
    assert_same_out(&a, &b);
    /* any bytes, newlines and NUL included, go through */
    static const char odd[] = "line one\nline\0two\n";
    write_file(path, odd, sizeof odd - 1);
    run_result c = run("generate", data(LINEAR), "--prompt-file", path, "--tokens", "0", NULL);
    assert_ok(&c);
    cr_assert_eq(c.out_len, sizeof odd);
    cr_assert(!memcmp(c.out, odd, sizeof odd - 1));
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

Test(cli, no_progress_on_a_non_terminal)
{
    char prompt[3000];
    for (size_t i = 0; i < sizeof prompt; i++)
        prompt[i] = (char)('a' + i % 26);
    const char *path = tmp("long.txt");
    write_file(path, prompt, sizeof prompt);
    run_result r = run("generate", data(LINEAR), "--prompt-file", path, "--tokens", "2", NULL);
    assert_ok(&r);
    cr_assert_eq(r.err_len, 0, "stderr is a file, yet: %s", r.err);
    cr_assert_eq(r.out_len, sizeof prompt + 2 + 1);
    run_free(&r);
}

/* ---- help ------------------------------------------------------------------ */

Test(cli, help_goes_to_stdout)
{
    const char *cases[][2] = {{"--help", NULL}, {"generate", "--help"}, {"info", "--help"},
                              {"generate", "-h"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result r = run(cases[i][0], cases[i][1], NULL);
        cr_assert_eq(r.status, 0, "%s %s", cases[i][0], cases[i][1] ? cases[i][1] : "");
        cr_assert(!strncmp(r.out, "usage: linattn", 14), "%s", r.out);
        cr_assert_eq(r.err_len, 0, "%s", r.err);
        run_free(&r);
    }
}

/* ---- errors: one line "linattn: ...", exit != 0, nothing on stdout ----------- */

static void check_error(run_result r, const char *want)
{
    cr_assert_neq(r.status, 0, "should fail (want '%s'), stdout: %s", want, r.out);
    cr_assert_lt(r.status, 128, "killed by a signal: %s", r.err);
    cr_assert_eq(count_lines(r.err, r.err_len), 1, "one line: %s", r.err);
    cr_assert(!strncmp(r.err, "linattn: ", 9), "%s", r.err);
    cr_assert(strstr(r.err, want), "want '%s' in: %s", want, r.err);
    cr_assert_eq(r.out_len, 0, "nothing on stdout: %s", r.out);
    run_free(&r);
}

Test(cli_errors, bad_flags)
{
    const char *L = data(LINEAR);
    check_error(run("generate", L, "--prompt", "x", "--bogus", NULL), "'--bogus'");
    check_error(run("generate", L, "-zq", NULL), "'-z'");
    check_error(run("generate", L, "--prompt", NULL), "'--prompt' needs a value");
    check_error(run("generate", L, "--prompt", "x", "--tokens", "-1", NULL), "--tokens");
    check_error(run("generate", L, "--prompt", "x", "--tokens", "12x", NULL), "--tokens");
    check_error(run("generate", L, "--prompt", "x", "--top-p", "0", NULL), "--top-p");
    check_error(run("generate", L, "--prompt", "x", "--top-p", "1.5", NULL), "--top-p");
    check_error(run("generate", L, "--prompt", "x", "--temperature", "abc", NULL), "--temperature");
    check_error(run("generate", L, "--prompt", "x", "--temperature", "nan", NULL), "--temperature");
    check_error(run("generate", L, "--prompt", "x", "--seed", "-3", NULL), "--seed");
    check_error(run("generate", L, "--prompt", "x", "--threads", "many", NULL), "--threads");
    check_error(run("generate", L, L, "--prompt", "x", NULL), "unexpected argument");
    check_error(run("generate", NULL), "no config");
    check_error(run("generate", L, "--prompt", "", NULL), "empty prompt");
    check_error(run("info", "--bogus", NULL), "'--bogus'");
    check_error(run("info", "--threads", NULL), "'--threads' needs a value");
    check_error(run("info", L, "--threads", "-2", NULL), "--threads");
}

Test(cli_errors, prompt_and_prompt_file_together)
{
    const char *path = tmp("p.txt");
    write_file(path, "Hello", 5);
    check_error(run("generate", data(LINEAR), "--prompt", "x", "--prompt-file", path, NULL),
                "not both");
    check_error(run("generate", data(LINEAR), "--prompt-file", tmp("missing.txt"), NULL),
                "missing.txt");
}

Test(cli_errors, bad_config_and_weights)
{
    check_error(run("generate", tmp("missing.ini"), "--prompt", "x", NULL), "missing.ini");
    check_error(run("info", tmp("missing.ini"), NULL), "missing.ini");

    const char *bad = tmp("bad.ini");
    static const char bad_key[] = "[model]\nweights = random:1\nd_model = 32\nn_heads = 4\n"
                                  "n_layers = 2\nd_ff = 64\nbogus_key = 1\n";
    write_file(bad, bad_key, sizeof bad_key - 1);
    check_error(run("generate", bad, "--prompt", "x", NULL), "bogus_key");
    check_error(run("info", bad, NULL), "bad.ini:7");

    const char *nw = tmp("noweights.ini");
    static const char no_weights[] = "[model]\nweights = nowhere.safetensors\nd_model = 32\n"
                                     "n_heads = 4\nn_layers = 2\nd_ff = 64\n";
    write_file(nw, no_weights, sizeof no_weights - 1);
    check_error(run("generate", nw, "--prompt", "x", NULL), "nowhere.safetensors");
    check_error(run("info", nw, NULL), "nowhere.safetensors");
}

Test(cli_errors, foreign_isa)
{
#if defined(__x86_64__)
    const char *foreign = "neon";
#else
    const char *foreign = "avx2";
#endif
    check_error(run("generate", data(LINEAR), "--prompt", "x", "--isa", foreign, NULL),
                "cannot run here");
    check_error(run("generate", data(LINEAR), "--prompt", "x", "--isa", "sse", NULL),
                "unknown ISA 'sse'");
}

Test(cli_errors, prompt_longer_than_the_context)
{
    char prompt[MAX_SEQ + 2];
    memset(prompt, 'a', MAX_SEQ + 1);
    prompt[MAX_SEQ + 1] = '\0';
    check_error(run("generate", data(SOFTMAX), "--prompt", prompt, "--tokens", "3", NULL),
                "context full");
    check_error(run("generate", data(SOFTMAX), "--prompt", prompt, "--tokens", "0",
                    "--save-state", tmp("full.state"), NULL),
                "context full");
    cr_assert_neq(access(tmp("full.state"), F_OK), 0, "no state saved");
}

static void save_state(const char *config, const char *path)
{
    run_result r = run("generate", data(config), "--prompt", "Hello", "--tokens", "5",
                       "--save-state", path, NULL);
    assert_ok(&r);
    run_free(&r);
}

Test(cli_errors, bad_state_files)
{
    const char *L = data(LINEAR), *S = data(SOFTMAX);
    const char *garbage = tmp("garbage.state");
    write_file(garbage, "this is not a session file, not even close to one\n", 51);
    check_error(run("generate", L, "--load-state", garbage, NULL), "not a linattn session");
    check_error(run("generate", L, "--load-state", tmp("none.state"), NULL), "none.state");

    const char *lin = tmp("linear.state"), *soft = tmp("softmax.state");
    save_state(LINEAR, lin);
    save_state(SOFTMAX, soft);

    /* truncated: the first 100 bytes of a good file */
    FILE *f = fopen(lin, "rb");
    cr_assert_not_null(f);
    char head[100];
    cr_assert_eq(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    const char *cut = tmp("cut.state");
    write_file(cut, head, sizeof head);
    check_error(run("generate", L, "--load-state", cut, NULL), "truncated");

    /* the other variant's stream */
    check_error(run("generate", S, "--load-state", lin, NULL), "another shape");
    check_error(run("generate", L, "--load-state", soft, NULL), "another shape");

    /* the good files still load */
    run_result r = run("generate", L, "--load-state", lin, "--tokens", "3", NULL);
    assert_ok(&r);
    run_free(&r);
}

/* ---- info ------------------------------------------------------------------ */

/* Parameters of the tiny shape: embeddings, untied LM head, final norm, and
 * per layer q/k/v/o with biases, two norms (weight, bias), FFN up/down with biases. */
static long tiny_params(void)
{
    long layer = 4 * (D * D + D) + 2 * 2 * D + (DFF * D + DFF) + (D * DFF + D);
    return 2L * VOCAB * D + 2 * D + LAYERS * layer;
}

static void check_info(const char *config, const char *want)
{
    run_result r = run("info", data(config), NULL);
    assert_ok(&r);
    char line[128];
    snprintf(line, sizeof line, "parameters: %ld\n", tiny_params());
    cr_assert(strstr(r.out, line), "want '%s' in: %s", line, r.out);
    snprintf(line, sizeof line, "weight bytes: %ld\n", 4 * tiny_params());
    cr_assert(strstr(r.out, line), "want '%s' in: %s", line, r.out);
    cr_assert(strstr(r.out, want), "want '%s' in: %s", want, r.out);
    cr_assert_eq(r.err_len, 0, "%s", r.err);
    run_free(&r);
}

Test(cli_info_model, linear_state_bytes)
{
    char want[128];
    /* layers * heads * (d_k*d_v + d_k) floats: 2 * 4 * (8*8 + 8) * 4 = 2304 */
    snprintf(want, sizeof want, "state bytes per stream: %d ", LAYERS * H * (DH * DH + DH) * 4);
    cr_assert_eq(LAYERS * H * (DH * DH + DH) * 4, 2304);
    check_info(LINEAR, want);
}

Test(cli_info_model, softmax_kv_cache_bytes)
{
    char want[128];
    int per_token = LAYERS * 2 * D * 4; /* K and V rows of d_model floats per layer */
    snprintf(want, sizeof want, "kv-cache bytes: %d per token, %d at max_seq_len %d", per_token,
             per_token * MAX_SEQ, MAX_SEQ);
    check_info(SOFTMAX, want);
}

/* ---- the embedding example (examples/stream.c) ------------------------------ */

Test(example, stream_loads_feeds_saves_resumes)
{
    const char *exe = getenv("LINATTN_STREAM_EXE");
    cr_assert_not_null(exe, "LINATTN_STREAM_EXE must point at the built examples/stream");
    const char *state = tmp("example.state");
    char *argv[] = {(char *)"stream", (char *)data(LINEAR), (char *)state, NULL};
    run_result r = run_argv(exe, argv);
    assert_ok(&r);
    const char *prompt = "In the beginning";
    size_t plen = strlen(prompt);
    cr_assert(r.out_len > plen && !memcmp(r.out, prompt, plen), "%s", r.out);
    cr_assert_eq(access(state, F_OK), 0, "the state file was written");

    /* its greedy text is the CLI's greedy text: the resumed stream lost nothing */
    run_result g = run("generate", data(LINEAR), "--prompt", prompt, "--tokens", "40",
                       "--temperature", "0", NULL);
    assert_ok(&g);
    cr_assert(r.out_len > g.out_len && !memcmp(r.out, g.out, g.out_len),
              "example and CLI greedy texts differ");
    /* then the token count: 16 prompt tokens + 39 of the 40 samples fed */
    char tail[128];
    snprintf(tail, sizeof tail, "%d tokens, %d bytes of state\n", 16 + 39,
             LAYERS * H * (DH * DH + DH) * 4);
    cr_assert_eq(r.out_len - g.out_len, strlen(tail));
    cr_assert(!memcmp(r.out + g.out_len, tail, strlen(tail)), "want '%s' after the text", tail);

    /* a library-level state file is no `linattn generate` stream */
    check_error(run("generate", data(LINEAR), "--load-state", state, NULL), "not saved by");
    run_free(&r);
    run_free(&g);
}

Test(example, stream_usage_and_bad_config)
{
    const char *exe = getenv("LINATTN_STREAM_EXE");
    cr_assert_not_null(exe);
    char *usage[] = {(char *)"stream", NULL};
    run_result r = run_argv(exe, usage);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "usage: stream"), "%s", r.err);
    run_free(&r);
    char *bad[] = {(char *)"stream", (char *)tmp("missing.ini"), (char *)tmp("s.state"), NULL};
    r = run_argv(exe, bad);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "missing.ini"), "%s", r.err);
    run_free(&r);
}
