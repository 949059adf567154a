/* kernels_bench.c: every kernel of the table x every ISA (and scalar): ns per call and speed-up, checkasm --bench's cases and table. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "../engine/internal.h"

/* Kernel ids and names, from the one list (simd/kernels.h). */
enum {
#define K_ID(name, ret, params) K_##name,
    LINATTN_KERNELS(K_ID)
#undef K_ID
        N_KERNELS
};

static const char *const kernel_names[N_KERNELS] = {
#define K_NAME(name, ret, params) [K_##name] = #name,
    LINATTN_KERNELS(K_NAME)
#undef K_NAME
};

/* The cases of tests/checkasm.c --bench, so the two tables agree. */
typedef struct bench_case {
    const char *kernel;
    size_t a, b, c; /* n; dk dv; rows cols; M N K */
    int heads;      /* linear_block_read over this many heads' states per call */
    float decay;    /* linear_block_read: 0 for none (c = 1, weights 1) */
} bench_case;

static const bench_case cases[] = {
    {"dot", 64, 0, 0, 0, 0},          {"dot", 1024, 0, 0, 0, 0},
    {"max", 64, 0, 0, 0, 0},          {"max", 1024, 0, 0, 0, 0},
    {"sum", 64, 0, 0, 0, 0},          {"sum", 1024, 0, 0, 0, 0},
    {"axpy", 64, 0, 0, 0, 0},         {"axpy", 1024, 0, 0, 0, 0},
    {"scale", 64, 0, 0, 0, 0},        {"scale", 1024, 0, 0, 0, 0},
    {"exp_sub_sum", 64, 0, 0, 0, 0},  {"exp_sub_sum", 1024, 0, 0, 0, 0},
    {"elu1", 64, 0, 0, 0, 0},         {"elu1", 1024, 0, 0, 0, 0},
    {"relu", 64, 0, 0, 0, 0},         {"relu", 1024, 0, 0, 0, 0},
    {"gelu", 64, 0, 0, 0, 0},         {"gelu", 1024, 0, 0, 0, 0},
    {"silu_mul", 64, 0, 0, 0, 0},     {"silu_mul", 1376, 0, 0, 0, 0},
    {"layernorm", 64, 0, 0, 0, 0},    {"layernorm", 1024, 0, 0, 0, 0},
    {"rmsnorm", 64, 0, 0, 0, 0},      {"rmsnorm", 1024, 0, 0, 0, 0},
    {"linear_block_read", 64, 64, 0, 1, 0},
    {"linear_block_read", 64, 64, 0, 8, 0},
    {"linear_block_read", 64, 64, 0, 8, 0.96875f},
    {"gemv", 512, 512, 0, 0, 0},      {"gemv", 2048, 512, 0, 0, 0},
    {"gemm_nt", 64, 64, 64, 0, 0},    {"gemm_nt", 128, 512, 512, 0, 0},
    {"gemm_nt", 1, 2048, 2048, 0, 0}, {"gemm_nt", 16, 1024, 1024, 0, 0},
    {"gemm_nt", 256, 1024, 1024, 0, 0},
    {"gemm_nn", 64, 64, 64, 0, 0},    {"gemm_nn", 128, 512, 512, 0, 0},
    {"gemm_nn", 1, 64, 1024, 0, 0},
    {"gemm_tn", 64, 64, 16, 0, 0},    {"gemm_tn", 128, 512, 512, 0, 0},
    {"gemv_f16", 2048, 512, 0, 0, 0}, {"gemv_bf16", 2048, 512, 0, 0, 0},
    {"gemm_nt_f16", 128, 512, 512, 0, 0}, {"gemm_nt_bf16", 128, 512, 512, 0, 0},
    {"gemm_nn_f16", 1, 64, 1024, 0, 0}, {"to_f16", 1024, 0, 0, 0, 0},
    {"gemv_q8", 2048, 512, 0, 0, 0}, {"gemm_nt_q8", 128, 512, 512, 0, 0},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static int kernel_id(const char *name)
{
    for (int i = 0; i < N_KERNELS; i++)
        if (!strcmp(kernel_names[i], name))
            return i;
    return -1;
}

typedef struct case_data {
    int id; /* K_* */
    float *x, *y, *w, *b, *S, *z, *C;
} case_data;

/* Row weights of linear_block_read: decayed-looking, all the same. */
static const float block_weights[LINATTN_BLOCK_ROWS] = {
    0.6f, 0.62f, 0.64f, 0.67f, 0.69f, 0.71f, 0.74f, 0.76f,
    0.79f, 0.81f, 0.84f, 0.87f, 0.9f, 0.93f, 0.96f, 1.0f};

/* Results of timed reductions land here so the calls are not optimized away. */
volatile float kernels_sink;

static void call_once(const linattn_kernels *k, const bench_case *bc, case_data *d)
{
    size_t n = bc->a;
    switch (d->id) {
    case K_dot: kernels_sink = k->dot(d->x, d->y, n); break;
    case K_max: kernels_sink = k->max(d->x, n); break;
    case K_sum: kernels_sink = k->sum(d->x, n); break;
    case K_axpy: k->axpy(d->y, 1e-3f, d->x, n); break;
    case K_scale: k->scale(d->y, 1.0f, n); break;
    case K_exp_sub_sum: kernels_sink = k->exp_sub_sum(d->y, d->x, 3.0f, n); break;
    case K_elu1: k->elu1(d->y, d->x, n); break;
    case K_relu: k->relu(d->y, d->x, n); break;
    case K_gelu: k->gelu(d->y, d->x, n); break;
    case K_silu_mul: k->silu_mul(d->y, d->x, d->w, n); break;
    case K_layernorm: k->layernorm(d->y, d->x, d->w, d->b, n, 1e-5f); break;
    case K_rmsnorm: k->rmsnorm(d->y, d->x, d->w, n, 1e-5f); break;
    case K_linear_block_read: /* a half-full block (8 rows, shared by the heads) */
        for (int h = 0; h < bc->heads; h++)
            k->linear_block_read(d->y + (size_t)h * bc->b, d->w + (size_t)h * bc->a,
                                 d->S + (size_t)h * bc->a * bc->b, d->z + (size_t)h * bc->a,
                                 d->x, d->x + 8 * bc->a, block_weights, 8,
                                 bc->decay > 0 ? bc->decay : 1.0f, bc->a, bc->b, 1e-6f);
        break;
    case K_gemv: k->gemv(d->y, d->S, bc->b, d->x, d->b, bc->a, bc->b); break;
    case K_gemm_nt: k->gemm_nt(d->C, bc->b, d->x, bc->c, d->S, bc->c, bc->a, bc->b, bc->c); break;
    case K_gemm_nn: k->gemm_nn(d->C, bc->b, d->x, bc->c, d->S, bc->b, bc->a, bc->b, bc->c); break;
    case K_gemm_tn: k->gemm_tn(d->C, bc->b, d->x, bc->a, d->S, bc->b, bc->a, bc->b, bc->c); break;
    /* half weights: S's floats read as pairs of 16-bit values (the values
     * do not change the time) */
    case K_gemv_f16: k->gemv_f16(d->y, (const uint16_t *)(const void *)d->S, bc->b, d->x, d->b, bc->a, bc->b); break;
    case K_gemv_bf16: k->gemv_bf16(d->y, (const uint16_t *)(const void *)d->S, bc->b, d->x, d->b, bc->a, bc->b); break;
    case K_gemm_nt_f16: k->gemm_nt_f16(d->C, bc->b, d->x, bc->c, (const uint16_t *)(const void *)d->S, bc->c, bc->a, bc->b, bc->c); break;
    case K_gemm_nt_bf16: k->gemm_nt_bf16(d->C, bc->b, d->x, bc->c, (const uint16_t *)(const void *)d->S, bc->c, bc->a, bc->b, bc->c); break;
    case K_gemm_nn_f16: k->gemm_nn_f16(d->C, bc->b, d->x, bc->c, (const uint16_t *)(const void *)d->S, bc->b, bc->a, bc->b, bc->c); break;
    case K_to_f16: k->to_f16((uint16_t *)(void *)d->y, d->x, n); break;
    /* int8 weights: the first quarter of S's bytes, scales after them */
    case K_gemv_q8: k->gemv_q8(d->y, (const int8_t *)(const void *)d->S, d->S + bc->a * bc->b / 4, bc->b, d->x, d->b, bc->a, bc->b); break;
    case K_gemm_nt_q8: k->gemm_nt_q8(d->C, bc->b, d->x, bc->c, (const int8_t *)(const void *)d->S, d->S + bc->b * bc->c / 4, bc->c, bc->a, bc->b, bc->c); break;
    default: break;
    }
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

/* "n1024", "64x64", "64x64-h8", "64x64-h8-g0.96875", "256x1024x1024" */
static void case_size(char *buf, size_t n, const bench_case *bc)
{
    if (!strncmp(bc->kernel, "gemm", 4))
        snprintf(buf, n, "%zux%zux%zu", bc->a, bc->b, bc->c);
    else if (bc->heads > 1 && bc->decay > 0)
        snprintf(buf, n, "%zux%zu-h%d-g%g", bc->a, bc->b, bc->heads, (double)bc->decay);
    else if (bc->heads > 1)
        snprintf(buf, n, "%zux%zu-h%d", bc->a, bc->b, bc->heads);
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
        int found = 0;
        for (size_t i = 0; i < N_CASES; i++)
            found |= !strcmp(cases[i].kernel, kernel_names[id]);
        if (!found)
            bench_printf("note: kernel %s has no bench case in bench/kernels_bench.c\n",
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
        size_t big = bc->a * (bc->b ? bc->b : 1) * (size_t)(bc->heads ? bc->heads : 1);
        size_t mn = bc->a * bc->b, kk = bc->c ? bc->c : 1;
        /* x: A of a gemm; else the input, and for linear_block_read the 8
         * K rows (a wide) then the 8 V rows (b wide) it reads from x */
        size_t nx = bc->c ? bc->a * bc->c
                          : bc->a * (bc->heads ? bc->heads : 1) + 8 * (bc->a + bc->b);
        size_t nS = bc->c ? bc->b * bc->c : big;
        case_data d = {
            .id = kernel_id(bc->kernel),
            .x = case_alloc(nx, -2, 2),
            .y = case_alloc(bc->a * 8 + bc->b * 8, -2, 2),
            .w = case_alloc(bc->a * 8, 0.01, 2),
            .b = case_alloc(bc->a * 8, 0.01, 2),
            .S = case_alloc(nS, -1, 1),
            .z = case_alloc(bc->a * 8, 0, 10),
            .C = case_alloc(bc->c ? mn : 1, -1, 1),
        };
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
        double flops = bc->c || !strncmp(bc->kernel, "gemv", 4) ? 2.0 * (double)mn * (double)kk : NAN;
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
