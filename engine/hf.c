/* hf.c: a Hugging Face Llama folder's config.json read and checked; its tensor names as ours. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "hf.h"
#include "internal.h"
#include "json.h"

#define MAX_CONFIG_JSON_BYTES (16u << 20)

/* A key that is absent or null counts as not given. */
static const cJSON *item(const cJSON *root, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* The integer `key` into *out (dflt when not given; dflt < 0: required),
 * within [lo, hi]. */
static linattn_status get_int(const cJSON *root, const char *path, const char *key, int dflt,
                              int lo, int hi, int *out)
{
    const cJSON *v = item(root, key);
    if (!v) {
        if (dflt < 0)
            return linattn_err(LINATTN_ERR_FORMAT, "%s: no \"%s\" (a Llama config.json has it)",
                               path, key);
        *out = dflt;
        return LINATTN_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d == floor(d) && d >= lo && d <= hi))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: \"%s\" is not an integer in %d..%d", path,
                           key, lo, hi);
    *out = (int)d;
    return LINATTN_OK;
}

/* The number `key` into *out (dflt when not given), > lo (>= lo when
 * closed), and one a float holds: a value that would overflow to inf or
 * underflow to 0 or a subnormal (1e-300, 1e-40) is refused, not rounded, as
 * the model would then compute with another number than the file's.
 * where: the key's object ("" at the top, else "rope_parameters."). */
static linattn_status get_float(const cJSON *root, const char *path, const char *where,
                                const char *key, double dflt, double lo, int closed, float *out)
{
    const cJSON *v = item(root, key);
    if (v && !cJSON_IsNumber(v))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: \"%s%s\" is not a number", path, where, key);
    double d = v ? v->valuedouble : dflt;
    if (!(isfinite(d) && (closed ? d >= lo : d > lo)))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: \"%s%s\" is %g: expected a finite number %s %g",
                           path, where, key, d, closed ? ">=" : ">", lo);
    if (fabs(d) > FLT_MAX)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: \"%s%s\" is %g, too large for a float (at most %g)", path, where,
                           key, d, (double)FLT_MAX);
    if (d != 0.0 && fabs(d) < FLT_MIN)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: \"%s%s\" is %g, too small for a float (it would round to %g; "
                           "the smallest is %g)", path, where, key, d, (double)(float)d,
                           (double)FLT_MIN);
    *out = (float)d;
    return LINATTN_OK;
}

/* A boolean key that must be false when given: the feature is not supported. */
static linattn_status must_be_false(const cJSON *root, const char *path, const char *key,
                                    const char *why)
{
    const cJSON *v = item(root, key);
    if (!v || cJSON_IsFalse(v))
        return LINATTN_OK;
    return linattn_err(LINATTN_ERR_FORMAT, "%s: \"%s\" is %s: %s", path, key,
                       cJSON_IsTrue(v) ? "true" : "not false", why);
}

