/*
 * orr_rpc_desc.c - protobuf wire reader and FileDescriptorSet index for
 * server reflection (see orr_rpc_desc.h).
 *
 * Fields read (from the public google/protobuf/descriptor.proto):
 *   FileDescriptorSet    file = 1 (repeated FileDescriptorProto)
 *   FileDescriptorProto  name = 1, package = 2, dependency = 3,
 *                        message_type = 4, enum_type = 5, service = 6
 *   DescriptorProto      name = 1, nested_type = 3, enum_type = 4
 *   EnumDescriptorProto  name = 1
 *   ServiceDescriptorProto name = 1, method = 2; MethodDescriptorProto name = 1
 * Every read is bounds-checked by orr_rpc_pb_next; nesting is capped, so any
 * byte string either indexes or is refused with ORR_EINVAL.
 */
#include "orr_rpc_desc.h"

#include <stdlib.h>
#include <string.h>

#define DESC_MAX_DEPTH 32

/* ------------------------------------------------------------ wire reader */

void orr_rpc_pb_init(orr_rpc_pb *r, const uint8_t *data, size_t len)
{
    r->p = data;
    r->end = data ? data + len : data;
}

static int pb_varint(orr_rpc_pb *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return -1;
        uint8_t b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

int orr_rpc_pb_next(orr_rpc_pb *r, orr_rpc_pb_field *f)
{
    if (!r->p)
        return -1;
    if (r->p >= r->end)
        return 0;
    uint64_t key;
    if (pb_varint(r, &key) != 0 || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
        goto bad;
    memset(f, 0, sizeof(*f));
    f->num = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    size_t left;
    switch (f->wire) {
    case ORR_RPC_PB_VARINT:
        if (pb_varint(r, &f->v) != 0)
            goto bad;
        return 1;
    case ORR_RPC_PB_I64:
    case ORR_RPC_PB_I32: {
        size_t n = f->wire == ORR_RPC_PB_I64 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n)
            goto bad;
        for (size_t i = 0; i < n; i++)
            f->v |= (uint64_t)r->p[i] << (8 * i);
        r->p += n;
        return 1;
    }
    case ORR_RPC_PB_LEN:
        if (pb_varint(r, &f->v) != 0)
            goto bad;
        left = (size_t)(r->end - r->p);
        if (f->v > left)
            goto bad;
        f->data = r->p;
        f->len = (size_t)f->v;
        r->p += f->len;
        return 1;
    default: /* groups (3, 4) are not used by descriptors; 6, 7 do not exist */
        goto bad;
    }
bad:
    r->p = NULL;
    r->end = NULL;
    return -1;
}

/* ------------------------------------------------------------ index */

struct desc_file {
    char *name;
    char *package;
    const uint8_t *data;
    size_t len;
    char **dep_names;
    size_t n_deps;
    long *deps; /* resolved indices, -1 = not in the set */
};

struct desc_sym {
    char *name;
    size_t file;
    int kind;
};

struct orr_rpc_desc {
    struct desc_file *files;
    size_t n_files, cap_files;
    struct desc_sym *syms;
    size_t n_syms, cap_syms;
};

static int desc_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

/* A malloc'd NUL-terminated copy of a LEN field; NULL (and *bad = 1) when it
 * holds a NUL byte, NULL (and *bad = 0) when out of memory. */
static char *desc_str(const orr_rpc_pb_field *f, int *bad)
{
    *bad = 0;
    if (f->wire != ORR_RPC_PB_LEN || memchr(f->data, 0, f->len)) {
        *bad = 1;
        return NULL;
    }
    char *s = malloc(f->len + 1);
    if (!s)
        return NULL;
    memcpy(s, f->data, f->len);
    s[f->len] = 0;
    return s;
}

/* "scope.name" (just name with an empty scope), malloc'd. */
static char *desc_join(const char *scope, const uint8_t *name, size_t n)
{
    size_t sl = strlen(scope);
    char *s = malloc(sl + n + 2);
    if (!s)
        return NULL;
    size_t k = 0;
    if (sl) {
        memcpy(s, scope, sl);
        s[sl] = '.';
        k = sl + 1;
    }
    memcpy(s + k, name, n);
    s[k + n] = 0;
    return s;
}

static orr_status desc_add_sym(orr_rpc_desc *d, char *name, size_t file, int kind)
{
    if (!name)
        return ORR_ENOMEM;
    if (desc_grow((void **)&d->syms, &d->cap_syms, d->n_syms, sizeof(*d->syms)) != 0) {
        free(name);
        return ORR_ENOMEM;
    }
    d->syms[d->n_syms++] = (struct desc_sym){name, file, kind};
    return ORR_OK;
}

/* The name (field 1) of a descriptor message: *name and *n, or ORR_EINVAL when it
 * is missing, malformed or holds a NUL byte. */
static orr_status desc_name_of(const uint8_t *data, size_t len, const uint8_t **name, size_t *n)
{
    orr_rpc_pb r;
    orr_rpc_pb_field f;
    int rc;
    *name = NULL;
    orr_rpc_pb_init(&r, data, len);
    while ((rc = orr_rpc_pb_next(&r, &f)) == 1)
        if (f.num == 1 && f.wire == ORR_RPC_PB_LEN) {
            *name = f.data;
            *n = f.len;
        }
    if (rc < 0 || !*name || *n == 0 || memchr(*name, 0, *n))
        return ORR_EINVAL;
    return ORR_OK;
}

/* Index a DescriptorProto (message) or EnumDescriptorProto under scope. */
static orr_status desc_index_type(orr_rpc_desc *d, size_t file, const char *scope,
                                  const uint8_t *data, size_t len, int kind, int depth)
{
    if (depth > DESC_MAX_DEPTH)
        return ORR_EINVAL;
    const uint8_t *nm;
    size_t nn;
    orr_status st = desc_name_of(data, len, &nm, &nn);
    if (st != ORR_OK)
        return st;
    char *full = desc_join(scope, nm, nn);
    if (!full)
        return ORR_ENOMEM;
    char *copy = strdup(full);
    st = desc_add_sym(d, copy, file, kind);
    if (st != ORR_OK || kind != ORR_RPC_DESC_MESSAGE)
        goto out;
    orr_rpc_pb r;
    orr_rpc_pb_field f;
    int rc;
    orr_rpc_pb_init(&r, data, len);
    while (st == ORR_OK && (rc = orr_rpc_pb_next(&r, &f)) == 1) {
        if (f.wire != ORR_RPC_PB_LEN)
            continue;
        if (f.num == 3)
            st = desc_index_type(d, file, full, f.data, f.len, ORR_RPC_DESC_MESSAGE, depth + 1);
        else if (f.num == 4)
            st = desc_index_type(d, file, full, f.data, f.len, ORR_RPC_DESC_ENUM, depth + 1);
    }
out:
    free(full);
    return st;
}

static orr_status desc_index_service(orr_rpc_desc *d, size_t file, const char *scope,
                                     const uint8_t *data, size_t len)
{
    const uint8_t *nm;
    size_t nn;
    orr_status st = desc_name_of(data, len, &nm, &nn);
    if (st != ORR_OK)
        return st;
    char *full = desc_join(scope, nm, nn);
    if (!full)
        return ORR_ENOMEM;
    st = desc_add_sym(d, strdup(full), file, ORR_RPC_DESC_SERVICE);
    orr_rpc_pb r;
    orr_rpc_pb_field f;
    orr_rpc_pb_init(&r, data, len);
    while (st == ORR_OK && orr_rpc_pb_next(&r, &f) == 1) {
        if (f.num != 2 || f.wire != ORR_RPC_PB_LEN)
            continue;
        st = desc_name_of(f.data, f.len, &nm, &nn);
        if (st == ORR_OK)
            st = desc_add_sym(d, desc_join(full, nm, nn), file, ORR_RPC_DESC_METHOD);
    }
    free(full);
    return st;
}

/* One FileDescriptorProto: name, package, dependencies, then its symbols. */
static orr_status desc_index_file(orr_rpc_desc *d, const uint8_t *data, size_t len)
{
    if (desc_grow((void **)&d->files, &d->cap_files, d->n_files, sizeof(*d->files)) != 0)
        return ORR_ENOMEM;
    size_t fi = d->n_files;
    struct desc_file *df = &d->files[fi];
    memset(df, 0, sizeof(*df));
    df->data = data;
    df->len = len;
    d->n_files++; /* counted at once, so desc_free frees what is filled in */

    orr_rpc_pb r;
    orr_rpc_pb_field f;
    int rc, bad = 0;
    size_t cap_deps = 0;
    orr_rpc_pb_init(&r, data, len);
    while ((rc = orr_rpc_pb_next(&r, &f)) == 1) {
        if (f.wire != ORR_RPC_PB_LEN || f.num < 1 || f.num > 3)
            continue;
        char *s = desc_str(&f, &bad);
        if (!s)
            return bad ? ORR_EINVAL : ORR_ENOMEM;
        char **slot = f.num == 1 ? &df->name : f.num == 2 ? &df->package : NULL;
        if (slot) {
            free(*slot);
            *slot = s;
            continue;
        }
        if (desc_grow((void **)&df->dep_names, &cap_deps, df->n_deps, sizeof(char *)) != 0) {
            free(s);
            return ORR_ENOMEM;
        }
        df->dep_names[df->n_deps++] = s;
    }
    if (rc < 0 || !df->name || !df->name[0])
        return ORR_EINVAL;
    const char *pkg = df->package ? df->package : "";
    orr_status st = ORR_OK;
    orr_rpc_pb_init(&r, data, len);
    while (st == ORR_OK && orr_rpc_pb_next(&r, &f) == 1) {
        if (f.wire != ORR_RPC_PB_LEN)
            continue;
        if (f.num == 4)
            st = desc_index_type(d, fi, pkg, f.data, f.len, ORR_RPC_DESC_MESSAGE, 0);
        else if (f.num == 5)
            st = desc_index_type(d, fi, pkg, f.data, f.len, ORR_RPC_DESC_ENUM, 0);
        else if (f.num == 6)
            st = desc_index_service(d, fi, pkg, f.data, f.len);
    }
    return st;
}

static int desc_sym_cmp(const void *a, const void *b)
{
    const struct desc_sym *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->file < y->file ? -1 : x->file > y->file;
}

void orr_rpc_desc_free(orr_rpc_desc *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_files; i++) {
        struct desc_file *f = &d->files[i];
        free(f->name);
        free(f->package);
        for (size_t k = 0; k < f->n_deps; k++)
            free(f->dep_names[k]);
        free(f->dep_names);
        free(f->deps);
    }
    free(d->files);
    for (size_t i = 0; i < d->n_syms; i++)
        free(d->syms[i].name);
    free(d->syms);
    free(d);
}

