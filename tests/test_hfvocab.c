/* test_hfvocab.c: Hugging Face tokenizers written into GGUF files by linattn_quantize: read back, the same ids and bytes as the tokenizer.json; what has no GGUF form refused by name. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../engine/gguf.h"
#include "../engine/weights.h"
#include "testutil.h"

TestSuite(hfvocab, .init = tu_make_dir, .fini = tu_remove_dir);

/* ---- the fixtures: the tokenizer.json files of the other suites -------------------- */

/* test_tokenizer.c's GPT-2 form: ByteLevel with its regex (llama.cpp's
 * "gpt-2"), 14 tokens, <|endoftext|> special. */
static void write_gpt2(void)
{
    tu_write_text(tu_path("tokenizer.json"),
                  "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 8, \"content\": "
                  "\"<|endoftext|>\", \"special\": true}], \"normalizer\": null,"
                  " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false,"
                  " \"trim_offsets\": true, \"use_regex\": true},"
                  " \"decoder\": {\"type\": \"ByteLevel\"},"
                  " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null,"
                  " \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"\xc4\xa0\": 3, \"ab\": 4,"
                  " \"\xc4\xa0" "a\": 5, \"\xc4\xa0" "ab\": 6, \"bc\": 7, \"<|endoftext|>\": 8,"
                  " \"\xc4\x8a\": 9, \"!\": 10, \"\xc3\x83\": 11, \"\xc2\xa9\": 12,"
                  " \"\xc3\x83\xc2\xa9\": 13},"
                  " \"merges\": [\"a b\", \"\xc4\xa0 a\", \"\xc4\xa0" "a b\", \"\xc3\x83 \xc2\xa9\"]}}");
    tu_write_text(tu_path("config.json"), "{\"bos_token_id\": 8, \"eos_token_id\": 8}");
}

/* test_pretok.c's byte-level vocabulary (token b is byte b), with more
 * merges ("3 4", "Ġ b", "Ġ t", "h e", "Ġt he", "Ã ©", "1 2"), added
 * tokens <|begin|> (256 + 8, special) and <tab> (non-special), and pre
 * as the pre_tokenizer. */
static void write_bytes_json(const char *pre, int ignore_merges)
{
    static char json[32768];
    size_t m = (size_t)snprintf(json, sizeof json,
                                "{\"added_tokens\": [{\"id\": 264, \"content\": \"<|begin|>\","
                                " \"special\": true}, {\"id\": 265, \"content\": \"<tab>\","
                                " \"special\": false}],"
                                " \"model\": {\"type\": \"BPE\", \"ignore_merges\": %s,"
                                " \"vocab\": {", ignore_merges ? "true" : "false");
    m = tu_byte_vocab_json(json, m, sizeof json);
    snprintf(json + m, sizeof json - m,
             "\"34\": 256, \"\xc4\xa0" "b\": 257, \"\xc4\xa0t\": 258, \"he\": 259,"
             " \"\xc4\xa0the\": 260, \"\xc3\x83\xc2\xa9\": 261, \"12\": 262, \"<|begin|>\": 264},"
             " \"merges\": [\"3 4\", \"\xc4\xa0 b\", \"\xc4\xa0 t\", \"h e\", \"\xc4\xa0t he\","
             " \"\xc3\x83 \xc2\xa9\", \"1 2\"]}, \"pre_tokenizer\": %s}", pre);
    tu_write_text(tu_path("tokenizer.json"), json);
    tu_write_text(tu_path("tokenizer_config.json"),
                  "{\"bos_token\": \"<|begin|>\", \"add_bos_token\": true,"
                  " \"chat_template\": \"{% for m in messages %}<|begin|>{{ m['content'] }}"
                  "{% endfor %}\"}");
}

#define LLAMA3_HF                                                                            \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "   \
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+"
#define QWEN2_HF                                                                             \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| "       \
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+"
#define SPLIT_THEN_BYTES(pattern, behavior)                                                  \
    "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "       \
    "{\"Regex\": \"" pattern "\"}, \"behavior\": \"" behavior "\", \"invert\": false}, "     \
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "        \
    "\"use_regex\": false}]}"
