/* test_gguf.c: the GGUF reader on files written byte by byte here: every metadata type, tensor infos, each malformed case refused with its reason, real vocab files, the worst case's time. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "linattn.h"
#include "../engine/gguf.h"
#include "../engine/mem.h"
#include "../engine/f16.h"
#include "../engine/weights.h"
#include "../simd/quants.h"
#include "testutil.h"

TestSuite(gguf, .init = tu_make_dir, .fini = tu_remove_dir);

/* ---- a little GGUF writer ------------------------------------------------------
 * Little-endian hosts only (as the reader's callers): values are copied as
 * they are in memory. */

typedef struct gw {
    unsigned char *p;
    size_t n, cap;
} gw;

static void put(gw *w, const void *src, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 64;
        w->p = realloc(w->p, w->cap);
        cr_assert(w->p);
    }
    memcpy(w->p + w->n, src, n);
    w->n += n;
}

static void u8(gw *w, uint8_t v) { put(w, &v, 1); }
static void u16(gw *w, uint16_t v) { put(w, &v, 2); }
static void u32(gw *w, uint32_t v) { put(w, &v, 4); }
static void u64(gw *w, uint64_t v) { put(w, &v, 8); }
static void f32(gw *w, float v) { put(w, &v, 4); }
static void f64(gw *w, double v) { put(w, &v, 8); }

static void str(gw *w, const char *s)
{
    u64(w, strlen(s));
    put(w, s, strlen(s));
}

static void header(gw *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    put(w, "GGUF", 4);
    u32(w, version);
    u64(w, n_tensors);
    u64(w, n_kv);
}

/* A key and its type; the value follows. */
static void key(gw *w, const char *k, uint32_t type)
{
    str(w, k);
    u32(w, type);
}

static void tensor(gw *w, const char *name, uint32_t n_dims, const uint64_t *dims, uint32_t type,
                   uint64_t offset)
{
    str(w, name);
    u32(w, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        u64(w, dims[i]);
    u32(w, type);
    u64(w, offset);
}

static void pad(gw *w, size_t align)
{
    while (w->n % align)
        u8(w, 0);
}

/* Zeros up to offset in the data section that starts at data. */
static void at(gw *w, size_t data, size_t offset)
{
    while (w->n < data + offset)
        u8(w, 0);
}

/* ---- the good file -------------------------------------------------------------- */

static const uint64_t emb_dims[] = {4, 3};    /* F32: 48 bytes */
static const uint64_t q_dims[] = {256, 2};    /* Q4_K: 2 blocks of 144 */
static const uint64_t norm_dims[] = {64};     /* F16: 128 bytes */

/* Every value type, arrays of five types, three tensors; alignment given
 * (v3) or the default (v2). The last tensor ends the file, so every
 * shorter prefix is a truncated file. */
static gw good_file(uint32_t version)
{
    uint32_t align = version == 3 ? 64 : 32;
    gw w = {0};
    header(&w, version, 3, version == 3 ? 19 : 18);
    key(&w, "general.architecture", 8); str(&w, "llama");
    key(&w, "t.u8", 0); u8(&w, 200);
    key(&w, "t.i8", 1); u8(&w, (uint8_t)-100);
    key(&w, "t.u16", 2); u16(&w, 60000);
    key(&w, "t.i16", 3); u16(&w, (uint16_t)-30000);
    key(&w, "t.u32", 4); u32(&w, 4000000000u);
    key(&w, "t.i32", 5); u32(&w, (uint32_t)-2000000000);
    key(&w, "t.f32", 6); f32(&w, 1.5f);
    key(&w, "t.bool", 7); u8(&w, 1);
    key(&w, "t.empty", 8); str(&w, "");
    key(&w, "t.u64", 10); u64(&w, 18000000000000000000u);
    key(&w, "t.i64", 11); u64(&w, (uint64_t)-9000000000000000000);
    key(&w, "t.f64", 12); f64(&w, -2.25);
    key(&w, "t.arr_u32", 9); u32(&w, 4); u64(&w, 3); u32(&w, 7); u32(&w, 8); u32(&w, 9);
    key(&w, "t.arr_str", 9); u32(&w, 8); u64(&w, 3); str(&w, "<s>"); str(&w, ""); str(&w, "h\xc3\xa9");
    key(&w, "t.arr_f32", 9); u32(&w, 6); u64(&w, 2); f32(&w, 0.5f); f32(&w, -4.0f);
    key(&w, "t.arr_bool", 9); u32(&w, 7); u64(&w, 2); u8(&w, 0); u8(&w, 1);
    key(&w, "t.arr_empty", 9); u32(&w, 1); u64(&w, 0);
    if (version == 3) {
        key(&w, "general.alignment", 4); u32(&w, align);
    }
    tensor(&w, "token_embd.weight", 2, emb_dims, LINATTN_GGML_F32, 0);
    tensor(&w, "blk.0.attn_q.weight", 2, q_dims, LINATTN_GGML_Q4_K, 64);
    tensor(&w, "output_norm.weight", 1, norm_dims, LINATTN_GGML_F16, 384);
    pad(&w, align);
    size_t data = w.n;
    for (int i = 0; i < 12; i++)
        f32(&w, (float)i);                 /* token_embd: 0 .. 11 */
    at(&w, data, 64);
    for (int i = 0; i < 288; i++)
        u8(&w, (uint8_t)i);                /* Q4_K blocks, raw */
    at(&w, data, 384);
    for (int i = 0; i < 64; i++)
        u16(&w, 0x3c00);                   /* F16 1.0 */
    return w;
}

static void check_good(const linattn_gguf *g, uint32_t version)
{
    cr_assert_eq(linattn_gguf_version(g), version);
    cr_assert_eq(linattn_gguf_alignment(g), version == 3 ? 64u : 32u);
    cr_assert_eq(linattn_gguf_n_kv(g), version == 3 ? 19u : 18u);
    cr_assert_str_eq(linattn_gguf_kv_key(g, 1), "t.u8");
    cr_assert_eq(linattn_gguf_kv_type(g, 13), LINATTN_GGUF_ARRAY);

    const char *s;
    size_t len;
    cr_assert_eq(linattn_gguf_get_string(g, "general.architecture", &s, &len), LINATTN_OK);
    cr_assert(len == 5 && memcmp(s, "llama", 5) == 0);
    cr_assert_eq(linattn_gguf_get_string(g, "t.empty", &s, &len), LINATTN_OK);
    cr_assert_eq(len, 0);
    uint8_t vu8; int8_t vi8; uint16_t vu16; int16_t vi16; uint32_t vu32; int32_t vi32;
    uint64_t vu64; int64_t vi64; float vf32; double vf64; int vb;
    cr_assert_eq(linattn_gguf_get_u8(g, "t.u8", &vu8), LINATTN_OK); cr_assert_eq(vu8, 200);
    cr_assert_eq(linattn_gguf_get_i8(g, "t.i8", &vi8), LINATTN_OK); cr_assert_eq(vi8, -100);
    cr_assert_eq(linattn_gguf_get_u16(g, "t.u16", &vu16), LINATTN_OK); cr_assert_eq(vu16, 60000);
    cr_assert_eq(linattn_gguf_get_i16(g, "t.i16", &vi16), LINATTN_OK); cr_assert_eq(vi16, -30000);
    cr_assert_eq(linattn_gguf_get_u32(g, "t.u32", &vu32), LINATTN_OK);
    cr_assert_eq(vu32, 4000000000u);
    cr_assert_eq(linattn_gguf_get_i32(g, "t.i32", &vi32), LINATTN_OK);
    cr_assert_eq(vi32, -2000000000);
    cr_assert_eq(linattn_gguf_get_u64(g, "t.u64", &vu64), LINATTN_OK);
    cr_assert_eq(vu64, 18000000000000000000u);
    cr_assert_eq(linattn_gguf_get_i64(g, "t.i64", &vi64), LINATTN_OK);
    cr_assert_eq(vi64, -9000000000000000000);
    cr_assert_eq(linattn_gguf_get_f32(g, "t.f32", &vf32), LINATTN_OK); cr_assert_eq(vf32, 1.5f);
    cr_assert_eq(linattn_gguf_get_f64(g, "t.f64", &vf64), LINATTN_OK); cr_assert_eq(vf64, -2.25);
    cr_assert_eq(linattn_gguf_get_bool(g, "t.bool", &vb), LINATTN_OK); cr_assert_eq(vb, 1);

    /* any integer type through get_int; uint64 past 2^63 is refused */
    int64_t x;
    cr_assert_eq(linattn_gguf_get_int(g, "t.i16", &x), LINATTN_OK); cr_assert_eq(x, -30000);
    cr_assert_eq(linattn_gguf_get_int(g, "t.u32", &x), LINATTN_OK); cr_assert_eq(x, 4000000000);
    cr_assert_eq(linattn_gguf_get_int(g, "t.u64", &x), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "'t.u64' is uint64 18000000000000000000, not an "
                     "integer"), "%s", linattn_last_error());
    cr_assert_eq(linattn_gguf_get_int(g, "t.f32", &x), LINATTN_ERR_FORMAT);

    /* the type must match, and the message says what the key is */
    vu32 = 77;
    cr_assert_eq(linattn_gguf_get_u32(g, "general.architecture", &vu32), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "'general.architecture' is string, not uint32"),
              "%s", linattn_last_error());
    cr_assert_eq(vu32, 77);
    cr_assert_eq(linattn_gguf_get_string(g, "t.arr_u32", &s, &len), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "'t.arr_u32' is an array of uint32, not string"),
              "%s", linattn_last_error());
    cr_assert_eq(linattn_gguf_get_u32(g, "no.such.key", &vu32), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "no key 'no.such.key'"), "%s", linattn_last_error());
    cr_assert(linattn_gguf_has(g, "t.f64"));
    cr_assert(!linattn_gguf_has(g, "t.f6"));
    linattn_gguf_type type;
    cr_assert_eq(linattn_gguf_type_of(g, "t.bool", &type), LINATTN_OK);
    cr_assert_eq(type, LINATTN_GGUF_BOOL);

    /* arrays */
    linattn_gguf_array a;
    cr_assert_eq(linattn_gguf_get_array(g, "t.arr_u32", &a), LINATTN_OK);
    cr_assert(a.type == LINATTN_GGUF_UINT32 && a.count == 3);
    for (uint64_t i = 0; i < 3; i++) {
        cr_assert_eq(linattn_gguf_array_int(&a, i, &x), LINATTN_OK);
        cr_assert_eq(x, (int64_t)(7 + i));
    }
    cr_assert_eq(linattn_gguf_array_int(&a, 3, &x), LINATTN_ERR_INVALID);
    cr_assert_eq(linattn_gguf_array_string(&a, 0, &s, &len), LINATTN_ERR_INVALID);
    cr_assert_eq(linattn_gguf_get_array(g, "t.arr_str", &a), LINATTN_OK);
    cr_assert(a.type == LINATTN_GGUF_STRING && a.count == 3);
    cr_assert_eq(linattn_gguf_array_string(&a, 0, &s, &len), LINATTN_OK);
    cr_assert(len == 3 && memcmp(s, "<s>", 3) == 0);
    cr_assert_eq(linattn_gguf_array_string(&a, 1, &s, &len), LINATTN_OK);
    cr_assert_eq(len, 0);
    cr_assert_eq(linattn_gguf_array_string(&a, 2, &s, &len), LINATTN_OK);
    cr_assert(len == 3 && memcmp(s, "h\xc3\xa9", 3) == 0);
    cr_assert_eq(linattn_gguf_array_float(&a, 0, &vf64), LINATTN_ERR_INVALID);
    cr_assert_eq(linattn_gguf_get_array(g, "t.arr_f32", &a), LINATTN_OK);
    cr_assert_eq(linattn_gguf_array_float(&a, 1, &vf64), LINATTN_OK);
    cr_assert_eq(vf64, -4.0);
    cr_assert_eq(linattn_gguf_get_array(g, "t.arr_bool", &a), LINATTN_OK);
    cr_assert_eq(linattn_gguf_array_int(&a, 1, &x), LINATTN_OK);
    cr_assert_eq(x, 1);
    cr_assert_eq(linattn_gguf_get_array(g, "t.arr_empty", &a), LINATTN_OK);
    cr_assert(a.type == LINATTN_GGUF_INT8 && a.count == 0);

    /* tensors */
    cr_assert_eq(linattn_gguf_n_tensors(g), 3);
    uint64_t data = linattn_gguf_data_offset(g);
    cr_assert_eq(data % linattn_gguf_alignment(g), 0);
    cr_assert_eq(linattn_gguf_data_size(g), 512);
    linattn_gguf_tensor t;
    cr_assert_eq(linattn_gguf_find_tensor(g, "token_embd.weight", &t), LINATTN_OK);
    cr_assert(t.n_dims == 2 && t.dims[0] == 4 && t.dims[1] == 3 && t.dims[2] == 1);
    cr_assert(t.type == LINATTN_GGML_F32 && t.n_elements == 12 && t.bytes == 48 && t.offset == 0);
    for (int i = 0; i < 12; i++) {
        float f;
        memcpy(&f, (const char *)t.data + 4 * i, 4);
        cr_assert_eq(f, (float)i);
    }
    cr_assert_eq(linattn_gguf_find_tensor(g, "blk.0.attn_q.weight", &t), LINATTN_OK);
    cr_assert(t.type == LINATTN_GGML_Q4_K && t.bytes == 288 && t.offset == 64);
    cr_assert_eq(((const uint8_t *)t.data)[287], 287 & 0xff);
    linattn_gguf_tensor_at(g, 2, &t);
    cr_assert_str_eq(t.name, "output_norm.weight");
    cr_assert(t.type == LINATTN_GGML_F16 && t.bytes == 128 && t.offset == 384);
    cr_assert_eq(linattn_gguf_find_tensor(g, "output.weight", &t), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "no tensor 'output.weight'"), "%s",
              linattn_last_error());
}

