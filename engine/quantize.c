/* quantize.c: a model's weights written as a GGUF file llama.cpp reads, its matrices in ggml's block types (`linattn quantize`). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "gguf.h"
#include "json.h"
#include "internal.h"
#include "source.h"
#include "tokenizer.h"
#include "weights.h"
#include "../simd/quants.h"

/* ---- the types ------------------------------------------------------------------- */

/* What --type names: the type of most matrices, and whether attn_v and
 * ffn_down of some layers get Q6_K (llama.cpp's _M mixes). */
static const struct quant_kind {
    const char *name;
    uint32_t type;      /* ggml type of the matrices */
    uint32_t file_type; /* general.file_type (llama.cpp's llama_ftype) */
    int mix;            /* _M: more bits where llama.cpp puts them */
} kinds[] = {
    {"f32", LINATTN_GGML_F32, 0, 0},        {"f16", LINATTN_GGML_F16, 1, 0},
    {"q8_0", LINATTN_GGML_Q8_0, 7, 0},      {"q4_0", LINATTN_GGML_Q4_0, 2, 0},
    {"q4_k", LINATTN_GGML_Q4_K, 14, 0},     {"q5_k", LINATTN_GGML_Q5_K, 16, 0},
    {"q6_k", LINATTN_GGML_Q6_K, 18, 0},     {"q4_k_m", LINATTN_GGML_Q4_K, 15, 1},
    {"q5_k_m", LINATTN_GGML_Q5_K, 17, 1},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

const char *linattn_quantize_types(void)
{
    return "f32, f16, q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m, q5_k_m";
}

/* llama.cpp's use_more_bits: the first and last eighth of the layers and
 * every third one between. */
static int more_bits(int layer, int n)
{
    return layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2;
}

/* The type of tensor gguf_name (rows x cols, cols 0: a vector) under kind k. */
static uint32_t type_of(const struct quant_kind *k, const char *name, size_t cols, int n_layers)
{
    if (cols == 0)
        return LINATTN_GGML_F32; /* norms stay F32, as llama.cpp keeps them */
    uint32_t t = k->type;
    int layer = -1;
    if (strncmp(name, "blk.", 4) == 0)
        layer = atoi(name + 4);
    int quantized = t != LINATTN_GGML_F32 && t != LINATTN_GGML_F16;
    if (quantized && t != LINATTN_GGML_Q8_0 && strcmp(name, "output.weight") == 0)
        t = LINATTN_GGML_Q6_K;
    if (k->mix && layer >= 0 && (strstr(name, ".attn_v.") || strstr(name, ".ffn_down.")) &&
        more_bits(layer, n_layers))
        t = LINATTN_GGML_Q6_K;
    size_t be, bb;
    if (quantized && linattn_quant_block((int)t, &be, &bb) && cols % be != 0)
        t = cols % 32 == 0 ? LINATTN_GGML_Q8_0 : LINATTN_GGML_F16; /* rows not whole blocks */
    return t;
}

/* ---- quantizers (ours: simple scale and offset fits per block) ------------------- */

static void put_half(uint8_t *p, float v)
{
    uint16_t h = linattn_f32_to_f16(v);
    memcpy(p, &h, 2);
}

static int nearest(float v)
{
    return (int)lrintf(v);
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* q = round(x / d) with d = max|x| / 127 (ggml's own Q8_0). */
static void q8_0_block(const float *x, uint8_t *out)
{
    float amax = 0;
    for (int i = 0; i < 32; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
    put_half(out, d);
    for (int i = 0; i < 32; i++)
        out[2 + i] = (uint8_t)(int8_t)clampi(nearest(x[i] * id), -127, 127);
}

/* The signed value of largest magnitude maps to -8: 16 levels d (q - 8). */
static void q4_0_block(const float *x, uint8_t *out)
{
    float amax = 0, max = 0;
    for (int i = 0; i < 32; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
    put_half(out, d);
    for (int j = 0; j < 16; j++) {
        int a = clampi((int)(x[j] * id + 8.5f), 0, 15), b = clampi((int)(x[j + 16] * id + 8.5f), 0, 15);
        out[2 + j] = (uint8_t)(a | b << 4);
    }
}

/* Q4_K and Q5_K: per 32, w = scale q - min with q in 0..levels; the 8
 * scales and mins as 6-bit multiples of d and dmin (halfs). */
static void qk_block(const float *x, uint8_t *out, int five)
{
    const int levels = five ? 31 : 15;
    float scale[8], mn[8], smax = 0, mmax = 0;
    for (int j = 0; j < 8; j++) {
        float lo = 0, hi = 0; /* the min is 0 or below: w >= -min */
        for (int i = 0; i < 32; i++) {
            lo = fminf(lo, x[32 * j + i]);
            hi = fmaxf(hi, x[32 * j + i]);
        }
        scale[j] = (hi - lo) / (float)levels;
        mn[j] = -lo;
        smax = fmaxf(smax, scale[j]);
        mmax = fmaxf(mmax, mn[j]);
    }
    uint16_t dh = linattn_f32_to_f16(smax / 63.0f), mh = linattn_f32_to_f16(mmax / 63.0f);
    float d = linattn_f16_to_f32(dh), dmin = linattn_f16_to_f32(mh);
    memcpy(out, &dh, 2);
    memcpy(out + 2, &mh, 2);
    int sc[8], m[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = d > 0 ? clampi(nearest(scale[j] / d), 0, 63) : 0;
        m[j] = dmin > 0 ? clampi(nearest(mn[j] / dmin), 0, 63) : 0;
    }
    uint8_t *s = out + 4; /* the inverse of linattn_quant_k4_scale */
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4);
    }
    uint8_t *qh = out + 16, *ql = out + 16 + (five ? 32 : 0);
    if (five)
        memset(qh, 0, 32);
    for (int j = 0; j < 8; j++) {
        float es = d * (float)sc[j], em = dmin * (float)m[j];
        for (int l = 0; l < 32; l++) {
            int q = es > 0 ? clampi(nearest((x[32 * j + l] + em) / es), 0, levels) : 0;
            uint8_t *b = &ql[32 * (j / 2) + l];
            if (j % 2 == 0)
                *b = (uint8_t)(q & 0xF);
            else
                *b |= (uint8_t)((q & 0xF) << 4);
            if (five)
                qh[l] |= (uint8_t)(((q >> 4) & 1) << j);
        }
    }
}

/* Q6_K: per 16, w = d sc (q - 32), q in 0..63, sc an int8 multiple of d. */
static void q6_k_block(const float *x, uint8_t *out)
{
    float scale[16], smax = 0;
    for (int g = 0; g < 16; g++) {
        float amax = 0;
        for (int i = 0; i < 16; i++)
            amax = fmaxf(amax, fabsf(x[16 * g + i]));
        scale[g] = amax / 31.0f;
        smax = fmaxf(smax, scale[g]);
    }
    uint16_t dh = linattn_f32_to_f16(smax / 127.0f);
    float d = linattn_f16_to_f32(dh);
    uint8_t *ql = out, *qh = out + 128;
    int8_t *sc = (int8_t *)(void *)(out + 192);
    memcpy(out + 208, &dh, 2);
    memset(ql, 0, 128);
    memset(qh, 0, 64);
    for (int g = 0; g < 16; g++)
        sc[g] = (int8_t)(d > 0 ? clampi(nearest(scale[g] / d), -128, 127) : 0);
    for (int e = 0; e < 256; e++) {
        float es = d * (float)sc[e / 16];
        int q = (es != 0 ? clampi(nearest(x[e] / es), -32, 31) : 0) + 32;
        int h = e / 128, k = (e % 128) / 32, l = e % 32;
        uint8_t *b = &ql[64 * h + l + 32 * (k & 1)];
        *b |= (uint8_t)(k < 2 ? q & 0xF : (q & 0xF) << 4);
        qh[32 * h + l] |= (uint8_t)(((q >> 4) & 3) << (2 * k));
    }
}

/* x[n] as type into out (linattn_dtype_row_bytes-sized); n whole blocks. */
static void quantize_row(uint32_t type, const float *x, size_t n, uint8_t *out)
{
    size_t be = 1, bb = 4;
    if (type == LINATTN_GGML_F32) {
        memcpy(out, x, n * sizeof *x);
        return;
    }
    if (type == LINATTN_GGML_F16) {
        for (size_t i = 0; i < n; i++)
            put_half(out + 2 * i, x[i]);
        return;
    }
    linattn_quant_block((int)type, &be, &bb);
    for (size_t b = 0; b < n / be; b++) {
        const float *xb = x + b * be;
        uint8_t *ob = out + b * bb;
        switch (type) {
        case LINATTN_GGML_Q8_0: q8_0_block(xb, ob); break;
        case LINATTN_GGML_Q4_0: q4_0_block(xb, ob); break;
        case LINATTN_GGML_Q4_K: qk_block(xb, ob, 0); break;
        case LINATTN_GGML_Q5_K: qk_block(xb, ob, 1); break;
        case LINATTN_GGML_Q6_K: q6_k_block(xb, ob); break;
        default: break;
        }
    }
}

static size_t tensor_bytes(uint32_t type, size_t n)
{
    size_t be, bb;
    if (type == LINATTN_GGML_F32)
        return 4 * n;
    if (type == LINATTN_GGML_F16)
        return 2 * n;
    linattn_quant_block((int)type, &be, &bb);
    return n / be * bb;
}

/* ---- the file -------------------------------------------------------------------- */

/* Metadata in a growing buffer. */
typedef struct kvbuf {
    uint8_t *p;
    size_t n, cap;
    uint64_t count;
    int failed;
} kvbuf;

static void kv_put(kvbuf *b, const void *src, size_t n)
{
    if (b->failed)
        return;
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2 + 256;
        uint8_t *p = mem_realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void kv_u32v(kvbuf *b, uint32_t v) { kv_put(b, &v, 4); }
static void kv_u64v(kvbuf *b, uint64_t v) { kv_put(b, &v, 8); }
static void kv_strv(kvbuf *b, const char *s, size_t n)
{
    kv_u64v(b, n);
    kv_put(b, s, n);
}
static void kv_key(kvbuf *b, const char *key, uint32_t type)
{
    kv_strv(b, key, strlen(key));
    kv_u32v(b, type);
    b->count++;
}
static void kv_u32(kvbuf *b, const char *key, uint32_t v)
{
    kv_key(b, key, LINATTN_GGUF_UINT32);
    kv_u32v(b, v);
}
static void kv_f32(kvbuf *b, const char *key, float v)
{
    kv_key(b, key, LINATTN_GGUF_FLOAT32);
    kv_put(b, &v, 4);
}
static void kv_str(kvbuf *b, const char *key, const char *s)
{
    kv_key(b, key, LINATTN_GGUF_STRING);
    kv_strv(b, s, strlen(s));
}

/* ---- general.name: llama.cpp treats special tokens by it ------------------------------ */

/* The name the file gives the model (general.name). llama.cpp gives the
 * special tokens (control, user-defined, unknown) of a vocabulary
 * attributes by it (tok_named_rule: Phi-3's markers take the white space
 * after them), so the name is part of what the vocabulary means. */
typedef struct out_name {
    const char *s;
    size_t n;
    tok_named rule; /* llama.cpp's, for this name, the written pre-type and architecture llama */
} out_name;

static const char *strip_name(int strip)
{
    static const char *const names[] = {"no strip", "lstrip", "rstrip", "lstrip and rstrip"};
    return names[strip & 3];
}

/* Whether llama.cpp takes the white space beside special token id (its text
 * s[0..n)) as the tokenizer does (have: 1 lstrip, 2 rstrip). */
static linattn_status named_strip(const char *what, const out_name *name, int id, const char *s,
                                  size_t n, int have)
{
    int want = tok_named_strip(name->rule, s, n), l = (int)(n < 40 ? n : 40);
    if (want == (have & 3))
        return LINATTN_OK;
    if (!want)
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: added token %d '%.*s' strips the spaces beside it (lstrip or "
                           "rstrip), which a GGUF vocabulary cannot say", what, id, l, s);
    return linattn_err(LINATTN_ERR_UNSUPPORTED,
                       "%s: token %d '%.*s' has %s, and llama.cpp gives it %s by general.name "
                       "'%.*s' (the model's file name; docs/tokenizers.md): name the file "
                       "otherwise", what, id, l, s, strip_name(have), strip_name(want),
                       (int)(name->n < 80 ? name->n : 80), name->s);
}

/* The written text of id: an added token's content, else its piece (a
 * llama2.c tokenizer's "\n<s>\n" and "\n</s>\n" as "<s>" and "</s>"). */
static void written_text(const linattn_tokenizer *t, const int *place, int id, const char **s,
                         size_t *n)
{
    *s = t->piece + t->piece_off[id];
    *n = tok_piece_len(t, id);
    if (place && place[id] >= 0) {
        *s = t->text + t->text_off[id];
        *n = t->text_off[id + 1] - t->text_off[id];
    } else if (!place && id == t->bos && *n == 5 && !memcmp(*s, "\n<s>\n", 5)) {
        *s = "<s>";
        *n = 3;
    } else if (!place && id == t->eos && *n == 6 && !memcmp(*s, "\n</s>\n", 6)) {
        *s = "</s>";
        *n = 4;
    }
}

/* llama.cpp looks up by text the tokens of its Phi-3 rule: a vocabulary
 * without one of them, named so, is a file it does not load. */
static linattn_status named_needs(const char *what, const out_name *name,
                                  const linattn_tokenizer *t, const int *place)
{
    if (name->rule != TOK_NAMED_PHI3)
        return LINATTN_OK;
    for (int k = 0; tok_phi3_needs[k]; k++) {
        size_t want = strlen(tok_phi3_needs[k]);
        int found = 0;
        for (int id = 0; id < t->vocab && !found; id++) {
            const char *s;
            size_t n;
            written_text(t, place, id, &s, &n);
            found = n == want && !memcmp(s, tok_phi3_needs[k], n);
        }
        if (!found)
            return linattn_err(LINATTN_ERR_UNSUPPORTED,
                               "%s: general.name '%.*s' (the model's file name) makes llama.cpp "
                               "look up Phi-3's token '%s', which the vocabulary lacks: it would "
                               "not load the file (docs/tokenizers.md); name the file otherwise",
                               what, (int)(name->n < 80 ? name->n : 80), name->s,
                               tok_phi3_needs[k]);
    }
    return LINATTN_OK;
}

/* tokenizer.* of a GGUF tokenizer file, copied as they are. */
static void vocab_from_gguf(kvbuf *b, const linattn_gguf *g)
{
    for (size_t i = 0; i < linattn_gguf_n_kv(g); i++) {
        const char *key = linattn_gguf_kv_key(g, i);
        if (strncmp(key, "tokenizer.", 10) != 0)
            continue;
        const uint8_t *p;
        size_t n;
        linattn_gguf_kv_raw(g, i, &p, &n);
        kv_key(b, key, linattn_gguf_kv_type(g, i));
        kv_put(b, p, n);
    }
}

/* A GGUF vocabulary's general.name (llama.cpp treats its special tokens by
 * it), over the model's file name; without one, the file name must not
 * make llama.cpp treat them otherwise than it did (nor may architecture
 * llama, for one whose architecture had a rule). */
static linattn_status gguf_vocab_name(const linattn_gguf *g, const char *path, out_name *name)
{
    const char *v[3] = {NULL, NULL, NULL};
    size_t n[3] = {0, 0, 0};
    static const char *const keys[] = {"general.name", "tokenizer.ggml.pre",
                                       "general.architecture"};
    for (int i = 0; i < 3; i++) /* one that is no string: taken as none */
        if (linattn_gguf_has(g, keys[i]) &&
            linattn_gguf_get_string(g, keys[i], &v[i], &n[i]) != LINATTN_OK)
            v[i] = NULL;
    if (v[0]) {
        name->s = v[0];
        name->n = n[0];
    }
    tok_named was = tok_named_rule(v[0], n[0], v[1], n[1], v[2], n[2]);
    name->rule = tok_named_rule(name->s, name->n, v[1], n[1], "llama", 5);
    if (name->rule != was)
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: written as '%.*s' of architecture llama, llama.cpp would treat "
                           "its special tokens otherwise than it does now (by the names, "
                           "docs/tokenizers.md): name the file otherwise", path,
                           (int)(name->n < 80 ? name->n : 80), name->s);
    return LINATTN_OK;
}

/* A llama2.c tokenizer as llama.cpp's converter writes one: model llama,
 * spaces as U+2581, scores, types (unknown 0, control bos/eos, byte
 * <0xXX>), "<s>"/"</s>" for run.c's "\n<s>\n"/"\n</s>\n". */
static linattn_status vocab_from_llama2c(kvbuf *b, const linattn_tokenizer *t,
                                         const out_name *name)
{
    /* its special tokens (unknown 0, bos, eos) strip no white space */
    linattn_status st = named_needs(t->source, name, t, NULL);
    for (int id = 0; st == LINATTN_OK && id < t->vocab; id++)
        if (id == 0 || id == t->bos || id == t->eos) {
            const char *s;
            size_t n;
            written_text(t, NULL, id, &s, &n);
            st = named_strip(t->source, name, id, s, n, 0);
        }
    if (st != LINATTN_OK)
        return st;
    kv_str(b, "tokenizer.ggml.model", "llama");
    kv_key(b, "tokenizer.ggml.tokens", LINATTN_GGUF_ARRAY);
    kv_u32v(b, LINATTN_GGUF_STRING);
    kv_u64v(b, (uint64_t)t->vocab);
    for (int id = 0; id < t->vocab; id++) {
        const char *s = t->piece + t->piece_off[id];
        size_t n = tok_piece_len(t, id), spaces = 0;
        if (id == t->bos && n == 5 && !memcmp(s, "\n<s>\n", 5)) {
            kv_strv(b, "<s>", 3);
            continue;
        }
        if (id == t->eos && n == 6 && !memcmp(s, "\n</s>\n", 6)) {
            kv_strv(b, "</s>", 4);
            continue;
        }
        for (size_t i = 0; i < n; i++)
            spaces += s[i] == ' ';
        kv_u64v(b, n + 2 * spaces);
        for (size_t i = 0; i < n; i++)
            kv_put(b, s[i] == ' ' ? "\xe2\x96\x81" : s + i, s[i] == ' ' ? 3 : 1);
    }
    kv_key(b, "tokenizer.ggml.scores", LINATTN_GGUF_ARRAY);
    kv_u32v(b, LINATTN_GGUF_FLOAT32);
    kv_u64v(b, (uint64_t)t->vocab);
    for (int id = 0; id < t->vocab; id++)
        kv_put(b, &t->score[id], 4);
    kv_key(b, "tokenizer.ggml.token_type", LINATTN_GGUF_ARRAY);
    kv_u32v(b, LINATTN_GGUF_INT32);
    kv_u64v(b, (uint64_t)t->vocab);
    for (int id = 0; id < t->vocab; id++) {
        const char *s = t->piece + t->piece_off[id];
        size_t n = tok_piece_len(t, id);
        int32_t type = id == 0 ? 2 : id == t->bos || id == t->eos ? 3
                     : n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' ? 6 : 1;
        kv_put(b, &type, 4);
    }
    kv_u32(b, "tokenizer.ggml.unknown_token_id", 0);
    if (t->bos >= 0)
        kv_u32(b, "tokenizer.ggml.bos_token_id", (uint32_t)t->bos);
    if (t->eos >= 0)
        kv_u32(b, "tokenizer.ggml.eos_token_id", (uint32_t)t->eos);
    return LINATTN_OK;
}

/* ---- a Hugging Face tokenizer, as llama.cpp's converter writes one -------------------- */

/* llama.cpp's token types (llama_token_type) */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

static void kv_bool(kvbuf *b, const char *key, int v)
{
    kv_key(b, key, LINATTN_GGUF_BOOL);
    uint8_t x = (uint8_t)(v != 0);
    kv_put(b, &x, 1);
}

static void kv_array(kvbuf *b, const char *key, uint32_t type, uint64_t n)
{
    kv_key(b, key, LINATTN_GGUF_ARRAY);
    kv_u32v(b, type);
    kv_u64v(b, n);
}

typedef struct merge_at {
    int32_t rank;
    int a, b, id; /* a and b join into id */
} merge_at;

static int by_rank(const void *x, const void *y)
{
    const merge_at *p = x, *q = y;
    return (p->rank > q->rank) - (p->rank < q->rank);
}

/* The merges of t in rank order (*n of them); NULL when out of memory. */
static merge_at *merges_of(const linattn_tokenizer *t, size_t *n)
{
    *n = 0;
    size_t slots = t->pair_key ? t->pair_mask + 1 : 0;
    merge_at *m = mem_alloc((slots ? slots : 1) * sizeof *m);
    if (!m)
        return NULL;
    for (size_t s = 0; s < slots; s++)
        if (t->pair_rank[s] >= 0)
            m[(*n)++] = (merge_at){t->pair_rank[s], (int)(t->pair_key[s] >> 32),
                                   (int)(uint32_t)t->pair_key[s], t->pair_id[s]};
    qsort(m, *n, sizeof *m, by_rank);
    return m;
}

/* What each id of t is, for the token types: place[id] its place in
 * t->added (-1: not added), byte[id] whether it is a byte token. */
typedef struct id_kinds {
    int *place;
    unsigned char *byte, *merged; /* merged: some merge makes it */
} id_kinds;

/* tokenizer_config.json's chat_template (a string, or a list of {name,
 * template}: "default" as tokenizer.chat_template, the others as
 * tokenizer.chat_template.NAME, as gguf-py writes them), else the folder's
 * chat_template.jinja. */
/* Only a name that is not there at all is no file: one that cannot be
 * read is read, and its error reported (as the tokenizer's side files). */
static int absent(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) != 0 && errno == ENOENT;
}

static linattn_status chat_template(kvbuf *b, const char *source)
{
    const char *slash = strrchr(source, '/');
    char path[4200];
    snprintf(path, sizeof path, "%.*stokenizer_config.json", slash ? (int)(slash - source + 1) : 0,
             source);
    char *text = NULL;
    size_t len = 0;
    if (!absent(path)) {
        cJSON *root = NULL;
        linattn_status st = safe_read_all(path, "tokenizer_config.json", (size_t)16 << 20, &text,
                                          &len);
        if (st == LINATTN_OK)
            st = json_parse_file(path, text, len, 1, &root);
        mem_free(text);
        if (st != LINATTN_OK)
            return st;
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
        int bad = ct && !cJSON_IsNull(ct) && !cJSON_IsString(ct) && !cJSON_IsArray(ct);
        if (cJSON_IsString(ct))
            kv_str(b, "tokenizer.chat_template", ct->valuestring);
        for (const cJSON *e = cJSON_IsArray(ct) ? ct->child : NULL; e; e = e->next) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
            const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(e, "template");
            if ((bad = !cJSON_IsString(name) || !cJSON_IsString(tmpl)))
                break;
            char key[160];
            snprintf(key, sizeof key, "tokenizer.chat_template%s%.100s",
                     strcmp(name->valuestring, "default") ? "." : "",
                     strcmp(name->valuestring, "default") ? name->valuestring : "");
            kv_str(b, key, tmpl->valuestring);
        }
        int found = ct && !cJSON_IsNull(ct);
        cJSON_Delete(root);
        if (bad)
            return linattn_err(LINATTN_ERR_FORMAT, "%s: chat_template: expected a string or a "
                               "list of {\"name\": ..., \"template\": ...} strings", path);
        if (found)
            return LINATTN_OK;
    }
    snprintf(path, sizeof path, "%.*schat_template.jinja", slash ? (int)(slash - source + 1) : 0,
             source);
    if (absent(path))
        return LINATTN_OK;
    linattn_status st = safe_read_all(path, "chat_template.jinja", (size_t)16 << 20, &text, &len);
    if (st != LINATTN_OK)
        return st;
    kv_key(b, "tokenizer.chat_template", LINATTN_GGUF_STRING);
    kv_strv(b, text, len);
    mem_free(text);
    return LINATTN_OK;
}

/* Why a metaspace tokenizer has no sentencepiece form llama.cpp reads it
 * by, or NULL: llama.cpp's SPM puts U+2581 for spaces and, with
 * add_space_prefix, one before every text and after every special token
 * (Hugging Face's Prepend normalizer; the Metaspace pre-tokenizer's
 * "first" scheme and its "no second U+2581" rule differ), falls back to
 * <0xXX> tokens for every byte, and joins any two symbols whose join is a
 * token, best score first: the scores give each token its merge's rank,
 * which is the merges' order when every multi-character token is some
 * merge's (a token no merge makes would be joined where the merges do not). */
static linattn_status spm_checks(const linattn_tokenizer *t, const char *what, int *prefix,
                                 const id_kinds *k)
{
    static const char meta[] = "\xe2\x96\x81";
    if (t->meta_len != 3 || memcmp(t->meta, meta, 3) != 0)
        return linattn_err(LINATTN_ERR_UNSUPPORTED, "%s: the space replacement is '%.8s', and "
                           "llama.cpp's sentencepiece tokenizer has only U+2581", what, t->meta);
    if (t->prepend == PREPEND_ALWAYS && !t->meta_pretok)
        *prefix = 1;
    else if (t->prepend == PREPEND_NEVER)
        *prefix = 0;
    else
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: the Metaspace pre-tokenizer's prefix (prepend_scheme %s) has no "
                           "GGUF form: llama.cpp puts U+2581 before every text, one that starts "
                           "with a space and one after a special token too", what,
                           t->prepend == PREPEND_FIRST ? "first" : "always");
    if (t->ignore_merges)
        return linattn_err(LINATTN_ERR_UNSUPPORTED, "%s: ignore_merges with a sentencepiece "
                           "form has no GGUF form", what);
    for (int b = 0; b < 256; b++)
        if (!t->byte_fallback || t->byte_token[b] < 0)
            return linattn_err(LINATTN_ERR_UNSUPPORTED,
                               "%s: %s: llama.cpp's sentencepiece tokenizer falls back to a "
                               "<0xXX> token for every byte", what,
                               t->byte_fallback ? "a byte has no <0xXX> token" : "no byte_fallback");
    for (int id = 0; id < t->vocab; id++) {
        const char *p = t->piece + t->piece_off[id];
        size_t n = tok_piece_len(t, id);
        if (k->place[id] >= 0 || k->byte[id] || n == 0)
            continue;
        if (t->meta_split)
            for (size_t i = 1; i + 3 <= n; i++)
                if (!memcmp(p + i, meta, 3))
                    return linattn_err(LINATTN_ERR_UNSUPPORTED,
                                       "%s: token %d '%.*s' spans a U+2581 the Metaspace "
                                       "pre-tokenizer splits at, and llama.cpp splits at none",
                                       what, id, (int)(n < 40 ? n : 40), p);
        if (!k->merged[id] && (size_t)tok_utf8_len((unsigned char)p[0]) < n)
            return linattn_err(LINATTN_ERR_UNSUPPORTED,
                               "%s: token %d '%.*s' is made by no merge: llama.cpp's "
                               "sentencepiece tokenizer would join its characters where the "
                               "merges do not", what, id, (int)(n < 40 ? n : 40), p);
    }
    return LINATTN_OK;
}

