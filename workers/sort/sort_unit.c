/* sort_unit.c - the unit table, landed-file names and restart scan (see sort_unit.h). */
#include "sort_unit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_hash.h"
#include "orr_json.h"
#include "orr_log.h"

uint64_t sort_unit_hash(const char *iface, size_t len, int64_t bucket_start)
{
    unsigned char b[8]; /* the bucket little-endian, whatever the host's order */
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)bucket_start >> (i * 8));
    uint64_t h = orr_hash_fnv1a_add(orr_hash_fnv1a(iface, len), b, sizeof b);
    return orr_hash_mix(h); /* spread the low bits, which pick the writer */
}

/* The table's own key and hash of (iface, bucket start), so a lookup (one
 * per routed record) pays neither the stable hash (byte-wise FNV-1a, computed
 * once per unit) nor a memcmp call: names of up to 8 bytes (the common case)
 * are compared as one word, key8, the bytes little-endian and zero-padded.
 * Not stable across versions: it only places units in this process's table. */
static inline uint64_t units__key8(const char *iface, size_t len)
{
    uint64_t k = 0;
    for (size_t i = 0; i < len && i < 8; i++)
        k |= (uint64_t)(unsigned char)iface[i] << (i * 8);
    return k;
}

static inline uint64_t units__lookup_hash(uint64_t key8, const char *iface, size_t len,
                                          int64_t bucket_start)
{
    uint64_t h = (uint64_t)bucket_start * 0x9E3779B97F4A7C15ULL ^ key8 ^ ((uint64_t)len << 59);
    if (len > 8)
        h ^= orr_hash_fnv1a(iface + 8, len - 8);
    return orr_hash_mix(h);
}

void sort_units_init(sort_units *t, const sort_spec *spec)
{
    memset(t, 0, sizeof *t);
    t->spec = spec;
    t->arena = orr_arena_create(64 * 1024);
    t->cap = 1024;
    t->tab = orr_xcalloc(t->cap, sizeof *t->tab);
    t->min_bucket = INT64_MAX;
}

void sort_units_free(sort_units *t)
{
    free(t->tab);
    free(t->all);
    orr_arena_destroy(t->arena);
    memset(t, 0, sizeof *t);
}

sort_unit *sort_units_find(sort_units *t, const char *iface, size_t len, int64_t bucket_start)
{
    uint64_t k = units__key8(iface, len);
    uint64_t h = units__lookup_hash(k, iface, len, bucket_start);
    for (sort_unit *u = t->tab[h & (t->cap - 1)]; u; u = u->hnext)
        if (u->lhash == h && u->key8 == k && u->bucket_start == bucket_start &&
            u->iface_len == len && (len <= 8 || memcmp(u->iface + 8, iface + 8, len - 8) == 0))
            return u;
    return NULL;
}

static void units__grow(sort_units *t)
{
    size_t nc = t->cap * 2;
    sort_unit **nt = orr_xcalloc(nc, sizeof *nt);
    for (size_t i = 0; i < t->cap; i++) {
        sort_unit *u = t->tab[i], *next;
        for (; u; u = next) {
            next = u->hnext;
            u->hnext = nt[u->lhash & (nc - 1)];
            nt[u->lhash & (nc - 1)] = u;
        }
    }
    free(t->tab);
    t->tab = nt;
    t->cap = nc;
}

sort_unit *sort_units_get(sort_units *t, const char *iface, size_t len, int64_t bucket_start)
{
    sort_unit *u = sort_units_find(t, iface, len, bucket_start);
    if (u)
        return u;
    if ((t->n + 1) * 2 > t->cap)
        units__grow(t); /* at most half full: short chains */
    u = orr_arena_calloc(t->arena, 1, sizeof *u);
    u->hash = sort_unit_hash(iface, len, bucket_start);
    u->key8 = units__key8(iface, len);
    u->lhash = units__lookup_hash(u->key8, iface, len, bucket_start);
    u->iface = orr_arena_strndup(t->arena, iface, len);
    u->iface_len = len;
    u->bucket_start = bucket_start;
    u->bucket_end = sort_bucket_end(bucket_start, t->spec->bucket, t->spec->tz);
    sort_bucket_label(bucket_start, t->spec->bucket, t->spec->tz, u->label);
    u->dir = orr_arena_sprintf(t->arena, "%s/%s/%s", t->spec->business, u->iface, u->label);
    u->split = sort_spec_split(t->spec, iface, len);
    u->open = orr_arena_calloc(t->arena, u->split, sizeof *u->open);
    u->hnext = t->tab[u->lhash & (t->cap - 1)];
    t->tab[u->lhash & (t->cap - 1)] = u;
    if (t->n == t->all_cap) {
        t->all_cap = t->all_cap ? t->all_cap * 2 : 256;
        sort_unit **na = orr_xrealloc(t->all, t->all_cap * sizeof *na);
        t->all = na;
    }
    t->all[t->n++] = u;
    if (bucket_start < t->min_bucket)
        t->min_bucket = bucket_start;
    return u;
}

