/*
 * orr_notify_email.c - the email channel kind: one plain-text RFC 5322 mail
 * per message, sent with libcurl's SMTP (smtp:// or smtps://; STARTTLS
 * required with CURLUSESSL_ALL when "starttls" is true; AUTH when a
 * username is set).
 *
 * The mail's Message-ID is derived from the alert's dedup key and the
 * message's seq: <orrery.<32 hex of SHA-256(dedup key)>.<seq>@<from's
 * domain>>, so a resend after a crash carries the same Message-ID and a
 * mail store or a person can drop the second copy. X-Orrery-Dedup-Key and
 * X-Orrery-Delivery carry the same values as a webhook's headers.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "orr_alloc.h"
#include "orr_json.h"
#include "orr_notify_int.h"

#define EMAIL_TO_MAX   100
#define EMAIL_ADDR_MAX 254
#define EMAIL_LINE_MAX 900 /* body lines are folded past this (RFC 5322: 998) */

/* A bare address: local@domain, printable ASCII without spaces, quotes,
 * angle brackets or commas. */
static int email_addr_ok(const char *s)
{
    size_t n = strlen(s);
    const char *at = strchr(s, '@');
    if (n == 0 || n > EMAIL_ADDR_MAX || !at || at == s || !at[1] || strchr(at + 1, '@'))
        return 0;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || strchr("<>,;\"()[]\\", *p))
            return 0;
    return 1;
}

static orr_status email_fields(const json_t *config, const char **url, int *starttls,
                               const char **user, const char **pass, const char **from, json_t **to,
                               orr_err *err)
{
    orr_status rc;
    *starttls = 0;
    *user = *pass = "";
    if ((rc = orr_json_get_str(config, "config", "smtp_url", 1, url, err)) != ORR_OK)
        return rc;
    if (strncasecmp(*url, "smtp://", 7) != 0 && strncasecmp(*url, "smtps://", 8) != 0)
        return orr_err_set(err, ORR_EINVAL, "config.smtp_url",
                           "must start with smtp:// or smtps://");
    for (const char *p = *url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return orr_err_set(err, ORR_EINVAL, "config.smtp_url",
                               "holds a space or a control character");
    if ((rc = orr_json_get_bool(config, "config", "starttls", 0, starttls, err)) != ORR_OK ||
        (rc = orr_json_get_str(config, "config", "username", 0, user, err)) != ORR_OK ||
        (rc = orr_json_get_str(config, "config", "password", 0, pass, err)) != ORR_OK ||
        (rc = orr_json_get_str(config, "config", "from", 1, from, err)) != ORR_OK ||
        (rc = orr_json_get_array(config, "config", "to", 1, to, err)) != ORR_OK)
        return rc;
    if (!email_addr_ok(*from))
        return orr_err_set(err, ORR_EINVAL, "config.from", "not an email address (a@b.example)");
    size_t n = json_array_size(*to);
    if (n == 0 || n > EMAIL_TO_MAX)
        return orr_err_set(err, ORR_EINVAL, "config.to", "must list 1 to %d addresses",
                           EMAIL_TO_MAX);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(*to, i);
        if (!json_is_string(v) || !email_addr_ok(json_string_value(v))) {
            char field[64];
            return orr_err_set(err, ORR_EINVAL,
                               orr_json_index_path(field, sizeof field, "config.to", i),
                               "not an email address (a@b.example)");
        }
    }
    return ORR_OK;
}

static orr_status email_check(const json_t *config, orr_err *err)
{
    const char *url, *user, *pass, *from;
    int starttls;
    json_t *to;
    long ms;
    orr_status rc = email_fields(config, &url, &starttls, &user, &pass, &from, &to, err);
    return rc != ORR_OK ? rc : orr_notify__timeout(config, 30, NULL, &ms, err);
}

/* RFC 5322 date in UTC: "Tue, 01 Dec 2026 23:38:14 +0000" (no locale). */
static void email_date(int64_t ms, char *buf, size_t n)
{
    static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const mo[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t s = ms > 0 ? (time_t)(ms / 1000) : time(NULL);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, n, "%s, %02d %s %04d %02d:%02d:%02d +0000", wd[tm.tm_wday], tm.tm_mday,
             mo[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* The subject as is when it is ASCII, else RFC 2047 encoded words (base64
 * of at most 45 bytes each, cut between UTF-8 characters), folded. */
static void email_subject(const char *s, orr_buf *out)
{
    int ascii = 1;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p >= 0x80)
            ascii = 0;
    if (ascii) {
        orr_buf_append_str(out, s);
        return;
    }
    size_t n = strlen(s), i = 0;
    while (i < n) {
        size_t take = n - i < 45 ? n - i : 45;
        /* do not cut a multi-byte character: back off continuation bytes */
        while (take > 1 && i + take < n && ((unsigned char)s[i + take] & 0xC0) == 0x80)
            take--;
        unsigned char b64[64];
        int len = EVP_EncodeBlock(b64, (const unsigned char *)s + i, (int)take);
        if (i)
            orr_buf_append_str(out, "\r\n ");
        orr_buf_appendf(out, "=?UTF-8?B?%.*s?=", len, (const char *)b64);
        i += take;
    }
}

/* Append text with every line break as CRLF and lines folded past
 * EMAIL_LINE_MAX bytes. */
static void email_body_text(const char *s, orr_buf *out)
{
    size_t col = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '\r' || *p == '\n') {
            if (*p == '\r' && p[1] == '\n')
                p++;
            orr_buf_append_str(out, "\r\n");
            col = 0;
            continue;
        }
        if (col >= EMAIL_LINE_MAX) {
            orr_buf_append_str(out, "\r\n");
            col = 0;
        }
        orr_buf_append_byte(out, *p);
        col++;
    }
}

