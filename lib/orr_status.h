/*
 * orr_status.h - the one status type of Orrery.
 *
 * Every fallible function in the project returns an orr_status. Names and
 * messages come from one X-macro list, so adding a code is one line here.
 * Codes map one-to-one onto gRPC status codes (rpc/) and HTTP statuses
 * (galaxyd) where a mapping exists.
 *
 * struct orr_err carries the details a user can act on: the code, the field
 * (a JSON path, a config key, a cron field...) and a human message.
 */
#ifndef ORR_STATUS_H
#define ORR_STATUS_H

#include <stddef.h>

/* X(NAME, "message") */
#define ORR_STATUS_LIST(X)                                                                         \
    X(OK, "ok")                                                                                    \
    X(EINVAL, "invalid argument")                                                                  \
    X(ENOTFOUND, "not found")                                                                      \
    X(EEXIST, "already exists")                                                                    \
    X(ESTATE, "illegal state transition")                                                          \
    X(ECONFLICT, "lost a compare-and-set; retry")                                                  \
    X(EAUTH, "unauthenticated")                                                                    \
    X(EPERM, "permission denied")                                                                  \
    X(EUNAVAIL, "service unavailable")                                                             \
    X(ETIMEOUT, "timed out")                                                                       \
    X(ETOOBIG, "too large")                                                                        \
    X(ENOMEM, "out of memory")                                                                     \
    X(EIO, "input/output error")                                                                   \
    X(EAGAIN, "try again")                                                                         \
    X(EOF, "end of stream")                                                                        \
    X(ECANCELLED, "cancelled")                                                                     \
    X(EINTERNAL, "internal error")                                                                 \
    X(EUNIMPL, "not implemented")

typedef enum orr_status {
#define ORR__STATUS_ENUM(name, msg) ORR_##name,
    ORR_STATUS_LIST(ORR__STATUS_ENUM)
#undef ORR__STATUS_ENUM
        ORR__STATUS_COUNT
} orr_status;

/* Detail of a failure. field may be empty. Fixed-size: never allocates. */
typedef struct orr_err {
    orr_status code;
    char field[128];
    char msg[384];
} orr_err;

/* "EINVAL"; "UNKNOWN" for an out-of-range code. Static string. */
const char *orr_status_name(orr_status s);
/* "invalid argument". Static string. */
const char *orr_status_msg(orr_status s);

/* Fill err (may be NULL) and return code. field may be NULL. */
orr_status orr_err_set(orr_err *err, orr_status code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Clear err to ORR_OK. */
void orr_err_clear(orr_err *err);
/* "field: msg" or "msg" into buf; returns buf. */
const char *orr_err_str(const orr_err *err, char *buf, size_t n);

#endif
