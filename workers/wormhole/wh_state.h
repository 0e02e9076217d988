/*
 * wh_state.h - the incremental watermark of a job run alone: a small JSON
 * file {"job": name, "column": col, "watermark": "..."} replaced atomically
 * (write a temporary file, fsync, rename) only when a run succeeds.
 */
#ifndef WH_STATE_H
#define WH_STATE_H

#include <stddef.h>

#include "orr_status.h"

/* Read the saved watermark into out (n bytes). ORR_ENOTFOUND when the file
 * does not exist (a first run); ORR_EINVAL naming the file when it is not a
 * state file of this column. */
orr_status wh_state_load(const char *path, const char *column, char *out, size_t n, orr_err *err);
/* Save atomically. ORR_EIO naming the path on failure (the old file stays). */
orr_status wh_state_save(const char *path, const char *job, const char *column,
                         const char *watermark, orr_err *err);

#endif
