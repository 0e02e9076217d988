/*
 * test_lib_notify.c - alert delivery's requests (orr_notify) without a
 * network: the webhook body, its HMAC and dedup headers, the chat bodies,
 * the mail's RFC 5322 headers and Message-ID, configuration errors naming
 * their key, outcome classification and the back-off. Real servers
 * (aiosmtpd, an HTTP receiver) are in tests/integration/notify/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "orr_notify.h"

static orr_notify_alert sample(void)
{
    orr_notify_alert a = {
        .alert_id = 11,
        .delivery_id = 77,
        .dedup_key = "failed:workflow:daily:1764547200000",
        .seq = 2,
        .rule = "etl-failures",
        .event = "failed",
        .severity = "critical",
        .scope_kind = "workflow",
        .scope = "daily",
        .summary = "300 failures in workflow daily",
        .count = 300,
        .first_at_ms = 1764547200123,
        .last_at_ms = 1764547260000,
        .task_id = 5,
        .instance_id = 99,
        .details_json = "{\"instances\":[1,2,3]}",
        .url = "http://console.example/alerts/11",
        .now_ms = 1764547261000,
    };
    return a;
}

static void test_backoff(void **state)
{
    (void)state;
    const int64_t want[] = {1000, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000};
    for (int i = 0; i < 10; i++)
        assert_int_equal(orr_notify_backoff_ms(i), want[i]);
    assert_int_equal(orr_notify_backoff_ms(1000), ORR_NOTIFY_BACKOFF_CAP);
    assert_int_equal(orr_notify_backoff_from(50, 1), 50);
    assert_int_equal(orr_notify_backoff_from(50, 4), 400);
    assert_int_equal(orr_notify_backoff_from(50, 20), ORR_NOTIFY_BACKOFF_CAP);
}

static void test_classify(void **state)
{
    (void)state;
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 200), ORR_NOTIFY_DELIVERED);
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 204), ORR_NOTIFY_DELIVERED);
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 400), ORR_NOTIFY_FAILED);
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 404), ORR_NOTIFY_FAILED);
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 408), ORR_NOTIFY_RETRY);
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 429), ORR_NOTIFY_RETRY);
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 500), ORR_NOTIFY_RETRY);
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 503), ORR_NOTIFY_RETRY);
    assert_int_equal(orr_notify_classify(0, CURLE_OK, 302), ORR_NOTIFY_RETRY);
    assert_int_equal(orr_notify_classify(0, CURLE_COULDNT_CONNECT, 0), ORR_NOTIFY_RETRY);
    assert_int_equal(orr_notify_classify(0, CURLE_OPERATION_TIMEDOUT, 0), ORR_NOTIFY_RETRY);
    assert_int_equal(orr_notify_classify(0, CURLE_URL_MALFORMAT, 0), ORR_NOTIFY_FAILED);
    assert_int_equal(orr_notify_classify(1, CURLE_OK, 250), ORR_NOTIFY_DELIVERED);
    assert_int_equal(orr_notify_classify(1, CURLE_SEND_ERROR, 550), ORR_NOTIFY_FAILED);
    assert_int_equal(orr_notify_classify(1, CURLE_RECV_ERROR, 451), ORR_NOTIFY_RETRY);
    assert_int_equal(orr_notify_classify(1, CURLE_LOGIN_DENIED, 535), ORR_NOTIFY_FAILED);
    assert_int_equal(orr_notify_classify(1, CURLE_USE_SSL_FAILED, 0), ORR_NOTIFY_FAILED);
    assert_int_equal(orr_notify_classify(1, CURLE_COULDNT_CONNECT, 0), ORR_NOTIFY_RETRY);
}

static void test_hmac(void **state)
{
    (void)state;
    char hex[65];
    /* RFC 4231, test case 2 */
    const char *data = "what do ya want for nothing?";
    orr_notify_hmac_hex("Jefe", 4, data, strlen(data), hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* an empty key is a key: the HMAC of "" under "" */
    orr_notify_hmac_hex("", 0, "", 0, hex);
    assert_string_equal(hex, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

static void test_webhook(void **state)
{
    (void)state;
    orr_notify_alert a = sample();
    orr_notify_req *r = NULL;
    orr_err err;
    const char *cfg = "{\"url\":\"http://127.0.0.1:9/hook\",\"secret\":\"s3cret\","
                      "\"headers\":{\"X-Team\":\"data\"},\"timeout_s\":3}";
    assert_int_equal(orr_notify_prepare("webhook", cfg, &a, NULL, &r, &err), ORR_OK);
    size_t len;
    const char *body = orr_notify_req_body(r, &len);
    json_t *b = json_loadb(body, len, 0, NULL);
    assert_non_null(b);
    assert_int_equal(json_integer_value(json_object_get(b, "alert_id")), 11);
    assert_int_equal(json_integer_value(json_object_get(b, "delivery_id")), 77);
    assert_int_equal(json_integer_value(json_object_get(b, "seq")), 2);
    assert_int_equal(json_integer_value(json_object_get(b, "count")), 300);
    assert_string_equal(json_string_value(json_object_get(b, "dedup_key")), a.dedup_key);
    assert_string_equal(json_string_value(json_object_get(b, "event")), "failed");
    assert_string_equal(json_string_value(json_object_get(b, "scope")), "daily");
    assert_string_equal(json_string_value(json_object_get(b, "first_at")),
                        "2025-12-01T00:00:00.123Z");
    assert_int_equal(json_array_size(json_object_get(json_object_get(b, "details"), "instances")),
                     3);
    json_decref(b);
    char hex[65], want[80];
    orr_notify_hmac_hex("s3cret", 6, body, len, hex);
    snprintf(want, sizeof want, "sha256=%s", hex);
    assert_string_equal(orr_notify_req_header(r, "x-orrery-signature"), want);
    assert_string_equal(orr_notify_req_header(r, "X-Orrery-Dedup-Key"),
                        "failed:workflow:daily:1764547200000:2");
    assert_string_equal(orr_notify_req_header(r, "X-Orrery-Delivery"), "77");
    assert_string_equal(orr_notify_req_header(r, "X-Team"), "data");
    assert_string_equal(orr_notify_req_header(r, "Content-Type"), "application/json");
    assert_null(orr_notify_req_header(r, "X-Missing"));
    orr_notify_req_free(r);

    /* details that are not an object become {} */
    a.details_json = "[1";
    assert_int_equal(orr_notify_prepare("webhook", "{\"url\":\"https://h/x\"}", &a, NULL, &r, &err),
                     ORR_OK);
    assert_non_null(strstr(orr_notify_req_body(r, NULL), "\"details\":{}"));
    orr_notify_req_free(r);
}

static void expect_bad(const char *kind, const char *cfg, const char *field)
{
    orr_notify_alert a = sample();
    orr_notify_req *r = (void *)1;
    orr_err err;
    orr_err_clear(&err);
    assert_int_equal(orr_notify_prepare(kind, cfg, &a, NULL, &r, &err), ORR_EINVAL);
    assert_null(r);
    if (strcmp(err.field, field) != 0)
        fail_msg("%s %s: field \"%s\" (%s), want \"%s\"", kind, cfg, err.field, err.msg, field);
    assert_int_equal(orr_notify_check_config(kind, cfg, &err), ORR_EINVAL);
    assert_string_equal(err.field, field);
}

static void test_bad_config(void **state)
{
    (void)state;
    expect_bad("pager", "{}", "kind");
    expect_bad("webhook", "", "config");
    expect_bad("webhook", "[1]", "config");
    expect_bad("webhook", "{\"url\":", "config");
    expect_bad("webhook", "{}", "config.url");
    expect_bad("webhook", "{\"url\":\"ftp://h/x\"}", "config.url");
    expect_bad("webhook", "{\"url\":\"http://h/x y\"}", "config.url");
    expect_bad("webhook", "{\"url\":\"http://h/\",\"secret\":3}", "config.secret");
    expect_bad("webhook", "{\"url\":\"http://h/\",\"timeout_s\":0}", "config.timeout_s");
    expect_bad("webhook", "{\"url\":\"http://h/\",\"timeout_s\":301}", "config.timeout_s");
    expect_bad("webhook", "{\"url\":\"http://h/\",\"headers\":{\"A\":1}}", "config.headers.A");
    expect_bad("webhook", "{\"url\":\"http://h/\",\"headers\":{\"X-Orrery-Delivery\":\"1\"}}",
               "config.headers.X-Orrery-Delivery");
    expect_bad("webhook", "{\"url\":\"http://h/\",\"headers\":{\"A\":\"x\\r\\nB: y\"}}",
               "config.headers.A");
    expect_bad("webhook", "{\"url\":\"http://h/\",\"headers\":{\"A B\":\"x\"}}",
               "config.headers.A B");
    expect_bad("chat", "{\"url\":\"http://h/\",\"format\":\"irc\"}", "config.format");
    expect_bad("chat", "{\"format\":\"slack\"}", "config.url");
    expect_bad("email", "{\"from\":\"a@b\",\"to\":[\"c@d\"]}", "config.smtp_url");
    expect_bad("email", "{\"smtp_url\":\"http://h\",\"from\":\"a@b\",\"to\":[\"c@d\"]}",
               "config.smtp_url");
    expect_bad("email", "{\"smtp_url\":\"smtp://h\",\"from\":\"ab\",\"to\":[\"c@d\"]}",
               "config.from");
    expect_bad("email", "{\"smtp_url\":\"smtp://h\",\"from\":\"a@b\",\"to\":[]}", "config.to");
    expect_bad("email", "{\"smtp_url\":\"smtp://h\",\"from\":\"a@b\",\"to\":[\"c@d\",\"x>\"]}",
               "config.to[1]");
    expect_bad("email", "{\"smtp_url\":\"smtp://h\",\"from\":\"a@b\",\"to\":\"c@d\"}", "config.to");
    expect_bad("email",
               "{\"smtp_url\":\"smtp://h\",\"from\":\"a@b\",\"to\":[\"c@d\"],"
               "\"starttls\":\"yes\"}",
               "config.starttls");
}

static void test_chat(void **state)
{
    (void)state;
    orr_notify_alert a = sample();
    orr_notify_req *r = NULL;
    orr_err err;
    assert_int_equal(
        orr_notify_prepare("chat", "{\"url\":\"https://hooks/x\"}", &a, NULL, &r, &err), ORR_OK);
    json_t *b = json_loads(orr_notify_req_body(r, NULL), 0, NULL);
    assert_non_null(b);
    assert_int_equal(json_object_size(b), 1);
    const char *text = json_string_value(json_object_get(b, "text"));
    assert_non_null(text);
    assert_memory_equal(text, "[Orrery critical] 300 failures in workflow daily\n", 49);
    assert_non_null(strstr(text, "count: 300"));
    json_decref(b);
    assert_string_equal(orr_notify_req_header(r, "X-Orrery-Dedup-Key"),
                        "failed:workflow:daily:1764547200000:2");
    orr_notify_req_free(r);

    assert_int_equal(orr_notify_prepare("chat",
                                        "{\"url\":\"https://hooks/x\",\"format\":\"teams\"}", &a,
                                        NULL, &r, &err),
                     ORR_OK);
    b = json_loads(orr_notify_req_body(r, NULL), 0, NULL);
    assert_string_equal(json_string_value(json_object_get(b, "@type")), "MessageCard");
    assert_string_equal(json_string_value(json_object_get(b, "summary")),
                        "[Orrery critical] 300 failures in workflow daily");
    assert_non_null(strstr(json_string_value(json_object_get(b, "text")), "rule: etl-failures"));
    json_decref(b);
    orr_notify_req_free(r);
}

static const char *EMAIL_CFG = "{\"smtp_url\":\"smtp://127.0.0.1:9\",\"starttls\":true,"
                               "\"username\":\"u\",\"password\":\"p\",\"from\":\"orrery@ex.org\","
                               "\"to\":[\"ops@ex.org\",\"dev@ex.org\"]}";

static void test_email(void **state)
{
    (void)state;
    orr_notify_alert a = sample();
    a.summary = "line one\r\nBcc: evil@ex.org";
    orr_notify_req *r = NULL, *r2 = NULL, *r3 = NULL;
    orr_err err;
    assert_int_equal(orr_notify_prepare("email", EMAIL_CFG, &a, NULL, &r, &err), ORR_OK);
    assert_string_equal(orr_notify_req_header(r, "From"), "orrery@ex.org");
    assert_string_equal(orr_notify_req_header(r, "To"), "ops@ex.org, dev@ex.org");
    assert_string_equal(orr_notify_req_header(r, "Date"), "Mon, 01 Dec 2025 00:01:01 +0000");
    /* a line break of the summary cannot start a header of its own */
    assert_string_equal(orr_notify_req_header(r, "Subject"),
                        "[Orrery critical] line one  Bcc: evil@ex.org");
    const char *mid = orr_notify_req_header(r, "Message-ID");
    assert_non_null(mid);
    assert_int_equal(strlen(mid), strlen("<orrery.") + 32 + strlen(".2@ex.org>"));
    assert_memory_equal(mid, "<orrery.", 8);
    assert_string_equal(mid + 8 + 32, ".2@ex.org>");
    assert_string_equal(orr_notify_req_header(r, "X-Orrery-Dedup-Key"),
                        "failed:workflow:daily:1764547200000:2");
    size_t len;
    const char *body = orr_notify_req_body(r, &len);
    /* headers, an empty line, then the text; every line ends in CRLF */
    assert_non_null(strstr(body, "\r\n\r\nline one\r\nBcc: evil@ex.org\r\n"));
    const char *sep = strstr(body, "\r\n\r\n");
    assert_null(strstr(body, "\nBcc") < sep ? strstr(body, "\nBcc") : NULL);
    for (size_t i = 0; i < len; i++)
        if (body[i] == '\n')
            assert_true(i > 0 && body[i - 1] == '\r');

    /* the same dedup key and seq: the same Message-ID; another seq: another */
    a.delivery_id = 78;
    assert_int_equal(orr_notify_prepare("email", EMAIL_CFG, &a, NULL, &r2, &err), ORR_OK);
    assert_string_equal(orr_notify_req_header(r2, "Message-ID"), mid);
    a.seq = 3;
    assert_int_equal(orr_notify_prepare("email", EMAIL_CFG, &a, NULL, &r3, &err), ORR_OK);
    assert_string_not_equal(orr_notify_req_header(r3, "Message-ID"), mid);
    assert_memory_equal(orr_notify_req_header(r3, "Message-ID"), mid, 8 + 32);
    orr_notify_req_free(r);
    orr_notify_req_free(r2);
    orr_notify_req_free(r3);

    /* a subject beyond ASCII is encoded (RFC 2047) */
    a.summary = "Ausfall der Verarbeitung \xc3\xa4\xc3\xb6\xc3\xbc \xe2\x80\x94 Tagesl\xc3\xa4uf"
                "e mit einem sehr langen Betreff";
    assert_int_equal(orr_notify_prepare("email", EMAIL_CFG, &a, NULL, &r, &err), ORR_OK);
    body = orr_notify_req_body(r, NULL);
    const char *subj = strstr(body, "\r\nSubject: =?UTF-8?B?");
    assert_non_null(subj);
    assert_non_null(strstr(subj, "?=\r\n =?UTF-8?B?")); /* folded into words */
    orr_notify_req_free(r);
}

static void test_outcome(void **state)
{
    (void)state;
    orr_notify_alert a = sample();
    orr_notify_req *r = NULL;
    orr_err err;
    orr_notify_result res;
    assert_int_equal(
        orr_notify_prepare("webhook", "{\"url\":\"http://127.0.0.1:9/\"}", &a, NULL, &r, &err),
        ORR_OK);
    orr_notify_req_outcome(r, CURLE_COULDNT_CONNECT, 3, 1000000, &res);
    assert_int_equal(res.outcome, ORR_NOTIFY_RETRY);
    assert_int_equal(res.retry_at_ms, 1000000 + 4000);
    assert_true(res.error[0] != '\0');
    orr_notify_req_outcome(r, CURLE_COULDNT_CONNECT, ORR_NOTIFY_MAX_ATTEMPTS, 1000000, &res);
    assert_int_equal(res.outcome, ORR_NOTIFY_FAILED);
    assert_non_null(strstr(res.error, "after 8 attempts"));
    orr_notify_req_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff),    cmocka_unit_test(test_classify),
        cmocka_unit_test(test_hmac),       cmocka_unit_test(test_webhook),
        cmocka_unit_test(test_bad_config), cmocka_unit_test(test_chat),
        cmocka_unit_test(test_email),      cmocka_unit_test(test_outcome),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
