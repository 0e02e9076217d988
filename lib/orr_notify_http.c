/*
 * orr_notify_http.c - the channel kinds that POST JSON over HTTP(S):
 *
 *   webhook  the alert as a JSON object, signed:
 *              X-Orrery-Signature: sha256=<hex HMAC-SHA256 of the body>
 *              X-Orrery-Dedup-Key: <dedup key>:<seq>   (the same on every
 *                                   retry and every resend after a crash)
 *              X-Orrery-Delivery: <delivery id>
 *            plus the channel's own "headers" (which may not replace those).
 *   chat     {"text": "..."} (Slack) or a MessageCard (Teams), with the
 *            same dedup headers.
 */
#include <string.h>
#include <strings.h>

#include "orr_alloc.h"
#include "orr_json.h"
#include "orr_notify_int.h"

/* ------------------------------------------------------------ webhook */

static orr_status webhook_check(const json_t *config, orr_err *err)
{
    const char *url, *secret = "";
    json_t *headers = NULL;
    long ms;
    orr_status rc;
    if ((rc = orr_notify__http_url(config, "url", &url, err)) != ORR_OK)
        return rc;
    if ((rc = orr_json_get_str(config, "config", "secret", 0, &secret, err)) != ORR_OK)
        return rc;
    if ((rc = orr_json_get_obj(config, "config", "headers", 0, &headers, err)) != ORR_OK)
        return rc;
    if (headers) {
        const char *k;
        json_t *v;
        json_object_foreach(headers, k, v)
        {
            char field[200];
            orr_json_path(field, sizeof field, "config.headers", k);
            if (!json_is_string(v))
                return orr_err_set(err, ORR_EINVAL, field, "must be a string");
            if (strncasecmp(k, "X-Orrery-", 9) == 0 || strcasecmp(k, "Content-Type") == 0 ||
                strcasecmp(k, "Content-Length") == 0 || strcasecmp(k, "Host") == 0)
                return orr_err_set(err, ORR_EINVAL, field, "is set by Orrery");
            orr_status hrc = orr_notify__check_header(k, json_string_value(v), field, err);
            if (hrc != ORR_OK)
                return hrc;
        }
        if (json_object_size(headers) > ORR_NOTIFY__HEADER_MAX - 8)
            return orr_err_set(err, ORR_EINVAL, "config.headers", "more than %d headers",
                               ORR_NOTIFY__HEADER_MAX - 8);
    }
    return orr_notify__timeout(config, 10, NULL, &ms, err);
}

static void dedup_value(const orr_notify_alert *a, char *buf, size_t n)
{
    snprintf(buf, n, "%s:%d", orr_notify__s(a->dedup_key), a->seq);
}

/* The dedup and delivery headers of every HTTP kind. */
static orr_status common_headers(orr_notify_req *r, const orr_notify_alert *a, orr_err *err)
{
    char dk[600], id[32];
    dedup_value(a, dk, sizeof dk);
    snprintf(id, sizeof id, "%lld", (long long)a->delivery_id);
    orr_status rc = orr_notify__add_header(r, "Content-Type", "application/json", 1, "config", err);
    if (rc == ORR_OK)
        rc = orr_notify__add_header(r, "X-Orrery-Dedup-Key", dk, 1, "dedup_key", err);
    if (rc == ORR_OK)
        rc = orr_notify__add_header(r, "X-Orrery-Delivery", id, 1, "delivery_id", err);
    /* no "Expect: 100-continue" round trip for a small body */
    if (rc == ORR_OK)
        r->headers = orr_xcheck(curl_slist_append(r->headers, "Expect:"));
    return rc;
}

static void set_str(json_t *o, const char *k, const char *v)
{
    json_object_set_new(o, k, orr_xcheck(json_string(orr_notify__s(v))));
}

