/*
 * hl_api_instances.c - instances and the state machine over gRPC.
 *
 * A transition is ONE statement (data-modifying CTEs, so one round trip
 * and one implicit transaction):
 *   UPDATE instances ... WHERE id = $1 AND state = $expected  (the CAS)
 *   + INSERT instance_transitions (time, actor, reason, executor)
 *   + upsert of the attempt row (dispatched, running, finished states)
 *   + INSERT events
 * and, once it committed, hl_events_committed() (no NOTIFY inside the
 * transaction: see hl_events.h for why). Pool tokens are released by the instances_release_leases
 * trigger in the same transaction. When the UPDATE matched nothing, a second read tells NOT_FOUND
 * (no such instance) from ABORTED (it is in another state or attempt). The
 * TransitionInstance goes through hl_tcomb.c, which runs concurrent calls
 * as one multi-row form of the same statement. The
 * legality of (expected -> new) is checked before any database work
 * (hl_sm.c), so an illegal pair is FAILED_PRECONDITION whatever the stored
 * state is.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hl_api.h"
#include "hl_page.h"
#include "hl_tcomb.h"
#include "orr_buf.h"
#include "orr_cron.h"
#include "orr_cycle.h"
#include "orr_log.h"
#include "orr_alloc.h"
#include "orr_subst.h"

#define HL_BATCH_MAX 1000

static hl_stmt q_create_instance = HL_STMT(
    "WITH ins AS ("
    " INSERT INTO instances (task_id, task_version, schedule_time, state, priority, params)"
    " SELECT t.id, t.current_version, to_timestamp($2::int8 / 1000.0), 'waiting', $3::int,"
    " $5::jsonb"
    " FROM tasks t WHERE t.id = $1::int8 AND t.active"
    " ON CONFLICT (task_id, schedule_time) DO NOTHING RETURNING *),"
    " ev AS (INSERT INTO events (kind, task_id, instance_id, payload)"
    " SELECT 'instance.created', task_id, id, jsonb_build_object('state', 'waiting',"
    " 'actor', $4::text, 'schedule_time_ms', $2::int8, 'task_version', task_version) FROM ins"
    " RETURNING id, task_id) "
    "SELECT " HL_INSTANCE_COLS ", NULL::int, ev.id"
    " FROM ins i JOIN ev ON true JOIN tasks t ON t.id = i.task_id");

static hl_stmt q_existing_instance = HL_STMT(
    "SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL " FROM instances i JOIN tasks t ON t.id = i.task_id"
    " WHERE i.task_id = $1::int8 AND i.schedule_time = to_timestamp($2::int8 / 1000.0)");

static hl_stmt q_task_active = HL_STMT("SELECT active FROM tasks WHERE id = $1::int8");

static hl_stmt q_get_instance =
    HL_STMT("SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL ", i.params::text,"
            " i.scratch_attempt = i.attempt"
            " FROM instances i JOIN tasks t ON t.id = i.task_id"
            " WHERE i.id = $1::int8");

/* q_get_instance's row for each id in the array $1 that exists. */
static hl_stmt q_get_instances =
    HL_STMT("SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL ", i.params::text,"
            " i.scratch_attempt = i.attempt"
            " FROM instances i JOIN tasks t ON t.id = i.task_id"
            " WHERE i.id = ANY($1::int8[])");

/* The first name of the parameter object $3 that the task $1's version $2
 * (0 = its current version) does not declare; no row when all are. */
static hl_stmt q_unknown_param = HL_STMT(
    "SELECT k FROM jsonb_object_keys($3::jsonb) k WHERE NOT coalesce((SELECT v.spec->'parameters'"
    " FROM tasks t JOIN task_versions v ON v.task_id = t.id AND v.version = CASE WHEN $2::int = 0"
    " THEN t.current_version ELSE $2::int END WHERE t.id = $1::int8), '{}'::jsonb) ? k"
    " ORDER BY k LIMIT 1");

static hl_stmt q_instance_task =
    HL_STMT("SELECT task_id, task_version FROM instances WHERE id = $1::int8 FOR UPDATE");
static hl_stmt q_set_params =
    HL_STMT("UPDATE instances SET params = $2::jsonb WHERE id = $1::int8");

/* The dependency edges of an instance, with both tasks' schedules: upstream
 * edges ($2 = 0: the instance's task depends on ut) or downstream ones ($2 =
 * 1: ut depends on the instance's task). Columns: kind, other task id, name,
 * schedule, zone, cycle, this task's schedule, zone, the schedule time; the
 * schedules of the tasks' current versions, as keplerd reads them. */
static hl_stmt q_dep_edges = HL_STMT(
    "SELECT d.kind, ut.id, ut.name, uv.schedule, uv.timezone, d.cycle, tv.schedule, "
    "tv.timezone, " HL_MS(
        "i.schedule_time") " FROM instances i JOIN tasks t ON t.id = i.task_id"
                           " JOIN task_versions tv ON tv.task_id = t.id AND tv.version = "
                           "t.current_version"
                           " JOIN task_dependencies d ON d.kind IN ('strong', 'weak', 'self') AND"
                           "  ((NOT $2::bool AND d.task_id = i.task_id) OR ($2::bool AND "
                           "d.upstream_task_id = i.task_id))"
                           " JOIN tasks ut ON ut.id = CASE WHEN $2::bool THEN d.task_id ELSE "
                           "d.upstream_task_id END"
                           " JOIN task_versions uv ON uv.task_id = ut.id AND uv.version = "
                           "ut.current_version"
                           " WHERE i.id = $1::int8 ORDER BY d.position, ut.name");

/* The instances of task $1 at the schedule times $2 (ms). */
static hl_stmt q_dep_at = HL_STMT(
    "SELECT id, " HL_MS("schedule_time") ", state FROM instances WHERE task_id = $1::int8"
                                         " AND schedule_time = ANY(ARRAY(SELECT to_timestamp(x / "
                                         "1000.0) FROM unnest($2::int8[]) x))");

/* The instances of task $1 with a schedule time in [$2, $3) ms. */
static hl_stmt q_dep_span = HL_STMT("SELECT id, " HL_MS(
    "schedule_time") ", state FROM instances WHERE task_id = $1::int8"
                     " AND schedule_time >= to_timestamp($2::int8 / 1000.0)"
                     " AND ($3::int8 = 0 OR schedule_time < to_timestamp($3::int8 / 1000.0))"
                     " ORDER BY schedule_time LIMIT $4::int");

/* Filters shared by both orders: $2 task, $3 states, $4 executor, $5/$6
 * schedule range, $8 team. */
#define HL_LIST_FILTERS                                                                            \
    " AND ($2::int8 = 0 OR i.task_id = $2::int8)"                                                  \
    " AND (cardinality($3::text[]) = 0 OR i.state = ANY($3::text[]))"                              \
    " AND ($4 = '' OR i.executor = $4)"                                                            \
    " AND ($5::int8 = 0 OR i.schedule_time >= to_timestamp($5::int8 / 1000.0))"                    \
    " AND ($6::int8 = 0 OR i.schedule_time < to_timestamp($6::int8 / 1000.0))"                     \
    " AND ($8 = '' OR t.team_id = (SELECT tm.id FROM teams tm WHERE tm.name = $8))"

/* The instance columns of a list: HL_INSTANCE_RAW_COLS, read from a binary
 * result (HL_STMT_LIST), whose timestamps hl_bin_ms turns into what HL_MS
 * makes. it_lists.c holds the two to the same values on the edges. */
