/* llama2c.h: the header of a llama2.c checkpoint (legacy and version 1, fp32); not installed. */
#ifndef LINATTN_ENGINE_LLAMA2C_H
#define LINATTN_ENGINE_LLAMA2C_H

#include <stddef.h>
#include <stdint.h>

#include "linattn.h"

/* config weights = "llama2c:PATH" */
#define LINATTN_LLAMA2C_PREFIX "llama2c:"
#define LINATTN_LLAMA2C_PREFIX_LEN 8

/* Bytes a header needs to be read: version 1's (the legacy one is 28). */
#define LINATTN_LLAMA2C_HEADER_MAX 256

typedef struct linattn_llama2c_info {
    int version;          /* 0: legacy (7 int32), 1: "ak42" version 1 */
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared;           /* 1: the classifier is the token embedding */
    size_t header_bytes;  /* 28 or 256 */
    uint64_t file_bytes;  /* the size the file must have */
} linattn_llama2c_info;

/* Parses the header in bytes[avail] (avail >= min(file_size, 256)) of a file
 * of file_size bytes (path: for messages); checks every parameter (positive,
 * within the library's limits, dim divisible by n_heads, an even head size,
 * n_kv_heads dividing n_heads) and that the file has exactly the bytes its
 * tensors need. LINATTN_ERR_FORMAT saying why. */
linattn_status linattn_llama2c_parse(const unsigned char *bytes, size_t avail,
                                     uint64_t file_size, const char *path,
                                     linattn_llama2c_info *info);
/* The same, reading the header of the file at path (a regular file). */
linattn_status linattn_llama2c_read_info(const char *path, linattn_llama2c_info *info);
/* 1 when bytes[avail] begin like a llama2.c checkpoint: version 1's magic,
 * or a legacy header whose seven sizes are all in range (a damaged file
 * that does is still a checkpoint, for linattn_llama2c_parse to judge). */
int linattn_llama2c_looks_like(const unsigned char *bytes, size_t avail);

/* weights.c: maps the checkpoint and names its tensors as a linattn model's
 * (tok_emb.weight, layers.N.norm1/attn.q/k/v/o/norm2/ffn.gate/up/down,
 * norm_f.weight, lm_head.weight when not shared), all F32 in place. */
typedef struct linattn_weights linattn_weights;
linattn_status linattn_weights_open_llama2c(const char *path, linattn_weights **out);

#endif
