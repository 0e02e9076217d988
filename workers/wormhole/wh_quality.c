/*
 * wh_quality.c - quality checks (see wh_quality.h): the parser of the check
 * objects, the SQL each kind measures with, the engine's two phases (in the
 * load transaction before the commit, or after it), the summary and log,
 * and `wormhole quality`.
 */
#include "wh_quality.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_json.h"
#include "orr_log.h"
#include "wh_job.h"
#include "wh_sqlopt.h"

static const char *const wh_qkind_names[] = {"row_count", "null_ratio", "unique", "freshness",
                                             "sql"};
/* The threshold key of each kind. */
static const char *const wh_qkind_limit[] = {"max_diff", "max_ratio", "max_duplicates", "max_age_s",
                                             "max_rows"};

const char *wh_qkind_name(wh_qkind k)
{
    return (unsigned)k < 5 ? wh_qkind_names[k] : "?";
}

int wh_qkind_parse(const char *name)
{
    for (int i = 0; name && i < 5; i++)
        if (strcmp(name, wh_qkind_names[i]) == 0)
            return i;
    return -1;
}

static int wh_qname_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 40)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

void wh_qset_free(wh_qset *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->n; i++) {
        free(q->v[i].columns);
        json_decref(q->v[i].rows);
    }
    free(q->v);
    q->v = NULL;
    q->n = 0;
}

static orr_status wh_qcheck_parse(const json_t *o, wh_qcheck *c, int in_transfer, orr_err *err)
{
    static const char *const keys[] = {
        "name",     "kind",      "writer",         "table",     "column",   "columns", "query",
        "max_diff", "max_ratio", "max_duplicates", "max_age_s", "max_rows", NULL};
    char p[96];
    const char *path = c->path;
    const char *kind = NULL;
    orr_status rc;
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object");
    if ((rc = orr_json_allow_keys(o, path, keys, err)) ||
        (rc = orr_json_get_str(o, path, "name", 1, &c->name, err)) ||
        (rc = orr_json_get_str(o, path, "kind", 1, &kind, err)) ||
        (rc = orr_json_get_str(o, path, "writer", 0, &c->writer, err)) ||
        (rc = orr_json_get_str(o, path, "table", 0, &c->table, err)) ||
        (rc = orr_json_get_str(o, path, "column", 0, &c->column, err)) ||
        (rc = orr_json_get_str(o, path, "query", 0, &c->query, err)) ||
        (rc = wh_get_str_array(o, path, "columns", &c->columns, &c->ncolumns, err)))
        return rc;
    if (!wh_qname_ok(c->name))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "name"),
                           "must be 1 to 40 of a-z, 0-9 and _");
    int k = wh_qkind_parse(kind);
    if (k < 0)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "kind"),
                           "must be one of row_count, null_ratio, unique, freshness, sql");
    c->kind = (wh_qkind)k;
    if (c->kind == WH_Q_ROW_COUNT && !in_transfer)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "kind"),
                           "row_count compares a transfer's source and target: it runs only in "
                           "a transfer's quality");
    if (c->writer && !in_transfer)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "writer"),
                           "only a transfer's checks name a writer");
    /* The threshold: only the kind's own key. */
    for (int i = 0; i < 5; i++)
        if (i != k && json_object_get(o, wh_qkind_limit[i]))
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, wh_qkind_limit[i]),
                               "is not a threshold of a %s check (%s is)", kind, wh_qkind_limit[k]);
    const char *lim = wh_qkind_limit[k];
    orr_json_path(p, sizeof p, path, lim);
    c->threshold = 0;
    if (c->kind == WH_Q_NULL_RATIO) {
        if ((rc = orr_json_get_double(o, path, lim, 0, &c->threshold, err)))
            return rc;
        if (!(c->threshold >= 0 && c->threshold <= 1))
            return orr_err_set(err, ORR_EINVAL, p, "must be between 0 and 1");
    } else {
        int64_t v = 0;
        if ((rc = orr_json_get_int(o, path, lim, c->kind == WH_Q_FRESHNESS, 0, (int64_t)1 << 50, &v,
                                   err)))
            return rc;
        if (c->kind == WH_Q_FRESHNESS && v < 1)
            return orr_err_set(err, ORR_EINVAL, p, "must be at least 1 (seconds)");
        c->threshold = (double)v;
    }
    /* What each kind needs, and nothing it does not use. */
    int needs_table =
        c->kind == WH_Q_NULL_RATIO || c->kind == WH_Q_UNIQUE || c->kind == WH_Q_FRESHNESS;
    if (c->table && !needs_table)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "table"),
                           "a %s check names no table", kind);
    if (needs_table && !in_transfer && !c->table)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "table"),
                           "is required");
    if (c->table && !c->table[0])
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "table"),
                           "must not be empty");
    int needs_column = c->kind == WH_Q_NULL_RATIO || c->kind == WH_Q_FRESHNESS;
    if (needs_column && (!c->column || !c->column[0]))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "column"),
                           "is required");
    if (!needs_column && c->column)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "column"),
                           "a %s check names no column%s", kind,
                           c->kind == WH_Q_UNIQUE ? " (it names columns)" : "");
    if (c->kind == WH_Q_UNIQUE && !c->columns)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "columns"),
                           "is required");
    if (c->kind != WH_Q_UNIQUE && c->columns)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "columns"),
                           "only a unique check names columns");
    if (c->kind == WH_Q_SQL && (!c->query || !c->query[strspn(c->query, " \t\r\n")]))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "query"),
                           "is required");
    if (c->kind != WH_Q_SQL && c->query)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "query"),
                           "only a sql check has a query");
    return ORR_OK;
}

