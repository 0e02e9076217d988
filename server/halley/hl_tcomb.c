/*
 * hl_tcomb.c - TransitionInstance calls combined into multi-row statements.
 *
 * Each transition is a tiny statement; run one by one, PostgreSQL spends far
 * more per call on the protocol, the executor start-up, the commit and the
 * context switches than on the rows. Concurrent TransitionInstance calls are
 * therefore combined (flat combining): a caller queues its item and, while
 * fewer than `leaders` batches run ([halley] transition_leaders), becomes a
 * leader that takes the queued items (at most HL_TCOMB_MAX, one item per
 * instance id; a second item for the same instance waits for the next
 * batch) and runs them as ONE
 * statement over unnest()ed arrays, in one implicit transaction. Otherwise it
 * waits until a leader has answered its item. A batch starts beside running
 * ones only when at least `min_batch` items wait ([halley]
 * transition_min_batch): PostgreSQL's cost is mostly per statement, so a few
 * larger batches cost less CPU per item than many small ones; with no batch
 * running, any waiting item starts one at once.
 *
 * Semantics per item are those of the single statement (hl_transition_one):
 * the UPDATE matches only rows in the expected state and attempt, so each
 * item is its own compare-and-set; an item whose row did not match is then
 * told NOT_FOUND or ABORTED by a per-item read. If the combined statement
 * fails (bad text for the database, say), every item is retried alone, so an
 * item's error never leaks into its neighbours. Only ORR_EUNAVAIL (database
 * gone) fails the whole batch. After commit the leader reports the highest
 * event id (hl_events_committed).
 *
 * Invariants: the queue and the leader count are guarded by one mutex; an
 * item's result is written by a leader before HL_TW_DONE is set in its word
 * (release; the owner reads it with acquire), and every string in it is
 * copied into the item's own arena (the owner is blocked meanwhile), so
 * nothing points into a leader's results. Each waiter sleeps on its own word
 * (a futex): a leader that finishes wakes exactly the items of its batch, and
 * the queue's head (which may now lead), instead of every waiting thread, and
 * a head that takes a place while another is still free wakes the next head.
 * The wake-ups are sent after the mutex is released and a finished item's
 * owner returns without taking the mutex again, so a woken thread never
 * sleeps a second time on the mutex its waker still holds (each such sleep
 * is two more context switches per call). HL_TW_LEAD is set under the mutex
 * (the item is still queued, so its owner is there); HL_TW_DONE outside it,
 * on an item its owner cannot leave before that store. A wake-up sent after
 * the owner has gone may reach whatever word reuses that stack address: every
 * futex waiter re-checks its word, so it is at most a spurious wake-up.
 * Whether a caller may lead (hl__may_lead) turns true only when a leader
 * finishes (it wakes the head) or an item arrives (the arriving caller checks
 * for itself); so whenever it holds, the queue's head has been woken or some
 * caller is about to check.
 */
#include "hl_tcomb.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "orr_buf.h"
#include "orr_futex.h"

#define HL_TCOMB_MAX 64

typedef struct hl_titem {
    const hl_pb_transition_req *rq;
    orr_arena *arena; /* the caller's call arena */
    hl_pb_transition_res *res;
    orr_status status;
    orr_err err;
    _Atomic uint32_t word; /* HL_TW_*: the owner sleeps on it while it is 0 */
    struct hl_titem *next;
} hl_titem;

#define HL_TW_DONE 1u /* a leader has answered the item */
#define HL_TW_LEAD 2u /* the owner may lead now: check hl__may_lead */

/* One combiner per process (halleyd serves one hl_ctx). */
static pthread_mutex_t hl_tc_mu = PTHREAD_MUTEX_INITIALIZER;
static hl_titem *hl_tc_head, **hl_tc_tail = &hl_tc_head;
static int hl_tc_leaders;
static size_t hl_tc_queued; /* items in the queue */
/* Limits (hl_tcomb_configure): at most hl_tc_max_leaders batches at once,
 * and a batch beside a running one only once hl_tc_min_batch items wait. */
