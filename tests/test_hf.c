/* test_hf.c: Hugging Face Llama folders (weights = hf:DIR): the same logits as the weights under
 * this project's names, one file or shards, the tokenizer beside them, and every refusal. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "linattn.h"
#include "../engine/mem.h"
#include "../simd/f16.h"
#include "testutil.h"

TestSuite(hf, .init = tu_make_dir, .fini = tu_remove_dir);

/* A small Llama: d_model 32, 4 heads of 8, 2 k/v heads, 2 layers, d_ff 64,
 * vocab 64, rope theta 500 (not the default, so reading it matters). */
#define D 32
#define H 4
#define G 2
#define L 2
#define FF 64
#define V 64
#define KVD (D / H * G)
#define MAX_TENSORS (3 + 9 * L)

typedef struct entry {
    char ours[64], hf[96];
    int rows, cols; /* cols 0: a vector */
    float *data;
} entry;

typedef struct model {
    int n;
    entry e[MAX_TENSORS];
} model;

static void add(model *m, const char *ours, const char *hf, int rows, int cols, float scale,
                float offset)
{
    entry *e = &m->e[m->n++];
    snprintf(e->ours, sizeof e->ours, "%s", ours);
    snprintf(e->hf, sizeof e->hf, "%s", hf);
    e->rows = rows;
    e->cols = cols;
    size_t n = (size_t)rows * (size_t)(cols ? cols : 1);
    e->data = malloc(n * sizeof *e->data);
    for (size_t i = 0; i < n; i++)
        e->data[i] = offset + scale * ((float)tu_rng() / 8388608.0f - 1.0f);
}

/* Random weights (matrices uniform with variance 1/fan_in, norm weights
 * near 1), each under both names. tied: no lm_head. */
static void make_model(model *m, int tied)
{
    memset(m, 0, sizeof *m);
    tu_rng_seed(13);
    char ours[64], hf[96];
    float w = 1.7320508f / 5.656854f; /* sqrt(3 / 32) */
    add(m, "tok_emb.weight", "model.embed_tokens.weight", V, D, 1.0f, 0.0f);
    static const struct { const char *ours, *hf; int rows, cols; } layer[] = {
        {"attn.q.weight", "self_attn.q_proj.weight", D, D},
        {"attn.k.weight", "self_attn.k_proj.weight", KVD, D},
        {"attn.v.weight", "self_attn.v_proj.weight", KVD, D},
        {"attn.o.weight", "self_attn.o_proj.weight", D, D},
        {"ffn.gate.weight", "mlp.gate_proj.weight", FF, D},
        {"ffn.up.weight", "mlp.up_proj.weight", FF, D},
        {"ffn.down.weight", "mlp.down_proj.weight", D, FF},
        {"norm1.weight", "input_layernorm.weight", D, 0},
        {"norm2.weight", "post_attention_layernorm.weight", D, 0},
    };
    for (int l = 0; l < L; l++)
        for (size_t j = 0; j < sizeof layer / sizeof layer[0]; j++) {
            snprintf(ours, sizeof ours, "layers.%d.%s", l, layer[j].ours);
            snprintf(hf, sizeof hf, "model.layers.%d.%s", l, layer[j].hf);
            int down = layer[j].cols == FF;
            add(m, ours, hf, layer[j].rows, layer[j].cols,
                layer[j].cols ? (down ? w / 1.4142136f : w) : 0.1f, layer[j].cols ? 0.0f : 1.0f);
        }
    add(m, "norm_f.weight", "model.norm.weight", D, 0, 0.1f, 1.0f);
    if (!tied)
        add(m, "lm_head.weight", "lm_head.weight", V, D, w, 0.0f);
}

static void free_model(model *m)
{
    for (int i = 0; i < m->n; i++)
        free(m->e[i].data);
}

/* A safetensors file of entries e[0..n) (F32), under their Hugging Face
 * names (hf) or ours, and `extra` more tensors named by extra_names (a
 * D-vector of zeros each; NULL-terminated). */
/* 1: write_safetensors stores the matrices as F16 (vectors stay F32). */
static int matrices_f16;

static void write_safetensors(const char *path, const entry *e, int n, int hf,
                              const char *const *extra_names)
{
    static const float zeros[D];
    size_t cap = 65536, len = 0;
    char *head = malloc(cap);
    len += (size_t)snprintf(head + len, cap - len, "{\"__metadata__\": {\"format\": \"pt\"}");
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        int half = matrices_f16 && e[i].cols;
        size_t bytes = (size_t)e[i].rows * (size_t)(e[i].cols ? e[i].cols : 1) * (half ? 2 : 4);
        if (e[i].cols)
            len += (size_t)snprintf(head + len, cap - len,
                                    ", \"%s\": {\"dtype\": \"%s\", \"shape\": [%d, %d], "
                                    "\"data_offsets\": [%zu, %zu]}",
                                    hf ? e[i].hf : e[i].ours, half ? "F16" : "F32", e[i].rows,
                                    e[i].cols, at, at + bytes);
        else
            len += (size_t)snprintf(head + len, cap - len,
                                    ", \"%s\": {\"dtype\": \"F32\", \"shape\": [%d], "
                                    "\"data_offsets\": [%zu, %zu]}",
                                    hf ? e[i].hf : e[i].ours, e[i].rows, at, at + bytes);
        at += bytes;
    }
    for (int i = 0; extra_names && extra_names[i]; i++) {
        len += (size_t)snprintf(head + len, cap - len,
                                ", \"%s\": {\"dtype\": \"F32\", \"shape\": [%d], "
                                "\"data_offsets\": [%zu, %zu]}",
                                extra_names[i], D, at, at + sizeof zeros);
        at += sizeof zeros;
    }
    len += (size_t)snprintf(head + len, cap - len, "}");
    while (len % 8)
        head[len++] = ' ';
    cr_assert_lt(len, cap);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    uint64_t n8 = len;
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(n8 >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(head, 1, len, f);
    for (int i = 0; i < n; i++) {
        size_t ne = (size_t)e[i].rows * (size_t)(e[i].cols ? e[i].cols : 1);
        if (matrices_f16 && e[i].cols)
            for (size_t j = 0; j < ne; j++) {
                uint16_t h = linattn_f32_to_f16(e[i].data[j]);
                fwrite(&h, 2, 1, f);
            }
        else
            fwrite(e[i].data, 4, ne, f);
    }
    for (int i = 0; extra_names && extra_names[i]; i++)
        fwrite(zeros, 1, sizeof zeros, f);
    cr_assert_eq(fclose(f), 0);
    free(head);
}

/* config.json of the model: model_type, then the other keys as
 * transformers writes them (tie as given), then `extra` (", ..." or ""). */
static void write_config_json(const char *model_type, int tied, const char *extra)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"%s\",\n"
             "  \"hidden_size\": %d,\n  \"num_hidden_layers\": %d,\n"
             "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n"
             "  \"intermediate_size\": %d,\n  \"vocab_size\": %d,\n"
             "  \"max_position_embeddings\": 128,\n  \"rms_norm_eps\": 1e-05,\n"
             "  \"rope_theta\": 500.0,\n  \"hidden_act\": \"silu\",\n"
             "  \"tie_word_embeddings\": %s,\n  \"attention_bias\": false,\n"
             "  \"mlp_bias\": false,\n  \"torch_dtype\": \"float32\",\n"
             "  \"bos_token_id\": 1,\n  \"eos_token_id\": 2%s\n}\n",
             model_type, D, L, H, G, FF, V, tied ? "true" : "false", extra);
    tu_write_text(tu_path("config.json"), json);
}

