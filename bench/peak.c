/* peak.c: the fp32 FMA peak of each ISA, measured: register-only loops of independent multiply-add chains. */
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "bench.h"
#include "peak.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif
#ifdef LINATTN_BENCH_OPENMP
#include <omp.h>
#endif

/* Each loop keeps ACC accumulators, every one its own chain started from
 * its own value (chains that start equal can be merged by the compiler
 * into one, latency-bound chain: a "125 GFLOP/s" once came from that).
 * ACC covers FMA latency x ports (4 x 2 on the cores seen here) with room
 * to spare: 12 of 16 ymm registers, 24 of 32 zmm, 24 of 32 NEON. The
 * multiplier keeps the values bounded (x -> x m + c has the fixed point
 * c / (1 - m)), so no denormal or inf slows a lane. The results are summed
 * and returned, so nothing is dead code. */
#define STEPS 4096

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#if defined(__x86_64__)
/* Without FMA (the x86-64 baseline the scalar kernels are built for):
 * SSE multiply then add, 4 lanes. */
static float loop_sse(long reps)
{
    enum { ACC = 12 };
    __m128 acc[ACC];
    for (int i = 0; i < ACC; i++)
        acc[i] = _mm_set1_ps(0.01f * (float)(i + 1));
    const __m128 m = _mm_set1_ps(0.999f), c = _mm_set1_ps(0.001f);
    for (long r = 0; r < reps; r++)
        for (int s = 0; s < STEPS; s++)
#pragma GCC unroll 12
            for (int i = 0; i < ACC; i++)
                acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], m), c);
    __m128 t = acc[0];
    for (int i = 1; i < ACC; i++)
        t = _mm_add_ps(t, acc[i]);
    return _mm_cvtss_f32(t);
}

__attribute__((target("avx2,fma"))) static float loop_avx2(long reps)
{
    enum { ACC = 12 };
    __m256 acc[ACC];
    for (int i = 0; i < ACC; i++)
        acc[i] = _mm256_set1_ps(0.01f * (float)(i + 1));
    const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
    for (long r = 0; r < reps; r++)
        for (int s = 0; s < STEPS; s++)
#pragma GCC unroll 12
            for (int i = 0; i < ACC; i++)
                acc[i] = _mm256_fmadd_ps(acc[i], m, c);
    __m256 t = acc[0];
    for (int i = 1; i < ACC; i++)
        t = _mm256_add_ps(t, acc[i]);
    return _mm_cvtss_f32(_mm256_castps256_ps128(t));
}

__attribute__((target("avx512f"))) static float loop_avx512(long reps)
{
    enum { ACC = 24 };
    __m512 acc[ACC];
    for (int i = 0; i < ACC; i++)
        acc[i] = _mm512_set1_ps(0.01f * (float)(i + 1));
    const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
    for (long r = 0; r < reps; r++)
        for (int s = 0; s < STEPS; s++)
#pragma GCC unroll 24
            for (int i = 0; i < ACC; i++)
                acc[i] = _mm512_fmadd_ps(acc[i], m, c);
    __m512 t = acc[0];
    for (int i = 1; i < ACC; i++)
        t = _mm512_add_ps(t, acc[i]);
    return _mm512_cvtss_f32(t);
}
#elif defined(__aarch64__)
static float loop_neon(long reps)
{
    enum { ACC = 24 };
    float32x4_t acc[ACC];
    for (int i = 0; i < ACC; i++)
        acc[i] = vdupq_n_f32(0.01f * (float)(i + 1));
    const float32x4_t m = vdupq_n_f32(0.999f), c = vdupq_n_f32(0.001f);
    for (long r = 0; r < reps; r++)
        for (int s = 0; s < STEPS; s++)
#pragma GCC unroll 24
            for (int i = 0; i < ACC; i++)
                acc[i] = vfmaq_f32(c, acc[i], m);
    float32x4_t t = acc[0];
    for (int i = 1; i < ACC; i++)
        t = vaddq_f32(t, acc[i]);
    return vgetq_lane_f32(t, 0);
}
#endif

/* flops of one rep, and the loop, for an ISA; 0 if none here */
static double kind_of(linattn_isa isa, float (**loop)(long))
{
    *loop = NULL;
    switch (isa) {
#if defined(__x86_64__)
    case LINATTN_ISA_SCALAR: *loop = loop_sse; return 12.0 * 4 * 2 * STEPS;
    case LINATTN_ISA_AVX2: *loop = loop_avx2; return 12.0 * 8 * 2 * STEPS;
    case LINATTN_ISA_AVX512: *loop = loop_avx512; return 24.0 * 16 * 2 * STEPS;
#elif defined(__aarch64__)
    case LINATTN_ISA_SCALAR:
    case LINATTN_ISA_NEON: *loop = loop_neon; return 24.0 * 4 * 2 * STEPS;
#endif
    default: return 0;
    }
}

