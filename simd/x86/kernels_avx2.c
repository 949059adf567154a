/* kernels_avx2.c: the shared kernel bodies in AVX2+FMA (built with -mavx2 -mfma -mf16c). */
#include "vec_avx2.h"

#include "../body/kernels_body.h"

#include "../body/gemm_body.h"

#include "../body/quant_body.h"
