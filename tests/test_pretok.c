/* test_pretok.c: pre-tokenizer splits (PCRE2) against llama.cpp's own splitter, Hugging Face's Split behaviours, and in tokenizers. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../engine/tokenizer.h"
#include "testutil.h"

TestSuite(pretok, .init = tu_make_dir, .fini = tu_remove_dir);

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct pieces {
    char text[8192]; /* the pieces, each followed by a NUL */
    size_t len;
    int n;
} pieces;

static linattn_status collect(void *ctx, const char *s, size_t n)
{
    pieces *p = ctx;
    cr_assert(p->len + n + 1 <= sizeof p->text);
    memcpy(p->text + p->len, s, n);
    p->len += n;
    p->text[p->len++] = '\0';
    p->n++;
    return LINATTN_OK;
}

/* A tokenizer object holding only splits (tok_split_* need no more). */
static linattn_tokenizer *splitter(void)
{
    linattn_tokenizer *t;
    cr_assert_eq(tok_alloc(TOK_HF, "test", 1, 1, &t), LINATTN_OK);
    return t;
}

static void add(linattn_tokenizer *t, const char *pattern, int literal, split_behavior b,
                int invert)
{
    cr_assert_eq(tok_split_add(t, "test", pattern, literal, b, invert), LINATTN_OK, "%s: %s",
                 pattern, linattn_last_error());
}

static void split(const linattn_tokenizer *t, const char *s, size_t n, pieces *out)
{
    memset(out, 0, sizeof *out);
    void *md;
    cr_assert_eq(tok_split_begin(t, &md), LINATTN_OK);
    cr_assert_eq(tok_split_run(t, md, s, n, 0, collect, out), LINATTN_OK, "%s",
                 linattn_last_error());
    tok_split_end(md);
}

/* The pieces of text are want[0..n). */
static void expect_split(const linattn_tokenizer *t, const char *text, const char *const *want,
                         int n)
{
    pieces p;
    split(t, text, strlen(text), &p);
    const char *q = p.text;
    for (int i = 0; i < n && i < p.n; i++, q += strlen(q) + 1)
        cr_assert_str_eq(q, want[i], "'%s': piece %d", text, i);
    cr_assert_eq(p.n, n, "'%s': %d pieces, want %d", text, p.n, n);
}

