/* attention_linear.c: linear attention (phi = elu + 1): the operator, recurrent and chunked prefill, the decode state. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "../simd/cpu.h"

#ifdef LINATTN_HAVE_OPENMP
#include <omp.h>
#endif

/* Keys summed alone before they join S (a block; see lin_sums), and the
 * rows per chunk of the chunked prefill, which folds a chunk as a block.
 * Small chunks keep the masked C x C product cheap (2C(dk+dv) per row
 * against 4 dk dv for the state); measured with the AVX2 kernels at
 * d = 64..256, C = 16 beat 32, 48, 64 and 128 by 5-30%. */
#define LIN_B LINATTN_BLOCK_ROWS
#define LIN_C LIN_B
_Static_assert(LINATTN_BLOCK_ROWS == LINATTN_LINEAR_BLOCK, "the kernels' block is the state's");
/* Rows per block of the passes with no intra-block dependency (phi,
 * absorb, read). */
#define LIN_RC 64
/* Rows per linear_block_rows call of the recurrent prefill (its kernels
 * take 3 at a time). */
#ifndef LIN_G
#define LIN_G 3
#endif

/* A head is split over threads only when each gets at least this many
 * rows; below it the fork and the extra absorb pass cost more than they save. */
enum { LIN_SPLIT_MIN = 256 };

/* Absorbing a key (phi(K)^T V by gemm) costs about this fraction of
 * processing a paired row; it sizes the parallel split's segments.
 * Measured (AVX2, d = 64, H = 8, L = 4096): absorbing every key and
 * reading every query (non-causal) 15 ms, the recurrent causal pass
 * 14.3 ms, so absorbing alone is about half a paired row. */
static const double lin_absorb_ratio = 0.5;

/* The size rule. The recurrent kernel reads and writes S once per token;
 * the chunked form touches S once per C tokens but does the same 4 dk dv
 * flops per token through small gemms, plus the masked C x C product.
 * Measured (AVX2 kernels, one thread, CPU time, tokens/s, L = 2048,
 * H = 512/d, C = 16):
 *   d        32    64    96   112   128   256
 *   recur   445k  315k  241k  216k  145k   77k
 *   chunk   276k  240k  219k  215k  175k  101k
 * and again after the faster AVX2 kernel (64-column block in assembly,
 * phi in 16-row batches), L = 4096, linattn-bench linear-mode-*
 * (H = 8, but H = 2 at d = 256):
 *   d        32    64   128   256
 *   recur  1030k  348k   72k   65-78k
 *   chunk   632k  252k   84-87k   94-101k
 * and after linear_block_rows and the prefetches (L = 4096, H = 8, d = 64,
 * AVX2 / AVX-512, a busy machine): recur 460k / 650k, chunk 376-418k / 588-623k;
 * so the recurrent form wins while S (4 dk dv bytes) fits in the core's
 * L1 data cache (read from the CPU: 48 KiB here, d <= 110) and the
 * chunked one once S spills to L2, where every token would stream S in
 * and out (about 350 ns per 16 KiB). Without a register-blocked gemm (the
 * scalar table) the recurrent form wins at every d (d = 64: 86k against
 * 48k; d = 256: 31k against 23k). */
linattn_linear_mode linattn_linear_auto_mode(int n, int d_k, int d_v)
{
    const linattn_kernels *kt;
    if (linattn_kernels_current(&kt) != LINATTN_OK || !kt->blocked_gemm || n < 2 * LIN_C ||
        (size_t)d_k * (size_t)d_v * sizeof(float) <= linattn_cpu_l1d_bytes())
        return LINATTN_LINEAR_RECURRENT;
    return LINATTN_LINEAR_CHUNKED;
}

static linattn_linear_mode lin_mode(linattn_linear_mode forced, int n, int dk, int dv)
{
    return forced != LINATTN_LINEAR_AUTO ? forced : linattn_linear_auto_mode(n, dk, dv);
}

/* One head's sums: S and z hold every key up to the last whole block
 * (folded); the keys since, fewer than a block, wait as rows of phi(k) and
 * v. A read adds the rows to what S gives; a full block is summed alone
 * and then added to S once. Adding one key at a time to a large S loses
 * its low bits: after 10M tokens the outputs were off by 5e-3 (relative,
 * against float64 sums); adding sums of 16 keys keeps them within 1e-5
 * (measured in test_attention's long-stream test). */
typedef struct lin_sums {
    float *S, *z; /* [dk][dv], [dk] */
    float *K, *V; /* [LIN_B][dk], [LIN_B][dv]: phi(k), v of the rows since the fold */
    int rows;     /* 0 .. LIN_B - 1 */
} lin_sums;

/* One thread's buffers, carved from the workspace. */
typedef struct lin_buffers {
    lin_sums own;   /* working sums (with their rows) */
    lin_sums seg;   /* a segment's own sums (parallel split) */
    float *pq;      /* [RC][dk]  phi(q) rows */
    float *pk;      /* [RC][dk]  phi(k) rows */
    float *pkt;     /* [RC][dk]  phi(k) rows weighed (a decayed fold) */
    float *a;       /* [C][C]    masked phi(Q) phi(K)^T */
    float *den;     /* [RC]      denominators */
    float *vs;      /* [RC][dv]  v rows times 2^-vexp (lin_v_rows) */
} lin_buffers;

/* Floats of one set of sums with its rows. */
static size_t lin_sums_floats(size_t dk, size_t dv)
{
    size_t f = attn_add(attn_round(attn_mul(dk, dv)), attn_round(dk));
    return attn_add(f, attn_add(attn_round(attn_mul(LIN_B, dk)), attn_round(attn_mul(LIN_B, dv))));
}

static lin_sums lin_sums_at(float *base, size_t dk, size_t dv)
{
    lin_sums s;
    s.S = base;
    s.z = s.S + attn_round(dk * dv);
    s.K = s.z + attn_round(dk);
    s.V = s.K + attn_round(LIN_B * dk);
    s.rows = 0;
    return s;
}

static void lin_sums_clear(lin_sums *s, size_t dk, size_t dv)
{
    memset(s->S, 0, dk * dv * sizeof(float));
    memset(s->z, 0, dk * sizeof(float));
    s->rows = 0;
}

static size_t lin_thread_floats(size_t dk, size_t dv)
{
    size_t f = attn_mul(2, lin_sums_floats(dk, dv));
    f = attn_add(f, attn_mul(3, attn_round(attn_mul(LIN_RC, dk))));
    f = attn_add(f, attn_round((size_t)LIN_C * LIN_C));
    f = attn_add(f, attn_round(attn_mul(LIN_RC, dv)));
    return attn_add(f, attn_round(LIN_RC));
}

static lin_buffers lin_carve(float *base, size_t dk, size_t dv)
{
    lin_buffers b;
    b.own = lin_sums_at(base, dk, dv);
    b.seg = lin_sums_at(base + lin_sums_floats(dk, dv), dk, dv);
    b.pq = base + 2 * lin_sums_floats(dk, dv);
    b.pk = b.pq + attn_round(LIN_RC * dk);
    b.pkt = b.pk + attn_round(LIN_RC * dk);
    b.a = b.pkt + attn_round(LIN_RC * dk);
    b.den = b.a + attn_round((size_t)LIN_C * LIN_C);
    b.vs = b.den + attn_round(LIN_RC);
    return b;
}

size_t linattn_attention_linear_workspace(const linattn_attention_desc *d)
{
    if (!d || d->d_k <= 0 || d->d_v <= 0 || d->threads < 0)
        return 0;
    size_t dk = (size_t)d->d_k, dv = (size_t)d->d_v;
    return attn_workspace_bytes(lin_sums_floats(dk, dv), lin_thread_floats(dk, dv),
                                attn_threads_max(d->threads));
}

/* A head's powers of its decay g: pw[n] = g^n for the block sizes the
 * passes use, rw[j] = g^(LIN_RC - 1 - j) (rw + LIN_RC - n weighs n rows,
 * oldest first). Made once per head: no pow on the hot path. */
typedef struct lin_pow {
    float pw[LIN_RC + 1];
    float rw[LIN_RC];
} lin_pow;

static void lin_pow_make(lin_pow *p, float g);

