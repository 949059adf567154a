/* weights.c: safetensors loader: mmap, cJSON header, every entry checked, fp32 tensors by name. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "f16.h"
#include "file.h"
#include "gguf.h"
#include "../simd/quants.h"
#include "hf.h"
#include "internal.h"
#include "json.h"
#include "llama2c.h"
#include "weights.h"

/* File layout: u64 little-endian N, N bytes of JSON header (may be padded
 * with spaces), then the data; data_offsets are relative to the data. */

#define MAX_HEADER_BYTES (100u << 20)
#define MAX_JSON_INT 9007199254740992.0 /* 2^53: larger JSON numbers are not exact */

struct tensor {
    char *name;
    linattn_dtype dtype;
    int ndim;
    int64_t shape[LINATTN_WEIGHTS_MAX_DIMS];
    uint64_t n_elements;
    uint64_t begin, end;  /* bytes, relative to the data */
    const float *f32;     /* set by the first get: into the map, or `owned` */
    float *owned;
    uint16_t *owned_raw;  /* get_stored's aligned copy of unaligned F16/BF16 data */
    int used;
    int part;             /* 0: this file's data; i > 0: parts[i - 1]'s (a Hugging Face set) */
    const char *label;    /* the name in messages when not `name` (a renamed tensor) */
};

struct linattn_weights {
    char *path;
    off_t size;             /* the file's size and mtime when opened */
    struct timespec mtime;
    uint8_t *map;           /* the file's map (NULL for weights in memory) */
    size_t map_size;
    int in_memory;          /* a host's buffer: never unmapped or stat-ed */
    const uint8_t *head;    /* the 8-byte length, then the JSON header */
    const uint8_t *data;  /* map + 8 + N */
    uint64_t data_size;
    struct tensor *tensors; /* file order */
    int n_tensors;
    struct tensor **by_name; /* sorted by name */
    char **meta;          /* key, value, key, value, ... */
    int n_meta;
    linattn_weights **parts; /* a Hugging Face folder's files, whose tensors these are */
    int n_parts;
    linattn_gguf *gguf;      /* a GGUF file: it owns the map */
};

static const char *const dtype_names[] = {"F32",  "F16",  "BF16", "I8",   "Q8_0", "Q4_0",
                                          "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"};
/* 0: in blocks, not a safetensors dtype */
static const unsigned dtype_bytes[] = {4, 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0};
#define N_SAFETENSORS_DTYPES 4
/* the ggml type of each block dtype (from LINATTN_DTYPE_Q8_0 on) */
static const int dtype_ggml[] = {LINATTN_QUANT_Q8_0, LINATTN_QUANT_Q4_0, LINATTN_QUANT_Q4_1,
                                 LINATTN_QUANT_Q5_0, LINATTN_QUANT_Q5_1, LINATTN_QUANT_Q4_K,
                                 LINATTN_QUANT_Q5_K, LINATTN_QUANT_Q6_K};

int linattn_dtype_quant(linattn_dtype dtype)
{
    size_t i = (size_t)dtype - LINATTN_DTYPE_Q8_0;
    return dtype >= LINATTN_DTYPE_Q8_0 && i < sizeof dtype_ggml / sizeof dtype_ggml[0]
               ? dtype_ggml[i]
               : 0;
}

size_t linattn_dtype_row_bytes(linattn_dtype dtype, size_t cols)
{
    size_t be, bb;
    if (linattn_quant_block(linattn_dtype_quant(dtype), &be, &bb))
        return cols / be * bb;
    return cols * ((unsigned)dtype < N_SAFETENSORS_DTYPES ? dtype_bytes[dtype] : 4);
}
_Static_assert(sizeof dtype_names / sizeof dtype_names[0] == LINATTN_DTYPE_Q6_K + 1,
               "a name for every dtype");
#define N_DTYPES (sizeof dtype_names / sizeof dtype_names[0])

const char *linattn_dtype_name(linattn_dtype dtype)
{
    if ((unsigned)dtype < sizeof dtype_names / sizeof dtype_names[0])
        return dtype_names[dtype];
    return "unknown";
}

/* "[32, 64]" */
static void format_shape(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}


static int is_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* a * b, or 0 on overflow of uint64. */
static int mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

/* A JSON number that is an exact integer in [0, 2^53]. */
static int json_uint(const cJSON *item, uint64_t *out)
{
    if (!cJSON_IsNumber(item))
        return 0;
    double v = item->valuedouble;
    if (!(v >= 0 && v <= MAX_JSON_INT) || v != floor(v))
        return 0;
    *out = (uint64_t)v;
    return 1;
}

void linattn_weights_close(linattn_weights *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->n_tensors; i++) {
        mem_free(w->tensors[i].name);
        mem_free(w->tensors[i].owned);
        mem_free(w->tensors[i].owned_raw);
    }
    for (int i = 0; i < w->n_parts; i++)
        linattn_weights_close(w->parts[i]);
    mem_free(w->parts);
    for (int i = 0; i < 2 * w->n_meta; i++)
        mem_free(w->meta[i]);
    mem_free(w->meta);
    mem_free(w->tensors);
    mem_free(w->by_name);
    if (w->map)
        munmap(w->map, w->map_size);
    linattn_gguf_free(w->gguf);
    mem_free(w->path);
    mem_free(w);
}

