/* gguf.h: a GGUF file (versions 2 and 3) read in place: metadata by key, tensor infos by name; not installed. */
#ifndef LINATTN_ENGINE_GGUF_H
#define LINATTN_ENGINE_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "linattn.h"

/* Everything in a file is checked when it is opened: the header, every
 * metadata entry (its key, type, and every string and array length
 * against the bytes left), every tensor info (name, at most 4 dimensions,
 * a known ggml type, an offset aligned and inside the data section, no
 * overlap with another tensor), no duplicate key, no duplicate tensor
 * name. What open accepts the getters can read without further checks.
 * Counts and sizes are uint64 in the file; each item takes some bytes, so
 * every table built here is smaller than the file. Little-endian files
 * only. Nested arrays are refused (the spec allows them; no writer uses
 * them and llama.cpp refuses them too). */

#define LINATTN_GGUF_MAX_DIMS 4
#define LINATTN_GGUF_DEFAULT_ALIGNMENT 32

typedef struct linattn_gguf linattn_gguf;
struct linattn_weights;

/* The metadata value types, numbered as in the file. */
typedef enum linattn_gguf_type {
    LINATTN_GGUF_UINT8 = 0,
    LINATTN_GGUF_INT8 = 1,
    LINATTN_GGUF_UINT16 = 2,
    LINATTN_GGUF_INT16 = 3,
    LINATTN_GGUF_UINT32 = 4,
    LINATTN_GGUF_INT32 = 5,
    LINATTN_GGUF_FLOAT32 = 6,
    LINATTN_GGUF_BOOL = 7,
    LINATTN_GGUF_STRING = 8,
    LINATTN_GGUF_ARRAY = 9,
    LINATTN_GGUF_UINT64 = 10,
    LINATTN_GGUF_INT64 = 11,
    LINATTN_GGUF_FLOAT64 = 12,
} linattn_gguf_type;

/* ggml tensor types, numbered as in the file (the ones readers meet;
 * linattn_gguf_ggml_type_size knows the rest of the block layouts too). */
enum {
    LINATTN_GGML_F32 = 0,
    LINATTN_GGML_F16 = 1,
    LINATTN_GGML_Q4_0 = 2,
    LINATTN_GGML_Q4_1 = 3,
    LINATTN_GGML_Q5_0 = 6,
    LINATTN_GGML_Q5_1 = 7,
    LINATTN_GGML_Q8_0 = 8,
    LINATTN_GGML_Q8_1 = 9,
    LINATTN_GGML_Q2_K = 10,
    LINATTN_GGML_Q3_K = 11,
    LINATTN_GGML_Q4_K = 12,
    LINATTN_GGML_Q5_K = 13,
    LINATTN_GGML_Q6_K = 14,
    LINATTN_GGML_Q8_K = 15,
    LINATTN_GGML_BF16 = 30,
};

/* An array value: its elements' type and count; read them with the
 * linattn_gguf_array_* getters (they may be unaligned in the file). */
typedef struct linattn_gguf_array {
    linattn_gguf_type type;   /* of the elements; never ARRAY */
    uint64_t count;
    const uint8_t *data;      /* the first element's bytes */
    const uint64_t *offsets;  /* STRING: each element's offset from data */
} linattn_gguf_array;

/* A tensor as the file describes it. dims[0] is the fastest-varying
 * (ggml's ne[0]: a matrix of `rows` rows of `cols` has dims {cols, rows}). */
typedef struct linattn_gguf_tensor {
    const char *name;         /* NUL-terminated, owned by the file object */
    int n_dims;               /* 0..4 (0: a scalar, one element) */
    uint64_t dims[LINATTN_GGUF_MAX_DIMS]; /* unused ones are 1 */
    uint32_t type;            /* ggml type (LINATTN_GGML_*) */
    uint64_t n_elements;
    uint64_t offset;          /* in the data section (a multiple of the alignment) */
    uint64_t bytes;           /* from the type's block layout */
    const void *data;         /* into the map: data section + offset */
} linattn_gguf_tensor;

/* Maps path read-only and checks all of it (see above). LINATTN_ERR_IO when
 * it cannot be opened or mapped, LINATTN_ERR_FORMAT naming the file and
 * the key or tensor otherwise; LINATTN_ERR_NOMEM. */
linattn_status linattn_gguf_open(const char *path, linattn_gguf **out);
/* The same over bytes[size], which must outlive the object; name is used
 * in messages ("GGUF in memory" when NULL). */
linattn_status linattn_gguf_open_mem(const void *bytes, size_t size, const char *name,
                                     linattn_gguf **out);
void linattn_gguf_free(linattn_gguf *g);

uint32_t linattn_gguf_version(const linattn_gguf *g);
/* general.alignment, or 32 without it. */
uint32_t linattn_gguf_alignment(const linattn_gguf *g);
/* The data section: its offset in the file, its first byte, its size in bytes. */
uint64_t linattn_gguf_data_offset(const linattn_gguf *g);
const uint8_t *linattn_gguf_data(const linattn_gguf *g);
uint64_t linattn_gguf_data_size(const linattn_gguf *g);

/* ---- metadata ------------------------------------------------------------- */

