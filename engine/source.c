/* source.c: the table of weights sources, and which one a weights value names. */
#include <string.h>

#include "source.h"

/* Prefixed sources first; the plain path (no prefix) takes what is left. */
static const linattn_source *const sources[] = {
    &linattn_source_random,
    &linattn_source_llama2c,
    &linattn_source_hf,
};

const linattn_source *linattn_source_of(const char *weights, const char **arg)
{
    for (size_t i = 0; weights && i < sizeof sources / sizeof sources[0]; i++) {
        size_t n = strlen(sources[i]->prefix);
        if (strncmp(weights, sources[i]->prefix, n) == 0) {
            if (arg)
                *arg = weights + n;
            return sources[i];
        }
    }
    if (arg)
        *arg = weights;
    return &linattn_source_safetensors;
}
