/* tokenizer_llama2c.c: llama2.c's tokenizer.bin (scores and pieces) and its encoding: code points, byte fallback, best-score merges. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

/* The file (export.py's layout, little-endian): u32 max_token_length, then
 * for each token: f32 score, i32 length, length bytes. The count of tokens
 * is not stored (llama2.c takes it from the model): every token up to the
 * end of the file is read, and a file that ends inside one is refused. */

#define MAX_TOKEN_LENGTH (1u << 20)

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
}

/* A piece "<0xXX>" stands for the byte XX; -1 otherwise. */
static int byte_piece(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>' || hexval(s[3]) < 0 || hexval(s[4]) < 0)
        return -1;
    return hexval(s[3]) * 16 + hexval(s[4]);
}

static int score_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x > y ? -1 : x < y ? 1 : 0;
}

/* The merge table: for each token m whose score merges (the first id of its
 * string), every split of its piece into a prefix and a suffix that are
 * both tokens is a pair (prefix, suffix) -> m. The prefixes of m that are
 * tokens come from walking a trie of the pieces along m, the suffixes from
 * a trie of the reversed pieces: O(total piece bytes), where joining the
 * two pieces of every candidate pair while encoding costs their length
 * each time. Ranks: the scores' order, higher first (equal scores tie, and
 * then the leftmost pair merges, as in run.c). */
static linattn_status build_pairs(linattn_tokenizer *t)
{
    size_t bytes = t->piece_off[t->vocab];
    t->canon = mem_alloc((size_t)t->vocab * sizeof *t->canon);
    float *sorted = mem_alloc((size_t)t->vocab * sizeof *sorted);
    tok_trie *fw = tok_trie_new(bytes), *bw = tok_trie_new(bytes);
    int32_t *pre = mem_alloc(((size_t)t->max_piece + 1) * sizeof *pre);
    int32_t *suf = mem_alloc(((size_t)t->max_piece + 1) * sizeof *suf);
    linattn_status st = LINATTN_OK;
    size_t npairs = 0, ns = 0;
    if (!t->canon || !sorted || !fw || !bw || !pre || !suf)
        goto nomem;
    for (int id = 0; id < t->vocab; id++) {
        const char *s = t->piece + t->piece_off[id];
        size_t n = tok_piece_len(t, id);
        t->canon[id] = tok_lookup(t, s, n);
        if (t->canon[id] != id)
            continue;
        if (!tok_trie_add(fw, s, n, 0, id) || !tok_trie_add(bw, s, n, 1, id))
            goto nomem;
        if (t->score[id] > -1e10f) {
            npairs += n + 1;
            sorted[ns++] = t->score[id];
        }
    }
    qsort(sorted, ns, sizeof *sorted, score_desc);
    size_t cap = 16;
    while (cap < 2 * npairs)
        cap *= 2;
    t->pair_key = mem_alloc(cap * sizeof *t->pair_key);
    t->pair_rank = mem_alloc(cap * sizeof *t->pair_rank);
    t->pair_id = mem_alloc(cap * sizeof *t->pair_id);
    if (!t->pair_key || !t->pair_rank || !t->pair_id)
        goto nomem;
    memset(t->pair_rank, 0xff, cap * sizeof *t->pair_rank);
    t->pair_mask = cap - 1;
    for (int m = 0; m < t->vocab; m++) {
        if (t->canon[m] != m || !(t->score[m] > -1e10f))
            continue;
        const char *s = t->piece + t->piece_off[m];
        size_t n = tok_piece_len(t, m);
        /* its rank: the first place of its score among the sorted ones */
        size_t lo = 0, hi = ns;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] > t->score[m])
                lo = mid + 1;
            else
                hi = mid;
        }
        uint32_t f = 0, r = 0;
        pre[0] = fw->value[0];
        suf[0] = bw->value[0];
        for (size_t k = 1; k <= n; k++) {
            f = f || k == 1 ? tok_trie_child(fw, f, (unsigned char)s[k - 1]) : 0;
            r = r || k == 1 ? tok_trie_child(bw, r, (unsigned char)s[n - k]) : 0;
            pre[k] = f ? fw->value[f] : -1;
            suf[k] = r ? bw->value[r] : -1;
        }
        for (size_t k = 0; k <= n; k++) {
            if (pre[k] < 0 || suf[n - k] < 0)
                continue;
            uint64_t key = tok_pair_of(pre[k], suf[n - k]);
            size_t i = tok_pair_slot(key, t->pair_mask);
            while (t->pair_rank[i] >= 0 && t->pair_key[i] != key)
                i = (i + 1) & t->pair_mask;
            t->pair_key[i] = key;
            t->pair_rank[i] = (int32_t)lo;
            t->pair_id[i] = m;
        }
    }
    goto done;
nomem:
    st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for the merges of %d tokens",
                     t->source, t->vocab);