#define HL_LIST_COLS HL_INSTANCE_RAW_COLS

/* Text search (parameter p, lower-cased, LIKE wildcards escaped): the task
 * name or the reason contains it, or it is the executor or the id. The task
 * names are matched once, in a subquery PostgreSQL hashes, not once per
 * instance through the join: a row of a matching task then costs a hash
 * probe, and the planner, which could not guess how many instances the
 * name test keeps, walks the order's index and stops at the page (0.2 ms
 * for a search every one of 2,000 instances matched, against 4.2 ms for
 * the join that tested and sorted them all). */
#define HL_LIST_SEARCH(p)                                                                          \
    " AND (" p " = '' OR i.task_id IN (SELECT st.id FROM tasks st"                                 \
    " WHERE lower(st.name) LIKE '%' || " p " || '%') OR lower(i.reason) LIKE '%' || " p            \
    " || '%' OR lower(i.executor) LIKE " p " OR i.id::text = " p ")"

/* The filtered lists pick the page's rows first (the instance's columns and
 * its task's name, in a subquery with the LIMIT) and compute the answer's
 * columns for those rows only: a filter PostgreSQL cannot walk an index
 * for (the text search, states with another filter) makes it sort every
 * match before the LIMIT, and while the exit code was a subquery on
 * attempts it ran for every match before that sort (2,000 times for a page
 * of 50 in a search matching every row). Outside,
 * the subquery is "i" and its task name "t.name", so HL_LIST_COLS reads it
 * unchanged. */
#define HL_LIST_PAGE_OF(inner)                                                                     \
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM (SELECT i.*, t.name AS hl_task_name"            \
    " FROM instances i JOIN tasks t ON t.id = i.task_id WHERE " inner                              \
    ") i, LATERAL (SELECT i.hl_task_name AS name) t"

/* Ascending: keyset on id ($1 = last id seen). */
static hl_stmt q_list_instances =
    HL_STMT_LIST(HL_LIST_PAGE_OF("i.id > $1::int8" HL_LIST_FILTERS HL_LIST_SEARCH(
        "$9") " ORDER BY i.id LIMIT $7::int") " ORDER BY i.id");

/* Descending: newest schedule time first, then id; keyset on (schedule time
 * $9, id $1) of the last row seen ($1 = 0: first page). */
static hl_stmt q_list_instances_desc = HL_STMT_LIST(
    HL_LIST_PAGE_OF("($1::int8 = 0 OR (i.schedule_time, i.id) < (to_timestamp($9::int8 / 1000.0), "
                    "$1::int8))" HL_LIST_FILTERS HL_LIST_SEARCH(
                        "$10") " ORDER BY i.schedule_time DESC, i.id DESC"
                               " LIMIT $7::int") " ORDER BY i.schedule_time DESC, i.id DESC");

/* The same lists with no filter at all (the console's first page and the
 * pages after it): prepared and run with their generic plan (HL_STMT_LIST),
 * which walks the order's index.
 * With a filter the statements above are planned anew at each call
 * (hl_db_query_custom; prepared, so parsed once per connection): planned
 * for the values given, PostgreSQL drops the filters left empty and
 * picks the index of those set, where one generic plan for every filter
 * read, joined and sorted every instance (14 ms for 2,000). */
static hl_stmt q_list_instances_all = HL_STMT_LIST(
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM instances i JOIN tasks t ON t.id = i.task_id"
    " WHERE i.id > $1::int8 ORDER BY i.id LIMIT $2::int");
/* Descending, unfiltered: the first page ($1 the limit), then the pages
 * after the row ($3 ms, $1 id), each a walk of instances_schedule_idx
 * backwards. */
static hl_stmt q_list_instances_desc_first = HL_STMT_LIST(
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM instances i JOIN tasks t ON t.id = i.task_id"
    " ORDER BY i.schedule_time DESC, i.id DESC LIMIT $1::int");
static hl_stmt q_list_instances_desc_after = HL_STMT_LIST(
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM instances i JOIN tasks t ON t.id = i.task_id"
    " WHERE (i.schedule_time, i.id) < (to_timestamp($3::int8 / 1000.0), $1::int8)"
    " ORDER BY i.schedule_time DESC, i.id DESC LIMIT $2::int");

/* One task's instances, newest first (the task page), prepared too: a walk
 * of the task's (task_id, schedule_time) index backwards; a schedule time
 * is unique within a task, so that order is the list's. $1 id and $3 ms of
 * the last row seen (the bound on schedule_time repeats the row comparison
 * in a form the index can start from), $2 the task, $4 the limit. */
static hl_stmt q_list_task_desc_first = HL_STMT_LIST(
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM instances i JOIN tasks t ON t.id = i.task_id"
    " WHERE i.task_id = $1::int8 ORDER BY i.schedule_time DESC LIMIT $2::int");
static hl_stmt q_list_task_desc_after = HL_STMT_LIST(
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM instances i JOIN tasks t ON t.id = i.task_id"
    " WHERE i.task_id = $2::int8 AND i.schedule_time <= to_timestamp($3::int8 / 1000.0)"
    " AND (i.schedule_time, i.id) < (to_timestamp($3::int8 / 1000.0), $1::int8)"
    " ORDER BY i.schedule_time DESC LIMIT $4::int");

/* A time range alone, newest first (the console's range filter): prepared
 * like the task's list, as whatever the range the plan wanted is the same,
 * a walk of instances_schedule_idx backwards from the range's end (or from
 * the row after which the page starts) that stops at the page or the
 * range's start; planned anew at every call it cost PostgreSQL about a
 * millisecond of parsing and planning beside 0.2-0.3 ms of walking. A
 * bound left open comes as -Infinity or Infinity (float8 input, which
 * to_timestamp makes the infinite time). $1 from, $2 to (exclusive), $3
 * the limit; after a row: $4 its id, $5 its ms. */
#define HL_LIST_RANGE                                                                              \
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM instances i JOIN tasks t ON t.id = i.task_id"   \
    " WHERE i.schedule_time >= to_timestamp($1::float8 / 1000)"                                    \
    " AND i.schedule_time < to_timestamp($2::float8 / 1000)"
static hl_stmt q_list_range_desc_first =
    HL_STMT_LIST(HL_LIST_RANGE " ORDER BY i.schedule_time DESC, i.id DESC LIMIT $3::int");
static hl_stmt q_list_range_desc_after = HL_STMT_LIST(
    HL_LIST_RANGE " AND i.schedule_time <= to_timestamp($5::int8 / 1000.0)"
                  " AND (i.schedule_time, i.id) < (to_timestamp($5::int8 / 1000.0), $4::int8)"
                  " ORDER BY i.schedule_time DESC, i.id DESC LIMIT $3::int");

/* A state set alone (the dashboard's failures, the console's and the REST
 * API's state filter), every page, in both orders: prepared with its
 * generic plan like the lists above, as one plan suits every state set.
 * For each state (unnest) a walk of an index that starts at the page's
 * keyset and stops at the page, then the walks' rows sorted and cut to the
 * page. A rare state reads its few rows, a common one a page of them;
 * planned for the values at each call, PostgreSQL spent most of the
 * statement's CPU on the planning.
 * The walk's order names the state first and its bounds are a range, not
 * "state = s.st": with an equality PostgreSQL takes the state for a
 * constant and drops it from the order, and the generic plan then walked
 * the order's index over every state, testing each row (390 ms for the
 * second page of failed,timed_out among 1.5 million instances, nearly all
 * of it the walk for timed_out, which no instance was in). No other index
 * gives the rows in that order without a sort of every row it reads.
 * The range's other end is in the row comparison, which also carries the
 * keyset.
 * The states come without repeats (a repeat would list its rows twice).
 * Newest first: instances_state_time_idx backwards; $1 the states, $2 the
 * limit, $3 and $4 the id and ms of the last row seen (0 and Infinity, a
 * float8, on the first page). */
