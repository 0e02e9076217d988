/*
 * gx_http.c - galaxyd's HTTP layer (see gx_http.h for the request steps).
 *
 * Threading: MHD runs an epoll thread pool (MHD_USE_EPOLL_INTERNAL_THREAD with
 * MHD_OPTION_THREAD_POOL_SIZE). Every callback of one connection runs on the
 * same pool thread, so a gx_req is never shared. Metrics are atomics.
 *
 * The response cache is in gx_http_cache.c, the UI's files in
 * gx_http_static.c; what the three share is in gx_http_int.h.
 */
#include "gx_http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gx_input.h"
#include "orr_alloc.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_metrics.h"

static const double gx_lat_bounds_s[GX_LAT_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                       0.025,  0.05,  0.1,    0.5,   2.5};

/* Per-connection request state, MHD's *con_cls. */
struct gx_conn {
    gx_req req;
    orr_buf body;
    int too_big;
    size_t limit;     /* body bytes allowed: max_body, or the route's spool_max */
    int spool_fd;     /* >= 0 while a spooled body is being received */
    size_t spooled;   /* bytes written to spool_fd */
    int spool_failed; /* a write to the spool failed: answer 503 at the end */
    int refused;      /* early authentication answered already: early holds it */
    gx_resp early;
    struct timespec start;
    int stats_index;
    int counted;
};

static const char gx_csp[] = "default-src 'self'; img-src 'self' data:; style-src 'self' "
                             "'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; "
                             "base-uri 'none'; form-action 'self'";

int gx_http_status(orr_status s)
{
    switch (s) {
    case ORR_OK:
        return 200;
    case ORR_EINVAL:
        return 400;
    case ORR_ENOTFOUND:
        return 404;
    case ORR_EEXIST:
    case ORR_ESTATE:
    case ORR_ECONFLICT:
        return 409;
    case ORR_EAUTH:
        return 401;
    case ORR_EPERM:
        return 403;
    case ORR_ETOOBIG:
        return 413;
    case ORR_EUNAVAIL:
        return 503;
    case ORR_ETIMEOUT:
        return 504;
    default:
        return 500;
    }
}

void gx_resp_json(gx_resp *r, int status, json_t *v)
{
    r->status = status;
    r->content_type = "application/json";
    orr_buf_reset(&r->body);
    orr_json_dump_buf(v, &r->body);
    json_decref(v);
}

void gx_resp_err(gx_resp *r, const orr_err *err)
{
    gx_resp_json(r, gx_http_status(err->code), orr_json_error_body(err));
}

void gx_resp_fail(gx_resp *r, orr_status code, const char *field, const char *fmt, ...)
{
    orr_err e;
    orr_err_set(&e, code, field, NULL);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
    va_end(ap);
    gx_resp_err(r, &e);
}

void gx_resp_header(gx_resp *r, const char *name, const char *value)
{
    if (r->nheaders < GX_MAX_HEADERS) {
        r->hname[r->nheaders] = name;
        r->hvalue[r->nheaders] = value;
        r->nheaders++;
    }
}

const char *gx_req_header(gx_req *r, const char *name)
{
    return r->conn ? MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name) : NULL;
}

const char *gx_req_query(gx_req *r, const char *name)
{
    if (r->conn)
        return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
    for (int i = 0; i < r->nqargs; i++)
        if (r->qargs[2 * i] && strcmp(r->qargs[2 * i], name) == 0)
            return r->qargs[2 * i + 1];
    return NULL;
}

const char *gx_req_cookie(gx_req *r, const char *name)
{
    return r->conn ? MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND, name) : NULL;
}

const char *gx_req_param(gx_req *r, int i)
{
    return i >= 0 && i < r->nparams ? r->params[i] : NULL;
}

static void gx_json_decref_cb(void *p)
{
    json_decref((json_t *)p);
}

