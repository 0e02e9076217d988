/* wh_job.c - strict parsing of the transfer job spec (see wh_job.h). */
#include "wh_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_json.h"
#include "orr_schemas.h"
#include "wh_map.h"
#include "wh_quality.h"

static const char *const wh_reader_keys[] = {"type", "channels", "incremental", NULL};
static const char *const wh_writer_keys[] = {"type", "name", "channels", "mapping", NULL};

orr_status wh_allow_keys(const json_t *spec, const char *path, const char *const *plugin_keys,
                         int is_reader, orr_err *err)
{
    const char *all[64];
    size_t n = 0;
    for (const char *const *k = is_reader ? wh_reader_keys : wh_writer_keys; *k; k++)
        all[n++] = *k;
    for (const char *const *k = plugin_keys; k && *k && n < 63; k++)
        all[n++] = *k;
    all[n] = NULL;
    return orr_json_allow_keys(spec, path, all, err);
}

static orr_status wh_parse_endpoint(json_t *spec, const char *path, int is_reader, int64_t dflt_ch,
                                    wh_endpoint *ep, orr_err *err)
{
    orr_status rc;
    char p[96];
    snprintf(ep->path, sizeof(ep->path), "%s", path);
    if (!json_is_object(spec))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object");
    if ((rc = orr_json_get_str(spec, path, "type", 1, &ep->type, err)))
        return rc;
    ep->plugin = wh_plugin_find(ep->type);
    if (!ep->plugin || (is_reader ? !ep->plugin->reader : !ep->plugin->writer))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "type"),
                           "unknown %s type \"%s\" (known: %s)", is_reader ? "reader" : "writer",
                           ep->type, wh_plugin_names());
    int64_t ch = dflt_ch;
    if ((rc = orr_json_get_int(spec, path, "channels", 0, 1, 256, &ch, err)))
        return rc;
    ep->channels = (int)ch;
    if (is_reader) {
        snprintf(ep->name, sizeof(ep->name), "reader");
        return ep->plugin->reader->configure(spec, path, &ep->conf, err);
    }
    const char *name = NULL;
    if ((rc = orr_json_get_str(spec, path, "name", 0, &name, err)))
        return rc;
    if (name)
        snprintf(ep->name, sizeof(ep->name), "%s", name);
    return ep->plugin->writer->configure(spec, path, &ep->conf, err);
}

static orr_status wh_parse_incremental(wh_job *j, orr_err *err)
{
    orr_status rc;
    json_t *in = NULL;
    json_t *reader = json_object_get(j->root, "reader");
    if ((rc = orr_json_get_obj(reader, "reader", "incremental", 0, &in, err)) || !in)
        return rc;
    static const char *const keys[] = {"column", "kind", "overlap", NULL};
    const char *path = "reader.incremental";
    if ((rc = orr_json_allow_keys(in, path, keys, err)))
        return rc;
    const char *kind = NULL;
    if ((rc = orr_json_get_str(in, path, "column", 1, &j->incr_column, err)) ||
        (rc = orr_json_get_str(in, path, "kind", 1, &kind, err)) ||
        (rc = orr_json_get_int(in, path, "overlap", 0, 0, INT64_MAX / 4, &j->incr_overlap, err)))
        return rc;
    if (strcmp(kind, "integer") == 0)
        j->incr_is_time = 0;
    else if (strcmp(kind, "timestamp") == 0)
        j->incr_is_time = 1;
    else
        return orr_err_set(err, ORR_EINVAL, "reader.incremental.kind",
                           "must be \"integer\" or \"timestamp\"");
    if (strcmp(j->reader.type, "file") == 0)
        return orr_err_set(err, ORR_EINVAL, "reader.incremental",
                           "is not supported for file readers (files have no watermark column)");
    if (!j->incr_column[0])
        return orr_err_set(err, ORR_EINVAL, "reader.incremental.column", "must not be empty");
    j->incr_on = 1;
    return ORR_OK;
}

