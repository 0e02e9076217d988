/*
 * it_lists.c - halleyd's listing and statistics RPCs end to end:
 * ListUsers/ListTeams, ListAttempts and the current attempt's exit code,
 * ListInstances in descending order and by team, ListTasks with the last
 * run, and InstanceStats.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_db.h"
#include "hlt.h"

#define HOUR_MS 3600000LL
#define T0      1700000000000LL /* a whole hour */

typedef Orrery__Halley__V1__Task Task;
typedef Orrery__Halley__V1__Instance Instance;

static orr_rpc_client *cl;
static orr_err err;

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static void team(const char *name)
{
    hlt_team(cl, name);
}

static void user(const char *name, Orrery__Halley__V1__Role role, const char *t1, const char *t2)
{
    Orrery__Halley__V1__CreateUserRequest rq = ORRERY__HALLEY__V1__CREATE_USER_REQUEST__INIT;
    char *teams[2] = {(char *)t1, (char *)t2};
    rq.name = (char *)name;
    rq.password = "correct horse";
    rq.role = role;
    rq.teams = teams;
    rq.n_teams = t2 ? 2 : t1 ? 1 : 0;
    Orrery__Halley__V1__User *u = NULL;
    HLT_CHECK(hlt_call(cl, "CreateUser", &rq, &u, &err) == ORR_OK, "user %s: %s", name, err.msg);
    if (u)
        FREE(u);
}

/* Save a task (update when id > 0); returns its id or 0, checking status and field. */
static int64_t save_task(int64_t id, const char *name, const char *tm, const char *extra,
                         orr_status want, const char *field)
{
    return hlt_save_task(cl, id, name, tm, extra, want, field, &err);
}

/* ------------------------------------------------------------------ users */

static void test_users(void)
{
    team("ops");
    team("dev");
    team("bi");
    user("ann", ORRERY__HALLEY__V1__ROLE__ROLE_ADMIN, "ops", "dev");
    user("anton", ORRERY__HALLEY__V1__ROLE__ROLE_VIEWER, "bi", NULL);
    user("bob", ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER, "dev", NULL);
    user("carl", ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER, NULL, NULL);

    Orrery__Halley__V1__ListTeamsRequest tr = ORRERY__HALLEY__V1__LIST_TEAMS_REQUEST__INIT;
    Orrery__Halley__V1__ListTeamsResponse *ts = NULL;
    HLT_CHECK(hlt_call(cl, "ListTeams", &tr, &ts, &err) == ORR_OK && ts->n_teams == 3 &&
                  strcmp(ts->teams[0]->name, "bi") == 0 && strcmp(ts->teams[2]->name, "ops") == 0 &&
                  ts->teams[0]->id > 0,
              "ListTeams by name: %s", err.msg);
    if (ts)
        FREE(ts);

    /* All users, two per page, following the tokens. */
    Orrery__Halley__V1__ListUsersRequest rq = ORRERY__HALLEY__V1__LIST_USERS_REQUEST__INIT;
    rq.page_size = 2;
    char seen[256] = "";
    int pages = 0;
    char token[64] = "";
    do {
        rq.page_token = token;
        Orrery__Halley__V1__ListUsersResponse *r = NULL;
        orr_status st = hlt_call(cl, "ListUsers", &rq, &r, &err);
        HLT_CHECK(st == ORR_OK, "ListUsers page %d: %s", pages, err.msg);
        if (st != ORR_OK)
            break;
        for (size_t i = 0; i < r->n_users; i++) {
            strncat(seen, r->users[i]->name, sizeof seen - strlen(seen) - 2);
            strcat(seen, ",");
        }
        snprintf(token, sizeof token, "%s", r->next_page_token);
        FREE(r);
        pages++;
    } while (token[0] && pages < 10);
    HLT_CHECK(strcmp(seen, "ann,anton,bob,carl,") == 0 && pages == 2, "paged users: %s (%d)", seen,
              pages);

    /* Filters, and the teams of each user; no hash anywhere. */
    rq.page_size = 0;
    rq.page_token = "";
    rq.name_prefix = "an";
    Orrery__Halley__V1__ListUsersResponse *r = NULL;
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_OK && r->n_users == 2 &&
                  strcmp(r->users[0]->name, "ann") == 0 && r->users[0]->n_teams == 2 &&
                  strcmp(r->users[0]->teams[0], "dev") == 0 &&
                  strcmp(r->users[0]->teams[1], "ops") == 0 &&
                  r->users[0]->role == ORRERY__HALLEY__V1__ROLE__ROLE_ADMIN &&
                  r->users[0]->active && !r->next_page_token[0],
              "prefix an: %s", err.msg);
    if (r)
        FREE(r);
    rq.name_prefix = "";
    rq.role = ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_OK && r->n_users == 2 &&
                  strcmp(r->users[0]->name, "bob") == 0 && strcmp(r->users[1]->name, "carl") == 0 &&
                  r->users[1]->n_teams == 0,
              "role developer");
    if (r)
        FREE(r);
    rq.team = "dev";
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_OK && r->n_users == 1 &&
                  strcmp(r->users[0]->name, "bob") == 0,
              "developers of dev");
    if (r)
        FREE(r);
    rq.role = 0;
    rq.team = "nosuchteam";
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_OK && r->n_users == 0,
              "unknown team lists nobody");
    if (r)
        FREE(r);
    /* Bad arguments name their field. */
    rq.team = "bad team!";
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "team") == 0,
              "bad team name: %s", err.field);
    rq.team = "";
    rq.role = 7;
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "role") == 0,
              "bad role");
    rq.role = 0;
    rq.page_size = -1;
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "page_size") == 0,
              "bad page size");
    rq.page_size = 1001; /* clamped to the maximum, not refused */
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_OK, "oversize page: %s", err.msg);
    if (r)
        FREE(r);
    rq.page_size = 0;
    rq.page_token = "x1";
    HLT_CHECK(hlt_call(cl, "ListUsers", &rq, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "page_token") == 0,
              "bad page token");
}

/* ------------------------------------------------------------- instances */

static int64_t t_a, t_b;
static int64_t inst_a[5], inst_b;

