/* config.c: INI config file -> validated linattn_config (inih does the splitting). */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/stat.h>

#include <ini.h>

#include "file.h"
#include "internal.h"
#include "source.h"

/* Debian's inih (r55) calls the handler without a line number and splits
 * lines longer than its 200-byte buffer. So inih reads through our own
 * reader (read_line), which hands it one cleaned line at a time from the
 * file held in memory: the reader counts lines (the handler runs before the
 * next line is read, so p->lineno is the handler's line), strips inline
 * comments, rejects malformed lines with a precise message, and passes a
 * short stand-in for a line too long for inih's buffer while keeping the
 * real value for the handler. */

#define MAX_CONFIG_BYTES (1u << 20)
#define LONG_VALUE_MARK "\x1f" /* stands for p->long_value in a line given to inih */

/* The library's sections; a host adds its own (linattn_config_load_keys). */
enum section { SEC_MODEL, SEC_RUNTIME, N_SECTIONS };
static const char *const section_names[N_SECTIONS] = {"model", "runtime"};
/* The linattn program's sections: skipped unseen when a host does not claim
 * them, so any program can load the shipped configs (the program itself
 * checks them when it reads the file). */
static const char *const program_sections[] = {"generate", "attention"};
#define N_PROGRAM_SECTIONS 2
#define MAX_HOST_SECTIONS 16

/* Value types; the first ones are linattn_key_type's, in its order. */
enum key_type {
    T_INT = LINATTN_KEY_INT,       /* int */
    T_FLOAT = LINATTN_KEY_FLOAT,   /* float, finite */
    T_U64 = LINATTN_KEY_U64,       /* uint64_t */
    T_BOOL = LINATTN_KEY_BOOL,     /* int 0/1 */
    T_STRING = LINATTN_KEY_STRING, /* a char[] field, any text */
    T_PATH = LINATTN_KEY_PATH,     /* a char[] field, resolved from the config's folder */
    T_ENUM = LINATTN_KEY_CHOICE,   /* an int (or enum) field: index into choices */
    T_DECAY = LINATTN_KEY_DECAY,   /* a linattn_decay field */
    T_INTS = LINATTN_KEY_INTS,     /* int[size] and a count */
    T_WEIGHTS,                     /* like T_PATH, but "random:SEED" stays as is */
    T_ISA,                         /* a linattn_isa field (linattn_isa_parse) */
    T_TOKENIZER,                   /* bytes, or llama2c:PATH / hf:PATH with PATH as T_PATH */
};

enum key_id {
    K_WEIGHTS, K_VOCAB_SIZE, K_D_MODEL, K_N_HEADS, K_N_LAYERS, K_D_FF, K_ATTENTION, K_NORM,
    K_NORM_POSITION, K_FFN, K_POSITIONS, K_MAX_SEQ_LEN, K_EPS, K_NORM_EPS, K_TIE_EMBEDDINGS,
    K_DECAY, K_TOKENIZER, K_ROPE_THETA, K_ROPE_PAIRING, K_BIAS, K_N_KV_HEADS, K_WINDOW,
    K_FEATURE_DIM,
    K_THREADS, K_ISA, K_BATCH, K_WEIGHTS_DTYPE, K_KV_CACHE,
    N_KEYS
};

