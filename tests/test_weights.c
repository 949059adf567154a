/* test_weights.c: safetensors loading: F32/F16/BF16 values, shape checks, malformed files, fuzzing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/f16.h"
#include "../engine/weights.h"
#include "linattn.h"
#include "testutil.h"

TestSuite(weights, .init = tu_make_dir, .fini = tu_remove_dir);

/* Builds "<u64 N><header padded with spaces><data>" in buf; the data starts
 * at an offset that is misalign (mod 4). Returns the size. */
static size_t build(uint8_t *buf, size_t cap, const char *header, const void *data, size_t n,
                    int misalign)
{
    size_t len = strlen(header);
    while ((8 + len) % 4 != (size_t)misalign)
        len++;
    cr_assert_leq(8 + len + n, cap);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)len >> (8 * i));
    memset(buf + 8, ' ', len);
    memcpy(buf + 8, header, strlen(header));
    if (n)
        memcpy(buf + 8 + len, data, n);
    return 8 + len + n;
}

static const char *write_st(const char *name, const char *header, const void *data, size_t n,
                            int misalign)
{
    static uint8_t buf[1 << 16];
    size_t size = build(buf, sizeof buf, header, data, n, misalign);
    const char *path = tu_path(name);
    tu_write_file(path, buf, size);
    return path;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The file opens, or fails with status and a message holding every
 * NULL-terminated part. */
static void expect_open_error(const char *path, linattn_status status, const char *const *parts)
{
    linattn_weights *w = (linattn_weights *)1;
    linattn_status st = linattn_weights_open(path, &w);
    const char *msg = linattn_last_error();
    cr_assert_eq(st, status, "status %d, want %d: %s", st, status, msg);
    cr_assert_null(w);
    for (int i = 0; parts[i]; i++)
        cr_assert(strstr(msg, parts[i]), "message '%s' lacks '%s'", msg, parts[i]);
}

#define EXPECT_OPEN_ERROR(path, status, ...)                                                       \
    expect_open_error(path, status, (const char *const[]){__VA_ARGS__, NULL})

/* One header with a tensor `entry` (its JSON object), and 16 bytes of data. */
static const char *one_tensor(const char *name, const char *entry)
{
    static char header[1024];
    snprintf(header, sizeof header, "{\"%s\": %s}", name, entry);
    static const uint8_t data[16] = {0};
    return write_st("bad.safetensors", header, data, sizeof data, 0);
}

Test(weights, f32_values_aligned_and_not)
{
    const float a[6] = {1.0f, -2.5f, 3.25f, 0.0f, -0.0f, 1e-40f};
    const char *header = "{\"__metadata__\": {\"format\": \"pt\", \"d_model\": \"3\"},"
                         " \"a\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]},"
                         " \"s\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [24, 28]},"
                         " \"e\": {\"dtype\": \"F32\", \"shape\": [0, 4], \"data_offsets\": [28, 28]}}";
    uint8_t data[28];
    memcpy(data, a, 24);
    const float s = 7.0f;
    memcpy(data + 24, &s, 4);
    for (int misalign = 0; misalign < 4; misalign++) {
        const char *path = write_st("f32.safetensors", header, data, sizeof data, misalign);
        linattn_weights *w;
        cr_assert_eq(linattn_weights_open(path, &w), LINATTN_OK, "%s", linattn_last_error());
        cr_assert_eq(linattn_weights_count(w), 3);
        cr_assert(linattn_weights_has(w, "a"));
        cr_assert(!linattn_weights_has(w, "b"));
        cr_assert_str_eq(linattn_weights_metadata(w, "d_model"), "3");
        cr_assert_null(linattn_weights_metadata(w, "nope"));
        cr_assert_str_eq(linattn_weights_path(w), path);
        linattn_tensor_info info;
        linattn_weights_tensor(w, 0, &info);
        cr_assert_str_eq(info.name, "a");
        cr_assert_eq(info.dtype, LINATTN_DTYPE_F32);
        cr_assert_eq(info.ndim, 2);
        cr_assert_eq(info.shape[1], 3);
        cr_assert_eq(info.n_elements, 6);

        const float *p, *again;
        cr_assert_eq(linattn_weights_get(w, "a", 2, (const int64_t[]){2, 3}, &p), LINATTN_OK,
                     "%s", linattn_last_error());
        cr_assert_eq((uintptr_t)p % 4, 0);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(bits_of(p[i]), bits_of(a[i]), "misalign %d, a[%d]", misalign, i);
        cr_assert_eq(linattn_weights_get(w, "a", 2, (const int64_t[]){2, 3}, &again), LINATTN_OK);
        cr_assert_eq(again, p);
        cr_assert_eq(linattn_weights_check_all_used(w), LINATTN_ERR_FORMAT);
        cr_assert(strstr(linattn_last_error(), "unexpected tensor 's'"), "%s", linattn_last_error());
        cr_assert_eq(linattn_weights_get(w, "s", 0, NULL, &p), LINATTN_OK, "%s", linattn_last_error());
        cr_assert_eq(p[0], 7.0f);
        cr_assert_eq(linattn_weights_get(w, "e", 2, (const int64_t[]){0, 4}, &p), LINATTN_OK,
                     "%s", linattn_last_error());
        cr_assert_not_null(p);
        cr_assert_eq(linattn_weights_check_all_used(w), LINATTN_OK, "%s", linattn_last_error());
        linattn_weights_close(w);
    }
}

/* Half-precision bit patterns and their exact values. */
static const struct {
    uint16_t bits;
    double value;
} f16_cases[] = {
    {0x3c00, 1.0},
    {0xc000, -2.0},
    {0x3555, 0.333251953125},
    {0x7bff, 65504.0},
    {0x0400, 6.103515625e-05},          /* smallest normal 2^-14 */
    {0x0001, 5.9604644775390625e-08},   /* smallest subnormal 2^-24 */
    {0x03ff, 6.097555160522461e-05},    /* largest subnormal 1023 * 2^-24 */
    {0x8200, -3.0517578125e-05},        /* -2^-15, subnormal */
    {0x0000, 0.0},
    {0x8000, -0.0},
    {0x7c00, INFINITY},
    {0xfc00, -INFINITY},
};

Test(weights, f16_values)
{
    enum { N = sizeof f16_cases / sizeof f16_cases[0] };
    uint8_t data[2 * N + 4];
    for (int i = 0; i < N; i++) {
        data[2 * i] = (uint8_t)f16_cases[i].bits;
        data[2 * i + 1] = (uint8_t)(f16_cases[i].bits >> 8);
    }
    /* two NaNs: quiet and with a payload */
    data[2 * N] = 0x00, data[2 * N + 1] = 0x7e;
    data[2 * N + 2] = 0x01, data[2 * N + 3] = 0xfc;
    char header[256];
    snprintf(header, sizeof header,
             "{\"h\": {\"dtype\": \"F16\", \"shape\": [%d], \"data_offsets\": [0, %d]},"
             " \"n\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [%d, %d]}}",
             N, 2 * N, 2 * N, 2 * N + 4);
    /* misaligned on purpose: conversion reads bytes, not uint16_t */
    const char *path = write_st("f16.safetensors", header, data, sizeof data, 1);
    linattn_weights *w;
    cr_assert_eq(linattn_weights_open(path, &w), LINATTN_OK, "%s", linattn_last_error());
    const float *h, *n;
    cr_assert_eq(linattn_weights_get(w, "h", 1, (const int64_t[]){N}, &h), LINATTN_OK, "%s",
                 linattn_last_error());
    for (int i = 0; i < N; i++) {
        float want = (float)f16_cases[i].value;
        cr_assert_eq(bits_of(h[i]), bits_of(want), "0x%04x: got %a, want %a", f16_cases[i].bits,
                     (double)h[i], (double)want);
    }
    cr_assert_eq(linattn_weights_get(w, "n", 1, (const int64_t[]){2}, &n), LINATTN_OK);
    cr_assert(isnan(n[0]) && !signbit(n[0]));
    cr_assert(isnan(n[1]) && signbit(n[1]));
    cr_assert_eq(linattn_weights_check_all_used(w), LINATTN_OK);
    linattn_weights_close(w);
}

/* Every one of the 65536 half values against ldexp, exact in double. */
Test(weights, f16_exhaustive)
{
    for (uint32_t u = 0; u < 65536; u++) {
        uint16_t h = (uint16_t)u;
        int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
        float got = linattn_f16_to_f32(h);
        if (exp == 31) {
            cr_assert(mant ? isnan(got) : isinf(got), "0x%04x", h);
            cr_assert_eq(!!signbit(got), sign, "0x%04x", h);
            if (mant) /* the payload survives in the top mantissa bits */
                cr_assert_eq((bits_of(got) >> 13) & 1023, (uint32_t)mant, "0x%04x", h);
            continue;
        }
        double v = exp ? ldexp(1024 + mant, exp - 25) : ldexp(mant, -24);
        float want = (float)(sign ? -v : v);
        cr_assert_eq(bits_of(got), bits_of(want), "0x%04x: got %a want %a", h, (double)got,
                     (double)want);
    }
}

Test(weights, bf16_values)
{
    const uint16_t bits[] = {0x3f80, 0xc040, 0x7f80, 0xff80, 0x0001, 0x8000, 0x4049};
    const float want[] = {1.0f, -3.0f, INFINITY, -INFINITY, 0, -0.0f, 3.140625f};
    uint8_t data[2 * 7 + 2];
    for (int i = 0; i < 7; i++) {
        data[2 * i] = (uint8_t)bits[i];
        data[2 * i + 1] = (uint8_t)(bits[i] >> 8);
    }
    data[14] = 0xc0, data[15] = 0x7f; /* NaN */
    const char *path = write_st("bf16.safetensors",
                                "{\"b\": {\"dtype\": \"BF16\", \"shape\": [8, 1], "
                                "\"data_offsets\": [0, 16]}}",
                                data, sizeof data, 2);
    linattn_weights *w;
    cr_assert_eq(linattn_weights_open(path, &w), LINATTN_OK, "%s", linattn_last_error());
    const float *b;
    cr_assert_eq(linattn_weights_get(w, "b", 2, (const int64_t[]){8, 1}, &b), LINATTN_OK);
    for (int i = 0; i < 7; i++) {
        if (bits[i] == 0x0001) /* a subnormal fp32, 2^-133 */
            cr_assert_eq(bits_of(b[i]), 1u << 16);
        else
            cr_assert_eq(bits_of(b[i]), bits_of(want[i]), "bf16 0x%04x", bits[i]);
    }
    cr_assert(isnan(b[7]));
    linattn_weights_close(w);
}

Test(weights, wrong_shape_missing_and_unused)
{
    const char *path = write_st("s.safetensors",
                                "{\"layers.0.attn.q.weight\": {\"dtype\": \"F32\", \"shape\": [2, 3],"
                                " \"data_offsets\": [0, 24]},"
                                " \"extra.bias\": {\"dtype\": \"F16\", \"shape\": [2],"
                                " \"data_offsets\": [24, 28]}}",
                                (const uint8_t[28]){0}, 28, 0);
    linattn_weights *w;
    cr_assert_eq(linattn_weights_open(path, &w), LINATTN_OK, "%s", linattn_last_error());
    const float *p = (const float *)1;
    cr_assert_eq(linattn_weights_get(w, "layers.0.attn.q.weight", 2, (const int64_t[]){3, 2}, &p),
                 LINATTN_ERR_FORMAT);
    cr_assert_null(p);
    const char *msg = linattn_last_error();
    cr_assert(strstr(msg, "s.safetensors: tensor 'layers.0.attn.q.weight': expected shape [3, 2], "
                          "got [2, 3]"), "%s", msg);
    cr_assert_eq(linattn_weights_get(w, "layers.0.attn.q.weight", 1, (const int64_t[]){6}, &p),
                 LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "expected shape [6], got [2, 3]"), "%s",
              linattn_last_error());
    cr_assert_eq(linattn_weights_get(w, "layers.0.attn.k.weight", 2, (const int64_t[]){2, 3}, &p),
                 LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "tensor 'layers.0.attn.k.weight': missing"), "%s",
              linattn_last_error());
    cr_assert_eq(linattn_weights_get(w, "layers.0.attn.q.weight", 2, (const int64_t[]){2, 3}, &p),
                 LINATTN_OK);
    cr_assert_eq(linattn_weights_check_all_used(w), LINATTN_ERR_FORMAT);
    cr_assert(strstr(linattn_last_error(), "unexpected tensor 'extra.bias'"), "%s",
              linattn_last_error());
    cr_assert_eq(linattn_weights_get(w, "x", -1, NULL, &p), LINATTN_ERR_INVALID);
    linattn_weights_close(w);
    linattn_weights_close(NULL);
}

