/*
 * test_lib_lzop.c - the lzop file codec: round trips, the real lzop tool as an
 * independent reader and writer, the hadoop-lzo index, corrupt and cut-short
 * input, crash recovery and write errors.
 *
 * Needs /usr/bin/lzop (Debian package lzop): the tests fail when it is
 * missing rather than skip. Files go to a private folder under $TMPDIR (or
 * /tmp), removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <lzo/lzoconf.h>

#include "orr_buf.h"
#include "orr_lzop.h"

#define LZOP_BIN "/usr/bin/lzop"
#define KIB      1024u
#define MIB      (1024u * 1024u)

static char g_dir[512];

/* ---- helpers ---------------------------------------------------------- */

static const char *tpath(const char *name)
{
    static char buf[4][1024];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", g_dir, name);
    return buf[i];
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc))
        return -1;
    return WEXITSTATUS(rc);
}

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

enum { DATA_RANDOM, DATA_TEXT, DATA_MIXED };

/* n bytes: random, delimited text records, or 384 KiB runs of each in turn. */
static uint8_t *gen(size_t n, int kind, uint64_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    rng_state = seed * 2654435761u + 88172645463325252ull;
    size_t i = 0;
    unsigned long rec = 0;
    while (i < n) {
        int random_run = kind == DATA_RANDOM || (kind == DATA_MIXED && (i / (384 * KIB)) % 2 == 1);
        if (random_run) {
            p[i++] = (uint8_t)(rng() >> 24);
            continue;
        }
        char line[160];
        int k =
            snprintf(line, sizeof(line), "%lu|user%llu|page/%llu|2026-11-30T10:%02llu|ok|%llu\n",
                     rec++, (unsigned long long)(rng() % 5000), (unsigned long long)(rng() % 300),
                     (unsigned long long)(rng() % 60), (unsigned long long)(rng() % 100000));
        for (int j = 0; j < k && i < n; j++)
            p[i++] = (uint8_t)line[j];
    }
    return p;
}

static void write_raw(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n)
        assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static uint8_t *read_raw(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    orr_buf b = ORR_BUF_INIT;
    char tmp[65536];
    size_t k;
    while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0)
        orr_buf_append(&b, tmp, k);
    fclose(f);
    return (uint8_t *)orr_buf_detach(&b, n);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Write data with our writer in awkward chunk sizes. */
static void lzo_write(const char *path, const uint8_t *data, size_t n, const orr_lzop_opts *o,
                      orr_lzop_stats *st)
{
    static const size_t chunks[] = {1, 7, 4093, 100000, 300000, 262144, 65536};
    orr_lzop_writer *w = NULL;
    orr_err err;
    assert_int_equal(orr_lzop_writer_open(path, o, &w, &err), ORR_OK);
    size_t off = 0, i = 0;
    while (off < n) {
        size_t k = chunks[i++ % (sizeof(chunks) / sizeof(chunks[0]))];
        if (k > n - off)
            k = n - off;
        assert_int_equal(orr_lzop_write(w, data + off, k, &err), ORR_OK);
        off += k;
    }
    assert_int_equal(orr_lzop_writer_close(w, st, &err), ORR_OK);
}

/* Decode a whole reader with orr_lzop_read into a new buffer. */
static orr_status drain(orr_lzop_reader *r, orr_buf *out, orr_err *err)
{
    char tmp[65537];
    for (int guard = 0; guard < 10000000; guard++) {
        size_t k;
        orr_status s = orr_lzop_read(r, tmp, sizeof(tmp), &k, err);
        if (s == ORR_EOF)
            return ORR_OK;
        if (s != ORR_OK)
            return s;
        assert_true(k > 0);
        orr_buf_append(out, tmp, k);
    }
    fail_msg("reader never ended");
    return ORR_EINTERNAL;
}

static void expect_read_path(const char *path, const uint8_t *data, size_t n)
{
    orr_lzop_reader *r = NULL;
    orr_err err;
    orr_buf out = ORR_BUF_INIT;
    assert_int_equal(orr_lzop_reader_open(path, &r, &err), ORR_OK);
    orr_status s = drain(r, &out, &err);
    if (s != ORR_OK)
        fail_msg("reading %s: %s: %s", path, err.field, err.msg);
    assert_int_equal(out.len, n);
    if (n)
        assert_memory_equal(out.data, data, n);
    size_t k = 1;
    char c;
    assert_int_equal(orr_lzop_read(r, &c, 1, &k, &err), ORR_EOF); /* stays at the end */
    assert_int_equal(k, 0);
    orr_lzop_reader_close(r);
    orr_buf_free(&out);
}

/* The same through the memory reader and whole blocks. */
static void expect_read_blocks(const uint8_t *file, size_t flen, const uint8_t *data, size_t n,
                               uint64_t blocks)
{
    orr_lzop_reader *r = NULL;
    orr_err err;
    assert_int_equal(orr_lzop_reader_open_mem(file, flen, "mem", &r, &err), ORR_OK);
    size_t off = 0;
    uint64_t nb = 0;
    const void *p;
    size_t len;
    orr_status s;
    while ((s = orr_lzop_read_block(r, &p, &len, &err)) == ORR_OK) {
        assert_true(len > 0 && len <= ORR_LZOP_BLOCK_SIZE);
        assert_true(off + len <= n);
        assert_memory_equal(p, data + off, len);
        off += len;
        nb++;
    }
    assert_int_equal(s, ORR_EOF);
    assert_int_equal(off, n);
    assert_int_equal(nb, blocks);
    orr_lzop_reader_close(r);
}

/* lzop itself must accept the file and decode it to the original bytes. */
static void expect_lzop_tool_ok(const char *lzo, const char *orig)
{
    assert_int_equal(run("%s -t -q '%s'", LZOP_BIN, lzo), 0);
    assert_int_equal(run("%s -dc '%s' | cmp -s - '%s'", LZOP_BIN, lzo, orig), 0);
}

/* The index holds one offset per block, each at a block header whose
 * lengths chain to the next offset and, after the last, to the terminator. */
