/*
 * hl_api.h - the Halley service: shared context and the handlers' contract.
 *
 * One hl_ctx is built by halleyd serve and passed to every handler through
 * the RPC runtime. Handlers live in hl_api_<resource>.c, one file per
 * resource, and are registered in one table (hl_service.c). Each handler
 * opens with HL_HANDLER_BEGIN, takes one connection from the pool for the
 * duration of its work, allocates everything in the call's arena (PGresults
 * included, through arena cleanups), and answers errors as orr_status +
 * orr_err naming the request field.
 */
#ifndef HL_API_H
#define HL_API_H

#include <stddef.h>
#include <stdint.h>

#include "halley.pb-c.h"
#include "hl_cache.h"
#include "hl_db.h"
#include "hl_events.h"
#include "hl_secret.h"
#include "hl_sm.h"
#include "orr_buf.h"
#include "orr_cal.h"
#include "orr_jschema.h"
#include "orr_rpc.h"

typedef Orrery__Halley__V1__Task hl_pb_task;
typedef Orrery__Halley__V1__Instance hl_pb_instance;
typedef Orrery__Halley__V1__TransitionRequest hl_pb_transition_req;
typedef Orrery__Halley__V1__TransitionResult hl_pb_transition_res;

typedef struct hl_ctx {
    hl_db *db;
    hl_cache *cache;
    hl_events *events;
    struct hl_evwin *evwin; /* the events WatchEvents passed last (hl_evwin.h) */
    const orr_jschema *task_schema;
    unsigned char secret_key[HL_SECRET_KEY_BYTES];
    int known_schema_version;
    int event_grace_ms;        /* how long a gap in event ids may stay open */
    const char *worker_token;  /* [halley] worker_token; NULL or "" = unset */
    const char *service_token; /* [halley] token; NULL or "" = no auth */
} hl_ctx;

/* The method table of the Halley service (hl_service.c). */
extern const orr_rpc_method hl_methods[];
extern const size_t hl_methods_count;
/* Methods that take the worker token instead of the service token
 * (NULL-terminated; orr_rpc_server_opts.handler_auth): their handler checks
 * the caller's bearer token against hl_ctx.worker_token. */
extern const char *const hl_worker_methods[];

/* Who the bearer token of a worker method's call (hl_worker_methods) is:
 * ORR_OK for the worker token; ORR_EAUTH (field "authorization") for an
 * unidentified caller (no bearer credential, or a token that is neither the
 * worker nor the service token); ORR_EPERM for an identified caller without
 * the right (the service token, or any caller while worker_token is unset
 * and the service needs no token). Pure; constant-time compares. */
orr_status hl_worker_auth(const hl_ctx *hc, const char *bearer, orr_err *err);

/* Probe of the standard grpc.health.v1.Health service (orr_rpc_health_fn;
 * ctx is the hl_ctx): "" and "orrery.halley.v1.Halley" are SERVING while a
 * query on PostgreSQL succeeds, NOT_SERVING otherwise; any other name is
 * UNKNOWN. Blocks for one query at most. */
int hl_health_probe(const char *service, void *ctx);

/* The opening of every unary handler (HL_UNARY): hc, the service context;
 * rq, the request as its message type req_type; a, the call's arena, which
 * owns everything the answer points to. Any of them may go unused. */
#define HL_HANDLER_BEGIN(req_type)                                                                 \
    hl_ctx *hc = ctx;                                                                              \
    const req_type *rq = (const void *)req;                                                        \
    orr_arena *a = orr_rpc_call_arena(call);                                                       \
    (void)hc;                                                                                      \
    (void)rq;                                                                                      \
    (void)a

/* Handlers, by resource. Signatures are orr_rpc_unary_fn / orr_rpc_stream_fn. */
#define HL_UNARY(name)                                                                             \
    orr_status name(orr_rpc_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,      \
                    orr_err *err, void *ctx)
HL_UNARY(hl_api_health); /* hl_api_common.c */
/* Tasks (hl_api_tasks.c). */
HL_UNARY(hl_api_create_task);
HL_UNARY(hl_api_get_task);
HL_UNARY(hl_api_list_tasks);
HL_UNARY(hl_api_update_task);
HL_UNARY(hl_api_deactivate_task);
HL_UNARY(hl_api_list_task_versions);
HL_UNARY(hl_api_rollback_task);
HL_UNARY(hl_api_reactivate_task);
HL_UNARY(hl_api_set_instance_params);
/* The task id at version (0 = current) read on c into a new message in a
 * (GetTask's read, for GetInstance's with_task). */