/* Names indexed by enum value. */
static const char *const attention_names[] = {"softmax", "linear", "hybrid", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", NULL};
static const char *const norm_position_names[] = {"pre", "post", NULL};
static const char *const ffn_names[] = {"relu", "gelu", "swiglu", NULL};
static const char *const positions_names[] = {"none", "sincos", "learned", "rope", NULL};
static const char *const rope_pairing_names[] = {"interleaved", "half", NULL};
static const char *const weights_dtype_names[] = {"stored", "f32", NULL};
static const char *const kv_cache_names[] = {"f32", "f16", NULL};

struct key {
    enum section section;
    const char *name;
    enum key_type type;
    size_t offset;                /* of the field in linattn_config */
    size_t size;                  /* of char[] fields */
    const char *const *choices;   /* T_ENUM */
};

#define FIELD(f) offsetof(linattn_config, f), sizeof(((linattn_config *)0)->f)

static const struct key keys[N_KEYS] = {
    [K_WEIGHTS] = {SEC_MODEL, "weights", T_WEIGHTS, FIELD(weights), NULL},
    [K_VOCAB_SIZE] = {SEC_MODEL, "vocab_size", T_INT, FIELD(vocab_size), NULL},
    [K_D_MODEL] = {SEC_MODEL, "d_model", T_INT, FIELD(d_model), NULL},
    [K_N_HEADS] = {SEC_MODEL, "n_heads", T_INT, FIELD(n_heads), NULL},
    [K_N_LAYERS] = {SEC_MODEL, "n_layers", T_INT, FIELD(n_layers), NULL},
    [K_D_FF] = {SEC_MODEL, "d_ff", T_INT, FIELD(d_ff), NULL},
    [K_ATTENTION] = {SEC_MODEL, "attention", T_ENUM, FIELD(attention), attention_names},
    [K_NORM] = {SEC_MODEL, "norm", T_ENUM, FIELD(norm), norm_names},
    [K_NORM_POSITION] = {SEC_MODEL, "norm_position", T_ENUM, FIELD(norm_position),
                         norm_position_names},
    [K_FFN] = {SEC_MODEL, "ffn", T_ENUM, FIELD(ffn), ffn_names},
    [K_POSITIONS] = {SEC_MODEL, "positions", T_ENUM, FIELD(positions), positions_names},
    [K_MAX_SEQ_LEN] = {SEC_MODEL, "max_seq_len", T_INT, FIELD(max_seq_len), NULL},
    [K_EPS] = {SEC_MODEL, "eps", T_FLOAT, FIELD(eps), NULL},
    [K_NORM_EPS] = {SEC_MODEL, "norm_eps", T_FLOAT, FIELD(norm_eps), NULL},
    [K_TIE_EMBEDDINGS] = {SEC_MODEL, "tie_embeddings", T_BOOL, FIELD(tie_embeddings), NULL},
    [K_DECAY] = {SEC_MODEL, "decay", T_DECAY, FIELD(decay), NULL},
    [K_TOKENIZER] = {SEC_MODEL, "tokenizer", T_TOKENIZER, FIELD(tokenizer), NULL},
    [K_ROPE_THETA] = {SEC_MODEL, "rope_theta", T_FLOAT, FIELD(rope_theta), NULL},
    [K_ROPE_PAIRING] = {SEC_MODEL, "rope_pairing", T_ENUM, FIELD(rope_pairing),
                        rope_pairing_names},
    [K_BIAS] = {SEC_MODEL, "bias", T_BOOL, FIELD(bias), NULL},
    [K_N_KV_HEADS] = {SEC_MODEL, "n_kv_heads", T_INT, FIELD(n_kv_heads), NULL},
    [K_WINDOW] = {SEC_MODEL, "window", T_INT, FIELD(window), NULL},
    [K_FEATURE_DIM] = {SEC_MODEL, "feature_dim", T_INT, FIELD(feature_dim), NULL},
    [K_THREADS] = {SEC_RUNTIME, "threads", T_INT, FIELD(threads), NULL},
    [K_ISA] = {SEC_RUNTIME, "isa", T_ISA, FIELD(isa), NULL},
    [K_BATCH] = {SEC_RUNTIME, "batch", T_INT, FIELD(batch), NULL},
    [K_WEIGHTS_DTYPE] = {SEC_RUNTIME, "weights_dtype", T_ENUM, FIELD(weights_dtype),
                         weights_dtype_names},
    [K_KV_CACHE] = {SEC_RUNTIME, "kv_cache", T_ENUM, FIELD(kv_cache), kv_cache_names},
};

static const enum key_id required_model_keys[] = {K_WEIGHTS, K_D_MODEL, K_N_HEADS, K_N_LAYERS,
                                                  K_D_FF};

_Static_assert(sizeof(linattn_attention_kind) == sizeof(int) &&
                   sizeof(linattn_norm_kind) == sizeof(int) &&
                   sizeof(linattn_norm_position) == sizeof(int) &&
                   sizeof(linattn_ffn_kind) == sizeof(int) &&
                   sizeof(linattn_positions) == sizeof(int) &&
                   sizeof(linattn_weights_dtype) == sizeof(int) &&
                   sizeof(linattn_kv_cache) == sizeof(int) &&
                   sizeof(linattn_rope_pairing) == sizeof(int),
               "enum fields are set as int");

/* ------------------------------------------------------------------------ */
/* Messages                                                                  */
/* ------------------------------------------------------------------------ */

/* "PATH:LINE: [section] key 'name': why"; PATH is "config" for a hand-built
 * config, LINE is left out when 0, section and key when NULL. */
static linattn_status report(linattn_status status, const char *path, int line,
                             const char *section, const char *key, const char *fmt, ...)
    LINATTN_PRINTF(6, 7);

static linattn_status report(linattn_status status, const char *path, int line,
                             const char *section, const char *key, const char *fmt, ...)
{
    char why[512], where[64] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(where, sizeof where, ":%d", line);
    const char *file = path && path[0] ? path : "config";
    if (section && key)
        return linattn_err(status, "%s%s: [%s] key '%s': %s", file, where, section, key, why);
    if (section)
        return linattn_err(status, "%s%s: [%s]: %s", file, where, section, why);
    if (key)
        return linattn_err(status, "%s%s: key '%s': %s", file, where, key, why);
    return linattn_err(status, "%s%s: %s", file, where, why);
}

/* ------------------------------------------------------------------------ */
/* Defaults and validation                                                   */
/* ------------------------------------------------------------------------ */

void linattn_config_defaults(linattn_config *c)
{
    memset(c, 0, sizeof *c);
    c->vocab_size = 256;
    c->attention = LINATTN_ATTN_LINEAR;
    c->norm = LINATTN_NORM_LAYERNORM;
    c->norm_position = LINATTN_NORM_PRE;
    c->ffn = LINATTN_FFN_GELU;
    c->positions = LINATTN_POS_SINCOS;
    c->max_seq_len = 1024;
    c->eps = 1e-6f;
    c->norm_eps = 1e-5f;
    c->rope_theta = 10000.0f;
    c->rope_pairing = LINATTN_ROPE_INTERLEAVED;
    c->bias = 1;
    c->batch = 1;
    c->isa = LINATTN_ISA_AUTO;
    c->struct_size = (uint32_t)sizeof *c;
}

int linattn_config_has_model(const linattn_config *c)
{
    return c && (c->weights[0] || c->d_model || c->n_heads || c->n_layers || c->d_ff);
}

/* What validate needs to say where a value came from; lines NULL: hand-built. */
struct linattn_source_keys {
    const char *path;
    const int *key_line; /* [N_KEYS], 0 for keys not in the file */
    const linattn_config *c; /* the config the keys are of */
    int alone;               /* a model given alone (config_from_model): path is its file */
};

static linattn_status bad_value(const struct linattn_source_keys *o, enum key_id k, const char *fmt, ...)
    LINATTN_PRINTF(3, 4);

static linattn_status bad_value(const struct linattn_source_keys *o, enum key_id k, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return report(LINATTN_ERR_INVALID, o->path, o->key_line ? o->key_line[k] : 0,
                  section_names[keys[k].section], keys[k].name, "%s", why);
}

static int terminated(const char *s, size_t size)
{
    return memchr(s, '\0', size) != NULL;
}

/* Parses a whole decimal uint64 (no sign, no junk). */
static int parse_u64(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)s[0]))
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = v;
    return 1;
}

static int check_int(const struct linattn_source_keys *o, enum key_id k, int v, int lo, int hi,
                     linattn_status *st)
{
    if (v >= lo && v <= hi)
        return 1;
    *st = bad_value(o, k, "%d is out of range (%d..%d)", v, lo, hi);
    return 0;
}

static int check_nonneg(const struct linattn_source_keys *o, enum key_id k, float v, linattn_status *st)
{
    if (isfinite(v) && v >= 0)
        return 1;
    *st = bad_value(o, k, "expected a finite number >= 0, got %g", (double)v);
    return 0;
}

static int check_string(const struct linattn_source_keys *o, enum key_id k, const char *s, size_t size,
                        linattn_status *st)
{
    if (terminated(s, size))
        return 1;
    *st = bad_value(o, k, "not NUL-terminated within %zu bytes", size);
    return 0;
}

/* A decay field: a known kind, a list of 1..LINATTN_MAX_DECAYS values in
 * (0, 1], and (heads > 0) one value per head. */