/* Entries in file order, for listing: key and type of entry i < n_kv. */
size_t linattn_gguf_n_kv(const linattn_gguf *g);
const char *linattn_gguf_kv_key(const linattn_gguf *g, size_t i);
linattn_gguf_type linattn_gguf_kv_type(const linattn_gguf *g, size_t i);
/* The bytes of entry i's value as the file holds them (after its type:
 * a string's length, an array's element type and count, then the data),
 * for copying it into another file. */
void linattn_gguf_kv_raw(const linattn_gguf *g, size_t i, const uint8_t **p, size_t *n);
/* Whether the key is present; and its type (LINATTN_ERR_FORMAT naming it if absent). */
int linattn_gguf_has(const linattn_gguf *g, const char *key);
linattn_status linattn_gguf_type_of(const linattn_gguf *g, const char *key,
                                    linattn_gguf_type *type);

/* Typed getters: the value when the key is there with exactly that type;
 * otherwise LINATTN_ERR_FORMAT naming the file and the key and saying
 * what it is ("'llama.block_count' is a string, not uint32"), *v unchanged. */
linattn_status linattn_gguf_get_u8(const linattn_gguf *g, const char *key, uint8_t *v);
linattn_status linattn_gguf_get_i8(const linattn_gguf *g, const char *key, int8_t *v);
linattn_status linattn_gguf_get_u16(const linattn_gguf *g, const char *key, uint16_t *v);
linattn_status linattn_gguf_get_i16(const linattn_gguf *g, const char *key, int16_t *v);
linattn_status linattn_gguf_get_u32(const linattn_gguf *g, const char *key, uint32_t *v);
linattn_status linattn_gguf_get_i32(const linattn_gguf *g, const char *key, int32_t *v);
linattn_status linattn_gguf_get_u64(const linattn_gguf *g, const char *key, uint64_t *v);
linattn_status linattn_gguf_get_i64(const linattn_gguf *g, const char *key, int64_t *v);
linattn_status linattn_gguf_get_f32(const linattn_gguf *g, const char *key, float *v);
linattn_status linattn_gguf_get_f64(const linattn_gguf *g, const char *key, double *v);
linattn_status linattn_gguf_get_bool(const linattn_gguf *g, const char *key, int *v);
/* Any integer type whose value fits int64 (writers differ on u32/i32/u64). */
linattn_status linattn_gguf_get_int(const linattn_gguf *g, const char *key, int64_t *v);
/* A string: its bytes in the file (not NUL-terminated; may hold any byte). */
linattn_status linattn_gguf_get_string(const linattn_gguf *g, const char *key, const char **s,
                                       size_t *len);
linattn_status linattn_gguf_get_array(const linattn_gguf *g, const char *key,
                                      linattn_gguf_array *a);

/* Element i < a->count of an array: an integer (any integer type or bool),
 * a float (FLOAT32 or FLOAT64), a string. LINATTN_ERR_INVALID for an index
 * out of range or an element of another type. */
linattn_status linattn_gguf_array_int(const linattn_gguf_array *a, uint64_t i, int64_t *v);
linattn_status linattn_gguf_array_float(const linattn_gguf_array *a, uint64_t i, double *v);
linattn_status linattn_gguf_array_string(const linattn_gguf_array *a, uint64_t i, const char **s,
                                         size_t *len);

/* "uint32", "string", ...; "unknown" past the table. */
const char *linattn_gguf_type_name(linattn_gguf_type type);

/* ---- tensors -------------------------------------------------------------- */

size_t linattn_gguf_n_tensors(const linattn_gguf *g);
/* Tensor i < n_tensors, in file order. */
void linattn_gguf_tensor_at(const linattn_gguf *g, size_t i, linattn_gguf_tensor *t);
/* By name; LINATTN_ERR_FORMAT naming the file and the tensor if absent. */
linattn_status linattn_gguf_find_tensor(const linattn_gguf *g, const char *name,
                                        linattn_gguf_tensor *t);

/* "Q4_K", ...; NULL for a type the reader does not know. */
const char *linattn_gguf_ggml_type_name(uint32_t type);
/* Elements per block and bytes per block of a ggml type; 0 if unknown. */
int linattn_gguf_ggml_type_size(uint32_t type, uint32_t *block, uint32_t *block_bytes);

/* ---- as a model's weights (source_gguf.c, weights.c) ------------------------ */

/* The llama architecture's tensor name as this project names it
 * ("blk.3.attn_q.weight" -> "layers.3.attn.q.weight") in out[size]: 1;
 * a name the architecture does not have: 0 ("gguf:NAME" in out, for
 * messages). */
int linattn_gguf_rename(const char *gguf, char *out, size_t size);
/* The other way, for messages: "layers.3.attn.q.weight" -> "blk.3.attn_q.weight"
 * (a name without one: itself). */
void linattn_gguf_name(const char *ours, char *out, size_t size);

/* The tensors of a GGUF model under this project's names (dims reversed:
 * [rows, cols]), as stored: F32, F16, BF16 and Q8_0. A tensor of another type
 * is refused naming it and its type (LINATTN_ERR_UNSUPPORTED). */
linattn_status linattn_weights_open_gguf(const char *path, struct linattn_weights **out);

#endif
