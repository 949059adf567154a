/* tokenizer_hf.c: Hugging Face tokenizer.json BPE (byte-level and sentencepiece forms, Split pre-tokenizers), added tokens, bos/eos from the files beside it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "json.h"
#include "tokenizer.h"

#define MAX_SIDE_FILE_BYTES ((size_t)16 << 20) /* config.json, tokenizer_config.json */
#define METASPACE "\xe2\x96\x81"              /* U+2581, sentencepiece's space */

/* ------------------------------------------------------------------------ */
/* JSON helpers                                                              */
/* ------------------------------------------------------------------------ */

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *get_str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A boolean field; dflt when absent or null. -1 when it is something else. */
static int get_bool(const cJSON *o, const char *key, int dflt)
{
    const cJSON *v = get(o, key);
    if (!v || cJSON_IsNull(v))
        return dflt;
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

/* A whole number in [0, hi]; 0 if it is not one. */
static int json_id(const cJSON *v, long hi, long *out)
{
    if (!cJSON_IsNumber(v))
        return 0;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= (double)hi) || d != floor(d))
        return 0;
    *out = (long)d;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* GPT-2's byte <-> character map                                           */
/* ------------------------------------------------------------------------ */

/* The printable bytes stand for themselves; the others (0-32, 127-160,
 * 173) for 256, 257, ... in order. */
static int byte_char(int b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))
        return b;
    int n = 0;
    for (int c = 0; c < b; c++)
        n += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255));
    return 256 + n;
}

static int put_utf8(char *out, int cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The code point at s[0..n) and its length; a malformed sequence is its
 * first byte alone, as code point -1. */
static int get_utf8(const unsigned char *s, size_t n, int *len)
{
    int l = tok_utf8_len(s[0]);
    if (l == 1 || (size_t)l > n) {
        *len = 1;
        return s[0] < 0x80 ? s[0] : -1;
    }
    int cp = s[0] & (0x3F >> (l - 1));
    for (int i = 1; i < l; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *len = 1;
            return -1;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *len = l;
    return cp;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

/* Where the loader is: the file, and what it has read. */
typedef struct hf_load {
    const char *path;
    linattn_tokenizer *t;
    const char **str;   /* [vocab] each id's vocab string (NULL: none) */
    const char **content; /* [vocab] an added token's content (NULL: not added) */
} hf_load;

/* A merge "a b" or ["a", "b"]: its two halves. */
static linattn_status merge_halves(hf_load *L, const cJSON *m, long i, const char **a, size_t *la,
                                   const char **b, size_t *lb)
{
    if (cJSON_IsString(m)) {
        const char *s = m->valuestring, *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' '))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: model.merges[%ld] '%.80s': expected two tokens split by one "
                               "space", L->path, i, s);
        *a = s;
        *la = (size_t)(sp - s);
        *b = sp + 1;
        *lb = strlen(sp + 1);
        return LINATTN_OK;
    }
    if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
        cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
        *a = cJSON_GetArrayItem(m, 0)->valuestring;
        *b = cJSON_GetArrayItem(m, 1)->valuestring;
        *la = strlen(*a);
        *lb = strlen(*b);
        return LINATTN_OK;
    }
    return linattn_err(LINATTN_ERR_FORMAT,
                       "%s: model.merges[%ld]: expected a string \"a b\" or a pair [\"a\", \"b\"]",
                       L->path, i);
}

static linattn_status load_merges(hf_load *L, const cJSON *merges)
{
    linattn_tokenizer *t = L->t;
    long n = merges ? cJSON_GetArraySize(merges) : 0;
    if (merges && !cJSON_IsArray(merges))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: model.merges: expected an array", L->path);
    if (n == 0)
        return LINATTN_OK;
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    t->pair_key = mem_alloc(cap * sizeof *t->pair_key);
    t->pair_rank = mem_alloc(cap * sizeof *t->pair_rank);
    t->pair_id = mem_alloc(cap * sizeof *t->pair_id);
    char *both = mem_alloc(2 * (size_t)t->max_piece + 2);
    if (!t->pair_key || !t->pair_rank || !t->pair_id || !both) {
        mem_free(both);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for %ld merges", L->path, n);
    }
    memset(t->pair_rank, 0xff, cap * sizeof *t->pair_rank);
    t->pair_mask = cap - 1;
    long i = 0;
    linattn_status st = LINATTN_OK;
    for (const cJSON *m = merges->child; m && st == LINATTN_OK; m = m->next, i++) {
        const char *a = "", *b = "";
        size_t la = 0, lb = 0;
        if ((st = merge_halves(L, m, i, &a, &la, &b, &lb)) != LINATTN_OK)
            break;
        int ia = tok_lookup(t, a, la), ib = tok_lookup(t, b, lb), im = -1;
        if (ia >= 0 && ib >= 0 && la + lb <= t->max_piece) {
            memcpy(both, a, la);
            memcpy(both + la, b, lb);
            im = tok_lookup(t, both, la + lb);
        }
        if (ia < 0 || ib < 0 || im < 0) {
            st = linattn_err(LINATTN_ERR_FORMAT,
                             "%s: model.merges[%ld] ('%.*s' + '%.*s'): %s is not in the "
                             "vocabulary", L->path, i, (int)(la < 40 ? la : 40), a,
                             (int)(lb < 40 ? lb : 40), b,
                             ia < 0 ? "the first" : ib < 0 ? "the second" : "their join");
            break;
        }
        uint64_t key = tok_pair_of(ia, ib);
        size_t s = tok_pair_slot(key, t->pair_mask);
        while (t->pair_rank[s] >= 0 && t->pair_key[s] != key)
            s = (s + 1) & t->pair_mask;
        if (t->pair_rank[s] < 0) { /* a repeated merge keeps its first rank */
            t->pair_key[s] = key;
            t->pair_rank[s] = (int32_t)i;
            t->pair_id[s] = im;
        }
    }
    mem_free(both);
    return st;
}

