/*
 * ex_runner_transfer.c - the `transfer` task type (contract in ex_runner.h):
 * the config is the transfer job; it is written to <run dir>/job.json and
 * run by the transfer engine, `wormhole run job.json`.
 *
 * Before the run (transfer_prepare):
 *   1. every "datasource": "name" of the reader and the writers is resolved
 *      through the daemon's hooks into a `dsn` (libpq key=value string for
 *      postgres, mysql://user:password@host:port/db for mysql); the
 *      reference must be alone (no dsn/dsn_env beside it);
 *   2. for reader.incremental the saved watermark is fetched and written to
 *      <run dir>/job.json.state in wormhole's state-file format, passed with
 *      --state (a state_file in the job is dropped: the task owns it);
 *   3. resume bookkeeping: --resume (a retry or rerun resumes the splits an
 *      earlier attempt committed) or, on a rerun asked from scratch,
 *      --from-scratch, with --run-id naming the instance; none when the job
 *      says "resume": false;
 *   4. the job is written 0600: owned by the run_as user when it holds no
 *      resolved password (`wormhole run job.json`), else owned by
 *      executord's user and given as stdin (`wormhole run -`), so other
 *      tasks of the same user cannot open it; buffers that held the
 *      password are wiped.
 * After the run the daemon reads the summary from the log
 * (ex_transfer_summary) and, on success, the new watermark
 * (ex_transfer_state_read); it removes plan->secret_path itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_runner.h"
#include "orr_buf.h"
#include "orr_json.h"

/* ------------------------------------------------------------ files */

/* Write text to path, mode 0600, owned by the run_as user (give_away) or
 * by executord's own user. */
static orr_status write_private(const ex_run_ctx *ctx, const char *path, const char *text,
                                size_t len, int give_away, orr_err *err)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    int e = 0;
    ssize_t w = -1;
    if (fd >= 0 && (!give_away || !ctx->drop || fchown(fd, ctx->uid, ctx->gid) == 0))
        w = write(fd, text, len);
    e = errno;
    if (fd >= 0)
        close(fd);
    if (w != (ssize_t)len) {
        unlink(path);
        return orr_err_set(err, ORR_EIO, path, "cannot write: %s", strerror(e));
    }
    return ORR_OK;
}

/* ------------------------------------------------------------ data sources */

/* Append ` key='value'` in libpq's quoting. */
static void conninfo_add(orr_buf *b, const char *key, const char *value)
{
    orr_buf_appendf(b, "%s%s='", b->len ? " " : "", key);
    for (const char *p = value; *p; p++) {
        if (*p == '\'' || *p == '\\')
            orr_buf_append_byte(b, '\\');
        orr_buf_append_byte(b, *p);
    }
    orr_buf_append_byte(b, '\'');
}

/* A parameter as text: strings as they are, integers printed. NULL if
 * absent or another type. */
static const char *param_text(orr_arena *a, const json_t *params, const char *key)
{
    const json_t *v = json_object_get(params, key);
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v))
        return orr_arena_sprintf(a, "%lld", (long long)json_integer_value(v));
    return NULL;
}

static int is_keyword(const char *k)
{
    if (!*k)
        return 0;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || *p == '_'))
            return 0;
    return 1;
}

/* libpq connection string of a postgresql data source into b. */
static orr_status pg_dsn(orr_arena *a, const json_t *params, const char *secret, const char *field,
                         orr_buf *b, orr_err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)params, k, v)
    {
        const char *text = param_text(a, params, k);
        const char *key = strcmp(k, "database") == 0 ? "dbname" : k;
        if (!text || !is_keyword(key))
            return orr_err_set(err, ORR_EINVAL, field,
                               "data source parameter \"%.64s\" is not a connection keyword "
                               "with a string or integer value",
                               k);
        conninfo_add(b, key, text);
    }
    if (secret && secret[0])
        conninfo_add(b, "password", secret);
    return ORR_OK;
}

