/* test_serve.c: `linattn serve` started on 127.0.0.1 by each test and driven over HTTP: completions against `generate`, server-sent events, concurrent clients against the same requests alone, the streams API, parking, limits and errors. */
#include <arpa/inet.h>
#include <cJSON.h>
#include <criterion/criterion.h>
#include <locale.h>
#include <wchar.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define MODEL "tiny-linear-pre-ln-gelu-sincos.ini"

TestSuite(serve, .init = tu_make_dir, .fini = tu_remove_dir);

typedef struct server {
    pid_t pid;
    int port;
    char err[512]; /* its stderr file */
} server;

/* linattn serve CONFIG --port 0 ARGS..., up once it prints its address. */
static server start_model(const char *config, const char *const *extra)
{
    server s;
    memset(&s, 0, sizeof s);
    static int started; /* one stderr file per server: a restart must not read the last one's */
    char name[32];
    snprintf(name, sizeof name, "serve%d.err", started++);
    snprintf(s.err, sizeof s.err, "%s", tu_path(name));
    const char *exe = getenv("LINATTN_EXE");
    cr_assert_not_null(exe);
    char *argv[32];
    int n = 0;
    argv[n++] = "linattn";
    argv[n++] = "serve";
    argv[n++] = (char *)config;
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--threads";
    argv[n++] = "1";
    for (; extra && *extra; extra++)
        argv[n++] = (char *)*extra;
    argv[n] = NULL;
    s.pid = fork();
    cr_assert_geq(s.pid, 0);
    if (s.pid == 0) {
        int fd = open(s.err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int nul = open("/dev/null", O_RDWR);
        if (fd < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execv(exe, argv);
        _exit(127);
    }
    for (int i = 0; i < 2000 && !s.port; i++) {
        size_t len;
        char *text = access(s.err, R_OK) == 0 ? tu_read_file(s.err, &len) : NULL;
        const char *at = text ? strstr(text, "http://127.0.0.1:") : NULL;
        if (at)
            s.port = atoi(at + strlen("http://127.0.0.1:"));
        free(text);
        int st;
        cr_assert_neq(waitpid(s.pid, &st, WNOHANG), s.pid, "the server exited (status %d)", st);
        if (!s.port) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    cr_assert_gt(s.port, 0, "the server did not say where it listens");
    return s;
}

static server start(const char *const *extra)
{
    return start_model(tu_data(MODEL), extra);
}

/* A model whose text is valid UTF-8 (ASCII English), for tests that send
 * a completion's text back as a prompt: the test model's random bytes
 * reach a client as U+FFFD where they are not UTF-8. */
static server start_text_model(const char *const *extra)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../../configs/kjv-linear.ini", tu_data_dir());
    return start_model(path, extra);
}

/* bytes[0..n) as a UTF-8 decoder shows them: each byte that starts no
 * valid character (and NUL) as U+FFFD. The oracle is glibc's mbrtowc in
 * C.UTF-8, not the server's own code. */
static char *shown_as_utf8(const char *bytes, size_t n)
{
    locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    cr_assert(loc, "no C.UTF-8 locale");
    locale_t old = uselocale(loc);
    char *out = malloc(3 * n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        mbstate_t st;
        memset(&st, 0, sizeof st);
        wchar_t wc;
        size_t len = mbrtowc(&wc, bytes + i, n - i, &st);
        if (len == 0 || len == (size_t)-1 || len == (size_t)-2) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, bytes + i, len);
            o += len;
            i += len;
        }
    }
    out[o] = '\0';
    uselocale(old);
    freelocale(loc);
    return out;
}

/* SIGTERM, and its exit status. */
static int stop(server *s)
{
    kill(s->pid, SIGTERM);
    int st;
    cr_assert_eq(waitpid(s->pid, &st, 0), s->pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

typedef struct reply {
    int status;
    char *body; /* NUL-terminated */
    size_t len;
} reply;

/* One HTTP/1.0 request (the server closes the connection after it). */
static reply http(const server *s, const char *method, const char *path, const char *headers,
                  const void *body, size_t body_len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)s->port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    char head[1024];
    int hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n%s\r\n", method,
                      path, body_len, headers ? headers : "");
    cr_assert_eq(write(fd, head, (size_t)hl), hl);
    if (body_len)
        cr_assert_eq(write(fd, body, body_len), (ssize_t)body_len);
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    close(fd);
    buf[len] = '\0';
    reply r = {0, NULL, 0};
    sscanf(buf, "HTTP/1.%*d %d", &r.status);
    char *b = strstr(buf, "\r\n\r\n");
    cr_assert_not_null(b, "no header end in: %s", buf);
    b += 4;
    r.len = len - (size_t)(b - buf);
    r.body = malloc(r.len + 1);
    memcpy(r.body, b, r.len);
    r.body[r.len] = '\0';
    free(buf);
    return r;
}

static reply post(const server *s, const char *path, const char *json)
{
    return http(s, "POST", path, "Content-Type: application/json\r\n", json, strlen(json));
}

/* The body as JSON (the test fails when it is not). */
static cJSON *json_of(const reply *r)
{
    cJSON *j = cJSON_Parse(r->body);
    cr_assert_not_null(j, "not JSON: %s", r->body);
    return j;
}

static const char *str_at(const cJSON *o, const char *path)
{
    /* "a.b.0.c": objects by key, arrays by index */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *v = o;
    char *save = NULL;
    for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
        v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(k))
                             : cJSON_GetObjectItemCaseSensitive(v, k);
    cr_assert(cJSON_IsString(v), "no string at %s", path);
    return v->valuestring;
}

static double num_at(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsNumber(v), "no number %s", key);
    return v->valuedouble;
}

