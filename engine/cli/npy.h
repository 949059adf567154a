/* npy.h: .npy arrays in and out (v1/v2 headers, <f4 or <f8 read as fp32, C order); not installed. */
#ifndef LINATTN_ENGINE_NPY_H
#define LINATTN_ENGINE_NPY_H

#include <stddef.h>

#include "linattn.h"

#define LINATTN_NPY_MAX_DIMS 8
/* The largest .npy file read: 16 GiB (4 Gi floats). */
#define LINATTN_NPY_MAX_BYTES ((size_t)1 << 34)

typedef struct linattn_npy {
    int ndim;
    size_t shape[LINATTN_NPY_MAX_DIMS];
    size_t count; /* product of shape (1 for a 0-d array) */
    float *data;  /* count floats, C order; <f8 files are converted */
} linattn_npy;

/* Reads path into a: a regular file of at most LINATTN_NPY_MAX_BYTES.
 * Errors (LINATTN_ERR_IO, LINATTN_ERR_FORMAT) name the file and what is
 * wrong; a is then empty. Free with linattn_npy_free. */
linattn_status linattn_npy_read(const char *path, linattn_npy *a);

/* Parses an in-memory .npy file (for tests and the reader). name is for messages. */
linattn_status linattn_npy_parse(const void *bytes, size_t size, const char *name,
                                 linattn_npy *a);

void linattn_npy_free(linattn_npy *a);

/* Writes a <f4 C-order array with a v1 header (at most 8 dims).
 * The file appears whole or not at all (see file.h: a temporary file beside
 * it, renamed over path; symlinks followed; devices, FIFOs and sockets are
 * refused). */
linattn_status linattn_npy_write(const char *path, const float *data, int ndim,
                                 const size_t *shape);

/* "(2, 3, 4)" into buf, for messages. */
const char *linattn_npy_shape_str(const linattn_npy *a, char *buf, size_t size);

#endif