static void expect_index(const char *lzo, const uint8_t *data, size_t n, const orr_lzop_stats *st,
                         int adler_c)
{
    size_t ilen;
    uint8_t *idx = read_raw(tpath("x.lzo.index"), &ilen);
    (void)lzo;
    assert_int_equal(ilen, st->blocks * 8);
    size_t flen;
    uint8_t *f = read_raw(lzo, &flen);
    assert_int_equal(flen, st->bytes_out);

    orr_lzop_reader *r = NULL;
    orr_err err;
    assert_int_equal(orr_lzop_reader_open_mem(f, flen, lzo, &r, &err), ORR_OK);
    uint64_t expect_off = orr_lzop_reader_header(r)->size;
    orr_lzop_reader_close(r);

    size_t left = n;
    for (uint64_t i = 0; i < st->blocks; i++) {
        uint64_t off = (uint64_t)be32(idx + 8 * i) << 32 | be32(idx + 8 * i + 4);
        assert_int_equal(off, expect_off);
        assert_true(off + 12 <= flen);
        uint32_t dlen = be32(f + off), clen = be32(f + off + 4);
        size_t want = left < ORR_LZOP_BLOCK_SIZE ? left : ORR_LZOP_BLOCK_SIZE;
        assert_int_equal(dlen, want);
        assert_true(clen > 0 && clen <= dlen);
        /* the stored Adler-32 is the Adler-32 of this block of the input */
        assert_int_equal(be32(f + off + 8),
                         (uint32_t)lzo_adler32(1, data + (n - left), (lzo_uint)dlen));
        expect_off = off + 12 + (adler_c && clen < dlen ? 4 : 0) + clen;
        left -= dlen;
    }
    assert_int_equal(left, 0);
    assert_int_equal(expect_off + 4, flen);
    assert_int_equal(be32(f + expect_off), 0);
    free(f);
    free(idx);
}

/* ---- fixtures --------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    const char *t = getenv("TMPDIR");
    snprintf(g_dir, sizeof(g_dir), "%s/orr_lzop_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_dir))
        return -1;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (g_dir[0] && strstr(g_dir, "orr_lzop_"))
        run("rm -rf '%s'", g_dir);
    return 0;
}

/* ---- tests ------------------------------------------------------------ */

static void test_lzop_tool_present(void **state)
{
    (void)state;
    if (access(LZOP_BIN, X_OK) != 0)
        fail_msg("%s is missing: install the Debian package lzop", LZOP_BIN);
    assert_int_equal(run("%s --version > /dev/null 2>&1", LZOP_BIN), 0);
}

static void roundtrip(size_t n, int kind, unsigned flags)
{
    uint8_t *data = gen(n, kind, n + 1);
    const char *orig = tpath("x.orig"), *lzo = tpath("x.lzo");
    write_raw(orig, data, n);
    orr_lzop_opts o = {.name = "x.orig", .mtime = 1764496800, .flags = flags};
    orr_lzop_stats st;
    lzo_write(lzo, data, n, &o, &st);

    uint64_t want_blocks = (n + ORR_LZOP_BLOCK_SIZE - 1) / ORR_LZOP_BLOCK_SIZE;
    assert_int_equal(st.bytes_in, n);
    assert_int_equal(st.blocks, want_blocks);
    assert_int_equal(st.bytes_out, file_size(lzo));
    assert_true(st.stored_blocks <= st.blocks);

    expect_read_path(lzo, data, n);
    size_t flen;
    uint8_t *f = read_raw(lzo, &flen);
    expect_read_blocks(f, flen, data, n, want_blocks);
    free(f);
    expect_lzop_tool_ok(lzo, orig);
    if (flags & ORR_LZOP_WITH_INDEX)
        expect_index(lzo, data, n, &st, (flags & ORR_LZOP_ADLER_C) != 0);
    free(data);
}

static void test_roundtrip_empty(void **state)
{
    (void)state;
    roundtrip(0, DATA_TEXT, ORR_LZOP_WITH_INDEX);
    /* an empty file is a header and a terminator; its index is empty */
    assert_int_equal(file_size(tpath("x.lzo.index")), 0);
}

static void test_roundtrip_one_byte(void **state)
{
    (void)state;
    roundtrip(1, DATA_TEXT, ORR_LZOP_WITH_INDEX);
}

static void test_roundtrip_one_block(void **state)
{
    (void)state;
    roundtrip(ORR_LZOP_BLOCK_SIZE, DATA_TEXT, ORR_LZOP_WITH_INDEX);
}

static void test_roundtrip_block_plus_one(void **state)
{
    (void)state;
    roundtrip(ORR_LZOP_BLOCK_SIZE + 1, DATA_MIXED, ORR_LZOP_WITH_INDEX);
}

static void test_roundtrip_10mib(void **state)
{
    (void)state;
    size_t n = 10 * MIB;
    uint8_t *data = gen(n, DATA_MIXED, 7);
    const char *orig = tpath("x.orig"), *lzo = tpath("x.lzo");
    write_raw(orig, data, n);
    orr_lzop_opts o = {.name = "big", .flags = ORR_LZOP_WITH_INDEX};
    orr_lzop_stats st;
    lzo_write(lzo, data, n, &o, &st);
    assert_int_equal(st.blocks, 40);
    /* random stretches are stored, text stretches are compressed */
    assert_true(st.stored_blocks > 0);
    assert_true(st.stored_blocks < st.blocks);
    assert_true(st.bytes_out < n);
    free(data);
    roundtrip(n, DATA_MIXED, ORR_LZOP_WITH_INDEX);
    roundtrip(n, DATA_RANDOM, ORR_LZOP_WITH_INDEX);
    roundtrip(n, DATA_TEXT, ORR_LZOP_WITH_INDEX | ORR_LZOP_ADLER_C | ORR_LZOP_FSYNC);
}

static void test_header_fields(void **state)
{
    (void)state;
    const char *lzo = tpath("h.lzo");
    orr_lzop_opts o = {.name = "unit-a.txt", .mtime = 1764496800, .mode = 0100600};
    orr_lzop_stats st;
    lzo_write(lzo, (const uint8_t *)"abc", 3, &o, &st);
    orr_lzop_reader *r = NULL;
    orr_err err;
    assert_int_equal(orr_lzop_reader_open(lzo, &r, &err), ORR_OK);
    const orr_lzop_header *h = orr_lzop_reader_header(r);
    assert_int_equal(h->version, ORR_LZOP_VERSION);
    assert_int_equal(h->lib_version, ORR_LZOP_LIB_VERSION);
    assert_int_equal(h->version_needed, ORR_LZOP_VERSION_NEEDED);
    assert_int_equal(h->method, ORR_LZOP_M_LZO1X_1_15);
    assert_int_equal(h->level, 1);
    assert_string_equal(h->name, "unit-a.txt");
    assert_int_equal(h->mtime, 1764496800);
    assert_int_equal(h->mode, 0100600);
    assert_int_equal(h->size, 9 + 25 + 10 + 4);
    orr_lzop_reader_close(r);
    /* lzop sees the same name, flags, method/level and mode */
    assert_int_equal(run("%s -N -l '%s' | grep -q unit-a.txt", LZOP_BIN, lzo), 0);
    assert_int_equal(
        run("%s --info '%s' | grep -q 'Fl: 0x03000001  Mo: 000000100600  Me: 2/1'", LZOP_BIN, lzo),
        0);
}

