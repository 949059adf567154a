/* test_llama2c.c: llama2.c checkpoints (legacy and version 1) loaded directly: shape from the
 * header, logits against PyTorch's, shared and unshared classifiers, and every kind of bad file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../engine/cli/npy.h"
#include "../engine/llama2c.h"
#include "../engine/tokenizer.h"
#include "../engine/weights.h"
#include "testutil.h"

TestSuite(llama2c, .init = tu_make_dir, .fini = tu_remove_dir);

/* The two golden models of tools/reference.py with llama2.c's architecture
 * (rmsnorm 1e-5, pre-norm, rope interleaved theta 10000, swiglu, no bias):
 * d_model 32, 4 heads, 2 k/v heads, 2 layers, d_ff 64, vocab 256,
 * max_seq_len 64. */
#define D 32
#define FF 64
#define L 2
#define H 4
#define G 2
#define V 256
#define SEQ 64
#define HS (D / H)
#define KVD (HS * G)

static const char softmax_model[] = "tiny-softmax-llama-gqa";      /* untied */
static const char linear_model[] = "tiny-linear-llama-gqa-tied";   /* tied */

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_i32(buf *b, int32_t v)
{
    put(b, &v, 4); /* little-endian hosts only, as llama2.c */
}

static linattn_weights *golden_weights(const char *model)
{
    char name[256];
    snprintf(name, sizeof name, "%s.safetensors", model);
    linattn_weights *w;
    cr_assert_eq(linattn_weights_open(tu_data(name), &w), LINATTN_OK, "%s", linattn_last_error());
    return w;
}

/* Appends tensor `name` (rows x cols, cols 0: a vector). */
static void put_tensor(buf *b, linattn_weights *w, const char *name, int rows, int cols)
{
    int64_t shape[2] = {rows, cols};
    const float *data;
    cr_assert_eq(linattn_weights_get(w, name, cols ? 2 : 1, shape, &data), LINATTN_OK, "%s",
                 linattn_last_error());
    put(b, data, (size_t)rows * (size_t)(cols ? cols : 1) * sizeof(float));
}

static void put_layers(buf *b, linattn_weights *w, const char *fmt, int rows, int cols)
{
    char name[128];
    for (int l = 0; l < L; l++) {
        snprintf(name, sizeof name, fmt, l);
        put_tensor(b, w, name, rows, cols);
    }
}

/* The golden model's weights as a llama2.c checkpoint: version 0 is
 * export.py's legacy_export (run.c's layout), 1 its version1_export.
 * Returns its path. */
static const char *write_checkpoint(const char *model, int version, const char *file)
{
    linattn_weights *w = golden_weights(model);
    int shared = !linattn_weights_has(w, "lm_head.weight");
    buf b = {0};
    if (version == 1) {
        put_i32(&b, 0x616b3432);
        put_i32(&b, 1);
    }
    int32_t params[7] = {D, FF, L, H, G, V, SEQ};
    if (version == 0 && !shared)
        params[5] = -V;
    for (int i = 0; i < 7; i++)
        put_i32(&b, params[i]);
    if (version == 1) {
        unsigned char flag = (unsigned char)shared, zero[256] = {0};
        put(&b, &flag, 1);
        put(&b, zero, 256 - b.n);
        put_layers(&b, w, "layers.%d.norm1.weight", D, 0);
        put_layers(&b, w, "layers.%d.norm2.weight", D, 0);
        put_tensor(&b, w, "norm_f.weight", D, 0);
        put_tensor(&b, w, "tok_emb.weight", V, D);
        put_layers(&b, w, "layers.%d.attn.q.weight", D, D);
        put_layers(&b, w, "layers.%d.attn.k.weight", KVD, D);
        put_layers(&b, w, "layers.%d.attn.v.weight", KVD, D);
        put_layers(&b, w, "layers.%d.attn.o.weight", D, D);
        put_layers(&b, w, "layers.%d.ffn.gate.weight", FF, D);
        put_layers(&b, w, "layers.%d.ffn.down.weight", D, FF);
        put_layers(&b, w, "layers.%d.ffn.up.weight", FF, D);
    } else {
        put_tensor(&b, w, "tok_emb.weight", V, D);
        put_layers(&b, w, "layers.%d.norm1.weight", D, 0);
        put_layers(&b, w, "layers.%d.attn.q.weight", D, D);
        put_layers(&b, w, "layers.%d.attn.k.weight", KVD, D);
        put_layers(&b, w, "layers.%d.attn.v.weight", KVD, D);
        put_layers(&b, w, "layers.%d.attn.o.weight", D, D);
        put_layers(&b, w, "layers.%d.norm2.weight", D, 0);
        put_layers(&b, w, "layers.%d.ffn.gate.weight", FF, D);
        put_layers(&b, w, "layers.%d.ffn.down.weight", D, FF);
        put_layers(&b, w, "layers.%d.ffn.up.weight", FF, D);
        put_tensor(&b, w, "norm_f.weight", D, 0);
        /* the old freq_cis_real and _imag: garbage, which must be skipped */
        for (int i = 0; i < SEQ * HS; i++) {
            float nan = NAN;
            put(&b, &nan, sizeof nan);
        }
    }
    if (!shared)
        put_tensor(&b, w, "lm_head.weight", V, D);
    linattn_weights_close(w);
    const char *path = tu_path(file);
    tu_write_file(path, b.p, b.n);
    free(b.p);
    return path;
}

