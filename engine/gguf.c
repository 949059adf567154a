/* gguf.c: the GGUF reader: maps a file, checks its header, metadata and tensor infos against its size. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "file.h"
#include "gguf.h"
#include "internal.h"

/* Layout (little-endian): "GGUF", u32 version, u64 tensor count, u64
 * metadata count; the metadata entries (string key, u32 type, value);
 * the tensor infos (string name, u32 n_dims, u64 dims[n_dims], u32 ggml
 * type, u64 offset); padding to the alignment; the data section, in which
 * the offsets count. A string is a u64 length and that many bytes. */

#define HEADER_BYTES 24
#define MIN_KV_BYTES 13     /* an empty key (8), a type (4), a one-byte value */
#define MIN_TENSOR_BYTES 24 /* an empty name (8), n_dims 0 (4), type (4), offset (8) */
#define MAX_KEY_BYTES 65535 /* the spec's limits */
#define MAX_NAME_BYTES 64

struct kv {
    char *key;
    linattn_gguf_type type;
    const uint8_t *value;   /* a scalar's bytes; a string's bytes; an array's first element */
    uint64_t len;           /* STRING: its bytes; ARRAY: its count */
    linattn_gguf_type elem; /* ARRAY: the elements' type */
    uint64_t *offsets;      /* ARRAY of STRING: each element from value */
};

struct linattn_gguf {
    char *name;            /* the path, or the name of bytes in memory */
    const uint8_t *base;
    uint64_t size;
    void *map;             /* NULL for bytes in memory */
    size_t map_size;
    uint32_t version, alignment;
    struct kv *kv;         /* file order */
    size_t n_kv;
    struct kv **kv_sorted; /* by key */
    linattn_gguf_tensor *tensors; /* file order */
    size_t n_tensors;
    linattn_gguf_tensor **t_sorted; /* by name */
    uint64_t data_offset, data_size;
};

/* Bytes of one value of each type; 0 for STRING and ARRAY (variable). */
static const uint8_t value_bytes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *const value_names[] = {"uint8", "int8", "uint16", "int16", "uint32",
                                          "int32", "float32", "bool", "string", "array",
                                          "uint64", "int64", "float64"};
#define N_VALUE_TYPES (sizeof value_names / sizeof value_names[0])

/* ggml's block layouts: elements per block and bytes per block, from the
 * block structs of ggml-common.h (QK_K = 256 for the K- and IQ-quants). */
static const struct ggml_type_info {
    const char *name;
    uint32_t block, bytes;
} ggml_types[] = {
    [0] = {"F32", 1, 4},
    [1] = {"F16", 1, 2},
    [2] = {"Q4_0", 32, 18},     /* f16 d, 16 bytes of nibbles */
    [3] = {"Q4_1", 32, 20},     /* f16 d, m */
    [6] = {"Q5_0", 32, 22},     /* f16 d, 4 bytes of high bits, 16 of nibbles */
    [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},     /* f16 d, 32 int8 */
    [9] = {"Q8_1", 32, 36},     /* f16 d, s, 32 int8 */
    [10] = {"Q2_K", 256, 84},   /* 16 scales, 64 bytes of 2-bit, f16 d, dmin */
    [11] = {"Q3_K", 256, 110},  /* 32 bytes high mask, 64 of 2-bit, 12 scales, f16 d */
    [12] = {"Q4_K", 256, 144},  /* f16 d, dmin, 12 scales, 128 bytes of nibbles */
    [13] = {"Q5_K", 256, 176},  /* Q4_K and 32 bytes of high bits */
    [14] = {"Q6_K", 256, 210},  /* 128 low nibbles, 64 high 2-bit, 16 scales, f16 d */
    [15] = {"Q8_K", 256, 292},  /* f32 d, 256 int8, 16 int16 sums */
    [16] = {"IQ2_XXS", 256, 66},
    [17] = {"IQ2_XS", 256, 74},
    [18] = {"IQ3_XXS", 256, 98},
    [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18},
    [21] = {"IQ3_S", 256, 110},
    [22] = {"IQ2_S", 256, 82},
    [23] = {"IQ4_XS", 256, 136},
    [24] = {"I8", 1, 1},
    [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},
    [27] = {"I64", 1, 8},
    [28] = {"F64", 1, 8},
    [29] = {"IQ1_M", 256, 56},
    [30] = {"BF16", 1, 2},
    [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66},
    [39] = {"MXFP4", 32, 17},   /* e8m0 scale, 16 bytes of fp4 */
};
#define N_GGML_TYPES (sizeof ggml_types / sizeof ggml_types[0])

