/* fuzz_safetensors.c: libFuzzer target: the safetensors header and every tensor fetch on any bytes. */
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "../../engine/weights.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Sums land here, so reading every element is not optimised away. */
volatile float fuzz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_as_file(data, size, path);
    if (fd < 0)
        return 0;
    linattn_weights *w;
    if (linattn_weights_open(path, &w) == LINATTN_OK) {
        for (int i = 0; i < linattn_weights_count(w); i++) {
            linattn_tensor_info info;
            linattn_weights_tensor(w, i, &info);
            const float *f;
            /* its own shape: converts the data (F16/BF16) and reads all of it */
            if (linattn_weights_get(w, info.name, info.ndim, info.shape, &f) == LINATTN_OK) {
                for (size_t j = 0; j < info.n_elements; j++)
                    fuzz_sink += f[j];
            }
        }
        linattn_weights_check_all_used(w);
        linattn_weights_metadata(w, "format");
        linattn_weights_close(w);
    }
    close(fd);
    return 0;
}
