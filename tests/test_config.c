/* test_config.c: INI configs: every field, path resolution, comments, and each kind of error. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linattn.h"
#include "../engine/cli/cli_config.h"
#include "testutil.h"

TestSuite(config, .init = tu_make_dir, .fini = tu_remove_dir);

/* Writes text to name in the test's folder and returns the path. */
static const char *write_config(const char *name, const char *text)
{
    const char *path = tu_path(name);
    tu_write_text(path, text);
    return path;
}

/* The library's part, and the CLI's two sections, as `linattn` reads a
 * config: most tests go through the CLI's reader (a config file holds all
 * four sections); the library-only tests call linattn_config_load. */
static linattn_config cfg;
static cli_generate gen;
static cli_attention att;

static linattn_status load_text(const char *text)
{
    return cli_config_load(write_config("cfg.ini", text), &cfg, &gen, &att);
}

/* The load fails with status and a message holding every one of the
 * NULL-terminated substrings. */
static void expect_error(const char *text, linattn_status status, const char *const *parts)
{
    linattn_status st = load_text(text);
    const char *msg = linattn_last_error();
    cr_assert_eq(st, status, "status %d (%s), want %d; message: %s", st, linattn_status_str(st),
                 status, msg);
    for (int i = 0; parts[i]; i++)
        cr_assert(strstr(msg, parts[i]), "message '%s' lacks '%s'", msg, parts[i]);
}

#define EXPECT_ERROR(text, status, ...)                                                            \
    expect_error(text, status, (const char *const[]){"cfg.ini:", __VA_ARGS__, NULL})

static const char *full_config =
    "# a full config\n"
    "[model]\n"
    "weights = models/tiny.safetensors   ; relative to this file\n"
    "vocab_size = 300\n"
    "d_model = 64\n"
    "n_heads = 8\n"
    "n_layers = 3\n"
    "d_ff = 256\n"
    "attention = softmax\n"
    "norm = RMSNorm\n"
    "norm_position = post\n"
    "ffn = relu\n"
    "positions = learned\n"
    "max_seq_len = 512\n"
    "eps = 1e-3\n"
    "norm_eps = 2.5e-6\n"
    "tie_embeddings = yes\n"
    "\n"
    "[runtime]\n"
    "threads = 3\n"
    "isa = Scalar\n"
    "batch = 2\n"
    "[generate]\n"
    "prompt = In the beginning#1 ; said\n"
    "max_new_tokens = 17\n"
    "temperature = 0\n"
    "top_k = 0\n"
    "top_p = 1\n"
    "seed = 18446744073709551615\n"
    "[attention]\n"
    "variant = softmax\n"
    "causal = false\n"
    "lengths = 3, 5,7 \n"
    "scale = 0.125\n"
    "eps = 0.5\n"
    "q = q.npy\n"
    "k = /abs/k.npy\n"
    "v = sub/v.npy # trailing comment\n"
    "out = out.npy\n";

Test(config, every_field)
{
    const char *path = write_config("full.ini", full_config);
    cr_assert_eq(cli_config_load(path, &cfg, &gen, &att), LINATTN_OK, "%s", linattn_last_error());
    char want[600];
    cr_assert_str_eq(cfg.path, path);
    cr_assert(linattn_config_has_model(&cfg));
    snprintf(want, sizeof want, "%s/models/tiny.safetensors", tu_dir());
    cr_assert_str_eq(cfg.weights, want);
    cr_assert_eq(cfg.vocab_size, 300);
    cr_assert_eq(cfg.d_model, 64);
    cr_assert_eq(cfg.n_heads, 8);
    cr_assert_eq(cfg.n_layers, 3);
    cr_assert_eq(cfg.d_ff, 256);
    cr_assert_eq(cfg.attention, LINATTN_ATTN_SOFTMAX);
    cr_assert_eq(cfg.norm, LINATTN_NORM_RMSNORM);
    cr_assert_eq(cfg.norm_position, LINATTN_NORM_POST);
    cr_assert_eq(cfg.ffn, LINATTN_FFN_RELU);
    cr_assert_eq(cfg.positions, LINATTN_POS_LEARNED);
    cr_assert_eq(cfg.max_seq_len, 512);
    cr_assert_eq(cfg.eps, 1e-3f);
    cr_assert_eq(cfg.norm_eps, 2.5e-6f);
    cr_assert_eq(cfg.tie_embeddings, 1);
    cr_assert_eq(cfg.threads, 3);
    cr_assert_eq(cfg.isa, LINATTN_ISA_SCALAR);
    cr_assert_eq(cfg.batch, 2);
    cr_assert_str_eq(gen.prompt, "In the beginning#1"); /* '#' without a space before is text */
    cr_assert_eq(gen.max_new_tokens, 17);
    cr_assert_eq(gen.temperature, 0.0f);
    cr_assert_eq(gen.top_k, 0);
    cr_assert_eq(gen.top_p, 1.0f);
    cr_assert_eq(gen.seed, UINT64_MAX);
    cr_assert_eq(att.present, 1);
    cr_assert_eq(att.variant, CLI_VARIANT_SOFTMAX);
    cr_assert_eq(att.causal, 0);
    cr_assert_eq(att.n_lengths, 3);
    cr_assert_eq(att.lengths[0], 3);
    cr_assert_eq(att.lengths[1], 5);
    cr_assert_eq(att.lengths[2], 7);
    cr_assert_eq(att.scale, 0.125f);
    cr_assert_eq(att.eps, 0.5f);
    snprintf(want, sizeof want, "%s/q.npy", tu_dir());
    cr_assert_str_eq(att.q, want);
    cr_assert_str_eq(att.k, "/abs/k.npy");
    snprintf(want, sizeof want, "%s/sub/v.npy", tu_dir());
    cr_assert_str_eq(att.v, want);
    snprintf(want, sizeof want, "%s/out.npy", tu_dir());
    cr_assert_str_eq(att.out, want);
    cr_assert_eq(linattn_config_validate(&cfg), LINATTN_OK);
}

