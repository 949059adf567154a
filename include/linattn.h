/* linattn.h: the one public header of liblinattn, every type and function a host uses. */
#ifndef LINATTN_H
#define LINATTN_H

#include <stddef.h>
#include <stdint.h>

/* What the shared library exports: every function declared here, nothing
 * else (it is built with -fvisibility=hidden). */
#if defined(__GNUC__)
#define LINATTN_API __attribute__((visibility("default")))
#else
#define LINATTN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Conventions of every function below:
 * - Errors: a function that can fail returns a linattn_status; on failure
 *   linattn_last_error() (this thread's) says why, with context, and the
 *   library never prints, exits or aborts. A constructor's *out (model,
 *   session, fork, tokenizer, sampler, linear state) is NULL after a
 *   failure, and the objects passed in are unchanged unless the function
 *   says otherwise.
 * - Freeing: every *_free(NULL) is a no-op.
 * - Threads: a linattn_model and a linattn_tokenizer are read-only once
 *   made: any number of threads may use one at once (sessions of one model
 *   on different threads included). A linattn_session, linattn_sampler or
 *   linattn_linear_state is used by one thread at a time (any thread, not
 *   two at once); linattn_sessions_step and _feed take every session they
 *   are given for the call. The ISA choice (linattn_set_isa) is process-wide:
 *   make it before other threads call in. Errors are kept per thread. */

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */
/* ------------------------------------------------------------------------ */

typedef enum linattn_status {
    LINATTN_OK = 0,
    LINATTN_ERR_INVALID,      /* a bad argument, value or shape */
    LINATTN_ERR_UNSUPPORTED,  /* an ISA or feature this build or CPU lacks */
    LINATTN_ERR_NOMEM,        /* an allocation failed */
    LINATTN_ERR_IO,           /* a file could not be opened, read or written */
    LINATTN_ERR_FORMAT,       /* a file's contents are malformed or do not match */
    LINATTN_ERR_CONTEXT_FULL, /* a session reached its token limit (linattn_session_tokens_left) */
    LINATTN_ERR_CANCELLED,    /* a progress callback asked to stop */
} linattn_status;

/* A short fixed name for a status ("invalid argument", ...). */
LINATTN_API const char *linattn_status_str(linattn_status status);

/* The message of the last error returned on this thread, with context
 * ("config.ini:12: key 'd_model': expected a positive integer, got 'x'").
 * Empty string if none. Valid until the next failing call on this thread. */
LINATTN_API const char *linattn_last_error(void);

/* ------------------------------------------------------------------------ */
/* Version, CPU features and ISA selection                                   */
/* ------------------------------------------------------------------------ */

/* The version this header belongs to; linattn_version() is the library's
 * ("MAJOR.MINOR.PATCH"), which a test keeps equal to these. */
#define LINATTN_VERSION_MAJOR 0
#define LINATTN_VERSION_MINOR 1
#define LINATTN_VERSION_PATCH 0
LINATTN_API const char *linattn_version(void);

typedef enum linattn_isa {
    LINATTN_ISA_AUTO = 0, /* the best the CPU has */
    LINATTN_ISA_SCALAR,
    LINATTN_ISA_AVX2, /* AVX2 + FMA, x86-64 */
    LINATTN_ISA_AVX512, /* AVX-512 F, BW, DQ and VL (and AVX2 + FMA), x86-64 */
    LINATTN_ISA_NEON, /* Advanced SIMD, aarch64 */
    LINATTN_ISA_COUNT /* not an ISA: how many values there are */
} linattn_isa;

/* Why the ISA in force was chosen. */
typedef enum linattn_isa_source {
    LINATTN_ISA_FROM_AUTO = 0, /* nothing asked: best available */
    LINATTN_ISA_FROM_ENV,      /* LINATTN_ISA environment variable */
    LINATTN_ISA_FROM_CONFIG,   /* a config file's isa = */
    LINATTN_ISA_FROM_FLAG,     /* the CLI's --isa */
    LINATTN_ISA_FROM_API,      /* linattn_set_isa */
} linattn_isa_source;

/* CPU feature bits, as detected (once) and after the mask. */
#define LINATTN_CPU_AVX2 (1u << 0) /* AVX2 and FMA, with OS YMM support */
#define LINATTN_CPU_NEON (1u << 1)
#define LINATTN_CPU_AVX512 (1u << 2) /* AVX-512 F, BW, DQ, VL, with OS ZMM support */
/* Capabilities: an ISA uses them when present (integer dot products for the
 * block-quantized kernels), they are not ISAs of their own. */
#define LINATTN_CPU_AVXVNNI (1u << 3)    /* AVX-VNNI (VEX vpdpbusd), used by avx2 */
#define LINATTN_CPU_AVX512VNNI (1u << 4) /* AVX-512 VNNI, used by avx512 */
#define LINATTN_CPU_DOTPROD (1u << 5)    /* Armv8.2 dot product (sdot), used by neon */

LINATTN_API unsigned linattn_cpu_features(void);
/* Remove features (for tests and benchmarks); a mask only removes. */
LINATTN_API void linattn_cpu_mask(unsigned mask);
/* "avx2 fma avx512 avx512vnni" / "avx2 fma" / "neon dotprod" / "none"...,
 * for messages: the ISA features then the capabilities present. */
LINATTN_API const char *linattn_cpu_features_str(void);

/* "auto", "scalar", "avx2", "avx512", "neon". */
LINATTN_API const char *linattn_isa_name(linattn_isa isa);
/* Every name, for messages and help: "auto, scalar, avx2, avx512 or neon". */
LINATTN_API const char *linattn_isa_choices(void);
LINATTN_API const char *linattn_isa_source_name(linattn_isa_source source);
/* Parses auto|scalar|avx2|avx512|neon (case-insensitive); LINATTN_ERR_INVALID otherwise. */
LINATTN_API linattn_status linattn_isa_parse(const char *text, linattn_isa *out);

/* Chooses the kernels every later call in this process uses. AUTO picks
 * the best the CPU has. Asking for an ISA this CPU (or build) cannot run
 * is LINATTN_ERR_UNSUPPORTED naming the ISA and what the CPU has; the
 * previous choice then stays. Call it before starting work on other
 * threads. Without any call, the first use reads LINATTN_ISA. */
LINATTN_API linattn_status linattn_set_isa(linattn_isa isa);
LINATTN_API linattn_status linattn_set_isa_from(linattn_isa isa, linattn_isa_source source);
/* The ISA in force (never AUTO) and why. Resolves LINATTN_ISA on first
 * use; returns that error if the variable is bad. */
LINATTN_API linattn_status linattn_get_isa(linattn_isa *isa, linattn_isa_source *source);

