/* source.h: where a model's weights come from, one interface for every
 * kind (config weights = PATH, random:SEED, llama2c:PATH, hf:DIR, gguf:PATH); not
 * installed. One file per source (source_*.c) and one row in source.c's
 * table: adding a format touches nothing else of the config or the loader. */
#ifndef LINATTN_ENGINE_SOURCE_H
#define LINATTN_ENGINE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "linattn.h"

typedef struct linattn_weights linattn_weights;

/* What a source's complete() is told of the config it fills: config.c's
 * record of where each key came from (a file's lines, or a config built by
 * hand). Keys are named as in the file ("vocab_size"). */
typedef struct linattn_source_keys linattn_source_keys;

/* 1 when the config came from a file (its keys have lines). */
int linattn_source_from_file(const linattn_source_keys *o);
/* 1 when the config gives the key: from a file, the key is written in it;
 * by hand, its field is not 0 (an empty string for text keys). */
int linattn_source_given(const linattn_source_keys *o, const char *key);
/* The error validation gives for a value of key: "FILE:LINE: [model] key
 * 'KEY': why" (no line by hand). */
linattn_status linattn_source_error(const linattn_source_keys *o, linattn_status st,
                                    const char *key, const char *fmt, ...) LINATTN_PRINTF(4, 5);
/* The name of a choice key's value as the file writes it ("rmsnorm"; a
 * boolean's "true"/"false"), "?" for a value the key does not have. */
const char *linattn_source_value_name(const char *key, int value);

typedef struct linattn_source {
    const char *name;   /* for messages: "safetensors", "random", "llama2c", "hf", "gguf" */
    const char *prefix; /* of the weights value ("llama2c:"); NULL: a path as it is */
    const char *arg;    /* what follows the prefix, in messages: "SEED", "PATH", "DIR" */
    int arg_is_path;    /* the arg is a path, resolved from the config's folder */
    /* NULL, or a message (a static string) when arg is not one this source takes */
    const char *(*check_arg)(const char *arg);
    /* NULL (the config gives the shape), or fills c's shape and architecture
     * from the source's own files: a key the config gives must agree with
     * them; with no tokenizer given, the source's own when it has one */
    linattn_status (*complete)(linattn_config *c, const char *arg, const linattn_source_keys *o);
    /* NULL (random: the loader draws the weights), or opens the tensors
     * under this project's names */
    linattn_status (*open)(const char *arg, linattn_weights **out);
    /* NULL (named only by its prefix), or 1 when the file or folder at path
     * is this source's by its contents (a model given alone: `-m PATH`),
     * with what follows the prefix in arg[size] (a Hugging Face file's
     * folder, say); 0 when it is not. A damaged file of the source's kind
     * is still claimed, so that complete() says what is wrong with it. */
    int (*detect)(const char *path, char *arg, size_t size);
} linattn_source;

extern const linattn_source linattn_source_safetensors; /* source_safetensors.c */
extern const linattn_source linattn_source_random;      /* source_random.c */
extern const linattn_source linattn_source_llama2c;     /* source_llama2c.c */
extern const linattn_source linattn_source_hf;          /* source_hf.c */
extern const linattn_source linattn_source_gguf;        /* source_gguf.c */

/* The source of a weights value, and in *arg (when not NULL) what follows
 * its prefix. Never NULL: a value without a known prefix is a path to a
 * safetensors file. */
const linattn_source *linattn_source_of(const char *weights, const char **arg);

/* The source whose detect() claims path, in the table's order, with its
 * argument in arg[size]; NULL when none does. */
const linattn_source *linattn_source_detect(const char *path, char *arg, size_t size);

/* For detect(): the first bytes of a regular file (buf[n], *got of them)
 * and its size; 0 when path is not a regular file that can be read. */
int linattn_source_head(const char *path, unsigned char *buf, size_t n, size_t *got,
                        uint64_t *size);
/* For detect() and complete(): 1 when dir/name is a regular file (and
 * then, when out is not NULL, "prefix" "dir/name" in out[size]). */
int linattn_source_beside(const char *dir, const char *name, const char *prefix, char *out,
                          size_t size);

/* For complete(): a Llama model's architecture (rmsnorm before each block,
 * SwiGLU, RoPE with the given pairing, no biases) into c. From a file, a
 * key that says otherwise is an error: "VALUE here, but WHAT has VALUE"
 * (what: "a Llama model (DIR/config.json)"); by hand the fields are set. */
linattn_status linattn_source_llama_arch(linattn_config *c, const linattn_source_keys *o,
                                         linattn_rope_pairing pairing, const char *what);

/* random:SEED's seed: 1 with it in *seed, 0 when arg is not a whole
 * unsigned decimal that fits 64 bits. */
int linattn_source_random_seed(const char *arg, uint64_t *seed);

#endif
