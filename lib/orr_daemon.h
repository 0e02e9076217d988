/*
 * orr_daemon.h - the main() every Orrery daemon stands on: options and
 * configuration, the table of subcommands, stop signals taken by sigwait,
 * the pid file and the port file.
 *
 *   static const orr_daemon_cmd cmds[] = {
 *       {"serve", my_serve, ORR_DAEMON_SERVES},
 *       {"version", my_version, 0},
 *   };
 *   static const orr_daemon_def def = {"galaxyd", "galaxy", schema, N, cmds, 2, usage};
 *   int main(int argc, char **argv) { return orr_daemon_main(&def, argc, argv); }
 *
 * orr_daemon_main: --help/-h anywhere before the command prints the usage
 * (exit 0); a command marked ORR_DAEMON_NO_CONFIG runs before any
 * configuration is read; otherwise --config FILE / --print-config and the
 * configuration are handled by orr_config_from_args (a bad setting: exit 2)
 * and the command named next runs. No or an unknown command: the usage on
 * stderr, exit 2. The command's return value is the exit status.
 *
 * A command marked ORR_DAEMON_SERVES runs as a daemon: before it is called
 * the stop signals (SIGINT, SIGTERM) are blocked in the main thread, so
 * every thread it creates inherits the mask and only sigwait takes them
 * (orr_daemon_wait_stop in the main thread, or a stopper thread for a main
 * thread busy with its own loop); SIGPIPE is ignored; and when the
 * daemon's section has a `pid_file` key that is set, the pid is written
 * there (removed when the command returns).
 */
#ifndef ORR_DAEMON_H
#define ORR_DAEMON_H

#include <signal.h>
#include <stddef.h>

#include "orr_config.h"
#include "orr_status.h"

typedef struct orr_daemon orr_daemon;

#define ORR_DAEMON_SERVES    1 /* a long-running command: signals, pid file */
#define ORR_DAEMON_NO_CONFIG 2 /* runs before any configuration is read */

typedef struct orr_daemon_cmd {
    const char *name;
    /* argv[0] is the command's name, argv[1..argc-1] its arguments.
     * Returns the exit status. */
    int (*run)(orr_daemon *d, int argc, char **argv);
    int flags; /* ORR_DAEMON_SERVES, ORR_DAEMON_NO_CONFIG */
} orr_daemon_cmd;

typedef struct orr_daemon_def {
    const char *prog;    /* "galaxyd": names the daemon in messages */
    const char *section; /* its configuration section ("galaxy"), for pid_file and port_file */
    const orr_cfg_key *schema;
    size_t nschema;
    const orr_daemon_cmd *cmds;
    size_t ncmds;
    /* The usage text, printed for --help (stdout) and for a missing or
     * unknown command (stderr). NULL: one made from the command names. */
    void (*usage)(FILE *f);
} orr_daemon_def;

/* Run the daemon's command line (see above). Returns the exit status. */
int orr_daemon_main(const orr_daemon_def *def, int argc, char **argv);

/* The running command's configuration (NULL for an ORR_DAEMON_NO_CONFIG
 * command), the program's argv[0] and the daemon's definition. */
orr_config *orr_daemon_config(const orr_daemon *d);
const char *orr_daemon_argv0(const orr_daemon *d);
const orr_daemon_def *orr_daemon_definition(const orr_daemon *d);

/* Write the daemon's port file ([section] port_file, when the schema has
 * it and it is set; else nothing): the printf text, written to a temporary
 * file and renamed, so a reader sees all of it or nothing. ORR_EIO naming
 * the key when it cannot be written. */
orr_status orr_daemon_port_file(orr_daemon *d, orr_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write text to path through a temporary file and a rename. ORR_EIO
 * (naming field) on failure. */
orr_status orr_daemon_write_file(const char *path, const char *field, const char *text,
                                 orr_err *err);

/* ------------------------------------------------------------ stop signals */

/* Block SIGINT and SIGTERM in the calling thread (threads it creates later
 * inherit the mask) and ignore SIGPIPE. orr_daemon_main does it for an
 * ORR_DAEMON_SERVES command; call it yourself only outside that. */
void orr_daemon_block_signals(void);

/* Wait for a stop signal, at most timeout_ms (< 0: as long as it takes).
 * Returns the signal's number, or 0 when the time ran out. Only for a
 * thread that has the stop signals blocked. */
int orr_daemon_wait_stop(int timeout_ms);

/* A thread of its own that waits for a stop signal, then sets *flag to 1
 * (when flag is not NULL) and calls on_stop(ctx, sig) (when not NULL), once:
 * for a daemon whose main thread runs a loop that looks at a flag. Start it
 * after orr_daemon_block_signals (an ORR_DAEMON_SERVES command has it).
 * ORR_EINTERNAL if the thread cannot start. */
typedef struct orr_daemon_stopper orr_daemon_stopper;
orr_status orr_daemon_stopper_start(volatile sig_atomic_t *flag,
                                    void (*on_stop)(void *ctx, int sig), void *ctx,
                                    orr_daemon_stopper **out, orr_err *err);
/* 1 once a stop signal arrived. */
int orr_daemon_stopper_fired(const orr_daemon_stopper *s);
/* End the thread (without calling on_stop if no signal came) and free.
 * NULL is a no-op. */
void orr_daemon_stopper_end(orr_daemon_stopper *s);

#endif
