/* kernels_avx512.c: the shared kernel bodies in AVX-512 F/BW/DQ/VL (built with -mavx512f -mavx512bw
 * -mavx512dq -mavx512vl -mavx2 -mfma -mf16c). */
#include "vec_avx512.h"

#include "../body/kernels_body.h"

#include "../body/gemm_body.h"

#include "../body/quant_body.h"
