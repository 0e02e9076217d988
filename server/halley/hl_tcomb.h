/*
 * hl_tcomb.h - concurrent TransitionInstance calls combined into batches
 * (see hl_tcomb.c for the protocol and its invariants).
 */
#ifndef HL_TCOMB_H
#define HL_TCOMB_H

#include "hl_api.h"

/* Run one checked transition (hl_transition_check passed) together with
 * whatever other calls are waiting. Same results as hl_transition_one: ORR_OK
 * with res filled (strings in arena a), or ORR_ENOTFOUND / ORR_ECONFLICT /
 * ORR_EUNAVAIL / ... with err set. Blocks until the item was answered.
 * Thread-safe. */
orr_status hl_tcomb_transition(hl_ctx *hc, orr_arena *a, const hl_pb_transition_req *rq,
                               hl_pb_transition_res *res, orr_err *err);

#endif