/* One head's sequence: its tensors and which rows do what. */
typedef struct lin_seq {
    const linattn_kernels *kt;
    const float *q, *k, *v;
    float *out;
    size_t qr, kr, vr, orow; /* row strides */
    int Lq, Lk, len, causal, dk, dv;
    float eps;
    /* Decay g of this head (1: none, and every path runs its undecayed
     * arithmetic) and its powers. */
    float decay;
    const lin_pow *pow;
    linattn_linear_mode mode; /* AUTO or the algorithm asked for */
    /* Range scales (lin_seq_scale): phi(q) rows are taken times qscale = 2^-qexp,
     * phi(k) rows times 2^-kexp and v rows times 2^-vexp, so the sums and
     * dots stay far below FLT_MAX; eps is then eps 2^-(qexp + kexp) and
     * the outputs are scaled back by 2^vexp. Powers of two: exact, and all
     * 0 (nothing scaled, the arithmetic as without them) unless an input
     * passes 2^LIN_T. */
    float qscale, kscale;
    int vexp;
    /* Non-NULL: the scales were taken as none without the range pass
     * (lin_seq_trusting), and *over is set where an input would have
     * needed one (the head then runs again with them). */
    int *over;
    /* Derived (lin_seq_ranges): keys [0, absorb_end) go into the state
     * before any row; rows [0, zero_end) see no key and output 0; rows
     * [zero_end, pair_end) are paired with key i + (Lk - Lq), which they
     * absorb then read; rows [pair_end, Lq) read the final state. */
    int absorb_end, zero_end, pair_end;
} lin_seq;

/* The range rule (see lin_seq): an input whose phi (q, k) or magnitude (v)
 * passes 2^LIN_T is scaled down to below it. Then a term of S is below
 * 2^(2 LIN_T), a read's sums below dk n 2^(3 LIN_T) for n keys: far from
 * FLT_MAX (2^128) for any dk and stream length a state can hold, while
 * inputs of a normal model (|x| up to 10^6) are never scaled. */
#define LIN_T 20

/* The least e >= 0 with x 2^-e <= 2^LIN_T (0 for NaN or inf: they are not
 * scaled, they reach the rows that see them). */
static int lin_exp_over(float x)
{
    if (!(x > 0x1p20f) || isinf(x))
        return 0;
    return ilogbf(x) - LIN_T + 1;
}

/* The largest finite x (|x| when absolute) of n rows of d (row stride ld);
 * -inf without one. The slow pass: only for rows the checks below send. */
static float lin_rows_max(const float *x, size_t ld, int n, size_t d, int absolute)
{
    float m = -INFINITY;
    for (int r = 0; r < n; r++)
        for (size_t c = 0; c < d; c++) {
            float a = absolute ? fabsf(x[(size_t)r * ld + c]) : x[(size_t)r * ld + c];
            m = a > m && a <= FLT_MAX ? a : m;
        }
    return m;
}

/* The exponent phi of n rows needs (phi(x) = x + 1 is the largest for the
 * largest x): one max kernel a row (all rows at once when dense); its NaN
 * (a value not finite) sends the rows to the slow pass. */
static int lin_phi_exp(const linattn_kernels *kt, const float *x, size_t ld, int n, size_t d)
{
    float m = -INFINITY;
    for (int r = 0; r < n; r += ld == d ? n : 1) {
        const int rows = ld == d ? n : 1;
        float mr = kt->max(x + (size_t)r * ld, (size_t)rows * d);
        if (isnan(mr))
            mr = lin_rows_max(x + (size_t)r * ld, ld, rows, d, 0);
        m = mr > m ? mr : m;
    }
    return lin_exp_over(m + 1.0f);
}

/* A row of v whose sum of squares is at most 2^(2 LIN_T) has no |v| past
 * 2^LIN_T (one dot kernel); 0 for the others and rows with a value not
 * finite. */
static int lin_v_row_small(const linattn_kernels *kt, const float *row, size_t d)
{
    return kt->dot(row, row, d) <= 0x1p40f;
}

/* The exponent n rows of v need: only the rows not lin_v_row_small take
 * the slow pass. */
static int lin_v_exp(const linattn_kernels *kt, const float *v, size_t ld, int n, size_t d)
{
    float m = 0.0f;
    for (int r = 0; r < n; r++) {
        const float *row = v + (size_t)r * ld;
        if (lin_v_row_small(kt, row, d))
            continue;
        float a = lin_rows_max(row, ld, 1, d, 1);
        m = a > m ? a : m;
    }
    return lin_exp_over(m);
}

/* s's scales: keys 2^-kexp, values 2^-vexp (the sums' own), queries from
 * its Lq rows; eps goes with phi(q) phi(k). */
static void lin_seq_scale(lin_seq *s, int kexp, int vexp, float eps)
{
    const int qexp = lin_phi_exp(s->kt, s->q, s->qr, s->Lq, (size_t)s->dk);
    s->qscale = ldexpf(1.0f, -qexp);
    s->kscale = ldexpf(1.0f, -kexp);
    s->vexp = vexp;
    s->eps = qexp + kexp ? ldexpf(eps, -(qexp + kexp)) : eps;
}

/* The outputs' rows [0, Lq) back from v 2^-vexp. */
static void lin_seq_unscale(const lin_seq *s)
{
    if (s->vexp == 0)
        return;
    const float f = ldexpf(1.0f, s->vexp);
    for (int i = 0; i < s->Lq; i++)
        s->kt->scale(s->out + (size_t)i * s->orow, f, (size_t)s->dv);
}

/* empty: the state starts with no key (the operator, not a stream). */
static void lin_seq_ranges(lin_seq *s, int empty)
{
    if (!s->causal) {
        s->absorb_end = s->len;
        s->zero_end = s->pair_end = empty && s->len == 0 ? s->Lq : 0;
        return;
    }
    const int off = s->Lk - s->Lq;
    s->absorb_end = off > 0 ? (off < s->len ? off : s->len) : 0;
    if (empty && s->len == 0)
        s->zero_end = s->Lq;
    else
        s->zero_end = empty && off < 0 ? (-off < s->Lq ? -off : s->Lq) : 0;
    int pe = s->len - off;
    s->pair_end = pe < s->zero_end ? s->zero_end : pe > s->Lq ? s->Lq : pe;
}

/* g^n, rounded once from double; for any n (underflows to 0). */
static float decay_pow(float g, double n)
{
    return g == 1.0f ? 1.0f : (float)exp(n * log((double)g));
}

static void lin_pow_make(lin_pow *p, float g)
{
    for (int n = 0; n <= LIN_RC; n++)
        p->pw[n] = decay_pow(g, n);
    for (int j = 0; j < LIN_RC; j++)
        p->rw[j] = p->pw[LIN_RC - 1 - j];
}

/* Sets the head's decay and its powers (made in *storage, which must
 * outlive s). */
static void lin_seq_decay(lin_seq *s, float g, lin_pow *storage)
{
    s->decay = g;
    lin_pow_make(storage, g);
    s->pow = storage;
}

/* o[0..n) = c o / den: by one reciprocal while it is finite, by division
 * when den is so small (below FLT_MIN) that 1/den would overflow although
 * the ratio is finite, and 0 when den is 0 (eps = 0 and every phi(k) or
 * phi(q) underflowed: the row sees nothing). The same rule as the kernels'. */
static void lin_divide(const linattn_kernels *kt, float *o, size_t n, float c, float den)
{
    if (den >= FLT_MIN) {
        kt->scale(o, c / den, n);
    } else if (den == 0.0f) {
        memset(o, 0, n * sizeof(float));
    } else {
        for (size_t i = 0; i < n; i++)
            o[i] = c * o[i] / den;
    }
}

/* phi of n rows of width d (row stride ld) into dst (n x d, dense). */
static void lin_phi_rows(const linattn_kernels *kt, float *dst, const float *src, size_t ld,
                         int n, size_t d)
{
    if (ld == d) {
        kt->elu1(dst, src, (size_t)n * d);
        return;
    }
    for (int r = 0; r < n; r++)
        kt->elu1(dst + (size_t)r * d, src + (size_t)r * ld, d);
}

/* phi rows times scale (a power of two, 1: none) */
static void lin_phi_scaled(const lin_seq *s, float *dst, const float *src, size_t ld, int n,
                           float scale)
{
    lin_phi_rows(s->kt, dst, src, ld, n, (size_t)s->dk);
    /* lin_phi_exp's test, on phi's own rows while they are in cache: the
     * max of phi is the max x + 1 it tests (NaN: a value not finite, which
     * its slow pass would look past) */
    if (s->over) {
        const float mx = s->kt->max(dst, (size_t)n * (size_t)s->dk);
        if (isnan(mx) || lin_exp_over(mx) != 0)
            *s->over = 1;
    }
    if (scale != 1.0f)
        s->kt->scale(dst, scale, (size_t)n * (size_t)s->dk);
}

/* The m value rows of keys [j0, j0 + m) (m <= LIN_RC) as the sums take
 * them: in place, or times 2^-vexp into b->vs; *vr: their row stride. */
static const float *lin_v_rows(const lin_seq *s, lin_buffers *b, int j0, int m, size_t *vr)
{
    const float *v = s->v + (size_t)j0 * s->vr;
    if (s->vexp == 0) {
        *vr = s->vr;
        /* lin_v_exp's test, here where the rows are read anyway */
        for (int r = 0; s->over && r < m; r++)
            if (!lin_v_row_small(s->kt, v + (size_t)r * s->vr, (size_t)s->dv))
                *s->over = 1;
        return v;
    }
    const size_t dv = (size_t)s->dv;
    const float f = ldexpf(1.0f, -s->vexp);
    for (int r = 0; r < m; r++)
        for (size_t c = 0; c < dv; c++)
            b->vs[(size_t)r * dv + c] = f * v[(size_t)r * s->vr + c];
    *vr = dv;
    return b->vs;
}

