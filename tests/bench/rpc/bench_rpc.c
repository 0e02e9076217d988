/*
 * bench_rpc.c - throughput and latency of orr_rpc unary calls (not a test).
 *
 *   bench_rpc [--seconds N] [--clients N] [--server-threads N] [--queues N]
 *             [--channels N]
 *
 * Starts an in-process server (Echo service, a trivial Say handler) on a
 * loopback port and N client threads calling Say back to back for the given
 * time (at most 60 s), then prints calls/s and the latency percentiles seen
 * by the clients. Client threads are spread over --channels clients
 * (each a channel of its own). CPU time per call (server and clients
 * together, from getrusage) is printed too: it does not depend on what else
 * runs on the machine, unlike calls/s.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "echo.pb-c.h"
#include "orr_log.h"
#include "orr_rpc.h"

#define BENCH_MAX_SAMPLES (1u << 18) /* per client thread */
#define BENCH_MAX_SECONDS 60
#define BENCH_MAX_CLIENTS 256

struct bench_thread {
    orr_rpc_client *cli;
    pthread_t th;
    uint32_t *samples_us;
    size_t n_samples;
    uint64_t calls;
    uint64_t errors;
    double cpu_s; /* CPU time of this client thread */
};

static atomic_int bench_stop;

static uint64_t bench_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static orr_status bench_say(orr_rpc_call *call, const ProtobufCMessage *req_msg,
                            ProtobufCMessage **resp, orr_err *err, void *ctx)
{
    (void)err;
    (void)ctx;
    const Orrery__Test__V1__SayRequest *req = (const Orrery__Test__V1__SayRequest *)req_msg;
    Orrery__Test__V1__SayReply *r = orr_arena_alloc(orr_rpc_call_arena(call), sizeof(*r));
    orrery__test__v1__say_reply__init(r);
    r->text = req->text;
    *resp = &r->base;
    return ORR_OK;
}

static void *bench_client(void *arg)
{
    struct bench_thread *t = arg;
    pthread_setname_np(pthread_self(), "bench-client");
    Orrery__Test__V1__SayRequest req = ORRERY__TEST__V1__SAY_REQUEST__INIT;
    req.text = "ping";
    while (!atomic_load_explicit(&bench_stop, memory_order_relaxed)) {
        ProtobufCMessage *resp = NULL;
        orr_err err;
        uint64_t t0 = bench_now_ns();
        orr_status st = orr_rpc_call_unary(t->cli, "Say", &req.base, &resp, 5000, &err);
        uint64_t us = (bench_now_ns() - t0) / 1000;
        if (st != ORR_OK) {
            t->errors++;
            continue;
        }
        protobuf_c_message_free_unpacked(resp, NULL);
        t->calls++;
        if (t->n_samples < BENCH_MAX_SAMPLES)
            t->samples_us[t->n_samples++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    }
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    t->cpu_s = (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9;
    return NULL;
}

static double bench_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int bench_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int bench_arg(int argc, char **argv, const char *name, int def, int lo, int hi)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) {
            int v = atoi(argv[i + 1]);
            return v < lo ? lo : v > hi ? hi : v;
        }
    return def;
}

