/* test_bench.c: linattn-bench's statistics on known inputs, its JSON and CSV writers read back, its SVG well-formed with one series per ISA. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "../bench/report.h"
#include "../bench/stats.h"
#include "../bench/svg.h"

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */
/* ------------------------------------------------------------------------ */

Test(bench_stats, odd_count_with_outlier)
{
    const double x[] = {4, 100, 1, 3, 2};
    bench_stats s;
    bench_stats_of(x, 5, &s);
    cr_assert_eq(s.runs, 5);
    cr_assert_eq(s.median, 3);
    cr_assert_eq(s.min, 1);
    cr_assert_eq(s.max, 100);
    cr_assert_float_eq(s.mean, 22, 1e-12);
    /* deviations -21 -20 -19 -18 78: squares 7610, over n - 1 = 4 */
    cr_assert_float_eq(s.sd, sqrt(7610.0 / 4), 1e-12);
    cr_assert_float_eq(s.cv, sqrt(7610.0 / 4) / 22, 1e-12);
    cr_assert(s.noisy);
    /* the input keeps its order */
    cr_assert(x[0] == 4 && x[1] == 100 && x[2] == 1 && x[3] == 3 && x[4] == 2);
}

Test(bench_stats, even_count_median_is_the_middle_mean)
{
    const double x[] = {4, 1, 3, 2};
    bench_stats s;
    bench_stats_of(x, 4, &s);
    cr_assert_eq(s.median, 2.5);
    cr_assert_eq(s.min, 1);
    cr_assert_eq(s.max, 4);
    cr_assert_float_eq(s.mean, 2.5, 1e-12);
    cr_assert_float_eq(s.sd, sqrt(5.0 / 3), 1e-12);
}

Test(bench_stats, constant_samples_are_quiet)
{
    const double x[] = {5, 5, 5};
    bench_stats s;
    bench_stats_of(x, 3, &s);
    cr_assert_eq(s.sd, 0);
    cr_assert_eq(s.cv, 0);
    cr_assert_not(s.noisy);
}

Test(bench_stats, noisy_threshold_is_ten_percent)
{
    bench_stats s;
    const double quiet[] = {9.5, 10.5}; /* sd 0.707, cv 7.1% */
    bench_stats_of(quiet, 2, &s);
    cr_assert_float_eq(s.cv, sqrt(0.5) / 10, 1e-12);
    cr_assert_not(s.noisy);
    const double loud[] = {9, 11}; /* sd 1.414, cv 14.1% */
    bench_stats_of(loud, 2, &s);
    cr_assert_float_eq(s.cv, sqrt(2.0) / 10, 1e-12);
    cr_assert(s.noisy);
}

Test(bench_stats, precise_on_large_values)
{
    /* nanoseconds since boot: a one-pass variance would lose every digit */
    const double x[] = {1e12 + 1, 1e12 + 2, 1e12 + 3};
    bench_stats s;
    bench_stats_of(x, 3, &s);
    cr_assert_float_eq(s.sd, 1, 1e-6);
}

Test(bench_stats, one_and_no_sample)
{
    const double one = 7;
    bench_stats s;
    bench_stats_of(&one, 1, &s);
    cr_assert_eq(s.runs, 1);
    cr_assert(s.median == 7 && s.min == 7 && s.max == 7 && s.mean == 7);
    cr_assert(isnan(s.sd) && isnan(s.cv));
    cr_assert_not(s.noisy);
    bench_stats_of(NULL, 0, &s);
    cr_assert_eq(s.runs, 0);
    cr_assert(isnan(s.median) && isnan(s.min) && isnan(s.max));
}

Test(bench_stats, rates_from_times)
{
    const double seconds[] = {1, 2, 4};
    bench_stats s;
    bench_stats_of_rate(seconds, 3, 8, &s); /* rates 8, 4, 2 */
    cr_assert_eq(s.median, 4);
    cr_assert_eq(s.min, 2);
    cr_assert_eq(s.max, 8);
    cr_assert_float_eq(s.mean, 14.0 / 3, 1e-12);
}

/* ------------------------------------------------------------------------ */
/* Rows for the writers                                                      */
/* ------------------------------------------------------------------------ */

