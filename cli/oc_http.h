/*
 * oc_http.h - the REST client of `orrery`: one JSON call to galaxyd, and a
 * Server-Sent Events reader for live logs, on libcurl.
 *
 * Errors come back as orr_status with the API's own code, field and message
 * (`{"error":{"code":"EINVAL","field":"spec.schedule",...}}`), so a command
 * maps them to its exit code with oc_exit_for(). Blocking; one call at a
 * time per process.
 */
#ifndef OC_HTTP_H
#define OC_HTTP_H

#include <jansson.h>

#include "oc.h"
#include "orr_status.h"

/* curl_global_init / cleanup, once per process. */
void oc_http_init(void);
void oc_http_cleanup(void);

/*
 * method path (starting "/api/v1/...") on ctx->url with ctx->token (token
 * overrides it when not NULL). body NULL = no body. On 2xx: ORR_OK and *out
 * = the parsed answer (NULL for an empty one; the caller decrefs), *status
 * the HTTP status if status != NULL. Otherwise: the API's error code (by
 * name), err->field/msg from its body; ORR_EUNAVAIL with the reason when
 * galaxyd cannot be reached; ORR_EAUTH on 401.
 */
orr_status oc_api(oc_ctx *ctx, const char *method, const char *path, const json_t *body,
                  json_t **out, orr_err *err);
orr_status oc_api_tok(oc_ctx *ctx, const char *token, const char *method, const char *path,
                      const json_t *body, json_t **out, long *status, orr_err *err);

/* PUT path with If-Match: version (a compare-and-set: ORR_ECONFLICT when
 * the object moved on). */
orr_status oc_api_if_match(oc_ctx *ctx, const char *path, const json_t *body, int version,
                           json_t **out, orr_err *err);

/* GET path and copy a 200 answer's body to out as it arrives (a file of any
 * size, never held in memory). Errors as oc_api; ORR_EIO when out fails. */
orr_status oc_api_download(oc_ctx *ctx, const char *path, FILE *out, orr_err *err);

/* Called for each event of a stream: name ("log", "end", ...) and its data
 * parsed as JSON (NULL when it is not JSON). Return 0 to go on, 1 to stop. */
typedef int (*oc_sse_fn)(void *cls, const char *event, json_t *data);

/* GET path with Accept: text/event-stream and call fn per event until the
 * server ends the stream or fn returns 1. ORR_OK then; errors as oc_api. */
orr_status oc_api_sse(oc_ctx *ctx, const char *path, oc_sse_fn fn, void *cls, orr_err *err);

/* Incremental SSE parser, exposed for unit tests: feed bytes, get events. */
typedef struct oc_sse_parser {
    char *line; /* partial line */
    size_t line_len;
    char *event; /* current event name */
    char *data;  /* current data (lines joined with \n) */
    size_t data_len;
    int stop;
    oc_sse_fn fn;
    void *cls;
} oc_sse_parser;
void oc_sse_feed(oc_sse_parser *p, const char *bytes, size_t n);
void oc_sse_free(oc_sse_parser *p);

/* Percent-escape s for a URL path segment or query value (malloc'ed). */
char *oc_esc(const char *s);

#endif
