/* model_load.c: a model from its config: weights from the file (or random, and as safetensors for tests), checked against the shape; sizes and hash. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "f16.h"
#include "model.h"
#include "source.h"

/* ---- loading ------------------------------------------------------------ */

/* The tensors a random model makes, by name, for writing them to a file
 * (linattn_model_random_safetensors). */
typedef struct recorder {
    linattn_tensor_out *t;
    int n, cap;
    linattn_dtype matrices, vectors; /* the dtypes to write them in */
    int failed;
    float **owned; /* int8 matrices: their values and scales, made here */
    int n_owned;
} recorder;

/* Where a tensor comes from: the safetensors file, or a seeded generator. */
typedef struct source {
    linattn_weights *file;
    uint64_t rng;   /* random:SEED state */
    float *arena;   /* random weights, carved in order */
    size_t used;
    int keep_stored; /* weights_dtype = stored: F16/BF16 matrices as the file has them */
    size_t bytes;    /* of every tensor taken, as held */
    recorder *rec;   /* random weights: NULL, or where to note each tensor */
} source;

static void record_one(recorder *r, const char *name, int rows, int cols, const float *p,
                       linattn_dtype dtype);

/* A float buffer the recorder frees; NULL (and failed) when out of memory. */
static float *record_owned(recorder *r, size_t n)
{
    float **o = r->failed ? NULL : mem_realloc(r->owned, (size_t)(r->n_owned + 1) * sizeof *o);
    float *p = o ? mem_alloc((n ? n : 1) * sizeof *p) : NULL;
    if (o)
        r->owned = o;
    if (!p) {
        r->failed = 1;
        return NULL;
    }
    r->owned[r->n_owned++] = p;
    return p;
}

/* Quantizes W [rows, cols] by groups of LINATTN_Q8_GROUP along rows (the
 * scale max|w| / 127, values rounded to nearest, ties to even) into q and
 * s: what tools/convert_dtype.py --dtype q8 writes. */
static void quantize_q8(const float *W, int rows, int cols, float *q, float *s)
{
    const int G = LINATTN_Q8_GROUP;
    for (int r = 0; r < rows; r++)
        for (int g = 0; g < cols / G; g++) {
            const float *w = W + (size_t)r * cols + (size_t)g * G;
            float amax = 0.0f;
            for (int i = 0; i < G; i++)
                amax = fabsf(w[i]) > amax ? fabsf(w[i]) : amax;
            float sc = amax / 127.0f;
            s[(size_t)r * (cols / G) + g] = sc;
            for (int i = 0; i < G; i++)
                q[(size_t)r * cols + (size_t)g * G + i] = sc > 0.0f ? nearbyintf(w[i] / sc) : 0.0f;
        }
}

static void record(recorder *r, const char *name, int rows, int cols, char kind, const float *p)
{
    if (kind == 'w' && r->matrices == LINATTN_DTYPE_I8 && cols % LINATTN_Q8_GROUP == 0) {
        float *q = record_owned(r, (size_t)rows * cols);
        float *s = record_owned(r, (size_t)rows * (cols / LINATTN_Q8_GROUP));
        char sname[160];
        snprintf(sname, sizeof sname, "%s_scale", name);
        if (!q || !s)
            return;
        quantize_q8(p, rows, cols, q, s);
        record_one(r, name, rows, cols, q, LINATTN_DTYPE_I8);
        record_one(r, sname, rows, cols / LINATTN_Q8_GROUP, s, LINATTN_DTYPE_F32);
        return;
    }
    linattn_dtype dt = kind == 'w' ? r->matrices : r->vectors;
    record_one(r, name, rows, cols, p, dt == LINATTN_DTYPE_I8 ? LINATTN_DTYPE_F32 : dt);
}

static void record_one(recorder *r, const char *name, int rows, int cols, const float *p,
                       linattn_dtype dtype)
{
    if (r->failed)
        return;
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        linattn_tensor_out *t = mem_realloc(r->t, (size_t)cap * sizeof *t);
        if (!t) {
            r->failed = 1;
            return;
        }
        r->t = t;
        r->cap = cap;
    }
    linattn_tensor_out *t = &r->t[r->n];
    if (!(t->name = mem_strdup(name))) {
        r->failed = 1;
        return;
    }
    r->n++;
    t->ndim = cols ? 2 : 1;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->data = p;
    t->dtype = dtype;
}

