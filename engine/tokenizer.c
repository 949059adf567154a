/* tokenizer.c: the tokenizer object (bytes, llama2.c, Hugging Face), its lookups and BPE, and the byte-level functions. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "tokenizer.h"

/* ------------------------------------------------------------------------ */
/* The byte-level functions of before the tokenizer object                   */
/* ------------------------------------------------------------------------ */

int linattn_tokenize(const char *text, size_t len, int *tokens)
{
    for (size_t i = 0; i < len; i++)
        tokens[i] = (unsigned char)text[i];
    return (int)len;
}

int linattn_token_byte(int token)
{
    return token >= 0 && token < 256 ? token : -1;
}

/* ------------------------------------------------------------------------ */
/* The object                                                                */
/* ------------------------------------------------------------------------ */

linattn_status tok_alloc(tok_kind kind, const char *source, int vocab, size_t piece_bytes,
                         linattn_tokenizer **out)
{
    *out = NULL;
    tok_keys_init();
    linattn_tokenizer *t = mem_calloc(1, sizeof *t);
    if (!t)
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer: out of memory");
    t->kind = kind;
    t->vocab = vocab;
    t->bos = t->eos = t->unk = -1;
    for (int b = 0; b < 256; b++)
        t->byte_token[b] = -1;
    t->source = mem_strdup(source ? source : "");
    t->piece = mem_alloc(piece_bytes + 1);
    t->piece_off = mem_calloc((size_t)vocab + 1, sizeof *t->piece_off);
    t->text_off = mem_calloc((size_t)vocab + 1, sizeof *t->text_off);
    if (!t->source || !t->piece || !t->piece_off || !t->text_off) {
        linattn_tokenizer_free(t);
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer: out of memory for %d tokens", vocab);
    }
    *out = t;
    return LINATTN_OK;
}

void linattn_tokenizer_free(linattn_tokenizer *t)
{
    if (!t)
        return;
    mem_free(t->source);
    mem_free(t->piece);
    mem_free(t->piece_off);
    mem_free(t->hash);
    mem_free(t->text);
    mem_free(t->text_off);
    mem_free(t->score);
    mem_free(t->pair_key);
    mem_free(t->pair_rank);
    mem_free(t->pair_id);
    mem_free(t->added);
    mem_free(t->added_strip);
    mem_free(t->canon);
    tok_trie_free(t->added_ac);
    tok_split_free(t);
    mem_free(t);
}

uint64_t tok_keys[2] = {0x9E3779B97F4A7C15ull, 0x1234567ull};
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#define P61 (((uint64_t)1 << 61) - 1)

static void draw_keys(void)
{
    uint64_t seed[2] = {0, 0};
    if (getentropy(seed, sizeof seed) != 0) { /* no entropy source: the clock and addresses */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed[0] = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        seed[1] = (uint64_t)(uintptr_t)&ts ^ (uint64_t)getpid() << 32;
    }
    uint64_t x = seed[0] ^ splitmix64(&seed[1]);
    tok_keys[0] = splitmix64(&x) | 1;
    tok_keys[1] = splitmix64(&x) % (P61 - 1) + 1; /* in 1..p-1 */
}

void tok_keys_init(void)
{
    pthread_once(&keys_once, draw_keys);
}

/* The piece hash: the bytes (each plus 1) as the coefficients of a
 * polynomial evaluated at the random point tok_keys[1] modulo the prime
 * 2^61 - 1, so two distinct pieces of at most L bytes agree with
 * probability at most L / 2^61 whatever their bytes; then multiply-shift
 * to a slot. (FNV-1a, before, let a file hold 65,536 pieces of one slot:
 * 21 s to load instead of 1.) */
__extension__ typedef unsigned __int128 tok_u128;

static size_t piece_slot(const linattn_tokenizer *t, const char *s, size_t n)
{
    const uint64_t r = tok_keys[1];
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) {
        tok_u128 p = (tok_u128)h * r;
        h = ((uint64_t)p & P61) + (uint64_t)(p >> 61) + (unsigned char)s[i] + 1;
        h = h >= P61 ? h - P61 : h; /* h < 2^62 + 257: one subtraction may leave h >= P61, */
        h = h >= P61 ? h - P61 : h; /* a second never does */
    }
    return tok_pair_slot(h, t->hash_mask);
}