/* The completion's text (200 expected). */
static char *completion_text(const server *s, const char *path, const char *json)
{
    reply r = post(s, path, json);
    cr_assert_eq(r.status, 200, "%s: %d %s", json, r.status, r.body);
    cJSON *j = json_of(&r);
    char *t = strdup(str_at(j, "choices.0.text"));
    cJSON_Delete(j);
    free(r.body);
    return t;
}

/* Greedy text equals `linattn generate --temperature 0` on the same prompt;
 * the events of a streamed request join to the same text and end with
 * [DONE]. */
Test(serve, completions_match_generate_and_events_join)
{
    server s = start(NULL);
    char *text = completion_text(&s, "/v1/completions",
                                 "{\"prompt\": \"Hello\", \"max_tokens\": 40, \"temperature\": 0}");
    tu_run_result g = tu_run("generate", tu_data(MODEL), "-p", "Hello", "-n", "40",
                             "--temperature", "0", "--no-display-prompt", NULL);
    tu_assert_ok(&g);
    /* the same bytes, those that are not UTF-8 shown as U+FFFD (JSON is
     * Unicode text) */
    char *shown = shown_as_utf8(g.out, g.out_len - 1);
    cr_assert(strstr(shown, "\xEF\xBF\xBD"), "the test model writes bytes that are not UTF-8");
    cr_assert_str_eq(text, shown, "the texts differ");
    free(shown);
    tu_run_free(&g);

    reply r = post(&s, "/v1/completions",
                   "{\"prompt\": \"Hello\", \"max_tokens\": 40, \"temperature\": 0, \"stream\": true}");
    cr_assert_eq(r.status, 200);
    char joined[4096] = "";
    int events = 0, done = 0;
    const char *finish = NULL;
    cJSON *last = NULL;
    for (char *line = strtok(r.body, "\n"); line; line = strtok(NULL, "\n")) {
        cr_assert(!strncmp(line, "data: ", 6), "not an event: %s", line);
        if (!strcmp(line + 6, "[DONE]")) {
            done = 1;
            continue;
        }
        cr_assert(!done, "an event after [DONE]");
        cJSON *e = cJSON_Parse(line + 6);
        cr_assert_not_null(e, "%s", line);
        strncat(joined, str_at(e, "choices.0.text"), sizeof joined - strlen(joined) - 1);
        const cJSON *fr = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "choices"), 0),
                                              "finish_reason");
        if (cJSON_IsString(fr))
            finish = fr->valuestring;
        events++;
        cJSON_Delete(last);
        last = e;
    }
    cr_expect(done, "no [DONE]");
    cr_expect_geq(events, 2, "the text, then the end"); /* a fast model may send it all at once */
    cr_expect_str_eq(joined, text);
    cr_expect(finish && !strcmp(finish, "length"), "finish_reason %s", finish ? finish : "none");
    cJSON_Delete(last);
    free(r.body);

    /* a stop string ends the text before it */
    char req[256];
    char stopper[8];
    snprintf(stopper, sizeof stopper, "%.3s", text + 10);
    snprintf(req, sizeof req,
             "{\"prompt\": \"Hello\", \"max_tokens\": 40, \"temperature\": 0, \"stop\": \"%s\"}", stopper);
    char *cut = completion_text(&s, "/v1/completions", req);
    const char *at = strstr(text, stopper);
    cr_expect_eq(strlen(cut), (size_t)(at - text), "cut at the stop: '%s' in '%s'", cut, text);
    free(cut);
    free(text);
    cr_expect_eq(stop(&s), 0);
}

typedef struct client {
    const server *s;
    int seed;
    char *text;
} client;

static void *client_run(void *arg)
{
    client *c = arg;
    char req[256];
    snprintf(req, sizeof req,
             "{\"prompt\": \"Once\", \"max_tokens\": 60, \"temperature\": 0.9, \"seed\": %d}",
             c->seed);
    c->text = completion_text(c->s, "/v1/completions", req);
    return NULL;
}

/* 64 clients at once (batched by the scheduler) each get the text the
 * same request gets alone. */
