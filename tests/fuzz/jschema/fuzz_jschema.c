/*
 * fuzz_jschema.c - fuzz target of orr_jschema.
 *
 * The input is a schema and an instance separated by the first NUL byte
 * (no NUL: the whole input is the schema, validated against itself). A
 * schema that parses is compiled; if that succeeds the instance, if it
 * parses, is validated. Loading and validating must never crash, hang or
 * leak, and every refusal must carry a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_jschema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t slen = nul ? (size_t)(nul - data) : size;
    json_t *schema = json_loadb(text, slen, JSON_DECODE_ANY, NULL);
    if (!schema)
        return 0;
    json_t *inst = nul ? json_loadb((const char *)nul + 1, size - slen - 1, JSON_DECODE_ANY, NULL)
                       : json_incref(schema);
    orr_jschema *s = NULL;
    orr_err err;
    if (orr_jschema_load(schema, &s, &err) != ORR_OK) {
        if (err.code == ORR_OK || err.msg[0] == '\0')
            abort();
    } else if (inst) {
        orr_status rc = orr_jschema_validate(s, inst, "spec", &err);
        if (rc != ORR_OK && (err.code != rc || err.msg[0] == '\0' || err.field[0] == '\0'))
            abort();
        if (rc == ORR_OK && err.code != ORR_OK)
            abort();
        /* with no root path too: the same verdict */
        if (orr_jschema_validate(s, inst, NULL, NULL) != rc)
            abort();
    }
    orr_jschema_free(s);
    json_decref(inst);
    json_decref(schema);
    return 0;
}
