/* test_files.c: files written safely (symlinks, devices, modes, stale and killed temporaries) and read safely (FIFOs, devices, sizes). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linattn.h"
#include "../engine/cli/npy.h"
#include "../engine/weights.h"
#include "testutil.h"

TestSuite(files, .init = tu_make_dir, .fini = tu_remove_dir);

static linattn_model *tiny_model(linattn_attention_kind kind, int max_seq_len)
{
    linattn_config c;
    linattn_config_defaults(&c);
    snprintf(c.weights, sizeof c.weights, "random:3");
    c.d_model = 32, c.n_heads = 4, c.n_layers = 2, c.d_ff = 64;
    c.max_seq_len = max_seq_len;
    c.attention = kind;
    linattn_model *m = NULL;
    cr_assert_eq(linattn_model_from_config(&c, &m), LINATTN_OK, "%s", linattn_last_error());
    return m;
}

static linattn_session *fed_session(linattn_model *m, int n)
{
    linattn_session *s;
    cr_assert_eq(linattn_session_new(m, &s), LINATTN_OK);
    int tokens[4096];
    for (int i = 0; i < n; i++)
        tokens[i] = (i * 37 + 11) & 255;
    if (n)
        cr_assert_eq(linattn_session_feed(s, tokens, n, NULL), LINATTN_OK, "%s",
                     linattn_last_error());
    return s;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
    return st.st_mode;
}

/* Entries of the test folder whose name contains ".tmp.". */
static int count_temporaries(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c '\\.tmp\\.' > '%s'", tu_dir(),
             tu_path("count.txt"));
    cr_assert_neq(system(cmd), -1);
    size_t n;
    char *text = tu_read_file(tu_path("count.txt"), &n);
    int count = atoi(text);
    free(text);
    return count;
}

/* A symlink is followed: its target gets the new file, the link stays. A
 * dangling link creates its target. */
Test(files, saves_follow_symlinks)
{
    linattn_model *m = tiny_model(LINATTN_ATTN_LINEAR, 64);
    linattn_session *s = fed_session(m, 10), *back = fed_session(m, 0);
    cr_assert_eq(symlink("real.bin", tu_path("link.bin")), 0);
    cr_assert_eq(linattn_session_save(s, tu_path("link.bin"), NULL, 0), LINATTN_OK, "%s",
                 linattn_last_error());
    cr_expect(S_ISLNK(mode_of(tu_path("link.bin"))), "the link was replaced by a file");
    cr_expect(S_ISREG(mode_of(tu_path("real.bin"))));
    cr_assert_eq(linattn_session_load(back, tu_path("real.bin"), NULL, 0, NULL), LINATTN_OK);
    cr_expect_eq(linattn_session_tokens(back), 10u);
    /* saved again through the link: still a link */
    cr_assert_eq(linattn_session_save(s, tu_path("link.bin"), NULL, 0), LINATTN_OK);
    cr_expect(S_ISLNK(mode_of(tu_path("link.bin"))));

    float data[6] = {1, 2, 3, 4, 5, 6};
    size_t shape[2] = {2, 3};
    cr_assert_eq(symlink("out-real.npy", tu_path("out.npy")), 0);
    cr_assert_eq(linattn_npy_write(tu_path("out.npy"), data, 2, shape), LINATTN_OK);
    cr_expect(S_ISLNK(mode_of(tu_path("out.npy"))));
    cr_expect(S_ISREG(mode_of(tu_path("out-real.npy"))));
    linattn_session_free(s);
    linattn_session_free(back);
    linattn_model_free(m);
}

/* A device node, FIFO, socket or folder at the path is refused and left as
 * it was (a private node: tests never touch /dev). */