static linattn_status check_config(const cJSON *root, const char *path, linattn_hf_info *in)
{
    linattn_status st;
    const cJSON *type = item(root, "model_type");
    if (!cJSON_IsString(type))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: no \"model_type\" string (a Llama model has \"llama\")", path);
    /* mistral is llama's architecture with an optional sliding window */
    int mistral = strcmp(type->valuestring, "mistral") == 0;
    if (strcmp(type->valuestring, "llama") != 0 && !mistral)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: model_type '%.60s' is not supported (only llama, and mistral "
                           "without a sliding window)", path, type->valuestring);
    /* mistral's sliding window: token i sees the last sliding_window tokens
     * (null or absent: none) */
    const cJSON *sw = item(root, "sliding_window");
    in->window = 0;
    if (sw && !cJSON_IsNull(sw) &&
        (st = get_int(root, path, "sliding_window", 0, 1, LINATTN_MAX_SEQ_LEN, &in->window)))
        return st;
    const cJSON *act = item(root, "hidden_act");
    if (act && !(cJSON_IsString(act) && (strcmp(act->valuestring, "silu") == 0 ||
                                         strcmp(act->valuestring, "swish") == 0)))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: \"hidden_act\" is '%.60s': only silu (the swiglu FFN) is "
                           "supported", path, cJSON_IsString(act) ? act->valuestring : "?");
    if (item(root, "rope_scaling"))
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: \"rope_scaling\" is set: scaled rotary positions (linear, "
                           "dynamic, yarn, llama3) are not supported", path);
    if ((st = must_be_false(root, path, "attention_bias",
                            "attention projections with biases are not supported")) ||
        (st = must_be_false(root, path, "mlp_bias", "FFN biases are not supported")))
        return st;

    /* required sizes; the others default as transformers' LlamaConfig */
    if ((st = get_int(root, path, "hidden_size", -1, 1, LINATTN_MAX_D_MODEL, &in->d_model)) ||
        (st = get_int(root, path, "num_hidden_layers", -1, 1, LINATTN_MAX_LAYERS,
                      &in->n_layers)) ||
        (st = get_int(root, path, "num_attention_heads", -1, 1, LINATTN_MAX_D_MODEL,
                      &in->n_heads)) ||
        (st = get_int(root, path, "num_key_value_heads", in->n_heads, 1, LINATTN_MAX_D_MODEL,
                      &in->n_kv_heads)) ||
        (st = get_int(root, path, "intermediate_size", -1, 1, LINATTN_MAX_D_FF, &in->d_ff)) ||
        (st = get_int(root, path, "vocab_size", -1, 1, LINATTN_MAX_VOCAB, &in->vocab_size)) ||
        (st = get_int(root, path, "max_position_embeddings", 2048, 1, 2147483647,
                      &in->max_seq_len)) ||
        (st = get_float(root, path, "", "rms_norm_eps", 1e-6, 0.0, 1, &in->norm_eps)) ||
        (st = get_float(root, path, "", "rope_theta", 10000.0, 0.0, 0, &in->rope_theta)))
        return st;
    /* transformers 5 writes rope_theta and the scaling into rope_parameters */
    const cJSON *rope = item(root, "rope_parameters");
    if (rope) {
        const cJSON *kind = item(rope, "rope_type") ? item(rope, "rope_type") : item(rope, "type");
        if (!cJSON_IsObject(rope) ||
            (kind && !(cJSON_IsString(kind) && strcmp(kind->valuestring, "default") == 0)))
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: \"rope_parameters\" is not {\"rope_type\": \"default\", ...}: "
                               "scaled rotary positions are not supported", path);
        if ((st = get_float(rope, path, "rope_parameters.", "rope_theta", in->rope_theta, 0.0, 0,
                            &in->rope_theta)))
            return st;
    }
    const cJSON *tie = item(root, "tie_word_embeddings");
    if (tie && !cJSON_IsBool(tie))
        return linattn_err(LINATTN_ERR_FORMAT, "%s: \"tie_word_embeddings\" is not true or false",
                           path);
    in->tie = tie && cJSON_IsTrue(tie);
    if (in->d_model % in->n_heads != 0 || (in->d_model / in->n_heads) % 2 != 0)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: hidden_size %d is not num_attention_heads %d times an even head "
                           "size", path, in->d_model, in->n_heads);
    int head_dim;
    if ((st = get_int(root, path, "head_dim", in->d_model / in->n_heads, 1, LINATTN_MAX_D_MODEL,
                      &head_dim)))
        return st;
    if (head_dim != in->d_model / in->n_heads)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: \"head_dim\" is %d, but hidden_size %d / num_attention_heads %d "
                           "is %d (a head size of its own is not supported)", path, head_dim,
                           in->d_model, in->n_heads, in->d_model / in->n_heads);
    if (in->n_kv_heads > in->n_heads || in->n_heads % in->n_kv_heads != 0)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: num_key_value_heads %d does not divide num_attention_heads %d",
                           path, in->n_kv_heads, in->n_heads);
    return LINATTN_OK;
}

linattn_status linattn_hf_parse_info(const char *text, size_t len, const char *path,
                                     linattn_hf_info *info)
{
    memset(info, 0, sizeof *info);
    cJSON *root;
    linattn_status st = json_parse_file(path, text, len, 1, &root);
    if (st == LINATTN_OK)
        st = check_config(root, path, info);
    cJSON_Delete(root);
    return st;
}

