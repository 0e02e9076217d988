/* gx_routes.c - every route of galaxyd in one table: method, path, handler,
 * the least role that may call it, and a summary. The OpenAPI document
 * (static/openapi.json) must describe each of them; a test checks it
 * (`galaxyd routes` prints this table). */
#include "gx_app.h"

const gx_route gx_routes[] = {
    /* operations, no login */
    {"GET", "/healthz", gx_h_healthz, GX_ROLE_NONE, "Liveness and Halley reachability"},
    {"GET", "/metrics", gx_h_metrics, GX_ROLE_NONE, "Prometheus metrics"},
    {"GET", "/api/v1/openapi.json", gx_h_openapi, GX_ROLE_NONE, "This API's OpenAPI 3 document"},
    /* sessions */
    {"POST", "/api/v1/auth/login", gx_h_login, GX_ROLE_NONE, "Log in; returns a session token"},
    {"POST", "/api/v1/auth/logout", gx_h_logout, GX_ROLE_NONE,
     "End the caller's session on every galaxyd and clear the cookie"},
    {"POST", "/api/v1/auth/password", gx_h_password, GX_ROLE_VIEWER,
     "Change one's own password: every session of the user ends; a new one is returned"},
    {"GET", "/api/v1/auth/me", gx_h_me, GX_ROLE_VIEWER, "The logged-in user"},
    /* tasks */
    {"GET", "/api/v1/tasks", gx_h_tasks_list, GX_ROLE_VIEWER, "List tasks"},
    /* before /tasks/{id}: the first matching route answers */
    {"GET", "/api/v1/tasks/suggest", gx_h_tasks_suggest, GX_ROLE_VIEWER,
     "Active tasks whose name contains a text, for type-ahead filters"},
    {"POST", "/api/v1/tasks", gx_h_task_create, GX_ROLE_DEVELOPER, "Create a task"},
    {"POST", "/api/v1/tasks/validate", gx_h_task_validate, GX_ROLE_VIEWER,
     "Check a task spec without saving it"},
    {"GET", "/api/v1/tasks/{id}", gx_h_task_get, GX_ROLE_VIEWER, "A task's current version"},
    {"PUT", "/api/v1/tasks/{id}", gx_h_task_update, GX_ROLE_DEVELOPER,
     "Update a task (writes a new version)"},
    {"DELETE", "/api/v1/tasks/{id}", gx_h_task_delete, GX_ROLE_DEVELOPER, "Deactivate a task"},
    {"GET", "/api/v1/tasks/{id}/versions/{version}", gx_h_task_version, GX_ROLE_VIEWER,
     "One version of a task"},
    {"POST", "/api/v1/tasks/{id}/backfill", gx_h_task_backfill, GX_ROLE_DEVELOPER,
     "Create the task's instances for every fire time in a date range"},
    {"GET", "/api/v1/schedule/next", gx_h_schedule_next, GX_ROLE_VIEWER,
     "Next fire times of a cron expression in a time zone"},
    /* instances */
    {"GET", "/api/v1/instances", gx_h_instances_list, GX_ROLE_VIEWER, "List instances"},
    {"GET", "/api/v1/instances/{id}", gx_h_instance_get, GX_ROLE_VIEWER,
     "An instance with its dependencies and transitions"},
    {"POST", "/api/v1/instances/{id}/actions/{action}", gx_h_instance_action, GX_ROLE_DEVELOPER,
     "Rerun, suspend, resume, mark-success or kill an instance"},
    {"POST", "/api/v1/instances/actions", gx_h_instances_bulk, GX_ROLE_DEVELOPER,
     "Apply one action to many instances"},
    {"GET", "/api/v1/instances/{id}/log", gx_h_instance_log, GX_ROLE_VIEWER,
     "An attempt's log: one chunk, or Server-Sent Events that follow it"},
    {"GET", "/api/v1/executors", gx_h_executors, GX_ROLE_VIEWER,
     "Executors: inventory (slots, labels, last seen) merged with liveness"},
    {"GET", "/api/v1/instances/{id}/stats", gx_h_instance_stats, GX_ROLE_VIEWER,
     "Process statistics of an instance's attempts"},
    {"GET", "/api/v1/tasks/{id}/stats", gx_h_task_stats, GX_ROLE_VIEWER,
     "Process statistics of the task's newest instances"},
    /* administration */
    {"GET", "/api/v1/pools", gx_h_pools_list, GX_ROLE_VIEWER, "Resource pools and their usage"},
    {"PUT", "/api/v1/pools/{name}", gx_h_pool_put, GX_ROLE_ADMIN,
     "Create a pool or change its capacity"},
    {"GET", "/api/v1/users", gx_h_users_list, GX_ROLE_VIEWER, "List users"},
    {"GET", "/api/v1/teams", gx_h_teams_list, GX_ROLE_VIEWER, "List teams"},
    {"GET", "/api/v1/stats/instances", gx_h_stats_instances, GX_ROLE_VIEWER,
     "Instance outcomes over time and the queue right now"},
    {"POST", "/api/v1/users", gx_h_users_create, GX_ROLE_ADMIN, "Create a user"},
    {"GET", "/api/v1/users/{name}", gx_h_user_get, GX_ROLE_VIEWER, "A user"},
    {"PATCH", "/api/v1/users/{name}", gx_h_user_update, GX_ROLE_ADMIN,
     "Change a user's role, teams, password or whether it is active; its sessions end"},
    {"POST", "/api/v1/teams", gx_h_teams_create, GX_ROLE_ADMIN, "Create a team"},
    {"GET", "/api/v1/datasources/{name}", gx_h_datasource_get, GX_ROLE_VIEWER,
     "A data source (never its password)"},
    {"PUT", "/api/v1/datasources/{name}", gx_h_datasource_put, GX_ROLE_ADMIN,
     "Create or replace a data source"},
    {"GET", "/api/v1/datasources", gx_h_datasources_list, GX_ROLE_VIEWER,
     "Data sources (never their passwords)"},
    {"POST", "/api/v1/datasources/{name}/test", gx_h_datasource_test, GX_ROLE_ADMIN,
     "Try to connect to a data source"},
    {"GET", "/api/v1/audit", gx_h_audit, GX_ROLE_ADMIN, "The audit log, newest first"},
    /* API tokens */
    {"GET", "/api/v1/tokens", gx_h_tokens_list, GX_ROLE_VIEWER, "API tokens"},
    {"POST", "/api/v1/tokens", gx_h_token_create, GX_ROLE_VIEWER,
     "Create an API token (its secret is shown once)"},
    {"DELETE", "/api/v1/tokens/{id}", gx_h_token_revoke, GX_ROLE_VIEWER, "Revoke an API token"},
    /* workflows and code */
    {"GET", "/api/v1/workflows", gx_h_workflows_list, GX_ROLE_VIEWER, "List workflows"},
    {"GET", "/api/v1/workflows/{name}", gx_h_workflow_get, GX_ROLE_VIEWER,
     "A workflow with its tasks, their dependencies and latest states"},
    {"PUT", "/api/v1/workflows/{name}", gx_h_workflow_put, GX_ROLE_DEVELOPER,
     "Create or replace a workflow"},
    {"GET", "/api/v1/workflows/{name}/runs", gx_h_workflow_runs, GX_ROLE_VIEWER,
     "Run history: the workflow's newest cycles and each task's instance in them"},
    {"GET", "/api/v1/workflows/{name}/runs/{cycle}", gx_h_workflow_run, GX_ROLE_VIEWER,
     "One cycle of a workflow: each task's instance, its queued and running spans, the edges"},
    {"PATCH", "/api/v1/workflows/{name}", gx_h_workflow_patch, GX_ROLE_DEVELOPER,
     "Change a workflow's description or owning team"},
    {"POST", "/api/v1/workflows/{name}/pause", gx_h_workflow_pause, GX_ROLE_DEVELOPER,
     "Pause a workflow: no new instances of its tasks are created or dispatched"},
    {"POST", "/api/v1/workflows/{name}/resume", gx_h_workflow_resume, GX_ROLE_DEVELOPER,
     "Resume a paused workflow"},
    {"GET", "/api/v1/packages", gx_h_packages_list, GX_ROLE_VIEWER,
     "Code packages and their deployments"},
    {"POST", "/api/v1/packages", gx_h_package_upload, GX_ROLE_DEVELOPER,
     "Upload a code package (.tar.gz) for every executor"},
    /* streams and data */
    {"GET", "/api/v1/streams", gx_h_streams_list, GX_ROLE_VIEWER, "Sort streams"},
    {"GET", "/api/v1/streams/{name}", gx_h_stream_get, GX_ROLE_VIEWER, "A sort stream"},
    {"PUT", "/api/v1/streams/{name}", gx_h_stream_put, GX_ROLE_ADMIN,
     "Create or replace a sort stream and publish it to the sort engines"},
    {"GET", "/api/v1/streams/{name}/units", gx_h_stream_units, GX_ROLE_VIEWER,
     "A stream's data units: counts, check status, late records"},
    {"GET", "/api/v1/lineage", gx_h_lineage, GX_ROLE_VIEWER,
     "Lineage edges around a table, file, data unit or task"},
    /* operators' runs */
    {"POST", "/api/v1/tasks/{id}/run", gx_h_task_run, GX_ROLE_DEVELOPER,
     "Run the task's instance of one schedule time now (created if missing, released if waiting)"},
    {"POST", "/api/v1/instances/{id}/rerun", gx_h_instance_rerun, GX_ROLE_DEVELOPER,
     "Rerun an instance alone or with its downstream or upstream instances of the same cycle"},
    {"POST", "/api/v1/workflows/{name}/rerun-failed", gx_h_workflow_rerun_failed, GX_ROLE_DEVELOPER,
     "Rerun the failed instances of one cycle of a workflow"},
};

const size_t gx_nroutes = sizeof(gx_routes) / sizeof(gx_routes[0]);

size_t gx_route_spool_max(void *app, const gx_route *rt)
{
    return rt->fn == gx_h_package_upload ? ((gx_app *)app)->max_package : 0;
}