Test(config, defaults)
{
    cr_assert_eq(load_text("[runtime]\nthreads = 2\n"), LINATTN_OK, "%s", linattn_last_error());
    cr_assert(!linattn_config_has_model(&cfg));
    cr_assert_eq(att.present, 0);
    cr_assert_str_eq(cfg.weights, "");
    cr_assert_eq(cfg.vocab_size, 256);
    cr_assert_eq(cfg.attention, LINATTN_ATTN_LINEAR);
    cr_assert_eq(cfg.norm, LINATTN_NORM_LAYERNORM);
    cr_assert_eq(cfg.norm_position, LINATTN_NORM_PRE);
    cr_assert_eq(cfg.ffn, LINATTN_FFN_GELU);
    cr_assert_eq(cfg.positions, LINATTN_POS_SINCOS);
    cr_assert_eq(cfg.max_seq_len, 1024);
    cr_assert_eq(cfg.eps, 1e-6f);
    cr_assert_eq(cfg.norm_eps, 1e-5f);
    cr_assert_eq(cfg.tie_embeddings, 0);
    cr_assert_eq(cfg.threads, 2);
    cr_assert_eq(cfg.batch, 1);
    cr_assert_eq(cfg.isa, LINATTN_ISA_AUTO);
    cr_assert_str_eq(gen.prompt, "");
    cr_assert_eq(gen.max_new_tokens, 200);
    cr_assert_eq(gen.temperature, 0.8f);
    cr_assert_eq(gen.top_k, 40);
    cr_assert_eq(gen.top_p, 0.95f);
    cr_assert_eq(gen.seed, 42);
    cr_assert_eq(att.variant, CLI_VARIANT_LINEAR);
    cr_assert_eq(att.causal, 1);
    cr_assert_eq(att.n_lengths, 0);
    cr_assert_eq(att.scale, 0.0f);
    cr_assert_eq(att.eps, 1e-6f);
    cr_assert_str_eq(att.q, "");

    linattn_config d;
    linattn_config_defaults(&d);
    cr_assert(!linattn_config_has_model(&d));
    cr_assert_eq(linattn_config_validate(&d), LINATTN_OK);
}

static const char *model_head = "[model]\n"
                                "weights = random:7\n"
                                "d_model = 32\n"
                                "n_heads = 4\n"
                                "n_layers = 2\n"
                                "d_ff = 64\n";

/* model_head followed by more lines (line 7 on). */
static const char *with_model(const char *more)
{
    static char text[8192];
    snprintf(text, sizeof text, "%s%s", model_head, more);
    return text;
}