static double *golden(const char *name, const char *suffix, size_t *count)
{
    char file[256];
    snprintf(file, sizeof file, "%s.%s.npy", name, suffix);
    linattn_npy arr;
    cr_assert_eq(linattn_npy_read(tu_data(file), &arr), LINATTN_OK, "%s", linattn_last_error());
    size_t n = 1;
    for (int i = 0; i < arr.ndim; i++)
        n *= arr.shape[i];
    double *out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = arr.data[i];
    *count = arr.shape[0];
    linattn_npy_free(&arr);
    return out;
}

static double max_abs_diff(const float *a, const double *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        worst = isnan(d) ? INFINITY : d > worst ? d : worst;
    }
    return worst;
}

/* The model of config text `ini` (written beside the checkpoints) against
 * the golden logits of `model` (PyTorch, float64): every step, then the
 * whole prompt at once. 1e-4 absolute, as the other golden tests: fp32
 * through 2 layers of width 32 stays near 1e-6. */
static void check_against(const char *ini, const char *model)
{
    const char *cfg = tu_path("model.ini");
    tu_write_text(cfg, ini);
    linattn_model *m;
    cr_assert_eq(linattn_model_load(cfg, &m), LINATTN_OK, "%s", linattn_last_error());
    size_t nt, nl;
    double *toks = golden(model, "tokens", &nt);
    double *want = golden(model, "logits", &nl);
    cr_assert_eq(nl, nt);
    int tokens[64];
    cr_assert_leq(nt, 64);
    for (size_t i = 0; i < nt; i++)
        tokens[i] = (int)toks[i];
    float logits[V];
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    linattn_session_set_threads(s, 2);
    for (size_t t = 0; t < nt; t++) {
        cr_assert_eq(linattn_session_feed(s, &tokens[t], 1, logits), LINATTN_OK, "%s",
                     linattn_last_error());
        double err = max_abs_diff(logits, want + t * V, V);
        cr_assert_leq(err, 1e-4, "%s step %zu: max abs error %g", model, t, err);
    }
    linattn_session_reset(s);
    cr_assert_eq(linattn_session_feed(s, tokens, (int)nt, logits), LINATTN_OK, "%s",
                 linattn_last_error());
    double err = max_abs_diff(logits, want + (nt - 1) * V, V);
    cr_assert_leq(err, 1e-4, "%s prefill: max abs error %g", model, err);
    linattn_session_free(s);
    linattn_model_free(m);
    free(toks);
    free(want);
}

Test(llama2c, legacy_unshared_softmax_matches_pytorch)
{
    write_checkpoint(softmax_model, 0, "legacy.bin");
    check_against("[model]\nweights = llama2c:legacy.bin\nattention = softmax\n", softmax_model);
}

Test(llama2c, version1_unshared_softmax_matches_pytorch)
{
    write_checkpoint(softmax_model, 1, "v1.bin");
    check_against("[model]\nweights = llama2c:v1.bin\nattention = softmax\n", softmax_model);
}

Test(llama2c, legacy_shared_linear_matches_pytorch)
{
    write_checkpoint(linear_model, 0, "legacy.bin");
    check_against("[model]\nweights = llama2c:legacy.bin\nattention = linear\n", linear_model);
}

Test(llama2c, version1_shared_linear_matches_pytorch)
{
    write_checkpoint(linear_model, 1, "v1.bin");
    /* shape keys the file repeats, agreeing with it, are accepted */
    check_against("[model]\nweights = llama2c:v1.bin\nattention = linear\nd_model = 32\n"
                  "n_heads = 4\nn_kv_heads = 2\nvocab_size = 256\ntie_embeddings = true\n",
                  linear_model);
}

