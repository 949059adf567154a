/* session.c: a stream's decode state (KV cache or S, z): feed, batch step, save and load. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "attention.h"
#include "f16.h"
#include "file.h"
#include "model.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "session files are written little-endian; a big-endian host needs byte swaps here"
#endif

/* ---- lifecycle ------------------------------------------------------------ */

/* A model's free sets of call buffers. Sets are made when every one is in
 * use (calls running at once) and kept until the model is freed. */
struct linattn_scratch_pool {
    pthread_mutex_t mu;
    linattn_scratch *free;
};

linattn_scratch_pool *linattn_scratch_pool_new(void)
{
    linattn_scratch_pool *pool = mem_calloc(1, sizeof *pool);
    if (pool && pthread_mutex_init(&pool->mu, NULL) != 0) {
        mem_free(pool);
        return NULL;
    }
    return pool;
}

static void scratch_free(linattn_scratch *sc)
{
    if (!sc)
        return;
    mem_free(sc->gather_k);
    mem_free(sc->gather_v);
    mem_free(sc->hyb_ws);
    mem_free(sc->attn_ws);
    mem_free(sc->batch_ws);
    mem_free(sc->head_ws);
    mem_free(sc->lin_ws);
    mem_free(sc->lin_start);
    mem_free(sc->x);
    mem_free(sc->hbuf);
    mem_free(sc->q);
    mem_free(sc->k);
    mem_free(sc->v);
    mem_free(sc->a);
    mem_free(sc->u);
    mem_free(sc->u2);
    mem_free(sc->rope);
    mem_free(sc->kx);
    mem_free(sc->vx);
    mem_free(sc);
}

void linattn_scratch_pool_free(linattn_scratch_pool *pool)
{
    if (!pool)
        return;
    while (pool->free) {
        linattn_scratch *next = pool->free->next;
        scratch_free(pool->free);
        pool->free = next;
    }
    pthread_mutex_destroy(&pool->mu);
    mem_free(pool);
}

static void *alloc_floats(linattn_scratch *sc, size_t n, int *failed)
{
    void *p = mem_calloc(n ? n : 1, sizeof(float));
    if (!p)
        *failed = 1;
    sc->bytes += (n ? n : 1) * sizeof(float);
    return p;
}

/* A new set of m's call buffers, without the thread-sized parts. */
static linattn_scratch *scratch_new(const linattn_model *m)
{
    linattn_scratch *sc = mem_calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    int failed = 0;
    size_t cd = (size_t)LINATTN_CHUNK * m->d;
    sc->x = alloc_floats(sc, cd, &failed);
    sc->hbuf = alloc_floats(sc, cd, &failed);
    sc->q = alloc_floats(sc, cd, &failed);
    sc->k = alloc_floats(sc, cd, &failed);
    sc->v = alloc_floats(sc, cd, &failed);
    sc->a = alloc_floats(sc, cd, &failed);
    sc->u = alloc_floats(sc, (size_t)LINATTN_CHUNK * m->dff, &failed);
    if (m->cfg.ffn == LINATTN_FFN_SWIGLU)
        sc->u2 = alloc_floats(sc, (size_t)LINATTN_CHUNK * m->dff, &failed);
    /* a decayed grouped linear model: k, v repeated per query head */
    if (m->cfg.attention == LINATTN_ATTN_LINEAR && m->g != m->h && m->lin_heads == m->h) {
        sc->kx = alloc_floats(sc, cd, &failed);
        sc->vx = alloc_floats(sc, cd, &failed);
    }
    if (m->cfg.positions == LINATTN_POS_ROPE)
        sc->rope = alloc_floats(sc, (size_t)LINATTN_CHUNK * m->dh, &failed);
    if (m->cfg.attention != LINATTN_ATTN_LINEAR && m->window > 0) {
        /* a hybrid's window also holds the key that leaves; halfs take
         * half the floats */
        size_t rows = (size_t)(m->window + LINATTN_CHUNK) * m->kvd;
        if (m->cfg.kv_cache == LINATTN_KV_F16)
            rows = (rows + 1) / 2;
        sc->gather_k = alloc_floats(sc, rows, &failed);
        sc->gather_v = alloc_floats(sc, rows, &failed);
    }
    if (m->cfg.attention == LINATTN_ATTN_HYBRID)
        sc->hyb_ws = alloc_floats(sc, linattn_hybrid_scratch_floats(m), &failed);
    if (failed) {
        scratch_free(sc);
        return NULL;
    }
    return sc;
}

/* sc's linear workspace for a state like st at `threads` threads. */
static linattn_status size_linear(linattn_scratch *sc, const linattn_linear_state *st, int threads)
{
    size_t start;
    size_t bytes = linattn_linear_state_lend_bytes(st, threads, &start);
    if (bytes == SIZE_MAX || start == SIZE_MAX)
        return linattn_err(LINATTN_ERR_NOMEM, "session: linear workspace size overflows");
    if (bytes > sc->lin_ws_bytes) {
        void *p = mem_alloc(bytes);
        if (!p)
            return linattn_err(LINATTN_ERR_NOMEM, "session: cannot allocate %zu bytes of workspace",
                               bytes);
        mem_free(sc->lin_ws);
        sc->lin_ws = p;
        sc->lin_ws_bytes = bytes;
    }
    if (start > sc->lin_start_bytes) {
        float *p = mem_alloc(start);
        if (!p)
            return linattn_err(LINATTN_ERR_NOMEM, "session: cannot allocate %zu bytes of workspace",
                               start);
        mem_free(sc->lin_start);
        sc->lin_start = p;
        sc->lin_start_bytes = start;
    }
    return LINATTN_OK;
}

/* Lends sc's linear workspace to every state of s (NULL: takes it back). */
static void lend_linear(linattn_session *s, linattn_scratch *sc)
{
    if (s->lin)
        for (int l = 0; l < s->m->cfg.n_layers; l++)
            linattn_linear_state_lend(s->lin[l], sc ? sc->lin_ws : NULL, sc ? sc->lin_ws_bytes : 0,
                                      sc && sc->lin_start_bytes ? sc->lin_start : NULL);
}

