/*
 * pg_common.h - what the PostgreSQL plugin's roles share: options,
 * connections with the session settings that make text values canonical
 * (UTF8, ISO dates, UTC, hex bytea, exact floats), identifier quoting and
 * the catalog lookup of a table's columns.
 */
#ifndef WH_PG_COMMON_H
#define WH_PG_COMMON_H

#include <libpq-fe.h>

#include "orr_buf.h"
#include "wh.h"

typedef struct pg_conf {
    char path[48]; /* JSON path of the spec, for errors */
    const char *dsn;
    const char *table;
    const char **columns;
    size_t ncolumns;
    const char *filter;
    /* reader */
    const char *split_key;
    int64_t shards; /* 0 = 4 per channel */
    const char **tables;
    size_t ntables;
    PGconn *snap_conn; /* holds the exported snapshot from prepare to finish */
    char snapshot[64];
    wh_schema src; /* reader: the columns read */
    wh_kind key_kind;
    /* writer */
    wh_mode mode;
    const char **key;
    size_t nkey;
    int channels;
    int use_stage;
    orr_buf qtable;       /* quoted target */
    orr_buf qstage;       /* quoted staging table */
    orr_buf collist;      /* quoted target column list "(a, b)" */
    wh_schema target;     /* target columns in load order */
    unsigned char *check; /* per column: validate values before loading */
    PGconn *per_conn;     /* writer periphery connection */
} pg_conf;

/* Connect and set the session (UTF8, ISO, UTC, hex bytea, floats exact).
 * NULL with ORR_EUNAVAIL in err (field = path) on failure. */
PGconn *pg_connect(const char *dsn, const char *path, orr_err *err);
/* Run a command; ORR_EIO with the server's message on failure. */
orr_status pg_exec(PGconn *c, const char *sql, const char *path, orr_err *err);
/* Append "a"."b" for a possibly qualified name a.b. */
void pg_quote_qualified(orr_buf *out, const char *name);
void pg_quote_ident(orr_buf *out, const char *name);
/* Append a quoted string literal. */
void pg_quote_literal(orr_buf *out, const char *s);
/* Columns of table (all, or those named, in that order). ORR_ENOTFOUND
 * naming the table or column. */
orr_status pg_describe(PGconn *c, const char *table, const char **names, size_t nnames,
                       wh_schema *out, const char *path, orr_err *err);

/* Options shared by the reader and writer configure. */
orr_status pg_conf_parse(const json_t *spec, const char *path, int is_reader, pg_conf **out,
                         orr_err *err);
void pg_conf_free(void *conf);

#endif