/* The most threads a call asking for 0 (auto) uses: the OpenMP default, 1
 * when built without OpenMP. A thread count, explicit or auto, is a
 * ceiling: calls use fewer while other processes hold cores (measured from
 * /proc/stat every 200 ms; a core is given up when the others use more
 * than a quarter of one), because a thread sharing a core stalls every
 * parallel region; LINATTN_THREADS_FOLLOW=0 uses counts as given. */
LINATTN_API int linattn_max_threads(void);
/* 1 if built with OpenMP. */
LINATTN_API int linattn_has_openmp(void);
/* "3.5.1" */
LINATTN_API const char *linattn_sleef_version(void);


/* ------------------------------------------------------------------------ */
/* Attention operators                                                       */
/* ------------------------------------------------------------------------ */

/* Strides, in floats, of a (B, H, L, D) tensor: between batches, heads and
 * rows (L). Elements of a row are contiguous. All zero: dense, i.e.
 * {H*L*D, L*D, D}. A model passes head views of a (L, H*D) buffer as
 * {0, D, H*D} without copying. Inputs may repeat data with a zero batch or
 * head stride (heads sharing one K/V, as in multi-query attention); a row
 * stride must hold a row (>= D) when L > 1, and the output's rows must not
 * overlap. Anything else is LINATTN_ERR_INVALID. */
typedef struct linattn_layout {
    size_t batch, head, row;
} linattn_layout;

/* How causal linear attention absorbs paired query/key rows: AUTO follows
 * the size rule (recurrent while one head's S fits the core's L1 data
 * cache, chunked beyond, README "Numerical contract"); the others force
 * one algorithm (the tests check they agree, the benchmark times both). */
typedef enum linattn_linear_mode {
    LINATTN_LINEAR_AUTO = 0,
    LINATTN_LINEAR_RECURRENT,
    LINATTN_LINEAR_CHUNKED,
} linattn_linear_mode;

typedef struct linattn_attention_desc {
    int batch, heads;     /* B, H */
    int len_q, len_k;     /* Lq, Lk */
    int d_k, d_v;         /* d_v may differ from d_k */
    float scale;          /* softmax: 0 means 1/sqrt(d_k) */
    int causal;           /* query i sees keys j <= i + (Lk - Lq) */
    const int *lengths;   /* [B] valid keys per sequence (0..Lk), NULL: all */
    float eps;            /* linear: denominator epsilon (default 1e-6) */
    const float *decay;   /* linear, causal only: [H] per-head decay in (0, 1], NULL: none */
    int threads;          /* 0: auto (see linattn_max_threads) */
    linattn_layout q, k, v, out; /* strides; all zero: dense */
    void *workspace;      /* NULL: allocated (and freed) inside the call */
    size_t workspace_bytes;
    linattn_linear_mode linear_mode; /* linear, causal: 0 (AUTO) or a forced algorithm */
    int kv_heads;         /* heads of k and v (G): 0 or heads: one each; 1: shared by all
                           * (multi-query); else G dividing heads, query head h reading
                           * k/v head h / (heads / G) (grouped-query). Dense k/v strides
                           * then mean (B, G, Lk, D). */
    int window;           /* softmax, causal only: 0 (off) or W >= 1: query i (at key
                           * position p = i + Lk - Lq) sees keys p - W < j <= p, a
                           * sliding window; W >= Lk is plain causal softmax. Key
                           * tiles wholly outside the band are never read. */
} linattn_attention_desc;

/* Zeroes d and sets eps = 1e-6. */
LINATTN_API void linattn_attention_desc_init(linattn_attention_desc *d);

/* Workspace bytes a call with this descriptor needs (its threads included,
 * alignment slack too: any pointer will do). 0 for a malformed descriptor.
 * With threads = 0 the size follows the OpenMP default at the time of the
 * query; a call that finds workspace_bytes too small fails (INVALID). */
LINATTN_API size_t linattn_attention_softmax_workspace(const linattn_attention_desc *d);
LINATTN_API size_t linattn_attention_linear_workspace(const linattn_attention_desc *d);

/* out = softmax(q k^T * scale, masked) v, tiled (flash-style), fp32.
 * q (B,H,Lq,d_k), k (B,H,Lk,d_k), v (B,H,Lk,d_v), out (B,H,Lq,d_v).
 * A query row with no visible key outputs zeros. Keys past a sequence's
 * length are never read, so padding (even NaN) cannot reach real rows. A
 * NaN in q, k or v, or a score that is not finite (q.k * scale overflowing),
 * reaches the rows that see it as NaN. Results do not depend on the thread
 * count. */
LINATTN_API linattn_status linattn_attention_softmax(const linattn_attention_desc *d, const float *q,
                                         const float *k, const float *v, float *out);
/* The same with k and v stored as IEEE half (binary16, uint16_t; strides
 * in elements), converted to fp32 in registers, exactly: the result is bit
 * for bit what linattn_attention_softmax gives for k and v holding the
 * same values in fp32. Half the bytes read (a KV cache in F16, [runtime]
 * kv_cache = f16). Same workspace (linattn_attention_softmax_workspace). */
LINATTN_API linattn_status linattn_attention_softmax_f16kv(const linattn_attention_desc *d,
                                                           const float *q, const uint16_t *k,
                                                           const uint16_t *v, float *out);

/* Linear attention with phi(x) = elu(x) + 1:
 * out_t = phi(q_t)^T S / (phi(q_t)^T z + eps); causal: S, z sum the keys
 * visible to t (bottom-right aligned, t's own key included); otherwise all
 * valid keys. Padded keys are removed from both sums (and never read); no
 * visible key: 0. eps must be >= 0. With fewer (b, h) pairs than threads a
 * causal sequence is cut into segments whose starting sums are rebuilt by
 * prefix sums, so thread counts agree to fp32 rounding, not bit for bit.
 * Decay (causal only): S_j = g_h S_{j-1} + phi(k_j) v_j^T, z_j likewise,
 * so key j reaches query t weighted g_h^(t + Lk - Lq - j). A padded key
 * adds nothing but time still passes: a row past the last valid key reads
 * the sums decayed by the distance. g_h = 1 is the undecayed operator, bit
 * for bit. A NaN in q, k or v reaches the rows that see it as NaN; for
 * finite inputs |out| <= max |v| (a phi(q), phi(k) or |v| past 2^20 is
 * scaled by a power of two first, so no sum overflows). */
LINATTN_API linattn_status linattn_attention_linear(const linattn_attention_desc *d, const float *q,
                                        const float *k, const float *v, float *out);

/* Keys a linear state sums alone before they join S: per head it keeps S
 * and z over every whole block of LINATTN_LINEAR_BLOCK tokens, and the
 * phi(k), v rows of the tokens since (tokens % LINATTN_LINEAR_BLOCK of them),
 * which every read adds. Adding block sums to S instead of single keys
 * keeps long streams accurate: 10M tokens stay within 1e-5 of float64
 * sums, where key-by-key sums drift to 5e-3. */
