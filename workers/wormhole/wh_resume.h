/*
 * wh_resume.h - resuming a failed run of a split job from the splits it
 * already committed.
 *
 * Design. With bookkeeping on, every writer commits each split in a
 * transaction of its own that also inserts the split's commit record into
 * the target store (the store's resume ops, wh.h): a split is loaded and
 * recorded, or neither. Next to the records each writer keeps the run key
 * and the split plan of the run. A resumed run
 *   1. computes the run key: a SHA-256 of the job (its canonical JSON
 *      without what does not change the data moved: connection strings,
 *      channel counts, progress and resume settings) and of the source range
 *      (an incremental run's low watermark) and of --run-id (executord
 *      passes the instance: a retry resumes, another instance never does);
 *   2. reads every writer's records; when a writer's run key matches, the
 *      stored plan replaces the splitter (shards are sampled, so a new plan
 *      would cut the keys elsewhere) and its high watermark is kept; a
 *      different key starts from scratch and says so;
 *   3. reads only the splits some writer has not committed; a writer skips
 *      the rows of a split it already committed.
 * A writer channel takes the shards of one reader channel (channels are
 * paired), so the rows of a shard reach one transaction in order; the last
 * batch of a shard (shard_end) carries the commit.
 *
 * Legal calls, per run: wh_resume_init; wh_resume_setup (after the reader's
 * describe, before the split: may fill the shards); wh_resume_start (after
 * the split, before the writers' peripheries prepare); while threads run
 * wh_resume_skip / wh_resume_done / wh_resume_commit / wh_resume_hold; after
 * a successful finish wh_resume_clear; wh_resume_json; wh_resume_free.
 */
#ifndef WH_RESUME_H
#define WH_RESUME_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "wh_job.h"

typedef struct wh_resume {
    int on;            /* bookkeeping on for this run */
    const char *state; /* "off", "fresh", "resumed", "changed", "unsupported" */
    char note[320];
    char run_key[65];
    char *plan; /* JSON text of the split plan (malloc'd) */
    size_t nwriters, nshards;
    unsigned char *done;     /* nwriters * nshards: committed before this run */
    unsigned char *skip_all; /* nshards: committed by every writer */
    size_t resumed_splits;
    uint64_t rows_skipped;
    atomic_size_t taken;     /* shards taken by readers this run */
    atomic_size_t committed; /* splits committed this run */
    long hold_after;         /* test-only hold (WORMHOLE_TEST_HOLD_AFTER), -1 = none */
    const char *hold_file;
} wh_resume;

void wh_resume_init(wh_resume *rs, const wh_job *job);
/* Decide whether the run keeps records and, when it resumes, restore the
 * plan into *shards (*restored = 1) and incr's high watermark. ORR_EIO or
 * ORR_EUNAVAIL when a writer's records cannot be read. */
orr_status wh_resume_setup(wh_resume *rs, const wh_job *job, wh_incr *incr, wh_shards *shards,
                           int *restored, orr_err *err);
/* Store the plan (fresh runs) and begin every writer's bookkeeping. */
orr_status wh_resume_start(wh_resume *rs, const wh_job *job, const wh_shards *shards,
                           const wh_incr *incr, orr_err *err);
/* Shards to run: how many shards some writer still misses. */
size_t wh_resume_pending(const wh_resume *rs, size_t nshards);
/* 1 when no reader needs to read the shard. */
static inline int wh_resume_skip(const wh_resume *rs, size_t shard)
{
    return rs->on && rs->skip_all && shard < rs->nshards && rs->skip_all[shard];
}
/* 1 when writer w committed the shard in an earlier run. */
static inline int wh_resume_done(const wh_resume *rs, size_t w, size_t shard)
{
    return rs->on && rs->done && shard < rs->nshards && rs->done[w * rs->nshards + shard];
}
/* Commit a split on a writer channel (the store's split_commit). */
orr_status wh_resume_commit(wh_resume *rs, const wh_job *job, size_t w, void *state, size_t shard,
                            uint64_t rows, uint64_t *confirmed, orr_err *err);
/* Test-only: before a reader takes a shard past WORMHOLE_TEST_HOLD_AFTER
 * shards, wait until the file WORMHOLE_TEST_HOLD_FILE exists (or the run is
 * cancelled). No-op without those variables. */
void wh_resume_hold(wh_resume *rs, wh_ctx *ctx);
/* After the run succeeded: drop every writer's records. */
orr_status wh_resume_clear(wh_resume *rs, const wh_job *job, orr_err *err);
/* Add "resume", "resumed_splits" and "rows_skipped" to the summary. */
void wh_resume_json(const wh_resume *rs, json_t *summary);
void wh_resume_free(wh_resume *rs);

/* The run key of a job (64 hex digits + NUL into out) given the incremental
 * low mark ("" when none). */
void wh_resume_key(const wh_job *job, const char *low, char out[65]);

#endif
