/*
 * orr_notify.c - alert delivery's core: the table of channel kinds, the
 * request's life (prepare, perform or hand to a multi handle, classify,
 * free), outcome classification and back-off, the HMAC, and the helpers the
 * kinds share. The kinds themselves are in orr_notify_http.c (webhook, chat)
 * and orr_notify_email.c. The contract is in orr_notify.h.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "orr_alloc.h"
#include "orr_json.h"
#include "orr_notify_int.h"

static const orr_notify_ops *const orr_notify__kinds[] = {
    &orr_notify_webhook_ops,
    &orr_notify_email_ops,
    &orr_notify_chat_ops,
};
#define N_KINDS (sizeof orr_notify__kinds / sizeof orr_notify__kinds[0])

static const orr_notify_ops *orr_notify__find(const char *kind)
{
    for (size_t i = 0; kind && i < N_KINDS; i++)
        if (strcmp(orr_notify__kinds[i]->kind, kind) == 0)
            return orr_notify__kinds[i];
    return NULL;
}

int orr_notify_kind_known(const char *kind)
{
    return orr_notify__find(kind) != NULL;
}

static pthread_once_t orr_notify__once = PTHREAD_ONCE_INIT;
static void orr_notify__global(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void orr_notify_global_init(void)
{
    pthread_once(&orr_notify__once, orr_notify__global);
}

/* Parse config_json as an object and find its kind's ops. */
static orr_status orr_notify__parse(const char *kind, const char *config_json,
                                    const orr_notify_ops **ops, json_t **config, orr_err *err)
{
    *ops = orr_notify__find(kind);
    if (!*ops)
        return orr_err_set(err, ORR_EINVAL, "kind",
                           "unknown channel kind \"%.40s\" (webhook, email or chat)",
                           kind ? kind : "");
    if (!config_json || !*config_json)
        return orr_err_set(err, ORR_EINVAL, "config", "missing");
    orr_status rc = orr_json_parse(config_json, strlen(config_json), config, err);
    if (rc != ORR_OK) {
        snprintf(err->field, sizeof err->field, "config");
        return rc;
    }
    if (!json_is_object(*config)) {
        json_decref(*config);
        *config = NULL;
        return orr_err_set(err, ORR_EINVAL, "config", "must be a JSON object");
    }
    return ORR_OK;
}

orr_status orr_notify_check_config(const char *kind, const char *config_json, orr_err *err)
{
    const orr_notify_ops *ops;
    json_t *config = NULL;
    orr_status rc = orr_notify__parse(kind, config_json, &ops, &config, err);
    if (rc == ORR_OK)
        rc = ops->check(config, err);
    json_decref(config);
    return rc;
}

static size_t orr_notify__write_cb(char *p, size_t size, size_t n, void *ud)
{
    orr_notify_req *r = ud;
    size_t len = size * n;
    if (r->resp.len < ORR_NOTIFY__RESP_MAX) {
        size_t keep = ORR_NOTIFY__RESP_MAX - r->resp.len;
        orr_buf_append(&r->resp, p, len < keep ? len : keep);
    }
    return len;
}

orr_status orr_notify_prepare(const char *kind, const char *config_json, const orr_notify_alert *a,
                              const orr_notify_opts *o, orr_notify_req **out, orr_err *err)
{
    static const orr_notify_opts none = {NULL, 0, 0};
    const orr_notify_ops *ops;
    json_t *config = NULL;
    orr_notify_req *r = NULL;
    *out = NULL;
    orr_notify_global_init();
    orr_status rc = orr_notify__parse(kind, config_json, &ops, &config, err);
    if (rc != ORR_OK)
        goto done;
    if ((rc = ops->check(config, err)) != ORR_OK)
        goto done;
    r = orr_xcalloc(1, sizeof *r);
    r->h = orr_xcheck(curl_easy_init());
    curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, orr_notify__write_cb);
    curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
    r->backoff_base_ms = o && o->backoff_base_ms > 0 ? o->backoff_base_ms : 1000;
    if (o && o->ca_file && *o->ca_file)
        curl_easy_setopt(r->h, CURLOPT_CAINFO, o->ca_file);
    if ((rc = ops->build(r, config, a, o ? o : &none, err)) != ORR_OK)
        goto done;
    *out = r;
    r = NULL;
