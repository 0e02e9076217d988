/*
 * hlt.c - harness of halleyd's integration tests (see hlt.h).
 */
#include "hlt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HALLEYD_PATH
#error "HALLEYD_PATH must name the halleyd binary"
#endif

int hlt_passed, hlt_failed;
static int hlt__db_seq;

/* Servers still running when the test exits (an exit() on a fatal setup
 * error included) are killed, so no halleyd outlives its test; then the log
 * and port files of every server it started are removed, each log printed
 * on stderr first when a check failed. */
#define HLT_MAX_SERVERS 16
static pid_t hlt__pids[HLT_MAX_SERVERS];
static int hlt__servers; /* servers started: files /tmp/halley_it_<pid>_<1..n>.* */

static void hlt__server_file(char *buf, size_t size, int seq, const char *ext)
{
    snprintf(buf, size, "/tmp/halley_it_%d_%d.%s", (int)getpid(), seq, ext);
}

static void hlt__print_log_end(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char buf[3000];
    long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    if (fseek(f, end > (long)sizeof buf ? end - (long)sizeof buf : 0, SEEK_SET) != 0)
        rewind(f);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fprintf(stderr, "---- %s (end)\n%.*s\n", path, (int)n, buf);
}

static void hlt__at_exit(void)
{
    for (int i = 0; i < HLT_MAX_SERVERS; i++)
        if (hlt__pids[i] > 0) {
            kill(hlt__pids[i], SIGKILL);
            waitpid(hlt__pids[i], NULL, 0);
            hlt__pids[i] = 0;
        }
    for (int seq = 1; seq <= hlt__servers; seq++) {
        char path[256];
        hlt__server_file(path, sizeof path, seq, "log");
        if (hlt_failed)
            hlt__print_log_end(path);
        unlink(path);
        hlt__server_file(path, sizeof path, seq, "port");
        unlink(path);
    }
}

static void hlt__track(pid_t pid, int add)
{
    static int registered;
    if (!registered) {
        atexit(hlt__at_exit);
        registered = 1;
    }
    for (int i = 0; i < HLT_MAX_SERVERS; i++)
        if (add ? hlt__pids[i] == 0 : hlt__pids[i] == pid) {
            hlt__pids[i] = add ? pid : 0;
            return;
        }
}

int64_t hlt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void hlt__sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* DSN for base with dbname replaced. */
static void hlt__dsn_with_db(const char *base, const char *dbname, char *out, size_t n)
{
    char *errmsg = NULL;
    PQconninfoOption *opts = PQconninfoParse(base, &errmsg);
    if (!opts) {
        fprintf(stderr, "ORRERY_PG_DSN does not parse: %s\n", errmsg ? errmsg : "?");
        exit(1);
    }
    size_t len = 0;
    out[0] = 0;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        const char *v = o->val;
        if (strcmp(o->keyword, "dbname") == 0)
            v = dbname;
        if (!v || !*v)
            continue;
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s='", len ? " " : "",
                                o->keyword);
        for (const char *p = v; *p && len + 3 < n; p++) {
            if (*p == '\'' || *p == '\\')
                out[len++] = '\\';
            out[len++] = *p;
        }
        if (len + 2 < n) {
            out[len++] = '\'';
            out[len] = 0;
        }
    }
    PQconninfoFree(opts);
}

static PGconn *hlt__admin(void)
{
    const char *dsn = getenv("ORRERY_PG_DSN");
    if (!dsn || !*dsn) {
        fprintf(stderr, "FAIL: ORRERY_PG_DSN is not set. These tests need the real PostgreSQL "
                        "of the stack launcher: run deploy/test.sh, or\n"
                        "  eval \"$(deploy/stack.sh env)\" after deploy/stack.sh start pg\n");
        exit(1);
    }
    PGconn *pg = PQconnectdb(dsn);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "FAIL: cannot connect with ORRERY_PG_DSN: %s", PQerrorMessage(pg));
        exit(1);
    }
    return pg;
}