const char *linattn_gguf_type_name(linattn_gguf_type type)
{
    return (unsigned)type < N_VALUE_TYPES ? value_names[type] : "unknown";
}

const char *linattn_gguf_ggml_type_name(uint32_t type)
{
    return type < N_GGML_TYPES ? ggml_types[type].name : NULL;
}

int linattn_gguf_ggml_type_size(uint32_t type, uint32_t *block, uint32_t *block_bytes)
{
    if (type >= N_GGML_TYPES || !ggml_types[type].name)
        return 0;
    if (block)
        *block = ggml_types[type].block;
    if (block_bytes)
        *block_bytes = ggml_types[type].bytes;
    return 1;
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* a * b, or 0 when it overflows uint64. */
static int mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

/* ---- reading ------------------------------------------------------------------ */

/* Where parsing is; every read checks the bytes left first. */
typedef struct cursor {
    const uint8_t *p;
    uint64_t size, pos;
} cursor;

static int left(const cursor *c, uint64_t n)
{
    return n <= c->size - c->pos;
}

static uint32_t take_u32(cursor *c)
{
    uint32_t v = get_u32(c->p + c->pos);
    c->pos += 4;
    return v;
}

static uint64_t take_u64(cursor *c)
{
    uint64_t v = get_u64(c->p + c->pos);
    c->pos += 8;
    return v;
}

/* A key or tensor name: at most max bytes, inside the file, no NUL; a
 * NUL-terminated copy in *out. what says which ("metadata entry 3's key"). */
static linattn_status take_name(const linattn_gguf *g, cursor *c, uint64_t max, const char *what,
                                size_t index, char **out)
{
    if (!left(c, 8))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: %s %zu: truncated (its length runs past the end of the file)",
                           g->name, what, index);
    uint64_t len = take_u64(c);
    if (len > max)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: %s %zu: name of %llu bytes (at most %llu)",
                           g->name, what, index, (unsigned long long)len, (unsigned long long)max);
    if (!left(c, len))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: %s %zu: name length %llu runs past the end of the file",
                           g->name, what, index, (unsigned long long)len);
    const uint8_t *s = c->p + c->pos;
    if (len == 0 || memchr(s, 0, (size_t)len))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: %s %zu: name is %s", g->name, what, index,
                           len ? "not text (it holds a NUL byte)" : "empty");
    char *copy = mem_alloc((size_t)len + 1);
    if (!copy)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", g->name);
    memcpy(copy, s, (size_t)len);
    copy[len] = '\0';
    c->pos += len;
    *out = copy;
    return LINATTN_OK;
}

/* The bools in bytes[n] are 0 or 1 (the spec: anything else is invalid). */
static int bools_ok(const uint8_t *bytes, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (bytes[i] > 1)
            return 0;
    return 1;
}

static linattn_status parse_array(const linattn_gguf *g, cursor *c, struct kv *e)
{
    if (!left(c, 12))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: key '%.200s': array header runs past the end of the file",
                           g->name, e->key);
    uint32_t elem = take_u32(c);
    uint64_t count = take_u64(c);
    if (elem == LINATTN_GGUF_ARRAY)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: key '%.200s': nested arrays are not supported", g->name, e->key);
    if (elem >= N_VALUE_TYPES)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: key '%.200s': unknown array element type %u",
                           g->name, e->key, elem);
    e->elem = (linattn_gguf_type)elem;
    e->len = count;
    e->value = c->p + c->pos;
    /* each element takes at least this many bytes: a string its length */
    uint64_t least = elem == LINATTN_GGUF_STRING ? 8 : value_bytes[elem];
    uint64_t bytes;
    if (!mul_u64(count, least, &bytes) || !left(c, bytes))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: key '%.200s': array of %llu %s runs past the end of the file",
                           g->name, e->key, (unsigned long long)count, value_names[elem]);
    if (elem != LINATTN_GGUF_STRING) {
        if (elem == LINATTN_GGUF_BOOL && !bools_ok(e->value, count))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: key '%.200s': a bool element is neither 0 nor 1", g->name,
                               e->key);
        c->pos += bytes;
        return LINATTN_OK;
    }
    /* bytes <= the file's size, which is mapped: the table fits size_t */
    e->offsets = mem_alloc(count ? (size_t)bytes : 1);
    if (!e->offsets)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", g->name);
    uint64_t start = c->pos;
    for (uint64_t i = 0; i < count; i++) {
        if (!left(c, 8))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: key '%.200s': string %llu of %llu runs past the end of the "
                               "file", g->name, e->key, (unsigned long long)i,
                               (unsigned long long)count);
        e->offsets[i] = c->pos - start;
        uint64_t len = take_u64(c);
        if (!left(c, len))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: key '%.200s': string %llu: length %llu runs past the end of "
                               "the file", g->name, e->key, (unsigned long long)i,
                               (unsigned long long)len);
        c->pos += len;
    }
    return LINATTN_OK;
}

