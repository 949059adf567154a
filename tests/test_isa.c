/* test_isa.c: ISA parsing, dispatch precedence and error messages (library and CLI). */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../engine/internal.h"
#include "../simd/kernels.h"
#include "testutil.h"

Test(isa, version_macros_match_the_library)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", LINATTN_VERSION_MAJOR, LINATTN_VERSION_MINOR,
             LINATTN_VERSION_PATCH);
    cr_assert_str_eq(linattn_version(), want);
}

Test(isa, parse_names_any_case)
{
    static const struct { const char *text; linattn_isa isa; const char *name; } cases[] = {
        {"auto", LINATTN_ISA_AUTO, "auto"},         {"scalar", LINATTN_ISA_SCALAR, "scalar"},
        {"AVX2", LINATTN_ISA_AVX2, "avx2"},         {"avx512", LINATTN_ISA_AVX512, "avx512"},
        {"AVX512", LINATTN_ISA_AVX512, "avx512"},   {"Neon", LINATTN_ISA_NEON, "neon"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        linattn_isa isa = (linattn_isa)-1;
        cr_assert_eq(linattn_isa_parse(cases[i].text, &isa), LINATTN_OK, "%s", cases[i].text);
        cr_assert_eq(isa, cases[i].isa, "%s", cases[i].text);
        cr_assert_str_eq(linattn_isa_name(isa), cases[i].name);
    }
}

Test(isa, parse_rejects_unknown_with_message)
{
    const char *bad[] = {"", "avx", "avx22", "avx-512", "avx5120", "sse4", "scalar ", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        linattn_isa isa = LINATTN_ISA_SCALAR;
        cr_assert_eq(linattn_isa_parse(bad[i], &isa), LINATTN_ERR_INVALID, "'%s'", bad[i]);
        cr_assert_eq(isa, LINATTN_ISA_SCALAR, "output untouched on error");
        cr_assert(strstr(linattn_last_error(), "unknown ISA"), "%s", linattn_last_error());
    }
    cr_assert_eq(linattn_isa_parse(NULL, &(linattn_isa){0}), LINATTN_ERR_INVALID);
}

Test(isa, auto_picks_best_available)
{
    unsetenv("LINATTN_ISA");
    linattn_isa isa;
    linattn_isa_source src;
    cr_assert_eq(linattn_get_isa(&isa, &src), LINATTN_OK);
    cr_assert_eq(src, LINATTN_ISA_FROM_AUTO);
    unsigned f = linattn_cpu_features();
#if defined(__x86_64__)
    cr_assert_eq(isa, (f & LINATTN_CPU_AVX512) ? LINATTN_ISA_AVX512
                      : (f & LINATTN_CPU_AVX2) ? LINATTN_ISA_AVX2
                                               : LINATTN_ISA_SCALAR);
#elif defined(__aarch64__)
    cr_assert_eq(isa, LINATTN_ISA_NEON);
    (void)f;
#endif
}

Test(isa, env_selects_and_api_wins)
{
    setenv("LINATTN_ISA", "scalar", 1);
    linattn_isa isa;
    linattn_isa_source src;
    cr_assert_eq(linattn_get_isa(&isa, &src), LINATTN_OK);
    cr_assert_eq(isa, LINATTN_ISA_SCALAR);
    cr_assert_eq(src, LINATTN_ISA_FROM_ENV);
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_AUTO), LINATTN_OK);
    cr_assert_eq(linattn_get_isa(&isa, &src), LINATTN_OK);
    cr_assert_eq(src, LINATTN_ISA_FROM_API);
}

Test(isa, bad_env_is_an_error_naming_the_variable)
{
    setenv("LINATTN_ISA", "sse9", 1);
    linattn_isa isa;
    cr_assert_eq(linattn_get_isa(&isa, NULL), LINATTN_ERR_INVALID);
    cr_assert(strstr(linattn_last_error(), "LINATTN_ISA"), "%s", linattn_last_error());
    cr_assert(strstr(linattn_last_error(), "sse9"), "%s", linattn_last_error());
    /* An explicit choice still works afterwards. */
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_SCALAR), LINATTN_OK);
    cr_assert_eq(linattn_get_isa(&isa, NULL), LINATTN_OK);
    cr_assert_eq(isa, LINATTN_ISA_SCALAR);
}