/* A Split pre-tokenizer: pattern {"Regex": ...} or {"String": ...},
 * behavior, invert. */
static linattn_status read_split(const char *where, linattn_tokenizer *t, const cJSON *sp)
{
    static const char *const behaviors[] = {"Isolated", "Removed", "MergedWithPrevious",
                                            "MergedWithNext", "Contiguous"};
    const cJSON *pat = get(sp, "pattern");
    const char *re = get_str(pat, "Regex"), *lit = get_str(pat, "String");
    if (!re == !lit)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: pattern: expected {\"Regex\": ...} or {\"String\": ...}", where);
    const char *b = get_str(sp, "behavior");
    int bi = -1;
    for (int i = 0; b && i < 5; i++)
        if (!strcmp(b, behaviors[i]))
            bi = i;
    if (bi < 0)
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: behavior %s%.40s%s is not supported (Isolated, Removed, "
                           "MergedWithPrevious, MergedWithNext, Contiguous)", where,
                           b ? "'" : "", b ? b : "(not a string)", b ? "'" : "");
    int invert = get_bool(sp, "invert", 0);
    if (invert < 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: invert: expected true or false", where);
    static const split_behavior as[] = {SPLIT_ISOLATED, SPLIT_REMOVED, SPLIT_MERGED_PREV,
                                        SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS};
    return tok_split_add(t, where, re ? re : lit, !re, as[bi], invert);
}

/* Reads the pre_tokenizer and normalizer: which form, and its settings. */
static linattn_status read_form(hf_load *L, const cJSON *root)
{
    linattn_tokenizer *t = L->t;
    const cJSON *pre = get(root, "pre_tokenizer"), *norm = get(root, "normalizer");
    t->form = HF_PLAIN;
    t->prepend = PREPEND_NEVER;
    memcpy(t->meta, METASPACE, sizeof METASPACE);
    t->meta_len = sizeof METASPACE - 1;

    /* the pre-tokenizers: one, or a Sequence */
    const cJSON *list[16];
    int n = 0;
    if (pre && !cJSON_IsNull(pre)) {
        const char *type = get_str(pre, "type");
        if (type && !strcmp(type, "Sequence")) {
            const cJSON *seq = get(pre, "pretokenizers");
            for (const cJSON *p = cJSON_IsArray(seq) ? seq->child : NULL; p && n < 16; p = p->next)
                list[n++] = p;
        } else
            list[n++] = pre;
    }
    int split = 0;
    linattn_status st;
    for (int i = 0; i < n; i++) {
        const char *type = get_str(list[i], "type");
        char where[4200];
        if (n > 1)
            snprintf(where, sizeof where, "%s: pre_tokenizer[%d] %s", L->path, i, type ? type : "");
        else
            snprintf(where, sizeof where, "%s: pre_tokenizer %s", L->path, type ? type : "");
        if (type && !strcmp(type, "ByteLevel")) {
            t->form = HF_BYTELEVEL;
            t->add_prefix_space = get_bool(list[i], "add_prefix_space", 1) == 1;
            t->use_regex = get_bool(list[i], "use_regex", 1) == 1;
            /* it adds its space to each piece the splits before it made */
            if (split && t->add_prefix_space)
                return linattn_err(LINATTN_ERR_UNSUPPORTED,
                                   "%s: add_prefix_space after a Split is not supported", where);
            st = t->use_regex ? tok_split_add(t, where, tok_gpt2_pattern, 0, SPLIT_ISOLATED, 0)
                              : LINATTN_OK;
            if (st != LINATTN_OK)
                return st;
        } else if (type && !strcmp(type, "Split")) {
            /* after ByteLevel it would see the bytes as GPT-2's characters */
            if (t->form == HF_BYTELEVEL)
                return linattn_err(LINATTN_ERR_UNSUPPORTED,
                                   "%s: a Split after ByteLevel is not supported", where);
            if ((st = read_split(where, t, list[i])) != LINATTN_OK)
                return st;
            split = 1;
        } else if (type && !strcmp(type, "Metaspace")) {
            t->form = HF_METASPACE;
            const cJSON *rv = get(list[i], "replacement");
            const char *r = get_str(list[i], "replacement");
            if (rv && !cJSON_IsNull(rv) && (!r || !r[0] || strlen(r) >= sizeof t->meta))
                return linattn_err(LINATTN_ERR_FORMAT,
                                   "%s: pre_tokenizer Metaspace: replacement %s%.40s%s: expected "
                                   "a string of 1 to %zu bytes", L->path, r ? "'" : "",
                                   r ? r : "(not a string)", r ? "'" : "", sizeof t->meta - 1);
            if (r) {
                strcpy(t->meta, r);
                t->meta_len = strlen(r);
            }
            const cJSON *sv = get(list[i], "prepend_scheme");
            const char *scheme = get_str(list[i], "prepend_scheme");
            if (sv && !cJSON_IsNull(sv) &&
                (!scheme || (strcmp(scheme, "always") && strcmp(scheme, "first") &&
                             strcmp(scheme, "never"))))
                return linattn_err(LINATTN_ERR_FORMAT,
                                   "%s: pre_tokenizer Metaspace: prepend_scheme %s%.40s%s: "
                                   "expected \"always\", \"first\" or \"never\"", L->path,
                                   scheme ? "'" : "", scheme ? scheme : "(not a string)",
                                   scheme ? "'" : "");
            t->prepend = scheme ? (!strcmp(scheme, "always") ? PREPEND_ALWAYS
                                   : !strcmp(scheme, "first") ? PREPEND_FIRST
                                                              : PREPEND_NEVER)
                                : get_bool(list[i], "add_prefix_space", 1) == 1 ? PREPEND_ALWAYS
                                                                                : PREPEND_NEVER;
            t->meta_split = get_bool(list[i], "split", 1) == 1;
            t->meta_pretok = 1;
        } else
            return linattn_err(LINATTN_ERR_UNSUPPORTED,
                               "%s: pre_tokenizer '%s' is not supported (ByteLevel, Metaspace, "
                               "Split)", L->path, type ? type : "(no type)");
    }
    if (split && t->form == HF_METASPACE)
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: pre_tokenizer 'Split' with Metaspace is not supported", L->path);

    /* the normalizer: NFC (taken as a no-op), or sentencepiece's Prepend and
     * Replace(' ', U+2581) (the metaspace form without a split) */
    n = 0;
    if (norm && !cJSON_IsNull(norm)) {
        const char *type = get_str(norm, "type");
        if (type && !strcmp(type, "Sequence")) {
            const cJSON *seq = get(norm, "normalizers");
            for (const cJSON *p = cJSON_IsArray(seq) ? seq->child : NULL; p && n < 16; p = p->next)
                list[n++] = p;
        } else
            list[n++] = norm;
    }
    for (int i = 0; i < n; i++) {
        const char *type = get_str(list[i], "type");
        if (type && !strcmp(type, "NFC"))
            continue;
        if (type && !strcmp(type, "Prepend")) {
            const char *p = get_str(list[i], "prepend");
            if (p && strlen(p) < sizeof t->meta && p[0]) {
                strcpy(t->meta, p);
                t->meta_len = strlen(p);
            }
            t->form = t->form == HF_BYTELEVEL ? t->form : HF_METASPACE;
            t->prepend = PREPEND_ALWAYS;
            continue;
        }
        if (type && !strcmp(type, "Replace")) {
            const char *from = get_str(get(list[i], "pattern"), "String");
            const char *to = get_str(list[i], "content");
            if (from && to && !strcmp(from, " ") && to[0] && strlen(to) < sizeof t->meta) {
                strcpy(t->meta, to);
                t->meta_len = strlen(to);
                t->form = t->form == HF_BYTELEVEL ? t->form : HF_METASPACE;
                continue;
            }
        }
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: normalizer '%s' is not supported (NFC, Prepend, Replace ' ')",
                           L->path, type ? type : "(no type)");
    }
    t->strip_start = t->form == HF_METASPACE && t->prepend != PREPEND_NEVER;
    t->name = t->form == HF_BYTELEVEL   ? "hf byte-level BPE"
              : t->form == HF_METASPACE ? "hf sentencepiece BPE"
                                        : "hf BPE";
    return LINATTN_OK;
}