Test(gguf, good_v3_file)
{
    gw w = good_file(3);
    tu_write_file(tu_path("good.gguf"), w.p, w.n);
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open(tu_path("good.gguf"), &g), LINATTN_OK, "%s",
                 linattn_last_error());
    check_good(g, 3);
    linattn_gguf_free(g);
    cr_assert_eq(linattn_gguf_open_mem(w.p, w.n, "good", &g), LINATTN_OK, "%s",
                 linattn_last_error());
    check_good(g, 3);
    linattn_gguf_free(g);
    free(w.p);
}

Test(gguf, good_v2_file)
{
    gw w = good_file(2);
    tu_write_file(tu_path("good2.gguf"), w.p, w.n);
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open(tu_path("good2.gguf"), &g), LINATTN_OK, "%s",
                 linattn_last_error());
    check_good(g, 2);
    linattn_gguf_free(g);
    free(w.p);
}

Test(gguf, block_layouts)
{
    /* elements and bytes per block, as ggml-common.h's block structs have them */
    static const struct { uint32_t type; const char *name; uint32_t block, bytes; } want[] = {
        {0, "F32", 1, 4}, {1, "F16", 1, 2}, {30, "BF16", 1, 2}, {8, "Q8_0", 32, 34},
        {2, "Q4_0", 32, 18}, {3, "Q4_1", 32, 20}, {6, "Q5_0", 32, 22}, {7, "Q5_1", 32, 24},
        {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176}, {14, "Q6_K", 256, 210},
        {10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {15, "Q8_K", 256, 292},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint32_t block, bytes;
        cr_assert(linattn_gguf_ggml_type_size(want[i].type, &block, &bytes));
        cr_assert_str_eq(linattn_gguf_ggml_type_name(want[i].type), want[i].name);
        cr_assert(block == want[i].block && bytes == want[i].bytes, "%s", want[i].name);
    }
    cr_assert(!linattn_gguf_ggml_type_size(4, NULL, NULL)); /* Q4_2, removed */
    cr_assert(!linattn_gguf_ggml_type_size(1000, NULL, NULL));
    cr_assert_null(linattn_gguf_ggml_type_name(5));
}

/* Every strict prefix of the good file is refused (no tensor data may be
 * missing), and each allocation's failure is reported without a leak. */
Test(gguf, every_truncation_and_allocation_failure)
{
    gw w = good_file(3);
    for (size_t n = 0; n < w.n; n++) {
        unsigned char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees any overread */
        memcpy(copy, w.p, n);
        linattn_gguf *g = NULL;
        cr_assert_eq(linattn_gguf_open_mem(copy, n, "prefix", &g), LINATTN_ERR_FORMAT,
                     "a prefix of %zu bytes of %zu was accepted", n, w.n);
        cr_assert_null(g);
        free(copy);
    }
    long live0 = linattn_test_alloc_live(), made0 = linattn_test_alloc_count();
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open_mem(w.p, w.n, "good", &g), LINATTN_OK);
    linattn_gguf_free(g);
    long made = linattn_test_alloc_count() - made0;
    for (long k = 0; k < made; k++) {
        linattn_test_fail_alloc(k);
        linattn_status st = linattn_gguf_open_mem(w.p, w.n, "good", &g);
        linattn_test_fail_alloc(-1);
        cr_assert_eq(st, LINATTN_ERR_NOMEM, "allocation %ld of %ld", k + 1, made);
        cr_assert_eq(linattn_test_alloc_live(), live0, "allocation %ld leaked", k + 1);
    }
    free(w.p);
}

/* ---- malformed files ---------------------------------------------------------------- */

/* The bytes are refused, from a file and from memory, with a message
 * holding `why`. */
static void refused(gw *w, const char *why)
{
    const char *path = tu_path("bad.gguf");
    tu_write_file(path, w->p ? (const void *)w->p : "", w->n);
    linattn_gguf *g = (linattn_gguf *)1;
    cr_assert_eq(linattn_gguf_open(path, &g), LINATTN_ERR_FORMAT, "accepted (wanted: %s)", why);
    cr_assert_null(g);
    cr_assert(strstr(linattn_last_error(), why), "'%s' lacks '%s'", linattn_last_error(), why);
    cr_assert(strstr(linattn_last_error(), path), "'%s' does not name the file",
              linattn_last_error());
    cr_assert_eq(linattn_gguf_open_mem(w->p, w->n, NULL, &g), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), why), "in memory: '%s' lacks '%s'",
              linattn_last_error(), why);
    free(w->p);
    *w = (gw){0};
}

/* A file with one tensor (F32 [8] at `offset`) after the metadata the
 * caller wrote; n_kv counts them. */
static void one_tensor_tail(gw *w, uint64_t offset, size_t align)
{
    static const uint64_t dims[] = {8};
    tensor(w, "t", 1, dims, LINATTN_GGML_F32, offset);
    pad(w, align);
    for (int i = 0; i < 8; i++)
        f32(w, 1.0f);
}

Test(gguf, truncated_header)
{
    gw w = {0};
    put(&w, "GGUF", 4);
    u32(&w, 3);
    u64(&w, 0);
    refused(&w, "16 bytes, too short for a GGUF header (24 bytes)");
    refused(&w, "0 bytes, too short for a GGUF header");
}

Test(gguf, bad_magic)
{
    gw w = {0};
    put(&w, "GGML", 4);
    u32(&w, 3); u64(&w, 0); u64(&w, 0);
    refused(&w, "not a GGUF file (it starts with 47 47 4d 4c");
}

Test(gguf, unsupported_versions)
{
    gw w = {0};
    header(&w, 1, 0, 0);
    refused(&w, "GGUF version 1 is not supported (versions 2 and 3 are)");
    header(&w, 4, 0, 0);
    refused(&w, "GGUF version 4 is not supported");
    header(&w, 3u << 24, 0, 0);
    refused(&w, "a big-endian GGUF file (version 3 byte-swapped)");
}

Test(gguf, string_length_past_the_end)
{
    gw w = {0};
    header(&w, 3, 0, 1);
    key(&w, "general.name", 8);
    u64(&w, 1000);
    put(&w, "short", 5);
    refused(&w, "key 'general.name': string length 1000 runs past the end of the file (5 bytes "
                "left)");
    header(&w, 3, 0, 1);
    u64(&w, 1u << 20); /* the key itself */
    put(&w, "abc\0\0\0\0\0\0\0\0\0\0", 13);
    refused(&w, "metadata entry 0: name of 1048576 bytes (at most 65535)");
    header(&w, 3, 0, 1);
    u64(&w, 100);
    put(&w, "abc\0\0\0\0\0\0\0\0\0\0", 13);
    refused(&w, "metadata entry 0: name length 100 runs past the end of the file");
    header(&w, 3, 0, 1);
    key(&w, "tokenizer.ggml.tokens", 9); u32(&w, 8); u64(&w, 2);
    str(&w, "a");
    u64(&w, 50); put(&w, "b", 1);
    refused(&w, "key 'tokenizer.ggml.tokens': string 1: length 50 runs past the end of the file");
}

Test(gguf, array_count_overflow)
{
    gw w = {0};
    /* 2^61 + 1 uint64 elements: the byte count overflows 64 bits */
    header(&w, 3, 0, 1);
    key(&w, "a", 9); u32(&w, 10); u64(&w, (1ull << 61) + 1);
    u64(&w, 0);
    refused(&w, "key 'a': array of 2305843009213693953 uint64 runs past the end of the file");
    header(&w, 3, 0, 1);
    key(&w, "tokens", 9); u32(&w, 8); u64(&w, UINT64_MAX);
    str(&w, "x");
    refused(&w, "key 'tokens': array of 18446744073709551615 string runs past the end");
    header(&w, 3, 0, 1);
    key(&w, "small", 9); u32(&w, 4); u64(&w, 3);
    u32(&w, 1); u32(&w, 2);
    refused(&w, "key 'small': array of 3 uint32 runs past the end of the file");
    /* a metadata count the file cannot hold is refused before any allocation */
    header(&w, 3, 0, UINT64_MAX);
    refused(&w, "18446744073709551615 metadata entries cannot fit in the file (24 bytes)");
    header(&w, 3, UINT64_MAX / 2, 0);
    refused(&w, "9223372036854775807 tensor infos cannot fit in the file");
}

Test(gguf, tensor_offset_past_the_end)
{
    gw w = {0};
    header(&w, 3, 1, 0);
    one_tensor_tail(&w, 32, 32); /* 32 bytes of data, the tensor at 32 needs 32 more */
    refused(&w, "tensor 't': F32 data at offset 32, 32 bytes, runs past the end of the data "
                "section (32 bytes)");
    header(&w, 3, 1, 0);
    one_tensor_tail(&w, UINT64_MAX - 31, 32);
    refused(&w, "runs past the end of the data section");
    /* the tensor infos end the file: no data section at all */
    static const uint64_t dims[] = {8};
    header(&w, 3, 1, 0);
    tensor(&w, "t", 1, dims, LINATTN_GGML_F32, 0);
    refused(&w, "the tensor data would start at byte 64, past the end of the file (57 bytes)");
}

Test(gguf, misaligned_offset)
{
    gw w = {0};
    header(&w, 3, 1, 0);
    one_tensor_tail(&w, 4, 32);
    for (int i = 0; i < 8; i++)
        f32(&w, 0);
    refused(&w, "tensor 't': offset 4 is not a multiple of the alignment 32");
    header(&w, 3, 1, 1);
    key(&w, "general.alignment", 4); u32(&w, 16);
    one_tensor_tail(&w, 8, 16);
    for (int i = 0; i < 8; i++)
        f32(&w, 0);
    refused(&w, "tensor 't': offset 8 is not a multiple of the alignment 16");
}