void hlt_db_create(hlt_db *db)
{
    PGconn *pg = hlt__admin();
    snprintf(db->name, sizeof db->name, "halley_test_%d_%d", (int)getpid(), ++hlt__db_seq);
    char sql[160];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db->name);
    PGresult *r = PQexec(pg, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "FAIL: %s: %s", sql, PQerrorMessage(pg));
        exit(1);
    }
    PQclear(r);
    PQfinish(pg);
    hlt__dsn_with_db(getenv("ORRERY_PG_DSN"), db->name, db->dsn, sizeof db->dsn);
}

void hlt_db_drop(hlt_db *db)
{
    PGconn *pg = hlt__admin();
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db->name);
    PQclear(PQexec(pg, sql));
    PQfinish(pg);
}

PGresult *hlt_sql(const hlt_db *db, const char *sql)
{
    PGconn *pg = PQconnectdb(db->dsn);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "FAIL: cannot connect to %s: %s", db->name, PQerrorMessage(pg));
        exit(1);
    }
    PGresult *r = PQexec(pg, sql);
    ExecStatusType t = PQresultStatus(r);
    if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK) {
        fprintf(stderr, "FAIL: %s: %s", sql, PQerrorMessage(pg));
        exit(1);
    }
    PQfinish(pg);
    return r;
}

long hlt_exit_code_drift(const hlt_db *db)
{
    PGresult *r = hlt_sql(db, "SELECT count(*) FROM instances i LEFT JOIN attempts a"
                              " ON a.instance_id = i.id AND a.attempt = i.attempt"
                              " WHERE i.exit_code IS DISTINCT FROM a.exit_code");
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static const char *hlt__key = "0707070707070707070707070707070707070707070707070707070707070707";

static pid_t hlt__spawn(const char *cmd, const char *dsn, const char *port_file,
                        const char *log_file, const char *const *extra)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    setenv("ORRERY_HALLEY_PG_DSN", dsn, 1);
    setenv("ORRERY_HALLEY_TOKEN", HLT_TOKEN, 1);
    setenv("ORRERY_HALLEY_SECRET_KEY", hlt__key, 1);
    setenv("ORRERY_HALLEY_LISTEN", "127.0.0.1:0", 1);
    setenv("ORRERY_HALLEY_METRICS_LISTEN", "127.0.0.1:0", 1);
    setenv("ORRERY_HALLEY_POOL_SIZE", "8", 1);
    if (port_file)
        setenv("ORRERY_HALLEY_PORT_FILE", port_file, 1);
    for (const char *const *e = extra; e && *e; e++) {
        char kv[512];
        snprintf(kv, sizeof kv, "%s", *e);
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = 0;
            setenv(kv, eq + 1, 1);
        }
    }
    if (log_file) {
        FILE *f = freopen(log_file, "a", stderr);
        (void)f;
    }
    execl(HALLEYD_PATH, "halleyd", cmd, (char *)NULL);
    _exit(127);
}

int hlt_migrate(const char *dsn)
{
    pid_t pid = hlt__spawn("migrate", dsn, NULL, NULL, NULL);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int hlt_start(hlt_server *s, const char *dsn, const char *const *extra_env, int *exit_code)
{
    memset(s, 0, sizeof *s);
    hlt__servers++;
    hlt__server_file(s->port_file, sizeof s->port_file, hlt__servers, "port");
    hlt__server_file(s->log_file, sizeof s->log_file, hlt__servers, "log");
    unlink(s->port_file);
    s->pid = hlt__spawn("serve", dsn, s->port_file, s->log_file, extra_env);
    hlt__track(s->pid, 1);
    for (int i = 0; i < 1200; i++) { /* 60 s: a generous deadline, fails loudly */
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            hlt__track(s->pid, 0);
            if (exit_code)
                *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
            s->pid = 0;
            return -1;
        }
        FILE *f = fopen(s->port_file, "r");
        if (f) {
            int ok = fscanf(f, "grpc=%d metrics=%d", &s->port, &s->metrics_port) == 2;
            fclose(f);
            if (ok)
                return 0;
        }
        hlt__sleep_ms(50);
    }
    fprintf(stderr, "halleyd did not come up\n");
    hlt__print_log_end(s->log_file);
    hlt_stop(s);
    return -1;
}

