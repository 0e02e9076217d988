/* sort_source.c - source table, offsets, batches and atomic state writes (see sort_source.h). */
#include "sort_source.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orr_alloc.h"

static const sort_source_ops *const sort_sources[] = {
    &sort_src_file,
    &sort_src_redis,
    &sort_src_kafka,
};

const sort_source_ops *sort_source_find(const char *type)
{
    for (size_t i = 0; i < sizeof sort_sources / sizeof sort_sources[0]; i++)
        if (strcmp(sort_sources[i]->name, type) == 0)
            return sort_sources[i];
    return NULL;
}

int sort_source_off64(const sort_source *s, sort_off off, uint64_t *out)
{
    if (s->ops->off64)
        return s->ops->off64(s, off, out);
    if (off.hi != 0)
        return -1;
    *out = off.lo;
    return 0;
}

char *sort_off_fmt(sort_off o, char *buf)
{
    if (o.hi == 0)
        snprintf(buf, SORT_OFF_MAX, "%" PRIu64, o.lo);
    else
        snprintf(buf, SORT_OFF_MAX, "%" PRIu64 ".%" PRIu64, o.hi, o.lo);
    return buf;
}

static int off__u64(const char *p, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0 || len > 20)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int sort_off_parse(const char *p, size_t len, sort_off *out)
{
    const char *dot = memchr(p, '.', len);
    sort_off o = {0, 0};
    if (!dot)
        return off__u64(p, len, &o.lo) == 0 ? (*out = o, 0) : -1;
    if (off__u64(p, (size_t)(dot - p), &o.hi) != 0 ||
        off__u64(dot + 1, len - (size_t)(dot - p) - 1, &o.lo) != 0 || o.hi == 0)
        return -1;
    *out = o;
    return 0;
}

void sort_batch_reset(sort_batch *b)
{
    orr_buf_reset(&b->data);
    b->n = 0;
}

void sort_batch_free(sort_batch *b)
{
    orr_buf_free(&b->data);
    free(b->e);
    b->e = NULL;
    b->n = b->cap = 0;
}

void sort_batch_put(sort_batch *b, const sort_entry *e, size_t pos)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 1024;
        sort_entry *ne = orr_xrealloc(b->e, nc * sizeof *ne);
        b->e = ne;
        b->cap = nc;
    }
    sort_entry *d = &b->e[b->n++];
    *d = *e;
    d->pos = pos;
}

void sort_batch_add(sort_batch *b, const sort_entry *e, const void *body)
{
    size_t pos = b->data.len;
    orr_buf_append(&b->data, body, e->len);
    sort_batch_put(b, e, pos);
}

size_t sort_batch_stash(sort_batch *b, const void *bytes, size_t len)
{
    size_t pos = b->data.len;
    orr_buf_append(&b->data, bytes, len);
    return pos;
}

orr_status sort_write_atomic(const char *path, const void *data, size_t len, orr_err *err)
{
    char tmp[4096], dir[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid()) >= (int)sizeof tmp)
        return orr_err_set(err, ORR_EINVAL, path, "path too long");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return orr_err_set(err, ORR_EIO, tmp, "cannot create: %s", strerror(errno));
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return orr_err_set(err, ORR_EIO, tmp, "write failed: %s", strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return orr_err_set(err, ORR_EIO, tmp, "fsync failed: %s", strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return orr_err_set(err, ORR_EIO, path, "rename failed: %s", strerror(e));
    }
    snprintf(dir, sizeof dir, "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return ORR_OK;
}