static int64_t create_instance(int64_t task, int64_t at)
{
    Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
    Orrery__Halley__V1__CreateInstance *cis[1] = {&ci};
    ci.task_id = task;
    ci.schedule_time_ms = at;
    ci.actor = "test";
    Orrery__Halley__V1__CreateInstancesRequest rq =
        ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
    rq.instances = cis;
    rq.n_instances = 1;
    Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
    int64_t id = 0;
    if (hlt_call(cl, "CreateInstances", &rq, &r, &err) == ORR_OK && r->results[0]->instance) {
        id = r->results[0]->instance->id;
        HLT_CHECK(!r->results[0]->instance->has_exit_code, "new instance has no exit code");
    }
    HLT_CHECK(id > 0, "instance created: %s", err.msg);
    if (r)
        FREE(r);
    return id;
}

/* One transition; exit < 0 = no exit code. Returns the instance (free it) or NULL. */
static Instance *move(int64_t id, int from, int to, int exit, const char *reason)
{
    Orrery__Halley__V1__TransitionRequest rq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
    rq.instance_id = id;
    rq.expected_state = from;
    rq.new_state = to;
    rq.actor = "test";
    rq.reason = (char *)reason;
    rq.executor = "exec-1";
    if (exit >= 0) {
        rq.has_exit_code = 1;
        rq.exit_code = exit;
    }
    Orrery__Halley__V1__TransitionResult *r = NULL;
    orr_status st = hlt_call(cl, "TransitionInstance", &rq, &r, &err);
    HLT_CHECK(st == ORR_OK && r->instance, "transition %d -> %d: %s", from, to, err.msg);
    Instance *in = NULL;
    if (r) {
        in = r->instance;
        r->instance = NULL;
        FREE(r);
    }
    return in;
}

#define W    1
#define R    2
#define D    3
#define RUN  4
#define OK   5
#define FAIL 6
#define KILL 7

/* waiting -> ready -> dispatched -> running -> final (exit code). */
static void run_to(int64_t id, int final, int exit)
{
    int path[4] = {R, D, RUN, final};
    int from = W;
    for (int i = 0; i < 4; i++) {
        Instance *in = move(id, from, path[i], i == 3 ? exit : -1, i == 3 ? "done" : "");
        if (in && i == 3)
            HLT_CHECK(in->has_exit_code == (exit >= 0) && (exit < 0 || in->exit_code == exit),
                      "transition answer carries exit code %d (has %d, %d)", exit,
                      in->has_exit_code, in->exit_code);
        if (in)
            FREE(in);
        from = path[i];
    }
}

static void test_instances(void)
{
    t_a = save_task(0, "r_a", "ops", "\"slots\":3", ORR_OK, NULL);
    t_b = save_task(0, "r_b", "dev", NULL, ORR_OK, NULL);
    for (int i = 0; i < 5; i++)
        inst_a[i] = create_instance(t_a, T0 + i * HOUR_MS);
    inst_b = create_instance(t_b, T0 + 2 * HOUR_MS);

    /* inst_a[0]: fails with exit 2, is retried, succeeds with exit 0. */
    run_to(inst_a[0], FAIL, 2);
    Instance *in = move(inst_a[0], FAIL, W, -1, "retry");
    HLT_CHECK(in && in->attempt == 2 && !in->has_exit_code, "new attempt has no exit code yet");
    if (in)
        FREE(in);
    run_to(inst_a[0], OK, 0);

    Orrery__Halley__V1__GetInstanceRequest g = ORRERY__HALLEY__V1__GET_INSTANCE_REQUEST__INIT;
    g.id = inst_a[0];
    in = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstance", &g, &in, &err) == ORR_OK && in->has_exit_code &&
                  in->exit_code == 0 && in->attempt == 2,
              "GetInstance exit code of the current attempt");
    if (in)
        FREE(in);

    Orrery__Halley__V1__ListAttemptsRequest la = ORRERY__HALLEY__V1__LIST_ATTEMPTS_REQUEST__INIT;
    la.instance_id = inst_a[0];
    Orrery__Halley__V1__ListAttemptsResponse *at = NULL;
    HLT_CHECK(hlt_call(cl, "ListAttempts", &la, &at, &err) == ORR_OK && at->n_attempts == 2,
              "two attempts: %s", err.msg);
    if (at && at->n_attempts == 2) {
        Orrery__Halley__V1__Attempt *a1 = at->attempts[0], *a2 = at->attempts[1];
        HLT_CHECK(a1->attempt == 1 && a1->state == FAIL && a1->has_exit_code &&
                      a1->exit_code == 2 && strcmp(a1->executor, "exec-1") == 0 &&
                      a1->started_at_ms > 0 && a1->finished_at_ms >= a1->started_at_ms &&
                      strcmp(a1->reason, "done") == 0,
                  "attempt 1 failed with 2");
        HLT_CHECK(a2->attempt == 2 && a2->state == OK && a2->has_exit_code && a2->exit_code == 0,
                  "attempt 2 succeeded with 0");
    }
    if (at)
        FREE(at);
    la.instance_id = inst_a[4]; /* never dispatched: no attempts, but it exists */
    at = NULL;
    HLT_CHECK(hlt_call(cl, "ListAttempts", &la, &at, &err) == ORR_OK && at->n_attempts == 0,
              "no attempts yet");
    if (at)
        FREE(at);
    la.instance_id = 999999;
    HLT_CHECK(hlt_call(cl, "ListAttempts", &la, &at, &err) == ORR_ENOTFOUND &&
                  strcmp(err.field, "instance_id") == 0,
              "attempts of a missing instance");
    la.instance_id = 0;
    HLT_CHECK(hlt_call(cl, "ListAttempts", &la, &at, &err) == ORR_EINVAL &&
                  strcmp(err.field, "instance_id") == 0,
              "attempts of id 0");

    /* inst_a[1] killed without exit code; inst_a[2] running; inst_a[3] ready. */
    Instance *x = move(inst_a[1], W, KILL, -1, "stop");
    if (x)
        FREE(x);
    int path[3] = {R, D, RUN};
    for (int i = 0, from = W; i < 3; from = path[i++])
        if ((x = move(inst_a[2], from, path[i], -1, "")))
            FREE(x);
    if ((x = move(inst_a[3], W, R, -1, "")))
        FREE(x);

    /* ListInstances: exit codes in lists, descending with keyset paging, team. */
    Orrery__Halley__V1__ListInstancesRequest lr = ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
    lr.descending = 1;
    lr.page_size = 2;
    int64_t order[8];
    int n = 0, pages = 0;
    char token[64] = "";
    do {
        lr.page_token = token;
        Orrery__Halley__V1__ListInstancesResponse *r = NULL;
        orr_status st = hlt_call(cl, "ListInstances", &lr, &r, &err);
        HLT_CHECK(st == ORR_OK, "descending page %d: %s", pages, err.msg);
        if (st != ORR_OK)
            break;
        for (size_t i = 0; i < r->n_instances && n < 8; i++) {
            order[n++] = r->instances[i]->id;
            if (r->instances[i]->id == inst_a[0])
                HLT_CHECK(r->instances[i]->has_exit_code && r->instances[i]->exit_code == 0,
                          "exit code in the list");
        }
        snprintf(token, sizeof token, "%s", r->next_page_token);
        FREE(r);
        pages++;
    } while (token[0] && pages < 10);
    /* Newest schedule first; inst_a[2] and inst_b share T0+2h: higher id first. */
    int64_t want[6] = {inst_a[4], inst_a[3], inst_b, inst_a[2], inst_a[1], inst_a[0]};
    int same = n == 6;
    for (int i = 0; same && i < 6; i++)
        same = order[i] == want[i];
    HLT_CHECK(same && pages == 3, "descending order over 3 pages (%d rows, %d pages)", n, pages);
    lr.page_token = "5"; /* an ascending token */
    Orrery__Halley__V1__ListInstancesResponse *r = NULL;
    HLT_CHECK(hlt_call(cl, "ListInstances", &lr, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "page_token") == 0,
              "ascending token refused in descending order");
    lr.descending = 0;
    lr.page_token = "d1.5";
    HLT_CHECK(hlt_call(cl, "ListInstances", &lr, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "page_token") == 0,
              "descending token refused in ascending order");
    lr.page_token = "";
    lr.page_size = 0;
    lr.team = "dev";
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListInstances", &lr, &r, &err) == ORR_OK && r->n_instances == 1 &&
                  r->instances[0]->id == inst_b,
              "team dev: one instance");
    if (r)
        FREE(r);
    lr.team = "ops";
    lr.descending = 1;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListInstances", &lr, &r, &err) == ORR_OK && r->n_instances == 5 &&
                  r->instances[0]->id == inst_a[4],
              "team ops descending: five");
    if (r)
        FREE(r);
    lr.team = "bad team";
    HLT_CHECK(hlt_call(cl, "ListInstances", &lr, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "team") == 0,
              "bad team");
}