/* the pieces, and how many */
#define WANT(...)                                                                            \
    (const char *const[]){__VA_ARGS__},                                                      \
        (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* ------------------------------------------------------------------------ */
/* Against llama.cpp                                                         */
/* ------------------------------------------------------------------------ */

/* tests/data/pretok/llama-cpp-splits.json (README.md there): for each
 * pre-type, llama.cpp's patterns (as its source has them) and the pieces
 * llama.cpp's unicode_regex_split makes of each text. linattn's table must
 * hold the same patterns, and PCRE2 must give the same pieces. */
Test(pretok, every_pre_type_splits_as_llama_cpp)
{
    size_t len;
    char *json = tu_read_file(tu_data("pretok/llama-cpp-splits.json"), &len);
    cJSON *root = cJSON_ParseWithLength(json, len);
    cr_assert(root, "the golden file parses");
    const cJSON *texts = cJSON_GetObjectItem(root, "texts"), *types = cJSON_GetObjectItem(root, "types");
    int ntypes = 0, ncases = 0;
    for (const cJSON *ty = types->child; ty; ty = ty->next, ntypes++) {
        const char *name = ty->string;
        const tok_pre_type *pt = tok_pre_type_find(name, strlen(name));
        cr_assert(pt, "%s: not in linattn's table", name);
        const cJSON *pats = cJSON_GetObjectItem(ty, "patterns");
        int k = 0;
        for (const cJSON *p = pats->child; p; p = p->next, k++) {
            cr_assert(pt->patterns[k], "%s: fewer patterns than llama.cpp's", name);
            const char *theirs = p->valuestring;
            for (int a = 0; tok_pre_adapted[a][0]; a++)
                if (!strcmp(theirs, tok_pre_adapted[a][0]))
                    theirs = tok_pre_adapted[a][1];
            cr_assert_str_eq(pt->patterns[k], theirs, "%s: pattern %d", name, k);
        }
        cr_assert_null(pt->patterns[k], "%s: more patterns than llama.cpp's", name);
        linattn_tokenizer *t = splitter();
        for (k = 0; pt->patterns[k]; k++)
            add(t, pt->patterns[k], 0, SPLIT_ISOLATED, 0);
        const cJSON *want = cJSON_GetObjectItem(ty, "pieces")->child;
        for (const cJSON *tx = texts->child; tx; tx = tx->next, want = want->next, ncases++) {
            const char *s = tx->valuestring;
            pieces got;
            split(t, s, strlen(s), &got);
            const char *q = got.text;
            int i = 0;
            for (const cJSON *w = want->child; w; w = w->next, i++, q += strlen(q) + 1) {
                cr_assert_lt(i, got.n, "%s: '%s': %d pieces, llama.cpp has more", name, s, got.n);
                cr_assert_str_eq(q, w->valuestring, "%s: '%s': piece %d", name, s, i);
            }
            cr_assert_eq(i, got.n, "%s: '%s': %d pieces, llama.cpp %d", name, s, got.n, i);
        }
        linattn_tokenizer_free(t);
    }
    cr_assert_eq(ntypes, 21);
    cr_assert_eq(ncases, 21 * 71);
    cJSON_Delete(root);
    free(json);
}

/* Every name llama.cpp gives a type linattn does maps to it; the rest are
 * refused. */
Test(pretok, pre_type_names)
{
    cr_assert_eq(tok_pre_type_find("llama-bpe", 9), tok_pre_type_find("llama3", 6));
    cr_assert_eq(tok_pre_type_find("refact", 6), tok_pre_type_find("starcoder", 9));
    cr_assert_eq(tok_pre_type_find("mpt", 3), tok_pre_type_find("gpt-2", 5));
    cr_assert_eq(tok_pre_type_find("deepseek-r1-qwen", 16), tok_pre_type_find("qwen2", 5));
    cr_assert(tok_pre_type_find("llama3", 6)->ignore_merges);
    cr_assert(tok_pre_type_find("llama3", 6)->add_bos);
    cr_assert(!tok_pre_type_find("qwen2", 5)->ignore_merges);
    static const char *const refused[] = {"kimi-k2", "afmoe", "tiny_aya", "superbpe", "gemma4",
                                          "sarvam-moe", "glm4", "roberta-bpe", "youtu", "gpt",
                                          "llama", "", "qwen2 "};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        cr_assert_null(tok_pre_type_find(refused[i], strlen(refused[i])), "'%s'", refused[i]);
}

/* ------------------------------------------------------------------------ */
/* Worked by hand                                                            */
/* ------------------------------------------------------------------------ */

static linattn_tokenizer *pre_type(const char *name)
{
    const tok_pre_type *pt = tok_pre_type_find(name, strlen(name));
    cr_assert(pt);
    linattn_tokenizer *t = splitter();
    for (int k = 0; pt->patterns[k]; k++)
        add(t, pt->patterns[k], 0, SPLIT_ISOLATED, 0);
    return t;
}

Test(pretok, digits_contractions_spaces)
{
    linattn_tokenizer *t = pre_type("llama3");
    expect_split(t, "12345678", WANT("123", "456", "78"));
    expect_split(t, "I'LL see", WANT("I", "'LL", " see"));
    expect_split(t, "a  b\n\n c  ", WANT("a", " ", " b", "\n\n", " c", "  "));
    expect_split(t, "\xc2\xbd", WANT("\xc2\xbd")); /* ½ is a number (No) */
    linattn_tokenizer_free(t);
    t = pre_type("qwen2");
    expect_split(t, "1234", WANT("1", "2", "3", "4"));
    linattn_tokenizer_free(t);
    t = splitter();
    add(t, tok_gpt2_pattern, 0, SPLIT_ISOLATED, 0);
    /* GPT-2's contractions are lower case only; a space leads a word */
    expect_split(t, "I'LL it's  x", WANT("I", "'", "LL", " it", "'s", " ", " x"));
    /* U+3000 is a space (\\s), but only ' ' leads a word */
    expect_split(t, "a\xe3\x80\x80" "b", WANT("a", "\xe3\x80\x80", "b"));
    linattn_tokenizer_free(t);
}

/* The behaviours, on Hugging Face's own example (the SplitDelimiterBehavior
 * documentation: "the-final--countdown" split on "-"). */
Test(pretok, split_behaviours_as_hugging_face_documents)
{
    static const char text[] = "the-final--countdown";
    linattn_tokenizer *t = splitter();
    add(t, "-", 1, SPLIT_REMOVED, 0);
    expect_split(t, text, WANT("the", "final", "countdown"));
    linattn_tokenizer_free(t);
    t = splitter();
    add(t, "-", 1, SPLIT_ISOLATED, 0);
    expect_split(t, text, WANT("the", "-", "final", "-", "-", "countdown"));
    linattn_tokenizer_free(t);
    t = splitter();
    add(t, "-", 1, SPLIT_MERGED_PREV, 0);
    expect_split(t, text, WANT("the-", "final-", "-", "countdown"));
    linattn_tokenizer_free(t);
    t = splitter();
    add(t, "-", 1, SPLIT_MERGED_NEXT, 0);
    expect_split(t, text, WANT("the", "-final", "-", "-countdown"));
    linattn_tokenizer_free(t);
    t = splitter();
    add(t, "-", 1, SPLIT_CONTIGUOUS, 0);
    expect_split(t, text, WANT("the", "-", "final", "--", "countdown"));
    linattn_tokenizer_free(t);
    /* invert: the pattern says what is not a delimiter; Removed drops the rest */
    t = splitter();
    add(t, "[a-z]+", 0, SPLIT_REMOVED, 1);
    expect_split(t, text, WANT("the", "final", "countdown"));
    linattn_tokenizer_free(t);
    t = splitter();
    add(t, "-+", 0, SPLIT_MERGED_NEXT, 1); /* the words are the delimiters now */
    expect_split(t, text, WANT("the-", "final--", "countdown"));
    linattn_tokenizer_free(t);
    /* a literal String is not a regular expression */
    t = splitter();
    add(t, ".", 1, SPLIT_ISOLATED, 0);
    expect_split(t, "a.b", WANT("a", ".", "b"));
    linattn_tokenizer_free(t);
    /* an empty match splits nothing */
    t = splitter();
    add(t, "x*", 0, SPLIT_ISOLATED, 0);
    expect_split(t, "abxxc", WANT("ab", "xx", "c"));
    linattn_tokenizer_free(t);
}

/* Text that is not UTF-8 is split all the same: its bad bytes match no
 * pattern, and the pieces put together are the text. */
Test(pretok, invalid_utf8_is_split_not_refused)
{
    static const char *const bad[] = {"a\xff" "b", "\xc3", "x \xc3(", "\xe2\x82", "\xf0\x9f\x98",
                                      "\xed\xa0\x80 surrogate", "\xc0\xaf overlong", "ok\x80\x80ok 12"};
    static const char *const types[] = {"llama3", "gpt-2", "deepseek-llm", "falcon", "default",
                                        "gpt-4o"};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        linattn_tokenizer *t = pre_type(types[k]);
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            pieces p;
            split(t, bad[i], strlen(bad[i]), &p);
            char joined[256];
            size_t m = 0;
            for (const char *q = p.text; q < p.text + p.len; q += strlen(q) + 1) {
                memcpy(joined + m, q, strlen(q));
                m += strlen(q);
            }
            cr_assert(m == strlen(bad[i]) && !memcmp(joined, bad[i], m), "%s: case %zu", types[k],
                      i);
        }
        linattn_tokenizer_free(t);
    }
    linattn_tokenizer *t = pre_type("llama3");
    expect_split(t, "a\xff" "b", WANT("a", "\xff", "b"));
    linattn_tokenizer_free(t);
}