/* Fills t from a header entry; errors name the tensor. */
static linattn_status parse_entry(const linattn_weights *w, const cJSON *entry, struct tensor *t)
{
    const char *name = t->name;
    if (!cJSON_IsObject(entry))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s': entry is not an object",
                           w->path, name);

    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    if (!cJSON_IsString(dtype))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s': no \"dtype\" string",
                           w->path, name);
    size_t d = 0;
    while (d < N_SAFETENSORS_DTYPES && strcmp(dtype->valuestring, dtype_names[d]) != 0)
        d++;
    if (d == N_SAFETENSORS_DTYPES)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%.200s': unsupported dtype '%.20s' (expected F32, F16, BF16 or I8)",
                           w->path, name, dtype->valuestring);
    t->dtype = (linattn_dtype)d;

    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    if (!cJSON_IsArray(shape))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s': no \"shape\" array", w->path,
                           name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > LINATTN_WEIGHTS_MAX_DIMS)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s': %d dimensions (at most %d)",
                           w->path, name, ndim, LINATTN_WEIGHTS_MAX_DIMS);
    t->ndim = ndim;
    t->n_elements = 1;
    const cJSON *dim;
    int i = 0;
    cJSON_ArrayForEach(dim, shape) {
        uint64_t v;
        if (!json_uint(dim, &v))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: tensor '%.200s': shape entry %d is not a non-negative integer",
                               w->path, name, i);
        if (!mul_u64(t->n_elements, v, &t->n_elements))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: tensor '%.200s': shape has too many elements", w->path, name);
        t->shape[i++] = (int64_t)v;
    }

    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_uint(cJSON_GetArrayItem(offsets, 0), &t->begin) ||
        !json_uint(cJSON_GetArrayItem(offsets, 1), &t->end))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%.200s': \"data_offsets\" is not [begin, end] with "
                           "non-negative integers", w->path, name);
    if (t->begin > t->end)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%.200s': data_offsets begin %llu > end %llu", w->path,
                           name, (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > w->data_size)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%.200s': data_offsets end %llu is past the end of the "
                           "data (%llu bytes)", w->path, name, (unsigned long long)t->end,
                           (unsigned long long)w->data_size);
    uint64_t bytes;
    if (!mul_u64(t->n_elements, dtype_bytes[t->dtype], &bytes))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%.200s': shape has too many elements", w->path, name);
    if (bytes != t->end - t->begin) {
        char s[128];
        format_shape(s, sizeof s, t->ndim, t->shape);
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%.200s': data_offsets span %llu bytes, but %s %s needs "
                           "%llu", w->path, name, (unsigned long long)(t->end - t->begin),
                           dtype_names[t->dtype], s, (unsigned long long)bytes);
    }
    if (t->n_elements > SIZE_MAX / sizeof(float))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s': too large for this machine",
                           w->path, name);
    return LINATTN_OK;
}

static linattn_status parse_metadata(linattn_weights *w, const cJSON *meta)
{
    if (!cJSON_IsObject(meta))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: \"__metadata__\" is not an object", w->path);
    int n = cJSON_GetArraySize(meta);
    w->meta = mem_calloc((size_t)n * 2 + 1, sizeof *w->meta);
    if (!w->meta)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
    const cJSON *item;
    cJSON_ArrayForEach(item, meta) {
        if (!cJSON_IsString(item))
            return linattn_err(LINATTN_ERR_FORMAT, "%s: metadata '%.200s' is not a string",
                               w->path, item->string);
        w->meta[2 * w->n_meta] = mem_strdup(item->string);
        w->meta[2 * w->n_meta + 1] = mem_strdup(item->valuestring);
        w->n_meta++;
        if (!w->meta[2 * w->n_meta - 2] || !w->meta[2 * w->n_meta - 1])
            return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
    }
    return LINATTN_OK;
}

/* The tensor's name in messages, and the file it is in. */
static const char *label(const struct tensor *t)
{
    return t->label ? t->label : t->name;
}

static const char *file_of(const linattn_weights *w, const struct tensor *t)
{
    return t->part ? w->parts[t->part - 1]->path : w->path;
}

static int by_name_cmp(const void *a, const void *b)
{
    const struct tensor *x = *(const struct tensor *const *)a, *y = *(const struct tensor *const *)b;
    return strcmp(x->name, y->name);
}

static int by_begin_cmp(const void *a, const void *b)
{
    const struct tensor *x = *(const struct tensor *const *)a, *y = *(const struct tensor *const *)b;
    if (x->part != y->part)
        return x->part < y->part ? -1 : 1;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Sorts the name index; refuses duplicate names and tensors sharing bytes. */
static linattn_status check_layout(linattn_weights *w)
{
    size_t n = (size_t)w->n_tensors;
    struct tensor **by_begin = mem_alloc((n ? n : 1) * sizeof *by_begin);
    w->by_name = mem_alloc((n ? n : 1) * sizeof *w->by_name);
    if (!by_begin || !w->by_name) {
        mem_free(by_begin);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
    }
    for (size_t i = 0; i < n; i++)
        w->by_name[i] = by_begin[i] = &w->tensors[i];
    qsort(w->by_name, n, sizeof *w->by_name, by_name_cmp);
    qsort(by_begin, n, sizeof *by_begin, by_begin_cmp);

    linattn_status st = LINATTN_OK;
    for (size_t i = 1; i < n && st == LINATTN_OK; i++)
        if (strcmp(w->by_name[i - 1]->name, w->by_name[i]->name) == 0)
            st = linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s' appears twice", w->path,
                             label(w->by_name[i]));
    /* Sorted by file, then begin, a tensor overlaps some earlier one iff it
     * overlaps the last non-empty one before it in its file (empty tensors
     * own no bytes). */
    const struct tensor *last = NULL;
    for (size_t i = 0; i < n && st == LINATTN_OK; i++) {
        const struct tensor *t = by_begin[i];
        if (last && last->part != t->part)
            last = NULL;
        if (t->begin == t->end)
            continue;
        if (last && t->begin < last->end)
            st = linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s' overlaps tensor '%.200s'",
                             w->path, t->name, last->name);
        last = t;
    }
    mem_free(by_begin);
    return st;
}

