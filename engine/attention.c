/* attention.c: descriptor checks, strides, threads and workspace shared by both attention operators. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

#ifdef LINATTN_HAVE_OPENMP
#include <omp.h>
#endif

void linattn_attention_desc_init(linattn_attention_desc *d)
{
    if (!d)
        return;
    memset(d, 0, sizeof *d);
    d->eps = 1e-6f;
}

int attn_threads(int requested)
{
#ifdef LINATTN_HAVE_OPENMP
    return linattn_threads_free(attn_threads_max(requested));
#else
    (void)requested;
    return 1; /* no parallel regions to spread over */
#endif
}

int attn_threads_max(int requested)
{
#ifdef LINATTN_HAVE_OPENMP
    return requested > 0 ? requested : omp_get_max_threads();
#else
    (void)requested;
    return 1;
#endif
}

int attn_threads_for_work(int threads, double work)
{
    return work < 262144.0 ? 1 : threads;
}

int attn_thread_id(void)
{
#ifdef LINATTN_HAVE_OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

size_t attn_mul(size_t a, size_t b)
{
    if (a && b > SIZE_MAX / a)
        return SIZE_MAX;
    return a * b;
}

size_t attn_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t attn_workspace_bytes(size_t shared, size_t per_thread, int threads)
{
    size_t floats = attn_add(shared, attn_mul(per_thread, (size_t)(threads > 0 ? threads : 1)));
    return attn_add(attn_mul(floats, sizeof(float)), ATTN_ALIGN);
}

linattn_status attn_workspace_get(const linattn_attention_desc *d, size_t bytes, const char *op,
                                  float **ws, void **owned)
{
    *owned = NULL;
    if (bytes == SIZE_MAX)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: workspace size overflows", op);
    void *base = d->workspace;
    if (base) {
        if (d->workspace_bytes < bytes)
            return linattn_err(LINATTN_ERR_INVALID,
                               "%s: workspace_bytes is %zu, this call needs %zu "
                               "(see linattn_attention_%s_workspace)",
                               op, d->workspace_bytes, bytes, op);
    } else {
        base = mem_alloc(bytes);
        if (!base)
            return linattn_err(LINATTN_ERR_NOMEM, "%s: cannot allocate a workspace of %zu bytes",
                               op, bytes);
        *owned = base;
    }
    uintptr_t a = ((uintptr_t)base + ATTN_ALIGN - 1) & ~(uintptr_t)(ATTN_ALIGN - 1);
    *ws = (float *)a;
    return LINATTN_OK;
}

linattn_status attn_check_input_layout(const linattn_layout *l, int L, int D, const char *op,
                                       const char *name)
{
    if (L > 1 && l->row < (size_t)D)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: %s row stride %zu is smaller than a row (%d floats)", op, name,
                           l->row, D);
    return LINATTN_OK;
}

/* Sufficient condition for the rows (b, h, i) of D floats not to overlap:
 * with the dimensions longer than one sorted by stride, each stride must
 * step over everything the smaller ones span. */
typedef struct out_dim {
    size_t stride, n;
    const char *what;
} out_dim;

linattn_status attn_check_output_layout(const linattn_layout *l, int B, int H, int L, int D,
                                        const char *op, const char *name)
{
    out_dim dims[3] = {
        {l->row, (size_t)L, "row"}, {l->head, (size_t)H, "head"}, {l->batch, (size_t)B, "batch"}};
    for (int i = 1; i < 3; i++) /* insertion sort by stride, 3 entries */
        for (int j = i; j > 0 && dims[j].stride < dims[j - 1].stride; j--) {
            out_dim t = dims[j];
            dims[j] = dims[j - 1];
            dims[j - 1] = t;
        }
    size_t span = (size_t)D; /* floats covered by the smaller dimensions */
    for (int i = 0; i < 3; i++) {
        if (dims[i].n <= 1)
            continue;
        if (dims[i].stride < span)
            return linattn_err(LINATTN_ERR_INVALID,
                               "%s: %s %s stride %zu is too small: its rows would overlap "
                               "(needs at least %zu)",
                               op, name, dims[i].what, dims[i].stride, span);
        span = attn_add(attn_mul(dims[i].stride, dims[i].n - 1), span);
    }
    return LINATTN_OK;
}

linattn_status attn_check_decay(const float *decay, int heads, const char *op)
{
    for (int h = 0; h < heads; h++)
        if (!(decay[h] > 0.0f && decay[h] <= 1.0f)) /* also refuses NaN */
            return linattn_err(LINATTN_ERR_INVALID,
                               "%s: decay[%d] = %g is outside (0, 1]", op, h, (double)decay[h]);
    return LINATTN_OK;
}

static linattn_layout resolve(linattn_layout l, int H, int L, int D)
{
    if (l.batch == 0 && l.head == 0 && l.row == 0) {
        l.row = (size_t)D;
        l.head = (size_t)L * (size_t)D;
        l.batch = (size_t)H * l.head;
    }
    return l;
}

