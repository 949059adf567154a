/* serve_store.c: `linattn serve --store redis://HOST:PORT`: streams' states in Redis (hiredis), shared by several servers, each stream active on one at a time under a lease; writes are fenced by the lease. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

struct srv_store {
    redisContext *c;
    char host[256];
    int port;
    char owner[64]; /* this server: what its leases hold */
    int ttl_ms;
};

/* Keys of stream id: its state file, its version, its lease. The braces
 * keep a stream's keys in one slot of a Redis cluster. */
static void key(char *buf, size_t n, const char *id, const char *what)
{
    snprintf(buf, n, "linattn:{%s}:%s", id, what);
}

static int reconnect(srv_store *s)
{
    if (s->c && !s->c->err)
        return 0;
    if (s->c)
        redisFree(s->c);
    struct timeval tv = {2, 0};
    s->c = redisConnectWithTimeout(s->host, s->port, tv);
    if (!s->c || s->c->err)
        return -1;
    redisSetTimeout(s->c, tv);
    return 0;
}

/* A command's reply, reconnecting once if the connection broke. */
static redisReply *command(srv_store *s, int argc, const char **argv, const size_t *lens)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (reconnect(s) != 0)
            continue;
        redisReply *r = redisCommandArgv(s->c, argc, argv, lens);
        if (r)
            return r;
    }
    return NULL;
}

