/* test_sort_parse.c - unit tests of sortd's time handling, stream specs, formats and names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sort_format.h"
#include "sort_source.h"
#include "sort_spec.h"
#include "sort_time.h"
#include "sort_unit.h"

static int64_t parse_ms(const char *s, sort_time_fmt f, int32_t tz)
{
    int64_t ms = -1;
    assert_int_equal(sort_time_parse_text(s, strlen(s), f, sort_tz_fixed(tz), &ms), ORR_OK);
    return ms;
}

static void test_time_formats(void **state)
{
    (void)state;
    assert_int_equal(parse_ms("1714557600", SORT_TF_EPOCH_S, 0), 1714557600000LL);
    assert_int_equal(parse_ms("1714557600123", SORT_TF_EPOCH_MS, 0), 1714557600123LL);
    assert_int_equal(parse_ms("2024-05-01 10:00:00", SORT_TF_YMD_HMS, 0), 1714557600000LL);
    assert_int_equal(parse_ms("20240501100000", SORT_TF_COMPACT, 0), 1714557600000LL);
    /* a wall-clock text in a +08:00 stream is 8 hours earlier in UTC */
    assert_int_equal(parse_ms("2024-05-01 18:00:00", SORT_TF_YMD_HMS, 8 * 3600), 1714557600000LL);
    assert_int_equal(parse_ms("2024-05-01T10:00:00Z", SORT_TF_ISO8601, 3600), 1714557600000LL);
    assert_int_equal(parse_ms("2024-05-01T12:00:00.250+02:00", SORT_TF_ISO8601, 0),
                     1714557600250LL);
    assert_int_equal(parse_ms("2024-05-01T05:30:00-0430", SORT_TF_ISO8601, 0), 1714557600000LL);
    assert_int_equal(parse_ms("2024-02-29 00:00:00", SORT_TF_YMD_HMS, 0), 1709164800000LL);
    int64_t ms;
    const char *bad[] = {"2023-02-29 00:00:00", "2024-13-01 00:00:00",       "2024-05-01 24:00:00",
                         "2024-05-01 10:00",    "2024-05-01T10:00:00+25:00", "12a4",
                         "2024-05-01 10:00:00x"};
    sort_time_fmt fmts[] = {SORT_TF_YMD_HMS, SORT_TF_YMD_HMS, SORT_TF_YMD_HMS, SORT_TF_YMD_HMS,
                            SORT_TF_ISO8601, SORT_TF_EPOCH_S, SORT_TF_YMD_HMS};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(
            sort_time_parse_text(bad[i], strlen(bad[i]), fmts[i], sort_tz_fixed(0), &ms),
            ORR_EINVAL);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* Epoch texts of every length against strtoll (the parse takes eight digits
 * at a time), a non-digit at every place refused; fixed-offset buckets (one
 * division in milliseconds) against the floor of the seconds. */