#define LINATTN_LINEAR_BLOCK 16

/* Recurrent linear-attention state of H heads: S (d_k x d_v), z (d_k) and
 * the waiting rows per head, fp32. Its size is fixed at creation, which
 * also sizes the prefill workspace for the OpenMP default thread count:
 * stepping and prefilling allocate nothing afterwards (a prefill asking
 * for more threads grows it once). One thread at a time per state. decay:
 * [heads] per-head decays in (0, 1] (copied), or NULL for none. */
typedef struct linattn_linear_state linattn_linear_state;

LINATTN_API linattn_status linattn_linear_state_create(int heads, int d_k, int d_v, float eps,
                                           const float *decay, linattn_linear_state **out);
LINATTN_API void linattn_linear_state_free(linattn_linear_state *s);
LINATTN_API void linattn_linear_state_reset(linattn_linear_state *s);
/* Bytes of S, z and the waiting rows
 * (heads * (d_k*d_v + d_k + LINATTN_LINEAR_BLOCK*(d_k + d_v)) * 4). */
LINATTN_API size_t linattn_linear_state_bytes(const linattn_linear_state *s);
/* Tokens absorbed since create/reset. */
LINATTN_API uint64_t linattn_linear_state_tokens(const linattn_linear_state *s);
/* The sums of head h: S (d_k x d_v row-major) and z (d_k) over the whole
 * blocks, and the waiting rows: phi(k) (LINATTN_LINEAR_BLOCK x d_k) and v
 * (LINATTN_LINEAR_BLOCK x d_v), of which the first tokens %
 * LINATTN_LINEAR_BLOCK are in use. For save/load. After an input past 2^20
 * (see linattn_attention_linear) phi(k) and v are held times 2^-e, e the
 * head's range exponents, which linattn_session_save keeps (0 otherwise). */
LINATTN_API float *linattn_linear_state_S(linattn_linear_state *s, int head);
LINATTN_API float *linattn_linear_state_z(linattn_linear_state *s, int head);
LINATTN_API float *linattn_linear_state_rows_k(linattn_linear_state *s, int head);
LINATTN_API float *linattn_linear_state_rows_v(linattn_linear_state *s, int head);
LINATTN_API void linattn_linear_state_set_tokens(linattn_linear_state *s, uint64_t tokens);

/* Absorbs L tokens and writes their outputs, continuing from the state:
 * the same as stepping them one by one, to fp32 rounding (bit for bit
 * while the recurrent form is chosen). q, k (H, L, d_k), v, out (H, L, d_v),
 * dense; len 0 does nothing. Threads: the OpenMP default. */
LINATTN_API linattn_status linattn_linear_prefill(linattn_linear_state *s, const float *q, const float *k,
                                      const float *v, int len, float *out);
/* The same with strides (batch strides ignored; a layout whose head and row
 * strides are 0 is dense, NULL: all dense); layouts[0..3] for q, k, v,
 * out. threads: 0 for the OpenMP default. */
LINATTN_API linattn_status linattn_linear_prefill_strided(linattn_linear_state *s, const float *q,
                                              const float *k, const float *v, int len,
                                              float *out, const linattn_layout layouts[4],
                                              int threads);
/* The prefill algorithm of this state's later calls (AUTO when created). */
LINATTN_API linattn_status linattn_linear_state_set_mode(linattn_linear_state *s,
                                                         linattn_linear_mode mode);
/* One token: q, k (H, d_k), v, out (H, d_v), dense. No allocation. */
LINATTN_API linattn_status linattn_linear_step(linattn_linear_state *s, const float *q, const float *k,
                                   const float *v, float *out);

/* ------------------------------------------------------------------------ */
/* Config files                                                              */
/* ------------------------------------------------------------------------ */

/* HYBRID: a softmax window of the last `window` keys plus a decayed linear
 * tail over every older key, in one normalisation (README "Attention kinds"). */
typedef enum linattn_attention_kind {
    LINATTN_ATTN_SOFTMAX,
    LINATTN_ATTN_LINEAR,
    LINATTN_ATTN_HYBRID,
} linattn_attention_kind;
typedef enum linattn_norm_kind { LINATTN_NORM_LAYERNORM, LINATTN_NORM_RMSNORM } linattn_norm_kind;
typedef enum linattn_norm_position { LINATTN_NORM_PRE, LINATTN_NORM_POST } linattn_norm_position;
/* SWIGLU: down(silu(gate x) * up x), llama's feed-forward. */
typedef enum linattn_ffn_kind { LINATTN_FFN_RELU, LINATTN_FFN_GELU, LINATTN_FFN_SWIGLU } linattn_ffn_kind;
typedef enum linattn_positions {
    LINATTN_POS_NONE,
    LINATTN_POS_SINCOS,
    LINATTN_POS_LEARNED,
    LINATTN_POS_ROPE, /* rotary: q and k of each head rotated after the projections */
} linattn_positions;
/* Which dimensions of a head RoPE rotates together, pair i turning at
 * rope_theta^(-2i/head_size) radians a position: INTERLEAVED (2i, 2i+1), as
 * llama2.c and Meta's llama; HALF (i, i + head_size/2), Hugging Face's
 * rotate_half. */
typedef enum linattn_rope_pairing {
    LINATTN_ROPE_INTERLEAVED,
    LINATTN_ROPE_HALF,
} linattn_rope_pairing;

/* Per-head decay of linear attention (config key `decay`):
 *   none            no decay (the default)
 *   retnet          g_h = 1 - 2^(-5-h), as in RetNet (rounded to float)
 *   g0,g1,...       one value per head, each in (0, 1] */
typedef enum linattn_decay_kind {
    LINATTN_DECAY_NONE,
    LINATTN_DECAY_RETNET,
    LINATTN_DECAY_LIST,
} linattn_decay_kind;

#define LINATTN_MAX_DECAYS 256 /* values a decay list may give */

typedef struct linattn_decay {
    linattn_decay_kind kind;
    int n;                            /* LIST: values given */
    float values[LINATTN_MAX_DECAYS]; /* LIST: values[0..n) */
} linattn_decay;

/* Parses the config syntax ("none", "retnet", "0.5,0.9,..."); on error
 * LINATTN_ERR_INVALID saying why, and out is unchanged. */
LINATTN_API linattn_status linattn_decay_parse(const char *text, linattn_decay *out);

/* The decay of each of `heads` heads into out[heads] (1 where there is
 * none). LINATTN_ERR_INVALID if a list does not give one value per head or
 * a value is outside (0, 1]. Returns 1 in *any (may be NULL) when some
 * head decays (a value below 1). */
LINATTN_API linattn_status linattn_decay_values(const linattn_decay *d, int heads, float *out, int *any);

/* Limits that linattn_config_validate enforces (so that sizes computed
 * from a valid config never overflow). */
