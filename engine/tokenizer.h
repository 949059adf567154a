/* tokenizer.h: the tokenizer object its readers (bytes, llama2.c, Hugging Face) fill; not installed. */
#ifndef LINATTN_ENGINE_TOKENIZER_H
#define LINATTN_ENGINE_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* Largest tokenizer file read (a big tokenizer.json is about 10 MB). */
#define TOK_MAX_FILE_BYTES ((size_t)256 << 20)
/* Most tokens a tokenizer may have (ids are ints; a model takes at most
 * LINATTN_MAX_VOCAB of them). */
#define TOK_MAX_VOCAB (1 << 24)

typedef enum tok_kind { TOK_BYTES, TOK_LLAMA2C, TOK_HF } tok_kind;

/* A byte trie (node 0 the root), optionally an Aho-Corasick automaton: its
 * edges in one hash keyed by (node, byte). */
typedef struct tok_trie {
    uint64_t *edge_key;  /* node << 8 | byte, plus 1 (0: empty slot) */
    uint32_t *edge_to;
    size_t edge_mask;
    uint32_t n, cap;     /* nodes */
    uint32_t *parent, *depth, *fail;
    unsigned char *byte; /* of the edge into each node */
    int32_t *value;      /* [n] a stored string's value, -1 none; after
                          * tok_trie_link: the value of the longest stored
                          * suffix of the node's string */
} tok_trie;

/* An empty trie for about `bytes` bytes of strings; NULL when out of memory. */
tok_trie *tok_trie_new(size_t bytes);
void tok_trie_free(tok_trie *tr);
/* Stores s[0..n) (in reverse when rev) with value v, unless already stored.
 * 0 when out of memory. */
int tok_trie_add(tok_trie *tr, const char *s, size_t n, int rev, int32_t v);
/* The child of node by byte c, or 0 (the root is nobody's child). */
uint32_t tok_trie_child(const tok_trie *tr, uint32_t node, unsigned char c);
/* Turns the trie into an Aho-Corasick automaton (failure links, values of
 * the longest stored suffix). 0 when out of memory. */
int tok_trie_link(tok_trie *tr);
/* One step of the automaton. */
uint32_t tok_trie_step(const tok_trie *tr, uint32_t state, unsigned char c);

/* How a Hugging Face BPE tokenizer turns text into the strings its
 * vocabulary holds. */
typedef enum hf_form {
    HF_PLAIN,      /* no pre-tokenizer: the text's characters as they are */
    HF_BYTELEVEL,  /* GPT-2: each byte as a printable character, words split first */
    HF_METASPACE,  /* sentencepiece: ' ' -> U+2581, a prefix U+2581, <0xXX> byte fallback */
} hf_form;

/* Where a metaspace prefix goes. */
enum { PREPEND_NEVER, PREPEND_FIRST, PREPEND_ALWAYS };

/* How a split keeps what its pattern matches (Hugging Face's
 * SplitDelimiterBehavior). */
typedef enum split_behavior {
    SPLIT_ISOLATED,    /* matches and the text between them, each a piece */
    SPLIT_REMOVED,     /* matches dropped */
    SPLIT_MERGED_PREV, /* a match joins the piece before it */
    SPLIT_MERGED_NEXT, /* ...the piece after it */
    SPLIT_CONTIGUOUS,  /* adjacent matches are one piece */
} split_behavior;

/* Most splits a pre-tokenizer sequence may hold. */
#define TOK_MAX_SPLITS 16

/* What a split's pattern does at a cut (see tok_split_can_cut). */
enum { SPLIT_CUT_UNKNOWN, SPLIT_CUT_BOUNDARY, SPLIT_CUT_NEUTRAL };

/* One regular-expression split of the pre-tokenizer (pretok.c). */
typedef struct tok_split {
    void *code;        /* pcre2_code_8, JIT-compiled when the platform lets it */
    split_behavior behavior;
    int invert;        /* the pattern says what to keep, not where to split */
    int cut;           /* SPLIT_CUT_*: what it does at "a| b" (tok_split_can_cut) */
    char *pattern;     /* as given (a GGUF writer names the pre-type by it) */
    int literal;
} tok_split;

struct linattn_tokenizer {
    tok_kind kind;
    char *source;        /* the file read ("" for bytes) */
    const char *name;    /* "bytes", "llama2c", "hf byte-level BPE", ... */
    int vocab;           /* ids 0..vocab-1 */
    int bos, eos;        /* -1: none */
    int add_bos;         /* whether a text starts with bos (bos >= 0) */

    /* What encoding matches: the string of each token (piece_off[vocab + 1]
     * into piece), and an open-addressing hash of them (first id wins). */
    char *piece;
    size_t *piece_off;
    uint32_t max_piece;
    int32_t *hash;       /* [hash_mask + 1], -1 empty */
    size_t hash_mask;
    /* What decoding gives: the bytes of each token (text_off[vocab + 1]). */
    char *text;
    size_t *text_off;

