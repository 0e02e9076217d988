/*
 * test_ex_untar.c - the code-package unpacker against archives built here,
 * byte by byte: good ustar, pax and GNU long names; and each way an archive
 * could reach outside its folder or lie about its size.
 *
 * tb_* is a tiny tar writer for the tests: it makes headers exactly as the
 * format says (octal fields, checksum over the header with the checksum
 * field as spaces), so a test can also make headers no honest tar would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "ex_untar.h"
#include "orr_buf.h"

#define TB_BLOCK 512

static char g_root[256];
static int g_seq;

/* Append one member: header for (name, type, size, linkname) + content. */
static void tb_member(orr_buf *b, const char *name, char type, const void *data, size_t size,
                      const char *link)
{
    unsigned char h[TB_BLOCK];
    memset(h, 0, sizeof h);
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011o", (unsigned)size);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = (unsigned char)type;
    if (link)
        snprintf((char *)h + 157, 100, "%s", link);
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < TB_BLOCK; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    orr_buf_append(b, h, TB_BLOCK);
    if (size) {
        orr_buf_append(b, data, size);
        size_t pad = (TB_BLOCK - size % TB_BLOCK) % TB_BLOCK;
        static const unsigned char zero[TB_BLOCK];
        orr_buf_append(b, zero, pad);
    }
}

static void tb_file(orr_buf *b, const char *name, const char *text)
{
    tb_member(b, name, '0', text, strlen(text), NULL);
}

static void tb_end(orr_buf *b)
{
    static const unsigned char zero[2 * TB_BLOCK];
    orr_buf_append(b, zero, sizeof zero);
}

/* Write b gzip-compressed to a fresh file; returns its path (static). */
static const char *tb_write(const orr_buf *b)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/a%d.tar.gz", g_root, ++g_seq);
    gzFile gz = gzopen(path, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, b->data, (unsigned)b->len), (int)b->len);
    assert_int_equal(gzclose(gz), Z_OK);
    return path;
}

/* A fresh empty folder to unpack into. */
static const char *fresh_dir(void)
{
    static char dir[300];
    snprintf(dir, sizeof dir, "%s/d%d", g_root, ++g_seq);
    assert_int_equal(mkdir(dir, 0755), 0);
    return dir;
}

static char *slurp(const char *dir, const char *rel)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static orr_status unpack(const orr_buf *b, const char **dir_out, orr_err *err)
{
    const char *arch = tb_write(b);
    const char *dir = fresh_dir();
    if (dir_out)
        *dir_out = dir;
    orr_err_clear(err);
    return ex_untar(arch, dir, 1 << 20, 100, err);
}

static void expect_refused(orr_buf *b, const char *why)
{
    orr_err err;
    orr_status s = unpack(b, NULL, &err);
    assert_int_equal(s, ORR_EINVAL);
    if (!strstr(err.msg, why))
        fail_msg("message \"%s\" does not say \"%s\"", err.msg, why);
    orr_buf_free(b);
}

static void test_good_archive(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    tb_member(&b, "bin/", '5', NULL, 0, NULL);
    tb_file(&b, "bin/run.sh", "#!/bin/sh\necho hi\n");
    tb_file(&b, "README", "package\n");
    tb_member(&b, "bin/start", '2', NULL, 0, "run.sh");
    tb_end(&b);
    const char *dir;
    orr_err err;
    assert_int_equal(unpack(&b, &dir, &err), ORR_OK);
    assert_string_equal(slurp(dir, "bin/run.sh"), "#!/bin/sh\necho hi\n");
    assert_string_equal(slurp(dir, "README"), "package\n");
    assert_string_equal(slurp(dir, "bin/start"), "#!/bin/sh\necho hi\n"); /* through the link */
    orr_buf_free(&b);
}