int sort_unit_landed_last(const sort_unit *u, uint32_t split, uint32_t partition, sort_off *last)
{
    for (const sort_landed *l = u->landed; l; l = l->next) {
        if (l->split == split && l->partition == partition) {
            *last = l->last;
            return 1;
        }
    }
    return 0;
}

void sort_unit_add_file(sort_units *t, sort_unit *u, const char *name, uint64_t count,
                        uint64_t bytes)
{
    sort_lfile *f = orr_arena_calloc(t->arena, 1, sizeof *f);
    f->name = orr_arena_strdup(t->arena, name);
    f->count = count;
    f->bytes = bytes;
    u->total_bytes += bytes;
    f->next = u->files;
    u->files = f;
    u->nfiles++;
    u->total += count;
}

void sort_part_name(char *buf, const sort_part_info *pi)
{
    char a[SORT_OFF_MAX], b[SORT_OFF_MAX];
    if (pi->has_split)
        snprintf(buf, SORT_PART_NAME_MAX, "part-%" PRIu32 "_%" PRIu32 "-%s-%s-n%" PRIu64 ".lzo",
                 pi->partition, pi->split, sort_off_fmt(pi->first, a), sort_off_fmt(pi->last, b),
                 pi->count);
    else
        snprintf(buf, SORT_PART_NAME_MAX, "part-%" PRIu32 "-%s-%s-n%" PRIu64 ".lzo", pi->partition,
                 sort_off_fmt(pi->first, a), sort_off_fmt(pi->last, b), pi->count);
}

static int part__u64(const char *p, size_t n, uint64_t *out)
{
    sort_off o;
    if (memchr(p, '.', n) || sort_off_parse(p, n, &o) != 0)
        return -1;
    *out = o.lo;
    return 0;
}

int sort_part_parse(const char *name, sort_part_info *out)
{
    size_t len = strlen(name);
    memset(out, 0, sizeof *out);
    if (len < 5 + 4 || strncmp(name, "part-", 5) != 0 || strcmp(name + len - 4, ".lzo") != 0)
        return -1;
    const char *p = name + 5, *end = name + len - 4;
    const char *parts[4];
    size_t lens[4];
    for (int i = 0; i < 4; i++) {
        const char *dash = i < 3 ? memchr(p, '-', (size_t)(end - p)) : end;
        if (!dash)
            return -1;
        parts[i] = p;
        lens[i] = (size_t)(dash - p);
        p = dash + 1;
    }
    if (p != end + 1)
        return -1;
    uint64_t v;
    const char *us = memchr(parts[0], '_', lens[0]);
    if (us) {
        if (part__u64(parts[0], (size_t)(us - parts[0]), &v) != 0 || v > UINT32_MAX)
            return -1;
        out->partition = (uint32_t)v;
        if (part__u64(us + 1, lens[0] - (size_t)(us - parts[0]) - 1, &v) != 0 ||
            v >= SORT_MAX_SPLIT)
            return -1;
        out->split = (uint32_t)v;
        out->has_split = 1;
    } else {
        if (part__u64(parts[0], lens[0], &v) != 0 || v > UINT32_MAX)
            return -1;
        out->partition = (uint32_t)v;
    }
    if (sort_off_parse(parts[1], lens[1], &out->first) != 0 ||
        sort_off_parse(parts[2], lens[2], &out->last) != 0)
        return -1;
    if (lens[3] < 2 || parts[3][0] != 'n' || part__u64(parts[3] + 1, lens[3] - 1, &out->count))
        return -1;
    if (sort_off_cmp(out->first, out->last) > 0)
        return -1;
    return 0;
}

static void units__note_landed(sort_units *t, sort_unit *u, const sort_part_info *pi)
{
    for (sort_landed *l = u->landed; l; l = l->next) {
        if (l->split == pi->split && l->partition == pi->partition) {
            if (sort_off_cmp(pi->last, l->last) > 0)
                l->last = pi->last;
            return;
        }
    }
    sort_landed *l = orr_arena_calloc(t->arena, 1, sizeof *l);
    l->split = pi->split;
    l->partition = pi->partition;
    l->last = pi->last;
    l->next = u->landed;
    u->landed = l;
}

