/* source_safetensors.c: weights = PATH, a .safetensors file (engine/weights.c reads it). */
#include "source.h"
#include "weights.h"

const linattn_source linattn_source_safetensors = {
    .name = "safetensors",
    .prefix = NULL,
    .arg = "PATH",
    .arg_is_path = 1,
    .open = linattn_weights_open,
};