static int check_decay(const struct linattn_source_keys *o, enum key_id k, const linattn_decay *d, int heads,
                       linattn_status *st)
{
    if ((unsigned)d->kind > LINATTN_DECAY_LIST) {
        *st = bad_value(o, k, "unknown kind %d", (int)d->kind);
        return 0;
    }
    if (d->kind != LINATTN_DECAY_LIST)
        return 1;
    if (d->n < 1 || d->n > LINATTN_MAX_DECAYS) {
        *st = bad_value(o, k, "%d values (1..%d)", d->n, LINATTN_MAX_DECAYS);
        return 0;
    }
    for (int h = 0; h < d->n; h++)
        if (!(d->values[h] > 0.0f && d->values[h] <= 1.0f)) {
            *st = bad_value(o, k, "value %d (%g) is outside (0, 1]", h, (double)d->values[h]);
            return 0;
        }
    if (heads > 0 && d->n != heads) {
        *st = bad_value(o, k, "%d values for %d heads (n_heads): give one per head", d->n, heads);
        return 0;
    }
    return 1;
}

/* The tokenizers named by a prefix and a path (engine/tokenizer.c reads them). */
#define TOKENIZER_KINDS "bytes, llama2c:PATH, hf:PATH or gguf:PATH"
static const char *tokenizer_prefix(const char *value)
{
    static const char *const prefixes[] = {"llama2c:", "hf:", "gguf:"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(value, prefixes[i], strlen(prefixes[i])) == 0)
            return prefixes[i];
    return NULL;
}

static linattn_status validate(const linattn_config *c, const struct linattn_source_keys *o)
{
    linattn_status st = LINATTN_OK;

    if (linattn_config_has_model(c)) {
        if (!check_string(o, K_WEIGHTS, c->weights, sizeof c->weights, &st))
            return st;
        if (!c->weights[0])
            return bad_value(o, K_WEIGHTS, "no weights given (a .safetensors path, random:SEED, "
                                           "llama2c:PATH or hf:DIR)");
        const char *arg, *why;
        const linattn_source *src = linattn_source_of(c->weights, &arg);
        if (src->check_arg && (why = src->check_arg(arg)))
            return bad_value(o, K_WEIGHTS, "%s, got '%s'", why, c->weights);
        if (src->prefix && src->arg_is_path && !arg[0])
            return bad_value(o, K_WEIGHTS, "expected %s%s, got no %s", src->prefix, src->arg,
                             src->arg);
        /* a source whose files give the shape, not yet read (a config built
         * by hand): 0 stands for the file's value, checked once it is read */
        if (src->complete && (!c->vocab_size || !c->d_model || !c->n_heads || !c->n_layers ||
                            !c->d_ff || !c->max_seq_len))
            return check_int(o, K_VOCAB_SIZE, c->vocab_size, 0, LINATTN_MAX_VOCAB, &st) &&
                           check_int(o, K_D_MODEL, c->d_model, 0, LINATTN_MAX_D_MODEL, &st) &&
                           check_int(o, K_N_HEADS, c->n_heads, 0, LINATTN_MAX_D_MODEL, &st) &&
                           check_int(o, K_N_LAYERS, c->n_layers, 0, LINATTN_MAX_LAYERS, &st) &&
                           check_int(o, K_D_FF, c->d_ff, 0, LINATTN_MAX_D_FF, &st) &&
                           check_int(o, K_MAX_SEQ_LEN, c->max_seq_len, 0, LINATTN_MAX_SEQ_LEN,
                                     &st) &&
                           check_int(o, K_N_KV_HEADS, c->n_kv_heads, 0, LINATTN_MAX_D_MODEL,
                                     &st)
                       ? LINATTN_OK
                       : st;
        if (!check_int(o, K_VOCAB_SIZE, c->vocab_size, 1, LINATTN_MAX_VOCAB, &st) ||
            !check_int(o, K_D_MODEL, c->d_model, 1, LINATTN_MAX_D_MODEL, &st) ||
            !check_int(o, K_N_HEADS, c->n_heads, 1, LINATTN_MAX_D_MODEL, &st) ||
            !check_int(o, K_N_LAYERS, c->n_layers, 1, LINATTN_MAX_LAYERS, &st) ||
            !check_int(o, K_D_FF, c->d_ff, 1, LINATTN_MAX_D_FF, &st) ||
            !check_int(o, K_MAX_SEQ_LEN, c->max_seq_len, 1, LINATTN_MAX_SEQ_LEN, &st) ||
            !check_int(o, K_N_KV_HEADS, c->n_kv_heads, 0, c->n_heads, &st))
            return st;
        if (c->n_kv_heads > 0 && c->n_heads % c->n_kv_heads != 0)
            return bad_value(o, K_N_KV_HEADS,
                             "n_kv_heads (%d) must divide n_heads (%d): each k/v head serves "
                             "a group of query heads", c->n_kv_heads, c->n_heads);
        if (c->d_model % c->n_heads != 0)
            return bad_value(o, K_N_HEADS,
                             "d_model (%d) must be divisible by n_heads (%d)", c->d_model,
                             c->n_heads);
        if ((unsigned)c->attention > LINATTN_ATTN_HYBRID)
            return bad_value(o, K_ATTENTION, "unknown value %d", (int)c->attention);
        if ((unsigned)c->norm > LINATTN_NORM_RMSNORM)
            return bad_value(o, K_NORM, "unknown value %d", (int)c->norm);
        if ((unsigned)c->norm_position > LINATTN_NORM_POST)
            return bad_value(o, K_NORM_POSITION, "unknown value %d", (int)c->norm_position);
        if ((unsigned)c->ffn > LINATTN_FFN_SWIGLU)
            return bad_value(o, K_FFN, "unknown value %d", (int)c->ffn);
        if ((unsigned)c->positions > LINATTN_POS_ROPE)
            return bad_value(o, K_POSITIONS, "unknown value %d", (int)c->positions);
        if (c->positions == LINATTN_POS_ROPE && (c->d_model / c->n_heads) % 2 != 0)
            return bad_value(o, K_POSITIONS,
                             "positions = rope needs an even head size (d_model %d / n_heads %d "
                             "= %d): it turns pairs of dimensions", c->d_model, c->n_heads,
                             c->d_model / c->n_heads);
        if (!(isfinite(c->rope_theta) && c->rope_theta > 0.0f))
            return bad_value(o, K_ROPE_THETA, "expected a finite number > 0, got %g",
                             (double)c->rope_theta);
        if ((unsigned)c->rope_pairing > LINATTN_ROPE_HALF)
            return bad_value(o, K_ROPE_PAIRING, "unknown value %d", (int)c->rope_pairing);
        if (c->positions != LINATTN_POS_ROPE && o->key_line) {
            if (o->key_line[K_ROPE_THETA])
                return bad_value(o, K_ROPE_THETA, "needs positions = rope");
            if (o->key_line[K_ROPE_PAIRING])
                return bad_value(o, K_ROPE_PAIRING, "needs positions = rope");
        }
        if (c->bias != 0 && c->bias != 1)
            return bad_value(o, K_BIAS, "expected 0 or 1, got %d", c->bias);
        if (c->positions == LINATTN_POS_SINCOS && c->d_model % 2 != 0)
            return bad_value(o, K_D_MODEL, "d_model (%d) must be even with positions = sincos",
                             c->d_model);
        if (!check_nonneg(o, K_EPS, c->eps, &st) || !check_nonneg(o, K_NORM_EPS, c->norm_eps, &st))
            return st;
        if (c->tie_embeddings != 0 && c->tie_embeddings != 1)
            return bad_value(o, K_TIE_EMBEDDINGS, "expected 0 or 1, got %d", c->tie_embeddings);
        if (!check_decay(o, K_DECAY, &c->decay, c->n_heads, &st))
            return st;
        if (c->decay.kind != LINATTN_DECAY_NONE && c->attention == LINATTN_ATTN_SOFTMAX)
            return bad_value(o, K_DECAY, "decay needs attention = linear or hybrid");
        if (c->kv_cache == LINATTN_KV_F16 && c->attention == LINATTN_ATTN_LINEAR)
            return bad_value(o, K_KV_CACHE,
                             "f16 needs attention = softmax or hybrid (a linear model has no "
                             "KV cache)");
        if (!check_int(o, K_WINDOW, c->window, 0, LINATTN_MAX_SEQ_LEN, &st) ||
            !check_int(o, K_FEATURE_DIM, c->feature_dim, 0, LINATTN_MAX_D_MODEL, &st))
            return st;
        if (c->window > 0 && c->attention == LINATTN_ATTN_LINEAR)
            return bad_value(o, K_WINDOW,
                             "needs attention = softmax or hybrid (linear attention has no "
                             "window: every key is in its sums)");
        if (c->attention == LINATTN_ATTN_HYBRID && c->window < 1)
            return bad_value(o, K_WINDOW,
                             "attention = hybrid needs window >= 1 (the softmax part's width), "
                             "got %d", c->window);
        if (c->feature_dim > 0 && c->attention != LINATTN_ATTN_HYBRID)
            return bad_value(o, K_FEATURE_DIM, "needs attention = hybrid");
        if (c->positions == LINATTN_POS_LEARNED && c->window > 0)
            return bad_value(o, K_WINDOW,
                             "a window streams past max_seq_len, which learned positions "
                             "cannot: use rope, sincos or none");
        if (!check_string(o, K_TOKENIZER, c->tokenizer, sizeof c->tokenizer, &st))
            return st;
        const char *prefix = tokenizer_prefix(c->tokenizer);
        if (c->tokenizer[0] && strcmp(c->tokenizer, "bytes") != 0 &&
            !(prefix && c->tokenizer[strlen(prefix)]))
            return bad_value(o, K_TOKENIZER, "expected " TOKENIZER_KINDS ", got '%.60s'",
                             c->tokenizer);
    }

    if (!check_int(o, K_THREADS, c->threads, 0, LINATTN_MAX_THREADS, &st) ||
        !check_int(o, K_BATCH, c->batch, 1, LINATTN_MAX_BATCH, &st))
        return st;
    if ((unsigned)c->isa >= LINATTN_ISA_COUNT)
        return bad_value(o, K_ISA, "unknown ISA value %d", (int)c->isa);
    if ((unsigned)c->weights_dtype > LINATTN_WEIGHTS_F32)
        return bad_value(o, K_WEIGHTS_DTYPE, "unknown value %d", (int)c->weights_dtype);
    if ((unsigned)c->kv_cache > LINATTN_KV_F16)
        return bad_value(o, K_KV_CACHE, "unknown value %d", (int)c->kv_cache);
    return LINATTN_OK;
}

