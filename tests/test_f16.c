/* test_f16.c: F16/BF16 weights used as stored: the same logits as converted to fp32, bytes held, weights_dtype, info. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../engine/model.h"
#include "testutil.h"

TestSuite(f16, .init = tu_make_dir, .fini = tu_remove_dir);

/* Width 48 and d_ff 96: rows that are not whole vectors of 16 (tails in
 * every ISA); 3 heads. */
#define D 48
#define DFF 96
#define LAYERS 2
#define VOCAB 256
#define PREFILL 70 /* past gemm_nt's 64-row limit: B packed (converted while packing) */
#define STEPS 5    /* then single tokens: gemv */

static linattn_config model_config(linattn_attention_kind kind, int tied)
{
    linattn_config c;
    linattn_config_defaults(&c);
    snprintf(c.weights, sizeof c.weights, "random:11");
    c.vocab_size = VOCAB;
    c.d_model = D;
    c.n_heads = 3;
    c.n_layers = LAYERS;
    c.d_ff = DFF;
    c.max_seq_len = 256;
    c.attention = kind;
    c.tie_embeddings = tied;
    return c;
}

/* Elements of the weight matrices (embedding, q/k/v/o, FFN, untied head)
 * and of the vectors (biases, layernorm weights and biases). */
static size_t matrix_elems(int tied)
{
    return (size_t)VOCAB * D * (tied ? 1 : 2) + (size_t)LAYERS * (4 * D * D + 2 * D * DFF);
}

static size_t vector_elems(void)
{
    return (size_t)LAYERS * (4 * D + 4 * D + DFF + D) + 2 * D;
}

/* The random model of c written as safetensors to tu_path(name), its
 * matrices as `matrices` and its vectors as `vectors`. odd: one more
 * space of header, so every tensor starts at an odd address in the map
 * (F16 data is then copied to aligned memory). Returns the data bytes. */
static size_t write_model(const linattn_config *c, const char *name, linattn_dtype matrices,
                          linattn_dtype vectors, int odd)
{
    void *bytes;
    size_t size;
    cr_assert_eq(linattn_model_random_safetensors(c, matrices, vectors, &bytes, &size),
                 LINATTN_OK, "%s", linattn_last_error());
    const unsigned char *b = bytes;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | b[i];
    size_t data = size - 8 - (size_t)hlen;
    if (!odd) {
        tu_write_file(tu_path(name), bytes, size);
    } else {
        unsigned char *o = malloc(size + 1);
        uint64_t h2 = hlen + 1;
        for (int i = 0; i < 8; i++)
            o[i] = (unsigned char)(h2 >> (8 * i));
        memcpy(o + 8, b + 8, (size_t)hlen);
        o[8 + hlen] = ' ';
        memcpy(o + 9 + hlen, b + 8 + hlen, data);
        tu_write_file(tu_path(name), o, size + 1);
        free(o);
    }
    free(bytes);
    return data;
}

static linattn_model *load_file(const linattn_config *c, const char *name,
                                linattn_weights_dtype keep)
{
    linattn_config f = *c;
    snprintf(f.weights, sizeof f.weights, "%s", tu_path(name));
    f.weights_dtype = keep;
    linattn_model *m = NULL;
    cr_assert_eq(linattn_model_from_config(&f, &m), LINATTN_OK, "%s", linattn_last_error());
    return m;
}

/* Logits of a fixed text: every row of a PREFILL-token prompt (one gemm
 * per projection), then STEPS single tokens (gemv). out[(PREFILL + STEPS) V]. */
static void run(const linattn_model *m, float *out)
{
    int tokens[PREFILL + STEPS];
    unsigned seed = 5;
    for (int i = 0; i < PREFILL + STEPS; i++) {
        seed = seed * 1103515245u + 12345u;
        tokens[i] = (int)((seed >> 16) % VOCAB);
    }
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    linattn_session_set_threads(s, 2);
    cr_assert_eq(linattn_session_feed_all(s, tokens, PREFILL, out), LINATTN_OK, "%s",
                 linattn_last_error());
    for (int i = 0; i < STEPS; i++)
        cr_assert_eq(linattn_session_feed(s, &tokens[PREFILL + i], 1,
                                          out + (size_t)(PREFILL + i) * VOCAB),
                     LINATTN_OK, "%s", linattn_last_error());
    linattn_session_free(s);
}

