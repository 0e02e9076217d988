/*
 * orr_schemas.h - the project's JSON Schemas (schema/NAME.schema.json), compiled
 * into liborrery, so every binary that checks a document checks it against
 * the same text: halleyd when a task or sort stream is saved, sortd when it
 * loads a stream spec, wormhole when it loads a transfer job.
 */
#ifndef ORR_SCHEMAS_H
#define ORR_SCHEMAS_H

#include "orr_embed.h"
#include "orr_jschema.h"
#include "orr_status.h"

/* Sorted by name; terminated by an entry with name == NULL. */
extern const orr_embedded_file orr_schema_files[];
extern const unsigned orr_schema_files_count;

/* Compile the embedded schema called name ("task.schema.json"). *out is
 * freed with orr_jschema_free. ORR_EINTERNAL naming the file when it is not
 * embedded or does not compile (a build defect). */
orr_status orr_schema_load(const char *name, orr_jschema **out, orr_err *err);

/* The embedded schema called name, compiled on first use and kept for the
 * life of the process (never free it). Thread-safe; the result is shared
 * (orr_jschema_validate may run on it from any number of threads). Fails as
 * orr_schema_load does, and again on every later call. */
orr_status orr_schema_get(const char *name, const orr_jschema **out, orr_err *err);

#endif
