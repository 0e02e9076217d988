/*
 * wh_job.h - the transfer job spec (schema/transfer-job.schema.json), parsed
 * strictly: every error names the JSON path of the bad field ("writers[1].mode")
 * so `wormhole run` can exit 2 with a message a person can act on. Plugin
 * options are parsed by the plugin's configure, under the same path rules.
 */
#ifndef WH_JOB_H
#define WH_JOB_H

#include <jansson.h>
#include <stdint.h>

#include "orr_status.h"
#include "wh.h"

typedef struct wh_endpoint {
    char path[48];    /* "reader", "writers[0]" */
    const char *type; /* plugin name (borrowed from the job's JSON) */
    char name[64];    /* writers: "name" or "<type>#<index>"; reader: "reader" */
    const wh_plugin *plugin;
    void *conf; /* the plugin's parsed options */
    int channels;
    struct wh_map *map; /* writers: the column mapping, or NULL (wh_map.h) */
    json_t *spec;       /* the spec the plugin took when the job rewrote it */
} wh_endpoint;

/* Resume bookkeeping (wh_resume.h): off; on, resuming the records of a
 * failed run of the same job; on, dropping earlier records first. */
enum { WH_RESUME_OFF = 0, WH_RESUME_ON = 1, WH_RESUME_SCRATCH = 2 };

struct wh_job {
    json_t *root;
    const char *name;
    wh_endpoint reader;
    wh_endpoint *writers;
    size_t nwriters;
    int64_t batch_rows, batch_bytes;
    int64_t rows_per_sec, bytes_per_sec; /* 0 = unlimited */
    int64_t max_dirty_rows;              /* -1 = no limit */
    double max_dirty_ratio;              /* < 0 = no limit */
    const char *reject_file;             /* NULL = none */
    int64_t max_row_diff;
    int incr_on;
    const char *incr_column;
    int incr_is_time;
    int64_t incr_overlap;
    const char *state_file;  /* NULL = "<job file>.state" when incremental */
    int64_t progress_ms;     /* 0 = no progress lines */
    int resume;              /* WH_RESUME_*: the job's "resume", then --resume / --from-scratch */
    const char *run_id;      /* --run-id: part of the resume run key (NULL = none) */
    struct wh_qset *quality; /* the "quality" checks (wh_quality.h), NULL: none */
};

/* Parse a job from JSON text. On failure ORR_EINVAL with err->field the JSON
 * path; *out is NULL. Free with wh_job_free. */
orr_status wh_job_parse(const char *text, size_t len, wh_job **out, orr_err *err);
/* Read and parse a file ("-" = standard input, which is then closed);
 * ORR_EIO when it cannot be read. */
orr_status wh_job_load_file(const char *path, wh_job **out, orr_err *err);
/* Frees plugin confs too. NULL is a no-op. */
void wh_job_free(wh_job *j);

#endif
