/* stats.h: the spread of repeated measurements: median, min, max, mean, coefficient of variation. */
#ifndef LINATTN_BENCH_STATS_H
#define LINATTN_BENCH_STATS_H

/* A figure whose coefficient of variation is above this is marked noisy:
 * its median may be off by about as much. */
#define BENCH_NOISY_CV 0.10

typedef struct bench_stats {
    int runs;      /* samples the figures come from; 0: none */
    double median; /* middle sample (mean of the two middle ones for even runs) */
    double min, max;
    double mean;
    double sd; /* sample standard deviation (n - 1); NaN for fewer than 2 runs */
    double cv; /* sd / |mean|; NaN for fewer than 2 runs or a zero mean */
    int noisy; /* cv > BENCH_NOISY_CV */
} bench_stats;

/* The statistics of x[0..n); x is not changed. n = 0 (or no memory for
 * the sort) gives runs = 0 and NaN figures. */
void bench_stats_of(const double *x, int n, bench_stats *s);

/* The statistics of the rates work / seconds[i] (tokens/s from the
 * seconds of each run): the spread of what is printed, not of the times. */
void bench_stats_of_rate(const double *seconds, int n, double work, bench_stats *s);

#endif
