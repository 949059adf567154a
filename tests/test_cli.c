/* test_cli.c: `linattn generate` and `info` end to end, their errors, and the embedding example. */
#include <criterion/criterion.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linattn.h"
#include "testutil.h"

#define LINEAR "tiny-linear-pre-ln-gelu-sincos.ini"
#define SOFTMAX "tiny-softmax-pre-ln-gelu-sincos.ini"

/* The tiny golden shape: d_model 32, 4 heads, 2 layers, d_ff 64, vocab 256, max_seq_len 64. */
enum { D = 32, H = 4, LAYERS = 2, DFF = 64, VOCAB = 256, MAX_SEQ = 64, DH = D / H };
/* A linear stream's state: per layer and head S, z and the waiting rows of
 * phi(k) and v (LINATTN_LINEAR_BLOCK of each). */
#define STATE_BYTES (LAYERS * H * (DH * DH + DH + LINATTN_LINEAR_BLOCK * 2 * DH) * 4)

/* ---- helpers -------------------------------------------------------------- */

TestSuite(cli, .init = tu_make_dir, .fini = tu_remove_dir);
TestSuite(cli_errors, .init = tu_make_dir, .fini = tu_remove_dir);
TestSuite(cli_info_model);
TestSuite(example, .init = tu_make_dir, .fini = tu_remove_dir);

static void assert_same_out(const tu_run_result *a, const tu_run_result *b)
{
    cr_assert_eq(a->out_len, b->out_len, "lengths %zu vs %zu", a->out_len, b->out_len);
    cr_assert(!memcmp(a->out, b->out, a->out_len), "the texts differ");
}

/* ---- generate: seeds and determinism --------------------------------------- */

static tu_run_result sample40(const char *seed, const char *temperature)
{
    return tu_run("generate", tu_data(LINEAR), "--prompt", "Hello", "--tokens", "40", "--seed",
                  seed, "--temperature", temperature, NULL);
}

Test(cli, same_seed_same_text)
{
    tu_run_result a = sample40("3", "0.9"), b = sample40("3", "0.9");
    tu_assert_ok(&a);
    tu_assert_ok(&b);
    cr_assert_eq(a.out_len, 5 + 40 + 1, "prompt, 40 one-byte tokens and a newline: %zu", a.out_len);
    cr_assert(!memcmp(a.out, "Hello", 5));
    cr_assert_eq(a.out[a.out_len - 1], '\n');
    cr_assert_eq(a.err_len, 0, "quiet stderr: %s", a.err);
    assert_same_out(&a, &b);
    tu_run_free(&a);
    tu_run_free(&b);
}

Test(cli, other_seed_other_text)
{
    tu_run_result a = sample40("3", "0.9"), b = sample40("4", "0.9");
    tu_assert_ok(&a);
    tu_assert_ok(&b);
    cr_assert(a.out_len != b.out_len || memcmp(a.out, b.out, a.out_len),
              "seeds 3 and 4 wrote the same 40 tokens");
    tu_run_free(&a);
    tu_run_free(&b);
}

Test(cli, greedy_ignores_seed)
{
    tu_run_result a = sample40("3", "0"), b = sample40("4", "0"), c = sample40("3", "0");
    tu_assert_ok(&a);
    tu_assert_ok(&b);
    assert_same_out(&a, &b);
    assert_same_out(&a, &c);
    tu_run_free(&a);
    tu_run_free(&b);
    tu_run_free(&c);
}

/* ---- generate: save and resume ---------------------------------------------- */

/* PROMPT + n tokens saved, then n more resumed, print exactly one 2n-token run. */
static void check_resume(const char *config, const char *prompt, const char *n, const char *n2)
{
    const char *state = tu_path("stream.state");
    tu_run_result a = tu_run("generate", tu_data(config), "--prompt", prompt, "--tokens", n,
                             "--seed", "3", "--temperature", "0.9", "--save-state", state, NULL);
    tu_assert_ok(&a);
    /* the sampler's state travels in the file: no --seed on resume */
    tu_run_result b = tu_run("generate", tu_data(config), "--tokens", n, "--temperature", "0.9",
                             "--load-state", state, NULL);
    tu_assert_ok(&b);
    tu_run_result whole = tu_run("generate", tu_data(config), "--prompt", prompt, "--tokens", n2,
                                 "--seed", "3", "--temperature", "0.9", NULL);
    tu_assert_ok(&whole);
    cr_assert_eq(a.out_len, strlen(prompt) + (size_t)atoi(n) + 1);
    cr_assert_eq(b.out_len, (size_t)atoi(n) + 1, "the resumed run prints no prompt");
    /* a's text without its newline, then b's */
    cr_assert_eq(a.out_len - 1 + b.out_len, whole.out_len);
    cr_assert(!memcmp(whole.out, a.out, a.out_len - 1), "first half differs");
    cr_assert(!memcmp(whole.out + a.out_len - 1, b.out, b.out_len),
              "the resumed half differs from the one-run text");
    cr_assert_eq(a.err_len + b.err_len + whole.err_len, 0, "%s%s%s", a.err, b.err, whole.err);
    tu_run_free(&a);
    tu_run_free(&b);
    tu_run_free(&whole);
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
        const char *state = tu_path("prompt.state");
        tu_run_result a = tu_run("generate", tu_data(models[i]), "--prompt", "Hello", "--tokens",
                                 "0", "--save-state", state, NULL);
        tu_assert_ok(&a);
        cr_assert_eq(a.out_len, 6);
        cr_assert(!memcmp(a.out, "Hello\n", 6));
        tu_run_result b = tu_run("generate", tu_data(models[i]), "--tokens", "10", "--seed", "5",
                                 "--load-state", state, NULL);
        tu_assert_ok(&b);
        tu_run_result whole = tu_run("generate", tu_data(models[i]), "--prompt", "Hello",
                                     "--tokens", "10", "--seed", "5", NULL);
        tu_assert_ok(&whole);
        cr_assert_eq(b.out_len + 5, whole.out_len, "%s", models[i]);
        cr_assert(!memcmp(b.out, whole.out + 5, b.out_len), "%s: resumed text differs", models[i]);
        tu_run_free(&a);
        tu_run_free(&b);
        tu_run_free(&whole);
    }
}

/* ---- generate: context, stats, text ----------------------------------------- */

