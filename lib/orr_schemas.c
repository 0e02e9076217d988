/* orr_schemas.c - compile an embedded project schema (see orr_schemas.h). */
#include "orr_schemas.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "orr_json.h"

orr_status orr_schema_load(const char *name, orr_jschema **out, orr_err *err)
{
    *out = NULL;
    const orr_embedded_file *f = orr_embed_find(orr_schema_files, name);
    if (!f)
        return orr_err_set(err, ORR_EINTERNAL, name, "not embedded in this build");
    json_t *doc = NULL;
    orr_status s = orr_json_parse((const char *)f->data, f->len, &doc, err);
    if (s == ORR_OK) {
        s = orr_jschema_load(doc, out, err);
        json_decref(doc);
    }
    if (s != ORR_OK) {
        /* Copies first: err is written while they are read. */
        char field[sizeof err->field], msg[sizeof err->msg];
        snprintf(field, sizeof field, "%s", err->field);
        snprintf(msg, sizeof msg, "%s", err->msg);
        return orr_err_set(err, ORR_EINTERNAL, name, "%s%s%s", field, *field ? ": " : "", msg);
    }
    return ORR_OK;
}

/* Compiled schemas, one per embedded file at most, kept until exit. */
static pthread_mutex_t orr__schemas_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const char *name; /* the embedded file's own name (static) */
    orr_jschema *js;
} orr__schemas[16];

orr_status orr_schema_get(const char *name, const orr_jschema **out, orr_err *err)
{
    orr_status s = ORR_OK;
    size_t n = sizeof orr__schemas / sizeof orr__schemas[0];
    *out = NULL;
    pthread_mutex_lock(&orr__schemas_mu);
    size_t i = 0;
    for (; i < n && orr__schemas[i].name; i++)
        if (strcmp(orr__schemas[i].name, name) == 0) {
            *out = orr__schemas[i].js;
            goto out;
        }
    const orr_embedded_file *f = orr_embed_find(orr_schema_files, name);
    if (i == n || !f) {
        s = orr_err_set(err, ORR_EINTERNAL, name,
                        f ? "too many schemas in use" : "not embedded in this build");
        goto out;
    }
    orr_jschema *js = NULL;
    if ((s = orr_schema_load(name, &js, err)) != ORR_OK)
        goto out;
    orr__schemas[i].name = f->name;
    orr__schemas[i].js = js;
    *out = js;
out:
    pthread_mutex_unlock(&orr__schemas_mu);
    return s;
}
