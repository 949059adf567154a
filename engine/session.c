/* session.c: a stream's decode state (KV cache or S, z): feed, batch step, save and load. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "model.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "session files are written little-endian; a big-endian host needs byte swaps here"
#endif

/* ---- lifecycle ------------------------------------------------------------ */

static void *alloc_floats(size_t n, int *failed)
{
    void *p = mem_calloc(n ? n : 1, sizeof(float));
    if (!p)
        *failed = 1;
    return p;
}

static linattn_status size_workspace(linattn_session *s)
{
    const linattn_model *m = s->m;
    if (m->cfg.attention != LINATTN_ATTN_SOFTMAX)
        return LINATTN_OK;
    linattn_attention_desc desc;
    linattn_attention_desc_init(&desc);
    desc.batch = 1;
    desc.heads = m->h;
    desc.len_q = LINATTN_CHUNK;
    desc.len_k = m->cfg.max_seq_len;
    desc.d_k = desc.d_v = m->dh;
    desc.causal = 1;
    desc.threads = s->threads_asked > 0 ? s->threads_asked : linattn_max_threads();
    size_t bytes = linattn_attention_softmax_workspace(&desc);
    if (bytes <= s->attn_ws_bytes)
        return LINATTN_OK;
    void *ws = mem_alloc(bytes);
    if (!ws)
        return linattn_err(LINATTN_ERR_NOMEM, "session: cannot allocate %zu bytes of workspace", bytes);
    mem_free(s->attn_ws);
    s->attn_ws = ws;
    s->attn_ws_bytes = bytes;
    return LINATTN_OK;
}

linattn_status linattn_session_new(const linattn_model *m, linattn_session **out)
{
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
    size_t cd = (size_t)LINATTN_CHUNK * m->d;
    s->x = alloc_floats(cd, &failed);
    s->hbuf = alloc_floats(cd, &failed);
    s->q = alloc_floats(cd, &failed);
    s->k = alloc_floats(cd, &failed);
    s->v = alloc_floats(cd, &failed);
    s->a = alloc_floats(cd, &failed);
    s->u = alloc_floats((size_t)LINATTN_CHUNK * m->dff, &failed);
    linattn_status st = LINATTN_OK;
    if (m->cfg.attention == LINATTN_ATTN_LINEAR) {
        s->lin = mem_calloc((size_t)L, sizeof *s->lin);
        failed |= !s->lin;
        for (int l = 0; !failed && st == LINATTN_OK && l < L; l++)
            st = linattn_linear_state_create(m->h, m->dh, m->dh, m->cfg.eps, m->decay,
                                             &s->lin[l]);
    } else {
        size_t cache = (size_t)L * (size_t)m->cfg.max_seq_len * m->d;
        s->kcache = alloc_floats(cache, &failed);
        s->vcache = alloc_floats(cache, &failed);
    }
    if (!failed && st == LINATTN_OK)
        st = size_workspace(s);
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
    if (s->lin)
        for (int l = 0; l < s->m->cfg.n_layers; l++)
            linattn_linear_state_free(s->lin[l]);
    mem_free(s->lin);
    mem_free(s->kcache);
    mem_free(s->vcache);
    mem_free(s->attn_ws);
    mem_free(s->batch_ws);
    mem_free(s->x);
    mem_free(s->hbuf);
    mem_free(s->q);
    mem_free(s->k);
    mem_free(s->v);
    mem_free(s->a);
    mem_free(s->u);
    mem_free(s);
}

void linattn_session_reset(linattn_session *s)
{
    s->tokens = 0;
    if (s->lin)
        for (int l = 0; l < s->m->cfg.n_layers; l++)
            linattn_linear_state_reset(s->lin[l]);
}

void linattn_session_set_threads(linattn_session *s, int threads)
{
    int asked = threads > 0 ? threads : s->m->cfg.threads;
    int old = s->threads_asked;
    s->threads_asked = asked;
    if (size_workspace(s) != LINATTN_OK)
        s->threads_asked = old; /* keep what the workspace was sized for */
    s->threads = s->threads_asked > 0 ? s->threads_asked : linattn_max_threads();
}