Test(files, devices_fifos_sockets_and_folders_are_refused)
{
    cr_assert_eq(mknod(tu_path("node"), S_IFCHR | 0600, makedev(1, 3)), 0, "mknod: %s",
                 strerror(errno));
    cr_assert_eq(mkfifo(tu_path("fifo"), 0600), 0);
    cr_assert_eq(mkdir(tu_path("dir"), 0700), 0);
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", tu_path("sock"));
    cr_assert_eq(bind(sock, (struct sockaddr *)&addr, sizeof addr), 0);
    cr_assert_eq(symlink("node", tu_path("link-to-node")), 0);

    linattn_model *m = tiny_model(LINATTN_ATTN_LINEAR, 64);
    linattn_session *s = fed_session(m, 5);
    const char *names[] = {"node", "fifo", "dir", "sock", "link-to-node"};
    const char *kinds[] = {"character device", "FIFO", "folder", "socket", "character device"};
    float data[2] = {1, 2};
    size_t shape[1] = {2};
    for (size_t i = 0; i < 5; i++) {
        mode_t before = mode_of(tu_path(names[i]));
        cr_expect_eq(linattn_session_save(s, tu_path(names[i]), NULL, 0), LINATTN_ERR_IO,
                     "%s accepted", names[i]);
        cr_expect(strstr(linattn_last_error(), kinds[i]), "%s", linattn_last_error());
        cr_expect_eq(linattn_npy_write(tu_path(names[i]), data, 1, shape), LINATTN_ERR_IO);
        cr_expect_eq(mode_of(tu_path(names[i])), before, "%s changed", names[i]);
    }
    /* the CLI: attend --out on the node fails before reading its inputs */
    tu_run_result r = tu_run("attend", "--variant", "linear", "--q", tu_path("q.npy"), "--k",
                             tu_path("q.npy"), "--v", tu_path("q.npy"), "--out", tu_path("node"),
                             NULL);
    cr_expect_neq(r.status, 0);
    cr_expect(strstr(r.err, "character device"), "%s", r.err);
    cr_expect(S_ISCHR(mode_of(tu_path("node"))));
    tu_run_free(&r);
    close(sock);
    cr_expect_eq(count_temporaries(), 0);
    linattn_session_free(s);
    linattn_model_free(m);
}

/* A re-save keeps the file's mode; a new file gets 0666 & ~umask. */
Test(files, modes)
{
    linattn_model *m = tiny_model(LINATTN_ATTN_LINEAR, 64);
    linattn_session *s = fed_session(m, 3);
    mode_t old = umask(027);
    cr_assert_eq(linattn_session_save(s, tu_path("a.bin"), NULL, 0), LINATTN_OK);
    cr_expect_eq(mode_of(tu_path("a.bin")) & 0777, 0640);
    cr_assert_eq(chmod(tu_path("a.bin"), 0600), 0);
    cr_assert_eq(linattn_session_save(s, tu_path("a.bin"), NULL, 0), LINATTN_OK);
    cr_expect_eq(mode_of(tu_path("a.bin")) & 0777, 0600, "re-save changed 0600 to %o",
                 mode_of(tu_path("a.bin")) & 0777);
    cr_assert_eq(chmod(tu_path("a.bin"), 0604), 0);
    float data[1] = {1};
    size_t shape[1] = {1};
    cr_assert_eq(linattn_npy_write(tu_path("a.bin"), data, 1, shape), LINATTN_OK);
    cr_expect_eq(mode_of(tu_path("a.bin")) & 0777, 0604);
    umask(old);
    linattn_session_free(s);
    linattn_model_free(m);
}

/* The pid of a process that has exited. */
static pid_t dead_pid(void)
{
    pid_t p = fork();
    cr_assert_neq(p, -1);
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return p;
}

/* Temporaries of processes that no longer run are removed by the next save
 * to the same path; a live process's, and other names, stay. */
Test(files, stale_temporaries_are_removed)
{
    linattn_model *m = tiny_model(LINATTN_ATTN_LINEAR, 64);
    linattn_session *s = fed_session(m, 3);
    char name[128];
    pid_t dead = dead_pid();
    const char *keep[] = {"s.bin.tmp.1.0", "s.bin.tmp.x.3", "t.bin.tmp.999999.1", "s.bin.tmpl"};
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "s.bin.tmp.%ld.%d", (long)dead, i * 7);
        tu_write_text(tu_path(name), "stale");
    }
    for (size_t i = 0; i < 4; i++)
        tu_write_text(tu_path(keep[i]), "keep");
    cr_assert_eq(linattn_session_save(s, tu_path("s.bin"), NULL, 0), LINATTN_OK);
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "s.bin.tmp.%ld.%d", (long)dead, i * 7);
        cr_expect_neq(access(tu_path(name), F_OK), 0, "%s was not removed", name);
    }
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(access(tu_path(keep[i]), F_OK), 0, "%s was removed", keep[i]);
    linattn_session_free(s);
    linattn_model_free(m);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Saves killed at random moments: every snapshot of the path loads (the
 * old state or the new), and the next save leaves no temporary behind.
 * The kill delays are scaled by this machine's save time (a fixed range
 * killed too few saves mid-write on a fast disk), and rounds go on until
 * enough kills landed mid-write, so the control does not depend on speed. */
