/* gx_input.c - see gx_input.h. */
#include "gx_input.h"

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

orr_status gx_parse_time(const char *s, int64_t *ms)
{
    int y, mo, d, h = 0, mi = 0, se = 0, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
        return ORR_EINVAL;
    const char *p = s + 10;
    int offset_s = 0;
    if (*p == 'T' || *p == ' ') {
        if (sscanf(p + 1, "%2d:%2d:%2d%n", &h, &mi, &se, &n) != 3 || n != 8)
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
            if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5 || oh > 23 || om > 59)
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
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 128 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}
