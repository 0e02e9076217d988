/* sort_specsrc.c - stream specs from ZooKeeper or Halley (see sort_specsrc.h). */
#include "sort_specsrc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halley.pb-c.h"
#include "orr_alloc.h"
#include "orr_json.h"
#include "orr_rpc.h"
#include "orr_zk.h"

#define SPECSRC_RPC_TIMEOUT_MS 5000
#define SPECSRC_ZK_TIMEOUT_MS  5000

struct sort_specsrc {
    int kind; /* 0 zk, 1 halley */
    char name[SORT_NAME_MAX + 1];
    char where[512];
    char path[SORT_NAME_MAX + 64];
    orr_zk *zk;
    void (*notify)(void *ctx); /* zk: the node watch's callback */
    void *notify_ctx;
    orr_rpc_client *rpc;
};

static orr_status specsrc_new(const char *name, int kind, sort_specsrc **out, orr_err *err)
{
    if (!name || !sort_name_ok(name, strlen(name)))
        return orr_err_set(err, ORR_EINVAL, "stream",
                           "stream name must be 1..128 of [A-Za-z0-9_.-]");
    sort_specsrc *s = orr_xcalloc(1, sizeof *s);
    s->kind = kind;
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->path, sizeof s->path, "/orrery/streams/%s", name);
    *out = s;
    return ORR_OK;
}

orr_status sort_specsrc_open_zk(const char *hosts, const char *name, sort_specsrc **out,
                                orr_err *err)
{
    if (!hosts || !*hosts)
        return orr_err_set(err, ORR_EINVAL, "zookeeper", "no ZooKeeper hosts configured");
    orr_status rc = specsrc_new(name, 0, out, err);
    if (rc != ORR_OK)
        return rc;
    sort_specsrc *s = *out;
    snprintf(s->where, sizeof s->where, "zk:%s", s->path);
    orr_err zerr;
    orr_err_clear(&zerr);
    /* Down at start is fine: the handle retries on every fetch. */
    orr_zk_open(hosts, SPECSRC_ZK_TIMEOUT_MS, &s->zk, &zerr);
    if (!s->zk) {
        free(s);
        *out = NULL;
        return orr_err_set(err, ORR_EUNAVAIL, "zookeeper", "%s", zerr.msg);
    }
    return ORR_OK;
}

orr_status sort_specsrc_open_halley(const char *addr, const char *token, const char *name,
                                    sort_specsrc **out, orr_err *err)
{
    if (!addr || !*addr)
        return orr_err_set(err, ORR_EINVAL, "halley", "no Halley address configured");
    orr_status rc = specsrc_new(name, 1, out, err);
    if (rc != ORR_OK)
        return rc;
    sort_specsrc *s = *out;
    snprintf(s->where, sizeof s->where, "halley:%s/%s", addr, name);
    rc = orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, addr,
                               token && *token ? token : NULL, &s->rpc, err);
    if (rc != ORR_OK) {
        free(s);
        *out = NULL;
    }
    return rc;
}

const char *sort_specsrc_where(const sort_specsrc *s)
{
    return s->where;
}

void sort_specsrc_close(sort_specsrc *s)
{
    if (!s)
        return;
    if (s->zk)
        orr_zk_close(s->zk);
    if (s->rpc)
        orr_rpc_client_destroy(s->rpc);
    free(s);
}

/* Parse the spec object (or JSON text when spec_text is set) into doc. */
static orr_status specsrc_parse(sort_specsrc *s, const json_t *spec_obj, const char *spec_text,
                                const char *path, sort_spec_doc *doc, orr_err *err)
{
    json_t *owned = NULL;
    if (spec_text) {
        orr_status rc = orr_json_parse(spec_text, strlen(spec_text), &owned, err);
        if (rc != ORR_OK) {
            snprintf(err->field, sizeof err->field, "%s", path);
            return rc;
        }
        spec_obj = owned;
    }
    orr_status rc = sort_spec_parse(spec_obj, path, &doc->spec, err);
    json_decref(owned);
    if (rc == ORR_OK && strcmp(doc->spec->name, s->name) != 0) {
        rc = orr_err_set(err, ORR_EINVAL, "spec.name", "spec names stream %s, not %s",
                         doc->spec->name, s->name);
        sort_spec_free(doc->spec);
        doc->spec = NULL;
    }
    return rc;
}

static orr_status specsrc_fetch_zk(sort_specsrc *s, sort_spec_doc *doc, orr_err *err)
{
    orr_buf b = ORR_BUF_INIT;
    json_t *root = NULL;
    orr_status rc = s->notify ? orr_zk_get_watch(s->zk, s->path, &b, s->notify, s->notify_ctx, err)
                              : orr_zk_get(s->zk, s->path, &b, err);
    if (rc != ORR_OK)
        goto out;
    rc = orr_json_parse(b.data ? b.data : "", b.len, &root, err);
    if (rc != ORR_OK) {
        snprintf(err->field, sizeof err->field, "zk");
        goto out;
    }
    if (!json_is_object(root)) {
        rc = orr_err_set(err, ORR_EINVAL, "zk", "node %s does not hold a JSON object", s->path);
        goto out;
    }
    const char *name = NULL;
    json_t *spec = NULL;
    rc = orr_json_get_int(root, "zk", "version", 1, 0, INT64_MAX, &doc->version, err);
    if (rc == ORR_OK)
        rc = orr_json_get_str(root, "zk", "name", 1, &name, err);
    doc->active = 1;
    if (rc == ORR_OK)
        rc = orr_json_get_bool(root, "zk", "active", 0, &doc->active, err);
    if (rc == ORR_OK)
        rc = orr_json_get_obj(root, "zk", "spec", 1, &spec, err);
    if (rc == ORR_OK && strcmp(name, s->name) != 0)
        rc = orr_err_set(err, ORR_EINVAL, "zk.name", "node names stream %s, not %s", name, s->name);
    if (rc == ORR_OK)
        rc = specsrc_parse(s, spec, NULL, "zk.spec", doc, err);
out:
    json_decref(root);
    orr_buf_free(&b);
    return rc;
}

static orr_status specsrc_fetch_halley(sort_specsrc *s, sort_spec_doc *doc, orr_err *err)
{
    Orrery__Halley__V1__GetSortStreamRequest rq = ORRERY__HALLEY__V1__GET_SORT_STREAM_REQUEST__INIT;
    rq.name = s->name;
    ProtobufCMessage *resp = NULL;
    orr_status rc =
        orr_rpc_call_unary(s->rpc, "GetSortStream", &rq.base, &resp, SPECSRC_RPC_TIMEOUT_MS, err);
    if (rc != ORR_OK)
        return rc;
    const Orrery__Halley__V1__SortStream *st = (const void *)resp;
    doc->version = st->version;
    doc->active = st->active;
    rc = specsrc_parse(s, NULL, st->spec_json ? st->spec_json : "", "halley.spec_json", doc, err);
    protobuf_c_message_free_unpacked(resp, NULL);
    return rc;
}

orr_status sort_specsrc_fetch(sort_specsrc *s, sort_spec_doc *doc, orr_err *err)
{
    memset(doc, 0, sizeof *doc);
    doc->version = -1;
    return s->kind == 0 ? specsrc_fetch_zk(s, doc, err) : specsrc_fetch_halley(s, doc, err);
}

void sort_specsrc_on_change(sort_specsrc *s, void (*fn)(void *ctx), void *ctx)
{
    s->notify = fn;
    s->notify_ctx = ctx;
}
