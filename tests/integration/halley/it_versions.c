/*
 * it_versions.c - task versions and named parameters against a real
 * halleyd and PostgreSQL.
 *
 * Versions: an update keeps its comment; ListTaskVersions lists newest
 * first (paged, each with author and comment); RollbackTask saves the old
 * spec as a NEW version that records what it restores, audited as
 * task.rollback, and a rollback to the current spec makes no version; an
 * unknown version is NOT_FOUND; DeactivateTask then ReactivateTask brings a
 * task back. Parameters: bad substitutions and built-in names are refused
 * at save naming the field; CreateInstances stores an instance's overrides
 * and refuses an undeclared name per item (params.<name>); GetInstance
 * returns them; SetInstanceParams replaces them and refuses unknown names.
 * A rerun records the version current at that moment, on the instance and
 * on the new attempt.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

typedef Orrery__Halley__V1__Task Task;

static orr_rpc_client *cl;

static const char *PARAMS = "\"parameters\":{\"region\":{\"default\":\"eu\"}}";

static void test_bad_substitutions(void)
{
    orr_err err;
    hlt_save_task(cl, 0, "v_bad1", "ops",
                  "\"parameters\":{\"region\":{}},\"description\":\"${nope}\"", ORR_OK, NULL,
                  &err); /* only config is substituted */
    char extra[512];
    snprintf(extra, sizeof extra, "%s", "\"parameters\":{\"attempt\":{\"default\":\"1\"}}");
    hlt_save_task(cl, 0, "v_bad2", "ops", extra, ORR_EINVAL, "spec.parameters.attempt", &err);
    HLT_CHECK(strstr(err.msg, "built-in") != NULL, "built-in name: %s", err.msg);

    Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    rq.actor = "user:ann";
    rq.spec_json = "{\"name\":\"v_bad3\",\"team\":\"ops\",\"type\":\"shell\","
                   "\"parameters\":{\"region\":{}},"
                   "\"config\":{\"command\":\"echo ${regoin}\"}}";
    Task *t = NULL;
    orr_status st = hlt_call(cl, "CreateTask", &rq, &t, &err);
    HLT_CHECK(st == ORR_EINVAL && strcmp(err.field, "spec.config.command") == 0 &&
                  strstr(err.msg, "regoin"),
              "unknown parameter in command: %s %s: %s", orr_status_name(st), err.field, err.msg);
    rq.spec_json = "{\"name\":\"v_bad4\",\"team\":\"ops\",\"type\":\"shell\","
                   "\"config\":{\"command\":\"x\",\"args\":[\"${schedule_time:%Q}\"]}}";
    st = hlt_call(cl, "CreateTask", &rq, &t, &err);
    HLT_CHECK(st == ORR_EINVAL && strcmp(err.field, "spec.config.args[0]") == 0 &&
                  strstr(err.msg, "%Q"),
              "bad format in args: %s %s: %s", orr_status_name(st), err.field, err.msg);
    if (t)
        FREE(t);
}

static Task *update(int64_t id, const char *cmd, const char *comment, orr_err *err)
{
    char spec[1024];
    snprintf(spec, sizeof spec,
             "{\"name\":\"v_main\",\"team\":\"ops\",\"type\":\"shell\",%s,"
             "\"config\":{\"command\":\"%s\"}}",
             PARAMS, cmd);
    Orrery__Halley__V1__UpdateTaskRequest rq = ORRERY__HALLEY__V1__UPDATE_TASK_REQUEST__INIT;
    rq.id = id;
    rq.spec_json = spec;
    rq.actor = "user:bob";
    rq.comment = (char *)comment;
    Task *t = NULL;
    orr_status st = hlt_call(cl, "UpdateTask", &rq, &t, err);
    HLT_CHECK(st == ORR_OK, "update: %s", err->msg);
    return t;
}

