/* kernels_avx2.c: AVX2+FMA kernels (placeholder, being written). */
#include "../kernels.h"
void linattn_kernels_init_avx2(linattn_kernels *k) { (void)k; }
