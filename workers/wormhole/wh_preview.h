/*
 * wh_preview.h - `wormhole preview`: a dry run of a transfer job that shows
 * the first rows as its first writer would receive them, writing nothing.
 *
 * The job runs through the engine's normal path (wh_run: reader periphery,
 * describe, split, reader threads, the writer's mapping) with the first
 * writer's store swapped for a capture sink that keeps the rows it is handed
 * and stops the run once it has enough. The writer's own plugin only parses
 * its options (configure does no I/O); its periphery never runs, so no
 * table is created, truncated or staged. Only writers[0] is previewed.
 * What a run would do besides is left out: resume bookkeeping, quality
 * checks, the incremental bounds (the preview reads from the start) and the
 * reject file (dirty rows are kept in memory, in a memfd).
 *
 * Answer, one JSON line on stdout:
 *   {"columns": [{"name", "kind", "type"}], "rows": [[string|null, ...]],
 *    "dirty": [{"row", "reason", "field"}], "warnings": ["..."]}
 * Values are in wormhole's canonical text form (wh.h).
 */
#ifndef WH_PREVIEW_H
#define WH_PREVIEW_H

#include <jansson.h>
#include <stddef.h>

#include "orr_status.h"

#define WH_PREVIEW_MAX_ROWS 20

/* Run the preview of the job held in text: rows 1..WH_PREVIEW_MAX_ROWS.
 * The request may be the job itself or {"config": job, "rows": n}. *out
 * (new reference) on ORR_OK. ORR_EINVAL naming the JSON path of a bad job
 * field; other codes when the source cannot be read. Blocks. */
orr_status wh_preview_run(const char *text, size_t len, json_t **out, orr_err *err);

#endif