/* The mail headers go into the body (and into r's header list, for tests). */
static orr_status email_header(orr_notify_req *r, const char *name, const char *value, orr_err *err)
{
    orr_status rc = orr_notify__add_header(r, name, value, 0, name, err);
    if (rc == ORR_OK)
        orr_buf_appendf(&r->body, "%s: %s\r\n", name, value);
    return rc;
}

static size_t email_read_cb(char *p, size_t size, size_t n, void *ud)
{
    orr_notify_req *r = ud;
    size_t left = r->body.len - r->read_off, room = size * n;
    size_t take = left < room ? left : room;
    memcpy(p, r->body.data + r->read_off, take);
    r->read_off += take;
    return take;
}

static orr_status email_build(orr_notify_req *r, const json_t *config, const orr_notify_alert *a,
                              const orr_notify_opts *o, orr_err *err)
{
    const char *url, *user, *pass, *from;
    int starttls;
    json_t *to;
    long ms;
    orr_status rc = email_fields(config, &url, &starttls, &user, &pass, &from, &to, err);
    if (rc != ORR_OK || (rc = orr_notify__timeout(config, 30, o, &ms, err)) != ORR_OK)
        return rc;
    r->smtp = 1;

    orr_buf v = ORR_BUF_INIT;
    char date[64], id[32];
    email_date(a->now_ms, date, sizeof date);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    const char *key = orr_notify__s(a->dedup_key);
    EVP_Digest(key, strlen(key), md, &md_len, EVP_sha256(), NULL);
    if ((rc = email_header(r, "Date", date, err)) != ORR_OK ||
        (rc = email_header(r, "From", from, err)) != ORR_OK)
        goto done;
    for (size_t i = 0; i < json_array_size(to); i++) {
        const char *addr = json_string_value(json_array_get(to, i));
        orr_buf_appendf(&v, "%s%s", i ? ", " : "", addr);
        char rcpt[EMAIL_ADDR_MAX + 3];
        snprintf(rcpt, sizeof rcpt, "<%s>", addr);
        r->rcpt = orr_xcheck(curl_slist_append(r->rcpt, rcpt));
    }
    if ((rc = email_header(r, "To", orr_buf_cstr(&v), err)) != ORR_OK)
        goto done;
    orr_buf_reset(&v);
    orr_notify__title(a, &v);
    orr_buf subject = ORR_BUF_INIT;
    email_subject(orr_buf_cstr(&v), &subject);
    /* folded words hold CRLF SP on purpose: written straight into the body */
    rc = orr_notify__add_header(r, "Subject", orr_buf_cstr(&v), 0, "summary", err);
    if (rc == ORR_OK)
        orr_buf_appendf(&r->body, "Subject: %s\r\n", orr_buf_cstr(&subject));
    orr_buf_free(&subject);
    if (rc != ORR_OK)
        goto done;
    orr_buf_reset(&v);
    orr_buf_append_str(&v, "<orrery.");
    for (unsigned int i = 0; i < 16 && i < md_len; i++)
        orr_buf_appendf(&v, "%02x", md[i]);
    orr_buf_appendf(&v, ".%d@%s>", a->seq, strchr(from, '@') + 1);
    if ((rc = email_header(r, "Message-ID", orr_buf_cstr(&v), err)) != ORR_OK)
        goto done;
    orr_buf_reset(&v);
    orr_buf_appendf(&v, "%s:%d", key, a->seq);
    snprintf(id, sizeof id, "%lld", (long long)a->delivery_id);
    if ((rc = email_header(r, "X-Orrery-Dedup-Key", orr_buf_cstr(&v), err)) != ORR_OK ||
        (rc = email_header(r, "X-Orrery-Delivery", id, err)) != ORR_OK ||
        (rc = email_header(r, "MIME-Version", "1.0", err)) != ORR_OK ||
        (rc = email_header(r, "Content-Type", "text/plain; charset=utf-8", err)) != ORR_OK ||
        (rc = email_header(r, "Content-Transfer-Encoding", "8bit", err)) != ORR_OK)
        goto done;
    orr_buf_append_str(&r->body, "\r\n");
    orr_buf_reset(&v);
    orr_notify__text(a, "\n", &v);
    email_body_text(orr_buf_cstr(&v), &r->body);

    orr_buf_reset(&v);
    orr_buf_appendf(&v, "<%s>", from);
    curl_easy_setopt(r->h, CURLOPT_URL, url);
    curl_easy_setopt(r->h, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(r->h, CURLOPT_MAIL_FROM, orr_buf_cstr(&v)); /* copied by libcurl */
    curl_easy_setopt(r->h, CURLOPT_MAIL_RCPT, r->rcpt);
    curl_easy_setopt(r->h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(r->h, CURLOPT_READFUNCTION, email_read_cb);
    curl_easy_setopt(r->h, CURLOPT_READDATA, r);
    curl_easy_setopt(r->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body.len);
    curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, ms < 10000 ? ms : 10000L);
    /* The server's certificate is always verified (a private CA: [kepler]
     * notify_ca_file); there is no switch to turn that off. */
    curl_easy_setopt(r->h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(r->h, CURLOPT_SSL_VERIFYHOST, 2L);
    if (starttls)
        curl_easy_setopt(r->h, CURLOPT_USE_SSL, (long)CURLUSESSL_ALL);
    if (*user) {
        curl_easy_setopt(r->h, CURLOPT_USERNAME, user);
        curl_easy_setopt(r->h, CURLOPT_PASSWORD, pass);
    }
done:
    orr_buf_free(&v);
    return rc;
}

const orr_notify_ops orr_notify_email_ops = {"email", email_check, email_build};
