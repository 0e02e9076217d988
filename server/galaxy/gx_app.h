/*
 * gx_app.h - galaxyd's application: configuration, the Halley client, the
 * session secret, and the helpers every API handler shares (authorisation,
 * Halley calls that answer errors for the handler, JSON shapes).
 *
 * galaxyd keeps no state of its own: users, tasks and instances live in
 * halleyd; sessions are signed tokens; API tokens are checked by halleyd and
 * only remembered for GX_TOKCACHE_TTL_S seconds; so any number of copies can
 * run behind nginx.
 */
#ifndef GX_APP_H
#define GX_APP_H

#include <jansson.h>
#include <stdint.h>

#include "gx_http.h"
#include "gx_input.h"
#include "gx_paused.h" /* gx_paused_mark */
#include "gx_ratelimit.h"
#include "gx_session.h"
#include "orr_config.h"
#include "orr_halley.h" /* HL(Task), HL_INIT(TASK), HL_STATE, HL_ROLE */
#include "orr_rpc.h"
#include "orr_zk.h"

typedef struct gx_app {
    orr_config *cfg;
    orr_rpc_client *halley;
    unsigned char jwt_secret[128];
    size_t jwt_secret_len;
    int64_t session_ttl_s;
    int cookie_secure;
    int rpc_timeout_ms;
    gx_ratelimit *login_by_pair;   /* failed logins per account and client */
    gx_ratelimit *login_by_client; /* per client, across accounts */
    gx_ratelimit *login_by_user;   /* per account, across clients it never logged in from */
    gx_ratelimit *login_known;     /* account+client pairs that logged in lately */
    gx_server *server;
    const char *openapi_path;
    struct orr_jschema *task_schema; /* schema/task.schema.json, for validate */
    orr_zk *zk;                      /* live executors; NULL without [galaxy] zk */
    const char *zk_hosts;            /* [galaxy] zk ("" = none), for publishing */
    orr_rpc_client *halley_worker;   /* worker-token client for GetDataSourceSecret; NULL
                                        without [galaxy] datasource_test_token */
    const char *blob_root;           /* [galaxy] blob_root as configured (a URL or path) */
    struct orr_blob *blob;           /* that store once opened: use gx_blob() */
    size_t max_package;              /* [galaxy] max_package: largest code-package upload */
    struct gx_tokcache *tokcache;    /* API tokens seen lately (gx_api_tokens.c) */
    gx_sessions *sessions;           /* ended login sessions (gx_session.h) */
    struct gx_paused *paused;        /* tasks of paused workflows, kept (gx_paused.h) */
} gx_app;

/* The route table (gx_routes.c). */
extern const gx_route gx_routes[];
extern const size_t gx_nroutes;
/* gx_server_opts.spool_max: the routes whose bodies go to a temporary file
 * (code-package uploads), with their size limits. */
size_t gx_route_spool_max(void *app, const gx_route *rt);

/* Authentication hook for gx_server: session cookie "orrery_session" or
 * "Authorization: Bearer <token>"; 401 without a valid token, 403 when the
 * role is below the route's. */
int gx_auth_check(gx_req *req, gx_resp *resp);

/* 1 if the caller may change things owned by team (admin, or a developer in
 * that team). Otherwise answers 403 into resp and returns 0. */
int gx_require_team(gx_req *req, gx_resp *resp, const char *team);

/* The blob store of [galaxy] blob_root (code packages, archived logs),
 * opened at its first use: galaxyd starts without it, and a store that
 * cannot be opened (HDFS down) is tried again at the next call. NULL with
 * err set (field "galaxy.blob_root") on failure. Thread-safe; may block on
 * the network while it opens. Closed by galaxyd at exit. */
struct orr_blob *gx_blob(gx_app *app, orr_err *err);

/* "user:alice" for audit fields; arena string. */
const char *gx_actor(gx_req *req);

/* Call Halley's method. On success *out is the reply, in the request's arena
 * (gone with the request; never freed on its own).
 * On failure answers the mapped error into resp (503 when Halley is down, 501
 * when this halleyd does not implement the method yet) and returns the status. */
orr_status gx_halley(gx_req *req, gx_resp *resp, const char *method, const ProtobufCMessage *in,
                     ProtobufCMessage **out);

/* Authenticate an API token ("orr_..."): from the cache when it was seen in
 * the last GX_TOKCACHE_TTL_S seconds, else with Halley's AuthenticateApiToken.
 * Fills req->who (arena strings). ORR_EAUTH for an unknown, revoked or
 * expired token; ORR_EUNAVAIL when Halley cannot be asked; err says why. */
#define GX_TOKCACHE_TTL_S 30
#define GX_TOKCACHE_SLOTS 512
orr_status gx_token_authenticate(gx_req *req, const char *token, orr_err *err);
/* The token cache (bounded, keyed by the SHA-256 of the token). create
 * returns NULL on out-of-memory; flush forgets every entry (after a revoke). */
struct gx_tokcache *gx_tokcache_create(void);
void gx_tokcache_flush(struct gx_tokcache *c);
void gx_tokcache_destroy(struct gx_tokcache *c);