Test(gguf, unknown_types)
{
    gw w = {0};
    header(&w, 3, 0, 1);
    key(&w, "general.future", 13); u32(&w, 0);
    refused(&w, "key 'general.future': unknown value type 13");
    header(&w, 3, 0, 1);
    key(&w, "general.future", 9); u32(&w, 99); u64(&w, 0);
    refused(&w, "key 'general.future': unknown array element type 99");
    static const uint64_t dims[] = {32};
    header(&w, 3, 1, 0);
    tensor(&w, "blk.0.ffn_up.weight", 1, dims, 4, 0); /* Q4_2, removed from ggml */
    pad(&w, 32);
    for (int i = 0; i < 32; i++)
        u8(&w, 0);
    refused(&w, "tensor 'blk.0.ffn_up.weight': unknown ggml type 4");
    header(&w, 3, 1, 0);
    tensor(&w, "x", 1, dims, 0xdeadbeef, 0);
    refused(&w, "tensor 'x': unknown ggml type 3735928559");
}

Test(gguf, duplicate_key)
{
    gw w = {0};
    header(&w, 3, 0, 4);
    key(&w, "b", 4); u32(&w, 1);
    key(&w, "general.name", 8); str(&w, "x");
    key(&w, "c", 4); u32(&w, 1);
    key(&w, "general.name", 8); str(&w, "y");
    refused(&w, "duplicate key 'general.name'");
}

Test(gguf, duplicate_tensor_name)
{
    static const uint64_t dims[] = {8};
    gw w = {0};
    header(&w, 3, 3, 0);
    tensor(&w, "a", 1, dims, LINATTN_GGML_F32, 0);
    tensor(&w, "b", 1, dims, LINATTN_GGML_F32, 32);
    tensor(&w, "a", 1, dims, LINATTN_GGML_F32, 64);
    pad(&w, 32);
    for (int i = 0; i < 24; i++)
        f32(&w, 0);
    refused(&w, "duplicate tensor name 'a'");
}

Test(gguf, overlapping_tensors)
{
    static const uint64_t dims[] = {16}; /* 64 bytes */
    gw w = {0};
    header(&w, 3, 2, 0);
    tensor(&w, "first", 1, dims, LINATTN_GGML_F32, 0);
    tensor(&w, "second", 1, dims, LINATTN_GGML_F32, 32);
    pad(&w, 32);
    for (int i = 0; i < 24; i++)
        f32(&w, 0);
    refused(&w, "tensors 'first' and 'second' overlap");
}

Test(gguf, bad_alignment)
{
    gw w = {0};
    header(&w, 3, 1, 1);
    key(&w, "general.alignment", 4); u32(&w, 48);
    one_tensor_tail(&w, 0, 16);
    refused(&w, "general.alignment 48 is not a power of two");
    header(&w, 3, 1, 1);
    key(&w, "general.alignment", 4); u32(&w, 0);
    one_tensor_tail(&w, 0, 16);
    refused(&w, "general.alignment 0 is not a power of two");
    header(&w, 3, 0, 1);
    key(&w, "general.alignment", 8); str(&w, "32");
    refused(&w, "general.alignment is string, not uint32");
}

Test(gguf, too_many_dimensions)
{
    static const uint64_t dims[] = {1, 1, 1, 1, 8};
    gw w = {0};
    header(&w, 3, 1, 0);
    tensor(&w, "five", 5, dims, LINATTN_GGML_F32, 0);
    pad(&w, 32);
    for (int i = 0; i < 8; i++)
        f32(&w, 0);
    refused(&w, "tensor 'five': 5 dimensions (at most 4)");
}

Test(gguf, dims_product_overflow)
{
    gw w = {0};
    static const uint64_t big[] = {1ull << 32, 1ull << 32};
    header(&w, 3, 1, 0);
    tensor(&w, "huge", 2, big, LINATTN_GGML_F32, 0);
    pad(&w, 32);
    refused(&w, "tensor 'huge': dimensions [4294967296, 4294967296] have more than 2^63 elements");
    static const uint64_t wide[] = {1ull << 40, 1ull << 23}; /* 2^63: past int64 */
    header(&w, 3, 1, 0);
    tensor(&w, "wide", 2, wide, 24 /* I8 */, 0);
    refused(&w, "have more than 2^63 elements");
    /* 2^61 F64 elements fit int64, but not their 2^64 bytes */
    static const uint64_t bytes[] = {1ull << 61};
    header(&w, 3, 1, 0);
    tensor(&w, "bytes", 1, bytes, 28, 0);
    refused(&w, "tensor 'bytes': too many bytes");
}

Test(gguf, other_refusals)
{
    gw w = {0};
    header(&w, 3, 0, 1);
    key(&w, "nested", 9); u32(&w, 9); u64(&w, 1);
    refused(&w, "key 'nested': nested arrays are not supported");
    header(&w, 3, 0, 1);
    key(&w, "flag", 7); u8(&w, 2);
    refused(&w, "key 'flag': bool value 2 (0 or 1)");
    header(&w, 3, 0, 1);
    key(&w, "flags", 9); u32(&w, 7); u64(&w, 2); u8(&w, 1); u8(&w, 7);
    refused(&w, "key 'flags': a bool element is neither 0 nor 1");
    header(&w, 3, 0, 1);
    u64(&w, 3); put(&w, "a\0b", 3); u32(&w, 0); u8(&w, 0);
    refused(&w, "metadata entry 0: name is not text (it holds a NUL byte)");
    header(&w, 3, 0, 1);
    key(&w, "", 0); u8(&w, 0);
    refused(&w, "metadata entry 0: name is empty");
    static const uint64_t row[] = {100, 2}; /* Q8_0 blocks are 32 wide */
    header(&w, 3, 1, 0);
    tensor(&w, "odd", 2, row, LINATTN_GGML_Q8_0, 0);
    refused(&w, "tensor 'odd': first dimension 100 is not a multiple of Q8_0's block of 32");
    char name[80];
    memset(name, 'n', 65);
    name[65] = '\0';
    header(&w, 3, 1, 0);
    tensor(&w, name, 1, row, LINATTN_GGML_F32, 0);
    refused(&w, "tensor 0: name of 65 bytes (at most 64)");
}

/* A file without tensors may end right after its metadata (vocab files do). */
Test(gguf, metadata_only)
{
    gw w = {0};
    header(&w, 3, 0, 1);
    key(&w, "general.architecture", 8); str(&w, "gpt2");
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open_mem(w.p, w.n, NULL, &g), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert_eq(linattn_gguf_n_tensors(g), 0);
    cr_assert_eq(linattn_gguf_data_size(g), 0);
    linattn_gguf_free(g);
    free(w.p);
}

/* ---- real files --------------------------------------------------------------------
 * llama.cpp's vocab-only files (tests/data/gguf/README.md says where they
 * come from); from $LINATTN_GGUF_VOCAB when set, else tests/data/gguf/. */

static const char *vocab_path(const char *name)
{
    static char path[4096];
    const char *dir = getenv("LINATTN_GGUF_VOCAB");
    if (dir && *dir)
        snprintf(path, sizeof path, "%s/%s", dir, name);
    else
        snprintf(path, sizeof path, "%s/gguf/%s", tu_data_dir(), name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fclose(f);
    return path;
}

static void expect_string(const linattn_gguf *g, const char *key, const char *want)
{
    const char *s;
    size_t len;
    cr_assert_eq(linattn_gguf_get_string(g, key, &s, &len), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_assert(len == strlen(want) && memcmp(s, want, len) == 0, "%s is '%.*s', not '%s'", key,
              (int)len, s, want);
}

static void expect_u32(const linattn_gguf *g, const char *key, uint32_t want)
{
    uint32_t v;
    cr_assert_eq(linattn_gguf_get_u32(g, key, &v), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(v, want, "%s is %u, not %u", key, v, want);
}

static void expect_token(const linattn_gguf_array *a, uint64_t i, const char *want)
{
    const char *s;
    size_t len;
    cr_assert_eq(linattn_gguf_array_string(a, i, &s, &len), LINATTN_OK);
    cr_assert(len == strlen(want) && memcmp(s, want, len) == 0, "token %llu is '%.*s'",
              (unsigned long long)i, (int)len, s);
}

Test(gguf, llama_spm_vocab)
{
    const char *path = vocab_path("ggml-vocab-llama-spm.gguf");
    if (!path)
        cr_skip_test("ggml-vocab-llama-spm.gguf is not here (tests/data/gguf/README.md)");
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open(path, &g), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(linattn_gguf_version(g), 3);
    cr_assert_eq(linattn_gguf_n_tensors(g), 0);
    expect_string(g, "general.architecture", "llama");
    expect_string(g, "tokenizer.ggml.model", "llama");
    expect_u32(g, "llama.vocab_size", 32000);
    expect_u32(g, "tokenizer.ggml.bos_token_id", 1);
    expect_u32(g, "tokenizer.ggml.eos_token_id", 2);
    int add_bos;
    cr_assert_eq(linattn_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos), LINATTN_OK);
    cr_assert_eq(add_bos, 1);
    linattn_gguf_array tokens, scores, types;
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.tokens", &tokens), LINATTN_OK);
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.scores", &scores), LINATTN_OK);
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.token_type", &types), LINATTN_OK);
    cr_assert(tokens.type == LINATTN_GGUF_STRING && tokens.count == 32000);
    cr_assert(scores.type == LINATTN_GGUF_FLOAT32 && scores.count == 32000);
    cr_assert(types.type == LINATTN_GGUF_INT32 && types.count == 32000);
    expect_token(&tokens, 0, "<unk>");
    expect_token(&tokens, 1, "<s>");
    expect_token(&tokens, 2, "</s>");
    int64_t type;
    cr_assert_eq(linattn_gguf_array_int(&types, 1, &type), LINATTN_OK);
    cr_assert_eq(type, 3); /* control */
    linattn_gguf_free(g);
}

Test(gguf, gpt2_vocab)
{
    const char *path = vocab_path("ggml-vocab-gpt-2.gguf");
    if (!path)
        cr_skip_test("ggml-vocab-gpt-2.gguf is not here (tests/data/gguf/README.md)");
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open(path, &g), LINATTN_OK, "%s", linattn_last_error());
    expect_string(g, "general.architecture", "gpt2");
    expect_string(g, "tokenizer.ggml.model", "gpt2");
    expect_string(g, "tokenizer.ggml.pre", "gpt-2");
    expect_u32(g, "tokenizer.ggml.bos_token_id", 50256);
    linattn_gguf_array tokens, merges;
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.tokens", &tokens), LINATTN_OK);
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.merges", &merges), LINATTN_OK);
    cr_assert_eq(tokens.count, 50257);
    cr_assert_eq(merges.count, 50000);
    expect_token(&tokens, 0, "!");
    expect_token(&tokens, 50256, "<|endoftext|>");
    expect_token(&merges, 0, "\xc4\xa0 t"); /* "Ġ t" */
    linattn_gguf_free(g);
}

/* ---- the worst case's time ---------------------------------------------------------
 * 200,000 keys in reverse order (the sort's work) and an array of
 * 1,000,000 strings (20 MB of metadata): open plus a lookup of every key
 * takes 0.1 s of CPU in a release build on this project's 2-vCPU machine;
 * the bound, 3 s of CPU (10 s under ASan), only catches a quadratic step. */

#if defined(__SANITIZE_ADDRESS__)
#define SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLOW_BUILD 1
#endif
#endif

Test(gguf, worst_case_metadata_time)
{
    enum { N_KEYS = 200000, N_STRINGS = 1000000 };
    gw w = {0};
    header(&w, 3, 0, N_KEYS + 1);
    char k[32];
    for (int i = N_KEYS - 1; i >= 0; i--) {
        snprintf(k, sizeof k, "key.%06d", i);
        key(&w, k, 4);
        u32(&w, (uint32_t)i);
    }
    key(&w, "tokenizer.ggml.tokens", 9); u32(&w, 8); u64(&w, N_STRINGS);
    for (int i = 0; i < N_STRINGS; i++) {
        char s[16];
        snprintf(s, sizeof s, "t%d", i);
        str(&w, s);
    }
    clock_t t0 = clock();
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open_mem(w.p, w.n, NULL, &g), LINATTN_OK, "%s",
                 linattn_last_error());
    for (int i = 0; i < N_KEYS; i++) {
        snprintf(k, sizeof k, "key.%06d", i);
        uint32_t v;
        cr_assert_eq(linattn_gguf_get_u32(g, k, &v), LINATTN_OK);
        cr_assert_eq(v, (uint32_t)i);
    }
    linattn_gguf_array a;
    cr_assert_eq(linattn_gguf_get_array(g, "tokenizer.ggml.tokens", &a), LINATTN_OK);
    expect_token(&a, N_STRINGS - 1, "t999999");
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    linattn_gguf_free(g);
#ifdef SLOW_BUILD
    double bound = 10.0;
#else
    double bound = 3.0;
#endif
    cr_log_info("worst case: %zu bytes of metadata, %.3f s of CPU (bound %.0f s)", w.n, cpu,
                bound);
    cr_assert(cpu < bound, "%.3f s of CPU for the worst case (bound %.0f s)", cpu, bound);
    free(w.p);
}