/* Tensor 't.w' with this JSON entry fails to open with a message naming it
 * and holding what. */
static void expect_bad_entry(const char *entry, const char *what)
{
    EXPECT_OPEN_ERROR(one_tensor("t.w", entry), LINATTN_ERR_FORMAT, "tensor 't.w'", what);
}

Test(weights, bad_entries_name_the_tensor)
{
    EXPECT_OPEN_ERROR(one_tensor("t.w", "{\"dtype\": \"F64\", \"shape\": [2], \"data_offsets\": [0, 16]}"),
                      LINATTN_ERR_FORMAT, "bad.safetensors: tensor 't.w'", "dtype 'F64'");
    expect_bad_entry("{\"shape\": [2], \"data_offsets\": [0, 8]}", "dtype");
    expect_bad_entry("{\"dtype\": 3, \"shape\": [2], \"data_offsets\": [0, 8]}", "dtype");
    expect_bad_entry("{\"dtype\": \"F32\", \"data_offsets\": [0, 8]}", "shape");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}", "shape");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 8]}", "shape");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [\"2\"], \"data_offsets\": [0, 8]}", "shape");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], "
                     "\"data_offsets\": [0, 4]}",
                     "dimensions");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [2]}", "data_offsets");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}", "data_offsets");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}",
                     "begin 8 > end 0");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [6], \"data_offsets\": [0, 24]}",
                     "end 24 is past the end of the data (16 bytes)");
    expect_bad_entry("{\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 16]}",
                     "span 16 bytes, but F32 [3] needs 12");
    expect_bad_entry("{\"dtype\": \"BF16\", \"shape\": [4294967296, 4294967296], "
                     "\"data_offsets\": [0, 16]}",
                     "too many elements");
    expect_bad_entry("[1, 2]", "not an object");
    EXPECT_OPEN_ERROR(one_tensor("__metadata__", "{\"a\": 1}"), LINATTN_ERR_FORMAT, "metadata 'a'");
    EXPECT_OPEN_ERROR(one_tensor("__metadata__", "[]"), LINATTN_ERR_FORMAT, "__metadata__");
}