double hlt_metric(const hlt_server *s, const char *name)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->metrics_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static char buf[256 * 1024];
    size_t n = 0;
    const char *rq = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        send(fd, rq, strlen(rq), 0) == (ssize_t)strlen(rq)) {
        ssize_t k;
        while (n < sizeof buf - 1 && (k = recv(fd, buf + n, sizeof buf - 1 - n, 0)) > 0)
            n += (size_t)k;
    }
    close(fd);
    buf[n] = 0;
    size_t len = strlen(name);
    for (char *p = buf; (p = strstr(p, name)) != NULL; p += len)
        if ((p == buf || p[-1] == '\n') && p[len] == ' ')
            return strtod(p + len + 1, NULL);
    return -1;
}

int hlt_stop(hlt_server *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    int st = 0;
    for (int i = 0; i < 200; i++) {
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            hlt__track(s->pid, 0);
            s->pid = 0;
            unlink(s->port_file);
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        hlt__sleep_ms(50);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &st, 0);
    hlt__track(s->pid, 0);
    s->pid = 0;
    return 137;
}

orr_rpc_client *hlt_client(const hlt_server *s, const char *token)
{
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", s->port);
    orr_rpc_client *c = NULL;
    orr_err err;
    if (orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, target,
                              token ? token : HLT_TOKEN, &c, &err) != ORR_OK) {
        fprintf(stderr, "FAIL: client: %s\n", err.msg);
        exit(1);
    }
    return c;
}

orr_status hlt_call(orr_rpc_client *c, const char *method, const void *req, void *resp,
                    orr_err *err)
{
    orr_err_clear(err);
    return orr_rpc_call_unary(c, method, req, (ProtobufCMessage **)resp, 10000, err);
}

const char *hlt_shell_spec(char *buf, size_t n, const char *name, const char *team,
                           const char *extra)
{
    snprintf(buf, n,
             "{\"name\":\"%s\",\"team\":\"%s\",\"type\":\"shell\",\"schedule\":\"0 * * * *\","
             "\"config\":{\"command\":\"echo hi\"}%s%s}",
             name, team, extra && *extra ? "," : "", extra ? extra : "");
    return buf;
}

void hlt_team(orr_rpc_client *c, const char *name)
{
    Orrery__Halley__V1__CreateTeamRequest rq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    rq.name = (char *)name;
    Orrery__Halley__V1__Team *t = NULL;
    orr_err err = {0};
    HLT_CHECK(hlt_call(c, "CreateTeam", &rq, &t, &err) == ORR_OK, "team %s: %s", name, err.msg);
    if (t)
        protobuf_c_message_free_unpacked(&t->base, NULL);
}

int64_t hlt_save_task(orr_rpc_client *c, int64_t id, const char *name, const char *team,
                      const char *extra, orr_status want, const char *field, orr_err *err)
{
    char spec[2048];
    hlt_shell_spec(spec, sizeof spec, name, team, extra);
    Orrery__Halley__V1__Task *t = NULL;
    orr_status st;
    if (id) {
        Orrery__Halley__V1__UpdateTaskRequest rq = ORRERY__HALLEY__V1__UPDATE_TASK_REQUEST__INIT;
        rq.id = id;
        rq.spec_json = spec;
        rq.actor = "user:ann";
        st = hlt_call(c, "UpdateTask", &rq, &t, err);
    } else {
        Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
        rq.spec_json = spec;
        rq.actor = "user:ann";
        st = hlt_call(c, "CreateTask", &rq, &t, err);
    }
    HLT_CHECK(st == want, "save %s: got %s (%s: %s)", name, orr_status_name(st), err->field,
              err->msg);
    if (field && st != ORR_OK)
        HLT_CHECK(strcmp(err->field, field) == 0, "field %s, want %s (%s)", err->field, field,
                  err->msg);
    int64_t out = t ? t->id : 0;
    if (t)
        protobuf_c_message_free_unpacked(&t->base, NULL);
    return out;
}

int hlt_finish(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, hlt_passed, hlt_failed);
    return hlt_failed ? 1 : 0;
}