#define HL_LIST_STATES(walk, order)                                                                \
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM (SELECT i.*, t.name AS hl_task_name"            \
    " FROM unnest($1::text[]) s(st) CROSS JOIN LATERAL (SELECT * FROM instances i"                 \
    " WHERE " walk " LIMIT $2::int) i"                                                             \
    " JOIN tasks t ON t.id = i.task_id ORDER BY " order " LIMIT $2::int) i,"                       \
    " LATERAL (SELECT i.hl_task_name AS name) t ORDER BY " order
static hl_stmt q_list_states_desc = HL_STMT_LIST(HL_LIST_STATES(
    "i.state >= s.st AND (i.state, i.schedule_time, i.id) < (s.st, to_timestamp($4::float8 / 1000),"
    " $3::int8) ORDER BY i.state DESC, i.schedule_time DESC, i.id DESC",
    "i.schedule_time DESC, i.id DESC"));
/* In id order: instances_state_id_idx forwards; $3 the last id seen (0 on
 * the first page). */
static hl_stmt q_list_states_asc = HL_STMT_LIST(HL_LIST_STATES(
    "i.state <= s.st AND (i.state, i.id) > (s.st, $3::int8) ORDER BY i.state, i.id", "i.id"));

/* A text search alone, every page, in both orders: prepared with its
 * generic plan too, as a walk of the order's index from the page's keyset
 * that tests each row and stops at the page, the plan PostgreSQL made for
 * it at each call whatever the words (no index serves "contains"). Not
 * knowing the words, the generic plan of the plain statement guesses few
 * matches, and for few matches reading the keyset's whole range and
 * sorting it is the cheaper guess: among 60,000 instances of four tasks it
 * read 626 buffers for a page of a search that 15,000 rows matched, where
 * the walk read 19. So the walk is a subquery of its own with a LIMIT ($3,
 * passed as no bound at all): PostgreSQL keeps the search's test out of a
 * subquery with a LIMIT, and plans a walk whose LIMIT it cannot see (a
 * parameter, in a generic plan) for a tenth of its rows, which only the
 * walk in the list's order does well. The search then stops pulling rows
 * at the page. $1 the words (HL_LIST_SEARCH), $2 the limit, $3 the walk's
 * bound (HL_SEARCH_NO_BOUND), $4 the last id seen (0 on the first page);
 * newest first, $5 its ms (Infinity, a float8, on the first page).
 * it_lists.c checks the plans' reads. */
#define HL_LIST_SEARCH_WALK(keyset, order)                                                         \
    "SELECT " HL_LIST_COLS ", " HL_EXIT_COL " FROM (SELECT * FROM (SELECT * FROM instances i"      \
    " WHERE " keyset " ORDER BY " order " LIMIT $3::int8) i WHERE TRUE" HL_LIST_SEARCH(            \
        "$1") " ORDER BY " order " LIMIT $2::int) i JOIN tasks t ON t.id = i.task_id"              \
              " ORDER BY " order
static hl_stmt q_list_search_desc = HL_STMT_LIST(
    HL_LIST_SEARCH_WALK("(i.schedule_time, i.id) < (to_timestamp($5::float8 / 1000), $4::int8)",
                        "i.schedule_time DESC, i.id DESC"));
static hl_stmt q_list_search_asc = HL_STMT_LIST(HL_LIST_SEARCH_WALK("i.id > $4::int8", "i.id"));

const char *hl_list_sql(const char *name)
{
    static const struct {
        const char *name;
        const hl_stmt *st;
    } lists[] = {
        {"all", &q_list_instances_all},
        {"desc_first", &q_list_instances_desc_first},
        {"desc_after", &q_list_instances_desc_after},
        {"task_desc_first", &q_list_task_desc_first},
        {"task_desc_after", &q_list_task_desc_after},
        {"range_desc_first", &q_list_range_desc_first},
        {"range_desc_after", &q_list_range_desc_after},
        {"states_desc", &q_list_states_desc},
        {"states_asc", &q_list_states_asc},
        {"search_desc", &q_list_search_desc},
        {"search_asc", &q_list_search_asc},
    };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        if (strcmp(lists[i].name, name) == 0)
            return lists[i].st->sql;
    return NULL;
}

static hl_stmt q_list_ready = HL_STMT(
    "SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL " FROM instances i JOIN tasks t ON t.id = i.task_id"
    " WHERE i.state = 'ready' ORDER BY i.priority DESC, i.schedule_time, i.id LIMIT $1::int");

static hl_stmt q_transition = HL_STMT(
    "WITH u AS ("
    " UPDATE instances SET state = $3, attempt = attempt + $8::int,"
    "  task_version = CASE WHEN $8::int = 1 THEN (SELECT ct.current_version FROM tasks ct"
    "   WHERE ct.id = instances.task_id) ELSE task_version END,"
    "  executor = CASE WHEN $3 = 'dispatched' THEN $6 ELSE executor END,"
    "  reason = $5, updated_at = now(),"
    "  started_at = CASE WHEN $3 = 'running' THEN now()"
    "   WHEN $12::int8 > 0 THEN greatest(updated_at,"
    "    least('epoch'::timestamptz + $12::int8 * interval '1 ms', now()))"
    "   WHEN $3 = 'waiting' THEN NULL ELSE started_at END,"
    "  finished_at = CASE WHEN $9::bool THEN now() WHEN $3 = 'waiting' THEN NULL"
    "   ELSE finished_at END,"
    /* as att leaves attempts (hl_tcomb.c says the same) */
    "  exit_code = CASE WHEN $8::int <> 0 THEN CASE WHEN $11::bool THEN $10::int END"
    "   WHEN $11::bool THEN coalesce($10::int, exit_code) ELSE exit_code END"
    " WHERE id = $1::int8 AND state = $2 AND ($7::int = 0 OR attempt = $7::int)"
    " RETURNING *),"
    /* A run that ended before it was recorded running ($12 > 0): two rows,
     * dispatched -> running at its start, then running -> $3. */
    " tr AS (INSERT INTO instance_transitions"
    "  (instance_id, attempt, from_state, to_state, actor, reason, executor, at)"
    "  SELECT id, attempt, s.f, s.t, $4, s.r, executor, s.at FROM u CROSS JOIN LATERAL"
    "  (SELECT $2::text AS f, 'running'::text AS t, ''::text AS r, u.started_at AS at, 1 AS k"
    "   WHERE $12::int8 > 0 UNION ALL SELECT CASE WHEN $12::int8 > 0 THEN 'running' ELSE $2 END,"
    "   $3, $5, clock_timestamp(), 2) s ORDER BY s.k),"
    " att AS (INSERT INTO attempts (instance_id, attempt, executor, state, exit_code, reason,"
    "  finished_at, task_version)"
    "  SELECT id, attempt, executor, $3, $10::int, $5, CASE WHEN $9::bool THEN now() END,"
    "  task_version FROM u WHERE $11::bool"
    "  ON CONFLICT (instance_id, attempt) DO UPDATE SET state = excluded.state,"
    "   task_version = excluded.task_version,"
    "   executor = excluded.executor, exit_code = coalesce(excluded.exit_code,"
    "   attempts.exit_code), reason = excluded.reason, finished_at = excluded.finished_at,"
    "   started_at = CASE WHEN excluded.state = 'dispatched' THEN now()"
    "   ELSE attempts.started_at END),"
    " ev AS (INSERT INTO events (kind, task_id, instance_id, executor, payload)"
    "  SELECT 'instance.transition', task_id, id, executor, jsonb_build_object('from', $2::text,"
    "  'to', $3::text, 'attempt', attempt, 'actor', $4::text, 'reason', $5::text) FROM u"
    "  RETURNING id, task_id) "
    "SELECT " HL_INSTANCE_COLS ", " HL_EXIT_COL ", ev.id"
    " FROM u i JOIN ev ON true JOIN tasks t ON t.id = i.task_id");