static linattn_status parse_header(linattn_weights *w, uint64_t header_len)
{
    /* A NUL-terminated copy: cJSON then never reads past it, whatever the bytes. */
    char *text = mem_alloc((size_t)header_len + 1);
    if (!text)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
    memcpy(text, w->head + 8, (size_t)header_len);
    text[header_len] = '\0';

    /* the strict reader: nothing after the value, no tensor named twice */
    size_t label_size = strlen(w->path) + sizeof ": header";
    char *label = mem_alloc(label_size);
    cJSON *root = NULL;
    linattn_status st = LINATTN_OK;
    if (!label) {
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
        goto done;
    }
    snprintf(label, label_size, "%s: header", w->path);
    st = json_parse_file(label, text, (size_t)header_len, 1, &root);
    mem_free(label);
    if (st != LINATTN_OK)
        goto done;

    int n = cJSON_GetArraySize(root);
    w->tensors = mem_calloc((size_t)(n ? n : 1), sizeof *w->tensors);
    if (!w->tensors) {
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
        goto done;
    }
    int seen_metadata = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (seen_metadata++) {
                st = linattn_err(LINATTN_ERR_FORMAT, "%s: \"__metadata__\" appears twice",
                                 w->path);
                goto done;
            }
            if ((st = parse_metadata(w, item)) != LINATTN_OK)
                goto done;
            continue;
        }
        struct tensor *t = &w->tensors[w->n_tensors];
        t->name = mem_strdup(item->string);
        if (!t->name) {
            st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
            goto done;
        }
        w->n_tensors++;
        if ((st = parse_entry(w, item, t)) != LINATTN_OK)
            goto done;
    }
    st = check_layout(w);
done:
    cJSON_Delete(root);
    mem_free(text);
    return st;
}

static linattn_status parse_bytes(linattn_weights *w, const uint8_t *bytes, uint64_t size);

linattn_status linattn_weights_open(const char *path, linattn_weights **out)
{
    if (!path || !out)
        return linattn_err(LINATTN_ERR_INVALID, "weights: NULL argument");
    *out = NULL;
    linattn_weights *w = mem_calloc(1, sizeof *w);
    if (!w || !(w->path = mem_strdup(path))) {
        mem_free(w);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    }

    int fd;
    size_t fsize;
    linattn_status st = safe_open_read(path, "weights file", SIZE_MAX, &fd, &fsize);
    if (st != LINATTN_OK)
        goto fail;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = linattn_err(LINATTN_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        goto fail;
    }
    w->size = sb.st_size;
    w->mtime = sb.st_mtim;
    uint64_t size = (uint64_t)sb.st_size;
    if (size < 8) {
        st = linattn_err(LINATTN_ERR_FORMAT,
                         "%s: %llu bytes, too short for a safetensors file (8-byte header length)",
                         path, (unsigned long long)size);
        close(fd);
        goto fail;
    }
    if (size > SIZE_MAX) {
        st = linattn_err(LINATTN_ERR_IO, "%s: too large to map", path);
        close(fd);
        goto fail;
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        st = linattn_err(LINATTN_ERR_IO, "%s: cannot map: %s", path, strerror(map_errno));
        goto fail;
    }
    w->map = map;
    w->map_size = (size_t)size;
    if ((st = parse_bytes(w, w->map, size)) != LINATTN_OK)
        goto fail;
    *out = w;
    return LINATTN_OK;
fail:
    linattn_weights_close(w);
    return st;
}

linattn_status linattn_weights_open_mem(const void *bytes, size_t size, const char *name,
                                        linattn_weights **out)
{
    if (!bytes || !out)
        return linattn_err(LINATTN_ERR_INVALID, "weights: NULL argument");
    *out = NULL;
    linattn_weights *w = mem_calloc(1, sizeof *w);
    if (!w || !(w->path = mem_strdup(name && *name ? name : "weights in memory"))) {
        mem_free(w);
        return linattn_err(LINATTN_ERR_NOMEM, "weights: out of memory");
    }
    w->in_memory = 1;
    linattn_status st;
    if (size < 8)
        st = linattn_err(LINATTN_ERR_FORMAT,
                         "%s: %zu bytes, too short for safetensors (8-byte header length)",
                         w->path, size);
    else
        st = parse_bytes(w, bytes, size);
    if (st != LINATTN_OK) {
        linattn_weights_close(w);
        return st;
    }
    *out = w;
    return LINATTN_OK;
}

/* The header of safetensors bytes[size] (size >= 8), and where the data is. */
static linattn_status parse_bytes(linattn_weights *w, const uint8_t *bytes, uint64_t size)
{
    const char *path = w->path;
    linattn_status st;
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--)
        header_len = header_len << 8 | bytes[i];
    if (header_len > size - 8)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: header length %llu runs past the end of the file (%llu bytes)",
                           path, (unsigned long long)header_len, (unsigned long long)size);
    if (header_len > MAX_HEADER_BYTES)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: header length %llu is over the %u-byte limit",
                           path, (unsigned long long)header_len, MAX_HEADER_BYTES);
    w->head = bytes;
    w->data = bytes + 8 + header_len;
    w->data_size = size - 8 - header_len;
    st = parse_header(w, header_len);
    return st;
}

