/*
 * wh_sqlopt.h - the options every SQL store's reader and writer share, and
 * their one parser: where to connect ("dsn", "datasource" or "dsn_env"),
 * which table and columns, the row filter, the reader's split (by key or a
 * table list) and the writer's mode and key. A SQL plugin embeds a
 * wh_sqlopt in its own conf and adds only the options of its store.
 */
#ifndef WH_SQLOPT_H
#define WH_SQLOPT_H

#include "wh.h"

typedef struct wh_sqlopt {
    char path[48];        /* JSON path of the spec, for errors */
    const char *dsn;      /* borrowed from the spec (or the environment) */
    const char *table;    /* the target, or the first of tables */
    const char **columns; /* malloc'd array of borrowed strings, or NULL */
    size_t ncolumns;
    const char *filter;
    /* reader */
    const char *split_key;
    int64_t shards; /* 0 = 4 per channel */
    const char **tables;
    size_t ntables;
    /* writer */
    wh_mode mode;
    const char **key;
    size_t nkey;
} wh_sqlopt;

/* Parse the shared options of a reader (is_reader=1) or writer spec under
 * path into o (zeroed first). extra_keys (NULL-terminated, or NULL) are the
 * store's own keys, read by the caller afterwards. Checks that hold for
 * every store: a table (or table list) is named, a replace writer names its
 * filter. ORR_EINVAL naming the JSON path of the first bad field; o is freed
 * then (wh_sqlopt_free is still safe). Strings stay owned by spec. */
orr_status wh_sqlopt_parse(const json_t *spec, const char *path, int is_reader,
                           const char *const *extra_keys, wh_sqlopt *o, orr_err *err);
void wh_sqlopt_free(wh_sqlopt *o);

#endif
