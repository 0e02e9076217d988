/*
 * oc_spec.h - spec files: what `orrery validate`, `apply` and `export` read
 * and write.
 *
 * A file (YAML or JSON; JSON is read as YAML, so both give line numbers)
 * holds one or more documents (YAML `---`, or a JSON array), each
 *
 *   kind: task | workflow | pool | datasource
 *   spec: { ... }
 *
 * A task's spec is schema/task.schema.json; a workflow's {name, team,
 * tasks: [task names]}; a pool's {name, capacity}; a data source's {name,
 * kind, params, password_env?} (a reference: the password itself never sits
 * in a file, password_env names the environment variable that holds it).
 *
 * YAML is read with the YAML 1.2 core schema (true/false, null, numbers;
 * `yes`/`on` are strings); anchors, aliases and tags other than !!str are
 * refused; a key given twice is an error. Every node remembers its line, so
 * an error names file:line and the field ("spec.retries.max").
 */
#ifndef OC_SPEC_H
#define OC_SPEC_H

#include <jansson.h>
#include <stddef.h>

#include "orr_buf.h"
#include "orr_status.h"

/* Limits of the loader (input comes from files a person wrote). */
#define OC_SPEC_MAX_BYTES (16 * 1024 * 1024)
#define OC_SPEC_MAX_DEPTH 64
#define OC_SPEC_MAX_NODES 200000

/* Diagnostics of a load: one line per problem, "file:line: field: message". */
typedef struct oc_diags {
    orr_buf text;
    int n;
} oc_diags;
void oc_diag_add(oc_diags *d, const char *file, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void oc_diags_free(oc_diags *d);

typedef struct oc_mark {
    char *path; /* "spec.retries.max", "spec.upstreams[0].task" */
    int line;   /* 1-based */
} oc_mark;

/* One object of a spec file. */
typedef struct oc_doc {
    char *file;
    int line;   /* where the document starts */
    char *kind; /* task, workflow, pool, datasource */
    char *name; /* spec.name */
    json_t *spec;
    oc_mark *marks;
    size_t nmarks;
} oc_doc;

typedef struct oc_docs {
    oc_doc *v;
    size_t n;
} oc_docs;

/*
 * Parse text (len bytes) of file into documents appended to docs, each
 * checked (envelope, and its spec against its kind's schema). Problems go
 * to diags with file:line and the field; returns ORR_OK when there were
 * none, else ORR_EINVAL (documents that were fine are still appended).
 */
orr_status oc_spec_parse(const char *file, const char *text, size_t len, oc_docs *docs,
                         oc_diags *diags);
/* Read path (a file, or a folder: its *.yaml, *.yml and *.json, recursively,
 * in name order) and parse it as above; ORR_EIO when it cannot be read. */
orr_status oc_spec_load(const char *path, oc_docs *docs, oc_diags *diags);
/* Line of the node at path, or of its nearest ancestor that has one. */
int oc_doc_line(const oc_doc *d, const char *path);
void oc_docs_free(oc_docs *docs);

/* Write one document (kind, spec) as YAML: block style, strings double-
 * quoted, keys in the spec's order. Reading it back gives the same JSON. */
void oc_yaml_write(orr_buf *out, const char *kind, const json_t *spec);

#endif