/* A tricky text: every character JSON, CSV and XML must escape. */
static const char tricky[] = "a \"quoted\", comma\\back\nline\ttab <&> 'µ'";

static void header_of(bench_header *h)
{
    memset(h, 0, sizeof *h);
    bench_header_str(h, "cpu_model", "AMD EPYC \"test\"");
    bench_header_num(h, "l2_bytes", 1048576);
    bench_header_list(h, "isas", "scalar,avx2,avx512");
    bench_header_str(h, "note", tricky);
}

static size_t rows_of(bench_row *rows)
{
    size_t n = 0;
    bench_row *r = &rows[n++];
    bench_row_init(r);
    snprintf(r->suite, sizeof r->suite, "peak");
    snprintf(r->name, sizeof r->name, "fma-peak");
    snprintf(r->isa, sizeof r->isa, "avx2");
    snprintf(r->unit, sizeof r->unit, "GFLOP/s");
    r->threads = 1;
    const double p[] = {140, 144, 143};
    bench_stats_of(p, 3, &r->st);
    r->peak = 144;

    r = &rows[n++];
    bench_row_init(r);
    snprintf(r->suite, sizeof r->suite, "bandwidth");
    snprintf(r->name, sizeof r->name, "triad");
    snprintf(r->isa, sizeof r->isa, "scalar");
    snprintf(r->unit, sizeof r->unit, "GB/s");
    r->threads = 2;
    const double b[] = {30, 31};
    bench_stats_of(b, 2, &r->st);
    r->bandwidth = 31;

    r = &rows[n++];
    bench_row_init(r);
    snprintf(r->suite, sizeof r->suite, "ops");
    snprintf(r->name, sizeof r->name, "softmax-causal-1k");
    snprintf(r->what, sizeof r->what, "%s", tricky);
    snprintf(r->note, sizeof r->note, "#starts with a hash, has, commas");
    snprintf(r->isa, sizeof r->isa, "avx512");
    snprintf(r->unit, sizeof r->unit, "GFLOP/s");
    snprintf(r->group, sizeof r->group, "prefill");
    snprintf(r->variant, sizeof r->variant, "softmax");
    r->threads = 0;
    const double g[] = {100, 120, 80, 110, 90};
    bench_stats_of(g, 5, &r->st);
    r->seconds = 0.0123456789;
    r->flops = 1.073741824e9;
    r->peak = 280;
    r->pct_peak = 100.0 * 100 / 280;
    r->speedup = 1.5;
    r->context = 1024;
    return n;
}

