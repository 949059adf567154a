/* kernels_neon_dotprod.c: the dot-product kernels again with Armv8.2 sdot (built with -march=armv8.2-a+dotprod), for CPUs with the dotprod capability. */
#include "vec_neon.h"

#define QUANT_DOT_ONLY
#include "../body/quant_body.h"
