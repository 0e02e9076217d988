/* sort_time.c - time fields, stream time zones and buckets (see sort_time.h). */
#include "sort_time.h"

#include <stdio.h>
#include <string.h>

orr_status sort_time_fmt_parse(const char *name, sort_time_fmt *out)
{
    static const struct {
        const char *name;
        sort_time_fmt f;
    } tab[] = {
        {"epoch_s", SORT_TF_EPOCH_S},           {"epoch_ms", SORT_TF_EPOCH_MS},
        {"%Y-%m-%d %H:%M:%S", SORT_TF_YMD_HMS}, {"%Y%m%d%H%M%S", SORT_TF_COMPACT},
        {"iso8601", SORT_TF_ISO8601},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcmp(name, tab[i].name) == 0) {
            *out = tab[i].f;
            return ORR_OK;
        }
    }
    return ORR_EINVAL;
}

orr_status sort_bucket_parse(const char *name, sort_bucket_kind *out)
{
    if (strcmp(name, "15m") == 0)
        *out = SORT_BUCKET_15M;
    else if (strcmp(name, "hour") == 0)
        *out = SORT_BUCKET_HOUR;
    else if (strcmp(name, "day") == 0)
        *out = SORT_BUCKET_DAY;
    else
        return ORR_EINVAL;
    return ORR_OK;
}

/* Eight ASCII digits at p as a number, or -1 if any byte is not a digit.
 * The bytes are checked and combined in one 64-bit word: digit pairs, then
 * pairs of pairs, then the two halves, each step one multiply (p[0] is the
 * low byte and the most significant digit). */
