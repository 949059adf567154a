/* source_safetensors.c: weights = PATH, a .safetensors file (engine/weights.c reads it). */
#include <stdio.h>
#include <string.h>

#include "source.h"
#include "weights.h"

/* A safetensors file: an 8-byte little-endian header length, then '{'. It
 * holds no shape (no config.json beside it: the Hugging Face source takes
 * that case first), so a model given alone this way is refused by name. */
static int detect(const char *path, char *arg, size_t size)
{
    unsigned char head[9];
    size_t got;
    uint64_t bytes, len = 0;
    if (!linattn_source_head(path, head, sizeof head, &got, &bytes) || got < 9 || head[8] != '{')
        return 0;
    for (int i = 7; i >= 0; i--)
        len = len << 8 | head[i];
    return len >= 2 && len <= bytes - 8 && (size_t)snprintf(arg, size, "%s", path) < size;
}

const linattn_source linattn_source_safetensors = {
    .name = "safetensors",
    .prefix = NULL,
    .arg = "PATH",
    .arg_is_path = 1,
    .open = linattn_weights_open,
    .detect = detect,
};
