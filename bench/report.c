/* report.c: writes rows and header as JSON (cJSON) and CSV, and reads the JSON back for --compare. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report.h"

/* ------------------------------------------------------------------------ */
/* Rows                                                                      */
/* ------------------------------------------------------------------------ */

void bench_row_init(bench_row *r)
{
    memset(r, 0, sizeof *r);
    bench_stats_of(NULL, 0, &r->st);
    r->seconds = r->flops = r->peak = r->pct_peak = NAN;
    r->bytes = r->bandwidth = r->floor = r->pct_bw = r->speedup = r->context = NAN;
}

int bench_unit_higher_better(const char *unit)
{
    static const char *const times[] = {"ns", "us", "us/tok", "ms", "s", "s/tok"};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if (!strcmp(unit, times[i]))
            return 0;
    return 1;
}

/* Every field of a row once: JSON, CSV and the reader walk this table, so
 * a field added here appears in all three. */
enum field_type { F_STR, F_INT, F_DBL, F_BOOL };
typedef struct field {
    const char *key;
    enum field_type type;
    size_t off, size;
} field;

#define FIELD(key, type, member) {key, type, offsetof(bench_row, member), sizeof(((bench_row *)0)->member)}
static const field fields[] = {
    FIELD("suite", F_STR, suite),
    FIELD("workload", F_STR, name),
    FIELD("isa", F_STR, isa),
    FIELD("threads", F_INT, threads),
    FIELD("unit", F_STR, unit),
    FIELD("median", F_DBL, st.median),
    FIELD("min", F_DBL, st.min),
    FIELD("max", F_DBL, st.max),
    FIELD("mean", F_DBL, st.mean),
    FIELD("sd", F_DBL, st.sd),
    FIELD("cv", F_DBL, st.cv),
    FIELD("runs", F_INT, st.runs),
    FIELD("noisy", F_BOOL, st.noisy),
    FIELD("seconds", F_DBL, seconds),
    FIELD("flops", F_DBL, flops),
    FIELD("peak_gflops", F_DBL, peak),
    FIELD("pct_peak", F_DBL, pct_peak),
    FIELD("bytes", F_DBL, bytes),
    FIELD("bandwidth_gbs", F_DBL, bandwidth),
    FIELD("level", F_STR, level),
    FIELD("floor_seconds", F_DBL, floor),
    FIELD("pct_bandwidth", F_DBL, pct_bw),
    FIELD("speedup", F_DBL, speedup),
    FIELD("group", F_STR, group),
    FIELD("variant", F_STR, variant),
    FIELD("context", F_DBL, context),
    FIELD("what", F_STR, what),
    FIELD("note", F_STR, note),
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

size_t bench_csv_ncolumns(void)
{
    return N_FIELDS;
}

const char *bench_csv_column(size_t i)
{
    return i < N_FIELDS ? fields[i].key : NULL;
}

static void *at(const bench_row *r, const field *f)
{
    return (char *)r + f->off;
}

/* ------------------------------------------------------------------------ */
/* Header                                                                    */
/* ------------------------------------------------------------------------ */

static bench_kv *kv_slot(bench_header *h, const char *key)
{
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->kv[i].key, key))
            return &h->kv[i];
    if (h->n >= BENCH_HEADER_MAX)
        return NULL;
    bench_kv *kv = &h->kv[h->n++];
    memset(kv, 0, sizeof *kv);
    snprintf(kv->key, sizeof kv->key, "%s", key);
    return kv;
}

void bench_header_str(bench_header *h, const char *key, const char *value)
{
    bench_kv *kv = kv_slot(h, key);
    if (kv) {
        kv->kind = BENCH_KV_STR;
        snprintf(kv->value, sizeof kv->value, "%s", value ? value : "");
    }
}

void bench_header_num(bench_header *h, const char *key, double value)
{
    bench_kv *kv = kv_slot(h, key);
    if (kv) {
        kv->kind = BENCH_KV_NUM;
        kv->num = value;
        snprintf(kv->value, sizeof kv->value, "%.15g", value);
    }
}

