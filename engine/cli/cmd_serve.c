/* cmd_serve.c: `linattn serve`: an HTTP server (libmicrohttpd) with OpenAI-style completions and our own streams API over serve.c's scheduler. */
#include <arpa/inet.h>
#include <cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../json.h"
#include "chat_template.h"
#include "cli.h"
#include "serve.h"

static const char usage[] =
    "usage: linattn serve CONFIG [--host ADDR] [--port N] [--threads N] [--max-active N]\n"
    "                     [--max-streams N] [--park-mem BYTES] [--state-dir DIR]\n"
    "                     [--api-key KEY] [--max-body BYTES] [--timeout S]\n"
    "                     [--prefix-cache N] [--prefix-max-tokens N]\n"
    "                     [--store redis://HOST:PORT] [--lease-ms MS]\n"
    "                     [--max-tokens N] [--max-stream-tokens N]\n"
    "\n"
    "Serves the model CONFIG describes over HTTP until Ctrl-C or SIGTERM. One\n"
    "thread advances every generating stream one token per step through one\n"
    "batched forward pass, and feeds new prompts a chunk at a time between steps.\n"
    "\n"
    "  POST /v1/completions       OpenAI's: prompt, max_tokens, temperature, top_p,\n"
    "                             top_k, min_p, seed, stop, logit_bias,\n"
    "                             repetition_penalty, stream (server-sent events);\n"
    "                             stream_id continues one of ours\n"
    "  POST /v1/chat/completions  the same with messages (roles system, user,\n"
    "                             assistant) in the model's chat format; the answer\n"
    "                             ends where the format ends a turn\n"
    "  GET  /v1/models, GET /health, GET /metrics (Prometheus)\n"
    "  POST /v1/streams                 a new stream (optional prompt) -> its id\n"
    "  POST /v1/streams/ID/append       feed text\n"
    "  POST /v1/streams/ID/generate     sample (the completion parameters)\n"
    "  POST /v1/streams/ID/fork         a new stream continuing from it\n"
    "  GET  /v1/streams/ID              tokens, state bytes, where it is parked\n"
    "  DELETE /v1/streams/ID\n"
    "  GET, PUT /v1/streams/ID/state    the state file's bytes (CRC-checked on PUT)\n"
    "\n"
    "  --host ADDR       IPv4 address to listen on (default 127.0.0.1)\n"
    "  --port N          TCP port (default 8080; 0: any free one, printed)\n"
    "  -t, --threads N   threads of the model (0 = auto)\n"
    "  --max-active N    streams kept ready; idle ones beyond are parked (default 64)\n"
    "  --max-streams N   streams in all, active and parked (default 10000)\n"
    "  --park-mem BYTES  parked streams kept in memory (default 1 GiB), then on disk\n"
    "  --state-dir DIR   where streams are parked past --park-mem, and every stream\n"
    "                    at exit; a server started on it takes them back\n"
    "  --api-key KEY     require 'Authorization: Bearer KEY'\n"
    "  --max-body BYTES  largest request body (default 1 MiB; state PUT: 64 MiB)\n"
    "  --timeout S       seconds a connection may stay idle (default 60)\n"
    "  --store URL       keep streams in Redis (redis://HOST:PORT), shared by every\n"
    "                    server on it: a stream is active on one at a time (a lease,\n"
    "                    renewed while it runs) and stored before each reply\n"
    "  --lease-ms MS     how long a server that dies holds its streams (default 10000)\n"
    "  --chat-template NAME  auto (default: tokenizer_config.json's chat_template,\n"
    "                    recognised; plain without one), plain (each message's text\n"
    "                    and a newline), chatml, llama2, llama3, zephyr, mistral,\n"
    "                    phi3 or gemma\n"
    "  --max-tokens N    the most tokens one request may ask to generate (a larger\n"
    "                    max_tokens is refused, 400; default 0: no limit)\n"
    "  --max-stream-tokens N  the most tokens a stream may hold, prompts and answers\n"
    "                    (default 0: no limit but the model's context)\n"
    "  --prefix-cache N  completions' streams kept so that a later request whose\n"
    "                    tokens begin with one's resumes it, or a softmax one cut\n"
    "                    to the 16 or more first tokens they share (default 64; 0: off)\n"
    "  --prefix-max-tokens N  the most token ids a stream keeps for prefix reuse\n"
    "                    (4 bytes each; default 1048576); a longer stream is found by\n"
    "                    its id only, and a request resending it is fed whole\n"
    "  -h, --help        this text\n"
    "\n"
    "Example: linattn serve configs/kjv-linear.ini --port 8080 &\n"
    "  curl -s localhost:8080/v1/completions -d '{\"prompt\": \"In the beginning\",\n"
    "    \"max_tokens\": 40}'\n";

#define MAX_COUNTS 64

