/* bench.h: what linattn-bench's suites share: the plan of a run, timing, the denominators, rows out. */
#ifndef LINATTN_BENCH_BENCH_H
#define LINATTN_BENCH_BENCH_H

#include <stddef.h>
#include <time.h>

#include "linattn.h"
#include "report.h"

#define BENCH_MAX_THREADS 8 /* entries of --threads */
#define BENCH_MAX_LENGTHS 32
#define BENCH_MAX_CONFIGS 8
#define BENCH_MAX_SAMPLES 1000

enum bench_suite {
    SUITE_PEAK = 1 << 0,
    SUITE_BANDWIDTH = 1 << 1,
    SUITE_KERNELS = 1 << 2,
    SUITE_OPS = 1 << 3,
    SUITE_MODEL = 1 << 4,
};

/* What a run measures and how long it may take over each figure. */
typedef struct bench_plan {
    int quick;
    unsigned suites; /* SUITE_* bits asked for */
    linattn_isa isas[LINATTN_ISA_COUNT];
    int n_isas;
    int threads[BENCH_MAX_THREADS]; /* as asked; 0: auto */
    int n_threads;
    const char *filter; /* workloads whose name holds this; NULL: all */
    long lengths[BENCH_MAX_LENGTHS]; /* ops: decode contexts */
    int n_lengths;
    int lengths_given; /* --lengths: no extra linear 1M row */
    const char *configs[BENCH_MAX_CONFIGS]; /* model: config files */
    int n_configs;
    int configs_default; /* not --config: a missing file is the same shape built in */

    /* each figure: repeat runs (after a warm-up), more while the measured
     * time is under min_time, fewer once budget seconds are spent (but 2
     * runs at least unless one alone takes the whole budget) */
    int repeat;
    double min_time;
    double budget;
    clockid_t clock;
    double peak_override; /* --peak: GFLOP/s of one core for every ISA; 0: measured */
} bench_plan;

/* Seconds on the plan's clock. */
double bench_now(const bench_plan *p);

/* Times call(ctx) by the plan's rule; seconds of each run into
 * samples[0..max). Returns the number of runs, or -1 when a call fails. */
typedef int (*bench_call_fn)(void *ctx);
int bench_time(bench_call_fn call, void *ctx, const bench_plan *p, int warmup, double *samples,
               int max);

/* 1 when the workload name passes --filter. */
int bench_wanted(const bench_plan *p, const char *name);

/* The thread count a figure asked for `asked` (0: auto) runs with at most. */
int bench_resolve_threads(int asked);

/* ---- the denominators, measured by the peak and bandwidth suites ---------- */

typedef struct bench_caches {
    size_t l1d, l1i, l2, l3; /* bytes, per core as the system reports (0: unknown) */
} bench_caches;

typedef struct bench_denoms {
    struct {
        linattn_isa isa;
        int threads; /* resolved */
        double gflops;
    } peaks[LINATTN_ISA_COUNT * (BENCH_MAX_THREADS + 1)];
    int n_peaks;
    /* {threads, GB/s}: the best of the triad and the read of memory at
     * each measured count (a token's reads can go faster than a triad's
     * mix of reads and writes, and a floor must not be above the truth) */
    double dram[BENCH_MAX_THREADS + 1][2];
    int n_dram;
    double read_l1, read_l2, read_l3; /* GB/s of one core; 0: not measured */
    bench_caches caches;
} bench_denoms;

extern bench_denoms bench_den;

/* The FMA peak of isa at `threads` (0: auto); 0 when not measured. */
double bench_peak_of(linattn_isa isa, int threads);
/* GB/s a figure that reads `footprint` bytes per token at `threads` can
 * reach: the read bandwidth of the cache level it fits in (times the
 * threads: L1 and L2 are per core), else the memory bandwidth of as many
 * threads as were measured up to `threads`. Level name into level; 0 when
 * that level was not measured. */
double bench_bandwidth_for(double footprint, int threads, const char **level);

/* Fills r's % of peak (from flops and seconds) and bandwidth floor (from
 * bytes, footprint and the per-token seconds `per_token`). */
void bench_row_ratios(bench_row *r, linattn_isa isa, double footprint, double per_token);

/* ---- the CPU of single-thread figures ---------------------------------------- */

/* how: "any" (no pinning), "auto" (the CPU of the process's set that runs
 * a short probe fastest: on a shared VM one vCPU can run real kernels
 * 10-30% slower than the other at the same FMA peak), or a CPU number. What
 * was chosen, and why, into text. -1 (message printed) for a CPU the
 * process may not run on. */
int bench_pin_setup(const char *how, char *text, size_t n);
/* Before a figure at `threads` (resolved): one thread runs on the chosen
 * CPU, more on every CPU the process had. */
void bench_pin(int threads);

/* ---- rows out -------------------------------------------------------------- */

/* Appends r to the run's rows and prints it in the table (unless quiet). */
void bench_emit(const bench_row *r);
/* Emits without printing (the kernels suite prints its own table). */
void bench_emit_quiet(const bench_row *r);
/* The rows so far. */
const bench_row *bench_rows(size_t *n);
/* The aligned table's header line. */
void bench_print_columns(void);
/* Prints a line on stdout (clearing the progress line first). */
void bench_printf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* ---- progress on stderr (when it is a terminal) ----------------------------- */

void bench_progress_begin(size_t total_units);
/* Starts unit i+1 of the total, named by label. */
void bench_progress_step(const char *label);
void bench_progress_end(void);

/* ---- suites ------------------------------------------------------------------ */

size_t peak_units(const bench_plan *p);
int suite_peak(const bench_plan *p);
size_t bandwidth_units(const bench_plan *p);
int suite_bandwidth(const bench_plan *p);
size_t kernels_units(const bench_plan *p);
int suite_kernels(const bench_plan *p);
size_t ops_units(const bench_plan *p);
int suite_ops(const bench_plan *p);
size_t model_units(const bench_plan *p);
int suite_model(const bench_plan *p);
/* --list: every workload of ops and model (and kernels) with its line. */
void ops_list(const bench_plan *p);
void model_list(const bench_plan *p);
void kernels_list(const bench_plan *p);

/* Copies src into dst[n], cut to fit (names into rows' fixed fields). */
void bench_copy(char *dst, size_t n, const char *src);

/* 1024 -> "1k", 1048576 -> "1M", 1000 -> "1000". */
void bench_count_label(char *buf, size_t n, long v);

#endif
