/* wh_resume.c - resume bookkeeping of a split job (see wh_resume.h). */
#include "wh_resume.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_log.h"

/* Keys that do not change which rows land where. */
static const char *const wh_resume_volatile_top[] = {"channels", "progress_interval_ms", "resume",
                                                     "limits",   "state_file",           NULL};
static const char *const wh_resume_volatile_ep[] = {"channels", "dsn", "dsn_env", NULL};

static void wh_resume_strip(json_t *o, const char *const *keys)
{
    if (!json_is_object(o))
        return;
    for (const char *const *k = keys; *k; k++)
        json_object_del(o, *k);
}

void wh_resume_key(const wh_job *job, const char *low, char out[65])
{
    json_t *c = json_deep_copy(job->root);
    wh_resume_strip(c, wh_resume_volatile_top);
    wh_resume_strip(json_object_get(c, "reader"), wh_resume_volatile_ep);
    json_t *ws = json_object_get(c, "writers");
    for (size_t i = 0; i < json_array_size(ws); i++)
        wh_resume_strip(json_array_get(ws, i), wh_resume_volatile_ep);
    char *text = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(c);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    if (!h)
        orr_oom(0);
    EVP_DigestInit_ex(h, EVP_sha256(), NULL);
    EVP_DigestUpdate(h, text, strlen(text));
    EVP_DigestUpdate(h, "\n", 1);
    EVP_DigestUpdate(h, low ? low : "", low ? strlen(low) : 0);
    if (job->run_id) {
        EVP_DigestUpdate(h, "\n", 1);
        EVP_DigestUpdate(h, job->run_id, strlen(job->run_id));
    }
    EVP_DigestFinal_ex(h, md, &mdlen);
    EVP_MD_CTX_free(h);
    free(text);
    for (unsigned int i = 0; i < 32 && i < mdlen; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = 0;
}

void wh_resume_init(wh_resume *rs, const wh_job *job)
{
    memset(rs, 0, sizeof(*rs));
    rs->state = "off";
    rs->nwriters = job->nwriters;
    atomic_init(&rs->taken, 0);
    atomic_init(&rs->committed, 0);
    rs->hold_after = -1;
    const char *h = getenv("WORMHOLE_TEST_HOLD_AFTER");
    rs->hold_file = getenv("WORMHOLE_TEST_HOLD_FILE");
    if (h && *h && rs->hold_file && *rs->hold_file)
        rs->hold_after = strtol(h, NULL, 10);
}

/* The plan as JSON text: the shards and the high watermark. */
static char *wh_resume_plan_text(const wh_shards *shards, const wh_incr *incr)
{
    json_t *p = json_object(), *a = json_array();
    for (size_t i = 0; i < shards->n; i++) {
        const wh_shard *s = &shards->v[i];
        json_t *o = json_object();
        if (s->pred)
            json_object_set_new(o, "pred", json_string(s->pred));
        if (s->table)
            json_object_set_new(o, "table", json_string(s->table));
        if (s->path)
            json_object_set_new(o, "path", json_string(s->path));
        json_array_append_new(a, o);
    }
    json_object_set_new(p, "shards", a);
    if (incr->on && incr->has_high)
        json_object_set_new(p, "incr_high", json_string(incr->high));
    char *t = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    if (!t)
        orr_oom(0);
    return t;
}

/* Parse a stored plan; 0 when it is not one. */
static int wh_resume_plan_parse(const char *text, wh_shards *out, wh_incr *incr)
{
    json_error_t je;
    json_t *p = json_loads(text, 0, &je);
    json_t *a = json_object_get(p, "shards");
    if (!json_is_array(a) || json_array_size(a) == 0) {
        json_decref(p);
        return 0;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *o = json_array_get(a, i);
        wh_shards_add(out, json_string_value(json_object_get(o, "pred")),
                      json_string_value(json_object_get(o, "table")),
                      json_string_value(json_object_get(o, "path")));
    }
    const char *hi = json_string_value(json_object_get(p, "incr_high"));
    if (incr->on) {
        incr->has_high = hi != NULL;
        snprintf(incr->high, sizeof(incr->high), "%s", hi ? hi : "");
    }
    json_decref(p);
    return 1;
}

typedef struct wh_wrec {
    char *key, *plan;
    wh_split_done *done;
    size_t ndone;
} wh_wrec;

orr_status wh_resume_setup(wh_resume *rs, const wh_job *job, wh_incr *incr, wh_shards *shards,
                           int *restored, orr_err *err)
{
    *restored = 0;
    if (job->resume == WH_RESUME_OFF)
        return ORR_OK;
    for (size_t i = 0; i < job->nwriters; i++) {
        const wh_endpoint *ep = &job->writers[i];
        const wh_resume_ops *ro = ep->plugin->resume;
        const char *why = "the store keeps no split records";
        if (!ro || !ro->supported(ep->conf, &why)) {
            rs->state = "unsupported";
            snprintf(rs->note, sizeof(rs->note), "writer %s cannot resume: %s", ep->name, why);
            ORR_WARN("transfer runs without resume bookkeeping", "job=%s reason=%s",
                     orr_log_q(job->name), orr_log_q(rs->note));
            return ORR_OK;
        }
    }
    wh_resume_key(job, incr->on && incr->has_low ? incr->low : "", rs->run_key);
    rs->state = "fresh";
    wh_wrec *rec = orr_xcalloc(job->nwriters, sizeof(*rec));
    orr_status rc = ORR_OK;
    size_t matched = 0, stale = 0, first = job->nwriters;
    for (size_t i = 0; i < job->nwriters; i++) {
        const wh_endpoint *ep = &job->writers[i];
        rc = ep->plugin->resume->load(ep->conf, job->name, &rec[i].key, &rec[i].plan, &rec[i].done,
                                      &rec[i].ndone, err);
        if (rc == ORR_EPERM) {
            /* No record tables, and no right to make them: nothing to
             * resume from, and nowhere to keep records. */
            rs->state = "unsupported";
            snprintf(rs->note, sizeof(rs->note), "writer %s cannot keep split records: %.200s",
                     ep->name, err->msg);
            orr_err_clear(err);
            rc = ORR_OK;
            goto out;
        }
        if (rc)
            goto out;
        if (job->resume == WH_RESUME_SCRATCH)
            continue;
        if (!rec[i].key)
            continue;
        if (strcmp(rec[i].key, rs->run_key) != 0 || !rec[i].plan) {
            stale++;
            continue;
        }
        matched++;
        if (first == job->nwriters)
            first = i;
    }
    rs->on = 1;
    if (job->resume == WH_RESUME_SCRATCH) {
        snprintf(rs->note, sizeof(rs->note), "from scratch: earlier split records dropped");
        goto out;
    }
    if (!matched) {
        if (stale)
            snprintf(rs->note, sizeof(rs->note),
                     "the job or its source range changed since the failed run: from scratch");
        rs->state = stale ? "changed" : "fresh";
        goto out;
    }
    if (!wh_resume_plan_parse(rec[first].plan, shards, incr)) {
        wh_shards_free(shards);
        rs->state = "changed";
        snprintf(rs->note, sizeof(rs->note), "the stored split plan is unreadable: from scratch");
        goto out;
    }
    *restored = 1;
    rs->nshards = shards->n;
    rs->plan = orr_xstrdup(rec[first].plan);
    rs->done = orr_xcalloc(job->nwriters * shards->n + 1, 1);
    rs->skip_all = orr_xcalloc(shards->n + 1, 1);
    for (size_t i = 0; i < job->nwriters; i++) {
        if (!rec[i].key || strcmp(rec[i].key, rs->run_key) != 0)
            continue;
        for (size_t k = 0; k < rec[i].ndone; k++)
            if (rec[i].done[k].split < shards->n)
                rs->done[i * shards->n + rec[i].done[k].split] = 1;
    }
    for (size_t s = 0; s < shards->n; s++) {
        int all = 1;
        for (size_t i = 0; i < job->nwriters && all; i++)
            all = rs->done[i * shards->n + s];
        rs->skip_all[s] = (unsigned char)all;
        if (!all)
            continue;
        rs->resumed_splits++;
        for (size_t k = 0; k < rec[first].ndone; k++)
            if (rec[first].done[k].split == s)
                rs->rows_skipped += rec[first].done[k].rows;
    }
    rs->state = "resumed";
    snprintf(rs->note, sizeof(rs->note), "%zu of %zu splits already committed", rs->resumed_splits,
             shards->n);
out:
    for (size_t i = 0; i < job->nwriters; i++) {
        free(rec[i].key);
        free(rec[i].plan);
        free(rec[i].done);
    }
    free(rec);
    if (!rc && rs->note[0])
        orr_log(rs->on ? ORR_LOG_INFO : ORR_LOG_WARN, "transfer resume", "job=%s state=%s note=%s",
                orr_log_q(job->name), rs->state, orr_log_q(rs->note));
    return rc;
}

orr_status wh_resume_start(wh_resume *rs, const wh_job *job, const wh_shards *shards,
                           const wh_incr *incr, orr_err *err)
{
    if (!rs->on)
        return ORR_OK;
    int keep = rs->plan != NULL;
    if (!keep) {
        rs->plan = wh_resume_plan_text(shards, incr);
        rs->nshards = shards->n;
        free(rs->done);
        free(rs->skip_all);
        rs->done = orr_xcalloc(job->nwriters * shards->n + 1, 1);
        rs->skip_all = orr_xcalloc(shards->n + 1, 1);
    }
    for (size_t i = 0; i < job->nwriters; i++) {
        const wh_endpoint *ep = &job->writers[i];
        /* A writer without records of this run (a new target, or records
         * lost) starts its own bookkeeping afresh with the restored plan. */
        int wkeep = 0;
        for (size_t s = 0; keep && s < shards->n && !wkeep; s++)
            wkeep = rs->done[i * shards->n + s];
        orr_status rc =
            ep->plugin->resume->begin(ep->conf, job->name, rs->run_key, rs->plan, wkeep, err);
        if (rc)
            return rc;
    }
    return ORR_OK;
}

size_t wh_resume_pending(const wh_resume *rs, size_t nshards)
{
    size_t n = 0;
    for (size_t s = 0; s < nshards; s++)
        n += !wh_resume_skip(rs, s);
    return n;
}

orr_status wh_resume_commit(wh_resume *rs, const wh_job *job, size_t w, void *state, size_t shard,
                            uint64_t rows, uint64_t *confirmed, orr_err *err)
{
    const wh_resume_ops *ro = job->writers[w].plugin->resume;
    orr_status rc = ro->split_commit(state, job->name, rs->run_key, shard, rows, confirmed, err);
    if (rc == ORR_OK)
        atomic_fetch_add(&rs->committed, 1);
    return rc;
}

void wh_resume_hold(wh_resume *rs, wh_ctx *ctx)
{
    if (rs->hold_after < 0)
        return;
    size_t n = atomic_fetch_add(&rs->taken, 1);
    if ((long)n < rs->hold_after)
        return;
    fprintf(stderr, "wormhole: test hold after %ld splits, waiting for %s\n", rs->hold_after,
            rs->hold_file);
    while (!wh_cancelled(ctx) && access(rs->hold_file, F_OK) != 0) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

orr_status wh_resume_clear(wh_resume *rs, const wh_job *job, orr_err *err)
{
    if (!rs->on)
        return ORR_OK;
    for (size_t i = 0; i < job->nwriters; i++) {
        const wh_endpoint *ep = &job->writers[i];
        orr_status rc = ep->plugin->resume->clear(ep->conf, job->name, err);
        if (rc)
            return rc;
    }
    return ORR_OK;
}

void wh_resume_json(const wh_resume *rs, json_t *o)
{
    json_t *r = json_object();
    json_object_set_new(r, "state", json_string(rs->state));
    if (rs->on)
        json_object_set_new(r, "run_key", json_string(rs->run_key));
    if (rs->note[0])
        json_object_set_new(r, "note", json_string(rs->note));
    json_object_set_new(r, "splits_committed",
                        json_integer((json_int_t)atomic_load(&rs->committed)));
    json_object_set_new(o, "resume", r);
    json_object_set_new(o, "resumed_splits", json_integer((json_int_t)rs->resumed_splits));
    json_object_set_new(o, "rows_skipped", json_integer((json_int_t)rs->rows_skipped));
}

void wh_resume_free(wh_resume *rs)
{
    free(rs->plan);
    free(rs->done);
    free(rs->skip_all);
    rs->plan = NULL;
    rs->done = rs->skip_all = NULL;
}
