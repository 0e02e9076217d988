/*
 * ex_untar.c - a careful tar.gz reader for code packages (see ex_untar.h).
 *
 * The archive is a sequence of 512-byte headers, each followed by its
 * content rounded up to 512 bytes, ended by zero blocks. Extended members
 * change the next real member: pax 'x' (records "LEN key=value\n"), GNU 'L'
 * (long name) and 'K' (long link target); pax 'g' is skipped. Everything is
 * read through zlib's gzread, so a plain (uncompressed) tar works as well.
 */
#include "ex_untar.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "orr_buf.h"

#define UT_BLOCK    512
#define UT_NAME_MAX 4096

typedef struct ut_link {
    char *path;   /* relative, normalised */
    char *target; /* as in the archive */
} ut_link;

typedef struct ut {
    gzFile gz;
    const char *dir;
    orr_err *err;
    int64_t bytes, max_bytes;
    /* pending overrides from pax / GNU members */
    orr_buf next_name, next_link;
    int64_t next_size; /* -1 = none */
    ut_link *links;
    size_t nlinks, caplinks;
} ut;

static orr_status refuse(ut *u, const char *member, const char *why)
{
    return orr_err_set(u->err, ORR_EINVAL, "package", "member \"%.200s\": %s", member, why);
}

/* Read exactly n bytes. */
static int read_full(ut *u, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        int r = gzread(u->gz, (char *)buf + got, (unsigned)(n - got));
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* Skip n bytes of content plus padding. */
static int skip(ut *u, int64_t n)
{
    char buf[UT_BLOCK * 16];
    int64_t left = (n + UT_BLOCK - 1) / UT_BLOCK * UT_BLOCK;
    while (left > 0) {
        size_t k = left > (int64_t)sizeof buf ? sizeof buf : (size_t)left;
        if (read_full(u, buf, k) != 0)
            return -1;
        left -= (int64_t)k;
    }
    return 0;
}

/* Octal number field (NUL/space terminated); -1 when malformed. Base-256
 * (high bit set) sizes are refused: nothing that large is a code package. */
static int64_t octal(const char *f, size_t n)
{
    int64_t v = 0;
    size_t i = 0;
    if (n && ((unsigned char)f[0] & 0x80))
        return -1;
    while (i < n && f[i] == ' ')
        i++;
    int digits = 0;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
        if (v > (INT64_MAX >> 3))
            return -1;
        v = v * 8 + (f[i] - '0');
    }
    if (i < n && f[i] != 0 && f[i] != ' ')
        return -1;
    return digits ? v : -1;
}

static int checksum_ok(const unsigned char *h)
{
    int64_t want = octal((const char *)h + 148, 8);
    int64_t sum = 0;
    for (int i = 0; i < UT_BLOCK; i++)
        sum += (i >= 148 && i < 156) ? ' ' : h[i];
    return want >= 0 && want == sum;
}

/* Read a member's content (n bytes, at most limit) into b. */
static int read_content(ut *u, int64_t n, size_t limit, orr_buf *b)
{
    if (n < 0 || (uint64_t)n > limit)
        return -1;
    orr_buf_reset(b);
    orr_buf_reserve(b, (size_t)n + 1);
    if (read_full(u, b->data, (size_t)n) != 0)
        return -1;
    b->len = (size_t)n;
    b->data[n] = 0;
    char pad[UT_BLOCK];
    return read_full(u, pad, (size_t)((UT_BLOCK - n % UT_BLOCK) % UT_BLOCK));
}