int sort_unit_accept(sort_units *t, sort_unit *u, uint32_t split, uint32_t partition, sort_off off)
{
    for (sort_landed *l = u->landed; l; l = l->next) {
        if (l->split == split && l->partition == partition) {
            if (sort_off_cmp(off, l->last) <= 0)
                return 0;
            l->last = off;
            return 1;
        }
    }
    sort_part_info pi = {.partition = partition, .split = split, .last = off};
    units__note_landed(t, u, &pi);
    return 1;
}

/* Read "version" and the file list of an existing _CHECK. */
static void units__read_check(sort_units *t, orr_blob *blob, sort_unit *u)
{
    char rel[4096];
    orr_buf b = ORR_BUF_INIT;
    snprintf(rel, sizeof rel, "%s/_CHECK", u->dir);
    if (blob->ops->get_bytes(blob, rel, &b, NULL) == ORR_OK) {
        json_t *doc = NULL;
        if (orr_json_parse(b.data, b.len, &doc, NULL) == ORR_OK) {
            int64_t v = 0, late = 0;
            json_t *files = NULL;
            (void)orr_json_get_int(doc, "", "version", 0, 0, UINT32_MAX, &v, NULL);
            (void)orr_json_get_int(doc, "", "late_records", 0, 0, INT64_MAX, &late, NULL);
            (void)orr_json_get_array(doc, "", "files", 0, &files, NULL);
            u->check_version = (uint32_t)v;
            u->checked_nfiles = json_array_size(files);
            u->late = u->checked_late = (uint64_t)late;
            json_decref(doc);
        } else {
            ORR_WARN("unreadable _CHECK, will rewrite", "unit=%s", orr_log_q(u->dir));
        }
    }
    (void)t;
    orr_buf_free(&b);
}

orr_status sort_units_load(sort_units *t, orr_blob *blob, orr_err *err)
{
    const sort_spec *s = t->spec;
    orr_buf ifaces = ORR_BUF_INIT, labels = ORR_BUF_INIT, files = ORR_BUF_INIT;
    orr_buf sizes = ORR_BUF_INIT;
    orr_status rc = blob->ops->list(blob, s->business, &ifaces, NULL, err);
    size_t nunits = 0, nfiles = 0;
    if (rc == ORR_ENOTFOUND) {
        orr_err_clear(err);
        rc = ORR_OK;
        goto done;
    }
    if (rc != ORR_OK)
        goto done;
    for (size_t i = 0; i < ifaces.len;) {
        const char *iface = ifaces.data + i;
        i += strlen(iface) + 1;
        if (!sort_name_ok(iface, strlen(iface)))
            continue;
        char rel[4096];
        snprintf(rel, sizeof rel, "%s/%s", s->business, iface);
        orr_buf_reset(&labels);
        if (blob->ops->list(blob, rel, &labels, NULL, NULL) != ORR_OK)
            continue;
        for (size_t j = 0; j < labels.len;) {
            const char *label = labels.data + j;
            j += strlen(label) + 1;
            int64_t start;
            if (sort_bucket_from_label(label, s->bucket, s->tz, &start) != 0)
                continue;
            if (!sort_units_owns(t, sort_unit_hash(iface, strlen(iface), start)))
                continue; /* another write stage's unit: not ours to read or clean */
            sort_unit *u = sort_units_get(t, iface, strlen(iface), start);
            nunits++;
            orr_blob_sweep_tmp(blob, u->dir);
            orr_buf_reset(&files);
            orr_buf_reset(&sizes);
            if (blob->ops->list(blob, u->dir, &files, &sizes, NULL) != ORR_OK)
                continue;
            /* sizes come with the listing: one request per folder, not per file */
            for (size_t k = 0, idx = 0; k < files.len; idx++) {
                const char *fn = files.data + k;
                k += strlen(fn) + 1;
                sort_part_info pi;
                if (sort_part_parse(fn, &pi) != 0)
                    continue;
                uint64_t bytes;
                memcpy(&bytes, sizes.data + idx * sizeof bytes, sizeof bytes);
                sort_unit_add_file(t, u, fn, pi.count, bytes);
                units__note_landed(t, u, &pi);
                nfiles++;
            }
            units__read_check(t, blob, u);
        }
    }
done:
    if (rc == ORR_OK)
        ORR_INFO("landed units read back", "stream=%s units=%zu files=%zu", s->name, nunits,
                 nfiles);
    orr_buf_free(&ifaces);
    orr_buf_free(&labels);
    orr_buf_free(&files);
    orr_buf_free(&sizes);
    return rc;
}
