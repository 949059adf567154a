/* serve_write.c: `linattn serve`'s writer thread: parks' state files (fsync included) and store puts done in order off the scheduler thread, which every stream waits on. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"

struct srv_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_write *queue, *tail; /* waiting, first to run at the head */
    srv_write *done, *done_tail;
    int pending; /* queued and not yet collected */
    int stopping;
    char *dir;
    srv_store *store; /* the thread's own connection */
    void (*wake)(void *);
    void *arg;
    const char *gate_path; /* LINATTN_SERVE_WRITE_GATE */
    int gate;              /* its fd; -1 before it is opened or after its end */
};

static void list_add(srv_write **head, srv_write **tail, srv_write *t)
{
    t->next = NULL;
    if (*tail)
        (*tail)->next = t;
    else
        *head = t;
    *tail = t;
}

static void unlink_files(const srv_writer *w, const char *id)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.state", w->dir, id);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s.tokens", w->dir, id);
    unlink(path);
}

/* The state after its tokens: ID.state is what a restart looks for, so its
 * ID.tokens is in place by the time it appears. */
static void write_file(const srv_writer *w, srv_write *t)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.tokens", w->dir, t->id);
    linattn_status rc = LINATTN_OK;
    if (t->hist)
        rc = cli_write_file(path, "tokens", t->hist, t->hist_n);
    else
        unlink(path); /* an older park's history no longer stands for this state */
    if (rc == LINATTN_OK) {
        snprintf(path, sizeof path, "%s/%s.state", w->dir, t->id);
        rc = cli_write_file(path, "state", t->bytes, t->n);
    }
    t->ok = rc == LINATTN_OK;
    if (!t->ok)
        snprintf(t->error, sizeof t->error, "%s", linattn_last_error());
}

void srv_writer_run(srv_writer *w, srv_write *t)
{
    switch (t->kind) {
    case SRV_WRITE_FILE:
        write_file(w, t);
        break;
    case SRV_WRITE_UNLINK:
        unlink_files(w, t->id);
        t->ok = 1;
        break;
    case SRV_WRITE_STORE:
        /* the lease goes back only after the put: until then no other
         * server may take the stream and read an older state */
        t->version = srv_store_put(w->store, t->id, t->bytes, t->n);
        srv_store_release(w->store, t->id);
        t->ok = t->version >= 0;
        break;
    }
}

/* The tests' hold on state files: one byte read from the FIFO a file. */
static void gate_wait(srv_writer *w)
{
    if (!w->gate_path)
        return;
    if (w->gate < 0) {
        while ((w->gate = open(w->gate_path, O_RDONLY | O_CLOEXEC)) < 0 && errno == EINTR)
            ;
        if (w->gate < 0) {
            w->gate_path = NULL;
            return;
        }
    }
    char c;
    ssize_t got;
    while ((got = read(w->gate, &c, 1)) < 0 && errno == EINTR)
        ;
    if (got <= 0) { /* its end: open for good */
        close(w->gate);
        w->gate = -1;
        w->gate_path = NULL;
    }
}

static void *writer_loop(void *arg)
{
    srv_writer *w = arg;
    /* Ctrl-C and SIGTERM are the main thread's to see: one landing here
     * would only interrupt a write and fail a park */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->queue && !w->stopping)
            pthread_cond_wait(&w->cv, &w->mu);
        srv_write *t = w->queue;
        if (!t) {
            pthread_mutex_unlock(&w->mu);
            return NULL;
        }
        w->queue = t->next;
        if (!w->queue)
            w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        if (t->kind == SRV_WRITE_FILE)
            gate_wait(w);
        srv_writer_run(w, t);
        pthread_mutex_lock(&w->mu);
        list_add(&w->done, &w->done_tail, t);
        pthread_mutex_unlock(&w->mu);
        w->wake(w->arg);
    }
}

int srv_writer_start(const char *dir, const srv_store *store, void (*wake)(void *), void *arg,
                     srv_writer **out)
{
    *out = NULL;
    srv_writer *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    w->gate = -1;
    w->wake = wake;
    w->arg = arg;
    const char *gate = getenv("LINATTN_SERVE_WRITE_GATE");
    w->gate_path = gate && *gate ? gate : NULL;
    if ((dir && !(w->dir = strdup(dir))) || (store && !(w->store = srv_store_twin(store)))) {
        srv_store_close(w->store);
        free(w->dir);
        free(w);
        return -1;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, writer_loop, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        srv_store_close(w->store);
        free(w->dir);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

void srv_writer_push(srv_writer *w, srv_write *t)
{
    pthread_mutex_lock(&w->mu);
    list_add(&w->queue, &w->tail, t);
    w->pending++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

srv_write *srv_writer_collect(srv_writer *w)
{
    pthread_mutex_lock(&w->mu);
    srv_write *d = w->done;
    for (srv_write *t = d; t; t = t->next)
        w->pending--;
    w->done = w->done_tail = NULL;
    pthread_mutex_unlock(&w->mu);
    return d;
}

int srv_writer_pending(srv_writer *w)
{
    pthread_mutex_lock(&w->mu);
    int n = w->pending;
    pthread_mutex_unlock(&w->mu);
    return n;
}

void srv_writer_stop(srv_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    if (w->gate >= 0)
        close(w->gate);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    srv_store_close(w->store);
    free(w->dir);
    free(w);
}