Test(cli, softmax_stops_cleanly_at_its_context)
{
    tu_run_result r = tu_run("generate", tu_data(SOFTMAX), "--prompt", "Hi", "--tokens", "200",
                             "--seed", "1", NULL);
    tu_assert_ok(&r);
    cr_assert(strstr(r.err, "context is full"), "%s", r.err);
    cr_assert_eq(tu_count_lines(r.err, r.err_len), 1, "%s", r.err);
    /* 2 prompt tokens + 62 fed fill the 64 slots; the 63rd sample is printed, not fed */
    cr_assert_eq(r.out_len, 2 + 63 + 1, "%zu bytes", r.out_len);
    tu_run_free(&r);
}

Test(cli, linear_runs_past_max_seq_len)
{
    tu_run_result r =
        tu_run("generate", tu_data(LINEAR), "--prompt", "Hi", "--tokens", "500", NULL);
    tu_assert_ok(&r);
    cr_assert_eq(r.out_len, 2 + 500 + 1);
    cr_assert_eq(r.err_len, 0, "%s", r.err);
    tu_run_free(&r);
}

static void check_stats(const char *config, const char *memory)
{
    tu_run_result r = tu_run("generate", tu_data(config), "--prompt", "Hello", "--tokens", "10",
                             "--stats", "--isa", "scalar", "--threads", "1", NULL);
    tu_assert_ok(&r);
    cr_assert_eq(tu_count_lines(r.err, r.err_len), 1, "%s", r.err);
    cr_assert(!strncmp(r.err, "stats:", 6), "%s", r.err);
    cr_assert(strstr(r.err, "prompt 5 tokens"), "%s", r.err);
    cr_assert(strstr(r.err, "tokens/s"), "%s", r.err);
    cr_assert(strstr(r.err, "isa scalar"), "%s", r.err);
    cr_assert(strstr(r.err, "threads 1"), "%s", r.err);
    cr_assert(strstr(r.err, memory), "want '%s' in: %s", memory, r.err);
    cr_assert_eq(r.out_len, 5 + 10 + 1, "stats stay off stdout");
    tu_run_free(&r);
}

Test(cli, stats_linear_reports_state_bytes)
{
    char want[64];
    snprintf(want, sizeof want, "state %d bytes", STATE_BYTES);
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
    tu_run_result r =
        tu_run("generate", tu_data(LINEAR), "--prompt", prompt, "--tokens", "0", NULL);
    tu_assert_ok(&r);
    cr_assert_eq(r.out_len, strlen(prompt) + 1);
    cr_assert(!memcmp(r.out, prompt, strlen(prompt)));
    cr_assert_eq(r.out[strlen(prompt)], '\n');
    tu_run_free(&r);
}

Test(cli, prompt_file_equals_prompt)
{
    const char *path = tu_path("prompt.txt");
    tu_write_file(path, "Hello", 5);
    tu_run_result a = tu_run("generate", tu_data(LINEAR), "--prompt-file", path, "--tokens", "20",
                             "--seed", "9", NULL);
    tu_run_result b = tu_run("generate", tu_data(LINEAR), "--prompt", "Hello", "--tokens", "20",
                             "--seed", "9", NULL);
    tu_assert_ok(&a);
    tu_assert_ok(&b);
    assert_same_out(&a, &b);
    /* any bytes, newlines and NUL included, go through */
    static const char odd[] = "line one\nline\0two\n";
    tu_write_file(path, odd, sizeof odd - 1);
    tu_run_result c =
        tu_run("generate", tu_data(LINEAR), "--prompt-file", path, "--tokens", "0", NULL);
    tu_assert_ok(&c);
    cr_assert_eq(c.out_len, sizeof odd);
    cr_assert(!memcmp(c.out, odd, sizeof odd - 1));
    tu_run_free(&a);
    tu_run_free(&b);
    tu_run_free(&c);
}

Test(cli, no_progress_on_a_non_terminal)
{
    char prompt[3000];
    for (size_t i = 0; i < sizeof prompt; i++)
        prompt[i] = (char)('a' + i % 26);
    const char *path = tu_path("long.txt");
    tu_write_file(path, prompt, sizeof prompt);
    tu_run_result r =
        tu_run("generate", tu_data(LINEAR), "--prompt-file", path, "--tokens", "2", NULL);
    tu_assert_ok(&r);
    cr_assert_eq(r.err_len, 0, "stderr is a file, yet: %s", r.err);
    cr_assert_eq(r.out_len, sizeof prompt + 2 + 1);
    tu_run_free(&r);
}

/* ---- help ------------------------------------------------------------------ */

