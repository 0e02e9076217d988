/*
 * keplerd.c - the Kepler scheduler daemon's entry point.
 *
 *   keplerd [--config FILE] [--print-config] [--help] COMMAND [ARGS...]
 *
 * Commands:
 *   cron-next EXPR [--tz ZONE] [--from ISO8601] [--count N]
 *       Print the next N fire times of EXPR (strictly after --from, default
 *       now), read in ZONE (default [kepler] timezone, itself UTC by default),
 *       as ISO-8601 UTC, one per line. Exit 0; 2 on a bad expression, zone,
 *       date or option (stderr names the field); 1 when the expression has
 *       fewer than N fire times before the end of 2199 (those found are
 *       printed).
 *       --calendar FILE adjusts them to a business calendar: FILE is an
 *       .ics file (its events' days are excluded; business weekdays Monday
 *       to Friday, in ZONE) or a JSON calendar as the REST API answers it
 *       ({"timezone", "weekdays", "days": [{"day", "kind"}]}); --policy
 *       skip (default), next or previous says what happens to a fire time
 *       on a day that is not a business day (orr_cal.h).
 *
 *   run
 *       Run the scheduler: join the leader election in ZooKeeper ([kepler]
 *       zk), follow halleyd's events ([kepler] halley, halley_token) and,
 *       while leading, materialise, resolve, dispatch, retry and time out
 *       instances (kp_sched.h), and send alert messages from halleyd's
 *       outbox (kp_notify.h). Stops on SIGINT/SIGTERM; exit 0, or 2 on a
 *       bad setting, 1 when a client cannot start.
 *
 * Common options go through orr_config_from_args(), so --config and
 * --print-config work as for every Orrery daemon.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_cal.h"
#include "orr_cal_ics.h"
#include "orr_cron.h"
#include "kp_notify.h"
#include "kp_sched.h"
#include "orr_tz.h"
#include "orr_config.h"
#include "orr_daemon.h"
#include "orr_log.h"
#include "orr_metrics.h"
#include "orr_rpc_tls.h"

#define KEPLERD             "keplerd"
#define CRON_NEXT_MAX_COUNT 10000

static const orr_cfg_key keplerd_schema[] = {
    {"kepler", "timezone", ORR_CFG_STRING, "UTC", 0, 0, 0,
     "IANA time zone of schedules that name none (e.g. Europe/Berlin)"},
    {"kepler", "halley", ORR_CFG_STRING, "127.0.0.1:7070", 0, 0, 0, "halleyd gRPC target"},
    {"kepler", "halley_token", ORR_CFG_SECRET, "", 0, 0, 0, "service token for halleyd"},
    ORR_RPC_TLS_CLIENT_KEYS("kepler"),
    {"kepler", "zk", ORR_CFG_STRING, "127.0.0.1:2181", 0, 0, 0, "ZooKeeper hosts (host:port,...)"},
    {"kepler", "id", ORR_CFG_STRING, "", 0, 0, 0,
     "this keplerd's id in the election (default hostname:pid)"},
    {"kepler", "sweep_interval", ORR_CFG_DURATION, "30s", 0, 100, 86400000,
     "period of the repair sweep that re-reads live instances from halleyd"},
    {"kepler", "zk_session_timeout", ORR_CFG_DURATION, "6s", 0, 2000, 60000,
     "ZooKeeper session timeout: a standby takes over within it"},
    {"kepler", "materialise_horizon", ORR_CFG_DURATION, "7d", 0, 60000, 366LL * 86400000,
     "oldest fire time materialised after downtime (now minus this)"},
    {"kepler", "default_timeout", ORR_CFG_DURATION, "3h", 0, 1000, 366LL * 86400000,
     "timeout of tasks whose spec names none"},
    {"kepler", "weak_deadline", ORR_CFG_DURATION, "0s", 0, 0, 366LL * 86400000,
     "a weak dependency counts as met this long after the schedule time (0 = never)"},
    {"kepler", "cache_keep", ORR_CFG_DURATION, "2h", 0, 1000, 366LL * 86400000,
     "how long finished instances stay in memory for dependency checks"},
    {"kepler", "metrics_listen", ORR_CFG_STRING, "", 0, 0, 0,
     "HTTP address of /metrics and /healthz, host:port ('' = off)"},
    {"kepler", "pid_file", ORR_CFG_STRING, "", 0, 0, 0,
     "if set, keplerd run writes its pid here (removed when it stops)"},
    {"kepler", "notify_inflight", ORR_CFG_INT, "16", 0, 1, 256,
     "alert deliveries the leader sends at once"},
    {"kepler", "notify_lease", ORR_CFG_DURATION, "60s", 0, 2000, 600000,
     "lease of a claimed alert delivery: a sender that died is replaced after it"},
    {"kepler", "notify_poll", ORR_CFG_DURATION, "100ms", 0, 10, 60000,
     "how often an idle leader looks for due alert deliveries"},
    {"kepler", "notify_backoff", ORR_CFG_DURATION, "1s", 0, 10, 60000,
     "wait before an alert message's first retry, doubled per attempt up to 60s"},
    {"kepler", "notify_ca_file", ORR_CFG_STRING, "", 0, 0, 0,
     "PEM bundle of CAs trusted for alert channels' TLS ('' = the system's)"},
    {"kepler", "console_url", ORR_CFG_STRING, "", 0, 0, 0,
     "the console's base URL, for links in alert messages ('' = no link)"},
};

static void keplerd_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--config FILE] [--print-config] [--help] COMMAND [ARGS...]\n"
            "commands:\n"
            "  cron-next EXPR [--tz ZONE] [--from ISO8601] [--count N]\n"
            "            [--calendar FILE [--policy skip|next|previous]]\n"
            "      print the next N (1-%d, default 1) fire times of a cron expression\n"
            "      (Quartz 6/7 fields or Unix 5 fields) after --from (default now),\n"
            "      read in time zone ZONE (default [kepler] timezone), as UTC ISO-8601;\n"
            "      with a business calendar (.ics or JSON file) adjusted by the policy\n"
            "  run\n"
            "      run the scheduler (leader election, dispatch) until SIGTERM\n"
            "options:\n"
            "  --config FILE    read settings from FILE\n"
            "  --print-config   print the effective configuration and exit\n",
            KEPLERD, CRON_NEXT_MAX_COUNT);
}

/* "--name VALUE" or "--name=VALUE" at argv[*i]; 1 if matched (value set or
 * NULL when missing), 0 if argv[*i] is another argument. */
