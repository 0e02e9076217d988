/*
 * sort_sink_handoff.h - the parse stage's hand-off: parsed and routed
 * records leave this process as packs (lib/orr_pack.h: records of one unit
 * with their source offsets and data times, in LZ4 where the stream's
 * write stage reads LZ4, else Snappy: "pack_codec", sort_source.h) on
 * Redis streams, one per write stage, for `sortd run --handoff-stream I`
 * to land.
 *
 *   source -> parse + route -> [hand-off sink] --XADD--> "<key>.<i>"
 *                                      i = unit hash mod streams
 *
 * Call order (pipeline thread only):
 *   open -> { add / advance ... ; due? -> flush_async ; poll ; safe } ...
 *        -> flush -> close
 *
 * Packs. A unit goes to stream sort_unit_stage_of(unit hash, streams)
 * (sort_unit.h). Each (unit, source partition) gets a pack builder; a record is
 * appended with its source offset as one number (sort_source_off64). Every
 * split of a unit goes to the same stream, so one write stage owns the
 * whole unit and its _CHECK. A pack carries its unit in its key
 * ("iface@bucket_start") and each record's data time (ORR_PACK_F_TIMES), so
 * the write stage does not parse the records again (sort_preroute.h). A
 * pack is sent (XADD, pipelined) when it reaches pack_size; flush_async
 * sends every partial pack and goes on without waiting for the replies;
 * flush also reads every reply.
 *
 * XADDs in flight. Replies are read as they come (poll, each tick) and
 * waited for only when SORT_HANDOFF_WINDOW are outstanding (before the
 * next XADD), when HO_MARKS flushes are in flight, before a stream's length
 * is read (flow control), and at flush (a barrier or the end of a run).
 *
 * Exactly-once. advance() notes the source position after each entry;
 * a flush remembers that position (a mark: the number of the last XADD
 * sent and the positions) and it becomes the partition's safe position
 * only once the reply of that XADD and of every one before it was read,
 * i.e. every pack holding a record before it was accepted by Redis, so the
 * source is acknowledged only after its records are on the hand-off
 * streams. If this process dies before that, the source delivers the
 * records again and they are packed again (cut differently, new entries):
 * the write stage drops every record at or below what it already routed
 * for that (unit, split, partition). Within a partition a unit's records
 * are sent in offset order, which that rule needs. How durable an accepted
 * XADD is depends on Redis's persistence (appendonly, appendfsync).
 *
 * A lost Redis connection or a refused XADD fails the flush: the pipeline
 * stops (sortd exits 1) and a restart resumes from the last safe position.
 *
 * Catching up. While the source is behind (its reads come back full:
 * sort_handoff_set_behind), records wait up to output.catchup_age_ms
 * instead of flush_ms before they are sent (a flush still comes when
 * SORT_HANDOFF_BUFFER bytes wait or a pack is full), so a unit's records of
 * the backlog travel in a few large packs rather than one per flush_ms:
 * fewer XADDs, entries to read and to acknowledge, and fewer packs held
 * unlanded on the stream while the write stage fills its files. Packs
 * sent meanwhile carry the mark SORT_PACK_BACKLOG_FIELD, so the write
 * stage catches up (fills its files) with them. Once a read comes back
 * short, flush_ms applies again to every record waiting.
 *
 * Flow control. The write stage deletes each pack once it has landed
 * (src_redis.c), so a stream's length is its packs not yet landed, and its
 * memory in Redis (MEMORY USAGE ... SAMPLES 0: every node counted; Redis
 * estimates the pending lists' part) is what they take there. Both are
 * read at open (so a restarted stage counts what is already there, and a
 * Redis user without MEMORY is refused at once) and again when the sink
 * may have reached a bound: it counts the packs and encoded bytes it added
 * to each stream since, and before an XADD that would bring the packs to
 * max_packs or, by its estimate, the memory past max_bytes (bytes counted
 * a quarter up, plus per pack the larger of 256 bytes and what the
 * stream's packs took beyond their bytes at the last read: a node of
 * their own, allocator size classes, pending-list entries) it reads them
 * again and, while the stream holds max_packs or max_bytes, waits (20 ms
 * steps, counted in waits) until the write stage has made room (down to
 * nine tenths of both, so it does not measure again before every pack) or
 * *stop is set. So a stream holds about max_bytes of Redis's memory at
 * most from this process (the estimate can be passed by a pack), and
 * never more than max_packs packs; the source pauses, and memory stays
 * bounded (buffered records are flushed at SORT_HANDOFF_BUFFER bytes).
 * While it waits, the sink sets every stream's wait key "<key>.<i>.wait"
 * (expiring in HO_WAIT_TTL_MS, renewed while it waits, deleted when it
 * goes on): a write stage then lands every file it has open, whatever its
 * age (src_redis.c, sort_writer_set_room), since those files hold back the
 * deletions it waits for, and nothing more comes meanwhile to the others.
 * Bytes are the bound that matters while a write stage catches up: it
 * holds every pack from its oldest open file on (a whole hour of records,
 * until the next hour's records close it), so a bound in packs small
 * enough for Redis's memory made the parse stage wait at each hour.
 */
