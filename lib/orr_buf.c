/* orr_buf.c - growable byte buffer (see orr_buf.h). */
#include "orr_buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"

void orr_buf_reserve(orr_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        orr_oom(SIZE_MAX);
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = orr_xrealloc(b->data, cap);
    b->data = p;
    b->cap = cap;
}

void orr_buf_append_str(orr_buf *b, const char *s)
{
    orr_buf_append(b, s, strlen(s));
}

void orr_buf_vappendf(orr_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    orr_buf_reserve(b, 64);
    int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if ((size_t)n >= b->cap - b->len) {
        orr_buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    }
    b->len += (size_t)n;
}

void orr_buf_appendf(orr_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    orr_buf_vappendf(b, fmt, ap);
    va_end(ap);
}

void orr_buf_reset(orr_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void orr_buf_consume(orr_buf *b, size_t n)
{
    if (n >= b->len) {
        orr_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void orr_buf_free(orr_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *orr_buf_detach(orr_buf *b, size_t *len)
{
    if (!b->data)
        orr_buf_reserve(b, 0);
    b->data[b->len] = '\0';
    char *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

const char *orr_buf_cstr(const orr_buf *b)
{
    return b->data ? b->data : "";
}
