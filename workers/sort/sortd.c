/*
 * sortd.c - the stream sort engine's command line.
 *
 *   sortd [--config FILE] run --stream SPEC.json
 *       run one stream until its source ends (exit_at_eof), SIGINT/SIGTERM,
 *       or a failure; prints a one-line JSON summary to stdout.
 *   sortd [--config FILE] run --stream-name NAME
 *       the same with the spec published for NAME: from ZooKeeper
 *       (/orrery/streams/NAME, [sort] zookeeper) or else from Halley
 *       (GetSortStream, [sort] halley). A watcher thread reads it when the
 *       ZooKeeper watch on the node fires, and every spec_poll_ms as a
 *       safety net (Halley: the poll alone); a new version is applied
 *       without a restart: the
 *       running pipeline is stopped (every open unit rolls, lands and is
 *       committed) and one for the new spec starts. A version whose spec does
 *       not parse is logged (naming the field) and the old one keeps running;
 *       an inactive version stops the stream until an active one comes. One
 *       summary line per pipeline run, with "stream" and "version".
 *   With [sort] halley set, every reconciled unit is reported to Halley
 *   (ReportDataUnit, sort_report.h).
 *   run ... --handoff-stream I
 *       write stage I of a stream whose spec hands off (sinks.handoff): read
 *       the packs of Redis stream "<key>.<I>" that the parse stage (the
 *       same spec run without this option) sends, and land the units it owns
 *       (sort_spec_write_stage, sort_sink_handoff.h).
 *   sortd check-spec SPEC.json
 *       check a stream spec; prints "ok" or the bad field and why.
 *   sortd replay --stream SPEC.json --from OFFSET
 *       rewind a stream's committed position (file source: "hi.lo" or a
 *       byte offset in the first file; redis: an entry id "ms-seq"; kafka: a
 *       message offset, for every partition of the topic). Records
 *       already landed are still skipped on the next run; remove a unit's
 *       files first to land them again.
 *
 * Exit status: 0 ok, 1 runtime failure, 2 bad usage, config or spec.
 * Settings ([sort] section, or ORRERY_SORT_<KEY>) are listed by --help and
 * in docs/sort.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_config.h"
#include "orr_daemon.h"
#include "orr_log.h"
#include "orr_sdnotify.h"
#include "sort_chan.h"
#include "sort_metrics.h"
#include "sort_pipe.h"
#include "orr_rpc_tls.h"
#include "sort_report.h"
#include "sort_spec.h"
#include "sort_specsrc.h"

#define SORTD "sortd"

static const orr_cfg_key sortd_schema[] = {
    {"sort", "work_dir", ORR_CFG_STRING, "var/sort/work", 0, 0, 0,
     "local folder for open unit files before they land (wiped at start)"},
    {"sort", "state_dir", ORR_CFG_STRING, "var/sort/state", 0, 0, 0,
     "local folder for source offsets and reject files"},
    {"sort", "blob_root", ORR_CFG_STRING, "file:///tmp/orrery-blob", 0, 0, 0,
     "blob store URL where units land (file:///path)"},
    {"sort", "redis", ORR_CFG_STRING, "127.0.0.1:6379", 0, 0, 0,
     "Redis host:port for redis sources that name none"},
    {"sort", "writers", ORR_CFG_INT, "2", 0, 1, 64, "writer threads"},
    {"sort", "packs", ORR_CFG_INT, "128", 0, 2, 4096,
     "packs in flight (flow-control bound: the source pauses when all are in use)"},
    {"sort", "pack_size", ORR_CFG_SIZE, "1m", 0, 4096, 64LL << 20, "bytes per pack"},
    {"sort", "max_open_units", ORR_CFG_INT, "2048", 0, 1, 1000000,
     "open unit files over all writers; past it the least recently used rolls"},
    {"sort", "unit_memory", ORR_CFG_SIZE, "256m", 0, 1LL << 20, 16LL << 30,
     "memory for the pending lzop blocks of all open unit files (sets the block size)"},
    {"sort", "metrics_listen", ORR_CFG_STRING, "", 0, 0, 0,
     "host:port of the Prometheus endpoint GET /metrics (empty: off)"},
    {"sort", "zookeeper", ORR_CFG_STRING, "", 0, 0, 0,
     "ZooKeeper hosts where run --stream-name watches /orrery/streams/NAME (empty: off)"},
    {"sort", "halley", ORR_CFG_STRING, "", 0, 0, 0,
     "halleyd host:port: unit statistics (ReportDataUnit); specs when no zookeeper"},
    {"sort", "halley_token", ORR_CFG_SECRET, NULL, 0, 0, 0, "service token for halleyd"},
    ORR_RPC_TLS_CLIENT_KEYS("sort"),
    {"sort", "spec_poll_ms", ORR_CFG_INT, "500", 0, 50, 3600000,
     "how often run --stream-name looks for a new spec version"},
    {"sort", "pid_file", ORR_CFG_STRING, "", 0, 0, 0,
     "if set, sortd run writes its pid here (removed when it stops)"},
};

static volatile sig_atomic_t sortd_stop; /* a signal: end the process */
static int64_t sortd_stage = -1;         /* --handoff-stream: the write stage to run */
static volatile sig_atomic_t pipe_stop;  /* end the running pipeline (signal or reload) */

