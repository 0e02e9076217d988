/*
 * gx_meta.c - data metadata (contract in gx_meta.h) and its REST routes:
 *
 *   GET  /api/v1/datasources/{name}/tables?q=&limit=&refresh=
 *   GET  /api/v1/datasources/{name}/tables/{table}?refresh=
 *   POST /api/v1/transfers/preview {"config": job, "rows": 1..20}
 *
 * A read asks halleyd's cache (GetDataSourceMeta) first; on a miss or a
 * refresh it asks an executor (POST /v1/meta on the log server of a live
 * executor from ZooKeeper, the executor log token as bearer), stores the
 * answer (PutDataSourceMeta) and answers it. The table list is cached whole
 * and filtered here. The preview is never cached. galaxyd never sees a
 * password: the executor resolves data sources with its worker token.
 *
 * Executors are tried from a random one in turn until one answers; a
 * connection that fails moves on to the next, an answer (even an error) is
 * final. None alive: ORR_EUNAVAIL (503).
 */
#include "gx_meta.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_input.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_name.h"

#define GX_META_TIMEOUT_MS 35000L /* the executor's own limit is 30 s */
#define GX_META_OUT_MAX    (16u * 1024 * 1024)

static atomic_ullong gx__meta_fetches; /* requests sent to an executor */
static atomic_ullong gx__meta_hits;    /* answers from the cache */

void gx_meta_metrics(orr_buf *out)
{
    orr_buf_appendf(out,
                    "# HELP galaxy_meta_fetches_total Data-metadata and preview requests sent to "
                    "an executor.\n# TYPE galaxy_meta_fetches_total counter\n"
                    "galaxy_meta_fetches_total %llu\n"
                    "# HELP galaxy_meta_cache_hits_total Data-metadata answers taken from "
                    "halleyd's cache.\n# TYPE galaxy_meta_cache_hits_total counter\n"
                    "galaxy_meta_cache_hits_total %llu\n",
                    (unsigned long long)atomic_load(&gx__meta_fetches),
                    (unsigned long long)atomic_load(&gx__meta_hits));
}

/* ------------------------------------------------------------ executors */

struct gx__sink {
    orr_buf *buf;
    int over;
};

static size_t gx__write(char *p, size_t sz, size_t n, void *ud)
{
    struct gx__sink *s = ud;
    size_t k = sz * n;
    if (s->buf->len + k > GX_META_OUT_MAX) {
        s->over = 1;
        return 0;
    }
    orr_buf_append(s->buf, p, k);
    return k;
}

/* POST body to /v1/<op> of a live executor. *status: its HTTP status, out
 * its body. ORR_EUNAVAIL when none could be reached. */
