/*
 * fuzz_tzif.c - fuzz target of the TZif reader (orr_tz_parse).
 *
 * Arbitrary bytes are read as a zone file; a rejection must be ORR_EINVAL with
 * the "timezone" field. An accepted zone must answer offsets within +-26 h and
 * local->UTC maps that are consistent: every candidate instant shows the wall
 * time asked for, and a gap's end lies after the wall time's earliest reading.
 * Seeds are real zone files (version 2, fat and with footers).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t probes[] = {INT64_C(-2208988800), 0,          1774751400,
                                     1792891800,           4102444800, 13569465600};
    orr_tz *tz = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (orr_tz_parse("Fuzz/Zone", data, size, &tz, &err) != ORR_OK) {
        if (tz || err.code != ORR_EINVAL || strcmp(err.field, "timezone") != 0)
            abort();
        return 0;
    }
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        for (int64_t d = -7200; d <= 7200; d += 1800) {
            int64_t t = probes[i] + d;
            int32_t off = orr_tz_offset(tz, t);
            if (off < -26 * 3600 || off > 26 * 3600)
                abort();
            int64_t w = t + off;
            orr_tz_map m;
            orr_tz_local_to_utc(tz, w, &m);
            if (m.n < 0 || m.n > 2)
                abort();
            for (int k = 0; k < m.n; k++)
                if (m.utc[k] + orr_tz_offset(tz, m.utc[k]) != w)
                    abort();
            if (m.n == 2 && m.utc[0] >= m.utc[1])
                abort();
        }
    }
    orr_tz_free(tz);
    return 0;
}
