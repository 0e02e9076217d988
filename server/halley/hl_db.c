/*
 * hl_db.c - fixed-size libpq connection pool with lazily prepared statements.
 *
 * Each slot owns at most one PGconn. A slot whose connection broke (or never
 * opened) is reopened by the thread that takes it, outside the pool lock, at
 * most once per second: in between, takers get ORR_EUNAVAIL at once, which is
 * what keeps calls fast while PostgreSQL is down. Prepared statement names
 * are "hl<id>", where id is the statement's process-wide slot; a reopened
 * connection forgets what it had prepared.
 */
#include "hl_db.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_log.h"

/* A session's plan_cache_mode: the configured one, force_generic_plan
 * (HL_STMT_LIST statements), force_custom_plan (hl_db_query_custom). */
enum { HL_PLAN_CONFIGURED = 0, HL_PLAN_GENERIC = 1, HL_PLAN_CUSTOM = 2 };

struct hl_conn {
    PGconn *pg;
    int broken;
    int64_t last_try_ms; /* last (re)connect attempt */
    char sqlstate[6];
    unsigned char prepared[HL_DB_MAX_STMTS];
    /* The session's plan_cache_mode as set from here (HL_PLAN_*), or -1:
     * not known (the transaction a SET was made in has ended: a rollback,
     * or a COMMIT that rolled back, undoes it). */
    signed char plan;
    unsigned char mode_in_tx; /* a SET of the mode was made in the open transaction */
    hl_conn *next_free;
};

struct hl_db {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    hl_conn *slots;
    hl_conn *free_list;
    int size;
    int idle;
    int connect_timeout_s;
    int acquire_timeout_ms;
    int statement_timeout_ms;
    char *dsn;
    _Atomic uint64_t unavailable;
};

static _Atomic int hl__next_stmt_id;

static int64_t hl__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void hl__close(hl_conn *c)
{
    if (c->pg)
        PQfinish(c->pg);
    c->pg = NULL;
    c->broken = 1;
    memset(c->prepared, 0, sizeof c->prepared);
    c->plan = HL_PLAN_CONFIGURED;
    c->mode_in_tx = 0;
}

/* Open c's connection. ORR_EUNAVAIL with libpq's message on failure.
 *
 * The session runs without JIT compilation. halleyd's statements read a
 * page or a few rows, but a generic plan (HL_STMT_LIST) is costed for a
 * tenth of the table under its LIMIT, so on a large table its estimate
 * passes jit_above_cost and PostgreSQL compiled the plan at every call: a
 * task's page of 51 rows among 302,000 instances took 11 ms of JIT for
 * 0.2 ms of execution. */
static orr_status hl__connect(hl_db *db, hl_conn *c, orr_err *err)
{
    char timeout[16], options[160];
    snprintf(timeout, sizeof timeout, "%d", db->connect_timeout_s);
    snprintf(options, sizeof options,
             "-c statement_timeout=%d -c idle_in_transaction_session_timeout=%d -c jit=off",
             db->statement_timeout_ms, db->statement_timeout_ms * 2);
    const char *keys[] = {"dbname", "connect_timeout", "application_name", "options", NULL};
    const char *vals[] = {db->dsn, timeout, "halleyd", options, NULL};

    hl__close(c);
    c->last_try_ms = hl__now_ms();
    c->pg = PQconnectdbParams(keys, vals, 1);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
        const char *m = c->pg ? PQerrorMessage(c->pg) : "out of memory";
        orr_err_set(err, ORR_EUNAVAIL, NULL, "PostgreSQL unavailable: %.*s", (int)strcspn(m, "\n"),
                    m);
        hl__close(c);
        return ORR_EUNAVAIL;
    }
    c->broken = 0;
    return ORR_OK;
}

/* 1 if an idle connection's server has gone. Pool connections LISTEN to
 * nothing, so an idle one has nothing to read unless the server sent a
 * termination message or closed it (a restart): readable means dead. */
static int hl__idle_conn_dead(hl_conn *c)
{
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK)
        return 1;
    struct pollfd p = {.fd = PQsocket(c->pg), .events = POLLIN};
    if (p.fd < 0)
        return 1;
    return poll(&p, 1, 0) != 0;
}

