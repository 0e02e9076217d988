/*
 * sortd.c - the stream sort engine's command line.
 *
 *   sortd [--config FILE] run --stream SPEC.json
 *       run one stream until its source ends (exit_at_eof), SIGINT/SIGTERM,
 *       or a failure; prints a one-line JSON summary to stdout.
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
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "orr_config.h"
#include "orr_log.h"
#include "sort_metrics.h"
#include "sort_pipe.h"
#include "sort_spec.h"

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
    {"sort", "packs", ORR_CFG_INT, "32", 0, 2, 4096,
     "packs in flight (flow-control bound: the source pauses when all are in use)"},
    {"sort", "pack_size", ORR_CFG_SIZE, "1m", 0, 4096, 64LL << 20, "bytes per pack"},
    {"sort", "max_open_units", ORR_CFG_INT, "2048", 0, 1, 1000000,
     "open unit files over all writers; past it the least recently used rolls"},
    {"sort", "unit_memory", ORR_CFG_SIZE, "256m", 0, 1LL << 20, 16LL << 30,
     "memory for the pending lzop blocks of all open unit files (sets the block size)"},
    {"sort", "metrics_listen", ORR_CFG_STRING, "", 0, 0, 0,
     "host:port of the Prometheus endpoint GET /metrics (empty: off)"},
};

static volatile sig_atomic_t sortd_stop;

static void sortd_on_signal(int sig)
{
    (void)sig;
    sortd_stop = 1;
}

static void sortd_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--config FILE] [--print-config] [--help] COMMAND [ARGS...]\n"
            "commands:\n"
            "  run --stream SPEC.json            run one stream\n"
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

static int sortd_run(orr_config *cfg, const char *spec_path)
{
    sort_spec *spec = NULL;
    int rc = sortd_load_spec(spec_path, &spec);
    if (rc != 0)
        return rc;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sortd_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

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
        .stop = &sortd_stop,
    };
    sort_pipe_stats st;
    memset(&st, 0, sizeof st);
    orr_err err;
    orr_err_clear(&err);
    sort_metrics *metrics = NULL;
    const char *listen = orr_config_str(cfg, "sort", "metrics_listen");
    orr_status s = ORR_OK;
    if (listen && *listen) {
        s = sort_metrics_start(listen, &metrics, &err);
        if (s == ORR_OK)
            ORR_INFO("metrics endpoint listening", "listen=%s port=%d path=/metrics", listen,
                     sort_metrics_port(metrics));
    }
    pc.metrics = metrics;
    if (s == ORR_OK)
        s = sort_pipe_run(&pc, &st, &err);
    sort_metrics_stop(metrics);
    char *js = sort_pipe_stats_json(&st);
    printf("%s\n", js);
    free(js);
    fflush(stdout);
    if (s != ORR_OK) {
        char b[600];
        ORR_ERROR("stream failed", "stream=%s error=%s", spec->name,
                  orr_log_q(orr_err_str(&err, b, sizeof b)));
        fprintf(stderr, "%s: %s\n", SORTD, orr_err_str(&err, b, sizeof b));
    }
    sort_spec_free(spec);
    return s == ORR_OK ? 0 : 1;
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
            sort_source_env env = {orr_config_str(cfg, "sort", "state_dir"), NULL,
                                   sort_format_find(spec->format.type)};
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
            sort_source_env env = {NULL, NULL, sort_format_find(spec->format.type)};
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

int main(int argc, char **argv)
{
    int argi = 0, exit_code = 0;
    orr_config *cfg =
        orr_config_from_args(SORTD, argc, argv, sortd_schema,
                             sizeof sortd_schema / sizeof sortd_schema[0], &argi, &exit_code);
    if (!cfg) {
        if (exit_code == 0 && argc > 1 &&
            (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
            sortd_usage(stdout);
        return exit_code;
    }
    int rc;
    if (argi >= argc) {
        sortd_usage(stderr);
        rc = 2;
    } else if (strcmp(argv[argi], "run") == 0) {
        rc = sortd_run(cfg, sortd_opt(argc, argv, argi + 1, "--stream"));
    } else if (strcmp(argv[argi], "check-spec") == 0 && argi + 1 < argc) {
        sort_spec *spec = NULL;
        rc = sortd_load_spec(argv[argi + 1], &spec);
        if (rc == 0)
            printf("ok\n");
        sort_spec_free(spec);
    } else if (strcmp(argv[argi], "replay") == 0) {
        rc = sortd_replay(cfg, sortd_opt(argc, argv, argi + 1, "--stream"),
                          sortd_opt(argc, argv, argi + 1, "--from"));
    } else {
        sortd_usage(stderr);
        rc = 2;
    }
    orr_config_free(cfg);
    orr_log_close();
    return rc;
}
