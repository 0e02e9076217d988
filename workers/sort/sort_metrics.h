/*
 * sort_metrics.h - sortd's metrics, served by the shared endpoint
 * (orr_metrics): GET /healthz answers {"status":"ok","stream":NAME|null};
 * GET /metrics answers the text exposition format with, per stream:
 *
 *   sortd_records_in_total, sortd_records_out_total, sortd_records_rejected_total{reason},
 *   sortd_replay_dropped_total, sortd_late_records_total, sortd_open_units,
 *   sortd_units, sortd_files_landed_total, sortd_bytes_raw_total,
 *   sortd_bytes_written_total (lzop bytes landed), sortd_checks_written_total,
 *   sortd_pool_waits_total, sortd_lag{partition} (source messages not yet
 *   read, where the source knows it: Kafka).
 *
 * The pipeline thread publishes a snapshot (sort_metrics_publish) on every
 * housekeeping tick; the HTTP thread renders the latest snapshot under a
 * mutex, so a scrape never touches pipeline state.
 *
 * Call order: sort_metrics_start -> publish* -> sort_metrics_stop (frees).
 */
#ifndef SORT_METRICS_H
#define SORT_METRICS_H

#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"
#include "sort_pipe.h"

typedef struct sort_metrics sort_metrics;

/* Listen on "host:port" (port 0 picks a free one: see sort_metrics_port).
 * ORR_EINVAL (field "metrics_listen") for a bad address, ORR_EIO if the
 * port cannot be bound. */
orr_status sort_metrics_start(const char *listen, sort_metrics **out, orr_err *err);
/* The bound port. */
int sort_metrics_port(const sort_metrics *m);
/* Replace the snapshot of stream (copied). */
void sort_metrics_publish(sort_metrics *m, const char *stream, const sort_pipe_stats *st);
/* The exposition text of the current snapshot, appended to out. */
void sort_metrics_render(sort_metrics *m, orr_buf *out);
/* Stop the server and free m. NULL is a no-op. */
void sort_metrics_stop(sort_metrics *m);

#endif