static int keplerd_opt(char **argv, int argc, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return 0;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != '\0')
        return 0;
    *value = *i + 1 < argc ? argv[++*i] : NULL;
    return 1;
}

static int cron_next_fail(const char *what, const orr_err *err)
{
    char buf[600];
    if (err)
        fprintf(stderr, "%s: cron-next: %s\n", KEPLERD, orr_err_str(err, buf, sizeof(buf)));
    else
        fprintf(stderr, "%s: cron-next: %s\n", KEPLERD, what);
    return 2;
}

static int cron_next_add_day(void *ctx, int64_t day, const char *summary, orr_err *err)
{
    (void)summary;
    return orr_cal_set_day(ctx, day, ORR_CAL_EXCLUDED, err) == ORR_OK ? 0 : 1;
}

/* The calendar in file: JSON, or an .ics whose events' days are excluded
 * (business weekdays Monday to Friday in zone). err->field "calendar" when
 * the file cannot be read. */
static orr_status cron_next_calendar(const char *file, const char *zone, int64_t from,
                                     orr_cal **out, orr_err *err)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return orr_err_set(err, ORR_EINVAL, "calendar", "%.200s: cannot open", file);
    size_t cap = 1 << 16, n = 0;
    char *buf = orr_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            if (cap >= ORR_ICS_MAX_BYTES)
                break;
            cap *= 2;
            buf = orr_xrealloc(buf, cap);
        }
    }
    int bad = ferror(f) || n >= ORR_ICS_MAX_BYTES;
    fclose(f);
    orr_status s;
    size_t i = 0;
    while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
        i++;
    if (bad)
        s = orr_err_set(err, ORR_EINVAL, "calendar", "%.200s: unreadable or larger than %d bytes",
                        file, ORR_ICS_MAX_BYTES);
    else if (i < n && buf[i] == '{')
        s = orr_cal_from_json(buf, n, out, err);
    else if ((s = orr_cal_new(zone, ORR_CAL_WEEKDAYS_DEFAULT, out, err)) == ORR_OK) {
        int64_t d = from / 86400;
        s = orr_ics_days(buf, n, d - ORR_CAL_SEARCH_DAYS, d + 4 * ORR_CAL_SEARCH_DAYS,
                         cron_next_add_day, *out, err);
        if (s != ORR_OK) {
            orr_cal_free(*out);
            *out = NULL;
        }
    }
    free(buf);
    return s;
}

