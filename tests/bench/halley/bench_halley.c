/*
 * bench_halley.c - unary GetTask and TransitionInstance throughput and
 * latency of a real halleyd over gRPC, with concurrent clients.
 *
 *   ORRERY_PG_DSN=... build/bin/bench_halley [clients=16] [seconds=5] [threads]
 *
 * clients is how many calls are in flight at once. By default each is a
 * thread of its own making blocking calls, as a daemon's threads do. With
 * threads < clients, `threads` threads each keep clients/threads calls in
 * flight through a call set (orr_rpc_set): the same load on halleyd with a
 * client that spends less CPU per call on the same two cores.
 *
 * Creates a fresh database, starts halleyd (defaults of [halley]), makes 100
 * tasks and one instance per client, then runs two phases for `seconds`
 * each: GetTask by id over the 100 tasks, and TransitionInstance flipping
 * each client's own instance waiting -> ready -> waiting (every call a real
 * compare-and-set with its transition record and event). Prints calls/s,
 * p50 and p99 per phase, and the CPU time each call cost (whatever the load
 * of the machine): halleyd's, this client process's and, when
 * ORRERY_VAR_DIR names the stack whose PostgreSQL is used (its
 * pg/postmaster.pid), PostgreSQL's (the postmaster and its children), and
 * for TransitionInstance the combined statements halleyd ran and their mean
 * size (from its /metrics). halleyd takes its settings from the environment
 * (ORRERY_HALLEY_TRANSITION_LEADERS, ...). Beside the CPU, the context
 * switches per call (voluntary + involuntary, summed over the threads of
 * halleyd, of this client and of PostgreSQL's processes): each is a sleep or
 * a preemption, so hand-offs between threads show here. Every loop is
 * bounded by time and by a call cap.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "hlt.h"

#define FREE(m)         protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)
#define BENCH_MAX_CALLS 2000000

static hlt_server srv;
static int64_t task_ids[100];
static int seconds = 5;
static int n_threads = 16; /* client threads of a phase */

typedef struct worker {
    int idx;
    int phase;                /* 0 GetTask, 1 TransitionInstance */
    int depth;                /* calls in flight */
    int use_set;              /* through a call set, else blocking calls */
    const int64_t *instances; /* depth of them, one per call in flight */
    uint32_t *lat_us;
    size_t n, errors;
} worker;

/* One call in flight of a set worker: its instance's state, its start. */
typedef struct slot {
    int64_t instance;
    int state;
    double t0;
} slot;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The next call's request of a phase; GetTask walks the 100 tasks. */
static const ProtobufCMessage *bench_request(const worker *w, size_t n, int64_t instance, int state,
                                             Orrery__Halley__V1__GetTaskRequest *g,
                                             Orrery__Halley__V1__TransitionRequest *r)
{
    if (w->phase == 0) {
        orrery__halley__v1__get_task_request__init(g);
        g->id = task_ids[(n * 7 + (size_t)w->idx) % 100];
        return &g->base;
    }
    orrery__halley__v1__transition_request__init(r);
    r->instance_id = instance;
    r->expected_state = state;
    r->new_state = state == 1 ? 2 : 1;
    r->actor = "bench";
    r->reason = "bench";
    return &r->base;
}

static const char *bench_method(const worker *w)
{
    return w->phase == 0 ? "GetTask" : "TransitionInstance";
}

/* One blocking call at a time. */
static void run_blocking(worker *w, orr_rpc_client *c, size_t cap, double end)
{
    int state = 1; /* waiting */
    orr_err err;
    while (w->n < cap && mono() < end) {
        double t0 = mono();
        Orrery__Halley__V1__GetTaskRequest g;
        Orrery__Halley__V1__TransitionRequest r;
        const ProtobufCMessage *req =
            bench_request(w, w->n, w->instances ? w->instances[0] : 0, state, &g, &r);
        ProtobufCMessage *resp = NULL;
        orr_status s = orr_rpc_call_unary(c, bench_method(w), req, &resp, 10000, &err);
        if (resp)
            FREE(resp);
        if (s == ORR_OK && w->phase == 1)
            state = state == 1 ? 2 : 1;
        if (s != ORR_OK)
            w->errors++;
        w->lat_us[w->n++] = (uint32_t)((mono() - t0) * 1e6);
    }
}

/* Start slot sl's next call (the n-th of the worker) at now. */
static void slot_start(worker *w, orr_rpc_set *set, slot *sl, size_t n, double now)
{
    Orrery__Halley__V1__GetTaskRequest g;
    Orrery__Halley__V1__TransitionRequest r;
    orr_err err;
    sl->t0 = now;
    if (orr_rpc_set_start(set, bench_method(w),
                          bench_request(w, n, sl->instance, sl->state, &g, &r), 10000, sl,
                          &err) != ORR_OK)
        w->errors++;
}

/* depth calls in flight through one call set; each ended call starts the
 * next of its slot until the time or the cap runs out. */