/* The text f received since it was opened (open_memstream). */
static char *mem_text(FILE *f, char **buf)
{
    cr_assert_eq(fclose(f), 0);
    return *buf;
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */
/* ------------------------------------------------------------------------ */

Test(bench_json, parses_back_with_every_field)
{
    bench_header h;
    bench_row rows[4];
    header_of(&h);
    size_t n = rows_of(rows);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(bench_write_json(f, &h, rows, n), 0);
    char *text = mem_text(f, &buf);

    /* read by cJSON directly, not by our reader */
    cJSON *root = cJSON_Parse(text);
    cr_assert_not_null(root, "not JSON:\n%s", text);
    const cJSON *hj = cJSON_GetObjectItemCaseSensitive(root, "header");
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(hj, "cpu_model")->valuestring,
                     "AMD EPYC \"test\"");
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(hj, "note")->valuestring, tricky);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(hj, "l2_bytes")->valuedouble, 1048576);
    const cJSON *isas = cJSON_GetObjectItemCaseSensitive(hj, "isas");
    cr_assert(cJSON_IsArray(isas));
    cr_assert_eq(cJSON_GetArraySize(isas), 3);
    cr_assert_str_eq(cJSON_GetArrayItem(isas, 2)->valuestring, "avx512");

    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(root, "rows");
    cr_assert_eq(cJSON_GetArraySize(rj), (int)n);
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < bench_csv_ncolumns(); c++)
            cr_assert(cJSON_HasObjectItem(cJSON_GetArrayItem(rj, (int)i), bench_csv_column(c)),
                      "row %zu lacks %s", i, bench_csv_column(c));
    const cJSON *ops = cJSON_GetArrayItem(rj, 2);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(ops, "what")->valuestring, tricky);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(ops, "median")->valuedouble, 100);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(ops, "min")->valuedouble, 80);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(ops, "max")->valuedouble, 120);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(ops, "runs")->valueint, 5);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(ops, "threads")->valueint, 0);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ops, "noisy"))); /* cv 15.8% */
    cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(ops, "seconds")->valuedouble,
                       0.0123456789, 1e-15);
    /* NaN has no JSON form */
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ops, "floor_seconds")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rj, 0), "noisy")));

    /* the denominators, short */
    const cJSON *peaks = cJSON_GetObjectItemCaseSensitive(root, "peaks");
    cr_assert_eq(cJSON_GetArraySize(peaks), 1);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(peaks, 0), "isa")->valuestring,
                     "avx2");
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(peaks, 0), "gflops")->valuedouble,
                 144);
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(root, "bandwidth");
    cr_assert_eq(cJSON_GetArraySize(bw), 1);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(bw, 0), "gbs")->valuedouble, 31);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(bw, 0), "threads")->valueint, 2);
    cJSON_Delete(root);

    /* and by our reader (--compare): every field as written */
    bench_doc doc;
    char err[128];
    cr_assert_eq(bench_read_json(text, &doc, err, sizeof err), 0, "%s", err);
    cr_assert_eq(doc.n, n);
    cr_assert_str_eq(bench_header_get(&doc.h, "isas"), "scalar,avx2,avx512");
    cr_assert_str_eq(bench_header_get(&doc.h, "l2_bytes"), "1048576");
    cr_assert_str_eq(bench_header_get(&doc.h, "note"), tricky);
    const bench_row *a = &rows[2], *b = &doc.rows[2];
    cr_assert_str_eq(b->name, a->name);
    cr_assert_str_eq(b->what, a->what);
    cr_assert_str_eq(b->note, a->note);
    cr_assert_str_eq(b->group, "prefill");
    cr_assert_eq(b->threads, 0);
    cr_assert_eq(b->st.runs, 5);
    cr_assert_eq(b->st.noisy, 1);
    cr_assert_eq(b->st.median, a->st.median);
    cr_assert_float_eq(b->st.cv, a->st.cv, 1e-14);
    cr_assert_float_eq(b->pct_peak, a->pct_peak, 1e-12);
    cr_assert_eq(b->flops, a->flops);
    cr_assert(isnan(b->floor) && isnan(b->bandwidth));
    bench_doc_free(&doc);
    free(text);
}

Test(bench_json, reader_refuses_what_is_not_a_run)
{
    bench_doc doc;
    char err[128];
    cr_assert_eq(bench_read_json("{\"rows\": [", &doc, err, sizeof err), -1);
    cr_assert(strstr(err, "not JSON"), "%s", err);
    cr_assert_eq(bench_read_json("{\"header\": {}}", &doc, err, sizeof err), -1);
    cr_assert(strstr(err, "rows"), "%s", err);
}

/* ------------------------------------------------------------------------ */
/* CSV                                                                       */
/* ------------------------------------------------------------------------ */

/* One RFC 4180 record from *p (advanced past its line break): fields into
 * out[] (malloc'd), returns their count. */
static int csv_record(const char **p, char **out, int max)
{
    int n = 0;
    const char *s = *p;
    for (;;) {
        char *field = malloc(strlen(s) + 1), *w = field;
        cr_assert_not_null(field);
        if (*s == '"') {
            for (s++;; s++) {
                cr_assert(*s, "unterminated quoted field");
                if (*s == '"' && s[1] == '"')
                    *w++ = '"', s++;
                else if (*s == '"')
                    break;
                else
                    *w++ = *s;
            }
            s++;
        } else {
            while (*s && *s != ',' && *s != '\n')
                *w++ = *s++;
        }
        *w = 0;
        cr_assert_lt(n, max);
        out[n++] = field;
        if (*s == ',') {
            s++;
            continue;
        }
        cr_assert(*s == '\n' || !*s, "junk after a field: '%.10s'", s);
        *p = *s ? s + 1 : s;
        return n;
    }
}