static orr_status gx__exec_post(gx_app *app, const char *op, const char *body, orr_buf *out,
                                long *status, orr_err *err)
{
    if (!app->zk)
        return orr_err_set(err, ORR_EUNAVAIL, "executor",
                           "galaxyd has no [galaxy] zk: no executor can be asked");
    orr_arena *a = orr_arena_create(4096);
    char **names = NULL;
    size_t n = 0;
    orr_err e;
    orr_status rc = orr_zk_children(app->zk, "/orrery/executors", a, &names, &n, &e);
    if (rc != ORR_OK)
        n = 0;
    const char *tok = orr_config_str(app->cfg, "galaxy", "executor_log_token");
    char auth[512];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok ? tok : "");
    size_t start = n ? (size_t)rand() % n : 0;
    rc = orr_err_set(err, ORR_EUNAVAIL, "executor", "no executor is alive to read the catalog");
    for (size_t k = 0; k < n; k++) {
        const char *id = names[(start + k) % n];
        char zpath[300];
        snprintf(zpath, sizeof zpath, "/orrery/executors/%s", id);
        orr_buf card = ORR_BUF_INIT;
        json_t *j = NULL;
        if (orr_zk_get(app->zk, zpath, &card, &e) == ORR_OK && card.len)
            j = json_loadb(card.data, card.len, 0, NULL);
        orr_buf_free(&card);
        const char *host = json_string_value(json_object_get(j, "host"));
        json_int_t port = json_integer_value(json_object_get(j, "http_port"));
        if (!host || port <= 0 || port > 65535) {
            json_decref(j);
            continue;
        }
        char url[600];
        snprintf(url, sizeof url, "http://%.256s:%lld/v1/%s", host, (long long)port, op);
        json_decref(j);
        CURL *h = curl_easy_init();
        struct curl_slist *hdr = curl_slist_append(NULL, auth);
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
        struct gx__sink sink = {out, 0};
        orr_buf_reset(out);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, gx__write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, GX_META_TIMEOUT_MS);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
        atomic_fetch_add(&gx__meta_fetches, 1);
        CURLcode cc = curl_easy_perform(h);
        *status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        curl_slist_free_all(hdr);
        curl_easy_cleanup(h);
        if (cc == CURLE_OK && *status > 0) {
            rc = ORR_OK;
            break;
        }
        if (cc == CURLE_OPERATION_TIMEDOUT) {
            rc = orr_err_set(err, ORR_ETIMEOUT, "executor", "executor %s did not answer in time",
                             id);
            break;
        }
        if (sink.over) {
            rc = orr_err_set(err, ORR_ETOOBIG, "executor", "the answer is larger than 16 MiB");
            break;
        }
        ORR_WARN("executor unreachable for metadata", "executor=%s err=%s", orr_log_q(id),
                 orr_log_q(curl_easy_strerror(cc)));
    }
    orr_arena_destroy(a);
    return rc;
}

/* Ask an executor; map its answer. *out: the JSON object on ORR_OK. */
static orr_status gx__exec_json(gx_app *app, const char *op, json_t *req, json_t **out,
                                orr_err *err)
{
    char *body = json_dumps(req, JSON_COMPACT);
    orr_buf ans = ORR_BUF_INIT;
    long status = 0;
    orr_status rc = gx__exec_post(app, op, body, &ans, &status, err);
    free(body);
    if (rc != ORR_OK)
        goto out;
    json_t *j = json_loadb(ans.data ? ans.data : "", ans.len, 0, NULL);
    if (status == 200 && json_is_object(j)) {
        *out = j;
        goto out;
    }
    json_t *eo = json_object_get(j, "error");
    const char *field = json_string_value(json_object_get(eo, "field"));
    const char *msg = json_string_value(json_object_get(eo, "message"));
    orr_status code = status == 400   ? ORR_EINVAL
                      : status == 404 ? ORR_ENOTFOUND
                      : status == 401 ? ORR_EUNAVAIL
                      : status == 503 ? ORR_EUNAVAIL
                      : status == 504 ? ORR_ETIMEOUT
                                      : ORR_EIO;
    if (status == 401)
        msg = "the executor refused galaxyd's executor_log_token";
    rc = orr_err_set(err, code, field ? field : "executor", "%s",
                     msg ? msg : "the executor answered an error");
    json_decref(j);
out:
    orr_buf_free(&ans);
    return rc;
}

/* ------------------------------------------------------------ the cache */

#define GX__TABLE_RULE                                                                             \
    "must be \"schema.name\" or \"name\": valid UTF-8 without control characters, no blank at "    \
    "either end, both parts present around the first dot, a name alone at most 128 bytes, the "    \
    "whole at most 512"

/* 1 if table names a table as "schema.name" or "name" (the data source's
 * default schema): valid UTF-8 without control characters, no blank at
 * either end. */
static int gx__table_ok(const char *table)
{
    size_t n = table ? strlen(table) : 0;
    if (n < 1 || n > 512 || gx_text_problem(table, n))
        return 0;
    if (table[0] == ' ' || table[n - 1] == ' ')
        return 0;
    const char *dot = strchr(table, '.');
    if (!dot)
        return n <= 128;
    return dot > table && dot[1] != '\0';
}

