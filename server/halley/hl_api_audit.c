/*
 * hl_api_audit.c - the audit log: ListAudit, newest first, paged, filtered by
 * actor and object prefix. Records are written by the handlers that change
 * things (hl_audit, in their transaction).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_page.h"

#define HL_AUDIT_COLS "id, actor, action, object, detail::text, " HL_MS("at")
/* $1 before id (0 = newest), $2 actor, $3 object prefix, $4 limit. */
static hl_stmt q_list_audit =
    HL_STMT("SELECT " HL_AUDIT_COLS " FROM audit_log"
            " WHERE ($1::int8 = 0 OR id < $1::int8) AND ($2 = '' OR actor = $2)"
            " AND ($3 = '' OR starts_with(object, $3)) ORDER BY id DESC LIMIT $4::int");

/* ------------------------------------------------------------ audit log */

HL_UNARY(hl_api_list_audit)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListAuditRequest);
    hl_page pg;
    orr_status ps =
        hl_page_begin(a, "audit", "i", rq->page_size, rq->page_token, HL_PAGE_DEFAULT, &pg, err);
    if (ps != ORR_OK)
        return ps;
    int size = pg.size, have = pg.have;
    const char *before = pg.keys[0];
    /* before_id is the deprecated form of page_token */
    if (!have && rq->before_id < 0)
        return orr_err_set(err, ORR_EINVAL, "before_id", "must be 0 (newest) or positive");
    if (!have)
        before = hl_i64s(a, rq->before_id);
    if (strlen(rq->actor) > 256)
        return orr_err_set(err, ORR_EINVAL, "actor", "at most 256 bytes");
    if (strlen(rq->object_prefix) > 256)
        return orr_err_set(err, ORR_EINVAL, "object_prefix", "at most 256 bytes");
    const char *p[4] = {before, rq->actor, rq->object_prefix, orr_arena_sprintf(a, "%d", size + 1)};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_audit, 4, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListAuditResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_audit_response__init(o);
    int n = PQntuples(r) > size ? size : PQntuples(r);
    o->n_entries = (size_t)n;
    o->entries = hl_alloc_n(a, sizeof *o->entries, (size_t)n);
    Orrery__Halley__V1__AuditEntry *es = hl_alloc_n(a, sizeof *es, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__audit_entry__init(&es[i]);
        es[i].id = hl_val_i64(r, i, 0);
        es[i].actor = (char *)hl_val(r, i, 1);
        es[i].action = (char *)hl_val(r, i, 2);
        es[i].object = (char *)hl_val(r, i, 3);
        es[i].detail_json = (char *)hl_val(r, i, 4);
        es[i].at_ms = hl_val_i64(r, i, 5);
        o->entries[i] = &es[i];
    }
    if (PQntuples(r) > size) {
        const char *k[1] = {hl_i64s(a, es[n - 1].id)};
        o->next_page_token = hl_page_next(a, &pg, k);
    }
    *resp = &o->base;
    return ORR_OK;
}