/* A Hugging Face tokenizer.json as llama.cpp's converter writes one, n_vocab
 * tokens (ids the tokenizer lacks as [PADn], unused): byte-level BPE as
 * model gpt2 (tokens as tokenizer.json spells them, merges, the pre-type
 * whose patterns are its splits), the sentencepiece form as model llama
 * (scores from the merges' ranks). */
static linattn_status vocab_from_hf(kvbuf *b, const linattn_tokenizer *t, int n_vocab,
                                    const char *what, out_name *name)
{
    if (t->vocab > n_vocab)
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: %d tokens for a model of %d: llama.cpp needs an embedding row "
                           "for every token", what, t->vocab, n_vocab);
    const char *pre = NULL;
    size_t pre_len = 0;
    int prefix = 0;
    if (t->form == HF_BYTELEVEL) {
        if (t->add_prefix_space)
            return linattn_err(LINATTN_ERR_UNSUPPORTED, "%s: ByteLevel add_prefix_space has no "
                               "GGUF form (llama.cpp's BPE adds no space)", what);
        if (!(pre = tok_pre_type_name(t, &pre_len))) {
            char found[200] = "no split";
            if (t->n_split)
                snprintf(found, sizeof found, "%d split%s, the first '%.60s'%s%s", t->n_split,
                         t->n_split > 1 ? "s" : "", t->split[0].pattern,
                         t->split[0].behavior != SPLIT_ISOLATED || t->split[0].invert
                             ? " (not Isolated)" : "",
                         t->ignore_merges ? ", ignore_merges" : "");
            return linattn_err(LINATTN_ERR_UNSUPPORTED,
                               "%s: its pre-tokenizer (%s) is none of llama.cpp's pre-types "
                               "(tokenizer.ggml.pre; docs/tokenizers.md): another would give "
                               "other ids", what, found);
        }
    } else if (t->form != HF_METASPACE)
        return linattn_err(LINATTN_ERR_UNSUPPORTED, "%s: a BPE neither byte-level nor "
                           "sentencepiece (metaspace) has no GGUF form", what);
    int spm = t->form == HF_METASPACE;
    size_t nm = 0;
    merge_at *m = merges_of(t, &nm);
    id_kinds k = {mem_alloc((size_t)t->vocab * sizeof *k.place), mem_calloc((size_t)t->vocab, 1),
                  mem_calloc((size_t)t->vocab, 1)};
    linattn_status st = LINATTN_OK;
    if (!m || !k.place || !k.byte || !k.merged)
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for %d tokens", what, t->vocab);
    for (int id = 0; st == LINATTN_OK && id < t->vocab; id++)
        k.place[id] = -1;
    for (int i = 0; st == LINATTN_OK && i < t->n_added; i++)
        k.place[t->added[i]] = i;
    for (int c = 0; st == LINATTN_OK && spm && c < 256; c++)
        if (t->byte_token[c] >= 0)
            k.byte[t->byte_token[c]] = 1;
    for (size_t i = 0; st == LINATTN_OK && i < nm; i++)
        k.merged[m[i].id] = 1;
    if (st == LINATTN_OK && spm)
        st = spm_checks(t, what, &prefix, &k);
    /* an added token strips the white space beside it only as llama.cpp
     * makes it by the file's names (none but Phi-3's markers); the
     * unknown token of the sentencepiece form is special to llama.cpp too */
    name->rule = tok_named_rule(name->s, name->n, pre, pre_len, "llama", 5);
    if (st == LINATTN_OK)
        st = named_needs(what, name, t, k.place);
    for (int id = 0; st == LINATTN_OK && id < t->vocab; id++)
        if (k.place[id] >= 0 || (spm && id == t->unk)) {
            const char *s;
            size_t n;
            written_text(t, k.place, id, &s, &n);
            st = named_strip(what, name, id, s, n,
                             k.place[id] >= 0 ? t->added_strip[k.place[id]] : 0);
        }
    if (st != LINATTN_OK)
        goto done;
    kv_str(b, "tokenizer.ggml.model", spm ? "llama" : "gpt2");
    if (!spm) {
        kv_key(b, "tokenizer.ggml.pre", LINATTN_GGUF_STRING);
        kv_strv(b, pre, pre_len);
    }
    kv_array(b, "tokenizer.ggml.tokens", LINATTN_GGUF_STRING, (uint64_t)n_vocab);
    for (int id = 0; id < n_vocab; id++) {
        if (id < t->vocab && k.place[id] >= 0) /* an added token is its content */
            kv_strv(b, t->text + t->text_off[id], t->text_off[id + 1] - t->text_off[id]);
        else if (id < t->vocab && tok_piece_len(t, id))
            kv_strv(b, t->piece + t->piece_off[id], tok_piece_len(t, id));
        else {
            char pad[32];
            int n = snprintf(pad, sizeof pad, "[PAD%d]", id);
            kv_strv(b, pad, (size_t)n);
        }
    }
    if (spm) {
        /* a token scores minus its first merge's rank, so that the best
         * score is the earliest merge; the others (characters, bytes,
         * added tokens) 0, as no join makes them */
        kv_array(b, "tokenizer.ggml.scores", LINATTN_GGUF_FLOAT32, (uint64_t)n_vocab);
        float *score = mem_calloc((size_t)n_vocab, sizeof *score);
        if (!score)
            b->failed = 1;
        for (size_t i = nm; score && i-- > 0;)
            score[m[i].id] = -1.0f - (float)m[i].rank;
        for (int id = 0; score && id < n_vocab; id++)
            kv_put(b, &score[id], 4);
        mem_free(score);
    }
    kv_array(b, "tokenizer.ggml.token_type", LINATTN_GGUF_INT32, (uint64_t)n_vocab);
    for (int id = 0; id < n_vocab; id++) {
        int place = id < t->vocab ? k.place[id] : -1;
        int32_t type = id >= t->vocab || !tok_piece_len(t, id) ? TT_UNUSED
                       : id == t->unk && spm                  ? TT_UNKNOWN
                       : place >= 0 ? (t->added_strip[place] & 4 ? TT_CONTROL : TT_USER)
                       : k.byte[id] ? TT_BYTE
                                    : TT_NORMAL;
        kv_put(b, &type, 4);
    }
    if (!spm) {
        kv_array(b, "tokenizer.ggml.merges", LINATTN_GGUF_STRING, (uint64_t)nm);
        for (size_t i = 0; i < nm && st == LINATTN_OK; i++) {
            const char *l = t->piece + t->piece_off[m[i].a], *r = t->piece + t->piece_off[m[i].b];
            size_t ln = tok_piece_len(t, m[i].a), rn = tok_piece_len(t, m[i].b);
            /* a GGUF merge is cut at a space (llama.cpp: the first after
             * the first byte; linattn's reader: the one space) */
            if (memchr(l, ' ', ln) || memchr(r, ' ', rn))
                st = linattn_err(LINATTN_ERR_UNSUPPORTED,
                                 "%s: merge %d ('%.*s' + '%.*s') holds a space, which a GGUF "
                                 "merge \"left right\" cannot", what, (int)m[i].rank,
                                 (int)(ln < 40 ? ln : 40), l, (int)(rn < 40 ? rn : 40), r);
            kv_u64v(b, ln + 1 + rn);
            kv_put(b, l, ln);
            kv_put(b, " ", 1);
            kv_put(b, r, rn);
        }
    } else
        kv_bool(b, "tokenizer.ggml.add_space_prefix", prefix);