static int hl_tc_max_leaders = HL_TCOMB_LEADERS;
static size_t hl_tc_min_batch = HL_TCOMB_MIN_BATCH;
static uint64_t hl_tc_batches, hl_tc_items; /* statements run, items in them */

static hl_stmt q_transition_many = HL_STMT(
    "WITH x AS (SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[],"
    " $6::text[], $7::int[], $8::int[], $9::bool[], $10::int[], $11::bool[], $12::int8[])"
    " WITH ORDINALITY"
    " AS x(xid, xexp, xnew, xactor, xreason, xexec, xatt, xinc, xfin, xexit, xrec, xstart, xord)),"
    " u AS (UPDATE instances i SET state = x.xnew, attempt = i.attempt + x.xinc,"
    "  task_version = CASE WHEN x.xinc = 1 THEN (SELECT ct.current_version FROM tasks ct"
    "   WHERE ct.id = i.task_id) ELSE i.task_version END,"
    "  executor = CASE WHEN x.xnew = 'dispatched' THEN x.xexec ELSE i.executor END,"
    "  reason = x.xreason, updated_at = now(),"
    "  started_at = CASE WHEN x.xnew = 'running' THEN now()"
    "   WHEN x.xstart > 0 THEN greatest(i.updated_at,"
    "    least('epoch'::timestamptz + x.xstart * interval '1 ms', now()))"
    "   WHEN x.xnew = 'waiting' THEN NULL ELSE i.started_at END,"
    "  finished_at = CASE WHEN x.xfin THEN now() WHEN x.xnew = 'waiting' THEN NULL"
    "   ELSE i.finished_at END,"
    /* The current attempt's exit code, as att leaves it in attempts
     * (migrations/0021_instance_exit_code.sql): a new attempt starts with
     * the exit code it is recorded with, if any. */
    "  exit_code = CASE WHEN x.xinc <> 0 THEN CASE WHEN x.xrec THEN x.xexit END"
    "   WHEN x.xrec THEN coalesce(x.xexit, i.exit_code) ELSE i.exit_code END"
    " FROM x WHERE i.id = x.xid AND i.state = x.xexp AND (x.xatt = 0 OR i.attempt = x.xatt)"
    " RETURNING i.*, x.xexp, x.xactor, x.xreason, x.xfin, x.xexit, x.xrec, x.xstart, x.xord),"
    /* xstart > 0: dispatched -> running at the run's start, then the end
     * (hl_transition_one's statement says the same). */
    " tr AS (INSERT INTO instance_transitions"
    "  (instance_id, attempt, from_state, to_state, actor, reason, executor, at)"
    "  SELECT id, attempt, s.f, s.t, xactor, s.r, executor, s.at FROM u CROSS JOIN LATERAL"
    "  (SELECT u.xexp AS f, 'running'::text AS t, ''::text AS r, u.started_at AS at, 1 AS k"
    "   WHERE u.xstart > 0 UNION ALL SELECT CASE WHEN u.xstart > 0 THEN 'running' ELSE u.xexp END,"
    "   u.state, u.xreason, clock_timestamp(), 2) s ORDER BY u.xord, s.k),"
    " att AS (INSERT INTO attempts (instance_id, attempt, executor, state, exit_code, reason,"
    "  finished_at, task_version)"
    "  SELECT id, attempt, executor, state, xexit, xreason, CASE WHEN xfin THEN now() END,"
    "  task_version FROM u WHERE xrec"
    "  ON CONFLICT (instance_id, attempt) DO UPDATE SET state = excluded.state,"
    "   task_version = excluded.task_version,"
    "   executor = excluded.executor, exit_code = coalesce(excluded.exit_code,"
    "   attempts.exit_code), reason = excluded.reason, finished_at = excluded.finished_at,"
    "   started_at = CASE WHEN excluded.state = 'dispatched' THEN now()"
    "   ELSE attempts.started_at END),"
    " ev AS (INSERT INTO events (kind, task_id, instance_id, executor, payload)"
    "  SELECT 'instance.transition', task_id, id, executor, jsonb_build_object('from', xexp,"
    "  'to', state, 'attempt', attempt, 'actor', xactor, 'reason', xreason) FROM u ORDER BY xord"
    "  RETURNING id, instance_id) "
    "SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL ", ev.id, i.xord"
    " FROM u i JOIN ev ON ev.instance_id = i.id JOIN tasks t ON t.id = i.task_id");