/* The model as a Hugging Face folder (the test's folder): one file, or two
 * shards (the first half of the tensors, then the rest) and their index. */
static void write_hf(const model *m, int shards, const char *const *extra_names)
{
    write_config_json("llama", strcmp(m->e[m->n - 1].ours, "lm_head.weight") != 0, "");
    if (shards == 1) {
        write_safetensors(tu_path("model.safetensors"), m->e, m->n, 1, extra_names);
        return;
    }
    int half = m->n / 2;
    static const char *const f1 = "model-00001-of-00002.safetensors",
                             *const f2 = "model-00002-of-00002.safetensors";
    write_safetensors(tu_path(f1), m->e, half, 1, NULL);
    write_safetensors(tu_path(f2), m->e + half, m->n - half, 1, extra_names);
    char *idx = malloc(65536);
    size_t len = (size_t)snprintf(idx, 65536, "{\"metadata\": {\"total_size\": 0},\n"
                                               " \"weight_map\": {");
    for (int i = 0; i < m->n; i++)
        len += (size_t)snprintf(idx + len, 65536 - len, "%s\n  \"%s\": \"%s\"", i ? "," : "",
                                m->e[i].hf, i < half ? f1 : f2);
    for (int i = 0; extra_names && extra_names[i]; i++)
        len += (size_t)snprintf(idx + len, 65536 - len, ",\n  \"%s\": \"%s\"", extra_names[i], f2);
    snprintf(idx + len, 65536 - len, "}}\n");
    tu_write_text(tu_path("model.safetensors.index.json"), idx);
    free(idx);
}

/* The same weights under this project's names, with a config giving the
 * shape and architecture by hand. */
static const char *write_ours_pairing(const model *m, const char *attention, const char *pairing)
{
    write_safetensors(tu_path("ours.safetensors"), m->e, m->n, 0, NULL);
    int tied = strcmp(m->e[m->n - 1].ours, "lm_head.weight") != 0;
    char ini[1024];
    snprintf(ini, sizeof ini,
             "[model]\nweights = ours.safetensors\nattention = %s\nvocab_size = %d\n"
             "d_model = %d\nn_heads = %d\nn_kv_heads = %d\nn_layers = %d\nd_ff = %d\n"
             "max_seq_len = 128\nnorm = rmsnorm\nnorm_eps = 1e-5\npositions = rope\n"
             "rope_pairing = %s\nrope_theta = 500\nffn = swiglu\nbias = false\n"
             "tie_embeddings = %s\n",
             attention, V, D, H, G, L, FF, pairing, tied ? "true" : "false");
    const char *path = tu_path("ours.ini");
    tu_write_text(path, ini);
    return path;
}

static const char *write_ours(const model *m, const char *attention)
{
    return write_ours_pairing(m, attention, "half");
}

static const char *write_ini(const char *name, const char *text)
{
    const char *path = tu_path(name);
    tu_write_text(path, text);
    return path;
}

static linattn_model *load_ok(const char *ini)
{
    linattn_model *m;
    cr_assert_eq(linattn_model_load(ini, &m), LINATTN_OK, "%s", linattn_last_error());
    return m;
}

static const char hf_ini_softmax[] = "[model]\nweights = hf:.\nattention = softmax\n";

static const int tokens[] = {3, 17, 42, 5, 63, 0, 9, 31, 17, 17, 50};
#define NT ((int)(sizeof tokens / sizeof tokens[0]))

/* Both models' logits, every step and the whole prompt at once, equal bit
 * for bit: the same floats go through the same arithmetic. */