done:
    mem_free(sorted);
    mem_free(pre);
    mem_free(suf);
    tok_trie_free(fw);
    tok_trie_free(bw);
    return st;
}

linattn_status tok_load_llama2c(const char *path, const unsigned char *data, size_t size,
                                linattn_tokenizer **out)
{
    *out = NULL;
    if (size < 4)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: truncated: %zu bytes, not even the 4-byte max_token_length "
                           "(a llama2.c tokenizer.bin?)", path, size);
    uint32_t max_len = le32(data);
    if (max_len == 0 || max_len > MAX_TOKEN_LENGTH)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: max_token_length %u is not in 1..%u (a llama2.c tokenizer.bin?)",
                           path, max_len, MAX_TOKEN_LENGTH);
    /* pass 1: count and check every entry */
    size_t pos = 4, bytes = 0;
    long n = 0;
    while (pos < size) {
        if (size - pos < 8)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: token %ld at byte %zu: truncated (%zu bytes left, a score "
                               "and a length need 8)", path, n, pos, size - pos);
        int32_t len = (int32_t)le32(data + pos + 4);
        if (len < 0 || (uint32_t)len > max_len)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: token %ld at byte %zu: length %d is not in 0..%u "
                               "(max_token_length)", path, n, pos, (int)len, max_len);
        if ((size_t)len > size - pos - 8)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: token %ld at byte %zu: truncated (length %d, %zu bytes left)",
                               path, n, pos, (int)len, size - pos - 8);
        pos += 8 + (size_t)len;
        bytes += (size_t)len;
        if (++n > TOK_MAX_VOCAB)
            return linattn_err(LINATTN_ERR_FORMAT, "%s: more than %d tokens", path,
                               TOK_MAX_VOCAB);
    }
    if (n == 0)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: no tokens after the header", path);

    linattn_tokenizer *t;
    linattn_status st = tok_alloc(TOK_LLAMA2C, path, (int)n, bytes, &t);
    if (st != LINATTN_OK)
        return st;
    t->name = "llama2c";
    t->score = mem_alloc((size_t)n * sizeof *t->score);
    t->text = mem_alloc(bytes + 1);
    if (!t->score || !t->text) {
        linattn_tokenizer_free(t);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for %ld tokens", path, n);
    }
    /* pass 2: fill */
    pos = 4;
    size_t at = 0, tat = 0;
    for (long i = 0; i < n; i++) {
        uint32_t bits = le32(data + pos);
        memcpy(&t->score[i], &bits, sizeof bits);
        size_t len = le32(data + pos + 4);
        const char *s = (const char *)data + pos + 8;
        t->piece_off[i] = at;
        memcpy(t->piece + at, s, len);
        at += len;
        t->text_off[i] = tat;
        int b = byte_piece(s, len);
        if (b >= 0)
            t->text[tat++] = (char)b;
        else {
            memcpy(t->text + tat, s, len);
            tat += len;
        }
        pos += 8 + len;
    }
    t->piece_off[n] = at;
    t->text_off[n] = tat;
    /* run.c's constants: <unk> 0, BOS 1, EOS 2 */
    t->bos = n > 1 ? 1 : -1;
    t->eos = n > 2 ? 2 : -1;
    t->add_bos = 1;
    if ((st = tok_build_hash(t)) != LINATTN_OK || (st = build_pairs(t)) != LINATTN_OK) {
        linattn_tokenizer_free(t);
        return st;
    }
    /* the byte fallback: the <0xXX> token where there is one (a GGUF
     * vocabulary may keep them anywhere), else run.c's byte + 3 */
    for (int b = 0; b < 256; b++) {
        char hex[8];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        int id = tok_lookup(t, hex, 6);
        t->byte_token[b] = id >= 0 ? id : b + 3;
    }
    *out = t;
    return LINATTN_OK;
}

/* A pair merges when the concatenation of its pieces is a token whose score
 * beats run.c's starting best of -1e10; the best score merges first. The
 * table holds every such pair, by canonical ids. */
static int pair_score(const linattn_tokenizer *t, int a, int b, uint32_t *rank, int *id)
{
    return tok_pair_find(t, t->canon[a], t->canon[b], rank, id);
}

/* A byte as its fallback token: <0xXX>, else byte + 3 (after <unk>, <s>,
 * </s>). */
static linattn_status push_byte(const linattn_tokenizer *t, unsigned char b, tok_vec *out,
                                size_t at)
{
    int id = t->byte_token[b];
    if (id >= t->vocab && at == SIZE_MAX)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: the dummy prefix ' ' is no token and its fallback token %d is "
                           "outside the %d tokens", t->source, id, t->vocab);
    if (id >= t->vocab)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: byte 0x%02x at byte %zu of the text is no token and its fallback "
                           "token %d is outside the %d tokens", t->source, b, at, id, t->vocab);
    return tok_push(out, id);
}