#define BYTES_ONLY(regex)                                                                    \
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": " regex "}"

/* test_tokenizer.c's and test_hf.c's sentencepiece vocabulary (<unk> <s>
 * </s>, ▁ a b ▁a ab ▁ab) with bytes <0x41> <0xC3> <0xBC> <0x0A> only. */
static void write_sp(const char *normalizer, const char *pre_tokenizer)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
             " {\"id\": 1, \"content\": \"<s>\", \"special\": true},"
             " {\"id\": 2, \"content\": \"</s>\", \"special\": true}], \"normalizer\": %s,"
             " \"pre_tokenizer\": %s, \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\","
             " \"fuse_unk\": true, \"byte_fallback\": true, \"vocab\": {\"<unk>\": 0, \"<s>\": 1,"
             " \"</s>\": 2, \"<0x41>\": 3, \"<0xC3>\": 4, \"<0xBC>\": 5, \"\xe2\x96\x81\": 6,"
             " \"a\": 7, \"b\": 8, \"\xe2\x96\x81" "a\": 9, \"ab\": 10, \"\xe2\x96\x81" "ab\": 11,"
             " \"<0x0A>\": 12}, \"merges\": [\"\xe2\x96\x81 a\", \"a b\", \"\xe2\x96\x81" "a b\"]}}",
             normalizer, pre_tokenizer);
    tu_write_text(tu_path("tokenizer.json"), json);
}

#define LLAMA_NORMALIZER                                                                     \
    "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\":"        \
    " \"\xe2\x96\x81\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"},"           \
    " \"content\": \"\xe2\x96\x81\"}]}"

/* The same vocabulary with every byte's <0xXX> token (3..258), as Llama
 * 2's tokenizer.json has them, and more words: the legacy Llama form
 * (normalizer Prepend + Replace), merges every join of two tokens into a
 * token, by the joined token's rank, as Hugging Face's converter writes a
 * sentencepiece model's. */
static const char *const sp_merges[][2] = {
    {"\xe2\x96\x81", "a"}, {"a", "b"}, {"\xe2\x96\x81" "a", "b"}, {"h", "e"}, {"l", "l"},
    {"\xe2\x96\x81", "t"}, {"\xe2\x96\x81t", "he"}, {"he", "ll"}, {"hell", "o"},
    {"\xe2\x96\x81", "hello"}, {"\xc3\xa9", "t"}, {"1", "2"}, {"\xe2\x96\x81", "\xe2\x96\x81"},
};
static void write_sp_full(void)
{
    static char json[65536];
    size_t m = (size_t)snprintf(json, sizeof json,
                                "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", "
                                "\"special\": true}, {\"id\": 1, \"content\": \"<s>\", "
                                "\"special\": true}, {\"id\": 2, \"content\": \"</s>\", "
                                "\"special\": true}], \"normalizer\": " LLAMA_NORMALIZER ","
                                " \"pre_tokenizer\": null, \"decoder\": null,"
                                " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\","
                                " \"fuse_unk\": true, \"byte_fallback\": true, \"vocab\": "
                                "{\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2");
    for (int b = 0; b < 256; b++)
        m += (size_t)snprintf(json + m, sizeof json - m, ", \"<0x%02X>\": %d", b, 3 + b);
    static const char *const chars[] = {"\xe2\x96\x81", "a", "b", "h", "e", "l", "o", "t", "1",
                                        "2", "\xc3\xa9", ",", "!"};
    int id = 259;
    for (size_t i = 0; i < sizeof chars / sizeof chars[0]; i++)
        m += (size_t)snprintf(json + m, sizeof json - m, ", \"%s\": %d", chars[i], id++);
    for (size_t i = 0; i < sizeof sp_merges / sizeof sp_merges[0]; i++)
        m += (size_t)snprintf(json + m, sizeof json - m, ", \"%s%s\": %d", sp_merges[i][0],
                              sp_merges[i][1], id++);
    m += (size_t)snprintf(json + m, sizeof json - m, "}, \"merges\": [");
    for (size_t i = 0; i < sizeof sp_merges / sizeof sp_merges[0]; i++)
        m += (size_t)snprintf(json + m, sizeof json - m, "%s\"%s %s\"", i ? ", " : "",
                              sp_merges[i][0], sp_merges[i][1]);
    snprintf(json + m, sizeof json - m, "]}}");
    tu_write_text(tu_path("tokenizer.json"), json);
    tu_write_text(tu_path("config.json"), "{\"bos_token_id\": 1, \"eos_token_id\": 2}");
    tu_write_text(tu_path("tokenizer_config.json"), "{\"add_bos_token\": true}");
}