/* Append s as a quoted element of a PostgreSQL array literal. */
static void hl__arr_str(orr_buf *b, const char *s)
{
    orr_buf_append_byte(b, '"');
    for (const char *p = s ? s : ""; *p; p++) {
        if (*p == '"' || *p == '\\')
            orr_buf_append_byte(b, '\\');
        orr_buf_append_byte(b, *p);
    }
    orr_buf_append_byte(b, '"');
}

/* Copy the strings of an instance filled from a result into arena a. */
static hl_pb_instance *hl__own_instance(orr_arena *a, const hl_pb_instance *src)
{
    hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
    *in = *src;
    in->task_name = orr_arena_strdup(a, src->task_name);
    in->executor = orr_arena_strdup(a, src->executor);
    in->reason = orr_arena_strdup(a, src->reason);
    return in;
}

/* Run items[0..n) alone, one statement each, on c. */
static void hl__run_alone(hl_conn *c, hl_titem **items, size_t n, int64_t *max_event)
{
    for (size_t i = 0; i < n; i++) {
        hl_titem *it = items[i];
        it->status = hl_transition_one(c, it->arena, it->rq, it->res, &it->err);
        if (it->status == ORR_OK && it->res->event_id > *max_event)
            *max_event = it->res->event_id;
    }
}

/* Run a batch on a fresh connection; fills every item's status/result. */
static void hl__run_batch(hl_ctx *hc, hl_titem **items, size_t n)
{
    hl_conn *c;
    orr_err e;
    orr_err_clear(&e);
    orr_status s = hl_db_get(hc->db, &c, &e);
    if (s != ORR_OK) {
        for (size_t i = 0; i < n; i++) {
            items[i]->status = s;
            items[i]->err = e;
        }
        return;
    }
    int64_t max_event = 0;
    if (n == 1) {
        hl__run_alone(c, items, 1, &max_event);
        goto out;
    }
    orr_buf col[12];
    for (int k = 0; k < 12; k++) {
        col[k] = (orr_buf)ORR_BUF_INIT;
        orr_buf_append_byte(&col[k], '{');
    }
    for (size_t i = 0; i < n; i++) {
        const hl_pb_transition_req *rq = items[i]->rq;
        hl_state from = (hl_state)rq->expected_state, to = (hl_state)rq->new_state;
        unsigned edge = hl_sm_edge(from, to);
        int rec = to == HL_ST_DISPATCHED || to == HL_ST_RUNNING ||
                  (hl_sm_finished(to) && to != HL_ST_MARKED_SUCCESS);
        const char *sep = i ? "," : "";
        orr_buf_appendf(&col[0], "%s%lld", sep, (long long)rq->instance_id);
        orr_buf_appendf(&col[1], "%s%s", sep, hl_state_name(from));
        orr_buf_appendf(&col[2], "%s%s", sep, hl_state_name(to));
        for (int k = 3; k <= 5; k++)
            orr_buf_appendf(&col[k], "%s", sep);
        hl__arr_str(&col[3], rq->actor);
        hl__arr_str(&col[4], rq->reason);
        hl__arr_str(&col[5], rq->executor);
        orr_buf_appendf(&col[6], "%s%d", sep, (int)rq->expected_attempt);
        orr_buf_appendf(&col[7], "%s%d", sep, (edge & HL_EDGE_NEW_ATTEMPT) ? 1 : 0);
        orr_buf_appendf(&col[8], "%s%s", sep, hl_sm_finished(to) ? "t" : "f");
        if (rq->has_exit_code)
            orr_buf_appendf(&col[9], "%s%d", sep, (int)rq->exit_code);
        else
            orr_buf_appendf(&col[9], "%sNULL", sep);
        orr_buf_appendf(&col[10], "%s%s", sep, rec ? "t" : "f");
        orr_buf_appendf(&col[11], "%s%lld", sep, (long long)rq->started_at_ms);
    }
    const char *p[12];
    for (int k = 0; k < 12; k++) {
        orr_buf_append_byte(&col[k], '}');
        p[k] = orr_buf_cstr(&col[k]);
    }
    orr_arena *tmp = orr_arena_create(0);
    PGresult *r = NULL;
    s = hl_db_query(c, tmp, &q_transition_many, 12, p, &r, &e);
    for (int k = 0; k < 12; k++)
        orr_buf_free(&col[k]);
    if (s == ORR_EUNAVAIL) {
        for (size_t i = 0; i < n; i++) {
            items[i]->status = s;
            items[i]->err = e;
        }
    } else if (s != ORR_OK) {
        hl__run_alone(c, items, n, &max_event); /* each item gets its own error */
    } else {
        unsigned char *hit = orr_arena_calloc(tmp, n, 1);
        for (int row = 0; row < PQntuples(r); row++) {
            long long ord = hl_val_i64(r, row, HL_INSTANCE_NCOLS + 2);
            if (ord < 1 || (size_t)ord > n)
                continue;
            hl_titem *it = items[ord - 1];
            hl_pb_instance in;
            hl_fill_instance(tmp, r, row, &in);
            it->res->instance = hl__own_instance(it->arena, &in);
            it->res->event_id = hl_val_i64(r, row, HL_INSTANCE_NCOLS + 1);
            it->status = ORR_OK;
            hit[ord - 1] = 1;
            if (it->res->event_id > max_event)
                max_event = it->res->event_id;
        }
        /* Items whose row did not match: NOT_FOUND or ABORTED, told alone. */
        for (size_t i = 0; i < n; i++)
            if (!hit[i])
                hl__run_alone(c, &items[i], 1, &max_event);
    }
    orr_arena_destroy(tmp);
out:
    hl_db_put(hc->db, c);
    hl_events_committed(hc->events, max_event);
}

