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

typedef struct my_conf {
    char path[48];
    const char *dsn;
    const char *table;
    const char **columns;
    size_t ncolumns;
    const char *filter;
    /* reader */
    const char *split_key;
    int64_t shards;
    const char **tables;
    size_t ntables;
    wh_schema src;
    wh_kind key_kind;
    /* writer */
    wh_mode mode;
    const char **key;
    size_t nkey;
    int channels;
    int64_t insert_bytes; /* statement size */
    orr_buf qtable, qstage, collist, update;
    wh_schema target;
    unsigned char *check;
} my_conf;

/* Connect with the session settings. NULL with ORR_EUNAVAIL (or ORR_EINVAL
 * for a malformed DSN) naming path. */
MYSQL *my_connect(const char *dsn, const char *path, orr_err *err);
orr_status my_exec(MYSQL *m, const char *sql, const char *path, orr_err *err);
/* `a`.`b` for a possibly qualified name. */
void my_quote_qualified(orr_buf *out, const char *name);
void my_quote_ident(orr_buf *out, const char *name);
/* 'escaped' literal. */
void my_quote_literal(MYSQL *m, orr_buf *out, const char *s, size_t n);
orr_status my_describe(MYSQL *m, const char *table, const char **names, size_t nnames,
                       wh_schema *out, const char *path, orr_err *err);

orr_status my_conf_parse(const json_t *spec, const char *path, int is_reader, my_conf **out,
                         orr_err *err);
void my_conf_free(void *conf);

#endif
