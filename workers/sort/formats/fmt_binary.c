/*
 * fmt_binary.c - length-prefixed binary records with a declared schema.
 *
 * Stream framing: u32 big-endian payload length, then the payload. A length
 * of 0 or above the spec's max_record cannot be trusted: the record is
 * rejected (too_long / frame) and its declared length is skipped.
 * Payload: the spec's fields in order; u8/u16/u32/u64/i32/i64 big-endian,
 * str = u16 big-endian length + bytes. Bytes left over, or a payload that
 * ends inside a field, reject the record (syntax / frame).
 */
#include <string.h>

#include "sort_format.h"

static uint64_t bin_be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static int bin_frame(const sort_spec *s, const char *buf, size_t len, int at_eof, sort_frame *out)
{
    memset(out, 0, sizeof *out);
    if (len < 4) {
        if (at_eof && len > 0) {
            out->consumed = len;
            out->why = SORT_REJ_FRAME;
            out->rec_len = len;
            return SORT_FRAME_BAD;
        }
        return SORT_FRAME_NEED;
    }
    uint64_t n = bin_be((const unsigned char *)buf, 4);
    if (n == 0 || n > (uint64_t)s->format.max_record) {
        out->why = n == 0 ? SORT_REJ_FRAME : SORT_REJ_TOO_LONG;
        out->rec_off = 0;
        if (4 + n <= len) {
            out->consumed = 4 + (size_t)n;
        } else {
            out->consumed = len;
            out->skip = 4 + n - len;
        }
        /* keep a sample of the bad frame itself: bytes past what it consumes
         * belong to the next frame (or to the next read, which the source
         * may already have cut off) */
        out->rec_len = out->consumed < 4 + 64 ? out->consumed : 4 + 64;
        return SORT_FRAME_BAD;
    }
    if (len - 4 < n) {
        if (at_eof) {
            out->consumed = len;
            out->rec_len = len;
            out->why = SORT_REJ_FRAME;
            return SORT_FRAME_BAD;
        }
        return SORT_FRAME_NEED;
    }
    out->rec_off = 4;
    out->rec_len = (size_t)n;
    out->consumed = 4 + (size_t)n;
    return SORT_FRAME_RECORD;
}

static int bin_parse(const sort_spec *s, const char *rec, size_t len, sort_val *vals,
                     sort_reject_reason *why)
{
    const unsigned char *p = (const unsigned char *)rec, *end = p + len;
    for (size_t i = 0; i < s->format.nfields; i++) {
        sort_val *v = &vals[i];
        size_t w = 0;
        int is_signed = 0;
        switch (s->format.fields[i].type) {
        case SORT_FT_U8:
            w = 1;
            break;
        case SORT_FT_U16:
            w = 2;
            break;
        case SORT_FT_U32:
            w = 4;
            break;
        case SORT_FT_I32:
            w = 4;
            is_signed = 1;
            break;
        case SORT_FT_U64:
            w = 8;
            break;
        case SORT_FT_I64:
            w = 8;
            is_signed = 1;
            break;
        case SORT_FT_STR:
        case SORT_FT_TEXT: {
            if (end - p < 2) {
                *why = SORT_REJ_FRAME;
                return -1;
            }
            size_t sl = (size_t)bin_be(p, 2);
            p += 2;
            if ((size_t)(end - p) < sl) {
                *why = SORT_REJ_FRAME;
                return -1;
            }
            v->p = (const char *)p;
            v->len = (uint32_t)sl;
            v->set = 1;
            v->is_num = 0;
            v->escaped = 0;
            p += sl;
            continue;
        }
        }
        if ((size_t)(end - p) < w) {
            *why = SORT_REJ_FRAME;
            return -1;
        }
        uint64_t u = bin_be(p, w);
        int64_t num;
        if (is_signed && w == 4)
            num = (int64_t)(int32_t)(uint32_t)u;
        else if (w == 8 && !is_signed && u > (uint64_t)INT64_MAX)
            num = INT64_MAX; /* out of any time range: the time check rejects it */
        else
            num = (int64_t)u;
        v->p = (const char *)p;
        v->len = (uint32_t)w;
        v->set = 1;
        v->is_num = 1;
        v->escaped = 0;
        v->num = num;
        p += w;
    }
    if (p != end) {
        *why = SORT_REJ_SYNTAX;
        return -1;
    }
    return 0;
}

const sort_format_ops sort_fmt_binary = {
    .name = "binary",
    .binary = 1,
    .frame = bin_frame,
    .parse = bin_parse,
};
