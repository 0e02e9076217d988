/*
 * kp_why.h - "why is it waiting": the text of what blocks one instance, as
 * keplerd's own evaluation found it, and its fingerprint. Pure, no I/O.
 *
 * A blocker list is a JSON array of objects, each with "kind" and the
 * fields of that kind (docs/kepler.md lists them):
 *   upstream             task, task_id, dependency, schedule_time_ms,
 *                        instance_id (null: not created yet), state
 *   upstream_unresolved  task (no active task of that name)
 *   data_unit            stream, business, interface
 *   dependency_cycle     (the task is on a dependency cycle)
 *   workflow_paused      (its workflow is paused)
 *   not_due              schedule_time_ms (in the future)
 *   task_inactive        (the task was deactivated)
 *   max_parallel         task, limit, live
 *   team_quota           team, limit (max_running | max_slots), max, used
 *   executor             reason (no_executors | no_label_match | drained |
 *                        too_big | no_free_slot), labels, slots
 *   pool                 pool, tokens
 *   more                 count (items left out to keep the text bounded)
 *
 * Call order: kp_why_begin, kp_why_item*, kp_why_end; then w->buf / w->len
 * hold the text and kp_why_hash(w->buf, w->len) its fingerprint.
 */
#ifndef KP_WHY_H
#define KP_WHY_H

#include <stddef.h>
#include <stdint.h>

#define KP_WHY_MAX 4096

typedef struct kp_why {
    char buf[KP_WHY_MAX];
    size_t len;
    int n;    /* items written */
    int more; /* items left out */
} kp_why;

void kp_why_begin(kp_why *w);
/* Append one object; fmt (printf) is its body without the braces, e.g.
 * "\"kind\":\"pool\",\"pool\":%s". An item that does not fit whole (with
 * room for the closing "more" item) is counted in w->more instead. */
void kp_why_item(kp_why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Close the array (adding {"kind":"more","count":N} when items were left out). */
void kp_why_end(kp_why *w);
/* s as a JSON string literal in out (n bytes; cut short, still valid, when
 * too long). Returns out. */
const char *kp_why_q(char *out, size_t n, const char *s);
/* FNV-1a of the text; never 0 (0 means "nothing written" to callers). */
uint32_t kp_why_hash(const char *s, size_t n);

#endif