orr_status orr_rpc_desc_load(const uint8_t *set, size_t len, orr_rpc_desc **out, orr_err *err)
{
    *out = NULL;
    orr_rpc_desc *d = calloc(1, sizeof(*d));
    if (!d)
        return orr_err_set(err, ORR_ENOMEM, NULL, "out of memory");
    orr_status st = ORR_OK;
    orr_rpc_pb r;
    orr_rpc_pb_field f;
    int rc;
    orr_rpc_pb_init(&r, set, len);
    while (st == ORR_OK && (rc = orr_rpc_pb_next(&r, &f)) == 1)
        if (f.num == 1 && f.wire == ORR_RPC_PB_LEN)
            st = desc_index_file(d, f.data, f.len);
    if (st == ORR_OK && rc < 0)
        st = ORR_EINVAL;
    for (size_t i = 0; st == ORR_OK && i < d->n_files; i++) {
        struct desc_file *df = &d->files[i];
        df->deps = calloc(df->n_deps ? df->n_deps : 1, sizeof(long));
        if (!df->deps) {
            st = ORR_ENOMEM;
            break;
        }
        for (size_t k = 0; k < df->n_deps; k++)
            df->deps[k] = orr_rpc_desc_file_by_name(d, df->dep_names[k]);
    }
    if (st != ORR_OK) {
        orr_rpc_desc_free(d);
        if (st == ORR_ENOMEM)
            return orr_err_set(err, ORR_ENOMEM, NULL, "out of memory");
        return orr_err_set(err, ORR_EINVAL, "descriptor_set",
                           "not a valid serialized FileDescriptorSet");
    }
    if (d->n_syms)
        qsort(d->syms, d->n_syms, sizeof(*d->syms), desc_sym_cmp);
    *out = d;
    return ORR_OK;
}

