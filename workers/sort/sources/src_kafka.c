/*
 * src_kafka.c - the Kafka source (librdkafka): the partitions of one topic,
 * one record per message (its value).
 *
 * Two ways to get partitions:
 *
 *   direct (source.subscribe false, and always for `sortd replay`): every
 *     partition of the topic (from metadata at open) is assigned to this
 *     consumer (rd_kafka_assign), each from the offset committed for the
 *     stream's group, or from the earliest / latest offset when the group
 *     has none. One sortd per topic.
 *
 *   group (source.subscribe true, with the pipeline's hooks): the consumer
 *     subscribes to the topic in group source.group and the group shares the
 *     partitions among its members (eager protocol, "range,roundrobin": every
 *     rebalance revokes everything, then assigns anew; the mock cluster of
 *     librdkafka 2.0.2 and every broker support it, and a full drain per
 *     rebalance keeps the hand-over simple). The rebalance callback runs
 *     inside next() (rd_kafka_consumer_poll), on the pipeline thread:
 *       revoke: env->drain(the batch being filled, the partitions) routes
 *               the records read so far, makes them durable in every sink
 *               and commits (synchronously, through commit() below, while
 *               the partitions are still owned); then unassign. A drain
 *               failure still unassigns; the pipeline has failed and stops
 *               without committing more, and the next owner replays. When
 *               the assignment was lost (this member's session timed out:
 *               another member may own the partitions already) the drain
 *               makes nothing durable and the pipeline stops at once.
 *       assign: each partition starts from the group's committed offset
 *               (rd_kafka_committed; earliest / latest per source.start when
 *               none), env->assigned lets the sinks reload their positions,
 *               then assign.
 *     The spec parser refuses subscribe unless sinks.files is false: a
 *     unit's files must come from one process.
 *
 * Offsets: partition = Kafka partition (below SORT_MAX_PARTITIONS), hi = 0,
 * lo = message offset; next = offset + 1, which is what Kafka commits mean
 * ("the next message to read"). Commit: a synchronous offset commit for the
 * group, issued by the pipeline only after every record before it landed;
 * auto-commit and auto-store are off. In group mode a commit is skipped for
 * a partition this member does not own, or below the position its current
 * ownership began at (the committed offset at assignment, else the first
 * message read): such a position is stale and would rewind the partition
 * for its owner.
 *
 * exit_at_eof: the run ends once every owned partition has been read to its
 * end (partition-EOF events), for tests and one-off catch-ups. In group mode
 * only while an assignment is in force (not between a revoke and the next
 * assign), so a member given no partition at all ends as well.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "orr_alloc.h"
#include "orr_log.h"
#include "sort_source.h"

#define KAFKA_META_MS 10000

typedef struct src_kafka {
    sort_source base;
    const sort_spec *spec;
    rd_kafka_t *rk;
    sort_source_env env; /* rebalancing hooks (group mode) */
    int group;           /* subscribed: partitions come and go */
    int nparts;          /* partitions owned now */
    uint8_t owned[SORT_MAX_PARTITIONS];
    uint8_t at_eof[SORT_MAX_PARTITIONS];
    int neof;
    int in_force; /* group: an assignment holds (set on assign, cleared on revoke) */
    sort_off committed[SORT_MAX_PARTITIONS];
    int64_t read_next[SORT_MAX_PARTITIONS]; /* offset after the last message read; -1 none */
    int64_t floor[SORT_MAX_PARTITIONS];     /* group: where this ownership began; -1 unknown */
    sort_batch *filling;                    /* the batch next() is filling (drained on revoke) */
    int closing; /* close(): the pipeline has committed; revoke just unassigns */
    int failed;  /* the source itself cannot go on (fail_err) */
    orr_err fail_err;
    uint64_t n_assigned, n_revoked;
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
        k->closing = 1;
        rd_kafka_consumer_close(k->rk); /* group: revokes through the callback */
        rd_kafka_destroy(k->rk);
    }
    if (k->group)
        ORR_INFO("kafka consumer closed",
                 "stream=%s group=%s assigned=%" PRIu64 " revoked=%" PRIu64, k->spec->name,
                 k->spec->source.group, k->n_assigned, k->n_revoked);
    free(k);
}

/* The topic's partitions from metadata, checked against SORT_MAX_PARTITIONS:
 * a new list (caller destroys) with every partition at offset INVALID. */