Test(weights, layout_errors)
{
    static const uint8_t data[16] = {0};
    const char *path = write_st("dup.safetensors",
                                "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                                " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                                data, sizeof data, 0);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "dup.safetensors: header: key \"a\" appears twice");
    /* the strict reader: a key twice inside an entry too (which dtype?) */
    path = write_st("dup.safetensors",
                    "{\"a\": {\"dtype\": \"F32\", \"dtype\": \"F16\", \"shape\": [1],"
                    " \"data_offsets\": [0, 4]}}", data, sizeof data, 0);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "dup.safetensors: header: key \"dtype\" appears "
                      "twice in a");
    path = write_st("overlap.safetensors",
                    "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                    " \"z\": {\"dtype\": \"F16\", \"shape\": [0], \"data_offsets\": [4, 4]},"
                    " \"b\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [6, 10]}}",
                    data, sizeof data, 0);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "tensor 'b' overlaps tensor 'a'");
}

Test(weights, broken_files)
{
    EXPECT_OPEN_ERROR(tu_path("absent.safetensors"), LINATTN_ERR_IO, "absent.safetensors");
    EXPECT_OPEN_ERROR(tu_dir(), LINATTN_ERR_IO, tu_dir());

    const char *path = tu_path("short.safetensors");
    tu_write_file(path, "\x10\x00\x00", 3);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "short.safetensors", "too short");
    tu_write_file(path, "", 0);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "short.safetensors", "too short");

    /* header length past the end */
    uint8_t buf[64] = {0};
    buf[0] = 40;
    memcpy(buf + 8, "{}", 2);
    tu_write_file(path, buf, 20);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "short.safetensors", "header length 40 runs past");
    buf[0] = 0, buf[7] = 0xff;
    tu_write_file(path, buf, 20);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "short.safetensors", "runs past");

    /* a valid file cut short: offsets then run past the end */
    const char *ok = "{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}";
    uint8_t file[256];
    size_t size = build(file, sizeof file, ok, (const uint8_t[16]){0}, 16, 0);
    tu_write_file(path, file, size - 1);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "tensor 'w'", "past the end");
    tu_write_file(path, file, 30);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "short.safetensors", "runs past");

    EXPECT_OPEN_ERROR(write_st("json.safetensors", "{\"w\": {\"dtype\": ", NULL, 0, 0),
                      LINATTN_ERR_FORMAT, "json.safetensors", "not valid JSON");
    EXPECT_OPEN_ERROR(write_st("json.safetensors", "[1, 2]", NULL, 0, 0), LINATTN_ERR_FORMAT,
                      "not a JSON object");
    EXPECT_OPEN_ERROR(write_st("json.safetensors", "{} {}", NULL, 0, 0), LINATTN_ERR_FORMAT,
                      "after the JSON value");
    EXPECT_OPEN_ERROR(write_st("json.safetensors", "", NULL, 0, 0), LINATTN_ERR_FORMAT,
                      "not valid JSON");

    /* an empty header object is a valid file with no tensors */
    linattn_weights *w;
    cr_assert_eq(linattn_weights_open(write_st("empty.safetensors", "{}", NULL, 0, 0), &w),
                 LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(linattn_weights_count(w), 0);
    cr_assert_eq(linattn_weights_check_all_used(w), LINATTN_OK);
    linattn_weights_close(w);
}

