/* serve_request.c: `linattn serve`'s request bodies read into what the scheduler runs: sampling parameters (OpenAI's names over the config's defaults), prompts, chat messages; every field checked, a message naming what is wrong. */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "cli_config.h"
#include "serve.h"

/* Each returns 0, or 1 with msg set: the field is there but not what it must be. */
static int get_number(const cJSON *o, const char *key, double lo, double hi, int integer,
                      double *out, char *msg, size_t n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
        (integer && v->valuedouble != (double)(long long)v->valuedouble)) {
        snprintf(msg, n, "'%s' must be %s in [%g, %g]", key, integer ? "an integer" : "a number",
                 lo, hi);
        return 1;
    }
    *out = v->valuedouble;
    return 0;
}

/* The sampling parameters of a completion request, over the config's
 * defaults. chat: the answer ends at a newline unless stop is given. */
int srv_read_params(const srv_request *sv, const cJSON *o, int chat, srv_params *p, char *msg,
                       size_t n)
{
    memset(p, 0, sizeof *p);
    p->max_tokens = sv->gen->max_new_tokens;
    p->temperature = sv->gen->temperature;
    p->top_k = sv->gen->top_k;
    p->top_p = sv->gen->top_p;
    p->min_p = sv->gen->min_p;
    p->repeat_penalty = sv->gen->repeat_penalty;
    p->repeat_last_n = sv->gen->repeat_last_n;
    p->seed = sv->gen->seed;
    double v;
    const int vocab = sv->vocab;
#define NUM(key, lo, hi, integer, dst)                                                             \
    v = -1;                                                                                        \
    if (get_number(o, key, lo, hi, integer, &v, msg, n))                                           \
        return 1;                                                                                  \
    if (v != -1)                                                                                   \
        dst = v;
    NUM("max_tokens", 0, sv->max_tokens, 1, p->max_tokens)
    NUM("max_completion_tokens", 0, sv->max_tokens, 1, p->max_tokens)
    if (p->max_tokens > sv->max_tokens) /* the config's default past the server's cap */
        p->max_tokens = sv->max_tokens;
    NUM("temperature", 0, 100, 0, p->temperature)
    NUM("top_p", 1e-9, 1, 0, p->top_p)
    NUM("top_k", 0, 1e9, 1, p->top_k)
    NUM("min_p", 0, 0.999999, 0, p->min_p)
    NUM("repetition_penalty", 1e-6, 100, 0, p->repeat_penalty)
    NUM("repeat_last_n", 0, 4096, 1, p->repeat_last_n)
    NUM("seed", 0, 9007199254740991.0, 1, p->seed)
#undef NUM
    static const char *const refused[] = {"frequency_penalty", "presence_penalty"};
    for (int i = 0; i < 2; i++) {
        double x = 0;
        if (get_number(o, refused[i], -2, 2, 0, &x, msg, n))
            return 1;
        if (x != 0) {
            snprintf(msg, n, "'%s' is not supported: use repetition_penalty", refused[i]);
            return 1;
        }
    }
    double nn = 1;
    if (get_number(o, "n", 1, 1e9, 1, &nn, msg, n))
        return 1;
    if (nn != 1) {
        snprintf(msg, n, "'n' > 1 is not supported: send one request per completion");
        return 1;
    }
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(o, "logprobs");
    if (lp && !cJSON_IsNull(lp) && !cJSON_IsFalse(lp)) {
        snprintf(msg, n, "'logprobs' is not supported");
        return 1;
    }
    const cJSON *echo = cJSON_GetObjectItemCaseSensitive(o, "echo");
    if (echo && cJSON_IsTrue(echo)) {
        snprintf(msg, n, "'echo' is not supported");
        return 1;
    }
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(o, "stop");
    if (stop && !cJSON_IsNull(stop)) {
        const cJSON *one = stop;
        int count = cJSON_IsArray(stop) ? cJSON_GetArraySize(stop) : 1;
        if (count > SRV_MAX_STOPS) {
            snprintf(msg, n, "'stop': at most %d strings", SRV_MAX_STOPS);
            return 1;
        }
        for (int i = 0; i < count; i++) {
            if (cJSON_IsArray(stop))
                one = cJSON_GetArrayItem(stop, i);
            if (!cJSON_IsString(one) || !one->valuestring[0] ||
                strlen(one->valuestring) > SRV_MAX_STOP_LEN) {
                snprintf(msg, n, "'stop': each a string of 1..%d bytes", SRV_MAX_STOP_LEN);
                return 1;
            }
            snprintf(p->stops[p->n_stops++], SRV_MAX_STOP_LEN + 1, "%s", one->valuestring);
        }
    } else if (chat) { /* the answer ends where the format ends a turn */
        snprintf(p->stops[p->n_stops++], SRV_MAX_STOP_LEN + 1, "%s", cli_chat_end(sv->chat));
    }
    const cJSON *bias = cJSON_GetObjectItemCaseSensitive(o, "logit_bias");
    if (bias && !cJSON_IsNull(bias)) {
        if (!cJSON_IsObject(bias)) {
            snprintf(msg, n, "'logit_bias' must be an object of token id: bias");
            return 1;
        }
        const cJSON *b;
        cJSON_ArrayForEach(b, bias)
        {
            char *end;
            long tok = strtol(b->string, &end, 10);
            if (*end || end == b->string || tok < 0 || tok >= vocab || !cJSON_IsNumber(b) ||
                b->valuedouble < -100 || b->valuedouble > 100) {
                snprintf(msg, n, "'logit_bias': '%.40s' must be a token id 0..%d with a bias in "
                                 "[-100, 100]", b->string, vocab - 1);
                return 1;
            }
            if (p->n_bias == SRV_MAX_BIAS) {
                snprintf(msg, n, "'logit_bias': at most %d tokens", SRV_MAX_BIAS);
                return 1;
            }
            p->bias_token[p->n_bias] = (int)tok;
            p->bias[p->n_bias++] = b->valuedouble == -100 ? -INFINITY : (float)b->valuedouble;
        }
    }
    return 0;
}