/* ---- the model and the check ------------------------------------------------------- */

#define V 320 /* the model's rows: more than any fixture's tokens */

/* A llama-shaped model of V rows (random weights) whose config (named
 * ini_name: the GGUF file's general.name) names the folder's
 * tokenizer.json; returns the config's path. */
static const char *write_model_as(const char *ini_name)
{
    static char ini[4200];
    const int d = 32, ff = 64;
    static const char *const names[] = {"tok_emb.weight", "layers.0.norm1.weight",
                                        "layers.0.attn.q.weight", "layers.0.attn.k.weight",
                                        "layers.0.attn.v.weight", "layers.0.attn.o.weight",
                                        "layers.0.norm2.weight", "layers.0.ffn.gate.weight",
                                        "layers.0.ffn.up.weight", "layers.0.ffn.down.weight",
                                        "norm_f.weight", "lm_head.weight"};
    const int64_t shapes[][2] = {{V, d}, {d, 0}, {d, d}, {d, d}, {d, d}, {d, d},
                                 {d, 0}, {ff, d}, {ff, d}, {d, ff}, {d, 0}, {V, d}};
    linattn_tensor_out t[12];
    float *data[12];
    tu_rng_seed(5);
    for (int i = 0; i < 12; i++) {
        size_t n = (size_t)shapes[i][0] * (size_t)(shapes[i][1] ? shapes[i][1] : 1);
        data[i] = malloc(n * sizeof *data[i]);
        for (size_t j = 0; j < n; j++)
            data[i][j] = shapes[i][1] ? (float)((double)tu_rng() / 4294967296.0 - 0.5) * 0.2f
                                      : 1.0f;
        t[i] = (linattn_tensor_out){names[i], shapes[i][1] ? 2 : 1,
                                    {shapes[i][0], shapes[i][1] ? shapes[i][1] : 0, 0}, data[i],
                                    LINATTN_DTYPE_F32};
    }
    void *bytes;
    size_t size;
    cr_assert_eq(linattn_weights_write_mem(t, 12, &bytes, &size), LINATTN_OK);
    tu_write_file(tu_path("m.safetensors"), bytes, size);
    free(bytes);
    for (int i = 0; i < 12; i++)
        free(data[i]);
    snprintf(ini, sizeof ini, "%s", tu_path(ini_name));
    char text[8400];
    snprintf(text, sizeof text,
             "[model]\nweights = m.safetensors\ntokenizer = hf:%s\nvocab_size = %d\n"
             "d_model = 32\nn_heads = 2\nn_layers = 1\nd_ff = 64\nattention = softmax\n"
             "norm = rmsnorm\nffn = swiglu\npositions = rope\nbias = false\nmax_seq_len = 64\n",
             tu_dir(), V);
    tu_write_text(ini, text);
    return ini;
}

static const char *write_model(void)
{
    return write_model_as("m.ini");
}

/* The folder's tokenizer quantized into out.gguf, the model named
 * ini_name; its path. */