/* Parse pax records "LEN key=value\n" into the pending overrides. */
static int pax_parse(ut *u, const char *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        char *end;
        unsigned long len = strtoul(p + off, &end, 10);
        if (end == p + off || *end != ' ' || len == 0 || off + len > n || p[off + len - 1] != '\n')
            return -1;
        const char *kv = end + 1;
        const char *eq = memchr(kv, '=', (size_t)(p + off + len - 1 - kv));
        if (!eq)
            return -1;
        size_t klen = (size_t)(eq - kv);
        size_t vlen = (size_t)(p + off + len - 1 - (eq + 1));
        if (klen == 4 && memcmp(kv, "path", 4) == 0) {
            orr_buf_reset(&u->next_name);
            orr_buf_append(&u->next_name, eq + 1, vlen);
        } else if (klen == 8 && memcmp(kv, "linkpath", 8) == 0) {
            orr_buf_reset(&u->next_link);
            orr_buf_append(&u->next_link, eq + 1, vlen);
        } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
            char num[32];
            if (vlen == 0 || vlen >= sizeof num)
                return -1;
            memcpy(num, eq + 1, vlen);
            num[vlen] = 0;
            char *e2;
            long long v = strtoll(num, &e2, 10);
            if (*e2 || v < 0)
                return -1;
            u->next_size = v;
        }
        off += len;
    }
    return 0;
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

/* mkdir -p of dir/rel (rel's every component). */
static orr_status make_dirs(ut *u, const char *rel)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", u->dir, rel);
    if (n < 0 || n >= (int)sizeof path)
        return refuse(u, rel, "path too long");
    size_t base = strlen(u->dir) + 1;
    for (char *p = path + base;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            struct stat st;
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                return orr_err_set(u->err, ORR_EIO, "package", "mkdir %s: %s", path,
                                   strerror(errno));
            if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
                return refuse(u, rel, "a folder in its path is not a folder");
            chmod(path, 0755);
            *p = c;
            if (!c)
                break;
        }
    }
    return ORR_OK;
}

static orr_status write_file(ut *u, const char *rel, int64_t size, int64_t mode)
{
    char path[PATH_MAX];
    orr_status s;
    const char *slash = strrchr(rel, '/');
    if (slash) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - rel), rel);
        if ((s = make_dirs(u, parent)) != ORR_OK)
            return s;
    }
    int n = snprintf(path, sizeof path, "%s/%s", u->dir, rel);
    if (n < 0 || n >= (int)sizeof path)
        return refuse(u, rel, "path too long");
    unlink(path); /* a later member of the same name replaces it */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == EISDIR || errno == EEXIST
                   ? refuse(u, rel, "names a folder as well as a file")
                   : orr_err_set(u->err, ORR_EIO, "package", "create %s: %s", path,
                                 strerror(errno));
    s = ORR_OK;
    char buf[UT_BLOCK * 32];
    int64_t left = size;
    while (left > 0) {
        size_t want = left > (int64_t)sizeof buf ? sizeof buf : (size_t)left;
        size_t padded = (want + UT_BLOCK - 1) / UT_BLOCK * UT_BLOCK;
        if (read_full(u, buf, padded) != 0) {
            s = refuse(u, rel, "the archive ends inside it");
            break;
        }
        if (write(fd, buf, want) != (ssize_t)want) {
            s = orr_err_set(u->err, ORR_EIO, "package", "write %s: %s", path, strerror(errno));
            break;
        }
        left -= (int64_t)want;
    }
    if (s == ORR_OK && fchmod(fd, (mode_t)((mode & 0755) | 0644)) != 0)
        s = orr_err_set(u->err, ORR_EIO, "package", "chmod %s: %s", path, strerror(errno));
    close(fd);
    return s;
}

static void add_link(ut *u, const char *rel, const char *target)
{
    if (u->nlinks == u->caplinks) {
        u->caplinks = u->caplinks ? u->caplinks * 2 : 16;
        u->links = realloc(u->links, u->caplinks * sizeof *u->links);
        if (!u->links)
            abort();
    }
    u->links[u->nlinks].path = strdup(rel);
    u->links[u->nlinks].target = strdup(target);
    if (!u->links[u->nlinks].path || !u->links[u->nlinks].target)
        abort();
    u->nlinks++;
}

