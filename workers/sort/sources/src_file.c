/*
 * src_file.c - the file-directory source: tails the regular files of one
 * folder in name order (names starting with "." are ignored).
 *
 * Offsets are (file index in name order, byte offset in the file); new files
 * must sort after the ones already there (e.g. names with a timestamp or a
 * sequence number). Only the last file is tailed: once a later file exists,
 * an earlier file is finished, and a last line without a newline is a
 * record. With exit_at_eof the source ends (ORR_EOF) when the last file is
 * read, instead of waiting for more.
 *
 * Each read(2) goes straight into the batch's buffer, and records are
 * framed where they lie (entries point at them): no record is copied on its
 * way from the kernel to the sinks. Only the unframed rest of a read (part
 * of a record) is kept aside between calls, and put back in front of the
 * next read.
 *
 * The committed position lives in <state_dir>/<stream>.offset as
 * "<file index> <byte offset> <file name>\n", replaced atomically on every
 * commit. At open the named file must still be at that index (else
 * ORR_ESTATE: files were inserted before it or renamed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_log.h"
#include "sort_source.h"

typedef struct src_file {
    sort_source base;
    const sort_spec *spec;
    const sort_format_ops *fmt;
    char *dir;
    char *state_path;
    char **names;
    size_t nnames;
    size_t cur;        /* index of the file being read */
    int fd;            /* -1 when none is open */
    uint64_t base_off; /* file offset of the first byte not yet framed */
    orr_buf rest;      /* between calls: bytes read but not yet framed */
    uint64_t skip;     /* bytes still to skip (binary framing error) */
    int skip_line;     /* skip to the next newline (overlong line) */
    sort_off committed;
} src_file;

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void file__free_names(src_file *f)
{
    for (size_t i = 0; i < f->nnames; i++)
        free(f->names[i]);
    free(f->names);
    f->names = NULL;
    f->nnames = 0;
}

/* Re-read the folder. Files we already know keep their index. */
static orr_status file__list(src_file *f, orr_err *err)
{
    DIR *d = opendir(f->dir);
    if (!d)
        return orr_err_set(err, ORR_EIO, "spec.source.path", "cannot open folder %s: %s", f->dir,
                           strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char full[4096];
        struct stat st;
        snprintf(full, sizeof full, "%s/%s", f->dir, de->d_name);
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = orr_xrealloc(names, cap * sizeof *nn);
            names = nn;
        }
        names[n] = orr_xstrdup(de->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < f->nnames && i < n; i++) {
        if (strcmp(f->names[i], names[i]) != 0) {
            orr_status rc = orr_err_set(err, ORR_ESTATE, "spec.source.path",
                                        "file %s appeared before %s, which was already read; new "
                                        "files must sort after existing ones",
                                        names[i], f->names[i]);
            for (size_t j = 0; j < n; j++)
                free(names[j]);
            free(names);
            return rc;
        }
    }
    if (n < f->nnames) {
        for (size_t j = 0; j < n; j++)
            free(names[j]);
        free(names);
        return orr_err_set(err, ORR_ESTATE, "spec.source.path",
                           "files disappeared from %s while being read", f->dir);
    }
    file__free_names(f);
    f->names = names;
    f->nnames = n;
    return ORR_OK;
}

static orr_status file__load_state(src_file *f, orr_err *err)
{
    FILE *fp = fopen(f->state_path, "r");
    if (!fp) {
        if (errno == ENOENT)
            return ORR_OK;
        return orr_err_set(err, ORR_EIO, f->state_path, "cannot read: %s", strerror(errno));
    }
    uint64_t hi, lo;
    char name[1024];
    int k = fscanf(fp, "%" SCNu64 " %" SCNu64 " %1023[^\n]", &hi, &lo, name);
    fclose(fp);
    if (k != 3)
        return orr_err_set(err, ORR_EINVAL, f->state_path, "malformed offset file");
    if (hi >= f->nnames || strcmp(f->names[hi], name) != 0)
        return orr_err_set(err, ORR_ESTATE, f->state_path,
                           "committed file %s is no longer at index %" PRIu64 " of %s", name, hi,
                           f->dir);
    f->committed.hi = hi;
    f->committed.lo = lo;
    f->cur = hi;
    f->base_off = lo;
    return ORR_OK;
}

