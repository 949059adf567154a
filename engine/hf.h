/* hf.h: Hugging Face Llama folders: config.json's shape and the tensor names; not installed. */
#ifndef LINATTN_ENGINE_HF_H
#define LINATTN_ENGINE_HF_H

#include <stddef.h>

#include "linattn.h"

/* config weights = "hf:DIR" */
#define LINATTN_HF_PREFIX "hf:"
#define LINATTN_HF_PREFIX_LEN 3

typedef struct linattn_hf_info {
    int d_model;      /* hidden_size */
    int n_layers;     /* num_hidden_layers */
    int n_heads;      /* num_attention_heads */
    int n_kv_heads;   /* num_key_value_heads (num_attention_heads when absent) */
    int d_ff;         /* intermediate_size */
    int vocab_size;
    int max_seq_len;  /* max_position_embeddings, >= 1 (no upper limit checked here) */
    float norm_eps;   /* rms_norm_eps */
    float rope_theta; /* 10000 when absent */
    int tie;          /* tie_word_embeddings, 0 when absent */
    int window;       /* sliding_window (mistral), 0 when absent or null */
} linattn_hf_info;

/* Reads and checks DIR/config.json: a Llama model (model_type llama, or
 * mistral, whose sliding_window becomes the window), silu, no biases, no rope_scaling,
 * head_dim (when given) hidden_size / num_attention_heads, every size
 * within the library's limits, an even head size, num_key_value_heads
 * dividing num_attention_heads. LINATTN_ERR_IO when the file cannot be
 * read, LINATTN_ERR_FORMAT "DIR/config.json: why" otherwise. */
linattn_status linattn_hf_read_info(const char *dir, linattn_hf_info *info);
/* The same checks on config.json's text[len] (path: for messages). */
linattn_status linattn_hf_parse_info(const char *text, size_t len, const char *path,
                                     linattn_hf_info *info);

/* The name a Hugging Face tensor has in this project: 1 with it in out
 * (model.layers.N.self_attn.q_proj.weight -> layers.N.attn.q.weight, ...),
 * 0 for a buffer to leave out (rotary_emb.inv_freq), -1 for a name it does
 * not know (out: "hf:" and the name, which no tensor the model asks for
 * has). out holds at least 256 bytes; longer names are unknown. */
int linattn_hf_rename(const char *hf, char *out, size_t size);
/* The reverse, for messages: the Hugging Face name of a tensor of this
 * project (the name itself when it has none). */
void linattn_hf_name(const char *ours, char *out, size_t size);

/* weights.c: DIR/model.safetensors, or the shards that
 * DIR/model.safetensors.index.json lists, mapped as one set of tensors
 * under this project's names. */
typedef struct linattn_weights linattn_weights;
linattn_status linattn_weights_open_hf(const char *dir, linattn_weights **out);

#endif