    /* llama2.c: the score of each token (higher merges first), and the id
     * whose piece each id's piece is (the first id with that string: pairs
     * are keyed by these) */
    float *score;
    int32_t *canon;
    int no_dummy_prefix; /* GGUF add_space_prefix = false: no " " first, none dropped */
    /* bit (a << 8 | b) set: bytes a, b stand side by side in some piece, so a
     * merge may join symbols that end with a and start with b */
    uint64_t bigram[1024];

    /* Hugging Face */
    hf_form form;
    int byte_token[256]; /* byte-level: the token of each byte's character; metaspace
                          * with byte_fallback: the <0xXX> tokens; -1: none */
    uint64_t *pair_key;  /* merges: (left id, right id) -> rank and merged id */
    int32_t *pair_rank, *pair_id;
    size_t pair_mask;
    int *added;          /* added tokens (special tokens), ids, longest content first */
    unsigned char *added_strip; /* bit 1: lstrip, bit 2: rstrip, bit 4: special (what a
                          * GGUF file calls a control token, not a user-defined one) */
    int n_added;
    tok_trie *added_ac;  /* their contents reversed, as an Aho-Corasick automaton */
    size_t added_max;    /* the longest content */
    int unk;             /* -1: none */
    int fuse_unk, byte_fallback, ignore_merges;
    char meta[8];        /* the metaspace replacement's UTF-8 ("\xe2\x96\x81") */
    size_t meta_len;
    int prepend;         /* PREPEND_*: where the metaspace prefix goes */
    int meta_pretok;     /* the Metaspace pre-tokenizer (not a normalizer): a text that
                          * starts with the replacement gets no second one */
    int meta_split;      /* metaspace pre-tokenizer splits words before each replacement */
    int add_prefix_space, use_regex; /* byte-level */
    tok_split split[TOK_MAX_SPLITS]; /* the pre-tokenizer's splits, in order: each one
                          * splits the pieces of the one before; the last one's
                          * pieces are the words BPE merges within */
    int n_split;
    int strip_start;     /* decoding drops one leading space at the start and after bos */
};

/* Length of token id's string / decoded bytes. */
static inline size_t tok_piece_len(const linattn_tokenizer *t, int id)
{
    return t->piece_off[id + 1] - t->piece_off[id];
}

/* A new tokenizer of `vocab` ids with its arrays for pieces of `piece_bytes`
 * bytes in all (filled by the reader), bos/eos -1. */
linattn_status tok_alloc(tok_kind kind, const char *source, int vocab, size_t piece_bytes,
                         linattn_tokenizer **out);
/* Builds the piece hash once every piece is in place. */
linattn_status tok_build_hash(linattn_tokenizer *t);
/* The id whose piece is s[0..n), or -1. */
int tok_lookup(const linattn_tokenizer *t, const char *s, size_t n);

/* A growing list of token ids. */
typedef struct tok_vec {
    int *v;
    size_t n, cap;
} tok_vec;

/* BPE over a sequence of symbols (token ids), in place: repeatedly joins the
 * adjacent pair the callback ranks best (lowest rank; ties: the leftmost),
 * as long as some pair has a rank. Returns the new length, or -1 when out
 * of memory. pair returns 0 when (a, b) does not merge, else 1 with *rank
 * (in 0..INT32_MAX) and the merged *id. O(n log n). */
typedef int (*tok_pair_fn)(const linattn_tokenizer *t, int a, int b, uint32_t *rank, int *id);
long tok_bpe(const linattn_tokenizer *t, int *ids, long n, tok_pair_fn pair);

/* The merge table (pair_key, pair_rank, pair_id): a pair's key and slot,
 * and its lookup (a tok_pair_fn). */
static inline uint64_t tok_pair_of(int a, int b)
{
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}
/* The random key of every table's slots, drawn once per process
 * (tok_keys_init): [0] an odd multiplier, [1] the point the piece
 * polynomial is taken at. A fixed hash lets a file pick keys that share a
 * slot and makes every insert walk one long cluster (quadratic). */
extern uint64_t tok_keys[2];
void tok_keys_init(void);
/* Multiply-shift (Dietzfelbinger): the top bits of key times a random odd
 * number; two distinct keys share a slot with probability at most
 * 2 / (mask + 1), however they were chosen. mask + 1 is a power of 2, > 1. */
static inline size_t tok_pair_slot(uint64_t key, size_t mask)
{
    return (size_t)((key * tok_keys[0]) >> __builtin_clzll((unsigned long long)mask)) & mask;
}
int tok_pair_find(const linattn_tokenizer *t, int a, int b, uint32_t *rank, int *id);