Test(weights, absurd_header_length)
{
    /* A sparse file larger than the header limit whose header claims it all. */
    const char *path = tu_path("huge.safetensors");
    const uint64_t n = 101u << 20;
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(n >> (8 * i));
    tu_write_file(path, len, 8);
    cr_assert_eq(truncate(path, (off_t)(8 + n)), 0);
    EXPECT_OPEN_ERROR(path, LINATTN_ERR_FORMAT, "huge.safetensors", "limit");
}

/* Opens path; if that works, gets every tensor with its own shape. Must
 * never crash. Returns the open status. */
static linattn_status open_and_read_all(const char *path)
{
    linattn_weights *w;
    linattn_status st = linattn_weights_open(path, &w);
    if (st != LINATTN_OK) {
        cr_assert_null(w);
        cr_assert_neq(linattn_last_error()[0], '\0');
        return st;
    }
    volatile float sink = 0;
    for (int i = 0; i < linattn_weights_count(w); i++) {
        linattn_tensor_info info;
        linattn_weights_tensor(w, i, &info);
        const float *p;
        cr_assert_eq(linattn_weights_get(w, info.name, info.ndim, info.shape, &p), LINATTN_OK,
                     "%s", linattn_last_error());
        for (size_t j = 0; j < info.n_elements; j++)
            sink += p[j];
    }
    (void)sink;
    cr_assert_eq(linattn_weights_check_all_used(w), LINATTN_OK);
    linattn_weights_close(w);
    return st;
}

