/* svg.c: draws decode-against-context (log-log) and prefill-against-peak (bars) as SVG, no plotting tool needed. */
#include <math.h>
#include <string.h>

#include "svg.h"

#define WIDTH 960
#define LEFT 90 /* plot area of both panels */
#define RIGHT 720
#define P1_TOP 90
#define P1_BOTTOM 430
#define P2_TOP 530
#define P2_BOTTOM 830
#define HEIGHT 900
#define LEGEND_X 740

/* One colour an ISA in both panels (colour-blind-safe palette). */
static const char *isa_color(const char *isa)
{
    static const struct {
        const char *isa, *color;
    } colors[] = {
        {"scalar", "#7f7f7f"}, {"avx2", "#0072b2"}, {"avx512", "#d55e00"}, {"neon", "#009e73"}};
    for (size_t i = 0; i < sizeof colors / sizeof colors[0]; i++)
        if (!strcmp(isa, colors[i].isa))
            return colors[i].color;
    return "#cc79a7";
}

/* Text content and attribute values: the five XML specials escaped. */
static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            /* XML 1.0 allows no control bytes but tab and line breaks */
            fputc((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' ? ' ' : *s, f);
        }
    }
}

static void text_at(FILE *f, double x, double y, const char *anchor, const char *extra,
                    const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor,
            extra && *extra ? " " : "", extra ? extra : "");
    xml_text(f, s);
    fputs("</text>\n", f);
}

/* 1024 -> "1k", 1048576 -> "1M", 100 -> "100" (contexts are powers of two
 * or of ten: the labels of the axis and of --lengths alike). */
static void count_label(char *buf, size_t n, double v)
{
    if (v >= 1048576 && fmod(v, 1048576) == 0)
        snprintf(buf, n, "%.0fM", v / 1048576);
    else if (v >= 1e6 && fmod(v, 1e6) == 0)
        snprintf(buf, n, "%.0fM", v / 1e6);
    else if (v >= 1024 && fmod(v, 1024) == 0)
        snprintf(buf, n, "%.0fk", v / 1024);
    else if (v >= 1000 && fmod(v, 1000) == 0)
        snprintf(buf, n, "%.0fk", v / 1000);
    else
        snprintf(buf, n, "%g", v);
}

/* ------------------------------------------------------------------------ */
/* Panel 1: decode against context, log-log                                  */
/* ------------------------------------------------------------------------ */

typedef struct scale {
    double lo, hi; /* data range (log10 for log axes) */
    double a, b;   /* pixel range */
} scale;

static double map(const scale *s, double v)
{
    return s->a + (v - s->lo) / (s->hi - s->lo) * (s->b - s->a);
}

static int is_decode_point(const bench_row *r)
{
    return !strcmp(r->group, "decode") && r->context > 0 && r->st.median > 0 &&
           isfinite(r->st.median);
}

/* The thread count plot 1 draws: 1 when measured, else the fewest. */
static int decode_threads(const bench_row *rows, size_t n)
{
    int best = -1;
    for (size_t i = 0; i < n; i++) {
        if (!is_decode_point(&rows[i]))
            continue;
        int t = rows[i].threads;
        if (best < 0 || t == 1 || (best != 1 && t > 0 && t < best))
            best = t;
    }
    return best;
}

/* The smallest context above `after` among the points drawn; INFINITY
 * when none: the x ticks, one per context measured. */
static double next_context(const bench_row *rows, size_t n, int threads, double after)
{
    double next = INFINITY;
    for (size_t i = 0; i < n; i++)
        if (is_decode_point(&rows[i]) && rows[i].threads == threads && rows[i].context > after &&
            rows[i].context < next)
            next = rows[i].context;
    return next;
}

