/*
 * sort_kafka_mock.c - a Kafka broker for sortd's tests: librdkafka's mock
 * cluster, in this process, listening on loopback. It creates a topic, fills
 * it with the lines of the files of a folder (one message per line, spread
 * over the partitions in turn), prints "bootstrap=<host:port,...>" on stdout
 * and serves until the stop file exists or the time limit passes.
 *
 *   sort_kafka_mock --topic T --in DIR [--partitions P] [--brokers B]
 *                   --stop-file PATH [--seconds S] [--rate R] [--hold-file H]
 *
 * Without --rate and --hold-file every message is produced first and the
 * line is "bootstrap=<servers> messages=<count>". Otherwise the line
 * "bootstrap=<servers> rate=<R> hold=<H>" comes first and the messages are
 * produced as they are let through: with --rate R at most R per second;
 * with --hold-file H only while fewer than the number written in H have
 * been produced (a missing file counts as 0; the test raises the number to
 * let more through, writing the file atomically; it is read again every
 * 10 ms while it holds the producer back). The rate counts from the last
 * time the hold let messages through, so they trickle after a hold too.
 * "produced=<count>" follows once all are in the topic. The stop file and
 * the time limit also end a producer that is held back.
 *
 * Exit status 0 after a clean stop, 1 if the cluster or the produce failed.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static int km_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static double km_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What lets messages through: a rate, a hold file; and when to give up. */
typedef struct km_pace {
    double rate;      /* > 0: at most rate messages per second */
    const char *hold; /* non-NULL: only while count < the number in this file */
    const char *stop; /* give up once this file exists */
    double deadline;  /* or at this km_now() */
} km_pace;

/* The number in the hold file; 0 if it is missing or holds no number. */
static long km_hold_limit(const char *path)
{
    FILE *f = fopen(path, "r");
    long n = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &n) != 1)
        n = 0;
    fclose(f);
    return n;
}

/* Wait until message number count may be produced (see km_pace). 0 when it
 * may, 1 when the stop file or the time limit ended the wait. *t0 is where
 * the rate counts from; *limit the hold file's number as last read. */
static int km_wait_turn(rd_kafka_t *rk, const km_pace *pace, long count, double *t0, long *limit)
{
    int held = 0;
    for (;;) {
        if (pace->hold && count >= *limit)
            *limit = km_hold_limit(pace->hold);
        if (pace->hold && count >= *limit) {
            held = 1;
        } else {
            if (held && pace->rate > 0) /* let through again: trickle on, no burst */
                *t0 = km_now() - (double)count / pace->rate;
            held = 0;
            if (pace->rate <= 0 || (double)count < (km_now() - *t0) * pace->rate)
                return 0;
        }
        if (access(pace->stop, F_OK) == 0 || km_now() > pace->deadline)
            return 1;
        rd_kafka_poll(rk, 0);
        struct timespec nap = {0, 10000000L};
        nanosleep(&nap, NULL);
    }
}

/* Produce every line of the files of dir, paced. 0 when all are produced,
 * 1 when stopped first (stop file, time limit), -1 on a failure. */
static int km_produce_dir(rd_kafka_t *rk, const char *topic, const char *dir, int parts,
                          const km_pace *pace, long *count)
{
    double t0 = km_now();
    long limit = 0;
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
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
    qsort(names, nn, sizeof *names, km_cmp);
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0; i < nn && rc == 0; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "r");
        if (!f) {
            perror(path);
            rc = -1;
            break;
        }
        ssize_t len;
        while (rc == 0 && (len = getline(&line, &cap, f)) > 0) {
            if (line[len - 1] == '\n')
                len--;
            if ((rc = km_wait_turn(rk, pace, *count, &t0, &limit)) != 0)
                break;
            for (int tries = 0;; tries++) {
                rd_kafka_resp_err_t e = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION((int32_t)(*count % parts)),
                    RD_KAFKA_V_VALUE(line, (size_t)len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                    RD_KAFKA_V_END);
                if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                    break;
                if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || tries > 1000) {
                    fprintf(stderr, "sort_kafka_mock: produce: %s\n", rd_kafka_err2str(e));
                    rc = -1;
                    break;
                }
                rd_kafka_poll(rk, 50);
            }
            (*count)++;
        }
        fclose(f);
    }
    free(line);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    return rc;
}