/* May a caller lead a new batch now? Mutex held. A first batch starts at
 * once; one beside running batches only when enough items wait, so that the
 * statements' fixed cost is spread over more items. */
static int hl__may_lead(void)
{
    return hl_tc_head && hl_tc_leaders < hl_tc_max_leaders &&
           (hl_tc_leaders == 0 || hl_tc_queued >= hl_tc_min_batch);
}

/* Take up to HL_TCOMB_MAX queued items, one per instance id. Mutex held. */
static size_t hl__take(hl_titem **out)
{
    size_t n = 0;
    hl_titem **pp = &hl_tc_head;
    while (*pp && n < HL_TCOMB_MAX) {
        hl_titem *it = *pp;
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++)
            dup = out[i]->rq->instance_id == it->rq->instance_id;
        if (dup) {
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        out[n++] = it;
        hl_tc_queued--;
    }
    hl_tc_tail = &hl_tc_head;
    while (*hl_tc_tail)
        hl_tc_tail = &(*hl_tc_tail)->next;
    return n;
}

orr_status hl_tcomb_transition(hl_ctx *hc, orr_arena *a, const hl_pb_transition_req *rq,
                               hl_pb_transition_res *res, orr_err *err)
{
    hl_titem self = {.rq = rq, .arena = a, .res = res, .status = ORR_EINTERNAL};
    orr_err_clear(&self.err);
    pthread_mutex_lock(&hl_tc_mu);
    *hl_tc_tail = &self;
    hl_tc_tail = &self.next;
    hl_tc_queued++;
    for (;;) {
        if (!hl__may_lead()) {
            /* Sleep until a leader answers this item or wakes it to lead. */
            atomic_fetch_and(&self.word, ~HL_TW_LEAD);
            pthread_mutex_unlock(&hl_tc_mu);
            uint32_t w;
            while ((w = atomic_load_explicit(&self.word, memory_order_acquire)) == 0)
                orr_futex_wait(&self.word, 0, NULL);
            if (w & HL_TW_DONE)
                break;
            pthread_mutex_lock(&hl_tc_mu);
            continue;
        }
        hl_titem *batch[HL_TCOMB_MAX];
        size_t n = hl__take(batch);
        hl_tc_leaders++;
        hl_tc_batches++;
        hl_tc_items += n;
        /* Two places may have freed before this woken head got here (each
         * finishing leader wakes the head it saw): pass the wake-up on, so
         * no place idles while items wait. */
        hl_titem *next = NULL;
        if (hl__may_lead() && hl_tc_head != &self) {
            next = hl_tc_head;
            atomic_fetch_or(&next->word, HL_TW_LEAD);
        }
        pthread_mutex_unlock(&hl_tc_mu);
        if (next)
            orr_futex_wake(&next->word, 1);
        hl__run_batch(hc, batch, n);
        pthread_mutex_lock(&hl_tc_mu);
        hl_tc_leaders--;
        /* A leader's place is free: the oldest waiter takes it (it is the
         * first item hl__take takes, so it leads its own batch). */
        next = hl_tc_head != &self ? hl_tc_head : NULL;
        if (next)
            atomic_fetch_or(&next->word, HL_TW_LEAD);
        pthread_mutex_unlock(&hl_tc_mu);
        if (next)
            orr_futex_wake(&next->word, 1);
        int mine = 0;
        for (size_t i = 0; i < n; i++) {
            if (batch[i] == &self) {
                mine = 1;
                continue;
            }
            _Atomic uint32_t *w = &batch[i]->word;
            atomic_fetch_or_explicit(w, HL_TW_DONE, memory_order_release);
            orr_futex_wake(w, 1); /* the owner may have gone: see the invariants */
        }
        /* The batch may have left this caller's own item queued (a second
         * item for an instance already in it, or beyond HL_TCOMB_MAX). */
        if (mine || (atomic_load_explicit(&self.word, memory_order_acquire) & HL_TW_DONE))
            break;
        pthread_mutex_lock(&hl_tc_mu);
    }
    if (self.status != ORR_OK)
        *err = self.err;
    return self.status;
}