linattn_status tok_build_hash(linattn_tokenizer *t)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)t->vocab)
        cap *= 2;
    t->hash = mem_alloc(cap * sizeof *t->hash);
    if (!t->hash)
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer: out of memory");
    memset(t->hash, 0xff, cap * sizeof *t->hash);
    t->hash_mask = cap - 1;
    t->max_piece = 0;
    for (int id = 0; id < t->vocab; id++) {
        const char *s = t->piece + t->piece_off[id];
        size_t n = tok_piece_len(t, id);
        if (n > t->max_piece)
            t->max_piece = (uint32_t)n;
        for (size_t k = 1; k < n; k++) {
            unsigned bg = (unsigned)(unsigned char)s[k - 1] << 8 | (unsigned char)s[k];
            t->bigram[bg >> 6] |= 1ull << (bg & 63);
        }
        size_t i = piece_slot(t, s, n);
        for (;; i = (i + 1) & t->hash_mask) {
            int32_t o = t->hash[i];
            if (o < 0) {
                t->hash[i] = id;
                break;
            }
            if (tok_piece_len(t, o) == n && memcmp(t->piece + t->piece_off[o], s, n) == 0)
                break; /* a repeated string: the first id keeps it */
        }
    }
    return LINATTN_OK;
}

int tok_lookup(const linattn_tokenizer *t, const char *s, size_t n)
{
    if (n > t->max_piece)
        return -1;
    for (size_t i = piece_slot(t, s, n);; i = (i + 1) & t->hash_mask) {
        int32_t o = t->hash[i];
        if (o < 0)
            return -1;
        if (tok_piece_len(t, o) == n && memcmp(t->piece + t->piece_off[o], s, n) == 0)
            return o;
    }
}

int tok_utf8_len(unsigned char c)
{
    return c >= 0xF0 && c <= 0xF7 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC0 && c <= 0xDF ? 2 : 1;
}

linattn_status tok_push(tok_vec *v, int id)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 256;
        int *grown = mem_realloc(v->v, cap * sizeof *grown);
        if (!grown)
            return linattn_err(LINATTN_ERR_NOMEM, "tokenizer_encode: out of memory for %zu tokens",
                               cap);
        v->v = grown;
        v->cap = cap;
    }
    v->v[v->n++] = id;
    return LINATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* Tries and Aho-Corasick                                                    */
/* ------------------------------------------------------------------------ */

tok_trie *tok_trie_new(size_t bytes)
{
    tok_keys_init();
    tok_trie *tr = mem_calloc(1, sizeof *tr);
    if (!tr)
        return NULL;
    size_t cap = 16;
    while (cap < 2 * (bytes + 1))
        cap *= 2;
    tr->cap = bytes + 1 < UINT32_MAX ? (uint32_t)(bytes + 1) : UINT32_MAX;
    tr->edge_key = mem_calloc(cap, sizeof *tr->edge_key);
    tr->edge_to = mem_alloc(cap * sizeof *tr->edge_to);
    tr->edge_mask = cap - 1;
    tr->parent = mem_alloc((size_t)tr->cap * sizeof *tr->parent);
    tr->depth = mem_alloc((size_t)tr->cap * sizeof *tr->depth);
    tr->byte = mem_alloc(tr->cap);
    tr->value = mem_alloc((size_t)tr->cap * sizeof *tr->value);
    if (!tr->edge_key || !tr->edge_to || !tr->parent || !tr->depth || !tr->byte || !tr->value ||
        bytes + 1 >= UINT32_MAX) {
        tok_trie_free(tr);
        return NULL;
    }
    tr->n = 1;
    tr->parent[0] = tr->depth[0] = 0;
    tr->byte[0] = 0;
    tr->value[0] = -1;
    return tr;
}

void tok_trie_free(tok_trie *tr)
{
    if (!tr)
        return;
    mem_free(tr->edge_key);
    mem_free(tr->edge_to);
    mem_free(tr->parent);
    mem_free(tr->depth);
    mem_free(tr->fail);
    mem_free(tr->byte);
    mem_free(tr->value);
    mem_free(tr);
}

static size_t edge_slot(const tok_trie *tr, uint64_t key)
{
    size_t i = tok_pair_slot(key, tr->edge_mask);
    while (tr->edge_key[i] && tr->edge_key[i] != key)
        i = (i + 1) & tr->edge_mask;
    return i;
}

