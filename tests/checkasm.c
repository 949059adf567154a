/* checkasm.c: checks every kernel of every ISA this CPU runs against scalar and a double reference; --bench times them. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "linattn.h"
#include "../engine/internal.h"
#include "../simd/f16.h"
#include "../simd/kernel_cases.h"
#include "../simd/q8_0.h"
#include "../simd/quants.h"

/* Under ASan the guards are also poisoned, so a plain load or store into
 * them stops the run at once, whatever value it reads or writes. */
#if defined(__SANITIZE_ADDRESS__)
#define CHECKASM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHECKASM_ASAN 1
#endif
#endif
#ifdef CHECKASM_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, bytes) ASAN_POISON_MEMORY_REGION(p, bytes)
#define UNPOISON(p, bytes) ASAN_UNPOISON_MEMORY_REGION(p, bytes)
#else
#define POISON(p, bytes) ((void)(p), (void)(bytes))
#define UNPOISON(p, bytes) ((void)(p), (void)(bytes))
#endif

/* ------------------------------------------------------------------------ */
/* Tolerances                                                                */
/* ------------------------------------------------------------------------ */

/* u = 2^-24 is the fp32 unit roundoff; "ulp" is the spacing of fp32 at the
 * double reference (2^-149 in the denormal range). Every ISA (scalar too)
 * must be within the bound of the double reference, and every SIMD ISA
 * within twice the bound of scalar (both sit within one bound of the truth).
 * Bounds are worst-case (Higham's gamma_n = n u), so they hold for any
 * summation order and with or without FMA, yet a single lost, doubled or
 * misplaced term is far outside them. tiny = 2^-149 covers products or
 * sums that underflow into the denormal range. */
enum tol_kind { TOL_EXACT, TOL_ULP, TOL_BOUND };

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

/* Per kernel, by id: a kernel without an entry stops checkasm at start. */
static const struct tolerance {
    enum tol_kind kind;
    double c; /* ulps for TOL_ULP, the additive constant of the bound for TOL_BOUND */
    const char *formula;
    const char *why;
} tolerances[N_KERNELS] = {
    [K_dot] = {TOL_BOUND, 2, "(n+c) u sum|a_i b_i| + n tiny",
     "n rounded products/adds in any order or lane split (gamma_n), c for the final lane reduction"},
    [K_max] = {TOL_EXACT, 0, "equal; NaN if an x is NaN or +-inf", "max never rounds, in any order"},
    [K_sum] = {TOL_BOUND, 2, "(n+c) u sum|x_i|", "n-1 rounded adds in any order, c for the lane reduction"},
    [K_axpy] = {TOL_BOUND, 2, "c u (|y| + |a x|) + tiny", "one FMA or a rounded product then a rounded add"},
    [K_scale] = {TOL_ULP, 0.5, "c ulp", "one correctly rounded product"},
    [K_exp_sub_sum] = {TOL_ULP, 1, "y: c ulp of exp(fl(x-m)); sum: (n+2c+2) u sum y + n tiny",
     "glibc expf and the inline exp (the exp sweep) are both within 1 ulp, also for denormal "
     "results; the fp32 subtraction x-m is part of the contract; the sum adds n rounded adds "
     "to c ulp per term"},
    [K_elu1] = {TOL_ULP, 1, "c ulp",
     "x+1 is correctly rounded; exp (libm or the inline one, see the exp sweep) is within 1 ulp"},
    [K_relu] = {TOL_EXACT, 0, "equal", "max(x, 0) never rounds"},
    [K_gelu] = {TOL_BOUND, 3, "c ulp + 4 u |x|",
     "c ulps for the final products; for x < -3, 1+tanh cancels, so tanh's absolute error "
     "(a few 2^-24: libm, SLEEF, or expm1(2u)/(expm1(2u)+2)) and the rounded argument are "
     "scaled by 0.5|x|"},
    [K_silu_mul] = {TOL_BOUND, 6, "c u |y| + 4 tiny, and |y| where g < -87",
     "exp within 1 ulp (2u) moves 1 + exp(-g) by at most 2u relatively, then the rounded add, "
     "divide and multiply: 5u, c = 6 with the second-order terms; roundings into the "
     "subnormal range lose up to tiny each; below g = -88.7 exp(-g) overflows fp32 and y is "
     "0 where the truth is below 2e-36"},
    [K_layernorm] = {TOL_BOUND, 8,
     "u [2n mean|x| inv |w| + (n+c)|x-mean| inv |w| + 2|y| + 2|b|] + tiny (1 + (n+2) inv |w|)",
     "mean is off by <= n u mean|x| (shifts every output by that times inv w), variance and "
     "1/sqrt by <= (n+c) u relatively, then the scale, weight and bias roundings; with "
     "subnormal x, the n adds, the divide and x - mean each lose up to tiny absolutely, "
     "scaled by inv |w| (seed 231: n = 2, outputs near 3e-37)"},
    [K_rmsnorm] = {TOL_BOUND, 8, "(n/2+c) u |y| + tiny (1+|w|)",
     "sum of squares within n u relatively (all terms >= 0), halved by the sqrt, then c roundings"},
    [K_linear_block_read] = {TOL_BOUND, 4,
     "(dk+n+c) u [sum|num terms| + |out| sum|den terms|] / |den| + tiny",
     "num is a (dk+n)-term sum of products (the n row weights each a dk-term dot, gamma_dk "
     "relative, carried into num and den alike), den likewise; c for the scaling by c, the "
     "division and the final product"},
    [K_gemv] = {TOL_BOUND, 2, "(cols+c) u (sum|W x| + |b|) + cols tiny",
     "a cols-term dot product in any order, c for the bias add and the lane reduction"},
    [K_gemm_nt] = {TOL_BOUND, 2, "(K+c) u (|C| + sum|A B|) + K tiny",
     "a K-term dot product added to C, in any blocking or order"},
    [K_gemv_f16] = {TOL_BOUND, 2, "(cols+c) u (sum|W x| + |b|) + cols tiny",
     "gemv's bound: a half converts to fp32 exactly (subnormals too), so only the order of the "
     "cols-term sum differs"},
    [K_gemv_bf16] = {TOL_BOUND, 2, "(cols+c) u (sum|W x| + |b|) + cols tiny",
     "gemv's bound: a bfloat16 is the top half of an fp32, exact, so only the order differs"},
    [K_gemm_nt_f16] = {TOL_BOUND, 2, "(K+c) u (|C| + sum|A B|) + K tiny",
     "gemm_nt's bound: B's halfs convert exactly (in registers or while packing)"},
    [K_gemm_nt_bf16] = {TOL_BOUND, 2, "(K+c) u (|C| + sum|A B|) + K tiny",
     "gemm_nt's bound: B's bfloat16s convert exactly"},
    [K_gemm_nn] = {TOL_BOUND, 2, "(K+c) u (|C| + sum|A B|) + K tiny",
     "a K-term sum of products added to C, in any blocking or order; and each sum formed "
     "apart and added to C once (checked exactly)"},
    [K_gemm_nn_f16] = {TOL_BOUND, 2, "(K+c) u (|C| + sum|A B|) + K tiny; and bit for bit gemm_nn",
     "gemm_nn's bound: B's halfs convert exactly; the same FMAs in the same order as this "
     "ISA's gemm_nn on B in fp32 (checked exactly: a KV cache in F16 changes only the rounding "
     "of what it stores)"},
    [K_gemv_q8] = {TOL_BOUND, 4, "(cols+c) u (sum|s w x| + |b|) + cols tiny",
     "each 32-column group summed (32 rounded terms), scaled (one rounding) and added into the "
     "row's sum (cols/32 terms): under (cols + 3) u of the absolute sum, c = 4 with the bias"},
    [K_gemm_nt_q8] = {TOL_BOUND, 4, "(K+c) u (|C| + sum|A s w|) + K tiny",
     "gemm_nt's bound plus one rounding of each dequantized weight w s"},
    [K_gemv_q8_0] = {TOL_BOUND, 8, "(cols+c) u (sum|W x_q| + |b|) + cols tiny",
     "x is quantized by the one shared routine (the same int8 and half scales on every ISA), "
     "each block's dot product is an exact integer, so only the fp32 sum of the cols/32 scaled "
     "block terms (per lane, then the lanes) differs: under (cols/32 + log2 VL + 3) u of the "
     "absolute sum of W x_q; c = 8 with the bias"},
    [K_dequant] = {TOL_EXACT, 0, "bit for bit linattn_quant_values (scale q - min)",
     "a product and a difference per value, in the same order on every ISA"},
    [K_gemm_quant] = {TOL_EXACT, 0, "bit for bit this ISA's gemv_q8_0 / gemv_quant, row by row",
     "each row of C is the one-row kernel's sum onto it (the kernels' own checks bound those)"},
    [K_gemm_quant_xq] = {TOL_BOUND, 4, "(K/16+c) u (|C| + sum(|s q| + |m|) |x_q|) + K tiny",
     "A given quantized (int8, a half scale's value per 32: no quantization in the kernel), "
     "each block's integer dot product exact (the offset against the block's sum of q_x), "
     "its scaling two roundings, then K/32 block terms in fp32 per chunk of columns and the "
     "chunks onto C (fewer than K/32 more adds): against the absolute sums of the weights' "
     "scale and offset parts, as gemv_quant"},
    [K_quantize_q8_0] = {TOL_EXACT, 0, "bit for bit linattn_q8_0_quantize (q, d; any NaN for NaN), s its sums",
     "the same IEEE operations on each value (a max, a product, two adds, a clamp); blocks with "
     "a NaN or an infinity, of zeros, of huge, subnormal and equal values, and ties"},
    [K_quantize_q8_K] = {TOL_EXACT, 0, "bit for bit linattn_q8_K_quantize (q, d; any NaN for NaN), s its sums per 32",
     "the same IEEE operations on each value; the first value of the largest magnitude sets the "
     "scale's sign (blocks with both signs of it); NaN, infinity, zeros, subnormals"},
    [K_gemv_quant] = {TOL_BOUND, 8, "(cols/16+c) u sum(|s q| + |m|) |x_q| + |b| u",
     "x quantized as for gemv_q8_0 (the K-quants: as Q8_K, one fp32 scale per 256, their "
     "super-block's integer sum scaled once, fewer roundings); per 16 values an exact integer "
     "dot product scaled once "
     "(s d_x, then the product), the offsets' term m sum(q_x) d_x likewise, each summed over "
     "the row's cols/16 groups in fp32, the two taken apart once: bounded by the absolute "
     "sums of both parts, not of w x (a Q4_1 or K-quant offset may cancel its scale's term)"},
    [K_to_f16] = {TOL_EXACT, 0, "equal (any NaN for NaN)",
     "round to nearest even is one correctly rounded result: ties, the subnormal range, "
     "overflow to infinity"},
    [K_gemm_tn] = {TOL_BOUND, 2, "(K+c) u (|C| + sum|A B|) + K tiny",
     "gemm_nn's bound and contract: A transposed changes only where its elements are read"},
    [K_linear_block_rows] = {TOL_EXACT, 0, "bit for bit this ISA's linear_block_read, row by row",
     "a prefill's rows must be the decode step's (linear_block_read carries the bound against "
     "the double reference); rows, strides, waiting rows before, decay all vary"},
};


static const double U = 0x1p-24;
static const double TINY = 0x1p-149;

/* Sizes of every dimension; 2-D and 3-D shapes use the combinations whose
 * product stays under SHAPE_LIMIT (plus a few large-K extras). */
static const size_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 1000};
#define N_SIZES (sizeof sizes / sizeof sizes[0])
#define SHAPE_LIMIT 70000

/* ------------------------------------------------------------------------ */
/* PRNG (splitmix64): the seed reproduces a run                               */
/* ------------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rnd_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static double rnd_unit(void)
{
    return (double)(rnd_u64() >> 11) * 0x1p-53;
}

static float rnd_range(double lo, double hi)
{
    return (float)(lo + (hi - lo) * rnd_unit());
}

static unsigned rnd_below(unsigned n)
{
    return (unsigned)(rnd_u64() % n);
}

/* A float of either sign over a wide range of magnitudes. */
static float rnd_wide(int min_exp, int max_exp)
{
    int e = min_exp + (int)rnd_below((unsigned)(max_exp - min_exp + 1));
    float v = (float)ldexp(1.0 + rnd_unit(), e);
    return rnd_below(2) ? v : -v;
}

/* A denormal of either sign. */
static float rnd_denormal(void)
{
    float v = (float)ldexp((double)(1 + rnd_below((1u << 23) - 1)), -149);
    return rnd_below(2) ? v : -v;
}

/* ------------------------------------------------------------------------ */
/* Guarded buffers: a random misalignment, NaN guards on both sides          */
/* ------------------------------------------------------------------------ */

/* Guards around inputs are a quiet NaN with a payload: a kernel that reads
 * one into a result makes it NaN. Guards around outputs are -0.0: writing
 * any computed value changes them, and so does a masked-off read-modify-
 * write that adds +0 (-0 + 0 = +0), which a NaN guard would not show. */
#define GUARD 24
static const uint32_t GUARD_IN = 0x7fc0dead, GUARD_OUT = 0x80000000;

typedef struct buf {
    float *base;
    float *p;
    size_t n;
    uint32_t guard;
} buf;