/* S, z = g^m S, z + the sums of m rows of phi(k) (K, row stride kr) and
 * v (V, row stride vr), row r weighed g^(m-1-r). gemm_tn (K^T V, the rows
 * read as they are) and gemm_nn form the rows' sums apart and add them to
 * S and z once (kernels.h). */
static void lin_fold_rows(const lin_seq *s, lin_buffers *b, float *S, float *z, const float *K,
                          size_t kr, const float *V, size_t vr, int m)
{
    const linattn_kernels *kt = s->kt;
    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv;
    const float *w = s->pow->rw + LIN_RC - m; /* all 1 without decay */
    const float *A = K;
    size_t lda = kr;
    if (s->decay != 1.0f) {
        for (int r = 0; r < m; r++) /* each row weighed, into dense rows */
            for (size_t c = 0; c < dk; c++)
                b->pkt[(size_t)r * dk + c] = w[r] * K[(size_t)r * kr + c];
        A = b->pkt, lda = dk;
        kt->scale(S, s->pow->pw[m], dk * dv);
        kt->scale(z, s->pow->pw[m], dk);
    }
    kt->gemm_tn(S, dv, A, lda, V, vr, dk, dv, (size_t)m);
    kt->gemm_nn(z, dk, w, (size_t)m, K, kr, 1, dk, (size_t)m);
}

/* The waiting rows join S (a whole block, or what is left at the end of
 * an operator call). */
static void lin_fold(const lin_seq *s, lin_buffers *b, lin_sums *st)
{
    if (st->rows == 0)
        return;
    lin_fold_rows(s, b, st->S, st->z, st->K, (size_t)s->dk, st->V, (size_t)s->dv, st->rows);
    st->rows = 0;
}

/* One key (phi(k) row pk, value v) joins the rows; a full block folds. */
static void lin_push(const lin_seq *s, lin_buffers *b, lin_sums *st, const float *pk,
                     const float *v)
{
    memcpy(st->K + (size_t)st->rows * s->dk, pk, (size_t)s->dk * sizeof(float));
    memcpy(st->V + (size_t)st->rows * s->dv, v, (size_t)s->dv * sizeof(float));
    if (++st->rows == LIN_B)
        lin_fold(s, b, st);
}

/* Keys [j0, j1) join the sums, unread: row by row up to a block boundary,
 * the whole blocks of each phi batch in one fold, the rest as rows. */
static void lin_absorb(const lin_seq *s, lin_buffers *b, lin_sums *st, int j0, int j1)
{
    const size_t dk = (size_t)s->dk;
    for (int c0 = j0; c0 < j1; c0 += LIN_RC) {
        int m = j1 - c0 < LIN_RC ? j1 - c0 : LIN_RC, r = 0;
        lin_phi_scaled(s, b->pk, s->k + (size_t)c0 * s->kr, s->kr, m, s->kscale);
        size_t vr;
        const float *v = lin_v_rows(s, b, c0, m, &vr);
        while (r < m && st->rows != 0) {
            lin_push(s, b, st, b->pk + (size_t)r * dk, v + (size_t)r * vr);
            r++;
        }
        /* whole blocks at once (up to LIN_RC keys): one gemm, summed alone */
        int whole = (m - r) / LIN_B * LIN_B;
        if (whole > 0)
            lin_fold_rows(s, b, st->S, st->z, b->pk + (size_t)r * dk, dk, v + (size_t)r * vr, vr,
                          whole);
        r += whole;
        for (; r < m; r++)
            lin_push(s, b, st, b->pk + (size_t)r * dk, v + (size_t)r * vr);
    }
}

/* Rows [i0, i1) read the final state: out = phi(q)^T S / (phi(q)^T z + eps)
 * (waiting rows folded first: an operator call, nothing reads after).
 * Decayed (causal), the state holds the keys up to len - 1 and row i reads
 * it g^(i + Lk - Lq - len + 1) later: numerator and denominator both scale. */
static void lin_read(const lin_seq *s, lin_buffers *b, lin_sums *st, int i0, int i1)
{
    const linattn_kernels *kt = s->kt;
    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv;
    if (i0 < i1)
        lin_fold(s, b, st);
    for (int c0 = i0; c0 < i1; c0 += LIN_RC) {
        int m = i1 - c0 < LIN_RC ? i1 - c0 : LIN_RC;
        float *o = s->out + (size_t)c0 * s->orow;
        lin_phi_scaled(s, b->pq, s->q + (size_t)c0 * s->qr, s->qr, m, s->qscale);
        for (int r = 0; r < m; r++)
            memset(o + (size_t)r * s->orow, 0, dv * sizeof(float));
        kt->gemm_nn(o, s->orow, b->pq, dk, st->S, dv, (size_t)m, dv, dk);
        for (int r = 0; r < m; r++) {
            float g = 1.0f;
            if (s->decay != 1.0f && s->causal)
                g = decay_pow(s->decay, (double)c0 + r + s->Lk - s->Lq - s->len + 1);
            float den = g * kt->dot(b->pq + (size_t)r * dk, st->z, dk) + s->eps;
            lin_divide(kt, o + (size_t)r * s->orow, dv, g, den);
        }
    }
}

/* One query row against the sums and the waiting rows (which include its
 * own key): the decode step's read. */
static void lin_read_row(const lin_seq *s, const lin_sums *st, const float *pq, float *out)
{
    const int n = st->rows;
    s->kt->linear_block_read(out, pq, st->S, st->z, st->K, st->V, s->pow->rw + LIN_RC - n, n,
                             s->pow->pw[n], (size_t)s->dk, (size_t)s->dv, s->eps);
}

/* Asks for the n bytes at p in cache soon (w: to be written). A block of
 * 16 rows of d = 64 is one 4 KiB page, where the hardware prefetchers stop:
 * without this every block's q and k rows came from memory as phi read
 * them (a third of phi's time). */
static void lin_prefetch(const void *p, size_t n, int w)
{
    const char *c = (const char *)p;
    for (size_t i = 0; i < n; i += 64) {
        if (w)
            __builtin_prefetch(c + i, 1);
        else
            __builtin_prefetch(c + i, 0);
    }
}

/* Paired rows [i0, i1), token by token as the decode step goes (each key
 * joins the waiting rows, the row reads, a full block folds), a block's
 * rows in one linear_block_rows call: the step's arithmetic, bit for bit,
 * with S read once per few rows. A whole block (no row waiting before it)
 * is read and folded where its rows lie, phi(k) written once and v read in
 * place when its rows are dense; else the rows are copied to wait. */
static void lin_pairs_recurrent(const lin_seq *s, lin_buffers *b, lin_sums *st, int i0, int i1)
{
    const linattn_kernels *kt = s->kt;
    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv;
    const int off = s->Lk - s->Lq;
    for (int c0 = i0; c0 < i1;) {
        const int n0 = st->rows, m = i1 - c0 < LIN_B - n0 ? i1 - c0 : LIN_B - n0;
        size_t vr;
        const float *v = lin_v_rows(s, b, c0 + off, m, &vr);
        const int whole = m == LIN_B && vr == dv; /* then n0 == 0 */
        float *o = s->out + (size_t)c0 * s->orow;
        float *K = whole ? b->pk : st->K;
        const float *V = whole ? v : st->V;
        lin_phi_scaled(s, b->pq, s->q + (size_t)c0 * s->qr, s->qr, m, s->qscale);
        lin_phi_scaled(s, K + (size_t)n0 * dk, s->k + (size_t)(c0 + off) * s->kr, s->kr, m,
                       s->kscale);
        if (!whole)
            for (int r = 0; r < m; r++)
                memcpy(st->V + (size_t)(n0 + r) * dv, v + (size_t)r * vr, dv * sizeof(float));
        /* the rows LIN_G at a time, between them the next block's rows
         * asked for (all at once they would queue behind each other) */
        const int nx = i1 - (c0 + m) < LIN_B ? i1 - (c0 + m) : LIN_B;
        for (int g = 0, x = 0; g < m; g += LIN_G) {
            const int mg = m - g < LIN_G ? m - g : LIN_G;
            for (int xe = nx * (g + mg) / m; x < xe; x++) {
                const size_t i = (size_t)(c0 + m + x);
                lin_prefetch(s->q + i * s->qr, dk * sizeof(float), 0);
                lin_prefetch(s->k + (i + off) * s->kr, dk * sizeof(float), 0);
                lin_prefetch(s->v + (i + off) * s->vr, dv * sizeof(float), 0);
                lin_prefetch(s->out + i * s->orow, dv * sizeof(float), 1);
            }
            kt->linear_block_rows(o + (size_t)g * s->orow, s->orow, b->pq + (size_t)g * dk, st->S,
                                  st->z, K, V, s->pow->rw + LIN_RC - (n0 + g + mg),
                                  s->pow->pw + n0 + g + 1, n0 + g, mg, dk, dv, s->eps);
        }
        if (whole) {
            lin_fold_rows(s, b, st->S, st->z, K, dk, V, vr, LIN_B);
        } else {
            st->rows += m;
            if (st->rows == LIN_B)
                lin_fold(s, b, st);
        }
        c0 += m;
    }
}