static const char *quantize_as(const char *ini_name)
{
    linattn_config c;
    cr_assert_eq(linattn_config_load(write_model_as(ini_name), &c), LINATTN_OK, "%s",
                 linattn_last_error());
    static char out[4200];
    snprintf(out, sizeof out, "%s", tu_path("out.gguf"));
    int vocab = 0;
    cr_assert_eq(linattn_quantize(&c, out, "f32", &vocab), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert_eq(vocab, 1);
    return out;
}

static const char *quantize(void)
{
    return quantize_as("m.ini");
}

static linattn_status quantize_fails_as(const char *ini_name)
{
    linattn_config c;
    cr_assert_eq(linattn_config_load(write_model_as(ini_name), &c), LINATTN_OK, "%s",
                 linattn_last_error());
    return linattn_quantize(&c, tu_path("no.gguf"), "f32", NULL);
}

static linattn_status quantize_fails(void)
{
    return quantize_fails_as("m.ini");
}

/* Every text encodes to the same ids (with and without bos) from the
 * GGUF file as from the tokenizer.json, or fails in both, and the ids
 * decode to the same bytes; returns how many texts encoded. */
static int same_tokens(const char *out, const char *const *texts, size_t n_texts)
{
    char spec[4300];
    linattn_tokenizer *a, *b;
    snprintf(spec, sizeof spec, "hf:%s", tu_dir());
    cr_assert_eq(linattn_tokenizer_load(spec, &a), LINATTN_OK, "%s", linattn_last_error());
    snprintf(spec, sizeof spec, "gguf:%s", out);
    cr_assert_eq(linattn_tokenizer_load(spec, &b), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(linattn_tokenizer_vocab(b), V, "padded to the model's rows");
    cr_expect_eq(linattn_tokenizer_bos(a), linattn_tokenizer_bos(b));
    cr_expect_eq(linattn_tokenizer_eos(a), linattn_tokenizer_eos(b));
    cr_expect_eq(linattn_tokenizer_adds_bos(a), linattn_tokenizer_adds_bos(b));
    int encoded = 0;
    for (size_t i = 0; i < n_texts; i++)
        for (int bos = 0; bos < 2; bos++) {
            const char *text = texts[i];
            int x[256], y[256];
            size_t nx = 0, ny = 0;
            linattn_status sx = linattn_tokenizer_encode(a, text, strlen(text), bos, x, 256, &nx);
            linattn_status sy = linattn_tokenizer_encode(b, text, strlen(text), bos, y, 256, &ny);
            cr_expect_eq(sx, sy, "'%s': %s", text, linattn_last_error());
            if (sx != LINATTN_OK || sy != LINATTN_OK)
                continue;
            encoded++;
            cr_expect(nx == ny && !memcmp(x, y, nx * sizeof *x), "'%s' (bos %d): %zu and %zu ids",
                      text, bos, nx, ny);
            /* sentencepiece drops its first space after bos (llama2.c's
             * rule in linattn's GGUF reader): decode from bos */
            if (!bos && linattn_tokenizer_bos(a) >= 0 && !strcmp(linattn_tokenizer_name(b),
                                                                 "gguf llama (sentencepiece)"))
                continue;
            char dx[1024], dy[1024];
            size_t mx = tu_decode_all(a, x, nx, dx), my = tu_decode_all(b, y, ny, dy);
            cr_expect(mx == my && !memcmp(dx, dy, mx), "'%s' (bos %d): decoded '%.*s' and '%.*s'",
                      text, bos, (int)mx, dx, (int)my, dy);
        }
    linattn_tokenizer_free(a);
    linattn_tokenizer_free(b);
    return encoded;
}

static void expect_str(const linattn_gguf *g, const char *key, const char *want)
{
    const char *s;
    size_t n;
    cr_assert_eq(linattn_gguf_get_string(g, key, &s, &n), LINATTN_OK, "%s: %s", key,
                 linattn_last_error());
    cr_expect(n == strlen(want) && !memcmp(s, want, n), "%s: '%.*s', want '%s'", key, (int)n, s,
              want);
}

static int64_t type_of(const linattn_gguf *g, int id)
{
    linattn_gguf_array a;
    int64_t v = -1;
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.token_type", &a), LINATTN_OK);
    cr_assert_eq(linattn_gguf_array_int(&a, (uint64_t)id, &v), LINATTN_OK);
    return v;
}

static const char *const texts[] = {
    "the", " the", "  the", "hello, world!", "1234 12 3 34", "a\tb\nc\r\n", "\xc3\xa9t\xc3\xa9",
    "caf\xc3\xa9 \xe2\x82\xac 5\xc2\xbd \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80",
    "<|begin|>the<tab> b", "<|begin|> <|begin|>", "don't I'LL we've", "   ", "", "!!! ...",
    "x <s>a</s> b", "ab ab", "hello hellohello", "\xe2\x96\x81" "a",
};
#define N_TEXTS (sizeof texts / sizeof texts[0])

/* ---- byte-level BPE: model gpt2 ----------------------------------------------------- */

Test(hfvocab, gpt2_byte_level)
{
    write_gpt2();
    const char *out = quantize();
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open(out, &g), LINATTN_OK);
    expect_str(g, "tokenizer.ggml.model", "gpt2");
    expect_str(g, "tokenizer.ggml.pre", "gpt-2");
    cr_expect_eq(type_of(g, 8), 3, "<|endoftext|>: control");
    cr_expect_eq(type_of(g, 4), 1);
    cr_expect_eq(type_of(g, 100), 5, "[PAD100]: unused");
    linattn_gguf_array m;
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.merges", &m), LINATTN_OK);
    cr_expect_eq(m.count, 4);
    const char *s;
    size_t n;
    cr_assert_eq(linattn_gguf_array_string(&m, 2, &s, &n), LINATTN_OK);
    cr_expect(n == 5 && !memcmp(s, "\xc4\xa0" "a b", 5), "merge 2 '%.*s'", (int)n, s);
    linattn_gguf_free(g);
    /* its characters only: the others are refused alike */
    static const char *const mine[] = {"ab ab", " a", " ab!", "a  a", "\xc3\xa9", "a\nb",
                                       "a<|endoftext|>b", "bc", "ab\xc3\xa9 a!\n<|endoftext|>  cab",
                                       "ax", " ", "  "};
    cr_expect_eq(same_tokens(out, mine, sizeof mine / sizeof mine[0]), 2 * 11);
}

/* Each Split form real tokenizers have: the pre-type of the same
 * patterns, and the same ids for every text (all bytes have tokens). */
Test(hfvocab, byte_level_splits_as_pre_types)
{
    static const struct { const char *pre; int ignore; const char *name; } cases[] = {
        {SPLIT_THEN_BYTES(LLAMA3_HF, "Isolated"), 1, "llama3"},
        {SPLIT_THEN_BYTES(LLAMA3_HF, "Isolated"), 0, "dbrx"},
        {SPLIT_THEN_BYTES(QWEN2_HF, "Isolated"), 0, "qwen2"},
        {BYTES_ONLY("true"), 0, "gpt-2"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_bytes_json(cases[k].pre, cases[k].ignore);
        const char *out = quantize();
        linattn_gguf *g;
        cr_assert_eq(linattn_gguf_open(out, &g), LINATTN_OK);
        expect_str(g, "tokenizer.ggml.pre", cases[k].name);
        cr_expect_eq(type_of(g, 264), 3, "<|begin|>: control");
        cr_expect_eq(type_of(g, 265), 4, "<tab>: user-defined");
        cr_expect_eq(type_of(g, 263), 5, "no token 263: unused");
        expect_str(g, "tokenizer.chat_template",
                   "{% for m in messages %}<|begin|>{{ m['content'] }}{% endfor %}");
        int add = 0;
        cr_assert_eq(linattn_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add), LINATTN_OK);
        cr_expect_eq(add, 1);
        linattn_gguf_free(g);
        cr_expect_eq(same_tokens(out, texts, N_TEXTS), 2 * (int)N_TEXTS, "%s",
                     cases[k].name);
    }
}

/* ---- sentencepiece form: model llama ------------------------------------------------ */

Test(hfvocab, sentencepiece_llama_form)
{
    write_sp_full();
    const char *out = quantize();
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open(out, &g), LINATTN_OK);
    expect_str(g, "tokenizer.ggml.model", "llama");
    cr_expect(!linattn_gguf_has(g, "tokenizer.ggml.pre"));
    int prefix = 0;
    cr_assert_eq(linattn_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &prefix),
                 LINATTN_OK);
    cr_expect_eq(prefix, 1);
    cr_expect_eq(type_of(g, 0), 2, "<unk>: unknown");
    cr_expect_eq(type_of(g, 1), 3, "<s>: control");
    cr_expect_eq(type_of(g, 3 + 'A'), 6, "<0x41>: byte");
    cr_expect_eq(type_of(g, 259), 1);
    linattn_gguf_array sc;
    double first, later;
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.scores", &sc), LINATTN_OK);
    cr_assert_eq(linattn_gguf_array_float(&sc, 272, &first), LINATTN_OK); /* ▁a, merge 0 */
    cr_assert_eq(linattn_gguf_array_float(&sc, 273, &later), LINATTN_OK); /* ab, merge 1 */
    cr_expect_gt(first, later, "the earlier merge scores higher");
    linattn_gguf_free(g);
    /* linattn's GGUF sentencepiece reader (llama2.c's algorithm) matches
     * no special token inside a text and reads a U+2581 in it as bytes:
     * texts without them */
    static const char *const mine[] = {
        "the", " the", "  the", "hello, world!", "hellohello hello", "1234 12", "a\tb\nc",
        "\xc3\xa9t\xc3\xa9", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "ab ab", "   ", "",
        "A b", "the  end", "\xe2\x82\xac" "1",
    };
    size_t n = sizeof mine / sizeof mine[0];
    cr_expect_eq(same_tokens(out, mine, n), 2 * (int)n);
}