/* Symbols are joined by BPE in runs of about this many: a word (or a
 * llama2.c text) is cut between two symbols that no merge can join (see
 * tok_can_cut), so the working memory of a merge is bounded whatever the
 * text's length, and the tokens are those of one run over the whole. */
#define TOK_BPE_RUN 65536
/* Whether no token's piece holds the last byte of a's piece followed by the
 * first of b's: then no merge ever joins a symbol ending in a with one
 * starting with b, and BPE on each side of them alone gives what BPE over
 * both gives. */
int tok_can_cut(const linattn_tokenizer *t, int a, int b);
/* out->v[*run..out->n) are symbols not merged yet. When last, merges them
 * all; else, when there are more than TOK_BPE_RUN and no merge can join the
 * last two, merges all but the last, which then starts the run. */
linattn_status tok_bpe_run(const linattn_tokenizer *t, tok_vec *out, size_t *run,
                           tok_pair_fn pair, int last);

/* C's isspace in the C locale: what an added token's lstrip and rstrip take. */
static inline int tok_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Added tokens (t->added, n_added, longest content first): their
 * automaton (added_ac, added_max); path names the file in messages. */
linattn_status tok_added_build(linattn_tokenizer *t, const char *path);
/* match[k - from] for the text's bytes k in [from, to): the added token
 * (its place in t->added) that is the longest to start at byte k, or -1. */
void tok_added_matches(const linattn_tokenizer *t, const char *text, size_t len, size_t from,
                       size_t to, int32_t *match);

/* The added tokens of a text, left to right, a window of bytes at a time. */
typedef struct tok_added_scan {
    const linattn_tokenizer *t;
    const char *text;
    size_t len, win, w0, w1; /* match[] holds bytes [w0, w1) */
    int32_t *match;
} tok_added_scan;
/* 0 when out of memory. */
int tok_added_scan_begin(tok_added_scan *s, const linattn_tokenizer *t, const char *text,
                         size_t len);
void tok_added_scan_end(tok_added_scan *s);
/* The first added token that starts at or after byte *at: its place in
 * t->added, *at moved to its start; -1 (and *at = len) when none. */
int tok_added_next(tok_added_scan *s, size_t *at);

/* Whether a reader's encoding may be cut at byte p of a stretch between
 * added tokens (no added token at p). */
typedef int (*tok_cut_fn)(const linattn_tokenizer *t, const char *text, size_t len, size_t p);
/* The first place from from + want (at least from + 1) that the encoder's
 * scan of added tokens from `from` visits (no added token starts there;
 * not_after: nor does one end there) and can_cut allows; len when none.
 * Encoding from there alone finds the same added tokens: the scan depends
 * only on the bytes from its place on, and the longest token at a place
 * it visits ends before the cut or it would have been taken. */
size_t tok_added_cut(const linattn_tokenizer *t, const char *text, size_t len, size_t from,
                     size_t want, tok_cut_fn can_cut, int not_after);

/* UTF-8 length of the character starting with byte c (1 for a byte that
 * cannot start one). */
int tok_utf8_len(unsigned char c);

/* The readers: a file's bytes (path names it in messages). */
linattn_status tok_load_llama2c(const char *path, const unsigned char *data, size_t size,
                                linattn_tokenizer **out);
/* json[len] is tokenizer.json; dir (may be NULL) is its folder, where
 * config.json and tokenizer_config.json are looked for. */
linattn_status tok_load_hf(const char *path, const char *json, size_t len, const char *dir,
                           linattn_tokenizer **out);

/* The same over a tokenizer.json already parsed (built by tok_load_gguf),
 * with no side files; bos, eos and add_bos as its post-processor says. */
struct cJSON;
linattn_status tok_load_hf_root(const char *path, const struct cJSON *root,
                                linattn_tokenizer **out);
/* The vocabulary of a GGUF file (tokenizer.ggml.*): model "llama"
 * (sentencepiece scores, byte fallback) as a llama2.c tokenizer, "gpt2"
 * (byte-level BPE merges) as a Hugging Face one. */
linattn_status tok_load_gguf(const char *path, linattn_tokenizer **out);

/* What llama.cpp does to a GGUF vocabulary's special tokens (control,
 * user-defined, unknown) by the file's names (llama_vocab::impl::load,
 * "set attributes by model/tokenizer/architecture name"), which no key
 * says: for a tokenizer.ggml.pre holding jina-v2-de, jina-v2-es or
 * jina-v2-code, or an architecture holding nomic-bert-moe or jina-bert-v3,
 * <mask> takes the white space before it (lstrip); else for a general.name
 * holding phi-3 or phi3 (ASCII case aside), every special token but <unk>,
 * <s> and <|endoftext|> takes the white space after it (rstrip), and
 * llama.cpp looks up those three and </s> (tok_phi3_needs): a file that
 * lacks one does not load; else for one holding modern-bert, [MASK] takes
 * the white space before it. Each argument may be NULL (the key absent). */
