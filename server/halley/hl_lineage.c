/*
 * hl_lineage.c - lineage edges derived from task and sort stream specs
 * (contract and node names in hl_lineage.h).
 *
 * Only reads: a job that the engine would refuse still gives the edges its
 * readable parts name, and never an error; PutTask's validation and the
 * engine judge the job.
 */
#include <stdlib.h>
#include <string.h>

#include "hl_lineage.h"

void hl_lin_set_init(hl_lin_set *set, orr_arena *a)
{
    memset(set, 0, sizeof *set);
    set->a = a;
}

static int hl__lin_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > HL_LIN_NAME_MAX)
        return 0;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

void hl_lin_add(hl_lin_set *set, const char *sk, const char *sn, const char *tk, const char *tn,
                const char *detail)
{
    if (!hl__lin_name_ok(sn) || !hl__lin_name_ok(tn) ||
        (strcmp(sk, tk) == 0 && strcmp(sn, tn) == 0))
        return;
    if (set->n == HL_LIN_MAX_EDGES) {
        set->dropped++;
        return;
    }
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        hl_lin_edge *e = orr_arena_calloc(set->a, cap, sizeof *e);
        if (set->n)
            memcpy(e, set->e, set->n * sizeof *e);
        set->e = e;
        set->cap = cap;
    }
    hl_lin_edge *e = &set->e[set->n++];
    e->sk = sk;
    e->sn = orr_arena_strdup(set->a, sn);
    e->tk = tk;
    e->tn = orr_arena_strdup(set->a, tn);
    e->detail = detail ? orr_arena_strdup(set->a, detail) : NULL;
}

/* A JSON value as compact text in the arena; takes the reference. */
static const char *hl__lin_dump(orr_arena *a, json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(v);
    if (!s)
        return NULL;
    const char *out = orr_arena_strdup(a, s);
    free(s);
    return out;
}

static const char *hl__lin_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && s[0] ? s : NULL;
}

/* The database a dsn names: the path of a URI, or the dbname keyword. */
static const char *hl__lin_dsn_db(orr_arena *a, const char *dsn)
{
    const char *p = strstr(dsn, "://");
    if (p) {
        p += 3;
        const char *slash = strchr(p, '/');
        if (!slash)
            return NULL;
        size_t n = strcspn(slash + 1, "?#");
        return n ? orr_arena_strndup(a, slash + 1, n) : NULL;
    }
    for (p = dsn; (p = strstr(p, "dbname")) != NULL; p += 6) {
        if (p != dsn && p[-1] != ' ')
            continue;
        const char *v = p + 6;
        while (*v == ' ')
            v++;
        if (*v != '=')
            continue;
        v++;
        while (*v == ' ')
            v++;
        size_t n = *v == '\'' ? strcspn(++v, "'") : strcspn(v, " ");
        return n ? orr_arena_strndup(a, v, n) : NULL;
    }
    return NULL;
}

const char *hl_lineage_table_node(hl_lin_set *set, const json_t *ep, const char *table,
                                  hl_lin_db_fn db, void *db_arg)
{
    const char *type = hl__lin_str(ep, "type");
    if (!type || !table || (strcmp(type, "postgres") != 0 && strcmp(type, "mysql") != 0))
        return NULL;
    int my = strcmp(type, "mysql") == 0;
    const char *ds = hl__lin_str(ep, "datasource");
    const char *dsn = hl__lin_str(ep, "dsn");
    const char *dsn_db = dsn ? hl__lin_dsn_db(set->a, dsn) : NULL;
    const char *prefix = ds ? ds : dsn_db ? dsn_db : "dsn";
    const char *dot = strchr(table, '.');
    if (dot)
        return orr_arena_sprintf(set->a, "%s.%s", prefix, table);
    const char *schema = NULL;
    if (!my)
        schema = "public";
    else if (ds && db)
        schema = db(db_arg, ds);
    else
        schema = dsn_db;
    return schema && schema[0] ? orr_arena_sprintf(set->a, "%s.%s.%s", prefix, schema, table)
                               : orr_arena_sprintf(set->a, "%s.%s", prefix, table);
}

typedef struct hl__lin_node {
    const char *kind, *name;
} hl__lin_node;

