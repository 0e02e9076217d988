/* sort_sink_pg.c - PostgreSQL record sink: COPY batches + offsets in one transaction (see
 * sort_sink_pg.h). */
#include "sort_sink_pg.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_clock.h"
#include "orr_alloc.h"
#include "orr_log.h"
#include "sort_sink.h"

typedef struct pg_row {
    uint32_t partition;
    sort_off off;
    size_t line_pos, line_len; /* in lines */
    size_t rec_pos, rec_len;   /* in recs */
} pg_row;

struct sort_sink_pg {
    const sort_spec *spec;
    PGconn *conn;
    char *copy_sql;
    orr_buf lines; /* COPY text of the pending rows */
    orr_buf recs;  /* their raw records (for rejects) */
    pg_row *rows;  /* batch_rows entries, allocated once */
    size_t nrows;
    int64_t first_ms; /* when the batch got its first change; -1 = clean */
    sort_off stored[SORT_MAX_PARTITIONS];
    uint8_t has_stored[SORT_MAX_PARTITIONS];
    sort_off pos[SORT_MAX_PARTITIONS];
    uint8_t dirty[SORT_MAX_PARTITIONS];
    uint64_t n_rows, n_refused, n_batches;
    sort_sink_env *env; /* set when opened through sort_sink_pg_ops */
};

/* ---- COPY text escaping ---------------------------------------------- */

static void pg_put_byte(orr_buf *out, unsigned char c)
{
    switch (c) {
    case '\\':
        orr_buf_append(out, "\\\\", 2);
        break;
    case '\t':
        orr_buf_append(out, "\\t", 2);
        break;
    case '\n':
        orr_buf_append(out, "\\n", 2);
        break;
    case '\r':
        orr_buf_append(out, "\\r", 2);
        break;
    default:
        orr_buf_append_byte(out, (char)c);
        break;
    }
}

static int pg_hex4(const char *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static void pg_put_utf8(orr_buf *out, uint32_t cp)
{
    if (cp < 0x80) {
        pg_put_byte(out, (unsigned char)cp);
    } else if (cp < 0x800) {
        orr_buf_append_byte(out, (char)(0xC0 | (cp >> 6)));
        orr_buf_append_byte(out, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        orr_buf_append_byte(out, (char)(0xE0 | (cp >> 12)));
        orr_buf_append_byte(out, (char)(0x80 | ((cp >> 6) & 0x3F)));
        orr_buf_append_byte(out, (char)(0x80 | (cp & 0x3F)));
    } else {
        orr_buf_append_byte(out, (char)(0xF0 | (cp >> 18)));
        orr_buf_append_byte(out, (char)(0x80 | ((cp >> 12) & 0x3F)));
        orr_buf_append_byte(out, (char)(0x80 | ((cp >> 6) & 0x3F)));
        orr_buf_append_byte(out, (char)(0x80 | (cp & 0x3F)));
    }
}

int sort_pg_copy_escape(orr_buf *out, const char *v, size_t len, int json_escaped)
{
    size_t mark = out->len;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == 0)
            goto bad;
        if (!json_escaped || c != '\\') {
            pg_put_byte(out, c);
            continue;
        }
        if (++i >= len)
            goto bad;
        switch (v[i]) {
        case '"':
            pg_put_byte(out, '"');
            break;
        case '\\':
            pg_put_byte(out, '\\');
            break;
        case '/':
            pg_put_byte(out, '/');
            break;
        case 'b':
            pg_put_byte(out, '\b');
            break;
        case 'f':
            pg_put_byte(out, '\f');
            break;
        case 'n':
            pg_put_byte(out, '\n');
            break;
        case 'r':
            pg_put_byte(out, '\r');
            break;
        case 't':
            pg_put_byte(out, '\t');
            break;
        case 'u': {
            uint32_t cp, lo;
            if (len - i < 5 || pg_hex4(v + i + 1, &cp) != 0)
                goto bad;
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00) {
                if (len - i < 7 || v[i + 1] != '\\' || v[i + 2] != 'u' ||
                    pg_hex4(v + i + 3, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF)
                    goto bad;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                goto bad;
            }
            if (cp == 0)
                goto bad;
            pg_put_utf8(out, cp);
            break;
        }
        default:
            goto bad;
        }
    }
    return 0;
bad:
    out->len = mark;
    return -1;
}

