/* file.h: files written whole or not at all, and files read safely (regular files only, bounded, never blocking); not installed. */
#ifndef LINATTN_ENGINE_FILE_H
#define LINATTN_ENGINE_FILE_H

#include <stddef.h>

#include "internal.h"

/* A file being written: a temporary beside its target, renamed over it on
 * commit, so every reader sees the old file or the new one whole.
 *
 * The target is the path with symlinks followed (a symlink keeps pointing
 * at the new file). A target that exists must be a regular file: a folder,
 * device, FIFO or socket is refused, never replaced. A re-written file
 * keeps its mode (and, where allowed, its owner); a new one gets
 * 0666 & ~umask. Temporary names are TARGET.tmp.PID.N: starting a write
 * removes those left by processes that no longer run (a killed save). */
typedef struct safe_file {
    int fd;       /* the temporary file, open for writing; -1 when closed */
    char *target; /* where it goes (symlinks resolved) */
    char *tmp;    /* its temporary name */
    int failed;   /* a write failed (errno kept in err) */
    int err;
} safe_file;

/* Starts writing path; what names the file in messages ("state file").
 * LINATTN_ERR_IO with the reason (empty path, names a folder, not a
 * regular file, folder missing or not writable, name too long). */
linattn_status safe_file_begin(safe_file *w, const char *path, const char *what);
/* Appends n bytes (errors are reported by commit). */
void safe_file_write(safe_file *w, const void *p, size_t n);
/* Flushes to disk, renames over the target, syncs the folder; frees w. */
linattn_status safe_file_commit(safe_file *w, const char *what);
/* Drops the temporary file; frees w. Safe after a failed begin. */
void safe_file_abort(safe_file *w);
/* Whether a write to path could start: begin then abort (for a caller
 * that must fail before long work rather than after it). */
linattn_status safe_file_check(const char *path, const char *what);

/* Opens path for reading when it is a regular file of at most max_bytes:
 * never blocks (a FIFO is refused, not waited on), names the file in every
 * error. *size receives its size; close *fd when done. */
linattn_status safe_open_read(const char *path, const char *what, size_t max_bytes, int *fd,
                              size_t *size);
/* The whole of such a file in a new buffer (NUL-terminated, free()), its
 * length in *len. */
linattn_status safe_read_all(const char *path, const char *what, size_t max_bytes, char **data,
                             size_t *len);

#endif
