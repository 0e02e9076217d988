/*
 * wh_progress.h - what a running transfer says about how far it is: the
 * progress line printed on stderr once per progress interval and the
 * estimate of its end.
 *
 * The end is estimated from what the run knows before it reads a row: the
 * split plan (shards_total; shards_done counts the shards read to their
 * end) and the source's row estimate (rows_estimate: the planner's estimate
 * the splitter asked for, 0 when unknown). See wh_progress_eta for the
 * formula; docs/wormhole.md documents the line.
 */
#ifndef WH_PROGRESS_H
#define WH_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct wh_progress {
    uint64_t rows_read, rows_written, bytes_read, dirty;
    double rows_per_sec; /* over the last interval */
    const char *waiting; /* "reader", "writer" or "none" */
    uint64_t shards_done, shards_total;
    uint64_t rows_estimate; /* 0: unknown */
    double elapsed_s;       /* since the reader threads started */
} wh_progress;

/* Seconds to the end of reading, or -1 when nothing allows a guess.
 *   rows:   rows_estimate > rows_read > 0:
 *           eta = elapsed * (rows_estimate - rows_read) / rows_read
 *           (the rows still to read at the run's mean rate so far);
 *   shards: otherwise, 0 < shards_done < shards_total:
 *           eta = elapsed * (shards_total - shards_done) / shards_done;
 *   done:   every shard read: 0.
 * An estimate the run has already passed (a stale planner figure) falls
 * back to the shards. */
double wh_progress_eta(const wh_progress *p);

/* Print the progress line (one line, key=value after "wormhole progress:"). */
void wh_progress_print(FILE *f, const wh_progress *p);

#endif
