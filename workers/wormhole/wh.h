/*
 * wh.h - the transfer engine's plugin interface: value kinds, schemas, record
 * batches, shards, the run context, and the ops structs every data store
 * implements (reader, writer, splitter, periphery). A store is a folder
 * plugins/<store>/ exporting one wh_plugin that gathers its ops, registered
 * by one line in the table of wh_registry.c.
 *
 * Values. Every field in a batch travels in one canonical text form, the one
 * PostgreSQL prints with client_encoding UTF8, DateStyle ISO, TimeZone UTC and
 * bytea_output hex: integers and numerics as digits, booleans "t"/"f",
 * timestamps "YYYY-MM-DD HH:MM:SS[.ffffff]", timestamptz with "+00", bytes as
 * "\x" and hex digits, arrays in PostgreSQL's text form. NULL is a field of
 * length -1 and is never confused with the empty string. Plugins for other
 * stores convert to and from this form (docs/wormhole.md has the tables).
 *
 * Batches. A batch is the unit of work between threads: rows of ncols fields,
 * each field an (offset, length) into one byte buffer that belongs to the
 * batch, so filling a batch allocates nothing per field or per row once the
 * batch has grown to its working size. Batches are recycled through a pool
 * (wh_queue.h), which bounds the memory of a run.
 *
 * Plugin call order, per run (wh_engine.c):
 *   configure (reader and each writer, at job parse; bad spec -> exit 2)
 *   reader periphery prepare -> reader describe -> splitter split
 *   writer periphery prepare (per writer, with the source schema)
 *   threads: writer open per channel; reader open per channel, then for each
 *            shard it takes: start, read... until ORR_EOF; reader close
 *            writer write... flush (ends the load, returns the confirmed count)
 *   main thread: writer close(commit) per channel; writer periphery finish;
 *                reader periphery finish; conf_free.
 * Readers and writers of different channels run in different threads; one
 * reader or writer state is used by one thread at a time.
 */
#ifndef WH_H
#define WH_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"

/* ---- value kinds and schemas ----------------------------------------- */

typedef enum wh_kind {
    WH_K_TEXT = 0,
    WH_K_INT,
    WH_K_NUMERIC,
    WH_K_FLOAT,
    WH_K_BOOL,
    WH_K_DATE,
    WH_K_TIME,
    WH_K_TIMESTAMP,
    WH_K_TIMESTAMPTZ,
    WH_K_BYTES,
    WH_K_JSON,
    WH_K_ARRAY,
    WH_K_OTHER,
} wh_kind;

/* "text", "int", ...; parse returns -1 for an unknown name. */
const char *wh_kind_name(wh_kind k);
int wh_kind_parse(const char *name);

typedef struct wh_col {
    char name[128];
    char type[96]; /* the store's own type text: "numeric(12,2)", "varchar(40)" */
    wh_kind kind;
    int not_null;
    int32_t size;  /* INT: bytes (1, 2, 4, 8); TEXT: max characters (0 = none);
                      NUMERIC: precision (0 = none) */
    int32_t scale; /* NUMERIC scale */
    int is_unsigned;
} wh_col;

typedef struct wh_schema {
    size_t ncols;
    wh_col *cols; /* malloc'd; wh_schema_free */
} wh_schema;

/* Append a zeroed column and return it (aborts on OOM). */
wh_col *wh_schema_add(wh_schema *s, const char *name, const char *type, wh_kind kind);
void wh_schema_free(wh_schema *s);

/* Check one canonical value against a target column. Returns 1 when it fits,
 * 0 with a reason (static string) when it does not. NULL (len < 0) fails only
 * for NOT NULL columns. */
int wh_value_check(const wh_col *c, const char *p, int64_t len, const char **reason);

/* Bit strings (the canonical form of PostgreSQL bit/bit varying and MariaDB
 * BIT(n): '0'/'1' digits, most significant first), wh_types.c. */
