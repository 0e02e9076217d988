/*
 * hl_sm.h - the instance state machine of Orrery (one table, in hl_sm.c).
 *
 * States are stored as text in PostgreSQL ("waiting") and travel as the
 * InstanceState enum of halley.proto; this module converts between the two and
 * answers whether a transition is legal, whether it starts a new attempt and
 * whether it releases the instance's resource-pool tokens.
 */
#ifndef HL_SM_H
#define HL_SM_H

typedef enum hl_state {
    HL_ST_NONE = 0, /* INSTANCE_STATE_UNSPECIFIED */
    HL_ST_WAITING,
    HL_ST_READY,
    HL_ST_DISPATCHED,
    HL_ST_RUNNING,
    HL_ST_SUCCESS,
    HL_ST_FAILED,
    HL_ST_KILLED,
    HL_ST_TIMED_OUT,
    HL_ST_SUSPENDED,
    HL_ST_MARKED_SUCCESS,
    HL_ST__COUNT
} hl_state;

/* Flags of a legal edge. */
#define HL_EDGE_LEGAL       0x1
#define HL_EDGE_NEW_ATTEMPT 0x2 /* attempt += 1 (retry or rerun) */

/* "waiting"; NULL for HL_ST_NONE or out of range. Static string. */
const char *hl_state_name(hl_state s);
/* Parse a stored name; HL_ST_NONE if unknown. */
hl_state hl_state_parse(const char *name);
/* 1 if s is a real state (not NONE, in range). */
int hl_state_valid(int s);

/* Flags of from -> to: 0 when illegal (including any NONE or out of range). */
unsigned hl_sm_edge(hl_state from, hl_state to);
int hl_sm_legal(hl_state from, hl_state to);
/* 1 when from -> running -> to is two legal steps from a dispatched
 * instance: a run that started and ended before its running step was
 * recorded (TransitionRequest.started_at_ms), written as both steps at once. */
int hl_sm_legal_through_running(hl_state from, hl_state to);
/* 1 when the instance may hold pool tokens in state s (ready, dispatched,
 * running); entering any other state releases them. */
int hl_sm_holds_tokens(hl_state s);
/* 1 for states that end an attempt (success, failed, killed, timed_out,
 * marked_success). */
int hl_sm_finished(hl_state s);

#endif
