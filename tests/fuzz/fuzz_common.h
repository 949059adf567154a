/* fuzz_common.h: helpers the libFuzzer targets share: the input as a regular file (a memfd), no disk writes. */
#ifndef LINATTN_FUZZ_COMMON_H
#define LINATTN_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* The bytes as a regular file readable at *path ("/proc/self/fd/N");
 * returns the fd to close, -1 if it could not be made. */
static inline int fuzz_as_file(const uint8_t *data, size_t size, char path[64])
{
    int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