/* mysql://user:password@host:port/database of a mysql data source into b. */
static orr_status my_dsn(orr_arena *a, const json_t *params, const char *secret, const char *field,
                         orr_buf *b, orr_err *err)
{
    const char *user = param_text(a, params, "user");
    const char *host = param_text(a, params, "host");
    const char *port = param_text(a, params, "port");
    const char *db = param_text(a, params, "database");
    if (!db)
        db = param_text(a, params, "dbname");
    if (!user || !host || !db)
        return orr_err_set(err, ORR_EINVAL, field,
                           "a mysql data source needs user, host and database parameters");
    if (strpbrk(user, ":@/") || strpbrk(host, ":@/") || strpbrk(db, "/?") ||
        (port && strpbrk(port, "@/")) || (secret && strchr(secret, '/')))
        return orr_err_set(err, ORR_EINVAL, field,
                           "a mysql data source's user, host, port, database or password holds "
                           "a character a mysql:// address cannot carry");
    orr_buf_appendf(b, "mysql://%s%s%s@%s%s%s/%s", user, secret && secret[0] ? ":" : "",
                    secret ? secret : "", host, port ? ":" : "", port ? port : "", db);
    return ORR_OK;
}

/* Replace endpoint's "datasource" by a dsn. path is its JSON path
 * ("config.reader", "config.writers[0]"). */
static orr_status resolve_endpoint(const ex_run_ctx *ctx, json_t *ep, const char *path,
                                   int *resolved, orr_err *err)
{
    return ex_transfer_resolve_typed(ctx, ep, path, 0, resolved, err);
}

orr_status ex_transfer_resolve_typed(const ex_run_ctx *ctx, json_t *ep, const char *path,
                                     int infer_type, int *resolved, orr_err *err)
{
    char field[96];
    orr_json_path(field, sizeof field, path, "datasource");
    json_t *ref = json_object_get(ep, "datasource");
    if (!ref)
        return ORR_OK;
    if (!json_is_string(ref) || !json_string_length(ref))
        return orr_err_set(err, ORR_EINVAL, field, "must be the name of a data source");
    if (json_object_get(ep, "dsn") || json_object_get(ep, "dsn_env"))
        return orr_err_set(err, ORR_EINVAL, field, "give datasource or dsn/dsn_env, not both");
    const char *name = json_string_value(ref);
    if (!ctx->hooks || !ctx->hooks->datasource)
        return orr_err_set(err, ORR_EINVAL, field,
                           "data-source references cannot be resolved here");
    ex_datasource ds = {0};
    orr_status s = ctx->hooks->datasource(ctx->hooks->arg, ctx->arena, name, &ds, err);
    if (s == ORR_ENOTFOUND)
        return orr_err_set(err, ORR_ENOTFOUND, field, "no data source named \"%.128s\"", name);
    if (s != ORR_OK) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return orr_err_set(err, s, field, "cannot read data source \"%.128s\": %s", name, why);
    }
    json_t *params = NULL;
    const char *pj = ds.params_json && ds.params_json[0] ? ds.params_json : "{}";
    if (orr_json_parse(pj, strlen(pj), &params, err) != ORR_OK || !json_is_object(params)) {
        json_decref(params);
        return orr_err_set(err, ORR_EINVAL, field,
                           "data source \"%.128s\" has parameters that are not a JSON object",
                           name);
    }
    if (infer_type && !json_object_get(ep, "type")) {
        int pg = strcmp(ds.kind, "postgresql") == 0 || strcmp(ds.kind, "postgres") == 0;
        int my = strcmp(ds.kind, "mysql") == 0 || strcmp(ds.kind, "mariadb") == 0;
        if (!pg && !my) {
            json_decref(params);
            return orr_err_set(err, ORR_EINVAL, field,
                               "data source \"%.128s\" is of kind %.64s: only postgresql and "
                               "mysql sources can be read here",
                               name, ds.kind);
        }
        json_object_set_new(ep, "type", json_string(pg ? "postgres" : "mysql"));
    }
    const char *type = json_string_value(json_object_get(ep, "type"));
    orr_buf dsn = ORR_BUF_INIT;
    if (type && strcmp(type, "postgres") == 0 &&
        (strcmp(ds.kind, "postgresql") == 0 || strcmp(ds.kind, "postgres") == 0))
        s = pg_dsn(ctx->arena, params, ds.secret, field, &dsn, err);
    else if (type && strcmp(type, "mysql") == 0 &&
             (strcmp(ds.kind, "mysql") == 0 || strcmp(ds.kind, "mariadb") == 0))
        s = my_dsn(ctx->arena, params, ds.secret, field, &dsn, err);
    else
        s = orr_err_set(err, ORR_EINVAL, field,
                        "data source \"%.128s\" is of kind %.64s, which a %.32s endpoint cannot "
                        "use",
                        name, ds.kind, type ? type : "(typeless)");
    json_decref(params);
    if (s == ORR_OK) {
        (*resolved)++;
        json_object_del(ep, "datasource");
        json_object_set_new(ep, "dsn", json_stringn(orr_buf_cstr(&dsn), dsn.len));
    }
    if (dsn.data)
        explicit_bzero(dsn.data, dsn.len);
    orr_buf_free(&dsn);
    return s;
}

