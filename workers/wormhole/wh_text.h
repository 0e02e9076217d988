/*
 * wh_text.h - text row codecs shared by plugins: PostgreSQL COPY text,
 * delimited text (RFC 4180 CSV, or escaped like COPY text with any
 * delimiter), and fixed-width lines.
 *
 * Parsers write fields straight into a batch (wh.h) and never allocate per
 * field. The delimited parser is incremental: given the bytes available so
 * far it either takes one whole record, reports that the record is not
 * complete yet (call again with more bytes, or with eof set), or reports a
 * malformed record and how many bytes to skip. It never reads outside
 * [p, p + n).
 */
#ifndef WH_TEXT_H
#define WH_TEXT_H

#include <stddef.h>

#include "orr_buf.h"
#include "wh.h"

typedef struct wh_textfmt {
    char delim;           /* field delimiter */
    int csv;              /* 1: RFC 4180 quoting with quote; 0: backslash escapes */
    char quote;           /* CSV quote character */
    const char *null_str; /* an unquoted field equal to this is NULL (NULL: never) */
    size_t null_len;
} wh_textfmt;

/* CSV with ',' and '"', NULL = unquoted empty field. */
void wh_textfmt_csv(wh_textfmt *f, char delim);
/* Backslash-escaped text (PostgreSQL COPY text) with delim, NULL = \N. */
void wh_textfmt_escaped(wh_textfmt *f, char delim);

enum { WH_REC_MORE = 0, WH_REC_OK = 1, WH_REC_BAD = -1 };

/* Parse one record (line terminator \n or \r\n; CSV quotes may hold both)
 * from p[0..n). WH_REC_OK: the row's fields were added to b (row begun by
 * the caller, not ended) and *used is the record's length with its
 * terminator. WH_REC_MORE: incomplete, nothing added (only when !eof).
 * WH_REC_BAD: malformed, the row's fields dropped, *used bytes to skip, *why
 * says what (static). At eof the last record may lack a terminator. */
int wh_text_record(const wh_textfmt *f, const char *p, size_t n, int eof, wh_batch *b, size_t *used,
                   const char **why);

/* Parse one COPY text row (p[0..n), a trailing \n allowed) into b's current
 * row. Same as wh_text_record with wh_textfmt_escaped('\t') but faster. */
void wh_copy_parse(const char *p, size_t n, wh_batch *b);

/* Append one field escaped for COPY text (NULL -> \N). */
void wh_copy_encode(orr_buf *out, const char *p, int64_t len);
/* Append one field for f (CSV quoting when needed; escaped text otherwise). */
void wh_text_encode(const wh_textfmt *f, orr_buf *out, const char *p, int64_t len);

/* Split one fixed-width line (no terminator) into fields of the given byte
 * widths; trailing spaces are trimmed and an empty field is NULL. Returns 0,
 * or -1 with *why when the line is shorter than the first field's start. */
int wh_fixed_parse(const char *p, size_t n, const int *widths, size_t ncols, wh_batch *b,
                   const char **why);

/* SQL identifiers: name quoted with q (PostgreSQL '"', MySQL '`'), a q
 * inside doubled; _qualified splits "schema.table" at its first dot and
 * quotes each part. */
void wh_quote_ident(orr_buf *out, const char *name, char q);
void wh_quote_qualified(orr_buf *out, const char *name, char q);

#endif
