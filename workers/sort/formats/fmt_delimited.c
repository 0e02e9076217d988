/* fmt_delimited.c - delimited text: one record per line, positional fields split by one byte. */
#include <string.h>

#include "sort_format.h"

static int delim_parse(const sort_spec *s, const char *rec, size_t len, sort_val *vals,
                       sort_reject_reason *why)
{
    size_t n = s->format.nfields, i = 0;
    const char *p = rec, *end = rec + len;
    char d = s->format.delimiter;
    for (;;) {
        const char *q = memchr(p, d, (size_t)(end - p));
        const char *fe = q ? q : end;
        if (i >= n) {
            *why = SORT_REJ_FIELD_COUNT;
            return -1;
        }
        vals[i].p = p;
        vals[i].len = (uint32_t)(fe - p);
        vals[i].set = 1;
        vals[i].is_num = 0;
        vals[i].escaped = 0;
        i++;
        if (!q)
            break;
        p = q + 1;
    }
    if (i != n) {
        *why = SORT_REJ_FIELD_COUNT;
        return -1;
    }
    return 0;
}

const sort_format_ops sort_fmt_delimited = {
    .name = "delimited",
    .binary = 0,
    .frame = sort_frame_lines,
    .parse = delim_parse,
};
