/*
 * fuzz_cron.c - fuzz target of the cron parser and the next-fire walk.
 *
 * Arbitrary bytes are parsed as an expression; a rejection must name a field
 * and carry a message. An accepted expression computes a few fire times in
 * UTC and in two DST zones (one with a 30-minute shift), from instants spread
 * over the searchable range; each must be strictly after the previous one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_cron.h"
#include "orr_tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const zones[] = {"UTC", "Europe/Berlin", "Australia/Lord_Howe"};
    static const int64_t starts[] = {0, 1774742400 /* 2026-03-29 */, 1792886400 /* 2026-10-25 */,
                                     4102444800 /* 2100 */};
    char expr[ORR_CRON_MAX_LEN + 2];
    if (size > ORR_CRON_MAX_LEN + 1)
        size = ORR_CRON_MAX_LEN + 1;
    memcpy(expr, data, size);
    expr[size] = '\0';

    orr_cron c;
    orr_err err;
    orr_err_clear(&err);
    if (orr_cron_parse_into(expr, &c, &err) != ORR_OK) {
        if (err.code != ORR_EINVAL || err.field[0] == '\0' || err.msg[0] == '\0')
            abort();
        return 0;
    }
    for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
        const orr_tz *tz;
        if (orr_tz_load(zones[z], &tz, &err) != ORR_OK)
            continue; /* zone files missing on this machine */
        for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
            int64_t t = starts[s] + (int64_t)(size * 7919);
            for (int i = 0; i < 4; i++) {
                int64_t next;
                orr_status rc = orr_cron_next(&c, tz, t, &next);
                if (rc == ORR_ENOTFOUND)
                    break;
                if (rc != ORR_OK || next <= t)
                    abort();
                t = next;
            }
        }
    }
    return 0;
}