done:
    orr_notify_req_free(r);
    json_decref(config);
    return rc;
}

void *orr_notify_req_handle(orr_notify_req *r)
{
    return r->h;
}

const char *orr_notify_req_body(const orr_notify_req *r, size_t *len)
{
    if (len)
        *len = r->body.len;
    return r->body.data ? r->body.data : "";
}

const char *orr_notify_req_header(const orr_notify_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_hdr; i++)
        if (strcasecmp(r->hname[i], name) == 0)
            return r->hvalue[i];
    return NULL;
}

void orr_notify_req_free(orr_notify_req *r)
{
    if (!r)
        return;
    if (r->h)
        curl_easy_cleanup(r->h);
    curl_slist_free_all(r->headers);
    curl_slist_free_all(r->rcpt);
    for (size_t i = 0; i < r->n_hdr; i++) {
        free(r->hname[i]);
        free(r->hvalue[i]);
    }
    orr_buf_free(&r->body);
    orr_buf_free(&r->resp);
    free(r);
}

/* ------------------------------------------------------------ outcomes */

orr_notify_outcome orr_notify_classify(int smtp, int curl_code, long code)
{
    switch ((CURLcode)curl_code) {
    case CURLE_OK:
        break;
    /* what no retry can mend: the address, the credentials, a server
     * without the STARTTLS that was asked for */
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_LOGIN_DENIED:
    case CURLE_USE_SSL_FAILED:
        return ORR_NOTIFY_FAILED;
    default:
        /* SMTP: a permanent reply (5xx) to MAIL FROM, RCPT TO or DATA */
        if (smtp && code >= 500 && code <= 599)
            return ORR_NOTIFY_FAILED;
        return ORR_NOTIFY_RETRY;
    }
    if (smtp)
        return ORR_NOTIFY_DELIVERED;
    if (code >= 200 && code <= 299)
        return ORR_NOTIFY_DELIVERED;
    if (code >= 400 && code <= 499 && code != 408 && code != 429)
        return ORR_NOTIFY_FAILED;
    return ORR_NOTIFY_RETRY;
}

int64_t orr_notify_backoff_from(int64_t base_ms, int attempts)
{
    if (base_ms < 1)
        base_ms = 1;
    if (attempts < 1)
        attempts = 1;
    int64_t ms = base_ms;
    for (int i = 1; i < attempts && ms < ORR_NOTIFY_BACKOFF_CAP; i++)
        ms *= 2;
    return ms < ORR_NOTIFY_BACKOFF_CAP ? ms : ORR_NOTIFY_BACKOFF_CAP;
}

int64_t orr_notify_backoff_ms(int attempts)
{
    return orr_notify_backoff_from(1000, attempts);
}

/* The response body's first line, printable, at most n bytes. */
static void orr_notify__resp_line(const orr_notify_req *r, char *out, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; i < r->resp.len && j + 1 < n; i++) {
        unsigned char c = (unsigned char)r->resp.data[i];
        if (c == '\n' || c == '\r')
            break;
        out[j++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    out[j] = '\0';
}

void orr_notify_req_outcome(orr_notify_req *r, int curl_code, int attempts, int64_t now_ms,
                            orr_notify_result *res)
{
    memset(res, 0, sizeof *res);
    long code = 0;
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &code);
    res->code = code;
    res->outcome = orr_notify_classify(r->smtp, curl_code, code);
    if (res->outcome == ORR_NOTIFY_DELIVERED)
        return;
    if (curl_code != CURLE_OK) {
        const char *why = r->errbuf[0] ? r->errbuf : curl_easy_strerror((CURLcode)curl_code);
        if (code)
            snprintf(res->error, sizeof res->error, "%s (reply %ld)", why, code);
        else
            snprintf(res->error, sizeof res->error, "%s", why);
    } else {
        char line[200];
        orr_notify__resp_line(r, line, sizeof line);
        snprintf(res->error, sizeof res->error, "HTTP %ld%s%s", code, line[0] ? ": " : "", line);
    }
    if (res->outcome == ORR_NOTIFY_RETRY) {
        if (attempts >= ORR_NOTIFY_MAX_ATTEMPTS) {
            res->outcome = ORR_NOTIFY_FAILED;
            size_t l = strlen(res->error);
            snprintf(res->error + l, sizeof res->error - l, " (after %d attempts)", attempts);
        } else {
            int64_t wait = orr_notify_backoff_from(r->backoff_base_ms, attempts);
            /* a receiver's Retry-After (429, 503) is kept, up to the cap */
            curl_off_t after = 0;
            if (!r->smtp && curl_easy_getinfo(r->h, CURLINFO_RETRY_AFTER, &after) == CURLE_OK &&
                after > 0) {
                int64_t ms = after > ORR_NOTIFY_BACKOFF_CAP / 1000 ? ORR_NOTIFY_BACKOFF_CAP
                                                                   : (int64_t)after * 1000;
                if (ms > wait)
                    wait = ms;
            }
            res->retry_at_ms = now_ms + wait;
        }
    }
}