linattn_status linattn_config_validate(const linattn_config *c)
{
    if (!c)
        return linattn_err(LINATTN_ERR_INVALID, "config: NULL");
    if (c->struct_size != sizeof *c)
        return linattn_err(LINATTN_ERR_INVALID,
                           "config: struct_size is %u, this library's linattn_config has %zu "
                           "bytes (call linattn_config_defaults first; rebuild against this "
                           "linattn.h)",
                           (unsigned)c->struct_size, sizeof *c);
    if (!terminated(c->path, sizeof c->path))
        return linattn_err(LINATTN_ERR_INVALID, "config: path not NUL-terminated");
    struct linattn_source_keys o = {c->path, NULL, c, 0};
    return validate(c, &o);
}

linattn_status linattn_decay_values(const linattn_decay *d, int heads, float *out, int *any)
{
    if (any)
        *any = 0;
    if (!d || !out || heads <= 0)
        return linattn_err(LINATTN_ERR_INVALID, "decay: NULL argument or %d heads", heads);
    if (d->kind == LINATTN_DECAY_LIST && d->n != heads)
        return linattn_err(LINATTN_ERR_INVALID,
                           "decay: %d values for %d heads: give one per head", d->n, heads);
    for (int h = 0; h < heads; h++) {
        float g = 1.0f;
        if (d->kind == LINATTN_DECAY_RETNET)
            g = (float)(1.0 - ldexp(1.0, -5 - h));
        else if (d->kind == LINATTN_DECAY_LIST)
            g = d->values[h];
        if (!(g > 0.0f && g <= 1.0f))
            return linattn_err(LINATTN_ERR_INVALID, "decay: value %d (%g) is outside (0, 1]", h,
                               (double)g);
        out[h] = g;
        if (any && g != 1.0f)
            *any = 1;
    }
    return LINATTN_OK;
}

/* ------------------------------------------------------------------------ */
/* What a weights source is told of the config (source.h)                    */
/* ------------------------------------------------------------------------ */

static int key_named(const char *name)
{
    for (int k = 0; k < N_KEYS; k++)
        if (strcmp(keys[k].name, name) == 0)
            return k;
    return -1;
}

int linattn_source_from_file(const linattn_source_keys *o)
{
    return o->key_line != NULL;
}

int linattn_source_given(const linattn_source_keys *o, const char *key)
{
    int k = key_named(key);
    if (k < 0)
        return 0;
    if (o->key_line)
        return o->key_line[k] != 0;
    const char *field = (const char *)o->c + keys[k].offset;
    switch (keys[k].type) {
    case T_INT:
    case T_BOOL:
    case T_ENUM: {
        int v;
        memcpy(&v, field, sizeof v);
        return v != 0;
    }
    case T_FLOAT: {
        float v;
        memcpy(&v, field, sizeof v);
        return v != 0.0f;
    }
    case T_STRING:
    case T_PATH:
    case T_WEIGHTS:
    case T_TOKENIZER:
        return field[0] != '\0';
    default:
        return 0;
    }
}