done:
    mem_free(m);
    mem_free(k.place);
    mem_free(k.byte);
    mem_free(k.merged);
    if (st != LINATTN_OK)
        return st;
    if (t->bos >= 0)
        kv_u32(b, "tokenizer.ggml.bos_token_id", (uint32_t)t->bos);
    if (t->eos >= 0)
        kv_u32(b, "tokenizer.ggml.eos_token_id", (uint32_t)t->eos);
    if (t->unk >= 0)
        kv_u32(b, "tokenizer.ggml.unknown_token_id", (uint32_t)t->unk);
    kv_bool(b, "tokenizer.ggml.add_bos_token", t->add_bos);
    return chat_template(b, t->source);
}

/* One tensor of the output. */
typedef struct out_tensor {
    char ours[128], gguf[128];
    int64_t rows, cols; /* cols 0: a vector of rows */
    uint32_t type;
    uint64_t offset, bytes;
    int permute;        /* q or k of a half-pairing model: rows to interleaved */
} out_tensor;

/* A head's rows (hd of them) from half pairing (x's in the first half, y's
 * in the second) to interleaved (x, y side by side): row 2i <- i,
 * 2i + 1 <- i + hd/2. */
static void permute_rows(float *dst, const float *src, int64_t rows, int64_t cols, int64_t hd)
{
    for (int64_t h = 0; h < rows / hd; h++)
        for (int64_t i = 0; i < hd / 2; i++) {
            memcpy(dst + (h * hd + 2 * i) * cols, src + (h * hd + i) * cols,
                   (size_t)cols * sizeof *dst);
            memcpy(dst + (h * hd + 2 * i + 1) * cols, src + (h * hd + i + hd / 2) * cols,
                   (size_t)cols * sizeof *dst);
        }
}