Test(bench_csv, parses_back_with_header_comments_and_quoting)
{
    bench_header h;
    bench_row rows[4];
    header_of(&h);
    size_t n = rows_of(rows);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(bench_write_csv(f, &h, rows, n), 0);
    char *text = mem_text(f, &buf);
    const char *p = text;

    /* the header, one comment line a key, no line break inside */
    for (int i = 0; i < h.n; i++) {
        cr_assert_eq(strncmp(p, "# ", 2), 0, "line %d: %.40s", i, p);
        const char *eol = strchr(p, '\n');
        cr_assert_not_null(eol);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(eol - p), p);
        cr_assert(strstr(line, h.kv[i].key), "%s", line);
        p = eol + 1;
    }
    cr_assert(strstr(text, "# isas: scalar,avx2,avx512\n"));
    cr_assert(strstr(text, "# cpu_model: AMD EPYC \"test\"\n"));

    char *fields[64];
    int nf = csv_record(&p, fields, 64);
    cr_assert_eq((size_t)nf, bench_csv_ncolumns());
    for (int i = 0; i < nf; i++) {
        cr_assert_str_eq(fields[i], bench_csv_column((size_t)i));
        free(fields[i]);
    }
    int col_median = -1, col_what = -1, col_note = -1, col_floor = -1, col_threads = -1,
        col_noisy = -1, col_seconds = -1;
    for (size_t i = 0; i < bench_csv_ncolumns(); i++) {
        const char *c = bench_csv_column(i);
        col_median = !strcmp(c, "median") ? (int)i : col_median;
        col_what = !strcmp(c, "what") ? (int)i : col_what;
        col_note = !strcmp(c, "note") ? (int)i : col_note;
        col_floor = !strcmp(c, "floor_seconds") ? (int)i : col_floor;
        col_threads = !strcmp(c, "threads") ? (int)i : col_threads;
        col_noisy = !strcmp(c, "noisy") ? (int)i : col_noisy;
        col_seconds = !strcmp(c, "seconds") ? (int)i : col_seconds;
    }
    cr_assert(col_median >= 0 && col_what >= 0 && col_note >= 0 && col_floor >= 0 &&
              col_threads >= 0 && col_noisy >= 0 && col_seconds >= 0);
    for (size_t r = 0; r < n; r++) {
        nf = csv_record(&p, fields, 64);
        cr_assert_eq((size_t)nf, bench_csv_ncolumns(), "row %zu: %d fields", r, nf);
        cr_assert_float_eq(strtod(fields[col_median], NULL), rows[r].st.median, 1e-9);
        cr_assert_str_eq(fields[1], rows[r].name);
        if (r == 2) {
            cr_assert_str_eq(fields[col_what], tricky); /* commas, quotes, a line break */
            cr_assert_str_eq(fields[col_note], rows[r].note);
            cr_assert_str_eq(fields[col_floor], ""); /* NaN: empty */
            cr_assert_str_eq(fields[col_threads], "0");
            cr_assert_str_eq(fields[col_noisy], "1");
            cr_assert_float_eq(strtod(fields[col_seconds], NULL), 0.0123456789, 1e-15);
        }
        for (int i = 0; i < nf; i++)
            free(fields[i]);
    }
    cr_assert_eq(*p, 0, "more after the last row: %.40s", p);
    /* the quoted note that starts with '#' is not a comment line */
    cr_assert(strstr(text, ",\"#starts with a hash, has, commas\"\n"));
    free(text);
}

/* ------------------------------------------------------------------------ */
/* SVG: a small XML well-formedness checker, then the plot's structure      */
/* ------------------------------------------------------------------------ */

static int name_char(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':' || (c & 0x80);
}

