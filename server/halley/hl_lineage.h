/*
 * hl_lineage.h - the lineage edges a task or a sort stream implies, derived
 * from its spec (no database access: the caller answers the one question
 * the spec cannot, a MySQL data source's database, through a callback).
 *
 * Node names (docs/halley.md "Lineage"): a table is kind "table", named
 * <prefix>.<schema>.<table> where prefix is the data source's name (without
 * one, the database named by the dsn, else "dsn") and schema is the one the
 * table names, else "public" for PostgreSQL and the data source's database
 * for MySQL; a file is kind "file", named by its path; a column is kind
 * "column", named <table node>.<column>; a task is kind "task" (its name), a
 * sort stream kind "stream" (its name), a data unit kind "data_unit",
 * named <stream>/<business>/<interface>.
 *
 * Call order: hl_lin_set_init with the request's arena; any number of
 * hl_lineage_* calls adding to the set; read set->e[0..n). Everything lives
 * in the arena.
 */
#ifndef HL_LINEAGE_H
#define HL_LINEAGE_H

#include <jansson.h>
#include <stddef.h>

#include "orr_arena.h"
#include "hl_spec.h"

/* At most this many edges are derived from one spec; more are dropped
 * (set->dropped counts them). */
#define HL_LIN_MAX_EDGES 5000
#define HL_LIN_NAME_MAX  512

typedef struct hl_lin_edge {
    const char *sk, *sn; /* source kind, name */
    const char *tk, *tn; /* target kind, name */
    const char *detail;  /* compact JSON object, or NULL */
} hl_lin_edge;

typedef struct hl_lin_set {
    orr_arena *a;
    hl_lin_edge *e;
    size_t n, cap, dropped;
} hl_lin_set;

/* A MySQL data source's database (its "database" or "dbname" parameter), or
 * NULL when unknown. Strings returned live at least as long as the set. */
typedef const char *(*hl_lin_db_fn)(void *arg, const char *datasource);

void hl_lin_set_init(hl_lin_set *set, orr_arena *a);

/* Add one edge (names copied); an edge with an empty or too long name, or
 * from a node to itself, is ignored (a repeated one is kept once by the
 * store). */
void hl_lin_add(hl_lin_set *set, const char *sk, const char *sn, const char *tk, const char *tn,
                const char *detail);

/* The table and column edges of a transfer job (a task's config): every
 * reader table or file -> each writer's table or file, detail
 * {"writer": i[, "constants": [{"target", "constant"}]]}; and column edges
 * target column <- source column from writers[i].mapping (detail
 * {"cast": T} when it converts), or by position from the reader's and the
 * writer's columns (a writer without columns: the same names as the
 * reader's, detail {"match": "name"}). Malformed parts of the job are
 * skipped: the engine judges the job, this only reads it. */
void hl_lineage_transfer(hl_lin_set *set, const json_t *config, hl_lin_db_fn db, void *db_arg);

/* The dependency edges of a task spec: upstream task -> task for strong and
 * weak upstreams (detail {"kind"}), data unit -> task for data_unit ones. */
void hl_lineage_deps(hl_lin_set *set, const hl_spec *sp);

/* The edges of a sort stream spec: its source file folder -> stream, stream
 * -> each declared data unit (interface.const and interfaces[]), stream ->
 * its PostgreSQL sink table. */
void hl_lineage_stream(hl_lin_set *set, const char *name, const json_t *spec);

/* The table node name of an endpoint (reader or writer object) for table
 * (NULL when the endpoint is not a database table). */
const char *hl_lineage_table_node(hl_lin_set *set, const json_t *ep, const char *table,
                                  hl_lin_db_fn db, void *db_arg);

#endif
