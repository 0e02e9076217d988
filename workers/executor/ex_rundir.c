/*
 * ex_rundir.c - the private folder of each run (contract in ex_rundir.h).
 *
 * A run's folder used to be made at its start and removed at its end: one
 * inode made and one freed per run. On an ext4 without a journal each new
 * inode skips every inode of its group freed in the last minutes, so at
 * hundreds of runs a second each create (folders and log files alike)
 * walked past thousands of freshly freed inodes (docs/benchmarks.md, "Run
 * folders kept, gaps judged only when met …"). So a folder its run left as
 * a new one is renamed into <work>/run-spare/<n> and renamed back into
 * place for a later run. Anything else is removed as before.
 *
 * Reuse must give a later run nothing of an earlier one. A process of the
 * earlier run that still holds the folder (its cwd, an open descriptor)
 * could write into the reused folder, where before it held a removed one.
 * So a folder is kept only when no process of its run can be left: none was
 * started, or the cgroup backend held them all and none survived the kill
 * (the rlimit backend cannot tell: a process that leaves its group escapes
 * it; a task user with a cgroup of its own to move into, a delegated one,
 * could leave the group, and must not have one). What a run can leave on
 * the folder itself is checked against a folder made at start where runs'
 * folders are made: its entries, mode, owner, size (an ext4 directory never
 * shrinks), inode flags and extended flags (chattr, project, XFS hints) and
 * extended attributes with their values (ACLs, security labels). Tasks that
 * run as executord's own user could reach run-spare itself, so then nothing
 * is kept; nor is anything when the start-up folder's marks cannot be read.
 */