json_t *gx_req_json(gx_req *r, gx_resp *resp)
{
    orr_err e;
    json_t *v = NULL;
    if (!r->body || r->body_len == 0) {
        gx_resp_fail(resp, ORR_EINVAL, "body", "a JSON object body is required");
        return NULL;
    }
    const char *ct = gx_req_header(r, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0 ||
        (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
        gx_resp_fail(resp, ORR_EINVAL, "Content-Type", "must be application/json (got %s)",
                     ct ? "another type" : "none");
        resp->status = 415;
        return NULL;
    }
    if (orr_json_parse(r->body, r->body_len, &v, &e) != ORR_OK) {
        e.field[0] = '\0';
        snprintf(e.field, sizeof(e.field), "body");
        gx_resp_err(resp, &e);
        return NULL;
    }
    orr_arena_on_cleanup(r->arena, gx_json_decref_cb, v);
    if (!json_is_object(v)) {
        gx_resp_fail(resp, ORR_EINVAL, "body", "must be a JSON object");
        return NULL;
    }
    return v;
}

int gx_req_query_int(gx_req *r, gx_resp *resp, const char *name, int64_t def, int64_t min,
                     int64_t max, int64_t *out)
{
    const char *s = gx_req_query(r, name);
    if (!s) {
        *out = def;
        return 0;
    }
    int64_t v;
    if (gx_parse_int(s, &v) != 0 || v < min || v > max) {
        gx_resp_fail(resp, ORR_EINVAL, name, "must be an integer between %lld and %lld",
                     (long long)min, (long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int gx_req_query_bool(gx_req *r, gx_resp *resp, const char *name, int def)
{
    const char *v = gx_req_query(r, name);
    if (!v)
        return def;
    if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0)
        return 1;
    if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
        return 0;
    gx_resp_fail(resp, ORR_EINVAL, name, "must be true or false (or 1 or 0)");
    return -1;
}

int gx_req_query_enum(gx_req *r, gx_resp *resp, const char *name, const char *const *allowed,
                      const char **out)
{
    const char *v = gx_req_query(r, name);
    *out = NULL;
    if (!v)
        return 0;
    for (const char *const *a = allowed; *a; a++) {
        if (strcmp(*a, v) == 0) {
            *out = *a;
            return 0;
        }
    }
    orr_buf list = {0};
    for (const char *const *a = allowed; *a; a++)
        orr_buf_appendf(&list, "%s%s", a == allowed ? "" : ", ", *a);
    gx_resp_fail(resp, ORR_EINVAL, name, "must be one of: %s", list.data ? list.data : "");
    orr_buf_free(&list);
    return -1;
}

int gx_route_match(const char *pattern, const char *path, orr_arena *a,
                   const char *params[GX_MAX_PARAMS], int *nparams)
{
    const char *p = pattern, *s = path;
    int n = 0;
    while (*p) {
        if (p[0] == '/' && p[1] == '*' && p[2] == '\0')
            return *s == '/' || *s == '\0';
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (!close)
                return 0;
            size_t len = strcspn(s, "/");
            if (len == 0 || n >= GX_MAX_PARAMS)
                return 0;
            if (params)
                params[n] = orr_arena_strndup(a, s, len);
            n++;
            s += len;
            p = close + 1;
            continue;
        }
        if (*p != *s)
            return 0;
        p++;
        s++;
    }
    if (*s != '\0')
        return 0;
    if (nparams)
        *nparams = n;
    return 1;
}

/* Path parameters by the name the pattern gives them: {id} and {version}
 * are ids (gx_parse_id), {name} a name (gx_name_ok); others are the
 * handler's. 0, or a 400 naming the parameter in resp and -1. */
static int gx_check_params(const char *pattern, const char *const *params, int n, gx_resp *resp)
{
    const char *p = pattern;
    for (int i = 0; i < n && (p = strchr(p, '{')); i++) {
        const char *end = strchr(p, '}');
        if (!end)
            break;
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(end - p - 1), p + 1);
        p = end + 1;
        int64_t id;
        if ((strcmp(name, "id") == 0 || strcmp(name, "version") == 0) &&
            gx_parse_id(params[i], &id) != 0) {
            gx_resp_fail(resp, ORR_EINVAL, name,
                         "must be an id: digits only, no sign, spaces or leading zero");
            return -1;
        }
        if (strcmp(name, "name") == 0 && !gx_name_ok(params[i])) {
            gx_resp_fail(resp, ORR_EINVAL, name,
                         "must be 1-128 characters of A-Z a-z 0-9 _ . -, starting with a letter "
                         "or digit");
            return -1;
        }
    }
    return 0;
}

static void gx_route_request(gx_server *s, struct gx_conn *c, gx_resp *resp)
{
    gx_req *req = &c->req;
    int path_matched = 0;
    orr_buf allow = {0};
    for (size_t i = 0; i < s->o.nroutes; i++) {
        const gx_route *rt = &s->o.routes[i];
        const char *params[GX_MAX_PARAMS];
        int n = 0;
        if (!gx_route_match(rt->pattern, req->path, req->arena, params, &n))
            continue;
        path_matched = 1;
        if (strcmp(rt->method, req->method) != 0) {
            if (!allow.data || !strstr(allow.data, rt->method))
                orr_buf_appendf(&allow, "%s%s", allow.len ? ", " : "", rt->method);
            continue;
        }
        orr_buf_free(&allow);
        c->stats_index = (int)i;
        req->route = rt;
        memcpy(req->params, params, sizeof(params));
        req->nparams = n;
        if (rt->min_role != GX_ROLE_NONE && s->o.auth && s->o.auth(req, resp) != 0)
            return;
        if (gx_check_params(rt->pattern, req->params, n, resp) != 0)
            return;
        rt->fn(req, resp);
        /* A write went through: what was cached before it may be stale. */
        if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
            gx_cache_invalidate(s);
            if (s->o.on_write)
                s->o.on_write(s->o.app);
        }
        return;
    }
    if (path_matched) {
        gx_resp_fail(resp, ORR_EINVAL, "method", "method %s not allowed here", req->method);
        resp->status = 405;
        gx_resp_header(resp, "Allow", orr_arena_strdup(req->arena, allow.data ? allow.data : ""));
        orr_buf_free(&allow);
        return;
    }
    orr_buf_free(&allow);
    if (strncmp(req->path, "/api/", 5) != 0 && gx_static_serve(s, req, resp)) {
        c->stats_index = (int)s->o.nroutes;
        return;
    }
    gx_resp_fail(resp, ORR_ENOTFOUND, "path", "no such resource: %s", req->path);
}

static void gx_add_common_headers(struct MHD_Response *r)
{
    MHD_add_response_header(r, "Content-Security-Policy", gx_csp);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
}

/* 1 if resp already sets header name (case-insensitive). */
static int gx_resp_has(const gx_resp *resp, const char *name)
{
    for (int i = 0; i < resp->nheaders; i++)
        if (strcasecmp(resp->hname[i], name) == 0)
            return 1;
    return 0;
}

static enum MHD_Result gx_send(struct MHD_Connection *conn, const char *path, gx_resp *resp)
{
    struct MHD_Response *r;
    if (resp->stream) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, resp->stream,
                                              resp->stream_cls, resp->stream_free);
    } else if (resp->fd >= 0) {
        r = MHD_create_response_from_fd64(resp->fd_size, resp->fd);
        resp->fd = -1; /* MHD owns it now */
    } else {
        size_t len;
        char *body = orr_buf_detach(&resp->body, &len);
        r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!r)
            free(body);
    }
    if (!r)
        return MHD_NO;
    gx_add_common_headers(r);
    if (resp->content_type)
        MHD_add_response_header(r, "Content-Type", resp->content_type);
    for (int i = 0; i < resp->nheaders; i++)
        MHD_add_response_header(r, resp->hname[i], resp->hvalue[i]);
    /* API answers carry callers' data: never stored by a browser or proxy,
     * unless the handler chose otherwise (e.g. the OpenAPI document). */
    if (path && strncmp(path, "/api/", 5) == 0 && !gx_resp_has(resp, "Cache-Control"))
        MHD_add_response_header(r, "Cache-Control", "no-store");
    if (resp->status == 401 && !gx_resp_has(resp, "WWW-Authenticate"))
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"orrery\"");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return ret;
}