Test(cli, help_goes_to_stdout)
{
    const char *cases[][2] = {{"--help", NULL}, {"generate", "--help"}, {"info", "--help"},
                              {"generate", "-h"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_run_result r = tu_run(cases[i][0], cases[i][1], NULL);
        cr_assert_eq(r.status, 0, "%s %s", cases[i][0], cases[i][1] ? cases[i][1] : "");
        cr_assert(!strncmp(r.out, "usage: linattn", 14), "%s", r.out);
        cr_assert_eq(r.err_len, 0, "%s", r.err);
        tu_run_free(&r);
    }
}

/* ---- errors: one line "linattn: ...", exit != 0, nothing on stdout ----------- */

static void check_error(tu_run_result r, const char *want)
{
    cr_assert_neq(r.status, 0, "should fail (want '%s'), stdout: %s", want, r.out);
    cr_assert_lt(r.status, 128, "killed by a signal: %s", r.err);
    cr_assert_eq(tu_count_lines(r.err, r.err_len), 1, "one line: %s", r.err);
    cr_assert(!strncmp(r.err, "linattn: ", 9), "%s", r.err);
    cr_assert(strstr(r.err, want), "want '%s' in: %s", want, r.err);
    cr_assert_eq(r.out_len, 0, "nothing on stdout: %s", r.out);
    tu_run_free(&r);
}

Test(cli_errors, bad_flags)
{
    const char *L = tu_data(LINEAR);
    check_error(tu_run("generate", L, "--prompt", "x", "--bogus", NULL), "'--bogus'");
    check_error(tu_run("generate", L, "-zq", NULL), "'-z'");
    check_error(tu_run("generate", L, "--prompt", NULL), "'--prompt' needs a value");
    check_error(tu_run("generate", L, "--prompt", "x", "--tokens", "-2", NULL), "--tokens");
    check_error(tu_run("generate", L, "--prompt", "x", "--tokens", "12x", NULL), "--tokens");
    check_error(tu_run("generate", L, "--prompt", "x", "--top-p", "0", NULL), "--top-p");
    check_error(tu_run("generate", L, "--prompt", "x", "--top-p", "1.5", NULL), "--top-p");
    check_error(tu_run("generate", L, "--prompt", "x", "--temperature", "abc", NULL),
                "--temperature");
    check_error(tu_run("generate", L, "--prompt", "x", "--temperature", "nan", NULL),
                "--temperature");
    check_error(tu_run("generate", L, "--prompt", "x", "--seed", "-3", NULL), "--seed");
    /* leading blanks are refused, as in a config: ' -1' once wrapped to 2^64 - 1 */
    check_error(tu_run("generate", L, "--prompt", "x", "--seed", " -1", NULL), "--seed");
    check_error(tu_run("generate", L, "--prompt", "x", "--seed", " 5", NULL), "--seed");
    check_error(tu_run("generate", L, "--prompt", "x", "--tokens", " 5", NULL), "--tokens");
    check_error(tu_run("generate", L, "--prompt", "x", "--top-k", "+5", NULL), "--top-k");
    check_error(tu_run("generate", L, "--prompt", "x", "--threads", "many", NULL), "--threads");
    check_error(tu_run("generate", L, L, "--prompt", "x", NULL), "unexpected argument");
    check_error(tu_run("generate", NULL), "no config");
    check_error(tu_run("generate", L, "--prompt", "", NULL), "empty prompt");
    check_error(tu_run("info", "--bogus", NULL), "'--bogus'");
    check_error(tu_run("info", "--threads", NULL), "'--threads' needs a value");
    check_error(tu_run("info", L, "--threads", "-2", NULL), "--threads");
}

Test(cli_errors, prompt_and_prompt_file_together)
{
    const char *path = tu_path("p.txt");
    tu_write_file(path, "Hello", 5);
    check_error(tu_run("generate", tu_data(LINEAR), "--prompt", "x", "--prompt-file", path, NULL),
                "not both");
    check_error(tu_run("generate", tu_data(LINEAR), "--prompt-file", tu_path("missing.txt"), NULL),
                "missing.txt");
}

/* The config `name` holding text: generate and info both refuse it, with
 * generate_want and info_want in their messages. */
static void check_bad_config(const char *name, const char *text, const char *generate_want,
                             const char *info_want)
{
    const char *path = tu_path(name);
    tu_write_text(path, text);
    check_error(tu_run("generate", path, "--prompt", "x", NULL), generate_want);
    check_error(tu_run("info", path, NULL), info_want);
}

Test(cli_errors, bad_config_and_weights)
{
    check_error(tu_run("generate", tu_path("missing.ini"), "--prompt", "x", NULL), "missing.ini");
    check_error(tu_run("info", tu_path("missing.ini"), NULL), "missing.ini");
    check_bad_config("bad.ini",
                     "[model]\nweights = random:1\nd_model = 32\nn_heads = 4\n"
                     "n_layers = 2\nd_ff = 64\nbogus_key = 1\n",
                     "bogus_key", "bad.ini:7");
    check_bad_config("noweights.ini",
                     "[model]\nweights = nowhere.safetensors\nd_model = 32\n"
                     "n_heads = 4\nn_layers = 2\nd_ff = 64\n",
                     "nowhere.safetensors", "nowhere.safetensors");
}

Test(cli_errors, foreign_isa)
{
#if defined(__x86_64__)
    const char *foreign = "neon";
#else
    const char *foreign = "avx2";
#endif
    check_error(tu_run("generate", tu_data(LINEAR), "--prompt", "x", "--isa", foreign, NULL),
                "cannot run here");
    check_error(tu_run("generate", tu_data(LINEAR), "--prompt", "x", "--isa", "sse", NULL),
                "unknown ISA 'sse'");
}

Test(cli_errors, prompt_longer_than_the_context)
{
    char prompt[MAX_SEQ + 2];
    memset(prompt, 'a', MAX_SEQ + 1);
    prompt[MAX_SEQ + 1] = '\0';
    check_error(tu_run("generate", tu_data(SOFTMAX), "--prompt", prompt, "--tokens", "3", NULL),
                "context full");
    check_error(tu_run("generate", tu_data(SOFTMAX), "--prompt", prompt, "--tokens", "0",
                       "--save-state", tu_path("full.state"), NULL),
                "context full");
    cr_assert_neq(access(tu_path("full.state"), F_OK), 0, "no state saved");
}

static void save_state(const char *config, const char *path)
{
    tu_run_result r = tu_run("generate", tu_data(config), "--prompt", "Hello", "--tokens", "5",
                             "--save-state", path, NULL);
    tu_assert_ok(&r);
    tu_run_free(&r);
}

Test(cli_errors, bad_state_files)
{
    const char *L = tu_data(LINEAR), *S = tu_data(SOFTMAX);
    const char *garbage = tu_path("garbage.state");
    tu_write_file(garbage, "this is not a session file, not even close to one\n", 51);
    check_error(tu_run("generate", L, "--load-state", garbage, NULL), "not a linattn session");
    check_error(tu_run("generate", L, "--load-state", tu_path("none.state"), NULL), "none.state");

    const char *lin = tu_path("linear.state"), *soft = tu_path("softmax.state");
    save_state(LINEAR, lin);
    save_state(SOFTMAX, soft);

    /* truncated: the first 100 bytes of a good file */
    size_t size;
    char *good = tu_read_file(lin, &size);
    cr_assert_geq(size, 100);
    const char *cut = tu_path("cut.state");
    tu_write_file(cut, good, 100);
    free(good);
    check_error(tu_run("generate", L, "--load-state", cut, NULL), "truncated");

    /* the other variant's stream */
    check_error(tu_run("generate", S, "--load-state", lin, NULL),
                "the state of a linear model; this model's attention is softmax");
    check_error(tu_run("generate", L, "--load-state", soft, NULL),
                "the state of a softmax model; this model's attention is linear");

    /* the good files still load */
    tu_run_result r = tu_run("generate", L, "--load-state", lin, "--tokens", "3", NULL);
    tu_assert_ok(&r);
    tu_run_free(&r);
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
    tu_run_result r = tu_run("info", tu_data(config), NULL);
    tu_assert_ok(&r);
    char line[128];
    snprintf(line, sizeof line, "parameters: %ld\n", tiny_params());
    cr_assert(strstr(r.out, line), "want '%s' in: %s", line, r.out);
    snprintf(line, sizeof line, "weight bytes: %ld\n", 4 * tiny_params());
    cr_assert(strstr(r.out, line), "want '%s' in: %s", line, r.out);
    cr_assert(strstr(r.out, want), "want '%s' in: %s", want, r.out);
    cr_assert_eq(r.err_len, 0, "%s", r.err);
    tu_run_free(&r);
}

/* info on random weights prints the sizes from the shape without making the
 * weights: this model's 206 GB could not be allocated here. */
Test(cli_info_model, random_weights_are_not_made)
{
    char dir[] = "/tmp/linattn-info-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/huge.ini", dir);
    tu_write_text(path, "[model]\nweights = random:1\nd_model = 8192\nn_heads = 64\n"
                        "n_layers = 64\nd_ff = 32768\n");
    tu_run_result r = tu_run("info", path, NULL);
    tu_assert_ok(&r);
    /* 64 x (4 d^2 + 2 d ff + 4 d + 2 x 2 d + ff + d) + 2 V d + 2 d (pre-norm) */
    cr_expect(strstr(r.out, "parameters: 51550633984"), "%s", r.out);
    tu_run_free(&r);
    unlink(path);
    rmdir(dir);
}

