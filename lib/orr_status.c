/* orr_status.c - names, messages and the error-detail helpers of orr_status. */
#include "orr_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {
#define ORR__STATUS_NAME(name, msg) #name,
    ORR_STATUS_LIST(ORR__STATUS_NAME)
#undef ORR__STATUS_NAME
};

static const char *const status_msgs[] = {
#define ORR__STATUS_MSG(name, msg) msg,
    ORR_STATUS_LIST(ORR__STATUS_MSG)
#undef ORR__STATUS_MSG
};

const char *orr_status_name(orr_status s)
{
    if ((int)s < 0 || s >= ORR__STATUS_COUNT)
        return "UNKNOWN";
    return status_names[s];
}

const char *orr_status_msg(orr_status s)
{
    if ((int)s < 0 || s >= ORR__STATUS_COUNT)
        return "unknown status";
    return status_msgs[s];
}

orr_status orr_err_set(orr_err *err, orr_status code, const char *field, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    } else {
        snprintf(err->msg, sizeof(err->msg), "%s", orr_status_msg(code));
    }
    return code;
}

void orr_err_clear(orr_err *err)
{
    if (!err)
        return;
    err->code = ORR_OK;
    err->field[0] = '\0';
    err->msg[0] = '\0';
}

const char *orr_err_str(const orr_err *err, char *buf, size_t n)
{
    if (!err || n == 0)
        return "";
    if (err->field[0])
        snprintf(buf, n, "%s: %s", err->field, err->msg);
    else
        snprintf(buf, n, "%s", err->msg[0] ? err->msg : orr_status_msg(err->code));
    return buf;
}