static void run_set(worker *w, orr_rpc_client *c, size_t cap, double end)
{
    orr_rpc_set *set = orr_rpc_set_create(c);
    slot *slots = calloc((size_t)w->depth, sizeof *slots);
    size_t started = 0;
    orr_err err;
    for (int i = 0; i < w->depth && started < cap; i++) {
        slots[i] = (slot){.instance = w->instances ? w->instances[i] : 0, .state = 1};
        slot_start(w, set, &slots[i], started++, mono());
    }
    void *tag;
    orr_status s;
    ProtobufCMessage *resp;
    while (orr_rpc_set_next(set, -1, &tag, &s, &resp, &err) == 1) {
        slot *sl = tag;
        double now = mono();
        if (resp)
            FREE(resp);
        if (s == ORR_OK && w->phase == 1)
            sl->state = sl->state == 1 ? 2 : 1;
        if (s != ORR_OK)
            w->errors++;
        w->lat_us[w->n++] = (uint32_t)((now - sl->t0) * 1e6);
        if (started < cap && now < end) /* else let the others end */
            slot_start(w, set, sl, started++, now);
    }
    orr_rpc_set_destroy(set);
    free(slots);
}

static void *run(void *arg)
{
    worker *w = arg;
    orr_rpc_client *c = hlt_client(&srv, NULL);
    size_t cap = BENCH_MAX_CALLS / (size_t)n_threads;
    w->lat_us = malloc(cap * sizeof *w->lat_us);
    double end = mono() + seconds;
    if (w->use_set)
        run_set(w, c, cap, end);
    else
        run_blocking(w, c, cap, end);
    orr_rpc_client_destroy(c);
    return NULL;
}

/* utime + stime of process pid in clock ticks, and its parent (-1 if gone). */
static long long proc_ticks(long pid, long *ppid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command may hold blanks */
    long long ut = 0, st = 0;
    long pp = 0;
    if (!p ||
        sscanf(p + 2, "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &pp, &ut, &st) != 3)
        return -1;
    if (ppid)
        *ppid = pp;
    return ut + st;
}

/* Voluntary + involuntary context switches of thread tid of process pid. */
static long long status_ctxsw(long pid, const char *tid)
{
    char path[96], line[256];
    snprintf(path, sizeof path, "/proc/%ld/task/%.32s/status", pid, tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long long sum = 0, v;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "voluntary_ctxt_switches: %lld", &v) == 1 ||
            sscanf(line, "nonvoluntary_ctxt_switches: %lld", &v) == 1)
            sum += v;
    fclose(f);
    return sum;
}

/* Context switches of every live thread of process pid. */
static long long proc_ctxsw(long pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    long long sum = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        sum += status_ctxsw(pid, e->d_name);
    }
    closedir(d);
    return sum;
}

static long pg_postmaster = -1; /* from $ORRERY_VAR_DIR/pg/postmaster.pid */

/* CPU ticks of the postmaster and its children (-1 when unknown), and
 * their context switches in *ctxsw. */
static long long pg_ticks(long long *ctxsw)
{
    *ctxsw = -1;
    if (pg_postmaster <= 0)
        return -1;
    long long sum = proc_ticks(pg_postmaster, NULL);
    *ctxsw = proc_ctxsw(pg_postmaster);
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        long pid = strtol(e->d_name, NULL, 10), pp = 0;
        if (pid <= 0 || pid == pg_postmaster)
            continue;
        long long t = proc_ticks(pid, &pp);
        if (t >= 0 && pp == pg_postmaster) {
            sum += t;
            *ctxsw += proc_ctxsw(pid);
        }
    }
    if (d)
        closedir(d);
    return sum;
}

/* CPU seconds of this process (every thread, ended ones too), and its
 * context switches in *ctxsw. */
