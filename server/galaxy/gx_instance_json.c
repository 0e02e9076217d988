/* gx_instance_json.c - an instance as galaxyd answers it: state names, times,
 * the jansson tree of one instance (GET /instances/{id}, actions) and the
 * list answer written straight into the response buffer.
 *
 * The list (GET /instances) is galaxyd's busiest uncached answer: as a
 * jansson tree it cost ~20 objects and strings per row, all malloc'd, then
 * dumped and freed. gx_instances_write makes the same bytes in one pass over
 * halleyd's answer, with no allocation but the buffer's growth:
 *
 *   - keys in the tree's order (gx_instance_json, then "paused"), compact,
 *     as orr_json_dump_buf prints them (JSON_COMPACT | JSON_PRESERVE_ORDER);
 *   - strings escaped as jansson escapes them: '"', '\\' and the control
 *     characters below 0x20 (\b \f \n \r \t, the rest \u00XX), UTF-8 kept;
 *     a string that is not valid UTF-8 (or NULL) leaves its key out, as
 *     json_string() returning NULL did;
 *   - times as gx_json_time formats them, without gmtime's lock.
 * A row with what the tree adds only for one instance (params, upstreams)
 * is built as a tree and dumped, so the shape stays one definition.
 * tests/unit/galaxy/test_gx_instance_json.c holds both to the same bytes. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "orr_json.h"

static const char *const gx_state_names[] = {
    [HL_STATE(WAITING)] = "waiting",       [HL_STATE(READY)] = "ready",
    [HL_STATE(DISPATCHED)] = "dispatched", [HL_STATE(RUNNING)] = "running",
    [HL_STATE(SUCCESS)] = "success",       [HL_STATE(FAILED)] = "failed",
    [HL_STATE(KILLED)] = "killed",         [HL_STATE(TIMED_OUT)] = "timed_out",
    [HL_STATE(SUSPENDED)] = "suspended",   [HL_STATE(MARKED_SUCCESS)] = "marked_success",
};
#define GX_NSTATES (sizeof(gx_state_names) / sizeof(gx_state_names[0]))

const char *gx_state_name(HL(InstanceState) s)
{
    if ((int)s <= 0 || (size_t)s >= GX_NSTATES)
        return NULL;
    return gx_state_names[s];
}

HL(InstanceState) gx_state_parse(const char *name)
{
    for (size_t i = 1; name && i < GX_NSTATES; i++)
        if (gx_state_names[i] && strcmp(gx_state_names[i], name) == 0)
            return (HL(InstanceState))i;
    return HL_STATE(UNSPECIFIED);
}

json_t *gx_json_time(int64_t ms)
{
    if (ms <= 0)
        return json_null();
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char buf[40];
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(buf);
}

static json_t *gx_deps_json(size_t n, HL(DepState) * *deps)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        const HL(DepState) *d = deps[i];
        json_t *o = json_object();
        json_object_set_new(o, "task_id", json_integer(d->task_id));
        json_object_set_new(o, "task_name", json_string(d->task_name));
        json_object_set_new(o, "kind", json_string(d->kind));
        json_object_set_new(o, "instance_id",
                            d->instance_id ? json_integer(d->instance_id) : json_null());
        json_object_set_new(o, "schedule_time", gx_json_time(d->schedule_time_ms));
        const char *st = gx_state_name(d->state);
        json_object_set_new(o, "state", st ? json_string(st) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

json_t *gx_instance_json(const HL(Instance) * in)
{
    json_t *o = json_object();
    const char *st = gx_state_name(in->state);
    json_object_set_new(o, "id", json_integer(in->id));
    json_object_set_new(o, "task_id", json_integer(in->task_id));
    json_object_set_new(o, "task_name", json_string(in->task_name));
    json_object_set_new(o, "task_version", json_integer(in->task_version));
    json_object_set_new(o, "schedule_time", gx_json_time(in->schedule_time_ms));
    json_object_set_new(o, "state", st ? json_string(st) : json_null());
    json_object_set_new(o, "attempt", json_integer(in->attempt));
    json_object_set_new(o, "executor",
                        in->executor && *in->executor ? json_string(in->executor) : json_null());
    json_object_set_new(o, "priority", json_integer(in->priority));
    json_object_set_new(o, "created_at", gx_json_time(in->created_at_ms));
    json_object_set_new(o, "updated_at", gx_json_time(in->updated_at_ms));
    json_object_set_new(o, "started_at", gx_json_time(in->started_at_ms));
    json_object_set_new(o, "finished_at", gx_json_time(in->finished_at_ms));
    json_object_set_new(o, "reason", json_string(in->reason ? in->reason : ""));
    json_object_set_new(o, "exit_code",
                        in->has_exit_code ? json_integer(in->exit_code) : json_null());
    json_object_set_new(o, "run_now", json_boolean(in->run_now));
    json_object_set_new(o, "ignore_upstreams", json_boolean(in->ignore_upstreams));
    json_object_set_new(o, "backfill",
                        in->backfill_id
                            ? json_pack("{s:I,s:o,s:i}", "id", (json_int_t)in->backfill_id, "cycle",
                                        gx_json_time(in->backfill_cycle_ms), "max_cycles",
                                        (int)in->backfill_cycles)
                            : json_null());
    if (in->params_json && *in->params_json) { /* GetInstance only */
        json_t *p = json_loads(in->params_json, 0, NULL);
        json_object_set_new(o, "params", json_is_object(p) ? p : json_object());
        if (p && !json_is_object(p))
            json_decref(p);
    }
    if (in->n_upstreams || in->n_downstreams) {
        json_object_set_new(o, "upstreams", gx_deps_json(in->n_upstreams, in->upstreams));
        json_object_set_new(o, "downstreams", gx_deps_json(in->n_downstreams, in->downstreams));
    }
    return o;
}

