/* oc_plan.c - the plan of `orrery apply` (see oc_plan.h): the field diff
 * between what the platform holds and what a file says, and the plan as
 * text and as JSON. */
#include <stdlib.h>
#include <string.h>

#include "oc_plan.h"
#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_json.h"

static void oc__change(oc_changes *out, const char *path, const json_t *old, const json_t *new_)
{
    out->v = orr_xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
    oc_change *c = &out->v[out->n++];
    c->field = orr_xstrdup(path);
    c->old = old ? json_deep_copy(old) : NULL;
    c->new_ = new_ ? json_deep_copy(new_) : NULL;
}

static int oc__cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void oc_diff(const json_t *old, const json_t *new_, const char *path, oc_changes *out)
{
    if (old && new_ && json_equal(old, new_))
        return;
    if (!json_is_object(old) || !json_is_object(new_)) {
        oc__change(out, path, old, new_);
        return;
    }
    size_t n = json_object_size(old) + json_object_size(new_), k = 0;
    const char **keys = orr_xcalloc(n ? n : 1, sizeof(*keys));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)old, key, v) keys[k++] = key;
    json_object_foreach((json_t *)new_, key, v)
    {
        if (!json_object_get(old, key))
            keys[k++] = key;
    }
    qsort(keys, k, sizeof(*keys), oc__cmp_key);
    for (size_t i = 0; i < k; i++) {
        char p[512];
        orr_json_path(p, sizeof(p), path, keys[i]);
        oc_diff(json_object_get(old, keys[i]), json_object_get(new_, keys[i]), p, out);
    }
    free(keys);
}

void oc_changes_free(oc_changes *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].field);
        json_decref(c->v[i].old);
        json_decref(c->v[i].new_);
    }
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

oc_step *oc_plan_add(oc_plan *p, oc_action act, const char *kind, const char *name,
                     const oc_doc *doc)
{
    p->v = orr_xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
    oc_step *s = &p->v[p->n++];
    memset(s, 0, sizeof(*s));
    s->act = act;
    s->kind = orr_xstrdup(kind);
    s->name = orr_xstrdup(name);
    s->doc = doc;
    return s;
}

void oc_plan_free(oc_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].kind);
        free(p->v[i].name);
        free(p->v[i].note);
        oc_changes_free(&p->v[i].diff);
    }
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

const char *oc_action_name(oc_action a)
{
    static const char *const names[] = {"create", "update", "unchanged", "deactivate"};
    return names[a];
}

void oc_plan_counts(const oc_plan *p, int counts[4])
{
    memset(counts, 0, 4 * sizeof(int));
    for (size_t i = 0; i < p->n; i++)
        counts[p->v[i].act]++;
}

/* A value for one line of the human plan, cut at 100 bytes. */
static void oc__short(orr_buf *b, const json_t *v)
{
    if (!v) {
        orr_buf_append_str(b, "(none)");
        return;
    }
    orr_buf tmp = ORR_BUF_INIT;
    orr_json_dump_buf(v, &tmp);
    if (tmp.len > 100) {
        orr_buf_append(b, tmp.data, 97);
        orr_buf_append_str(b, "...");
    } else {
        orr_buf_append(b, tmp.data, tmp.len);
    }
    orr_buf_free(&tmp);
}

void oc_plan_print(const oc_plan *p, FILE *f)
{
    static const char sign[] = {'+', '~', '=', '-'};
    for (size_t i = 0; i < p->n; i++) {
        const oc_step *s = &p->v[i];
        fprintf(f, "%c %s %s %s", sign[s->act], oc_action_name(s->act), s->kind, s->name);
        if (s->doc)
            fprintf(f, " (%s:%d)", s->doc->file, s->doc->line);
        if (s->note)
            fprintf(f, ": %s", s->note);
        fputc('\n', f);
        for (size_t k = 0; k < s->diff.n; k++) {
            const oc_change *c = &s->diff.v[k];
            orr_buf b = ORR_BUF_INIT;
            oc__short(&b, c->old);
            orr_buf_append_str(&b, " -> ");
            oc__short(&b, c->new_);
            fprintf(f, "    %s: %s\n", c->field, b.data);
            orr_buf_free(&b);
        }
    }
    int n[4];
    oc_plan_counts(p, n);
    fprintf(f, "plan: %d to create, %d to update, %d unchanged, %d to deactivate\n", n[OC_CREATE],
            n[OC_UPDATE], n[OC_UNCHANGED], n[OC_DEACTIVATE]);
}

json_t *oc_plan_json(const oc_plan *p, int applied)
{
    json_t *steps = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const oc_step *s = &p->v[i];
        json_t *changes = json_array();
        for (size_t k = 0; k < s->diff.n; k++) {
            const oc_change *c = &s->diff.v[k];
            json_array_append_new(changes, json_pack("{s:s,s:O,s:O}", "field", c->field, "old",
                                                     c->old ? c->old : json_null(), "new",
                                                     c->new_ ? c->new_ : json_null()));
        }
        json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "action", oc_action_name(s->act), "kind",
                              s->kind, "name", s->name, "changes", changes);
        json_object_set_new(o, "file", s->doc ? json_string(s->doc->file) : json_null());
        json_object_set_new(o, "line", s->doc ? json_integer(s->doc->line) : json_null());
        json_object_set_new(o, "note", s->note ? json_string(s->note) : json_null());
        json_array_append_new(steps, o);
    }
    int n[4];
    oc_plan_counts(p, n);
    return json_pack("{s:o,s:{s:i,s:i,s:i,s:i},s:b}", "steps", steps, "summary", "create",
                     n[OC_CREATE], "update", n[OC_UPDATE], "unchanged", n[OC_UNCHANGED],
                     "deactivate", n[OC_DEACTIVATE], "applied", applied);
}