static double self_cpu(long long *ctxsw)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *ctxsw = ru.ru_nvcsw + ru.ru_nivcsw;
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void phase(const char *name, int ph, int clients, int threads, const int64_t *instances)
{
    n_threads = threads;
    worker *w = calloc((size_t)threads, sizeof *w);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    double b0 = hlt_metric(&srv, "halley_transition_batches_total"),
           i0 = hlt_metric(&srv, "halley_transition_batch_items_total");
    long long pgx0, clx0, srx0 = proc_ctxsw(srv.pid);
    long long srv0 = proc_ticks(srv.pid, NULL), pg0 = pg_ticks(&pgx0);
    double cli0 = self_cpu(&clx0);
    double t0 = mono();
    /* clients calls in flight spread over threads: the first clients %
     * threads threads take one more */
    for (int i = 0, first = 0; i < threads; i++) {
        int depth = clients / threads + (i < clients % threads);
        w[i] = (worker){.idx = i,
                        .phase = ph,
                        .depth = depth,
                        .use_set = threads < clients,
                        .instances = instances ? instances + first : NULL};
        first += depth;
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    size_t total = 0, errors = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += w[i].n;
        errors += w[i].errors;
    }
    double dt = mono() - t0;
    long long pgx1, clx1;
    double cli = self_cpu(&clx1) - cli0, tick = (double)sysconf(_SC_CLK_TCK);
    long long srv1 = proc_ticks(srv.pid, NULL), pg1 = pg_ticks(&pgx1), srx1 = proc_ctxsw(srv.pid);
    double b1 = hlt_metric(&srv, "halley_transition_batches_total"),
           i1 = hlt_metric(&srv, "halley_transition_batch_items_total");
    uint32_t *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < threads; i++) {
        memcpy(all + k, w[i].lat_us, w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat_us);
    }
    qsort(all, total, sizeof *all, cmp_u32);
    printf("%-20s clients=%d threads=%d calls=%zu errors=%zu rate=%.0f/s p50=%.2fms "
           "p99=%.2fms\n",
           name, clients, threads, total, errors, total / dt, total ? all[total / 2] / 1000.0 : 0.0,
           total ? all[total * 99 / 100] / 1000.0 : 0.0);
    if (total) {
        printf("%-20s cpu per call: halleyd=%.1fus client=%.1fus", name,
               srv0 >= 0 && srv1 >= srv0 ? (srv1 - srv0) / tick / total * 1e6 : -1.0,
               cli / total * 1e6);
        if (pg0 >= 0 && pg1 >= pg0)
            printf(" postgres=%.1fus", (pg1 - pg0) / tick / total * 1e6);
        printf("\n");
        printf("%-20s ctxsw per call: halleyd=%.2f client=%.2f", name,
               srx0 >= 0 && srx1 >= srx0 ? (double)(srx1 - srx0) / total : -1.0,
               (double)(clx1 - clx0) / total);
        if (pgx0 >= 0 && pgx1 >= pgx0)
            printf(" postgres=%.2f", (double)(pgx1 - pgx0) / total);
        printf("\n");
    }
    if (ph == 1 && b0 >= 0 && b1 > b0 && i0 >= 0)
        printf("%-20s batches=%.0f mean batch=%.2f calls\n", name, b1 - b0, (i1 - i0) / (b1 - b0));
    free(all);
    free(w);
    free(th);
}

int main(int argc, char **argv)
{
    int clients = argc > 1 ? atoi(argv[1]) : 16;
    seconds = argc > 2 ? atoi(argv[2]) : 5;
    int threads = argc > 3 ? atoi(argv[3]) : clients;
    if (clients < 1 || clients > 256 || seconds < 1 || seconds > 120 || threads < 1 ||
        threads > clients) {
        fprintf(stderr, "usage: bench_halley [clients 1..256] [seconds 1..120] "
                        "[threads 1..clients]\n");
        return 2;
    }
    const char *var = getenv("ORRERY_VAR_DIR");
    if (var && *var) {
        char path[512];
        snprintf(path, sizeof path, "%s/pg/postmaster.pid", var);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%ld", &pg_postmaster) != 1)
                pg_postmaster = -1;
            fclose(f);
        }
    }
    hlt_db db;
    hlt_db_create(&db);
    if (hlt_migrate(db.dsn) != 0 || hlt_start(&srv, db.dsn, NULL, NULL) != 0) {
        fprintf(stderr, "cannot start halleyd\n");
        hlt_db_drop(&db);
        return 1;
    }
    orr_rpc_client *c = hlt_client(&srv, NULL);
    orr_err err;
    Orrery__Halley__V1__CreateTeamRequest tq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    tq.name = "bench";
    Orrery__Halley__V1__Team *team = NULL;
    hlt_call(c, "CreateTeam", &tq, &team, &err);
    if (team)
        FREE(team);
    char spec[512], name[32];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "bench_%d", i);
        Orrery__Halley__V1__CreateTaskRequest cq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
        cq.spec_json = (char *)hlt_shell_spec(spec, sizeof spec, name, "bench", NULL);
        Orrery__Halley__V1__Task *t = NULL;
        if (hlt_call(c, "CreateTask", &cq, &t, &err) != ORR_OK) {
            fprintf(stderr, "CreateTask: %s\n", err.msg);
            return 1;
        }
        task_ids[i] = t->id;
        FREE(t);
    }
    int64_t *inst = calloc((size_t)clients, sizeof *inst);
    for (int i = 0; i < clients; i++) {
        Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
        ci.task_id = task_ids[i % 100];
        ci.schedule_time_ms = 1767225600000LL + (int64_t)i * 3600000LL;
        Orrery__Halley__V1__CreateInstance *items[1] = {&ci};
        Orrery__Halley__V1__CreateInstancesRequest rq =
            ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
        rq.n_instances = 1;
        rq.instances = items;
        Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
        if (hlt_call(c, "CreateInstances", &rq, &r, &err) == ORR_OK && r->results[0]->instance)
            inst[i] = r->results[0]->instance->id;
        if (r)
            FREE(r);
    }
    orr_rpc_client_destroy(c);
    phase("GetTask", 0, clients, threads, NULL);
    phase("TransitionInstance", 1, clients, threads, inst);
    free(inst);
    hlt_stop(&srv);
    hlt_db_drop(&db);
    return 0;
}
