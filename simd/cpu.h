/* cpu.h: CPU feature detection, done once, narrowed by a mask. */
#ifndef LINATTN_SIMD_CPU_H
#define LINATTN_SIMD_CPU_H

#include <stddef.h>

/* LINATTN_CPU_* bits from linattn.h: what the CPU has, after the mask. */
unsigned linattn_cpu_features(void);
/* The first-level data cache of one core, in bytes (32 KiB when the system
 * does not say). */
size_t linattn_cpu_l1d_bytes(void);

#endif
