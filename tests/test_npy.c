/* test_npy.c: .npy round trips, v1/v2 and <f8 input, and every malformed header refused with a message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../engine/cli/npy.h"
#include "testutil.h"

TestSuite(npy, .init = tu_make_dir, .fini = tu_remove_dir);

/* A file built by hand: magic, version, header (padded to 64 with '\n'),
 * then data bytes. */
static size_t build(unsigned char *buf, int major, const char *dict, const void *data,
                    size_t data_bytes)
{
    size_t pre = major == 1 ? 10 : 12, n = strlen(dict);
    size_t total = (pre + n + 1 + 63) / 64 * 64, hlen = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    buf[8] = (unsigned char)hlen;
    buf[9] = (unsigned char)(hlen >> 8);
    if (major == 2)
        buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, n);
    memset(buf + pre + n, ' ', total - pre - n - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, data_bytes);
    return total + data_bytes;
}

Test(npy, round_trip)
{
    const size_t shapes[][4] = {{2, 3, 4, 5}, {1, 1, 1, 1}, {7, 0, 0, 0}};
    const int ndims[] = {4, 4, 1};
    for (int s = 0; s < 3; s++) {
        size_t n = 1;
        for (int i = 0; i < ndims[s]; i++)
            n *= shapes[s][i];
        float *x = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            x[i] = (float)i * 0.37f - 5.0f;
        char name[16];
        snprintf(name, sizeof name, "a%d.npy", s);
        const char *path = tu_path(name);
        cr_assert_eq(linattn_npy_write(path, x, ndims[s], shapes[s]), LINATTN_OK, "%s",
                     linattn_last_error());
        linattn_npy a;
        cr_assert_eq(linattn_npy_read(path, &a), LINATTN_OK, "%s", linattn_last_error());
        cr_expect_eq(a.ndim, ndims[s]);
        for (int i = 0; i < ndims[s]; i++)
            cr_expect_eq(a.shape[i], shapes[s][i]);
        cr_expect_eq(a.count, n);
        cr_expect(!memcmp(a.data, x, n * sizeof(float)));
        linattn_npy_free(&a);
        free(x);
    }
    cr_expect_eq(tu_count_files(), 3, "no temporary files are left behind");
}

Test(npy, header_is_numpy_v1)
{
    const char *path = tu_path("h.npy");
    size_t shape[1] = {3};
    float x[3] = {1, 2, 3};
    cr_assert_eq(linattn_npy_write(path, x, 1, shape), LINATTN_OK);
    size_t n;
    unsigned char *buf = (unsigned char *)tu_read_file(path, &n);
    /* 10 + 58 + '\n' bytes, padded with spaces to 128 */
    cr_assert_eq(n, 128 + 12);
    cr_expect(!memcmp(buf, "\x93NUMPY\x01\x00", 8));
    cr_expect_eq(buf[8] | buf[9] << 8, 128 - 10);
    cr_expect_eq(buf[127], '\n');
    cr_expect_eq(buf[126], ' ');
    const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    cr_expect(!memcmp(buf + 10, want, strlen(want)));
    cr_expect(!memcmp(buf + 128, x, 12));
    free(buf);
}