static void gx_resp_init(gx_resp *resp)
{
    memset(resp, 0, sizeof(*resp));
    resp->fd = -1;
    resp->status = 500;
}

/* The route of method + path when it spools its body (*max set), else NULL. */
static const gx_route *gx_spool_route(gx_server *s, const char *method, const char *path,
                                      orr_arena *a, size_t *max)
{
    if (!s->o.spool_max)
        return NULL;
    for (size_t i = 0; i < s->o.nroutes; i++) {
        const gx_route *rt = &s->o.routes[i];
        const char *params[GX_MAX_PARAMS];
        int n = 0;
        if (strcmp(rt->method, method) == 0 && (*max = s->o.spool_max(s->o.app, rt)) > 0 &&
            gx_route_match(rt->pattern, path, a, params, &n))
            return rt;
    }
    return NULL;
}

/* An unlinked temporary file for a spooled body; -1 on failure. */
static int gx_spool_open(gx_server *s)
{
    const char *dir = s->o.spool_dir;
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/galaxyd-body-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int gx_spool_write(struct gx_conn *c, const char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = write(c->spool_fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        data += w;
        n -= (size_t)w;
        c->spooled += (size_t)w;
    }
    return 0;
}

/* Query arguments: the first that is not clean text answers 400 naming it. */
struct gx_text_check {
    gx_resp *resp;
    int bad;
};

static enum MHD_Result gx_check_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                    size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct gx_text_check *tc = cls;
    const char *why = gx_text_problem(key, key_size);
    if (why) {
        gx_resp_fail(tc->resp, ORR_EINVAL, "query", "a query parameter name holds %s", why);
        tc->bad = 1;
        return MHD_NO;
    }
    if (value && (why = gx_text_problem(value, value_size))) {
        /* The name is clean text now; it names the field. */
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(key_size < 127 ? key_size : 127), key);
        gx_resp_fail(tc->resp, ORR_EINVAL, name, "holds %s", why);
        tc->bad = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

/* 0 when the request's path and every query argument are clean text
 * (gx_text_problem); otherwise a 400 in resp and -1. */
static int gx_check_request_text(struct MHD_Connection *conn, const char *url, gx_resp *resp)
{
    const char *why = gx_text_problem(url, strlen(url));
    if (why) {
        gx_resp_fail(resp, ORR_EINVAL, "path", "the path holds %s", why);
        return -1;
    }
    struct gx_text_check tc = {resp, 0};
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, gx_check_arg, &tc);
    return tc.bad ? -1 : 0;
}