static struct tensor *find(const linattn_weights *w, const char *name)
{
    int lo = 0, hi = w->n_tensors;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(w->by_name[mid]->name, name);
        if (c == 0)
            return w->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int linattn_weights_stored_dtype(const linattn_weights *w, const char *name)
{
    const struct tensor *t = w && name ? find(w, name) : NULL;
    return t ? (int)t->dtype : -1;
}

int linattn_weights_has(const linattn_weights *w, const char *name)
{
    return w && name && find(w, name) != NULL;
}

/* The tensor's data as fp32: into the map when possible, else a converted copy. */
static linattn_status to_f32(linattn_weights *w, struct tensor *t)
{
    static const float no_elements[1];
    const uint8_t *src = (t->part ? w->parts[t->part - 1]->data : w->data) + t->begin;
    size_t n = (size_t)t->n_elements;
    if (n == 0) {
        t->f32 = no_elements;
        return LINATTN_OK;
    }
    if (t->dtype == LINATTN_DTYPE_I8)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%.200s': int8 values only make a weight matrix (with "
                           "its _scale tensor), not this tensor", file_of(w, t), label(t));
    if (t->dtype == LINATTN_DTYPE_F32 && (uintptr_t)src % sizeof(float) == 0 &&
        is_little_endian()) {
        t->f32 = (const float *)(const void *)src;
        return LINATTN_OK;
    }
    float *dst = mem_alloc(n * sizeof *dst);
    if (!dst)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: tensor '%.200s': out of memory (%zu floats)",
                           file_of(w, t), label(t), n);
    for (size_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case LINATTN_DTYPE_F32: {
            const uint8_t *b = src + 4 * i;
            uint32_t bits = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                            (uint32_t)b[3] << 24;
            memcpy(&dst[i], &bits, sizeof bits);
            break;
        }
        case LINATTN_DTYPE_F16:
            dst[i] = linattn_f16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
            break;
        case LINATTN_DTYPE_BF16:
            dst[i] = linattn_bf16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
            break;
        case LINATTN_DTYPE_I8:
            break;
        default: { /* a block type (whole blocks: the reader checked): one block
                    * at its first element */
            size_t be, bb;
            linattn_quant_block(linattn_dtype_quant(t->dtype), &be, &bb);
            if (i % be == 0)
                linattn_quant_values(linattn_dtype_quant(t->dtype), src + i / be * bb, dst + i);
            break;
        }
        }
    }
    t->owned = dst;
    t->f32 = dst;
    return LINATTN_OK;
}

/* The tensor `name` after checking its shape; errors name the file. */
static linattn_status find_shaped(linattn_weights *w, const char *name, int ndim,
                                  const int64_t *shape, struct tensor **out)
{
    struct tensor *t = find(w, name);
    if (!t && w->parts) {
        char hf[320];
        linattn_hf_name(name, hf, sizeof hf);
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s' (%.100s here): missing",
                           w->path, hf, name);
    }
    if (!t && w->gguf) {
        char gguf[320];
        linattn_gguf_name(name, gguf, sizeof gguf);
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s' (%.100s here): missing",
                           w->path, gguf, name);
    }
    if (!t)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s': missing", w->path, name);
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    if (!same) {
        char want[128], got[128];
        format_shape(want, sizeof want, ndim, shape);
        format_shape(got, sizeof got, t->ndim, t->shape);
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%.200s': expected shape %s, got %s",
                           file_of(w, t), label(t), want, got);
    }
    *out = t;
    return LINATTN_OK;
}

linattn_status linattn_weights_get(linattn_weights *w, const char *name, int ndim,
                                   const int64_t *shape, const float **data)
{
    if (!w || !name || !data || ndim < 0 || ndim > LINATTN_WEIGHTS_MAX_DIMS ||
        (ndim > 0 && !shape))
        return linattn_err(LINATTN_ERR_INVALID, "weights_get: bad argument");
    *data = NULL;
    struct tensor *t;
    linattn_status st = find_shaped(w, name, ndim, shape, &t);
    if (st != LINATTN_OK)
        return st;
    if (!t->f32) {
        st = to_f32(w, t);
        if (st != LINATTN_OK)
            return st;
    }
    t->used = 1;
    *data = t->f32;
    return LINATTN_OK;
}

linattn_status linattn_weights_get_stored(linattn_weights *w, const char *name, int ndim,
                                          const int64_t *shape, const void **data,
                                          linattn_dtype *dtype)
{
    if (!w || !name || !data || !dtype || ndim < 0 || ndim > LINATTN_WEIGHTS_MAX_DIMS ||
        (ndim > 0 && !shape))
        return linattn_err(LINATTN_ERR_INVALID, "weights_get_stored: bad argument");
    *data = NULL;
    struct tensor *t;
    linattn_status st = find_shaped(w, name, ndim, shape, &t);
    if (st != LINATTN_OK)
        return st;
    size_t n = (size_t)t->n_elements;
    if (t->dtype == LINATTN_DTYPE_F32 || !is_little_endian() || n == 0) {
        const float *f;
        if ((st = linattn_weights_get(w, name, ndim, shape, &f)) != LINATTN_OK)
            return st;
        *data = f;
        *dtype = LINATTN_DTYPE_F32;
        return LINATTN_OK;
    }
    const uint8_t *src = (t->part ? w->parts[t->part - 1]->data : w->data) + t->begin;
    if (t->dtype == LINATTN_DTYPE_I8 || linattn_dtype_quant(t->dtype) ||
        (uintptr_t)src % sizeof(uint16_t) == 0) {
        *data = src;
    } else {
        if (!t->owned_raw) {
            if (!(t->owned_raw = mem_alloc(n * sizeof(uint16_t))))
                return linattn_err(LINATTN_ERR_NOMEM,
                                   "%s: tensor '%.200s': out of memory (%zu halfs)", w->path,
                                   t->name, n);
            memcpy(t->owned_raw, src, n * sizeof(uint16_t));
        }
        *data = t->owned_raw;
    }
    t->used = 1;
    *dtype = t->dtype;
    return LINATTN_OK;
}

size_t linattn_weights_data_bytes(const linattn_weights *w)
{
    size_t n = 0;
    for (int i = 0; w && i < w->n_tensors; i++)
        n += (size_t)(w->tensors[i].end - w->tensors[i].begin);
    return n;
}

void linattn_weights_dtypes(const linattn_weights *w, char *buf, size_t size)
{
    int seen[N_DTYPES] = {0};
    for (int i = 0; w && i < w->n_tensors; i++)
        seen[w->tensors[i].dtype] = 1;
    size_t n = 0;
    if (size)
        buf[0] = '\0';
    for (int d = 0; d < (int)N_DTYPES && n < size; d++)
        if (seen[d])
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "+" : "", dtype_names[d]);
}

