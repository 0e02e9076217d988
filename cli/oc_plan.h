/*
 * oc_plan.h - the plan of `orrery apply`: what each spec file changes on
 * the platform, as steps (create, update with a field diff, unchanged,
 * deactivate), printed for a person or as stable JSON.
 *
 * Pure: the field diff and the printing know no HTTP (oc_cmd_apply.c reads
 * the platform and carries the steps out), so unit tests cover them.
 */
#ifndef OC_PLAN_H
#define OC_PLAN_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "oc_spec.h"

/* One changed field: old NULL = added, new NULL = removed. */
typedef struct oc_change {
    char *field;
    json_t *old;
    json_t *new_;
} oc_change;

typedef struct oc_changes {
    oc_change *v;
    size_t n;
} oc_changes;

/* Append the fields that differ between old and new (objects are walked
 * key by key in sorted order; arrays and scalars compare whole) under path
 * ("spec"). Equal values add nothing. */
void oc_diff(const json_t *old, const json_t *new_, const char *path, oc_changes *out);
void oc_changes_free(oc_changes *c);

typedef enum oc_action {
    OC_CREATE,
    OC_UPDATE,
    OC_UNCHANGED,
    OC_DEACTIVATE,
} oc_action;

typedef struct oc_step {
    oc_action act;
    char *kind; /* task, workflow, pool, datasource */
    char *name;
    const oc_doc *doc; /* NULL for a deactivation */
    int64_t id;        /* the task's id (update, deactivate), else 0 */
    int version;       /* the task's current version (update) */
    int reactivate;    /* a task the platform holds deactivated: reactivate it first */
    oc_changes diff;
    char *note; /* extra words for a person, or NULL */
} oc_step;

typedef struct oc_plan {
    oc_step *v;
    size_t n;
} oc_plan;

oc_step *oc_plan_add(oc_plan *p, oc_action act, const char *kind, const char *name,
                     const oc_doc *doc);
void oc_plan_free(oc_plan *p);
/* Counts of each action. */
void oc_plan_counts(const oc_plan *p, int counts[4]);
const char *oc_action_name(oc_action a);

/* Human plan:  "+ create task etl.orders (orders.yaml:1)" / "~ update ..."
 * with one "    field: old -> new" line per change, then a summary line. */
void oc_plan_print(const oc_plan *p, FILE *f);
/* {"steps":[{"action","kind","name","file","line","changes":[{"field",
 * "old","new"}],"note"}],"summary":{"create":N,...},"applied":applied} */
json_t *oc_plan_json(const oc_plan *p, int applied);

#endif