static int cmd_cron_next(orr_daemon *d, int argc, char **argv)
{
    const orr_config *cfg = orr_daemon_config(d);
    argc--; /* argv[0] is the command */
    argv++;
    const char *expr = NULL, *zone = orr_config_str(cfg, "kepler", "timezone");
    const char *from = NULL, *count_s = NULL, *cal_file = NULL, *policy_s = NULL;
    char msg[200];
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        const char *opt = argv[i];
        if (keplerd_opt(argv, argc, &i, "--tz", &v))
            zone = v;
        else if (keplerd_opt(argv, argc, &i, "--from", &v))
            from = v;
        else if (keplerd_opt(argv, argc, &i, "--count", &v))
            count_s = v;
        else if (keplerd_opt(argv, argc, &i, "--calendar", &v))
            cal_file = v;
        else if (keplerd_opt(argv, argc, &i, "--policy", &v))
            policy_s = v;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            keplerd_usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            snprintf(msg, sizeof(msg), "unknown option \"%.60s\"", argv[i]);
            return cron_next_fail(msg, NULL);
        } else if (expr) {
            snprintf(msg, sizeof(msg), "unexpected argument \"%.60s\" (quote the expression)",
                     argv[i]);
            return cron_next_fail(msg, NULL);
        } else {
            expr = argv[i];
            continue;
        }
        if (!v) {
            snprintf(msg, sizeof(msg), "%.20s needs a value", opt);
            return cron_next_fail(msg, NULL);
        }
    }
    if (!expr)
        return cron_next_fail("missing cron expression (e.g. cron-next '0 0 12 * * ?')", NULL);

    orr_err err;
    orr_err_clear(&err);
    long count = 1;
    if (count_s) {
        char *end;
        count = strtol(count_s, &end, 10);
        if (end == count_s || *end || count < 1 || count > CRON_NEXT_MAX_COUNT) {
            orr_err_set(&err, ORR_EINVAL, "count", "must be an integer 1-%d, got \"%.40s\"",
                        CRON_NEXT_MAX_COUNT, count_s);
            return cron_next_fail(NULL, &err);
        }
    }
    int64_t t = (int64_t)time(NULL);
    if (from && orr_tz_parse_iso8601(from, &t, &err) != ORR_OK) {
        snprintf(err.field, sizeof(err.field), "from");
        return cron_next_fail(NULL, &err);
    }
    const orr_tz *tz;
    if (orr_tz_load(zone, &tz, &err) != ORR_OK)
        return cron_next_fail(NULL, &err);
    orr_cron c;
    if (orr_cron_parse_into(expr, &c, &err) != ORR_OK)
        return cron_next_fail(NULL, &err);
    orr_cal_policy policy;
    if (orr_cal_policy_parse(policy_s, &policy, &err) != ORR_OK) {
        snprintf(err.field, sizeof(err.field), "policy");
        return cron_next_fail(NULL, &err);
    }
    orr_cal *cal = NULL;
    if (cal_file && cron_next_calendar(cal_file, zone, t, &cal, &err) != ORR_OK)
        return cron_next_fail(NULL, &err);

    char line[40];
    for (long i = 0; i < count; i++) {
        orr_status rc = orr_cal_next(&c, tz, cal, policy, t, &t);
        if (rc != ORR_OK)
            orr_cal_free(cal);
        if (rc == ORR_ENOTFOUND) {
            fflush(stdout);
            fprintf(stderr, "%s: cron-next: no %sfire time before the end of %d\n", KEPLERD,
                    i ? "further " : "", ORR_CRON_YEAR_MAX);
            return 1;
        }
        if (rc != ORR_OK) {
            fprintf(stderr, "%s: cron-next: %s\n", KEPLERD, orr_status_msg(rc));
            return 1;
        }
        printf("%s\n", orr_tz_format_utc(t, line, sizeof(line)));
    }
    orr_cal_free(cal);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ metrics */

