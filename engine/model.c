/* model.c: the transformer decoder: loads weights against the config, runs a chunk of tokens. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "f16.h"
#include "hf.h"
#include "llama2c.h"
#include "model.h"

#ifdef LINATTN_HAVE_OPENMP
#include <omp.h>
#endif

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
    if (src->file && (src->keep_stored || linattn_weights_stored_dtype(src->file, name) ==
                                              (int)LINATTN_DTYPE_I8)) {
        int64_t shape[2] = {rows, cols};
        linattn_dtype dt;
        linattn_status st =
            linattn_weights_get_stored(src->file, name, 2, shape, &out->data, &dt);
        if (st != LINATTN_OK)
            return st;
        out->dtype = dt;
        size_t n = (size_t)rows * (size_t)cols;
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

static int parse_random_seed(const char *w, uint64_t *seed)
{
    if (strncmp(w, "random:", 7) != 0)
        return 0;
    char *end;
    const char *digits = w + 7;
    if (!*digits || *digits == '-')
        return -1;
    *seed = strtoull(digits, &end, 10);
    return *end ? -1 : 1;
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
    if (strncmp(config->weights, "random:", 7) != 0)
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
    if (!m)
        return linattn_err(LINATTN_ERR_NOMEM, "model: out of memory");
    m->cfg = *config;
    /* a llama2c: or hf: config built by hand: its shape from the files */
    const int l2c = !bytes && strncmp(config->weights, LINATTN_LLAMA2C_PREFIX,
                                      LINATTN_LLAMA2C_PREFIX_LEN) == 0;
    const int hf = !bytes &&
                   strncmp(config->weights, LINATTN_HF_PREFIX, LINATTN_HF_PREFIX_LEN) == 0;
    if ((l2c || hf) && (st = linattn_config_complete(&m->cfg)) != LINATTN_OK) {
        linattn_model_free(m);
        return st;
    }
    config = &m->cfg;
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
    int rnd = bytes ? 0 : parse_random_seed(config->weights, &seed);
    if (rnd < 0) {
        linattn_model_free(m);
        return linattn_err(LINATTN_ERR_INVALID, "%s: weights '%s': expected random:SEED",
                           config->path[0] ? config->path : "config", config->weights);
    }
    if (rnd) {
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
             : l2c ? linattn_weights_open_llama2c(config->weights + LINATTN_LLAMA2C_PREFIX_LEN,
                                                  &m->file)
             : hf  ? linattn_weights_open_hf(config->weights + LINATTN_HF_PREFIX_LEN, &m->file)
                   : linattn_weights_open(config->weights, &m->file);
        if (st != LINATTN_OK && !bytes && !l2c && !hf && st == LINATTN_ERR_IO)
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

/* ---- the forward pass ---------------------------------------------------- */

/* W's rows from `row` on (cols columns), its scales too. */
static linattn_matrix matrix_rows(linattn_matrix W, size_t row, size_t cols)
{
    static const size_t es[] = {sizeof(float), sizeof(uint16_t), sizeof(uint16_t), 1};
    linattn_matrix r = W;
    r.data = (const char *)W.data + row * cols * es[W.dtype];
    if (W.scales)
        r.scales = W.scales + row * (cols / LINATTN_Q8_GROUP);
    return r;
}

/* y[rows] = W[rows, cols] x + b by the gemv of W's dtype. */
static void gemv_any(const linattn_kernels *k, float *y, linattn_matrix W, size_t cols,
                     const float *x, const float *b, size_t rows)
{
    switch (W.dtype) {
    case LINATTN_DTYPE_F16: k->gemv_f16(y, W.data, cols, x, b, rows, cols); break;
    case LINATTN_DTYPE_BF16: k->gemv_bf16(y, W.data, cols, x, b, rows, cols); break;
    case LINATTN_DTYPE_I8: k->gemv_q8(y, W.data, W.scales, cols, x, b, rows, cols); break;
    default: k->gemv(y, W.data, cols, x, b, rows, cols); break;
    }
}

/* C[M, N] (stride ldc) += A[M, K] B[N, K]^T by the gemm_nt of B's dtype. */
static void gemm_nt_any(const linattn_kernels *k, float *C, size_t ldc, const float *A,
                        linattn_matrix B, size_t M, size_t N, size_t K)
{
    switch (B.dtype) {
    case LINATTN_DTYPE_F16: k->gemm_nt_f16(C, ldc, A, K, B.data, K, M, N, K); break;
    case LINATTN_DTYPE_BF16: k->gemm_nt_bf16(C, ldc, A, K, B.data, K, M, N, K); break;
    case LINATTN_DTYPE_I8: k->gemm_nt_q8(C, ldc, A, K, B.data, B.scales, K, M, N, K); break;
    default: k->gemm_nt(C, ldc, A, K, B.data, K, M, N, K); break;
    }
}

/* r rounded up to a multiple of 16, at most out. */
static size_t cut16(size_t r, size_t out)
{
    r = (r + 15) / 16 * 16;
    return r < out ? r : out;
}

/* Thread t of T's rows [*lo, *hi) of a projection of `out` rows: an equal
 * share, cut at a multiple of 16 rows. A 16-row cut starts a cache line of
 * W for every shape whose rows are whole lines, and the kernel's groups of
 * 4 rows start at the same rows whatever T, so every row is summed alike. */
static void share_rows(size_t out, int t, int T, size_t *lo, size_t *hi)
{
    *lo = cut16(out * (size_t)t / (size_t)T, out);
    *hi = cut16(out * (size_t)(t + 1) / (size_t)T, out);
}

/* Rows [lo, hi) of one row's projection p: y[lo..hi) = W[lo..hi) x + b. */
static void project_rows(const linattn_kernels *k, const linattn_proj *p, const float *x, int in,
                         size_t lo, size_t hi)
{
    if (hi > lo)
        gemv_any(k, p->y + lo, matrix_rows(p->W, lo, (size_t)in), (size_t)in, x,
                 p->b ? p->b + lo : NULL, hi - lo);
}

/* Thread t of T's part of count projections of the same row x[in]: the
 * rows of all the matrices, one after the other, cut into T equal shares
 * (each cut at a multiple of 16 rows of its matrix), so the threads stream
 * equal parts of the weights. */
static void project_share(const linattn_kernels *k, const linattn_proj *p, int count,
                          const float *x, int in, int t, int T)
{
    size_t total = 0;
    for (int i = 0; i < count; i++)
        total += (size_t)p[i].out;
    size_t v0 = total * (size_t)t / (size_t)T, v1 = total * (size_t)(t + 1) / (size_t)T, base = 0;
    for (int i = 0; i < count; i++) {
        size_t out = (size_t)p[i].out;
        size_t lo = v0 > base ? cut16(v0 - base, out) : 0;
        size_t hi = v1 > base ? cut16(v1 - base, out) : 0;
        project_rows(k, &p[i], x, in, lo, hi);
        base += out;
    }
}

void linattn_project_one(const linattn_kernels *k, const linattn_proj *p, int count,
                         const float *x, int in, int threads)
{
    size_t total = 0;
    for (int i = 0; i < count; i++)
        total += (size_t)p[i].out;
    int par = threads > 1 && total * (size_t)in >= LINATTN_PARALLEL_MIN_GEMV;
    (void)par; /* used by the pragma only */
#pragma omp parallel num_threads(threads) if (par)
    {
        int t = 0, T = 1;
#ifdef LINATTN_HAVE_OPENMP
        t = omp_get_thread_num();
        T = omp_get_num_threads();
#endif
        project_share(k, p, count, x, in, t, T);
    }
}

void linattn_project(const linattn_kernels *k, float *y, const float *x, linattn_matrix W,
                     const float *b, int n, int out, int in, int threads)
{
    if (n == 1) {
        linattn_proj p = {y, W, b, out};
        linattn_project_one(k, &p, 1, x, in, threads);
        return;
    }
    /* Column blocks of 64 outputs: each thread reads its own rows of W. */
    int blocks = (out + 63) / 64;
    int par = threads > 1 && (size_t)n * out * in >= LINATTN_PARALLEL_MIN_WORK;
    (void)par; /* used by the pragma only */
#pragma omp parallel for num_threads(threads) schedule(static) if (par)
    for (int j = 0; j < blocks; j++) {
        int j0 = j * 64, nj = out - j0 < 64 ? out - j0 : 64;
        for (int r = 0; r < n; r++) {
            float *row = y + (size_t)r * out + j0;
            if (b)
                memcpy(row, b + j0, (size_t)nj * sizeof(float));
            else
                memset(row, 0, (size_t)nj * sizeof(float));
        }
        gemm_nt_any(k, y + j0, (size_t)out, x, matrix_rows(W, (size_t)j0, (size_t)in),
                    (size_t)n, (size_t)nj, (size_t)in);
    }
}

static void norm_rows(const linattn_model *m, const linattn_kernels *k, float *y,
                      const float *x, const float *w, const float *b, int n)
{
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * m->d;
        float *yr = y + (size_t)r * m->d;
        if (m->cfg.norm == LINATTN_NORM_LAYERNORM)
            k->layernorm(yr, xr, w, b, (size_t)m->d, m->cfg.norm_eps);
        else
            k->rmsnorm(yr, xr, w, (size_t)m->d, m->cfg.norm_eps);
    }
}

