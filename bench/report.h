/* report.h: one measured row per workload x ISA x threads, the run's header, and their JSON and CSV forms. */
#ifndef LINATTN_BENCH_REPORT_H
#define LINATTN_BENCH_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "stats.h"

/* One figure: a workload measured with one ISA at one thread count. Every
 * double that does not apply is NaN (written as null in JSON, empty in
 * CSV); every string that does not apply is "". */
typedef struct bench_row {
    char suite[16];   /* peak, bandwidth, kernels, ops, model */
    char name[64];    /* the workload: stable across runs, the key of --compare */
    char what[128];   /* one line for people */
    char isa[16];     /* the kernels (or loads) it ran with */
    int threads;      /* asked; 0: auto (the library's default) */
    char unit[16];    /* of st: GFLOP/s, GB/s, tok/s, us/tok, ns */
    bench_stats st;   /* over the repeats, of the value in unit */
    double seconds;   /* median seconds of one call (of one token for per-token rows) */
    double flops;     /* per call, as counted for GFLOP/s */
    double peak;      /* GFLOP/s of this ISA and thread count: the % of peak divides by it */
    double pct_peak;  /* 100 x achieved GFLOP/s / peak */
    double bytes;     /* bytes one token reads (memory-bound rows) */
    double bandwidth; /* GB/s of the level those bytes live in */
    char level[8];    /* that level: L1, L2, L3, DRAM */
    double floor;     /* bytes / bandwidth: the fewest seconds a token can take */
    double pct_bw;    /* 100 x floor / seconds: how close to the bandwidth bound */
    double speedup;   /* over scalar (kernels) or over 1 thread (others) */
    char group[16];   /* "decode": a point of plot 1; "prefill": a bar of plot 2 */
    char variant[16]; /* softmax, linear */
    double context;   /* decode: tokens in the state; prefill: tokens fed */
    char note[128];
} bench_row;

/* A row with every number NaN and every string empty. */
void bench_row_init(bench_row *r);

/* Lower is better for times (ns, us/tok, s), higher for rates. */
int bench_unit_higher_better(const char *unit);

/* Where a run came from: ordered keys with a string, a number, or a list
 * (a comma-separated string written as a JSON array). */
enum bench_kv_kind { BENCH_KV_STR, BENCH_KV_NUM, BENCH_KV_LIST };
typedef struct bench_kv {
    char key[32];
    char value[256];
    double num;
    enum bench_kv_kind kind;
} bench_kv;

#define BENCH_HEADER_MAX 48
typedef struct bench_header {
    bench_kv kv[BENCH_HEADER_MAX];
    int n;
} bench_header;

/* Adds or replaces key; a value longer than 255 bytes is cut. */
void bench_header_str(bench_header *h, const char *key, const char *value);
void bench_header_num(bench_header *h, const char *key, double value);
void bench_header_list(bench_header *h, const char *key, const char *comma_list);
/* The value of key as text ("" when absent; numbers as %g). */
const char *bench_header_get(const bench_header *h, const char *key);

/* {"header": {...}, "peaks": [...], "bandwidth": [...], "rows": [...]}:
 * peaks and bandwidth repeat the peak and bandwidth rows' medians in a
 * short form. 0 on success, -1 on a write or memory error. */
int bench_write_json(FILE *f, const bench_header *h, const bench_row *rows, size_t n);

/* "# key: value" lines, then one line of column names, then one line per
 * row (RFC 4180 quoting: a field with a comma, quote or line break is
 * quoted, its quotes doubled). 0 on success, -1 on a write error. */
int bench_write_csv(FILE *f, const bench_header *h, const bench_row *rows, size_t n);

/* The CSV columns (and JSON row keys), in order; NULL past the last. */
size_t bench_csv_ncolumns(void);
const char *bench_csv_column(size_t i);

/* A run read back from JSON (what --compare reads). */
typedef struct bench_doc {
    bench_header h;
    bench_row *rows;
    size_t n;
} bench_doc;

/* Parses text written by bench_write_json. 0 on success; -1 with a
 * message in err on bad JSON or a missing "rows" array. Free with
 * bench_doc_free. */
int bench_read_json(const char *text, bench_doc *doc, char *err, size_t errlen);
void bench_doc_free(bench_doc *doc);

#endif
