/*
 * hl_api_events.c - WatchEvents: replay from the event table, then live.
 *
 * The start point is fixed before anything is sent: from_id, the retention
 * horizon for from_id 0, or for from_latest the newest id at the moment the
 * call is accepted. With start_marker the first message says so
 * (kind "watch.start", id = start point), so a subscriber can order its own
 * later writes after the point.
 *
 * The reader keeps a cursor (the last id it has passed). Each round it reads
 * up to HL_WATCH_BATCH rows with id > cursor in id order, sends those that
 * match the filters, and advances the cursor; then it sleeps until the
 * listener's sequence moves (a NOTIFY arrived) or a poll timeout passes.
 *
 * Ids come from a sequence, so a transaction that took id 10 may commit
 * after one that took id 11. The reader therefore never passes a gap: when
 * the next row is not cursor + 1 it waits for the missing id, and passes it
 * (a rolled-back transaction, or a sequence that skipped ahead after a
 * server restart) only when no writing transaction older than the row after
 * the gap is still open (pg_stat_activity), or, as a fallback, once that row
 * is older than event_grace_ms.
 *
 * Reading pg_stat_activity costs PostgreSQL about as much as the events read
 * itself (it copies every backend's entry), and most rounds find no gap. So a
 * round first reads the events alone, passing a gap only by the grace
 * period; only when it stops at a gap does it read the oldest writer and
 * then the events again at once, and the rounds after keep judging that way
 * until one passes without a gap.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "hl_api.h"
#include "hl_evwin.h"
#include "orr_alloc.h"
#include "orr_log.h"

#define HL_WATCH_BATCH 256

static hl_stmt q_horizon =
    HL_STMT("SELECT pruned_upto, coalesce((SELECT max(id) FROM events), 0) FROM event_horizon");
/* The start time of the oldest writing transaction of any other session
 * (NULL when there is none). All halleyd replicas connect as one role, so
 * they see each other's backend_xid in pg_stat_activity. It is read in its
 * own statement BEFORE the events are read: a transaction still open then is
 * counted, and one that committed before then is visible to the later read.
 * Only rows written before that read ($5, its clock) can be judged by it.
 * (Read in the same statement, a writer committing between the events
 * snapshot and the pg_stat_activity read would be neither, and its event lost.) */
static hl_stmt q_oldest_writer =
    HL_STMT("SELECT min(xact_start), clock_timestamp() FROM pg_stat_activity"
            " WHERE datname = current_database() AND backend_xid IS NOT NULL"
            " AND pid <> pg_backend_pid()");
/* Column 7 says whether a gap before this row may be passed: true when the
 * row is older than the grace period, or older than both the read of
 * pg_stat_activity ($5) and $4, the oldest writing transaction it saw (a transaction holding a
 * lower, uncommitted id took it before this row was written, so it started before then). */
static hl_stmt q_events = HL_STMT(
    "SELECT id, kind, coalesce(task_id, 0), coalesce(instance_id, 0), executor, "
    "payload::text, " HL_MS(
        "created_at") ", created_at < clock_timestamp() - $2::int * interval '1 millisecond'"
                      " OR (created_at < $5::timestamptz"
                      " AND created_at < coalesce($4::timestamptz, 'infinity'))"
                      " FROM events WHERE id > $1::int8 ORDER BY id LIMIT $3::int");

static _Atomic uint64_t hl_watch_reads, hl_watch_gap_reads;

void hl_watch_stats(uint64_t *reads, uint64_t *gap_reads)
{
    *reads = atomic_load(&hl_watch_reads);
    *gap_reads = atomic_load(&hl_watch_gap_reads);
}