int sort_pg_copy_row(orr_buf *out, const sort_spec *spec, const sort_val *vals)
{
    size_t mark = out->len;
    for (size_t i = 0; i < spec->sinks.ncolumns; i++) {
        const sort_val *v = &vals[spec->sinks.col_field[i]];
        if (i > 0)
            orr_buf_append_byte(out, '\t');
        if (!v->set) {
            orr_buf_append(out, "\\N", 2);
        } else if (v->is_num) {
            orr_buf_appendf(out, "%lld", (long long)v->num);
        } else if (sort_pg_copy_escape(out, v->p, v->len, v->escaped) != 0) {
            out->len = mark;
            return -1;
        }
    }
    orr_buf_append_byte(out, '\n');
    return 0;
}

/* ---- connection -------------------------------------------------------- */

static orr_status pg_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
                          PGresult **res, orr_err *err)
{
    PGresult *r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        orr_err_set(err, ORR_EIO, "postgres", "%s", PQerrorMessage(c));
        PQclear(r);
        return ORR_EIO;
    }
    if (res)
        *res = r;
    else
        PQclear(r);
    return ORR_OK;
}

/* "t" or "s.t" as quoted identifiers, appended to b. */
static orr_status pg_quote_table(PGconn *c, const char *table, orr_buf *b, orr_err *err)
{
    const char *dot = strchr(table, '.');
    size_t n1 = dot ? (size_t)(dot - table) : strlen(table);
    char *q = PQescapeIdentifier(c, table, n1);
    if (!q)
        return orr_err_set(err, ORR_EINVAL, "spec.sinks.postgres.table", "%s", PQerrorMessage(c));
    orr_buf_append_str(b, q);
    PQfreemem(q);
    if (dot) {
        q = PQescapeIdentifier(c, dot + 1, strlen(dot + 1));
        if (!q)
            return orr_err_set(err, ORR_EINVAL, "spec.sinks.postgres.table", "%s",
                               PQerrorMessage(c));
        orr_buf_append_byte(b, '.');
        orr_buf_append_str(b, q);
        PQfreemem(q);
    }
    return ORR_OK;
}

/* Rows (part, off_hi, off_lo) of orrery_sort_offsets become the stored
 * (expected) and current positions of their partitions. */
static void pg_take_positions(sort_sink_pg *k, const PGresult *r)
{
    for (int i = 0; i < PQntuples(r); i++) {
        long part = strtol(PQgetvalue(r, i, 0), NULL, 10);
        if (part < 0 || part >= SORT_MAX_PARTITIONS)
            continue;
        k->stored[part].hi = (uint64_t)strtoll(PQgetvalue(r, i, 1), NULL, 10);
        k->stored[part].lo = (uint64_t)strtoll(PQgetvalue(r, i, 2), NULL, 10);
        k->has_stored[part] = 1;
        k->pos[part] = k->stored[part];
    }
}