/* Make the deferred links, then check each resolves inside the folder. */
static orr_status make_links(ut *u)
{
    char root[PATH_MAX], path[PATH_MAX], real[PATH_MAX];
    if (!realpath(u->dir, root))
        return orr_err_set(u->err, ORR_EIO, "package", "%s: %s", u->dir, strerror(errno));
    size_t rl = strlen(root);
    orr_status s;
    for (size_t i = 0; i < u->nlinks; i++) {
        const char *rel = u->links[i].path;
        const char *slash = strrchr(rel, '/');
        if (slash) {
            char parent[PATH_MAX];
            snprintf(parent, sizeof parent, "%.*s", (int)(slash - rel), rel);
            if ((s = make_dirs(u, parent)) != ORR_OK)
                return s;
        }
        snprintf(path, sizeof path, "%s/%s", u->dir, rel);
        if (symlink(u->links[i].target, path) != 0)
            return errno == EEXIST ? refuse(u, rel, "a link with the name of another member")
                                   : orr_err_set(u->err, ORR_EIO, "package", "symlink %s: %s", path,
                                                 strerror(errno));
    }
    for (size_t i = 0; i < u->nlinks; i++) {
        snprintf(path, sizeof path, "%s/%s", u->dir, u->links[i].path);
        if (!realpath(path, real))
            return refuse(u, u->links[i].path,
                          errno == ENOENT ? "a symbolic link to nothing inside the package"
                                          : "a symbolic link that cannot be resolved");
        if (strncmp(real, root, rl) != 0 || (real[rl] != '/' && real[rl] != 0))
            return refuse(u, u->links[i].path, "a symbolic link that leaves the package");
    }
    return ORR_OK;
}

static orr_status member(ut *u, const unsigned char *h, int *entries, int max_entries)
{
    char type = (char)h[156];
    int64_t size = octal((const char *)h + 124, 12);
    if (size < 0)
        return orr_err_set(u->err, ORR_EINVAL, "package", "a member header has a bad size");
    if (u->next_size >= 0)
        size = u->next_size;
    /* Extension members describe the next one. */
    if (type == 'x' || type == 'L' || type == 'K') {
        orr_buf b = ORR_BUF_INIT;
        int bad = read_content(u, size, 1 << 20, &b) != 0;
        if (!bad && type == 'x')
            bad = pax_parse(u, b.data, b.len) != 0;
        else if (!bad) {
            orr_buf *dst = type == 'L' ? &u->next_name : &u->next_link;
            orr_buf_reset(dst);
            orr_buf_append_str(dst, b.data); /* up to the first NUL */
        }
        orr_buf_free(&b);
        return bad ? orr_err_set(u->err, ORR_EINVAL, "package",
                                 "a malformed extended header (pax or GNU long name)")
                   : ORR_OK;
    }
    if (type == 'g')
        return skip(u, size) == 0 ? ORR_OK
                                  : orr_err_set(u->err, ORR_EINVAL, "package", "truncated");

    /* The member's name and link target. */
    char name[UT_NAME_MAX + 1], link[UT_NAME_MAX + 1];
    if (u->next_name.len) {
        if (u->next_name.len > UT_NAME_MAX)
            return orr_err_set(u->err, ORR_EINVAL, "package", "a member name is too long");
        snprintf(name, sizeof name, "%s", orr_buf_cstr(&u->next_name));
    } else if (memcmp(h + 257, "ustar", 5) == 0 && h[345]) {
        snprintf(name, sizeof name, "%.155s/%.100s", (const char *)h + 345, (const char *)h);
    } else {
        snprintf(name, sizeof name, "%.100s", (const char *)h);
    }
    if (u->next_link.len)
        snprintf(link, sizeof link, "%s", orr_buf_cstr(&u->next_link));
    else
        snprintf(link, sizeof link, "%.100s", (const char *)h + 157);
    orr_buf_reset(&u->next_name);
    orr_buf_reset(&u->next_link);
    u->next_size = -1;

    if (++*entries > max_entries)
        return orr_err_set(u->err, ORR_EINVAL, "package", "more than %d members", max_entries);
    char shown[UT_NAME_MAX + 1];
    snprintf(shown, sizeof shown, "%s", name);
    const char *why = normalise(name);
    if (why)
        return refuse(u, shown, why);
    int64_t mode = octal((const char *)h + 100, 8);
    switch (type) {
    case '0':
    case '\0':
    case '7': /* contiguous file: a regular file */
        if (!name[0])
            return refuse(u, shown, "a file without a name");
        u->bytes += size;
        if (u->bytes > u->max_bytes)
            return orr_err_set(u->err, ORR_EINVAL, "package", "unpacks to more than %lld bytes",
                               (long long)u->max_bytes);
        return write_file(u, name, size, mode < 0 ? 0644 : mode);
    case '5':
        if (skip(u, size) != 0)
            return refuse(u, shown, "the archive ends inside it");
        return name[0] ? make_dirs(u, name) : ORR_OK;
    case '2':
        if (!name[0])
            return refuse(u, shown, "a link without a name");
        if (!link[0] || link[0] == '/')
            return refuse(u, shown, "a symbolic link to an absolute path leaves the package");
        add_link(u, name, link);
        return skip(u, size) == 0 ? ORR_OK : refuse(u, shown, "the archive ends inside it");
    case '1':
        return refuse(u, shown, "hard links are not allowed");
    case '3':
    case '4':
        return refuse(u, shown, "device files are not allowed");
    case '6':
        return refuse(u, shown, "FIFOs are not allowed");
    default: {
        char m[48];
        snprintf(m, sizeof m, "unknown member type '%c'", type >= 32 && type < 127 ? type : '?');
        return refuse(u, shown, m);
    }
    }
}