orr_status wh_quality_parse(const json_t *arr, const char *path, int in_transfer, wh_qset *out,
                            orr_err *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_array(arr))
        return orr_err_set(err, ORR_EINVAL, path, "must be an array of checks");
    size_t n = json_array_size(arr);
    if (n > 64)
        return orr_err_set(err, ORR_EINVAL, path, "holds at most 64 checks");
    out->v = orr_xcalloc(n ? n : 1, sizeof *out->v);
    out->n = n;
    for (size_t i = 0; i < n; i++) {
        wh_qcheck *c = &out->v[i];
        orr_json_index_path(c->path, sizeof c->path, path, i);
        orr_status rc = wh_qcheck_parse(json_array_get(arr, i), c, in_transfer, err);
        for (size_t k = 0; rc == ORR_OK && k < i; k++)
            if (strcmp(out->v[k].name, c->name) == 0) {
                char p[96];
                rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, c->path, "name"),
                                 "duplicate check name \"%s\"", c->name);
            }
        if (rc) {
            wh_qset_free(out);
            return rc;
        }
    }
    return ORR_OK;
}

orr_status wh_quality_bind(wh_qset *q, const wh_job *job, orr_err *err)
{
    char p[96];
    for (size_t i = 0; i < q->n; i++) {
        wh_qcheck *c = &q->v[i];
        size_t w = 0;
        if (c->writer) {
            for (w = 0; w < job->nwriters; w++)
                if (strcmp(job->writers[w].name, c->writer) == 0)
                    break;
            if (w == job->nwriters)
                return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, c->path, "writer"),
                                   "no writer named \"%s\"", c->writer);
        }
        c->writer_index = w;
        const wh_plugin *pl = job->writers[w].plugin;
        if (c->kind != WH_Q_ROW_COUNT && !pl->quality)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, c->path, "kind"),
                               "a %s writer's target runs row_count checks only", pl->name);
    }
    return ORR_OK;
}