linattn_status linattn_weights_check_all_used(const linattn_weights *w)
{
    if (!w)
        return linattn_err(LINATTN_ERR_INVALID, "weights_check_all_used: NULL");
    for (int i = 0; i < w->n_tensors; i++)
        if (!w->tensors[i].used)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: unexpected tensor '%.200s' (the model does not use it)",
                               file_of(w, &w->tensors[i]), label(&w->tensors[i]));
    return LINATTN_OK;
}

int linattn_weights_count(const linattn_weights *w)
{
    return w ? w->n_tensors : 0;
}

void linattn_weights_tensor(const linattn_weights *w, int i, linattn_tensor_info *info)
{
    memset(info, 0, sizeof *info);
    if (!w || i < 0 || i >= w->n_tensors)
        return;
    const struct tensor *t = &w->tensors[i];
    info->name = t->name;
    info->dtype = t->dtype;
    info->ndim = t->ndim;
    memcpy(info->shape, t->shape, sizeof info->shape);
    info->n_elements = (size_t)t->n_elements;
}

const char *linattn_weights_metadata(const linattn_weights *w, const char *key)
{
    if (!w || !key)
        return NULL;
    for (int i = 0; i < w->n_meta; i++)
        if (strcmp(w->meta[2 * i], key) == 0)
            return w->meta[2 * i + 1];
    return NULL;
}

linattn_status linattn_weights_check_unchanged(const linattn_weights *w)
{
    for (int i = 0; i < w->n_parts; i++) {
        linattn_status st = linattn_weights_check_unchanged(w->parts[i]);
        if (st != LINATTN_OK)
            return st;
    }
    if (w->in_memory || w->parts)
        return LINATTN_OK;
    struct stat sb;
    if (stat(w->path, &sb) != 0)
        return linattn_err(LINATTN_ERR_IO, "%s: weights file vanished while being loaded: %s",
                           w->path, strerror(errno));
    if (sb.st_size != w->size || sb.st_mtim.tv_sec != w->mtime.tv_sec ||
        sb.st_mtim.tv_nsec != w->mtime.tv_nsec)
        return linattn_err(LINATTN_ERR_IO,
                           "%s: weights file changed while being loaded (size %lld, now %lld); "
                           "replace weights by renaming a new file over the old one",
                           w->path, (long long)w->size, (long long)sb.st_size);
    return LINATTN_OK;
}

const char *linattn_weights_path(const linattn_weights *w)
{
    return w ? w->path : "";
}

/* ---- writing ------------------------------------------------------------ */

static size_t elements_of(const linattn_tensor_out *t)
{
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n;
}

linattn_status linattn_weights_write_mem(const linattn_tensor_out *t, int n, void **bytes,
                                         size_t *size)
{
    if (!t || n < 0 || !bytes || !size)
        return linattn_err(LINATTN_ERR_INVALID, "weights_write_mem: bad argument");
    *bytes = NULL;
    *size = 0;
    /* the header: about 120 bytes a tensor plus its name */
    size_t cap = 64, data = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].ndim < 1 || t[i].ndim > 3 || (unsigned)t[i].dtype > LINATTN_DTYPE_I8)
            return linattn_err(LINATTN_ERR_INVALID, "weights_write_mem: tensor '%.200s': bad "
                               "ndim or dtype", t[i].name);
        cap += strlen(t[i].name) + 128;
        data += elements_of(&t[i]) * dtype_bytes[t[i].dtype];
    }
    char *head = mem_alloc(cap);
    if (!head)
        return linattn_err(LINATTN_ERR_NOMEM, "weights_write_mem: out of memory");
    size_t h = 0, off = 0;
    h += (size_t)snprintf(head + h, cap - h, "{");
    for (int i = 0; i < n; i++) {
        size_t nb = elements_of(&t[i]) * dtype_bytes[t[i].dtype];
        char shape[64];
        format_shape(shape, sizeof shape, t[i].ndim, t[i].shape);
        h += (size_t)snprintf(head + h, cap - h,
                              "%s\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
                              i ? "," : "", t[i].name, dtype_names[t[i].dtype], shape, off,
                              off + nb);
        off += nb;
    }
    h += (size_t)snprintf(head + h, cap - h, "}");
    size_t hlen = (h + 7) / 8 * 8;
    uint8_t *out = malloc(8 + hlen + data + 1); /* the caller's: free() */
    if (!out) {
        mem_free(head);
        return linattn_err(LINATTN_ERR_NOMEM, "weights_write_mem: out of memory (%zu bytes)",
                           8 + hlen + data);
    }
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(out + 8, head, h);
    memset(out + 8 + h, ' ', hlen - h);
    mem_free(head);
    uint8_t *p = out + 8 + hlen;
    for (int i = 0; i < n; i++) {
        size_t ne = elements_of(&t[i]);
        for (size_t e = 0; e < ne; e++) {
            float v = t[i].data[e];
            uint32_t bits;
            memcpy(&bits, &v, sizeof bits);
            if (t[i].dtype == LINATTN_DTYPE_F16)
                bits = linattn_f32_to_f16(v);
            else if (t[i].dtype == LINATTN_DTYPE_I8) /* an integer -128..127 */
                bits = (uint32_t)(uint8_t)(int8_t)(v < -128.0f ? -128 : v > 127.0f ? 127 : (int)v);
            else if (t[i].dtype == LINATTN_DTYPE_BF16)
                bits = linattn_f32_to_bf16(v);
            for (unsigned b = 0; b < dtype_bytes[t[i].dtype]; b++)
                *p++ = (uint8_t)(bits >> (8 * b));
        }
    }
    *bytes = out;
    *size = 8 + hlen + data;
    return LINATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* llama2.c checkpoints                                                      */
