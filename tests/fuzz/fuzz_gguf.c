/* fuzz_gguf.c: libFuzzer target: the GGUF reader on any bytes (mapped from a file and from memory), every value, element and tensor byte it hands out, and what is built on it: the model's config, its tensors as fp32 (every block type decoded), its tokenizer. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../../engine/gguf.h"
#include "../../engine/tokenizer.h"
#include "../../engine/weights.h"
#include "linattn.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What is read lands here, so no read is optimised away. */
volatile uint64_t fuzz_sink;

static void read_all(const linattn_gguf *g)
{
    for (size_t i = 0; i < linattn_gguf_n_kv(g); i++) {
        const char *key = linattn_gguf_kv_key(g, i);
        linattn_gguf_type type;
        if (linattn_gguf_type_of(g, key, &type) != LINATTN_OK ||
            type != linattn_gguf_kv_type(g, i))
            __builtin_trap(); /* a key listed must be found, with its type */
        uint32_t u32;
        int64_t i64;
        double f64;
        float f32;
        int b;
        const char *s;
        size_t len;
        if (linattn_gguf_get_u32(g, key, &u32) == LINATTN_OK)
            fuzz_sink += u32;
        if (linattn_gguf_get_int(g, key, &i64) == LINATTN_OK)
            fuzz_sink += (uint64_t)i64;
        if (linattn_gguf_get_f32(g, key, &f32) == LINATTN_OK)
            fuzz_sink += (uint64_t)(f32 == f32);
        if (linattn_gguf_get_f64(g, key, &f64) == LINATTN_OK)
            fuzz_sink += (uint64_t)(f64 == f64);
        if (linattn_gguf_get_bool(g, key, &b) == LINATTN_OK)
            fuzz_sink += (uint64_t)b;
        if (linattn_gguf_get_string(g, key, &s, &len) == LINATTN_OK && len)
            fuzz_sink += (uint8_t)s[0] + (uint8_t)s[len - 1];
        linattn_gguf_array a;
        if (linattn_gguf_get_array(g, key, &a) != LINATTN_OK)
            continue;
        for (uint64_t j = 0; j < a.count; j++) {
            if (linattn_gguf_array_int(&a, j, &i64) == LINATTN_OK)
                fuzz_sink += (uint64_t)i64;
            if (linattn_gguf_array_float(&a, j, &f64) == LINATTN_OK)
                fuzz_sink += (uint64_t)(f64 == f64);
            if (linattn_gguf_array_string(&a, j, &s, &len) == LINATTN_OK && len)
                fuzz_sink += (uint8_t)s[0] + (uint8_t)s[len - 1];
        }
    }
    for (size_t i = 0; i < linattn_gguf_n_tensors(g); i++) {
        linattn_gguf_tensor t, u;
        linattn_gguf_tensor_at(g, i, &t);
        if (linattn_gguf_find_tensor(g, t.name, &u) != LINATTN_OK || u.data != t.data)
            __builtin_trap(); /* a tensor listed must be found by its name */
        const uint8_t *p = t.data;
        if (t.bytes)
            fuzz_sink += p[0] + p[t.bytes - 1];
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    linattn_gguf *g;
    if (linattn_gguf_open_mem(data, size, "fuzz", &g) == LINATTN_OK) {
        read_all(g);
        linattn_gguf_free(g);
    }
    char path[64];
    int fd = fuzz_as_file(data, size, path);
    if (fd < 0)
        return 0;
    if (linattn_gguf_open(path, &g) == LINATTN_OK) {
        read_all(g);
        linattn_gguf_free(g);
    }
    linattn_config c;
    if (linattn_config_from_model(path, &c) == LINATTN_OK)
        fuzz_sink += (uint64_t)c.d_model;
    linattn_weights *w;
    if (linattn_weights_open_gguf(path, &w) == LINATTN_OK) {
        for (int i = 0; i < linattn_weights_count(w); i++) {
            linattn_tensor_info t;
            linattn_weights_tensor(w, i, &t);
            const float *f;
            if (t.n_elements <= (1u << 20) &&
                linattn_weights_get(w, t.name, t.ndim, t.shape, &f) == LINATTN_OK && t.n_elements)
                fuzz_sink += (uint64_t)(f[0] == f[t.n_elements - 1]);
        }
        linattn_weights_close(w);
    }
    linattn_tokenizer *tok;
    if (tok_load_gguf(path, &tok) == LINATTN_OK) {
        int ids[64];
        size_t n;
        if (linattn_tokenizer_encode(tok, "Hello world 42 \xc3\xa9", 15, 1, ids, 64, &n) ==
            LINATTN_OK)
            fuzz_sink += n;
        linattn_tokenizer_free(tok);
    }
    close(fd);
    return 0;
}