static linattn_status parse_value(const linattn_gguf *g, cursor *c, struct kv *e)
{
    if (!left(c, 4))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: key '%.200s': its type runs past the end of the file", g->name,
                           e->key);
    uint32_t type = take_u32(c);
    if (type >= N_VALUE_TYPES)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: key '%.200s': unknown value type %u",
                           g->name, e->key, type);
    e->type = (linattn_gguf_type)type;
    if (type == LINATTN_GGUF_ARRAY)
        return parse_array(g, c, e);
    if (type == LINATTN_GGUF_STRING) {
        if (!left(c, 8))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: key '%.200s': string length runs past the end of the file",
                               g->name, e->key);
        e->len = take_u64(c);
        if (!left(c, e->len))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: key '%.200s': string length %llu runs past the end of the "
                               "file (%llu bytes left)", g->name, e->key,
                               (unsigned long long)e->len,
                               (unsigned long long)(c->size - c->pos));
        e->value = c->p + c->pos;
        c->pos += e->len;
        return LINATTN_OK;
    }
    if (!left(c, value_bytes[type]))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: key '%.200s': %s value runs past the end of the file", g->name,
                           e->key, value_names[type]);
    e->value = c->p + c->pos;
    if (type == LINATTN_GGUF_BOOL && !bools_ok(e->value, 1))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: key '%.200s': bool value %u (0 or 1)",
                           g->name, e->key, e->value[0]);
    c->pos += value_bytes[type];
    return LINATTN_OK;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp((*(struct kv *const *)a)->key, (*(struct kv *const *)b)->key);
}

static int tensor_name_cmp(const void *a, const void *b)
{
    return strcmp((*(linattn_gguf_tensor *const *)a)->name,
                  (*(linattn_gguf_tensor *const *)b)->name);
}

static int tensor_offset_cmp(const void *a, const void *b)
{
    const linattn_gguf_tensor *x = *(linattn_gguf_tensor *const *)a;
    const linattn_gguf_tensor *y = *(linattn_gguf_tensor *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

static linattn_status parse_metadata(linattn_gguf *g, cursor *c, uint64_t n)
{
    if (n > (c->size - c->pos) / MIN_KV_BYTES)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: %llu metadata entries cannot fit in the file (%llu bytes)",
                           g->name, (unsigned long long)n, (unsigned long long)c->size);
    g->kv = mem_calloc(n ? (size_t)n : 1, sizeof *g->kv);
    g->kv_sorted = mem_alloc((n ? (size_t)n : 1) * sizeof *g->kv_sorted);
    if (!g->kv || !g->kv_sorted)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", g->name);
    for (size_t i = 0; i < n; i++) {
        struct kv *e = &g->kv[i];
        linattn_status st = take_name(g, c, MAX_KEY_BYTES, "metadata entry", i, &e->key);
        if (st != LINATTN_OK)
            return st;
        g->n_kv = i + 1;
        if ((st = parse_value(g, c, e)) != LINATTN_OK)
            return st;
        g->kv_sorted[i] = e;
    }
    qsort(g->kv_sorted, g->n_kv, sizeof *g->kv_sorted, kv_cmp);
    for (size_t i = 1; i < g->n_kv; i++)
        if (strcmp(g->kv_sorted[i - 1]->key, g->kv_sorted[i]->key) == 0)
            return linattn_err(LINATTN_ERR_FORMAT, "%s: duplicate key '%.200s'", g->name,
                               g->kv_sorted[i]->key);
    return LINATTN_OK;
}

static const struct kv *find(const linattn_gguf *g, const char *key)
{
    size_t lo = 0, hi = g->n_kv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, g->kv_sorted[mid]->key);
        if (c == 0)
            return g->kv_sorted[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static linattn_status parse_alignment(linattn_gguf *g)
{
    g->alignment = LINATTN_GGUF_DEFAULT_ALIGNMENT;
    const struct kv *e = find(g, "general.alignment");
    if (!e)
        return LINATTN_OK;
    if (e->type != LINATTN_GGUF_UINT32)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: general.alignment is %s, not uint32",
                           g->name, value_names[e->type]);
    uint32_t a = get_u32(e->value);
    if (a == 0 || (a & (a - 1)) != 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: general.alignment %u is not a power of two",
                           g->name, a);
    g->alignment = a;
    return LINATTN_OK;
}

/* "[4096, 32000]" */
static void format_dims(char *buf, size_t size, const linattn_gguf_tensor *t)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n_dims && n + 1 < size; i++) {
        int k = snprintf(buf + n, size - n, "%s%llu", i ? ", " : "[",
                         (unsigned long long)t->dims[i]);
        if (k < 0)
            return;
        n += (size_t)k;
    }
    if (n + 1 < size)
        snprintf(buf + n, size - n, "%s", t->n_dims ? "]" : "[]");
}

