/* tokenizer_gguf.c: a GGUF file's vocabulary (tokenizer.ggml.*) as the llama2.c or Hugging Face tokenizer it is. */
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gguf.h"
#include "tokenizer.h"

/* llama.cpp's token types (llama_token_type) */
enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_USER_DEFINED = 4,
       TYPE_UNUSED = 5, TYPE_BYTE = 6 };

static const char METASPACE[] = "\xe2\x96\x81"; /* U+2581, sentencepiece's space */

/* tokenizer.ggml.KEY as a token id in 0..vocab-1 (*id unchanged when absent). */
static linattn_status get_id(const linattn_gguf *g, const char *path, const char *key, int vocab,
                             int *id)
{
    if (!linattn_gguf_has(g, key))
        return LINATTN_OK;
    int64_t v;
    linattn_status st = linattn_gguf_get_int(g, key, &v);
    if (st != LINATTN_OK)
        return st;
    if (v < 0 || v >= vocab)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: %s is %lld, not a token id in 0..%d", path,
                           key, (long long)v, vocab - 1);
    *id = (int)v;
    return LINATTN_OK;
}

/* bos, eos and add_bos from the metadata, over what the reader set. */
static linattn_status special_ids(const linattn_gguf *g, const char *path, linattn_tokenizer *t,
                                  int add_bos_default)
{
    int bos = -1, eos = -1, add = add_bos_default;
    linattn_status st;
    if ((st = get_id(g, path, "tokenizer.ggml.bos_token_id", t->vocab, &bos)) ||
        (st = get_id(g, path, "tokenizer.ggml.eos_token_id", t->vocab, &eos)))
        return st;
    if (linattn_gguf_has(g, "tokenizer.ggml.add_bos_token") &&
        (st = linattn_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add)))
        return st;
    t->bos = bos;
    t->eos = eos;
    t->add_bos = bos >= 0 && add;
    return LINATTN_OK;
}

/* Whether s[0..n) holds word, ASCII case aside. */
static int has_ci(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++) {
        size_t k = 0;
        while (k < w && tolower((unsigned char)s[i + k]) == word[k])
            k++;
        if (k == w)
            return 1;
    }
    return 0;
}

static int has(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; s && i + w <= n; i++)
        if (!memcmp(s + i, word, w))
            return 1;
    return 0;
}

const char *const tok_phi3_needs[] = {"</s>", "<unk>", "<s>", "<|endoftext|>", NULL};

tok_named tok_named_rule(const char *name, size_t name_len, const char *pre, size_t pre_len,
                         const char *arch, size_t arch_len)
{
    if (has(pre, pre_len, "jina-v2-de") || has(pre, pre_len, "jina-v2-es") ||
        has(pre, pre_len, "jina-v2-code") || has(arch, arch_len, "nomic-bert-moe") ||
        has(arch, arch_len, "jina-bert-v3"))
        return TOK_NAMED_JINA;
    if (name && (has_ci(name, name_len, "phi-3") || has_ci(name, name_len, "phi3")))
        return TOK_NAMED_PHI3;
    if (name && has_ci(name, name_len, "modern-bert"))
        return TOK_NAMED_MODERN_BERT;
    return TOK_NAMED_NONE;
}

static int is(const char *piece, size_t len, const char *text)
{
    return len == strlen(text) && !memcmp(piece, text, len);
}

int tok_named_strip(tok_named rule, const char *piece, size_t len)
{
    switch (rule) {
    case TOK_NAMED_JINA:
        return is(piece, len, "<mask>");
    case TOK_NAMED_PHI3:
        return is(piece, len, "<unk>") || is(piece, len, "<s>") || is(piece, len, "<|endoftext|>")
                   ? 0 : 2;
    case TOK_NAMED_MODERN_BERT:
        return is(piece, len, "[MASK]");
    default:
        return 0;
    }
}

