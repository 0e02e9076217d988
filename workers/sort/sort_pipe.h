/*
 * sort_pipe.h - one stream's pipeline in one process:
 *
 *   source --batch--> parse + route (this thread) --> sinks (sinks/sort_sink.h)
 *                                                     postgres, handoff, files:
 *                      files: --packs--> writers (threads) --landings--> checker
 *
 * The pipeline thread reads a batch from the source, parses each record with
 * the stream's format, finds its unit and hands it to every open sink that
 * does not hold it yet (a record every sink holds from an earlier run is
 * dropped as a replay). The pipeline knows the sinks only through their ops.
 * The files sink appends each record to a pack per writer (unit -> writer by
 * hash; a hot unit's records spread over its split factor by offset) and
 * drops records landed by an earlier run or already routed; after each
 * batch every writer gets a stamped pack. Between batches the pipeline
 * commits source offsets (the minimum safe position over the sinks: nothing
 * is committed before it has landed), and the files sink runs the checker
 * (closed buckets -> roll control pack to every writer -> when all have
 * acknowledged, write _CHECK for closed units, empty ones included).
 *
 * Exactly-once: a record is in exactly one landed file after any number of
 * crashes and restarts, because (1) offsets are committed only after landing,
 * so nothing unlanded is skipped, and (2) a replayed record (after a restart,
 * or a pack a producer sent again) at or below the last offset of its (unit,
 * split, partition) that was landed before or routed in this run is dropped;
 * within one of those, records arrive and land in offset order.
 *
 * With a PostgreSQL sink (spec sinks.postgres, sort_sink_pg.h) each parsed
 * record is also (or only) added to the sink's batch; the sink commits rows
 * and its per-partition position in one transaction, records below that
 * position skip the sink, and the source commit is the minimum of the
 * sink's position and the writers' (nothing is acknowledged before every
 * sink has it).
 *
 * sort_pipe_run blocks until the source ends (exit_at_eof), *stop becomes
 * non-zero (a signal), or a writer or the store fails. On a normal end every
 * open file is rolled, landed and committed first.
 */
#ifndef SORT_PIPE_H
#define SORT_PIPE_H

#include <signal.h>
#include <stdint.h>

#include "sort_check.h"
#include "sort_format.h"
#include "sort_spec.h"
#include "sort_writer.h"

typedef struct sort_pipe_cfg {
    const sort_spec *spec;
    const char *work_dir;  /* open unit files before landing (wiped at start) */
    const char *state_dir; /* source offsets, rejects */
    const char *blob_url;
    const char *redis_addr;
    int writers;           /* writer threads */
    int packs;             /* pack pool size: the flow-control bound */
    size_t pack_bytes;     /* a pack is sent when it holds this many bytes */
    size_t max_open_units; /* open unit files over all writers */
    size_t unit_memory;    /* pending input of all open unit files (0 = default) */
    volatile sig_atomic_t *stop;
    const sort_check_sink *sink;  /* NULL: log */
    struct sort_metrics *metrics; /* NULL: no metrics endpoint (sort_metrics.h) */
} sort_pipe_cfg;

typedef struct sort_pipe_stats {
    uint64_t records_in;  /* records read (rejects included) */
    uint64_t records_out; /* records sent to writers */
    uint64_t rejected;    /* all reasons */
    uint64_t rejects[SORT_REJ__COUNT];
    uint64_t replay_dropped; /* landed by an earlier run or already routed in this one */
    uint64_t late;           /* arrived after their unit closed */
    uint64_t units;
    uint64_t checks_written;
    uint64_t pool_waits;                      /* times the source paused for flow control */
    sort_writer_stats w;                      /* summed over writers */
    uint64_t pg_rows, pg_refused, pg_batches; /* PostgreSQL sink (sort_sink_pg.h) */
    uint64_t ho_packs, ho_bytes, ho_waits;    /* hand-off sink (sort_sink_handoff.h) */
    /* Kafka consumer group (source.subscribe): partitions given, taken away. */
    uint64_t rebalances_assigned, rebalances_revoked;
    double seconds;
    uint64_t lag[SORT_MAX_PARTITIONS]; /* source messages not yet read */
    uint8_t has_lag[SORT_MAX_PARTITIONS];
} sort_pipe_stats;

#define SORT_PIPE_UNIT_MEMORY (256u << 20) /* default unit_memory */
#define SORT_PIPE_MIN_BLOCK   (16u * 1024u)

/* The lzop block size of unit files: unit_memory / max_open_units, rounded
 * down to 4 KiB, within SORT_PIPE_MIN_BLOCK..ORR_LZOP_BLOCK_SIZE, so open
 * files' pending blocks stay within unit_memory (above the 16 KiB floor). */
uint32_t sort_pipe_block_size(const sort_pipe_cfg *cfg);

/* Run the stream until its end, a stop request or a failure. ORR_OK on a
 * clean end or stop; otherwise the failure (err names the field/path).
 * stats (may be NULL) gets the totals. */
orr_status sort_pipe_run(const sort_pipe_cfg *cfg, sort_pipe_stats *stats, orr_err *err);

/* The stats as one JSON line (for the CLI summary). Caller frees. */
char *sort_pipe_stats_json(const sort_pipe_stats *st);

#endif