static void keplerd_collect(void *ctx, orr_metrics_writer *w)
{
    kp_sched_status *st = ctx;
    uint64_t epoch = atomic_load(&st->epoch);
    orr_metrics_family(w, "kepler_leader", ORR_METRIC_GAUGE,
                       "1 while this keplerd leads the scheduling, 0 while it stands by.");
    orr_metrics_sample(w, NULL, epoch ? 1 : 0);
    orr_metrics_family(w, "kepler_leader_epoch", ORR_METRIC_GAUGE,
                       "Leadership epoch of this keplerd (0 while standing by).");
    orr_metrics_sample(w, NULL, (double)epoch);
    orr_metrics_family(w, "kepler_zk_connected", ORR_METRIC_GAUGE,
                       "1 while the ZooKeeper session is connected.");
    orr_metrics_sample(w, NULL, atomic_load(&st->zk_connected));
    orr_metrics_family(w, "kepler_dispatched_total", ORR_METRIC_COUNTER,
                       "Instances dispatched to executors by this keplerd.");
    orr_metrics_sample(w, NULL, (double)atomic_load(&st->dispatched_total));
}

static void keplerd_collect_notify(void *ctx, orr_metrics_writer *w)
{
    const kp_notify_stats *st = ctx;
    static const char *const delivered[] = {"outcome", "delivered", NULL};
    static const char *const retried[] = {"outcome", "retry", NULL};
    static const char *const failed[] = {"outcome", "failed", NULL};
    orr_metrics_family(w, "kepler_alert_deliveries_total", ORR_METRIC_COUNTER,
                       "Alert message attempts sent by this keplerd, by outcome.");
    orr_metrics_sample(w, delivered, (double)atomic_load(&st->delivered));
    orr_metrics_sample(w, retried, (double)atomic_load(&st->retried));
    orr_metrics_sample(w, failed, (double)atomic_load(&st->failed));
}

/* Healthy while the ZooKeeper session is connected: then this keplerd
 * either leads or stands by ready to take over. */
static int keplerd_health(void *ctx, orr_buf *body)
{
    kp_sched_status *st = ctx;
    int zk = atomic_load(&st->zk_connected);
    uint64_t epoch = atomic_load(&st->epoch);
    orr_buf_appendf(body,
                    "{\"status\":\"%s\",\"role\":\"%s\",\"epoch\":%llu,"
                    "\"zookeeper\":\"%s\"}",
                    zk ? "ok" : "degraded", epoch ? "leader" : "standby", (unsigned long long)epoch,
                    zk ? "connected" : "disconnected");
    return zk;
}

static volatile sig_atomic_t keplerd_stop;

