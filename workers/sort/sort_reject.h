/*
 * sort_reject.h - the reject sink: records that could not be parsed or
 * routed, counted per reason and kept with their source offset.
 *
 * File: <state_dir>/<stream>.rejects, appended, one line per reject:
 *   partition=0 offset=3.1024 reason=bad_time len=87 record="...escaped..."
 * The record is C-escaped (\\, \", \n, \xHH) and cut at 1 KiB. A replay after
 * a crash may append a reject again (the offset tells them apart).
 * Only the pipeline thread uses a sink.
 */
#ifndef SORT_REJECT_H
#define SORT_REJECT_H

#include <stdint.h>
#include <stdio.h>

#include "sort_format.h"
#include "sort_source.h"

typedef struct sort_reject {
    FILE *f;
    uint64_t count[SORT_REJ__COUNT];
    uint64_t total;
} sort_reject;

/* Open (append) path. ORR_EIO naming path on failure. */
orr_status sort_reject_open(sort_reject *r, const char *path, orr_err *err);
void sort_reject_add(sort_reject *r, uint32_t partition, sort_off off, sort_reject_reason why,
                     const char *rec, size_t len);
void sort_reject_flush(sort_reject *r);
void sort_reject_close(sort_reject *r);

#endif
