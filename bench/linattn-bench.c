/* linattn-bench.c: runs the suites (peak, bandwidth, kernels, ops, model) per ISA and thread count; table, JSON, CSV, SVG, --compare. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "bench_build.h"
#include "report.h"
#include "svg.h"
#include "sysinfo.h"

static const char usage[] =
    "usage: linattn-bench [--suite LIST] [--isa LIST] [--threads LIST] [--quick]\n"
    "                     [--filter NAME] [--lengths LIST] [--config FILE]...\n"
    "                     [--repeat N] [--min-time S] [--peak GFLOPS] [--cpu-time] [--busy N]\n"
    "                     [--cpu N|auto|any]\n"
    "                     [--json FILE] [--csv FILE] [--plot FILE.svg] [--list]\n"
    "       linattn-bench --compare OLD.json NEW.json\n"
    "\n"
    "Runs each workload with each ISA this machine has (and scalar) at each thread\n"
    "count, and prints the median, min..max, coefficient of variation and runs of\n"
    "every figure (cv above 10%: marked '!', noisy), against the FMA peak and the\n"
    "memory bandwidth measured in the same run.\n"
    "\n"
    "  --suite LIST      peak,bandwidth,kernels,ops,model (default: all). peak and\n"
    "                    bandwidth also run when a suite needs their denominators\n"
    "  --isa LIST        all (default; LINATTN_ISA when set), auto, or names:\n"
    "                    scalar,avx2,avx512,neon. An ISA the CPU lacks is an error\n"
    "  --threads LIST    thread counts, N or auto (the library's default, which\n"
    "                    follows the cores other processes leave free); default 1\n"
    "                    and the OpenMP default. Single-thread workloads stay at 1\n"
    "  --quick           small sizes, 3 runs a figure (fewer past a second), the\n"
    "                    model suite at one thread: the whole run in under a\n"
    "                    minute on 2 cores (CI)\n"
    "  --filter NAME     only workloads whose name contains NAME, or one of a comma-\n"
    "                    separated list of them (see --list)\n"
    "  --lengths LIST    decode contexts of the ops suite (e.g. 1k,4k,64k; default\n"
    "                    1k..64k by powers of 2, --quick 1k,4k,16k,64k; linear\n"
    "                    also at 1M unless given)\n"
    "  --config FILE     a model for the model suite (repeatable; default\n"
    "                    configs/bench-linear.ini, bench-softmax.ini and bench-hybrid.ini)\n"
    "  --repeat N        runs a figure (default 9, --quick 3)\n"
    "  --min-time S      repeat a figure until its runs add up to S seconds\n"
    "  --peak GFLOPS     FMA peak of one core for every ISA (x threads), instead of\n"
    "                    the peaks measured at the start of the run\n"
    "  --cpu N|auto|any  the CPU single-thread figures (and the one-core peaks and\n"
    "                    bandwidths) run on. auto (default; any with --busy): the\n"
    "                    one that runs a small softmax prefill fastest, probed at\n"
    "                    the start (a vCPU of a shared VM can run real kernels\n"
    "                    10-30% slower than its sibling at the same FMA peak).\n"
    "                    Figures at more threads run on every CPU\n"
    "  --cpu-time        time with the process's CPU clock instead of the wall\n"
    "                    clock: steadier on a busy machine, but with N threads it\n"
    "                    sums them (and their spinning), so read it for 1\n"
    "  --busy N          run N busy-loop processes beside the workloads (a loaded\n"
    "                    machine: compare --threads 1,2,auto)\n"
    "  --json FILE       every row and the header as JSON\n"
    "  --csv FILE        the same as CSV, the header as '# key: value' lines\n"
    "  --plot FILE.svg   decode us/token against context (log-log) and prefill\n"
    "                    GFLOP/s against the peak, drawn by this program\n"
    "  --compare OLD NEW speed-up of every workload of NEW.json over OLD.json\n"
    "  --list            list the workloads and exit\n"
    "  -h, --help        this text\n"
    "\n"
    "Softmax GFLOP/s counts 2*H*L^2*d per call, the full square as ggml does (for\n"
    "causal that is the work actually done: half of QK^T plus half of PV).\n";

/* ------------------------------------------------------------------------ */
/* Parsing                                                                   */
/* ------------------------------------------------------------------------ */