/* llama.cpp's rule for the file g (tok_named_rule). */
static tok_named named_rule(const linattn_gguf *g)
{
    const char *v[3] = {NULL, NULL, NULL};
    size_t n[3] = {0, 0, 0};
    static const char *const keys[] = {"general.name", "tokenizer.ggml.pre",
                                       "general.architecture"};
    for (int i = 0; i < 3; i++)
        if (linattn_gguf_has(g, keys[i]) &&
            linattn_gguf_get_string(g, keys[i], &v[i], &n[i]) != LINATTN_OK)
            v[i] = NULL;
    return tok_named_rule(v[0], n[0], v[1], n[1], v[2], n[2]);
}

typedef struct piece_len {
    size_t len;
    int id;
} piece_len;

static int longer_piece(const void *a, const void *b)
{
    const piece_len *x = a, *y = b;
    return x->len < y->len ? 1 : x->len > y->len ? -1 : x->id - y->id;
}

/* The tokens a text names by their piece, as llama.cpp's tokenizer splits
 * a text at them before sentencepiece (its default for prompts): control
 * (<s>, </s>, a chat format's markers), user-defined and unknown tokens,
 * matched longest first. A Llama 2 or Mistral chat turn's "<s>" and
 * "</s>" are then bos and eos, not 11 byte-sized pieces. */
static linattn_status spm_added(const linattn_gguf *g, const char *path,
                                const linattn_gguf_array *tokens, linattn_tokenizer *t)
{
    if (!linattn_gguf_has(g, "tokenizer.ggml.token_type"))
        return LINATTN_OK;
    linattn_gguf_array types;
    linattn_status st = linattn_gguf_get_array(g, "tokenizer.ggml.token_type", &types);
    if (st != LINATTN_OK)
        return st;
    if (types.count != tokens->count)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tokenizer.ggml.token_type has %llu entries for %llu tokens", path,
                           (unsigned long long)types.count, (unsigned long long)tokens->count);
    int n = 0;
    piece_len *order = mem_alloc(((size_t)t->vocab + 1) * sizeof *order);
    if (!order)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for the special tokens", path);
    for (int i = 0; i < t->vocab && st == LINATTN_OK; i++) {
        int64_t type;
        if ((st = linattn_gguf_array_int(&types, (uint64_t)i, &type)) != LINATTN_OK)
            st = linattn_err(LINATTN_ERR_FORMAT,
                             "%s: tokenizer.ggml.token_type[%d]: not an integer", path, i);
        else if ((type == TYPE_CONTROL || type == TYPE_USER_DEFINED || type == TYPE_UNKNOWN) &&
                 t->text_off[i + 1] > t->text_off[i])
            order[n++] = (piece_len){t->text_off[i + 1] - t->text_off[i], i};
    }
    if (st == LINATTN_OK && n > 0) {
        qsort(order, (size_t)n, sizeof *order, longer_piece);
        t->added = mem_alloc((size_t)n * sizeof *t->added);
        t->added_strip = mem_calloc((size_t)n, 1);
        if (!t->added || !t->added_strip)
            st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for the special tokens", path);
        for (int k = 0; k < n && st == LINATTN_OK; k++)
            t->added[k] = order[k].id;
        if (st == LINATTN_OK) {
            t->n_added = n;
            st = tok_added_build(t, path);
        }
    }
    mem_free(order);
    /* llama.cpp's rules by the file's names: Phi-3's markers take the white
     * space after them ("<|user|>\nHi" is <|user|> then " Hi"), all but
     * <unk>, <s> and <|endoftext|> */
    tok_named rule = named_rule(g);
    for (int k = 0; st == LINATTN_OK && k < n; k++) {
        int id = t->added[k];
        t->added_strip[k] = (unsigned char)tok_named_strip(rule, t->text + t->text_off[id],
                                                           t->text_off[id + 1] - t->text_off[id]);
    }
    return st;
}

