/* signals.c: Ctrl-C and SIGTERM for the CLI's long commands: the first SIGINT asks the command to stop what it is doing (and keep its work), a second exits at once; SIGTERM asks it to stop, keep its work and exit. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t sigints, sigterm;
static struct sigaction old_int, old_term;
static int installed;

static void on_signal(int sig)
{
    if (sig == SIGTERM) {
        sigterm = 1;
        return;
    }
    if (++sigints >= 2) /* the user insists: out now (files are written whole or not at all) */
        _exit(128 + SIGINT);
}

void cli_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a read at the prompt returns, EINTR */
    sigints = sigterm = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    installed = 1;
}

void cli_signals_restore(void)
{
    if (!installed)
        return;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    installed = 0;
}

int cli_signal_pending(void)
{
    return sigterm ? SIGTERM : sigints ? SIGINT : 0;
}

void cli_signal_handled(void)
{
    sigints = 0;
}
