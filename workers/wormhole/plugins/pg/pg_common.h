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
#include "wh_sqlopt.h"

typedef struct wh_pg_conf {
    wh_sqlopt o; /* the options every SQL store shares */
    /* reader */
    PGconn *snap_conn; /* holds the exported snapshot from prepare to finish */
    char snapshot[64];
    wh_schema src; /* reader: the columns read */
    wh_kind key_kind;
    /* writer */
    int channels;
    int use_stage;
    orr_buf qtable;       /* quoted target */
    orr_buf qstage;       /* quoted staging table */
    orr_buf collist;      /* quoted target column list "(a, b)" */
    wh_schema target;     /* target columns in load order */
    unsigned char *check; /* per column: validate values before loading */
    unsigned char *conv;  /* per column: a wh_pg_conv (bit strings) */
    PGconn *per_conn;     /* writer periphery connection */
    /* resume bookkeeping (pg_resume.c) */
    int resume_on;          /* split records kept: a staging table for every mode but append */
    int resume_keep;        /* resuming: the staging table of the failed run is kept */
    const char *resume_job; /* the job's name (borrowed) */
} wh_pg_conf;

/* Per target column, what the writer does besides the generic value check
 * (pg_periphery.c decides, pg_writer.c applies): what PostgreSQL would
 * refuse in the middle of a COPY, failing the whole load, is a dirty row. */
enum wh_pg_conv {
    WH_PG_CONV_NONE = 0,
    WH_PG_CONV_BIT,        /* target bit(n): exactly n '0'/'1' digits */
    WH_PG_CONV_VARBIT,     /* target bit varying(n): at most n digits */
    WH_PG_CONV_BITS_BYTES, /* bit string source into bytea: "\x" hex */
    WH_PG_CONV_BITS_INT,   /* bit string source into an integer: its value */
    WH_PG_CONV_NUL,        /* unchecked text-like column: refuse a NUL byte */
    WH_PG_CONV_JSONB,      /* jsonb: refuse a NUL byte and the escape \u0000 */
};

/* Connect and set the session (UTF8, ISO, UTC, hex bytea, floats exact).
 * NULL with ORR_EUNAVAIL in err (field = path) on failure. */
PGconn *wh_pg_connect(const char *dsn, const char *path, orr_err *err);
/* Run a command; ORR_EIO with the server's message on failure. */
orr_status wh_pg_exec(PGconn *c, const char *sql, const char *path, orr_err *err);
/* Append "a"."b" for a possibly qualified name a.b. */
void wh_pg_quote_qualified(orr_buf *out, const char *name);
void wh_pg_quote_ident(orr_buf *out, const char *name);
/* Append a quoted string literal. */
void wh_pg_quote_literal(orr_buf *out, const char *s);
/* Columns of table (all, or those named, in that order). ORR_ENOTFOUND
 * naming the table or column. */
orr_status wh_pg_describe(PGconn *c, const char *table, const char **names, size_t nnames,
                          wh_schema *out, const char *path, orr_err *err);

/* The planner's estimate of the rows the reader will read (pg_estimate.c);
 * 0 when unknown. Never fails. */
uint64_t wh_pg_estimate_rows(PGconn *conn, const wh_pg_conf *c, const wh_ctx *ctx);

/* Options shared by the reader and writer configure. */
orr_status wh_pg_conf_parse(const json_t *spec, const char *path, int is_reader, wh_pg_conf **out,
                            orr_err *err);
void wh_pg_conf_free(void *conf);

/* The roles, each in its own file, gathered in wh_pg_plugin (pg_common.c). */
extern const wh_reader_ops wh_pg_reader;
extern const wh_writer_ops wh_pg_writer;
extern const wh_splitter_ops wh_pg_splitter;
extern const wh_periphery_ops wh_pg_reader_periphery;
extern const wh_periphery_ops wh_pg_writer_periphery;
extern const wh_resume_ops wh_pg_resume;

/* Resume (pg_resume.c, pg_writer.c): the statements that record a split and
 * that drop a job's records (each ends with "; "), and the writer channel's
 * split commit (wh_resume_ops.split_commit). */
void wh_pg_resume_record_sql(const wh_pg_conf *c, const char *job, const char *run_key,
                             size_t split, uint64_t rows, orr_buf *q);
void wh_pg_resume_clear_sql(const wh_pg_conf *c, const char *job, orr_buf *q);
orr_status wh_pg_writer_split_commit(void *state, const char *job, const char *run_key,
                                     size_t split, uint64_t rows, uint64_t *confirmed,
                                     orr_err *err);
extern const wh_quality_ops wh_pg_quality;
/* A writer channel state's connection (pg_writer.c), for pg_quality.c. */
PGconn *wh_pg_writer_conn(void *state);
extern const wh_meta_ops wh_pg_meta; /* pg_meta.c */

/* Pass-through in COPY's binary format (pg_raw.c). A reader's parse state
 * over the CopyData messages of one COPY TO. */
typedef struct wh_pg_raw {
    int header_done;
    int ended; /* the trailer was seen */
    uint64_t rownum;
} wh_pg_raw;
/* Add the tuples of one CopyData message to b (the header first, the
 * trailer ends); the rows added, or -1 with *why when malformed. */
int wh_pg_raw_parse(wh_pg_raw *st, const char *p, size_t n, wh_batch *b, const char **why);
/* The binary COPY header (19 bytes into out); its length. */
size_t wh_pg_raw_header(char *out);
/* wh_writer_ops.raw_from of the PostgreSQL writer. */
int wh_pg_raw_from(void *conf, const struct wh_reader_ops *reader, void *reader_conf);

#endif
