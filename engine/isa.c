/* isa.c: chooses the ISA (API > flag > config > LINATTN_ISA > auto) and hands out its kernel table. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifdef LINATTN_HAVE_OPENMP
#include <omp.h>
#endif
#include <sleef.h>

/* The ISAs, by linattn_isa value: name, the CPU flags they need, whether
 * this build has their kernels. Adding an ISA is a line here, its enum
 * value, its ladder step (simd/kernels.c) and its kernel files. */
#if defined(LINATTN_HAVE_AVX2)
#define BUILT_AVX2 1
#else
#define BUILT_AVX2 0
#endif
#if defined(LINATTN_HAVE_AVX512)
#define BUILT_AVX512 1
#else
#define BUILT_AVX512 0
#endif
#if defined(LINATTN_HAVE_NEON)
#define BUILT_NEON 1
#else
#define BUILT_NEON 0
#endif
/* caps: the capabilities the ISA uses when the CPU has them (not ISAs of
 * their own: the ISA's table with its dot-product kernels swapped). */
static const struct isa_entry {
    const char *name;
    unsigned flags, caps;
    int built;
} isa_table[LINATTN_ISA_COUNT] = {
    [LINATTN_ISA_AUTO] = {"auto", 0, 0, 1},
    [LINATTN_ISA_SCALAR] = {"scalar", 0, 0, 1},
    [LINATTN_ISA_AVX2] = {"avx2", LINATTN_CPU_AVX2, LINATTN_CPU_AVXVNNI, BUILT_AVX2},
    [LINATTN_ISA_AVX512] = {"avx512", LINATTN_CPU_AVX2 | LINATTN_CPU_AVX512,
                            LINATTN_CPU_AVX512VNNI, BUILT_AVX512},
    [LINATTN_ISA_NEON] = {"neon", LINATTN_CPU_NEON, LINATTN_CPU_DOTPROD, BUILT_NEON},
};

/* One table per ISA and set of its capabilities (none, or all the CPU has
 * after the mask), filled when first chosen (under choose_lock, so only for
 * an ISA the CPU runs); the table in force is swapped atomically so threads
 * reading it never see a half-written one, and a filled table never
 * changes. */
static linattn_kernels tables[LINATTN_ISA_COUNT][2];
static int filled[LINATTN_ISA_COUNT][2];
static _Atomic(const linattn_kernels *) current;
static _Atomic linattn_isa current_isa;
static _Atomic linattn_isa_source current_source;
static pthread_mutex_t choose_lock = PTHREAD_MUTEX_INITIALIZER;

const char *linattn_version(void)
{
    return LINATTN_VERSION;
}

const char *linattn_isa_name(linattn_isa isa)
{
    if ((unsigned)isa < LINATTN_ISA_COUNT)
        return isa_table[isa].name;
    return "unknown";
}

static char choices_text[128];
static pthread_once_t choices_once = PTHREAD_ONCE_INIT;

/* "auto, scalar, avx2, avx512 or neon" */
static void make_choices(void)
{
    size_t n = 0;
    for (int i = 0; i < LINATTN_ISA_COUNT; i++)
        n += (size_t)snprintf(choices_text + n, sizeof choices_text - n, "%s%s",
                              i == 0 ? "" : i + 1 < LINATTN_ISA_COUNT ? ", " : " or ",
                              isa_table[i].name);
}

const char *linattn_isa_choices(void)
{
    pthread_once(&choices_once, make_choices);
    return choices_text;
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
    for (int i = 0; i < LINATTN_ISA_COUNT; i++) {
        const char *a = text, *b = isa_table[i].name;
        while (*a && tolower((unsigned char)*a) == *b)
            a++, b++;
        if (!*a && !*b) {
            *out = (linattn_isa)i;
            return LINATTN_OK;
        }
    }
    return linattn_err(LINATTN_ERR_INVALID, "unknown ISA '%s' (expected %s)", text,
                       linattn_isa_choices());
}

/* An ISA this build has and this CPU runs (auto and scalar always). */
static int isa_runs_here(linattn_isa isa)
{
    const struct isa_entry *e = &isa_table[isa];
    return e->built && (linattn_cpu_features() & e->flags) == e->flags;
}

/* The best: the last ISA of the table that runs here. */
static linattn_isa best_isa(void)
{
    for (int i = LINATTN_ISA_COUNT - 1; i > LINATTN_ISA_SCALAR; i--)
        if (isa_runs_here((linattn_isa)i))
            return (linattn_isa)i;
    return LINATTN_ISA_SCALAR;
}

static linattn_status choose(linattn_isa isa, linattn_isa_source source)
{
    if ((unsigned)isa >= LINATTN_ISA_COUNT)
        return linattn_err(LINATTN_ERR_INVALID, "unknown ISA value %d", (int)isa);
    if (!isa_runs_here(isa))
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "ISA '%s' (from %s) cannot run here: this CPU/build has %s",
                           linattn_isa_name(isa), linattn_isa_source_name(source),
                           linattn_cpu_features_str());
    linattn_isa chosen = isa == LINATTN_ISA_AUTO ? best_isa() : isa;
    unsigned caps = linattn_cpu_features() & isa_table[chosen].caps;
    int c = caps != 0; /* an ISA has one capability today */
    if (!filled[chosen][c]) {
        linattn_kernels_init(&tables[chosen][c], isa_table[chosen].flags | caps);
        filled[chosen][c] = 1;
    }
    atomic_store(&current_isa, chosen);
    atomic_store(&current_source, source);
    atomic_store(&current, &tables[chosen][c]);
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
                st = linattn_err(st, "LINATTN_ISA: unknown ISA '%s' (expected %s)", env,
                                 linattn_isa_choices());
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