static void src_file_close(sort_source *s)
{
    src_file *f = (src_file *)s;
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    file__free_names(f);
    orr_buf_free(&f->rest);
    free(f->dir);
    free(f->state_path);
    free(f);
}

static orr_status src_file_open(const sort_spec *spec, const sort_source_env *env,
                                sort_source **out, orr_err *err)
{
    src_file *f = orr_xcalloc(1, sizeof *f);
    f->base.ops = &sort_src_file;
    f->spec = spec;
    f->fmt = env->fmt;
    f->fd = -1;
    f->dir = orr_xstrdup(spec->source.path);
    char sp[4096];
    snprintf(sp, sizeof sp, "%s/%s.offset", env->state_dir, spec->name);
    f->state_path = orr_xstrdup(sp);
    orr_status rc = file__list(f, err);
    if (rc == ORR_OK)
        rc = file__load_state(f, err);
    if (rc != ORR_OK) {
        src_file_close(&f->base);
        return rc;
    }
    ORR_INFO("file source open", "dir=%s file_index=%zu offset=%" PRIu64, orr_log_q(f->dir), f->cur,
             f->base_off);
    *out = &f->base;
    return ORR_OK;
}

/* Frame the bytes of b->data from *from on (at_eof: the file is finished).
 * Records stay where they were read; *from and base_off move past what was
 * framed. */
static void file__frame(src_file *f, sort_batch *b, size_t *from, int at_eof)
{
    const char *d = b->data.data;
    size_t pos = *from, len = b->data.len;
    while (pos < len) {
        if (f->skip > 0) {
            size_t k = len - pos < f->skip ? len - pos : (size_t)f->skip;
            pos += k;
            f->skip -= k;
            continue;
        }
        if (f->skip_line) {
            const char *nl = memchr(d + pos, '\n', len - pos);
            if (!nl) {
                pos = len;
                break;
            }
            pos = (size_t)(nl - d) + 1;
            f->skip_line = 0;
            continue;
        }
        sort_frame fr;
        int r = f->fmt->frame(f->spec, d + pos, len - pos, at_eof, &fr);
        if (r == SORT_FRAME_NEED)
            break;
        uint64_t at = f->base_off + (pos - *from);
        sort_entry e = {
            .off = {f->cur, at},
            .next = {f->cur, at + fr.consumed},
            .partition = 0,
            .why = r == SORT_FRAME_RECORD ? -1 : (int32_t)fr.why,
            .len = (uint32_t)fr.rec_len,
        };
        sort_batch_put(b, &e, pos + fr.rec_off);
        pos += fr.consumed;
        if (r == SORT_FRAME_BAD) {
            f->skip = fr.skip;
            f->skip_line = fr.skip_line;
        }
    }
    f->base_off += pos - *from;
    *from = pos;
}

/* Keep the unframed bytes of b->data (from *from on) for the next call. */
static void file__keep_rest(src_file *f, sort_batch *b, size_t from)
{
    orr_buf_reset(&f->rest);
    if (from < b->data.len) {
        orr_buf_append(&f->rest, b->data.data + from, b->data.len - from);
        b->data.len = from;
        b->data.data[from] = 0;
    }
}