static void expect_same_logits(linattn_model *a, linattn_model *b)
{
    cr_assert_eq(linattn_model_shape_hash(a), linattn_model_shape_hash(b));
    cr_assert_eq(linattn_model_params(a), linattn_model_params(b));
    linattn_session *sa, *sb;
    cr_assert_eq(linattn_session_new(a, &sa), LINATTN_OK);
    cr_assert_eq(linattn_session_new(b, &sb), LINATTN_OK);
    linattn_session_set_threads(sa, 2);
    linattn_session_set_threads(sb, 2);
    float la[V], lb[V];
    for (int t = 0; t < NT; t++) {
        cr_assert_eq(linattn_session_feed(sa, &tokens[t], 1, la), LINATTN_OK, "%s",
                     linattn_last_error());
        cr_assert_eq(linattn_session_feed(sb, &tokens[t], 1, lb), LINATTN_OK, "%s",
                     linattn_last_error());
        cr_assert_eq(memcmp(la, lb, sizeof la), 0, "step %d differs", t);
        int finite = 1;
        for (int i = 0; i < V; i++)
            finite &= la[i] == la[i] && la[i] - la[i] == 0.0f;
        cr_assert(finite, "step %d: logits not finite", t);
    }
    linattn_session_reset(sa);
    linattn_session_reset(sb);
    cr_assert_eq(linattn_session_feed(sa, tokens, NT, la), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(linattn_session_feed(sb, tokens, NT, lb), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(memcmp(la, lb, sizeof la), 0, "prefill differs");
    linattn_session_free(sa);
    linattn_session_free(sb);
}

static void same_as_ours(int tied, int shards, const char *attention,
                         const char *const *extra_names)
{
    model m;
    make_model(&m, tied);
    write_hf(&m, shards, extra_names);
    const char *ours = write_ours(&m, attention);
    char text[256];
    snprintf(text, sizeof text, "[model]\nweights = hf:.\nattention = %s\n", attention);
    const char *hf = write_ini("hf.ini", text);
    linattn_model *a = load_ok(hf), *b = load_ok(ours);
    expect_same_logits(a, b);
    linattn_model_free(a);
    linattn_model_free(b);
    free_model(&m);
}

Test(hf, one_file_softmax_same_logits_as_our_names)
{
    same_as_ours(0, 1, "softmax", NULL);
}

Test(hf, one_file_linear_tied_same_logits_as_our_names)
{
    same_as_ours(1, 1, "linear", NULL);
}

Test(hf, shards_with_index_same_logits)
{
    same_as_ours(0, 2, "softmax", NULL);
}

/* F16 matrices in two shards, used as stored (each tensor read from its
 * own shard's map), against the same folder expanded to fp32 at load: the
 * half to float conversion is exact and the kernels do the same FMAs in the
 * same order, so the logits agree bit for bit; half the matrix bytes. */
Test(hf, f16_shards_used_as_stored)
{
    model m;
    make_model(&m, 0);
    matrices_f16 = 1;
    write_hf(&m, 2, NULL);
    matrices_f16 = 0;
    const char *stored = write_ini("stored.ini", "[model]\nweights = hf:.\nattention = softmax\n");
    const char *f32 = write_ini("f32.ini", "[model]\nweights = hf:.\nattention = softmax\n"
                                           "[runtime]\nweights_dtype = f32\n");
    linattn_model *a = load_ok(stored), *b = load_ok(f32);
    cr_assert(strstr(linattn_model_weight_dtypes(a), "F16"), "%s", linattn_model_weight_dtypes(a));
    cr_assert_lt(linattn_model_weight_bytes(a), linattn_model_weight_bytes(b) * 6 / 10);
    expect_same_logits(a, b);
    linattn_model_free(a);
    linattn_model_free(b);
    free_model(&m);
}

/* transformers before 4.38 saved each layer's rotary inv_freq buffer */
Test(hf, rotary_buffers_are_left_out)
{
    static const char *const bufs[] = {"model.layers.0.self_attn.rotary_emb.inv_freq",
                                       "model.layers.1.self_attn.rotary_emb.inv_freq", NULL};
    same_as_ours(0, 2, "linear", bufs);
}

/* Meta's checkpoints turn pairs (2i, 2i+1) of a head (rope_pairing =
 * interleaved); transformers' convert_llama_weights_to_hf.py permutes the
 * rows of q_proj and k_proj so that pair i is (i, i + head_size/2), which
 * its rotate_half turns. The permuted weights read with the half pairing
 * must give the logits of the original ones with the interleaved pairing. */
static void permute_rows(float *w, int heads, int cols)
{
    const int dh = D / H;
    float *tmp = malloc((size_t)dh * (size_t)cols * sizeof *tmp);
    for (int h = 0; h < heads; h++) {
        float *head = w + (size_t)h * dh * cols;
        /* w.view(heads, dh/2, 2, cols).transpose(1, 2): row 2j+t goes to t*dh/2 + j */
        for (int j = 0; j < dh / 2; j++)
            for (int t = 0; t < 2; t++)
                memcpy(tmp + (size_t)(t * dh / 2 + j) * cols, head + (size_t)(2 * j + t) * cols,
                       (size_t)cols * sizeof *tmp);
        memcpy(head, tmp, (size_t)dh * cols * sizeof *tmp);
    }
    free(tmp);
}

Test(hf, meta_weights_as_transformers_converts_them)
{
    model m;
    make_model(&m, 0);
    const char *ours = write_ours_pairing(&m, "softmax", "interleaved");
    for (int i = 0; i < m.n; i++) {
        if (strstr(m.e[i].hf, "q_proj"))
            permute_rows(m.e[i].data, H, D);
        else if (strstr(m.e[i].hf, "k_proj"))
            permute_rows(m.e[i].data, G, D);
    }
    write_hf(&m, 1, NULL);
    linattn_model *a = load_ok(write_ini("hf.ini", hf_ini_softmax)), *b = load_ok(ours);
    linattn_session *sa, *sb;
    cr_assert_eq(linattn_session_new(a, &sa), LINATTN_OK);
    cr_assert_eq(linattn_session_new(b, &sb), LINATTN_OK);
    float la[V], lb[V];
    double worst = 0, largest = 0;
    for (int t = 0; t < NT; t++) {
        cr_assert_eq(linattn_session_feed(sa, &tokens[t], 1, la), LINATTN_OK);
        cr_assert_eq(linattn_session_feed(sb, &tokens[t], 1, lb), LINATTN_OK);
        for (int i = 0; i < V; i++) {
            double d = fabs((double)la[i] - lb[i]);
            worst = d > worst || d != d ? d : worst;
            largest = fabs(lb[i]) > largest ? fabs(lb[i]) : largest;
        }
    }
    /* The same products summed in another order (a head's q.k over its 8
     * dimensions, dims permuted): fp32 rounding, about 1e-7 relative per
     * sum, through 2 layers; logits here are at most a few units. */
    cr_expect_gt(largest, 0.5, "logits too small to tell: %g", largest);
    cr_expect_leq(worst, 1e-5, "max abs difference %g", worst);
    linattn_session_free(sa);
    linattn_session_free(sb);
    linattn_model_free(a);
    linattn_model_free(b);
    free_model(&m);
}

/* A config that repeats what config.json says, agreeing, is accepted;
 * max_seq_len is the config's own (a KV-cache length). */
Test(hf, the_shape_comes_from_config_json)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    linattn_config c;
    linattn_config_defaults(&c);
    const char *ini = write_ini("hf.ini", "[model]\nweights = hf:.\nattention = softmax\n");
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(c.d_model, D);
    cr_expect_eq(c.n_heads, H);
    cr_expect_eq(c.n_kv_heads, G);
    cr_expect_eq(c.n_layers, L);
    cr_expect_eq(c.d_ff, FF);
    cr_expect_eq(c.vocab_size, V);
    cr_expect_eq(c.max_seq_len, 128);
    cr_expect_eq(c.norm_eps, 1e-5f);
    cr_expect_eq(c.rope_theta, 500.0f);
    cr_expect_eq(c.tie_embeddings, 0);
    cr_expect_eq(c.norm, LINATTN_NORM_RMSNORM);
    cr_expect_eq(c.norm_position, LINATTN_NORM_PRE);
    cr_expect_eq(c.ffn, LINATTN_FFN_SWIGLU);
    cr_expect_eq(c.positions, LINATTN_POS_ROPE);
    cr_expect_eq(c.rope_pairing, LINATTN_ROPE_HALF);
    cr_expect_eq(c.bias, 0);
    cr_expect(strncmp(c.weights, "hf:/", 4) == 0, "resolved to an absolute path: %s", c.weights);
    cr_expect_str_eq(c.tokenizer, "", "no tokenizer.json: no tokenizer set");

    ini = write_ini("agree.ini", "[model]\nweights = hf:.\nattention = linear\nd_model = 32\n"
                                 "n_heads = 4\nn_kv_heads = 2\nvocab_size = 64\n"
                                 "tie_embeddings = false\nnorm = rmsnorm\nrope_pairing = half\n"
                                 "rope_theta = 500\nnorm_eps = 1e-5\nbias = false\n"
                                 "max_seq_len = 4096\n");
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(c.max_seq_len, 4096);
    linattn_model_sizes sz;
    cr_assert_eq(linattn_config_sizes(&c, &sz), LINATTN_OK, "%s", linattn_last_error());
    uint64_t want = (uint64_t)V * D * 2 + L * (2 * D + 2 * D * D + 2 * KVD * D + 3 * D * FF) + D;
    cr_expect_eq(sz.params, want);
    free_model(&m);
}

/* A config built by hand: its zero shape fields come from config.json, a
 * field given must agree, the architecture is set to llama's. */
Test(hf, a_config_built_by_hand)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    const char *ours = write_ours(&m, "softmax");
    linattn_config h;
    linattn_config_defaults(&h);
    snprintf(h.weights, sizeof h.weights, "hf:%s", tu_dir());
    h.vocab_size = 0;
    h.max_seq_len = 0;
    h.attention = LINATTN_ATTN_SOFTMAX;
    cr_assert_eq(linattn_config_validate(&h), LINATTN_OK, "%s", linattn_last_error());
    linattn_model *a, *b = load_ok(ours);
    cr_assert_eq(linattn_model_from_config(&h, &a), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(linattn_model_config(a)->rope_pairing, LINATTN_ROPE_HALF);
    cr_expect_eq(linattn_model_config(a)->max_seq_len, 128);
    expect_same_logits(a, b);
    linattn_model_free(a);
    linattn_model_free(b);
    h.d_model = 64;
    cr_expect_eq(linattn_model_from_config(&h, &a), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'd_model': 64 here") &&
                  strstr(linattn_last_error(), "hidden_size = 32"),
              "%s", linattn_last_error());
    free_model(&m);
}

/* transformers 5 writes rope_theta into rope_parameters: it wins */
Test(hf, rope_parameters_of_transformers_5)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    write_config_json("llama", 0, ",\n  \"rope_parameters\": {\"rope_type\": \"default\", "
                                  "\"rope_theta\": 250.0}");
    linattn_config c;
    linattn_config_defaults(&c);
    cr_assert_eq(linattn_config_load(write_ini("hf.ini", hf_ini_softmax), &c), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_expect_eq(c.rope_theta, 250.0f);
    free_model(&m);
}

/* mistral is llama's architecture when it has no sliding window */
Test(hf, mistral_without_sliding_window)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    write_config_json("mistral", 0, ",\n  \"sliding_window\": null");
    const char *ours = write_ours(&m, "softmax");
    const char *hf = write_ini("hf.ini", "[model]\nweights = hf:.\nattention = softmax\n");
    linattn_model *a = load_ok(hf), *b = load_ok(ours);
    expect_same_logits(a, b);
    linattn_model_free(a);
    linattn_model_free(b);
    free_model(&m);
}

