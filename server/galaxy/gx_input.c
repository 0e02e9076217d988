/* gx_input.c - see gx_input.h. */
#include "gx_input.h"

#include "orr_name.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Days from 1970-01-01 of a civil date (proleptic Gregorian). */
static int64_t gx_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* 1 if s starts with shape: 'd' stands for an ASCII digit, anything else for
 * itself. sscanf's %d alone would also take spaces and signs ("2023- 2-28"). */
static int gx_shaped(const char *s, const char *shape)
{
    for (; *shape; shape++, s++) {
        if (*shape == 'd' ? !(*s >= '0' && *s <= '9') : *s != *shape)
            return 0;
    }
    return 1;
}

orr_status gx_parse_time(const char *s, int64_t *ms)
{
    int y, mo, d, h = 0, mi = 0, se = 0, n = 0;
    if (!s || !gx_shaped(s, "dddd-dd-dd") || sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 ||
        n != 10)
        return ORR_EINVAL;
    const char *p = s + 10;
    int offset_s = 0;
    if (*p == 'T' || *p == ' ') {
        if (!gx_shaped(p + 1, "dd:dd:dd") ||
            sscanf(p + 1, "%2d:%2d:%2d%n", &h, &mi, &se, &n) != 3 || n != 8)
            return ORR_EINVAL;
        p += 1 + n;
        if (*p == '.') { /* fractional seconds are ignored */
            p++;
            while (*p >= '0' && *p <= '9')
                p++;
        }
        if (*p == 'Z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int oh, om;
            if (!gx_shaped(p + 1, "dd:dd") || sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) != 2 ||
                n != 5 || oh > 23 || om > 59)
                return ORR_EINVAL;
            offset_s = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
            p += 1 + n;
        }
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || y < 1970)
        return ORR_EINVAL;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
        return ORR_EINVAL;
    int64_t days = gx_days_from_civil(y, (unsigned)mo, (unsigned)d);
    *ms = ((days * 86400 + h * 3600 + mi * 60 + se) - offset_s) * 1000;
    return ORR_OK;
}

/* One pass over msg; every replacement removes at least one byte that is
 * not '*', so repeated passes end (a secret of only '*' is left alone). */
static int gx_scrub_pass(char *msg, const char *secret, size_t n)
{
    int hits = 0;
    for (char *p = strstr(msg, secret); p; p = strstr(p, secret)) {
        size_t rest = strlen(p + n);
        hits++;
        if (n >= 3) {
            memcpy(p, "***", 3);
            memmove(p + 3, p + n, rest + 1);
            p += 3;
        } else {
            memset(p, '*', n);
            p += n;
        }
    }
    return hits;
}

void gx_scrub_secret(char *msg, const char *secret)
{
    size_t n = strlen(secret);
    if (n == 0 || strspn(secret, "*") == n)
        return;
    /* A mask next to a secret's own '*' could rebuild it: repeat until none. */
    while (gx_scrub_pass(msg, secret, n) > 0)
        ;
}

int gx_name_ok(const char *s)
{
    return orr_name_ok(s, ORR_NAME_MAX);
}

/* Digits of s as a number of at most max (1..19 digits, first not '0'
 * unless the only one when zero_ok). -1 on anything else or overflow. */
static int gx_digits(const char *s, int zero_ok, uint64_t max, uint64_t *out)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 19 || s[n] != '\0')
        return -1;
    if (s[0] == '0' && !(zero_ok && n == 1))
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(s[i] - '0'); /* 19 digits cannot wrap a uint64 */
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

int gx_parse_id(const char *s, int64_t *out)
{
    uint64_t v;
    if (!s || gx_digits(s, 0, (uint64_t)INT64_MAX, &v) != 0)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int gx_parse_int(const char *s, int64_t *out)
{
    uint64_t v;
    if (!s)
        return -1;
    if (s[0] == '-') {
        /* down to INT64_MIN, whose magnitude is INT64_MAX + 1 */
        if (gx_digits(s + 1, 0, (uint64_t)INT64_MAX + 1, &v) != 0)
            return -1;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
        return 0;
    }
    if (gx_digits(s, 1, (uint64_t)INT64_MAX, &v) != 0)
        return -1;
    *out = (int64_t)v;
    return 0;
}

const char *gx_text_problem(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f)
                return "control character";
            p++;
            continue;
        }
        unsigned len, cp;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return "invalid UTF-8";
        }
        if ((size_t)(end - p) < len)
            return "invalid UTF-8";
        for (unsigned i = 1; i < len; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return "invalid UTF-8";
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        /* Overlong forms, surrogates and code points past U+10FFFF. */
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return "invalid UTF-8";
        if (cp >= 0x80 && cp <= 0x9f)
            return "control character";
        p += len;
    }
    return NULL;
}

/* The address in s[0..n) without spaces, normalised (inet_ntop of its
 * parse) into out; -1 if it is not an IPv4 or IPv6 address. */
static int gx_ip_norm(const char *s, size_t n, char *out, size_t outn)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    char buf[INET6_ADDRSTRLEN + 1];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    unsigned char bin[16];
    if (inet_pton(AF_INET, buf, bin) == 1)
        return inet_ntop(AF_INET, bin, out, (socklen_t)outn) ? 0 : -1;
    if (inet_pton(AF_INET6, buf, bin) == 1)
        return inet_ntop(AF_INET6, bin, out, (socklen_t)outn) ? 0 : -1;
    return -1;
}

/* 1 if addr (normalised) is one of the addresses listed in trusted. */
static int gx_is_trusted(const char *addr, const char *trusted)
{
    if (!trusted)
        return 0;
    const char *p = trusted;
    while (*p) {
        size_t n = strcspn(p, ", ");
        char norm[INET6_ADDRSTRLEN];
        if (n && gx_ip_norm(p, n, norm, sizeof norm) == 0 && strcmp(norm, addr) == 0)
            return 1;
        p += n;
        p += strspn(p, ", ");
    }
    return 0;
}

const char *gx_client_addr(const char *peer, const char *xff, const char *trusted, char *out,
                           size_t n)
{
    char hop[INET6_ADDRSTRLEN];
    if (!peer || gx_ip_norm(peer, strlen(peer), hop, sizeof hop) != 0)
        snprintf(hop, sizeof hop, "%s", peer ? peer : "unknown");
    size_t end = xff ? strlen(xff) : 0;
    while (gx_is_trusted(hop, trusted) && end > 0) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        char next[INET6_ADDRSTRLEN];
        if (gx_ip_norm(xff + start, end - start, next, sizeof next) != 0)
            break;
        memcpy(hop, next, sizeof hop);
        end = start > 0 ? start - 1 : 0;
    }
    snprintf(out, n, "%s", hop);
    return out;
}