int wh_bits_valid(const char *p, size_t n);
/* Digits after the leading zeros. */
size_t wh_bits_significant(const char *p, size_t n);
/* The low nbits bits of a big-endian value of nbytes into out[0..nbits). */
void wh_bits_from_bytes(const unsigned char *v, size_t nbytes, size_t nbits, char *out);
/* "\x" and hex of the bits left-padded with zeros to whole bytes; out needs
 * 2 + 2 * ((n + 7) / 8) bytes. Returns the length. */
size_t wh_bits_to_hex(const char *p, size_t n, char *out);
/* Decimal digits of the bits' value into out (24 bytes); 0 when it does not
 * fit a signed integer of bytes bytes. */
int wh_bits_to_int(const char *p, size_t n, int bytes, char *out, size_t *outlen);

/* ---- record batches --------------------------------------------------- */

typedef struct wh_field {
    uint32_t off;
    int32_t len; /* < 0: NULL */
} wh_field;

typedef struct wh_batch {
    size_t ncols;
    size_t nrows;
    size_t cap_rows;  /* rows per batch */
    size_t cap_bytes; /* soft limit of data bytes */
    wh_field *f;      /* cap_rows * ncols */
    uint64_t *rownum; /* per row: its number in its shard, from 1 */
    orr_buf data;
    size_t shard;       /* the shard the rows came from */
    size_t cur;         /* fields of the row being built */
    uint64_t src_bytes; /* bytes the reader consumed for these rows */
    atomic_int refs;    /* writers still holding the batch */
    int shard_end;      /* resume bookkeeping: the last batch of its shard */
} wh_batch;

/* New empty batch. Never NULL (OOM aborts). */
wh_batch *wh_batch_new(size_t cap_rows, size_t cap_bytes);
void wh_batch_free(wh_batch *b);
/* Empty the batch for ncols columns, keeping its memory. */
void wh_batch_reset(wh_batch *b, size_t ncols);
/* 1 when no more rows should be added. */
int wh_batch_full(const wh_batch *b);

/* Building a row: begin, then exactly ncols fields, then end (or abort). */
void wh_batch_row_begin(wh_batch *b, uint64_t rownum);
void wh_batch_put(wh_batch *b, const void *p, size_t n);
void wh_batch_put_null(wh_batch *b);
/* Reserve n bytes for the next field: write into the returned pointer, then
 * wh_batch_commit with the bytes used (<= n). The pointer is valid until the
 * next call on the batch. */
char *wh_batch_reserve(wh_batch *b, size_t n);
void wh_batch_commit(wh_batch *b, size_t used);
/* Append bytes to the field being built with reserve/commit semantics:
 * open a field, extend it, close it (used by parsers that unescape pieces). */
void wh_batch_field_open(wh_batch *b);
void wh_batch_field_extend(wh_batch *b, const void *p, size_t n);
void wh_batch_field_close(wh_batch *b);
/* Ends the row. ORR_EINVAL (row dropped) when it has a wrong field count;
 * ORR_ETOOBIG (row dropped) when the batch would pass 4 GiB. */
orr_status wh_batch_row_end(wh_batch *b);
void wh_batch_row_abort(wh_batch *b);
/* Pass-through rows (wh_ctx.raw): append n bytes of a store's own row
 * framing to data without making a field, returning where they start; then
 * wh_batch_put_ref makes the next field of bytes already in data (len < 0:
 * NULL). A pass-through batch's data is its rows' framing, back to back. */
size_t wh_batch_raw(wh_batch *b, const void *p, size_t n);
void wh_batch_put_ref(wh_batch *b, size_t off, int64_t len);

static inline const char *wh_batch_val(const wh_batch *b, size_t row, size_t col, int64_t *len)
{
    const wh_field *f = &b->f[row * b->ncols + col];
    *len = f->len;
    return f->len < 0 ? NULL : b->data.data + f->off;
}

/* ---- shards ----------------------------------------------------------- */

typedef struct wh_shard {
    size_t id;
    char *pred;  /* SQL predicate on the key, or NULL (whole table) */
    char *table; /* table of a table-list split, or NULL (the reader's table) */
    char *path;  /* file of a file-list split */
} wh_shard;