Test(weights, fuzz_flips_and_truncations)
{
    const char *header =
        "{\"__metadata__\": {\"format\": \"pt\"},"
        " \"tok_emb.weight\": {\"dtype\": \"F32\", \"shape\": [4, 2], \"data_offsets\": [0, 32]},"
        " \"norm.weight\": {\"dtype\": \"F16\", \"shape\": [3], \"data_offsets\": [32, 38]},"
        " \"head.bias\": {\"dtype\": \"BF16\", \"shape\": [1, 5], \"data_offsets\": [38, 48]}}";
    uint8_t data[48];
    for (int i = 0; i < 48; i++)
        data[i] = (uint8_t)(i * 37 + 11);
    static uint8_t good[4096], bad[4096];
    size_t size = build(good, sizeof good, header, data, sizeof data, 0);
    size_t header_end = 8 + strlen(header);
    const char *path = tu_path("fuzz.safetensors");
    tu_write_file(path, good, size);
    cr_assert_eq(open_and_read_all(path), LINATTN_OK, "%s", linattn_last_error());

    int iters = tu_fuzz_iters();
    tu_rng_seed(12345);
    int opened = 0;
    for (int iter = 0; iter < iters; iter++) {
        memcpy(bad, good, size);
        size_t n = size;
        switch (iter % 4) {
        case 0: /* flip bits in the header */
            for (int k = 1 + (int)(tu_rng() % 3); k > 0; k--)
                bad[tu_rng() % header_end] ^= (uint8_t)(1u << (tu_rng() % 8));
            break;
        case 1: /* a random byte anywhere */
            bad[tu_rng() % size] = (uint8_t)tu_rng();
            break;
        case 2: /* truncate */
            n = tu_rng() % size;
            break;
        case 3: /* replace a digit of the header by another, or a length byte */
            for (int tries = 0; tries < 64; tries++) {
                size_t at = tu_rng() % header_end;
                if ((bad[at] >= '0' && bad[at] <= '9') || at < 8) {
                    bad[at] = at < 8 ? (uint8_t)tu_rng() : (uint8_t)('0' + tu_rng() % 10);
                    break;
                }
            }
            break;
        }
        tu_write_file(path, bad, n);
        opened += open_and_read_all(path) == LINATTN_OK;
    }
    /* Some mutations (data bytes, harmless digits) still make valid files. */
    cr_assert_gt(opened, 0);
    cr_assert_lt(opened, iters);
}