int srv_store_open(const char *url, int ttl_ms, srv_store **out, char *msg, size_t n)
{
    *out = NULL;
    if (strncmp(url, "redis://", 8) != 0) {
        snprintf(msg, n, "'%s': expected redis://HOST:PORT", url);
        return -1;
    }
    srv_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, n, "out of memory");
        return -1;
    }
    const char *hp = url + 8, *colon = strrchr(hp, ':');
    size_t hl = colon ? (size_t)(colon - hp) : strlen(hp);
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 6379;
    if (hl == 0 || hl >= sizeof s->host || (colon && (*end || port < 1 || port > 65535))) {
        free(s);
        snprintf(msg, n, "'%s': expected redis://HOST:PORT", url);
        return -1;
    }
    memcpy(s->host, hp, hl);
    s->port = (int)port;
    s->ttl_ms = ttl_ms;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(s->owner, sizeof s->owner, "%ld-%lx-%lx", (long)getpid(), (long)ts.tv_sec,
             (long)ts.tv_nsec);
    if (reconnect(s) != 0) {
        snprintf(msg, n, "cannot connect to %s:%d: %s", s->host, s->port,
                 s->c ? s->c->errstr : "out of memory");
        srv_store_close(s);
        return -1;
    }
    const char *ping[] = {"PING"};
    redisReply *r = command(s, 1, ping, NULL);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r)
        freeReplyObject(r);
    if (!ok) {
        snprintf(msg, n, "%s:%d does not answer PING as Redis does", s->host, s->port);
        srv_store_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

srv_store *srv_store_twin(const srv_store *s)
{
    srv_store *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    memcpy(t->host, s->host, sizeof t->host);
    memcpy(t->owner, s->owner, sizeof t->owner);
    t->port = s->port;
    t->ttl_ms = s->ttl_ms;
    return t; /* it connects at its first command */
}

void srv_store_close(srv_store *s)
{
    if (!s)
        return;
    if (s->c)
        redisFree(s->c);
    free(s);
}

int srv_store_lease(srv_store *s, const char *id)
{
    char k[128], ttl[32];
    key(k, sizeof k, id, "lease");
    snprintf(ttl, sizeof ttl, "%d", s->ttl_ms);
    const char *argv[] = {"SET", k, s->owner, "NX", "PX", ttl};
    redisReply *r = command(s, 6, argv, NULL);
    if (!r)
        return -1;
    int got = r->type == REDIS_REPLY_STATUS ? 1 : r->type == REDIS_REPLY_NIL ? 0 : -1;
    freeReplyObject(r);
    if (got != 0)
        return got;
    /* ours already (a lease not yet given back): renew it */
    return srv_store_renew(s, id);
}

/* Owner-checked scripts: only the lease's holder renews, gives back or writes. */
static const char renew_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
    "else return 0 end";
static const char release_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
static const char put_lua[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end "
    "redis.call('set', KEYS[2], ARGV[2]) return redis.call('incr', KEYS[3])";
static const char delete_lua[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end "
    "return redis.call('del', KEYS[1], KEYS[2], KEYS[3])";

int srv_store_renew(srv_store *s, const char *id)
{
    char k[128], ttl[32];
    key(k, sizeof k, id, "lease");
    snprintf(ttl, sizeof ttl, "%d", s->ttl_ms);
    const char *argv[] = {"EVAL", renew_lua, "1", k, s->owner, ttl};
    redisReply *r = command(s, 6, argv, NULL);
    if (!r)
        return -1;
    int ok = r->type == REDIS_REPLY_INTEGER ? r->integer == 1 : -1;
    freeReplyObject(r);
    return ok;
}

void srv_store_release(srv_store *s, const char *id)
{
    char k[128];
    key(k, sizeof k, id, "lease");
    const char *argv[] = {"EVAL", release_lua, "1", k, s->owner};
    redisReply *r = command(s, 5, argv, NULL);
    if (r)
        freeReplyObject(r);
}

long long srv_store_version(srv_store *s, const char *id)
{
    char k[128];
    key(k, sizeof k, id, "ver");
    const char *argv[] = {"GET", k};
    redisReply *r = command(s, 2, argv, NULL);
    if (!r)
        return -2;
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : r->type == REDIS_REPLY_NIL ? -1 : -2;
    freeReplyObject(r);
    return v;
}

int srv_store_get(srv_store *s, const char *id, void **bytes, size_t *n, long long *version)
{
    char ks[128], kv[128];
    key(ks, sizeof ks, id, "state");
    key(kv, sizeof kv, id, "ver");
    const char *argv[] = {"MGET", ks, kv};
    redisReply *r = command(s, 3, argv, NULL);
    if (!r)
        return -1;
    int rc = -1;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        redisReply *st = r->element[0], *ver = r->element[1];
        if (st->type == REDIS_REPLY_NIL) {
            rc = 0;
        } else if (st->type == REDIS_REPLY_STRING && ver->type == REDIS_REPLY_STRING) {
            *bytes = malloc(st->len ? st->len : 1);
            if (*bytes) {
                memcpy(*bytes, st->str, st->len);
                *n = st->len;
                *version = atoll(ver->str);
                rc = 1;
            }
        }
    }
    freeReplyObject(r);
    return rc;
}

long long srv_store_put(srv_store *s, const char *id, const void *bytes, size_t n)
{
    char kl[128], ks[128], kv[128];
    key(kl, sizeof kl, id, "lease");
    key(ks, sizeof ks, id, "state");
    key(kv, sizeof kv, id, "ver");
    const char *argv[] = {"EVAL", put_lua, "3", kl, ks, kv, s->owner, (const char *)bytes};
    size_t lens[] = {4, strlen(put_lua), 1, strlen(kl), strlen(ks), strlen(kv), strlen(s->owner), n};
    redisReply *r = command(s, 8, argv, lens);
    if (!r)
        return -2;
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
    freeReplyObject(r);
    return v; /* -1: the lease is not ours */
}

int srv_store_delete(srv_store *s, const char *id)
{
    char kl[128], ks[128], kv[128];
    key(kl, sizeof kl, id, "lease");
    key(ks, sizeof ks, id, "state");
    key(kv, sizeof kv, id, "ver");
    const char *argv[] = {"EVAL", delete_lua, "3", kl, ks, kv, s->owner};
    redisReply *r = command(s, 7, argv, NULL);
    if (!r)
        return -2;
    int v = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -2;
    freeReplyObject(r);
    return v;
}