orr_status hl_task_read(hl_conn *c, orr_arena *a, int64_t id, int32_t version, hl_pb_task **out,
                        orr_err *err);
/* Tasks at the versions (ids[k], versions[k]), k < n, read on c in one
 * statement: out[k] is the task, or NULL when there is no such version. */
orr_status hl_task_read_many(hl_conn *c, orr_arena *a, size_t n, const int64_t *ids,
                             const int32_t *versions, hl_pb_task **out, orr_err *err);
/* Instances, their attempts and transitions (hl_api_instances.c). */
HL_UNARY(hl_api_create_instances);
HL_UNARY(hl_api_get_instance);
HL_UNARY(hl_api_get_instances);
HL_UNARY(hl_api_list_instances);
HL_UNARY(hl_api_list_ready_instances);
HL_UNARY(hl_api_transition_instance);
HL_UNARY(hl_api_transition_instances);
HL_UNARY(hl_api_list_transitions);
HL_UNARY(hl_api_list_attempts);
/* Instance statistics (hl_api_stats.c). */
HL_UNARY(hl_api_instance_stats);
/* Pools and their tokens (hl_api_pools.c). */
HL_UNARY(hl_api_put_pool);
HL_UNARY(hl_api_get_pool);
HL_UNARY(hl_api_list_pools);
HL_UNARY(hl_api_acquire_tokens);
HL_UNARY(hl_api_release_tokens);
/* Teams (hl_api_teams.c). */
HL_UNARY(hl_api_create_team);
HL_UNARY(hl_api_list_teams);
/* Users (hl_api_users.c). */
HL_UNARY(hl_api_create_user);
HL_UNARY(hl_api_get_user);
HL_UNARY(hl_api_authenticate);
HL_UNARY(hl_api_update_user);
HL_UNARY(hl_api_list_users);
/* Data sources (hl_api_datasources.c). */
HL_UNARY(hl_api_put_data_source);
HL_UNARY(hl_api_get_data_source);
HL_UNARY(hl_api_list_data_sources);
HL_UNARY(hl_api_get_data_source_secret);
HL_UNARY(hl_api_get_data_source_meta); /* hl_api_dsmeta.c */
HL_UNARY(hl_api_put_data_source_meta);
/* API tokens (hl_api_tokens.c). */
HL_UNARY(hl_api_create_api_token);
HL_UNARY(hl_api_list_api_tokens);
HL_UNARY(hl_api_revoke_api_token);
HL_UNARY(hl_api_authenticate_api_token);
/* Executors (hl_api_executors.c). */
HL_UNARY(hl_api_put_executor);
HL_UNARY(hl_api_list_executors);
HL_UNARY(hl_api_update_executor);
/* Business calendars (hl_api_calendars.c). */
HL_UNARY(hl_api_put_calendar);
HL_UNARY(hl_api_get_calendar);
HL_UNARY(hl_api_list_calendars);
HL_UNARY(hl_api_delete_calendar);
HL_UNARY(hl_api_put_calendar_days);
/* The save-time check of a task spec's "calendar": ORR_OK when the spec
 * names none or an existing one; ORR_EINVAL naming "spec.calendar"
 * otherwise. On c, inside the caller's transaction. */
orr_status hl_calendar_check_spec(hl_conn *c, orr_arena *a, const json_t *spec, orr_err *err);
/* The save-time check of the data sources a transfer or quality task's
 * config names (hl_xfer_check.c): ORR_EINVAL naming
 * "spec.config.reader.datasource", "spec.config.writers[N].datasource" or
 * "spec.config.datasource" for one that does not exist or whose kind the
 * endpoint cannot use. On c, inside the caller's transaction. */
orr_status hl_xfer_check_spec(hl_conn *c, orr_arena *a, const char *type, const json_t *spec,
                              orr_err *err);
/* The business calendar the current version of task_id names, with every
 * day, and its policy: *out NULL when it names none. The calendar lives as
 * long as arena a. ORR_OK, or the database's error. */
orr_status hl_calendar_of_task(hl_conn *c, orr_arena *a, int64_t task_id, const orr_cal **out,
                               orr_cal_policy *policy, orr_err *err);
