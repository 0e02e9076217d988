/*
 * sort_sink_pg.h - the PostgreSQL record sink: a stream's parsed records as
 * rows of one table, written with COPY (text format) in batches.
 *
 * Call order (pipeline thread only):
 *   open -> { skip? / add / advance ... ; due? -> flush ; safe } ... -> flush -> close
 * and, when partitions move between processes (Kafka consumer group), flush
 * then reload for the partitions taken over.
 *
 * Exactly-once: flush runs ONE transaction that COPYs the batch and writes
 * the stream's per-partition position in orrery_sort_offsets(stream, part,
 * off_hi, off_lo) (the next source offset not yet handled). open loads those
 * positions; skip() then says which replayed records are already in the
 * table. safe() gives the committed position, so the source is acknowledged
 * only after the rows are committed.
 *
 * The position write is a compare-and-set: a row is updated only where it
 * still holds the position this process last loaded (open, reload) or
 * saved (flush); a partition without a row is inserted only if none exists.
 * If another process moved any of the batch's partitions (a consumer-group
 * member that stalled past its session timeout while its partitions went
 * elsewhere), the whole transaction is rolled back and flush fails with
 * ORR_ECONFLICT: no row is added twice.
 *
 * A row PostgreSQL refuses (SQLSTATE class 22 or 23: bad value, constraint)
 * does not stop the stream: the batch is retried row by row (a savepoint
 * per row) and each refused row goes to the reject sink as db_refused, with
 * PostgreSQL's message logged. Any other failure is returned: the stream
 * stops and the uncommitted batch is replayed by the next run.
 *
 * Memory: at most batch_rows rows and SORT_PG_BATCH_BYTES bytes per batch.
 */
#ifndef SORT_SINK_PG_H
#define SORT_SINK_PG_H

#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"
#include "sort_format.h"
#include "sort_reject.h"
#include "sort_source.h"
#include "sort_spec.h"

#define SORT_PG_BATCH_BYTES (8u << 20)

typedef struct sort_sink_pg sort_sink_pg;

/* Append one value to out in COPY text form: backslash, tab, newline and
 * carriage return escaped. json_escaped: v holds JSON string escapes
 * (\n, \t, \uXXXX, surrogate pairs...) that are decoded first. Returns 0,
 * or -1 (out unchanged past its old length) on a bad escape or a NUL byte,
 * which a text column cannot hold. */
int sort_pg_copy_escape(orr_buf *out, const char *v, size_t len, int json_escaped);

/* Append one row (columns of spec->sinks, tab-separated, \N for a missing
 * field, newline-terminated). -1 as for sort_pg_copy_escape. */
int sort_pg_copy_row(orr_buf *out, const sort_spec *spec, const sort_val *vals);

/* Connect (spec->sinks.dsn or the variable dsn_env names), create the
 * offsets table if missing, load the stream's positions. ORR_EINVAL naming
 * spec.sinks.postgres.* or ORR_EIO with PostgreSQL's message; *out NULL. */
orr_status sort_sink_pg_open(const sort_spec *spec, sort_sink_pg **out, orr_err *err);
/* 1 if the record at off of partition is already in the table. */
int sort_sink_pg_skip(const sort_sink_pg *k, uint32_t partition, sort_off off);
/* Add a parsed record (rec kept for a possible reject). 0, or -1 if a value
 * cannot be written (the caller rejects it). */
int sort_sink_pg_add(sort_sink_pg *k, uint32_t partition, sort_off off, const sort_val *vals,
                     const char *rec, size_t len);
/* The source position after an entry of partition (added or not). */
void sort_sink_pg_advance(sort_sink_pg *k, uint32_t partition, sort_off next);
/* 1 when the batch is full, or old enough (batch_ms) to flush. */
int sort_sink_pg_due(const sort_sink_pg *k, int64_t now_ms);
/* Commit the batch and positions (see above); refused rows go to rej.
 * ORR_OK; ORR_ECONFLICT (message naming the stream and partition) when a
 * partition's stored position is not the expected one; ORR_EIO otherwise.
 * On failure nothing is committed and the batch stays pending. */
orr_status sort_sink_pg_flush(sort_sink_pg *k, sort_reject *rej, orr_err *err);
/* Committed position of partition: 1 and *out, or 0 if none yet. */
int sort_sink_pg_safe(const sort_sink_pg *k, uint32_t partition, sort_off *out);
/* Read the stream's positions of partitions parts[0..n) from
 * orrery_sort_offsets again (another process may have advanced them while
 * it owned them: Kafka consumer groups); records below them are skipped
 * from then on, and they are what the next flush expects to find (a
 * partition without a row expects none). Call with no pending change for those partitions (after a
 * flush). ORR_OK; ORR_EIO with PostgreSQL's message, or ORR_EINVAL if a
 * partition still has unflushed changes (positions unchanged). */
orr_status sort_sink_pg_reload(sort_sink_pg *k, const uint32_t *parts, size_t n, orr_err *err);
/* Rows committed, rows refused, batches committed, by this process. */
void sort_sink_pg_counts(const sort_sink_pg *k, uint64_t *rows, uint64_t *refused,
                         uint64_t *batches);
/* Disconnect and free (pending rows are dropped: they are not committed). */
void sort_sink_pg_close(sort_sink_pg *k);

#endif
