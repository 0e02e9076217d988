/*
 * kp_deps.h - dependency resolution: which upstream cycles an instance waits
 * for, and whether their states let it run. Pure functions, no I/O.
 *
 * Cycle mapping: orr_cycle_upstream() (lib/orr_cycle.h), shared with halleyd.
 *
 * Verdicts over the states of the mapped upstream instances:
 *   strong  every one success or marked_success;
 *   weak    every one finished (success, marked_success, or failed/killed/
 *           timed_out with no retry coming), or the deadline has passed;
 *   self    as strong, on the previous cycle.
 * An upstream cycle that will never get an instance (KP_ST_ABSENT: before the
 * upstream existed, or skipped by catch_up "latest") does not hold anyone.
 */
#ifndef KP_DEPS_H
#define KP_DEPS_H

#include <stddef.h>
#include <stdint.h>

#include "orr_cron.h"
#include "orr_cycle.h"
#include "kp_index.h"
#include "orr_tz.h"
#include "orr_status.h"

/* Instance states, numbered as halley.proto's InstanceState. */
typedef enum kp_state {
    KP_ST_UNKNOWN = 0,
    KP_ST_WAITING = 1,
    KP_ST_READY = 2,
    KP_ST_DISPATCHED = 3,
    KP_ST_RUNNING = 4,
    KP_ST_SUCCESS = 5,
    KP_ST_FAILED = 6,
    KP_ST_KILLED = 7,
    KP_ST_TIMED_OUT = 8,
    KP_ST_SUSPENDED = 9,
    KP_ST_MARKED_SUCCESS = 10,
    KP_ST_ABSENT = 100, /* no instance exists for that cycle, and none will */
} kp_state;

/* "waiting" -> KP_ST_WAITING; KP_ST_UNKNOWN for anything else. */
kp_state kp_state_parse(const char *name);
const char *kp_state_name(kp_state s);
/* success, failed, killed, timed_out, marked_success. */
int kp_state_finished(kp_state s);

/* Most upstream cycles one dependency may map to. */
#define KP_DEPS_MAX_CYCLES ORR_CYCLE_MAX

/* What is known of one mapped upstream instance. */
typedef struct kp_dep_obs {
    kp_state state;
    int retry_pending; /* failed/timed_out, but a retry will follow */
} kp_dep_obs;

typedef enum kp_verdict {
    KP_DEPS_MET,  /* this dependency lets the instance run */
    KP_DEPS_WAIT, /* not yet */
} kp_verdict;

/* Verdict of one dependency of kind over the states of its n mapped
 * instances. past_deadline applies to weak dependencies only. A data_unit
 * dependency has no upstream instances: it is judged by kp_du_met()
 * (kp_du.h), and this returns KP_DEPS_MET for it. */
kp_verdict kp_deps_eval(kp_dep_kind kind, const kp_dep_obs *obs, size_t n, int past_deadline);

#endif