orr_status wh_job_parse(const char *text, size_t len, wh_job **out, orr_err *err)
{
    static const char *const keys[] = {"name",
                                       "reader",
                                       "writers",
                                       "channels",
                                       "batch_rows",
                                       "batch_bytes",
                                       "limits",
                                       "max_dirty_rows",
                                       "max_dirty_ratio",
                                       "reject_file",
                                       "max_row_diff",
                                       "state_file",
                                       "progress_interval_ms",
                                       "resume",
                                       "quality",
                                       NULL};
    orr_status rc;
    char p[96];
    *out = NULL;
    wh_job *j = orr_xcalloc(1, sizeof(*j));
    j->batch_rows = 8192;
    j->batch_bytes = 1 << 20;
    j->max_dirty_rows = 0;
    j->max_dirty_ratio = -1;
    j->max_row_diff = 0;
    j->progress_ms = 1000;
    j->name = "job";
    if ((rc = orr_json_parse(text, len, &j->root, err)))
        goto fail;
    /* Shape and ranges by schema/transfer-job.schema.json (the document the
     * task schema defers to); the parsers below keep the checks a schema
     * cannot make. */
    const orr_jschema *js = NULL;
    if ((rc = orr_schema_get("transfer-job.schema.json", &js, err)) ||
        (rc = orr_jschema_validate(js, j->root, "", err)))
        goto fail;
    if ((rc = orr_json_allow_keys(j->root, "", keys, err)))
        goto fail;
    int64_t channels = 1;
    json_t *limits = NULL, *reader = NULL, *writers = NULL;
    if ((rc = orr_json_get_str(j->root, "", "name", 0, &j->name, err)) ||
        (rc = orr_json_get_int(j->root, "", "channels", 0, 1, 256, &channels, err)) ||
        (rc = orr_json_get_int(j->root, "", "batch_rows", 0, 1, 1 << 20, &j->batch_rows, err)) ||
        (rc = orr_json_get_int(j->root, "", "batch_bytes", 0, 4096, 256 << 20, &j->batch_bytes,
                               err)) ||
        (rc = orr_json_get_int(j->root, "", "max_dirty_rows", 0, -1, INT64_MAX, &j->max_dirty_rows,
                               err)) ||
        (rc = orr_json_get_double(j->root, "", "max_dirty_ratio", 0, &j->max_dirty_ratio, err)) ||
        (rc = orr_json_get_str(j->root, "", "reject_file", 0, &j->reject_file, err)) ||
        (rc = orr_json_get_int(j->root, "", "max_row_diff", 0, 0, INT64_MAX, &j->max_row_diff,
                               err)) ||
        (rc = orr_json_get_str(j->root, "", "state_file", 0, &j->state_file, err)) ||
        (rc = orr_json_get_int(j->root, "", "progress_interval_ms", 0, 0, 3600000, &j->progress_ms,
                               err)) ||
        (rc = orr_json_get_obj(j->root, "", "limits", 0, &limits, err)) ||
        (rc = orr_json_get_obj(j->root, "", "reader", 1, &reader, err)) ||
        (rc = orr_json_get_array(j->root, "", "writers", 1, &writers, err)))
        goto fail;
    json_t *resume = json_object_get(j->root, "resume");
    if (resume && !json_is_boolean(resume)) {
        rc = orr_err_set(err, ORR_EINVAL, "resume", "must be true or false");
        goto fail;
    }
    j->resume = json_is_true(resume) ? WH_RESUME_ON : WH_RESUME_OFF;
    if (json_object_get(j->root, "max_dirty_ratio") &&
        (j->max_dirty_ratio < 0 || j->max_dirty_ratio > 1)) {
        rc = orr_err_set(err, ORR_EINVAL, "max_dirty_ratio", "must be between 0 and 1");
        goto fail;
    }
    if (limits) {
        static const char *const lkeys[] = {"rows_per_sec", "bytes_per_sec", NULL};
        if ((rc = orr_json_allow_keys(limits, "limits", lkeys, err)) ||
            (rc = orr_json_get_int(limits, "limits", "rows_per_sec", 0, 0, INT64_MAX,
                                   &j->rows_per_sec, err)) ||
            (rc = orr_json_get_int(limits, "limits", "bytes_per_sec", 0, 0, INT64_MAX,
                                   &j->bytes_per_sec, err)))
            goto fail;
    }
    if (!json_is_object(reader)) {
        rc = orr_err_set(err, ORR_EINVAL, "reader", "must be an object");
        goto fail;
    }
    /* Writers' mappings name the columns the reader reads (wh_map.h). */
    if ((j->reader.spec = wh_map_reader_spec(reader, writers)))
        reader = j->reader.spec;
    if ((rc = wh_parse_endpoint(reader, "reader", 1, channels, &j->reader, err)))
        goto fail;
    if ((rc = wh_parse_incremental(j, err)))
        goto fail;
    j->nwriters = json_array_size(writers);
    if (j->nwriters == 0 || j->nwriters > 64) {
        rc = orr_err_set(err, ORR_EINVAL, "writers", "must hold 1 to 64 writers");
        goto fail;
    }
    j->writers = orr_xcalloc(j->nwriters, sizeof(*j->writers));
    for (size_t i = 0; i < j->nwriters; i++) {
        wh_endpoint *w = &j->writers[i];
        orr_json_index_path(p, sizeof(p), "writers", i);
        json_t *ws = json_array_get(writers, i);
        if (json_is_object(ws) && (rc = wh_map_parse(ws, p, &w->map, &w->spec, err)))
            goto fail;
        if ((rc = wh_parse_endpoint(w->spec ? w->spec : ws, p, 0, channels, w, err)))
            goto fail;
        if (!w->name[0])
            snprintf(w->name, sizeof(w->name), "%s#%zu", w->type, i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(j->writers[k].name, w->name) == 0) {
                rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), w->path, "name"),
                                 "duplicate writer name \"%s\"", w->name);
                goto fail;
            }
    }
    if ((rc = wh_quality_job_parse(j, err)))
        goto fail;
    *out = j;
    return ORR_OK;