/* mistral's sliding_window loads as that window: the same logits as our
 * file of the same weights with window = 3, and other logits than without
 * it (the control: 11 tokens pass a window of 3) */
static void fails(const char *ini_text, linattn_status status, ...);

Test(hf, mistral_sliding_window_is_the_window)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    write_config_json("mistral", 0, ",\n  \"sliding_window\": 3");
    const char *ours = write_ours(&m, "softmax\nwindow = 3");
    const char *hf = write_ini("hf.ini", "[model]\nweights = hf:.\nattention = softmax\n");
    linattn_model *a = load_ok(hf), *b = load_ok(ours);
    cr_expect_eq(linattn_model_config(a)->window, 3);
    expect_same_logits(a, b);
    linattn_model *c = load_ok(write_ours(&m, "softmax"));
    linattn_session *sb, *sc;
    cr_assert_eq(linattn_session_new(b, &sb), LINATTN_OK);
    cr_assert_eq(linattn_session_new(c, &sc), LINATTN_OK);
    float lb[V], lc[V];
    cr_assert_eq(linattn_session_feed(sb, tokens, NT, lb), LINATTN_OK);
    cr_assert_eq(linattn_session_feed(sc, tokens, NT, lc), LINATTN_OK);
    cr_expect_neq(memcmp(lb, lc, sizeof lb), 0, "the window changed nothing");
    linattn_session_free(sb);
    linattn_session_free(sc);
    linattn_model_free(a);
    linattn_model_free(b);
    linattn_model_free(c);
    /* with linear attention the message names config.json's key, not an
     * INI key 'window' the config does not have */
    fails("[model]\nweights = hf:.\nattention = linear\n", LINATTN_ERR_INVALID,
          "bad.ini:2: [model] key 'weights'", "config.json has \"sliding_window\": 3",
          "needs attention = softmax or hybrid", NULL);
    cr_expect_null(strstr(linattn_last_error(), "key 'window'"), "%s", linattn_last_error());
    free_model(&m);
}

/* ---- the tokenizer ------------------------------------------------------- */

/* A sentencepiece BPE tokenizer of 13 tokens (fewer than the model's 64). */
static void write_tokenizer_json(void)
{
    tu_write_text(tu_path("tokenizer.json"),
                  "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
                  " {\"id\": 1, \"content\": \"<s>\", \"special\": true},"
                  " {\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
                  " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Metaspace\","
                  " \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\": \"first\","
                  " \"split\": false},"
                  " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true,"
                  " \"byte_fallback\": true, \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2,"
                  " \"<0x41>\": 3, \"<0xC3>\": 4, \"<0xBC>\": 5, \"\xe2\x96\x81\": 6, \"a\": 7,"
                  " \"b\": 8, \"\xe2\x96\x81" "a\": 9, \"ab\": 10, \"\xe2\x96\x81" "ab\": 11,"
                  " \"<0x0A>\": 12},"
                  " \"merges\": [\"\xe2\x96\x81 a\", \"a b\", \"\xe2\x96\x81" "a b\"]}}");
}

Test(hf, the_folders_tokenizer_by_default)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    const char *ini = write_ini("hf.ini", "[model]\nweights = hf:.\nattention = softmax\n");
    linattn_model *a = load_ok(ini);
    cr_expect_str_eq(linattn_tokenizer_name(linattn_model_tokenizer(a)), "bytes",
                     "no tokenizer.json: bytes");
    linattn_model_free(a);

    write_tokenizer_json();
    linattn_config c;
    linattn_config_defaults(&c);
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_str_eq(c.tokenizer, c.weights, "hf:DIR for both");
    a = load_ok(ini);
    const linattn_tokenizer *t = linattn_model_tokenizer(a);
    cr_expect_str_eq(linattn_tokenizer_name(t), "hf sentencepiece BPE");
    cr_expect_eq(linattn_tokenizer_vocab(t), 13);
    cr_expect_eq(linattn_tokenizer_bos(t), 1, "bos_token_id of config.json");
    cr_expect_eq(linattn_tokenizer_eos(t), 2, "eos_token_id of config.json");
    linattn_model_free(a);

    /* a tokenizer the config names wins */
    ini = write_ini("bytes.ini",
                    "[model]\nweights = hf:.\nattention = softmax\ntokenizer = bytes\n");
    a = load_ok(ini);
    cr_expect_str_eq(linattn_tokenizer_name(linattn_model_tokenizer(a)), "bytes");
    linattn_model_free(a);
    free_model(&m);
}

/* The linattn program on a folder: info names its tokenizer, generate
 * runs, a refused folder is one line. */
Test(hf, the_program_on_a_folder)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 2, NULL);
    write_tokenizer_json();
    const char *ini = write_ini("hf.ini", "[model]\nweights = hf:.\nattention = softmax\n");
    tu_run_result r = tu_run("info", ini, NULL);
    tu_assert_ok(&r);
    cr_expect(strstr(r.out, "hf sentencepiece BPE"), "%s", r.out);
    tu_run_free(&r);
    r = tu_run("generate", ini, "-p", "ab", "-n", "4", "--print-ids", "--ignore-eos", NULL);
    tu_assert_ok(&r);
    int ids = 0;
    for (const char *s = r.out; *s; s++)
        ids += *s == ' ' || *s == '\n';
    cr_expect_eq(ids, 4, "four ids: '%s'", r.out);
    tu_run_free(&r);
    write_config_json("llama", 0, ",\n  \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}");
    r = tu_run("generate", ini, "-p", "ab", NULL);
    cr_expect_eq(r.status, 1);
    cr_expect_eq(tu_count_lines(r.err, r.err_len), 1, "%s", r.err);
    cr_expect(strstr(r.err, "rope_scaling"), "%s", r.err);
    tu_run_free(&r);
    free_model(&m);
}