#include "ex_rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void ex_remove_tree(const char *path)
{
    /* Absent or an empty folder (a short run's usual end): one system call
     * instead of a walk. */
    if (rmdir(path) == 0 || errno == ENOENT)
        return;
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void spare_path(const ex_rundir *r, unsigned n, char *out, size_t size)
{
    snprintf(out, size, "%s/%u", r->spare_dir, n);
}

static int make_new(const ex_rundir *r, const char *path)
{
    if (mkdir(path, 0700) != 0)
        return -1;
    if (r->drop && chown(path, r->uid, r->gid) != 0) {
        int e = errno;
        rmdir(path);
        errno = e;
        return -1;
    }
    return 0;
}

/* The folder's extended attributes, names and values in list order, into
 * out (at most size bytes): the length, or -1 when they do not fit or
 * cannot be read. A file system without them has none. */
static ssize_t xattr_blob(int fd, char *out, size_t size)
{
    char names[1024];
    ssize_t n = flistxattr(fd, names, sizeof names);
    if (n < 0)
        return errno == ENOTSUP ? 0 : -1;
    size_t len = 0;
    for (ssize_t off = 0; off < n; off += (ssize_t)strlen(names + off) + 1) {
        size_t nl = strlen(names + off) + 1;
        if (len + nl + sizeof(int) > size)
            return -1;
        memcpy(out + len, names + off, nl);
        len += nl;
        ssize_t v = fgetxattr(fd, names + off, out + len + sizeof(int), size - len - sizeof(int));
        if (v < 0)
            return -1;
        int vl = (int)v;
        memcpy(out + len, &vl, sizeof vl);
        len += sizeof vl + (size_t)v;
    }
    return (ssize_t)len;
}

/* What a run may change on its folder besides its entries, read from fd:
 * inode flags (chattr), the extended flags and project (chattr -p, XFS
 * hints), extended attributes (ACLs, labels). 0, or -1 when it cannot be
 * read on a file system that has it. */
static int folder_marks(int fd, ex_rundir_marks *m)
{
    memset(m, 0, sizeof *m);
    m->have_flags = ioctl(fd, FS_IOC_GETFLAGS, &m->flags) == 0;
    if (!m->have_flags && errno != ENOTTY && errno != EOPNOTSUPP && errno != EINVAL)
        return -1;
    m->have_fsx = ioctl(fd, FS_IOC_FSGETXATTR, &m->fsx) == 0;
    if (!m->have_fsx && errno != ENOTTY && errno != EOPNOTSUPP && errno != EINVAL)
        return -1;
    m->fsx.fsx_nextents = 0; /* not a setting */
    ssize_t n = xattr_blob(fd, m->xattrs, sizeof m->xattrs);
    if (n < 0)
        return -1;
    m->xattrs_len = (size_t)n;
    return 0;
}

static int same_marks(const ex_rundir_marks *a, const ex_rundir_marks *b)
{
    return a->have_flags == b->have_flags && (!a->have_flags || a->flags == b->flags) &&
           a->have_fsx == b->have_fsx &&
           (!a->have_fsx || memcmp(&a->fsx, &b->fsx, sizeof a->fsx) == 0) &&
           a->xattrs_len == b->xattrs_len && memcmp(a->xattrs, b->xattrs, a->xattrs_len) == 0;
}

orr_status ex_rundir_init(ex_rundir *r, const char *work_dir, const char *runs_dir, int confined,
                          int drop, uid_t uid, gid_t gid, orr_err *err)
{
    if (r->ready)
        ex_rundir_close(r);
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->ready = 1;
    r->drop = drop;
    r->uid = uid;
    r->gid = gid;
    snprintf(r->spare_dir, sizeof r->spare_dir, "%.400s/run-spare", work_dir);
    ex_remove_tree(r->spare_dir);
    if (mkdir(r->spare_dir, 0700) != 0 && errno != EEXIST)
        return orr_err_set(err, ORR_EIO, "executor.work_dir", "%s: %s", r->spare_dir,
                           strerror(errno));
    if (!confined || !drop)
        return ORR_OK;
    /* A folder made where runs' folders are made: its marks are what every
     * kept folder must have; it becomes the first spare. */
    char probe[EX_RUNDIR_PATH + 32], sp[EX_RUNDIR_PATH + 32];
    snprintf(probe, sizeof probe, "%.400s/.probe-%d", runs_dir, (int)getpid());
    ex_remove_tree(probe);
    if (make_new(r, probe) != 0)
        return ORR_OK;
    int fd = open(probe, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int ok = fd >= 0 && folder_marks(fd, &r->fresh) == 0;
    if (fd >= 0)
        close(fd);
    spare_path(r, r->next, sp, sizeof sp);
    if (ok && rename(probe, sp) == 0) {
        r->spare[r->n_spares++] = r->next++;
        r->reuse = 1;
    } else {
        ex_remove_tree(probe);
    }
    return ORR_OK;
}

void ex_rundir_close(ex_rundir *r)
{
    if (!r->ready)
        return;
    ex_remove_tree(r->spare_dir);
    pthread_mutex_destroy(&r->mu);
    r->ready = 0;
}

int ex_rundir_make(ex_rundir *r, const char *path)
{
    char sp[EX_RUNDIR_PATH + 32];
    int took = 0, moved = 0;
    if (r->reuse) {
        pthread_mutex_lock(&r->mu);
        if (r->n_spares > 0) {
            spare_path(r, r->spare[--r->n_spares], sp, sizeof sp);
            took = 1;
            moved = rename(sp, path) == 0;
        }
        pthread_mutex_unlock(&r->mu);
    }
    if (moved)
        return 0;
    if (took)
        ex_remove_tree(sp); /* gone, or path in the way: make a new one */
    return make_new(r, path);
}

/* Nothing in it but "." and "..". */
static int empty_dir(int fd)
{
    _Alignas(struct dirent64) char buf[1024];
    ssize_t got;
    while ((got = getdents64(fd, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < got;) {
            const struct dirent64 *e = (const struct dirent64 *)(buf + off);
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                return 0;
            off += e->d_reclen;
        }
    }
    return got == 0;
}

/* As ex_rundir_make makes a folder; see the top of the file. */
static int as_new(const ex_rundir *r, const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    ex_rundir_marks m;
    int ok = fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0700 && st.st_uid == r->uid &&
             st.st_gid == r->gid && st.st_size <= (off_t)st.st_blksize &&
             folder_marks(fd, &m) == 0 && same_marks(&m, &r->fresh) && empty_dir(fd);
    close(fd);
    return ok;
}

void ex_rundir_done(ex_rundir *r, const char *path, int unreachable)
{
    int kept = 0;
    if (r->reuse && unreachable && as_new(r, path)) {
        /* Renamed and counted under one lock: once path is gone, the next
         * ex_rundir_make can take it. */
        pthread_mutex_lock(&r->mu);
        if (r->n_spares < EX_RUNDIR_SPARES) {
            char sp[EX_RUNDIR_PATH + 32];
            unsigned n = r->next++;
            spare_path(r, n, sp, sizeof sp);
            if (rename(path, sp) == 0) {
                r->spare[r->n_spares++] = n;
                kept = 1;
            }
        }
        pthread_mutex_unlock(&r->mu);
    }
    if (!kept)
        ex_remove_tree(path);
}
