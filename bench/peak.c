/* peak.c: the fp32 FMA peak of each ISA, measured: register-only loops of independent multiply-add chains. */
#include <stddef.h>
#include <time.h>

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

double peak_gflops(linattn_isa isa, int threads, double seconds)
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
    double best = 0;
    for (int trial = 0; trial < 3; trial++) {
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
        double g = per_rep * (double)reps * threads / (now() - start) * 1e-9;
        best = g > best ? g : best;
    }
    return best;
}
