/* fmt_delimited.c - delimited text: one record per line, positional fields split by one byte.
 *
 * The record is split in one pass: 16 bytes at a time are compared with the
 * delimiter (SSE2) and each set bit of the mask ends a field, instead of one
 * memchr call per field (fields of a few bytes made the calls cost more than
 * the scan). Loads stay within the record; its last bytes go byte by byte. */
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sort_format.h"

/* Field i is [p, fe): store it. 0, or -1 when there are more fields than n. */
static inline int delim_field(sort_val *vals, size_t n, size_t *i, const char *p, const char *fe)
{
    if (*i >= n)
        return -1;
    sort_val *v = &vals[(*i)++];
    v->p = p;
    v->len = (uint32_t)(fe - p);
    v->set = 1;
    v->is_num = 0;
    v->escaped = 0;
    return 0;
}

static int delim_parse(const sort_spec *s, const char *rec, size_t len, sort_val *vals,
                       sort_reject_reason *why)
{
    size_t n = s->format.nfields, i = 0;
    const char *p = rec, *q = rec, *end = rec + len;
    char d = s->format.delimiter;
#if defined(__SSE2__)
    const __m128i dv = _mm_set1_epi8(d);
    for (; end - q >= 16; q += 16) {
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)q), dv));
        while (m) {
            const char *fe = q + __builtin_ctz(m);
            m &= m - 1;
            if (delim_field(vals, n, &i, p, fe) != 0)
                goto too_many;
            p = fe + 1;
        }
    }
#endif
    for (; q < end; q++) {
        if (*q != d)
            continue;
        if (delim_field(vals, n, &i, p, q) != 0)
            goto too_many;
        p = q + 1;
    }
    if (delim_field(vals, n, &i, p, end) != 0 || i != n)
        goto too_many;
    return 0;
too_many:
    *why = SORT_REJ_FIELD_COUNT;
    return -1;
}

const sort_format_ops sort_fmt_delimited = {
    .name = "delimited",
    .binary = 0,
    .frame = sort_frame_lines,
    .parse = delim_parse,
};