static int64_t test_versions(void)
{
    orr_err err;
    char spec[1024];
    snprintf(spec, sizeof spec,
             "{\"name\":\"v_main\",\"team\":\"ops\",\"type\":\"shell\",%s,"
             "\"config\":{\"command\":\"echo one ${region}\"}}",
             PARAMS);
    Orrery__Halley__V1__CreateTaskRequest cq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    cq.spec_json = spec;
    cq.actor = "user:ann";
    Task *t = NULL;
    HLT_CHECK(hlt_call(cl, "CreateTask", &cq, &t, &err) == ORR_OK, "create: %s", err.msg);
    int64_t id = t ? t->id : 0;
    if (t)
        FREE(t);
    t = update(id, "echo two ${region}", "second try", &err);
    HLT_CHECK(t && t->version == 2 && strcmp(t->comment, "second try") == 0, "v2 with its comment");
    if (t)
        FREE(t);

    /* list, newest first, paged by one */
    Orrery__Halley__V1__ListTaskVersionsRequest lq =
        ORRERY__HALLEY__V1__LIST_TASK_VERSIONS_REQUEST__INIT;
    lq.id = id;
    lq.page_size = 1;
    Orrery__Halley__V1__ListTaskVersionsResponse *lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListTaskVersions", &lq, &lr, &err) == ORR_OK, "list: %s", err.msg);
    HLT_CHECK(lr && lr->n_versions == 1 && lr->versions[0]->version == 2 &&
                  strcmp(lr->versions[0]->created_by, "user:bob") == 0 &&
                  strcmp(lr->versions[0]->comment, "second try") == 0 && lr->next_page_token[0],
              "first page: version 2 by bob");
    if (lr) {
        lq.page_token = lr->next_page_token;
        Orrery__Halley__V1__ListTaskVersionsResponse *l2 = NULL;
        HLT_CHECK(hlt_call(cl, "ListTaskVersions", &lq, &l2, &err) == ORR_OK, "page 2: %s",
                  err.msg);
        HLT_CHECK(l2 && l2->n_versions == 1 && l2->versions[0]->version == 1 &&
                      strcmp(l2->versions[0]->created_by, "user:ann") == 0 &&
                      l2->next_page_token[0] == 0,
                  "second page: version 1 by ann, the last");
        if (l2)
            FREE(l2);
        FREE(lr);
    }
    lq.page_token = "";
    lq.id = 999999;
    HLT_CHECK(hlt_call(cl, "ListTaskVersions", &lq, &lr, &err) == ORR_ENOTFOUND, "unknown task");

    /* rollback to 1: a new version 3 with v1's spec */
    Orrery__Halley__V1__RollbackTaskRequest rq = ORRERY__HALLEY__V1__ROLLBACK_TASK_REQUEST__INIT;
    rq.id = id;
    rq.version = 1;
    rq.actor = "user:bob";
    HLT_CHECK(hlt_call(cl, "RollbackTask", &rq, &t, &err) == ORR_OK, "rollback: %s", err.msg);
    HLT_CHECK(t && t->version == 3 && t->current_version == 3 && t->restored_from == 1 &&
                  strstr(t->spec_json, "echo one") && !t->unchanged &&
                  strstr(t->comment, "rollback to version 1"),
              "rollback writes version 3 restoring 1");
    if (t)
        FREE(t);
    /* again: the spec is already the current one */
    HLT_CHECK(hlt_call(cl, "RollbackTask", &rq, &t, &err) == ORR_OK, "rollback again");
    HLT_CHECK(t && t->version == 3 && t->unchanged, "no change, no version 4");
    if (t)
        FREE(t);
    rq.version = 7;
    HLT_CHECK(hlt_call(cl, "RollbackTask", &rq, &t, &err) == ORR_ENOTFOUND &&
                  strcmp(err.field, "version") == 0,
              "unknown version: %s", err.field);
    rq.version = 2;
    rq.expected_version = 2;
    HLT_CHECK(hlt_call(cl, "RollbackTask", &rq, &t, &err) == ORR_ECONFLICT,
              "expected_version is a compare-and-set");

    /* the audit says it was a rollback */
    Orrery__Halley__V1__ListAuditRequest aq = ORRERY__HALLEY__V1__LIST_AUDIT_REQUEST__INIT;
    aq.object_prefix = "task:v_main";
    Orrery__Halley__V1__ListAuditResponse *ar = NULL;
    HLT_CHECK(hlt_call(cl, "ListAudit", &aq, &ar, &err) == ORR_OK, "audit: %s", err.msg);
    int seen = 0;
    for (size_t i = 0; ar && i < ar->n_entries; i++)
        if (strcmp(ar->entries[i]->action, "task.rollback") == 0 &&
            strstr(ar->entries[i]->detail_json, "\"restored_from\": 1"))
            seen = 1;
    if (!seen)
        for (size_t i = 0; ar && i < ar->n_entries; i++)
            if (strcmp(ar->entries[i]->action, "task.rollback") == 0 &&
                strstr(ar->entries[i]->detail_json, "restored_from"))
                seen = 1;
    HLT_CHECK(seen, "audit has task.rollback with restored_from");
    if (ar)
        FREE(ar);

    /* deactivate, reactivate */
    Orrery__Halley__V1__DeactivateTaskRequest dq =
        ORRERY__HALLEY__V1__DEACTIVATE_TASK_REQUEST__INIT;
    dq.id = id;
    dq.actor = "user:bob";
    HLT_CHECK(hlt_call(cl, "DeactivateTask", &dq, &t, &err) == ORR_OK && !t->active, "deactivated");
    if (t)
        FREE(t);
    Orrery__Halley__V1__ReactivateTaskRequest xq =
        ORRERY__HALLEY__V1__REACTIVATE_TASK_REQUEST__INIT;
    xq.id = id;
    xq.actor = "user:bob";
    HLT_CHECK(hlt_call(cl, "ReactivateTask", &xq, &t, &err) == ORR_OK && t->active &&
                  t->version == 3,
              "reactivated at version 3");
    if (t)
        FREE(t);
    xq.id = 999999;
    HLT_CHECK(hlt_call(cl, "ReactivateTask", &xq, &t, &err) == ORR_ENOTFOUND, "unknown task");
    return id;
}

