/*
 * sort_specsrc.h - where a named stream's spec comes from when it is not a
 * local file: ZooKeeper (the node galaxyd publishes on every change) or
 * Halley (GetSortStream). One ops struct per kind.
 *
 *   zk      node /orrery/streams/<name> holds
 *           {"name": N, "version": V, "active": B, "spec": {...}}
 *   halley  GetSortStream(name) -> SortStream{spec_json, active, version}
 *
 * Call order: open -> [on_change] -> fetch* -> close, from one thread (the
 * spec watcher). fetch reads the current document each time; with
 * on_change, a ZooKeeper fetch also leaves a watch on the node, so a change
 * is announced at once (Halley has no watch: it is polled). The version
 * only grows; a caller applies a document whose version differs from the
 * running one.
 */
#ifndef SORT_SPECSRC_H
#define SORT_SPECSRC_H

#include <stdint.h>

#include "orr_status.h"
#include "sort_spec.h"

typedef struct sort_specsrc sort_specsrc;

/* One fetched document. spec is NULL when the spec did not parse (err of
 * fetch then names the field) and when the stream is inactive with no
 * spec. */
typedef struct sort_spec_doc {
    int64_t version;
    int active;
    sort_spec *spec; /* owned by the caller: sort_spec_free */
} sort_spec_doc;

/* ZooKeeper hosts ("h:p,..."), stream name (a safe name). ORR_EINVAL for a
 * bad name; a ZooKeeper that is down is not an error here (fetch retries). */
orr_status sort_specsrc_open_zk(const char *hosts, const char *name, sort_specsrc **out,
                                orr_err *err);
/* halleyd address ("host:port") and its service token (may be empty). */
orr_status sort_specsrc_open_halley(const char *addr, const char *token, const char *name,
                                    sort_specsrc **out, orr_err *err);

/* The current document. ORR_OK with doc filled (doc->spec set when active or
 * present); ORR_ENOTFOUND when the stream is not published; ORR_EUNAVAIL
 * when the store cannot be reached; ORR_EINVAL when the document or its spec
 * is bad (err->field names the JSON path, doc->version set when known). */
orr_status sort_specsrc_fetch(sort_specsrc *s, sort_spec_doc *doc, orr_err *err);

/* fn(ctx) is called (from a ZooKeeper thread: quick, no call into s) when
 * the node watched by the last fetch may have changed; fetch again. */
void sort_specsrc_on_change(sort_specsrc *s, void (*fn)(void *ctx), void *ctx);

/* "zk:/orrery/streams/NAME" or "halley:ADDR/NAME", for logs. */
const char *sort_specsrc_where(const sort_specsrc *s);

void sort_specsrc_close(sort_specsrc *s);

#endif