/* A stop signal (taken by the stopper thread): end the pipeline and sortd. */
static void sortd_on_stop(void *ctx, int sig)
{
    (void)ctx;
    (void)sig;
    sortd_stop = 1;
    pipe_stop = 1;
}

static void sortd_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--config FILE] [--print-config] [--help] COMMAND [ARGS...]\n"
            "commands:\n"
            "  run --stream SPEC.json            run one stream\n"
            "  run --stream-name NAME            run the stream published as NAME (ZooKeeper or\n"
            "                                    Halley), applying new versions live\n"
            "  run ... --handoff-stream I         run write stage I of a hand-off stream\n"
            "  check-spec SPEC.json              check a stream spec\n"
            "  replay --stream SPEC.json --from OFFSET\n"
            "                                    rewind the stream's committed position\n",
            SORTD);
}

static const char *sortd_opt(int argc, char **argv, int from, const char *name)
{
    size_t n = strlen(name);
    for (int i = from; i < argc; i++) {
        if (strcmp(argv[i], name) == 0 && i + 1 < argc)
            return argv[i + 1];
        if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
            return argv[i] + n + 1;
    }
    return NULL;
}

static int sortd_load_spec(const char *path, sort_spec **spec)
{
    orr_err err;
    orr_err_clear(&err);
    if (!path) {
        fprintf(stderr, "%s: --stream SPEC.json is required\n", SORTD);
        return 2;
    }
    if (sort_spec_load_file(path, spec, &err) != ORR_OK) {
        fprintf(stderr, "%s: %s: %s: %s\n", SORTD, path, err.field, err.msg);
        return 2;
    }
    return 0;
}

/* Run one pipeline for spec until it ends or pipe_stop; print its summary
 * (with stream and version when version >= 0). 0 ok, 1 failure. */
static int sortd_run_pipe(orr_config *cfg, const sort_spec *spec, int64_t version,
                          sort_metrics *metrics, const sort_check_sink *sink)
{
    sort_spec *stage = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (sortd_stage >= 0) {
        if (sort_spec_write_stage(spec, sortd_stage, &stage, &err) != ORR_OK) {
            fprintf(stderr, "%s: %s: %s\n", SORTD, err.field, err.msg);
            return 2;
        }
        spec = stage;
    }
    sort_pipe_cfg pc = {
        .spec = spec,
        .work_dir = orr_config_str(cfg, "sort", "work_dir"),
        .state_dir = orr_config_str(cfg, "sort", "state_dir"),
        .blob_url = orr_config_str(cfg, "sort", "blob_root"),
        .redis_addr = orr_config_str(cfg, "sort", "redis"),
        .writers = (int)orr_config_int(cfg, "sort", "writers"),
        .packs = (int)orr_config_int(cfg, "sort", "packs"),
        .pack_bytes = (size_t)orr_config_int(cfg, "sort", "pack_size"),
        .max_open_units = (size_t)orr_config_int(cfg, "sort", "max_open_units"),
        .unit_memory = (size_t)orr_config_int(cfg, "sort", "unit_memory"),
        .stop = &pipe_stop,
        .sink = sink,
        .metrics = metrics,
    };
    sort_pipe_stats st;
    memset(&st, 0, sizeof st);
    /* Ready for systemd: the spec is checked and the pipeline starts (a
     * second READY, for a new spec version, is harmless). */
    orr_sdnotify_ready("sortd running");
    orr_status s = sort_pipe_run(&pc, &st, &err);
    char *js = sort_pipe_stats_json(&st);
    if (version >= 0 && js && js[0] == '{')
        printf("{\"stream\":\"%s\",\"version\":%" PRId64 ",%s\n", spec->name, version, js + 1);
    else
        printf("%s\n", js);
    free(js);
    fflush(stdout);
    if (s != ORR_OK) {
        char b[600];
        ORR_ERROR("stream failed", "stream=%s error=%s", spec->name,
                  orr_log_q(orr_err_str(&err, b, sizeof b)));
        fprintf(stderr, "%s: %s\n", SORTD, orr_err_str(&err, b, sizeof b));
    }
    sort_spec_free(stage);
    return s == ORR_OK ? 0 : 1;
}