/* &amp; &lt; &gt; &quot; &apos; &#N; &#xH; at s: its length, 0 if none. */
static size_t entity(const char *s)
{
    static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (size_t i = 0; i < 5; i++)
        if (!strncmp(s, named[i], strlen(named[i])))
            return strlen(named[i]);
    if (s[1] == '#') {
        size_t i = 2;
        int hex = s[2] == 'x';
        i += (size_t)hex;
        size_t start = i;
        while (hex ? isxdigit((unsigned char)s[i]) : isdigit((unsigned char)s[i]))
            i++;
        return i > start && s[i] == ';' ? i + 1 : 0;
    }
    return 0;
}

/* Text or an attribute value up to stop: no '<', every '&' an entity. */
static const char *xml_chars(const char *s, char stop, char *why, size_t whylen)
{
    while (*s && *s != stop) {
        if (*s == '<' && stop != '<') {
            snprintf(why, whylen, "'<' in a value");
            return NULL;
        }
        if (*s == '&') {
            size_t e = entity(s);
            if (!e) {
                snprintf(why, whylen, "bare '&' at '%.12s'", s);
                return NULL;
            }
            s += e;
            continue;
        }
        s++;
    }
    return s;
}

/* 1 when doc is well-formed XML (one root, tags nested and closed, attributes
 * quoted and unique, entities known); else 0 with the reason in why. */
static int xml_well_formed(const char *doc, char *why, size_t whylen)
{
    char stack[64][48];
    int depth = 0, roots = 0;
    const char *s = doc;
    if (!strncmp(s, "<?xml", 5)) {
        s = strstr(s, "?>");
        if (!s) {
            snprintf(why, whylen, "open prolog");
            return 0;
        }
        s += 2;
    }
    while (*s) {
        if (*s != '<') {
            if (depth == 0 && !isspace((unsigned char)*s)) {
                snprintf(why, whylen, "text outside the root: '%.12s'", s);
                return 0;
            }
            s = xml_chars(s, '<', why, whylen);
            if (!s)
                return 0;
            continue;
        }
        if (!strncmp(s, "<!--", 4)) {
            const char *end = strstr(s + 4, "-->");
            if (!end) {
                snprintf(why, whylen, "open comment");
                return 0;
            }
            s = end + 3;
            continue;
        }
        int closing = s[1] == '/';
        s += 1 + closing;
        const char *name = s;
        while (name_char((unsigned char)*s))
            s++;
        size_t nlen = (size_t)(s - name);
        if (!nlen || nlen >= sizeof stack[0]) {
            snprintf(why, whylen, "bad tag name at '%.12s'", name);
            return 0;
        }
        if (closing) {
            while (isspace((unsigned char)*s))
                s++;
            if (*s != '>' || depth == 0 || strlen(stack[depth - 1]) != nlen ||
                strncmp(stack[depth - 1], name, nlen)) {
                snprintf(why, whylen, "</%.*s> does not close <%s>", (int)nlen, name,
                         depth ? stack[depth - 1] : "(nothing)");
                return 0;
            }
            depth--;
            s++;
            continue;
        }
        /* attributes: name="value", each once */
        char seen[32][48];
        int nseen = 0;
        for (;;) {
            int space = isspace((unsigned char)*s);
            while (isspace((unsigned char)*s))
                s++;
            if (*s == '>' || (*s == '/' && s[1] == '>'))
                break;
            const char *an = s;
            while (name_char((unsigned char)*s))
                s++;
            size_t alen = (size_t)(s - an);
            if (!space || !alen || alen >= sizeof seen[0] || *s != '=' ||
                (s[1] != '"' && s[1] != '\'')) {
                snprintf(why, whylen, "bad attribute in <%.*s> at '%.16s'", (int)nlen, name, an);
                return 0;
            }
            for (int i = 0; i < nseen; i++)
                if (strlen(seen[i]) == alen && !strncmp(seen[i], an, alen)) {
                    snprintf(why, whylen, "attribute %.*s twice", (int)alen, an);
                    return 0;
                }
            if (nseen < 32)
                snprintf(seen[nseen++], sizeof seen[0], "%.*s", (int)alen, an);
            char quote = s[1];
            s = xml_chars(s + 2, quote, why, whylen);
            if (!s)
                return 0;
            if (*s != quote) {
                snprintf(why, whylen, "unterminated attribute value");
                return 0;
            }
            s++;
        }
        if (depth == 0 && ++roots > 1) {
            snprintf(why, whylen, "a second root element");
            return 0;
        }
        if (*s == '/') {
            s += 2;
            continue;
        }
        if (depth == 64) {
            snprintf(why, whylen, "too deep");
            return 0;
        }
        snprintf(stack[depth++], sizeof stack[0], "%.*s", (int)nlen, name);
        s++;
    }
    if (depth || roots != 1) {
        snprintf(why, whylen, depth ? "<%s> never closed" : "no root element",
                 depth ? stack[depth - 1] : "");
        return 0;
    }
    return 1;
}