Test(cli_info_model, linear_state_bytes)
{
    char want[128];
    /* layers * heads * (d_k*d_v + d_k + 16 (d_k + d_v)) floats:
     * 2 * 4 * (8*8 + 8 + 16*16) * 4 = 10496 */
    snprintf(want, sizeof want, "state bytes per stream: %d ", STATE_BYTES);
    cr_assert_eq(STATE_BYTES, 10496);
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

/* kv_cache = f16: info gives half the cache bytes, generate runs on it, and
 * a linear model given the key fails in one line naming file, line, key. */
Test(cli_kv_cache, f16, .init = tu_make_dir, .fini = tu_remove_dir)
{
    const char *path = tu_path("kv16.ini");
    tu_write_text(path, "[model]\nweights = random:3\nd_model = 32\nn_heads = 4\nn_layers = 2\n"
                        "d_ff = 64\nattention = softmax\nmax_seq_len = 64\n"
                        "[runtime]\nkv_cache = f16\n");
    tu_run_result r = tu_run("info", path, NULL);
    tu_assert_ok(&r);
    char want[128];
    snprintf(want, sizeof want, "kv-cache bytes: %d per token, %d at max_seq_len %d (the token "
             "limit; kv_cache f16)", LAYERS * 2 * D * 2, LAYERS * 2 * D * 2 * MAX_SEQ, MAX_SEQ);
    cr_expect(strstr(r.out, want), "want '%s' in: %s", want, r.out);
    tu_run_free(&r);
    /* greedy text on the F16 cache: the fp32 cache's (this model's top
     * logits are further apart than the cache's rounding moves them) */
    r = tu_run("generate", path, "--prompt", "abc", "--tokens", "20", "--temperature", "0",
               "--print-ids", NULL);
    tu_assert_ok(&r);
    const char *p32 = tu_path("kv32.ini");
    tu_write_text(p32, "[model]\nweights = random:3\nd_model = 32\nn_heads = 4\nn_layers = 2\n"
                       "d_ff = 64\nattention = softmax\nmax_seq_len = 64\n");
    tu_run_result r32 = tu_run("generate", p32, "--prompt", "abc", "--tokens", "20",
                               "--temperature", "0", "--print-ids", NULL);
    tu_assert_ok(&r32);
    cr_expect(r.out_len > 20, "%s", r.out);
    assert_same_out(&r, &r32);
    tu_run_free(&r);
    tu_run_free(&r32);
    tu_write_text(path, "[model]\nweights = random:3\nd_model = 32\nn_heads = 4\nn_layers = 2\n"
                        "d_ff = 64\nattention = linear\n[runtime]\nkv_cache = f16\n");
    r = tu_run("info", path, NULL);
    cr_expect_neq(r.status, 0);
    cr_expect(strstr(r.err, "kv16.ini:9: [runtime] key 'kv_cache'") &&
                  strstr(r.err, "needs attention = softmax"), "%s", r.err);
    cr_expect_eq(tu_count_lines(r.err, r.err_len), 1, "%s", r.err);
    tu_run_free(&r);
}

/* ---- the embedding example (examples/stream.c) ------------------------------ */

Test(example, stream_loads_feeds_saves_resumes)
{
    const char *exe = getenv("LINATTN_STREAM_EXE");
    cr_assert_not_null(exe, "LINATTN_STREAM_EXE must point at the built examples/stream");
    const char *state = tu_path("example.state");
    char *argv[] = {(char *)"stream", (char *)tu_data(LINEAR), (char *)state, NULL};
    tu_run_result r = tu_run_argv(exe, argv);
    tu_assert_ok(&r);
    const char *prompt = "In the beginning";
    size_t plen = strlen(prompt);
    cr_assert(r.out_len > plen && !memcmp(r.out, prompt, plen), "%s", r.out);
    cr_assert_eq(access(state, F_OK), 0, "the state file was written");

    /* its greedy text is the CLI's greedy text: the resumed stream lost nothing */
    tu_run_result g = tu_run("generate", tu_data(LINEAR), "--prompt", prompt, "--tokens", "40",
                             "--temperature", "0", NULL);
    tu_assert_ok(&g);
    cr_assert(r.out_len > g.out_len && !memcmp(r.out, g.out, g.out_len),
              "example and CLI greedy texts differ");
    /* then the token count: 16 prompt tokens + 39 of the 40 samples fed */
    char tail[128];
    snprintf(tail, sizeof tail, "%d tokens, %d bytes of state\n", 16 + 39, STATE_BYTES);
    cr_assert_eq(r.out_len - g.out_len, strlen(tail));
    cr_assert(!memcmp(r.out + g.out_len, tail, strlen(tail)), "want '%s' after the text", tail);

    /* a library-level state file is no `linattn generate` stream */
    check_error(tu_run("generate", tu_data(LINEAR), "--load-state", state, NULL), "not saved by");
    tu_run_free(&r);
    tu_run_free(&g);
}

Test(example, stream_usage_and_bad_config)
{
    const char *exe = getenv("LINATTN_STREAM_EXE");
    cr_assert_not_null(exe);
    char *usage[] = {(char *)"stream", NULL};
    tu_run_result r = tu_run_argv(exe, usage);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "usage: stream"), "%s", r.err);
    tu_run_free(&r);
    char *bad[] = {(char *)"stream", (char *)tu_path("missing.ini"), (char *)tu_path("s.state"),
                   NULL};
    r = tu_run_argv(exe, bad);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "missing.ini"), "%s", r.err);
    tu_run_free(&r);
}

