/*
 * fuzz_sort_spec.c - a stream spec from any bytes: sortd's parser must never
 * crash or leak, and must agree with schema/sort-stream.schema.json as
 * halleyd applies it (root "spec"): a spec the schema refuses is refused by
 * sortd with the schema's own field and message, and a spec sortd accepts
 * passes the schema.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_json.h"
#include "orr_schemas.h"
#include "sort_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const orr_jschema *schema;
    orr_err se, pe;
    if (!schema && orr_schema_get("sort-stream.schema.json", &schema, &se) != ORR_OK)
        abort();
    json_t *doc = NULL;
    if (orr_json_parse((const char *)data, size, &doc, &se) != ORR_OK)
        return 0;
    orr_err_clear(&se);
    orr_err_clear(&pe);
    sort_spec *s = NULL;
    orr_status prc = sort_spec_parse(doc, "spec", &s, &pe);
    orr_status src = orr_jschema_validate(schema, doc, "spec", &se);
    if (prc == ORR_OK && src != ORR_OK)
        abort(); /* a spec halleyd would refuse */
    if (src != ORR_OK && (strcmp(se.field, pe.field) != 0 || strcmp(se.msg, pe.msg) != 0))
        abort(); /* refused in other words than halleyd's */
    if (s)
        sort_spec_free(s);
    json_decref(doc);
    return 0;
}
