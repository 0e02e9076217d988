/*
 * hl_api_runs.c - operators' runs: run now, the rerun of a set of instances,
 * and backfill with downstream tasks and pacing.
 *
 * RunNow releases the instance of one slot (task, schedule time) at once:
 * created if missing, else moved back to waiting if it was suspended or
 * finished; it carries run_now (keplerd does not wait for its schedule time)
 * and ignore_upstreams (keplerd does not check its dependencies). The
 * timeline gets a "run now" row with the actor, the audit log a record, and
 * keplerd an "instance.run" event (or the flags in "instance.created").
 *
 * RerunInstances takes roots (instances, or the failed ones of a workflow's
 * cycle) and, by scope, every downstream or upstream instance of the same
 * cycle, transitively, through hl_instance_deps (the cycle mapping of
 * lib/orr_cycle that keplerd decides with; "self" edges are not followed, so
 * a set never runs into the task's other cycles). The whole set is read and
 * locked in one transaction; a member that is ready, dispatched or running
 * refuses the call (FAILED_PRECONDITION naming it) before anything changed,
 * so a set reruns whole or not at all.
 *
 * Backfill plans the fire times of a task in a range and, with
 * include_downstream, the mapped cycles of its downstream tasks (strong and
 * weak edges, transitively). Each planned instance belongs to a backfill
 * cycle: the latest fire time of the backfilled task that reaches it, so a
 * downstream instance never waits on a later cycle than its own and serial
 * pacing cannot deadlock. keplerd admits at most backfill_cycles cycles of
 * one backfill at a time (kp_backfill.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_buf.h"
#include "orr_cron.h"
#include "orr_cycle.h"
#include "orr_log.h"

/* Most instances one rerun or one backfill may touch. */
#define HL_RUN_SET_MAX 1000

typedef Orrery__Halley__V1__DepState hl_pb_dep;

/* A task as runs need it: active, schedule, zone, team and name. */
static hl_stmt q_run_task =
    HL_STMT("SELECT t.active, tv.schedule, tv.timezone, tm.name, t.name FROM tasks t"
            " JOIN task_versions tv ON tv.task_id = t.id AND tv.version = t.current_version"
            " JOIN teams tm ON tm.id = t.team_id WHERE t.id = $1::int8");

static hl_stmt q_slot_lock =
    HL_STMT("SELECT id, state, attempt FROM instances WHERE task_id = $1::int8"
            " AND schedule_time = to_timestamp($2::int8 / 1000.0) FOR UPDATE");

/* Create the slot's instance, released: $3 ignore_upstreams, $4 actor, $5 the
 * timeline's reason, $6 its parameter values (a JSON object). */
static hl_stmt q_run_create = HL_STMT(
    "WITH ins AS ("
    " INSERT INTO instances (task_id, task_version, schedule_time, state, priority, run_now,"
    "  ignore_upstreams, params)"
    " SELECT t.id, t.current_version, to_timestamp($2::int8 / 1000.0), 'waiting', 0, true,"
    "  $3::bool, $6::jsonb FROM tasks t WHERE t.id = $1::int8 AND t.active"
    " ON CONFLICT (task_id, schedule_time) DO NOTHING RETURNING *),"
    " tr AS (INSERT INTO instance_transitions (instance_id, attempt, from_state, to_state, actor,"
    "  reason) SELECT id, attempt, 'waiting', 'waiting', $4, $5 FROM ins),"
    " ev AS (INSERT INTO events (kind, task_id, instance_id, payload)"
    " SELECT 'instance.created', task_id, id, jsonb_build_object('state', 'waiting',"
    " 'actor', $4::text, 'schedule_time_ms', $2::int8, 'task_version', task_version,"
    " 'run_now', true, 'ignore_upstreams', $3::bool) FROM ins RETURNING id) "
    "SELECT " HL_INSTANCE_COLS ", NULL::int, ev.id"
    " FROM ins i JOIN ev ON true JOIN tasks t ON t.id = i.task_id");

/* Release a waiting instance: $2 ignore_upstreams, $3 actor, $4 reason, $5
 * its parameter values (NULL: keep them). */
static hl_stmt q_run_release = HL_STMT(
    "WITH u AS (UPDATE instances SET run_now = true, ignore_upstreams = $2::bool,"
    "  params = coalesce($5::jsonb, params),"
    "  updated_at = now() WHERE id = $1::int8 AND state = 'waiting' RETURNING *),"
    " tr AS (INSERT INTO instance_transitions (instance_id, attempt, from_state, to_state, actor,"
    "  reason) SELECT id, attempt, 'waiting', 'waiting', $3, $4 FROM u),"
    " ev AS (INSERT INTO events (kind, task_id, instance_id, payload)"
    "  SELECT 'instance.run', task_id, id, jsonb_build_object('run_now', true,"
    "  'ignore_upstreams', $2::bool, 'attempt', attempt, 'actor', $3::text, 'reason', $4::text)"
    "  FROM u RETURNING id) "
    "SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL ", ev.id"
    " FROM u i JOIN ev ON true JOIN tasks t ON t.id = i.task_id");

/* ------------------------------------------------------------ shared */

