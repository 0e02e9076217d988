/*
 * sort_spec.h - a sort stream's spec, read strictly from JSON.
 *
 * The spec (schema/sort-stream.schema.json; docs/sort.md is the reference)
 * says where a stream's records come from, how they are written, how each
 * record finds its data unit (business id, interface name, data-time
 * bucket), how units are landed and when they are reconciled.
 *
 * sort_spec_parse() refuses unknown keys, wrong types and inconsistent
 * combinations with err->field set to the JSON path ("spec.time.format").
 * A parsed spec owns its strings (in its own arena) and is immutable: any
 * number of threads may read it.
 */
#ifndef SORT_SPEC_H
#define SORT_SPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "orr_arena.h"
#include "orr_status.h"
#include "sort_time.h"

#define SORT_MAX_FIELDS 256
#define SORT_MAX_SPLIT  64
#define SORT_NAME_MAX   128 /* business, interface and stream names */

/* Binary field types (big-endian integers; str = u16 length + bytes). */
typedef enum sort_ftype {
    SORT_FT_TEXT = 0, /* text formats: every field */
    SORT_FT_U8,
    SORT_FT_U16,
    SORT_FT_U32,
    SORT_FT_U64,
    SORT_FT_I32,
    SORT_FT_I64,
    SORT_FT_STR,
} sort_ftype;

typedef struct sort_field_spec {
    const char *name;
    sort_ftype type;
} sort_field_spec;

typedef enum sort_late_policy { SORT_LATE_AMEND = 0, SORT_LATE_DROP } sort_late_policy;
typedef enum sort_clock { SORT_CLOCK_WALL = 0, SORT_CLOCK_DATA } sort_clock;

typedef struct sort_split_spec {
    const char *interface;
    uint32_t factor; /* 1..SORT_MAX_SPLIT */
} sort_split_spec;

/* sinks.handoff.pack_codec: LZ4 to each stream whose write stage announces
 * it reads LZ4 (sort_source.h), else Snappy; or one of them always. */
enum { SORT_CODEC_AUTO, SORT_CODEC_LZ4, SORT_CODEC_SNAPPY };
extern const char *const sort_codec_names[3]; /* "auto", "lz4", "snappy" */