/* Whole blocks of paired rows [i0, i1) (a multiple of C = LIN_B, the sums
 * with no waiting row), all by gemm:
 *   out = (phiQ S + mask(phiQ phiK^T) V) / (phiQ z + rowsum mask(phiQ phiK^T) + eps)
 * where mask keeps the lower triangle (row r sees the chunk's keys 0..r),
 * then the chunk folds into S as a block does. Decayed, row r reads
 * g^(r+1) S and the mask weighs key j by g^(r-j). */
static void lin_pairs_chunked(const lin_seq *s, lin_buffers *b, lin_sums *st, int i0, int i1)
{
    const linattn_kernels *kt = s->kt;
    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv;
    const int off = s->Lk - s->Lq;
    const int decayed = s->decay != 1.0f;
    for (int c0 = i0; c0 < i1; c0 += LIN_C) {
        const size_t m = LIN_C;
        lin_phi_scaled(s, b->pq, s->q + (size_t)c0 * s->qr, s->qr, (int)m, s->qscale);
        lin_phi_scaled(s, b->pk, s->k + (size_t)(c0 + off) * s->kr, s->kr, (int)m, s->kscale);
        size_t vr;
        const float *v = lin_v_rows(s, b, c0 + off, (int)m, &vr);
        float *o = s->out + (size_t)c0 * s->orow;

        /* Earlier chunks, through the state. */
        for (size_t r = 0; r < m; r++)
            memset(o + r * s->orow, 0, dv * sizeof(float));
        kt->gemm_nn(o, s->orow, b->pq, dk, st->S, dv, m, dv, dk);
        for (size_t r = 0; r < m; r++)
            b->den[r] = kt->dot(b->pq + r * dk, st->z, dk);
        if (decayed)
            for (size_t r = 0; r < m; r++) {
                kt->scale(o + r * s->orow, s->pow->pw[r + 1], dv);
                b->den[r] *= s->pow->pw[r + 1];
            }

        /* This chunk, through the masked scores. */
        for (size_t r = 0; r < m; r++)
            memset(b->a + r * LIN_C, 0, m * sizeof(float));
        kt->gemm_nt(b->a, LIN_C, b->pq, dk, b->pk, dk, m, m, dk);
        for (size_t r = 0; r < m; r++) {
            float *row = b->a + r * LIN_C;
            memset(row + r + 1, 0, (m - r - 1) * sizeof(float));
            if (decayed)
                for (size_t j = 0; j <= r; j++)
                    row[j] *= s->pow->pw[r - j];
            b->den[r] += kt->sum(row, r + 1);
        }
        /* Row r reads values 0..r only: a masked zero times a later inf or
         * NaN value would be NaN, and causality must hold for those too. */
        for (size_t r = 0; r < m; r++) {
            if (c0 + LIN_C < i1) { /* row r of the next chunk (see lin_prefetch) */
                const size_t x = (size_t)c0 + LIN_C + r;
                lin_prefetch(s->q + x * s->qr, dk * sizeof(float), 0);
                lin_prefetch(s->k + (x + off) * s->kr, dk * sizeof(float), 0);
                lin_prefetch(s->v + (x + off) * s->vr, dv * sizeof(float), 0);
                lin_prefetch(s->out + x * s->orow, dv * sizeof(float), 1);
            }
            kt->gemm_nn(o + r * s->orow, s->orow, b->a + r * LIN_C, LIN_C, v, vr, 1, dv, r + 1);
        }
        for (size_t r = 0; r < m; r++)
            lin_divide(kt, o + r * s->orow, dv, 1.0f, b->den[r] + s->eps);

        /* Then the chunk joins the state, as a block. */
        lin_fold_rows(s, b, st->S, st->z, b->pk, dk, v, vr, LIN_C);
    }
}

/* Paired rows [i0, i1). The chunked form takes whole blocks only: the
 * waiting rows are completed row by row first, and what is left after the
 * last whole block waits as rows, so blocks fold at the same keys on every
 * path (a stream's keys 16 t .. 16 t + 15). */
static void lin_pairs(const lin_seq *s, lin_buffers *b, lin_sums *st, int i0, int i1)
{
    if (i1 <= i0)
        return;
    if (lin_mode(s->mode, i1 - i0, s->dk, s->dv) == LINATTN_LINEAR_CHUNKED) {
        int head = st->rows ? LIN_B - st->rows : 0;
        head = head < i1 - i0 ? head : i1 - i0;
        lin_pairs_recurrent(s, b, st, i0, i0 + head);
        i0 += head;
        int whole = (i1 - i0) / LIN_C * LIN_C;
        lin_pairs_chunked(s, b, st, i0, i0 + whole);
        i0 += whole;
    }
    lin_pairs_recurrent(s, b, st, i0, i1);
}

static void lin_zero_rows(const lin_seq *s, int i0, int i1)
{
    for (int i = i0; i < i1; i++)
        memset(s->out + (size_t)i * s->orow, 0, (size_t)s->dv * sizeof(float));
}

/* One head on one thread; st holds the sums before and after. */
static void lin_head_seq(const lin_seq *s, lin_buffers *b, lin_sums *st)
{
    lin_absorb(s, b, st, 0, s->absorb_end);
    lin_zero_rows(s, 0, s->zero_end);
    lin_pairs(s, b, st, s->zero_end, s->pair_end);
    lin_read(s, b, st, s->pair_end, s->Lq);
}

/* dst += c src (c = 1: a plain add, as without decay). */
static void add_scaled(float *dst, const float *src, size_t n, float c)
{
    if (c == 1.0f) {
        for (size_t i = 0; i < n; i++)
            dst[i] += src[i];
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] += c * src[i];
    }
}

/* Start, within n paired rows, of thread t's segment of T. Thread 0 spends
 * the others' absorb phase already processing, so its segment is longer:
 * x0 = n / (1 + (T-1)(1-ratio)), the rest share n - x0 evenly. Every start
 * is a multiple of LIN_B, so blocks fold at the keys they fold at on one
 * thread. */
static int seg_start(int n, int T, int t)
{
    if (t <= 0)
        return 0;
    if (t >= T)
        return n;
    int x0 = (int)((double)n / (1.0 + (T - 1) * (1.0 - lin_absorb_ratio)));
    int x = x0 + (int)((long long)(n - x0) * (t - 1) / (T - 1));
    return x / LIN_B * LIN_B;
}

/* One head spread over nt threads (when there are fewer heads than
 * threads). The state after keys [0, j) is the state before plus the sum
 * of their phi(k) v^T, so: keys before the first query are absorbed in
 * parallel and reduced; the paired rows are cut into segments of whole
 * blocks, thread t absorbs segment t-1 while thread 0 starts segment 0,
 * then thread t rebuilds its starting state as a prefix sum and processes
 * segment t. The rows before the first block boundary and after the last
 * go row by row on the calling thread, so the waiting rows at the end are
 * the stream's own. st: the head's sums before and after. ws: nt thread
 * blocks. */