/* ---- the habits people bring (llama.cpp-style flags) ------------------------- */

Test(cli, short_flags_equal_long_ones)
{
    const char *L = tu_data(LINEAR);
    tu_run_result a = tu_run("generate", "-m", L, "-p", "Hello", "-n", "30", "-s", "7", "-t", "1",
                             NULL);
    tu_run_result b = tu_run("generate", L, "--prompt", "Hello", "--tokens", "30", "--seed", "7",
                             "--threads", "1", NULL);
    tu_assert_ok(&a);
    tu_assert_ok(&b);
    assert_same_out(&a, &b);
    cr_assert(a.out_len > 30, "%s", a.out);
    tu_run_free(&a);
    tu_run_free(&b);
}

/* --stop ends the text at the first time it ends with the stop text (the
 * same text as the run without it, cut there); --no-display-prompt drops the
 * echo; --print-ids prints the same tokens as ids. */
Test(cli, stop_no_display_and_ids)
{
    const char *L = tu_data(LINEAR);
    tu_run_result full = tu_run("generate", L, "-p", "ab", "-n", "60", "-s", "3", NULL);
    tu_assert_ok(&full);
    /* a stop text that occurs in the generated part: its 5th-8th bytes */
    char stop[5];
    memcpy(stop, full.out + 2 + 4, 4);
    stop[4] = '\0';
    const char *at = strstr(full.out + 2, stop);
    cr_assert_not_null(at);
    size_t want = (size_t)(at - full.out) + 4;
    tu_run_result cut = tu_run("generate", L, "-p", "ab", "-n", "60", "-s", "3", "--stop", "zzzz",
                               "--stop", stop, NULL);
    tu_assert_ok(&cut);
    cr_assert_eq(cut.out_len, want + 1, "text up to the stop, then a newline: '%s'", cut.out);
    cr_assert_eq(memcmp(cut.out, full.out, want), 0);
    tu_run_result quiet = tu_run("generate", L, "-p", "ab", "-n", "60", "-s", "3",
                                 "--no-display-prompt", NULL);
    tu_assert_ok(&quiet);
    cr_assert_eq(quiet.out_len, full.out_len - 2);
    cr_assert_eq(memcmp(quiet.out, full.out + 2, quiet.out_len), 0);
    tu_run_result ids = tu_run("generate", L, "-p", "ab", "-n", "60", "-s", "3", "--print-ids", NULL);
    tu_assert_ok(&ids);
    const char *p = ids.out;
    for (size_t i = 0; i < 60; i++) {
        char *end;
        long id = strtol(p, &end, 10);
        cr_assert(end != p, "id %zu missing: %s", i, ids.out);
        cr_assert_eq(id, (unsigned char)full.out[2 + i], "id %zu", i);
        p = end;
    }
    check_error(tu_run("generate", L, "-p", "ab", "--stop", "", NULL), "--stop");
    tu_run_free(&full);
    tu_run_free(&cut);
    tu_run_free(&quiet);
    tu_run_free(&ids);
}

/* --ctx sets max_seq_len: a softmax model stops there with a message; a
 * learned-position model cannot go past its table; too many threads warn. */
Test(cli, ctx_and_thread_warnings)
{
    tu_run_result r = tu_run("generate", tu_data(SOFTMAX), "-p", "abcdef", "-n", "50", "--ctx", "10",
                             NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(r.out_len, 6 + 5 + 1, "10 fed, the 5th sample printed: '%s'", r.out);
    cr_assert(strstr(r.err, "stopped after 5 tokens") && strstr(r.err, "max_seq_len 10") &&
                  strstr(r.err, "softmax KV cache"),
              "%s", r.err);
    tu_run_free(&r);
    r = tu_run("generate", tu_data("tiny-linear-post-rms-relu-learned.ini"), "-p", "ab", "-n", "100",
               NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "learned position table"), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("generate", tu_data(LINEAR), "-p", "ab", "-n", "2", "-t", "1000", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "warning: --threads 1000 is more than"), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("info", "--threads", "2", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "warning: --threads applies to a config"), "%s", r.err);
    tu_run_free(&r);
}

Test(cli_errors, no_model_section_is_named)
{
    const char *ini = tu_path("runtime-only.ini");
    const char body[] = "[runtime]\nthreads = 1\n";
    tu_write_file(ini, body, sizeof body - 1);
    check_error(tu_run("generate", ini, NULL), "no [model] section");
    check_error(tu_run("generate", tu_data(SOFTMAX), "--ctx", "0", NULL), "--ctx");
}

Test(cli_info_model, token_limits)
{
    tu_run_result r = tu_run("info", tu_data("tiny-linear-post-rms-relu-learned.ini"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "token limit 64 (learned position table)"), "%s", r.out);
    tu_run_free(&r);
    r = tu_run("info", tu_data(LINEAR), NULL);
    cr_assert(strstr(r.out, "no token limit"), "%s", r.out);
    tu_run_free(&r);
    r = tu_run("info", tu_data(SOFTMAX), NULL);
    cr_assert(strstr(r.out, "(the token limit; kv_cache f32)"), "%s", r.out);
    tu_run_free(&r);
}

/* chat (generate --interactive) through a pipe: each line of stdin is fed
 * and answered up to a newline; the first answer is generate's text for
 * that line with --stop "\n"; a conversation saved after one line and
 * resumed with the next prints what one conversation prints. */
Test(cli, chat_through_a_pipe)
{
    const char *L = tu_data(LINEAR);
    char in2[512], in1[512], in_b[512];
    snprintf(in2, sizeof in2, "%s", tu_path("two.txt"));
    snprintf(in1, sizeof in1, "%s", tu_path("one.txt"));
    snprintf(in_b, sizeof in_b, "%s", tu_path("b.txt"));
    tu_write_file(in2, "hello there\nand more\n", 21);
    tu_write_file(in1, "hello there\n", 12);
    tu_write_file(in_b, "and more", 8); /* no final newline: one is added */
    tu_next_stdin(in2);
    tu_run_result both = tu_run("chat", L, "-n", "40", "-s", "9", NULL);
    tu_assert_ok(&both);
    cr_assert_eq(tu_count_lines(both.out, both.out_len), 2, "two answers: '%s'", both.out);
    tu_run_result g = tu_run("generate", L, "-p", "hello there\n", "-n", "40", "-s", "9",
                             "--stop", "\n", "--no-display-prompt", NULL);
    tu_assert_ok(&g);
    size_t first = (size_t)(strchr(both.out, '\n') - both.out) + 1;
    cr_assert(g.out_len >= first && !memcmp(g.out, both.out, first),
              "chat's first answer '%.*s' vs generate '%s'", (int)first, both.out, g.out);
    const char *state = tu_path("chat.state");
    tu_next_stdin(in1);
    tu_run_result a = tu_run("chat", L, "-n", "40", "-s", "9", "--save-state", state, NULL);
    tu_assert_ok(&a);
    tu_next_stdin(in_b);
    tu_run_result b = tu_run("chat", L, "-n", "40", "--load-state", state, NULL);
    tu_assert_ok(&b);
    cr_assert_eq(a.out_len + b.out_len, both.out_len);
    cr_assert(!memcmp(a.out, both.out, a.out_len) &&
                  !memcmp(b.out, both.out + a.out_len, b.out_len),
              "resumed conversation differs: '%s' + '%s' vs '%s'", a.out, b.out, both.out);
    check_error(tu_run("chat", L, "-f", "-", NULL), "stdin");
    tu_run_free(&both);
    tu_run_free(&g);
    tu_run_free(&a);
    tu_run_free(&b);
}

