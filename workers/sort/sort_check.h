/*
 * sort_check.h - reconciliation files (_CHECK) of data units.
 *
 * When a unit's bucket has closed (bucket end + grace on the stream's clock)
 * and its files have landed, the checker writes <unit folder>/_CHECK:
 *
 *   {"stream": "clicks", "business": "b1", "interface": "login",
 *    "bucket": "2024050110", "bucket_start": 1714557600, "version": 1,
 *    "files": [{"name": "part-0-0-9870-n50.lzo", "records": 50}, ...],
 *    "total": 50, "late_records": 0}
 *
 * files are sorted by name; total is the sum of their records. A unit with
 * no data gets the same document with "files": [] and "total": 0 (the empty
 * _CHECK), so downstream loads never wait forever. Records that arrive after
 * the unit closed land in new files and the next _CHECK has version + 1 and
 * counts them in late_records. Written atomically (orr_blob put).
 *
 * Statistics: each reconciled unit is also handed to a sort_check_sink (the
 * interface point for Halley's unit statistics and its data_unit events;
 * today the default sink logs one line).
 */
#ifndef SORT_CHECK_H
#define SORT_CHECK_H

#include "orr_blob.h"
#include "sort_spec.h"
#include "sort_unit.h"

typedef struct sort_check_sink {
    void *ctx;
    /* Called after a _CHECK version landed. */
    void (*reconciled)(void *ctx, const sort_spec *spec, const sort_unit *u);
} sort_check_sink;

/* Write the next _CHECK version of u (u->check_version is raised and
 * checked_nfiles/checked_late updated on success). ORR_EIO from the store. */
orr_status sort_check_write(orr_blob *blob, const sort_spec *spec, sort_unit *u, orr_err *err);

/* The same for n units as one store batch (orr_blob put_many: one sync per
 * step, not two per unit). *written (may be NULL) gets how many of units,
 * from the first, were updated -- all of them on ORR_OK. */
orr_status sort_check_write_many(orr_blob *blob, const sort_spec *spec, sort_unit **units, size_t n,
                                 size_t *written, orr_err *err);

/* One round of _CHECKs in three steps, so that the store's part (writes and
 * syncs, tens of milliseconds) can run on a thread of its own while the
 * thread that owns the units goes on routing:
 *   sort_check_render  on the owner's thread: the documents of the next
 *                      version of each unit, and what each one counted;
 *   sort_check_put     on any thread: reads and writes only the batch;
 *   sort_check_apply   on the owner's thread again: the units whose _CHECK
 *                      landed take the version and the counts rendered
 *                      (late records that came meanwhile keep them stale).
 * The owner must not free the units nor render them again in between. */
/* What one rendered document says of its unit. */
typedef struct sort_check_counts {
    size_t nfiles;
    uint64_t total, bytes, late;
} sort_check_counts;

typedef struct sort_check_batch {
    sort_unit **units; /* borrowed */
    size_t n;
    orr_buf docs, rels;
    orr_blob_item *items;
    sort_check_counts *counts; /* per unit, as rendered */
    size_t landed;             /* after put: how many, from the first, landed */
    orr_status rc;             /* after put */
    orr_err err;               /* after put, when rc is not ORR_OK */
} sort_check_batch;

void sort_check_render(const sort_spec *spec, sort_unit **units, size_t n, sort_check_batch *out);
orr_status sort_check_put(orr_blob *blob, sort_check_batch *b);
/* Returns how many units took their new version (b->landed). */
size_t sort_check_apply(sort_check_batch *b);
/* Unit i of an applied batch as its landed _CHECK describes it (the counts
 * rendered, not files or late records that came since): what the reconciled
 * hook is given. */
void sort_check_landed_view(const sort_check_batch *b, size_t i, sort_unit *view);
void sort_check_batch_free(sort_check_batch *b);

/* 1 if u needs a (new) _CHECK: none yet, or files / late counts changed. */
int sort_check_stale(const sort_unit *u);

/* The default sink: one log line per reconciled unit. */
extern const sort_check_sink sort_check_log_sink;

#endif
