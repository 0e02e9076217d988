/*
 * orr_logidx.h - the line index of a captured log: when each line was read.
 *
 * A log file stays byte for byte what the program wrote; next to it a line
 * index holds one fixed 16-byte record per line, in line order:
 *
 *   bytes 0-7   the byte offset in the log where the line starts (u64, little-endian)
 *   bytes 8-15  when its first byte was read, UTC milliseconds since the epoch
 *               (i64, little-endian); never smaller than the record before it
 *
 * Record k (0-based) is line k+1, so a line number is a seek. A last line
 * without a newline has its record like any other; a line of any length has
 * one record. The writer (executord) scans what it reads with
 * orr_logidx_feed; a reader (galaxyd) finds the line holding a byte with
 * orr_logidx_find over any record source.
 */
#ifndef ORR_LOGIDX_H
#define ORR_LOGIDX_H

#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"

#define ORR_LOGIDX_REC 16

typedef struct orr_logidx_rec {
    uint64_t offset;
    int64_t ms;
} orr_logidx_rec;

void orr_logidx_encode(const orr_logidx_rec *r, unsigned char out[ORR_LOGIDX_REC]);
void orr_logidx_decode(const unsigned char in[ORR_LOGIDX_REC], orr_logidx_rec *r);

/* The writer's state between reads. */
typedef struct orr_logidx_scan {
    uint64_t offset;   /* log size so far */
    int at_line_start; /* the next byte starts a line */
    int64_t last_ms;   /* the newest stamp written (stamps never go back) */
} orr_logidx_scan;

/* Continue a log of size bytes whose last byte was last_byte (ignored when
 * size is 0) and whose newest stamp was last_ms (0: none). */
void orr_logidx_scan_init(orr_logidx_scan *s, uint64_t size, char last_byte, int64_t last_ms);

/* n bytes of the log, read at ms: appends to out the encoded record of every
 * line that starts in them (a later stamp than ms if the clock went back)
 * and returns how many. Never fails. */
size_t orr_logidx_feed(orr_logidx_scan *s, const void *data, size_t n, int64_t ms, orr_buf *out);

/* Reads count records from record first into out; ORR_OK only when all were
 * read. */
typedef orr_status (*orr_logidx_read_fn)(void *ud, uint64_t first, size_t count,
                                         orr_logidx_rec *out, orr_err *err);

/* The record of the line holding byte off of a log with nrec records: the
 * last one whose offset is <= off, by binary search (about log2(nrec)
 * reads). ORR_ENOTFOUND when nrec is 0 or off lies before the first line; a
 * reader's status as it is. */
orr_status orr_logidx_find(orr_logidx_read_fn read, void *ud, uint64_t nrec, uint64_t off,
                           uint64_t *k, orr_err *err);

/* "2026-01-02T03:04:05.678Z" (24 characters and a NUL) into buf; returns buf. */
char *orr_logidx_iso(int64_t ms, char buf[32]);

#endif
