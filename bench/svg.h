/* svg.h: the bench's two plots, drawn as one SVG file by the program itself. */
#ifndef LINATTN_BENCH_SVG_H
#define LINATTN_BENCH_SVG_H

#include <stddef.h>
#include <stdio.h>

#include "report.h"

/* (1) decode us/token against context, log-log: rows of group "decode",
 * one line per variant x ISA (1 thread, or the fewest threads measured),
 * each a <g class="series" data-isa=... data-variant=...>;
 * (2) prefill GFLOP/s: rows of group "prefill" as bars per workload, ISA
 * and thread count (<g class="bar" data-isa=... data-threads=...>), each
 * with its measured peak marked and min..max as a whisker.
 * title and subtitle (may be NULL) head the picture. 0 on success, -1 on
 * a write error. */
int bench_svg_write(FILE *f, const bench_row *rows, size_t n, const char *title,
                    const char *subtitle);

#endif
