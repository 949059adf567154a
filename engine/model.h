/* model.h: the model and session structs shared by model.c and session.c; not installed. */
#ifndef LINATTN_ENGINE_MODEL_H
#define LINATTN_ENGINE_MODEL_H

#include <string.h>

#include "internal.h"
#include "weights.h"

/* Multiply-adds (about 20 us of work) below which a parallel region costs
 * more than it saves:
 * waking a second thread takes microseconds, milliseconds on a busy
 * machine (measured: the tiny test models ran 20x slower with 2 threads). */
#define LINATTN_PARALLEL_MIN_WORK (1u << 20)
/* The same for one token's projection (a gemv), which streams its weights
 * from memory: two cores read more of them a second than one, so a 512 KiB
 * matrix (2^17 multiply-adds, about 25 us on one core here) is worth
 * splitting. */
#define LINATTN_PARALLEL_MIN_GEMV (1u << 17)
/* One token's whole pass runs in one team of threads (a barrier where a
 * step reads what the others wrote, instead of a parallel region a
 * projection) from this many multiply-adds of weights a layer: a layer
 * then meets at about six barriers, of a microsecond or two each. */
#define LINATTN_PARALLEL_MIN_LAYER (1u << 18)

/* Tokens a prefill processes per pass: bounds the activation buffers. */
#define LINATTN_CHUNK 128
/* Streams whose logits one gemm forms in sessions_step (the LM head read
 * once a block: at vocab 32000 and d 288 it is 37 MB of fp32) */
#define LINATTN_HEAD_ROWS 32
/* Streams of one sessions_step group: a chunk's rows (the buffers'), each
 * projection's weights read once for them all; its gemms run in slabs
 * below the 64 rows where gemm_nt switches from dot tiles to packed
 * panels (another summation order). */
#define LINATTN_STEP_GROUP LINATTN_CHUNK

/* A weight matrix [rows, cols], row-major, as the model holds it: fp32, or
 * F16 / BF16 as the file stores it ([runtime] weights_dtype = stored), or
 * int8 with a scale per LINATTN_Q8_GROUP columns (always as stored);
 * linattn_project picks the kernel by dtype. */
typedef struct linattn_matrix {
    const void *data;
    const float *scales; /* I8 only: [rows, cols / LINATTN_Q8_GROUP] */
    linattn_dtype dtype;
} linattn_matrix;

/* Biases are NULL when the config has bias = false. */
typedef struct linattn_layer {
    linattn_matrix wq, wo;                              /* [d, d] */
    const float *bq, *bo;                               /* [d] */
    linattn_matrix wk, wv;                              /* [kv_dim, d] */
    const float *bk, *bv;                               /* [kv_dim] */
    const float *norm1_w, *norm1_b, *norm2_w, *norm2_b; /* [d]; biases NULL for rmsnorm */
    linattn_matrix gate_w;                              /* swiglu only: [d_ff, d] */
    const float *gate_b;                                /* [d_ff] */
    linattn_matrix up_w;                                /* [d_ff, d] */
    const float *up_b;                                  /* [d_ff] */
    linattn_matrix down_w;                              /* [d, d_ff] */
    const float *down_b;                                /* [d] */
    /* hybrid attention only (else NULL) */
    const float *lin_scale;                             /* [h]: lambda, the tail's log-scale */
    const float *wq_phi, *wk_phi;                       /* feature_dim F > 0: [h, F, dh] and
                                                         * [g, F, dh], before phi; else NULL */
} linattn_layer;

/* The buffers one call works in (a feed's chunk, a step's group): none of
 * it is stream state, so sessions borrow a set from their model's pool for
 * the call and give it back; the pool holds one set per call running at
 * once. */