static void test_epoch_digits_and_fixed_buckets(void **state)
{
    (void)state;
    const int64_t lim_ms = 253402300799000LL; /* 9999-12-31 23:59:59, the bound of the parse */
    static const char notdig[] = {'/', ':', ' ', 'a', '\x80', '\x06', '\x3a', '\x2f', '\xb0'};
    static const sort_bucket_kind kinds[] = {SORT_BUCKET_15M, SORT_BUCKET_HOUR, SORT_BUCKET_DAY};
    static const int64_t sizes[] = {900, 3600, 86400};
    uint64_t seed = 88172645463325252ULL;
    for (int round = 0; round < 20000; round++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        int neg = round % 5 == 0;
        size_t len = 1 + seed % 16;
        char text[24];
        text[0] = '-';
        for (size_t i = 0; i < len; i++)
            text[(size_t)neg + i] = (char)('0' + ((seed * (i + 1) * 2654435761ULL) >> 40) % 10);
        text[(size_t)neg + len] = 0;
        long long want = strtoll(text, NULL, 10);
        int64_t ms = 0;
        orr_status rc =
            sort_time_parse_text(text, strlen(text), SORT_TF_EPOCH_MS, sort_tz_fixed(0), &ms);
        if (want > lim_ms || want < -lim_ms) {
            assert_int_equal(rc, ORR_EINVAL);
        } else {
            assert_int_equal(rc, ORR_OK);
            assert_int_equal(ms, want);
        }
        text[(size_t)neg + (seed >> 33) % len] = notdig[round % (int)sizeof notdig];
        assert_int_equal(
            sort_time_parse_text(text, strlen(text), SORT_TF_EPOCH_MS, sort_tz_fixed(0), &ms),
            ORR_EINVAL);

        int32_t off = (int32_t)((int64_t)((seed >> 20) % (26 * 60)) - 12 * 60) * 60;
        int64_t t = (int64_t)(seed % (2 * (uint64_t)lim_ms)) - lim_ms;
        int ki = round % 3;
        int64_t ref = floor_div(floor_div(t, 1000) + off, sizes[ki]) * sizes[ki] - off;
        assert_int_equal(sort_bucket_start(t, kinds[ki], sort_tz_fixed(off)), ref);
    }
    /* Any int64 (a pack carries one unchecked), with the widest offsets:
     * no overflow (UBSan), the floor of the seconds. */
    const int64_t ends[] = {INT64_MAX, INT64_MIN, INT64_MAX - 999, INT64_MIN + 1000};
    const int32_t offs[] = {14 * 3600, -14 * 3600, 0};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        for (size_t j = 0; j < sizeof offs / sizeof offs[0]; j++)
            for (int ki = 0; ki < 3; ki++)
                assert_int_equal(
                    sort_bucket_start(ends[i], kinds[ki], sort_tz_fixed(offs[j])),
                    floor_div(floor_div(ends[i], 1000) + offs[j], sizes[ki]) * sizes[ki] - offs[j]);
}

static void test_buckets_and_zones(void **state)
{
    (void)state;
    char label[SORT_LABEL_MAX];
    sort_tz tz;
    assert_int_equal(sort_tz_parse("+08:00", &tz, NULL), ORR_OK);
    assert_int_equal(tz.fixed, 8 * 3600);
    assert_null(tz.zone);
    assert_int_equal(sort_tz_parse("-0530", &tz, NULL), ORR_OK);
    assert_int_equal(tz.fixed, -(5 * 3600 + 1800));
    assert_int_equal(sort_tz_parse("+8:00", &tz, NULL), ORR_EINVAL);
    /* 2024-05-01 15:59:59.999 UTC = 23:59:59.999 at +08:00: still May 1st locally */
    int64_t t = 1714579199999LL;
    int64_t d = sort_bucket_start(t, SORT_BUCKET_DAY, sort_tz_fixed(8 * 3600));
    sort_bucket_label(d, SORT_BUCKET_DAY, sort_tz_fixed(8 * 3600), label);
    assert_string_equal(label, "20240501");
    /* one millisecond later it is May 2nd there, still May 1st in UTC */
    d = sort_bucket_start(t + 1, SORT_BUCKET_DAY, sort_tz_fixed(8 * 3600));
    sort_bucket_label(d, SORT_BUCKET_DAY, sort_tz_fixed(8 * 3600), label);
    assert_string_equal(label, "20240502");
    d = sort_bucket_start(t + 1, SORT_BUCKET_DAY, sort_tz_fixed(0));
    sort_bucket_label(d, SORT_BUCKET_DAY, sort_tz_fixed(0), label);
    assert_string_equal(label, "20240501");
    /* 15-minute and hour edges */
    int64_t q =
        sort_bucket_start(1714557600000LL + 14 * 60000 + 59999, SORT_BUCKET_15M, sort_tz_fixed(0));
    assert_int_equal(q, 1714557600);
    q = sort_bucket_start(1714557600000LL + 15 * 60000, SORT_BUCKET_15M, sort_tz_fixed(0));
    assert_int_equal(q, 1714557600 + 900);
    sort_bucket_label(q, SORT_BUCKET_15M, sort_tz_fixed(0), label);
    assert_string_equal(label, "202405011015");
    /* a half-hour zone shifts hour buckets by 30 minutes */
    int64_t h =
        sort_bucket_start(1714557600000LL, SORT_BUCKET_HOUR, sort_tz_fixed(5 * 3600 + 1800));
    assert_int_equal(h, 1714557600 - 1800);
    sort_bucket_label(h, SORT_BUCKET_HOUR, sort_tz_fixed(5 * 3600 + 1800), label);
    assert_string_equal(label, "2024050115");
    int64_t back;
    assert_int_equal(sort_bucket_from_label("2024050115", SORT_BUCKET_HOUR,
                                            sort_tz_fixed(5 * 3600 + 1800), &back),
                     0);
    assert_int_equal(back, h);
    assert_int_equal(
        sort_bucket_from_label("202405011010", SORT_BUCKET_15M, sort_tz_fixed(0), &back), -1);
    /* negative times floor, not truncate */
    assert_int_equal(sort_bucket_start(-1, SORT_BUCKET_HOUR, sort_tz_fixed(0)), -3600);
}