/* ------------------------------------------------------------------------ */

/* Adds tensor `name` of shape rows x cols (cols 0: a vector) at byte *at of
 * the file, and moves *at past it. */
static linattn_status l2c_add(linattn_weights *w, const char *name, int64_t rows, int64_t cols,
                              uint64_t *at)
{
    struct tensor *t = &w->tensors[w->n_tensors];
    if (!(t->name = mem_strdup(name)))
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
    w->n_tensors++;
    t->dtype = LINATTN_DTYPE_F32;
    t->ndim = cols ? 2 : 1;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->n_elements = (uint64_t)rows * (uint64_t)(cols ? cols : 1);
    t->begin = *at;
    t->end = *at + 4 * t->n_elements;
    *at = t->end;
    return LINATTN_OK;
}

/* The tensor table over a mapped checkpoint of the shape in info (whose
 * file_bytes the map has: every offset below is inside it). */
static linattn_status l2c_tensors(linattn_weights *w, const linattn_llama2c_info *in)
{
    const int64_t d = in->dim, L = in->n_layers, ff = in->hidden_dim, V = in->vocab_size;
    const int64_t hs = d / in->n_heads, kvd = hs * in->n_kv_heads;
    w->tensors = mem_calloc((size_t)(11 * L + 3), sizeof *w->tensors);
    if (!w->tensors)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
    uint64_t at = in->header_bytes;
    char name[64];
    linattn_status st = LINATTN_OK;
#define ADD(r, c) (st = l2c_add(w, name, r, c, &at)) != LINATTN_OK
#define LAYERS(fmt, r, c)                                                                        \
    for (int64_t l = 0; l < L; l++) {                                                            \
        snprintf(name, sizeof name, fmt, (int)l);                                                \
        if (ADD(r, c))                                                                           \
            return st;                                                                           \
    }
#define ONE(nm, r, c)                                                                            \
    do {                                                                                         \
        snprintf(name, sizeof name, "%s", nm);                                                   \
        if (ADD(r, c))                                                                           \
            return st;                                                                           \
    } while (0)
    if (in->version == 0) { /* export.py legacy_export, run.c memory_map_weights */
        ONE("tok_emb.weight", V, d);
        LAYERS("layers.%d.norm1.weight", d, 0);
        LAYERS("layers.%d.attn.q.weight", d, d);
        LAYERS("layers.%d.attn.k.weight", kvd, d);
        LAYERS("layers.%d.attn.v.weight", kvd, d);
        LAYERS("layers.%d.attn.o.weight", d, d);
        LAYERS("layers.%d.norm2.weight", d, 0);
        LAYERS("layers.%d.ffn.gate.weight", ff, d); /* w1 */
        LAYERS("layers.%d.ffn.down.weight", d, ff); /* w2 */
        LAYERS("layers.%d.ffn.up.weight", ff, d);   /* w3 */
        ONE("norm_f.weight", d, 0);
        at += 2 * 4 * ((uint64_t)in->seq_len * (uint64_t)hs / 2); /* freq_cis_real, _imag */
    } else { /* export.py version1_export */
        LAYERS("layers.%d.norm1.weight", d, 0);
        LAYERS("layers.%d.norm2.weight", d, 0);
        ONE("norm_f.weight", d, 0);
        ONE("tok_emb.weight", V, d);
        LAYERS("layers.%d.attn.q.weight", d, d);
        LAYERS("layers.%d.attn.k.weight", kvd, d);
        LAYERS("layers.%d.attn.v.weight", kvd, d);
        LAYERS("layers.%d.attn.o.weight", d, d);
        LAYERS("layers.%d.ffn.gate.weight", ff, d);
        LAYERS("layers.%d.ffn.down.weight", d, ff);
        LAYERS("layers.%d.ffn.up.weight", ff, d);
    }
    if (!in->shared)
        ONE("lm_head.weight", V, d);
#undef ADD
#undef LAYERS
#undef ONE
    if (at != w->data_size)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensors end at byte %llu of %llu", w->path,
                           (unsigned long long)at, (unsigned long long)w->data_size);
    return check_layout(w);
}

