/*
 * mysql_common.h - what the MariaDB/MySQL plugin's roles share: options,
 * connections from "mysql://user:password@host:port/database" DSNs with the
 * session that makes values exchangeable (utf8mb4, time_zone +00:00, strict
 * sql_mode), identifier quoting and the column catalog with its mapping to
 * value kinds (docs/wormhole.md has the table).
 */
#ifndef WH_MYSQL_COMMON_H
#define WH_MYSQL_COMMON_H

#include <mysql.h>

#include "orr_buf.h"
#include "wh.h"
#include "wh_sqlopt.h"

typedef struct wh_mysql_conf {
    wh_sqlopt o; /* the options every SQL store shares */
    /* reader */
    wh_schema src;
    wh_kind key_kind;
    /* writer */
    int channels;
    int64_t insert_bytes; /* statement size */
    orr_buf qtable, qstage, collist, update;
    wh_schema target;
    unsigned char *check;
    /* resume bookkeeping (mysql_resume.c) */
    int resume_on;          /* split records kept */
    int resume_keep;        /* resuming: the staging table of the failed run is kept */
    const char *resume_job; /* the job's name (borrowed) */
} wh_mysql_conf;

/* Connect with the session settings. NULL with ORR_EUNAVAIL (or ORR_EINVAL
 * for a malformed DSN) naming path. */
MYSQL *wh_mysql_connect(const char *dsn, const char *path, orr_err *err);
orr_status wh_mysql_exec(MYSQL *m, const char *sql, const char *path, orr_err *err);
/* `a`.`b` for a possibly qualified name. */
void wh_mysql_quote_qualified(orr_buf *out, const char *name);
void wh_mysql_quote_ident(orr_buf *out, const char *name);
/* 'escaped' literal. */
void wh_mysql_quote_literal(MYSQL *m, orr_buf *out, const char *s, size_t n);
orr_status wh_mysql_describe(MYSQL *m, const char *table, const char **names, size_t nnames,
                             wh_schema *out, const char *path, orr_err *err);

orr_status wh_mysql_conf_parse(const json_t *spec, const char *path, int is_reader,
                               wh_mysql_conf **out, orr_err *err);
void wh_mysql_conf_free(void *conf);

/* The roles, each in its own file, gathered in wh_mysql_plugin (mysql_common.c). */
extern const wh_reader_ops wh_mysql_reader;
extern const wh_writer_ops wh_mysql_writer;
extern const wh_splitter_ops wh_mysql_splitter;
extern const wh_periphery_ops wh_mysql_reader_periphery;
extern const wh_periphery_ops wh_mysql_writer_periphery;
extern const wh_quality_ops wh_mysql_quality;
/* A writer channel state's connection (mysql_writer.c), for mysql_quality.c. */
MYSQL *wh_mysql_writer_conn(void *state);
extern const wh_resume_ops wh_mysql_resume;

/* Resume (mysql_resume.c, mysql_writer.c): the INSERT that records a split,
 * the deletion of the job's records in a transaction of its own, and the
 * writer channel's split commit (wh_resume_ops.split_commit). */
void wh_mysql_resume_record_sql(MYSQL *m, const wh_mysql_conf *c, const char *job,
                                const char *run_key, size_t split, uint64_t rows, orr_buf *q);
orr_status wh_mysql_resume_drop(MYSQL *m, wh_mysql_conf *c, orr_err *err);
orr_status wh_mysql_writer_split_commit(void *state, const char *job, const char *run_key,
                                        size_t split, uint64_t rows, uint64_t *confirmed,
                                        orr_err *err);
extern const wh_meta_ops wh_mysql_meta; /* mysql_meta.c */

#endif