/* Metrics endpoint and Halley reporter, when configured. 0 ok, 1 failure. */
static int sortd_services(orr_config *cfg, sort_metrics **metrics, sort_report **report)
{
    orr_err err;
    orr_err_clear(&err);
    const char *listen = orr_config_str(cfg, "sort", "metrics_listen");
    if (listen && *listen) {
        if (sort_metrics_start(listen, metrics, &err) != ORR_OK) {
            fprintf(stderr, "%s: metrics_listen: %s\n", SORTD, err.msg);
            return 1;
        }
        ORR_INFO("metrics endpoint listening", "listen=%s port=%d path=/metrics", listen,
                 sort_metrics_port(*metrics));
    }
    const char *halley = orr_config_str(cfg, "sort", "halley");
    if (halley && *halley) {
        if (sort_report_start(halley, orr_config_str(cfg, "sort", "halley_token"), report, &err) !=
            ORR_OK) {
            fprintf(stderr, "%s: halley: %s: %s\n", SORTD, err.field, err.msg);
            sort_metrics_stop(*metrics);
            *metrics = NULL;
            return 1;
        }
        ORR_INFO("unit statistics go to Halley", "halley=%s", halley);
    }
    return 0;
}

static void sortd_services_stop(sort_metrics *metrics, sort_report *report)
{
    if (report) {
        sort_report_stop(report, 5000);
    }
    sort_metrics_stop(metrics);
}

static int sortd_run(orr_config *cfg, const char *spec_path)
{
    sort_spec *spec = NULL;
    int rc = sortd_load_spec(spec_path, &spec);
    if (rc != 0)
        return rc;
    sort_metrics *metrics = NULL;
    sort_report *report = NULL;
    rc = sortd_services(cfg, &metrics, &report);
    if (rc == 0)
        rc = sortd_run_pipe(cfg, spec, -1, metrics, report ? sort_report_sink(report) : NULL);
    sortd_services_stop(metrics, report);
    sort_spec_free(spec);
    return rc;
}

/* ---- named streams: spec watcher and live reload ---------------------- */

typedef struct sortd_watch {
    sort_specsrc *src;
    int poll_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t running;    /* version the main thread runs (or waits in) */
    int64_t seen_bad;   /* last version logged as bad */
    sort_spec_doc next; /* a newer document to apply */
    int has_next;
    int quit;
    int poked; /* the ZooKeeper watch fired: look now */
} sortd_watch;

