/* mem.h: the engine's allocations, counted, with a test-only hook that makes the Nth one fail; not installed. */
#ifndef LINATTN_ENGINE_MEM_H
#define LINATTN_ENGINE_MEM_H

#include <stddef.h>

/* malloc, calloc, realloc, aligned_alloc, free and strdup of the engine:
 * the same, except that with the hook armed one of them returns NULL, so a
 * test can walk every allocation of an operation and check that each
 * failure is reported (LINATTN_ERR_NOMEM) and leaks nothing. */
void *mem_alloc(size_t n);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t n);
void *mem_aligned_alloc(size_t align, size_t n);
void mem_free(void *p);
char *mem_strdup(const char *s);

/* Test hook (not in linattn.h): after `after` more successful allocations
 * the next one fails, once; -1 disarms. Process-wide. */
void linattn_test_fail_alloc(long after);
/* Allocations made, and blocks alive (allocated minus freed), since the
 * process started. */
long linattn_test_alloc_count(void);
long linattn_test_alloc_live(void);

#endif
