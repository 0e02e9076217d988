/*
 * hl_service.c - the one method table of the Halley service.
 *
 * Worker methods (hl_worker_methods) pass the runtime without the service
 * token; they are registered through hl__worker_gate, which settles who the
 * caller is (hl_worker_auth: UNAUTHENTICATED for an unidentified caller,
 * PERMISSION_DENIED for an identified one without the right) before their
 * handler runs. A worker method is one line in each of the two tables below.
 */
#include <string.h>

#include "hl_api.h"

static const struct {
    const char *name;
    orr_rpc_unary_fn fn;
} hl_worker_handlers[] = {
    {"GetDataSourceSecret", hl_api_get_data_source_secret},
};

static HL_UNARY(hl__worker_gate)
{
    orr_status s = hl_worker_auth(ctx, orr_rpc_call_bearer(call), err);
    if (s != ORR_OK)
        return s;
    const char *m = orr_rpc_call_method(call);
    for (size_t i = 0; i < sizeof hl_worker_handlers / sizeof hl_worker_handlers[0]; i++)
        if (strcmp(hl_worker_handlers[i].name, m) == 0)
            return hl_worker_handlers[i].fn(call, req, resp, err, ctx);
    return orr_err_set(err, ORR_EINTERNAL, NULL, "no handler for worker method %s", m);
}