typedef struct wh_shards {
    size_t n;
    wh_shard *v; /* strings malloc'd; wh_shards_free */
} wh_shards;

/* Append a shard (strings copied; NULL stays NULL). */
void wh_shards_add(wh_shards *s, const char *pred, const char *table, const char *path);
void wh_shards_free(wh_shards *s);

/* ---- the run context -------------------------------------------------- */

typedef struct wh_job wh_job;
typedef struct wh_dirty wh_dirty;

/* Incremental bounds, set by the reader periphery's prepare. Rows with
 * low < column <= high are read; a run without a saved watermark has no low. */
typedef struct wh_incr {
    int on;
    const char *column;
    int is_time;     /* 0: increasing integer, 1: timestamp */
    int64_t overlap; /* integer units or seconds subtracted from the saved mark */
    int has_low;
    char low[64];   /* saved watermark minus overlap, canonical text */
    char saved[64]; /* the saved watermark itself */
    int has_high;
    char high[64]; /* max(column) when the run started: saved on success */
} wh_incr;

typedef struct wh_ctx {
    const wh_job *job;
    atomic_int cancel;
    wh_incr incr;
    wh_dirty *dirty;
    size_t batch_rows, batch_bytes;
    /* Rows the run should read, as the splitter estimated them (the
     * planner's figure; 0 unknown): progress and its end estimate. */
    uint64_t rows_estimate;
    /* Pass-through (set before threads start, wh_engine.c): the one writer
     * takes the reader's rows in the reader's own binary form, so batch
     * fields are not canonical text; 0 everywhere else. */
    int raw;
} wh_ctx;

/* Report a dirty row (thread-safe): counted, written to the reject file, and
 * the run cancelled when past max_dirty_rows. side is "reader" or a writer's
 * name. Returns ORR_OK, or ORR_ETOOBIG once the limit is passed. */
orr_status wh_ctx_dirty(wh_ctx *ctx, const char *side, const wh_batch *b, size_t row,
                        const char *reason);
/* Dirty row found by a reader before it entered a batch (the raw text). */
orr_status wh_ctx_dirty_raw(wh_ctx *ctx, size_t shard, uint64_t rownum, const char *raw, size_t n,
                            const char *reason);
static inline int wh_cancelled(wh_ctx *ctx)
{
    return atomic_load_explicit(&ctx->cancel, memory_order_relaxed) != 0;
}

/* ---- plugin ops ------------------------------------------------------- */

/* Framework keys a reader or writer spec may hold besides the plugin's own. */
orr_status wh_allow_keys(const json_t *spec, const char *path, const char *const *plugin_keys,
                         int is_reader, orr_err *err);

/* Writer modes (the "mode" option of SQL writers). */
typedef enum wh_mode {
    WH_MODE_APPEND = 0, /* add rows */
    WH_MODE_TRUNCATE,   /* empty the target, then load */
    WH_MODE_REPLACE,    /* delete the slice matching "filter", then load */
    WH_MODE_UPSERT,     /* insert or update by "key" */
    WH_MODE_STAGING,    /* load a staging table, then swap it in */
} wh_mode;

/* Read "mode" (optional, default append) under path. ORR_EINVAL naming
 * "<path>.mode" for an unknown mode. */
orr_status wh_get_mode(const json_t *spec, const char *path, wh_mode *out, orr_err *err);
const char *wh_mode_name(wh_mode m);
/* Read an optional array of non-empty strings. *out (malloc'd array of
 * strings borrowed from spec; free() it) and *n untouched when absent. */
orr_status wh_get_str_array(const json_t *spec, const char *path, const char *key,
                            const char ***out, size_t *n, orr_err *err);
/* "dsn", or the environment variable named by "dsn_env" (one is required). */
orr_status wh_get_dsn(const json_t *spec, const char *path, const char **out, orr_err *err);

