/* cli.h: the subcommands of the `linattn` program and their shared helpers. */
#ifndef LINATTN_CLI_H
#define LINATTN_CLI_H

#include "linattn.h"

/* Prints "linattn: <what>: <why>" to stderr; returns 1 (the exit status). */
int cli_fail(const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "linattn: <what>: <linattn_last_error() or status>"; returns 1. */
int cli_fail_status(const char *what, linattn_status st);

/* Applies --isa TEXT (flag) or a config's isa (config) over LINATTN_ISA. */
int cli_apply_isa(const char *text, linattn_isa_source source);

/* Writes len bytes to path whole or not at all (engine/file.h: a temporary
 * file beside it renamed over it; symlinks followed; folders, devices,
 * FIFOs and sockets refused). what names it in messages. */
linattn_status cli_write_file(const char *path, const char *what, const void *data, size_t len);

int cmd_info(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_attend(int argc, char **argv);
int cmd_generate(int argc, char **argv);

#endif