static linattn_status parse_tensor_info(linattn_gguf *g, cursor *c, size_t i,
                                        linattn_gguf_tensor *t)
{
    char *name = NULL;
    linattn_status st = take_name(g, c, MAX_NAME_BYTES, "tensor", i, &name);
    if (st != LINATTN_OK)
        return st;
    t->name = name;
    g->n_tensors = i + 1;
    if (!left(c, 4))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%s': its info runs past the end of the file", g->name,
                           name);
    uint32_t n_dims = take_u32(c);
    if (n_dims > LINATTN_GGUF_MAX_DIMS)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%s': %u dimensions (at most %d)",
                           g->name, name, n_dims, LINATTN_GGUF_MAX_DIMS);
    if (!left(c, 8 * (uint64_t)n_dims + 12))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%s': its info runs past the end of the file", g->name,
                           name);
    t->n_dims = (int)n_dims;
    t->n_elements = 1;
    int overflow = 0;
    for (int d = 0; d < LINATTN_GGUF_MAX_DIMS; d++) {
        t->dims[d] = d < t->n_dims ? take_u64(c) : 1;
        if (!mul_u64(t->n_elements, t->dims[d], &t->n_elements) || t->n_elements > INT64_MAX)
            overflow = 1; /* ggml counts elements in int64 */
    }
    uint32_t type = take_u32(c);
    t->type = type;
    t->offset = take_u64(c);
    if (overflow) {
        char s[128];
        format_dims(s, sizeof s, t);
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%s': dimensions %s have more than 2^63 elements",
                           g->name, name, s);
    }
    uint32_t block, block_bytes;
    if (!linattn_gguf_ggml_type_size(type, &block, &block_bytes))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%s': unknown ggml type %u", g->name,
                           name, type);
    if (t->dims[0] % block != 0)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tensor '%s': first dimension %llu is not a multiple of %s's "
                           "block of %u", g->name, name, (unsigned long long)t->dims[0],
                           ggml_types[type].name, block);
    if (!mul_u64(t->n_elements / block, block_bytes, &t->bytes))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: tensor '%s': too many bytes", g->name, name);
    return LINATTN_OK;
}

/* The tensors lie inside the data section, aligned, none over another. */
static linattn_status place_tensors(linattn_gguf *g)
{
    for (size_t i = 0; i < g->n_tensors; i++) {
        linattn_gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment != 0)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: tensor '%s': offset %llu is not a multiple of the alignment "
                               "%u", g->name, t->name, (unsigned long long)t->offset,
                               g->alignment);
        if (t->offset > g->data_size || t->bytes > g->data_size - t->offset)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: tensor '%s': %s data at offset %llu, %llu bytes, runs past "
                               "the end of the data section (%llu bytes)", g->name, t->name,
                               ggml_types[t->type].name, (unsigned long long)t->offset,
                               (unsigned long long)t->bytes, (unsigned long long)g->data_size);
        t->data = g->base + g->data_offset + t->offset;
        g->t_sorted[i] = t;
    }
    qsort(g->t_sorted, g->n_tensors, sizeof *g->t_sorted, tensor_offset_cmp);
    const linattn_gguf_tensor *prev = NULL; /* the last one holding bytes */
    for (size_t i = 0; i < g->n_tensors; i++) {
        const linattn_gguf_tensor *t = g->t_sorted[i];
        if (t->bytes == 0)
            continue;
        if (prev && t->offset < prev->offset + prev->bytes)
            return linattn_err(LINATTN_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", g->name,
                               prev->name, t->name);
        prev = t;
    }
    qsort(g->t_sorted, g->n_tensors, sizeof *g->t_sorted, tensor_name_cmp);
    for (size_t i = 1; i < g->n_tensors; i++)
        if (strcmp(g->t_sorted[i - 1]->name, g->t_sorted[i]->name) == 0)
            return linattn_err(LINATTN_ERR_FORMAT, "%s: duplicate tensor name '%s'", g->name,
                               g->t_sorted[i]->name);
    return LINATTN_OK;
}

