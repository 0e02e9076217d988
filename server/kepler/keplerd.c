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
 *
 * Common options go through orr_config_from_args(), so --config and
 * --print-config work as for every Orrery daemon.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kp_cron.h"
#include "kp_tz.h"
#include "orr_config.h"
#include "orr_log.h"

#define KEPLERD             "keplerd"
#define CRON_NEXT_MAX_COUNT 10000

static const orr_cfg_key keplerd_schema[] = {
    {"kepler", "timezone", ORR_CFG_STRING, "UTC", 0, 0, 0,
     "IANA time zone of schedules that name none (e.g. Europe/Berlin)"},
};

static void keplerd_usage(FILE *f)
{
    fprintf(f,
            "usage: %s [--config FILE] [--print-config] [--help] COMMAND [ARGS...]\n"
            "commands:\n"
            "  cron-next EXPR [--tz ZONE] [--from ISO8601] [--count N]\n"
            "      print the next N (1-%d, default 1) fire times of a cron expression\n"
            "      (Quartz 6/7 fields or Unix 5 fields) after --from (default now),\n"
            "      read in time zone ZONE (default [kepler] timezone), as UTC ISO-8601\n"
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

static int cmd_cron_next(const orr_config *cfg, int argc, char **argv)
{
    const char *expr = NULL, *zone = orr_config_str(cfg, "kepler", "timezone");
    const char *from = NULL, *count_s = NULL;
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
    if (from && kp_tz_parse_iso8601(from, &t, &err) != ORR_OK) {
        snprintf(err.field, sizeof(err.field), "from");
        return cron_next_fail(NULL, &err);
    }
    const kp_tz *tz;
    if (kp_tz_load(zone, &tz, &err) != ORR_OK)
        return cron_next_fail(NULL, &err);
    kp_cron c;
    if (kp_cron_parse_into(expr, &c, &err) != ORR_OK)
        return cron_next_fail(NULL, &err);

    char line[40];
    for (long i = 0; i < count; i++) {
        orr_status rc = kp_cron_next(&c, tz, t, &t);
        if (rc == ORR_ENOTFOUND) {
            fflush(stdout);
            fprintf(stderr, "%s: cron-next: no %sfire time before the end of %d\n", KEPLERD,
                    i ? "further " : "", KP_CRON_YEAR_MAX);
            return 1;
        }
        if (rc != ORR_OK) {
            fprintf(stderr, "%s: cron-next: %s\n", KEPLERD, orr_status_msg(rc));
            return 1;
        }
        printf("%s\n", kp_tz_format_utc(t, line, sizeof(line)));
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            keplerd_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--config") == 0)
            i++;
    }
    int argi = 0, code = 0;
    orr_config *cfg =
        orr_config_from_args(KEPLERD, argc, argv, keplerd_schema,
                             sizeof(keplerd_schema) / sizeof(keplerd_schema[0]), &argi, &code);
    if (!cfg)
        return code;
    int rc;
    if (argi < argc && strcmp(argv[argi], "cron-next") == 0) {
        rc = cmd_cron_next(cfg, argc - argi - 1, argv + argi + 1);
    } else {
        if (argi < argc)
            fprintf(stderr, "%s: unknown command \"%s\"\n", KEPLERD, argv[argi]);
        keplerd_usage(stderr);
        rc = 2;
    }
    orr_config_free(cfg);
    kp_tz_cache_clear();
    orr_log_close();
    return rc;
}