static int gx_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* MHD's unescaper for the path and query: %XX decoded; %00 becomes DEL
 * (0x7F), since a NUL would silently cut the string ("x%00" naming "x"),
 * while DEL is a control character that gx_text_problem refuses. Other
 * bytes and malformed escapes are kept as they are. */
static size_t gx_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    char *w = s;
    for (const char *r = s; *r; r++) {
        int hi, lo;
        if (r[0] == '%' && (hi = gx_hexval(r[1])) >= 0 && (lo = gx_hexval(r[2])) >= 0) {
            int c = hi * 16 + lo;
            *w++ = (char)(c == 0 ? 0x7f : c);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* Request size limits (docs/api.md, "Request limits"). libmicrohttpd parses
 * the query into its per-connection memory pool before galaxyd sees the
 * request, and a query of thousands of arguments exhausts the pool: the
 * connection then got no answer at all. So the raw request target is looked
 * at first (the URI log callback runs before that parse): an oversize one
 * has its query cut off (the string after the '?' is ended at once, so
 * nothing is parsed) and is marked, and gx_access answers it 414 in JSON. The pool
 * (GX_MHD_POOL) is sized so that requests within the limits always fit;
 * headers beyond the pool are refused by libmicrohttpd itself with 431. */
#define GX_MAX_TARGET        8192 /* bytes of path and query */
#define GX_MAX_ARGS          256  /* query arguments */
#define GX_MAX_HEADERS_BYTES (16 * 1024)
#define GX_MAX_HEADER_COUNT  100
#define GX_MHD_POOL          (128 * 1024)

static char gx_oversize_mark; /* con_cls of a request whose target was cut */

static void *gx_uri_seen(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    size_t len = strlen(uri), args = 0;
    const char *q = strchr(uri, '?');
    for (const char *p = q; p && *p; p++)
        args += *p == '&' || *p == '?';
    if (len <= GX_MAX_TARGET && args <= GX_MAX_ARGS)
        return NULL;
    /* The buffer is libmicrohttpd's own read buffer, writable; it is handed
     * over as const only by the callback's type. libmicrohttpd has found the
     * '?' already and parses the C string after it: end that string. */
    if (q)
        ((char *)q)[1] = '\0';
    return &gx_oversize_mark;
}

/* 0 when the headers are within the limits, else a 431 in resp and -1. */
struct gx_hdr_count {
    size_t bytes, n;
};

static enum MHD_Result gx_count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                       size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)key;
    (void)value;
    struct gx_hdr_count *hc = cls;
    hc->n++;
    hc->bytes += key_size + value_size + 4;
    return MHD_YES;
}

