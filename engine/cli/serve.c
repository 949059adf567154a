/* serve.c: `linattn serve`'s streams and its scheduler: one thread owns every session, feeds new input a chunk at a time and advances every generating stream one token per step through one sessions_step (continuous batching), parking idle streams in memory or on disk. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"

#define SRV_MAX_RUNNING 256
#define SRV_CHUNK 128 /* input tokens a job feeds per step: running streams keep their pace */
/* State files queued for the writer at most (4.3 MB of kjv-linear): past
 * it the scheduler waits for the disk rather than hold ever more bytes. */
#define SRV_MAX_WRITING 16

typedef struct srv_stream {
    char id[SRV_ID_LEN];
    linattn_session *sess; /* NULL when parked */
    void *parked;          /* the state file's bytes, parked in memory */
    size_t parked_len;
    int on_disk;           /* parked as state_dir/ID.state */
    srv_write *writing;    /* on its way there: the task's bytes stand for it until written */
    int unparkable;        /* its park failed: it stays active until it is used again */
    uint64_t tokens;
    double last_use;
    srv_job *busy; /* the job running on it */
    /* the tokens it consumed, in order (prefix reuse); unknown for a state
     * put from elsewhere without them */
    int *hist;
    size_t n_hist, cap_hist;
    int hist_known;
    int cache; /* kept from a completion for prefix reuse (not a client's) */
    /* the store: the version this copy is (-1: not stored), and whether
     * this server holds the stream's lease (while a job runs on it) */
    long long store_ver;
    int leased;
    double lease_t;
    struct srv_stream *next;
} srv_stream;

/* The history rides in a state file's extra bytes (GET/PUT state) and in
 * ID.tokens beside a state parked on disk: a magic, a count, the ids. */
#define HIST_MAGIC 0x54534948u /* "HIST" */