/* The column names of an endpoint's "columns": strings (SQL) or objects
 * with a name (files). Returns the count (0: none named). */
static size_t hl__lin_columns(orr_arena *a, const json_t *ep, const char ***out)
{
    const json_t *cols = json_object_get(ep, "columns");
    size_t n = json_is_array(cols) ? json_array_size(cols) : 0;
    const char **names = orr_arena_calloc(a, n ? n : 1, sizeof *names);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(cols, i);
        const char *s = json_is_object(c) ? hl__lin_str(c, "name") : json_string_value(c);
        if (!s || !s[0])
            return *out = names, 0; /* a hole makes positions meaningless */
        names[k++] = s;
    }
    *out = names;
    return k;
}

/* The reader's nodes: its tables, or its files. */
static size_t hl__lin_reader_nodes(hl_lin_set *set, const json_t *rd, hl_lin_db_fn db, void *arg,
                                   hl__lin_node *out, size_t max)
{
    size_t n = 0;
    const char *type = hl__lin_str(rd, "type");
    if (!type)
        return 0;
    int file = strcmp(type, "file") == 0;
    const char *one = hl__lin_str(rd, file ? "path" : "table");
    const json_t *many = json_object_get(rd, file ? "paths" : "tables");
    if (one && n < max)
        out[n++] = (hl__lin_node){file ? "file" : "table",
                                  file ? one : hl_lineage_table_node(set, rd, one, db, arg)};
    for (size_t i = 0; json_is_array(many) && i < json_array_size(many) && n < max; i++) {
        const char *s = json_string_value(json_array_get(many, i));
        if (s && s[0])
            out[n++] = (hl__lin_node){file ? "file" : "table",
                                      file ? s : hl_lineage_table_node(set, rd, s, db, arg)};
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (out[i].name)
            out[k++] = out[i];
    return k;
}

static const char *hl__lin_col(orr_arena *a, const hl__lin_node *t, const char *col)
{
    return orr_arena_sprintf(a, "%s.%s", t->name, col);
}

#define HL_LIN_MAX_SOURCES 64

void hl_lineage_transfer(hl_lin_set *set, const json_t *config, hl_lin_db_fn db, void *db_arg)
{
    if (!json_is_object(config))
        return;
    const json_t *rd = json_object_get(config, "reader");
    const json_t *ws = json_object_get(config, "writers");
    if (!json_is_object(rd) || !json_is_array(ws))
        return;
    hl__lin_node src[HL_LIN_MAX_SOURCES];
    size_t ns = hl__lin_reader_nodes(set, rd, db, db_arg, src, HL_LIN_MAX_SOURCES);
    const char **rcols;
    size_t nr = hl__lin_columns(set->a, rd, &rcols);
    for (size_t w = 0; w < json_array_size(ws); w++) {
        const json_t *wr = json_array_get(ws, w);
        if (!json_is_object(wr))
            continue;
        const char *type = hl__lin_str(wr, "type");
        hl__lin_node tgt = {NULL, NULL};
        if (type && strcmp(type, "file") == 0)
            tgt = (hl__lin_node){"file", hl__lin_str(wr, "path")};
        else
            tgt = (hl__lin_node){
                "table", hl_lineage_table_node(set, wr, hl__lin_str(wr, "table"), db, db_arg)};
        if (!tgt.name)
            continue;
        const json_t *map = json_object_get(wr, "mapping");
        json_t *consts = json_array();
        for (size_t i = 0; json_is_array(map) && i < json_array_size(map); i++) {
            const json_t *m = json_array_get(map, i);
            const char *target = hl__lin_str(m, "target");
            const json_t *cv = json_object_get(m, "constant");
            if (target && cv && !json_object_get(m, "source"))
                json_array_append_new(
                    consts, json_pack("{s:s,s:O}", "target", target, "constant", (json_t *)cv));
        }
        json_t *td = json_pack("{s:I}", "writer", (json_int_t)w);
        if (json_array_size(consts))
            json_object_set(td, "constants", consts);
        json_decref(consts);
        const char *tdetail = hl__lin_dump(set->a, td);
        for (size_t s = 0; s < ns; s++)
            hl_lin_add(set, src[s].kind, src[s].name, tgt.kind, tgt.name, tdetail);
        /* Column edges. */
        const char **wcols;
        size_t nw = hl__lin_columns(set->a, wr, &wcols);
        for (size_t s = 0; s < ns; s++) {
            if (json_is_array(map)) {
                for (size_t i = 0; i < json_array_size(map); i++) {
                    const json_t *m = json_array_get(map, i);
                    const char *target = hl__lin_str(m, "target");
                    const char *source = hl__lin_str(m, "source");
                    const char *cast = hl__lin_str(m, "cast");
                    if (!target || !source)
                        continue;
                    hl_lin_add(set, "column", hl__lin_col(set->a, &src[s], source), "column",
                               hl__lin_col(set->a, &tgt, target),
                               cast ? hl__lin_dump(set->a, json_pack("{s:s}", "cast", cast))
                                    : NULL);
                }
            } else if (nr && nw) {
                for (size_t i = 0; i < nr && i < nw; i++)
                    hl_lin_add(set, "column", hl__lin_col(set->a, &src[s], rcols[i]), "column",
                               hl__lin_col(set->a, &tgt, wcols[i]), NULL);
            } else if (nr && !json_object_get(wr, "columns")) {
                for (size_t i = 0; i < nr; i++)
                    hl_lin_add(set, "column", hl__lin_col(set->a, &src[s], rcols[i]), "column",
                               hl__lin_col(set->a, &tgt, rcols[i]), "{\"match\":\"name\"}");
            }
        }
    }
}

void hl_lineage_deps(hl_lin_set *set, const hl_spec *sp)
{
    for (size_t i = 0; i < sp->n_deps; i++) {
        const hl_spec_dep *d = &sp->deps[i];
        if (d->task && (strcmp(d->kind, "strong") == 0 || strcmp(d->kind, "weak") == 0)) {
            hl_lin_add(set, "task", d->task, "task", sp->name,
                       strcmp(d->kind, "strong") == 0 ? "{\"kind\":\"strong\"}"
                                                      : "{\"kind\":\"weak\"}");
        } else if (strcmp(d->kind, "data_unit") == 0 && d->unit) {
            const char *st = hl__lin_str(d->unit, "stream");
            const char *bu = hl__lin_str(d->unit, "business");
            const char *in = hl__lin_str(d->unit, "interface");
            if (st && bu && in)
                hl_lin_add(set, "data_unit", orr_arena_sprintf(set->a, "%s/%s/%s", st, bu, in),
                           "task", sp->name, "{\"kind\":\"data_unit\"}");
        }
    }
}

void hl_lineage_stream(hl_lin_set *set, const char *name, const json_t *spec)
{
    if (!json_is_object(spec))
        return;
    const json_t *src = json_object_get(spec, "source");
    const char *stype = hl__lin_str(src, "type");
    if (stype && strcmp(stype, "file") == 0 && hl__lin_str(src, "path"))
        hl_lin_add(set, "file", hl__lin_str(src, "path"), "stream", name, NULL);
    const char *bu = hl__lin_str(spec, "business");
    const char *ic = hl__lin_str(json_object_get(spec, "interface"), "const");
    if (bu && ic)
        hl_lin_add(set, "stream", name, "data_unit",
                   orr_arena_sprintf(set->a, "%s/%s/%s", name, bu, ic), NULL);
    const json_t *ifs = json_object_get(spec, "interfaces");
    for (size_t i = 0; bu && json_is_array(ifs) && i < json_array_size(ifs); i++) {
        const char *in = json_string_value(json_array_get(ifs, i));
        if (in && in[0] && !(ic && strcmp(in, ic) == 0))
            hl_lin_add(set, "stream", name, "data_unit",
                       orr_arena_sprintf(set->a, "%s/%s/%s", name, bu, in), NULL);
    }
    const json_t *pg = json_object_get(json_object_get(spec, "sinks"), "postgres");
    const char *table = hl__lin_str(pg, "table");
    if (table) {
        json_t *ep = json_pack("{s:s}", "type", "postgres");
        if (hl__lin_str(pg, "dsn"))
            json_object_set_new(ep, "dsn", json_string(hl__lin_str(pg, "dsn")));
        const char *node = hl_lineage_table_node(set, ep, table, NULL, NULL);
        json_decref(ep);
        hl_lin_add(set, "stream", name, "table", node, NULL);
    }
}
