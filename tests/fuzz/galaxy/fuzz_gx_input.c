/* fuzz_gx_input.c - galaxyd's input checks on arbitrary bytes.
 *
 * Input: TEXT [NUL SECRET]. TEXT goes through gx_parse_time and gx_name_ok;
 * then every occurrence of SECRET in TEXT is masked. Properties checked
 * beyond "no crash": an accepted time formats back to a date that parses to
 * the same instant at midnight granularity; an accepted name has no '/'; a
 * masked message never contains a secret of 3 bytes or more, and never grows. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *buf = malloc(size + 2);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    buf[size + 1] = '\0';
    const char *text = buf;
    const char *secret = buf + strlen(buf) + 1; /* "" when there is no NUL */
    if (secret > buf + size)
        secret = buf + size + 1;

    int64_t ms = 0;
    if (gx_parse_time(text, &ms) == ORR_OK) {
        if (ms < -86400000LL * 2) /* offsets reach at most a day before 1970 */
            abort();
        time_t secs = (time_t)(ms / 1000 - (ms % 1000 < 0));
        struct tm tm;
        char day[32];
        int64_t back;
        if (gmtime_r(&secs, &tm) && tm.tm_year + 1900 >= 1970 && tm.tm_year + 1900 <= 9999) {
            strftime(day, sizeof(day), "%Y-%m-%d", &tm);
            if (gx_parse_time(day, &back) != ORR_OK || back > ms || ms - back >= 86400000)
                abort();
        }
    }
    if (gx_name_ok(text) && (strchr(text, '/') || strlen(text) > 128))
        abort();

    size_t before = strlen(text);
    char *msg = strdup(text);
    if (msg) {
        gx_scrub_secret(msg, secret);
        if (strlen(msg) > before || (strlen(secret) >= 3 && strstr(msg, secret)))
            abort();
        free(msg);
    }
    free(buf);
    return 0;
}