static void check_golden_file(const char *path)
{
    cr_assert_eq(open_and_read_all(path), LINATTN_OK, "%s", linattn_last_error());
}

/* The shipped golden models open and every tensor converts. */
Test(weights, golden_files)
{
    tu_each_data_file(".safetensors", check_golden_file);
}

/* The worst tensor table: a header of the largest size allowed (100 MiB,
 * MAX_HEADER_BYTES in weights.c), filled with tensors of one float each
 * (765,000) whose names share a 66-byte prefix, in descending order of
 * name and of data offset, so that every sort compares whole names and
 * meets its input reversed; first with every name distinct (opened), then
 * with the middle name repeated at the end (refused, naming it). The header
 * is parsed once by the strict JSON reader (its duplicate-key check sorts
 * each object's keys), then the names and the offsets are sorted once
 * each: O(n log n). Measured here (Emerald Rapids VM, release): 3.7 s of
 * CPU to open and 1.9 s to refuse, most of it cJSON's allocations; the
 * bound, 60 s for the two, is 10x that; comparing pairs of names would be
 * 3e11 compares of 70 bytes or more, hours. Skipped under ASan (a timing of
 * seconds: the native run checks it). */
#define TABLE_PREFIX "model.layers.attention.linear.feature_map.projection.weight.block."
static size_t worst_table(char *buf, size_t cap, int dup, int *n_out, char *mid, size_t mid_size)
{
    const size_t head = (size_t)100 << 20;
    const int n = 765000; /* fits 100 MiB with room for the duplicate */
    size_t at = 8;
    at += (size_t)snprintf(buf + at, cap - at, "{");
    for (int i = 0; i < n; i++) {
        int k = n - 1 - i; /* descending names and offsets */
        at += (size_t)snprintf(buf + at, cap - at,
                               "%s\"" TABLE_PREFIX "%07d\":{\"dtype\":\"F32\",\"shape\":[1],"
                               "\"data_offsets\":[%d,%d]}", i ? "," : "", k, 4 * k, 4 * k + 4);
        cr_assert_lt(at, head, "the table outgrew the header at tensor %d", i);
    }
    snprintf(mid, mid_size, TABLE_PREFIX "%07d", n / 2);
    if (dup) /* the middle name again, over the bytes past the others */
        at += (size_t)snprintf(buf + at, cap - at,
                               ",\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
                               mid, 4 * n, 4 * n + 4);
    at += (size_t)snprintf(buf + at, cap - at, "}");
    cr_assert_leq(at, 8 + head, "%zu header bytes", at - 8);
    memset(buf + at, ' ', 8 + head - at); /* padded to exactly the limit */
    for (int i = 0; i < 8; i++)
        buf[i] = (char)((uint64_t)head >> (8 * i));
    at = 8 + head;
    memset(buf + at, 0, 4 * (size_t)(n + 1)); /* the data: n + 1 floats */
    *n_out = n + dup;
    return at + 4 * (size_t)(n + 1);
}