static hl_stmt q_instance_state =
    HL_STMT("SELECT state, attempt FROM instances WHERE id = $1::int8");

static hl_stmt q_list_transitions = HL_STMT(
    "SELECT id, instance_id, attempt, from_state, to_state, actor, reason, executor, " HL_MS(
        "at") " FROM instance_transitions WHERE instance_id = $1::int8 ORDER BY id");

/* ------------------------------------------------------------ dependencies */

/* Most cycles listed per dependency edge. */
#define HL_DEP_CYCLES_SHOWN 100

/* A task's schedule as the scheduler reads it: *has 0 for none (or one that
 * does not parse, which the spec check refuses anyway). */
static void hl__dep_sched(const char *expr, const char *zone, orr_cron *c, const orr_tz **tz,
                          int *has)
{
    orr_err e;
    *has = expr && *expr && orr_cron_parse_into(expr, c, &e) == ORR_OK;
    if (orr_tz_load(zone && *zone ? zone : "UTC", tz, &e) != ORR_OK)
        (void)orr_tz_load("UTC", tz, &e);
}

/* One listed cycle of one edge. */
static Orrery__Halley__V1__DepState *hl__dep_new(orr_arena *a, const PGresult *e, int row,
                                                 int64_t ms)
{
    Orrery__Halley__V1__DepState *d = orr_arena_alloc(a, sizeof *d);
    orrery__halley__v1__dep_state__init(d);
    d->kind = (char *)hl_val(e, row, 0);
    d->task_id = hl_val_i64(e, row, 1);
    d->task_name = (char *)hl_val(e, row, 2);
    d->schedule_time_ms = ms;
    return d;
}

/* The upstreams (down = 0) or downstreams (down = 1) of instance id, per
 * the scheduler's cycle mapping (orr_cycle): for each edge, one entry per
 * mapped cycle with its instance, or instance_id 0 when that cycle has no
 * instance yet; an edge that maps to no cycle at all is listed once, with
 * no time. */
orr_status hl_instance_deps(hl_conn *c, orr_arena *a, int64_t id, int down,
                            Orrery__Halley__V1__DepState ***out, size_t *n, orr_err *err)
{
    const char *p[2] = {hl_i64s(a, id), down ? "true" : "false"};
    PGresult *e;
    orr_status s = hl_db_query(c, a, &q_dep_edges, 2, p, &e, err);
    if (s != ORR_OK)
        return s;
    size_t cap = 16, cnt = 0;
    Orrery__Halley__V1__DepState **list = hl_alloc_n(a, sizeof *list, cap);
    int64_t *times = hl_alloc_n(a, sizeof *times, ORR_CYCLE_MAX);
    for (int row = 0; row < PQntuples(e); row++) {
        orr_cron oc, tc;
        const orr_tz *otz, *ttz;
        int has_o, has_t;
        hl__dep_sched(hl_val(e, row, 3), hl_val(e, row, 4), &oc, &otz, &has_o);
        hl__dep_sched(hl_val(e, row, 6), hl_val(e, row, 7), &tc, &ttz, &has_t);
        int same = strcmp(hl_val(e, row, 5), "same") == 0;
        int64_t t = hl_val_i64(e, row, 8) / 1000, span_end = 0;
        size_t nt = 0;
        if (strcmp(hl_val(e, row, 0), "self") == 0) {
            /* the task's previous cycle, or its next one */
            if (has_t && (down ? orr_cron_next(&tc, ttz, t, &times[0])
                               : orr_cycle_prev_fire(&tc, ttz, t, &times[0])) == ORR_OK)
                nt = 1;
        } else if (down) {
            (void)orr_cycle_downstream(has_o ? &oc : NULL, otz, has_t ? &tc : NULL, ttz, same, t,
                                       times, HL_DEP_CYCLES_SHOWN, &nt, &span_end);
        } else {
            (void)orr_cycle_upstream(has_t ? &tc : NULL, ttz, has_o ? &oc : NULL, otz, same, t,
                                     times, ORR_CYCLE_MAX, &nt);
            if (nt > HL_DEP_CYCLES_SHOWN)
                nt = HL_DEP_CYCLES_SHOWN;
        }
        /* the instances there are of those cycles */
        PGresult *r = NULL;
        const char *tid = hl_val(e, row, 1);
        if (span_end) {
            const char *q[4] = {tid, hl_i64s(a, t * 1000),
                                hl_i64s(a, span_end == INT64_MAX ? 0 : span_end * 1000),
                                orr_arena_sprintf(a, "%d", HL_DEP_CYCLES_SHOWN)};
            s = hl_db_query(c, a, &q_dep_span, 4, q, &r, err);
        } else if (nt > 0) {
            int64_t *ms = hl_alloc_n(a, sizeof *ms, nt);
            for (size_t k = 0; k < nt; k++)
                ms[k] = times[k] * 1000;
            const char *q[2] = {tid, hl_id_array(a, ms, nt)};
            s = hl_db_query(c, a, &q_dep_at, 2, q, &r, err);
        }
        if (s != ORR_OK)
            return s;
        size_t rows = r ? (size_t)PQntuples(r) : 0;
        size_t want = span_end ? rows : nt;
        if (want == 0)
            want = 1; /* the edge alone */
        if (cnt + want > cap) {
            while (cnt + want > cap)
                cap *= 2;
            Orrery__Halley__V1__DepState **grown = hl_alloc_n(a, sizeof *grown, cap);
            memcpy(grown, list, cnt * sizeof *list);
            list = grown;
        }
        if (span_end) {
            for (size_t k = 0; k < rows; k++) {
                Orrery__Halley__V1__DepState *d = hl__dep_new(a, e, row, hl_val_i64(r, (int)k, 1));
                d->instance_id = hl_val_i64(r, (int)k, 0);
                d->state = hl_pb_state(hl_val(r, (int)k, 2));
                list[cnt++] = d;
            }
            if (rows == 0)
                list[cnt++] = hl__dep_new(a, e, row, 0);
            continue;
        }
        for (size_t k = 0; k < nt; k++) {
            Orrery__Halley__V1__DepState *d = hl__dep_new(a, e, row, times[k] * 1000);
            for (size_t q = 0; q < rows; q++) {
                if (hl_val_i64(r, (int)q, 1) == times[k] * 1000) {
                    d->instance_id = hl_val_i64(r, (int)q, 0);
                    d->state = hl_pb_state(hl_val(r, (int)q, 2));
                }
            }
            list[cnt++] = d;
        }
        if (nt == 0)
            list[cnt++] = hl__dep_new(a, e, row, 0);
    }
    *out = list;
    *n = cnt;
    return ORR_OK;
}

