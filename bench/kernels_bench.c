/* kernels_bench.c: every kernel of the table x every ISA (and scalar): ns per call and speed-up, checkasm --bench's cases and table. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "../engine/internal.h"
#include "../simd/kernel_cases.h"

/* The cases and their calls: simd/kernel_cases.h, shared with checkasm --bench. */
typedef linattn_kernel_case bench_case;
typedef linattn_case_data case_data;
#define cases linattn_kernel_cases
#define N_CASES LINATTN_N_KERNEL_CASES
#define N_KERNELS LINATTN_N_KERNELS
#define kernel_names linattn_kernel_names

/* Results of timed reductions land here so the calls are not optimized away. */
volatile float kernels_sink;

static void call_once(const linattn_kernels *k, const bench_case *bc, case_data *d)
{
    linattn_kernel_case_call(k, bc, d, &kernels_sink);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Calls per repetition so one repetition takes about target_ns. */
static size_t calls_per_rep(const linattn_kernels *k, const bench_case *bc, case_data *d,
                            double target_ns)
{
    call_once(k, bc, d); /* warm caches */
    size_t iters = 1;
    for (;;) {
        double t0 = now_ns();
        for (size_t i = 0; i < iters; i++)
            call_once(k, bc, d);
        double dt = now_ns() - t0;
        if (dt > target_ns || iters >= (1u << 24))
            return iters;
        iters *= dt < target_ns / 20 ? 16 : 2;
    }
}

static uint64_t rng = 0x243f6a8885a308d3ull;

static float rnd_range(double lo, double hi)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)(lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53);
}