static orr_status resolve_all(const ex_run_ctx *ctx, json_t *job, int *resolved, orr_err *err)
{
    json_t *reader = json_object_get(job, "reader");
    orr_status s;
    if (json_is_object(reader) &&
        (s = resolve_endpoint(ctx, reader, "config.reader", resolved, err)))
        return s;
    json_t *writers = json_object_get(job, "writers");
    for (size_t i = 0; json_is_array(writers) && i < json_array_size(writers); i++) {
        json_t *w = json_array_get(writers, i);
        char path[64];
        orr_json_index_path(path, sizeof path, "config.writers", i);
        if (json_is_object(w) && (s = resolve_endpoint(ctx, w, path, resolved, err)))
            return s;
    }
    return ORR_OK;
}

/* ------------------------------------------------------------ watermark */

/* reader.incremental: fetch the saved watermark and write the state file. */
static orr_status setup_watermark(const ex_run_ctx *ctx, json_t *job, const char *job_path,
                                  ex_run_plan *plan, orr_err *err)
{
    json_t *reader = json_object_get(job, "reader");
    json_t *incr = json_is_object(reader) ? json_object_get(reader, "incremental") : NULL;
    const char *col = json_string_value(json_object_get(incr, "column"));
    if (!col || !col[0])
        return ORR_OK; /* not incremental (wormhole judges a broken spec) */
    const char *table = json_string_value(json_object_get(reader, "table"));
    plan->wm_column = orr_arena_strdup(ctx->arena, col);
    plan->wm_name =
        table && table[0] ? orr_arena_sprintf(ctx->arena, "%s.%s", table, col) : plan->wm_column;
    if (strlen(plan->wm_name) > 200)
        return orr_err_set(err, ORR_EINVAL, "config.reader.incremental.column",
                           "table and column name too long for a watermark name");
    plan->state_path = orr_arena_sprintf(ctx->arena, "%s.state", job_path);
    plan->wm_value = "";
    if (!ctx->hooks || !ctx->hooks->watermark)
        return orr_err_set(err, ORR_EINVAL, "config.reader.incremental",
                           "watermarks cannot be read here");
    orr_status s =
        ctx->hooks->watermark(ctx->hooks->arg, ctx->arena, plan->wm_name, &plan->wm_value, err);
    if (s != ORR_OK) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return orr_err_set(err, s, "config.reader.incremental",
                           "cannot read the watermark %.200s: %s", plan->wm_name, why);
    }
    unlink(plan->state_path);
    if (!plan->wm_value[0])
        return ORR_OK; /* first run: no state file, wormhole reads everything */
    const char *name = json_string_value(json_object_get(job, "name"));
    json_t *st = json_pack("{s:s, s:s, s:s}", "job", name ? name : "job", "column", col,
                           "watermark", plan->wm_value);
    orr_buf text = ORR_BUF_INIT;
    orr_json_dump_buf(st, &text);
    orr_buf_append_byte(&text, '\n');
    json_decref(st);
    s = write_private(ctx, plan->state_path, text.data, text.len, 1, err);
    orr_buf_free(&text);
    return s;
}

