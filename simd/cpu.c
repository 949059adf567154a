/* cpu.c: detects AVX2+FMA+F16C, AVX-512 and the VNNI capabilities (x86-64) or NEON and dotprod (aarch64) once; built with no ISA flags. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>
#include <stdio.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "linattn.h"
#include "cpu.h"

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static unsigned detected;
static atomic_uint keep_mask = ~0u;

#if defined(__x86_64__) || defined(__i386__)
/* F16C (the AVX2 tier's half to fp32 loads): CPUID leaf 1, ECX bit 29;
 * every AVX2 CPU made has it, but the tier now relies on it. */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

static void detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    /* __builtin_cpu_supports checks the OS saves YMM state too. */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c())
        detected |= LINATTN_CPU_AVX2;
    /* ... and ZMM and mask state for these. */
    if ((detected & LINATTN_CPU_AVX2) && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        detected |= LINATTN_CPU_AVX512;
    /* the CPUID bits alone (clang's __builtin_cpu_supports knows no
     * "avxvnni"): the tier each serves has checked the OS state above */
    unsigned a, b, c, d;
    if ((detected & LINATTN_CPU_AVX2) && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4)))
        detected |= LINATTN_CPU_AVXVNNI; /* leaf 7.1 EAX bit 4 */
    if ((detected & LINATTN_CPU_AVX512) && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
        (c & (1u << 11)))
        detected |= LINATTN_CPU_AVX512VNNI; /* leaf 7.0 ECX bit 11 */
#elif defined(__aarch64__)
    detected |= LINATTN_CPU_NEON; /* baseline on aarch64 */
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
    if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP)
        detected |= LINATTN_CPU_DOTPROD;
#endif
#endif
}

unsigned linattn_cpu_features(void)
{
    pthread_once(&detect_once, detect);
    unsigned f = detected & atomic_load(&keep_mask);
    /* a capability goes with the ISA that uses it */
    if (!(f & LINATTN_CPU_AVX2))
        f &= ~(LINATTN_CPU_AVXVNNI | LINATTN_CPU_AVX512);
    if (!(f & LINATTN_CPU_AVX512))
        f &= ~LINATTN_CPU_AVX512VNNI;
    if (!(f & LINATTN_CPU_NEON))
        f &= ~LINATTN_CPU_DOTPROD;
    return f;
}

void linattn_cpu_mask(unsigned mask)
{
    atomic_store(&keep_mask, mask);
}

size_t linattn_cpu_l1d_bytes(void)
{
    static atomic_size_t bytes;
    size_t b = atomic_load(&bytes);
    if (!b) {
        long v = sysconf(_SC_LEVEL1_DCACHE_SIZE); /* CPUID leaf 4 / 0x8000001D, or sysfs */
        b = v >= 4096 && v <= (1l << 24) ? (size_t)v : 32768;
        atomic_store(&bytes, b);
    }
    return b;
}

/* One string per feature set, all made once: a caller keeps the pointer,
 * and a later mask must not rewrite what it holds. */
static char features_text[64][48];
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void make_features_text(void)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {
        {LINATTN_CPU_AVX2, " avx2 fma"}, {LINATTN_CPU_AVX512, " avx512"},
        {LINATTN_CPU_AVX512VNNI, " avx512vnni"}, {LINATTN_CPU_AVXVNNI, " avxvnni"},
        {LINATTN_CPU_NEON, " neon"}, {LINATTN_CPU_DOTPROD, " dotprod"},
    };
    for (unsigned f = 0; f < 64; f++) {
        char buf[sizeof features_text[0]] = "";
        size_t n = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (f & names[i].bit)
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%s", names[i].name);
        snprintf(features_text[f], sizeof features_text[0], "%s", n ? buf + 1 : "none");
    }
}

const char *linattn_cpu_features_str(void)
{
    pthread_once(&features_once, make_features_text);
    return features_text[linattn_cpu_features() & 63u];
}
