/*
 * src_kafka.c - the Kafka source (librdkafka): every partition of one topic,
 * one record per message (its value).
 *
 * Assignment: the topic's partitions (from metadata at open) are assigned
 * to this consumer directly (rd_kafka_assign), each from the offset
 * committed for the stream's group, or from the earliest / latest offset
 * when the group has none. Several sortd on one topic must each be given a
 * stream of their own for now (group rebalancing is not used: it would hand
 * a partition to another consumer while this one still holds unlanded
 * records).
 *
 * Offsets: partition = Kafka partition (below SORT_MAX_PARTITIONS), hi = 0,
 * lo = message offset; next = offset + 1, which is what Kafka commits mean
 * ("the next message to read"). Commit: a synchronous offset commit for the
 * group, issued by the pipeline only after every record before it landed;
 * auto-commit and auto-store are off.
 *
 * exit_at_eof: the run ends once every partition has been read to its end
 * (partition-EOF events), for tests and one-off catch-ups.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "orr_log.h"
#include "sort_source.h"

#define KAFKA_META_MS 10000

typedef struct src_kafka {
    sort_source base;
    const sort_spec *spec;
    rd_kafka_t *rk;
    int nparts;
    uint8_t at_eof[SORT_MAX_PARTITIONS];
    int neof;
    sort_off committed[SORT_MAX_PARTITIONS];
    int64_t read_next[SORT_MAX_PARTITIONS]; /* offset after the last message read; -1 none */
} src_kafka;

static orr_status kafka__conf(rd_kafka_conf_t *conf, const char *key, const char *val, orr_err *err)
{
    char msg[512];
    if (rd_kafka_conf_set(conf, key, val, msg, sizeof msg) != RD_KAFKA_CONF_OK)
        return orr_err_set(err, ORR_EINVAL, "spec.source", "kafka setting %s: %s", key, msg);
    return ORR_OK;
}

static void src_kafka_close(sort_source *s)
{
    src_kafka *k = (src_kafka *)s;
    if (k->rk) {
        rd_kafka_consumer_close(k->rk);
        rd_kafka_destroy(k->rk);
    }
    free(k);
}

/* Assign every partition of the topic at its committed (or start) offset. */
static orr_status kafka__assign(src_kafka *k, orr_err *err)
{
    const sort_spec *sp = k->spec;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, sp->source.topic, NULL);
    orr_status rc = ORR_OK;
    rd_kafka_topic_partition_list_t *list = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(k->rk, 0, rkt, &md, KAFKA_META_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR || md->topic_cnt != 1) {
        rc = orr_err_set(err, ORR_EUNAVAIL, "spec.source.brokers", "no metadata for topic %s: %s",
                         sp->source.topic, rd_kafka_err2str(e));
        goto out;
    }
    const struct rd_kafka_metadata_topic *t = &md->topics[0];
    if (t->err != RD_KAFKA_RESP_ERR_NO_ERROR || t->partition_cnt == 0) {
        rc = orr_err_set(err, ORR_EUNAVAIL, "spec.source.topic", "topic %s: %s", sp->source.topic,
                         t->err ? rd_kafka_err2str(t->err) : "no partitions");
        goto out;
    }
    list = rd_kafka_topic_partition_list_new(t->partition_cnt);
    for (int i = 0; i < t->partition_cnt; i++) {
        int32_t id = t->partitions[i].id;
        if (id < 0 || id >= SORT_MAX_PARTITIONS) {
            rc = orr_err_set(err, ORR_EINVAL, "spec.source.topic",
                             "topic %s has partition %" PRId32 "; at most %d partitions "
                             "are supported",
                             sp->source.topic, id, SORT_MAX_PARTITIONS);
            goto out;
        }
        rd_kafka_topic_partition_list_add(list, sp->source.topic, id);
    }
    e = rd_kafka_committed(k->rk, list, KAFKA_META_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rc = orr_err_set(err, ORR_EUNAVAIL, "spec.source.group",
                         "cannot read committed offsets of group %s: %s", sp->source.group,
                         rd_kafka_err2str(e));
        goto out;
    }
    for (int i = 0; i < list->cnt; i++) {
        rd_kafka_topic_partition_t *tp = &list->elems[i];
        if (tp->offset >= 0) {
            k->committed[tp->partition] = (sort_off){0, (uint64_t)tp->offset};
        } else {
            tp->offset = sp->source.start_latest ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
        }
        ORR_INFO("kafka partition assigned",
                 "stream=%s topic=%s partition=%" PRId32 " offset=%" PRId64, sp->name,
                 sp->source.topic, tp->partition, tp->offset);
    }
    k->nparts = list->cnt;
    e = rd_kafka_assign(k->rk, list);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        rc = orr_err_set(err, ORR_EIO, "spec.source", "assign failed: %s", rd_kafka_err2str(e));
out:
    if (list)
        rd_kafka_topic_partition_list_destroy(list);
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return rc;
}