linattn_status linattn_source_error(const linattn_source_keys *o, linattn_status st,
                                    const char *key, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (o->alone)
        return linattn_err(st, "%s", why); /* the readers' messages name the file */
    int k = key_named(key);
    return report(st, o->path, k >= 0 && o->key_line ? o->key_line[k] : 0,
                  k >= 0 ? section_names[keys[k].section] : "model", key, "%s", why);
}

const char *linattn_source_value_name(const char *key, int value)
{
    int k = key_named(key);
    if (k < 0)
        return "?";
    if (keys[k].type == T_BOOL)
        return value ? "true" : "false";
    if (keys[k].type != T_ENUM || value < 0)
        return "?";
    for (int i = 0; keys[k].choices[i]; i++)
        if (i == value)
            return keys[k].choices[i];
    return "?";
}

/* The weights source fills in what its files say (source.h). */
static linattn_status complete(linattn_config *c, const linattn_source_keys *o)
{
    const char *arg;
    const linattn_source *src = linattn_source_of(c->weights, &arg);
    return src->complete ? src->complete(c, arg, o) : LINATTN_OK;
}

linattn_status linattn_config_from_model(const char *path, linattn_config *c)
{
    if (!path || !c)
        return linattn_err(LINATTN_ERR_INVALID, "config_from_model: NULL argument");
    if (strlen(path) >= sizeof c->path)
        return linattn_err(LINATTN_ERR_INVALID, "%.200s...: path too long (at most %zu bytes)",
                           path, sizeof c->path - 1);
    char arg[sizeof c->weights];
    const linattn_source *src = linattn_source_detect(path, arg, sizeof arg);
    if (!src)
        return linattn_err(LINATTN_ERR_INVALID,
                           "%s: not a model file or folder linattn reads (a GGUF file, a "
                           "llama2.c checkpoint, a Hugging Face folder with config.json, or a "
                           "file in one)", path);
    if (!src->complete)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: a %s file holds no model shape: give the Hugging Face folder "
                           "with its config.json, or a config with weights = %s",
                           path, src->name, path);
    linattn_config *t = mem_alloc(sizeof *t);
    if (!t)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    linattn_config_defaults(t);
    strcpy(t->path, path);
    if ((size_t)snprintf(t->weights, sizeof t->weights, "%s%s", src->prefix, arg) >=
        sizeof t->weights) {
        mem_free(t);
        return linattn_err(LINATTN_ERR_INVALID, "%s: path too long", path);
    }
    /* as a config file that gives weights alone: every other key is the
     * source's, from its files (shape, architecture, attention, tokenizer) */
    int lines[N_KEYS] = {0};
    struct linattn_source_keys o = {path, lines, t, 1};
    linattn_status st = complete(t, &o);
    if (st == LINATTN_OK) {
        o.key_line = NULL; /* validate without line numbers: the model's file has none */
        st = validate(t, &o);
    }
    if (st == LINATTN_OK)
        *c = *t;
    mem_free(t);
    return st;
}

linattn_status linattn_config_complete(linattn_config *c)
{
    if (!linattn_source_of(c->weights, NULL)->complete)
        return LINATTN_OK;
    struct linattn_source_keys o = {c->path, NULL, c, 0};
    linattn_status st = complete(c, &o);
    return st != LINATTN_OK ? st : validate(c, &o);
}

/* ------------------------------------------------------------------------ */
/* Parsing                                                                   */
/* ------------------------------------------------------------------------ */

struct parse {
    linattn_config *c;
    const char *path;         /* as given */
    size_t dir_len;           /* length of path's folder prefix, '/' included; 0: none */
    char *text;               /* the file, NUL-terminated, cut into lines in place */
    size_t len, pos;
    int lineno;               /* of the line last handed to inih */
    const char *section;      /* the current section's name, NULL before the first */
    int section_line[N_SECTIONS]; /* 0: not in the file */
    int key_line[N_KEYS];     /* 0: not in the file */
    linattn_config_key *host; /* the host's keys (their line fields are set here) */
    int n_host;
    const char *host_sections[MAX_HOST_SECTIONS]; /* their sections, each once */
    int host_section_line[MAX_HOST_SECTIONS];
    int n_host_sections;
    int program_section_line[N_PROGRAM_SECTIONS];
    int skipping;             /* in a program section no host claimed: keys are not read */
    const char *long_value;   /* the real value behind LONG_VALUE_MARK, else NULL */
    linattn_status status;    /* the first error */
    const linattn_config *base; /* linattn_config_load_over: the model's config, else NULL */
};

static void syntax_error(struct parse *p, const char *fmt, ...) LINATTN_PRINTF(2, 3);