static void test_long_names(void **state)
{
    (void)state;
    char longname[300];
    memset(longname, 'n', 250);
    longname[250] = 0;
    /* GNU 'L': the next member's name */
    orr_buf b = ORR_BUF_INIT;
    tb_member(&b, "././@LongLink", 'L', longname, strlen(longname) + 1, NULL);
    tb_file(&b, "short", "gnu\n");
    /* pax 'x': path=... record, "LEN path=VALUE\n" with LEN counting itself */
    char rec[400];
    const char *pname = "pax-named-file.txt";
    size_t body = strlen(" path=") + strlen(pname) + 1;
    size_t len = body + 2; /* two digits */
    snprintf(rec, sizeof rec, "%zu path=%s\n", len, pname);
    tb_member(&b, "PaxHeaders/x", 'x', rec, strlen(rec), NULL);
    tb_file(&b, "ignored-name", "pax\n");
    tb_end(&b);
    const char *dir;
    orr_err err;
    if (unpack(&b, &dir, &err) != ORR_OK)
        fail_msg("refused: %s", err.msg);
    assert_string_equal(slurp(dir, longname), "gnu\n");
    assert_string_equal(slurp(dir, pname), "pax\n");
    assert_null(slurp(dir, "ignored-name"));
    orr_buf_free(&b);
}

static void test_escapes_refused(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    tb_file(&b, "../evil", "x");
    tb_end(&b);
    expect_refused(&b, "\"../evil\"");

    tb_file(&b, "/etc/evil", "x");
    tb_end(&b);
    expect_refused(&b, "/etc/evil");

    tb_file(&b, "a/../../evil", "x");
    tb_end(&b);
    expect_refused(&b, "evil");

    tb_member(&b, "out", '2', NULL, 0, "../../../etc/passwd");
    tb_end(&b);
    expect_refused(&b, "out");

    tb_member(&b, "abs", '2', NULL, 0, "/etc/passwd");
    tb_end(&b);
    expect_refused(&b, "abs");

    tb_file(&b, "x", "1");
    tb_member(&b, "hard", '1', NULL, 0, "x");
    tb_end(&b);
    expect_refused(&b, "hard");

    tb_member(&b, "dev", '3', NULL, 0, NULL);
    tb_end(&b);
    expect_refused(&b, "dev");

    tb_member(&b, "fifo", '6', NULL, 0, NULL);
    tb_end(&b);
    expect_refused(&b, "fifo");
    /* nothing landed next to the folders */
    char p[400];
    snprintf(p, sizeof p, "%s/evil", g_root);
    assert_int_not_equal(access(p, F_OK), 0);
}

static void test_damaged_refused(void **state)
{
    (void)state;
    /* a flipped byte in a header breaks its checksum */
    orr_buf b = ORR_BUF_INIT;
    tb_file(&b, "f", "data");
    tb_end(&b);
    b.data[10] ^= 1;
    orr_err err;
    assert_int_equal(unpack(&b, NULL, &err), ORR_EINVAL);
    orr_buf_free(&b);

    /* content cut short */
    tb_file(&b, "f", "0123456789");
    b.len = TB_BLOCK + 4;
    assert_int_equal(unpack(&b, NULL, &err), ORR_EINVAL);
    orr_buf_free(&b);

    /* over the byte budget */
    char *big = malloc(2 << 20);
    memset(big, 'z', 2 << 20);
    tb_member(&b, "big", '0', big, 2 << 20, NULL);
    tb_end(&b);
    free(big);
    assert_int_not_equal(unpack(&b, NULL, &err), ORR_OK);
    orr_buf_free(&b);

    /* over the member budget (100) */
    for (int i = 0; i < 101; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%d", i);
        tb_file(&b, name, "x");
    }
    tb_end(&b);
    assert_int_not_equal(unpack(&b, NULL, &err), ORR_OK);
    orr_buf_free(&b);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_root, sizeof g_root, "/tmp/orr-untar-XXXXXX");
    return mkdtemp(g_root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_archive),
        cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_escapes_refused),
        cmocka_unit_test(test_damaged_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