static orr_status kafka__topic_parts(src_kafka *k, rd_kafka_topic_partition_list_t **out,
                                     orr_err *err)
{
    const sort_spec *sp = k->spec;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, sp->source.topic, NULL);
    orr_status rc = ORR_OK;
    rd_kafka_topic_partition_list_t *list = NULL;
    *out = NULL;
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
    *out = list;
    list = NULL;
out:
    if (list)
        rd_kafka_topic_partition_list_destroy(list);
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return rc;
}

/* Start positions of list: the group's committed offsets (k->committed and
 * the ownership floor), else earliest / latest. ORR_EUNAVAIL if the group's
 * offsets cannot be read (list then starts at INVALID: librdkafka resolves
 * committed offsets itself, floors stay unknown until the first message). */
static orr_status kafka__starts(src_kafka *k, rd_kafka_topic_partition_list_t *list, orr_err *err)
{
    const sort_spec *sp = k->spec;
    rd_kafka_resp_err_t e = rd_kafka_committed(k->rk, list, KAFKA_META_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < list->cnt; i++)
            list->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
        return orr_err_set(err, ORR_EUNAVAIL, "spec.source.group",
                           "cannot read committed offsets of group %s: %s", sp->source.group,
                           rd_kafka_err2str(e));
    }
    for (int i = 0; i < list->cnt; i++) {
        rd_kafka_topic_partition_t *tp = &list->elems[i];
        if (tp->offset >= 0) {
            k->committed[tp->partition] = (sort_off){0, (uint64_t)tp->offset};
            k->floor[tp->partition] = tp->offset;
        } else {
            tp->offset = sp->source.start_latest ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
        }
    }
    return ORR_OK;
}

/* Take the partitions of list: owned, nothing read yet, not at their end. */
static void kafka__own(src_kafka *k, const rd_kafka_topic_partition_list_t *list)
{
    for (int i = 0; i < list->cnt; i++) {
        int32_t p = list->elems[i].partition;
        if (k->owned[p])
            continue;
        k->owned[p] = 1;
        k->read_next[p] = -1;
        k->nparts++;
    }
}

static void kafka__log_assigned(const src_kafka *k, const rd_kafka_topic_partition_list_t *list)
{
    for (int i = 0; i < list->cnt; i++)
        ORR_INFO("kafka partition assigned",
                 "stream=%s topic=%s partition=%" PRId32 " offset=%" PRId64, k->spec->name,
                 k->spec->source.topic, list->elems[i].partition, list->elems[i].offset);
}

/* Assign every partition of the topic at its committed (or start) offset. */
static orr_status kafka__assign(src_kafka *k, orr_err *err)
{
    rd_kafka_topic_partition_list_t *list = NULL;
    orr_status rc = kafka__topic_parts(k, &list, err);
    if (rc == ORR_OK)
        rc = kafka__starts(k, list, err);
    if (rc == ORR_OK) {
        kafka__own(k, list);
        kafka__log_assigned(k, list);
        rd_kafka_resp_err_t e = rd_kafka_assign(k->rk, list);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
            rc = orr_err_set(err, ORR_EIO, "spec.source", "assign failed: %s", rd_kafka_err2str(e));
    }
    if (list)
        rd_kafka_topic_partition_list_destroy(list);
    return rc;
}