int main(int argc, char **argv)
{
    int seconds = bench_arg(argc, argv, "--seconds", 5, 1, BENCH_MAX_SECONDS);
    int clients = bench_arg(argc, argv, "--clients", 16, 1, BENCH_MAX_CLIENTS);
    int sthreads = bench_arg(argc, argv, "--server-threads", 8, 1, 64);
    int channels = bench_arg(argc, argv, "--channels", 1, 1, clients);
    int queues = bench_arg(argc, argv, "--queues", 1, 1, 64);
    orr_log_set_level(ORR_LOG_WARN);

    static const orr_rpc_method methods[] = {{.name = "Say", .unary = bench_say}};
    orr_rpc_server_opts o = {
        .listen = "127.0.0.1:0", .threads = sthreads, .token = "bench", .queues = queues};
    orr_rpc_server *srv = NULL;
    orr_err err;
    if (orr_rpc_server_create(&orrery__test__v1__echo__descriptor, methods, 1, NULL, &o, &srv,
                              &err) != ORR_OK ||
        orr_rpc_server_start(srv) != ORR_OK) {
        fprintf(stderr, "bench: cannot start the server: %s\n", err.msg);
        return 1;
    }
    char target[64];
    snprintf(target, sizeof(target), "127.0.0.1:%d", orr_rpc_server_port(srv));
    orr_rpc_client **cli = calloc((size_t)channels, sizeof(*cli));
    struct bench_thread *th = calloc((size_t)clients, sizeof(*th));
    if (!cli || !th)
        return 1;
    for (int i = 0; i < channels; i++)
        if (orr_rpc_client_create(&orrery__test__v1__echo__descriptor, target, "bench", &cli[i],
                                  &err) != ORR_OK)
            return 1;

    /* warm up the connection */
    Orrery__Test__V1__SayRequest req = ORRERY__TEST__V1__SAY_REQUEST__INIT;
    req.text = "warm";
    for (int i = 0; i < channels; i++) {
        ProtobufCMessage *resp = NULL;
        if (orr_rpc_call_unary(cli[i], "Say", &req.base, &resp, 5000, &err) != ORR_OK) {
            fprintf(stderr, "bench: warm-up call failed: %s\n", err.msg);
            return 1;
        }
        protobuf_c_message_free_unpacked(resp, NULL);
    }

    uint64_t t0 = bench_now_ns();
    double cpu0 = bench_cpu_s();
    for (int i = 0; i < clients; i++) {
        th[i].cli = cli[i % channels];
        th[i].samples_us = malloc(BENCH_MAX_SAMPLES * sizeof(uint32_t));
        if (!th[i].samples_us || pthread_create(&th[i].th, NULL, bench_client, &th[i]) != 0)
            return 1;
    }
    struct timespec run = {seconds, 0};
    nanosleep(&run, NULL);
    atomic_store(&bench_stop, 1);
    uint64_t calls = 0, errors = 0;
    double client_cpu = 0;
    size_t n = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(th[i].th, NULL);
        calls += th[i].calls;
        errors += th[i].errors;
        client_cpu += th[i].cpu_s;
        n += th[i].n_samples;
    }
    double secs = (double)(bench_now_ns() - t0) / 1e9;
    double cpu = bench_cpu_s() - cpu0;
    uint32_t *all = malloc((n ? n : 1) * sizeof(uint32_t));
    if (!all)
        return 1;
    size_t k = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + k, th[i].samples_us, th[i].n_samples * sizeof(uint32_t));
        k += th[i].n_samples;
        free(th[i].samples_us);
    }
    qsort(all, n, sizeof(uint32_t), bench_cmp_u32);
    uint32_t p50 = n ? all[n / 2] : 0, p99 = n ? all[(n * 99) / 100] : 0;
    uint32_t p999 = n ? all[(n * 999) / 1000] : 0, pmax = n ? all[n - 1] : 0;
    printf("rpc unary bench: clients=%d channels=%d server_threads=%d queues=%d seconds=%.1f\n",
           clients, channels, sthreads, queues, secs);
    printf("calls=%llu errors=%llu calls_per_s=%.0f p50_us=%u p99_us=%u p999_us=%u max_us=%u\n",
           (unsigned long long)calls, (unsigned long long)errors, (double)calls / secs, p50, p99,
           p999, pmax);
    /* gRPC polls sockets from whichever thread waits, so the split between
     * client threads and the rest (server workers, gRPC threads) is rough */
    double per = calls ? 1e6 / (double)calls : 0.0;
    printf("cpu_s=%.2f cpu_us_per_call=%.1f client_threads_us_per_call=%.1f "
           "other_threads_us_per_call=%.1f\n",
           cpu, cpu * per, client_cpu * per, (cpu - client_cpu) * per);
    free(all);
    free(th);
    for (int i = 0; i < channels; i++)
        orr_rpc_client_destroy(cli[i]);
    free(cli);
    orr_rpc_server_destroy(srv);
    return errors ? 1 : 0;
}
