/*
 * orr_logidx.c - the line index of a captured log (format in orr_logidx.h).
 *
 * The scan keeps three numbers between reads and looks only for newlines
 * (memchr), so its cost is that of a pass over bytes already in the cache;
 * it never holds a line, however long.
 */
#include "orr_logidx.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void orr_logidx_encode(const orr_logidx_rec *r, unsigned char out[ORR_LOGIDX_REC])
{
    uint64_t o = r->offset, m = (uint64_t)r->ms;
    for (int i = 0; i < 8; i++) {
        out[i] = (unsigned char)(o >> (8 * i));
        out[8 + i] = (unsigned char)(m >> (8 * i));
    }
}

void orr_logidx_decode(const unsigned char in[ORR_LOGIDX_REC], orr_logidx_rec *r)
{
    uint64_t o = 0, m = 0;
    for (int i = 7; i >= 0; i--) {
        o = (o << 8) | in[i];
        m = (m << 8) | in[8 + i];
    }
    r->offset = o;
    r->ms = (int64_t)m;
}

void orr_logidx_scan_init(orr_logidx_scan *s, uint64_t size, char last_byte, int64_t last_ms)
{
    s->offset = size;
    s->at_line_start = size == 0 || last_byte == '\n';
    s->last_ms = last_ms;
}

static void emit(uint64_t offset, int64_t ms, orr_buf *out)
{
    unsigned char rec[ORR_LOGIDX_REC];
    orr_logidx_encode(&(orr_logidx_rec){offset, ms}, rec);
    orr_buf_append(out, rec, sizeof rec);
}

size_t orr_logidx_feed(orr_logidx_scan *s, const void *data, size_t n, int64_t ms, orr_buf *out)
{
    if (n == 0)
        return 0;
    if (ms < s->last_ms)
        ms = s->last_ms;
    s->last_ms = ms;
    const char *p = data, *end = p + n;
    size_t count = 0;
    if (s->at_line_start) {
        emit(s->offset, ms, out);
        count++;
    }
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        p = nl + 1;
        if (p < end) {
            emit(s->offset + (uint64_t)(p - (const char *)data), ms, out);
            count++;
        }
    }
    s->at_line_start = end[-1] == '\n';
    s->offset += n;
    return count;
}

orr_status orr_logidx_find(orr_logidx_read_fn read, void *ud, uint64_t nrec, uint64_t off,
                           uint64_t *k, orr_err *err)
{
    if (nrec == 0)
        return ORR_ENOTFOUND;
    /* Invariant: rec[lo].offset <= off (checked first), rec[hi].offset > off
     * (hi = nrec: past the end). */
    uint64_t lo = 0, hi = nrec;
    orr_logidx_rec r;
    orr_status rc = read(ud, 0, 1, &r, err);
    if (rc != ORR_OK)
        return rc;
    if (r.offset > off)
        return ORR_ENOTFOUND;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((rc = read(ud, mid, 1, &r, err)) != ORR_OK)
            return rc;
        if (r.offset <= off)
            lo = mid;
        else
            hi = mid;
    }
    *k = lo;
    return ORR_OK;
}

char *orr_logidx_iso(int64_t ms, char buf[32])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, 32 - n, ".%03dZ", (int)(ms % 1000));
    return buf;
}