static orr_status gx__meta(gx_app *app, const char *ds, const char *what, const char *table,
                           int refresh, json_t **out, orr_err *err)
{
    *out = NULL;
    if (!orr_name_ok(ds, 128))
        return orr_err_set(err, ORR_EINVAL, "datasource", "must be " ORR_NAME_RULE);
    if (table && !gx__table_ok(table))
        return orr_err_set(err, ORR_EINVAL, "table", GX__TABLE_RULE);
    orr_status rc;
    if (!refresh) {
        HL(GetDataSourceMetaRequest) rq = HL_INIT(GET_DATA_SOURCE_META_REQUEST);
        rq.datasource = (char *)ds;
        rq.what = (char *)what;
        rq.table = (char *)(table ? table : "");
        ProtobufCMessage *resp = NULL;
        rc = orr_rpc_call_unary(app->halley, "GetDataSourceMeta", &rq.base, &resp,
                                app->rpc_timeout_ms, err);
        if (rc == ORR_OK) {
            HL(DataSourceMeta) *m = (HL(DataSourceMeta) *)resp;
            json_t *j = json_loads(m->payload_json, 0, NULL);
            if (json_is_object(j)) {
                json_object_set_new(j, "fetched_at", gx_json_time(m->fetched_at_ms));
                atomic_fetch_add(&gx__meta_hits, 1);
                *out = j;
            } else {
                json_decref(j);
            }
            protobuf_c_message_free_unpacked(resp, NULL);
            if (*out)
                return ORR_OK;
        } else if (rc == ORR_ENOTFOUND && strcmp(err->field, "datasource") == 0) {
            return orr_err_set(err, ORR_ENOTFOUND, "datasource", "no data source named %s", ds);
        } else if (rc != ORR_ENOTFOUND && rc != ORR_EUNIMPL) {
            return rc;
        }
    }
    json_t *req = json_pack("{s:s, s:s}", "datasource", ds, "what", what);
    if (table)
        json_object_set_new(req, "table", json_string(table));
    json_t *ans = NULL;
    rc = gx__exec_json(app, "meta", req, &ans, err);
    json_decref(req);
    if (rc != ORR_OK)
        return rc;
    char *payload = json_dumps(ans, JSON_COMPACT);
    HL(PutDataSourceMetaRequest) pq = HL_INIT(PUT_DATA_SOURCE_META_REQUEST);
    pq.datasource = (char *)ds;
    pq.what = (char *)what;
    pq.table = (char *)(table ? table : "");
    pq.payload_json = payload;
    ProtobufCMessage *presp = NULL;
    orr_err pe;
    int64_t at = (int64_t)time(NULL) * 1000;
    if (orr_rpc_call_unary(app->halley, "PutDataSourceMeta", &pq.base, &presp, app->rpc_timeout_ms,
                           &pe) == ORR_OK) {
        at = ((HL(DataSourceMeta) *)presp)->fetched_at_ms;
        protobuf_c_message_free_unpacked(presp, NULL);
    } else {
        ORR_WARN("metadata not cached", "datasource=%s err=%s", orr_log_q(ds), orr_log_q(pe.msg));
    }
    free(payload);
    json_object_set_new(ans, "fetched_at", gx_json_time(at));
    *out = ans;
    return ORR_OK;
}

orr_status gx_meta_table_ex(gx_app *app, const char *datasource, const char *table, int refresh,
                            json_t **out, orr_err *err)
{
    if (!table)
        return orr_err_set(err, ORR_EINVAL, "table", "is required");
    return gx__meta(app, datasource, "table", table, refresh, out, err);
}

json_t *gx_meta_column(json_t *table, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(table, "columns"), i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && strcmp(n, name) == 0)
            return c;
    }
    return NULL;
}

orr_status gx_meta_table(gx_app *app, const char *datasource, const char *table, json_t **out,
                         orr_err *err)
{
    return gx_meta_table_ex(app, datasource, table, 0, out, err);
}

