/* sort_preroute.c - the route of a record a parse stage routed (see sort_preroute.h). */
#include "sort_preroute.h"

#include <string.h>

#include "sort_time.h"

int sort_preroute_key(const char *key, size_t len, size_t *iface_len, int64_t *bucket)
{
    const char *at = NULL;
    for (size_t i = len; i > 0; i--)
        if (key[i - 1] == '@') {
            at = key + i - 1;
            break;
        }
    if (!at || at == key)
        return -1;
    const char *p = at + 1, *end = key + len;
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p == end || end - p > 18)
        return -1;
    int64_t v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    *iface_len = (size_t)(at - key);
    *bucket = neg ? -v : v;
    return 0;
}

int sort_preroute(const sort_spec *s, const char *iface, size_t len, int64_t bucket,
                  int64_t time_ms, sort_route *out)
{
    if (s->iface_const) {
        size_t cl = strlen(s->iface_const);
        if (cl != len || memcmp(s->iface_const, iface, len) != 0)
            return -1;
        out->iface = s->iface_const;
    } else {
        if (len == 0 || !sort_name_ok(iface, len))
            return -1;
        if (s->strict_interfaces && sort_spec_iface_index(s, iface, len) < 0)
            return -1;
        out->iface = iface;
    }
    if (sort_bucket_start(time_ms, s->bucket, s->tz) != bucket)
        return -1;
    out->iface_len = len;
    out->time_ms = time_ms;
    out->bucket_start = bucket;
    return 0;
}
