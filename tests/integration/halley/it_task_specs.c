/*
 * it_task_specs.c - halleyd refuses, at CreateTask and UpdateTask, a task
 * whose schedule or time zone keplerd could not use, and accepts the ones it
 * can.
 *
 * Bad schedules: fields out of range, bad steps and ranges, Quartz-only
 * syntax in the wrong field or dialect, years before 1970 ("1800-..."),
 * schedules that parse but never fire again (Feb 30, a year list in the
 * past), blank and overlong text. Bad zones: unknown names, paths that try to
 * leave the zone database, files there that are not zones, empty and
 * overlong names. Each is INVALID_ARGUMENT naming spec.schedule or
 * spec.timezone with a message that says what is wrong, and leaves no task
 * behind (GetTask by name finds nothing). Good ones (Unix and Quartz, DST
 * zones, a leap-day schedule, no schedule at all) are saved. An UpdateTask
 * with a bad schedule or zone keeps the current version.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

typedef Orrery__Halley__V1__Task Task;

static orr_rpc_client *cl;
static int seq;

/* A shell task spec named name with schedule and timezone (NULL = left out);
 * malloc'd JSON text, free() it. */
static char *spec_json(const char *name, const char *schedule, const char *zone)
{
    json_t *s = json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", name, "team", "data", "type", "shell",
                          "config", "command", "echo hi");
    if (schedule)
        json_object_set_new(s, "schedule", json_string(schedule));
    if (zone)
        json_object_set_new(s, "timezone", json_string(zone));
    char *out = json_dumps(s, JSON_COMPACT);
    json_decref(s);
    if (!out)
        abort();
    return out;
}

/* 1 if a task named name exists. */
static int task_exists(const char *name)
{
    Orrery__Halley__V1__GetTaskRequest g = ORRERY__HALLEY__V1__GET_TASK_REQUEST__INIT;
    g.name = (char *)name;
    Task *t = NULL;
    orr_err err;
    orr_status st = hlt_call(cl, "GetTask", &g, &t, &err);
    if (t)
        FREE(t);
    HLT_CHECK(st == ORR_OK || st == ORR_ENOTFOUND, "GetTask %s: %s", name, err.msg);
    return st == ORR_OK;
}

/* CreateTask named name (NULL: a fresh name) with schedule and zone; want
 * ORR_OK, or ORR_EINVAL naming field with a message containing says. Returns
 * the new task's id (0 if refused). */
static int64_t create_named(const char *name_or_null, const char *schedule, const char *zone,
                            const char *field, const char *says)
{
    char name[32];
    snprintf(name, sizeof name, "%s", name_or_null ? name_or_null : "");
    if (!name_or_null)
        snprintf(name, sizeof name, "spec_%d", ++seq);
    char *spec = spec_json(name, schedule, zone);
    Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    rq.spec_json = spec;
    rq.actor = "user:ann";
    Task *t = NULL;
    orr_err err;
    orr_err_clear(&err);
    orr_status st = hlt_call(cl, "CreateTask", &rq, &t, &err);
    int64_t id = 0;
    if (!field) {
        HLT_CHECK(
            st == ORR_OK && t && t->id > 0 && strcmp(t->schedule, schedule ? schedule : "") == 0,
            "accepted: schedule \"%s\" zone \"%s\": got %s (%s: %s)", schedule ? schedule : "",
            zone ? zone : "", orr_status_name(st), err.field, err.msg);
        id = t ? t->id : 0;
    } else {
        HLT_CHECK(st == ORR_EINVAL && strcmp(err.field, field) == 0 && err.msg[0] &&
                      strstr(err.msg, says),
                  "refused: schedule \"%.80s\" zone \"%.80s\": got %s field \"%s\" msg \"%s\", "
                  "want INVALID_ARGUMENT %s \"...%s...\"",
                  schedule ? schedule : "", zone ? zone : "", orr_status_name(st), err.field,
                  err.msg, field, says);
        if (getenv("DBG"))
            fprintf(stderr, "DBG %s | %s | %s\n", schedule ? schedule : "-", zone ? zone : "-",
                    err.msg);
        HLT_CHECK(!task_exists(name), "refused task %s was not saved", name);
    }
    if (t)
        FREE(t);
    free(spec);
    return id;
}

static int64_t create(const char *schedule, const char *zone, const char *field, const char *says)
{
    return create_named(NULL, schedule, zone, field, says);
}

