/*
 * kp_dispatch.c - executor records and executor choice (see kp_dispatch.h).
 */
#include "kp_dispatch.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_json.h"

void kp_exec_clear(kp_exec *e)
{
    for (size_t i = 0; i < e->n_labels; i++) {
        free(e->labels[i].key);
        free(e->labels[i].value);
    }
    free(e->labels);
    memset(e, 0, sizeof *e);
}

orr_status kp_exec_parse(kp_exec *e, const char *node_id, const char *json, size_t len,
                         orr_err *err)
{
    memset(e, 0, sizeof *e);
    json_t *doc = NULL;
    orr_status st = orr_json_parse(json, len, &doc, err);
    if (st != ORR_OK)
        return st;
    const char *id = node_id;
    int64_t slots = 0, used = 0;
    json_t *labels = NULL;
    if (!json_is_object(doc)) {
        st = orr_err_set(err, ORR_EINVAL, "executor", "node data must be a JSON object");
        goto done;
    }
    if ((st = orr_json_get_str(doc, "executor", "id", 0, &id, err)) != ORR_OK ||
        (st = orr_json_get_int(doc, "executor", "slots", 1, 0, 1000000, &slots, err)) != ORR_OK ||
        (st = orr_json_get_int(doc, "executor", "used_slots", 0, 0, 1000000, &used, err)) !=
            ORR_OK ||
        (st = orr_json_get_obj(doc, "executor", "labels", 0, &labels, err)) != ORR_OK)
        goto done;
    if (!id || !*id || strlen(id) >= KP_EXEC_ID_MAX) {
        st = orr_err_set(err, ORR_EINVAL, "executor.id", "must be 1-%d bytes", KP_EXEC_ID_MAX - 1);
        goto done;
    }
    if (labels && !json_is_object(labels)) {
        st = orr_err_set(err, ORR_EINVAL, "executor.labels", "must be an object");
        goto done;
    }
    snprintf(e->id, sizeof e->id, "%s", id);
    e->slots = (int)slots;
    e->reported_used = (int)used;
    e->alive = 1;
    if (labels && json_object_size(labels)) {
        e->labels = orr_xcalloc(json_object_size(labels), sizeof *e->labels);
        const char *k;
        json_t *v;
        json_object_foreach(labels, k, v)
        {
            if (!json_is_string(v)) {
                char f[160];
                st = orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, "executor.labels", k),
                                 "must be a string");
                kp_exec_clear(e);
                goto done;
            }
            e->labels[e->n_labels].key = orr_xstrdup(k);
            e->labels[e->n_labels].value = orr_xstrdup(json_string_value(v));
            e->n_labels++;
        }
    }
done:
    json_decref(doc);
    return st;
}

int kp_labels_match(const kp_label *want, size_t n_want, const kp_label *have, size_t n_have)
{
    for (size_t i = 0; i < n_want; i++) {
        size_t j = 0;
        while (j < n_have && strcmp(want[i].key, have[j].key) != 0)
            j++;
        if (j == n_have || strcmp(want[i].value, have[j].value) != 0)
            return 0;
    }
    return 1;
}

int kp_dispatch_choose(const kp_exec *ex, size_t n, int slots, const kp_label *want, size_t n_want)
{
    int best = -1;
    for (size_t i = 0; i < n; i++) {
        const kp_exec *e = &ex[i];
        if (!e->alive || e->drained || e->slots - e->used < slots)
            continue;
        if (!kp_labels_match(want, n_want, e->labels, e->n_labels))
            continue;
        if (best < 0 || e->used < ex[best].used ||
            (e->used == ex[best].used && strcmp(e->id, ex[best].id) < 0))
            best = (int)i;
    }
    return best;
}

kp_exec_why kp_dispatch_explain(const kp_exec *ex, size_t n, int slots, const kp_label *want,
                                size_t n_want)
{
    int live = 0, matching = 0, drained = 0, big = 0;
    for (size_t i = 0; i < n; i++) {
        const kp_exec *e = &ex[i];
        if (!e->alive)
            continue;
        live++;
        if (!kp_labels_match(want, n_want, e->labels, e->n_labels))
            continue;
        if (e->drained) {
            drained++;
            continue;
        }
        matching++;
        if (e->slots >= slots) {
            big++;
            if (e->slots - e->used >= slots)
                return KP_EXEC_FITS;
        }
    }
    if (!live)
        return KP_EXEC_NONE_LIVE;
    if (!matching)
        return drained ? KP_EXEC_DRAINED : KP_EXEC_NO_LABELS;
    return big ? KP_EXEC_NO_FREE_SLOT : KP_EXEC_TOO_BIG;
}

const char *kp_exec_why_name(kp_exec_why w)
{
    switch (w) {
    case KP_EXEC_FITS:
        return "";
    case KP_EXEC_NONE_LIVE:
        return "no_executors";
    case KP_EXEC_NO_LABELS:
        return "no_label_match";
    case KP_EXEC_DRAINED:
        return "drained";
    case KP_EXEC_TOO_BIG:
        return "too_big";
    case KP_EXEC_NO_FREE_SLOT:
        return "no_free_slot";
    }
    return "";
}
