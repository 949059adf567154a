/* fuzz_npy.c: libFuzzer target: the .npy parser on any bytes. */
#include <stddef.h>
#include <stdint.h>

#include "../../engine/cli/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Sums land here, so reading every element is not optimised away. */
volatile float fuzz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    linattn_npy a;
    if (linattn_npy_parse(data, size, "fuzz.npy", &a) == LINATTN_OK) {
        /* touch every element the parser claims */
        for (size_t i = 0; i < a.count; i++)
            fuzz_sink += a.data[i];
        linattn_npy_free(&a);
    }
    return 0;
}