/* The file's matrices kept as stored against the same file converted to
 * fp32 at load, on every ISA this machine runs. Converting a half or a
 * bfloat16 to fp32 is exact, and each *_f16/_bf16 kernel runs its fp32
 * twin's arithmetic (the same body, the same FMAs in the same order; only
 * the loads convert), so the logits must be equal bit for bit: tolerance
 * 0. A kernel that dropped, doubled or misread an element would change
 * them far past any rounding. */
static void check_same_logits(linattn_attention_kind kind, int tied, linattn_dtype matrices,
                              linattn_dtype vectors, int odd, const char *dtypes)
{
    linattn_config c = model_config(kind, tied);
    size_t data = write_model(&c, "m.safetensors", matrices, vectors, odd);
    size_t n = (size_t)(PREFILL + STEPS) * VOCAB;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    int isas = 0;
    for (int isa = LINATTN_ISA_SCALAR; isa < LINATTN_ISA_COUNT; isa++) {
        if (linattn_set_isa((linattn_isa)isa) != LINATTN_OK)
            continue;
        isas++;
        linattn_model *stored = load_file(&c, "m.safetensors", LINATTN_WEIGHTS_STORED);
        linattn_model *f32 = load_file(&c, "m.safetensors", LINATTN_WEIGHTS_F32);
        /* bytes: as stored, as held (matrices at 2 bytes when kept), as fp32 */
        size_t vec_bytes = vector_elems() * (vectors == LINATTN_DTYPE_F32 ? 4 : 2);
        cr_assert_eq(linattn_model_weight_bytes_stored(stored), data);
        cr_assert_eq(data, matrix_elems(tied) * 2 + vec_bytes);
        cr_assert_eq(linattn_model_weight_bytes(stored),
                     matrix_elems(tied) * 2 + vector_elems() * 4);
        cr_assert_eq(linattn_model_weight_bytes(f32), linattn_model_params(f32) * 4);
        cr_assert_eq(linattn_model_params(f32), matrix_elems(tied) + vector_elems());
        cr_assert_str_eq(linattn_model_weight_dtypes(stored), dtypes);
        run(stored, a);
        run(f32, b);
        for (size_t i = 0; i < n; i++) {
            cr_assert(isfinite(a[i]), "%s: logit %zu is %g", linattn_isa_name((linattn_isa)isa),
                      i, (double)a[i]);
            cr_assert(a[i] == b[i], "%s %s: row %zu logit %zu: stored %.9g, f32 %.9g",
                      linattn_isa_name((linattn_isa)isa), dtypes, i / VOCAB, i % VOCAB,
                      (double)a[i], (double)b[i]);
        }
        linattn_model_free(stored);
        linattn_model_free(f32);
    }
    cr_assert_geq(isas, 1);
    free(a);
    free(b);
}

Test(f16, f16_file_same_logits_as_f32_linear)
{
    check_same_logits(LINATTN_ATTN_LINEAR, 0, LINATTN_DTYPE_F16, LINATTN_DTYPE_F16, 0, "F16");
}

Test(f16, f16_file_same_logits_as_f32_softmax_tied)
{
    check_same_logits(LINATTN_ATTN_SOFTMAX, 1, LINATTN_DTYPE_F16, LINATTN_DTYPE_F16, 0, "F16");
}

Test(f16, bf16_file_same_logits_as_f32)
{
    check_same_logits(LINATTN_ATTN_LINEAR, 0, LINATTN_DTYPE_BF16, LINATTN_DTYPE_BF16, 0, "BF16");
}

Test(f16, bf16_file_same_logits_as_f32_softmax_tied)
{
    check_same_logits(LINATTN_ATTN_SOFTMAX, 1, LINATTN_DTYPE_BF16, LINATTN_DTYPE_BF16, 0,
                      "BF16");
}

/* F16 matrices, fp32 vectors, and every tensor at an odd address. */
Test(f16, mixed_dtypes_unaligned_same_logits)
{
    check_same_logits(LINATTN_ATTN_LINEAR, 0, LINATTN_DTYPE_F16, LINATTN_DTYPE_F32, 1,
                      "F32+F16");
}