static const char *spec_base =
    "{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/in\"},"
    "\"format\":{\"type\":\"delimited\",\"delimiter\":\",\",\"fields\":[\"id\",\"ts\",\"if\"]},"
    "\"interface\":{\"field\":\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"
    "\"bucket\":\"hour\"%s}";

static orr_status spec_from(const char *extra, sort_spec **out, orr_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, spec_base, extra);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    orr_status rc = sort_spec_parse(doc, "spec", out, err);
    json_decref(doc);
    return rc;
}

static orr_status spec_text(const char *text, sort_spec **out, orr_err *err)
{
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    orr_status rc = sort_spec_parse(doc, "spec", out, err);
    json_decref(doc);
    return rc;
}

static void test_spec_good(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(spec_from(",\"split\":{\"hot\":4},\"check\":{\"clock\":\"data\","
                               "\"grace_ms\":0,\"late\":\"drop\"}",
                               &s, &err),
                     ORR_OK);
    assert_string_equal(s->format.type, "delimited");
    assert_int_equal(s->format.delimiter, ',');
    assert_int_equal(s->time_field, 1);
    assert_int_equal(s->iface_field, 2);
    assert_int_equal(sort_spec_split(s, "hot", 3), 4);
    assert_int_equal(sort_spec_split(s, "cold", 4), 1);
    assert_int_equal(s->check.late, SORT_LATE_DROP);
    assert_int_equal(s->check.clock, SORT_CLOCK_DATA);
    sort_spec_free(s);
}