/* Why is it waiting, team quotas, task type limits (hl_api_resources.c). */
HL_UNARY(hl_api_put_blockers);
HL_UNARY(hl_api_get_blockers);
HL_UNARY(hl_api_put_team_quota);
HL_UNARY(hl_api_list_team_quotas);
HL_UNARY(hl_api_put_type_limits);
HL_UNARY(hl_api_list_type_limits);
/* Workflows (hl_api_workflows.c). */
HL_UNARY(hl_api_put_workflow);
HL_UNARY(hl_api_get_workflow);
HL_UNARY(hl_api_list_workflows);
/* Run history of a workflow (hl_api_history.c). */
HL_UNARY(hl_api_list_workflow_runs);
HL_UNARY(hl_api_get_workflow_run);
HL_UNARY(hl_api_set_workflow_paused);
HL_UNARY(hl_api_list_paused_tasks);
/* Task name completion (hl_api_tasks_suggest.c). */
HL_UNARY(hl_api_suggest_tasks);
/* Code packages and deployments (hl_api_packages.c). */
HL_UNARY(hl_api_create_code_package);
HL_UNARY(hl_api_get_code_package);
HL_UNARY(hl_api_list_code_packages);
HL_UNARY(hl_api_report_deployment);
/* The audit log (hl_api_audit.c). */
HL_UNARY(hl_api_list_audit);
/* Sort streams (hl_api_streams.c). */
HL_UNARY(hl_api_put_sort_stream);
HL_UNARY(hl_api_get_sort_stream);
HL_UNARY(hl_api_list_sort_streams);
/* Data units (hl_api_units.c). */
HL_UNARY(hl_api_report_data_unit);
HL_UNARY(hl_api_list_data_units);
/* Lineage (hl_api_lineage.c). */
HL_UNARY(hl_api_add_lineage);
HL_UNARY(hl_api_list_lineage);
HL_UNARY(hl_api_suggest_lineage_nodes);
HL_UNARY(hl_api_report_run_lineage);
struct hl_spec;
/* Replace task_id's save-time lineage edges by those its spec implies
 * (dependencies; a transfer's tables and columns), on c inside the caller's
 * transaction. Errors are the database's. */
orr_status hl_lineage_save_task(hl_conn *c, orr_arena *a, int64_t task_id, const struct hl_spec *sp,
                                orr_err *err);
/* Replace sort stream name's edges by those of its spec (JSON text; none
 * when active is 0), inside the caller's transaction. */
orr_status hl_lineage_save_stream(hl_conn *c, orr_arena *a, const char *name, const char *spec,
                                  int active, orr_err *err);
/* Process statistics (hl_api_process_stats.c). */
HL_UNARY(hl_api_record_process_stats);
HL_UNARY(hl_api_list_process_stats);
HL_UNARY(hl_api_record_transfer_progress);
HL_UNARY(hl_api_get_transfer_progress);
/* Transfer watermarks (hl_api_watermarks.c). */
HL_UNARY(hl_api_get_watermark);
HL_UNARY(hl_api_put_watermark);
/* Sessions (hl_api_sessions.c). */
HL_UNARY(hl_api_revoke_session);
HL_UNARY(hl_api_list_revoked_sessions);
HL_UNARY(hl_api_check_session);
/* A new session of user_id lasting ttl_ms, on c (the caller's transaction or
 * autocommit); *sid gets its id (arena). Expired sessions are purged a few
 * at a time. */
orr_status hl_session_create(hl_conn *c, orr_arena *a, int64_t user_id, int64_t ttl_ms,
                             const char *client, const char **sid, orr_err *err);
/* End every live session of user_id (reason goes to the rows and the
 * event) and emit "session.revoked" for them, inside the caller's
 * transaction. *revoked (may be NULL) gets how many ended. */
orr_status hl_sessions_revoke_user(hl_conn *c, orr_arena *a, int64_t user_id, const char *reason,
                                   int *revoked, orr_err *err);
orr_status hl_api_watch_events(orr_rpc_call *call, const ProtobufCMessage *req, orr_err *err,
                               void *ctx);
/* WatchEvents' reads of the events table since start, over all streams, and
 * how many of them also read the oldest writer to judge a gap in the ids. */
void hl_watch_stats(uint64_t *reads, uint64_t *gap_reads);

/* Checks of a transition request that need no database: ids, states, actor,
 * executor for dispatched, and legality in the state machine (ORR_ESTATE,
 * field "new_state"). ORR_OK or ORR_EINVAL naming the field. Pure; used by
 * the handler and the fuzz target. */
orr_status hl_transition_check(const hl_pb_transition_req *r, orr_err *err);