static linattn_status parse_tensors(linattn_gguf *g, cursor *c, uint64_t n)
{
    if (n > (c->size - c->pos) / MIN_TENSOR_BYTES)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: %llu tensor infos cannot fit in the file (%llu bytes)", g->name,
                           (unsigned long long)n, (unsigned long long)c->size);
    g->tensors = mem_calloc(n ? (size_t)n : 1, sizeof *g->tensors);
    g->t_sorted = mem_alloc((n ? (size_t)n : 1) * sizeof *g->t_sorted);
    if (!g->tensors || !g->t_sorted)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", g->name);
    for (size_t i = 0; i < n; i++) {
        linattn_status st = parse_tensor_info(g, c, i, &g->tensors[i]);
        if (st != LINATTN_OK)
            return st;
    }
    /* the data section starts at the next multiple of the alignment (a
     * file without tensors may end before it) */
    uint64_t pad = (g->alignment - c->pos % g->alignment) % g->alignment;
    if (pad > c->size - c->pos) {
        if (n > 0)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: the tensor data would start at byte %llu, past the end of "
                               "the file (%llu bytes)", g->name,
                               (unsigned long long)(c->pos + pad), (unsigned long long)c->size);
        g->data_offset = c->size;
    } else {
        g->data_offset = c->pos + pad;
    }
    g->data_size = c->size - g->data_offset;
    return place_tensors(g);
}

static linattn_status parse(linattn_gguf *g)
{
    if (g->size < HEADER_BYTES)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: %llu bytes, too short for a GGUF header (%d bytes)", g->name,
                           (unsigned long long)g->size, HEADER_BYTES);
    const uint8_t *b = g->base;
    if (memcmp(b, "GGUF", 4) != 0)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: not a GGUF file (it starts with %02x %02x %02x %02x, not \"GGUF\")",
                           g->name, b[0], b[1], b[2], b[3]);
    uint32_t version = get_u32(b + 4);
    if ((version & 0xffffu) == 0 && (version >> 24 == 2 || version >> 24 == 3))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: a big-endian GGUF file (version %u byte-swapped); only "
                           "little-endian files are supported", g->name, version >> 24);
    if (version != 2 && version != 3)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: GGUF version %u is not supported (versions 2 and 3 are)",
                           g->name, version);
    g->version = version;
    cursor c = {b, g->size, 8};
    uint64_t n_tensors = take_u64(&c);
    uint64_t n_kv = take_u64(&c);
    linattn_status st = parse_metadata(g, &c, n_kv);
    if (st == LINATTN_OK)
        st = parse_alignment(g);
    if (st == LINATTN_OK)
        st = parse_tensors(g, &c, n_tensors);
    return st;
}

/* ---- opening -------------------------------------------------------------------- */

void linattn_gguf_free(linattn_gguf *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_kv; i++) {
        mem_free(g->kv[i].key);
        mem_free(g->kv[i].offsets);
    }
    for (size_t i = 0; i < g->n_tensors; i++)
        mem_free((char *)g->tensors[i].name);
    mem_free(g->kv);
    mem_free(g->kv_sorted);
    mem_free(g->tensors);
    mem_free(g->t_sorted);
    if (g->map)
        munmap(g->map, g->map_size);
    mem_free(g->name);
    mem_free(g);
}

static linattn_gguf *new_gguf(const char *name)
{
    linattn_gguf *g = mem_calloc(1, sizeof *g);
    if (g && !(g->name = mem_strdup(name))) {
        mem_free(g);
        g = NULL;
    }
    return g;
}

linattn_status linattn_gguf_open(const char *path, linattn_gguf **out)
{
    if (!path || !out)
        return linattn_err(LINATTN_ERR_INVALID, "gguf: NULL argument");
    *out = NULL;
    linattn_gguf *g = new_gguf(path);
    if (!g)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    int fd;
    size_t size;
    linattn_status st = safe_open_read(path, "GGUF file", SIZE_MAX, &fd, &size);
    if (st != LINATTN_OK) {
        linattn_gguf_free(g);
        return st;
    }
    if (size >= HEADER_BYTES) { /* a shorter one is refused by parse(), unmapped */
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            st = linattn_err(LINATTN_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
            close(fd);
            linattn_gguf_free(g);
            return st;
        }
        g->map = map;
        g->map_size = size;
        g->base = map;
    }
    close(fd);
    g->size = size;
    if ((st = parse(g)) != LINATTN_OK) {
        linattn_gguf_free(g);
        return st;
    }
    *out = g;
    return LINATTN_OK;
}