/* The thread-sized parts of s's buffers, for `threads` threads. */
static linattn_status size_workspace(linattn_session *s, int threads)
{
    const linattn_model *m = s->m;
    linattn_status st = linattn_model_size_team(s, threads);
    if (st == LINATTN_OK && s->lin)
        st = size_linear(s->sc, s->lin[0], threads);
    if (st != LINATTN_OK || m->cfg.attention == LINATTN_ATTN_LINEAR)
        return st;
    linattn_attention_desc desc;
    linattn_attention_desc_init(&desc);
    desc.batch = 1;
    desc.heads = m->h;
    desc.len_q = LINATTN_CHUNK;
    /* a window's prefill reads the W - 1 keys before it and its own (the
     * hybrid's, W, for the key that leaves) */
    desc.len_k = m->window > 0 ? m->window + LINATTN_CHUNK : m->cfg.max_seq_len;
    desc.d_k = desc.d_v = m->dh;
    desc.causal = 1;
    desc.threads = threads;
    size_t bytes = linattn_attention_softmax_workspace(&desc);
    if (bytes <= s->sc->attn_ws_bytes)
        return LINATTN_OK;
    void *ws = mem_alloc(bytes);
    if (!ws)
        return linattn_err(LINATTN_ERR_NOMEM, "session: cannot allocate %zu bytes of workspace", bytes);
    mem_free(s->sc->attn_ws);
    s->sc->attn_ws = ws;
    s->sc->attn_ws_bytes = bytes;
    return LINATTN_OK;
}

static int threads_sized(const linattn_session *s)
{
    return s->threads_asked > 0 ? s->threads_asked : linattn_max_threads();
}

/* Gives s's call buffers back to the model's pool. */
static void scratch_release(linattn_session *s)
{
    linattn_scratch *sc = s->sc;
    if (!sc)
        return;
    s->sc = NULL;
    lend_linear(s, NULL);
    linattn_scratch_pool *pool = s->m->pool;
    pthread_mutex_lock(&pool->mu);
    sc->next = pool->free;
    pool->free = sc;
    pthread_mutex_unlock(&pool->mu);
}

/* Lends s a set of call buffers for one call (a free one of the pool, or
 * a new one when all are in use), sized for its threads. */
static linattn_status scratch_acquire(linattn_session *s, const char *what)
{
    linattn_scratch_pool *pool = s->m->pool;
    pthread_mutex_lock(&pool->mu);
    linattn_scratch *sc = pool->free;
    if (sc)
        pool->free = sc->next;
    pthread_mutex_unlock(&pool->mu);
    if (!sc && !(sc = scratch_new(s->m)))
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for the call's buffers", what);
    sc->next = NULL;
    s->sc = sc;
    /* every size grows with the threads alone (the model is the set's), so
     * a set sized for as many serves without a second look */
    const int threads = threads_sized(s);
    if (sc->sized_threads < threads) {
        linattn_status st = size_workspace(s, threads);
        if (st != LINATTN_OK) {
            scratch_release(s);
            return st;
        }
        sc->sized_threads = threads;
    }
    lend_linear(s, sc);
    return LINATTN_OK;
}

linattn_status linattn_session_new(const linattn_model *m, linattn_session **out)
{
    if (!out)
        return linattn_err(LINATTN_ERR_INVALID, "session: out is NULL");
    *out = NULL;
    if (!m)
        return linattn_err(LINATTN_ERR_INVALID, "session: no model");
    linattn_session *s = mem_calloc(1, sizeof *s);
    if (!s)
        return linattn_err(LINATTN_ERR_NOMEM, "session: out of memory");
    s->m = m;
    s->threads_asked = m->cfg.threads;
    s->threads = linattn_model_default_threads(m);
    int failed = 0, L = m->cfg.n_layers;
    s->logits = mem_calloc((size_t)m->vocab, sizeof(float));
    failed |= !s->logits;
    linattn_status st = LINATTN_OK;
    if (m->cfg.attention == LINATTN_ATTN_LINEAR) {
        s->lin = mem_calloc((size_t)L, sizeof *s->lin);
        failed |= !s->lin;
        for (int l = 0; !failed && st == LINATTN_OK && l < L; l++) {
            st = linattn_linear_state_create(m->lin_heads, m->dh, m->dh, m->cfg.eps, m->decay,
                                             &s->lin[l]);
            if (st == LINATTN_OK)
                linattn_linear_state_borrow(s->lin[l]);
            if (st == LINATTN_OK && m->lin_heads != m->h) /* grouped: one state per k/v head */
                st = linattn_linear_state_set_group(s->lin[l], m->h / m->lin_heads);
        }
    } else {
        /* fp32 or halfs (kv_cache = f16): halfs take half the floats; a
         * window keeps a ring of W rows */
        size_t cache = (size_t)L * (size_t)m->cache_rows * m->kvd;
        s->kv16 = m->cfg.kv_cache == LINATTN_KV_F16;
        if (s->kv16)
            cache = (cache + 1) / 2;
        s->kcache = mem_calloc(cache ? cache : 1, sizeof(float));
        s->vcache = mem_calloc(cache ? cache : 1, sizeof(float));
        failed |= !s->kcache || !s->vcache;
    }
    if (m->cfg.attention == LINATTN_ATTN_HYBRID) {
        /* the tail: a state of every query head (each its own decay), phi
         * of fdim, no eps (the window's mass is never 0) */
        s->lin = mem_calloc((size_t)L, sizeof *s->lin);
        failed |= !s->lin;
        for (int l = 0; !failed && st == LINATTN_OK && l < L; l++)
            if ((st = linattn_linear_state_create(m->h, m->fdim, m->dh, 0.0f, m->decay,
                                                  &s->lin[l])) == LINATTN_OK)
                linattn_linear_state_borrow(s->lin[l]);
    }
    /* the pool holds a set sized for this session's threads before the
     * first feed, which then allocates nothing unless calls run at once */
    if (!failed && st == LINATTN_OK && (st = scratch_acquire(s, "session")) == LINATTN_OK)
        scratch_release(s);
    if (failed || st != LINATTN_OK) {
        linattn_session_free(s);
        return failed ? linattn_err(LINATTN_ERR_NOMEM, "session: out of memory") : st;
    }
    *out = s;
    return LINATTN_OK;
}

void linattn_session_free(linattn_session *s)
{
    if (!s)
        return;
    scratch_release(s);
    if (s->lin)
        for (int l = 0; l < s->m->cfg.n_layers; l++)
            linattn_linear_state_free(s->lin[l]);
    mem_free(s->lin);
    mem_free(s->kcache);
    mem_free(s->vcache);
    mem_free(s->logits);
    mem_free(s);
}

