/*
 * orr_notify.h - alert delivery: turns an alert and a channel's
 * configuration into one request (an HTTP POST or an SMTP mail), performs it
 * with libcurl, and classifies the outcome as delivered, retry at a time, or
 * failed.
 *
 * One ops struct per channel kind, chosen by name from one table
 * (orr_notify.c); adding a kind is one file and one line:
 *
 *   webhook  JSON body signed with HMAC-SHA256 (X-Orrery-Signature), with
 *            X-Orrery-Dedup-Key and X-Orrery-Delivery    (orr_notify_http.c)
 *   chat     a Slack ({"text"}) or Teams (MessageCard) body (orr_notify_http.c)
 *   email    an RFC 5322 plain-text mail over smtp:// or smtps://, STARTTLS
 *            and AUTH on request, a Message-ID derived from the dedup key
 *                                                        (orr_notify_email.c)
 *
 * Channel configurations (JSON objects):
 *   webhook {"url", "secret"?, "headers"?: {name: value}, "timeout_s"?: 10}
 *   chat    {"url", "format"?: "slack"|"teams", "timeout_s"?: 10}
 *   email   {"smtp_url", "starttls"?: false, "username"?, "password"?,
 *            "from", "to": [addr, ...], "timeout_s"?: 30}
 * Unknown keys are ignored (the store checks what it accepts).
 *
 * Legal call order: orr_notify_prepare() -> either orr_notify_perform()
 * (blocking) or add orr_notify_req_handle() to a curl multi handle and call
 * orr_notify_req_outcome() once the transfer is done -> orr_notify_req_free().
 * A request is used by one thread at a time; different requests may run on
 * different threads. orr_notify_global_init() runs libcurl's global set-up
 * once (prepare calls it).
 *
 * Outcomes (orr_notify_classify): HTTP 2xx delivered; 4xx other than 408 and
 * 429 failed at once; anything else (5xx, 408, 429, 3xx, a transport error)
 * retried after orr_notify_backoff_ms(attempts): 1 s, 2 s, 4 s ... capped at
 * 60 s (the first wait can be set: orr_notify_opts.backoff_base_ms; a
 * longer Retry-After of the receiver is kept, up to the same cap), until ORR_NOTIFY_MAX_ATTEMPTS
 * attempts, then failed. SMTP: accepted = delivered; a 5xx reply, refused authentication or
 * STARTTLS that the server does not offer = failed at once; the rest retried.
 */
#ifndef ORR_NOTIFY_H
#define ORR_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"

#define ORR_NOTIFY_MAX_ATTEMPTS 8
#define ORR_NOTIFY_BACKOFF_CAP  60000 /* ms */
#define ORR_NOTIFY_TIMEOUT_MAX  300   /* s: the largest timeout_s a channel may set */

/* The alert a message is about (borrowed strings; NULL = empty). */
typedef struct orr_notify_alert {
    int64_t alert_id, delivery_id;
    const char *dedup_key;
    int seq; /* 1 = the first message of the alert, then digests */
    const char *rule, *event, *severity, *scope_kind, *scope, *summary;
    int64_t count; /* occurrences this message covers */
    int64_t first_at_ms, last_at_ms;
    int64_t task_id, instance_id; /* 0 = none */
    const char *details_json;     /* a JSON object, or NULL */
    const char *url;              /* a console link, or NULL */
    int64_t now_ms;               /* the message's date (email Date:) */
} orr_notify_alert;

/* Settings of the sender, not of a channel (NULL = defaults). */
typedef struct orr_notify_opts {
    const char *ca_file; /* PEM bundle of CAs to trust for TLS instead of the
                            system's (NULL or "" = the system's) */
    int timeout_ms_max;  /* a request never runs longer than this (0 = the
                            channel's timeout_s alone) */
    int backoff_base_ms; /* the first retry's wait (0 = 1000); doubled per
                            attempt, capped at ORR_NOTIFY_BACKOFF_CAP */
} orr_notify_opts;

typedef enum orr_notify_outcome {
    ORR_NOTIFY_DELIVERED,
    ORR_NOTIFY_RETRY,
    ORR_NOTIFY_FAILED
} orr_notify_outcome;

typedef struct orr_notify_result {
    orr_notify_outcome outcome;
    int64_t retry_at_ms; /* ORR_NOTIFY_RETRY: when to try again */
    long code;           /* the HTTP status or last SMTP reply code; 0 = none */
    char error[400];     /* what went wrong (empty when delivered) */
} orr_notify_result;

typedef struct orr_notify_req orr_notify_req;

/* Run libcurl's global set-up once; safe from any thread. */
void orr_notify_global_init(void);

/* 1 if kind names a channel kind ("webhook", "email", "chat"). */
int orr_notify_kind_known(const char *kind);

/* Check a channel configuration (JSON text) of kind: ORR_OK, or ORR_EINVAL
 * with err->field naming the key ("config.url"). Never does I/O. */
orr_status orr_notify_check_config(const char *kind, const char *config_json, orr_err *err);

/* Build the request of alert a for a channel. ORR_EINVAL (field named) for
 * an unknown kind or a bad configuration: such a delivery can never
 * succeed. On ORR_OK *out is a new request owned by the caller
 * (orr_notify_req_free). Never does I/O. */
orr_status orr_notify_prepare(const char *kind, const char *config_json, const orr_notify_alert *a,
                              const orr_notify_opts *o, orr_notify_req **out, orr_err *err);

/* The request's libcurl easy handle (a CURL *), for a multi handle. Owned
 * by the request. */
void *orr_notify_req_handle(orr_notify_req *r);

/* What is sent: the body (the HTTP body, or the whole mail with its
 * headers) and a header's value (HTTP header or mail header, by name,
 * case-insensitive; NULL if absent). Owned by the request. */
const char *orr_notify_req_body(const orr_notify_req *r, size_t *len);
const char *orr_notify_req_header(const orr_notify_req *r, const char *name);

/* Classify a finished transfer: curl_code is the transfer's CURLcode;
 * attempts counts this attempt (1 = the first); now_ms is the current time. */
void orr_notify_req_outcome(orr_notify_req *r, int curl_code, int attempts, int64_t now_ms,
                            orr_notify_result *res);

/* Perform the request now (blocks up to its timeout) and classify it. */
void orr_notify_perform(orr_notify_req *r, int attempts, int64_t now_ms, orr_notify_result *res);

void orr_notify_req_free(orr_notify_req *r);

/* The outcome of one attempt before the attempt limit: smtp = 1 for a mail;
 * curl_code the CURLcode; code the HTTP status or last SMTP reply. */
orr_notify_outcome orr_notify_classify(int smtp, int curl_code, long code);

/* The wait before attempt attempts + 1: 1000 << (attempts - 1) ms, at most
 * ORR_NOTIFY_BACKOFF_CAP (attempts < 1 counts as 1). */
int64_t orr_notify_backoff_ms(int attempts);
/* The same from another first wait: base_ms << (attempts - 1), capped. */
int64_t orr_notify_backoff_from(int64_t base_ms, int attempts);

/* Lower-case hex HMAC-SHA256 of data with key into out (65 bytes). */
void orr_notify_hmac_hex(const char *key, size_t key_len, const void *data, size_t n, char out[65]);

#endif