Test(npy, reads_v2_and_f8)
{
    unsigned char buf[512];
    double d[6] = {1.5, -2.25, 3, 4, 1e-3, 1e30};
    size_t n = build(buf, 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d,
                     sizeof d);
    linattn_npy a;
    cr_assert_eq(linattn_npy_parse(buf, n, "mem", &a), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(a.ndim, 2);
    cr_expect_eq(a.shape[0], 2);
    cr_expect_eq(a.shape[1], 3);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(a.data[i], (float)d[i]);
    linattn_npy_free(&a);

    /* key order and spacing as other writers produce them; 0-d */
    float one = 7;
    n = build(buf, 1, "{\"shape\":(),\"fortran_order\":False,\"descr\":\"<f4\"}", &one, 4);
    cr_assert_eq(linattn_npy_parse(buf, n, "mem", &a), LINATTN_OK, "%s", linattn_last_error());
    cr_expect_eq(a.ndim, 0);
    cr_expect_eq(a.count, 1);
    cr_expect_eq(a.data[0], 7);
    linattn_npy_free(&a);
}

static void expect_bad(const unsigned char *buf, size_t n, const char *what, const char *needle)
{
    linattn_npy a;
    linattn_status st = linattn_npy_parse(buf, n, "bad.npy", &a);
    cr_expect_eq(st, LINATTN_ERR_FORMAT, "%s: status %d", what, st);
    cr_expect_null(a.data, "%s", what);
    const char *msg = linattn_last_error();
    cr_expect(strstr(msg, "bad.npy") != NULL, "%s: message '%s' names the file", what, msg);
    if (needle)
        cr_expect(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
}

Test(npy, malformed_headers)
{
    unsigned char buf[512];
    float x[4] = {0};
    size_t n;
    static const char good[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
    n = build(buf, 1, good, x, sizeof x);
    linattn_npy a;
    cr_assert_eq(linattn_npy_parse(buf, n, "ok", &a), LINATTN_OK);
    linattn_npy_free(&a);

    expect_bad(buf, 5, "too short", "magic");
    buf[0] = 'X';
    expect_bad(buf, n, "bad magic", "magic");
    n = build(buf, 3, good, x, sizeof x);
    expect_bad(buf, n, "version 3", "version");
    n = build(buf, 1, good, x, sizeof x);
    expect_bad(buf, 40, "truncated header", "truncated");
    expect_bad(buf, n - 1, "data too short", "data");
    n = build(buf, 1, good, x, sizeof x + 0);
    buf[n] = 0;
    expect_bad(buf, n + 1, "data too long", "data");

    static const struct { const char *dict, *needle, *what; } cases[] = {
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }", "fortran", "fortran order"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", "<i4", "int dtype"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", ">f4", "big-endian"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", "<f2", "half"},
        {"{'fortran_order': False, 'shape': (4,), }", "descr", "no descr"},
        {"{'descr': '<f4', 'shape': (4,), }", "fortran_order", "no order"},
        {"{'descr': '<f4', 'fortran_order': False, }", "shape", "no shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", "'x'", "extra key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, x), }", "shape", "bad shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", "shape", "negative dim"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }", "fortran", "bad bool"},
        {"['descr', '<f4']", "dict", "not a dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'shape': (2, 2), }", "twice",
         "duplicated shape"},
        {"{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", "twice",
         "duplicated descr"},
        {"{'descr': '<f4', 'fortran_order': False, 'fortran_order': False, 'shape': (4,), }",
         "twice", "duplicated order"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,)", NULL, "unclosed"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (4,)}", NULL, "no comma"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
         "shape", "huge dim"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
         NULL, "overflowing count"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        n = build(buf, 1, cases[i].dict, x, sizeof x);
        expect_bad(buf, n, cases[i].what, cases[i].needle);
    }
}

Test(npy, file_errors)
{
    linattn_npy a;
    cr_expect_eq(linattn_npy_read(tu_path("missing.npy"), &a), LINATTN_ERR_IO);
    cr_expect(strstr(linattn_last_error(), "missing.npy") != NULL);

    const char *empty = tu_path("empty.npy");
    tu_write_file(empty, "", 0);
    cr_expect_eq(linattn_npy_read(empty, &a), LINATTN_ERR_FORMAT);

    size_t shape[1] = {1};
    float x = 1;
    cr_expect_eq(linattn_npy_write(tu_path("no/such/dir/out.npy"), &x, 1, shape), LINATTN_ERR_IO);
    cr_expect(linattn_last_error()[0] != '\0');
    cr_expect_eq(tu_count_files(), 1, "only empty.npy: a failed write leaves nothing");
}

/* The worst .npy header: a version 2 header (its length a u32) of 256 MiB,
 * nearly all of it blanks and the leading zeros of a dimension, read in one
 * pass: first a file that parses (shape (2, 3)), then one whose 'shape'
 * comes again after the blanks (refused, naming it). The format allows a
 * header of 4 GiB in a file of at most 16 GiB; 256 MiB keeps the test's
 * memory small and the time linear says the rest. Measured here (release,
 * Emerald Rapids VM) 0.75 s of CPU for the two; asserted under 10 s (13x;
 * a rescan from the start at each token would be 1e16 steps). */
static size_t worst_npy(unsigned char *buf, size_t hlen, int dup)
{
    static const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
    memcpy(buf, magic, 8);
    for (int i = 0; i < 4; i++)
        buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    char *h = (char *)buf + 12;
    size_t third = hlen / 3;
    memset(h, ' ', hlen);
    h[0] = '{';
    size_t at = third; /* blanks, then the keys and a dimension of many zeros */
    at += (size_t)sprintf(h + at, "'descr': '<f4', 'fortran_order': False, 'shape': (");
    memset(h + at, '0', third);
    at += third;
    at += (size_t)sprintf(h + at, "2, 3), ");
    h[at] = ' ';
    const char *end = dup ? "'shape': (2, 3)}" : "}";
    memcpy(h + hlen - 1 - strlen(end), end, strlen(end));
    h[hlen - 1] = '\n';
    memset(buf + 12 + hlen, 0, 24); /* six floats */
    return 12 + hlen + 24;
}

Test(npy, worst_header_is_linear)
{
    const size_t hlen = (size_t)256 << 20;
    unsigned char *buf = malloc(hlen + 64);
    cr_assert(buf);
    linattn_npy a;
    double t0 = tu_cpu_seconds();
    size_t size = worst_npy(buf, hlen, 0);
    double t1 = tu_cpu_seconds();
    cr_assert_eq(linattn_npy_parse(buf, size, "worst.npy", &a), LINATTN_OK, "%s",
                 linattn_last_error());
    double cpu = tu_cpu_seconds() - t1;
    cr_assert(a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3 && a.count == 6);
    linattn_npy_free(&a);
    size = worst_npy(buf, hlen, 1);
    t1 = tu_cpu_seconds();
    cr_assert_eq(linattn_npy_parse(buf, size, "worst.npy", &a), LINATTN_ERR_FORMAT);
    cpu += tu_cpu_seconds() - t1;
    cr_assert(strstr(linattn_last_error(), "worst.npy: npy header: key 'shape' appears twice"),
              "%s", linattn_last_error());
    fprintf(stderr, "worst npy header (256 MiB): %.2f s CPU for the two parses (%.2f s to "
            "build one)\n", cpu, t1 - t0);
    cr_assert_lt(cpu, 10.0, "two headers of 256 MiB took %.1f s", cpu);
    free(buf);
}