void bench_header_list(bench_header *h, const char *key, const char *comma_list)
{
    bench_kv *kv = kv_slot(h, key);
    if (kv) {
        kv->kind = BENCH_KV_LIST;
        snprintf(kv->value, sizeof kv->value, "%s", comma_list ? comma_list : "");
    }
}

const char *bench_header_get(const bench_header *h, const char *key)
{
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->kv[i].key, key))
            return h->kv[i].value;
    return "";
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */
/* ------------------------------------------------------------------------ */

/* NaN and infinities have no JSON form: null. */
static cJSON *number_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *header_json(const bench_header *h)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < h->n; i++) {
        const bench_kv *kv = &h->kv[i];
        cJSON *v = NULL;
        if (kv->kind == BENCH_KV_NUM) {
            v = number_or_null(kv->num);
        } else if (kv->kind == BENCH_KV_LIST) {
            v = cJSON_CreateArray();
            const char *p = kv->value;
            while (v && *p) {
                size_t len = strcspn(p, ",");
                char item[256];
                snprintf(item, sizeof item, "%.*s", (int)len, p);
                cJSON_AddItemToArray(v, cJSON_CreateString(item));
                p += len + (p[len] == ',');
            }
        } else {
            v = cJSON_CreateString(kv->value);
        }
        if (!v) {
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddItemToObject(o, kv->key, v);
    }
    return o;
}

static cJSON *row_json(const bench_row *r)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < N_FIELDS; i++) {
        const field *f = &fields[i];
        const void *p = at(r, f);
        cJSON *v = NULL;
        switch (f->type) {
        case F_STR: v = cJSON_CreateString(p); break;
        case F_INT: v = cJSON_CreateNumber(*(const int *)p); break;
        case F_DBL: v = number_or_null(*(const double *)p); break;
        case F_BOOL: v = cJSON_CreateBool(*(const int *)p); break;
        }
        if (!v) {
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddItemToObject(o, f->key, v);
    }
    return o;
}

int bench_write_json(FILE *f, const bench_header *h, const bench_row *rows, size_t n)
{
    cJSON *root = cJSON_CreateObject(), *peaks = cJSON_CreateArray();
    cJSON *bw = cJSON_CreateArray(), *arr = cJSON_CreateArray(), *hj = header_json(h);
    int rc = -1;
    if (!root || !peaks || !bw || !arr || !hj) {
        cJSON_Delete(peaks), cJSON_Delete(bw), cJSON_Delete(arr), cJSON_Delete(hj);
        goto out;
    }
    cJSON_AddItemToObject(root, "header", hj);
    cJSON_AddItemToObject(root, "peaks", peaks);
    cJSON_AddItemToObject(root, "bandwidth", bw);
    cJSON_AddItemToObject(root, "rows", arr);
    for (size_t i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        cJSON *rj = row_json(r);
        if (!rj)
            goto out;
        cJSON_AddItemToArray(arr, rj);
        /* the denominators again, short: what a reader looks for first */
        if (!strcmp(r->suite, "peak") || !strcmp(r->suite, "bandwidth")) {
            int is_peak = !strcmp(r->suite, "peak");
            cJSON *s = cJSON_CreateObject();
            if (!s)
                goto out;
            cJSON_AddItemToArray(is_peak ? peaks : bw, s);
            if (!(is_peak ? cJSON_AddStringToObject(s, "isa", r->isa)
                          : cJSON_AddStringToObject(s, "workload", r->name)) ||
                !(is_peak || cJSON_AddStringToObject(s, "isa", r->isa)) ||
                !cJSON_AddNumberToObject(s, "threads", r->threads))
                goto out;
            cJSON_AddItemToObject(s, is_peak ? "gflops" : "gbs",
                                  number_or_null(is_peak ? r->peak : r->bandwidth));
        }
    }
    char *text = cJSON_Print(root);
    if (!text)
        goto out;
    rc = fputs(text, f) < 0 || fputc('\n', f) == EOF ? -1 : 0;
    cJSON_free(text);
out:
    cJSON_Delete(root);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* CSV                                                                       */
/* ------------------------------------------------------------------------ */

/* RFC 4180: quoted when it holds a comma, a quote or a line break (or
 * starts with '#', which readers told to skip comments would drop). */
static void csv_field(FILE *f, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")] && s[0] != '#') {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_double(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
}

/* A comment line holds no line break: each control byte becomes a space. */
static void comment_text(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
}

int bench_write_csv(FILE *f, const bench_header *h, const bench_row *rows, size_t n)
{
    for (int i = 0; i < h->n; i++) {
        fputs("# ", f);
        comment_text(f, h->kv[i].key);
        fputs(": ", f);
        comment_text(f, h->kv[i].value);
        fputc('\n', f);
    }
    for (size_t i = 0; i < N_FIELDS; i++)
        fprintf(f, "%s%s", i ? "," : "", fields[i].key);
    fputc('\n', f);
    for (size_t ri = 0; ri < n; ri++) {
        for (size_t i = 0; i < N_FIELDS; i++) {
            const void *p = at(&rows[ri], &fields[i]);
            if (i)
                fputc(',', f);
            switch (fields[i].type) {
            case F_STR: csv_field(f, p); break;
            case F_INT:
            case F_BOOL: fprintf(f, "%d", *(const int *)p); break;
            case F_DBL: csv_double(f, *(const double *)p); break;
            }
        }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Reading JSON back                                                          */
/* ------------------------------------------------------------------------ */

static void set_err(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && len)
        vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

static void read_header(const cJSON *hj, bench_header *h)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, hj)
    {
        if (!it->string)
            continue;
        if (cJSON_IsNumber(it)) {
            bench_header_num(h, it->string, it->valuedouble);
        } else if (cJSON_IsArray(it)) {
            char list[256] = "";
            size_t used = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, it)
            {
                if (!cJSON_IsString(e))
                    continue;
                int w = snprintf(list + used, sizeof list - used, "%s%s", used ? "," : "",
                                 e->valuestring);
                if (w < 0 || (size_t)w >= sizeof list - used)
                    break;
                used += (size_t)w;
            }
            bench_header_list(h, it->string, list);
        } else if (cJSON_IsString(it)) {
            bench_header_str(h, it->string, it->valuestring);
        }
    }
}