typedef struct linattn_scratch {
    struct linattn_scratch *next; /* the pool's free list */
    /* activations of up to LINATTN_CHUNK tokens */
    float *x, *hbuf, *q, *k, *v, *a; /* [CHUNK, d] (k, v: [CHUNK, kv_dim] used) */
    float *kx, *vx;                  /* linear with n_kv_heads < n_heads: k, v repeated
                                      * per query head [CHUNK, d]; else NULL */
    float *u, *u2;                   /* [CHUNK, d_ff]; u2 swiglu only (else NULL) */
    float *rope;                     /* [CHUNK, d_head]: cos then sin of each pair's angle
                                      * at each row's position (rope only, else NULL) */
    /* window: a prefill's keys and values in position order, the W - 1
     * before it then its own ([W + CHUNK][kv_dim] each, as the cache) */
    void *gather_k, *gather_v;
    float *hyb_ws; /* hybrid: a chunk's scratch (linattn_hybrid_scratch_floats) */
    void *attn_ws; /* softmax workspace, sized for LINATTN_CHUNK queries */
    size_t attn_ws_bytes;
    /* one scratch block per thread for the units of one token's attention
     * (the team's, and a group of streams' in sessions_step) */
    void *batch_ws;
    size_t batch_ws_bytes;
    float *head_ws; /* sessions_step: [LINATTN_HEAD_ROWS, vocab] logits of a block of
                     * streams (allocated at the first group of two or more) */
    /* the linear states' prefill workspace (one layer at a time) and a
     * grouped state's start sums: lent to s->lin for the call */
    void *lin_ws;
    size_t lin_ws_bytes;
    float *lin_start;
    size_t lin_start_bytes;
    size_t bytes;   /* the fixed parts above (x .. hyb_ws) */
    int sized_threads; /* the thread-sized parts hold this many threads' */
} linattn_scratch;

typedef struct linattn_scratch_pool linattn_scratch_pool;
linattn_scratch_pool *linattn_scratch_pool_new(void);
void linattn_scratch_pool_free(linattn_scratch_pool *pool);

struct linattn_model {
    linattn_config cfg;
    int d, h, dh, dff, vocab; /* d_model, n_heads, d_model / n_heads, d_ff, vocab_size */
    int g, kvd;               /* k/v heads (n_kv_heads or n_heads), their width g * dh */
    int lin_heads;            /* linear: heads of each layer's state: g when the query heads
                               * of a group share their k/v head's state (no decay), else h */
    linattn_weights *file;    /* NULL for random weights */
    float *owned;             /* random weights */
    linattn_matrix tok_emb;   /* [vocab, d]; a row converted per token when not fp32 */
    const float *pos_emb;     /* [max_seq_len, d], learned positions only */
    const float *norm_f_w, *norm_f_b; /* [d], pre-norm only */
    linattn_matrix lm_head;   /* [vocab, d]; tok_emb when tied */
    linattn_layer *layers;    /* [n_layers] */
    double *inv_freq;         /* [d/2] 10000^(-2i/d), sincos positions */
    double *rope_freq;        /* [dh/2] rope_theta^(-2i/dh), rope positions */
    float *decay;             /* [h] per-head decay of linear attention, NULL: none */
    int window;               /* softmax or hybrid: the window W (0: none) */
    int cache_rows;           /* rows of a layer's K and V cache: W (a ring, slot = pos % W)
                               * or max_seq_len */
    int fdim;                 /* hybrid: width of phi(q), phi(k) (feature_dim, or dh) */
    float *log_gw;            /* hybrid: [h] W log(decay): a tail key is W tokens old */
    linattn_tokenizer *tokenizer; /* the config's (bytes by default) */
    uint64_t params;
    size_t weight_bytes;      /* as held in memory (linattn_model_weight_bytes) */
    size_t weight_bytes_stored; /* as the file stores them */
    char weight_dtypes[24];   /* the file's dtypes, "F16" or "F16+F32" */
    uint64_t shape_hash;
    linattn_scratch_pool *pool; /* the sessions' call buffers (session.c) */
};

