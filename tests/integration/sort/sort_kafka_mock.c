/*
 * sort_kafka_mock.c - a Kafka broker for sortd's tests: librdkafka's mock
 * cluster, in this process, listening on loopback. It creates a topic, fills
 * it with the lines of the files of a folder (one message per line, spread
 * over the partitions in turn), prints "bootstrap=<host:port,...>" on stdout
 * and serves until the stop file exists or the time limit passes.
 *
 *   sort_kafka_mock --topic T --in DIR [--partitions P] [--brokers B]
 *                   --stop-file PATH [--seconds S] [--rate R]
 *
 * Without --rate every message is produced first and the line is
 * "bootstrap=<servers> messages=<count>". With --rate R (messages per
 * second) the line "bootstrap=<servers> rate=<R>" comes first and the
 * messages trickle in at that pace (for consumers that come and go while
 * data arrives); "produced=<count>" follows once all are in the topic.
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

/* rate > 0: at most rate messages per second (checked every 10 ms). */
static int km_produce_dir(rd_kafka_t *rk, const char *topic, const char *dir, int parts,
                          double rate, long *count)
{
    double t0 = km_now();
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
            while (rate > 0 && (double)*count >= (km_now() - t0) * rate) {
                rd_kafka_poll(rk, 10);
                struct timespec nap = {0, 10000000L};
                nanosleep(&nap, NULL);
            }
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
    const char *topic = NULL, *in = NULL, *stop = NULL;
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
    }
    if (!topic || !in || !stop || parts < 1 || brokers < 1) {
        fprintf(stderr, "usage: sort_kafka_mock --topic T --in DIR [--partitions P] "
                        "[--brokers B] --stop-file PATH [--seconds S] [--rate R]\n");
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
    if (rate > 0) {
        printf("bootstrap=%s rate=%g\n", rd_kafka_mock_cluster_bootstraps(mc), rate);
        fflush(stdout);
    }
    int rc = km_produce_dir(rk, topic, in, parts, rate, &count);
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
    if (rate > 0)
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
