/*
 * wh_text.c - COPY text, delimited and fixed-width row codecs (see wh_text.h).
 *
 * The hot paths (COPY text parse and encode) work on runs: memchr finds the
 * next delimiter, a second memchr decides whether the field holds any
 * backslash at all, and a field without one is copied in one piece.
 */
#include "wh_text.h"

#include <stdio.h>
#include <string.h>

void wh_textfmt_csv(wh_textfmt *f, char delim)
{
    f->delim = delim;
    f->csv = 1;
    f->quote = '"';
    f->null_str = "";
    f->null_len = 0;
}

void wh_textfmt_escaped(wh_textfmt *f, char delim)
{
    f->delim = delim;
    f->csv = 0;
    f->quote = 0;
    f->null_str = "\\N";
    f->null_len = 2;
}

static int wh_is_null(const wh_textfmt *f, const char *p, size_t n)
{
    return f->null_str && n == f->null_len && memcmp(p, f->null_str, n) == 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Unescape p[0..n) (which holds at least one backslash) into b's open field. */
static void wh_unescape(const char *p, size_t n, wh_batch *b)
{
    size_t i = 0;
    char *out = wh_batch_reserve(b, n);
    size_t o = 0;
    while (i < n) {
        char c = p[i++];
        if (c != '\\' || i == n) {
            out[o++] = c;
            continue;
        }
        c = p[i++];
        switch (c) {
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'n':
            out[o++] = '\n';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'v':
            out[o++] = '\v';
            break;
        case 'x': {
            int v = i < n ? hexval(p[i]) : -1;
            if (v < 0) {
                out[o++] = 'x';
                break;
            }
            i++;
            int w = i < n ? hexval(p[i]) : -1;
            if (w >= 0) {
                v = v * 16 + w;
                i++;
            }
            out[o++] = (char)v;
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                int v = c - '0';
                for (int k = 0; k < 2 && i < n && p[i] >= '0' && p[i] <= '7'; k++)
                    v = v * 8 + (p[i++] - '0');
                out[o++] = (char)(v & 0xFF);
            } else {
                out[o++] = c;
            }
        }
    }
    wh_batch_commit(b, o);
}

/* Fields of one escaped-text line (no terminator). */
static void wh_escaped_fields(const wh_textfmt *f, const char *p, size_t n, wh_batch *b)
{
    const char *end = p + n;
    for (;;) {
        const char *d = memchr(p, f->delim, (size_t)(end - p));
        /* A delimiter preceded by an odd run of backslashes is data. */
        while (d) {
            size_t bs = 0;
            for (const char *q = d; q > p && q[-1] == '\\'; q--)
                bs++;
            if (bs % 2 == 0)
                break;
            d = memchr(d + 1, f->delim, (size_t)(end - d - 1));
        }
        const char *fe = d ? d : end;
        size_t len = (size_t)(fe - p);
        if (wh_is_null(f, p, len))
            wh_batch_put_null(b);
        else if (memchr(p, '\\', len))
            wh_unescape(p, len, b);
        else
            wh_batch_put(b, p, len);
        if (!d)
            return;
        p = d + 1;
    }
}

void wh_copy_parse(const char *p, size_t n, wh_batch *b)
{
    if (n > 0 && p[n - 1] == '\n')
        n--;
    const char *end = p + n;
    for (;;) {
        /* COPY text escapes a tab in data as \t, so a raw tab always ends a field. */
        const char *d = memchr(p, '\t', (size_t)(end - p));
        const char *fe = d ? d : end;
        size_t len = (size_t)(fe - p);
        if (len == 2 && p[0] == '\\' && p[1] == 'N')
            wh_batch_put_null(b);
        else if (memchr(p, '\\', len))
            wh_unescape(p, len, b);
        else
            wh_batch_put(b, p, len);
        if (!d)
            return;
        p = d + 1;
    }
}

/* Skip to just past the next \n; WH_REC_MORE if there is none yet. */
static int wh_skip_bad(const char *p, size_t n, size_t from, int eof, size_t *used)
{
    const char *nl = from < n ? memchr(p + from, '\n', n - from) : NULL;
    if (!nl && !eof)
        return WH_REC_MORE;
    *used = nl ? (size_t)(nl - p) + 1 : n;
    return WH_REC_BAD;
}

static int wh_csv_record(const wh_textfmt *f, const char *p, size_t n, int eof, wh_batch *b,
                         size_t *used, const char **why)
{
    size_t i = 0;
    for (;;) {
        if (i < n && p[i] == f->quote) {
            i++;
            wh_batch_field_open(b);
            for (;;) {
                const char *q = i < n ? memchr(p + i, f->quote, n - i) : NULL;
                if (!q) {
                    if (!eof)
                        goto more;
                    wh_batch_row_abort(b);
                    *why = "unterminated quoted field";
                    *used = n;
                    return WH_REC_BAD;
                }
                wh_batch_field_extend(b, p + i, (size_t)(q - (p + i)));
                i = (size_t)(q - p) + 1;
                if (i < n && p[i] == f->quote) {
                    wh_batch_field_extend(b, &f->quote, 1);
                    i++;
                    continue;
                }
                if (i == n && !eof)
                    goto more;
                break;
            }
            wh_batch_field_close(b);
            if (i == n) {
                *used = n;
                return WH_REC_OK;
            }
            char c = p[i];
            if (c == f->delim) {
                i++;
                continue;
            }
            if (c == '\n') {
                *used = i + 1;
                return WH_REC_OK;
            }
            if (c == '\r') {
                if (i + 1 < n && p[i + 1] == '\n') {
                    *used = i + 2;
                    return WH_REC_OK;
                }
                if (i + 1 == n && !eof)
                    goto more;
                *used = i + 1;
                return WH_REC_OK;
            }
            int rc = wh_skip_bad(p, n, i, eof, used);
            if (rc == WH_REC_MORE)
                goto more;
            wh_batch_row_abort(b);
            *why = "text after a closing quote";
            return rc;
        }
        size_t j = i;
        while (j < n && p[j] != f->delim && p[j] != '\n')
            j++;
        if (j == n && !eof)
            goto more;
        size_t e = j;
        if (e > i && p[e - 1] == '\r' && (j == n || p[j] == '\n'))
            e--;
        if (wh_is_null(f, p + i, e - i))
            wh_batch_put_null(b);
        else
            wh_batch_put(b, p + i, e - i);
        if (j == n) {
            *used = n;
            return WH_REC_OK;
        }
        if (p[j] == f->delim) {
            i = j + 1;
            continue;
        }
        *used = j + 1;
        return WH_REC_OK;
    }
more:
    wh_batch_row_abort(b);
    return WH_REC_MORE;
}

int wh_text_record(const wh_textfmt *f, const char *p, size_t n, int eof, wh_batch *b, size_t *used,
                   const char **why)
{
    *why = "";
    if (f->csv)
        return wh_csv_record(f, p, n, eof, b, used, why);
    const char *nl = n ? memchr(p, '\n', n) : NULL; /* p may be NULL when n is 0 */
    if (!nl && !eof)
        return WH_REC_MORE;
    size_t len = nl ? (size_t)(nl - p) : n;
    *used = nl ? len + 1 : n;
    if (len > 0 && p[len - 1] == '\r')
        len--;
    wh_escaped_fields(f, p, len, b);
    return WH_REC_OK;
}

/* Bytes that COPY text must escape: \\ \n \r \t. */
static const unsigned char wh_copy_special[256] = {['\\'] = 1, ['\n'] = 1, ['\r'] = 1, ['\t'] = 1};

static void wh_escape_into(orr_buf *out, const char *p, size_t n, char delim)
{
    orr_buf_reserve(out, 2 * n);
    char *o = out->data + out->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (wh_copy_special[c] || c == (unsigned char)delim) {
            *o++ = '\\';
            switch (c) {
            case '\n':
                *o++ = 'n';
                break;
            case '\r':
                *o++ = 'r';
                break;
            case '\t':
                *o++ = 't';
                break;
            default:
                *o++ = (char)c;
            }
        } else {
            *o++ = (char)c;
        }
    }
    out->len = (size_t)(o - out->data);
    out->data[out->len] = 0;
}

