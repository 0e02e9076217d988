/*
 * kp_store.h - keplerd's cache of instance states.
 *
 * One kp_inst per instance the scheduler knows: every waiting, ready,
 * dispatched, running, failed or timed-out one, plus finished ones it read
 * for dependency checks (evicted after a while and read again on demand).
 * Records are found by instance id and by (task id, schedule time).
 *
 * Markers (negative synthetic id) record what halleyd said about a cycle
 * that has no instance: KP_ST_ABSENT when its fire time has passed (it never
 * will have one), KP_ST_UNKNOWN for a task without a schedule (one may still
 * be created). A later instance.created for that key replaces the marker.
 *
 * Records live in slabs with a free list: no malloc per record. Not
 * thread-safe: the scheduler thread owns the store.
 */
#ifndef KP_STORE_H
#define KP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "kp_deps.h"
#include "kp_map.h"

#define KP_I_DIRTY   0x01 /* waiting: check dependencies */
#define KP_I_REFETCH 0x02 /* state doubtful: read it from halleyd */
#define KP_I_SEEN    0x04 /* seen by the running sweep */
#define KP_I_RUN_NOW 0x08 /* run now: do not wait for the schedule time */
#define KP_I_NO_UPS  0x10 /* run now ignoring upstreams: no dependency check */

typedef struct kp_inst {
    int64_t id; /* < 0 for absent markers */
    int64_t task_id;
    int64_t sched_ms;
    int64_t ev_id;    /* newest event applied (or the one that caused a read) */
    int64_t since_ms; /* wall time it entered its state (dispatch, start, finish) */
    const char *exec; /* interned executor id ("" = none) */
    int32_t attempt;
    int32_t priority;
    int32_t live_slots;  /* slots counted on exec while dispatched/running */
    int32_t bf_cycles;   /* a paced backfill's cycles at a time (0 = not paced) */
    int64_t bf_id;       /* the backfill that made it (0 = none) */
    int64_t bf_cycle_ms; /* its backfill cycle */
    uint8_t state;       /* kp_state */
    uint8_t flags;
    uint32_t why; /* fingerprint of the blockers last recorded (0 = none since its last change) */
    struct kp_inst *next_free;
} kp_inst;

typedef struct kp_store kp_store;

kp_store *kp_store_create(void);
void kp_store_destroy(kp_store *s);
/* Drop every record. */
void kp_store_clear(kp_store *s);

kp_inst *kp_store_get(const kp_store *s, int64_t id);
kp_inst *kp_store_by_key(const kp_store *s, int64_t task_id, int64_t sched_ms);
/* New record for (id, task, sched) in state; a marker of the same key is
 * dropped first. If a record of that id exists it is returned as is.
 * id 0 makes a marker (state KP_ST_ABSENT; the caller may change it). */
kp_inst *kp_store_add(kp_store *s, int64_t id, int64_t task_id, int64_t sched_ms, kp_state state);
/* Remove and recycle a record. */
void kp_store_remove(kp_store *s, kp_inst *r);
size_t kp_store_count(const kp_store *s);
/* Iterate: *pos starts at 0; returns NULL at the end. Do not add records
 * while iterating; kp_store_remove of the record just returned is allowed
 * only through kp_store_next's caller restarting at the same *pos. */
kp_inst *kp_store_next(const kp_store *s, size_t *pos);

/* Intern an executor id for the life of the store's process ("" for NULL). */
const char *kp_intern(const char *s);

#endif
