/* fuzz_model_mem.c: libFuzzer target: a whole model from memory (a config, then safetensors
 * bytes with F32, F16, BF16 and int8 tensors) through the public API, then a few tokens fed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linattn.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input: the config's INI text, a NUL, then the weights
 * (linattn_model_from_config_mem); the seeds are made by
 * tests/fuzz/make_model_mem_seeds.py. Both halves mutate, so the checks of
 * every tensor against the config's shape are reached from both sides. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    if (!nul)
        return 0;
    size_t ini_len = (size_t)(nul - data);
    char path[64];
    int fd = fuzz_as_file(data, ini_len, path);
    if (fd < 0)
        return 0;
    linattn_config *c = malloc(sizeof *c);
    linattn_model *m = NULL;
    /* small shapes only: a config may ask for gigabytes that the weights
     * then fail to provide; that is the config fuzzer's ground, not this one */
    if (c && linattn_config_load(path, c) == LINATTN_OK && linattn_config_has_model(c) &&
        c->d_model <= 128 && c->d_ff <= 512 && c->n_layers <= 4 && c->vocab_size <= 1024 &&
        c->max_seq_len <= 256) {
        /* a copy exactly as long as the weights: ASan sees any read past them,
         * and the tensors' alignment is the buffer's (F32 used in place) */
        size_t wsize = size - ini_len - 1;
        uint8_t *w = malloc(wsize ? wsize : 1);
        if (w) {
            memcpy(w, nul + 1, wsize);
            if (linattn_model_from_config_mem(c, w, wsize, &m) == LINATTN_OK) {
                linattn_session *s;
                int vocab = linattn_model_config(m)->vocab_size;
                float *logits = malloc((size_t)vocab * sizeof *logits);
                if (logits && linattn_session_new(m, &s) == LINATTN_OK) {
                    /* a prefill (the packed kernels) then one decode step (gemv) */
                    int toks[5] = {0, 1 % vocab, 2 % vocab, 3 % vocab, (vocab - 1) % vocab};
                    if (linattn_session_feed(s, toks, 5, logits) == LINATTN_OK)
                        linattn_session_feed(s, toks + 1, 1, logits);
                    linattn_session_free(s);
                }
                free(logits);
                linattn_model_free(m);
            }
            free(w);
        }
    }
    free(c);
    close(fd);
    return 0;
}