uint32_t tok_trie_child(const tok_trie *tr, uint32_t node, unsigned char c)
{
    size_t i = edge_slot(tr, ((uint64_t)node << 8 | c) + 1);
    return tr->edge_key[i] ? tr->edge_to[i] : 0;
}

int tok_trie_add(tok_trie *tr, const char *s, size_t n, int rev, int32_t v)
{
    uint32_t node = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[rev ? n - 1 - k : k];
        uint64_t key = ((uint64_t)node << 8 | c) + 1;
        size_t i = edge_slot(tr, key);
        if (!tr->edge_key[i]) {
            /* the capacity is the bytes announced: more is a caller's slip */
            if (tr->n >= tr->cap)
                return 0;
            uint32_t m = tr->n++;
            tr->parent[m] = node;
            tr->depth[m] = tr->depth[node] + 1;
            tr->byte[m] = c;
            tr->value[m] = -1;
            tr->edge_key[i] = key;
            tr->edge_to[i] = m;
        }
        node = tr->edge_to[i];
    }
    if (tr->value[node] < 0)
        tr->value[node] = v;
    return 1;
}

uint32_t tok_trie_step(const tok_trie *tr, uint32_t state, unsigned char c)
{
    for (;;) {
        uint32_t next = tok_trie_child(tr, state, c);
        if (next || state == 0)
            return next;
        state = tr->fail[state];
    }
}

int tok_trie_link(tok_trie *tr)
{
    /* nodes by depth (a counting sort): a node's failure link is shallower */
    uint32_t maxd = 0;
    for (uint32_t i = 0; i < tr->n; i++)
        maxd = tr->depth[i] > maxd ? tr->depth[i] : maxd;
    uint32_t *start = mem_calloc((size_t)maxd + 2, sizeof *start);
    uint32_t *order = mem_alloc((size_t)tr->n * sizeof *order);
    tr->fail = mem_alloc((size_t)tr->n * sizeof *tr->fail);
    if (!start || !order || !tr->fail) {
        mem_free(start);
        mem_free(order);
        return 0;
    }
    for (uint32_t i = 0; i < tr->n; i++)
        start[tr->depth[i] + 1]++;
    for (uint32_t d = 0; d <= maxd; d++)
        start[d + 1] += start[d];
    for (uint32_t i = 0; i < tr->n; i++)
        order[start[tr->depth[i]]++] = i;
    tr->fail[0] = 0;
    for (uint32_t k = 1; k < tr->n; k++) {
        uint32_t u = order[k], p = tr->parent[u];
        tr->fail[u] = p == 0 ? 0 : tok_trie_step(tr, tr->fail[p], tr->byte[u]);
        if (tr->value[u] < 0)
            tr->value[u] = tr->value[tr->fail[u]];
    }
    mem_free(start);
    mem_free(order);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* BPE: a heap of candidate pairs over a linked list of symbols             */
/* ------------------------------------------------------------------------ */

int tok_pair_find(const linattn_tokenizer *t, int a, int b, uint32_t *rank, int *id)
{
    if (!t->pair_key)
        return 0;
    uint64_t key = tok_pair_of(a, b);
    for (size_t i = tok_pair_slot(key, t->pair_mask);; i = (i + 1) & t->pair_mask) {
        if (t->pair_rank[i] < 0)
            return 0;
        if (t->pair_key[i] == key) {
            *rank = (uint32_t)t->pair_rank[i];
            *id = t->pair_id[i];
            return 1;
        }
    }
}

int tok_can_cut(const linattn_tokenizer *t, int a, int b)
{
    size_t la = tok_piece_len(t, a), lb = tok_piece_len(t, b);
    if (la == 0 || lb == 0)
        return 0;
    unsigned bg = (unsigned)(unsigned char)t->piece[t->piece_off[a] + la - 1] << 8 |
                  (unsigned char)t->piece[t->piece_off[b]];
    return !(t->bigram[bg >> 6] >> (bg & 63) & 1);
}

/* A candidate: its rank in the high half, the left symbol's position in the
 * low, so one comparison orders by rank, then leftmost. */
typedef uint64_t cand;

static void heap_push(cand *h, size_t *n, cand c)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= c)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
}

