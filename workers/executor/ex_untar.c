/*
 * ex_untar.c - unpack a code package with libarchive (see ex_untar.h).
 *
 * libarchive reads the archive (gzip or plain, tar only: ustar, pax, GNU)
 * and writes it to disk with ARCHIVE_EXTRACT_SECURE_SYMLINKS, _NODOTDOT and
 * _NOABSOLUTEPATHS, without owners, times or set-id bits. What no flag
 * gives is checked here, member by member, before anything is written:
 * the member and byte budgets, the name length, the member types (hard
 * links, devices and FIFOs refused), clashes between a file and a folder,
 * and, after the last member, that every symbolic link resolves inside the
 * folder. Names are normalised ("./" and empty components dropped) so the
 * messages name what the archive meant.
 *
 * archive_write_disk writes relative to the current folder, and it must,
 * since absolute names are refused: the unpacking runs on its own thread,
 * which takes a private current folder and umask with unshare(CLONE_FS),
 * so executord's other threads are not moved. Folders are made 0755 and
 * files get mode & 0755 | 0644 (the umask is 022 on that thread).
 */
#include "ex_untar.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_buf.h"

#define UT_NAME_MAX   4096
#define UT_READ_BLOCK (64 * 1024)
#define UT_DISK_FLAGS                                                                              \
    (ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |                           \
     ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS)

typedef struct ut_link {
    char *path;   /* relative, normalised */
    char *target; /* as in the archive */
} ut_link;

typedef struct ut {
    const char *archive, *dir;
    int64_t max_bytes;
    int max_entries;
    orr_err *err;
    orr_status status; /* the thread's result */
    struct archive *in, *disk;
    int64_t bytes;
    int entries;
    ut_link *links;
    size_t nlinks, caplinks;
} ut;

static orr_status refuse(ut *u, const char *member, const char *why)
{
    return orr_err_set(u->err, ORR_EINVAL, "package", "member \"%.200s\": %s", member, why);
}

/* Normalise a member name in place: drop "./" and empty components, refuse
 * absolute names and "..". Returns a message or NULL; *name may become "". */
static const char *normalise(char *name)
{
    if (name[0] == '/')
        return "absolute names are not allowed";
    orr_buf out = ORR_BUF_INIT;
    const char *why = NULL;
    char *save = NULL;
    for (char *c = strtok_r(name, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0) {
            why = "\"..\" is not allowed";
            break;
        }
        if (out.len)
            orr_buf_append_byte(&out, '/');
        orr_buf_append_str(&out, c);
    }
    if (!why)
        memmove(name, out.len ? out.data : "", out.len + 1);
    orr_buf_free(&out);
    return why;
}

/* Every folder on rel's path that exists must be a folder (and not a link:
 * libarchive refuses those too, this names the member). */
static orr_status check_parents(ut *u, const char *rel)
{
    char path[UT_NAME_MAX + 1];
    snprintf(path, sizeof path, "%s", rel);
    for (char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
        struct stat st;
        *p = 0;
        int gone = lstat(path, &st) != 0 && errno == ENOENT;
        *p = '/';
        if (gone)
            return ORR_OK; /* libarchive makes the rest */
        if (!S_ISDIR(st.st_mode))
            return refuse(u, rel, "a folder in its path is not a folder");
    }
    return ORR_OK;
}