static linattn_status count_piece(void *ctx, const char *s, size_t n)
{
    (void)s;
    (void)n;
    ++*(size_t *)ctx;
    return LINATTN_OK;
}

/* A long text in one piece: linear, and no limit of PCRE2's is reached. */
Test(pretok, long_runs)
{
    size_t n = (size_t)8 << 20;
    char *s = malloc(n + 1);
    cr_assert(s);
    static const char fill[] = {'a', ' ', '1', '\n', '!'};
    linattn_tokenizer *t = pre_type("llama3");
    for (int f = 0; f < 5; f++) {
        memset(s, fill[f], n);
        s[n] = '\0';
        void *md;
        cr_assert_eq(tok_split_begin(t, &md), LINATTN_OK);
        size_t count = 0;
        cr_assert_eq(tok_split_run(t, md, s, n, 0, count_piece, &count), LINATTN_OK, "%s",
                     linattn_last_error());
        tok_split_end(md);
        /* letters, spaces, newlines and '!' are one piece; digits 3 a piece */
        cr_assert_eq(count, fill[f] == '1' ? (n + 2) / 3 : 1, "fill '%c'", fill[f]);
    }
    linattn_tokenizer_free(t);
    free(s);
}

/* ------------------------------------------------------------------------ */
/* In a tokenizer.json                                                       */
/* ------------------------------------------------------------------------ */

