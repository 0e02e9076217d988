/*
 * fuzz_wh_job.c - a transfer job from any bytes: the parser must never crash
 * or leak, and must agree with schema/transfer-job.schema.json: a job the
 * schema refuses is refused with the schema's own field and message (the
 * parser checks the schema first), and a job the parser accepts passes the
 * schema. Parsing does no I/O (plugins only read their options).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_json.h"
#include "orr_schemas.h"
#include "wh_job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const orr_jschema *schema;
    orr_err se, pe;
    if (!schema && orr_schema_get("transfer-job.schema.json", &schema, &se) != ORR_OK)
        abort();
    orr_err_clear(&se);
    orr_err_clear(&pe);
    wh_job *j = NULL;
    orr_status prc = wh_job_parse((const char *)data, size, &j, &pe);
    json_t *doc = NULL;
    if (orr_json_parse((const char *)data, size, &doc, &se) != ORR_OK) {
        if (prc == ORR_OK)
            abort(); /* not JSON, yet a job */
        return 0;
    }
    orr_status src = orr_jschema_validate(schema, doc, "", &se);
    if (prc == ORR_OK && src != ORR_OK)
        abort(); /* a job the schema refuses */
    if (src != ORR_OK && (strcmp(se.field, pe.field) != 0 || strcmp(se.msg, pe.msg) != 0))
        abort(); /* refused in other words than the schema's */
    json_decref(doc);
    wh_job_free(j);
    return 0;
}
