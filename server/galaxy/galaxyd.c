/*
 * galaxyd.c - Orrery's HTTP server: REST API, login, static UI.
 *
 *   galaxyd [--config FILE] serve    run the server until SIGTERM/SIGINT
 *   galaxyd routes                   print "METHOD PATH role" of every route
 *
 * galaxyd is stateless (see gx_app.h): it needs halleyd and the shared
 * session secret, nothing else, so several copies can run behind nginx.
 */
#include <curl/curl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gx_app.h"
#include "gx_cache_watch.h"
#include "gx_paused.h"
#include "gx_jwt.h"
#include "orr_blob.h"
#include "orr_daemon.h"
#include "orr_install.h"
#include "orr_jschema.h"
#include "orr_log.h"
#include "orr_rpc_tls.h"
#include "orr_sdnotify.h"

static const orr_cfg_key gx_schema[] = {
    {"galaxy", "listen", ORR_CFG_STRING, "127.0.0.1:8080", 0, 0, 0, "HTTP listen address"},
    {"galaxy", "threads", ORR_CFG_INT, "8", 0, 1, 256,
     "HTTP worker threads (handlers block on halleyd calls)"},
    {"galaxy", "cache_ttl", ORR_CFG_DURATION, "250ms", 0, 0, 3600000,
     "life of a cached instance or task read while halleyd's events keep the cache in step (at "
     "most 250ms while they do not); 0s turns the cache off"},
    {"galaxy", "halley", ORR_CFG_STRING, NULL, 1, 0, 0, "halleyd gRPC address, host:port"},
    {"galaxy", "halley_token", ORR_CFG_SECRET, NULL, 1, 0, 0, "service token for halleyd"},
    ORR_RPC_TLS_CLIENT_KEYS("galaxy"),
    {"galaxy", "jwt_secret", ORR_CFG_SECRET, NULL, 1, 0, 0,
     "session signing secret, at least 32 bytes, the same on every galaxyd"},
    {"galaxy", "session_ttl", ORR_CFG_DURATION, "12h", 0, 60000, 30LL * 86400000,
     "how long a login lasts"},
    {"galaxy", "cookie_secure", ORR_CFG_BOOL, "false", 0, 0, 0,
     "mark the session cookie Secure (set when served over HTTPS)"},
    {"galaxy", "static_dir", ORR_CFG_STRING, "static", 0, 0, 0, "folder served for the UI"},
    {"galaxy", "schema_dir", ORR_CFG_STRING, "schema", 0, 0, 0,
     "folder of the JSON Schemas of specs (task.schema.json)"},
    {"galaxy", "zk", ORR_CFG_STRING, "", 0, 0, 0,
     "ZooKeeper hosts, to list live executors and reach their log servers"},
    {"galaxy", "executor_log_token", ORR_CFG_SECRET, "", 0, 0, 0,
     "bearer token of the executors' log servers ([executor] log_token)"},
    {"galaxy", "max_package", ORR_CFG_SIZE, "256m", 0, 1024, 4LL << 30,
     "largest code-package upload (streamed to a temporary file, never held in memory)"},
    {"galaxy", "blob_root", ORR_CFG_STRING, "var/blob", 0, 0, 0,
     "blob store root: code packages, logs the executors archive (file:// or webhdfs:// "
     "URL, or a path)"},
    {"galaxy", "max_body", ORR_CFG_SIZE, "1m", 0, 1024, 64LL << 20,
     "largest request body held in memory (code-package uploads: max_package)"},
    {"galaxy", "datasource_test_token", ORR_CFG_SECRET, "", 0, 0, 0,
     "the [halley] worker token, to read data-source secrets for connection tests "
     "(unset = tests answer 503)"},
    {"galaxy", "rpc_timeout", ORR_CFG_DURATION, "5s", 0, 100, 60000, "deadline of halleyd calls"},
    {"galaxy", "rpc_driver", ORR_CFG_BOOL, "true", 0, 0, 0,
     "one thread waits for the answers of every halleyd call and wakes each caller (false: each "
     "HTTP thread waits in gRPC itself, handing the waiting to the others)"},
    {"galaxy", "login_free_failures", ORR_CFG_INT, "3", 0, 1, 1000,
     "failed logins of one account from one client before each further one waits "
     "(login_delay, doubling); a client gets 4x as many across accounts, an account 4x as many "
     "across "
     "clients that never logged in as it"},
    {"galaxy", "login_delay", ORR_CFG_DURATION, "1s", 0, 100, 600000,
     "the first wait after the free failed logins; it doubles with each further failure"},
    {"galaxy", "login_max_delay", ORR_CFG_DURATION, "1m", 0, 100, 3600000,
     "the longest wait after failed logins"},
    {"galaxy", "login_forget", ORR_CFG_DURATION, "15m", 0, 1000, 86400000,
     "failures older than this are forgotten"},
    {"galaxy", "trusted_proxies", ORR_CFG_STRING, "", 0, 0, 0,
     "addresses of proxies (e.g. nginx) whose X-Forwarded-For names the client, comma "
     "separated; from any other peer the header is ignored"},
    {"galaxy", "pid_file", ORR_CFG_STRING, "", 0, 0, 0,
     "if set, galaxyd serve writes its pid here (removed when it stops)"},
};