struct srv {
    const linattn_model *m;
    srv_options o;
    pthread_t thread;
    pthread_mutex_t mu; /* queue, stopping, the counts */
    pthread_cond_t cv;
    srv_job *queue, *tail;
    int stopping, stopped; /* stopped: the thread has ended */
    srv_stats shared; /* published under mu after each step */
    srv_stats own;    /* the scheduler's, as it goes */
    /* the scheduler thread's own */
    srv_stream *streams;
    int n_streams;
    size_t parked_mem;
    srv_job *running[SRV_MAX_RUNNING];
    int n_running;
    uint64_t next_id;
    /* the writer (with --state-dir or --store): its tasks' bytes are
     * counted here, apart from --park-mem's */
    srv_writer *writer;
    int written;          /* under mu: the writer has done tasks to collect */
    size_t writing_mem;   /* bytes queued to be written (files and store puts) */
    int n_writing;        /* state files among them (at most SRV_MAX_WRITING) */
    int warned;           /* a failed park was logged */
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

srv_job *srv_job_new(srv_kind kind)
{
    srv_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->kind = kind;
    j->refs = 2;
    j->http = 200;
    j->prev = -1;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    return j;
}

void srv_job_release(srv_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left > 0)
        return;
    linattn_sampler_free(j->sampler);
    free(j->input);
    free(j->blob);
    free(j->text);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* A job no scheduler will run: 503, done, the scheduler's reference dropped. */
static void refuse_stopping(srv_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->http = 503;
    snprintf(j->error, sizeof j->error, "the server is stopping");
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    srv_job_release(j);
}

void srv_submit(srv *s, srv_job *j)
{
    pthread_mutex_lock(&s->mu);
    if (s->stopped) { /* no scheduler to run it */
        pthread_mutex_unlock(&s->mu);
        refuse_stopping(j);
        return;
    }
    j->next = NULL;
    if (s->tail)
        s->tail->next = j;
    else
        s->queue = j;
    s->tail = j;
    j->t_submit = now_s();
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void srv_wait(srv_job *j)
{
    pthread_mutex_lock(&j->mu);
    while (!j->done)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

void srv_get_stats(srv *s, srv_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->shared;
    pthread_mutex_unlock(&s->mu);
}

/* ---- streams ----------------------------------------------------------- */

static void publish_counts(srv *s)
{
    int active = 0, parked = 0, writing = 0;
    for (srv_stream *st = s->streams; st; st = st->next) {
        st->sess ? active++ : parked++;
        writing += st->writing != NULL;
    }
    s->own.active = active;
    s->own.parked = parked;
    s->own.running = s->n_running;
    s->own.parked_bytes = s->parked_mem;
    s->own.writing = writing;
    s->own.writing_bytes = s->writing_mem;
    pthread_mutex_lock(&s->mu);
    s->shared = s->own;
    pthread_mutex_unlock(&s->mu);
}

static srv_stream *find(srv *s, const char *id)
{
    for (srv_stream *st = s->streams; st; st = st->next)
        if (!strcmp(st->id, id))
            return st;
    return NULL;
}

static void disk_path(const srv *s, const srv_stream *st, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s.state", s->o.state_dir, st->id);
}

static void tokens_path(const srv *s, const char *id, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s.tokens", s->o.state_dir, id);
}

/* Appends n tokens to the history (on no memory it becomes unknown). A
 * history past --prefix-max-tokens is dropped and becomes unknown: a
 * stream fed for ever keeps constant memory, and a request resending
 * that much history is fed whole instead of reusing it. */
static void hist_add(const srv *s, srv_stream *st, const int *t, size_t n)
{
    if (!st->hist_known)
        return;
    if (st->n_hist + n > s->o.prefix_max_tokens) {
        free(st->hist);
        st->hist = NULL;
        st->n_hist = st->cap_hist = 0;
        st->hist_known = 0;
        return;
    }
    if (st->n_hist + n > st->cap_hist) {
        size_t cap = st->cap_hist ? st->cap_hist : 256;
        while (cap < st->n_hist + n)
            cap *= 2;
        int *g = realloc(st->hist, cap * sizeof *g);
        if (!g) {
            st->hist_known = 0;
            return;
        }
        st->hist = g;
        st->cap_hist = cap;
    }
    memcpy(st->hist + st->n_hist, t, n * sizeof *t);
    st->n_hist += n;
}

/* The history as extra bytes (owned; NULL with *n 0 when unknown). */
static void *hist_pack(const srv_stream *st, size_t *n)
{
    *n = 0;
    if (!st->hist_known)
        return NULL;
    uint32_t head[2] = {HIST_MAGIC, (uint32_t)st->n_hist};
    unsigned char *b = malloc(sizeof head + st->n_hist * sizeof(int));
    if (!b)
        return NULL;
    memcpy(b, head, sizeof head);
    memcpy(b + sizeof head, st->hist, st->n_hist * sizeof(int));
    *n = sizeof head + st->n_hist * sizeof(int);
    return b;
}

/* The stream's state file with its history in the extra bytes (owned;
 * NULL without memory): what GET state gives and the store keeps. */
static void *state_with_hist(const srv_stream *st, size_t *n)
{
    size_t hn;
    void *h = hist_pack(st, &hn);
    *n = linattn_session_save_size(st->sess, hn);
    void *b = (h || !st->hist_known) ? malloc(*n ? *n : 1) : NULL;
    if (b && linattn_session_save_mem(st->sess, h, hn, b, *n) != LINATTN_OK) {
        free(b);
        b = NULL;
    }
    free(h);
    return b;
}

/* The history from extra bytes, if they hold one for a stream of tokens
 * tokens (else it stays unknown). */
static void hist_unpack(const srv *s, srv_stream *st, const void *b, size_t n, uint64_t tokens)
{
    uint32_t head[2];
    st->n_hist = 0;
    st->hist_known = 0;
    if (n < sizeof head)
        return;
    memcpy(head, b, sizeof head);
    if (head[0] != HIST_MAGIC || head[1] != tokens || n != sizeof head + head[1] * sizeof(int))
        return;
    st->hist_known = 1;
    hist_add(s, st, (const int *)(const void *)((const char *)b + sizeof head), head[1]);
}

/* A new stream (id given, or made here), with an empty session. */
static void remove_stream(srv *s, srv_stream *st);

/* The least recently used idle cache stream, or NULL. */
static srv_stream *lru_cache(srv *s)
{
    srv_stream *lru = NULL;
    for (srv_stream *st = s->streams; st; st = st->next)
        if (st->cache && !st->busy && (!lru || st->last_use < lru->last_use))
            lru = st;
    return lru;
}

static srv_stream *add_stream(srv *s, const char *id, linattn_status *why)
{
    *why = LINATTN_OK;
    if (s->n_streams >= s->o.max_streams && lru_cache(s))
        remove_stream(s, lru_cache(s)); /* a cached prefix gives way to a stream */
    if (s->n_streams >= s->o.max_streams) {
        *why = LINATTN_ERR_NOMEM;
        return NULL;
    }
    srv_stream *st = calloc(1, sizeof *st);
    if (!st || linattn_session_new(s->m, &st->sess) != LINATTN_OK) {
        free(st);
        *why = LINATTN_ERR_NOMEM;
        return NULL;
    }
    linattn_session_set_threads(st->sess, s->o.threads);
    if (id && *id) {
        snprintf(st->id, sizeof st->id, "%s", id);
    } else {
        /* unguessable enough for a local server: the time, a counter and
         * the address; and never an id in use: a server restarted on its
         * --state-dir within a second, its heap laid out alike, minted its
         * predecessor's ids again, two streams under one id */
        do {
            uint64_t x = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^
                         ++s->next_id * 0xD1B54A32D192ED03ull ^ (uint64_t)(uintptr_t)st;
            x ^= x >> 31;
            x *= 0xBF58476D1CE4E5B9ull;
            x ^= x >> 29;
            snprintf(st->id, sizeof st->id, "%s-%016llx", id ? "cache" : "st",
                     (unsigned long long)x);
        } while (find(s, st->id));
    }
    st->last_use = now_s();
    st->hist_known = 1;
    st->store_ver = -1;
    st->next = s->streams;
    s->streams = st;
    s->n_streams++;
    return st;
}

/* Forgets where the stream is parked, its files included. A file still on
 * its way to disk is removed by the writer once it has landed (one order:
 * removing it here could come before its rename); job j, if given, is
 * answered then, and 1 says so. */
static int drop_parked(srv *s, srv_stream *st, srv_job *j)
{
    if (st->parked) {
        s->parked_mem -= st->parked_len;
        free(st->parked);
        st->parked = NULL;
        st->parked_len = 0;
    }
    if (st->writing) {
        srv_write *u = st->writing->undo;
        st->writing->undo = NULL;
        st->writing = NULL; /* its task frees the bytes when it is done */
        u->job = j;
        srv_writer_push(s->writer, u);
        return j != NULL;
    }
    if (st->on_disk) {
        char path[4200];
        disk_path(s, st, path, sizeof path);
        unlink(path);
        tokens_path(s, st->id, path, sizeof path);
        unlink(path);
        st->on_disk = 0;
    }
    return 0;
}

static void remove_stream(srv *s, srv_stream *st)
{
    for (srv_stream **p = &s->streams; *p; p = &(*p)->next)
        if (*p == st) {
            *p = st->next;
            break;
        }
    drop_parked(s, st, NULL);
    linattn_session_free(st->sess);
    free(st->hist);
    free(st);
    s->n_streams--;
}

/* The stream as a session again (parked in memory or on disk). */
static linattn_status restore(srv *s, srv_stream *st)
{
    if (st->sess)
        return LINATTN_OK;
    linattn_session *sess;
    linattn_status rc = linattn_session_new(s->m, &sess);
    if (rc != LINATTN_OK)
        return rc;
    linattn_session_set_threads(sess, s->o.threads);
    if (st->parked) {
        rc = linattn_session_load_mem(sess, st->parked, st->parked_len, NULL, 0, NULL);
    } else if (st->writing) { /* not on disk yet: the very bytes on their way there */
        rc = linattn_session_load_mem(sess, st->writing->bytes, st->writing->n, NULL, 0, NULL);
    } else {
        char path[4200];
        disk_path(s, st, path, sizeof path);
        rc = linattn_session_load(sess, path, NULL, 0, NULL);
    }
    if (rc != LINATTN_OK) {
        linattn_session_free(sess);
        return rc;
    }
    drop_parked(s, st, NULL);
    st->sess = sess;
    st->tokens = linattn_session_tokens(sess);
    s->own.restores++;
    return LINATTN_OK;
}

/* The writer's task for st's state bytes[n] (taken when it is made) and
 * its history; NULL without memory. */
static srv_write *file_task(const srv_stream *st, void *bytes, size_t n)
{
    size_t hn;
    void *h = hist_pack(st, &hn);
    srv_write *t = calloc(1, sizeof *t), *u = calloc(1, sizeof *u);
    if (!t || !u || (st->hist_known && !h)) {
        free(t);
        free(u);
        free(h);
        return NULL;
    }
    t->kind = SRV_WRITE_FILE;
    u->kind = SRV_WRITE_UNLINK;
    snprintf(t->id, sizeof t->id, "%s", st->id);
    snprintf(u->id, sizeof u->id, "%s", st->id);
    t->bytes = bytes;
    t->n = n;
    t->hist = h;
    t->hist_n = hn;
    t->undo = u;
    return t;
}

static void written(srv *s, srv_write *t);

/* An active stream into --state-dir (safe-file rules: a temporary, fsync,
 * rename) by the writer, or at once on this thread with now (at exit).
 * Until its file has landed its bytes stand for it (a resume reads them)
 * and count in writing_mem. 1 when it is parked (or, now, written). */
static int to_disk(srv *s, srv_stream *st, int now)
{
    size_t n = linattn_session_save_size(st->sess, 0);
    void *b = malloc(n ? n : 1);
    srv_write *t = NULL;
    if (!b || linattn_session_save_mem(st->sess, NULL, 0, b, n) != LINATTN_OK ||
        !(t = file_task(st, b, n))) {
        free(b);
        return 0;
    }
    linattn_session_free(st->sess);
    st->sess = NULL;
    st->writing = t;
    s->writing_mem += n;
    s->n_writing++;
    if (!now) {
        srv_writer_push(s->writer, t);
        return 1;
    }
    srv_writer_run(s->writer, t);
    written(s, t);
    return st->on_disk;
}

/* Parks an idle stream: in memory while --park-mem allows, else on disk
 * while the writer's queue has room; neither: it stays active. */
static int park(srv *s, srv_stream *st)
{
    size_t n = linattn_session_save_size(st->sess, 0);
    if (s->parked_mem + n <= s->o.park_mem) {
        void *buf = malloc(n);
        if (buf && linattn_session_save_mem(st->sess, NULL, 0, buf, n) == LINATTN_OK) {
            st->parked = buf;
            st->parked_len = n;
            s->parked_mem += n;
            linattn_session_free(st->sess);
            st->sess = NULL;
            s->own.parks++;
            return 1;
        }
        free(buf);
    }
    return s->o.state_dir && s->n_writing < SRV_MAX_WRITING && to_disk(s, st, 0);
}

/* A state file that could not be written: said once, and the stream goes
 * back to being active (as its bytes, past --park-mem, if even that
 * fails), not retried until it is used again. */
static void park_failed(srv *s, srv_stream *st, srv_write *t)
{
    if (!s->warned++)
        cli_warn("serve", "stream '%s' cannot be parked in %s: %s; it stays in memory (said once)",
                 st->id, s->o.state_dir, t->error);
    st->unparkable = 1;
    linattn_session *sess = NULL;
    if (linattn_session_new(s->m, &sess) == LINATTN_OK &&
        linattn_session_load_mem(sess, t->bytes, t->n, NULL, 0, NULL) == LINATTN_OK) {
        linattn_session_set_threads(sess, s->o.threads);
        st->sess = sess;
        return;
    }
    linattn_session_free(sess);
    st->parked = t->bytes;
    st->parked_len = t->n;
    s->parked_mem += t->n;
    t->bytes = NULL;
}

static void wait_writer(srv *s);

/* Idle streams beyond --max-active are parked, least recently used first.
 * With the writer's queue full this waits for it (back-pressure: new work
 * waits for the disk, rather than active streams and bytes in flight
 * growing without bound). */
static void park_extra(srv *s)
{
    for (;;) {
        int active = 0;
        srv_stream *lru = NULL;
        for (srv_stream *st = s->streams; st; st = st->next)
            if (st->sess) {
                active++;
                if (!st->busy && !st->unparkable && (!lru || st->last_use < lru->last_use))
                    lru = st;
            }
        if (active <= s->o.max_active || !lru)
            return;
        if (park(s, lru))
            continue;
        if (!s->o.state_dir || s->n_writing < SRV_MAX_WRITING)
            return; /* it cannot be parked: it stays active */
        wait_writer(s);
    }
}

/* ---- the shared store -------------------------------------------------- */

/* Stream id's lease, and the store's copy here unless this server's copy
 * is that version already. 0, or an HTTP status with msg. */
static int store_take(srv *s, const char *id, srv_stream **out, char *msg, size_t mn)
{
    srv_store *sto = s->o.store;
    int got = srv_store_lease(sto, id);
    if (got != 1) {
        snprintf(msg, mn, got == 0 ? "stream '%s' is active on another server: try again"
                                   : "stream '%s': the store does not answer", id);
        return got == 0 ? 409 : 503;
    }
    srv_stream *st = find(s, id);
    long long v = srv_store_version(sto, id);
    int code = 0;
    if (v == -2) {
        snprintf(msg, mn, "stream '%s': the store does not answer", id);
        code = 503;
    } else if (v == -1 && !st) {
        snprintf(msg, mn, "no stream '%s'", id);
        code = 404;
    } else if (v >= 0 && (!st || st->store_ver != v)) {
        void *b = NULL;
        size_t n = 0;
        long long ver = -1;
        int g = srv_store_get(sto, id, &b, &n, &ver);
        linattn_session *sess = NULL;
        size_t en = 0;
        void *extra = g == 1 ? malloc(n ? n : 1) : NULL;
        linattn_status rc = LINATTN_ERR_NOMEM;
        if (extra && linattn_session_new(s->m, &sess) == LINATTN_OK)
            rc = linattn_session_load_mem(sess, b, n, extra, n, &en);
        free(b);
        linattn_status why = LINATTN_OK;
        if (g != 1) {
            snprintf(msg, mn, g == 0 ? "no stream '%s'" : "stream '%s': the store does not answer",
                     id);
            code = g == 0 ? 404 : 503;
        } else if (rc != LINATTN_OK) { /* a corrupt or foreign state is never taken */
            snprintf(msg, mn, "stream '%s': the stored state is refused: %s", id,
                     linattn_last_error());
            code = 500;
        } else if (!st && !(st = add_stream(s, id, &why))) {
            snprintf(msg, mn, "the server holds its most streams (%d)", s->o.max_streams);
            code = 503;
        }
        if (code == 0) {
            linattn_session_set_threads(sess, s->o.threads);
            drop_parked(s, st, NULL);
            linattn_session_free(st->sess);
            st->sess = sess;
            sess = NULL;
            st->tokens = linattn_session_tokens(st->sess);
            hist_unpack(s, st, extra, en, st->tokens);
            st->store_ver = ver;
            s->own.restores++;
        }
        linattn_session_free(sess);
        free(extra);
    }
    if (code) {
        srv_store_release(sto, id);
        return code;
    }
    st->leased = 1;
    st->lease_t = now_s();
    *out = st;
    return 0;
}

/* The stream's state into the store when the job changed it (before its
 * client hears of the result), then the lease back. -1: the lease was
 * lost, and the result is not kept. */
static int store_give_back(srv *s, srv_stream *st, int changed)
{
    if (!st->leased)
        return 0;
    int rc = 0;
    if (changed && restore(s, st) == LINATTN_OK) {
        size_t n;
        void *b = state_with_hist(st, &n);
        long long v = b ? srv_store_put(s->o.store, st->id, b, n) : -2;
        free(b);
        if (v >= 0) {
            st->store_ver = v;
        } else {
            st->store_ver = -3; /* this copy is not the store's: read it again next time */
            rc = -1;
        }
    } else if (changed) {
        st->store_ver = -3;
        rc = -1;
    }
    srv_store_release(s->o.store, st->id);
    st->leased = 0;
    return rc;
}

/* ---- jobs ---------------------------------------------------------------- */

/* Tells j's client the result (msg: NULL, or the error; lost: the store
 * did not keep it) and lets go of the job. */
static void answer(srv *s, srv_job *j, int http, const char *msg, int lost)
{
    srv_stream *st = j->st;
    if (st) {
        st->busy = NULL;
        st->unparkable = 0; /* it changed: its park may go through now */
        st->last_use = now_s();
        if (st->sess)
            st->tokens = linattn_session_tokens(st->sess);
    }
    pthread_mutex_lock(&j->mu);
    j->http = http;
    if (msg)
        snprintf(j->error, sizeof j->error, "%s", msg);
    if (lost) {
        j->http = 409;
        snprintf(j->error, sizeof j->error, "stream '%s': its lease was lost (another server "
                 "took it over): this result is not kept", st->id);
    }
    j->ready = j->text_len;
    if (st) {
        j->tokens = st->tokens;
        if (!j->out_id[0])
            snprintf(j->out_id, sizeof j->out_id, "%s", st->id);
    }
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (st && j->ephemeral) {
        if (http == 200 && s->o.prefix_cache > 0 && st->sess) {
            st->cache = 1; /* its tokens may begin a later request */
            int n = 0;
            for (srv_stream *x = s->streams; x; x = x->next)
                n += x->cache;
            for (; n > s->o.prefix_cache && lru_cache(s); n--)
                remove_stream(s, lru_cache(s));
        } else {
            remove_stream(s, st);
        }
    }
    j->st = NULL;
    srv_job_release(j);
}

/* The stream's new state to the store by the writer, which gives the
 * lease back after it; j is answered once it is stored (written()): the
 * state of every acknowledged result is in the store, and no other stream
 * waits for the put. 0: not queued (do it here). */
static int store_later(srv *s, srv_stream *st, srv_job *j)
{
    if (!s->writer || restore(s, st) != LINATTN_OK)
        return 0;
    srv_write *t = calloc(1, sizeof *t);
    if (!t || !(t->bytes = state_with_hist(st, &t->n))) {
        free(t);
        return 0;
    }
    t->kind = SRV_WRITE_STORE;
    snprintf(t->id, sizeof t->id, "%s", st->id);
    t->job = j;
    st->busy = j; /* nothing else touches it, or its lease, until the put is done */
    s->writing_mem += t->n;
    srv_writer_push(s->writer, t);
    return 1;
}

/* Ends job j with its status (0, to return from begin). */
static int finish(srv *s, srv_job *j, int http, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int finish(srv *s, srv_job *j, int http, const char *fmt, ...)
{
    char msg[sizeof j->error];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    }
    for (int i = 0; i < s->n_running; i++)
        if (s->running[i] == j) {
            s->running[i] = s->running[--s->n_running];
            break;
        }
    srv_stream *st = j->st;
    int lost = 0;
    if (st && st->leased) {
        const int changed = j->kind == SRV_RUN || j->kind == SRV_PUT_STATE;
        if (http == 200 && changed && store_later(s, st, j))
            return 0;
        if (http != 200 && changed)
            st->store_ver = -3; /* it may have changed part way: not the store's copy */
        lost = store_give_back(s, st, http == 200 && changed) != 0;
    }
    answer(s, j, http, fmt ? msg : NULL, lost);
    return 0;
}

/* A task the writer has done, on this side: the stream's new place, the
 * bytes let go, the job that waited answered. */
static void written(srv *s, srv_write *t)
{
    if (t->kind == SRV_WRITE_FILE) {
        s->writing_mem -= t->n;
        s->n_writing--;
        srv_stream *st = find(s, t->id);
        if (st && st->writing == t) { /* else resumed, dropped or parked anew since */
            st->writing = NULL;
            if (t->ok) {
                st->on_disk = 1;
                s->own.parks++;
            } else {
                park_failed(s, st, t);
            }
        }
        free(t->undo);
    } else if (t->kind == SRV_WRITE_STORE) {
        s->writing_mem -= t->n;
        srv_stream *st = t->job->st;
        st->store_ver = t->ok ? t->version : -3; /* else read it again next time */
        st->leased = 0;
        answer(s, t->job, 200, NULL, !t->ok);
    } else if (t->job) { /* a DELETE */
        finish(s, t->job, 200, NULL);
    }
    free(t->bytes);
    free(t->hist);
    free(t);
}

static void collect(srv *s)
{
    for (srv_write *t = srv_writer_collect(s->writer), *nx; t; t = nx) {
        nx = t->next;
        written(s, t);
    }
}

/* The writer's wake-up: tasks to collect. */
static void writer_done(void *arg)
{
    srv *s = arg;
    pthread_mutex_lock(&s->mu);
    s->written = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Until the writer has done at least one more task (which is collected). */
static void wait_writer(srv *s)
{
    pthread_mutex_lock(&s->mu);
    while (!s->written)
        pthread_cond_wait(&s->cv, &s->mu);
    s->written = 0;
    pthread_mutex_unlock(&s->mu);
    collect(s);
}

/* Until the writer has done all it was given, answering what waited. */
static void drain(srv *s)
{
    while (s->writer && srv_writer_pending(s->writer) > 0)
        wait_writer(s);
}

static int status_http(linattn_status st)
{
    return st == LINATTN_ERR_NOMEM ? 503 : st == LINATTN_ERR_INVALID ||
                                                   st == LINATTN_ERR_CONTEXT_FULL ||
                                                   st == LINATTN_ERR_FORMAT
                                               ? 400
                                               : 500;
}

/* The largest m <= n whose text[0..m) does not end inside a UTF-8
 * character (text holds len >= n bytes). */
static size_t utf8_whole(const char *text, size_t n)
{
    size_t lead = n;
    for (int k = 0; k < 4 && lead > 0; k++) {
        unsigned char c = (unsigned char)text[lead - 1];
        if ((c & 0xC0) != 0x80) {
            size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            return n - (lead - 1) >= need ? n : lead - 1;
        }
        lead--;
    }
    return n;
}

/* Appends a token's bytes; returns 1 when a stop string now ends the text
 * (which is cut before it). */
static int append(srv_job *j, const char *piece, size_t n)
{
    pthread_mutex_lock(&j->mu);
    if (j->text_len + n + 1 > j->text_cap) {
        size_t cap = j->text_cap ? j->text_cap * 2 : 1024;
        while (cap < j->text_len + n + 1)
            cap *= 2;
        char *t = realloc(j->text, cap);
        if (!t) {
            pthread_mutex_unlock(&j->mu);
            return 1; /* out of memory: the text ends here */
        }
        j->text = t;
        j->text_cap = cap;
    }
    size_t old = j->text_len;
    memcpy(j->text + old, piece, n);
    j->text_len += n;
    j->text[j->text_len] = '\0';
    int stop = 0;
    size_t hold = 0;
    for (int k = 0; k < j->p.n_stops && !stop; k++) {
        size_t sl = strlen(j->p.stops[k]);
        size_t from = old + 1 > sl ? old + 1 - sl : 0;
        for (size_t at = from; at + sl <= j->text_len; at++)
            if (!memcmp(j->text + at, j->p.stops[k], sl)) {
                j->text_len = at;
                j->text[at] = '\0';
                stop = 1;
                break;
            }
        hold = sl - 1 > hold ? sl - 1 : hold;
    }
    if (!stop) { /* a stop's first bytes may still come: hold them back */
        size_t r = j->text_len > hold ? j->text_len - hold : 0;
        r = utf8_whole(j->text, r);
        if (r > j->ready)
            j->ready = r;
        pthread_cond_broadcast(&j->cv);
    }
    pthread_mutex_unlock(&j->mu);
    return stop;
}

static linattn_status make_sampler(srv *s, srv_job *j)
{
    const srv_params *p = &j->p;
    const linattn_config *c = linattn_model_config(s->m);
    linattn_status st = linattn_sampler_new(c->vocab_size, p->temperature, p->top_k, p->top_p,
                                            p->seed, &j->sampler);
    if (st == LINATTN_OK)
        st = linattn_sampler_set_repetition_penalty(j->sampler, p->repeat_penalty,
                                                    p->repeat_last_n);
    if (st == LINATTN_OK)
        st = linattn_sampler_set_min_p(j->sampler, p->min_p);
    for (int i = 0; st == LINATTN_OK && i < p->n_bias; i++)
        st = linattn_sampler_set_logit_bias(j->sampler, p->bias_token[i], p->bias[i]);
    return st;
}

/* Tokens a plain softmax stream must share with a request before it is
 * forked and cut for it: below this, a fresh prefill costs about as much. */
#define SRV_MIN_CUT 16

/* The idle stream that gives t[n] the most tokens, or NULL; *reuse says
 * how many. A stream whose whole history begins t is reused as it stands
 * (every attention kind); a plain softmax stream (whose KV cache keeps
 * every key) that shares at least SRV_MIN_CUT first tokens with t is also
 * a candidate, to be cut back to them (*reuse < its length), leaving at
 * least one token of t to feed for the logits. */
static srv_stream *best_prefix(srv *s, const int *t, int n, size_t *reuse)
{
    const linattn_config *c = linattn_model_config(s->m);
    int cuttable = c->attention == LINATTN_ATTN_SOFTMAX && c->window == 0;
    srv_stream *best = NULL;
    *reuse = 0;
    for (srv_stream *st = s->streams; st; st = st->next) {
        if (st->busy || !st->hist_known || st->n_hist == 0 || st->tokens != st->n_hist)
            continue;
        size_t p = 0, lim = st->n_hist < (size_t)n ? st->n_hist : (size_t)n;
        while (p < lim && st->hist[p] == t[p])
            p++;
        if (p < st->n_hist) { /* only part of it: a cut */
            if (!cuttable || p < SRV_MIN_CUT)
                continue;
            if (p == (size_t)n)
                p--; /* a token of t to feed */
        }
        if (p > *reuse) {
            best = st;
            *reuse = p;
        }
    }
    return best;
}

/* A job off the queue: the quick kinds run at once, a run joins the
 * running set. */
static int begin(srv *s, srv_job *j)
{
    s->own.queue_sum += now_s() - j->t_submit;
    s->own.queue_count++;
    srv_stream *st = NULL;
    linattn_status rc = LINATTN_OK;
    if (j->create) {
        size_t reuse = 0;
        srv_stream *src = j->reuse ? best_prefix(s, j->input, j->n_input, &reuse) : NULL;
        if (src && restore(s, src) != LINATTN_OK)
            src = NULL;
        if (!(st = add_stream(s, j->ephemeral ? "" : NULL, &rc)))
            return finish(s, j, 503, "the server holds its most streams (%d)", s->o.max_streams);
        linattn_session *f = NULL;
        if (src && linattn_session_fork(src->sess, &f) == LINATTN_OK && reuse < src->n_hist &&
            linattn_session_truncate(f, reuse) != LINATTN_OK) {
            linattn_session_free(f); /* cannot happen: best_prefix cuts softmax alone */
            f = NULL;
        }
        if (f) {
            /* the input's first tokens are src's: start from them */
            linattn_session_free(st->sess);
            st->sess = f;
            linattn_session_set_threads(f, s->o.threads);
            hist_add(s, st, src->hist, reuse);
            st->tokens = reuse;
            j->fed = j->reused_tokens = (int)reuse;
            src->last_use = now_s();
        }
        if (s->o.store && !j->ephemeral) { /* a client's new stream goes to the store */
            if (srv_store_lease(s->o.store, st->id) != 1) {
                remove_stream(s, st);
                return finish(s, j, 503, "the store does not answer");
            }
            st->leased = 1;
            st->lease_t = now_s();
        }
    } else if ((st = find(s, j->id)) && st->busy) {
        return finish(s, j, 409, "stream '%s' is busy with another request", j->id);
    } else if (s->o.store && j->kind != SRV_PUT_STATE) {
        char msg[512];
        int code = store_take(s, j->id, &st, msg, sizeof msg);
        if (code)
            return finish(s, j, code, "%s", msg);
        j->st = st; /* finish gives the lease back */
        if (j->kind == SRV_DELETE) {
            int d = srv_store_delete(s->o.store, st->id);
            st->leased = 0;
            if (d < 0)
                return finish(s, j, 503, "stream '%s': the store did not delete it", st->id);
        }
    } else if (!st) {
        if (j->kind != SRV_PUT_STATE)
            return finish(s, j, 404, "no stream '%s'", j->id);
    }
    if (s->o.store && j->kind == SRV_PUT_STATE) {
        int got = srv_store_lease(s->o.store, j->id);
        if (got != 1)
            return finish(s, j, got == 0 ? 409 : 503, "stream '%s': %s", j->id,
                          got == 0 ? "active on another server" : "the store does not answer");
    }
    if (j->kind == SRV_PUT_STATE) { /* checked whole before anything changes */
        linattn_session *sess;
        if ((rc = linattn_session_new(s->m, &sess)) != LINATTN_OK)
            return finish(s, j, 503, "out of memory");
        size_t extra_n = 0, cap = j->blob_len;
        void *extra = malloc(cap ? cap : 1);
        rc = extra ? linattn_session_load_mem(sess, j->blob, j->blob_len, extra, cap, &extra_n)
                   : LINATTN_ERR_NOMEM;
        if (rc != LINATTN_OK) {
            free(extra);
            linattn_session_free(sess);
            if (s->o.store)
                srv_store_release(s->o.store, j->id);
            return finish(s, j, 400, "state: %s", linattn_last_error());
        }
        linattn_session_set_threads(sess, s->o.threads);
        if (!st && !(st = add_stream(s, j->id, &rc))) {
            linattn_session_free(sess);
            return finish(s, j, 503, "the server holds its most streams (%d)", s->o.max_streams);
        }
        drop_parked(s, st, NULL);
        linattn_session_free(st->sess);
        st->sess = sess;
        st->tokens = linattn_session_tokens(sess);
        hist_unpack(s, st, extra, extra_n, st->tokens);
        free(extra);
        st->leased = s->o.store != NULL; /* finish stores it */
        j->st = st;
        return finish(s, j, 200, NULL);
    }
    j->st = st;
    if (j->kind == SRV_DELETE) {
        j->st = NULL;
        /* a file on its way to disk is removed after it lands: the
         * answer waits for that, so a deleted stream leaves no file */
        int later = drop_parked(s, st, j);
        remove_stream(s, st);
        snprintf(j->out_id, sizeof j->out_id, "%s", j->id);
        return later ? 0 : finish(s, j, 200, NULL);
    }
    if (j->kind == SRV_INFO) {
        j->where = st->sess ? "active" : st->parked ? "memory" : st->writing ? "writing" : "disk";
        j->state_bytes = st->sess      ? linattn_session_state_bytes(st->sess)
                         : st->writing ? st->writing->n
                                       : st->parked_len;
        j->last_use = st->last_use;
        j->tokens = st->tokens;
        snprintf(j->out_id, sizeof j->out_id, "%s", st->id);
        store_give_back(s, st, 0);
        pthread_mutex_lock(&j->mu);
        j->done = 1; /* finish() would touch last_use */
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        j->st = NULL;
        srv_job_release(j);
        return 0;
    }
    if ((rc = restore(s, st)) != LINATTN_OK)
        return finish(s, j, 500, "stream '%s' cannot be restored: %s", st->id, linattn_last_error());
    if (j->kind == SRV_GET_STATE) { /* with its history, for prefix reuse where it goes */
        if (!(j->blob = state_with_hist(st, &j->blob_len)))
            return finish(s, j, 500, "state: cannot be written");
        return finish(s, j, 200, NULL);
    }
    if (j->kind == SRV_FORK) {
        srv_stream *f = add_stream(s, NULL, &rc);
        if (!f)
            return finish(s, j, 503, "the server holds its most streams (%d)", s->o.max_streams);
        linattn_session_free(f->sess);
        f->sess = NULL;
        if (linattn_session_fork(st->sess, &f->sess) != LINATTN_OK) {
            remove_stream(s, f);
            return finish(s, j, 503, "fork: %s", linattn_last_error());
        }
        linattn_session_set_threads(f->sess, s->o.threads);
        f->tokens = linattn_session_tokens(f->sess);
        f->hist_known = st->hist_known;
        hist_add(s, f, st->hist, st->n_hist);
        if (s->o.store) {
            if (srv_store_lease(s->o.store, f->id) != 1) {
                remove_stream(s, f);
                return finish(s, j, 503, "the store does not answer");
            }
            f->leased = 1;
            if (store_give_back(s, f, 1) != 0) {
                remove_stream(s, f);
                return finish(s, j, 503, "fork: the store did not keep it");
            }
        }
        snprintf(j->out_id, sizeof j->out_id, "%s", f->id);
        return finish(s, j, 200, NULL);
    }
    /* SRV_RUN */
    const uint64_t held = linattn_session_tokens(st->sess), cap = s->o.max_stream_tokens;
    if (cap && held + (uint64_t)j->n_input + (j->generate ? 1 : 0) > cap)
        return finish(s, j, 400, "the stream holds %llu tokens; %d more%s would pass the server's "
                                 "--max-stream-tokens %llu",
                      (unsigned long long)held, j->n_input, j->generate ? " and an answer" : "",
                      (unsigned long long)cap);
    if ((uint64_t)j->n_input > linattn_session_tokens_left(st->sess))
        return finish(s, j, 400, "context full: the stream holds %llu tokens and %d more would "
                                 "pass max_seq_len %d",
                      (unsigned long long)linattn_session_tokens(st->sess), j->n_input,
                      linattn_model_config(s->m)->max_seq_len);
    if (j->generate && j->n_input == 0 && !linattn_session_logits(st->sess))
        return finish(s, j, 400, "stream '%s' is empty: give a prompt", st->id);
    if (j->generate && (rc = make_sampler(s, j)) != LINATTN_OK)
        return finish(s, j, 400, "%s", linattn_last_error());
    if (s->n_running == SRV_MAX_RUNNING)
        return finish(s, j, 503, "the server runs its most requests (%d)", SRV_MAX_RUNNING);
    st->busy = j;
    j->prompt_tokens = j->n_input;
    j->prev = -1;
    s->running[s->n_running++] = j;
    return 0;
}

/* One step: a chunk of input for each job still feeding, then one token
 * for every generating stream through one sessions_step. */
static void step(srv *s)
{
    const linattn_config *c = linattn_model_config(s->m);
    const linattn_tokenizer *tokz = linattn_model_tokenizer(s->m);
    const int eos = linattn_tokenizer_eos(tokz);
    linattn_session *batch[SRV_MAX_RUNNING];
    srv_stream *stepped[SRV_MAX_RUNNING];
    int toks[SRV_MAX_RUNNING], nb = 0;
    srv_job *after[SRV_MAX_RUNNING]; /* finished once their token is fed */
    int na = 0;
    for (int i = 0; i < s->n_running; i++) {
        srv_job *j = s->running[i];
        linattn_session *sess = j->st->sess;
        pthread_mutex_lock(&j->mu);
        int cancelled = j->cancelled;
        pthread_mutex_unlock(&j->mu);
        if (cancelled) {
            finish(s, j, 499, "the client went away");
            i--;
            continue;
        }
        if (j->st->leased && now_s() - j->st->lease_t > s->o.lease_ms / 3000.0) {
            if (srv_store_renew(s->o.store, j->st->id) != 1) {
                j->st->leased = 0;
                j->st->store_ver = -3;
                finish(s, j, 409, "stream '%s': its lease was lost: this result is not kept",
                       j->st->id);
                i--;
                continue;
            }
            j->st->lease_t = now_s();
        }
        if (j->phase == 0) {
            int n = j->n_input - j->fed < SRV_CHUNK ? j->n_input - j->fed : SRV_CHUNK;
            linattn_status rc = n > 0 ? linattn_session_feed(sess, j->input + j->fed, n, NULL)
                                      : LINATTN_OK;
            if (rc != LINATTN_OK) {
                finish(s, j, status_http(rc), "%s", linattn_last_error());
                i--;
                continue;
            }
            if (n > 0)
                hist_add(s, j->st, j->input + j->fed, (size_t)n);
            j->fed += n;
            s->own.prompt_tokens += (unsigned long long)n;
            if (j->fed < j->n_input)
                continue;
            if (!j->generate) {
                finish(s, j, 200, NULL);
                i--;
                continue;
            }
            /* the input enters the repetition window, as generate's prompt does */
            int from = j->n_input > j->p.repeat_last_n ? j->n_input - j->p.repeat_last_n : 0;
            for (int k = from; k < j->n_input; k++)
                linattn_sampler_accept(j->sampler, j->input[k]);
            j->prev = j->n_input > 0 ? j->input[j->n_input - 1] : -1;
            j->phase = 1;
        }
        /* generating: sample from the stream's logits */
        if (j->made >= j->p.max_tokens) {
            j->finish = "length";
            finish(s, j, 200, NULL);
            i--;
            continue;
        }
        int tok;
        if (linattn_sample(j->sampler, linattn_session_logits(sess), &tok) != LINATTN_OK ||
            linattn_sampler_accept(j->sampler, tok) != LINATTN_OK) {
            finish(s, j, 500, "sampling: %s", linattn_last_error());
            i--;
            continue;
        }
        j->made++;
        j->completion_tokens = j->made;
        s->own.generated_tokens++;
        const double t = now_s();
        if (j->made == 1) {
            s->own.ttft_sum += t - j->t_submit;
            s->own.ttft_count++;
        } else {
            s->own.itl_sum += t - j->t_last;
            s->own.itl_count++;
        }
        j->t_last = t;
        int stop = tok == eos;
        if (!stop) {
            const char *piece = "";
            size_t pl = 0;
            if (linattn_tokenizer_decode(tokz, j->prev, tok, &piece, &pl) != LINATTN_OK)
                pl = 0; /* a token past the tokenizer: no text */
            stop = append(j, piece, pl);
        }
        j->prev = tok;
        int last = stop || j->made >= j->p.max_tokens;
        if (last)
            j->finish = stop ? "stop" : "length";
        if (linattn_session_tokens_left(sess) < 1 || /* the token cannot be kept */
            (s->o.max_stream_tokens && linattn_session_tokens(sess) >= s->o.max_stream_tokens)) {
            if (!last)
                j->finish = "length";
            finish(s, j, 200, NULL);
            i--;
            continue;
        }
        if (last && j->ephemeral) {
            finish(s, j, 200, NULL);
            i--;
            continue;
        }
        /* the token joins the stream (a kept stream holds all its text) */
        stepped[nb] = j->st;
        batch[nb] = sess;
        toks[nb++] = tok;
        if (last)
            after[na++] = j;
    }
    if (nb > 0) {
        s->own.steps++;
        s->own.batch = nb;
        linattn_status rc = linattn_sessions_step(batch, toks, nb, NULL);
        if (rc != LINATTN_OK) { /* every stream was checked: this is the machine's */
            for (int i = s->n_running - 1; i >= 0; i--)
                if (s->running[i]->phase == 1)
                    finish(s, s->running[i], 500, "step: %s", linattn_last_error());
        } else {
            for (int i = 0; i < nb; i++)
                hist_add(s, stepped[i], &toks[i], 1);
        }
    }
    for (int i = 0; i < na; i++) {
        int still = 0;
        for (int k = 0; k < s->n_running; k++)
            still |= s->running[k] == after[i];
        if (still)
            finish(s, after[i], 200, NULL);
    }
    (void)c;
    park_extra(s);
    publish_counts(s);
}

static void *loop(void *arg)
{
    srv *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->queue && s->n_running == 0 && !s->stopping && !s->written)
            pthread_cond_wait(&s->cv, &s->mu);
        srv_job *q = s->queue;
        s->queue = s->tail = NULL;
        int stopping = s->stopping, written = s->written;
        s->written = 0;
        pthread_mutex_unlock(&s->mu);
        /* before the new jobs: a client answered by the writer's last
         * task may have sent its next request on the same stream */
        if (written)
            collect(s);
        for (srv_job *j = q, *nx; j; j = nx) {
            nx = j->next;
            j->next = NULL;
            if (stopping)
                finish(s, j, 503, "the server is stopping");
            else
                (void)begin(s, j);
        }
        if (stopping) {
            while (s->n_running > 0)
                finish(s, s->running[0], 503, "the server is stopping");
            drain(s); /* nothing acknowledged, or parked, is lost at exit */
            return NULL;
        }
        step(s);
    }
}

/* The streams a previous run left in --state-dir: ID.state (and its
 * ID.tokens, the history), registered as parked on disk. */
static void adopt_state_dir(srv *s)
{
    DIR *d = opendir(s->o.state_dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l <= 6 || l - 6 >= SRV_ID_LEN || strcmp(e->d_name + l - 6, ".state") != 0 ||
            e->d_name[0] == '.' || s->n_streams >= s->o.max_streams)
            continue;
        srv_stream *st = calloc(1, sizeof *st);
        if (!st)
            break;
        memcpy(st->id, e->d_name, l - 6);
        st->on_disk = 1;
        st->cache = !strncmp(st->id, "cache-", 6);
        st->last_use = now_s();
        char path[4200];
        tokens_path(s, st->id, path, sizeof path);
        FILE *f = fopen(path, "rb");
        if (f) {
            uint32_t head[2];
            if (fread(head, sizeof head, 1, f) == 1 && head[0] == HIST_MAGIC &&
                head[1] < (1u << 28) && head[1] <= s->o.prefix_max_tokens) {
                st->hist = malloc((size_t)head[1] * sizeof(int) + 1);
                if (st->hist && fread(st->hist, sizeof(int), head[1], f) == head[1]) {
                    st->n_hist = st->cap_hist = head[1];
                    st->hist_known = 1;
                    st->tokens = head[1];
                }
            }
            fclose(f);
        }
        st->next = s->streams;
        s->streams = st;
        s->n_streams++;
    }
    closedir(d);
}

/* Every stream into --state-dir, so a restart with it finds them all
 * (after drain(): the writer idle, so written here at once). */
static void persist_all(srv *s)
{
    for (srv_stream *st = s->streams; st; st = st->next)
        if (!st->on_disk && restore(s, st) == LINATTN_OK)
            to_disk(s, st, 1);
}

linattn_status srv_start(const linattn_model *m, const srv_options *o, srv **out)
{
    srv *s = calloc(1, sizeof *s);
    if (!s)
        return LINATTN_ERR_NOMEM;
    s->m = m;
    s->o = *o;
    if (s->o.state_dir)
        adopt_state_dir(s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if ((s->o.state_dir || s->o.store) &&
        srv_writer_start(s->o.state_dir, s->o.store, writer_done, s, &s->writer) != 0) {
        srv_free(s);
        return LINATTN_ERR_NOMEM;
    }
    if (pthread_create(&s->thread, NULL, loop, s) != 0) {
        srv_writer_stop(s->writer);
        s->writer = NULL;
        srv_free(s);
        return LINATTN_ERR_NOMEM;
    }
    *out = s;
    return LINATTN_OK;
}

void srv_stop(srv *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_lock(&s->mu);
    s->stopped = 1;
    for (srv_job *j = s->queue, *nx; j; j = nx) { /* came after the thread's last look */
        nx = j->next;
        refuse_stopping(j);
    }
    s->queue = s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    if (s->o.state_dir)
        persist_all(s);
    srv_writer_stop(s->writer);
    s->writer = NULL;
}

void srv_free(srv *s)
{
    if (!s)
        return;
    /* what is on disk stays there for the next run */
    while (s->streams) {
        srv_stream *st = s->streams;
        s->streams = st->next;
        free(st->parked);
        free(st->hist);
        linattn_session_free(st->sess);
        free(st);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}
