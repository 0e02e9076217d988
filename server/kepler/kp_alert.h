/*
 * kp_alert.h - what keplerd's leader needs to decide which alert rules an
 * event concerns, without I/O (kepler_core): event names, the rule table and
 * its matching, the dedup keys, and the deadline timer heap.
 *
 * Rules come from halleyd (ListAlertRules) as given; kp_alert_rules_add
 * keeps the fields the evaluator uses. Matching takes a subject (a task
 * with its team and workflows, or an executor) and one event, and returns
 * every enabled rule whose events include it and whose scope names the
 * subject: scope "*" matches every subject of its kind (every user may read
 * everything, so "the objects the team may see" is all of them).
 *
 * Dedup keys (kp_alert_key): one alert per rule and key within the rule's
 * quiet period (halleyd groups by them), and the same key from whichever
 * keplerd leads, so a standby that takes over raises nothing new:
 *   task-scoped instance events   <event>:task:<task id>:<schedule ms>
 *   workflow / team scoped        <event>:<kind>:<name>:<schedule ms>
 *                                 (every failure of one cycle: one alert)
 *   deadlines                     <event>:<instance id>
 *   executor_lost                 executor_lost:<executor>:<since ms>
 *   pool_starved                  pool_starved:<pool>:<since ms>
 *   data units                    <event>:<stream>:<business>:<interface>:<bucket ms>
 *
 * The deadline heap is a binary min-heap of (due ms, instance id, kind),
 * one entry per armed deadline; entries are never removed early: a popped
 * entry is checked against the instance's state then.
 *
 * Not thread-safe: the scheduler thread owns all of it.
 */
#ifndef KP_ALERT_H
#define KP_ALERT_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"

typedef enum kp_alert_event {
    KP_AE_FAILED,
    KP_AE_RETRIED,
    KP_AE_TIMED_OUT,
    KP_AE_KILLED,
    KP_AE_RECOVERED,
    KP_AE_DEADLINE_START,
    KP_AE_DEADLINE_FINISH,
    KP_AE_UNIT_LATE,
    KP_AE_UNIT_UNRECONCILED,
    KP_AE_DIRTY_ROWS,
    KP_AE_EXECUTOR_LOST,
    KP_AE_POOL_STARVED,
    KP_AE_COUNT
} kp_alert_event;

#define KP_AE_BIT(e) (1u << (e))

typedef enum kp_alert_scope {
    KP_AS_TASK,
    KP_AS_WORKFLOW,
    KP_AS_TEAM,
    KP_AS_STREAM,
    KP_AS_EXECUTOR,
    KP_AS_COUNT
} kp_alert_scope;

/* "failed" -> KP_AE_FAILED ...; -1 for an unknown name. */
int kp_alert_event_parse(const char *name);
const char *kp_alert_event_name(int ev);
/* "task" -> KP_AS_TASK ...; -1 for an unknown kind. */
int kp_alert_scope_parse(const char *name);
const char *kp_alert_scope_name(int kind);

typedef struct kp_alert_rule {
    int64_t id;
    char *name, *team, *scope, *severity;
    int scope_kind;  /* kp_alert_scope */
    uint32_t events; /* KP_AE_BIT set */
    /* params */
    int each_attempt;         /* failed: also each attempt that will be retried */
    int64_t dirty_rows;       /* dirty_rows threshold (0 = any above 0) */
    int64_t pool_starved_ms;  /* pool_starved after this long (default 10 min) */
    int64_t unit_deadline_ms; /* unit_late / unit_unreconciled: after the bucket's end
                                 (default 60 min) */
} kp_alert_rule;

/* What an event is about. Unused names are NULL. */
typedef struct kp_alert_subject {
    const char *task, *team, *executor, *stream, *pool;
    const char *const *workflows;
    size_t n_workflows;
} kp_alert_subject;

typedef struct kp_alert_rules kp_alert_rules;

kp_alert_rules *kp_alert_rules_create(void);
void kp_alert_rules_destroy(kp_alert_rules *rs);
/* Drop every rule. */
void kp_alert_rules_clear(kp_alert_rules *rs);
/* Add a rule (strings copied). Unknown event names are skipped (a newer
 * halleyd may know more); params_json may be NULL or "". ORR_EINVAL naming
 * the field for an unknown scope kind or unparsable params (the rule is not
 * added). */
