/*
 * ex_logsrv.c - the live log server (contract in ex_logsrv.h).
 *
 * A plain read is a response from the file descriptor at the offset. A
 * follow is a response from a content callback of unknown size: the
 * callback reads what is there; when it is at the end of the file it sleeps
 * in 150 ms steps until more arrives, the attempt ends (then it reads the
 * tail once more and ends the stream) or the server stops. It never returns
 * 0 bytes, so nothing spins.
 */
#include "ex_logsrv.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_cgroup.h"
#include "ex_logcap.h"
#include "orr_alloc.h"
#include "orr_http.h"
#include "orr_log.h"
#include "orr_logidx.h"

#define EX_LOG_MAX_ACTIVE 1024
#define EX_LINES_SPAN     (4LL * 1024 * 1024)

typedef struct ex_active {
    int64_t instance;
    int attempt;
} ex_active;

struct ex_logsrv {
    orr_http *http;
    char token[256];
    char log_dir[512];
    atomic_int stopping;
    pthread_mutex_t mu;
    ex_active active[EX_LOG_MAX_ACTIVE];
    int n_active;
    ex_logsrv_post_fn post;
    void *post_arg;
};

/* The body of a POST being received (con_cls of its connection). */
typedef struct ex_post {
    orr_buf body;
    int too_big;
} ex_post;

void ex_logsrv_mount(ex_logsrv *s, ex_logsrv_post_fn fn, void *arg)
{
    s->post = fn;
    s->post_arg = arg;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    (void)toe;
    if (*con_cls && *con_cls != cls) {
        ex_post *p = *con_cls;
        if (p->body.data)
            explicit_bzero(p->body.data, p->body.cap);
        orr_buf_free(&p->body);
        free(p);
    }
    *con_cls = NULL;
}

/* One follow response. */
typedef struct ex_follow {
    ex_logsrv *srv;
    int fd;
    uint64_t base; /* the requested offset: MHD counts positions from 0 */
    int64_t instance;
    int attempt;
    int ended; /* the attempt ended and the tail was read once after that */
} ex_follow;

char *ex_log_path(char *buf, size_t n, const char *log_dir, int64_t instance, int attempt)
{
    snprintf(buf, n, "%s/%lld-%d.log", log_dir, (long long)instance, attempt);
    return buf;
}

static int is_active(ex_logsrv *s, int64_t instance, int attempt)
{
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_active && !found; i++)
        found = s->active[i].instance == instance && s->active[i].attempt == attempt;
    pthread_mutex_unlock(&s->mu);
    return found;
}

void ex_logsrv_begin(ex_logsrv *s, int64_t instance, int attempt)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->n_active < EX_LOG_MAX_ACTIVE)
        s->active[s->n_active++] = (ex_active){instance, attempt};
    pthread_mutex_unlock(&s->mu);
}

void ex_logsrv_end(ex_logsrv *s, int64_t instance, int attempt)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_active; i++)
        if (s->active[i].instance == instance && s->active[i].attempt == attempt) {
            s->active[i] = s->active[--s->n_active];
            break;
        }
    pthread_mutex_unlock(&s->mu);
}