/* A task's cron and zone; *has 0 when it has no (usable) schedule. */
static void hl__run_sched(const char *expr, const char *zone, orr_cron *c, const orr_tz **tz,
                          int *has)
{
    orr_err e;
    *has = expr && *expr && orr_cron_parse_into(expr, c, &e) == ORR_OK;
    if (orr_tz_load(zone && *zone ? zone : "UTC", tz, &e) != ORR_OK)
        (void)orr_tz_load("UTC", tz, &e);
}

static int hl__team_allowed(int restrict_teams, char *const *teams, size_t n, const char *team)
{
    if (!restrict_teams)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(teams[i], team) == 0)
            return 1;
    return 0;
}

static orr_status hl__check_actor(const char *actor, const char *reason, orr_err *err)
{
    if (!actor || !actor[0])
        return orr_err_set(err, ORR_EINVAL, "actor", "is required");
    if (strlen(actor) > 256)
        return orr_err_set(err, ORR_EINVAL, "actor", "at most 256 bytes");
    if (reason && strlen(reason) > 4096)
        return orr_err_set(err, ORR_EINVAL, "reason", "at most 4096 bytes");
    return ORR_OK;
}

/* ------------------------------------------------------------ run now */

HL_UNARY(hl_api_run_now)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__RunNowRequest);
    if (rq->task_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "task_id", "must be positive");
    if (rq->schedule_time_ms <= 0)
        return orr_err_set(err, ORR_EINVAL, "schedule_time_ms", "must be positive");
    orr_status s = hl__check_actor(rq->actor, rq->reason, err);
    if (s != ORR_OK)
        return s;
    const char *why =
        rq->reason && rq->reason[0]
            ? orr_arena_sprintf(a, "run now%s: %s",
                                rq->ignore_upstreams ? ", ignoring upstreams" : "", rq->reason)
            : (rq->ignore_upstreams ? "run now, ignoring upstreams" : "run now");
    hl_conn *c = NULL;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *tid = hl_i64s(a, rq->task_id), *ms = hl_i64s(a, rq->schedule_time_ms);
    const char *ign = rq->ignore_upstreams ? "true" : "false";
    int have_params = rq->params_json && rq->params_json[0];
    const char *params = "{}";
    PGresult *r;
    int64_t max_event = 0;
    Orrery__Halley__V1__RunNowResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__run_now_response__init(o);
    if ((s = hl_params_parse(a, rq->params_json, &params, err)) != ORR_OK ||
        (s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_run_task, 1, (const char *[]){tid}, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "task_id", "no such task");
        goto out;
    }
    if ((s = hl_params_known(c, a, rq->task_id, 0, params, err)) != ORR_OK)
        goto out;
    if (!hl_val_bool(r, 0, 0)) {
        s = orr_err_set(err, ORR_ESTATE, "task_id", "task %s is deactivated", hl_val(r, 0, 4));
        goto out;
    }
    if (!hl__team_allowed(rq->restrict_teams, rq->teams, rq->n_teams, hl_val(r, 0, 3))) {
        s = orr_err_set(err, ORR_EPERM, "task_id", "task %s belongs to team %s", hl_val(r, 0, 4),
                        hl_val(r, 0, 3));
        goto out;
    }
    {
        orr_cron cr;
        const orr_tz *tz;
        int has;
        hl__run_sched(hl_val(r, 0, 1), hl_val(r, 0, 2), &cr, &tz, &has);
        int64_t t = rq->schedule_time_ms / 1000, prev = 0, adj = 0;
        /* a fire time of the cron, or one its business calendar moved */
        const orr_cal *cal = NULL;
        orr_cal_policy pol = ORR_CAL_SKIP;
        if (has && (s = hl_calendar_of_task(c, a, rq->task_id, &cal, &pol, err)) != ORR_OK)
            goto out;
        if (has &&
            (rq->schedule_time_ms % 1000 != 0 ||
             orr_cycle_prev_fire(&cr, tz, t + 1, &prev) != ORR_OK || prev != t) &&
            !(cal && rq->schedule_time_ms % 1000 == 0 &&
              orr_cal_next(&cr, tz, cal, pol, t - 1, &adj) == ORR_OK && adj == t)) {
            int64_t next = 0;
            char when[32] = "";
            if (orr_cal_next(&cr, tz, cal, pol, t, &next) == ORR_OK)
                orr_tz_format_utc(next, when, sizeof when);
            s = orr_err_set(err, ORR_EINVAL, "schedule_time_ms",
                            "not a fire time of the task's schedule (%s%s)",
                            when[0] ? "the next is " : "it fires no more", when);
            goto out;
        }
    }
    const char *p2[2] = {tid, ms};
    if ((s = hl_db_query(c, a, &q_slot_lock, 2, p2, &r, err)) != ORR_OK)
        goto out;
    PGresult *res;
    if (PQntuples(r) == 0) {
        const char *pc[6] = {tid, ms, ign, rq->actor, why, params};
        if ((s = hl_db_query(c, a, &q_run_create, 6, pc, &res, err)) != ORR_OK)
            goto out;
        if (PQntuples(res) != 1) { /* made by someone else between the lock and here */
            s = orr_err_set(err, ORR_ECONFLICT, "schedule_time_ms",
                            "the slot's instance was just created; try again");
            goto out;
        }
        o->created = 1;
    } else {
        int64_t id = hl_val_i64(r, 0, 0);
        hl_state st = hl_state_parse(hl_val(r, 0, 1));
        if (st == HL_ST_READY || st == HL_ST_DISPATCHED || st == HL_ST_RUNNING) {
            s = orr_err_set(err, ORR_ESTATE, "schedule_time_ms",
                            "instance %" PRId64 " of that slot is %s already", id, hl_val(r, 0, 1));
            goto out;
        }
        if (st != HL_ST_WAITING) { /* suspended or finished: back to waiting first */
            hl_pb_transition_req tq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
            tq.instance_id = id;
            tq.expected_state = (Orrery__Halley__V1__InstanceState)st;
            tq.new_state = ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_WAITING;
            tq.actor = rq->actor;
            tq.reason = (char *)why;
            tq.expected_attempt = (int32_t)hl_val_i64(r, 0, 2);
            hl_pb_transition_res tr = ORRERY__HALLEY__V1__TRANSITION_RESULT__INIT;
            if ((s = hl_transition_one(c, a, &tq, &tr, err)) != ORR_OK)
                goto out;
        }
        const char *pr[5] = {hl_i64s(a, id), ign, rq->actor, why, have_params ? params : NULL};
        if ((s = hl_db_query(c, a, &q_run_release, 5, pr, &res, err)) != ORR_OK)
            goto out;
        if (PQntuples(res) != 1) {
            s = orr_err_set(err, ORR_ECONFLICT, "schedule_time_ms",
                            "the instance moved; try again");
            goto out;
        }
    }
    hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
    hl_fill_instance(a, res, 0, in);
    max_event = hl_val_i64(res, 0, HL_INSTANCE_NCOLS + 1);
    const char *detail = orr_arena_sprintf(
        a,
        "{\"task\":%s,\"schedule_time_ms\":%" PRId64 ",\"ignore_upstreams\":%s,\"created\":%s%s%s}",
        hl_jstr(a, in->task_name), in->schedule_time_ms, ign, o->created ? "true" : "false",
        have_params ? ",\"params\":" : "", have_params ? params : "");
    if ((s = hl_audit(c, a, rq->actor, "instance.run_now",
                      orr_arena_sprintf(a, "instance:%" PRId64, in->id), detail, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_events_committed(hc->events, max_event);
    o->instance = in;
    *resp = &o->base;
    ORR_INFO("run now", "instance_id=%" PRId64 " task_id=%" PRId64 " ignore_upstreams=%d actor=%s",
             in->id, in->task_id, (int)rq->ignore_upstreams, orr_log_q(rq->actor));
out:
    hl_db_put(hc->db, c);
    return s;
}

/* ------------------------------------------------------------ rerun of a set */

static hl_stmt q_rerun_lock =
    HL_STMT("SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL ", tm.name FROM instances i"
            " JOIN tasks t ON t.id = i.task_id JOIN teams tm ON tm.id = t.team_id"
            " WHERE i.id = ANY($1::int8[]) ORDER BY i.id FOR UPDATE OF i");

static hl_stmt q_workflow_failed = HL_STMT(
    "SELECT w.id, i.id FROM workflows w LEFT JOIN workflow_tasks wt ON wt.workflow_id = w.id"
    " LEFT JOIN instances i ON i.task_id = wt.task_id"
    "  AND i.schedule_time = to_timestamp($2::int8 / 1000.0)"
    "  AND i.state IN ('failed', 'killed', 'timed_out')"
    " WHERE w.id = $1::int8 ORDER BY i.id");

/* A rerun from scratch marks the attempt it made (a transfer then does not
 * resume; later retries of the instance resume again). */
static hl_stmt q_rerun_scratch =
    HL_STMT("UPDATE instances SET scratch_attempt = $2::int WHERE id = $1::int8");

static int64_t hl__find(const int64_t *v, size_t n, int64_t x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return (int64_t)i;
    return -1;
}

static int hl__finished(hl_state st)
{
    return st == HL_ST_SUCCESS || st == HL_ST_FAILED || st == HL_ST_KILLED ||
           st == HL_ST_TIMED_OUT || st == HL_ST_MARKED_SUCCESS;
}

HL_UNARY(hl_api_rerun_instances)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__RerunInstancesRequest);
    orr_status s = hl__check_actor(rq->actor, rq->reason, err);
    if (s != ORR_OK)
        return s;
    if (rq->workflow_id < 0)
        return orr_err_set(err, ORR_EINVAL, "workflow_id", "must be >= 0");
    if (rq->workflow_id ? rq->n_instance_ids != 0 : rq->n_instance_ids == 0)
        return orr_err_set(err, ORR_EINVAL, "instance_ids",
                           "give instance ids, or a workflow and a schedule time");
    if (rq->workflow_id && rq->schedule_time_ms <= 0)
        return orr_err_set(err, ORR_EINVAL, "schedule_time_ms", "must be positive");
    if (rq->n_instance_ids > HL_RUN_SET_MAX)
        return orr_err_set(err, ORR_EINVAL, "instance_ids", "at most %d", HL_RUN_SET_MAX);
    if ((int)rq->scope < 0 || (int)rq->scope > 2)
        return orr_err_set(err, ORR_EINVAL, "scope", "unknown scope");
    for (size_t i = 0; i < rq->n_instance_ids; i++)
        if (rq->instance_ids[i] <= 0)
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "instance_ids[%zu]", i),
                               "must be positive");
    hl_conn *c = NULL;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    int64_t *ids = hl_alloc_n(a, sizeof *ids, HL_RUN_SET_MAX);
    const char **why = hl_alloc_n(a, sizeof *why, HL_RUN_SET_MAX);
    size_t n = 0, n_missing = 0, cap_missing = 16;
    hl_pb_dep **missing = hl_alloc_n(a, sizeof *missing, cap_missing);
    int64_t max_event = 0;
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK)
        goto out;
    /* the roots */
    if (rq->workflow_id) {
        const char *p[2] = {hl_i64s(a, rq->workflow_id), hl_i64s(a, rq->schedule_time_ms)};
        if ((s = hl_db_query(c, a, &q_workflow_failed, 2, p, &r, err)) != ORR_OK)
            goto out;
        if (PQntuples(r) == 0) {
            s = orr_err_set(err, ORR_ENOTFOUND, "workflow_id", "no such workflow");
            goto out;
        }
        for (int i = 0; i < PQntuples(r) && n < HL_RUN_SET_MAX; i++)
            if (!hl_val_null(r, i, 1)) {
                ids[n] = hl_val_i64(r, i, 1);
                why[n++] = "failed in the workflow's run";
            }
    } else {
        for (size_t i = 0; i < rq->n_instance_ids; i++)
            if (hl__find(ids, n, rq->instance_ids[i]) < 0) {
                ids[n] = rq->instance_ids[i];
                why[n++] = "chosen";
            }
    }
    size_t n_roots = n;
    /* the closure, breadth first */
    for (size_t k = 0; rq->scope != ORRERY__HALLEY__V1__RERUN_SCOPE__RERUN_SCOPE_INSTANCE && k < n;
         k++) {
        hl_pb_dep **deps;
        size_t nd;
        int down = rq->scope == ORRERY__HALLEY__V1__RERUN_SCOPE__RERUN_SCOPE_DOWNSTREAM;
        if ((s = hl_instance_deps(c, a, ids[k], down, &deps, &nd, err)) != ORR_OK)
            goto out;
        for (size_t d = 0; d < nd; d++) {
            if (strcmp(deps[d]->kind, "self") == 0)
                continue;
            if (deps[d]->instance_id == 0) {
                if (!deps[d]->schedule_time_ms)
                    continue;
                int dup = 0;
                for (size_t m = 0; m < n_missing && !dup; m++)
                    dup = missing[m]->task_id == deps[d]->task_id &&
                          missing[m]->schedule_time_ms == deps[d]->schedule_time_ms;
                if (dup)
                    continue;
                if (n_missing == cap_missing) {
                    hl_pb_dep **g = hl_alloc_n(a, sizeof *g, cap_missing * 2);
                    memcpy(g, missing, n_missing * sizeof *g);
                    missing = g;
                    cap_missing *= 2;
                }
                missing[n_missing++] = deps[d];
                continue;
            }
            if (hl__find(ids, n, deps[d]->instance_id) >= 0)
                continue;
            if (n == HL_RUN_SET_MAX) {
                s = orr_err_set(err, ORR_EINVAL, "scope",
                                "the set holds more than %d instances; rerun it in parts",
                                HL_RUN_SET_MAX);
                goto out;
            }
            ids[n] = deps[d]->instance_id;
            why[n++] =
                orr_arena_sprintf(a, "%s of %" PRId64, down ? "downstream" : "upstream", ids[k]);
        }
    }
    /* lock the set and check it */
    const char *pl[1] = {hl_id_array(a, ids, n)};
    if ((s = hl_db_query(c, a, &q_rerun_lock, 1, pl, &r, err)) != ORR_OK)
        goto out;
    if ((size_t)PQntuples(r) != n) { /* a root that does not exist */
        for (size_t i = 0; i < n_roots; i++) {
            int found = 0;
            for (int row = 0; row < PQntuples(r) && !found; row++)
                found = hl_val_i64(r, row, 0) == ids[i];
            if (!found) {
                s = orr_err_set(err, ORR_ENOTFOUND, orr_arena_sprintf(a, "instance_ids[%zu]", i),
                                "no such instance: %" PRId64, ids[i]);
                goto out;
            }
        }
    }
    if ((size_t)PQntuples(r) != n) { /* a dependency vanished meanwhile */
        s = orr_err_set(err, ORR_ECONFLICT, "instance_ids", "the set changed; try again");
        goto out;
    }
    Orrery__Halley__V1__RerunInstancesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__rerun_instances_response__init(o);
    o->members = hl_alloc_n(a, sizeof *o->members, n);
    o->n_members = n;
    /* members in the order they were found (roots first) */
    for (int row = 0; row < (int)n; row++) {
        int64_t id = hl_val_i64(r, row, 0);
        size_t at = (size_t)hl__find(ids, n, id);
        Orrery__Halley__V1__RerunMember *m = orr_arena_alloc(a, sizeof *m);
        orrery__halley__v1__rerun_member__init(m);
        hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
        hl_fill_instance(a, r, row, in);
        m->instance = in;
        m->team = (char *)hl_val(r, row, HL_INSTANCE_NCOLS + 1);
        m->why = (char *)why[at];
        hl_state st = hl_state_parse(hl_val(r, row, 5));
        if (!hl__team_allowed(rq->restrict_teams, rq->teams, rq->n_teams, m->team)) {
            s = orr_err_set(err, ORR_EPERM, "instance_ids",
                            "instance %" PRId64 " (task %s) belongs to team %s", id, in->task_name,
                            m->team);
            goto out;
        }
        if (st == HL_ST_READY || st == HL_ST_DISPATCHED || st == HL_ST_RUNNING) {
            s = orr_err_set(err, ORR_ESTATE, "instance_ids",
                            "instance %" PRId64
                            " (task %s) is %s: the set can rerun once it has ended;"
                            " nothing was changed",
                            id, in->task_name, hl_val(r, row, 5));
            goto out;
        }
        m->rerun = hl__finished(st);
        if (!m->rerun)
            m->why = orr_arena_sprintf(a, "%s; already %s", why[at], hl_val(r, row, 5));
        else
            o->rerun++;
        o->members[at] = m;
    }
    o->missing = missing;
    o->n_missing = n_missing;
    if (rq->dry_run) {
        hl_db_rollback(c);
        *resp = &o->base;
        goto out;
    }
    orr_buf det = ORR_BUF_INIT;
    orr_buf_appendf(
        &det, "{\"scope\":\"%s\",\"instances\":[",
        rq->scope == ORRERY__HALLEY__V1__RERUN_SCOPE__RERUN_SCOPE_DOWNSTREAM ? "downstream"
        : rq->scope == ORRERY__HALLEY__V1__RERUN_SCOPE__RERUN_SCOPE_UPSTREAM ? "upstream"
                                                                             : "instance");
    int first = 1;
    for (size_t i = 0; i < o->n_members; i++) {
        Orrery__Halley__V1__RerunMember *m = o->members[i];
        if (!m->rerun)
            continue;
        hl_pb_transition_req tq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
        tq.instance_id = m->instance->id;
        tq.expected_state = m->instance->state;
        tq.new_state = ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_WAITING;
        tq.actor = rq->actor;
        tq.reason = (char *)(rq->reason && rq->reason[0]
                                 ? orr_arena_sprintf(a, "rerun (%s): %s", m->why, rq->reason)
                                 : orr_arena_sprintf(a, "rerun (%s)", m->why));
        tq.expected_attempt = m->instance->attempt;
        hl_pb_transition_res tr = ORRERY__HALLEY__V1__TRANSITION_RESULT__INIT;
        if ((s = hl_transition_one(c, a, &tq, &tr, err)) != ORR_OK) {
            orr_buf_free(&det);
            goto out;
        }
        if (tr.event_id > max_event)
            max_event = tr.event_id;
        m->instance = tr.instance;
        if (rq->from_scratch) {
            const char *sp[2] = {hl_i64s(a, tq.instance_id), hl_i64s(a, tr.instance->attempt)};
            PGresult *sr;
            if ((s = hl_db_query(c, a, &q_rerun_scratch, 2, sp, &sr, err)) != ORR_OK) {
                orr_buf_free(&det);
                goto out;
            }
        }
        orr_buf_appendf(&det, "%s%" PRId64, first ? "" : ",", tq.instance_id);
        first = 0;
    }
    orr_buf_appendf(&det, "]}");
    const char *detail = hl_take(a, &det);
    if ((s = hl_audit(c, a, rq->actor, "instance.rerun",
                      rq->workflow_id
                          ? orr_arena_sprintf(a, "workflow:%" PRId64, rq->workflow_id)
                          : orr_arena_sprintf(a, "instance:%" PRId64, n_roots ? ids[0] : 0),
                      detail, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_events_committed(hc->events, max_event);
    *resp = &o->base;
    ORR_INFO("rerun", "instances=%d set=%zu actor=%s", (int)o->rerun, n, orr_log_q(rq->actor));
out:
    hl_db_put(hc->db, c);
    return s;
}

/* ------------------------------------------------------------ backfill */

/* The downstream edges of a task (strong and weak) with the downstream's
 * schedule, zone, team and name; only active downstream tasks. */
static hl_stmt q_bf_down = HL_STMT(
    "SELECT d.task_id, d.cycle, tv.schedule, tv.timezone, tm.name, t.name FROM task_dependencies d"
    " JOIN tasks t ON t.id = d.task_id AND t.active"
    " JOIN task_versions tv ON tv.task_id = t.id AND tv.version = t.current_version"
    " JOIN teams tm ON tm.id = t.team_id"
    " WHERE d.upstream_task_id = $1::int8 AND d.kind IN ('strong', 'weak')"
    " ORDER BY d.task_id, d.position");

static hl_stmt q_bf_existing = HL_STMT(
    "SELECT x.tid, x.ms, i.id, i.state FROM unnest($1::int8[], $2::int8[]) AS x(tid, ms)"
    " JOIN instances i ON i.task_id = x.tid AND i.schedule_time = to_timestamp(x.ms / 1000.0)");

static hl_stmt q_bf_insert = HL_STMT(
    "INSERT INTO backfills (task_id, from_time, to_time, include_downstream, max_cycles,"
    " created_by) VALUES ($1::int8, to_timestamp($2::int8 / 1000.0), to_timestamp($3::int8 /"
    " 1000.0), $4::bool, $5::int, $6) RETURNING id");

/* $1 task, $2 ms, $3 priority, $4 actor, $5 backfill id, $6 cycle ms, $7 cycles,
 * $8 parameter values. */
static hl_stmt q_bf_create = HL_STMT(
    "WITH ins AS ("
    " INSERT INTO instances (task_id, task_version, schedule_time, state, priority, backfill_id,"
    "  backfill_cycle, backfill_cycles, params)"
    " SELECT t.id, t.current_version, to_timestamp($2::int8 / 1000.0), 'waiting', $3::int,"
    "  $5::int8, to_timestamp($6::int8 / 1000.0), $7::int, $8::jsonb FROM tasks t"
    " WHERE t.id = $1::int8 AND t.active"
    " ON CONFLICT (task_id, schedule_time) DO NOTHING RETURNING *),"
    " ev AS (INSERT INTO events (kind, task_id, instance_id, payload)"
    " SELECT 'instance.created', task_id, id, jsonb_build_object('state', 'waiting',"
    " 'actor', $4::text, 'schedule_time_ms', $2::int8, 'task_version', task_version,"
    " 'backfill_id', $5::int8, 'backfill_cycle_ms', $6::int8, 'backfill_cycles', $7::int)"
    " FROM ins RETURNING id) "
    "SELECT " HL_INSTANCE_COLS ", NULL::int, ev.id"
    " FROM ins i JOIN ev ON true JOIN tasks t ON t.id = i.task_id");

static hl_stmt q_bf_get = HL_STMT("SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL
                                  " FROM instances i JOIN tasks t ON t.id = i.task_id"
                                  " WHERE i.task_id = $1::int8"
                                  " AND i.schedule_time = to_timestamp($2::int8 / 1000.0)");

typedef struct hl_bf_key {
    int64_t task_id, ms, cycle_ms;
    size_t stamp; /* the root (+1) that reached it last */
    const char *name, *team;
} hl_bf_key;

/* A task of the plan with its schedule and its downstream edges (read once). */
typedef struct hl_bf_task {
    int64_t id;
    orr_cron cron;
    const orr_tz *tz;
    int has;
    PGresult *down; /* NULL until read */
} hl_bf_task;

typedef struct hl_bf_plan {
    hl_bf_key *keys;
    size_t n;
    hl_bf_task *tasks;
    size_t n_tasks, cap_tasks;
} hl_bf_plan;

static hl_bf_task *hl__bf_task(orr_arena *a, hl_bf_plan *pl, int64_t id, const char *sched,
                               const char *zone)
{
    for (size_t i = 0; i < pl->n_tasks; i++)
        if (pl->tasks[i].id == id)
            return &pl->tasks[i];
    if (pl->n_tasks == pl->cap_tasks) {
        size_t cap = pl->cap_tasks ? pl->cap_tasks * 2 : 8;
        hl_bf_task *g = hl_alloc_n(a, sizeof *g, cap);
        if (pl->n_tasks)
            memcpy(g, pl->tasks, pl->n_tasks * sizeof *g);
        pl->tasks = g;
        pl->cap_tasks = cap;
    }
    hl_bf_task *t = &pl->tasks[pl->n_tasks++];
    memset(t, 0, sizeof *t);
    t->id = id;
    hl__run_sched(sched, zone, &t->cron, &t->tz, &t->has);
    return t;
}

/* Add or update (task, ms) for root stamp/cycle; returns its index, or -1
 * when the plan is full. *fresh: 1 when this root had not reached it yet. */
static long hl__bf_add(hl_bf_plan *pl, int64_t task_id, int64_t ms, int64_t cycle_ms, size_t stamp,
                       const char *name, const char *team, int *fresh)
{
    for (size_t i = 0; i < pl->n; i++)
        if (pl->keys[i].task_id == task_id && pl->keys[i].ms == ms) {
            *fresh = pl->keys[i].stamp != stamp;
            pl->keys[i].stamp = stamp;
            pl->keys[i].cycle_ms = cycle_ms; /* roots come in ascending order: the latest */
            return (long)i;
        }
    if (pl->n == HL_RUN_SET_MAX)
        return -1;
    hl_bf_key *k = &pl->keys[pl->n];
    k->task_id = task_id;
    k->ms = ms;
    k->cycle_ms = cycle_ms;
    k->stamp = stamp;
    k->name = name;
    k->team = team;
    *fresh = 1;
    return (long)pl->n++;
}

HL_UNARY(hl_api_backfill)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__BackfillRequest);
    if (rq->task_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "task_id", "must be positive");
    if (rq->from_ms <= 0)
        return orr_err_set(err, ORR_EINVAL, "from_ms", "must be positive");
    if (rq->to_ms <= rq->from_ms)
        return orr_err_set(err, ORR_EINVAL, "to_ms", "must be after from_ms");
    if (rq->priority < -1000 || rq->priority > 1000)
        return orr_err_set(err, ORR_EINVAL, "priority", "must be between -1000 and 1000");
    if (rq->max_cycles < 0 || rq->max_cycles > HL_RUN_SET_MAX)
        return orr_err_set(err, ORR_EINVAL, "max_cycles", "must be between 0 and %d",
                           HL_RUN_SET_MAX);
    orr_status s = hl__check_actor(rq->actor, NULL, err);
    if (s != ORR_OK)
        return s;
    hl_conn *c = NULL;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    hl_bf_plan pl = {0};
    pl.keys = hl_alloc_n(a, sizeof *pl.keys, HL_RUN_SET_MAX);
    int64_t max_event = 0;
    PGresult *r;
    const char *tid = hl_i64s(a, rq->task_id);
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_run_task, 1, (const char *[]){tid}, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "task_id", "no such task");
        goto out;
    }
    const char *root_name = hl_val(r, 0, 4), *root_team = hl_val(r, 0, 3);
    /* parameter values: for the backfilled task's own instances */
    const char *params = "{}";
    if ((s = hl_params_parse(a, rq->params_json, &params, err)) != ORR_OK ||
        (s = hl_params_known(c, a, rq->task_id, 0, params, err)) != ORR_OK)
        goto out;
    if (!hl_val_bool(r, 0, 0)) {
        s = orr_err_set(err, ORR_ESTATE, "task_id", "task %s is deactivated", root_name);
        goto out;
    }
    hl_bf_task *root = hl__bf_task(a, &pl, rq->task_id, hl_val(r, 0, 1), hl_val(r, 0, 2));
    if (!root->has) {
        s = orr_err_set(err, ORR_EINVAL, "schedule", "task %s has no schedule to backfill",
                        root_name);
        goto out;
    }
    /* the fire times of the task (adjusted to its business calendar, as
     * keplerd materialises them), then what each reaches downstream */
    const orr_cal *rcal = NULL;
    orr_cal_policy rpol = ORR_CAL_SKIP;
    if ((s = hl_calendar_of_task(c, a, rq->task_id, &rcal, &rpol, err)) != ORR_OK)
        goto out;
    size_t n_fire = 0;
    int64_t t = rq->from_ms / 1000 - 1;
    orr_cron *rc = &root->cron;
    const orr_tz *rtz = root->tz;
    int64_t *outs = hl_alloc_n(a, sizeof *outs, ORR_CYCLE_MAX);
    while (orr_cal_next(rc, rtz, rcal, rpol, t, &t) == ORR_OK && t * 1000 < rq->to_ms) {
        if (t * 1000 < rq->from_ms)
            continue;
        n_fire++;
        size_t stamp = n_fire;
        int fresh;
        long at0 =
            hl__bf_add(&pl, rq->task_id, t * 1000, t * 1000, stamp, root_name, root_team, &fresh);
        if (at0 < 0)
            goto full;
        if (!rq->include_downstream)
            continue;
        /* breadth first over what this fire time reaches */
        size_t qcap = 64, qn = 0;
        size_t *queue = hl_alloc_n(a, sizeof *queue, qcap);
        queue[qn++] = (size_t)at0;
        for (size_t qi = 0; qi < qn; qi++) {
            hl_bf_key k = pl.keys[queue[qi]];
            hl_bf_task *ut = NULL;
            for (size_t i = 0; i < pl.n_tasks; i++)
                if (pl.tasks[i].id == k.task_id)
                    ut = &pl.tasks[i];
            if (!ut)
                continue;
            if (!ut->down) {
                if ((s = hl_db_query(c, a, &q_bf_down, 1, (const char *[]){hl_i64s(a, ut->id)},
                                     &ut->down, err)) != ORR_OK)
                    goto out;
            }
            PGresult *dr = ut->down;
            for (int e = 0; e < PQntuples(dr); e++) {
                int64_t did = hl_val_i64(dr, e, 0);
                hl_bf_task *dt = hl__bf_task(a, &pl, did, hl_val(dr, e, 2), hl_val(dr, e, 3));
                /* hl__bf_task may have moved the array */
                for (size_t i = 0; i < pl.n_tasks; i++)
                    if (pl.tasks[i].id == k.task_id)
                        ut = &pl.tasks[i];
                size_t nd = 0;
                int64_t span_end = 0;
                int same = strcmp(hl_val(dr, e, 1), "same") == 0;
                (void)orr_cycle_downstream(dt->has ? &dt->cron : NULL, dt->tz,
                                           ut->has ? &ut->cron : NULL, ut->tz, same, k.ms / 1000,
                                           outs, 100, &nd, &span_end);
                if (span_end || nd == 0) { /* a downstream without a schedule: the same time */
                    outs[0] = k.ms / 1000;
                    nd = 1;
                }
                for (size_t j = 0; j < nd; j++) {
                    long at = hl__bf_add(&pl, did, outs[j] * 1000, t * 1000, stamp,
                                         hl_val(dr, e, 5), hl_val(dr, e, 4), &fresh);
                    if (at < 0)
                        goto full;
                    if (!fresh)
                        continue;
                    if (qn == qcap) {
                        size_t *g = hl_alloc_n(a, sizeof *g, qcap * 2);
                        memcpy(g, queue, qn * sizeof *g);
                        queue = g;
                        qcap *= 2;
                    }
                    queue[qn++] = (size_t)at;
                }
            }
        }
    }
    for (size_t i = 0; i < pl.n; i++)
        if (!hl__team_allowed(rq->restrict_teams, rq->teams, rq->n_teams, pl.keys[i].team)) {
            s = orr_err_set(err, ORR_EPERM,
                            pl.keys[i].task_id == rq->task_id ? "task_id" : "include_downstream",
                            "task %s belongs to team %s", pl.keys[i].name, pl.keys[i].team);
            goto out;
        }
    Orrery__Halley__V1__BackfillResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__backfill_response__init(o);
    o->fire_times = (int32_t)n_fire;
    if (rq->dry_run) {
        int64_t *tids = hl_alloc_n(a, sizeof *tids, pl.n), *mss = hl_alloc_n(a, sizeof *mss, pl.n);
        for (size_t i = 0; i < pl.n; i++) {
            tids[i] = pl.keys[i].task_id;
            mss[i] = pl.keys[i].ms;
        }
        const char *pe[2] = {hl_id_array(a, tids, pl.n), hl_id_array(a, mss, pl.n)};
        if ((s = hl_db_query(c, a, &q_bf_existing, 2, pe, &r, err)) != ORR_OK)
            goto out;
        o->planned = hl_alloc_n(a, sizeof *o->planned, pl.n);
        o->n_planned = pl.n;
        for (size_t i = 0; i < pl.n; i++) {
            hl_pb_dep *d = orr_arena_alloc(a, sizeof *d);
            orrery__halley__v1__dep_state__init(d);
            d->task_id = pl.keys[i].task_id;
            d->task_name = (char *)pl.keys[i].name;
            d->kind = (char *)(pl.keys[i].task_id == rq->task_id ? "backfilled" : "downstream");
            d->schedule_time_ms = pl.keys[i].ms;
            for (int row = 0; row < PQntuples(r); row++)
                if (hl_val_i64(r, row, 0) == d->task_id &&
                    hl_val_i64(r, row, 1) == d->schedule_time_ms) {
                    d->instance_id = hl_val_i64(r, row, 2);
                    d->state = hl_pb_state(hl_val(r, row, 3));
                }
            o->planned[i] = d;
        }
        hl_db_rollback(c);
        *resp = &o->base;
        goto out;
    }
    const char *pb[6] = {tid,
                         hl_i64s(a, rq->from_ms),
                         hl_i64s(a, rq->to_ms),
                         rq->include_downstream ? "true" : "false",
                         orr_arena_sprintf(a, "%d", (int)rq->max_cycles),
                         rq->actor};
    if ((s = hl_db_query(c, a, &q_bf_insert, 6, pb, &r, err)) != ORR_OK)
        goto out;
    o->backfill_id = hl_val_i64(r, 0, 0);
    o->created = hl_alloc_n(a, sizeof *o->created, pl.n);
    o->existing = hl_alloc_n(a, sizeof *o->existing, pl.n);
    const char *bid = hl_i64s(a, o->backfill_id),
               *cycles = orr_arena_sprintf(a, "%d", (int)rq->max_cycles),
               *prio = orr_arena_sprintf(a, "%d", (int)rq->priority);
    for (size_t i = 0; i < pl.n; i++) {
        const char *p[8] = {hl_i64s(a, pl.keys[i].task_id),
                            hl_i64s(a, pl.keys[i].ms),
                            prio,
                            rq->actor,
                            bid,
                            hl_i64s(a, pl.keys[i].cycle_ms),
                            cycles,
                            pl.keys[i].task_id == rq->task_id ? params : "{}"};
        if ((s = hl_db_query(c, a, &q_bf_create, 8, p, &r, err)) != ORR_OK)
            goto out;
        hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
        if (PQntuples(r) == 1) {
            hl_fill_instance(a, r, 0, in);
            int64_t ev = hl_val_i64(r, 0, HL_INSTANCE_NCOLS + 1);
            if (ev > max_event)
                max_event = ev;
            o->created[o->n_created++] = in;
            continue;
        }
        if ((s = hl_db_query(c, a, &q_bf_get, 2, p, &r, err)) != ORR_OK)
            goto out;
        if (PQntuples(r) == 1) {
            hl_fill_instance(a, r, 0, in);
            o->existing[o->n_existing++] = in;
        }
    }
    if ((s = hl_audit(c, a, rq->actor, "task.backfill", orr_arena_sprintf(a, "task:%s", root_name),
                      orr_arena_sprintf(a,
                                        "{\"backfill_id\":%" PRId64 ",\"from_ms\":%" PRId64
                                        ",\"to_ms\":%" PRId64
                                        ",\"include_downstream\":%s,\"max_cycles\":%d,"
                                        "\"created\":%zu}",
                                        o->backfill_id, rq->from_ms, rq->to_ms,
                                        rq->include_downstream ? "true" : "false",
                                        (int)rq->max_cycles, o->n_created),
                      err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_events_committed(hc->events, max_event);
    *resp = &o->base;
    ORR_INFO("backfill", "backfill_id=%" PRId64 " task_id=%" PRId64 " created=%zu existing=%zu",
             o->backfill_id, rq->task_id, o->n_created, o->n_existing);
    goto out;
full:
    s = orr_err_set(err, ORR_EINVAL, "to_ms",
                    "the backfill holds more than %d instances; backfill it in parts",
                    HL_RUN_SET_MAX);
out:
    hl_db_put(hc->db, c);
    return s;
}
