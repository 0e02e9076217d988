/*
 * hl_main.c - halleyd: Orrery's metadata service.
 *
 *   halleyd [--config FILE] migrate   apply pending migrations, then exit
 *   halleyd [--config FILE] serve     run the gRPC service (until SIGTERM/SIGINT)
 *   halleyd [--config FILE] version   print the schema version this binary knows
 *
 * Exit codes: 0 done, 1 runtime failure, 2 bad configuration or usage, or a
 * database schema this binary does not match.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_cli.h"
#include "hl_evwin.h"
#include "hl_metrics.h"
#include "hl_migrate.h"
#include "hl_spec.h"
#include "hl_tcomb.h"
#include "orr_alloc.h"
#include "orr_config.h"
#include "orr_daemon.h"
#include "orr_log.h"
#include "orr_rpc_halley_descriptors.h"
#include "orr_rpc_tls.h"
#include "orr_sdnotify.h"

static const orr_cfg_key hl_cfg_schema[] = {
    {"halley", "listen", ORR_CFG_STRING, "127.0.0.1:7070", 0, 0, 0,
     "gRPC address host:port (port 0 = any free port)"},
    {"halley", "token", ORR_CFG_SECRET, NULL, 1, 0, 0,
     "service token every caller sends as 'authorization: Bearer <token>'"},
    {"halley", "worker_token", ORR_CFG_SECRET, NULL, 0, 0, 0,
     "token workers send (instead of the service token) to read data-source secrets"
     " with GetDataSourceSecret (unset = that call is always refused)"},
    {"halley", "pg_dsn", ORR_CFG_SECRET, NULL, 1, 0, 0, "libpq connection string"},
    {"halley", "pool_size", ORR_CFG_INT, "8", 0, 1, 256, "PostgreSQL connections"},
    {"halley", "secret_key", ORR_CFG_SECRET, NULL, 1, 0, 0,
     "32-byte key (64 hex digits or base64) encrypting data-source credentials"},
    {"halley", "metrics_listen", ORR_CFG_STRING, "127.0.0.1:9170", 0, 0, 0,
     "HTTP address of /metrics and /healthz ('' = off)"},
    {"halley", "event_retention", ORR_CFG_DURATION, "72h", 0, 60000, 8640000000LL,
     "events older than this are deleted; resuming from before them is refused"},
    {"halley", "event_grace", ORR_CFG_DURATION, "5s", 0, 100, 600000,
     "how long a watcher waits on a missing event id before treating it as rolled back"},
    {"halley", "threads", ORR_CFG_INT, "32", 0, 1, 256, "RPC worker threads"},
    {"halley", "rpc_handoff_us", ORR_CFG_INT, "300", 0, 0, 1000000,
     "one RPC worker waits for calls and runs the quick ones itself; another is let in "
     "once none has waited for this long, at least 50 (0 = all idle workers wait)"},
    {"halley", "transition_leaders", ORR_CFG_INT, "3", 0, 1, 64,
     "combined TransitionInstance statements running at once"},
    {"halley", "transition_min_batch", ORR_CFG_INT, "8", 0, 1, 64,
     "TransitionInstance calls that must wait before a statement starts beside a running one"},
    {"halley", "max_streams", ORR_CFG_INT, "256", 0, 1, 100000, "concurrent WatchEvents streams"},
    {"halley", "task_cache", ORR_CFG_INT, "100000", 0, 0, 10000000,
     "tasks kept in the read cache (0 = no cache)"},
    {"halley", "port_file", ORR_CFG_STRING, "", 0, 0, 0,
     "if set, write 'grpc=<port> metrics=<port>' here once serving"},
    {"halley", "pid_file", ORR_CFG_STRING, "", 0, 0, 0,
     "if set, halleyd serve writes its pid here (removed when it stops)"},
    ORR_RPC_TLS_SERVER_KEYS("halley"),
    ORR_RPC_TLS_CLIENT_KEYS("halley"),
};
#define HL_CFG_N (sizeof hl_cfg_schema / sizeof hl_cfg_schema[0])

static int hl_cmd_migrate(orr_daemon *d, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    orr_config *cfg = orr_daemon_config(d);
    PGconn *pg = PQconnectdb(orr_config_str(cfg, "halley", "pg_dsn"));
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "halleyd migrate: cannot connect to PostgreSQL: %s", PQerrorMessage(pg));
        PQfinish(pg);
        return 1;
    }
    int from = 0, to = 0;
    orr_err err;
    orr_err_clear(&err);
    orr_status s = hl_migrate_apply(pg, &from, &to, &err);
    PQfinish(pg);
    if (s != ORR_OK) {
        char buf[600];
        fprintf(stderr, "halleyd migrate: %s\n", orr_err_str(&err, buf, sizeof buf));
        return s == ORR_ESTATE ? 2 : 1;
    }
    printf("schema at version %d (was %d)\n", to, from);
    return 0;
}

/* Refuse a database whose schema differs from what this binary knows.
 * 0 ok or unreachable (checked later by Health), 2 mismatch. */
