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
 * it). What a run can leave on the folder itself is checked: its entries,
 * mode, owner, extended attributes (ACLs are some), inode flags (chattr)
 * and size (a directory never shrinks). Tasks that run as executord's own
 * user could reach run-spare itself, so then nothing is kept.
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

orr_status ex_rundir_init(ex_rundir *r, const char *work_dir, int drop, uid_t uid, gid_t gid,
                          orr_err *err)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->ready = 1;
    r->drop = drop;
    r->uid = uid;
    r->gid = gid;
    r->reuse = drop;
    snprintf(r->spare_dir, sizeof r->spare_dir, "%.400s/run-spare", work_dir);
    ex_remove_tree(r->spare_dir);
    if (mkdir(r->spare_dir, 0700) != 0 && errno != EEXIST)
        return orr_err_set(err, ORR_EIO, "executor.work_dir", "%s: %s", r->spare_dir,
                           strerror(errno));
    if (!r->reuse)
        return ORR_OK;
    /* The first spare, and the inode flags every kept folder must have. */
    char sp[EX_RUNDIR_PATH + 32];
    spare_path(r, r->next, sp, sizeof sp);
    if (make_new(r, sp) != 0) {
        r->reuse = 0;
        return ORR_OK;
    }
    int fd = open(sp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int flags = 0;
    r->have_flags = fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    r->fresh_flags = (unsigned)flags;
    if (fd >= 0)
        close(fd);
    r->spare[r->n_spares++] = r->next++;
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

/* Extended attributes: none, or security.* only (labels a policy sets). */
static int plain_xattrs(int fd)
{
    char names[1024];
    ssize_t n = flistxattr(fd, names, sizeof names);
    if (n < 0)
        return errno == ENOTSUP;
    for (ssize_t off = 0; off < n; off += (ssize_t)strlen(names + off) + 1)
        if (strncmp(names + off, "security.", 9) != 0)
            return 0;
    return 1;
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
    int flags = 0;
    int ok = fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0700 && st.st_uid == r->uid &&
             st.st_gid == r->gid && st.st_size <= (off_t)st.st_blksize &&
             (!r->have_flags ||
              (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (unsigned)flags == r->fresh_flags)) &&
             plain_xattrs(fd) && empty_dir(fd);
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