static int parse_threads(const char *text, int *list, int max)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long v;
        if (!strncmp(p, "auto", 4)) {
            v = 0;
            end = (char *)p + 4;
        } else {
            v = strtol(p, &end, 10);
            if (end == p || v < 1 || v > 1024)
                return -1;
        }
        if (*end && *end != ',')
            return -1;
        if (n == max)
            return -1;
        list[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return n;
}

/* "1k,4k,1M,1000" -> 1024, 4096, 1048576, 1000 */
static int parse_lengths(const char *text, long *list, int max)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1)
            return -1;
        if (*end == 'k' || *end == 'K')
            v *= 1024, end++;
        else if (*end == 'M' || *end == 'm')
            v *= 1048576, end++;
        if ((*end && *end != ',') || n == max || v > (1L << 30))
            return -1;
        list[n++] = v;
        p = *end ? end + 1 : end;
    }
    return n;
}

static int parse_suites(const char *text, unsigned *out)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"peak", SUITE_PEAK},   {"bandwidth", SUITE_BANDWIDTH}, {"kernels", SUITE_KERNELS},
                 {"ops", SUITE_OPS},     {"model", SUITE_MODEL},         {"all", 0x1f}};
    *out = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == len && !strncmp(p, names[i].name, len)) {
                *out |= names[i].bit;
                found = 1;
            }
        if (!found)
            return -1;
        p += len + (p[len] == ',');
    }
    return *out ? 0 : -1;
}