static orr_status webhook_build(orr_notify_req *r, const json_t *config, const orr_notify_alert *a,
                                const orr_notify_opts *o, orr_err *err)
{
    const char *url, *secret = "";
    json_t *headers = NULL;
    long ms;
    orr_status rc;
    if ((rc = orr_notify__http_url(config, "url", &url, err)) != ORR_OK ||
        (rc = orr_json_get_str(config, "config", "secret", 0, &secret, err)) != ORR_OK ||
        (rc = orr_json_get_obj(config, "config", "headers", 0, &headers, err)) != ORR_OK ||
        (rc = orr_notify__timeout(config, 10, o, &ms, err)) != ORR_OK)
        return rc;

    char t1[32], t2[32];
    json_t *b = orr_xcheck(json_object());
    json_object_set_new(b, "alert_id", orr_xcheck(json_integer(a->alert_id)));
    json_object_set_new(b, "delivery_id", orr_xcheck(json_integer(a->delivery_id)));
    set_str(b, "dedup_key", a->dedup_key);
    json_object_set_new(b, "seq", orr_xcheck(json_integer(a->seq)));
    set_str(b, "rule", a->rule);
    set_str(b, "event", a->event);
    set_str(b, "severity", a->severity);
    set_str(b, "scope_kind", a->scope_kind);
    set_str(b, "scope", a->scope);
    set_str(b, "summary", a->summary);
    json_object_set_new(b, "count", orr_xcheck(json_integer(a->count)));
    set_str(b, "first_at", orr_notify__time(a->first_at_ms, t1, sizeof t1));
    set_str(b, "last_at", orr_notify__time(a->last_at_ms, t2, sizeof t2));
    json_object_set_new(b, "task_id",
                        a->task_id ? orr_xcheck(json_integer(a->task_id)) : json_null());
    json_object_set_new(b, "instance_id",
                        a->instance_id ? orr_xcheck(json_integer(a->instance_id)) : json_null());
    json_object_set_new(b, "details", orr_notify__details(a));
    set_str(b, "url", a->url);
    orr_json_dump_buf(b, &r->body);
    json_decref(b);

    char sig[80], hex[65];
    orr_notify_hmac_hex(secret, strlen(secret), r->body.data, r->body.len, hex);
    snprintf(sig, sizeof sig, "sha256=%s", hex);
    if ((rc = common_headers(r, a, err)) != ORR_OK ||
        (rc = orr_notify__add_header(r, "X-Orrery-Signature", sig, 1, "config.secret", err)) !=
            ORR_OK)
        return rc;
    if (headers) {
        const char *k;
        json_t *v;
        json_object_foreach(headers, k, v)
        {
            char field[200];
            orr_json_path(field, sizeof field, "config.headers", k);
            if ((rc = orr_notify__add_header(r, k, json_string_value(v), 1, field, err)) != ORR_OK)
                return rc;
        }
    }
    orr_notify__http_setup(r, url, ms, o);
    return ORR_OK;
}

const orr_notify_ops orr_notify_webhook_ops = {"webhook", webhook_check, webhook_build};

/* ------------------------------------------------------------ chat */

static orr_status chat_format(const json_t *config, int *teams, orr_err *err)
{
    const char *f = "slack";
    orr_status rc = orr_json_get_str(config, "config", "format", 0, &f, err);
    if (rc != ORR_OK)
        return rc;
    if (strcmp(f, "slack") != 0 && strcmp(f, "teams") != 0)
        return orr_err_set(err, ORR_EINVAL, "config.format", "must be \"slack\" or \"teams\"");
    *teams = strcmp(f, "teams") == 0;
    return ORR_OK;
}

static orr_status chat_check(const json_t *config, orr_err *err)
{
    const char *url;
    int teams;
    long ms;
    orr_status rc;
    if ((rc = orr_notify__http_url(config, "url", &url, err)) != ORR_OK ||
        (rc = chat_format(config, &teams, err)) != ORR_OK)
        return rc;
    return orr_notify__timeout(config, 10, NULL, &ms, err);
}

static orr_status chat_build(orr_notify_req *r, const json_t *config, const orr_notify_alert *a,
                             const orr_notify_opts *o, orr_err *err)
{
    const char *url;
    int teams;
    long ms;
    orr_status rc;
    if ((rc = orr_notify__http_url(config, "url", &url, err)) != ORR_OK ||
        (rc = chat_format(config, &teams, err)) != ORR_OK ||
        (rc = orr_notify__timeout(config, 10, o, &ms, err)) != ORR_OK)
        return rc;
    orr_buf title = ORR_BUF_INIT, text = ORR_BUF_INIT;
    orr_notify__title(a, &title);
    orr_buf_appendf(&text, "%s\n", orr_buf_cstr(&title));
    /* the details after the summary, which the title already carries */
    orr_notify_alert rest = *a;
    rest.summary = NULL;
    orr_notify__text(&rest, "\n", &text);
    json_t *b = orr_xcheck(json_object());
    if (teams) {
        set_str(b, "@type", "MessageCard");
        set_str(b, "@context", "https://schema.org/extensions");
        set_str(b, "summary", orr_buf_cstr(&title));
        set_str(b, "title", orr_buf_cstr(&title));
        set_str(b, "themeColor",
                a->severity && strcmp(a->severity, "critical") == 0 ? "D7263D"
                : a->severity && strcmp(a->severity, "info") == 0   ? "2E86AB"
                                                                    : "F4A300");
        set_str(b, "text", orr_buf_cstr(&text));
    } else {
        set_str(b, "text", orr_buf_cstr(&text));
    }
    orr_json_dump_buf(b, &r->body);
    json_decref(b);
    orr_buf_free(&title);
    orr_buf_free(&text);
    if ((rc = common_headers(r, a, err)) != ORR_OK)
        return rc;
    orr_notify__http_setup(r, url, ms, o);
    return ORR_OK;
}

const orr_notify_ops orr_notify_chat_ops = {"chat", chat_check, chat_build};