/* ---- byte-level vocabularies and their pre-tokenizer ------------------------------- */

/* Writes w's bytes (and frees them) to file in the test folder; returns
 * the tokenizer spec "gguf:PATH", in storage the next call reuses (each
 * caller loads its vocabulary before it makes another). */
static const char *gguf_spec(gw *w, const char *file)
{
    const char *path = tu_path(file);
    tu_write_file(path, w->p, w->n);
    free(w->p);
    static char spec[4200];
    snprintf(spec, sizeof spec, "gguf:%s", path);
    return spec;
}

/* A gpt2-model vocabulary: tokens 1 2 3 4 34, the merge "3 4", bos 0,
 * and tokenizer.ggml.pre when pre is not NULL. */
static const char *bpe_vocab(const char *pre)
{
    static const char *const toks[] = {"1", "2", "3", "4", "34"};
    gw w = {0};
    header(&w, 3, 0, pre ? 5 : 4);
    key(&w, "tokenizer.ggml.model", 8); str(&w, "gpt2");
    key(&w, "tokenizer.ggml.tokens", 9); u32(&w, 8); u64(&w, 5);
    for (int i = 0; i < 5; i++)
        str(&w, toks[i]);
    key(&w, "tokenizer.ggml.merges", 9); u32(&w, 8); u64(&w, 1); str(&w, "3 4");
    key(&w, "tokenizer.ggml.bos_token_id", 4); u32(&w, 0);
    if (pre) {
        key(&w, "tokenizer.ggml.pre", 8);
        str(&w, pre);
    }
    return gguf_spec(&w, "vocab.gguf");
}

/* A sentencepiece (llama) vocabulary: <unk> <s> </s> a, U+2581, U+2581a;
 * add_space_prefix written when prefix >= 0. */
static const char *spm_vocab(int prefix)
{
    static const char *const toks[] = {"<unk>", "<s>", "</s>", "a", "\xe2\x96\x81",
                                       "\xe2\x96\x81" "a"};
    gw w = {0};
    header(&w, 3, 0, prefix >= 0 ? 5 : 4);
    key(&w, "tokenizer.ggml.model", 8); str(&w, "llama");
    key(&w, "tokenizer.ggml.tokens", 9); u32(&w, 8); u64(&w, 6);
    for (int i = 0; i < 6; i++)
        str(&w, toks[i]);
    key(&w, "tokenizer.ggml.scores", 9); u32(&w, 6); u64(&w, 6);
    for (int i = 0; i < 6; i++)
        f32(&w, (float)-i);
    key(&w, "tokenizer.ggml.bos_token_id", 4); u32(&w, 1);
    if (prefix >= 0) {
        key(&w, "tokenizer.ggml.add_space_prefix", 7);
        u8(&w, (uint8_t)prefix);
    }
    return gguf_spec(&w, "spm.gguf");
}

/* tokenizer.ggml.add_space_prefix: true (or absent, llama.cpp's default)
 * puts sentencepiece's dummy " " first and decoding drops it after bos;
 * false does neither. */
Test(gguf, spm_add_space_prefix)
{
    for (int prefix = -1; prefix <= 1; prefix++) {
        linattn_tokenizer *t;
        cr_assert_eq(linattn_tokenizer_load(spm_vocab(prefix), &t), LINATTN_OK, "%s",
                     linattn_last_error());
        int ids[8];
        size_t n;
        cr_assert_eq(linattn_tokenizer_encode(t, "a", 1, 1, ids, 8, &n), LINATTN_OK);
        int with = prefix != 0;
        cr_assert_eq(n, 2, "prefix %d: %zu tokens", prefix, n);
        cr_assert_eq(ids[0], 1);
        cr_assert_eq(ids[1], with ? 5 : 3, "prefix %d: id %d", prefix, ids[1]);
        const char *b;
        size_t len;
        cr_assert_eq(linattn_tokenizer_decode(t, 1, 5, &b, &len), LINATTN_OK);
        cr_assert_eq(len, with ? 1u : 2u, "prefix %d: after bos, U+2581a decodes to %zu bytes",
                     prefix, len);
        linattn_tokenizer_free(t);
    }
}

/* A sentencepiece vocabulary with token types: <unk> (unknown) <s> </s>
 * (control) a U+2581 U+2581a <|u|> (control) b, and < > | / s u (so a
 * text may be cut beside the control tokens), [MASK] (control),
 * general.name `name`. */
static const char *spm_typed_vocab(const char *name)
{
    static const char *const toks[] = {"<unk>", "<s>", "</s>", "a", "\xe2\x96\x81",
                                       "\xe2\x96\x81" "a", "<|u|>", "b", "<", ">", "|", "/",
                                       "s", "u", "[MASK]"};
    static const uint32_t types[] = {2, 3, 3, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 3};
    enum { N = sizeof toks / sizeof toks[0] };
    gw w = {0};
    header(&w, 3, 0, 6);
    key(&w, "general.name", 8); str(&w, name);
    key(&w, "tokenizer.ggml.model", 8); str(&w, "llama");
    key(&w, "tokenizer.ggml.tokens", 9); u32(&w, 8); u64(&w, N);
    for (int i = 0; i < N; i++)
        str(&w, toks[i]);
    key(&w, "tokenizer.ggml.scores", 9); u32(&w, 6); u64(&w, N);
    for (int i = 0; i < N; i++)
        f32(&w, (float)-i);
    key(&w, "tokenizer.ggml.token_type", 9); u32(&w, 5); u64(&w, N);
    for (int i = 0; i < N; i++)
        u32(&w, types[i]);
    key(&w, "tokenizer.ggml.bos_token_id", 4); u32(&w, 1);
    return gguf_spec(&w, "spm-typed.gguf");
}

static void expect_ids(const linattn_tokenizer *t, const char *text, const int *want, size_t nw)
{
    int ids[64];
    size_t n;
    cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 1, ids, 64, &n), LINATTN_OK,
                 "%s", linattn_last_error());
    int same = n == nw;
    for (size_t i = 0; same && i < n; i++)
        same = ids[i] == want[i];
    char got[256] = "";
    for (size_t i = 0; i < n && strlen(got) < 200; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), " %d", ids[i]);
    cr_expect(same, "'%s': got%s", text, got);
}

/* Control, user-defined and unknown tokens named in a text are those
 * tokens, as llama.cpp reads a prompt: a Llama 2 chat turn's "<s>" and
 * "</s>" are bos and eos. Each piece between them is encoded alone, with
 * sentencepiece's " " first when it starts the text or follows one; a
 * model named Phi-3 has its markers take the white space after them
 * (llama.cpp's rule). Checked against llama-tokenize on llama.cpp's
 * llama-spm, phi-3 and baichuan vocabularies (docs/tokenizers.md). Cut
 * in parts where linattn_tokenizer_cut says, the text gives the same ids:
 * no cut inside such a token or right after it. */
Test(gguf, spm_special_tokens_in_text)
{
    linattn_tokenizer *t;
    cr_assert_eq(linattn_tokenizer_load(spm_typed_vocab("a llama"), &t), LINATTN_OK, "%s",
                 linattn_last_error());
    expect_ids(t, "<s>a</s>a", (int[]){1, 1, 5, 2, 5}, 5);
    expect_ids(t, "a<|u|> b", (int[]){1, 5, 6, 4, 4, 7}, 6);
    expect_ids(t, "<unk>b", (int[]){1, 0, 4, 7}, 4);
    linattn_tokenizer_free(t);
    cr_assert_eq(linattn_tokenizer_load(spm_typed_vocab("Phi-3 mini"), &t), LINATTN_OK);
    expect_ids(t, "a<|u|> b", (int[]){1, 5, 6, 4, 7}, 5);
    expect_ids(t, "<s> a", (int[]){1, 1, 4, 5}, 4); /* <s> keeps the space after it */
    /* in parts: every cut of a text full of them */
    const char *text = "a<|u|>  ba</s>a<s><|u|>b a";
    size_t len = strlen(text);
    int whole[64], part[64];
    size_t nw, m = 0;
    cr_assert_eq(linattn_tokenizer_encode(t, text, len, 1, whole, 64, &nw), LINATTN_OK);
    for (size_t want = 1; want <= 3; want++) {
        m = 0;
        for (size_t from = 0, to; from < len; from = to) {
            to = linattn_tokenizer_cut(t, text, len, from, want);
            size_t k;
            cr_assert_eq(linattn_tokenizer_encode_part(t, text, from, to, 1, part + m, 64 - m, &k),
                         LINATTN_OK, "%s", linattn_last_error());
            m += k;
        }
        cr_expect(m == nw && !memcmp(part, whole, nw * sizeof *whole),
                  "cut every %zu bytes: %zu ids against %zu", want, m, nw);
    }
    linattn_tokenizer_free(t);
}

/* A byte-level vocabulary: 1 2, a space, <|u|> <s> </s> <unk>
 * <|endoftext|> <mask> [MASK] (control), a space and 1 (merged),
 * general.name `name` and pre-type `pre`. */
static const char *bpe_typed_vocab(const char *name, const char *pre)
{
    static const char *const toks[] = {"1", "2", "\xc4\xa0", "<|u|>", "<s>", "</s>", "<unk>",
                                       "<|endoftext|>", "<mask>", "[MASK]", "\xc4\xa0" "1"};
    static const uint32_t types[] = {1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 1};
    enum { N = sizeof toks / sizeof toks[0] };
    gw w = {0};
    header(&w, 3, 0, 6);
    key(&w, "general.name", 8); str(&w, name);
    key(&w, "tokenizer.ggml.model", 8); str(&w, "gpt2");
    key(&w, "tokenizer.ggml.pre", 8); str(&w, pre);
    key(&w, "tokenizer.ggml.tokens", 9); u32(&w, 8); u64(&w, N);
    for (int i = 0; i < N; i++)
        str(&w, toks[i]);
    key(&w, "tokenizer.ggml.token_type", 9); u32(&w, 5); u64(&w, N);
    for (int i = 0; i < N; i++)
        u32(&w, types[i]);
    key(&w, "tokenizer.ggml.merges", 9); u32(&w, 8); u64(&w, 1); str(&w, "\xc4\xa0 1");
    return gguf_spec(&w, "bpe-typed.gguf");
}

/* llama.cpp's rules by the file's names (llama_vocab::impl::load), in both
 * models: Phi-3's markers but <unk>, <s> and <|endoftext|> take the white
 * space after them; with a jina-v2 pre-type <mask>, and for a name holding
 * modern-bert [MASK], the white space before. The ids are llama-tokenize's
 * on the same files (llama.cpp 0253fb2, no BOS). */