orr_status hl_db_create(const hl_db_opts *o, hl_db **out, orr_err *err)
{
    if (!o || !o->dsn || !*o->dsn)
        return orr_err_set(err, ORR_EINVAL, "halley.pg_dsn", "is required");
    if (o->size < 1 || o->size > 256)
        return orr_err_set(err, ORR_EINVAL, "halley.pool_size", "must be between 1 and 256");
    hl_db *db = orr_xcalloc(1, sizeof *db);
    db->slots = orr_xcalloc((size_t)o->size, sizeof *db->slots);
    db->dsn = orr_xstrdup(o->dsn);
    pthread_mutex_init(&db->mu, NULL);
    pthread_cond_init(&db->cv, NULL);
    db->size = o->size;
    db->connect_timeout_s = o->connect_timeout_s > 0 ? o->connect_timeout_s : 3;
    db->acquire_timeout_ms = o->acquire_timeout_ms > 0 ? o->acquire_timeout_ms : 5000;
    db->statement_timeout_ms = o->statement_timeout_ms > 0 ? o->statement_timeout_ms : 15000;
    for (int i = db->size - 1; i >= 0; i--) {
        hl_conn *c = &db->slots[i];
        c->broken = 1;
        c->next_free = db->free_list;
        db->free_list = c;
    }
    db->idle = db->size;
    orr_err e;
    for (int i = 0; i < db->size; i++) {
        if (hl__connect(db, &db->slots[i], &e) != ORR_OK) {
            ORR_WARN("postgres not reachable at start", "err=%s", orr_log_q(e.msg));
            db->slots[i].last_try_ms = 0; /* let the first call retry at once */
            break;
        }
    }
    *out = db;
    return ORR_OK;
}

void hl_db_destroy(hl_db *db)
{
    if (!db)
        return;
    for (int i = 0; i < db->size; i++)
        hl__close(&db->slots[i]);
    pthread_mutex_destroy(&db->mu);
    pthread_cond_destroy(&db->cv);
    free(db->slots);
    free(db->dsn);
    free(db);
}

orr_status hl_db_get(hl_db *db, hl_conn **out, orr_err *err)
{
    struct timespec deadline = orr_clock_after(CLOCK_REALTIME, db->acquire_timeout_ms);

    pthread_mutex_lock(&db->mu);
    while (!db->free_list) {
        if (pthread_cond_timedwait(&db->cv, &db->mu, &deadline) == ETIMEDOUT && !db->free_list) {
            pthread_mutex_unlock(&db->mu);
            atomic_fetch_add(&db->unavailable, 1);
            return orr_err_set(err, ORR_EUNAVAIL, NULL,
                               "no PostgreSQL connection free within %d ms",
                               db->acquire_timeout_ms);
        }
    }
    hl_conn *c = db->free_list;
    db->free_list = c->next_free;
    db->idle--;
    pthread_mutex_unlock(&db->mu);

    if (!c->broken && hl__idle_conn_dead(c)) {
        hl__close(c);
        c->last_try_ms = 0; /* the server went away while idle: retry now */
    }
    if (c->broken) {
        if (hl__now_ms() - c->last_try_ms < 1000) {
            hl_db_put(db, c);
            atomic_fetch_add(&db->unavailable, 1);
            return orr_err_set(err, ORR_EUNAVAIL, NULL,
                               "PostgreSQL unavailable (reconnect pending)");
        }
        if (hl__connect(db, c, err) != ORR_OK) {
            hl_db_put(db, c);
            atomic_fetch_add(&db->unavailable, 1);
            return ORR_EUNAVAIL;
        }
        ORR_INFO("postgres connection opened", "slot=%d", (int)(c - db->slots));
    }
    c->sqlstate[0] = 0;
    *out = c;
    return ORR_OK;
}

void hl_db_put(hl_db *db, hl_conn *c)
{
    if (!c)
        return;
    if (!c->broken && c->pg && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        hl_db_rollback(c);
    pthread_mutex_lock(&db->mu);
    c->next_free = db->free_list;
    db->free_list = c;
    db->idle++;
    pthread_cond_signal(&db->cv);
    pthread_mutex_unlock(&db->mu);
}

/* Map a failed result (or none) to a status; marks the connection broken when
 * the session is gone. Clears r. */
static orr_status hl__fail(hl_conn *c, PGresult *r, orr_err *err)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!msg)
        msg = PQerrorMessage(c->pg);
    snprintf(c->sqlstate, sizeof c->sqlstate, "%s", state ? state : "");
    orr_status s = ORR_EINTERNAL;
    if (PQstatus(c->pg) != CONNECTION_OK || !state || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57P", 3) == 0) {
        s = ORR_EUNAVAIL;
    } else if (strcmp(state, "23505") == 0) {
        s = ORR_EEXIST;
    } else if (strcmp(state, "23503") == 0) {
        s = ORR_ENOTFOUND;
    } else if (strncmp(state, "23", 2) == 0 || strncmp(state, "22", 2) == 0) {
        s = ORR_EINVAL;
    } else if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0) {
        s = ORR_ECONFLICT;
    } else if (strcmp(state, "57014") == 0) {
        s = ORR_ETIMEOUT;
    }
    if (s == ORR_EUNAVAIL) {
        orr_err_set(err, s, NULL, "PostgreSQL unavailable: %.*s", (int)strcspn(msg, "\n"), msg);
        hl__close(c);
        c->last_try_ms = 0;
    } else {
        orr_err_set(err, s, NULL, "%.*s", (int)strcspn(msg, "\n"), msg);
        if (s == ORR_EINTERNAL)
            ORR_ERROR("postgres error", "sqlstate=%s err=%s", c->sqlstate, orr_log_q(msg));
    }
    if (r)
        PQclear(r);
    return s;
}

