/* source_gguf.c: weights = gguf:PATH, a llama.cpp GGUF model (engine/gguf.c reads the
 * file; engine/weights.c hands out its tensors under this project's names). */
#include <stdio.h>
#include <string.h>

#include "gguf.h"
#include "internal.h"
#include "source.h"

#define GGUF_PREFIX "gguf:"

/* llama.cpp's names for the llama architecture's tensors (llama-arch.cpp's
 * LLM_TENSOR_NAMES), beside ours. */
static const struct { const char *gguf, *ours; } model_names[] = {
    {"token_embd.weight", "tok_emb.weight"},
    {"output_norm.weight", "norm_f.weight"},
    {"output.weight", "lm_head.weight"},
};
static const struct { const char *gguf, *ours; } layer_names[] = {
    {"attn_norm.weight", "norm1.weight"},   {"attn_q.weight", "attn.q.weight"},
    {"attn_k.weight", "attn.k.weight"},     {"attn_v.weight", "attn.v.weight"},
    {"attn_output.weight", "attn.o.weight"}, {"ffn_norm.weight", "norm2.weight"},
    {"ffn_gate.weight", "ffn.gate.weight"}, {"ffn_up.weight", "ffn.up.weight"},
    {"ffn_down.weight", "ffn.down.weight"},
};
#define N_OF(a) (sizeof a / sizeof a[0])

/* "12." at s: the layer number and the bytes it takes with its dot (0: none). */
static size_t layer_at(const char *s, int *layer)
{
    long v = 0;
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9' && n < 6)
        v = v * 10 + (s[n++] - '0');
    if (n == 0 || s[n] != '.' || (n > 1 && s[0] == '0'))
        return 0;
    *layer = (int)v;
    return n + 1;
}

int linattn_gguf_rename(const char *gguf, char *out, size_t size)
{
    for (size_t i = 0; i < N_OF(model_names); i++)
        if (strcmp(gguf, model_names[i].gguf) == 0) {
            snprintf(out, size, "%s", model_names[i].ours);
            return 1;
        }
    int layer;
    size_t n;
    if (strncmp(gguf, "blk.", 4) == 0 && (n = layer_at(gguf + 4, &layer)) > 0)
        for (size_t i = 0; i < N_OF(layer_names); i++)
            if (strcmp(gguf + 4 + n, layer_names[i].gguf) == 0) {
                snprintf(out, size, "layers.%d.%s", layer, layer_names[i].ours);
                return 1;
            }
    snprintf(out, size, "gguf:%s", gguf);
    return 0;
}

void linattn_gguf_name(const char *ours, char *out, size_t size)
{
    for (size_t i = 0; i < N_OF(model_names); i++)
        if (strcmp(ours, model_names[i].ours) == 0) {
            snprintf(out, size, "%s", model_names[i].gguf);
            return;
        }
    int layer;
    size_t n;
    if (strncmp(ours, "layers.", 7) == 0 && (n = layer_at(ours + 7, &layer)) > 0)
        for (size_t i = 0; i < N_OF(layer_names); i++)
            if (strcmp(ours + 7 + n, layer_names[i].ours) == 0) {
                snprintf(out, size, "blk.%d.%s", layer, layer_names[i].gguf);
                return;
            }
    snprintf(out, size, "%s", ours);
}

/* What complete() reads of the file. */
typedef struct gguf_info {
    int vocab_size, d_model, n_heads, n_kv_heads, n_layers, d_ff, max_seq_len, tie, has_vocab;
    float norm_eps, rope_theta;
} gguf_info;

/* llama.KEY as an int in 1..INT_MAX (required: no default). */
static linattn_status get_dim(const linattn_gguf *g, const char *path, const char *key, int *v,
                              int required)
{
    char full[96];
    snprintf(full, sizeof full, "llama.%s", key);
    if (!required && !linattn_gguf_has(g, full))
        return LINATTN_OK;
    int64_t x;
    linattn_status st = linattn_gguf_get_int(g, full, &x);
    if (st != LINATTN_OK)
        return st;
    if (x < 1 || x > INT32_MAX)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: '%s' is %lld, not a size in 1..%d", path,
                           full, (long long)x, INT32_MAX);
    *v = (int)x;
    return LINATTN_OK;
}

static linattn_status get_float(const linattn_gguf *g, const char *key, float *v)
{
    char full[96];
    snprintf(full, sizeof full, "llama.%s", key);
    if (!linattn_gguf_has(g, full))
        return LINATTN_OK;
    linattn_gguf_type type;
    linattn_gguf_type_of(g, full, &type);
    if (type == LINATTN_GGUF_FLOAT64) {
        double d;
        linattn_status st = linattn_gguf_get_f64(g, full, &d);
        *v = (float)d;
        return st;
    }
    return linattn_gguf_get_f32(g, full, v);
}