static cand heap_pop(cand *h, size_t *n)
{
    cand top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (last <= h[c])
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}

/* Each merge pops one candidate and pushes at most two, and there are at
 * most n - 1 merges over the n - 1 pairs of the start: the heap never holds
 * more than 2n. A popped candidate is taken when the pair now at its left
 * position still has its rank (the symbols may have changed into others of
 * the same rank: that pair is as good and as far left, so taking it is what
 * the entry pushed for it would do later); else it is stale. Joining the
 * best-ranked pair, leftmost on ties, gives what re-scanning the whole
 * sequence after every merge gives (llama2.c's encode): the order of the
 * surviving symbols never changes, so "leftmost" is the smallest start. */
long tok_bpe(const linattn_tokenizer *t, int *ids, long n, tok_pair_fn pair)
{
    if (n < 2)
        return n;
    int32_t *next = mem_alloc((size_t)n * sizeof *next);
    int32_t *prev = mem_alloc((size_t)n * sizeof *prev);
    cand *h = mem_alloc((size_t)n * 2 * sizeof *h);
    if (!next || !prev || !h) {
        mem_free(next);
        mem_free(prev);
        mem_free(h);
        return -1;
    }
    size_t nh = 0;
    uint32_t rank;
    int id;
    for (long i = 0; i < n; i++) {
        next[i] = i + 1 < n ? (int32_t)(i + 1) : -1;
        prev[i] = (int32_t)(i - 1);
    }
    for (long i = 0; i + 1 < n; i++)
        if (pair(t, ids[i], ids[i + 1], &rank, &id))
            heap_push(h, &nh, (cand)rank << 32 | (uint32_t)i);
    while (nh > 0) {
        cand c = heap_pop(h, &nh);
        int32_t l = (int32_t)(uint32_t)c, r = next[l];
        if (ids[l] < 0 || r < 0 || !pair(t, ids[l], ids[r], &rank, &id) ||
            rank != (uint32_t)(c >> 32))
            continue;
        ids[l] = id;
        ids[r] = -1;
        next[l] = next[r];
        if (next[r] >= 0)
            prev[next[r]] = l;
        if (prev[l] >= 0 && pair(t, ids[prev[l]], ids[l], &rank, &id))
            heap_push(h, &nh, (cand)rank << 32 | (uint32_t)prev[l]);
        if (next[l] >= 0 && pair(t, ids[l], ids[next[l]], &rank, &id))
            heap_push(h, &nh, (cand)rank << 32 | (uint32_t)l);
    }
    long m = 0;
    for (long i = 0; i >= 0; i = next[i])
        ids[m++] = ids[i];
    mem_free(next);
    mem_free(prev);
    mem_free(h);
    return m;
}

linattn_status tok_bpe_run(const linattn_tokenizer *t, tok_vec *out, size_t *run,
                           tok_pair_fn pair, int last)
{
    size_t n = out->n;
    if (!last && (n - *run <= TOK_BPE_RUN || !tok_can_cut(t, out->v[n - 2], out->v[n - 1])))
        return LINATTN_OK;
    size_t end = last ? n : n - 1;
    long m = tok_bpe(t, out->v + *run, (long)(end - *run), pair);
    if (m < 0)
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer_encode: out of memory");
    *run += (size_t)m; /* the merged run is out->v[old *run .. *run) */
    if (last) {
        out->n = *run;
        return LINATTN_OK;
    }
    out->v[*run] = out->v[n - 1]; /* the symbol held back starts the next run */
    out->n = *run + 1;
    return LINATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

static linattn_status load_bytes(linattn_tokenizer **out)
{
    linattn_tokenizer *t;
    linattn_status st = tok_alloc(TOK_BYTES, "", 256, 256, &t);
    if (st != LINATTN_OK)
        return st;
    t->name = "bytes";
    t->text = mem_alloc(256);
    if (!t->text) {
        linattn_tokenizer_free(t);
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer: out of memory");
    }
    for (int b = 0; b <= 256; b++) {
        if (b < 256)
            t->piece[b] = t->text[b] = (char)b;
        t->piece_off[b] = t->text_off[b] = (size_t)b;
    }
    if ((st = tok_build_hash(t)) != LINATTN_OK) {
        linattn_tokenizer_free(t);
        return st;
    }
    *out = t;
    return LINATTN_OK;
}

/* hf:PATH: a folder holding tokenizer.json, or the file itself. */
static linattn_status load_hf_spec(const char *path, linattn_tokenizer **out)
{
    struct stat sb;
    if (!path[0])
        return linattn_err(LINATTN_ERR_INVALID, "tokenizer 'hf:': no folder or tokenizer.json given");
    size_t n = strlen(path);
    char *file = mem_alloc(n + sizeof "/tokenizer.json");
    char *dir = mem_alloc(n + 2);
    if (!file || !dir) {
        mem_free(file);
        mem_free(dir);
        return linattn_err(LINATTN_ERR_NOMEM, "tokenizer: out of memory");
    }
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(file, n + sizeof "/tokenizer.json", "%s%stokenizer.json", path,
                 path[n - 1] == '/' ? "" : "/");
        strcpy(dir, path);
    } else {
        strcpy(file, path);
        const char *slash = strrchr(path, '/');
        if (slash == path)
            strcpy(dir, "/");
        else if (slash)
            snprintf(dir, n + 2, "%.*s", (int)(slash - path), path);
        else
            strcpy(dir, ".");
    }
    char *json = NULL;
    size_t len = 0;
    linattn_status st = safe_read_all(file, "tokenizer.json", TOK_MAX_FILE_BYTES, &json, &len);
    if (st == LINATTN_OK)
        st = tok_load_hf(file, json, len, dir, out);
    mem_free(json);
    mem_free(file);
    mem_free(dir);
    return st;
}

