/* kernels_neon.c: NEON kernels (placeholder, being written). */
#include "../kernels.h"
void linattn_kernels_init_neon(linattn_kernels *k) { (void)k; }