orr_status sort_sink_pg_open(const sort_spec *spec, sort_sink_pg **out, orr_err *err)
{
    *out = NULL;
    const char *dsn = spec->sinks.dsn;
    if (!dsn) {
        dsn = getenv(spec->sinks.dsn_env);
        if (!dsn || !*dsn)
            return orr_err_set(err, ORR_EINVAL, "spec.sinks.postgres.dsn_env",
                               "environment variable %s is not set", spec->sinks.dsn_env);
    }
    sort_sink_pg *k = orr_xcalloc(1, sizeof *k);
    k->spec = spec;
    k->first_ms = -1;
    orr_status rc = ORR_OK;
    PGresult *r = NULL;
    orr_buf sql = {0};
    k->rows = orr_xcalloc((size_t)spec->sinks.batch_rows, sizeof *k->rows);
    k->conn = PQconnectdb(dsn);
    if (PQstatus(k->conn) != CONNECTION_OK) {
        rc = orr_err_set(err, ORR_EIO, "spec.sinks.postgres", "connect: %s",
                         PQerrorMessage(k->conn));
        goto fail;
    }
    /* IF NOT EXISTS is not safe against a concurrent CREATE (sortd
     * processes of one consumer group start together): the loser fails
     * with a unique violation, and a second try finds the table. */
    for (int tries = 0; tries < 2; tries++) {
        rc = pg_exec(k->conn,
                     "CREATE TABLE IF NOT EXISTS orrery_sort_offsets (stream text NOT NULL, "
                     "part integer NOT NULL, off_hi bigint NOT NULL, off_lo bigint NOT NULL, "
                     "PRIMARY KEY (stream, part))",
                     0, NULL, NULL, err);
        if (rc == ORR_OK)
            break;
    }
    if (rc != ORR_OK)
        goto fail;
    const char *p1[] = {spec->name};
    rc = pg_exec(k->conn, "SELECT part, off_hi, off_lo FROM orrery_sort_offsets WHERE stream = $1",
                 1, p1, &r, err);
    if (rc != ORR_OK)
        goto fail;
    pg_take_positions(k, r);
    PQclear(r);
    r = NULL;
    /* The COPY statement, columns quoted. */
    orr_buf_append_str(&sql, "COPY ");
    rc = pg_quote_table(k->conn, spec->sinks.table, &sql, err);
    if (rc != ORR_OK)
        goto fail;
    orr_buf_append_str(&sql, " (");
    for (size_t i = 0; i < spec->sinks.ncolumns; i++) {
        char *q =
            PQescapeIdentifier(k->conn, spec->sinks.columns[i], strlen(spec->sinks.columns[i]));
        if (!q) {
            rc = orr_err_set(err, ORR_EINVAL, "spec.sinks.postgres.columns", "%s",
                             PQerrorMessage(k->conn));
            goto fail;
        }
        if (i > 0)
            orr_buf_append_str(&sql, ", ");
        orr_buf_append_str(&sql, q);
        PQfreemem(q);
    }
    orr_buf_append_str(&sql, ") FROM STDIN");
    k->copy_sql = orr_buf_detach(&sql, NULL);
    ORR_INFO("postgres sink open", "stream=%s table=%s columns=%zu batch_rows=%lld", spec->name,
             spec->sinks.table, spec->sinks.ncolumns, (long long)spec->sinks.batch_rows);
    *out = k;
    return ORR_OK;
fail:
    PQclear(r);
    orr_buf_free(&sql);
    sort_sink_pg_close(k);
    return rc;
}

int sort_sink_pg_skip(const sort_sink_pg *k, uint32_t partition, sort_off off)
{
    return partition < SORT_MAX_PARTITIONS && k->has_stored[partition] &&
           sort_off_cmp(off, k->stored[partition]) < 0;
}

int sort_sink_pg_add(sort_sink_pg *k, uint32_t partition, sort_off off, const sort_val *vals,
                     const char *rec, size_t len)
{
    size_t pos = k->lines.len;
    if ((int64_t)k->nrows >= k->spec->sinks.batch_rows)
        abort(); /* the pipeline flushes a due batch before adding */
    if (sort_pg_copy_row(&k->lines, k->spec, vals) != 0)
        return -1;
    pg_row *w = &k->rows[k->nrows++];
    w->partition = partition;
    w->off = off;
    w->line_pos = pos;
    w->line_len = k->lines.len - pos;
    w->rec_pos = k->recs.len;
    w->rec_len = len;
    orr_buf_append(&k->recs, rec, len);
    if (k->first_ms < 0)
        k->first_ms = orr_clock_ms(CLOCK_MONOTONIC);
    return 0;
}

void sort_sink_pg_advance(sort_sink_pg *k, uint32_t partition, sort_off next)
{
    if (partition >= SORT_MAX_PARTITIONS)
        return;
    if (k->has_stored[partition] && sort_off_cmp(next, k->pos[partition]) <= 0 &&
        !k->dirty[partition])
        return;
    k->pos[partition] = next;
    k->dirty[partition] = 1;
    if (k->first_ms < 0)
        k->first_ms = orr_clock_ms(CLOCK_MONOTONIC);
}

int sort_sink_pg_due(const sort_sink_pg *k, int64_t now_ms)
{
    if ((int64_t)k->nrows >= k->spec->sinks.batch_rows || k->lines.len >= SORT_PG_BATCH_BYTES)
        return 1;
    return k->first_ms >= 0 && now_ms - k->first_ms >= k->spec->sinks.batch_ms;
}

/* COPY n bytes of rows. ORR_OK; ORR_EAGAIN when PostgreSQL refused the data
 * (SQLSTATE class 22/23; msg gets its message); otherwise ORR_EIO. */