/* The folder given alone (-m DIR, or one of its files): its config.json's
 * shape, softmax attention (the checkpoint's own), the folder's
 * tokenizer.json: the same ids as the config that says so. */
Test(hf, the_folder_given_alone)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    write_tokenizer_json();
    char dir[512], ini[512];
    snprintf(dir, sizeof dir, "%s", tu_path(""));
    dir[strlen(dir) - 1] = '\0'; /* no trailing slash */
    snprintf(ini, sizeof ini, "%s", write_ini("hf.ini", hf_ini_softmax));
    const char *given[] = {"", "/model.safetensors", "/config.json"};
    for (int k = 0; k < 3; k++) {
        char path[600];
        snprintf(path, sizeof path, "%s%s", dir, given[k]);
        linattn_config c;
        cr_assert_eq(linattn_config_from_model(path, &c), LINATTN_OK, "%s: %s", path,
                     linattn_last_error());
        char want[700];
        snprintf(want, sizeof want, "hf:%s", dir);
        cr_expect_str_eq(c.weights, want, "%s", path);
        cr_expect_str_eq(c.tokenizer, want, "the folder's tokenizer.json");
        cr_expect_eq(c.attention, LINATTN_ATTN_SOFTMAX);
        tu_run_result a = tu_run("generate", "-m", path, "-p", "ab", "-n", "6", "--temperature",
                                 "0", "--print-ids", "--ignore-eos", NULL);
        tu_run_result b = tu_run("generate", ini, "-p", "ab", "-n", "6", "--temperature", "0",
                                 "--print-ids", "--ignore-eos", NULL);
        tu_assert_ok(&a);
        tu_assert_ok(&b);
        cr_expect(a.out_len > 6 && a.out_len == b.out_len && !memcmp(a.out, b.out, a.out_len),
                  "-m %s and its config differ:\n%s\n%s", path, a.out, b.out);
        tu_run_free(&a);
        tu_run_free(&b);
    }
    /* a folder without config.json is no model */
    char empty[600];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    cr_assert_eq(mkdir(empty, 0700), 0);
    linattn_config c;
    cr_expect_eq(linattn_config_from_model(empty, &c), LINATTN_ERR_INVALID);
    free_model(&m);
}

/* ---- refusals ------------------------------------------------------------ */

/* Loading the config (and model) `ini` fails with status and a message
 * holding each of the strings (NULL-terminated). */
static void fails(const char *ini_text, linattn_status status, ...)
{
    const char *ini = write_ini("bad.ini", ini_text);
    linattn_model *m = NULL;
    linattn_status st = linattn_model_load(ini, &m);
    cr_assert_eq(st, status, "status %d, want %d: %s", (int)st, (int)status,
                 linattn_last_error());
    cr_assert_null(m);
    va_list ap;
    va_start(ap, status);
    for (const char *s; (s = va_arg(ap, const char *));)
        cr_expect(strstr(linattn_last_error(), s), "'%s' not in: %s", s, linattn_last_error());
    va_end(ap);
}

static const char hf_ini[] = "[model]\nweights = hf:.\nattention = softmax\n";

Test(hf, config_json_missing_or_malformed)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    unlink(tu_path("config.json"));
    fails(hf_ini, LINATTN_ERR_IO, "bad.ini:2: [model] key 'weights'", "config.json", NULL);
    fails("[model]\nweights = hf:model.safetensors\n", LINATTN_ERR_IO,
          "model.safetensors: not a folder", NULL);
    tu_write_text(tu_path("config.json"), "{\"model_type\": \"llama\", \"hidden_size\": 32,");
    fails(hf_ini, LINATTN_ERR_FORMAT, "config.json: not valid JSON", NULL);
    tu_write_text(tu_path("config.json"), "[1, 2]");
    fails(hf_ini, LINATTN_ERR_FORMAT, "config.json: not a JSON object", NULL);
    tu_write_text(tu_path("config.json"), "{\"model_type\": \"llama\", \"hidden_size\": 32}");
    fails(hf_ini, LINATTN_ERR_FORMAT, "config.json: no \"num_hidden_layers\"", NULL);
    tu_write_text(tu_path("config.json"),
                  "{\"model_type\": \"llama\", \"hidden_size\": 32.5, \"num_hidden_layers\": 2}");
    fails(hf_ini, LINATTN_ERR_FORMAT, "\"hidden_size\" is not an integer", NULL);
    free_model(&m);
}

Test(hf, what_config_json_may_not_say)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    static const struct { const char *type, *extra, *why; } cases[] = {
        {"qwen2", "", "model_type 'qwen2' is not supported"},
        {"llama", ",\n  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}",
         "\"rope_scaling\" is set"},
        {"mistral", ",\n  \"sliding_window\": 0", "\"sliding_window\" is not an integer in 1.."},
        {"llama", ",\n  \"head_dim\": 16", "\"head_dim\" is 16, but hidden_size 32 / "
                                          "num_attention_heads 4 is 8"},
        {"llama", ",\n  \"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0}",
         "\"rope_parameters\" is not"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_config_json(cases[i].type, 0, cases[i].extra);
        fails(hf_ini, LINATTN_ERR_FORMAT, "key 'weights'", cases[i].why, NULL);
    }
    /* keys the base text has, replaced */
    static const struct { const char *from, *to, *why; } edits[] = {
        {"\"attention_bias\": false", "\"attention_bias\": true", "\"attention_bias\" is true"},
        {"\"mlp_bias\": false", "\"mlp_bias\": true", "\"mlp_bias\" is true"},
        {"\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "only silu"},
        {"\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3", "does not divide"},
        {"\"hidden_size\": 32", "\"hidden_size\": 36", "even head size"},
        {"\"model_type\": \"llama\",", "", "no \"model_type\""},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        write_config_json("llama", 0, "");
        size_t n;
        char *text = tu_read_file(tu_path("config.json"), &n);
        char *at = strstr(text, edits[i].from);
        cr_assert(at, "%s", edits[i].from);
        char out[4096];
        snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, edits[i].to,
                 at + strlen(edits[i].from));
        tu_write_text(tu_path("config.json"), out);
        free(text);
        fails(hf_ini, LINATTN_ERR_FORMAT, "config.json", edits[i].why, NULL);
    }
    free_model(&m);
}

/* config.json with `from` (text of the base file) replaced by `to`. */
static void edit_config_json(const char *from, const char *to)
{
    write_config_json("llama", 0, "");
    size_t n;
    char *text = tu_read_file(tu_path("config.json"), &n);
    char *at = strstr(text, from);
    cr_assert(at, "%s", from);
    char out[4096];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    tu_write_text(tu_path("config.json"), out);
    free(text);
}

/* A number a float cannot hold is refused, naming config.json, its key and
 * why; it used to be rounded (1e-300 to 0, then blamed on an INI key
 * 'rope_theta' the file never had; 1e-40 kept as a subnormal). */
