/*
 * wh_engine.h - one transfer run: prepare, split, reader and writer threads
 * around the batch pool and the writer queues, progress, checks, commit or
 * roll back, finish, watermark. See wh.h for the plugin call order.
 */
#ifndef WH_ENGINE_H
#define WH_ENGINE_H

#include <jansson.h>
#include <stdint.h>

#include "wh_job.h"

typedef struct wh_writer_result {
    char name[64];
    const char *type;
    uint64_t rows_in;        /* rows the writer received */
    uint64_t rows_written;   /* rows it handed to the store */
    uint64_t rows_confirmed; /* rows the store says it took */
    uint64_t bytes_written;
    uint64_t dirty_rows;
    int channels;
} wh_writer_result;

typedef struct wh_result {
    int ok;
    orr_err err;         /* why the run failed */
    uint64_t rows_read;  /* rows that entered batches */
    uint64_t bytes_read; /* source bytes consumed */
    uint64_t dirty_rows; /* every side */
    uint64_t shards;
    uint64_t shards_done;   /* shards read to their end */
    uint64_t shards_todo;   /* shards this run had to read (resume: fewer than shards) */
    uint64_t rows_estimate; /* the source's estimate before the run; 0 unknown */
    int reader_channels;
    int passthrough; /* rows went from reader to writer in the stores' binary form */
    double seconds;
    size_t nwriters;
    wh_writer_result *writers; /* malloc'd; wh_result_free */
    int incremental;
    char watermark_from[64], watermark_to[64];
    uint64_t peak_batches; /* batches in the pool: the memory bound */
    json_t *resume;        /* summary keys of the resume bookkeeping (wh_resume_json) */
} wh_result;

/* Run the job. state_path is where the incremental watermark lives (NULL:
 * the job's state_file). Always fills res (free with wh_result_free);
 * returns ORR_OK when the run succeeded, else the failure code (also in
 * res->err). Blocks until the run ends. */
orr_status wh_run(const wh_job *job, const char *state_path, wh_result *res);
void wh_result_free(wh_result *res);
/* The final summary printed on stdout (new reference). */
json_t *wh_result_json(const wh_job *job, const wh_result *res);

/* Ask the running job to stop (async-signal-safe): the run fails with
 * ORR_ECANCELLED and rolls back. */
void wh_interrupt(void);

/* Subtract seconds from a canonical timestamp ("YYYY-MM-DD HH:MM:SS[.f][+00]"),
 * keeping the fraction and zone text. ORR_EINVAL when it cannot be parsed. */
orr_status wh_ts_sub(const char *ts, int64_t seconds, char *out, size_t n);

#endif
