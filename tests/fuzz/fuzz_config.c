/* fuzz_config.c: libFuzzer target: the INI config parser and validation on any bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "linattn.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_as_file(data, size, path);
    if (fd < 0)
        return 0;
    linattn_config *c = malloc(sizeof *c);
    if (c && linattn_config_load(path, c) == LINATTN_OK) {
        linattn_model_sizes sizes;
        if (linattn_config_has_model(c))
            linattn_config_sizes(c, &sizes);
        float g[LINATTN_MAX_DECAYS];
        if (c->n_heads > 0 && c->n_heads <= LINATTN_MAX_DECAYS)
            linattn_decay_values(&c->decay, c->n_heads, g, NULL);
    }
    free(c);
    close(fd);
    return 0;
}