Test(hf, numbers_a_float_cannot_hold)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    static const struct { const char *from, *to, *why; } cases[] = {
        {"\"rope_theta\": 500.0", "\"rope_theta\": 1e-300",
         "config.json: \"rope_theta\" is 1e-300, too small for a float"},
        {"\"rope_theta\": 500.0", "\"rope_theta\": 1e-40",
         "config.json: \"rope_theta\" is 1e-40, too small for a float"},
        {"\"rope_theta\": 500.0", "\"rope_theta\": 1e39",
         "config.json: \"rope_theta\" is 1e+39, too large for a float"},
        {"\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 1e-50",
         "config.json: \"rms_norm_eps\" is 1e-50, too small for a float"},
        {"\"rope_theta\": 500.0",
         "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1e-300}",
         "config.json: \"rope_parameters.rope_theta\" is 1e-300, too small for a float"},
        {"\"rope_theta\": 500.0", "\"rope_theta\": 1e999", "does not fit a double"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        edit_config_json(cases[i].from, cases[i].to);
        fails(hf_ini, LINATTN_ERR_FORMAT, "bad.ini:2: [model] key 'weights'", cases[i].why, NULL);
        cr_expect_null(strstr(linattn_last_error(), "key 'rope_theta'"), "%s",
                       linattn_last_error());
    }
    /* zero is a float: rms_norm_eps may be 0 */
    edit_config_json("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 0");
    linattn_model_free(load_ok(write_ini("ok.ini", hf_ini)));
    free_model(&m);
}

/* Every JSON file of a folder goes through one strict reader: bytes after
 * the value, a key given twice (Python keeps the last, cJSON the first) and
 * nesting past the limit are refused, naming the file and the key. */
Test(hf, every_json_file_is_read_strictly)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    write_config_json("llama", 0, "");
    size_t n;
    char *base = tu_read_file(tu_path("config.json"), &n);
    char buf[8192];
    snprintf(buf, sizeof buf, "%s this is not JSON {{{", base);
    tu_write_text(tu_path("config.json"), buf);
    fails(hf_ini, LINATTN_ERR_FORMAT, "config.json: bytes after the JSON value", NULL);
    tu_write_file(tu_path("config.json"), base, n + 1); /* its NUL: not whitespace either */
    fails(hf_ini, LINATTN_ERR_FORMAT, "config.json: bytes after the JSON value", NULL);
    write_config_json("llama", 0,
                      ",\n  \"rope_scaling\": null,\n"
                      "  \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}");
    fails(hf_ini, LINATTN_ERR_FORMAT, "config.json: key \"rope_scaling\" appears twice", NULL);
    write_config_json("llama", 0, ",\n  \"quantization\": {\"bits\": 4, \"bits\": 8}");
    fails(hf_ini, LINATTN_ERR_FORMAT,
          "config.json: key \"bits\" appears twice in quantization", NULL);
    char *deep = malloc(8192);
    size_t at = (size_t)snprintf(deep, 8192, "%.*s, \"deep\": ", (int)(strrchr(base, '}') - base),
                                 base);
    for (int i = 0; i < 1100; i++)
        deep[at++] = '[';
    for (int i = 0; i < 1100; i++)
        deep[at++] = ']';
    snprintf(deep + at, 8192 - at, "}");
    tu_write_text(tu_path("config.json"), deep);
    fails(hf_ini, LINATTN_ERR_FORMAT, "config.json: nested deeper than 1000 levels", NULL);
    free(deep);
    free(base);

    /* the index */
    unlink(tu_path("model.safetensors")); /* else it is read, not the index */
    write_hf(&m, 2, NULL);
    char *idx = tu_read_file(tu_path("model.safetensors.index.json"), &n);
    snprintf(buf, sizeof buf, "%s garbage", idx);
    tu_write_text(tu_path("model.safetensors.index.json"), buf);
    fails(hf_ini, LINATTN_ERR_FORMAT,
          "model.safetensors.index.json: bytes after the JSON value", NULL);
    char *wm = strstr(idx, "\"weight_map\": {");
    cr_assert(wm);
    wm += strlen("\"weight_map\": {");
    snprintf(buf, sizeof buf, "%.*s\"lm_head.weight\": \"model-00001-of-00002.safetensors\",%s",
             (int)(wm - idx), idx, wm);
    tu_write_text(tu_path("model.safetensors.index.json"), buf);
    fails(hf_ini, LINATTN_ERR_FORMAT,
          "model.safetensors.index.json: key \"lm_head.weight\" appears twice in weight_map",
          NULL);
    free(idx);

    /* the tokenizer and its tokenizer_config.json */
    write_hf(&m, 2, NULL);
    write_tokenizer_json();
    char *tok = tu_read_file(tu_path("tokenizer.json"), &n);
    snprintf(buf, sizeof buf, "%s}}}garbage", tok);
    tu_write_text(tu_path("tokenizer.json"), buf);
    fails(hf_ini, LINATTN_ERR_FORMAT, "tokenizer.json: bytes after the JSON value", NULL);
    char *vocab = strstr(tok, "\"vocab\": {");
    cr_assert(vocab);
    vocab += strlen("\"vocab\": {");
    snprintf(buf, sizeof buf, "%.*s\"a\": 3, %s", (int)(vocab - tok), tok, vocab);
    tu_write_text(tu_path("tokenizer.json"), buf);
    fails(hf_ini, LINATTN_ERR_FORMAT, "tokenizer.json: key \"a\" appears twice in model.vocab",
          NULL);
    free(tok);
    write_tokenizer_json();
    tu_write_text(tu_path("tokenizer_config.json"),
                  "{\"bos_token\": \"<s>\", \"bos_token\": \"</s>\"}");
    fails(hf_ini, LINATTN_ERR_FORMAT,
          "tokenizer_config.json: key \"bos_token\" appears twice", NULL);
    free_model(&m);
}

/* tokenizer_config.json is optional, but one that is there and cannot be
 * read (a symlink loop, a dangling link) is an error naming it, not taken
 * for an absent file. */
Test(hf, an_unreadable_tokenizer_config_is_an_error)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    write_tokenizer_json();
    cr_assert_eq(symlink("tokenizer_config.json", tu_path("tokenizer_config.json")), 0);
    fails(hf_ini, LINATTN_ERR_IO, "tokenizer_config.json", "symbolic links", NULL);
    unlink(tu_path("tokenizer_config.json"));
    cr_assert_eq(symlink("nowhere.json", tu_path("tokenizer_config.json")), 0);
    fails(hf_ini, LINATTN_ERR_IO, "tokenizer_config.json", NULL);
    unlink(tu_path("tokenizer_config.json"));
    linattn_model_free(load_ok(write_ini("ok.ini", hf_ini))); /* absent: fine */
    free_model(&m);
}

/* An index naming many distinct shards is read in O(T log T): 200,000
 * names (6.5 MB; the 64 MiB limit allows about 2M) took over 300 s when
 * each was compared with every earlier one. A complexity guard, not a
 * benchmark: the read takes well under a second here, and 20 s is the
 * bound (a quadratic reader takes minutes). None of the shards is there,
 * so the load stops at the first one and says so. */
Test(hf, an_index_of_200000_shards_is_read_in_n_log_n)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    unlink(tu_path("model.safetensors"));
    enum { N = 200000 };
    size_t cap = (size_t)N * 40 + 64, len = 0;
    char *idx = malloc(cap);
    len += (size_t)snprintf(idx, cap, "{\"weight_map\": {");
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(idx + len, cap - len, "%s\"t%d\": \"f%d.safetensors\"",
                                i ? ", " : "", i, i);
    snprintf(idx + len, cap - len, "}}");
    tu_write_text(tu_path("model.safetensors.index.json"), idx);
    free(idx);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fails(hf_ini, LINATTN_ERR_IO, "f0.safetensors", "model.safetensors.index.json lists", NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_expect_lt(s, 20.0, "reading an index of %d shards took %.1f s", N, s);
    free_model(&m);
}

