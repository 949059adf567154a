/* file.c: files written whole or not at all (temporary + rename, symlinks followed, devices refused), and safe reads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

/* Symlink hops followed before giving up (the kernel's own limit). */
#define MAX_HOPS 40
/* The temporary name adds ".tmp.PID.N": at most 4 + 1 + 10 + 1 + 10 bytes. */
#define TMP_SUFFIX_MAX 26


/* The folder part of path ("." when there is none), malloc'd. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return mem_strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = mem_alloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* The folder part of path into buf[PATH_MAX] without allocating (for the
 * best-effort steps: cleaning stale temporaries, syncing the folder); 0
 * when it does not fit. */
static int folder_into(char buf[PATH_MAX], const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= PATH_MAX)
        return 0;
    memcpy(buf, slash ? path : ".", n);
    buf[n] = '\0';
    return 1;
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a folder"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

/* path with its symlinks followed, malloc'd into *out; *st and *exists
 * describe the final target. */
static linattn_status resolve(const char *path, const char *what, char **out, struct stat *st,
                              int *exists)
{
    *out = NULL;
    char *cur = mem_strdup(path);
    if (!cur)
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    for (int hop = 0;; hop++) {
        if (hop == MAX_HOPS) {
            mem_free(cur);
            return linattn_err(LINATTN_ERR_IO, "%s: %s: too many levels of symbolic links", path,
                               what);
        }
        if (lstat(cur, st) != 0) {
            if (errno != ENOENT) {
                linattn_status s = linattn_err(LINATTN_ERR_IO, "%s: %s: %s", path, what,
                                               strerror(errno));
                mem_free(cur);
                return s;
            }
            *exists = 0;
            break;
        }
        if (!S_ISLNK(st->st_mode)) {
            *exists = 1;
            break;
        }
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) {
            linattn_status s =
                linattn_err(LINATTN_ERR_IO, "%s: %s: %s", path, what, strerror(errno));
            mem_free(cur);
            return s;
        }
        link[n] = '\0';
        char *next;
        if (link[0] == '/') {
            next = mem_strdup(link);
        } else { /* relative to the link's folder */
            char *dir = folder_of(cur);
            next = dir ? mem_alloc(strlen(dir) + 1 + (size_t)n + 1) : NULL;
            if (next)
                sprintf(next, "%s/%s", dir, link);
            mem_free(dir);
        }
        mem_free(cur);
        if (!(cur = next))
            return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    }
    *out = cur;
    return LINATTN_OK;
}

/* Removes TARGET.tmp.PID.N files of processes that no longer run. */
static void remove_stale(const char *target)
{
    char dir[PATH_MAX];
    DIR *d = folder_into(dir, target) ? opendir(dir) : NULL;
    if (!d)
        return;
    const char *base = base_of(target);
    size_t blen = strlen(base);
    const long self = (long)getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0)
            continue;
        char *end;
        const char *p = name + blen + 5;
        if (*p < '0' || *p > '9')
            continue;
        long pid = strtol(p, &end, 10);
        if (*end != '.' || end[1] < '0' || end[1] > '9')
            continue;
        strtoul(end + 1, &end, 10);
        if (*end != '\0' || pid <= 0 || pid == self)
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

linattn_status safe_file_begin(safe_file *w, const char *path, const char *what)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    if (!path || !path[0])
        return linattn_err(LINATTN_ERR_IO, "%s: empty path", what);
    struct stat st;
    int exists = 0;
    char *target;
    linattn_status s = resolve(path, what, &target, &st, &exists);
    if (s != LINATTN_OK)
        return s;
    if (exists && !S_ISREG(st.st_mode)) {
        s = linattn_err(LINATTN_ERR_IO, "%s: %s is %s; refusing to replace it", path, what,
                        kind_of(st.st_mode));
        mem_free(target);
        return s;
    }
    size_t tlen = strlen(target);
    if (tlen && target[tlen - 1] == '/') {
        s = linattn_err(LINATTN_ERR_IO, "%s: %s path names a folder (ends with '/')", path, what);
        mem_free(target);
        return s;
    }
    if (strlen(base_of(target)) + TMP_SUFFIX_MAX > NAME_MAX) {
        s = linattn_err(LINATTN_ERR_IO,
                        "%s: %s name too long: with its temporary suffix (.tmp.PID.N) it must "
                        "stay within %d bytes",
                        path, what, NAME_MAX);
        mem_free(target);
        return s;
    }
    remove_stale(target);

    static _Atomic unsigned counter;
    char *tmp = mem_alloc(tlen + TMP_SUFFIX_MAX + 1);
    if (!tmp) {
        mem_free(target);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        snprintf(tmp, tlen + TMP_SUFFIX_MAX + 1, "%s.tmp.%ld.%u", target, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        char *dir = folder_of(target);
        s = linattn_err(LINATTN_ERR_IO, "%s: cannot create %s in folder '%s': %s", path, what,
                        dir ? dir : "?", strerror(errno));
        mem_free(dir);
        mem_free(tmp);
        mem_free(target);
        return s;
    }
    if (exists) { /* a re-write keeps the file's mode, and its owner where allowed */
        if (fchmod(fd, st.st_mode & 07777) != 0) {
            /* leave 0666 & ~umask */
        }
        if (fchown(fd, st.st_uid, st.st_gid) != 0) {
            /* only root may give a file away: keep ours */
        }
    }
    w->fd = fd;
    w->target = target;
    w->tmp = tmp;
    return LINATTN_OK;
}

