/* source.c: the table of weights sources, and which one a weights value names. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "source.h"

/* Prefixed sources first; the plain path (no prefix) takes what is left.
 * detect() is asked in this order too, the plain safetensors file last (a
 * Hugging Face folder's model.safetensors is the folder's). */
static const linattn_source *const sources[] = {
    &linattn_source_random,
    &linattn_source_llama2c,
    &linattn_source_hf,
    &linattn_source_gguf,
    &linattn_source_safetensors,
};
#define N_SOURCES (sizeof sources / sizeof sources[0])

const linattn_source *linattn_source_of(const char *weights, const char **arg)
{
    for (size_t i = 0; weights && i < N_SOURCES; i++) {
        if (!sources[i]->prefix)
            continue;
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

const linattn_source *linattn_source_detect(const char *path, char *arg, size_t size)
{
    for (size_t i = 0; i < N_SOURCES; i++)
        if (sources[i]->detect && sources[i]->detect(path, arg, size))
            return sources[i];
    return NULL;
}

int linattn_source_head(const char *path, unsigned char *buf, size_t n, size_t *got,
                        uint64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return 0;
    }
    size_t have = 0;
    while (have < n) {
        ssize_t r = read(fd, buf + have, n - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    close(fd);
    *got = have;
    *size = (uint64_t)sb.st_size;
    return 1;
}

linattn_status linattn_source_llama_arch(linattn_config *c, const linattn_source_keys *o,
                                         linattn_rope_pairing pairing, const char *what)
{
    const int file = linattn_source_from_file(o);
    struct { const char *k; int *field; int value; } arch[] = {
        {"norm", (int *)&c->norm, LINATTN_NORM_RMSNORM},
        {"norm_position", (int *)&c->norm_position, LINATTN_NORM_PRE},
        {"ffn", (int *)&c->ffn, LINATTN_FFN_SWIGLU},
        {"positions", (int *)&c->positions, LINATTN_POS_ROPE},
        {"rope_pairing", (int *)&c->rope_pairing, (int)pairing},
        {"bias", &c->bias, 0},
    };
    for (size_t i = 0; i < sizeof arch / sizeof arch[0]; i++) {
        int v = *arch[i].field;
        if (file && linattn_source_given(o, arch[i].k) && v != arch[i].value)
            return linattn_source_error(o, LINATTN_ERR_INVALID, arch[i].k, "%s here, but %s has %s",
                                        linattn_source_value_name(arch[i].k, v), what,
                                        linattn_source_value_name(arch[i].k, arch[i].value));
        *arch[i].field = arch[i].value;
    }
    return LINATTN_OK;
}

int linattn_source_beside(const char *dir, const char *name, const char *prefix, char *out,
                          size_t size)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return 0;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return 0;
    return !out || (size_t)snprintf(out, size, "%s%s", prefix, path) < size;
}
