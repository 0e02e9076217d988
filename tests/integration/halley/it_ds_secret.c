/*
 * it_ds_secret.c - GetDataSourceSecret end to end: the worker token reads a
 * data source's secret (empty when none is stored) and opens nothing else;
 * the service token, a wrong or empty token are refused, and a halleyd
 * without worker_token refuses every caller.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

#define WORKER_TOKEN "worker-token-for-tests"

static orr_rpc_client *cl;
static orr_err err;

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

/* ----------------------------------------------------------- secrets */

static void test_secret(const hlt_server *s, const hlt_server *plain)
{
    Orrery__Halley__V1__PutDataSourceRequest ds = ORRERY__HALLEY__V1__PUT_DATA_SOURCE_REQUEST__INIT;
    ds.name = "warehouse";
    ds.kind = "postgresql";
    ds.params_json = "{\"host\":\"db1\"}";
    ds.secret = "s3cr3t-passw0rd";
    Orrery__Halley__V1__DataSource *d = NULL;
    HLT_CHECK(hlt_call(cl, "PutDataSource", &ds, &d, &err) == ORR_OK, "put: %s", err.msg);
    if (d)
        FREE(d);
    ds.name = "open";
    ds.secret = "";
    d = NULL;
    HLT_CHECK(hlt_call(cl, "PutDataSource", &ds, &d, &err) == ORR_OK, "put: %s", err.msg);
    if (d)
        FREE(d);

    Orrery__Halley__V1__GetDataSourceSecretRequest rq =
        ORRERY__HALLEY__V1__GET_DATA_SOURCE_SECRET_REQUEST__INIT;
    rq.name = "warehouse";
    Orrery__Halley__V1__DataSourceSecret *r = NULL;
    orr_rpc_client *w = hlt_client(s, WORKER_TOKEN);
    HLT_CHECK(hlt_call(w, "GetDataSourceSecret", &rq, &r, &err) == ORR_OK &&
                  strcmp(r->secret, "s3cr3t-passw0rd") == 0 && strcmp(r->kind, "postgresql") == 0 &&
                  strstr(r->params_json, "db1"),
              "worker reads the secret: %s", err.msg);
    if (r)
        FREE(r);
    rq.name = "open";
    r = NULL;
    HLT_CHECK(hlt_call(w, "GetDataSourceSecret", &rq, &r, &err) == ORR_OK && r->secret[0] == 0,
              "no secret stored: empty");
    if (r)
        FREE(r);
    rq.name = "ghost";
    HLT_CHECK(hlt_call(w, "GetDataSourceSecret", &rq, &r, &err) == ORR_ENOTFOUND,
              "missing data source");
    /* The worker token opens nothing else. */
    Orrery__Halley__V1__GetDataSourceRequest gd = ORRERY__HALLEY__V1__GET_DATA_SOURCE_REQUEST__INIT;
    gd.name = "warehouse";
    d = NULL;
    HLT_CHECK(hlt_call(w, "GetDataSource", &gd, &d, &err) == ORR_EAUTH,
              "worker token is not the service token");
    orr_rpc_client_destroy(w);
    rq.name = "warehouse";
    HLT_CHECK(hlt_call(cl, "GetDataSourceSecret", &rq, &r, &err) == ORR_EPERM,
              "service token cannot read secrets");
    w = hlt_client(s, "worker-token-for-testsX");
    /* an unidentified caller is UNAUTHENTICATED, not merely refused */
    HLT_CHECK(hlt_call(w, "GetDataSourceSecret", &rq, &r, &err) == ORR_EAUTH, "wrong worker token");
    orr_rpc_client_destroy(w);
    w = hlt_client(s, "");
    HLT_CHECK(hlt_call(w, "GetDataSourceSecret", &rq, &r, &err) == ORR_EAUTH, "no token");
    orr_rpc_client_destroy(w);
    /* A halleyd without worker_token refuses every caller (a token it does
     * not know identifies no one). */
    w = hlt_client(plain, WORKER_TOKEN);
    HLT_CHECK(hlt_call(w, "GetDataSourceSecret", &rq, &r, &err) == ORR_EAUTH,
              "unset worker_token: refused");
    orr_rpc_client_destroy(w);
    w = hlt_client(plain, NULL);
    HLT_CHECK(hlt_call(w, "GetDataSourceSecret", &rq, &r, &err) == ORR_EPERM,
              "unset worker_token: service token refused too");
    orr_rpc_client_destroy(w);
}

int main(void)
{
    hlt_db db;
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s, plain;
    const char *env[] = {"ORRERY_HALLEY_WORKER_TOKEN=" WORKER_TOKEN, NULL};
    if (hlt_start(&s, db.dsn, env, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_ds_secret");
    }
    int plain_up = hlt_start(&plain, db.dsn, NULL, NULL) == 0;
    HLT_CHECK(plain_up, "second halleyd (no worker token) started");
    cl = hlt_client(&s, NULL);
    if (plain_up)
        test_secret(&s, &plain);
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    if (plain_up)
        HLT_CHECK(hlt_stop(&plain) == 0, "second halleyd exits 0");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_ds_secret");
}
