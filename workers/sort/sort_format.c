/* sort_format.c - the format table, line framing and record routing (see sort_format.h). */
#include "sort_format.h"

#include <string.h>

static const char *const reject_names[] = {
#define SORT__REJ_NAME(n, s) s,
    SORT_REJECT_LIST(SORT__REJ_NAME)
#undef SORT__REJ_NAME
};

const char *sort_reject_name(sort_reject_reason r)
{
    return (unsigned)r < SORT_REJ__COUNT ? reject_names[r] : "unknown";
}

static const sort_format_ops *const sort_formats[] = {
    &sort_fmt_delimited,
    &sort_fmt_kv,
    &sort_fmt_jsonl,
    &sort_fmt_binary,
};

const sort_format_ops *sort_format_find(const char *name)
{
    for (size_t i = 0; i < sizeof sort_formats / sizeof sort_formats[0]; i++)
        if (strcmp(sort_formats[i]->name, name) == 0)
            return sort_formats[i];
    return NULL;
}

int sort_frame_lines(const sort_spec *s, const char *buf, size_t len, int at_eof, sort_frame *out)
{
    size_t max = (size_t)s->format.max_record;
    size_t look = len < max + 1 ? len : max + 1;
    const char *nl = memchr(buf, '\n', look);
    memset(out, 0, sizeof *out);
    if (!nl) {
        if (len > max) {
            /* Longer than any record may be: reject it up to its newline. */
            const char *far = memchr(buf + look, '\n', len - look);
            out->why = SORT_REJ_TOO_LONG;
            out->rec_off = 0;
            out->rec_len = max;
            if (far) {
                out->consumed = (size_t)(far - buf) + 1;
            } else {
                out->consumed = len;
                out->skip_line = !at_eof;
            }
            return SORT_FRAME_BAD;
        }
        if (!at_eof || len == 0)
            return SORT_FRAME_NEED;
        out->rec_len = len;
        out->consumed = len;
    } else {
        out->rec_len = (size_t)(nl - buf);
        out->consumed = out->rec_len + 1;
    }
    if (out->rec_len > 0 && buf[out->rec_len - 1] == '\r')
        out->rec_len--;
    return SORT_FRAME_RECORD;
}

int sort_record_route(const sort_spec *s, const sort_val *vals, sort_route *out,
                      sort_reject_reason *why)
{
    if (s->iface_const) {
        out->iface = s->iface_const;
        out->iface_len = strlen(s->iface_const);
    } else {
        const sort_val *v = &vals[s->iface_field];
        if (!v->set || v->len == 0) {
            *why = SORT_REJ_NO_IFACE;
            return -1;
        }
        if (v->escaped || !sort_name_ok(v->p, v->len)) {
            *why = SORT_REJ_BAD_IFACE;
            return -1;
        }
        if (s->strict_interfaces && sort_spec_iface_index(s, v->p, v->len) < 0) {
            *why = SORT_REJ_UNKNOWN_IFACE;
            return -1;
        }
        out->iface = v->p;
        out->iface_len = v->len;
    }
    const sort_val *t = &vals[s->time_field];
    if (!t->set || (!t->is_num && t->len == 0)) {
        *why = SORT_REJ_NO_TIME;
        return -1;
    }
    orr_status rc;
    if (t->is_num)
        rc = sort_time_from_int(t->num, s->time_fmt, &out->time_ms);
    else if (t->escaped)
        rc = ORR_EINVAL;
    else
        rc = sort_time_parse_text(t->p, t->len, s->time_fmt, s->tz, &out->time_ms);
    if (rc != ORR_OK) {
        *why = SORT_REJ_BAD_TIME;
        return -1;
    }
    out->bucket_start = sort_bucket_start(out->time_ms, s->bucket, s->tz);
    return 0;
}
