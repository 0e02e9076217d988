/*
 * sort_xadd.c - a Redis Streams producer for sortd's end-to-end benchmark:
 * reads records (one per line) from the files of a folder in name order and
 * adds each as one entry (field "r") with pipelined XADD.
 *
 *   sort_xadd --redis HOST:PORT --key KEY --in DIR [--records N]
 *             [--seconds S] [--pipeline P]
 *
 * Stops after N records (default: all lines), after S seconds (default 120)
 * or at the end of the input, whichever comes first; P commands (default
 * 1000) are sent before their replies are read. Prints one line: records
 * added, seconds, records/s. Exit status 0 on success, 1 on a Redis error.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

static double xadd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int xadd_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read the replies of n pipelined commands; -1 on an error reply. */
static int xadd_drain(redisContext *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *r = NULL;
        if (redisGetReply(c, &r) != REDIS_OK || !r) {
            fprintf(stderr, "sort_xadd: redis: %s\n", c->errstr);
            return -1;
        }
        redisReply *rep = r;
        int bad = rep->type == REDIS_REPLY_ERROR;
        if (bad)
            fprintf(stderr, "sort_xadd: XADD failed: %s\n", rep->str);
        freeReplyObject(rep);
        if (bad)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *addr = NULL, *key = NULL, *in = NULL;
    uint64_t limit = UINT64_MAX, pipeline = 1000;
    double seconds = 120;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--redis") == 0)
            addr = v;
        else if (strcmp(k, "--key") == 0)
            key = v;
        else if (strcmp(k, "--in") == 0)
            in = v;
        else if (strcmp(k, "--records") == 0)
            limit = strtoull(v, NULL, 10);
        else if (strcmp(k, "--seconds") == 0)
            seconds = strtod(v, NULL);
        else if (strcmp(k, "--pipeline") == 0)
            pipeline = strtoull(v, NULL, 10);
        else {
            fprintf(stderr, "sort_xadd: unknown option %s\n", k);
            return 2;
        }
    }
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (!colon || !key || !in || pipeline == 0 || seconds <= 0) {
        fprintf(stderr, "usage: sort_xadd --redis HOST:PORT --key KEY --in DIR [--records N] "
                        "[--seconds S] [--pipeline P]\n");
        return 2;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    redisContext *c = redisConnect(host, atoi(colon + 1));
    if (!c || c->err) {
        fprintf(stderr, "sort_xadd: cannot connect to %s: %s\n", addr, c ? c->errstr : "no memory");
        return 1;
    }
    DIR *d = opendir(in);
    if (!d) {
        perror(in);
        return 1;
    }
    char **names = NULL;
    size_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        names = realloc(names, (nn + 1) * sizeof *names);
        if (!names || !(names[nn] = strdup(de->d_name)))
            abort();
        nn++;
    }
    closedir(d);
    qsort(names, nn, sizeof *names, xadd_cmp);

    double t0 = xadd_now(), deadline = t0 + seconds;
    uint64_t added = 0, inflight = 0;
    int rc = 0, timed_out = 0;
    char *line = NULL;
    size_t cap = 0;
    for (size_t f = 0; f < nn && added < limit && !rc && !timed_out; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", in, names[f]);
        FILE *fp = fopen(path, "r");
        if (!fp) {
            perror(path);
            rc = 1;
            break;
        }
        ssize_t len;
        while (added < limit && (len = getline(&line, &cap, fp)) > 0) {
            if (line[len - 1] == '\n')
                len--;
            redisAppendCommand(c, "XADD %s * r %b", key, line, (size_t)len);
            added++;
            if (++inflight == pipeline) {
                if (xadd_drain(c, inflight) != 0) {
                    rc = 1;
                    break;
                }
                inflight = 0;
                if (xadd_now() > deadline) {
                    timed_out = 1;
                    break;
                }
            }
        }
        fclose(fp);
    }
    if (!rc && inflight && xadd_drain(c, inflight) != 0)
        rc = 1;
    double dt = xadd_now() - t0;
    printf("added %" PRIu64 " records in %.2f s: %.0f records/s%s\n", added, dt,
           dt > 0 ? (double)added / dt : 0.0, timed_out ? " (time limit)" : "");
    free(line);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    redisFree(c);
    return rc;
}