/* The threads of the next chunk: as asked, or the cores free now. */
static void pick_threads(linattn_session *s)
{
    s->threads = s->threads_asked > 0 ? s->threads_asked
                                      : linattn_threads_free(linattn_max_threads());
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

/* Softmax needs cache room; learned positions need table rows. */
static linattn_status check_room(const linattn_session *s, uint64_t extra)
{
    const linattn_config *c = &s->m->cfg;
    int bounded = c->attention == LINATTN_ATTN_SOFTMAX || c->positions == LINATTN_POS_LEARNED;
    if (bounded && s->tokens + extra > (uint64_t)c->max_seq_len)
        return linattn_err(LINATTN_ERR_CONTEXT_FULL,
                           "context full: %llu tokens fed, %llu more would pass max_seq_len %d (%s)",
                           (unsigned long long)s->tokens, (unsigned long long)extra,
                           c->max_seq_len,
                           c->attention == LINATTN_ATTN_SOFTMAX ? "softmax KV cache"
                                                                : "learned position table");
    return LINATTN_OK;
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
    for (int done = 0; st == LINATTN_OK && done < n; done += LINATTN_CHUNK) {
        int c = n - done < LINATTN_CHUNK ? n - done : LINATTN_CHUNK;
        pick_threads(s);
        st = linattn_model_forward(s, NULL, tokens + done, c);
        if (st == LINATTN_OK && logits && done + c == n) {
            const linattn_kernels *k;
            if ((st = linattn_kernels_current(&k)) == LINATTN_OK)
                linattn_model_logits(s->m, k, s->x + (size_t)(c - 1) * s->m->d, logits, s->threads);
        }
    }
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
    for (int done = 0; st == LINATTN_OK && done < n; done += LINATTN_CHUNK) {
        int c = n - done < LINATTN_CHUNK ? n - done : LINATTN_CHUNK;
        pick_threads(s);
        st = linattn_model_forward(s, NULL, tokens + done, c);
        if (st == LINATTN_OK)
            linattn_model_logits_rows(s->m, k, s->x, c, logits + (size_t)done * V, s->threads);
    }
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
            return st;
    }
    const linattn_kernels *k;
    linattn_status st = linattn_kernels_current(&k);
    for (int g = 0; st == LINATTN_OK && g < n; g += LINATTN_CHUNK) {
        int c = n - g < LINATTN_CHUNK ? n - g : LINATTN_CHUNK;
        linattn_session *w = sessions[g]; /* its buffers carry the group's rows */
        pick_threads(w);
        st = linattn_model_forward(w, sessions + g, tokens + g, c);
        if (st != LINATTN_OK || !logits)
            continue;
        int T = w->threads;
        int par = T > 1 && (size_t)c * m->vocab * m->d >= LINATTN_PARALLEL_MIN_WORK;
        (void)par; /* used by the pragma only */
#pragma omp parallel for num_threads(T) schedule(static) if (par)
        for (int i = 0; i < c; i++)
            if (logits[g + i])
                linattn_model_logits(m, k, w->x + (size_t)i * m->d, logits[g + i], 1);
    }
    return st;
}

/* ---- save and load -------------------------------------------------------- */

/* File: header, payload (linear: per layer and head S then z; softmax: per
 * layer K then V rows 0..tokens-1), extra, CRC32 of all that precedes. */
#define SESSION_MAGIC "LINATTNS"
/* 2: a linear state also stores its waiting rows (tokens % 16 of them) */
#define SESSION_VERSION 2u
#define HEADER_BYTES 48

