/* cmd_info.c: `linattn info`: version, compiler, CPU features, ISA and why, threads, SLEEF. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"

static const char usage[] =
    "usage: linattn info [--isa ISA]\n"
    "\n"
    "Prints the version, compiler, detected CPU features, the ISA the kernels\n"
    "would use and why (auto, env LINATTN_ISA, flag), OpenMP threads and SLEEF.\n"
    "\n"
    "  --isa ISA   auto|scalar|avx2|neon (overrides LINATTN_ISA)\n"
    "  -h, --help  this text\n";

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {
        {"isa", required_argument, 0, 'i'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *isa_flag = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': isa_flag = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case ':': return cli_fail("info", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_fail("info", "unknown option '%s' (try 'linattn info --help')", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_fail("info", "unexpected argument '%s'", argv[optind]);
    if (isa_flag && cli_apply_isa(isa_flag, LINATTN_ISA_FROM_FLAG))
        return 1;

    linattn_isa isa;
    linattn_isa_source source;
    linattn_status st = linattn_get_isa(&isa, &source);
    if (st != LINATTN_OK)
        return cli_fail_status("isa", st);

    printf("linattn %s\n", linattn_version());
#if defined(__clang__)
    printf("compiler: clang %s\n", __clang_version__);
#elif defined(__GNUC__)
    printf("compiler: gcc %d.%d.%d\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#endif
#if defined(__x86_64__)
    printf("arch: x86_64\n");
#elif defined(__aarch64__)
    printf("arch: aarch64\n");
#endif
    printf("cpu features: %s\n", linattn_cpu_features_str());
    printf("isa: %s (%s)\n", linattn_isa_name(isa), linattn_isa_source_name(source));
    printf("openmp: %s, %d threads\n", linattn_has_openmp() ? "yes" : "no", linattn_max_threads());
    printf("sleef: %s\n", linattn_sleef_version());
    return 0;
}