Test(isa, unsupported_isa_is_an_error_not_a_fallback)
{
#if defined(__x86_64__)
    const linattn_isa foreign = LINATTN_ISA_NEON;
#else
    const linattn_isa foreign = LINATTN_ISA_AVX2;
#endif
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_SCALAR), LINATTN_OK);
    cr_assert_eq(linattn_set_isa(foreign), LINATTN_ERR_UNSUPPORTED);
    const char *msg = linattn_last_error();
    cr_assert(strstr(msg, linattn_isa_name(foreign)), "names the ISA: %s", msg);
    cr_assert(strstr(msg, linattn_cpu_features_str()), "names what the CPU has: %s", msg);
    linattn_isa isa;
    cr_assert_eq(linattn_get_isa(&isa, NULL), LINATTN_OK);
    cr_assert_eq(isa, LINATTN_ISA_SCALAR, "the previous choice stays");
}

Test(isa, mask_only_removes_features)
{
    unsigned all = linattn_cpu_features();
    linattn_cpu_mask(0);
    cr_assert_eq(linattn_cpu_features(), 0u);
    cr_assert_str_eq(linattn_cpu_features_str(), "none");
    if (all & LINATTN_CPU_AVX2)
        cr_assert_eq(linattn_set_isa(LINATTN_ISA_AVX2), LINATTN_ERR_UNSUPPORTED);
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_AUTO), LINATTN_OK);
    linattn_isa isa;
    cr_assert_eq(linattn_get_isa(&isa, NULL), LINATTN_OK);
    cr_assert_eq(isa, LINATTN_ISA_SCALAR, "auto under an empty mask is scalar");
    linattn_cpu_mask(~0u | LINATTN_CPU_NEON | LINATTN_CPU_AVX2);
    cr_assert_eq(linattn_cpu_features(), all, "a mask cannot add features");
}

#if defined(__x86_64__)
/* Without AVX-512 (masked, or an AVX2-only CPU) auto is AVX2 and asking for
 * avx512 is refused; with it, avx2 stays choosable and is a distinct table. */
Test(isa, avx512_is_a_step_above_avx2)
{
    unsigned all = linattn_cpu_features();
    if (!(all & LINATTN_CPU_AVX2))
        cr_assert_eq(linattn_set_isa(LINATTN_ISA_AVX512), LINATTN_ERR_UNSUPPORTED);
    else {
        linattn_cpu_mask(~LINATTN_CPU_AVX512);
        cr_assert_eq(linattn_set_isa(LINATTN_ISA_AVX512), LINATTN_ERR_UNSUPPORTED);
        cr_assert(strstr(linattn_last_error(), "avx512"), "%s", linattn_last_error());
        cr_assert_eq(linattn_set_isa(LINATTN_ISA_AUTO), LINATTN_OK);
        linattn_isa isa;
        cr_assert_eq(linattn_get_isa(&isa, NULL), LINATTN_OK);
        cr_assert_eq(isa, LINATTN_ISA_AVX2);
        cr_assert_str_eq(linattn_cpu_features_str(),
                         (all & LINATTN_CPU_AVXVNNI) ? "avx2 fma avxvnni" : "avx2 fma",
                         "AVX-512 masked takes its VNNI with it");
        linattn_cpu_mask(~0u);
        linattn_kernels two, five;
        linattn_kernels_init(&two, LINATTN_CPU_AVX2);
        linattn_kernels_init(&five, LINATTN_CPU_AVX2 | LINATTN_CPU_AVX512);
        cr_assert(two.gemm_nt != five.gemm_nt, "the AVX-512 step replaces the AVX2 kernels");
        cr_assert(two.blocked_gemm && five.blocked_gemm);
        if (all & LINATTN_CPU_AVX512) {
            cr_assert_eq(linattn_set_isa(LINATTN_ISA_AVX2), LINATTN_OK);
            cr_assert_eq(linattn_set_isa(LINATTN_ISA_AVX512), LINATTN_OK);
            cr_assert(strstr(linattn_cpu_features_str(), "avx512"));
        }
    }
}
#endif

/* A capability (VNNI, AVX-VNNI, dotprod) swaps the dot-product kernels of
 * its ISA and nothing else, follows the mask, and is named in the features. */
