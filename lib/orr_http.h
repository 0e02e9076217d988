/*
 * orr_http.h - the HTTP server set-up every Orrery daemon shares, on
 * libmicrohttpd: the listen address ("host:port", "[v6]:port", ":port"),
 * the daemon's start with the project's defaults, its bound port, a plain
 * answer, and the stop.
 *
 * A caller owns its request handling (MHD's access handler and, if it needs
 * them, the completed, unescape and URI-log callbacks); orr_http only starts
 * and stops the daemon. Defaults: an internal polling thread (or a pool of
 * `threads` with epoll), the error log on, SO_REUSEADDR as libmicrohttpd
 * sets it (a restart rebinds at once while old connections sit in
 * TIME_WAIT; SO_REUSEPORT is never set, so a second process cannot share the
 * port unnoticed: it gets ORR_EIO).
 *
 * Call order: orr_http_start -> orr_http_port* -> orr_http_stop.
 */
#ifndef ORR_HTTP_H
#define ORR_HTTP_H

#include <microhttpd.h>
#include <stddef.h>
#include <sys/socket.h>

#include "orr_status.h"

typedef struct orr_http orr_http;

/* A parsed listen address. */
typedef struct orr_http_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    int port; /* 0 = any free port */
} orr_http_addr;

/* Parse listen into out: "HOST:PORT" with HOST an IPv4 address,
 * "localhost" (127.0.0.1) or "0.0.0.0"; "[IPV6]:PORT"; ":PORT" (every IPv4
 * address). PORT is 0-65535, 0 picking a free one. ORR_EINVAL naming field
 * (the configuration key, e.g. "galaxy.listen") for anything else. */
orr_status orr_http_parse_listen(const char *listen, const char *field, orr_http_addr *out,
                                 orr_err *err);

typedef struct orr_http_opts {
    const char *listen; /* see orr_http_parse_listen */
    const char *field;  /* configuration key named in errors */
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
    /* 0: one internal polling thread; > 0: an epoll thread pool of this
     * size; with thread_per_connection set it is ignored. */
    unsigned threads;
    int thread_per_connection; /* a thread per connection (handlers that wait) */
    int suspend_resume;        /* MHD_ALLOW_SUSPEND_RESUME */
    unsigned connection_limit; /* 0 = libmicrohttpd's default */
    unsigned timeout_s;        /* idle connection timeout; 0 = 10 s */
    size_t memory_limit;       /* per-connection pool; 0 = libmicrohttpd's default */
    MHD_RequestCompletedCallback completed;
    void *completed_cls;
    size_t (*unescape)(void *cls, struct MHD_Connection *conn, char *s);
    void *unescape_cls;
    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *conn);
    void *uri_log_cls;
} orr_http_opts;

/* Start serving. ORR_EINVAL (field) for a bad address, ORR_EIO (field) if it
 * cannot be bound. *out is NULL on failure. */
orr_status orr_http_start(const orr_http_opts *o, orr_http **out, orr_err *err);
/* The bound port. */
int orr_http_port(const orr_http *h);
/* Stop accepting, end every connection, free. NULL is a no-op. Blocks until
 * every handler has returned. */
void orr_http_stop(orr_http *h);

/* Queue a complete answer of len bytes (copied) with content_type and the
 * nosniff header. Returns MHD's result for the access handler. */
enum MHD_Result orr_http_reply(struct MHD_Connection *conn, unsigned status,
                               const char *content_type, const char *body, size_t len);

#endif