static void read_row(const cJSON *rj, bench_row *r)
{
    bench_row_init(r);
    for (size_t i = 0; i < N_FIELDS; i++) {
        const field *f = &fields[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(rj, f->key);
        void *p = at(r, f);
        switch (f->type) {
        case F_STR:
            if (cJSON_IsString(v))
                snprintf(p, f->size, "%s", v->valuestring);
            break;
        case F_INT:
            if (cJSON_IsNumber(v))
                *(int *)p = v->valueint;
            break;
        case F_BOOL: *(int *)p = cJSON_IsTrue(v); break;
        case F_DBL:
            if (cJSON_IsNumber(v))
                *(double *)p = v->valuedouble;
            break;
        }
    }
}

int bench_read_json(const char *text, bench_doc *doc, char *err, size_t errlen)
{
    memset(doc, 0, sizeof *doc);
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        const char *where = cJSON_GetErrorPtr();
        set_err(err, errlen, "not JSON (near byte %td)", where ? where - text : (ptrdiff_t)0);
        return -1;
    }
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    if (!cJSON_IsArray(rows)) {
        set_err(err, errlen, "no \"rows\" array: not a linattn-bench --json file");
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *hj = cJSON_GetObjectItemCaseSensitive(root, "header");
    if (cJSON_IsObject(hj))
        read_header(hj, &doc->h);
    int n = cJSON_GetArraySize(rows);
    doc->rows = calloc(n > 0 ? (size_t)n : 1, sizeof *doc->rows);
    if (!doc->rows) {
        set_err(err, errlen, "out of memory");
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *rj;
    cJSON_ArrayForEach(rj, rows)
    {
        if (cJSON_IsObject(rj))
            read_row(rj, &doc->rows[doc->n++]);
    }
    cJSON_Delete(root);
    return 0;
}

void bench_doc_free(bench_doc *doc)
{
    free(doc->rows);
    doc->rows = NULL;
    doc->n = 0;
}