orr_status gx_meta_tables(gx_app *app, const char *datasource, int refresh, json_t **out,
                          orr_err *err)
{
    return gx__meta(app, datasource, "tables", NULL, refresh, out, err);
}

/* ------------------------------------------------------------ REST */

/* Answer err; an error about the data source names the path parameter. */
static void gx__meta_fail(gx_resp *resp, orr_err *err)
{
    if (strcmp(err->field, "datasource") == 0)
        snprintf(err->field, sizeof err->field, "name");
    gx_resp_err(resp, err);
}

static int gx__contains_ci(const char *hay, const char *needle)
{
    return strcasestr(hay, needle) != NULL;
}

void gx_h_meta_tables(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 1000, 1, 100000, &limit))
        return;
    int refresh = gx_req_query_bool(req, resp, "refresh", 0);
    if (refresh < 0)
        return;
    const char *q = gx_req_query(req, "q");
    if (q && strlen(q) > 256) {
        gx_resp_fail(resp, ORR_EINVAL, "q", "at most 256 bytes");
        return;
    }
    json_t *all = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (gx_meta_tables(app, name, refresh, &all, &err) != ORR_OK) {
        gx__meta_fail(resp, &err);
        return;
    }
    json_t *list = json_object_get(all, "tables"), *keep = json_array();
    int truncated = 0;
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t)
    {
        if (q && q[0]) {
            char full[1024];
            const char *sc = json_string_value(json_object_get(t, "schema"));
            const char *tn = json_string_value(json_object_get(t, "name"));
            snprintf(full, sizeof full, "%s.%s", sc ? sc : "", tn ? tn : "");
            if (!gx__contains_ci(full, q))
                continue;
        }
        if ((int64_t)json_array_size(keep) >= limit) {
            truncated = 1;
            break;
        }
        json_array_append(keep, t);
    }
    json_t *at = json_object_get(all, "fetched_at");
    json_t *ans = json_pack("{s:o, s:O, s:b}", "tables", keep, "fetched_at", at ? at : json_null(),
                            "truncated", truncated);
    json_decref(all);
    gx_resp_json(resp, 200, ans);
}

void gx_h_meta_table(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    const char *name = gx_req_param(req, 0);
    const char *table = gx_req_param(req, 1);
    if (!gx_check_name(resp, name, "name"))
        return;
    int refresh = gx_req_query_bool(req, resp, "refresh", 0);
    if (refresh < 0)
        return;
    if (!gx__table_ok(table)) {
        gx_resp_fail(resp, ORR_EINVAL, "table", GX__TABLE_RULE);
        return;
    }
    json_t *ans = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (gx_meta_table_ex(app, name, table, refresh, &ans, &err) != ORR_OK) {
        gx__meta_fail(resp, &err);
        return;
    }
    gx_resp_json(resp, 200, ans);
}

void gx_h_transfer_preview(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    json_t *cfg = json_object_get(body, "config");
    json_t *rows = json_object_get(body, "rows");
    if (!json_is_object(cfg)) {
        gx_resp_fail(resp, ORR_EINVAL, "config", "must be the transfer job (an object)");
        return;
    }
    if (rows &&
        (!json_is_integer(rows) || json_integer_value(rows) < 1 || json_integer_value(rows) > 20)) {
        gx_resp_fail(resp, ORR_EINVAL, "rows", "must be an integer from 1 to 20");
        return;
    }
    json_t *rq = json_pack("{s:O, s:I}", "config", cfg, "rows",
                           (json_int_t)(rows ? json_integer_value(rows) : 20));
    json_t *ans = NULL;
    orr_err err;
    orr_err_clear(&err);
    orr_status rc = gx__exec_json(app, "preview", rq, &ans, &err);
    json_decref(rq);
    if (rc != ORR_OK) {
        gx_resp_err(resp, &err);
        return;
    }
    gx_resp_json(resp, 200, ans);
}