/* ------------------------------------------------------------------ tasks */

/* The ids ListInstances answers for lr, page by page (at most 10 pages);
 * their count, or -1 when a call failed. */
static int list_pages(Orrery__Halley__V1__ListInstancesRequest *lr, int64_t *ids, int max)
{
    char token[64] = "";
    int n = 0;
    for (int pages = 0; pages < 10; pages++) {
        lr->page_token = token;
        Orrery__Halley__V1__ListInstancesResponse *r = NULL;
        if (hlt_call(cl, "ListInstances", lr, &r, &err) != ORR_OK)
            return -1;
        for (size_t i = 0; i < r->n_instances && n < max; i++)
            ids[n++] = r->instances[i]->id;
        snprintf(token, sizeof token, "%s", r->next_page_token);
        FREE(r);
        if (!token[0])
            break;
    }
    lr->page_token = "";
    return n;
}

/* list_pages, then whether it listed exactly want[0..nwant) in order; *n
 * what it listed (-1: a call failed). */
static int pages_are(Orrery__Halley__V1__ListInstancesRequest *lr, const int64_t *want, int nwant,
                     int *n)
{
    int64_t got[8];
    *n = list_pages(lr, got, 8);
    int same = *n == nwant;
    for (int i = 0; same && i < *n; i++)
        same = got[i] == want[i];
    return same;
}

/* A time range alone, newest first (its own prepared statements), page by
 * page: both bounds, the start alone, the end alone. */