/* xr[d] = row `token` of the embedding, converted from its dtype (exact). */
static void embed_row(float *xr, linattn_matrix E, int token, int d)
{
    linattn_matrix r = matrix_rows(E, (size_t)token, (size_t)d);
    const void *row = r.data;
    if (E.dtype == LINATTN_DTYPE_I8)
        for (int i = 0; i < d; i++)
            xr[i] = (float)((const int8_t *)row)[i] * r.scales[i / LINATTN_Q8_GROUP];
    else if (E.dtype == LINATTN_DTYPE_F16)
        for (int i = 0; i < d; i++)
            xr[i] = linattn_f16_to_f32(((const uint16_t *)row)[i]);
    else if (E.dtype == LINATTN_DTYPE_BF16)
        for (int i = 0; i < d; i++)
            xr[i] = linattn_bf16_to_f32(((const uint16_t *)row)[i]);
    else
        memcpy(xr, row, (size_t)d * sizeof(float));
}

/* Row t of x: token embedding + position term at pos[t]. */
static void embed(const linattn_model *m, float *x, const int *tokens, int n,
                  linattn_session *const *streams, uint64_t pos0)
{
    int d = m->d;
    for (int t = 0; t < n; t++) {
        float *xr = x + (size_t)t * d;
        embed_row(xr, m->tok_emb, tokens[t], d);
        uint64_t p = streams ? streams[t]->tokens : pos0 + (uint64_t)t;
        if (m->cfg.positions == LINATTN_POS_LEARNED) {
            const float *pe = m->pos_emb + (size_t)p * d;
            for (int i = 0; i < d; i++)
                xr[i] += pe[i];
        } else if (m->cfg.positions == LINATTN_POS_SINCOS) {
            /* double: p reaches the millions in a long stream */
            for (int i = 0; i < d / 2; i++) {
                double a = (double)p * m->inv_freq[i];
                xr[2 * i] += (float)sin(a);
                xr[2 * i + 1] += (float)cos(a);
            }
        }
    }
}

