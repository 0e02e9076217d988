/* test_sort_handoff_spec.c - unit tests of the hand-off sink's spec keys, the write-stage spec
 * derived from it, which write stage owns a unit, and the Redis source's commit key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "sort_spec.h"
#include "sort_unit.h"

static const char *base_spec =
    "{\"name\":\"clicks\",\"business\":\"b\","
    "\"source\":{\"type\":\"file\",\"path\":\"/data/in\"},"
    "\"format\":{\"type\":\"delimited\",\"delimiter\":\",\",\"fields\":[\"id\",\"ts\",\"if\"]},"
    "\"interface\":{\"field\":\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"
    "\"bucket\":\"hour\",\"split\":{\"hot\":4},\"sinks\":%s}";

static orr_status parse_text(const char *text, sort_spec **out, orr_err *err)
{
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    orr_err_clear(err);
    *out = NULL;
    orr_status rc = sort_spec_parse(doc, "spec", out, err);
    json_decref(doc);
    return rc;
}

static orr_status parse_sinks(const char *sinks, sort_spec **out, orr_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, base_spec, sinks);
    return parse_text(text, out, err);
}

static void refused(const char *sinks, const char *field, const char *words)
{
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(parse_sinks(sinks, &s, &err), ORR_EINVAL);
    assert_null(s);
    assert_string_equal(err.field, field);
    if (words)
        assert_non_null(strstr(err.msg, words));
}

static void test_defaults(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(parse_sinks("{\"files\":false,\"handoff\":{\"streams\":3}}", &s, &err),
                     ORR_OK);
    assert_true(s->sinks.handoff);
    assert_false(s->sinks.files);
    assert_string_equal(s->sinks.ho_key, "orrery:handoff:clicks");
    assert_null(s->sinks.ho_address);
    assert_int_equal(s->sinks.ho_streams, 3);
    assert_int_equal(s->sinks.ho_max_packs, 16384);
    assert_int_equal(s->sinks.ho_max_bytes, INT64_C(256) << 20);
    assert_int_equal(s->sinks.ho_flush_ms, 200);
    assert_int_equal(s->sinks.ho_pack_bytes, 256 << 10);
    assert_int_equal(s->stage_count, 0);
    assert_int_equal(s->sinks.ho_partition, -1);          /* the source's own */
    assert_int_equal(s->sinks.ho_codec, SORT_CODEC_AUTO); /* LZ4 where the writer reads it */
    sort_spec_free(s);
    assert_int_equal(
        parse_sinks("{\"files\":false,\"handoff\":{\"streams\":3,\"pack_codec\":\"snappy\"}}", &s,
                    &err),
        ORR_OK);
    assert_int_equal(s->sinks.ho_codec, SORT_CODEC_SNAPPY);
    sort_spec_free(s);
    assert_int_equal(
        parse_sinks("{\"files\":false,\"handoff\":{\"streams\":3,\"pack_codec\":\"lz4\"}}", &s,
                    &err),
        ORR_OK);
    assert_int_equal(s->sinks.ho_codec, SORT_CODEC_LZ4);
    sort_spec_free(s);
    assert_int_equal(
        parse_sinks("{\"files\":false,\"handoff\":{\"streams\":3,\"pack_codec\":\"auto\"}}", &s,
                    &err),
        ORR_OK);
    assert_int_equal(s->sinks.ho_codec, SORT_CODEC_AUTO);
    sort_spec_free(s);
    assert_int_equal(
        parse_sinks("{\"files\":false,\"handoff\":{\"streams\":3,\"partition\":63}}", &s, &err),
        ORR_OK);
    assert_int_equal(s->sinks.ho_partition, 63);
    sort_spec_free(s);
}

static void test_refusals(void **state)
{
    (void)state;
    refused("{\"handoff\":{\"streams\":2}}", "spec.sinks.handoff", "\"files\": false");
    refused("{\"files\":false,\"handoff\":{}}", "spec.sinks.handoff.streams", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":0}}", "spec.sinks.handoff.streams", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":65}}", "spec.sinks.handoff.streams", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"max_packs\":0}}",
            "spec.sinks.handoff.max_packs", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"max_bytes\":1048575}}",
            "spec.sinks.handoff.max_bytes", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"max_bytes\":\"1G\"}}",
            "spec.sinks.handoff.max_bytes", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"pack_size\":10}}",
            "spec.sinks.handoff.pack_size", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"bogus\":1}}", "spec.sinks.handoff.bogus",
            NULL);
    refused("{\"files\":false,\"handoff\":[]}", "spec.sinks.handoff", NULL);
    refused("{\"files\":false}", "spec.sinks", "at least one sink");
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"partition\":64}}",
            "spec.sinks.handoff.partition", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"pack_codec\":\"zstd\"}}",
            "spec.sinks.handoff.pack_codec", "one of: auto, lz4, snappy");
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"pack_codec\":\"\"}}",
            "spec.sinks.handoff.pack_codec", NULL);
    refused("{\"files\":false,\"handoff\":{\"streams\":2,\"pack_codec\":4}}",
            "spec.sinks.handoff.pack_codec", NULL);
}