/* A weights file that cannot be opened is named as an absolute path, with
 * the config and key it came from. */
Test(cli_errors, missing_weights_are_named_resolved)
{
    char dir[512], ini[600];
    snprintf(dir, sizeof dir, "%s/sub", tu_dir());
    cr_assert_eq(mkdir(dir, 0777), 0);
    snprintf(ini, sizeof ini, "%s/m.ini", dir);
    const char body[] = "[model]\nweights = ../nothere.safetensors\nd_model = 8\nn_heads = 2\n"
                        "n_layers = 1\nd_ff = 8\n";
    tu_write_file(ini, body, sizeof body - 1);
    char want[700];
    snprintf(want, sizeof want, "[model] key 'weights' (%s/nothere.safetensors)", tu_dir());
    check_error(tu_run("generate", ini, "-p", "x", NULL), want);
}

/* A model whose vocabulary passes the 256 bytes: tokens past them print
 * nothing, said once on stderr; --print-ids shows them. */
Test(cli, tokens_past_the_bytes)
{
    const char *ini = tu_path("v300.ini");
    const char body[] = "[model]\nweights = random:5\nvocab_size = 300\nd_model = 16\nn_heads = 2\n"
                        "n_layers = 1\nd_ff = 16\n";
    tu_write_file(ini, body, sizeof body - 1);
    tu_run_result ids = tu_run("generate", ini, "-p", "ab", "-n", "200", "-s", "1", "--print-ids",
                               NULL);
    tu_assert_ok(&ids);
    int past = 0, n = 0;
    for (const char *p = ids.out; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        cr_assert(v >= 0 && v < 300, "%ld", v);
        past += v >= 256;
        n++;
        p = end;
    }
    cr_assert_eq(n, 200);
    cr_assert_gt(past, 0, "the control: some sampled token is past 255");
    cr_assert_eq(ids.err_len, 0, "--print-ids warns about nothing: %s", ids.err);
    tu_run_result text = tu_run("generate", ini, "-p", "ab", "-n", "200", "-s", "1", NULL);
    tu_assert_ok(&text);
    cr_assert_eq(tu_count_lines(text.err, text.err_len), 1, "one note: %s", text.err);
    cr_assert(strstr(text.err, "is not a byte") && strstr(text.err, "--print-ids"), "%s", text.err);
    cr_assert_eq(text.out_len, 2 + (size_t)(200 - past) + 1, "the bytes only");
    tu_run_free(&ids);
    tu_run_free(&text);
}

/* ---- signals: Ctrl-C and SIGTERM keep the work ----------------------------- */

/* A generation stopped by a signal prints its stats, writes --save-state (a
 * stream that continues) and exits 128 + the signal. */
