/*
 * hl_sm.c - the legal transitions of an instance, in one table.
 *
 * The machine (mirrored in a comment in rpc/halley.proto):
 *
 *   from \ to       legal targets                          notes
 *   waiting         ready, suspended, killed, marked_success
 *   ready           dispatched, waiting, suspended, killed,   waiting = pool tokens lost
 *                   marked_success
 *   dispatched      running, failed, waiting, killed,         failed = executor_lost,
 *                   timed_out                                 waiting = requeue (same attempt)
 *   running         success, failed, killed, timed_out
 *   failed          waiting (+attempt), marked_success        retry or rerun
 *   killed          waiting (+attempt), marked_success        rerun
 *   timed_out       waiting (+attempt), marked_success        retry or rerun
 *   suspended       waiting, killed, marked_success           waiting = resume
 *   success         waiting (+attempt)                        rerun
 *   marked_success  waiting (+attempt)                        rerun
 *
 * Why these: the scheduler moves waiting->ready once dependencies hold and
 * tokens are taken, ready->dispatched when an executor is chosen; the executor
 * moves dispatched->running->(success|failed|timed_out); people suspend,
 * resume, kill and mark success; the scheduler fails dispatched/running
 * instances of a lost executor and retries failed ones (->waiting, a new
 * attempt). A transition to the same state is never legal: a retried request
 * that already won gets ABORTED, not a silent second record. A running
 * instance cannot be suspended (kill it instead) and cannot be marked success
 * by hand while its process may still write.
 *
 * A run that ended before its executor recorded it running is written as
 * both steps at once (dispatched -> running -> its end, two history rows, one
 * statement; hl_sm_legal_through_running): every recorded step is still an
 * edge of this table.
 *
 * Every transition is a compare-and-set in hl_api_instances.c; this table only
 * says which pairs may be asked for.
 */
#include "hl_sm.h"

#include <string.h>

static const char *const hl__names[HL_ST__COUNT] = {
    [HL_ST_NONE] = NULL,
    [HL_ST_WAITING] = "waiting",
    [HL_ST_READY] = "ready",
    [HL_ST_DISPATCHED] = "dispatched",
    [HL_ST_RUNNING] = "running",
    [HL_ST_SUCCESS] = "success",
    [HL_ST_FAILED] = "failed",
    [HL_ST_KILLED] = "killed",
    [HL_ST_TIMED_OUT] = "timed_out",
    [HL_ST_SUSPENDED] = "suspended",
    [HL_ST_MARKED_SUCCESS] = "marked_success",
};

#define L HL_EDGE_LEGAL
#define A (HL_EDGE_LEGAL | HL_EDGE_NEW_ATTEMPT)

/* hl__edges[from][to] */
static const unsigned char hl__edges[HL_ST__COUNT][HL_ST__COUNT] = {
    [HL_ST_WAITING] =
        {
            [HL_ST_READY] = L,
            [HL_ST_SUSPENDED] = L,
            [HL_ST_KILLED] = L,
            [HL_ST_MARKED_SUCCESS] = L,
        },
    [HL_ST_READY] =
        {
            [HL_ST_DISPATCHED] = L,
            [HL_ST_WAITING] = L,
            [HL_ST_SUSPENDED] = L,
            [HL_ST_KILLED] = L,
            [HL_ST_MARKED_SUCCESS] = L,
        },
    [HL_ST_DISPATCHED] =
        {
            [HL_ST_RUNNING] = L,
            [HL_ST_FAILED] = L,
            [HL_ST_WAITING] = L,
            [HL_ST_KILLED] = L,
            [HL_ST_TIMED_OUT] = L,
        },
    [HL_ST_RUNNING] =
        {
            [HL_ST_SUCCESS] = L,
            [HL_ST_FAILED] = L,
            [HL_ST_KILLED] = L,
            [HL_ST_TIMED_OUT] = L,
        },
    [HL_ST_FAILED] = {[HL_ST_WAITING] = A, [HL_ST_MARKED_SUCCESS] = L},
    [HL_ST_KILLED] = {[HL_ST_WAITING] = A, [HL_ST_MARKED_SUCCESS] = L},
    [HL_ST_TIMED_OUT] = {[HL_ST_WAITING] = A, [HL_ST_MARKED_SUCCESS] = L},
    [HL_ST_SUSPENDED] =
        {
            [HL_ST_WAITING] = L,
            [HL_ST_KILLED] = L,
            [HL_ST_MARKED_SUCCESS] = L,
        },
    [HL_ST_SUCCESS] = {[HL_ST_WAITING] = A},
    [HL_ST_MARKED_SUCCESS] = {[HL_ST_WAITING] = A},
};

#undef L
#undef A

int hl_state_valid(int s)
{
    return s > HL_ST_NONE && s < HL_ST__COUNT;
}

const char *hl_state_name(hl_state s)
{
    if (!hl_state_valid((int)s))
        return NULL;
    return hl__names[s];
}

hl_state hl_state_parse(const char *name)
{
    if (!name)
        return HL_ST_NONE;
    for (int s = HL_ST_NONE + 1; s < HL_ST__COUNT; s++)
        if (strcmp(hl__names[s], name) == 0)
            return (hl_state)s;
    return HL_ST_NONE;
}

unsigned hl_sm_edge(hl_state from, hl_state to)
{
    if (!hl_state_valid((int)from) || !hl_state_valid((int)to))
        return 0;
    return hl__edges[from][to];
}

int hl_sm_legal(hl_state from, hl_state to)
{
    return (hl_sm_edge(from, to) & HL_EDGE_LEGAL) != 0;
}

int hl_sm_legal_through_running(hl_state from, hl_state to)
{
    return from == HL_ST_DISPATCHED && hl_sm_legal(from, HL_ST_RUNNING) &&
           hl_sm_legal(HL_ST_RUNNING, to);
}

int hl_sm_holds_tokens(hl_state s)
{
    return s == HL_ST_READY || s == HL_ST_DISPATCHED || s == HL_ST_RUNNING;
}

int hl_sm_finished(hl_state s)
{
    return s == HL_ST_SUCCESS || s == HL_ST_FAILED || s == HL_ST_KILLED || s == HL_ST_TIMED_OUT ||
           s == HL_ST_MARKED_SUCCESS;
}
