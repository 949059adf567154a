/* cpu.c: detects AVX2+FMA+F16C and AVX-512 (x86-64) or NEON (aarch64) once; built with no ISA flags. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
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
#elif defined(__aarch64__)
    detected |= LINATTN_CPU_NEON; /* baseline on aarch64 */
#endif
}

unsigned linattn_cpu_features(void)
{
    pthread_once(&detect_once, detect);
    return detected & atomic_load(&keep_mask);
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

const char *linattn_cpu_features_str(void)
{
    unsigned f = linattn_cpu_features();
    if ((f & LINATTN_CPU_AVX2) && (f & LINATTN_CPU_AVX512))
        return "avx2 fma avx512";
    if (f & LINATTN_CPU_AVX2)
        return "avx2 fma";
    if (f & LINATTN_CPU_NEON)
        return "neon";
    return "none";
}