#define LINATTN_MAX_VOCAB 65536
#define LINATTN_MAX_D_MODEL 16384
#define LINATTN_MAX_D_FF 262144
#define LINATTN_MAX_LAYERS 1024
#define LINATTN_MAX_SEQ_LEN 1048576
#define LINATTN_MAX_THREADS 4096
#define LINATTN_MAX_BATCH 65536

/* How a model holds its weight matrices (q/k/v/o, FFN, embedding, LM
 * head): STORED keeps F16 and BF16 matrices as the file stores them (half
 * the bytes; the kernels convert in registers, exactly), F32 converts them
 * at load (the behaviour before F16 kernels). Same results either way: the
 * conversion is exact. Norm weights and biases are always fp32. */
typedef enum linattn_weights_dtype {
    LINATTN_WEIGHTS_STORED = 0,
    LINATTN_WEIGHTS_F32,
} linattn_weights_dtype;

/* What a softmax model's KV cache holds: fp32 (default), or IEEE half, half
 * the memory and half the bytes each decoded token reads from the cache
 * (k and v are rounded to half when stored; the attention converts them
 * back exactly, linattn_attention_softmax_f16kv). Linear models have no
 * cache (F16 there is an error). */
typedef enum linattn_kv_cache {
    LINATTN_KV_F32 = 0,
    LINATTN_KV_F16,
} linattn_kv_cache;

/* An INI config file, parsed and validated. The library's sections and keys:
 *   [model]     weights vocab_size d_model n_heads n_layers d_ff attention norm
 *               norm_position ffn positions max_seq_len eps norm_eps tie_embeddings
 *               decay tokenizer rope_theta rope_pairing bias n_kv_heads window
 *               feature_dim
 *   [runtime]   threads isa batch weights_dtype kv_cache
 * The linattn program's sections, [generate] and [attention], are skipped
 * unread (the program reads them itself, through linattn_config_load_keys);
 * a host adds its own sections the same way; other sections are errors.
 * Booleans: true/false/yes/no/1/0; enum names are case-insensitive.
 * Comments: whole lines starting with ';' or '#', and inline comments that
 * start with ' ;' or ' #' (whitespace before the mark), so a value cannot
 * contain " ;" or " #". Values are trimmed; there are no quotes or escapes,
 * and no continuation lines. Unknown sections or keys, duplicate keys and
 * bad values are errors "FILE:LINE: [section] key 'name': why". */
typedef struct linattn_config {
    uint32_t struct_size; /* sizeof(linattn_config), set by linattn_config_defaults: a
                           * config built against another linattn.h is refused */
    /* [model]. A [model] section must give weights, d_model, n_heads, n_layers
     * and d_ff (all but weights may be left out for llama2c: and hf:);
     * a config without one leaves them ""/0 (see linattn_config_has_model). */
    char weights[4096];   /* .safetensors path resolved from the config's folder, "random:SEED",
                           * or "llama2c:PATH" (a llama2.c checkpoint, PATH resolved likewise):
                           * the shape comes from its header. linattn_config_load fills every
                           * shape field from it (a key the file repeats must agree) and makes
                           * the architecture llama's (rmsnorm, rope, swiglu, no biases) unless
                           * keys say otherwise; in a config built by hand, a shape field left
                           * 0 (vocab_size and max_seq_len included) is taken from the file
                           * and the architecture fields are the host's. Or "hf:DIR", a
                           * Hugging Face Llama folder (config.json, model.safetensors or
                           * the shards of model.safetensors.index.json, tokenizer.json),
                           * read the same way, but norm_eps and rope_theta are the file's
                           * too and the architecture is always llama's (rmsnorm, rope
                           * half, swiglu, no biases, pre-norm: a key saying otherwise is
                           * an error); tokenizer "" becomes "hf:DIR" when DIR has a
                           * tokenizer.json. */
    int vocab_size;       /* 1..LINATTN_MAX_VOCAB, default 256 (byte-level tokenizer) */
    int d_model;          /* 1..LINATTN_MAX_D_MODEL, divisible by n_heads, even for sincos */
    int n_heads;          /* >= 1; head size d_model / n_heads */
    int n_layers;         /* 1..LINATTN_MAX_LAYERS */
    int d_ff;             /* FFN hidden size, 1..LINATTN_MAX_D_FF */
    linattn_attention_kind attention; /* softmax | linear | hybrid, default linear */
    linattn_norm_kind norm;           /* layernorm | rmsnorm, default layernorm */
    linattn_norm_position norm_position; /* pre | post, default pre */
    linattn_ffn_kind ffn;             /* relu | gelu, default gelu */
    linattn_positions positions;      /* none | sincos | learned, default sincos */
    int max_seq_len;      /* 1..LINATTN_MAX_SEQ_LEN, default 1024; softmax KV cache size,
                           * learned position table size */
    float eps;            /* linear attention denominator eps, >= 0, default 1e-6 */
    float norm_eps;       /* norm eps, >= 0, default 1e-5 */
    int tie_embeddings;   /* 1: the LM head is tok_emb^T, default 0 */
    linattn_decay decay;  /* linear and hybrid attention: per-head decay, default none */
    char tokenizer[4096]; /* "bytes" (default; "" too), "llama2c:PATH" or "hf:PATH", paths
                           * resolved from the config's folder (linattn_tokenizer_load) */
    float rope_theta;     /* positions = rope: base of the rotation frequencies, > 0, default 10000 */
    linattn_rope_pairing rope_pairing; /* positions = rope: default INTERLEAVED */
    int bias;             /* 0: no bias tensors at all (attention, FFN, layernorm); default 1 */
    int n_kv_heads;       /* heads of k and v, dividing n_heads (grouped-query attention):
                           * the KV cache, and a linear state without decay, hold only
                           * those; 0 (default): n_heads */
    int window;           /* softmax: 0 (default, off) or W >= 1, a sliding window: token i
                           * sees tokens i - W < j <= i, decoding keeps a ring of W keys
                           * and values and never reaches max_seq_len; hybrid: the
                           * softmax window (required, >= 1), older keys go to the tail */
    int feature_dim;      /* hybrid: 0 (default): phi on the head's q and k; F > 0: learned
                           * per-head maps wq_phi [heads, F, d_head], wk_phi [kv_heads, F,
                           * d_head] before phi, the tail's state F x d_head a head */

    /* [runtime] */
    int threads;          /* 0..LINATTN_MAX_THREADS, 0 (default): auto (linattn_max_threads) */
    int batch;            /* 1..LINATTN_MAX_BATCH, default 1 */
    linattn_isa isa;      /* AUTO (default; also `isa = auto`): not set */
    linattn_weights_dtype weights_dtype; /* stored (default) | f32 */
    linattn_kv_cache kv_cache;           /* softmax: f32 (default) | f16 */

    /* where it came from: the path given to linattn_config_load, "" if built by hand */
    char path[4096];
} linattn_config;