linattn_status linattn_quantize(const linattn_config *c, const char *out_path, const char *type,
                                int *wrote_vocab)
{
    if (!c || !out_path || !type)
        return linattn_err(LINATTN_ERR_INVALID, "quantize: NULL argument");
    if (wrote_vocab)
        *wrote_vocab = 0;
    const struct quant_kind *k = NULL;
    for (size_t i = 0; i < N_KINDS; i++)
        if (strcmp(type, kinds[i].name) == 0)
            k = &kinds[i];
    if (!k)
        return linattn_err(LINATTN_ERR_INVALID, "unknown type '%.40s': expected one of %s",
                           type, linattn_quantize_types());
    /* what a GGUF llama model can say */
    const char *why = c->attention != LINATTN_ATTN_SOFTMAX ? "attention is not softmax"
                      : c->window > 0                   ? "it has a window"
                      : c->norm != LINATTN_NORM_RMSNORM ? "norm is not rmsnorm"
                      : c->norm_position != LINATTN_NORM_PRE ? "norm_position is not pre"
                      : c->ffn != LINATTN_FFN_SWIGLU    ? "ffn is not swiglu"
                      : c->positions != LINATTN_POS_ROPE ? "positions are not rope"
                      : c->bias                         ? "it has biases"
                                                        : NULL;
    if (why)
        return linattn_err(LINATTN_ERR_UNSUPPORTED,
                           "%s: not a llama-architecture model (%s), which is what GGUF files "
                           "of architecture llama hold", c->path, why);
    const char *arg;
    const linattn_source *src = linattn_source_of(c->weights, &arg);
    if (!src->open)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: weights = %s has no file to read (random weights)",
                           c->path, c->weights);
    linattn_weights *w = NULL;
    linattn_tokenizer *tok = NULL;
    linattn_gguf *vg = NULL; /* a GGUF vocabulary's file */
    out_tensor *t = NULL;
    kvbuf kv = {0};
    float *perm = NULL;
    uint8_t *qrow = NULL;
    safe_file f;
    int file_open = 0;
    linattn_status st = safe_file_check(out_path, "GGUF file");
    if (st == LINATTN_OK)
        st = src->open(arg, &w);
    if (st != LINATTN_OK)
        goto done;

    const int n = linattn_weights_count(w), hd = c->d_model / c->n_heads;
    if (!(t = mem_calloc((size_t)(n ? n : 1), sizeof *t))) {
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", out_path);
        goto done;
    }
    size_t max_cols = 1, max_perm = 0; /* the longest row; the largest q or k to reorder */
    for (int i = 0; i < n; i++) {
        linattn_tensor_info info;
        linattn_weights_tensor(w, i, &info);
        snprintf(t[i].ours, sizeof t[i].ours, "%s", info.name);
        linattn_gguf_name(info.name, t[i].gguf, sizeof t[i].gguf);
        char back[160];
        if (info.ndim < 1 || info.ndim > 2 ||
            !linattn_gguf_rename(t[i].gguf, back, sizeof back) || strcmp(back, info.name) != 0) {
            st = linattn_err(LINATTN_ERR_UNSUPPORTED,
                             "%s: tensor '%.100s' has no place in a llama GGUF file",
                             linattn_weights_path(w), info.name);
            goto done;
        }
        t[i].rows = info.shape[0];
        t[i].cols = info.ndim == 2 ? info.shape[1] : 0;
        t[i].type = type_of(k, t[i].gguf, (size_t)t[i].cols, c->n_layers);
        t[i].permute = c->rope_pairing == LINATTN_ROPE_HALF &&
                       (strstr(info.name, "attn.q.") || strstr(info.name, "attn.k."));
        size_t elems = info.n_elements;
        t[i].bytes = tensor_bytes(t[i].type, elems);
        if (t[i].permute)
            max_perm = elems > max_perm ? elems : max_perm;
        size_t cols = t[i].cols ? (size_t)t[i].cols : (size_t)t[i].rows; /* a vector: one row */
        max_cols = cols > max_cols ? cols : max_cols;
    }
    /* metadata; general.name the model's file name, or a GGUF vocabulary's
     * own (llama.cpp reads its special tokens by it) */
    const char *slash = strrchr(c->path, '/');
    out_name name = {slash ? slash + 1 : c->path, 0, TOK_NAMED_NONE};
    name.n = strlen(name.s);
    if (strncmp(c->tokenizer, "gguf:", 5) == 0 &&
        ((st = linattn_gguf_open(c->tokenizer + 5, &vg)) != LINATTN_OK ||
         (st = gguf_vocab_name(vg, c->tokenizer + 5, &name)) != LINATTN_OK))
        goto done;
    kv_str(&kv, "general.architecture", "llama");
    kv_key(&kv, "general.name", LINATTN_GGUF_STRING);
    kv_strv(&kv, name.s, name.n);
    kv_u32(&kv, "general.file_type", k->file_type);
    kv_u32(&kv, "general.quantization_version", 2);
    kv_u32(&kv, "general.alignment", 32);
    kv_u32(&kv, "llama.vocab_size", (uint32_t)c->vocab_size);
    kv_u32(&kv, "llama.context_length", (uint32_t)c->max_seq_len);
    kv_u32(&kv, "llama.embedding_length", (uint32_t)c->d_model);
    kv_u32(&kv, "llama.block_count", (uint32_t)c->n_layers);
    kv_u32(&kv, "llama.feed_forward_length", (uint32_t)c->d_ff);
    kv_u32(&kv, "llama.attention.head_count", (uint32_t)c->n_heads);
    kv_u32(&kv, "llama.attention.head_count_kv",
           (uint32_t)(c->n_kv_heads ? c->n_kv_heads : c->n_heads));
    kv_u32(&kv, "llama.rope.dimension_count", (uint32_t)hd);
    kv_f32(&kv, "llama.attention.layer_norm_rms_epsilon", c->norm_eps);
    kv_f32(&kv, "llama.rope.freq_base", c->rope_theta);
    if (vg) {
        vocab_from_gguf(&kv, vg);
        if (wrote_vocab)
            *wrote_vocab = 1;
    } else if (strncmp(c->tokenizer, "llama2c:", 8) == 0) {
        if ((st = linattn_tokenizer_load(c->tokenizer, &tok)) != LINATTN_OK ||
            (st = vocab_from_llama2c(&kv, tok, &name)) != LINATTN_OK)
            goto done;
        if (wrote_vocab)
            *wrote_vocab = 1;
    } else if (strncmp(c->tokenizer, "hf:", 3) == 0) {
        if ((st = linattn_tokenizer_load(c->tokenizer, &tok)) != LINATTN_OK ||
            (st = vocab_from_hf(&kv, tok, c->vocab_size, tok->source, &name)) != LINATTN_OK)
            goto done;
        if (wrote_vocab)
            *wrote_vocab = 1;
    }
    if (kv.failed) {
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for the metadata", out_path);
        goto done;
    }
    /* header, metadata, tensor infos, then the data at 32-byte steps */
    kvbuf head = {0};
    kv_put(&head, "GGUF", 4);
    kv_u32v(&head, 3);
    kv_u64v(&head, (uint64_t)n);
    kv_u64v(&head, kv.count);
    kv_put(&head, kv.p, kv.n);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        kv_strv(&head, t[i].gguf, strlen(t[i].gguf));
        kv_u32v(&head, t[i].cols ? 2 : 1);
        kv_u64v(&head, (uint64_t)(t[i].cols ? t[i].cols : t[i].rows));
        if (t[i].cols)
            kv_u64v(&head, (uint64_t)t[i].rows);
        kv_u32v(&head, t[i].type);
        kv_u64v(&head, off);
        t[i].offset = off;
        off = (off + t[i].bytes + 31) / 32 * 32;
    }
    static const uint8_t zeros[32];
    while (head.n % 32)
        kv_put(&head, zeros, 1);
    if (head.failed) {
        mem_free(head.p);
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory for the header", out_path);
        goto done;
    }
    if ((st = safe_file_begin(&f, out_path, "GGUF file")) != LINATTN_OK) {
        mem_free(head.p);
        goto done;
    }
    file_open = 1;
    safe_file_write(&f, head.p, head.n);
    mem_free(head.p);
    perm = max_perm ? mem_alloc(max_perm * sizeof *perm) : NULL;
    qrow = mem_alloc(tensor_bytes(LINATTN_GGML_F32, max_cols));
    if ((max_perm && !perm) || !qrow) {
        st = linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", out_path);
        goto done;
    }
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        int64_t shape[2] = {t[i].rows, t[i].cols};
        const float *x;
        if ((st = linattn_weights_get(w, t[i].ours, t[i].cols ? 2 : 1, shape, &x)) != LINATTN_OK)
            goto done;
        if (t[i].permute) {
            permute_rows(perm, x, t[i].rows, t[i].cols, hd);
            x = perm;
        }
        while (at < t[i].offset) {
            safe_file_write(&f, zeros, 1);
            at++;
        }
        size_t cols = t[i].cols ? (size_t)t[i].cols : (size_t)t[i].rows;
        size_t rows = t[i].cols ? (size_t)t[i].rows : 1, rb = tensor_bytes(t[i].type, cols);
        for (size_t r = 0; r < rows; r++) {
            quantize_row(t[i].type, x + r * cols, cols, qrow);
            safe_file_write(&f, qrow, rb);
        }
        at += t[i].bytes;
    }
    st = safe_file_commit(&f, "the GGUF file");
    file_open = 0;
done:
    if (file_open)
        safe_file_abort(&f);
    mem_free(perm);
    mem_free(qrow);
    mem_free(kv.p);
    mem_free(t);
    linattn_tokenizer_free(tok);
    linattn_gguf_free(vg);
    linattn_weights_close(w);
    return st;
}