orr_status wh_quality_job_parse(wh_job *j, orr_err *err)
{
    json_t *arr = json_object_get(j->root, "quality");
    if (!arr)
        return ORR_OK;
    wh_qset *q = orr_xcalloc(1, sizeof *q);
    orr_status rc = wh_quality_parse(arr, "quality", 1, q, err);
    if (rc == ORR_OK)
        rc = wh_quality_bind(q, j, err);
    if (rc) {
        wh_qset_free(q);
        free(q);
        return rc;
    }
    j->quality = q;
    return ORR_OK;
}

void wh_quality_job_free(wh_job *j)
{
    wh_qset_free(j->quality);
    free(j->quality);
    j->quality = NULL;
}

/* ---- measuring ------------------------------------------------------- */

static void wh_q_judge(wh_qcheck *c, double value)
{
    c->ran = 1;
    c->value = value;
    c->ok = value >= 0 && value <= c->threshold;
    if (!c->ok && !c->detail[0])
        snprintf(c->detail, sizeof c->detail, "%s %.6g is above %s %.6g", wh_qkind_name(c->kind),
                 value, wh_qkind_limit[c->kind], c->threshold);
}

void wh_quality_row_count(wh_qcheck *c, uint64_t expected, uint64_t confirmed)
{
    uint64_t diff = expected > confirmed ? expected - confirmed : confirmed - expected;
    if (diff > (uint64_t)c->threshold)
        snprintf(c->detail, sizeof c->detail,
                 "%" PRIu64 " rows sent, %" PRIu64 " confirmed by the target: %" PRIu64
                 " apart, max_diff %.0f",
                 expected, confirmed, diff, c->threshold);
    wh_q_judge(c, (double)diff);
}

/* First field of the first row as a number; NAN when NULL or absent. */
static double wh_q_num(const json_t *rows, size_t col)
{
    const json_t *v = json_array_get(json_array_get(rows, 0), col);
    if (!json_is_string(v))
        return NAN;
    return strtod(json_string_value(v), NULL);
}

