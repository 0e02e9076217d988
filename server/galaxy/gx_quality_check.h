/*
 * gx_quality_check.h - the save-time check of quality checks' tables and
 * columns (gx_quality_check.c).
 */
#ifndef GX_QUALITY_CHECK_H
#define GX_QUALITY_CHECK_H

#include <jansson.h>

#include "gx_http.h"

/* Check the quality checks of spec (a quality task's config.checks, a
 * transfer's config.quality) against the tables' columns. 0: the save may
 * go on (a "warnings" entry for each check that could not be looked at);
 * -1: answered 400 naming the field. Blocks while catalogs are read. */
int gx_quality_check(gx_req *req, gx_resp *resp, json_t *spec, json_t *warnings);

#endif