static orr_status pg_copy(sort_sink_pg *k, const char *data, size_t n, char *msg, size_t msgcap,
                          orr_err *err)
{
    PGresult *r = PQexec(k->conn, k->copy_sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        orr_err_set(err, ORR_EIO, "postgres", "COPY: %s", PQerrorMessage(k->conn));
        PQclear(r);
        return ORR_EIO;
    }
    PQclear(r);
    if (n > 0 && PQputCopyData(k->conn, data, (int)n) != 1)
        return orr_err_set(err, ORR_EIO, "postgres", "COPY data: %s", PQerrorMessage(k->conn));
    if (PQputCopyEnd(k->conn, NULL) != 1)
        return orr_err_set(err, ORR_EIO, "postgres", "COPY end: %s", PQerrorMessage(k->conn));
    orr_status rc = ORR_OK;
    while ((r = PQgetResult(k->conn)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == ORR_OK) {
            const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
            snprintf(msg, msgcap, "%s", m ? m : PQerrorMessage(k->conn));
            if (state && (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0))
                rc = ORR_EAGAIN;
            else
                rc = orr_err_set(err, ORR_EIO, "postgres", "COPY: %s", msg);
        }
        PQclear(r);
    }
    return rc;
}

/* Write the dirty positions as a compare-and-set inside the open
 * transaction: a stored row moves only if it still holds what this process
 * last loaded or saved (stored[]); a partition without one is inserted only
 * if no row appeared meanwhile. ORR_ECONFLICT naming stream and partition
 * when another process moved it (the caller rolls back), ORR_EIO otherwise. */
static orr_status pg_cas_offsets(sort_sink_pg *k, orr_err *err)
{
    for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++) {
        if (!k->dirty[part])
            continue;
        char sp[16], hi[32], lo[32], ehi[32], elo[32], ob[SORT_OFF_MAX];
        snprintf(sp, sizeof sp, "%u", part);
        snprintf(hi, sizeof hi, "%lld", (long long)k->pos[part].hi);
        snprintf(lo, sizeof lo, "%lld", (long long)k->pos[part].lo);
        snprintf(ehi, sizeof ehi, "%lld", (long long)k->stored[part].hi);
        snprintf(elo, sizeof elo, "%lld", (long long)k->stored[part].lo);
        const char *pv[] = {k->spec->name, sp, hi, lo, ehi, elo};
        PGresult *r = NULL;
        orr_status rc;
        if (k->has_stored[part])
            rc = pg_exec(k->conn,
                         "UPDATE orrery_sort_offsets SET off_hi = $3, off_lo = $4 "
                         "WHERE stream = $1 AND part = $2 AND off_hi = $5 AND off_lo = $6",
                         6, pv, &r, err);
        else
            rc = pg_exec(k->conn,
                         "INSERT INTO orrery_sort_offsets (stream, part, off_hi, off_lo) "
                         "VALUES ($1, $2, $3, $4) ON CONFLICT (stream, part) DO NOTHING",
                         4, pv, &r, err);
        if (rc != ORR_OK)
            return rc;
        int changed = strcmp(PQcmdTuples(r), "1") == 0;
        PQclear(r);
        if (!changed) {
            if (k->has_stored[part])
                return orr_err_set(err, ORR_ECONFLICT, "postgres",
                                   "stream %s partition %u: position in orrery_sort_offsets is no "
                                   "longer %s (another process moved it); batch rolled back",
                                   k->spec->name, part, sort_off_fmt(k->stored[part], ob));
            return orr_err_set(err, ORR_ECONFLICT, "postgres",
                               "stream %s partition %u: another process stored a position in "
                               "orrery_sort_offsets first; batch rolled back",
                               k->spec->name, part);
        }
    }
    return ORR_OK;
}