typedef struct wh_reader_ops {
    /* Parse the reader spec (strict; errors name the JSON path under path).
     * *conf is freed with conf_free. No I/O. */
    orr_status (*configure)(const json_t *spec, const char *path, void **conf, orr_err *err);
    void (*conf_free)(void *conf);
    /* The source's columns. */
    orr_status (*describe)(void *conf, wh_ctx *ctx, wh_schema *out, orr_err *err);
    /* Per reader channel: connect. */
    orr_status (*open)(void *conf, wh_ctx *ctx, void **state, orr_err *err);
    /* Begin reading one shard. */
    orr_status (*start)(void *state, const wh_shard *shard, orr_err *err);
    /* Add rows to b (already reset, b->shard set) until wh_batch_full.
     * ORR_OK: more rows follow; ORR_EOF: the shard is done (b may hold rows). */
    orr_status (*read)(void *state, wh_batch *b, orr_err *err);
    void (*close)(void *state);
} wh_reader_ops;

typedef struct wh_wstats {
    uint64_t rows;  /* rows handed to the store */
    uint64_t bytes; /* bytes handed to the store */
} wh_wstats;

typedef struct wh_writer_ops {
    orr_status (*configure)(const json_t *spec, const char *path, void **conf, orr_err *err);
    void (*conf_free)(void *conf);
    /* How many channels this writer can run with its mode (>= 1). */
    int (*max_channels)(void *conf, int wanted);
    /* Per writer channel: connect and begin the load. name names the writer
     * in dirty reports. */
    orr_status (*open)(void *conf, wh_ctx *ctx, const wh_schema *src, const char *name,
                       void **state, orr_err *err);
    /* Load every row of b (rows that do not fit go to wh_ctx_dirty). */
    orr_status (*write)(void *state, const wh_batch *b, wh_wstats *st, orr_err *err);
    /* End the load; *confirmed gets the rows the store says it took. */
    orr_status (*flush)(void *state, uint64_t *confirmed, orr_err *err);
    /* Commit (commit=1) or roll back, disconnect, free. NULL state is ok. */
    orr_status (*close)(void *state, int commit, orr_err *err);
    /* Optional, after prepare: 1 when this writer, as the job's only
     * writer, can load rows as the reader sends them in its own binary form
     * (pass-through: no decoding, no checks, so only where every column's
     * type is the same on both sides); 0 for canonical text. */
    int (*raw_from)(void *conf, const struct wh_reader_ops *reader, void *reader_conf);
} wh_writer_ops;

typedef struct wh_splitter_ops {
    /* Cut the source into shards for `channels` reader channels. */
    orr_status (*split)(void *conf, wh_ctx *ctx, int channels, wh_shards *out, orr_err *err);
} wh_splitter_ops;

typedef struct wh_periphery_ops {
    /* Before any thread starts. src is the source schema (NULL for readers). */
    orr_status (*prepare)(void *conf, wh_ctx *ctx, const wh_schema *src, orr_err *err);
    /* After every thread ended; success says whether the run is keeping its
     * result (a writer periphery commits swaps/merges then). */
    orr_status (*finish)(void *conf, wh_ctx *ctx, int success, orr_err *err);
} wh_periphery_ops;

/* Resume bookkeeping of a writer (wh_resume.h has the design): per-split
 * commit records kept in the target store, in the same transaction as the
 * split's rows. Every op names the job; the store keys records by the job
 * and its own target table. */
typedef struct wh_split_done {
    size_t split;
    uint64_t rows; /* rows the reader read for the split */
} wh_split_done;

