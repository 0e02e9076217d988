/*
 * kp_index.h - keplerd's in-memory index of active tasks.
 *
 * One kp_task per active task: its parsed cron (embedded, no pointer), zone,
 * catch-up policy, dependencies, resource pools, slots, parallelism cap,
 * priority, retry policy, timeout and executor labels, all read once from the
 * task's spec_json (schema/task.schema.json) by kp_task_parse(). Scheduling
 * state that belongs to the task (materialised-up-to, next fire, counters of
 * live instances) sits beside it.
 *
 * The index maps task id -> kp_task and task name -> kp_task, and keeps for
 * every task the list of its downstream tasks (tasks naming it as strong or
 * weak upstream), so an upstream's state change finds the instances to
 * re-check without a scan. Upstream names are resolved to ids when the index
 * changes (kp_index_link); a name that names no active task leaves the
 * dependency unresolved (upstream_id 0), which holds a strong downstream.
 *
 * Cycles: kp_index_find_cycle() walks strong/weak edges and names the first
 * cycle found ("a -> b -> a"); tasks on a cycle are flagged and never made
 * ready. kp_dag_find_cycle() is the same check for a candidate set of edges,
 * so the path that saves a task can refuse a spec that would close a cycle.
 *
 * Not thread-safe: the scheduler thread owns the index.
 */
#ifndef KP_INDEX_H
#define KP_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "orr_cal.h"
#include "orr_cron.h"
#include "orr_deadline.h"
#include "orr_tz.h"
#include "orr_status.h"

#define KP_MAX_DEPS   256
#define KP_MAX_POOLS  16
#define KP_MAX_LABELS 64
#define KP_NAME_MAX   129

typedef enum kp_dep_kind {
    KP_DEP_STRONG,
    KP_DEP_WEAK,
    KP_DEP_SELF,
    KP_DEP_DATA_UNIT, /* reconciled data units of a sort stream (kp_du.h) */
} kp_dep_kind;

typedef struct kp_dep {
    kp_dep_kind kind;
    int cycle_same;                      /* "cycle": "same": exactly the same schedule time */
    char *task;                          /* upstream name (NULL for self / data_unit) */
    int64_t upstream_id;                 /* resolved by kp_index_link; 0 = unresolved */
    char *stream, *business, *interface; /* data_unit only, else NULL */
} kp_dep;

typedef struct kp_pool_need {
    char *pool;
    int tokens;
} kp_pool_need;

typedef struct kp_label {
    char *key, *value;
} kp_label;

typedef enum kp_backoff { KP_BACKOFF_FIXED, KP_BACKOFF_EXPONENTIAL } kp_backoff;

typedef struct kp_retry_policy {
    int max;          /* retries after the first attempt */
    int64_t delay_ms; /* before the first retry */
    kp_backoff backoff;
} kp_retry_policy;

typedef struct kp_task {
    int64_t id;
    char name[KP_NAME_MAX];
    int version;
    int64_t created_at_ms; /* when this version was written */
    /* from the spec */
    int has_cron; /* 0: manual only */
    orr_cron cron;
    const orr_tz *tz;
    int catch_up_all; /* 1: every missed cycle; 0: only the latest */
    kp_dep *deps;
    size_t n_deps;
    kp_pool_need *pools;
    size_t n_pools;
    kp_label *labels;
    size_t n_labels;
    int slots;
    int max_parallel; /* 0 = no cap */
    int priority;
    kp_retry_policy retry;
    int64_t timeout_ms;
    char calendar[KP_NAME_MAX];       /* business calendar by name; "" = none */
    orr_cal_policy cal_policy;        /* what its non-business days do to fire times */
    const orr_cal *cal;               /* resolved by the scheduler; NULL while unknown */
    orr_deadline start_by, finish_by; /* "deadlines" (ORR_DL_NONE = none) */
    /* scheduling state */
    int64_t materialised_ms; /* every fire time <= this has an instance */
    int64_t next_fire_ms;    /* first fire time > materialised_ms; INT64_MAX = none */
    int in_cycle;            /* on a dependency cycle: never made ready */
    int deps_dirty;          /* its waiting instances need a dependency check */
    int n_live;              /* dispatched + running instances (max_parallel) */
    int team;                /* keplerd's team table: 1 + index; 0 = none (quotas) */
    int64_t *downstream;     /* ids of tasks depending on this one */
    size_t n_downstream, cap_downstream;
} kp_task;

/* Parse a task's spec_json into t (id/name/version set by the caller before
 * or after). default_tz: zone for specs that name none; default_timeout_ms
 * for specs without "timeout". On failure ORR_EINVAL with err->field the JSON
 * path of the bad field ("spec.schedule", "spec.timezone", ...) and t left
 * empty (nothing to free). On success free with kp_task_clear(). */
orr_status kp_task_parse(kp_task *t, const char *spec_json, const char *default_tz,
                         int64_t default_timeout_ms, orr_err *err);
/* Free what kp_task_parse allocated and zero t. */
void kp_task_clear(kp_task *t);

/* "90s", "5m", "3h", "1d", "250ms" -> milliseconds. ORR_EINVAL otherwise. */
orr_status kp_duration_parse(const char *s, int64_t *ms);

/* ------------------------------------------------------------ the index */

typedef struct kp_index kp_index;

kp_index *kp_index_create(void);
void kp_index_destroy(kp_index *ix);
/* Insert t (moved in: the index owns its memory; t is zeroed) or replace the
 * task of the same id, keeping the old one's scheduling state. Call
 * kp_index_link() after a run of puts. Returns the stored task. */
kp_task *kp_index_put(kp_index *ix, kp_task *t);
/* Remove the task of this id (no-op if absent). */
void kp_index_remove(kp_index *ix, int64_t id);
kp_task *kp_index_get(const kp_index *ix, int64_t id);
kp_task *kp_index_by_name(const kp_index *ix, const char *name);
size_t kp_index_count(const kp_index *ix);
/* The i-th task (0 <= i < count), in no particular order; stable until the
 * next put/remove. */
kp_task *kp_index_at(const kp_index *ix, size_t i);
/* Resolve upstream names, rebuild downstream lists, flag cycles. Returns the
 * number of tasks on cycles; when cycle_msg is given, the first cycle found
 * is written there ("a -> b -> a"). */
size_t kp_index_link(kp_index *ix, char *cycle_msg, size_t n);

/* Cycle check over an explicit graph: n nodes, edges as (from, to) index
 * pairs meaning "from depends on to". Returns 1 and writes the nodes of the
 * first cycle found (in dependency order, first node repeated at the end)
 * into path/path_len (path needs n + 1 entries); 0 when acyclic. */
int kp_dag_find_cycle(size_t n, const size_t (*edges)[2], size_t n_edges, size_t *path,
                      size_t *path_len);

#endif