orr_status sort_sink_pg_flush(sort_sink_pg *k, sort_reject *rej, orr_err *err)
{
    if (k->first_ms < 0)
        return ORR_OK;
    char msg[512];
    uint64_t refused = 0;
    orr_status rc = pg_exec(k->conn, "BEGIN", 0, NULL, NULL, err);
    if (rc != ORR_OK)
        goto fail;
    rc = k->nrows ? pg_copy(k, k->lines.data, k->lines.len, msg, sizeof msg, err) : ORR_OK;
    if (rc == ORR_EAGAIN) {
        /* A refused row: again row by row, a savepoint each. */
        ORR_WARN("postgres refused a batch; retrying row by row", "stream=%s rows=%zu error=%s",
                 k->spec->name, k->nrows, orr_log_q(msg));
        pg_exec(k->conn, "ROLLBACK", 0, NULL, NULL, NULL);
        rc = pg_exec(k->conn, "BEGIN", 0, NULL, NULL, err);
        for (size_t i = 0; i < k->nrows && rc == ORR_OK; i++) {
            const pg_row *w = &k->rows[i];
            rc = pg_exec(k->conn, "SAVEPOINT orrery_row", 0, NULL, NULL, err);
            if (rc != ORR_OK)
                break;
            rc = pg_copy(k, k->lines.data + w->line_pos, w->line_len, msg, sizeof msg, err);
            if (rc == ORR_EAGAIN) {
                char ob[SORT_OFF_MAX];
                ORR_WARN("postgres refused a row", "stream=%s partition=%u offset=%s error=%s",
                         k->spec->name, w->partition, sort_off_fmt(w->off, ob), orr_log_q(msg));
                sort_reject_add(rej, w->partition, w->off, SORT_REJ_DB_REFUSED,
                                k->recs.data + w->rec_pos, w->rec_len);
                refused++;
                rc = pg_exec(k->conn, "ROLLBACK TO SAVEPOINT orrery_row", 0, NULL, NULL, err);
            } else if (rc == ORR_OK) {
                rc = pg_exec(k->conn, "RELEASE SAVEPOINT orrery_row", 0, NULL, NULL, err);
            }
        }
    }
    if (rc != ORR_OK)
        goto fail;
    rc = pg_cas_offsets(k, err);
    if (rc != ORR_OK)
        goto fail;
    rc = pg_exec(k->conn, "COMMIT", 0, NULL, NULL, err);
    if (rc != ORR_OK)
        goto fail;
    for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++) {
        if (!k->dirty[part])
            continue;
        k->stored[part] = k->pos[part];
        k->has_stored[part] = 1;
        k->dirty[part] = 0;
    }
    k->n_rows += k->nrows - refused;
    k->n_refused += refused;
    k->n_batches++;
    k->nrows = 0;
    orr_buf_reset(&k->lines);
    orr_buf_reset(&k->recs);
    k->first_ms = -1;
    return ORR_OK;
fail:
    if (PQstatus(k->conn) == CONNECTION_OK)
        pg_exec(k->conn, "ROLLBACK", 0, NULL, NULL, NULL);
    /* Rejects of a rolled-back retry may be written again by the next try. */
    if (rc == ORR_ECONFLICT)
        ORR_ERROR("postgres position conflict; batch rolled back", "stream=%s rows=%zu error=%s",
                  k->spec->name, k->nrows, orr_log_q(err ? err->msg : ""));
    return rc == ORR_OK ? ORR_EIO : rc;
}

int sort_sink_pg_safe(const sort_sink_pg *k, uint32_t partition, sort_off *out)
{
    if (partition >= SORT_MAX_PARTITIONS || !k->has_stored[partition])
        return 0;
    *out = k->stored[partition];
    return 1;
}

orr_status sort_sink_pg_reload(sort_sink_pg *k, const uint32_t *parts, size_t n, orr_err *err)
{
    orr_buf list = {0};
    PGresult *r = NULL;
    orr_status rc = ORR_OK;
    orr_buf_append_byte(&list, '{');
    for (size_t i = 0; i < n; i++) {
        if (parts[i] >= SORT_MAX_PARTITIONS)
            continue;
        if (k->dirty[parts[i]]) {
            rc = orr_err_set(err, ORR_EINVAL, "postgres",
                             "partition %u reloaded with unflushed changes", parts[i]);
            goto out;
        }
        orr_buf_appendf(&list, "%s%u", list.len > 1 ? "," : "", parts[i]);
    }
    orr_buf_append_byte(&list, '}');
    orr_buf_append_byte(&list, 0);
    const char *pv[] = {k->spec->name, list.data};
    rc = pg_exec(k->conn,
                 "SELECT part, off_hi, off_lo FROM orrery_sort_offsets WHERE stream = $1 AND "
                 "part = ANY($2::integer[])",
                 2, pv, &r, err);
    if (rc != ORR_OK)
        goto out;
    /* The table is the truth: a partition without a row expects none. */
    for (size_t i = 0; i < n; i++)
        if (parts[i] < SORT_MAX_PARTITIONS)
            k->has_stored[parts[i]] = 0;
    pg_take_positions(k, r);
out:
    PQclear(r);
    orr_buf_free(&list);
    return rc;
}

