/*
 * sort_format.h - record formats: one ops struct per format, one table.
 *
 * A format knows two things:
 *   frame  where the next record ends in a byte stream (the file source
 *          needs it; message sources deliver one record per message);
 *   parse  the record's fields, as views into the record's own bytes
 *          (zero-copy: nothing is allocated or copied per record).
 *
 * Formats (formats/ holds one file each):
 *   delimited  one record per line, a one-byte delimiter, positional fields
 *   kv         one record per line, "k=v&k2=v2" with configurable separators
 *   jsonl      one flat JSON object per line (nested values are skipped)
 *   binary     u32 big-endian length + payload; payload fields by a schema
 *              of big-endian integers and u16-length-prefixed strings
 *
 * After parse, sort_record_route() finds the record's interface and
 * data-time bucket. A record that fails anywhere is rejected with one
 * reason from SORT_REJECT_LIST; rejects are counted and kept (sort_reject.h)
 * and never stop the stream.
 *
 * Adding a format = one file in formats/ + one line in sort_formats[].
 */
#ifndef SORT_FORMAT_H
#define SORT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "sort_spec.h"

/* X(NAME, "label") */
#define SORT_REJECT_LIST(X)                                                                        \
    X(FRAME, "frame")                                                                              \
    X(TOO_LONG, "too_long")                                                                        \
    X(SYNTAX, "syntax")                                                                            \
    X(FIELD_COUNT, "field_count")                                                                  \
    X(NO_TIME, "missing_time")                                                                     \
    X(BAD_TIME, "bad_time")                                                                        \
    X(NO_IFACE, "missing_interface")                                                               \
    X(BAD_IFACE, "bad_interface")                                                                  \
    X(UNKNOWN_IFACE, "unknown_interface")                                                          \
    X(LATE, "late_dropped")                                                                        \
    X(DB_REFUSED, "db_refused")

typedef enum sort_reject_reason {
#define SORT__REJ_ENUM(n, s) SORT_REJ_##n,
    SORT_REJECT_LIST(SORT__REJ_ENUM)
#undef SORT__REJ_ENUM
        SORT_REJ__COUNT
} sort_reject_reason;

const char *sort_reject_name(sort_reject_reason r);

/* A field view. p/len point into the record (for jsonl strings: between the
 * quotes, still escaped when escaped is 1). Binary integers set is_num/num. */
typedef struct sort_val {
    const char *p;
    uint32_t len;
    uint8_t set;
    uint8_t is_num;
    uint8_t escaped;
    int64_t num;
} sort_val;

/* frame() results */
enum {
    SORT_FRAME_NEED = 0,   /* need more bytes */
    SORT_FRAME_RECORD = 1, /* a record */
    SORT_FRAME_BAD = -1,   /* a framing error: reject *consumed bytes (+ skip) */
};

typedef struct sort_frame {
    size_t rec_off, rec_len; /* the record body within buf */
    size_t consumed;         /* bytes of buf the frame used (terminator included) */
    uint64_t skip;           /* BAD: further bytes to skip past the end of buf */
    int skip_line;           /* BAD: skip to the next newline past the end of buf */
    sort_reject_reason why;  /* BAD: the reason */
} sort_frame;

typedef struct sort_format_ops {
    const char *name;
    int binary; /* 1: records are written length-prefixed, else one per line */
    /* Next record in buf[0..len). at_eof: no more bytes will come, so a last
     * line without a newline is a record. Never reads outside buf. */
    int (*frame)(const sort_spec *s, const char *buf, size_t len, int at_eof, sort_frame *out);
    /* Fill vals[0..s->format.nfields): every entry, except that the
     * delimited parser sets only those below s->format.parse_upto (when
     * non-zero) and leaves the rest as they were. 0 on success, -1 with
     * *why. */
    int (*parse)(const sort_spec *s, const char *rec, size_t len, sort_val *vals,
                 sort_reject_reason *why);
} sort_format_ops;

extern const sort_format_ops sort_fmt_delimited;
extern const sort_format_ops sort_fmt_kv;
extern const sort_format_ops sort_fmt_jsonl;
extern const sort_format_ops sort_fmt_binary;

/* The ops for a format name; NULL if unknown. */
const sort_format_ops *sort_format_find(const char *name);

/* Newline framing shared by the text formats. */
int sort_frame_lines(const sort_spec *s, const char *buf, size_t len, int at_eof, sort_frame *out);

/* Where a parsed record goes. iface points into the record or the spec. */
typedef struct sort_route {
    const char *iface;
    size_t iface_len;
    int64_t time_ms;
    int64_t bucket_start; /* seconds since the epoch */
} sort_route;

/* Interface and bucket of a parsed record. 0 on success, -1 with *why
 * (missing/bad time, missing/bad/unknown interface). */
int sort_record_route(const sort_spec *s, const sort_val *vals, sort_route *out,
                      sort_reject_reason *why);

#endif
