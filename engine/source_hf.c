/* source_hf.c: weights = hf:DIR, a Hugging Face Llama or Mistral folder (engine/hf.c
 * reads its config.json, engine/weights.c maps its safetensors shards). */
#include <stdio.h>
#include <string.h>

#include <sys/stat.h>

#include "hf.h"
#include "internal.h"
#include "source.h"

/* Fills c from the folder's config.json, as the llama2c source does
 * from a checkpoint, with these differences: norm_eps and rope_theta are
 * the file's too (a key that repeats one must agree), and the architecture
 * is llama's always: a key that says otherwise is an error (from a file);
 * by hand the fields are set. With no tokenizer given, the folder's
 * tokenizer.json is the tokenizer when it is there. */
static linattn_status complete(linattn_config *c, const char *dir, const linattn_source_keys *o)
{
    linattn_hf_info in;
    linattn_status st = linattn_hf_read_info(dir, &in);
    if (st != LINATTN_OK) {
        char why[600];
        snprintf(why, sizeof why, "%s", linattn_last_error());
        return linattn_source_error(o, st, "weights", "%s", why);
    }
    const int file = linattn_source_from_file(o);
#define GIVEN(k) linattn_source_given(o, k)
    /* a Llama model is trained with softmax attention; the config may ask
     * for another kind on purpose (a linearized conversion) */
    if (file && !GIVEN("attention"))
        c->attention = LINATTN_ATTN_SOFTMAX;
    struct { const char *k; int *field; int value; const char *json; } shape[] = {
        {"vocab_size", &c->vocab_size, in.vocab_size, "vocab_size"},
        {"d_model", &c->d_model, in.d_model, "hidden_size"},
        {"n_heads", &c->n_heads, in.n_heads, "num_attention_heads"},
        {"n_layers", &c->n_layers, in.n_layers, "num_hidden_layers"},
        {"d_ff", &c->d_ff, in.d_ff, "intermediate_size"},
    };
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        if (!GIVEN(shape[i].k))
            *shape[i].field = shape[i].value;
        else if (*shape[i].field != shape[i].value)
            return linattn_source_error(o, LINATTN_ERR_INVALID, shape[i].k,
                                        "%d here, but %s/config.json has %s = %d",
                                        *shape[i].field, dir, shape[i].json, shape[i].value);
    }
    if (file && GIVEN("tie_embeddings") && c->tie_embeddings != in.tie)
        return linattn_source_error(o, LINATTN_ERR_INVALID, "tie_embeddings",
                                    "%s here, but %s/config.json has tie_word_embeddings = %s",
                                    c->tie_embeddings ? "true" : "false", dir,
                                    in.tie ? "true" : "false");
    c->tie_embeddings = in.tie;
    int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads; /* 0 and n_heads mean the same */
    if (GIVEN("n_kv_heads") && kv != in.n_kv_heads)
        return linattn_source_error(o, LINATTN_ERR_INVALID, "n_kv_heads",
                                    "%d here, but %s/config.json has num_key_value_heads = %d",
                                    c->n_kv_heads, dir, in.n_kv_heads);
    c->n_kv_heads = in.n_kv_heads == in.n_heads ? 0 : in.n_kv_heads;
    /* a sliding window (mistral) is the model's own, unless a key asks for
     * another on purpose (a hybrid conversion, say) */
    if (in.window > 0 && !GIVEN("window")) {
        /* said here, else validate would blame a key 'window' nobody wrote */
        if (c->attention == LINATTN_ATTN_LINEAR)
            return linattn_source_error(o, LINATTN_ERR_INVALID, "weights",
                                        "%s/config.json has \"sliding_window\": %d, which needs "
                                        "attention = softmax or hybrid (attention is linear "
                                        "here)", dir, in.window);
        c->window = in.window;
    }
    if (!GIVEN("max_seq_len")) {
        if (in.max_seq_len > LINATTN_MAX_SEQ_LEN)
            return linattn_source_error(o, LINATTN_ERR_INVALID, "max_seq_len",
                                        "not given, and %s/config.json's "
                                        "max_position_embeddings %d is over %d: give "
                                        "max_seq_len (the longest stream a softmax model keeps)",
                                        dir, in.max_seq_len, LINATTN_MAX_SEQ_LEN);
        c->max_seq_len = in.max_seq_len;
    }
    struct { const char *k; float *field; float value; const char *json; } floats[] = {
        {"norm_eps", &c->norm_eps, in.norm_eps, "rms_norm_eps"},
        {"rope_theta", &c->rope_theta, in.rope_theta, "rope_theta"},
    };
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        if (file && GIVEN(floats[i].k) && *floats[i].field != floats[i].value)
            return linattn_source_error(o, LINATTN_ERR_INVALID, floats[i].k,
                                        "%g here, but %s/config.json has %s = %g",
                                        (double)*floats[i].field, dir, floats[i].json,
                                        (double)floats[i].value);
        *floats[i].field = floats[i].value;
    }
    char what[4200];
    snprintf(what, sizeof what, "a Llama model (%s/config.json)", dir);
    if ((st = linattn_source_llama_arch(c, o, LINATTN_ROPE_HALF, what)) != LINATTN_OK)
        return st;
    if (!GIVEN("tokenizer")) {
        char *tok = mem_alloc(strlen(dir) + sizeof "/tokenizer.json");
        if (!tok)
            return linattn_err(LINATTN_ERR_NOMEM, "config: out of memory");
        sprintf(tok, "%s/tokenizer.json", dir);
        struct stat sb;
        if (stat(tok, &sb) == 0 && S_ISREG(sb.st_mode))
            snprintf(c->tokenizer, sizeof c->tokenizer, "%s", c->weights); /* "hf:DIR" */
        mem_free(tok);
    }
#undef GIVEN
    return LINATTN_OK;
}
/* A folder with a config.json, or a file in one (its model.safetensors,
 * the shard index, config.json itself): the folder. */
static int detect(const char *path, char *arg, size_t size)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 0;
    if (S_ISDIR(sb.st_mode))
        return linattn_source_beside(path, "config.json", "", NULL, 0) &&
               (size_t)snprintf(arg, size, "%s", path) < size;
    if (!S_ISREG(sb.st_mode))
        return 0;
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    int ours = strcmp(base, "config.json") == 0 ||
               strcmp(base, "model.safetensors.index.json") == 0 ||
               (n > 12 && strcmp(base + n - 12, ".safetensors") == 0);
    char dir[4096] = ".";
    if (slash && (size_t)snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path) >= sizeof dir)
        return 0;
    if (slash == path)
        strcpy(dir, "/");
    return ours && linattn_source_beside(dir, "config.json", "", NULL, 0) &&
           (size_t)snprintf(arg, size, "%s", dir) < size;
}

const linattn_source linattn_source_hf = {
    .name = "hf",
    .prefix = LINATTN_HF_PREFIX,
    .arg = "DIR",
    .arg_is_path = 1,
    .complete = complete,
    .open = linattn_weights_open_hf,
    .detect = detect,
};