typedef struct server {
    pthread_mutex_t mu; /* the request counts */
    struct {
        const char *route;
        unsigned code;
        unsigned long long n;
    } counts[MAX_COUNTS];
    int n_counts;
    srv *sched;
    srv_request rq; /* what request bodies are read against */
    const char *model_name;
    const char *api_key;
    size_t max_body;
    unsigned long long requests;
} server;

/* One request: its body, then (streaming) the job it reads from. */
typedef struct req {
    char *body;
    size_t len, cap;
    int too_big;
    server *sv;
    srv_job *job;
    int chat;            /* the event shape of a stream */
    int sse_state;       /* 0 first, 1 text, 2 [DONE] written */
    size_t sent;         /* bytes of job->text sent */
    char *out;           /* formatted events waiting */
    size_t out_len, out_at;
    char cmpl_id[64];
    long long created;
    const char *route; /* for the request counts */
} req;

/* ---- responses ------------------------------------------------------------- */

static enum MHD_Result send_bytes(struct MHD_Connection *c, unsigned code, const char *type,
                                  const void *data, size_t n)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(n, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, cJSON *j)
{
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text)
        return send_bytes(c, 500, "application/json", "{\"error\":{\"message\":\"out of memory\"}}",
                          38);
    enum MHD_Result ok = send_bytes(c, code, "application/json", text, strlen(text));
    free(text);
    return ok;
}

static const char *error_type(unsigned code)
{
    return code == 401 ? "authentication_error" : code == 404 ? "not_found_error"
           : code == 409 ? "conflict_error" : code >= 500 ? "server_error"
                         : "invalid_request_error";
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(j, "error");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "type", error_type(code));
    cJSON_AddNumberToObject(e, "code", code);
    return send_json(c, code, j);
}

/* ---- results ------------------------------------------------------------------- */

static cJSON *usage_of(const srv_job *j)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", j->prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", j->completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", j->prompt_tokens + j->completion_tokens);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", j->reused_tokens); /* taken from a kept stream */
    return u;
}

/* Length of the valid UTF-8 character at s[0..n), or 0 (a byte that
 * starts none: a stray continuation, an overlong form, a surrogate, past
 * U+10FFFF, cut short, or NUL, which a C string cannot hold). */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    const unsigned c = s[0];
    if (c == 0)
        return 0;
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || /* overlong, surrogate */
        (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))   /* overlong, > U+10FFFF */
        return 0;
    return len;
}

/* text[0..n) as valid UTF-8, NUL-terminated (malloc'd; NULL when out of
 * memory): JSON is Unicode text, and a byte-level model's tokens are any
 * bytes, so each byte that starts no valid character becomes U+FFFD, as a
 * UTF-8 decoder shows it (a client that needs the bytes asks for token
 * ids or the stream's state). */
static char *json_text(const char *text, size_t n)
{
    char *out = malloc(3 * n + 1);
    if (!out)
        return NULL;
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_char(s + i, n - i);
        if (len) {
            memcpy(out + o, s + i, len);
            o += len;
            i += len;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

static cJSON *completion_json(const req *r, const srv_job *j, int keep_stream)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->cmpl_id);
    cJSON_AddStringToObject(o, "object", r->chat ? "chat.completion" : "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", r->sv->model_name);
    cJSON *ch = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    char *text = json_text(j->text, j->text ? j->text_len : 0);
    if (r->chat) {
        cJSON *m = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        cJSON_AddStringToObject(m, "content", text ? text : "");
    } else {
        cJSON_AddStringToObject(c, "text", text ? text : "");
        cJSON_AddNullToObject(c, "logprobs");
    }
    free(text);
    cJSON_AddStringToObject(c, "finish_reason", j->finish ? j->finish : "length");
    cJSON_AddItemToArray(ch, c);
    cJSON_AddItemToObject(o, "usage", usage_of(j));
    if (keep_stream)
        cJSON_AddStringToObject(o, "stream_id", j->out_id);
    return o;
}

/* One server-sent event of text (NULL: the first, chat: the role) or the end. */
static int sse_event(req *r, const char *text, size_t n, const char *finish)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->cmpl_id);
    cJSON_AddStringToObject(o, "object", r->chat ? "chat.completion.chunk" : "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", r->sv->model_name);
    cJSON *ch = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    char *piece = json_text(text, text ? n : 0);
    if (r->chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (!text && !finish)
            cJSON_AddStringToObject(d, "role", "assistant");
        else if (n)
            cJSON_AddStringToObject(d, "content", piece ? piece : "");
    } else {
        cJSON_AddStringToObject(c, "text", piece ? piece : "");
        cJSON_AddNullToObject(c, "logprobs");
    }
    free(piece);
    if (finish)
        cJSON_AddStringToObject(c, "finish_reason", finish);
    else
        cJSON_AddNullToObject(c, "finish_reason");
    cJSON_AddItemToArray(ch, c);
    if (finish)
        cJSON_AddItemToObject(o, "usage", usage_of(r->job));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s)
        return 1;
    size_t sl = strlen(s), need = r->out_len + sl + 16; /* "data: ", "\n\n", NUL */
    char *g = realloc(r->out, need);
    if (!g) {
        free(s);
        return 1;
    }
    r->out = g;
    r->out_len += (size_t)sprintf(r->out + r->out_len, "data: %s\n\n", s);
    free(s);
    return 0;
}