/* run.c's encode of text[len] (bytes base.. of the whole): the dummy-prefix
 * " " when prefix, each UTF-8 code point as its token or its bytes as byte
 * tokens, then merges (from *run: bos too, as in run.c). Where run.c would
 * write id -1 (a vocabulary without " "), the space's byte token stands
 * in. */
static linattn_status encode_text(const linattn_tokenizer *t, const char *text, size_t len,
                                  int prefix, size_t base, size_t run, tok_vec *out)
{
    linattn_status st = LINATTN_OK;
    if (prefix) {
        int space = tok_lookup(t, " ", 1);
        st = space >= 0 ? tok_push(out, space) : push_byte(t, ' ', out, SIZE_MAX);
    }
    size_t i = 0;
    while (st == LINATTN_OK && i < len) {
        /* a code point: a byte and the continuation bytes after it, at most 4
         * in all (stray continuation bytes group the same way) */
        size_t j = i + 1;
        while (j < len && j - i < 4 && ((unsigned char)text[j] & 0xC0) == 0x80)
            j++;
        int id = tok_lookup(t, text + i, j - i);
        if (id >= 0)
            st = tok_push(out, id);
        else
            for (size_t k = i; k < j && st == LINATTN_OK; k++)
                st = push_byte(t, (unsigned char)text[k], out, base + k);
        if (st == LINATTN_OK)
            st = tok_bpe_run(t, out, &run, pair_score, 0);
        i = j;
    }
    return st == LINATTN_OK ? tok_bpe_run(t, out, &run, pair_score, 1) : st;
}

/* BOS, then the text; with added tokens (a GGUF vocabulary's control,
 * user-defined and unknown tokens) the text is split at them first, as
 * llama.cpp does: each piece between them encoded alone, with the dummy
 * prefix when it is the text's start or follows an added token. */
linattn_status tok_encode_llama2c(const linattn_tokenizer *t, const char *text, size_t len,
                                  int add_bos, size_t base, tok_vec *out)
{
    size_t run = out->n;
    linattn_status st = add_bos ? tok_push(out, t->bos) : LINATTN_OK;
    if (st != LINATTN_OK)
        return st;
    if (!t->n_added)
        return encode_text(t, text, len, len > 0 && base == 0 && !t->no_dummy_prefix, base, run,
                           out);
    tok_added_scan sc;
    if (!tok_added_scan_begin(&sc, t, text, len))
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer_encode: out of memory for %zu bytes",
                           len);
    size_t seg = 0, i = 0;
    int after = base == 0; /* the piece at seg starts the text or follows an added token */
    for (int hit; st == LINATTN_OK && (hit = tok_added_next(&sc, &i)) >= 0;) {
        int id = t->added[hit];
        size_t end = i;
        if (t->added_strip[hit] & 1) /* lstrip: the white space before it goes with it */
            while (end > seg && tok_is_space(text[end - 1]))
                end--;
        if (end > seg)
            st = encode_text(t, text + seg, end - seg, after && !t->no_dummy_prefix, base + seg,
                             out->n, out);
        if (st == LINATTN_OK)
            st = tok_push(out, id);
        i += t->text_off[id + 1] - t->text_off[id];
        if (t->added_strip[hit] & 2) /* rstrip: the white space after it goes with it */
            while (i < len && tok_is_space(text[i]))
                i++;
        seg = i;
        after = 1;
    }
    if (st == LINATTN_OK && len > seg)
        st = encode_text(t, text + seg, len - seg, after && !t->no_dummy_prefix, base + seg,
                         seg == 0 ? run : out->n, out);
    tok_added_scan_end(&sc);
    return st;
}

/* The symbol an ASCII byte starts as (its token, else its byte token); -1
 * when it has neither. */
static int ascii_symbol(const linattn_tokenizer *t, unsigned char c)
{
    int id = tok_lookup(t, (const char *)&c, 1);
    return id >= 0 ? id : t->byte_token[c] < t->vocab ? t->byte_token[c] : -1;
}

/* Between two ASCII bytes (each its own code point) whose symbols no merge
 * can join. */
static int can_cut_at(const linattn_tokenizer *t, const char *text, size_t len, size_t p)
{
    (void)len;
    unsigned char a = (unsigned char)text[p - 1], b = (unsigned char)text[p];
    if (a >= 0x80 || b >= 0x80)
        return 0;
    int x = ascii_symbol(t, a), y = ascii_symbol(t, b);
    return x >= 0 && y >= 0 && tok_can_cut(t, x, y);
}

/* There, and not inside an added token or right after one (a part
 * starting there would lose the dummy prefix that follows it). */
size_t tok_cut_llama2c(const linattn_tokenizer *t, const char *text, size_t len, size_t from,
                       size_t want)
{
    return tok_added_cut(t, text, len, from, want, can_cut_at, 1);
}