static float *buf_make(buf *b, size_t n, uint32_t guard)
{
    size_t off = 1 + rnd_below(7); /* never 32-byte aligned */
    b->n = n;
    b->guard = guard;
    b->base = malloc((n + 2 * GUARD + 8) * sizeof(float));
    if (!b->base) {
        fprintf(stderr, "checkasm: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n + 2 * GUARD + 8; i++)
        memcpy(b->base + i, &guard, sizeof guard);
    b->p = b->base + GUARD + off;
    POISON(b->base, (size_t)(b->p - b->base) * sizeof(float));
    POISON(b->p + n, (n + 2 * GUARD + 8 - (size_t)(b->p - b->base) - n) * sizeof(float));
    return b->p;
}

static void buf_unpoison(const buf *b)
{
    UNPOISON(b->base, (b->n + 2 * GUARD + 8) * sizeof(float));
}

/* A buffer a kernel only reads. */
static float *buf_new(buf *b, size_t n)
{
    return buf_make(b, n, GUARD_IN);
}

/* A buffer a kernel writes (or updates). */
static float *buf_out(buf *b, size_t n)
{
    return buf_make(b, n, GUARD_OUT);
}

/* 1 if no float outside [p, p+n) changed. */
static int buf_guards_ok(const buf *b)
{
    buf_unpoison(b);
    size_t total = b->n + 2 * GUARD + 8;
    for (size_t i = 0; i < total; i++) {
        float *q = b->base + i;
        if (q >= b->p && q < b->p + b->n)
            continue;
        uint32_t bits;
        memcpy(&bits, q, sizeof bits);
        if (bits != b->guard)
            return 0;
    }
    return 1;
}

static void buf_free(buf *b)
{
    if (b->base)
        buf_unpoison(b);
    free(b->base);
    b->base = b->p = NULL;
}

/* ------------------------------------------------------------------------ */
/* Error measures and the per-(kernel, ISA) report                           */
/* ------------------------------------------------------------------------ */

/* Spacing of fp32 around |ref|. */
static double ulp_of(double ref)
{
    double a = fabs(ref);
    if (a < FLT_MIN)
        return TINY;
    int e;
    frexp(a, &e); /* a = f 2^e, f in [0.5, 1) */
    return ldexp(1.0, e - 24);
}

/* |got - ref| in ulps of ref; NaN or a wrong infinity is infinitely wrong. */
static double ulp_err(float got, double ref)
{
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0.0 : INFINITY;
    if (isinf(got) || isinf(ref)) {
        if ((float)ref == got)
            return 0.0;
        /* an overflow boundary case: ref just past FLT_MAX rounds either way */
        if (isinf(got) && fabs(ref) >= FLT_MAX && (got > 0) == (ref > 0))
            return 1.0;
        return INFINITY;
    }
    return fabs((double)got - ref) / ulp_of(ref);
}

/* err / bound, with a zero bound allowing only an exact result. */
static double bound_ratio(float got, double ref, double bound)
{
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0.0 : INFINITY;
    if (isinf(got) || isinf(ref))
        return (float)ref == got ? 0.0 : INFINITY;
    double err = fabs((double)got - ref);
    if (bound <= 0.0)
        return err == 0.0 ? 0.0 : INFINITY;
    return err / bound;
}

typedef struct report {
    double worst;  /* worst err/tol against the reference (ulps for TOL_ULP) */
    double worst_vs_scalar;
    int failed;
    char detail[320];
} report;

/* The id of a kernel name, or -1. */
static int kernel_id(const char *kernel)
{
    for (int i = 0; i < N_KERNELS; i++)
        if (!strcmp(kernel_names[i], kernel))
            return i;
    return -1;
}

static const struct tolerance *tol_of(const char *kernel)
{
    int i = kernel_id(kernel);
    return i < 0 ? NULL : &tolerances[i];
}

static void fail(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(report *r, const char *fmt, ...)
{
    if (r->failed++)
        return; /* keep the first failure's details */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
}

/* Records one output's error against the reference (e, limit 1 for bounds,
 * c for ulps) and against scalar (e_sc, limit twice as wide). */
static void note(report *r, double e, double limit, double e_sc, const char *what, size_t idx,
                 float got, double ref, float sc)
{
    if (e > r->worst || isnan(e))
        r->worst = isnan(e) ? INFINITY : e;
    if (e_sc > r->worst_vs_scalar || isnan(e_sc))
        r->worst_vs_scalar = isnan(e_sc) ? INFINITY : e_sc;
    if (!(e <= limit))
        fail(r, "%s[%zu]: got %.9g, reference %.17g (error %.3g, limit %.3g)", what, idx,
             (double)got, ref, e, limit);
    else if (!(e_sc <= 2 * limit))
        fail(r, "%s[%zu]: got %.9g, scalar %.9g (error vs scalar %.3g, limit %.3g)", what, idx,
             (double)got, (double)sc, e_sc, 2 * limit);
}

static void check_guards(report *r, const buf *b, const char *what)
{
    if (!buf_guards_ok(b))
        fail(r, "%s: wrote outside its %zu floats", what, b->n);
}

/* Shape context for failure messages. */
static char shape[96];

/* ------------------------------------------------------------------------ */
/* Reductions: dot, max, sum                                                 */
/* ------------------------------------------------------------------------ */

enum { FILL_RANDOM, FILL_WIDE, FILL_DENORMAL, FILL_EQUAL, N_FILLS };

static void fill(float *x, size_t n, int how, double lo, double hi)
{
    float same = rnd_range(lo, hi);
    for (size_t i = 0; i < n; i++) {
        switch (how) {
        case FILL_WIDE: x[i] = rnd_wide(-20, 20); break;
        case FILL_DENORMAL: x[i] = rnd_below(4) ? rnd_denormal() : rnd_range(lo, hi); break;
        case FILL_EQUAL: x[i] = same; break;
        default: x[i] = rnd_range(lo, hi); break;
        }
    }
}

static void check_dot(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("dot")->c;
    for (size_t si = 0; si <= N_SIZES; si++) {
        size_t n = si ? sizes[si - 1] : 0;
        for (int how = 0; how < N_FILLS; how++) {
            buf ba, bb;
            float *a = buf_new(&ba, n), *b = buf_new(&bb, n);
            fill(a, n, how, -1, 1);
            fill(b, n, how, -1, 1);
            double ref = 0, abs = 0;
            for (size_t i = 0; i < n; i++) {
                ref += (double)a[i] * b[i];
                abs += fabs((double)a[i] * b[i]);
            }
            double bound = ((double)n + c) * U * abs + (double)n * TINY;
            float got = k->dot(a, b, n), s = sc->dot(a, b, n);
            snprintf(shape, sizeof shape, "n=%zu fill=%d", n, how);
            note(r, bound_ratio(got, ref, bound), 1, bound_ratio(got, s, bound), shape, 0, got,
                 ref, s);
            buf_free(&ba);
            buf_free(&bb);
        }
    }
}

/* The max, or NaN when an x is not finite: a softmax row's NaN or inf score
 * must reach the row (NaN and +-inf put at the start, middle and end, where
 * the vector, unrolled and tail loops take them). */
static void check_max(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (size_t si = 0; si <= N_SIZES; si++) {
        size_t n = si ? sizes[si - 1] : 0;
        for (int how = 0; how < N_FILLS + 4; how++) {
            buf bx;
            float *x = buf_new(&bx, n);
            fill(x, n, how < N_FILLS ? how : FILL_RANDOM, -100, 100);
            if (how == N_FILLS) /* some -inf */
                for (size_t i = 0; i < n; i++)
                    if (rnd_below(3) == 0)
                        x[i] = -INFINITY;
            if (how == N_FILLS + 1) /* every x -inf */
                for (size_t i = 0; i < n; i++)
                    x[i] = -INFINITY;
            if (how >= N_FILLS + 2 && n > 0) /* one NaN, +inf or -inf, or three */
                for (int b = 0; b < (how == N_FILLS + 2 ? 1 : 3); b++)
                    x[b == 0 ? n - 1 : b == 1 ? 0 : n / 2] = bad[(b + si) % 3];
            double ref = -INFINITY;
            for (size_t i = 0; i < n; i++)
                ref = !isfinite(x[i]) ? NAN : x[i] > ref ? x[i] : ref;
            float got = k->max(x, n), s = sc->max(x, n);
            snprintf(shape, sizeof shape, "n=%zu fill=%d", n, how);
            int same_ref = isnan(ref) ? isnan(got) : got == ref;
            int same_sc = isnan(s) ? isnan(got) : got == s;
            note(r, same_ref ? 0 : INFINITY, 0, same_sc ? 0 : INFINITY, shape, 0, got, ref, s);
            check_guards(r, &bx, "x");
            buf_free(&bx);
        }
    }
}

static void check_sum(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("sum")->c;
    for (size_t si = 0; si <= N_SIZES; si++) {
        size_t n = si ? sizes[si - 1] : 0;
        for (int how = 0; how < N_FILLS; how++) {
            buf bx;
            float *x = buf_new(&bx, n);
            fill(x, n, how, -1, 1);
            double ref = 0, abs = 0;
            for (size_t i = 0; i < n; i++) {
                ref += x[i];
                abs += fabs(x[i]);
            }
            double bound = ((double)n + c) * U * abs;
            float got = k->sum(x, n), s = sc->sum(x, n);
            snprintf(shape, sizeof shape, "n=%zu fill=%d", n, how);
            note(r, bound_ratio(got, ref, bound), 1, bound_ratio(got, s, bound), shape, 0, got,
                 ref, s);
            buf_free(&bx);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* In-place vector updates: axpy, scale                                      */
/* ------------------------------------------------------------------------ */

static void check_axpy(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("axpy")->c;
    for (size_t si = 0; si <= N_SIZES; si++) {
        size_t n = si ? sizes[si - 1] : 0;
        for (int how = 0; how < N_FILLS; how++) {
            buf bx, by, bs;
            float *x = buf_new(&bx, n), *y = buf_out(&by, n), *ys = buf_out(&bs, n);
            fill(x, n, how, -2, 2);
            fill(y, n, how == FILL_EQUAL ? FILL_RANDOM : how, -2, 2);
            memcpy(ys, y, n * sizeof *y);
            float a = how == FILL_DENORMAL ? 0x1p-120f : rnd_range(-3, 3);
            double *ref = malloc((n + 1) * sizeof *ref), *bound = malloc((n + 1) * sizeof *bound);
            for (size_t i = 0; i < n; i++) {
                ref[i] = (double)y[i] + (double)a * x[i];
                bound[i] = c * U * (fabs(y[i]) + fabs((double)a * x[i])) + TINY;
            }
            k->axpy(y, a, x, n);
            sc->axpy(ys, a, x, n);
            snprintf(shape, sizeof shape, "n=%zu fill=%d y", n, how);
            for (size_t i = 0; i < n; i++)
                note(r, bound_ratio(y[i], ref[i], bound[i]), 1, bound_ratio(y[i], ys[i], bound[i]),
                     shape, i, y[i], ref[i], ys[i]);
            check_guards(r, &by, "y");
            free(ref);
            free(bound);
            buf_free(&bx);
            buf_free(&by);
            buf_free(&bs);
        }
    }
}

static void check_scale(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("scale")->c;
    for (size_t si = 0; si <= N_SIZES; si++) {
        size_t n = si ? sizes[si - 1] : 0;
        for (int how = 0; how < N_FILLS; how++) {
            buf bx, bs;
            float *x = buf_out(&bx, n), *xs = buf_out(&bs, n);
            fill(x, n, how, -2, 2);
            memcpy(xs, x, n * sizeof *x);
            float a = how == FILL_DENORMAL ? 0.75f : how == FILL_WIDE ? 0x1p-100f : rnd_range(-3, 3);
            double *ref = malloc((n + 1) * sizeof *ref);
            for (size_t i = 0; i < n; i++)
                ref[i] = (double)x[i] * a;
            k->scale(x, a, n);
            sc->scale(xs, a, n);
            snprintf(shape, sizeof shape, "n=%zu fill=%d x", n, how);
            for (size_t i = 0; i < n; i++)
                note(r, ulp_err(x[i], ref[i]), c, ulp_err(x[i], xs[i]), shape, i, x[i], ref[i],
                     xs[i]);
            check_guards(r, &bx, "x");
            free(ref);
            buf_free(&bx);
            buf_free(&bs);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Elementwise maps: exp_sub_sum, elu1, relu, gelu                           */
/* ------------------------------------------------------------------------ */

/* Expected behaviour at the edges of fp32 exp, checked like any other value
 * (c ulps of exp(fl(x - m)), ulp = 2^-149 below FLT_MIN): x = -inf gives
 * exactly 0; x - m below -88 gives a denormal, and 0 below about -103.3;
 * x - m in (88, 88.72) gives a large finite value; a sum past FLT_MAX is
 * +inf (see exp_sum_ratio). */
enum {
    EXP_SCORES,    /* softmax scores, m = their max */
    EXP_MASKED,    /* some -inf scores */
    EXP_EQUAL,     /* all-equal row, m = that value: y = 1, sum = n */
    EXP_UNDERFLOW, /* x - m in [-104, -88]: denormal or zero results */
    EXP_OVERFLOW,  /* x - m in [88, 88.7]: large finite results, the sum may overflow */
    EXP_DENORMAL,  /* denormal x, m = 0: y = 1 */
    N_EXP_CASES
};

static void exp_case(float *x, size_t n, int how, float *m)
{
    *m = 0;
    for (size_t i = 0; i < n; i++) {
        switch (how) {
        case EXP_SCORES:
        case EXP_MASKED: x[i] = rnd_range(-30, 30); break;
        case EXP_EQUAL: x[i] = 1.25f; break;
        case EXP_UNDERFLOW: x[i] = rnd_range(-104, -88); break;
        case EXP_OVERFLOW: x[i] = rnd_range(88, 88.7); break;
        default: x[i] = rnd_denormal(); break;
        }
    }
    if (how == EXP_MASKED)
        for (size_t i = 0; i < n; i++)
            if (rnd_below(3) == 0)
                x[i] = -INFINITY;
    if (how == EXP_SCORES || how == EXP_MASKED) {
        *m = -30;
        for (size_t i = 0; i < n; i++)
            *m = x[i] > *m ? x[i] : *m;
    }
    if (how == EXP_EQUAL)
        *m = 1.25f;
}

/* The sum of n exps of the reference: within the bound, and +inf exactly
 * when the true sum is clearly past FLT_MAX (either is right at the edge). */
static double exp_sum_ratio(float got, double ref, double bound)
{
    if (ref > FLT_MAX * (1 + 1e-3))
        return isinf(got) && got > 0 ? 0.0 : INFINITY;
    if (ref > FLT_MAX * (1 - 1e-3))
        return isinf(got) && got > 0 ? 0.0 : bound_ratio(got, ref, bound);
    return bound_ratio(got, ref, bound);
}

static void check_exp_sub_sum(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("exp_sub_sum")->c;
    for (size_t si = 0; si <= N_SIZES; si++) {
        size_t n = si ? sizes[si - 1] : 0;
        for (int how = 0; how < N_EXP_CASES; how++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                buf bx, by, bs;
                float *x = buf_new(&bx, n), *y = buf_out(&by, n), *ys = buf_out(&bs, n), m;
                exp_case(x, n, how, &m);
                double *ref = malloc((n + 1) * sizeof *ref), sum = 0;
                for (size_t i = 0; i < n; i++) {
                    float d = x[i] - m; /* the fp32 subtraction is part of the contract */
                    ref[i] = exp((double)d);
                    sum += ref[i];
                }
                float got, s = sc->exp_sub_sum(ys, x, m, n);
                if (inplace) {
                    memcpy(y, x, n * sizeof *x);
                    got = k->exp_sub_sum(y, y, m, n);
                } else {
                    got = k->exp_sub_sum(y, x, m, n);
                }
                snprintf(shape, sizeof shape, "n=%zu case=%d inplace=%d y", n, how, inplace);
                for (size_t i = 0; i < n; i++)
                    note(r, ulp_err(y[i], ref[i]), c, ulp_err(y[i], ys[i]), shape, i, y[i],
                         ref[i], ys[i]);
                double bound = ((double)n + 2 * c + 2) * U * sum + (double)n * TINY;
                snprintf(shape, sizeof shape, "n=%zu case=%d inplace=%d sum", n, how, inplace);
                double e = exp_sum_ratio(got, sum, bound);
                /* scale ulp-sized limits so the sum's bound ratio prints in the same table */
                note(r, e * c, c, exp_sum_ratio(got, s, bound) * c, shape, 0, got, sum, s);
                check_guards(r, &by, "y");
                check_guards(r, &bx, "x");
                free(ref);
                buf_free(&bx);
                buf_free(&by);
                buf_free(&bs);
            }
        }
        /* m = NaN (a softmax row with a non-finite score): every y and the
         * sum NaN, never a weight of 0 */
        buf bx, by;
        float *x = buf_new(&bx, n), *y = buf_out(&by, n);
        fill(x, n, FILL_RANDOM, -10, 10);
        float got = k->exp_sub_sum(y, x, NAN, n);
        snprintf(shape, sizeof shape, "n=%zu m=NaN", n);
        for (size_t i = 0; i < n; i++)
            note(r, isnan(y[i]) ? 0 : INFINITY, c, isnan(y[i]) ? 0 : INFINITY, shape, i, y[i],
                 NAN, NAN);
        if (n > 0)
            note(r, isnan(got) ? 0 : INFINITY, c, isnan(got) ? 0 : INFINITY, shape, n, got, NAN,
                 NAN);
        check_guards(r, &by, "y");
        buf_free(&bx);
        buf_free(&by);
    }
}

enum { MAP_RANDOM, MAP_WIDE, MAP_UNDER, MAP_OVER, MAP_DENORMAL, MAP_HUGE, N_MAP_CASES };

static void map_case(float *x, size_t n, int how)
{
    for (size_t i = 0; i < n; i++) {
        switch (how) {
        case MAP_RANDOM: x[i] = rnd_range(-6, 6); break;
        case MAP_WIDE: x[i] = rnd_range(-20, 20); break;
        case MAP_UNDER: x[i] = rnd_range(-104, -88); break;
        case MAP_OVER: x[i] = rnd_range(88, 88.7); break;
        case MAP_DENORMAL: x[i] = rnd_below(8) ? rnd_denormal() : (rnd_below(2) ? 0.0f : -0.0f); break;
        default: x[i] = rnd_wide(20, 100); break;
        }
    }
}

typedef void (*map_fn)(float *y, const float *x, size_t n);

static double ref_elu1(double x)
{
    return x > 0 ? x + 1 : exp(x);
}

static double ref_relu(double x)
{
    return x > 0 ? x : 0;
}

static double ref_gelu(double x)
{
    return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* which: 0 elu1 (ulps), 1 relu (exact), 2 gelu (bound) */
static void check_map(const linattn_kernels *k, const linattn_kernels *sc, report *r, int which)
{
    static const char *const names[] = {"elu1", "relu", "gelu"};
    const double c = tol_of(names[which])->c;
    map_fn f = which == 0 ? k->elu1 : which == 1 ? k->relu : k->gelu;
    map_fn fs = which == 0 ? sc->elu1 : which == 1 ? sc->relu : sc->gelu;
    double (*ref_f)(double) = which == 0 ? ref_elu1 : which == 1 ? ref_relu : ref_gelu;
    for (size_t si = 0; si <= N_SIZES; si++) {
        size_t n = si ? sizes[si - 1] : 0;
        for (int how = 0; how < N_MAP_CASES; how++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                buf bx, by, bs;
                float *x = buf_new(&bx, n), *y = buf_out(&by, n), *ys = buf_out(&bs, n);
                map_case(x, n, how);
                fs(ys, x, n);
                if (inplace) {
                    memcpy(y, x, n * sizeof *x);
                    f(y, y, n);
                } else {
                    f(y, x, n);
                }
                snprintf(shape, sizeof shape, "n=%zu case=%d inplace=%d y", n, how, inplace);
                for (size_t i = 0; i < n; i++) {
                    double ref = ref_f(x[i]);
                    if (which == 0) {
                        note(r, ulp_err(y[i], ref), c, ulp_err(y[i], ys[i]), shape, i, y[i], ref,
                             ys[i]);
                    } else if (which == 1) {
                        note(r, y[i] == ref ? 0 : INFINITY, 0, y[i] == ys[i] ? 0 : INFINITY, shape,
                             i, y[i], ref, ys[i]);
                    } else {
                        double bound = c * ulp_of(ref) + 4 * U * fabs(x[i]);
                        note(r, bound_ratio(y[i], ref, bound), 1, bound_ratio(y[i], ys[i], bound),
                             shape, i, y[i], ref, ys[i]);
                    }
                }
                check_guards(r, &by, "y");
                check_guards(r, &bx, "x");
                buf_free(&bx);
                buf_free(&by);
                buf_free(&bs);
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Norms                                                                     */
/* ------------------------------------------------------------------------ */

static void check_layernorm(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("layernorm")->c;
    const float eps = 1e-5f;
    for (size_t si = 0; si < N_SIZES; si++) {
        size_t n = sizes[si];
        for (int how = 0; how < N_FILLS; how++) {
            for (int variant = 0; variant < 3; variant++) { /* 0: b, 1: b NULL, 2: in place */
                buf bx, bw, bb, by, bs;
                float *x = buf_new(&bx, n), *w = buf_new(&bw, n), *b = buf_new(&bb, n);
                float *y = buf_out(&by, n), *ys = buf_out(&bs, n);
                fill(x, n, how, -3, 5);
                fill(w, n, FILL_RANDOM, -2, 2);
                fill(b, n, FILL_RANDOM, -1, 1);
                const float *bp = variant == 1 ? NULL : b;
                double mean = 0, var = 0, mabs = 0;
                for (size_t i = 0; i < n; i++) {
                    mean += x[i];
                    mabs += fabs(x[i]);
                }
                mean /= (double)n;
                mabs /= (double)n;
                for (size_t i = 0; i < n; i++)
                    var += (x[i] - mean) * (x[i] - mean);
                var /= (double)n;
                double inv = 1 / sqrt(var + eps);
                sc->layernorm(ys, x, w, bp, n, eps);
                if (variant == 2) {
                    memcpy(y, x, n * sizeof *x);
                    k->layernorm(y, y, w, bp, n, eps);
                } else {
                    k->layernorm(y, x, w, bp, n, eps);
                }
                /* the mean error shifts every x-mean by up to dm */
                double dm = (double)n * U * mabs;
                snprintf(shape, sizeof shape, "n=%zu fill=%d variant=%d y", n, how, variant);
                for (size_t i = 0; i < n; i++) {
                    double bi = bp ? bp[i] : 0;
                    double ref = (x[i] - mean) * inv * w[i] + bi;
                    double dev = fabs(x[i] - mean) * inv * fabs(w[i]);
                    double bound = U * (2 * (double)n * mabs * inv * fabs(w[i]) +
                                        ((double)n + c) * dev + 2 * fabs(ref) + 2 * fabs(bi)) +
                                   dev * 0.5 * dm * dm / (var + eps) +
                                   TINY * (1 + ((double)n + 2) * inv * fabs(w[i]));
                    note(r, bound_ratio(y[i], ref, bound), 1, bound_ratio(y[i], ys[i], bound),
                         shape, i, y[i], ref, ys[i]);
                }
                check_guards(r, &by, "y");
                check_guards(r, &bx, "x");
                buf_free(&bx);
                buf_free(&bw);
                buf_free(&bb);
                buf_free(&by);
                buf_free(&bs);
            }
        }
    }
}

static void check_rmsnorm(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("rmsnorm")->c;
    const float eps = 1e-5f;
    for (size_t si = 0; si < N_SIZES; si++) {
        size_t n = sizes[si];
        for (int how = 0; how < N_FILLS + 1; how++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                buf bx, bw, by, bs;
                float *x = buf_new(&bx, n), *w = buf_new(&bw, n);
                float *y = buf_out(&by, n), *ys = buf_out(&bs, n);
                if (how == N_FILLS) /* an all-zero row: inv = 1/sqrt(eps), y = 0 */
                    for (size_t i = 0; i < n; i++)
                        x[i] = 0;
                else
                    fill(x, n, how, -3, 3);
                fill(w, n, FILL_RANDOM, -2, 2);
                double ss = 0;
                for (size_t i = 0; i < n; i++)
                    ss += (double)x[i] * x[i];
                double inv = 1 / sqrt(ss / (double)n + eps);
                sc->rmsnorm(ys, x, w, n, eps);
                if (inplace) {
                    memcpy(y, x, n * sizeof *x);
                    k->rmsnorm(y, y, w, n, eps);
                } else {
                    k->rmsnorm(y, x, w, n, eps);
                }
                snprintf(shape, sizeof shape, "n=%zu fill=%d inplace=%d y", n, how, inplace);
                for (size_t i = 0; i < n; i++) {
                    double ref = x[i] * inv * w[i];
                    /* a denormal x * inv is off by up to tiny/2 before the weight scales it */
                    double bound = ((double)n / 2 + c) * U * fabs(ref) + TINY * (1 + fabs(w[i]));
                    note(r, bound_ratio(y[i], ref, bound), 1, bound_ratio(y[i], ys[i], bound),
                         shape, i, y[i], ref, ys[i]);
                }
                check_guards(r, &by, "y");
                check_guards(r, &bx, "x");
                buf_free(&bx);
                buf_free(&bw);
                buf_free(&by);
                buf_free(&bs);
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* linear_block_read                                                         */
/* ------------------------------------------------------------------------ */

static void check_linear_block_read(const linattn_kernels *k, const linattn_kernels *sc,
                                    report *r)
{
    const double cst = tol_of("linear_block_read")->c;
    const float eps = 1e-6f;
    for (size_t a = 0; a < N_SIZES; a++) {
        for (size_t b = 0; b < N_SIZES; b++) {
            size_t dk = sizes[a], dv = sizes[b];
            if (dk * dv > SHAPE_LIMIT)
                continue;
            /* rows: none, one, a partial and a full block; weights: none (1)
             * or decayed; the sums: empty (c = 0 allowed) or filled */
            static const int rows[] = {0, 1, 7, LINATTN_BLOCK_ROWS};
            for (size_t ri = 0; ri < 4; ri++)
                for (int decayed = 0; decayed < 2; decayed++) {
                    const int n = rows[ri];
                    buf bS, bz, bK, bV, bq, bw, bo, bos;
                    float *S = buf_new(&bS, dk * dv), *z = buf_new(&bz, dk);
                    float *K = buf_new(&bK, (size_t)n * dk + 1), *V = buf_new(&bV, (size_t)n * dv + 1);
                    float *phiq = buf_new(&bq, dk), *pw = buf_new(&bw, LINATTN_BLOCK_ROWS);
                    float *out = buf_out(&bo, dv), *outs = buf_out(&bos, dv);
                    const int empty = n > 0 && rnd_below(4) == 0; /* a fresh block */
                    for (size_t i = 0; i < dk; i++) {
                        phiq[i] = rnd_range(0.01, 3); /* elu(x)+1 > 0 */
                        z[i] = empty ? 0.0f : rnd_range(0, 50);
                    }
                    for (size_t i = 0; i < dk * dv; i++)
                        S[i] = empty ? 0.0f : rnd_range(-10, 10);
                    for (size_t i = 0; i < (size_t)n * dk; i++)
                        K[i] = rnd_range(0.01, 3);
                    for (size_t i = 0; i < (size_t)n * dv; i++)
                        V[i] = rnd_range(-1, 1);
                    for (int j = 0; j < LINATTN_BLOCK_ROWS; j++)
                        pw[j] = decayed ? rnd_range(0.05, 1) : 1.0f;
                    const float c = decayed ? rnd_range(0.05, 1) : 1.0f;

                    double den = eps, den_abs = 0, w[LINATTN_BLOCK_ROWS];
                    for (size_t i = 0; i < dk; i++) {
                        den += (double)c * phiq[i] * z[i];
                        den_abs += (double)c * fabs(phiq[i] * z[i]);
                    }
                    for (int j = 0; j < n; j++) {
                        double d = 0;
                        for (size_t i = 0; i < dk; i++)
                            d += (double)phiq[i] * K[(size_t)j * dk + i];
                        w[j] = pw[j] * d;
                        den += w[j];
                        den_abs += fabs(w[j]);
                    }
                    k->linear_block_read(out, phiq, S, z, K, V, pw, n, c, dk, dv, eps);
                    sc->linear_block_read(outs, phiq, S, z, K, V, pw, n, c, dk, dv, eps);
                    snprintf(shape, sizeof shape, "dk=%zu dv=%zu n=%d decayed=%d out", dk, dv, n,
                             decayed);
                    for (size_t col = 0; col < dv; col++) {
                        double num = 0, num_abs = 0;
                        for (size_t i = 0; i < dk; i++) {
                            num += (double)c * phiq[i] * S[i * dv + col];
                            num_abs += (double)c * fabs((double)phiq[i] * S[i * dv + col]);
                        }
                        for (int j = 0; j < n; j++) {
                            num += w[j] * V[(size_t)j * dv + col];
                            num_abs += fabs(w[j] * V[(size_t)j * dv + col]);
                        }
                        double ref = num / den;
                        double bound = ((double)dk + n + cst) * U *
                                           (num_abs + fabs(ref) * den_abs) / fabs(den) + TINY;
                        note(r, bound_ratio(out[col], ref, bound), 1,
                             bound_ratio(out[col], outs[col], bound), shape, col, out[col], ref,
                             outs[col]);
                    }
                    check_guards(r, &bo, "out");
                    buf *all[] = {&bS, &bz, &bK, &bV, &bq, &bw, &bo, &bos};
                    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
                        buf_free(all[i]);
                }
        }
    }
}

/* Rows m from n0 waiting rows on, against this ISA's linear_block_read row
 * by row: every bit (NaN and inf from a row with den 0 or tiny too). */
static void check_linear_block_rows(const linattn_kernels *k, const linattn_kernels *sc,
                                    report *r)
{
    (void)sc;
    const float eps = 1e-6f;
    for (size_t a = 0; a < N_SIZES; a++) {
        for (size_t b = 0; b < N_SIZES; b++) {
            size_t dk = sizes[a], dv = sizes[b];
            if (dk * dv > SHAPE_LIMIT)
                continue;
            static const int n0s[] = {0, 0, 1, 5, 13, 15};
            for (size_t t = 0; t < sizeof n0s / sizeof n0s[0]; t++) {
                const int n0 = n0s[t], most = LINATTN_BLOCK_ROWS - n0;
                const int m = t == 0 ? most : 1 + (int)rnd_below((unsigned)most);
                const int decayed = rnd_below(2), empty = rnd_below(4) == 0;
                const size_t ldo = dv + rnd_below(3), rows = (size_t)(n0 + m);
                buf bS, bz, bK, bV, bq, bw, bc, bo, bos;
                float *S = buf_new(&bS, dk * dv), *z = buf_new(&bz, dk);
                float *K = buf_new(&bK, rows * dk), *V = buf_new(&bV, rows * dv);
                float *phiq = buf_new(&bq, (size_t)m * dk), *pw = buf_new(&bw, LINATTN_BLOCK_ROWS);
                float *c = buf_new(&bc, (size_t)m);
                float *out = buf_out(&bo, (size_t)m * ldo), *want = buf_out(&bos, (size_t)m * ldo);
                for (size_t i = 0; i < dk; i++)
                    z[i] = empty ? 0.0f : rnd_range(0, 50);
                for (size_t i = 0; i < dk * dv; i++)
                    S[i] = empty ? 0.0f : rnd_range(-10, 10);
                for (size_t i = 0; i < (size_t)m * dk; i++)
                    phiq[i] = rnd_range(0.01, 3);
                for (size_t i = 0; i < rows * dk; i++)
                    K[i] = rnd_range(0.01, 3);
                for (size_t i = 0; i < rows * dv; i++)
                    V[i] = rnd_range(-1, 1);
                for (int j = 0; j < LINATTN_BLOCK_ROWS; j++)
                    pw[j] = decayed ? rnd_range(0.05, 1) : 1.0f;
                for (int j = 0; j < m; j++)
                    c[j] = decayed ? rnd_range(0.05, 1) : 1.0f;
                if (t == 1 && empty) /* a row that sees nothing: den = eps alone, or 0 */
                    phiq[0] = 0.0f;
                k->linear_block_rows(out, ldo, phiq, S, z, K, V, pw, c, n0, m, dk, dv,
                                     t == 1 ? 0.0f : eps);
                for (int row = 0; row < m; row++)
                    k->linear_block_read(want + (size_t)row * ldo, phiq + (size_t)row * dk, S, z, K,
                                         V, pw + (m - 1 - row), n0 + row + 1, c[row], dk, dv,
                                         t == 1 ? 0.0f : eps);
                snprintf(shape, sizeof shape, "dk=%zu dv=%zu n0=%d m=%d ldo=%zu decayed=%d", dk,
                         dv, n0, m, ldo, decayed);
                for (int row = 0; row < m; row++)
                    if (memcmp(out + (size_t)row * ldo, want + (size_t)row * ldo,
                               dv * sizeof(float)) != 0) {
                        fail(r, "%s: row %d differs from linear_block_read's", shape, row);
                        break;
                    }
                check_guards(r, &bo, "out");
                buf *all[] = {&bS, &bz, &bK, &bV, &bq, &bw, &bc, &bo, &bos};
                for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
                    buf_free(all[i]);
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* gemv, gemm_nt, gemm_nn                                                    */
/* ------------------------------------------------------------------------ */

/* A rows x cols matrix with leading dimension ld > cols: the gaps between
 * rows hold the buffer's guard, so a kernel that reads them (input) or
 * writes them (output) is caught. */
static float *matrix_new(buf *b, size_t rows, size_t cols, size_t ld, int wide, int out)
{
    float *m = buf_make(b, rows ? (rows - 1) * ld + cols : 0, out ? GUARD_OUT : GUARD_IN);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            m[i * ld + j] = wide ? rnd_range(-1, 1) * (float)ldexp(1, (int)rnd_below(17) - 8)
                                 : rnd_range(-1, 1);
    return m;
}

/* 1 if the gaps between rows (columns cols..ld-1) still hold the guard. */
static int gaps_ok(const buf *b, size_t rows, size_t cols, size_t ld)
{
    for (size_t i = 0; i + 1 < rows; i++)
        for (size_t j = cols; j < ld; j++) {
            uint32_t bits;
            memcpy(&bits, b->p + i * ld + j, sizeof bits);
            if (bits != b->guard)
                return 0;
        }
    return 1;
}

static void check_gemv(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("gemv")->c;
    for (size_t a = 0; a < N_SIZES; a++) {
        for (size_t b = 0; b < N_SIZES; b++) {
            size_t rows = sizes[a], cols = sizes[b];
            if (rows * cols > SHAPE_LIMIT)
                continue;
            for (int bias = 0; bias < 2; bias++) {
                size_t ldw = cols + 1 + rnd_below(4);
                buf bW, bx, bb, by, bs;
                float *W = matrix_new(&bW, rows, cols, ldw, bias, 0);
                float *x = buf_new(&bx, cols), *bv = buf_new(&bb, rows);
                float *y = buf_out(&by, rows), *ys = buf_out(&bs, rows);
                fill(x, cols, FILL_RANDOM, -1, 1);
                fill(bv, rows, FILL_RANDOM, -1, 1);
                const float *bp = bias ? bv : NULL;
                k->gemv(y, W, ldw, x, bp, rows, cols);
                sc->gemv(ys, W, ldw, x, bp, rows, cols);
                snprintf(shape, sizeof shape, "rows=%zu cols=%zu ldw=%zu bias=%d y", rows, cols,
                         ldw, bias);
                for (size_t i = 0; i < rows; i++) {
                    double ref = bp ? bp[i] : 0, abs = bp ? fabs(bp[i]) : 0;
                    for (size_t j = 0; j < cols; j++) {
                        ref += (double)W[i * ldw + j] * x[j];
                        abs += fabs((double)W[i * ldw + j] * x[j]);
                    }
                    double bound = ((double)cols + c) * U * abs + (double)cols * TINY;
                    note(r, bound_ratio(y[i], ref, bound), 1, bound_ratio(y[i], ys[i], bound),
                         shape, i, y[i], ref, ys[i]);
                }
                check_guards(r, &by, "y");
                buf_free(&bW);
                buf_free(&bx);
                buf_free(&bb);
                buf_free(&by);
                buf_free(&bs);
            }
        }
    }
}

typedef void (*gemm_fn)(float *C, size_t ldc, const float *A, size_t lda, const float *B,
                        size_t ldb, size_t M, size_t N, size_t K);

/* The gemms: C += A B (NN), A B^T (NT) or A^T B (TN, A stored K x M). */
enum { GEMM_NN, GEMM_NT, GEMM_TN };

static void gemm_case(report *r, gemm_fn f, gemm_fn fs, int form, double c, size_t M, size_t N,
                      size_t K)
{
    const int nt = form == GEMM_NT, tn = form == GEMM_TN;
    int wide = rnd_below(3) == 0;
    size_t lda = (tn ? M : K) + 1 + rnd_below(4), ldc = N + 1 + rnd_below(4);
    size_t ldb = (nt ? K : N) + 1 + rnd_below(4);
    buf bA, bB, bC, bS;
    float *A = tn ? matrix_new(&bA, K, M, lda, wide, 0) : matrix_new(&bA, M, K, lda, wide, 0);
    float *B = nt ? matrix_new(&bB, N, K, ldb, wide, 0) : matrix_new(&bB, K, N, ldb, wide, 0);
    float *C = matrix_new(&bC, M, N, ldc, 0, 1), *Cs = buf_out(&bS, bC.n);
    memcpy(Cs, C, bC.n * sizeof *C);
    double *C0 = calloc(M * N + 1, sizeof *C0);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C0[i * N + j] = C[i * ldc + j];
    f(C, ldc, A, lda, B, ldb, M, N, K);
    fs(Cs, ldc, A, lda, B, ldb, M, N, K);
    snprintf(shape, sizeof shape, "M=%zu N=%zu K=%zu lda=%zu ldb=%zu ldc=%zu C", M, N, K, lda, ldb,
             ldc);
    for (size_t i = 0; i < M; i++) {
        for (size_t j = 0; j < N; j++) {
            double ref = C0[i * N + j], abs = fabs(ref);
            for (size_t p = 0; p < K; p++) {
                double t = (double)(tn ? A[p * lda + i] : A[i * lda + p]) *
                           (nt ? B[j * ldb + p] : B[p * ldb + j]);
                ref += t;
                abs += fabs(t);
            }
            double bound = ((double)K + c) * U * abs + (double)K * TINY;
            size_t at = i * ldc + j;
            note(r, bound_ratio(C[at], ref, bound), 1, bound_ratio(C[at], Cs[at], bound), shape,
                 i * N + j, C[at], ref, Cs[at]);
        }
    }
    check_guards(r, &bC, "C");
    if (!gaps_ok(&bC, M, N, ldc))
        fail(r, "%s: wrote into the gap between rows (columns N..ldc-1)", shape);
    free(C0);
    buf_free(&bA);
    buf_free(&bB);
    buf_free(&bC);
    buf_free(&bS);
}

/* gemm_nn's (and gemm_tn's) contract (kernels.h): each C element's K-term sum is formed
 * apart and added once, which a linear state relies on to fold a block
 * of keys into a large S. With C = 2^24 and K products of 0.5, adding
 * them one at a time rounds every one away (2^24 + 0.5 ties to 2^24);
 * added as one sum they give 2^24 + K/2 exactly. Every path: one row, few
 * rows (panels read in place), many (packed), column tails. */
static void check_sums_apart(gemm_fn f, int tn, report *r)
{
    static const size_t Ms[] = {1, 3, 7, 11, 40, 64, 71}, Ns[] = {5, 16, 37, 64}, Ks[] = {2, 16, 64};
    for (size_t a = 0; a < sizeof Ms / sizeof Ms[0]; a++)
        for (size_t b = 0; b < sizeof Ns / sizeof Ns[0]; b++)
            for (size_t c = 0; c < sizeof Ks / sizeof Ks[0]; c++) {
                size_t M = Ms[a], N = Ns[b], K = Ks[c];
                float *C = malloc(M * N * sizeof *C), *A = malloc(M * K * sizeof *A);
                float *B = malloc(K * N * sizeof *B);
                for (size_t i = 0; i < M * N; i++)
                    C[i] = 0x1p24f;
                for (size_t i = 0; i < M * K; i++)
                    A[i] = 1.0f;
                for (size_t i = 0; i < K * N; i++)
                    B[i] = 0.5f;
                f(C, N, A, tn ? M : K, B, N, M, N, K); /* A all ones, either layout */
                snprintf(shape, sizeof shape, "sums apart M=%zu N=%zu K=%zu", M, N, K);
                for (size_t i = 0; i < M * N; i++)
                    if (C[i] != 0x1p24f + 0.5f * (float)K) {
                        fail(r, "%s: C[%zu] = %.9g, want 2^24 + %g: the products were added to "
                                "C one at a time", shape, i, (double)C[i], 0.5 * (double)K);
                        break;
                    }
                free(C);
                free(A);
                free(B);
            }
}

static void check_gemm(const linattn_kernels *k, const linattn_kernels *sc, report *r, int form)
{
    static const char *const names[] = {"gemm_nn", "gemm_nt", "gemm_tn"};
    const double c = tol_of(names[form])->c;
    gemm_fn f = form == GEMM_NT ? k->gemm_nt : form == GEMM_TN ? k->gemm_tn : k->gemm_nn;
    gemm_fn fs = form == GEMM_NT ? sc->gemm_nt : form == GEMM_TN ? sc->gemm_tn : sc->gemm_nn;
    for (size_t a = 0; a < N_SIZES; a++)
        for (size_t b = 0; b < N_SIZES; b++)
            for (size_t d = 0; d < N_SIZES; d++)
                if (sizes[a] * sizes[b] * sizes[d] <= SHAPE_LIMIT)
                    gemm_case(r, f, fs, form, c, sizes[a], sizes[b], sizes[d]);
    /* k blocking (K past a cache block) with full and edge tiles; A too big
     * to stay in L2 whole (M K > 128 Ki floats, another loop order); rows
     * left after whole micro-tiles (6 rows in AVX2, 10 in NEON, 12 in
     * AVX-512) with large K (68..71 leave 8..11 of 12); empty */
    static const size_t extra[][3] = {{65, 65, 1000}, {7, 33, 1000}, {4, 17, 1000}, {64, 64, 64},
                                      {150, 33, 1000}, {133, 40, 1001}, {68, 40, 70},
                                      {69, 33, 300}, {70, 64, 17}, {71, 31, 260}, {10, 65, 40},
                                      {11, 48, 33}, {1, 1, 0}, {0, 5, 5}, {5, 0, 5}};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        gemm_case(r, f, fs, form, c, extra[i][0], extra[i][1], extra[i][2]);
    /* every remainder of rows after whole micro-tiles of up to 12 rows, past
     * gemm_nt's dot-tile limit too, with edge panels of several widths */
    for (size_t m = 64; m < 76; m++)
        gemm_case(r, f, fs, form, c, m, 24 + m % 9, 37);
}

/* ------------------------------------------------------------------------ */
/* gemv and gemm_nt with half or bfloat16 weights                            */
/* ------------------------------------------------------------------------ */

/* y[rows] (ys: scalar's) against b + W x in double, W's values Wv[rows x
 * cols], within (cols + c) u (sum|W x| + |b|) + cols tiny. */
static void note_gemv(report *r, const float *y, const float *ys, const double *Wv,
                      const float *x, const float *b, size_t rows, size_t cols, double c)
{
    for (size_t i = 0; i < rows; i++) {
        double ref = b ? b[i] : 0, abs = b ? fabs(b[i]) : 0;
        for (size_t j = 0; j < cols; j++) {
            ref += Wv[i * cols + j] * x[j];
            abs += fabs(Wv[i * cols + j] * x[j]);
        }
        double bound = ((double)cols + c) * U * abs + (double)cols * TINY;
        note(r, bound_ratio(y[i], ref, bound), 1, bound_ratio(y[i], ys[i], bound), shape, i, y[i],
             ref, ys[i]);
    }
}

/* C (stride ldc; Cs: scalar's) against C0 + A B in double, B's values Bv
 * as [N x K] (bt) or [K x N], within (K + c) u (|C0| + sum|A B|) + K tiny. */
static void note_gemm(report *r, const float *C, const float *Cs, size_t ldc, const double *C0,
                      const float *A, size_t lda, const double *Bv, int bt, size_t M, size_t N,
                      size_t K, double c)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double ref = C0[i * N + j], abs = fabs(ref);
            for (size_t p = 0; p < K; p++) {
                double t = (double)A[i * lda + p] * (bt ? Bv[j * K + p] : Bv[p * N + j]);
                ref += t;
                abs += fabs(t);
            }
            double bound = ((double)K + c) * U * abs + (double)K * TINY;
            size_t at = i * ldc + j;
            note(r, bound_ratio(C[at], ref, bound), 1, bound_ratio(C[at], Cs[at], bound), shape,
                 i * N + j, C[at], ref, Cs[at]);
        }
}

/* A rows x cols matrix of halfs (bfloat16s if bf), leading dimension ld,
 * at a random half (2-byte) offset in a guarded buffer. Every half of the
 * buffer that is no element (the gaps between rows, the slack at either
 * end) is a NaN, so a kernel that reads one gives NaN. Values: uniform in
 * [-1, 1) (times 2^-8..2^8 if wide), one in 16 a subnormal half (tiny for
 * bfloat16); vals[i cols + j] gets each element as converted by the scalar
 * reference (linattn_f16_to_f32 / linattn_bf16_to_f32, exact). */
static uint16_t *half_matrix_new(buf *b, size_t rows, size_t cols, size_t ld, int bf, int wide,
                                 double *vals)
{
    size_t n = rows ? (rows - 1) * ld + cols : 0, off = rnd_below(2);
    size_t nf = (n + off + 1) / 2;
    float *f = buf_make(b, nf, GUARD_IN);
    uint16_t *all = (uint16_t *)(void *)f, *h = all + off;
    for (size_t i = 0; i < 2 * nf; i++)
        all[i] = bf ? 0x7fc1 : 0x7e01;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            float v = rnd_range(-1, 1);
            if (wide)
                v *= (float)ldexp(1, (int)rnd_below(17) - 8);
            if (rnd_below(16) == 0) /* below 2^-14 (half) or 2^-126 (bfloat16) */
                v = (float)ldexp(v, bf ? -128 : -16);
            uint16_t q = bf ? linattn_f32_to_bf16(v) : linattn_f32_to_f16(v);
            h[i * ld + j] = q;
            vals[i * cols + j] = bf ? linattn_bf16_to_f32(q) : linattn_f16_to_f32(q);
        }
    return h;
}

typedef void (*gemv_half_fn)(float *y, const uint16_t *W, size_t ldw, const float *x,
                             const float *b, size_t rows, size_t cols);

/* Every one of the 65536 halfs (bfloat16s) converts exactly: row r of W
 * holds r in column 0 (zeros elsewhere), x = e_0, so y[r] is W[r, 0]
 * itself, compared with the reference conversion (NaN for NaN, any NaN;
 * -0 may come out +0 from the sum). cols 1 takes the masked tail path;
 * cols 2 VL + 1 the whole vectors too. */
static void check_half_values(gemv_half_fn f, report *r, int bf)
{
    const size_t rows = 65536;
    static const size_t colss[2] = {1, 33};
    for (int ci = 0; ci < 2; ci++) {
        size_t cols = colss[ci];
        uint16_t *W = calloc(rows * cols, sizeof *W);
        float *x = calloc(cols, sizeof *x), *y = malloc(rows * sizeof *y);
        x[0] = 1.0f;
        for (size_t i = 0; i < rows; i++)
            W[i * cols] = (uint16_t)i;
        f(y, W, cols, x, NULL, rows, cols);
        for (size_t i = 0; i < rows; i++) {
            float want = bf ? linattn_bf16_to_f32((uint16_t)i) : linattn_f16_to_f32((uint16_t)i);
            if (isnan(want) ? !isnan(y[i]) : y[i] != want) {
                fail(r, "%s value 0x%04zx (cols %zu): got %.9g, want %.9g", bf ? "bf16" : "f16",
                     i, cols, (double)y[i], (double)want);
                break;
            }
        }
        free(W);
        free(x);
        free(y);
    }
}

static void check_gemv_half(const linattn_kernels *k, const linattn_kernels *sc, report *r, int bf)
{
    const double c = tol_of(bf ? "gemv_bf16" : "gemv_f16")->c;
    gemv_half_fn f = bf ? k->gemv_bf16 : k->gemv_f16, fs = bf ? sc->gemv_bf16 : sc->gemv_f16;
    check_half_values(f, r, bf);
    for (size_t a = 0; a < N_SIZES; a++) {
        for (size_t bi = 0; bi < N_SIZES; bi++) {
            size_t rows = sizes[a], cols = sizes[bi];
            if (rows * cols > SHAPE_LIMIT)
                continue;
            for (int bias = 0; bias < 2; bias++) {
                size_t ldw = cols + 1 + rnd_below(4);
                buf bW, bx, bb, by, bs;
                double *Wv = malloc((rows * cols + 1) * sizeof *Wv);
                const uint16_t *W = half_matrix_new(&bW, rows, cols, ldw, bf, bias, Wv);
                float *x = buf_new(&bx, cols), *bv = buf_new(&bb, rows);
                float *y = buf_out(&by, rows), *ys = buf_out(&bs, rows);
                fill(x, cols, FILL_RANDOM, -1, 1);
                fill(bv, rows, FILL_RANDOM, -1, 1);
                const float *bp = bias ? bv : NULL;
                f(y, W, ldw, x, bp, rows, cols);
                fs(ys, W, ldw, x, bp, rows, cols);
                snprintf(shape, sizeof shape, "%s rows=%zu cols=%zu ldw=%zu bias=%d y",
                         bf ? "bf16" : "f16", rows, cols, ldw, bias);
                note_gemv(r, y, ys, Wv, x, bp, rows, cols, c);
                check_guards(r, &by, "y");
                free(Wv);
                buf_free(&bW);
                buf_free(&bx);
                buf_free(&bb);
                buf_free(&by);
                buf_free(&bs);
            }
        }
    }
}

typedef void (*gemm_half_fn)(float *C, size_t ldc, const float *A, size_t lda, const uint16_t *B,
                             size_t ldb, size_t M, size_t N, size_t K);

/* Against the double reference and scalar within the bound, and bit for
 * bit against this ISA's fp32 gemm_nt (gf) on B's values in floats: the
 * halfs convert exactly, in registers or into a strip or a panel. */
static void gemm_half_case(report *r, gemm_half_fn f, gemm_half_fn fs, gemm_fn gf, int bf, double c,
                           size_t M, size_t N, size_t K)
{
    int wide = rnd_below(3) == 0;
    size_t lda = K + 1 + rnd_below(4), ldc = N + 1 + rnd_below(4), ldb = K + 1 + rnd_below(4);
    buf bA, bB, bC, bS;
    double *Bv = malloc((N * K + 1) * sizeof *Bv);
    float *A = matrix_new(&bA, M, K, lda, wide, 0);
    const uint16_t *B = half_matrix_new(&bB, N, K, ldb, bf, wide, Bv);
    float *C = matrix_new(&bC, M, N, ldc, 0, 1), *Cs = buf_out(&bS, bC.n);
    memcpy(Cs, C, bC.n * sizeof *C);
    double *C0 = calloc(M * N + 1, sizeof *C0);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C0[i * N + j] = C[i * ldc + j];
    float *Cf = malloc((bC.n + 1) * sizeof *Cf), *Bf = malloc((N * ldb + 1) * sizeof *Bf);
    memcpy(Cf, C, bC.n * sizeof *C);
    for (size_t j = 0; j < N; j++)
        for (size_t p = 0; p < K; p++)
            Bf[j * ldb + p] = (float)Bv[j * K + p];
    f(C, ldc, A, lda, B, ldb, M, N, K);
    fs(Cs, ldc, A, lda, B, ldb, M, N, K);
    gf(Cf, ldc, A, lda, Bf, ldb, M, N, K);
    snprintf(shape, sizeof shape, "%s M=%zu N=%zu K=%zu lda=%zu ldb=%zu ldc=%zu C",
             bf ? "bf16" : "f16", M, N, K, lda, ldb, ldc);
    note_gemm(r, C, Cs, ldc, C0, A, lda, Bv, 1, M, N, K, c);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            if (memcmp(&C[i * ldc + j], &Cf[i * ldc + j], sizeof *C) != 0) {
                fail(r, "%s[%zu][%zu] = %a, not gemm_nt's %a on the same values in floats",
                     shape, i, j, (double)C[i * ldc + j], (double)Cf[i * ldc + j]);
                i = M;
                break;
            }
    free(Cf);
    free(Bf);
    check_guards(r, &bC, "C");
    if (!gaps_ok(&bC, M, N, ldc))
        fail(r, "%s: wrote into the gap between rows (columns N..ldc-1)", shape);
    free(C0);
    free(Bv);
    buf_free(&bA);
    buf_free(&bB);
    buf_free(&bC);
    buf_free(&bS);
}

/* gemm_nt's shapes (the dot tiles below 64 rows, the packed panels from
 * 64, k blocks, both loop orders, every row remainder). */
static void check_gemm_nt_half(const linattn_kernels *k, const linattn_kernels *sc, report *r,
                               int bf)
{
    const double c = tol_of(bf ? "gemm_nt_bf16" : "gemm_nt_f16")->c;
    gemm_half_fn f = bf ? k->gemm_nt_bf16 : k->gemm_nt_f16;
    gemm_half_fn fs = bf ? sc->gemm_nt_bf16 : sc->gemm_nt_f16;
    for (size_t a = 0; a < N_SIZES; a++)
        for (size_t b = 0; b < N_SIZES; b++)
            for (size_t d = 0; d < N_SIZES; d++)
                if (sizes[a] * sizes[b] * sizes[d] <= SHAPE_LIMIT)
                    gemm_half_case(r, f, fs, k->gemm_nt, bf, c, sizes[a], sizes[b], sizes[d]);
    /* ... and the dot tiles' half strips: from 4 and 12 rows, K at and past
     * the strip's 2048 */
    static const size_t extra[][3] = {{65, 65, 1000}, {7, 33, 1000}, {64, 64, 64},
                                      {150, 33, 1000}, {133, 40, 1001}, {68, 40, 70},
                                      {71, 31, 260},  {1, 1, 0},       {0, 5, 5},
                                      {5, 0, 5},      {4, 9, 2048},    {12, 9, 2049},
                                      {11, 7, 300},   {12, 7, 300},    {33, 6, 517}};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        gemm_half_case(r, f, fs, k->gemm_nt, bf, c, extra[i][0], extra[i][1], extra[i][2]);
    for (size_t m = 64; m < 76; m++)
        gemm_half_case(r, f, fs, k->gemm_nt, bf, c, m, 24 + m % 9, 37);
}

/* gemm_nn with a half B [K x N] (stride ldb): against the double
 * reference and scalar within gemm_nn's bound, and bit for bit against
 * this ISA's gemm_nn on the same values in fp32. */
static void gemm_nn_f16_case(const linattn_kernels *k, const linattn_kernels *sc, report *r,
                             double c, size_t M, size_t N, size_t K)
{
    int wide = rnd_below(3) == 0;
    size_t lda = K + 1 + rnd_below(4), ldc = N + 1 + rnd_below(4), ldb = N + 1 + rnd_below(4);
    buf bA, bB, bC, bS, bF;
    double *Bv = malloc((N * K + 1) * sizeof *Bv);
    float *A = matrix_new(&bA, M, K, lda, wide, 0);
    const uint16_t *B = half_matrix_new(&bB, K, N, ldb, 0, wide, Bv);
    float *C = matrix_new(&bC, M, N, ldc, 0, 1), *Cs = buf_out(&bS, bC.n);
    float *Cf = buf_out(&bF, bC.n);
    float *Bf = malloc((K * ldb + 1) * sizeof *Bf);
    for (size_t p = 0; p < K; p++)
        for (size_t j = 0; j < N; j++)
            Bf[p * ldb + j] = (float)Bv[p * N + j];
    memcpy(Cs, C, bC.n * sizeof *C);
    memcpy(Cf, C, bC.n * sizeof *C);
    double *C0 = calloc(M * N + 1, sizeof *C0);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C0[i * N + j] = C[i * ldc + j];
    k->gemm_nn_f16(C, ldc, A, lda, B, ldb, M, N, K);
    sc->gemm_nn_f16(Cs, ldc, A, lda, B, ldb, M, N, K);
    k->gemm_nn(Cf, ldc, A, lda, Bf, ldb, M, N, K);
    snprintf(shape, sizeof shape, "f16 M=%zu N=%zu K=%zu lda=%zu ldb=%zu ldc=%zu C", M, N, K, lda,
             ldb, ldc);
    note_gemm(r, C, Cs, ldc, C0, A, lda, Bv, 0, M, N, K, c);
    for (size_t i = 0; i < M * N; i++) {
        size_t at = i / N * ldc + i % N;
        if (memcmp(&C[at], &Cf[at], sizeof(float)) != 0) {
            fail(r, "%s[%zu]: %.9g, gemm_nn on the same values in fp32 gives %.9g (not bit for "
                    "bit)", shape, i, (double)C[at], (double)Cf[at]);
            break;
        }
    }
    check_guards(r, &bC, "C");
    if (!gaps_ok(&bC, M, N, ldc))
        fail(r, "%s: wrote into the gap between rows (columns N..ldc-1)", shape);
    free(C0);
    free(Bv);
    free(Bf);
    buf_free(&bA);
    buf_free(&bB);
    buf_free(&bC);
    buf_free(&bS);
    buf_free(&bF);
}

/* gemm_nn's shapes: one row (decode), few rows, packed panels, k blocks,
 * every row remainder. */
static void check_gemm_nn_f16(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("gemm_nn_f16")->c;
    for (size_t a = 0; a < N_SIZES; a++)
        for (size_t b = 0; b < N_SIZES; b++)
            for (size_t d = 0; d < N_SIZES; d++)
                if (sizes[a] * sizes[b] * sizes[d] <= SHAPE_LIMIT)
                    gemm_nn_f16_case(k, sc, r, c, sizes[a], sizes[b], sizes[d]);
    static const size_t extra[][3] = {{65, 65, 1000}, {7, 33, 1000}, {64, 64, 64}, {1, 64, 128},
                                      {1, 200, 300},  {150, 33, 1000}, {68, 40, 70},
                                      {71, 31, 260},  {1, 1, 0}, {0, 5, 5}, {5, 0, 5}};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        gemm_nn_f16_case(k, sc, r, c, extra[i][0], extra[i][1], extra[i][2]);
    for (size_t m = 64; m < 76; m++)
        gemm_nn_f16_case(k, sc, r, c, m, 24 + m % 9, 37);
}

/* to_f16 against the reference conversion (simd/f16.c), exactly: every
 * half's value, the midpoints between neighbouring halfs (ties to even)
 * and one fp32 ulp either side of them, over the whole range (subnormal
 * halfs, the overflow threshold 65520, infinities, NaN), in arrays of every
 * length up to 40 at every offset, so each tail and lane is used, with
 * guards around the output. */
static void check_to_f16(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    (void)sc;
    const size_t n = 65536 * 4;
    float *x = malloc(n * sizeof *x);
    for (size_t h = 0; h < 65536; h++) {
        float v = linattn_f16_to_f32((uint16_t)h);
        float next = linattn_f16_to_f32((uint16_t)((h & 0x7fffu) == 0x7bffu ? h : h + 1));
        float mid = (float)(((double)v + (double)next) / 2); /* exact: halfs have 11 bits */
        if ((h & 0x7fffu) == 0x7bffu) /* past the largest half: the overflow threshold */
            mid = h & 0x8000u ? -65520.0f : 65520.0f;
        x[4 * h] = v;
        x[4 * h + 1] = mid;
        x[4 * h + 2] = isfinite(mid) ? nextafterf(mid, 0.0f) : mid;
        x[4 * h + 3] = isfinite(mid) ? nextafterf(mid, mid > 0 ? INFINITY : -INFINITY) : mid;
    }
    uint16_t *y = malloc(n * sizeof *y);
    k->to_f16(y, x, n);
    snprintf(shape, sizeof shape, "n=%zu", n);
    for (size_t i = 0; i < n; i++) {
        uint16_t want = linattn_f32_to_f16(x[i]);
        int nan_ok = isnan(x[i]) && (y[i] & 0x7c00u) == 0x7c00u && (y[i] & 0x3ffu) != 0;
        if (y[i] != want && !nan_ok) {
            fail(r, "x = %a: got 0x%04x, want 0x%04x", (double)x[i], y[i], want);
            break;
        }
    }
    for (size_t len = 0; len <= 40; len++) {
        for (size_t off = 0; off < 3; off++) {
            uint16_t out[48];
            for (size_t i = 0; i < 48; i++)
                out[i] = 0xabcd;
            k->to_f16(out + off, x + 4 * 1000 + 7 * len, len);
            for (size_t i = 0; i < 48; i++) {
                int inside = i >= off && i < off + len;
                uint16_t want = inside ? linattn_f32_to_f16(x[4 * 1000 + 7 * len + i - off]) : 0xabcd;
                if (out[i] != want) {
                    fail(r, "len %zu offset %zu: out[%zu] = 0x%04x, want 0x%04x%s", len, off, i,
                         out[i], want, inside ? "" : " (written outside the output)");
                    break;
                }
            }
        }
    }
    free(x);
    free(y);
}

/* An int8 matrix rows x cols (ld a multiple of 32) and its scales [rows,
 * ld/32] in guarded buffers; values: every int8 (-128..127, the extremes
 * often), scales 2^-12..2^-2 of either sign (times 2^-8..2^8 if wide);
 * vals[i cols + j] = w s exactly (double). The gap columns hold 127, so a
 * kernel reading them is off by far. */
static int8_t *q8_matrix_new(buf *bq, buf *bs, float **scales, size_t rows, size_t cols,
                             size_t ld, int wide, double *vals)
{
    size_t n = rows ? (rows - 1) * ld + cols : 0, ns = rows * (ld / 32);
    int8_t *q = (int8_t *)(void *)buf_make(bq, (n + 3) / 4 + 1, GUARD_IN);
    memset(q, 127, n);
    float *S = buf_make(bs, ns ? ns : 1, GUARD_IN);
    for (size_t i = 0; i < ns; i++) {
        double sc = ldexp(1.0 + rnd_range(0, 1), -2 - (int)rnd_below(11));
        if (wide)
            sc = ldexp(sc, (int)rnd_below(17) - 8);
        S[i] = (float)(rnd_below(2) ? sc : -sc);
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            uint64_t k = rnd_below(8);
            int v = k == 0 ? -128 : k == 1 ? 127 : (int)rnd_below(256) - 128;
            q[i * ld + j] = (int8_t)v;
            vals[i * cols + j] = (double)v * S[i * (ld / 32) + j / 32];
        }
    *scales = S;
    return q;
}

static void check_gemv_q8(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("gemv_q8")->c;
    static const size_t rowss[] = {1, 2, 3, 4, 5, 7, 8, 9, 17, 64, 100};
    static const size_t colss[] = {32, 64, 96, 160, 1024, 2048};
    for (size_t a = 0; a < sizeof rowss / sizeof rowss[0]; a++)
        for (size_t bi = 0; bi < sizeof colss / sizeof colss[0]; bi++)
            for (int bias = 0; bias < 2; bias++) {
                size_t rows = rowss[a], cols = colss[bi], ldw = cols + 32 * rnd_below(3);
                buf bW, bS, bx, bb, by, bs;
                double *Wv = malloc((rows * cols + 1) * sizeof *Wv);
                float *S;
                const int8_t *W = q8_matrix_new(&bW, &bS, &S, rows, cols, ldw, bias, Wv);
                float *x = buf_new(&bx, cols), *bv = buf_new(&bb, rows);
                float *y = buf_out(&by, rows), *ys = buf_out(&bs, rows);
                fill(x, cols, FILL_RANDOM, -1, 1);
                fill(bv, rows, FILL_RANDOM, -1, 1);
                const float *bp = bias ? bv : NULL;
                k->gemv_q8(y, W, S, ldw, x, bp, rows, cols);
                sc->gemv_q8(ys, W, S, ldw, x, bp, rows, cols);
                snprintf(shape, sizeof shape, "q8 rows=%zu cols=%zu ldw=%zu bias=%d y", rows,
                         cols, ldw, bias);
                note_gemv(r, y, ys, Wv, x, bp, rows, cols, c);
                check_guards(r, &by, "y");
                free(Wv);
                buf_free(&bW);
                buf_free(&bS);
                buf_free(&bx);
                buf_free(&bb);
                buf_free(&by);
                buf_free(&bs);
            }
}

/* A Q8_0 matrix rows x cols (ld bytes a row, cols a multiple of 32) in a
 * guarded buffer: scales halfs of either sign at 2^-14..2^-2 (times
 * 2^-8..2^8 if wide), every int8 (the extremes often); vals[i cols + j] =
 * d q exactly. The slack bytes hold 127. */
static uint8_t *q8_0_matrix_new(buf *bq, size_t rows, size_t cols, size_t ld, int wide,
                                double *vals)
{
    size_t n = rows ? (rows - 1) * ld + cols / 32 * 34 : 0;
    uint8_t *q = (uint8_t *)(void *)buf_make(bq, (n + 3) / 4 + 1, GUARD_IN);
    memset(q, 127, n);
    for (size_t i = 0; i < rows; i++)
        for (size_t g = 0; g < cols / 32; g++) {
            uint8_t *blk = q + i * ld + g * 34;
            double sc = ldexp(1.0 + rnd_range(0, 1), -2 - (int)rnd_below(13));
            if (wide)
                sc = ldexp(sc, (int)rnd_below(17) - 8);
            uint16_t h = linattn_f32_to_f16((float)(rnd_below(2) ? sc : -sc));
            memcpy(blk, &h, 2);
            double d = linattn_f16_to_f32(h);
            for (size_t j = 0; j < 32; j++) {
                uint64_t k = rnd_below(8);
                int v = k == 0 ? -128 : k == 1 ? 127 : (int)rnd_below(256) - 128;
                blk[2 + j] = (uint8_t)(int8_t)v;
                vals[i * cols + g * 32 + j] = d * v;
            }
        }
    return q;
}

static void check_gemv_q8_0(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("gemv_q8_0")->c;
    static const size_t rowss[] = {1, 2, 3, 4, 5, 7, 8, 9, 17, 64, 100};
    static const size_t colss[] = {32, 64, 96, 160, 1024, 4096 + 64};
    for (size_t a = 0; a < sizeof rowss / sizeof rowss[0]; a++)
        for (size_t bi = 0; bi < sizeof colss / sizeof colss[0]; bi++)
            for (int bias = 0; bias < 2; bias++) {
                size_t rows = rowss[a], cols = colss[bi];
                size_t ldw = cols / 32 * 34 + rnd_below(3) * 7;
                buf bW, bx, bb, by, bs;
                double *Wv = malloc((rows * cols + 1) * sizeof *Wv);
                const uint8_t *W = q8_0_matrix_new(&bW, rows, cols, ldw, bias, Wv);
                float *x = buf_new(&bx, cols), *bv = buf_new(&bb, rows);
                float *y = buf_out(&by, rows), *ys = buf_out(&bs, rows);
                fill(x, cols, FILL_RANDOM, -1, 1);
                /* a block of zeros (scale 0) and one of a wide range */
                if (cols >= 96) {
                    memset(x + 32, 0, 32 * sizeof *x);
                    for (int j = 0; j < 32; j++)
                        x[64 + j] = ldexp(x[64 + j], (int)rnd_below(24) - 12);
                }
                fill(bv, rows, FILL_RANDOM, -1, 1);
                const float *bp = bias ? bv : NULL;
                k->gemv_q8_0(y, W, ldw, x, bp, rows, cols);
                sc->gemv_q8_0(ys, W, ldw, x, bp, rows, cols);
                /* the truth: W times x as quantized (exact in fp32: a half
                 * times an integer of 7 bits) */
                int8_t *xq = malloc(cols);
                float *xd = malloc(cols / 32 * sizeof *xd), *xv = malloc(cols * sizeof *xv);
                linattn_q8_0_quantize(xq, xd, x, cols);
                for (size_t j = 0; j < cols; j++)
                    xv[j] = xd[j / 32] * (float)xq[j];
                snprintf(shape, sizeof shape, "q8_0 rows=%zu cols=%zu ldw=%zu bias=%d y", rows,
                         cols, ldw, bias);
                note_gemv(r, y, ys, Wv, xv, bp, rows, cols, c);
                check_guards(r, &by, "y");
                /* y aliasing b (a prefill adds into its rows): the same values */
                if (bias) {
                    float *yb = malloc(rows * sizeof *yb);
                    memcpy(yb, bv, rows * sizeof *yb);
                    k->gemv_q8_0(yb, W, ldw, x, yb, rows, cols);
                    snprintf(shape, sizeof shape, "q8_0 rows=%zu cols=%zu y aliasing b", rows,
                             cols);
                    for (size_t i = 0; i < rows; i++)
                        note(r, yb[i] == y[i] ? 0.0 : INFINITY, 1, 0.0, shape, i, yb[i], y[i],
                             y[i]);
                    free(yb);
                }
                free(xq);
                free(xd);
                free(xv);
                free(Wv);
                buf_free(&bW);
                buf_free(&bx);
                buf_free(&bb);
                buf_free(&by);
                buf_free(&bs);
            }
}

/* A matrix of ggml blocks of type: random bytes, the half scales (and
 * mins) set to 2^-14..2^-2 of either sign, Q6_K's int8 scales any. */
static uint8_t *quant_matrix_new(buf *bq, int type, size_t rows, size_t cols, size_t ld)
{
    size_t be, bb;
    linattn_quant_block(type, &be, &bb);
    size_t n = rows ? (rows - 1) * ld + cols / be * bb : 0;
    uint8_t *q = (uint8_t *)(void *)buf_make(bq, (n + 3) / 4 + 1, GUARD_IN);
    for (size_t i = 0; i < n; i++)
        q[i] = (uint8_t)rnd_below(256);
    for (size_t i = 0; i < rows; i++)
        for (size_t g = 0; g < cols / be; g++) {
            uint8_t *blk = q + i * ld + g * bb;
            int nh = type == LINATTN_QUANT_Q4_1 || type == LINATTN_QUANT_Q5_1 ||
                             type == LINATTN_QUANT_Q4_K || type == LINATTN_QUANT_Q5_K
                         ? 2 : 1;
            size_t at = type == LINATTN_QUANT_Q6_K ? 208 : 0;
            for (int h = 0; h < nh; h++) {
                double v = ldexp(1.0 + rnd_range(0, 1), -2 - (int)rnd_below(13));
                uint16_t x = linattn_f32_to_f16((float)(rnd_below(2) ? v : -v));
                memcpy(blk + at + 2 * h, &x, 2);
            }
        }
    return q;
}

static void check_gemv_quant(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("gemv_quant")->c;
    static const int types[] = {LINATTN_QUANT_Q4_0, LINATTN_QUANT_Q4_1, LINATTN_QUANT_Q5_0,
                                LINATTN_QUANT_Q5_1, LINATTN_QUANT_Q8_0, LINATTN_QUANT_Q4_K,
                                LINATTN_QUANT_Q5_K, LINATTN_QUANT_Q6_K};
    static const size_t rowss[] = {1, 3, 4, 5, 17};
    static const size_t blockss[] = {1, 2, 3, 17};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t a = 0; a < sizeof rowss / sizeof rowss[0]; a++)
            for (size_t bi = 0; bi < sizeof blockss / sizeof blockss[0]; bi++) {
                int type = types[ti], bias = (int)rnd_below(2);
                size_t be, bb;
                linattn_quant_block(type, &be, &bb);
                size_t rows = rowss[a], cols = blockss[bi] * be;
                size_t ldw = cols / be * bb + rnd_below(3) * 5;
                buf bW, bx, bb_, by, bs;
                const uint8_t *W = quant_matrix_new(&bW, type, rows, cols, ldw);
                float *x = buf_new(&bx, cols), *bv = buf_new(&bb_, rows);
                float *y = buf_out(&by, rows), *ys = buf_out(&bs, rows);
                fill(x, cols, FILL_RANDOM, -1, 1);
                fill(bv, rows, FILL_RANDOM, -1, 1);
                const float *bp = bias ? bv : NULL;
                k->gemv_quant(y, W, ldw, type, x, bp, rows, cols);
                sc->gemv_quant(ys, W, ldw, type, x, bp, rows, cols);
                int8_t *xq = malloc(cols), q[256];
                float *xd = malloc(cols / 32 * sizeof *xd), s16[16], m16[16];
                /* the K-quants take x as Q8_K (a scale per 256), the rest as Q8_0 */
                int kq = linattn_quant_takes_q8_K(type);
                size_t per = kq ? 256 : 32;
                if (kq) {
                    int32_t *bs = malloc(cols / 16 * sizeof *bs);
                    linattn_q8_K_quantize(xq, xd, bs, x, cols);
                    free(bs);
                } else
                    linattn_q8_0_quantize(xq, xd, x, cols);
                snprintf(shape, sizeof shape, "type=%d rows=%zu cols=%zu ldw=%zu bias=%d y", type,
                         rows, cols, ldw, bias);
                for (size_t i = 0; i < rows; i++) {
                    double ref = bp ? bp[i] : 0, abs = bp ? fabs(bp[i]) : 0;
                    for (size_t e0 = 0; e0 < cols; e0 += be) {
                        linattn_quant_decode(type, W + i * ldw + e0 / be * bb, q, s16, m16);
                        for (size_t e = 0; e < be; e++) {
                            double xv = (double)xd[(e0 + e) / per] * xq[e0 + e];
                            double sq = (double)s16[e / 16] * q[e], mv = m16[e / 16];
                            ref += (sq - mv) * xv;
                            abs += (fabs(sq) + fabs(mv)) * fabs(xv);
                        }
                    }
                    double bound = ((double)cols / 16 + c) * U * abs + (double)cols * TINY;
                    note(r, bound_ratio(y[i], ref, bound), 1, bound_ratio(y[i], ys[i], bound),
                         shape, i, y[i], ref, ys[i]);
                }
                check_guards(r, &by, "y");
                free(xq);
                free(xd);
                buf_free(&bW);
                buf_free(&bx);
                buf_free(&bb_);
                buf_free(&by);
                buf_free(&bs);
            }
}

/* Every block type's values, against the one reading of the layouts. */
static void check_dequant(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    (void)sc;
    static const int types[] = {LINATTN_QUANT_Q8_0, LINATTN_QUANT_Q4_0, LINATTN_QUANT_Q4_1,
                                LINATTN_QUANT_Q5_0, LINATTN_QUANT_Q5_1, LINATTN_QUANT_Q4_K,
                                LINATTN_QUANT_Q5_K, LINATTN_QUANT_Q6_K};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t rows = 1; rows <= 5; rows += 2) {
            int type = types[ti];
            size_t be, bb;
            linattn_quant_block(type, &be, &bb);
            size_t cols = (1 + rnd_below(3)) * be, ldw = cols / be * bb + rnd_below(3) * 5;
            buf bW, by;
            const uint8_t *W = quant_matrix_new(&bW, type, rows, cols, ldw);
            float *y = buf_out(&by, rows * cols), want[256];
            k->dequant(y, W, ldw, type, rows, cols);
            snprintf(shape, sizeof shape, "type=%d rows=%zu cols=%zu y", type, rows, cols);
            for (size_t i = 0; i < rows; i++)
                for (size_t e0 = 0; e0 < cols; e0 += be) {
                    linattn_quant_values(type, W + i * ldw + e0 / be * bb, want);
                    for (size_t e = 0; e < be; e++) {
                        float got = y[i * cols + e0 + e];
                        note(r, memcmp(&got, &want[e], sizeof got) ? INFINITY : 0.0, 1, 0.0,
                             shape, i * cols + e0 + e, got, want[e], want[e]);
                    }
                }
            check_guards(r, &by, "y");
            buf_free(&bW);
            buf_free(&by);
        }
}

/* Rows of C against this ISA's one-row kernels run on copies: exact. */
static void check_gemm_quant(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    (void)sc;
    static const int types[] = {LINATTN_QUANT_Q8_0, LINATTN_QUANT_Q4_0, LINATTN_QUANT_Q4_1,
                                LINATTN_QUANT_Q5_0, LINATTN_QUANT_Q5_1, LINATTN_QUANT_Q4_K,
                                LINATTN_QUANT_Q5_K, LINATTN_QUANT_Q6_K};
    static const size_t Ms[] = {1, 2, 3, 4, 5, 7, 9}, Ns[] = {1, 3, 4, 5, 9, 16};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t a = 0; a < sizeof Ms / sizeof Ms[0]; a++)
            for (size_t bi = 0; bi < sizeof Ns / sizeof Ns[0]; bi++) {
                int type = types[ti];
                size_t be, bb;
                linattn_quant_block(type, &be, &bb);
                size_t M = Ms[a], N = Ns[bi];
                /* past one chunk of x (4096 columns) now and then */
                size_t K = (rnd_below(6) == 0 ? 4096 / be + 1 + rnd_below(3) : 1 + rnd_below(5)) * be;
                size_t ldw = K / be * bb + rnd_below(3) * 5;
                size_t lda = K + rnd_below(4), ldc = N + rnd_below(4);
                buf bW, bA, bC, bx;
                const uint8_t *W = quant_matrix_new(&bW, type, N, K, ldw);
                float *A = matrix_new(&bA, M, K, lda, 0, 0);
                float *C = matrix_new(&bC, M, N, ldc, 0, 1);
                float *want = malloc(M * N * sizeof *want), *x = buf_new(&bx, K);
                for (size_t i = 0; i < M; i++) {
                    float *row = want + i * N;
                    memcpy(x, A + i * lda, K * sizeof *x);
                    memcpy(row, C + i * ldc, N * sizeof *row);
                    if (type == LINATTN_QUANT_Q8_0)
                        k->gemv_q8_0(row, W, ldw, x, row, N, K);
                    else
                        k->gemv_quant(row, W, ldw, type, x, row, N, K);
                }
                k->gemm_quant(C, ldc, A, lda, W, ldw, type, M, N, K);
                snprintf(shape, sizeof shape, "type=%d M=%zu N=%zu K=%zu C", type, M, N, K);
                for (size_t i = 0; i < M; i++)
                    for (size_t j = 0; j < N; j++) {
                        float got = C[i * ldc + j], w = want[i * N + j];
                        note(r, memcmp(&got, &w, sizeof got) ? INFINITY : 0.0, 1, 0.0, shape,
                             i * N + j, got, w, w);
                    }
                check_guards(r, &bC, "C");
                if (!gaps_ok(&bC, M, N, ldc))
                    fail(r, "%s: wrote into the gap between rows", shape);
                free(want);
                buf_free(&bW);
                buf_free(&bA);
                buf_free(&bC);
                buf_free(&bx);
            }
}

/* A prompt's rows quantized once (as the engine does) against Q4_0, Q8_0,
 * Q4_K and Q6_K weights: the double sum of the dequantized weights times the
 * quantized activations, past a packing's 512 columns and 16-lane panels
 * now and then. */
static void check_gemm_quant_xq(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("gemm_quant_xq")->c;
    static const int types[] = {LINATTN_QUANT_Q4_0, LINATTN_QUANT_Q8_0, LINATTN_QUANT_Q4_K,
                                LINATTN_QUANT_Q6_K};
    static const size_t Ms[] = {1, 2, 3, 5, 7, 8, 9, 13, 17}, Ns[] = {1, 5, 16, 17, 33, 64, 70, 130, 257};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t a = 0; a < sizeof Ms / sizeof Ms[0]; a++)
            for (size_t bi = 0; bi < sizeof Ns / sizeof Ns[0]; bi++) {
                int type = types[ti];
                size_t be, bb;
                linattn_quant_block(type, &be, &bb);
                size_t M = Ms[a], N = Ns[bi];
                size_t K = (rnd_below(4) == 0 ? 15 + rnd_below(30) : 1 + rnd_below(5)) * 32;
                int kq = linattn_quant_takes_q8_K(type);
                if (kq) /* whole super-blocks, past a packing's 512 now and then */
                    K = (rnd_below(4) == 0 ? 3 + rnd_below(4) : 1 + rnd_below(2)) * 256;
                size_t ldw = K / be * bb + rnd_below(3) * 5;
                size_t lda = K + 32 * rnd_below(2), lds = lda / 32, ldc = N + rnd_below(4);
                buf bW, bC, bS;
                const uint8_t *W = quant_matrix_new(&bW, type, N, K, ldw);
                float *C = matrix_new(&bC, M, N, ldc, 0, 1);
                float *Cs = matrix_new(&bS, M, N, ldc, 0, 1), *x = malloc(K * sizeof *x);
                int8_t *Aq = calloc(M * lda, 1);
                float *Ad = calloc(M * lds, sizeof *Ad);
                int32_t *As = calloc(M * lds, sizeof *As);
                for (size_t i = 0; i < M; i++) {
                    fill(x, K, FILL_RANDOM, -1, 1);
                    if (kq) { /* Q8_K: a scale per 256, given again for each 32 */
                        int32_t bs[6 * 256 / 16];
                        float dk[6];
                        linattn_q8_K_quantize(Aq + i * lda, dk, bs, x, K);
                        for (size_t g = 0; g < K / 32; g++)
                            Ad[i * lds + g] = dk[g / 8];
                    } else
                        linattn_q8_0_quantize(Aq + i * lda, Ad + i * lds, x, K);
                    for (size_t g = 0; g < K / 32; g++) {
                        int32_t t = 0;
                        for (int e = 0; e < 32; e++)
                            t += Aq[i * lda + 32 * g + (size_t)e];
                        As[i * lds + g] = t;
                    }
                }
                for (size_t i = 0; i < M; i++)
                    memcpy(Cs + i * ldc, C + i * ldc, N * sizeof *C);
                float *C0 = malloc(M * N * sizeof *C0);
                for (size_t i = 0; i < M; i++)
                    memcpy(C0 + i * N, C + i * ldc, N * sizeof *C0);
                k->gemm_quant_xq(C, ldc, Aq, Ad, As, lda, W, ldw, type, M, N, K);
                sc->gemm_quant_xq(Cs, ldc, Aq, Ad, As, lda, W, ldw, type, M, N, K);
                snprintf(shape, sizeof shape, "type=%d M=%zu N=%zu K=%zu lda=%zu C", type, M, N,
                         K, lda);
                for (size_t i = 0; i < M; i++)
                    for (size_t j = 0; j < N; j++) {
                        double ref = C0[i * N + j], abs = fabs(ref);
                        int8_t q[256];
                        float s16[16], m16[16];
                        for (size_t e0 = 0; e0 < K; e0 += be) {
                            linattn_quant_decode(type, W + j * ldw + e0 / be * bb, q, s16, m16);
                            for (size_t e = 0; e < be; e++) {
                                double xv = (double)Ad[i * lds + (e0 + e) / 32] * Aq[i * lda + e0 + e];
                                double sq = (double)s16[e / 16] * q[e], mv = m16[e / 16];
                                ref += (sq - mv) * xv;
                                abs += (fabs(sq) + fabs(mv)) * fabs(xv);
                            }
                        }
                        double bound = ((double)K / 16 + c) * U * abs + (double)K * TINY;
                        float got = C[i * ldc + j], gs = Cs[i * ldc + j];
                        note(r, bound_ratio(got, ref, bound), 1, bound_ratio(gs, ref, bound), shape,
                             i * N + j, got, ref, gs);
                    }
                check_guards(r, &bC, "C");
                if (!gaps_ok(&bC, M, N, ldc))
                    fail(r, "%s: wrote into the gap between rows", shape);
                free(C0);
                free(x);
                free(Aq);
                free(Ad);
                free(As);
                buf_free(&bW);
                buf_free(&bC);
                buf_free(&bS);
            }
}

/* The prompt's activation quantizer against the shared C one. */
static void check_quantize_q8_0(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    (void)sc;
    for (int how = 0; how < N_FILLS + 3; how++)
        for (size_t nb = 1; nb <= 9; nb += 4) {
            size_t n = 32 * nb;
            buf bx;
            float *x = buf_new(&bx, n), *d = malloc(nb * sizeof *d), *dw = malloc(nb * sizeof *dw);
            int8_t *q = malloc(n), *qw = malloc(n);
            int32_t *s = malloc(nb * sizeof *s);
            fill(x, n, how < N_FILLS ? how : FILL_RANDOM, -3, 3);
            if (how == N_FILLS) /* a NaN, an infinity, zeros: blocks 0, 1, 2 */
                for (size_t i = 0; i < n; i++) {
                    if (i == 5)
                        x[i] = NAN;
                    else if (i == 40 && nb > 1)
                        x[i] = -INFINITY;
                    else if (i >= 64 && i < 96)
                        x[i] = 0.0f;
                }
            if (how == N_FILLS + 1) /* huge, and ties: max 127 makes x * inv = x */
                for (size_t i = 0; i < n; i++)
                    x[i] = i % 32 == 0 ? (i % 64 ? 127.0f : 3e38f) : (float)((int)rnd_below(255) - 127) / 2.0f;
            if (how == N_FILLS + 2) /* the smallest floats */
                for (size_t i = 0; i < n; i++)
                    x[i] = (float)((int)rnd_below(9) - 4) * 0x1p-149f;
            linattn_q8_0_quantize(qw, dw, x, n);
            k->quantize_q8_0(q, d, s, x, n);
            snprintf(shape, sizeof shape, "n=%zu fill=%d", n, how);
            for (size_t i = 0; i < n; i++)
                note(r, q[i] == qw[i] ? 0.0 : INFINITY, 1, 0.0, shape, i, q[i], qw[i], qw[i]);
            for (size_t b = 0; b < nb; b++) {
                int same = isnan(d[b]) ? isnan(dw[b]) : !memcmp(&d[b], &dw[b], sizeof *d);
                note(r, same ? 0.0 : INFINITY, 1, 0.0, shape, b, d[b], dw[b], dw[b]);
                int32_t t = 0;
                for (int i = 0; i < 32; i++)
                    t += qw[32 * b + (size_t)i];
                note(r, s[b] == t ? 0.0 : INFINITY, 1, 0.0, shape, b, (float)s[b], t, t);
            }
            free(d);
            free(dw);
            free(q);
            free(qw);
            free(s);
            buf_free(&bx);
        }
}

static void check_quantize_q8_K(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    (void)sc;
    for (int how = 0; how < N_FILLS + 3; how++)
        for (size_t nb = 1; nb <= 3; nb++) {
            size_t n = 256 * nb;
            buf bx;
            float *x = buf_new(&bx, n), *d = malloc(n / 32 * sizeof *d), dw[3];
            int8_t *q = malloc(n), *qw = malloc(n);
            int32_t *s = malloc(n / 32 * sizeof *s), bs[3 * 16];
            fill(x, n, how < N_FILLS ? how : FILL_RANDOM, -3, 3);
            if (how == N_FILLS) /* a NaN; an infinity; zeros */
                for (size_t i = 0; i < n; i++) {
                    if (i == 5)
                        x[i] = NAN;
                    else if (i == 300)
                        x[i] = INFINITY;
                    else if (i >= 512)
                        x[i] = 0.0f;
                }
            if (how == N_FILLS + 1) /* the largest magnitude twice, of both signs, either first */
                for (size_t b = 0; b < nb; b++) {
                    x[256 * b + 7 + b] = b % 2 ? 4.0f : -4.0f;
                    x[256 * b + 200] = b % 2 ? -4.0f : 4.0f;
                }
            if (how == N_FILLS + 2) /* the smallest floats */
                for (size_t i = 0; i < n; i++)
                    x[i] = (float)((int)rnd_below(9) - 4) * 0x1p-149f;
            linattn_q8_K_quantize(qw, dw, bs, x, n);
            k->quantize_q8_K(q, d, s, x, n);
            snprintf(shape, sizeof shape, "n=%zu fill=%d", n, how);
            for (size_t i = 0; i < n; i++)
                note(r, q[i] == qw[i] ? 0.0 : INFINITY, 1, 0.0, shape, i, q[i], qw[i], qw[i]);
            for (size_t g = 0; g < n / 32; g++) {
                float want = dw[g / 8];
                int same = isnan(d[g]) ? isnan(want) : !memcmp(&d[g], &want, sizeof want);
                note(r, same ? 0.0 : INFINITY, 1, 0.0, shape, g, d[g], want, want);
                int32_t t = bs[2 * g] + bs[2 * g + 1];
                note(r, s[g] == t ? 0.0 : INFINITY, 1, 0.0, shape, g, (float)s[g], t, t);
            }
            free(d);
            free(q);
            free(qw);
            free(s);
            buf_free(&bx);
        }
}

static void check_gemm_nt_q8(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("gemm_nt_q8")->c;
    static const size_t Ms[] = {1, 2, 5, 12, 13, 64, 70}, Ns[] = {1, 5, 16, 33, 64};
    static const size_t Ks[] = {32, 64, 288, 512};
    for (size_t a = 0; a < sizeof Ms / sizeof Ms[0]; a++)
        for (size_t bi = 0; bi < sizeof Ns / sizeof Ns[0]; bi++)
            for (size_t d = 0; d < sizeof Ks / sizeof Ks[0]; d++) {
                size_t M = Ms[a], N = Ns[bi], K = Ks[d];
                int wide = rnd_below(3) == 0;
                size_t lda = K + 1 + rnd_below(4), ldc = N + 1 + rnd_below(4);
                size_t ldb = K + 32 * rnd_below(2);
                buf bA, bB, bS, bC, bCs;
                double *Bv = malloc((N * K + 1) * sizeof *Bv);
                float *S;
                float *A = matrix_new(&bA, M, K, lda, wide, 0);
                const int8_t *B = q8_matrix_new(&bB, &bS, &S, N, K, ldb, wide, Bv);
                float *C = matrix_new(&bC, M, N, ldc, 0, 1), *Cs = buf_out(&bCs, bC.n);
                memcpy(Cs, C, bC.n * sizeof *C);
                double *C0 = calloc(M * N + 1, sizeof *C0);
                for (size_t i = 0; i < M; i++)
                    for (size_t j = 0; j < N; j++)
                        C0[i * N + j] = C[i * ldc + j];
                k->gemm_nt_q8(C, ldc, A, lda, B, S, ldb, M, N, K);
                sc->gemm_nt_q8(Cs, ldc, A, lda, B, S, ldb, M, N, K);
                snprintf(shape, sizeof shape, "q8 M=%zu N=%zu K=%zu ldb=%zu C", M, N, K, ldb);
                note_gemm(r, C, Cs, ldc, C0, A, lda, Bv, 1, M, N, K, c);
                check_guards(r, &bC, "C");
                if (!gaps_ok(&bC, M, N, ldc))
                    fail(r, "%s: wrote into the gap between rows", shape);
                free(C0);
                free(Bv);
                buf_free(&bA);
                buf_free(&bB);
                buf_free(&bS);
                buf_free(&bC);
                buf_free(&bCs);
            }
}

/* ------------------------------------------------------------------------ */
/* The ISAs this CPU runs                                                    */
/* ------------------------------------------------------------------------ */

typedef struct isa {
    const char *name;
    linattn_kernels k;
    int base; /* a capability's table: the index of its ISA's own; else -1 */
} isa;

static isa isas[2 * LINATTN_ISA_COUNT];
static int n_isas, n_base_isas; /* the ISAs come first, their capabilities after */

/* An ISA counts only if its table differs from scalar somewhere: a build
 * without its kernels would otherwise "pass" by testing scalar twice. */
static int table_differs(const linattn_kernels *a, const linattn_kernels *b)
{
    return memcmp(a, b, sizeof *a) != 0;
}

/* The capability each ISA uses when present (engine/isa.c's table). */
static const struct {
    linattn_isa isa;
    unsigned cap;
    const char *name;
} isa_caps[] = {
    {LINATTN_ISA_AVX2, LINATTN_CPU_AVXVNNI, "avx2+avxvnni"},
    {LINATTN_ISA_AVX512, LINATTN_CPU_AVX512VNNI, "avx512+vnni"},
    {LINATTN_ISA_NEON, LINATTN_CPU_DOTPROD, "neon+dotprod"},
};
#define ALL_CAPS (LINATTN_CPU_AVXVNNI | LINATTN_CPU_AVX512VNNI | LINATTN_CPU_DOTPROD)

/* Every ISA of the library's table (linattn_isa) this CPU and build run,
 * each with the kernel table the library would use: first with its
 * capabilities masked off, then, when the CPU has one, with it. */
static void find_isas(void)
{
    n_isas = 0;
    unsigned all = linattn_cpu_features();
    linattn_cpu_mask(~ALL_CAPS);
    for (int isa = LINATTN_ISA_SCALAR; isa < LINATTN_ISA_COUNT; isa++) {
        const linattn_kernels *k;
        if (linattn_set_isa((linattn_isa)isa) != LINATTN_OK ||
            linattn_kernels_current(&k) != LINATTN_OK)
            continue;
        isas[n_isas].k = *k;
        isas[n_isas].name = linattn_isa_name((linattn_isa)isa);
        isas[n_isas].base = -1;
        if (n_isas == 0 || table_differs(&isas[n_isas].k, &isas[0].k))
            n_isas++;
    }
    n_base_isas = n_isas;
    linattn_cpu_mask(~0u);
    for (int at = 1; at < n_base_isas; at++) /* the capabilities after every ISA */
        for (size_t c = 0; c < sizeof isa_caps / sizeof isa_caps[0]; c++) {
            const linattn_kernels *k;
            if (strcmp(linattn_isa_name(isa_caps[c].isa), isas[at].name) ||
                !(all & isa_caps[c].cap) || linattn_set_isa(isa_caps[c].isa) != LINATTN_OK ||
                linattn_kernels_current(&k) != LINATTN_OK || !table_differs(k, &isas[at].k))
                continue;
            isas[n_isas].k = *k;
            isas[n_isas].name = isa_caps[c].name;
            isas[n_isas].base = at;
            n_isas++;
        }
}

/* The kernels a capability replaces (simd/kernels.h). */
static const int is_dot_kernel[N_KERNELS] = {
#define K_DOT(name, ret, params) [K_##name] = 1,
    LINATTN_DOT_KERNELS(K_DOT)
#undef K_DOT
};

/* A capability's dot-product kernels give its ISA's own results bit for
 * bit (the integer sums are exact both ways, and the float steps the
 * same): the checks against scalar and float64 run for it as for any
 * table, and this pins the rest. Returns the failures. */
static int check_caps_exact(void)
{
    int failed = 0;
    static const int types[] = {LINATTN_QUANT_Q4_0, LINATTN_QUANT_Q4_1, LINATTN_QUANT_Q5_0,
                                LINATTN_QUANT_Q5_1, LINATTN_QUANT_Q8_0, LINATTN_QUANT_Q4_K,
                                LINATTN_QUANT_Q5_K, LINATTN_QUANT_Q6_K};
    for (int i = 0; i < n_isas; i++) {
        if (isas[i].base < 0)
            continue;
        const linattn_kernels *k = &isas[i].k, *b = &isas[isas[i].base].k;
        size_t bad = 0, n = 0;
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            size_t be, bb, rows = 9, cols = 2 * 256;
            linattn_quant_block(types[ti], &be, &bb);
            size_t ldw = cols / be * bb;
            buf bW, bx;
            const uint8_t *W = quant_matrix_new(&bW, types[ti], rows, cols, ldw);
            float *x = buf_new(&bx, cols), y0[9], y1[9];
            fill(x, cols, FILL_RANDOM, -1, 1);
            k->gemv_quant(y0, W, ldw, types[ti], x, NULL, rows, cols);
            b->gemv_quant(y1, W, ldw, types[ti], x, NULL, rows, cols);
            for (size_t r = 0; r < rows; r++, n++)
                bad += memcmp(&y0[r], &y1[r], sizeof y0[r]) != 0;
            if (types[ti] == LINATTN_QUANT_Q8_0) {
                k->gemv_q8_0(y0, W, ldw, x, NULL, rows, cols);
                b->gemv_q8_0(y1, W, ldw, x, NULL, rows, cols);
                for (size_t r = 0; r < rows; r++, n++)
                    bad += memcmp(&y0[r], &y1[r], sizeof y0[r]) != 0;
            }
            buf_free(&bW);
            buf_free(&bx);
        }
        printf("%-4s %-19s %-7s %zu of %zu outputs differ from %s's\n", bad ? "FAIL" : "ok",
               "dot kernels exact", isas[i].name, bad, n, isas[isas[i].base].name);
        failed += bad != 0;
    }
    return failed;
}

/* ------------------------------------------------------------------------ */
/* Running the checks                                                        */
/* ------------------------------------------------------------------------ */

/* The checks of the kernels that share one: */
static void check_elu1(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_map(k, sc, r, 0);
}

static void check_relu(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_map(k, sc, r, 1);
}

static void check_gelu(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_map(k, sc, r, 2);
}

static void check_silu_mul(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    const double c = tol_of("silu_mul")->c;
    for (size_t si = 0; si <= N_SIZES; si++) {
        size_t n = si ? sizes[si - 1] : 0;
        for (int how = 0; how < N_MAP_CASES; how++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                buf bg, bu, by, bs;
                float *g = buf_new(&bg, n), *u = buf_new(&bu, n), *y = buf_out(&by, n);
                float *ys = buf_out(&bs, n);
                map_case(g, n, how);
                fill(u, n, FILL_RANDOM, -4, 4);
                sc->silu_mul(ys, g, u, n);
                if (inplace) {
                    memcpy(y, g, n * sizeof *g);
                    k->silu_mul(y, y, u, n);
                } else {
                    k->silu_mul(y, g, u, n);
                }
                snprintf(shape, sizeof shape, "n=%zu case=%d inplace=%d y", n, how, inplace);
                for (size_t i = 0; i < n; i++) {
                    double gd = g[i], ref = gd / (1.0 + exp(-gd)) * (double)u[i];
                    double bound = c * U * fabs(ref) + 4 * TINY + (gd < -87 ? fabs(ref) : 0.0);
                    note(r, bound_ratio(y[i], ref, bound), 1, bound_ratio(y[i], ys[i], bound),
                         shape, i, y[i], ref, ys[i]);
                }
                check_guards(r, &by, "y");
                check_guards(r, &bg, "g");
                check_guards(r, &bu, "u");
                buf_free(&bg);
                buf_free(&bu);
                buf_free(&by);
                buf_free(&bs);
            }
        }
    }
}

static void check_gemm_nt(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_gemm(k, sc, r, GEMM_NT);
}

static void check_gemv_f16(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_gemv_half(k, sc, r, 0);
}

static void check_gemv_bf16(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_gemv_half(k, sc, r, 1);
}

static void check_gemm_nt_f16(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_gemm_nt_half(k, sc, r, 0);
}

static void check_gemm_nt_bf16(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_gemm_nt_half(k, sc, r, 1);
}

static void check_gemm_nn(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_gemm(k, sc, r, GEMM_NN);
    check_sums_apart(k->gemm_nn, 0, r);
}

static void check_gemm_tn(const linattn_kernels *k, const linattn_kernels *sc, report *r)
{
    check_gemm(k, sc, r, GEMM_TN);
    check_sums_apart(k->gemm_tn, 1, r);
}

/* check_<name> for every kernel of the list: a kernel without one does not
 * build. */
typedef void (*check_fn)(const linattn_kernels *k, const linattn_kernels *sc, report *r);
static const check_fn checks[N_KERNELS] = {
#define K_CHECK(name, ret, params) [K_##name] = check_##name,
    LINATTN_KERNELS(K_CHECK)
#undef K_CHECK
};

static void print_result(size_t kern, const char *isa_name, const report *r)
{
    const struct tolerance *t = &tolerances[kern];
    char worst[96];
    if (t->kind == TOL_EXACT)
        snprintf(worst, sizeof worst, "%s", r->worst == 0 ? "exact" : "NOT exact");
    else if (t->kind == TOL_ULP)
        snprintf(worst, sizeof worst, "worst %.3g ulp (tol %g)", r->worst, t->c);
    else
        snprintf(worst, sizeof worst, "worst %.3g of bound", r->worst);
    printf("%-4s %-19s %-12s %s\n", r->failed ? "FAIL" : "ok", kernel_names[kern], isa_name, worst);
    if (r->failed)
        printf("     first failure (%d in all): %s\n", r->failed, r->detail);
}

/* ------------------------------------------------------------------------ */
/* --bench                                                                   */
/* ------------------------------------------------------------------------ */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The cases and their calls: simd/kernel_cases.h, shared with linattn-bench. */
typedef linattn_kernel_case bench_case;
typedef linattn_case_data bench_data;
#define bench_cases linattn_kernel_cases

/* Results of timed reductions land here so the calls are not optimized away. */
volatile float bench_sink;

static void bench_once(const linattn_kernels *k, const bench_case *bc, bench_data *d)
{
    linattn_kernel_case_call(k, bc, d, &bench_sink);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Calls per repetition so one repetition takes about 2 ms. */
static size_t bench_iters(const linattn_kernels *k, const bench_case *bc, bench_data *d)
{
    bench_once(k, bc, d); /* warm caches */
    size_t iters = 1;
    for (;;) {
        double t0 = now_ns();
        for (size_t i = 0; i < iters; i++)
            bench_once(k, bc, d);
        double dt = now_ns() - t0;
        if (dt > 2e6 || iters >= (1u << 24))
            return iters;
        iters *= dt < 1e5 ? 16 : 2;
    }
}

/* Median ns per call for each ISA over REPS repetitions; the ISAs take
 * turns, so a load that comes and goes on a shared machine hits them alike. */
#define REPS 9
static void bench_times(const bench_case *bc, bench_data *d, double *out)
{
    size_t iters[2 * LINATTN_ISA_COUNT];
    int reps = REPS;
    for (int i = 0; i < n_isas; i++) {
        iters[i] = bench_iters(&isas[i].k, bc, d);
        if (iters[i] == 1)
            reps = 3; /* calls of 2 ms or more: a few are enough */
    }
    double t[2 * LINATTN_ISA_COUNT][REPS];
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < n_isas; i++) {
            double t0 = now_ns();
            for (size_t it = 0; it < iters[i]; it++)
                bench_once(&isas[i].k, bc, d);
            t[i][r] = (now_ns() - t0) / (double)iters[i];
        }
    for (int i = 0; i < n_isas; i++) {
        qsort(t[i], (size_t)reps, sizeof t[i][0], cmp_double);
        out[i] = t[i][reps / 2];
    }
}

/* 64-byte aligned, as the engine's arrays should be; the checks cover misalignment. */
static float *bench_alloc(size_t n, double lo, double hi)
{
    size_t bytes = ((n + 16) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    if (!p) {
        fprintf(stderr, "checkasm: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n + 16; i++)
        p[i] = rnd_range(lo, hi);
    return p;
}

static int run_bench(const char *only)
{
    printf("\n%-19s %-16s", "kernel", "size");
    for (int i = 0; i < n_isas; i++)
        printf(" %12s", isas[i].name);
    for (int i = 1; i < n_isas; i++)
        printf(" %8s", "speed-up");
    printf("  (ns per call, median of %d, ISAs in turn; 64-byte aligned)\n", REPS);
    for (size_t ci = 0; ci < sizeof bench_cases / sizeof bench_cases[0]; ci++) {
        const bench_case *bc = &bench_cases[ci];
        if (only && strcmp(only, bc->kernel))
            continue;
        size_t mn = bc->a * bc->b, kk = bc->c ? bc->c : 1;
        bench_data d = linattn_kernel_case_data(bc, bench_alloc);
        char size[48];
        if (!strncmp(bc->kernel, "gemm_quant", 10) || !strcmp(bc->kernel, "dequant"))
            snprintf(size, sizeof size, "%zux%zux%zu type %d", bc->a, bc->b, bc->c, bc->heads);
        else if (!strncmp(bc->kernel, "gemm", 4))
            snprintf(size, sizeof size, "%zux%zux%zu", bc->a, bc->b, bc->c);
        else if (bc->heads > 1 && bc->decay > 0)
            snprintf(size, sizeof size, "%zux%zu x%d g=%g", bc->a, bc->b, bc->heads,
                     (double)bc->decay);
        else if (bc->heads > 1)
            snprintf(size, sizeof size, "%zux%zu x%d heads", bc->a, bc->b, bc->heads);
        else if (bc->decay > 0)
            snprintf(size, sizeof size, "%zux%zu g=%g", bc->a, bc->b, (double)bc->decay);
        else if (bc->b)
            snprintf(size, sizeof size, "%zux%zu", bc->a, bc->b);
        else
            snprintf(size, sizeof size, "n=%zu", bc->a);
        printf("%-19s %-16s", bc->kernel, size);
        fflush(stdout);
        double t[2 * LINATTN_ISA_COUNT];
        bench_times(bc, &d, t);
        for (int i = 0; i < n_isas; i++)
            printf(" %12.1f", t[i]);
        for (int i = 1; i < n_isas; i++)
            printf(" %7.2fx", t[0] / t[i]);
        if ((bc->c && strcmp(bc->kernel, "dequant")) || !strncmp(bc->kernel, "gemv", 4)) {
            double flops = 2.0 * (double)mn * (double)kk;
            printf("  GFLOP/s:");
            for (int i = 0; i < n_isas; i++)
                printf(" %s %.1f", isas[i].name, flops / t[i]);
        }
        printf("\n");
        free(d.x);
        free(d.y);
        free(d.w);
        free(d.b);
        free(d.S);
        free(d.z);
        free(d.C);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The kernels' inline exp over every fp32                                   */
/* ------------------------------------------------------------------------ */

/* SLEEF's scalar build of the u10 expf its AVX2, AVX-512 and NEON builds
 * compile from the same source with FMA (sleef.h declares it only where
 * FP_FAST_FMA is defined). The kernels used those before the inline exp. */
float Sleef_expf1_u10purecfma(float);

/* The bound of the inline exp (simd/body/exp_body.h): under 1 ulp of the
 * exact exp(x) (libm's double exp, itself within 2^-29 of that ulp), "ulp"
 * as everywhere here (2^-149 for subnormal results). The errors of p (exp
 * x = p 2^n) add up to at most 0.5 ulp(p) for the last FMA's rounding,
 * |r|/2 <= 0.18 for 1 + r Q rounded before it, 0.18 for the reduction's
 * rounding of r and 0.05 for the polynomial: 0.91, were all to fall on one
 * x. A subnormal result rounds p 2^n once more (0.5 ulp), but there
 * ulp(p) 2^n <= 2^-150, half of the result's ulp: 0.5 + 0.91 / 2 = 0.96.
 * Measured over every float: 0.891 (normal results). */
#define EXP_TOL 1.0
#define SWEEP_CHUNK 4096 /* floats of consecutive bit patterns (one sign, in order): in L1 */

typedef struct exp_report {
    report r;
    double worst_x;
    uint64_t not_rounded, full; /* results != fl(exp x); results checked against exp(x) */
} exp_report;

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The result every x of a chunk must give exactly (its bits), or -1 where
 * the chunk needs the reference: x < -104 gives +0, x > 89 and +inf give
 * +inf, |x| < 2^-25 gives 1 (within 0.5 ulp: exp(x) is 1 + x to 2^-50);
 * 0x7fc00000 stands for "any NaN". */
static int64_t sweep_expect(uint32_t first, uint32_t last)
{
    uint32_t a0 = first & 0x7fffffffu, a1 = last & 0x7fffffffu, neg = first >> 31;
    if (a0 > 0x7f800000u)
        return 0x7fc00000;
    if (a1 <= 0x7f800000u && !neg && a0 >= bits_of(89.0f))
        return 0x7f800000;
    if (a1 <= 0x7f800000u && neg && a0 >= bits_of(104.0f))
        return 0;
    if (a1 < bits_of(0x1p-25f))
        return bits_of(1.0f);
    return -1;
}

/* exp(x) in double: libm's, except for 2^-25 <= |x| < 2^-12 (42% of the
 * floats that need a reference) where the series to x^4/24 is within
 * x^5/120 < 2^-66 relatively, better than libm and a quarter of its time. */
static double exp_ref(float xf)
{
    double x = xf;
    if (fabs(x) < 0x1p-12)
        return 1.0 + x * (1.0 + x * (0.5 + x * (1.0 / 6 + x * (1.0 / 24))));
    return exp(x);
}

static int sweep_uniform_ok(const float *y, size_t n, uint32_t want)
{
    uint32_t bad = 0;
    if (want == 0x7fc00000u) {
        for (size_t j = 0; j < n; j++)
            bad |= (bits_of(y[j]) & 0x7fffffffu) <= 0x7f800000u;
    } else {
        for (size_t j = 0; j < n; j++)
            bad |= bits_of(y[j]) ^ want;
    }
    return bad == 0;
}

/* A chunk (of 4096 from bits first on) wholly past the domain: x >= 89
 * (+inf, NaN) or x <= -104 (-inf, NaN). */
static int sweep_outside(uint32_t first)
{
    uint32_t a = first & 0x7fffffffu;
    return a >= bits_of(first >> 31 ? 104.0f : 89.0f);
}

/* A chunk that holds FLT_MAX, an infinity or the first or last NaN. */
static int sweep_special(uint32_t first)
{
    static const uint32_t special[] = {0x7f7fffffu, 0x7f800000u, 0x7f800001u, 0x7fffffffu,
                                       0xff7fffffu, 0xff800000u, 0xff800001u, 0xffffffffu};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        if (special[i] - first < SWEEP_CHUNK)
            return 1;
    return 0;
}

/* The fp32 bit patterns in chunks of 4096 through exp_sub_sum with m = 0,
 * whose y is vexp(x - 0) = vexp(x) lane by lane, on each SIMD ISA: every
 * step-th chunk of the domain [-104, 89] (every float with step 1) and,
 * unless all, only every 16 step-th past it (where the result is +0, +inf
 * or NaN), and the chunks of FLT_MAX, the infinities and the NaN ends.
 * SLEEF's u10 expf on every 16th x that needs the reference, for
 * comparison. Returns the number of ISAs that failed. */
static int run_exp_sweep(unsigned step, int all)
{
    float *x = aligned_alloc(64, SWEEP_CHUNK * sizeof *x);
    float *rounded = aligned_alloc(64, SWEEP_CHUNK * sizeof *rounded);
    double *ref = aligned_alloc(64, SWEEP_CHUNK * sizeof *ref);
    float *y[LINATTN_ISA_COUNT];
    exp_report rep[LINATTN_ISA_COUNT];
    memset(rep, 0, sizeof rep);
    for (int i = 1; i < n_base_isas; i++)
        y[i] = aligned_alloc(64, SWEEP_CHUNK * sizeof *y[i]);
    double sleef_worst = 0, sleef_worst_x = 0, apart = 0; /* apart: max |inline - SLEEF| in ulps */
    uint64_t sleef_n = 0;
    double t0 = now_ns();
    for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)SWEEP_CHUNK * step) {
        if (!all && sweep_outside((uint32_t)base) &&
            (base / SWEEP_CHUNK / step) % 16 != 0 && !sweep_special((uint32_t)base))
            continue;
        for (uint32_t j = 0; j < SWEEP_CHUNK; j++)
            x[j] = float_of((uint32_t)base + j);
        for (int i = 1; i < n_base_isas; i++)
            (void)isas[i].k.exp_sub_sum(y[i], x, 0.0f, SWEEP_CHUNK);
        int64_t want = sweep_expect((uint32_t)base, (uint32_t)base + SWEEP_CHUNK - 1);
        int all_ok = want >= 0;
        for (int i = 1; i < n_base_isas && all_ok; i++)
            all_ok = sweep_uniform_ok(y[i], SWEEP_CHUNK, (uint32_t)want);
        if (all_ok)
            continue;
        for (uint32_t j = 0; j < SWEEP_CHUNK; j++) {
            ref[j] = exp_ref(x[j]);
            rounded[j] = (float)ref[j];
        }
        for (int i = 1; i < n_base_isas; i++) {
            exp_report *e = &rep[i];
            e->full += SWEEP_CHUNK;
            for (uint32_t j = 0; j < SWEEP_CHUNK; j++) {
                /* a correctly rounded result is within 0.5 ulp, and any
                 * other at least 0.5 ulp away: only those can be the worst */
                if (bits_of(y[i][j]) == bits_of(rounded[j]) || (isnan(ref[j]) && isnan(y[i][j])))
                    continue;
                e->not_rounded++;
                double err = ulp_err(y[i][j], ref[j]);
                if (err > e->r.worst || isnan(err)) {
                    e->r.worst = isnan(err) ? INFINITY : err;
                    e->worst_x = x[j];
                }
                if (!(err <= EXP_TOL))
                    fail(&e->r, "exp(%a = %.9g): got %a, exp %a (%.3g ulp, limit %g)",
                         (double)x[j], (double)x[j], (double)y[i][j], ref[j], err, EXP_TOL);
            }
        }
        for (uint32_t j = 0; j < SWEEP_CHUNK; j += 16) {
            float sl = Sleef_expf1_u10purecfma(x[j]);
            double es = ulp_err(sl, ref[j]);
            sleef_n++;
            if (es > sleef_worst) {
                sleef_worst = es;
                sleef_worst_x = x[j];
            }
            for (int i = 1; i < n_base_isas; i++) {
                double d = isnan(ref[j]) ? 0.0 : ulp_err(y[i][j], (double)sl);
                apart = d > apart ? d : apart;
            }
        }
    }
    int failed = 0;
    for (int i = 1; i < n_base_isas; i++) {
        exp_report *e = &rep[i];
        printf("%-4s %-19s %-7s worst %.3g ulp (tol %g) at x = %.9g; %.2f%% of %.3g not "
               "correctly rounded\n",
               e->r.failed ? "FAIL" : "ok",
               step > 1 ? "exp (sampled)" : all ? "exp (every fp32)" : "exp (all -104..89)",
               isas[i].name, e->r.worst, EXP_TOL, e->worst_x,
               100.0 * (double)e->not_rounded / (double)(e->full ? e->full : 1), (double)e->full);
        if (e->r.failed)
            printf("     first failure (%d in all): %s\n", e->r.failed, e->r.detail);
        failed += e->r.failed != 0;
    }
    printf("     SLEEF u10 on %.3g of them: worst %.3g ulp at x = %.9g; inline within %.3g ulp "
           "of SLEEF (%.1f s)\n",
           (double)sleef_n, sleef_worst, sleef_worst_x, apart, (now_ns() - t0) * 1e-9);
    for (int i = 1; i < n_base_isas; i++)
        free(y[i]);
    free(x);
    free(rounded);
    free(ref);
    return failed;
}

/* ------------------------------------------------------------------------ */
/* main                                                                      */
/* ------------------------------------------------------------------------ */

static const char usage[] =
    "usage: checkasm [--seed N] [--require ISA] [--kernel NAME] [--exp-step S] [--exp-all]\n"
    "                [--bench]\n"
    "\n"
    "Checks every kernel of every ISA this CPU runs (scalar included) against a\n"
    "double-precision reference and against the scalar kernels, at sizes\n"
    "1..1000 with unaligned pointers, guard floats and special values.\n"
    "\n"
    "  --seed N       reproduce a run (the seed is printed first)\n"
    "  --require ISA  fail unless ISA (avx2, avx512, neon, or an ISA with its\n"
    "                 capability: avx2+avxvnni, avx512+vnni, neon+dotprod) was tested\n"
    "  --kernel NAME  only this kernel (exp: only the sweep of the inline exp)\n"
    "  --exp-step S   the inline exp on every S-th run of 4096 fp32 bit patterns\n"
    "                 in [-104, 89] (default 1: every float there), every 16 S-th\n"
    "                 past it (where exp is +0, +inf or NaN), and the edges\n"
    "  --exp-all      past [-104, 89] also every S-th run (S = 1: all 2^32 floats)\n"
    "  --bench        after the checks, ns per call and speed-up over scalar\n"
    "  -h, --help     this text, then the tolerance table\n";

static void print_tolerances(void)
{
    printf("\ntolerances (u = 2^-24, tiny = 2^-149):\n");
    for (size_t i = 0; i < N_KERNELS; i++)
        printf("  %-19s %s (c = %g)\n  %-19s   %s\n", kernel_names[i], tolerances[i].formula,
               tolerances[i].c, "", tolerances[i].why);
}

int main(int argc, char **argv)
{
    uint64_t seed = 0;
    int have_seed = 0, bench = 0;
    unsigned exp_step = 1;
    int exp_all = 0;
    const char *require[4];
    int n_require = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            print_tolerances();
            return 0;
        } else if (!strcmp(argv[i], "--bench")) {
            bench = 1;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            char *end;
            seed = strtoull(argv[++i], &end, 10);
            if (*end || !*argv[i]) {
                fprintf(stderr, "checkasm: --seed: expected an integer, got '%s'\n", argv[i]);
                return 2;
            }
            have_seed = 1;
        } else if (!strcmp(argv[i], "--exp-all")) {
            exp_all = 1;
        } else if (!strcmp(argv[i], "--exp-step") && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end || !*argv[i] || v < 1 || v > 1048576) {
                fprintf(stderr, "checkasm: --exp-step: expected 1..1048576, got '%s'\n", argv[i]);
                return 2;
            }
            exp_step = (unsigned)v;
        } else if (!strcmp(argv[i], "--require") && i + 1 < argc) {
            if (n_require < 4)
                require[n_require++] = argv[++i];
        } else if (!strcmp(argv[i], "--kernel") && i + 1 < argc) {
            only = argv[++i];
            if (!tol_of(only) && strcmp(only, "exp")) {
                fprintf(stderr, "checkasm: --kernel: unknown kernel '%s'\n", only);
                return 2;
            }
        } else {
            fprintf(stderr, "checkasm: unknown or incomplete option '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    if (!have_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec;
        seed %= 1000000000u;
    }
    printf("seed: %" PRIu64 "\n", seed);
    fflush(stdout);

    for (size_t kern = 0; kern < N_KERNELS; kern++)
        if (!tolerances[kern].formula) {
            printf("FAIL %s: no tolerance entry in checkasm.c\n", kernel_names[kern]);
            return 1;
        }
    for (int kern = 0; kern < LINATTN_N_KERNELS; kern++) /* --bench and linattn-bench time each */
        if (!linattn_kernel_has_case(kern)) {
            printf("FAIL %s: no timed case in simd/kernel_cases.h\n", linattn_kernel_names[kern]);
            return 1;
        }
    find_isas();
    int passed = 0, failed = 0;
    for (size_t kern = 0; kern < N_KERNELS; kern++) {
        if (only && strcmp(only, kernel_names[kern]))
            continue;
        for (int i = 0; i < n_isas; i++) {
            if (isas[i].base >= 0 && !is_dot_kernel[kern])
                continue; /* the capability's table has its ISA's other kernels */
            /* the same inputs for every ISA of a kernel */
            rng_state = seed * 1000 + kern;
            report r = {0};
            checks[kern](&isas[i].k, &isas[0].k, &r);
            print_result(kern, isas[i].name, &r);
            fflush(stdout);
            if (r.failed)
                failed++;
            else
                passed++;
        }
    }
    if (!only || !strcmp(only, "gemv_quant")) {
        int f = check_caps_exact();
        failed += f;
        for (int i = 0; i < n_isas; i++)
            passed += isas[i].base >= 0;
        passed -= f;
    }
    if (!only || !strcmp(only, "exp")) {
        int f = run_exp_sweep(exp_step, exp_all);
        failed += f;
        passed += n_base_isas - 1 - f;
    }
    printf("isas tested:");
    for (int i = 0; i < n_isas; i++)
        printf(" %s", isas[i].name);
    printf("\n");
    for (int q = 0; q < n_require; q++) {
        int found = 0;
        for (int i = 0; i < n_isas; i++)
            found |= !strcmp(isas[i].name, require[q]);
        if (!found) {
            printf("FAIL require %s: not among the ISAs tested (cpu features: %s)\n", require[q],
                   linattn_cpu_features_str());
            failed++;
        }
    }
    if (bench) {
        rng_state = seed;
        run_bench(only);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