/* A key that repeats config.json's value differently: the message names
 * the key and both values. */
Test(hf, keys_that_disagree_with_config_json)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 1, NULL);
    static const struct { const char *line, *key, *values; } cases[] = {
        {"d_model = 64", "bad.ini:4: [model] key 'd_model'", "64 here, but"},
        {"n_heads = 8", "key 'n_heads'", "num_attention_heads = 4"},
        {"n_kv_heads = 4", "key 'n_kv_heads'", "num_key_value_heads = 2"},
        {"n_layers = 3", "key 'n_layers'", "num_hidden_layers = 2"},
        {"d_ff = 32", "key 'd_ff'", "intermediate_size = 64"},
        {"vocab_size = 256", "key 'vocab_size'", "vocab_size = 64"},
        {"tie_embeddings = true", "key 'tie_embeddings'", "tie_word_embeddings = false"},
        {"norm_eps = 1e-6", "key 'norm_eps'", "rms_norm_eps = 1e-05"},
        {"rope_theta = 10000", "key 'rope_theta'", "rope_theta = 500"},
        {"norm = layernorm", "key 'norm'", "layernorm here, but a Llama model"},
        {"ffn = gelu", "key 'ffn'", "has swiglu"},
        {"positions = sincos", "key 'positions'", "has rope"},
        {"rope_pairing = interleaved", "key 'rope_pairing'", "has half"},
        {"bias = true", "key 'bias'", "true here"},
        {"norm_position = post", "key 'norm_position'", "has pre"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "%s%s\n", hf_ini, cases[i].line);
        fails(text, LINATTN_ERR_INVALID, cases[i].key, cases[i].values, NULL);
    }
    fails("[model]\nweights = hf:.\nattention = softmax\nd_model = 64\n", LINATTN_ERR_INVALID,
          "key 'd_model': 64 here, but", "config.json has hidden_size = 32", NULL);
    fails("[model]\nweights = hf:\n", LINATTN_ERR_INVALID, "key 'weights'", "empty path", NULL);

    /* a max_position_embeddings past the library's limit needs max_seq_len */
    write_config_json("llama", 0, "");
    size_t n;
    char *text = tu_read_file(tu_path("config.json"), &n);
    char *at = strstr(text, "\"max_position_embeddings\": 128");
    cr_assert(at);
    char out[4096];
    snprintf(out, sizeof out, "%.*s\"max_position_embeddings\": 2000000%s", (int)(at - text), text,
             at + strlen("\"max_position_embeddings\": 128"));
    tu_write_text(tu_path("config.json"), out);
    free(text);
    fails(hf_ini, LINATTN_ERR_INVALID, "key 'max_seq_len': not given",
          "max_position_embeddings 2000000 is over 1048576", NULL);
    const char *ctx = write_ini("ctx.ini", "[model]\nweights = hf:.\nmax_seq_len = 512\n");
    linattn_model_free(load_ok(ctx));
    free_model(&m);
}

Test(hf, tensors_missing_unexpected_or_misplaced)
{
    model m;
    make_model(&m, 0);
    /* model.layers.1.mlp.up_proj.weight left out */
    write_config_json("llama", 0, "");
    entry keep[MAX_TENSORS];
    int n = 0;
    for (int i = 0; i < m.n; i++)
        if (strcmp(m.e[i].hf, "model.layers.1.mlp.up_proj.weight") != 0)
            keep[n++] = m.e[i];
    cr_assert_eq(n, m.n - 1);
    write_safetensors(tu_path("model.safetensors"), keep, n, 1, NULL);
    fails(hf_ini, LINATTN_ERR_FORMAT,
          "tensor 'model.layers.1.mlp.up_proj.weight' (layers.1.ffn.up.weight here): missing",
          NULL);

    /* a bias the model does not have */
    static const char *const bias[] = {"model.layers.0.self_attn.q_proj.bias", NULL};
    write_safetensors(tu_path("model.safetensors"), m.e, m.n, 1, bias);
    fails(hf_ini, LINATTN_ERR_FORMAT, "model.safetensors: unexpected tensor "
                                      "'model.layers.0.self_attn.q_proj.bias'", NULL);
    /* a tensor under this project's name is not taken for its own */
    entry renamed[MAX_TENSORS];
    memcpy(renamed, m.e, sizeof renamed);
    snprintf(renamed[0].hf, sizeof renamed[0].hf, "tok_emb.weight");
    write_safetensors(tu_path("model.safetensors"), renamed, m.n, 1, NULL);
    fails(hf_ini, LINATTN_ERR_FORMAT, "tensor 'model.embed_tokens.weight'", "missing", NULL);

    /* a wrong shape names the file's tensor */
    memcpy(renamed, m.e, sizeof renamed);
    renamed[1].rows = D / 2;
    renamed[1].cols = 2 * D;
    write_safetensors(tu_path("model.safetensors"), renamed, m.n, 1, NULL);
    fails(hf_ini, LINATTN_ERR_FORMAT,
          "tensor 'model.layers.0.self_attn.q_proj.weight': expected shape [32, 32], got [16, 64]",
          NULL);

    /* neither a file nor an index */
    unlink(tu_path("model.safetensors"));
    fails(hf_ini, LINATTN_ERR_IO, "neither model.safetensors nor model.safetensors.index.json",
          NULL);
    free_model(&m);
}

Test(hf, shards_absent_or_not_as_listed)
{
    model m;
    make_model(&m, 0);
    write_hf(&m, 2, NULL);
    /* a tensor the index places in the other shard */
    size_t len;
    char *idx = tu_read_file(tu_path("model.safetensors.index.json"), &len);
    char *at = strstr(idx, "\"model.embed_tokens.weight\": \"model-00001-of-00002");
    cr_assert(at);
    at[sizeof "\"model.embed_tokens.weight\": \"model-0000" - 1] = '2';
    tu_write_text(tu_path("model.safetensors.index.json"), idx);
    fails(hf_ini, LINATTN_ERR_FORMAT, "model.safetensors.index.json: tensor "
                                      "'model.embed_tokens.weight' is listed in "
                                      "model-00002-of-00002.safetensors, which does not have it",
          NULL);
    free(idx);

    /* a tensor in both shards */
    write_hf(&m, 2, NULL);
    write_safetensors(tu_path("model-00002-of-00002.safetensors"), m.e + m.n / 2 - 1,
                      m.n - m.n / 2 + 1, 1, NULL);
    char twice[160];
    snprintf(twice, sizeof twice, "tensor '%s' appears twice", m.e[m.n / 2 - 1].hf);
    fails(hf_ini, LINATTN_ERR_FORMAT, twice, NULL);

    write_hf(&m, 2, NULL);
    unlink(tu_path("model-00002-of-00002.safetensors"));
    fails(hf_ini, LINATTN_ERR_IO, "model-00002-of-00002.safetensors",
          "(a shard ", "model.safetensors.index.json lists)", NULL);

    tu_write_text(tu_path("model.safetensors.index.json"),
                  "{\"weight_map\": {\"lm_head.weight\": \"../model.safetensors\"}}");
    fails(hf_ini, LINATTN_ERR_FORMAT, "'../model.safetensors' is not a file name in the folder",
          NULL);
    tu_write_text(tu_path("model.safetensors.index.json"), "{\"weight_map\": {}}");
    fails(hf_ini, LINATTN_ERR_FORMAT, "weight_map lists no tensors", NULL);
    tu_write_text(tu_path("model.safetensors.index.json"), "{\"weight_map\": ");
    fails(hf_ini, LINATTN_ERR_FORMAT, "model.safetensors.index.json: not valid JSON",
          NULL);
    free_model(&m);
}