linattn_status linattn_gguf_open_mem(const void *bytes, size_t size, const char *name,
                                     linattn_gguf **out)
{
    if ((!bytes && size) || !out)
        return linattn_err(LINATTN_ERR_INVALID, "gguf: NULL argument");
    *out = NULL;
    linattn_gguf *g = new_gguf(name && *name ? name : "GGUF in memory");
    if (!g)
        return linattn_err(LINATTN_ERR_NOMEM, "gguf: out of memory");
    g->base = bytes;
    g->size = size;
    linattn_status st = parse(g);
    if (st != LINATTN_OK) {
        linattn_gguf_free(g);
        return st;
    }
    *out = g;
    return LINATTN_OK;
}

uint32_t linattn_gguf_version(const linattn_gguf *g)
{
    return g->version;
}

uint32_t linattn_gguf_alignment(const linattn_gguf *g)
{
    return g->alignment;
}

uint64_t linattn_gguf_data_offset(const linattn_gguf *g)
{
    return g->data_offset;
}

void linattn_gguf_kv_raw(const linattn_gguf *g, size_t i, const uint8_t **p, size_t *n)
{
    const struct kv *e = &g->kv[i];
    if (e->type == LINATTN_GGUF_STRING) {
        *p = e->value - 8; /* its u64 length */
        *n = 8 + (size_t)e->len;
    } else if (e->type == LINATTN_GGUF_ARRAY) {
        size_t bytes = 0;
        if (e->elem != LINATTN_GGUF_STRING)
            bytes = (size_t)e->len * value_bytes[e->elem];
        else if (e->len) {
            const uint8_t *last = e->value + e->offsets[e->len - 1];
            bytes = (size_t)(last - e->value) + 8 + (size_t)get_u64(last);
        }
        *p = e->value - 12; /* its elements' u32 type and u64 count */
        *n = 12 + bytes;
    } else {
        *p = e->value;
        *n = value_bytes[e->type];
    }
}

const uint8_t *linattn_gguf_data(const linattn_gguf *g)
{
    return g->base + g->data_offset;
}

uint64_t linattn_gguf_data_size(const linattn_gguf *g)
{
    return g->data_size;
}

/* ---- metadata ------------------------------------------------------------------- */

size_t linattn_gguf_n_kv(const linattn_gguf *g)
{
    return g->n_kv;
}

const char *linattn_gguf_kv_key(const linattn_gguf *g, size_t i)
{
    return i < g->n_kv ? g->kv[i].key : NULL;
}

linattn_gguf_type linattn_gguf_kv_type(const linattn_gguf *g, size_t i)
{
    return i < g->n_kv ? g->kv[i].type : (linattn_gguf_type)-1;
}

int linattn_gguf_has(const linattn_gguf *g, const char *key)
{
    return key && find(g, key) != NULL;
}

static linattn_status lookup(const linattn_gguf *g, const char *key, const struct kv **e)
{
    if (!key)
        return linattn_err(LINATTN_ERR_INVALID, "gguf: NULL key");
    *e = find(g, key);
    if (!*e)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: no key '%.200s'", g->name, key);
    return LINATTN_OK;
}

linattn_status linattn_gguf_type_of(const linattn_gguf *g, const char *key,
                                    linattn_gguf_type *type)
{
    const struct kv *e;
    linattn_status st = lookup(g, key, &e);
    if (st == LINATTN_OK)
        *type = e->type;
    return st;
}

/* "string", "array of uint32" */
static void describe(char *buf, size_t size, const struct kv *e)
{
    if (e->type == LINATTN_GGUF_ARRAY)
        snprintf(buf, size, "an array of %s", value_names[e->elem]);
    else
        snprintf(buf, size, "%s", value_names[e->type]);
}

/* The entry when it is there with type want. */
static linattn_status typed(const linattn_gguf *g, const char *key, linattn_gguf_type want,
                            const struct kv **out)
{
    const struct kv *e;
    linattn_status st = lookup(g, key, &e);
    if (st != LINATTN_OK)
        return st;
    if (e->type != want) {
        char is[64];
        describe(is, sizeof is, e);
        return linattn_err(LINATTN_ERR_FORMAT, "%s: '%.200s' is %s, not %s", g->name, key, is,
                           value_names[want]);
    }
    *out = e;
    return LINATTN_OK;
}

