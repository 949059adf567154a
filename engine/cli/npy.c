/* npy.c: reads and writes .npy arrays for the attend command (fp32 in memory, <f4/<f8 on disk). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../file.h"
#include "../internal.h"
#include "npy.h"

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

void linattn_npy_free(linattn_npy *a)
{
    if (!a)
        return;
    mem_free(a->data);
    memset(a, 0, sizeof *a);
}

const char *linattn_npy_shape_str(const linattn_npy *a, char *buf, size_t size)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "(");
    for (int i = 0; i < a->ndim; i++)
        n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%zu", i ? ", " : "",
                              a->shape[i]);
    snprintf(buf + n, n < size ? size - n : 0, ")");
    return buf;
}

/* ------------------------------------------------------------------------ */
/* The header: a Python dict literal such as                                 */
/*   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }             */
/* ------------------------------------------------------------------------ */

typedef struct hdr_parser {
    const char *p, *end;
} hdr_parser;

static void skip_space(hdr_parser *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static int accept(hdr_parser *h, char c)
{
    skip_space(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return 1;
    }
    return 0;
}

/* A quoted string ('...' or "...") without escapes, into out. */
static int parse_string(hdr_parser *h, char *out, size_t size)
{
    skip_space(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
        return 0;
    char quote = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != quote) {
        if (*h->p == '\\' || n + 1 >= size)
            return 0;
        out[n++] = *h->p++;
    }
    if (h->p >= h->end)
        return 0;
    h->p++;
    out[n] = '\0';
    return 1;
}

static int parse_word(hdr_parser *h, const char *word)
{
    skip_space(h);
    size_t n = strlen(word);
    if ((size_t)(h->end - h->p) >= n && !memcmp(h->p, word, n)) {
        h->p += n;
        return 1;
    }
    return 0;
}

/* (d0, d1, ...) with an optional trailing comma; () is 0-d. */
static int parse_shape(hdr_parser *h, linattn_npy *a)
{
    if (!accept(h, '('))
        return 0;
    a->ndim = 0;
    for (;;) {
        if (accept(h, ')'))
            return 1;
        skip_space(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9' || a->ndim == LINATTN_NPY_MAX_DIMS)
            return 0;
        size_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
            size_t d = (size_t)(*h->p++ - '0');
            if (v > (SIZE_MAX - d) / 10)
                return 0;
            v = v * 10 + d;
        }
        if (h->p < h->end && *h->p == 'L') /* Python 2 longs */
            h->p++;
        a->shape[a->ndim++] = v;
        if (!accept(h, ',')) {
            return accept(h, ')');
        }
    }
}

static linattn_status parse_header(const char *text, size_t len, const char *name,
                                   linattn_npy *a, int *is_f8)
{
    hdr_parser h = {text, text + len};
    int have_descr = 0, have_order = 0, have_shape = 0;
    char descr[32];
    if (!accept(&h, '{'))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: npy header is not a dict", name);
    while (!accept(&h, '}')) {
        char key[32];
        if (!parse_string(&h, key, sizeof key) || !accept(&h, ':'))
            return linattn_err(LINATTN_ERR_FORMAT, "%s: malformed npy header", name);
        if ((!strcmp(key, "descr") && have_descr) || (!strcmp(key, "shape") && have_shape) ||
            (!strcmp(key, "fortran_order") && have_order))
            return linattn_err(LINATTN_ERR_FORMAT, "%s: npy header: key '%s' appears twice",
                               name, key);
        if (!strcmp(key, "descr")) {
            if (!parse_string(&h, descr, sizeof descr))
                return linattn_err(LINATTN_ERR_FORMAT, "%s: npy header: bad 'descr'", name);
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order")) {
            if (parse_word(&h, "True"))
                return linattn_err(LINATTN_ERR_FORMAT,
                                   "%s: fortran_order arrays are not supported (save in C order)",
                                   name);
            if (!parse_word(&h, "False"))
                return linattn_err(LINATTN_ERR_FORMAT, "%s: npy header: bad 'fortran_order'",
                                   name);
            have_order = 1;
        } else if (!strcmp(key, "shape")) {
            if (!parse_shape(&h, a))
                return linattn_err(LINATTN_ERR_FORMAT, "%s: npy header: bad 'shape'", name);
            have_shape = 1;
        } else {
            return linattn_err(LINATTN_ERR_FORMAT, "%s: npy header: unknown key '%s'", name,
                               key);
        }
        if (!accept(&h, ',')) {
            if (!accept(&h, '}'))
                return linattn_err(LINATTN_ERR_FORMAT, "%s: malformed npy header", name);
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: npy header lacks '%s'", name,
                           !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    if (!strcmp(descr, "<f4"))
        *is_f8 = 0;
    else if (!strcmp(descr, "<f8"))
        *is_f8 = 1;
    else
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: dtype '%s' is not supported (expected <f4 or <f8)", name, descr);
    return LINATTN_OK;
}

linattn_status linattn_npy_parse(const void *bytes, size_t size, const char *name,
                                 linattn_npy *a)
{
    const unsigned char *b = bytes;
    memset(a, 0, sizeof *a);
    if (size < 10 || memcmp(b, magic, sizeof magic))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: not a .npy file (bad magic)", name);
    unsigned major = b[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        start = 10;
    } else if (major == 2) {
        if (size < 12)
            return linattn_err(LINATTN_ERR_FORMAT, "%s: truncated npy header", name);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        start = 12;
    } else {
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: npy format version %u is not supported (expected 1 or 2)", name,
                           major);
    }
    if (hlen > size - start)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: truncated npy header", name);

    int is_f8 = 0;
    linattn_status st = parse_header((const char *)b + start, hlen, name, a, &is_f8);
    if (st != LINATTN_OK) {
        memset(a, 0, sizeof *a);
        return st;
    }
    size_t count = 1;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] && count > SIZE_MAX / 8 / a->shape[i]) {
            memset(a, 0, sizeof *a);
            return linattn_err(LINATTN_ERR_FORMAT, "%s: npy shape is too large", name);
        }
        count *= a->shape[i];
    }
    const size_t item = is_f8 ? 8 : 4, data_at = start + hlen;
    if (size - data_at != count * item) {
        memset(a, 0, sizeof *a);
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: npy data is %zu bytes, the header's shape and dtype need %zu",
                           name, size - data_at, count * item);
    }
    a->count = count;
    a->data = mem_alloc(count ? count * sizeof(float) : 1);
    if (!a->data) {
        memset(a, 0, sizeof *a);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: cannot allocate %zu floats", name, count);
    }
    const unsigned char *src = b + data_at;
    for (size_t i = 0; i < count; i++) { /* little-endian on disk, whatever the host */
        if (is_f8) {
            uint64_t u = 0;
            for (int j = 7; j >= 0; j--)
                u = u << 8 | src[i * 8 + (size_t)j];
            double d;
            memcpy(&d, &u, sizeof d);
            a->data[i] = (float)d;
        } else {
            uint32_t u = 0;
            for (int j = 3; j >= 0; j--)
                u = u << 8 | src[i * 4 + (size_t)j];
            memcpy(&a->data[i], &u, sizeof u);
        }
    }
    return LINATTN_OK;
}