linattn_status linattn_hf_read_info(const char *dir, linattn_hf_info *info)
{
    memset(info, 0, sizeof *info);
    struct stat sb;
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return linattn_err(LINATTN_ERR_IO, "%s: not a folder (hf:DIR names a Hugging Face model "
                           "folder, which holds config.json)", dir);
    size_t n = strlen(dir);
    char *path = mem_alloc(n + sizeof "/config.json");
    if (!path)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", dir);
    snprintf(path, n + sizeof "/config.json", "%s%sconfig.json", dir,
             n && dir[n - 1] == '/' ? "" : "/");
    char *text = NULL;
    size_t len = 0;
    linattn_status st = safe_read_all(path, "config.json", MAX_CONFIG_JSON_BYTES, &text, &len);
    if (st == LINATTN_OK)
        st = linattn_hf_parse_info(text, len, path, info);
    mem_free(text);
    mem_free(path);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Tensor names                                                              */
/* ------------------------------------------------------------------------ */

/* The tensors of layer N: model.layers.N.<hf> is layers.N.<ours>; an empty
 * ours is a buffer left out. */
static const struct { const char *hf, *ours; } layer_names[] = {
    {"self_attn.q_proj.weight", "attn.q.weight"},
    {"self_attn.k_proj.weight", "attn.k.weight"},
    {"self_attn.v_proj.weight", "attn.v.weight"},
    {"self_attn.o_proj.weight", "attn.o.weight"},
    {"mlp.gate_proj.weight", "ffn.gate.weight"},
    {"mlp.up_proj.weight", "ffn.up.weight"},
    {"mlp.down_proj.weight", "ffn.down.weight"},
    {"input_layernorm.weight", "norm1.weight"},
    {"post_attention_layernorm.weight", "norm2.weight"},
    {"self_attn.rotary_emb.inv_freq", ""},
};
#define N_LAYER_NAMES (sizeof layer_names / sizeof layer_names[0])

static const struct { const char *hf, *ours; } model_names[] = {
    {"model.embed_tokens.weight", "tok_emb.weight"},
    {"model.norm.weight", "norm_f.weight"},
    {"lm_head.weight", "lm_head.weight"},
};
#define N_MODEL_NAMES (sizeof model_names / sizeof model_names[0])

/* A layer number written as Python writes it (no sign, no leading zero),
 * below 10^6; its length, or 0. */
static size_t layer_number(const char *s, int *out)
{
    size_t n = 0;
    int v = 0;
    while (s[n] >= '0' && s[n] <= '9' && n < 7)
        v = v * 10 + (s[n++] - '0');
    if (n == 0 || n == 7 || (s[0] == '0' && n > 1))
        return 0;
    *out = v;
    return n;
}

int linattn_hf_rename(const char *hf, char *out, size_t size)
{
    for (size_t i = 0; i < N_MODEL_NAMES; i++)
        if (strcmp(hf, model_names[i].hf) == 0) {
            snprintf(out, size, "%s", model_names[i].ours);
            return 1;
        }
    static const char layers[] = "model.layers.";
    int layer;
    size_t n;
    if (strncmp(hf, layers, sizeof layers - 1) == 0 &&
        (n = layer_number(hf + sizeof layers - 1, &layer)) > 0 &&
        hf[sizeof layers - 1 + n] == '.') {
        const char *rest = hf + sizeof layers + n;
        for (size_t i = 0; i < N_LAYER_NAMES; i++)
            if (strcmp(rest, layer_names[i].hf) == 0) {
                if (!layer_names[i].ours[0])
                    return 0;
                snprintf(out, size, "layers.%d.%s", layer, layer_names[i].ours);
                return 1;
            }
    }
    snprintf(out, size, "hf:%s", hf);
    return -1;
}

void linattn_hf_name(const char *ours, char *out, size_t size)
{
    for (size_t i = 0; i < N_MODEL_NAMES; i++)
        if (strcmp(ours, model_names[i].ours) == 0) {
            snprintf(out, size, "%s", model_names[i].hf);
            return;
        }
    int layer;
    size_t n;
    if (strncmp(ours, "layers.", 7) == 0 && (n = layer_number(ours + 7, &layer)) > 0 &&
        ours[7 + n] == '.')
        for (size_t i = 0; i < N_LAYER_NAMES; i++)
            if (layer_names[i].ours[0] && strcmp(ours + 8 + n, layer_names[i].ours) == 0) {
                snprintf(out, size, "model.layers.%d.%s", layer, layer_names[i].hf);
                return;
            }
    snprintf(out, size, "%s", ours);
}