typedef struct sort_spec {
    orr_arena *arena;
    const char *name;     /* stream name: [A-Za-z0-9_.-]+ */
    const char *business; /* business id: same alphabet */

    struct {
        const char *type; /* "file" | "redis" | "kafka" */
        /* file */
        const char *path;
        int exit_at_eof;   /* stop when every file is read (benchmarks, tests) */
        int64_t read_size; /* bytes per read */
        /* redis */
        const char *address; /* host:port; NULL = sortd config */
        const char *key, *group, *consumer, *field;
        int64_t batch, block_ms, claim_idle_ms;
        int packs; /* entries hold orr_packs (many records each), not one record */
        /* redis: commit moves the group's last-delivered id (XGROUP SETID)
         * over entries read with XREAD, instead of acknowledging each one */
        int commit_position;
        /* kafka (group and batch shared with redis; exit_at_eof with file) */
        const char *brokers, *topic;
        int start_latest; /* no committed offset: 0 = earliest, 1 = latest */
        int subscribe;    /* join the consumer group (rebalancing); needs sinks.files false */
        int64_t session_timeout_ms; /* group session timeout (subscribe) */
    } source;

    struct {
        const char *type; /* "delimited" | "kv" | "jsonl" | "binary" */
        char delimiter;   /* delimited */
        char pair_sep, kv_sep;
        size_t nfields;
        sort_field_spec *fields; /* positional (delimited, binary) or wanted names */
        /* Delimited: the leading fields anything reads (the route's, the
         * PostgreSQL sink's columns); a parse stores these and only counts
         * the others. Set by sort_spec_parse; 0 means every field. */
        size_t parse_upto;
        int64_t max_record; /* bytes; longer records are rejected */
    } format;

    int iface_field; /* index in format.fields, or -1 with iface_const */
    const char *iface_const;
    const char **interfaces; /* declared interface list (may be empty) */
    size_t ninterfaces;
    int strict_interfaces; /* reject interfaces not in the list */

    int time_field; /* index in format.fields */
    sort_time_fmt time_fmt;
    sort_tz tz;
    sort_bucket_kind bucket;

    sort_split_spec *splits;
    size_t nsplits;

    struct {
        int64_t roll_size;   /* raw bytes per file before it rolls */
        int64_t roll_age_ms; /* oldest a file may get before it rolls */
        /* While the stage catches up (sort_source_ops.behind): the oldest a
         * file may get, and the longest a parse stage holds routed records
         * before it sends them (instead of roll_age_ms, sinks.handoff
         * flush_ms). >= roll_age_ms; default max(roll_age_ms, 60 s). */
        int64_t catchup_age_ms;
        int fsync;
    } output;

    struct {
        int enabled;
        int64_t grace_ms;
        sort_clock clock;
        sort_late_policy late;
    } check;

    /* Where records go ("sinks"; default: files only). */
    struct {
        int files;           /* unit files (the default sink) */
        int pg;              /* PostgreSQL rows (sort_sink_pg.h) */
        const char *dsn;     /* libpq connection string, or NULL ... */
        const char *dsn_env; /* ... the environment variable holding it */
        const char *table;   /* "table" or "schema.table" */
        const char **columns;
        int *col_field; /* columns[i] is format.fields[col_field[i]] */
        size_t ncolumns;
        int64_t batch_rows, batch_ms;
        /* Hand-off to write stages (sort_sink_handoff.h): packs per unit
         * to the Redis streams "<key>.<i>", i = unit hash mod streams. */
        int handoff;
        const char *ho_key;     /* stream key prefix */
        const char *ho_address; /* host:port; NULL = sortd config */
        int64_t ho_streams;     /* write stages, 1..SORT_MAX_HANDOFF */
        int64_t ho_max_packs;   /* unacknowledged packs per stream before pausing */
        int64_t ho_max_bytes;   /* ... or Redis memory of the stream (MEMORY USAGE) */
        int64_t ho_flush_ms;    /* longest a routed record waits before it is sent */
        int64_t ho_pack_bytes;  /* a unit's pack is sent when it holds this much */
        int64_t ho_partition;   /* partition the packs carry; -1: the source's own */
        int ho_codec;           /* SORT_CODEC_*: the pack bodies' codec */
    } sinks;

    /* A hand-off write stage (sort_spec_write_stage) owns the units whose
     * hash mod stage_count is stage_index; stage_count 0: every unit. */
    int64_t stage_index, stage_count;
} sort_spec;

#define SORT_MAX_HANDOFF 64

/* Parse and check a spec. root_path names the document in errors (e.g.
 * "spec"). On success *out is a new spec (free with sort_spec_free); on
 * failure ORR_EINVAL with err->field = the JSON path of the bad field. */
orr_status sort_spec_parse(const json_t *doc, const char *root_path, sort_spec **out, orr_err *err);
/* Read a JSON file and parse it. ORR_EIO if unreadable. */
orr_status sort_spec_load_file(const char *path, sort_spec **out, orr_err *err);
void sort_spec_free(sort_spec *s);

/* The spec of write stage `index` of a hand-off stream (sinks.handoff):
 * the same stream read from the Redis stream "<ho_key>.<index>" in packs
 * mode (group "sortd-write", consumer "write-<index>"), writing unit files
 * only. The result borrows strings from parent: free it (sort_spec_free)
 * before parent. ORR_EINVAL naming "--handoff-stream" when parent has no
 * hand-off sink or index is out of range. */
orr_status sort_spec_write_stage(const sort_spec *parent, int64_t index, sort_spec **out,
                                 orr_err *err);

/* Split factor of an interface (1 when not listed). */
uint32_t sort_spec_split(const sort_spec *s, const char *iface, size_t len);
/* 1 if name (len bytes) is a safe path component: 1..128 of [A-Za-z0-9_.-],
 * not "." or "..". */
int sort_name_ok(const char *name, size_t len);
/* Index of a declared interface, -1 if absent. */
int sort_spec_iface_index(const sort_spec *s, const char *iface, size_t len);

#endif