static void test_range_desc(void)
{
    Orrery__Halley__V1__ListInstancesRequest lr = ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
    lr.descending = 1;
    lr.page_size = 2;
    struct {
        int64_t from, to;
        int n;
        int64_t want[6];
        const char *what;
    } cases[] = {
        {T0 + HOUR_MS, T0 + 4 * HOUR_MS, 4, {inst_a[3], inst_b, inst_a[2], inst_a[1]}, "both"},
        {T0 + 3 * HOUR_MS, 0, 2, {inst_a[4], inst_a[3]}, "from alone"},
        {0, T0 + 2 * HOUR_MS, 2, {inst_a[1], inst_a[0]}, "to alone"},
        {T0 + 5 * HOUR_MS, 0, 0, {0}, "nothing after the last"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        lr.from_schedule_ms = cases[c].from;
        lr.to_schedule_ms = cases[c].to;
        int n;
        int same = pages_are(&lr, cases[c].want, cases[c].n, &n);
        HLT_CHECK(same, "range desc, %s: %d rows in order (want %d)", cases[c].what, n, cases[c].n);
    }
}

/* A state set alone (the dashboard's failures, the console's state
 * filter), both orders: page by page, where a page ends between inst_b and
 * inst_a[2], which share T0+2h, so the keyset must go on from the tie; and
 * in one page, where a state asked twice must list its instances once
 * (a state set alone has statements of its own, one index walk per state
 * from the page's keyset, bounded to the state by a range); a finished
 * instance's exit code comes with it, in both orders. */
static void test_states_alone(void)
{
    Orrery__Halley__V1__ListInstancesRequest lr = ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
    Orrery__Halley__V1__InstanceState st[3];
    lr.states = st;
    struct {
        int desc, size, n_states, states[3], n;
        int64_t want[6];
        const char *what;
    } cases[] = {
        {1, 2, 2, {W, RUN}, 3, {inst_a[4], inst_b, inst_a[2]}, "waiting, running, newest first"},
        {0, 2, 2, {W, RUN}, 3, {inst_a[2], inst_a[4], inst_b}, "waiting, running, by id"},
        {1, 2, 3, {KILL, R, W}, 4, {inst_a[4], inst_a[3], inst_b, inst_a[1]}, "three states"},
        {1, 10, 3, {RUN, W, RUN}, 3, {inst_a[4], inst_b, inst_a[2]}, "a state asked twice, once"},
        {1, 2, 3, {RUN, W, RUN}, 3, {inst_a[4], inst_b, inst_a[2]}, "asked twice, by pages"},
        {0, 10, 3, {RUN, W, RUN}, 3, {inst_a[2], inst_a[4], inst_b}, "asked twice, by id"},
        {1, 1, 1, {W}, 2, {inst_a[4], inst_b}, "one state over two pages"},
        {0, 1, 3, {KILL, R, W}, 4, {inst_a[1], inst_a[3], inst_a[4], inst_b}, "three, by id"},
        {0, 1, 1, {W}, 2, {inst_a[4], inst_b}, "one state by id over two pages"},
        {1, 2, 1, {FAIL}, 0, {0}, "a state no instance is in"},
        {0, 2, 1, {FAIL}, 0, {0}, "a state no instance is in, by id"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        lr.descending = cases[c].desc;
        lr.page_size = cases[c].size;
        lr.n_states = (size_t)cases[c].n_states;
        for (int i = 0; i < cases[c].n_states; i++)
            st[i] = cases[c].states[i];
        int n;
        int same = pages_are(&lr, cases[c].want, cases[c].n, &n);
        HLT_CHECK(same, "states alone, %s: %d rows in order (want %d)", cases[c].what, n,
                  cases[c].n);
    }
    /* With a time range, newest first (the filtered statement, planned at
     * each call: a walk per state cannot stop at the range's start, see
     * docs/benchmarks.md): a page a row, across the tie. */
    struct {
        int n_states, states[3];
        int64_t from, to;
        int n;
        int64_t want[4];
        const char *what;
    } ranged[] = {
        {2, {W, RUN}, T0 + 2 * HOUR_MS, T0 + 4 * HOUR_MS, 2, {inst_b, inst_a[2]}, "both ends"},
        {3,
         {KILL, R, W},
         T0 + HOUR_MS,
         T0 + 4 * HOUR_MS,
         3,
         {inst_a[3], inst_b, inst_a[1]},
         "three states, the start kept"},
        {2, {W, RUN}, 0, T0 + 3 * HOUR_MS, 2, {inst_b, inst_a[2]}, "an end alone"},
        {2, {W, RUN}, T0 + 3 * HOUR_MS, 0, 1, {inst_a[4]}, "a start alone"},
        {2, {W, RUN}, T0 + 5 * HOUR_MS, 0, 0, {0}, "nothing after the start"},
    };
    lr.descending = 1;
    lr.page_size = 1;
    for (size_t c = 0; c < sizeof ranged / sizeof ranged[0]; c++) {
        lr.n_states = (size_t)ranged[c].n_states;
        for (int i = 0; i < ranged[c].n_states; i++)
            st[i] = ranged[c].states[i];
        lr.from_schedule_ms = ranged[c].from;
        lr.to_schedule_ms = ranged[c].to;
        int n;
        int same = pages_are(&lr, ranged[c].want, ranged[c].n, &n);
        HLT_CHECK(same, "states and a range, %s: %d rows in order (want %d)", ranged[c].what, n,
                  ranged[c].n);
    }
    lr.from_schedule_ms = lr.to_schedule_ms = 0;
    lr.page_size = 10;
    lr.n_states = 1;
    st[0] = OK;
    Orrery__Halley__V1__ListInstancesResponse *r = NULL;
    for (int desc = 0; desc < 2; desc++) {
        lr.descending = desc;
        r = NULL;
        HLT_CHECK(hlt_call(cl, "ListInstances", &lr, &r, &err) == ORR_OK && r->n_instances == 1 &&
                      r->instances[0]->id == inst_a[0] && r->instances[0]->has_exit_code &&
                      r->instances[0]->exit_code == 0 && r->instances[0]->attempt == 2 &&
                      strcmp(r->instances[0]->task_name, "r_a") == 0 &&
                      r->instances[0]->schedule_time_ms == T0,
                  "states alone, %s: the succeeded instance with its task, time and exit code",
                  desc ? "newest first" : "by id");
        if (r)
            FREE(r);
    }
    /* An unknown state is refused by its index, after a repeat too. */
    Orrery__Halley__V1__InstanceState bad[2][3] = {{0}, {W, W, 99}};
    size_t nbad[2] = {1, 3};
    const char *field[2] = {"states[0]", "states[2]"};
    for (int b = 0; b < 2; b++) {
        lr.states = bad[b];
        lr.n_states = nbad[b];
        r = NULL;
        HLT_CHECK(hlt_call(cl, "ListInstances", &lr, &r, &err) == ORR_EINVAL &&
                      strcmp(err.field, field[b]) == 0,
                  "states alone: unknown state refused as %s (%s)", field[b], err.field);
        if (r)
            FREE(r);
    }
}

/* The text search alone, both orders, page by page: each of the four
 * things it matches (the task name, the reason, the executor, the id), and
 * nothing; a part of both tasks' names lists every instance, across the
 * tie of inst_a[2] and inst_b at T0+2h (newest first, the higher id of the
 * two first). */
static void test_search_alone(void)
{
    Orrery__Halley__V1__ListInstancesRequest lr = ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
    lr.page_size = 1;
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)inst_a[3]);
    struct {
        const char *q;
        int n;
        int64_t by_id[6], newest[6];
        const char *what;
    } cases[] = {
        {"R_B", 1, {inst_b}, {inst_b}, "the task's name, any case"},
        {"sto", 1, {inst_a[1]}, {inst_a[1]}, "a part of the reason"},
        {"exec-1", 2, {inst_a[0], inst_a[2]}, {inst_a[2], inst_a[0]}, "the executor"},
        {id, 1, {inst_a[3]}, {inst_a[3]}, "the id"},
        {"r_",
         6,
         {inst_a[0], inst_a[1], inst_a[2], inst_a[3], inst_a[4], inst_b},
         {inst_a[4], inst_a[3], inst_b, inst_a[2], inst_a[1], inst_a[0]},
         "every instance"},
        {"no such", 0, {0}, {0}, "nothing"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int desc = 0; desc < 2; desc++) {
            lr.query = (char *)cases[c].q;
            lr.descending = desc;
            int n;
            HLT_CHECK(pages_are(&lr, desc ? cases[c].newest : cases[c].by_id, cases[c].n, &n),
                      "search alone, %s, %s: %d rows in order (want %d)", cases[c].what,
                      desc ? "newest first" : "by id", n, cases[c].n);
        }
}

static void test_last_run(void)
{
    int64_t t_c = save_task(0, "r_c_never_run", "bi", NULL, ORR_OK, NULL);
    Orrery__Halley__V1__ListTasksRequest rq = ORRERY__HALLEY__V1__LIST_TASKS_REQUEST__INIT;
    rq.name_prefix = "r_";
    rq.with_last_run = 1;
    Orrery__Halley__V1__ListTasksResponse *r = NULL;
    HLT_CHECK(hlt_call(cl, "ListTasks", &rq, &r, &err) == ORR_OK && r->n_tasks == 3,
              "ListTasks with last run: %s", err.msg);
    for (size_t i = 0; r && i < r->n_tasks; i++) {
        Task *t = r->tasks[i];
        if (t->id == t_a)
            HLT_CHECK(t->last_state == W && t->last_schedule_time_ms == T0 + 4 * HOUR_MS,
                      "r_a last run is the newest (waiting at T0+4h): %d %lld", t->last_state,
                      (long long)t->last_schedule_time_ms);
        else if (t->id == t_b)
            HLT_CHECK(t->last_state == W && t->last_schedule_time_ms == T0 + 2 * HOUR_MS,
                      "r_b last run");
        else if (t->id == t_c)
            HLT_CHECK(t->last_state == 0 && t->last_schedule_time_ms == 0, "never run");
    }
    if (r)
        FREE(r);
    rq.with_last_run = 0;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListTasks", &rq, &r, &err) == ORR_OK && r->n_tasks == 3 &&
                  r->tasks[0]->last_state == 0 && r->tasks[0]->last_schedule_time_ms == 0,
              "without with_last_run nothing is filled");
    if (r)
        FREE(r);
}