orr_status wh_quality_measure(wh_qcheck *c, const wh_quality_ops *ops, void *conn,
                              const char *table_q, orr_err *err)
{
    orr_buf sql = ORR_BUF_INIT, tq = ORR_BUF_INIT;
    json_t *rows = NULL;
    uint64_t nrows = 0;
    orr_status rc = ORR_OK;
    int my = ops->dialect == WH_Q_MYSQL;
    if (!table_q && c->table) {
        ops->quote_table(&tq, c->table);
        table_q = orr_buf_cstr(&tq);
    }
    c->detail[0] = 0;
    switch (c->kind) {
    case WH_Q_NULL_RATIO:
        orr_buf_append_str(&sql, "SELECT COUNT(*), COUNT(");
        ops->quote_ident(&sql, c->column);
        orr_buf_appendf(&sql, ") FROM %s", table_q);
        break;
    case WH_Q_UNIQUE:
        orr_buf_appendf(&sql,
                        "SELECT COALESCE(SUM(wh_n - 1), 0) FROM (SELECT COUNT(*) AS wh_n FROM %s "
                        "GROUP BY ",
                        table_q);
        for (size_t i = 0; i < c->ncolumns; i++) {
            if (i)
                orr_buf_append_str(&sql, ", ");
            ops->quote_ident(&sql, c->columns[i]);
        }
        orr_buf_append_str(&sql, " HAVING COUNT(*) > 1) wh_d");
        break;
    case WH_Q_FRESHNESS:
        if (my) {
            orr_buf_append_str(&sql, "SELECT TIMESTAMPDIFF(MICROSECOND, MAX(");
            ops->quote_ident(&sql, c->column);
            orr_buf_appendf(&sql, "), UTC_TIMESTAMP(6)) / 1000000 FROM %s", table_q);
        } else {
            orr_buf_append_str(&sql, "SELECT EXTRACT(EPOCH FROM clock_timestamp() - MAX(");
            ops->quote_ident(&sql, c->column);
            orr_buf_appendf(&sql, ")::timestamptz) FROM %s", table_q);
        }
        break;
    case WH_Q_SQL:
        orr_buf_append_str(&sql, c->query);
        break;
    default:
        rc = orr_err_set(err, ORR_EINTERNAL, c->path, "not a store-side check");
        goto out;
    }
    if ((rc = ops->query(conn, orr_buf_cstr(&sql), c->kind == WH_Q_SQL ? WH_Q_KEEP : 1, &nrows,
                         &rows, c->path, err)))
        goto out;
    switch (c->kind) {
    case WH_Q_NULL_RATIO: {
        double all = wh_q_num(rows, 0), set = wh_q_num(rows, 1);
        double ratio = all > 0 ? (all - set) / all : 0;
        if (ratio > c->threshold)
            snprintf(c->detail, sizeof c->detail,
                     "%.0f of %.0f rows have NULL in %s: ratio %.6f, max_ratio %.6g", all - set,
                     all, c->column, ratio, c->threshold);
        wh_q_judge(c, ratio);
        break;
    }
    case WH_Q_UNIQUE: {
        double dup = wh_q_num(rows, 0);
        if (dup > c->threshold)
            snprintf(c->detail, sizeof c->detail, "%.0f duplicate rows by key, max_duplicates %.0f",
                     dup, c->threshold);
        wh_q_judge(c, isnan(dup) ? 0 : dup);
        break;
    }
    case WH_Q_FRESHNESS: {
        double age = wh_q_num(rows, 0);
        if (isnan(age)) {
            snprintf(c->detail, sizeof c->detail, "%s holds no value at all", c->column);
            wh_q_judge(c, -1);
        } else {
            if (age < 0)
                age = 0; /* a value in the future is fresh */
            if (age > c->threshold)
                snprintf(c->detail, sizeof c->detail, "the newest %s is %.0f s old, max_age_s %.0f",
                         c->column, age, c->threshold);
            wh_q_judge(c, age);
        }
        break;
    }
    case WH_Q_SQL:
        if ((double)nrows > c->threshold)
            snprintf(c->detail, sizeof c->detail,
                     "the query returned %" PRIu64 " rows, max_rows %.0f", nrows, c->threshold);
        wh_q_judge(c, (double)nrows);
        json_decref(c->rows);
        c->rows = rows;
        rows = NULL;
        break;
    default:
        break;
    }
out:
    json_decref(rows);
    orr_buf_free(&sql);
    orr_buf_free(&tq);
    return rc;
}

/* ---- the engine's phases ----------------------------------------------- */

orr_status wh_quality_before(const wh_job *job, size_t writer, void *state, uint64_t expected,
                             uint64_t confirmed, orr_err *err)
{
    wh_qset *q = job->quality;
    const wh_endpoint *ep = &job->writers[writer];
    const wh_quality_ops *ops = ep->plugin->quality;
    void *conn = state && ops && ops->load_conn ? ops->load_conn(ep->conf, state) : NULL;
    for (size_t i = 0; q && i < q->n; i++) {
        wh_qcheck *c = &q->v[i];
        if (c->writer_index != writer || c->ran)
            continue;
        if (c->kind == WH_Q_ROW_COUNT) {
            wh_quality_row_count(c, expected, confirmed);
        } else if (conn) {
            orr_buf tq = ORR_BUF_INIT;
            ops->quote_table(&tq, c->table ? c->table : ops->opts(ep->conf)->table);
            orr_status rc = wh_quality_measure(c, ops, conn, orr_buf_cstr(&tq), err);
            orr_buf_free(&tq);
            if (rc)
                return rc;
        }
    }
    return ORR_OK;
}