static int hl__kind_matches(const Orrery__Halley__V1__WatchEventsRequest *rq, const char *kind)
{
    if (rq->n_kinds == 0)
        return 1;
    for (size_t i = 0; i < rq->n_kinds; i++) {
        const char *k = rq->kinds[i];
        size_t n = strlen(k);
        if (n > 0 && k[n - 1] == '*') {
            if (strncmp(kind, k, n - 1) == 0)
                return 1;
        } else if (strcmp(kind, k) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Send the events of evs[0..n) that match the stream's filters. */
static orr_status hl__send(orr_rpc_call *call, const Orrery__Halley__V1__WatchEventsRequest *rq,
                           const hl_evwin_ev *evs, size_t n)
{
    orr_status s = ORR_OK;
    for (size_t i = 0; i < n && s == ORR_OK; i++) {
        const hl_evwin_ev *e = &evs[i];
        if (!hl__kind_matches(rq, e->kind) || (rq->task_id && rq->task_id != e->task_id) ||
            (rq->executor[0] && strcmp(rq->executor, e->executor) != 0))
            continue;
        Orrery__Halley__V1__Event ev = ORRERY__HALLEY__V1__EVENT__INIT;
        ev.id = e->id;
        ev.kind = (char *)e->kind;
        ev.task_id = e->task_id;
        ev.instance_id = e->instance_id;
        ev.executor = (char *)e->executor;
        ev.payload_json = (char *)e->payload_json;
        ev.created_at_ms = e->created_at_ms;
        s = orr_rpc_stream_send(call, &ev.base);
    }
    return s;
}

/* One read of the table after *cursor (judging a gap by the oldest writer
 * when judge): the rows passed are appended to evs[*n..] (their strings in
 * the results, owned by a) and *cursor moves past them; *gap when it
 * stopped at a gap, *full when it read a whole batch. */
static orr_status hl__read(hl_ctx *hc, orr_arena *a, int judge, int64_t *cursor, hl_evwin_ev *evs,
                           size_t *n, int *gap, int *full, orr_err *err)
{
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    /* Without the oldest writer, $4 NULL and $5 -infinity: a gap passes by
     * the grace period only. */
    const char *oldest = NULL, *seen_at = "-infinity";
    if (judge) {
        PGresult *ow;
        s = hl_db_query(c, a, &q_oldest_writer, 0, NULL, &ow, err);
        if (s != ORR_OK) {
            hl_db_put(hc->db, c);
            return s;
        }
        oldest = PQgetisnull(ow, 0, 0) ? NULL : PQgetvalue(ow, 0, 0);
        seen_at = PQgetvalue(ow, 0, 1);
    }
    const char *p[5] = {hl_i64s(a, *cursor), orr_arena_sprintf(a, "%d", hc->event_grace_ms),
                        orr_arena_sprintf(a, "%d", HL_WATCH_BATCH), oldest, seen_at};
    PGresult *r;
    s = hl_db_query(c, a, &q_events, 5, p, &r, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    atomic_fetch_add(&hl_watch_reads, 1);
    if (judge)
        atomic_fetch_add(&hl_watch_gap_reads, 1);
    int rows = PQntuples(r);
    *gap = 0;
    *full = rows == HL_WATCH_BATCH;
    for (int i = 0; i < rows; i++) {
        int64_t id = hl_val_i64(r, i, 0);
        if (id != *cursor + 1 && !hl_val_bool(r, i, 7)) {
            *gap = 1; /* an earlier id may still commit: wait for it */
            break;
        }
        *cursor = id;
        hl_evwin_ev *e = &evs[(*n)++];
        e->id = id;
        e->kind = hl_val(r, i, 1);
        e->task_id = hl_val_i64(r, i, 2);
        e->instance_id = hl_val_i64(r, i, 3);
        e->executor = hl_val(r, i, 4);
        e->payload_json = hl_val(r, i, 5);
        e->created_at_ms = hl_val_i64(r, i, 6);
    }
    return ORR_OK;
}

orr_status hl_api_watch_events(orr_rpc_call *call, const ProtobufCMessage *req, orr_err *err,
                               void *ctx)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__WatchEventsRequest *rq = (const void *)req;
    if (rq->from_id < 0)
        return orr_err_set(err, ORR_EINVAL, "from_id", "must be >= 0");
    if (rq->task_id < 0)
        return orr_err_set(err, ORR_EINVAL, "task_id", "must be >= 0");
    if (rq->n_kinds > 32)
        return orr_err_set(err, ORR_EINVAL, "kinds", "at most 32 kinds");

    /* A per-round arena: the call's arena would grow for the stream's life. */
    orr_arena *a = orr_arena_create(0);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        goto done;
    PGresult *r;
    s = hl_db_query(c, a, &q_horizon, 0, NULL, &r, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        goto done;
    int64_t pruned = hl_val_i64(r, 0, 0), latest = hl_val_i64(r, 0, 1);
    int64_t cursor = rq->from_id;
    if (rq->from_latest) {
        cursor = latest;
    } else if (rq->from_id == 0) {
        cursor = pruned;
    } else if (rq->from_id < pruned) {
        s = orr_err_set(err, ORR_ESTATE, "from_id",
                        "resume point expired: events up to %lld were removed by retention",
                        (long long)pruned);
        goto done;
    }
    orr_arena_reset(a);
    if (rq->start_marker) {
        Orrery__Halley__V1__Event mk = ORRERY__HALLEY__V1__EVENT__INIT;
        mk.id = cursor;
        mk.kind = "watch.start";
        mk.payload_json = "{}";
        if ((s = orr_rpc_stream_send(call, &mk.base)) != ORR_OK)
            goto done;
    }

    hl_evwin_ev *evs = orr_xmalloc(2 * HL_WATCH_BATCH * sizeof *evs);
    int judge = 0; /* a read alone judges the gap (this stream's own rounds) */
    while (s == ORR_OK && !orr_rpc_call_cancelled(call)) {
        uint64_t seq = hl_events_seq(hc->events);
        hl_evwin_fetch f;
        int how = hl_evwin_next(hc->evwin, cursor, 1000, &f);
        if (how == HL_EVWIN_NONE) {
            if (!f.more)
                hl_events_wait(hc->events, f.seq, f.gap ? 20 : 1000);
            continue;
        }
        if (how == HL_EVWIN_HAVE) { /* passed by another stream's fetch */
            int64_t to;
            size_t n = hl_evwin_copy(hc->evwin, a, cursor, HL_WATCH_BATCH, evs, &to);
            s = hl__send(call, rq, evs, n);
            int moved = to != cursor; /* else the window left it behind: read alone */
            cursor = to;
            orr_arena_reset(a);
            if (s == ORR_OK && moved && n < HL_WATCH_BATCH && !f.more)
                hl_events_wait(hc->events, f.seq, f.gap ? 20 : 1000);
            continue;
        }
        /* FETCH (for every live stream) or ALONE (behind the window). */
        int lead = how == HL_EVWIN_FETCH, j = lead ? f.judge : judge, gap = 0, full = 0;
        int64_t from = cursor;
        size_t n = 0;
        s = hl__read(hc, a, j, &cursor, evs, &n, &gap, &full, err);
        if (s == ORR_OK && gap && !j) /* read again at once, judging the gap */
            s = hl__read(hc, a, j = 1, &cursor, evs, &n, &gap, &full, err);
        hl_evwin_fetch done = {.seq = seq, .gap = gap, .more = full && !gap, .judge = gap};
        hl_evwin_put(hc->evwin, lead, from, s == ORR_OK ? cursor : from, evs, n, &done);
        if (!lead)
            judge = gap;
        if (s == ORR_OK)
            s = hl__send(call, rq, evs, n);
        orr_arena_reset(a);
        if (s == ORR_OK && !done.more)
            hl_events_wait(hc->events, seq, gap ? 20 : 1000);
    }
    free(evs);
    if (s == ORR_ECANCELLED)
        s = ORR_OK;
    if (s == ORR_OK && orr_rpc_call_cancelled(call))
        s = orr_err_set(err, ORR_ECANCELLED, NULL, "stream cancelled");
done:
    orr_arena_destroy(a);
    return s;
}