Test(bench_svg, checker_catches_what_it_should)
{
    char why[128];
    cr_assert(xml_well_formed("<?xml version=\"1.0\"?>\n<a x=\"1\"><b/>t &amp; u</a>\n", why,
                              sizeof why), "%s", why);
    cr_assert_not(xml_well_formed("<a><b></a></b>", why, sizeof why));
    cr_assert_not(xml_well_formed("<a>x & y</a>", why, sizeof why));
    cr_assert_not(xml_well_formed("<a x=\"1\" x=\"2\"/>", why, sizeof why));
    cr_assert_not(xml_well_formed("<a x=\"<\"/>", why, sizeof why));
    cr_assert_not(xml_well_formed("<a/><b/>", why, sizeof why));
    cr_assert_not(xml_well_formed("<a>", why, sizeof why));
}

/* Occurrences of needle in hay. */
static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void decode_row(bench_row *r, const char *isa, const char *variant, double ctx, double us,
                       int threads)
{
    bench_row_init(r);
    snprintf(r->suite, sizeof r->suite, "ops");
    snprintf(r->name, sizeof r->name, "%s-decode-%g", variant, ctx);
    snprintf(r->isa, sizeof r->isa, "%s", isa);
    snprintf(r->unit, sizeof r->unit, "us/tok");
    snprintf(r->group, sizeof r->group, "decode");
    snprintf(r->variant, sizeof r->variant, "%s", variant);
    r->threads = threads;
    r->context = ctx;
    const double x[] = {us, us * 1.05, us * 0.97};
    bench_stats_of(x, 3, &r->st);
}

Test(bench_svg, well_formed_with_one_series_per_isa)
{
    static const char *const isas[] = {"scalar", "avx2", "avx512"};
    bench_row rows[64];
    size_t n = 0;
    for (int i = 0; i < 3; i++)
        for (double ctx = 1024; ctx <= 65536; ctx *= 4) {
            decode_row(&rows[n++], isas[i], "softmax", ctx, ctx / 100 / (i + 1), 1);
            decode_row(&rows[n++], isas[i], "linear", ctx, 2.5 / (i + 1), 1);
            /* 2-thread points are not drawn: plot 1 is one thread */
            decode_row(&rows[n++], isas[i], "softmax", ctx, ctx / 150, 2);
        }
    decode_row(&rows[n++], "avx2", "linear", 1048576, 1.25, 1);
    size_t bars = 0;
    for (int i = 0; i < 3; i++)
        for (int t = 1; t <= 2; t++) {
            bench_row *r = &rows[n++];
            bench_row_init(r);
            snprintf(r->name, sizeof r->name, "softmax-causal-<1k>&");
            snprintf(r->isa, sizeof r->isa, "%s", isas[i]);
            snprintf(r->unit, sizeof r->unit, "GFLOP/s");
            snprintf(r->group, sizeof r->group, "prefill");
            r->threads = t;
            const double g[] = {10.0 * (i + 1) * t, 11.0 * (i + 1) * t};
            bench_stats_of(g, 2, &r->st);
            r->peak = 60.0 * (i + 1) * t;
            r->pct_peak = 100 * r->st.median / r->peak;
            bars++;
        }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(bench_svg_write(f, rows, n, "linattn-bench", "cpu \"x\" & <y>"), 0);
    char *svg = mem_text(f, &buf);
    char why[160];
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    cr_assert(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));

    /* one line per variant x ISA, each ISA once per variant */
    cr_assert_eq(count(svg, "class=\"series\""), 6);
    for (int i = 0; i < 3; i++)
        for (int v = 0; v < 2; v++) {
            char key[96];
            snprintf(key, sizeof key, "data-isa=\"%s\" data-variant=\"%s\"", isas[i],
                     v ? "linear" : "softmax");
            cr_assert_eq(count(svg, key), 1, "%s", key);
        }
    /* contexts 1k, 4k, 16k, 64k for each ISA, and 1M for linear avx2:
     * circles for softmax, squares for linear, one more a series in the
     * legend */
    cr_assert_eq(count(svg, "<circle"), 12 + 3);
    cr_assert_eq(count(svg, "width=\"8\" height=\"8\""), 13 + 3);
    /* the bars, each with its peak */
    cr_assert_eq(count(svg, "class=\"bar\""), (int)bars);
    cr_assert_eq(count(svg, "class=\"peak\""), (int)bars);
    cr_assert(strstr(svg, "softmax-causal-&lt;1k&gt;&amp;"));
    cr_assert(strstr(svg, "cpu &quot;x&quot; &amp; &lt;y&gt;"));
    cr_assert(strstr(svg, ">1M<"), "the x axis reaches 1M");
    free(svg);
}