/* Sentencepiece (model "llama"): the pieces with U+2581 as ' ', scores,
 * written as a llama2.c tokenizer.bin in memory and read by that reader:
 * llama.cpp's SPM tokenizer and run.c's encode are one algorithm (the
 * best-scoring adjacent pair merges first, the leftmost on ties; a code
 * point without a token falls back to its <0xXX> byte tokens; a space
 * prefix). */
static linattn_status load_spm(const linattn_gguf *g, const char *path,
                               const linattn_gguf_array *tokens, linattn_tokenizer **out)
{
    linattn_gguf_array scores;
    linattn_status st = linattn_gguf_get_array(g, "tokenizer.ggml.scores", &scores);
    if (st != LINATTN_OK)
        return st;
    if (scores.count != tokens->count)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tokenizer.ggml.scores has %llu entries for %llu tokens", path,
                           (unsigned long long)scores.count, (unsigned long long)tokens->count);
    const int n = (int)tokens->count;
    size_t bytes = 4, max_len = 1;
    for (int i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if ((st = linattn_gguf_array_string(tokens, (uint64_t)i, &s, &len)) != LINATTN_OK)
            return linattn_err(LINATTN_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%d]: not a string",
                               path, i);
        bytes += 8 + len;
        max_len = len > max_len ? len : max_len;
    }
    unsigned char *img = mem_alloc(bytes);
    if (!img)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for %d tokens", path, n);
    uint32_t u = (uint32_t)max_len;
    memcpy(img, &u, 4);
    size_t at = 4;
    for (int i = 0; i < n && st == LINATTN_OK; i++) {
        const char *s;
        size_t len;
        double score;
        linattn_gguf_array_string(tokens, (uint64_t)i, &s, &len);
        if ((st = linattn_gguf_array_float(&scores, (uint64_t)i, &score)) != LINATTN_OK) {
            st = linattn_err(LINATTN_ERR_FORMAT, "%s: tokenizer.ggml.scores[%d]: not a number",
                             path, i);
            break;
        }
        float f = (float)score;
        memcpy(img + at, &f, 4);
        unsigned char *lenp = img + at + 4, *p = img + at + 8;
        size_t k = 0, w = 0;
        while (k < len) {
            if (len - k >= 3 && memcmp(s + k, METASPACE, 3) == 0) {
                p[w++] = ' ';
                k += 3;
            } else
                p[w++] = (unsigned char)s[k++];
        }
        uint32_t wl = (uint32_t)w;
        memcpy(lenp, &wl, 4);
        at += 8 + w;
    }
    if (st == LINATTN_OK)
        st = tok_load_llama2c(path, img, at, out);
    mem_free(img);
    if (st != LINATTN_OK)
        return st;
    linattn_tokenizer *t = *out;
    t->name = "gguf llama (sentencepiece)";
    /* llama.cpp's default is a space prefix; a file may turn it off */
    int prefix = 1;
    if (linattn_gguf_has(g, "tokenizer.ggml.add_space_prefix") &&
        (st = linattn_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &prefix)) != LINATTN_OK) {
        linattn_tokenizer_free(t);
        *out = NULL;
        return st;
    }
    t->no_dummy_prefix = !prefix;
    if ((st = special_ids(g, path, t, 1)) != LINATTN_OK ||
        (st = spm_added(g, path, tokens, t)) != LINATTN_OK) {
        linattn_tokenizer_free(t);
        *out = NULL;
    }
    return st;
}

/* buf of at least n bytes (its old bytes dropped): 0 when out of memory. */
static int room(char **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 1;
    mem_free(*buf);
    *cap = 2 * n + 64;
    return (*buf = mem_alloc(*cap)) != NULL;
}

/* Byte-level BPE (model "gpt2"): a tokenizer.json of the same vocabulary,
 * merges and special tokens, read by the Hugging Face reader. */