linattn_status linattn_tokenizer_load(const char *spec, linattn_tokenizer **out)
{
    if (!out)
        return linattn_err(LINATTN_ERR_INVALID, "tokenizer: out is NULL");
    *out = NULL;
    if (!spec || !spec[0] || strcmp(spec, "bytes") == 0)
        return load_bytes(out);
    if (strncmp(spec, "llama2c:", 8) == 0) {
        const char *path = spec + 8;
        char *data = NULL;
        size_t size = 0;
        if (!path[0])
            return linattn_err(LINATTN_ERR_INVALID, "tokenizer 'llama2c:': no file given");
        linattn_status st = safe_read_all(path, "tokenizer.bin", TOK_MAX_FILE_BYTES, &data, &size);
        if (st == LINATTN_OK)
            st = tok_load_llama2c(path, (const unsigned char *)data, size, out);
        mem_free(data);
        return st;
    }
    if (strncmp(spec, "hf:", 3) == 0)
        return load_hf_spec(spec + 3, out);
    if (strncmp(spec, "gguf:", 5) == 0) {
        if (!spec[5])
            return linattn_err(LINATTN_ERR_INVALID, "tokenizer 'gguf:': no file given");
        return tok_load_gguf(spec + 5, out);
    }
    return linattn_err(LINATTN_ERR_INVALID,
                       "tokenizer '%.200s': expected bytes, llama2c:PATH, hf:PATH or gguf:PATH",
                       spec);
}

/* ------------------------------------------------------------------------ */
/* Queries, encoding, decoding                                               */
/* ------------------------------------------------------------------------ */

const char *linattn_tokenizer_name(const linattn_tokenizer *t) { return t ? t->name : ""; }
const char *linattn_tokenizer_path(const linattn_tokenizer *t) { return t ? t->source : ""; }
int linattn_tokenizer_vocab(const linattn_tokenizer *t) { return t ? t->vocab : 0; }
int linattn_tokenizer_bos(const linattn_tokenizer *t) { return t ? t->bos : -1; }
int linattn_tokenizer_eos(const linattn_tokenizer *t) { return t ? t->eos : -1; }
int linattn_tokenizer_adds_bos(const linattn_tokenizer *t) { return t && t->bos >= 0 && t->add_bos; }

/* text[len] encoded as the part of a whole text that starts at byte base
 * (0: the text itself). */
