/*
 * webhdfs_blob_test.c - the blob store contract (lib/orr_blob.h) of the
 * webhdfs:// backend, run against the WebHDFS protocol stand-in
 * (tests/integration/lib/webhdfs_standin.py: a namenode + datanode on
 * loopback that speaks the REST subset; it is not HDFS).
 *
 * Usage: webhdfs_blob_test NAMENODE_PORT STANDIN_DIR WORK_DIR
 *   STANDIN_DIR is the folder the stand-in stores files in, read directly to
 *   check what landed; WORK_DIR holds local files for put_file/put_many.
 * Failures are injected through the stand-in's /ctl endpoint. Exit 0 when
 * every check passed; each failed check prints a line.
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orr_blob.h"

static int failures;
static int nn_port;
static const char *sdir;
static const char *wdir;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return s * n;
}

/* GET /ctl?q on the stand-in's namenode. */
static void ctl(const char *q)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/ctl?%s", nn_port, q);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    CURLcode cc = curl_easy_perform(c);
    CHECK(cc == CURLE_OK, "ctl %s: %s", q, curl_easy_strerror(cc));
    curl_easy_cleanup(c);
}

/* 1 if the stand-in holds a file at store-relative path rel. */
static int stored(const char *rel)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/store/%s", sdir, rel);
    return stat(p, &st) == 0;
}

