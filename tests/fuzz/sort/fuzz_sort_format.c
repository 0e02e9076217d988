/*
 * fuzz_sort_format.c - fuzz target for one sortd record format (chosen at
 * build time with FUZZ_SORT_FORMAT): frames the input as a byte stream,
 * parses and routes every record, and also parses the whole input as one
 * record. Nothing may crash, read outside the input or loop forever, and
 * every routed record must lie inside its bucket, whose label maps back to
 * it (the kv and jsonl streams use named zones with daylight saving).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sort_format.h"
#include "sort_spec.h"

#ifndef FUZZ_SORT_FORMAT
#error "FUZZ_SORT_FORMAT must name a format"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *fuzz_spec_text(void)
{
    const char *f = FUZZ_SORT_FORMAT;
    if (strcmp(f, "delimited") == 0)
        return "{\"format\":{\"type\":\"delimited\",\"delimiter\":\"|\",\"max_record\":4096,"
               "\"fields\":[\"id\",\"ts\",\"if\",\"x\"]},\"interface\":{\"field\":\"if\"},"
               "\"time\":{\"field\":\"ts\",\"format\":\"%Y-%m-%d %H:%M:%S\",\"timezone\":"
               "\"+08:00\"},\"bucket\":\"15m\"}";
    if (strcmp(f, "kv") == 0)
        return "{\"format\":{\"type\":\"kv\",\"max_record\":4096},\"interface\":{\"field\":"
               "\"if\"},\"interfaces\":[\"a\",\"b\"],\"strict_interfaces\":true,\"time\":"
               "{\"field\":\"t\",\"format\":\"%Y%m%d%H%M%S\",\"timezone\":\"Europe/Berlin\"},"
               "\"bucket\":\"hour\"}";
    if (strcmp(f, "jsonl") == 0)
        return "{\"format\":{\"type\":\"jsonl\",\"max_record\":4096},\"interface\":{\"field\":"
               "\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"iso8601\",\"timezone\":"
               "\"America/New_York\"},\"bucket\":\"day\"}";
    return "{\"format\":{\"type\":\"binary\",\"max_record\":4096,\"fields\":[{\"name\":\"id\","
           "\"type\":\"u64\"},{\"name\":\"if\",\"type\":\"str\"},{\"name\":\"ts\",\"type\":"
           "\"i64\"},{\"name\":\"n\",\"type\":\"i32\"}]},\"interface\":{\"field\":\"if\"},"
           "\"time\":{\"field\":\"ts\",\"format\":\"epoch_ms\"},\"bucket\":\"hour\"}";
}

static sort_spec *fuzz_spec(void)
{
    static sort_spec *s;
    if (s)
        return s;
    json_error_t je;
    json_t *part = json_loads(fuzz_spec_text(), 0, &je);
    json_t *doc = json_pack("{s:s,s:s,s:{s:s,s:s}}", "name", "fz", "business", "b", "source",
                            "type", "file", "path", "/nonexistent");
    json_object_update(doc, part);
    orr_err err;
    if (sort_spec_parse(doc, "spec", &s, &err) != ORR_OK)
        abort();
    json_decref(part);
    json_decref(doc);
    return s;
}

static void fuzz_record(const sort_spec *s, const sort_format_ops *f, const char *rec, size_t len,
                        sort_val *vals)
{
    sort_reject_reason why;
    sort_route r;
    if (f->parse(s, rec, len, vals, &why) != 0 || sort_record_route(s, vals, &r, &why) != 0)
        return;
    /* Bucket invariants (named zones included), for years 1900..9998. */
    const int64_t lo_ms = -2208988800000LL, hi_ms = 253370764800000LL;
    if (r.time_ms < lo_ms || r.time_ms >= hi_ms)
        return;
    char label[SORT_LABEL_MAX];
    int64_t back;
    sort_bucket_label(r.bucket_start, s->bucket, s->tz, label);
    if (r.bucket_start * 1000 > r.time_ms ||
        r.time_ms >= sort_bucket_end(r.bucket_start, s->bucket, s->tz) * 1000 ||
        sort_bucket_from_label(label, s->bucket, s->tz, &back) != 0 || back != r.bucket_start)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sort_val vals[SORT_MAX_FIELDS];
    const sort_spec *s = fuzz_spec();
    const sort_format_ops *f = sort_format_find(s->format.type);
    /* Exact-size copy: sanitizers catch any read past the end. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    for (int at_eof = 0; at_eof <= 1; at_eof++) {
        size_t pos = 0;
        while (pos < size) {
            sort_frame fr;
            int k = f->frame(s, buf + pos, size - pos, at_eof, &fr);
            if (k == SORT_FRAME_NEED)
                break;
            if (fr.consumed == 0 || fr.consumed > size - pos ||
                fr.rec_off + fr.rec_len > size - pos)
                abort(); /* a framing contract broken */
            if (k == SORT_FRAME_RECORD)
                fuzz_record(s, f, buf + pos + fr.rec_off, fr.rec_len, vals);
            pos += fr.consumed;
        }
    }
    fuzz_record(s, f, buf, size, vals);
    free(buf);
    return 0;
}
