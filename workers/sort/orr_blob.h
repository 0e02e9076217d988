/*
 * orr_blob.h - the blob store: where landed files go. One ops struct per
 * backend, chosen by the URL's scheme.
 *
 *   file:///data/orrery   (or a plain absolute path)   local or NFS folder
 *   webhdfs://user@host:port/root   HDFS through WebHDFS with libcurl
 *                                   (orr_blob_webhdfs.c)
 *
 * Paths given to the functions are relative to the store's root, with "/"
 * separators, and must not contain "..", "." components or empty parts.
 *
 * Landing is atomic: a put writes a temporary name (".tmp-<name>") in the
 * target folder, makes it durable, and renames it to its final name, so a
 * reader (or a restart) sees the whole file or nothing. Leftover ".tmp-"
 * files of a crash are removed by orr_blob_sweep_tmp().
 *
 * This lives beside the sort engine for now; the names are chosen so it can
 * move to lib/ unchanged. A store handle may be used by several threads at
 * once (the file backend keeps no mutable state).
 */
#ifndef ORR_BLOB_H
#define ORR_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"

typedef struct orr_blob orr_blob;

/* One object of a batch landing (put_many): a local file moved into the
 * store (local set; it is gone on success) or bytes (data, len). */
typedef struct orr_blob_item {
    const char *rel;
    const char *local;
    const void *data;
    size_t len;
} orr_blob_item;

typedef struct orr_blob_ops {
    const char *scheme;
    orr_status (*open)(const char *url, orr_blob **out, orr_err *err);
    /* Land the local file at rel (folders created as needed). With move
     * set the local file may be renamed away (it is gone on success). */
    orr_status (*put_file)(orr_blob *b, const char *rel, const char *local, int move, orr_err *err);
    orr_status (*put_bytes)(orr_blob *b, const char *rel, const void *data, size_t len,
                            orr_err *err);
    /* Read a whole object into out (reset first). ORR_ENOTFOUND if absent. */
    orr_status (*get_bytes)(orr_blob *b, const char *rel, orr_buf *out, orr_err *err);
    /* Names in folder rel (not recursive, no "." entries), each followed by
     * a NUL, appended to out; with sizes (may be NULL), each entry's size in
     * bytes (0 for a folder) appended to it as a uint64_t, in the same
     * order. ORR_ENOTFOUND if the folder is absent. */
    orr_status (*list)(orr_blob *b, const char *rel, orr_buf *out, orr_buf *sizes, orr_err *err);
    orr_status (*remove)(orr_blob *b, const char *rel, orr_err *err);
    /* Size in bytes of the object at rel into *size. ORR_ENOTFOUND if
     * absent, ORR_EINVAL for a bad rel or a folder, ORR_EIO otherwise. */
    orr_status (*size)(orr_blob *b, const char *rel, uint64_t *size, orr_err *err);
    /* Land n items as one batch: each is first placed under a temporary
     * name in its folder (folders created as needed), then every item is
     * renamed to its final name in list order. With durable set, the bytes
     * of all items are made durable before the first final name appears,
     * and the names before the call returns -- one sync per step for the
     * whole batch (the file backend: syncfs on its filesystem) instead of
     * an fsync per file and folder. *landed (may be NULL) gets how many
     * items are under their final names, always a prefix of the list, also
     * on failure (ORR_EIO naming the path, ORR_EINVAL for a bad rel); the
     * local files of items that did not land are moved back (best effort). */
    orr_status (*put_many)(orr_blob *b, const orr_blob_item *items, size_t n, int durable,
                           size_t *landed, orr_err *err);
    void (*close)(orr_blob *b);
} orr_blob_ops;

struct orr_blob {
    const orr_blob_ops *ops;
};

extern const orr_blob_ops orr_blob_file;

/* Open a store by URL. ORR_EINVAL (field "blob_root") for an unknown scheme
 * or a bad URL, ORR_EIO if the root cannot be created. Free with
 * orr_blob_close. */
orr_status orr_blob_open(const char *url, orr_blob **out, orr_err *err);
void orr_blob_close(orr_blob *b);

/* 1 if rel is a clean relative path (see above). */
int orr_blob_path_ok(const char *rel);

/* Remove ".tmp-*" leftovers in folder rel. Returns how many were removed. */
size_t orr_blob_sweep_tmp(orr_blob *b, const char *rel);

/* Local root folder of a file:// store; NULL for other backends. */
const char *orr_blob_local_root(const orr_blob *b);

/* The backends, one ops struct each (orr_blob.c, orr_blob_webhdfs.c). */
extern const orr_blob_ops orr_blob_file;
extern const orr_blob_ops orr_blob_webhdfs;

#endif