/* ---- the model's name: llama.cpp's rules by it ------------------------------------- */

/* write_sp_full's vocabulary with Phi-3's markers: </s> (not special),
 * <|endoftext|> 285, <|user|> 286 and <|end|> 287 (special), </s> and the
 * last two taking the white space after them (rstrip) when strip is set,
 * as Phi-3's tokenizer.json has them. */
static void write_sp_phi3(int strip)
{
    write_sp_full();
    size_t len;
    char *json = tu_read_file(tu_path("tokenizer.json"), &len);
    static const char was[] = "{\"id\": 2, \"content\": \"</s>\", \"special\": true}]";
    char *at = strstr(json, was);
    cr_assert(at);
    const char *r = strip ? "true" : "false";
    char with[70000];
    snprintf(with, sizeof with,
             "%.*s{\"id\": 2, \"content\": \"</s>\", \"special\": false, \"rstrip\": %s},"
             " {\"id\": 285, \"content\": \"<|endoftext|>\", \"special\": true},"
             " {\"id\": 286, \"content\": \"<|user|>\", \"special\": true, \"rstrip\": %s},"
             " {\"id\": 287, \"content\": \"<|end|>\", \"special\": true, \"rstrip\": %s}]%s",
             (int)(at - json), json, r, r, r, at + strlen(was));
    free(json);
    tu_write_text(tu_path("tokenizer.json"), with);
}

