/* llama2c.c: reads and checks the header of a llama2.c checkpoint (legacy and version 1). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "internal.h"
#include "llama2c.h"

#define MAGIC 0x616b3432u /* "ak42" */

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int32_t get_i32(const unsigned char *p)
{
    uint32_t u = get_u32(p);
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* acc += a * b (all uint64, 0 on overflow). */
static int mul_add(uint64_t *acc, uint64_t a, uint64_t b)
{
    if (a != 0 && b > UINT64_MAX / a)
        return 0;
    if (*acc > UINT64_MAX - a * b)
        return 0;
    *acc += a * b;
    return 1;
}

linattn_status linattn_llama2c_parse(const unsigned char *bytes, size_t avail,
                                     uint64_t file_size, const char *path,
                                     linattn_llama2c_info *info)
{
    memset(info, 0, sizeof *info);
    if (avail >= 8 && get_u32(bytes) == MAGIC) {
        int32_t version = get_i32(bytes + 4);
        if (version != 1)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: llama2.c checkpoint version %d is not supported (version 1, "
                               "fp32, and the legacy format are; version 2 is int8-quantized)",
                               path, (int)version);
        if (avail < LINATTN_LLAMA2C_HEADER_MAX)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: %llu bytes, too short for a llama2.c version 1 header "
                               "(256 bytes)", path, (unsigned long long)file_size);
        info->version = 1;
        info->header_bytes = LINATTN_LLAMA2C_HEADER_MAX;
        bytes += 8;
    } else {
        if (avail < 28)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: %llu bytes, too short for a llama2.c checkpoint header "
                               "(28 bytes)", path, (unsigned long long)file_size);
        info->header_bytes = 28;
    }
    int32_t p[7];
    for (int i = 0; i < 7; i++)
        p[i] = get_i32(bytes + 4 * i);
    info->dim = p[0];
    info->hidden_dim = p[1];
    info->n_layers = p[2];
    info->n_heads = p[3];
    info->n_kv_heads = p[4];
    info->seq_len = p[6];
    if (info->version == 1) {
        unsigned flag = bytes[28];
        if (flag > 1)
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: llama2.c header: shared_classifier flag is %u (0 or 1)", path,
                               flag);
        info->shared = (int)flag;
        info->vocab_size = p[5];
    } else { /* a negative vocabulary size marks an unshared classifier */
        info->shared = p[5] > 0;
        info->vocab_size = p[5] == INT32_MIN ? 0 : p[5] < 0 ? -p[5] : p[5];
    }
    static const char *const names[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                         "n_kv_heads", "vocab_size", "seq_len"};
    const int values[7] = {info->dim, info->hidden_dim, info->n_layers, info->n_heads,
                           info->n_kv_heads, info->vocab_size, info->seq_len};
    const int limits[7] = {LINATTN_MAX_D_MODEL, LINATTN_MAX_D_FF, LINATTN_MAX_LAYERS,
                           LINATTN_MAX_D_MODEL, LINATTN_MAX_D_MODEL, LINATTN_MAX_VOCAB,
                           LINATTN_MAX_SEQ_LEN};
    for (int i = 0; i < 7; i++)
        if (values[i] < 1 || values[i] > limits[i])
            return linattn_err(LINATTN_ERR_FORMAT,
                               "%s: llama2.c header (%s): %s = %d is outside 1..%d (not a "
                               "llama2.c checkpoint?)", path,
                               info->version ? "version 1" : "legacy", names[i], values[i],
                               limits[i]);
    if (info->dim % info->n_heads != 0 || (info->dim / info->n_heads) % 2 != 0)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: llama2.c header: dim %d is not n_heads %d times an even head size",
                           path, info->dim, info->n_heads);
    if (info->n_kv_heads > info->n_heads || info->n_heads % info->n_kv_heads != 0)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: llama2.c header: n_kv_heads %d does not divide n_heads %d", path,
                           info->n_kv_heads, info->n_heads);
    /* every float the file holds, in uint64 (the limits above keep it far
     * from overflow, checked anyway) */
    uint64_t d = (uint64_t)info->dim, L = (uint64_t)info->n_layers;
    uint64_t hs = d / (uint64_t)info->n_heads, kvd = hs * (uint64_t)info->n_kv_heads;
    uint64_t V = (uint64_t)info->vocab_size, ff = (uint64_t)info->hidden_dim;
    uint64_t n = 0;
    int ok = mul_add(&n, V, d) && mul_add(&n, 2 * L, d) && mul_add(&n, 1, d) &&
             mul_add(&n, L * d, 2 * d) && mul_add(&n, L * d, 2 * kvd) &&
             mul_add(&n, L * d, 3 * ff) && (info->shared || mul_add(&n, V, d));
    if (ok && info->version == 0) /* the old freq_cis_real and _imag blocks */
        ok = mul_add(&n, 2, (uint64_t)info->seq_len * hs / 2);
    if (!ok || n > (UINT64_MAX - info->header_bytes) / 4)
        return linattn_err(LINATTN_ERR_FORMAT, "%s: llama2.c header: sizes overflow", path);
    info->file_bytes = info->header_bytes + 4 * n;
    if (file_size != info->file_bytes)
        return linattn_err(LINATTN_ERR_FORMAT,
                           "%s: %llu bytes, but a llama2.c %s checkpoint of dim %d, hidden_dim "
                           "%d, %d layers, %d heads, %d kv heads, vocab %d, seq_len %d (%s "
                           "classifier) has %llu", path, (unsigned long long)file_size,
                           info->version ? "version 1" : "legacy", info->dim, info->hidden_dim,
                           info->n_layers, info->n_heads, info->n_kv_heads, info->vocab_size,
                           info->seq_len, info->shared ? "shared" : "unshared",
                           (unsigned long long)info->file_bytes);
    return LINATTN_OK;
}