/* The stream of events: blocks until the scheduler has new text. */
static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    req *r = cls;
    srv_job *j = r->job;
    while (r->out_at == r->out_len) {
        r->out_len = r->out_at = 0;
        if (r->sse_state == 2)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (r->sse_state == 0) {
            r->sse_state = 1;
            if (r->chat && sse_event(r, NULL, 0, NULL))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        pthread_mutex_lock(&j->mu);
        while (!j->done && j->ready == r->sent)
            pthread_cond_wait(&j->cv, &j->mu);
        size_t ready = j->ready, from = r->sent;
        int done = j->done;
        pthread_mutex_unlock(&j->mu);
        /* the text below ready is final: read without the lock */
        int bad = 0;
        if (ready > from)
            bad |= sse_event(r, j->text + from, ready - from, NULL);
        r->sent = ready;
        if (done) {
            if (j->http != 200) {
                cJSON *e = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(e, "error");
                cJSON_AddStringToObject(in, "message", j->error);
                cJSON_AddNumberToObject(in, "code", j->http);
                char *s = cJSON_PrintUnformatted(e);
                cJSON_Delete(e);
                size_t sl = s ? strlen(s) : 0;
                char *g = realloc(r->out, r->out_len + sl + 16);
                if (g && s) {
                    r->out = g;
                    r->out_len += (size_t)sprintf(r->out + r->out_len, "data: %s\n\n", s);
                }
                free(s);
            } else {
                bad |= sse_event(r, "", 0, j->finish ? j->finish : "length");
            }
            char *g = realloc(r->out, r->out_len + 16);
            if (g) {
                r->out = g;
                memcpy(r->out + r->out_len, "data: [DONE]\n\n", 14);
                r->out_len += 14;
            }
            r->sse_state = 2;
        }
        if (bad)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = r->out_len - r->out_at < max ? r->out_len - r->out_at : max;
    memcpy(buf, r->out + r->out_at, n);
    r->out_at += n;
    return (ssize_t)n;
}

/* ---- routes ---------------------------------------------------------------------- */

/* A completion (or a stream's generate): a job, answered as JSON or events. */
static enum MHD_Result run_completion(struct MHD_Connection *c, req *r, srv_job *j,
                                      int stream_events, int keep_stream)
{
    server *sv = r->sv;
    snprintf(r->cmpl_id, sizeof r->cmpl_id, "%s-%llu", r->chat ? "chatcmpl" : "cmpl",
             __atomic_add_fetch(&sv->requests, 1, __ATOMIC_RELAXED));
    r->created = (long long)time(NULL);
    srv_submit(sv->sched, j);
    if (stream_events) {
        r->job = j; /* released with the request */
        struct MHD_Response *resp =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_reader, r, NULL);
        if (!resp)
            return MHD_NO;
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        enum MHD_Result ok = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        return ok;
    }
    srv_wait(j);
    enum MHD_Result ok = j->http == 200 ? send_json(c, 200, completion_json(r, j, keep_stream))
                                        : send_error(c, (unsigned)j->http, "%s", j->error);
    srv_job_release(j);
    return ok;
}

static enum MHD_Result route_completion(struct MHD_Connection *c, req *r, const cJSON *o,
                                        int chat, const char *stream_id)
{
    server *sv = r->sv;
    char msg[512] = "";
    r->chat = chat;
    srv_job *j = srv_job_new(SRV_RUN);
    if (!j)
        return send_error(c, 503, "out of memory");
    if (!stream_id) {
        const cJSON *sid = cJSON_GetObjectItemCaseSensitive(o, "stream_id");
        if (sid && !cJSON_IsNull(sid)) {
            if (!cJSON_IsString(sid) || strlen(sid->valuestring) >= SRV_ID_LEN) {
                srv_job_release(j), srv_job_release(j);
                return send_error(c, 400, "'stream_id' must be a stream's id");
            }
            stream_id = sid->valuestring;
        }
    }
    const int fresh = stream_id == NULL;
    int bad = srv_read_params(&sv->rq, o, chat, &j->p, msg, sizeof msg);
    if (!bad) {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, chat ? "messages" : "prompt");
        if (chat)
            bad = srv_read_messages(&sv->rq, in, fresh, &j->input, &j->n_input, msg, sizeof msg);
        else if (in)
            bad = srv_read_prompt(&sv->rq, in, fresh, &j->input, &j->n_input, msg, sizeof msg);
        else if (fresh) {
            snprintf(msg, sizeof msg, "'prompt' is required");
            bad = 1;
        }
    }
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "stream");
    if (!bad && ev && !cJSON_IsBool(ev) && !cJSON_IsNull(ev)) {
        snprintf(msg, sizeof msg, "'stream' must be true or false (a stream's id goes in "
                                  "'stream_id')");
        bad = 1;
    }
    if (bad) {
        srv_job_release(j), srv_job_release(j);
        return send_error(c, 400, "%s", msg);
    }
    j->generate = 1;
    if (fresh) {
        j->create = 1;
        j->ephemeral = 1;
        j->reuse = 1;
    } else {
        snprintf(j->id, sizeof j->id, "%s", stream_id);
    }
    return run_completion(c, r, j, ev && cJSON_IsTrue(ev), !fresh);
}

