/*
 * ex_datasrv.c - data metadata and the transfer preview, answered where the
 * worker token lives (mounted on the log server, same bearer token):
 *
 *   POST /v1/meta     {"datasource": "name", "what": "tables"|"table",
 *                      "table": "schema.name"}
 *   POST /v1/preview  {"config": <transfer job>, "rows": 1..20}
 *
 * Each request resolves its data sources with the worker token
 * (GetDataSourceSecret, through the hooks the transfer runner uses) into
 * dsn strings, and runs `<bin dir>/wormhole meta -` (or `preview -`) with
 * the job written to the child's stdin through a pipe: the password is
 * never on a command line, in the environment or in a file, and every
 * buffer that held it is wiped before the call returns. The child runs as
 * executord's user in its own process group, with 30 s to answer and at
 * most 8 MiB of output; then it is killed.
 *
 * The answer is what wormhole printed: 200 with its JSON, 400 for a bad
 * request or job (naming the field), 404 for an unknown data source or
 * table, 502 when the database could not be read, 503 when this executor
 * cannot read data sources (no worker token), 504 on timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "orr_json.h"
#include "orr_log.h"

#define EX_DATA_TIMEOUT_MS 30000
#define EX_DATA_OUT_MAX    (8u * 1024 * 1024)

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run bin with argv, feeding in on stdin, collecting stdout into out.
 * *exit_code: the exit status, -1 when killed. ORR_ETIMEOUT past the
 * deadline, ORR_EIO when it cannot start. */
