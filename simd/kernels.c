/* kernels.c: fills the kernel table, scalar first, then up the ISA ladder. */
#include "linattn.h"
#include "kernels.h"

void linattn_kernels_init(linattn_kernels *k, unsigned flags)
{
    linattn_kernels_init_scalar(k);
#if defined(LINATTN_HAVE_AVX2)
    if (!(flags & LINATTN_CPU_AVX2))
        return;
    linattn_kernels_init_avx2(k);
#elif defined(LINATTN_HAVE_NEON)
    if (!(flags & LINATTN_CPU_NEON))
        return;
    linattn_kernels_init_neon(k);
#else
    (void)flags;
#endif
}