/* Halley role -> galaxyd role (GX_ROLE_NONE when unknown). */
gx_role gx_role_of(Orrery__Halley__V1__Role r);

/* Path parameter i as an id (gx_parse_id: digits only, no sign, spaces or
 * leading zero); answers 400 naming field and returns 0 when it is not one. */
int64_t gx_param_id(gx_req *req, gx_resp *resp, int i, const char *field);

/* One paging scheme for every REST list that can grow: ?limit (1..1000,
 * default 100) and ?page_token (the previous page's next_page_token, opaque);
 * the answer is {"items": [...], "next_page_token": "..." or null}.
 *
 * gx_page_answer: for the lists halleyd answers whole (pools, teams, data
 * sources, streams, workflows, API tokens: small and admin-made), the page
 * is cut here: items is sorted by its member key (a string, or an integer
 * when numeric), the rows after the token's key are kept, at most limit of
 * them, and the token of the last one is the next. Answers 200 with the page
 * (steals items), or 400 naming limit / page_token (items freed). */
void gx_page_answer(gx_req *req, gx_resp *resp, const char *list, json_t *items, const char *key,
                    int numeric);

/* 1 if s is a safe object name (orr_name.h: 1..128 of [A-Za-z0-9_.-], the
 * first a letter or digit).
 * Otherwise answers 400 naming field and returns 0. */
int gx_check_name(gx_resp *resp, const char *s, const char *field);

/* Instance states: "waiting" <-> enum; NULL / 0 when unknown. */
const char *gx_state_name(Orrery__Halley__V1__InstanceState s);
Orrery__Halley__V1__InstanceState gx_state_parse(const char *name);

/* ISO-8601 UTC ("2026-11-30T10:00:00Z") of epoch milliseconds; JSON null for 0. */
json_t *gx_json_time(int64_t ms);

json_t *gx_task_json(const Orrery__Halley__V1__Task *t);
json_t *gx_instance_json(const Orrery__Halley__V1__Instance *in);
/* The same instance with its "paused" member (gx_paused_mark of map), as
 * JSON text appended to b: the bytes orr_json_dump_buf would make of that
 * tree, written without one (gx_instance_json.c). */
void gx_instance_write(orr_buf *b, const Orrery__Halley__V1__Instance *in, const json_t *paused);
/* The list answer {"items": [...], "next_page_token": "..." or null} of rs,
 * each item as gx_instance_write makes it, appended to b. */
void gx_instances_write(orr_buf *b, const Orrery__Halley__V1__ListInstancesResponse *rs,
                        const json_t *paused);
json_t *gx_user_json(const Orrery__Halley__V1__User *u);

/* Handlers, by area. */
/* The caller's token: "Authorization: Bearer <token>" (the scheme in any
 * case), else the session cookie (*cookie set to 1); NULL when neither. */
const char *gx_req_token(gx_req *req, int *cookie);

void gx_h_login(gx_req *, gx_resp *);
void gx_h_logout(gx_req *, gx_resp *);
void gx_h_password(gx_req *, gx_resp *);
void gx_h_user_update(gx_req *, gx_resp *);
void gx_h_me(gx_req *, gx_resp *);
void gx_h_tasks_list(gx_req *, gx_resp *);
void gx_h_task_create(gx_req *, gx_resp *);
void gx_h_task_get(gx_req *, gx_resp *);
void gx_h_task_version(gx_req *, gx_resp *);
void gx_h_task_update(gx_req *, gx_resp *);
void gx_h_task_delete(gx_req *, gx_resp *);
void gx_h_task_validate(gx_req *, gx_resp *);
void gx_h_schedule_next(gx_req *, gx_resp *);
void gx_h_task_backfill(gx_req *, gx_resp *);
void gx_h_task_run(gx_req *, gx_resp *);
void gx_h_instance_rerun(gx_req *, gx_resp *);
void gx_h_workflow_rerun_failed(gx_req *, gx_resp *);
/* gx_api_versions.c */
void gx_h_task_versions(gx_req *, gx_resp *);
void gx_h_task_diff(gx_req *, gx_resp *);
void gx_h_task_rollback(gx_req *, gx_resp *);
void gx_h_task_reactivate(gx_req *, gx_resp *);
void gx_h_instance_params(gx_req *, gx_resp *);
/* The object body[key] of parameter values (absent or null: "") as compact
 * JSON in the request's arena; NULL after answering 400 naming key or
 * key.<name>. */