size_t linattn_session_memory_bytes(const linattn_session *s)
{
    if (!s)
        return 0;
    const linattn_model *m = s->m;
    size_t bytes = sizeof *s + (size_t)m->vocab * sizeof(float);
    if (s->kcache) {
        size_t cache = (size_t)m->cfg.n_layers * (size_t)m->cache_rows * m->kvd;
        bytes += 2 * (s->kv16 ? (cache + 1) / 2 : cache) * sizeof(float);
    }
    if (s->lin)
        for (int l = 0; l < m->cfg.n_layers; l++)
            bytes += sizeof *s->lin + linattn_linear_state_memory_bytes(s->lin[l]);
    return bytes;
}

size_t linattn_model_scratch_bytes(const linattn_model *m)
{
    if (!m || !m->pool)
        return 0;
    size_t bytes = 0;
    pthread_mutex_lock(&m->pool->mu);
    for (const linattn_scratch *sc = m->pool->free; sc; sc = sc->next)
        bytes += sc->bytes + sc->attn_ws_bytes + sc->batch_ws_bytes + sc->lin_ws_bytes +
                 sc->lin_start_bytes +
                 (sc->head_ws ? (size_t)LINATTN_HEAD_ROWS * (size_t)m->vocab * sizeof(float) : 0);
    pthread_mutex_unlock(&m->pool->mu);
    return bytes;
}

/* Rows of a layer's cache in use at `tokens` tokens (a ring: at most W). */
static size_t cache_rows_used(const linattn_model *m, uint64_t tokens)
{
    if (m->cfg.attention == LINATTN_ATTN_LINEAR)
        return 0;
    return m->window > 0 && tokens > (uint64_t)m->window ? (size_t)m->window : (size_t)tokens;
}

/* Tokens in a layer's linear state at `tokens` tokens of the stream: all
 * (linear), those that left the window (hybrid), none (softmax). */
static uint64_t lin_tokens(const linattn_model *m, uint64_t tokens)
{
    if (m->cfg.attention == LINATTN_ATTN_LINEAR)
        return tokens;
    if (m->cfg.attention == LINATTN_ATTN_HYBRID && tokens > (uint64_t)m->window)
        return tokens - (uint64_t)m->window;
    return 0;
}

/* A layer's linear state: heads, and the widths of S (dk x dv). */
static void lin_dims(const linattn_model *m, int *heads, size_t *dk, size_t *dv)
{
    int hybrid = m->cfg.attention == LINATTN_ATTN_HYBRID;
    *heads = hybrid ? m->h : m->lin_heads;
    *dk = hybrid ? (size_t)m->fdim : (size_t)m->dh;
    *dv = (size_t)m->dh;
}

/* dst's state, tokens and logits become src's (same model). */
static void copy_stream(linattn_session *dst, const linattn_session *src)
{
    const linattn_model *m = src->m;
    size_t d = (size_t)m->kvd, dk, dv; /* cache rows: the k/v heads */
    int heads;
    lin_dims(m, &heads, &dk, &dv);
    const uint64_t lt = lin_tokens(m, src->tokens);
    size_t rows = (size_t)(lt % LINATTN_LINEAR_BLOCK);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        if (src->lin) {
            for (int h = 0; h < heads; h++) {
                memcpy(linattn_linear_state_S(dst->lin[l], h), linattn_linear_state_S(src->lin[l], h),
                       dk * dv * sizeof(float));
                memcpy(linattn_linear_state_z(dst->lin[l], h), linattn_linear_state_z(src->lin[l], h),
                       dk * sizeof(float));
                memcpy(linattn_linear_state_rows_k(dst->lin[l], h),
                       linattn_linear_state_rows_k(src->lin[l], h), rows * dk * sizeof(float));
                memcpy(linattn_linear_state_rows_v(dst->lin[l], h),
                       linattn_linear_state_rows_v(src->lin[l], h), rows * dv * sizeof(float));
                memcpy(linattn_linear_state_exps(dst->lin[l], h),
                       linattn_linear_state_exps(src->lin[l], h), 2 * sizeof(int));
            }
            linattn_linear_state_set_tokens(dst->lin[l], lt);
        }
        size_t n = cache_rows_used(m, src->tokens) * d * linattn_cache_elem(src);
        if (n) {
            memcpy(linattn_cache_at(dst, 0, l, 0), linattn_cache_at(src, 0, l, 0), n);
            memcpy(linattn_cache_at(dst, 1, l, 0), linattn_cache_at(src, 1, l, 0), n);
        }
    }
    memcpy(dst->logits, src->logits, (size_t)m->vocab * sizeof(float));
    dst->tokens = src->tokens;
}

linattn_status linattn_session_fork(const linattn_session *src, linattn_session **out)
{
    if (out)
        *out = NULL;
    if (!src || !out)
        return linattn_err(LINATTN_ERR_INVALID, "session_fork: NULL argument");
    linattn_session *s;
    linattn_status st = linattn_session_new(src->m, &s);
    if (st != LINATTN_OK)
        return st;
    linattn_session_set_threads(s, src->threads_asked);
    copy_stream(s, src);
    *out = s;
    return LINATTN_OK;
}

linattn_status linattn_session_truncate(linattn_session *s, uint64_t n_tokens)
{
    if (!s)
        return linattn_err(LINATTN_ERR_INVALID, "session_truncate: session is NULL");
    const linattn_config *c = &s->m->cfg;
    /* only a full KV cache keeps every key: a ring has overwritten the old
     * ones, and linear sums cannot give a token back */
    if (c->attention != LINATTN_ATTN_SOFTMAX || s->m->window > 0)
        return linattn_err(LINATTN_ERR_INVALID,
                           "session_truncate: a %s stream cannot be cut (only plain softmax "
                           "attention keeps every key)",
                           c->attention == LINATTN_ATTN_LINEAR   ? "linear"
                           : c->attention == LINATTN_ATTN_HYBRID ? "hybrid"
                                                                 : "windowed softmax");
    if (n_tokens > s->tokens)
        return linattn_err(LINATTN_ERR_INVALID,
                           "session_truncate: cannot cut to %llu tokens, the stream has %llu",
                           (unsigned long long)n_tokens, (unsigned long long)s->tokens);
    if (n_tokens == s->tokens)
        return LINATTN_OK; /* nothing cut: the logits stay right */
    /* rows past n are rewritten before they are read again; the logits
     * after token n are not kept, so they read as zeros until a feed */
    s->tokens = n_tokens;
    memset(s->logits, 0, (size_t)s->m->vocab * sizeof(float));
    return LINATTN_OK;
}

void linattn_session_reset(linattn_session *s)
{
    s->tokens = 0; /* a ring's rows are rewritten before they are read again */
    if (s->lin)
        for (int l = 0; l < s->m->cfg.n_layers; l++)
            linattn_linear_state_reset(s->lin[l]);
}

