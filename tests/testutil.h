/* testutil.h: helpers shared by the Criterion suites: a temporary folder per
 * test, whole-file writes and reads, tests/data lookups, and runs of the built
 * `linattn` binary with its output captured.
 *
 * The helpers fail the calling test with Criterion asserts when something
 * they need is missing (a file cannot be opened, an environment variable is
 * unset), so callers need not check their results. */
#ifndef LINATTN_TESTUTIL_H
#define LINATTN_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "linattn.h"

/* ---- a temporary folder per test -------------------------------------------
 * Criterion runs every test in its own process, so one folder at a time:
 *     TestSuite(name, .init = tu_make_dir, .fini = tu_remove_dir);
 * No .timeout on suites: Criterion 2.4 leaks its timer request when a test
 * beats it (LeakSanitizer then fails the run); meson's test timeout bounds us. */

/* Creates $TMPDIR/linattn-test-XXXXXX (/tmp without TMPDIR). */
void tu_make_dir(void);
/* Removes the folder and the files in it (it holds no subfolders). */
void tu_remove_dir(void);
/* The folder tu_make_dir created. */
const char *tu_dir(void);
/* tu_dir()/name; a ring of 8 buffers, so a few paths can be alive at once. */
const char *tu_path(const char *name);
/* The number of entries in tu_dir() (without . and ..). */
int tu_count_files(void);

/* ---- files ----------------------------------------------------------------- */

/* Writes n bytes to path, replacing it. */
void tu_write_file(const char *path, const void *bytes, size_t n);
/* Writes the string text (without its NUL) to path. */
void tu_write_text(const char *path, const char *text);
/* The whole file, NUL-terminated, in a malloc'd buffer; its size in *n. */
char *tu_read_file(const char *path, size_t *n);

/* ---- tests/data ------------------------------------------------------------ */

/* $LINATTN_DATA (tests/data). */
const char *tu_data_dir(void);
/* $LINATTN_DATA/name; a ring of 8 buffers like tu_path. */
const char *tu_data(const char *name);
/* Calls check(path) on every file of $LINATTN_DATA whose name ends with
 * suffix, and asserts there was at least one. Skips the test when
 * LINATTN_DATA is unset. */
void tu_each_data_file(const char *suffix, void (*check)(const char *path));

/* 1 when $LINATTN_SKIP_FIGURES is 1: CI's reruns of the suites (another
 * ISA, no OpenMP) leave the shipped models' figures, minutes of evaluation,
 * to the native run that checks them. */
int tu_skip_figures(void);

/* ---- fuzzing --------------------------------------------------------------- */

/* $LINATTN_FUZZ_ITERS, or 200. */
int tu_fuzz_iters(void);
/* A small LCG, reproducible across platforms: seed it, then draw 24-bit values. */
void tu_rng_seed(uint32_t seed);
uint32_t tu_rng(void);

/* ---- running the built binaries -------------------------------------------- */

/* What a run printed (binary-safe: a token may be any byte, NUL included);
 * out and err are NUL-terminated too. */
typedef struct tu_run_result {
    int status; /* exit status; 128 + signal if killed */
    char *out, *err;
    size_t out_len, err_len;
} tu_run_result;

/* Runs exe with argv (NULL-terminated, argv[0] included) in the current
 * environment; stdin is /dev/null, stdout and stderr are files, so stderr
 * is no terminal. */
tu_run_result tu_run_argv(const char *exe, char *const argv[]);
/* The next run reads its stdin from path (once; then /dev/null again). */
void tu_next_stdin(const char *path);
/* The next run writes its stdout to path (e.g. /dev/full), or with path "-"
 * runs with stdout closed (once; then captured again: out is empty). */
void tu_next_stdout(const char *path);
/* $LINATTN_EXE with the arguments (without argv[0]), ending with NULL. */
tu_run_result tu_run(const char *first, ...);
/* The same with the arguments in a NULL-terminated array. */
tu_run_result tu_run_args(const char *const *args);
/* tu_run_args, sending the running program sigs[0..nsig) in turn, each
 * once it has written after_bytes more to stdout since the one before. */
tu_run_result tu_run_signalled(const char *const *args, const int *sigs, int nsig,
                               long after_bytes);
/* Frees out and err. */
void tu_run_free(tu_run_result *r);
/* Asserts the run exited with status 0, showing its stderr if not. */
void tu_assert_ok(const tu_run_result *r);

/* The number of '\n' in the n bytes at s. */
int tu_count_lines(const char *s, size_t n);

/* ---- worst-case timings ----------------------------------------------------- */

/* CPU seconds this process has used (other work on the machine does not
 * count; threads add up). */
double tu_cpu_seconds(void);
/* TU_SANITIZED is 1 in an AddressSanitizer build: the worst-case timings
 * that take seconds natively skip there (CI runs the suite under ASan). */
#if defined(__SANITIZE_ADDRESS__)
#define TU_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_SANITIZED 1
#endif
#endif
#ifndef TU_SANITIZED
#define TU_SANITIZED 0
#endif

/* ---- tokenizers ---- */
/* json[m..] += the 256 byte tokens of a GPT-2 byte-level vocabulary,
 * "c": b, each byte as its printable character (JSON-escaped), with a
 * comma and space after each; returns the new length (cap: json's size). */
size_t tu_byte_vocab_json(char *json, size_t m, size_t cap);
/* The bytes of ids[n] decoded one after another (prev -1 at the start)
 * into out, NUL-terminated; returns their count. */
size_t tu_decode_all(const linattn_tokenizer *t, const int *ids, size_t n, char *out);

/* The ISAs this CPU and build run (scalar first) into isas; returns how
 * many. Leaves the choice at auto. */
int tu_cpu_isas(linattn_isa isas[LINATTN_ISA_COUNT]);

#endif
