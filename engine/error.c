/* error.c: status names and the per-thread last-error message. */
#include <stdarg.h>
#include <stdio.h>

#include "escape.h"
#include "internal.h"

static _Thread_local char last_error[512];

const char *linattn_status_str(linattn_status status)
{
    switch (status) {
    case LINATTN_OK: return "ok";
    case LINATTN_ERR_INVALID: return "invalid argument";
    case LINATTN_ERR_UNSUPPORTED: return "unsupported";
    case LINATTN_ERR_NOMEM: return "out of memory";
    case LINATTN_ERR_IO: return "i/o error";
    case LINATTN_ERR_FORMAT: return "bad format";
    case LINATTN_ERR_CONTEXT_FULL: return "context full";
    case LINATTN_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}

const char *linattn_last_error(void)
{
    return last_error;
}

/* Messages quote paths, keys and values from files: escaped (escape.h), so
 * a crafted file cannot put terminal controls on the user's screen. */
linattn_status linattn_err(linattn_status status, const char *fmt, ...)
{
    char raw[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    linattn_escape(last_error, sizeof last_error, raw);
    return status;
}

void linattn_err_clear(void)
{
    last_error[0] = '\0';
}