/* The id of a token named by its text: an added token's content, else the vocabulary's. */
static int token_named(const linattn_tokenizer *t, const char *s)
{
    size_t n = strlen(s);
    for (int i = 0; i < t->n_added; i++) {
        int id = t->added[i];
        if (t->text_off[id + 1] - t->text_off[id] == n && !memcmp(t->text + t->text_off[id], s, n))
            return id;
    }
    return tok_lookup(t, s, n);
}

/* A file beside tokenizer.json, parsed; *root NULL when it does not exist. */
static linattn_status side_file(const char *dir, const char *name, char *path, size_t size,
                                cJSON **root)
{
    *root = NULL;
    snprintf(path, size, "%s/%s", dir, name);
    /* Only a name that is not there at all is "no such file": a symlink
     * loop, a dangling link or a file that cannot be read is read, and its
     * error reported, not taken for an absent file. */
    struct stat sb;
    if (lstat(path, &sb) != 0 && errno == ENOENT)
        return LINATTN_OK;
    char *text = NULL;
    size_t len = 0;
    linattn_status st = safe_read_all(path, name, MAX_SIDE_FILE_BYTES, &text, &len);
    if (st == LINATTN_OK)
        st = json_parse_file(path, text, len, 1, root);
    mem_free(text);
    return st;
}

/* bos_token / eos_token of tokenizer_config.json: a string, or {"content": ...}. */
static linattn_status config_token(const linattn_tokenizer *t, const char *path, const cJSON *cfg,
                                   const char *key, int *id)
{
    const cJSON *v = get(cfg, key);
    if (!v || cJSON_IsNull(v))
        return LINATTN_OK;
    const char *s = cJSON_IsString(v) ? v->valuestring : get_str(v, "content");
    if (!s)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: %s: expected a string or {\"content\": ...}",
                           path, key);
    if ((*id = token_named(t, s)) < 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: %s '%.60s' is not a token of the tokenizer",
                           path, key, s);
    return LINATTN_OK;
}