static inline int64_t time__digits8(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    if ((v & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL ||
        ((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL)
        return -1; /* the first test leaves bytes 0x30..0x3f, which the +6 cannot carry out of */
    v -= 0x3030303030303030ULL;
    v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFULL;           /* 4 numbers 0..99 */
    v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFULL;         /* 2 numbers 0..9999 */
    return (int64_t)((v * 10000 + (v >> 32)) & 0xFFFFFFFFULL); /* 0..99999999 */
}

static int time__digits(const char *p, size_t n, int64_t *out)
{
    int64_t v = 0;
    for (; n >= 8; p += 8, n -= 8) {
        int64_t e = time__digits8(p);
        if (e < 0)
            return -1;
        v = v * 100000000 + e;
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* "+hh:mm", "+hhmm", "+hh" (len bytes) -> seconds; -1 if malformed. */
static int time__offset(const char *p, size_t len, int32_t *out)
{
    int64_t h, m = 0;
    if (len < 3 || (p[0] != '+' && p[0] != '-'))
        return -1;
    if (time__digits(p + 1, 2, &h) != 0)
        return -1;
    if (len == 6 && p[3] == ':') {
        if (time__digits(p + 4, 2, &m) != 0)
            return -1;
    } else if (len == 5) {
        if (time__digits(p + 3, 2, &m) != 0)
            return -1;
    } else if (len != 3) {
        return -1;
    }
    if (h > 23 || m > 59)
        return -1;
    int32_t s = (int32_t)(h * 3600 + m * 60);
    *out = p[0] == '-' ? -s : s;
    return 0;
}

sort_tz sort_tz_fixed(int32_t offset_s)
{
    sort_tz tz = {offset_s, NULL};
    return tz;
}

orr_status sort_tz_parse(const char *name, sort_tz *out, orr_err *err)
{
    int32_t off;
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Z") == 0) {
        *out = sort_tz_fixed(0);
        return ORR_OK;
    }
    if (name[0] == '+' || name[0] == '-') {
        if (time__offset(name, strlen(name), &off) != 0)
            return orr_err_set(err, ORR_EINVAL, "timezone",
                               "\"%s\" is not an offset like +08:00, -0530 or +09", name);
        *out = sort_tz_fixed(off);
        return ORR_OK;
    }
    const orr_tz *zone = NULL;
    orr_err zerr = {0};
    orr_status rc = orr_tz_load(name, &zone, &zerr);
    if (rc == ORR_ENOTFOUND)
        return orr_err_set(err, rc, "timezone", "no IANA time zone named \"%s\"", name);
    if (rc != ORR_OK)
        return orr_err_set(err, rc, "timezone", "\"%s\": %s", name, zerr.msg);
    out->fixed = 0;
    out->zone = zone;
    return ORR_OK;
}

int32_t sort_tz_offset_at(sort_tz tz, int64_t utc_s)
{
    return tz.zone ? orr_tz_offset(tz.zone, utc_s) : tz.fixed;
}

int64_t sort_tz_local_to_utc(sort_tz tz, int64_t local_s)
{
    if (!tz.zone)
        return local_s - tz.fixed;
    orr_tz_map m;
    orr_tz_local_to_utc(tz.zone, local_s, &m);
    if (m.n > 0)
        return m.utc[0];
    /* In a gap: read with the offset in force just before it. */
    return local_s - orr_tz_offset(tz.zone, m.gap_end - 1);
}

/* The first instant whose wall time is >= local_s (a bucket boundary). */
static int64_t time__first_at(sort_tz tz, int64_t local_s)
{
    if (!tz.zone)
        return local_s - tz.fixed;
    orr_tz_map m;
    orr_tz_local_to_utc(tz.zone, local_s, &m);
    return m.n == 0 ? m.gap_end : m.utc[0];
}

/* Howard Hinnant's public-domain civil-date algorithms, written afresh. */
int64_t sort_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void sort_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

static int time__leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int time__civil_ok(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t s)
{
    static const unsigned char mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 60)
        return 0;
    int64_t md = mdays[mo - 1] + (mo == 2 && time__leap(y));
    return d <= md;
}

/* Wall-clock seconds (the civil time read as if it were UTC). */
static int64_t time__local(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t s)
{
    int64_t days = sort_days_from_civil(y, (unsigned)mo, (unsigned)d);
    return days * 86400 + h * 3600 + mi * 60 + s;
}

orr_status sort_time_from_int(int64_t v, sort_time_fmt f, int64_t *epoch_ms)
{
    /* Years 0001..9999 keep every later computation far from overflow. */
    const int64_t lim_s = 253402300799LL;
    if (f == SORT_TF_EPOCH_S) {
        if (v < -lim_s || v > lim_s)
            return ORR_EINVAL;
        *epoch_ms = v * 1000;
        return ORR_OK;
    }
    if (f == SORT_TF_EPOCH_MS) {
        if (v < -lim_s * 1000 || v > lim_s * 1000)
            return ORR_EINVAL;
        *epoch_ms = v;
        return ORR_OK;
    }
    return ORR_EINVAL;
}

orr_status sort_time_parse_text(const char *p, size_t len, sort_time_fmt f, sort_tz tz,
                                int64_t *epoch_ms)
{
    int64_t y, mo, d, h, mi, s, ms = 0;
    int32_t own = 0;
    int has_own = 0;
    switch (f) {
    case SORT_TF_EPOCH_S:
    case SORT_TF_EPOCH_MS: {
        int neg = len > 0 && p[0] == '-';
        size_t n = len - (size_t)neg;
        int64_t v;
        if (n == 0 || n > 16 || time__digits(p + neg, n, &v) != 0)
            return ORR_EINVAL;
        return sort_time_from_int(neg ? -v : v, f, epoch_ms);
    }
    case SORT_TF_YMD_HMS:
        if (len != 19 || p[4] != '-' || p[7] != '-' || p[10] != ' ' || p[13] != ':' || p[16] != ':')
            return ORR_EINVAL;
        if (time__digits(p, 4, &y) || time__digits(p + 5, 2, &mo) || time__digits(p + 8, 2, &d) ||
            time__digits(p + 11, 2, &h) || time__digits(p + 14, 2, &mi) ||
            time__digits(p + 17, 2, &s))
            return ORR_EINVAL;
        break;
    case SORT_TF_COMPACT:
        if (len != 14)
            return ORR_EINVAL;
        if (time__digits(p, 4, &y) || time__digits(p + 4, 2, &mo) || time__digits(p + 6, 2, &d) ||
            time__digits(p + 8, 2, &h) || time__digits(p + 10, 2, &mi) ||
            time__digits(p + 12, 2, &s))
            return ORR_EINVAL;
        break;
    case SORT_TF_ISO8601: {
        if (len < 19 || p[4] != '-' || p[7] != '-' || (p[10] != 'T' && p[10] != ' ') ||
            p[13] != ':' || p[16] != ':')
            return ORR_EINVAL;
        if (time__digits(p, 4, &y) || time__digits(p + 5, 2, &mo) || time__digits(p + 8, 2, &d) ||
            time__digits(p + 11, 2, &h) || time__digits(p + 14, 2, &mi) ||
            time__digits(p + 17, 2, &s))
            return ORR_EINVAL;
        size_t i = 19;
        if (i < len && (p[i] == '.' || p[i] == ',')) {
            size_t j = ++i;
            while (i < len && p[i] >= '0' && p[i] <= '9')
                i++;
            if (i == j || i - j > 9)
                return ORR_EINVAL;
            int64_t frac = 0;
            (void)time__digits(p + j, i - j < 3 ? i - j : 3, &frac);
            for (size_t k = i - j; k < 3; k++)
                frac *= 10;
            ms = frac;
        }
        if (i < len) {
            if (p[i] == 'Z' && i + 1 == len)
                own = 0;
            else if (time__offset(p + i, len - i, &own) != 0)
                return ORR_EINVAL;
            has_own = 1;
        }
        break;
    }
    default:
        return ORR_EINVAL;
    }
    if (!time__civil_ok(y, mo, d, h, mi, s))
        return ORR_EINVAL;
    int64_t local = time__local(y, mo, d, h, mi, s);
    int64_t utc = has_own ? local - own : sort_tz_local_to_utc(tz, local);
    *epoch_ms = utc * 1000 + ms;
    return ORR_OK;
}

int64_t sort_bucket_seconds(sort_bucket_kind k)
{
    return k == SORT_BUCKET_15M ? 900 : k == SORT_BUCKET_HOUR ? 3600 : 86400;
}

static int64_t time__floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Local start (wall-clock seconds) of the bucket holding the instant t. */
static int64_t time__local_floor(int64_t t, sort_bucket_kind k, sort_tz tz)
{
    int64_t size = sort_bucket_seconds(k);
    return time__floor_div(t + sort_tz_offset_at(tz, t), size) * size;
}

int64_t sort_bucket_start(int64_t epoch_ms, sort_bucket_kind k, sort_tz tz)
{
    if (!tz.zone) {
        /* A fixed offset: divisions by constants only, no zone. The time
         * may be any int64 (a pack's), so seconds first: adding the
         * offset (under a day) cannot overflow then. */
        int64_t l = time__floor_div(epoch_ms, 1000) + tz.fixed;
        switch (k) {
        case SORT_BUCKET_15M:
            return time__floor_div(l, 900) * 900 - tz.fixed;
        case SORT_BUCKET_HOUR:
            return time__floor_div(l, 3600) * 3600 - tz.fixed;
        case SORT_BUCKET_DAY:
            return time__floor_div(l, 86400) * 86400 - tz.fixed;
        }
    }
    return time__first_at(tz, time__local_floor(time__floor_div(epoch_ms, 1000), k, tz));
}

int64_t sort_bucket_next(int64_t start_s, sort_bucket_kind k, sort_tz tz)
{
    return time__first_at(tz, time__local_floor(start_s, k, tz) + sort_bucket_seconds(k));
}

int64_t sort_bucket_end(int64_t start_s, sort_bucket_kind k, sort_tz tz)
{
    int64_t e = time__local_floor(start_s, k, tz) + sort_bucket_seconds(k);
    if (!tz.zone)
        return e - tz.fixed;
    orr_tz_map m;
    orr_tz_local_to_utc(tz.zone, e, &m);
    if (m.n == 0)
        return m.gap_end;
    /* e inside a fold, past its first wall time: the second pass of
     * [fold start, e) still belongs to this bucket. */
    if (m.n == 2 && e > m.fold_end - (m.utc[1] - m.utc[0]))
        return m.utc[1];
    return m.utc[0];
}

void sort_bucket_label(int64_t start_s, sort_bucket_kind k, sort_tz tz, char *buf)
{
    int64_t local = time__local_floor(start_s, k, tz);
    int64_t days = time__floor_div(local, 86400);
    int64_t sod = local - days * 86400;
    int64_t y;
    unsigned m, d;
    sort_civil_from_days(days, &y, &m, &d);
    unsigned hh = (unsigned)(sod / 3600) % 24u, mm = (unsigned)(sod % 3600 / 60) % 60u;
    m %= 100u;
    d %= 100u;
    if (y < 0 || y > 9999)
        y = 0;
    if (k == SORT_BUCKET_DAY)
        snprintf(buf, SORT_LABEL_MAX, "%04d%02u%02u", (int)y, m, d);
    else if (k == SORT_BUCKET_HOUR)
        snprintf(buf, SORT_LABEL_MAX, "%04d%02u%02u%02u", (int)y, m, d, hh);
    else
        snprintf(buf, SORT_LABEL_MAX, "%04d%02u%02u%02u%02u", (int)y, m, d, hh, mm);
}

int sort_bucket_from_label(const char *label, sort_bucket_kind k, sort_tz tz, int64_t *start_s)
{
    size_t want = k == SORT_BUCKET_DAY ? 8 : k == SORT_BUCKET_HOUR ? 10 : 12;
    size_t len = strlen(label);
    int64_t y, mo, d, h = 0, mi = 0;
    if (len != want)
        return -1;
    if (time__digits(label, 4, &y) || time__digits(label + 4, 2, &mo) ||
        time__digits(label + 6, 2, &d))
        return -1;
    if (len >= 10 && time__digits(label + 8, 2, &h))
        return -1;
    if (len == 12 && time__digits(label + 10, 2, &mi))
        return -1;
    if (!time__civil_ok(y, mo, d, h, mi, 0) || mi % 15 != 0)
        return -1;
    *start_s = time__first_at(tz, time__local(y, mo, d, h, mi, 0));
    return 0;
}
