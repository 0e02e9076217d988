/*
 * fuzz_ics.c - fuzz target of the iCalendar reader (orr_cal_ics.h).
 *
 * Arbitrary bytes are read as an .ics file over a ten-year range; a refusal
 * must name the body and a line; every day handed out must lie in the range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_cal_ics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FROM_DAY 20454 /* 2026-01-01 */
#define TO_DAY   (FROM_DAY + 3652)

static int check_day(void *ctx, int64_t day, const char *summary, orr_err *err)
{
    (void)err;
    if (day < FROM_DAY || day > TO_DAY || !summary)
        abort();
    ++*(long *)ctx;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    orr_err err;
    orr_err_clear(&err);
    long n = 0;
    if (orr_ics_days((const char *)data, size, FROM_DAY, TO_DAY, check_day, &n, &err) != ORR_OK) {
        if (err.code != ORR_EINVAL || strcmp(err.field, "body") != 0 ||
            strncmp(err.msg, "line ", 5) != 0)
            abort();
    }
    return 0;
}