void linattn_session_set_threads(linattn_session *s, int threads)
{
    int asked = threads > 0 ? threads : s->m->cfg.threads;
    int old = s->threads_asked;
    s->threads_asked = asked;
    /* a set of the pool sized for them now, so the next feed allocates
     * nothing */
    if (scratch_acquire(s, "session_set_threads") != LINATTN_OK)
        s->threads_asked = old; /* keep what the buffers were sized for */
    else
        scratch_release(s);
    s->threads = s->threads_asked > 0 ? s->threads_asked : linattn_max_threads();
}

/* The threads of the next chunk: the cores free now, up to the count asked
 * (0: up to the OpenMP default). An explicit count is a ceiling too: beside
 * a busy core, the thread sharing it stalls every barrier (linattn_threads_free). */
static void pick_threads(linattn_session *s)
{
    s->threads = linattn_threads_free(s->threads_asked > 0 ? s->threads_asked
                                                           : linattn_max_threads());
}

uint64_t linattn_session_tokens(const linattn_session *s)
{
    return s->tokens;
}

size_t linattn_session_state_bytes(const linattn_session *s)
{
    return linattn_model_state_bytes(s->m, s->tokens);
}

/* ---- feeding -------------------------------------------------------------- */

/* Softmax needs cache room (unless it keeps a window); learned positions
 * need table rows. */
static int bounded(const linattn_config *c)
{
    return (c->attention == LINATTN_ATTN_SOFTMAX && c->window == 0) ||
           c->positions == LINATTN_POS_LEARNED;
}

uint64_t linattn_session_tokens_left(const linattn_session *s)
{
    if (!s)
        return 0;
    const linattn_config *c = &s->m->cfg;
    if (!bounded(c))
        return UINT64_MAX;
    return s->tokens < (uint64_t)c->max_seq_len ? (uint64_t)c->max_seq_len - s->tokens : 0;
}

static linattn_status check_room(const linattn_session *s, uint64_t extra)
{
    const linattn_config *c = &s->m->cfg;
    if (extra > linattn_session_tokens_left(s))
        return linattn_err(LINATTN_ERR_CONTEXT_FULL,
                           "context full: %llu tokens fed, %llu more would pass max_seq_len %d (%s)",
                           (unsigned long long)s->tokens, (unsigned long long)extra,
                           c->max_seq_len,
                           c->attention == LINATTN_ATTN_SOFTMAX ? "softmax KV cache"
                                                                : "learned position table");
    return LINATTN_OK;
}

/* The last error, prefixed with the call and the stream it concerns. */
static linattn_status with_stream(linattn_status st, const char *call, int i)
{
    char why[512];
    snprintf(why, sizeof why, "%s", linattn_last_error());
    return linattn_err(st, "%s: session %d: %s", call, i, why);
}

const float *linattn_session_logits(const linattn_session *s)
{
    return s && s->tokens > 0 ? s->logits : NULL;
}

void linattn_session_set_progress(linattn_session *s, linattn_progress_fn fn, void *user)
{
    if (!s)
        return;
    s->progress = fn;
    s->progress_user = user;
}

/* Asks the progress callback (if any) after `done` of `total` tokens; 1:
 * stop. */
static int cancelled(const linattn_session *s, int done, int total)
{
    return s->progress && done < total &&
           s->progress(s->progress_user, (uint64_t)done, (uint64_t)total) != 0;
}

static linattn_status check_tokens(const linattn_model *m, const int *tokens, int n)
{
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->vocab)
            return linattn_err(LINATTN_ERR_INVALID, "token %d at index %d is outside the vocabulary [0, %d)",
                               tokens[i], i, m->vocab);
    return LINATTN_OK;
}

linattn_status linattn_session_feed(linattn_session *s, const int *tokens, int n, float *logits)
{
    if (!s || (!tokens && n > 0))
        return linattn_err(LINATTN_ERR_INVALID, "session_feed: NULL argument");
    if (n < 1)
        return linattn_err(LINATTN_ERR_INVALID, "session_feed: need at least one token, got %d", n);
    linattn_status st = check_tokens(s->m, tokens, n);
    if (st == LINATTN_OK)
        st = check_room(s, (uint64_t)n);
    const linattn_kernels *k;
    if (st == LINATTN_OK)
        st = linattn_kernels_current(&k);
    if (st == LINATTN_OK)
        st = scratch_acquire(s, "session_feed");
    for (int done = 0; st == LINATTN_OK && done < n; done += LINATTN_CHUNK) {
        int c = n - done < LINATTN_CHUNK ? n - done : LINATTN_CHUNK;
        pick_threads(s);
        st = linattn_model_forward(s, NULL, tokens + done, c);
        if (st != LINATTN_OK)
            break;
        int stop = cancelled(s, done + c, n);
        if (done + c == n || stop) /* the session keeps its last logits */
            linattn_model_logits(s->m, k, s->sc->x + (size_t)(c - 1) * s->m->d, s->logits, s->threads);
        if (stop) {
            scratch_release(s);
            return linattn_err(LINATTN_ERR_CANCELLED, "session_feed: cancelled after %d of %d tokens",
                               done + c, n);
        }
    }
    scratch_release(s);
    if (st == LINATTN_OK && logits)
        memcpy(logits, s->logits, (size_t)s->m->vocab * sizeof(float));
    return st;
}

linattn_status linattn_session_feed_all(linattn_session *s, const int *tokens, int n,
                                       float *logits)
{
    if (!s || !logits || (!tokens && n > 0))
        return linattn_err(LINATTN_ERR_INVALID, "session_feed_all: NULL argument");
    if (n < 1)
        return linattn_err(LINATTN_ERR_INVALID, "session_feed_all: need at least one token, got %d",
                           n);
    linattn_status st = check_tokens(s->m, tokens, n);
    if (st == LINATTN_OK)
        st = check_room(s, (uint64_t)n);
    const linattn_kernels *k;
    if (st == LINATTN_OK)
        st = linattn_kernels_current(&k);
    const size_t V = (size_t)s->m->vocab;
    if (st == LINATTN_OK)
        st = scratch_acquire(s, "session_feed_all");
    for (int done = 0; st == LINATTN_OK && done < n; done += LINATTN_CHUNK) {
        int c = n - done < LINATTN_CHUNK ? n - done : LINATTN_CHUNK;
        pick_threads(s);
        st = linattn_model_forward(s, NULL, tokens + done, c);
        if (st != LINATTN_OK)
            break;
        linattn_model_logits_rows(s->m, k, s->sc->x, c, logits + (size_t)done * V, s->threads);
        memcpy(s->logits, logits + (size_t)(done + c - 1) * V, V * sizeof(float));
        if (cancelled(s, done + c, n)) {
            scratch_release(s);
            return linattn_err(LINATTN_ERR_CANCELLED,
                               "session_feed_all: cancelled after %d of %d tokens", done + c, n);
        }
    }
    scratch_release(s);
    return st;
}

