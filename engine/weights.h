/* weights.h: safetensors files, mmapped read-only, handing out tensors by name and shape: fp32, or as stored. */
#ifndef LINATTN_ENGINE_WEIGHTS_H
#define LINATTN_ENGINE_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "linattn.h"

typedef enum linattn_dtype {
    LINATTN_DTYPE_F32,
    LINATTN_DTYPE_F16,
    LINATTN_DTYPE_BF16,
    LINATTN_DTYPE_I8, /* a weight matrix's int8 values; its scales are the F32 tensor
                       * NAME_scale [rows, cols / LINATTN_Q8_GROUP] (Q8) */
    LINATTN_DTYPE_Q8_0, /* ggml's Q8_0 blocks (GGUF only): each row cols / 32 blocks
                         * of a half scale and 32 int8 (simd/q8_0.h) */
    /* ggml's other block types (GGUF only; simd/quants.h): each row of a
     * matrix whole blocks */
    LINATTN_DTYPE_Q4_0,
    LINATTN_DTYPE_Q4_1,
    LINATTN_DTYPE_Q5_0,
    LINATTN_DTYPE_Q5_1,
    LINATTN_DTYPE_Q4_K,
    LINATTN_DTYPE_Q5_K,
    LINATTN_DTYPE_Q6_K,
} linattn_dtype;

/* The ggml type number of a block-quantized dtype (Q8_0 and the others),
 * 0 for the rest. */
int linattn_dtype_quant(linattn_dtype dtype);
/* Bytes of one row of cols elements stored as dtype (cols a multiple of
 * the block for the block types). */
size_t linattn_dtype_row_bytes(linattn_dtype dtype, size_t cols);

#define LINATTN_WEIGHTS_MAX_DIMS 8

typedef struct linattn_weights linattn_weights;

typedef struct linattn_tensor_info {
    const char *name;         /* valid until close */
    linattn_dtype dtype;
    int ndim;                 /* 0..LINATTN_WEIGHTS_MAX_DIMS */
    int64_t shape[LINATTN_WEIGHTS_MAX_DIMS];
    size_t n_elements;        /* product of shape (1 for ndim 0) */
} linattn_tensor_info;

/* Maps the file read-only, parses its JSON header and checks every entry:
 * dtype F32/F16/BF16, integer shape, data_offsets inside the data and
 * matching the shape, no two tensors overlapping, no duplicate names.
 * LINATTN_ERR_IO when the file cannot be opened or mapped,
 * LINATTN_ERR_FORMAT "FILE: tensor 'NAME': why" for a malformed file.
 * Only a regular file is opened (never blocking on a FIFO). Aligned F32
 * tensors are read in place from the map, so the file must not shrink while
 * the model is loaded (the map would fault, SIGBUS): replace weights by
 * renaming a new file over the old one, which keeps the mapped copy intact. */
linattn_status linattn_weights_open(const char *path, linattn_weights **out);
/* The same over safetensors bytes a host holds (name: for messages); the
 * bytes must outlive w (aligned F32 tensors are read in place). */
linattn_status linattn_weights_open_mem(const void *bytes, size_t size, const char *name,
                                        linattn_weights **out);
void linattn_weights_close(linattn_weights *w);

/* The tensor `name` as fp32, after checking its shape is exactly
 * shape[0..ndim). F32 data aligned to 4 bytes is a pointer into the map;
 * anything else (F16, BF16, unaligned F32) is converted once into a copy
 * owned by w. Valid until close. Marks the tensor used. Errors
 * (LINATTN_ERR_FORMAT) name the file and tensor: missing, wrong shape
 * ("expected [32, 32], got [32, 16]"). Not thread-safe. */
linattn_status linattn_weights_get(linattn_weights *w, const char *name, int ndim,
                                   const int64_t *shape, const float **data);

/* The tensor `name` as the file stores it (shape checked as by get), for
 * the kernels that read F16/BF16/int8 weights: *dtype F16, BF16 or I8 with *data
 * into the map (an aligned copy owned by w when the file's offset is odd);
 * F32 tensors (and every tensor on a big-endian host) come as get gives
 * them, with *dtype F32. Valid until close. Marks the tensor used. */
linattn_status linattn_weights_get_stored(linattn_weights *w, const char *name, int ndim,
                                          const int64_t *shape, const void **data,
                                          linattn_dtype *dtype);

/* Bytes of all tensors' data as stored (the file less its header). */
size_t linattn_weights_data_bytes(const linattn_weights *w);
/* The dtypes the file's tensors have, "F16", or "F16+F32" when mixed (in
 * the order F32, F16, BF16), into buf[size]. */
void linattn_weights_dtypes(const linattn_weights *w, char *buf, size_t size);

/* One tensor to write: fp32 values stored as dtype (rounded to nearest
 * even for F16/BF16). */
typedef struct linattn_tensor_out {
    const char *name;
    int ndim; /* 1 to 3 */
    int64_t shape[3];
    const float *data;
    linattn_dtype dtype;
} linattn_tensor_out;

/* A safetensors image of t[n] in a malloc'd buffer (*bytes, *size; free
 * with free()): header padded with spaces to a multiple of 8, tensors in
 * order. For tests and the bench (F16/BF16 copies of random models). */
linattn_status linattn_weights_write_mem(const linattn_tensor_out *t, int n, void **bytes,
                                         size_t *size);

/* LINATTN_ERR_FORMAT naming the first tensor (in file order) that no get
 * asked for: "unexpected tensor 'x'". */
linattn_status linattn_weights_check_all_used(const linattn_weights *w);

/* The dtype (linattn_dtype) the file stores tensor `name` in; -1 if none. */
int linattn_weights_stored_dtype(const linattn_weights *w, const char *name);

/* 1 if the file has a tensor `name` (for optional tensors). */
int linattn_weights_has(const linattn_weights *w, const char *name);

/* Number of tensors and the i-th one in file order. */
int linattn_weights_count(const linattn_weights *w);
void linattn_weights_tensor(const linattn_weights *w, int i, linattn_tensor_info *info);

/* A string of the header's "__metadata__", NULL if absent. */
const char *linattn_weights_metadata(const linattn_weights *w, const char *key);

/* LINATTN_ERR_IO if the file's size or mtime differ from when it was
 * opened (called once the model has taken every tensor). */
linattn_status linattn_weights_check_unchanged(const linattn_weights *w);

const char *linattn_weights_path(const linattn_weights *w);

/* "F32", "F16", "BF16", "I8". */
const char *linattn_dtype_name(linattn_dtype dtype);

#endif
