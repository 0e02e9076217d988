/*
 * sort_ho_it.h - what the hand-off integration tests (sort_ho_*_test.c)
 * share: a source without offsets, a Redis command that exits on a lost
 * connection, the control connection, and the hand-off spec they all use
 * (delimited "id|ts|if", hourly buckets, one stream, no local files).
 */
#ifndef SORT_HO_IT_H
#define SORT_HO_IT_H

#include <hiredis/hiredis.h>

#include "sort_source.h"
#include "sort_spec.h"

/* A source whose positions are plain offsets (off64: lo, hi 0). */
extern const sort_source_ops sort_ho_it_plain_ops;

/* redisCommand with one optional string argument; exits 1 on no reply. */
redisReply *sort_ho_it_cmd(redisContext *c, const char *fmt, const char *arg);

/* A connection to addr ("host:port"); exits 1 when Redis cannot be reached. */
redisContext *sort_ho_it_connect(const char *addr);

/* The spec named name handing off to stream key at addr; exits 1 when it
 * does not parse. */
sort_spec *sort_ho_it_spec(const char *name, const char *key, const char *addr);

#endif