void hl_tcomb_configure(int leaders, int min_batch)
{
    pthread_mutex_lock(&hl_tc_mu);
    hl_tc_max_leaders = leaders < 1 ? 1 : leaders;
    hl_tc_min_batch = min_batch < 1 ? 1 : (size_t)min_batch;
    pthread_mutex_unlock(&hl_tc_mu);
}

void hl_tcomb_stats(uint64_t *batches, uint64_t *items)
{
    pthread_mutex_lock(&hl_tc_mu);
    *batches = hl_tc_batches;
    *items = hl_tc_items;
    pthread_mutex_unlock(&hl_tc_mu);
}

orr_status hl_tcomb_transition_batch(hl_ctx *hc, orr_arena *a, hl_pb_transition_req *const *rqs,
                                     size_t n, hl_pb_transition_res **res, orr_status *status,
                                     orr_err *errs)
{
    hl_titem *items = orr_arena_calloc(a, n ? n : 1, sizeof *items);
    hl_titem **chunk = orr_arena_calloc(a, HL_TCOMB_MAX, sizeof *chunk);
    size_t k = 0;
    for (size_t i = 0; i <= n; i++) {
        /* A chunk ends at HL_TCOMB_MAX items, at the end, or before a second
         * item for an instance already in it (that one must see the first's
         * effect, so it goes into a later statement). */
        int flush = i == n || k == HL_TCOMB_MAX;
        for (size_t j = 0; !flush && j < k; j++)
            flush = chunk[j]->rq->instance_id == rqs[i]->instance_id;
        if (flush && k > 0) {
            hl__run_batch(hc, chunk, k);
            for (size_t j = 0; j < k; j++)
                if (chunk[j]->status == ORR_EUNAVAIL) {
                    errs[0] = chunk[j]->err;
                    return ORR_EUNAVAIL;
                }
            k = 0;
        }
        if (i == n)
            break;
        hl_titem *it = &items[i];
        it->rq = rqs[i];
        it->arena = a;
        it->res = res[i];
        orr_err_clear(&it->err);
        it->status = hl_transition_check(rqs[i], &it->err);
        if (it->status == ORR_OK) {
            it->status = ORR_EINTERNAL;
            chunk[k++] = it;
        }
    }
    for (size_t i = 0; i < n; i++) {
        status[i] = items[i].status;
        errs[i] = items[i].err;
    }
    return ORR_OK;
}