Test(bench_svg, empty_run_is_still_a_picture)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(bench_svg_write(f, NULL, 0, NULL, NULL), 0);
    char *svg = mem_text(f, &buf);
    char why[160];
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    cr_assert_eq(count(svg, "class=\"series\""), 0);
    cr_assert(strstr(svg, "no decode rows"));
    free(svg);
}

/* ------------------------------------------------------------------------ */
/* The program's messages (LINATTN_BENCH_EXE)                                */
/* ------------------------------------------------------------------------ */

/* Runs the bench with args through the shell; stdout and stderr together
 * into out (NUL-terminated); returns the exit status. */
static int run_bench(const char *args, char *out, size_t cap)
{
    const char *exe = getenv("LINATTN_BENCH_EXE");
    cr_assert(exe, "LINATTN_BENCH_EXE is not set");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", exe, args);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* --compare of runs from two CPUs warns that the ratios measure the
 * machines; from one CPU it does not; --plot with --compare is refused. */
Test(bench_cli, compare_warns_across_cpus_and_refuses_plot)
{
    static char out[1 << 16];
    char *dir = strdup("/tmp/linattn-bench-XXXXXX");
    cr_assert(mkdtemp(dir));
    char args[2048], a[512], b[512];
    snprintf(a, sizeof a, "%s/a.json", dir);
    snprintf(b, sizeof b, "%s/b.json", dir);
    snprintf(args, sizeof args, "--quick --suite peak --isa scalar --threads 1 --json %s", a);
    cr_assert_eq(run_bench(args, out, sizeof out), 0, "%s", out);
    /* the same run as from another CPU */
    size_t n;
    FILE *f = fopen(a, "rb");
    cr_assert(f);
    static char text[1 << 16], edited[1 << 16];
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *at = strstr(text, "\"cpu_model\"");
    cr_assert(at, "cpu_model in the JSON");
    char *q1 = strchr(at + 11, '"'), *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
    cr_assert(q2);
    snprintf(edited, sizeof edited, "%.*s\"Another CPU\"%s", (int)(q1 - text), text, q2 + 1);
    f = fopen(b, "wb");
    cr_assert(f);
    fputs(edited, f);
    fclose(f);
    snprintf(args, sizeof args, "--compare %s %s", a, a);
    cr_assert_eq(run_bench(args, out, sizeof out), 0, "%s", out);
    cr_assert_null(strstr(out, "warning"), "one CPU: %s", out);
    snprintf(args, sizeof args, "--compare %s %s", a, b);
    cr_assert_eq(run_bench(args, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "warning: the two runs differ in cpu_model"), "%s", out);
    cr_assert(strstr(out, "Another CPU"), "%s", out);
    snprintf(args, sizeof args, "--compare %s %s --plot %s/x.svg", a, b, dir);
    cr_assert_eq(run_bench(args, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "--compare prints a table only: --plot"), "%s", out);
    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    cr_assert_eq(system(args), 0);
    free(dir);
}