typedef struct wh_resume_ops {
    /* Whether this writer, with its mode, can resume (0: a run with resume
     * asked for runs without bookkeeping, and says so). *why: static text. */
    int (*supported)(void *conf, const char **why);
    /* The records of the last run of job in the target: its run key and
     * split plan (malloc'd; NULL when there are none, or when what they
     * describe is gone, like a dropped staging table) and the splits it
     * committed (*done malloc'd, *ndone). Creates the record tables when
     * missing. ORR_EIO/ORR_EUNAVAIL naming the writer's path. */
    orr_status (*load)(void *conf, const char *job, char **run_key, char **plan,
                       wh_split_done **done, size_t *ndone, orr_err *err);
    /* Start bookkeeping before the writer's periphery prepare. keep=1: the
     * run resumes the records (a staging table is kept); keep=0: drop the
     * job's records and store run_key and plan, in one transaction. */
    orr_status (*begin)(void *conf, const char *job, const char *run_key, const char *plan,
                        int keep, orr_err *err);
    /* Writer channel state: end the load of the current split, record the
     * split in the same transaction, commit, and begin the next split's
     * load. *confirmed gets the rows the store took for the split. */
    orr_status (*split_commit)(void *state, const char *job, const char *run_key, size_t split,
                               uint64_t rows, uint64_t *confirmed, orr_err *err);
    /* After a successful run: drop the job's records (a staging writer's
     * periphery finish already did, with the swap). */
    orr_status (*clear)(void *conf, const char *job, orr_err *err);
} wh_resume_ops;
/* Quality checks on a store's target (wh_quality.h). The engine builds the
 * SQL of each check kind in the store's dialect and runs it through these. */
enum { WH_Q_PG = 0, WH_Q_MYSQL = 1 };
struct wh_sqlopt;
typedef struct wh_quality_ops {
    int dialect; /* WH_Q_PG or WH_Q_MYSQL */
    /* A connection of its own (checks after the commit, `wormhole quality`). */
    orr_status (*connect)(const char *dsn, const char *path, void **conn, orr_err *err);
    void (*disconnect)(void *conn);
    /* The connection of a writer channel inside its load transaction when
     * the writer loads straight into its table (checks see the load before
     * the commit); NULL when it loads elsewhere first (a staging table). */
    void *(*load_conn)(void *writer_conf, void *writer_state);
    /* The writer's shared SQL options (dsn, table). */
    const struct wh_sqlopt *(*opts)(void *writer_conf);
    void (*quote_table)(orr_buf *out, const char *name);
    void (*quote_ident)(orr_buf *out, const char *name);
    /* Run a query: *nrows every row it returned, *rows (new reference) the
     * first keep rows as arrays of strings and nulls. ORR_EIO naming path
     * with the server's message when it fails. */
    orr_status (*query)(void *conn, const char *sql, size_t keep, uint64_t *nrows, json_t **rows,
                        const char *path, orr_err *err);
} wh_quality_ops;
/* Catalog reads for `wormhole meta` (wh_meta.h has the answer shapes).
 * spec is the "source" object of the meta job (type, dsn or dsn_env, and
 * the store's own options), path its JSON path. Each call connects, reads
 * and disconnects. */
typedef struct wh_meta_ops {
    /* Every table and view outside the system schemas:
     * {"tables": [{"schema", "name", "kind", "row_estimate"}]}. */
    orr_status (*tables)(const json_t *spec, const char *path, json_t **out, orr_err *err);
    /* One table ("schema.name", or "name" in the default schema): its
     * columns, primary key and row estimate. ORR_ENOTFOUND (field "table")
     * when there is no such table. */
    orr_status (*table)(const json_t *spec, const char *path, const char *table, json_t **out,
                        orr_err *err);
} wh_meta_ops;

/* A data store: its name in specs ("type") and its roles. A store that
 * cannot be read (or written) leaves reader (writer) NULL; a role without
 * periphery work leaves that periphery NULL. */
typedef struct wh_plugin {
    const char *name;
    const wh_reader_ops *reader;
    const wh_writer_ops *writer;
    const wh_splitter_ops *splitter;
    const wh_periphery_ops *reader_periphery;
    const wh_periphery_ops *writer_periphery;
    const wh_resume_ops *resume;   /* NULL: the writer cannot resume */
    const wh_quality_ops *quality; /* NULL: row_count checks only */
    const wh_meta_ops *meta;       /* NULL: the store has no catalog to read */
} wh_plugin;

/* The registry (wh_registry.c). NULL when name is unknown. */
const wh_plugin *wh_plugin_find(const char *name);
/* The known names, in table order: "postgres, mysql, file" (static). */
const char *wh_plugin_names(void);

#endif
