/* peak.h: the fp32 FMA peak of each ISA, measured in the same run as the figures it divides. */
#ifndef LINATTN_BENCH_PEAK_H
#define LINATTN_BENCH_PEAK_H

#include "linattn.h"

/* GFLOP/s of `threads` threads each running isa's register-only
 * multiply-add loop for about `seconds` (best of 3); 0 for an ISA this
 * file has no loop for. Scalar is the baseline the scalar kernels are
 * built for (x86-64: SSE multiply and add, no FMA; aarch64: NEON). */
double peak_gflops(linattn_isa isa, int threads, double seconds);
/* The GFLOP/s of each of `trials` runs of that loop into gflops[]; returns
 * trials, or 0 for an ISA without a loop. */
int peak_samples(linattn_isa isa, int threads, double seconds, double *gflops, int trials);

#endif
