/*
 * fmt_kv.c - key-value text: one record per line, "k=v&k2=v2" with a
 * configurable pair separator and key/value separator. Keys not in the
 * spec's field list are ignored; a key given twice keeps its first value;
 * a pair without the key/value separator makes the record a syntax reject.
 * An empty pair (as in "a=1&&b=2" or a trailing "&") is allowed.
 */
#include <string.h>

#include "sort_format.h"

static int kv_parse(const sort_spec *s, const char *rec, size_t len, sort_val *vals,
                    sort_reject_reason *why)
{
    size_t n = s->format.nfields;
    for (size_t i = 0; i < n; i++)
        vals[i].set = 0;
    const char *p = rec, *end = rec + len;
    char ps = s->format.pair_sep, ks = s->format.kv_sep;
    while (p <= end) {
        const char *q = memchr(p, ps, (size_t)(end - p));
        const char *pe = q ? q : end;
        if (pe > p) {
            const char *eq = memchr(p, ks, (size_t)(pe - p));
            if (!eq) {
                *why = SORT_REJ_SYNTAX;
                return -1;
            }
            size_t klen = (size_t)(eq - p);
            for (size_t i = 0; i < n; i++) {
                const char *name = s->format.fields[i].name;
                if (!vals[i].set && strncmp(name, p, klen) == 0 && name[klen] == 0) {
                    vals[i].p = eq + 1;
                    vals[i].len = (uint32_t)(pe - eq - 1);
                    vals[i].set = 1;
                    vals[i].is_num = 0;
                    vals[i].escaped = 0;
                    break;
                }
            }
        }
        if (!q)
            break;
        p = q + 1;
    }
    return 0;
}

const sort_format_ops sort_fmt_kv = {
    .name = "kv",
    .binary = 0,
    .frame = sort_frame_lines,
    .parse = kv_parse,
};