/* Group: partitions given to this member. */
static void kafka__on_assign(src_kafka *k, rd_kafka_topic_partition_list_t *list)
{
    uint32_t parts[SORT_MAX_PARTITIONS];
    sort_off from[SORT_MAX_PARTITIONS];
    size_t n = 0;
    orr_err err;
    orr_err_clear(&err);
    k->n_assigned++;
    for (int i = 0; i < list->cnt; i++) {
        int32_t p = list->elems[i].partition;
        if (p < 0 || p >= SORT_MAX_PARTITIONS) {
            /* Partitions added to the topic after open: cannot be tracked. */
            orr_err_set(&k->fail_err, ORR_EINVAL, "spec.source.topic",
                        "topic %s has partition %" PRId32 "; at most %d partitions are supported",
                        k->spec->source.topic, p, SORT_MAX_PARTITIONS);
            k->failed = 1;
            rd_kafka_assign(k->rk, NULL);
            return;
        }
        k->floor[p] = -1;
    }
    if (kafka__starts(k, list, &err) != ORR_OK) {
        char b[600];
        ORR_WARN("committed offsets unknown; the consumer resolves them", "stream=%s error=%s",
                 k->spec->name, orr_log_q(orr_err_str(&err, b, sizeof b)));
        orr_err_clear(&err);
    }
    for (int i = 0; i < list->cnt; i++) {
        int32_t p = list->elems[i].partition;
        parts[n] = (uint32_t)p;
        from[n] = k->floor[p] >= 0 ? (sort_off){0, (uint64_t)k->floor[p]} : SORT_OFF_UNKNOWN;
        n++;
        k->at_eof[p] = 0;
    }
    k->neof = 0;
    kafka__own(k, list);
    k->in_force = 1;
    ORR_INFO("kafka partitions assigned by the group", "stream=%s group=%s partitions=%zu",
             k->spec->name, k->spec->source.group, n);
    if (k->env.assigned && k->env.assigned(k->env.hook_ctx, parts, from, n, &err) != ORR_OK) {
        char b[600];
        ORR_ERROR("sinks could not take the partitions over", "stream=%s error=%s", k->spec->name,
                  orr_log_q(orr_err_str(&err, b, sizeof b)));
    }
    /* The sinks may hold a partition further than its committed offset. */
    for (size_t i = 0; i < n; i++) {
        uint32_t p = parts[i];
        if (sort_off_cmp(from[i], SORT_OFF_UNKNOWN) == 0 || from[i].hi != 0 ||
            from[i].lo > INT64_MAX || (k->floor[p] >= 0 && (int64_t)from[i].lo <= k->floor[p]))
            continue;
        k->floor[p] = (int64_t)from[i].lo;
        for (int j = 0; j < list->cnt; j++)
            if (list->elems[j].partition == (int32_t)p)
                list->elems[j].offset = k->floor[p];
        ORR_INFO("kafka partition starts where the sinks are",
                 "stream=%s partition=%" PRIu32 " offset=%" PRId64, k->spec->name, p, k->floor[p]);
    }
    kafka__log_assigned(k, list);
    rd_kafka_resp_err_t e = rd_kafka_assign(k->rk, list);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        orr_err_set(&k->fail_err, ORR_EIO, "spec.source", "assign failed: %s", rd_kafka_err2str(e));
        k->failed = 1;
    }
}

/* Group: partitions taken away (or membership lost): drain, then give up. */
static void kafka__on_revoke(src_kafka *k, rd_kafka_topic_partition_list_t *list)
{
    uint32_t parts[SORT_MAX_PARTITIONS];
    size_t n = 0;
    k->n_revoked++;
    for (int i = 0; i < list->cnt; i++) {
        int32_t p = list->elems[i].partition;
        if (p >= 0 && p < SORT_MAX_PARTITIONS && k->owned[p])
            parts[n++] = (uint32_t)p;
    }
    if (!k->closing && k->env.drain) {
        orr_err err;
        orr_err_clear(&err);
        int lost = rd_kafka_assignment_lost(k->rk);
        if (k->env.drain(k->env.hook_ctx, k->filling, parts, n, lost, &err) != ORR_OK) {
            char b[600];
            ORR_ERROR("drain before giving partitions up failed; nothing more is committed",
                      "stream=%s error=%s", k->spec->name,
                      orr_log_q(orr_err_str(&err, b, sizeof b)));
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t p = parts[i];
        k->owned[p] = 0;
        k->at_eof[p] = 0;
        k->read_next[p] = -1;
        k->floor[p] = -1;
    }
    k->nparts = 0;
    for (int p = 0; p < SORT_MAX_PARTITIONS; p++)
        k->nparts += k->owned[p];
    k->neof = 0;
    k->in_force = 0;
    ORR_INFO("kafka partitions revoked by the group", "stream=%s group=%s partitions=%zu",
             k->spec->name, k->spec->source.group, n);
    rd_kafka_assign(k->rk, NULL);
}

static void kafka__rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t e,
                             rd_kafka_topic_partition_list_t *list, void *opaque)
{
    (void)rk;
    src_kafka *k = opaque;
    if (e == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS && !k->closing)
        kafka__on_assign(k, list);
    else
        kafka__on_revoke(k, list); /* revoke, an error, or assign while closing */
}