Test(gguf, special_tokens_by_name)
{
    static const struct { const char *name, *pre, *text; int n, ids[8]; } cases[] = {
        {"a model", "gpt-2", "1<|u|> 1</s> 2", 6, {0, 3, 10, 5, 2, 1}},
        {"Phi-3 tiny", "gpt-2", "1<|u|> 1</s> 2", 5, {0, 3, 0, 5, 1}},
        {"my-PHI3", "gpt-2", "<s> 1<|endoftext|> 1<unk> 1", 6, {4, 10, 7, 10, 6, 10}},
        {"a model", "gpt-2", "1 <mask> 1 [MASK]", 6, {0, 2, 8, 10, 2, 9}},
        {"a model", "jina-v2-de", "1 <mask> 1 [MASK]", 5, {0, 8, 10, 2, 9}},
        {"modern-bert tiny", "gpt-2", "1 <mask> 1 [MASK]", 5, {0, 2, 8, 10, 9}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        linattn_tokenizer *t;
        cr_assert_eq(linattn_tokenizer_load(bpe_typed_vocab(cases[c].name, cases[c].pre), &t),
                     LINATTN_OK, "%s", linattn_last_error());
        int ids[16];
        size_t n;
        const char *text = cases[c].text;
        cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 0, ids, 16, &n), LINATTN_OK,
                     "%s", linattn_last_error());
        cr_expect(n == (size_t)cases[c].n && !memcmp(ids, cases[c].ids, n * sizeof *ids),
                  "%s, %s: '%s': %zu ids, the first %d", cases[c].name, cases[c].pre, text, n,
                  n ? ids[0] : -1);
        linattn_tokenizer_free(t);
    }
    /* sentencepiece: [MASK] takes the spaces before it under modern-bert */
    linattn_tokenizer *t;
    cr_assert_eq(linattn_tokenizer_load(spm_typed_vocab("a llama"), &t), LINATTN_OK);
    expect_ids(t, "a [MASK]a", (int[]){1, 5, 4, 14, 5}, 5);
    linattn_tokenizer_free(t);
    cr_assert_eq(linattn_tokenizer_load(spm_typed_vocab("modern-bert"), &t), LINATTN_OK);
    expect_ids(t, "a [MASK]a", (int[]){1, 5, 14, 5}, 4);
    expect_ids(t, " [MASK]", (int[]){1, 14}, 2);
    /* in parts: no cut inside the white space it takes (no piece holds
     * two spaces, so a cut between them would else be allowed) */
    const char *text = "a   [MASK]a  [MASK] a";
    size_t len = strlen(text);
    int whole[64], part[64];
    size_t nw;
    cr_assert_eq(linattn_tokenizer_encode(t, text, len, 1, whole, 64, &nw), LINATTN_OK);
    expect_ids(t, text, (int[]){1, 5, 14, 5, 14, 4, 5}, 7);
    for (size_t want = 1; want <= 3; want++) {
        size_t m = 0;
        for (size_t from = 0, to; from < len; from = to) {
            to = linattn_tokenizer_cut(t, text, len, from, want);
            size_t k;
            cr_assert_eq(linattn_tokenizer_encode_part(t, text, from, to, 1, part + m, 64 - m, &k),
                         LINATTN_OK, "%s", linattn_last_error());
            m += k;
        }
        cr_expect(m == nw && !memcmp(part, whole, nw * sizeof *whole),
                  "cut every %zu bytes: %zu ids against %zu", want, m, nw);
    }
    linattn_tokenizer_free(t);
}

/* "1234" by each pre-type: llama3's digits go 3 by 3 ("123" "4": no 3 4
 * merge), GPT-2's are one word (1 2 34); llama.cpp's default (no key)
 * also cuts 3 by 3. An unknown type is refused by name. */
Test(gguf, pre_tokenizer_by_type)
{
    static const struct { const char *pre; int n, ids[4], adds_bos; } cases[] = {
        {"llama-bpe", 4, {0, 1, 2, 3}, 1}, {"gpt-2", 3, {0, 1, 4}, 0},
        {NULL, 4, {0, 1, 2, 3}, 0}, {"default", 4, {0, 1, 2, 3}, 0},
        {"qwen2", 4, {0, 1, 2, 3}, 0}, {"starcoder", 4, {0, 1, 2, 3}, 0},
        {"deepseek-coder", 4, {0, 1, 2, 3}, 0}, {"mpt", 3, {0, 1, 4}, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        linattn_tokenizer *t;
        cr_assert_eq(linattn_tokenizer_load(bpe_vocab(cases[c].pre), &t), LINATTN_OK, "%s: %s",
                     cases[c].pre, linattn_last_error());
        int ids[8];
        size_t n;
        cr_assert_eq(linattn_tokenizer_encode(t, "1234", 4, 0, ids, 8, &n), LINATTN_OK);
        cr_assert_eq(n, (size_t)cases[c].n, "%s: %zu tokens", cases[c].pre, n);
        cr_assert(!memcmp(ids, cases[c].ids, n * sizeof *ids), "%s", cases[c].pre);
        cr_assert_eq(linattn_tokenizer_adds_bos(t), cases[c].adds_bos, "%s", cases[c].pre);
        linattn_tokenizer_free(t);
    }
    static const char *const refused[] = {"nonsense", "kimi-k2", "gemma4"};
    for (int i = 0; i < 3; i++) {
        linattn_tokenizer *t = NULL;
        cr_assert_eq(linattn_tokenizer_load(bpe_vocab(refused[i]), &t), LINATTN_ERR_UNSUPPORTED);
        char want[80];
        snprintf(want, sizeof want, "tokenizer.ggml.pre '%s' is not supported", refused[i]);
        cr_assert(strstr(linattn_last_error(), want), "%s", linattn_last_error());
    }
}

/* ---- the fuzzer's seeds --------------------------------------------------------------
 * With LINATTN_GGUF_SEEDS=DIR, writes this suite's files to DIR: how
 * tests/fuzz/corpus/gguf/ was made (skipped otherwise). */

static void seed(const char *dir, const char *name, gw *w)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    linattn_gguf *g;
    cr_assert_eq(linattn_gguf_open_mem(w->p, w->n, name, &g), LINATTN_OK, "%s",
                 linattn_last_error());
    linattn_gguf_free(g);
    tu_write_file(path, w->p, w->n);
    free(w->p);
    *w = (gw){0};
}

Test(gguf, write_fuzz_seeds)
{
    const char *dir = getenv("LINATTN_GGUF_SEEDS");
    if (!dir || !*dir)
        cr_skip_test("LINATTN_GGUF_SEEDS is not set");
    gw w = good_file(3);
    seed(dir, "good-v3.gguf", &w);
    w = good_file(2);
    seed(dir, "good-v2.gguf", &w);
    header(&w, 3, 0, 4);
    key(&w, "general.architecture", 8); str(&w, "llama");
    key(&w, "tokenizer.ggml.model", 8); str(&w, "llama");
    key(&w, "tokenizer.ggml.tokens", 9); u32(&w, 8); u64(&w, 4);
    str(&w, "<unk>"); str(&w, "<s>"); str(&w, "</s>"); str(&w, "\xe2\x96\x81" "a");
    key(&w, "tokenizer.ggml.scores", 9); u32(&w, 6); u64(&w, 4);
    for (int i = 0; i < 4; i++)
        f32(&w, (float)-i);
    seed(dir, "vocab-only.gguf", &w);
    static const uint64_t dims[] = {32, 2, 1, 1};
    header(&w, 3, 2, 1);
    key(&w, "general.alignment", 4); u32(&w, 16);
    tensor(&w, "blk.0.ffn_down.weight", 4, dims, LINATTN_GGML_Q8_0, 0);
    tensor(&w, "blk.0.ffn_up.weight", 2, dims, LINATTN_GGML_Q4_0, 80);
    pad(&w, 16);
    for (int i = 0; i < 80 + 36; i++)
        u8(&w, (uint8_t)(i * 7));
    seed(dir, "quant-4d.gguf", &w);
}

/* ---- GGUF models ---------------------------------------------------------------
 * A golden test model (tests/data/NAME.ini, llama architecture) written as
 * a GGUF file the way llama.cpp's converters write one: llama.* shape keys,
 * tensors under llama.cpp's names with dims reversed, q and k rows as they
 * are (interleaved rotation pairs), F32 or F16. */

