/*
 * fuzz_wh_quality.c - a list of quality checks from any bytes: the parser
 * must never crash or leak; every check it accepts has a valid name, a
 * known kind, a threshold within its range and the fields its kind needs;
 * outside a transfer it never accepts row_count or a check without a table
 * where one is needed.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_json.h"
#include "wh_quality.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *doc = NULL;
    orr_err e;
    if (orr_json_parse((const char *)data, size, &doc, &e) != ORR_OK)
        return 0;
    for (int in_transfer = 0; in_transfer < 2; in_transfer++) {
        wh_qset q;
        orr_err_clear(&e);
        if (wh_quality_parse(doc, "quality", in_transfer, &q, &e) != ORR_OK) {
            if (q.n != 0 || q.v != NULL || !e.field[0])
                abort(); /* a refusal leaves nothing and names a field */
            continue;
        }
        for (size_t i = 0; i < q.n; i++) {
            const wh_qcheck *c = &q.v[i];
            size_t n = strlen(c->name);
            if (n == 0 || n > 40 || strspn(c->name, "abcdefghijklmnopqrstuvwxyz0123456789_") != n)
                abort();
            if (wh_qkind_parse(wh_qkind_name(c->kind)) != (int)c->kind)
                abort();
            if (!(c->threshold >= 0) || isinf(c->threshold))
                abort();
            if (c->kind == WH_Q_NULL_RATIO && c->threshold > 1)
                abort();
            if ((c->kind == WH_Q_NULL_RATIO || c->kind == WH_Q_FRESHNESS) && !c->column)
                abort();
            if (c->kind == WH_Q_UNIQUE && (!c->columns || c->ncolumns == 0))
                abort();
            if (c->kind == WH_Q_SQL && !c->query)
                abort();
            if (!in_transfer && (c->kind == WH_Q_ROW_COUNT || c->writer))
                abort();
            if (!in_transfer && c->kind != WH_Q_SQL && !c->table)
                abort();
            for (size_t k = 0; k < i; k++)
                if (strcmp(q.v[k].name, c->name) == 0)
                    abort();
        }
        json_t *out = wh_quality_json(&q);
        if (json_array_size(out) != q.n)
            abort();
        json_decref(out);
        wh_qset_free(&q);
    }
    json_decref(doc);
    return 0;
}