static orr_status hl__fill_deps(hl_conn *c, orr_arena *a, hl_pb_instance *in, orr_err *err)
{
    orr_status s = hl_instance_deps(c, a, in->id, 0, &in->upstreams, &in->n_upstreams, err);
    if (s == ORR_OK)
        s = hl_instance_deps(c, a, in->id, 1, &in->downstreams, &in->n_downstreams, err);
    return s;
}

/* ------------------------------------------------------------ parameters */

#define HL_PARAMS_MAX      64
#define HL_PARAM_VALUE_MAX 4096

/* Check text ("" = none) as an instance's parameter values: a JSON object
 * of at most HL_PARAMS_MAX strings of at most HL_PARAM_VALUE_MAX bytes under
 * parameter names. *canon: its compact form ("{}" for ""). ORR_EINVAL naming
 * "params" or "params.<name>". */
orr_status hl_params_parse(orr_arena *a, const char *text, const char **canon, orr_err *err)
{
    *canon = "{}";
    if (!text || !*text)
        return ORR_OK;
    json_error_t je;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    orr_status s = ORR_OK;
    if (!json_is_object(o)) {
        s = orr_err_set(err, ORR_EINVAL, "params", "must be a JSON object of strings");
        goto out;
    }
    if (json_object_size(o) > HL_PARAMS_MAX) {
        s = orr_err_set(err, ORR_EINVAL, "params", "at most %d parameters", HL_PARAMS_MAX);
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (!orr_subst_valid_name(k)) {
            s = orr_err_set(err, ORR_EINVAL, "params", "\"%.64s\" is not a parameter name", k);
            goto out;
        }
        if (!json_is_string(v) || json_string_length(v) > HL_PARAM_VALUE_MAX) {
            s = orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "params.%s", k),
                            "must be a string of at most %d bytes", HL_PARAM_VALUE_MAX);
            goto out;
        }
    }
    char *dump = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    *canon = orr_arena_strdup(a, orr_xcheck(dump));
    free(dump);
out:
    if (o)
        json_decref(o);
    return s;
}

/* ORR_EINVAL naming "params.<name>" for the first name of canon that task
 * task_id's version (0 = current) does not declare. */
orr_status hl_params_known(hl_conn *c, orr_arena *a, int64_t task_id, int32_t version,
                           const char *canon, orr_err *err)
{
    if (strcmp(canon, "{}") == 0)
        return ORR_OK;
    const char *p[3] = {hl_i64s(a, task_id), orr_arena_sprintf(a, "%d", (int)version), canon};
    PGresult *r;
    orr_status s = hl_db_query(c, a, &q_unknown_param, 3, p, &r, err);
    if (s == ORR_OK && PQntuples(r) > 0)
        s = orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "params.%s", hl_val(r, 0, 0)),
                        "unknown parameter \"%s\": the task declares no such parameter%s",
                        hl_val(r, 0, 0), version ? " in that version" : "");
    return s;
}

/* ------------------------------------------------------------ create */

static orr_status hl__create_one(hl_conn *c, orr_arena *a,
                                 const Orrery__Halley__V1__CreateInstance *ci,
                                 Orrery__Halley__V1__CreateInstanceResult *res, int64_t *event_id,
                                 orr_err *err)
{
    orr_err ie;
    orr_err_clear(&ie);
    if (ci->task_id <= 0)
        orr_err_set(&ie, ORR_EINVAL, "task_id", "must be positive");
    else if (ci->schedule_time_ms <= 0)
        orr_err_set(&ie, ORR_EINVAL, "schedule_time_ms", "must be positive");
    else if (ci->priority < -1000 || ci->priority > 1000)
        orr_err_set(&ie, ORR_EINVAL, "priority", "must be between -1000 and 1000");
    const char *params = "{}";
    if (ie.code == ORR_OK && hl_params_parse(a, ci->params_json, &params, &ie) == ORR_OK) {
        orr_status s = hl_params_known(c, a, ci->task_id, 0, params, &ie);
        if (s != ORR_OK && s != ORR_EINVAL) {
            *err = ie;
            return s;
        }
    }
    if (ie.code == ORR_OK) {
        const char *p[5] = {hl_i64s(a, ci->task_id), hl_i64s(a, ci->schedule_time_ms),
                            orr_arena_sprintf(a, "%d", (int)ci->priority), ci->actor, params};
        PGresult *r;
        orr_status s = hl_db_query(c, a, &q_create_instance, 5, p, &r, err);
        if (s != ORR_OK)
            return s;
        hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
        if (PQntuples(r) == 1) {
            hl_fill_instance(a, r, 0, in);
            res->created = 1;
            res->instance = in;
            *event_id = hl_val_i64(r, 0, HL_INSTANCE_NCOLS + 1);
        } else {
            if ((s = hl_db_query(c, a, &q_existing_instance, 2, p, &r, err)) != ORR_OK)
                return s;
            if (PQntuples(r) == 1) {
                hl_fill_instance(a, r, 0, in);
                res->instance = in;
            } else {
                if ((s = hl_db_query(c, a, &q_task_active, 1, p, &r, err)) != ORR_OK)
                    return s;
                if (PQntuples(r) == 0)
                    orr_err_set(&ie, ORR_ENOTFOUND, "task_id", "no such task");
                else
                    orr_err_set(&ie, ORR_ESTATE, "task_id", "task is not active");
            }
        }
    }
    res->code = hl_grpc_code(ie.code);
    res->field = orr_arena_strdup(a, ie.field);
    res->message = orr_arena_strdup(a, ie.msg);
    return ORR_OK;
}

HL_UNARY(hl_api_create_instances)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__CreateInstancesRequest);
    if (rq->n_instances == 0 || rq->n_instances > HL_BATCH_MAX)
        return orr_err_set(err, ORR_EINVAL, "instances", "give 1 to %d instances", HL_BATCH_MAX);
    Orrery__Halley__V1__CreateInstancesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__create_instances_response__init(o);
    o->n_results = rq->n_instances;
    o->results = orr_arena_alloc(a, sizeof *o->results * rq->n_instances);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    int64_t max_event = 0;
    for (size_t i = 0; s == ORR_OK && i < rq->n_instances; i++) {
        Orrery__Halley__V1__CreateInstanceResult *res = orr_arena_alloc(a, sizeof *res);
        orrery__halley__v1__create_instance_result__init(res);
        o->results[i] = res;
        int64_t ev = 0;
        s = hl__create_one(c, a, rq->instances[i], res, &ev, err);
        if (ev > max_event)
            max_event = ev;
    }
    hl_db_put(hc->db, c);
    hl_events_committed(hc->events, max_event); /* each item committed on its own */
    if (s != ORR_OK)
        return s;
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ read */

HL_UNARY(hl_api_get_instance)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetInstanceRequest);
    if (rq->id <= 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {hl_i64s(a, rq->id)};
    PGresult *r;
    s = hl_db_query(c, a, &q_get_instance, 1, p, &r, err);
    if (s == ORR_OK && PQntuples(r) == 0)
        s = orr_err_set(err, ORR_ENOTFOUND, "id", "no such instance");
    hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
    if (s == ORR_OK) {
        hl_fill_instance(a, r, 0, in);
        in->params_json = (char *)hl_val(r, 0, HL_INSTANCE_NCOLS + 1);
        in->from_scratch = hl_val_bool(r, 0, HL_INSTANCE_NCOLS + 2);
        if (!rq->without_deps) /* an executor reads the row alone, once per run */
            s = hl__fill_deps(c, a, in, err);
        if (s == ORR_OK && rq->with_task) /* and its task, in the same call */
            s = hl_task_read(c, a, in->task_id, in->task_version, &in->task, err);
    }
    hl_db_put(hc->db, c);
    if (s == ORR_OK)
        *resp = &in->base;
    return s;
}

