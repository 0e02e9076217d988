/*
 * hl_api_packages.c - code packages and their deployments:
 * CreateCodePackage, GetCodePackage, ListCodePackages (paged, newest first)
 * and ReportDeployment. A new package writes its row, an audit record and a
 * "package.created" event in one transaction; a deployment report upserts the
 * (package, executor) row and emits "package.deployed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_page.h"
#include "orr_name.h"
#include "orr_log.h"

typedef Orrery__Halley__V1__CodePackage hl_pb_package;
typedef Orrery__Halley__V1__Deployment hl_pb_deployment;

#define HL_PACKAGE_COLS                                                                            \
    "p.id, p.name, p.sha256, p.size, p.source, p.created_by, " HL_MS("p.created_at")

static hl_stmt q_insert_package =
    HL_STMT("INSERT INTO code_packages (name, sha256, size, source, created_by)"
            " VALUES ($1, $2, $3::int8, $4, $5) RETURNING id");
static hl_stmt q_existing_package =
    HL_STMT("SELECT id FROM code_packages WHERE name = $1 AND sha256 = $2");
/* $1 id (0 = any), $2 name ("" = any), $3 limit. Newest (highest id) first. */
static hl_stmt q_list_packages =
    HL_STMT("SELECT " HL_PACKAGE_COLS " FROM code_packages p"
            " WHERE ($1::int8 = 0 OR p.id = $1::int8) AND ($2 = '' OR p.name = $2)"
            " ORDER BY p.id DESC LIMIT $3::int");
#define HL_DEPLOYMENT_COLS                                                                         \
    "d.package_id, d.executor_id, d.result, d.message, " HL_MS("d.updated_at")
static hl_stmt q_deployments =
    HL_STMT("SELECT " HL_DEPLOYMENT_COLS " FROM package_deployments d"
            " WHERE d.package_id = ANY($1::int8[]) ORDER BY d.package_id DESC, d.executor_id");
static hl_stmt q_report_deployment =
    HL_STMT("INSERT INTO package_deployments AS d (package_id, executor_id, result, message)"
            " VALUES ($1::int8, $2, $3, $4) ON CONFLICT (package_id, executor_id) DO UPDATE"
            " SET result = excluded.result, message = excluded.message, updated_at = now()"
            " RETURNING " HL_DEPLOYMENT_COLS);

/* A page of packages, newest first: id < $1 unless $1 is 0. */
static hl_stmt q_page_packages =
    HL_STMT("SELECT " HL_PACKAGE_COLS " FROM code_packages p"
            " WHERE ($1::int8 = 0 OR p.id < $1::int8) AND ($2 = '' OR p.name = $2)"
            " ORDER BY p.id DESC LIMIT $3::int");

/* ------------------------------------------------------------ code packages */

static void hl__fill_deployment(const PGresult *r, int row, hl_pb_deployment *d)
{
    orrery__halley__v1__deployment__init(d);
    d->package_id = hl_val_i64(r, row, 0);
    d->executor = (char *)hl_val(r, row, 1);
    d->result = (char *)hl_val(r, row, 2);
    d->message = (char *)hl_val(r, row, 3);
    d->updated_at_ms = hl_val_i64(r, row, 4);
}

/* Packages of result r (HL_PACKAGE_COLS, id descending) with their
 * deployments, read on c. *out is an arena array of n pointers. */
static orr_status hl__read_packages(hl_conn *c, orr_arena *a, const PGresult *r,
                                    hl_pb_package ***out, size_t *n_out, orr_err *err)
{
    int n = PQntuples(r);
    hl_pb_package **ps = hl_alloc_n(a, sizeof *ps, (size_t)n);
    hl_pb_package *pk = hl_alloc_n(a, sizeof *pk, (size_t)n);
    int64_t *ids = hl_alloc_n(a, sizeof *ids, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__code_package__init(&pk[i]);
        pk[i].id = ids[i] = hl_val_i64(r, i, 0);
        pk[i].name = (char *)hl_val(r, i, 1);
        pk[i].sha256 = (char *)hl_val(r, i, 2);
        pk[i].size = hl_val_i64(r, i, 3);
        pk[i].source = (char *)hl_val(r, i, 4);
        pk[i].created_by = (char *)hl_val(r, i, 5);
        pk[i].created_at_ms = hl_val_i64(r, i, 6);
        ps[i] = &pk[i];
    }
    *out = ps;
    *n_out = (size_t)n;
    if (n == 0)
        return ORR_OK;
    const char *p[1] = {hl_id_array(a, ids, (size_t)n)};
    PGresult *d;
    orr_status s = hl_db_query(c, a, &q_deployments, 1, p, &d, err);
    if (s != ORR_OK)
        return s;
    /* Both sides are in descending package id: one merge pass. */
    int nd = PQntuples(d), k = 0;
    hl_pb_deployment *ds = hl_alloc_n(a, sizeof *ds, (size_t)nd);
    for (int i = 0; i < n; i++) {
        while (k < nd && hl_val_i64(d, k, 0) > pk[i].id)
            k++;
        int first = k;
        while (k < nd && hl_val_i64(d, k, 0) == pk[i].id)
            k++;
        pk[i].n_deployments = (size_t)(k - first);
        pk[i].deployments =
            orr_arena_alloc(a, sizeof *pk[i].deployments * (size_t)(k > first ? k - first : 1));
        for (int j = first; j < k; j++) {
            hl__fill_deployment(d, j, &ds[j]);
            pk[i].deployments[j - first] = &ds[j];
        }
    }
    return ORR_OK;
}