linattn_status linattn_npy_read(const char *path, linattn_npy *a)
{
    memset(a, 0, sizeof *a);
    char *buf;
    size_t size;
    /* a regular file, read by its size: never a device that grows forever */
    linattn_status st = safe_read_all(path, ".npy input", LINATTN_NPY_MAX_BYTES, &buf, &size);
    if (st != LINATTN_OK)
        return st;
    st = linattn_npy_parse(buf, size, path, a);
    mem_free(buf);
    return st;
}

linattn_status linattn_npy_write(const char *path, const float *data, int ndim,
                                 const size_t *shape)
{
    if (!path || ndim < 0 || ndim > LINATTN_NPY_MAX_DIMS || (ndim && !shape))
        return linattn_err(LINATTN_ERR_INVALID, "npy write: bad arguments");
    size_t count = 1;
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int i = 0; i < ndim; i++) {
        if (shape[i] && count > SIZE_MAX / 4 / shape[i])
            return linattn_err(LINATTN_ERR_INVALID, "%s: shape too large", path);
        count *= shape[i];
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%zu%s", shape[i],
                      ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    if (count && !data)
        return linattn_err(LINATTN_ERR_INVALID, "npy write: data is NULL");

    /* magic(6) version(2) hlen(2) dict, spaces, '\n'; total a multiple of 64 */
    size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
    unsigned char head[576];
    memcpy(head, magic, 6);
    head[6] = 1;
    head[7] = 0;
    size_t hlen = total - 10;
    head[8] = (unsigned char)(hlen & 0xff);
    head[9] = (unsigned char)(hlen >> 8);
    memcpy(head + 10, dict, (size_t)n);
    memset(head + 10 + n, ' ', total - 10 - (size_t)n - 1);
    head[total - 1] = '\n';

    safe_file w;
    linattn_status st = safe_file_begin(&w, path, ".npy output");
    if (st != LINATTN_OK)
        return st;
    safe_file_write(&w, head, total);
    /* fp32 little-endian: convert in blocks on a big-endian host */
    float block[1024];
    for (size_t i = 0; i < count; i += 1024) {
        size_t m = count - i < 1024 ? count - i : 1024;
        for (size_t j = 0; j < m; j++) {
            uint32_t u;
            memcpy(&u, &data[i + j], 4);
            unsigned char le[4] = {(unsigned char)u, (unsigned char)(u >> 8),
                                   (unsigned char)(u >> 16), (unsigned char)(u >> 24)};
            memcpy(&block[j], le, 4);
        }
        safe_file_write(&w, block, m * sizeof(float));
    }
    return safe_file_commit(&w, "the .npy output");
}