const char *gx_params_text(gx_req *req, json_t *body, const char *key, gx_resp *resp);
void gx_h_instances_list(gx_req *, gx_resp *);
void gx_h_instance_get(gx_req *, gx_resp *);
void gx_h_instance_action(gx_req *, gx_resp *);
void gx_h_instances_bulk(gx_req *, gx_resp *);
void gx_h_instance_log(gx_req *, gx_resp *);
void gx_h_instance_log_download(gx_req *, gx_resp *);
void gx_h_pools_list(gx_req *, gx_resp *);
void gx_h_pool_put(gx_req *, gx_resp *);
void gx_h_users_create(gx_req *, gx_resp *);
void gx_h_users_list(gx_req *, gx_resp *);
void gx_h_teams_list(gx_req *, gx_resp *);
void gx_h_stats_instances(gx_req *, gx_resp *);
void gx_h_user_get(gx_req *, gx_resp *);
void gx_h_teams_create(gx_req *, gx_resp *);
void gx_h_datasource_get(gx_req *, gx_resp *);
void gx_h_datasource_put(gx_req *, gx_resp *);
void gx_h_healthz(gx_req *, gx_resp *);
/* third round */
void gx_h_tokens_list(gx_req *, gx_resp *);
void gx_h_token_create(gx_req *, gx_resp *);
void gx_h_token_revoke(gx_req *, gx_resp *);
void gx_h_datasources_list(gx_req *, gx_resp *);
void gx_h_datasource_test(gx_req *, gx_resp *);
void gx_h_executors(gx_req *, gx_resp *);
void gx_h_instance_blockers(gx_req *, gx_resp *);
void gx_h_executor_update(gx_req *, gx_resp *);
/* gx_api_calendars.c */
void gx_h_calendars_list(gx_req *, gx_resp *);
void gx_h_calendar_create(gx_req *, gx_resp *);
void gx_h_calendar_get(gx_req *, gx_resp *);
void gx_h_calendar_update(gx_req *, gx_resp *);
void gx_h_calendar_delete(gx_req *, gx_resp *);
void gx_h_calendar_import(gx_req *, gx_resp *);
void gx_h_calendar_days(gx_req *, gx_resp *);
/* The calendar named name with all its days, from halleyd; 1 and *out
 * (orr_cal_free it), or 0 after answering the error (404 naming "name"). */
struct orr_cal;
int gx_calendar_load(gx_req *req, gx_resp *resp, const char *name, struct orr_cal **out);
void gx_h_quotas_list(gx_req *, gx_resp *);
void gx_h_quota_put(gx_req *, gx_resp *);
void gx_h_type_limits_list(gx_req *, gx_resp *);
void gx_h_type_limits_put(gx_req *, gx_resp *);
void gx_h_instance_stats(gx_req *, gx_resp *);
void gx_h_instance_progress(gx_req *, gx_resp *);
void gx_h_task_stats(gx_req *, gx_resp *);
void gx_h_workflows_list(gx_req *, gx_resp *);
void gx_h_workflow_get(gx_req *, gx_resp *);
void gx_h_workflow_put(gx_req *, gx_resp *);
void gx_h_workflow_runs(gx_req *, gx_resp *);
void gx_h_workflow_run(gx_req *, gx_resp *);
/* Workflows as objects, task name completion (gx_api_workflows.c). */
void gx_h_workflow_patch(gx_req *, gx_resp *);
void gx_h_workflow_pause(gx_req *, gx_resp *);
void gx_h_workflow_resume(gx_req *, gx_resp *);
void gx_h_tasks_suggest(gx_req *, gx_resp *);
json_t *gx_workflow_json(const Orrery__Halley__V1__Workflow *w);
/* The tasks held by paused workflows as a JSON object: task id (decimal) ->
 * {"workflow","by","at"}; new reference. NULL after answering resp (Halley
 * away). */
json_t *gx_paused_load(gx_req *req, gx_resp *resp);
void gx_h_packages_list(gx_req *, gx_resp *);

void gx_h_package_upload(gx_req *, gx_resp *);
void gx_h_streams_list(gx_req *, gx_resp *);
void gx_h_stream_get(gx_req *, gx_resp *);
void gx_h_stream_put(gx_req *, gx_resp *);
void gx_h_stream_units(gx_req *, gx_resp *);
void gx_h_lineage(gx_req *, gx_resp *);
void gx_h_lineage_names(gx_req *, gx_resp *);
void gx_h_audit(gx_req *, gx_resp *);
void gx_h_metrics(gx_req *, gx_resp *);
void gx_h_openapi(gx_req *, gx_resp *);
/* Alerts: channels, rules, silences, history (gx_api_alerts.c). */
void gx_h_alert_channels_list(gx_req *, gx_resp *);
void gx_h_alert_channel_create(gx_req *, gx_resp *);
void gx_h_alert_channel_get(gx_req *, gx_resp *);
void gx_h_alert_channel_update(gx_req *, gx_resp *);
void gx_h_alert_channel_delete(gx_req *, gx_resp *);
void gx_h_alert_channel_test(gx_req *, gx_resp *);
void gx_h_alert_rules_list(gx_req *, gx_resp *);
void gx_h_alert_rule_create(gx_req *, gx_resp *);
void gx_h_alert_rule_get(gx_req *, gx_resp *);
void gx_h_alert_rule_update(gx_req *, gx_resp *);
void gx_h_alert_rule_delete(gx_req *, gx_resp *);
void gx_h_alert_silences_list(gx_req *, gx_resp *);
void gx_h_alert_silence_create(gx_req *, gx_resp *);
void gx_h_alert_silence_delete(gx_req *, gx_resp *);
void gx_h_alerts_list(gx_req *, gx_resp *);

#endif
