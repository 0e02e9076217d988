/*
 * kp_backfill.h - pacing of backfills: at most N cycles of one backfill run
 * at a time (N = 1: serial, cycle N+1 starts only when cycle N has ended).
 *
 * A backfill (halleyd's Backfill) tags each instance it creates with its id,
 * its cycle (the backfilled task's fire time the instance belongs to) and N
 * (backfill_cycles; 0 = not paced). A cycle is open while one of its
 * instances is waiting, ready, dispatched or running, or failed or timed out
 * with a retry to come; it has ended when every one succeeded, was marked
 * success, was killed, suspended, or failed for good. A waiting instance of
 * a paced backfill may move on only if its cycle is among the N earliest
 * open cycles of its backfill.
 *
 * Use, once per pass over the store: kp_bf_reset; kp_bf_note for every open
 * instance of a paced backfill; kp_bf_seal; then kp_bf_admit for each
 * waiting one. Pure, no I/O; not thread-safe (the scheduler thread owns it).
 */
#ifndef KP_BACKFILL_H
#define KP_BACKFILL_H

#include <stddef.h>
#include <stdint.h>

typedef struct kp_bf kp_bf;

/* A new, empty gate (never NULL: allocation failure aborts, orr_alloc.h). */
kp_bf *kp_bf_create(void);
void kp_bf_destroy(kp_bf *g);
/* Forget every note (keeps the memory). */
void kp_bf_reset(kp_bf *g);
/* An open instance of backfill bf_id in cycle cycle_ms, paced at max_cycles
 * (> 0) cycles at a time. Only between kp_bf_reset and kp_bf_seal. */
void kp_bf_note(kp_bf *g, int64_t bf_id, int64_t cycle_ms, int32_t max_cycles);
/* Work out, per backfill, the latest cycle that may run. */
void kp_bf_seal(kp_bf *g);
/* 1 if an instance of backfill bf_id in cycle cycle_ms may move on now: its
 * cycle is among the earliest max_cycles open cycles of the backfill (or
 * the backfill has no open cycle noted). After kp_bf_seal. */
int kp_bf_admit(const kp_bf *g, int64_t bf_id, int64_t cycle_ms);

#endif
