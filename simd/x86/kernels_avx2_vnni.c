/* kernels_avx2_vnni.c: the dot-product kernels again with AVX-VNNI vpdpbusd (built with -mavx2 -mfma -mf16c -mavxvnni), for AVX2 CPUs with that capability. */
#include "vec_avx2.h"

#define QUANT_DOT_ONLY
#include "../body/quant_body.h"
