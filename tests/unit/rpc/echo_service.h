/*
 * echo_service.h - handlers of the test service orrery.test.v1.Echo
 * (echo.proto), shared by the unit tests, the interop test server and the
 * fuzz target. Counters let tests check which handlers ran.
 */
#ifndef ECHO_SERVICE_H
#define ECHO_SERVICE_H

#include <stdatomic.h>

#include "echo.pb-c.h"
#include "orr_rpc.h"

typedef struct echo_state {
    atomic_ulong say_calls;
    atomic_ulong fail_calls;
    atomic_ulong count_calls;
    atomic_ulong streams_cancelled; /* Count saw orr_rpc_call_cancelled() */
    atomic_ulong streams_finished;  /* Count handler returned */
    atomic_long say_tid;            /* thread that ran the last Say */
    atomic_int hold;                /* while set, Say "hold" does not return */
} echo_state;

/* Say, Count and Fail (Unserved is left out on purpose). ctx: echo_state *. */
extern const orr_rpc_method echo_methods[3];

/* Fail with code -1 returns OK with no response; -2 a response of the wrong type. */
#define ECHO_FAIL_NULL_RESPONSE (-1)
#define ECHO_FAIL_WRONG_TYPE    (-2)

#endif