static orr_status src_kafka_open(const sort_spec *spec, const sort_source_env *env,
                                 sort_source **out, orr_err *err)
{
    (void)env;
    *out = NULL;
    src_kafka *k = calloc(1, sizeof *k);
    if (!k)
        abort();
    k->base.ops = &sort_src_kafka;
    k->spec = spec;
    for (int i = 0; i < SORT_MAX_PARTITIONS; i++)
        k->read_next[i] = -1;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    orr_status rc = kafka__conf(conf, "bootstrap.servers", spec->source.brokers, err);
    if (rc == ORR_OK)
        rc = kafka__conf(conf, "group.id", spec->source.group, err);
    if (rc == ORR_OK)
        rc = kafka__conf(conf, "client.id", "sortd", err);
    if (rc == ORR_OK)
        rc = kafka__conf(conf, "enable.auto.commit", "false", err);
    if (rc == ORR_OK)
        rc = kafka__conf(conf, "enable.auto.offset.store", "false", err);
    if (rc == ORR_OK)
        rc = kafka__conf(conf, "enable.partition.eof", spec->source.exit_at_eof ? "true" : "false",
                         err);
    if (rc == ORR_OK)
        rc = kafka__conf(conf, "auto.offset.reset",
                         spec->source.start_latest ? "latest" : "earliest", err);
    if (rc != ORR_OK) {
        rd_kafka_conf_destroy(conf);
        free(k);
        return rc;
    }
    char msg[512];
    k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, msg, sizeof msg);
    if (!k->rk) {
        rd_kafka_conf_destroy(conf);
        free(k);
        return orr_err_set(err, ORR_EIO, "spec.source", "cannot create kafka consumer: %s", msg);
    }
    rd_kafka_poll_set_consumer(k->rk);
    rc = kafka__assign(k, err);
    if (rc != ORR_OK) {
        src_kafka_close(&k->base);
        return rc;
    }
    *out = &k->base;
    return ORR_OK;
}

static orr_status src_kafka_next(sort_source *s, sort_batch *b, int wait_ms, orr_err *err)
{
    src_kafka *k = (src_kafka *)s;
    orr_status rc = ORR_OK;
    for (int64_t i = 0; i < k->spec->source.batch; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(k->rk, i == 0 ? wait_ms : 0);
        if (!m)
            break;
        int32_t part = m->partition;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (part >= 0 && part < SORT_MAX_PARTITIONS && !k->at_eof[part]) {
                k->at_eof[part] = 1;
                k->neof++;
                ORR_DEBUG("kafka partition at its end",
                          "stream=%s partition=%" PRId32 " offset=%" PRId64, k->spec->name, part,
                          m->offset);
            }
        } else if (m->err) {
            rc = orr_err_set(err, ORR_EUNAVAIL, "kafka", "consume failed: %s",
                             rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            break;
        } else if (part >= 0 && part < SORT_MAX_PARTITIONS && m->offset >= 0) {
            if (k->at_eof[part]) {
                k->at_eof[part] = 0;
                k->neof--;
            }
            k->read_next[part] = m->offset + 1;
            sort_entry en = {.off = {0, (uint64_t)m->offset},
                             .next = {0, (uint64_t)m->offset + 1},
                             .partition = (uint32_t)part,
                             .why = -1,
                             .len = (uint32_t)m->len};
            sort_batch_add(b, &en, m->payload ? (const char *)m->payload : "");
        }
        rd_kafka_message_destroy(m);
    }
    if (rc == ORR_OK && b->n == 0 && k->spec->source.exit_at_eof && k->nparts > 0 &&
        k->neof == k->nparts)
        return ORR_EOF;
    return rc;
}

static orr_status src_kafka_commit(sort_source *s, uint32_t partition, sort_off next, orr_err *err)
{
    src_kafka *k = (src_kafka *)s;
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, k->spec->source.topic, (int32_t)partition)->offset =
        (int64_t)next.lo;
    rd_kafka_resp_err_t e = rd_kafka_commit(k->rk, list, 0);
    rd_kafka_topic_partition_list_destroy(list);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return orr_err_set(err, ORR_EIO, "kafka",
                           "offset commit of partition %" PRIu32 " failed: %s", partition,
                           rd_kafka_err2str(e));
    k->committed[partition] = next;
    return ORR_OK;
}

static sort_off src_kafka_committed(sort_source *s, uint32_t partition)
{
    src_kafka *k = (src_kafka *)s;
    return partition < SORT_MAX_PARTITIONS ? k->committed[partition] : (sort_off){0, 0};
}

static int src_kafka_lag(sort_source *s, uint32_t partition, uint64_t *out)
{
    src_kafka *k = (src_kafka *)s;
    if (partition >= (uint32_t)k->nparts || partition >= SORT_MAX_PARTITIONS)
        return 0;
    int64_t lo = -1, hi = -1;
    if (rd_kafka_get_watermark_offsets(k->rk, k->spec->source.topic, (int32_t)partition, &lo,
                                       &hi) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        hi < 0)
        return 0;
    int64_t pos = k->read_next[partition] >= 0 ? k->read_next[partition]
                                               : (int64_t)k->committed[partition].lo;
    *out = hi > pos ? (uint64_t)(hi - pos) : 0;
    return 1;
}

int sort_src_kafka_partitions(sort_source *s)
{
    return ((src_kafka *)s)->nparts;
}

const sort_source_ops sort_src_kafka = {
    .name = "kafka",
    .open = src_kafka_open,
    .next = src_kafka_next,
    .commit = src_kafka_commit,
    .committed = src_kafka_committed,
    .lag = src_kafka_lag,
    .close = src_kafka_close,
};