static int km_failed;

static void km_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err)
        km_failed = 1;
}

int main(int argc, char **argv)
{
    const char *topic = NULL, *in = NULL, *stop = NULL, *hold = NULL;
    int parts = 3, brokers = 1;
    double seconds = 600, rate = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--topic") == 0)
            topic = argv[i + 1];
        else if (strcmp(argv[i], "--in") == 0)
            in = argv[i + 1];
        else if (strcmp(argv[i], "--partitions") == 0)
            parts = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--brokers") == 0)
            brokers = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--stop-file") == 0)
            stop = argv[i + 1];
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--rate") == 0)
            rate = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--hold-file") == 0)
            hold = argv[i + 1];
    }
    if (!topic || !in || !stop || parts < 1 || brokers < 1) {
        fprintf(stderr, "usage: sort_kafka_mock --topic T --in DIR [--partitions P] "
                        "[--brokers B] --stop-file PATH [--seconds S] [--rate R] "
                        "[--hold-file H]\n");
        return 2;
    }
    char msg[512], nb[16];
    snprintf(nb, sizeof nb, "%d", brokers);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "test.mock.num.brokers", nb, msg, sizeof msg) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "linger.ms", "5", msg, sizeof msg) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "sort_kafka_mock: %s\n", msg);
        return 1;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, km_dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, msg, sizeof msg);
    if (!rk) {
        fprintf(stderr, "sort_kafka_mock: %s\n", msg);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_handle_mock_cluster(rk);
    if (!mc || rd_kafka_mock_topic_create(mc, topic, parts, 1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "sort_kafka_mock: cannot create the mock cluster or topic\n");
        rd_kafka_destroy(rk);
        return 1;
    }
    long count = 0;
    int paced = rate > 0 || hold;
    if (paced) {
        printf("bootstrap=%s rate=%g hold=%s\n", rd_kafka_mock_cluster_bootstraps(mc), rate,
               hold ? hold : "none");
        fflush(stdout);
    }
    km_pace pace = {rate, hold, stop, km_now() + seconds};
    int rc = km_produce_dir(rk, topic, in, parts, &pace, &count);
    if (rc == 1) {
        fprintf(stderr, "sort_kafka_mock: stopped after producing %ld messages\n", count);
        rd_kafka_destroy(rk);
        return 0;
    }
    if (rc == 0 && rd_kafka_flush(rk, 60000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        rc = -1;
    if (rc != 0 || km_failed) {
        fprintf(stderr, "sort_kafka_mock: producing failed\n");
        rd_kafka_destroy(rk);
        return 1;
    }
    /* The mock cluster keeps a few log segments per partition (about 1 MB
     * each) and drops older ones: every message must still be there. */
    long held = 0;
    for (int p = 0; p < parts; p++) {
        int64_t lo = -1, hi = -1;
        rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 10000);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR || lo != 0) {
            fprintf(stderr,
                    "sort_kafka_mock: partition %d holds offsets %lld..%lld (%s): "
                    "use more partitions or fewer records\n",
                    p, (long long)lo, (long long)hi, rd_kafka_err2str(e));
            rd_kafka_destroy(rk);
            return 1;
        }
        held += (long)hi;
    }
    if (paced)
        printf("produced=%ld\n", held);
    else
        printf("bootstrap=%s messages=%ld\n", rd_kafka_mock_cluster_bootstraps(mc), held);
    fflush(stdout);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (access(stop, F_OK) == 0)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - t0.tv_sec) > seconds) {
            fprintf(stderr, "sort_kafka_mock: time limit reached\n");
            break;
        }
        rd_kafka_poll(rk, 100);
    }
    rd_kafka_destroy(rk);
    return 0;
}
