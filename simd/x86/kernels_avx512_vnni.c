/* kernels_avx512_vnni.c: the dot-product kernels again with AVX-512 VNNI vpdpbusd (built with the avx512 flags and -mavx512vnni), for AVX-512 CPUs with that capability. */
#include "vec_avx512.h"

#define QUANT_DOT_ONLY
#include "../body/quant_body.h"