struct linattn_session {
    const linattn_model *m;
    int threads_asked; /* 0: follow the free cores (up to the OpenMP default) */
    int threads;       /* in force for the current call, >= 1 */
    uint64_t tokens;  /* position of the next token */
    /* linear: one state per layer (of n_heads heads: grouped k/v are repeated
     * per query head); softmax: K and V caches [layers][max_seq_len][kv_dim]
     * of fp32, or of halfs when kv16 ([runtime] kv_cache = f16) */
    linattn_linear_state **lin; /* hybrid: the tail's sums, of keys older than the window */
    void *kcache, *vcache;
    int kv16;
    float *logits;     /* [vocab] after the last token fed (valid once tokens > 0) */
    linattn_progress_fn progress; /* NULL: none */
    void *progress_user;
    /* the buffers of the call running (NULL between calls): borrowed from
     * the model's pool, so a parked stream costs its state alone */
    linattn_scratch *sc;
    /* hybrid, during a step: the stream's row buffers (the leaving key, the
     * tail's inputs), in the scratch of the session carrying the step */
    float *row_ws;
};

/* Bytes of one element of s's KV cache. */
static inline size_t linattn_cache_elem(const linattn_session *s)
{
    return s->kv16 ? sizeof(uint16_t) : sizeof(float);
}

/* &cache[layer][slot][0] of s's K (which 0) or V (1) cache, the slot of
 * position pos: pos itself, or pos % W in a window's ring. */
static inline void *linattn_cache_at(const linattn_session *s, int which, int layer, uint64_t pos)
{
    const linattn_model *m = s->m;
    size_t slot = m->window > 0 ? (size_t)(pos % (uint64_t)m->cache_rows) : (size_t)pos;
    size_t row = ((size_t)layer * (size_t)m->cache_rows + slot) * (size_t)m->kvd;
    return (char *)(which ? s->vcache : s->kcache) + row * linattn_cache_elem(s);
}

/* Stores count floats of k and of v at position pos of s's layer cache:
 * copied, or rounded to halfs (kv_cache = f16). Rows of a window's ring
 * wrap: count is one row then, or rows that do not wrap. */
static inline void linattn_cache_put(const linattn_session *s, const linattn_kernels *kt,
                                     int layer, uint64_t pos, const float *k, const float *v,
                                     size_t count)
{
    void *kc = linattn_cache_at(s, 0, layer, pos), *vc = linattn_cache_at(s, 1, layer, pos);
    if (s->kv16) {
        kt->to_f16((uint16_t *)kc, k, count);
        kt->to_f16((uint16_t *)vc, v, count);
    } else {
        memcpy(kc, k, count * sizeof(float));
        memcpy(vc, v, count * sizeof(float));
    }
}

/* Runs n (<= LINATTN_CHUNK) rows through the model in s's buffers and
 * leaves the final hidden states in s->x. streams NULL: n tokens of s at
 * positions s->tokens..; otherwise one token of each streams[i] (row i).
 * Advances the token counts. Capacity is checked by the caller. */
linattn_status linattn_model_forward(linattn_session *s, linattn_session *const *streams,
                                     const int *tokens, int n);
/* logits[vocab] from the hidden state row x (final norm applied here). */
void linattn_model_logits(const linattn_model *m, const linattn_kernels *k, float *x,
                          float *logits, int threads);
/* logits[n, vocab] from n hidden state rows x[n, d] (one gemm). */
void linattn_model_logits_rows(const linattn_model *m, const linattn_kernels *k, float *x, int n,
                               float *logits, int threads);
/* The same by gemm for one row too (a step of streams: the same bits for a
 * row whatever rows share the call, up to 63). */
void linattn_model_logits_gemm(const linattn_model *m, const linattn_kernels *k, float *x, int n,
                               float *logits, int threads);
/* The random model config describes (weights = random:SEED) as a
 * safetensors image: weight matrices (and the embeddings) stored as
 * `matrices`, norm weights and biases as `vectors`. *bytes is malloc'd
 * (free()). For tests and the bench: F16/BF16 models of any shape; I8:
 * int8 matrices with their _scale tensors (quantized as
 * tools/convert_dtype.py --dtype q8 does; a matrix whose columns are not a
 * multiple of 32 stays F32). */
linattn_status linattn_model_random_safetensors(const linattn_config *config,
                                                linattn_dtype matrices, linattn_dtype vectors,
                                                void **bytes, size_t *size);