/* An fp32 file is used as it is, whatever weights_dtype says. */
Test(f16, f32_file_bytes)
{
    linattn_config c = model_config(LINATTN_ATTN_LINEAR, 0);
    size_t data = write_model(&c, "m.safetensors", LINATTN_DTYPE_F32, LINATTN_DTYPE_F32, 0);
    linattn_model *m = load_file(&c, "m.safetensors", LINATTN_WEIGHTS_STORED);
    cr_assert_eq(linattn_model_weight_bytes(m), data);
    cr_assert_eq(linattn_model_weight_bytes_stored(m), data);
    cr_assert_str_eq(linattn_model_weight_dtypes(m), "F32");
    linattn_model_free(m);
}

/* The random model written in F16 is that model rounded: its logits stay
 * close to the fp32 random model's (a sanity check of the writer; the
 * rounding, 2^-11 relative per weight, moves logits of order 1 by far less
 * than 0.05). */
Test(f16, written_model_is_the_random_model_rounded)
{
    linattn_config c = model_config(LINATTN_ATTN_LINEAR, 0);
    write_model(&c, "m.safetensors", LINATTN_DTYPE_F16, LINATTN_DTYPE_F16, 0);
    linattn_model *h = load_file(&c, "m.safetensors", LINATTN_WEIGHTS_STORED), *r = NULL;
    cr_assert_eq(linattn_model_from_config(&c, &r), LINATTN_OK);
    size_t n = (size_t)(PREFILL + STEPS) * VOCAB;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    run(h, a);
    run(r, b);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    cr_assert_gt(scale, 0.1, "logits too small to tell anything: %g", scale);
    cr_assert_lt(worst, 0.05, "F16 copy off by %g (logits up to %g)", worst, scale);
    cr_assert_gt(worst, 0.0, "the F16 copy should round some weight");
    free(a);
    free(b);
    linattn_model_free(h);
    linattn_model_free(r);
}

static linattn_status load_text(const char *text, linattn_config *c)
{
    tu_write_text(tu_path("cfg.ini"), text);
    return linattn_config_load(tu_path("cfg.ini"), c);
}

Test(f16, weights_dtype_key)
{
    linattn_config c;
    cr_assert_eq(load_text("[runtime]\nthreads = 1\n", &c), LINATTN_OK);
    cr_assert_eq(c.weights_dtype, LINATTN_WEIGHTS_STORED);
    cr_assert_eq(load_text("[runtime]\nweights_dtype = f32\n", &c), LINATTN_OK);
    cr_assert_eq(c.weights_dtype, LINATTN_WEIGHTS_F32);
    cr_assert_eq(load_text("[runtime]\nweights_dtype = Stored\n", &c), LINATTN_OK);
    cr_assert_eq(c.weights_dtype, LINATTN_WEIGHTS_STORED);
    cr_assert_neq(load_text("[runtime]\nweights_dtype = f16\n", &c), LINATTN_OK);
    cr_assert(strstr(linattn_last_error(), "cfg.ini:2: [runtime] key 'weights_dtype'"), "%s",
              linattn_last_error());
    /* a hand-built config with a value out of the enum */
    linattn_config_defaults(&c);
    c.weights_dtype = (linattn_weights_dtype)7;
    cr_assert_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "weights_dtype"), "%s", linattn_last_error());
}

/* `linattn info` names the file, its dtype and the bytes as stored and as used. */
Test(f16, info_shows_stored_and_used)
{
    linattn_config c = model_config(LINATTN_ATTN_LINEAR, 0);
    size_t data = write_model(&c, "m.safetensors", LINATTN_DTYPE_F16, LINATTN_DTYPE_F16, 0);
    static const char *const keeps[2] = {"stored", "f32"};
    for (int k = 0; k < 2; k++) {
        char ini[512], want[256];
        snprintf(ini, sizeof ini,
                 "[model]\nweights = m.safetensors\nd_model = %d\nn_heads = 3\nn_layers = %d\n"
                 "d_ff = %d\nattention = linear\nmax_seq_len = 256\n[runtime]\n"
                 "weights_dtype = %s\n", D, LAYERS, DFF, keeps[k]);
        tu_write_text(tu_path("cfg.ini"), ini);
        tu_run_result r = tu_run("info", tu_path("cfg.ini"), NULL);
        cr_assert_eq(r.status, 0, "%s", r.err);
        size_t used = k == 0 ? matrix_elems(0) * 2 + vector_elems() * 4
                             : (matrix_elems(0) + vector_elems()) * 4;
        snprintf(want, sizeof want, "m.safetensors, F16, %zu bytes as stored, %zu as used "
                 "(weights_dtype %s)\n", data, used, keeps[k]);
        cr_assert(strstr(r.out, want), "want '%s' in: %s", want, r.out);
        snprintf(want, sizeof want, "weight bytes: %zu\n", used);
        cr_assert(strstr(r.out, want), "want '%s' in: %s", want, r.out);
        tu_run_free(&r);
    }
}

