/* sysinfo.h: where a run came from: CPU, caches, compiler, OpenMP, revision, date. */
#ifndef LINATTN_BENCH_SYSINFO_H
#define LINATTN_BENCH_SYSINFO_H

#include "bench.h"
#include "report.h"

/* The caches of cpu0 from /sys (the per-core figures), else sysconf. */
void bench_caches_get(bench_caches *c);

/* The header keys that do not depend on the plan: program, version,
 * revision, date, command, cpu_*, caches, compiler, flags, openmp_*, os. */
void bench_sysinfo(bench_header *h, const bench_caches *c, int argc, char **argv);

#endif