/* ---- attention of a layer: one set of functions per kind ------------------ */

/* Stores count floats of k and of v at position pos of s's layer cache:
 * copied, or rounded to halfs (kv_cache = f16). Rows of a window's ring
 * wrap: count is one row then, or rows that do not wrap. */
static void cache_append(const linattn_session *s, const linattn_kernels *kt, int layer,
                         uint64_t pos, const float *k, const float *v, size_t count)
{
    void *kc = linattn_cache_at(s, 0, layer, pos), *vc = linattn_cache_at(s, 1, layer, pos);
    if (s->kv16) {
        kt->to_f16(kc, k, count);
        kt->to_f16(vc, v, count);
    } else {
        memcpy(kc, k, count * sizeof(float));
        memcpy(vc, v, count * sizeof(float));
    }
}

/* A one-head (or all-heads) softmax call on s's cache rows. */
static linattn_attention_desc softmax_desc(const linattn_session *s, int heads, int n, int len_k,
                                           int causal, int threads)
{
    const linattn_model *m = s->m;
    linattn_attention_desc desc;
    linattn_attention_desc_init(&desc);
    desc.batch = 1;
    desc.heads = heads;
    desc.kv_heads = heads == m->h ? m->g : 1;
    desc.len_q = n;
    desc.len_k = len_k;
    desc.d_k = desc.d_v = m->dh;
    desc.causal = causal;
    desc.threads = threads;
    return desc;
}

static linattn_status softmax_call(const linattn_session *s, const linattn_attention_desc *d,
                                   const float *q, const void *k, const void *v, float *a)
{
    return s->kv16 ? linattn_attention_softmax_f16kv(d, q, k, v, a)
                   : linattn_attention_softmax(d, q, k, v, a);
}

/* softmax: n new rows q, k, v of stream s against every key it keeps. The
 * cache holds them in position order; a window's ring (slot pos % W) is
 * read in place by one row, which sees every key it holds, and for a
 * prefill copied in order, with the rows, into the gather buffers. */
static linattn_status softmax_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                   const float *q, const float *k, const float *v, float *a,
                                   int n, int threads)
{
    const linattn_model *m = s->m;
    const size_t kvd = (size_t)m->kvd, elem = linattn_cache_elem(s);
    const uint64_t t0 = s->tokens;
    linattn_layout views = {0, (size_t)m->dh, (size_t)m->d}; /* head h: columns h*dh.. */
    linattn_layout kv_views = {0, (size_t)m->dh, kvd};
    const void *kc = linattn_cache_at(s, 0, layer, 0), *vc = linattn_cache_at(s, 1, layer, 0);
    int len_k = (int)t0 + n, causal = 1;
    if (m->window > 0 && n == 1) {
        cache_append(s, kt, layer, t0, k, v, kvd);
        len_k = t0 + 1 < (uint64_t)m->window ? (int)t0 + 1 : m->window;
        causal = 0; /* the ring holds exactly the window */
    } else if (m->window > 0) {
        const int W = m->window, prev = t0 < (uint64_t)(W - 1) ? (int)t0 : W - 1;
        char *gk = s->gather_k, *gv = s->gather_v;
        for (int r = 0; r < prev; r++) {
            uint64_t pos = t0 - (uint64_t)prev + (uint64_t)r;
            memcpy(gk + (size_t)r * kvd * elem, linattn_cache_at(s, 0, layer, pos), kvd * elem);
            memcpy(gv + (size_t)r * kvd * elem, linattn_cache_at(s, 1, layer, pos), kvd * elem);
        }
        if (s->kv16) {
            kt->to_f16((uint16_t *)(void *)(gk + (size_t)prev * kvd * elem), k, (size_t)n * kvd);
            kt->to_f16((uint16_t *)(void *)(gv + (size_t)prev * kvd * elem), v, (size_t)n * kvd);
        } else {
            memcpy(gk + (size_t)prev * kvd * elem, k, (size_t)n * kvd * sizeof(float));
            memcpy(gv + (size_t)prev * kvd * elem, v, (size_t)n * kvd * sizeof(float));
        }
        for (int r = n > W ? n - W : 0; r < n; r++) /* the last W rows stay */
            cache_append(s, kt, layer, t0 + (uint64_t)r, k + (size_t)r * kvd,
                         v + (size_t)r * kvd, kvd);
        kc = gk;
        vc = gv;
        len_k = prev + n;
    } else {
        cache_append(s, kt, layer, t0, k, v, (size_t)n * kvd);
    }
    linattn_attention_desc desc = softmax_desc(s, m->h, n, len_k, causal, threads);
    desc.window = causal ? m->window : 0;
    desc.q = desc.out = views;
    desc.k = desc.v = kv_views;
    desc.workspace = s->attn_ws;
    desc.workspace_bytes = s->attn_ws_bytes;
    return softmax_call(s, &desc, q, kc, vc, a);
}