/* bos_token_id / eos_token_id of config.json: a number or a list (its first). */
static linattn_status config_id(const linattn_tokenizer *t, const char *path, const cJSON *cfg,
                                const char *key, int *id)
{
    const cJSON *v = get(cfg, key);
    if (!v || cJSON_IsNull(v))
        return LINATTN_OK;
    if (cJSON_IsArray(v))
        v = cJSON_GetArrayItem(v, 0);
    long x;
    if (!v || !json_id(v, t->vocab - 1, &x))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: %s: expected a token id in 0..%d", path, key,
                           t->vocab - 1);
    *id = (int)x;
    return LINATTN_OK;
}

/* bos, eos and whether a text starts with bos: tokenizer_config.json's
 * token names, else config.json's ids; tokenizer_config.json's
 * add_bos_token, else whether tokenizer.json's post-processor template
 * starts with the bos token. */
static linattn_status read_bos_eos(hf_load *L, const cJSON *root, const char *dir)
{
    linattn_tokenizer *t = L->t;
    int tmpl_first = -1;
    const cJSON *post = get(root, "post_processor");
    const cJSON *procs[8];
    int np = 0;
    if (post && get_str(post, "type") && !strcmp(get_str(post, "type"), "Sequence")) {
        const cJSON *seq = get(post, "processors");
        for (const cJSON *p = cJSON_IsArray(seq) ? seq->child : NULL; p && np < 8; p = p->next)
            procs[np++] = p;
    } else if (post)
        procs[np++] = post;
    for (int i = 0; i < np; i++) {
        const char *type = get_str(procs[i], "type");
        const cJSON *single = get(procs[i], "single");
        if (type && !strcmp(type, "TemplateProcessing") && cJSON_IsArray(single)) {
            const char *name = get_str(get(cJSON_GetArrayItem(single, 0), "SpecialToken"), "id");
            if (name)
                tmpl_first = token_named(t, name);
        }
    }
    if (!dir)
        return LINATTN_OK;
    char path[4200];
    cJSON *cfg = NULL;
    linattn_status st = side_file(dir, "tokenizer_config.json", path, sizeof path, &cfg);
    int bos = -1, eos = -1, add = -1;
    if (st == LINATTN_OK && cfg) {
        if ((st = config_token(t, path, cfg, "bos_token", &bos)) == LINATTN_OK)
            st = config_token(t, path, cfg, "eos_token", &eos);
        add = get_bool(cfg, "add_bos_token", -1);
    }
    cJSON_Delete(cfg);
    cfg = NULL;
    if (st == LINATTN_OK && (bos < 0 || eos < 0) &&
        (st = side_file(dir, "config.json", path, sizeof path, &cfg)) == LINATTN_OK && cfg) {
        if (bos < 0)
            st = config_id(t, path, cfg, "bos_token_id", &bos);
        if (st == LINATTN_OK && eos < 0)
            st = config_id(t, path, cfg, "eos_token_id", &eos);
    }
    cJSON_Delete(cfg);
    if (st != LINATTN_OK)
        return st;
    t->bos = bos;
    t->eos = eos;
    t->add_bos = bos >= 0 && (add >= 0 ? add : tmpl_first >= 0 && tmpl_first == bos);
    return LINATTN_OK;
}

/* The decoded bytes of every token (t->text), once pieces are in place. */
static linattn_status build_text(hf_load *L, size_t bytes)
{
    linattn_tokenizer *t = L->t;
    if (!(t->text = mem_alloc(bytes + 1)))
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", L->path);
    int char_byte[324]; /* byte-level: the byte of characters 0..323; -1: none */
    if (t->form == HF_BYTELEVEL) {
        for (int c = 0; c < 324; c++)
            char_byte[c] = -1;
        for (int b = 0; b < 256; b++)
            char_byte[byte_char(b)] = b;
    }
    size_t at = 0;
    for (int id = 0; id < t->vocab; id++) {
        const unsigned char *s = (const unsigned char *)t->piece + t->piece_off[id];
        size_t n = tok_piece_len(t, id), i = 0;
        t->text_off[id] = at;
        if (L->content[id]) { /* an added token decodes to its content, whatever the form */
            size_t c = strlen(L->content[id]);
            memcpy(t->text + at, L->content[id], c);
            at += c;
            continue;
        }
        if (t->form == HF_BYTELEVEL) {
            while (i < n) {
                int l, cp = get_utf8(s + i, n - i, &l);
                if (cp >= 0 && cp < 324 && char_byte[cp] >= 0)
                    t->text[at++] = (char)char_byte[cp];
                else {
                    memcpy(t->text + at, s + i, (size_t)l);
                    at += (size_t)l;
                }
                i += (size_t)l;
            }
            continue;
        }
        if (t->form == HF_METASPACE && t->byte_fallback && n == 6 && !memcmp(s, "<0x", 3) &&
            s[5] == '>' && strchr("0123456789ABCDEF", s[3]) && strchr("0123456789ABCDEF", s[4]) &&
            s[3] && s[4]) {
            t->text[at++] = (char)strtol((const char *)s + 3, NULL, 16);
            continue;
        }
        while (i < n) {
            if (t->form == HF_METASPACE && n - i >= t->meta_len &&
                !memcmp(s + i, t->meta, t->meta_len)) {
                t->text[at++] = ' ';
                i += t->meta_len;
            } else
                t->text[at++] = (char)s[i++];
        }
    }
    t->text_off[t->vocab] = at;
    return LINATTN_OK;
}

