/* fuzz_hf_folder.c: libFuzzer target: a Hugging Face folder's config.json, tokenizer_config.json and shard index together, read as weights = hf:DIR reads them. */
#include <float.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linattn.h"
#include "../../engine/hf.h"
#include "../../engine/internal.h"
#include "../../engine/tokenizer.h"
#include "../../engine/weights.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input is the three files one after the other, each ended by this
 * line; a file the input does not reach is absent (each is optional to
 * some reader, and "absent" is a case too):
 *   config.json \n--\n tokenizer_config.json \n--\n model.safetensors.index.json */
#define SEP "\n--\n"
static const char *const names[3] = {"config.json", "tokenizer_config.json",
                                     "model.safetensors.index.json"};

/* A fixed tokenizer.json (sentencepiece BPE, <s> and </s> named) and one
 * shard the index may name: what the fuzzed files refer to. */
static const char tokenizer_json[] =
    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
    " {\"id\": 1, \"content\": \"<s>\", \"special\": true},"
    " {\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
    " \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\","
    " \"prepend_scheme\": \"first\", \"split\": false},"
    " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"byte_fallback\": true,"
    " \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"a\": 3, \"b\": 4, \"ab\": 5},"
    " \"merges\": [\"a b\"]}}";
static const char shard_name[] = "model-00001-of-00001.safetensors";
static const char shard_header[] =
    "{\"model.embed_tokens.weight\": {\"dtype\": \"F32\", \"shape\": [2, 2], "
    "\"data_offsets\": [0, 16]}, \"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [2], "
    "\"data_offsets\": [16, 24]}}";

static char dir[64];

static void write_file(const char *name, const void *p, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort(); /* the fuzzer's own folder: nothing to test without it */
    if (n && fwrite(p, 1, n, f) != n)
        abort();
    fclose(f);
}

static void remove_dir(void)
{
    char path[128];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s", dir, shard_name);
    unlink(path);
    rmdir(dir);
}

/* The folder, in memory where the system has /dev/shm. */
static void make_dir(void)
{
    snprintf(dir, sizeof dir, "%s", access("/dev/shm", W_OK) == 0 ? "/dev/shm/fuzz-hf-XXXXXX"
                                                                   : "/tmp/fuzz-hf-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    atexit(remove_dir);
    write_file("tokenizer.json", tokenizer_json, sizeof tokenizer_json - 1);
    uint8_t shard[8 + sizeof shard_header - 1 + 24] = {0};
    uint64_t n = sizeof shard_header - 1;
    for (int i = 0; i < 8; i++)
        shard[i] = (uint8_t)(n >> (8 * i));
    memcpy(shard + 8, shard_header, (size_t)n);
    write_file(shard_name, shard, sizeof shard);
}

static const uint8_t *find(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, s, k) == 0)
            return p + i;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        make_dir();
    const uint8_t *p = data, *end = data + size;
    for (int i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
        if (!p)
            continue;
        const uint8_t *stop = find(p, (size_t)(end - p), SEP);
        write_file(names[i], p, (size_t)((stop ? stop : end) - p));
        p = stop ? stop + strlen(SEP) : NULL;
    }

    /* config.json alone, then completed into a config as hf:DIR does */
    linattn_hf_info info;
    if (linattn_hf_read_info(dir, &info) == LINATTN_OK &&
        (info.d_model % info.n_heads != 0 || info.n_heads % info.n_kv_heads != 0 ||
         !(info.rope_theta >= FLT_MIN && info.rope_theta <= FLT_MAX) ||
         !(info.norm_eps == 0.0f || (info.norm_eps >= FLT_MIN && info.norm_eps <= FLT_MAX))))
        abort(); /* accepted, yet not what the checks promise */
    linattn_config c;
    linattn_config_defaults(&c);
    snprintf(c.weights, sizeof c.weights, "hf:%s", dir);
    c.attention = LINATTN_ATTN_SOFTMAX;
    if (linattn_config_complete(&c) == LINATTN_OK && !(c.rope_theta >= FLT_MIN))
        abort();

    /* the shard index (the one shard it may name is there) */
    linattn_weights *w = NULL;
    if (linattn_weights_open_hf(dir, &w) == LINATTN_OK)
        linattn_weights_close(w);

    /* the tokenizer beside them: bos/eos from tokenizer_config.json, else config.json */
    char tok[128];
    snprintf(tok, sizeof tok, "%s/tokenizer.json", dir);
    linattn_tokenizer *t = NULL;
    if (tok_load_hf(tok, tokenizer_json, sizeof tokenizer_json - 1, dir, &t) == LINATTN_OK) {
        int bos = linattn_tokenizer_bos(t), eos = linattn_tokenizer_eos(t);
        if (bos < -1 || bos >= 6 || eos < -1 || eos >= 6)
            abort(); /* bos/eos must be tokens of the vocabulary, or none */
        linattn_tokenizer_free(t);
    }
    return 0;
}