void safe_file_write(safe_file *w, const void *p, size_t n)
{
    const char *c = p;
    while (!w->failed && n > 0) {
        ssize_t got = write(w->fd, c, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            w->failed = 1;
            w->err = got < 0 ? errno : EIO;
            return;
        }
        c += got;
        n -= (size_t)got;
    }
}

static void release(safe_file *w)
{
    mem_free(w->target);
    mem_free(w->tmp);
    w->target = w->tmp = NULL;
    w->fd = -1;
}

void safe_file_abort(safe_file *w)
{
    if (w->fd >= 0) {
        close(w->fd);
        unlink(w->tmp);
    }
    release(w);
}

linattn_status safe_file_commit(safe_file *w, const char *what)
{
    if (!w->failed && fsync(w->fd) != 0) {
        w->failed = 1;
        w->err = errno;
    }
    if (close(w->fd) != 0 && !w->failed) {
        w->failed = 1;
        w->err = errno;
    }
    w->fd = -1;
    if (!w->failed && rename(w->tmp, w->target) != 0) {
        w->failed = 1;
        w->err = errno;
    }
    if (w->failed) {
        unlink(w->tmp);
        linattn_status s = linattn_err(LINATTN_ERR_IO, "%s: cannot write %s: %s", w->target,
                                       what, strerror(w->err));
        release(w);
        return s;
    }
    /* the rename itself survives a crash once the folder is synced */
    char dir[PATH_MAX];
    int dfd = folder_into(dir, w->target) ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    release(w);
    return LINATTN_OK;
}

linattn_status safe_file_check(const char *path, const char *what)
{
    safe_file w;
    linattn_status s = safe_file_begin(&w, path, what);
    if (s == LINATTN_OK)
        safe_file_abort(&w);
    return s;
}

linattn_status safe_open_read(const char *path, const char *what, size_t max_bytes, int *fd,
                              size_t *size)
{
    *fd = -1;
    if (!path || !path[0])
        return linattn_err(LINATTN_ERR_IO, "%s: empty path", what);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return linattn_err(LINATTN_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
    struct stat st;
    linattn_status s = LINATTN_OK;
    if (fstat(f, &st) != 0)
        s = linattn_err(LINATTN_ERR_IO, "%s: cannot stat %s: %s", path, what, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        s = linattn_err(LINATTN_ERR_IO, "%s: %s is %s; only regular files are read", path, what,
                        kind_of(st.st_mode));
    else if ((unsigned long long)st.st_size > (unsigned long long)max_bytes)
        s = linattn_err(LINATTN_ERR_FORMAT, "%s: %lld bytes, more than the %zu-byte limit for %s",
                        path, (long long)st.st_size, max_bytes, what);
    else if (fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK) != 0)
        s = linattn_err(LINATTN_ERR_IO, "%s: %s", path, strerror(errno));
    if (s != LINATTN_OK) {
        close(f);
        return s;
    }
    *fd = f;
    *size = (size_t)st.st_size;
    return LINATTN_OK;
}

linattn_status safe_read_all(const char *path, const char *what, size_t max_bytes, char **data,
                             size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd;
    size_t size;
    linattn_status s = safe_open_read(path, what, max_bytes, &fd, &size);
    if (s != LINATTN_OK)
        return s;
    char *buf = mem_alloc(size + 1);
    if (!buf) {
        close(fd);
        return linattn_err(LINATTN_ERR_NOMEM, "%s: cannot allocate %zu bytes for %s", path, size,
                           what);
    }
    size_t n = 0;
    while (n < size) {
        ssize_t got = read(fd, buf + n, size - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            s = linattn_err(LINATTN_ERR_IO, "%s: cannot read %s: %s", path, what,
                            got < 0 ? strerror(errno) : "the file shrank while being read");
            break;
        }
        n += (size_t)got;
    }
    close(fd);
    if (s != LINATTN_OK) {
        mem_free(buf);
        return s;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return LINATTN_OK;
}