static void syntax_error(struct parse *p, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    p->status = report(LINATTN_ERR_FORMAT, p->path, p->lineno, NULL, NULL, "%s", why);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Cuts a comment: the whole line when it starts with ';' or '#', else from
 * a ';' or '#' that follows a space or tab. */
static void strip_comment(char *s)
{
    if (!*s)
        return;
    if (*s == ';' || *s == '#') {
        *s = '\0';
        return;
    }
    for (char *c = s + 1; *c; c++)
        if ((*c == ';' || *c == '#') && (c[-1] == ' ' || c[-1] == '\t')) {
            *c = '\0';
            return;
        }
}

/* Checks a "[name]" line; returns the line inih should see, or NULL. */
static char *section_line(struct parse *p, char *line)
{
    char *close = strchr(line, ']');
    if (!close) {
        syntax_error(p, "section header without ']': '%.60s'", line);
        return NULL;
    }
    if (close[1]) {
        syntax_error(p, "unexpected text after ']': '%.60s'", close + 1);
        return NULL;
    }
    *close = '\0';
    char *name = trim(line + 1);
    int *seen = NULL;
    p->skipping = 0;
    for (int s = 0; s < N_SECTIONS && !seen; s++)
        if (strcmp(name, section_names[s]) == 0) {
            seen = &p->section_line[s];
            p->section = section_names[s];
        }
    for (int s = 0; s < p->n_host_sections && !seen; s++)
        if (strcmp(name, p->host_sections[s]) == 0) {
            seen = &p->host_section_line[s];
            p->section = p->host_sections[s];
        }
    for (int s = 0; s < N_PROGRAM_SECTIONS && !seen; s++)
        if (strcmp(name, program_sections[s]) == 0) {
            seen = &p->program_section_line[s];
            p->section = program_sections[s];
            p->skipping = 1;
        }
    if (!seen) {
        char known[256] = "[model], [runtime]";
        for (int s = 0; s < p->n_host_sections; s++) {
            size_t n = strlen(known);
            snprintf(known + n, sizeof known - n, ", [%s]", p->host_sections[s]);
        }
        syntax_error(p, "unknown section [%.60s] (expected %s)", name, known);
        return NULL;
    }
    if (*seen) {
        syntax_error(p, "section [%s] appears twice (first at line %d)", name, *seen);
        return NULL;
    }
    *seen = p->lineno;
    /* "[ model ]" reaches inih as "[model]". */
    name[-1] = '[';
    name[strlen(name)] = ']';
    return name - 1;
}

/* inih's fgets-like reader: hands inih the next line, cleaned (see top). */
static char *read_line(char *buf, int num, void *user)
{
    struct parse *p = user;
    if (p->status != LINATTN_OK || p->pos >= p->len)
        return NULL;
    if (num < 16) {
        syntax_error(p, "inih's line buffer is too small (%d bytes)", num);
        return NULL;
    }
    char *line = p->text + p->pos;
    char *nl = memchr(line, '\n', p->len - p->pos);
    if (nl) {
        *nl = '\0';
        p->pos = (size_t)(nl - p->text) + 1;
    } else {
        p->pos = p->len;
    }
    p->lineno++;
    p->long_value = NULL;

    /* Left-trimmed, so inih never sees a continuation line. */
    line = trim(line);
    strip_comment(line);
    line = trim(line);

    if (line[0] == '[') {
        line = section_line(p, line);
        if (!line)
            return NULL;
    } else if (line[0]) {
        size_t sep = strcspn(line, "=:");
        if (!line[sep]) {
            syntax_error(p, "expected 'key = value' or '[section]', got '%.60s'", line);
            return NULL;
        }
        if (sep == 0) {
            syntax_error(p, "no key before '%c'", line[0]);
            return NULL;
        }
        if (strlen(line) >= (size_t)num) {
            /* Too long for inih's buffer: inih gets "name=MARK". */
            line[sep] = '\0';
            p->long_value = trim(line + sep + 1);
            char *name = trim(line);
            if (strlen(name) + sizeof LONG_VALUE_MARK + 1 > (size_t)num) {
                syntax_error(p, "key name too long: '%.40s...'", name);
                return NULL;
            }
            snprintf(buf, (size_t)num, "%s=%s", name, LONG_VALUE_MARK);
            return buf;
        }
    }
    snprintf(buf, (size_t)num, "%s", line);
    return buf;
}

/* Parses a whole decimal int (sign allowed, no junk). */
static int parse_int(const char *s, int *out)
{
    if (!s[0])
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < INT_MIN || v > INT_MAX || isspace((unsigned char)s[0]))
        return 0;
    *out = (int)v;
    return 1;
}

/* Parses a whole finite decimal number that fits a float. */
static const char *parse_float(const char *s, float *out)
{
    if (!s[0] || strspn(s, "0123456789+-.eE") != strlen(s))
        return "expected a decimal number";
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || end == s)
        return "expected a decimal number";
    if (!isfinite(v) || fabs(v) > FLT_MAX || (v != 0 && fabs(v) < FLT_TRUE_MIN))
        return "number out of range for a float";
    *out = (float)v;
    return NULL;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "1"};
    static const char *const no[] = {"false", "no", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
            *out = strcasecmp(s, yes[i]) == 0;
            return 1;
        }
    }
    return 0;
}

static int choice_index(const char *s, const char *const *choices)
{
    for (int i = 0; choices[i]; i++)
        if (strcasecmp(s, choices[i]) == 0)
            return i;
    return -1;
}

/* "a, b or c" */
static void list_choices(const char *const *choices, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; choices[i]; i++) {
        const char *sep = i == 0 ? "" : choices[i + 1] ? ", " : " or ";
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, "%s%s", sep, choices[i]);
    }
}

/* A comma-separated list of at most cap ints. */
static int parse_ints(const char *s, int *values, size_t cap, int *n)
{
    *n = 0;
    char item[32];
    for (;;) {
        size_t len = strcspn(s, ",");
        if ((size_t)*n == cap || len >= sizeof item)
            return 0;
        memcpy(item, s, len);
        item[len] = '\0';
        if (!parse_int(trim(item), &values[*n]))
            return 0;
        (*n)++;
        if (!s[len])
            return 1;
        s += len + 1;
    }
}

/* "none", "retnet" or a comma-separated list of numbers in (0, 1]; NULL
 * or why not. */
static const char *parse_decay(const char *s, linattn_decay *d)
{
    if (!s)
        return "no text";
    memset(d, 0, sizeof *d);
    if (strcasecmp(s, "none") == 0)
        return NULL;
    if (strcasecmp(s, "retnet") == 0) {
        d->kind = LINATTN_DECAY_RETNET;
        return NULL;
    }
    d->kind = LINATTN_DECAY_LIST;
    char item[64];
    for (;;) {
        size_t len = strcspn(s, ",");
        if (d->n == LINATTN_MAX_DECAYS)
            return "too many values (at most " LINATTN_STR(LINATTN_MAX_DECAYS) ")";
        if (len >= sizeof item)
            return "a value is too long";
        memcpy(item, s, len);
        item[len] = '\0';
        float g;
        if (parse_float(trim(item), &g))
            return "expected none, retnet or a comma-separated list of numbers in (0, 1]";
        if (!(g > 0.0f && g <= 1.0f))
            return "every value must be in (0, 1] (0 would forget everything, above 1 grows "
                   "without bound)";
        d->values[d->n++] = g;
        if (!s[len])
            return NULL;
        s += len + 1;
    }
}

linattn_status linattn_decay_parse(const char *text, linattn_decay *out)
{
    if (!out)
        return linattn_err(LINATTN_ERR_INVALID, "decay: out is NULL");
    linattn_decay d;
    const char *why = parse_decay(text, &d);
    if (why)
        return linattn_err(LINATTN_ERR_INVALID, "decay: %s, got '%.60s'", why, text ? text : "");
    *out = d;
    return LINATTN_OK;
}

/* Records an error about key k on the current line; returns 0. */
/* One key being set: where, what type, into what. */
struct slot {
    const char *section, *name;
    enum key_type type;
    void *field;
    size_t size;                 /* char[] bytes; T_INTS capacity */
    const char *const *choices;  /* T_ENUM */
    int *count;                  /* T_INTS */
};

static int bad_key(struct parse *p, const struct slot *k, linattn_status st, const char *fmt,
                   ...) LINATTN_PRINTF(4, 5);