/* One transition on c as its own statement (hl_transition_check included).
 * ORR_OK with out filled (strings in arena a or in results it owns), or the
 * item's error: ORR_ENOTFOUND (no such instance), ORR_ECONFLICT (moved),
 * ORR_ESTATE / ORR_EINVAL (refused), ORR_EUNAVAIL. Does not report events. */
orr_status hl_transition_one(hl_conn *c, orr_arena *a, const hl_pb_transition_req *rq,
                             hl_pb_transition_res *out, orr_err *err);

/* The upstreams (down = 0) or downstreams (down = 1) of instance id, as the
 * scheduler's cycle mapping (orr_cycle) makes them: for each dependency edge
 * one entry per mapped cycle (at most 100), with its instance or instance_id
 * 0 when the cycle has none yet. *out and its entries are in arena a (strings
 * may point into results a owns). ORR_OK, or the database's error. */
orr_status hl_instance_deps(hl_conn *c, orr_arena *a, int64_t id, int down,
                            Orrery__Halley__V1__DepState ***out, size_t *n, orr_err *err);
/* Operators' runs (hl_api_runs.c). */
HL_UNARY(hl_api_run_now);
HL_UNARY(hl_api_rerun_instances);
HL_UNARY(hl_api_backfill);
/* Alerts: channels, rules, silences, raising, the outbox, the history
 * (hl_api_alerts.c). */
HL_UNARY(hl_api_put_alert_channel);
HL_UNARY(hl_api_list_alert_channels);
HL_UNARY(hl_api_delete_alert_channel);
HL_UNARY(hl_api_test_alert_channel);
HL_UNARY(hl_api_put_alert_rule);
HL_UNARY(hl_api_list_alert_rules);
HL_UNARY(hl_api_delete_alert_rule);
HL_UNARY(hl_api_put_alert_silence);
HL_UNARY(hl_api_list_alert_silences);
HL_UNARY(hl_api_delete_alert_silence);
HL_UNARY(hl_api_raise_alert);
HL_UNARY(hl_api_claim_deliveries);
HL_UNARY(hl_api_finish_delivery);
HL_UNARY(hl_api_list_alerts);

/* ------------------------------------------------------------ helpers */

/* An instance's parameter values (hl_api_instances.c). hl_params_parse:
 * text ("" = none) must be a JSON object of at most 64 strings (4096 bytes
 * each) under parameter names; *canon gets its compact form ("{}" for "");
 * ORR_EINVAL naming "params" or "params.<name>". hl_params_known:
 * ORR_EINVAL naming "params.<name>" for the first name of canon that
 * version (0 = current) of task_id does not declare. */
orr_status hl_params_parse(orr_arena *a, const char *text, const char **canon, orr_err *err);
orr_status hl_params_known(hl_conn *c, orr_arena *a, int64_t task_id, int32_t version,
                           const char *canon, orr_err *err);

/* gRPC status code of an orr_status (for per-item results of batch calls),
 * following the mapping of orr_rpc.h. */
int hl_grpc_code(orr_status s);

/* Insert an event and notify listeners, on c inside the caller's
 * transaction. payload is JSON text ("{}" if NULL); executor may be NULL.
 * *id (may be NULL) gets the event id. */
orr_status hl_emit(hl_conn *c, orr_arena *a, const char *kind, int64_t task_id, int64_t instance_id,
                   const char *executor, const char *payload, int64_t *id, orr_err *err);
/* Append an audit record inside the caller's transaction. */
orr_status hl_audit(hl_conn *c, orr_arena *a, const char *actor, const char *action,
                    const char *object, const char *detail_json, orr_err *err);

/* The longest name of an object (hl_is_name's max for most names). */
#define HL_NAME_MAX 128

/* An arena array of n elements of elem bytes (room for one when n is 0, so
 * a response's repeated field is never a NULL with a count of 0 to check). */
void *hl_alloc_n(orr_arena *a, size_t elem, size_t n);

/* Decimal text of v in the arena. */
const char *hl_i64s(orr_arena *a, int64_t v);
/* JSON string literal of s (quoted, escaped) in the arena. */
const char *hl_jstr(orr_arena *a, const char *s);
/* 1 if s is a name: 1..max bytes of [A-Za-z0-9_.-], starting with a letter or digit. */
int hl_is_name(const char *s, size_t max);