static int gx_cmd_routes(orr_daemon *d, int argc, char **argv)
{
    (void)d;
    (void)argc;
    (void)argv;
    for (size_t i = 0; i < gx_nroutes; i++)
        printf("%s %s %s\n", gx_routes[i].method, gx_routes[i].pattern,
               gx_routes[i].min_role == GX_ROLE_NONE ? "public"
                                                     : gx_role_name(gx_routes[i].min_role));
    return 0;
}

/* A write went through: what galaxyd keeps from events may lag behind it. */
static void gx_on_write(void *app)
{
    gx_paused_forget(((gx_app *)app)->paused);
}

static int gx_cmd_serve(orr_daemon *d, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    orr_config *cfg = orr_daemon_config(d);
    gx_app app;
    memset(&app, 0, sizeof(app));
    app.cfg = cfg;
    orr_err e;
    orr_err_clear(&e);
    const char *secret = orr_config_str(cfg, "galaxy", "jwt_secret");
    if (strlen(secret) < 32 || strlen(secret) > sizeof(app.jwt_secret)) {
        fprintf(stderr, "galaxyd: config error: [galaxy] jwt_secret: must be 32 to %zu bytes\n",
                sizeof(app.jwt_secret));
        return 2;
    }
    memcpy(app.jwt_secret, secret, strlen(secret));
    app.jwt_secret_len = strlen(secret);
    app.session_ttl_s = orr_config_int(cfg, "galaxy", "session_ttl") / 1000;
    app.cookie_secure = orr_config_bool(cfg, "galaxy", "cookie_secure");
    app.rpc_timeout_ms = (int)orr_config_int(cfg, "galaxy", "rpc_timeout");
    gx_ratelimit_policy lp = {
        .free_failures = (int)orr_config_int(cfg, "galaxy", "login_free_failures"),
        .base_delay_ms = orr_config_int(cfg, "galaxy", "login_delay"),
        .max_delay_ms = orr_config_int(cfg, "galaxy", "login_max_delay"),
        .forget_after_ms = orr_config_int(cfg, "galaxy", "login_forget"),
    };
    app.login_by_pair = gx_ratelimit_create(&lp, 16384);
    lp.free_failures *= 4;
    app.login_by_client = gx_ratelimit_create(&lp, 8192);
    app.login_by_user = gx_ratelimit_create(&lp, 8192);
    /* Clients that logged in as an account pass its account-wide delay for a
     * session's length. */
    lp.forget_after_ms = app.session_ttl_s * 1000;
    app.login_known = gx_ratelimit_create(&lp, 16384);
    /* The UI and the schemas: the configured folders, else the tree's
     * (relative to the working folder), else the install's share/orrery. */
    char static_buf[4096], schema_buf[4096];
    const char *static_dir =
        orr_install_find_dir(orr_config_str(cfg, "galaxy", "static_dir"),
                             strcmp(orr_config_origin(cfg, "galaxy", "static_dir"), "default") == 0,
                             "static", static_buf, sizeof(static_buf));
    const char *schema_dir =
        orr_install_find_dir(orr_config_str(cfg, "galaxy", "schema_dir"),
                             strcmp(orr_config_origin(cfg, "galaxy", "schema_dir"), "default") == 0,
                             "schema", schema_buf, sizeof(schema_buf));
    char openapi[4096];
    snprintf(openapi, sizeof(openapi), "%s/openapi.json", static_dir);
    app.openapi_path = openapi;
    int rc = 1;
    gx_cache_watch *cache_watch = NULL;
    char schema_path[4096];
    snprintf(schema_path, sizeof(schema_path), "%s/task.schema.json", schema_dir);
    if (orr_jschema_load_file(schema_path, &app.task_schema, &e) != ORR_OK) {
        fprintf(stderr, "galaxyd: %s: %s: %s\n", schema_path, e.field, e.msg);
        goto out;
    }
    if (sodium_init() < 0) {
        fprintf(stderr, "galaxyd: libsodium failed to initialise\n");
        goto out;
    }
    app.tokcache = gx_tokcache_create();
    app.blob_root = orr_config_str(cfg, "galaxy", "blob_root"); /* opened at first use */
    app.max_package = (size_t)orr_config_int(cfg, "galaxy", "max_package");
    const char *zk = orr_config_str(cfg, "galaxy", "zk");
    app.zk_hosts = zk;
    if (zk && *zk && orr_zk_open(zk, 3000, &app.zk, &e) != ORR_OK)
        ORR_WARN("ZooKeeper not reachable yet; executors and live logs will retry", "zk=%s", zk);
    if (orr_rpc_tls_client_setup(cfg, "galaxy", &e) != ORR_OK) {
        fprintf(stderr, "galaxyd: %s\n", e.msg);
        goto out;
    }
    if (orr_rpc_client_create(
            &orrery__halley__v1__halley__descriptor, orr_config_str(cfg, "galaxy", "halley"),
            orr_config_str(cfg, "galaxy", "halley_token"), &app.halley, &e) != ORR_OK) {
        fprintf(stderr, "galaxyd: %s\n", e.msg);
        goto out;
    }
    const char *dstok = orr_config_str(cfg, "galaxy", "datasource_test_token");
    if (dstok && *dstok &&
        orr_rpc_client_create(&orrery__halley__v1__halley__descriptor,
                              orr_config_str(cfg, "galaxy", "halley"), dstok, &app.halley_worker,
                              &e) != ORR_OK) {
        fprintf(stderr, "galaxyd: %s\n", e.msg);
        goto out;
    }
    /* Many HTTP threads call at once: one driver thread waits for the
     * answers (orr_rpc_client_drive), before the event streams open. A
     * client the driver could not take goes on undriven. */
    if (orr_config_bool(cfg, "galaxy", "rpc_driver") &&
        (orr_rpc_client_drive(app.halley, &e) != ORR_OK ||
         (app.halley_worker && orr_rpc_client_drive(app.halley_worker, &e) != ORR_OK)))
        ORR_WARN("halleyd calls not driven: each HTTP thread waits in gRPC itself", "msg=%s",
                 orr_log_q(e.msg));
    /* Ended sessions, kept current from halleyd's events (a thread of its
     * own; the stop signals are blocked since orr_daemon_main, so it
     * inherits the mask and the main thread alone waits for them). */
    if (gx_sessions_start(app.halley, app.rpc_timeout_ms, &app.sessions, &e) != ORR_OK) {
        fprintf(stderr, "galaxyd: %s\n", e.msg);
        goto out;
    }
    gx_sessions_set_tokcache(app.sessions, app.tokcache);
    /* The tasks paused workflows hold, kept from the events too. */
    if (gx_paused_start(app.halley, &app.paused, &e) != ORR_OK) {
        fprintf(stderr, "galaxyd: %s\n", e.msg);
        goto out;
    }
    gx_server_opts o = {
        .listen = orr_config_str(cfg, "galaxy", "listen"),
        .threads = (int)orr_config_int(cfg, "galaxy", "threads"),
        .cache_ttl_ms = orr_config_int(cfg, "galaxy", "cache_ttl") > 0
                            ? (int)orr_config_int(cfg, "galaxy", "cache_ttl")
                            : -1,
        .max_body = (size_t)orr_config_int(cfg, "galaxy", "max_body"),
        .static_dir = static_dir,
        .routes = gx_routes,
        .nroutes = gx_nroutes,
        .spool_max = gx_route_spool_max,
        .auth = gx_auth_check,
        .app = &app,
        .trusted_proxies = orr_config_str(cfg, "galaxy", "trusted_proxies"),
        .on_write = gx_on_write,
    };
    if (gx_server_start(&o, &app.server, &e) != ORR_OK) {
        fprintf(stderr, "galaxyd: %s\n", e.msg);
        goto out;
    }
    gx_paused_set_cache(app.paused, app.server);
    /* Cached answers made stale by every event halleyd streams. */
    if (o.cache_ttl_ms > 0 &&
        gx_cache_watch_start(app.halley, app.server, &cache_watch, &e) != ORR_OK) {
        fprintf(stderr, "galaxyd: %s\n", e.msg);
        gx_paused_set_cache(app.paused, NULL);
        gx_server_stop(app.server);
        goto out;
    }
    ORR_INFO("galaxyd serving", "listen=%s port=%d halley=%s static=%s", o.listen,
             gx_server_port(app.server), orr_config_str(cfg, "galaxy", "halley"), static_dir);
    orr_sdnotify_ready("galaxyd serving");
    int sig = orr_daemon_wait_stop(-1);
    ORR_INFO("galaxyd stopping", "signal=%d", sig);
    orr_sdnotify_stopping();
    gx_cache_watch_stop(cache_watch);
    cache_watch = NULL;
    gx_paused_set_cache(app.paused, NULL);
    gx_server_stop(app.server);
    rc = 0;
out:
    gx_cache_watch_stop(cache_watch);
    gx_paused_stop(app.paused);
    gx_sessions_stop(app.sessions);
    orr_rpc_client_destroy(app.halley);
    orr_rpc_client_destroy(app.halley_worker);
    gx_tokcache_destroy(app.tokcache);
    gx_ratelimit_destroy(app.login_by_pair);
    gx_ratelimit_destroy(app.login_by_client);
    gx_ratelimit_destroy(app.login_by_user);
    gx_ratelimit_destroy(app.login_known);
    orr_jschema_free(app.task_schema);
    orr_zk_close(app.zk);
    orr_blob_close(app.blob);
    return rc;
}

static void gx_usage(FILE *f)
{
    fprintf(f, "usage: galaxyd [--config FILE] [--print-config] serve|routes\n");
}

static const orr_daemon_cmd gx_cmds[] = {
    {"serve", gx_cmd_serve, ORR_DAEMON_SERVES},
    {"routes", gx_cmd_routes, ORR_DAEMON_NO_CONFIG},
};

static const orr_daemon_def gx_daemon = {
    "galaxyd", "galaxy", gx_schema, sizeof(gx_schema) / sizeof(gx_schema[0]), gx_cmds, 2, gx_usage,
};

int main(int argc, char **argv)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return orr_daemon_main(&gx_daemon, argc, argv);
}