static linattn_status read_info(const char *path, gguf_info *in)
{
    linattn_gguf *g;
    linattn_status st = linattn_gguf_open(path, &g);
    if (st != LINATTN_OK)
        return st;
    memset(in, 0, sizeof *in);
    in->norm_eps = 1e-5f;     /* llama.cpp's defaults when the keys are absent */
    in->rope_theta = 10000.0f;
    const char *arch = NULL;
    size_t len = 0;
    if ((st = linattn_gguf_get_string(g, "general.architecture", &arch, &len)) != LINATTN_OK)
        goto done;
    if (len != 5 || memcmp(arch, "llama", 5) != 0) {
        st = linattn_err(LINATTN_ERR_UNSUPPORTED,
                         "%s: general.architecture is '%.*s'; linattn runs GGUF models of "
                         "architecture 'llama'", path, (int)(len < 60 ? len : 60), arch);
        goto done;
    }
    if (linattn_gguf_n_tensors(g) == 0) {
        st = linattn_err(LINATTN_ERR_INVALID,
                         "%s: a GGUF file without tensors (a vocabulary only?); give it as "
                         "tokenizer = gguf:%s beside the weights", path, path);
        goto done;
    }
    if ((st = get_dim(g, path, "embedding_length", &in->d_model, 1)) ||
        (st = get_dim(g, path, "block_count", &in->n_layers, 1)) ||
        (st = get_dim(g, path, "feed_forward_length", &in->d_ff, 1)) ||
        (st = get_dim(g, path, "attention.head_count", &in->n_heads, 1)) ||
        (st = get_dim(g, path, "context_length", &in->max_seq_len, 1)))
        goto done;
    in->n_kv_heads = in->n_heads;
    if ((st = get_dim(g, path, "attention.head_count_kv", &in->n_kv_heads, 0)) ||
        (st = get_float(g, "attention.layer_norm_rms_epsilon", &in->norm_eps)) ||
        (st = get_float(g, "rope.freq_base", &in->rope_theta)))
        goto done;
    if (in->d_model % in->n_heads || in->n_heads % in->n_kv_heads) {
        st = linattn_err(LINATTN_ERR_FORMAT,
                         "%s: llama.embedding_length %d, attention.head_count %d and "
                         "head_count_kv %d do not divide", path, in->d_model, in->n_heads,
                         in->n_kv_heads);
        goto done;
    }
    /* what the engine has no form for: partial rotation, other head sizes */
    const int head = in->d_model / in->n_heads;
    static const char *const head_keys[] = {"rope.dimension_count", "attention.key_length",
                                            "attention.value_length"};
    for (size_t i = 0; i < N_OF(head_keys); i++) {
        int v = head;
        if ((st = get_dim(g, path, head_keys[i], &v, 0)) != LINATTN_OK)
            goto done;
        if (v != head) {
            st = linattn_err(LINATTN_ERR_UNSUPPORTED,
                             "%s: llama.%s is %d; linattn needs the head size %d "
                             "(embedding_length / head_count)", path, head_keys[i], v, head);
            goto done;
        }
    }
    if (linattn_gguf_has(g, "llama.rope.scaling.type")) {
        const char *s;
        linattn_gguf_get_string(g, "llama.rope.scaling.type", &s, &len);
        if (!(len == 4 && memcmp(s, "none", 4) == 0)) {
            st = linattn_err(LINATTN_ERR_UNSUPPORTED,
                             "%s: llama.rope.scaling.type '%.*s' is not supported (plain RoPE "
                             "only)", path, (int)(len < 40 ? len : 40), s);
            goto done;
        }
    }
    /* the vocabulary: the embedding's rows (what the weights hold) */
    linattn_gguf_tensor emb;
    if ((st = linattn_gguf_find_tensor(g, "token_embd.weight", &emb)) != LINATTN_OK)
        goto done;
    if (emb.n_dims != 2 || emb.dims[1] < 1 || emb.dims[1] > INT32_MAX) {
        st = linattn_err(LINATTN_ERR_FORMAT, "%s: tensor 'token_embd.weight' is not a matrix "
                         "of vocabulary rows", path);
        goto done;
    }
    in->vocab_size = (int)emb.dims[1];
    if (linattn_gguf_has(g, "llama.vocab_size")) {
        int v = 0;
        if ((st = get_dim(g, path, "vocab_size", &v, 1)) != LINATTN_OK)
            goto done;
        if (v != in->vocab_size) {
            st = linattn_err(LINATTN_ERR_FORMAT,
                             "%s: llama.vocab_size %d, but token_embd.weight has %d rows", path,
                             v, in->vocab_size);
            goto done;
        }
    }
    linattn_gguf_tensor out;
    in->tie = linattn_gguf_find_tensor(g, "output.weight", &out) != LINATTN_OK;
    in->has_vocab = linattn_gguf_has(g, "tokenizer.ggml.tokens");
done:
    linattn_gguf_free(g);
    return st;
}

/* Fills c from the file's metadata as the hf source does from a
 * config.json: the shape, norm_eps and rope_theta are the file's (a key
 * that repeats one must agree), the architecture is llama's, and the
 * tokenizer is the file's own when it has one. llama.cpp's converters
 * store q and k with rotation pairs side by side (interleaved). */