const orr_rpc_method hl_methods[] = {
    {"Health", hl_api_health, NULL},
    {"CreateTask", hl_api_create_task, NULL},
    {"GetTask", hl_api_get_task, NULL},
    {"ListTasks", hl_api_list_tasks, NULL},
    {"UpdateTask", hl_api_update_task, NULL},
    {"DeactivateTask", hl_api_deactivate_task, NULL},
    {"ListTaskVersions", hl_api_list_task_versions, NULL},
    {"RollbackTask", hl_api_rollback_task, NULL},
    {"ReactivateTask", hl_api_reactivate_task, NULL},
    {"SetInstanceParams", hl_api_set_instance_params, NULL},
    {"CreateInstances", hl_api_create_instances, NULL},
    {"GetInstance", hl_api_get_instance, NULL},
    {"GetInstances", hl_api_get_instances, NULL},
    {"ListInstances", hl_api_list_instances, NULL},
    {"ListReadyInstances", hl_api_list_ready_instances, NULL},
    {"TransitionInstance", hl_api_transition_instance, NULL},
    {"TransitionInstances", hl_api_transition_instances, NULL},
    {"ListTransitions", hl_api_list_transitions, NULL},
    {"PutPool", hl_api_put_pool, NULL},
    {"GetPool", hl_api_get_pool, NULL},
    {"ListPools", hl_api_list_pools, NULL},
    {"AcquireTokens", hl_api_acquire_tokens, NULL},
    {"ReleaseTokens", hl_api_release_tokens, NULL},
    {"WatchEvents", NULL, hl_api_watch_events},
    {"CreateTeam", hl_api_create_team, NULL},
    {"CreateUser", hl_api_create_user, NULL},
    {"GetUser", hl_api_get_user, NULL},
    {"Authenticate", hl_api_authenticate, NULL},
    {"PutDataSource", hl_api_put_data_source, NULL},
    {"GetDataSource", hl_api_get_data_source, NULL},
    {"ListUsers", hl_api_list_users, NULL},
    {"ListTeams", hl_api_list_teams, NULL},
    {"ListAttempts", hl_api_list_attempts, NULL},
    {"InstanceStats", hl_api_instance_stats, NULL},
    {"GetDataSourceSecret", hl__worker_gate, NULL},
    {"ListDataSources", hl_api_list_data_sources, NULL},
    {"GetDataSourceMeta", hl_api_get_data_source_meta, NULL},
    {"PutDataSourceMeta", hl_api_put_data_source_meta, NULL},
    {"CreateApiToken", hl_api_create_api_token, NULL},
    {"ListApiTokens", hl_api_list_api_tokens, NULL},
    {"RevokeApiToken", hl_api_revoke_api_token, NULL},
    {"AuthenticateApiToken", hl_api_authenticate_api_token, NULL},
    {"RevokeSession", hl_api_revoke_session, NULL},
    {"UpdateUser", hl_api_update_user, NULL},
    {"ListRevokedSessions", hl_api_list_revoked_sessions, NULL},
    {"CheckSession", hl_api_check_session, NULL},
    {"RunNow", hl_api_run_now, NULL},
    {"RerunInstances", hl_api_rerun_instances, NULL},
    {"Backfill", hl_api_backfill, NULL},
    {"PutExecutor", hl_api_put_executor, NULL},
    {"ListExecutors", hl_api_list_executors, NULL},
    {"UpdateExecutor", hl_api_update_executor, NULL},
    {"PutBlockers", hl_api_put_blockers, NULL},
    {"GetBlockers", hl_api_get_blockers, NULL},
    {"PutTeamQuota", hl_api_put_team_quota, NULL},
    {"ListTeamQuotas", hl_api_list_team_quotas, NULL},
    {"PutCalendar", hl_api_put_calendar, NULL},
    {"GetCalendar", hl_api_get_calendar, NULL},
    {"ListCalendars", hl_api_list_calendars, NULL},
    {"DeleteCalendar", hl_api_delete_calendar, NULL},
    {"PutCalendarDays", hl_api_put_calendar_days, NULL},
    {"PutTypeLimits", hl_api_put_type_limits, NULL},
    {"ListTypeLimits", hl_api_list_type_limits, NULL},
    {"PutWorkflow", hl_api_put_workflow, NULL},
    {"GetWorkflow", hl_api_get_workflow, NULL},
    {"ListWorkflows", hl_api_list_workflows, NULL},
    {"SetWorkflowPaused", hl_api_set_workflow_paused, NULL},
    {"ListPausedTasks", hl_api_list_paused_tasks, NULL},
    {"SuggestTasks", hl_api_suggest_tasks, NULL},
    {"CreateCodePackage", hl_api_create_code_package, NULL},
    {"GetCodePackage", hl_api_get_code_package, NULL},
    {"ListCodePackages", hl_api_list_code_packages, NULL},
    {"ReportDeployment", hl_api_report_deployment, NULL},
    {"ListAudit", hl_api_list_audit, NULL},
    {"PutSortStream", hl_api_put_sort_stream, NULL},
    {"GetSortStream", hl_api_get_sort_stream, NULL},
    {"ListSortStreams", hl_api_list_sort_streams, NULL},
    {"ReportDataUnit", hl_api_report_data_unit, NULL},
    {"ListDataUnits", hl_api_list_data_units, NULL},
    {"AddLineage", hl_api_add_lineage, NULL},
    {"ListLineage", hl_api_list_lineage, NULL},
    {"SuggestLineageNodes", hl_api_suggest_lineage_nodes, NULL},
    {"ReportRunLineage", hl_api_report_run_lineage, NULL},
    {"RecordProcessStats", hl_api_record_process_stats, NULL},
    {"ListProcessStats", hl_api_list_process_stats, NULL},
    {"RecordTransferProgress", hl_api_record_transfer_progress, NULL},
    {"GetTransferProgress", hl_api_get_transfer_progress, NULL},
    {"GetWatermark", hl_api_get_watermark, NULL},
    {"PutWatermark", hl_api_put_watermark, NULL},
    {"ListWorkflowRuns", hl_api_list_workflow_runs, NULL},
    {"GetWorkflowRun", hl_api_get_workflow_run, NULL},
    {"PutAlertChannel", hl_api_put_alert_channel, NULL},
    {"ListAlertChannels", hl_api_list_alert_channels, NULL},
    {"DeleteAlertChannel", hl_api_delete_alert_channel, NULL},
    {"TestAlertChannel", hl_api_test_alert_channel, NULL},
    {"PutAlertRule", hl_api_put_alert_rule, NULL},
    {"ListAlertRules", hl_api_list_alert_rules, NULL},
    {"DeleteAlertRule", hl_api_delete_alert_rule, NULL},
    {"PutAlertSilence", hl_api_put_alert_silence, NULL},
    {"ListAlertSilences", hl_api_list_alert_silences, NULL},
    {"DeleteAlertSilence", hl_api_delete_alert_silence, NULL},
    {"RaiseAlert", hl_api_raise_alert, NULL},
    {"ClaimDeliveries", hl_api_claim_deliveries, NULL},
    {"FinishDelivery", hl_api_finish_delivery, NULL},
    {"ListAlerts", hl_api_list_alerts, NULL},
};
const size_t hl_methods_count = sizeof hl_methods / sizeof hl_methods[0];

const char *const hl_worker_methods[] = {"GetDataSourceSecret", NULL};
