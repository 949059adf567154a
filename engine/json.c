/* json.c: cJSON made strict: one value, nothing after it, no key twice, numbers that fit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* An object or array on the way down from the top, for messages. */
struct frame {
    const struct frame *up;
    const char *key; /* the member's key; NULL: an array element */
    int index;
};

/* Appends the path of f from the top ("a.b[3]", keys that are not plain
 * words quoted) to out[size]; "the top level" for none. Walks up once per
 * level (only an error needs it), so that check_tree's frames stay small. */
static void path_of(const struct frame *f, char *out, size_t size)
{
    size_t at = strlen(out);
    int depth = 0;
    for (const struct frame *g = f; g; g = g->up)
        depth++;
    if (depth == 0) {
        snprintf(out + at, size - at, "the top level");
        return;
    }
    int first = 1;
    for (int level = depth - 1; level >= 0 && at + 1 < size; level--) {
        const struct frame *c = f;
        for (int k = 0; k < level; k++)
            c = c->up;
        if (level > 16 && level < depth - 16) { /* the outermost and innermost 16 */
            if (level == depth - 17)
                at += (size_t)snprintf(out + at, size - at, "...");
            continue;
        }
        if (!c->key) {
            at += (size_t)snprintf(out + at, size - at, "[%d]", c->index);
        } else {
            int plain = c->key[0] != '\0';
            for (const char *p = c->key; *p && plain; p++)
                plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                        (*p >= '0' && *p <= '9') || *p == '_' || *p == '-';
            at += (size_t)snprintf(out + at, size - at, plain ? "%s%.80s" : "%s\"%.80s\"",
                                   first ? "" : ".", c->key);
        }
        first = 0;
    }
}

struct key_at {
    const char *key;
    int pos;
};

static int by_key_then_pos(const void *a, const void *b)
{
    const struct key_at *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* The first key of object o (in key order) that it holds twice, or NULL;
 * *nomem set when the sort buffer could not be had. Small objects are
 * compared pairwise, large ones (a vocabulary of 100k+ keys) sorted. */
static const char *duplicate_key(const cJSON *o, int *nomem)
{
    int n = 0;
    for (const cJSON *c = o->child; c; c = c->next)
        n++;
    if (n < 2)
        return NULL;
    if (n <= 16) {
        for (const cJSON *a = o->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (strcmp(a->string, b->string) == 0)
                    return a->string;
        return NULL;
    }
    struct key_at *keys = mem_alloc((size_t)n * sizeof *keys);
    if (!keys) {
        *nomem = 1;
        return NULL;
    }
    int i = 0;
    for (const cJSON *c = o->child; c; c = c->next, i++)
        keys[i] = (struct key_at){c->string, i};
    qsort(keys, (size_t)n, sizeof *keys, by_key_then_pos);
    const char *dup = NULL;
    for (i = 1; i < n && !dup; i++)
        if (strcmp(keys[i - 1].key, keys[i].key) == 0)
            dup = keys[i].key;
    mem_free(keys);
    return dup;
}

/* Checks the tree under v (at frame f): keys once per object, numbers
 * finite. cJSON caps the depth, so the recursion is bounded. */
static linattn_status check_tree(const cJSON *v, const struct frame *f, char *why,
                                 size_t why_size)
{
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) {
        snprintf(why, why_size, "the number at ");
        path_of(f, why, why_size);
        size_t at = strlen(why);
        snprintf(why + at, why_size - at, " does not fit a double");
        return LINATTN_ERR_FORMAT;
    }
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return LINATTN_OK;
    if (cJSON_IsObject(v)) {
        int nomem = 0;
        const char *dup = duplicate_key(v, &nomem);
        if (nomem) {
            snprintf(why, why_size, "out of memory");
            return LINATTN_ERR_NOMEM;
        }
        if (dup) {
            snprintf(why, why_size, "key \"%.200s\" appears twice%s", dup, f ? " in " : "");
            if (f)
                path_of(f, why, why_size);
            size_t at = strlen(why);
            snprintf(why + at, why_size - at, " (a key may be given once)");
            return LINATTN_ERR_FORMAT;
        }
    }
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        struct frame down = {f, cJSON_IsObject(v) ? c->string : NULL, i};
        linattn_status st = check_tree(c, &down, why, why_size);
        if (st != LINATTN_OK)
            return st;
    }
    return LINATTN_OK;
}

/* Whether text[0..n) opens more than JSON_MAX_DEPTH arrays and objects at
 * once (outside strings): what made cJSON give up, when it did there. */
static int too_deep(const char *text, size_t n)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > JSON_MAX_DEPTH)
                return 1;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

linattn_status json_parse_strict(const char *text, size_t len, cJSON **out, char *why,
                                 size_t why_size)
{
    *out = NULL;
    why[0] = '\0';
    const char *end = NULL;
    cJSON *root = len ? cJSON_ParseWithLengthOpts(text, len, &end, 0) : NULL;
    if (!root) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        if (len == 0)
            snprintf(why, why_size, "not valid JSON (empty: a value expected)");
        else if (too_deep(text, at < len ? at + 1 : len))
            snprintf(why, why_size, "nested deeper than %d levels (near byte %zu)",
                     JSON_MAX_DEPTH, at);
        else
            snprintf(why, why_size, "not valid JSON (near byte %zu)", at);
        return LINATTN_ERR_FORMAT;
    }
    for (const char *c = end; c < text + len; c++)
        if (*c != ' ' && *c != '\t' && *c != '\n' && *c != '\r') {
            snprintf(why, why_size, "bytes after the JSON value (at byte %zu of %zu)",
                     (size_t)(c - text), len);
            cJSON_Delete(root);
            return LINATTN_ERR_FORMAT;
        }
    linattn_status st = check_tree(root, NULL, why, why_size);
    if (st != LINATTN_OK) {
        cJSON_Delete(root);
        return st;
    }
    *out = root;
    return LINATTN_OK;
}

linattn_status json_parse_file(const char *path, const char *text, size_t len, int want_object,
                               cJSON **out)
{
    char why[700];
    linattn_status st = json_parse_strict(text, len, out, why, sizeof why);
    if (st == LINATTN_OK && want_object && !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        snprintf(why, sizeof why, "not a JSON object");
        st = LINATTN_ERR_FORMAT;
    }
    return st == LINATTN_OK ? st : linattn_err(st, "%s: %s", path, why);
}