Test(serve, concurrent_clients_get_their_own_text)
{
    enum { N = 64 };
    server s = start(NULL);
    client c[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){&s, 100 + i, NULL};
        cr_assert_eq(pthread_create(&t[i], NULL, client_run, &c[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++) {
        client alone = {&s, 100 + i, NULL};
        client_run(&alone);
        cr_expect_str_eq(c[i].text, alone.text, "seed %d:\n[%s]\n[%s]", 100 + i, c[i].text, alone.text);
        cr_expect_gt(strlen(alone.text), 0u);
        if (i > 0)
            cr_expect_str_neq(c[i].text, c[0].text, "seeds %d and 100 gave one text", 100 + i);
        free(alone.text);
    }
    for (int i = 0; i < N; i++)
        free(c[i].text);
    cr_expect_eq(stop(&s), 0);
}

static char *new_stream(const server *s, const char *prompt)
{
    char req[256];
    snprintf(req, sizeof req, "{\"prompt\": \"%s\"}", prompt);
    reply r = post(s, "/v1/streams", req);
    cr_assert_eq(r.status, 201, "%d %s", r.status, r.body);
    cJSON *j = json_of(&r);
    char *id = strdup(str_at(j, "id"));
    cr_expect_eq(num_at(j, "tokens"), (double)strlen(prompt));
    cJSON_Delete(j);
    free(r.body);
    return id;
}

static char *stream_text(const server *s, const char *id, int n)
{
    char path[128], req[128];
    snprintf(path, sizeof path, "/v1/streams/%s/generate", id);
    snprintf(req, sizeof req, "{\"max_tokens\": %d, \"temperature\": 0}", n);
    return completion_text(s, path, req);
}

/* A stream continues where it stood: generate, append, fork (both go on
 * alike), the state taken out and put back under another id (the same
 * again), a corrupt state refused, delete. */
Test(serve, streams_continue_fork_and_move)
{
    server s = start(NULL);
    char *id = new_stream(&s, "In the");
    char *a = stream_text(&s, id, 12);
    char path[128];
    snprintf(path, sizeof path, "/v1/streams/%s/append", id);
    reply r = post(&s, path, "{\"text\": \" and\"}");
    cr_assert_eq(r.status, 200, "%s", r.body);
    cJSON *j = json_of(&r);
    cr_expect_eq(num_at(j, "tokens"), 6 + 12 + 4, "prompt, answer and the text appended");
    cJSON_Delete(j);
    free(r.body);
    /* the whole text at once gives what the stream gives in pieces */
    char whole[256];
    snprintf(whole, sizeof whole,
             "{\"prompt\": \"In the%s and\", \"max_tokens\": 10, \"temperature\": 0}", a);
    char *w = completion_text(&s, "/v1/completions", whole);

    snprintf(path, sizeof path, "/v1/streams/%s/fork", id);
    r = post(&s, path, "");
    cr_assert_eq(r.status, 200, "%s", r.body);
    j = json_of(&r);
    char *fork_id = strdup(str_at(j, "id"));
    cJSON_Delete(j);
    free(r.body);
    snprintf(path, sizeof path, "/v1/streams/%s/state", id);
    r = http(&s, "GET", path, NULL, NULL, 0);
    cr_assert_eq(r.status, 200);
    reply put = http(&s, "PUT", "/v1/streams/moved/state", NULL, r.body, r.len);
    cr_assert_eq(put.status, 200, "%s", put.body);
    free(put.body);
    reply bad = http(&s, "PUT", "/v1/streams/broken/state", NULL, r.body, r.len / 2);
    cr_expect_eq(bad.status, 400, "%s", bad.body);
    cr_expect(strstr(bad.body, "state: "), "%s", bad.body);
    free(bad.body);
    free(r.body);

    char *x = stream_text(&s, id, 10), *y = stream_text(&s, fork_id, 10),
         *z = stream_text(&s, "moved", 10);
    cr_expect_str_eq(x, w, "the stream in pieces and the text at once");
    cr_expect_str_eq(y, x, "the fork");
    cr_expect_str_eq(z, x, "the state moved to another id");

    snprintf(path, sizeof path, "/v1/streams/%s", id);
    r = http(&s, "DELETE", path, NULL, NULL, 0);
    cr_expect_eq(r.status, 200);
    free(r.body);
    r = http(&s, "GET", path, NULL, NULL, 0);
    cr_expect_eq(r.status, 404, "%s", r.body);
    free(r.body);
    free(a), free(w), free(x), free(y), free(z), free(id), free(fork_id);
    cr_expect_eq(stop(&s), 0);
}

/* Where the stream is ("active", "memory", "writing", "disk"), or NULL
 * when there is no such stream. */
static char *where_is(const server *s, const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/streams/%s", id);
    reply r = http(s, "GET", path, NULL, NULL, 0);
    char *w = NULL;
    if (r.status == 200) {
        cJSON *j = json_of(&r);
        w = strdup(str_at(j, "parked"));
        cJSON_Delete(j);
    } else {
        cr_assert_eq(r.status, 404, "%s", r.body);
    }
    free(r.body);
    return w;
}

/* Polls until the stream is where (or gone, with NULL): the writer's
 * files land in their own time. */
static void wait_where(const server *s, const char *id, const char *where)
{
    char *w = NULL;
    for (int i = 0; i < 1000; i++) {
        free(w);
        w = where_is(s, id);
        if (where ? w && !strcmp(w, where) : !w)
            break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    cr_assert(where ? w && !strcmp(w, where) : !w, "stream %s is %s, not %s", id,
              w ? w : "gone", where ? where : "gone");
    free(w);
}

/* With --max-active 1 every stream but the newest is parked (in memory,
 * or past --park-mem on disk, once its file has landed); a parked stream
 * comes back exactly. */
static void parked_streams_come_back(const char *const *extra, const char *where)
{
    server s = start(extra);
    char *a = new_stream(&s, "And God");
    char *twin = new_stream(&s, "And God");
    char *b = new_stream(&s, "Then");
    wait_where(&s, a, where);
    char *ta = stream_text(&s, a, 30), *tt = stream_text(&s, twin, 30);
    cr_expect_str_eq(ta, tt, "parked and brought back twice, the same text");
    free(ta), free(tt), free(a), free(twin), free(b);
    cr_expect_eq(stop(&s), 0);
}

Test(serve, parked_in_memory_come_back_exactly)
{
    const char *extra[] = {"--max-active", "1", NULL};
    parked_streams_come_back(extra, "memory");
}

Test(serve, parked_on_disk_come_back_exactly)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_path("parked"));
    cr_assert_eq(mkdir(dir, 0700), 0);
    const char *extra[] = {"--max-active", "1", "--park-mem", "0", "--state-dir", dir, NULL};
    parked_streams_come_back(extra, "disk");
}

/* Bad requests get a JSON error and the status that says why. */
Test(serve, bad_requests_get_json_errors)
{
    const char *extra[] = {"--api-key", "sesame", "--max-body", "200", NULL};
    server s = start(extra);
    const char *key = "Authorization: Bearer sesame\r\n";
    const struct {
        const char *method, *path, *headers, *body;
        int status;
        const char *want;
    } cases[] = {
        {"POST", "/v1/completions", NULL, "{\"prompt\": \"a\"}", 401, "API key"},
        {"POST", "/v1/completions", "Authorization: Bearer sesamE\r\n", "{\"prompt\": \"a\"}", 401,
         "API key"},
        {"POST", "/v1/completions", key, "{bad", 400, "not valid JSON"},
        /* the library's strict reader: nothing after the value, a key once */
        {"POST", "/v1/completions", key, "{\"prompt\": \"a\"} {}", 400,
         "bytes after the JSON value"},
        {"POST", "/v1/completions", key, "{\"prompt\": \"a\", \"prompt\": \"b\"}", 400,
         "key \"prompt\" appears twice"},
        {"POST", "/v1/completions", key, "[1]", 400, "JSON object"},
        {"POST", "/v1/completions", key, "{}", 400, "'prompt' is required"},
        {"POST", "/v1/completions", key, "{\"prompt\": \"a\", \"n\": 2}", 400, "'n' > 1"},
        {"POST", "/v1/completions", key, "{\"prompt\": \"a\", \"max_tokens\": -1}", 400,
         "'max_tokens'"},
        {"POST", "/v1/completions", key, "{\"prompt\": \"a\", \"temperature\": \"hot\"}", 400,
         "'temperature'"},
        {"POST", "/v1/completions", key, "{\"prompt\": \"a\", \"logit_bias\": {\"999\": 1}}", 400,
         "'logit_bias'"},
        {"POST", "/v1/completions", key, "{\"prompt\": \"a\", \"stream\": \"st-1\"}", 400,
         "'stream_id'"},
        {"POST", "/v1/completions", key, "{\"prompt\": \"a\", \"frequency_penalty\": 0.5}", 400,
         "repetition_penalty"},
        {"POST", "/v1/chat/completions", key, "{\"messages\": [{\"role\": \"robot\", "
                                              "\"content\": \"x\"}]}", 400, "role"},
        {"POST", "/v1/streams/nope/generate", key, "{}", 404, "no stream 'nope'"},
        {"GET", "/v1/completions", key, "", 405, "use POST"},
        {"GET", "/v1/elsewhere", key, "", 404, "no such route"},
        {"POST", "/v1/completions", key,
         "{\"prompt\": \"0123456789012345678901234567890123456789012345678901234567890123456789"
         "0123456789012345678901234567890123456789012345678901234567890123456789"
         "01234567890123456789012345678901234567890123456789\"}", 413, "--max-body"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reply r = http(&s, cases[i].method, cases[i].path, cases[i].headers, cases[i].body,
                       strlen(cases[i].body));
        cr_expect_eq(r.status, cases[i].status, "case %zu: %d %s", i, r.status, r.body);
        cJSON *j = cJSON_Parse(r.body);
        cr_expect(j && strstr(str_at(j, "error.message"), cases[i].want), "case %zu: %s", i,
                  r.body);
        cJSON_Delete(j);
        free(r.body);
    }
    /* and the right key works; /health needs none */
    reply ok = http(&s, "POST", "/v1/completions", key, "{\"prompt\": \"a\", \"max_tokens\": 3}",
                    strlen("{\"prompt\": \"a\", \"max_tokens\": 3}"));
    cr_expect_eq(ok.status, 200, "%s", ok.body);
    free(ok.body);
    reply h = http(&s, "GET", "/health", NULL, NULL, 0);
    cr_expect_eq(h.status, 200);
    cr_expect(strstr(h.body, "\"status\":\"ok\""), "%s", h.body);
    free(h.body);
    cr_expect_eq(stop(&s), 0);
    size_t n;
    char *err = tu_read_file(s.err, &n);
    cr_expect(strstr(err, "serve: SIGTERM: stopping"), "%s", err);
    free(err);
}

/* /metrics counts what was served (polled: a request is counted as its
 * connection closes). */
Test(serve, metrics_count_requests_and_tokens)
{
    server s = start(NULL);
    reply r = post(&s, "/v1/completions", "{\"prompt\": \"Hello\", \"max_tokens\": 7}");
    cr_assert_eq(r.status, 200);
    free(r.body);
    r = post(&s, "/v1/completions", "{\"prompt\": 5}");
    cr_assert_eq(r.status, 400);
    free(r.body);
    const char *want[] = {"linattn_requests_total{route=\"completions\",code=\"200\"} 1\n",
                          "linattn_requests_total{route=\"completions\",code=\"400\"} 1\n",
                          "linattn_generated_tokens_total 7\n", "linattn_prompt_tokens_total 5\n",
                          "linattn_time_to_first_token_seconds_count 1\n",
                          "linattn_inter_token_seconds_count 6\n",
                          "linattn_streams_active 1\n"}; /* the completion's, kept for prefix reuse */
    reply m = {0, NULL, 0};
    int ok = 0;
    for (int tries = 0; tries < 100 && !ok; tries++) {
        free(m.body);
        m = http(&s, "GET", "/metrics", NULL, NULL, 0);
        cr_assert_eq(m.status, 200);
        ok = 1;
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            ok &= strstr(m.body, want[i]) != NULL;
        if (!ok) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(m.body, want[i]), "no '%s' in:\n%s", want[i], m.body);
    free(m.body);
    cr_expect_eq(stop(&s), 0);
}

/* usage.prompt_tokens_details.cached_tokens of a completion reply */
static int cached_of(const reply *r)
{
    cJSON *j = json_of(r);
    const cJSON *u = cJSON_GetObjectItem(j, "usage");
    const cJSON *d = cJSON_GetObjectItem(u, "prompt_tokens_details");
    const cJSON *c = cJSON_GetObjectItem(d, "cached_tokens");
    cr_assert(cJSON_IsNumber(c), "no cached_tokens: %s", r->body);
    int n = (int)c->valuedouble;
    cJSON_Delete(j);
    return n;
}

static char *text_of(const reply *r)
{
    cJSON *j = json_of(r);
    char *t = strdup(str_at(j, "choices.0.text"));
    cJSON_Delete(j);
    return t;
}

/* A completion whose prompt begins with what an earlier one consumed (its
 * prompt and its answer but the last token) resumes that stream: only the
 * rest is fed, and the text is what a server without the cache gives. */
Test(serve, prefix_reuse_resumes_and_matches)
{
    server s = start_text_model(NULL);
    const char *off_args[] = {"--prefix-cache", "0", NULL};
    reply r = post(&s, "/v1/completions",
                   "{\"prompt\": \"In the beginning\", \"max_tokens\": 20, \"temperature\": 0}");
    cr_assert_eq(r.status, 200);
    cr_expect_eq(cached_of(&r), 0);
    char *a = text_of(&r);
    free(r.body);
    cr_assert_eq(strlen(a), 20u, "one byte a token: '%s'", a);
    char req[512];
    snprintf(req, sizeof req,
             "{\"prompt\": \"In the beginning%s and\", \"max_tokens\": 15, \"temperature\": 0}", a);
    r = post(&s, "/v1/completions", req);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_expect_eq(cached_of(&r), 16 + 19, "the prompt and 19 of the answer's 20 tokens");
    char *b = text_of(&r);
    free(r.body);
    cr_expect_eq(stop(&s), 0);

    server t = start_text_model(off_args);
    r = post(&t, "/v1/completions", req);
    cr_assert_eq(r.status, 200);
    cr_expect_eq(cached_of(&r), 0);
    char *c = text_of(&r);
    free(r.body);
    cr_expect_str_eq(b, c, "with and without the reused stream");
    free(a), free(b), free(c);
    cr_expect_eq(stop(&t), 0);
}

/* A stream past --prefix-max-tokens keeps no token ids: a request resending
 * its history is fed whole (cached_tokens 0), with the same text. */
Test(serve, prefix_history_has_a_limit)
{
    const char *small[] = {"--prefix-max-tokens", "30", NULL};
    server s = start_text_model(small);
    reply r = post(&s, "/v1/completions",
                   "{\"prompt\": \"In the beginning\", \"max_tokens\": 20, \"temperature\": 0}");
    cr_assert_eq(r.status, 200);
    char *a = text_of(&r);
    free(r.body);
    char req[512];
    snprintf(req, sizeof req,
             "{\"prompt\": \"In the beginning%s and\", \"max_tokens\": 15, \"temperature\": 0}", a);
    r = post(&s, "/v1/completions", req);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_expect_eq(cached_of(&r), 0, "36 tokens consumed, 30 kept at most: none reused");
    char *b = text_of(&r);
    free(r.body);
    cr_expect_eq(stop(&s), 0);

    const char *off_args[] = {"--prefix-cache", "0", NULL};
    server t = start_text_model(off_args);
    r = post(&t, "/v1/completions", req);
    cr_assert_eq(r.status, 200);
    char *c = text_of(&r);
    free(r.body);
    cr_expect_str_eq(b, c, "with the history dropped and without the cache");
    free(a), free(b), free(c);
    cr_expect_eq(stop(&t), 0);
}

static server start_softmax_model(const char *const *extra)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../../configs/kjv-softmax.ini", tu_data_dir());
    return start_model(path, extra);
}

/* The reply's text and cached_tokens for a completion of req on s. */
static char *completion_cached(const server *s, const char *req, int *cached)
{
    reply r = post(s, "/v1/completions", req);
    cr_assert_eq(r.status, 200, "%s", r.body);
    *cached = cached_of(&r);
    char *t = text_of(&r);
    free(r.body);
    return t;
}

/* A softmax stream is cut: a completion whose prompt shares only its first
 * p tokens (bytes) with a kept stream forks it, cuts the fork back to p
 * and feeds the rest, and gives the text of a server without the cache,
 * greedy and seeded. Fewer than 16 shared tokens are not worth a cut; a
 * linear stream is never cut. */
Test(serve, softmax_prefix_is_cut_to_the_match)
{
    const char *first = "In the beginning God created the heaven and the earth.";
    const char *reqs[] = {
        "{\"prompt\": \"In the beginning God created the sea\", \"max_tokens\": 24, "
        "\"temperature\": 0}",
        "{\"prompt\": \"In the beginning God made the light\", \"max_tokens\": 24, "
        "\"temperature\": 0.9, \"seed\": 3}",
        "{\"prompt\": \"In the end\", \"max_tokens\": 8, \"temperature\": 0}",
    };
    const int want[] = {(int)strlen("In the beginning God created the "),
                        (int)strlen("In the beginning God "), 0};
    char req0[256];
    snprintf(req0, sizeof req0, "{\"prompt\": \"%s\", \"max_tokens\": 20, \"temperature\": 0}",
             first);
    server s = start_softmax_model(NULL);
    int cached;
    free(completion_cached(&s, req0, &cached));
    cr_expect_eq(cached, 0);
    char *with[3];
    for (int i = 0; i < 3; i++) {
        with[i] = completion_cached(&s, reqs[i], &cached);
        cr_expect_eq(cached, want[i], "request %d: the tokens shared with a kept stream", i);
    }
    cr_expect_eq(stop(&s), 0);
    const char *off[] = {"--prefix-cache", "0", NULL};
    server t = start_softmax_model(off);
    for (int i = 0; i < 3; i++) {
        char *without = completion_cached(&t, reqs[i], &cached);
        cr_expect_eq(cached, 0);
        cr_expect_gt(strlen(without), 0u);
        cr_expect_str_eq(with[i], without, "request %d: with and without the cut stream", i);
        free(without);
        free(with[i]);
    }
    cr_expect_eq(stop(&t), 0);

    server l = start_text_model(NULL);
    free(completion_cached(&l, req0, &cached));
    free(completion_cached(&l, reqs[0], &cached));
    cr_expect_eq(cached, 0, "a linear stream is reused whole or not at all");
    cr_expect_eq(stop(&l), 0);
}

/* Streams survive a restart on the same --state-dir: every stream is
 * written there at exit, and the next server takes them back (its named
 * ones by id, its kept completions for prefix reuse). */
Test(serve, streams_survive_a_restart)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tu_path("state"));
    cr_assert_eq(mkdir(dir, 0700), 0);
    const char *args[] = {"--state-dir", dir, NULL};
    server s = start_text_model(args);
    char *id = new_stream(&s, "And God said");
    char *t1 = stream_text(&s, id, 10);
    reply r = post(&s, "/v1/completions",
                   "{\"prompt\": \"Hello\", \"max_tokens\": 5, \"temperature\": 0}");
    cr_assert_eq(r.status, 200);
    char *h = text_of(&r);
    free(r.body);
    cr_expect_eq(stop(&s), 0);

    server t = start_text_model(args);
    char path[128];
    snprintf(path, sizeof path, "/v1/streams/%s", id);
    r = http(&t, "GET", path, NULL, NULL, 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cJSON *j = json_of(&r);
    cr_expect_str_eq(str_at(j, "parked"), "disk");
    cr_expect_eq(num_at(j, "tokens"), 12 + 10);
    cJSON_Delete(j);
    free(r.body);
    char *t2 = stream_text(&t, id, 10);
    char prompt[128];
    snprintf(prompt, sizeof prompt, "And God said%s", t1);
    char *fresh = new_stream(&t, prompt);
    char *t3 = stream_text(&t, fresh, 10);
    cr_expect_str_eq(t2, t3, "the stream taken back goes on as the same text fed anew");
    char req[256];
    snprintf(req, sizeof req, "{\"prompt\": \"Hello%sx\", \"max_tokens\": 3, \"temperature\": 0}", h);
    r = post(&t, "/v1/completions", req);
    cr_assert_eq(r.status, 200);
    cr_expect_eq(cached_of(&r), 5 + 4, "the kept completion from before the restart");
    free(r.body);
    free(id), free(t1), free(t2), free(t3), free(fresh), free(h);
    cr_expect_eq(stop(&t), 0);
}