linattn_status linattn_gguf_get_u8(const linattn_gguf *g, const char *key, uint8_t *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_UINT8, &e);
    if (st == LINATTN_OK)
        *v = e->value[0];
    return st;
}

linattn_status linattn_gguf_get_i8(const linattn_gguf *g, const char *key, int8_t *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_INT8, &e);
    if (st == LINATTN_OK)
        memcpy(v, e->value, 1);
    return st;
}

linattn_status linattn_gguf_get_u16(const linattn_gguf *g, const char *key, uint16_t *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_UINT16, &e);
    if (st == LINATTN_OK)
        *v = get_u16(e->value);
    return st;
}

linattn_status linattn_gguf_get_i16(const linattn_gguf *g, const char *key, int16_t *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_INT16, &e);
    if (st == LINATTN_OK) {
        uint16_t u = get_u16(e->value);
        memcpy(v, &u, sizeof u);
    }
    return st;
}

linattn_status linattn_gguf_get_u32(const linattn_gguf *g, const char *key, uint32_t *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_UINT32, &e);
    if (st == LINATTN_OK)
        *v = get_u32(e->value);
    return st;
}

linattn_status linattn_gguf_get_i32(const linattn_gguf *g, const char *key, int32_t *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_INT32, &e);
    if (st == LINATTN_OK) {
        uint32_t u = get_u32(e->value);
        memcpy(v, &u, sizeof u);
    }
    return st;
}

linattn_status linattn_gguf_get_u64(const linattn_gguf *g, const char *key, uint64_t *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_UINT64, &e);
    if (st == LINATTN_OK)
        *v = get_u64(e->value);
    return st;
}

linattn_status linattn_gguf_get_i64(const linattn_gguf *g, const char *key, int64_t *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_INT64, &e);
    if (st == LINATTN_OK) {
        uint64_t u = get_u64(e->value);
        memcpy(v, &u, sizeof u);
    }
    return st;
}

linattn_status linattn_gguf_get_f32(const linattn_gguf *g, const char *key, float *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_FLOAT32, &e);
    if (st == LINATTN_OK) {
        uint32_t u = get_u32(e->value);
        memcpy(v, &u, sizeof u);
    }
    return st;
}

linattn_status linattn_gguf_get_f64(const linattn_gguf *g, const char *key, double *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_FLOAT64, &e);
    if (st == LINATTN_OK) {
        uint64_t u = get_u64(e->value);
        memcpy(v, &u, sizeof u);
    }
    return st;
}

linattn_status linattn_gguf_get_bool(const linattn_gguf *g, const char *key, int *v)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_BOOL, &e);
    if (st == LINATTN_OK)
        *v = e->value[0];
    return st;
}

/* An integer element of type type at p; 0 when p's type is no integer or
 * its value does not fit int64. */
static int decode_int(linattn_gguf_type type, const uint8_t *p, int64_t *v)
{
    switch (type) {
    case LINATTN_GGUF_UINT8: case LINATTN_GGUF_BOOL: *v = p[0]; return 1;
    case LINATTN_GGUF_INT8: *v = (int8_t)p[0]; return 1;
    case LINATTN_GGUF_UINT16: *v = get_u16(p); return 1;
    case LINATTN_GGUF_INT16: *v = (int16_t)get_u16(p); return 1;
    case LINATTN_GGUF_UINT32: *v = get_u32(p); return 1;
    case LINATTN_GGUF_INT32: *v = (int32_t)get_u32(p); return 1;
    case LINATTN_GGUF_UINT64:
        if (get_u64(p) > INT64_MAX)
            return 0;
        *v = (int64_t)get_u64(p);
        return 1;
    case LINATTN_GGUF_INT64: {
        uint64_t u = get_u64(p);
        memcpy(v, &u, sizeof u);
        return 1;
    }
    default: return 0;
    }
}

linattn_status linattn_gguf_get_int(const linattn_gguf *g, const char *key, int64_t *v)
{
    const struct kv *e;
    linattn_status st = lookup(g, key, &e);
    if (st != LINATTN_OK)
        return st;
    int64_t x;
    if (e->type == LINATTN_GGUF_BOOL || !decode_int(e->type, e->value, &x)) {
        char is[64];
        describe(is, sizeof is, e);
        if (e->type == LINATTN_GGUF_UINT64)
            snprintf(is, sizeof is, "uint64 %llu", (unsigned long long)get_u64(e->value));
        return linattn_err(LINATTN_ERR_FORMAT, "%s: '%.200s' is %s, not an integer up to 2^63",
                           g->name, key, is);
    }
    *v = x;
    return LINATTN_OK;
}