/* ------------------------------------------------------------ the writer */

/* Append s as a JSON string. -1 (nothing usable appended; the caller
 * rolls back) when s is NULL or not valid UTF-8, as json_string() refuses. */
static int gx_jw_str(orr_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    if (!s)
        return -1;
    orr_buf_append_byte(b, '"');
    const unsigned char *p = (const unsigned char *)s, *run = p;
    for (;;) {
        unsigned c = *p;
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            p++;
            continue;
        }
        if (p > run)
            orr_buf_append(b, run, (size_t)(p - run));
        if (c == 0)
            break;
        if (c >= 0x80) { /* one UTF-8 sequence, checked as jansson checks it */
            size_t n;
            uint32_t v;
            if (c >= 0xC2 && c <= 0xDF)
                n = 2, v = c & 0x1F;
            else if (c >= 0xE0 && c <= 0xEF)
                n = 3, v = c & 0x0F;
            else if (c >= 0xF0 && c <= 0xF4)
                n = 4, v = c & 0x07;
            else
                return -1;
            for (size_t i = 1; i < n; i++) {
                if (p[i] < 0x80 || p[i] > 0xBF)
                    return -1;
                v = (v << 6) | (p[i] & 0x3F);
            }
            if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (n == 3 && v < 0x800) ||
                (n == 4 && v < 0x10000))
                return -1;
            orr_buf_append(b, p, n);
            p += n;
            run = p;
            continue;
        }
        char esc[6] = {'\\', 0};
        size_t elen = 2;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            elen = 6;
        }
        orr_buf_append(b, esc, elen);
        p++;
        run = p;
    }
    orr_buf_append_byte(b, '"');
    return 0;
}

/* A member's key: GX_JW_KEY(b, "name") appends ,"name": as one literal
 * of known length (GX_JW_KEY1 without the comma, for an object's first);
 * the name is a literal needing no escape. */
#define GX_JW_KEY(b, k)  orr_buf_append((b), ",\"" k "\":", sizeof(",\"" k "\":") - 1)
#define GX_JW_KEY1(b, k) orr_buf_append((b), "\"" k "\":", sizeof("\"" k "\":") - 1)

static void gx_jw_int(orr_buf *b, int64_t v)
{
    char d[24], *e = d + sizeof d, *p = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    orr_buf_append(b, p, (size_t)(e - p));
}

/* A string member (key: its ,"name": text, klen bytes); left out (as the
 * tree leaves it) when s is unusable. */
static void gx_jw_str_member(orr_buf *b, const char *key, size_t klen, const char *s)
{
    size_t mark = b->len;
    orr_buf_append(b, key, klen);
    if (gx_jw_str(b, s) != 0) {
        b->len = mark;
        b->data[mark] = 0;
    }
}

#define GX_JW_STR_MEMBER(b, k, s)                                                                  \
    gx_jw_str_member((b), ",\"" k "\":", sizeof(",\"" k "\":") - 1, (s))

/* v (0..99) as two digits at p. */
static inline void gx_jw_2digits(char *p, unsigned v)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";
    memcpy(p, pairs + 2 * v, 2);
}

/* gx_json_time's text: null for ms <= 0, else "YYYY-MM-DDTHH:MM:SSZ" (the
 * civil date computed here; years past 9999 go through gmtime/strftime). */
static void gx_jw_time(orr_buf *b, int64_t ms)
{
    if (ms <= 0) {
        orr_buf_append(b, "null", 4);
        return;
    }
    int64_t secs = ms / 1000, days = secs / 86400, sod = secs % 86400;
    int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    if (y > 9999) {
        json_t *t = gx_json_time(ms);
        orr_json_dump_buf(t, b);
        json_decref(t);
        return;
    }
    char s[22] = "\"0000-00-00T00:00:00Z\"";
    gx_jw_2digits(s + 1, (unsigned)y / 100);
    gx_jw_2digits(s + 3, (unsigned)y % 100);
    gx_jw_2digits(s + 6, (unsigned)m);
    gx_jw_2digits(s + 9, (unsigned)d);
    gx_jw_2digits(s + 12, (unsigned)(sod / 3600));
    gx_jw_2digits(s + 15, (unsigned)(sod / 60 % 60));
    gx_jw_2digits(s + 18, (unsigned)(sod % 60));
    orr_buf_append(b, s, sizeof s);
}

