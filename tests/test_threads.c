/* test_threads.c: thread counts follow the cores other processes leave free. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linattn.h"
#include "../engine/attention.h"
#include "../engine/internal.h"

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* n processes spinning until killed */
static void spin(pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        cr_assert(pids[i] >= 0);
        if (pids[i] == 0) {
            volatile unsigned long x = 0;
            for (;;)
                x++;
        }
    }
}

static void stop(pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
    }
}

/* The answer after `ms` of calls (a sample every 200 ms), at most `max`. */
static int free_after(int max, long ms)
{
    for (long waited = 0; waited < ms; waited += 50) {
        linattn_threads_free(max);
        sleep_ms(50);
    }
    return linattn_threads_free(max);
}

/* The rule on known loads: a core is given up once others use more than a
 * quarter of it, never fewer than one thread, never more than max. */
Test(threads, rule_on_known_loads)
{
    static const struct { double others; long cpus; int max, want; } cases[] = {
        {0.0, 2, 2, 2},  {0.25, 2, 2, 2}, {0.26, 2, 2, 1}, {1.0, 2, 2, 1},  {1.3, 2, 2, 1},
        {2.0, 2, 2, 1},  {0.5, 8, 8, 7},  {1.2, 8, 8, 7},  {1.3, 8, 8, 6},  {3.0, 8, 4, 4},
        {7.9, 8, 8, 1},  {0.0, 1, 4, 1},  {0.0, 16, 4, 4}, {0.1, 4, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(linattn_threads_for_load(cases[i].others, cases[i].cpus, cases[i].max),
                     cases[i].want, "others %.2f cpus %ld max %d", cases[i].others,
                     cases[i].cpus, cases[i].max);
}

/* Every CPU but one spinning in other processes: an auto call gets one
 * thread within a sample or two, and the measured load is about theirs.
 * Once they stop, the load measured drops by about as much, unless the
 * machine is busy with something else (then the drop is not asserted: the
 * rule above covers the answer). */
Test(threads, follows_busy_cores)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cr_assert(cpus >= 1);
    if (cpus == 1) { /* nothing to give up: one thread whatever the load */
        cr_assert_eq(linattn_threads_free(4), 1);
        return;
    }
    int n = (int)(cpus - 1 < 63 ? cpus - 1 : 63);
    pid_t pids[63];
    spin(pids, n);
    int busy = free_after((int)cpus, 700);
    double load_busy = linattn_threads_others_load();
    /* an explicit count is a ceiling: asking for every CPU gets the free one */
    int explicit_busy = attn_threads((int)cpus);
    stop(pids, n);
    cr_expect_eq(explicit_busy, 1, "asked for %ld threads beside %d spinning: %d", cpus, n,
                 explicit_busy);
    cr_expect_eq(busy, 1, "with %d of %ld CPUs spinning elsewhere: %d threads (others' load %.2f)",
                 n, cpus, busy, load_busy);
    cr_expect(load_busy >= n - 0.5, "others' load %.2f with %d spinning", load_busy, n);
    int idle = free_after((int)cpus, 700);
    double load_idle = linattn_threads_others_load();
    if (load_busy < cpus - 0.5) /* the machine had room besides them: they were seen leaving */
        cr_expect(load_idle <= load_busy - (n - 0.5),
                  "others' load %.2f after they stopped (was %.2f)", load_idle, load_busy);
    cr_expect(idle >= 1 && idle <= cpus, "%d", idle);
    /* the answer never passes max */
    cr_expect_eq(linattn_threads_free(1), 1);
}

/* LINATTN_THREADS_FOLLOW=0: the default is the OpenMP default and an explicit
 * count is used as given, loaded or not. */
Test(threads, follow_can_be_turned_off)
{
    setenv("LINATTN_THREADS_FOLLOW", "0", 1);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = (int)(cpus < 63 ? cpus : 63);
    pid_t pids[63];
    spin(pids, n);
    int t = free_after(8, 500);
    int explicit_t = attn_threads(3);
    stop(pids, n);
    cr_expect_eq(t, 8, "%d", t);
    cr_expect_eq(explicit_t, linattn_has_openmp() ? 3 : 1, "%d", explicit_t);
    cr_expect(linattn_threads_others_load() < 0, "nothing measured");
}