static linattn_status load_bpe(const linattn_gguf *g, const char *path,
                               const linattn_gguf_array *tokens, linattn_tokenizer **out)
{
    linattn_gguf_array merges, types = {0};
    linattn_status st = linattn_gguf_get_array(g, "tokenizer.ggml.merges", &merges);
    if (st != LINATTN_OK)
        return st;
    if (linattn_gguf_has(g, "tokenizer.ggml.token_type") &&
        (st = linattn_gguf_get_array(g, "tokenizer.ggml.token_type", &types)) != LINATTN_OK)
        return st;
    if (types.count && types.count != tokens->count)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: tokenizer.ggml.token_type has %llu entries for %llu tokens", path,
                           (unsigned long long)types.count, (unsigned long long)tokens->count);
    /* which pre-tokenizer: llama.cpp's regular expressions for the type
     * (without the key, its "default", as llama.cpp takes it); a type it
     * does not know, or one linattn does not do, is refused by name, as
     * llama.cpp refuses unknown ones: another split would give other ids */
    const char *pre = "default";
    size_t pre_len = 7;
    if (linattn_gguf_has(g, "tokenizer.ggml.pre") &&
        (st = linattn_gguf_get_string(g, "tokenizer.ggml.pre", &pre, &pre_len)) != LINATTN_OK)
        return st;
    const tok_pre_type *type = tok_pre_type_find(pre, pre_len);
    if (!type)
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: tokenizer.ggml.pre '%.*s' is not supported (llama.cpp's "
                           "pre-tokenizer types made of regular expressions alone: "
                           "docs/tokenizers.md)", path, (int)(pre_len < 40 ? pre_len : 40), pre);
    tok_named rule = named_rule(g);
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON *mlist = cJSON_AddArrayToObject(model, "merges");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    cJSON *pt = cJSON_AddObjectToObject(root, "pre_tokenizer");
    cJSON *seq = cJSON_AddArrayToObject(pt, "pretokenizers");
    int ok = root && model && vocab && mlist && added && pt && seq &&
             cJSON_AddStringToObject(model, "type", "BPE") &&
             cJSON_AddBoolToObject(model, "ignore_merges", type->ignore_merges) &&
             cJSON_AddStringToObject(pt, "type", "Sequence");
    /* each pattern an Isolated split, then the bytes as GPT-2's characters */
    for (int i = 0; ok && type->patterns[i]; i++) {
        cJSON *sp = cJSON_CreateObject();
        if (!sp || !cJSON_AddItemToArray(seq, sp)) {
            cJSON_Delete(sp);
            ok = 0;
            break;
        }
        cJSON *pat = cJSON_AddObjectToObject(sp, "pattern");
        ok = pat && cJSON_AddStringToObject(sp, "type", "Split") &&
             cJSON_AddStringToObject(pat, "Regex", type->patterns[i]) &&
             cJSON_AddStringToObject(sp, "behavior", "Isolated") &&
             cJSON_AddFalseToObject(sp, "invert");
    }
    cJSON *bl = ok ? cJSON_CreateObject() : NULL;
    if (bl && !cJSON_AddItemToArray(seq, bl)) {
        cJSON_Delete(bl);
        bl = NULL;
    }
    ok = ok && bl && cJSON_AddStringToObject(bl, "type", "ByteLevel") &&
         cJSON_AddFalseToObject(bl, "add_prefix_space") && cJSON_AddFalseToObject(bl, "use_regex");
    char *buf = NULL;
    size_t cap = 0;
    for (uint64_t i = 0; ok && st == LINATTN_OK && i < tokens->count; i++) {
        const char *s;
        size_t len;
        int64_t type = TYPE_NORMAL;
        if (linattn_gguf_array_string(tokens, i, &s, &len) != LINATTN_OK ||
            (types.count && linattn_gguf_array_int(&types, i, &type) != LINATTN_OK)) {
            st = linattn_err(LINATTN_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%llu] or its type: "
                             "not a string and an integer", path, (unsigned long long)i);
            break;
        }
        if (!room(&buf, &cap, len + 1)) {
            ok = 0;
            break;
        }
        if (memchr(s, '\0', len)) {
            st = linattn_err(LINATTN_ERR_UNSUPPORTED,
                             "%s: tokenizer.ggml.tokens[%llu] holds a NUL byte", path,
                             (unsigned long long)i);
            break;
        }
        memcpy(buf, s, len);
        buf[len] = '\0';
        /* a repeated string keeps its first id (the reader's hash), as
         * llama.cpp's token_to_id */
        ok = cJSON_AddNumberToObject(vocab, buf, (double)i) != NULL;
        if (ok && (type == TYPE_CONTROL || type == TYPE_USER_DEFINED)) {
            cJSON *a = cJSON_CreateObject();
            int strip = tok_named_strip(rule, s, len);
            ok = a && cJSON_AddNumberToObject(a, "id", (double)i) &&
                 cJSON_AddStringToObject(a, "content", buf) &&
                 cJSON_AddBoolToObject(a, "special", type == TYPE_CONTROL) &&
                 cJSON_AddBoolToObject(a, "lstrip", strip & 1) &&
                 cJSON_AddBoolToObject(a, "rstrip", strip & 2);
            if (a && !cJSON_AddItemToArray(added, a)) {
                cJSON_Delete(a);
                ok = 0;
            }
        }
    }
    for (uint64_t i = 0; ok && st == LINATTN_OK && i < merges.count; i++) {
        const char *s;
        size_t len;
        if (linattn_gguf_array_string(&merges, i, &s, &len) != LINATTN_OK) {
            st = linattn_err(LINATTN_ERR_FORMAT, "%s: tokenizer.ggml.merges[%llu]: not a string",
                             path, (unsigned long long)i);
            break;
        }
        if (!room(&buf, &cap, len + 1)) {
            ok = 0;
            break;
        }
        memcpy(buf, s, len);
        buf[len] = '\0';
        cJSON *m = cJSON_CreateString(buf);
        if (!m || !cJSON_AddItemToArray(mlist, m)) {
            cJSON_Delete(m);
            ok = 0;
        }
    }
    mem_free(buf);
    if (st == LINATTN_OK && !ok)
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for %llu tokens", path,
                         (unsigned long long)tokens->count);
    if (st == LINATTN_OK)
        st = tok_load_hf_root(path, root, out);
    cJSON_Delete(root);
    if (st != LINATTN_OK)
        return st;
    linattn_tokenizer *t = *out;
    t->name = "gguf gpt2 (byte-level BPE)";
    if ((st = special_ids(g, path, t, type->add_bos)) != LINATTN_OK) {
        linattn_tokenizer_free(t);
        *out = NULL;
    }
    return st;
}