/* linear: k, v [n, kvd], one row of each state head, or [n, d] repeated per
 * query head (s->kx: a decayed grouped model). */
static linattn_status linear_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                  const float *q, const float *k, const float *v, float *a,
                                  int n, int threads)
{
    const linattn_model *m = s->m;
    (void)kt;
    linattn_linear_state *st = s->lin[layer];
    if (n == 1)
        return linattn_linear_step(st, q, k, v, a);
    linattn_layout views = {0, (size_t)m->dh, (size_t)m->d};
    linattn_layout kvl = {0, (size_t)m->dh, s->kx ? (size_t)m->d : (size_t)m->kvd};
    linattn_layout lay[4] = {views, kvl, kvl, views};
    return linattn_linear_prefill_strided(st, q, k, v, n, a, lay, threads);
}

static linattn_status hybrid_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                  const float *q, const float *k, const float *v, float *a,
                                  int n, int threads)
{
    (void)threads;
    return linattn_hybrid_rows(s, kt, layer, s->tokens, q, k, v, a, n, s->hyb_ws);
}

/* A batch step (attend_batch) spreads (stream, unit) pairs over threads:
 * units are heads (softmax), state heads (linear) or whole streams
 * (hybrid, whose heads share one state step). */
static int softmax_units(const linattn_model *m) { return m->h; }
static int linear_units(const linattn_model *m) { return m->lin_heads; }
static int hybrid_units(const linattn_model *m) { (void)m; return 1; }

/* Scratch bytes of one unit: a one-head softmax call against the longest
 * cache, the linear fold's, or a hybrid row's. */
static size_t softmax_unit_bytes(const linattn_session *w, int layer)
{
    (void)layer;
    linattn_attention_desc desc = softmax_desc(w, 1, 1, w->m->cache_rows, 1, 1);
    return linattn_attention_softmax_workspace(&desc);
}

static size_t linear_unit_bytes(const linattn_session *w, int layer)
{
    return linattn_linear_step_scratch_bytes(w->lin[layer]);
}

static size_t hybrid_unit_bytes(const linattn_session *w, int layer)
{
    (void)layer;
    return linattn_hybrid_scratch_floats(w->m) * sizeof(float) + ATTN_ALIGN;
}

/* Before the units of a batch step: this token's k, v into the stream's cache. */
static void softmax_before(linattn_session *s, const linattn_kernels *kt, int layer,
                           const float *k, const float *v)
{
    cache_append(s, kt, layer, s->tokens, k, v, (size_t)s->m->kvd);
}

/* Unit h of stream s's token (q, a: [d]; k, v: a row of the batch). */
static linattn_status softmax_unit(linattn_session *s, const linattn_kernels *kt, int layer,
                                   int h, const float *q, const float *k, const float *v,
                                   float *a, void *scratch, size_t bytes)
{
    const linattn_model *m = s->m;
    (void)kt, (void)k, (void)v;
    const int dh = m->dh;
    const char *kc = linattn_cache_at(s, 0, layer, 0), *vc = linattn_cache_at(s, 1, layer, 0);
    size_t off = (size_t)(h / (m->h / m->g)) * dh * linattn_cache_elem(s); /* its k/v head */
    int len_k = (int)s->tokens + 1;
    if (m->window > 0 && len_k > m->window)
        len_k = m->window; /* the ring: every row it holds is in the window */
    linattn_attention_desc desc = softmax_desc(s, 1, 1, len_k, m->window == 0, 1);
    linattn_layout one = {0, 0, (size_t)m->d};    /* one head, rows d apart */
    linattn_layout kv = {0, 0, (size_t)m->kvd}; /* its k/v head, rows kvd apart */
    desc.q = desc.out = one;
    desc.k = desc.v = kv;
    desc.workspace = scratch;
    desc.workspace_bytes = bytes;
    return softmax_call(s, &desc, q + (size_t)h * dh, kc + off, vc + off, a + (size_t)h * dh);
}

static linattn_status linear_unit(linattn_session *s, const linattn_kernels *kt, int layer, int h,
                                  const float *q, const float *k, const float *v, float *a,
                                  void *scratch, size_t bytes)
{
    (void)kt, (void)bytes;
    return linattn_linear_step_heads(s->lin[layer], h, h + 1, q, k, v, a, scratch);
}

static linattn_status hybrid_unit(linattn_session *s, const linattn_kernels *kt, int layer, int h,
                                  const float *q, const float *k, const float *v, float *a,
                                  void *scratch, size_t bytes)
{
    (void)h, (void)bytes;
    uintptr_t p = ((uintptr_t)scratch + ATTN_ALIGN - 1) & ~(uintptr_t)(ATTN_ALIGN - 1);
    return linattn_hybrid_rows(s, kt, layer, s->tokens, q, k, v, a, 1, (float *)p);
}

