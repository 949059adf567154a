/* test_attend.c: `linattn attend` end to end: the built binary (LINATTN_EXE) on .npy files against the library call. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linattn.h"
#include "../engine/npy.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/linattn-attend-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

TestSuite(attend, .init = make_dir, .fini = remove_dir);

static const char *in_dir(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Runs LINATTN_EXE with args (NULL-terminated, without argv[0]); returns
 * the exit status and puts stderr in err. */
static int run_cli(const char *const *args, char *err, size_t err_size)
{
    const char *exe = getenv("LINATTN_EXE");
    cr_assert_not_null(exe, "LINATTN_EXE is not set");
    const char *argv[32] = {exe};
    int n = 1;
    while (args[n - 1])
        argv[n] = args[n - 1], n++;
    argv[n] = NULL;
    const char *err_path = in_dir("stderr.txt");
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        dup2(null, 1);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    FILE *f = fopen(err_path, "rb");
    size_t got = f ? fread(err, 1, err_size - 1, f) : 0;
    err[got] = '\0';
    if (f)
        fclose(f);
    unlink(err_path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
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
    cr_assert_eq(linattn_npy_write(in_dir("q.npy"), t.q, 4, sq), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(in_dir("k.npy"), t.k, 4, sk), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(in_dir("v.npy"), t.v, 4, sv), LINATTN_OK);
    return t;
}

static void free_inputs(tensors *t)
{
    free(t->q);
    free(t->k);
    free(t->v);
}

/* The output file against the library call with the same settings. */
static void expect_output(const tensors *t, const char *out_path, int softmax, int causal,
                          const int *lengths, float scale, float eps)
{
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = t->B, d.heads = t->H, d.len_q = t->Lq, d.len_k = t->Lk;
    d.d_k = t->dk, d.d_v = t->dv, d.causal = causal, d.lengths = lengths;
    d.scale = scale, d.eps = eps, d.threads = 1;
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

Test(attend, softmax_from_flags)
{
    tensors t = write_inputs(2, 3, 9, 11, 5, 4);
    char err[4096];
    const char *args[] = {"attend", "--variant", "softmax", "--causal", "--lengths", "11,7",
                          "--scale", "0.3", "--q", in_dir("q.npy"), "--k", in_dir("k.npy"),
                          "--v", in_dir("v.npy"), "--out", in_dir("out.npy"), "--threads", "1",
                          NULL};
    cr_assert_eq(run_cli(args, err, sizeof err), 0, "stderr: %s", err);
    int lengths[2] = {11, 7};
    expect_output(&t, in_dir("out.npy"), 1, 1, lengths, 0.3f, 1e-6f);
    free_inputs(&t);
}

Test(attend, linear_from_config_with_override)
{
    tensors t = write_inputs(1, 2, 13, 13, 6, 3);
    FILE *f = fopen(in_dir("op.ini"), "w");
    cr_assert_not_null(f);
    fputs("; an operator run\n[attention]\nvariant = softmax\ncausal = true\neps = 1e-3\n"
          "q = q.npy\nk = k.npy\nv = v.npy\nout = out.npy\n[runtime]\nthreads = 1\n",
          f);
    fclose(f);
    char err[4096];
    /* run from another folder: paths resolve from the config's */
    const char *args[] = {"attend", in_dir("op.ini"), "--variant", "linear", NULL};
    cr_assert_eq(run_cli(args, err, sizeof err), 0, "stderr: %s", err);
    expect_output(&t, in_dir("out.npy"), 0, 1, NULL, 0, 1e-3f);

    const char *args2[] = {"attend", in_dir("op.ini"), "--no-causal", "--out",
                           in_dir("out2.npy"), NULL};
    cr_assert_eq(run_cli(args2, err, sizeof err), 0, "stderr: %s", err);
    expect_output(&t, in_dir("out2.npy"), 1, 0, NULL, 0, 1e-3f);
    free_inputs(&t);
}

Test(attend, bad_config_names_file_line_key)
{
    FILE *f = fopen(in_dir("bad.ini"), "w");
    fputs("[attention]\nvariant = linear\nwobble = 3\n", f);
    fclose(f);
    char err[4096];
    const char *args[] = {"attend", in_dir("bad.ini"), NULL};
    cr_expect_neq(run_cli(args, err, sizeof err), 0);
    cr_expect_eq(count_lines(err), 1, "one line: %s", err);
    cr_expect(strstr(err, "bad.ini:3") && strstr(err, "wobble"), "names file, line, key: %s",
              err);
}

/* Every bad input: exit != 0, exactly one line "linattn: attend: ..." on
 * stderr, and no output file. */
static void expect_refused(const char *const *args, const char *needle)
{
    char err[4096];
    unlink(in_dir("out.npy"));
    int rc = run_cli(args, err, sizeof err);
    cr_expect_neq(rc, 0, "%s: exit status 0", needle);
    cr_expect_eq(count_lines(err), 1, "%s: stderr is not one line: '%s'", needle, err);
    cr_expect(!strncmp(err, "linattn: attend: ", 17), "%s: stderr '%s'", needle, err);
    cr_expect(strstr(err, needle) != NULL, "stderr '%s' lacks '%s'", err, needle);
    cr_expect(!exists(in_dir("out.npy")), "%s: an output file was left", needle);
    DIR *d = opendir(dir);
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
    cr_assert_eq(linattn_npy_write(in_dir("k4.npy"), zeros, 4, s_k), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(in_dir("v6.npy"), zeros, 4, s_v), LINATTN_OK);
    cr_assert_eq(linattn_npy_write(in_dir("k3d.npy"), zeros, 3, s3), LINATTN_OK);
    /* an int32 array: a v1 header padded to 128 bytes, then 4 bytes */
    static const char dict[] = "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }";
    char hdr[128];
    memset(hdr, ' ', sizeof hdr);
    memcpy(hdr, "\x93NUMPY\x01\x00\x76\x00", 10);
    memcpy(hdr + 10, dict, sizeof dict - 1);
    hdr[127] = '\n';
    FILE *f = fopen(in_dir("int.npy"), "wb");
    fwrite(hdr, 1, sizeof hdr, f);
    fwrite("\0\0\0\0", 1, 4, f);
    fclose(f);

#define BASE "attend", "--variant", "linear", "--q", in_dir("q.npy"), "--out", in_dir("out.npy")
    const char *a1[] = {BASE, "--k", in_dir("k4.npy"), "--v", in_dir("v.npy"), NULL};
    expect_refused(a1, "d_k");
    const char *a2[] = {BASE, "--k", in_dir("k.npy"), "--v", in_dir("v6.npy"), NULL};
    expect_refused(a2, "keys");
    const char *a3[] = {BASE, "--k", in_dir("k3d.npy"), "--v", in_dir("v.npy"), NULL};
    expect_refused(a3, "4-D");
    const char *a4[] = {BASE, "--k", in_dir("int.npy"), "--v", in_dir("v.npy"), NULL};
    expect_refused(a4, "<i4");
    const char *a5[] = {BASE, "--k", in_dir("k.npy"), "--v", in_dir("v.npy"), "--lengths", "5",
                        NULL};
    expect_refused(a5, "lengths");
    const char *a6[] = {BASE, "--k", in_dir("k.npy"), "--v", in_dir("v.npy"), "--lengths", "5,6",
                        NULL};
    expect_refused(a6, "lengths[1]");
    const char *a7[] = {BASE, "--k", in_dir("k.npy"), "--v", in_dir("v.npy"), "--lengths", "5,x",
                        NULL};
    expect_refused(a7, "--lengths");
    const char *a8[] = {BASE, "--k", in_dir("nothere.npy"), "--v", in_dir("v.npy"), NULL};
    expect_refused(a8, "nothere.npy");
    const char *a9[] = {BASE, "--k", in_dir("k.npy"), "--v", in_dir("v.npy"), "--eps", "-1",
                        NULL};
    expect_refused(a9, "eps");
    const char *a10[] = {BASE, "--k", in_dir("k.npy"), NULL};
    expect_refused(a10, "--v");
    const char *a11[] = {BASE, "--k", in_dir("k.npy"), "--v", in_dir("v.npy"), "--isa", "sse9",
                         NULL};
    expect_refused(a11, "sse9");
    const char *a12[] = {"attend", "--q", in_dir("q.npy"), "--k", in_dir("k.npy"), "--v",
                         in_dir("v.npy"), "--out", in_dir("out.npy"), NULL};
    expect_refused(a12, "variant");
    const char *a13[] = {BASE, "--k", in_dir("k.npy"), "--v", in_dir("v.npy"), "--bogus", NULL};
    expect_refused(a13, "--bogus");
#undef BASE
    /* and the good call works */
    const char *ok[] = {"attend", "--variant", "linear", "--q", in_dir("q.npy"), "--k",
                        in_dir("k.npy"), "--v", in_dir("v.npy"), "--out", in_dir("out.npy"),
                        NULL};
    char err[4096];
    cr_expect_eq(run_cli(ok, err, sizeof err), 0, "%s", err);
    cr_expect(exists(in_dir("out.npy")));
    free_inputs(&t);
}

Test(attend, help)
{
    char err[4096];
    const char *args[] = {"attend", "--help", NULL};
    cr_expect_eq(run_cli(args, err, sizeof err), 0);
    cr_expect_eq(err[0], '\0');
}