linattn_status linattn_sessions_step(linattn_session *const *sessions, const int *tokens, int n,
                                     float *const *logits)
{
    if (!sessions || !tokens || n < 1)
        return linattn_err(LINATTN_ERR_INVALID, "sessions_step: need at least one session and token");
    const linattn_model *m = sessions[0]->m;
    for (int i = 0; i < n; i++) {
        if (!sessions[i] || sessions[i]->m != m)
            return linattn_err(LINATTN_ERR_INVALID, "sessions_step: session %d is NULL or of another model", i);
        for (int j = 0; j < i; j++)
            if (sessions[j] == sessions[i])
                return linattn_err(LINATTN_ERR_INVALID, "sessions_step: session %d appears twice", i);
        linattn_status st = check_room(sessions[i], 1);
        if (st == LINATTN_OK)
            st = check_tokens(m, tokens + i, 1);
        if (st != LINATTN_OK)
            return with_stream(st, "sessions_step", i);
    }
    const linattn_kernels *k;
    linattn_status st = linattn_kernels_current(&k);
    /* Groups of up to LINATTN_STEP_GROUP streams (never one, when n > 1),
     * a lone stream's too, through the rows path: every projection is a
     * gemm in slabs of fewer than 64 rows (one row included), whose dot tiles sum
     * each row alike whatever the rows beside it, and the LM head's blocks
     * likewise, so a stream's bits do not depend on the streams it shares
     * a step with (what a lone step costs for it: docs/benchmarks.md). */
    int c;
    for (int g = 0; st == LINATTN_OK && g < n; g += c) {
        c = n - g < LINATTN_STEP_GROUP ? n - g : LINATTN_STEP_GROUP;
        if (n - g - c == 1)
            c--; /* leave two for the last group */
        linattn_session *w = sessions[g]; /* its buffers carry the group's rows */
        pick_threads(w);
        if ((st = scratch_acquire(w, "sessions_step")) != LINATTN_OK)
            continue;
        st = linattn_model_forward(w, sessions + g, tokens + g, c);
        if (st != LINATTN_OK) {
            scratch_release(w);
            continue;
        }
        /* the LM head: one gemm a block of streams, so its weights are read
         * once a block rather than once a stream (one stream: a gemv, as
         * a lone step) */
        const size_t V = (size_t)m->vocab;
        if (c > 1 && !w->sc->head_ws &&
            !(w->sc->head_ws = mem_alloc((size_t)LINATTN_HEAD_ROWS * V * sizeof(float)))) {
            st = linattn_err(LINATTN_ERR_NOMEM, "sessions_step: cannot allocate %zu bytes of logits",
                             (size_t)LINATTN_HEAD_ROWS * V * sizeof(float));
            scratch_release(w);
            continue;
        }
        for (int r0 = 0, nr; r0 < c; r0 += nr) {
            nr = c - r0 < LINATTN_HEAD_ROWS ? c - r0 : LINATTN_HEAD_ROWS;
            if (c > 1 && c - r0 - nr == 1)
                nr--; /* no block of one row in a group: gemv sums otherwise */
            float *y = nr > 1 ? w->sc->head_ws : sessions[g + r0]->logits;
            linattn_model_logits_gemm(m, k, w->sc->x + (size_t)r0 * m->d, nr, y, w->threads);
            for (int i = 0; i < nr; i++) {
                linattn_session *s = sessions[g + r0 + i];
                if (nr > 1)
                    memcpy(s->logits, y + (size_t)i * V, V * sizeof(float));
                if (logits && logits[g + r0 + i])
                    memcpy(logits[g + r0 + i], s->logits, V * sizeof(float));
            }
        }
        scratch_release(w);
    }
    return st;
}

linattn_status linattn_sessions_feed(linattn_session *const *sessions, const int *const *tokens,
                                     const int *counts, int n, float *const *logits)
{
    if (!sessions || !tokens || !counts || n < 1)
        return linattn_err(LINATTN_ERR_INVALID, "sessions_feed: need at least one session");
    const linattn_model *m = sessions[0] ? sessions[0]->m : NULL;
    for (int i = 0; i < n; i++) {
        if (!sessions[i] || sessions[i]->m != m)
            return linattn_err(LINATTN_ERR_INVALID,
                               "sessions_feed: session %d is NULL or of another model", i);
        for (int j = 0; j < i; j++)
            if (sessions[j] == sessions[i])
                return linattn_err(LINATTN_ERR_INVALID, "sessions_feed: session %d appears twice", i);
        if (counts[i] < 1 || !tokens[i])
            return linattn_err(LINATTN_ERR_INVALID,
                               "sessions_feed: session %d: need at least one token, got %d", i,
                               counts[i]);
        linattn_status st = check_tokens(m, tokens[i], counts[i]);
        if (st == LINATTN_OK)
            st = check_room(sessions[i], (uint64_t)counts[i]);
        if (st != LINATTN_OK)
            return with_stream(st, "sessions_feed", i);
    }
    /* Each prefill spreads its own rows over the threads; streams in turn. */
    for (int i = 0; i < n; i++) {
        linattn_status st = linattn_session_feed(sessions[i], tokens[i], counts[i],
                                                 logits ? logits[i] : NULL);
        if (st != LINATTN_OK)
            return with_stream(st, "sessions_feed", i);
    }
    return LINATTN_OK;
}

/* ---- save and load -------------------------------------------------------- */

/* A session file: a header, the payload (linear: per layer and head S, z
 * and the waiting rows; softmax: per layer K then V rows 0..tokens-1, fp32
 * or halfs as the header says), the logits after the last token (version
 * 3), the host's extra bytes, and the CRC32 of all that precedes.
 * Little-endian. Versions 2 (no logits, a 48-byte header) and 3 still load;
 * a cache saved as fp32 loads into an F16 cache and the other way round. */
#define SESSION_MAGIC "LINATTNS"
/* 2: a linear state also stores its waiting rows (tokens % 16 of them)
 * 3: the logits after the last token follow the payload
 * 4: the u32 after the logits count says what the KV cache holds: 0 fp32,
 *    1 halfs (kv_cache = f16); 0 in version 3 files
 * 5: each head of a linear state ends with two u32, the range exponents of
 *    its sums (phi(k) and v held times 2^-e; 0 in older files) */