#ifndef SORT_SINK_HANDOFF_H
#define SORT_SINK_HANDOFF_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"
#include "sort_source.h"
#include "sort_spec.h"

#define SORT_HANDOFF_BUFFER (32u << 20) /* raw bytes buffered before a flush */
#define SORT_HANDOFF_WINDOW 1024u       /* XADD replies outstanding at most */

typedef struct sort_handoff sort_handoff;

typedef struct sort_handoff_counts {
    uint64_t packs;   /* packs sent (XADD queued; their replies are read by flush) */
    uint64_t records; /* records in them */
    uint64_t bytes;   /* encoded pack bytes */
    uint64_t waits;   /* flow-control pauses (a stream held max_packs or max_bytes) */
} sort_handoff_counts;

/* Connect to spec->sinks.ho_address (or default_addr) and check that the
 * streams can be written. src gives positions as numbers (it must outlive
 * the sink); *stop (may be NULL) ends a wait for room. ORR_EUNAVAIL naming
 * "redis" when Redis cannot be reached. */
orr_status sort_handoff_open(const sort_spec *spec, const char *default_addr,
                             const sort_source *src, volatile sig_atomic_t *stop,
                             sort_handoff **out, orr_err *err);
/* Append a routed record of unit (iface, bucket_start) with data time
 * time_ms read at off of partition (a full pack is sent, waiting for
 * room). The pack carries the unit in its key ("iface@bucket_start") and
 * the time per record (ORR_PACK_F_TIMES, sort_preroute.h). ORR_EINVAL naming
 * "offset" when the source position cannot be carried by a pack;
 * ORR_ECANCELLED when *stop was set while waiting for room; ORR_EUNAVAIL/
 * ORR_EIO when a pack could not be sent. After any of these nothing
 * becomes safe any more: the stream must stop (and replays). */
orr_status sort_handoff_add(sort_handoff *h, const char *iface, size_t iface_len,
                            int64_t bucket_start, int64_t time_ms, uint32_t partition, sort_off off,
                            const char *rec, size_t len, orr_err *err);
/* The source position after an entry of partition (routed or not). */
void sort_handoff_advance(sort_handoff *h, uint32_t partition, sort_off next);
/* 1 when records wait and the buffer is full, or (now_ms > 0, monotonic
 * ms) the oldest has waited flush_ms. */
int sort_handoff_due(const sort_handoff *h, int64_t now_ms);
/* The source is behind (1) or caught up (0): see "Catching up" above. */
void sort_handoff_set_behind(sort_handoff *h, int behind);
/* Send every pack (waiting for room) and read every reply; then the
 * positions advanced so far are safe. ORR_ECANCELLED when *stop was set
 * while waiting for room; ORR_EUNAVAIL/ORR_EIO on a Redis failure; after
 * either nothing becomes safe any more. */
orr_status sort_handoff_flush(sort_handoff *h, orr_err *err);
/* Send every pack (waiting for room) without waiting for the replies: the
 * positions advanced so far become safe once they are read (poll, a later
 * flush). Errors as flush. */
orr_status sort_handoff_flush_async(sort_handoff *h, orr_err *err);
/* Read the replies that have come, without waiting; ORR_EUNAVAIL/ORR_EIO
 * as flush. */
orr_status sort_handoff_poll(sort_handoff *h, orr_err *err);
/* XADDs sent whose replies are not read yet. */
size_t sort_handoff_in_flight(const sort_handoff *h);
/* Safe position of partition: 1 and *out, or 0 if none yet. */
int sort_handoff_safe(const sort_handoff *h, uint32_t partition, sort_off *out);
void sort_handoff_get_counts(const sort_handoff *h, sort_handoff_counts *out);
/* Disconnect and free (unsent records are dropped: they are not safe). */
void sort_handoff_close(sort_handoff *h);

#endif