/* Token ids of text (bos first when asked and the tokenizer starts with it). */
static int tokenize(const srv_request *sv, const char *text, size_t len, int bos, int **out, int *n,
                    char *msg, size_t mn)
{
    size_t count = 0;
    const int add = bos && linattn_tokenizer_adds_bos(sv->tokz);
    if (linattn_tokenizer_encode(sv->tokz, text, len, add, NULL, 0, &count) != LINATTN_OK ||
        count > 1u << 24) {
        snprintf(msg, mn, "the text cannot be tokenized: %s", linattn_last_error());
        return 1;
    }
    int *t = malloc((count ? count : 1) * sizeof *t);
    if (!t || linattn_tokenizer_encode(sv->tokz, text, len, add, t, count, &count) != LINATTN_OK) {
        free(t);
        snprintf(msg, mn, "out of memory");
        return 1;
    }
    *out = t;
    *n = (int)count;
    return 0;
}

/* The prompt of a completion: a string, one string in an array, or token ids. */
int srv_read_prompt(const srv_request *sv, const cJSON *v, int bos, int **out, int *n, char *msg,
                       size_t mn)
{
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 && cJSON_IsString(cJSON_GetArrayItem(v, 0)))
        v = cJSON_GetArrayItem(v, 0);
    if (cJSON_IsString(v))
        return tokenize(sv, v->valuestring, strlen(v->valuestring), bos, out, n, msg, mn);
    if (cJSON_IsArray(v)) {
        const int vocab = sv->vocab, count = cJSON_GetArraySize(v);
        int *t = malloc(((size_t)count + 1) * sizeof *t), i = 0;
        if (!t) {
            snprintf(msg, mn, "out of memory");
            return 1;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
            if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= vocab ||
                e->valuedouble != (double)(int)e->valuedouble) {
                free(t);
                snprintf(msg, mn, "'prompt': a string, or token ids 0..%d", vocab - 1);
                return 1;
            }
            t[i++] = (int)e->valuedouble;
        }
        *out = t;
        *n = i;
        return 0;
    }
    snprintf(msg, mn, "'prompt': a string, or token ids");
    return 1;
}

/* The plain chat format: each message's text and a newline. */
int srv_read_messages(const srv_request *sv, const cJSON *msgs, int bos, int **out, int *n,
                      char *msg, size_t mn)
{
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
        snprintf(msg, mn, "'messages': a non-empty array of {role, content}");
        return 1;
    }
    const int count = cJSON_GetArraySize(msgs);
    cli_chat_msg *m = malloc((size_t)count * sizeof *m);
    if (!m) {
        snprintf(msg, mn, "out of memory");
        return 1;
    }
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, msgs)
    {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(e, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(content) ||
            (strcmp(role->valuestring, "system") && strcmp(role->valuestring, "user") &&
             strcmp(role->valuestring, "assistant"))) {
            free(m);
            snprintf(msg, mn, "'messages'[%d]: role system, user or assistant and a string "
                              "content", i);
            return 1;
        }
        m[i].role = role->valuestring;
        m[i].content = content->valuestring;
        i++;
    }
    char *text = NULL;
    size_t len = 0;
    int failed = cli_chat_render((cli_chat)sv->chat, m, count, bos, &text, &len) != 0;
    free(m);
    if (failed) {
        snprintf(msg, mn, "out of memory");
        return 1;
    }
    int rc = tokenize(sv, text, len, bos, out, n, msg, mn);
    free(text);
    return rc;
}
