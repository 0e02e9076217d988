/*
 * ex_logcap.h - capture of an attempt's output, stamped line by line.
 *
 * The run's stdout and stderr append to the attempt's log file
 * (<instance>-<attempt>.log) as they always did: the task's write path is
 * untouched, so the log stays byte for byte what the task wrote and the task
 * goes no slower. One thread of executord follows every captured file as it
 * grows (woken by inotify), reads the new bytes and appends, for every line
 * that starts in them, a record to the line index (<instance>-<attempt>.idx,
 * format in lib/orr_logidx.h): where the line starts and when executord read
 * its first byte (UTC, milliseconds). A last line without a newline and a
 * line of any length have one record each. The index file is made with the
 * first line: a run that writes nothing has none, and an empty log stands
 * for an empty index (the log server answers no lines; the archive holds the
 * empty log under both names).
 *
 * Call order: ex_logcap_start (creates the log) -> the sandbox runs with
 * the log as its output -> ex_logcap_finish once the run is over (its group
 * killed: nothing writes any more). The log server reads both files while
 * they grow.
 */
#ifndef EX_LOGCAP_H
#define EX_LOGCAP_H

#include <stddef.h>
#include <sys/types.h>

#include "orr_status.h"

typedef struct ex_logcap ex_logcap;

/* The index file of a log path: its ".log" replaced by ".idx" (appended
 * when it has none) into buf; returns buf. */
char *ex_log_index_path(char *buf, size_t n, const char *log_path);

/* Open (create 0640) the log and its index if there is one, continuing both
 * where they end, and hand them to the follower (its thread is started by
 * the first capture). Thread-safe. ORR_EIO naming the file that failed;
 * nothing is left open then. */
orr_status ex_logcap_start(const char *log_path, ex_logcap **out, orr_err *err);

/* Index what the log holds now (the writers are gone), take it from the
 * follower, close and free. NULL is a no-op. Blocks until the index is
 * complete. */
void ex_logcap_finish(ex_logcap *c);

/* For tests: the period of the sweep that reads every live log whatever the
 * events said (default 1,000 ms; 0: none), and whether new captures are
 * watched with inotify (1, the default) or read every 20 ms (0). */
void ex_logcap_tune(int sweep_ms, int watch);

/* For tests: fn(path, n, arg) is called by the follower's thread after each
 * piece it read of a live log (n its length, 0 at the end, -1 on an error),
 * outside the follower's lock and before the log takes its place at the end
 * of the turns; NULL: none (the default). Returns once no call of the fn
 * before runs any more, so not from within fn. */
typedef void (*ex_logcap_piece_fn)(const char *path, ssize_t n, void *arg);
void ex_logcap_observe(ex_logcap_piece_fn fn, void *arg);

/* Append text (executord's own words) to the log and its index, stamped
 * now. Failures are only logged. Not while a capture of the same log runs. */
void ex_log_append(const char *log_path, const char *text, size_t len);

#endif
