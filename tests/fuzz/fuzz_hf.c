/* fuzz_hf.c: libFuzzer target: a Hugging Face config.json's reader and the tensor-name mapping on any bytes. */
#include <float.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linattn.h"
#include "../../engine/hf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    linattn_hf_info info;
    if (linattn_hf_parse_info((const char *)data, size, "config.json", &info) == LINATTN_OK &&
        (info.d_model % info.n_heads != 0 || info.n_heads % info.n_kv_heads != 0 ||
         !(info.rope_theta >= FLT_MIN && info.rope_theta <= FLT_MAX) ||
         !(info.norm_eps == 0.0f || (info.norm_eps >= FLT_MIN && info.norm_eps <= FLT_MAX))))
        abort(); /* accepted, yet not what the checks promise */
    /* the bytes as a tensor name: renamed, then named back */
    char *name = malloc(size + 1), out[512], back[512];
    if (!name)
        return 0;
    memcpy(name, data, size);
    name[size] = '\0';
    if (linattn_hf_rename(name, out, sizeof out) == 1) {
        linattn_hf_name(out, back, sizeof back);
        if (strcmp(back, name) != 0)
            abort(); /* a renamed tensor's name must map back to itself */
    }
    free(name);
    return 0;
}