/* Quick stream jobs: run, wait, answer. */
static enum MHD_Result stream_job(struct MHD_Connection *c, req *r, srv_kind kind, const char *id,
                                  const cJSON *o)
{
    server *sv = r->sv;
    srv_job *j = srv_job_new(kind);
    if (!j)
        return send_error(c, 503, "out of memory");
    char msg[512] = "";
    if (id)
        snprintf(j->id, sizeof j->id, "%s", id);
    else
        j->create = 1;
    if (kind == SRV_RUN) { /* new or append: text (or prompt) to feed */
        const cJSON *t = o ? cJSON_GetObjectItemCaseSensitive(o, id ? "text" : "prompt") : NULL;
        if (t && !cJSON_IsNull(t) &&
            srv_read_prompt(&sv->rq, t, !id, &j->input, &j->n_input, msg, sizeof msg)) {
            srv_job_release(j), srv_job_release(j);
            return send_error(c, 400, "%s", msg);
        }
        if (id && (!t || cJSON_IsNull(t))) {
            srv_job_release(j), srv_job_release(j);
            return send_error(c, 400, "'text' is required");
        }
    }
    if (kind == SRV_PUT_STATE) {
        j->blob = malloc(r->len ? r->len : 1);
        if (!j->blob) {
            srv_job_release(j), srv_job_release(j);
            return send_error(c, 503, "out of memory");
        }
        memcpy(j->blob, r->body, r->len);
        j->blob_len = r->len;
    }
    srv_submit(sv->sched, j);
    srv_wait(j);
    enum MHD_Result ok;
    if (j->http != 200) {
        ok = send_error(c, (unsigned)j->http, "%s", j->error);
    } else if (kind == SRV_GET_STATE) {
        ok = send_bytes(c, 200, "application/octet-stream", j->blob, j->blob_len);
    } else {
        cJSON *out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "id", j->out_id);
        cJSON_AddStringToObject(out, "object", "stream");
        if (kind == SRV_DELETE) {
            cJSON_AddBoolToObject(out, "deleted", 1);
        } else {
            cJSON_AddNumberToObject(out, "tokens", (double)j->tokens);
            if (kind == SRV_RUN)
                cJSON_AddNumberToObject(out, "fed", j->n_input);
        }
        if (kind == SRV_INFO) {
            cJSON_AddNumberToObject(out, "state_bytes", (double)j->state_bytes);
            cJSON_AddStringToObject(out, "parked", j->where);
            cJSON_AddNumberToObject(out, "last_use", j->last_use);
        }
        ok = send_json(c, kind == SRV_RUN && !id ? 201 : 200, out);
    }
    srv_job_release(j);
    return ok;
}

/* Prometheus' text format: requests by route and status, tokens, streams,
 * the batch, queue wait, time to the first token, time between tokens. */