/* Our tensor names and llama.cpp's, per layer ("%d") or once. */
static const char *const model_tensors[][2] = {
    {"tok_emb.weight", "token_embd.weight"},
    {"layers.%d.norm1.weight", "blk.%d.attn_norm.weight"},
    {"layers.%d.attn.q.weight", "blk.%d.attn_q.weight"},
    {"layers.%d.attn.k.weight", "blk.%d.attn_k.weight"},
    {"layers.%d.attn.v.weight", "blk.%d.attn_v.weight"},
    {"layers.%d.attn.o.weight", "blk.%d.attn_output.weight"},
    {"layers.%d.norm2.weight", "blk.%d.ffn_norm.weight"},
    {"layers.%d.ffn.gate.weight", "blk.%d.ffn_gate.weight"},
    {"layers.%d.ffn.up.weight", "blk.%d.ffn_up.weight"},
    {"layers.%d.ffn.down.weight", "blk.%d.ffn_down.weight"},
    {"norm_f.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

typedef struct gguf_model_opts {
    uint32_t type;         /* LINATTN_GGML_F32 or F16 */
    const char *arch;      /* general.architecture, "llama" unless set */
    const char *drop;      /* a GGUF tensor left out, or NULL */
    uint32_t rope_dims;    /* llama.rope.dimension_count, the head size unless set */
} gguf_model_opts;

/* Writes tests/data/NAME's model to path as GGUF; returns its config. */
static linattn_config write_model(const char *name, const char *path, gguf_model_opts o)
{
    linattn_config c;
    char ini[1024];
    snprintf(ini, sizeof ini, "%s/%s.ini", tu_data_dir(), name);
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    linattn_weights *src;
    cr_assert_eq(linattn_weights_open(c.weights, &src), LINATTN_OK, "%s", linattn_last_error());
    const int64_t d = c.d_model, ff = c.d_ff, V = c.vocab_size, hd = d / c.n_heads;
    const int64_t kv = hd * (c.n_kv_heads ? c.n_kv_heads : c.n_heads);
    /* each tensor: GGUF name, rows x cols (cols 0: a vector), fp32 data */
    struct { char ours[64], gguf[64]; int64_t rows, cols; const float *data; } t[64];
    int n = 0;
    for (size_t i = 0; i < sizeof model_tensors / sizeof model_tensors[0]; i++) {
        int per_layer = strstr(model_tensors[i][0], "%d") != NULL;
        for (int l = 0; l < (per_layer ? c.n_layers : 1); l++) {
            snprintf(t[n].ours, sizeof t[n].ours, model_tensors[i][0], l);
            snprintf(t[n].gguf, sizeof t[n].gguf, model_tensors[i][1], l);
            if (!linattn_weights_has(src, t[n].ours) || (o.drop && !strcmp(o.drop, t[n].gguf)))
                continue;
            const char *s = t[n].ours;
            int64_t rows = strstr(s, "norm") ? d : strstr(s, "attn.k") || strstr(s, "attn.v") ? kv
                         : strstr(s, "gate") || strstr(s, "up.") ? ff
                         : strstr(s, "tok_emb") || strstr(s, "lm_head") ? V : d;
            int64_t cols = strstr(s, "norm") ? 0 : strstr(s, "down") ? ff : d;
            int64_t shape[2] = {rows, cols};
            cr_assert_eq(linattn_weights_get(src, s, cols ? 2 : 1, shape, &t[n].data), LINATTN_OK,
                         "%s", linattn_last_error());
            t[n].rows = rows;
            t[n].cols = cols;
            n++;
        }
    }
    gw kvs = {0};
    uint64_t n_kv = 0;
#define KV_U32(k, v) (key(&kvs, k, 4), u32(&kvs, v), n_kv++)
#define KV_F32(k, v) (key(&kvs, k, 6), f32(&kvs, v), n_kv++)
    key(&kvs, "general.architecture", 8);
    str(&kvs, o.arch ? o.arch : "llama");
    n_kv++;
    KV_U32("general.alignment", 32);
    KV_U32("llama.context_length", (uint32_t)c.max_seq_len);
    KV_U32("llama.embedding_length", (uint32_t)d);
    KV_U32("llama.block_count", (uint32_t)c.n_layers);
    KV_U32("llama.feed_forward_length", (uint32_t)ff);
    KV_U32("llama.attention.head_count", (uint32_t)c.n_heads);
    KV_U32("llama.attention.head_count_kv", (uint32_t)(kv / hd));
    KV_U32("llama.rope.dimension_count", o.rope_dims ? o.rope_dims : (uint32_t)hd);
    KV_F32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
    KV_F32("llama.rope.freq_base", c.rope_theta);
#undef KV_U32
#undef KV_F32
    gw w = {0};
    header(&w, 3, (uint64_t)n, n_kv);
    put(&w, kvs.p, kvs.n);
    free(kvs.p);
    const size_t esize = o.type == LINATTN_GGML_F16 ? 2 : 4;
    uint64_t off = 0, offs[64];
    for (int i = 0; i < n; i++) {
        uint64_t dims[2] = {t[i].cols ? (uint64_t)t[i].cols : (uint64_t)t[i].rows,
                            (uint64_t)t[i].rows};
        offs[i] = off;
        /* norms stay F32 in llama.cpp's files whatever the type */
        uint32_t type = t[i].cols ? o.type : LINATTN_GGML_F32;
        tensor(&w, t[i].gguf, t[i].cols ? 2 : 1, dims, type, off);
        off += (uint64_t)t[i].rows * (uint64_t)(t[i].cols ? t[i].cols : 1) *
               (t[i].cols ? esize : 4);
        off = (off + 31) / 32 * 32;
    }
    pad(&w, 32);
    size_t data = w.n;
    for (int i = 0; i < n; i++) {
        at(&w, data, offs[i]);
        size_t count = (size_t)t[i].rows * (size_t)(t[i].cols ? t[i].cols : 1);
        for (size_t k = 0; k < count; k++) {
            if (t[i].cols && esize == 2)
                u16(&w, linattn_f32_to_f16(t[i].data[k]));
            else
                f32(&w, t[i].data[k]);
        }
    }
    tu_write_file(path, w.p, w.n);
    free(w.p);
    linattn_weights_close(src);
    return c;
}

/* The logits after each of tokens[n] fed one by one, [n, V], malloc'd. */
static float *run_tokens(linattn_model *m, const int *tokens, int n)
{
    int V = linattn_model_config(m)->vocab_size;
    float *out = malloc((size_t)n * (size_t)V * sizeof *out);
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    linattn_session_set_threads(s, 1);
    for (int t = 0; t < n; t++)
        cr_assert_eq(linattn_session_feed(s, &tokens[t], 1, out + (size_t)t * V), LINATTN_OK,
                     "%s", linattn_last_error());
    linattn_session_free(s);
    return out;
}

static linattn_model *model_of(const char *path)
{
    linattn_config c;
    cr_assert_eq(linattn_config_from_model(path, &c), LINATTN_OK, "%s", linattn_last_error());
    linattn_model *m;
    cr_assert_eq(linattn_model_from_config(&c, &m), LINATTN_OK, "%s", linattn_last_error());
    return m;
}

/* F32: the same model as the safetensors file, so the same logits bit for
 * bit (the same arithmetic on the same values, one thread); the shape, the
 * architecture and softmax attention all from the file alone. */
Test(gguf, f32_model_is_its_safetensors_model)
{
    const char *path = tu_path("m.gguf");
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    linattn_config want = write_model("tiny-softmax-llama-gqa", p, (gguf_model_opts){0});
    linattn_config c;
    cr_assert_eq(linattn_config_from_model(p, &c), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(strncmp(c.weights, "gguf:", 5), 0, "weights = %s", c.weights);
    cr_expect_eq(c.vocab_size, want.vocab_size);
    cr_expect_eq(c.d_model, want.d_model);
    cr_expect_eq(c.n_heads, want.n_heads);
    cr_expect_eq(c.n_kv_heads, want.n_kv_heads);
    cr_expect_eq(c.n_layers, want.n_layers);
    cr_expect_eq(c.d_ff, want.d_ff);
    cr_expect_eq(c.max_seq_len, want.max_seq_len);
    cr_expect_eq(c.tie_embeddings, want.tie_embeddings);
    cr_expect_eq(c.attention, LINATTN_ATTN_SOFTMAX);
    cr_expect_eq(c.rope_pairing, LINATTN_ROPE_INTERLEAVED);
    cr_expect_eq(c.norm_eps, want.norm_eps);
    cr_expect_str_eq(c.tokenizer, "", "no vocabulary in the file: bytes");
    linattn_model *a = model_of(p), *b;
    char ini[1024];
    snprintf(ini, sizeof ini, "%s/tiny-softmax-llama-gqa.ini", tu_data_dir());
    cr_assert_eq(linattn_model_load(ini, &b), LINATTN_OK, "%s", linattn_last_error());
    int tokens[12];
    for (int i = 0; i < 12; i++)
        tokens[i] = (i * 37 + 5) % 256;
    float *x = run_tokens(a, tokens, 12), *y = run_tokens(b, tokens, 12);
    cr_expect_eq(memcmp(x, y, 12 * 256 * sizeof *x), 0, "GGUF F32 logits differ");
    free(x);
    free(y);
    linattn_model_free(a);
    linattn_model_free(b);
}

/* F16: the matrices used as stored (the f16 kernels), so the logits are
 * those of the same F16 values in a safetensors file, bit for bit; and
 * near the fp32 model's by the rounding of 2^-11 per weight. */
Test(gguf, f16_model_is_its_f16_safetensors_model)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", tu_path("m16.gguf"));
    linattn_config c = write_model("tiny-softmax-llama-gqa", p,
                                   (gguf_model_opts){.type = LINATTN_GGML_F16});
    /* the same tensors as an F16 safetensors image (norms F32, as in the GGUF file) */
    linattn_weights *src;
    cr_assert_eq(linattn_weights_open(c.weights, &src), LINATTN_OK);
    int nt = linattn_weights_count(src);
    linattn_tensor_out *out = calloc((size_t)nt, sizeof *out);
    for (int i = 0; i < nt; i++) {
        linattn_tensor_info info;
        linattn_weights_tensor(src, i, &info);
        out[i].name = info.name;
        out[i].ndim = info.ndim;
        for (int k = 0; k < info.ndim; k++)
            out[i].shape[k] = info.shape[k];
        cr_assert_eq(linattn_weights_get(src, info.name, info.ndim, info.shape, &out[i].data),
                     LINATTN_OK);
        out[i].dtype = info.ndim == 2 ? LINATTN_DTYPE_F16 : LINATTN_DTYPE_F32;
    }
    void *bytes;
    size_t size;
    cr_assert_eq(linattn_weights_write_mem(out, nt, &bytes, &size), LINATTN_OK);
    linattn_model *a = model_of(p), *b;
    cr_assert_eq(linattn_model_from_config_mem(&c, bytes, size, &b), LINATTN_OK, "%s",
                 linattn_last_error());
    int tokens[10];
    for (int i = 0; i < 10; i++)
        tokens[i] = (i * 91 + 3) % 256;
    float *x = run_tokens(a, tokens, 10), *y = run_tokens(b, tokens, 10);
    cr_expect_eq(memcmp(x, y, 10 * 256 * sizeof *x), 0, "GGUF F16 logits differ");
    linattn_model_free(a);
    linattn_model_free(b);
    free(x);
    free(y);
    free(bytes);
    free(out);
    linattn_weights_close(src);
}

static void model_refused(const char *file, gguf_model_opts o, linattn_status want,
                          const char *why)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", tu_path(file));
    write_model("tiny-softmax-llama-gqa", p, o);
    linattn_config c;
    linattn_status st = linattn_config_from_model(p, &c);
    if (st == LINATTN_OK) {
        linattn_model *m = NULL;
        st = linattn_model_from_config(&c, &m);
        linattn_model_free(m);
    }
    cr_expect_eq(st, want, "%s: status %d: %s", file, (int)st, linattn_last_error());
    cr_expect(strstr(linattn_last_error(), why), "%s: '%s' lacks '%s'", file,
              linattn_last_error(), why);
}

Test(gguf, model_refusals_name_what_is_wrong)
{
    model_refused("arch.gguf", (gguf_model_opts){.arch = "qwen2"}, LINATTN_ERR_UNSUPPORTED,
                  "general.architecture is 'qwen2'");
    model_refused("rope.gguf", (gguf_model_opts){.rope_dims = 4}, LINATTN_ERR_UNSUPPORTED,
                  "llama.rope.dimension_count is 4");
    model_refused("noq.gguf", (gguf_model_opts){.drop = "blk.1.attn_q.weight"},
                  LINATTN_ERR_FORMAT, "tensor 'blk.1.attn_q.weight' (layers.1.attn.q.weight here): missing");
    /* a quantized tensor: named, with its type */
    char p[4096];
    snprintf(p, sizeof p, "%s", tu_path("q.gguf"));
    gw w = {0};
    header(&w, 3, 1, 0);
    static const uint64_t qd[] = {256, 2};
    tensor(&w, "blk.0.attn_q.weight", 2, qd, LINATTN_GGML_Q2_K, 0);
    pad(&w, 32);
    for (int i = 0; i < 2 * 84; i++)
        u8(&w, 0);
    tu_write_file(p, w.p, w.n);
    free(w.p);
    linattn_weights *x;
    cr_expect_eq(linattn_weights_open_gguf(p, &x), LINATTN_ERR_UNSUPPORTED);
    cr_expect(strstr(linattn_last_error(), "tensor 'blk.0.attn_q.weight' is Q2_K"), "%s",
              linattn_last_error());
}

/* ---- llama.cpp's tokenizer suite -------------------------------------------------
 * llama.cpp's tests/test-tokenizer-0 checks its tokenizers against
 * Hugging Face's on real vocabularies: models/ggml-vocab-NAME.gguf with
 * NAME.gguf.inp (texts split by "\n__ggml_vocab_test__\n") and
 * NAME.gguf.out (the ids of each, one line each, no bos). Those files
 * are not committed here (tests/data/gguf/README.md); the test runs over
 * the folder $LINATTN_GGUF_VOCAB names (a llama.cpp checkout's models/)
 * and is skipped without it. Every vocabulary whose file is there and
 * whose tokenizer linattn has (sentencepiece; byte-level BPE with
 * llama.cpp's pre-tokenizer patterns) must match every case. */

static int suite_cases(const char *dir, const char *name, int *matched, char *first_miss,
                       size_t miss_size)
{
    char path[4200], spec[4300];
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, name);
    snprintf(spec, sizeof spec, "gguf:%s", path);
    linattn_tokenizer *t;
    if (linattn_tokenizer_load(spec, &t) != LINATTN_OK)
        return -1;
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.inp", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        linattn_tokenizer_free(t);
        return -2;
    }
    fclose(f);
    size_t ni = 0, no = 0;
    char *inp = tu_read_file(path, &ni);
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.out", dir, name);
    char *out = tu_read_file(path, &no);
    cr_assert(inp && out, "%s: no .inp/.out", name);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    int cases = 0;
    *matched = 0;
    first_miss[0] = '\0';
    char *p = inp, *end = inp + ni, *line = out;
    while (p < end) {
        char *next = memmem(p, (size_t)(end - p), sep, sizeof sep - 1);
        size_t len = next ? (size_t)(next - p) : (size_t)(end - p);
        char *eol = strchr(line, '\n');
        cr_assert(eol, "%s: fewer outputs than inputs", name);
        *eol = '\0';
        int want[4096], nw = 0;
        for (char *q = line; *q;) {
            char *e;
            long v = strtol(q, &e, 10);
            if (e == q)
                break;
            want[nw++] = (int)v;
            q = e;
        }
        int got[4096];
        size_t ng = 0;
        linattn_status st = linattn_tokenizer_encode(t, p, len, 0, got, 4096, &ng);
        int same = st == LINATTN_OK && (int)ng == nw && !memcmp(got, want, ng * sizeof *got);
        *matched += same;
        if (!same && !first_miss[0])
            snprintf(first_miss, miss_size, "'%.*s'", (int)(len < 40 ? len : 40), p);
        cases++;
        line = eol + 1;
        p = next ? next + sizeof sep - 1 : end;
    }
    free(inp);
    free(out);
    linattn_tokenizer_free(t);
    return cases;
}