static void signal_keeps_the_stream(int sig)
{
    const char *state = tu_path("sig.bin");
    char path[512];
    snprintf(path, sizeof path, "%s", state);
    const char *args[] = {"generate", tu_data(LINEAR), "-p", "Hi", "-n", "100000000",
                          "--ignore-eos", "--save-state", path, "--stats", NULL};
    const int sigs[] = {sig};
    tu_run_result r = tu_run_signalled(args, sigs, 1, 2000);
    cr_assert_eq(r.status, 128 + sig, "status %d: %s", r.status, r.err);
    cr_assert_geq(r.out_len, 2000);
    cr_expect(strstr(r.err, sig == SIGINT ? "interrupted (Ctrl-C) after " : "terminated (SIGTERM)"),
              "%s", r.err);
    cr_expect(strstr(r.err, "saving the stream"), "%s", r.err);
    cr_expect(strstr(r.err, "stats: prompt "), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("generate", tu_data(LINEAR), "--load-state", path, "-n", "5", NULL);
    tu_assert_ok(&r);
    cr_expect_gt(r.out_len, 1, "the saved stream continues");
    tu_run_free(&r);
}

Test(cli, ctrl_c_ends_the_generation_and_keeps_it) { signal_keeps_the_stream(SIGINT); }
Test(cli, sigterm_saves_and_exits) { signal_keeps_the_stream(SIGTERM); }

/* In a conversation Ctrl-C ends the answer, not the conversation: the next
 * line is read and answered (the second signal comes after that answer's
 * text); the end of input then ends it as usual. */
Test(cli, ctrl_c_in_chat_returns_to_the_prompt)
{
    tu_write_text(tu_path("in.txt"), "first\nsecond\n");
    char path[512];
    snprintf(path, sizeof path, "%s", tu_path("chat.bin"));
    tu_next_stdin(tu_path("in.txt"));
    /* answers that never end by themselves: no newline stop, no eos */
    const char *args[] = {"chat", tu_data(LINEAR), "-n", "100000000", "--stop", "@@@@@@",
                          "--ignore-eos", "--save-state", path, NULL};
    const int sigs[] = {SIGINT, SIGINT};
    tu_run_result r = tu_run_signalled(args, sigs, 2, 2000);
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
    cr_assert_geq(r.out_len, 4000, "two answers");
    tu_run_free(&r);
    linattn_model *m;
    cr_assert_eq(linattn_model_load(tu_data(LINEAR), &m), LINATTN_OK);
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    cr_assert_eq(linattn_session_load(s, path, NULL, 0, NULL), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_expect_gt(linattn_session_tokens(s), 4000u, "both answers and both lines are in the stream");
    linattn_session_free(s);
    linattn_model_free(m);
}

/* chat --chat-template: each line goes in as that format's user turn (here
 * ChatML, on a byte-level model: a token a byte), the answer after it. */
Test(cli, chat_template_wraps_each_line)
{
    tu_write_text(tu_path("in.txt"), "Hi\n");
    char path[512];
    snprintf(path, sizeof path, "%s", tu_path("chat.bin"));
    tu_next_stdin(tu_path("in.txt"));
    tu_run_result r = tu_run("chat", tu_data(LINEAR), "--chat-template", "chatml", "-n", "20",
                             "--save-state", path, NULL);
    tu_assert_ok(&r);
    tu_run_free(&r);
    linattn_model *m;
    cr_assert_eq(linattn_model_load(tu_data(LINEAR), &m), LINATTN_OK);
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    cr_assert_eq(linattn_session_load(s, path, NULL, 0, NULL), LINATTN_OK);
    const size_t turn = strlen("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    uint64_t n = linattn_session_tokens(s);
    cr_expect(n > turn && n <= turn + 20, "%llu tokens: the turn (%zu) and the answer",
              (unsigned long long)n, turn);
    linattn_session_free(s);
    linattn_model_free(m);
    r = tu_run("chat", tu_data(LINEAR), "--chat-template", "nope", NULL);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "'nope' is none of auto, plain, chatml"), "%s", r.err);
    tu_run_free(&r);
}

/* ---- output that cannot be written, input that cannot be read ------------- */

/* stdout on /dev/full or closed: every command fails (exit 1, not a signal)
 * with one line naming the write and its reason, where it used to exit 0
 * with the text lost. A generation stops at the failed write and saves
 * nothing (the state would hold text nobody saw). */
Test(cli_errors, output_that_cannot_be_written)
{
    if (access("/dev/full", W_OK) != 0)
        cr_skip_test("no /dev/full here");
    const char *L = tu_data(LINEAR), *state = tu_path("lost.state");
    const char *in = tu_path("in.txt"), *text = tu_path("text.txt");
    tu_write_text(in, "hello\n");
    tu_write_text(text, "the beginning of a text to score, long enough to fill a buffer");
    const char *const runs[][12] = {
        {"generate", L, "-p", "Hello", "-n", "40", "--save-state", state, NULL},
        {"chat", L, "-n", "20", NULL},
        {"eval", L, "--text", text, NULL},
        {"info", NULL},
        {"info", L, NULL},
        {"tokenize", L, "hello", "--pieces", NULL},
        {"detokenize", L, "104", "105", NULL},
        {"generate", "--help", NULL},
        {"--version", NULL},
    };
    const char *outs[2][2] = {{"/dev/full", "No space left on device"},
                              {"-", "Bad file descriptor"}};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            if (!strcmp(runs[i][0], "chat"))
                tu_next_stdin(in);
            tu_next_stdout(outs[k][0]);
            tu_run_result r = tu_run_args(runs[i]);
            char want[128];
            snprintf(want, sizeof want, "linattn: writing the output: %s\n", outs[k][1]);
            cr_expect_eq(r.status, 1, "%s %s >%s: exit %d: %s", runs[i][0],
                         runs[i][1] ? runs[i][1] : "", outs[k][0], r.status, r.err);
            cr_expect_str_eq(r.err, want, "%s >%s", runs[i][0], outs[k][0]);
            tu_run_free(&r);
        }
    cr_expect_neq(access(state, F_OK), 0, "a state was saved for lost text");
    /* linattn-bench's table likewise (its --json, --csv and --plot files
     * were already checked) */
    const char *bench = getenv("LINATTN_BENCH_EXE");
    if (bench) {
        tu_next_stdout("/dev/full");
        tu_run_result r = tu_run_argv(bench, (char *[]){"linattn-bench", "--list", NULL});
        cr_expect_eq(r.status, 1, "linattn-bench --list >/dev/full: exit %d", r.status);
        cr_expect_str_eq(r.err, "linattn-bench: writing the output: No space left on device\n");
        tu_run_free(&r);
    }
}

/* A conversation line is at most 1 MiB with its newline: a longer one ends
 * the conversation there with exit 1 and one line, the answers so far kept
 * and the stream saved as at the end of input (it used to be read whole,
 * however long: stdin from /dev/zero grew to the memory limit, then exit
 * 0). A read error (stdin a folder) names stdin and the reason, exit 1
 * (chat said nothing and exited 0). */
Test(cli_errors, chat_line_too_long_or_unreadable)
{
    const char *L = tu_data(LINEAR), *in = tu_path("long.txt"), *state = tu_path("chat.state");
    const size_t big = ((size_t)1 << 20) + 10;
    char *text = malloc(big + 32);
    cr_assert(text);
    size_t n = (size_t)sprintf(text, "hello there\n");
    memset(text + n, 'a', big);
    n += big;
    n += (size_t)sprintf(text + n, "\nand more\n");
    tu_write_file(in, text, n);
    free(text);
    tu_next_stdin(in);
    tu_run_result r = tu_run("chat", L, "-n", "20", "-s", "9", "--save-state", state, NULL);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect_eq(tu_count_lines(r.err, r.err_len), 1, "%s", r.err);
    cr_expect(strstr(r.err, "linattn: chat: standard input: a line longer than 1048576 bytes"),
              "%s", r.err);
    cr_expect_eq(tu_count_lines(r.out, r.out_len), 1, "the first answer only: '%s'", r.out);
    cr_expect_eq(access(state, F_OK), 0, "the conversation so far is saved");
    tu_run_free(&r);

    tu_next_stdin("/");
    check_error(tu_run("chat", L, "-n", "5", NULL),
                "linattn: chat: reading standard input: Is a directory");
    tu_next_stdin("/");
    check_error(tu_run("generate", L, "-f", "-", NULL),
                "linattn: prompt-file: standard input: Is a directory");
}

/* The messages of issue 23's d11 that belong to the CLI: each says what is
 * wrong in the user's terms, before any work is done. */