static enum MHD_Result send_metrics(struct MHD_Connection *c, server *sv)
{
    srv_stats st;
    srv_get_stats(sv->sched, &st);
    size_t cap = 8192, n = 0;
    char *b = malloc(cap);
    if (!b)
        return send_error(c, 503, "out of memory");
#define OUT(...)                                                                                   \
    do {                                                                                           \
        if (n < cap)                                                                               \
            n += (size_t)snprintf(b + n, cap - n, __VA_ARGS__);                                    \
    } while (0)
    OUT("# HELP linattn_requests_total HTTP requests answered, by route and status.\n"
        "# TYPE linattn_requests_total counter\n");
    pthread_mutex_lock(&sv->mu);
    for (int k = 0; k < sv->n_counts; k++)
        OUT("linattn_requests_total{route=\"%s\",code=\"%u\"} %llu\n", sv->counts[k].route,
            sv->counts[k].code, sv->counts[k].n);
    pthread_mutex_unlock(&sv->mu);
    OUT("# TYPE linattn_prompt_tokens_total counter\nlinattn_prompt_tokens_total %llu\n"
        "# TYPE linattn_generated_tokens_total counter\nlinattn_generated_tokens_total %llu\n"
        "# TYPE linattn_steps_total counter\nlinattn_steps_total %llu\n"
        "# TYPE linattn_restores_total counter\nlinattn_restores_total %llu\n"
        "# TYPE linattn_parks_total counter\nlinattn_parks_total %llu\n",
        st.prompt_tokens, st.generated_tokens, st.steps, st.restores, st.parks);
    OUT("# TYPE linattn_streams_active gauge\nlinattn_streams_active %d\n"
        "# TYPE linattn_streams_parked gauge\nlinattn_streams_parked %d\n"
        "# TYPE linattn_requests_running gauge\nlinattn_requests_running %d\n"
        "# TYPE linattn_batch_size gauge\nlinattn_batch_size %d\n"
        "# TYPE linattn_parked_bytes gauge\nlinattn_parked_bytes %zu\n"
        "# TYPE linattn_streams_writing gauge\nlinattn_streams_writing %d\n"
        "# TYPE linattn_writing_bytes gauge\nlinattn_writing_bytes %zu\n",
        st.active, st.parked, st.running, st.batch, st.parked_bytes, st.writing,
        st.writing_bytes);
    OUT("# TYPE linattn_queue_wait_seconds summary\nlinattn_queue_wait_seconds_sum %.6f\n"
        "linattn_queue_wait_seconds_count %llu\n"
        "# TYPE linattn_time_to_first_token_seconds summary\n"
        "linattn_time_to_first_token_seconds_sum %.6f\n"
        "linattn_time_to_first_token_seconds_count %llu\n"
        "# TYPE linattn_inter_token_seconds summary\nlinattn_inter_token_seconds_sum %.6f\n"
        "linattn_inter_token_seconds_count %llu\n",
        st.queue_sum, st.queue_count, st.ttft_sum, st.ttft_count, st.itl_sum, st.itl_count);
#undef OUT
    enum MHD_Result ok = send_bytes(c, 200, "text/plain; version=0.0.4", b, n < cap ? n : cap - 1);
    free(b);
    return ok;
}

