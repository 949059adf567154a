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

/* How a Hugging Face BPE tokenizer turns text into the strings its
 * vocabulary holds. */
typedef enum hf_form {
    HF_PLAIN,      /* no pre-tokenizer: the text's characters as they are */
    HF_BYTELEVEL,  /* GPT-2: each byte as a printable character, words split first */
    HF_METASPACE,  /* sentencepiece: ' ' -> U+2581, a prefix U+2581, <0xXX> byte fallback */
} hf_form;

/* Where a metaspace prefix goes. */
enum { PREPEND_NEVER, PREPEND_FIRST, PREPEND_ALWAYS };

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

    /* llama2.c: the score of each token (higher merges first) */
    float *score;

    /* Hugging Face */
    hf_form form;
    int byte_token[256]; /* byte-level: the token of each byte's character; metaspace
                          * with byte_fallback: the <0xXX> tokens; -1: none */
    uint64_t *pair_key;  /* merges: (left id, right id) -> rank and merged id */
    int32_t *pair_rank, *pair_id;
    size_t pair_mask;
    int *added;          /* added tokens (special tokens), ids, longest content first */
    unsigned char *added_strip; /* bit 1: lstrip, bit 2: rstrip */
    int n_added;
    int unk;             /* -1: none */
    int fuse_unk, byte_fallback, ignore_merges;
    char meta[8];        /* the metaspace replacement's UTF-8 ("\xe2\x96\x81") */
    size_t meta_len;
    int prepend;         /* PREPEND_*: where the metaspace prefix goes */
    int meta_pretok;     /* the Metaspace pre-tokenizer (not a normalizer): a text that
                          * starts with the replacement gets no second one */
    int meta_split;      /* metaspace pre-tokenizer splits words before each replacement */
    int add_prefix_space, use_regex; /* byte-level */
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

/* BPE over a sequence of symbols (token ids), in place: repeatedly joins the
 * adjacent pair the callback ranks best (lowest rank; ties: the leftmost),
 * as long as some pair has a rank. Returns the new length, or -1 when out
 * of memory. rank_fn returns 0 when (a, b) does not merge, else 1 with
 * *rank and the merged *id. */
typedef int (*tok_pair_fn)(const linattn_tokenizer *t, int a, int b, double *rank, int *id,
                           char *scratch);
long tok_bpe(const linattn_tokenizer *t, int *ids, long n, tok_pair_fn pair, char *scratch);

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

/* A growing list of token ids. */
typedef struct tok_vec {
    int *v;
    size_t n, cap;
} tok_vec;
/* Appends id; LINATTN_ERR_NOMEM (recorded) when it cannot grow. */
linattn_status tok_push(tok_vec *v, int id);

/* Encoders: append the text's tokens to out. */
linattn_status tok_encode_llama2c(const linattn_tokenizer *t, const char *text, size_t len,
                                  int add_bos, tok_vec *out);
linattn_status tok_encode_hf(const linattn_tokenizer *t, const char *text, size_t len,
                             int add_bos, tok_vec *out);

#endif