fail:
    wh_job_free(j);
    return rc;
}

orr_status wh_job_load_file(const char *path, wh_job **out, orr_err *err)
{
    *out = NULL;
    int from_stdin = strcmp(path, "-") == 0;
    FILE *f = from_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return orr_err_set(err, ORR_EIO, "", "cannot open job file %s", path);
    orr_buf b = ORR_BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        orr_buf_append(&b, chunk, n);
        if (b.len > (64u << 20)) {
            fclose(f);
            orr_buf_free(&b);
            return orr_err_set(err, ORR_EINVAL, "", "job file %s is larger than 64 MiB", path);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        orr_buf_free(&b);
        return orr_err_set(err, ORR_EIO, "", "cannot read job file %s", path);
    }
    orr_status rc = wh_job_parse(orr_buf_cstr(&b), b.len, out, err);
    orr_buf_free(&b);
    return rc;
}

static void wh_endpoint_free(wh_endpoint *ep, int is_reader)
{
    if (!ep->plugin || !ep->conf)
        return;
    if (is_reader)
        ep->plugin->reader->conf_free(ep->conf);
    else
        ep->plugin->writer->conf_free(ep->conf);
    ep->conf = NULL;
}

static void wh_endpoint_release(wh_endpoint *ep)
{
    wh_map_free(ep->map);
    ep->map = NULL;
    json_decref(ep->spec);
    ep->spec = NULL;
}

void wh_job_free(wh_job *j)
{
    if (!j)
        return;
    wh_endpoint_free(&j->reader, 1);
    wh_endpoint_release(&j->reader);
    for (size_t i = 0; i < j->nwriters && j->writers; i++) {
        wh_endpoint_free(&j->writers[i], 0);
        wh_endpoint_release(&j->writers[i]);
    }
    wh_quality_job_free(j);
    free(j->writers);
    json_decref(j->root);
    free(j);
}

static const char *const wh_mode_names[] = {"append", "truncate", "replace", "upsert", "staging"};

const char *wh_mode_name(wh_mode m)
{
    return (unsigned)m < 5 ? wh_mode_names[m] : "append";
}

orr_status wh_get_mode(const json_t *spec, const char *path, wh_mode *out, orr_err *err)
{
    const char *m = NULL;
    char p[96];
    orr_status rc = orr_json_get_str(spec, path, "mode", 0, &m, err);
    if (rc || !m)
        return rc;
    for (int i = 0; i < 5; i++)
        if (strcmp(m, wh_mode_names[i]) == 0) {
            *out = (wh_mode)i;
            return ORR_OK;
        }
    return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "mode"),
                       "must be one of append, truncate, replace, upsert, staging");
}

orr_status wh_get_str_array(const json_t *spec, const char *path, const char *key,
                            const char ***out, size_t *n, orr_err *err)
{
    json_t *a = NULL;
    char p[128], q[160];
    orr_status rc = orr_json_get_array(spec, path, key, 0, &a, err);
    if (rc || !a)
        return rc;
    orr_json_path(p, sizeof(p), path, key);
    size_t k = json_array_size(a);
    if (k == 0)
        return orr_err_set(err, ORR_EINVAL, p, "must not be empty");
    const char **v = orr_xcalloc(k, sizeof(*v));
    for (size_t i = 0; i < k; i++) {
        json_t *s = json_array_get(a, i);
        if (!json_is_string(s) || json_string_length(s) == 0) {
            free(v);
            return orr_err_set(err, ORR_EINVAL, orr_json_index_path(q, sizeof(q), p, i),
                               "must be a non-empty string");
        }
        v[i] = json_string_value(s);
    }
    *out = v;
    *n = k;
    return ORR_OK;
}

orr_status wh_get_dsn(const json_t *spec, const char *path, const char **out, orr_err *err)
{
    const char *dsn = NULL, *env = NULL;
    char p[96];
    orr_status rc;
    if ((rc = orr_json_get_str(spec, path, "dsn", 0, &dsn, err)) ||
        (rc = orr_json_get_str(spec, path, "dsn_env", 0, &env, err)))
        return rc;
    if (dsn && env)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "dsn_env"),
                           "give dsn or dsn_env, not both");
    if (json_object_get(spec, "datasource"))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "datasource"),
                           "a data-source reference is resolved by the executor when the job "
                           "runs as a task; run alone, give dsn or dsn_env");
    if (env) {
        dsn = getenv(env);
        if (!dsn || !dsn[0])
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "dsn_env"),
                               "environment variable %s is not set", env);
    }
    if (!dsn)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "dsn"),
                           "is required (or dsn_env)");
    *out = dsn;
    return ORR_OK;
}
