/* fmt_delimited.c - delimited text: one record per line, positional fields split by one byte.
 *
 * The record is split in one pass: 16 bytes at a time are compared with the
 * delimiter (SSE2) and each set bit of the mask ends a field, instead of one
 * memchr call per field (fields of a few bytes made the calls cost more than
 * the scan). Only the leading fields something reads are stored
 * (format.parse_upto, sort_spec.h); past them the delimiters are only
 * counted, a byte counter per lane, since a record with the wrong number of
 * fields is still refused. vals past parse_upto are left as they were.
 * Loads stay within the record; its last bytes go byte by byte. */
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sort_format.h"

static inline void delim_store(sort_val *v, const char *p, const char *fe)
{
    v->p = p;
    v->len = (uint32_t)(fe - p);
    v->set = 1;
    v->is_num = 0;
    v->escaped = 0;
}

#if defined(__SSE2__)
/* Delimiters in [q, end) by whole 16-byte loads; *qp moves past them. The
 * per-lane counters are summed before any of them can wrap (255 loads). */
static size_t delim_count16(const char **qp, const char *end, __m128i dv)
{
    const char *q = *qp;
    size_t total = 0;
    while (end - q >= 16) {
        __m128i acc = _mm_setzero_si128();
        for (int k = 0; k < 255 && end - q >= 16; k++, q += 16)
            acc = _mm_sub_epi8(
                acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)q), dv));
        __m128i s = _mm_sad_epu8(acc, _mm_setzero_si128());
        total += (size_t)_mm_cvtsi128_si32(s) + (size_t)_mm_cvtsi128_si32(_mm_srli_si128(s, 8));
    }
    *qp = q;
    return total;
}
#endif

static int delim_parse(const sort_spec *s, const char *rec, size_t len, sort_val *vals,
                       sort_reject_reason *why)
{
    size_t n = s->format.nfields;
    size_t want = s->format.parse_upto && s->format.parse_upto < n ? s->format.parse_upto : n;
    size_t i = 0; /* delimiters seen: the index of the field being read */
    const char *p = rec, *q = rec, *end = rec + len;
    char d = s->format.delimiter;
#if defined(__SSE2__)
    const __m128i dv = _mm_set1_epi8(d);
    while (i < want && end - q >= 16) {
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)q), dv));
        for (; m && i < want; i++) {
            const char *fe = q + __builtin_ctz(m);
            m &= m - 1;
            delim_store(&vals[i], p, fe);
            p = fe + 1;
        }
        for (; m; m &= m - 1) /* this load's delimiters past the stored fields */
            i++;
        q += 16;
    }
    if (i >= want)
        i += delim_count16(&q, end, dv);
#endif
    for (; q < end; q++) {
        if (*q != d)
            continue;
        if (i < want) {
            delim_store(&vals[i], p, q);
            p = q + 1;
        }
        i++;
    }
    if (i + 1 != n) {
        *why = SORT_REJ_FIELD_COUNT; /* too many or too few */
        return -1;
    }
    if (i < want)
        delim_store(&vals[i], p, end);
    return 0;
}

const sort_format_ops sort_fmt_delimited = {
    .name = "delimited",
    .binary = 0,
    .frame = sort_frame_lines,
    .parse = delim_parse,
};
