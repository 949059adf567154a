/* mem.c: the engine's allocations, counted, and the test hook that fails the Nth one. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

static atomic_long fail_after = -1; /* -1: disarmed */
static atomic_long made, live;

void linattn_test_fail_alloc(long after)
{
    atomic_store(&fail_after, after);
}

long linattn_test_alloc_count(void)
{
    return atomic_load(&made);
}

long linattn_test_alloc_live(void)
{
    return atomic_load(&live);
}

/* 1 when this allocation must fail (the hook reached 0: it disarms). */
static int injected(void)
{
    long n = atomic_load(&fail_after);
    while (n >= 0) {
        if (atomic_compare_exchange_weak(&fail_after, &n, n - 1))
            return n == 0;
    }
    return 0;
}

static void *counted(void *p)
{
    if (p) {
        atomic_fetch_add(&made, 1);
        atomic_fetch_add(&live, 1);
    }
    return p;
}

void *mem_alloc(size_t n)
{
    return injected() ? NULL : counted(malloc(n));
}

void *mem_calloc(size_t n, size_t size)
{
    return injected() ? NULL : counted(calloc(n, size));
}

void *mem_realloc(void *p, size_t n)
{
    if (!p)
        return mem_alloc(n);
    return injected() ? NULL : realloc(p, n); /* a block moved, not a new one */
}

void *mem_aligned_alloc(size_t align, size_t n)
{
    return injected() ? NULL : counted(aligned_alloc(align, n));
}

void mem_free(void *p)
{
    if (p)
        atomic_fetch_sub(&live, 1);
    free(p);
}

char *mem_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mem_alloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}