static void file__nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Read and frame into b; *from is where b->data's unframed bytes begin. */
static orr_status file__next(src_file *f, sort_batch *b, size_t *from, int wait_ms, orr_err *err)
{
    for (int round = 0; round < 4; round++) {
        if (f->fd < 0) {
            if (f->cur >= f->nnames) {
                orr_status rc = file__list(f, err);
                if (rc != ORR_OK)
                    return rc;
            }
            if (f->cur >= f->nnames) {
                if (f->spec->source.exit_at_eof)
                    return ORR_EOF;
                file__nap(wait_ms < 50 ? wait_ms : 50);
                return ORR_OK;
            }
            char full[4096];
            snprintf(full, sizeof full, "%s/%s", f->dir, f->names[f->cur]);
            f->fd = open(full, O_RDONLY | O_CLOEXEC);
            if (f->fd < 0)
                return orr_err_set(err, ORR_EIO, full, "cannot open: %s", strerror(errno));
            if (lseek(f->fd, (off_t)f->base_off, SEEK_SET) < 0)
                return orr_err_set(err, ORR_EIO, full, "cannot seek: %s", strerror(errno));
            b->data.len = *from; /* nothing unframed carries over to another file */
        }
        size_t want = (size_t)f->spec->source.read_size;
        orr_buf_reserve(&b->data, want);
        ssize_t r = read(f->fd, b->data.data + b->data.len, want);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return orr_err_set(err, ORR_EIO, f->names[f->cur], "read failed: %s", strerror(errno));
        }
        if (r > 0) {
            b->data.len += (size_t)r;
            b->data.data[b->data.len] = 0;
            file__frame(f, b, from, 0);
            if (b->n > 0)
                return ORR_OK;
            continue;
        }
        /* End of the current file: finished if a later file exists. */
        if (f->cur + 1 >= f->nnames) {
            orr_status rc = file__list(f, err);
            if (rc != ORR_OK)
                return rc;
        }
        int finished = f->cur + 1 < f->nnames || f->spec->source.exit_at_eof;
        if (!finished) {
            if (b->n == 0)
                file__nap(wait_ms < 50 ? wait_ms : 50);
            return ORR_OK;
        }
        file__frame(f, b, from, 1);
        if (f->cur + 1 < f->nnames) {
            close(f->fd);
            f->fd = -1;
            f->cur++;
            f->base_off = 0;
            f->skip = 0;
            f->skip_line = 0;
            if (b->n > 0)
                return ORR_OK;
            continue;
        }
        return b->n > 0 ? ORR_OK : ORR_EOF;
    }
    return ORR_OK;
}

static orr_status src_file_next(sort_source *s, sort_batch *b, int wait_ms, orr_err *err)
{
    src_file *f = (src_file *)s;
    /* The unframed rest of the last call goes first; reads append to it. */
    size_t from = b->data.len;
    if (f->rest.len > 0)
        orr_buf_append(&b->data, f->rest.data, f->rest.len);
    orr_status rc = file__next(f, b, &from, wait_ms, err);
    file__keep_rest(f, b, from);
    return rc;
}

static orr_status src_file_commit(sort_source *s, uint32_t partition, sort_off next, orr_err *err)
{
    src_file *f = (src_file *)s;
    if (partition != 0 || next.hi >= f->nnames)
        return orr_err_set(err, ORR_EINVAL, "offset", "no such file position");
    if (sort_off_cmp(next, f->committed) <= 0)
        return ORR_OK;
    char line[1200];
    int n = snprintf(line, sizeof line, "%" PRIu64 " %" PRIu64 " %s\n", next.hi, next.lo,
                     f->names[next.hi]);
    orr_status rc = sort_write_atomic(f->state_path, line, (size_t)n, err);
    if (rc == ORR_OK)
        f->committed = next;
    return rc;
}

static sort_off src_file_committed(sort_source *s, uint32_t partition)
{
    (void)partition;
    return ((src_file *)s)->committed;
}

/* File index in the top 24 bits, byte offset in the low 40 (1 TiB files). */
static int src_file_off64(const sort_source *s, sort_off off, uint64_t *out)
{
    (void)s;
    if (off.hi >= (1ULL << 24) || off.lo >= (1ULL << 40))
        return -1;
    *out = off.hi << 40 | off.lo;
    return 0;
}

const sort_source_ops sort_src_file = {
    .name = "file",
    .open = src_file_open,
    .next = src_file_next,
    .commit = src_file_commit,
    .committed = src_file_committed,
    .close = src_file_close,
    .off64 = src_file_off64,
};