linattn_status linattn_weights_open_llama2c(const char *path, linattn_weights **out)
{
    if (!path || !out)
        return linattn_err(LINATTN_ERR_INVALID, "weights: NULL argument");
    *out = NULL;
    linattn_weights *w = mem_calloc(1, sizeof *w);
    if (!w || !(w->path = mem_strdup(path))) {
        mem_free(w);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd;
    size_t fsize;
    struct stat sb;
    linattn_llama2c_info info;
    linattn_status st = safe_open_read(path, "llama2.c checkpoint", SIZE_MAX, &fd, &fsize);
    if (st != LINATTN_OK)
        goto fail;
    if (fstat(fd, &sb) != 0) {
        st = linattn_err(LINATTN_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        goto fail;
    }
    w->size = sb.st_size;
    w->mtime = sb.st_mtim;
    if (sb.st_size <= 0) {
        close(fd);
        st = linattn_err(LINATTN_ERR_FORMAT, "%s: empty file, not a llama2.c checkpoint", path);
        goto fail;
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        st = linattn_err(LINATTN_ERR_IO, "%s: cannot map: %s", path, strerror(map_errno));
        goto fail;
    }
    w->map = map;
    w->map_size = (size_t)sb.st_size;
    /* the header and the file's size checked before any tensor byte is read */
    size_t avail = w->map_size < LINATTN_LLAMA2C_HEADER_MAX ? w->map_size
                                                            : LINATTN_LLAMA2C_HEADER_MAX;
    if ((st = linattn_llama2c_parse(w->map, avail, (uint64_t)w->map_size, path, &info)) !=
        LINATTN_OK)
        goto fail;
    w->head = w->map;
    w->data = w->map; /* offsets from the start of the file */
    w->data_size = (uint64_t)w->map_size;
    if ((st = l2c_tensors(w, &info)) != LINATTN_OK)
        goto fail;
    *out = w;
    return LINATTN_OK;
fail:
    linattn_weights_close(w);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Hugging Face folders                                                      */
/* ------------------------------------------------------------------------ */

#define MAX_INDEX_BYTES (64u << 20)
#define INDEX_NAME "model.safetensors.index.json"

/* "dir/name" in a new buffer (mem_free), NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir), size = n + strlen(name) + 2;
    char *s = mem_alloc(size);
    if (s)
        snprintf(s, size, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
    return s;
}

/* A file the index lists: where it is first named (the weight_map
 * entry's position), then its place among the parts. */
struct shard {
    const char *name; /* points into the index's tree */
    int pos;
    int part;
};

static int shard_by_name(const void *a, const void *b)
{
    const struct shard *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* by_name holds each name once: a lookup compares names alone */
static int shard_name(const void *a, const void *b)
{
    return strcmp(((const struct shard *)a)->name, ((const struct shard *)b)->name);
}

static int shard_by_pos(const void *a, const void *b)
{
    const struct shard *x = *(const struct shard *const *)a, *y = *(const struct shard *const *)b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The files the index lists, each once, in the order of first mention
 * (names[], pointing into root), and the same sorted by name with each
 * one's part (by_name[]), *n of each; a name must be a file in the folder.
 * Sorted, not compared pairwise: an index may name millions of files (its
 * size limit allows about 2M), so this is O(T log T) in the T tensors it
 * lists, as is every lookup after it. */
static linattn_status index_files(const cJSON *root, const char *path, const char **names,
                                  struct shard *by_name, int cap, int *n)
{
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(map))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: no \"weight_map\" object", path);
    *n = 0;
    int t = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        if (!cJSON_IsString(e))
            return linattn_err(LINATTN_ERR_FORMAT, "%s: weight_map: tensor '%.200s': the file is "
                               "not a string", path, e->string);
        const char *f = e->valuestring;
        if (!f[0] || strchr(f, '/') || strcmp(f, ".") == 0 || strcmp(f, "..") == 0)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: weight_map: tensor '%.200s': '%.200s' is not a file name in "
                               "the folder", path, e->string, f);
        if (t < cap) {
            by_name[t] = (struct shard){f, t, 0};
            t++;
        }
    }
    if (t == 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: weight_map lists no tensors", path);
    qsort(by_name, (size_t)t, sizeof *by_name, shard_by_name);
    int u = 0; /* each name once, at its first mention */
    for (int i = 0; i < t; i++)
        if (u == 0 || strcmp(by_name[u - 1].name, by_name[i].name) != 0)
            by_name[u++] = by_name[i];
    struct shard **order = mem_alloc((size_t)u * sizeof *order);
    if (!order)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < u; i++)
        order[i] = &by_name[i];
    qsort(order, (size_t)u, sizeof *order, shard_by_pos);
    for (int i = 0; i < u; i++) {
        names[i] = order[i]->name;
        order[i]->part = i;
    }
    mem_free(order);
    *n = u;
    return LINATTN_OK;
}

/* Opens the named files of the folder as w's parts; with an index, every
 * tensor it lists must be in the file it names (by_name: index_files'). */
static linattn_status open_parts(linattn_weights *w, const char *dir, const char **names, int n,
                                 const cJSON *index, const struct shard *by_name,
                                 const char *index_path)
{
    if (!(w->parts = mem_calloc((size_t)n, sizeof *w->parts)))
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", dir);
    for (int i = 0; i < n; i++) {
        char *path = join(dir, names[i]);
        if (!path)
            return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", dir);
        linattn_status st = linattn_weights_open(path, &w->parts[i]);
        mem_free(path);
        if (st != LINATTN_OK) {
            if (!index)
                return st;
            char why[600];
            snprintf(why, sizeof why, "%s", linattn_last_error());
            return linattn_err(st, "%s (a shard %s lists)", why, index_path);
        }
        w->n_parts++;
    }
    if (!index)
        return LINATTN_OK;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(index, "weight_map")) {
        struct shard key = {e->valuestring, 0, 0};
        const struct shard *f = bsearch(&key, by_name, (size_t)n, sizeof *by_name, shard_name);
        if (!f) /* cannot happen: every name the map lists is in by_name */
            return linattn_err(LINATTN_ERR_FORMAT, "%s: file '%.200s' not indexed", index_path,
                               e->valuestring);
        int i = f->part;
        if (!linattn_weights_has(w->parts[i], e->string))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: tensor '%.200s' is listed in %.200s, which does not have it",
                               index_path, e->string, names[i]);
    }
    return LINATTN_OK;
}

/* The parts' tensors under this project's names (rotary buffers left out). */
static linattn_status hf_tensors(linattn_weights *w)
{
    size_t total = 0;
    for (int p = 0; p < w->n_parts; p++)
        total += (size_t)w->parts[p]->n_tensors;
    if (total > INT_MAX || !(w->tensors = mem_calloc(total ? total : 1, sizeof *w->tensors)))
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
    for (int p = 0; p < w->n_parts; p++)
        for (int i = 0; i < w->parts[p]->n_tensors; i++) {
            const struct tensor *src = &w->parts[p]->tensors[i];
            size_t size = strlen(src->name) + 64;
            char *name = mem_alloc(size);
            if (!name)
                return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", w->path);
            if (linattn_hf_rename(src->name, name, size) == 0) {
                mem_free(name);
                continue;
            }
            struct tensor *t = &w->tensors[w->n_tensors++];
            t->name = name;
            t->label = src->name;
            t->part = p + 1;
            t->dtype = src->dtype;
            t->ndim = src->ndim;
            memcpy(t->shape, src->shape, sizeof t->shape);
            t->n_elements = src->n_elements;
            t->begin = src->begin;
            t->end = src->end;
        }
    return check_layout(w);
}