static void hl__pqclear(void *p)
{
    PQclear(p);
}

/* A query's result r: an error marks c as hl__fail says; else r is handed
 * to *res (freed with arena a) or, when res is NULL, freed now. */
static orr_status hl__result(hl_conn *c, orr_arena *a, PGresult *r, PGresult **res, orr_err *err)
{
    ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (t != PGRES_TUPLES_OK && t != PGRES_COMMAND_OK)
        return hl__fail(c, r, err);
    if (res) {
        orr_arena_on_cleanup(a, hl__pqclear, r);
        *res = r;
    } else {
        PQclear(r);
    }
    return ORR_OK;
}

orr_status hl_db_query_once(hl_db *db, orr_arena *a, hl_stmt *st, int n, const char *const *params,
                            PGresult **res, orr_err *err)
{
    hl_conn *c;
    orr_status s = hl_db_get(db, &c, err);
    if (s != ORR_OK)
        return s;
    s = hl_db_query(c, a, st, n, params, res, err);
    hl_db_put(db, c);
    return s;
}

/* The SET that brings the session to each HL_PLAN_*. */
static const char *const hl__plan_sql[] = {
    [HL_PLAN_CONFIGURED] = "RESET plan_cache_mode",
    [HL_PLAN_GENERIC] = "SET plan_cache_mode = force_generic_plan",
    [HL_PLAN_CUSTOM] = "SET plan_cache_mode = force_custom_plan",
};

/* Bring the session's plan_cache_mode to what the next statement wants. A
 * SET costs a round trip, paid only when the mode changes between two
 * statements. */
static orr_status hl__plan_mode(hl_conn *c, int plan, orr_err *err)
{
    if (c->plan == plan)
        return ORR_OK;
    orr_status s = hl_db_cmd(c, hl__plan_sql[plan], err);
    if (s == ORR_OK) {
        c->plan = (signed char)plan;
        if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
            c->mode_in_tx = 1;
    }
    return s;
}

/* Before a statement: a live connection, in the plan mode it wants. */
static orr_status hl__ready(hl_conn *c, int plan, orr_err *err)
{
    if (c->broken || !c->pg)
        return orr_err_set(err, ORR_EUNAVAIL, NULL, "PostgreSQL unavailable");
    return hl__plan_mode(c, plan, err);
}

/* st prepared on c (once per connection) and run in plan mode plan. */
static orr_status hl__exec(hl_conn *c, orr_arena *a, hl_stmt *st, int plan, int n,
                           const char *const *params, PGresult **res, orr_err *err)
{
    orr_status ms = hl__ready(c, plan, err);
    if (ms != ORR_OK)
        return ms;
    int id = atomic_load(&st->id);
    if (id == 0) {
        int mine = atomic_fetch_add(&hl__next_stmt_id, 1) + 1;
        int expected = 0;
        if (!atomic_compare_exchange_strong(&st->id, &expected, mine))
            mine = expected;
        id = mine;
    }
    if (id >= HL_DB_MAX_STMTS) {
        ORR_ERROR("too many prepared statements", "max=%d", HL_DB_MAX_STMTS);
        abort();
    }
    char name[16];
    snprintf(name, sizeof name, "hl%d", id);
    if (!c->prepared[id]) {
        PGresult *p = PQprepare(c->pg, name, st->sql, n, NULL);
        if (!p || PQresultStatus(p) != PGRES_COMMAND_OK)
            return hl__fail(c, p, err);
        PQclear(p);
        c->prepared[id] = 1;
    }
    return hl__result(c, a, PQexecPrepared(c->pg, name, n, params, NULL, NULL, st->binary), res,
                      err);
}