/* ------------------------------------------------------------------ stats */

static Orrery__Halley__V1__InstanceStatsResponse *
stats(int64_t from, int64_t to, int bucket, const char *tm, orr_status want, const char *field)
{
    Orrery__Halley__V1__InstanceStatsRequest rq = ORRERY__HALLEY__V1__INSTANCE_STATS_REQUEST__INIT;
    rq.from_ms = from;
    rq.to_ms = to;
    rq.bucket_seconds = bucket;
    rq.team = (char *)tm;
    Orrery__Halley__V1__InstanceStatsResponse *r = NULL;
    orr_status st = hlt_call(cl, "InstanceStats", &rq, &r, &err);
    HLT_CHECK(st == want, "InstanceStats: %s %s", orr_status_name(st), err.msg);
    if (field && st != ORR_OK)
        HLT_CHECK(strcmp(err.field, field) == 0, "field %s, want %s", err.field, field);
    return st == ORR_OK ? r : NULL;
}

static void test_stats(hlt_db *db)
{
    /* Pin finished_at so the buckets are known: success in the 2nd minute,
     * killed in the 4th, relative to base. */
    int64_t base = hlt_now_ms() / 60000 * 60000 - 10 * 60000;
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE instances SET finished_at = to_timestamp(%lld / 1000.0) WHERE id = %lld;"
             "UPDATE instances SET finished_at = to_timestamp(%lld / 1000.0) WHERE id = %lld",
             (long long)(base + 60000 + 5000), (long long)inst_a[0],
             (long long)(base + 3 * 60000 + 1), (long long)inst_a[1]);
    PQclear(hlt_sql(db, sql));
    Orrery__Halley__V1__InstanceStatsResponse *r =
        stats(base, base + 5 * 60000, 60, "", ORR_OK, NULL);
    if (r) {
        HLT_CHECK(r->n_buckets == 5 && r->buckets[0]->start_ms == base &&
                      r->buckets[4]->start_ms == base + 4 * 60000,
                  "5 buckets of a minute (%zu)", r->n_buckets);
        if (r->n_buckets == 5)
            HLT_CHECK(r->buckets[1]->success == 1 && r->buckets[3]->killed == 1 &&
                          r->buckets[0]->success + r->buckets[2]->success + r->buckets[4]->success +
                                  r->buckets[1]->killed ==
                              0 &&
                          r->buckets[1]->failed == 0,
                      "success in bucket 1, killed in bucket 3");
        /* waiting: inst_a[4], inst_b; ready: inst_a[3]; running: inst_a[2] (slots 3). */
        HLT_CHECK(r->waiting == 2 && r->ready == 1 && r->dispatched == 0 && r->running == 1 &&
                      r->running_slots == 3,
                  "queue w%lld r%lld d%lld run%lld slots%lld", (long long)r->waiting,
                  (long long)r->ready, (long long)r->dispatched, (long long)r->running,
                  (long long)r->running_slots);
        FREE(r);
    }
    r = stats(base, base + 5 * 60000 + 1, 120, "dev", ORR_OK, NULL);
    if (r) {
        HLT_CHECK(r->n_buckets == 3 && r->buckets[0]->success == 0 && r->buckets[1]->killed == 0 &&
                      r->waiting == 1 && r->running == 0 && r->running_slots == 0,
                  "team dev: partial last bucket, nothing finished, one waiting");
        FREE(r);
    }
    stats(0, base, 60, "", ORR_EINVAL, "from_ms");
    stats(base, base, 60, "", ORR_EINVAL, "to_ms");
    stats(base, base + 60000, 59, "", ORR_EINVAL, "bucket_seconds");
    stats(base, base + 60000, 86401, "", ORR_EINVAL, "bucket_seconds");
    stats(base, base + 10001LL * 60000, 60, "", ORR_EINVAL, "to_ms");
    r = stats(base, base + 10000LL * 60000, 60, "", ORR_OK, NULL);
    HLT_CHECK(r && r->n_buckets == 10000, "10000 buckets allowed");
    if (r)
        FREE(r);
    stats(base, base + 60000, 60, "bad team", ORR_EINVAL, "team");
}

/* ------------------------------------------------------- times in lists */

/* The lists read their timestamps in binary and make the epoch milliseconds
 * in halleyd (hl_bin_ms): on the edges (a half millisecond either way, the
 * ends of the 1970-2038 range an earlier SQL form had, before 1970, after
 * 2038, NULL) every list statement must answer what
 * (extract(epoch) * 1000)::int8 makes. */
