/*
 * sort_writer.h - writer threads: unit files, rolling, landing.
 *
 * Every unit split slot (unit, split index) belongs to exactly one writer,
 * chosen by hash, so one roll period gives one file per unit and partition,
 * whatever the number of consumers. A writer:
 *
 *   1. takes packs from its queue and appends each record to the open file
 *      of its (unit, split, partition): an lzop file in the work folder,
 *      compressed in memory block by block (the writer's one compression
 *      scratch is shared by its open files; each holds at most one pending
 *      block of block_size bytes);
 *   2. rolls a file when it reaches the stream's roll_size, when it is older
 *      than roll_age_ms (checked on a timer, so an idle file still rolls),
 *      when a control pack says its bucket has closed, when more than
 *      max_open files are open (the least recently used one goes), and at
 *      stop. While the stage catches up (sort_writer_set_behind: its
 *      source's reads come back full) the age limit is catchup_age_ms
 *      instead: records that waited in a backlog gain nothing from a file
 *      per unit per roll_age_ms, and landing many small files slows the
 *      catch-up down (creating, renaming and syncing a file costs more than
 *      compressing a unit's second of records). Ages count from a file's
 *      first record, so once the stage has caught up, every file older
 *      than roll_age_ms rolls at the next timer check: a record waits at
 *      most roll_age_ms after the stage has caught up with it, and never
 *      more than catchup_age_ms;
 *   3. to roll: finishes the lzop file and its hadoop-lzo index (orr_lzop.h)
 *      and adds both to a landing batch; after each pack the batch goes to
 *      the writer's landing thread (sort_lander.h), which lands it in the
 *      blob store under the units' folders as one put_many (index before
 *      data file, in roll order, one sync per step: orr_blob.h) while the
 *      writer goes on compressing; files rolled meanwhile wait for the next
 *      batch. Once a batch has landed, each landing (unit, name, record
 *      count) is reported to the pipeline and the control packs taken
 *      before it are acknowledged;
 *   4. publishes, per partition, the position before which every record it
 *      was sent has landed: min(first offset of its open files and of its
 *      rolled files not yet landed, latest stamp it has processed). The
 *      pipeline commits the minimum over all writers to the source.
 *
 * A landing failure (disk full, store down) is sticky: the writer stops
 * taking packs, sets failed, and the pipeline stops without committing past
 * what landed; a restart replays the rest.
 *
 * Call order: sort_writer_start -> (queue pushes) -> push a STOP pack ->
 * sort_writer_join. Published fields are read with sort_writer_safe() and
 * sort_writer_acked() from any thread.
 */
#ifndef SORT_WRITER_H
#define SORT_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "orr_blob.h"
#include "orr_lzop.h"
#include "sort_chan.h"
#include "sort_format.h"
#include "sort_lander.h"
#include "sort_unit.h"

typedef struct sort_landing {
    sort_unit *unit;
    char name[SORT_PART_NAME_MAX];
    uint64_t count;
    uint64_t bytes; /* size of the landed .lzo file (index not counted) */
} sort_landing;

/* Landings reported by writers, drained by the pipeline thread. */
typedef struct sort_landings {
    pthread_mutex_t mu;
    sort_landing *v;
    size_t n, cap;
} sort_landings;

void sort_landings_init(sort_landings *l);
void sort_landings_destroy(sort_landings *l);
/* Move every pending landing into out (a malloc'd array; caller frees). */
size_t sort_landings_take(sort_landings *l, sort_landing **out);

typedef struct sort_writer_stats {
    uint64_t records, bytes_raw, bytes_lzo, files, rolls_size, rolls_age, rolls_lru, rolls_close;
    uint64_t rolls_room; /* landed because the source's producer waited (room_wanted) */
    uint64_t open_units; /* a gauge: files open now */
} sort_writer_stats;

typedef struct sort_wland sort_wland; /* a rolled file waiting to land */