void orr_notify_perform(orr_notify_req *r, int attempts, int64_t now_ms, orr_notify_result *res)
{
    CURLcode cc = curl_easy_perform(r->h);
    orr_notify_req_outcome(r, (int)cc, attempts, now_ms, res);
}

void orr_notify_hmac_hex(const char *key, size_t key_len, const void *data, size_t n, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    static const char hex[] = "0123456789abcdef";
    /* an empty key is a key too: HMAC() takes a NULL key as "reuse the last" */
    static const unsigned char empty = 0;
    if (!HMAC(EVP_sha256(), key_len ? (const void *)key : (const void *)&empty, (int)key_len, data,
              n, md, &md_len))
        md_len = 0;
    for (unsigned int i = 0; i < md_len && i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * (md_len < 32 ? md_len : 32)] = '\0';
}

/* ------------------------------------------------------------ helpers */

const char *orr_notify__s(const char *s)
{
    return s ? s : "";
}

static int orr_notify__clean(const char *s)
{
    for (; *s; s++)
        if (*s == '\r' || *s == '\n')
            return 0;
    return 1;
}

orr_status orr_notify__check_header(const char *name, const char *value, const char *field,
                                    orr_err *err)
{
    if (!*name)
        return orr_err_set(err, ORR_EINVAL, field, "empty header name");
    for (const char *p = name; *p; p++)
        if (!(isalnum((unsigned char)*p) || strchr("!#$%&'*+-.^_`|~", *p)))
            return orr_err_set(err, ORR_EINVAL, field, "header name \"%.40s\" is not a token",
                               name);
    if (!orr_notify__clean(value))
        return orr_err_set(err, ORR_EINVAL, field, "header %.40s: value holds a line break", name);
    return ORR_OK;
}

orr_status orr_notify__add_header(orr_notify_req *r, const char *name, const char *value, int http,
                                  const char *field, orr_err *err)
{
    if (r->n_hdr >= ORR_NOTIFY__HEADER_MAX)
        return orr_err_set(err, ORR_EINVAL, field, "more than %d headers",
                           ORR_NOTIFY__HEADER_MAX - 8);
    orr_status rc = orr_notify__check_header(name, value, field, err);
    if (rc != ORR_OK)
        return rc;
    r->hname[r->n_hdr] = orr_xstrdup(name);
    r->hvalue[r->n_hdr] = orr_xstrdup(value);
    r->n_hdr++;
    if (http) {
        orr_buf line = ORR_BUF_INIT;
        orr_buf_appendf(&line, "%s: %s", name, value);
        r->headers = orr_xcheck(curl_slist_append(r->headers, orr_buf_cstr(&line)));
        orr_buf_free(&line);
    }
    return ORR_OK;
}

orr_status orr_notify__timeout(const json_t *config, int def_s, const orr_notify_opts *o, long *ms,
                               orr_err *err)
{
    int64_t s = def_s;
    orr_status rc =
        orr_json_get_int(config, "config", "timeout_s", 0, 1, ORR_NOTIFY_TIMEOUT_MAX, &s, err);
    if (rc != ORR_OK)
        return rc;
    *ms = (long)s * 1000;
    if (o && o->timeout_ms_max > 0 && *ms > o->timeout_ms_max)
        *ms = o->timeout_ms_max;
    return ORR_OK;
}

