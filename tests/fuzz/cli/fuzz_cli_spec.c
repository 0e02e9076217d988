/* fuzz_cli_spec.c - fuzz target of the spec file loader of `orrery`: any
 * bytes parse to documents or to diagnostics, never a crash, leak or
 * unbounded cost; every document that loads is written back as YAML and
 * must load again to the same JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oc_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    oc_docs docs = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    oc_spec_parse("fuzz.yaml", (const char *)data, size, &docs, &d);
    for (size_t i = 0; i < docs.n; i++) {
        orr_buf y = ORR_BUF_INIT;
        oc_yaml_write(&y, docs.v[i].kind, docs.v[i].spec);
        oc_docs again = {NULL, 0};
        oc_diags d2 = {ORR_BUF_INIT, 0};
        if (oc_spec_parse("again.yaml", y.data, y.len, &again, &d2) != ORR_OK || again.n != 1 ||
            !json_equal(again.v[0].spec, docs.v[i].spec))
            abort();
        oc_docs_free(&again);
        oc_diags_free(&d2);
        orr_buf_free(&y);
    }
    oc_docs_free(&docs);
    oc_diags_free(&d);
    return 0;
}
