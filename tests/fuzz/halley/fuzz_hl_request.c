/*
 * fuzz_hl_request.c - halleyd's request decoding path, without a database.
 *
 * Input: one byte choosing a method of the Halley service, then the request
 * bytes. They are unpacked with the method's input descriptor (as the RPC
 * runtime does) and then go through the checks halleyd makes before any
 * database work: the task spec parser and schema (CreateTask, UpdateTask),
 * the transition checks (TransitionInstance and every item of
 * TransitionInstances). Nothing may crash, leak or read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static orr_jschema *schema;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!schema) {
        orr_err err;
        if (hl_spec_schema_load(&schema, &err) != ORR_OK)
            abort();
    }
    if (size < 1)
        return 0;
    const ProtobufCServiceDescriptor *svc = &orrery__halley__v1__halley__descriptor;
    const ProtobufCMethodDescriptor *m = &svc->methods[data[0] % svc->n_methods];
    ProtobufCMessage *req = protobuf_c_message_unpack(m->input, NULL, size - 1, data + 1);
    if (!req)
        return 0;
    orr_err err;
    if (strcmp(m->name, "CreateTask") == 0 || strcmp(m->name, "UpdateTask") == 0) {
        const char *spec = strcmp(m->name, "CreateTask") == 0
                               ? ((Orrery__Halley__V1__CreateTaskRequest *)req)->spec_json
                               : ((Orrery__Halley__V1__UpdateTaskRequest *)req)->spec_json;
        hl_spec sp;
        if (hl_spec_parse(schema, spec, strlen(spec), &sp, &err) == ORR_OK)
            hl_spec_clear(&sp);
    } else if (strcmp(m->name, "TransitionInstance") == 0) {
        (void)hl_transition_check((hl_pb_transition_req *)req, &err);
    } else if (strcmp(m->name, "TransitionInstances") == 0) {
        Orrery__Halley__V1__TransitionBatchRequest *b = (void *)req;
        for (size_t i = 0; i < b->n_items; i++)
            (void)hl_transition_check(b->items[i], &err);
    }
    protobuf_c_message_free_unpacked(req, NULL);
    return 0;
}