#define HL_GET_INSTANCES_MAX 1000

/* GetInstances: many rows in two statements (the rows, then the tasks at
 * their versions), where GetInstance takes two per row. */
HL_UNARY(hl_api_get_instances)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetInstancesRequest);
    if (rq->n_ids == 0 || rq->n_ids > HL_GET_INSTANCES_MAX)
        return orr_err_set(err, ORR_EINVAL, "ids", "must hold 1 to %d ids", HL_GET_INSTANCES_MAX);
    for (size_t i = 0; i < rq->n_ids; i++)
        if (rq->ids[i] <= 0)
            return orr_err_set(err, ORR_EINVAL, "ids", "id %zu must be positive", i);
    const char *p[1] = {hl_id_array(a, rq->ids, rq->n_ids)};
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *r;
    s = hl_db_query(c, a, &q_get_instances, 1, p, &r, err);
    Orrery__Halley__V1__GetInstancesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__get_instances_response__init(o);
    int rows = s == ORR_OK ? PQntuples(r) : 0;
    o->instances = orr_arena_alloc(a, (rq->n_ids + 1) * sizeof *o->instances);
    int64_t *row_id = orr_arena_alloc(a, ((size_t)rows + 1) * sizeof *row_id);
    for (int row = 0; row < rows; row++)
        row_id[row] = hl_val_i64(r, row, 0);
    for (size_t i = 0; i < rq->n_ids; i++) /* in the order asked */
        for (int row = 0; row < rows; row++) {
            if (row_id[row] != rq->ids[i])
                continue;
            hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
            hl_fill_instance(a, r, row, in);
            in->params_json = (char *)hl_val(r, row, HL_INSTANCE_NCOLS + 1);
            in->from_scratch = hl_val_bool(r, row, HL_INSTANCE_NCOLS + 2);
            o->instances[o->n_instances++] = in;
            break;
        }
    if (s == ORR_OK && rq->with_task && o->n_instances > 0) {
        size_t n = o->n_instances, m = 0; /* m distinct (task, version) pairs */
        int64_t *tid = orr_arena_alloc(a, n * sizeof *tid);
        int32_t *ver = orr_arena_alloc(a, n * sizeof *ver);
        size_t *pair = orr_arena_alloc(a, n * sizeof *pair); /* instance i's pair */
        hl_pb_task **tasks = orr_arena_alloc(a, n * sizeof *tasks);
        for (size_t i = 0; i < n; i++) {
            const hl_pb_instance *in = o->instances[i];
            size_t k = 0;
            while (k < m && !(tid[k] == in->task_id && ver[k] == in->task_version))
                k++;
            if (k == m) {
                tid[m] = in->task_id;
                ver[m++] = in->task_version;
            }
            pair[i] = k;
        }
        s = hl_task_read_many(c, a, m, tid, ver, tasks, err);
        for (size_t i = 0; s == ORR_OK && i < n; i++)
            o->instances[i]->task = tasks[pair[i]];
    }
    hl_db_put(hc->db, c);
    if (s == ORR_OK)
        *resp = &o->base;
    return s;
}