static void lin_head_split(const lin_seq *s, float *ws, size_t per_thread, lin_sums *st, int nt)
{
    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv, nS = dk * dv;
    lin_buffers b0 = lin_carve(ws, dk, dv);
    /* keys every row sees: in parts over the threads, or here */
    int parallel_absorb = s->absorb_end >= nt * LIN_SPLIT_MIN;
    if (!parallel_absorb)
        lin_absorb(s, &b0, st, 0, s->absorb_end);
    else
        lin_fold(s, &b0, st);
    lin_zero_rows(s, 0, s->zero_end);
    /* paired rows: up to a block boundary here, whole blocks in parallel */
    int p0 = s->zero_end, head = st->rows && !parallel_absorb ? LIN_B - st->rows : 0;
    head = head < s->pair_end - p0 ? head : s->pair_end - p0;
    lin_pairs_recurrent(s, &b0, st, p0, p0 + head);
    p0 += head;
    const int npair = (s->pair_end - p0) / LIN_B * LIN_B;
    const int split = nt > 1 && npair >= nt * LIN_SPLIT_MIN;
    float *HS = st->S, *Hz = st->z;

    if (parallel_absorb || split) {
#ifdef LINATTN_HAVE_OPENMP
#pragma omp parallel num_threads(nt)
#endif
        {
            const int t = attn_thread_id();
#ifdef LINATTN_HAVE_OPENMP
            const int T = omp_get_num_threads();
#else
            const int T = 1;
#endif
            lin_buffers b = lin_carve(ws + (size_t)t * per_thread, dk, dv);

            if (parallel_absorb) {
                const int n = s->absorb_end;
                lin_sums_clear(&b.seg, dk, dv);
                lin_absorb(s, &b, &b.seg, (int)((long long)n * t / T),
                           (int)((long long)n * (t + 1) / T));
                lin_fold(s, &b, &b.seg);
#ifdef LINATTN_HAVE_OPENMP
#pragma omp barrier
#pragma omp for schedule(static)
#endif
                for (long c = 0; c < (long)dk; c++) {
                    /* decayed: the state before ages by n keys, part u by
                     * the keys after its end */
                    if (s->decay != 1.0f) {
                        const float gn = decay_pow(s->decay, n);
                        for (size_t j = 0; j < dv; j++)
                            HS[(size_t)c * dv + j] *= gn;
                        Hz[c] *= gn;
                    }
                    for (int u = 0; u < T; u++) {
                        lin_buffers bu = lin_carve(ws + (size_t)u * per_thread, dk, dv);
                        const float g =
                            decay_pow(s->decay, n - (int)((long long)n * (u + 1) / T));
                        add_scaled(HS + (size_t)c * dv, bu.seg.S + (size_t)c * dv, dv, g);
                        Hz[c] += g * bu.seg.z[c];
                    }
                }
#ifdef LINATTN_HAVE_OPENMP
#pragma omp barrier
#endif
            }

            if (split && T > 1) {
                const int base = p0, off = s->Lk - s->Lq;
                const int a0 = base + seg_start(npair, T, t);
                const int a1 = base + seg_start(npair, T, t + 1);
                const int y = a0 + (int)(lin_absorb_ratio * (a1 - a0)) / LIN_B * LIN_B;
                if (t == 0) {
                    memcpy(b.own.S, HS, nS * sizeof(float));
                    memcpy(b.own.z, Hz, dk * sizeof(float));
                    b.own.rows = 0;
                    lin_pairs(s, &b, &b.own, a0, y);
                } else {
                    const int q0 = base + seg_start(npair, T, t - 1);
                    lin_sums_clear(&b.seg, dk, dv);
                    lin_absorb(s, &b, &b.seg, q0 + off, a0 + off);
                }
#ifdef LINATTN_HAVE_OPENMP
#pragma omp barrier
#endif
                if (t == 0) {
                    lin_pairs(s, &b, &b.own, y, a1);
                } else {
                    /* the state at a0: the one before, aged by a0 - base
                     * keys, plus each earlier segment's sums aged by the
                     * keys since */
                    memcpy(b.own.S, HS, nS * sizeof(float));
                    memcpy(b.own.z, Hz, dk * sizeof(float));
                    b.own.rows = 0;
                    if (s->decay != 1.0f) {
                        const float g = decay_pow(s->decay, a0 - base);
                        s->kt->scale(b.own.S, g, nS);
                        s->kt->scale(b.own.z, g, dk);
                    }
                    for (int u = 1; u <= t; u++) {
                        lin_buffers bu = lin_carve(ws + (size_t)u * per_thread, dk, dv);
                        const float g =
                            decay_pow(s->decay, a0 - (base + seg_start(npair, T, u)));
                        add_scaled(b.own.S, bu.seg.S, nS, g);
                        add_scaled(b.own.z, bu.seg.z, dk, g);
                    }
                    lin_pairs(s, &b, &b.own, a0, a1);
                }
#ifdef LINATTN_HAVE_OPENMP
#pragma omp barrier
#endif
                if (t == T - 1) {
                    memcpy(HS, b.own.S, nS * sizeof(float));
                    memcpy(Hz, b.own.z, dk * sizeof(float));
                }
            } else if (t == 0) {
                lin_pairs(s, &b, st, p0, p0 + npair);
            }
        }
    } else {
        lin_pairs(s, &b0, st, p0, p0 + npair);
    }
    /* the rest, row by row: they wait as the sums' rows */
    lin_pairs(s, &b0, st, p0 + npair, s->pair_end);
    lin_read(s, &b0, st, s->pair_end, s->Lq);
}

static lin_seq lin_seq_at(const linattn_kernels *kt, const attn_plan *p, const float *q,
                          const float *k, const float *v, float *out, size_t bh, lin_pow *pow)
{
    size_t b = bh / (size_t)p->H, h = bh % (size_t)p->H;
    lin_seq s;
    s.kt = kt;
    s.q = q + b * p->q.batch + h * p->q.head;
    s.k = k + b * p->k.batch + h / (size_t)p->group * p->k.head;
    s.v = v + b * p->v.batch + h / (size_t)p->group * p->v.head;
    s.out = out + b * p->out.batch + h * p->out.head;
    s.qr = p->q.row;
    s.kr = p->k.row;
    s.vr = p->v.row;
    s.orow = p->out.row;
    s.Lq = p->Lq;
    s.Lk = p->Lk;
    s.len = attn_len(p, (int)b);
    s.causal = p->causal;
    s.dk = p->dk;
    s.dv = p->dv;
    s.eps = p->eps;
    s.mode = p->mode;
    lin_seq_decay(&s, p->decay ? p->decay[h] : 1.0f, pow);
    lin_seq_ranges(&s, 1);
    /* no scales yet (lin_seq_ranged, lin_seq_trusting) */
    s.qscale = s.kscale = 1.0f;
    s.vexp = 0;
    s.over = NULL;
    return s;
}

/* s's scales from the call's own range: its keys [0, len) and queries. */
static void lin_seq_ranged(lin_seq *s, float eps)
{
    s->over = NULL;
    lin_seq_scale(s, lin_phi_exp(s->kt, s->k, s->kr, s->len, (size_t)s->dk),
                  lin_v_exp(s->kt, s->v, s->vr, s->len, (size_t)s->dv), eps);
}

/* Takes s (from lin_seq_at, no scales) on trust: the range pass reads
 * every q, k and v row of the head once before the work, from memory (a
 * 4096-row head's 3 MiB do not stay in L2 until the work reads them), and
 * scales nothing for any input of a normal model. The checks ride on the
 * work's own reads instead (lin_phi_scaled, lin_v_rows); if one fails,
 * *over is set and the caller runs the head again, ranged. Where rows
 * output 0 without being read (zero_end > 0), their q is in the range but
 * not the work: 0 then (lin_seq_ranged first). */
static int lin_seq_trusting(lin_seq *s, int *over)
{
    if (s->zero_end > 0)
        return 0;
    s->over = over;
    *over = 0;
    return 1;
}

