/* common.c: timing by the plan's rule, the denominators' lookups, the rows of a run, the table and the progress line. */
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

bench_denoms bench_den;

/* ------------------------------------------------------------------------ */
/* Timing                                                                    */
/* ------------------------------------------------------------------------ */

double bench_now(const bench_plan *p)
{
    struct timespec t;
    clock_gettime(p ? p->clock : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int bench_time(bench_call_fn call, void *ctx, const bench_plan *p, int warmup, double *samples,
               int max)
{
    if (warmup && call(ctx) != 0) /* page faults, the thread pool, caches */
        return -1;
    double spent = 0;
    double limit = p->budget > p->min_time ? p->budget : p->min_time;
    int n = 0;
    while (n < max) {
        double t0 = bench_now(p);
        if (call(ctx) != 0)
            return -1;
        samples[n] = bench_now(p) - t0;
        spent += samples[n++];
        if (n >= p->repeat && spent >= p->min_time)
            break;
        /* out of time: stop with two runs (a spread), or with one that
         * alone took all the time a figure may take */
        if (spent >= limit && (n >= 2 || samples[0] >= limit))
            break;
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* The CPU of single-thread figures                                          */
/* ------------------------------------------------------------------------ */

static struct {
    int on, cpu;
    cpu_set_t all; /* the process's CPUs at the start */
} pin;

/* GFLOP/s (2 H L^2 d) of a small causal softmax prefill, one thread, the
 * best ISA (H = 2, L = 2048, d = 64: 8 ms; K and V of a head, 1 MiB, about
 * an L2), median of 7 after a warm-up: FMAs, SLEEF's exp, loads and the
 * caches at once. A vCPU whose core's other hardware
 * thread is busy runs such code 10-20% slower than its sibling here although
 * both reach the same FMA peak and read bandwidth; 0 when it fails. */
static double cpu_probe(void)
{
    enum { H = 2, L = 2048, D = 64 };
    float *x = malloc(4 * (size_t)H * L * D * sizeof(float));
    if (!x)
        return 0;
    for (size_t i = 0; i < 4 * (size_t)H * L * D; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = 1, d.heads = H, d.len_q = d.len_k = L, d.d_k = d.d_v = D, d.causal = 1, d.threads = 1;
    const size_t m = (size_t)H * L * D;
    double t[8];
    int ok = 1;
    for (int r = 0; r < 8 && ok; r++) {
        double t0 = bench_now(NULL);
        ok = linattn_attention_softmax(&d, x, x + m, x + 2 * m, x + 3 * m) == LINATTN_OK;
        t[r] = bench_now(NULL) - t0;
    }
    free(x);
    bench_stats st;
    bench_stats_of(t + 1, 7, &st);
    return ok && st.median > 0 ? 2.0 * H * L * L * D / st.median * 1e-9 : 0;
}

static cpu_set_t cpu_only(int c)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    return one;
}

int bench_pin_setup(const char *how, char *text, size_t n)
{
    snprintf(text, n, "any (not pinned)");
    if (!strcmp(how, "any"))
        return 0;
    if (sched_getaffinity(0, sizeof pin.all, &pin.all) != 0) {
        snprintf(text, n, "any (the CPU set is unknown)");
        return 0;
    }
    if (strcmp(how, "auto") != 0) {
        char *end;
        long c = strtol(how, &end, 10);
        if (end == how || *end || c < 0 || c >= CPU_SETSIZE || !CPU_ISSET((int)c, &pin.all)) {
            fprintf(stderr, "linattn-bench: --cpu: expected auto, any or a CPU this process may "
                            "run on, got '%s'\n", how);
            return -1;
        }
        pin.on = 1, pin.cpu = (int)c;
        snprintf(text, n, "%d (--cpu)", pin.cpu);
        return 0;
    }
    if (CPU_COUNT(&pin.all) < 2)
        return 0;
    double best = -1;
    char list[512];
    size_t lu = 0;
    list[0] = 0;
    for (int c = 0, probed = 0; c < CPU_SETSIZE && probed < 64; c++) {
        if (!CPU_ISSET(c, &pin.all))
            continue;
        cpu_set_t one = cpu_only(c);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            continue;
        double g = cpu_probe();
        probed++;
        if (lu < sizeof list)
            lu += (size_t)snprintf(list + lu, sizeof list - lu, "%s%d: %.1f", lu ? ", " : "", c, g);
        if (g > best)
            best = g, pin.cpu = c;
    }
    sched_setaffinity(0, sizeof pin.all, &pin.all);
    if (best <= 0)
        return 0;
    pin.on = 1;
    snprintf(text, n, "%d (auto: the fastest probe, GFLOP/s of a small causal softmax prefill by CPU %s)",
             pin.cpu, list);
    return 0;
}

void bench_pin(int threads)
{
    if (!pin.on)
        return;
    cpu_set_t one = cpu_only(pin.cpu);
    sched_setaffinity(0, sizeof one, threads == 1 ? &one : &pin.all);
}

int bench_wanted(const bench_plan *p, const char *name)
{
    if (!p->filter)
        return 1;
    /* a comma-separated list: any of its parts */
    for (const char *f = p->filter;;) {
        size_t n = strcspn(f, ",");
        char part[128];
        if (n > 0 && n < sizeof part) {
            memcpy(part, f, n);
            part[n] = '\0';
            if (strstr(name, part))
                return 1;
        }
        if (!f[n])
            return 0;
        f += n + 1;
    }
}

int bench_resolve_threads(int asked)
{
    if (!linattn_has_openmp())
        return 1;
    return asked > 0 ? asked : linattn_max_threads();
}

void bench_copy(char *dst, size_t n, const char *src)
{
    if (!n)
        return;
    size_t len = strnlen(src, n - 1);
    memcpy(dst, src, len);
    dst[len] = 0;
}

void bench_count_label(char *buf, size_t n, long v)
{
    if (v >= 1048576 && v % 1048576 == 0)
        snprintf(buf, n, "%ldM", v / 1048576);
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(buf, n, "%ldk", v / 1024);
    else
        snprintf(buf, n, "%ld", v);
}

/* ------------------------------------------------------------------------ */
/* Denominators                                                              */
/* ------------------------------------------------------------------------ */

double bench_peak_of(linattn_isa isa, int threads)
{
    int t = bench_resolve_threads(threads);
    for (int i = 0; i < bench_den.n_peaks; i++)
        if (bench_den.peaks[i].isa == isa && bench_den.peaks[i].threads == t)
            return bench_den.peaks[i].gflops;
    return 0;
}

double bench_bandwidth_for(double footprint, int threads, const char **level)
{
    const bench_caches *c = &bench_den.caches;
    int t = bench_resolve_threads(threads);
    if (c->l1d && footprint <= (double)c->l1d && bench_den.read_l1 > 0) {
        *level = "L1";
        return bench_den.read_l1 * t;
    }
    if (c->l2 && footprint <= (double)c->l2 && bench_den.read_l2 > 0) {
        *level = "L2";
        return bench_den.read_l2 * t;
    }
    if (c->l3 && footprint <= (double)c->l3 && bench_den.read_l3 > 0) {
        *level = "L3";
        return bench_den.read_l3 * t;
    }
    /* memory: the most threads measured, up to t */
    double best = 0, best_t = 0;
    for (int i = 0; i < bench_den.n_dram; i++)
        if (bench_den.dram[i][0] <= t && bench_den.dram[i][0] > best_t)
            best_t = bench_den.dram[i][0], best = bench_den.dram[i][1];
    *level = "DRAM";
    return best;
}

void bench_row_ratios(bench_row *r, linattn_isa isa, double footprint, double per_token)
{
    if (isfinite(r->flops) && r->flops > 0 && r->seconds > 0) {
        r->peak = bench_peak_of(isa, r->threads);
        if (r->peak > 0)
            r->pct_peak = 100.0 * r->flops / r->seconds * 1e-9 / r->peak;
        else
            r->peak = NAN;
    }
    if (isfinite(r->bytes) && r->bytes > 0 && per_token > 0) {
        const char *level = "";
        double bw = bench_bandwidth_for(footprint, r->threads, &level);
        if (bw > 0) {
            r->bandwidth = bw;
            snprintf(r->level, sizeof r->level, "%s", level);
            r->floor = r->bytes / (bw * 1e9);
            r->pct_bw = 100.0 * r->floor / per_token;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Rows and the table                                                        */
/* ------------------------------------------------------------------------ */

static bench_row *rows;
static size_t n_rows, cap_rows;
static int progress_on; /* a progress line may be on the terminal */

const bench_row *bench_rows(size_t *n)
{
    *n = n_rows;
    return rows;
}

static void clear_progress(void)
{
    /* once: a line printed in parts must not be erased half-way */
    if (progress_on) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        progress_on = 0;
    }
}

void bench_printf(const char *fmt, ...)
{
    clear_progress();
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

/* Four significant figures or so, never an exponent for the usual ranges. */
static void fmt_val(char *b, size_t n, double v)
{
    double a = fabs(v);
    if (!isfinite(v))
        snprintf(b, n, "-");
    else if (a >= 1000)
        snprintf(b, n, "%.0f", v);
    else if (a >= 100)
        snprintf(b, n, "%.1f", v);
    else if (a >= 1 || a == 0)
        snprintf(b, n, "%.2f", v);
    else
        snprintf(b, n, "%.3g", v);
}

/* Seconds as a short time: 12.3 s, 4.56 ms, 7.89 us, 123 ns. */
static void fmt_seconds(char *b, size_t n, double s)
{
    char v[24];
    if (s >= 1)
        fmt_val(v, sizeof v, s), snprintf(b, n, "%s s", v);
    else if (s >= 1e-3)
        fmt_val(v, sizeof v, s * 1e3), snprintf(b, n, "%s ms", v);
    else if (s >= 1e-6)
        fmt_val(v, sizeof v, s * 1e6), snprintf(b, n, "%s us", v);
    else
        fmt_val(v, sizeof v, s * 1e9), snprintf(b, n, "%s ns", v);
}

void bench_print_columns(void)
{
    bench_printf("%-30s %-7s %4s %10s %-8s %21s %7s %4s  %-26s %6s  %s\n", "workload", "isa", "thr",
                 "median", "unit", "min..max", "cv", "n", "against peak / bandwidth", "x1t",
                 "note");
}

static void print_row(const bench_row *r)
{
    char thr[16], med[24], lo[24], hi[24], range[64], cv[24], ratio[128] = "", speed[24] = "";
    snprintf(thr, sizeof thr, r->threads ? "%d" : "auto", r->threads);
    fmt_val(med, sizeof med, r->st.median);
    fmt_val(lo, sizeof lo, r->st.min);
    fmt_val(hi, sizeof hi, r->st.max);
    snprintf(range, sizeof range, "%s..%s", lo, hi);
    if (isfinite(r->st.cv))
        snprintf(cv, sizeof cv, "%.1f%%%s", 100 * r->st.cv, r->st.noisy ? "!" : "");
    else
        snprintf(cv, sizeof cv, "-");
    if (isfinite(r->pct_peak)) {
        char pk[24];
        fmt_val(pk, sizeof pk, r->peak);
        if (isfinite(r->floor)) /* both bounds matter (a batched step) */
            snprintf(ratio, sizeof ratio, "%.0f%% of peak %s, %.0f%% of floor", r->pct_peak, pk,
                     r->pct_bw);
        else
            snprintf(ratio, sizeof ratio, "%.0f%% of peak %s", r->pct_peak, pk);
    } else if (isfinite(r->floor)) {
        char fl[48];
        fmt_seconds(fl, sizeof fl, r->floor);
        snprintf(ratio, sizeof ratio, "floor %s %s: %.0f%%", fl, r->level, r->pct_bw);
    }
    if (isfinite(r->speedup))
        snprintf(speed, sizeof speed, "x%.2f", r->speedup);
    bench_printf("%-30s %-7s %4s %10s %-8s %21s %7s %4d  %-26s %6s  %s\n", r->name, r->isa, thr,
                 med, r->unit, range, cv, r->st.runs, ratio, speed, r->note);
}

static void store(const bench_row *r)
{
    if (n_rows == cap_rows) {
        size_t cap = cap_rows ? 2 * cap_rows : 256;
        bench_row *grown = realloc(rows, cap * sizeof *rows);
        if (!grown) {
            fprintf(stderr, "linattn-bench: out of memory\n");
            exit(1);
        }
        rows = grown, cap_rows = cap;
    }
    bench_row *dst = &rows[n_rows++];
    *dst = *r;
    /* speed-up over the same workload at 1 thread, in the better direction */
    if (!isfinite(dst->speedup) && dst->threads != 1 && dst->st.median > 0 &&
        strcmp(dst->unit, "x") != 0) { /* a ratio row has no speed to scale */
        for (size_t i = 0; i + 1 < n_rows; i++) {
            const bench_row *one = &rows[i];
            if (one->threads == 1 && !strcmp(one->suite, dst->suite) &&
                !strcmp(one->name, dst->name) && !strcmp(one->isa, dst->isa) &&
                one->st.median > 0) {
                dst->speedup = bench_unit_higher_better(dst->unit)
                                   ? dst->st.median / one->st.median
                                   : one->st.median / dst->st.median;
            }
        }
    }
}

void bench_emit(const bench_row *r)
{
    store(r);
    print_row(&rows[n_rows - 1]);
}

void bench_emit_quiet(const bench_row *r)
{
    store(r);
}

/* ------------------------------------------------------------------------ */
/* Progress                                                                  */
/* ------------------------------------------------------------------------ */

static size_t prog_total, prog_done;
static double prog_start;
static int prog_tty;

void bench_progress_begin(size_t total_units)
{
    prog_total = total_units;
    prog_done = 0;
    prog_start = bench_now(NULL);
    prog_tty = isatty(STDERR_FILENO);
}

void bench_progress_step(const char *label)
{
    if (!prog_tty)
        return;
    double elapsed = bench_now(NULL) - prog_start;
    char left[48] = "";
    /* by the units done so far: rough, since units differ in cost */
    if (prog_done > 0)
        snprintf(left, sizeof left, ", about %.0f s left",
                 elapsed / (double)prog_done * (double)(prog_total - prog_done));
    clear_progress();
    fprintf(stderr, "[%zu/%zu] %s  %.0f s%s", prog_done + 1, prog_total, label, elapsed, left);
    fflush(stderr);
    progress_on = 1;
    if (prog_done < prog_total)
        prog_done++;
}

void bench_progress_end(void)
{
    clear_progress();
    progress_on = 0;
}