void wh_copy_encode(orr_buf *out, const char *p, int64_t len)
{
    if (len < 0) {
        orr_buf_append(out, "\\N", 2);
        return;
    }
    size_t n = (size_t)len;
    size_t i = 0;
    while (i < n && !wh_copy_special[(unsigned char)p[i]])
        i++;
    if (i == n) {
        orr_buf_append(out, p, n);
        return;
    }
    orr_buf_append(out, p, i);
    wh_escape_into(out, p + i, n - i, '\t');
}

void wh_text_encode(const wh_textfmt *f, orr_buf *out, const char *p, int64_t len)
{
    if (len < 0) {
        if (f->null_str)
            orr_buf_append(out, f->null_str, f->null_len);
        return;
    }
    size_t n = (size_t)len;
    if (!f->csv) {
        wh_escape_into(out, p, n, f->delim);
        return;
    }
    int quote = n == 0 || wh_is_null(f, p, n);
    for (size_t i = 0; i < n && !quote; i++) {
        char c = p[i];
        quote = c == f->delim || c == f->quote || c == '\n' || c == '\r';
    }
    if (!quote) {
        orr_buf_append(out, p, n);
        return;
    }
    orr_buf_append_byte(out, f->quote);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == f->quote) {
            orr_buf_append(out, p + start, i + 1 - start);
            orr_buf_append_byte(out, f->quote);
            start = i + 1;
        }
    }
    orr_buf_append(out, p + start, n - start);
    orr_buf_append_byte(out, f->quote);
}

int wh_fixed_parse(const char *p, size_t n, const int *widths, size_t ncols, wh_batch *b,
                   const char **why)
{
    size_t pos = 0;
    if (n > 0 && p[n - 1] == '\r')
        n--;
    for (size_t c = 0; c < ncols; c++) {
        size_t w = (size_t)widths[c];
        if (pos >= n && c == 0 && n == 0) {
            *why = "empty line";
            return -1;
        }
        size_t s = pos < n ? pos : n;
        size_t e = pos + w < n ? pos + w : n;
        while (e > s && p[e - 1] == ' ')
            e--;
        if (e == s)
            wh_batch_put_null(b);
        else
            wh_batch_put(b, p + s, e - s);
        pos += w;
    }
    return 0;
}

void wh_quote_ident(orr_buf *out, const char *name, char q)
{
    orr_buf_append_byte(out, q);
    for (const char *p = name; *p; p++) {
        if (*p == q)
            orr_buf_append_byte(out, q);
        orr_buf_append_byte(out, *p);
    }
    orr_buf_append_byte(out, q);
}

void wh_quote_qualified(orr_buf *out, const char *name, char q)
{
    const char *dot = strchr(name, '.');
    if (!dot) {
        wh_quote_ident(out, name, q);
        return;
    }
    char schema[128];
    snprintf(schema, sizeof(schema), "%.*s", (int)(dot - name), name);
    wh_quote_ident(out, schema, q);
    orr_buf_append_byte(out, '.');
    wh_quote_ident(out, dot + 1, q);
}
