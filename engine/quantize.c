/* quantize.c: a model's weights written as a GGUF file llama.cpp reads, its matrices in ggml's block types (`linattn quantize`). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "gguf.h"
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

/* tokenizer.* of a GGUF tokenizer file, copied as they are. */
static linattn_status vocab_from_gguf(kvbuf *b, const char *path)
{
    linattn_gguf *g;
    linattn_status st = linattn_gguf_open(path, &g);
    if (st != LINATTN_OK)
        return st;
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
    linattn_gguf_free(g);
    return LINATTN_OK;
}

/* A llama2.c tokenizer as llama.cpp's converter writes one: model llama,
 * spaces as U+2581, scores, types (unknown 0, control bos/eos, byte
 * <0xXX>), "<s>"/"</s>" for run.c's "\n<s>\n"/"\n</s>\n". */
static void vocab_from_llama2c(kvbuf *b, const linattn_tokenizer *t)
{
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
    /* metadata */
    const char *slash = strrchr(c->path, '/');
    kv_str(&kv, "general.architecture", "llama");
    kv_str(&kv, "general.name", slash ? slash + 1 : c->path);
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
    if (strncmp(c->tokenizer, "gguf:", 5) == 0) {
        if ((st = vocab_from_gguf(&kv, c->tokenizer + 5)) != LINATTN_OK)
            goto done;
        if (wrote_vocab)
            *wrote_vocab = 1;
    } else if (strncmp(c->tokenizer, "llama2c:", 8) == 0) {
        if ((st = linattn_tokenizer_load(c->tokenizer, &tok)) != LINATTN_OK)
            goto done;
        vocab_from_llama2c(&kv, tok);
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
    linattn_weights_close(w);
    return st;
}