/* ---- allocations --------------------------------------------------------- */

static linattn_status op_model(void *ctx)
{
    linattn_model *m = NULL;
    linattn_status st = linattn_model_load(ctx, &m);
    linattn_model_free(m);
    return st;
}

/* Every allocation of loading a sharded folder with its tokenizer made to
 * fail in turn: an error with a message, and nothing leaked (as
 * test_alloc's sweep). */
Test(hf, every_allocation_failure_is_reported_and_leaks_nothing)
{
    model m;
    make_model(&m, 0);
    static const char *const bufs[] = {"model.layers.1.self_attn.rotary_emb.inv_freq", NULL};
    write_hf(&m, 2, bufs);
    write_tokenizer_json();
    void *ini = (void *)write_ini("hf.ini", hf_ini);
    long live0 = linattn_test_alloc_live(), made0 = linattn_test_alloc_count();
    cr_assert_eq(op_model(ini), LINATTN_OK, "%s", linattn_last_error());
    long n = linattn_test_alloc_count() - made0;
    cr_assert_gt(n, 0);
    cr_assert_eq(linattn_test_alloc_live(), live0, "leaks when it succeeds");
    for (long k = 0; k < n; k++) {
        linattn_test_fail_alloc(k);
        linattn_status st = op_model(ini);
        linattn_test_fail_alloc(-1);
        cr_expect_neq(st, LINATTN_OK, "allocation %ld of %ld failed, yet it succeeded", k + 1, n);
        cr_expect(linattn_last_error()[0], "allocation %ld: no message", k + 1);
        cr_expect_eq(linattn_test_alloc_live(), live0, "allocation %ld of %ld failed: %ld blocks "
                     "leaked", k + 1, n, linattn_test_alloc_live() - live0);
    }
    free_model(&m);
}

#ifdef LINATTN_TEST_NUMPY
/* tools/hf_import.py DIR OUT [args...]: its result (1 = success expected). */
static tu_run_result hf_import(const char *out, const char *extra)
{
    char tool[4200];
    snprintf(tool, sizeof tool, "%s/../../tools/hf_import.py", tu_data_dir());
    char *argv[] = {"/usr/bin/python3", tool, (char *)tu_dir(), (char *)out, (char *)extra, NULL};
    return tu_run_argv("/usr/bin/python3", argv);
}

/* tools/hf_import.py (numpy; what tools/linearize.py reads Hugging Face
 * folders with) writes the folder's model under our names and shape: the
 * engine runs it bit for bit as it runs the folder itself, F16 matrices
 * kept as stored or rounded with --dtype. */
Test(hf, hf_import_same_logits_as_the_folder)
{
    model m;
    make_model(&m, 0);
    matrices_f16 = 1;
    write_hf(&m, 2, NULL);
    matrices_f16 = 0;
    const char *hf = write_ini("hf.ini", hf_ini_softmax);
    char out[4200];
    snprintf(out, sizeof out, "%s", tu_path("imported.ini"));
    tu_run_result r = hf_import(out, NULL);
    tu_assert_ok(&r);
    tu_run_free(&r);
    size_t n;
    char *ini = tu_read_file(out, &n);
    const char *want[] = {"weights = imported.safetensors\n", "rope_pairing = half\n",
                          "rope_theta = 500.0\n", "norm_eps = 1e-05\n", "n_kv_heads = 2\n",
                          "ffn = swiglu\n", "attention = softmax\n", "max_seq_len = 128\n"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(ini, want[i]), "no '%s' in:\n%s", want[i], ini);
    free(ini);
    linattn_model *a = load_ok(hf), *b = load_ok(out);
    cr_expect_str_eq(linattn_model_weight_dtypes(b), linattn_model_weight_dtypes(a));
    expect_same_logits(a, b);
    linattn_model_free(b);
    /* --dtype f32: every tensor widened, exactly (a half is an fp32) */
    r = hf_import(out, "--dtype=f32");
    tu_assert_ok(&r);
    tu_run_free(&r);
    b = load_ok(out);
    cr_expect_str_eq(linattn_model_weight_dtypes(b), "F32");
    linattn_config c = *linattn_model_config(a);
    c.weights_dtype = LINATTN_WEIGHTS_F32; /* the folder's halfs widened at load */
    linattn_model *a32 = NULL;
    cr_assert_eq(linattn_model_from_config(&c, &a32), LINATTN_OK, "%s", linattn_last_error());
    expect_same_logits(a32, b);
    linattn_model_free(a32);
    linattn_model_free(a);
    linattn_model_free(b);

    /* what the engine refuses, the tool refuses, in one line naming the key */
    write_config_json("llama", 0, ",\n  \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}");
    r = hf_import(out, NULL);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "hf_import: ") == r.err && strstr(r.err, "rope_scaling"), "%s",
              r.err);
    cr_expect(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "one line: %s", r.err);
    tu_run_free(&r);
    free_model(&m);
}
#endif

/* The strict reader's duplicate-key check over a tokenizer.json whose
 * vocabulary has 1,000,000 keys (16 MB; tokenizer.json may be 256 MiB),
 * the only repeat the last: each object's keys are sorted once, O(n log n).
 * A complexity guard, not a benchmark: about a second here, 20 s the bound;
 * comparing pairs would be 5 * 10^11 compares. */
Test(hf, a_key_twice_in_a_vocabulary_of_a_million)
{
    enum { N = 1000000 };
    size_t cap = (size_t)N * 20 + 256, len = 0;
    char *json = malloc(cap);
    len += (size_t)snprintf(json, cap, "{\"model\": {\"type\": \"BPE\", \"vocab\": {");
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(json + len, cap - len, "\"k%d\": %d, ", i, i);
    snprintf(json + len, cap - len, "\"k%d\": 0}, \"merges\": []}}", N / 2);
    const char *path = tu_path("tokenizer.json");
    tu_write_text(path, json);
    free(json);
    char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", path);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    linattn_tokenizer *t = NULL;
    linattn_status st = linattn_tokenizer_load(spec, &t);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(st, LINATTN_ERR_FORMAT, "%s", linattn_last_error());
    cr_assert_null(t);
    char want[64];
    snprintf(want, sizeof want, "key \"k%d\" appears twice in model.vocab", N / 2);
    cr_expect(strstr(linattn_last_error(), "tokenizer.json: ") &&
                  strstr(linattn_last_error(), want), "%s", linattn_last_error());
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_expect_lt(s, 20.0, "a vocabulary of %d keys took %.1f s", N, s);
}