static void gx_jw_paused(orr_buf *b, const json_t *paused, int64_t task_id)
{
    GX_JW_KEY(b, "paused");
    json_t *p = NULL;
    if (paused && json_object_size(paused)) {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)task_id);
        p = json_object_get(paused, key);
    }
    if (p)
        orr_json_dump_buf(p, b);
    else
        orr_buf_append(b, "null", 4);
}

void gx_instance_write(orr_buf *b, const HL(Instance) * in, const json_t *paused)
{
    if ((in->params_json && *in->params_json) || in->n_upstreams || in->n_downstreams) {
        json_t *o = gx_instance_json(in);
        gx_paused_mark(o, paused, in->task_id);
        orr_json_dump_buf(o, b);
        json_decref(o);
        return;
    }
    const char *st = gx_state_name(in->state);
    orr_buf_reserve(b, 512);
    orr_buf_append_byte(b, '{');
    GX_JW_KEY1(b, "id");
    gx_jw_int(b, in->id);
    GX_JW_KEY(b, "task_id");
    gx_jw_int(b, in->task_id);
    GX_JW_STR_MEMBER(b, "task_name", in->task_name);
    GX_JW_KEY(b, "task_version");
    gx_jw_int(b, in->task_version);
    GX_JW_KEY(b, "schedule_time");
    gx_jw_time(b, in->schedule_time_ms);
    GX_JW_KEY(b, "state");
    if (!st || gx_jw_str(b, st) != 0)
        orr_buf_append(b, "null", 4);
    GX_JW_KEY(b, "attempt");
    gx_jw_int(b, in->attempt);
    if (in->executor && *in->executor)
        GX_JW_STR_MEMBER(b, "executor", in->executor);
    else {
        GX_JW_KEY(b, "executor");
        orr_buf_append(b, "null", 4);
    }
    GX_JW_KEY(b, "priority");
    gx_jw_int(b, in->priority);
    GX_JW_KEY(b, "created_at");
    gx_jw_time(b, in->created_at_ms);
    GX_JW_KEY(b, "updated_at");
    gx_jw_time(b, in->updated_at_ms);
    GX_JW_KEY(b, "started_at");
    gx_jw_time(b, in->started_at_ms);
    GX_JW_KEY(b, "finished_at");
    gx_jw_time(b, in->finished_at_ms);
    GX_JW_STR_MEMBER(b, "reason", in->reason ? in->reason : "");
    GX_JW_KEY(b, "exit_code");
    if (in->has_exit_code)
        gx_jw_int(b, in->exit_code);
    else
        orr_buf_append(b, "null", 4);
    GX_JW_KEY(b, "run_now");
    orr_buf_append(b, in->run_now ? "true" : "false", in->run_now ? 4 : 5);
    GX_JW_KEY(b, "ignore_upstreams");
    orr_buf_append(b, in->ignore_upstreams ? "true" : "false", in->ignore_upstreams ? 4 : 5);
    GX_JW_KEY(b, "backfill");
    if (in->backfill_id) {
        orr_buf_append_byte(b, '{');
        GX_JW_KEY1(b, "id");
        gx_jw_int(b, in->backfill_id);
        GX_JW_KEY(b, "cycle");
        gx_jw_time(b, in->backfill_cycle_ms);
        GX_JW_KEY(b, "max_cycles");
        gx_jw_int(b, (int)in->backfill_cycles);
        orr_buf_append_byte(b, '}');
    } else {
        orr_buf_append(b, "null", 4);
    }
    gx_jw_paused(b, paused, in->task_id);
    orr_buf_append_byte(b, '}');
}

void gx_instances_write(orr_buf *b, const HL(ListInstancesResponse) * rs, const json_t *paused)
{
    orr_buf_reserve(b, 64 + rs->n_instances * 560);
    orr_buf_append(b, "{\"items\":[", 10);
    for (size_t i = 0; i < rs->n_instances; i++) {
        if (i)
            orr_buf_append_byte(b, ',');
        gx_instance_write(b, rs->instances[i], paused);
    }
    orr_buf_append_byte(b, ']');
    if (rs->next_page_token && *rs->next_page_token)
        GX_JW_STR_MEMBER(b, "next_page_token", rs->next_page_token);
    else {
        GX_JW_KEY(b, "next_page_token");
        orr_buf_append(b, "null", 4);
    }
    orr_buf_append_byte(b, '}');
}