Test(weights, worst_tensor_table_is_n_log_n)
{
    if (TU_SANITIZED)
        cr_skip_test("a timing: the native run checks it");
    size_t cap = ((size_t)100 << 20) + 8 + 4 * 1000000 + 4096;
    char *buf = malloc(cap), mid[128];
    cr_assert(buf);
    int n;
    size_t size = worst_table(buf, cap, 0, &n, mid, sizeof mid);
    double t0 = tu_cpu_seconds();
    linattn_weights *w = NULL;
    cr_assert_eq(linattn_weights_open_mem(buf, size, "worst.safetensors", &w), LINATTN_OK, "%s",
                 linattn_last_error());
    double t_open = tu_cpu_seconds() - t0;
    cr_assert_eq(linattn_weights_count(w), n);
    cr_assert(linattn_weights_has(w, mid));
    cr_assert(linattn_weights_has(w, TABLE_PREFIX "0000000"));
    cr_assert(!linattn_weights_has(w, TABLE_PREFIX "9999999"));
    linattn_weights_close(w);

    size = worst_table(buf, cap, 1, &n, mid, sizeof mid);
    t0 = tu_cpu_seconds();
    w = (linattn_weights *)1;
    linattn_status st = linattn_weights_open_mem(buf, size, "worst.safetensors", &w);
    double t_dup = tu_cpu_seconds() - t0;
    cr_assert_eq(st, LINATTN_ERR_FORMAT, "%s", linattn_last_error());
    cr_assert_null(w);
    char want[160];
    snprintf(want, sizeof want, "key \"%s\" appears twice", mid);
    cr_assert(strstr(linattn_last_error(), "worst.safetensors") &&
                  strstr(linattn_last_error(), want), "%s", linattn_last_error());
    fprintf(stderr, "worst tensor table (%d tensors, 100 MiB header): %.2f s CPU to open, "
            "%.2f s to refuse the duplicate\n", n, t_open, t_dup);
    cr_assert_lt(t_open + t_dup, 60.0, "%.1f s + %.1f s", t_open, t_dup);
    free(buf);
}
