/*
 * ex_logsrv.h - serves the attempts' log files over HTTP, live.
 *
 *   GET /logs/<instance>/<attempt>[?offset=N][&follow=1]
 *   GET /logs/<instance>/<attempt>/lines?from=K&to=L
 *   Authorization: Bearer <log token>
 *
 * /lines answers the line index records (lib/orr_logidx.h, 16 bytes each,
 * application/octet-stream) of the lines overlapping bytes [K, L) of the log
 * -- the line holding K, then each line starting before L; L - K <= 4 MiB --
 * with the line number of the first in the header X-Orrery-First-Line (one
 * past the last line when there is none). 404 without an index.
 *
 * Answers the bytes of <log dir>/<instance>-<attempt>.log from offset
 * (text/plain). With follow=1 the response stays open (chunked, size
 * unknown) and streams what is appended until the attempt ends (the daemon
 * calls ex_logsrv_end), then finishes. 401 without the right token, 400 for
 * a path or parameter that is not a plain integer, 404 for an unknown log,
 * 405 for another method.
 *
 * POST /v1/<op> (same token) goes to the handler mounted with
 * ex_logsrv_mount (ex_datasrv.c: /v1/meta, /v1/preview): the body (at most
 * EX_POST_MAX bytes, else 413) is handed over whole; 404 when nothing is
 * mounted.
 *
 * Threading: libmicrohttpd with a thread per connection (at most 64), so a
 * follower may wait in the content callback, polling the file every 150 ms.
 * ex_logsrv_stop() wakes every follower and returns after they are gone.
 */
#ifndef EX_LOGSRV_H
#define EX_LOGSRV_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"

typedef struct ex_logsrv ex_logsrv;

/* "<log_dir>/<instance>-<attempt>.log" into buf; returns buf. */
char *ex_log_path(char *buf, size_t n, const char *log_dir, int64_t instance, int attempt);

/* Listen on listen ("127.0.0.1:7171"; port 0 = any free one). token must be
 * non-empty. log_dir is copied. ORR_EIO if the port cannot be bound,
 * ORR_EINVAL for a bad address. */
orr_status ex_logsrv_start(const char *listen, const char *token, const char *log_dir,
                           ex_logsrv **out, orr_err *err);
/* The bound port. */
int ex_logsrv_port(const ex_logsrv *s);
/* Mark an attempt as running (followers wait for more) / ended (followers
 * finish once they have read everything). Thread-safe. */
void ex_logsrv_begin(ex_logsrv *s, int64_t instance, int attempt);
void ex_logsrv_end(ex_logsrv *s, int64_t instance, int attempt);
#define EX_POST_MAX (1024 * 1024)

/* A handler of POST /v1/<op>: op is what follows "/v1/", body the request
 * (NUL-terminated, len bytes). Appends the JSON answer to out and returns
 * the HTTP status. Runs on the connection's thread and may block. */
struct orr_buf;
typedef unsigned (*ex_logsrv_post_fn)(void *arg, const char *op, const char *body, size_t len,
                                      struct orr_buf *out);
/* Mount fn (before requests arrive; one handler). */
void ex_logsrv_mount(ex_logsrv *s, ex_logsrv_post_fn fn, void *arg);

/* Stop serving and free. NULL is a no-op. */
void ex_logsrv_stop(ex_logsrv *s);

#endif