#define SESSION_VERSION 5u
#define EXP_MAX 108 /* the largest range exponent an input needs: ilogb(FLT_MAX) - 20 + 1 */
#define HEADER_V2 48
#define HEADER_BYTES 56 /* v2's, then u32 logits count (0 or vocab), u32 cache dtype */

/* Payload bytes of s's state at `tokens` tokens in a file of `version`, its
 * cache held as halfs when kv16. */
static size_t payload_bytes_as(const linattn_session *s, uint64_t tokens, int kv16,
                               uint32_t version)
{
    const linattn_model *m = s->m;
    /* per layer: the cache's rows in use (a ring in slot order), then the
     * linear state's heads: S, z, and the waiting rows of phi(k) and v */
    size_t bytes = (size_t)m->cfg.n_layers * 2 * (size_t)m->kvd * cache_rows_used(m, tokens) *
                   (kv16 ? sizeof(uint16_t) : sizeof(float));
    if (m->cfg.attention == LINATTN_ATTN_SOFTMAX)
        return bytes;
    int heads;
    size_t dk, dv, rows = (size_t)(lin_tokens(m, tokens) % LINATTN_LINEAR_BLOCK);
    lin_dims(m, &heads, &dk, &dv);
    return bytes + (size_t)m->cfg.n_layers * (size_t)heads *
                       ((dk * dv + dk + rows * (dk + dv)) * sizeof(float) +
                        (version >= 5 ? 2 * sizeof(uint32_t) : 0));
}

static size_t payload_bytes(const linattn_session *s, uint64_t tokens)
{
    return payload_bytes_as(s, tokens, s->kv16, SESSION_VERSION);
}

static size_t logits_count(const linattn_session *s)
{
    return s->tokens > 0 ? (size_t)s->m->vocab : 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uLong crc_of(uLong crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t off = 0; off < n; off += 1u << 30) { /* zlib takes uInt lengths */
        size_t k = n - off < (1u << 30) ? n - off : (1u << 30);
        crc = crc32(crc, b + off, (uInt)k);
    }
    return crc;
}

/* Where a save goes: a file being written, or a buffer. */
typedef struct writer {
    safe_file *file;   /* NULL: into buf */
    unsigned char *buf;
    size_t at;
    uLong crc;
} writer;

static void put(writer *w, const void *p, size_t n)
{
    if (!n)
        return;
    w->crc = crc_of(w->crc, p, n);
    if (w->file)
        safe_file_write(w->file, p, n);
    else
        memcpy(w->buf + w->at, p, n);
    w->at += n;
}

size_t linattn_session_save_size(const linattn_session *s, size_t extra_bytes)
{
    if (!s)
        return 0;
    return HEADER_BYTES + payload_bytes(s, s->tokens) + logits_count(s) * sizeof(float) +
           extra_bytes + 4;
}

static void put_session(writer *w, const linattn_session *s, const void *extra,
                        size_t extra_bytes)
{
    const linattn_model *m = s->m;
    unsigned char head[HEADER_BYTES] = {0};
    memcpy(head, SESSION_MAGIC, 8);
    put_u32(head + 8, SESSION_VERSION);
    put_u32(head + 12, (uint32_t)m->cfg.attention);
    put_u64(head + 16, m->shape_hash);
    put_u64(head + 24, s->tokens);
    put_u64(head + 32, payload_bytes(s, s->tokens));
    put_u64(head + 40, extra_bytes);
    put_u32(head + 48, (uint32_t)logits_count(s));
    put_u32(head + 52, (uint32_t)s->kv16);
    put(w, head, sizeof head);
    size_t d = (size_t)m->kvd, dk, dv; /* cache rows: the k/v heads */
    int heads;
    lin_dims(m, &heads, &dk, &dv);
    size_t rows = (size_t)(lin_tokens(m, s->tokens) % LINATTN_LINEAR_BLOCK);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        size_t bytes = cache_rows_used(m, s->tokens) * d * linattn_cache_elem(s);
        put(w, linattn_cache_at(s, 0, l, 0), bytes);
        put(w, linattn_cache_at(s, 1, l, 0), bytes);
        if (s->lin)
            for (int h = 0; h < heads; h++) {
                put(w, linattn_linear_state_S(s->lin[l], h), dk * dv * sizeof(float));
                put(w, linattn_linear_state_z(s->lin[l], h), dk * sizeof(float));
                put(w, linattn_linear_state_rows_k(s->lin[l], h), rows * dk * sizeof(float));
                put(w, linattn_linear_state_rows_v(s->lin[l], h), rows * dv * sizeof(float));
                const int *e = linattn_linear_state_exps(s->lin[l], h);
                unsigned char ex[8];
                put_u32(ex, (uint32_t)e[0]);
                put_u32(ex + 4, (uint32_t)e[1]);
                put(w, ex, sizeof ex);
            }
    }
    put(w, s->logits, logits_count(s) * sizeof(float));
    put(w, extra, extra_bytes);
    unsigned char tail[4];
    put_u32(tail, (uint32_t)w->crc);
    if (w->file)
        safe_file_write(w->file, tail, 4);
    else
        memcpy(w->buf + w->at, tail, 4);
}

linattn_status linattn_session_save(const linattn_session *s, const char *path, const void *extra,
                                    size_t extra_bytes)
{
    if (!s || !path || (!extra && extra_bytes))
        return linattn_err(LINATTN_ERR_INVALID, "session_save: NULL argument");
    safe_file f;
    linattn_status st = safe_file_begin(&f, path, "state file");
    if (st != LINATTN_OK)
        return st;
    writer w = {&f, NULL, 0, crc32(0L, Z_NULL, 0)};
    put_session(&w, s, extra, extra_bytes);
    return safe_file_commit(&f, "the state file");
}

linattn_status linattn_session_save_mem(const linattn_session *s, const void *extra,
                                        size_t extra_bytes, void *buf, size_t cap)
{
    if (!s || !buf || (!extra && extra_bytes))
        return linattn_err(LINATTN_ERR_INVALID, "session_save_mem: NULL argument");
    size_t need = linattn_session_save_size(s, extra_bytes);
    if (cap < need)
        return linattn_err(LINATTN_ERR_INVALID,
                           "session_save_mem: the buffer holds %zu bytes, the state needs %zu "
                           "(linattn_session_save_size)", cap, need);
    writer w = {NULL, buf, 0, crc32(0L, Z_NULL, 0)};
    put_session(&w, s, extra, extra_bytes);
    return LINATTN_OK;
}

