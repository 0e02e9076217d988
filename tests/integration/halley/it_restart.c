/*
 * it_restart.c - PostgreSQL restarted under a running halleyd.
 *
 * Starts its OWN PostgreSQL with deploy/stack.sh (a private var dir and port
 * base, pg only), so it never restarts the shared test stack. While the
 * server is down, calls answer UNAVAILABLE quickly and halleyd keeps running
 * (Health still answers, saying db_ok = false); once it is back, calls
 * succeed again, the LISTEN connection comes back and new events stream.
 *
 *   ORRERY_SOURCE_DIR          repository root (set by ctest)
 *   ORRERY_HALLEY_RESTART_PORT_BASE  port base of the private stack (default: a free
 *                                    port in 20000..29999)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static char var_dir[256], stack[512], base[16];

static int stack_cmd(const char *what, char *out, size_t n)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "ORRERY_VAR_DIR='%s' ORRERY_PORT_BASE=%s '%s' %s%s 2>>'%s/stack.err'",
             var_dir, base, stack, what, strcmp(what, "env") ? " pg" : "", var_dir);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t len = 0;
    char line[512];
    while (fgets(line, sizeof line, p))
        if (out && len + strlen(line) < n)
            len += (size_t)snprintf(out + len, n - len, "%s", line);
    return pclose(p);
}

/* Stops the private stack and removes its var dir, printing the launcher's
 * errors first when why is set. Once only: it also runs at exit. */
static void stack_remove(const char *why)
{
    static int removed;
    if (removed)
        return;
    removed = 1;
    char cmd[600];
    stack_cmd("stop", NULL, 0);
    if (why) {
        fprintf(stderr, "FAIL: %s; %s/stack.err:\n", why, var_dir);
        snprintf(cmd, sizeof cmd, "cat '%s/stack.err' >&2", var_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "(no stack.err)\n");
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", var_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", var_dir);
}

/* At exit, also an exit(1) of an hlt helper on a fatal error: registered
 * before hlt's own handler (the first hlt_start registers it), so it runs
 * after that one killed the halleyds. */
static void stack_at_exit(void)
{
    stack_remove(NULL);
}