static size_t payload_bytes(const linattn_session *s, uint64_t tokens)
{
    const linattn_model *m = s->m;
    if (m->cfg.attention != LINATTN_ATTN_LINEAR)
        return linattn_model_state_bytes(m, tokens);
    /* per layer and head: S, z, and the waiting rows of phi(k) and v */
    size_t dh = (size_t)m->dh, rows = (size_t)(tokens % LINATTN_LINEAR_BLOCK);
    return (size_t)m->cfg.n_layers * (size_t)m->h * (dh * dh + dh + rows * 2 * dh) *
           sizeof(float);
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

typedef struct writer {
    safe_file file;
    uLong crc;
} writer;

static void put(writer *w, const void *p, size_t n)
{
    if (!n || w->file.failed)
        return;
    w->crc = crc32(w->crc, p, (uInt)n); /* n < 4 GiB: rows and S blocks */
    safe_file_write(&w->file, p, n);
}

static void put_state(writer *w, const linattn_session *s)
{
    const linattn_model *m = s->m;
    size_t dh = (size_t)m->dh, d = (size_t)m->d;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        if (s->lin) {
            for (int h = 0; h < m->h; h++) {
                size_t rows = (size_t)(s->tokens % LINATTN_LINEAR_BLOCK);
                put(w, linattn_linear_state_S(s->lin[l], h), dh * dh * sizeof(float));
                put(w, linattn_linear_state_z(s->lin[l], h), dh * sizeof(float));
                put(w, linattn_linear_state_rows_k(s->lin[l], h), rows * dh * sizeof(float));
                put(w, linattn_linear_state_rows_v(s->lin[l], h), rows * dh * sizeof(float));
            }
            continue;
        }
        size_t off = (size_t)l * (size_t)m->cfg.max_seq_len * d;
        for (uint64_t t = 0; t < s->tokens; t++)
            put(w, s->kcache + off + t * d, d * sizeof(float));
        for (uint64_t t = 0; t < s->tokens; t++)
            put(w, s->vcache + off + t * d, d * sizeof(float));
    }
}

linattn_status linattn_session_save(const linattn_session *s, const char *path, const void *extra,
                                    size_t extra_bytes)
{
    if (!s || !path || (!extra && extra_bytes))
        return linattn_err(LINATTN_ERR_INVALID, "session_save: NULL argument");
    writer w;
    w.crc = crc32(0L, Z_NULL, 0);
    linattn_status st = safe_file_begin(&w.file, path, "state file");
    if (st != LINATTN_OK)
        return st;
    unsigned char head[HEADER_BYTES] = {0};
    memcpy(head, SESSION_MAGIC, 8);
    put_u32(head + 8, SESSION_VERSION);
    put_u32(head + 12, (uint32_t)s->m->cfg.attention);
    put_u64(head + 16, s->m->shape_hash);
    put_u64(head + 24, s->tokens);
    put_u64(head + 32, payload_bytes(s, s->tokens));
    put_u64(head + 40, extra_bytes);
    put(&w, head, sizeof head);
    put_state(&w, s);
    put(&w, extra, extra_bytes);
    unsigned char tail[4];
    put_u32(tail, (uint32_t)w.crc);
    safe_file_write(&w.file, tail, 4);
    return safe_file_commit(&w.file, "the state file");
}