size_t orr_rpc_desc_count(const orr_rpc_desc *d)
{
    return d->n_files;
}

const char *orr_rpc_desc_name(const orr_rpc_desc *d, size_t i)
{
    return d->files[i].name;
}

const uint8_t *orr_rpc_desc_bytes(const orr_rpc_desc *d, size_t i, size_t *len)
{
    *len = d->files[i].len;
    return d->files[i].data;
}

long orr_rpc_desc_file_by_name(const orr_rpc_desc *d, const char *name)
{
    for (size_t i = 0; i < d->n_files; i++)
        if (strcmp(d->files[i].name, name) == 0)
            return (long)i;
    return -1;
}

long orr_rpc_desc_file_by_symbol(const orr_rpc_desc *d, const char *symbol, int *kind)
{
    size_t lo = 0, hi = d->n_syms;
    while (lo < hi) { /* first entry >= symbol */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(d->syms[mid].name, symbol) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == d->n_syms || strcmp(d->syms[lo].name, symbol) != 0)
        return -1;
    if (kind)
        *kind = d->syms[lo].kind;
    return (long)d->syms[lo].file;
}

size_t orr_rpc_desc_closure(const orr_rpc_desc *d, size_t i, size_t *out, size_t cap)
{
    /* breadth-first over the dependency graph; the list itself is the queue
     * and the visited set (sets are small: a linear membership test) */
    size_t n = 0, head = 0;
    size_t *list = malloc(d->n_files * sizeof(*list));
    if (!list || i >= d->n_files) {
        free(list);
        return 0;
    }
    list[n++] = i;
    while (head < n) {
        const struct desc_file *f = &d->files[list[head++]];
        for (size_t k = 0; k < f->n_deps; k++) {
            if (f->deps[k] < 0)
                continue;
            size_t j = (size_t)f->deps[k], m = 0;
            while (m < n && list[m] != j)
                m++;
            if (m == n)
                list[n++] = j;
        }
    }
    for (size_t k = 0; k < n && k < cap; k++)
        out[k] = list[k];
    free(list);
    return n;
}
