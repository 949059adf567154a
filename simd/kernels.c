/* kernels.c: fills the kernel table, scalar first, then up the ISA ladder; built with no ISA flags. */
#include "linattn.h"
#include "kernels.h"

/* k->name = linattn_name_isa for every kernel of the list. */
#define LINATTN_SET(isa, name) k->name = linattn_##name##_##isa;
#define SET_scalar(name, ret, params) LINATTN_SET(scalar, name)
#define SET_avx2(name, ret, params) LINATTN_SET(avx2, name)
#define SET_avx512(name, ret, params) LINATTN_SET(avx512, name)
#define SET_neon(name, ret, params) LINATTN_SET(neon, name)
#define SET_avx2vnni(name, ret, params) LINATTN_SET(avx2vnni, name)
#define SET_avx512vnni(name, ret, params) LINATTN_SET(avx512vnni, name)
#define SET_neondot(name, ret, params) LINATTN_SET(neondot, name)

/* Each step up the ladder needs its CPU flags and replaces every kernel;
 * a missing flag ends the climb (the dav1d *_dsp_init ladder). */
void linattn_kernels_init(linattn_kernels *k, unsigned flags)
{
    LINATTN_KERNELS(SET_scalar)
    k->blocked_gemm = 0;
#if defined(LINATTN_HAVE_AVX2)
    if (!(flags & LINATTN_CPU_AVX2))
        return;
    LINATTN_KERNELS(SET_avx2)
    k->blocked_gemm = 1;
    if (flags & LINATTN_CPU_AVXVNNI) {
        LINATTN_DOT_KERNELS(SET_avx2vnni)
    }
#if defined(LINATTN_HAVE_AVX512)
    if (!(flags & LINATTN_CPU_AVX512))
        return;
    LINATTN_KERNELS(SET_avx512)
    if (flags & LINATTN_CPU_AVX512VNNI) {
        LINATTN_DOT_KERNELS(SET_avx512vnni)
    }
#endif
#elif defined(LINATTN_HAVE_NEON)
    if (!(flags & LINATTN_CPU_NEON))
        return;
    LINATTN_KERNELS(SET_neon)
    k->blocked_gemm = 1;
    if (flags & LINATTN_CPU_DOTPROD) {
        LINATTN_DOT_KERNELS(SET_neondot)
    }
#else
    (void)flags;
#endif
}
