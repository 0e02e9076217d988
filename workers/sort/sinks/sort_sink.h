/*
 * sort_sink.h - where a stream's routed records go: one ops struct per sink
 * (files, postgres, handoff), gathered in one table (sort_sink.c) that the
 * pipeline (sort_pipe.c) calls through and nothing else.
 *
 * The pipeline owns the source, the rejects and the offset commit; a sink
 * owns everything between a routed record and the moment it is durable.
 * The commit of a source partition is the minimum over the open sinks of
 * their safe position (nothing is acknowledged before every sink has it).
 *
 * Call order (pipeline thread only; the table order is the order of calls):
 *   open
 *   per batch: batch_begin; per record: advance (every record), has, then
 *              add (parsed and routed records the sink does not have yet);
 *              batch_end
 *   between batches: tick; safe (the commit)
 *   rebalancing (a source's hooks): barrier, reload, resume
 *   stop (the run ends: make everything durable); safe; finish (no failure)
 *   stats at any time; close.
 * A sink that blocks for flow control calls env->idle, which runs the
 * pipeline's housekeeping (ticks of every sink, commit) from inside add or
 * batch_end; so a sink's add must keep its state consistent for safe
 * before anything that may block.
 *
 * Hooks may be NULL where a sink has nothing to do (has: never has a
 * record; resume: no opinion). A failing hook fills err; the pipeline then
 * stops routing and commits nothing more (sortd exits 1, a restart replays).
 */
#ifndef SORT_SINK_H
#define SORT_SINK_H

#include <stdint.h>

#include "orr_status.h"
#include "sort_format.h"
#include "sort_pipe.h"
#include "sort_reject.h"
#include "sort_source.h"
#include "sort_spec.h"

/* What the pipeline lends its sinks for the run (lives as long as they do). */
typedef struct sort_sink_env {
    const sort_pipe_cfg *cfg;
    const sort_spec *spec;
    const sort_format_ops *fmt;
    const char *work; /* this stage's staging directory (wiped at start) */
    int writers;      /* writer threads of the files sink */
    int packs;        /* their pack pool */
    sort_source *src; /* open before any sink */
    sort_reject *rej; /* a sink's own rejects (a value it cannot hold, late) */
    sort_pipe_stats *st;
    int eof;                  /* set by the pipeline: the source has ended */
    int behind;               /* set by the pipeline after each read: the source is behind
                               * (sort_source_ops.behind), output.catchup_age_ms applies */
    int room;                 /* set by the pipeline after each read: the source's
                               * producer waits for room (sort_source_ops.room_wanted) */
    int failed;               /* set by the pipeline: a sink or the source failed */
    void (*idle)(void *pipe); /* the pipeline's housekeeping, while blocked */
    void *pipe;
} sort_sink_env;

/* One parsed, routed record. */
typedef struct sort_sink_rec {
    uint32_t partition;
    sort_off off;
    const char *rec;
    size_t len;
    const sort_val *vals;
    const sort_route *route;
} sort_sink_rec;

typedef struct sort_sink_ops {
    const char *name;
    /* 1 when the run opens this sink for spec. */
    int (*wanted)(const sort_spec *spec);
    /* Connect, load positions, start threads. *state freed by close. */
    orr_status (*open)(sort_sink_env *env, void **state, orr_err *err);
    /* Batch seq (1, 2, ...) is about to be routed (all of it counts as in
     * flight from now on). */
    void (*batch_begin)(void *state, uint64_t seq, const sort_batch *b);
    /* Every record in order, rejects included: the partition moved to next. */
    void (*advance)(void *state, uint32_t partition, const sort_off *next);
    /* 1 when the record at off is durable in this sink already (an earlier
     * run); a record every sink has is dropped as a replay. */
    int (*has)(void *state, uint32_t partition, sort_off off);
    /* Take one record. ORR_OK: taken, or turned into this sink's reject or
     * replay drop (counted in env->rej / env->st); ORR_ECANCELLED: stopping,
     * route nothing more of this batch; other: the sink failed. */
    orr_status (*add)(void *state, const sort_sink_rec *r, orr_err *err);
    /* The batch is routed; ends[p] (when has_end[p]) is where partition p
     * stands after it. */
    void (*batch_end)(void *state, uint64_t seq, const sort_off *ends, const uint8_t *has_end);
    /* Housekeeping: flush what is due (force: everything now). */
    orr_status (*tick)(void *state, int force, orr_err *err);
    /* 1 with *out: everything of partition before *out is durable here;
     * 0: no position yet (the partition is not committed). */
    int (*safe)(void *state, uint32_t partition, sort_off *out);
    /* Partitions are taken away: make durable what was routed. */
    orr_status (*barrier)(void *state, orr_err *err);
    /* Partitions were given to this process: reload their positions. */
    orr_status (*reload)(void *state, const uint32_t *parts, size_t n, orr_err *err);
    /* 1 with *at: this sink holds partition up to *at; *only = 1 when it is
     * the stream's one sink, so reading resumes there. */
    int (*resume)(void *state, uint32_t partition, sort_off *at, int *only);
    /* The run ends: land or send everything routed. */
    orr_status (*stop)(void *state, orr_err *err);
    /* After the last commit of a run that did not fail. */
    void (*finish)(void *state);
    /* Add this sink's figures to st. */
    void (*stats)(void *state, sort_pipe_stats *st);
    void (*close)(void *state);
} sort_sink_ops;

/* Every sink, in call order (postgres, handoff, files: a record reaches the
 * files sink, which may block, only after the others took it). NULL-ended. */
extern const sort_sink_ops *const sort_sinks[];

extern const sort_sink_ops sort_sink_pg_ops;
extern const sort_sink_ops sort_sink_handoff_ops;
extern const sort_sink_ops sort_sink_files_ops;

#endif
