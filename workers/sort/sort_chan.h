/*
 * sort_chan.h - packs and the in-process channel between the parse stage
 * and the writers.
 *
 * A pack carries records for one writer: per record a sort_pent header
 * (unit, split index, partition, offset, length) and the record bytes, padded
 * to 8 bytes. A data pack may carry stamps: "every record of partition P
 * before position NEXT that goes to this writer is in this pack or an earlier
 * one", which is what lets offsets be committed. Control packs (roll units
 * whose bucket has closed; stop) travel in the same queue, so they are
 * ordered after every record sent before them.
 *
 * Flow control: data packs come from a fixed pool. The parse stage takes a
 * free pack from the pool and writers give it back once its records are in
 * their unit files; when the pool is empty the parse stage waits (the source
 * is not read), so memory stays bounded whatever the input rate.
 *
 * The pool's buffers are pieces of one mapping (sort_pool_fill) with
 * transparent huge pages asked for: touching a fresh 4 KiB page costs a
 * fault, and on virtual machines that shadow the page tables far more (about
 * 12 us a page measured, 0.4 s for 128 MiB of packs, all of it at the start
 * of a run while the writers wait for their first packs); a 2 MiB page takes
 * one fault. A record too large for its pack's piece moves that pack to a
 * buffer of its own.
 *
 * Queues are mutex + condition variable lists; push never blocks, pop waits
 * up to a timeout.
 */
#ifndef SORT_CHAN_H
#define SORT_CHAN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "orr_buf.h"
#include "sort_source.h"
#include "sort_unit.h"

typedef enum sort_pack_kind {
    SORT_PACK_DATA = 0,
    SORT_PACK_ROLL, /* roll files of units with bucket_end <= roll_before; then ack seq */
    SORT_PACK_STOP, /* roll everything and end the writer */
} sort_pack_kind;

typedef struct sort_pent {
    sort_unit *unit;
    sort_off off;
    uint32_t partition;
    uint32_t split;
    uint32_t len;
    uint32_t pad_;
} sort_pent;

typedef struct sort_stamp {
    uint32_t partition;
    sort_off next;
} sort_stamp;

typedef struct sort_pack {
    struct sort_pack *next;
    sort_pack_kind kind;
    int pooled; /* 1: return to the pool; 0: free() after use */
    int slab;   /* 1: data is a piece of the pool's mapping (never realloc'd nor freed) */
    orr_buf data;
    size_t n;
    sort_stamp stamps[SORT_MAX_PARTITIONS];
    size_t nstamps;
    int64_t roll_before;
    uint64_t seq;
    uint64_t batch; /* data: the pipeline's batch number on a batch's last pack, else 0 */
} sort_pack;

typedef struct sort_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sort_pack *head, *tail;
    size_t n;
} sort_queue;

/* A condition variable whose timed waits run on CLOCK_MONOTONIC (its
 * deadlines: orr_clock_after(CLOCK_MONOTONIC, ms); a variable with the
 * default attributes takes CLOCK_REALTIME ones). */
void sort_cond_init(pthread_cond_t *cv);

void sort_queue_init(sort_queue *q);
void sort_queue_destroy(sort_queue *q);
void sort_queue_push(sort_queue *q, sort_pack *p);
/* Oldest pack, or NULL after wait_ms without one (wait_ms 0: do not wait). */
sort_pack *sort_queue_pop(sort_queue *q, int wait_ms);
size_t sort_queue_len(sort_queue *q);

/* The memory of a pool's packs: one mapping (base, len: as mapped, one
 * huge page more than the pieces need), unmapped by sort_pool_drain. */
typedef struct sort_slab {
    char *base;
    size_t len;
} sort_slab;

/* Push n pooled packs into pool. With pack_bytes > 0 each one's buffer is a
 * piece of one mapping (slab) large enough for pack_bytes; without, or when
 * the mapping fails, buffers grow on the heap as records come. */
void sort_pool_fill(sort_queue *pool, int n, size_t pack_bytes, sort_slab *slab);
/* Free every pack in pool (their own buffers too), then the mapping. Every
 * pack of the pool must be back in it: one that is not leaks, and its
 * buffer (a piece of the mapping) is gone. */
void sort_pool_drain(sort_queue *pool, sort_slab *slab);

/* Bytes a record of len bytes takes in a data pack (header, record, padding
 * to 8 bytes); the files sink asks it for every record. */
static inline size_t sort_pack_need(uint32_t len)
{
    return sizeof(sort_pent) + len + ((8 - (len & 7)) & 7);
}
/* Add a record to a data pack. */
void sort_pack_add(sort_pack *p, sort_unit *u, uint32_t split, uint32_t partition, sort_off off,
                   const void *rec, uint32_t len);
/* Walk a pack: *cursor starts at 0; returns NULL at the end. */
const sort_pent *sort_pack_next(const sort_pack *p, size_t *cursor, const char **rec);
/* Empty a pack for reuse (keeps its memory). */
void sort_pack_clear(sort_pack *p);
/* Set or raise the stamp of a partition. */
void sort_pack_stamp(sort_pack *p, uint32_t partition, sort_off next);

#endif