orr_status kp_alert_rules_add(kp_alert_rules *rs, int64_t id, const char *name, const char *team,
                              const char *scope_kind, const char *scope, const char *severity,
                              const char *const *events, size_t n_events, const char *params_json,
                              orr_err *err);
size_t kp_alert_rules_count(const kp_alert_rules *rs);
/* The union of every rule's events: an event outside it needs no matching. */
uint32_t kp_alert_rules_events(const kp_alert_rules *rs);
/* The rules for event ev about sub, up to max into out (borrowed: valid
 * until the next add or clear). Returns how many matched (may exceed max:
 * only max are written). */
size_t kp_alert_match(const kp_alert_rules *rs, int ev, const kp_alert_subject *sub,
                      const kp_alert_rule **out, size_t max);

/* What a transition of an instance means for alerts: a KP_AE_BIT set.
 * to/from are kp_state values; retry_left: the task's retry policy gives
 * this attempt another one; prev_failed: the task's previous run (or this
 * instance's previous attempt) failed; each_attempt is not applied here
 * (KP_AE_FAILED is set for a final failure only; a failure with a retry to
 * come sets KP_AE_RETRIED). */
uint32_t kp_alert_classify(int from, int to, int attempt, int retry_left, int prev_failed);

/* The dedup key of an alert of event ev into buf (always NUL-terminated,
 * truncated to n); see the header comment. scope_kind: the matching rule's
 * (KP_AS_*); name: the workflow or team the rule matched by, the executor
 * (executor_lost) or the pool (pool_starved); at_ms: the schedule time, or
 * for executor_lost and pool_starved when the condition began. Returns buf. */
char *kp_alert_key(char *buf, size_t n, int ev, int scope_kind, const char *name, int64_t task_id,
                   int64_t at_ms, int64_t instance_id);

/* ------------------------------------------------------------ data units */

/* The dedup key of unit_late / unit_unreconciled of one data unit into buf
 * (NUL-terminated, truncated to n). Returns buf. */
char *kp_alert_unit_key(char *buf, size_t n, int ev, const char *stream, const char *business,
                        const char *interface, int64_t bucket_ms);

/* What a data unit whose deadline passed raises: KP_AE_UNIT_LATE when
 * nothing was reported for it (no unit, or one with neither records nor
 * files), KP_AE_UNIT_UNRECONCILED when it was reported and is not
 * reconciled, -1 when it is reconciled. */
int kp_alert_unit_verdict(int exists, int64_t records, int64_t files, int reconciled);

/* The buckets (starts in ms, a grid of size_s seconds aligned at offset
 * tz_s) whose deadline (bucket end + deadline_ms) passed within
 * (now_ms - window_ms, now_ms]: the first and last start into *first_ms and
 * *last_ms; returns how many (0: none, the outputs untouched). *next_ms
 * gets the next deadline after now_ms (of the bucket after the last). */
size_t kp_alert_unit_window(int64_t size_s, int32_t tz_s, int64_t deadline_ms, int64_t now_ms,
                            int64_t window_ms, int64_t *first_ms, int64_t *last_ms,
                            int64_t *next_ms);

/* ------------------------------------------------------------ deadline heap */

typedef struct kp_dl_entry {
    int64_t due_ms, instance_id;
    int kind; /* 0 = start_by, 1 = finish_by */
} kp_dl_entry;

typedef struct kp_dl_heap {
    kp_dl_entry *v;
    size_t n, cap;
} kp_dl_heap;

void kp_dl_push(kp_dl_heap *h, int64_t due_ms, int64_t instance_id, int kind);
/* The earliest entry due at or before now into *out: 1, or 0 when none is. */
int kp_dl_pop_due(kp_dl_heap *h, int64_t now, kp_dl_entry *out);
/* Due time of the earliest entry; INT64_MAX when empty. */
int64_t kp_dl_next(const kp_dl_heap *h);
void kp_dl_clear(kp_dl_heap *h);
void kp_dl_free(kp_dl_heap *h);

#endif