static void expect_ids(const char *spec, const char *text, const int *want, size_t nw)
{
    linattn_tokenizer *t;
    cr_assert_eq(linattn_tokenizer_load(spec, &t), LINATTN_OK, "%s", linattn_last_error());
    int ids[64];
    size_t n;
    cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 1, ids, 64, &n), LINATTN_OK,
                 "%s", linattn_last_error());
    char got[256] = "";
    for (size_t i = 0; i < n && strlen(got) < 200; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), " %d", ids[i]);
    cr_expect(n == nw && !memcmp(ids, want, n * sizeof *ids), "%s '%s': got%s", spec, text, got);
    linattn_tokenizer_free(t);
}

/* llama.cpp gives the special tokens of a model whose general.name holds
 * phi-3 or phi3 (the written name: the model's file name) Phi-3's
 * rstrip, all but <unk>, <s> and <|endoftext|>, and looks those three and
 * </s> up: Phi-3's own tokenizer.json is written under such a name (ids
 * as llama-tokenize gives them, llama.cpp 0253fb2), one that strips
 * otherwise, or lacks one of them (llama.cpp would not load it), is
 * refused; a GGUF vocabulary keeps its name. */
Test(hfvocab, phi3_rules_by_name)
{
    write_sp_phi3(1);
    char out[4200], spec[4300];
    snprintf(out, sizeof out, "%s", quantize_as("Phi-3-tiny.ini"));
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open(out, &g), LINATTN_OK);
    expect_str(g, "general.name", "Phi-3-tiny.ini");
    cr_expect_eq(type_of(g, 2), 4, "</s>: user-defined");
    cr_expect_eq(type_of(g, 286), 3, "<|user|>: control");
    linattn_gguf_free(g);
    static const char *const mine[] = {
        "<|user|>\n hello<|end|>\n", "</s> the", "<|endoftext|> the", "<s>  a", "a <|end|>\t\tb",
        "<|user|>", "the<|end|>   ",
    };
    size_t n = sizeof mine / sizeof mine[0];
    cr_expect_eq(same_tokens(out, mine, n), 2 * (int)n);
    snprintf(spec, sizeof spec, "gguf:%s", out);
    expect_ids(spec, "<|user|>\n hello<|end|>\n", (int[]){1, 286, 281, 287}, 4);
    expect_ids(spec, "</s> the", (int[]){1, 2, 278}, 3);
    expect_ids(spec, "<|endoftext|> the", (int[]){1, 285, 259, 278}, 4);
    expect_ids(spec, "<s>  a", (int[]){1, 1, 284, 272}, 4);
    /* quantized again under another name, the vocabulary keeps its own */
    char ini[4200];
    snprintf(ini, sizeof ini, "%s", tu_path("again.ini"));
    tu_write_text(ini, "[model]\nweights = m.safetensors\nvocab_size = 320\nd_model = 32\n"
                       "n_heads = 2\nn_layers = 1\nd_ff = 64\nattention = softmax\n"
                       "norm = rmsnorm\nffn = swiglu\npositions = rope\nbias = false\n"
                       "max_seq_len = 64\n");
    size_t len;
    char *text = tu_read_file(ini, &len), with[9000];
    snprintf(with, sizeof with, "%stokenizer = gguf:%s\n", text, out);
    free(text);
    tu_write_text(ini, with);
    linattn_config c;
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(linattn_quantize(&c, tu_path("again.gguf"), "q8_0", NULL), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert_eq(linattn_gguf_open(tu_path("again.gguf"), &g), LINATTN_OK);
    expect_str(g, "general.name", "Phi-3-tiny.ini");
    linattn_gguf_free(g);
    snprintf(spec, sizeof spec, "gguf:%s", tu_path("again.gguf"));
    expect_ids(spec, "<|user|>\n hello<|end|>\n", (int[]){1, 286, 281, 287}, 4);
    /* the markers without their strips: under another name only */
    write_sp_phi3(0);
    cr_expect_eq(quantize_fails_as("phi3-tiny.ini"), LINATTN_ERR_UNSUPPORTED);
    cr_expect(strstr(linattn_last_error(), "token 2 '</s>' has no strip, and llama.cpp gives it "
                     "rstrip by general.name 'phi3-tiny.ini'"), "%s", linattn_last_error());
    snprintf(out, sizeof out, "%s", quantize_as("m.ini"));
    snprintf(spec, sizeof spec, "gguf:%s", out);
    expect_ids(spec, "</s> the", (int[]){1, 2, 259, 278}, 4);
    write_sp_phi3(1);
    cr_expect_eq(quantize_fails_as("m.ini"), LINATTN_ERR_UNSUPPORTED);
    cr_expect(strstr(linattn_last_error(), "added token 2 '</s>' strips the spaces beside it"),
              "%s", linattn_last_error());
    /* a vocabulary without </s>: llama.cpp would not load it so named */
    write_bytes_json(SPLIT_THEN_BYTES(LLAMA3_HF, "Isolated"), 1);
    cr_expect_eq(quantize_fails_as("phi3.ini"), LINATTN_ERR_UNSUPPORTED);
    cr_expect(strstr(linattn_last_error(), "general.name 'phi3.ini' (the model's file name) makes "
                     "llama.cpp look up Phi-3's token '</s>', which the vocabulary lacks"),
              "%s", linattn_last_error());
}