Test(files, killed_saves_leave_loadable_files_and_no_temporaries)
{
    linattn_model *m = tiny_model(LINATTN_ATTN_SOFTMAX, 4096);
    linattn_session *s = fed_session(m, 4000); /* about 2 MB of cache to write */
    linattn_session *probe = fed_session(m, 0);
    char path[512]; /* tu_path's buffers are reused */
    snprintf(path, sizeof path, "%s", tu_path("k.bin"));
    cr_assert_eq(linattn_session_save(s, path, NULL, 0), LINATTN_OK);
    double best = 1e9; /* the fastest of five saves, seconds */
    for (int i = 0; i < 5; i++) {
        double t0 = now_s();
        cr_assert_eq(linattn_session_save(s, path, NULL, 0), LINATTN_OK);
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    long save_ns = (long)(best * 1e9) + 1000;
    unsigned seed = 12345;
    int rounds = 0, mid_write = 0; /* kills that left a temporary (the next save removes it) */
    for (; rounds < 400 && mid_write < 20; rounds++) {
        pid_t p = fork();
        cr_assert_neq(p, -1);
        if (p == 0) {
            for (;;)
                linattn_session_save(s, path, NULL, 0);
        }
        seed = seed * 1103515245u + 12345u;
        /* fork's own cost plus 0 to 4 saves */
        struct timespec ts = {0, 100000 + (long)((seed >> 8) % 4096u) * save_ns / 1024};
        while (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        nanosleep(&ts, NULL);
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        cr_assert_eq(linattn_session_load(probe, path, NULL, 0, NULL), LINATTN_OK,
                     "round %d: the file does not load: %s", rounds, linattn_last_error());
        mid_write += count_temporaries() > 0;
    }
    cr_expect_geq(mid_write, 20, "only %d of %d saves were killed mid-write (control; a save takes %.3f ms)",
                  mid_write, rounds, best * 1e3);
    cr_assert_eq(linattn_session_save(s, path, NULL, 0), LINATTN_OK);
    cr_expect_eq(count_temporaries(), 0, "temporaries of killed saves remain");
    linattn_session_free(s);
    linattn_session_free(probe);
    linattn_model_free(m);
}

/* --save-state paths that cannot work fail at once: no text is generated. */
Test(files, unusable_save_paths_fail_before_generating)
{
    cr_assert_eq(mkdir(tu_path("dir"), 0700), 0);
    char longname[300];
    memset(longname, 'n', 240);
    longname[240] = '\0';
    const char *paths[] = {tu_path("dir"), "", tu_path("dir/"), tu_path(longname),
                           tu_path("missing/x.bin")};
    const char *want[] = {"folder", "empty path", "folder", "too long", "missing"};
    for (size_t i = 0; i < 5; i++) {
        tu_run_result r = tu_run("generate", tu_data("tiny-linear-pre-ln-gelu-sincos.ini"),
                                 "--prompt", "Hi", "--tokens", "5", "--save-state", paths[i],
                                 NULL);
        cr_expect_neq(r.status, 0, "case %zu", i);
        cr_expect_eq(r.out_len, 0, "case %zu: generated before failing: %s", i, r.out);
        cr_expect(strstr(r.err, "linattn: save-state: ") == r.err, "%s", r.err);
        cr_expect(strstr(r.err, want[i]), "case %zu: %s", i, r.err);
        tu_run_free(&r);
    }
    cr_expect_eq(count_temporaries(), 0);
}

/* Reads take regular files only and never block: a FIFO (with no writer)
 * or a device is refused at once, for every kind of input. */
Test(files, fifos_and_devices_are_refused_without_blocking)
{
    cr_assert_eq(mkfifo(tu_path("fifo"), 0600), 0);
    cr_assert_eq(mknod(tu_path("zero"), S_IFCHR | 0600, makedev(1, 5)), 0);
    linattn_config c;
    cr_expect_eq(linattn_config_load(tu_path("fifo"), &c), LINATTN_ERR_IO);
    cr_expect(strstr(linattn_last_error(), "FIFO"), "%s", linattn_last_error());
    linattn_npy a;
    cr_expect_eq(linattn_npy_read(tu_path("zero"), &a), LINATTN_ERR_IO);
    cr_expect(strstr(linattn_last_error(), "character device"), "%s", linattn_last_error());
    linattn_weights *w;
    cr_expect_eq(linattn_weights_open(tu_path("fifo"), &w), LINATTN_ERR_IO);
    linattn_model *m = tiny_model(LINATTN_ATTN_LINEAR, 64);
    linattn_session *s = fed_session(m, 0);
    cr_expect_eq(linattn_session_load(s, tu_path("fifo"), NULL, 0, NULL), LINATTN_ERR_IO);
    cr_expect_eq(linattn_session_load(s, tu_path("zero"), NULL, 0, NULL), LINATTN_ERR_IO);

    tu_write_text(tu_path("w.ini"), "[model]\nweights = fifo\nd_model = 8\nn_heads = 2\n"
                                    "n_layers = 1\nd_ff = 8\n");
    struct {
        const char *args[12];
        const char *want;
    } runs[] = {
        {{"generate", tu_path("fifo"), NULL}, "FIFO"},
        {{"generate", tu_path("w.ini"), "--prompt", "x", NULL}, "FIFO"},
        {{"generate", tu_data("tiny-linear-pre-ln-gelu-sincos.ini"), "--prompt-file",
          tu_path("fifo"), NULL}, "FIFO"},
        {{"generate", tu_data("tiny-linear-pre-ln-gelu-sincos.ini"), "--load-state",
          tu_path("zero"), NULL}, "character device"},
        {{"attend", "--variant", "linear", "--q", tu_path("zero"), "--k", tu_path("zero"), "--v",
          tu_path("zero"), "--out", tu_path("o.npy"), NULL}, "character device"},
        {{"eval", tu_data("tiny-linear-pre-ln-gelu-sincos.ini"), "--text", tu_path("fifo"),
          NULL}, "FIFO"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        time_t t0 = time(NULL);
        tu_run_result r = tu_run_args(runs[i].args);
        cr_expect_neq(r.status, 0, "run %zu", i);
        cr_expect(strstr(r.err, runs[i].want), "run %zu: %s", i, r.err);
        cr_expect_leq(time(NULL) - t0, 5, "run %zu took too long", i);
        tu_run_free(&r);
    }
    linattn_session_free(s);
    linattn_model_free(m);
}

/* A weights file that changes between open and the end of loading is
 * refused (aligned F32 tensors are read in place from its map). */
Test(files, weights_changed_while_loading)
{
    size_t n;
    char *bytes = tu_read_file(tu_data("tiny-linear-pre-ln-gelu-sincos.safetensors"), &n);
    tu_write_file(tu_path("w.safetensors"), bytes, n);
    linattn_weights *w;
    cr_assert_eq(linattn_weights_open(tu_path("w.safetensors"), &w), LINATTN_OK);
    cr_expect_eq(linattn_weights_check_unchanged(w), LINATTN_OK);
    FILE *f = fopen(tu_path("w.safetensors"), "ab"); /* grows: the map stays valid */
    fputs("more", f);
    fclose(f);
    cr_expect_eq(linattn_weights_check_unchanged(w), LINATTN_ERR_IO);
    cr_expect(strstr(linattn_last_error(), "changed while being loaded"), "%s",
              linattn_last_error());
    linattn_weights_close(w);
    free(bytes);
}

/* Bytes from files and flags reach messages escaped: a terminal control
 * sequence in a config cannot drive the user's terminal. */
Test(files, messages_escape_control_bytes)
{
    tu_write_text(tu_path("bad.ini"), "[model]\nweights = \x1b[2J\x1b]0;pwned\x07.st\nd_model = 8\n"
                                      "n_heads = 2\nn_layers = 1\nd_ff = 8\nnorm = caf\xc3\xa9\x9b\n");
    linattn_config c;
    cr_expect_neq(linattn_config_load(tu_path("bad.ini"), &c), LINATTN_OK);
    const char *msg = linattn_last_error();
    for (const char *p = msg; *p; p++)
        cr_expect((unsigned char)*p >= 0x20 && *p != 0x7f, "control byte %#x in: %s",
                  (unsigned char)*p, msg);
    cr_expect(strstr(msg, "caf\xc3\xa9\\x9b"), "valid UTF-8 kept, a stray byte escaped: %s", msg);
    tu_run_result r = tu_run("generate", tu_path("bad.ini"), "--prompt", "x", NULL);
    cr_expect_neq(r.status, 0);
    cr_expect(!strchr(r.err, '\x1b'), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("generate", tu_data("tiny-linear-pre-ln-gelu-sincos.ini"), "--tokens",
               "\x1b[31mred", NULL);
    cr_expect_neq(r.status, 0);
    cr_expect(!strchr(r.err, '\x1b') && strstr(r.err, "\\x1b[31mred"), "%s", r.err);
    tu_run_free(&r);
}