typedef struct added_len {
    size_t len;
    int id;
} added_len;

/* Longest first (a longer token wins where two match), then by id. */
static int longest_first(const void *a, const void *b)
{
    const added_len *x = a, *y = b;
    return x->len < y->len ? 1 : x->len > y->len ? -1 : x->id - y->id;
}

static linattn_status load(hf_load *L, const cJSON *root, const char *dir)
{
    const cJSON *model = get(root, "model");
    if (!cJSON_IsObject(model))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: no \"model\" object (a tokenizer.json?)",
                           L->path);
    const char *type = get_str(model, "type");
    const cJSON *vocab = get(model, "vocab"), *merges = get(model, "merges");
    if (type ? strcmp(type, "BPE") != 0 : !merges)
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: model.type '%.40s' is not supported (only BPE)", L->path,
                           type ? type : "(none)");
    if (!cJSON_IsObject(vocab))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: model.vocab: expected an object", L->path);
    const char *cont = get_str(model, "continuing_subword_prefix");
    const char *suffix = get_str(model, "end_of_word_suffix");
    if ((cont && cont[0]) || (suffix && suffix[0]))
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: model.%s is not supported", L->path,
                           cont && cont[0] ? "continuing_subword_prefix" : "end_of_word_suffix");

    /* ids: the vocabulary's and the added tokens' */
    long max_id = -1, x = 0;
    size_t bytes = 0;
    for (const cJSON *v = vocab->child; v; v = v->next) {
        if (!json_id(v, TOK_MAX_VOCAB - 1, &x))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: model.vocab['%.60s']: expected a token id in 0..%d", L->path,
                               v->string, TOK_MAX_VOCAB - 1);
        max_id = x > max_id ? x : max_id;
        bytes += strlen(v->string);
    }
    const cJSON *added = get(root, "added_tokens");
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: added_tokens: expected an array", L->path);
    int n_added = 0;
    for (const cJSON *a = cJSON_IsArray(added) ? added->child : NULL; a; a = a->next, n_added++) {
        const char *content = get_str(a, "content");
        if (!json_id(get(a, "id"), TOK_MAX_VOCAB - 1, &x) || !content || !content[0])
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: added_tokens[%d]: expected an \"id\" in 0..%d and a "
                               "non-empty \"content\"", L->path, n_added, TOK_MAX_VOCAB - 1);
        max_id = x > max_id ? x : max_id;
        bytes += 2 * strlen(content); /* its piece (when not in the vocabulary) and its text */
    }
    if (max_id < 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: no tokens (model.vocab is empty)", L->path);
    long count = cJSON_GetArraySize(vocab) + n_added;
    if (max_id >= 2 * count + 1024) /* every id costs memory: refuse a sparse table */
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: ids run up to %ld for %ld tokens (model.vocab and added_tokens)",
                           L->path, max_id, count);

    linattn_status st = tok_alloc(TOK_HF, L->path, (int)max_id + 1, bytes, &L->t);
    if (st != LINATTN_OK)
        return st;
    linattn_tokenizer *t = L->t;
    t->name = "hf BPE";
    L->str = mem_calloc((size_t)t->vocab, sizeof *L->str);
    L->content = mem_calloc((size_t)t->vocab, sizeof *L->content);
    t->added = mem_alloc(((size_t)n_added + 1) * sizeof *t->added);
    t->added_strip = mem_calloc((size_t)n_added + 1, 1);
    if (!L->str || !L->content || !t->added || !t->added_strip)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", L->path);
    for (const cJSON *v = vocab->child; v; v = v->next) {
        json_id(v, TOK_MAX_VOCAB - 1, &x);
        if (L->str[x])
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: model.vocab: id %ld is given to both '%.40s' and '%.40s'",
                               L->path, x, L->str[x], v->string);
        L->str[x] = v->string;
    }
    for (const cJSON *a = cJSON_IsArray(added) ? added->child : NULL; a; a = a->next) {
        json_id(get(a, "id"), TOK_MAX_VOCAB - 1, &x);
        if (!L->str[x])
            L->str[x] = get_str(a, "content");
        if (L->content[x])
            return linattn_err(LINATTN_ERR_FORMAT, "%s: added_tokens: id %ld is added twice",
                               L->path, x);
        L->content[x] = get_str(a, "content");
        t->added_strip[t->n_added] = (unsigned char)((get_bool(a, "lstrip", 0) == 1) |
                                                     (get_bool(a, "rstrip", 0) == 1) << 1 |
                                                     (get_bool(a, "special", 0) == 1) << 2);
        t->added[t->n_added++] = (int)x;
    }
    size_t at = 0;
    for (int id = 0; id < t->vocab; id++) {
        size_t n = L->str[id] ? strlen(L->str[id]) : 0;
        t->piece_off[id] = at;
        memcpy(t->piece + at, L->str[id] ? L->str[id] : "", n);
        at += n;
    }
    t->piece_off[t->vocab] = at;
    if ((st = tok_build_hash(t)) != LINATTN_OK || (st = read_form(L, root)) != LINATTN_OK)
        return st;

    int fb = get_bool(model, "byte_fallback", 0), fuse = get_bool(model, "fuse_unk", 0);
    int ign = get_bool(model, "ignore_merges", 0);
    if (fb < 0 || fuse < 0 || ign < 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: model.%s: expected true or false", L->path,
                           fb < 0 ? "byte_fallback" : fuse < 0 ? "fuse_unk" : "ignore_merges");
    t->byte_fallback = fb;
    t->fuse_unk = fuse;
    t->ignore_merges = ign;
    const char *unk = get_str(model, "unk_token");
    if (unk && (t->unk = tok_lookup(t, unk, strlen(unk))) < 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: model.unk_token '%.60s' is not in the "
                           "vocabulary", L->path, unk);
    for (int b = 0; b < 256; b++) {
        char s[8];
        int n = t->form == HF_BYTELEVEL ? put_utf8(s, byte_char(b))
                                        : snprintf(s, sizeof s, "<0x%02X>", b);
        if (t->form == HF_BYTELEVEL || t->byte_fallback)
            t->byte_token[b] = tok_lookup(t, s, (size_t)n);
    }
    if ((st = load_merges(L, merges)) != LINATTN_OK || (st = build_text(L, bytes)) != LINATTN_OK)
        return st;
    /* matched in the text longest first */
    added_len *order = mem_alloc(((size_t)t->n_added + 1) * sizeof *order);
    unsigned char *strip = mem_alloc((size_t)t->n_added + 1);
    if (!order || !strip) {
        mem_free(order);
        mem_free(strip);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", L->path);
    }
    for (int i = 0; i < t->n_added; i++) {
        int id = t->added[i];
        order[i].len = t->text_off[id + 1] - t->text_off[id];
        order[i].id = i; /* its place, to carry the strip flags along */
    }
    qsort(order, (size_t)t->n_added, sizeof *order, longest_first);
    int *ids = (int *)mem_alloc(((size_t)t->n_added + 1) * sizeof *ids);
    if (!ids) {
        mem_free(order);
        mem_free(strip);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", L->path);
    }
    for (int i = 0; i < t->n_added; i++) {
        ids[i] = t->added[order[i].id];
        strip[i] = t->added_strip[order[i].id];
    }
    mem_free(t->added);
    mem_free(t->added_strip);
    mem_free(order);
    t->added = ids;
    t->added_strip = strip;
    if (t->n_added && (st = tok_added_build(t, L->path)) != LINATTN_OK)
        return st;
    return read_bos_eos(L, root, dir);
}

