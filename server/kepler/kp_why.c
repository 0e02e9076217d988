/*
 * kp_why.c - the text of an instance's blockers and its fingerprint (see
 * kp_why.h).
 */
#include "kp_why.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define KP_WHY_TAIL 48 /* room kept for ",{\"kind\":\"more\",\"count\":N}]" */

void kp_why_begin(kp_why *w)
{
    w->buf[0] = '[';
    w->buf[1] = '\0';
    w->len = 1;
    w->n = 0;
    w->more = 0;
}

void kp_why_item(kp_why *w, const char *fmt, ...)
{
    size_t room = sizeof w->buf - KP_WHY_TAIL;
    if (w->len + 3 >= room) {
        w->more++;
        return;
    }
    size_t at = w->len;
    char *p = w->buf + at;
    size_t left = room - at;
    int k = snprintf(p, left, "%s{", w->n ? "," : "");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(p + k, left - (size_t)k, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(k + m + 1) >= left) {
        w->buf[at] = '\0';
        w->more++;
        return;
    }
    p[k + m] = '}';
    p[k + m + 1] = '\0';
    w->len = at + (size_t)(k + m + 1);
    w->n++;
}

void kp_why_end(kp_why *w)
{
    int k;
    if (w->more)
        k = snprintf(w->buf + w->len, sizeof w->buf - w->len, "%s{\"kind\":\"more\",\"count\":%d}]",
                     w->n ? "," : "", w->more);
    else
        k = snprintf(w->buf + w->len, sizeof w->buf - w->len, "]");
    if (k > 0)
        w->len += (size_t)k;
}

const char *kp_why_q(char *out, size_t n, const char *s)
{
    size_t o = 0;
    if (n < 3) {
        if (n)
            out[0] = '\0';
        return out;
    }
    int cut = 0;
    out[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[8];
        size_t el;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            el = 2;
        } else if (*p < 0x20) {
            el = (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p);
        } else {
            esc[0] = (char)*p;
            el = 1;
        }
        if (o + el + 2 > n) {
            cut = 1;
            break;
        }
        memcpy(out + o, esc, el);
        o += el;
    }
    /* cut short: never end inside a multi-byte UTF-8 sequence */
    while (cut && o > 1 && ((unsigned char)out[o - 1] & 0xC0) == 0x80)
        o--;
    if (cut && o > 1 && ((unsigned char)out[o - 1] & 0xC0) == 0xC0)
        o--;
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

uint32_t kp_why_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h ? h : 1;
}