orr_status wh_quality_after(const wh_job *job, size_t writer, orr_err *err)
{
    wh_qset *q = job->quality;
    const wh_endpoint *ep = &job->writers[writer];
    const wh_quality_ops *ops = ep->plugin->quality;
    void *conn = NULL;
    orr_status rc = ORR_OK;
    for (size_t i = 0; q && i < q->n && rc == ORR_OK; i++) {
        wh_qcheck *c = &q->v[i];
        if (c->writer_index != writer || c->ran || !ops)
            continue;
        const wh_sqlopt *o = ops->opts(ep->conf);
        if (!conn && (rc = ops->connect(o->dsn, ep->path, &conn, err)))
            break;
        orr_buf tq = ORR_BUF_INIT;
        ops->quote_table(&tq, c->table ? c->table : o->table);
        rc = wh_quality_measure(c, ops, conn, orr_buf_cstr(&tq), err);
        orr_buf_free(&tq);
    }
    if (conn)
        ops->disconnect(conn);
    return rc;
}

orr_status wh_quality_verdict(const wh_job *job, orr_err *err)
{
    wh_qset *q = job->quality;
    size_t bad = wh_quality_report(q);
    for (size_t i = 0; q && i < q->n; i++) {
        wh_qcheck *c = &q->v[i];
        if (c->ran && !c->ok)
            return orr_err_set(err, ORR_EIO, c->path, "quality check %s failed: %s%s", c->name,
                               c->detail, bad > 1 ? " (and others: see the summary)" : "");
    }
    return ORR_OK;
}

int wh_quality_failed(const wh_job *job)
{
    wh_qset *q = job->quality;
    for (size_t i = 0; q && i < q->n; i++)
        if (q->v[i].ran && !q->v[i].ok)
            return 1;
    return 0;
}

/* ---- summary and log ----------------------------------------------------- */

json_t *wh_quality_json(const wh_qset *q)
{
    json_t *a = json_array();
    for (size_t i = 0; q && i < q->n; i++) {
        const wh_qcheck *c = &q->v[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(c->name));
        json_object_set_new(o, "kind", json_string(wh_qkind_name(c->kind)));
        json_object_set_new(o, "value", c->ran ? json_real(c->value) : json_null());
        json_object_set_new(o, "threshold", json_real(c->threshold));
        json_object_set_new(o, "outcome",
                            json_string(!c->ran ? "not_run"
                                        : c->ok ? "ok"
                                                : "failed"));
        if (c->ran && !c->ok)
            json_object_set_new(o, "detail", json_string(c->detail));
        if (c->rows && json_array_size(c->rows) && c->ran && !c->ok)
            json_object_set(o, "rows", c->rows);
        json_array_append_new(a, o);
    }
    return a;
}

size_t wh_quality_report(const wh_qset *q)
{
    size_t bad = 0;
    for (size_t i = 0; q && i < q->n; i++) {
        const wh_qcheck *c = &q->v[i];
        if (!c->ran)
            continue;
        char v[32], t[32];
        snprintf(v, sizeof v, "%.6g", c->value);
        snprintf(t, sizeof t, "%.6g", c->threshold);
        if (c->ok) {
            ORR_INFO("quality check passed", "check=%s kind=%s value=%s threshold=%s",
                     orr_log_q(c->name), wh_qkind_name(c->kind), v, t);
            continue;
        }
        bad++;
        ORR_WARN("quality check failed", "check=%s kind=%s value=%s threshold=%s detail=%s",
                 orr_log_q(c->name), wh_qkind_name(c->kind), v, t, orr_log_q(c->detail));
        for (size_t r = 0; c->rows && r < json_array_size(c->rows); r++) {
            char *text = json_dumps(json_array_get(c->rows, r), JSON_COMPACT);
            ORR_WARN("quality check offending row", "check=%s row=%zu values=%s",
                     orr_log_q(c->name), r + 1, orr_log_q(text ? text : "?"));
            free(text);
        }
    }
    return bad;
}

/* ---- wormhole quality ---------------------------------------------------- */

static void wh_q_print(json_t *o)
{
    orr_buf out = ORR_BUF_INIT;
    orr_json_dump_buf(o, &out);
    printf("%s\n", orr_buf_cstr(&out));
    fflush(stdout);
    orr_buf_free(&out);
    json_decref(o);
}