Test(isa, capabilities_swap_only_the_dot_kernels)
{
    const unsigned caps = LINATTN_CPU_AVXVNNI | LINATTN_CPU_AVX512VNNI | LINATTN_CPU_DOTPROD;
    unsigned all = linattn_cpu_features();
    linattn_kernels base, with;
    memset(&base, 0, sizeof base); /* the padding too: compared whole below */
    memset(&with, 0, sizeof with);
    linattn_kernels_init(&base, all & ~caps);
    linattn_kernels_init(&with, all);
    /* the best ISA's capability: AVX-VNNI serves avx2 only when there is no AVX-512 */
    int has = (all & LINATTN_CPU_AVX512) ? (all & LINATTN_CPU_AVX512VNNI) != 0
              : (all & LINATTN_CPU_AVX2) ? (all & LINATTN_CPU_AVXVNNI) != 0
                                           : (all & LINATTN_CPU_DOTPROD) != 0;
    linattn_kernels same = with;
#define SAME(name, ret, params) same.name = base.name;
    LINATTN_DOT_KERNELS(SAME)
#undef SAME
    cr_assert(!memcmp(&same, &base, sizeof same), "only the dot-product kernels change");
    if (has) {
        cr_assert(with.gemv_q8_0 != base.gemv_q8_0 && with.gemv_quant != base.gemv_quant &&
                  with.gemm_quant != base.gemm_quant && with.gemm_quant_xq != base.gemm_quant_xq);
        cr_assert(strstr(linattn_cpu_features_str(), "vnni") ||
                  strstr(linattn_cpu_features_str(), "dotprod"), "%s", linattn_cpu_features_str());
    }
    const linattn_kernels *k;
    linattn_cpu_mask(~caps);
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_AUTO), LINATTN_OK);
    cr_assert_eq(linattn_kernels_current(&k), LINATTN_OK);
    cr_assert(k->gemv_q8_0 == base.gemv_q8_0, "masked: the ISA's own");
    cr_assert(!strstr(linattn_cpu_features_str(), "vnni") &&
              !strstr(linattn_cpu_features_str(), "dotprod"), "%s", linattn_cpu_features_str());
    linattn_cpu_mask(~0u);
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_AUTO), LINATTN_OK);
    cr_assert_eq(linattn_kernels_current(&k), LINATTN_OK);
    cr_assert(k->gemv_q8_0 == with.gemv_q8_0, "unmasked: the capability's");
}

Test(isa, kernel_tables_filled_and_distinct)
{
    linattn_kernels scalar, best;
    linattn_kernels_init(&scalar, 0);
    linattn_kernels_init(&best, linattn_cpu_features());
    void (*const *s)(void) = (void (*const *)(void))(const void *)&scalar;
    /* the function pointers: every field before blocked_gemm */
    for (size_t i = 0; i < offsetof(linattn_kernels, blocked_gemm) / sizeof(void (*)(void)); i++)
        cr_assert_not_null(s[i], "scalar entry %zu", i);
    if (linattn_cpu_features() & (LINATTN_CPU_AVX2 | LINATTN_CPU_NEON)) {
        cr_assert(scalar.dot != best.dot, "SIMD table replaces scalar dot");
        cr_assert(scalar.linear_block_read != best.linear_block_read);
        cr_assert(scalar.gemm_nt != best.gemm_nt);
    }
}

Test(cli_info, env_scalar_reports_scalar)
{
    setenv("LINATTN_ISA", "scalar", 1);
    tu_run_result r = tu_run("info", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "isa: scalar (env LINATTN_ISA)"), "%s", r.out);
    cr_assert(strstr(r.out, "sleef: "), "%s", r.out);
    cr_assert(strstr(r.out, "cpu features: "), "%s", r.out);
    tu_run_free(&r);
}

Test(cli_info, flag_beats_env)
{
    setenv("LINATTN_ISA", "auto", 1);
    tu_run_result r = tu_run("info", "--isa", "scalar", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "isa: scalar (flag --isa)"), "%s", r.out);
    tu_run_free(&r);
}

/* Precedence: --isa, then LINATTN_ISA, then the config's isa (auto there
 * is the same as unset); a bad LINATTN_ISA is an error whatever else is
 * given; info names the source truthfully. */
