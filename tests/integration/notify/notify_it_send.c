/*
 * notify_it_send.c - sends one alert message through orr_notify, for the
 * tests that run real receivers (test_notify.py):
 *
 *   notify_it_send KIND CONFIG_JSON ALERT_JSON [CA_FILE] [ATTEMPTS]
 *
 * ALERT_JSON holds the orr_notify_alert fields by name (details as an
 * object). Prints {"outcome", "code", "error", "retry_in_ms"} on one line;
 * exit 0 when the attempt ran (whatever its outcome), 2 when the request
 * could not be built (the error names the field).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "orr_notify.h"

static const char *s_of(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int64_t i_of(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: notify_it_send KIND CONFIG_JSON ALERT_JSON [CA_FILE] [ATTEMPTS]\n");
        return 2;
    }
    json_t *j = json_loads(argv[3], 0, NULL);
    if (!json_is_object(j)) {
        fprintf(stderr, "notify_it_send: ALERT_JSON is not an object\n");
        return 2;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    char *details = json_dumps(json_object_get(j, "details"), JSON_COMPACT);
    orr_notify_alert a = {
        .alert_id = i_of(j, "alert_id"),
        .delivery_id = i_of(j, "delivery_id"),
        .dedup_key = s_of(j, "dedup_key"),
        .seq = (int)i_of(j, "seq"),
        .rule = s_of(j, "rule"),
        .event = s_of(j, "event"),
        .severity = s_of(j, "severity"),
        .scope_kind = s_of(j, "scope_kind"),
        .scope = s_of(j, "scope"),
        .summary = s_of(j, "summary"),
        .count = i_of(j, "count"),
        .first_at_ms = i_of(j, "first_at_ms"),
        .last_at_ms = i_of(j, "last_at_ms"),
        .task_id = i_of(j, "task_id"),
        .instance_id = i_of(j, "instance_id"),
        .details_json = details,
        .url = s_of(j, "url"),
        .now_ms = now,
    };
    orr_notify_opts o = {argc > 4 ? argv[4] : NULL, 0, 0};
    int attempts = argc > 5 ? atoi(argv[5]) : 1;
    orr_notify_req *r = NULL;
    orr_err err;
    int rc = 0;
    if (orr_notify_prepare(argv[1], argv[2], &a, &o, &r, &err) != ORR_OK) {
        json_t *out = json_pack("{s:s, s:s, s:s}", "outcome", "invalid", "field", err.field,
                                "error", err.msg);
        char *t = json_dumps(out, JSON_COMPACT);
        printf("%s\n", t);
        free(t);
        json_decref(out);
        rc = 2;
        goto done;
    }
    orr_notify_result res;
    orr_notify_perform(r, attempts, now, &res);
    static const char *const names[] = {"delivered", "retry", "failed"};
    json_t *out = json_pack("{s:s, s:I, s:s, s:I}", "outcome", names[res.outcome], "code",
                            (json_int_t)res.code, "error", res.error, "retry_in_ms",
                            (json_int_t)(res.retry_at_ms ? res.retry_at_ms - now : 0));
    char *t = json_dumps(out, JSON_COMPACT);
    printf("%s\n", t);
    free(t);
    json_decref(out);
done:
    orr_notify_req_free(r);
    free(details);
    json_decref(j);
    return rc;
}