/* A byte-level tokenizer.json: token b is byte b (as its character, JSON
 * escaped where it must be), then "34" (256) from the merge "3 4" and "Ġb"
 * (257) from "Ġ b"; pre is the pre_tokenizer. */
static const char *write_bytes_json(const char *pre)
{
    static char json[16384];
    size_t m = (size_t)snprintf(json, sizeof json, "{\"model\": {\"type\": \"BPE\", \"vocab\": {");
    m = tu_byte_vocab_json(json, m, sizeof json);
    snprintf(json + m, sizeof json - m,
             "\"34\": 256, \"\xc4\xa0" "b\": 257}, \"merges\": [\"3 4\", \"\xc4\xa0 b\"]},"
             " \"pre_tokenizer\": %s}", pre);
    const char *path = tu_path("tokenizer.json");
    tu_write_text(path, json);
    static char spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", path);
    return spec;
}

#define LLAMA3_HF                                                                            \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "   \
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+"
#define SPLIT_THEN_BYTES(pattern, behavior)                                                  \
    "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "       \
    "{\"Regex\": \"" pattern "\"}, \"behavior\": \"" behavior "\", \"invert\": false}, "     \
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "        \
    "\"use_regex\": false}]}"

static void expect_ids(const linattn_tokenizer *t, const char *text, const int *want, size_t n)
{
    int got[64];
    size_t k = 0;
    cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 0, got, 64, &k), LINATTN_OK,
                 "'%s': %s", text, linattn_last_error());
    cr_assert_eq(k, n, "'%s': %zu tokens, want %zu", text, k, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "'%s': token %zu", text, i);
}

/* Llama 3's tokenizer.json form: its Split, then ByteLevel without regex. */
Test(pretok, llama3_split_in_a_tokenizer_json)
{
    linattn_tokenizer *t;
    cr_assert_eq(linattn_tokenizer_load(write_bytes_json(SPLIT_THEN_BYTES(LLAMA3_HF, "Isolated")), &t),
                 LINATTN_OK, "%s", linattn_last_error());
    /* "123" "4": the merge 3 4 would cross the split */
    expect_ids(t, "1234", (int[]){'1', '2', '3', '4'}, 4);
    /* "a" " b": Ġb merges inside the second word */
    expect_ids(t, "a b", (int[]){'a', 257}, 2);
    /* bytes that are not UTF-8 are words of their own, each its byte */
    expect_ids(t, "a\xff" "b", (int[]){'a', 0xff, 'b'}, 3);
    linattn_tokenizer_free(t);
    /* no split: one word, and 3 4 merges */
    cr_assert_eq(linattn_tokenizer_load(write_bytes_json("{\"type\": \"ByteLevel\", "
                                                         "\"add_prefix_space\": false, "
                                                         "\"use_regex\": false}"), &t),
                 LINATTN_OK, "%s", linattn_last_error());
    expect_ids(t, "1234", (int[]){'1', '2', 256}, 3);
    linattn_tokenizer_free(t);
    /* Removed drops the matches */
    cr_assert_eq(linattn_tokenizer_load(write_bytes_json(SPLIT_THEN_BYTES(" ", "Removed")), &t),
                 LINATTN_OK, "%s", linattn_last_error());
    expect_ids(t, "a b  34", (int[]){'a', 'b', 256}, 3);
    linattn_tokenizer_free(t);
}