static int cmd_run(orr_daemon *d, int argc, char **argv)
{
    const orr_config *cfg = orr_daemon_config(d);
    if (argc > 1) {
        fprintf(stderr, "%s: run: unexpected argument \"%.60s\"\n", KEPLERD, argv[1]);
        return 2;
    }
    orr_err terr;
    orr_err_clear(&terr);
    if (orr_rpc_tls_client_setup(cfg, "kepler", &terr) != ORR_OK) {
        fprintf(stderr, "%s: %s\n", KEPLERD, terr.msg);
        return 2;
    }
    char id[256];
    const char *cid = orr_config_str(cfg, "kepler", "id");
    if (cid && *cid) {
        snprintf(id, sizeof id, "%s", cid);
    } else {
        char host[200] = "keplerd";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(id, sizeof id, "%s:%ld", host, (long)getpid());
    }
    kp_sched_opts o = {
        .halley = orr_config_str(cfg, "kepler", "halley"),
        .token = orr_config_str(cfg, "kepler", "halley_token"),
        .zk = orr_config_str(cfg, "kepler", "zk"),
        .id = id,
        .default_tz = orr_config_str(cfg, "kepler", "timezone"),
        .sweep_ms = orr_config_int(cfg, "kepler", "sweep_interval"),
        .session_ms = orr_config_int(cfg, "kepler", "zk_session_timeout"),
        .horizon_ms = orr_config_int(cfg, "kepler", "materialise_horizon"),
        .default_timeout_ms = orr_config_int(cfg, "kepler", "default_timeout"),
        .weak_deadline_ms = orr_config_int(cfg, "kepler", "weak_deadline"),
        .cache_keep_ms = orr_config_int(cfg, "kepler", "cache_keep"),
    };
    orr_err err;
    const orr_tz *tz;
    if (orr_tz_load(o.default_tz, &tz, &err) != ORR_OK) {
        fprintf(stderr, "%s: run: kepler.timezone: %s\n", KEPLERD, err.msg);
        return 2;
    }
    orr_err_clear(&err);
    kp_sched_status status;
    memset(&status, 0, sizeof status);
    o.status = &status;
    orr_metrics *reg = orr_metrics_create();
    orr_metrics_add_collector(reg, keplerd_collect, &status);
    orr_metrics_server *msrv = NULL;
    const char *ml = orr_config_str(cfg, "kepler", "metrics_listen");
    if (ml && *ml) {
        if (orr_metrics_serve(reg, ml, "kepler.metrics_listen", keplerd_health, &status, &msrv,
                              &err) != ORR_OK) {
            char buf[600];
            fprintf(stderr, "%s: run: %s\n", KEPLERD, orr_err_str(&err, buf, sizeof buf));
            orr_metrics_destroy(reg);
            return err.code == ORR_EINVAL ? 2 : 1;
        }
        ORR_INFO("metrics endpoint listening", "listen=%s port=%d", ml,
                 orr_metrics_server_port(msrv));
    }
    /* The scheduler's loop looks at keplerd_stop; a thread of its own takes
     * the stop signals (blocked since orr_daemon_main) and sets it. */
    orr_daemon_stopper *stopper = NULL;
    /* Alert delivery: a thread of its own that sends while this keplerd
     * leads (status.epoch), so a slow channel never slows the scheduler. */
    char worker[300];
    snprintf(worker, sizeof worker, "kepler:%s", id);
    kp_notify_opts no = {
        .halley = o.halley,
        .token = o.token,
        .worker = worker,
        .inflight = (int)orr_config_int(cfg, "kepler", "notify_inflight"),
        .lease_ms = orr_config_int(cfg, "kepler", "notify_lease"),
        .poll_ms = orr_config_int(cfg, "kepler", "notify_poll"),
        .backoff_ms = orr_config_int(cfg, "kepler", "notify_backoff"),
        .ca_file = orr_config_str(cfg, "kepler", "notify_ca_file"),
        .console_url = orr_config_str(cfg, "kepler", "console_url"),
        .status = &status,
    };
    kp_notify *notify = NULL;
    orr_status rc = orr_daemon_stopper_start(&keplerd_stop, NULL, NULL, &stopper, &err);
    if (rc == ORR_OK && (rc = kp_notify_start(&no, &notify, &err)) == ORR_OK) {
        orr_metrics_add_collector(reg, keplerd_collect_notify, (void *)kp_notify_stats_of(notify));
        rc = kp_sched_run(&o, &keplerd_stop, &err);
    }
    orr_daemon_stopper_end(stopper);
    orr_metrics_server_stop(msrv);
    kp_notify_stop(notify); /* after the last scrape of its counters */
    orr_metrics_destroy(reg);
    if (rc != ORR_OK) {
        char buf[600];
        fprintf(stderr, "%s: run: %s\n", KEPLERD, orr_err_str(&err, buf, sizeof buf));
        return rc == ORR_EINVAL ? 2 : 1;
    }
    return 0;
}

static const orr_daemon_cmd keplerd_cmds[] = {
    {"cron-next", cmd_cron_next, 0},
    {"run", cmd_run, ORR_DAEMON_SERVES},
};

static const orr_daemon_def keplerd_daemon = {
    KEPLERD,      "kepler", keplerd_schema, sizeof(keplerd_schema) / sizeof(keplerd_schema[0]),
    keplerd_cmds, 2,        keplerd_usage,
};

int main(int argc, char **argv)
{
    int rc = orr_daemon_main(&keplerd_daemon, argc, argv);
    orr_tz_cache_clear();
    return rc;
}