static int bad_key(struct parse *p, const struct slot *k, linattn_status st, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    p->status = report(st, p->path, p->lineno, k->section, k->name, "%s", why);
    return 0;
}

/* Copies prefix and value, the value joined to the config's folder when
 * relative. */
static int set_prefixed_path(struct parse *p, const struct slot *k, const char *prefix,
                             const char *value, char *field, size_t size)
{
    if (!value[0])
        return bad_key(p, k, LINATTN_ERR_INVALID, "empty path");
    size_t pre = strlen(prefix), dir = value[0] == '/' ? 0 : p->dir_len;
    if (pre + dir + strlen(value) >= size)
        return bad_key(p, k, LINATTN_ERR_INVALID, "path too long (at most %zu bytes)",
                       size - 1 - pre);
    memcpy(field, prefix, pre);
    memcpy(field + pre, p->path, dir);
    strcpy(field + pre + dir, value);
    return 1;
}

static int set_path(struct parse *p, const struct slot *k, const char *value, char *field,
                    size_t size)
{
    return set_prefixed_path(p, k, "", value, field, size);
}

/* Parses value into the slot's field; 0 on error (recorded in p). */
static int set_value(struct parse *p, const struct slot *key, const char *value)
{
    const struct slot *k = key;
    char *field = key->field;
    char names[128];
    const char *why;
    uint64_t u;
    int i;

    switch (key->type) {
    case T_INT:
        if (!parse_int(value, &i))
            return bad_key(p, k, LINATTN_ERR_INVALID, "expected an integer, got '%.60s'", value);
        memcpy(field, &i, sizeof i);
        return 1;
    case T_FLOAT: {
        float f;
        if ((why = parse_float(value, &f)))
            return bad_key(p, k, LINATTN_ERR_INVALID, "%s, got '%.60s'", why, value);
        memcpy(field, &f, sizeof f);
        return 1;
    }
    case T_U64:
        if (!parse_u64(value, &u))
            return bad_key(p, k, LINATTN_ERR_INVALID,
                           "expected an unsigned 64-bit integer, got '%.60s'", value);
        memcpy(field, &u, sizeof u);
        return 1;
    case T_BOOL:
        if (!parse_bool(value, &i))
            return bad_key(p, k, LINATTN_ERR_INVALID, "expected true or false, got '%.60s'",
                           value);
        memcpy(field, &i, sizeof i);
        return 1;
    case T_ENUM:
        i = choice_index(value, key->choices);
        if (i < 0) {
            list_choices(key->choices, names, sizeof names);
            return bad_key(p, k, LINATTN_ERR_INVALID, "expected %s, got '%.60s'", names, value);
        }
        memcpy(field, &i, sizeof i);
        return 1;
    case T_STRING:
        if (strlen(value) >= key->size)
            return bad_key(p, k, LINATTN_ERR_INVALID, "value too long (at most %zu bytes)",
                           key->size - 1);
        strcpy(field, value);
        return 1;
    case T_WEIGHTS: {
        const char *arg;
        const linattn_source *src = linattn_source_of(value, &arg);
        if (src->check_arg && (why = src->check_arg(arg)))
            return bad_key(p, k, LINATTN_ERR_INVALID, "%s, got '%.60s'", why, value);
        if (src->arg_is_path)
            return set_prefixed_path(p, k, src->prefix ? src->prefix : "", arg, field, key->size);
        if (strlen(value) >= key->size)
            return bad_key(p, k, LINATTN_ERR_INVALID, "value too long (at most %zu bytes)",
                           key->size - 1);
        strcpy(field, value);
        return 1;
    }
    case T_PATH:
        return set_path(p, k, value, field, key->size);
    case T_TOKENIZER:
        if (strcasecmp(value, "bytes") == 0) {
            strcpy(field, "bytes");
            return 1;
        }
        if ((why = tokenizer_prefix(value)))
            return set_prefixed_path(p, k, why, value + strlen(why), field, key->size);
        return bad_key(p, k, LINATTN_ERR_INVALID,
                       "expected " TOKENIZER_KINDS " (hf: a folder holding tokenizer.json, or "
                       "the file), got '%.60s'", value);
    case T_DECAY: {
        linattn_decay d;
        if ((why = parse_decay(value, &d)))
            return bad_key(p, k, LINATTN_ERR_INVALID, "%s, got '%.60s'", why, value);
        memcpy(field, &d, sizeof d);
        return 1;
    }
    case T_ISA: {
        linattn_isa isa;
        if (linattn_isa_parse(value, &isa) != LINATTN_OK)
            return bad_key(p, k, LINATTN_ERR_INVALID, "expected %s, got '%.60s'",
                           linattn_isa_choices(), value);
        memcpy(field, &isa, sizeof isa);
        return 1;
    }
    case T_INTS:
        if (!parse_ints(value, (int *)field, key->size, key->count))
            return bad_key(p, k, LINATTN_ERR_INVALID,
                           "expected a comma-separated list of at most %zu integers, got '%.60s'",
                           key->size, value);
        return 1;
    }
    return 0;
}

static struct slot library_slot(struct parse *p, enum key_id k)
{
    struct slot s = {section_names[keys[k].section], keys[k].name, keys[k].type,
                     (char *)p->c + keys[k].offset, keys[k].size, keys[k].choices, NULL};
    return s;
}

static struct slot host_slot(const linattn_config_key *h)
{
    struct slot s = {h->section, h->name, (enum key_type)h->type, h->field, h->size,
                     h->choices, h->count};
    return s;
}

/* inih's handler: one key = value of the current line. */
static int on_pair(void *user, const char *section, const char *name, const char *value)
{
    struct parse *p = user;
    if (p->status != LINATTN_OK)
        return 0;
    if (p->long_value && strcmp(value, LONG_VALUE_MARK) == 0)
        value = p->long_value;
    if (!p->section || strcmp(section, p->section) != 0) {
        p->status = report(LINATTN_ERR_FORMAT, p->path, p->lineno, NULL, name,
                           "key before any [section]");
        return 0;
    }
    if (p->skipping)
        return 1;
    char known[256] = "";
    int *line = NULL;
    struct slot slot;
    for (int k = 0; k < N_KEYS && !line; k++)
        if (strcmp(section_names[keys[k].section], section) == 0) {
            if (strcmp(keys[k].name, name) == 0) {
                line = &p->key_line[k];
                slot = library_slot(p, (enum key_id)k);
            }
            size_t n = strlen(known);
            snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", keys[k].name);
        }
    for (int k = 0; k < p->n_host && !line; k++)
        if (strcmp(p->host[k].section, section) == 0) {
            if (strcmp(p->host[k].name, name) == 0) {
                line = &p->host[k].line;
                slot = host_slot(&p->host[k]);
            }
            size_t n = strlen(known);
            snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", p->host[k].name);
        }
    if (!line) {
        p->status = report(LINATTN_ERR_FORMAT, p->path, p->lineno, section, name,
                           "unknown key (known: %s)", known);
        return 0;
    }
    if (*line) {
        p->status = report(LINATTN_ERR_FORMAT, p->path, p->lineno, section, name,
                           "duplicate key (first set at line %d)", *line);
        return 0;
    }
    *line = p->lineno;
    return set_value(p, &slot, value);
}