static orr_status run_child(char *const argv[], const char *in, size_t in_len, orr_buf *out,
                            int *exit_code, orr_err *err)
{
    int pin[2] = {-1, -1}, pout[2] = {-1, -1};
    if (pipe2(pin, O_CLOEXEC) != 0 || pipe2(pout, O_CLOEXEC) != 0) {
        if (pin[0] >= 0) {
            close(pin[0]);
            close(pin[1]);
        }
        return orr_err_set(err, ORR_EIO, "executor", "pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(pin[0]);
        close(pin[1]);
        close(pout[0]);
        close(pout[1]);
        return orr_err_set(err, ORR_EIO, "executor", "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_WRONLY);
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        if (null >= 0)
            dup2(null, 2);
        signal(SIGPIPE, SIG_DFL);
        execv(argv[0], argv);
        _exit(127);
    }
    setpgid(pid, pid);
    close(pin[0]);
    close(pout[1]);
    fcntl(pin[1], F_SETFL, O_NONBLOCK);
    size_t sent = 0;
    int wfd = pin[1], rfd = pout[0];
    if (in_len == 0) {
        close(wfd);
        wfd = -1;
    }
    orr_status rc = ORR_OK;
    int64_t deadline = mono_ms() + EX_DATA_TIMEOUT_MS;
    char chunk[16384];
    while (rfd >= 0) {
        int64_t left = deadline - mono_ms();
        if (left <= 0) {
            rc = orr_err_set(err, ORR_ETIMEOUT, "executor", "no answer within %d s",
                             EX_DATA_TIMEOUT_MS / 1000);
            break;
        }
        struct pollfd pf[2] = {{rfd, POLLIN, 0}, {wfd, POLLOUT, 0}};
        int n = poll(pf, wfd >= 0 ? 2 : 1, (int)left);
        if (n < 0 && errno != EINTR) {
            rc = orr_err_set(err, ORR_EIO, "executor", "poll: %s", strerror(errno));
            break;
        }
        if (n <= 0)
            continue;
        if (wfd >= 0 && pf[1].revents) {
            ssize_t w = write(wfd, in + sent, in_len - sent);
            if (w > 0)
                sent += (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == in_len) {
                close(wfd);
                wfd = -1;
            }
        }
        if (pf[0].revents) {
            ssize_t r = read(rfd, chunk, sizeof chunk);
            if (r > 0) {
                if (out->len + (size_t)r > EX_DATA_OUT_MAX) {
                    rc = orr_err_set(err, ORR_ETOOBIG, "executor", "answer larger than 8 MiB");
                    break;
                }
                orr_buf_append(out, chunk, (size_t)r);
            } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                close(rfd);
                rfd = -1;
            }
        }
    }
    if (wfd >= 0)
        close(wfd);
    if (rfd >= 0)
        close(rfd);
    if (rc != ORR_OK)
        kill(-pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return rc;
}

/* Answer {"error": ...} for err with the HTTP status of its code. */
static unsigned fail(orr_buf *out, const orr_err *err)
{
    json_t *b = orr_json_error_body(err);
    orr_json_dump_buf(b, out);
    json_decref(b);
    switch (err->code) {
    case ORR_EINVAL:
        return 400;
    case ORR_ENOTFOUND:
        return 404;
    case ORR_EPERM:
    case ORR_EUNAVAIL:
        return 503;
    case ORR_ETIMEOUT:
        return 504;
    default:
        return 502;
    }
}

static void wipe_str(void *p)
{
    explicit_bzero(p, strlen(p));
}

/* The worker-token hook, with the clear password it copies into the
 * request's arena wiped when the arena goes. */
static orr_status hook_datasource_wiped(void *arg, orr_arena *a, const char *name,
                                        ex_datasource *out, orr_err *err)
{
    ex_xfer *x = arg;
    orr_status s = x->hooks.datasource(x->hooks.arg, a, name, out, err);
    if (s == ORR_OK && out->secret && out->secret[0])
        orr_arena_on_cleanup(a, wipe_str, (void *)out->secret);
    return s;
}

/* Resolve the data source of endpoint ep (at path) through the worker
 * token: ep gains its dsn. */
static orr_status resolve(ex_daemon *d, orr_arena *a, json_t *ep, const char *path, int infer,
                          orr_err *err)
{
    ex_xfer x;
    ex_xfer_init(&x, d, 0, 0, 0);
    ex_run_hooks hooks = {.arg = &x, .datasource = hook_datasource_wiped};
    ex_run_ctx ctx = {.arena = a, .hooks = &hooks, .bin_dir = d->bin_dir};
    int n = 0;
    return ex_transfer_resolve_typed(&ctx, ep, path, infer, &n, err);
}

/* Wipe the dsn (with its password) an endpoint was given, before the JSON
 * holding it is freed. */
static void wipe_dsn(json_t *ep)
{
    json_t *v = json_object_get(ep, "dsn");
    if (json_is_string(v))
        explicit_bzero((char *)json_string_value(v), json_string_length(v));
}

/* Run `wormhole <cmd> -` with job on stdin; the job text is wiped. */
static unsigned run_wormhole(ex_daemon *d, const char *cmd, json_t *job, orr_buf *out)
{
    orr_err err;
    orr_err_clear(&err);
    char bin[EX_PATH + 16];
    snprintf(bin, sizeof bin, "%s/wormhole", d->bin_dir);
    if (access(bin, X_OK) != 0) {
        orr_err_set(&err, ORR_EUNAVAIL, "executor",
                    "the transfer engine is not installed on this executor");
        return fail(out, &err);
    }
    orr_buf text = ORR_BUF_INIT;
    orr_json_dump_buf(job, &text);
    char *argv[] = {bin, (char *)cmd, "-", NULL};
    int code = 0;
    int64_t t0 = mono_ms();
    orr_status rc = run_child(argv, text.data, text.len, out, &code, &err);
    explicit_bzero(text.data, text.cap);
    orr_buf_free(&text);
    ORR_INFO("wormhole answered", "cmd=%s exit=%d ms=%lld bytes=%zu", cmd, code,
             (long long)(mono_ms() - t0), out->len);
    if (rc != ORR_OK) {
        orr_buf_reset(out);
        return fail(out, &err);
    }
    /* wormhole printed its answer or its error object. */
    switch (code) {
    case 0:
        return 200;
    case 2:
        return 400;
    case 3:
        return 404;
    default:
        if (!out->len) {
            orr_err_set(&err, ORR_EIO, "executor", "wormhole %s exited with %d", cmd, code);
            return fail(out, &err);
        }
        return 502;
    }
}

static unsigned do_meta(ex_daemon *d, orr_arena *a, json_t *req, orr_buf *out)
{
    orr_err err;
    orr_err_clear(&err);
    const char *ds = NULL, *what = NULL, *table = NULL;
    if (orr_json_get_str(req, "", "datasource", 1, &ds, &err) ||
        orr_json_get_str(req, "", "what", 1, &what, &err) ||
        orr_json_get_str(req, "", "table", 0, &table, &err))
        return fail(out, &err);
    int is_table = strcmp(what, "table") == 0;
    if (!is_table && strcmp(what, "tables") != 0) {
        orr_err_set(&err, ORR_EINVAL, "what", "must be \"tables\" or \"table\"");
        return fail(out, &err);
    }
    if (is_table != (table != NULL && table[0])) {
        orr_err_set(&err, ORR_EINVAL, "table",
                    is_table ? "is required with what \"table\"" : "is only for what \"table\"");
        return fail(out, &err);
    }
    json_t *src = json_pack("{s:s}", "datasource", ds);
    json_t *job = json_pack("{s:o, s:s}", "source", src, "what", what);
    if (table)
        json_object_set_new(job, "table", json_string(table));
    unsigned status;
    if (resolve(d, a, src, "", 1, &err) != ORR_OK) {
        if (err.field[0] == '.')
            memmove(err.field, err.field + 1, strlen(err.field));
        status = fail(out, &err);
    } else {
        status = run_wormhole(d, "meta", job, out);
    }
    wipe_dsn(src);
    json_decref(job);
    return status;
}

static unsigned do_preview(ex_daemon *d, orr_arena *a, json_t *req, orr_buf *out)
{
    orr_err err;
    orr_err_clear(&err);
    json_t *cfg = json_object_get(req, "config");
    json_t *rows = json_object_get(req, "rows");
    if (!json_is_object(cfg)) {
        orr_err_set(&err, ORR_EINVAL, "config", "must be the transfer job (an object)");
        return fail(out, &err);
    }
    if (rows &&
        (!json_is_integer(rows) || json_integer_value(rows) < 1 || json_integer_value(rows) > 20)) {
        orr_err_set(&err, ORR_EINVAL, "rows", "must be an integer from 1 to 20");
        return fail(out, &err);
    }
    json_t *job = json_deep_copy(cfg);
    json_t *w = json_object_get(job, "writers");
    /* Only the first writer is previewed: the others' data sources are
     * not even resolved. */
    while (json_is_array(w) && json_array_size(w) > 1)
        json_array_remove(w, json_array_size(w) - 1);
    json_t *wrapped = json_pack("{s:o, s:I}", "config", job, "rows",
                                (json_int_t)(rows ? json_integer_value(rows) : 20));
    orr_status s = ORR_OK;
    json_t *reader = json_object_get(job, "reader");
    if (json_is_object(reader))
        s = resolve(d, a, reader, "config.reader", 0, &err);
    json_t *w0 = json_is_array(w) ? json_array_get(w, 0) : NULL;
    if (s == ORR_OK && json_is_object(w0))
        s = resolve(d, a, w0, "config.writers[0]", 0, &err);
    unsigned status = s == ORR_OK ? run_wormhole(d, "preview", wrapped, out) : fail(out, &err);
    wipe_dsn(reader);
    if (json_is_object(w0))
        wipe_dsn(w0);
    json_decref(wrapped);
    return status;
}

static unsigned datasrv_post(void *arg, const char *op, const char *body, size_t len, orr_buf *out)
{
    ex_daemon *d = arg;
    orr_err err;
    orr_err_clear(&err);
    json_t *req = NULL;
    if (orr_json_parse(body, len, &req, &err) != ORR_OK || !json_is_object(req)) {
        json_decref(req);
        orr_err_set(&err, ORR_EINVAL, "body", "must be a JSON object");
        return fail(out, &err);
    }
    orr_arena *a = orr_arena_create(4096);
    unsigned status;
    if (strcmp(op, "meta") == 0) {
        status = do_meta(d, a, req, out);
    } else if (strcmp(op, "preview") == 0) {
        status = do_preview(d, a, req, out);
    } else {
        orr_err_set(&err, ORR_ENOTFOUND, "path", "no such operation /v1/%.40s", op);
        status = fail(out, &err);
    }
    orr_arena_destroy(a);
    json_decref(req);
    return status;
}

void ex_datasrv_mount(ex_daemon *d)
{
    ex_logsrv_mount(d->logsrv, datasrv_post, d);
}