Test(gguf, llama_cpp_tokenizer_suite)
{
    const char *dir = getenv("LINATTN_GGUF_VOCAB");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/ggml-vocab-llama-spm.gguf.inp", dir ? dir : "");
    FILE *f = dir ? fopen(probe, "rb") : NULL;
    if (!f)
        cr_skip_test("no llama.cpp vocab suite (set LINATTN_GGUF_VOCAB to its models/)");
    fclose(f);
    static const struct { const char *name; int exact; } vocabs[] = {
        {"llama-spm", 1}, {"gpt-2", 1}, {"llama-bpe", 1}, {"falcon", 1},
        {"deepseek-llm", 1}, {"deepseek-coder", 1}, {"starcoder", 1}, {"qwen2", 1},
        {"phi-3", 1}, {"mpt", 1}, {"refact", 1}, {"gpt-neox", 0}, {"command-r", 0},
        {"baichuan", 0}, {"bert-bge", 0},
    };
    for (size_t i = 0; i < sizeof vocabs / sizeof vocabs[0]; i++) {
        int matched = 0;
        char miss[128];
        snprintf(probe, sizeof probe, "%s/ggml-vocab-%s.gguf", dir, vocabs[i].name);
        if (!(f = fopen(probe, "rb"))) { /* llama.cpp's folder holds some cases only */
            fprintf(stderr, "tokenizer suite: %-15s no vocabulary file\n", vocabs[i].name);
            continue;
        }
        fclose(f);
        int n = suite_cases(dir, vocabs[i].name, &matched, miss, sizeof miss);
        if (n == -2)
            fprintf(stderr, "tokenizer suite: %-15s no cases\n", vocabs[i].name);
        else if (n < 0)
            fprintf(stderr, "tokenizer suite: %-15s not read: %s\n", vocabs[i].name,
                    linattn_last_error());
        else
            fprintf(stderr, "tokenizer suite: %-15s %3d of %3d cases%s%s\n", vocabs[i].name,
                    matched, n, miss[0] ? ", first miss " : "", miss);
        if (vocabs[i].exact) {
            cr_expect_gt(n, 0, "%s: not read", vocabs[i].name);
            cr_expect_eq(matched, n, "%s: %d of %d cases match; first miss %s",
                         vocabs[i].name, matched, n, miss);
        }
    }
}

/* ---- against llama.cpp -------------------------------------------------------------
 * tests/data/gguf/: GGUF files llama.cpp's own tools made from random
 * llama2.c checkpoints (README.md there: the commands), and
 * llama-cpp-greedy.tsv: for each file and prompt, the prompt's ids and the
 * 32 tokens llama.cpp's greedy decoding gave (file, prompt, ids, ids). Run
 * with llama.cpp's default cache (K and V in F16: kv_cache = f16), F32
 * and F16 weights give llama.cpp's tokens, all 32. Q8_0 weights give them
 * up to a near-tie: where the two first differ, the token llama.cpp chose
 * is within 0.06 of linattn's best logit. (linattn's Q8_0 logits equal a
 * float64 reference of the same arithmetic, ggml's activation
 * quantization included, to 1e-6; llama.cpp's own are 0.02 to 0.04 away
 * from it on these files, so a near-tie may go either way.) */

static void ids_of(const char *s, int *v, int *n)
{
    *n = 0;
    for (char *e; *s && *s != '\t' && *s != '\n';) {
        long x = strtol(s, &e, 10);
        if (e == s)
            break;
        v[(*n)++] = (int)x;
        s = e;
    }
}

Test(gguf, llama_cpp_greedy_text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/gguf/llama-cpp-greedy.tsv", tu_data_dir());
    size_t len;
    char *tsv = tu_read_file(path, &len);
    int rows = 0;
    for (char *line = tsv; line && *line; rows++) {
        char *eol = strchr(line, '\n');
        *eol = '\0';
        char *f1 = strchr(line, '\t'), *f2 = strchr(f1 + 1, '\t'), *f3 = strchr(f2 + 1, '\t');
        *f1 = *f2 = *f3 = '\0';
        const char *file = line, *prompt = f1 + 1;
        int want_prompt[64], np, want[64], nw;
        ids_of(f2 + 1, want_prompt, &np);
        ids_of(f3 + 1, want, &nw);
        char model[4200];
        snprintf(model, sizeof model, "%s/gguf/%s", tu_data_dir(), file);
        linattn_config c;
        cr_assert_eq(linattn_config_from_model(model, &c), LINATTN_OK, "%s",
                     linattn_last_error());
        cr_expect_eq(strncmp(c.tokenizer, "gguf:", 5), 0, "%s: its own tokenizer", file);
        c.kv_cache = LINATTN_KV_F16;
        linattn_model *m;
        cr_assert_eq(linattn_model_from_config(&c, &m), LINATTN_OK, "%s", linattn_last_error());
        int ids[64];
        size_t n;
        const linattn_tokenizer *t = linattn_model_tokenizer(m);
        cr_assert_eq(linattn_tokenizer_encode(t, prompt, strlen(prompt), 1, ids, 64, &n),
                     LINATTN_OK);
        cr_expect(n == (size_t)np && !memcmp(ids, want_prompt, n * sizeof *ids),
                  "%s: '%s' encodes otherwise than llama.cpp", file, prompt);
        const int V = c.vocab_size, q8 = strstr(file, "q8_0") != NULL;
        float *lg = malloc((size_t)V * sizeof *lg);
        linattn_session *s;
        cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
        cr_assert_eq(linattn_session_feed(s, ids, (int)n, lg), LINATTN_OK);
        int same = 0;
        for (int step = 0; step < nw; step++) {
            int best = 0;
            for (int i = 1; i < V; i++)
                best = lg[i] > lg[best] ? i : best;
            if (best != want[step]) {
                cr_expect(q8, "%s '%s': token %d is %d, llama.cpp's %d", file, prompt, step,
                          best, want[step]);
                cr_expect_geq(lg[want[step]], lg[best] - 0.06f,
                              "%s '%s' step %d: llama.cpp's %d at %g, linattn's %d at %g: no "
                              "near-tie", file, prompt, step, want[step], (double)lg[want[step]],
                              best, (double)lg[best]);
                break;
            }
            same++;
            cr_assert_eq(linattn_session_feed(s, &best, 1, lg), LINATTN_OK);
        }
        fprintf(stderr, "llama.cpp greedy: %-20s '%s': %d of %d tokens the same\n", file, prompt,
                same, nw);
        linattn_session_free(s);
        linattn_model_free(m);
        free(lg);
        line = eol + 1;
    }
    cr_expect_eq(rows, 6);
    free(tsv);
}

/* Q8_0 weights: the prompt fed at once (rows by the same gemv, each its own
 * activation quantization) gives what feeding it token by token gives. */
Test(gguf, q8_0_prefill_is_token_by_token)
{
    char model[4200];
    snprintf(model, sizeof model, "%s/gguf/tiny-h192-q8_0.gguf", tu_data_dir());
    linattn_model *m = model_of(model);
    int tokens[20];
    for (int i = 0; i < 20; i++)
        tokens[i] = (i * 53 + 7) % 512;
    float *one = run_tokens(m, tokens, 20), *all = malloc(512 * sizeof *all);
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    cr_assert_eq(linattn_session_feed(s, tokens, 20, all), LINATTN_OK, "%s", linattn_last_error());
    double worst = 0;
    for (int i = 0; i < 512; i++) {
        double d = fabs((double)all[i] - one[19 * 512 + i]);
        worst = d > worst ? d : worst;
    }
    /* the attention's prefill and decode sum in other orders: fp32 rounding
     * through 2 layers of logits near 5 */
    cr_expect_leq(worst, 1e-4, "prefill vs token by token: %g", worst);
    linattn_session_free(s);
    linattn_model_free(m);
    free(one);
    free(all);
}

/* Every block type decoded as llama.cpp's gguf-py dequantizes it (an
 * independent reading of the layouts): tests/data/gguf/blocks.txt holds,
 * for 3 blocks of each type taken from the files README.md lists, the
 * ggml type, the block's bytes in hex and gguf-py's values (hex floats). */
Test(gguf, block_types_decode_as_ggml)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/gguf/blocks.txt", tu_data_dir());
    size_t len;
    char *text = tu_read_file(path, &len);
    int lines = 0, types_seen[32] = {0};
    for (char *p = text; *p; lines++) {
        char *eol = strchr(p, '\n');
        *eol = '\0';
        char *e;
        int type = (int)strtol(p, &e, 10);
        size_t be, bb;
        cr_assert(linattn_quant_block(type, &be, &bb), "line %d: type %d", lines + 1, type);
        types_seen[type]++;
        unsigned char blk[256];
        const char *h = e + 1;
        for (size_t i = 0; i < bb; i++) {
            unsigned v;
            cr_assert_eq(sscanf(h + 2 * i, "%2x", &v), 1);
            blk[i] = (unsigned char)v;
        }
        float vals[256];
        linattn_quant_values(type, blk, vals);
        char *v = (char *)h + 2 * bb;
        for (size_t i = 0; i < be; i++) {
            double want = strtod(v, &e);
            cr_assert_neq(e, v, "line %d: value %zu missing", lines + 1, i);
            v = e;
            float got = vals[i];
            cr_expect_eq((double)got, want, "type %d line %d element %zu: %.9g, gguf-py %.9g", type,
                         lines + 1, i, (double)got, want);
        }
        p = eol + 1;
    }
    static const int types[] = {2, 3, 6, 7, 8, 12, 13, 14};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        cr_expect_eq(types_seen[types[i]], 3, "type %d: %d blocks", types[i], types_seen[types[i]]);
    free(text);
}

/* ---- linattn_quantize -------------------------------------------------------------- */

/* A llama-shaped model whose rows are whole K-quant blocks (d 256),
 * random weights in a safetensors file and its config; returns the config's path. */
static const char *write_k_model(void)
{
    static char ini[4200];
    const int d = 256, ff = 512, V = 256;
    static const char *const names[] = {"tok_emb.weight", "layers.0.norm1.weight",
                                        "layers.0.attn.q.weight", "layers.0.attn.k.weight",
                                        "layers.0.attn.v.weight", "layers.0.attn.o.weight",
                                        "layers.0.norm2.weight", "layers.0.ffn.gate.weight",
                                        "layers.0.ffn.up.weight", "layers.0.ffn.down.weight",
                                        "norm_f.weight", "lm_head.weight"};
    const int64_t shapes[][2] = {{V, d}, {d, 0}, {d, d}, {d, d}, {d, d}, {d, d},
                                 {d, 0}, {ff, d}, {ff, d}, {d, ff}, {d, 0}, {V, d}};
    linattn_tensor_out t[12];
    float *data[12];
    tu_rng_seed(77);
    for (int i = 0; i < 12; i++) {
        size_t n = (size_t)shapes[i][0] * (size_t)(shapes[i][1] ? shapes[i][1] : 1);
        data[i] = malloc(n * sizeof *data[i]);
        for (size_t j = 0; j < n; j++) {
            /* a normal-ish spread with a few outliers, as trained weights have */
            double u = 0;
            for (int k = 0; k < 4; k++)
                u += (double)tu_rng() / 4294967296.0 - 0.5;
            data[i][j] = shapes[i][1] ? (float)(u * (tu_rng() % 64 ? 0.1 : 0.6))
                                      : (float)(1.0 + 0.1 * u);
        }
        t[i] = (linattn_tensor_out){names[i], shapes[i][1] ? 2 : 1,
                                    {shapes[i][0], shapes[i][1] ? shapes[i][1] : 0, 0}, data[i],
                                    LINATTN_DTYPE_F32};
    }
    void *bytes;
    size_t size;
    cr_assert_eq(linattn_weights_write_mem(t, 12, &bytes, &size), LINATTN_OK);
    tu_write_file(tu_path("k.safetensors"), bytes, size);
    free(bytes);
    for (int i = 0; i < 12; i++)
        free(data[i]);
    snprintf(ini, sizeof ini, "%s", tu_path("k.ini"));
    tu_write_text(ini, "[model]\nweights = k.safetensors\nvocab_size = 256\nd_model = 256\n"
                       "n_heads = 4\nn_layers = 1\nd_ff = 512\nattention = softmax\n"
                       "norm = rmsnorm\nffn = swiglu\npositions = rope\nbias = false\n"
                       "max_seq_len = 64\n");
    return ini;
}