/* ---- what has no GGUF form ---------------------------------------------------------- */

static void refused(const char *says)
{
    cr_expect_eq(quantize_fails(), LINATTN_ERR_UNSUPPORTED);
    cr_expect(strstr(linattn_last_error(), says), "'%s' does not say '%s'", linattn_last_error(),
              says);
    FILE *f = fopen(tu_path("no.gguf"), "rb");
    cr_expect_null(f, "nothing written");
    if (f)
        fclose(f);
}

Test(hfvocab, no_gguf_form_is_refused_by_name)
{
    /* the other suites' sentencepiece files: a few bytes have tokens */
    write_sp(LLAMA_NORMALIZER, "null");
    refused("a byte has no <0xXX> token");
    write_sp("null", "{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\","
                     " \"prepend_scheme\": \"first\", \"split\": false}");
    refused("prepend_scheme first");
    /* splits llama.cpp has no pre-type for */
    write_bytes_json(BYTES_ONLY("false"), 0);
    refused("its pre-tokenizer (no split) is none of llama.cpp's pre-types");
    write_bytes_json(SPLIT_THEN_BYTES(" ", "Removed"), 0);
    refused("the first ' ' (not Isolated)");
    write_bytes_json(SPLIT_THEN_BYTES("\\\\p{N}{1,5}", "Isolated"), 0);
    refused("the first '\\p{N}{1,5}'");
    write_bytes_json("{\"type\": \"ByteLevel\", \"add_prefix_space\": true}", 0);
    refused("add_prefix_space");
    /* a multi-character token no merge makes: llama.cpp would join it */
    write_sp_full();
    size_t len;
    char *json = tu_read_file(tu_path("tokenizer.json"), &len);
    char *at = strstr(json, "\"!\": ");
    cr_assert(at);
    char with[70000];
    snprintf(with, sizeof with, "%.*s\"lo\": 300, %s", (int)(at - json), json, at);
    free(json);
    tu_write_text(tu_path("tokenizer.json"), with);
    refused("token 300 'lo' is made by no merge");
}