/* The spec source's change callback (a ZooKeeper thread). */
static void sortd_watch_poke(void *ctx)
{
    sortd_watch *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->poked = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* One look at the store; a new good document is stashed and the running
 * pipeline told to stop. Called with w->mu unlocked. */
static orr_status sortd_watch_poll(sortd_watch *w, orr_err *err)
{
    sort_spec_doc doc;
    orr_err_clear(err);
    orr_status rc = sort_specsrc_fetch(w->src, &doc, err);
    pthread_mutex_lock(&w->mu);
    int64_t known = w->has_next ? w->next.version : w->running;
    if (rc == ORR_OK && doc.version != known) {
        if (w->has_next)
            sort_spec_free(w->next.spec);
        w->next = doc;
        w->has_next = 1;
        doc.spec = NULL;
        pipe_stop = 1;
        pthread_cond_broadcast(&w->cv);
        ORR_INFO("stream spec changed", "where=%s version=%" PRId64 " active=%d",
                 sort_specsrc_where(w->src), w->next.version, w->next.active);
    } else if (rc == ORR_EINVAL && doc.version != known && doc.version != w->seen_bad) {
        char b[600];
        w->seen_bad = doc.version;
        ORR_ERROR("stream spec refused; the running version stays",
                  "where=%s version=%" PRId64 " error=%s", sort_specsrc_where(w->src), doc.version,
                  orr_log_q(orr_err_str(err, b, sizeof b)));
    } else if (rc != ORR_OK && rc != ORR_EINVAL) {
        char b[600];
        ORR_DEBUG("stream spec not read", "where=%s error=%s", sort_specsrc_where(w->src),
                  orr_log_q(orr_err_str(err, b, sizeof b)));
    }
    pthread_mutex_unlock(&w->mu);
    sort_spec_free(doc.spec);
    return rc;
}

static void *sortd_watch_main(void *arg)
{
    sortd_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->quit) {
        w->poked = 0;
        pthread_mutex_unlock(&w->mu);
        orr_err err;
        sortd_watch_poll(w, &err);
        pthread_mutex_lock(&w->mu);
        struct timespec ts = orr_clock_after(CLOCK_REALTIME, w->poll_ms);
        while (!w->quit && !w->poked)
            if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
                break;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Take the stashed document, waiting for one or a stop signal. 1 with *doc
 * filled, 0 on a stop signal. */
static int sortd_watch_take(sortd_watch *w, sort_spec_doc *doc)
{
    pthread_mutex_lock(&w->mu);
    while (!w->has_next && !sortd_stop) {
        struct timespec ts = orr_clock_after(CLOCK_REALTIME, 200);
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    int got = w->has_next && !sortd_stop;
    if (got) {
        *doc = w->next;
        w->has_next = 0;
        w->running = doc->version;
        pipe_stop = 0;
    }
    pthread_mutex_unlock(&w->mu);
    return got;
}

static int sortd_run_named(orr_config *cfg, const char *name)
{
    orr_err err;
    orr_err_clear(&err);
    const char *zk = orr_config_str(cfg, "sort", "zookeeper");
    const char *halley = orr_config_str(cfg, "sort", "halley");
    sortd_watch w;
    memset(&w, 0, sizeof w);
    w.running = -1;
    w.seen_bad = -1;
    w.poll_ms = (int)orr_config_int(cfg, "sort", "spec_poll_ms");
    orr_status s;
    if (zk && *zk)
        s = sort_specsrc_open_zk(zk, name, &w.src, &err);
    else if (halley && *halley)
        s = sort_specsrc_open_halley(halley, orr_config_str(cfg, "sort", "halley_token"), name,
                                     &w.src, &err);
    else
        s = orr_err_set(&err, ORR_EINVAL, "sort.zookeeper",
                        "--stream-name needs [sort] zookeeper or [sort] halley");
    if (s != ORR_OK) {
        fprintf(stderr, "%s: %s: %s\n", SORTD, err.field, err.msg);
        return s == ORR_EINVAL ? 2 : 1;
    }
    sort_metrics *metrics = NULL;
    sort_report *report = NULL;
    int rc = sortd_services(cfg, &metrics, &report);
    if (rc != 0) {
        sort_specsrc_close(w.src);
        return rc;
    }
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    sort_specsrc_on_change(w.src, sortd_watch_poke, &w); /* a watch besides the poll */
    /* A first look: a store that refuses us (token, permission) is fatal;
     * one that is down or has no such stream yet is waited for. */
    s = sortd_watch_poll(&w, &err);
    if (s == ORR_EAUTH || s == ORR_EPERM) {
        char b[600];
        fprintf(stderr, "%s: %s: %s\n", SORTD, sort_specsrc_where(w.src),
                orr_err_str(&err, b, sizeof b));
        if (w.has_next)
            sort_spec_free(w.next.spec);
        sort_specsrc_close(w.src); /* first: no watch may fire after */
        pthread_mutex_destroy(&w.mu);
        pthread_cond_destroy(&w.cv);
        sortd_services_stop(metrics, report);
        return 1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, sortd_watch_main, &w) != 0)
        abort();
    ORR_INFO("waiting for the stream spec", "where=%s", sort_specsrc_where(w.src));
    orr_sdnotify_ready("sortd waiting for the stream spec");
    sort_spec_doc doc;
    while (rc == 0 && sortd_watch_take(&w, &doc)) {
        if (doc.active && doc.spec) {
            ORR_INFO("stream spec applied", "stream=%s version=%" PRId64, name, doc.version);
            rc = sortd_run_pipe(cfg, doc.spec, doc.version, metrics,
                                report ? sort_report_sink(report) : NULL);
            if (!pipe_stop) { /* the source ended (exit_at_eof): so does sortd */
                sort_spec_free(doc.spec);
                break;
            }
        } else {
            ORR_INFO("stream inactive; waiting for an active version", "stream=%s version=%" PRId64,
                     name, doc.version);
        }
        sort_spec_free(doc.spec);
    }
    pthread_mutex_lock(&w.mu);
    w.quit = 1;
    pthread_cond_broadcast(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(th, NULL);
    if (w.has_next)
        sort_spec_free(w.next.spec);
    sort_specsrc_close(w.src); /* first: no watch may fire after */
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    sortd_services_stop(metrics, report);
    return rc;
}

static int sortd_replay(orr_config *cfg, const char *spec_path, const char *from)
{
    sort_spec *spec = NULL;
    int rc = sortd_load_spec(spec_path, &spec);
    if (rc != 0)
        return rc;
    orr_err err;
    orr_err_clear(&err);
    rc = 0;
    if (!from) {
        fprintf(stderr, "%s: replay needs --from OFFSET\n", SORTD);
        rc = 2;
    } else if (strcmp(spec->source.type, "file") == 0) {
        sort_off o;
        if (sort_off_parse(from, strlen(from), &o) != 0) {
            fprintf(stderr, "%s: --from: not a file offset (N or FILE_INDEX.N): %s\n", SORTD, from);
            rc = 2;
        } else {
            /* Open the source so the state file is checked and written as usual. */
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.offset", orr_config_str(cfg, "sort", "state_dir"),
                     spec->name);
            char line[256];
            int n = snprintf(line, sizeof line, "%" PRIu64 " %" PRIu64 " ", o.hi, o.lo);
            /* The file name at that index comes from the folder listing. */
            sort_source *src = NULL;
            sort_source_env env = {.state_dir = orr_config_str(cfg, "sort", "state_dir"),
                                   .fmt = sort_format_find(spec->format.type)};
            remove(path);
            if (sort_src_file.open(spec, &env, &src, &err) != ORR_OK ||
                sort_src_file.commit(src, 0, o, &err) != ORR_OK) {
                fprintf(stderr, "%s: replay: %s: %s\n", SORTD, err.field, err.msg);
                rc = 1;
            } else {
                printf("stream %s will resume at %.*s\n", spec->name, n - 1, line);
            }
            if (src)
                src->ops->close(src);
        }
    } else if (strcmp(spec->source.type, "kafka") == 0) {
        sort_off o;
        if (sort_off_parse(from, strlen(from), &o) != 0 || o.hi != 0) {
            fprintf(stderr, "%s: --from: not a Kafka offset: %s\n", SORTD, from);
            rc = 2;
        } else {
            /* Commit OFFSET for every partition of the topic for the group. */
            sort_source *src = NULL;
            sort_source_env env = {.fmt = sort_format_find(spec->format.type)};
            rc = sort_src_kafka.open(spec, &env, &src, &err) == ORR_OK ? 0 : 1;
            int n = rc == 0 ? sort_src_kafka_partitions(src) : 0;
            for (int i = 0; i < n && rc == 0; i++)
                if (sort_src_kafka.commit(src, (uint32_t)i, o, &err) != ORR_OK)
                    rc = 1;
            if (rc != 0)
                fprintf(stderr, "%s: replay: %s: %s\n", SORTD, err.field, err.msg);
            else
                printf("stream %s group %s will resume at offset %" PRIu64 " in %d partitions\n",
                       spec->name, spec->source.group, o.lo, n);
            if (src)
                src->ops->close(src);
        }
    } else {
        const char *addr =
            spec->source.address ? spec->source.address : orr_config_str(cfg, "sort", "redis");
        char host[256];
        const char *colon = strrchr(addr, ':');
        if (!colon || (size_t)(colon - addr) >= sizeof host) {
            fprintf(stderr, "%s: bad Redis address %s\n", SORTD, addr);
            rc = 2;
        } else {
            memcpy(host, addr, (size_t)(colon - addr));
            host[colon - addr] = 0;
            struct timeval tv = {2, 0};
            redisContext *c = redisConnectWithTimeout(host, atoi(colon + 1), tv);
            redisReply *rep = c && !c->err
                                  ? redisCommand(c, "XGROUP SETID %s %s %s", spec->source.key,
                                                 spec->source.group, from)
                                  : NULL;
            if (!rep || rep->type == REDIS_REPLY_ERROR) {
                fprintf(stderr, "%s: replay: %s\n", SORTD,
                        rep ? rep->str : (c ? c->errstr : "cannot connect"));
                rc = 1;
            } else {
                printf("stream %s group %s will resume after %s\n", spec->name, spec->source.group,
                       from);
            }
            if (rep)
                freeReplyObject(rep);
            if (c)
                redisFree(c);
        }
    }
    sort_spec_free(spec);
    return rc;
}

static int sortd_cmd_run(orr_daemon *d, int argc, char **argv)
{
    orr_config *cfg = orr_daemon_config(d);
    const char *named = sortd_opt(argc, argv, 1, "--stream-name");
    const char *stage = sortd_opt(argc, argv, 1, "--handoff-stream");
    char *end = NULL;
    if (stage) {
        sortd_stage = strtoll(stage, &end, 10);
        if (!*stage || *end || sortd_stage < 0 || sortd_stage >= SORT_MAX_HANDOFF) {
            fprintf(stderr, "%s: --handoff-stream: must be 0..%d\n", SORTD, SORT_MAX_HANDOFF - 1);
            return 2;
        }
    }
    /* The pipeline looks at flags: a thread of its own takes the stop
     * signals (blocked since orr_daemon_main) and sets them. */
    orr_daemon_stopper *stopper = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (orr_rpc_tls_client_setup(cfg, "sort", &err) != ORR_OK) {
        fprintf(stderr, "%s: %s\n", SORTD, err.msg);
        return 2;
    }
    if (orr_daemon_stopper_start(NULL, sortd_on_stop, NULL, &stopper, &err) != ORR_OK) {
        fprintf(stderr, "%s: %s\n", SORTD, err.msg);
        return 1;
    }
    int rc =
        named ? sortd_run_named(cfg, named) : sortd_run(cfg, sortd_opt(argc, argv, 1, "--stream"));
    orr_daemon_stopper_end(stopper);
    return rc;
}

static int sortd_cmd_check_spec(orr_daemon *d, int argc, char **argv)
{
    (void)d;
    if (argc < 2) {
        sortd_usage(stderr);
        return 2;
    }
    sort_spec *spec = NULL;
    int rc = sortd_load_spec(argv[1], &spec);
    if (rc == 0)
        printf("ok\n");
    sort_spec_free(spec);
    return rc;
}

static int sortd_cmd_replay(orr_daemon *d, int argc, char **argv)
{
    return sortd_replay(orr_daemon_config(d), sortd_opt(argc, argv, 1, "--stream"),
                        sortd_opt(argc, argv, 1, "--from"));
}

static const orr_daemon_cmd sortd_cmds[] = {
    {"run", sortd_cmd_run, ORR_DAEMON_SERVES},
    {"check-spec", sortd_cmd_check_spec, 0},
    {"replay", sortd_cmd_replay, 0},
};

static const orr_daemon_def sortd_daemon = {
    SORTD,      "sort", sortd_schema, sizeof sortd_schema / sizeof sortd_schema[0],
    sortd_cmds, 3,      sortd_usage,
};

int main(int argc, char **argv)
{
    /* A stream's buffers (packs of up to pack_size, unit files'
     * blocks, batches) are allocated, freed and allocated again all day:
     * keep them in the heap (each unmap would also be a TLB shootdown on
     * every core). */
    orr_alloc_keep_heap(32 << 20, 256 << 20);
    return orr_daemon_main(&sortd_daemon, argc, argv);
}