static void test_spec_errors(void **state)
{
    (void)state;
    struct {
        const char *extra, *field;
    } cases[] = {
        {",\"bogus\":1", "spec.bogus"},
        {",\"bucket\":\"week\"", NULL}, /* duplicate key: jansson keeps the last */
        {",\"split\":{\"hot\":0}", "spec.split.hot"},
        {",\"split\":{\"../x\":2}", "spec.split.../x"},
        {",\"output\":{\"roll_size\":\"big\"}", "spec.output.roll_size"},
        {",\"check\":{\"late\":\"keep\"}", "spec.check.late"},
        {",\"check\":{\"clock\":\"moon\"}", "spec.check.clock"},
        {",\"strict_interfaces\":true", "spec.interfaces"},
        {",\"interfaces\":[\"ok\",\"a/b\"]", "spec.interfaces[1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sort_spec *s = NULL;
        orr_err err;
        orr_err_clear(&err);
        orr_status rc = spec_from(cases[i].extra, &s, &err);
        if (!cases[i].field) {
            if (rc == ORR_OK)
                sort_spec_free(s);
            continue;
        }
        assert_int_equal(rc, ORR_EINVAL);
        assert_string_equal(err.field, cases[i].field);
        assert_true(err.msg[0] != 0);
    }
    /* whole-document errors */
    struct {
        const char *text, *field;
    } docs[] = {
        {"{\"name\":\"s\"}", "spec.business"},
        {"{\"name\":\"a b\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
         "\"format\":{\"type\":\"jsonl\"},\"time\":{\"field\":\"t\",\"format\":\"epoch_s\"},"
         "\"bucket\":\"hour\",\"interface\":{\"const\":\"i\"}}",
         "spec.name"},
        {"{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"ftp\"},"
         "\"format\":{\"type\":\"jsonl\"},\"time\":{\"field\":\"t\",\"format\":\"epoch_s\"},"
         "\"bucket\":\"hour\",\"interface\":{\"const\":\"i\"}}",
         "spec.source.type"},
        {"{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
         "\"format\":{\"type\":\"delimited\",\"fields\":[\"a\"]},\"time\":{\"field\":\"zz\","
         "\"format\":\"epoch_s\"},\"bucket\":\"hour\",\"interface\":{\"const\":\"i\"}}",
         "spec.time.field"},
        {"{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
         "\"format\":{\"type\":\"delimited\",\"fields\":[\"a\"]},\"time\":{\"field\":\"a\","
         "\"format\":\"epoch_s\",\"timezone\":\"Mars/Olympus_Mons\"},\"bucket\":\"hour\","
         "\"interface\":{\"const\":\"i\"}}",
         "spec.time.timezone"},
        {"{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
         "\"format\":{\"type\":\"binary\",\"fields\":[{\"name\":\"a\",\"type\":\"f32\"}]},"
         "\"time\":{\"field\":\"a\",\"format\":\"epoch_s\"},\"bucket\":\"hour\","
         "\"interface\":{\"const\":\"i\"}}",
         "spec.format.fields[0].type"},
        {"{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
         "\"format\":{\"type\":\"binary\",\"fields\":[{\"name\":\"t\",\"type\":\"u32\"}]},"
         "\"time\":{\"field\":\"t\",\"format\":\"iso8601\"},\"bucket\":\"day\","
         "\"interface\":{\"const\":\"i\"}}",
         "spec.time.format"},
        {"{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"redis\"},"
         "\"format\":{\"type\":\"jsonl\"},\"time\":{\"field\":\"t\",\"format\":\"epoch_s\"},"
         "\"bucket\":\"hour\",\"interface\":{\"const\":\"i\"}}",
         "spec.source.key"},
        {"{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
         "\"format\":{\"type\":\"kv\",\"pair_separator\":\"&\",\"kv_separator\":\"&\"},"
         "\"time\":{\"field\":\"a\",\"format\":\"epoch_s\"},\"bucket\":\"hour\","
         "\"interface\":{\"const\":\"i\"}}",
         "spec.format.kv_separator"},
        {"{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
         "\"format\":{\"type\":\"jsonl\"},\"time\":{\"field\":\"t\",\"format\":\"epoch_s\"},"
         "\"bucket\":\"hour\",\"interface\":{\"field\":\"i\",\"const\":\"c\"}}",
         "spec.interface"},
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        sort_spec *s = NULL;
        orr_err err;
        orr_err_clear(&err);
        assert_int_equal(spec_text(docs[i].text, &s, &err), ORR_EINVAL);
        assert_string_equal(err.field, docs[i].field);
    }
}

/* Parse + route one record with a spec given as text. */
static int route_one(const char *spec_json, const char *rec, size_t len, sort_route *r,
                     sort_reject_reason *why)
{
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(spec_text(spec_json, &s, &err), ORR_OK);
    const sort_format_ops *f = sort_format_find(s->format.type);
    assert_non_null(f);
    sort_val vals[SORT_MAX_FIELDS];
    memset(vals, 0, sizeof vals);
    int rc = f->parse(s, rec, len, vals, why);
    if (rc == 0)
        rc = sort_record_route(s, vals, r, why);
    static char iface[64];
    if (rc == 0) {
        snprintf(iface, sizeof iface, "%.*s", (int)r->iface_len, r->iface);
        r->iface = iface; /* the spec (and a const name) is freed below */
    }
    sort_spec_free(s);
    return rc;
}

#define SPEC_HEAD                                                                                  \
    "{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"

static void test_format_delimited(void **state)
{
    (void)state;
    const char *spec = SPEC_HEAD "\"format\":{\"type\":\"delimited\",\"delimiter\":\"|\","
                                 "\"fields\":[\"id\",\"ts\",\"if\"]},\"interface\":{\"field\":"
                                 "\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"
                                 "\"bucket\":\"hour\"}";
    sort_route r;
    sort_reject_reason why;
    assert_int_equal(route_one(spec, "7|1714557601|login", 18, &r, &why), 0);
    assert_string_equal(r.iface, "login");
    assert_int_equal(r.bucket_start, 1714557600);
    assert_int_equal(route_one(spec, "7|1714557601", 12, &r, &why), -1);
    assert_int_equal(why, SORT_REJ_FIELD_COUNT);
    assert_int_equal(route_one(spec, "7|1714557601|a|b", 16, &r, &why), -1);
    assert_int_equal(why, SORT_REJ_FIELD_COUNT);
    assert_int_equal(route_one(spec, "7|17145x7601|login", 18, &r, &why), -1);
    assert_int_equal(why, SORT_REJ_BAD_TIME);
    assert_int_equal(route_one(spec, "7|1714557601|../etc", 19, &r, &why), -1);
    assert_int_equal(why, SORT_REJ_BAD_IFACE);
    assert_int_equal(route_one(spec, "7|1714557601|", 13, &r, &why), -1);
    assert_int_equal(why, SORT_REJ_NO_IFACE);
}

/* A delimited stream of nf fields f0..f<nf-1>, time f1, interface f2. */
static sort_spec *delimited_spec(int nf)
{
    char spec_json[4096];
    int off = snprintf(spec_json, sizeof spec_json,
                       "%s\"format\":{\"type\":\"delimited\",\"delimiter\":\"|\",\"fields\":[",
                       SPEC_HEAD);
    for (int i = 0; i < nf; i++)
        off +=
            snprintf(spec_json + off, sizeof spec_json - (size_t)off, "%s\"f%d\"", i ? "," : "", i);
    snprintf(spec_json + off, sizeof spec_json - (size_t)off,
             "]},\"interface\":{\"field\":\"f2\"},\"time\":{\"field\":\"f1\","
             "\"format\":\"epoch_s\"},\"bucket\":\"hour\"}");
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(spec_text(spec_json, &s, &err), ORR_OK);
    return s;
}

/* The one-pass splitter against a byte-wise reference: field lengths 0..40
 * put delimiters on both sides of every 16-byte step; each record sits in a
 * buffer of exactly its length, so a read past it shows under ASan. Every
 * count of stored fields is tried (parse_upto 0..NF, the spec's own is 3:
 * time f1, interface f2): the stored ones match, the others stay unset, and
 * the field count is checked either way; some records hold a field longer
 * than the 255 loads the counting lanes sum after. */
static void test_format_delimited_split(void **state)
{
    (void)state;
    enum { NF = 12 };
    sort_spec *s = delimited_spec(NF);
    const sort_format_ops *f = sort_format_find("delimited");
    assert_non_null(f);
    assert_int_equal(s->format.parse_upto, 3);
    unsigned seed = 12345;
    for (int round = 0; round < 4000; round++) {
        int nf = NF - 1 + round % 3; /* one short, exact, one over */
        size_t upto = (size_t)(round / 3) % (NF + 1);
        s->format.parse_upto = upto;
        size_t stored = upto ? upto : NF;
        size_t lens[NF + 1], len = 0;
        for (int i = 0; i < nf; i++) {
            seed = seed * 1103515245u + 12345u;
            lens[i] = (seed >> 16) % 41;
            if (round % 37 == 0 && i == (int)(seed % (unsigned)nf))
                lens[i] = 4100 + (seed >> 20) % 300;
            len += lens[i] + (i ? 1 : 0);
        }
        char *rec = malloc(len ? len : 1);
        assert_non_null(rec);
        size_t at = 0;
        for (int i = 0; i < nf; i++) {
            if (i)
                rec[at++] = '|';
            for (size_t k = 0; k < lens[i]; k++)
                rec[at++] = (char)('a' + (k + (size_t)i) % 26);
        }
        sort_val vals[SORT_MAX_FIELDS];
        memset(vals, 0, sizeof vals);
        sort_reject_reason why = SORT_REJ__COUNT;
        int rc = f->parse(s, rec, len, vals, &why);
        if (nf != NF) {
            assert_int_equal(rc, -1);
            assert_int_equal(why, SORT_REJ_FIELD_COUNT);
        } else {
            assert_int_equal(rc, 0);
            const char *p = rec;
            for (int i = 0; i < NF; i++) {
                if ((size_t)i < stored) {
                    assert_ptr_equal(vals[i].p, p);
                    assert_int_equal(vals[i].len, lens[i]);
                    assert_int_equal(vals[i].set, 1);
                } else {
                    assert_int_equal(vals[i].set, 0);
                }
                p += lens[i] + 1;
            }
        }
        free(rec);
    }
    sort_spec_free(s);
}

/* The counting lanes are bytes: each counts at most one delimiter a
 * 16-byte load, and they are summed every 255 loads. A record of NF
 * fields plus 4,096 more empty ones puts a whole run of 256 loads of
 * delimiters in the counted part; summed too late, each lane wraps to 0
 * and the record would look like NF fields. It is refused, with all
 * fields stored and with three, as are runs of every length around the
 * sums; a record as long of exactly NF fields (a long first one) is
 * accepted. */
static void test_format_delimited_count_wrap(void **state)
{
    (void)state;
    enum { NF = 40 };
    sort_spec *s = delimited_spec(NF);
    const sort_format_ops *f = sort_format_find("delimited");
    assert_non_null(f);
    static sort_val vals[SORT_MAX_FIELDS];
    for (size_t extra = 4070; extra <= 4110; extra++) {
        for (size_t upto = 0; upto <= 3; upto += 3) {
            s->format.parse_upto = upto;
            /* 'a', NF - 1 + extra delimiters, 'z' */
            size_t len = (NF - 1) + extra + 2;
            char *rec = malloc(len);
            assert_non_null(rec);
            memset(rec, '|', len);
            rec[0] = 'a';
            rec[len - 1] = 'z';
            sort_reject_reason why = SORT_REJ__COUNT;
            assert_int_equal(f->parse(s, rec, len, vals, &why), -1);
            assert_int_equal(why, SORT_REJ_FIELD_COUNT);
            /* exactly NF fields: a long first one, then NF - 1 of one byte */
            memset(rec, 'b', len);
            for (size_t d = 1; d < NF; d++)
                rec[len - 2 * d] = '|';
            why = SORT_REJ__COUNT;
            assert_int_equal(f->parse(s, rec, len, vals, &why), 0);
            assert_int_equal(vals[0].len, len - 2 * (NF - 1));
            free(rec);
        }
    }
    sort_spec_free(s);
}

static void test_format_kv(void **state)
{
    (void)state;
    const char *spec = SPEC_HEAD "\"format\":{\"type\":\"kv\",\"pair_separator\":\";\","
                                 "\"kv_separator\":\":\"},\"interface\":{\"field\":\"if\"},"
                                 "\"time\":{\"field\":\"t\",\"format\":\"%Y%m%d%H%M%S\","
                                 "\"timezone\":\"+08:00\"},\"bucket\":\"15m\"}";
    sort_route r;
    sort_reject_reason why;
    const char *rec = "x:1;if:pay;;t:20240501181600;if:second";
    assert_int_equal(route_one(spec, rec, strlen(rec), &r, &why), 0);
    assert_string_equal(r.iface, "pay"); /* the first value wins */
    assert_int_equal(r.bucket_start, 1714557600 + 900);
    rec = "if:pay;t";
    assert_int_equal(route_one(spec, rec, strlen(rec), &r, &why), -1);
    assert_int_equal(why, SORT_REJ_SYNTAX);
    rec = "if:pay;x:1";
    assert_int_equal(route_one(spec, rec, strlen(rec), &r, &why), -1);
    assert_int_equal(why, SORT_REJ_NO_TIME);
}

static void test_format_jsonl(void **state)
{
    (void)state;
    const char *spec = SPEC_HEAD "\"format\":{\"type\":\"jsonl\"},\"interface\":{\"field\":"
                                 "\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"iso8601\"},"
                                 "\"bucket\":\"day\"}";
    sort_route r;
    sort_reject_reason why;
    const char *rec = "{\"a\": [1, {\"if\": \"nested\"}], \"if\":\"web\", \"n\": -1.5e3, "
                      "\"ts\": \"2024-05-01T23:59:59Z\", \"z\": null}";
    assert_int_equal(route_one(spec, rec, strlen(rec), &r, &why), 0);
    assert_string_equal(r.iface, "web");
    assert_int_equal(r.bucket_start, 1714521600);
    const char *bad[] = {"{\"if\":\"web\",}", "{\"if\":\"web\"} x", "[1]",
                         "{\"if\":tru}",      "{\"if\":\"a\\q\"}",  "{\"if\":01}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(route_one(spec, bad[i], strlen(bad[i]), &r, &why), -1);
        assert_int_equal(why, SORT_REJ_SYNTAX);
    }
    rec = "{\"if\":\"w\\u0065b\",\"ts\":\"2024-05-01T00:00:00Z\"}";
    assert_int_equal(route_one(spec, rec, strlen(rec), &r, &why), -1);
    assert_int_equal(why, SORT_REJ_BAD_IFACE);
    rec = "{\"if\":\"web\",\"ts\":null}";
    assert_int_equal(route_one(spec, rec, strlen(rec), &r, &why), -1);
    assert_int_equal(why, SORT_REJ_NO_TIME);
}

static void test_format_binary(void **state)
{
    (void)state;
    const char *spec = SPEC_HEAD "\"format\":{\"type\":\"binary\",\"max_record\":64,\"fields\":"
                                 "[{\"name\":\"id\",\"type\":\"u32\"},{\"name\":\"if\",\"type\":"
                                 "\"str\"},{\"name\":\"ts\",\"type\":\"i64\"}]},"
                                 "\"interface\":{\"field\":\"if\"},\"time\":{\"field\":\"ts\","
                                 "\"format\":\"epoch_ms\"},\"bucket\":\"hour\"}";
    unsigned char rec[] = {0, 0, 0,    9,    0,    3,    'a',  'p', 'p',
                           0, 0, 0x01, 0x8f, 0x33, 0x2d, 0x8f, 0x00};
    int64_t ms = 1714557600000LL;
    for (int i = 0; i < 8; i++)
        rec[9 + i] = (unsigned char)(ms >> (56 - 8 * i));
    sort_route r;
    sort_reject_reason why;
    assert_int_equal(route_one(spec, (const char *)rec, sizeof rec, &r, &why), 0);
    assert_string_equal(r.iface, "app");
    assert_int_equal(r.bucket_start, 1714557600);
    assert_int_equal(route_one(spec, (const char *)rec, sizeof rec - 1, &r, &why), -1);
    assert_int_equal(why, SORT_REJ_FRAME);

    /* framing: a length prefix, an overlong frame and a truncated tail */
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(spec_text(spec, &s, &err), ORR_OK);
    unsigned char stream[] = {0, 0, 0, 2, 'h', 'i', 0, 0, 1, 0, 'x', 0, 0};
    sort_frame fr;
    assert_int_equal(sort_fmt_binary.frame(s, (const char *)stream, sizeof stream, 0, &fr),
                     SORT_FRAME_RECORD);
    assert_int_equal(fr.rec_off, 4);
    assert_int_equal(fr.rec_len, 2);
    assert_int_equal(fr.consumed, 6);
    assert_int_equal(sort_fmt_binary.frame(s, (const char *)stream + 6, 7, 0, &fr), SORT_FRAME_BAD);
    assert_int_equal(fr.why, SORT_REJ_TOO_LONG);
    assert_int_equal(fr.consumed, 7);
    assert_int_equal(fr.skip, 256 + 4 - 7);
    /* a zero length: the sample kept for the rejects file is the bad frame's
     * four bytes, never the next frame's (which may lie past the read) */
    unsigned char zero[] = {0, 0, 0, 0, 0, 0, 0, 2, 'o', 'k'};
    assert_int_equal(sort_fmt_binary.frame(s, (const char *)zero, sizeof zero, 0, &fr),
                     SORT_FRAME_BAD);
    assert_int_equal(fr.why, SORT_REJ_FRAME);
    assert_int_equal(fr.consumed, 4);
    assert_int_equal(fr.rec_len, 4);
    assert_int_equal(sort_fmt_binary.frame(s, (const char *)stream, 3, 0, &fr), SORT_FRAME_NEED);
    assert_int_equal(sort_fmt_binary.frame(s, (const char *)stream, 3, 1, &fr), SORT_FRAME_BAD);
    sort_spec_free(s);
}

static void test_line_framing(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(spec_text(SPEC_HEAD "\"format\":{\"type\":\"kv\",\"max_record\":16},"
                                         "\"interface\":{\"const\":\"c\"},\"time\":{\"field\":"
                                         "\"t\",\"format\":\"epoch_s\"},\"bucket\":\"hour\"}",
                               &s, &err),
                     ORR_OK);
    sort_frame fr;
    assert_int_equal(sort_frame_lines(s, "ab\r\ncd", 6, 0, &fr), SORT_FRAME_RECORD);
    assert_int_equal(fr.rec_len, 2);
    assert_int_equal(fr.consumed, 4);
    assert_int_equal(sort_frame_lines(s, "cd", 2, 0, &fr), SORT_FRAME_NEED);
    assert_int_equal(sort_frame_lines(s, "cd", 2, 1, &fr), SORT_FRAME_RECORD);
    assert_int_equal(fr.rec_len, 2);
    const char *lng = "0123456789abcdefXYZ\nok\n";
    assert_int_equal(sort_frame_lines(s, lng, strlen(lng), 0, &fr), SORT_FRAME_BAD);
    assert_int_equal(fr.why, SORT_REJ_TOO_LONG);
    assert_int_equal(fr.consumed, 20);
    assert_int_equal(sort_frame_lines(s, lng, 19, 0, &fr), SORT_FRAME_BAD);
    assert_int_equal(fr.skip_line, 1);
    sort_spec_free(s);
}

static void test_offsets_and_names(void **state)
{
    (void)state;
    char b[SORT_OFF_MAX], name[SORT_PART_NAME_MAX];
    sort_off o = {0, 1234}, p;
    assert_string_equal(sort_off_fmt(o, b), "1234");
    o.hi = 3;
    assert_string_equal(sort_off_fmt(o, b), "3.1234");
    assert_int_equal(sort_off_parse("3.1234", 6, &p), 0);
    assert_int_equal(sort_off_cmp(o, p), 0);
    assert_int_equal(sort_off_parse("3.", 2, &p), -1);
    assert_int_equal(sort_off_parse("0.5", 3, &p), -1); /* hi 0 is written without a dot */
    assert_int_equal(sort_off_parse("99999999999999999999", 20, &p), -1);
    sort_off a = {1, 9}, c = {2, 0};
    assert_true(sort_off_cmp(a, c) < 0);

    sort_part_info pi = {
        .partition = 0, .split = 2, .has_split = 1, .first = {1, 10}, .last = {2, 5}, .count = 77};
    sort_part_name(name, &pi);
    assert_string_equal(name, "part-0_2-1.10-2.5-n77.lzo");
    sort_part_info back;
    assert_int_equal(sort_part_parse(name, &back), 0);
    assert_int_equal(back.split, 2);
    assert_int_equal(back.has_split, 1);
    assert_int_equal(back.count, 77);
    assert_int_equal(sort_off_cmp(back.last, pi.last), 0);
    pi.has_split = 0;
    sort_part_name(name, &pi);
    assert_string_equal(name, "part-0-1.10-2.5-n77.lzo");
    const char *bad[] = {"part-0-1-2.lzo",          "part-0-5-2-n1.lzo",      "part-x-1-2-n1.lzo",
                         "part-0-1-2-n1.lzo.index", ".tmp-part-0-1-2-n1.lzo", "_CHECK",
                         "part-0_99-1-2-n1.lzo"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(sort_part_parse(bad[i], &back), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_formats),
        cmocka_unit_test(test_epoch_digits_and_fixed_buckets),
        cmocka_unit_test(test_buckets_and_zones),
        cmocka_unit_test(test_spec_good),
        cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_format_delimited),
        cmocka_unit_test(test_format_delimited_split),
        cmocka_unit_test(test_format_delimited_count_wrap),
        cmocka_unit_test(test_format_kv),
        cmocka_unit_test(test_format_jsonl),
        cmocka_unit_test(test_format_binary),
        cmocka_unit_test(test_line_framing),
        cmocka_unit_test(test_offsets_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