/* After every unit of the step: the linear states count the token. */
static void linear_after(linattn_session *s, int layer)
{
    linattn_linear_step_done(s->lin[layer]);
}

typedef struct attn_kind {
    /* n rows of one stream (a prefill chunk, or one token) */
    linattn_status (*rows)(linattn_session *s, const linattn_kernels *kt, int layer,
                           const float *q, const float *k, const float *v, float *a, int n,
                           int threads);
    int (*units)(const linattn_model *m);
    size_t (*unit_bytes)(const linattn_session *w, int layer);
    void (*before)(linattn_session *s, const linattn_kernels *kt, int layer, const float *k,
                   const float *v); /* may be NULL */
    linattn_status (*unit)(linattn_session *s, const linattn_kernels *kt, int layer, int h,
                           const float *q, const float *k, const float *v, float *a,
                           void *scratch, size_t bytes);
    void (*after)(linattn_session *s, int layer); /* may be NULL */
} attn_kind;

static const attn_kind attn_kinds[] = {
    [LINATTN_ATTN_SOFTMAX] = {softmax_rows, softmax_units, softmax_unit_bytes, softmax_before,
                              softmax_unit, NULL},
    [LINATTN_ATTN_LINEAR] = {linear_rows, linear_units, linear_unit_bytes, NULL, linear_unit,
                             linear_after},
    [LINATTN_ATTN_HYBRID] = {hybrid_rows, hybrid_units, hybrid_unit_bytes, NULL, hybrid_unit,
                             NULL},
};

static const attn_kind *kind_of(const linattn_model *m)
{
    return &attn_kinds[m->cfg.attention];
}

/* a[n, d] = attention of n new rows q, k, v of stream s against everything
 * it saw before; advances its state. */
static linattn_status attend_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                  const float *q, const float *k, const float *v, float *a, int n,
                                  int threads)
{
    return kind_of(s->m)->rows(s, kt, layer, q, k, v, a, n, threads);
}

/* One token of each stream (row i of w's q, k, v, a): OpenMP over (stream,
 * unit) pairs, so a few streams still fill the threads. Each pair does what
 * the stream's own step does for that unit. */
static linattn_status attend_batch(linattn_session *w, const linattn_kernels *kt,
                                   linattn_session *const *streams, int layer,
                                   const float *kin, const float *vin, int n)
{
    const linattn_model *m = w->m;
    const attn_kind *kind = kind_of(m);
    const int d = m->d, dh = m->dh, H = m->h, T = w->threads;
    /* k, v rows: kvd wide, or d wide when repeated per query head (w->kx) */
    const size_t kvrow = w->kx ? (size_t)d : (size_t)m->kvd;
    const int HP = kind->units(m);
    const size_t per = kind->unit_bytes(w, layer);
    if (per == SIZE_MAX || (size_t)T > SIZE_MAX / per)
        return linattn_err(LINATTN_ERR_NOMEM, "batched attention: scratch size overflows");
    if (w->batch_ws_bytes < per * (size_t)T) {
        void *p = mem_realloc(w->batch_ws, per * (size_t)T);
        if (!p)
            return linattn_err(LINATTN_ERR_NOMEM,
                               "batched attention: cannot allocate %zu bytes of scratch",
                               per * (size_t)T);
        w->batch_ws = p;
        w->batch_ws_bytes = per * (size_t)T;
    }
    double work = 0; /* flops of the attention of all pairs */
    for (int i = 0; i < n; i++) {
        linattn_session *s = streams[i];
        if (kind->before)
            kind->before(s, kt, layer, kin + (size_t)i * kvrow, vin + (size_t)i * kvrow);
        double keys = m->cfg.attention == LINATTN_ATTN_LINEAR ? dh : (double)s->tokens + 1;
        if (m->window > 0 && keys > m->window)
            keys = m->window + (m->cfg.attention == LINATTN_ATTN_HYBRID ? 2 * m->fdim : 0);
        work += 4.0 * H * dh * keys;
    }
    int failed = 0;
    int par = T > 1 && n * HP > 1 && work >= (double)LINATTN_PARALLEL_MIN_WORK;
    (void)par; /* used by the pragma only */
#pragma omp parallel for num_threads(T) schedule(static) if (par) reduction(|| : failed)
    for (int it = 0; it < n * HP; it++) {
        const int i = it / HP, h = it % HP;
        const size_t row = (size_t)i * d;
        char *scratch = (char *)w->batch_ws + (size_t)attn_thread_id() * per;
        linattn_status st = kind->unit(streams[i], kt, layer, h, w->q + row,
                                       kin + (size_t)i * kvrow, vin + (size_t)i * kvrow,
                                       w->a + row, scratch, per);
        if (st != LINATTN_OK)
            failed = 1;
    }
    if (failed)
        return linattn_err(LINATTN_ERR_INVALID, "batched attention failed");
    if (kind->after)
        for (int i = 0; i < n; i++)
            kind->after(streams[i], layer);
    return LINATTN_OK;
}