Test(cli_info, env_beats_config_and_bad_env_always_fails, .init = tu_make_dir,
     .fini = tu_remove_dir)
{
    char ini[512], autoini[512];
    snprintf(ini, sizeof ini, "%s", tu_path("isa.ini"));
    snprintf(autoini, sizeof autoini, "%s", tu_path("isa-auto.ini"));
#define MODEL "[model]\nweights = random:1\nd_model = 8\nn_heads = 2\nn_layers = 1\nd_ff = 8\n"
    const char body[] = MODEL "[runtime]\nisa = scalar\n", autob[] = MODEL "[runtime]\nisa = auto\n";
#undef MODEL
    tu_write_file(ini, body, sizeof body - 1);
    tu_write_file(autoini, autob, sizeof autob - 1);
    unsetenv("LINATTN_ISA");
    tu_run_result r = tu_run("info", ini, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "isa: scalar (config)"), "%s", r.out);
    tu_run_free(&r);
    setenv("LINATTN_ISA", "auto", 1);
    r = tu_run("info", ini, NULL);
    cr_assert(strstr(r.out, "(env LINATTN_ISA)"), "env beats the config: %s", r.out);
    tu_run_free(&r);
    setenv("LINATTN_ISA", "scalar", 1);
    r = tu_run("info", autoini, NULL);
    cr_assert(strstr(r.out, "isa: scalar (env LINATTN_ISA)"), "auto in a config is unset: %s",
              r.out);
    tu_run_free(&r);
    unsetenv("LINATTN_ISA");
    r = tu_run("info", autoini, NULL);
    cr_assert(strstr(r.out, "(auto)"), "%s", r.out);
    tu_run_free(&r);
    setenv("LINATTN_ISA", "bogus", 1);
    const char *const cases[][4] = {{"info", ini, NULL, NULL},
                                    {"info", ini, "--isa", "scalar"},
                                    {"info", NULL, NULL, NULL}};
    for (int i = 0; i < 3; i++) {
        r = tu_run(cases[i][0], cases[i][1], cases[i][2], cases[i][3], NULL);
        cr_assert_neq(r.status, 0, "case %d: a bad LINATTN_ISA passed", i);
        cr_assert(strstr(r.err, "LINATTN_ISA: unknown ISA 'bogus'"), "case %d: %s", i, r.err);
        cr_assert_eq(tu_count_lines(r.err, r.err_len), 1);
        tu_run_free(&r);
    }
    unsetenv("LINATTN_ISA");
}

Test(cli_info, foreign_isa_is_one_error_line)
{
#if defined(__x86_64__)
    setenv("LINATTN_ISA", "neon", 1);
#else
    setenv("LINATTN_ISA", "avx2", 1);
#endif
    tu_run_result r = tu_run("info", NULL);
    cr_assert_neq(r.status, 0);
    cr_assert_eq(tu_count_lines(r.err, r.err_len), 1, "one line: %s", r.err);
    cr_assert(!strncmp(r.err, "linattn: ", 9), "%s", r.err);
    cr_assert(strstr(r.err, "cannot run here"), "%s", r.err);
    cr_assert_eq(r.out[0], '\0', "nothing on stdout: %s", r.out);
    tu_run_free(&r);
}

Test(cli_info, bad_flag_is_one_error_line)
{
    tu_run_result r = tu_run("info", "--bogus", NULL);
    cr_assert_neq(r.status, 0);
    cr_assert_eq(tu_count_lines(r.err, r.err_len), 1, "%s", r.err);
    cr_assert(strstr(r.err, "--bogus"), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("info", "--isa", "sse", NULL);
    cr_assert_neq(r.status, 0);
    cr_assert(strstr(r.err, "unknown ISA 'sse'"), "%s", r.err);
    tu_run_free(&r);
    r = tu_run("frobnicate", NULL);
    cr_assert_neq(r.status, 0);
    cr_assert(strstr(r.err, "unknown command 'frobnicate'"), "%s", r.err);
    tu_run_free(&r);
}

Test(isa, unmasking_later_gives_a_working_table)
{
    /* the first choice happens under an empty mask; SIMD must still work after */
    linattn_cpu_mask(0);
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_AUTO), LINATTN_OK);
    linattn_cpu_mask(~0u);
    cr_assert_eq(linattn_set_isa(LINATTN_ISA_AUTO), LINATTN_OK);
    linattn_attention_desc d;
    linattn_attention_desc_init(&d);
    d.batch = d.heads = d.len_q = d.len_k = d.d_k = d.d_v = 1;
    const float q = 1.0f, k = 1.0f, v = 3.0f;
    float out = 0.0f;
    cr_assert_eq(linattn_attention_softmax(&d, &q, &k, &v, &out), LINATTN_OK);
    cr_assert_float_eq(out, 3.0f, 1e-6f, "one key: its value");
}