static int gx_check_headers(struct MHD_Connection *conn, gx_resp *resp)
{
    struct gx_hdr_count hc = {0, 0};
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, gx_count_header, &hc);
    if (hc.n <= GX_MAX_HEADER_COUNT && hc.bytes <= GX_MAX_HEADERS_BYTES)
        return 0;
    gx_resp_fail(resp, ORR_ETOOBIG, "headers",
                 "request headers too large: at most %d headers and %d bytes", GX_MAX_HEADER_COUNT,
                 GX_MAX_HEADERS_BYTES);
    resp->status = 431;
    return -1;
}

static enum MHD_Result gx_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    (void)version;
    gx_server *s = cls;
    struct gx_conn *c = *con_cls;
    int oversize = *con_cls == (void *)&gx_oversize_mark;
    if (oversize)
        c = NULL;
    if (!c) {
        c = calloc(1, sizeof(*c));
        if (!c)
            return MHD_NO;
        clock_gettime(CLOCK_MONOTONIC, &c->start);
        c->req.arena = orr_arena_create(0);
        c->req.conn = conn;
        c->req.method = orr_arena_strdup(c->req.arena, method);
        c->req.path = orr_arena_strdup(c->req.arena, url);
        c->req.app = s->o.app;
        c->req.server = s;
        c->stats_index = (int)s->o.nroutes + 1;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        char addr[INET6_ADDRSTRLEN] = "unknown";
        if (ci && ci->client_addr) {
            const struct sockaddr *sa = ci->client_addr;
            if (sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof(addr));
            else if (sa->sa_family == AF_INET6)
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr,
                          sizeof(addr));
        }
        c->req.peer = orr_arena_strdup(c->req.arena, addr);
        char client[INET6_ADDRSTRLEN];
        gx_client_addr(addr, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-For"),
                       s->o.trusted_proxies, client, sizeof client);
        c->req.client = orr_arena_strdup(c->req.arena, client);
        c->spool_fd = -1;
        c->req.body_fd = -1;
        c->limit = s->o.max_body;
        gx_resp_init(&c->early);
        if (oversize) {
            gx_resp_fail(&c->early, ORR_ETOOBIG, "path",
                         "request target too long: at most %d bytes and %d query arguments",
                         GX_MAX_TARGET, GX_MAX_ARGS);
            c->early.status = 414;
        }
        /* Sizes, then path and query text, are checked before any handler
         * sees the request: the body (if any) is drained and the 4xx sent
         * at the end. */
        if (oversize || gx_check_headers(conn, &c->early) != 0 ||
            gx_check_request_text(conn, url, &c->early) != 0) {
            c->refused = 1;
            atomic_fetch_add(&s->in_flight, 1);
            c->counted = 1;
            *con_cls = c;
            return MHD_YES;
        }
        size_t spool_max = 0;
        const gx_route *sp = gx_spool_route(s, method, url, c->req.arena, &spool_max);
        if (sp) {
            c->limit = spool_max;
            /* Nobody stores a byte before they are known: authenticate now. */
            if (sp->min_role != GX_ROLE_NONE && s->o.auth) {
                c->req.route = sp;
                if (s->o.auth(&c->req, &c->early) != 0)
                    c->refused = 1;
            }
            if (!c->refused && (c->spool_fd = gx_spool_open(s)) < 0)
                c->spool_failed = 1;
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > c->limit)
            c->too_big = 1;
        atomic_fetch_add(&s->in_flight, 1);
        c->counted = 1;
        *con_cls = c;
        return MHD_YES;
    }
    if (*upload_data_size) {
        /* Drain without storing once the limit is passed, the caller was
         * refused or the spool failed; answer at the end. */
        size_t have = c->spool_fd >= 0 ? c->spooled : c->body.len;
        if (!c->too_big && have + *upload_data_size > c->limit)
            c->too_big = 1;
        if (c->too_big || c->refused || c->spool_failed) {
            /* nothing kept */
        } else if (c->spool_fd >= 0) {
            if (gx_spool_write(c, upload_data, *upload_data_size) != 0)
                c->spool_failed = 1;
        } else {
            orr_buf_append(&c->body, upload_data, *upload_data_size);
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    gx_resp resp;
    gx_resp_init(&resp);
    if (c->refused) {
        resp = c->early;
        gx_resp_init(&c->early);
    } else if (c->too_big) {
        gx_resp_fail(&resp, ORR_ETOOBIG, "body", "request body larger than %zu bytes", c->limit);
    } else if (c->spool_failed) {
        gx_resp_fail(&resp, ORR_EUNAVAIL, "body", "cannot store the request body: %s",
                     strerror(errno));
    } else if (c->spool_fd >= 0) {
        c->req.body_spooled = 1;
        c->req.body_fd = c->spool_fd;
        c->req.body_len = c->spooled;
        if (lseek(c->spool_fd, 0, SEEK_SET) != 0) {
            gx_resp_fail(&resp, ORR_EUNAVAIL, "body", "cannot read the request body back");
        } else {
            gx_route_request(s, c, &resp);
        }
    } else {
        if (c->body.len) {
            c->req.body = orr_arena_strndup(c->req.arena, c->body.data, c->body.len);
            c->req.body_len = c->body.len;
        }
        orr_buf_free(&c->body);
        gx_route_request(s, c, &resp);
    }
    enum MHD_Result ret = gx_send(conn, c->req.path, &resp);
    if (resp.fd >= 0)
        close(resp.fd);
    orr_buf_free(&resp.body);
    int cls_idx = resp.status / 100;
    if (cls_idx >= 1 && cls_idx <= 5)
        atomic_fetch_add(&s->stats[c->stats_index].by_class[cls_idx], 1);
    return ret;
}

static void gx_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    (void)toe;
    gx_server *s = cls;
    struct gx_conn *c = *con_cls;
    if (!c || *con_cls == (void *)&gx_oversize_mark) /* never reached gx_access */
        return;
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    double secs =
        (double)(end.tv_sec - c->start.tv_sec) + (double)(end.tv_nsec - c->start.tv_nsec) / 1e9;
    struct gx_route_stats *st = &s->stats[c->stats_index];
    int b = 0;
    while (b < GX_LAT_BUCKETS && secs > gx_lat_bounds_s[b])
        b++;
    atomic_fetch_add(&st->lat[b], 1);
    atomic_fetch_add(&st->lat_sum_us, (uint64_t)(secs * 1e6));
    if (c->counted)
        atomic_fetch_sub(&s->in_flight, 1);
    orr_buf_free(&c->body);
    if (c->spool_fd >= 0)
        close(c->spool_fd);
    orr_buf_free(&c->early.body);
    orr_arena_destroy(c->req.arena);
    free(c);
    *con_cls = NULL;
}