/* "all", "auto" or a list of ISA names; each must run on this CPU. */
static int parse_isas(const char *text, bench_plan *p, const char *from)
{
    p->n_isas = 0;
    if (!strcmp(text, "all")) {
        for (int i = LINATTN_ISA_SCALAR; i < LINATTN_ISA_COUNT; i++)
            if (linattn_set_isa((linattn_isa)i) == LINATTN_OK)
                p->isas[p->n_isas++] = (linattn_isa)i;
        return 0;
    }
    const char *s = text;
    while (*s) {
        char name[32];
        size_t len = strcspn(s, ",");
        snprintf(name, sizeof name, "%.*s", (int)(len < 31 ? len : 31), s);
        linattn_isa isa;
        if (linattn_isa_parse(name, &isa) != LINATTN_OK || linattn_set_isa(isa) != LINATTN_OK) {
            fprintf(stderr, "linattn-bench: %s: %s\n", from, linattn_last_error());
            return -1;
        }
        linattn_get_isa(&isa, NULL); /* auto -> the ISA it chose */
        int seen = 0;
        for (int i = 0; i < p->n_isas; i++)
            seen |= p->isas[i] == isa;
        if (!seen && p->n_isas < LINATTN_ISA_COUNT)
            p->isas[p->n_isas++] = isa;
        s += len + (s[len] == ',');
    }
    return p->n_isas ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Busy-loop neighbours                                                      */
/* ------------------------------------------------------------------------ */

/* n child processes spinning until this one exits (PR_SET_PDEATHSIG: even
 * when it is killed). */
static int start_busy(int n)
{
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("linattn-bench: fork");
            return -1;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() == 1)
                _exit(0);
            volatile unsigned long spin = 0;
            for (;;)
                spin++;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Output files                                                              */
/* ------------------------------------------------------------------------ */

enum out_kind { OUT_JSON, OUT_CSV, OUT_SVG };

/* Written beside the target and renamed over it: a reader never sees half
 * a file, and a failed run leaves the old one. */
static int write_output(const char *path, enum out_kind kind, const bench_header *h)
{
    size_t n;
    const bench_row *rows = bench_rows(&n);
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        fprintf(stderr, "linattn-bench: %s: path too long\n", path);
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "linattn-bench: %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    int rc;
    if (kind == OUT_JSON) {
        rc = bench_write_json(f, h, rows, n);
    } else if (kind == OUT_CSV) {
        rc = bench_write_csv(f, h, rows, n);
    } else {
        char title[320], sub[320];
        snprintf(title, sizeof title, "linattn-bench on %s (%s)", bench_header_get(h, "cpu_model"),
                 bench_header_get(h, "cpu_family"));
        snprintf(sub, sizeof sub, "revision %s, %s, %s run, %s, %s",
                 bench_header_get(h, "revision"), bench_header_get(h, "date"),
                 bench_header_get(h, "mode"), bench_header_get(h, "compiler"),
                 bench_header_get(h, "caches"));
        rc = bench_svg_write(f, rows, n, title, sub);
    }
    if (fclose(f) != 0)
        rc = -1;
    if (rc != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "linattn-bench: %s: %s\n", path, rc ? "write failed" : strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* --compare                                                                 */
/* ------------------------------------------------------------------------ */

static char *read_text(const char *path)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) {
        fprintf(stderr, "linattn-bench: %s: %s\n", path,
                !f ? strerror(errno) : "not a regular file of at most 64 MiB");
        if (f)
            fclose(f);
        return NULL;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!text || got != (size_t)st.st_size) {
        fprintf(stderr, "linattn-bench: %s: read failed\n", path);
        free(text);
        return NULL;
    }
    text[got] = 0;
    return text;
}

static int load_doc(const char *path, bench_doc *doc)
{
    char *text = read_text(path), err[160];
    if (!text)
        return -1;
    int rc = bench_read_json(text, doc, err, sizeof err);
    free(text);
    if (rc != 0)
        fprintf(stderr, "linattn-bench: %s: %s\n", path, err);
    return rc;
}

static int compare(const char *old_path, const char *new_path)
{
    bench_doc a, b;
    if (load_doc(old_path, &a) != 0)
        return 1;
    if (load_doc(new_path, &b) != 0) {
        bench_doc_free(&a);
        return 1;
    }
    static const char *const keys[] = {"revision", "date", "cpu_model", "cpu_family", "compiler",
                                       "flags", "mode", "isas", "threads", "omp_wait_policy"};
    printf("%-16s %-40s %s\n", "", "old", "new");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *x = bench_header_get(&a.h, keys[i]), *y = bench_header_get(&b.h, keys[i]);
        printf("%-16s %-40.40s %s%s\n", keys[i], x, y, strcmp(x, y) ? "" : " (same)");
    }
    printf("\n%-30s %-8s %4s %-8s %10s %10s %8s  %s\n", "workload", "isa", "thr", "unit", "old",
           "new", "speed-up", "(> 1: new is faster; '!' either side noisy; '*' beyond 2 cv)");
    double log_sum = 0;
    int matched = 0;
    for (size_t j = 0; j < b.n; j++) {
        const bench_row *y = &b.rows[j], *x = NULL;
        for (size_t i = 0; i < a.n && !x; i++)
            if (!strcmp(a.rows[i].suite, y->suite) && !strcmp(a.rows[i].name, y->name) &&
                !strcmp(a.rows[i].isa, y->isa) && a.rows[i].threads == y->threads &&
                !strcmp(a.rows[i].unit, y->unit))
                x = &a.rows[i];
        char thr[8];
        snprintf(thr, sizeof thr, y->threads ? "%d" : "auto", y->threads);
        if (!x) {
            printf("%-30s %-8s %4s %-8s %10s %10.4g %8s\n", y->name, y->isa, thr, y->unit, "-",
                   y->st.median, "new");
            continue;
        }
        double ratio = bench_unit_higher_better(y->unit) ? y->st.median / x->st.median
                                                         : x->st.median / y->st.median;
        double cv = fmax(isfinite(x->st.cv) ? x->st.cv : 0, isfinite(y->st.cv) ? y->st.cv : 0);
        int beyond = isfinite(ratio) && fabs(ratio - 1) > 2 * cv;
        printf("%-30s %-8s %4s %-8s %10.4g %10.4g %7.3fx%s%s\n", y->name, y->isa, thr, y->unit,
               x->st.median, y->st.median, ratio, x->st.noisy || y->st.noisy ? "!" : "",
               beyond ? "*" : "");
        if (isfinite(ratio) && ratio > 0 && strcmp(y->suite, "peak") &&
            strcmp(y->suite, "bandwidth")) {
            log_sum += log(ratio);
            matched++;
        }
    }
    for (size_t i = 0; i < a.n; i++) {
        int found = 0;
        for (size_t j = 0; j < b.n && !found; j++)
            found = !strcmp(a.rows[i].suite, b.rows[j].suite) &&
                    !strcmp(a.rows[i].name, b.rows[j].name) && !strcmp(a.rows[i].isa, b.rows[j].isa) &&
                    a.rows[i].threads == b.rows[j].threads && !strcmp(a.rows[i].unit, b.rows[j].unit);
        if (!found)
            printf("%-30s %-8s %4d %-8s %10.4g %10s %8s\n", a.rows[i].name, a.rows[i].isa,
                   a.rows[i].threads, a.rows[i].unit, a.rows[i].st.median, "-", "gone");
    }
    if (matched)
        printf("\ngeometric mean speed-up over %d workloads (peak and bandwidth left out): %.3fx\n",
               matched, exp(log_sum / matched));
    /* a ratio across machines measures the machines as much as the code */
    static const char *const same[] = {"cpu_model", "isas"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (strcmp(bench_header_get(&a.h, same[i]), bench_header_get(&b.h, same[i])))
            fprintf(stderr,
                    "linattn-bench: warning: the two runs differ in %s ('%s' against '%s'): "
                    "their ratios compare the machines too, not only the code\n",
                    same[i], bench_header_get(&a.h, same[i]), bench_header_get(&b.h, same[i]));
    bench_doc_free(&a);
    bench_doc_free(&b);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* main                                                                      */
/* ------------------------------------------------------------------------ */

static void join_isas(const linattn_isa *isas, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? "," : "", linattn_isa_name(isas[i]));
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static void plan_header(bench_header *h, const bench_plan *p, const char *thread_text, int busy)
{
    char buf[256];
    bench_header_str(h, "mode", p->quick ? "quick" : "full");
    static const char *const suite_names[] = {"peak", "bandwidth", "kernels", "ops", "model"};
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < 5; i++)
        if (p->suites & (1u << i))
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", used ? "," : "",
                                     suite_names[i]);
    bench_header_list(h, "suites", buf);
    join_isas(p->isas, p->n_isas, buf, sizeof buf);
    bench_header_list(h, "isas", buf);
    linattn_isa all[LINATTN_ISA_COUNT];
    int n_all = 0;
    for (int i = LINATTN_ISA_SCALAR; i < LINATTN_ISA_COUNT; i++)
        if (linattn_set_isa((linattn_isa)i) == LINATTN_OK)
            all[n_all++] = (linattn_isa)i;
    join_isas(all, n_all, buf, sizeof buf);
    bench_header_list(h, "isas_cpu", buf);
    bench_header_list(h, "threads", thread_text);
    used = 0;
    buf[0] = 0;
    for (int i = 0; i < p->n_lengths && used < sizeof buf; i++) {
        char c[24];
        bench_count_label(c, sizeof c, p->lengths[i]);
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? "," : "", c);
    }
    bench_header_list(h, "lengths", buf);
    used = 0;
    buf[0] = 0;
    for (int i = 0; i < p->n_configs && used < sizeof buf; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? "," : "", p->configs[i]);
    bench_header_list(h, "configs", buf);
    bench_header_num(h, "repeat", p->repeat);
    bench_header_num(h, "min_time", p->min_time);
    bench_header_num(h, "budget", p->budget);
    bench_header_str(h, "clock", p->clock == CLOCK_MONOTONIC ? "wall" : "process-cpu");
    bench_header_num(h, "busy", busy);
    if (p->peak_override > 0)
        snprintf(buf, sizeof buf, "--peak %g GFLOP/s a core", p->peak_override);
    else
        snprintf(buf, sizeof buf, "measured (FMA loop in registers, best run)");
    bench_header_str(h, "peak_source", buf);
    bench_header_str(h, "filter", p->filter ? p->filter : "");
}

