/*
 * bench_cron.c - how long parsing and next-fire take for a scheduler's worth
 * of tasks: 100,000 different expressions (Quartz and Unix, plain values,
 * ranges, steps, lists, names, L, W, #, years), each parsed once and asked
 * for its next fire time in Europe/Berlin, then for 10 successive ones.
 *
 *   bench_cron [N] [ZONE]     (defaults: 100000 Europe/Berlin)
 *
 * Not a test: prints figures. Expressions come from a fixed-seed generator,
 * so runs are comparable.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_cron.h"
#include "orr_tz.h"

static uint64_t bench_rng = 0x9E3779B97F4A7C15ull;

static uint32_t bench_rand(uint32_t n)
{
    bench_rng ^= bench_rng << 13;
    bench_rng ^= bench_rng >> 7;
    bench_rng ^= bench_rng << 17;
    return (uint32_t)(bench_rng % n);
}

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The i-th expression: seconds/minutes/hours come from i so all differ. */
static void bench_expr(size_t i, char *buf, size_t n)
{
    static const char *const doms[] = {"*",   "?",  "1",    "L",   "L-3",
                                       "15W", "LW", "1,15", "*/2", "10-20"};
    static const char *const dows[] = {"?",   "*",     "MON-FRI", "6L",
                                       "5#3", "2,4,6", "SAT,SUN", "2-6/2"};
    static const char *const mons[] = {"*", "*", "*", "JAN,JUL", "3-9", "*/3", "12"};
    int sec = (int)(i % 60), min = (int)(i / 60 % 60), hour = (int)(i / 3600 % 24);
    const char *mon = mons[bench_rand(7)];
    switch (bench_rand(6)) {
    case 0: /* Unix */
        snprintf(buf, n, "%d %d-%d * %s %s", min, hour % 12, hour % 12 + 8, mon,
                 bench_rand(2) ? "*" : "1-5");
        break;
    case 1: /* Quartz with steps */
        snprintf(buf, n, "%d %d/%d %d * %s ?", sec, min % 15, 1 + (int)(i % 29), hour, mon);
        break;
    case 2: { /* Quartz on days of the week */
        const char *dw = dows[2 + bench_rand(6)];
        snprintf(buf, n, "%d %d %d ? %s %s", sec, min, hour, mon, dw);
        break;
    }
    case 3: { /* Quartz on days of the month */
        const char *dm = doms[bench_rand(10)];
        if (strcmp(dm, "?") == 0)
            dm = "*";
        snprintf(buf, n, "%d %d %d,%d %s %s ?", sec, min, hour, (hour + 12) % 24, dm, mon);
        break;
    }
    case 4: /* with years */
        snprintf(buf, n, "%d %d %d 1 * ? %d-%d", sec, min, hour, 2026 + (int)(i % 5),
                 2030 + (int)(i % 50));
        break;
    default: /* lists of minutes */
        snprintf(buf, n, "%d %d,%d,%d * * * ?", sec, min, (min + 20) % 60, (min + 40) % 60);
        break;
    }
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 100000;
    const char *zone = argc > 2 ? argv[2] : "Europe/Berlin";
    if (n == 0 || n > 10000000) {
        fprintf(stderr, "bench_cron: N must be 1-10000000\n");
        return 2;
    }
    orr_err err;
    const orr_tz *tz;
    if (orr_tz_load(zone, &tz, &err) != ORR_OK) {
        fprintf(stderr, "bench_cron: %s\n", err.msg);
        return 2;
    }
    char(*exprs)[128] = malloc(n * sizeof(*exprs));
    orr_cron *crons = malloc(n * sizeof(*crons));
    if (!exprs || !crons)
        return 1;
    for (size_t i = 0; i < n; i++)
        bench_expr(i, exprs[i], sizeof(exprs[i]));
    memset(crons, 0, n * sizeof(*crons)); /* fault the pages in before timing */

    const int64_t from = 1774742400; /* 2026-03-29T00:00:00Z, a DST day in Berlin */
    double t0 = bench_now();
    for (size_t i = 0; i < n; i++) {
        if (orr_cron_parse_into(exprs[i], &crons[i], &err) != ORR_OK) {
            fprintf(stderr, "bench_cron: \"%s\": %s: %s\n", exprs[i], err.field, err.msg);
            return 1;
        }
    }
    double t1 = bench_now();
    int64_t sum = 0;
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t next;
        if (orr_cron_next(&crons[i], tz, from, &next) == ORR_OK) {
            sum += next - from;
            found++;
        }
    }
    double t2 = bench_now();
    for (size_t i = 0; i < n; i++) {
        int64_t t = from;
        for (int k = 0; k < 10 && orr_cron_next(&crons[i], tz, t, &t) == ORR_OK; k++)
            sum += t & 1;
    }
    double t3 = bench_now();

    printf("expressions        %zu (zone %s)\n", n, zone);
    printf("parse              %.1f ms total, %.0f ns each\n", (t1 - t0) * 1e3,
           (t1 - t0) * 1e9 / (double)n);
    printf("next fire          %.1f ms total, %.0f ns each (%zu found)\n", (t2 - t1) * 1e3,
           (t2 - t1) * 1e9 / (double)n, found);
    printf("parse + next fire  %.1f ms total\n", (t2 - t0) * 1e3);
    printf("10 next fires      %.1f ms total, %.0f ns per fire time\n", (t3 - t2) * 1e3,
           (t3 - t2) * 1e9 / (double)n / 10.0);
    printf("checksum           %lld\n", (long long)sum);
    free(exprs);
    free(crons);
    return 0;
}
