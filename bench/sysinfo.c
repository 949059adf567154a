/* sysinfo.c: reads /proc/cpuinfo, /sys caches, uname and the environment for the header of every output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_build.h"
#include "revision.h"
#include "sysinfo.h"

/* The value of the first "key : value" line of /proc/cpuinfo, or "". */
static void cpuinfo(const char *key, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) || (line[klen] != ' ' && line[klen] != '\t' && line[klen] != ':'))
            continue;
        const char *v = strchr(line, ':');
        if (!v)
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        snprintf(out, n, "%s", v);
        out[strcspn(out, "\n")] = 0;
        break;
    }
    fclose(f);
}

/* "48K", "1024K", "32M" from /sys as bytes. */
static size_t sys_size(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[64] = "";
    size_t v = 0;
    if (fgets(buf, sizeof buf, f)) {
        char *end;
        v = (size_t)strtoull(buf, &end, 10);
        if (*end == 'K')
            v <<= 10;
        else if (*end == 'M')
            v <<= 20;
        else if (*end == 'G')
            v <<= 30;
    }
    fclose(f);
    return v;
}

static void sys_text(const char *path, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (!fgets(out, (int)n, f))
        out[0] = 0;
    out[strcspn(out, "\n")] = 0;
    fclose(f);
}

void bench_caches_get(bench_caches *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < 16; i++) {
        char path[128], type[32], level[8];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        sys_text(path, level, sizeof level);
        if (!level[0])
            break;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        sys_text(path, type, sizeof type);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        size_t size = sys_size(path);
        if (!strcmp(level, "1") && !strcmp(type, "Data"))
            c->l1d = size;
        else if (!strcmp(level, "1") && !strcmp(type, "Instruction"))
            c->l1i = size;
        else if (!strcmp(level, "2"))
            c->l2 = size;
        else if (!strcmp(level, "3"))
            c->l3 = size;
    }
    /* sysconf as a fallback only: glibc's L3 figure may be the sum over
     * every cache of the machine (384 MiB where /sys says 32 MiB) */
#ifdef _SC_LEVEL1_DCACHE_SIZE
    long v;
    if (!c->l1d && (v = sysconf(_SC_LEVEL1_DCACHE_SIZE)) > 0)
        c->l1d = (size_t)v;
    if (!c->l1i && (v = sysconf(_SC_LEVEL1_ICACHE_SIZE)) > 0)
        c->l1i = (size_t)v;
    if (!c->l2 && (v = sysconf(_SC_LEVEL2_CACHE_SIZE)) > 0)
        c->l2 = (size_t)v;
    if (!c->l3 && (v = sysconf(_SC_LEVEL3_CACHE_SIZE)) > 0)
        c->l3 = (size_t)v;
#endif
}

static void size_text(char *b, size_t n, size_t bytes)
{
    if (!bytes)
        snprintf(b, n, "?");
    else if (bytes % (1u << 20) == 0)
        snprintf(b, n, "%zu MiB", bytes >> 20);
    else
        snprintf(b, n, "%zu KiB", bytes >> 10);
}

void bench_sysinfo(bench_header *h, const bench_caches *c, int argc, char **argv)
{
    char buf[512], a[64], b[64], d[64], e[64];
    bench_header_str(h, "program", "linattn-bench");
    bench_header_str(h, "version", linattn_version());
    bench_header_str(h, "revision", LINATTN_BENCH_REVISION);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    bench_header_str(h, "date", buf);
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < argc && used < sizeof buf; i++) {
        int w = snprintf(buf + used, sizeof buf - used, "%s%s", i ? " " : "", argv[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    bench_header_str(h, "command", buf);

    cpuinfo("model name", buf, sizeof buf);
    if (!buf[0])
        cpuinfo("Model", buf, sizeof buf); /* some aarch64 kernels */
    bench_header_str(h, "cpu_model", buf[0] ? buf : "unknown");
    cpuinfo("cpu family", a, sizeof a);
    if (a[0]) {
        cpuinfo("model", b, sizeof b);
        cpuinfo("stepping", d, sizeof d);
        snprintf(buf, sizeof buf, "family %s model %s stepping %s", a, b, d);
    } else {
        cpuinfo("CPU implementer", a, sizeof a);
        cpuinfo("CPU part", b, sizeof b);
        cpuinfo("CPU variant", d, sizeof d);
        cpuinfo("CPU revision", e, sizeof e);
        snprintf(buf, sizeof buf, "implementer %s part %s variant %s revision %s", a, b, d, e);
    }
    bench_header_str(h, "cpu_family", buf);
    bench_header_str(h, "cpu_features", linattn_cpu_features_str());
    bench_header_num(h, "cpus_online", (double)sysconf(_SC_NPROCESSORS_ONLN));

    size_text(a, sizeof a, c->l1d);
    size_text(b, sizeof b, c->l1i);
    size_text(d, sizeof d, c->l2);
    size_text(e, sizeof e, c->l3);
    snprintf(buf, sizeof buf, "L1d %s, L1i %s, L2 %s, L3 %s (cpu0)", a, b, d, e);
    bench_header_str(h, "caches", buf);
    bench_header_num(h, "l1d_bytes", (double)c->l1d);
    bench_header_num(h, "l2_bytes", (double)c->l2);
    bench_header_num(h, "l3_bytes", (double)c->l3);

    bench_header_str(h, "compiler", LINATTN_BENCH_COMPILER);
    bench_header_str(h, "flags", LINATTN_BENCH_FLAGS);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(buf, sizeof buf, "%s %s %s", u.sysname, u.release, u.machine);
        bench_header_str(h, "os", buf);
    }

    bench_header_str(h, "openmp", linattn_has_openmp() ? "yes" : "no");
    bench_header_num(h, "omp_threads", linattn_max_threads());
    const char *wait = getenv("OMP_WAIT_POLICY");
    bench_header_str(h, "omp_wait_policy", wait && *wait ? wait : "default");
    const char *follow = getenv("LINATTN_THREADS_FOLLOW");
    /* the rule of threads.c: only "0" turns it off */
    snprintf(buf, sizeof buf, "%s (LINATTN_THREADS_FOLLOW=%s): auto threads %s",
             follow && !strcmp(follow, "0") ? "off" : "on", follow ? follow : "unset",
             follow && !strcmp(follow, "0") ? "are the OpenMP default"
                                            : "follow the cores other processes leave free");
    bench_header_str(h, "threads_follow", buf);
}
