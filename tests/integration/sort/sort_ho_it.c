/*
 * sort_ho_it.c - the shared set-up of the hand-off integration tests
 * (see sort_ho_it.h).
 */
#include "sort_ho_it.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

const sort_source_ops sort_ho_it_plain_ops = {.name = "test"};

redisReply *sort_ho_it_cmd(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt);
    if (!r) {
        fprintf(stderr, "FAIL: redis: %s\n", c->errstr);
        exit(1);
    }
    return r;
}

redisContext *sort_ho_it_connect(const char *addr)
{
    const char *colon = strrchr(addr, ':');
    char host[256];
    snprintf(host, sizeof host, "%.*s", colon ? (int)(colon - addr) : 0, addr);
    redisContext *c = colon ? redisConnect(host, atoi(colon + 1)) : NULL;
    if (!c || c->err) {
        fprintf(stderr, "FAIL: cannot reach Redis at %s\n", addr);
        exit(1);
    }
    return c;
}

int sort_ho_it_failures;

sort_spec *sort_ho_it_spec(const char *name, const char *key, const char *addr)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\":\"%s\",\"business\":\"b\","
             "\"source\":{\"type\":\"file\",\"path\":\"/nonexistent\"},"
             "\"format\":{\"type\":\"delimited\",\"delimiter\":\"|\",\"fields\":[\"id\",\"ts\","
             "\"if\"]},\"interface\":{\"field\":\"if\"},"
             "\"time\":{\"field\":\"ts\",\"format\":\"epoch_ms\"},\"bucket\":\"hour\","
             "\"sinks\":{\"files\":false,\"handoff\":{\"key\":\"%s\",\"address\":\"%s\","
             "\"streams\":1,\"max_packs\":100000,\"pack_size\":4096}}}",
             name, key, addr);
    return sort_ho_it_parse(text);
}

sort_spec *sort_ho_it_parse(const char *text)
{
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    sort_spec *spec = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (!doc || sort_spec_parse(doc, "spec", &spec, &err) != ORR_OK) {
        fprintf(stderr, "FAIL: spec: %s %s\n", err.field, err.msg);
        exit(1);
    }
    json_decref(doc);
    return spec;
}