/* ------------------------------------------------------------------------ */
/* int8 (Q8) weight matrices                                                 */
/* ------------------------------------------------------------------------ */

#include "../engine/weights.h"

/* Width 64, d_ff 160: every matrix a whole number of 32-column groups. */
static linattn_config q8_config(linattn_attention_kind kind, int tied)
{
    linattn_config c = model_config(kind, tied);
    c.d_model = 64;
    c.n_heads = 4;
    c.d_ff = 160;
    return c;
}

/* The Q8 file `name` with every int8 matrix replaced by its values w s in
 * fp32 (and its _scale tensors dropped), into tu_path(out). */
static void write_dequantized(const char *name, const char *out)
{
    linattn_weights *w = NULL;
    cr_assert_eq(linattn_weights_open(tu_path(name), &w), LINATTN_OK, "%s", linattn_last_error());
    int n = linattn_weights_count(w), k = 0;
    linattn_tensor_out *t = calloc((size_t)n, sizeof *t);
    float **own = calloc((size_t)n, sizeof *own);
    for (int i = 0; i < n; i++) {
        linattn_tensor_info info;
        linattn_weights_tensor(w, i, &info);
        size_t len = strlen(info.name);
        if (len > 6 && !strcmp(info.name + len - 6, "_scale"))
            continue;
        t[k].name = info.name;
        t[k].ndim = info.ndim;
        t[k].shape[0] = info.shape[0];
        t[k].shape[1] = info.ndim > 1 ? info.shape[1] : 0;
        t[k].dtype = LINATTN_DTYPE_F32;
        if (info.dtype == LINATTN_DTYPE_I8) {
            const void *q;
            linattn_dtype dt;
            const float *s;
            char sname[160];
            snprintf(sname, sizeof sname, "%s_scale", info.name);
            int64_t ss[2] = {info.shape[0], info.shape[1] / 32};
            cr_assert_eq(linattn_weights_get_stored(w, info.name, 2, info.shape, &q, &dt),
                         LINATTN_OK);
            cr_assert_eq(linattn_weights_get(w, sname, 2, ss, &s), LINATTN_OK);
            own[k] = malloc(info.n_elements * sizeof(float));
            for (size_t e = 0; e < info.n_elements; e++)
                own[k][e] = (float)((const int8_t *)q)[e] *
                            s[e / (size_t)info.shape[1] * (size_t)ss[1] + e % (size_t)info.shape[1] / 32];
            t[k].data = own[k];
        } else {
            cr_assert_eq(linattn_weights_get(w, info.name, info.ndim, info.shape, &t[k].data),
                         LINATTN_OK, "%s", linattn_last_error());
        }
        k++;
    }
    void *bytes;
    size_t size;
    cr_assert_eq(linattn_weights_write_mem(t, k, &bytes, &size), LINATTN_OK, "%s",
                 linattn_last_error());
    tu_write_file(tu_path(out), bytes, size);
    free(bytes);
    for (int i = 0; i < n; i++)
        free(own[i]);
    free(own);
    free(t);
    linattn_weights_close(w);
}

/* A Q8 file (every matrix int8 with a scale per 32 weights of a row: the
 * embedding, q/k/v/o, FFN, the head) against the same values in fp32, on
 * every ISA: int8 times its scale is exact in double, so the two differ
 * only in the order of the sums (gemv_q8 scales each group's sum; the
 * prefill dequantizes while packing, w s rounded once) and the logits agree
 * to fp32 rounding: 1e-5 relative. The bytes: one a weight and a 4-byte
 * scale per 32. */