static int hl_check_schema(const char *dsn, int known)
{
    PGconn *pg = PQconnectdb(dsn);
    if (PQstatus(pg) != CONNECTION_OK) {
        ORR_WARN("postgres unreachable at start; serving UNAVAILABLE until it is back", "err=%s",
                 orr_log_q(PQerrorMessage(pg)));
        PQfinish(pg);
        return 0;
    }
    int v = 0;
    orr_err err;
    orr_status s = hl_migrate_db_version(pg, &v, &err);
    PQfinish(pg);
    if (s != ORR_OK)
        return 0;
    if (v > known) {
        fprintf(stderr,
                "halleyd: database schema version %d is newer than this halleyd knows (%d); "
                "refusing to start\n",
                v, known);
        return 2;
    }
    if (v < known) {
        fprintf(stderr,
                "halleyd: database schema version %d is older than %d; run 'halleyd migrate'\n", v,
                known);
        return 2;
    }
    return 0;
}

static int hl_cmd_serve(orr_daemon *d, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    orr_config *cfg = orr_daemon_config(d);
    int rc = 1;
    orr_err err;
    orr_err_clear(&err);
    char ebuf[600];
    hl_ctx hc;
    memset(&hc, 0, sizeof hc);
    orr_jschema *schema = NULL;
    hl_metrics *metrics = NULL;
    orr_rpc_server *srv = NULL;
    orr_rpc_tls_conf tls = {0};

    /* The stop signals are blocked since orr_daemon_main: every thread
     * created here inherits the mask and the wait below takes them. */
    const char *dsn = orr_config_str(cfg, "halley", "pg_dsn");
    hc.known_schema_version = hl_migrate_known_version();
    hc.event_grace_ms = (int)orr_config_int(cfg, "halley", "event_grace");
    hc.worker_token = orr_config_str(cfg, "halley", "worker_token");
    hc.service_token = orr_config_str(cfg, "halley", "token");
    if (hl_secret_init(&err) != ORR_OK ||
        hl_secret_parse_key(orr_config_str(cfg, "halley", "secret_key"), hc.secret_key, &err) !=
            ORR_OK ||
        hl_spec_schema_load(&schema, &err) != ORR_OK) {
        fprintf(stderr, "halleyd: %s\n", orr_err_str(&err, ebuf, sizeof ebuf));
        return 2;
    }
    hc.task_schema = schema;
    if (orr_rpc_tls_server_load(cfg, "halley", &tls, &err) != ORR_OK) {
        fprintf(stderr, "halleyd: %s\n", orr_err_str(&err, ebuf, sizeof ebuf));
        ORR_ERROR("halleyd cannot start", "err=%s", orr_log_q(ebuf));
        rc = 2;
        goto out;
    }
    if ((rc = hl_check_schema(dsn, hc.known_schema_version)) != 0)
        goto out;
    rc = 1;
    hl_db_opts dbo = {.dsn = dsn, .size = (int)orr_config_int(cfg, "halley", "pool_size")};
    if (hl_db_create(&dbo, &hc.db, &err) != ORR_OK)
        goto fail;
    hl_tcomb_configure((int)orr_config_int(cfg, "halley", "transition_leaders"),
                       (int)orr_config_int(cfg, "halley", "transition_min_batch"));
    hc.cache = hl_cache_create((size_t)orr_config_int(cfg, "halley", "task_cache"));
    if (hl_events_start(dsn, orr_config_int(cfg, "halley", "event_retention"), hc.cache, &hc.events,
                        &err) != ORR_OK)
        goto fail;
    hc.evwin = hl_evwin_create(HL_EVWIN_EVENTS);
    orr_rpc_server_opts so = {
        .listen = orr_config_str(cfg, "halley", "listen"),
        .threads = (int)orr_config_int(cfg, "halley", "threads"),
        .handoff_us = (int)orr_config_int(cfg, "halley", "rpc_handoff_us"),
        .max_streams = (int)orr_config_int(cfg, "halley", "max_streams"),
        .token = orr_config_str(cfg, "halley", "token"),
        .handler_auth = hl_worker_methods,
        .tls = tls.on ? &tls.tls : NULL,
    };
    if (orr_rpc_server_create(&orrery__halley__v1__halley__descriptor, hl_methods, hl_methods_count,
                              &hc, &so, &srv, &err) != ORR_OK ||
        orr_rpc_server_add_health(srv, hl_health_probe, &hc, 500, &err) != ORR_OK ||
        orr_rpc_server_add_reflection(srv, orr_rpc_halley_descriptors,
                                      orr_rpc_halley_descriptors_len, &err) != ORR_OK)
        goto fail;
    /* /metrics serves once the method table is whole, so every scrape
     * has the RPC families (the port already takes connections). */
    const char *ml = orr_config_str(cfg, "halley", "metrics_listen");
    if (ml && *ml && hl_metrics_start(ml, &hc, &metrics, &err) != ORR_OK)
        goto fail;
    if (metrics)
        hl_metrics_set_server(metrics, srv);
    if (orr_rpc_server_start(srv) != ORR_OK)
        goto fail;
    int port = orr_rpc_server_port(srv), mport = metrics ? hl_metrics_port(metrics) : 0;
    if (orr_daemon_port_file(d, &err, "grpc=%d metrics=%d\n", port, mport) != ORR_OK)
        goto fail;
    ORR_INFO("halleyd serving",
             "grpc_port=%d metrics_port=%d schema_version=%d pool_size=%d tls=%s", port, mport,
             hc.known_schema_version, dbo.size,
             !tls.on  ? "off"
             : tls.ca ? "mutual"
                      : "on");
    orr_sdnotify_ready("halleyd serving");
    int sig = orr_daemon_wait_stop(-1);
    ORR_INFO("halleyd stopping", "signal=%d", sig);
    orr_sdnotify_stopping();
    rc = 0;
    goto out;
fail:
    ORR_ERROR("halleyd cannot start", "err=%s", orr_log_q(orr_err_str(&err, ebuf, sizeof ebuf)));
    fprintf(stderr, "halleyd: %s\n", ebuf);
out:
    if (hc.events)
        hl_events_wake(hc.events);
    hl_metrics_stop(metrics); /* no scrape reads the server's stats from here on */
    if (srv)
        orr_rpc_server_destroy(srv);
    hl_events_stop(hc.events);
    hl_evwin_free(hc.evwin);
    hl_db_destroy(hc.db);
    if (hc.cache)
        hl_cache_destroy(hc.cache);
    orr_jschema_free(schema);
    orr_rpc_tls_conf_free(&tls);
    return rc;
}