/* CreateInstances of one instance of task id at ms with params; returns the
 * result's code and fills *iid (0 when refused). */
static int create_instance(int64_t id, int64_t ms, const char *params, int64_t *iid, char *field,
                           size_t fn)
{
    Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
    ci.task_id = id;
    ci.schedule_time_ms = ms;
    ci.actor = "user:bob";
    ci.params_json = (char *)params;
    Orrery__Halley__V1__CreateInstance *items[1] = {&ci};
    Orrery__Halley__V1__CreateInstancesRequest rq =
        ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
    rq.n_instances = 1;
    rq.instances = items;
    Orrery__Halley__V1__CreateInstancesResponse *rs = NULL;
    orr_err err;
    HLT_CHECK(hlt_call(cl, "CreateInstances", &rq, &rs, &err) == ORR_OK, "create: %s", err.msg);
    int code = rs ? rs->results[0]->code : -1;
    *iid = rs && rs->results[0]->instance ? rs->results[0]->instance->id : 0;
    snprintf(field, fn, "%s", rs ? rs->results[0]->field : "");
    if (rs)
        FREE(rs);
    return code;
}

static Orrery__Halley__V1__Instance *get_instance(int64_t iid)
{
    Orrery__Halley__V1__GetInstanceRequest g = ORRERY__HALLEY__V1__GET_INSTANCE_REQUEST__INIT;
    g.id = iid;
    Orrery__Halley__V1__Instance *in = NULL;
    orr_err err;
    HLT_CHECK(hlt_call(cl, "GetInstance", &g, &in, &err) == ORR_OK, "get: %s", err.msg);
    return in;
}

static void transition(int64_t iid, int from, int to)
{
    Orrery__Halley__V1__TransitionRequest rq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
    rq.instance_id = iid;
    rq.expected_state = (Orrery__Halley__V1__InstanceState)from;
    rq.new_state = (Orrery__Halley__V1__InstanceState)to;
    rq.actor = "user:bob";
    rq.reason = "test";
    Orrery__Halley__V1__TransitionResult *r = NULL;
    orr_err err;
    HLT_CHECK(hlt_call(cl, "TransitionInstance", &rq, &r, &err) == ORR_OK, "transition %d->%d: %s",
              from, to, err.msg);
    if (r)
        FREE(r);
}