static void check_q8(linattn_attention_kind kind, int tied)
{
    linattn_config c = q8_config(kind, tied);
    size_t data = write_model(&c, "q.safetensors", LINATTN_DTYPE_I8, LINATTN_DTYPE_F32, 0);
    write_dequantized("q.safetensors", "d.safetensors");
    const size_t D8 = 64, F8 = 160;
    size_t mat = (size_t)VOCAB * D8 * (tied ? 1 : 2) + (size_t)LAYERS * (4 * D8 * D8 + 2 * D8 * F8);
    size_t vec = (size_t)LAYERS * (4 * D8 + 4 * D8 + F8 + D8) + 2 * D8;
    cr_assert_eq(data, mat + mat / 32 * 4 + vec * 4);
    size_t n = (size_t)(PREFILL + STEPS) * VOCAB;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (int isa = LINATTN_ISA_SCALAR; isa < LINATTN_ISA_COUNT; isa++) {
        if (linattn_set_isa((linattn_isa)isa) != LINATTN_OK)
            continue;
        /* weights_dtype = f32 keeps int8 matrices as they are too */
        linattn_model *q = load_file(&c, "q.safetensors", (linattn_weights_dtype)(isa & 1));
        linattn_model *d = load_file(&c, "d.safetensors", LINATTN_WEIGHTS_STORED);
        cr_assert_eq(linattn_model_weight_bytes(q), data);
        cr_assert_str_eq(linattn_model_weight_dtypes(q), "F32+I8");
        run(q, a);
        run(d, b);
        double worst = 0, scale = 0;
        for (size_t i = 0; i < n; i++) {
            cr_assert(isfinite(a[i]));
            worst = fmax(worst, fabs((double)a[i] - b[i]));
            scale = fmax(scale, fabs((double)b[i]));
        }
        cr_assert_gt(scale, 0.1);
        cr_assert_leq(worst / scale, 1e-5, "%s: int8 vs its values in fp32: %g relative",
                      linattn_isa_name((linattn_isa)isa), worst / scale);
        linattn_model_free(q);
        linattn_model_free(d);
    }
    linattn_set_isa(LINATTN_ISA_AUTO);
    free(a);
    free(b);
}

Test(f16, q8_file_is_its_values_in_fp32_linear) { check_q8(LINATTN_ATTN_LINEAR, 0); }
Test(f16, q8_file_is_its_values_in_fp32_softmax_tied) { check_q8(LINATTN_ATTN_SOFTMAX, 1); }

/* A matrix without its scales, int8 columns not a multiple of 32, an int8
 * vector: each refused, naming the tensor. */
Test(f16, q8_bad_files)
{
    float q[64 * 64], s[64 * 2], v[64];
    for (int i = 0; i < 64 * 64; i++)
        q[i] = (float)(i % 255 - 127);
    for (int i = 0; i < 128; i++)
        s[i] = 0.01f;
    for (int i = 0; i < 64; i++)
        v[i] = 1.0f;
    linattn_tensor_out t[3] = {
        {"layers.0.attn.q.weight", 2, {64, 64}, q, LINATTN_DTYPE_I8},
        {"layers.0.attn.q.weight_scale", 2, {64, 2}, s, LINATTN_DTYPE_F32},
        {"layers.0.norm1.weight", 1, {64, 0}, v, LINATTN_DTYPE_I8},
    };
    const struct { int n; const char *want; } cases[] = {
        {1, "'layers.0.attn.q.weight_scale': missing"},
        {3, "'layers.0.norm1.weight': int8 values only make a weight matrix"},
    };
    for (size_t i = 0; i < 2; i++) {
        void *bytes;
        size_t size;
        cr_assert_eq(linattn_weights_write_mem(t, cases[i].n, &bytes, &size), LINATTN_OK);
        linattn_weights *w = NULL;
        cr_assert_eq(linattn_weights_open_mem(bytes, size, "bad.safetensors", &w), LINATTN_OK);
        const void *data;
        const float *f;
        linattn_dtype dt;
        int64_t shape[2] = {64, 64};
        if (i == 0) {
            cr_assert_eq(linattn_weights_get_stored(w, t[0].name, 2, shape, &data, &dt), LINATTN_OK);
            cr_assert_eq(dt, LINATTN_DTYPE_I8);
            int64_t ss[2] = {64, 2};
            cr_assert_eq(linattn_weights_get(w, t[1].name, 2, ss, &f), LINATTN_ERR_FORMAT);
        } else {
            int64_t vs[1] = {64};
            cr_assert_eq(linattn_weights_get(w, t[2].name, 1, vs, &f), LINATTN_ERR_FORMAT);
        }
        cr_assert(strstr(linattn_last_error(), cases[i].want), "%s", linattn_last_error());
        linattn_weights_close(w);
        free(bytes);
    }
}