static int run(int argc, char **argv)
{
    enum { O_SUITE = 256, O_LENGTHS, O_CONFIG, O_REPEAT, O_MIN_TIME, O_JSON, O_CSV, O_PLOT, O_COMPARE, O_CPU };
    static const struct option opts[] = {
        {"isa", required_argument, 0, 'i'},      {"threads", required_argument, 0, 't'},
        {"quick", no_argument, 0, 'q'},          {"filter", required_argument, 0, 'f'},
        {"peak", required_argument, 0, 'p'},     {"list", no_argument, 0, 'l'},
        {"cpu-time", no_argument, 0, 'c'},       {"busy", required_argument, 0, 'b'},
        {"suite", required_argument, 0, O_SUITE}, {"lengths", required_argument, 0, O_LENGTHS},
        {"config", required_argument, 0, O_CONFIG}, {"repeat", required_argument, 0, O_REPEAT},
        {"min-time", required_argument, 0, O_MIN_TIME}, {"json", required_argument, 0, O_JSON},
        {"csv", required_argument, 0, O_CSV},    {"plot", required_argument, 0, O_PLOT},
        {"compare", required_argument, 0, O_COMPARE}, {"cpu", required_argument, 0, O_CPU},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    static bench_plan p;
    p.suites = 0x1f;
    p.clock = CLOCK_MONOTONIC;
    const char *cpu_text = NULL;
    const char *isa_text = NULL, *threads_text = NULL, *json = NULL, *csv = NULL, *plot = NULL;
    const char *compare_old = NULL;
    int list_only = 0, busy = 0, repeat = 0;
    double min_time = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'i': isa_text = optarg; break;
        case 't':
            threads_text = optarg;
            p.n_threads = parse_threads(optarg, p.threads, BENCH_MAX_THREADS);
            if (p.n_threads <= 0) {
                fprintf(stderr, "linattn-bench: --threads: expected N|auto[,...] (at most %d), got '%s'\n",
                        BENCH_MAX_THREADS, optarg);
                return 1;
            }
            break;
        case 'q': p.quick = 1; break;
        case 'f': p.filter = optarg; break;
        case 'p':
            p.peak_override = strtod(optarg, &end);
            if (end == optarg || *end || !(p.peak_override > 0) || !isfinite(p.peak_override)) {
                fprintf(stderr, "linattn-bench: --peak: expected a positive number, got '%s'\n", optarg);
                return 1;
            }
            break;
        case 'l': list_only = 1; break;
        case 'b': {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 0 || v > 64) {
                fprintf(stderr, "linattn-bench: --busy: expected 0..64 processes, got '%s'\n", optarg);
                return 1;
            }
            busy = (int)v;
            break;
        }
        case 'c': p.clock = CLOCK_PROCESS_CPUTIME_ID; break;
        case O_CPU: cpu_text = optarg; break;
        case O_SUITE:
            if (parse_suites(optarg, &p.suites) != 0) {
                fprintf(stderr, "linattn-bench: --suite: expected peak,bandwidth,kernels,ops,model or all, got '%s'\n",
                        optarg);
                return 1;
            }
            break;
        case O_LENGTHS:
            p.n_lengths = parse_lengths(optarg, p.lengths, BENCH_MAX_LENGTHS);
            if (p.n_lengths <= 0) {
                fprintf(stderr, "linattn-bench: --lengths: expected N[k|M][,...] (at most %d, up to 1024M), got '%s'\n",
                        BENCH_MAX_LENGTHS, optarg);
                return 1;
            }
            p.lengths_given = 1;
            break;
        case O_CONFIG:
            if (p.n_configs == BENCH_MAX_CONFIGS) {
                fprintf(stderr, "linattn-bench: --config: at most %d\n", BENCH_MAX_CONFIGS);
                return 1;
            }
            p.configs[p.n_configs++] = optarg;
            break;
        case O_REPEAT: {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > BENCH_MAX_SAMPLES) {
                fprintf(stderr, "linattn-bench: --repeat: expected 1..%d, got '%s'\n", BENCH_MAX_SAMPLES, optarg);
                return 1;
            }
            repeat = (int)v;
            break;
        }
        case O_MIN_TIME:
            min_time = strtod(optarg, &end);
            if (end == optarg || *end || !(min_time >= 0) || min_time > 3600) {
                fprintf(stderr, "linattn-bench: --min-time: expected 0..3600 seconds, got '%s'\n", optarg);
                return 1;
            }
            break;
        case O_JSON: json = optarg; break;
        case O_CSV: csv = optarg; break;
        case O_PLOT: plot = optarg; break;
        case O_COMPARE: compare_old = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 1;
        }
    }
    if (compare_old) {
        if (plot || json || csv) {
            fprintf(stderr, "linattn-bench: --compare prints a table only: --%s draws or writes one "
                            "run (give it to the run itself)\n",
                    plot ? "plot" : json ? "json" : "csv");
            return 1;
        }
        if (optind + 1 != argc) {
            fprintf(stderr, "linattn-bench: --compare: expected OLD.json NEW.json\n");
            return 1;
        }
        return compare(compare_old, argv[optind]);
    }
    if (optind < argc) {
        fprintf(stderr, "linattn-bench: unexpected argument '%s'\n", argv[optind]);
        return 1;
    }

    /* the plan */
    const char *env_isa = getenv("LINATTN_ISA");
    if (parse_isas(isa_text ? isa_text : env_isa && *env_isa ? env_isa : "all", &p,
                   isa_text ? "--isa" : env_isa && *env_isa ? "LINATTN_ISA" : "isa") != 0)
        return 1;
    char default_threads[32];
    if (!p.n_threads) {
        int most = linattn_max_threads();
        p.threads[p.n_threads++] = 1;
        if (most > 1)
            p.threads[p.n_threads++] = most;
        snprintf(default_threads, sizeof default_threads, most > 1 ? "1,%d" : "1", most);
        threads_text = default_threads;
    }
    if (!p.n_lengths) {
        static const long quick[] = {1024, 4096, 16384, 65536};
        if (p.quick)
            for (size_t i = 0; i < sizeof quick / sizeof quick[0]; i++)
                p.lengths[p.n_lengths++] = quick[i];
        else
            for (long l = 1024; l <= 65536; l *= 2)
                p.lengths[p.n_lengths++] = l;
    }
    static char default_configs[3][4096];
    if (!p.n_configs) {
        /* the source tree's, else the installed ones (else the model suite
         * builds the same shape in) */
        struct stat st;
        const char *dir = LINATTN_BENCH_CONFIG_DIR;
        snprintf(default_configs[0], sizeof default_configs[0], "%s/bench-linear.ini", dir);
        if (stat(default_configs[0], &st) != 0)
            dir = LINATTN_BENCH_DATA_CONFIG_DIR;
        snprintf(default_configs[0], sizeof default_configs[0], "%s/bench-linear.ini", dir);
        snprintf(default_configs[1], sizeof default_configs[1], "%s/bench-softmax.ini", dir);
        snprintf(default_configs[2], sizeof default_configs[2], "%s/bench-hybrid.ini", dir);
        for (int i = 0; i < 3; i++)
            p.configs[p.n_configs++] = default_configs[i];
        p.configs_default = 1;
    }
    p.repeat = repeat ? repeat : p.quick ? 3 : 9;
    p.min_time = min_time;
    p.budget = p.quick ? 1.0 : 4.0;
    /* the denominators every other suite divides by */
    if (p.suites & (SUITE_KERNELS | SUITE_OPS | SUITE_MODEL))
        p.suites |= SUITE_PEAK | (p.suites & (SUITE_OPS | SUITE_MODEL) ? SUITE_BANDWIDTH : 0);

    if (list_only) {
        if (p.suites & SUITE_PEAK)
            printf("%-30s peak     fp32 FMA loop in registers, per ISA and thread count\n", "fma-peak");
        if (p.suites & SUITE_BANDWIDTH)
            printf("%-30s bandwidth STREAM triad and memory read, 1 and N threads\n"
                   "%-30s bandwidth read bandwidth of one core from L1, L2, L3\n",
                   "triad read-dram", "read-l1 read-l2 read-l3");
        if (p.suites & SUITE_KERNELS)
            kernels_list(&p);
        if (p.suites & SUITE_OPS)
            ops_list(&p);
        if (p.suites & SUITE_MODEL)
            model_list(&p);
        return 0;
    }

    bench_caches_get(&bench_den.caches);
    static bench_header h;
    bench_sysinfo(&h, &bench_den.caches, argc, argv);
    plan_header(&h, &p, threads_text, busy);
    char pinned[768];
    if (bench_pin_setup(cpu_text ? cpu_text : busy ? "any" : "auto", pinned, sizeof pinned) != 0)
        return 1;
    bench_header_str(&h, "cpu_single_thread", pinned);
    if (busy && start_busy(busy) != 0)
        return 1;
    for (int i = 0; i < h.n; i++)
        printf("%-16s %s\n", h.kv[i].key, h.kv[i].value);
    printf("\n");

    size_t total = 0;
    total += p.suites & SUITE_PEAK ? peak_units(&p) : 0;
    total += p.suites & SUITE_BANDWIDTH ? bandwidth_units(&p) : 0;
    total += p.suites & SUITE_KERNELS ? kernels_units(&p) : 0;
    total += p.suites & SUITE_OPS ? ops_units(&p) : 0;
    total += p.suites & SUITE_MODEL ? model_units(&p) : 0;
    if (!p.quick)
        /* a figure's runs stop after `budget` seconds (two runs at least),
         * so the plan's length is about the figures times that */
        fprintf(stderr,
                "linattn-bench: %zu figures, each up to %.0f s of runs: this takes up to about %.0f "
                "minutes (--quick: under a minute; --suite or --filter: a part)\n",
                total, p.budget, ceil((double)total * p.budget / 60.0));
    bench_progress_begin(total);
    double start = bench_now(NULL);
    int failed = 0;
    if (p.suites & (SUITE_PEAK | SUITE_BANDWIDTH))
        bench_print_columns();
    if (p.suites & SUITE_PEAK)
        failed |= suite_peak(&p) != 0;
    if (p.suites & SUITE_BANDWIDTH)
        failed |= suite_bandwidth(&p) != 0;
    if (p.suites & SUITE_KERNELS)
        failed |= suite_kernels(&p) != 0;
    if (p.suites & (SUITE_OPS | SUITE_MODEL))
        bench_print_columns();
    if (p.suites & SUITE_OPS)
        failed |= suite_ops(&p) != 0;
    if (p.suites & SUITE_MODEL)
        failed |= suite_model(&p) != 0;
    bench_progress_end();
    size_t n;
    bench_rows(&n);
    bench_header_num(&h, "seconds", bench_now(NULL) - start);
    printf("\n%zu figures in %.1f s; '!': cv above %.0f%% (noisy)%s\n", n, bench_now(NULL) - start,
           100 * BENCH_NOISY_CV, failed ? "; some workloads FAILED (see above)" : "");
    if (!n && !failed) {
        fprintf(stderr, "linattn-bench: no workload matches '%s' (see --list)\n",
                p.filter ? p.filter : "");
        return 1;
    }
    if (json && write_output(json, OUT_JSON, &h) != 0)
        failed = 1;
    if (csv && write_output(csv, OUT_CSV, &h) != 0)
        failed = 1;
    if (plot && write_output(plot, OUT_SVG, &h) != 0)
        failed = 1;
    return failed;
}

/* The table on stdout is the run's result too: a write that failed (a full
 * disk, a closed stdout) is exit 1 with one line, not a silent 0. */
int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
        fprintf(stderr, "linattn-bench: writing the output: %s\n", strerror(errno ? errno : EIO));
        return rc ? rc : 1;
    }
    return rc;
}