orr_status ex_transfer_state_read(orr_arena *a, const ex_run_plan *plan, const char **value,
                                  orr_err *err)
{
    if (!plan->state_path)
        return orr_err_set(err, ORR_ENOTFOUND, "state_file", "not an incremental job");
    json_error_t je;
    json_t *st = json_load_file(plan->state_path, JSON_REJECT_DUPLICATES, &je);
    if (!st)
        return orr_err_set(err, errno == ENOENT ? ORR_ENOTFOUND : ORR_EINVAL, "state_file",
                           "%s: %s", plan->state_path, je.text);
    const char *col = json_string_value(json_object_get(st, "column"));
    const char *mark = json_string_value(json_object_get(st, "watermark"));
    orr_status s = ORR_OK;
    if (!col || !mark || strcmp(col, plan->wm_column) != 0 || !mark[0])
        s = orr_err_set(err, ORR_EINVAL, "state_file", "%s does not hold a watermark of column %s",
                        plan->state_path, plan->wm_column);
    else
        *value = orr_arena_strdup(a, mark);
    json_decref(st);
    return s;
}

/* ------------------------------------------------------------ summary */

static void stat_add(orr_arena *a, ex_stat *stats, size_t cap, size_t *n, const char *key, double v)
{
    if (*n < cap)
        stats[(*n)++] = (ex_stat){orr_arena_strdup(a, key), v};
}