static void activate(const linattn_model *m, const linattn_kernels *k, float *u, size_t n)
{
    if (m->cfg.ffn == LINATTN_FFN_GELU)
        k->gelu(u, u, n);
    else
        k->relu(u, u, n);
}

/* cs[t * dh ..]: cos of each pair's angle, then its sin, for row t at
 * position pos[t] (streams) or pos0 + t; once a pass, for every layer.
 * The angle is formed in double: positions reach the millions. */
static void rope_angles(const linattn_model *m, float *cs, int n, linattn_session *const *streams,
                        uint64_t pos0)
{
    const int dh = m->dh, half = dh / 2;
    for (int t = 0; t < n; t++) {
        uint64_t p = streams ? streams[t]->tokens : pos0 + (uint64_t)t;
        float *c = cs + (size_t)t * dh;
        for (int i = 0; i < half; i++) {
            double ang = (double)p * m->rope_freq[i];
            c[i] = (float)cos(ang);
            c[half + i] = (float)sin(ang);
        }
    }
}

/* Rotates pairs of dimensions of every head of q [n, d] and k [n, kvd]
 * by the angles rope_angles left in cs. */
static void rope_rows(const linattn_model *m, float *q, float *k, int n, const float *cs)
{
    const int dh = m->dh, half = dh / 2, d = m->d, kvd = m->kvd;
    const int interleaved = m->cfg.rope_pairing == LINATTN_ROPE_INTERLEAVED;
    const int a_step = interleaved ? 2 : 1, b_off = interleaved ? 1 : half;
    for (int t = 0; t < n; t++) {
        float *qr = q + (size_t)t * d, *kr = k + (size_t)t * kvd;
        const float *ct = cs + (size_t)t * dh;
        for (int i = 0; i < half; i++) {
            const float c = ct[i], sn = ct[half + i];
            int a = i * a_step, b = a + b_off;
            for (int j = 0; j < d; j += dh) {
                float x0 = qr[j + a], x1 = qr[j + b];
                qr[j + a] = x0 * c - x1 * sn;
                qr[j + b] = x0 * sn + x1 * c;
            }
            for (int j = 0; j < kvd; j += dh) {
                float x0 = kr[j + a], x1 = kr[j + b];
                kr[j + a] = x0 * c - x1 * sn;
                kr[j + b] = x0 * sn + x1 * c;
            }
        }
    }
}

/* k, v [n, kvd] repeated per query head into kx, vx [n, d]: query head h
 * reads k/v head h / (n_heads / n_kv_heads). */
static void repeat_kv(const linattn_model *m, float *kx, float *vx, const float *k,
                      const float *v, int n)
{
    const int dh = m->dh, group = m->h / m->g;
    const size_t d = (size_t)m->d, kvd = (size_t)m->kvd;
    for (int t = 0; t < n; t++)
        for (int h = 0; h < m->h; h++) {
            size_t src = (size_t)t * kvd + (size_t)(h / group) * dh, dst = (size_t)t * d + (size_t)h * dh;
            memcpy(kx + dst, k + src, (size_t)dh * sizeof(float));
            memcpy(vx + dst, v + src, (size_t)dh * sizeof(float));
        }
}

