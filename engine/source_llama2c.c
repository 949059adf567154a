/* source_llama2c.c: weights = llama2c:PATH, a llama2.c checkpoint (engine/llama2c.c
 * reads its header, engine/weights.c maps its tensors). */
#include <stdio.h>
#include <string.h>

#include "llama2c.h"
#include "source.h"

/* Fills c from the checkpoint's header. From a file: a shape key the file
 * gives must agree with it; the others are set from it, and the
 * architecture keys left out become llama's. By hand: a shape field 0 is
 * set from the file, any other must agree, tie_embeddings is the file's;
 * the architecture is left as it is. max_seq_len may differ from the
 * file's seq_len (a KV-cache size: rope has no table). */
static linattn_status complete(linattn_config *c, const char *path, const linattn_source_keys *o)
{
    linattn_llama2c_info in;
    linattn_status st = linattn_llama2c_read_info(path, &in);
    if (st != LINATTN_OK) {
        char why[600];
        snprintf(why, sizeof why, "%s", linattn_last_error());
        return linattn_source_error(o, st, "weights", "%s", why);
    }
    const int file = linattn_source_from_file(o);
    struct { const char *k; int *field; int value; } shape[] = {
        {"vocab_size", &c->vocab_size, in.vocab_size}, {"d_model", &c->d_model, in.dim},
        {"n_heads", &c->n_heads, in.n_heads},          {"n_layers", &c->n_layers, in.n_layers},
        {"d_ff", &c->d_ff, in.hidden_dim},
        {"tie_embeddings", &c->tie_embeddings, in.shared},
    };
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        /* by hand, tie_embeddings is the file's whatever the field holds */
        int given = (file || strcmp(shape[i].k, "tie_embeddings") != 0) &&
                    linattn_source_given(o, shape[i].k);
        if (!given)
            *shape[i].field = shape[i].value;
        else if (*shape[i].field != shape[i].value)
            return linattn_source_error(o, LINATTN_ERR_INVALID, shape[i].k,
                                        "%d here, but the llama2.c checkpoint %s has %d",
                                        *shape[i].field, path, shape[i].value);
    }
    /* n_kv_heads: 0 and n_heads mean the same */
    int kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
    if (linattn_source_given(o, "n_kv_heads") && kv != in.n_kv_heads)
        return linattn_source_error(o, LINATTN_ERR_INVALID, "n_kv_heads",
                                    "%d here, but the llama2.c checkpoint %s has %d",
                                    c->n_kv_heads, path, in.n_kv_heads);
    c->n_kv_heads = in.n_kv_heads == in.n_heads ? 0 : in.n_kv_heads;
    if (!linattn_source_given(o, "max_seq_len"))
        c->max_seq_len = in.seq_len;
    if (file) {
        /* a llama2.c model is trained with softmax attention; the config
         * may ask for another kind on purpose (a linearized conversion) */
        if (!linattn_source_given(o, "attention"))
            c->attention = LINATTN_ATTN_SOFTMAX;
        if (!linattn_source_given(o, "norm"))
            c->norm = LINATTN_NORM_RMSNORM;
        if (!linattn_source_given(o, "ffn"))
            c->ffn = LINATTN_FFN_SWIGLU;
        if (!linattn_source_given(o, "positions"))
            c->positions = LINATTN_POS_ROPE;
        if (!linattn_source_given(o, "bias"))
            c->bias = 0;
    }
    /* llama2.c keeps its tokenizer.bin beside the checkpoint (run.c's
     * default -z): that one unless the config names another */
    if (!linattn_source_given(o, "tokenizer")) {
        char dir[4096] = ".";
        const char *slash = strrchr(path, '/');
        if (slash)
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
        linattn_source_beside(dir, "tokenizer.bin", "llama2c:", c->tokenizer,
                              sizeof c->tokenizer);
    }
    return LINATTN_OK;
}

static int detect(const char *path, char *arg, size_t size)
{
    unsigned char head[28];
    size_t got;
    uint64_t bytes;
    if (!linattn_source_head(path, head, sizeof head, &got, &bytes) ||
        !linattn_llama2c_looks_like(head, got))
        return 0;
    return (size_t)snprintf(arg, size, "%s", path) < size;
}

const linattn_source linattn_source_llama2c = {
    .name = "llama2c",
    .prefix = LINATTN_LLAMA2C_PREFIX,
    .arg = "PATH",
    .arg_is_path = 1,
    .complete = complete,
    .open = linattn_weights_open_llama2c,
    .detect = detect,
};