orr_status hl_db_query(hl_conn *c, orr_arena *a, hl_stmt *st, int n, const char *const *params,
                       PGresult **res, orr_err *err)
{
    return hl__exec(c, a, st, st->generic ? HL_PLAN_GENERIC : HL_PLAN_CONFIGURED, n, params, res,
                    err);
}

orr_status hl_db_query_custom(hl_conn *c, orr_arena *a, hl_stmt *st, int n,
                              const char *const *params, PGresult **res, orr_err *err)
{
    return hl__exec(c, a, st, HL_PLAN_CUSTOM, n, params, res, err);
}

orr_status hl_db_cmd(hl_conn *c, const char *sql, orr_err *err)
{
    if (c->broken || !c->pg)
        return orr_err_set(err, ORR_EUNAVAIL, NULL, "PostgreSQL unavailable");
    PGresult *r = PQexec(c->pg, sql);
    ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (t != PGRES_TUPLES_OK && t != PGRES_COMMAND_OK)
        return hl__fail(c, r, err);
    PQclear(r);
    return ORR_OK;
}

orr_status hl_db_begin(hl_conn *c, orr_err *err)
{
    return hl_db_cmd(c, "BEGIN", err);
}

/* The transaction ends: a SET of the mode made in it may be undone (a
 * COMMIT of a failed transaction rolls back too), so the next statement
 * sets the mode again. */
static void hl__tx_ended(hl_conn *c)
{
    if (c->mode_in_tx)
        c->plan = -1;
    c->mode_in_tx = 0;
}

orr_status hl_db_commit(hl_conn *c, orr_err *err)
{
    orr_status s = hl_db_cmd(c, "COMMIT", err);
    hl__tx_ended(c);
    return s;
}

void hl_db_rollback(hl_conn *c)
{
    orr_err e;
    if (c->pg && !c->broken && PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
        (void)hl_db_cmd(c, "ROLLBACK", &e);
        hl__tx_ended(c);
    }
}

const char *hl_db_sqlstate(const hl_conn *c)
{
    return c->sqlstate;
}

void hl_db_get_stats(hl_db *db, hl_db_stats *out)
{
    pthread_mutex_lock(&db->mu);
    out->size = db->size;
    out->idle = db->idle;
    out->connected = 0;
    for (int i = 0; i < db->size; i++)
        out->connected += !db->slots[i].broken;
    pthread_mutex_unlock(&db->mu);
    out->unavailable = atomic_load(&db->unavailable);
}

const char *hl_val(const PGresult *r, int row, int col)
{
    return PQgetvalue(r, row, col);
}

long long hl_val_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

int hl_val_bool(const PGresult *r, int row, int col)
{
    return PQgetvalue(r, row, col)[0] == 't';
}

int hl_val_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col);
}

/* A binary value's bytes, big-endian, as an unsigned integer of len bytes. */
static uint64_t hl__be(const unsigned char *p, int len)
{
    uint64_t v = 0;
    for (int i = 0; i < len; i++)
        v = v << 8 | p[i];
    return v;
}

long long hl_bin_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
    switch (PQgetlength(r, row, col)) {
    case 2:
        return (int16_t)hl__be(p, 2);
    case 4:
        return (int32_t)hl__be(p, 4);
    case 8:
        return (long long)hl__be(p, 8);
    default:
        return 0;
    }
}

int hl_bin_bool(const PGresult *r, int row, int col)
{
    return !PQgetisnull(r, row, col) && PQgetlength(r, row, col) == 1 &&
           PQgetvalue(r, row, col)[0] != 0;
}

/* Seconds from 1970-01-01 to 2000-01-01, PostgreSQL's epoch. */
#define HL_PG_EPOCH_US (946684800LL * 1000000)

long long hl_pg_us_to_ms(int64_t pg_us)
{
    /* Its infinities (INT64_MIN, INT64_MAX) stay the extremes. After 2000
     * the offset is added in milliseconds (it is whole ones), so even the
     * last years of PostgreSQL's range (to 294276 AD) cannot overflow. */
    if (pg_us == INT64_MAX || pg_us == INT64_MIN)
        return pg_us;
    if (pg_us >= 0)
        return HL_PG_EPOCH_US / 1000 + pg_us / 1000 + (pg_us % 1000 + 500) / 1000;
    int64_t us = pg_us + HL_PG_EPOCH_US;
    return us >= 0 ? (us + 500) / 1000 : -((-us + 500) / 1000);
}

long long hl_bin_ms(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8)
        return 0;
    return hl_pg_us_to_ms((int64_t)hl__be((const unsigned char *)PQgetvalue(r, row, col), 8));
}
