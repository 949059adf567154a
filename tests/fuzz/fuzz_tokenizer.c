/* fuzz_tokenizer.c: libFuzzer target: the llama2.c tokenizer.bin and Hugging Face tokenizer.json readers (Split patterns included: PCRE2 compiles what the file says) on any bytes, then encoding and decoding with what loads. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "linattn.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Encodes text, then decodes every token after the one before it. */
static void exercise(const linattn_tokenizer *t, const char *text, size_t len)
{
    int ids[2 * 4096 + 2];
    size_t n = 0;
    if (len > 4096)
        len = 4096;
    if (linattn_tokenizer_encode(t, text, len, 1, ids, sizeof ids / sizeof ids[0], &n) !=
        LINATTN_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        const char *p;
        size_t l;
        if (linattn_tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], &p, &l) == LINATTN_OK && l)
            (void)p[l - 1]; /* the bytes are readable */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], spec[80];
    int fd = fuzz_as_file(data, size, path);
    if (fd < 0)
        return 0;
    static const char text[] = "Hello world: ab abc bca \xc3\xa9\xc3\xbc \xe2\x96\x81 <s></s>"
                               "<|endoftext|>\n\t 's 've 123 \x80\xff";
    const char *kinds[] = {"llama2c:", "hf:"};
    for (int k = 0; k < 2; k++) {
        linattn_tokenizer *t = NULL;
        strcpy(spec, kinds[k]);
        strcat(spec, path);
        if (linattn_tokenizer_load(spec, &t) == LINATTN_OK) {
            exercise(t, text, sizeof text - 1);
            exercise(t, (const char *)data, size);
            linattn_tokenizer_free(t);
        }
    }
    close(fd);
    return 0;
}
