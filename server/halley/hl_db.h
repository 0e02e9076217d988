/*
 * hl_db.h - halleyd's PostgreSQL connection pool (libpq).
 *
 * A fixed number of connections, handed to one thread at a time. Statements
 * are declared once as hl_stmt (SQL with $n parameters, never built from
 * input) and prepared lazily on each connection the first time it runs them.
 *
 * Failure model: when PostgreSQL is unreachable every call returns ORR_EUNAVAIL
 * quickly (a broken connection is retried at most once a second per slot), the
 * process keeps running, and connections are re-established when the server
 * is back. A connection whose server went away while it sat idle is noticed
 * before it is handed out (its socket reads EOF), so a restart of PostgreSQL
 * costs no failed call once the server accepts connections again.
 *
 * Call order: hl_db_create -> (hl_db_get -> hl_db_query/hl_db_cmd ... ->
 * hl_db_put)* -> hl_db_destroy. Thread-safe apart from a single hl_conn,
 * which belongs to the thread that got it.
 */
#ifndef HL_DB_H
#define HL_DB_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdint.h>

#include "orr_arena.h"
#include "orr_status.h"

/* Statements a process can prepare (each connection keeps a byte per
 * slot). halleyd declared 212 when this was set; a statement past the last
 * slot aborts. */
#define HL_DB_MAX_STMTS 512

/* A statement. Declare with static storage: static hl_stmt q = HL_STMT("..."). */
typedef struct hl_stmt {
    const char *sql;
    _Atomic int id; /* slot in each connection's prepared set; 0 = not assigned */
    int binary;     /* results in PostgreSQL's binary format: read with hl_bin_* */
    int generic;    /* prepared, run its generic plan (see HL_STMT_LIST) */
} hl_stmt;
#define HL_STMT(sql_text)                                                                          \
    {                                                                                              \
        (sql_text), 0, 0, 0                                                                        \
    }
/* A list's page: results in binary, so integers and timestamps need no text
 * conversion on either side (PostgreSQL printing numbers that halleyd then
 * parsed was a third of a page's cost), and run with its generic plan
 * (plan_cache_mode = force_generic_plan while it runs). With the default
 * mode PostgreSQL planned such a statement anew at every call, because its
 * generic plan's estimate (a LIMIT of unknown size) came out above the
 * custom plans' one: the planning was 40 % of the statement's CPU. Only for
 * statements whose generic plan is the plan wanted whatever the values (one
 * index walked in the list's order, or, for a state set alone, one walk
 * per state; it_lists.c checks that each stops at its page). A filtered
 * list's statement is declared with it too, for its binary results, but
 * runs through hl_db_query_custom, which plans it anew at each call
 * whatever its generic flag says. */
#define HL_STMT_LIST(sql_text)                                                                     \
    {                                                                                              \
        (sql_text), 0, 1, 1                                                                        \
    }

typedef struct hl_db hl_db;
typedef struct hl_conn hl_conn;

typedef struct hl_db_opts {
    const char *dsn;          /* libpq connection string */
    int size;                 /* connections (1..256) */
    int connect_timeout_s;    /* per connection attempt (default 3) */
    int acquire_timeout_ms;   /* wait for a free connection (default 5000) */
    int statement_timeout_ms; /* server-side limit per statement (default 15000) */
} hl_db_opts;

/* Create the pool and try to open every connection; a server that is down is
 * not an error (connections open later). ORR_EINVAL for bad options. */
orr_status hl_db_create(const hl_db_opts *opts, hl_db **out, orr_err *err);
/* Close every connection. No connection may be out. NULL is a no-op. */
void hl_db_destroy(hl_db *db);

/* Take a connected connection. Blocks up to acquire_timeout_ms for a free
 * one. ORR_EUNAVAIL (with libpq's reason) when PostgreSQL cannot be reached
 * or no connection frees up in time. Give it back with hl_db_put. */
