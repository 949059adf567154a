/* threads.c: how many threads a call uses now: the cores other processes leave free, up to the count it asked for. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Why: OpenMP's fork-join regions wait at every barrier for their slowest
 * thread. When another process holds a core, the thread sharing that core
 * runs half the time, and each of the ~60 regions of a model chunk waits
 * out the other process's time slice: on 2 cores beside one busy loop, 2
 * threads prefilled 42-48 tokens/s against 1,473-2,755 with one thread.
 * So a call uses the cores the others leave free, up to the count it
 * asked for (an explicit count is a ceiling too; the default, 0, is up to
 * the OpenMP default), as measured over the last interval:
 *
 *   others = (busy CPU time of the machine - this process's CPU time) / interval
 *
 * from /proc/stat (all CPUs' busy jiffies, steal included: another VM on
 * our core counts as busy) and CLOCK_PROCESS_CPUTIME_ID, so this process's
 * own threads, spinning ones included, never count as load. A core is
 * given up once the others use more than OTHERS_SLACK of one: a thread
 * that shares its core stalls every barrier even when the sharer is light.
 * Before the first interval (a process's first call) the instantaneous
 * count of runnable tasks stands in. Sampled at most every INTERVAL_NS,
 * so a call costs one clock read; a sample costs one read of /proc/stat
 * (about 10 us). Without /proc (or with LINATTN_THREADS_FOLLOW=0 in the
 * environment) a count is used as given and the default is the OpenMP
 * default. */
#define INTERVAL_NS 200000000LL /* 200 ms: 20 jiffies a CPU at USER_HZ 100 */
/* 1/4 core: above the jiffies' rounding over an interval (2 x 1/20 of a
 * core per CPU, measured idle: |others| <= 0.07 on 2 busy cores) */
#define OTHERS_SLACK 0.25

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int busy_cores_x100 = -1; /* others' load in 1/100 cores; -1: not known */
static atomic_llong next_sample_ns;
static long long last_wall_ns, last_self_ns;
static unsigned long long last_busy_jiffies;
static int disabled = -1;

static long long clock_ns(clockid_t id)
{
    struct timespec t;
    if (clock_gettime(id, &t) != 0)
        return -1;
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The machine's busy jiffies (all CPUs: everything but idle and iowait)
 * and the runnable tasks now; 0 on success. */
static int read_proc_stat(unsigned long long *busy, int *running)
{
    char buf[4096];
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    if (strncmp(buf, "cpu ", 4) != 0)
        return -1;
    unsigned long long f[8] = {0};
    char *p = buf + 4;
    for (int i = 0; i < 8; i++) { /* user nice system idle iowait irq softirq steal */
        char *end;
        f[i] = strtoull(p, &end, 10);
        if (end == p)
            return -1;
        p = end;
    }
    *busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    const char *r = strstr(buf, "\nprocs_running ");
    *running = r ? atoi(r + 15) : -1;
    return 0;
}

/* Under lock: a new sample, and the others' load from the last one. */
static void sample(long long wall)
{
    unsigned long long busy;
    int running;
    long long self = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    if (self < 0 || read_proc_stat(&busy, &running) != 0) {
        disabled = 1;
        return;
    }
    if (last_wall_ns > 0 && wall > last_wall_ns) {
        long hz = sysconf(_SC_CLK_TCK);
        double interval = (double)(wall - last_wall_ns) * 1e-9;
        double busy_s = (double)(busy - last_busy_jiffies) / (double)(hz > 0 ? hz : 100);
        double self_s = (double)(self - last_self_ns) * 1e-9;
        double others = (busy_s - self_s) / interval;
        atomic_store(&busy_cores_x100, others > 0 ? (int)(others * 100.0 + 0.5) : 0);
    } else if (running > 0) {
        /* first sample: the runnable tasks besides the caller */
        atomic_store(&busy_cores_x100, (running - 1) * 100);
    }
    last_wall_ns = wall;
    last_self_ns = self;
    last_busy_jiffies = busy;
}

int linattn_threads_free(int max)
{
    if (max <= 1)
        return 1;
    long long wall = clock_ns(CLOCK_MONOTONIC);
    if (wall >= atomic_load(&next_sample_ns) && pthread_mutex_trylock(&lock) == 0) {
        if (disabled < 0) {
            const char *e = getenv("LINATTN_THREADS_FOLLOW");
            disabled = e && !strcmp(e, "0");
        }
        if (!disabled)
            sample(wall);
        atomic_store(&next_sample_ns, wall + INTERVAL_NS);
        pthread_mutex_unlock(&lock);
    }
    int load = atomic_load(&busy_cores_x100);
    if (load < 0)
        return max;
    return linattn_threads_for_load((double)load / 100.0, sysconf(_SC_NPROCESSORS_ONLN), max);
}

int linattn_threads_for_load(double others, long cpus, int max)
{
    if (cpus < 1 || max < 1)
        return max < 1 ? 1 : max;
    /* cores the others take: each one they use more than OTHERS_SLACK of */
    long taken = others <= OTHERS_SLACK ? 0 : (long)(others - OTHERS_SLACK) + 1;
    long free_cores = cpus - taken;
    if (free_cores < 1)
        free_cores = 1;
    return free_cores < max ? (int)free_cores : max;
}

double linattn_threads_others_load(void)
{
    int load = atomic_load(&busy_cores_x100);
    return load < 0 ? -1.0 : (double)load / 100.0;
}
