/*
 * ex_progress.h - live progress of a transfer attempt: wormhole prints a
 * progress line on stderr once a second (docs/wormhole.md); the attempt's
 * log holds it. A follower thread of executord reads what the log gained
 * since its last look, once a second, takes the newest complete progress
 * line and records it in Halley (RecordTransferProgress): at most one point
 * a second per attempt, and none while no new line came.
 *
 * ex_progress_parse and ex_progress_scan need nothing but the text (ex_core,
 * unit-tested); ex_progress_start/stop are executord's (ex_progress.c).
 */
#ifndef EX_PROGRESS_H
#define EX_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ex_progress_pt {
    int64_t rows_read, rows_written, dirty_rows, bytes_read;
    double rows_per_sec;
    int64_t shards_done, shards_total, rows_estimate;
    double elapsed_s, eta_s; /* eta_s -1: unknown */
} ex_progress_pt;

/* Parse one line (without its newline) "wormhole progress: k=v k=v ...".
 * Unknown keys are skipped; keys an older wormhole does not print stay 0
 * (eta_s -1). Returns 1 when it is a progress line with rows_read. */
int ex_progress_parse(const char *line, size_t n, ex_progress_pt *out);

/* The newest complete progress line in buf[0..n) into *out (1), or 0. */
int ex_progress_scan(const char *buf, size_t n, ex_progress_pt *out);

typedef struct ex_daemon ex_daemon;
typedef struct ex_progress ex_progress;

/* Start following log_path for instance/attempt (NULL if the thread cannot
 * start: logged, the run goes on without live progress). */
ex_progress *ex_progress_start(ex_daemon *d, const char *log_path, int64_t instance_id,
                               int attempt);
/* Stop the thread and free (NULL is a no-op). Returns at once (at most the
 * RPC in flight). */
void ex_progress_stop(ex_progress *p);

#endif
