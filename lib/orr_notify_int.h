/*
 * orr_notify_int.h - what the channel kinds of orr_notify share: the request
 * and the ops struct each kind fills in. Private to lib/orr_notify*.c.
 */
#ifndef ORR_NOTIFY_INT_H
#define ORR_NOTIFY_INT_H

#include <curl/curl.h>
#include <jansson.h>

#include "orr_buf.h"
#include "orr_notify.h"

#define ORR_NOTIFY__RESP_MAX   2048 /* bytes of a response body kept for the error */
#define ORR_NOTIFY__HEADER_MAX 32   /* headers of a request at most */

struct orr_notify_req {
    CURL *h;
    int smtp;
    struct curl_slist *headers; /* HTTP headers */
    struct curl_slist *rcpt;    /* SMTP recipients */
    /* the headers again as name/value pairs, for orr_notify_req_header */
    char *hname[ORR_NOTIFY__HEADER_MAX], *hvalue[ORR_NOTIFY__HEADER_MAX];
    size_t n_hdr;
    orr_buf body;
    size_t read_off; /* SMTP upload position */
    int backoff_base_ms;
    orr_buf resp; /* the start of the response body */
    char errbuf[CURL_ERROR_SIZE];
};

/* One channel kind. check: the configuration (parsed) is usable (ORR_EINVAL
 * naming "config.<key>" otherwise). build: fill r's body, headers and its
 * easy handle's options for alert a. */
typedef struct orr_notify_ops {
    const char *kind;
    orr_status (*check)(const json_t *config, orr_err *err);
    orr_status (*build)(orr_notify_req *r, const json_t *config, const orr_notify_alert *a,
                        const orr_notify_opts *o, orr_err *err);
} orr_notify_ops;

extern const orr_notify_ops orr_notify_webhook_ops;
extern const orr_notify_ops orr_notify_chat_ops;
extern const orr_notify_ops orr_notify_email_ops;

/* Helpers shared by the kinds (orr_notify.c). */

/* Add a header (HTTP "Name: value", or a mail header when the kind writes
 * it into the body itself). ORR_EINVAL when name or value holds CR, LF or a
 * NUL, or the name is not a token; field names the configuration key. */
orr_status orr_notify__add_header(orr_notify_req *r, const char *name, const char *value, int http,
                                  const char *field, orr_err *err);
/* The same checks of a header without adding it. */
orr_status orr_notify__check_header(const char *name, const char *value, const char *field,
                                    orr_err *err);
/* "timeout_s" of config (default def) as ms, clamped by o->timeout_ms_max. */
orr_status orr_notify__timeout(const json_t *config, int def_s, const orr_notify_opts *o, long *ms,
                               orr_err *err);
/* A required http:// or https:// "url" of config. */
orr_status orr_notify__http_url(const json_t *config, const char *key, const char **url,
                                orr_err *err);
/* The alert's details as a JSON object (new reference; {} when absent or not
 * an object). */
json_t *orr_notify__details(const orr_notify_alert *a);
/* RFC 3339 UTC with milliseconds: "2026-12-01T10:00:00.000Z" (n >= 25). */
const char *orr_notify__time(int64_t ms, char *buf, size_t n);
/* One line for people: "[Orrery critical] summary". */
void orr_notify__title(const orr_notify_alert *a, orr_buf *out);
/* A few lines for people: rule, event, scope, count, times, ids, link. */
void orr_notify__text(const orr_notify_alert *a, const char *nl, orr_buf *out);
/* The options every HTTP kind sets: POST of r->body to url with r->headers. */
void orr_notify__http_setup(orr_notify_req *r, const char *url, long timeout_ms,
                            const orr_notify_opts *o);
/* The empty-string default of a borrowed alert string. */
const char *orr_notify__s(const char *s);

#endif