static void test_write_stage(void **state)
{
    (void)state;
    sort_spec *s = NULL, *w = NULL;
    orr_err err;
    assert_int_equal(parse_sinks("{\"files\":false,\"handoff\":{\"streams\":4,\"key\":\"hk\","
                                 "\"address\":\"10.0.0.1:6380\"}}",
                                 &s, &err),
                     ORR_OK);
    assert_int_equal(sort_spec_write_stage(s, 2, &w, &err), ORR_OK);
    assert_string_equal(w->source.type, "redis");
    assert_string_equal(w->source.key, "hk.2");
    assert_string_equal(w->source.address, "10.0.0.1:6380");
    assert_string_equal(w->source.group, "sortd-write");
    assert_string_equal(w->source.consumer, "write-2");
    assert_true(w->source.packs);
    assert_true(w->sinks.files);
    assert_false(w->sinks.handoff);
    assert_false(w->sinks.pg);
    assert_int_equal(w->stage_index, 2);
    assert_int_equal(w->stage_count, 4);
    /* everything else is the parent's */
    assert_string_equal(w->name, "clicks");
    assert_int_equal(w->bucket, s->bucket);
    assert_int_equal(sort_spec_split(w, "hot", 3), 4);
    sort_spec_free(w);

    w = NULL;
    assert_int_equal(sort_spec_write_stage(s, 4, &w, &err), ORR_EINVAL);
    assert_null(w);
    assert_string_equal(err.field, "--handoff-stream");
    assert_int_equal(sort_spec_write_stage(s, -1, &w, &err), ORR_EINVAL);
    sort_spec_free(s);

    /* a spec without a hand-off has no write stages */
    assert_int_equal(parse_sinks("{\"files\":true}", &s, &err), ORR_OK);
    assert_int_equal(sort_spec_write_stage(s, 0, &w, &err), ORR_EINVAL);
    assert_string_equal(err.field, "--handoff-stream");
    sort_spec_free(s);
}

/* Every unit has exactly one owner among the stages, the owners cover every
 * stage, and the owner does not decide the writer thread inside a stage
 * (units of one stage still spread over its writers). */
static void test_owners(void **state)
{
    (void)state;
    enum { STAGES = 4, WRITERS = 4, UNITS = 4000 };
    int per_stage[STAGES] = {0};
    int writers_in_stage0[WRITERS] = {0};
    sort_spec spec;
    memset(&spec, 0, sizeof spec);
    sort_units t;
    memset(&t, 0, sizeof t);
    t.spec = &spec;
    spec.stage_count = STAGES;
    for (int u = 0; u < UNITS; u++) {
        char iface[32];
        int n = snprintf(iface, sizeof iface, "if%d", u % 250);
        uint64_t h = sort_unit_hash(iface, (size_t)n, 1714528800 + 3600 * (u / 250));
        int owners = 0;
        for (int st = 0; st < STAGES; st++) {
            spec.stage_index = st;
            if (sort_units_owns(&t, h)) {
                owners++;
                per_stage[st]++;
                if (st == 0)
                    writers_in_stage0[h % WRITERS]++;
            }
        }
        assert_int_equal(owners, 1);
    }
    for (int st = 0; st < STAGES; st++)
        assert_true(per_stage[st] > UNITS / STAGES / 2);
    for (int w = 0; w < WRITERS; w++)
        assert_true(writers_in_stage0[w] > per_stage[0] / WRITERS / 2);
    spec.stage_count = 0; /* not a write stage: owns everything */
    assert_true(sort_units_owns(&t, 12345));
}

/* The Redis source's spec.source.commit: "ack" (default) or "position",
 * the latter for one-record entries only. */
static orr_status parse_redis(const char *extra, sort_spec **out, orr_err *err)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"name\":\"r\",\"business\":\"b\",\"source\":{\"type\":\"redis\",\"key\":\"k\"%s},"
             "\"format\":{\"type\":\"delimited\",\"delimiter\":\",\",\"fields\":[\"ts\",\"if\"]},"
             "\"interface\":{\"field\":\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"
             "\"bucket\":\"hour\"}",
             extra);
    return parse_text(text, out, err);
}

static void test_redis_commit(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(parse_redis("", &s, &err), ORR_OK);
    assert_false(s->source.commit_position);
    sort_spec_free(s);
    assert_int_equal(parse_redis(",\"commit\":\"ack\"", &s, &err), ORR_OK);
    assert_false(s->source.commit_position);
    sort_spec_free(s);
    assert_int_equal(parse_redis(",\"commit\":\"position\"", &s, &err), ORR_OK);
    assert_true(s->source.commit_position);
    sort_spec_free(s);
    const char *bad[][2] = {
        {",\"commit\":\"none\"", "must be"},
        {",\"commit\":1", NULL},
        {",\"commit\":\"position\",\"packs\":true", "one-record entries"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse_redis(bad[i][0], &s, &err), ORR_EINVAL);
        assert_null(s);
        assert_string_equal(err.field, "spec.source.commit");
        if (bad[i][1])
            assert_non_null(strstr(err.msg, bad[i][1]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_write_stage),  cmocka_unit_test(test_owners),
        cmocka_unit_test(test_redis_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