/* What is at rel now: 0 nothing, else the S_IFMT bits. */
static mode_t existing(const char *rel)
{
    struct stat st;
    return lstat(rel, &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

static orr_status disk_failed(ut *u, const char *rel)
{
    return orr_err_set(u->err, ORR_EIO, "package", "%s/%s: %s", u->dir, rel,
                       archive_error_string(u->disk) ? archive_error_string(u->disk) : "failed");
}

/* Write the current member (a file or a folder, named rel) to disk. */
static orr_status extract(ut *u, struct archive_entry *e, const char *rel, int is_file)
{
    orr_status s;
    if ((s = check_parents(u, rel)) != ORR_OK)
        return s;
    mode_t there = existing(rel);
    if (is_file && there == S_IFDIR)
        return refuse(u, rel, "names a folder as well as a file");
    if (!is_file && there && there != S_IFDIR)
        return refuse(u, rel, "a folder in its path is not a folder");
    archive_entry_set_pathname(e, rel);
    archive_entry_set_perm(e, is_file ? ((archive_entry_perm(e) & 0755) | 0644) : 0755);
    if (archive_write_header(u->disk, e) < ARCHIVE_WARN)
        return disk_failed(u, rel);
    if (is_file) {
        const void *buf;
        size_t n;
        int64_t off;
        int r;
        while ((r = archive_read_data_block(u->in, &buf, &n, &off)) == ARCHIVE_OK) {
            if (archive_write_data_block(u->disk, buf, n, off) < ARCHIVE_WARN)
                return disk_failed(u, rel);
        }
        if (r != ARCHIVE_EOF)
            return refuse(u, rel, "the archive ends inside it");
    }
    if (archive_write_finish_entry(u->disk) < ARCHIVE_WARN)
        return disk_failed(u, rel);
    return ORR_OK;
}

static void add_link(ut *u, const char *rel, const char *target)
{
    if (u->nlinks == u->caplinks) {
        u->caplinks = u->caplinks ? u->caplinks * 2 : 16;
        u->links = orr_xrealloc(u->links, u->caplinks * sizeof *u->links);
    }
    u->links[u->nlinks].path = orr_xstrdup(rel);
    u->links[u->nlinks].target = orr_xstrdup(target);
    u->nlinks++;
}

/* Make the deferred links, then check each resolves inside the folder. */
static orr_status make_links(ut *u)
{
    char root[PATH_MAX], real[PATH_MAX];
    if (!realpath(".", root))
        return orr_err_set(u->err, ORR_EIO, "package", "%s: %s", u->dir, strerror(errno));
    size_t rl = strlen(root);
    orr_status s = ORR_OK;
    struct archive_entry *e = archive_entry_new();
    if (!e)
        orr_oom(sizeof(void *));
    for (size_t i = 0; i < u->nlinks && s == ORR_OK; i++) {
        const char *rel = u->links[i].path;
        if ((s = check_parents(u, rel)) != ORR_OK)
            break;
        if (existing(rel)) {
            s = refuse(u, rel, "a link with the name of another member");
            break;
        }
        archive_entry_clear(e);
        archive_entry_set_pathname(e, rel);
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_perm(e, 0777);
        archive_entry_set_symlink(e, u->links[i].target);
        if (archive_write_header(u->disk, e) < ARCHIVE_WARN ||
            archive_write_finish_entry(u->disk) < ARCHIVE_WARN)
            s = disk_failed(u, rel);
    }
    archive_entry_free(e);
    for (size_t i = 0; i < u->nlinks && s == ORR_OK; i++) {
        const char *rel = u->links[i].path;
        if (!realpath(rel, real))
            return refuse(u, rel,
                          errno == ENOENT ? "a symbolic link to nothing inside the package"
                                          : "a symbolic link that cannot be resolved");
        if (strncmp(real, root, rl) != 0 || (real[rl] != '/' && real[rl] != 0))
            return refuse(u, rel, "a symbolic link that leaves the package");
    }
    return s;
}

/* One member: the budgets and refusal rules, then extraction (links wait). */
static orr_status member(ut *u, struct archive_entry *e)
{
    if (++u->entries > u->max_entries)
        return orr_err_set(u->err, ORR_EINVAL, "package", "more than %d members", u->max_entries);
    const char *raw = archive_entry_pathname(e);
    if (!raw)
        return orr_err_set(u->err, ORR_EINVAL, "package", "a member without a readable name");
    if (strlen(raw) > UT_NAME_MAX)
        return orr_err_set(u->err, ORR_EINVAL, "package", "a member name is too long");
    char name[UT_NAME_MAX + 1], shown[UT_NAME_MAX + 1];
    snprintf(name, sizeof name, "%s", raw);
    snprintf(shown, sizeof shown, "%s", raw);
    const char *why = normalise(name);
    if (why)
        return refuse(u, shown, why);

    if (archive_entry_hardlink(e))
        return refuse(u, shown, "hard links are not allowed");
    switch (archive_entry_filetype(e)) {
    case AE_IFREG:
        if (!name[0])
            return refuse(u, shown, "a file without a name");
        u->bytes += archive_entry_size(e);
        if (archive_entry_size(e) < 0 || u->bytes > u->max_bytes)
            return orr_err_set(u->err, ORR_EINVAL, "package", "unpacks to more than %lld bytes",
                               (long long)u->max_bytes);
        return extract(u, e, name, 1);
    case AE_IFDIR:
        return name[0] ? extract(u, e, name, 0) : ORR_OK;
    case AE_IFLNK: {
        const char *target = archive_entry_symlink(e);
        if (!name[0])
            return refuse(u, shown, "a link without a name");
        if (!target || !target[0] || target[0] == '/')
            return refuse(u, shown, "a symbolic link to an absolute path leaves the package");
        if (strlen(target) > UT_NAME_MAX)
            return orr_err_set(u->err, ORR_EINVAL, "package", "a member name is too long");
        add_link(u, name, target);
        return ORR_OK;
    }
    case AE_IFCHR:
    case AE_IFBLK:
        return refuse(u, shown, "device files are not allowed");
    case AE_IFIFO:
        return refuse(u, shown, "FIFOs are not allowed");
    default:
        return refuse(u, shown, "unknown member type");
    }
}

/* The archive could not be read further: say why in the old words, with
 * libarchive's detail. */
static orr_status unreadable(ut *u, int r)
{
    const char *detail = archive_error_string(u->in) ? archive_error_string(u->in) : "";
    if (r == ARCHIVE_RETRY) /* libarchive's answer to a bad header checksum */
        return orr_err_set(u->err, ORR_EINVAL, "package",
                           "not a tar archive (bad header checksum at member %d)", u->entries + 1);
    return orr_err_set(u->err, ORR_EINVAL, "package",
                       "not a complete tar.gz archive (truncated or not gzip/tar): %s", detail);
}

static orr_status unpack(ut *u)
{
    struct archive_entry *e;
    orr_status s = ORR_OK;
    for (;;) {
        int r = archive_read_next_header(u->in, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN)
            return unreadable(u, r);
        /* A name not in the locale's charset is only a warning (it is kept
         * as it is; libarchive's ARCHIVE_ERRNO_FILE_FORMAT is EILSEQ on
         * Linux); any other warning is a malformed extended header. */
        if (r == ARCHIVE_WARN && archive_errno(u->in) != EILSEQ)
            return orr_err_set(u->err, ORR_EINVAL, "package",
                               "a malformed extended header (pax or GNU long name): %s",
                               archive_error_string(u->in) ? archive_error_string(u->in) : "");
        if ((s = member(u, e)) != ORR_OK)
            return s;
    }
    if (u->entries == 0)
        return orr_err_set(u->err, ORR_EINVAL, "package", "the archive is empty");
    return make_links(u);
}

/* The unpacking thread: opens the archive, then takes its own current
 * folder (dir) and umask. */
static void *ut_thread(void *arg)
{
    ut *u = arg;
    u->in = archive_read_new();
    u->disk = archive_write_disk_new();
    if (!u->in || !u->disk)
        orr_oom(sizeof(void *));
    archive_read_support_filter_gzip(u->in);
    archive_read_support_format_tar(u->in);
    archive_write_disk_set_options(u->disk, UT_DISK_FLAGS);
    if (archive_read_open_filename(u->in, u->archive, UT_READ_BLOCK) != ARCHIVE_OK) {
        /* not there or not readable; otherwise, not gzip or tar */
        if (access(u->archive, R_OK) != 0)
            u->status = orr_err_set(u->err, ORR_EIO, "package", "cannot open %s: %s", u->archive,
                                    strerror(errno));
        else
            u->status = unreadable(u, ARCHIVE_FATAL);
    } else if (unshare(CLONE_FS) != 0 || chdir(u->dir) != 0) {
        u->status = orr_err_set(u->err, ORR_EIO, "package", "%s: %s", u->dir, strerror(errno));
    } else {
        umask(022);
        u->status = unpack(u);
    }
    archive_read_free(u->in);
    archive_write_free(u->disk);
    return NULL;
}

orr_status ex_untar(const char *archive, const char *dir, int64_t max_bytes, int max_entries,
                    orr_err *err)
{
    ut u = {.archive = archive,
            .dir = dir,
            .max_bytes = max_bytes,
            .max_entries = max_entries,
            .err = err,
            .status = ORR_OK};
    pthread_t t;
    int rc = pthread_create(&t, NULL, ut_thread, &u);
    if (rc != 0)
        return orr_err_set(err, ORR_EIO, "package", "cannot start unpacking: %s", strerror(rc));
    pthread_join(t, NULL);
    for (size_t i = 0; i < u.nlinks; i++) {
        free(u.links[i].path);
        free(u.links[i].target);
    }
    free(u.links);
    return u.status;
}