/* A host's own keys, in sections the library does not own, parsed with the
 * same syntax, types and messages (linattn_config_load_keys). */
typedef enum linattn_key_type {
    LINATTN_KEY_INT,    /* field: int */
    LINATTN_KEY_FLOAT,  /* field: float (finite) */
    LINATTN_KEY_U64,    /* field: uint64_t */
    LINATTN_KEY_BOOL,   /* field: int, 0 or 1 */
    LINATTN_KEY_STRING, /* field: char[size] */
    LINATTN_KEY_PATH,   /* field: char[size], resolved from the config's folder */
    LINATTN_KEY_CHOICE, /* field: int, the index in choices (case-insensitive names) */
    LINATTN_KEY_DECAY,  /* field: linattn_decay */
    LINATTN_KEY_INTS,   /* field: int[size], *count values given (comma-separated) */
} linattn_key_type;

typedef struct linattn_config_key {
    const char *section;           /* e.g. "generate" (not model or runtime) */
    const char *name;
    linattn_key_type type;
    void *field;                   /* written when the key is in the file */
    size_t size;                   /* STRING, PATH: bytes of field; INTS: its capacity */
    const char *const *choices;    /* CHOICE: NULL-terminated names */
    int *count;                    /* INTS */
    int line;                      /* out: the line that set it; 0 if not in the file */
} linattn_config_key;

/* Fills c with the defaults above (no model: weights "", d_model 0, ...). */
LINATTN_API void linattn_config_defaults(linattn_config *c);
/* 1 if c describes a model: weights, d_model, n_heads, n_layers or d_ff is
 * set. Validation then checks every [model] field; a config without a model
 * (only [runtime], [generate] or [attention]) is valid but cannot build one. */
LINATTN_API int linattn_config_has_model(const linattn_config *c);
/* Defaults, then the file, then linattn_config_validate. A missing or
 * unreadable file is LINATTN_ERR_IO naming it; a malformed structure (a line
 * that is not `key = value` or `[section]`, an unknown section or key, a
 * duplicate key, a missing required key) is LINATTN_ERR_FORMAT; a bad value
 * (not a number, out of range, inconsistent) is LINATTN_ERR_INVALID. Every
 * message reads "FILE:LINE: [section] key 'name': why". On failure c is left
 * unchanged. */
LINATTN_API linattn_status linattn_config_load(const char *path, linattn_config *c);
/* The same, with a host's keys (keys[n]): their sections become known, each
 * key found is parsed into its field and its line recorded; a key the
 * table does not list is "unknown key" naming those it does. The host
 * checks ranges itself and reports with linattn_config_report. On failure
 * c is unchanged; host fields may have been set. */
LINATTN_API linattn_status linattn_config_load_keys(const char *path, linattn_config *c,
                                                    linattn_config_key *keys, int n);
/* The same, over base (a model's config: linattn_config_from_model): every
 * key the file gives replaces base's, then the model's files are read as
 * for a config naming them (a shape key must agree with them; attention,
 * window, tokenizer and [runtime] keys may change on purpose). The file
 * must not give weights. `linattn generate -m MODEL --config FILE`. */
LINATTN_API linattn_status linattn_config_load_over(const char *path, const linattn_config *base,
                                                    linattn_config *c, linattn_config_key *keys,
                                                    int n);
/* Makes "PATH:LINE: [section] key 'name': why" the last error and returns
 * status (line 0, section or key NULL: left out): a host's messages about
 * its keys read like the library's. */