#define BAD_SCHEDULE(expr, says) create(expr, NULL, "spec.schedule", says)
#define BAD_ZONE(zone, says)     create("0 * * * *", zone, "spec.timezone", says)
#define GOOD(expr, zone)         create(expr, zone, NULL, NULL)

static void test_bad_schedules(void)
{
    /* Out of range, per field and dialect. */
    BAD_SCHEDULE("61 * * * *", "minute");
    BAD_SCHEDULE("* 24 * * *", "hour");
    BAD_SCHEDULE("0 0 32 * *", "day-of-month");
    BAD_SCHEDULE("0 0 0 * *", "day-of-month");
    BAD_SCHEDULE("0 0 1 13 *", "month");
    BAD_SCHEDULE("0 0 * * 8", "day-of-week");
    BAD_SCHEDULE("60 0 0 * * ?", "second");
    BAD_SCHEDULE("0 0 0 ? * 0", "day-of-week"); /* Quartz weekdays are 1-7 */
    BAD_SCHEDULE("0 0 0 ? * FUN", "day-of-week");
    BAD_SCHEDULE("0 0 0 1 JANUARY ?", "month");
    /* Steps and ranges. */
    BAD_SCHEDULE("*/0 * * * *", "minute");
    BAD_SCHEDULE("*/61 * * * *", "minute");
    BAD_SCHEDULE("5-70 * * * *", "minute");
    BAD_SCHEDULE("1-2-3 * * * *", "minute");
    BAD_SCHEDULE("0 0-/2 * * *", "hour");
    BAD_SCHEDULE("0,,5 * * * *", "minute");
    BAD_SCHEDULE("0 0 0 ? * MON#6", "day-of-week");
    BAD_SCHEDULE("0 0 0 L-31 * ?", "day-of-month");
    /* Quartz-only syntax in the wrong place. */
    BAD_SCHEDULE("? * * * *", "minute");
    BAD_SCHEDULE("0 L * * * ?", "minute");
    BAD_SCHEDULE("0 0 0 ? * 15W", "day-of-week");
    BAD_SCHEDULE("0 0 12 * * *", "?");       /* Quartz: one of the day fields must be ? */
    BAD_SCHEDULE("0 0 12 ? * ?", "both");    /* ... and only one */
    BAD_SCHEDULE("0 0 1 1 ? 2030", "month"); /* a Unix line with a year: ? lands in month */
    /* Years before 1970 (and past the searchable range). */
    BAD_SCHEDULE("0 0 0 1 1 ? 1800-2030", "year");
    BAD_SCHEDULE("0 0 0 1 1 ? 1800", "year");
    BAD_SCHEDULE("0 0 0 1 1 ? 2200", "year");
    /* Parse, but never fire again. */
    BAD_SCHEDULE("0 0 0 30 2 ?", "never fires");
    BAD_SCHEDULE("0 0 31 4 *", "never fires");
    BAD_SCHEDULE("0 0 0 1 1 ? 1999-2020", "never fires");
    /* Shapes: unknown macro, too few / too many fields, blank, overlong. */
    BAD_SCHEDULE("@never", "macro");
    BAD_SCHEDULE("0 * * *", "pattern"); /* the schema's check of the shape */
    BAD_SCHEDULE("0 0 0 1 1 ? 2030 5", "pattern");
    BAD_SCHEDULE("   ", "pattern"); /* "" is "no schedule"; blanks are not */
    BAD_SCHEDULE("\t", "pattern");
    char longexpr[400];
    memset(longexpr, '1', sizeof longexpr - 1);
    longexpr[sizeof longexpr - 1] = '\0';
    memcpy(longexpr, "0 0 * * ", 8);
    BAD_SCHEDULE(longexpr, "at most");
    /* Within the schema's length, but a list far too long for any field. */
    char biglist[250];
    size_t n = 0;
    for (int i = 0; n + 4 < 240; i++)
        n += (size_t)snprintf(biglist + n, sizeof biglist - n, "%s%d", i ? "," : "", i % 60);
    snprintf(biglist + n, sizeof biglist - n, ",99 * * * *");
    BAD_SCHEDULE(biglist, "\"99\" out of range");
}

