/*
 * wh_dirty.h - dirty rows: counted, written to the reject file (one JSON
 * object per line: side, shard, row, reason, fields or raw), and the run
 * cancelled once their count passes max_dirty_rows. Thread-safe.
 *
 * Every line is valid JSON whatever the bytes of the row: a value that is
 * not valid UTF-8 is written with U+FFFD for each invalid byte, and its
 * exact bytes as lowercase hex in "fields_hex" (an object keyed by the
 * column's index, "0", "1", ...) or "raw_hex" (docs/wormhole.md).
 */
#ifndef WH_DIRTY_H
#define WH_DIRTY_H

#include <jansson.h>
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

/* Reject by a reader of a record it could split into values but not
 * convert (a MariaDB zero date): the line carries the values ("fields", NULL
 * for lens[i] < 0) rather than a raw text. Counted as a reader-side reject. */
orr_status wh_ctx_dirty_values(wh_ctx *ctx, size_t shard, uint64_t rownum, const char *const *vals,
                               const int64_t *lens, size_t n, const char *reason);

/* The JSON object of one reject line (the caller json_decref()s it): with
 * raw != NULL a reader-side line holding raw[0..rawlen), else one holding the
 * n values. Exposed for the tests and the fuzz target. */
json_t *wh_dirty_line(const char *side, size_t shard, uint64_t rownum, const char *reason,
                      const char *const *vals, const int64_t *lens, size_t n, const char *raw,
                      size_t rawlen);

/* 1 when p[0..n) is valid UTF-8 (NUL bytes allowed). */
int wh_utf8_valid(const char *p, size_t n);

#endif