static int authorised(struct MHD_Connection *c, const server *sv)
{
    if (!sv->api_key)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7) != 0)
        return 0;
    h += 7;
    /* constant time in the key's length: every byte compared */
    size_t kl = strlen(sv->api_key), hl = strlen(h);
    unsigned char diff = (unsigned char)(kl != hl);
    for (size_t i = 0; i < kl; i++)
        diff |= (unsigned char)(sv->api_key[i] ^ (i < hl ? h[i] : 0));
    return diff == 0;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    server *sv = cls;
    req *r = *con_cls;
    const int put_state = !strcmp(method, "PUT");
    if (!r) { /* the first call: headers only */
        if (!(r = calloc(1, sizeof *r)))
            return MHD_NO;
        r->sv = sv;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_size) { /* the body, in pieces */
        size_t limit = put_state ? (size_t)64 << 20 : sv->max_body;
        if (r->too_big || r->len + *upload_size > limit) {
            r->too_big = 1;
        } else {
            if (r->len + *upload_size + 1 > r->cap) {
                size_t cap = r->cap ? r->cap : 4096;
                while (cap < r->len + *upload_size + 1)
                    cap *= 2;
                char *g = realloc(r->body, cap);
                if (!g)
                    return MHD_NO;
                r->body = g;
                r->cap = cap;
            }
            memcpy(r->body + r->len, upload, *upload_size);
            r->len += *upload_size;
            r->body[r->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    r->route = !strcmp(url, "/v1/completions")                 ? "completions"
               : !strcmp(url, "/v1/chat/completions")          ? "chat_completions"
               : !strncmp(url, "/v1/streams", 11)              ? "streams"
               : !strcmp(url, "/v1/models")                    ? "models"
               : !strcmp(url, "/health")                       ? "health"
               : !strcmp(url, "/metrics")                      ? "metrics"
                                                               : "other";
    if (r->too_big)
        return send_error(c, 413, "the body is larger than %zu bytes (--max-body)",
                          put_state ? (size_t)64 << 20 : sv->max_body);
    if (!strcmp(url, "/health") && !strcmp(method, "GET")) {
        srv_stats st;
        srv_get_stats(sv->sched, &st);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", "ok");
        cJSON_AddNumberToObject(o, "streams_active", st.active);
        cJSON_AddNumberToObject(o, "streams_parked", st.parked);
        cJSON_AddNumberToObject(o, "requests_running", st.running);
        return send_json(c, 200, o);
    }
    if (!strcmp(url, "/metrics") && !strcmp(method, "GET"))
        return send_metrics(c, sv);
    if (!authorised(c, sv))
        return send_error(c, 401, "missing or wrong API key (Authorization: Bearer KEY)");
    if (!strcmp(url, "/v1/models")) {
        if (strcmp(method, "GET"))
            return send_error(c, 405, "%s %s: use GET", method, url);
        cJSON *o = cJSON_CreateObject(), *d = cJSON_AddArrayToObject(o, "data");
        cJSON_AddStringToObject(o, "object", "list");
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "id", sv->model_name);
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddStringToObject(m, "owned_by", "linattn");
        cJSON_AddItemToArray(d, m);
        return send_json(c, 200, o);
    }
    /* stream routes: /v1/streams[/ID[/ACTION]] */
    char id[SRV_ID_LEN] = "", action[16] = "";
    int is_streams = 0;
    if (!strncmp(url, "/v1/streams", 11) && (url[11] == '\0' || url[11] == '/')) {
        is_streams = 1;
        const char *p = url + 11;
        if (*p == '/') {
            p++;
            size_t il = strcspn(p, "/");
            if (il == 0 || il >= sizeof id)
                return send_error(c, 404, "no stream '%.*s'", (int)(il < 64 ? il : 64), p);
            memcpy(id, p, il);
            id[il] = '\0';
            p += il;
            if (*p == '/') {
                p++;
                if (strlen(p) >= sizeof action || strchr(p, '/'))
                    return send_error(c, 404, "no such route: %s", url);
                snprintf(action, sizeof action, "%s", p);
            }
        }
    }
    const int post = !strcmp(method, "POST");
    int needs_json = post && !(is_streams && !strcmp(action, "fork"));
    cJSON *o = NULL;
    if (needs_json) {
        /* the library's strict reader: no trailing bytes, no key twice */
        char why[700] = "";
        linattn_status jst = r->len ? json_parse_strict(r->body, r->len, &o, why, sizeof why)
                                    : LINATTN_OK;
        if (!o && is_streams && !id[0] && r->len == 0)
            o = cJSON_CreateObject(); /* a new empty stream */
        if (jst == LINATTN_ERR_NOMEM)
            return send_error(c, 503, "reading the body: %s", why);
        if (!o)
            return send_error(c, 400, r->len ? "the body: %s" : "the body is empty: %sJSON expected",
                              why);
        if (!cJSON_IsObject(o)) {
            cJSON_Delete(o);
            return send_error(c, 400, "the body must be a JSON object");
        }
    }
    enum MHD_Result ok;
    if (!strcmp(url, "/v1/completions") || !strcmp(url, "/v1/chat/completions")) {
        ok = post ? route_completion(c, r, o, !strcmp(url, "/v1/chat/completions"), NULL)
                  : send_error(c, 405, "%s %s: use POST", method, url);
    } else if (is_streams && !id[0]) {
        ok = post ? stream_job(c, r, SRV_RUN, NULL, o)
                  : send_error(c, 405, "%s %s: use POST", method, url);
    } else if (is_streams && !action[0]) {
        ok = !strcmp(method, "GET")      ? stream_job(c, r, SRV_INFO, id, NULL)
             : !strcmp(method, "DELETE") ? stream_job(c, r, SRV_DELETE, id, NULL)
                                         : send_error(c, 405, "%s %s: use GET or DELETE", method, url);
    } else if (is_streams && !strcmp(action, "state")) {
        ok = !strcmp(method, "GET") ? stream_job(c, r, SRV_GET_STATE, id, NULL)
             : put_state            ? stream_job(c, r, SRV_PUT_STATE, id, NULL)
                                    : send_error(c, 405, "%s %s: use GET or PUT", method, url);
    } else if (is_streams && (!strcmp(action, "append") || !strcmp(action, "generate") ||
                              !strcmp(action, "fork"))) {
        if (!post)
            ok = send_error(c, 405, "%s %s: use POST", method, url);
        else if (!strcmp(action, "append"))
            ok = stream_job(c, r, SRV_RUN, id, o);
        else if (!strcmp(action, "fork"))
            ok = stream_job(c, r, SRV_FORK, id, NULL);
        else
            ok = route_completion(c, r, o, 0, id);
    } else {
        ok = send_error(c, 404, "no such route: %s %s", method, url);
    }
    cJSON_Delete(o);
    return ok;
}

/* The request is over (answered, or the client went away): a stream that
 * still generates for it stops at its next token. */
static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode why)
{
    (void)why;
    req *r = *con_cls;
    if (!r)
        return;
    server *sv = cls;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
    const unsigned code = ci ? ci->http_status : 0;
    if (r->route && code) {
        pthread_mutex_lock(&sv->mu);
        int k = 0;
        while (k < sv->n_counts && (sv->counts[k].route != r->route || sv->counts[k].code != code))
            k++;
        if (k == sv->n_counts && k < MAX_COUNTS) {
            sv->counts[k].route = r->route;
            sv->counts[k].code = code;
            sv->counts[k].n = 0;
            sv->n_counts++;
        }
        if (k < sv->n_counts)
            sv->counts[k].n++;
        pthread_mutex_unlock(&sv->mu);
    }
    if (r->job) {
        pthread_mutex_lock(&r->job->mu);
        r->job->cancelled = !r->job->done;
        pthread_mutex_unlock(&r->job->mu);
        srv_job_release(r->job);
    }
    free(r->out);
    free(r->body);
    free(r);
    *con_cls = NULL;
}