/* 64-byte aligned, as the engine's arrays are; the checks cover misalignment. */
static float *case_alloc(size_t n, double lo, double hi)
{
    size_t bytes = ((n + 16) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    if (!p) {
        fprintf(stderr, "linattn-bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n + 16; i++)
        p[i] = rnd_range(lo, hi);
    return p;
}

/* "n1024", "64x64", "64x64-h8", "64x64-h8-g0.96875", "256x1024x1024", "64x1024x1024-t12" */
static void case_size(char *buf, size_t n, const bench_case *bc)
{
    if (!strcmp(bc->kernel, "gemm_quant")) /* heads: the ggml type */
        snprintf(buf, n, "%zux%zux%zu-t%d", bc->a, bc->b, bc->c, bc->heads);
    else if (!strcmp(bc->kernel, "dequant"))
        snprintf(buf, n, "%zux%zu-t%d", bc->a, bc->b, bc->heads);
    else if (!strncmp(bc->kernel, "gemm", 4))
        snprintf(buf, n, "%zux%zux%zu", bc->a, bc->b, bc->c);
    else if (bc->heads > 1 && bc->decay > 0)
        snprintf(buf, n, "%zux%zu-h%d-g%g", bc->a, bc->b, bc->heads, (double)bc->decay);
    else if (bc->heads > 1)
        snprintf(buf, n, "%zux%zu-h%d", bc->a, bc->b, bc->heads);
    else if (bc->decay > 0)
        snprintf(buf, n, "%zux%zu-g%g", bc->a, bc->b, (double)bc->decay);
    else if (bc->b)
        snprintf(buf, n, "%zux%zu", bc->a, bc->b);
    else
        snprintf(buf, n, "n%zu", bc->a);
}

static void case_name(char *buf, size_t n, const bench_case *bc)
{
    char size[48];
    case_size(size, sizeof size, bc);
    snprintf(buf, n, "%s-%s", bc->kernel, size);
}

/* The tables to time: scalar first (the speed-up's base, always), then the
 * plan's ISAs whose table differs from scalar's (a build without SIMD
 * has the same table under every name). */
typedef struct isa_table {
    linattn_isa isa;
    linattn_kernels k;
} isa_table;

static int tables(const bench_plan *p, isa_table *out)
{
    int n = 0;
    const linattn_kernels *k;
    if (linattn_set_isa(LINATTN_ISA_SCALAR) != LINATTN_OK || linattn_kernels_current(&k) != LINATTN_OK)
        return 0;
    out[n].isa = LINATTN_ISA_SCALAR;
    out[n++].k = *k;
    for (int i = 0; i < p->n_isas; i++) {
        if (p->isas[i] == LINATTN_ISA_SCALAR || linattn_set_isa(p->isas[i]) != LINATTN_OK ||
            linattn_kernels_current(&k) != LINATTN_OK)
            continue;
        if (!memcmp(k, &out[0].k, sizeof *k))
            continue;
        out[n].isa = p->isas[i];
        out[n++].k = *k;
    }
    return n;
}

size_t kernels_units(const bench_plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        char name[64];
        case_name(name, sizeof name, &cases[i]);
        n += bench_wanted(p, name);
    }
    return n;
}

void kernels_list(const bench_plan *p)
{
    for (size_t i = 0; i < N_CASES; i++) {
        char name[64];
        case_name(name, sizeof name, &cases[i]);
        if (bench_wanted(p, name))
            printf("%-30s kernels  %s, ns per call per ISA\n", name, cases[i].kernel);
    }
}

int suite_kernels(const bench_plan *p)
{
    isa_table t[LINATTN_ISA_COUNT];
    int nt = tables(p, t);
    if (nt == 0) {
        fprintf(stderr, "linattn-bench: %s\n", linattn_last_error());
        return -1;
    }
    /* a kernel of the list without a case is said, not skipped silently */
    for (int id = 0; id < N_KERNELS; id++) {
        if (!linattn_kernel_has_case(id))
            bench_printf("note: kernel %s has no bench case in simd/kernel_cases.h\n",
                         kernel_names[id]);
    }
    const double target_ns = p->quick ? 0.5e6 : 2e6;
    int reps = p->repeat;
    if (p->min_time > 0 && reps < p->min_time / (target_ns * 1e-9))
        reps = (int)ceil(p->min_time / (target_ns * 1e-9));
    if (reps > BENCH_MAX_SAMPLES)
        reps = BENCH_MAX_SAMPLES;

    bench_printf("\n%-19s %-18s", "kernel", "size");
    for (int i = 0; i < nt; i++)
        bench_printf(" %12s", linattn_isa_name(t[i].isa));
    for (int i = 1; i < nt; i++)
        bench_printf(" %8s", "speed-up");
    bench_printf("  (ns per call, median of %d, ISAs in turn; 64-byte aligned)\n", reps);

    double (*ns)[BENCH_MAX_SAMPLES] = malloc(sizeof *ns * LINATTN_ISA_COUNT);
    if (!ns)
        return -1;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const bench_case *bc = &cases[ci];
        char name[64], size[48];
        case_name(name, sizeof name, bc);
        if (!bench_wanted(p, name))
            continue;
        bench_progress_step(name);
        bench_pin(1);
        case_size(size, sizeof size, bc);
        size_t mn = bc->a * bc->b, kk = bc->c ? bc->c : 1;
        case_data d = linattn_kernel_case_data(bc, case_alloc);
        size_t iters[LINATTN_ISA_COUNT];
        int r_case = reps;
        for (int i = 0; i < nt; i++) {
            iters[i] = calls_per_rep(&t[i].k, bc, &d, target_ns);
            if (iters[i] == 1 && r_case > 3)
                r_case = 3; /* calls of target_ns or more: a few are enough */
        }
        /* the ISAs take turns, so a load that comes and goes on a shared
         * machine hits them alike */
        for (int r = 0; r < r_case; r++)
            for (int i = 0; i < nt; i++) {
                double t0 = now_ns();
                for (size_t it = 0; it < iters[i]; it++)
                    call_once(&t[i].k, bc, &d);
                ns[i][r] = (now_ns() - t0) / (double)iters[i];
            }
        bench_row rows[LINATTN_ISA_COUNT];
        double flops = (bc->c && strcmp(bc->kernel, "dequant")) || !strncmp(bc->kernel, "gemv", 4)
                           ? 2.0 * (double)mn * (double)kk
                           : NAN;
        double worst_cv = 0;
        int noisy = 0;
        for (int i = 0; i < nt; i++) {
            bench_row *r = &rows[i];
            bench_row_init(r);
            snprintf(r->suite, sizeof r->suite, "kernels");
            snprintf(r->name, sizeof r->name, "%s", name);
            snprintf(r->what, sizeof r->what, "kernel %s, %s, %zu calls a run", bc->kernel, size,
                     iters[i]);
            snprintf(r->isa, sizeof r->isa, "%s", linattn_isa_name(t[i].isa));
            snprintf(r->unit, sizeof r->unit, "ns");
            r->threads = 1;
            bench_stats_of(ns[i], r_case, &r->st);
            r->seconds = r->st.median * 1e-9;
            r->flops = flops;
            bench_row_ratios(r, t[i].isa, 0, 0);
            r->speedup = rows[0].st.median / r->st.median;
            if (isfinite(r->st.cv) && r->st.cv > worst_cv)
                worst_cv = r->st.cv;
            noisy |= r->st.noisy;
        }
        bench_printf("%-19s %-18s", bc->kernel, size);
        for (int i = 0; i < nt; i++)
            bench_printf(" %12.1f", rows[i].st.median);
        for (int i = 1; i < nt; i++)
            bench_printf(" %7.2fx", rows[i].speedup);
        if (isfinite(flops)) {
            bench_printf("  GFLOP/s:");
            for (int i = 0; i < nt; i++)
                bench_printf(" %s %.1f", linattn_isa_name(t[i].isa), flops / rows[i].st.median);
        }
        bench_printf("  cv <= %.1f%%%s\n", 100 * worst_cv, noisy ? "!" : "");
        for (int i = 0; i < nt; i++)
            bench_emit_quiet(&rows[i]);
        free(d.x), free(d.y), free(d.w), free(d.b), free(d.S), free(d.z), free(d.C);
    }
    free(ns);
    bench_printf("\n");
    return 0;
}
