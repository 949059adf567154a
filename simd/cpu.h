/* cpu.h: CPU feature detection, done once, narrowed by a mask. */
#ifndef LINATTN_SIMD_CPU_H
#define LINATTN_SIMD_CPU_H

/* LINATTN_CPU_* bits from linattn.h: what the CPU has, after the mask. */
unsigned linattn_cpu_features(void);

#endif