/* A Split alone (no ByteLevel): the text's characters as they are. */
Test(pretok, split_without_byte_level)
{
    static const char json[] =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \" \": 3},"
        " \"merges\": [\"a b\"]}, \"pre_tokenizer\": %s}";
    char text[1024], spec[4200];
    snprintf(spec, sizeof spec, "hf:%s", tu_path("tokenizer.json"));
    linattn_tokenizer *t;
    snprintf(text, sizeof text, json,
             "{\"type\": \"Split\", \"pattern\": {\"String\": \"b\"}, \"behavior\": "
             "\"Isolated\", \"invert\": false}");
    tu_write_text(tu_path("tokenizer.json"), text);
    cr_assert_eq(linattn_tokenizer_load(spec, &t), LINATTN_OK, "%s", linattn_last_error());
    cr_assert_str_eq(linattn_tokenizer_name(t), "hf BPE");
    expect_ids(t, "ab ab", (int[]){0, 1, 3, 0, 1}, 5); /* "a" "b" " a" "b": no a b merge */
    linattn_tokenizer_free(t);
    snprintf(text, sizeof text, json, "null");
    tu_write_text(tu_path("tokenizer.json"), text);
    cr_assert_eq(linattn_tokenizer_load(spec, &t), LINATTN_OK, "%s", linattn_last_error());
    expect_ids(t, "ab ab", (int[]){2, 3, 2}, 3);
    linattn_tokenizer_free(t);
}

static void refused(const char *pre, const char *says)
{
    linattn_tokenizer *t = NULL;
    cr_assert_neq(linattn_tokenizer_load(write_bytes_json(pre), &t), LINATTN_OK, "%s", pre);
    cr_assert_null(t);
    cr_assert(strstr(linattn_last_error(), says), "'%s' does not say '%s'", linattn_last_error(),
              says);
}

Test(pretok, split_settings_refused_by_name)
{
    refused(SPLIT_THEN_BYTES("a", "Bogus"), "behavior 'Bogus' is not supported");
    refused(SPLIT_THEN_BYTES("(a", "Isolated"), "pattern '(a': missing closing parenthesis");
    refused("{\"type\": \"Split\", \"pattern\": {\"Regexp\": \"a\"}, \"behavior\": \"Isolated\"}",
            "pre_tokenizer Split: pattern: expected {\"Regex\": ...} or {\"String\": ...}");
    refused("{\"type\": \"Split\", \"pattern\": {\"String\": \"a\"}, \"behavior\": \"Isolated\","
            " \"invert\": 1}", "invert: expected true or false");
    refused("{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": "
            "\"Split\", \"pattern\": {\"String\": \"a\"}, \"behavior\": \"Isolated\"}]}",
            "pre_tokenizer[1] Split: a Split after ByteLevel is not supported");
    refused("{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
            "{\"String\": \"a\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", "
            "\"add_prefix_space\": true}]}",
            "pre_tokenizer[1] ByteLevel: add_prefix_space after a Split is not supported");
    refused("{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
            "{\"String\": \"a\"}, \"behavior\": \"Isolated\"}, {\"type\": \"Metaspace\"}]}",
            "pre_tokenizer 'Split' with Metaspace is not supported");
}

/* Encoding in parts, cut where linattn_tokenizer_cut says, gives the whole
 * text's tokens: with a known pattern the text is cut between words, with
 * an unknown one never. */