linattn_status tok_load_hf_root(const char *path, const cJSON *root, linattn_tokenizer **out)
{
    *out = NULL;
    hf_load L = {path, NULL, NULL, NULL};
    linattn_status st = load(&L, root, NULL);
    mem_free(L.str);
    mem_free(L.content);
    if (st != LINATTN_OK) {
        linattn_tokenizer_free(L.t);
        return st;
    }
    *out = L.t;
    return LINATTN_OK;
}

linattn_status tok_load_hf(const char *path, const char *json, size_t len, const char *dir,
                           linattn_tokenizer **out)
{
    *out = NULL;
    cJSON *root;
    linattn_status st = json_parse_file(path, json, len, 1, &root);
    if (st != LINATTN_OK)
        return st;
    hf_load L = {path, NULL, NULL, NULL};
    st = load(&L, root, dir);
    mem_free(L.str);
    mem_free(L.content);
    cJSON_Delete(root);
    if (st != LINATTN_OK) {
        linattn_tokenizer_free(L.t);
        return st;
    }
    *out = L.t;
    return LINATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct enc {
    const linattn_tokenizer *t;
    tok_vec *out;
    char *buf;     /* a segment as the vocabulary spells it */
    char *scratch; /* a word mapped to byte-level characters */
    size_t buf_cap;
    const char *text, *seg; /* the whole text; the segment in it that buf spells */
    size_t seg_len, prefix; /* ...and the bytes buf has before the segment's first */
    size_t base;            /* where the text starts in the whole */
    void *md;               /* match space of the pre-tokenizer's splits */
} enc;

/* Where in the text the byte at p (in the text, or in buf) comes from. */
static size_t text_offset(const enc *e, const char *p)
{
    if (!(p >= e->buf && p < e->buf + e->buf_cap))
        return e->base + (size_t)(p - e->text);
    size_t at = e->prefix, want = (size_t)(p - e->buf), i = 0;
    if (want < at)
        return e->base + (size_t)(e->seg - e->text);
    for (; i < e->seg_len; i++) {
        size_t w = e->t->form == HF_METASPACE && e->seg[i] == ' ' ? e->t->meta_len : 1;
        if (want < at + w)
            break;
        at += w;
    }
    return e->base + (size_t)(e->seg - e->text) + i;
}

static linattn_status no_token(const enc *e, const char *s, size_t n)
{
    char hex[3 * 4 + 1] = "";
    for (size_t i = 0; i < n && i < 4; i++)
        snprintf(hex + 3 * i, sizeof hex - 3 * i, "%s%02x", i ? " " : "", (unsigned char)s[i]);
    return linattn_err(LINATTN_ERR_INVALID,
                       "%s: the text's character at byte %zu (bytes %s) has no token (no byte "
                       "fallback or unknown token)", e->t->source, text_offset(e, s), hex);
}

/* One word: its symbols (characters, bytes), merged in runs (tok_bpe_run). */
static linattn_status emit_word(enc *e, const char *w, size_t n)
{
    const linattn_tokenizer *t = e->t;
    tok_vec *out = e->out;
    size_t start = out->n, run = start;
    linattn_status st = LINATTN_OK;
    if (t->form == HF_BYTELEVEL) {
        if (t->ignore_merges && n <= t->max_piece) { /* a whole word in the vocabulary is its token */
            size_t m = 0;
            for (size_t i = 0; i < n; i++)
                m += (size_t)put_utf8(e->scratch + m, byte_char((unsigned char)w[i]));
            int id = tok_lookup(t, e->scratch, m);
            if (id >= 0)
                return tok_push(out, id);
        }
        for (size_t i = 0; i < n && st == LINATTN_OK; i++) {
            int id = t->byte_token[(unsigned char)w[i]];
            st = id >= 0 ? tok_push(out, id) : no_token(e, w + i, 1);
            if (st == LINATTN_OK)
                st = tok_bpe_run(t, out, &run, tok_pair_find, 0);
        }
    } else {
        int id = t->ignore_merges ? tok_lookup(t, w, n) : -1;
        if (id >= 0)
            return tok_push(out, id);
        size_t i = 0;
        while (i < n && st == LINATTN_OK) {
            size_t j = i + 1;
            while (j < n && j - i < 4 && ((unsigned char)w[j] & 0xC0) == 0x80)
                j++;
            id = tok_lookup(t, w + i, j - i);
            int bytes = t->byte_fallback; /* every byte of the character has its token */
            for (size_t k = i; k < j && bytes; k++)
                bytes = t->byte_token[(unsigned char)w[k]] >= 0;
            if (id >= 0)
                st = tok_push(out, id);
            else if (bytes) {
                for (size_t k = i; k < j && st == LINATTN_OK; k++)
                    st = tok_push(out, t->byte_token[(unsigned char)w[k]]);
            } else if (t->unk >= 0) {
                /* out->v[out->n - 1] is the last symbol: a run keeps it unmerged */
                if (!(t->fuse_unk && out->n > start && out->v[out->n - 1] == t->unk))
                    st = tok_push(out, t->unk);
            } else
                st = no_token(e, w + i, j - i);
            if (st == LINATTN_OK && out->n - start >= 2)
                st = tok_bpe_run(t, out, &run, tok_pair_find, 0);
            i = j;
        }
    }
    if (st != LINATTN_OK || out->n - start < 2)
        return st;
    return tok_bpe_run(t, out, &run, tok_pair_find, 1);
}

/* A piece of the pre-tokenizer's splits: a word. */
static linattn_status word_piece(void *ctx, const char *s, size_t n)
{
    return emit_word(ctx, s, n);
}

/* A stretch of text between added tokens; first: 1 when it starts the
 * text, 0 after an added token, -1 when it continues a text cut before it
 * (tok_cut_hf): no prefix. */
static linattn_status emit_segment(enc *e, const char *s, size_t n, int first)
{
    const linattn_tokenizer *t = e->t;
    if (n == 0)
        return LINATTN_OK;
    linattn_status st = LINATTN_OK;
    e->seg = s;
    e->seg_len = n;
    e->prefix = 0;
    if (t->form == HF_BYTELEVEL) {
        if (t->add_prefix_space && s[0] != ' ' && first >= 0) {
            e->prefix = 1;
            e->buf[0] = ' ';
            memcpy(e->buf + 1, s, n);
            s = e->buf;
            n++;
        }
        return t->n_split ? tok_split_run(t, e->md, s, n, text_offset(e, s), word_piece, e)
                          : emit_word(e, s, n);
    }
    if (t->form == HF_PLAIN)
        return t->n_split ? tok_split_run(t, e->md, s, n, text_offset(e, s), word_piece, e)
                          : emit_word(e, s, n);
    /* metaspace: spaces become the replacement, a prefix goes first */
    size_t m = 0;
    int prefix = first >= 0 &&
                 (t->prepend == PREPEND_ALWAYS || (t->prepend == PREPEND_FIRST && first));
    if (prefix && !(t->meta_pretok && s[0] == ' ')) {
        memcpy(e->buf, t->meta, t->meta_len);
        m = e->prefix = t->meta_len;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(e->buf + m, t->meta, t->meta_len);
            m += t->meta_len;
        } else
            e->buf[m++] = s[i];
    }
    if (!t->meta_split)
        return emit_word(e, e->buf, m);
    /* words start at each replacement (a lead byte: it never matches
     * inside another character) */
    size_t w = 0;
    for (size_t i = 1; i < m && st == LINATTN_OK; i++)
        if (m - i >= t->meta_len && !memcmp(e->buf + i, t->meta, t->meta_len)) {
            st = emit_word(e, e->buf + w, i - w);
            w = i;
        }
    return st == LINATTN_OK ? emit_word(e, e->buf + w, m - w) : st;
}


