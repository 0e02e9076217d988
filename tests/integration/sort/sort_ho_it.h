/*
 * sort_ho_it.h - what the hand-off and Redis-source integration tests
 * share: a source without offsets, a Redis command that exits on a lost
 * connection, the control connection, counting checks (CHECK), a spec from
 * its JSON text, and the hand-off spec they use
 * (delimited "id|ts|if", hourly buckets, one stream, no local files).
 */
#ifndef SORT_HO_IT_H
#define SORT_HO_IT_H

#include <hiredis/hiredis.h>
#include <stdio.h>

#include "sort_source.h"
#include "sort_spec.h"

/* Checks that count their failures (in sort_ho_it_failures) and go on, so
 * one run reports every check that failed; main returns 1 if any did. */
extern int sort_ho_it_failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            sort_ho_it_failures++;                                                                 \
        }                                                                                          \
    } while (0)

/* A source whose positions are plain offsets (off64: lo, hi 0). */
extern const sort_source_ops sort_ho_it_plain_ops;

/* redisCommand with one optional string argument; exits 1 on no reply. */
redisReply *sort_ho_it_cmd(redisContext *c, const char *fmt, const char *arg);

/* A connection to addr ("host:port"); exits 1 when Redis cannot be reached. */
redisContext *sort_ho_it_connect(const char *addr);

/* The spec in the JSON text; exits 1 when it does not parse. */
sort_spec *sort_ho_it_parse(const char *text);

/* The spec named name handing off to stream key at addr; exits 1 when it
 * does not parse. */
sort_spec *sort_ho_it_spec(const char *name, const char *key, const char *addr);

#endif
