/*
 * kp_dispatch.h - executors as keplerd sees them, and the choice of one.
 *
 * An executor registers the ZooKeeper ephemeral node /orrery/executors/<id>
 * whose data is JSON {id, host, http_port, slots, used_slots, labels,
 * started_at}; kp_exec_parse() reads it. keplerd does not trust used_slots
 * for its own decisions: it counts the slots of the instances Halley shows
 * dispatched to or running on each executor (kp_exec.used), which both
 * leaders of a failover would agree on; the compare-and-set of ready ->
 * dispatched in halleyd is what makes a double dispatch impossible.
 *
 * Choice (kp_dispatch_choose): among live executors whose labels contain
 * every label of the task (same key, same value) and whose free slots
 * (slots - used) cover the task's slots, the one with the fewest used slots;
 * ties go to the smaller id, so the choice is deterministic. A drained
 * executor is never chosen (its running instances finish).
 */
#ifndef KP_DISPATCH_H
#define KP_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "kp_index.h"
#include "orr_status.h"

#define KP_EXEC_ID_MAX 129

typedef struct kp_exec {
    char id[KP_EXEC_ID_MAX];
    int slots;
    int reported_used; /* used_slots from its node (informational) */
    int used;          /* slots of instances dispatched/running there */
    kp_label *labels;
    size_t n_labels;
    int alive;   /* its node exists */
    int drained; /* an administrator drained it: no new dispatches */
} kp_exec;

/* Parse an executor node's JSON data into e (id from the node name, used
 * when the JSON has none). ORR_EINVAL naming the field on bad data; on
 * success free with kp_exec_clear(). */
orr_status kp_exec_parse(kp_exec *e, const char *node_id, const char *json, size_t len,
                         orr_err *err);
void kp_exec_clear(kp_exec *e);

/* 1 if every label of the task is on the executor with the same value. */
int kp_labels_match(const kp_label *want, size_t n_want, const kp_label *have, size_t n_have);

/* Index into ex of the executor for a task needing slots slots and labels
 * want; -1 when none fits. */
int kp_dispatch_choose(const kp_exec *ex, size_t n, int slots, const kp_label *want, size_t n_want);

/* Why kp_dispatch_choose finds no executor for such a task. */
typedef enum kp_exec_why {
    KP_EXEC_FITS,         /* one fits */
    KP_EXEC_NONE_LIVE,    /* no live executor at all */
    KP_EXEC_NO_LABELS,    /* no live executor has the task's labels */
    KP_EXEC_DRAINED,      /* the ones with the labels are all drained */
    KP_EXEC_TOO_BIG,      /* none with the labels has that many slots at all */
    KP_EXEC_NO_FREE_SLOT, /* the ones with the labels have no free slots now */
} kp_exec_why;

kp_exec_why kp_dispatch_explain(const kp_exec *ex, size_t n, int slots, const kp_label *want,
                                size_t n_want);
/* "no_executors", "no_label_match", "drained", "too_big", "no_free_slot" ("" for FITS). */
const char *kp_exec_why_name(kp_exec_why w);

#endif
