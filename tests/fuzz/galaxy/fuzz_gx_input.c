/* fuzz_gx_input.c - galaxyd's input checks on arbitrary bytes.
 *
 * Input: TEXT [NUL SECRET]. TEXT goes through gx_parse_time and gx_name_ok;
 * then every occurrence of SECRET in TEXT is masked. Properties checked
 * beyond "no crash", each taken from the contracts in gx_input.h:
 *   - an accepted time has the documented shape (YYYY-MM-DD, optionally
 *     T or ' ', hh:mm:ss, a fraction, Z or +hh:mm / -hh:mm), lies at most a
 *     day before 1970, and formats back to a date that parses to the same
 *     instant at midnight granularity;
 *   - an accepted name is 1..128 bytes of [A-Za-z0-9_.-], the first a
 *     letter or digit, and every such text is accepted;
 *   - an accepted id or integer prints back as the same text, and every
 *     text that is the shortest spelling of such a number is accepted;
 *   - text passed as clean has no ASCII control character;
 *   - the client address of a request from peer 10.0.0.1 with TEXT as its
 *     X-Forwarded-For and SECRET as the trusted proxies is the peer when the
 *     peer is not trusted, and otherwise an IP address (it parses back),
 *     never longer than the buffer;
 *   - masking never grows the message; an empty secret or one made only of
 *     '*' leaves it as it is; any other secret leaves no occurrence behind,
 *     changes nothing when it did not occur and something when it did, and
 *     the bytes other than '*' that remain are a subsequence of the
 *     message's own (masking only removes or stars bytes). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 1 if s starts with pattern ('d' = an ASCII digit, anything else itself). */
static int fz_shape_at(const char *s, const char *pattern)
{
    for (; *pattern; pattern++, s++) {
        if (*pattern == 'd' ? !(*s >= '0' && *s <= '9') : *s != *pattern)
            return 0;
    }
    return 1;
}

/* 1 if s is spelled as one of the times gx_parse_time documents. */
static int fz_time_shape(const char *s)
{
    if (!fz_shape_at(s, "dddd-dd-dd"))
        return 0;
    s += 10;
    if (*s == '\0')
        return 1;
    if ((*s != 'T' && *s != ' ') || !fz_shape_at(s + 1, "dd:dd:dd"))
        return 0;
    s += 9;
    if (*s == '.') {
        s++;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'Z')
        s++;
    else if ((*s == '+' || *s == '-') && fz_shape_at(s + 1, "dd:dd"))
        s += 6;
    return *s == '\0';
}

static int fz_name_chars(const char *s)
{
    for (; *s; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '-'))
            return 0;
    }
    return 1;
}

/* 1 if the bytes of a other than '*' are a subsequence of those of b. */
static int fz_unstarred_subseq(const char *a, const char *b)
{
    for (; *a; a++) {
        if (*a == '*')
            continue;
        while (*b && *b != *a)
            b++;
        if (!*b)
            return 0;
        b++;
    }
    return 1;
}

static void fz_check_time(const char *text)
{
    int64_t ms = 0;
    if (gx_parse_time(text, &ms) != ORR_OK)
        return;
    if (!fz_time_shape(text))
        abort();
    if (ms < -86400000LL * 2) /* offsets reach at most a day before 1970 */
        abort();
    time_t secs = (time_t)(ms / 1000 - (ms % 1000 < 0));
    struct tm tm;
    char day[32];
    int64_t back;
    if (gmtime_r(&secs, &tm) && tm.tm_year + 1900 >= 1970 && tm.tm_year + 1900 <= 9999) {
        strftime(day, sizeof(day), "%Y-%m-%d", &tm);
        if (gx_parse_time(day, &back) != ORR_OK || back > ms || ms - back >= 86400000)
            abort();
    }
}

static void fz_check_name(const char *text)
{
    size_t n = strlen(text);
    int alnum0 = (text[0] >= 'a' && text[0] <= 'z') || (text[0] >= 'A' && text[0] <= 'Z') ||
                 (text[0] >= '0' && text[0] <= '9');
    int want = n >= 1 && n <= 128 && alnum0 && fz_name_chars(text);
    if (gx_name_ok(text) != want)
        abort();
}

/* Ids and integers: an accepted text is how printf spells its value, which
 * is at least lo, and such a spelling of any value from need up is accepted. */
static void fz_check_number(const char *text, int (*parse)(const char *, int64_t *), int64_t lo,
                            int64_t need)
{
    int64_t v = -7;
    char back[32];
    int ok = parse(text, &v) == 0;
    if (ok) {
        snprintf(back, sizeof back, "%lld", (long long)v);
        if (v < lo || strcmp(back, text) != 0)
            abort();
    } else if (v != -7) {
        abort(); /* *out untouched on refusal */
    }
    errno = 0;
    char *end;
    long long w = strtoll(text, &end, 10);
    if (errno == 0 && end != text && *end == '\0' && w >= need) {
        snprintf(back, sizeof back, "%lld", w);
        if (strcmp(back, text) == 0 && !ok)
            abort();
    }
}

static void fz_check_text(const char *text)
{
    if (gx_text_problem(text, strlen(text)) != NULL)
        return;
    for (const char *p = text; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            abort();
    }
}

static void fz_check_client(const char *xff, const char *trusted)
{
    char out[64];
    gx_client_addr("10.0.0.1", xff, trusted, out, sizeof out);
    if (strlen(out) >= sizeof out)
        abort();
    /* Only the text 10.0.0.1 itself reads as that address (inet_pton takes
     * no leading zeros), so without it the peer is not trusted and the
     * header must not count. */
    if (!strstr(trusted, "10.0.0.1") && strcmp(out, "10.0.0.1") != 0)
        abort();
    unsigned char bin[16];
    if (inet_pton(AF_INET, out, bin) != 1 && inet_pton(AF_INET6, out, bin) != 1)
        abort();
}

static void fz_check_scrub(const char *text, const char *secret)
{
    size_t before = strlen(text), n = strlen(secret);
    char *msg = strdup(text);
    if (!msg)
        return;
    gx_scrub_secret(msg, secret);
    int was_there = n > 0 && strstr(text, secret) != NULL;
    if (strlen(msg) > before)
        abort();
    if (n == 0 || strspn(secret, "*") == n) {
        if (strcmp(msg, text) != 0) /* documented: changes nothing */
            abort();
    } else {
        if (strstr(msg, secret))
            abort();
        if ((strcmp(msg, text) != 0) != was_there)
            abort();
        if (!fz_unstarred_subseq(msg, text))
            abort();
    }
    free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *buf = malloc(size + 2);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    buf[size + 1] = '\0';
    const char *text = buf;
    const char *secret = buf + strlen(buf) + 1; /* "" when there is no NUL */

    fz_check_time(text);
    fz_check_name(text);
    fz_check_number(text, gx_parse_id, 1, 1);
    fz_check_number(text, gx_parse_int, INT64_MIN, INT64_MIN);
    fz_check_text(text);
    fz_check_client(text, secret);
    fz_check_scrub(text, secret);
    free(buf);
    return 0;
}
