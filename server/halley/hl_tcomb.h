/*
 * hl_tcomb.h - concurrent TransitionInstance calls combined into batches
 * (see hl_tcomb.c for the protocol and its invariants).
 */
#ifndef HL_TCOMB_H
#define HL_TCOMB_H

#include <stdint.h>

#include "hl_api.h"

/* Defaults of [halley] transition_leaders and transition_min_batch (see
 * hl_tcomb_configure). */
#define HL_TCOMB_LEADERS   3
#define HL_TCOMB_MIN_BATCH 8

/* Set the combiner's limits (before serving; safe at any time): at most
 * `leaders` combined statements run at once, and a statement starts beside
 * running ones only when `min_batch` calls wait for it (a lone statement
 * starts at once whatever waits). Values below 1 count as 1. */
void hl_tcomb_configure(int leaders, int min_batch);

/* Statements the combiner ran for TransitionInstance calls since start, and
 * the calls in them (their ratio is the mean batch size). Thread-safe. */
void hl_tcomb_stats(uint64_t *batches, uint64_t *items);

/* Run one checked transition (hl_transition_check passed) together with
 * whatever other calls are waiting. Same results as hl_transition_one: ORR_OK
 * with res filled (strings in arena a), or ORR_ENOTFOUND / ORR_ECONFLICT /
 * ORR_EUNAVAIL / ... with err set. Blocks until the item was answered.
 * Thread-safe. */
orr_status hl_tcomb_transition(hl_ctx *hc, orr_arena *a, const hl_pb_transition_req *rq,
                               hl_pb_transition_res *res, orr_err *err);

/* TransitionInstances: items rqs[0..n) run as a few combined statements (at
 * most HL_TCOMB_MAX items each; a later item for the same instance goes into
 * a later statement, so it sees the earlier one's effect). Each item is its
 * own compare-and-set: status[i] and errs[i] say how it ended, res[i] (an
 * initialised result, strings in a) holds the instance on ORR_OK. Returns
 * ORR_EUNAVAIL with errs[0] set when the database went away (items already
 * run stay applied), ORR_OK otherwise. */
orr_status hl_tcomb_transition_batch(hl_ctx *hc, orr_arena *a, hl_pb_transition_req *const *rqs,
                                     size_t n, hl_pb_transition_res **res, orr_status *status,
                                     orr_err *errs);

#endif