volatile float peak_sink;

int peak_samples(linattn_isa isa, int threads, double seconds, double *gflops, int trials)
{
    float (*loop)(long);
    double per_rep = kind_of(isa, &loop);
    if (!loop || threads < 1)
        return 0;
    /* reps for about `seconds`, from a short calibration run */
    long reps = 4;
    double t0 = now();
    peak_sink = loop(reps);
    double dt = now() - t0;
    if (dt > 0)
        reps = (long)(reps * seconds / dt) + 1;
    for (int trial = 0; trial < trials; trial++) {
        double start = now();
#ifdef LINATTN_BENCH_OPENMP
#pragma omp parallel num_threads(threads)
#endif
        {
            float v = loop(reps);
#ifdef LINATTN_BENCH_OPENMP
#pragma omp atomic
#endif
            peak_sink += v;
        }
        gflops[trial] = per_rep * (double)reps * threads / (now() - start) * 1e-9;
    }
    return trials;
}

double peak_gflops(linattn_isa isa, int threads, double seconds)
{
    double g[3], best = 0;
    int n = peak_samples(isa, threads, seconds, g, 3);
    for (int i = 0; i < n; i++)
        best = g[i] > best ? g[i] : best;
    return best;
}

/* ------------------------------------------------------------------------ */
/* The peak suite                                                            */
/* ------------------------------------------------------------------------ */

/* 1 and each thread count asked, resolved and without repeats. */
static int peak_thread_counts(const bench_plan *p, int *out)
{
    int n = 0;
    out[n++] = 1;
    for (int i = 0; i < p->n_threads; i++) {
        int t = bench_resolve_threads(p->threads[i]), seen = 0;
        for (int j = 0; j < n; j++)
            seen |= out[j] == t;
        if (!seen)
            out[n++] = t;
    }
    return n;
}

size_t peak_units(const bench_plan *p)
{
    int t[BENCH_MAX_THREADS + 1];
    return (size_t)p->n_isas * (size_t)peak_thread_counts(p, t);
}

int suite_peak(const bench_plan *p)
{
    int counts[BENCH_MAX_THREADS + 1];
    int nt = peak_thread_counts(p, counts);
    bench_den.n_peaks = 0;
    for (int ii = 0; ii < p->n_isas; ii++) {
        for (int ti = 0; ti < nt; ti++) {
            linattn_isa isa = p->isas[ii];
            int t = counts[ti];
            char label[64];
            snprintf(label, sizeof label, "fma-peak %s %dt", linattn_isa_name(isa), t);
            bench_progress_step(label);
            bench_pin(t);
            bench_row r;
            bench_row_init(&r);
            snprintf(r.suite, sizeof r.suite, "peak");
            snprintf(r.name, sizeof r.name, "fma-peak");
            snprintf(r.isa, sizeof r.isa, "%s", linattn_isa_name(isa));
            snprintf(r.unit, sizeof r.unit, "GFLOP/s");
            r.threads = t;
            double g[BENCH_MAX_SAMPLES];
            int n;
            if (p->peak_override > 0) {
                g[0] = p->peak_override * t;
                n = 1;
                snprintf(r.what, sizeof r.what, "FMA peak given by --peak (per core x threads)");
                snprintf(r.note, sizeof r.note, "--peak %g x %d", p->peak_override, t);
            } else {
                int trials = p->repeat < BENCH_MAX_SAMPLES ? p->repeat : BENCH_MAX_SAMPLES;
                n = peak_samples(isa, t, p->quick ? 0.02 : 0.1, g, trials);
                snprintf(r.what, sizeof r.what,
                         "fp32 multiply-add loop in registers, independent chains%s",
                         isa == LINATTN_ISA_SCALAR ? " (scalar: the SSE baseline, mul + add)" : "");
                snprintf(r.note, sizeof r.note, "the %% of peak divides by the best run");
            }
            if (n <= 0)
                continue;
            bench_stats_of(g, n, &r.st);
            r.peak = r.st.max;
            if (bench_den.n_peaks < (int)(sizeof bench_den.peaks / sizeof bench_den.peaks[0])) {
                bench_den.peaks[bench_den.n_peaks].isa = isa;
                bench_den.peaks[bench_den.n_peaks].threads = t;
                bench_den.peaks[bench_den.n_peaks++].gflops = r.peak;
            }
            bench_emit(&r);
        }
    }
    return 0;
}
