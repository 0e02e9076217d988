/*
 * hl_service.c - the one method table of the Halley service.
 */
#include "hl_api.h"

const orr_rpc_method hl_methods[] = {
    {"Health", hl_api_health, NULL},
    {"CreateTask", hl_api_create_task, NULL},
    {"GetTask", hl_api_get_task, NULL},
    {"ListTasks", hl_api_list_tasks, NULL},
    {"UpdateTask", hl_api_update_task, NULL},
    {"DeactivateTask", hl_api_deactivate_task, NULL},
    {"CreateInstances", hl_api_create_instances, NULL},
    {"GetInstance", hl_api_get_instance, NULL},
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
    {"GetDataSourceSecret", hl_api_get_data_source_secret, NULL},
};
const size_t hl_methods_count = sizeof hl_methods / sizeof hl_methods[0];

const char *const hl_worker_methods[] = {"GetDataSourceSecret", NULL};
