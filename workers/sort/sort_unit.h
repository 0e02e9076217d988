/*
 * sort_unit.h - data units: (business id, interface name, data-time bucket).
 *
 * The unit table interns units by (interface, bucket start) so each unit has
 * one struct for the life of the process; pointers to it stay valid (units
 * live in the table's arena). The table belongs to the pipeline thread: it
 * alone looks up, creates and walks units. Writer threads only follow unit
 * pointers handed to them in packs, read the immutable fields, and use the
 * `open` slot of the split index they own.
 *
 * Landed file names (relative to the blob root):
 *   <business>/<interface>/<label>/part-<P>[_<S>]-<first>-<last>-n<count>.lzo
 * P = source partition, S = split index (only when the interface's split
 * factor is > 1), first/last = source offsets of the first and last record
 * (sort_off_fmt), count = records in the file. Each has a hadoop-lzo index
 * "<name>.index" beside it.
 *
 * At start, sort_units_load() reads back what earlier runs landed: the files
 * of every unit (names, record counts and sizes, for _CHECK) and, per
 * (unit, split, partition), the last landed offset, below which a replayed
 * record is a duplicate. While the stream runs, sort_unit_accept() raises
 * it to the last offset routed, so a producer that sends records again in
 * the same run (a replay of packs) is dropped too.
 */
#ifndef SORT_UNIT_H
#define SORT_UNIT_H

#include <stddef.h>
#include <stdint.h>

#include "orr_arena.h"
#include "orr_blob.h"
#include "sort_source.h"
#include "sort_spec.h"
#include "sort_time.h"

#define SORT_PART_NAME_MAX 192

typedef struct sort_ufile sort_ufile; /* a writer's open file (sort_writer.c) */

typedef struct sort_landed {
    struct sort_landed *next;
    uint32_t split, partition;
    sort_off last;
} sort_landed;

typedef struct sort_lfile {
    struct sort_lfile *next;
    char *name;
    uint64_t count;
    uint64_t bytes; /* size of the landed .lzo file */
} sort_lfile;

typedef struct sort_unit {
    struct sort_unit *hnext;
    uint64_t hash;  /* sort_unit_hash: stable, picks the writer and stage */
    uint64_t lhash; /* the table's lookup hash and key (this process only) */
    uint64_t key8;
    const char *iface;
    size_t iface_len;
    int64_t bucket_start, bucket_end; /* seconds since the epoch */
    char label[SORT_LABEL_MAX];
    const char *dir;     /* "<business>/<interface>/<label>" */
    uint32_t split;      /* split factor */
    sort_landed *landed; /* last offset landed or routed (pipeline thread) */
    sort_ufile **open;   /* [split]: slot i owned by the writer of split i */

    /* Checker state (pipeline thread only). */
    sort_lfile *files; /* newest first */
    size_t nfiles;
    uint64_t total;
    uint64_t total_bytes;   /* sum of the files' bytes */
    uint64_t late;          /* records that arrived after the unit closed */
    uint32_t check_version; /* 0: no _CHECK yet */
    size_t checked_nfiles;  /* files listed by the last _CHECK */
    uint64_t checked_late;
} sort_unit;

typedef struct sort_units {
    const sort_spec *spec;
    orr_arena *arena;
    sort_unit **tab; /* hash chains */
    size_t cap;
    sort_unit **all; /* every unit, in creation order */
    size_t n, all_cap;
    int64_t min_bucket; /* earliest bucket seen (INT64_MAX if none) */
} sort_units;

void sort_units_init(sort_units *t, const sort_spec *spec);
void sort_units_free(sort_units *t);

/* The unit for (iface, bucket start), created if new. Never NULL. */
sort_unit *sort_units_get(sort_units *t, const char *iface, size_t len, int64_t bucket_start);
/* Only look up; NULL if absent. */
sort_unit *sort_units_find(sort_units *t, const char *iface, size_t len, int64_t bucket_start);

/* Hash of a unit (stable across runs: decides its writer). */
uint64_t sort_unit_hash(const char *iface, size_t len, int64_t bucket_start);

/* The hand-off write stage (0..stages-1) that owns a unit: its stream, and
 * the only process that lands its files and writes its _CHECK. Bits above
 * the low ones, which pick the writer thread inside the stage. */
static inline int64_t sort_unit_stage_of(uint64_t hash, int64_t stages)
{
    return (int64_t)((hash >> 16) % (uint64_t)stages);
}

/* 1 if this process owns the unit: always, except in a hand-off write
 * stage (spec stage_count > 0), which owns its share. */
static inline int sort_units_owns(const sort_units *t, uint64_t hash)
{
    return t->spec->stage_count == 0 ||
           sort_unit_stage_of(hash, t->spec->stage_count) == t->spec->stage_index;
}

/* 1 and *last if a file of (split, partition) of u was landed before this run. */
int sort_unit_landed_last(const sort_unit *u, uint32_t split, uint32_t partition, sort_off *last);

/* The duplicate filter (pipeline thread): 1 if off is past the last offset
 * of (split, partition) of u that an earlier run landed or this run routed,
 * which it then becomes; 0 if it is a replay (at or below it: drop it).
 * Relies on the records of one (unit, split, partition) coming in offset
 * order, replays aside. */
int sort_unit_accept(sort_units *t, sort_unit *u, uint32_t split, uint32_t partition, sort_off off);

/* Record a landed file (count records, bytes = size of the .lzo file) in
 * the checker state (pipeline thread). */
void sort_unit_add_file(sort_units *t, sort_unit *u, const char *name, uint64_t count,
                        uint64_t bytes);

typedef struct sort_part_info {
    uint32_t partition, split;
    int has_split;
    sort_off first, last;
    uint64_t count;
} sort_part_info;

/* Name of a landed file into buf (>= SORT_PART_NAME_MAX). */
void sort_part_name(char *buf, const sort_part_info *pi);
/* Parse a landed file name. 0 on success, -1 if it is not one. */
int sort_part_parse(const char *name, sort_part_info *out);

/* Read back what earlier runs landed under <business>/ (units, files with
 * the sizes their folder's listing gives, last offsets, _CHECK versions)
 * and remove ".tmp-" leftovers. ORR_EIO if the store cannot be listed. */
orr_status sort_units_load(sort_units *t, orr_blob *blob, orr_err *err);

#endif