static const char *const edge_times[8] = {
    "1970-01-01 00:00:00.0005+00", "2023-11-14 22:13:20.0005+00",   "2023-11-14 22:13:20.000499+00",
    "2038-01-18 23:59:59.9995+00", "2038-01-19 00:00:00.0005+00",   "1969-12-31 23:59:59.9985+00",
    "2100-03-01 12:00:00.0015+00", "2024-02-29 23:59:59.999501+00",
};
/* Schedule times are whole milliseconds (the API makes them so, and the
 * descending page token carries one), on the same edges. */
static const char *const edge_schedules[6] = {
    "1969-12-31 23:59:59.998+00", "1970-01-01 00:00:00.001+00", "2038-01-18 23:59:59.999+00",
    "2038-01-19 00:00:00+00",     "2100-03-01 12:00:00.001+00", "2023-11-14 22:13:20+00",
};

#define N_LISTED 6
#define N_MS     6

static int64_t listed_ids[N_LISTED];
static int64_t want_ms[N_LISTED][N_MS];

static void instance_ms(const Instance *in, int64_t out[N_MS])
{
    out[0] = in->schedule_time_ms, out[1] = in->created_at_ms, out[2] = in->updated_at_ms;
    out[3] = in->started_at_ms, out[4] = in->finished_at_ms, out[5] = in->backfill_cycle_ms;
}

/* Every page of one list form; returns how many of the six were checked. */
static int check_list_times(const char *what, int64_t task_id, const char *tm, int desc)
{
    Orrery__Halley__V1__ListInstancesRequest lr = ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
    lr.task_id = task_id;
    lr.team = (char *)tm;
    lr.descending = desc;
    lr.page_size = 2;
    char token[64] = "";
    int seen = 0, pages = 0;
    do {
        lr.page_token = token;
        Orrery__Halley__V1__ListInstancesResponse *r = NULL;
        orr_status st = hlt_call(cl, "ListInstances", &lr, &r, &err);
        HLT_CHECK(st == ORR_OK, "%s page %d: %s", what, pages, err.msg);
        if (st != ORR_OK)
            break;
        for (size_t i = 0; i < r->n_instances; i++)
            for (int k = 0; k < N_LISTED; k++) {
                if (r->instances[i]->id != listed_ids[k])
                    continue;
                int64_t got[N_MS];
                instance_ms(r->instances[i], got);
                for (int f = 0; f < N_MS; f++)
                    HLT_CHECK(got[f] == want_ms[k][f],
                              "%s: instance %lld field %d: %lld, want %lld", what,
                              (long long)listed_ids[k], f, (long long)got[f],
                              (long long)want_ms[k][f]);
                seen++;
            }
        snprintf(token, sizeof token, "%s", r->next_page_token);
        FREE(r);
        pages++;
    } while (token[0] && pages < 10);
    return seen;
}

static void test_list_times(hlt_db *db)
{
    for (int k = 0; k < 5; k++)
        listed_ids[k] = inst_a[k];
    listed_ids[5] = inst_b;
    char sql[1024];
    for (int k = 0; k < N_LISTED; k++) {
        snprintf(
            sql, sizeof sql,
            "UPDATE instances SET schedule_time = '%s', created_at = '%s', updated_at = '%s',"
            " started_at = %s%s%s, finished_at = %s%s%s, backfill_cycle = '%s' WHERE id = %lld",
            edge_schedules[k], edge_times[(k + 1) % 8], edge_times[(k + 2) % 8], k == 5 ? "" : "'",
            k == 5 ? "NULL" : edge_times[(k + 3) % 8], k == 5 ? "" : "'", k == 4 ? "" : "'",
            k == 4 ? "NULL" : edge_times[(k + 4) % 8], k == 4 ? "" : "'", edge_times[(k + 5) % 8],
            (long long)listed_ids[k]);
        PQclear(hlt_sql(db, sql));
        snprintf(
            sql, sizeof sql,
            "SELECT (extract(epoch from schedule_time) * 1000)::int8,"
            " (extract(epoch from created_at) * 1000)::int8,"
            " (extract(epoch from updated_at) * 1000)::int8,"
            " coalesce((extract(epoch from started_at) * 1000)::int8, 0),"
            " coalesce((extract(epoch from finished_at) * 1000)::int8, 0),"
            " (extract(epoch from backfill_cycle) * 1000)::int8 FROM instances WHERE id = %lld",
            (long long)listed_ids[k]);
        PGresult *r = hlt_sql(db, sql);
        HLT_CHECK(r && PQntuples(r) == 1, "times of instance %lld", (long long)listed_ids[k]);
        for (int f = 0; r && PQntuples(r) == 1 && f < N_MS; f++)
            want_ms[k][f] = strtoll(PQgetvalue(r, 0, f), NULL, 10);
        PQclear(r);
    }
    /* The edges themselves, as HL_MS makes them (round half away from zero). */
    HLT_CHECK(want_ms[0][1] == 1700000000001LL && want_ms[1][1] == 1700000000000LL &&
                  want_ms[4][1] == -2 && want_ms[3][5] == 1 && want_ms[0][0] == -2,
              "edge values %lld %lld %lld %lld %lld", (long long)want_ms[0][1],
              (long long)want_ms[1][1], (long long)want_ms[4][1], (long long)want_ms[3][5],
              (long long)want_ms[0][0]);
    HLT_CHECK(check_list_times("ascending", 0, "", 0) == 6, "ascending lists all six");
    HLT_CHECK(check_list_times("descending", 0, "", 1) == 6, "descending lists all six");
    HLT_CHECK(check_list_times("task's newest", t_a, "", 1) == 5, "the task's five");
    HLT_CHECK(check_list_times("team ops", 0, "ops", 0) == 5, "team ops: five");
    HLT_CHECK(check_list_times("team ops descending", 0, "ops", 1) == 5, "team ops desc: five");
}

/* ------------------------------------------- the lists' plan mode (hl_db) */

/* HL_STMT_LIST statements run under force_generic_plan, those run by
 * hl_db_query_custom under force_custom_plan, prepared (parsed once), and
 * every other one under the configured mode, however they alternate on one
 * connection, including after a rollback, or a COMMIT of a failed
 * transaction, undid the SET made inside it. And hl_db's sessions run
 * without JIT, though the database asks for it. */
static hl_stmt q_mode_list = HL_STMT_LIST("SELECT current_setting('plan_cache_mode'), $1::int8");
static hl_stmt q_mode_plain = HL_STMT("SELECT current_setting('plan_cache_mode'), $1::int8");
static hl_stmt q_jit = HL_STMT("SELECT current_setting('jit')");
static hl_stmt q_mode_filtered =
    HL_STMT_LIST("SELECT current_setting('plan_cache_mode'), $1::int8 /* filtered */");