/* Each type's file: the tensors' types as llama.cpp's rules give them, and
 * the matrices within the error their bits allow (relative RMS over the
 * matrices; the weights here have an outlier in 64, which costs the
 * 4-bit types most). Each bound is 1.5 to 2 times what the type gives on
 * these weights (the test prints it), so a quantizer that got worse by
 * half fails; how ours compare with llama.cpp's: docs/models.md. */
/* 20 tokens fed at once against one by one: a prompt of block-quantized
 * weights takes the activation quantized as each step does and sums in
 * the fp32 gemm's order, so the logits agree to fp32 rounding through the
 * layers: 5e-6 of the largest logit (the F32 models' prefill and decode
 * differ by 2e-7 of it, these by 7e-7; an activation rounded otherwise, by
 * 1e-3). */
static void prefill_is_steps(linattn_model *m, const char *what)
{
    int V = linattn_model_config(m)->vocab_size, tokens[20];
    for (int i = 0; i < 20; i++)
        tokens[i] = (i * 53 + 7) % V;
    float *one = run_tokens(m, tokens, 20), *all = malloc((size_t)V * sizeof *all);
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    linattn_session_set_threads(s, 1);
    cr_assert_eq(linattn_session_feed(s, tokens, 20, all), LINATTN_OK, "%s", linattn_last_error());
    double worst = 0, top = 0;
    for (int i = 0; i < V; i++) {
        double d = fabs((double)all[i] - one[(size_t)19 * V + i]);
        worst = d > worst ? d : worst;
        top = fabs(all[i]) > top ? fabs(all[i]) : top;
    }
    fprintf(stderr, "%s: prefill vs steps %.3g of %.3g\n", what, worst, top);
    cr_expect_leq(worst, 5e-6 * top, "%s: prefill vs token by token: %g (largest logit %g)", what,
                  worst, top);
    linattn_session_free(s);
    free(one);
    free(all);
}

/* Stream 0's logits in linattn_sessions_step, to the bit, alone and among
 * 2, 15, 16, 17, 40 and 70 streams (two slabs of 35): block-quantized
 * weights too (from 16 rows
 * a prompt takes integer tiles or the fp32 gemm, whose sums go in another
 * order; streams stepped together must not, or a server's text for a seed
 * would depend on how many others it runs beside). */
static void steps_alike(linattn_model *m, const char *what)
{
    const int V = linattn_model_config(m)->vocab_size;
    static const int sizes[] = {1, 2, 15, 16, 17, 40, 70};
    enum { NS = sizeof sizes / sizeof sizes[0], STEPS = 3 };
    float *first = malloc((size_t)STEPS * V * sizeof *first);
    cr_assert(first);
    for (int si = 0; si < NS; si++) {
        const int n = sizes[si];
        linattn_session *s[70];
        float *lg[70];
        int tok[70];
        for (int i = 0; i < n; i++) {
            const int prompt[3] = {1, (5 + 3 * i) % V, 9 % V};
            cr_assert_eq(linattn_session_new(m, &s[i]), LINATTN_OK);
            linattn_session_set_threads(s[i], 1);
            cr_assert_eq(linattn_session_feed(s[i], prompt, 3, NULL), LINATTN_OK);
            cr_assert(lg[i] = malloc((size_t)V * sizeof(float)));
        }
        for (int t = 0; t < STEPS; t++) {
            for (int i = 0; i < n; i++)
                tok[i] = i == 0 ? (11 + t) % V : (7 * i + t) % V;
            cr_assert_eq(linattn_sessions_step(s, tok, n, lg), LINATTN_OK, "%s",
                         linattn_last_error());
            if (si == 0)
                memcpy(first + (size_t)t * V, lg[0], (size_t)V * sizeof(float));
            else
                cr_expect_eq(memcmp(first + (size_t)t * V, lg[0], (size_t)V * sizeof(float)), 0,
                             "%s: stream 0 among %d streams differs from alone at step %d", what,
                             n, t);
        }
        for (int i = 0; i < n; i++) {
            linattn_session_free(s[i]);
            free(lg[i]);
        }
    }
    free(first);
}

Test(gguf, quantize_every_type)
{
    const char *ini = write_k_model();
    linattn_config c;
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK, "%s", linattn_last_error());
    linattn_weights *src;
    cr_assert_eq(linattn_weights_open(c.weights, &src), LINATTN_OK);
    static const struct { const char *type; int q, out, v_down; double err; } cases[] = {
        {"f32", 0, 0, 0, 0}, {"f16", 1, 1, 1, 4e-4},
        {"q8_0", 8, 8, 8, 0.008}, {"q4_0", 2, 14, 2, 0.18},
        {"q4_k", 12, 14, 12, 0.15}, {"q5_k", 13, 14, 13, 0.035},
        {"q6_k", 14, 14, 14, 0.022}, {"q4_k_m", 12, 14, 14, 0.13},
        {"q5_k_m", 13, 14, 14, 0.032},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char out[4200];
        snprintf(out, sizeof out, "%s", tu_path("out.gguf"));
        int vocab = -1;
        cr_assert_eq(linattn_quantize(&c, out, cases[k].type, &vocab), LINATTN_OK, "%s: %s",
                     cases[k].type, linattn_last_error());
        cr_expect_eq(vocab, 0, "bytes tokenizer: no vocabulary");
        linattn_gguf *g;
        cr_assert_eq(linattn_gguf_open(out, &g), LINATTN_OK, "%s", linattn_last_error());
        linattn_gguf_tensor gt;
        cr_assert_eq(linattn_gguf_find_tensor(g, "blk.0.attn_q.weight", &gt), LINATTN_OK);
        cr_expect_eq(gt.type, (uint32_t)cases[k].q, "%s: attn_q %u", cases[k].type, gt.type);
        cr_assert_eq(linattn_gguf_find_tensor(g, "output.weight", &gt), LINATTN_OK);
        cr_expect_eq(gt.type, (uint32_t)cases[k].out, "%s: output %u", cases[k].type, gt.type);
        /* one layer: llama.cpp's use_more_bits gives it the _M mixes' Q6_K */
        cr_assert_eq(linattn_gguf_find_tensor(g, "blk.0.ffn_down.weight", &gt), LINATTN_OK);
        cr_expect_eq(gt.type, (uint32_t)cases[k].v_down, "%s: ffn_down %u", cases[k].type,
                     gt.type);
        cr_assert_eq(linattn_gguf_find_tensor(g, "blk.0.attn_norm.weight", &gt), LINATTN_OK);
        cr_expect_eq(gt.type, (uint32_t)LINATTN_GGML_F32);
        linattn_gguf_free(g);
        linattn_weights *w;
        cr_assert_eq(linattn_weights_open_gguf(out, &w), LINATTN_OK, "%s", linattn_last_error());
        double num = 0, den = 0;
        for (int i = 0; i < linattn_weights_count(src); i++) {
            linattn_tensor_info info;
            linattn_weights_tensor(src, i, &info);
            const float *a, *b;
            cr_assert_eq(linattn_weights_get(src, info.name, info.ndim, info.shape, &a),
                         LINATTN_OK);
            cr_assert_eq(linattn_weights_get(w, info.name, info.ndim, info.shape, &b), LINATTN_OK,
                         "%s: %s", cases[k].type, linattn_last_error());
            for (size_t j = 0; j < info.n_elements; j++) {
                if (info.ndim == 1) {
                    cr_assert_eq(a[j], b[j], "norms stay F32");
                    continue;
                }
                num += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
                den += (double)a[j] * a[j];
            }
        }
        double err = sqrt(num / den);
        fprintf(stderr, "quantize %-7s relative RMS error %.4f\n", cases[k].type, err);
        cr_expect_leq(err, cases[k].err, "%s: relative RMS error %g", cases[k].type, err);
        linattn_weights_close(w);
        /* and the model runs from it, its prompt (past 16 rows: the fp32
         * gemm on the quantized values) as its steps (the integer kernels) */
        linattn_model *m = model_of(out);
        prefill_is_steps(m, cases[k].type);
        steps_alike(m, cases[k].type);
        linattn_model_free(m);
    }
    linattn_weights_close(src);
}

/* The vocabulary goes along: a GGUF model quantized keeps its tokenizer
 * (the same ids) and its text (greedy tokens near the F32 model's). */
Test(gguf, quantize_keeps_the_vocabulary)
{
    char in[4200], out[4200];
    snprintf(in, sizeof in, "%s/gguf/tiny-f32.gguf", tu_data_dir());
    snprintf(out, sizeof out, "%s", tu_path("q8.gguf"));
    linattn_config c;
    cr_assert_eq(linattn_config_from_model(in, &c), LINATTN_OK);
    int vocab = 0;
    cr_assert_eq(linattn_quantize(&c, out, "q8_0", &vocab), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_expect_eq(vocab, 1);
    linattn_model *a = model_of(in), *b = model_of(out);
    const char *text = "Once upon a time, the cat sat on the mat.";
    int x[64], y[64];
    size_t nx, ny;
    cr_assert_eq(linattn_tokenizer_encode(linattn_model_tokenizer(a), text, strlen(text), 1, x, 64,
                                          &nx), LINATTN_OK);
    cr_assert_eq(linattn_tokenizer_encode(linattn_model_tokenizer(b), text, strlen(text), 1, y, 64,
                                          &ny), LINATTN_OK);
    cr_expect(nx == ny && !memcmp(x, y, nx * sizeof *x), "the same ids");
    linattn_model_free(a);
    linattn_model_free(b);
}

Test(gguf, quantize_refusals)
{
    linattn_config c;
    char out[4200];
    snprintf(out, sizeof out, "%s", tu_path("x.gguf"));
    char ini[1024];
    snprintf(ini, sizeof ini, "%s/tiny-linear-llama-gqa-tied.ini", tu_data_dir());
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK);
    cr_expect_eq(linattn_quantize(&c, out, "q8_0", NULL), LINATTN_ERR_UNSUPPORTED);
    cr_expect(strstr(linattn_last_error(), "attention is not softmax"), "%s", linattn_last_error());
    snprintf(ini, sizeof ini, "%s/tiny-softmax-llama-gqa.ini", tu_data_dir());
    cr_assert_eq(linattn_config_load(ini, &c), LINATTN_OK);
    cr_expect_eq(linattn_quantize(&c, out, "q3_k", NULL), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "type 'q3_k': expected one of f32, f16, q8_0"), "%s",
              linattn_last_error());
    linattn_config r;
    linattn_config_defaults(&r);
    r = c;
    snprintf(r.weights, sizeof r.weights, "random:1");
    cr_expect_eq(linattn_quantize(&r, out, "q8_0", NULL), LINATTN_ERR_INVALID);
    cr_expect(strstr(linattn_last_error(), "no file to read"), "%s", linattn_last_error());
    FILE *f = fopen(out, "rb");
    cr_expect_null(f, "nothing written on failure");
    if (f)
        fclose(f);
}