/* Holds the server's state files in flight: LINATTN_SERVE_WRITE_GATE names
 * a FIFO its writer reads one byte from before each file, and the test
 * keeps the FIFO's only write end (close-on-exec: the server must not
 * hold one), so a file waits until the test writes a byte, and all go
 * once it closes the FIFO. */
static int hold_writes(void)
{
    const char *gate = tu_path("gate");
    cr_assert_eq(mkfifo(gate, 0600), 0, "mkfifo: %s", strerror(errno));
    int fd = open(gate, O_RDWR | O_CLOEXEC); /* RDWR: the open does not wait for a reader */
    cr_assert_geq(fd, 0, "%s: %s", gate, strerror(errno));
    cr_assert_eq(setenv("LINATTN_SERVE_WRITE_GATE", gate, 1), 0);
    return fd;
}

static void let_files_go(int gate, int n)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(write(gate, "x", 1), 1);
}

/* Every stream but the newest parked on disk, in dir. */
static const char *const *disk_parking(const char *dir)
{
    static const char *extra[] = {"--max-active", "1", "--park-mem", "0", "--state-dir", NULL,
                                  NULL};
    extra[5] = dir;
    return extra;
}

/* A server parking on disk in the test's state/ (into dir[512]), its
 * files held at *gate (hold_writes). */