static hl_stmt q_prepared = HL_STMT("SELECT count(*) FROM pg_prepared_statements"
                                    " WHERE statement LIKE '%/* filtered */'"
                                    " AND statement NOT LIKE '%pg_prepared_statements%'");

/* How many of the session's prepared statements are q_mode_filtered; -1
 * (the check fails, naming the error) when that cannot be read. */
static long prepared_filtered(hl_conn *c, orr_arena *a)
{
    orr_err e;
    orr_err_clear(&e);
    PGresult *r = NULL;
    if (hl_db_query(c, a, &q_prepared, 0, NULL, &r, &e) != ORR_OK || PQntuples(r) != 1) {
        HLT_CHECK(0, "pg_prepared_statements: %s", e.msg);
        return -1;
    }
    return (long)hl_val_i64(r, 0, 0);
}

static void mode_is(hl_conn *c, orr_arena *a, hl_stmt *st, int custom, const char *want,
                    const char *step)
{
    orr_err e;
    orr_err_clear(&e);
    PGresult *r = NULL;
    const char *p[1] = {"7"};
    orr_status s =
        custom ? hl_db_query_custom(c, a, st, 1, p, &r, &e) : hl_db_query(c, a, st, 1, p, &r, &e);
    HLT_CHECK(s == ORR_OK && PQntuples(r) == 1, "%s: %s", step, e.msg);
    if (s != ORR_OK)
        return;
    HLT_CHECK(strcmp(hl_val(r, 0, 0), want) == 0, "%s: plan_cache_mode %s, want %s", step,
              hl_val(r, 0, 0), want);
    /* The list's results are binary, the others text. */
    HLT_CHECK(st->binary ? hl_bin_i64(r, 0, 1) == 7 : hl_val_i64(r, 0, 1) == 7, "%s: $1", step);
}

static void test_plan_mode(const hlt_db *db)
{
    char set_jit[128];
    snprintf(set_jit, sizeof set_jit, "ALTER DATABASE \"%s\" SET jit = on", db->name);
    PQclear(hlt_sql(db, set_jit));
    hl_db_opts o = {.dsn = db->dsn, .size = 1};
    hl_db *pool = NULL;
    orr_err e;
    orr_err_clear(&e);
    HLT_CHECK(hl_db_create(&o, &pool, &e) == ORR_OK, "pool: %s", e.msg);
    hl_conn *c = NULL;
    if (!pool || hl_db_get(pool, &c, &e) != ORR_OK) {
        HLT_CHECK(0, "connection: %s", e.msg);
        hl_db_destroy(pool);
        return;
    }
    orr_arena *a = orr_arena_create(0);
    mode_is(c, a, &q_mode_plain, 0, "auto", "plain first");
    mode_is(c, a, &q_mode_list, 0, "force_generic_plan", "list");
    mode_is(c, a, &q_mode_list, 0, "force_generic_plan", "list again");
    HLT_CHECK(prepared_filtered(c, a) == 0, "a filtered list prepared before it ran");
    mode_is(c, a, &q_mode_filtered, 1, "force_custom_plan", "filtered list (planned anew)");
    HLT_CHECK(prepared_filtered(c, a) == 1, "the filtered list is not prepared");
    mode_is(c, a, &q_mode_filtered, 1, "force_custom_plan", "filtered list again");
    mode_is(c, a, &q_mode_list, 0, "force_generic_plan", "list after a filtered one");
    mode_is(c, a, &q_mode_plain, 0, "auto", "plain after a list");
    mode_is(c, a, &q_mode_filtered, 1, "force_custom_plan", "filtered after plain");
    mode_is(c, a, &q_mode_plain, 0, "auto", "plain after a filtered list");
    HLT_CHECK(hl_db_begin(c, &e) == ORR_OK, "begin: %s", e.msg);
    mode_is(c, a, &q_mode_filtered, 1, "force_custom_plan", "filtered list in a transaction");
    hl_db_rollback(c); /* undoes the SET */
    mode_is(c, a, &q_mode_filtered, 1, "force_custom_plan", "filtered list after rollback");
    mode_is(c, a, &q_mode_plain, 0, "auto", "plain after the filtered list after rollback");
    HLT_CHECK(hl_db_begin(c, &e) == ORR_OK, "begin: %s", e.msg);
    mode_is(c, a, &q_mode_list, 0, "force_generic_plan", "list in a transaction");
    hl_db_rollback(c); /* undoes the SET */
    mode_is(c, a, &q_mode_list, 0, "force_generic_plan", "list after rollback");
    HLT_CHECK(hl_db_begin(c, &e) == ORR_OK, "begin: %s", e.msg);
    mode_is(c, a, &q_mode_plain, 0, "auto", "plain in a transaction");
    hl_db_rollback(c);
    mode_is(c, a, &q_mode_plain, 0, "auto", "plain after rollback");
    /* A COMMIT of a failed transaction rolls back too: the SET made in it
     * is undone as well. */
    HLT_CHECK(hl_db_begin(c, &e) == ORR_OK, "begin: %s", e.msg);
    mode_is(c, a, &q_mode_list, 0, "force_generic_plan", "list in a transaction that fails");
    HLT_CHECK(hl_db_cmd(c, "SELECT 1 / 0", &e) != ORR_OK, "the failing statement fails");
    (void)hl_db_commit(c, &e);
    mode_is(c, a, &q_mode_list, 0, "force_generic_plan", "list after the failed commit");
    /* No JIT in hl_db's sessions, though the database asks for it. */
    PGresult *r = NULL;
    orr_err_clear(&e);
    HLT_CHECK(hl_db_query(c, a, &q_jit, 0, NULL, &r, &e) == ORR_OK && PQntuples(r) == 1 &&
                  strcmp(hl_val(r, 0, 0), "off") == 0,
              "jit in halleyd's session: %s %s", r && PQntuples(r) == 1 ? hl_val(r, 0, 0) : "-",
              e.msg);
    orr_arena_destroy(a);
    hl_db_put(pool, c);
    hl_db_destroy(pool);
}

/* What the generic plan of list statement `name` did for these arguments
 * (EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of the top node, which counts
 * its children's): the rows it returned and the shared buffers it touched
 * (hit + read). 0 on success, -1 when the statement is unknown or a
 * figure was missing from the plan. */