int cmd_serve(int argc, char **argv)
{
    static const char cmd[] = "serve";
    static const struct option opts[] = {
        {"host", required_argument, 0, 'H'},     {"port", required_argument, 0, 'p'},
        {"threads", required_argument, 0, 't'},  {"max-active", required_argument, 0, 'a'},
        {"max-streams", required_argument, 0, 'S'}, {"park-mem", required_argument, 0, 'M'},
        {"state-dir", required_argument, 0, 'D'}, {"api-key", required_argument, 0, 'k'},
        {"max-body", required_argument, 0, 'b'}, {"timeout", required_argument, 0, 'T'},
        {"prefix-cache", required_argument, 0, 'P'}, {"store", required_argument, 0, 'R'},
        {"lease-ms", required_argument, 0, 'L'}, {"chat-template", required_argument, 0, 'C'},
        {"max-tokens", required_argument, 0, 'N'}, {"max-stream-tokens", required_argument, 0, 'W'},
        {"prefix-max-tokens", required_argument, 0, 'X'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0},
    };
    const char *host = "127.0.0.1", *state_dir = NULL, *api_key = NULL, *store_url = NULL,
               *chat_name = "auto";
    long port = 8080, threads = -1, max_active = 64, max_streams = 10000, timeout = 60,
         prefix_cache = 64, lease_ms = 10000, max_tokens = 0;
    uint64_t max_stream_tokens = 0, prefix_max_tokens = (uint64_t)1 << 20;
    uint64_t park_mem = (uint64_t)1 << 30, max_body = (uint64_t)1 << 20;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ht:", opts, NULL)) != -1) {
        switch (c) {
        case 'H': host = optarg; break;
        case 'p': if (cli_parse_long(cmd, "--port", optarg, 0, 65535, &port)) return 1; break;
        case 't': if (cli_parse_long(cmd, "--threads", optarg, 0, 1024, &threads)) return 1; break;
        case 'a': if (cli_parse_long(cmd, "--max-active", optarg, 1, 100000, &max_active)) return 1; break;
        case 'S': if (cli_parse_long(cmd, "--max-streams", optarg, 1, 10000000, &max_streams)) return 1; break;
        case 'M': if (cli_parse_u64(cmd, "--park-mem", optarg, &park_mem)) return 1; break;
        case 'D': state_dir = optarg; break;
        case 'k': api_key = optarg; break;
        case 'b': if (cli_parse_u64(cmd, "--max-body", optarg, &max_body)) return 1; break;
        case 'T': if (cli_parse_long(cmd, "--timeout", optarg, 1, 86400, &timeout)) return 1; break;
        case 'P': if (cli_parse_long(cmd, "--prefix-cache", optarg, 0, 1000000, &prefix_cache)) return 1; break;
        case 'R': store_url = optarg; break;
        case 'C': chat_name = optarg; break;
        case 'L': if (cli_parse_long(cmd, "--lease-ms", optarg, 100, 3600000, &lease_ms)) return 1; break;
        case 'N': if (cli_parse_long(cmd, "--max-tokens", optarg, 0, 1000000000, &max_tokens)) return 1; break;
        case 'W': if (cli_parse_u64(cmd, "--max-stream-tokens", optarg, &max_stream_tokens)) return 1; break;
        case 'X': if (cli_parse_u64(cmd, "--prefix-max-tokens", optarg, &prefix_max_tokens)) return 1; break;
        case 'h': fputs(usage, stdout); return 0;
        case ':': return cli_fail(cmd, "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_fail(cmd, "unknown option '%s' (try 'linattn serve --help')", argv[optind - 1]);
        }
    }
    cli_chat chat = CLI_CHAT_PLAIN;
    if (strcmp(chat_name, "auto") && cli_chat_by_name(chat_name, &chat) != 0)
        return cli_fail(cmd, "--chat-template: '%s' is none of auto, %s", chat_name,
                        cli_chat_names());
    if (optind >= argc)
        return cli_fail(cmd, "give a CONFIG (try 'linattn serve --help')");
    if (optind + 1 < argc)
        return cli_fail(cmd, "unexpected argument '%s'", argv[optind + 1]);
    if (api_key && !*api_key)
        return cli_fail(cmd, "--api-key: an empty key");
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, !strcmp(host, "localhost") ? "127.0.0.1" : host, &addr.sin_addr) != 1)
        return cli_fail(cmd, "--host: '%s' is not an IPv4 address", host);
    if (state_dir) {
        struct stat sb;
        if (stat(state_dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(state_dir, W_OK) != 0)
            return cli_fail(cmd, "--state-dir: '%s' is not a folder this process can write",
                            state_dir);
    }
    const char *config = argv[optind];
    linattn_config *cfg = malloc(sizeof *cfg);
    cli_generate *gen = malloc(sizeof *gen);
    if (!cfg || !gen) {
        free(cfg);
        free(gen);
        return cli_fail(cmd, "out of memory");
    }
    int rc = 1;
    linattn_model *model = NULL;
    srv *sched = NULL;
    srv_store *store = NULL;
    struct MHD_Daemon *d = NULL;
    linattn_status st = cli_load_config(config, cfg, gen, NULL);
    if (st != LINATTN_OK) {
        cli_fail_status(cmd, st);
        goto out;
    }
    if (cli_choose_isa(cmd, NULL, cfg->isa))
        goto out;
    if (threads >= 0)
        cfg->threads = (int)threads;
    if ((st = linattn_model_from_config(cfg, &model)) != LINATTN_OK) {
        cli_fail_status(cmd, st);
        goto out;
    }
    if (store_url) {
#ifdef LINATTN_HAVE_STORE
        char msg[512];
        if (srv_store_open(store_url, (int)lease_ms, &store, msg, sizeof msg) != 0) {
            cli_fail(cmd, "--store: %s", msg);
            goto out;
        }
#else
        cli_fail(cmd, "--store: this linattn was built without hiredis (install libhiredis-dev "
                      "and rebuild)");
        goto out;
#endif
    }
    srv_options so = {(int)max_active, (size_t)park_mem, state_dir, cfg->threads, (int)max_streams,
                      (int)prefix_cache, store, (int)lease_ms, max_stream_tokens,
                      prefix_max_tokens};
    if ((st = srv_start(model, &so, &sched)) != LINATTN_OK) {
        cli_fail(cmd, "cannot start the scheduler");
        goto out;
    }
    char name[256];
    const char *base = strrchr(config, '/');
    snprintf(name, sizeof name, "%s", base ? base + 1 : config);
    char *dot = strrchr(name, '.');
    if (dot && !strcmp(dot, ".ini"))
        *dot = '\0';
    static server sv; /* the connections' threads may outlive this frame's use of it */
    memset(&sv, 0, sizeof sv);
    pthread_mutex_init(&sv.mu, NULL);
    sv.sched = sched;
    if (!strcmp(chat_name, "auto")) /* the model's own, from tokenizer_config.json */
        cli_chat_from_tokenizer(linattn_tokenizer_path(linattn_model_tokenizer(model)), &chat);
    sv.rq = (srv_request){linattn_model_config(model)->vocab_size, linattn_model_tokenizer(model),
                          gen, (int)chat, max_tokens ? (int)max_tokens : 1000000000};
    sv.model_name = name;
    sv.api_key = api_key;
    sv.max_body = (size_t)max_body;
    cli_signals_install();
    d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                         (uint16_t)port, NULL, NULL, handle, &sv, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_TIMEOUT,
                         (unsigned int)timeout, MHD_OPTION_CONNECTION_LIMIT, 1024u,
                         MHD_OPTION_NOTIFY_COMPLETED, completed, &sv, MHD_OPTION_END);
    if (!d) {
        cli_fail(cmd, "cannot listen on %s:%ld: %s", host, port, strerror(errno));
        goto out;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "linattn: serve: %s on http://%s:%u (%s attention, chat format %s)\n", name,
            host, info ? info->port : (unsigned)port,
            cfg->attention == LINATTN_ATTN_LINEAR   ? "linear"
            : cfg->attention == LINATTN_ATTN_HYBRID ? "hybrid"
                                                    : "softmax",
            cli_chat_name(chat));
    fflush(stderr);
    while (!cli_signal_pending()) {
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "linattn: serve: %s: stopping\n",
            cli_signal_pending() == SIGTERM ? "SIGTERM" : "Ctrl-C");
    rc = 0;
out:
    srv_stop(sched); /* jobs in flight end (503), so no connection waits on one */
    if (d)
        MHD_stop_daemon(d);
    srv_free(sched);
#ifdef LINATTN_HAVE_STORE
    srv_store_close(store);
#endif
    cli_signals_restore();
    linattn_model_free(model);
    free(gen);
    free(cfg);
    return rc;
}
