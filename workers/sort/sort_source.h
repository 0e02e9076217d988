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
 *           from the last commit; nothing before it is read again. A
 *           rebalancing source skips (ORR_OK, nothing written) commits of
 *           partitions it no longer owns and positions below where its
 *           current ownership began: another member may own them now.
 *           next may call the rebalancing hooks below.
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
    /* Routed already (a hand-off pack from a parse stage, see
     * sort_preroute.h): ulen > 0 and the unit's interface at
     * batch->data.data + upos (ulen bytes), its bucket start (seconds) and
     * the record's data time (ms). ulen 0: the record is parsed. */
    uint32_t ulen;
    size_t upos;
    int64_t ubucket, utime_ms;
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
/* Append an entry whose body is in data already, at pos (a source that
 * reads into data frames records where they lie, without copying them). */
void sort_batch_put(sort_batch *b, const sort_entry *e, size_t pos);
/* Copy len bytes into data (not an entry): their position there. */
size_t sort_batch_stash(sort_batch *b, const void *bytes, size_t len);

typedef struct sort_source sort_source;

/*
 * Rebalancing hooks: a source whose partitions come and go while it runs (a
 * Kafka source with source.subscribe, in a consumer group) calls back into
 * the pipeline from inside next() (and only from there, on the pipeline
 * thread). Sources that never rebalance ignore them; a NULL drain means no
 * pipeline is attached (sortd replay): such a source takes its partitions
 * directly instead.
 *
 * Call order, per rebalance:
 *   drain(parts being taken away)  -> the source commits nothing itself and
 *                                     gives the partitions up afterwards
 *   assigned(parts given, from)    -> then the source starts reading them
 * drain comes before every loss of partitions (also a lost group
 * membership); assigned before the first record of a new partition is put
 * in a batch.
 *
 * drain(ctx, b, parts, n, lost): route the records of b (the batch next() is
 *   filling: records read before the rebalance; b is reset afterwards, so
 *   next() goes on filling it), make everything routed so far durable in
 *   every sink and commit it through ops->commit while the partitions are
 *   still owned. Afterwards the pipeline commits nothing more for parts.
 *   ORR_OK; on failure (a sink or writer failed) err is set, the pipeline
 *   has failed and stops without committing more; the partitions' next
 *   owner replays what was not committed. lost: the partitions were
 *   already taken away (this member's session timed out; another member
 *   may be writing them): nothing is routed, flushed or committed, the
 *   pipeline fails at once (ORR_ESTATE) and the process ends.
 * assigned(ctx, parts, from, n): the sinks reload their positions for parts
 *   (another process may have advanced them). from[i] is where the source
 *   resumes parts[i] (its committed position), or SORT_OFF_UNKNOWN when
 *   it has none. The hook may raise from[i] to where every sink already
 *   holds the partition (the source then starts there: the records below
 *   would only be dropped as replayed). This matters when the commit of a
 *   drain could not reach the broker (a group that is rebalancing refuses
 *   commits on some brokers) or the previous owner was killed. ORR_OK, or
 *   the failure (the pipeline has failed and routes nothing more).
 */
#define SORT_OFF_UNKNOWN ((sort_off){UINT64_MAX, UINT64_MAX})

/* What a source needs besides its spec. */
typedef struct sort_source_env {
    const char *state_dir;  /* durable source state (file source offsets) */
    const char *redis_addr; /* host:port when the spec gives none */
    const sort_format_ops *fmt;
    void *hook_ctx; /* first argument of the hooks */
    orr_status (*drain)(void *ctx, sort_batch *b, const uint32_t *parts, size_t n, int lost,
                        orr_err *err);
    orr_status (*assigned)(void *ctx, const uint32_t *parts, sort_off *from, size_t n,
                           orr_err *err);
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
    /* Optional (NULL: never): 1 when the last next() suggests that more
     * was waiting than it took, i.e. the stage is catching up (a backlog):
     * its files may then fill for output.catchup_age_ms instead of
     * roll_age_ms. 0 once a read comes back short or empty. Must not
     * block. */
    int (*behind)(sort_source *s);
    /* Optional (NULL: never): 1 while the source's producer waits for
     * acknowledgements (a hand-off's parse stage at its max_packs or
     * max_bytes): the files holding them back should land now rather than
     * at an age limit. Must not block. */
    int (*room_wanted)(sort_source *s);
    void (*close)(sort_source *s);
    /* Optional: a position as one number, as packs carry them
     * (lib/orr_pack.h; the hand-off sink), keeping the order of positions
     * within a partition. 0 and *out, or -1 when it does not fit. NULL: the
     * number is lo, and hi must be 0. */
    int (*off64)(const sort_source *s, sort_off off, uint64_t *out);
} sort_source_ops;

/* off64 through the ops, with the NULL rule above. */
int sort_source_off64(const sort_source *s, sort_off off, uint64_t *out);

/* The field a parse stage adds ("b" "1") to a hand-off pack entry beside
 * the pack when it routed the pack's records from a backlog of its own
 * (its source was behind): the write stage is then catching up too,
 * though its own reads may come back short (src_redis.c). */
#define SORT_PACK_BACKLOG_FIELD "b"

/* Appended to a hand-off stream's key, the key a parse stage sets while it
 * waits for room there (sort_sink_handoff.h), for the write stage to land
 * what it holds (src_redis.c). */
#define SORT_HANDOFF_WAIT_SUFFIX ".wait"

/* Appended to a hand-off stream's key, the key a write stage keeps set
 * (expiring SORT_HANDOFF_LZ4_TTL_MS after its last renewal) to say it reads
 * LZ4 packs (lib/orr_pack.h): a parse stage with "pack_codec": "auto" sends
 * LZ4 to that stream only while the key is there, so a write stage older
 * than LZ4 packs, which announces nothing, gets Snappy. */
#define SORT_HANDOFF_LZ4_SUFFIX   ".lz4"
#define SORT_HANDOFF_LZ4_TTL_MS   15000
#define SORT_HANDOFF_LZ4_RENEW_MS 5000

/* Every source struct starts with this. */
struct sort_source {
    const sort_source_ops *ops;
};

extern const sort_source_ops sort_src_file;
extern const sort_source_ops sort_src_redis;
extern const sort_source_ops sort_src_kafka;

/* Partitions assigned to an open Kafka source now (its topic's partitions,
 * or in a consumer group the ones this member owns). */
int sort_src_kafka_partitions(sort_source *s);

/* The ops for a source type; NULL if unknown. */
const sort_source_ops *sort_source_find(const char *type);

/* Write data to path atomically (temp file in the same folder, fsync,
 * rename, fsync of the folder). ORR_EIO naming the path on failure. */
orr_status sort_write_atomic(const char *path, const void *data, size_t len, orr_err *err);

#endif
