/*
 * gx_paused.h - the tasks held by paused workflows, kept in galaxyd from
 * halleyd's events instead of asked for on every list.
 *
 * Every instance list, instance and task answer marks the tasks a paused
 * workflow holds, which took a ListPausedTasks call per request. This
 * module keeps the last answer of that call, valid while its event stream
 * ("workflow.*" and "task.*": a pause, a resume, a changed workflow or
 * task) is in place and no such event arrived since the answer was asked
 * for. Any such event, and every (re)start or loss of the stream, drops it;
 * the next request then asks halleyd again, and so does the first one after
 * any write through this galaxyd (gx_paused_forget). While the stream is
 * not in place every request asks, as before.
 */
#ifndef GX_PAUSED_H
#define GX_PAUSED_H

#include <jansson.h>
#include <stdint.h>

#include "gx_http.h"
#include "orr_rpc.h"
#include "orr_status.h"

typedef struct gx_paused gx_paused;

/* Start the watcher on client c (which must outlive it). */
orr_status gx_paused_start(orr_rpc_client *c, gx_paused **out, orr_err *err);
void gx_paused_stop(gx_paused *p);
/* A copy of the kept map (new reference), or NULL when there is none to
 * trust (p NULL, the stream not in place, or changed since): then *gen is
 * the version to hand to gx_paused_keep with the map asked for now. */
json_t *gx_paused_get(gx_paused *p, uint64_t *gen);
/* Keep map (copied) as the answer of version gen, unless an event came
 * since gen was read. */
void gx_paused_keep(gx_paused *p, uint64_t gen, const json_t *map);

/* Drop what is kept (a write went through this galaxyd: the next read asks,
 * so it sees the write whether or not its event arrived yet). */
void gx_paused_forget(gx_paused *p);

/* Every drop (an event, a change of the stream, gx_paused_forget) also
 * makes server s's response cache stale: an answer built from the map that
 * was dropped may have been cached meanwhile (the response cache follows
 * its own event stream, which may be ahead of this one, and a write
 * invalidates it before the map is forgotten). NULL: no server (call it
 * before s stops; after it returns no drop touches s). */
void gx_paused_set_cache(gx_paused *p, gx_server *s);

/* Set obj's "paused" to map's entry for task_id (a copy) or null. */
void gx_paused_mark(json_t *obj, const json_t *map, int64_t task_id);
/* The same for every object of the array items, its task id under id_key. */
void gx_paused_mark_all(json_t *items, const json_t *map, const char *id_key);

#endif