static linattn_status complete(linattn_config *c, const char *path, const linattn_source_keys *o)
{
    gguf_info in;
    linattn_status st = read_info(path, &in);
    if (st != LINATTN_OK) {
        char why[600];
        snprintf(why, sizeof why, "%s", linattn_last_error());
        return linattn_source_error(o, st, "weights", "%s", why);
    }
    const int file = linattn_source_from_file(o);
#define GIVEN(k) linattn_source_given(o, k)
    if (file && !GIVEN("attention"))
        c->attention = LINATTN_ATTN_SOFTMAX;
    struct { const char *k; int *field; int value; const char *key; } shape[] = {
        {"vocab_size", &c->vocab_size, in.vocab_size, "token_embd.weight rows"},
        {"d_model", &c->d_model, in.d_model, "llama.embedding_length"},
        {"n_heads", &c->n_heads, in.n_heads, "llama.attention.head_count"},
        {"n_layers", &c->n_layers, in.n_layers, "llama.block_count"},
        {"d_ff", &c->d_ff, in.d_ff, "llama.feed_forward_length"},
    };
    for (size_t i = 0; i < N_OF(shape); i++) {
        if (!GIVEN(shape[i].k))
            *shape[i].field = shape[i].value;
        else if (*shape[i].field != shape[i].value)
            return linattn_source_error(o, LINATTN_ERR_INVALID, shape[i].k,
                                        "%d here, but %s has %s = %d", *shape[i].field, path,
                                        shape[i].key, shape[i].value);
    }
    if (file && GIVEN("tie_embeddings") && c->tie_embeddings != in.tie)
        return linattn_source_error(o, LINATTN_ERR_INVALID, "tie_embeddings",
                                    "%s here, but %s %s output.weight",
                                    c->tie_embeddings ? "true" : "false", path,
                                    in.tie ? "has no" : "has its own");
    c->tie_embeddings = in.tie;
    int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
    if (GIVEN("n_kv_heads") && kv != in.n_kv_heads)
        return linattn_source_error(o, LINATTN_ERR_INVALID, "n_kv_heads",
                                    "%d here, but %s has llama.attention.head_count_kv = %d",
                                    c->n_kv_heads, path, in.n_kv_heads);
    c->n_kv_heads = in.n_kv_heads == in.n_heads ? 0 : in.n_kv_heads;
    if (!GIVEN("max_seq_len")) {
        if (in.max_seq_len > LINATTN_MAX_SEQ_LEN)
            return linattn_source_error(o, LINATTN_ERR_INVALID, "max_seq_len",
                                        "not given, and %s's llama.context_length %d is over "
                                        "%d: give max_seq_len (the longest stream a softmax "
                                        "model keeps)", path, in.max_seq_len,
                                        LINATTN_MAX_SEQ_LEN);
        c->max_seq_len = in.max_seq_len;
    }
    struct { const char *k; float *field; float value; const char *key; } floats[] = {
        {"norm_eps", &c->norm_eps, in.norm_eps, "llama.attention.layer_norm_rms_epsilon"},
        {"rope_theta", &c->rope_theta, in.rope_theta, "llama.rope.freq_base"},
    };
    for (size_t i = 0; i < N_OF(floats); i++) {
        if (file && GIVEN(floats[i].k) && *floats[i].field != floats[i].value)
            return linattn_source_error(o, LINATTN_ERR_INVALID, floats[i].k,
                                        "%g here, but %s has %s = %g", (double)*floats[i].field,
                                        path, floats[i].key, (double)floats[i].value);
        *floats[i].field = floats[i].value;
    }
    char what[4200];
    snprintf(what, sizeof what, "a GGUF llama model (%s)", path);
    if ((st = linattn_source_llama_arch(c, o, LINATTN_ROPE_INTERLEAVED, what)) != LINATTN_OK)
        return st;
    if (!GIVEN("tokenizer") && in.has_vocab &&
        (size_t)snprintf(c->tokenizer, sizeof c->tokenizer, GGUF_PREFIX "%s", path) >=
            sizeof c->tokenizer)
        return linattn_source_error(o, LINATTN_ERR_INVALID, "weights", "path too long");
#undef GIVEN
    return LINATTN_OK;
}

/* The magic "GGUF": a file that says it is one is claimed, so that a
 * damaged one gets the reader's message. */
static int detect(const char *path, char *arg, size_t size)
{
    unsigned char head[4];
    size_t got;
    uint64_t bytes;
    if (!linattn_source_head(path, head, sizeof head, &got, &bytes) || got < 4 ||
        memcmp(head, "GGUF", 4) != 0)
        return 0;
    return (size_t)snprintf(arg, size, "%s", path) < size;
}

const linattn_source linattn_source_gguf = {
    .name = "gguf",
    .prefix = GGUF_PREFIX,
    .arg = "PATH",
    .arg_is_path = 1,
    .complete = complete,
    .open = linattn_weights_open_gguf,
    .detect = detect,
};
