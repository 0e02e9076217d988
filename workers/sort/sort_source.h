/*
 * sort_source.h - where a stream's records come from: one ops struct per
 * source kind, one table (sources/ holds one file each).
 *
 * Offsets. Every record has a position (sort_off, compared as the pair
 * hi, lo) inside a source partition:
 *   file   hi = index of the file in name order, lo = byte offset in it
 *   redis  hi = entry id milliseconds, lo = entry id sequence
 *   kafka  partition = Kafka partition, hi = 0, lo = message offset
 * and a "next" position: where reading resumes after it. Within a partition
 * positions only grow. File names of landed units carry them (docs/sort.md).
 *
 * Call order: open -> (next | commit)* -> close, from one thread.
 *   next    appends up to one read's worth of records (and framing rejects)
 *           to the batch. May wait up to wait_ms for data; ORR_OK with no
 *           records when none came; ORR_EOF when the source is finite and
 *           exhausted; other codes on failure (the caller retries later).
 *   commit  every record of the partition before `next` has landed: the
 *           source records it durably (state file, XACK). A restart resumes
 *           from the last commit; nothing before it is read again.
 */
#ifndef SORT_SOURCE_H
#define SORT_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "sort_format.h"
#include "sort_spec.h"

#define SORT_MAX_PARTITIONS 64
#define SORT_OFF_MAX        48 /* formatted offset, NUL included */

typedef struct sort_off {
    uint64_t hi, lo;
} sort_off;

static inline int sort_off_cmp(sort_off a, sort_off b)
{
    if (a.hi != b.hi)
        return a.hi < b.hi ? -1 : 1;
    return a.lo < b.lo ? -1 : a.lo > b.lo;
}

/* "lo" when hi is 0, else "hi.lo", into buf (>= SORT_OFF_MAX). Returns buf. */
char *sort_off_fmt(sort_off o, char *buf);
/* Inverse of sort_off_fmt over len bytes. 0 on success, -1 if malformed. */
int sort_off_parse(const char *p, size_t len, sort_off *out);

/* One entry of a batch: a record, or bytes the framing rejected. */
typedef struct sort_entry {
    sort_off off, next;
    uint32_t partition;
    int32_t why; /* -1: a record; else a sort_reject_reason from framing */
    size_t pos;  /* record body at batch->data.data + pos */
    uint32_t len;
} sort_entry;

/* Records read in one go. Reused: reset keeps the memory. */
typedef struct sort_batch {
    orr_buf data;
    sort_entry *e;
    size_t n, cap;
} sort_batch;

void sort_batch_reset(sort_batch *b);
void sort_batch_free(sort_batch *b);
/* Append an entry (body copied into data). */
void sort_batch_add(sort_batch *b, const sort_entry *e, const void *body);

typedef struct sort_source sort_source;

/* What a source needs besides its spec. */
typedef struct sort_source_env {
    const char *state_dir;  /* durable source state (file source offsets) */
    const char *redis_addr; /* host:port when the spec gives none */
    const sort_format_ops *fmt;
} sort_source_env;

typedef struct sort_source_ops {
    const char *name;
    orr_status (*open)(const sort_spec *spec, const sort_source_env *env, sort_source **out,
                       orr_err *err);
    orr_status (*next)(sort_source *s, sort_batch *b, int wait_ms, orr_err *err);
    orr_status (*commit)(sort_source *s, uint32_t partition, sort_off next, orr_err *err);
    /* Position to resume from in partition (for logs and tests). */
    sort_off (*committed)(sort_source *s, uint32_t partition);
    /* Optional (NULL if the source cannot tell): 1 and *out = messages of
     * partition not yet read, from the source's cached view; 0 if unknown.
     * Must not block. */
    int (*lag)(sort_source *s, uint32_t partition, uint64_t *out);
    void (*close)(sort_source *s);
} sort_source_ops;

/* Every source struct starts with this. */
struct sort_source {
    const sort_source_ops *ops;
};

extern const sort_source_ops sort_src_file;
extern const sort_source_ops sort_src_redis;
extern const sort_source_ops sort_src_kafka;

/* Partitions assigned to an open Kafka source (its topic's partitions). */
int sort_src_kafka_partitions(sort_source *s);

/* The ops for a source type; NULL if unknown. */
const sort_source_ops *sort_source_find(const char *type);

/* Write data to path atomically (temp file in the same folder, fsync,
 * rename, fsync of the folder). ORR_EIO naming the path on failure. */
orr_status sort_write_atomic(const char *path, const void *data, size_t len, orr_err *err);

#endif