static ssize_t follow_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    ex_follow *f = cls;
    for (;;) {
        ssize_t r = pread(f->fd, buf, max, (off_t)(f->base + pos));
        if (r > 0)
            return r;
        if (r < 0 && errno != EINTR)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (r < 0)
            continue;
        if (f->ended || atomic_load(&f->srv->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (!is_active(f->srv, f->instance, f->attempt)) {
            f->ended = 1; /* read the tail once more: it may have grown meanwhile */
            continue;
        }
        ex_sleep_ms(150);
    }
}

static void follow_free(void *cls)
{
    ex_follow *f = cls;
    close(f->fd);
    free(f);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Parse a plain decimal integer of at most 18 digits (the whole string). */
static int parse_int(const char *s, size_t len, int64_t *out)
{
    if (len == 0 || len > 18)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static orr_status idx_read(void *ud, uint64_t first, size_t count, orr_logidx_rec *out,
                           orr_err *err)
{
    (void)err;
    int fd = *(int *)ud;
    unsigned char raw[ORR_LOGIDX_REC];
    for (size_t i = 0; i < count; i++) {
        if (pread(fd, raw, sizeof raw, (off_t)((first + i) * ORR_LOGIDX_REC)) !=
            (ssize_t)sizeof raw)
            return ORR_EIO;
        orr_logidx_decode(raw, &out[i]);
    }
    return ORR_OK;
}

/* The index records of the lines overlapping bytes [from, to) of the log:
 * the line holding from, then every line starting before to. */
static enum MHD_Result reply_lines(struct MHD_Connection *conn, const char *log_path, int64_t from,
                                   int64_t to)
{
    char path[760];
    ex_log_index_path(path, sizeof path, log_path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    /* No index beside a log: no line yet (the first line makes it). */
    if (fd < 0 && (errno != ENOENT || access(log_path, F_OK) != 0))
        return reply(conn, 404, "no such log index\n");
    struct stat st;
    uint64_t nrec = fd >= 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_size / ORR_LOGIDX_REC : 0;
    uint64_t k = 0;
    orr_err err;
    orr_buf out = ORR_BUF_INIT;
    orr_status rc = orr_logidx_find(idx_read, &fd, nrec, (uint64_t)from, &k, &err);
    if (rc == ORR_ENOTFOUND)
        k = nrec;
    else if (rc != ORR_OK) {
        if (fd >= 0)
            close(fd);
        return reply(conn, 500, "cannot read the log index\n");
    }
    uint64_t first = k;
    for (; k < nrec; k++) {
        orr_logidx_rec r;
        if (idx_read(&fd, k, 1, &r, &err) != ORR_OK || (k > first && r.offset >= (uint64_t)to))
            break;
        unsigned char raw[ORR_LOGIDX_REC];
        orr_logidx_encode(&r, raw);
        orr_buf_append(&out, raw, sizeof raw);
    }
    if (fd >= 0)
        close(fd);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(out.len, out.len ? out.data : (void *)"",
                                        out.len ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    orr_buf_free(&out);
    if (!resp)
        return MHD_NO;
    char line[32];
    snprintf(line, sizeof line, "%llu", (unsigned long long)first + 1);
    MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
    MHD_add_response_header(resp, "X-Orrery-First-Line", line);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(conn, 200, resp);
    MHD_destroy_response(resp);
    return ret;
}

static int token_ok(const ex_logsrv *s, const char *auth)
{
    if (!auth || strncmp(auth, "Bearer ", 7) != 0)
        return 0;
    const char *got = auth + 7;
    size_t a = strlen(got), b = strlen(s->token);
    unsigned char diff = (unsigned char)(a != b);
    for (size_t i = 0; i < b; i++)
        diff |= (unsigned char)(s->token[i] ^ (i < a ? got[i] : 0));
    return diff == 0;
}

/* POST /v1/<op>: collect the body, then hand it to the mounted handler. */
static enum MHD_Result on_post(ex_logsrv *s, struct MHD_Connection *conn, const char *url,
                               const char *upload, size_t *upload_size, ex_post *p)
{
    if (*upload_size != 0) {
        if (p->body.len + *upload_size > EX_POST_MAX)
            p->too_big = 1;
        else
            orr_buf_append(&p->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (!token_ok(s, auth))
        return reply(conn, 401, "missing or wrong bearer token\n");
    if (!s->post)
        return reply(conn, 404, "not found\n");
    if (p->too_big)
        return reply(conn, 413, "body larger than 1 MiB\n");
    orr_buf out = ORR_BUF_INIT;
    unsigned status = s->post(s->post_arg, url + 4, orr_buf_cstr(&p->body), p->body.len, &out);
    enum MHD_Result ret =
        orr_http_reply(conn, status, "application/json", orr_buf_cstr(&out), out.len);
    if (out.data)
        explicit_bzero(out.data, out.cap);
    orr_buf_free(&out);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    ex_logsrv *s = cls;
    if (*con_cls == NULL) { /* first call: headers only */
        if (strcmp(method, "POST") == 0 && strncmp(url, "/v1/", 4) == 0)
            *con_cls = orr_xcalloc(1, sizeof(ex_post));
        else
            *con_cls = s;
        return MHD_YES;
    }
    if (*con_cls != s)
        return on_post(s, conn, url, upload, upload_size, *con_cls);
    if (*upload_size != 0) {
        *upload_size = 0; /* drain and ignore a body */
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0)
        return reply(conn, 405, "only GET\n");
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (!token_ok(s, auth))
        return reply(conn, 401, "missing or wrong bearer token\n");

    int64_t instance, attempt, offset = 0;
    const char *p = url;
    if (strncmp(p, "/logs/", 6) != 0)
        return reply(conn, 404, "not found\n");
    p += 6;
    const char *slash = strchr(p, '/');
    const char *tail = slash ? strchr(slash + 1, '/') : NULL;
    int lines = tail && strcmp(tail, "/lines") == 0;
    size_t alen = slash ? (tail ? (size_t)(tail - slash - 1) : strlen(slash + 1)) : 0;
    if (!slash || (tail && !lines) || parse_int(p, (size_t)(slash - p), &instance) != 0 ||
        parse_int(slash + 1, alen, &attempt) != 0 || attempt > 1000000000)
        return reply(conn, 400, "path must be /logs/<instance id>/<attempt>[/lines], integers\n");
    if (lines) {
        const char *f = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "from");
        const char *t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "to");
        int64_t from = 0, to = 0;
        if (!f || parse_int(f, strlen(f), &from) != 0)
            return reply(conn, 400, "from: must be a non-negative integer\n");
        if (!t || parse_int(t, strlen(t), &to) != 0 || to < from || to - from > EX_LINES_SPAN)
            return reply(conn, 400, "to: must be an integer from `from` to from + 4 MiB\n");
        char lp[700];
        return reply_lines(conn, ex_log_path(lp, sizeof lp, s->log_dir, instance, (int)attempt),
                           from, to);
    }
    const char *off = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "offset");
    if (off && parse_int(off, strlen(off), &offset) != 0)
        return reply(conn, 400, "offset: must be a non-negative integer\n");
    const char *fol = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "follow");
    if (fol && strcmp(fol, "0") != 0 && strcmp(fol, "1") != 0)
        return reply(conn, 400, "follow: must be 0 or 1\n");
    int follow = fol && strcmp(fol, "1") == 0;

    char path[700];
    ex_log_path(path, sizeof path, s->log_dir, instance, (int)attempt);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return reply(conn, 404, "no such log\n");
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return reply(conn, 500, "cannot stat the log\n");
    }
    struct MHD_Response *r;
    if (!follow) {
        uint64_t size = (uint64_t)st.st_size;
        uint64_t from = (uint64_t)offset < size ? (uint64_t)offset : size;
        r = MHD_create_response_from_fd_at_offset64(size - from, fd, from);
        if (!r)
            close(fd);
    } else {
        ex_follow *f = calloc(1, sizeof *f);
        if (!f) {
            close(fd);
            return MHD_NO;
        }
        *f = (ex_follow){s, fd, (uint64_t)offset, instance, (int)attempt, 0};
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, follow_read, f,
                                              follow_free);
        if (!r)
            follow_free(f);
    }
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ret;
}

orr_status ex_logsrv_start(const char *listen, const char *token, const char *log_dir,
                           ex_logsrv **out, orr_err *err)
{
    if (!token || !*token)
        return orr_err_set(err, ORR_EINVAL, "executor.log_token", "must be set");
    if (strlen(token) >= 256)
        return orr_err_set(err, ORR_EINVAL, "executor.log_token", "longer than 255 bytes");
    ex_logsrv *s = orr_xcalloc(1, sizeof *s);
    snprintf(s->token, sizeof s->token, "%s", token);
    snprintf(s->log_dir, sizeof s->log_dir, "%s", log_dir);
    pthread_mutex_init(&s->mu, NULL);
    orr_http_opts ho = {
        .listen = listen,
        .field = "executor.listen",
        .handler = on_request,
        .handler_cls = s,
        .thread_per_connection = 1,
        .connection_limit = 64,
        .timeout_s = 60,
        .completed = on_completed,
        .completed_cls = s,
    };
    orr_status rc = orr_http_start(&ho, &s->http, err);
    if (rc != ORR_OK) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return rc;
    }
    *out = s;
    return ORR_OK;
}

int ex_logsrv_port(const ex_logsrv *s)
{
    return orr_http_port(s->http);
}

void ex_logsrv_stop(ex_logsrv *s)
{
    if (!s)
        return;
    atomic_store(&s->stopping, 1);
    orr_http_stop(s->http);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