static void write_local(const char *name, const char *text, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", wdir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

/* Names listed in folder rel, "a,b," (sorted by the stand-in). */
static void list_str(orr_blob *b, const char *rel, char *out, size_t n)
{
    orr_buf names = ORR_BUF_INIT;
    orr_err err = {0};
    out[0] = 0;
    orr_status rc = b->ops->list(b, rel, &names, NULL, &err);
    CHECK(rc == ORR_OK, "list %s: %s", rel, err.msg);
    for (size_t off = 0; off < names.len; off += strlen(names.data + off) + 1) {
        strncat(out, names.data + off, n - strlen(out) - 2);
        strncat(out, ",", n - strlen(out) - 1);
    }
    orr_buf_free(&names);
}

static void expect_get(orr_blob *b, const char *rel, const char *want)
{
    orr_buf got = ORR_BUF_INIT;
    orr_err err = {0};
    orr_status rc = b->ops->get_bytes(b, rel, &got, &err);
    CHECK(rc == ORR_OK, "get %s: %s", rel, err.msg);
    CHECK(got.len == strlen(want) && memcmp(got.data, want, got.len) == 0, "get %s: '%.*s'", rel,
          (int)got.len, got.data ? got.data : "");
    orr_buf_free(&got);
}

static void test_urls(void)
{
    orr_blob *b = NULL;
    orr_err err = {0};
    char url[256];
    orr_status rc = orr_blob_open("webhdfs://", &b, &err);
    CHECK(rc == ORR_EINVAL && strcmp(err.field, "blob_root") == 0, "empty: %s", err.msg);
    snprintf(url, sizeof url, "webhdfs://alice:s3cr3tpw@127.0.0.1:%d/x", nn_port);
    rc = orr_blob_open(url, &b, &err);
    CHECK(rc == ORR_EINVAL && !strstr(err.msg, "s3cr3tpw"), "password: %d %s", rc, err.msg);
    rc = orr_blob_open("webhdfs://alice@127.0.0.1/x", &b, &err);
    CHECK(rc == ORR_EINVAL && strstr(err.msg, "HOST:PORT"), "no port: %s", err.msg);
    snprintf(url, sizeof url, "webhdfs://alice@127.0.0.1:%d/a/../b", nn_port);
    rc = orr_blob_open(url, &b, &err);
    CHECK(rc == ORR_EINVAL && strstr(err.msg, "clean"), "dotdot: %s", err.msg);
    snprintf(url, sizeof url, "webhdfs://alice@127.0.0.1:%d/x?color=red", nn_port);
    rc = orr_blob_open(url, &b, &err);
    CHECK(rc == ORR_EINVAL && strstr(err.msg, "timeout_s"), "query: %s", err.msg);
    /* A closed port: unavailable, naming the setting and the path. */
    rc = orr_blob_open("webhdfs://alice@127.0.0.1:1/x", &b, &err);
    CHECK(rc == ORR_EUNAVAIL && strcmp(err.field, "blob_root") == 0 && strstr(err.msg, "/x"),
          "closed port: %d %s", rc, err.msg);
}

static orr_status append_sink(void *ud, const void *data, size_t n, orr_err *err)
{
    (void)err;
    orr_buf_append(ud, data, n);
    return ORR_OK;
}

/* get_range (OPEN with offset= and length=), put_fd, url and locate. */
static void test_ranges_fds_urls(orr_blob *b)
{
    orr_err err = {0};
    orr_buf got = ORR_BUF_INIT, u = ORR_BUF_INIT, rel = ORR_BUF_INIT;
    orr_status rc = b->ops->put_bytes(b, "r/text", "0123456789", 10, &err);
    CHECK(rc == ORR_OK, "put r/text: %s", err.msg);
    rc = b->ops->get_range(b, "r/text", 3, 4, append_sink, &got, &err);
    CHECK(rc == ORR_OK && got.len == 4 && memcmp(got.data, "3456", 4) == 0, "range: %d %.*s", rc,
          (int)got.len, got.data ? got.data : "");
    orr_buf_reset(&got);
    rc = b->ops->get_range(b, "r/text", 8, ORR_BLOB_TO_END, append_sink, &got, &err);
    CHECK(rc == ORR_OK && got.len == 2 && memcmp(got.data, "89", 2) == 0, "to the end: %d", rc);
    orr_buf_reset(&got);
    rc = b->ops->get_range(b, "r/text", 10, 5, append_sink, &got, &err);
    CHECK(rc == ORR_OK && got.len == 0, "at the end: %d %s", rc, err.msg);
    rc = b->ops->get_range(b, "r/none", 0, 5, append_sink, &got, &err);
    CHECK(rc == ORR_ENOTFOUND && strstr(err.field, "/store/r/none") &&
              strstr(err.msg, "FileNotFoundException"),
          "range of an absent object: %d %s", rc, err.msg);
    CHECK(got.len == 0, "an error answer never reaches the sink: %zu", got.len);

    /* put_fd from an unlinked file, offset untouched */
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/spool.XXXXXX", wdir);
    int fd = mkstemp(tmpl);
    CHECK(fd >= 0, "mkstemp");
    unlink(tmpl);
    CHECK(write(fd, "spooled\n", 8) == 8, "write");
    rc = b->ops->put_fd(b, "packages/p one%.tar.gz", fd, &err);
    CHECK(rc == ORR_OK && lseek(fd, 0, SEEK_CUR) == 8, "put_fd: %s", err.msg);
    close(fd);
    CHECK(stored("packages/p one%.tar.gz"), "put_fd landed");
    expect_get(b, "packages/p one%.tar.gz", "spooled\n");

    /* url: the store's own URL, percent-encoded; locate maps it back */
    rc = b->ops->url(b, "packages/p one%.tar.gz", &u, &err);
    char want[256];
    snprintf(want, sizeof want, "webhdfs://orrtest@127.0.0.1:%d/store/packages/p%%20one%%25.tar.gz",
             nn_port);
    CHECK(rc == ORR_OK && strcmp(orr_buf_cstr(&u), want) == 0, "url: %s", orr_buf_cstr(&u));
    rc = b->ops->locate(b, orr_buf_cstr(&u), &rel, &err);
    CHECK(rc == ORR_OK && strcmp(orr_buf_cstr(&rel), "packages/p one%.tar.gz") == 0,
          "locate: %d %s", rc, orr_buf_cstr(&rel));
    rc = b->ops->locate(b, "packages/x.tar.gz", &rel, &err);
    CHECK(rc == ORR_OK && strcmp(orr_buf_cstr(&rel), "packages/x.tar.gz") == 0, "relative: %d", rc);
    snprintf(want, sizeof want, "webhdfs://orrtest@127.0.0.1:%d/other/x", nn_port);
    rc = b->ops->locate(b, want, &rel, &err);
    CHECK(rc == ORR_EINVAL && strstr(err.msg, "outside"), "outside the root: %d %s", rc, err.msg);
    snprintf(want, sizeof want, "webhdfs://orrtest@127.0.0.1:%d/store/../etc/x", nn_port);
    rc = b->ops->locate(b, want, &rel, &err);
    CHECK(rc == ORR_EINVAL, "dot-dot: %d %s", rc, err.msg);
    rc = b->ops->locate(b, "webhdfs://orrtest@127.0.0.1:1/store/x", &rel, &err);
    CHECK(rc == ORR_EINVAL && strstr(err.msg, "not in this blob store"), "other port: %d %s", rc,
          err.msg);
    rc = b->ops->locate(b, "file:///store/x", &rel, &err);
    CHECK(rc == ORR_EINVAL && strcmp(err.field, "url") == 0, "other scheme: %d", rc);
    orr_buf_free(&got);
    orr_buf_free(&u);
    orr_buf_free(&rel);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s NAMENODE_PORT STANDIN_DIR WORK_DIR\n", argv[0]);
        return 2;
    }
    nn_port = atoi(argv[1]);
    sdir = argv[2];
    wdir = argv[3];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_urls();

    char url[256], local[512], local2[512], names[1024];
    orr_err err = {0};
    orr_blob *b = NULL;
    snprintf(url, sizeof url, "webhdfs://orrtest@127.0.0.1:%d/store/?timeout_s=10", nn_port);
    orr_status rc = orr_blob_open(url, &b, &err);
    CHECK(rc == ORR_OK, "open: %s", err.msg);
    if (rc != ORR_OK)
        return 1;
    CHECK(orr_blob_local_root(b) == NULL, "not a local store");

    test_ranges_fds_urls(b);

    /* put_bytes, get_bytes (binary with a NUL), landing under the final name. */
    static const char bin[] = "ab\0cd\n";
    rc = b->ops->put_bytes(b, "biz/if/2024/x.bin", bin, sizeof bin - 1, &err);
    CHECK(rc == ORR_OK, "put_bytes: %s", err.msg);
    orr_buf got = ORR_BUF_INIT;
    rc = b->ops->get_bytes(b, "biz/if/2024/x.bin", &got, &err);
    CHECK(rc == ORR_OK && got.len == 6 && memcmp(got.data, bin, 6) == 0, "get bin: %zu", got.len);
    list_str(b, "biz/if/2024", names, sizeof names);
    CHECK(strcmp(names, "x.bin,") == 0, "list after put: %s", names);
    /* Replacing an object (HDFS RENAME does not overwrite by itself). */
    rc = b->ops->put_bytes(b, "biz/if/2024/x.bin", "v2", 2, &err);
    CHECK(rc == ORR_OK, "replace: %s", err.msg);
    expect_get(b, "biz/if/2024/x.bin", "v2");
    /* A larger object, in several datanode reads. */
    size_t big_n = 3 * 1024 * 1024 + 17;
    char *big = malloc(big_n + 1);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (char)('a' + (i * 7) % 26);
    big[big_n] = 0;
    rc = b->ops->put_bytes(b, "biz/big", big, big_n, &err);
    CHECK(rc == ORR_OK, "put big: %s", err.msg);
    expect_get(b, "biz/big", big);
    free(big);

    /* put_file: copy keeps the local file, move removes it. */
    write_local("f1", "file one\n", local, sizeof local);
    rc = b->ops->put_file(b, "biz/if/f1", local, 0, &err);
    CHECK(rc == ORR_OK && access(local, F_OK) == 0, "put_file copy: %s", err.msg);
    rc = b->ops->put_file(b, "biz/if/f1m", local, 1, &err);
    CHECK(rc == ORR_OK && access(local, F_OK) != 0, "put_file move: %s", err.msg);
    expect_get(b, "biz/if/f1", "file one\n");
    expect_get(b, "biz/if/f1m", "file one\n");

    /* Absent objects and folders; bad paths. */
    rc = b->ops->get_bytes(b, "biz/none", &got, &err);
    CHECK(rc == ORR_ENOTFOUND && strstr(err.field, "/store/biz/none") && strstr(err.msg, "404") &&
              strstr(err.msg, "FileNotFoundException"),
          "get absent: %d %s %s", rc, err.field, err.msg);
    rc = b->ops->list(b, "nofolder", &got, NULL, &err);
    CHECK(rc == ORR_ENOTFOUND, "list absent: %d", rc);
    rc = b->ops->put_bytes(b, "a/../b", "x", 1, &err);
    CHECK(rc == ORR_EINVAL && strcmp(err.field, "path") == 0, "bad rel: %d", rc);

    /* size: GETFILESTATUS's length; absent, a folder, a bad path. */
    uint64_t size = 0;
    rc = b->ops->size(b, "biz/big", &size, &err);
    CHECK(rc == ORR_OK && size == big_n, "size big: %d %llu %s", rc, (unsigned long long)size,
          err.msg);
    rc = b->ops->size(b, "biz/if/f1", &size, &err);
    CHECK(rc == ORR_OK && size == strlen("file one\n"), "size f1: %d %llu", rc,
          (unsigned long long)size);
    rc = b->ops->size(b, "biz/none", &size, &err);
    CHECK(rc == ORR_ENOTFOUND && strstr(err.msg, "GETFILESTATUS"), "size absent: %d %s", rc,
          err.msg);
    rc = b->ops->size(b, "biz/if", &size, &err);
    CHECK(rc == ORR_EINVAL && strstr(err.msg, "DIRECTORY"), "size of a folder: %d %s", rc, err.msg);
    rc = b->ops->size(b, "a/../b", &size, &err);
    CHECK(rc == ORR_EINVAL && strcmp(err.field, "path") == 0, "size bad rel: %d", rc);

    /* remove */
    rc = b->ops->remove(b, "biz/if/f1m", &err);
    CHECK(rc == ORR_OK && !stored("biz/if/f1m"), "remove: %s", err.msg);
    rc = b->ops->remove(b, "biz/if/f1m", &err);
    CHECK(rc == ORR_OK, "remove absent: %s", err.msg);

    /* put_many, all landing: local files are gone, bytes in place. */
    write_local("m1", "m1\n", local, sizeof local);
    orr_blob_item ok_items[] = {
        {.rel = "biz/m/a", .local = local},
        {.rel = "biz/m/b", .data = "bee", .len = 3},
        {.rel = "biz/n/c", .data = "", .len = 0},
    };
    size_t landed = 99;
    rc = b->ops->put_many(b, ok_items, 3, 1, &landed, &err);
    CHECK(rc == ORR_OK && landed == 3, "put_many: %zu %s", landed, err.msg);
    CHECK(access(local, F_OK) != 0, "put_many removes a landed local file");
    expect_get(b, "biz/m/a", "m1\n");
    expect_get(b, "biz/m/b", "bee");
    expect_get(b, "biz/n/c", "");
    list_str(b, "biz/m", names, sizeof names);
    CHECK(strcmp(names, "a,b,") == 0, "no temporaries after put_many: %s", names);

    /* put_many with the third RENAME refused: a prefix of two landed, the
     * rest neither under final nor temporary names, their locals kept. */
    write_local("p3", "p3\n", local, sizeof local);
    write_local("p4", "p4\n", local2, sizeof local2);
    orr_blob_item fail_items[] = {
        {.rel = "biz/p/1", .data = "1", .len = 1},
        {.rel = "biz/p/2", .data = "2", .len = 1},
        {.rel = "biz/p/3", .local = local},
        {.rel = "biz/q/4", .local = local2},
    };
    ctl("refuse_rename=3");
    landed = 99;
    rc = b->ops->put_many(b, fail_items, 4, 1, &landed, &err);
    CHECK(rc == ORR_EIO && landed == 2, "refused rename: rc %d landed %zu", rc, landed);
    CHECK(strstr(err.field, "/store/biz/p/3") && strstr(err.msg, "RENAME"), "names it: %s %s",
          err.field, err.msg);
    CHECK(stored("biz/p/1") && stored("biz/p/2") && !stored("biz/p/3") && !stored("biz/q/4"),
          "landed prefix only");
    CHECK(access(local, F_OK) == 0 && access(local2, F_OK) == 0, "unlanded locals kept");
    list_str(b, "biz/p", names, sizeof names);
    CHECK(strcmp(names, "1,2,") == 0, "temporaries removed after failure: %s", names);
    list_str(b, "biz/q", names, sizeof names);
    CHECK(strcmp(names, "") == 0, "temporaries removed after failure: %s", names);

    /* A datanode PUT dropped midway: the put fails, nothing lands. */
    ctl("drop_put=2");
    landed = 99;
    rc = b->ops->put_many(b, fail_items + 2, 2, 1, &landed, &err);
    CHECK(rc != ORR_OK && landed == 0, "dropped put: rc %d landed %zu", rc, landed);
    CHECK(strstr(err.field, "/store/biz/q/.tmp-4") && strstr(err.msg, "CREATE"),
          "dropped put names the path: %s %s", err.field, err.msg);
    CHECK(!stored("biz/p/3") && !stored("biz/q/4") && !stored("biz/p/.tmp-3") &&
              !stored("biz/q/.tmp-4"),
          "nothing of the failed batch stays");
    CHECK(access(local, F_OK) == 0 && access(local2, F_OK) == 0, "locals kept after drop");
    /* and the same batch lands afterwards */
    rc = b->ops->put_many(b, fail_items + 2, 2, 1, &landed, &err);
    CHECK(rc == ORR_OK && landed == 2, "retry: %s", err.msg);
    expect_get(b, "biz/q/4", "p4\n");

    /* 403 RemoteException: its message and the status in the error. */
    ctl("deny=CREATE");
    rc = b->ops->put_bytes(b, "biz/denied", "x", 1, &err);
    CHECK(rc == ORR_EPERM && strstr(err.msg, "403") &&
              strstr(err.msg, "AccessControlException: Permission denied") &&
              strstr(err.field, "/store/biz/.tmp-denied"),
          "403: %d %s %s", rc, err.field, err.msg);
    CHECK(!stored("biz/denied"), "nothing landed on 403");

    /* A leftover temporary of a crash is replaced by the next put, and the
     * sweep removes the ones left in a folder. */
    rc = b->ops->put_bytes(b, "biz/s/.tmp-a", "crash", 5, &err);
    CHECK(rc == ORR_OK, "leftover a: %s", err.msg);
    rc = b->ops->put_bytes(b, "biz/s/.tmp-b", "crash", 5, &err);
    CHECK(rc == ORR_OK, "leftover b: %s", err.msg);
    rc = b->ops->put_bytes(b, "biz/s/b", "real", 4, &err);
    CHECK(rc == ORR_OK, "put over a leftover temporary: %s", err.msg);
    expect_get(b, "biz/s/b", "real");
    rc = b->ops->put_bytes(b, "biz/s/keep", "k", 1, &err);
    list_str(b, "biz/s", names, sizeof names);
    CHECK(strcmp(names, ".tmp-a,b,keep,") == 0, "before sweep: %s", names);
    size_t swept = orr_blob_sweep_tmp(b, "biz/s");
    CHECK(swept == 1, "swept %zu", swept);
    list_str(b, "biz/s", names, sizeof names);
    CHECK(strcmp(names, "b,keep,") == 0, "after sweep: %s", names);

    orr_buf_free(&got);
    orr_blob_close(b);
    curl_global_cleanup();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("webhdfs blob contract: all checks passed\n");
    return 0;
}