static int hl_cmd_user_add_main(orr_daemon *d, int argc, char **argv)
{
    return hl_cmd_user_add(orr_daemon_config(d), argc, argv);
}

static int hl_cmd_version(orr_daemon *d, int argc, char **argv)
{
    (void)d;
    (void)argc;
    (void)argv;
    printf("schema version %d\n", hl_migrate_known_version());
    return 0;
}

static void hl_usage(FILE *f)
{
    fprintf(f, "usage: halleyd [--config FILE] migrate|serve|user-add|version\n");
}

static const orr_daemon_cmd hl_cmds[] = {
    {"migrate", hl_cmd_migrate, 0},
    {"serve", hl_cmd_serve, ORR_DAEMON_SERVES},
    {"user-add", hl_cmd_user_add_main, 0},
    {"version", hl_cmd_version, 0},
};

static const orr_daemon_def hl_daemon = {
    "halleyd", "halley", hl_cfg_schema, HL_CFG_N, hl_cmds, sizeof hl_cmds / sizeof hl_cmds[0],
    hl_usage,
};

int main(int argc, char **argv)
{
    /* A page of up to HL_PAGE_MAX rows is a PGresult, its messages in the
     * call's arena and its packed answer, each allocated and freed at every
     * call: kept in the heap, a page of 1,000 rows costs halleyd about 0.6
     * of the CPU it did (docs/benchmarks.md, "Large pages: ..."). */
    orr_alloc_keep_heap(8 << 20, 32 << 20);
    return orr_daemon_main(&hl_daemon, argc, argv);
}