orr_status ex_untar(const char *archive, const char *dir, int64_t max_bytes, int max_entries,
                    orr_err *err)
{
    ut u = {.dir = dir, .err = err, .max_bytes = max_bytes, .next_size = -1};
    u.gz = gzopen(archive, "rb");
    if (!u.gz)
        return orr_err_set(err, ORR_EIO, "package", "cannot open %s: %s", archive, strerror(errno));
    gzbuffer(u.gz, 64 * 1024);
    orr_status s = ORR_OK;
    int entries = 0, zeros = 0;
    unsigned char h[UT_BLOCK];
    for (;;) {
        if (read_full(&u, h, UT_BLOCK) != 0) {
            /* Some writers end after one zero block, or none; a header cut
             * short is damage. */
            if (!gzeof(u.gz) || (zeros == 0 && entries == 0))
                s = orr_err_set(err, ORR_EINVAL, "package",
                                "not a complete tar.gz archive (truncated or not gzip/tar)");
            break;
        }
        int zero = 1;
        for (int i = 0; i < UT_BLOCK && zero; i++)
            zero = h[i] == 0;
        if (zero) {
            if (++zeros == 2)
                break;
            continue;
        }
        if (zeros) {
            s = orr_err_set(err, ORR_EINVAL, "package", "data after an end-of-archive block");
            break;
        }
        if (!checksum_ok(h)) {
            s = orr_err_set(err, ORR_EINVAL, "package",
                            "not a tar archive (bad header checksum at member %d)", entries + 1);
            break;
        }
        if ((s = member(&u, h, &entries, max_entries)) != ORR_OK)
            break;
    }
    if (s == ORR_OK && entries == 0)
        s = orr_err_set(err, ORR_EINVAL, "package", "the archive is empty");
    if (s == ORR_OK)
        s = make_links(&u);
    gzclose(u.gz);
    for (size_t i = 0; i < u.nlinks; i++) {
        free(u.links[i].path);
        free(u.links[i].target);
    }
    free(u.links);
    orr_buf_free(&u.next_name);
    orr_buf_free(&u.next_link);
    return s;
}