linattn_status linattn_weights_open_hf(const char *dir, linattn_weights **out)
{
    if (!dir || !out)
        return linattn_err(LINATTN_ERR_INVALID, "weights: NULL argument");
    *out = NULL;
    linattn_weights *w = mem_calloc(1, sizeof *w);
    char *single = join(dir, "model.safetensors"), *index_path = join(dir, INDEX_NAME);
    char *text = NULL;
    cJSON *index = NULL;
    linattn_status st = LINATTN_OK;
    if (!w || !(w->path = mem_strdup(dir)) || !single || !index_path) {
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", dir);
        goto done;
    }
    struct stat sb;
    const char *one = "model.safetensors";
    if (stat(single, &sb) == 0) { /* as transformers: the single file first */
        st = open_parts(w, dir, &one, 1, NULL, NULL, NULL);
    } else if (stat(index_path, &sb) == 0) {
        size_t len = 0;
        if ((st = safe_read_all(index_path, INDEX_NAME, MAX_INDEX_BYTES, &text, &len)))
            goto done;
        if ((st = json_parse_file(index_path, text, len, 1, &index)))
            goto done;
        int cap = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(index, "weight_map"));
        size_t slots = (size_t)(cap > 0 ? cap : 1);
        const char **names = mem_alloc(slots * sizeof *names);
        struct shard *by_name = mem_alloc(slots * sizeof *by_name);
        int n = 0;
        if (!names || !by_name)
            st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", dir);
        else if ((st = index_files(index, index_path, names, by_name, cap, &n)) == LINATTN_OK)
            st = open_parts(w, dir, names, n, index, by_name, index_path);
        mem_free(by_name);
        mem_free(names);
    } else {
        st = linattn_err(LINATTN_ERR_IO,
                         "%s: neither model.safetensors nor %s is there (a Hugging Face model "
                         "folder in safetensors; pytorch_model.bin is not read)", dir, INDEX_NAME);
    }
    if (st == LINATTN_OK)
        st = hf_tensors(w);
done:
    cJSON_Delete(index);
    mem_free(text);
    mem_free(single);
    mem_free(index_path);
    if (st != LINATTN_OK) {
        linattn_weights_close(w);
        return st;
    }
    *out = w;
    return LINATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* GGUF files                                                                */
/* ------------------------------------------------------------------------ */

/* The GGUF types read as stored, and the dtype each is. */
static int gguf_dtype(uint32_t type, linattn_dtype *d)
{
    switch (type) {
    case LINATTN_GGML_F32: *d = LINATTN_DTYPE_F32; return 1;
    case LINATTN_GGML_F16: *d = LINATTN_DTYPE_F16; return 1;
    case LINATTN_GGML_BF16: *d = LINATTN_DTYPE_BF16; return 1;
    default:
        for (int k = LINATTN_DTYPE_Q8_0; k <= LINATTN_DTYPE_Q6_K; k++)
            if (linattn_dtype_quant((linattn_dtype)k) == (int)type) {
                *d = (linattn_dtype)k;
                return 1;
            }
        return 0;
    }
}

linattn_status linattn_weights_open_gguf(const char *path, linattn_weights **out)
{
    if (!path || !out)
        return linattn_err(LINATTN_ERR_INVALID, "weights: NULL argument");
    *out = NULL;
    linattn_weights *w = mem_calloc(1, sizeof *w);
    if (!w || !(w->path = mem_strdup(path))) {
        mem_free(w);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    }
    struct stat sb;
    linattn_status st = linattn_gguf_open(path, &w->gguf);
    if (st != LINATTN_OK)
        goto fail;
    /* the reader checked the file when it opened it; its size and time
     * then, for check_unchanged (a rename over it keeps the map intact) */
    if (stat(path, &sb) != 0) {
        st = linattn_err(LINATTN_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto fail;
    }
    w->size = sb.st_size;
    w->mtime = sb.st_mtim;
    w->data = linattn_gguf_data(w->gguf);
    w->data_size = linattn_gguf_data_size(w->gguf);
    size_t n = linattn_gguf_n_tensors(w->gguf);
    if (n > INT_MAX || !(w->tensors = mem_calloc(n ? n : 1, sizeof *w->tensors))) {
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        linattn_gguf_tensor g;
        linattn_gguf_tensor_at(w->gguf, i, &g);
        struct tensor *t = &w->tensors[w->n_tensors];
        if (!gguf_dtype(g.type, &t->dtype)) {
            const char *type = linattn_gguf_ggml_type_name(g.type);
            st = linattn_err(LINATTN_ERR_UNSUPPORTED,
                             "%s: tensor '%.200s' is %s; linattn reads GGUF tensors of type "
                             "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and "
                             "Q6_K",
                             path, g.name, type ? type : "of an unknown type");
            goto fail;
        }
        size_t size = strlen(g.name) + 64;
        if (!(t->name = mem_alloc(size))) {
            st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        w->n_tensors++;
        linattn_gguf_rename(g.name, t->name, size);
        t->label = g.name; /* owned by w->gguf */
        /* ggml's ne[0] varies fastest: ours is the last dimension */
        t->ndim = g.n_dims;
        for (int d = 0; d < g.n_dims; d++)
            t->shape[d] = (int64_t)g.dims[g.n_dims - 1 - d];
        t->n_elements = g.n_elements;
        t->begin = g.offset;
        t->end = g.offset + g.bytes;
    }
    if ((st = check_layout(w)) != LINATTN_OK)
        goto fail;
    *out = w;
    return LINATTN_OK;
fail:
    linattn_weights_close(w);
    return st;
}
