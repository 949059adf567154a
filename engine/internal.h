/* internal.h: helpers shared by the engine's files; not installed. */
#ifndef LINATTN_ENGINE_INTERNAL_H
#define LINATTN_ENGINE_INTERNAL_H

#include "linattn.h"
#include "../simd/kernels.h"
#include "mem.h"

#if defined(__GNUC__)
#define LINATTN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LINATTN_PRINTF(a, b)
#endif

/* A macro's value as a string literal: LINATTN_STR(LINATTN_MAX_DECAYS) is "256". */
#define LINATTN_STR_(x) #x
#define LINATTN_STR(x) LINATTN_STR_(x)

/* Records a message for linattn_last_error() and returns status. The CLI
 * builds a few of these files (file.c, mem.c, cli/npy.c) into itself, as it
 * may only call the library's API: there they report through the CLI's
 * own cli_err (engine/cli/main.c), which its error printer reads. */
#ifdef LINATTN_CLI_SIDE
#define linattn_err cli_err
#endif
linattn_status linattn_err(linattn_status status, const char *fmt, ...) LINATTN_PRINTF(2, 3);

/* A config whose weights are llama2c:PATH or hf:DIR completed from the
 * checkpoint's header or the folder's config.json (shape fields left 0 set,
 * the others checked against it), then validated; any other config is left
 * as it is. */
linattn_status linattn_config_complete(linattn_config *c);

/* Clears the thread's last error. */
void linattn_err_clear(void);

/* The kernel table in force. Fails only when LINATTN_ISA is bad and no
 * ISA was set through the API. */
linattn_status linattn_kernels_current(const linattn_kernels **k);

/* Threads a call that asked for the default (0) uses now: at most max,
 * fewer when other processes hold cores (threads.c says how it measures). */
int linattn_threads_free(int max);
/* The rule: threads for `others` cores of load on a machine of `cpus`. */
int linattn_threads_for_load(double others, long cpus, int max);
/* The other processes' load in cores over the last interval; -1 before
 * the first measurement or without /proc. */
double linattn_threads_others_load(void);

#endif
