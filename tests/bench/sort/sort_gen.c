/*
 * sort_gen.c - writes test input for sortd: delimited records of 10 fields
 * ("|"-separated, about 200 bytes), split over several files in a folder.
 *
 *   sort_gen --out DIR --records N [--files F] [--ifaces I] [--start EPOCH]
 *            [--span SECONDS] [--late PERMILLE] [--seed S]
 *
 * Record i: id=i, ts = start + i*span/N (epoch seconds; with --late, that
 * many per mille of records are stamped one hour earlier), interface
 * "if<i % I>", then 7 filler fields. Files are DIR/part-00000.log, ... in
 * name order. Ids are 0..N-1, so a reader can check count, uniqueness and
 * the sum N*(N-1)/2.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t gen_rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    uint64_t n = 0, files = 1, ifaces = 250, start = 1714521600, span = 4 * 3600, late = 0;
    uint64_t seed = 88172645463325252ULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        uint64_t x = strtoull(v, NULL, 10);
        if (strcmp(k, "--out") == 0)
            out = v;
        else if (strcmp(k, "--records") == 0)
            n = x;
        else if (strcmp(k, "--files") == 0)
            files = x ? x : 1;
        else if (strcmp(k, "--ifaces") == 0)
            ifaces = x ? x : 1;
        else if (strcmp(k, "--start") == 0)
            start = x;
        else if (strcmp(k, "--span") == 0)
            span = x ? x : 1;
        else if (strcmp(k, "--late") == 0)
            late = x;
        else if (strcmp(k, "--seed") == 0)
            seed = x ? x : 1;
        else {
            fprintf(stderr, "sort_gen: unknown option %s\n", k);
            return 2;
        }
    }
    if (!out || n == 0) {
        fprintf(stderr, "usage: sort_gen --out DIR --records N [--files F] [--ifaces I] "
                        "[--start EPOCH] [--span S] [--late PERMILLE] [--seed S]\n");
        return 2;
    }
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "sort_gen: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }
    uint64_t per_file = (n + files - 1) / files;
    FILE *f = NULL;
    static char iobuf[1 << 20];
    for (uint64_t i = 0; i < n; i++) {
        if (i % per_file == 0) {
            if (f && fclose(f) != 0)
                return 1;
            char path[4096];
            snprintf(path, sizeof path, "%s/part-%05" PRIu64 ".log", out, i / per_file);
            f = fopen(path, "w");
            if (!f) {
                fprintf(stderr, "sort_gen: cannot create %s\n", path);
                return 1;
            }
            setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
        }
        uint64_t r = gen_rng(&seed);
        uint64_t ts = start + (uint64_t)((double)i * (double)span / (double)n);
        if (late && r % 1000 < late && ts >= start + 3600)
            ts -= 3600;
        fprintf(f,
                "%" PRIu64 "|%" PRIu64 "|if%" PRIu64 "|user%08" PRIu64 "|%016" PRIx64
                "|GET|/api/v2/catalog/items/%06" PRIu64 "|200|%5" PRIu64
                "|Mozilla/5.0 (X11; Linux x86_64; compatible; orrery-sort-bench/1.0) %016" PRIx64
                "%016" PRIx64 "\n",
                i, ts, i % ifaces, r % 100000000, r, (r >> 20) % 1000000, r % 50000,
                r * 2654435761u, r ^ 0x5bd1e995);
    }
    if (f && fclose(f) != 0)
        return 1;
    return 0;
}