Test(config, random_weights_and_minimal_model)
{
    cr_assert_eq(load_text(model_head), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_str_eq(cfg.weights, "random:7");
    cr_assert(linattn_config_has_model(&cfg));
    cr_assert_eq(cfg.d_model, 32);
}

Test(config, comments_blank_lines_crlf_bom_spaces)
{
    const char *text = "\xEF\xBB\xBF; leading comment\r\n"
                       "# another\r\n"
                       "\r\n"
                       "[ model ]   ; section comment\r\n"
                       "  weights=random:1\r\n"
                       "\td_model   =   32 # c\r\n"
                       "n_heads: 4\r\n"
                       "n_layers = 2;not a comment\r\n"
                       "d_ff = 64\r\n";
    linattn_status st = load_text(text);
    /* "2;not a comment" is one value: ';' needs a space before it to start a comment. */
    cr_assert_eq(st, LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "cfg.ini:8: [model] key 'n_layers'"), "%s",
              linattn_last_error());

    text = "\xEF\xBB\xBF; leading comment\r\n"
           "[ model ]   ; section comment\r\n"
           "  weights=random:1\r\n"
           "\td_model   =   32 # c\r\n"
           "n_heads: 4\r\n"
           "n_layers = 2 ;a comment\r\n"
           "d_ff = 64\r\n"
           "[generate]\r\n"
           "prompt = a ; b\r\n";
    cr_assert_eq(load_text(text), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(cfg.d_model, 32);
    cr_assert_eq(cfg.n_heads, 4);
    cr_assert_eq(cfg.n_layers, 2);
    cr_assert_str_eq(cfg.weights, "random:1");
    cr_assert_str_eq(gen.prompt, "a");
}

Test(config, long_values)
{
    /* Far longer than inih's 200-byte line buffer. */
    static char text[12000], prompt[4096];
    memset(prompt, 'x', sizeof prompt - 1);
    prompt[sizeof prompt - 1] = '\0';
    snprintf(text, sizeof text, "[generate]\nprompt = %s ; comment\nseed = 9\n", prompt);
    cr_assert_eq(load_text(text), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_str_eq(gen.prompt, prompt);
    cr_assert_eq(gen.seed, 9);

    snprintf(text, sizeof text, "[generate]\nprompt = %sy\n", prompt);
    EXPECT_ERROR(text, LINATTN_ERR_INVALID, "cfg.ini:2: [generate] key 'prompt'", "too long");

    /* A long relative path resolves against the folder too. */
    static char rel[1000];
    memset(rel, 'p', sizeof rel - 1);
    rel[sizeof rel - 1] = '\0';
    snprintf(text, sizeof text, "[attention]\nq = %s\n", rel);
    cr_assert_eq(load_text(text), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(strlen(att.q), strlen(tu_dir()) + 1 + strlen(rel));
    cr_assert(strstr(att.q, rel));

    /* random:SEED with a seed of 5,000 digits (leading zeros: a valid
     * number) does not fit the weights field: refused, not copied past it. */
    static char zeros[5001];
    memset(zeros, '0', sizeof zeros - 1);
    snprintf(text, sizeof text, "[model]\nweights = random:%s1\nd_model = 8\nn_heads = 2\n"
             "n_layers = 1\nd_ff = 16\n", zeros);
    EXPECT_ERROR(text, LINATTN_ERR_INVALID, "cfg.ini:2: [model] key 'weights'", "too long");
}

Test(config, relative_to_cwd)
{
    write_config("here.ini", "[model]\nweights = w.safetensors\nd_model = 8\nn_heads = 2\n"
                             "n_layers = 1\nd_ff = 8\n");
    cr_assert_eq(chdir(tu_dir()), 0);
    cr_assert_eq(linattn_config_load("here.ini", &cfg), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_str_eq(cfg.weights, "w.safetensors");
    cr_assert_str_eq(cfg.path, "here.ini");
}

Test(config, unknown_section)
{
    EXPECT_ERROR(with_model("[runtime]\nthreads = 1\n[modle]\n"), LINATTN_ERR_FORMAT,
                 "cfg.ini:9:", "unknown section [modle]");
    EXPECT_ERROR("[runtime\n", LINATTN_ERR_FORMAT, "cfg.ini:1:", "']'");
    EXPECT_ERROR("[runtime] x\n", LINATTN_ERR_FORMAT, "cfg.ini:1:", "after ']'");
    EXPECT_ERROR("[runtime]\n[generate]\n[runtime]\n", LINATTN_ERR_FORMAT, "cfg.ini:3:",
                 "[runtime] appears twice (first at line 1)");
}

Test(config, unknown_key)
{
    EXPECT_ERROR(with_model("dmodel = 3\n"), LINATTN_ERR_FORMAT,
                 "cfg.ini:7: [model] key 'dmodel': unknown key", "d_model");
    /* isa belongs to [runtime] */
    EXPECT_ERROR("[attention]\nisa = avx2\n", LINATTN_ERR_FORMAT,
                 "cfg.ini:2: [attention] key 'isa': unknown key");
    EXPECT_ERROR("threads = 1\n[runtime]\n", LINATTN_ERR_FORMAT, "cfg.ini:1:", "key 'threads'",
                 "before any [section]");
}

Test(config, syntax)
{
    EXPECT_ERROR("[runtime]\nthreads 4\n", LINATTN_ERR_FORMAT, "cfg.ini:2:", "key = value");
    EXPECT_ERROR("[runtime]\n= 4\n", LINATTN_ERR_FORMAT, "cfg.ini:2:", "no key");
    EXPECT_ERROR("[runtime]\nthreads = 1\n    batch 2\n", LINATTN_ERR_FORMAT, "cfg.ini:3:");
}

Test(config, bad_numbers)
{
    EXPECT_ERROR(with_model("[runtime]\nthreads = 4x\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:8: [runtime] key 'threads'", "integer", "'4x'");
    EXPECT_ERROR("[runtime]\nthreads =\n", LINATTN_ERR_INVALID, "cfg.ini:2: [runtime] key 'threads'");
    EXPECT_ERROR("[runtime]\nthreads = 99999999999\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [runtime] key 'threads'");
    EXPECT_ERROR("[runtime]\nthreads = 1.5\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [runtime] key 'threads'");
    EXPECT_ERROR("[generate]\ntemperature = nan\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [generate] key 'temperature'", "'nan'");
    EXPECT_ERROR("[generate]\ntemperature = inf\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [generate] key 'temperature'");
    EXPECT_ERROR("[generate]\ntemperature = 1e39\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [generate] key 'temperature'", "range");
    EXPECT_ERROR("[generate]\ntop_p = 0.5.1\n", LINATTN_ERR_INVALID, "cfg.ini:2: [generate] key 'top_p'");
    EXPECT_ERROR("[generate]\nseed = -1\n", LINATTN_ERR_INVALID, "cfg.ini:2: [generate] key 'seed'");
    EXPECT_ERROR("[generate]\nseed = 18446744073709551616\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [generate] key 'seed'");
    EXPECT_ERROR(with_model("eps = 1e-3x\n"), LINATTN_ERR_INVALID, "cfg.ini:7: [model] key 'eps'");
    EXPECT_ERROR(with_model("tie_embeddings = maybe\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'tie_embeddings'", "true or false");
    EXPECT_ERROR(with_model("positions = alibi\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'positions'", "none, sincos, learned or rope",
                 "'alibi'");
    EXPECT_ERROR("[runtime]\nisa = sse9\n", LINATTN_ERR_INVALID, "cfg.ini:2: [runtime] key 'isa'");
    EXPECT_ERROR("[attention]\nlengths = 3,,4\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [attention] key 'lengths'");
    EXPECT_ERROR("[model]\nweights = random:abc\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [model] key 'weights'", "random:SEED");
    EXPECT_ERROR("[attention]\nq =\n", LINATTN_ERR_INVALID, "cfg.ini:2: [attention] key 'q'",
                 "empty");

    char text[1024] = "[attention]\nlengths = 1";
    for (int i = 1; i < 65; i++)
        strcat(text, ",1");
    EXPECT_ERROR(text, LINATTN_ERR_INVALID, "cfg.ini:2: [attention] key 'lengths'");
}

Test(config, out_of_range)
{
    EXPECT_ERROR("[generate]\ntop_p = 0\n", LINATTN_ERR_INVALID, "cfg.ini:2: [generate] key 'top_p'");
    EXPECT_ERROR("[generate]\ntop_p = 1.5\n", LINATTN_ERR_INVALID, "cfg.ini:2: [generate] key 'top_p'");
    EXPECT_ERROR("[generate]\n\ntemperature = -0.1\n", LINATTN_ERR_INVALID,
                 "cfg.ini:3: [generate] key 'temperature'");
    EXPECT_ERROR("[generate]\ntop_k = -1\n", LINATTN_ERR_INVALID, "cfg.ini:2: [generate] key 'top_k'");
    EXPECT_ERROR("[runtime]\nthreads = -1\n", LINATTN_ERR_INVALID, "cfg.ini:2: [runtime] key 'threads'");
    EXPECT_ERROR("[runtime]\nbatch = 0\n", LINATTN_ERR_INVALID, "cfg.ini:2: [runtime] key 'batch'");
    EXPECT_ERROR(with_model("vocab_size = 65537\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'vocab_size'", "65537");
    EXPECT_ERROR(with_model("eps = -1e-6\n"), LINATTN_ERR_INVALID, "cfg.ini:7: [model] key 'eps'");
    EXPECT_ERROR(with_model("norm_eps = -1\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'norm_eps'");
    EXPECT_ERROR(with_model("max_seq_len = 0\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'max_seq_len'");
    EXPECT_ERROR("[model]\nweights = random:1\nd_model = 0\nn_heads = 1\nn_layers = 1\nd_ff = 4\n",
                 LINATTN_ERR_INVALID, "cfg.ini:3: [model] key 'd_model'");
    EXPECT_ERROR("[attention]\nlengths = 4, -1\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [attention] key 'lengths'", "negative");
    EXPECT_ERROR("[attention]\nscale = -1\n", LINATTN_ERR_INVALID, "cfg.ini:2: [attention] key 'scale'");
}

Test(config, decay)
{
    /* model_head: 4 heads, linear by default */
    cr_assert_eq(load_text(model_head), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(cfg.decay.kind, LINATTN_DECAY_NONE);
    cr_assert_eq(load_text(with_model("decay = RetNet\n")), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(cfg.decay.kind, LINATTN_DECAY_RETNET);
    float g[4];
    int any = 0;
    cr_assert_eq(linattn_decay_values(&cfg.decay, 4, g, &any), LINATTN_OK);
    cr_expect(any);
    for (int h = 0; h < 4; h++) /* 1 - 2^(-5-h), exact in float */
        cr_expect_eq(g[h], 1.0f - 1.0f / (float)(32 << h), "head %d: %g", h, (double)g[h]);
    cr_assert_eq(load_text(with_model("decay = 0.5, 0.875,0.97 ,1\n")), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert_eq(cfg.decay.kind, LINATTN_DECAY_LIST);
    cr_assert_eq(cfg.decay.n, 4);
    cr_expect_eq(cfg.decay.values[1], 0.875f);
    cr_expect_eq(cfg.decay.values[3], 1.0f);
    cr_assert_eq(load_text(with_model("decay = none\n")), LINATTN_OK);
    cr_assert_eq(cfg.decay.kind, LINATTN_DECAY_NONE);
    cr_assert_eq(linattn_decay_values(&cfg.decay, 4, g, &any), LINATTN_OK);
    cr_expect(!any && g[0] == 1.0f && g[3] == 1.0f);

    EXPECT_ERROR(with_model("decay = 0.5,0.9,0.99\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'decay'", "3 values for 4 heads");
    EXPECT_ERROR(with_model("decay = 0.5,0.9,0,1\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'decay'", "(0, 1]");
    EXPECT_ERROR(with_model("decay = 0.5,0.9,1.01,1\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'decay'", "(0, 1]");
    EXPECT_ERROR(with_model("decay = 0.5,-0.5,1,1\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'decay'");
    EXPECT_ERROR(with_model("decay = 0.5,nan,1,1\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'decay'");
    EXPECT_ERROR(with_model("decay = 0.5,,1,1\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'decay'");
    EXPECT_ERROR(with_model("decay = fast\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'decay'", "none, retnet");
    EXPECT_ERROR(with_model("attention = softmax\ndecay = retnet\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:8: [model] key 'decay'", "attention = linear");
    /* n_heads after decay: the count is checked once both are known */
    EXPECT_ERROR("[model]\nweights = random:1\ndecay = 0.5,0.5\nd_model = 12\nn_heads = 3\n"
                 "n_layers = 1\nd_ff = 4\n",
                 LINATTN_ERR_INVALID, "cfg.ini:3: [model] key 'decay'", "2 values for 3 heads");
    static char text[8192 + 32];
    strcpy(text, with_model("decay = 0.5"));
    for (int i = 1; i < 257; i++)
        strcat(text, ",0.5");
    strcat(text, "\n");
    EXPECT_ERROR(text, LINATTN_ERR_INVALID, "cfg.ini:7: [model] key 'decay'", "at most 256");

    /* [attention]: any count (the heads come from the tensors), causal linear only */
    cr_assert_eq(load_text("[attention]\ndecay = 0.5, 0.25\n"), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert_eq(att.decay.n, 2);
    EXPECT_ERROR("[attention]\ncausal = false\ndecay = retnet\n", LINATTN_ERR_INVALID,
                 "cfg.ini:3: [attention] key 'decay'", "causal");
    EXPECT_ERROR("[attention]\nvariant = softmax\ndecay = 0.9\n", LINATTN_ERR_INVALID,
                 "cfg.ini:3: [attention] key 'decay'", "variant = linear");

    /* a hand-built config is validated the same way */
    linattn_config c;
    linattn_config_defaults(&c);
    snprintf(c.weights, sizeof c.weights, "random:1");
    c.d_model = 8, c.n_heads = 2, c.n_layers = 1, c.d_ff = 4;
    c.decay = (linattn_decay){LINATTN_DECAY_LIST, 2, {0.5f, 2.0f}};
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'decay'"), "%s", linattn_last_error());
    c.decay.values[1] = 1.0f;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_OK, "%s", linattn_last_error());
    c.decay.n = 3;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    c.decay.kind = (linattn_decay_kind)7;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
}

Test(config, heads_must_divide_d_model)
{
    EXPECT_ERROR("[model]\nweights = random:1\nd_model = 30\nn_heads = 4\nn_layers = 1\nd_ff = 4\n",
                 LINATTN_ERR_INVALID, "cfg.ini:4: [model] key 'n_heads'",
                 "d_model (30) must be divisible by n_heads (4)");
    /* sincos needs an even d_model; other positions do not. */
    EXPECT_ERROR("[model]\nweights = random:1\nd_model = 15\nn_heads = 5\nn_layers = 1\nd_ff = 4\n",
                 LINATTN_ERR_INVALID, "cfg.ini:3: [model] key 'd_model'", "even");
    cr_assert_eq(load_text("[model]\nweights = random:1\nd_model = 15\nn_heads = 5\nn_layers = 1\n"
                           "d_ff = 4\npositions = learned\n"),
                 LINATTN_OK, "%s", linattn_last_error());
}

Test(config, duplicate_key)
{
    EXPECT_ERROR(with_model("d_model = 64\n"), LINATTN_ERR_FORMAT,
                 "cfg.ini:7: [model] key 'd_model': duplicate", "line 3");
}

Test(config, missing_required_key)
{
    EXPECT_ERROR("[runtime]\n[model]\nweights = random:1\nd_model = 32\nn_heads = 4\nd_ff = 4\n",
                 LINATTN_ERR_FORMAT, "cfg.ini:2: [model] key 'n_layers'", "required");
}

Test(config, missing_file)
{
    const char *path = tu_path("nope.ini");
    cr_assert_eq(linattn_config_load(path, &cfg), LINATTN_ERR_IO);
    cr_assert(strstr(linattn_last_error(), path), "%s", linattn_last_error());
    cr_assert_eq(linattn_config_load(tu_dir(), &cfg), LINATTN_ERR_IO, "a folder: %s",
                 linattn_last_error());
}

Test(config, not_text)
{
    static const char text[] = "[runtime]\nthreads = 1\n"; /* its NUL ends the file */
    const char *path = tu_path("bin.ini");
    tu_write_file(path, text, sizeof text);
    cr_assert_eq(linattn_config_load(path, &cfg), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "bin.ini:3:"), "%s", linattn_last_error());
}

Test(config, failure_leaves_config_unchanged)
{
    linattn_config before;
    memset(&cfg, 0x5a, sizeof cfg);
    memcpy(&before, &cfg, sizeof cfg);
    cr_assert_neq(load_text("[runtime]\nthreads = 2\nbatch = -3\n"), LINATTN_OK);
    cr_assert_eq(memcmp(&before, &cfg, sizeof cfg), 0);
}

Test(config, validate_by_hand)
{
    linattn_config c;
    linattn_config_defaults(&c);
    strcpy(c.weights, "random:3");
    c.d_model = 48;
    c.n_heads = 6;
    c.n_layers = 1;
    c.d_ff = 96;
    cr_assert_eq(linattn_config_validate(&c), LINATTN_OK, "%s", linattn_last_error());

    c.n_heads = 5;
    cr_assert_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "config: [model] key 'n_heads': d_model (48)"), "%s",
              linattn_last_error());
    c.n_heads = 6;
    c.weights[0] = '\0'; /* still a model (d_model is set): weights are required */
    cr_assert(linattn_config_has_model(&c));
    cr_assert_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "key 'weights'"), "%s", linattn_last_error());
    strcpy(c.weights, "w.safetensors");
    c.ffn = (linattn_ffn_kind)7;
    cr_assert_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "key 'ffn'"), "%s", linattn_last_error());
    c.ffn = LINATTN_FFN_RELU;
    c.isa = (linattn_isa)99;
    cr_assert_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "key 'isa'"), "%s", linattn_last_error());
    c.isa = LINATTN_ISA_AVX2;
    cr_assert_eq(linattn_config_validate(&c), LINATTN_OK, "%s", linattn_last_error());
    c.struct_size = 100; /* built against another linattn.h */
    cr_assert_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "struct_size"), "%s", linattn_last_error());
    c.struct_size = sizeof c;

    /* the CLI's checks of its sections, on values from flags */
    cli_generate g;
    cli_attention a;
    cli_config_defaults(&g, &a);
    cr_assert_eq(cli_config_check(&g, &a), LINATTN_OK);
    g.top_p = NAN;
    cr_assert_eq(cli_config_check(&g, &a), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "command line: [generate] key 'top_p'"), "%s",
              linattn_last_error());
    g.top_p = 0.5f;
    a.decay.kind = LINATTN_DECAY_RETNET;
    a.causal = 0;
    cr_assert_eq(cli_config_check(&g, &a), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "[attention] key 'decay'"), "%s", linattn_last_error());
    cr_assert_eq(linattn_config_validate(NULL), LINATTN_ERR_INVALID);

    /* Setting any model field makes it a model: the rest are checked. */
    linattn_config_defaults(&c);
    strcpy(c.weights, "random:1");
    c.d_model = 32;
    cr_assert_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "config: [model] key 'n_heads'"), "%s",
              linattn_last_error());
}

static void check_golden_config(const char *path)
{
    cr_assert_eq(cli_config_load(path, &cfg, &gen, &att), LINATTN_OK, "%s", linattn_last_error());
    cr_assert(linattn_config_has_model(&cfg));
    cr_assert_eq(access(cfg.weights, R_OK), 0, "%s", cfg.weights);
}

/* The shipped golden configs load, and their weights exist. */
Test(config, golden_configs)
{
    tu_each_data_file(".ini", check_golden_config);
}

/* Mangled configs load or fail with a message; never crash. */
Test(config, fuzz)
{
    int iters = tu_fuzz_iters();
    static const char specials[] = "[]=:;# \t\n\r,.-+e0123456789xX";
    size_t len = strlen(full_config);
    static char text[8192];
    tu_rng_seed(777);
    int ok = 0;
    for (int iter = 0; iter < iters; iter++) {
        memcpy(text, full_config, len + 1);
        size_t n = len;
        for (int k = 1 + (int)(tu_rng() % 4); k > 0; k--) {
            size_t at = tu_rng() % n;
            switch (tu_rng() % 4) {
            case 0: text[at] = specials[tu_rng() % (sizeof specials - 1)]; break;
            case 1: text[at] = (char)(1 + tu_rng() % 255); break;
            case 2: n = at; text[n] = '\0'; break;
            case 3: memmove(text + at, text + at + 1, n - at); n--; break;
            }
            if (n == 0)
                break;
        }
        linattn_status st = load_text(text);
        if (st == LINATTN_OK) {
            ok++;
            cr_assert_eq(linattn_config_validate(&cfg), LINATTN_OK, "%s", linattn_last_error());
        } else {
            cr_assert(strstr(linattn_last_error(), "cfg.ini"), "%s", linattn_last_error());
        }
    }
    cr_assert_gt(ok, 0);
}

/* The library alone reads [model] and [runtime]; it skips the linattn
 * program's [generate] and [attention] unread (so any host loads the
 * shipped configs; the program checks them), and any other section is an
 * error unless a host lists its keys. */
Test(config, library_owns_model_and_runtime_only)
{
    const char *path = write_config("gen.ini", "[runtime]\nthreads = 1\n[generate]\nseed = x\n"
                                               "bogus = 1\n[attention]\nq = a.npy\n");
    cr_assert_eq(linattn_config_load(path, &cfg), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(cfg.threads, 1);
    cr_assert_eq(cli_config_load(path, &cfg, &gen, &att), LINATTN_ERR_INVALID,
                 "the program checks its sections");
    cr_assert(strstr(linattn_last_error(), "gen.ini:4: [generate] key 'seed'"), "%s",
              linattn_last_error());
    path = write_config("other.ini", "[runtime]\nthreads = 1\n[plugin]\nx = 3\n");
    cr_assert_eq(linattn_config_load(path, &cfg), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "other.ini:3:") &&
                  strstr(linattn_last_error(), "unknown section [plugin] (expected [model], "
                                               "[runtime])"),
              "%s", linattn_last_error());
    /* sections still appear once, even skipped ones */
    path = write_config("twice.ini", "[generate]\n[runtime]\n[generate]\n");
    cr_assert_eq(linattn_config_load(path, &cfg), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "appears twice"), "%s", linattn_last_error());
}

/* A host's keys of every type, parsed with the library's syntax: values,
 * lines, paths from the config's folder, and the same messages. */
Test(config, host_keys)
{
    static const char *const colours[] = {"red", "green", NULL};
    int i = 0, b = 0, choice = -1, ints[4], n_ints = 0;
    float f = 0;
    uint64_t u = 0;
    char str[16] = "", path[600] = "";
    linattn_decay d;
    linattn_config_key keys[] = {
        {"host", "i", LINATTN_KEY_INT, &i, 0, NULL, NULL, -1},
        {"host", "f", LINATTN_KEY_FLOAT, &f, 0, NULL, NULL, -1},
        {"host", "u", LINATTN_KEY_U64, &u, 0, NULL, NULL, -1},
        {"host", "b", LINATTN_KEY_BOOL, &b, 0, NULL, NULL, -1},
        {"host", "s", LINATTN_KEY_STRING, str, sizeof str, NULL, NULL, -1},
        {"host", "p", LINATTN_KEY_PATH, path, sizeof path, NULL, NULL, -1},
        {"more", "c", LINATTN_KEY_CHOICE, &choice, 0, colours, NULL, -1},
        {"more", "d", LINATTN_KEY_DECAY, &d, 0, NULL, NULL, -1},
        {"more", "n", LINATTN_KEY_INTS, ints, 4, NULL, &n_ints, -1},
        {"more", "unset", LINATTN_KEY_INT, &i, 0, NULL, NULL, -1},
    };
    const int n = (int)(sizeof keys / sizeof keys[0]);
    const char *p = write_config("host.ini", "[host]\ni = -4\nf = 2.5\nu = 18446744073709551615\n"
                                             "b = yes\ns = hello ; comment\np = x/y.bin\n"
                                             "[more]\nc = GREEN\nd = retnet\nn = 1, 2,3\n");
    cr_assert_eq(linattn_config_load_keys(p, &cfg, keys, n), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert_eq(i, -4);
    cr_assert_eq(f, 2.5f);
    cr_assert_eq(u, UINT64_MAX);
    cr_assert_eq(b, 1);
    cr_assert_str_eq(str, "hello");
    char want[600];
    snprintf(want, sizeof want, "%s/x/y.bin", tu_dir());
    cr_assert_str_eq(path, want);
    cr_assert_eq(choice, 1);
    cr_assert_eq(d.kind, LINATTN_DECAY_RETNET);
    cr_assert_eq(n_ints, 3);
    cr_assert_eq(ints[2], 3);
    for (int k = 0; k < 9; k++)
        cr_assert_eq(keys[k].line, k < 6 ? 2 + k : 9 + (k - 6), "key %d line %d", k, keys[k].line);
    cr_assert_eq(keys[9].line, 0, "not in the file");

    p = write_config("h2.ini", "[more]\nc = blue\n");
    cr_assert_eq(linattn_config_load_keys(p, &cfg, keys, n), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "h2.ini:2: [more] key 'c': expected red or green"), "%s",
                     linattn_last_error());
    p = write_config("h3.ini", "[host]\ns = way too long for sixteen\n");
    cr_assert_eq(linattn_config_load_keys(p, &cfg, keys, n), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "too long"), "%s", linattn_last_error());
    p = write_config("h4.ini", "[host]\nzz = 1\n");
    cr_assert_eq(linattn_config_load_keys(p, &cfg, keys, n), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "unknown key (known: i, f, u, b, s, p)"), "%s",
              linattn_last_error());
    p = write_config("h5.ini", "[more]\nn = 1\nn = 2\n");
    cr_assert_eq(linattn_config_load_keys(p, &cfg, keys, n), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "duplicate key (first set at line 2)"), "%s",
              linattn_last_error());
    p = write_config("h6.ini", "[more]\nn = 1,2,3,4,5\n");
    cr_assert_eq(linattn_config_load_keys(p, &cfg, keys, n), LINATTN_ERR_INVALID);

    /* a malformed table is the host's bug, said as such */
    linattn_config_key bad[] = {{"model", "x", LINATTN_KEY_INT, &i, 0, NULL, NULL, 0}};
    cr_assert_eq(linattn_config_load_keys(p, &cfg, bad, 1), LINATTN_ERR_INVALID);
    linattn_config_key nosize[] = {{"h", "s", LINATTN_KEY_STRING, str, 0, NULL, NULL, 0}};
    cr_assert_eq(linattn_config_load_keys(p, &cfg, nosize, 1), LINATTN_ERR_INVALID);

    cr_assert_eq(linattn_config_report(LINATTN_ERR_INVALID, "a.ini", 7, "host", "i", "too %s",
                                       "big"),
                 LINATTN_ERR_INVALID);
    cr_assert_str_eq(linattn_last_error(), "a.ini:7: [host] key 'i': too big");
}

Test(config, llama_family_keys)
{
    /* defaults: no rope, theta 10000, interleaved, biases, one k/v head a head */
    cr_assert_eq(load_text(model_head), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(cfg.rope_theta, 10000.0f);
    cr_assert_eq(cfg.rope_pairing, LINATTN_ROPE_INTERLEAVED);
    cr_assert_eq(cfg.bias, 1);
    cr_assert_eq(cfg.n_kv_heads, 0);
    cr_assert_eq(load_text(with_model("positions = RoPE\nrope_theta = 500000\nrope_pairing = half\n"
                                      "ffn = SwiGLU\nbias = false\nn_kv_heads = 2\n")),
                 LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(cfg.positions, LINATTN_POS_ROPE);
    cr_assert_eq(cfg.rope_theta, 500000.0f);
    cr_assert_eq(cfg.rope_pairing, LINATTN_ROPE_HALF);
    cr_assert_eq(cfg.ffn, LINATTN_FFN_SWIGLU);
    cr_assert_eq(cfg.bias, 0);
    cr_assert_eq(cfg.n_kv_heads, 2);
    cr_assert_eq(load_text(with_model("n_kv_heads = 4\n")), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(load_text(with_model("n_kv_heads = 1\n")), LINATTN_OK, "%s", linattn_last_error());

    EXPECT_ERROR(with_model("positions = rotary\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'positions'", "rope");
    EXPECT_ERROR(with_model("ffn = geglu\n"), LINATTN_ERR_INVALID, "cfg.ini:7: [model] key 'ffn'",
                 "swiglu");
    EXPECT_ERROR(with_model("positions = rope\nrope_theta = 0\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:8: [model] key 'rope_theta'", "> 0");
    EXPECT_ERROR(with_model("positions = rope\nrope_theta = -10000\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:8: [model] key 'rope_theta'", "> 0");
    EXPECT_ERROR(with_model("positions = rope\nrope_theta = abc\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:8: [model] key 'rope_theta'");
    EXPECT_ERROR(with_model("rope_theta = 10000\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'rope_theta'", "positions = rope");
    EXPECT_ERROR(with_model("positions = rope\nrope_pairing = pairs\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:8: [model] key 'rope_pairing'", "interleaved or half");
    EXPECT_ERROR(with_model("rope_pairing = half\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'rope_pairing'", "positions = rope");
    EXPECT_ERROR(with_model("bias = maybe\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'bias'", "true or false");
    EXPECT_ERROR(with_model("n_kv_heads = 3\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'n_kv_heads'", "must divide n_heads (4)");
    EXPECT_ERROR(with_model("n_kv_heads = 8\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'n_kv_heads'", "out of range (0..4)");
    EXPECT_ERROR(with_model("n_kv_heads = -1\n"), LINATTN_ERR_INVALID,
                 "cfg.ini:7: [model] key 'n_kv_heads'");
    /* rope turns pairs: an odd head size (30 / 5 = 6 is even, 15 / 5 = 3 is not) */
    EXPECT_ERROR("[model]\nweights = random:1\nd_model = 15\nn_heads = 5\nn_layers = 1\nd_ff = 4\n"
                 "positions = rope\n",
                 LINATTN_ERR_INVALID, "cfg.ini:7: [model] key 'positions'", "even head size");
    cr_assert_eq(load_text("[model]\nweights = random:1\nd_model = 30\nn_heads = 5\nn_layers = 1\n"
                           "d_ff = 4\npositions = rope\n"),
                 LINATTN_OK, "%s", linattn_last_error());

    /* hand-built: the same checks */
    linattn_config c;
    linattn_config_defaults(&c);
    snprintf(c.weights, sizeof c.weights, "random:1");
    c.d_model = 8, c.n_heads = 4, c.n_layers = 1, c.d_ff = 4;
    c.positions = LINATTN_POS_ROPE;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_OK, "%s", linattn_last_error());
    c.n_kv_heads = 3;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'n_kv_heads'"), "%s", linattn_last_error());
    c.n_kv_heads = 2;
    c.rope_theta = NAN;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'rope_theta'"), "%s", linattn_last_error());
    c.rope_theta = 10000.0f;
    c.rope_pairing = (linattn_rope_pairing)2;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'rope_pairing'"), "%s", linattn_last_error());
    c.rope_pairing = LINATTN_ROPE_HALF;
    c.bias = 2;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "key 'bias'"), "%s", linattn_last_error());
    c.bias = 0;
    c.ffn = (linattn_ffn_kind)3;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    c.ffn = LINATTN_FFN_SWIGLU;
    cr_expect_eq(linattn_config_validate(&c), LINATTN_OK, "%s", linattn_last_error());
    c.d_model = 12; /* head size 3 */
    cr_expect_eq(linattn_config_validate(&c), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "even head size"), "%s", linattn_last_error());
}

Test(config, llama2c_weights_key)
{
    /* a path relative to the config's folder; no shape keys needed, but the
     * file must exist and be a llama2.c checkpoint (read at load) */
    EXPECT_ERROR("[model]\nweights = llama2c:missing.bin\n", LINATTN_ERR_IO,
                 "cfg.ini:2: [model] key 'weights'", "missing.bin");
    EXPECT_ERROR("[model]\nweights = llama2c:\n", LINATTN_ERR_INVALID,
                 "cfg.ini:2: [model] key 'weights'", "empty path");
    tu_write_text(tu_path("short.bin"), "not a checkpoint");
    EXPECT_ERROR("[model]\nweights = llama2c:short.bin\n", LINATTN_ERR_FORMAT,
                 "cfg.ini:2: [model] key 'weights'", "short.bin", "too short");
    /* still required without llama2c: */
    EXPECT_ERROR("[model]\nweights = random:1\n", LINATTN_ERR_FORMAT, "[model] key 'd_model'",
                 "required");
}

/* window, feature_dim and attention = hybrid: what goes with what. */
Test(config, window_and_hybrid_keys)
{
    cr_assert_eq(load_text(with_model("attention = softmax\nwindow = 64\n")), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_expect_eq(cfg.window, 64);
    cr_assert_eq(load_text(with_model("attention = hybrid\nwindow = 16\nfeature_dim = 32\n"
                                      "decay = retnet\n")),
                 LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(cfg.attention, LINATTN_ATTN_HYBRID);
    cr_expect_eq(cfg.feature_dim, 32);
    EXPECT_ERROR(with_model("attention = hybrid\n"), LINATTN_ERR_INVALID, "key 'window'",
                 "hybrid needs window >= 1");
    EXPECT_ERROR(with_model("attention = linear\nwindow = 8\n"), LINATTN_ERR_INVALID,
                 "key 'window'", "softmax or hybrid");
    EXPECT_ERROR(with_model("attention = softmax\nwindow = -1\n"), LINATTN_ERR_INVALID,
                 "key 'window'");
    EXPECT_ERROR(with_model("attention = softmax\nfeature_dim = 8\n"), LINATTN_ERR_INVALID,
                 "key 'feature_dim'", "needs attention = hybrid");
    EXPECT_ERROR(with_model("attention = softmax\ndecay = retnet\n"), LINATTN_ERR_INVALID,
                 "key 'decay'", "linear or hybrid");
    EXPECT_ERROR(with_model("attention = softmax\nwindow = 4\npositions = learned\n"),
                 LINATTN_ERR_INVALID, "key 'window'", "learned positions");
    /* a hybrid's ring may hold halfs, a linear model has none */
    cr_assert_eq(load_text(with_model("attention = hybrid\nwindow = 4\n[runtime]\n"
                                      "kv_cache = f16\n")),
                 LINATTN_OK, "%s", linattn_last_error());
    EXPECT_ERROR(with_model("attention = linear\n[runtime]\nkv_cache = f16\n"),
                 LINATTN_ERR_INVALID, "key 'kv_cache'", "no KV cache");
}

/* The worst config: a file of exactly the largest size read (1 MiB,
 * MAX_CONFIG_BYTES in config.c) holding a value of 256 KiB (eps = 0.1 and
 * its zeros: a long line, parsed whole), then about 390,000 comment lines,
 * then the last line: in one file a key set again (refused, naming both
 * lines), in the other a blank line (loaded). Each line is read once, each
 * key looked up among the fixed keys; measured here (release, Emerald Rapids
 * VM, loaded) 0.08 s of CPU for the two loads, asserted under 2 s (25x: so
 * short a time varies); a pairwise check of the lines would be 8e10
 * steps. Under ASan too. */
static size_t worst_config(char *buf, int dup)
{
    const size_t size = (size_t)1 << 20, value = (size_t)256 << 10;
    size_t at = (size_t)snprintf(buf, size, "%seps = 0.1", model_head);
    memset(buf + at, '0', value);
    at += value;
    buf[at++] = '\n';
    const char *last = dup ? "d_ff = 64\n" : "\n";
    size_t tail = strlen(last);
    size_t fill = size - tail - at; /* ";\n" lines, after a blank one when odd */
    if (fill % 2)
        buf[at + --fill] = '\n';
    for (size_t i = 0; i < fill; i += 2)
        memcpy(buf + at + i, ";\n", 2);
    at = size - tail;
    memcpy(buf + at, last, tail);
    at += tail;
    cr_assert_eq(at, size);
    return tu_count_lines(buf, at);
}

Test(config, worst_file_is_linear)
{
    char *buf = malloc((size_t)1 << 20);
    cr_assert(buf);
    double cpu = 0;
    for (int dup = 0; dup < 2; dup++) {
        int lines = (int)worst_config(buf, dup);
        const char *path = tu_path("worst.ini");
        tu_write_file(path, buf, (size_t)1 << 20);
        double t0 = tu_cpu_seconds();
        linattn_status st = cli_config_load(path, &cfg, &gen, &att);
        cpu += tu_cpu_seconds() - t0;
        if (!dup) {
            cr_assert_eq(st, LINATTN_OK, "%s", linattn_last_error());
            cr_assert_float_eq(cfg.eps, 0.1f, 0.0f);
            cr_assert_eq(cfg.d_ff, 64);
            continue;
        }
        cr_assert_eq(st, LINATTN_ERR_FORMAT, "%s", linattn_last_error());
        char want[128];
        snprintf(want, sizeof want, "worst.ini:%d: [model] key 'd_ff': duplicate key (first set at "
                 "line 6)", lines);
        cr_assert(strstr(linattn_last_error(), want), "%s (want %s)", linattn_last_error(), want);
    }
    fprintf(stderr, "worst config (1 MiB): %.3f s CPU for the two loads\n", cpu);
    cr_assert_lt(cpu, 2.0, "two loads of 1 MiB took %.2f s", cpu);
    free(buf);
}