static linattn_status encode(const linattn_tokenizer *t, const char *text, size_t len,
                             int add_bos, size_t base, int *tokens, size_t cap, size_t *n)
{
    if (!t || !n || (!text && len > 0))
        return linattn_err(LINATTN_ERR_INVALID, "tokenizer_encode: NULL argument");
    *n = 0;
    if (len > (size_t)INT_MAX - 2)
        return linattn_err(LINATTN_ERR_INVALID,
                           "tokenizer_encode: a text of %zu bytes is too long (at most %d)", len,
                           INT_MAX - 2);
    add_bos = add_bos && t->bos >= 0 && base == 0;
    if (t->kind == TOK_BYTES) { /* one token a byte: no scratch needed */
        size_t need = len + (size_t)add_bos;
        *n = need;
        if (!tokens)
            return LINATTN_OK;
        if (need > cap)
            return linattn_err(LINATTN_ERR_INVALID,
                               "tokenizer_encode: %zu tokens do not fit in %zu", need, cap);
        size_t k = 0;
        if (add_bos)
            tokens[k++] = t->bos;
        for (size_t i = 0; i < len; i++)
            tokens[k++] = (unsigned char)text[i];
        return LINATTN_OK;
    }
    tok_vec v = {0};
    linattn_status st = t->kind == TOK_LLAMA2C
                            ? tok_encode_llama2c(t, text, len, add_bos, base, &v)
                            : tok_encode_hf(t, text, len, add_bos, base, &v);
    if (st == LINATTN_OK) {
        *n = v.n;
        if (tokens && v.n > cap)
            st = linattn_err(LINATTN_ERR_INVALID,
                             "tokenizer_encode: %zu tokens do not fit in %zu", v.n, cap);
        else if (tokens && v.n)
            memcpy(tokens, v.v, v.n * sizeof *v.v);
    }
    mem_free(v.v);
    return st;
}

linattn_status linattn_tokenizer_encode(const linattn_tokenizer *t, const char *text, size_t len,
                                        int add_bos, int *tokens, size_t cap, size_t *n)
{
    return encode(t, text, len, add_bos, 0, tokens, cap, n);
}

size_t linattn_tokenizer_cut(const linattn_tokenizer *t, const char *text, size_t len,
                             size_t from, size_t want)
{
    if (!t || !text || from >= len)
        return len;
    if (t->kind == TOK_BYTES)
        return want < len - from ? from + (want ? want : 1) : len;
    return t->kind == TOK_LLAMA2C ? tok_cut_llama2c(t, text, len, from, want)
                                  : tok_cut_hf(t, text, len, from, want);
}

linattn_status linattn_tokenizer_encode_part(const linattn_tokenizer *t, const char *text,
                                             size_t from, size_t to, int add_bos, int *tokens,
                                             size_t cap, size_t *n)
{
    if (n)
        *n = 0;
    if (from > to)
        return linattn_err(LINATTN_ERR_INVALID,
                           "tokenizer_encode_part: the part [%zu, %zu) is backwards", from, to);
    return encode(t, text ? text + from : NULL, to - from, add_bos, from, tokens, cap, n);
}

linattn_status linattn_tokenizer_decode(const linattn_tokenizer *t, int prev, int token,
                                        const char **bytes, size_t *len)
{
    if (!t || !bytes || !len)
        return linattn_err(LINATTN_ERR_INVALID, "tokenizer_decode: NULL argument");
    if (token < 0 || token >= t->vocab)
        return linattn_err(LINATTN_ERR_INVALID,
                           "tokenizer_decode: token %d is outside the tokenizer's %d tokens "
                           "(%s)", token, t->vocab, t->name);
    const char *s = t->text + t->text_off[token];
    size_t n = t->text_off[token + 1] - t->text_off[token];
    const char *p = t->piece + t->piece_off[token];
    size_t pn = tok_piece_len(t, token);
    /* sentencepiece drops the space of the first word (its dummy prefix):
     * llama2.c after BOS (id 1), as run.c; Hugging Face's Strip decoder at
     * the start of a text too. A <0x20> byte token keeps its space. */
    int start = t->kind == TOK_LLAMA2C ? prev == 1 && t->bos == 1 && !t->no_dummy_prefix
                                       : t->strip_start && (prev < 0 || prev == t->bos);
    if (start && n > 0 && s[0] == ' ' && !(pn >= 3 && memcmp(p, "<0x", 3) == 0)) {
        s++;
        n--;
    }
    *bytes = s;
    *len = n;
    return LINATTN_OK;
}

/* The automaton that finds the added tokens in a text: their contents
 * reversed, each valued by its place in t->added (longest first: a
 * repeated content keeps its first place). */