static void test_instance_params(int64_t id)
{
    int64_t base = 1893456000000LL; /* 2030-01-01 */
    int64_t iid = 0;
    char field[128];
    int code = create_instance(id, base, "{\"regoin\":\"us\"}", &iid, field, sizeof field);
    HLT_CHECK(code == 3 && iid == 0 && strcmp(field, "params.regoin") == 0,
              "undeclared name refused: code %d field %s", code, field);
    code = create_instance(id, base, "{\"region\":7}", &iid, field, sizeof field);
    HLT_CHECK(code == 3 && strcmp(field, "params.region") == 0, "non-string value: %s", field);
    code = create_instance(id, base, "[1]", &iid, field, sizeof field);
    HLT_CHECK(code == 3 && strcmp(field, "params") == 0, "not an object: %s", field);
    code = create_instance(id, base, "{\"region\":\"us\"}", &iid, field, sizeof field);
    HLT_CHECK(code == 0 && iid > 0, "declared name accepted (%d %s)", code, field);
    Orrery__Halley__V1__Instance *in = get_instance(iid);
    HLT_CHECK(in && strcmp(in->params_json, "{\"region\": \"us\"}") == 0 && in->task_version == 3,
              "stored: %s v%d", in ? in->params_json : "-", in ? in->task_version : 0);
    if (in)
        FREE(in);
    int64_t plain = 0;
    create_instance(id, base + 3600000, "", &plain, field, sizeof field);
    in = get_instance(plain);
    HLT_CHECK(in && strcmp(in->params_json, "{}") == 0, "no overrides: {}");
    if (in)
        FREE(in);

    Orrery__Halley__V1__SetInstanceParamsRequest sq =
        ORRERY__HALLEY__V1__SET_INSTANCE_PARAMS_REQUEST__INIT;
    sq.id = iid;
    sq.actor = "user:bob";
    sq.params_json = "{\"zone\":\"x\"}";
    orr_err err;
    HLT_CHECK(hlt_call(cl, "SetInstanceParams", &sq, &in, &err) == ORR_EINVAL &&
                  strcmp(err.field, "params.zone") == 0,
              "set: unknown name refused: %s", err.field);
    sq.params_json = "{\"region\":\"ap\"}";
    HLT_CHECK(hlt_call(cl, "SetInstanceParams", &sq, &in, &err) == ORR_OK && in &&
                  strstr(in->params_json, "\"ap\""),
              "set: replaced: %s", err.msg);
    if (in)
        FREE(in);
    sq.id = 999999;
    HLT_CHECK(hlt_call(cl, "SetInstanceParams", &sq, &in, &err) == ORR_ENOTFOUND, "unknown id");

    /* a rerun takes the version current then */
    orr_err uerr;
    Task *t = update(id, "echo four ${region}", "", &uerr);
    HLT_CHECK(t && t->version == 4, "version 4");
    if (t)
        FREE(t);
    transition(iid, ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_WAITING,
               ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_MARKED_SUCCESS);
    in = get_instance(iid);
    HLT_CHECK(in && in->task_version == 3, "unchanged until it runs again");
    if (in)
        FREE(in);
    transition(iid, ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_MARKED_SUCCESS,
               ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_WAITING);
    in = get_instance(iid);
    HLT_CHECK(in && in->task_version == 4 && in->attempt == 2, "rerun runs version 4 (v%d a%d)",
              in ? in->task_version : 0, in ? in->attempt : 0);
    if (in)
        FREE(in);
}

int main(void)
{
    hlt_db db;
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_versions");
    }
    cl = hlt_client(&s, NULL);
    hlt_team(cl, "ops");
    test_bad_substitutions();
    int64_t id = test_versions();
    if (id)
        test_instance_params(id);
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_versions");
}
