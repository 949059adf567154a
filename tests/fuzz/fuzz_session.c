/* fuzz_session.c: libFuzzer target: the session loader on any bytes; built twice, the second
 * time (FUZZ_FIX_CRC) with the CRC recomputed so that mutations reach the payload checks. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "linattn.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The models the seed corpus was saved from (tests/fuzz/session-*.ini,
 * see tests/fuzz/README.md); linear or softmax by the input's attention
 * field, so both payload layouts are reached. */
static linattn_session *session_for(int softmax)
{
    static linattn_model *m[2];
    static linattn_session *s[2];
    if (!s[softmax]) {
        const char *ini = softmax ? FUZZ_DIR "/session-softmax.ini" : FUZZ_DIR "/session-linear.ini";
        if (linattn_model_load(ini, &m[softmax]) != LINATTN_OK ||
            linattn_session_new(m[softmax], &s[softmax]) != LINATTN_OK)
            abort();
    }
    return s[softmax];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
#ifdef FUZZ_FIX_CRC
    if (size >= 4) {
        uLong crc = crc32(0L, copy, (uInt)(size - 4));
        for (int i = 0; i < 4; i++)
            copy[size - 4 + i] = (uint8_t)(crc >> (8 * i));
    }
#endif
    char path[64];
    int fd = fuzz_as_file(copy, size, path);
    free(copy);
    if (fd < 0)
        return 0;
    int softmax = size > 12 && data[12] == 0; /* the header's attention field */
    linattn_session *s = session_for(softmax);
    unsigned char extra[64];
    size_t got;
    if (linattn_session_load(s, path, extra, sizeof extra, &got) == LINATTN_OK) {
        float logits[256];
        int tok = 1;
        linattn_session_feed(s, &tok, 1, logits); /* the loaded state is usable */
    }
    linattn_session_reset(s);
    close(fd);
    return 0;
}