static int hl__is_sha256(const char *s)
{
    if (strlen(s) != 64)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

HL_UNARY(hl_api_create_code_package)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__CreateCodePackageRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl__is_sha256(rq->sha256))
        return orr_err_set(err, ORR_EINVAL, "sha256", "must be 64 lower-case hex digits");
    if (rq->size <= 0)
        return orr_err_set(err, ORR_EINVAL, "size", "must be positive");
    if (!hl_is_printable(rq->source, 4096))
        return orr_err_set(err, ORR_EINVAL, "source",
                           "the archive's blob URL is required (1-4096 bytes, no spaces)");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[5] = {rq->name, rq->sha256, hl_i64s(a, rq->size), rq->source, rq->actor};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK)
        goto out;
    s = hl_db_query(c, a, &q_insert_package, 5, p, &r, err);
    if (s == ORR_EEXIST) {
        hl_db_rollback(c);
        PGresult *e;
        long long id = 0;
        if (hl_db_query(c, a, &q_existing_package, 2, p, &e, err) == ORR_OK && PQntuples(e) > 0)
            id = hl_val_i64(e, 0, 0);
        s = orr_err_set(err, ORR_EEXIST, "sha256",
                        "package \"%s\" with this sha256 is stored (id %lld)", rq->name, id);
        goto out;
    }
    if (s != ORR_OK)
        goto out;
    const char *id = hl_val(r, 0, 0);
    const char *pg[3] = {id, "", "1"};
    hl_pb_package **ps;
    size_t n;
    if ((s = hl_audit(c, a, rq->actor, "package.create", orr_arena_sprintf(a, "package:%s", id),
                      orr_arena_sprintf(a, "{\"name\":%s,\"sha256\":\"%s\",\"size\":%lld}",
                                        hl_jstr(a, rq->name), rq->sha256, (long long)rq->size),
                      err)) != ORR_OK ||
        (s = hl_emit(c, a, "package.created", 0, 0, NULL,
                     orr_arena_sprintf(a, "{\"id\":%s,\"name\":%s,\"sha256\":\"%s\",\"source\":%s}",
                                       id, hl_jstr(a, rq->name), rq->sha256,
                                       hl_jstr(a, rq->source)),
                     NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_list_packages, 3, pg, &r, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    if ((s = hl__read_packages(c, a, r, &ps, &n, err)) != ORR_OK)
        goto out;
    *resp = &ps[0]->base;
    ORR_INFO("code package created", "package_id=%lld name=%s sha256=%s", (long long)ps[0]->id,
             orr_log_q(rq->name), rq->sha256);
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_get_code_package)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetCodePackageRequest);
    orr_status bad = hl_id_or_name(rq->id, rq->name, err);
    if (bad != ORR_OK)
        return bad;
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[3] = {hl_i64s(a, rq->id), rq->name, "1"};
    PGresult *r;
    hl_pb_package **ps;
    size_t n = 0;
    if ((s = hl_db_query(c, a, &q_list_packages, 3, p, &r, err)) == ORR_OK)
        s = hl__read_packages(c, a, r, &ps, &n, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (n == 0)
        return orr_err_set(err, ORR_ENOTFOUND, rq->id ? "id" : "name", "no such code package");
    *resp = &ps[0]->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_code_packages)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListCodePackagesRequest);
    if (rq->name[0] && !hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "not a package name");
    hl_page pg; /* limit is the deprecated name of page_size */
    orr_status s = hl_page_begin_limit(a, "packages", "i", rq->page_size, rq->limit, HL_PAGE_MAX,
                                       rq->page_token, HL_PAGE_DEFAULT, &pg, err);
    if (s != ORR_OK)
        return s;
    int size = pg.size;
    const char *before = pg.keys[0];
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[3] = {before, rq->name, orr_arena_sprintf(a, "%d", size + 1)};
    PGresult *r;
    Orrery__Halley__V1__ListCodePackagesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_code_packages_response__init(o);
    if ((s = hl_db_query(c, a, &q_page_packages, 3, p, &r, err)) == ORR_OK)
        s = hl__read_packages(c, a, r, &o->packages, &o->n_packages, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (o->n_packages > (size_t)size) {
        o->n_packages = (size_t)size;
        const char *k[1] = {hl_i64s(a, o->packages[size - 1]->id)};
        o->next_page_token = hl_page_next(a, &pg, k);
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_report_deployment)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ReportDeploymentRequest);
    if (rq->package_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "package_id", "must be positive");
    if (!hl_is_name(rq->executor, 128))
        return orr_err_set(err, ORR_EINVAL, "executor", "must be " ORR_NAME_RULE);
    if (strcmp(rq->result, "pending") != 0 && strcmp(rq->result, "ok") != 0 &&
        strcmp(rq->result, "failed") != 0)
        return orr_err_set(err, ORR_EINVAL, "result", "must be pending, ok or failed");
    if (strlen(rq->message) > 16384)
        return orr_err_set(err, ORR_EINVAL, "message", "at most 16 KiB");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[4] = {hl_i64s(a, rq->package_id), rq->executor, rq->result, rq->message};
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK) {
        s = hl_db_query(c, a, &q_report_deployment, 4, p, &r, err);
        if (s == ORR_ENOTFOUND) /* foreign key: no such package */
            s = orr_err_set(err, ORR_ENOTFOUND, "package_id", "no code package %lld",
                            (long long)rq->package_id);
    }
    if (s == ORR_OK &&
        (s = hl_emit(c, a, "package.deployed", 0, 0, rq->executor,
                     orr_arena_sprintf(a, "{\"package_id\":%s,\"executor\":%s,\"result\":\"%s\"}",
                                       p[0], hl_jstr(a, rq->executor), rq->result),
                     NULL, err)) == ORR_OK)
        s = hl_db_commit(c, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    hl_pb_deployment *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_deployment(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}