/* A windowed prefill of n rows k, v [n, kv_dim] at s->tokens: the ring's
 * last `prev` rows, then the chunk's (as the cache stores them), into s's
 * gather buffers in position order; then the chunk's last W rows into the
 * ring. */
void linattn_window_gather(linattn_session *s, const linattn_kernels *kt, int layer,
                           const float *k, const float *v, int n, int prev);
/* Sizes s's unit scratch for a one-token team of up to `threads` (the
 * session does, when created and when its threads change). */
linattn_status linattn_model_size_team(linattn_session *s, int threads);
/* Hybrid attention (engine/attention_hybrid.c) of one stream s at its
 * position s->tokens (q [n, d], k, v [n, kv_dim] after RoPE, out [n, d]):
 * each row's key enters the window's ring, the key W tokens older leaves it
 * for the tail's sums, then the row reads both.
 * - rows: n rows (a prefill chunk, up to LINATTN_CHUNK) by the softmax and
 *   linear operators on up to `threads` threads, in s's gather buffers and
 *   scratch (hyb_ws: linattn_hybrid_scratch_floats) and attention workspace.
 * - One token split by k/v heads (the team's and a batch's form): begin on
 *   one thread (the leaving key into s's scratch, the token's into the
 *   ring); group g for each g in [0, kv heads), on any threads, each with
 *   its own scratch of linattn_hybrid_group_bytes; end on one thread after
 *   every group (the tail counts the token). */
size_t linattn_hybrid_scratch_floats(const linattn_model *m);
/* Stream i's row buffers of a step carried by w (in w's hyb_ws). */
float *linattn_hybrid_row_ws(const linattn_session *w, int i);
linattn_status linattn_hybrid_rows(linattn_session *s, const linattn_kernels *kt, int layer,
                                   const float *q, const float *k, const float *v, float *out,
                                   int n, int threads);
void linattn_hybrid_begin(linattn_session *s, const linattn_kernels *kt, int layer,
                          const float *k, const float *v);
size_t linattn_hybrid_group_bytes(const linattn_session *s, int layer);
linattn_status linattn_hybrid_group(linattn_session *s, const linattn_kernels *kt, int layer,
                                    int g, const float *q, float *out, void *scratch);
void linattn_hybrid_end(linattn_session *s, int layer);
/* Heads of a linear model's state per layer (linattn_model::lin_heads). */
int linattn_config_state_heads(const linattn_config *c);
/* Threads a session uses when asked for 0. */
int linattn_model_default_threads(const linattn_model *m);
/* One row's projection: y[out] = W x + b (b may be NULL). */
typedef struct linattn_proj {
    float *y;
    linattn_matrix W;
    const float *b;
    int out;
} linattn_proj;
/* count projections of the same row x[in] in one parallel region, the
 * rows of all of them shared evenly by the threads (from
 * LINATTN_PARALLEL_MIN_GEMV multiply-adds in all). */
void linattn_project_one(const linattn_kernels *k, const linattn_proj *p, int count,
                         const float *x, int in, int threads);
/* y[n, out] = x[n, in] W^T + b, spread over threads by output columns;
 * W [out, in] in any dtype a linattn_matrix holds. */
void linattn_project(const linattn_kernels *k, float *y, const float *x, linattn_matrix W,
                     const float *b, int n, int out, int in, int threads);
/* The same by gemm for one row too (linattn_project takes gemv then).
 * alike: each row's bits whatever n (rows of streams stepped together, n
 * below 64): block-quantized weights through the integer tiles (or the
 * fp32 gemm on dequantized weights) at any n, where a prompt takes them
 * from 16 rows and gemm_quant below. */
void linattn_project_gemm(const linattn_kernels *k, float *y, const float *x, linattn_matrix W,
                          const float *b, int n, int out, int in, int threads, int alike);
/* count such projections of the same rows x[n, in], one after the other,
 * x quantized once for those whose weights take the same quantization. */
void linattn_project_gemm_many(const linattn_kernels *k, const linattn_proj *p, int count,
                               const float *x, int n, int in, int threads, int alike);

#endif