static server start_held(int *gate, char *dir)
{
    *gate = hold_writes();
    snprintf(dir, 512, "%s", tu_path("state"));
    cr_assert_eq(mkdir(dir, 0700), 0);
    return start(disk_parking(dir));
}

static int has_file(const char *dir, const char *id, const char *ext)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%s", dir, id, ext);
    return access(path, F_OK) == 0;
}

/* A stream whose state file is still being written comes back at once from
 * the bytes on their way, exactly: it goes on as a stream never parked.
 * The file that lands after it is active again is removed (the stream is
 * not on disk), and the next one parked lands and comes back likewise. */
Test(serve, parked_while_its_file_is_written_comes_back_exactly)
{
    int gate;
    char dir[512];
    server s = start_held(&gate, dir);
    char *a = new_stream(&s, "And God");
    char *twin = new_stream(&s, "And God"); /* a is parked: its file waits at the gate */
    char *w = where_is(&s, a);
    cr_expect_str_eq(w, "writing");
    free(w);
    char *tt = stream_text(&s, twin, 30); /* never parked */
    char *ta = stream_text(&s, a, 30);    /* from the bytes in flight; twin is parked */
    cr_expect_str_eq(ta, tt, "resumed while its file was written, as never parked");
    w = where_is(&s, twin);
    cr_expect_str_eq(w, "writing");
    free(w);
    cr_expect(!has_file(dir, a, ".state"), "the gate holds a's file");
    let_files_go(gate, 2); /* a's (then removed: a is active), twin's */
    wait_where(&s, twin, "disk");
    cr_expect(has_file(dir, twin, ".state") && has_file(dir, twin, ".tokens"));
    cr_expect(!has_file(dir, a, ".state") && !has_file(dir, a, ".tokens"),
              "a's file, landed after a came back, is gone");
    char *ta2 = stream_text(&s, a, 10), *tt2 = stream_text(&s, twin, 10);
    cr_expect_str_eq(tt2, ta2, "the file that landed is the stream");
    close(gate);
    free(a), free(twin), free(ta), free(tt), free(ta2), free(tt2);
    cr_expect_eq(stop(&s), 0);
}