linattn_status linattn_gguf_get_string(const linattn_gguf *g, const char *key, const char **s,
                                       size_t *len)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_STRING, &e);
    if (st == LINATTN_OK) {
        *s = (const char *)e->value;
        *len = (size_t)e->len;
    }
    return st;
}

linattn_status linattn_gguf_get_array(const linattn_gguf *g, const char *key,
                                      linattn_gguf_array *a)
{
    const struct kv *e;
    linattn_status st = typed(g, key, LINATTN_GGUF_ARRAY, &e);
    if (st == LINATTN_OK) {
        a->type = e->elem;
        a->count = e->len;
        a->data = e->value;
        a->offsets = e->offsets;
    }
    return st;
}

static linattn_status check_index(const linattn_gguf_array *a, uint64_t i)
{
    if (i >= a->count)
        return linattn_err(LINATTN_ERR_INVALID, "gguf: array index %llu out of range (%llu)",
                           (unsigned long long)i, (unsigned long long)a->count);
    return LINATTN_OK;
}

linattn_status linattn_gguf_array_int(const linattn_gguf_array *a, uint64_t i, int64_t *v)
{
    linattn_status st = check_index(a, i);
    if (st != LINATTN_OK)
        return st;
    if (a->type == LINATTN_GGUF_STRING || a->type == LINATTN_GGUF_FLOAT32 ||
        a->type == LINATTN_GGUF_FLOAT64)
        return linattn_err(LINATTN_ERR_INVALID, "gguf: an array of %s, not of integers",
                           value_names[a->type]);
    if (!decode_int(a->type, a->data + i * value_bytes[a->type], v))
        return linattn_err(LINATTN_ERR_INVALID, "gguf: array element %llu is past 2^63",
                           (unsigned long long)i);
    return LINATTN_OK;
}

linattn_status linattn_gguf_array_float(const linattn_gguf_array *a, uint64_t i, double *v)
{
    linattn_status st = check_index(a, i);
    if (st != LINATTN_OK)
        return st;
    if (a->type == LINATTN_GGUF_FLOAT32) {
        uint32_t u = get_u32(a->data + 4 * i);
        float f;
        memcpy(&f, &u, sizeof f);
        *v = f;
    } else if (a->type == LINATTN_GGUF_FLOAT64) {
        uint64_t u = get_u64(a->data + 8 * i);
        memcpy(v, &u, sizeof u);
    } else {
        return linattn_err(LINATTN_ERR_INVALID, "gguf: an array of %s, not of floats",
                           value_names[a->type]);
    }
    return LINATTN_OK;
}

linattn_status linattn_gguf_array_string(const linattn_gguf_array *a, uint64_t i, const char **s,
                                         size_t *len)
{
    linattn_status st = check_index(a, i);
    if (st != LINATTN_OK)
        return st;
    if (a->type != LINATTN_GGUF_STRING)
        return linattn_err(LINATTN_ERR_INVALID, "gguf: an array of %s, not of strings",
                           value_names[a->type]);
    const uint8_t *p = a->data + a->offsets[i];
    *len = (size_t)get_u64(p);
    *s = (const char *)p + 8;
    return LINATTN_OK;
}

/* ---- tensors -------------------------------------------------------------------- */

size_t linattn_gguf_n_tensors(const linattn_gguf *g)
{
    return g->n_tensors;
}

void linattn_gguf_tensor_at(const linattn_gguf *g, size_t i, linattn_gguf_tensor *t)
{
    if (i < g->n_tensors)
        *t = g->tensors[i];
    else
        memset(t, 0, sizeof *t);
}

linattn_status linattn_gguf_find_tensor(const linattn_gguf *g, const char *name,
                                        linattn_gguf_tensor *t)
{
    if (!name)
        return linattn_err(LINATTN_ERR_INVALID, "gguf: NULL tensor name");
    size_t lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, g->t_sorted[mid]->name);
        if (c == 0) {
            *t = *g->t_sorted[mid];
            return LINATTN_OK;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return linattn_err(LINATTN_ERR_FORMAT, "%s: no tensor '%.200s'", g->name, name);
}