LINATTN_API linattn_status linattn_config_report(linattn_status status, const char *path,
                                                 int line, const char *section,
                                                 const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* Range and consistency checks (also for hand-built configs); the same
 * messages, without line numbers. */
LINATTN_API linattn_status linattn_config_validate(const linattn_config *c);
/* A config for a model given alone (`linattn generate -m PATH`), recognised
 * by its contents: a GGUF file (architecture llama; F32, F16 or BF16
 * tensors), a llama2.c checkpoint, or a Hugging Face folder with
 * its config.json (or a file in one: model.safetensors, the shard index,
 * config.json). As a config that gives only `weights`: the shape and
 * architecture are the files', the attention is the one the checkpoint
 * was trained with (softmax; a Mistral folder's sliding window), the
 * tokenizer the file's own (GGUF) or the one beside it (tokenizer.json in
 * the folder, tokenizer.bin beside a checkpoint; bytes when there is
 * none), every other key the default. LINATTN_ERR_INVALID when the path is
 * no model file this library recognises (a config, say),
 * LINATTN_ERR_UNSUPPORTED for one it recognises but cannot run (a GGUF
 * file of another architecture or with quantized tensors), an error of
 * the file's reader when it is one but damaged. On failure c is unchanged. */
LINATTN_API linattn_status linattn_config_from_model(const char *path, linattn_config *c);

/* Writes the model c names (its weights from any source with files:
 * GGUF, llama2.c, Hugging Face, safetensors) to out as a GGUF file of
 * architecture llama, which llama.cpp reads: norms F32, matrices as type
 * says ("f32", "f16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k", and
 * llama.cpp's mixes "q4_k_m", "q5_k_m": Q6_K for the output and for attn_v
 * and ffn_down of some layers); a matrix whose rows are not whole blocks
 * of the type gets Q8_0 (rows of 32s) or F16. Half-pairing q and k rows
 * (Hugging Face) are reordered to the interleaved pairs GGUF holds. The
 * vocabulary is copied from a GGUF tokenizer and converted from a llama2.c
 * or Hugging Face one as llama.cpp's converters write them (a tokenizer.json
 * llama.cpp would tokenize otherwise is LINATTN_ERR_UNSUPPORTED, naming
 * what differs: docs/tokenizers.md); *wrote_vocab (may be NULL) says
 * whether there was one to write (the byte tokenizer has none).
 * LINATTN_ERR_UNSUPPORTED for a model that is not llama-shaped (another
 * attention, norm, FFN or positions, biases, a window), LINATTN_ERR_INVALID
 * for an unknown type or random weights. The file is written whole or not
 * at all. */
LINATTN_API linattn_status linattn_quantize(const linattn_config *c, const char *out,
                                            const char *type, int *wrote_vocab);
/* The types linattn_quantize takes, for help text. */
LINATTN_API const char *linattn_quantize_types(void);

/* ------------------------------------------------------------------------ */
/* Models and sessions                                                       */
/* ------------------------------------------------------------------------ */

/* A loaded model: read-only after load, shareable by threads and sessions. */
typedef struct linattn_model linattn_model;
/* One stream's decoding state: KV cache (softmax) or S, z (linear). */
typedef struct linattn_session linattn_session;
/* Text <-> token ids (see linattn_tokenizer_load). */
typedef struct linattn_tokenizer linattn_tokenizer;

/* Loads the config file, then its weights (or builds random ones for
 * weights = random:SEED), checking every tensor against the config. */
LINATTN_API linattn_status linattn_model_load(const char *config_path, linattn_model **out);
/* The same from a config already in memory (validated first). */
LINATTN_API linattn_status linattn_model_from_config(const linattn_config *config, linattn_model **out);
/* The same with the weights in memory: safetensors bytes weights[size]
 * (config->weights only names them in messages). The bytes must outlive
 * the model: aligned F32 tensors are used in place. */
LINATTN_API linattn_status linattn_model_from_config_mem(const linattn_config *config,
                                                         const void *weights, size_t size,
                                                         linattn_model **out);
LINATTN_API void linattn_model_free(linattn_model *m);
LINATTN_API const linattn_config *linattn_model_config(const linattn_model *m);
/* The tokenizer the config names (bytes by default), owned by the model. A
 * tokenizer with more tokens than vocab_size fails the load. */
LINATTN_API const linattn_tokenizer *linattn_model_tokenizer(const linattn_model *m);
/* Number of parameters (tied embeddings counted once). */
LINATTN_API uint64_t linattn_model_params(const linattn_model *m);
/* Bytes of weights the model computes with, as it holds them in memory:
 * fp32 tensors 4 bytes an element, F16/BF16 matrices kept as stored
 * (weights_dtype = stored) 2. */
LINATTN_API size_t linattn_model_weight_bytes(const linattn_model *m);
/* The weights as the file stores them: the bytes of its tensors, and its
 * dtypes ("F16", "F32", "BF16", "I8", or a list such as "F16+F32" when mixed;
 * int8 matrices come with F32 scales: "F32+I8").
 * Random weights: the bytes made (fp32) and "F32". */
LINATTN_API size_t linattn_model_weight_bytes_stored(const linattn_model *m);
LINATTN_API const char *linattn_model_weight_dtypes(const linattn_model *m);
/* A hash of the shape and variant; session files carry it. */
LINATTN_API uint64_t linattn_model_shape_hash(const linattn_model *m);
/* Bytes of per-stream decode state: linear, fixed; softmax, KV cache
 * bytes per token (tokens = 1) or at a given length. */
LINATTN_API size_t linattn_model_state_bytes(const linattn_model *m, uint64_t tokens);
/* The sizes of the model a config describes, without building it (no
 * weights read or made): what `linattn info` prints for random weights. */
typedef struct linattn_model_sizes {
    uint64_t params;     /* tied embeddings counted once */
    size_t weight_bytes; /* fp32 weights: the bytes weights_dtype = f32 computes with */
    size_t state_bytes;  /* linear: per stream, fixed; softmax: KV cache per token */
} linattn_model_sizes;
LINATTN_API linattn_status linattn_config_sizes(const linattn_config *c, linattn_model_sizes *out);

/* Progress of a long feed (linattn_session_set_progress). */
typedef int (*linattn_progress_fn)(void *user, uint64_t done, uint64_t total);

/* A new empty stream of model m (which must outlive it). The session holds
 * its decode state (linattn_session_memory_bytes); the buffers a call works
 * in (a prefill chunk's activations, workspaces) belong to the model, one
 * set per call running at once, lent to the session for the call. The
 * model gets its first set here, sized for the session's threads, so
 * feeding tokens allocates nothing unless calls run at once or a session
 * asks for more threads than the sets were sized for (a set is then made
 * or grown, and kept). */
LINATTN_API linattn_status linattn_session_new(const linattn_model *m, linattn_session **out);
LINATTN_API void linattn_session_free(linattn_session *s);
/* Back to an empty stream. */
LINATTN_API void linattn_session_reset(linattn_session *s);
/* The most threads this session's calls use (0: the config's runtime
 * threads, then the OpenMP default); fewer while other processes hold
 * cores (see linattn_max_threads). */
LINATTN_API void linattn_session_set_threads(linattn_session *s, int threads);
/* Feeds n tokens (prefill when n > 1); writes the logits after the last
 * one into logits[vocab_size] unless NULL. Softmax: past max_seq_len
 * returns LINATTN_ERR_CONTEXT_FULL and feeds nothing (the session stays
 * valid). */
LINATTN_API linattn_status linattn_session_feed(linattn_session *s, const int *tokens, int n, float *logits);
/* The same, writing the logits after every token: logits[n][vocab_size],
 * row i after tokens[0..i] (the model's prediction of tokens[i+1]). For
 * scoring a text (linattn eval) at prefill speed. */
LINATTN_API linattn_status linattn_session_feed_all(linattn_session *s, const int *tokens, int n,
                                        float *logits);
/* Tokens fed since new/reset/load. */
LINATTN_API uint64_t linattn_session_tokens(const linattn_session *s);
/* How many more tokens this stream can take: UINT64_MAX for a linear model
 * without learned positions (unbounded), else max_seq_len - tokens. */
LINATTN_API uint64_t linattn_session_tokens_left(const linattn_session *s);
/* The logits after the last token fed ([vocab_size], owned by s, valid
 * until the next feed, reset or load); NULL before any token. Kept by
 * every feed and step and stored in session files, so a resumed stream
 * can sample at once. */
LINATTN_API const float *linattn_session_logits(const linattn_session *s);
/* A new session continuing where src stands (state, tokens, logits,
 * threads): a shared prompt prefix computed once, then streams apart. */
LINATTN_API linattn_status linattn_session_fork(const linattn_session *src, linattn_session **out);
/* Cuts a stream back to its first n_tokens tokens, as if the later ones
 * had never been fed: a fork cut to a shared prefix continues with other
 * tokens bit for bit as a session fed that prefix would. Plain softmax
 * attention only (its KV cache keeps every key); a linear, hybrid or
 * windowed stream, or n_tokens past linattn_session_tokens, is
 * LINATTN_ERR_INVALID with s unchanged. The logits after token n_tokens
 * are not kept: linattn_session_logits reads zeros until the next feed
 * (unless n_tokens is the stream's length, which changes nothing). */
LINATTN_API linattn_status linattn_session_truncate(linattn_session *s, uint64_t n_tokens);
/* Called between chunks (of 128 tokens) of a long feed with the
 * tokens done and the total of the call; returning non-zero stops the feed
 * with LINATTN_ERR_CANCELLED, the tokens done staying fed (and their logits
 * kept). NULL removes it. */
LINATTN_API void linattn_session_set_progress(linattn_session *s, linattn_progress_fn fn,
                                             void *user);
/* Bytes of decode state in use: linear, constant; softmax, the KV cache
 * filled so far. */
LINATTN_API size_t linattn_session_state_bytes(const linattn_session *s);
/* Bytes the session holds while parked: its whole decode state (the
 * softmax cache at its full length, the linear sums with their waiting
 * rows), its logits and about 1 KiB of bookkeeping. 0 for NULL. */
LINATTN_API size_t linattn_session_memory_bytes(const linattn_session *s);
/* Bytes of the call buffers m's sessions share (the sets not in use by a
 * call at this moment: all of them between calls). 0 for NULL. */
LINATTN_API size_t linattn_model_scratch_bytes(const linattn_model *m);

/* Saves the stream to path: written to a temporary file in the same
 * folder, fsynced, then renamed, so the previous file survives a crash.
 * extra (may be NULL) is stored with it, for the host (e.g. a sampler). */
LINATTN_API linattn_status linattn_session_save(const linattn_session *s, const char *path,
                                    const void *extra, size_t extra_bytes);
/* Loads a file saved by a model of the same shape. A file from another
 * shape, truncated or corrupted is refused whole and s is unchanged.
 * extra receives up to extra_cap bytes; *extra_bytes (may be NULL) the
 * stored size. */
LINATTN_API linattn_status linattn_session_load(linattn_session *s, const char *path, void *extra,
                                    size_t extra_cap, size_t *extra_bytes);
/* The same in memory: the bytes linattn_session_save would write (size
 * from linattn_session_save_size) into buf[cap], and a load from them,
 * with the same checks (shape, size, CRC32). The format is the file's. */
LINATTN_API size_t linattn_session_save_size(const linattn_session *s, size_t extra_bytes);
LINATTN_API linattn_status linattn_session_save_mem(const linattn_session *s, const void *extra,
                                                    size_t extra_bytes, void *buf, size_t cap);
LINATTN_API linattn_status linattn_session_load_mem(linattn_session *s, const void *buf,
                                                    size_t size, void *extra, size_t extra_cap,
                                                    size_t *extra_bytes);

/* Advances n independent streams (of one model) by one token each;
 * logits[i] (or NULL) receives stream i's logits. A stream's bits do not
 * depend on which or how many other streams share the step (n = 1
 * included): a server's text for a seed is the same whatever else runs.
 * They equal feeding the token with linattn_session_feed up to rounding
 * (a step's projections are gemms, a lone feed's gemvs, which sum in
 * another order: about 1e-6 on logits). OpenMP over streams and heads,
 * and weight columns. */
LINATTN_API linattn_status linattn_sessions_step(linattn_session *const *sessions, const int *tokens, int n,
                                     float *const *logits);
/* Prefills n streams with their own tokens: tokens[i][0..counts[i]) into
 * sessions[i], logits[i] (or NULL) after its last. Every stream and token
 * is checked first: a stream that would pass its limit, a bad token or a
 * repeated session is an error naming the stream, and nothing is fed. */
LINATTN_API linattn_status linattn_sessions_feed(linattn_session *const *sessions,
                                                 const int *const *tokens, const int *counts,
                                                 int n, float *const *logits);

/* ------------------------------------------------------------------------ */
/* Tokenizers and sampling (engine/tokenizer*.c, engine/sample.c)            */
/* ------------------------------------------------------------------------ */

/* Byte-level: token i is byte i (vocab 256), so any UTF-8 text round-trips.
 * Writes len tokens into tokens[len]; returns len. */
LINATTN_API int linattn_tokenize(const char *text, size_t len, int *tokens);
/* The byte of a token; -1 if token is not a byte (>= 256 or < 0). */
LINATTN_API int linattn_token_byte(int token);

/* A tokenizer (linattn_tokenizer, declared with the models): text <->
 * token ids. Read-only once loaded: any number of threads may encode and
 * decode with one at the same time (encoding allocates its scratch per
 * call). */

/* spec:
 *   "bytes" (or "" or NULL)  token i is byte i, 256 tokens, no bos/eos
 *   "llama2c:PATH"           llama2.c's tokenizer.bin (export.py): every
 *                            token to the end of the file; bos 1, eos 2;
 *                            encoding as run.c's encode
 *   "hf:PATH"                Hugging Face tokenizer.json (a folder holding
 *                            it, or the file): model.type BPE, byte-level
 *                            (GPT-2) or sentencepiece (metaspace, byte
 *                            fallback) form, added tokens; bos/eos from
 *                            tokenizer_config.json or config.json beside it
 * A missing file is LINATTN_ERR_IO; a malformed one LINATTN_ERR_FORMAT and
 * a feature it lacks LINATTN_ERR_UNSUPPORTED, each naming the file and
 * what is wrong in it. */
LINATTN_API linattn_status linattn_tokenizer_load(const char *spec, linattn_tokenizer **out);
LINATTN_API void linattn_tokenizer_free(linattn_tokenizer *t);
/* "bytes", "llama2c", "hf byte-level BPE", "hf sentencepiece BPE", "hf BPE". */
LINATTN_API const char *linattn_tokenizer_name(const linattn_tokenizer *t);
/* The file read ("" for bytes). */
LINATTN_API const char *linattn_tokenizer_path(const linattn_tokenizer *t);
/* Tokens: ids 0..vocab-1. */
LINATTN_API int linattn_tokenizer_vocab(const linattn_tokenizer *t);
/* Begin- and end-of-text ids; -1 when the tokenizer has none. */
LINATTN_API int linattn_tokenizer_bos(const linattn_tokenizer *t);
LINATTN_API int linattn_tokenizer_eos(const linattn_tokenizer *t);
/* 1 when a text should start with bos (llama2c: yes; hf: tokenizer_config's
 * add_bos_token, else whether the post-processor template starts with it). */
LINATTN_API int linattn_tokenizer_adds_bos(const linattn_tokenizer *t);
/* Encodes text[len] (bos first when add_bos and the tokenizer has one) into
 * tokens[cap] and sets *n to the count. tokens NULL: only *n (a size
 * query). A count above cap is LINATTN_ERR_INVALID with *n set, never a
 * truncation (bytes and llama2c give at most len + 2 tokens). A character
 * without a token (no byte fallback, no unknown token) is
 * LINATTN_ERR_INVALID. */
LINATTN_API linattn_status linattn_tokenizer_encode(const linattn_tokenizer *t, const char *text,
                                                    size_t len, int add_bos, int *tokens,
                                                    size_t cap, size_t *n);
/* A long text a part at a time, with the tokens of the whole: where the
 * part of text[len] that starts at byte `from` (0, or a place this gave)
 * may end, the first place at or after from + want (want 0: + 1) where the
 * tokenizer can cut the text without changing its tokens; len when there
 * is none (one word that merges everywhere, say). Encoding each part with
 * linattn_tokenizer_encode_part, one after another, gives exactly what
 * linattn_tokenizer_encode gives for the whole. Cuts: bytes anywhere;
 * llama2c and Hugging Face BPE between two ASCII bytes whose symbols no
 * merge can join (no piece holds them side by side), or where a word
 * starts (a Metaspace split at a space; GPT-2's split before " word" after
 * a letter), never inside an added token. */
LINATTN_API size_t linattn_tokenizer_cut(const linattn_tokenizer *t, const char *text, size_t len,
                                         size_t from, size_t want);
/* Encodes text[from..to) as linattn_tokenizer_encode does, as the part of
 * a whole text that starts at `from` (a place linattn_tokenizer_cut gave,
 * or 0): bos (when add_bos) and the text's prefixes only when from is 0;
 * error offsets count from the whole text's start. Never more than
 * 7 (to - from) + 8 tokens ((to - from) + 2 unless a sentencepiece
 * replacement has several characters). */
LINATTN_API linattn_status linattn_tokenizer_encode_part(const linattn_tokenizer *t,
                                                         const char *text, size_t from, size_t to,
                                                         int add_bos, int *tokens, size_t cap,
                                                         size_t *n);
/* The bytes of token (owned by t, valid while it lives; not NUL-terminated)
 * when it follows prev (-1 at the start of a text): a sentencepiece space
 * that starts a text is dropped (llama2c: after bos, as run.c), <0xXX>
 * byte tokens are their byte, byte-level tokens their bytes. A token may
 * end inside a UTF-8 character: join the bytes of consecutive tokens. A
 * token outside 0..vocab-1 is LINATTN_ERR_INVALID. */
LINATTN_API linattn_status linattn_tokenizer_decode(const linattn_tokenizer *t, int prev, int token,
                                                    const char **bytes, size_t *len);

/* Sampling with its own seeded generator. linattn_sample picks a token from
 * logits[vocab] in this order (a step that is off changes nothing):
 *   1. repetition penalty: each distinct token among the last repeat_last_n
 *      accepted ones gets logit l / penalty if l > 0, else l * penalty
 *      (CTRL, llama.cpp: penalty > 1 makes a repeat less likely either way);
 *   2. logit bias: bias[token] is added (-INFINITY bans the token);
 *   3. temperature: probabilities softmax(logits / T); T = 0 is greedy, the
 *      argmax after steps 1-2 (lowest index on ties), and 4-7 are skipped;
 *   4. top-k: the k most probable;
 *   5. top-p: the fewest of those, most probable first, whose total
 *      probability reaches top_p times theirs;
 *   6. min-p: of those, the ones whose probability is >= min_p times the
 *      most probable one's;
 *   7. a draw from what is left, renormalised.
 * Why: the penalty rescales the model's own logits, by their sign, so it
 * comes before any shift; a bias after it moves a logit by the same amount
 * whatever the history and cannot flip the penalty's direction. The cuts
 * follow the temperature, so top-p and min-p judge the distribution that is
 * drawn from. Min-p goes last: it compares with the most probable token,
 * which every cut keeps, so its set is the same wherever it stands; last,
 * it leaves top-p's reference mass (top-k's set) as it was, and when it is
 * off the draws are bit for bit those of a sampler without it.
 * Cost: nothing sorts. The sets the cuts define are found by selection
 * (quickselect on rank for top-k, on mass for top-p; a threshold for
 * min-p), expected linear in the vocabulary, and the draw walks the kept
 * set in the order selection left it (deterministic; every order gives the
 * same distribution). linattn-bench `sample-32k-*` times a draw at vocab
 * 32,000.
 *
 * The sampler never records what it returns: the host calls
 * linattn_sampler_accept for each token the penalty should count (the
 * prompt's, then each sampled token it keeps), as llama.cpp does, because
 * only the host knows what entered the stream (a prompt, text it inserts, a
 * sample it throws away). */
typedef struct linattn_sampler linattn_sampler;

/* The largest repetition window: 1 Mi tokens (4 MiB). */
#define LINATTN_MAX_REPEAT_LAST_N 1048576

/* temperature 0: greedy (argmax, lowest index on ties); top_k 0: no limit;
 * top_p 1: no limit. Starts with no penalty, no min-p, no bias, an empty
 * window. Allocates its scratch here, never per token. */
LINATTN_API linattn_status linattn_sampler_new(int vocab, float temperature, int top_k, float top_p,
                                   uint64_t seed, linattn_sampler **out);
LINATTN_API void linattn_sampler_free(linattn_sampler *s);
/* Picks a token from logits[vocab]. Non-finite logits are an error, and so
 * is a bias that bans every token (LINATTN_ERR_INVALID; *token unchanged).
 * Does not accept the token. */
LINATTN_API linattn_status linattn_sample(linattn_sampler *s, const float *logits, int *token);
/* The generator's state, to save with a session and restore later. */
LINATTN_API uint64_t linattn_sampler_get_state(const linattn_sampler *s);
LINATTN_API void linattn_sampler_set_state(linattn_sampler *s, uint64_t state);
/* Back to the start: the generator to linattn_sampler_new's seed, the
 * window emptied; parameters and biases stay. Accepting the same tokens and
 * sampling the same logits then gives the same tokens. */
LINATTN_API void linattn_sampler_reset(linattn_sampler *s);

/* Repetition penalty: penalty finite and > 0 (1: off, the default; < 1
 * favours repeats) over a window of the last last_n accepted tokens, 0..
 * LINATTN_MAX_REPEAT_LAST_N (0, the default: none). A new window size
 * allocates the window here (on failure LINATTN_ERR_NOMEM, s unchanged) and
 * keeps the newest tokens. */
LINATTN_API linattn_status linattn_sampler_set_repetition_penalty(linattn_sampler *s, float penalty,
                                                      int last_n);
/* Records token (0 <= token < vocab) as seen: the window keeps the last
 * last_n (none when last_n is 0). Never allocates. */
LINATTN_API linattn_status linattn_sampler_accept(linattn_sampler *s, int token);
/* The window, newest first: writes min(held, cap) tokens into tokens[cap]
 * and returns that count. Accepting them in reverse order (oldest first) on
 * a reset sampler restores it: how a host saves the window with a stream. */
LINATTN_API int linattn_sampler_recent(const linattn_sampler *s, int *tokens, int cap);
/* min-p in [0, 1]: keeps the tokens whose probability is at least min_p
 * times the most probable one's (equal is kept); 0 (default): off. */
LINATTN_API linattn_status linattn_sampler_set_min_p(linattn_sampler *s, float min_p);
/* Adds bias to token's logit in every later draw (0 <= token < vocab; bias
 * finite, or -INFINITY to ban the token; 0 removes it). The first nonzero
 * bias allocates a table of vocab floats (LINATTN_ERR_NOMEM: s unchanged). */
LINATTN_API linattn_status linattn_sampler_set_logit_bias(linattn_sampler *s, int token, float bias);
/* Removes every bias (and frees the table). */
LINATTN_API void linattn_sampler_clear_logit_bias(linattn_sampler *s);

#ifdef __cplusplus
}
#endif

#endif