void sort_sink_pg_counts(const sort_sink_pg *k, uint64_t *rows, uint64_t *refused,
                         uint64_t *batches)
{
    *rows = k->n_rows;
    *refused = k->n_refused;
    *batches = k->n_batches;
}

void sort_sink_pg_close(sort_sink_pg *k)
{
    if (!k)
        return;
    if (k->conn)
        PQfinish(k->conn);
    free(k->copy_sql);
    orr_buf_free(&k->lines);
    orr_buf_free(&k->recs);
    free(k->rows);
    free(k);
}

/* ---- the sink's ops (sort_sink.h) -------------------------------------- */

static int pg__wanted(const sort_spec *spec)
{
    return spec->sinks.pg;
}

static orr_status pg__open(sort_sink_env *env, void **state, orr_err *err)
{
    sort_sink_pg *k = NULL;
    orr_status rc = sort_sink_pg_open(env->spec, &k, err);
    if (rc != ORR_OK)
        return rc;
    k->env = env;
    *state = k;
    return ORR_OK;
}

static void pg__advance(void *state, uint32_t partition, const sort_off *next)
{
    sort_sink_pg_advance(state, partition, *next);
}

static int pg__has(void *state, uint32_t partition, sort_off off)
{
    return sort_sink_pg_skip(state, partition, off);
}

/* Commit the batch when due (or forced). */
static orr_status pg__tick(void *state, int force, orr_err *err)
{
    sort_sink_pg *k = state;
    if (!force && !sort_sink_pg_due(k, orr_clock_ms(CLOCK_MONOTONIC)))
        return ORR_OK;
    return sort_sink_pg_flush(k, k->env->rej, err);
}

static orr_status pg__add(void *state, const sort_sink_rec *r, orr_err *err)
{
    sort_sink_pg *k = state;
    const sort_spec *s = k->env->spec;
    /* A value PostgreSQL cannot hold is a reject of this sink only. */
    if (sort_sink_pg_add(k, r->partition, r->off, r->vals, r->rec, r->len) != 0)
        sort_reject_add(k->env->rej, r->partition, r->off, SORT_REJ_DB_REFUSED, r->rec, r->len);
    else if (!s->sinks.files && !s->sinks.handoff)
        k->env->st->records_out++;
    if (sort_sink_pg_due(k, 0)) /* the batch is full */
        return pg__tick(k, 1, err);
    return ORR_OK;
}

static int pg__safe(void *state, uint32_t partition, sort_off *out)
{
    return sort_sink_pg_safe(state, partition, out);
}

static orr_status pg__barrier(void *state, orr_err *err)
{
    sort_sink_pg *k = state;
    return k->env->failed ? ORR_OK : pg__tick(k, 1, err);
}

static orr_status pg__reload(void *state, const uint32_t *parts, size_t n, orr_err *err)
{
    return n > 0 ? sort_sink_pg_reload(state, parts, n, err) : ORR_OK;
}

/* With PostgreSQL the only sink, its position is where the partition
 * resumes: the records below are in the table already. */
static int pg__resume(void *state, uint32_t partition, sort_off *at, int *only)
{
    sort_sink_pg *k = state;
    *only = !k->env->spec->sinks.files && !k->env->spec->sinks.handoff;
    return sort_sink_pg_safe(k, partition, at);
}

static void pg__stats(void *state, sort_pipe_stats *st)
{
    sort_sink_pg_counts(state, &st->pg_rows, &st->pg_refused, &st->pg_batches);
}

static void pg__close(void *state)
{
    sort_sink_pg_close(state);
}

const sort_sink_ops sort_sink_pg_ops = {
    .name = "postgres",
    .wanted = pg__wanted,
    .open = pg__open,
    .advance = pg__advance,
    .has = pg__has,
    .add = pg__add,
    .tick = pg__tick,
    .safe = pg__safe,
    .barrier = pg__barrier,
    .reload = pg__reload,
    .resume = pg__resume,
    .stop = pg__barrier,
    .stats = pg__stats,
    .close = pg__close,
};