typedef struct sort_writer {
    int index;
    const sort_spec *spec;
    const sort_format_ops *fmt;
    orr_blob *blob;
    char dir[448]; /* <work>/w<index>: this writer's files until they land */
    size_t max_open;
    sort_queue in;
    sort_queue *pool;
    sort_landings *landings;
    pthread_t thread;
    int started;
    atomic_uint_least64_t behind; /* batch << 1 | behind (sort_writer_set_behind) */
    atomic_int room;              /* sort_writer_set_room */

    /* writer-thread state */
    sort_ufile *lru_head, *lru_tail; /* head = most recently used */
    size_t nopen;
    uint64_t seq;
    orr_lzop_scratch *scratch; /* shared by the open files of this writer */
    uint32_t block_size;       /* lzop block size of unit files */
    sort_wland *batch;         /* rolled files waiting for the lander */
    size_t nbatch, batch_cap;
    sort_wland *flight; /* the batch the lander is landing (nflight 0: none) */
    size_t nflight, flight_cap;
    orr_blob_item *items; /* the flight's put_many items */
    size_t items_cap;
    uint64_t ctl_seen;   /* highest control pack taken */
    uint64_t flight_ack; /* control packs the flight's landing acknowledges */
    uint64_t lacked;     /* control packs whose rolled files have all landed */
    sort_lander lander;
    sort_off done[SORT_MAX_PARTITIONS];
    uint8_t has_done[SORT_MAX_PARTITIONS];
    uint64_t ldone_batch; /* last pipeline batch whose packs were all appended */
    sort_writer_stats lstats;

    /* published under mu */
    pthread_mutex_t mu;
    sort_off safe[SORT_MAX_PARTITIONS];
    uint8_t has_safe[SORT_MAX_PARTITIONS];
    uint64_t acked_seq;
    uint64_t done_batch; /* ldone_batch, published with safe */
    int failed;
    orr_err err;
    sort_writer_stats stats;
} sort_writer;

/* Start writer thread idx; its unit files use lzop blocks of block_size
 * bytes (0 = ORR_LZOP_BLOCK_SIZE). ORR_EIO if the thread cannot start. */
orr_status sort_writer_start(sort_writer *w, int idx, const sort_spec *spec,
                             const sort_format_ops *fmt, orr_blob *blob, const char *work_dir,
                             size_t max_open, uint32_t block_size, sort_queue *pool,
                             sort_landings *landings, orr_err *err);
/* Wait for the thread (after a STOP pack) and free its state. */
void sort_writer_join(sort_writer *w);

/* 1 and *pos when the writer has a safe position for partition. */
int sort_writer_safe(sort_writer *w, uint32_t partition, sort_off *pos);
uint64_t sort_writer_acked(sort_writer *w);
/* The last pipeline batch (sort_pack.batch) every record of which this
 * writer has appended (in a file, landed or open, as safe says); 0: none. */
uint64_t sort_writer_done_batch(sort_writer *w);
/* From pipeline batch `batch` (sort_pack.batch numbering) on, the stage
 * catches up (1) or has caught up (0): which age limit the writer's timer
 * rolls files by (output.catchup_age_ms or roll_age_ms). A 1 applies at
 * once; a 0 only once the writer has appended every record of that batch,
 * so the records of the read that ended a catch-up still go to the files
 * the catch-up filled. Any thread; never blocks. */
void sort_writer_set_behind(sort_writer *w, int behind, uint64_t batch);
/* The source's producer waits for acknowledgements (1) or not (0,
 * sort_sink_env.room): while it does, the writer's timer rolls every file
 * it has open, whatever its age (rolls_room), so the records holding the
 * acknowledgements back land within a timer period. Any thread; never
 * blocks. */
void sort_writer_set_room(sort_writer *w, int room);
/* 1 if the writer failed (err copied out). */
int sort_writer_failed(sort_writer *w, orr_err *err);
void sort_writer_get_stats(sort_writer *w, sort_writer_stats *out);

#endif