static double num(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

orr_status ex_transfer_summary(orr_arena *a, const char *log_path, ex_stat *stats, size_t cap,
                               size_t *n, int *ok, orr_err *err)
{
    enum { TAIL = 256 * 1024 };
    *n = 0;
    *ok = 0;
    int fd = open(log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return orr_err_set(err, ORR_ENOTFOUND, log_path, "cannot open: %s", strerror(errno));
    struct stat sb;
    off_t from = fstat(fd, &sb) == 0 && sb.st_size > TAIL ? sb.st_size - TAIL : 0;
    char *buf = orr_arena_alloc(a, TAIL + 1);
    ssize_t got = pread(fd, buf, TAIL, from);
    close(fd);
    if (got < 0)
        return orr_err_set(err, ORR_EIO, log_path, "cannot read: %s", strerror(errno));
    buf[got] = 0;

    /* Walk lines from the end; the summary is one compact JSON line. */
    json_t *sum = NULL;
    size_t end = (size_t)got;
    for (int lines = 0; end > 0 && !sum && lines < 10000; lines++) {
        while (end > 0 && buf[end - 1] == '\n')
            end--;
        size_t start = end;
        while (start > 0 && buf[start - 1] != '\n')
            start--;
        if (end > start && buf[start] == '{') {
            json_error_t je;
            json_t *o = json_loadb(buf + start, end - start, JSON_REJECT_DUPLICATES, &je);
            if (json_is_object(o) && json_is_string(json_object_get(o, "status")))
                sum = o;
            else
                json_decref(o);
        }
        end = start;
    }
    if (!sum)
        return orr_err_set(err, ORR_ENOTFOUND, log_path, "no transfer summary in the log");
    *ok = strcmp(json_string_value(json_object_get(sum, "status")), "ok") == 0;
    static const char *const top[] = {"rows_read",    "bytes_read",     "dirty_rows",  "seconds",
                                      "rows_per_sec", "resumed_splits", "rows_skipped"};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (json_is_number(json_object_get(sum, top[i])))
            stat_add(a, stats, cap, n, top[i], num(sum, top[i]));
    static const char *const per[] = {"rows_written", "rows_confirmed", "bytes_written",
                                      "dirty_rows"};
    json_t *ws = json_object_get(sum, "writers");
    size_t nw = json_is_array(ws) ? json_array_size(ws) : 0;
    for (size_t k = 0; k < 3; k++) { /* totals (dirty rows are in the top-level count) */
        double total = 0;
        for (size_t i = 0; i < nw; i++)
            total += num(json_array_get(ws, i), per[k]);
        if (nw)
            stat_add(a, stats, cap, n, per[k], total);
    }
    for (size_t i = 0; nw > 1 && i < nw && i < 64; i++)
        for (size_t k = 0; k < sizeof per / sizeof per[0]; k++) {
            char key[64];
            snprintf(key, sizeof key, "writers.%zu.%s", i, per[k]);
            stat_add(a, stats, cap, n, key, num(json_array_get(ws, i), per[k]));
        }
    ex_quality_stats(a, sum, stats, cap, n);
    json_decref(sum);
    return ORR_OK;
}

/* ------------------------------------------------------------ prepare */

/* Resume bookkeeping (docs/wormhole.md, Resume): every attempt keeps split
 * records under a run id naming the instance, so a retry or a rerun resumes
 * the splits an earlier attempt of the same instance committed, and another
 * instance never does; a rerun asked "from scratch" drops them. A job with
 * "resume": false goes without, and so does one with quality checks: its
 * load stays one transaction, which a failed check rolls back. Sets at
 * most 3 arguments, returns how many. */
static int transfer_resume_args(const ex_run_ctx *ctx, char **argv)
{
    if (json_is_false(json_object_get(ctx->config, "resume")) ||
        json_array_size(json_object_get(ctx->config, "quality")) > 0)
        return 0;
    argv[0] = ctx->from_scratch ? "--from-scratch" : "--resume";
    argv[1] = "--run-id";
    argv[2] = orr_arena_sprintf(ctx->arena, "instance-%lld", (long long)ctx->instance_id);
    return 3;
}

static orr_status transfer_prepare(const ex_run_ctx *ctx, ex_run_plan *plan, orr_err *err)
{
    if (!json_is_object(ctx->config))
        return orr_err_set(err, ORR_EINVAL, "config", "must be an object (the transfer job)");
    char *bin = orr_arena_sprintf(ctx->arena, "%s/wormhole", ctx->bin_dir);
    if (access(bin, X_OK) != 0)
        return orr_err_set(err, ORR_ENOTFOUND, "type",
                           "the transfer engine is not installed on this executor (%.200s)", bin);
    orr_status s = ex_runner_env(ctx, NULL, &plan->envp, err);
    if (s != ORR_OK)
        return s;

    char *job_path = orr_arena_sprintf(ctx->arena, "%s/job.json", ctx->run_dir);
    json_t *job = json_deep_copy(ctx->config);
    orr_buf text = ORR_BUF_INIT;
    int secrets = 0;
    json_object_del(job, "state_file"); /* the task owns the state file */
    if ((s = resolve_all(ctx, job, &secrets, err)) != ORR_OK ||
        (s = setup_watermark(ctx, job, job_path, plan, err)) != ORR_OK)
        goto out;
    orr_json_dump_buf(job, &text);
    plan->secret_path = job_path;
    /* With passwords in it, only executord may open the file; wormhole
     * reads it from the descriptor it inherits as stdin. */
    s = write_private(ctx, job_path, text.data, text.len, !secrets, err);
    if (s != ORR_OK)
        goto out;

    plan->cwd = ctx->run_dir;
    plan->argv = orr_arena_calloc(ctx->arena, 10, sizeof *plan->argv);
    plan->argv[0] = bin;
    plan->argv[1] = "run";
    plan->argv[2] = secrets ? "-" : job_path;
    plan->stdin_path = secrets ? job_path : NULL;
    int k = 3;
    if (plan->state_path) {
        plan->argv[k++] = "--state";
        plan->argv[k++] = (char *)plan->state_path;
    }
    k += transfer_resume_args(ctx, plan->argv + k);
    plan->argv[k] = NULL;
out:
    if (text.data)
        explicit_bzero(text.data, text.len);
    orr_buf_free(&text);
    json_decref(job); /* jansson frees without wiping: the dsn text is short-lived */
    return s;
}

orr_status ex_transfer_resolve(const ex_run_ctx *ctx, json_t *ep, const char *path, int *resolved,
                               orr_err *err)
{
    return resolve_endpoint(ctx, ep, path, resolved, err);
}

const ex_runner_ops ex_runner_transfer = {
    .name = "transfer",
    .prepare = transfer_prepare,
};
