/* source_random.c: weights = random:SEED, weights drawn by the loader from a seed. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "source.h"

int linattn_source_random_seed(const char *arg, uint64_t *seed)
{
    if (!arg || !isdigit((unsigned char)arg[0]))
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || *end)
        return 0;
    *seed = v;
    return 1;
}

static const char *check_seed(const char *arg)
{
    uint64_t seed;
    return linattn_source_random_seed(arg, &seed)
               ? NULL
               : "expected random:SEED with an unsigned integer SEED";
}

const linattn_source linattn_source_random = {
    .name = "random",
    .prefix = "random:",
    .arg = "SEED",
    .arg_is_path = 0,
    .check_arg = check_seed,
    /* no open: the loader draws each tensor as it takes it (model_load.c) */
};
