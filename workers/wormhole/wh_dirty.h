/*
 * wh_dirty.h - dirty rows: counted, written to the reject file (one JSON
 * object per line: side, shard, row, reason, fields), and the run cancelled
 * once their count passes max_dirty_rows. Thread-safe.
 */
#ifndef WH_DIRTY_H
#define WH_DIRTY_H

#include <stdint.h>

#include "wh.h"

/* Open the reject file (path NULL = count only). max < 0 = no limit.
 * ORR_EIO naming the path when the file cannot be created. */
orr_status wh_dirty_open(const char *path, int64_t max, wh_dirty **out, orr_err *err);
/* Flush and close; NULL is a no-op. Returns the first write error, if any. */
orr_status wh_dirty_close(wh_dirty *d, orr_err *err);
uint64_t wh_dirty_count(const wh_dirty *d);
/* Of which found by readers (records that never entered a batch). */
uint64_t wh_dirty_raw_count(const wh_dirty *d);
/* 1 when the count passed the limit. */
int wh_dirty_over(const wh_dirty *d);

#endif