static void panel_decode(FILE *f, const bench_row *rows, size_t n)
{
    int threads = decode_threads(rows, n);
    char title[160] = "Decode: time per token against context (log-log)";
    if (threads == 0)
        snprintf(title, sizeof title, "Decode: time per token against context (log-log, auto threads)");
    else if (threads > 0)
        snprintf(title, sizeof title,
                 "Decode: time per token against context (log-log, %d thread%s)", threads,
                 threads == 1 ? "" : "s");
    text_at(f, LEFT, P1_TOP - 16, "start", "font-size=\"15\" font-weight=\"bold\"", title);
    if (threads < 0) {
        text_at(f, (LEFT + RIGHT) / 2.0, (P1_TOP + P1_BOTTOM) / 2.0, "middle", NULL,
                "no decode rows in this run (suite ops)");
        return;
    }
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        if (!is_decode_point(r) || r->threads != threads)
            continue;
        xmin = fmin(xmin, r->context), xmax = fmax(xmax, r->context);
        ymin = fmin(ymin, r->st.min > 0 ? r->st.min : r->st.median);
        ymax = fmax(ymax, isfinite(r->st.max) ? r->st.max : r->st.median);
    }
    /* x: a little room around the contexts measured, a tick at each of
     * them (powers of two read better as 1k 4k 64k than as decades);
     * y: whole decades */
    double pad = fmax(0.08 * (log10(xmax) - log10(xmin)), 0.1);
    scale sx = {log10(xmin) - pad, log10(xmax) + pad, LEFT, RIGHT};
    scale sy = {floor(log10(ymin)), ceil(log10(ymax)), P1_BOTTOM, P1_TOP};
    if (sy.hi <= sy.lo)
        sy.hi = sy.lo + 1;

    fputs("<g class=\"axes\" stroke=\"#ccc\" stroke-width=\"1\">\n", f);
    double last_x = -INFINITY;
    for (double next; isfinite(next = next_context(rows, n, threads, last_x));) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", map(&sx, log10(next)),
                P1_TOP, map(&sx, log10(next)), P1_BOTTOM);
        last_x = next;
    }
    for (double e = sy.lo; e <= sy.hi; e++) {
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LEFT, map(&sy, e),
                RIGHT, map(&sy, e));
        for (int m = 2; m < 10 && e < sy.hi; m++) {
            double y = map(&sy, e + log10(m));
            fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\"/>\n",
                    LEFT - 4, y, LEFT, y);
        }
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
            LEFT, P1_TOP, RIGHT - LEFT, P1_BOTTOM - P1_TOP);
    fputs("</g>\n", f);
    last_x = -INFINITY;
    for (double next; isfinite(next = next_context(rows, n, threads, last_x));) {
        char label[32];
        count_label(label, sizeof label, next);
        text_at(f, map(&sx, log10(next)), P1_BOTTOM + 18, "middle", NULL, label);
        last_x = next;
    }
    for (double e = sy.lo; e <= sy.hi; e++) {
        char label[32];
        snprintf(label, sizeof label, "%g", pow(10, e));
        text_at(f, LEFT - 8, map(&sy, e) + 4, "end", NULL, label);
    }
    text_at(f, (LEFT + RIGHT) / 2.0, P1_BOTTOM + 40, "middle", NULL,
            "context: tokens already in the KV cache (softmax) or the state (linear)");
    char ylab[80];
    snprintf(ylab, sizeof ylab, "rotate(-90 %d %d)", LEFT - 58, (P1_TOP + P1_BOTTOM) / 2);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" transform=\"%s\">"
               "µs per token (median; bars: min..max)</text>\n",
            LEFT - 58, (P1_TOP + P1_BOTTOM) / 2, ylab);

    /* one series per variant x ISA, in the order the rows came */
    int legend = 0;
    for (size_t i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        if (!is_decode_point(r) || r->threads != threads)
            continue;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = !(is_decode_point(&rows[j]) && rows[j].threads == threads &&
                      !strcmp(rows[j].variant, r->variant) && !strcmp(rows[j].isa, r->isa));
        if (!first)
            continue;
        int linear = !strcmp(r->variant, "linear");
        const char *color = isa_color(r->isa);
        fputs("<g class=\"series\" data-isa=\"", f);
        xml_text(f, r->isa);
        fputs("\" data-variant=\"", f);
        xml_text(f, r->variant);
        fprintf(f, "\" stroke=\"%s\" fill=\"%s\">\n", color, color);
        /* points sorted by context: a selection pass per point keeps the
         * rows' order intact */
        fprintf(f, "<polyline fill=\"none\" stroke-width=\"2\"%s points=\"",
                linear ? " stroke-dasharray=\"7 4\"" : "");
        double last = -INFINITY;
        for (;;) {
            const bench_row *next = NULL;
            for (size_t j = i; j < n; j++) {
                const bench_row *q = &rows[j];
                if (is_decode_point(q) && q->threads == threads && q->context > last &&
                    !strcmp(q->variant, r->variant) && !strcmp(q->isa, r->isa) &&
                    (!next || q->context < next->context))
                    next = q;
            }
            if (!next)
                break;
            fprintf(f, "%.1f,%.1f ", map(&sx, log10(next->context)),
                    map(&sy, log10(next->st.median)));
            last = next->context;
        }
        fputs("\"/>\n", f);
        for (size_t j = i; j < n; j++) {
            const bench_row *q = &rows[j];
            if (!is_decode_point(q) || q->threads != threads || strcmp(q->variant, r->variant) ||
                strcmp(q->isa, r->isa))
                continue;
            double x = map(&sx, log10(q->context)), y = map(&sy, log10(q->st.median));
            if (q->st.min > 0 && isfinite(q->st.max) && q->st.max > q->st.min)
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"1.5\"/>\n",
                        x, map(&sy, log10(q->st.min)), x, map(&sy, log10(q->st.max)));
            if (linear)
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\"/>\n", x - 4, y - 4);
            else
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\"/>\n", x, y);
        }
        /* legend entry */
        double ly = P1_TOP + 10 + 24 * legend++;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke-width=\"2\"%s/>\n",
                LEGEND_X, ly, LEGEND_X + 34, ly, linear ? " stroke-dasharray=\"7 4\"" : "");
        if (linear)
            fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"8\" height=\"8\"/>\n", LEGEND_X + 13,
                    ly - 4);
        else
            fprintf(f, "<circle cx=\"%d\" cy=\"%.1f\" r=\"4.5\"/>\n", LEGEND_X + 17, ly);
        fputs("</g>\n", f);
        char label[64];
        snprintf(label, sizeof label, "%s, %s", r->variant, r->isa);
        text_at(f, LEGEND_X + 42, ly + 5, "start", NULL, label);
    }
}