linattn_status tok_load_gguf(const char *path, linattn_tokenizer **out)
{
    *out = NULL;
    linattn_gguf *g;
    linattn_status st = linattn_gguf_open(path, &g);
    if (st != LINATTN_OK)
        return st;
    const char *model = NULL;
    size_t len = 0;
    linattn_gguf_array tokens;
    if ((st = linattn_gguf_get_string(g, "tokenizer.ggml.model", &model, &len)) == LINATTN_OK &&
        (st = linattn_gguf_get_array(g, "tokenizer.ggml.tokens", &tokens)) == LINATTN_OK) {
        if (tokens.type != LINATTN_GGUF_STRING || tokens.count == 0 ||
            tokens.count > TOK_MAX_VOCAB)
            st = linattn_err(LINATTN_ERR_FORMAT,
                             "%s: tokenizer.ggml.tokens: expected 1..%d strings", path,
                             TOK_MAX_VOCAB);
        else if (len == 5 && memcmp(model, "llama", 5) == 0)
            st = load_spm(g, path, &tokens, out);
        else if (len == 4 && memcmp(model, "gpt2", 4) == 0)
            st = load_bpe(g, path, &tokens, out);
        else
            st = linattn_err(LINATTN_ERR_UNSUPPORTED,
                             "%s: tokenizer.ggml.model '%.*s' is not supported (llama or gpt2)",
                             path, (int)(len < 40 ? len : 40), model);
    }
    linattn_gguf_free(g);
    return st;
}