/* A whole model whose int8 matrix has columns that are not a multiple of
 * 32 (ffn.down [64, 48] with d_ff = 48; the random Q8 writer keeps such a
 * matrix in fp32, so it is rewritten as int8 with a scale column): the load
 * is refused naming the file, the tensor and the rule. */
Test(f16, q8_columns_not_a_multiple_of_32)
{
    linattn_config c = q8_config(LINATTN_ATTN_LINEAR, 0);
    c.d_ff = 48;
    write_model(&c, "q48.safetensors", LINATTN_DTYPE_I8, LINATTN_DTYPE_F32, 0);
    linattn_weights *w = NULL;
    cr_assert_eq(linattn_weights_open(tu_path("q48.safetensors"), &w), LINATTN_OK);
    int n = linattn_weights_count(w), k = 0, rewritten = 0;
    linattn_tensor_out *t = calloc((size_t)n + 1, sizeof *t);
    float **own = calloc((size_t)n, sizeof *own);
    float scales[64]; /* one per row: 48 columns make no whole group */
    for (int i = 0; i < 64; i++)
        scales[i] = 0.01f;
    for (int i = 0; i < n; i++) {
        linattn_tensor_info info;
        linattn_weights_tensor(w, i, &info);
        const void *data;
        linattn_dtype dt;
        cr_assert_eq(linattn_weights_get_stored(w, info.name, info.ndim, info.shape, &data, &dt),
                     LINATTN_OK, "%s", linattn_last_error());
        t[k] = (linattn_tensor_out){info.name, info.ndim, {info.shape[0], info.ndim > 1 ? info.shape[1] : 0}, NULL, dt};
        own[i] = malloc(info.n_elements * sizeof(float));
        for (size_t e = 0; e < info.n_elements; e++)
            own[i][e] = dt == LINATTN_DTYPE_I8 ? (float)((const int8_t *)data)[e] : ((const float *)data)[e];
        t[k].data = own[i];
        if (!strcmp(info.name, "layers.0.ffn.down.weight")) {
            cr_assert_eq(dt, LINATTN_DTYPE_F32);
            cr_assert_eq(info.shape[1], 48);
            for (size_t e = 0; e < info.n_elements; e++)
                own[i][e] = (float)(int)(own[i][e] * 100.0f);
            t[k].dtype = LINATTN_DTYPE_I8;
            t[++k] = (linattn_tensor_out){"layers.0.ffn.down.weight_scale", 2, {64, 1}, scales, LINATTN_DTYPE_F32};
            rewritten = 1;
        }
        k++;
    }
    cr_assert(rewritten);
    void *bytes;
    size_t size;
    cr_assert_eq(linattn_weights_write_mem(t, k, &bytes, &size), LINATTN_OK, "%s", linattn_last_error());
    tu_write_file(tu_path("q48b.safetensors"), bytes, size);
    free(bytes);
    linattn_weights_close(w);
    for (int i = 0; i < n; i++)
        free(own[i]);
    free(own);
    free(t);

    linattn_config f = c;
    snprintf(f.weights, sizeof f.weights, "%s", tu_path("q48b.safetensors"));
    linattn_model *m = NULL;
    cr_assert_eq(linattn_model_from_config(&f, &m), LINATTN_ERR_FORMAT);
    cr_assert_null(m);
    const char *e = linattn_last_error();
    cr_assert(strstr(e, "q48b.safetensors") && strstr(e, "'layers.0.ffn.down.weight'") &&
                  strstr(e, "int8 with 48 columns (a multiple of 32 needed"),
              "%s", e);
}