linattn_status tok_encode_hf(const linattn_tokenizer *t, const char *text, size_t len,
                             int add_bos, size_t base, tok_vec *out)
{
    linattn_status st = add_bos ? tok_push(out, t->bos) : LINATTN_OK;
    if (st != LINATTN_OK || len == 0)
        return st;
    /* metaspace turns a byte into up to meta_len bytes, byte-level into 2 */
    size_t grow = t->meta_len > 2 ? t->meta_len : 2;
    enc e = {t, out, mem_alloc((len + 1) * grow + 8), mem_alloc(2 * (size_t)t->max_piece + 8),
             (len + 1) * grow + 8, text, text, 0, 0, base, NULL};
    tok_added_scan sc = {0};
    if (!e.buf || !e.scratch || (t->n_added && !tok_added_scan_begin(&sc, t, text, len))) {
        mem_free(e.buf);
        mem_free(e.scratch);
        tok_added_scan_end(&sc);
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer_encode: out of memory for %zu bytes",
                           len);
    }
    if ((st = tok_split_begin(t, &e.md)) != LINATTN_OK) {
        mem_free(e.buf);
        mem_free(e.scratch);
        tok_added_scan_end(&sc);
        return st;
    }
    size_t seg = 0, i = 0;
    for (int hit; t->n_added && st == LINATTN_OK && (hit = tok_added_next(&sc, &i)) >= 0;) {
        int id = t->added[hit];
        size_t hit_len = t->text_off[id + 1] - t->text_off[id];
        size_t end = i;
        if (t->added_strip[hit] & 1)
            while (end > seg && tok_is_space(text[end - 1]))
                end--;
        st = emit_segment(&e, text + seg, end - seg, seg > 0 ? 0 : base ? -1 : 1);
        if (st == LINATTN_OK)
            st = tok_push(out, id);
        i += hit_len;
        if (t->added_strip[hit] & 2)
            while (i < len && tok_is_space(text[i]))
                i++;
        seg = i;
    }
    if (st == LINATTN_OK)
        st = emit_segment(&e, text + seg, len - seg, seg > 0 ? 0 : base ? -1 : 1);
    tok_split_end(e.md);
    mem_free(e.buf);
    mem_free(e.scratch);
    tok_added_scan_end(&sc);
    return st;
}

