/* kernels_avx2.c: the x86 kernels in AVX2+FMA (built with -mavx2 -mfma). */
#include "vec_avx2.h"

#include "kernels_x86.h"

#include "gemm_x86.h"