/* The last tensor recorded as [a, b, c] (it was recorded as [a * b, c]). */
static void record_3d(recorder *r, int a, int b, int c)
{
    if (r->failed || r->n == 0)
        return;
    linattn_tensor_out *t = &r->t[r->n - 1];
    t->ndim = 3;
    t->shape[0] = a;
    t->shape[1] = b;
    t->shape[2] = c;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float uniform_pm1(uint64_t *s)
{
    return (float)((double)(splitmix64(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

/* kind: 'w' matrix (uniform, std 1/sqrt(fan_in)), 'f' the same kept fp32 (not a
 * weight matrix of the kernels), 'b' bias (small), 'n' norm weight (1). */
static linattn_status take(source *src, const char *name, int rows, int cols, char kind,
                           const float **out)
{
    size_t n = (size_t)rows * (size_t)(cols ? cols : 1);
    src->bytes += n * sizeof(float);
    if (src->file) {
        int64_t shape[2] = {rows, cols};
        return linattn_weights_get(src->file, name, cols ? 2 : 1, shape, out);
    }
    float *p = src->arena + src->used;
    src->used += n;
    float a = kind == 'w' || kind == 'f' ? sqrtf(3.0f / (float)(cols ? cols : 1)) : 0.02f;
    for (size_t i = 0; i < n; i++)
        p[i] = kind == 'n' ? 1.0f : a * uniform_pm1(&src->rng);
    if (src->rec)
        record(src->rec, name, rows, cols, kind, p);
    *out = p;
    return LINATTN_OK;
}

/* A small fp32 tensor [a, b, c] (the hybrid's feature maps), random like a
 * matrix of c columns. */
static linattn_status take3(source *src, const char *name, int a, int b, int c,
                            const float **out)
{
    if (src->file) {
        int64_t shape[3] = {a, b, c};
        src->bytes += (size_t)a * (size_t)b * (size_t)c * sizeof(float);
        return linattn_weights_get(src->file, name, 3, shape, out);
    }
    linattn_status st = take(src, name, a * b, c, 'f', out);
    if (st == LINATTN_OK && src->rec)
        record_3d(src->rec, a, b, c);
    return st;
}

/* A weight matrix [rows, cols]: as the file stores it (weights_dtype =
 * stored), else (f32, random weights) fp32. */
static linattn_status take_matrix(source *src, const char *name, int rows, int cols,
                                  linattn_matrix *out)
{
    out->scales = NULL;
    int stored = src->file ? linattn_weights_stored_dtype(src->file, name) : -1;
    if (src->file && (src->keep_stored || stored == (int)LINATTN_DTYPE_I8 ||
                      (stored >= 0 && linattn_dtype_quant((linattn_dtype)stored)))) {
        int64_t shape[2] = {rows, cols};
        linattn_dtype dt;
        linattn_status st =
            linattn_weights_get_stored(src->file, name, 2, shape, &out->data, &dt);
        if (st != LINATTN_OK)
            return st;
        out->dtype = dt;
        size_t n = (size_t)rows * (size_t)cols;
        if (linattn_dtype_quant(dt)) {
            src->bytes += (size_t)rows * linattn_dtype_row_bytes(dt, (size_t)cols);
            return LINATTN_OK;
        }
        if (dt != LINATTN_DTYPE_I8) {
            src->bytes += n * (dt == LINATTN_DTYPE_F32 ? 4 : 2);
            return LINATTN_OK;
        }
        /* int8: the scales of every group of LINATTN_Q8_GROUP columns */
        if (cols % LINATTN_Q8_GROUP != 0)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: tensor '%.200s': int8 with %d columns (a multiple of %d "
                               "needed: one scale per %d)", linattn_weights_path(src->file),
                               name, cols, LINATTN_Q8_GROUP, LINATTN_Q8_GROUP);
        char sname[160];
        snprintf(sname, sizeof sname, "%s_scale", name);
        int64_t sshape[2] = {rows, cols / LINATTN_Q8_GROUP};
        if ((st = linattn_weights_get(src->file, sname, 2, sshape, &out->scales)) != LINATTN_OK)
            return st;
        src->bytes += n + n / LINATTN_Q8_GROUP * sizeof(float);
        return LINATTN_OK;
    }
    const float *f = NULL;
    linattn_status st = take(src, name, rows, cols, 'w', &f);
    out->data = f;
    out->dtype = LINATTN_DTYPE_F32;
    return st;
}

/* FNV-1a over n bytes, continuing from h (start: FNV_START). */
#define FNV_START 0xcbf29ce484222325ull
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Every float the model holds, in the order take() is called. */
static size_t count_floats(const linattn_config *c, uint64_t *params)
{
    size_t d = (size_t)c->d_model, ff = (size_t)c->d_ff, V = (size_t)c->vocab_size;
    size_t kvd = d / (size_t)c->n_heads * (size_t)(c->n_kv_heads ? c->n_kv_heads : c->n_heads);
    size_t bias = c->bias ? 1 : 0, swiglu = c->ffn == LINATTN_FFN_SWIGLU;
    size_t norm = c->norm == LINATTN_NORM_LAYERNORM && bias ? 2 * d : d;
    size_t layer = 2 * d * d + 2 * kvd * d + bias * (2 * d + 2 * kvd) + 2 * norm +
                   (2 + swiglu) * d * ff + bias * ((1 + swiglu) * ff + d);
    if (c->attention == LINATTN_ATTN_HYBRID) { /* lambda, and the feature maps */
        size_t H = (size_t)c->n_heads, G = kvd / (d / H), F = (size_t)c->feature_dim;
        layer += H + (H + G) * F * (d / H);
    }
    size_t n = V * d + (size_t)c->n_layers * layer;
    if (c->positions == LINATTN_POS_LEARNED)
        n += (size_t)c->max_seq_len * d;
    if (c->norm_position == LINATTN_NORM_PRE)
        n += norm;
    if (!c->tie_embeddings)
        n += V * d;
    *params = n;
    return n;
}

static linattn_status load_tensors(linattn_model *m, source *src)
{
    const linattn_config *c = &m->cfg;
    int d = m->d, ff = m->dff, V = m->vocab, kvd = m->kvd;
    int bias = c->bias != 0;
    int ln = c->norm == LINATTN_NORM_LAYERNORM && bias;
    char name[128];
    linattn_status st;
#define TAKE(nm, r, cl, kind, dst)                                   \
    do {                                                             \
        if ((st = take(src, nm, r, cl, kind, dst)) != LINATTN_OK)    \
            return st;                                               \
    } while (0)
#define TAKE_M(nm, r, cl, dst)                                       \
    do {                                                             \
        if ((st = take_matrix(src, nm, r, cl, dst)) != LINATTN_OK)   \
            return st;                                               \
    } while (0)
    TAKE_M("tok_emb.weight", V, d, &m->tok_emb);
    if (c->positions == LINATTN_POS_LEARNED)
        TAKE("pos_emb.weight", c->max_seq_len, d, 'b', &m->pos_emb);
    for (int i = 0; i < c->n_layers; i++) {
        linattn_layer *L = &m->layers[i];
        static const char *const proj[4] = {"q", "k", "v", "o"};
        linattn_matrix *w[4] = {&L->wq, &L->wk, &L->wv, &L->wo};
        const float **b[4] = {&L->bq, &L->bk, &L->bv, &L->bo};
        for (int j = 0; j < 4; j++) {
            int rows = j == 1 || j == 2 ? kvd : d; /* k, v: the k/v heads */
            snprintf(name, sizeof name, "layers.%d.attn.%s.weight", i, proj[j]);
            TAKE_M(name, rows, d, w[j]);
            if (bias) {
                snprintf(name, sizeof name, "layers.%d.attn.%s.bias", i, proj[j]);
                TAKE(name, rows, 0, 'b', b[j]);
            }
        }
        if (c->attention == LINATTN_ATTN_HYBRID) {
            const int F = c->feature_dim;
            if (F > 0) {
                snprintf(name, sizeof name, "layers.%d.attn.wq_phi", i);
                if ((st = take3(src, name, m->h, F, m->dh, &L->wq_phi)) != LINATTN_OK)
                    return st;
                snprintf(name, sizeof name, "layers.%d.attn.wk_phi", i);
                if ((st = take3(src, name, m->g, F, m->dh, &L->wk_phi)) != LINATTN_OK)
                    return st;
            }
            snprintf(name, sizeof name, "layers.%d.attn.lin_scale", i);
            TAKE(name, m->h, 0, 'b', &L->lin_scale);
        }
        for (int j = 1; j <= 2; j++) {
            snprintf(name, sizeof name, "layers.%d.norm%d.weight", i, j);
            TAKE(name, d, 0, 'n', j == 1 ? &L->norm1_w : &L->norm2_w);
            if (ln) {
                snprintf(name, sizeof name, "layers.%d.norm%d.bias", i, j);
                TAKE(name, d, 0, 'b', j == 1 ? &L->norm1_b : &L->norm2_b);
            }
        }
        if (c->ffn == LINATTN_FFN_SWIGLU) {
            snprintf(name, sizeof name, "layers.%d.ffn.gate.weight", i);
            TAKE_M(name, ff, d, &L->gate_w);
            if (bias) {
                snprintf(name, sizeof name, "layers.%d.ffn.gate.bias", i);
                TAKE(name, ff, 0, 'b', &L->gate_b);
            }
        }
        snprintf(name, sizeof name, "layers.%d.ffn.up.weight", i);
        TAKE_M(name, ff, d, &L->up_w);
        if (bias) {
            snprintf(name, sizeof name, "layers.%d.ffn.up.bias", i);
            TAKE(name, ff, 0, 'b', &L->up_b);
        }
        snprintf(name, sizeof name, "layers.%d.ffn.down.weight", i);
        TAKE_M(name, d, ff, &L->down_w);
        if (bias) {
            snprintf(name, sizeof name, "layers.%d.ffn.down.bias", i);
            TAKE(name, d, 0, 'b', &L->down_b);
        }
    }
    if (c->norm_position == LINATTN_NORM_PRE) {
        TAKE("norm_f.weight", d, 0, 'n', &m->norm_f_w);
        if (ln)
            TAKE("norm_f.bias", d, 0, 'b', &m->norm_f_b);
    }
    if (c->tie_embeddings)
        m->lm_head = m->tok_emb;
    else
        TAKE_M("lm_head.weight", V, d, &m->lm_head);
#undef TAKE
#undef TAKE_M
    if (src->file && (st = linattn_weights_check_all_used(src->file)) != LINATTN_OK)
        return st;
    return src->file ? linattn_weights_check_unchanged(src->file) : LINATTN_OK;
}

static linattn_status build(const linattn_config *config, const void *bytes, size_t size,
                            linattn_model **out, recorder *rec);

/* The config's tokenizer; more tokens than the model's vocabulary is an
 * error (the byte tokenizer excepted: a model of fewer than 256 tokens
 * has always taken the bytes below its vocab_size). */
static linattn_status load_tokenizer(linattn_model *m)
{
    const linattn_config *c = &m->cfg;
    const char *file = c->path[0] ? c->path : "config";
    char why[512];
    linattn_status st = linattn_tokenizer_load(c->tokenizer, &m->tokenizer);
    if (st != LINATTN_OK) {
        snprintf(why, sizeof why, "%s", linattn_last_error());
        return linattn_err(st, "%s: [model] key 'tokenizer': %s", file, why);
    }
    int n = linattn_tokenizer_vocab(m->tokenizer);
    if (strcmp(linattn_tokenizer_name(m->tokenizer), "bytes") != 0 && n > m->vocab)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: [model] key 'tokenizer': the tokenizer (%s, %s) has %d tokens, "
                           "more than the model's vocab_size %d",
                           file, linattn_tokenizer_name(m->tokenizer),
                           linattn_tokenizer_path(m->tokenizer), n, m->vocab);
    return LINATTN_OK;
}

/* A weights file that cannot be opened: the message names the config and
 * the file as an absolute path (a relative one is resolved from the
 * config's folder, which the reader may not have in mind). */
static linattn_status weights_error(const linattn_config *config, linattn_status st)
{
    char why[512], abs[4096 + 256] = "";
    snprintf(why, sizeof why, "%s", linattn_last_error());
    const char *w = config->weights;
    char *real = realpath(w, NULL);
    if (real) {
        snprintf(abs, sizeof abs, "%s", real);
        free(real);
    } else {
        /* the folder (".", "/" or w up to its last '/'), resolved */
        char dir[4096] = ".";
        const char *slash = strrchr(w, '/');
        if (slash == w)
            strcpy(dir, "/");
        else if (slash && (size_t)(slash - w) < sizeof dir)
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - w), w);
        char *rd = realpath(dir, NULL);
        if (rd) {
            snprintf(abs, sizeof abs, "%s/%s", strcmp(rd, "/") ? rd : "", slash ? slash + 1 : w);
            free(rd);
        }
    }
    if (!abs[0] || !strcmp(abs, w))
        return linattn_err(st, "%s: [model] key 'weights': %s", config->path[0] ? config->path : "config", why);
    return linattn_err(st, "%s: [model] key 'weights' (%s): %s",
                       config->path[0] ? config->path : "config", abs, why);
}

linattn_status linattn_model_from_config(const linattn_config *config, linattn_model **out)
{
    return build(config, NULL, 0, out, NULL);
}

linattn_status linattn_model_random_safetensors(const linattn_config *config,
                                                linattn_dtype matrices, linattn_dtype vectors,
                                                void **bytes, size_t *size)
{
    if (!config || !bytes || !size)
        return linattn_err(LINATTN_ERR_INVALID, "model_random_safetensors: NULL argument");
    if (linattn_source_of(config->weights, NULL) != &linattn_source_random)
        return linattn_err(LINATTN_ERR_INVALID,
                           "model_random_safetensors: weights '%.200s' are not random:SEED",
                           config->weights);
    recorder rec = {NULL, 0, 0, matrices, vectors, 0, NULL, 0};
    linattn_model *m = NULL;
    linattn_status st = build(config, NULL, 0, &m, &rec);
    if (st == LINATTN_OK && rec.failed)
        st = linattn_err(LINATTN_ERR_NOMEM, "model_random_safetensors: out of memory");
    if (st == LINATTN_OK)
        st = linattn_weights_write_mem(rec.t, rec.n, bytes, size);
    for (int i = 0; i < rec.n; i++)
        mem_free((void *)rec.t[i].name);
    mem_free(rec.t);
    for (int i = 0; i < rec.n_owned; i++)
        mem_free(rec.owned[i]);
    mem_free(rec.owned);
    linattn_model_free(m);
    return st;
}

linattn_status linattn_model_from_config_mem(const linattn_config *config, const void *weights,
                                             size_t size, linattn_model **out)
{
    if (!weights || !out)
        return linattn_err(LINATTN_ERR_INVALID, "model_from_config_mem: NULL argument");
    return build(config, weights, size, out, NULL);
}

/* bytes NULL: the weights the config names (a file or random:SEED); else
 * safetensors bytes in memory. */
static linattn_status build(const linattn_config *config, const void *bytes, size_t size,
                            linattn_model **out, recorder *rec)
{
    if (!out)
        return linattn_err(LINATTN_ERR_INVALID, "model: out is NULL");
    *out = NULL;
    if (!config)
        return linattn_err(LINATTN_ERR_INVALID, "model: no config");
    linattn_status st = linattn_config_validate(config);
    if (st != LINATTN_OK)
        return st;
    if (!linattn_config_has_model(config))
        return linattn_err(LINATTN_ERR_INVALID, "%s: no [model] section",
                           config->path[0] ? config->path : "config");
    const linattn_kernels *k;
    if ((st = linattn_kernels_current(&k)) != LINATTN_OK)
        return st;
    linattn_model *m = mem_calloc(1, sizeof *m);
    if (m && !(m->pool = linattn_scratch_pool_new())) {
        mem_free(m);
        m = NULL;
    }
    if (!m)
        return linattn_err(LINATTN_ERR_NOMEM, "model: out of memory");
    m->cfg = *config;
    /* bytes: safetensors in memory; else the source the weights name, whose
     * files give the shape of a config built by hand */
    const char *arg;
    const linattn_source *wsrc = bytes ? NULL : linattn_source_of(config->weights, &arg);
    if (wsrc && wsrc->complete && (st = linattn_config_complete(&m->cfg)) != LINATTN_OK) {
        linattn_model_free(m);
        return st;
    }
    config = &m->cfg;
    if (wsrc)
        wsrc = linattn_source_of(config->weights, &arg);
    m->d = config->d_model;
    m->h = config->n_heads;
    m->dh = m->d / m->h;
    m->g = config->n_kv_heads ? config->n_kv_heads : m->h;
    m->kvd = m->g * m->dh;
    m->lin_heads = linattn_config_state_heads(config);
    m->window = config->window;
    m->cache_rows = config->window > 0 ? config->window : config->max_seq_len;
    m->fdim = config->feature_dim > 0 ? config->feature_dim : m->dh;
    m->dff = config->d_ff;
    m->vocab = config->vocab_size;
    m->layers = mem_calloc((size_t)config->n_layers, sizeof *m->layers);
    m->inv_freq = mem_alloc((size_t)(m->d / 2 + 1) * sizeof *m->inv_freq);
    m->rope_freq = mem_alloc((size_t)(m->dh / 2 + 1) * sizeof *m->rope_freq);
    if (!m->layers || !m->inv_freq || !m->rope_freq) {
        linattn_model_free(m);
        return linattn_err(LINATTN_ERR_NOMEM, "model: out of memory");
    }
    for (int i = 0; i < m->d / 2; i++)
        m->inv_freq[i] = pow(10000.0, -2.0 * i / m->d);
    for (int i = 0; i < m->dh / 2; i++)
        m->rope_freq[i] = pow((double)config->rope_theta, -2.0 * i / m->dh);
    if (config->decay.kind != LINATTN_DECAY_NONE) {
        int any;
        if (!(m->decay = mem_alloc((size_t)m->h * sizeof *m->decay))) {
            linattn_model_free(m);
            return linattn_err(LINATTN_ERR_NOMEM, "model: out of memory");
        }
        if ((st = linattn_decay_values(&config->decay, m->h, m->decay, &any)) != LINATTN_OK) {
            linattn_model_free(m);
            return st;
        }
        if (!any) { /* every head 1: the plain model, same hash and state files */
            mem_free(m->decay);
            m->decay = NULL;
        }
    }

    if (config->attention == LINATTN_ATTN_HYBRID) {
        if (!(m->log_gw = mem_alloc((size_t)m->h * sizeof *m->log_gw))) {
            linattn_model_free(m);
            return linattn_err(LINATTN_ERR_NOMEM, "model: out of memory");
        }
        for (int h = 0; h < m->h; h++)
            m->log_gw[h] = m->decay ? (float)(config->window * log((double)m->decay[h])) : 0.0f;
    }

    size_t n_floats = count_floats(config, &m->params);
    source src = {0};
    src.keep_stored = config->weights_dtype == LINATTN_WEIGHTS_STORED;
    uint64_t seed;
    if (wsrc == &linattn_source_random && !linattn_source_random_seed(arg, &seed)) {
        linattn_model_free(m);
        return linattn_err(LINATTN_ERR_INVALID, "%s: weights '%s': expected random:SEED",
                           config->path[0] ? config->path : "config", config->weights);
    }
    if (wsrc == &linattn_source_random) {
        src.rng = seed;
        src.rec = rec;
        src.arena = m->owned = mem_alloc(n_floats * sizeof(float));
        if (!m->owned) {
            linattn_model_free(m);
            return linattn_err(LINATTN_ERR_NOMEM, "model: cannot allocate %zu bytes of random weights",
                               n_floats * sizeof(float));
        }
    } else {
        st = bytes ? linattn_weights_open_mem(bytes, size, config->weights, &m->file)
                   : wsrc->open(arg, &m->file);
        /* a plain path is the one a reader may not have resolved as we did */
        if (st == LINATTN_ERR_IO && wsrc == &linattn_source_safetensors)
            st = weights_error(config, st);
        if (st != LINATTN_OK) {
            linattn_model_free(m);
            return st;
        }
        src.file = m->file;
    }
    if ((st = load_tensors(m, &src)) != LINATTN_OK) {
        linattn_model_free(m);
        return st;
    }
    m->weight_bytes = src.bytes;
    if (m->file) {
        m->weight_bytes_stored = linattn_weights_data_bytes(m->file);
        linattn_weights_dtypes(m->file, m->weight_dtypes, sizeof m->weight_dtypes);
    } else {
        m->weight_bytes_stored = m->weight_bytes;
        snprintf(m->weight_dtypes, sizeof m->weight_dtypes, "F32");
    }
    char shape[512];
    snprintf(shape, sizeof shape,
             "linattn-model vocab=%d d=%d heads=%d layers=%d ff=%d attn=%d norm=%d pos=%d "
             "ffn=%d where=%d maxlen=%d eps=%a norm_eps=%a tie=%d",
             m->vocab, m->d, m->h, config->n_layers, m->dff, (int)config->attention,
             (int)config->norm, (int)config->positions, (int)config->ffn,
             (int)config->norm_position, config->max_seq_len, (double)config->eps,
             (double)config->norm_eps, config->tie_embeddings);
    /* The keys that came later join the string only when they are not the
     * defaults, so a model without them hashes as it did before them. */
    size_t len = strlen(shape);
    if (m->g != m->h)
        len += (size_t)snprintf(shape + len, sizeof shape - len, " kv_heads=%d", m->g);
    if (!config->bias)
        len += (size_t)snprintf(shape + len, sizeof shape - len, " bias=0");
    if (config->positions == LINATTN_POS_ROPE)
        len += (size_t)snprintf(shape + len, sizeof shape - len, " rope_theta=%a pairing=%d",
                                (double)config->rope_theta, (int)config->rope_pairing);
    if (config->window > 0)
        len += (size_t)snprintf(shape + len, sizeof shape - len, " window=%d", config->window);
    if (config->feature_dim > 0)
        len += (size_t)snprintf(shape + len, sizeof shape - len, " feature_dim=%d",
                                config->feature_dim);
    /* A decayed model also hashes its decays (as stored, bit for bit), so a
     * state saved under one decay set is refused by a model with another;
     * an undecayed model hashes as it did before decays existed. */
    m->shape_hash = fnv1a(FNV_START, shape, strlen(shape));
    if (m->decay)
        m->shape_hash = fnv1a(m->shape_hash, m->decay, (size_t)m->h * sizeof *m->decay);
    if ((st = load_tokenizer(m)) != LINATTN_OK) {
        linattn_model_free(m);
        return st;
    }
    *out = m;
    return LINATTN_OK;
}

linattn_status linattn_model_load(const char *config_path, linattn_model **out)
{
    if (!out)
        return linattn_err(LINATTN_ERR_INVALID, "model_load: out is NULL");
    *out = NULL;
    linattn_config *c = mem_alloc(sizeof *c);
    if (!c)
        return linattn_err(LINATTN_ERR_NOMEM, "model: out of memory");
    linattn_status st = linattn_config_load(config_path, c);
    if (st == LINATTN_OK)
        st = linattn_model_from_config(c, out);
    mem_free(c);
    return st;
}

void linattn_model_free(linattn_model *m)
{
    if (!m)
        return;
    if (m->file)
        linattn_weights_close(m->file);
    mem_free(m->owned);
    mem_free(m->layers);
    mem_free(m->inv_freq);
    mem_free(m->rope_freq);
    mem_free(m->decay);
    mem_free(m->log_gw);
    linattn_tokenizer_free(m->tokenizer);
    linattn_scratch_pool_free(m->pool);
    mem_free(m);
}

const linattn_config *linattn_model_config(const linattn_model *m) { return &m->cfg; }
const linattn_tokenizer *linattn_model_tokenizer(const linattn_model *m) { return m->tokenizer; }
uint64_t linattn_model_params(const linattn_model *m) { return m->params; }
size_t linattn_model_weight_bytes(const linattn_model *m) { return m->weight_bytes; }
size_t linattn_model_weight_bytes_stored(const linattn_model *m) { return m->weight_bytes_stored; }
const char *linattn_model_weight_dtypes(const linattn_model *m) { return m->weight_dtypes; }
uint64_t linattn_model_shape_hash(const linattn_model *m) { return m->shape_hash; }

int linattn_config_state_heads(const linattn_config *c)
{
    int G = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
    if (c->attention != LINATTN_ATTN_LINEAR || G == c->n_heads ||
        c->decay.kind == LINATTN_DECAY_RETNET)
        return c->n_heads;
    if (c->decay.kind == LINATTN_DECAY_LIST) /* a decayed head cannot share */
        for (int i = 0; i < c->decay.n; i++)
            if (c->decay.values[i] != 1.0f)
                return c->n_heads;
    return G;
}

static size_t state_bytes(const linattn_config *c, uint64_t tokens)
{
    size_t L = (size_t)c->n_layers, H = (size_t)linattn_config_state_heads(c);
    size_t dh = (size_t)(c->d_model / c->n_heads);
    if (c->attention == LINATTN_ATTN_LINEAR) /* S, z and the waiting rows */
        return L * H * (dh * dh + dh + LINATTN_LINEAR_BLOCK * 2 * dh) * sizeof(float);
    size_t kvd = dh * (size_t)(c->n_kv_heads ? c->n_kv_heads : c->n_heads);
    size_t elem = c->kv_cache == LINATTN_KV_F16 ? sizeof(uint16_t) : sizeof(float);
    if (c->window > 0) /* a ring of W keys and values, whatever the length */
        tokens = (uint64_t)c->window;
    size_t bytes = L * 2 * kvd * (size_t)tokens * elem;
    if (c->attention == LINATTN_ATTN_HYBRID) { /* and the tail's sums, F x dh a head */
        size_t F = c->feature_dim > 0 ? (size_t)c->feature_dim : dh;
        bytes += L * (size_t)c->n_heads * (F * dh + F + LINATTN_LINEAR_BLOCK * (F + dh)) *
                 sizeof(float);
    }
    return bytes;
}

linattn_status linattn_config_sizes(const linattn_config *c, linattn_model_sizes *out)
{
    if (!c || !out)
        return linattn_err(LINATTN_ERR_INVALID, "config_sizes: NULL argument");
    linattn_status st = linattn_config_validate(c);
    if (st != LINATTN_OK)
        return st;
    if (!linattn_config_has_model(c))
        return linattn_err(LINATTN_ERR_INVALID, "%s: no [model] section",
                           c->path[0] ? c->path : "config");
    linattn_config *full = mem_alloc(sizeof *full); /* a llama2c: one completed */
    if (!full)
        return linattn_err(LINATTN_ERR_NOMEM, "config_sizes: out of memory");
    *full = *c;
    if ((st = linattn_config_complete(full)) != LINATTN_OK) {
        mem_free(full);
        return st;
    }
    out->weight_bytes = count_floats(full, &out->params) * sizeof(float);
    out->state_bytes = state_bytes(full, 1);
    mem_free(full);
    return LINATTN_OK;
}

size_t linattn_model_state_bytes(const linattn_model *m, uint64_t tokens)
{
    return state_bytes(&m->cfg, tokens);
}

int linattn_model_default_threads(const linattn_model *m)
{
    return m->cfg.threads > 0 ? m->cfg.threads : linattn_max_threads();
}