Test(cli_errors, messages_name_the_real_problem)
{
    const char *L = tu_data(LINEAR);
    /* float flags: nan and inf are not "outside [-inf, inf]"; a value that
     * overflows a float (1e39) is refused, not turned into inf */
    const char *attend[] = {"attend", "--variant", "linear", "--causal", "--q", "q.npy", "--k",
                            "k.npy", "--v", "v.npy", "--out", "o.npy", "--eps", "nan", NULL};
    check_error(tu_run_args(attend), "--eps: expected a finite number, got 'nan'");
    attend[13] = "1e39";
    check_error(tu_run_args(attend), "--eps: expected a finite number, got '1e39'");
    attend[12] = "--scale";
    attend[13] = "-1e39";
    check_error(tu_run_args(attend), "--scale: expected a finite number, got '-1e39'");
    check_error(tu_run("generate", L, "-p", "x", "--temperature", "1e39", NULL),
                "--temperature: expected a number in [0, 100], got '1e39'");

    /* a prompt byte the model has no token for: the prompt's, not the sampler's */
    const char *v64 = tu_path("v64.ini");
    tu_write_text(v64, "[model]\nweights = random:3\nd_model = 32\nn_heads = 4\nn_layers = 2\n"
                       "d_ff = 64\nvocab_size = 64\nattention = linear\n");
    check_error(tu_run("generate", v64, "-p", "!a", "-n", "1", NULL),
                "linattn: prompt: the prompt's token 2 of 2 (id 97) is past the model's "
                "vocab_size 64 (ids 0..63)");

    /* every token banned: refused before the prefill and the prompt's echo
     * (check_error: nothing on stdout) */
    char *argv[2 * VOCAB + 8] = {"linattn", "generate", (char *)L, "-p", "In the", "-n", "3"};
    char bias[VOCAB][16];
    int n = 7;
    for (int t = 0; t < VOCAB; t++) { /* more arguments than tu_run takes */
        snprintf(bias[t], sizeof bias[t], "%d=-inf", t);
        argv[n++] = "--logit-bias";
        argv[n++] = bias[t];
    }
    argv[n] = NULL;
    check_error(tu_run_argv(getenv("LINATTN_EXE"), argv),
                "linattn: logit-bias: every token is banned (all 256 at -inf)");
    argv[n - 2] = NULL; /* one token left: it runs */
    tu_run_result r = tu_run_argv(getenv("LINATTN_EXE"), argv);
    tu_assert_ok(&r);
    tu_run_free(&r);
}

/* A softmax state with an f16 cache loaded into a linear model is named as
 * what it is (it was "unknown KV cache type 1 in the header"). */
Test(cli_errors, state_of_another_attention_kind)
{
    const char *sm = tu_path("sm16.ini"), *state = tu_path("sm16.state");
    tu_write_text(sm, "[model]\nweights = random:3\nd_model = 32\nn_heads = 4\nn_layers = 2\n"
                      "d_ff = 64\nattention = softmax\nmax_seq_len = 64\n"
                      "[runtime]\nkv_cache = f16\n");
    tu_run_result r = tu_run("generate", sm, "-p", "abc", "-n", "2", "--save-state", state, NULL);
    tu_assert_ok(&r);
    tu_run_free(&r);
    check_error(tu_run("generate", tu_data(LINEAR), "--load-state", state, "-n", "1", NULL),
                "the state of a softmax model (f16 KV cache); this model's attention is linear");
}

/* -n -1 runs until the context is full; -c is --ctx and warns past the
 * trained context; --ctx-overflow window goes on past the cache as a
 * sliding window with the same text until the cache fills; the messages
 * name the flag. */
Test(cli, contexts_never_dead_end)
{
    tu_run_result full = tu_run("generate", tu_data(SOFTMAX), "-p", "abcdef", "-n", "-1", "--ctx",
                                "10", "--temperature", "0", NULL);
    cr_assert_eq(full.status, 0, "%s", full.err);
    cr_assert_eq(full.out_len, 6 + 5 + 1, "until the cache is full: '%s'", full.out);
    cr_assert(strstr(full.err, "stopped after 5 tokens") &&
                  strstr(full.err, "--ctx-overflow window"),
              "%s", full.err);
    tu_run_result c = tu_run("generate", tu_data(SOFTMAX), "-p", "abcdef", "-n", "-1", "-c", "10",
                             "--temperature", "0", NULL);
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_assert_eq(c.out_len, full.out_len);
    cr_assert_eq(memcmp(c.out, full.out, c.out_len), 0, "-c is --ctx");
    tu_run_free(&c);
    c = tu_run("generate", tu_data(SOFTMAX), "-p", "ab", "-n", "2", "--ctx-size", "1000", NULL);
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_assert(strstr(c.err, "warning: --ctx 1000 passes the 64 tokens this model was trained for"),
              "%s", c.err);
    tu_run_free(&c);
    tu_run_result w = tu_run("generate", tu_data(SOFTMAX), "-p", "abcdef", "-n", "30", "--ctx", "10",
                             "--ctx-overflow", "window", "--temperature", "0", NULL);
    cr_assert_eq(w.status, 0, "%s", w.err);
    cr_assert_eq(w.out_len, 6 + 30 + 1, "30 tokens past a cache of 10: '%s'", w.out);
    cr_assert_eq(memcmp(w.out, full.out, full.out_len - 1), 0,
                 "the same text until the cache fills");
    cr_assert_null(strstr(w.err, "stopped"), "%s", w.err);
    tu_run_free(&w);
    tu_run_free(&full);
    w = tu_run("generate", tu_data(SOFTMAX), "-p", "ab", "--ctx-overflow", "maybe", NULL);
    cr_assert_eq(w.status, 1);
    cr_assert(strstr(w.err, "--ctx-overflow: 'maybe' is neither stop nor window"), "%s", w.err);
    tu_run_free(&w);
    w = tu_run("generate", tu_data("tiny-softmax-post-rms-relu-learned.ini"), "-p", "ab",
               "--ctx-overflow", "window", NULL);
    cr_assert_eq(w.status, 1, "learned positions cannot slide");
    cr_assert(strstr(w.err, "learned positions end at"), "%s", w.err);
    tu_run_free(&w);
    w = tu_run("generate", tu_data(SOFTMAX), "-p", "ab", "-n", "-2", NULL);
    cr_assert_eq(w.status, 1, "-n below -1 is refused");
    tu_run_free(&w);
}

/* chat --stats counts the lines as prompt tokens and the model's time
 * only (the decode count is the tokens written). */
Test(cli, chat_stats_count_the_lines)
{
    tu_write_text(tu_path("lines.txt"), "Hello\nagain\n");
    tu_next_stdin(tu_path("lines.txt"));
    tu_run_result r = tu_run("chat", tu_data(LINEAR), "-n", "4", "--stats", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "stats: prompt 12 tokens,"), "the two lines' 12 bytes: %s", r.err);
    cr_assert(strstr(r.err, "decode 8 tokens"), "4 a line: %s", r.err);
    tu_run_free(&r);
}