static int ascii_letter(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The symbol the character s[0..n) starts (or, last, ends) as in
 * emit_word; -1 for the unknown token (fused with its neighbour) or none. */
static int char_symbol(const linattn_tokenizer *t, const char *s, size_t n, int last)
{
    int id = tok_lookup(t, s, n);
    if (id >= 0)
        return id;
    int bytes = t->byte_fallback;
    for (size_t k = 0; k < n && bytes; k++)
        bytes = t->byte_token[(unsigned char)s[k]] >= 0;
    return bytes ? t->byte_token[(unsigned char)s[last ? n - 1 : 0]] : -1;
}

/* The first or last symbol of the replacement's characters. */
static int meta_symbol(const linattn_tokenizer *t, int last)
{
    size_t i = 0, j = 0;
    for (;;) {
        j = i + 1;
        while (j < t->meta_len && j - i < 4 && ((unsigned char)t->meta[j] & 0xC0) == 0x80)
            j++;
        if (!last || j >= t->meta_len)
            return char_symbol(t, t->meta + i, j - i, last);
        i = j;
    }
}

/* Whether the pre-tokenizer and the merges let the text be cut at p, in a
 * stretch between added tokens, with no added token at p: p starts a word
 * whose end does not depend on what comes before it, or p is inside a word
 * between two symbols no merge joins. Both sides are ASCII (each byte its
 * own character) and the byte before p is no space (an lstrip before a
 * later added token stops there). */
static int can_cut_at(const linattn_tokenizer *t, const char *text, size_t len, size_t p)
{
    unsigned char a = (unsigned char)text[p - 1], b = (unsigned char)text[p];
    if (a >= 0x80 || b >= 0x80 || tok_is_space((char)a))
        return 0;
    /* the splits: between two words, "...a| b...", where each pattern is
     * known to split there whatever comes before (tok_split_can_cut) */
    if (t->n_split)
        return tok_split_can_cut(t) && ascii_letter(a) && b == ' ' && p + 1 < len &&
               ascii_letter((unsigned char)text[p + 1]);
    /* a whole word in the vocabulary is its token: cut only between words */
    if (t->ignore_merges && !(t->form == HF_METASPACE && t->meta_split && b == ' '))
        return 0;
    if (t->form == HF_BYTELEVEL) {
        int x = t->byte_token[a], y = t->byte_token[b];
        return x >= 0 && y >= 0 && tok_can_cut(t, x, y);
    }
    if (t->form == HF_METASPACE && t->meta_split && b == ' ')
        return 1; /* a word starts at each replacement */
    int x = char_symbol(t, (const char *)&a, 1, 1);
    int y = t->form == HF_METASPACE && b == ' ' ? meta_symbol(t, 0)
                                                 : char_symbol(t, (const char *)&b, 1, 0);
    return x >= 0 && y >= 0 && x != t->unk && y != t->unk && tok_can_cut(t, x, y);
}

/* Where tok_encode_hf's scan may cut (tok_added_cut): where can_cut_at
 * holds. */
size_t tok_cut_hf(const linattn_tokenizer *t, const char *text, size_t len, size_t from,
                  size_t want)
{
    return tok_added_cut(t, text, len, from, want, can_cut_at, 0);
}
