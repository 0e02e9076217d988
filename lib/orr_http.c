/*
 * orr_http.c - libmicrohttpd set-up and listen-address parsing (see
 * orr_http.h).
 */
#include "orr_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"

struct orr_http {
    struct MHD_Daemon *mhd;
    int port;
};

static orr_status http__bad(orr_err *err, const char *field, const char *listen, const char *why)
{
    return orr_err_set(err, ORR_EINVAL, field,
                       "%s in \"%.200s\": expected HOST:PORT, [IPV6]:PORT or :PORT", why, listen);
}

orr_status orr_http_parse_listen(const char *listen, const char *field, orr_http_addr *out,
                                 orr_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!listen)
        return http__bad(err, field, "", "no address");
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon;
    int v6 = listen[0] == '[';
    if (v6) {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':')
            return http__bad(err, field, listen, "unclosed [IPv6] address");
        colon = close + 1;
        if ((size_t)(close - listen - 1) >= sizeof(host))
            return http__bad(err, field, listen, "bad IPv6 address");
        memcpy(host, listen + 1, (size_t)(close - listen - 1));
        host[close - listen - 1] = '\0';
    } else {
        colon = strrchr(listen, ':');
        if (!colon)
            return http__bad(err, field, listen, "no port");
        if ((size_t)(colon - listen) >= sizeof(host))
            return http__bad(err, field, listen, "bad address");
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = '\0';
    }
    const char *p = colon + 1;
    long port = 0;
    if (!*p)
        return http__bad(err, field, listen, "no port");
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || port > 65535)
            return http__bad(err, field, listen, "bad port");
        port = port * 10 + (*p - '0');
    }
    if (port > 65535)
        return http__bad(err, field, listen, "bad port");
    out->port = (int)port;
    if (v6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out->ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
            return http__bad(err, field, listen, "bad IPv6 address");
        out->len = sizeof(*s6);
        return ORR_OK;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)&out->ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    out->len = sizeof(*s4);
    if (host[0] == '\0')
        s4->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0)
        s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
        return http__bad(err, field, listen, "bad IPv4 address");
    return ORR_OK;
}

orr_status orr_http_start(const orr_http_opts *o, orr_http **out, orr_err *err)
{
    *out = NULL;
    const char *field = o->field ? o->field : "listen";
    orr_http_addr a;
    orr_status rc = orr_http_parse_listen(o->listen, field, &a, err);
    if (rc != ORR_OK)
        return rc;
    orr_http *h = orr_xcalloc(1, sizeof(*h));
    unsigned flags = MHD_USE_ERROR_LOG;
    if (o->thread_per_connection)
        flags |= MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    else if (o->threads > 0)
        flags |= MHD_USE_EPOLL_INTERNAL_THREAD;
    else
        flags |= MHD_USE_INTERNAL_POLLING_THREAD;
    if (o->suspend_resume)
        flags |= MHD_ALLOW_SUSPEND_RESUME;
    if (a.ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* Options in a table: only those the caller set are passed. */
    struct MHD_OptionItem ops[12];
    int n = 0;
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &a.ss};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                       (intptr_t)(o->timeout_s ? o->timeout_s : 10u), NULL};
    if (o->threads > 0 && !o->thread_per_connection)
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)o->threads, NULL};
    if (o->connection_limit)
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                           (intptr_t)o->connection_limit, NULL};
    if (o->memory_limit)
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                           (intptr_t)o->memory_limit, NULL};
    /* Callbacks: libmicrohttpd takes a function pointer in an option
     * array as the item's integer value (its documented convention). */
    if (o->completed)
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)o->completed,
                                           o->completed_cls};
    if (o->unescape)
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)o->unescape,
                                           o->unescape_cls};
    if (o->uri_log)
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)o->uri_log,
                                           o->uri_log_cls};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    /* MHD_OPTION_LISTENING_ADDRESS_REUSE is left out on purpose: by default
     * libmicrohttpd sets SO_REUSEADDR; 0 would clear it and 1 would add
     * SO_REUSEPORT, letting a second process share the port unnoticed. */
    h->mhd = MHD_start_daemon(flags, 0, NULL, NULL, o->handler, o->handler_cls, MHD_OPTION_ARRAY,
                              ops, MHD_OPTION_END);
    if (!h->mhd) {
        free(h);
        return orr_err_set(err, ORR_EIO, field, "cannot listen on %s", o->listen);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di && di->port ? di->port : a.port;
    *out = h;
    return ORR_OK;
}

int orr_http_port(const orr_http *h)
{
    return h ? h->port : 0;
}

void orr_http_stop(orr_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->mhd);
    free(h);
}

enum MHD_Result orr_http_reply(struct MHD_Connection *conn, unsigned status,
                               const char *content_type, const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (content_type)
        MHD_add_response_header(r, "Content-Type", content_type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}