static void add_rows(float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

/* ---- one token of one stream: one team of threads ------------------------- */

/* Thread t of a team of T: in a parallel region, or t = 0 of 1. */
typedef struct team {
    int t, T;
} team;

static team team_me(void)
{
    team tm = {0, 1};
#ifdef LINATTN_HAVE_OPENMP
    tm.t = omp_get_thread_num();
    tm.T = omp_get_num_threads();
#endif
    return tm;
}

/* This thread's own copy of the normed row x (row t of hbuf): each thread
 * norms the same row for itself rather than wait at a barrier for one. */
static const float *norm_mine(team tm, linattn_session *s, const linattn_kernels *k,
                              const float *w, const float *b)
{
    float *h = s->hbuf + (size_t)tm.t * (size_t)s->m->d;
    norm_rows(s->m, k, h, s->x, w, b, 1);
    return h;
}

/* x = norm(x) after a sublayer (post-norm): thread 0, then a barrier. */
static void post_norm(team tm, linattn_session *s, const linattn_kernels *k, const float *w,
                      const float *b)
{
    if (tm.t == 0)
        norm_rows(s->m, k, s->x, s->x, w, b, 1);
#pragma omp barrier
}

/* x += W y + b, this thread's rows (the output passes through q, which is
 * free once attention has read it). */
static void project_add(team tm, linattn_session *s, const linattn_kernels *k, linattn_matrix W,
                        const float *b, const float *y, int out, int in)
{
    size_t lo, hi;
    linattn_proj p = {s->q, W, b, out};
    share_rows((size_t)out, tm.t, tm.T, &lo, &hi);
    project_rows(k, &p, y, in, lo, hi);
    add_rows(s->x + lo, s->q + lo, hi - lo);
}

/* Layer l up to attention, this thread's part: norm1 (pre-norm), then its
 * rows of q, k, v. The caller meets the others before attention. */
static void layer_start(team tm, linattn_session *s, const linattn_kernels *k, int l)
{
    const linattn_model *m = s->m;
    const linattn_layer *L = &m->layers[l];
    const int pre = m->cfg.norm_position == LINATTN_NORM_PRE;
    const float *in = pre ? norm_mine(tm, s, k, L->norm1_w, L->norm1_b) : s->x;
    linattn_proj p[3] = {{s->q, L->wq, L->bq, m->d}, {s->k, L->wk, L->bk, m->kvd},
                         {s->v, L->wv, L->bv, m->kvd}};
    project_share(k, p, 3, in, m->d, tm.t, tm.T);
}

/* Layer l from attention's output a on, this thread's part: x += a Wo^T,
 * norm, x += FFN(x), norm; x is whole at the end. */
static void layer_end(team tm, linattn_session *s, const linattn_kernels *k, int l)
{
    const linattn_model *m = s->m;
    const linattn_layer *L = &m->layers[l];
    const int pre = m->cfg.norm_position == LINATTN_NORM_PRE, d = m->d;
    project_add(tm, s, k, L->wo, L->bo, s->a, d, d);
#pragma omp barrier
    if (!pre)
        post_norm(tm, s, k, L->norm1_w, L->norm1_b);
    /* feed-forward: this thread's rows of u (and of u2, the same rows)
     * need nothing else, so the activation follows at once */
    const float *in = pre ? norm_mine(tm, s, k, L->norm2_w, L->norm2_b) : s->x;
    size_t lo, hi;
    share_rows((size_t)m->dff, tm.t, tm.T, &lo, &hi);
    linattn_proj up = {s->u, L->up_w, L->up_b, m->dff};
    if (m->cfg.ffn == LINATTN_FFN_SWIGLU) {
        linattn_proj gate = {s->u, L->gate_w, L->gate_b, m->dff};
        up.y = s->u2;
        project_rows(k, &gate, in, d, lo, hi);
        project_rows(k, &up, in, d, lo, hi);
        k->silu_mul(s->u + lo, s->u + lo, s->u2 + lo, hi - lo);
    } else {
        project_rows(k, &up, in, d, lo, hi);
        activate(m, k, s->u + lo, hi - lo);
    }
#pragma omp barrier
    project_add(tm, s, k, L->down_w, L->down_b, s->u, d, m->dff);
#pragma omp barrier
    if (!pre)
        post_norm(tm, s, k, L->norm2_w, L->norm2_b);
}

/* Layer l's attention of n rows of q, k, v (rope, k/v repeated per query
 * head where the state needs it) into a: of s's stream, or (streams) one
 * row of each stream. The chunked forward and the one-token team share it. */
static linattn_status attend_layer(linattn_session *s, const linattn_kernels *k, int l, int n,
                                 linattn_session *const *streams, int threads)
{
    const linattn_model *m = s->m;
    if (m->cfg.positions == LINATTN_POS_ROPE)
        rope_rows(m, s->q, s->k, n, s->rope);
    const float *kk = s->k, *vv = s->v;
    if (s->kx) { /* linear, grouped k/v: one per query head */
        repeat_kv(m, s->kx, s->vx, s->k, s->v, n);
        kk = s->kx;
        vv = s->vx;
    }
    return streams ? attend_batch(s, k, streams, l, kk, vv, n)
                   : attend_rows(s, k, l, s->q, kk, vv, s->a, n, threads);
}

/* Whether attention of one query against the cache spreads over threads
 * itself (softmax against a long cache, as linattn_attention_softmax
 * decides): it then runs between parallel regions. */
static int attention_apart(const linattn_session *s, int T)
{
    const linattn_model *m = s->m;
    if (m->cfg.attention != LINATTN_ATTN_SOFTMAX || T < 2)
        return 0;
    double keys = (double)s->tokens + 1, work;
    if (m->window > 0 && keys > m->window)
        keys = m->window;
    work = (double)m->h * keys * 2.0 * m->dh;
    return attn_threads_for_work(T, work / 2) > 1;
}

/* One token of s (llama2.c's forward): the layers' projections, norms and
 * FFN in one team of threads, each thread with its share of every
 * matrix's rows, meeting at a barrier where a step reads what others
 * wrote. Attention runs on thread 0 inside the team, or, when it spreads
 * over threads itself, between regions (one a layer). The same bits as
 * any thread count: every row is summed alike. */
static linattn_status forward_one(linattn_session *s, const linattn_kernels *k, int token)
{
    const linattn_model *m = s->m;
    const int nl = m->cfg.n_layers;
    const double layer_work = (double)m->d * (2.0 * m->d + 2.0 * m->kvd) +
                              (double)m->d * m->dff * (m->cfg.ffn == LINATTN_FFN_SWIGLU ? 3 : 2);
    int T = s->threads < LINATTN_CHUNK ? s->threads : LINATTN_CHUNK; /* hbuf: a row a thread */
    if (layer_work < (double)LINATTN_PARALLEL_MIN_LAYER)
        T = 1;
    embed(m, s->x, &token, 1, NULL, s->tokens);
    if (m->cfg.positions == LINATTN_POS_ROPE)
        rope_angles(m, s->rope, 1, NULL, s->tokens);
    linattn_status st = LINATTN_OK;
    if (attention_apart(s, T)) {
        /* region l: the end of layer l - 1 and the start of layer l */
        for (int l = 0; l <= nl && st == LINATTN_OK; l++) {
#pragma omp parallel num_threads(T) if (T > 1)
            {
                team tm = team_me();
                if (l > 0)
                    layer_end(tm, s, k, l - 1);
                if (l < nl)
                    layer_start(tm, s, k, l);
            }
            if (l < nl)
                st = attend_layer(s, k, l, 1, NULL, T);
        }
    } else {
#pragma omp parallel num_threads(T) if (T > 1)
        {
            team tm = team_me();
            for (int l = 0; l < nl; l++) {
                layer_start(tm, s, k, l);
#pragma omp barrier
                if (tm.t == 0) /* the caller's thread: its error message */
                    st = attend_layer(s, k, l, 1, NULL, 1);
#pragma omp barrier
                if (st != LINATTN_OK)
                    break;
                layer_end(tm, s, k, l);
            }
        }
    }
    if (st == LINATTN_OK)
        s->tokens++;
    return st;
}

linattn_status linattn_model_forward(linattn_session *s, linattn_session *const *streams,
                                     const int *tokens, int n)
{
    const linattn_model *m = s->m;
    const linattn_kernels *k;
    linattn_status st = linattn_kernels_current(&k);
    if (st != LINATTN_OK)
        return st;
    if (n == 1 && !streams)
        return forward_one(s, k, tokens[0]);
    int d = m->d, T = s->threads;
    size_t nd = (size_t)n * d;
    int pre = m->cfg.norm_position == LINATTN_NORM_PRE;
    embed(m, s->x, tokens, n, streams, s->tokens);
    if (m->cfg.positions == LINATTN_POS_ROPE)
        rope_angles(m, s->rope, n, streams, s->tokens);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const linattn_layer *L = &m->layers[l];
        /* attention sublayer */
        const float *in = s->x;
        if (pre) {
            norm_rows(m, k, s->hbuf, s->x, L->norm1_w, L->norm1_b, n);
            in = s->hbuf;
        }
        if (n == 1) { /* one token: the three in one parallel region */
            linattn_proj p[3] = {{s->q, L->wq, L->bq, d}, {s->k, L->wk, L->bk, m->kvd},
                                 {s->v, L->wv, L->bv, m->kvd}};
            linattn_project_one(k, p, 3, in, d, T);
        } else {
            linattn_project(k, s->q, in, L->wq, L->bq, n, d, d, T);
            linattn_project(k, s->k, in, L->wk, L->bk, n, m->kvd, d, T);
            linattn_project(k, s->v, in, L->wv, L->bv, n, m->kvd, d, T);
        }
        st = attend_layer(s, k, l, n, streams, s->threads);
        if (st != LINATTN_OK)
            return st;
        linattn_project(k, s->hbuf, s->a, L->wo, L->bo, n, d, d, T);
        add_rows(s->x, s->hbuf, nd);
        if (!pre)
            norm_rows(m, k, s->x, s->x, L->norm1_w, L->norm1_b, n);
        /* feed-forward sublayer */
        in = s->x;
        if (pre) {
            norm_rows(m, k, s->hbuf, s->x, L->norm2_w, L->norm2_b, n);
            in = s->hbuf;
        }
        if (m->cfg.ffn == LINATTN_FFN_SWIGLU && n == 1) {
            linattn_proj p[2] = {{s->u, L->gate_w, L->gate_b, m->dff},
                                 {s->u2, L->up_w, L->up_b, m->dff}};
            linattn_project_one(k, p, 2, in, d, T);
            k->silu_mul(s->u, s->u, s->u2, (size_t)m->dff);
        } else if (m->cfg.ffn == LINATTN_FFN_SWIGLU) {
            linattn_project(k, s->u, in, L->gate_w, L->gate_b, n, m->dff, d, T);
            linattn_project(k, s->u2, in, L->up_w, L->up_b, n, m->dff, d, T);
            k->silu_mul(s->u, s->u, s->u2, (size_t)n * m->dff);
        } else {
            linattn_project(k, s->u, in, L->up_w, L->up_b, n, m->dff, d, T);
            activate(m, k, s->u, (size_t)n * m->dff);
        }
        linattn_project(k, s->hbuf, s->u, L->down_w, L->down_b, n, d, m->dff, T);
        add_rows(s->x, s->hbuf, nd);
        if (!pre)
            norm_rows(m, k, s->x, s->x, L->norm2_w, L->norm2_b, n);
    }
    if (streams)
        for (int i = 0; i < n; i++)
            streams[i]->tokens++;
    else
        s->tokens += (uint64_t)n;
    return LINATTN_OK;
}

void linattn_model_logits(const linattn_model *m, const linattn_kernels *k, float *x,
                          float *logits, int threads)
{
    linattn_model_logits_rows(m, k, x, 1, logits, threads);
}

void linattn_model_logits_rows(const linattn_model *m, const linattn_kernels *k, float *x, int n,
                               float *logits, int threads)
{
    if (m->cfg.norm_position == LINATTN_NORM_PRE)
        norm_rows(m, k, x, x, m->norm_f_w, m->norm_f_b, n);
    linattn_project(k, logits, x, m->lm_head, NULL, n, m->vocab, m->d, threads);
}