static int walk_cost(const hlt_db *db, const char *name, const char *args, long *rows,
                     long *buffers)
{
    const char *sql = hl_list_sql(name);
    if (!sql)
        return -1;
    const char *fmt = "SET jit = off; SET plan_cache_mode = force_generic_plan;"
                      " PREPARE w AS %s; EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE w(%s)";
    size_t n = strlen(fmt) + strlen(sql) + strlen(args) + 1;
    char *q = malloc(n);
    if (!q)
        return -1;
    snprintf(q, n, fmt, sql, args);
    PGresult *r = hlt_sql(db, q);
    free(q);
    const char *plan = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "";
    const char *keys[3] = {
        "\"Actual Rows\": ", "\"Shared Hit Blocks\": ", "\"Shared Read Blocks\": "};
    long v[3];
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        const char *at = strstr(plan, keys[k]);
        ok = ok && at;
        v[k] = at ? strtol(at + strlen(keys[k]), NULL, 10) : 0;
    }
    PQclear(r);
    *rows = v[0];
    *buffers = v[1] + v[2];
    return ok ? 0 : -1;
}

/* Statement `name`, run with the arguments fmt makes, returns want rows
 * and touches fewer than WALK_MAX_BUFFERS buffers (walk_cost). */
#define WALK_MAX_BUFFERS 150
__attribute__((format(printf, 4, 5))) static void walk_is(const hlt_db *db, const char *name,
                                                          long want, const char *fmt, ...)
{
    char args[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    long rows = -1, buffers = -1;
    int ok = walk_cost(db, name, args, &rows, &buffers);
    HLT_CHECK(ok == 0 && rows == want && buffers < WALK_MAX_BUFFERS,
              "%s(%s): %ld rows (want %ld), %ld buffers (want < %d)", name, args, rows, want,
              buffers, WALK_MAX_BUFFERS);
    fprintf(stderr, "walk %s(%s): %ld rows, %ld buffers\n", name, args, rows, buffers);
}

/* The lists that run under one generic plan walk an index in the list's
 * order and stop at the page: among 60,000 instances of one task (one in
 * ten failed), the first page, the page of 5 after the middle row, a state
 * no instance is in and a search of the task's name each touch a few
 * buffers to a couple of dozen, where a walk of the wrong index, or a sort
 * of every match, touches the table's (its heap alone is about a
 * thousand). The statistics are read from every row (a sample could tip a
 * plan), and the plans the statements would get are checked, not the
 * timings. */
static void test_list_walks(hlt_db *db)
{
    enum { N = 60000 };
    int64_t t = save_task(0, "plan_walks", "ops", NULL, ORR_OK, NULL);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO instances (task_id, task_version, schedule_time, state, executor)"
             " SELECT %lld, 1, timestamptz '2020-01-01 00:00+00' + g * interval '1 hour',"
             " CASE WHEN g %% 10 = 0 THEN 'failed' ELSE 'success' END, 'exec-w'"
             " FROM generate_series(1, %d) g",
             (long long)t, N);
    /* No autovacuum: it could analyze the rows again from a sample. */
    PQclear(hlt_sql(db, "ALTER TABLE instances SET (autovacuum_enabled = off)"));
    PQclear(hlt_sql(db, sql));
    PQclear(hlt_sql(db, "SET default_statistics_target = 1000; ANALYZE instances"));
    snprintf(sql, sizeof sql,
             "SELECT id, (extract(epoch from schedule_time) * 1000)::int8 FROM instances"
             " WHERE task_id = %lld ORDER BY schedule_time OFFSET %d LIMIT 1",
             (long long)t, N / 2);
    PGresult *r = hlt_sql(db, sql);
    if (PQntuples(r) != 1) {
        HLT_CHECK(0, "the middle row of plan_walks");
        PQclear(r);
        return;
    }
    char from[32];
    snprintf(from, sizeof from, "%lld", atoll(PQgetvalue(r, 0, 1)) - 1000LL * 3600 * (N / 4));
    const char *mid_id = PQgetvalue(r, 0, 0), *mid_ms = PQgetvalue(r, 0, 1);
    walk_is(db, "all", 6, "0, 6");
    walk_is(db, "all", 6, "%s, 6", mid_id);
    walk_is(db, "desc_first", 6, "6");
    walk_is(db, "desc_after", 6, "%s, 6, %s", mid_id, mid_ms);
    walk_is(db, "task_desc_first", 6, "%lld, 6", (long long)t);
    walk_is(db, "task_desc_after", 6, "%s, %lld, %s, 6", mid_id, (long long)t, mid_ms);
    walk_is(db, "range_desc_first", 6, "'%s', '%s', 6", from, mid_ms);
    walk_is(db, "range_desc_after", 6, "'%s', 'Infinity', 6, %s, %s", from, mid_id, mid_ms);
    walk_is(db, "states_desc", 6, "'{failed,timed_out}', 6, %s, '%s'", mid_id, mid_ms);
    walk_is(db, "states_desc", 0, "'{timed_out}', 6, %s, '%s'", mid_id, mid_ms);
    walk_is(db, "states_asc", 6, "'{failed,timed_out}', 6, %s", mid_id);
    walk_is(db, "states_asc", 0, "'{timed_out}', 6, %s", mid_id);
    walk_is(db, "search_desc", 6, "'walks', 6, " HL_SEARCH_NO_BOUND ", 0, 'Infinity'");
    walk_is(db, "search_desc", 6, "'walks', 6, " HL_SEARCH_NO_BOUND ", %s, '%s'", mid_id, mid_ms);
    walk_is(db, "search_asc", 6, "'walks', 6, " HL_SEARCH_NO_BOUND ", 0");
    walk_is(db, "search_asc", 6, "'walks', 6, " HL_SEARCH_NO_BOUND ", %s", mid_id);
    PQclear(r);
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
        return hlt_finish("halley_it_lists");
    }
    cl = hlt_client(&s, NULL);
    test_users();
    test_instances();
    test_range_desc();
    test_states_alone();
    test_search_alone();
    test_last_run();
    test_stats(&db);
    test_list_times(&db);
    test_plan_mode(&db);
    test_list_walks(&db);
    HLT_CHECK(hlt_exit_code_drift(&db) == 0, "each instance's exit code is its attempt's");
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_lists");
}