typedef struct delete_call {
    const server *s;
    char path[128];
    _Atomic int status; /* 0 until answered */
} delete_call;

static void *delete_stream(void *arg)
{
    delete_call *d = arg;
    reply r = http(d->s, "DELETE", d->path, NULL, NULL, 0);
    d->status = r.status;
    free(r.body);
    return NULL;
}

/* A DELETE of a stream whose file is on its way is answered once that
 * file has landed and gone: no file of it is left, now or after a restart. */
Test(serve, delete_while_its_file_is_written_leaves_no_file)
{
    int gate;
    char dir[512];
    server s = start_held(&gate, dir);
    char *a = new_stream(&s, "And God");
    char *b = new_stream(&s, "Then");
    char *w = where_is(&s, a);
    cr_expect_str_eq(w, "writing");
    free(w);
    delete_call d = {&s, "", 0};
    snprintf(d.path, sizeof d.path, "/v1/streams/%s", a);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, delete_stream, &d), 0);
    wait_where(&s, a, NULL); /* the DELETE is taken */
    /* one answered before its file has landed and gone would most likely
     * be back by now: the stream was dropped before this GET was read */
    reply h = http(&s, "GET", "/health", NULL, NULL, 0);
    free(h.body);
    cr_expect_eq(d.status, 0, "the DELETE was answered with its file still on the way");
    let_files_go(gate, 1);
    pthread_join(t, NULL);
    cr_expect_eq(d.status, 200);
    cr_expect(!has_file(dir, a, ".state") && !has_file(dir, a, ".tokens"),
              "no file of the deleted stream once its DELETE is answered");
    close(gate);
    cr_expect_eq(stop(&s), 0);
    unsetenv("LINATTN_SERVE_WRITE_GATE");
    server r = start(disk_parking(dir));
    w = where_is(&r, a);
    cr_expect_null(w, "the deleted stream came back: %s", w);
    free(w);
    wait_where(&r, b, "disk");
    cr_expect(!has_file(dir, a, ".state"));
    free(a), free(b);
    cr_expect_eq(stop(&r), 0);
}