/* The program: no warning, and generate runs from the file alone. */
Test(hfvocab, the_program)
{
    write_bytes_json(SPLIT_THEN_BYTES(LLAMA3_HF, "Isolated"), 1);
    const char *ini = write_model();
    const char *out = tu_path("cli.gguf");
    tu_run_result r = tu_run("quantize", ini, out, "--type", "q8_0", NULL);
    tu_assert_ok(&r);
    cr_expect(!strstr(r.err, "warning") && !strstr(r.err, "vocabulary"), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("generate", "-m", out, "-p", "<|begin|>the 1234", "-n", "4", "--temperature", "0",
               "--print-ids", "--ignore-eos", NULL);
    tu_assert_ok(&r);
    tu_run_free(&r);
}

/* tokenizer_config.json's named templates as gguf-py writes them, and a
 * chat_template.jinja beside tokenizer.json when the config has none. */
Test(hfvocab, chat_template_forms)
{
    write_gpt2();
    tu_write_text(tu_path("tokenizer_config.json"),
                  "{\"chat_template\": [{\"name\": \"default\", \"template\": \"D\"},"
                  " {\"name\": \"tool_use\", \"template\": \"T\"}]}");
    const char *out = quantize();
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open(out, &g), LINATTN_OK);
    expect_str(g, "tokenizer.chat_template", "D");
    expect_str(g, "tokenizer.chat_template.tool_use", "T");
    linattn_gguf_free(g);
    tu_write_text(tu_path("tokenizer_config.json"), "{}");
    tu_write_text(tu_path("chat_template.jinja"), "{{ messages }}\n");
    out = quantize();
    cr_assert_eq(linattn_gguf_open(out, &g), LINATTN_OK);
    expect_str(g, "tokenizer.chat_template", "{{ messages }}\n");
    linattn_gguf_free(g);
    tu_write_text(tu_path("tokenizer_config.json"), "{\"chat_template\": 3}");
    cr_expect_eq(quantize_fails(), LINATTN_ERR_FORMAT);
    cr_expect(strstr(linattn_last_error(), "tokenizer_config.json: chat_template: expected"),
              "%s", linattn_last_error());
}
