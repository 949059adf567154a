/* test_attend.c: `linattn attend` end to end: the built binary (LINATTN_EXE) on .npy files against the library call. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linattn.h"
#include "../engine/cli/npy.h"
#include "testutil.h"

TestSuite(attend, .init = tu_make_dir, .fini = tu_remove_dir);

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Runs linattn with args (NULL-terminated, without argv[0]) and asserts it
 * exited with status 0. */
static void run_ok(const char *const *args)
{
    tu_run_result r = tu_run_args(args);
    tu_assert_ok(&r);
    tu_run_free(&r);
}

static float *random_tensor(size_t n, unsigned seed)
{
    float *x = malloc(n * sizeof(float));
    srand(seed);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
    return x;
}

/* Writes q (B,H,Lq,dk), k (B,H,Lk,dk), v (B,H,Lk,dv) to the folder. */
typedef struct tensors {
    int B, H, Lq, Lk, dk, dv;
    float *q, *k, *v;
} tensors;

static tensors write_inputs(int B, int H, int Lq, int Lk, int dk, int dv)
{
    tensors t = {B, H, Lq, Lk, dk, dv, NULL, NULL, NULL};
    size_t sq[4] = {(size_t)B, (size_t)H, (size_t)Lq, (size_t)dk};
    size_t sk[4] = {(size_t)B, (size_t)H, (size_t)Lk, (size_t)dk};
    size_t sv[4] = {(size_t)B, (size_t)H, (size_t)Lk, (size_t)dv};
    t.q = random_tensor(sq[0] * sq[1] * sq[2] * sq[3], 1);
    t.k = random_tensor(sk[0] * sk[1] * sk[2] * sk[3], 2);
    t.v = random_tensor(sv[0] * sv[1] * sv[2] * sv[3], 3);
    cr_assert_eq(linattn_npy_write(tu_path("q.npy"), t.q, 4, sq), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(tu_path("k.npy"), t.k, 4, sk), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(tu_path("v.npy"), t.v, 4, sv), LINATTN_OK);
    return t;
}

static void free_inputs(tensors *t)
{
    free(t->q);
    free(t->k);
    free(t->v);
}

