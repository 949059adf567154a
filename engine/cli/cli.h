/* cli.h: the subcommands of the `linattn` program and their shared helpers. */
#ifndef LINATTN_CLI_H
#define LINATTN_CLI_H

#include <stdint.h>

#include "linattn.h"
#include "cli_config.h"

/* Prints "linattn: <what>: <why>" to stderr; returns 1 (the exit status). */
int cli_fail(const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "linattn: <what>: <linattn_last_error() or status>"; returns 1. */
int cli_fail_status(const char *what, linattn_status st);
/* "linattn: WHAT: warning: ..." on stderr; the command goes on. */
void cli_warn(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when all written to stdout so far has gone out (it flushes); else
 * prints "linattn: writing the output: REASON" (once a run) and returns 0.
 * Commands that write as they go call it after each piece, to stop at the
 * first lost write; main checks it (and closes stdout) after every command. */
int cli_stdout_ok(void);
/* fputs to stdout, keeping the reason of a failure for cli_stdout_ok. */
void cli_put(const char *text);
/* Warns when threads is above the cores this process may use. */
void cli_check_threads(const char *what, long threads);
/* linattn_config_load, where a relative path that does not exist here is
 * also looked for in the installed demo files (LINATTN_DATADIR, e.g.
 * /usr/local/share/linattn): `linattn generate configs/kjv-linear.ini`
 * works from any folder once installed. */
linattn_status cli_load_config(const char *path, linattn_config *cfg, cli_generate *gen,
                               cli_attention *att);
/* The same, with over (NULL: none) a config laid over a model file or
 * folder given as path (generate --config FILE). */
linattn_status cli_load_model(const char *path, const char *over, linattn_config *cfg,
                              cli_generate *gen, cli_attention *att);
/* The error reporter of the CLI's own .npy and file code (see internal.h). */
linattn_status cli_err(linattn_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Strict number flags: the whole text is the number (no leading blanks, no
 * junk after, no sign on unsigned values) and it lies in [lo, hi]; a
 * float is finite too (nan, inf and what overflows a float are refused, a
 * bound of +-HUGE_VAL only drops that side of the range); else
 * "linattn: CMD: FLAG: expected ..., got 'TEXT'" and 1. */
int cli_parse_long(const char *cmd, const char *flag, const char *text, long lo, long hi,
                   long *out);
int cli_parse_u64(const char *cmd, const char *flag, const char *text, uint64_t *out);
int cli_parse_float(const char *cmd, const char *flag, const char *text, double lo, double hi,
                    float *out);

/* Applies --isa TEXT (flag) or a config's isa (config) over LINATTN_ISA. */
/* The ISA by the CLI's precedence: --isa, then LINATTN_ISA, then the
 * config's isa (auto there is the same as unset), then auto. A bad
 * LINATTN_ISA is an error in every case. 0, or 1 after printing why. */
int cli_choose_isa(const char *cmd, const char *flag, linattn_isa config_isa);

/* Writes len bytes to path whole or not at all (engine/file.h: a temporary
 * file beside it renamed over it; symlinks followed; folders, devices,
 * FIFOs and sockets refused). what names it in messages. */
linattn_status cli_write_file(const char *path, const char *what, const void *data, size_t len);

/* Whole UTF-8 characters out of a byte stream cut anywhere (the pieces of
 * tokens): a lead byte waits for its continuation bytes; every other byte
 * passes as it is, invalid ones too, so what is written is exactly what
 * was given, only held back until a character is whole. Zero it to start. */
typedef struct cli_utf8 {
    unsigned char held[4];
    int n, need;
} cli_utf8;
/* Puts in out (room for n + 4 bytes) what can be written now; returns its length. */
size_t cli_utf8_take(cli_utf8 *u, const char *in, size_t n, char *out);
/* What is held (an unfinished character), as it is, into out[4]; returns its length. */
size_t cli_utf8_flush(cli_utf8 *u, char *out);

/* Signals for long commands (signals.c). After install, a first SIGINT
 * and SIGTERM are only recorded: the command polls cli_signal_pending()
 * (SIGTERM, else SIGINT, else 0) where it can stop cleanly, keeping its
 * work; a second SIGINT before cli_signal_handled() exits at once with
 * status 130. Reads are not restarted (EINTR). restore puts back the
 * handlers that were there. */
void cli_signals_install(void);
void cli_signals_restore(void);
int cli_signal_pending(void);
void cli_signal_handled(void);

int cmd_info(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_attend(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