typedef enum { TOK_NAMED_NONE, TOK_NAMED_JINA, TOK_NAMED_PHI3, TOK_NAMED_MODERN_BERT } tok_named;
tok_named tok_named_rule(const char *name, size_t name_len, const char *pre, size_t pre_len,
                         const char *arch, size_t arch_len);
/* The strip bits (1 lstrip, 2 rstrip) rule gives a special token of text
 * piece[0..len). */
int tok_named_strip(tok_named rule, const char *piece, size_t len);
extern const char *const tok_phi3_needs[]; /* NULL-terminated */

/* The pre-tokenizer's splits (pretok.c). Adds one to t->split: pattern
 * (a regular expression, or a literal string when literal) compiled for
 * UTF-8 with Unicode properties; where names it in messages ("FILE:
 * pre_tokenizer[2]"). */
linattn_status tok_split_add(linattn_tokenizer *t, const char *where, const char *pattern,
                             int literal, split_behavior behavior, int invert);
/* A llama.cpp BPE pre-type (tokenizer.ggml.pre): its patterns (NULL
 * ends them), each an Isolated split, and what llama.cpp sets with it. */
typedef struct tok_pre_type {
    const char *names;             /* the names llama.cpp knows it by, space-separated */
    const char *const *patterns;
    int ignore_merges, add_bos;
} tok_pre_type;
/* The pre-type named name[0..len), or NULL when llama.cpp has no such name
 * or linattn does not do it. */
const tok_pre_type *tok_pre_type_find(const char *name, size_t len);
/* The first name (its *len bytes) of the pre-type whose patterns are t's
 * splits (each an Isolated regular expression; tokenizer.json's spellings
 * of a pattern taken as llama.cpp's) and whose ignore_merges is t's; NULL
 * for none. */
const char *tok_pre_type_name(const linattn_tokenizer *t, size_t *len);
/* The patterns of llama.cpp's source that the table holds changed, as
 * {llama.cpp's, linattn's}, ending with NULLs: llama.cpp gives them a text
 * whose non-ASCII spaces are U+000B, and linattn's match as they do then. */
extern const char *const tok_pre_adapted[][2];
/* GPT-2's word pattern, as the ByteLevel pre-tokenizer (use_regex) applies it. */
extern const char tok_gpt2_pattern[];
void tok_split_free(linattn_tokenizer *t);
/* Match space for one encoding at a time (one thread): NULL when out of
 * memory (recorded), or when t has no splits (then nothing to free). */
linattn_status tok_split_begin(const linattn_tokenizer *t, void **md);
void tok_split_end(void *md);
/* Runs the splits over s[0..n) and hands each final piece, in order, to
 * fn; stops at fn's first error. base: where s starts in the whole text,
 * for messages. */
typedef linattn_status (*tok_piece_fn)(void *ctx, const char *s, size_t n);
linattn_status tok_split_run(const linattn_tokenizer *t, void *md, const char *s, size_t n,
                             size_t base, tok_piece_fn fn, void *ctx);
/* Whether every split gives the same pieces when s is cut at p as when
 * it is not: text[p - 1] an ASCII letter, text[p] ' ', text[p + 1] an
 * ASCII letter (the caller checks), and each split's pattern one whose
 * behaviour there is known (a table of the patterns real tokenizers use). */
int tok_split_can_cut(const linattn_tokenizer *t);

/* Appends id; LINATTN_ERR_NOMEM (recorded) when it cannot grow. */
linattn_status tok_push(tok_vec *v, int id);

/* Encoders: append the tokens of text[len] to out. base: where the text
 * starts in the whole (for messages); base > 0: it continues a text at a
 * place tok_cut_* chose (no bos, no prefix: its tokens are the whole's). */
linattn_status tok_encode_llama2c(const linattn_tokenizer *t, const char *text, size_t len,
                                  int add_bos, size_t base, tok_vec *out);
linattn_status tok_encode_hf(const linattn_tokenizer *t, const char *text, size_t len,
                             int add_bos, size_t base, tok_vec *out);
/* The first place p >= from + want (p < len), at or after which the text
 * can be cut: the tokens of text[0..p) and of text[p..len) (encoded as a
 * continuation) are those of the whole; len when there is none. from is 0
 * or such a place. */
size_t tok_cut_llama2c(const linattn_tokenizer *t, const char *text, size_t len, size_t from,
                       size_t want);
size_t tok_cut_hf(const linattn_tokenizer *t, const char *text, size_t len, size_t from,
                  size_t want);

#endif