Test(pretok, parts_give_the_whole_texts_tokens)
{
    static const char *const words[] = {" ", "a", "b", "3", "4", "34", "!", "\n", "  ", " b",
                                        "\xc3\xa9", "'s", "'LL", "12345", "\xff"};
    for (int known = 1; known >= 0; known--) {
        linattn_tokenizer *t;
        const char *pre = known ? SPLIT_THEN_BYTES(LLAMA3_HF, "Isolated")
                                : SPLIT_THEN_BYTES("[a-z]+ ?", "Isolated");
        cr_assert_eq(linattn_tokenizer_load(write_bytes_json(pre), &t), LINATTN_OK, "%s",
                     linattn_last_error());
        tu_rng_seed(11);
        int cuts = 0;
        for (int round = 0; round < 300; round++) {
            char text[512];
            size_t len = 0;
            int count = (int)(tu_rng() % 40);
            for (int i = 0; i < count; i++) {
                const char *w = words[tu_rng() % (sizeof words / sizeof *words)];
                memcpy(text + len, w, strlen(w));
                len += strlen(w);
            }
            int whole[1024], part[1024];
            size_t n = 0, m = 0;
            cr_assert_eq(linattn_tokenizer_encode(t, text, len, 0, whole, 1024, &n), LINATTN_OK);
            for (size_t from = 0; from < len;) {
                size_t to = linattn_tokenizer_cut(t, text, len, from, 1 + round % 7);
                cr_assert(to > from && to <= len);
                cuts += to < len;
                size_t k = 0;
                cr_assert_eq(linattn_tokenizer_encode_part(t, text, from, to, 0, part + m,
                                                           1024 - m, &k),
                             LINATTN_OK, "%s", linattn_last_error());
                m += k;
                from = to;
            }
            cr_assert_eq(m, n, "'%.*s': %zu tokens in parts, %zu whole", (int)len, text, m, n);
            cr_assert(!memcmp(part, whole, n * sizeof *whole), "'%.*s'", (int)len, text);
        }
        if (known)
            cr_assert_gt(cuts, 50, "a known pattern: texts are cut");
        else
            cr_assert_eq(cuts, 0, "an unknown pattern: no text is cut");
        linattn_tokenizer_free(t);
    }
}

/* One tokenizer with splits encodes on several threads at once (the
 * compiled patterns are shared, the match space is each call's). */
typedef struct job {
    const linattn_tokenizer *t;
    const char *text;
    const int *want;
    size_t n;
    int bad;
} job;

static void *encode_often(void *arg)
{
    job *j = arg;
    int ids[512];
    size_t n;
    for (int r = 0; r < 300; r++)
        if (linattn_tokenizer_encode(j->t, j->text, strlen(j->text), 0, ids, 512, &n) != LINATTN_OK ||
            n != j->n || memcmp(ids, j->want, n * sizeof *ids))
            j->bad++;
    return NULL;
}

Test(pretok, shared_by_threads)
{
    linattn_tokenizer *t;
    cr_assert_eq(linattn_tokenizer_load(write_bytes_json(SPLIT_THEN_BYTES(LLAMA3_HF, "Isolated")), &t),
                 LINATTN_OK, "%s", linattn_last_error());
    const char *text = "1234 a b 34 I'LL go!\n\n  x \xc3\xa9t\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd 12345678";
    int want[512];
    size_t n;
    cr_assert_eq(linattn_tokenizer_encode(t, text, strlen(text), 0, want, 512, &n), LINATTN_OK);
    pthread_t th[4];
    job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job){t, text, want, n, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, encode_often, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(jobs[i].bad, 0, "thread %d: %d encodings differ", i, jobs[i].bad);
    }
    linattn_tokenizer_free(t);
}

/* A pattern that backtracks without end stops at PCRE2's match limit: an
 * error naming the split and the byte, not a hang. */
Test(pretok, runaway_pattern_is_an_error)
{
    linattn_tokenizer *t = splitter();
    add(t, "(a|aa)+\\d", 0, SPLIT_ISOLATED, 0);
    char s[80];
    memset(s, 'a', 70);
    s[70] = 'b';
    void *md;
    cr_assert_eq(tok_split_begin(t, &md), LINATTN_OK);
    size_t count = 0;
    cr_assert_neq(tok_split_run(t, md, s, 71, 100, count_piece, &count), LINATTN_OK);
    tok_split_end(md);
    cr_assert(strstr(linattn_last_error(), "test: pre-tokenizer split 0 at byte 100 of the text: "
                                           "match limit exceeded"), "%s", linattn_last_error());
    linattn_tokenizer_free(t);
}
