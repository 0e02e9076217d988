/*
 * hl_spec.h - task specs: validate against schema/task.schema.json and pull
 * out the fields halleyd stores in columns (name, team, type, schedule,
 * timezone, priority, upstream dependencies).
 *
 * Call order: hl_spec_schema_load once; hl_spec_parse per request (thread-safe
 * on one loaded schema); hl_spec_clear; hl_spec_schema_free at exit.
 */
#ifndef HL_SPEC_H
#define HL_SPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "orr_jschema.h"
#include "orr_status.h"

#define HL_SPEC_MAX_DEPS 256

typedef struct hl_spec_dep {
    const char *kind;  /* strong | weak | self | data_unit */
    const char *task;  /* upstream task name (NULL for self and data_unit) */
    const char *cycle; /* same | latest */
    json_t *unit;      /* data_unit: {stream, business, interface} (borrowed) */
} hl_spec_dep;

typedef struct hl_spec {
    json_t *root;                                         /* owned */
    const char *name, *team, *type, *schedule, *timezone; /* borrowed from root */
    int64_t priority;
    size_t n_deps;
    hl_spec_dep deps[HL_SPEC_MAX_DEPS];
} hl_spec;

/* Compile the embedded task schema. ORR_EINTERNAL if it does not load (a
 * build defect). Free with orr_jschema_free. */
orr_status hl_spec_schema_load(orr_jschema **out, orr_err *err);

/* Parse and validate len bytes of JSON: the task schema, then the schedule and
 * time zone as keplerd will read them (orr_cron_check at the current time: the
 * cron parses, the zone exists, the schedule fires again). On failure ORR_EINVAL
 * with err->field the path of the bad field under "spec" ("spec.retries.max",
 * "spec.schedule", "spec.timezone"), or "spec" for text that is not JSON;
 * ORR_EIO when the zone database cannot be read. On success out owns a
 * reference to the document: release it with hl_spec_clear. */
orr_status hl_spec_parse(const orr_jschema *schema, const char *json, size_t len, hl_spec *out,
                         orr_err *err);
void hl_spec_clear(hl_spec *s);

#endif