orr_status hl_db_get(hl_db *db, hl_conn **out, orr_err *err);
/* Give back; an open transaction is rolled back first. */
void hl_db_put(hl_db *db, hl_conn *c);

/* Run a prepared statement with n text parameters (NULL entries are SQL
 * NULL). On success *res (if res != NULL) is the result, cleared when arena a
 * is reset or destroyed; with res == NULL it is cleared at once. Errors:
 *   ORR_EUNAVAIL  connection lost (the connection is reopened later)
 *   ORR_EEXIST    unique violation        ORR_ENOTFOUND  foreign key violation
 *   ORR_EINVAL    check violation / bad data   ORR_ECONFLICT serialization or deadlock
 *   ORR_ETIMEOUT  statement timeout       ORR_EINTERNAL  anything else (logged)
 * err->msg carries PostgreSQL's message; err->field is left empty. */
orr_status hl_db_query(hl_conn *c, orr_arena *a, hl_stmt *st, int n, const char *const *params,
                       PGresult **res, orr_err *err);
/* hl_db_get + hl_db_query + hl_db_put: one statement on a pooled connection,
 * for the many calls that need no transaction. Same errors as both. */
orr_status hl_db_query_once(hl_db *db, orr_arena *a, hl_stmt *st, int n, const char *const *params,
                            PGresult **res, orr_err *err);
/* Run st prepared, but planned anew for these very parameters
 * (plan_cache_mode = force_custom_plan while it runs): for a statement
 * whose best plan depends on which optional filters are set, where a
 * cached generic plan would read every row. Prepared, it is parsed once
 * per connection: for the lists' filtered statement, parsing at each call
 * cost as much as the planning. Same results and errors as hl_db_query. */
orr_status hl_db_query_custom(hl_conn *c, orr_arena *a, hl_stmt *st, int n,
                              const char *const *params, PGresult **res, orr_err *err);
/* Run a fixed command without parameters ("BEGIN", "COMMIT"). Same errors. */
orr_status hl_db_cmd(hl_conn *c, const char *sql, orr_err *err);
orr_status hl_db_begin(hl_conn *c, orr_err *err);
orr_status hl_db_commit(hl_conn *c, orr_err *err);
void hl_db_rollback(hl_conn *c);

/* The connection's SQLSTATE of the last error ("" if none). */
const char *hl_db_sqlstate(const hl_conn *c);

typedef struct hl_db_stats {
    int size;
    int idle;             /* connections in the pool right now */
    int connected;        /* connections with a live server session */
    uint64_t unavailable; /* calls answered EUNAVAIL since start */
} hl_db_stats;
void hl_db_get_stats(hl_db *db, hl_db_stats *out);

/* Helpers over a result: value as text ("" for NULL), as int64 (0 for NULL),
 * and whether it is NULL. */
const char *hl_val(const PGresult *r, int row, int col);
long long hl_val_i64(const PGresult *r, int row, int col);
int hl_val_bool(const PGresult *r, int row, int col);
int hl_val_null(const PGresult *r, int row, int col);

/* The same over a binary result (HL_STMT_LIST): an int2, int4 or int8 (0 for
 * NULL), a bool, and a timestamptz as epoch milliseconds rounded half away
 * from zero, which is (extract(epoch from x) * 1000)::int8 (0 for NULL).
 * Text columns read with hl_val as before: their binary form is the text. */
long long hl_bin_i64(const PGresult *r, int row, int col);
int hl_bin_bool(const PGresult *r, int row, int col);
long long hl_bin_ms(const PGresult *r, int row, int col);
/* PostgreSQL's binary timestamp (microseconds since 2000-01-01 UTC) as
 * milliseconds since 1970, rounded as hl_bin_ms rounds; its infinities
 * stay INT64_MAX and INT64_MIN. */
long long hl_pg_us_to_ms(int64_t pg_us);

#endif
