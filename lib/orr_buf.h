/*
 * orr_buf.h - growable byte buffer, the one string/bytes builder of Orrery.
 *
 * data is always NUL-terminated (data[len] == 0) once anything was added, so a
 * buffer of text can be passed as a C string. A zero-initialised struct
 * (ORR_BUF_INIT) is an empty buffer. Growth is geometric; allocation failure
 * aborts (OOM is fatal in this project). Not thread-safe.
 */
#ifndef ORR_BUF_H
#define ORR_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct orr_buf {
    char *data;
    size_t len;
    size_t cap;
} orr_buf;

#define ORR_BUF_INIT                                                                               \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Make room for at least extra more bytes (plus the terminating NUL). */
void orr_buf_reserve(orr_buf *b, size_t extra);

/* The appends are inline: writers of JSON and wire formats make thousands
 * of small ones per answer, and the call cost more than the bytes. Room
 * is len + n + 1 <= cap (the NUL); anything else goes to orr_buf_reserve. */
static inline void orr_buf_append(orr_buf *b, const void *p, size_t n)
{
    if (b->len + n >= b->cap)
        orr_buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static inline void orr_buf_append_byte(orr_buf *b, char c)
{
    if (b->len + 2 > b->cap)
        orr_buf_reserve(b, 1);
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void orr_buf_append_str(orr_buf *b, const char *s);
void orr_buf_appendf(orr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void orr_buf_vappendf(orr_buf *b, const char *fmt, va_list ap);
/* Length to 0, keep the memory. */
void orr_buf_reset(orr_buf *b);
/* Drop the first n bytes (n <= len). */
void orr_buf_consume(orr_buf *b, size_t n);
/* Free the memory; the buffer is empty and reusable afterwards. */
void orr_buf_free(orr_buf *b);
/* Hand the memory to the caller (free() it); never NULL; buffer becomes empty. */
char *orr_buf_detach(orr_buf *b, size_t *len);
/* Pointer to the text ("" for an empty buffer). */
const char *orr_buf_cstr(const orr_buf *b);

#endif
