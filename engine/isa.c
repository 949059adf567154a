/* isa.c: chooses the ISA (API > flag > config > LINATTN_ISA > auto) and hands out its kernel table. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifdef LINATTN_HAVE_OPENMP
#include <omp.h>
#endif
#include <sleef.h>

static const char *const isa_names[] = {"auto", "scalar", "avx2", "neon"};

/* One table per ISA, filled when first chosen (under choose_lock, so only
 * for an ISA the CPU runs); the table in force is swapped atomically so
 * threads reading it never see a half-written one. */
static linattn_kernels tables[4];
static int filled[4];
static _Atomic(const linattn_kernels *) current;
static _Atomic linattn_isa current_isa;
static _Atomic linattn_isa_source current_source;
static pthread_mutex_t choose_lock = PTHREAD_MUTEX_INITIALIZER;

static const unsigned isa_flags[4] = {0, 0, LINATTN_CPU_AVX2, LINATTN_CPU_NEON};

const char *linattn_version(void)
{
    return LINATTN_VERSION;
}

const char *linattn_isa_name(linattn_isa isa)
{
    if ((unsigned)isa < sizeof isa_names / sizeof isa_names[0])
        return isa_names[isa];
    return "unknown";
}

const char *linattn_isa_source_name(linattn_isa_source source)
{
    switch (source) {
    case LINATTN_ISA_FROM_AUTO: return "auto";
    case LINATTN_ISA_FROM_ENV: return "env LINATTN_ISA";
    case LINATTN_ISA_FROM_CONFIG: return "config";
    case LINATTN_ISA_FROM_FLAG: return "flag --isa";
    case LINATTN_ISA_FROM_API: return "api";
    }
    return "unknown";
}

linattn_status linattn_isa_parse(const char *text, linattn_isa *out)
{
    if (!text)
        return linattn_err(LINATTN_ERR_INVALID, "no ISA given");
    for (size_t i = 0; i < sizeof isa_names / sizeof isa_names[0]; i++) {
        const char *a = text, *b = isa_names[i];
        while (*a && tolower((unsigned char)*a) == *b)
            a++, b++;
        if (!*a && !*b) {
            *out = (linattn_isa)i;
            return LINATTN_OK;
        }
    }
    return linattn_err(LINATTN_ERR_INVALID, "unknown ISA '%s' (expected auto, scalar, avx2 or neon)",
                       text);
}

/* The best ISA the CPU (and this build) can run. */
static linattn_isa best_isa(void)
{
    unsigned f = linattn_cpu_features();
#if defined(LINATTN_HAVE_AVX2)
    if (f & LINATTN_CPU_AVX2)
        return LINATTN_ISA_AVX2;
#elif defined(LINATTN_HAVE_NEON)
    if (f & LINATTN_CPU_NEON)
        return LINATTN_ISA_NEON;
#endif
    (void)f;
    return LINATTN_ISA_SCALAR;
}

static int isa_runs_here(linattn_isa isa)
{
    unsigned f = linattn_cpu_features();
    switch (isa) {
    case LINATTN_ISA_AUTO:
    case LINATTN_ISA_SCALAR: return 1;
#if defined(LINATTN_HAVE_AVX2)
    case LINATTN_ISA_AVX2: return (f & LINATTN_CPU_AVX2) != 0;
#endif
#if defined(LINATTN_HAVE_NEON)
    case LINATTN_ISA_NEON: return (f & LINATTN_CPU_NEON) != 0;
#endif
    default: return 0;
    }
}

static linattn_status choose(linattn_isa isa, linattn_isa_source source)
{
    if ((unsigned)isa > LINATTN_ISA_NEON)
        return linattn_err(LINATTN_ERR_INVALID, "unknown ISA value %d", (int)isa);
    if (!isa_runs_here(isa))
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "ISA '%s' (from %s) cannot run here: this CPU/build has %s",
                           linattn_isa_name(isa), linattn_isa_source_name(source),
                           linattn_cpu_features_str());
    linattn_isa chosen = isa == LINATTN_ISA_AUTO ? best_isa() : isa;
    if (!filled[chosen]) {
        linattn_kernels_init(&tables[chosen], isa_flags[chosen]);
        filled[chosen] = 1;
    }
    atomic_store(&current_isa, chosen);
    atomic_store(&current_source, source);
    atomic_store(&current, &tables[chosen]);
    return LINATTN_OK;
}

linattn_status linattn_set_isa_from(linattn_isa isa, linattn_isa_source source)
{
    pthread_mutex_lock(&choose_lock);
    linattn_status st = choose(isa, source);
    pthread_mutex_unlock(&choose_lock);
    return st;
}

linattn_status linattn_set_isa(linattn_isa isa)
{
    return linattn_set_isa_from(isa, LINATTN_ISA_FROM_API);
}

/* First use with nothing chosen: LINATTN_ISA, else auto. */
static linattn_status resolve_default(void)
{
    linattn_status st = LINATTN_OK;
    pthread_mutex_lock(&choose_lock);
    if (!atomic_load(&current)) {
        const char *env = getenv("LINATTN_ISA");
        linattn_isa isa = LINATTN_ISA_AUTO;
        if (env && *env) {
            st = linattn_isa_parse(env, &isa);
            if (st != LINATTN_OK)
                st = linattn_err(st, "LINATTN_ISA: unknown ISA '%s' (expected auto, scalar, avx2 or neon)", env);
            else
                st = choose(isa, LINATTN_ISA_FROM_ENV);
        } else {
            st = choose(LINATTN_ISA_AUTO, LINATTN_ISA_FROM_AUTO);
        }
    }
    pthread_mutex_unlock(&choose_lock);
    return st;
}

linattn_status linattn_kernels_current(const linattn_kernels **k)
{
    const linattn_kernels *t = atomic_load(&current);
    if (!t) {
        linattn_status st = resolve_default();
        if (st != LINATTN_OK)
            return st;
        t = atomic_load(&current);
    }
    *k = t;
    return LINATTN_OK;
}

linattn_status linattn_get_isa(linattn_isa *isa, linattn_isa_source *source)
{
    const linattn_kernels *k;
    linattn_status st = linattn_kernels_current(&k);
    if (st != LINATTN_OK)
        return st;
    if (isa)
        *isa = atomic_load(&current_isa);
    if (source)
        *source = atomic_load(&current_source);
    return LINATTN_OK;
}

int linattn_max_threads(void)
{
#ifdef LINATTN_HAVE_OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int linattn_has_openmp(void)
{
#ifdef LINATTN_HAVE_OPENMP
    return 1;
#else
    return 0;
#endif
}

const char *linattn_sleef_version(void)
{
    return LINATTN_STR(SLEEF_VERSION_MAJOR) "." LINATTN_STR(SLEEF_VERSION_MINOR) "." LINATTN_STR(
        SLEEF_VERSION_PATCHLEVEL);
}
