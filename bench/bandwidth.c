/* bandwidth.c: memory bandwidth (STREAM triad over >= 4x the last-level cache) and one core's L1/L2/L3 read bandwidth. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifdef LINATTN_BENCH_OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

/* ------------------------------------------------------------------------ */
/* Triad: a = b + s c                                                        */
/* ------------------------------------------------------------------------ */

typedef struct triad_ctx {
    float *a, *b, *c;
    long n;
    int threads;
} triad_ctx;

static int triad_call(void *p)
{
    triad_ctx *t = p;
    float *a = t->a;
    const float *b = t->b, *c = t->c;
    const float s = 3.0f;
    long n = t->n;
#pragma omp parallel for num_threads(t->threads) schedule(static)
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Reads: sums of a buffer that stays in one cache level                     */
/* ------------------------------------------------------------------------ */

/* Eight independent sums, so the loads and not the add latency bound the
 * loop; the widest loads the CPU has (the read bandwidth of a level is in
 * bytes per load x loads per cycle). n is a multiple of 128 floats. */
typedef float (*read_fn)(const float *p, size_t n, long sweeps);

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float read_avx512(const float *p, size_t n, long sweeps)
{
    __m512 acc[8];
    for (int j = 0; j < 8; j++)
        acc[j] = _mm512_setzero_ps();
    for (long s = 0; s < sweeps; s++)
        for (size_t i = 0; i < n; i += 128)
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                acc[j] = _mm512_add_ps(acc[j], _mm512_load_ps(p + i + 16 * j));
    for (int j = 1; j < 8; j++)
        acc[0] = _mm512_add_ps(acc[0], acc[j]);
    return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2"))) static float read_avx2(const float *p, size_t n, long sweeps)
{
    __m256 acc[8];
    for (int j = 0; j < 8; j++)
        acc[j] = _mm256_setzero_ps();
    for (long s = 0; s < sweeps; s++)
        for (size_t i = 0; i < n; i += 64)
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                acc[j] = _mm256_add_ps(acc[j], _mm256_load_ps(p + i + 8 * j));
    for (int j = 1; j < 8; j++)
        acc[0] = _mm256_add_ps(acc[0], acc[j]);
    return _mm_cvtss_f32(_mm256_castps256_ps128(acc[0]));
}

static float read_sse(const float *p, size_t n, long sweeps)
{
    __m128 acc[8];
    for (int j = 0; j < 8; j++)
        acc[j] = _mm_setzero_ps();
    for (long s = 0; s < sweeps; s++)
        for (size_t i = 0; i < n; i += 32)
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                acc[j] = _mm_add_ps(acc[j], _mm_load_ps(p + i + 4 * j));
    for (int j = 1; j < 8; j++)
        acc[0] = _mm_add_ps(acc[0], acc[j]);
    return _mm_cvtss_f32(acc[0]);
}
#elif defined(__aarch64__)
static float read_neon(const float *p, size_t n, long sweeps)
{
    float32x4_t acc[8];
    for (int j = 0; j < 8; j++)
        acc[j] = vdupq_n_f32(0);
    for (long s = 0; s < sweeps; s++)
        for (size_t i = 0; i < n; i += 32)
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                acc[j] = vaddq_f32(acc[j], vld1q_f32(p + i + 4 * j));
    for (int j = 1; j < 8; j++)
        acc[0] = vaddq_f32(acc[0], acc[j]);
    return vgetq_lane_f32(acc[0], 0);
}
#else
static float read_plain(const float *p, size_t n, long sweeps)
{
    float acc[8] = {0};
    for (long s = 0; s < sweeps; s++)
        for (size_t i = 0; i < n; i += 8)
            for (int j = 0; j < 8; j++)
                acc[j] += p[i + j];
    return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}
#endif

/* The widest loads this CPU runs, and their name. */
static read_fn pick_read(const char **name)
{
#if defined(__x86_64__)
    unsigned f = linattn_cpu_features();
    if (f & LINATTN_CPU_AVX512) {
        *name = "avx512";
        return read_avx512;
    }
    if (f & LINATTN_CPU_AVX2) {
        *name = "avx2";
        return read_avx2;
    }
    *name = "sse2";
    return read_sse;
#elif defined(__aarch64__)
    *name = "neon";
    return read_neon;
#else
    *name = "c";
    return read_plain;
#endif
}

volatile float bandwidth_sink;

typedef struct read_ctx {
    read_fn fn;
    const float *buf;
    size_t n;
    long sweeps;
} read_ctx;

static int read_call(void *p)
{
    read_ctx *r = p;
    bandwidth_sink = r->fn(r->buf, r->n, r->sweeps);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The suite                                                                 */
/* ------------------------------------------------------------------------ */

/* 1 and the most threads asked. */
static int triad_counts(const bench_plan *p, int *out)
{
    int most = 1;
    for (int i = 0; i < p->n_threads; i++) {
        int t = bench_resolve_threads(p->threads[i]);
        most = t > most ? t : most;
    }
    out[0] = 1;
    out[1] = most;
    return most > 1 ? 2 : 1;
}

size_t bandwidth_units(const bench_plan *p)
{
    int t[2];
    return 2 * (size_t)triad_counts(p, t) + 3;
}

static void fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 97) * 0.01f;
}

static void size_text(char *b, size_t n, size_t bytes)
{
    if (bytes >= (1u << 20))
        snprintf(b, n, "%.0f MiB", (double)bytes / (1u << 20));
    else
        snprintf(b, n, "%.0f KiB", (double)bytes / 1024);
}

/* The memory bandwidth of `threads`: the best figure measured so far. */
static void record_dram(int threads, double gbs)
{
    for (int i = 0; i < bench_den.n_dram; i++)
        if (bench_den.dram[i][0] == threads) {
            if (gbs > bench_den.dram[i][1])
                bench_den.dram[i][1] = gbs;
            return;
        }
    if (bench_den.n_dram < BENCH_MAX_THREADS + 1) {
        bench_den.dram[bench_den.n_dram][0] = threads;
        bench_den.dram[bench_den.n_dram++][1] = gbs;
    }
}

static int run_triad(const bench_plan *p, int threads, long n, float *a, float *b, float *c)
{
    char label[48], sz[32];
    snprintf(label, sizeof label, "triad %dt", threads);
    bench_progress_step(label);
    triad_ctx t = {a, b, c, n, threads};
    bench_pin(threads);
    double s[BENCH_MAX_SAMPLES];
    int runs = bench_time(triad_call, &t, p, 1, s, BENCH_MAX_SAMPLES);
    if (runs <= 0)
        return -1;
    bench_row r;
    bench_row_init(&r);
    snprintf(r.suite, sizeof r.suite, "bandwidth");
    snprintf(r.name, sizeof r.name, "triad");
    snprintf(r.isa, sizeof r.isa, "baseline");
    snprintf(r.unit, sizeof r.unit, "GB/s");
    size_text(sz, sizeof sz, (size_t)n * sizeof(float));
    snprintf(r.what, sizeof r.what,
             "STREAM triad a = b + s c, fp32, three arrays of %s (>= 4x the last-level cache)", sz);
    snprintf(r.note, sizeof r.note, "12 B per element (no write-allocate); floors use the best run");
    r.threads = threads;
    double bytes = 12.0 * (double)n;
    bench_stats_of_rate(s, runs, bytes * 1e-9, &r.st);
    bench_stats sec;
    bench_stats_of(s, runs, &sec);
    r.seconds = sec.median;
    r.bandwidth = r.st.max;
    record_dram(threads, r.bandwidth);
    bench_emit(&r);
    return 0;
}

/* Each thread sums its share of the buffer (whole 512-byte lines). */
typedef struct read_dram_ctx {
    read_fn fn;
    const float *buf;
    long n;
    int threads;
} read_dram_ctx;

static int read_dram_call(void *p)
{
    read_dram_ctx *c = p;
    float sum = 0;
#pragma omp parallel num_threads(c->threads) reduction(+ : sum)
    {
        int t = 0, nt = 1;
#ifdef LINATTN_BENCH_OPENMP
        t = omp_get_thread_num(), nt = omp_get_num_threads();
#endif
        long blocks = c->n / 128, per = (blocks + nt - 1) / nt;
        long b0 = per * t, b1 = b0 + per < blocks ? b0 + per : blocks;
        if (b1 > b0)
            sum += c->fn(c->buf + b0 * 128, (size_t)(b1 - b0) * 128, 1);
    }
    bandwidth_sink = sum;
    return 0;
}

static int run_read_dram(const bench_plan *p, int threads, long n, const float *buf)
{
    char label[48], sz[32];
    snprintf(label, sizeof label, "read-dram %dt", threads);
    bench_progress_step(label);
    const char *isa;
    read_dram_ctx c = {pick_read(&isa), buf, n / 128 * 128, threads};
    bench_pin(threads);
    double s[BENCH_MAX_SAMPLES];
    int runs = bench_time(read_dram_call, &c, p, 1, s, BENCH_MAX_SAMPLES);
    if (runs <= 0)
        return -1;
    bench_row r;
    bench_row_init(&r);
    snprintf(r.suite, sizeof r.suite, "bandwidth");
    snprintf(r.name, sizeof r.name, "read-dram");
    snprintf(r.isa, sizeof r.isa, "%s", isa);
    snprintf(r.unit, sizeof r.unit, "GB/s");
    size_text(sz, sizeof sz, (size_t)c.n * sizeof(float));
    snprintf(r.what, sizeof r.what, "read bandwidth of memory: sums of %s (>= 4x the last-level cache), %s loads",
             sz, isa);
    snprintf(r.note, sizeof r.note, "floors use the best run (or the triad's, if higher)");
    r.threads = threads;
    bench_stats_of_rate(s, runs, (double)c.n * sizeof(float) * 1e-9, &r.st);
    bench_stats sec;
    bench_stats_of(s, runs, &sec);
    r.seconds = sec.median;
    r.bandwidth = r.st.max;
    record_dram(threads, r.bandwidth);
    bench_emit(&r);
    return 0;
}

static int run_read(const bench_plan *p, const char *level, size_t cache, size_t fallback,
                    double *out)
{
    char name[48], sz[32];
    snprintf(name, sizeof name, "read-%s", level); /* read-l1 */
    for (char *q = name; *q; q++)
        *q = (char)(*q >= 'A' && *q <= 'Z' ? *q - 'A' + 'a' : *q);
    bench_progress_step(name);
    /* half the level: the rest of the program and the stack keep their lines */
    size_t bytes = (cache ? cache : fallback) / 2 / 512 * 512;
    if (bytes < 512)
        bytes = 512;
    float *buf = aligned_alloc(64, bytes);
    if (!buf) {
        fprintf(stderr, "linattn-bench: out of memory\n");
        return -1;
    }
    fill(buf, bytes / sizeof(float));
    const char *isa;
    read_ctx c = {pick_read(&isa), buf, bytes / sizeof(float), 0};
    bench_pin(1);
    /* about 256 MiB a run: 0.5 ms from L1, a few ms from L3 */
    c.sweeps = (long)((256u << 20) / bytes);
    if (c.sweeps < 1)
        c.sweeps = 1;
    double s[BENCH_MAX_SAMPLES];
    int runs = bench_time(read_call, &c, p, 1, s, BENCH_MAX_SAMPLES);
    free(buf);
    if (runs <= 0)
        return -1;
    bench_row r;
    bench_row_init(&r);
    snprintf(r.suite, sizeof r.suite, "bandwidth");
    bench_copy(r.name, sizeof r.name, name);
    snprintf(r.isa, sizeof r.isa, "%s", isa);
    snprintf(r.unit, sizeof r.unit, "GB/s");
    size_text(sz, sizeof sz, bytes);
    snprintf(r.what, sizeof r.what, "read bandwidth of one core from %s (half of %s%s), %s loads",
             sz, level, cache ? "" : ", size assumed", isa);
    snprintf(r.note, sizeof r.note, "floors use the best run");
    r.threads = 1;
    bench_stats_of_rate(s, runs, (double)bytes * (double)c.sweeps * 1e-9, &r.st);
    bench_stats sec;
    bench_stats_of(s, runs, &sec);
    r.seconds = sec.median;
    r.bandwidth = r.st.max;
    *out = r.bandwidth;
    bench_emit(&r);
    return 0;
}

int suite_bandwidth(const bench_plan *p)
{
    const bench_caches *c = &bench_den.caches;
    int counts[2], nt = triad_counts(p, counts);
    /* STREAM's rule: each array at least 4x the last-level cache (32 MiB
     * assumed when the system does not say; 512 MiB at most) */
    size_t llc = c->l3 ? c->l3 : c->l2 ? c->l2 : (32u << 20);
    size_t bytes = 4 * llc;
    if (bytes > (512u << 20))
        bytes = 512u << 20;
    long n = (long)(bytes / sizeof(float));
    float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *cc = aligned_alloc(64, bytes);
    int rc = 0;
    if (!a || !b || !cc) {
        fprintf(stderr, "linattn-bench: out of memory for the triad (3 x %zu MiB)\n", bytes >> 20);
        rc = -1;
    } else {
        /* first touch by the threads that will use the pages */
        int most = counts[nt - 1];
        bench_pin(most);
#pragma omp parallel for num_threads(most) schedule(static)
        for (long i = 0; i < n; i++) {
            a[i] = 0;
            b[i] = (float)(i % 97) * 0.01f;
            cc[i] = (float)(i % 89) * 0.01f;
        }
        bench_den.n_dram = 0;
        for (int i = 0; i < nt && rc == 0; i++)
            rc = run_triad(p, counts[i], n, a, b, cc);
        for (int i = 0; i < nt && rc == 0; i++)
            rc = run_read_dram(p, counts[i], n, b);
    }
    free(a), free(b), free(cc);
    if (rc == 0)
        rc = run_read(p, "L1", c->l1d, 32u << 10, &bench_den.read_l1);
    if (rc == 0)
        rc = run_read(p, "L2", c->l2, 512u << 10, &bench_den.read_l2);
    if (rc == 0)
        rc = run_read(p, "L3", c->l3, 8u << 20, &bench_den.read_l3);
    return rc;
}