/* Milliseconds since 1970 (CLOCK_REALTIME). */
int64_t hl_now_ms(void);
/* 1 if s is 1..max bytes of printable ASCII without spaces. */
int hl_is_printable(const char *s, size_t max);
/* 1 if s is 1..max bytes with no control characters. */
int hl_is_text(const char *s, size_t max);
/* Split "a,b,c" (names, which hold no comma) into a string array in the
 * arena; *n_out gets the count (0 for ""). */
char **hl_split_names(orr_arena *a, const char *joined, size_t *n_out);
/* "{1,2,3}" in the arena: a PostgreSQL int8[] literal. */
const char *hl_id_array(orr_arena *a, const int64_t *ids, size_t n);
/* Check of a get-by-id-or-name request: id > 0 or a valid name (or both);
 * ORR_EINVAL naming "id" or "name" otherwise. */
orr_status hl_id_or_name(int64_t id, const char *name, orr_err *err);
/* Re-label err with field, prefixing its message with what; keeps status s
 * and returns it. */
orr_status hl_relabel(orr_err *err, orr_status s, const char *field, const char *what);
/* Copy the buffer's text into the arena and free the buffer. */
const char *hl_take(orr_arena *a, orr_buf *b);
/* Role enum from its stored name (ROLE_UNSPECIFIED if unknown). */
int hl_pb_role(const char *name);

/* InstanceState enum from a stored state name (UNSPECIFIED if unknown). */
int hl_pb_state(const char *name);

/* Fill an Instance from row r of a result whose first HL_INSTANCE_NCOLS + 1
 * columns are HL_INSTANCE_COLS followed by the current attempt's exit code
 * (NULL = none, HL_EXIT_COL for a read). Strings point into the result. */
void hl_fill_instance(orr_arena *a, const PGresult *r, int row, hl_pb_instance *out);
/* The same from a binary result (HL_STMT_LIST) whose columns are
 * HL_INSTANCE_RAW_COLS and the exit code: the lists' form. */
void hl_fill_instance_bin(const PGresult *r, int row, hl_pb_instance *out);
/* The text of a list statement that runs under its generic plan, by name
 * ("all", "desc_first", "desc_after", "task_desc_first",
 * "task_desc_after", "range_desc_first", "range_desc_after",
 * "states_desc", "states_asc", "search_desc", "search_asc"; NULL for
 * another): for the test that checks each walk stops at its page
 * (it_lists.c). */
const char *hl_list_sql(const char *name);
/* The bound a text search's walk is given: none (INT64_MAX), a parameter
 * only so that PostgreSQL cannot see it (q_list_search_*). */
#define HL_SEARCH_NO_BOUND "9223372036854775807"
/* Exit code of the current attempt of instance alias i (column HL_INSTANCE_NCOLS of a
 * read): kept on the instance's row by the transition statements
 * (migrations/0021_instance_exit_code.sql), not looked up in attempts. */
#define HL_EXIT_COL "i.exit_code"
#define HL_MS(x)    "(extract(epoch from " x ") * 1000)::int8"
/* clang-format off */
#define HL_INSTANCE_COLS                                                                           \
    "i.id, i.task_id, t.name, i.task_version, " HL_MS("i.schedule_time") ", i.state, i.attempt, "  \
    "i.executor, i.priority, " HL_MS("i.created_at") ", " HL_MS("i.updated_at") ", "               \
    HL_MS("i.started_at") ", " HL_MS("i.finished_at") ", i.reason, i.run_now, "                    \
    "i.ignore_upstreams, coalesce(i.backfill_id, 0), " HL_MS("i.backfill_cycle") ", "              \
    "i.backfill_cycles"
/* clang-format on */
/* HL_INSTANCE_COLS as the table stores them, for a binary result: the
 * timestamps as timestamps, which hl_bin_ms turns into HL_MS's value, so
 * PostgreSQL neither computes nor prints them (columns in the same order). */
#define HL_INSTANCE_RAW_COLS                                                                       \
    "i.id, i.task_id, t.name, i.task_version, i.schedule_time, i.state, i.attempt, i.executor, "   \
    "i.priority, i.created_at, i.updated_at, i.started_at, i.finished_at, i.reason, i.run_now, "   \
    "i.ignore_upstreams, coalesce(i.backfill_id, 0), i.backfill_cycle, i.backfill_cycles"
/* How many columns HL_INSTANCE_COLS has: the exit code (HL_EXIT_COL) follows
 * at this index, and an event id, where a statement returns one, after it. */
#define HL_INSTANCE_NCOLS 19

#endif