/* SIGTERM while state files are in flight: the server writes them all
 * before it exits, and the next server on the directory finds every
 * stream, each going on as the same text fed anew. */
Test(serve, sigterm_writes_every_parked_stream)
{
    int gate;
    char dir[512];
    server s = start_held(&gate, dir);
    enum { N = 4 };
    const char *prompts[N] = {"And God", "In the", "Then said", "And the earth"};
    char *ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = new_stream(&s, prompts[i]);
    for (int i = 0; i < N - 1; i++) {
        char *w = where_is(&s, ids[i]);
        cr_expect_str_eq(w, "writing", "stream %d", i);
        free(w);
    }
    kill(s.pid, SIGTERM);
    close(gate); /* the held files may go now, as the server stops */
    int st;
    cr_assert_eq(waitpid(s.pid, &st, 0), s.pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    unsetenv("LINATTN_SERVE_WRITE_GATE");
    server r = start(disk_parking(dir));
    for (int i = 0; i < N; i++) {
        char path[128];
        snprintf(path, sizeof path, "/v1/streams/%s", ids[i]);
        reply g = http(&r, "GET", path, NULL, NULL, 0);
        cr_assert_eq(g.status, 200, "stream %d: %s", i, g.body);
        cJSON *j = json_of(&g);
        cr_expect_str_eq(str_at(j, "parked"), "disk", "stream %d", i);
        cr_expect_eq(num_at(j, "tokens"), (double)strlen(prompts[i]), "stream %d", i);
        cJSON_Delete(j);
        free(g.body);
        char *back = stream_text(&r, ids[i], 10);
        char *fresh_id = new_stream(&r, prompts[i]);
        char *fresh = stream_text(&r, fresh_id, 10);
        cr_expect_str_eq(back, fresh, "stream %d after the restart", i);
        free(back), free(fresh), free(fresh_id), free(ids[i]);
    }
    cr_expect_eq(stop(&r), 0);
}

#ifdef LINATTN_TEST_STORE
/* A free TCP port on 127.0.0.1 (bound, then let go). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

/* Debian's redis-server on port, in the test's folder, nothing saved. */
static pid_t start_redis(int port)
{
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        dup2(nul, 0), dup2(nul, 1), dup2(nul, 2);
        execl("/usr/bin/redis-server", "redis-server", "--port", p, "--bind", "127.0.0.1",
              "--save", "", "--appendonly", "no", "--dir", tu_dir(), (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) { /* up once it accepts */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)port);
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return pid;
        int st;
        cr_assert_neq(waitpid(pid, &st, WNOHANG), pid, "redis-server exited (is it installed?)");
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    cr_assert_fail("redis-server did not start");
    return pid;
}

typedef struct long_gen {
    const server *s;
    char path[128];
} long_gen;

static void *long_generation(void *arg)
{
    long_gen *g = arg;
    reply r = post(g->s, g->path, "{\"max_tokens\": 100000000, \"stream\": true}");
    free(r.body);
    return NULL;
}

/* Two servers on one Redis share a stream: turns alternate between them
 * and the text is one stream's; a server killed mid-generation loses its
 * lease after its TTL and the other continues from the last state it
 * acknowledged; a corrupt stored state is refused. */
Test(serve, two_servers_share_streams_through_redis)
{
    const int rport = free_port();
    pid_t redis = start_redis(rport);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", rport);
    const char *args[] = {"--store", url, "--lease-ms", "1000", NULL};
    server a = start(args), b = start(args);
    char *id = new_stream(&a, "Hello");
    char *a1 = stream_text(&a, id, 10), *b1 = stream_text(&b, id, 10), *a2 = stream_text(&a, id, 10);
    char *ref = new_stream(&a, "Hello");
    char *r30 = stream_text(&a, ref, 30);
    char joined[256];
    snprintf(joined, sizeof joined, "%s%s%s", a1, b1, a2);
    cr_expect_str_eq(joined, r30, "turns on two servers make one stream's text");

    /* B generates without end; it is killed in the middle */
    long_gen g = {&b, ""};
    snprintf(g.path, sizeof g.path, "/v1/streams/%s/generate", id);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, long_generation, &g), 0);
    int running = 0;
    for (int i = 0; i < 500 && !running; i++) {
        reply h = http(&b, "GET", "/health", NULL, NULL, 0);
        running = strstr(h.body, "\"requests_running\":1") != NULL;
        free(h.body);
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    cr_assert(running, "B never ran the long generation");
    kill(b.pid, SIGKILL);
    waitpid(b.pid, NULL, 0);
    pthread_join(t, NULL);
    char req[64];
    snprintf(req, sizeof req, "{\"max_tokens\": 10, \"temperature\": 0}");
    reply r = {0, NULL, 0};
    int busy = 0;
    for (int i = 0; i < 100; i++) { /* 409 while the dead server's lease lasts */
        r = post(&a, g.path, req);
        if (r.status != 409)
            break;
        busy++;
        free(r.body);
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_expect_gt(busy, 0, "the dead server's lease held for a while");
    char *after = text_of(&r);
    free(r.body);
    char *r10 = stream_text(&a, ref, 10);
    cr_expect_str_eq(after, r10, "the stream goes on from its last acknowledged state");

    /* a stored state that does not check out is never taken */
    char key[128], cmd[512];
    snprintf(key, sizeof key, "linattn:{%s}:state", id);
    snprintf(cmd, sizeof cmd, "redis-cli -p %d SET '%s' garbage >/dev/null && "
                              "redis-cli -p %d INCR 'linattn:{%s}:ver' >/dev/null", rport, key,
             rport, id);
    cr_assert_eq(system(cmd), 0);
    r = post(&a, g.path, req);
    cr_expect_eq(r.status, 500, "%s", r.body);
    cr_expect(strstr(r.body, "the stored state is refused"), "%s", r.body);
    free(r.body);
    free(id), free(a1), free(b1), free(a2), free(ref), free(r30), free(after), free(r10);
    cr_expect_eq(stop(&a), 0);
    kill(redis, SIGTERM);
    waitpid(redis, NULL, 0);
}
#endif

/* --chat-template: the messages in that format (a byte-level model: one
 * token a byte, so the prompt's count is the text's length). */
Test(serve, chat_uses_the_chat_format)
{
    const char *args[] = {"--chat-template", "llama3", NULL};
    server s = start(args);
    reply r = post(&s, "/v1/chat/completions",
                   "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, "
                   "{\"role\": \"user\", \"content\": \"U\"}], \"max_tokens\": 4}");
    cr_assert_eq(r.status, 200, "%s", r.body);
    cJSON *j = json_of(&r);
    const char *want = "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
                       "<|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\n";
    cr_expect_eq(num_at(cJSON_GetObjectItem(j, "usage"), "prompt_tokens"), (double)strlen(want));
    cr_expect_str_eq(str_at(j, "object"), "chat.completion");
    cJSON_Delete(j);
    free(r.body);
    size_t n;
    char *err = tu_read_file(s.err, &n);
    cr_expect(strstr(err, "chat format llama3"), "%s", err);
    free(err);
    cr_expect_eq(stop(&s), 0);
}

/* --max-tokens caps what one request may ask; --max-stream-tokens what a
 * stream may hold: a request past either is refused (400, nothing fed),
 * and an answer that reaches the stream's cap ends there ("length"). */
Test(serve, token_caps_per_request_and_per_stream)
{
    const char *extra[] = {"--max-tokens", "50", "--max-stream-tokens", "30", NULL};
    server s = start(extra);
    reply r = post(&s, "/v1/completions", "{\"prompt\": \"ab\", \"max_tokens\": 51}");
    cr_assert_eq(r.status, 400, "%d %s", r.status, r.body);
    cr_assert(strstr(r.body, "'max_tokens'") && strstr(r.body, "50"), "%s", r.body);
    free(r.body);
    char *id = new_stream(&s, "In the beginning"); /* 16 tokens */
    char path[128];
    snprintf(path, sizeof path, "/v1/streams/%s/append", id);
    r = post(&s, path, "{\"text\": \" God created the heaven\"}"); /* 16 + 22 > 30 */
    cr_assert_eq(r.status, 400, "%d %s", r.status, r.body);
    cr_assert(strstr(r.body, "--max-stream-tokens 30"), "%s", r.body);
    free(r.body);
    snprintf(path, sizeof path, "/v1/streams/%s", id);
    reply g = http(&s, "GET", path, NULL, NULL, 0);
    cJSON *j = json_of(&g);
    cr_assert_eq(num_at(j, "tokens"), 16, "the refused text was not fed");
    cJSON_Delete(j);
    free(g.body);
    /* an answer of 40 asked: the stream fills to 30 and the answer ends
     * (with the token sampled from the full stream, which it cannot keep,
     * as at a full context) */
    snprintf(path, sizeof path, "/v1/streams/%s/generate", id);
    r = post(&s, path, "{\"max_tokens\": 40, \"temperature\": 0}");
    cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
    j = json_of(&r);
    cr_assert_str_eq(str_at(j, "choices.0.finish_reason"), "length");
    cr_assert_eq(num_at(cJSON_GetObjectItem(j, "usage"), "completion_tokens"), 15, "%s", r.body);
    cJSON_Delete(j);
    free(r.body);
    snprintf(path, sizeof path, "/v1/streams/%s", id);
    g = http(&s, "GET", path, NULL, NULL, 0);
    j = json_of(&g);
    cr_assert_eq(num_at(j, "tokens"), 30);
    cJSON_Delete(j);
    free(g.body);
    free(id);
    cr_assert_eq(stop(&s), 0);
}
