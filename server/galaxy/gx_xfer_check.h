/*
 * gx_xfer_check.h - the save-time check of a transfer task's column
 * mappings against the tables' columns (gx_xfer_check.c).
 */
#ifndef GX_XFER_CHECK_H
#define GX_XFER_CHECK_H

#include <jansson.h>

#include "gx_http.h"

/* Check spec (a task spec; only transfer tasks with a writer mapping are
 * looked at). Returns 0 when the save may go on, with an object
 * {"field", "message"} appended to warnings for each mapping that could not
 * be checked (no executor answered); -1 when it answered 400 naming the
 * field. Blocks while the tables' columns are read. */
int gx_xfer_check(gx_req *req, gx_resp *resp, json_t *spec, json_t *warnings);

/* An empty array of warnings, released with the request's arena. */
json_t *gx_xfer_warnings(gx_req *req);
/* answer with "warnings" set when there are any; returns answer. */
json_t *gx_xfer_with_warnings(json_t *answer, json_t *warnings);

/* GET /api/v1/tasks/{id}/watermark (route in gx_routes.c). */
void gx_h_task_watermark(gx_req *req, gx_resp *resp);

#endif