/* Reads the whole file into p->text: a regular file of at most
 * MAX_CONFIG_BYTES (never a FIFO or device). */
static linattn_status read_file(struct parse *p)
{
    linattn_status st = safe_read_all(p->path, "a config file", MAX_CONFIG_BYTES, &p->text, &p->len);
    if (st != LINATTN_OK)
        return st;
    char *nul = memchr(p->text, '\0', p->len);
    if (nul) {
        int line = 1;
        for (char *c = p->text; c < nul; c++)
            line += *c == '\n';
        return linattn_err(LINATTN_ERR_FORMAT, "%s:%d: NUL byte; not a text file", p->path, line);
    }
    if (p->len >= 3 && memcmp(p->text, "\xEF\xBB\xBF", 3) == 0)
        p->pos = 3; /* UTF-8 byte order mark */
    return LINATTN_OK;
}

static linattn_status load(struct parse *p)
{
    linattn_status st = read_file(p);
    if (st != LINATTN_OK)
        return st;

    int r = ini_parse_stream(read_line, p, on_pair, p);
    if (p->status != LINATTN_OK)
        return p->status;
    if (r == -2)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", p->path);
    if (r != 0)
        return report(LINATTN_ERR_FORMAT, p->path, r, NULL, NULL, "syntax error");

    linattn_config *c = p->c;
    if (p->base && p->key_line[K_WEIGHTS])
        return report(LINATTN_ERR_INVALID, p->path, p->key_line[K_WEIGHTS], "model", "weights",
                      "the model is given apart from this config (%s): leave weights out",
                      p->base->path[0] ? p->base->path : p->base->weights);
    /* a source that reads the shape from its files needs only weights */
    const int shaped = linattn_source_of(c->weights, NULL)->complete != NULL;
    if (p->section_line[SEC_MODEL] && !p->base)
        for (size_t i = 0; i < sizeof required_model_keys / sizeof required_model_keys[0]; i++) {
            enum key_id k = required_model_keys[i];
            if (!p->key_line[k] && !(shaped && k != K_WEIGHTS))
                return report(LINATTN_ERR_FORMAT, p->path, p->section_line[SEC_MODEL], "model",
                              keys[k].name, "required key missing");
        }
    struct linattn_source_keys o = {p->path, p->key_line, c, 0};
    st = complete(c, &o);
    return st != LINATTN_OK ? st : validate(c, &o);
}

static linattn_status load_keys(const char *path, const linattn_config *base, linattn_config *c,
                                linattn_config_key *host, int n_host)
{
    if (!path || !c || n_host < 0 || (n_host > 0 && !host))
        return linattn_err(LINATTN_ERR_INVALID, "config: NULL argument");
    if (strlen(path) >= sizeof c->path)
        return linattn_err(LINATTN_ERR_INVALID, "config path too long (at most %zu bytes)",
                           sizeof c->path - 1);

    struct parse p = {.path = path, .host = host, .n_host = n_host, .base = base};
    for (int k = 0; k < n_host; k++) {
        linattn_config_key *h = &host[k];
        int bad = !h->section || !h->name || !h->field || (unsigned)h->type > LINATTN_KEY_INTS ||
                  ((h->type == LINATTN_KEY_STRING || h->type == LINATTN_KEY_PATH ||
                    h->type == LINATTN_KEY_INTS) && h->size == 0) ||
                  (h->type == LINATTN_KEY_CHOICE && !h->choices) ||
                  (h->type == LINATTN_KEY_INTS && !h->count);
        for (int s = 0; s < N_SECTIONS && !bad; s++)
            bad = strcmp(h->section, section_names[s]) == 0;
        if (bad)
            return linattn_err(LINATTN_ERR_INVALID,
                               "config: host key %d ([%s] %s) is malformed (no field, a type "
                               "without its size, choices or count, or a library section)",
                               k, h->section ? h->section : "?", h->name ? h->name : "?");
        h->line = 0;
        int s = 0;
        while (s < p.n_host_sections && strcmp(p.host_sections[s], h->section) != 0)
            s++;
        if (s == p.n_host_sections) {
            if (s == MAX_HOST_SECTIONS)
                return linattn_err(LINATTN_ERR_INVALID, "config: more than %d host sections",
                                   MAX_HOST_SECTIONS);
            p.host_sections[p.n_host_sections++] = h->section;
        }
    }
    p.c = mem_alloc(sizeof *p.c);
    if (!p.c)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    if (base)
        *p.c = *base; /* every key the file leaves out is the model's */
    else
        linattn_config_defaults(p.c);
    strcpy(p.c->path, path);
    const char *slash = strrchr(path, '/');
    p.dir_len = slash ? (size_t)(slash - path) + 1 : 0;

    linattn_status st = load(&p);
    if (st == LINATTN_OK)
        memcpy(c, p.c, sizeof *c);
    mem_free(p.text);
    mem_free(p.c);
    return st;
}

linattn_status linattn_config_load_keys(const char *path, linattn_config *c,
                                        linattn_config_key *host, int n_host)
{
    return load_keys(path, NULL, c, host, n_host);
}

linattn_status linattn_config_load_over(const char *path, const linattn_config *base,
                                        linattn_config *c, linattn_config_key *host, int n_host)
{
    if (!base)
        return linattn_err(LINATTN_ERR_INVALID, "config: NULL base");
    linattn_status st = linattn_config_validate(base);
    if (st != LINATTN_OK)
        return st;
    if (!base->weights[0])
        return linattn_err(LINATTN_ERR_INVALID, "config: the base config has no weights");
    return load_keys(path, base, c, host, n_host);
}

linattn_status linattn_config_load(const char *path, linattn_config *c)
{
    return linattn_config_load_keys(path, c, NULL, 0);
}

linattn_status linattn_config_report(linattn_status status, const char *path, int line,
                                     const char *section, const char *key, const char *fmt, ...)
{
    char why[400] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
    }
    return report(status, path && path[0] ? path : "config", line, section, key, "%s", why);
}
