/* kernels_neon.c: the shared kernel bodies in aarch64 NEON (baseline on aarch64: no extra flags). */
#include "vec_neon.h"

#include "../body/kernels_body.h"

#include "../body/gemm_body.h"

#include "../body/quant_body.h"