linattn_status linattn_llama2c_read_info(const char *path, linattn_llama2c_info *info)
{
    int fd;
    size_t size;
    linattn_status st = safe_open_read(path, "llama2.c checkpoint", SIZE_MAX, &fd, &size);
    if (st != LINATTN_OK)
        return st;
    unsigned char head[LINATTN_LLAMA2C_HEADER_MAX];
    size_t want = size < sizeof head ? size : sizeof head, got = 0;
    while (got < want) {
        ssize_t r = read(fd, head + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = errno;
            close(fd);
            return linattn_err(LINATTN_ERR_IO, "%s: cannot read: %s", path,
                               r < 0 ? strerror(e) : "unexpected end of file");
        }
        got += (size_t)r;
    }
    close(fd);
    return linattn_llama2c_parse(head, got, (uint64_t)size, path, info);
}

int linattn_llama2c_looks_like(const unsigned char *bytes, size_t avail)
{
    if (avail >= 4 && get_u32(bytes) == MAGIC)
        return 1;
    if (avail < 28)
        return 0;
    int32_t v[7];
    for (int i = 0; i < 7; i++)
        v[i] = get_i32(bytes + 4 * i);
    /* negative: an unshared classifier (INT32_MIN has no magnitude) */
    int64_t vocab = v[5] < 0 ? -(int64_t)v[5] : v[5];
    /* dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len:
     * every one in range, so that text or another format is not taken */
    return v[0] > 0 && v[0] <= LINATTN_MAX_D_MODEL && v[1] > 0 && v[1] <= LINATTN_MAX_D_FF &&
           v[2] > 0 && v[2] <= LINATTN_MAX_LAYERS && v[3] > 0 && v[3] <= v[0] && v[4] > 0 &&
           v[4] <= v[3] && v[5] != INT32_MIN && vocab > 0 && vocab <= LINATTN_MAX_VOCAB &&
           v[6] > 0 && v[6] <= LINATTN_MAX_SEQ_LEN;
}