/* Files written by lzop itself, every method it has, and CRC-32 checksums. */
static void test_read_lzop_written(void **state)
{
    (void)state;
    size_t n = 3 * MIB + 12345;
    uint8_t *data = gen(n, DATA_MIXED, 11);
    const char *orig = tpath("t.orig"), *lzo = tpath("t.lzo");
    write_raw(orig, data, n);
    static const struct {
        const char *opts;
        int method;
    } cases[] = {{"-1", ORR_LZOP_M_LZO1X_1_15},
                 {"-9", ORR_LZOP_M_LZO1X_999},
                 {"-3", ORR_LZOP_M_LZO1X_1},
                 {"-1 --crc32", ORR_LZOP_M_LZO1X_1_15},
                 {"-5 --no-name", ORR_LZOP_M_LZO1X_1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(run("%s %s -f -q -o '%s' '%s'", LZOP_BIN, cases[i].opts, lzo, orig), 0);
        orr_lzop_reader *r = NULL;
        orr_err err;
        assert_int_equal(orr_lzop_reader_open(lzo, &r, &err), ORR_OK);
        assert_int_equal(orr_lzop_reader_header(r)->method, cases[i].method);
        orr_lzop_reader_close(r);
        expect_read_path(lzo, data, n);
    }
    /* from a pipe: no file size known, data arrives in pieces */
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s -1 -c '%s'", LZOP_BIN, orig);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    orr_lzop_reader *r = NULL;
    orr_err err;
    assert_int_equal(orr_lzop_reader_open_fd(fileno(p), "pipe", &r, &err), ORR_OK);
    orr_buf out = ORR_BUF_INIT;
    assert_int_equal(drain(r, &out, &err), ORR_OK);
    assert_int_equal(out.len, n);
    assert_memory_equal(out.data, data, n);
    orr_lzop_reader_close(r);
    assert_int_equal(pclose(p), 0);
    orr_buf_free(&out);
    free(data);
}

/* Decode a whole file held in memory; the status of the first failure. */
static orr_status decode_mem(const uint8_t *f, size_t n, orr_err *err)
{
    orr_lzop_reader *r = NULL;
    orr_status s = orr_lzop_reader_open_mem(f, n, "bad.lzo", &r, err);
    if (s != ORR_OK)
        return s;
    orr_buf out = ORR_BUF_INIT;
    s = drain(r, &out, err);
    orr_lzop_reader_close(r);
    orr_buf_free(&out);
    return s;
}

static uint8_t *make_lzo(size_t n, int kind, unsigned flags, size_t *flen)
{
    uint8_t *data = gen(n, kind, 3);
    const char *lzo = tpath("c.lzo");
    orr_lzop_opts o = {.name = "c", .flags = flags};
    orr_lzop_stats st;
    lzo_write(lzo, data, n, &o, &st);
    free(data);
    return read_raw(lzo, flen);
}

static void test_bad_magic(void **state)
{
    (void)state;
    size_t flen;
    uint8_t *f = make_lzo(1000, DATA_TEXT, 0, &flen);
    f[1] = 'X';
    orr_err err;
    assert_int_equal(decode_mem(f, flen, &err), ORR_EINVAL);
    assert_string_equal(err.field, "magic");
    assert_non_null(strstr(err.msg, "bad.lzo"));
    /* a text file on disk */
    const char *p = tpath("plain.txt");
    write_raw(p, "just some text, not lzop at all\n", 32);
    orr_lzop_reader *r = NULL;
    assert_int_equal(orr_lzop_reader_open(p, &r, &err), ORR_EINVAL);
    assert_null(r);
    assert_string_equal(err.field, "magic");
    /* shorter than a magic */
    assert_int_equal(decode_mem(f, 5, &err), ORR_EIO);
    assert_non_null(strstr(err.msg, "cut short"));
    free(f);
}

static void test_truncated(void **state)
{
    (void)state;
    size_t flen;
    uint8_t *f = make_lzo(2 * ORR_LZOP_BLOCK_SIZE + 5000, DATA_MIXED, ORR_LZOP_ADLER_C, &flen);
    orr_err err;
    assert_int_equal(decode_mem(f, flen, &err), ORR_OK);
    /* every cut in the header and around the ends, and a spread through the blocks */
    for (size_t cut = 0; cut < flen; cut += (cut < 200 || cut > flen - 200) ? 1 : 997) {
        orr_status s = decode_mem(f, cut, &err);
        if (s != ORR_EIO && s != ORR_EINVAL)
            fail_msg("cut at %zu of %zu: status %d", cut, flen, s);
    }
    /* a cut file on disk: the error names the file, the field and the offset */
    const char *p = tpath("cut.lzo");
    write_raw(p, f, flen - 100);
    orr_lzop_reader *r = NULL;
    assert_int_equal(orr_lzop_reader_open(p, &r, &err), ORR_OK);
    orr_buf out = ORR_BUF_INIT;
    assert_int_equal(drain(r, &out, &err), ORR_EIO);
    assert_string_equal(err.field, "block.data");
    assert_non_null(strstr(err.msg, "cut.lzo"));
    assert_non_null(strstr(err.msg, "offset"));
    /* errors are sticky */
    size_t k;
    char c;
    assert_int_equal(orr_lzop_read(r, &c, 1, &k, &err), ORR_EIO);
    orr_lzop_reader_close(r);
    orr_buf_free(&out);
    /* without its terminator */
    assert_int_equal(decode_mem(f, flen - 4, &err), ORR_EIO);
    assert_string_equal(err.field, "block.uncompressed_length");
    free(f);
}

/* Decode into out (reset first); the status of the first failure. */
static orr_status decode_mem_out(const uint8_t *f, size_t n, orr_buf *out, orr_err *err)
{
    orr_lzop_reader *r = NULL;
    orr_buf_reset(out);
    orr_status s = orr_lzop_reader_open_mem(f, n, "bad.lzo", &r, err);
    if (s != ORR_OK)
        return s;
    s = drain(r, out, err);
    orr_lzop_reader_close(r);
    return s;
}

static void test_flipped_bytes(void **state)
{
    (void)state;
    size_t n = 3000, flen;
    uint8_t *data = gen(n, DATA_TEXT, 3);
    orr_buf out = ORR_BUF_INIT;
    orr_err err;
    /* With checksums of both kinds every single-bit and whole-byte change of
     * a file is caught. Without the compressed-bytes checksum a change that
     * still decodes to the same bytes (in the LZO end marker) may pass, but
     * then what it yields is the original data. */
    for (int with_c = 1; with_c >= 0; with_c--) {
        uint8_t *f = make_lzo(n, DATA_TEXT, with_c ? ORR_LZOP_ADLER_C : 0, &flen);
        size_t caught = 0, tries = 0;
        for (size_t i = 0; i < flen; i++) {
            for (int m = 0; m < 2; m++) {
                uint8_t keep = f[i];
                f[i] ^= m ? 0xff : 0x01;
                orr_status s = decode_mem_out(f, flen, &out, &err);
                f[i] = keep;
                tries++;
                if (s == ORR_EIO || s == ORR_EINVAL) {
                    caught++;
                    continue;
                }
                if (with_c || s != ORR_OK || out.len != n || memcmp(out.data, data, n) != 0)
                    fail_msg("byte %zu of %zu changed (adler_c=%d): status %d", i, flen, with_c, s);
            }
        }
        assert_true(caught > tries * 99 / 100);
        free(f);
    }
    /* several blocks, stored and compressed, with checksums of both kinds */
    uint8_t *f = make_lzo(4 * ORR_LZOP_BLOCK_SIZE, DATA_MIXED, ORR_LZOP_ADLER_C, &flen);
    int checksum_errors = 0;
    for (size_t i = 0; i < flen; i += 4099) {
        f[i] ^= 0x20;
        orr_status s = decode_mem_out(f, flen, &out, &err);
        f[i] ^= 0x20;
        if (s != ORR_EIO && s != ORR_EINVAL)
            fail_msg("byte %zu of %zu changed: status %d", i, flen, s);
        checksum_errors += strcmp(err.field, "block.checksum") == 0;
    }
    assert_true(checksum_errors > 0);
    free(f);
    free(data);
    orr_buf_free(&out);
}

/* Rewrite header bytes and fix its checksum so only the field check fires. */
static void patch_header(uint8_t *f, size_t hsize, size_t at, const uint8_t *bytes, size_t n)
{
    memcpy(f + at, bytes, n);
    put_be32(f + hsize - 4, (uint32_t)lzo_adler32(1, f + 9, (lzo_uint)(hsize - 13)));
}

static void test_bad_fields(void **state)
{
    (void)state;
    size_t flen;
    uint8_t *f = make_lzo(ORR_LZOP_BLOCK_SIZE + 100, DATA_TEXT, 0, &flen);
    size_t hsize = 9 + 25 + 1 + 4; /* name "c" */
    assert_int_equal(be32(f + hsize), ORR_LZOP_BLOCK_SIZE);
    uint8_t *g = malloc(flen);
    orr_err err;
    static const struct {
        size_t at;
        uint8_t bytes[4];
        size_t n;
        const char *field;
    } cases[] = {
        {15, {9}, 1, "method"},
        {13, {0x20, 0x00}, 2, "version_needed"},
        {9, {0x08, 0x00}, 2, "version"},
        {17, {0x00, 0x00, 0x08, 0x01}, 4, "flags"}, /* a filter */
        {17, {0x00, 0x00, 0x04, 0x01}, 4, "flags"}, /* multipart */
        {17, {0x00, 0x04, 0x00, 0x01}, 4, "flags"}, /* reserved */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(g, f, flen);
        patch_header(g, hsize, cases[i].at, cases[i].bytes, cases[i].n);
        assert_int_equal(decode_mem(g, flen, &err), ORR_EINVAL);
        assert_string_equal(err.field, cases[i].field);
    }
    /* header checksum */
    memcpy(g, f, flen);
    g[hsize - 1] ^= 1;
    assert_int_equal(decode_mem(g, flen, &err), ORR_EIO);
    assert_string_equal(err.field, "header_checksum");
    /* block lengths: beyond lzop's maximum, compressed longer than raw */
    memcpy(g, f, flen);
    put_be32(g + hsize, ORR_LZOP_MAX_BLOCK + 1);
    assert_int_equal(decode_mem(g, flen, &err), ORR_EINVAL);
    assert_string_equal(err.field, "block.uncompressed_length");
    assert_non_null(strstr(err.msg, "offset"));
    memcpy(g, f, flen);
    put_be32(g + hsize + 4, ORR_LZOP_BLOCK_SIZE + 1);
    assert_int_equal(decode_mem(g, flen, &err), ORR_EINVAL);
    assert_string_equal(err.field, "block.compressed_length");
    memcpy(g, f, flen);
    put_be32(g + hsize + 4, 0);
    assert_int_equal(decode_mem(g, flen, &err), ORR_EINVAL);
    /* a large announced block in a small file fails before any allocation */
    memcpy(g, f, flen);
    put_be32(g + hsize, ORR_LZOP_MAX_BLOCK);
    put_be32(g + hsize + 4, ORR_LZOP_MAX_BLOCK - 1);
    assert_int_equal(decode_mem(g, flen, &err), ORR_EIO);
    assert_string_equal(err.field, "block.data");
    /* compressed bytes that decode to the wrong length (checksum fixed up) */
    memcpy(g, f, flen);
    put_be32(g + hsize, ORR_LZOP_BLOCK_SIZE - 1);
    assert_int_equal(decode_mem(g, flen, &err), ORR_EIO);
    assert_string_equal(err.field, "block.data");
    free(g);
    free(f);
}

static void test_recover(void **state)
{
    (void)state;
    size_t n = 5 * ORR_LZOP_BLOCK_SIZE + 777;
    uint8_t *data = gen(n, DATA_MIXED, 5);
    const char *lzo = tpath("x.lzo");
    orr_lzop_opts o = {.name = "r", .flags = ORR_LZOP_WITH_INDEX};
    orr_lzop_stats st;
    lzo_write(lzo, data, n, &o, &st);
    assert_int_equal(st.blocks, 6);
    size_t flen, ilen;
    uint8_t *f = read_raw(lzo, &flen);
    uint8_t *idx = read_raw(tpath("x.lzo.index"), &ilen);
    uint64_t offs[6];
    for (int i = 0; i < 6; i++)
        offs[i] = be32(idx + 8 * i + 4);
    uint64_t hsize = offs[0];
    const char *cut = tpath("cut.lzo");
    orr_lzop_recovery rec;
    orr_err err;
    orr_buf ob = ORR_BUF_INIT;

    /* whole file */
    assert_int_equal(orr_lzop_recover(lzo, &rec, &ob, &err), ORR_OK);
    assert_int_equal(rec.complete, 1);
    assert_int_equal(rec.trailing, 0);
    assert_int_equal(rec.blocks, 6);
    assert_int_equal(rec.bytes, n);
    assert_int_equal(rec.good_end, flen - 4);
    assert_int_equal(ob.len, 6 * sizeof(uint64_t));
    for (int i = 0; i < 6; i++)
        assert_int_equal(((uint64_t *)(void *)ob.data)[i], offs[i]);

    /* cut in the header: nothing to decode, but no error */
    write_raw(cut, f, 20);
    assert_int_equal(orr_lzop_recover(cut, &rec, NULL, &err), ORR_OK);
    assert_int_equal(rec.header_size, 0);
    assert_int_equal(rec.good_end, 0);
    assert_int_equal(rec.bytes, 0);
    assert_int_equal(rec.trailing, 20);

    /* cut right after the header, and inside each block */
    write_raw(cut, f, hsize);
    assert_int_equal(orr_lzop_recover(cut, &rec, NULL, &err), ORR_OK);
    assert_int_equal(rec.header_size, hsize);
    assert_int_equal(rec.good_end, hsize);
    assert_int_equal(rec.blocks, 0);
    for (int b = 0; b < 6; b++) {
        uint64_t end = b < 5 ? offs[b + 1] : flen - 4;
        uint64_t at = offs[b] + (end - offs[b]) / 2;
        write_raw(cut, f, at);
        assert_int_equal(orr_lzop_recover(cut, &rec, NULL, &err), ORR_OK);
        assert_int_equal(rec.complete, 0);
        assert_int_equal(rec.blocks, (uint64_t)b);
        assert_int_equal(rec.good_end, offs[b]);
        assert_int_equal(rec.bytes, (uint64_t)b * ORR_LZOP_BLOCK_SIZE);
        assert_int_equal(rec.trailing, at - offs[b]);
    }

    /* cut mid-block 3, repaired by truncating at good_end and adding a terminator */
    write_raw(cut, f, offs[3] + 1000);
    assert_int_equal(orr_lzop_recover(cut, &rec, NULL, &err), ORR_OK);
    assert_int_equal(truncate(cut, (off_t)rec.good_end), 0);
    FILE *fp = fopen(cut, "ab");
    assert_non_null(fp);
    assert_int_equal(fwrite("\0\0\0\0", 1, 4, fp), 4);
    fclose(fp);
    write_raw(tpath("prefix.orig"), data, rec.bytes);
    expect_lzop_tool_ok(cut, tpath("prefix.orig"));
    expect_read_path(cut, data, rec.bytes);

    /* a damaged tail (garbage after block 2) stops at the last good block */
    memcpy(f + offs[2] + 12, "garbage!", 8);
    write_raw(cut, f, flen);
    assert_int_equal(orr_lzop_recover(cut, &rec, NULL, &err), ORR_OK);
    assert_int_equal(rec.blocks, 2);
    assert_int_equal(rec.good_end, offs[2]);
    assert_int_equal(rec.complete, 0);
    assert_int_equal(rec.trailing, flen - offs[2]);

    /* not an lzop file */
    write_raw(cut, "0123456789abcdefghijklmnopqrstuvwxyz0123456789", 46);
    assert_int_equal(orr_lzop_recover(cut, &rec, NULL, &err), ORR_EINVAL);
    assert_string_equal(err.field, "magic");
    assert_int_equal(orr_lzop_recover(tpath("missing.lzo"), &rec, NULL, &err), ORR_EIO);
    assert_non_null(strstr(err.msg, "missing.lzo"));

    orr_buf_free(&ob);
    free(idx);
    free(f);
    free(data);
}

/* After flush the file on disk ends at a block boundary: a crash there loses nothing. */
static void test_flush_boundary(void **state)
{
    (void)state;
    size_t n = ORR_LZOP_BLOCK_SIZE + 5000;
    uint8_t *data = gen(n, DATA_TEXT, 9);
    const char *lzo = tpath("f.lzo");
    orr_lzop_writer *w = NULL;
    orr_err err;
    assert_int_equal(orr_lzop_writer_open(lzo, NULL, &w, &err), ORR_OK);
    assert_int_equal(orr_lzop_write(w, data, 1000, &err), ORR_OK);
    assert_int_equal(orr_lzop_writer_flush(w, &err), ORR_OK);
    orr_lzop_recovery rec;
    assert_int_equal(orr_lzop_recover(lzo, &rec, NULL, &err), ORR_OK);
    assert_int_equal(rec.blocks, 1);
    assert_int_equal(rec.bytes, 1000);
    assert_int_equal(rec.good_end, rec.file_size);
    assert_int_equal(rec.complete, 0);
    assert_int_equal(orr_lzop_write(w, data + 1000, n - 1000, &err), ORR_OK);
    orr_lzop_stats st;
    assert_int_equal(orr_lzop_writer_close(w, &st, &err), ORR_OK);
    assert_int_equal(st.blocks, 3); /* the flushed 1000 bytes stay a block of their own */
    write_raw(tpath("f.orig"), data, n);
    expect_lzop_tool_ok(lzo, tpath("f.orig"));
    free(data);
}

static void test_write_errors(void **state)
{
    (void)state;
    orr_lzop_writer *w = NULL;
    orr_err err;
    /* disk full: the error names the destination, and it sticks */
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(orr_lzop_writer_open_fd(fd, "/dev/full", NULL, &w, &err), ORR_OK);
    uint8_t *data = gen(4 * MIB, DATA_RANDOM, 1);
    orr_status s = orr_lzop_write(w, data, 4 * MIB, &err);
    assert_int_equal(s, ORR_EIO);
    assert_non_null(strstr(err.msg, "/dev/full"));
    assert_non_null(strstr(err.msg, strerror(ENOSPC)));
    assert_int_equal(orr_lzop_write(w, "x", 1, &err), ORR_EIO);
    assert_int_equal(orr_lzop_writer_close(w, NULL, &err), ORR_EIO);
    close(fd);
    free(data);
    /* a small file fails on close, when the bytes are finally written */
    fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    assert_int_equal(orr_lzop_writer_open_fd(fd, "/dev/full", NULL, &w, &err), ORR_OK);
    assert_int_equal(orr_lzop_write(w, "abc", 3, &err), ORR_OK);
    assert_int_equal(orr_lzop_writer_close(w, NULL, &err), ORR_EIO);
    assert_string_equal(err.field, "file");
    close(fd);

    char longname[300];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    orr_lzop_opts o = {.name = longname};
    assert_int_equal(orr_lzop_writer_open(tpath("n.lzo"), &o, &w, &err), ORR_EINVAL);
    assert_null(w);
    assert_string_equal(err.field, "name");
    assert_int_not_equal(access(tpath("n.lzo"), F_OK), 0); /* nothing created */

    assert_int_equal(orr_lzop_writer_open(tpath("no/such/dir/x.lzo"), NULL, &w, &err), ORR_EIO);
    assert_non_null(strstr(err.msg, "no/such/dir/x.lzo"));

    orr_lzop_opts oi = {.flags = ORR_LZOP_WITH_INDEX, .index_fd = -1};
    assert_int_equal(orr_lzop_writer_open_fd(1, "out", &oi, &w, &err), ORR_EINVAL);
    assert_string_equal(err.field, "index_fd");
    orr_lzop_opts of = {.flags = 0x100};
    assert_int_equal(orr_lzop_writer_open(tpath("f.lzo"), &of, &w, &err), ORR_EINVAL);
    assert_string_equal(err.field, "flags");
    orr_lzop_writer_abort(NULL);
    assert_int_equal(orr_lzop_writer_close(NULL, NULL, &err), ORR_OK);
}

/* fd mode with an index fd: offsets are relative to where the lzop data began. */
static void test_fd_with_index(void **state)
{
    (void)state;
    const char *lzo = tpath("fd.lzo"), *ix = tpath("fd.lzo.index");
    int fd = open(lzo, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ifd = open(ix, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0 && ifd >= 0);
    size_t n = 3 * ORR_LZOP_BLOCK_SIZE;
    uint8_t *data = gen(n, DATA_TEXT, 2);
    orr_lzop_opts o = {.flags = ORR_LZOP_WITH_INDEX, .index_fd = ifd};
    orr_lzop_writer *w = NULL;
    orr_err err;
    assert_int_equal(orr_lzop_writer_open_fd(fd, lzo, &o, &w, &err), ORR_OK);
    assert_int_equal(orr_lzop_write(w, data, n, &err), ORR_OK);
    orr_lzop_stats st;
    assert_int_equal(orr_lzop_writer_close(w, &st, &err), ORR_OK);
    close(fd);
    close(ifd);
    assert_int_equal(file_size(ix), 3 * 8);
    assert_int_equal(st.bytes_out, file_size(lzo));
    write_raw(tpath("fd.orig"), data, n);
    expect_lzop_tool_ok(lzo, tpath("fd.orig"));
    free(data);
}

/* A crash mid-file, then the writer continues where the whole blocks end. */
static void test_resume(void **state)
{
    (void)state;
    size_t n = 5 * ORR_LZOP_BLOCK_SIZE + 4321;
    uint8_t *data = gen(n, DATA_MIXED, 21);
    const char *lzo = tpath("x.lzo"), *orig = tpath("x.orig");
    write_raw(orig, data, n);
    orr_lzop_opts o = {.name = "resumed", .flags = ORR_LZOP_WITH_INDEX | ORR_LZOP_ADLER_C};
    orr_lzop_stats st;
    lzo_write(lzo, data, n, &o, &st);
    size_t flen;
    uint8_t *f = read_raw(lzo, &flen);
    orr_err err;
    orr_lzop_recovery rec;
    orr_lzop_writer *w = NULL;

    /* cut in the middle of block 3, resumed without the compressed-bytes
     * flag: the writer follows the file's header, not the options */
    write_raw(lzo, f, flen * 3 / 5);
    orr_lzop_opts o2 = {.flags = ORR_LZOP_WITH_INDEX};
    assert_int_equal(orr_lzop_writer_resume(lzo, &o2, &rec, &w, &err), ORR_OK);
    assert_true(rec.blocks >= 2 && rec.blocks < 5);
    assert_int_equal(rec.bytes, rec.blocks * ORR_LZOP_BLOCK_SIZE);
    assert_int_equal(orr_lzop_write(w, data + rec.bytes, n - rec.bytes, &err), ORR_OK);
    orr_lzop_stats st2;
    assert_int_equal(orr_lzop_writer_close(w, &st2, &err), ORR_OK);
    assert_int_equal(st2.bytes_in, n);
    assert_int_equal(st2.blocks, st.blocks);
    assert_int_equal(st2.bytes_out, file_size(lzo));
    expect_lzop_tool_ok(lzo, orig);
    expect_index(lzo, data, n, &st2, 1);
    /* same blocks, same bytes as the file written in one go */
    size_t glen;
    uint8_t *g = read_raw(lzo, &glen);
    assert_int_equal(glen, flen);
    assert_memory_equal(g, f, flen);
    free(g);

    /* a whole file: the terminator goes and the new bytes follow */
    assert_int_equal(orr_lzop_writer_resume(lzo, NULL, &rec, &w, &err), ORR_OK);
    assert_int_equal(rec.complete, 1);
    assert_int_equal(rec.bytes, n);
    assert_int_equal(orr_lzop_write(w, "tail\n", 5, &err), ORR_OK);
    assert_int_equal(orr_lzop_writer_close(w, &st2, &err), ORR_OK);
    FILE *fp = fopen(orig, "ab");
    assert_non_null(fp);
    fputs("tail\n", fp);
    fclose(fp);
    expect_lzop_tool_ok(lzo, orig);

    /* cut inside the header: started again */
    write_raw(lzo, f, 30);
    assert_int_equal(orr_lzop_writer_resume(lzo, &o, &rec, &w, &err), ORR_OK);
    assert_int_equal(rec.bytes, 0);
    assert_int_equal(orr_lzop_write(w, data, 1000, &err), ORR_OK);
    assert_int_equal(orr_lzop_writer_close(w, NULL, &err), ORR_OK);
    write_raw(orig, data, 1000);
    expect_lzop_tool_ok(lzo, orig);

    /* lzop's CRC-32 block checksums are not ours to continue */
    assert_int_equal(run("%s --crc32 -f -q -o '%s' '%s'", LZOP_BIN, lzo, orig), 0);
    assert_int_equal(orr_lzop_writer_resume(lzo, NULL, &rec, &w, &err), ORR_EINVAL);
    assert_null(w);
    assert_string_equal(err.field, "flags");
    free(f);
    free(data);
}

/* The vectorised and the portable Adler-32 agree with liblzo2's, at every
 * length around the 16-byte steps and the 5552-byte reduction span, from
 * any alignment and any starting value. */
static void test_adler32(void **state)
{
    (void)state;
    size_t n = 3 * MIB + 77;
    uint8_t *data = gen(n, DATA_RANDOM, 4);
    memset(data + MIB, 0xff, MIB); /* the largest sums */
    static const size_t lens[] = {0,    1,    15,   16,    17,    31,     32,     5551,
                                  5552, 5553, 5568, 11104, 11105, 262144, 262145, 2 * MIB + 3};
    static const uint32_t starts[] = {1, 0, 0xfff0fff0u, 0x12345678u};
    for (size_t a = 0; a < 4; a++)
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
            for (size_t s = 0; s < 4; s++) {
                const uint8_t *p = data + MIB - 3 * KIB + a; /* straddles the 0xff run */
                uint32_t want = (uint32_t)lzo_adler32(starts[s], p, (lzo_uint)lens[i]);
                assert_int_equal(orr_lzop_adler32(starts[s], p, lens[i]), want);
                assert_int_equal(orr_lzop__adler32_portable(starts[s], p, lens[i]), want);
            }
    for (size_t len = 0; len < 200; len++)
        assert_int_equal(orr_lzop_adler32(1, data + len, len),
                         (uint32_t)lzo_adler32(1, data + len, (lzo_uint)len));
    /* piecewise equals whole */
    uint32_t piece = orr_lzop_adler32(1, data, 1000);
    piece = orr_lzop_adler32(piece, data + 1000, n - 1000);
    assert_int_equal(piece, (uint32_t)lzo_adler32(1, data, (lzo_uint)n));
    free(data);
}

/* Many writers share one scratch, fed in turns (as sortd feeds one file per
 * unit): every file decodes to its own input, lzop accepts it, and the
 * bytes equal those of a writer with its own buffers. */
static void test_shared_scratch(void **state)
{
    (void)state;
    enum { NW = 5 };
    static const size_t sizes[NW] = {0, 1, ORR_LZOP_BLOCK_SIZE, 700 * KIB + 13, 2 * MIB + 5};
    orr_lzop_scratch *sc = orr_lzop_scratch_new();
    orr_lzop_writer *w[NW];
    uint8_t *data[NW];
    size_t off[NW] = {0};
    char path[NW][64], orig[NW][64];
    orr_err err;
    for (int i = 0; i < NW; i++) {
        data[i] = gen(sizes[i], i == 3 ? DATA_MIXED : DATA_TEXT, 100 + (uint64_t)i);
        snprintf(path[i], sizeof path[i], "s%d.lzo", i);
        snprintf(orig[i], sizeof orig[i], "s%d.orig", i);
        write_raw(tpath(orig[i]), data[i], sizes[i]);
        orr_lzop_opts o = {.name = orig[i], .mtime = 1764496800, .scratch = sc};
        assert_int_equal(orr_lzop_writer_open(tpath(path[i]), &o, &w[i], &err), ORR_OK);
    }
    /* interleave small and odd-sized writes over all writers */
    static const size_t chunks[] = {1, 333, 4093, 70000, 262144, 17};
    size_t ci = 0;
    for (int busy = 1; busy;) {
        busy = 0;
        for (int i = 0; i < NW; i++) {
            if (off[i] == sizes[i])
                continue;
            size_t k = chunks[ci++ % (sizeof chunks / sizeof chunks[0])];
            if (k > sizes[i] - off[i])
                k = sizes[i] - off[i];
            assert_int_equal(orr_lzop_write(w[i], data[i] + off[i], k, &err), ORR_OK);
            off[i] += k;
            busy = 1;
        }
    }
    for (int i = 0; i < NW; i++) {
        orr_lzop_stats st;
        assert_int_equal(orr_lzop_writer_close(w[i], &st, &err), ORR_OK);
        assert_int_equal(st.bytes_in, sizes[i]);
        assert_int_equal(st.bytes_out, file_size(tpath(path[i])));
        assert_int_equal(st.blocks, (sizes[i] + ORR_LZOP_BLOCK_SIZE - 1) / ORR_LZOP_BLOCK_SIZE);
        expect_read_path(tpath(path[i]), data[i], sizes[i]);
        expect_lzop_tool_ok(tpath(path[i]), tpath(orig[i]));
        /* same bytes as a writer with its own buffers */
        orr_lzop_opts o = {.name = orig[i], .mtime = 1764496800};
        lzo_write(tpath("own.lzo"), data[i], sizes[i], &o, NULL);
        size_t na, nb;
        uint8_t *a = read_raw(tpath(path[i]), &na), *b = read_raw(tpath("own.lzo"), &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
        free(a);
        free(b);
        free(data[i]);
    }
    orr_lzop_scratch_free(sc);
    orr_lzop_scratch_free(NULL);
}

/* A writer whose block buffer grew to 64 KiB or more leaves it on the
 * scratch and the next writer growing that far takes it: each later file
 * decodes to its own bytes only (nothing of the earlier ones); a writer
 * that stays small, or whose blocks are smaller than the kept buffer,
 * takes none. */
static void test_shared_scratch_reuse(void **state)
{
    (void)state;
    orr_lzop_scratch *sc = orr_lzop_scratch_new();
    size_t na = ORR_LZOP_BLOCK_SIZE + 100, nb = 100 * KIB;
    uint8_t *a = gen(na, DATA_TEXT, 41), *b = gen(nb, DATA_MIXED, 42), *c = gen(na, DATA_MIXED, 43);
    orr_lzop_opts o = {.scratch = sc};
    lzo_write(tpath("ra.lzo"), a, na, &o, NULL); /* grows to a full block: kept */
    assert_int_equal(orr_lzop_scratch_reused(sc), 0);
    lzo_write(tpath("rs.lzo"), b, 1000, &o, NULL); /* stays small */
    assert_int_equal(orr_lzop_scratch_reused(sc), 0);
    orr_lzop_opts small = {.scratch = sc, .block_size = 64 * 1024};
    lzo_write(tpath("r64.lzo"), b, nb, &small, NULL); /* the kept one is too big */
    assert_int_equal(orr_lzop_scratch_reused(sc), 0);
    lzo_write(tpath("rb.lzo"), b, nb, &o, NULL); /* grows past 64 KiB: takes a's */
    assert_int_equal(orr_lzop_scratch_reused(sc), 1);
    lzo_write(tpath("r64b.lzo"), c, nb, &small, NULL); /* takes r64's */
    assert_int_equal(orr_lzop_scratch_reused(sc), 2);
    lzo_write(tpath("rc.lzo"), c, na, &o, NULL);
    assert_int_equal(orr_lzop_scratch_reused(sc), 3);
    expect_read_path(tpath("ra.lzo"), a, na);
    expect_read_path(tpath("rs.lzo"), b, 1000);
    expect_read_path(tpath("r64.lzo"), b, nb);
    expect_read_path(tpath("rb.lzo"), b, nb);
    expect_read_path(tpath("r64b.lzo"), c, nb);
    expect_read_path(tpath("rc.lzo"), c, na);
    free(a);
    free(b);
    free(c);
    orr_lzop_scratch_free(sc); /* frees the kept buffers (ASan: no leak) */
}

/* orr_lzop_write_rec writes the same file as orr_lzop_write of the record
 * and then of its terminator: records of 0..299 bytes through 16 KiB blocks
 * on a shared scratch (the block buffer grows; records end exactly at,
 * just before and across block ends). */
static void test_write_rec(void **state)
{
    (void)state;
    orr_lzop_scratch *sc = orr_lzop_scratch_new();
    uint8_t *data = gen(300 * 1000, DATA_TEXT, 77);
    orr_lzop_opts o = {.name = "r", .mtime = 1764496800, .scratch = sc, .block_size = 16 * 1024};
    orr_lzop_writer *a = NULL, *b = NULL;
    orr_err err;
    orr_buf want = ORR_BUF_INIT;
    assert_int_equal(orr_lzop_writer_open(tpath("rec-a.lzo"), &o, &a, &err), ORR_OK);
    assert_int_equal(orr_lzop_writer_open(tpath("rec-b.lzo"), &o, &b, &err), ORR_OK);
    size_t off = 0;
    for (size_t i = 0; i < 1000; i++) {
        size_t len = (i * 37) % 300;
        assert_int_equal(orr_lzop_write_rec(a, data + off, len, '\n', &err), ORR_OK);
        assert_int_equal(orr_lzop_write(b, data + off, len, &err), ORR_OK);
        assert_int_equal(orr_lzop_write(b, "\n", 1, &err), ORR_OK);
        orr_buf_append(&want, data + off, len);
        orr_buf_append_byte(&want, '\n');
        off += len;
    }
    orr_lzop_stats sa, sb;
    assert_int_equal(orr_lzop_writer_close(a, &sa, &err), ORR_OK);
    assert_int_equal(orr_lzop_writer_close(b, &sb, &err), ORR_OK);
    assert_true(sa.blocks > 2);
    size_t na, nb;
    uint8_t *fa = read_raw(tpath("rec-a.lzo"), &na), *fb = read_raw(tpath("rec-b.lzo"), &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(fa, fb, na);
    expect_read_path(tpath("rec-a.lzo"), (const uint8_t *)want.data, want.len);
    free(fa);
    free(fb);
    free(data);
    orr_buf_free(&want);
    orr_lzop_scratch_free(sc);
}

/* A smaller block size: blocks of that size, a matching index, lzop reads
 * it; out-of-range sizes are refused naming the field. */
static void test_block_size(void **state)
{
    (void)state;
    size_t n = 100 * KIB + 7;
    uint8_t *data = gen(n, DATA_TEXT, 9);
    write_raw(tpath("x.orig"), data, n);
    orr_lzop_scratch *sc = orr_lzop_scratch_new();
    for (int shared = 0; shared < 2; shared++) {
        orr_lzop_opts o = {.name = "x.orig",
                           .flags = ORR_LZOP_WITH_INDEX,
                           .block_size = 8192,
                           .scratch = shared ? sc : NULL};
        orr_lzop_stats st;
        lzo_write(tpath("x.lzo"), data, n, &o, &st);
        assert_int_equal(st.blocks, (n + 8191) / 8192);
        size_t ilen;
        uint8_t *idx = read_raw(tpath("x.lzo.index"), &ilen);
        assert_int_equal(ilen, st.blocks * 8);
        free(idx);
        size_t flen;
        uint8_t *f = read_raw(tpath("x.lzo"), &flen);
        expect_read_blocks(f, flen, data, n, st.blocks);
        free(f);
        expect_lzop_tool_ok(tpath("x.lzo"), tpath("x.orig"));
    }
    orr_lzop_writer *w = NULL;
    orr_err err;
    orr_lzop_opts small = {.block_size = ORR_LZOP_MIN_BLOCK - 1};
    assert_int_equal(orr_lzop_writer_open(tpath("b.lzo"), &small, &w, &err), ORR_EINVAL);
    assert_null(w);
    assert_string_equal(err.field, "block_size");
    orr_lzop_opts big = {.block_size = ORR_LZOP_BLOCK_SIZE + 1, .scratch = sc};
    assert_int_equal(orr_lzop_writer_open(tpath("b.lzo"), &big, &w, &err), ORR_EINVAL);
    assert_string_equal(err.field, "block_size");
    orr_lzop_scratch_free(sc);
    free(data);
}

/* A shared-scratch writer on a full disk fails at the block that cannot be
 * written and keeps failing; the scratch stays usable by another writer. */
static void test_shared_scratch_errors(void **state)
{
    (void)state;
    orr_lzop_scratch *sc = orr_lzop_scratch_new();
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    orr_lzop_opts o = {.scratch = sc};
    orr_lzop_writer *w = NULL;
    orr_err err;
    /* the header itself is written at open with a scratch */
    assert_int_equal(orr_lzop_writer_open_fd(fd, "/dev/full", &o, &w, &err), ORR_EIO);
    assert_null(w);
    close(fd);
    size_t n = 300 * KIB;
    uint8_t *data = gen(n, DATA_TEXT, 5);
    write_raw(tpath("x.orig"), data, n);
    orr_lzop_opts ok = {.name = "x.orig", .scratch = sc};
    lzo_write(tpath("x.lzo"), data, n, &ok, NULL);
    expect_lzop_tool_ok(tpath("x.lzo"), tpath("x.orig"));
    free(data);
    orr_lzop_scratch_free(sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lzop_tool_present),   cmocka_unit_test(test_adler32),
        cmocka_unit_test(test_roundtrip_empty),     cmocka_unit_test(test_roundtrip_one_byte),
        cmocka_unit_test(test_roundtrip_one_block), cmocka_unit_test(test_roundtrip_block_plus_one),
        cmocka_unit_test(test_roundtrip_10mib),     cmocka_unit_test(test_header_fields),
        cmocka_unit_test(test_read_lzop_written),   cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_truncated),           cmocka_unit_test(test_flipped_bytes),
        cmocka_unit_test(test_bad_fields),          cmocka_unit_test(test_recover),
        cmocka_unit_test(test_flush_boundary),      cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_fd_with_index),       cmocka_unit_test(test_resume),
        cmocka_unit_test(test_shared_scratch),      cmocka_unit_test(test_shared_scratch_reuse),
        cmocka_unit_test(test_block_size),          cmocka_unit_test(test_shared_scratch_errors),
        cmocka_unit_test(test_write_rec),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