static json_t *wh_q_error(const orr_err *e)
{
    json_t *x = json_object();
    json_object_set_new(x, "code", json_string(orr_status_name(e->code)));
    json_object_set_new(x, "message", json_string(e->msg));
    json_object_set_new(x, "field", json_string(e->field));
    return x;
}

int wh_quality_main(const char *job_path)
{
    orr_err err;
    orr_err_clear(&err);
    orr_buf text = ORR_BUF_INIT;
    json_t *root = NULL, *checks = NULL, *target = NULL;
    wh_qset q = {0, NULL};
    void *conn = NULL;
    const wh_quality_ops *ops = NULL;
    const char *name = "quality", *type = NULL, *dsn = NULL;
    int status = 2;
    FILE *f = strcmp(job_path, "-") == 0 ? stdin : fopen(job_path, "rb");
    if (!f) {
        orr_err_set(&err, ORR_EIO, "", "cannot open job file %s", job_path);
        goto bad;
    }
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && text.len < (16u << 20))
        orr_buf_append(&text, chunk, n);
    fclose(f);
    static const char *const keys[] = {"name", "target", "checks", NULL};
    static const char *const tkeys[] = {"type", "dsn", "dsn_env", NULL};
    if (orr_json_parse(orr_buf_cstr(&text), text.len, &root, &err) ||
        orr_json_allow_keys(root, "", keys, &err) ||
        orr_json_get_str(root, "", "name", 0, &name, &err) ||
        orr_json_get_obj(root, "", "target", 1, &target, &err) ||
        orr_json_get_array(root, "", "checks", 1, &checks, &err) ||
        orr_json_allow_keys(target, "target", tkeys, &err) ||
        orr_json_get_str(target, "target", "type", 1, &type, &err))
        goto bad;
    const wh_plugin *pl = wh_plugin_find(type);
    ops = pl ? pl->quality : NULL;
    if (!ops) {
        orr_err_set(&err, ORR_EINVAL, "target.type",
                    "\"%s\" cannot run quality checks (postgres and mysql can)", type);
        goto bad;
    }
    if (wh_get_dsn(target, "target", &dsn, &err) || wh_quality_parse(checks, "checks", 0, &q, &err))
        goto bad;
    if (q.n == 0) {
        orr_err_set(&err, ORR_EINVAL, "checks", "must hold at least one check");
        goto bad;
    }
    status = 1;
    if (ops->connect(dsn, "target", &conn, &err) == ORR_OK) {
        for (size_t i = 0; i < q.n; i++)
            if (wh_quality_measure(&q.v[i], ops, conn, NULL, &err) != ORR_OK)
                break;
    }
    size_t failed = wh_quality_report(&q);
    if (err.code == ORR_OK && failed) {
        for (size_t i = 0; i < q.n; i++)
            if (q.v[i].ran && !q.v[i].ok) {
                orr_err_set(&err, ORR_EIO, q.v[i].path, "quality check %s failed: %s", q.v[i].name,
                            q.v[i].detail);
                break;
            }
        status = 3;
    } else if (err.code == ORR_OK) {
        status = 0;
    }
    if (status == 1)
        ORR_ERROR("quality checks failed to run", "field=%s error=%s", orr_log_q(err.field),
                  orr_log_q(err.msg));
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(name));
    json_object_set_new(o, "status", json_string(status == 0 ? "ok" : "failed"));
    if (status)
        json_object_set_new(o, "error", wh_q_error(&err));
    json_object_set_new(o, "quality", wh_quality_json(&q));
    wh_q_print(o);
    goto out;
bad:
    fprintf(stderr, "wormhole: bad quality job %s: %s%s%s\n", job_path, err.field,
            err.field[0] ? ": " : "", err.msg);
    wh_q_print(orr_json_error_body(&err));
out:
    if (conn)
        ops->disconnect(conn);
    wh_qset_free(&q);
    json_decref(root);
    if (text.data)
        explicit_bzero(text.data, text.len);
    orr_buf_free(&text);
    return status;
}