/* A port in 20000..29999 that nothing listens on (pg takes base + 0). */
static int free_port_base(void)
{
    for (int i = 0; i < 500; i++) {
        int port = 20000 + (int)((getpid() * 7919 + i * 104729) % 10000);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return port;
    }
    return 16440;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static orr_status health(orr_rpc_client *c, int *db_ok, int *listener_ok)
{
    Orrery__Halley__V1__HealthRequest hr = ORRERY__HALLEY__V1__HEALTH_REQUEST__INIT;
    Orrery__Halley__V1__HealthResponse *h = NULL;
    orr_err err;
    orr_status s = hlt_call(c, "Health", &hr, &h, &err);
    if (h) {
        *db_ok = h->db_ok;
        *listener_ok = h->listener_ok;
        FREE(h);
    }
    return s;
}

static orr_status get_task(orr_rpc_client *c, const char *name, orr_err *err)
{
    Orrery__Halley__V1__GetTaskRequest g = ORRERY__HALLEY__V1__GET_TASK_REQUEST__INIT;
    g.name = (char *)name; /* by name: never served from the cache */
    Orrery__Halley__V1__Task *t = NULL;
    orr_status s = hlt_call(c, "GetTask", &g, &t, err);
    if (t)
        FREE(t);
    return s;
}

int main(void)
{
    const char *src = getenv("ORRERY_SOURCE_DIR");
    if (!src) {
        fprintf(stderr, "FAIL: ORRERY_SOURCE_DIR is not set (ctest sets it)\n");
        return 1;
    }
    snprintf(stack, sizeof stack, "%s/deploy/stack.sh", src);
    if (getenv("ORRERY_HALLEY_RESTART_PORT_BASE"))
        snprintf(base, sizeof base, "%s", getenv("ORRERY_HALLEY_RESTART_PORT_BASE"));
    else
        snprintf(base, sizeof base, "%d", free_port_base());
    snprintf(var_dir, sizeof var_dir, "/tmp/halley_it_restart_%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", var_dir);
    if (system(cmd) != 0 || stack_cmd("start", NULL, 0) != 0) {
        snprintf(cmd, sizeof cmd, "cannot start a private PostgreSQL with %s", stack);
        stack_remove(cmd);
        return 1;
    }
    atexit(stack_at_exit);
    char env[2048] = "";
    stack_cmd("env", env, sizeof env);
    char *dsn = strstr(env, "ORRERY_PG_DSN=");
    if (!dsn) {
        stack_remove("stack.sh env gave no ORRERY_PG_DSN");
        return 1;
    }
    dsn += strlen("ORRERY_PG_DSN=");
    dsn[strcspn(dsn, "\n")] = 0;
    if (*dsn == '\'' || *dsn == '"') { /* shell quoting */
        dsn++;
        dsn[strlen(dsn) - 1] = 0;
    }
    setenv("ORRERY_PG_DSN", dsn, 1);

    hlt_db db;
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        goto out;
    }
    orr_rpc_client *c = hlt_client(&s, NULL);
    orr_err err;
    Orrery__Halley__V1__CreateTeamRequest tq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    tq.name = "ops";
    Orrery__Halley__V1__Team *team = NULL;
    HLT_CHECK(hlt_call(c, "CreateTeam", &tq, &team, &err) == ORR_OK, "team %s", err.msg);
    if (team)
        FREE(team);
    char spec[512];
    Orrery__Halley__V1__CreateTaskRequest cq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    cq.spec_json = (char *)hlt_shell_spec(spec, sizeof spec, "survivor", "ops", NULL);
    Orrery__Halley__V1__Task *t = NULL;
    HLT_CHECK(hlt_call(c, "CreateTask", &cq, &t, &err) == ORR_OK, "task %s", err.msg);
    if (t)
        FREE(t);
    HLT_CHECK(get_task(c, "survivor", &err) == ORR_OK, "read before the restart");

    /* Down. */
    HLT_CHECK(stack_cmd("stop", NULL, 0) == 0, "postgres stopped");
    int unavailable = 0, slow = 0;
    for (int i = 0; i < 10; i++) {
        double t0 = now_s();
        orr_status st = get_task(c, "survivor", &err);
        double dt = now_s() - t0;
        unavailable += st == ORR_EUNAVAIL;
        slow += dt > 5.0;
    }
    /* A call that waited for the database would end in the client's 10 s
     * deadline (not UNAVAILABLE); the 5 s bound only catches such a hang and
     * leaves a loaded machine its time. */
    HLT_CHECK(unavailable == 10, "UNAVAILABLE while down (%d of 10)", unavailable);
    HLT_CHECK(slow == 0, "answered without waiting for the database (%d calls over 5 s)", slow);
    int db_ok = 1, lis = 1;
    HLT_CHECK(health(c, &db_ok, &lis) == ORR_OK && !db_ok, "Health answers and says db down");
    HLT_CHECK(kill(s.pid, 0) == 0, "halleyd still running");

    /* Back. */
    HLT_CHECK(stack_cmd("start", NULL, 0) == 0, "postgres started again");
    double t0 = now_s();
    orr_status st = ORR_EUNAVAIL;
    while (now_s() - t0 < 20 && (st = get_task(c, "survivor", &err)) != ORR_OK)
        usleep(100000);
    HLT_CHECK(st == ORR_OK, "calls succeed again after %.1f s", now_s() - t0);
    t0 = now_s();
    while (now_s() - t0 < 10 && !(health(c, &db_ok, &lis) == ORR_OK && db_ok && lis))
        usleep(100000);
    HLT_CHECK(db_ok && lis, "Health: db and listener back");
    /* A write and its event after the restart. */
    Orrery__Halley__V1__WatchEventsRequest wr = ORRERY__HALLEY__V1__WATCH_EVENTS_REQUEST__INIT;
    /* Resume from the newest id (from_latest would race with the write:
     * the stream's first read may run after it). */
    PGresult *mx = hlt_sql(&db, "SELECT coalesce(max(id), 0) FROM events");
    wr.from_id = atoll(PQgetvalue(mx, 0, 0));
    PQclear(mx);
    orr_rpc_stream *w = NULL;
    HLT_CHECK(orr_rpc_stream_open(c, "WatchEvents", &wr.base, 0, &w, &err) == ORR_OK, "watch");
    tq.name = "after_restart";
    team = NULL;
    HLT_CHECK(hlt_call(c, "CreateTeam", &tq, &team, &err) == ORR_OK, "write after restart: %s",
              err.msg);
    if (team)
        FREE(team);
    ProtobufCMessage *m = NULL;
    orr_status ns = w ? orr_rpc_stream_next(w, &m, 5000, &err) : ORR_EINTERNAL;
    HLT_CHECK(ns == ORR_OK && strcmp(((Orrery__Halley__V1__Event *)m)->kind, "team.created") == 0,
              "event streamed after the restart: %s %s", orr_status_name(ns), err.msg);
    if (ns != ORR_OK) {
        PGresult *q = hlt_sql(&db, "SELECT string_agg(id::text || ':' || kind || ':' || "
                                   "created_at::text, ' ' ORDER BY id) || ' | ' || "
                                   "coalesce((SELECT string_agg(pid::text || ' ' || "
                                   "coalesce(backend_xid::text, '-') || ' ' || "
                                   "coalesce(xact_start::text, '-') || ' ' || "
                                   "coalesce(state, '-') || ' ' || left(query, 60), '; ') FROM "
                                   "pg_stat_activity WHERE datname = current_database()), '') "
                                   "FROM events");
        fprintf(stderr, "events and sessions: %s\n", PQgetvalue(q, 0, 0));
        PQclear(q);
    }
    if (m)
        FREE(m);
    if (w)
        orr_rpc_stream_close(w);
    orr_rpc_client_destroy(c);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits cleanly");
out:
    hlt_db_drop(&db);
    stack_remove(NULL);
    return hlt_finish("halley_it_restart");
}