HL_UNARY(hl_api_set_instance_params)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__SetInstanceParamsRequest);
    if (rq->id <= 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    const char *params;
    orr_status s = hl_params_parse(a, rq->params_json, &params, err);
    if (s != ORR_OK)
        return s;
    hl_conn *c = NULL;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK || (s = hl_db_begin(c, err)) != ORR_OK)
        goto out;
    const char *id = hl_i64s(a, rq->id);
    const char *p[1] = {id};
    PGresult *r;
    if ((s = hl_db_query(c, a, &q_instance_task, 1, p, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "id", "no such instance");
        goto out;
    }
    int64_t task_id = hl_val_i64(r, 0, 0);
    const char *ps[2] = {id, params};
    if ((s = hl_params_known(c, a, task_id, (int32_t)hl_val_i64(r, 0, 1), params, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_set_params, 2, ps, NULL, err)) != ORR_OK ||
        (s = hl_audit(c, a, rq->actor, "instance.params", orr_arena_sprintf(a, "instance:%s", id),
                      params, err)) != ORR_OK ||
        (s = hl_emit(c, a, "instance.params", task_id, rq->id, NULL,
                     orr_arena_sprintf(a, "{\"params\":%s}", params), NULL, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    if ((s = hl_db_query(c, a, &q_get_instance, 1, p, &r, err)) == ORR_OK && PQntuples(r) == 1) {
        hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
        hl_fill_instance(a, r, 0, in);
        in->params_json = (char *)hl_val(r, 0, HL_INSTANCE_NCOLS + 1);
        *resp = &in->base;
    } else if (s == ORR_OK) {
        s = orr_err_set(err, ORR_ENOTFOUND, "id", "no such instance");
    }
out:
    if (c)
        hl_db_put(hc->db, c);
    return s;
}

/* Up to limit rows of r; with pg (a paged list), a page token (the id
 * ascending, schedule ms and id descending) when r has more. */
static orr_status hl__instances_response(hl_conn *c, orr_arena *a, PGresult *r, int limit,
                                         const hl_page *pg, int with_deps, int desc,
                                         ProtobufCMessage **resp, orr_err *err)
{
    Orrery__Halley__V1__ListInstancesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_instances_response__init(o);
    int n = PQntuples(r);
    int shown = n > limit ? limit : n;
    o->n_instances = (size_t)shown;
    o->instances = hl_alloc_n(a, sizeof *o->instances, (size_t)shown);
    hl_pb_instance *ins = hl_alloc_n(a, sizeof *ins, (size_t)shown);
    int bin = PQbinaryTuples(r); /* the lists' statements (HL_STMT_LIST) */
    for (int i = 0; i < shown; i++) {
        if (bin)
            hl_fill_instance_bin(r, i, &ins[i]);
        else
            hl_fill_instance(a, r, i, &ins[i]);
        o->instances[i] = &ins[i];
        if (with_deps) {
            orr_status s = hl__fill_deps(c, a, &ins[i], err);
            if (s != ORR_OK)
                return s;
        }
    }
    if (n > limit && pg) {
        const char *k[2] = {hl_i64s(a, ins[shown - 1].schedule_time_ms),
                            hl_i64s(a, ins[shown - 1].id)};
        o->next_page_token = hl_page_next(a, pg, desc ? k : k + 1);
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_instances)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListInstancesRequest);
    const char *list = rq->descending ? "instances.desc" : "instances";
    const char *kinds = rq->descending ? "ii" : "i";
    hl_page pg;
    orr_status ps =
        hl_page_begin(a, list, kinds, rq->page_size, rq->page_token, HL_PAGE_DEFAULT, &pg, err);
    if (ps != ORR_OK)
        return ps;
    int size = pg.size;
    const char *const *after = pg.keys; /* ascending: id; descending: schedule ms, id */
    const char *after_id = rq->descending ? after[1] : after[0];
    const char *after_ms = rq->descending ? after[0] : "0";
    if (rq->task_id < 0)
        return orr_err_set(err, ORR_EINVAL, "task_id", "must be >= 0");
    if (rq->team[0] && !hl_is_name(rq->team, 128))
        return orr_err_set(err, ORR_EINVAL, "team", "not a team name");
    size_t qlen = strlen(rq->query);
    if (qlen > 128)
        return orr_err_set(err, ORR_EINVAL, "query", "at most 128 bytes");
    char *search = orr_arena_alloc(a, qlen * 2 + 1), *sp = search;
    for (size_t i = 0; i < qlen; i++) {
        char ch = rq->query[i];
        if (ch == '\\' || ch == '%' || ch == '_')
            *sp++ = '\\';
        *sp++ = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
    }
    *sp = 0;
    orr_buf states = ORR_BUF_INIT;
    orr_buf_append_byte(&states, '{');
    _Static_assert(HL_ST__COUNT <= 64, "a state's bit in seen");
    uint64_t seen = 0; /* the states listed so far, by value: each once */
    for (size_t i = 0; i < rq->n_states; i++) {
        const char *nm = hl_state_name((hl_state)rq->states[i]);
        if (!nm) {
            orr_buf_free(&states);
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "states[%zu]", i),
                               "unknown state");
        }
        if (seen & (UINT64_C(1) << rq->states[i]))
            continue;
        orr_buf_appendf(&states, "%s%s", seen ? "," : "", nm);
        seen |= UINT64_C(1) << rq->states[i];
    }
    orr_buf_append_byte(&states, '}');
    const char *p[10] = {after_id,
                         hl_i64s(a, rq->task_id),
                         orr_arena_strdup(a, orr_buf_cstr(&states)),
                         rq->executor,
                         hl_i64s(a, rq->from_schedule_ms),
                         hl_i64s(a, rq->to_schedule_ms),
                         orr_arena_sprintf(a, "%d", size + 1),
                         rq->team,
                         after_ms,
                         search};
    orr_buf_free(&states);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *r;
    /* Which filters are set: the lists with a statement of their own are
     * picked by it. */
    enum { F_TASK = 1, F_RANGE = 2, F_STATES = 4, F_SEARCH = 8, F_OTHER = 16 };
    unsigned set = (rq->task_id ? F_TASK : 0) |
                   (rq->from_schedule_ms || rq->to_schedule_ms ? F_RANGE : 0) |
                   (rq->n_states ? F_STATES : 0) | (search[0] ? F_SEARCH : 0) |
                   (rq->executor[0] || rq->team[0] ? F_OTHER : 0);
    /* Newest first, the keyset's ms as a float8: Infinity on the first page. */
    const char *desc_ms = strcmp(p[0], "0") == 0 ? "Infinity" : p[8];
    if (!set) {
        const char *pa[3] = {p[0], p[6], p[8]};
        if (!rq->descending)
            s = hl_db_query(c, a, &q_list_instances_all, 2, pa, &r, err);
        else if (strcmp(p[0], "0") == 0)
            s = hl_db_query(c, a, &q_list_instances_desc_first, 1, pa + 1, &r, err);
        else
            s = hl_db_query(c, a, &q_list_instances_desc_after, 3, pa, &r, err);
    } else if (rq->descending && set == F_TASK) {
        const char *pt[4] = {p[0], p[1], p[8], p[6]};
        if (strcmp(p[0], "0") == 0)
            s = hl_db_query(c, a, &q_list_task_desc_first, 2, (const char *[]){p[1], p[6]}, &r,
                            err);
        else
            s = hl_db_query(c, a, &q_list_task_desc_after, 4, pt, &r, err);
    } else if (rq->descending && set == F_RANGE) {
        const char *pr[5] = {rq->from_schedule_ms ? p[4] : "-Infinity",
                             rq->to_schedule_ms ? p[5] : "Infinity", p[6], p[0], p[8]};
        if (strcmp(p[0], "0") == 0)
            s = hl_db_query(c, a, &q_list_range_desc_first, 3, pr, &r, err);
        else
            s = hl_db_query(c, a, &q_list_range_desc_after, 5, pr, &r, err);
    } else if (set == F_STATES) {
        const char *ps[4] = {p[2], p[6], p[0], desc_ms};
        s = hl_db_query(c, a, rq->descending ? &q_list_states_desc : &q_list_states_asc,
                        rq->descending ? 4 : 3, ps, &r, err);
    } else if (set == F_SEARCH) {
        const char *pq[5] = {search, p[6], HL_SEARCH_NO_BOUND, p[0], desc_ms};
        s = hl_db_query(c, a, rq->descending ? &q_list_search_desc : &q_list_search_asc,
                        rq->descending ? 5 : 4, pq, &r, err);
    } else if (rq->descending) {
        s = hl_db_query_custom(c, a, &q_list_instances_desc, 10, p, &r, err);
    } else {
        const char *pa[9] = {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], search};
        s = hl_db_query_custom(c, a, &q_list_instances, 9, pa, &r, err);
    }
    if (s == ORR_OK)
        s = hl__instances_response(c, a, r, size, &pg, rq->with_deps, rq->descending, resp, err);
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_list_ready_instances)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListReadyInstancesRequest);
    int limit;
    orr_status ls = hl_page_limit(rq->limit, &limit, err);
    if (ls != ORR_OK)
        return ls;
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {orr_arena_sprintf(a, "%d", limit)};
    PGresult *r;
    s = hl_db_query(c, a, &q_list_ready, 1, p, &r, err);
    if (s == ORR_OK)
        s = hl__instances_response(c, a, r, limit, NULL, 0, 0, resp, err);
    hl_db_put(hc->db, c);
    return s;
}

/* ------------------------------------------------------------ transitions */

