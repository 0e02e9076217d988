/* orr_name.c - see orr_name.h. */
#include "orr_name.h"

#include <string.h>

static int orr_name_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int orr_name_ok(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max || !orr_name_alnum(s[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!orr_name_alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
            return 0;
    return 1;
}