linattn_status linattn_attention_linear(const linattn_attention_desc *d, const float *q,
                                        const float *k, const float *v, float *out)
{
    attn_plan p;
    linattn_status st = attn_plan_make(d, "linear", q, k, v, out, &p);
    if (st != LINATTN_OK)
        return st;
    const linattn_kernels *kt;
    if ((st = linattn_kernels_current(&kt)) != LINATTN_OK)
        return st;

    const size_t dk = (size_t)p.dk, dv = (size_t)p.dv;
    const size_t shared = lin_sums_floats(dk, dv), per_thread = lin_thread_floats(dk, dv);
    float *ws = NULL;
    void *owned;
    st = attn_workspace_get(d, attn_workspace_bytes(shared, per_thread, p.threads), "linear", &ws,
                            &owned);
    if (st != LINATTN_OK)
        return st;
    float *threads_ws = ws + shared;

    const long heads = (long)p.B * p.H;
    const int nt = attn_threads_for_work(p.threads, (double)heads * (p.Lq + p.Lk) * p.dk * p.dv);
    if (heads >= nt) {
#ifdef LINATTN_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
#endif
        for (long bh = 0; bh < heads; bh++) {
            lin_buffers b = lin_carve(threads_ws + (size_t)attn_thread_id() * per_thread, dk, dv);
            lin_pow pow;
            lin_seq s = lin_seq_at(kt, &p, q, k, v, out, (size_t)bh, &pow);
            int over = 0;
            if (lin_seq_trusting(&s, &over)) {
                lin_sums_clear(&b.own, dk, dv);
                lin_head_seq(&s, &b, &b.own);
            }
            if (s.over == NULL || over) { /* the rows again, every one written anew */
                lin_seq_ranged(&s, p.eps);
                lin_sums_clear(&b.own, dk, dv);
                lin_head_seq(&s, &b, &b.own);
            }
            lin_seq_unscale(&s);
        }
    } else {
        lin_sums head = lin_sums_at(ws, dk, dv);
        for (long bh = 0; bh < heads; bh++) {
            lin_pow pow;
            lin_seq s = lin_seq_at(kt, &p, q, k, v, out, (size_t)bh, &pow);
            lin_seq_ranged(&s, p.eps);
            lin_sums_clear(&head, dk, dv);
            lin_head_split(&s, threads_ws, per_thread, &head, nt);
            lin_seq_unscale(&s);
        }
    }
    mem_free(owned);
    return LINATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* The decode state                                                          */
/* ------------------------------------------------------------------------ */

struct linattn_linear_state {
    int heads, dk, dv;
    int group;      /* query heads reading each head (grouped-query), 1: none */
    float *start;   /* group > 1: [heads][stride] the sums before a prefill */
    float eps;
    float *decay;   /* [heads], 1 for a head without decay */
    lin_pow *pows;  /* [heads] their powers */
    int *exps;      /* [heads][2] the sums' range exponents: phi(k) and v are
                     * held times 2^-exps[0], 2^-exps[1] (lin_seq; 0: as they
                     * are), raised when a key needs it, never lowered */
    uint64_t tokens;
    /* Each head's sums (S, z, then the waiting rows K, V: lin_sums_at) start
     * on a cache line, so 32-byte accesses never split one (222 against
     * 333 ns per 64x64 head with calloc's 16-byte alignment). The waiting
     * rows are the last tokens % LIN_B keys. */
    linattn_linear_mode mode; /* prefill algorithm (linattn_linear_state_set_mode) */
    size_t stride; /* floats from one head to the next */
    float *sums;   /* [heads][stride] */
    float *phi;    /* step scratch: phi(q) [heads * group][dk] (phi(k) goes into the rows) */
    /* Prefill workspace: ws_threads blocks of lin_thread_floats, sized at
     * creation for the OpenMP default so that feeding tokens allocates
     * nothing (the step folds in block 0); a call asking for more threads
     * grows it once. */
    void *ws;
    int ws_threads;
    /* a session's state: the workspace and the group's start sums come
     * from the caller for each call (linattn_linear_state_lend) */
    int borrows;
    void *lent;
    size_t lent_bytes;
    float *lent_start;
};

/* Head h's sums, with its waiting rows. */
static lin_sums state_sums(const linattn_linear_state *s, int h)
{
    lin_sums v = lin_sums_at(s->sums + (size_t)h * s->stride, (size_t)s->dk, (size_t)s->dv);
    v.rows = (int)(s->tokens % LIN_B);
    return v;
}

static linattn_status state_workspace(linattn_linear_state *s, int threads, float **ws)
{
    size_t per_thread = lin_thread_floats((size_t)s->dk, (size_t)s->dv);
    if (s->lent && attn_workspace_bytes(0, per_thread, threads) <= s->lent_bytes) {
        uintptr_t a = ((uintptr_t)s->lent + ATTN_ALIGN - 1) & ~(uintptr_t)(ATTN_ALIGN - 1);
        *ws = (float *)a;
        return LINATTN_OK;
    }
    if (threads > s->ws_threads || !s->ws) {
        size_t bytes = attn_workspace_bytes(0, per_thread, threads);
        void *p = bytes == SIZE_MAX ? NULL : mem_realloc(s->ws, bytes);
        if (!p)
            return linattn_err(LINATTN_ERR_NOMEM,
                               "linear state: cannot allocate a prefill workspace for %d threads",
                               threads);
        s->ws = p;
        s->ws_threads = threads;
    }
    uintptr_t a = ((uintptr_t)s->ws + ATTN_ALIGN - 1) & ~(uintptr_t)(ATTN_ALIGN - 1);
    *ws = (float *)a;
    return LINATTN_OK;
}

/* floats zeroed, on an ATTN_ALIGN boundary; free with mem_free(). */
static float *lin_calloc(size_t floats)
{
    size_t bytes = attn_mul(attn_round(floats), sizeof(float));
    if (bytes == SIZE_MAX)
        return NULL;
    float *p = mem_aligned_alloc(ATTN_ALIGN, bytes ? bytes : ATTN_ALIGN);
    if (p)
        memset(p, 0, bytes);
    return p;
}

linattn_status linattn_linear_state_create(int heads, int d_k, int d_v, float eps,
                                           const float *decay, linattn_linear_state **out)
{
    if (!out)
        return linattn_err(LINATTN_ERR_INVALID, "linear state: out is NULL");
    *out = NULL;
    if (heads <= 0 || d_k <= 0 || d_v <= 0)
        return linattn_err(LINATTN_ERR_INVALID,
                           "linear state: heads, d_k, d_v must be positive, got %d, %d, %d",
                           heads, d_k, d_v);
    if (!isfinite(eps) || eps < 0.0f)
        return linattn_err(LINATTN_ERR_INVALID,
                           "linear state: eps must be finite and >= 0, got %g", (double)eps);
    linattn_status st;
    if (decay && (st = attn_check_decay(decay, heads, "linear state")) != LINATTN_OK)
        return st;
    const size_t stride = lin_sums_floats((size_t)d_k, (size_t)d_v);
    size_t n = attn_mul((size_t)heads, stride);
    if (attn_mul(n, sizeof(float)) == SIZE_MAX)
        return linattn_err(LINATTN_ERR_NOMEM, "linear state: size overflows");
    linattn_linear_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return linattn_err(LINATTN_ERR_NOMEM, "linear state: out of memory");
    s->heads = heads;
    s->group = 1;
    s->dk = d_k;
    s->dv = d_v;
    s->eps = eps;
    s->stride = stride;
    s->sums = lin_calloc(n);
    s->phi = lin_calloc((size_t)heads * (size_t)d_k);
    s->decay = lin_calloc((size_t)heads);
    s->pows = mem_calloc((size_t)heads, sizeof *s->pows);
    s->exps = mem_calloc((size_t)heads * 2, sizeof *s->exps);
    if (s->decay && s->pows)
        for (int h = 0; h < heads; h++) {
            s->decay[h] = decay ? decay[h] : 1.0f;
            lin_pow_make(&s->pows[h], s->decay[h]);
        }
    float *ws = NULL;
    if (!s->sums || !s->phi || !s->decay || !s->pows || !s->exps ||
        state_workspace(s, attn_threads_max(0), &ws) != LINATTN_OK) {
        linattn_linear_state_free(s);
        return linattn_err(LINATTN_ERR_NOMEM, "linear state: cannot allocate %zu bytes",
                           n * sizeof(float));
    }
    *out = s;
    return LINATTN_OK;
}

void linattn_linear_state_free(linattn_linear_state *s)
{
    if (!s)
        return;
    mem_free(s->sums);
    mem_free(s->start);
    mem_free(s->phi);
    mem_free(s->decay);
    mem_free(s->pows);
    mem_free(s->exps);
    mem_free(s->ws);
    mem_free(s);
}

void linattn_linear_state_borrow(linattn_linear_state *s)
{
    s->borrows = 1;
    mem_free(s->ws);
    s->ws = NULL;
    s->ws_threads = 0;
    mem_free(s->start);
    s->start = NULL;
}

size_t linattn_linear_state_lend_bytes(const linattn_linear_state *s, int threads, size_t *start)
{
    *start = s->group > 1 ? attn_mul(attn_mul((size_t)s->heads, s->stride), sizeof(float)) : 0;
    return attn_workspace_bytes(0, lin_thread_floats((size_t)s->dk, (size_t)s->dv),
                                threads < 1 ? 1 : threads);
}

void linattn_linear_state_lend(linattn_linear_state *s, void *ws, size_t bytes, float *start)
{
    s->lent = ws;
    s->lent_bytes = ws ? bytes : 0;
    s->lent_start = start;
}

size_t linattn_linear_state_memory_bytes(const linattn_linear_state *s)
{
    if (!s)
        return 0;
    size_t b = sizeof *s + attn_mul((size_t)s->heads, s->stride) * sizeof(float);
    b += (size_t)s->heads * ((size_t)s->group * (size_t)s->dk + 1) * sizeof(float); /* phi, decay */
    b += (size_t)s->heads * sizeof *s->pows;
    if (s->start)
        b += attn_mul((size_t)s->heads, s->stride) * sizeof(float);
    if (s->ws)
        b += attn_workspace_bytes(0, lin_thread_floats((size_t)s->dk, (size_t)s->dv),
                                  s->ws_threads);
    return b;
}

linattn_status linattn_linear_state_set_mode(linattn_linear_state *s, linattn_linear_mode mode)
{
    if (!s || (unsigned)mode > LINATTN_LINEAR_CHUNKED)
        return linattn_err(LINATTN_ERR_INVALID, "linear state: %s",
                           !s ? "state is NULL" : "mode is not AUTO, RECURRENT or CHUNKED");
    s->mode = mode;
    return LINATTN_OK;
}

linattn_status linattn_linear_state_set_group(linattn_linear_state *s, int group)
{
    if (!s || group < 1 || s->tokens != 0 || s->group != 1)
        return linattn_err(LINATTN_ERR_INVALID, "linear state: bad group %d (or not new)", group);
    if (group == 1)
        return LINATTN_OK;
    for (int h = 0; h < s->heads; h++)
        if (s->decay[h] != 1.0f)
            return linattn_err(LINATTN_ERR_INVALID,
                               "linear state: grouped query heads cannot share a decayed state");
    float *phi = lin_calloc((size_t)group * (size_t)s->heads * (size_t)s->dk);
    float *start = s->borrows ? NULL : lin_calloc(attn_mul((size_t)s->heads, s->stride));
    if (!phi || (!start && !s->borrows)) {
        mem_free(phi);
        mem_free(start);
        return linattn_err(LINATTN_ERR_NOMEM, "linear state: out of memory");
    }
    mem_free(s->phi);
    s->phi = phi;
    s->start = start;
    s->group = group;
    return LINATTN_OK;
}

void linattn_linear_state_reset(linattn_linear_state *s)
{
    if (!s)
        return;
    memset(s->sums, 0, (size_t)s->heads * s->stride * sizeof(float));
    memset(s->exps, 0, (size_t)s->heads * 2 * sizeof *s->exps);
    s->tokens = 0;
}

size_t linattn_linear_state_bytes(const linattn_linear_state *s)
{
    if (!s)
        return 0;
    size_t dk = (size_t)s->dk, dv = (size_t)s->dv;
    return (size_t)s->heads * (dk * dv + dk + LIN_B * (dk + dv)) * sizeof(float);
}

uint64_t linattn_linear_state_tokens(const linattn_linear_state *s)
{
    return s ? s->tokens : 0;
}

float *linattn_linear_state_S(linattn_linear_state *s, int head)
{
    if (!s || head < 0 || head >= s->heads)
        return NULL;
    return state_sums(s, head).S;
}

float *linattn_linear_state_z(linattn_linear_state *s, int head)
{
    if (!s || head < 0 || head >= s->heads)
        return NULL;
    return state_sums(s, head).z;
}

float *linattn_linear_state_rows_k(linattn_linear_state *s, int head)
{
    if (!s || head < 0 || head >= s->heads)
        return NULL;
    return state_sums(s, head).K;
}

float *linattn_linear_state_rows_v(linattn_linear_state *s, int head)
{
    if (!s || head < 0 || head >= s->heads)
        return NULL;
    return state_sums(s, head).V;
}

int *linattn_linear_state_exps(linattn_linear_state *s, int head)
{
    if (!s || head < 0 || head >= s->heads)
        return NULL;
    return s->exps + 2 * (size_t)head;
}

/* Head h's range exponents raised to at least kexp, vexp: its sums and
 * waiting rows scaled down by the difference (powers of two: exact). */
static void state_raise(linattn_linear_state *s, const linattn_kernels *kt, int h, int kexp,
                        int vexp)
{
    int *e = s->exps + 2 * (size_t)h;
    const int dka = kexp > e[0] ? kexp - e[0] : 0, dva = vexp > e[1] ? vexp - e[1] : 0;
    if (!dka && !dva)
        return;
    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv;
    lin_sums st = state_sums(s, h);
    if (dka) { /* each step at most 2^-108: never 0 */
        kt->scale(st.S, ldexpf(1.0f, -dka), dk * dv);
        kt->scale(st.z, ldexpf(1.0f, -dka), dk);
        kt->scale(st.K, ldexpf(1.0f, -dka), (size_t)st.rows * dk);
    }
    if (dva) {
        kt->scale(st.S, ldexpf(1.0f, -dva), dk * dv);
        kt->scale(st.V, ldexpf(1.0f, -dva), (size_t)st.rows * dv);
    }
    e[0] += dka;
    e[1] += dva;
}

void linattn_linear_state_set_tokens(linattn_linear_state *s, uint64_t tokens)
{
    if (s)
        s->tokens = tokens;
}


/* Query head h * group + r of the state's k/v head h: its sequence from
 * proto, and the head's sums set to those before the call for every query
 * head after the group's first (s->start holds them). */
static lin_seq group_member(linattn_linear_state *s, const lin_seq *proto, int h, int r,
                            const float *q, const float *k, const float *v, float *out,
                            const linattn_layout *l)
{
    const size_t qh = (size_t)h * (size_t)s->group + (size_t)r;
    lin_seq sq = *proto;
    sq.q = q + qh * l[0].head;
    sq.k = k + (size_t)h * l[1].head;
    sq.v = v + (size_t)h * l[2].head;
    sq.out = out + qh * l[3].head;
    sq.decay = s->decay[h];
    sq.pow = &s->pows[h];
    lin_seq_scale(&sq, s->exps[2 * (size_t)h], s->exps[2 * (size_t)h + 1], s->eps);
    if (r > 0)
        memcpy(s->sums + (size_t)h * s->stride,
               (s->lent_start ? s->lent_start : s->start) + (size_t)h * s->stride,
               s->stride * sizeof(float));
    return sq;
}

/* Before a prefill of len keys reaches head h: its range raised for them,
 * then (grouped) its sums kept for every query head of the group. */
static void prefill_head_start(linattn_linear_state *s, const linattn_kernels *kt, int h,
                               const float *k, const float *v, int len, const linattn_layout *l)
{
    const float *kh = k + (size_t)h * l[1].head, *vh = v + (size_t)h * l[2].head;
    state_raise(s, kt, h, lin_phi_exp(kt, kh, l[1].row, len, (size_t)s->dk),
                lin_v_exp(kt, vh, l[2].row, len, (size_t)s->dv));
    if (s->group > 1)
        memcpy((s->lent_start ? s->lent_start : s->start) + (size_t)h * s->stride,
               s->sums + (size_t)h * s->stride, s->stride * sizeof(float));
}

linattn_status linattn_linear_prefill_strided(linattn_linear_state *s, const float *q,
                                              const float *k, const float *v, int len,
                                              float *out, const linattn_layout layouts[4],
                                              int threads)
{
    static const char op[] = "linear prefill";
    if (!s)
        return linattn_err(LINATTN_ERR_INVALID, "%s: state is NULL", op);
    if (len < 0)
        return linattn_err(LINATTN_ERR_INVALID, "%s: len must be >= 0, got %d", op, len);
    if (threads < 0)
        return linattn_err(LINATTN_ERR_INVALID, "%s: threads must be >= 0, got %d", op, threads);
    if (!q || !k || !v || !out)
        return linattn_err(LINATTN_ERR_INVALID, "%s: tensor %s is NULL", op,
                           !q ? "q" : !k ? "k" : !v ? "v" : "out");
    if (len == 0)
        return LINATTN_OK;
    const linattn_kernels *kt;
    linattn_status st = linattn_kernels_current(&kt);
    if (st != LINATTN_OK)
        return st;

    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv;
    const size_t width[4] = {dk, dk, dv, dv};
    linattn_layout l[4];
    for (int i = 0; i < 4; i++) {
        l[i] = layouts ? layouts[i] : (linattn_layout){0, 0, 0};
        if (l[i].head == 0 && l[i].row == 0) { /* dense (H, len, D); batch ignored */
            l[i].row = width[i];
            l[i].head = (size_t)len * width[i];
        }
    }
    static const char *const names[4] = {"q", "k", "v", "out"};
    for (int i = 0; i < 3; i++)
        if ((st = attn_check_input_layout(&l[i], len, (int)width[i], op, names[i])) != LINATTN_OK)
            return st;
    if ((st = attn_check_output_layout(&l[3], 1, s->heads * s->group, len, s->dv, op,
                                       names[3])) != LINATTN_OK)
        return st;

    const int nt = attn_threads_for_work(attn_threads(threads),
                                         (double)s->heads * 2 * len * s->dk * s->dv);
    const size_t per_thread = lin_thread_floats(dk, dv);
    float *ws = NULL;
    if ((st = state_workspace(s, nt, &ws)) != LINATTN_OK)
        return st;

    lin_seq proto;
    memset(&proto, 0, sizeof proto);
    proto.kt = kt;
    proto.qr = l[0].row;
    proto.kr = l[1].row;
    proto.vr = l[2].row;
    proto.orow = l[3].row;
    proto.Lq = proto.Lk = proto.len = len;
    proto.causal = 1;
    proto.dk = s->dk;
    proto.dv = s->dv;
    proto.eps = s->eps;
    proto.mode = s->mode;
    lin_seq_ranges(&proto, 0);

    /* Grouped: each query head of a group runs the head's sequence from the
     * sums before the call (kept in s->start), the last one leaving the
     * sums after it: what a state per query head would compute. */
    const int H = s->heads, G = s->group;
    if (G > 1 && !s->lent_start && !s->start &&
        !(s->start = lin_calloc(attn_mul((size_t)H, s->stride))))
        return linattn_err(LINATTN_ERR_NOMEM, "linear state: out of memory");
    if (H >= nt) {
#ifdef LINATTN_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
#endif
        for (int h = 0; h < H; h++) {
            lin_buffers b = lin_carve(ws + (size_t)attn_thread_id() * per_thread, dk, dv);
            prefill_head_start(s, kt, h, k, v, len, l);
            for (int r = 0; r < G; r++) {
                lin_seq sq = group_member(s, &proto, h, r, q, k, v, out, l);
                lin_sums sums = state_sums(s, h);
                lin_head_seq(&sq, &b, &sums);
                lin_seq_unscale(&sq);
            }
        }
    } else {
        for (int h = 0; h < H; h++) {
            prefill_head_start(s, kt, h, k, v, len, l);
            for (int r = 0; r < G; r++) {
                lin_seq sq = group_member(s, &proto, h, r, q, k, v, out, l);
                lin_sums sums = state_sums(s, h);
                lin_head_split(&sq, ws, per_thread, &sums, nt);
                lin_seq_unscale(&sq);
            }
        }
    }
    s->tokens += (uint64_t)len;
    return LINATTN_OK;
}

linattn_status linattn_linear_prefill(linattn_linear_state *s, const float *q, const float *k,
                                      const float *v, int len, float *out)
{
    return linattn_linear_prefill_strided(s, q, k, v, len, out, NULL, 0);
}

size_t linattn_linear_step_scratch_bytes(const linattn_linear_state *s)
{
    return attn_workspace_bytes(0, lin_thread_floats((size_t)s->dk, (size_t)s->dv), 1);
}

/* The step of heads [h0, h1), head by head: phi of its q rows (into the
 * state's phi rows) and of its k (straight into its rows), the key joins
 * the rows, the head reads, a full block folds (in ws, lin_thread_floats). */
static void step_heads(linattn_linear_state *s, const linattn_kernels *kt, float *ws, int h0,
                       int h1, const float *q, const float *k, const float *v, float *out)
{
    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv, G = (size_t)s->group;
    float *pq = s->phi;
    lin_buffers b = lin_carve(ws, dk, dv);
    lin_seq sq;
    memset(&sq, 0, sizeof sq);
    sq.kt = kt;
    sq.dk = s->dk;
    sq.dv = s->dv;
    sq.eps = s->eps;
    /* Each step reads every head's S once (and folds every LIN_B-th). 8
     * heads of 64 x 64 are 128 KiB, more than L1 (48 KiB here). Odd steps
     * walk the heads backwards, so a step starts with the heads the
     * previous one left in L1: 3.65 -> 3.35 us per step (AVX2, H = 8,
     * d = 64, when each step also wrote S). */
    const int backwards = (int)(s->tokens & 1);
    for (int i = h0; i < h1; i++) {
        const int h = backwards ? h1 - 1 - (i - h0) : i;
        const float *kh = k + (size_t)h * dk, *vh = v + (size_t)h * dv;
        const float *qh = q + (size_t)h * G * dk;
        state_raise(s, kt, h, lin_phi_exp(kt, kh, dk, 1, dk), lin_v_exp(kt, vh, dv, 1, dv));
        lin_sums sums = state_sums(s, h);
        sq.decay = s->decay[h];
        sq.pow = &s->pows[h];
        sq.q = qh;
        sq.qr = dk;
        sq.Lq = (int)G;
        lin_seq_scale(&sq, s->exps[2 * (size_t)h], s->exps[2 * (size_t)h + 1], s->eps);
        /* phi of the head's q and k here, not for all heads first: the
         * exps overlap the previous head's stream of S from L2 */
        float *pqh = pq + (size_t)h * G * dk, *kr = sums.K + (size_t)sums.rows * dk;
        kt->elu1(pqh, qh, G * dk);
        kt->elu1(kr, kh, dk);
        float *vr = sums.V + (size_t)sums.rows * dv;
        memcpy(vr, vh, dv * sizeof(float));
        if (sq.qscale != 1.0f)
            kt->scale(pqh, sq.qscale, G * dk);
        if (sq.kscale != 1.0f)
            kt->scale(kr, sq.kscale, dk);
        if (sq.vexp)
            kt->scale(vr, ldexpf(1.0f, -sq.vexp), dv);
        sums.rows++;
        for (size_t r = 0; r < G; r++) { /* the query heads reading this head */
            float *o = out + ((size_t)h * G + r) * dv;
            lin_read_row(&sq, &sums, pqh + r * dk, o);
            if (sq.vexp)
                kt->scale(o, ldexpf(1.0f, sq.vexp), dv);
        }
        if (sums.rows == LIN_B)
            lin_fold(&sq, &b, &sums);
    }
}

linattn_status linattn_linear_step_heads(linattn_linear_state *s, int h0, int h1, const float *q,
                                         const float *k, const float *v, float *out,
                                         void *scratch)
{
    if (!s || !q || !k || !v || !out || !scratch || h0 < 0 || h1 > s->heads || h0 >= h1)
        return linattn_err(LINATTN_ERR_INVALID, "linear step: bad arguments for heads [%d, %d)",
                           h0, h1);
    const linattn_kernels *kt;
    linattn_status st = linattn_kernels_current(&kt);
    if (st != LINATTN_OK)
        return st;
    uintptr_t a = ((uintptr_t)scratch + ATTN_ALIGN - 1) & ~(uintptr_t)(ATTN_ALIGN - 1);
    step_heads(s, kt, (float *)a, h0, h1, q, k, v, out);
    return LINATTN_OK;
}

void linattn_linear_prefetch_head(const linattn_linear_state *s, int h)
{
    const size_t dk = (size_t)s->dk, dv = (size_t)s->dv, rows = (size_t)(s->tokens % LIN_B);
    lin_sums v = lin_sums_at(s->sums + (size_t)h * s->stride, dk, dv);
    /* S and z, then the waiting rows the read takes (and the next row's
     * place): into L2, so the lines do not evict the current head's from L1 */
    const char *p = (const char *)v.S, *e = (const char *)(v.z + dk);
    for (; p < e; p += 64)
        __builtin_prefetch(p, 1, 2);
    for (p = (const char *)v.K, e = (const char *)(v.K + (rows + 1) * dk); p < e; p += 64)
        __builtin_prefetch(p, 1, 2);
    for (p = (const char *)v.V, e = (const char *)(v.V + (rows + 1) * dv); p < e; p += 64)
        __builtin_prefetch(p, 1, 2);
}

void linattn_linear_step_done(linattn_linear_state *s)
{
    s->tokens++;
}

linattn_status linattn_linear_step(linattn_linear_state *s, const float *q, const float *k,
                                   const float *v, float *out)
{
    if (!s || !q || !k || !v || !out)
        return linattn_err(LINATTN_ERR_INVALID, "linear step: %s is NULL",
                           !s ? "state" : !q ? "q" : !k ? "k" : !v ? "v" : "out");
    const linattn_kernels *kt;
    linattn_status st = linattn_kernels_current(&kt);
    if (st != LINATTN_OK)
        return st;
    float *ws = NULL;
    if ((st = state_workspace(s, 1, &ws)) != LINATTN_OK) /* allocated at creation */
        return st;
    step_heads(s, kt, ws, 0, s->heads, q, k, v, out);
    s->tokens++;
    return LINATTN_OK;
}

float linattn_linear_state_den(const linattn_linear_state *s, const linattn_kernels *kt, int h,
                               const float *phiq, int stepped)
{
    lin_sums st = state_sums(s, h);
    if (stepped) /* the head took a key the state has not counted yet */
        st.rows = (int)((s->tokens + 1) % LIN_B);
    const lin_pow *pw = &s->pows[h];
    const size_t dk = (size_t)s->dk;
    /* as the read weighs them: the sums g^n, waiting row j g^(n - 1 - j) */
    float den = pw->pw[st.rows] * kt->dot(phiq, st.z, dk);
    for (int j = 0; j < st.rows; j++)
        den += pw->rw[LIN_RC - st.rows + j] * kt->dot(phiq, st.K + (size_t)j * dk, dk);
    return s->exps[2 * (size_t)h] ? ldexpf(den, s->exps[2 * (size_t)h]) : den;
}

void linattn_linear_state_z_now(const linattn_linear_state *s, const linattn_kernels *kt, int h,
                                float *z)
{
    lin_sums st = state_sums(s, h);
    const lin_pow *pw = &s->pows[h];
    const size_t dk = (size_t)s->dk;
    for (size_t c = 0; c < dk; c++)
        z[c] = pw->pw[st.rows] * st.z[c];
    for (int j = 0; j < st.rows; j++)
        kt->axpy(z, pw->rw[LIN_RC - st.rows + j], st.K + (size_t)j * dk, dk);
    if (s->exps[2 * (size_t)h])
        kt->scale(z, ldexpf(1.0f, s->exps[2 * (size_t)h]), dk);
}
