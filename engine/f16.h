/* f16.h: the engine's view of the half and bfloat16 conversions (simd/f16.h, shared with the scalar kernels). */
#ifndef LINATTN_ENGINE_F16_H
#define LINATTN_ENGINE_F16_H

#include "../simd/f16.h"

#endif
