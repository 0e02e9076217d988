/*
 * fuzz_subst.c - fuzz target of the ${...} substitution language.
 *
 * Arbitrary bytes are checked against two declared names and expanded with
 * values for them, in UTC and in a DST zone. Check and expansion must agree
 * (one accepts exactly what the other does, as their scanner is shared); a
 * refusal must name the field and carry a message; an expansion never
 * exceeds the output limit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_buf.h"
#include "orr_subst.h"
#include "orr_tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"region", "day"};
    static const orr_subst_var vars[] = {{"region", "eu"}, {"day", "${region}"}, {"task", "t"},
                                         {"task_id", "1"}, {"instance_id", "2"}, {"attempt", "1"},
                                         {"version", "4"}};
    static const char *const zones[] = {"UTC", "Europe/Berlin"};
    if (size > 65536)
        size = 65536;
    const char *text = (const char *)data;
    orr_err ce;
    orr_err_clear(&ce);
    orr_status cs = orr_subst_check(text, size, names, 2, "f", &ce);
    if (cs != ORR_OK && (cs != ORR_EINVAL || strcmp(ce.field, "f") != 0 || !ce.msg[0]))
        abort();
    for (size_t z = 0; z < sizeof zones / sizeof zones[0]; z++) {
        const orr_tz *tz = NULL;
        orr_err e;
        if (orr_tz_load(zones[z], &tz, &e) != ORR_OK)
            continue; /* zone files missing on this machine */
        orr_subst_env env = {vars, sizeof vars / sizeof vars[0], 1774746000 /* 2026-03-29 */, tz};
        orr_buf out = ORR_BUF_INIT;
        orr_status es = orr_subst_expand(text, size, &env, &out, "f", &e);
        if (es == ORR_ETOOBIG) {
            orr_buf_free(&out);
            continue;
        }
        if ((es == ORR_OK) != (cs == ORR_OK))
            abort();
        if (es != ORR_OK && (strcmp(e.field, "f") != 0 || !e.msg[0]))
            abort();
        if (out.len > ORR_SUBST_OUT_MAX + 4096)
            abort();
        orr_buf_free(&out);
    }
    return 0;
}
