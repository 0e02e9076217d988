/*
 * sort_lander.h - a landing thread beside each writer, so a writer goes on
 * compressing while the files it rolled are made durable in the blob store.
 *
 * A writer (sort_writer.h) rolls files into a landing batch; with a lander
 * it hands the whole batch over as one job (the store's put_many: index
 * before data file, in roll order, one sync per step) and keeps appending
 * records to its open files while the job runs. One job at a time: files
 * the writer rolls meanwhile wait in its next batch, which goes over as soon
 * as the lander is free (so a slow sync groups more files per sync instead
 * of stalling the writer).
 *
 * The writer alone reads a job's result (sort_lander_poll/wait) and only
 * then reports the landings, counts them and acknowledges the control packs
 * that preceded the job; until then the job's files hold its published safe
 * position down, so no offset is committed past a record that has not
 * landed. Exactly-once, order within a unit and the commit rules stay those
 * of sort_writer.h.
 *
 * Call order: sort_lander_start -> (submit -> poll* | wait)* -> stop.
 * submit, poll and wait are called by one thread (the writer's).
 */
#ifndef SORT_LANDER_H
#define SORT_LANDER_H

#include <pthread.h>
#include <stddef.h>

#include "orr_blob.h"
#include "orr_status.h"

typedef struct sort_lander {
    orr_blob *blob;
    int durable;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    const orr_blob_item *items; /* the job (owned by the writer until it is done) */
    size_t nitems;
    int busy; /* a job is submitted and its result not yet taken */
    int done; /* the job has run: landed, rc, err hold its result */
    int stop;
    size_t landed;
    orr_status rc;
    orr_err err;
} sort_lander;

/* Start the thread; durable: items are synced (the stream's output.fsync).
 * ORR_EIO if the thread cannot start (err names "writers"). */
orr_status sort_lander_start(sort_lander *l, orr_blob *blob, int durable, orr_err *err);
/* Stop the thread once the current job (if any) has run; its result is
 * dropped. Safe on a lander that never started. */
void sort_lander_stop(sort_lander *l);

/* 1 if a job is submitted and its result not yet taken. */
int sort_lander_busy(sort_lander *l);
/* Hand a job over (the lander must not be busy). items stay the caller's
 * and must live until its result is taken. Never blocks. */
void sort_lander_submit(sort_lander *l, const orr_blob_item *items, size_t n);
/* Take the result of the job if it has run: 1 and *landed (a prefix of the
 * items: how many are under their final names), and its status (err set
 * when not ORR_OK) in *rc; 0 if it is still running or none was submitted.
 * Never blocks. */
int sort_lander_poll(sort_lander *l, size_t *landed, orr_status *rc, orr_err *err);
/* As poll, but waits for the running job. 0 only if none was submitted. */
int sort_lander_wait(sort_lander *l, size_t *landed, orr_status *rc, orr_err *err);

#endif