static orr_status src_kafka_open(const sort_spec *spec, const sort_source_env *env,
                                 sort_source **out, orr_err *err)
{
    char num[32];
    *out = NULL;
    src_kafka *k = orr_xcalloc(1, sizeof *k);
    k->base.ops = &sort_src_kafka;
    k->spec = spec;
    k->env = *env;
    k->group = spec->source.subscribe && env->drain != NULL;
    for (int i = 0; i < SORT_MAX_PARTITIONS; i++) {
        k->read_next[i] = -1;
        k->floor[i] = -1;
    }
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
    if (rc == ORR_OK && k->group) {
        snprintf(num, sizeof num, "%" PRId64, spec->source.session_timeout_ms);
        rc = kafka__conf(conf, "session.timeout.ms", num, err);
        /* Heartbeats tell a member of a rebalance: a few per session. */
        int64_t hb = spec->source.session_timeout_ms / 6;
        snprintf(num, sizeof num, "%" PRId64, hb < 3000 ? hb : 3000);
        if (rc == ORR_OK)
            rc = kafka__conf(conf, "heartbeat.interval.ms", num, err);
        if (rc == ORR_OK)
            rc = kafka__conf(conf, "partition.assignment.strategy", "range,roundrobin", err);
        rd_kafka_conf_set_rebalance_cb(conf, kafka__rebalance);
        rd_kafka_conf_set_opaque(conf, k);
    }
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
    if (!k->group) {
        rc = kafka__assign(k, err);
    } else {
        /* The topic must exist and fit; the group hands the partitions out. */
        rd_kafka_topic_partition_list_t *list = NULL;
        rc = kafka__topic_parts(k, &list, err);
        if (list)
            rd_kafka_topic_partition_list_destroy(list);
        if (rc == ORR_OK) {
            list = rd_kafka_topic_partition_list_new(1);
            rd_kafka_topic_partition_list_add(list, spec->source.topic, RD_KAFKA_PARTITION_UA);
            rd_kafka_resp_err_t e = rd_kafka_subscribe(k->rk, list);
            rd_kafka_topic_partition_list_destroy(list);
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
                rc = orr_err_set(err, ORR_EIO, "spec.source.subscribe", "subscribe failed: %s",
                                 rd_kafka_err2str(e));
            else
                ORR_INFO("kafka group joining", "stream=%s topic=%s group=%s", spec->name,
                         spec->source.topic, spec->source.group);
        }
    }
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
    k->filling = b;
    for (int64_t i = 0; i < k->spec->source.batch && !k->failed; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(k->rk, i == 0 ? wait_ms : 0);
        if (!m)
            break;
        int32_t part = m->partition;
        int ours = part >= 0 && part < SORT_MAX_PARTITIONS && k->owned[part];
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (ours && !k->at_eof[part]) {
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
        } else if (ours && m->offset >= 0) {
            if (k->at_eof[part]) {
                k->at_eof[part] = 0;
                k->neof--;
            }
            if (k->floor[part] < 0)
                k->floor[part] = m->offset;
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
    k->filling = NULL;
    if (k->failed) {
        if (err)
            *err = k->fail_err;
        return k->fail_err.code != ORR_OK ? k->fail_err.code : ORR_EIO;
    }
    if (rc == ORR_OK && b->n == 0 && k->spec->source.exit_at_eof && k->neof == k->nparts &&
        (k->group ? k->in_force : k->nparts > 0))
        return ORR_EOF;
    return rc;
}

static orr_status src_kafka_commit(sort_source *s, uint32_t partition, sort_off next, orr_err *err)
{
    src_kafka *k = (src_kafka *)s;
    if (partition >= SORT_MAX_PARTITIONS)
        return orr_err_set(err, ORR_EINVAL, "kafka", "no partition %" PRIu32, partition);
    if (k->group && (!k->owned[partition] || k->floor[partition] < 0 ||
                     next.lo < (uint64_t)k->floor[partition])) {
        char ob[SORT_OFF_MAX];
        ORR_DEBUG("stale kafka commit skipped",
                  "stream=%s partition=%" PRIu32 " offset=%s owned=%d floor=%" PRId64,
                  k->spec->name, partition, sort_off_fmt(next, ob), k->owned[partition],
                  k->floor[partition]);
        return ORR_OK;
    }
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
    if (partition >= SORT_MAX_PARTITIONS || !k->owned[partition])
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