/* ------------------------------------------------------------------------ */
/* Panel 2: prefill GFLOP/s against the measured peak                         */
/* ------------------------------------------------------------------------ */

static int is_bar(const bench_row *r)
{
    return !strcmp(r->group, "prefill") && !strcmp(r->unit, "GFLOP/s") &&
           isfinite(r->st.median);
}

/* 1, 2 or 5 times a power of ten, at least v/5: about five ticks. */
static double tick_step(double v)
{
    double p = pow(10, floor(log10(v / 5)));
    double m = v / 5 / p;
    return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
}

static void panel_prefill(FILE *f, const bench_row *rows, size_t n)
{
    text_at(f, LEFT, P2_TOP - 16, "start", "font-size=\"15\" font-weight=\"bold\"",
            "Prefill: GFLOP/s per ISA and thread count, against the measured FMA peak");
    size_t bars = 0, clusters = 0;
    double top = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_bar(&rows[i]))
            continue;
        bars++;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = !(is_bar(&rows[j]) && !strcmp(rows[j].name, rows[i].name));
        clusters += first;
        top = fmax(top, rows[i].st.max);
        top = fmax(top, rows[i].st.median);
        if (isfinite(rows[i].peak))
            top = fmax(top, rows[i].peak);
    }
    if (!bars || !(top > 0)) {
        text_at(f, (LEFT + RIGHT) / 2.0, (P2_TOP + P2_BOTTOM) / 2.0, "middle", NULL,
                "no softmax prefill rows in this run (suite ops)");
        return;
    }
    double step = tick_step(top * 1.08);
    scale sy = {0, ceil(top * 1.08 / step) * step, P2_BOTTOM, P2_TOP};
    fputs("<g class=\"axes\" stroke=\"#ccc\" stroke-width=\"1\">\n", f);
    for (double v = 0; v <= sy.hi + step / 2; v += step)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LEFT, map(&sy, v),
                RIGHT, map(&sy, v));
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
            LEFT, P2_TOP, RIGHT - LEFT, P2_BOTTOM - P2_TOP);
    fputs("</g>\n", f);
    for (double v = 0; v <= sy.hi + step / 2; v += step) {
        char label[32];
        snprintf(label, sizeof label, "%g", v);
        text_at(f, LEFT - 8, map(&sy, v) + 4, "end", NULL, label);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">"
               "GFLOP/s (median; whisker: min..max)</text>\n",
            LEFT - 58, (P2_TOP + P2_BOTTOM) / 2, LEFT - 58, (P2_TOP + P2_BOTTOM) / 2);

    /* slots: one per bar, one gap between clusters */
    double slot = (RIGHT - LEFT) / (double)(bars + clusters + 1);
    double bw = fmin(slot * 0.8, 48);
    double x = LEFT + slot;
    for (size_t i = 0; i < n; i++) {
        if (!is_bar(&rows[i]))
            continue;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = !(is_bar(&rows[j]) && !strcmp(rows[j].name, rows[i].name));
        if (!first)
            continue;
        double x0 = x;
        for (size_t j = i; j < n; j++) {
            const bench_row *r = &rows[j];
            if (!is_bar(r) || strcmp(r->name, rows[i].name))
                continue;
            const char *color = isa_color(r->isa);
            double y = map(&sy, r->st.median);
            fputs("<g class=\"bar\" data-isa=\"", f);
            xml_text(f, r->isa);
            fprintf(f, "\" data-threads=\"%d\">\n", r->threads);
            /* one thread lighter, more threads full */
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                       "fill-opacity=\"%s\" stroke=\"%s\"/>\n",
                    x, y, bw, P2_BOTTOM - y, color, r->threads == 1 ? "0.45" : "0.9", color);
            if (isfinite(r->st.min) && isfinite(r->st.max) && r->st.max > r->st.min)
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\"/>\n",
                        x + bw / 2, map(&sy, r->st.min), x + bw / 2, map(&sy, r->st.max));
            if (isfinite(r->peak))
                fprintf(f, "<line class=\"peak\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                           "stroke=\"#000\" stroke-width=\"3\"/>\n",
                        x, map(&sy, r->peak), x + bw, map(&sy, r->peak));
            fputs("</g>\n", f);
            char label[32];
            if (isfinite(r->pct_peak))
                snprintf(label, sizeof label, "%.0f%%", r->pct_peak);
            else
                snprintf(label, sizeof label, "%.0f", r->st.median);
            text_at(f, x + bw / 2, y - 4, "middle", "font-size=\"11\"", label);
            snprintf(label, sizeof label, r->threads ? "%dt" : "auto", r->threads);
            text_at(f, x + bw / 2, P2_BOTTOM + 14, "middle", "font-size=\"11\"", label);
            x += slot;
        }
        text_at(f, (x0 + x - slot + bw) / 2, P2_BOTTOM + 32, "middle", "font-size=\"12\"",
                rows[i].name);
        x += slot;
    }
    /* legend: colours, shades, the peak mark */
    double ly = P2_TOP + 10;
    for (size_t i = 0; i < n; i++) {
        if (!is_bar(&rows[i]))
            continue;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = !(is_bar(&rows[j]) && !strcmp(rows[j].isa, rows[i].isa));
        if (!first)
            continue;
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n",
                LEGEND_X, ly - 7, isa_color(rows[i].isa));
        text_at(f, LEGEND_X + 22, ly + 5, "start", NULL, rows[i].isa);
        ly += 24;
    }
    text_at(f, LEGEND_X, ly + 5, "start", "font-size=\"12\"", "light: 1 thread, dark: more");
    ly += 24;
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\" stroke-width=\"3\"/>\n",
            LEGEND_X, ly, LEGEND_X + 20, ly);
    text_at(f, LEGEND_X + 26, ly + 5, "start", "font-size=\"12\"", "measured FMA peak");
    text_at(f, LEGEND_X, ly + 25, "start", "font-size=\"12\"", "label: % of that peak");
}

int bench_svg_write(FILE *f, const bench_row *rows, size_t n, const char *title,
                    const char *subtitle)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
               "font-size=\"13\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            WIDTH, HEIGHT, WIDTH, HEIGHT);
    text_at(f, WIDTH / 2.0, 26, "middle", "font-size=\"17\" font-weight=\"bold\"",
            title ? title : "linattn-bench");
    if (subtitle)
        text_at(f, WIDTH / 2.0, 46, "middle", "font-size=\"12\" fill=\"#444\"", subtitle);
    panel_decode(f, rows, n);
    panel_prefill(f, rows, n);
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
