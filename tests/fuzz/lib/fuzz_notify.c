/*
 * fuzz_notify.c - fuzz target of alert delivery's request building
 * (orr_notify): the first byte picks the channel kind, the rest up to a NUL
 * is the channel configuration (JSON), the bytes after it the alert's
 * summary and details. A configuration is refused with a named field, or
 * the request is built: check_config and prepare agree, and a built
 * request's headers never hold a line break (no header injection). No
 * request is performed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_notify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const kinds[] = {"webhook", "email", "chat", "other"};
    if (size < 1 || size > 65536)
        return 0;
    const char *kind = kinds[data[0] & 3];
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    const char *config = buf;
    size_t clen = strlen(config);
    const char *rest = clen < size - 1 ? buf + clen + 1 : "";
    orr_notify_alert a = {
        .alert_id = 1,
        .delivery_id = 2,
        .dedup_key = "failed:task:1:0",
        .seq = 1,
        .event = "failed",
        .severity = "warning",
        .summary = rest,
        .details_json = rest,
        .count = 1,
        .now_ms = 1764547200000,
    };
    orr_err e1, e2;
    orr_notify_req *r = NULL;
    orr_status c = orr_notify_check_config(kind, config, &e1);
    orr_status p = orr_notify_prepare(kind, config, &a, NULL, &r, &e2);
    if ((c == ORR_OK) != (p == ORR_OK))
        abort();
    if (p != ORR_OK && (!e2.field[0] || !e2.msg[0] || r))
        abort();
    if (r) {
        static const char *const names[] = {"Subject", "X-Orrery-Dedup-Key", "X-Orrery-Signature",
                                            "To", "From"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            const char *v = orr_notify_req_header(r, names[i]);
            if (v && strpbrk(v, "\r\n"))
                abort();
        }
    }
    orr_notify_req_free(r);
    free(buf);
    return 0;
}