linattn_status tok_added_build(linattn_tokenizer *t, const char *path)
{
    size_t bytes = 0;
    for (int k = 0; k < t->n_added; k++) {
        size_t n = t->text_off[t->added[k] + 1] - t->text_off[t->added[k]];
        bytes += n;
        t->added_max = n > t->added_max ? n : t->added_max;
    }
    t->added_ac = tok_trie_new(bytes);
    int ok = t->added_ac != NULL;
    for (int k = 0; k < t->n_added && ok; k++) {
        int id = t->added[k];
        ok = tok_trie_add(t->added_ac, t->text + t->text_off[id],
                          t->text_off[id + 1] - t->text_off[id], 1, k);
    }
    if (!ok || !tok_trie_link(t->added_ac))
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for %d added tokens", path,
                           t->n_added);
    return LINATTN_OK;
}

/* The automaton reads the text backwards, from the end of the longest
 * token that can start before `to` (its state then depends on no byte
 * after it), so each call costs (to - from) + added_max steps, amortized. */
void tok_added_matches(const linattn_tokenizer *t, const char *text, size_t len, size_t from,
                       size_t to, int32_t *match)
{
    size_t k = to + t->added_max - 1 < len ? to + t->added_max - 1 : len;
    uint32_t state = 0;
    while (k > from) {
        k--;
        state = tok_trie_step(t->added_ac, state, (unsigned char)text[k]);
        if (k < to)
            match[k - from] = t->added_ac->value[state];
    }
}

int tok_added_scan_begin(tok_added_scan *s, const linattn_tokenizer *t, const char *text,
                         size_t len)
{
    size_t win = t->added_max > 4096 ? t->added_max : 4096;
    *s = (tok_added_scan){t, text, len, win < len ? win : len, 0, 0, NULL};
    s->match = mem_alloc((s->win + 1) * sizeof *s->match);
    return s->match != NULL;
}

void tok_added_scan_end(tok_added_scan *s)
{
    mem_free(s->match);
    s->match = NULL;
}

int tok_added_next(tok_added_scan *s, size_t *at)
{
    for (size_t i = *at; i < s->len; i++) {
        if (i >= s->w1) {
            s->w0 = i;
            s->w1 = s->len - i < s->win ? s->len : i + s->win;
            tok_added_matches(s->t, s->text, s->len, s->w0, s->w1, s->match);
        }
        if (s->match[i - s->w0] >= 0) {
            *at = i;
            return s->match[i - s->w0];
        }
    }
    *at = s->len;
    return -1;
}

/* Whether p is inside the white space that the added token at next (hit)
 * takes with lstrip: white space on both sides of p up to it. */
static int in_lstrip(const linattn_tokenizer *t, const char *text, size_t p, size_t next, int hit)
{
    if (hit < 0 || !(t->added_strip[hit] & 1) || p == 0 || !tok_is_space(text[p - 1]))
        return 0;
    for (size_t k = p; k < next; k++)
        if (!tok_is_space(text[k]))
            return 0;
    return 1;
}

size_t tok_added_cut(const linattn_tokenizer *t, const char *text, size_t len, size_t from,
                     size_t want, tok_cut_fn can_cut, int not_after)
{
    size_t first = from + (want ? want : 1);
    if (first >= len || first < from)
        return len;
    tok_added_scan sc = {0};
    if (t->n_added && !tok_added_scan_begin(&sc, t, text, len))
        return len; /* no cut: the whole, which needs no memory here */
    size_t i = from, cut = len, after = SIZE_MAX, next = len;
    int hit = -1, known = 0; /* known: next (hit there) is the first token at or after i */
    while (i < len) {
        if (t->n_added && !known) {
            next = i;
            hit = tok_added_next(&sc, &next);
            known = 1;
        }
        if (hit < 0 || i < next) { /* no added token starts at i */
            if (i >= first && i != after && !in_lstrip(t, text, i, next, hit) &&
                can_cut(t, text, len, i)) {
                cut = i;
                break;
            }
            i++;
            continue;
        }
        int id = t->added[hit];
        i += t->text_off[id + 1] - t->text_off[id];
        if (t->added_strip[hit] & 2)
            while (i < len && tok_is_space(text[i]))
                i++;
        after = not_after ? i : SIZE_MAX;
        known = 0;
    }
    tok_added_scan_end(&sc);
    return cut;
}