/* The output file against the library call with the same settings. */
static void expect_output_decay(const tensors *t, const char *out_path, int softmax, int causal,
                                const int *lengths, float scale, float eps, const float *decay)
{
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = t->B, d.heads = t->H, d.len_q = t->Lq, d.len_k = t->Lk;
    d.d_k = t->dk, d.d_v = t->dv, d.causal = causal, d.lengths = lengths;
    d.scale = scale, d.eps = eps, d.threads = 1, d.decay = decay;
    size_t n = (size_t)t->B * t->H * t->Lq * t->dv;
    float *want = malloc(n * sizeof(float));
    linattn_status st = softmax ? linattn_attention_softmax(&d, t->q, t->k, t->v, want)
                                : linattn_attention_linear(&d, t->q, t->k, t->v, want);
    cr_assert_eq(st, LINATTN_OK, "%s", linattn_last_error());
    linattn_npy got;
    cr_assert_eq(linattn_npy_read(out_path, &got), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_eq(got.ndim, 4);
    cr_expect_eq(got.shape[0], (size_t)t->B);
    cr_expect_eq(got.shape[1], (size_t)t->H);
    cr_expect_eq(got.shape[2], (size_t)t->Lq);
    cr_expect_eq(got.shape[3], (size_t)t->dv);
    cr_assert_eq(got.count, n);
    double e = 0;
    for (size_t i = 0; i < n; i++)
        e = fmax(e, fabs((double)got.data[i] - want[i]));
    cr_expect(e <= 1e-6, "attend output differs from the library call by %g", e);
    linattn_npy_free(&got);
    free(want);
}

static void expect_output(const tensors *t, const char *out_path, int softmax, int causal,
                          const int *lengths, float scale, float eps)
{
    expect_output_decay(t, out_path, softmax, causal, lengths, scale, eps, NULL);
}

Test(attend, softmax_from_flags)
{
    tensors t = write_inputs(2, 3, 9, 11, 5, 4);
    const char *args[] = {"attend", "--variant", "softmax", "--causal", "--lengths", "11,7",
                          "--scale", "0.3", "--q", tu_path("q.npy"), "--k", tu_path("k.npy"),
                          "--v", tu_path("v.npy"), "--out", tu_path("out.npy"), "--threads", "1",
                          NULL};
    run_ok(args);
    int lengths[2] = {11, 7};
    expect_output(&t, tu_path("out.npy"), 1, 1, lengths, 0.3f, 1e-6f);
    free_inputs(&t);
}

Test(attend, linear_from_config_with_override)
{
    tensors t = write_inputs(1, 2, 13, 13, 6, 3);
    tu_write_text(tu_path("op.ini"),
                  "; an operator run\n[attention]\nvariant = softmax\ncausal = true\neps = 1e-3\n"
                  "q = q.npy\nk = k.npy\nv = v.npy\nout = out.npy\n[runtime]\nthreads = 1\n");
    /* run from another folder: paths resolve from the config's */
    const char *args[] = {"attend", tu_path("op.ini"), "--variant", "linear", NULL};
    run_ok(args);
    expect_output(&t, tu_path("out.npy"), 0, 1, NULL, 0, 1e-3f);

    const char *args2[] = {"attend", tu_path("op.ini"), "--no-causal", "--out",
                           tu_path("out2.npy"), NULL};
    run_ok(args2);
    expect_output(&t, tu_path("out2.npy"), 1, 0, NULL, 0, 1e-3f);
    free_inputs(&t);
}

Test(attend, decay_from_flags_and_config)
{
    tensors t = write_inputs(2, 3, 20, 30, 5, 4);
    const char *args[] = {"attend", "--variant", "linear", "--causal", "--decay", "0.5,0.9,1",
                          "--lengths", "30,17", "--q", tu_path("q.npy"), "--k", tu_path("k.npy"),
                          "--v", tu_path("v.npy"), "--out", tu_path("out.npy"), NULL};
    run_ok(args);
    int lengths[2] = {30, 17};
    const float g[3] = {0.5f, 0.9f, 1.0f};
    expect_output_decay(&t, tu_path("out.npy"), 0, 1, lengths, 0, 1e-6f, g);

    tu_write_text(tu_path("op.ini"), "[attention]\nvariant = linear\ndecay = retnet\n"
                                     "q = q.npy\nk = k.npy\nv = v.npy\nout = out2.npy\n");
    const char *args2[] = {"attend", tu_path("op.ini"), NULL};
    run_ok(args2);
    const float r[3] = {1.0f - 1.0f / 32, 1.0f - 1.0f / 64, 1.0f - 1.0f / 128};
    expect_output_decay(&t, tu_path("out2.npy"), 0, 1, NULL, 0, 1e-6f, r);
    /* the flag wins over the config; none turns it off */
    const char *args3[] = {"attend", tu_path("op.ini"), "--decay", "none", "--out",
                           tu_path("out3.npy"), NULL};
    run_ok(args3);
    expect_output(&t, tu_path("out3.npy"), 0, 1, NULL, 0, 1e-6f);

    struct {
        const char *decay, *extra, *want;
    } bad[] = {
        {"0.5,0.9", NULL, "decay has 2 values but"},
        {"0.5,0.9,1.5", NULL, "(0, 1]"},
        {"0.5,x,1", NULL, "--decay"},
        {"retnet", "--no-causal", "decay needs variant = linear and causal = true"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_run_result res = tu_run("attend", "--variant", "linear", "--causal", "--decay",
                                   bad[i].decay, "--q", tu_path("q.npy"), "--k", tu_path("k.npy"),
                                   "--v", tu_path("v.npy"), "--out", tu_path("bad.npy"),
                                   bad[i].extra, NULL);
        cr_expect_neq(res.status, 0, "case %zu", i);
        cr_expect(strstr(res.err, bad[i].want), "case %zu: %s", i, res.err);
        cr_expect(!strchr(res.err, '\n') || strchr(res.err, '\n') == res.err + res.err_len - 1,
                  "one line: %s", res.err);
        tu_run_free(&res);
    }
    tu_run_result res = tu_run("attend", "--variant", "softmax", "--causal", "--decay", "retnet",
                               "--q", tu_path("q.npy"), "--k", tu_path("k.npy"), "--v",
                               tu_path("v.npy"), "--out", tu_path("bad.npy"), NULL);
    cr_expect_neq(res.status, 0);
    cr_expect(strstr(res.err, "decay needs variant = linear"), "%s", res.err);
    tu_run_free(&res);
    cr_expect(!exists(tu_path("bad.npy")), "a failed run wrote its output");
    free_inputs(&t);
}

/* One validator for flags and config values: --scale -1 is refused as
 * scale = -1 is; flags with blanks or junk are refused. */
Test(attend, flags_and_config_share_a_validator)
{
    tensors t = write_inputs(1, 1, 3, 3, 2, 2);
    struct {
        const char *flag, *value, *want;
    } bad[] = {
        {"--scale", "-1", "key 'scale'"},   {"--eps", "-1e-3", "key 'eps'"},
        {"--scale", " 2", "--scale"},       {"--eps", "1e-6x", "--eps"},
        {"--threads", "-1", "--threads"},   {"--scale", "nan", "--scale"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_run_result r = tu_run("attend", "--variant", "softmax", bad[i].flag, bad[i].value,
                                 "--q", tu_path("q.npy"), "--k", tu_path("k.npy"), "--v",
                                 tu_path("v.npy"), "--out", tu_path("o.npy"), NULL);
        cr_expect_neq(r.status, 0, "%s %s accepted", bad[i].flag, bad[i].value);
        cr_expect(strstr(r.err, bad[i].want), "%s %s: %s", bad[i].flag, bad[i].value, r.err);
        tu_run_free(&r);
    }
    tu_write_text(tu_path("s.ini"), "[attention]\nscale = -1\n");
    tu_run_result r = tu_run("attend", tu_path("s.ini"), NULL);
    cr_expect(strstr(r.err, "s.ini:2: [attention] key 'scale'"), "%s", r.err);
    tu_run_free(&r);
    cr_expect(!exists(tu_path("o.npy")));
    free_inputs(&t);
}

Test(attend, bad_config_names_file_line_key)
{
    tu_write_text(tu_path("bad.ini"), "[attention]\nvariant = linear\nwobble = 3\n");
    const char *args[] = {"attend", tu_path("bad.ini"), NULL};
    tu_run_result r = tu_run_args(args);
    cr_expect_neq(r.status, 0);
    cr_expect_eq(tu_count_lines(r.err, r.err_len), 1, "one line: %s", r.err);
    cr_expect(strstr(r.err, "bad.ini:3") && strstr(r.err, "wobble"), "names file, line, key: %s",
              r.err);
    tu_run_free(&r);
}

/* Every bad input: exit != 0, exactly one line "linattn: attend: ..." on
 * stderr, and no output file. */
static void expect_refused(const char *const *args, const char *needle)
{
    unlink(tu_path("out.npy"));
    tu_run_result r = tu_run_args(args);
    const char *err = r.err;
    cr_expect_neq(r.status, 0, "%s: exit status 0", needle);
    cr_expect_eq(tu_count_lines(err, r.err_len), 1, "%s: stderr is not one line: '%s'", needle,
                 err);
    cr_expect(!strncmp(err, "linattn: attend: ", 17), "%s: stderr '%s'", needle, err);
    cr_expect(strstr(err, needle) != NULL, "stderr '%s' lacks '%s'", err, needle);
    tu_run_free(&r);
    cr_expect(!exists(tu_path("out.npy")), "%s: an output file was left", needle);
    DIR *d = opendir(tu_dir());
    struct dirent *e;
    while ((e = readdir(d)))
        cr_expect(!strstr(e->d_name, ".tmp"), "%s: temporary file %s left", needle, e->d_name);
    closedir(d);
}

Test(attend, bad_inputs_leave_no_output)
{
    tensors t = write_inputs(2, 2, 4, 5, 3, 2);
    /* a k with the wrong d_k, a v with the wrong length, a 3-D array, an int array */
    size_t s_k[4] = {2, 2, 5, 4}, s_v[4] = {2, 2, 6, 2}, s3[3] = {2, 5, 3};
    float zeros[200] = {0};
    cr_assert_eq(linattn_npy_write(tu_path("k4.npy"), zeros, 4, s_k), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(tu_path("v6.npy"), zeros, 4, s_v), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(tu_path("k3d.npy"), zeros, 3, s3), LINATTN_OK);
    /* an int32 array: a v1 header padded to 128 bytes, then 4 bytes */
    static const char dict[] = "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }";
    char file[128 + 4];
    memset(file, ' ', 128);
    memcpy(file, "\x93NUMPY\x01\x00\x76\x00", 10);
    memcpy(file + 10, dict, sizeof dict - 1);
    file[127] = '\n';
    memset(file + 128, 0, 4);
    tu_write_file(tu_path("int.npy"), file, sizeof file);

#define BASE "attend", "--variant", "linear", "--q", tu_path("q.npy"), "--out", tu_path("out.npy")
    const char *a1[] = {BASE, "--k", tu_path("k4.npy"), "--v", tu_path("v.npy"), NULL};
    expect_refused(a1, "d_k");
    const char *a2[] = {BASE, "--k", tu_path("k.npy"), "--v", tu_path("v6.npy"), NULL};
    expect_refused(a2, "keys");
    const char *a3[] = {BASE, "--k", tu_path("k3d.npy"), "--v", tu_path("v.npy"), NULL};
    expect_refused(a3, "4-D");
    const char *a4[] = {BASE, "--k", tu_path("int.npy"), "--v", tu_path("v.npy"), NULL};
    expect_refused(a4, "<i4");
    const char *a5[] = {BASE, "--k", tu_path("k.npy"), "--v", tu_path("v.npy"), "--lengths", "5",
                        NULL};
    expect_refused(a5, "lengths");
    const char *a6[] = {BASE, "--k", tu_path("k.npy"), "--v", tu_path("v.npy"), "--lengths", "5,6",
                        NULL};
    expect_refused(a6, "lengths[1]");
    const char *a7[] = {BASE, "--k", tu_path("k.npy"), "--v", tu_path("v.npy"), "--lengths", "5,x",
                        NULL};
    expect_refused(a7, "--lengths");
    const char *a8[] = {BASE, "--k", tu_path("nothere.npy"), "--v", tu_path("v.npy"), NULL};
    expect_refused(a8, "nothere.npy");
    const char *a9[] = {BASE, "--k", tu_path("k.npy"), "--v", tu_path("v.npy"), "--eps", "-1",
                        NULL};
    expect_refused(a9, "eps");
    const char *a10[] = {BASE, "--k", tu_path("k.npy"), NULL};
    expect_refused(a10, "--v");
    const char *a11[] = {BASE, "--k", tu_path("k.npy"), "--v", tu_path("v.npy"), "--isa", "sse9",
                         NULL};
    expect_refused(a11, "sse9");
    const char *a12[] = {"attend", "--q", tu_path("q.npy"), "--k", tu_path("k.npy"), "--v",
                         tu_path("v.npy"), "--out", tu_path("out.npy"), NULL};
    expect_refused(a12, "variant");
    const char *a13[] = {BASE, "--k", tu_path("k.npy"), "--v", tu_path("v.npy"), "--bogus", NULL};
    expect_refused(a13, "--bogus");
#undef BASE
    /* and the good call works */
    const char *ok[] = {"attend", "--variant", "linear", "--q", tu_path("q.npy"), "--k",
                        tu_path("k.npy"), "--v", tu_path("v.npy"), "--out", tu_path("out.npy"),
                        NULL};
    tu_run_result r = tu_run_args(ok);
    cr_expect_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    cr_expect(exists(tu_path("out.npy")));
    free_inputs(&t);
}

Test(attend, help)
{
    const char *args[] = {"attend", "--help", NULL};
    tu_run_result r = tu_run_args(args);
    cr_expect_eq(r.status, 0);
    cr_expect_eq(r.err[0], '\0');
    tu_run_free(&r);
}

/* Grouped- and multi-query k/v: (B, G, Lk, D) with G dividing H gives what
 * the same k/v expanded to H heads gives, byte for byte; G not dividing H,
 * or k and v with different heads, are refused. */
Test(attend, grouped_query_kv)
{
    const int B = 1, H = 4, Lq = 5, Lk = 7, dk = 8, dv = 3;
    for (int G = 1; G <= 2; G++) {
        size_t sq[4] = {B, H, Lq, dk}, sk[4] = {B, (size_t)G, Lk, dk}, sv[4] = {B, (size_t)G, Lk, dv};
        size_t ske[4] = {B, H, Lk, dk}, sve[4] = {B, H, Lk, dv};
        float *q = random_tensor((size_t)B * H * Lq * dk, 11);
        float *k = random_tensor((size_t)B * G * Lk * dk, 12 + G);
        float *v = random_tensor((size_t)B * G * Lk * dv, 14 + G);
        float *ke = malloc((size_t)H * Lk * dk * sizeof(float));
        float *ve = malloc((size_t)H * Lk * dv * sizeof(float));
        for (int h = 0; h < H; h++) {
            memcpy(ke + (size_t)h * Lk * dk, k + (size_t)(h / (H / G)) * Lk * dk,
                   (size_t)Lk * dk * sizeof(float));
            memcpy(ve + (size_t)h * Lk * dv, v + (size_t)(h / (H / G)) * Lk * dv,
                   (size_t)Lk * dv * sizeof(float));
        }
        cr_assert_eq(linattn_npy_write(tu_path("q.npy"), q, 4, sq), LINATTN_OK);
        cr_assert_eq(linattn_npy_write(tu_path("kg.npy"), k, 4, sk), LINATTN_OK);
        cr_assert_eq(linattn_npy_write(tu_path("vg.npy"), v, 4, sv), LINATTN_OK);
        cr_assert_eq(linattn_npy_write(tu_path("ke.npy"), ke, 4, ske), LINATTN_OK);
        cr_assert_eq(linattn_npy_write(tu_path("ve.npy"), ve, 4, sve), LINATTN_OK);
        for (int var = 0; var < 2; var++) {
            const char *variant = var ? "linear" : "softmax";
            const char *g[] = {"attend", "--variant", variant, "--causal", "--q", tu_path("q.npy"),
                               "--k", tu_path("kg.npy"), "--v", tu_path("vg.npy"), "--out",
                               tu_path("og.npy"), NULL};
            const char *e[] = {"attend", "--variant", variant, "--causal", "--q", tu_path("q.npy"),
                               "--k", tu_path("ke.npy"), "--v", tu_path("ve.npy"), "--out",
                               tu_path("oe.npy"), NULL};
            run_ok(g);
            run_ok(e);
            size_t na, nb;
            char *a = tu_read_file(tu_path("og.npy"), &na), *b = tu_read_file(tu_path("oe.npy"), &nb);
            cr_assert_eq(na, nb);
            cr_assert_eq(memcmp(a, b, na), 0, "%s G=%d", variant, G);
            free(a);
            free(b);
        }
        free(q), free(k), free(v), free(ke), free(ve);
    }
    size_t s3[4] = {1, 3, 7, 8}, s3v[4] = {1, 3, 7, 3};
    float zeros[512] = {0};
    cr_assert_eq(linattn_npy_write(tu_path("k3.npy"), zeros, 4, s3), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(tu_path("v3.npy"), zeros, 4, s3v), LINATTN_OK);
    const char *bad[] = {"attend", "--variant", "linear", "--q", tu_path("q.npy"), "--k",
                         tu_path("k3.npy"), "--v", tu_path("v3.npy"), "--out", tu_path("o.npy"),
                         NULL};
    expect_refused(bad, "do not divide");
    const char *mixed[] = {"attend", "--variant", "linear", "--q", tu_path("q.npy"), "--k",
                           tu_path("kg.npy"), "--v", tu_path("ve.npy"), "--out", tu_path("o.npy"),
                           NULL};
    expect_refused(mixed, "k and v must match");
}

/* A flag the chosen variant does not use is a warning, and the run goes on. */
Test(attend, flags_that_do_not_apply_warn)
{
    tensors t = write_inputs(1, 2, 3, 3, 4, 2);
    const char *lin[] = {"attend", "--variant", "linear", "--scale", "0.5", "--q", tu_path("q.npy"),
                         "--k", tu_path("k.npy"), "--v", tu_path("v.npy"), "--out",
                         tu_path("out.npy"), NULL};
    tu_run_result r = tu_run_args(lin);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "warning: --scale applies to softmax"), "%s", r.err);
    tu_run_free(&r);
    const char *soft[] = {"attend", "--variant", "softmax", "--eps", "0.1", "--q", tu_path("q.npy"),
                          "--k", tu_path("k.npy"), "--v", tu_path("v.npy"), "--out",
                          tu_path("out.npy"), NULL};
    r = tu_run_args(soft);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "warning: --eps applies to linear"), "%s", r.err);
    tu_run_free(&r);
    free_inputs(&t);
}