/* count cache values from a file (halfs if file16, else fp32) into s's
 * cache at dst: copied, or converted (fp32 to half rounds to nearest even,
 * half to fp32 is exact). */
static void cache_load(const linattn_session *s, void *dst, const unsigned char *src, size_t count,
                       int file16)
{
    if (file16 == s->kv16) {
        memcpy(dst, src, count * linattn_cache_elem(s));
        return;
    }
    for (size_t i = 0; i < count; i++) {
        if (file16) {
            uint16_t h;
            memcpy(&h, src + i * sizeof h, sizeof h);
            ((float *)dst)[i] = linattn_f16_to_f32(h);
        } else {
            float f;
            memcpy(&f, src + i * sizeof f, sizeof f);
            ((uint16_t *)dst)[i] = linattn_f32_to_f16(f);
        }
    }
}

/* Index of the first of count values at p (halfs if f16, else fp32) that
 * is NaN or +-inf, or count: all exponent bits set, read as integers. */
static size_t first_nonfinite(const unsigned char *p, size_t count, int f16)
{
    for (size_t i = 0; i < count; i++) {
        if (f16) {
            uint16_t h;
            memcpy(&h, p + i * sizeof h, sizeof h);
            if ((h & 0x7c00u) == 0x7c00u)
                return i;
        } else {
            uint32_t w;
            memcpy(&w, p + i * sizeof w, sizeof w);
            if ((w & 0x7f800000u) == 0x7f800000u)
                return i;
        }
    }
    return count;
}

/* An error naming the first non-finite value of the count at p (what:
 * which part of the state, rows of width, or a vector: width 0), or OK;
 * *p moves past them. */
static linattn_status check_finite(const unsigned char **p, size_t count, int f16,
                                   const char *name, int layer, int head, const char *what,
                                   size_t width)
{
    size_t at = first_nonfinite(*p, count, f16);
    *p += count * (f16 ? sizeof(uint16_t) : sizeof(float));
    if (at == count)
        return LINATTN_OK;
    if (width == 0)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: layer %d head %d: %s [%zu] is not finite (NaN or inf)", name,
                           layer, head, what, at);
    if (head < 0)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: layer %d: %s row %zu column %zu is not finite (NaN or inf)",
                           name, layer, what, at / width, at % width);
    return linattn_err(LINATTN_ERR_FORMAT,
                       "%s: layer %d head %d: %s [%zu][%zu] is not finite (NaN or inf)", name,
                       layer, head, what, at / width, at % width);
}

/* Every value of a saved state's payload and logits (at p, the layout
 * put_session writes) is finite, or an error names the first that is not:
 * a NaN in a cache or the sums would reach every later output. One pass
 * over the payload. */
static linattn_status check_payload(const linattn_session *s, const unsigned char *p,
                                    uint64_t tokens, int file16, size_t nlogits,
                                    uint32_t version, const char *name)
{
    const linattn_model *m = s->m;
    size_t d = (size_t)m->kvd, dk, dv;
    int heads;
    lin_dims(m, &heads, &dk, &dv);
    size_t rows = (size_t)(lin_tokens(m, tokens) % LINATTN_LINEAR_BLOCK);
    size_t count = cache_rows_used(m, tokens) * d;
    linattn_status st = LINATTN_OK;
    for (int l = 0; l < m->cfg.n_layers && st == LINATTN_OK; l++) {
        st = check_finite(&p, count, file16, name, l, -1, "the KV cache's keys", d);
        if (st == LINATTN_OK)
            st = check_finite(&p, count, file16, name, l, -1, "the KV cache's values", d);
        if (m->cfg.attention == LINATTN_ATTN_SOFTMAX)
            continue;
        for (int h = 0; h < heads && st == LINATTN_OK; h++) {
            st = check_finite(&p, dk * dv, 0, name, l, h, "the linear sum S", dv);
            if (st == LINATTN_OK)
                st = check_finite(&p, dk, 0, name, l, h, "the linear sum z", 0);
            if (st == LINATTN_OK)
                st = check_finite(&p, rows * dk, 0, name, l, h, "a waiting phi(k) row", dk);
            if (st == LINATTN_OK)
                st = check_finite(&p, rows * dv, 0, name, l, h, "a waiting v row", dv);
            for (int i = 0; i < 2 && version >= 5 && st == LINATTN_OK; i++, p += 4)
                if (get_u32(p) > EXP_MAX)
                    st = linattn_err(LINATTN_ERR_FORMAT,
                                     "%s: layer %d head %d: range exponent %u past %d", name, l,
                                     h, get_u32(p), EXP_MAX);
        }
    }
    if (st == LINATTN_OK && first_nonfinite(p, nlogits, 0) < nlogits)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: logit %zu is not finite (NaN or inf)", name,
                           first_nonfinite(p, nlogits, 0));
    return st;
}

/* Checks a whole saved session in data[size] (name: for messages) and only
 * then loads it into s. */