orr_status orr_notify__http_url(const json_t *config, const char *key, const char **url,
                                orr_err *err)
{
    orr_status rc = orr_json_get_str(config, "config", key, 1, url, err);
    if (rc != ORR_OK)
        return rc;
    char field[64];
    snprintf(field, sizeof field, "config.%s", key);
    if (strncasecmp(*url, "http://", 7) != 0 && strncasecmp(*url, "https://", 8) != 0)
        return orr_err_set(err, ORR_EINVAL, field, "must start with http:// or https://");
    if (strlen(*url) > 2048)
        return orr_err_set(err, ORR_EINVAL, field, "longer than 2048 characters");
    for (const char *p = *url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return orr_err_set(err, ORR_EINVAL, field, "holds a space or a control character");
    return ORR_OK;
}

json_t *orr_notify__details(const orr_notify_alert *a)
{
    json_t *d = NULL;
    if (a->details_json && *a->details_json)
        d = json_loads(a->details_json, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(d)) {
        json_decref(d);
        d = orr_xcheck(json_object());
    }
    return d;
}

const char *orr_notify__time(int64_t ms, char *buf, size_t n)
{
    if (ms <= 0) {
        snprintf(buf, n, "%s", "");
        return buf;
    }
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    return buf;
}

void orr_notify__title(const orr_notify_alert *a, orr_buf *out)
{
    const char *sev = a->severity && *a->severity ? a->severity : "warning";
    const char *sum = a->summary && *a->summary ? a->summary : orr_notify__s(a->event);
    orr_buf_appendf(out, "[Orrery %s] ", sev);
    /* one line: line breaks of the summary become spaces */
    for (const char *p = sum; *p; p++)
        orr_buf_append_byte(out, (*p == '\r' || *p == '\n' || *p == '\t') ? ' ' : *p);
}

void orr_notify__text(const orr_notify_alert *a, const char *nl, orr_buf *out)
{
    char t1[32], t2[32];
    orr_buf_appendf(out, "%s%s", orr_notify__s(a->summary), nl);
    orr_buf_appendf(out, "%s", nl);
    orr_buf_appendf(out, "rule: %s%s", orr_notify__s(a->rule), nl);
    orr_buf_appendf(out, "event: %s%s", orr_notify__s(a->event), nl);
    orr_buf_appendf(out, "severity: %s%s", orr_notify__s(a->severity), nl);
    orr_buf_appendf(out, "scope: %s %s%s", orr_notify__s(a->scope_kind), orr_notify__s(a->scope),
                    nl);
    orr_buf_appendf(out, "count: %lld%s", (long long)a->count, nl);
    orr_buf_appendf(out, "first: %s%s", orr_notify__time(a->first_at_ms, t1, sizeof t1), nl);
    orr_buf_appendf(out, "last: %s%s", orr_notify__time(a->last_at_ms, t2, sizeof t2), nl);
    if (a->task_id)
        orr_buf_appendf(out, "task: %lld%s", (long long)a->task_id, nl);
    if (a->instance_id)
        orr_buf_appendf(out, "instance: %lld%s", (long long)a->instance_id, nl);
    orr_buf_appendf(out, "dedup key: %s:%d%s", orr_notify__s(a->dedup_key), a->seq, nl);
    if (a->url && *a->url)
        orr_buf_appendf(out, "%s%s", a->url, nl);
}

void orr_notify__http_setup(orr_notify_req *r, const char *url, long timeout_ms,
                            const orr_notify_opts *o)
{
    (void)o;
    curl_easy_setopt(r->h, CURLOPT_URL, url);
    curl_easy_setopt(r->h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(r->h, CURLOPT_POST, 1L);
    curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, r->body.data ? r->body.data : "");
    curl_easy_setopt(r->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
    curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(r->h, CURLOPT_USERAGENT, "Orrery-Alerts/1");
    curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
    curl_easy_setopt(r->h, CURLOPT_FOLLOWLOCATION, 0L);
}
