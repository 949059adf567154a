/* fuzz_llama2c.c: libFuzzer target: a whole llama2.c load (checkpoint and tokenizer.bin, through the config path `weights = llama2c:` takes), then a few tokens through the model. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linattn.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input (tests/fuzz/mk_llama2c_seed.py writes the seeds): a u32 (LE)
 * whose low 31 bits are the checkpoint's length and whose top bit picks
 * softmax over linear attention, the checkpoint, then the tokenizer.bin. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t head = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                    (uint32_t)data[3] << 24;
    size_t ck = head & 0x7fffffffu;
    int softmax = (int)(head >> 31);
    data += 4;
    size -= 4;
    if (ck > size)
        ck = size;
    char ck_path[64], tok_path[64], ini_path[64], ini[256];
    int fds[3] = {-1, -1, -1};
    fds[0] = fuzz_as_file(data, ck, ck_path);
    fds[1] = fuzz_as_file(data + ck, size - ck, tok_path);
    if (fds[0] >= 0 && fds[1] >= 0) {
        int n = snprintf(ini, sizeof ini,
                         "[model]\nweights = llama2c:%s\ntokenizer = llama2c:%s\nattention = %s\n",
                         ck_path, tok_path, softmax ? "softmax" : "linear");
        fds[2] = fuzz_as_file((const uint8_t *)ini, (size_t)n, ini_path);
    }
    linattn_model *m = NULL;
    if (fds[2] >= 0 && linattn_model_load(ini_path, &m) == LINATTN_OK) {
        const linattn_tokenizer *t = linattn_model_tokenizer(m);
        int vocab = linattn_model_config(m)->vocab_size;
        float *logits = malloc((size_t)vocab * sizeof *logits);
        linattn_session *s = NULL;
        int ids[64];
        size_t k = 0;
        static const char text[] = "Hello world \xc3\xa9\n\x80";
        if (logits && linattn_session_new(m, &s) == LINATTN_OK &&
            linattn_tokenizer_encode(t, text, sizeof text - 1, 1, ids, 64, &k) == LINATTN_OK &&
            k > 0) {
            if (k > 8)
                k = 8;
            if (linattn_session_feed(s, ids, (int)k, logits) == LINATTN_OK)
                for (size_t i = 0; i < k; i++) {
                    const char *p;
                    size_t l;
                    if (linattn_tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], &p, &l) ==
                            LINATTN_OK && l)
                        (void)p[l - 1]; /* the bytes are readable */
                }
        }
        linattn_session_free(s);
        free(logits);
        linattn_model_free(m);
    }
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return 0;
}