linattn_status linattn_session_load(linattn_session *s, const char *path, void *extra,
                                    size_t extra_cap, size_t *extra_bytes)
{
    if (!s || !path || (!extra && extra_cap))
        return linattn_err(LINATTN_ERR_INVALID, "session_load: NULL argument");
    int fd;
    size_t fsize;
    linattn_status opened = safe_open_read(path, "state file", SIZE_MAX, &fd, &fsize);
    if (opened != LINATTN_OK)
        return opened;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: %s", path, strerror(errno));
    }
    linattn_status st = LINATTN_OK;
    unsigned char head[HEADER_BYTES];
    unsigned char *body = NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || fread(head, 1, sizeof head, f) != sizeof head) {
        st = linattn_err(LINATTN_ERR_FORMAT, "%s: not a linattn session file (too short)", path);
        goto out;
    }
    if (memcmp(head, SESSION_MAGIC, 8) != 0) {
        st = linattn_err(LINATTN_ERR_FORMAT, "%s: not a linattn session file (bad magic)", path);
        goto out;
    }
    uint32_t version = get_u32(head + 8), variant = get_u32(head + 12);
    uint64_t hash = get_u64(head + 16), tokens = get_u64(head + 24);
    uint64_t payload = get_u64(head + 32), xbytes = get_u64(head + 40);
    const linattn_config *c = &s->m->cfg;
    if (version != SESSION_VERSION) {
        st = linattn_err(LINATTN_ERR_FORMAT, "%s: session format version %u, this build reads %u",
                         path, version, SESSION_VERSION);
        goto out;
    }
    if (variant != (uint32_t)c->attention || hash != s->m->shape_hash) {
        st = linattn_err(LINATTN_ERR_FORMAT,
                         "%s: saved by a model of another shape or attention variant", path);
        goto out;
    }
    int bounded = c->attention == LINATTN_ATTN_SOFTMAX || c->positions == LINATTN_POS_LEARNED;
    if (bounded && tokens > (uint64_t)c->max_seq_len) {
        st = linattn_err(LINATTN_ERR_FORMAT, "%s: %llu tokens exceed max_seq_len %d", path,
                         (unsigned long long)tokens, c->max_seq_len);
        goto out;
    }
    uint64_t want = payload_bytes(s, tokens);
    if (payload != want || xbytes > (uint64_t)1 << 32 ||
        (uint64_t)sb.st_size != HEADER_BYTES + payload + xbytes + 4) {
        st = linattn_err(LINATTN_ERR_FORMAT,
                         "%s: size does not match its header (truncated or corrupted file)", path);
        goto out;
    }
    size_t body_bytes = (size_t)(payload + xbytes + 4);
    body = mem_alloc(body_bytes);
    if (!body) {
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, body_bytes);
        goto out;
    }
    if (fread(body, 1, body_bytes, f) != body_bytes) {
        st = linattn_err(LINATTN_ERR_FORMAT, "%s: truncated file", path);
        goto out;
    }
    uLong crc = crc32(crc32(0L, Z_NULL, 0), head, sizeof head);
    for (size_t off = 0; off < body_bytes - 4; off += 1u << 30) {
        size_t n = body_bytes - 4 - off < (1u << 30) ? body_bytes - 4 - off : (1u << 30);
        crc = crc32(crc, body + off, (uInt)n);
    }
    if ((uint32_t)crc != get_u32(body + body_bytes - 4)) {
        st = linattn_err(LINATTN_ERR_FORMAT, "%s: checksum mismatch (corrupted file)", path);
        goto out;
    }
    /* Everything checked: only now touch the session. */
    const linattn_model *m = s->m;
    size_t dh = (size_t)m->dh, d = (size_t)m->d;
    const unsigned char *p = body;
    for (int l = 0; l < c->n_layers; l++) {
        if (s->lin) {
            for (int h = 0; h < m->h; h++) {
                size_t rows = (size_t)(tokens % LINATTN_LINEAR_BLOCK) * dh * sizeof(float);
                memcpy(linattn_linear_state_S(s->lin[l], h), p, dh * dh * sizeof(float));
                p += dh * dh * sizeof(float);
                memcpy(linattn_linear_state_z(s->lin[l], h), p, dh * sizeof(float));
                p += dh * sizeof(float);
                memcpy(linattn_linear_state_rows_k(s->lin[l], h), p, rows);
                p += rows;
                memcpy(linattn_linear_state_rows_v(s->lin[l], h), p, rows);
                p += rows;
            }
            linattn_linear_state_set_tokens(s->lin[l], tokens);
            continue;
        }
        size_t off = (size_t)l * (size_t)c->max_seq_len * d, rows = (size_t)tokens * d * sizeof(float);
        memcpy(s->kcache + off, p, rows);
        p += rows;
        memcpy(s->vcache + off, p, rows);
        p += rows;
    }
    s->tokens = tokens;
    if (extra)
        memcpy(extra, p, xbytes < extra_cap ? (size_t)xbytes : extra_cap);
    if (extra_bytes)
        *extra_bytes = (size_t)xbytes;
out:
    mem_free(body);
    fclose(f);
    return st;
}