Test(llama2c, the_shape_comes_from_the_file)
{
    write_checkpoint(softmax_model, 0, "legacy.bin");
    const char *path = tu_path("c.ini");
    tu_write_text(path, "[model]\nweights = llama2c:legacy.bin\nattention = softmax\n");
    linattn_config c;
    linattn_config_defaults(&c);
    cr_assert_eq(linattn_config_load(path, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(c.d_model, D);
    cr_expect_eq(c.d_ff, FF);
    cr_expect_eq(c.n_layers, L);
    cr_expect_eq(c.n_heads, H);
    cr_expect_eq(c.n_kv_heads, G);
    cr_expect_eq(c.vocab_size, V);
    cr_expect_eq(c.max_seq_len, SEQ);
    cr_expect_eq(c.tie_embeddings, 0);
    cr_expect_eq(c.norm, LINATTN_NORM_RMSNORM);
    cr_expect_eq(c.norm_position, LINATTN_NORM_PRE);
    cr_expect_eq(c.ffn, LINATTN_FFN_SWIGLU);
    cr_expect_eq(c.positions, LINATTN_POS_ROPE);
    cr_expect_eq(c.rope_pairing, LINATTN_ROPE_INTERLEAVED);
    cr_expect_eq(c.rope_theta, 10000.0f);
    cr_expect_eq(c.bias, 0);
    cr_expect_eq(c.norm_eps, 1e-5f);
    cr_expect(strstr(c.weights, "llama2c:/"), "resolved to an absolute path: %s", c.weights);
    /* sizes: every float of the file but the freq_cis blocks and the header */
    linattn_model_sizes sz;
    cr_assert_eq(linattn_config_sizes(&c, &sz), LINATTN_OK, "%s", linattn_last_error());
    uint64_t want = (uint64_t)V * D + L * (2 * D + 2 * D * D + 2 * KVD * D + 3 * D * FF) + D + V * D;
    cr_expect_eq(sz.params, want, "%llu params, want %llu", (unsigned long long)sz.params,
                 (unsigned long long)want);
    cr_expect_eq(sz.state_bytes, (size_t)L * 2 * KVD * sizeof(float), "KV cache per token");

    /* max_seq_len may differ (a cache size), and a config built by hand
     * takes the zero fields from the file */
    linattn_config h;
    linattn_config_defaults(&h);
    snprintf(h.weights, sizeof h.weights, "llama2c:%s", tu_path("legacy.bin"));
    h.vocab_size = 0;
    h.max_seq_len = 0;
    h.attention = LINATTN_ATTN_SOFTMAX;
    h.norm = LINATTN_NORM_RMSNORM;
    h.ffn = LINATTN_FFN_SWIGLU;
    h.positions = LINATTN_POS_ROPE;
    h.bias = 0;
    cr_assert_eq(linattn_config_validate(&h), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(linattn_config_sizes(&h, &sz), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(sz.params, want);
    linattn_model *m;
    cr_assert_eq(linattn_model_from_config(&h, &m), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(linattn_model_config(m)->d_model, D);
    cr_expect_eq(linattn_model_config(m)->n_kv_heads, G);
    cr_expect_eq(linattn_model_config(m)->max_seq_len, SEQ);
    cr_expect_eq(linattn_model_params(m), want);
    linattn_model_free(m);
    h.d_model = 64; /* a field given must agree */
    cr_expect_eq(linattn_model_from_config(&h, &m), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'd_model'"), "%s", linattn_last_error());
}

Test(llama2c, keys_that_disagree_with_the_file)
{
    write_checkpoint(softmax_model, 1, "v1.bin");
    const char *path = tu_path("c.ini");
    static const struct { const char *line, *key, *values; } cases[] = {
        {"d_model = 64", "key 'd_model'", "64 here, but the llama2.c checkpoint"},
        {"n_heads = 8", "key 'n_heads'", "has 4"},
        {"n_kv_heads = 4", "key 'n_kv_heads'", "has 2"},
        {"n_layers = 3", "key 'n_layers'", "has 2"},
        {"d_ff = 63", "key 'd_ff'", "has 64"},
        {"vocab_size = 32000", "key 'vocab_size'", "has 256"},
        {"tie_embeddings = true", "key 'tie_embeddings'", "has 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "[model]\nweights = llama2c:v1.bin\n%s\n", cases[i].line);
        tu_write_text(path, text);
        linattn_config c;
        linattn_config_defaults(&c);
        cr_expect_eq(linattn_config_load(path, &c), LINATTN_ERR_INVALID, "%s", cases[i].line);
        const char *msg = linattn_last_error();
        cr_expect(strstr(msg, "c.ini:3: [model]") && strstr(msg, cases[i].key) &&
                      strstr(msg, cases[i].values) && strstr(msg, "v1.bin"),
                  "%s: %s", cases[i].line, msg);
    }
    /* the architecture keys may still be set: here a linear, 128-token model */
    tu_write_text(path, "[model]\nweights = llama2c:v1.bin\nattention = linear\nmax_seq_len = 128\n");
    linattn_config c;
    linattn_config_defaults(&c);
    cr_expect_eq(linattn_config_load(path, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(c.max_seq_len, 128);
}

/* A linear model of a softmax checkpoint runs (quality aside): prefill
 * equals stepping, to fp32 rounding, and nothing is NaN; a stream goes past
 * the checkpoint's seq_len; batched steps equal single ones. */
Test(llama2c, linear_attention_on_a_softmax_checkpoint)
{
    write_checkpoint(softmax_model, 0, "legacy.bin");
    const char *path = tu_path("c.ini");
    tu_write_text(path, "[model]\nweights = llama2c:legacy.bin\nattention = linear\n");
    linattn_model *m;
    cr_assert_eq(linattn_model_load(path, &m), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(linattn_session_tokens_left(NULL), 0);
    enum { N = 100 }; /* past seq_len 64 */
    int tokens[N];
    for (int i = 0; i < N; i++)
        tokens[i] = (i * 37 + 11) % V;
    linattn_session *a, *b, *c2;
    cr_assert_eq(linattn_session_new(m, &a), LINATTN_OK);
    cr_assert_eq(linattn_session_new(m, &b), LINATTN_OK);
    cr_assert_eq(linattn_session_new(m, &c2), LINATTN_OK);
    cr_expect_eq(linattn_session_tokens_left(a), UINT64_MAX);
    static float step[V], all[V], batch[2][V];
    for (int i = 0; i < N; i++)
        cr_assert_eq(linattn_session_feed(a, &tokens[i], 1, step), LINATTN_OK, "%s",
                     linattn_last_error());
    cr_assert_eq(linattn_session_feed(b, tokens, N, all), LINATTN_OK, "%s", linattn_last_error());
    double worst = 0;
    for (int j = 0; j < V; j++) {
        cr_assert(isfinite(step[j]) && isfinite(all[j]));
        double d = fabs((double)step[j] - all[j]);
        worst = d > worst ? d : worst;
    }
    cr_expect_leq(worst, 1e-4, "prefill against steps: %g", worst);
    /* two streams stepped together = each alone */
    cr_assert_eq(linattn_session_feed(c2, tokens, N - 1, NULL), LINATTN_OK);
    linattn_session_reset(b);
    cr_assert_eq(linattn_session_feed(b, tokens, N - 1, NULL), LINATTN_OK);
    linattn_session *both[2] = {b, c2};
    int next[2] = {tokens[N - 1], tokens[N - 1]};
    float *outs[2] = {batch[0], batch[1]};
    cr_assert_eq(linattn_sessions_step(both, next, 2, outs), LINATTN_OK, "%s", linattn_last_error());
    for (int j = 0; j < V; j++) {
        cr_expect_leq(fabs((double)batch[0][j] - step[j]), 1e-4);
        cr_expect_eq(batch[0][j], batch[1][j]);
    }
    linattn_session_free(a);
    linattn_session_free(b);
    linattn_session_free(c2);
    linattn_model_free(m);
}

/* Loads config text naming file; expects status and a message holding part. */
static void expect_bad(const char *file, linattn_status status, const char *part)
{
    const char *path = tu_path("c.ini");
    char text[256];
    snprintf(text, sizeof text, "[model]\nweights = llama2c:%s\n", file);
    tu_write_text(path, text);
    linattn_config c;
    linattn_config_defaults(&c);
    linattn_status st = linattn_config_load(path, &c);
    const char *msg = linattn_last_error();
    cr_expect_eq(st, status, "%s: status %d: %s", file, st, msg);
    cr_expect(strstr(msg, part) && strstr(msg, "c.ini:2: [model] key 'weights'"),
              "%s: message '%s' lacks '%s'", file, msg, part);
}

Test(llama2c, bad_files)
{
    const char *good = write_checkpoint(softmax_model, 1, "v1.bin");
    size_t n;
    unsigned char *bytes = (unsigned char *)tu_read_file(good, &n);
    /* version 2 (int8) */
    int32_t two = 2;
    memcpy(bytes + 4, &two, 4);
    tu_write_file(tu_path("v2.bin"), bytes, n);
    expect_bad("v2.bin", LINATTN_ERR_FORMAT, "version 2 is not supported");
    memcpy(bytes + 4, &(int32_t){1}, 4);
    /* truncated, and one byte too many */
    tu_write_file(tu_path("short.bin"), bytes, n - 4);
    expect_bad("short.bin", LINATTN_ERR_FORMAT, "bytes, but a llama2.c version 1 checkpoint");
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, bytes, n);
    longer[n] = 0;
    tu_write_file(tu_path("long.bin"), longer, n + 1);
    expect_bad("long.bin", LINATTN_ERR_FORMAT, "bytes, but a llama2.c");
    free(longer);
    /* nonsense parameters */
    int32_t bad_heads = 3; /* 32 / 3 */
    memcpy(bytes + 8 + 12, &bad_heads, 4);
    tu_write_file(tu_path("heads.bin"), bytes, n);
    expect_bad("heads.bin", LINATTN_ERR_FORMAT, "n_heads 3");
    memcpy(bytes + 8 + 12, &(int32_t){H}, 4);
    memcpy(bytes + 8 + 16, &(int32_t){3}, 4); /* kv heads 3 of 4 */
    tu_write_file(tu_path("kv.bin"), bytes, n);
    expect_bad("kv.bin", LINATTN_ERR_FORMAT, "n_kv_heads 3 does not divide");
    memcpy(bytes + 8 + 16, &(int32_t){G}, 4);
    memcpy(bytes + 8, &(int32_t){-5}, 4); /* dim */
    tu_write_file(tu_path("dim.bin"), bytes, n);
    expect_bad("dim.bin", LINATTN_ERR_FORMAT, "dim = -5 is outside");
    memcpy(bytes + 8, &(int32_t){D}, 4);
    bytes[36] = 7; /* shared flag */
    tu_write_file(tu_path("flag.bin"), bytes, n);
    expect_bad("flag.bin", LINATTN_ERR_FORMAT, "shared_classifier flag is 7");
    free(bytes);
    /* a legacy header whose sizes would overflow */
    int32_t huge[7] = {16384, 262144, 1024, 1, 1, -65536, 1048576};
    tu_write_file(tu_path("huge.bin"), huge, sizeof huge);
    expect_bad("huge.bin", LINATTN_ERR_FORMAT, "bytes, but a llama2.c legacy checkpoint");
    /* not a regular file */
    expect_bad("", LINATTN_ERR_INVALID, "empty path");
    const char *path = tu_path("c.ini");
    tu_write_text(path, "[model]\nweights = llama2c:/dev/null\n");
    linattn_config c;
    linattn_config_defaults(&c);
    cr_expect_neq(linattn_config_load(path, &c), LINATTN_OK);
}

/* The program: info names the checkpoint's sizes, generate runs it (greedy,
 * so two runs print the same ids), a bad checkpoint is one line. */
Test(llama2c, command_line)
{
    write_checkpoint(softmax_model, 1, "v1.bin");
    const char *cfg = tu_path("m.ini");
    tu_write_text(cfg, "[model]\nweights = llama2c:v1.bin\nattention = softmax\n");
    tu_run_result r = tu_run("info", cfg, NULL);
    tu_assert_ok(&r);
    char want[64];
    snprintf(want, sizeof want, "parameters: %d", V * D + L * (2 * D + 2 * D * D + 2 * KVD * D +
                                                                3 * D * FF) + D + V * D);
    cr_expect(strstr(r.out, want), "info lacks '%s':\n%s", want, r.out);
    tu_run_free(&r);
    tu_run_result a = tu_run("generate", cfg, "-p", "In the", "-n", "20", "--temperature", "0",
                             "--print-ids", NULL);
    tu_run_result b = tu_run("generate", cfg, "-p", "In the", "-n", "20", "--temperature", "0",
                             "--print-ids", NULL);
    tu_assert_ok(&a);
    tu_assert_ok(&b);
    cr_expect_gt(a.out_len, 20u);
    cr_expect_eq(a.out_len, b.out_len);
    cr_expect_eq(memcmp(a.out, b.out, a.out_len), 0);
    tu_run_free(&a);
    tu_run_free(&b);
    tu_write_text(tu_path("v1.bin"), "ak42");
    r = tu_run("generate", cfg, "-p", "x", NULL);
    cr_expect_neq(r.status, 0);
    cr_expect_eq(tu_count_lines(r.err, r.err_len), 1, "one line: %s", r.err);
    cr_expect(strstr(r.err, "key 'weights'") && strstr(r.err, "v1.bin"), "%s", r.err);
    tu_run_free(&r);
}

/* The llama2.c readers at their limits. The checkpoint header is a fixed
 * 28 or 256 bytes: its every size at the largest allowed is read in O(1)
 * and the file size it needs computed without overflow. tokenizer.bin is
 * read in two passes: TOK_MAX_VOCAB + 1 empty tokens (134 MB) are counted
 * and refused before anything is allocated; the longest pieces (1 MiB,
 * MAX_TOKEN_LENGTH) load, each byte hashed and put in two tries once.
 * Measured here (release, Emerald Rapids VM): 0.06 s to refuse the count,
 * 0.91 s for 2 pieces of 1 MiB (random bytes: the tries' worst, about 140
 * bytes of memory a byte); asserted under 20 s (20x; pass 1 is linear, a
 * quadratic count would be 1e14 steps). The timed part skips under ASan. */
Test(llama2c, worst_headers_and_tokenizer_bin)
{
    unsigned char h[256] = {0x32, 0x34, 0x6b, 0x61, 1, 0, 0, 0}; /* "ak42", version 1 */
    const int32_t v[7] = {LINATTN_MAX_D_MODEL, LINATTN_MAX_D_FF, LINATTN_MAX_LAYERS,
                          LINATTN_MAX_D_MODEL / 2, LINATTN_MAX_D_MODEL / 2, LINATTN_MAX_VOCAB,
                          LINATTN_MAX_SEQ_LEN};
    for (int i = 0; i < 7; i++)
        for (int b = 0; b < 4; b++)
            h[8 + 4 * i + b] = (unsigned char)((uint32_t)v[i] >> (8 * b));
    h[36] = 0; /* an unshared classifier */
    uint64_t dm = LINATTN_MAX_D_MODEL, nl = LINATTN_MAX_LAYERS, nv = LINATTN_MAX_VOCAB;
    uint64_t ff = LINATTN_MAX_D_FF;
    uint64_t want = 256 + 4 * (2 * nv * dm + 2 * nl * dm + dm + nl * dm * 4 * dm + nl * dm * 3 * ff);
    linattn_llama2c_info info;
    cr_assert_eq(linattn_llama2c_parse(h, sizeof h, want, "max.bin", &info), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert_eq(info.file_bytes, want);
    cr_assert_eq(linattn_llama2c_parse(h, sizeof h, want - 4, "max.bin", &info),
                 LINATTN_ERR_FORMAT);
    if (TU_SANITIZED)
        cr_skip_test("a timing: the native run checks it");

    size_t n = (size_t)TOK_MAX_VOCAB + 1, size = 4 + 8 * n;
    unsigned char *buf = calloc(size, 1);
    cr_assert(buf);
    buf[0] = 1; /* max_token_length 1; every token a score 0 and a length 0 */
    linattn_tokenizer *t = (linattn_tokenizer *)1;
    double t0 = tu_cpu_seconds();
    cr_assert_eq(tok_load_llama2c("many.bin", buf, size, &t), LINATTN_ERR_FORMAT);
    double t_count = tu_cpu_seconds() - t0;
    cr_assert(strstr(linattn_last_error(), "many.bin: more than 16777216 tokens"), "%s",
              linattn_last_error());
    cr_assert_null(t);
    free(buf);

    enum { LONG = 1 << 20, N_LONG = 2 };
    size = 4 + (3 + 256 + 1 + N_LONG) * (size_t)8 + 3 + 256 * 6 + 1 + (size_t)N_LONG * LONG;
    buf = malloc(size);
    cr_assert(buf);
    size_t at = 4;
    for (int b = 0; b < 4; b++)
        buf[b] = (unsigned char)((uint32_t)LONG >> (8 * b));
    char p[8];
    for (int i = 0; i < 3 + 256 + 1 + N_LONG; i++) {
        size_t len = i < 3 ? 1 : i < 259 ? 6 : i == 259 ? 1 : LONG;
        memset(buf + at, 0, 4); /* score 0 */
        for (int b = 0; b < 4; b++)
            buf[at + 4 + b] = (unsigned char)(len >> (8 * b));
        at += 8;
        if (i < 3) {
            buf[at] = (unsigned char)("USE"[i]);
        } else if (i < 259) {
            snprintf(p, sizeof p, "<0x%02X>", i - 3);
            memcpy(buf + at, p, 6);
        } else if (i == 259) {
            buf[at] = ' ';
        } else {
            tu_rng_seed((uint32_t)i);
            for (size_t k = 0; k < LONG; k++)
                buf[at + k] = (unsigned char)tu_rng();
        }
        at += len;
    }
    cr_assert_eq(at, size);
    t0 = tu_cpu_seconds();
    cr_assert_eq(tok_load_llama2c("long.bin", buf, size, &t), LINATTN_OK, "%s",
                 linattn_last_error());
    double t_long = tu_cpu_seconds() - t0;
    cr_assert_eq(linattn_tokenizer_vocab(t), 3 + 256 + 1 + N_LONG);
    const char *out = NULL;
    size_t len = 0;
    cr_assert_eq(linattn_tokenizer_decode(t, 259, 261, &out, &len), LINATTN_OK);
    cr_assert(len == LONG && memcmp(out, buf + size - LONG, LONG) == 0);
    linattn_tokenizer_free(t);
    free(buf);
    fprintf(stderr, "tokenizer.bin: %.2f s to refuse %zu tokens, %.2f s for %d pieces of 1 MiB\n",
            t_count, n, t_long, N_LONG);
    cr_assert_lt(t_count + t_long, 20.0, "%.1f s + %.1f s", t_count, t_long);
}

/* A checkpoint given alone (-m FILE, or as the config argument): recognised
 * by its header, its shape read from it, softmax attention (what llama2.c
 * trains), the tokenizer.bin beside it when there is one; the same text as
 * the config that says all that. Damaged or foreign files: one line saying
 * what the file is not. */
Test(llama2c, model_given_alone)
{
    char bin[512], cfg[512]; /* tu_path's ring is reused below */
    snprintf(bin, sizeof bin, "%s", write_checkpoint(softmax_model, 1, "alone.bin"));
    snprintf(cfg, sizeof cfg, "%s", tu_path("alone.ini"));
    linattn_config c;
    cr_assert_eq(linattn_config_from_model(bin, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(c.attention, LINATTN_ATTN_SOFTMAX);
    cr_expect_eq(c.d_model, D);
    cr_expect_eq(c.vocab_size, V);
    cr_expect_eq(c.max_seq_len, SEQ);
    cr_expect_str_eq(c.tokenizer, "", "no tokenizer.bin beside it: bytes");
    char want[4200];
    snprintf(want, sizeof want, "llama2c:%s", bin);
    cr_expect_str_eq(c.weights, want);

    tu_write_text(cfg, "[model]\nweights = llama2c:alone.bin\nattention = softmax\n");
    tu_run_result a = tu_run("generate", "-m", bin, "-p", "In the", "-n", "12",
                             "--temperature", "0", "--print-ids", NULL);
    tu_run_result b = tu_run("generate", cfg, "-p", "In the", "-n", "12", "--temperature", "0",
                             "--print-ids", NULL);
    tu_assert_ok(&a);
    tu_assert_ok(&b);
    cr_expect(a.out_len > 12 && a.out_len == b.out_len && !memcmp(a.out, b.out, a.out_len),
              "-m FILE and its config differ:\n%s\n%s", a.out, b.out);
    tu_run_free(&a);
    tu_run_free(&b);
    tu_run_result i = tu_run("info", bin, NULL);
    tu_assert_ok(&i);
    cr_expect(strstr(i.out, "softmax"), "%s", i.out);
    tu_run_free(&i);

    /* --config FILE over the model: its runtime and [generate] keys, and
     * model keys on purpose; a shape key must agree; no weights */
    char over[512];
    snprintf(over, sizeof over, "%s", tu_path("over.ini"));
    tu_write_text(over, "[runtime]\nthreads = 1\n[generate]\nprompt = In the\n"
                        "max_new_tokens = 12\ntemperature = 0\n");
    tu_run_result o = tu_run("generate", "-m", bin, "--config", over, "--print-ids", NULL);
    tu_run_result ob = tu_run("generate", cfg, "-p", "In the", "-n", "12", "--temperature", "0",
                              "--print-ids", NULL);
    tu_assert_ok(&o);
    tu_assert_ok(&ob);
    cr_expect(o.out_len == ob.out_len && !memcmp(o.out, ob.out, o.out_len),
              "--config over -m differs:\n%s\n%s", o.out, ob.out);
    tu_run_free(&o);
    tu_run_free(&ob);
    const char *bad_over[] = {"[model]\nweights = llama2c:alone.bin\n", "[model]\nd_model = 999\n"};
    const char *bad_says[] = {"leave weights out", "999 here, but the llama2.c checkpoint"};
    for (int k = 0; k < 2; k++) {
        tu_write_text(over, bad_over[k]);
        tu_run_result r = tu_run("generate", "-m", bin, "--config", over, "-p", "x", NULL);
        cr_expect_neq(r.status, 0);
        cr_expect_eq(tu_count_lines(r.err, r.err_len), 1, "one line: %s", r.err);
        cr_expect(strstr(r.err, bad_says[k]) && strstr(r.err, "over.ini:"), "%s", r.err);
        tu_run_free(&r);
    }
    /* attention changed on purpose: the checkpoint run as linear attention */
    tu_write_text(over, "[model]\nattention = linear\n");
    linattn_config base, lin;
    cr_assert_eq(linattn_config_from_model(bin, &base), LINATTN_OK);
    cr_assert_eq(linattn_config_load_over(over, &base, &lin, NULL, 0), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_expect_eq(lin.attention, LINATTN_ATTN_LINEAR);
    cr_expect_eq(lin.d_model, D);
    tu_run_result oc = tu_run("generate", cfg, "--config", over, "-p", "x", NULL);
    cr_expect_neq(oc.status, 0);
    cr_expect(strstr(oc.err, "a config already"), "%s", oc.err);
    tu_run_free(&oc);
    /* a model path that does not exist is that, not "a config already" */
    const char *gone = tu_path("no-such-model.gguf");
    tu_run_result og = tu_run("generate", "-m", gone, "--config", over, "-p", "x", NULL);
    cr_expect_neq(og.status, 0);
    cr_expect_eq(tu_count_lines(og.err, og.err_len), 1, "one line: %s", og.err);
    cr_expect(strstr(og.err, "no-such-model.gguf: cannot open the model: No such file"), "%s",
              og.err);
    tu_run_free(&og);

    /* a tokenizer.bin beside the checkpoint is its tokenizer */
    const char *tok = tu_path("tokenizer.bin");
    tu_write_text(tok, "not read here");
    cr_assert_eq(linattn_config_from_model(bin, &c), LINATTN_OK, "%s", linattn_last_error());
    snprintf(want, sizeof want, "llama2c:%s", tok);
    cr_expect_str_eq(c.tokenizer, want);
    remove(tok);

    /* a damaged checkpoint is still one: its reader says what is wrong */
    static const unsigned char v1_magic[] = {0x32, 0x34, 0x6b, 0x61, 1, 0, 0, 0};
    tu_write_file(tu_path("short.bin"), v1_magic, sizeof v1_magic);
    tu_run_result d = tu_run("generate", "-m", tu_path("short.bin"), "-p", "x", NULL);
    cr_expect_neq(d.status, 0);
    cr_expect_eq(tu_count_lines(d.err, d.err_len), 1, "one line: %s", d.err);
    cr_expect(strstr(d.err, "short.bin") && strstr(d.err, "llama2.c"), "%s", d.err);
    tu_run_free(&d);

    /* neither a model nor a config, a truncated GGUF file, a safetensors file alone */
    static const unsigned char junk[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 3};
    tu_write_file(tu_path("junk.bin"), junk, sizeof junk);
    static const unsigned char gguf[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
    tu_write_file(tu_path("m.gguf"), gguf, sizeof gguf);
    static const unsigned char st[] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    tu_write_file(tu_path("w.safetensors"), st, sizeof st);
    const char *files[] = {"junk.bin", "m.gguf", "w.safetensors"};
    const char *says[] = {"not a model file or folder linattn reads",
                          "too short for a GGUF header",
                          "holds no model shape"};
    for (int k = 0; k < 3; k++) {
        tu_run_result r = tu_run("generate", "-m", tu_path(files[k]), "-p", "x", NULL);
        cr_expect_neq(r.status, 0, "%s", files[k]);
        cr_expect_eq(tu_count_lines(r.err, r.err_len), 1, "one line: %s", r.err);
        cr_expect(strstr(r.err, says[k]) && strstr(r.err, files[k]), "%s: %s", files[k], r.err);
        tu_run_free(&r);
    }
    cr_expect_eq(linattn_config_from_model(tu_path("junk.bin"), &c), LINATTN_ERR_INVALID);
    cr_expect_eq(linattn_config_from_model(tu_path("m.gguf"), &c), LINATTN_ERR_FORMAT);
    cr_expect_eq(linattn_config_from_model(cfg, &c), LINATTN_ERR_INVALID, "an INI is no model");
}

/* A header whose vocab_size is INT32_MIN (found by fuzz_gguf, through
 * -m's detection): not a checkpoint, and no overflow on the way (UBSan). */
Test(llama2c, looks_like_int32_min_vocab)
{
    int32_t h[7] = {64, 176, 2, 4, 4, INT32_MIN, 128};
    cr_expect_eq(linattn_llama2c_looks_like((const unsigned char *)h, sizeof h), 0);
    h[5] = -512;
    cr_expect_eq(linattn_llama2c_looks_like((const unsigned char *)h, sizeof h), 1);
}
