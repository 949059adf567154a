/* kernels_avx512.c: the x86 kernels in AVX-512 F/BW/DQ/VL (built with -mavx512f -mavx512bw
 * -mavx512dq -mavx512vl -mavx2 -mfma). */
#include "vec_avx512.h"

#include "kernels_x86.h"

#include "gemm_x86.h"