linattn_status attn_plan_make(const linattn_attention_desc *d, const char *op, const float *q,
                              const float *k, const float *v, const float *out, attn_plan *p)
{
    if (!d)
        return linattn_err(LINATTN_ERR_INVALID, "%s: descriptor is NULL", op);
    const struct { int value; const char *name; } dims[] = {
        {d->batch, "batch"}, {d->heads, "heads"}, {d->len_q, "len_q"},
        {d->len_k, "len_k"}, {d->d_k, "d_k"},     {d->d_v, "d_v"},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].value <= 0)
            return linattn_err(LINATTN_ERR_INVALID, "%s: %s must be positive, got %d", op,
                               dims[i].name, dims[i].value);
    if (d->threads < 0)
        return linattn_err(LINATTN_ERR_INVALID, "%s: threads must be >= 0, got %d", op,
                           d->threads);
    if (!isfinite(d->scale))
        return linattn_err(LINATTN_ERR_INVALID, "%s: scale must be finite, got %g", op,
                           (double)d->scale);
    if (!isfinite(d->eps) || d->eps < 0.0f)
        return linattn_err(LINATTN_ERR_INVALID, "%s: eps must be finite and >= 0, got %g", op,
                           (double)d->eps);
    const struct { const float *ptr; const char *name; } ptrs[] = {
        {q, "q"}, {k, "k"}, {v, "v"}, {out, "out"}};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (!ptrs[i].ptr)
            return linattn_err(LINATTN_ERR_INVALID, "%s: tensor %s is NULL", op, ptrs[i].name);
    linattn_status st;
    if (d->decay) {
        if (strcmp(op, "linear") != 0)
            return linattn_err(LINATTN_ERR_INVALID,
                               "%s: decay applies to linear attention only; set it to NULL", op);
        if (!d->causal)
            return linattn_err(LINATTN_ERR_INVALID,
                               "%s: decay needs causal = 1 (a non-causal sum has no order to "
                               "decay along)", op);
        if ((st = attn_check_decay(d->decay, d->heads, op)) != LINATTN_OK)
            return st;
    }
    if (d->window < 0)
        return linattn_err(LINATTN_ERR_INVALID, "%s: window must be >= 0 (0: off), got %d", op,
                           d->window);
    if (d->window > 0 && strncmp(op, "softmax", 7) != 0)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: window applies to softmax attention only; set it to 0", op);
    if (d->window > 0 && !d->causal)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: window needs causal = 1 (the window is the last W keys up to "
                           "each query's own position)", op);
    if (d->kv_heads < 0 || (d->kv_heads > 0 && d->heads % d->kv_heads != 0))
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: kv_heads %d must divide heads %d (0: one k/v head per head)", op,
                           d->kv_heads, d->heads);
    if ((unsigned)d->linear_mode > LINATTN_LINEAR_CHUNKED)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: linear_mode %d is not AUTO (0), RECURRENT (1) or CHUNKED (2)", op,
                           (int)d->linear_mode);
    if (d->lengths)
        for (int b = 0; b < d->batch; b++)
            if (d->lengths[b] < 0 || d->lengths[b] > d->len_k)
                return linattn_err(LINATTN_ERR_INVALID,
                                   "%s: lengths[%d] = %d is outside 0..len_k (%d)", op, b,
                                   d->lengths[b], d->len_k);

    p->B = d->batch;
    p->H = d->heads;
    p->Lq = d->len_q;
    p->Lk = d->len_k;
    p->dk = d->d_k;
    p->dv = d->d_v;
    p->causal = d->causal != 0;
    p->lengths = d->lengths;
    p->threads = attn_threads(d->threads);
    p->scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)d->d_k);
    p->eps = d->eps;
    p->decay = d->decay;
    p->mode = d->linear_mode;
    p->window = d->window;
    const int G = d->kv_heads > 0 ? d->kv_heads : d->heads;
    p->group = d->heads / G;
    p->q = resolve(d->q, p->H, p->Lq, p->dk);
    p->k = resolve(d->k, G, p->Lk, p->dk);
    p->v = resolve(d->v, G, p->Lk, p->dv);
    p->out = resolve(d->out, p->H, p->Lq, p->dv);

    if ((st = attn_check_input_layout(&p->q, p->Lq, p->dk, op, "q")) != LINATTN_OK ||
        (st = attn_check_input_layout(&p->k, p->Lk, p->dk, op, "k")) != LINATTN_OK ||
        (st = attn_check_input_layout(&p->v, p->Lk, p->dv, op, "v")) != LINATTN_OK ||
        (st = attn_check_output_layout(&p->out, p->B, p->H, p->Lq, p->dv, op, "out")) !=
            LINATTN_OK)
        return st;
    return LINATTN_OK;
}