static void test_bad_zones(void)
{
    BAD_ZONE("Mars/Olympus_Mons", "unknown time zone");
    BAD_ZONE("Europe/Berlim", "unknown time zone");
    BAD_ZONE("Europe", "unknown time zone");     /* a folder of the database */
    BAD_ZONE("etc/passwd", "unknown time zone"); /* looked up under the database only */
    BAD_ZONE("/etc/passwd", "invalid time zone name");
    BAD_ZONE("../../etc/passwd", "pattern");
    BAD_ZONE("Europe/../../../etc/passwd", "pattern");
    BAD_ZONE("Europe//Berlin", "invalid time zone name");
    BAD_ZONE("leapseconds", "malformed");            /* a text file of the database */
    BAD_ZONE("right/Europe/Berlin", "leap seconds"); /* leap-second zones are refused */
    BAD_ZONE("", "at least");
    BAD_ZONE("Europe/Berlin ", "pattern");
    char longzone[120];
    memset(longzone, 'A', sizeof longzone - 1);
    longzone[sizeof longzone - 1] = '\0';
    BAD_ZONE(longzone, "at most");
    /* A bad zone is refused even for a task without a schedule. */
    create(NULL, "Mars/Olympus_Mons", "spec.timezone", "unknown time zone");
}

static int64_t kept_id;

static void test_good(void)
{
    GOOD("*/15 * * * *", NULL);
    GOOD("0 30 2 * * ?", "Europe/Berlin");      /* inside the spring-forward gap */
    GOOD("0 30 1 ? * SUN", "America/New_York"); /* inside the fall-back fold */
    GOOD("@daily", "Australia/Lord_Howe");
    GOOD("0 0 12 ? * MON-FRI 2030-2099", "Asia/Kolkata");
    GOOD("0 0 12 LW * ?", "Europe/London");
    GOOD("0 0 0 ? * 6#5", "UTC");
    GOOD("0 0 29 2 *", "Pacific/Chatham"); /* a leap day */
    GOOD("0 22-2/2 * * 1-5", "Etc/GMT-14");
    GOOD("", "Europe/Berlin"); /* manual only */
    kept_id = create_named("spec_kept", "0 * * * *", "UTC", NULL, NULL);
}

static void update(const char *schedule, const char *zone, orr_status want, const char *field,
                   int64_t want_version)
{
    char *spec = spec_json("spec_kept", schedule, zone);
    Orrery__Halley__V1__UpdateTaskRequest u = ORRERY__HALLEY__V1__UPDATE_TASK_REQUEST__INIT;
    u.id = kept_id;
    u.actor = "user:bob";
    u.spec_json = spec;
    Task *t = NULL;
    orr_err err;
    orr_err_clear(&err);
    orr_status st = hlt_call(cl, "UpdateTask", &u, &t, &err);
    HLT_CHECK(st == want && (!field || (strcmp(err.field, field) == 0 && err.msg[0])),
              "UpdateTask \"%s\" \"%s\": %s %s: %s", schedule ? schedule : "", zone ? zone : "",
              orr_status_name(st), err.field, err.msg);
    if (t)
        FREE(t);
    free(spec);
    Orrery__Halley__V1__GetTaskRequest g = ORRERY__HALLEY__V1__GET_TASK_REQUEST__INIT;
    g.id = kept_id;
    t = NULL;
    st = hlt_call(cl, "GetTask", &g, &t, &err);
    HLT_CHECK(st == ORR_OK && t->current_version == want_version, "current version %lld, want %lld",
              t ? (long long)t->current_version : -1LL, (long long)want_version);
    if (t)
        FREE(t);
}

static void test_update(void)
{
    HLT_CHECK(kept_id > 0, "a task to update");
    if (!kept_id)
        return;
    update("0 0 0 30 2 ?", "UTC", ORR_EINVAL, "spec.schedule", 1);
    update("61 * * * *", "UTC", ORR_EINVAL, "spec.schedule", 1);
    update("0 * * * *", "Mars/Olympus_Mons", ORR_EINVAL, "spec.timezone", 1);
    update("0 30 2 * * ?", "Europe/Berlin", ORR_OK, NULL, 2);
    update("0 0 0 1 1 ? 1800", "Europe/Berlin", ORR_EINVAL, "spec.schedule", 2);
}

int main(void)
{
    hlt_db db;
    hlt_db_create(&db);
    hlt_server s;
    if (hlt_migrate(db.dsn) != 0 || hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_task_specs");
    }
    cl = hlt_client(&s, NULL);
    Orrery__Halley__V1__CreateTeamRequest tr = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    tr.name = "data";
    tr.actor = "admin";
    Orrery__Halley__V1__Team *team = NULL;
    orr_err err;
    HLT_CHECK(hlt_call(cl, "CreateTeam", &tr, &team, &err) == ORR_OK, "CreateTeam: %s", err.msg);
    if (team)
        FREE(team);
    test_bad_schedules();
    test_bad_zones();
    test_good();
    test_update();
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_task_specs");
}