orr_status gx_server_start(const gx_server_opts *o, gx_server **out, orr_err *err)
{
    gx_server *s = orr_xcalloc(1, sizeof(*s));
    s->o = *o;
    if (s->o.threads <= 0)
        s->o.threads = 4;
    if (!s->o.max_body)
        s->o.max_body = 1 << 20;
    if (s->o.cache_ttl_ms == 0)
        s->o.cache_ttl_ms = GX_CACHE_TTL_MS;
    if (!s->o.cache_max_entry)
        s->o.cache_max_entry = GX_CACHE_MAX_ENTRY;
    gx_cache_init(s);
    s->stats = orr_xcalloc(o->nroutes + 2, sizeof(*s->stats));
    orr_http_opts ho = {
        .listen = o->listen,
        .field = "galaxy.listen",
        .handler = gx_access,
        .handler_cls = s,
        .threads = (unsigned)s->o.threads,
        .suspend_resume = 1,
        .timeout_s = 120,
        .memory_limit = GX_MHD_POOL,
        .completed = gx_completed,
        .completed_cls = s,
        .unescape = gx_unescape,
        .uri_log = gx_uri_seen,
    };
    orr_status rc = orr_http_start(&ho, &s->http, err);
    if (rc != ORR_OK) {
        gx_cache_destroy(s);
        free(s->stats);
        free(s);
        return rc;
    }
    s->port = orr_http_port(s->http);
    gx_cache_start(s);
    *out = s;
    return ORR_OK;
}