static linattn_status load_bytes(linattn_session *s, const unsigned char *data, size_t size,
                                 const char *name, void *extra, size_t extra_cap,
                                 size_t *extra_bytes)
{
    if (size < HEADER_V2 + 4)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: not a linattn session (too short)", name);
    if (memcmp(data, SESSION_MAGIC, 8) != 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: not a linattn session (bad magic)", name);
    uint32_t version = get_u32(data + 8), variant = get_u32(data + 12);
    uint64_t hash = get_u64(data + 16), tokens = get_u64(data + 24);
    uint64_t payload = get_u64(data + 32), xbytes = get_u64(data + 40);
    const linattn_config *c = &s->m->cfg;
    if (version < 2 || version > SESSION_VERSION)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: session format version %u, this build reads 2 to %u", name,
                           version, SESSION_VERSION);
    size_t head_bytes = version == 2 ? HEADER_V2 : HEADER_BYTES;
    uint64_t nlogits = version == 2 || size < HEADER_BYTES ? 0 : get_u32(data + 48);
    uint32_t file16 = version < 4 || size < HEADER_BYTES ? 0 : get_u32(data + 52);
    /* the attention kind first: another kind's header fields (a KV cache
     * type a linear state never has) would only be misread as corruption */
    static const char *const kinds[] = {"softmax", "linear", "hybrid"};
    if (variant != (uint32_t)c->attention)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: the state of a %s model%s; this model's attention is %s", name,
                           variant < 3 ? kinds[variant] : "unknown kind of",
                           variant == LINATTN_ATTN_SOFTMAX && file16 == 1 ? " (f16 KV cache)"
                                                                            : "",
                           kinds[c->attention]);
    if (file16 > 1 || (file16 && c->attention == LINATTN_ATTN_LINEAR))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: unknown KV cache type %u in the header",
                           name, file16);
    if (hash != s->m->shape_hash)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: the state of a %s model of another shape (layers, widths, "
                           "heads, positions, window or decay differ)", name, kinds[c->attention]);
    if (bounded(c) && tokens > (uint64_t)c->max_seq_len)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: %llu tokens exceed max_seq_len %d", name,
                           (unsigned long long)tokens, c->max_seq_len);
    if (nlogits != 0 && nlogits != (uint64_t)s->m->vocab)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: %llu logits stored, the model has %d", name,
                           (unsigned long long)nlogits, s->m->vocab);
    if (payload != payload_bytes_as(s, tokens, (int)file16, version) || xbytes > (uint64_t)1 << 32 ||
        (uint64_t)size != head_bytes + payload + nlogits * sizeof(float) + xbytes + 4)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: size does not match its header (truncated or corrupted)", name);
    uLong crc = crc_of(crc32(0L, Z_NULL, 0), data, size - 4);
    if ((uint32_t)crc != get_u32(data + size - 4))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: checksum mismatch (corrupted)", name);
    linattn_status fin =
        check_payload(s, data + head_bytes, tokens, (int)file16, (size_t)nlogits, version, name);
    if (fin != LINATTN_OK)
        return fin;
    /* Everything checked: only now touch the session. */
    const linattn_model *m = s->m;
    size_t d = (size_t)m->kvd, dk, dv; /* cache rows: the k/v heads */
    int heads;
    lin_dims(m, &heads, &dk, &dv);
    const uint64_t lt = lin_tokens(m, tokens);
    size_t rows = (size_t)(lt % LINATTN_LINEAR_BLOCK);
    const unsigned char *p = data + head_bytes;
    for (int l = 0; l < c->n_layers; l++) {
        size_t count = cache_rows_used(m, tokens) * d; /* values of K, then of V */
        for (int which = 0; which < 2 && count; which++) {
            cache_load(s, linattn_cache_at(s, which, l, 0), p, count, (int)file16);
            p += count * (file16 ? sizeof(uint16_t) : sizeof(float));
        }
        if (!s->lin)
            continue;
        for (int h = 0; h < heads; h++) {
            memcpy(linattn_linear_state_S(s->lin[l], h), p, dk * dv * sizeof(float));
            p += dk * dv * sizeof(float);
            memcpy(linattn_linear_state_z(s->lin[l], h), p, dk * sizeof(float));
            p += dk * sizeof(float);
            memcpy(linattn_linear_state_rows_k(s->lin[l], h), p, rows * dk * sizeof(float));
            p += rows * dk * sizeof(float);
            memcpy(linattn_linear_state_rows_v(s->lin[l], h), p, rows * dv * sizeof(float));
            p += rows * dv * sizeof(float);
            int *e = linattn_linear_state_exps(s->lin[l], h);
            e[0] = e[1] = 0;
            if (version >= 5) {
                e[0] = (int)get_u32(p);
                e[1] = (int)get_u32(p + 4);
                p += 8;
            }
        }
        linattn_linear_state_set_tokens(s->lin[l], lt);
    }
    s->tokens = tokens;
    if (nlogits)
        memcpy(s->logits, p, (size_t)nlogits * sizeof(float));
    else /* a version 2 file: none stored */
        memset(s->logits, 0, (size_t)m->vocab * sizeof(float));
    p += nlogits * sizeof(float);
    if (extra)
        memcpy(extra, p, xbytes < extra_cap ? (size_t)xbytes : extra_cap);
    if (extra_bytes)
        *extra_bytes = (size_t)xbytes;
    return LINATTN_OK;
}

linattn_status linattn_session_load_mem(linattn_session *s, const void *buf, size_t size,
                                        void *extra, size_t extra_cap, size_t *extra_bytes)
{
    if (!s || !buf || (!extra && extra_cap))
        return linattn_err(LINATTN_ERR_INVALID, "session_load_mem: NULL argument");
    return load_bytes(s, buf, size, "session buffer", extra, extra_cap, extra_bytes);
}

linattn_status linattn_session_load(linattn_session *s, const char *path, void *extra,
                                    size_t extra_cap, size_t *extra_bytes)
{
    if (!s || !path || (!extra && extra_cap))
        return linattn_err(LINATTN_ERR_INVALID, "session_load: NULL argument");
    char *data;
    size_t len;
    linattn_status st = safe_read_all(path, "state file", SIZE_MAX, &data, &len);
    if (st != LINATTN_OK)
        return st;
    st = load_bytes(s, (const unsigned char *)data, len, path, extra, extra_cap, extra_bytes);
    mem_free(data);
    return st;
}

void linattn_window_gather(linattn_session *s, const linattn_kernels *kt, int layer,
                           const float *k, const float *v, int n, int prev)
{
    const size_t kvd = (size_t)s->m->kvd, elem = linattn_cache_elem(s);
    const uint64_t t0 = s->tokens;
    const int W = s->m->window;
    char *gk = s->sc->gather_k, *gv = s->sc->gather_v;
    for (int r = 0; r < prev; r++) {
        uint64_t pos = t0 - (uint64_t)prev + (uint64_t)r;
        memcpy(gk + (size_t)r * kvd * elem, linattn_cache_at(s, 0, layer, pos), kvd * elem);
        memcpy(gv + (size_t)r * kvd * elem, linattn_cache_at(s, 1, layer, pos), kvd * elem);
    }
    if (s->kv16) {
        kt->to_f16((uint16_t *)(void *)(gk + (size_t)prev * kvd * elem), k, (size_t)n * kvd);
        kt->to_f16((uint16_t *)(void *)(gv + (size_t)prev * kvd * elem), v, (size_t)n * kvd);
    } else {
        memcpy(gk + (size_t)prev * kvd * elem, k, (size_t)n * kvd * sizeof(float));
        memcpy(gv + (size_t)prev * kvd * elem, v, (size_t)n * kvd * sizeof(float));
    }
    for (int r = n > W ? n - W : 0; r < n; r++) /* the last W rows stay */
        linattn_cache_put(s, kt, layer, t0 + (uint64_t)r, k + (size_t)r * kvd,
                          v + (size_t)r * kvd, kvd);
}
