/*
 * orr_log.h - structured logging in logfmt, one line per event.
 *
 *   ts=2026-11-30T10:00:00.123Z level=info msg="instance dispatched" id=42 executor=ex-1
 *
 * The message is always quoted; the key=value part is a printf format the
 * caller writes ("id=%lld executor=%s"). A value that may hold spaces, quotes
 * or newlines goes through orr_log_q(), which quotes and escapes it.
 * Each line is written with a single write(2), so lines from several threads
 * never interleave. Output goes to stderr until orr_log_open() names a file.
 */
#ifndef ORR_LOG_H
#define ORR_LOG_H

#include "orr_status.h"

typedef enum orr_log_level {
    ORR_LOG_DEBUG = 0,
    ORR_LOG_INFO,
    ORR_LOG_WARN,
    ORR_LOG_ERROR,
    ORR_LOG_FATAL,
} orr_log_level;

/* Parse "debug|info|warn|error|fatal"; ORR_EINVAL for anything else. */
orr_status orr_log_level_parse(const char *name, orr_log_level *out);
const char *orr_log_level_name(orr_log_level l);

/* Set the minimum level and the destination (NULL, "" or "-" = stderr).
 * Returns ORR_EIO (with the path in err) if the file cannot be opened. */
orr_status orr_log_open(orr_log_level min, const char *path, orr_err *err);
void orr_log_set_level(orr_log_level min);
int orr_log_enabled(orr_log_level l);
/* Close the log file (back to stderr). */
void orr_log_close(void);

void orr_log(orr_log_level l, const char *msg, const char *kvfmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Quote s for a logfmt value: "a b" -> "\"a b\"". Returns a thread-local
 * buffer valid until the 8th next call on the same thread; long values are
 * cut at 480 bytes. NULL gives "\"\"". */
const char *orr_log_q(const char *s);

#define ORR_DEBUG(msg, ...) orr_log(ORR_LOG_DEBUG, msg, __VA_ARGS__)
#define ORR_INFO(msg, ...)  orr_log(ORR_LOG_INFO, msg, __VA_ARGS__)
#define ORR_WARN(msg, ...)  orr_log(ORR_LOG_WARN, msg, __VA_ARGS__)
#define ORR_ERROR(msg, ...) orr_log(ORR_LOG_ERROR, msg, __VA_ARGS__)

#endif