orr_status hl_transition_check(const hl_pb_transition_req *r, orr_err *err)
{
    if (r->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    if (!hl_state_valid((int)r->expected_state))
        return orr_err_set(err, ORR_EINVAL, "expected_state", "must be a state");
    if (!hl_state_valid((int)r->new_state))
        return orr_err_set(err, ORR_EINVAL, "new_state", "must be a state");
    if (!r->actor || !r->actor[0])
        return orr_err_set(err, ORR_EINVAL, "actor", "is required");
    if (strlen(r->actor) > 256)
        return orr_err_set(err, ORR_EINVAL, "actor", "at most 256 bytes");
    if (r->reason && strlen(r->reason) > 4096)
        return orr_err_set(err, ORR_EINVAL, "reason", "at most 4096 bytes");
    if (r->expected_attempt < 0)
        return orr_err_set(err, ORR_EINVAL, "expected_attempt", "must be >= 0");
    hl_state from = (hl_state)r->expected_state, to = (hl_state)r->new_state;
    if (r->started_at_ms < 0)
        return orr_err_set(err, ORR_EINVAL, "started_at_ms", "must be >= 0");
    if (r->started_at_ms > 0 && !hl_sm_legal_through_running(from, to))
        return orr_err_set(err, ORR_ESTATE, "new_state",
                           "%s -> running -> %s is not a legal transition", hl_state_name(from),
                           hl_state_name(to));
    if (r->started_at_ms == 0 && !hl_sm_legal(from, to))
        return orr_err_set(err, ORR_ESTATE, "new_state", "%s -> %s is not a legal transition",
                           hl_state_name(from), hl_state_name(to));
    if (to == HL_ST_DISPATCHED && (!r->executor || !hl_is_name(r->executor, 128)))
        return orr_err_set(err, ORR_EINVAL, "executor",
                           "an executor id is required for dispatched");
    return ORR_OK;
}

orr_status hl_transition_one(hl_conn *c, orr_arena *a, const hl_pb_transition_req *rq,
                             hl_pb_transition_res *out, orr_err *err)
{
    orr_status s = hl_transition_check(rq, err);
    if (s != ORR_OK)
        return s;
    hl_state from = (hl_state)rq->expected_state, to = (hl_state)rq->new_state;
    unsigned edge = hl_sm_edge(from, to);
    int record_attempt = to == HL_ST_DISPATCHED || to == HL_ST_RUNNING ||
                         (hl_sm_finished(to) && to != HL_ST_MARKED_SUCCESS);
    const char *id = hl_i64s(a, rq->instance_id);
    const char *p[12] = {id,
                         hl_state_name(from),
                         hl_state_name(to),
                         rq->actor,
                         rq->reason,
                         rq->executor,
                         orr_arena_sprintf(a, "%d", (int)rq->expected_attempt),
                         (edge & HL_EDGE_NEW_ATTEMPT) ? "1" : "0",
                         hl_sm_finished(to) ? "true" : "false",
                         rq->has_exit_code ? orr_arena_sprintf(a, "%d", (int)rq->exit_code) : NULL,
                         record_attempt ? "true" : "false",
                         hl_i64s(a, rq->started_at_ms)};
    PGresult *r;
    if ((s = hl_db_query(c, a, &q_transition, 12, p, &r, err)) != ORR_OK)
        return s;
    if (PQntuples(r) == 1) {
        hl_pb_instance *in = orr_arena_alloc(a, sizeof *in);
        hl_fill_instance(a, r, 0, in);
        out->instance = in;
        out->event_id = hl_val_i64(r, 0, HL_INSTANCE_NCOLS + 1);
        return ORR_OK;
    }
    if ((s = hl_db_query(c, a, &q_instance_state, 1, p, &r, err)) != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
    /* Each precondition names its own field: the state when it moved, else
     * the attempt (the only other condition of the update). */
    if (strcmp(hl_val(r, 0, 0), hl_state_name(from)) != 0)
        return orr_err_set(err, ORR_ECONFLICT, "expected_state",
                           "instance is %s (attempt %s), expected %s", hl_val(r, 0, 0),
                           hl_val(r, 0, 1), hl_state_name(from));
    return orr_err_set(err, ORR_ECONFLICT, "expected_attempt",
                       "instance is at attempt %s, expected %d", hl_val(r, 0, 1),
                       (int)rq->expected_attempt);
}

HL_UNARY(hl_api_transition_instance)
{
    HL_HANDLER_BEGIN(hl_pb_transition_req);
    orr_status s = hl_transition_check(rq, err);
    if (s != ORR_OK)
        return s;
    hl_pb_transition_res *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__transition_result__init(o);
    orr_rpc_call_blocking(call);                /* it waits for its batch's commit */
    s = hl_tcomb_transition(hc, a, rq, o, err); /* reports its events itself */
    if (s == ORR_OK)
        *resp = &o->base;
    return s;
}

HL_UNARY(hl_api_transition_instances)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__TransitionBatchRequest);
    if (rq->n_items == 0 || rq->n_items > HL_BATCH_MAX)
        return orr_err_set(err, ORR_EINVAL, "items", "give 1 to %d transitions", HL_BATCH_MAX);
    Orrery__Halley__V1__TransitionBatchResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__transition_batch_response__init(o);
    o->n_results = rq->n_items;
    o->results = orr_arena_alloc(a, sizeof *o->results * rq->n_items);
    orr_status *st = orr_arena_calloc(a, rq->n_items, sizeof *st);
    orr_err *errs = orr_arena_calloc(a, rq->n_items, sizeof *errs);
    for (size_t i = 0; i < rq->n_items; i++) {
        o->results[i] = orr_arena_alloc(a, sizeof *o->results[i]);
        orrery__halley__v1__transition_result__init(o->results[i]);
    }
    /* Combined statements; reports the committed events itself. */
    orr_rpc_call_blocking(call);
    orr_status s = hl_tcomb_transition_batch(hc, a, rq->items, rq->n_items, o->results, st, errs);
    if (s != ORR_OK) { /* the database went away: the whole call fails */
        *err = errs[0];
        return s;
    }
    for (size_t i = 0; i < rq->n_items; i++) {
        o->results[i]->code = hl_grpc_code(st[i]);
        if (st[i] != ORR_OK) {
            o->results[i]->field = orr_arena_strdup(a, errs[i].field);
            o->results[i]->message = orr_arena_strdup(a, errs[i].msg);
        }
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_transitions)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListTransitionsRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {hl_i64s(a, rq->instance_id)};
    PGresult *r;
    s = hl_db_query(c, a, &q_list_transitions, 1, p, &r, err);
    if (s == ORR_OK && PQntuples(r) == 0 &&
        (s = hl_db_query(c, a, &q_instance_state, 1, p, &r, err)) == ORR_OK && PQntuples(r) == 0)
        s = orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListTransitionsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_transitions_response__init(o);
    int n = PQntuples(r);
    if (PQnfields(r) < 9)
        n = 0; /* r is the existence check: the instance has no transitions yet */
    o->n_transitions = (size_t)n;
    o->transitions = hl_alloc_n(a, sizeof *o->transitions, (size_t)n);
    Orrery__Halley__V1__Transition *t = hl_alloc_n(a, sizeof *t, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__transition__init(&t[i]);
        t[i].id = hl_val_i64(r, i, 0);
        t[i].instance_id = hl_val_i64(r, i, 1);
        t[i].attempt = (int32_t)hl_val_i64(r, i, 2);
        t[i].from_state = hl_pb_state(hl_val(r, i, 3));
        t[i].to_state = hl_pb_state(hl_val(r, i, 4));
        t[i].actor = (char *)hl_val(r, i, 5);
        t[i].reason = (char *)hl_val(r, i, 6);
        t[i].executor = (char *)hl_val(r, i, 7);
        t[i].at_ms = hl_val_i64(r, i, 8);
        o->transitions[i] = &t[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

static hl_stmt q_list_attempts =
    HL_STMT("SELECT attempt, state, executor, " HL_MS("started_at") ", " HL_MS(
        "finished_at") ","
                       " exit_code IS NOT NULL, coalesce(exit_code, 0), reason,"
                       " coalesce(task_version, 0)"
                       " FROM attempts WHERE instance_id = $1::int8 ORDER BY attempt");

HL_UNARY(hl_api_list_attempts)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListAttemptsRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {hl_i64s(a, rq->instance_id)};
    PGresult *r, *chk;
    s = hl_db_query(c, a, &q_list_attempts, 1, p, &r, err);
    if (s == ORR_OK && PQntuples(r) == 0 &&
        (s = hl_db_query(c, a, &q_instance_state, 1, p, &chk, err)) == ORR_OK &&
        PQntuples(chk) == 0)
        s = orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListAttemptsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_attempts_response__init(o);
    int n = PQntuples(r);
    o->n_attempts = (size_t)n;
    o->attempts = hl_alloc_n(a, sizeof *o->attempts, (size_t)n);
    Orrery__Halley__V1__Attempt *t = hl_alloc_n(a, sizeof *t, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__attempt__init(&t[i]);
        t[i].attempt = (int32_t)hl_val_i64(r, i, 0);
        t[i].state = hl_pb_state(hl_val(r, i, 1));
        t[i].executor = (char *)hl_val(r, i, 2);
        t[i].started_at_ms = hl_val_i64(r, i, 3);
        t[i].finished_at_ms = hl_val_i64(r, i, 4);
        t[i].has_exit_code = hl_val_bool(r, i, 5);
        t[i].exit_code = (int32_t)hl_val_i64(r, i, 6);
        t[i].reason = (char *)hl_val(r, i, 7);
        t[i].task_version = (int32_t)hl_val_i64(r, i, 8);
        o->attempts[i] = &t[i];
    }
    *resp = &o->base;
    return ORR_OK;
}
