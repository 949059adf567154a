/* stats.c: median, min, max, mean and coefficient of variation of repeated timings. */
#include <math.h>
#include <stdlib.h>

#include "stats.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void bench_stats_of(const double *x, int n, bench_stats *s)
{
    s->runs = 0;
    s->median = s->min = s->max = s->mean = s->sd = s->cv = NAN;
    s->noisy = 0;
    double *sorted = n > 0 ? malloc((size_t)n * sizeof *sorted) : NULL;
    if (!sorted)
        return;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        sorted[i] = x[i];
        sum += x[i];
    }
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    s->runs = n;
    s->min = sorted[0];
    s->max = sorted[n - 1];
    s->median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    s->mean = sum / n;
    if (n >= 2) {
        /* two passes: the spread of timings is small against their mean,
         * where the one-pass formula loses every digit to cancellation */
        double ss = 0;
        for (int i = 0; i < n; i++)
            ss += (x[i] - s->mean) * (x[i] - s->mean);
        s->sd = sqrt(ss / (n - 1));
        s->cv = s->mean != 0 ? s->sd / fabs(s->mean) : NAN;
        s->noisy = s->cv > BENCH_NOISY_CV;
    }
    free(sorted);
}

void bench_stats_of_rate(const double *seconds, int n, double work, bench_stats *s)
{
    double *rate = n > 0 ? malloc((size_t)n * sizeof *rate) : NULL;
    if (!rate) {
        bench_stats_of(seconds, 0, s);
        return;
    }
    for (int i = 0; i < n; i++)
        rate[i] = seconds[i] > 0 ? work / seconds[i] : INFINITY;
    bench_stats_of(rate, n, s);
    free(rate);
}