int gx_server_port(const gx_server *s)
{
    return s->port;
}

void gx_server_stop(gx_server *s)
{
    if (!s)
        return;
    orr_http_stop(s->http);
    gx_cache_destroy(s);
    free(s->stats);
    free(s);
}

void gx_server_resume(struct MHD_Connection *conn)
{
    MHD_resume_connection(conn);
}

/* One metric family at a time: Prometheus wants each family's lines together. */
static void gx_metrics_counts(orr_metrics_writer *w, const char *method, const char *pattern,
                              struct gx_route_stats *st)
{
    for (int k = 1; k <= 5; k++) {
        uint64_t n = atomic_load(&st->by_class[k]);
        char code[8];
        snprintf(code, sizeof code, "%dxx", k);
        if (n)
            orr_metrics_sample(
                w, (const char *const[]){"method", method, "route", pattern, "code", code, NULL},
                (double)n);
    }
}

static void gx_metrics_latency(orr_metrics_writer *w, const char *method, const char *pattern,
                               struct gx_route_stats *st)
{
    uint64_t counts[GX_LAT_BUCKETS + 1];
    for (int b = 0; b <= GX_LAT_BUCKETS; b++)
        counts[b] = atomic_load(&st->lat[b]);
    orr_metrics_histogram_sample(w, (const char *const[]){"method", method, "route", pattern, NULL},
                                 gx_lat_bounds_s, counts, GX_LAT_BUCKETS,
                                 (double)atomic_load(&st->lat_sum_us) / 1e6);
}

void gx_server_metrics(gx_server *s, orr_buf *out)
{
    size_t n = s->o.nroutes;
    orr_metrics_writer w;
    orr_metrics_writer_init(&w, out);
    orr_metrics_family(&w, "galaxy_http_requests_total", ORR_METRIC_COUNTER,
                       "HTTP requests by route and status class.");
    for (size_t i = 0; i < n; i++)
        gx_metrics_counts(&w, s->o.routes[i].method, s->o.routes[i].pattern, &s->stats[i]);
    gx_metrics_counts(&w, "GET", "static", &s->stats[n]);
    gx_metrics_counts(&w, "ANY", "unmatched", &s->stats[n + 1]);
    orr_metrics_family(&w, "galaxy_http_request_seconds", ORR_METRIC_HISTOGRAM,
                       "HTTP request latency.");
    for (size_t i = 0; i < n; i++)
        gx_metrics_latency(&w, s->o.routes[i].method, s->o.routes[i].pattern, &s->stats[i]);
    gx_metrics_latency(&w, "GET", "static", &s->stats[n]);
    gx_metrics_latency(&w, "ANY", "unmatched", &s->stats[n + 1]);
    orr_metrics_family(&w, "galaxy_http_in_flight", ORR_METRIC_GAUGE, "Requests being served.");
    orr_metrics_sample(&w, NULL, atomic_load(&s->in_flight));
    gx_cache_stats cs;
    gx_cache_get_stats(s, &cs);
    orr_metrics_family(&w, "galaxy_http_cache_total", ORR_METRIC_COUNTER,
                       "Response cache lookups and changes.");
    static const char *const events[] = {"hit", "miss", "store", "invalidate", "refresh"};
    const uint64_t values[] = {cs.hits, cs.misses, cs.stores, cs.invalidations, cs.refreshes};
    for (int i = 0; i < 5; i++)
        orr_metrics_sample(&w, (const char *const[]){"event", events[i], NULL}, (double)values[i]);
    orr_metrics_family(&w, "galaxy_http_cache_synced", ORR_METRIC_GAUGE,
                       "1 while halleyd's event stream keeps the response cache in step.");
    orr_metrics_sample(&w, NULL, atomic_load(&s->cache_synced));
}
