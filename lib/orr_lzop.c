/*
 * orr_lzop.c - the lzop container on liblzo2 (see orr_lzop.h for the layout).
 *
 * Writer. Input collects in one 256 KiB block buffer (a write of a whole
 * block or more while the buffer is empty is compressed straight from the
 * caller's memory). Each full block is compressed with lzo1x_1_15_compress
 * (LZO1X-1(15), what `lzop -1` uses: a few per cent faster than LZO1X-1 on
 * delimited text for 0.5 % more output)
 * directly into the output buffer, just after room for its block header; the
 * header is filled in afterwards, and when compression does not shrink the
 * block the raw bytes go there instead. The output buffer (64 KiB plus one
 * worst-case block) is handed to write(2) in a full-write loop whenever the
 * next block might not fit. Every buffer and the LZO work memory are
 * allocated once at open, about 630 KiB per writer: nothing is allocated per
 * block. A writer opened with a shared scratch (orr_lzop_scratch) borrows the
 * work memory and output buffer instead: its block buffer grows with the
 * pending input (up to its block size), and each block is compressed into
 * the scratch and written out at once, so the scratch is empty between calls.
 *
 * Reader. A source gives "n contiguous bytes at the current offset": in
 * memory that is a pointer into the caller's bytes; on an fd it is a 64 KiB
 * read buffer, or for larger spans (block data) a buffer grown to the block
 * size. Every length is checked before it is used: block lengths against
 * lzop's 64 MiB maximum and against each other, and against the file size
 * when it is known (regular files, memory) before anything is allocated.
 * Compressed blocks decode with lzo1x_decompress_safe, which never writes or
 * reads outside the given buffers; the decoded length must equal the stored
 * one and the checksums must match.
 *
 * Invariants: r->off is the offset of the next unread byte of the lzop data;
 * w->pos is the offset of the next byte the writer will produce; a failed
 * reader or writer keeps its first error and returns it from every call.
 */
#include "orr_lzop.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lzo/lzo1x.h>

#include "orr_alloc.h"

static const uint8_t lzop_magic[9] = {0x89, 0x4c, 0x5a, 0x4f, 0x00, 0x0d, 0x0a, 0x1a, 0x0a};

#define LZOP__OUT_SPACE   (64u * 1024u)
#define LZOP__BLOCK_BOUND (ORR_LZOP_BLOCK_SIZE + ORR_LZOP_BLOCK_SIZE / 16u + 64u + 3u)
#define LZOP__BLK_HDR_MAX 20u /* two lengths and up to three checksums we write */
#define LZOP__READ_BUF    (64u * 1024u)

/* ---- shared helpers --------------------------------------------------- */

static pthread_once_t lzop__once = PTHREAD_ONCE_INIT;
static int lzop__init_rc;

static void lzop__init_once(void)
{
    lzop__init_rc = lzo_init();
}

static orr_status lzop__init(orr_err *err)
{
    pthread_once(&lzop__once, lzop__init_once);
    if (lzop__init_rc != LZO_E_OK)
        return orr_err_set(err, ORR_EINTERNAL, "lzo", "lzo_init failed (%d)", lzop__init_rc);
    return ORR_OK;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Adler-32. liblzo2's lzo_adler32 goes byte by byte and costs a quarter of
 * the writer's CPU time, so on x86 with SSSE3 (checked at run time) 16 bytes
 * are summed per step: for a chunk b[0..15], s1 grows by the byte sum
 * (psadbw) and s2 by 16 * s1-before-the-chunk plus sum((16 - i) * b[i])
 * (pmaddubsw, pmaddwd). At most 5552 bytes (347 chunks) go in before the
 * sums are reduced modulo 65521, as in every Adler-32: 32-bit lanes cannot
 * overflow in that span.
 */
#define ADLER_BASE 65521u
#define ADLER_NMAX 5552u

uint32_t orr_lzop__adler32_portable(uint32_t adler, const void *data, size_t n)
{
    const uint8_t *p = data;
    uint32_t s1 = adler & 0xffff, s2 = adler >> 16;
    while (n > 0) {
        size_t k = n < ADLER_NMAX ? n : ADLER_NMAX;
        n -= k;
        while (k--) {
            s1 += *p++;
            s2 += s1;
        }
        s1 %= ADLER_BASE;
        s2 %= ADLER_BASE;
    }
    return s2 << 16 | s1;
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

__attribute__((target("ssse3"))) static uint32_t adler_ssse3(uint32_t adler, const uint8_t *p,
                                                             size_t n)
{
    uint32_t s1 = adler & 0xffff;
    uint64_t s2 = adler >> 16;
    const __m128i weights = _mm_setr_epi8(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
    const __m128i ones = _mm_set1_epi16(1);
    const __m128i zero = _mm_setzero_si128();
    while (n >= 16) {
        size_t chunks = n / 16;
        if (chunks > ADLER_NMAX / 16)
            chunks = ADLER_NMAX / 16;
        n -= chunks * 16;
        s2 += (uint64_t)s1 * chunks * 16;
        __m128i vs1 = zero, vs2 = zero, vprev = zero;
        for (size_t c = 0; c < chunks; c++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
            vprev = _mm_add_epi32(vprev, vs1);
            vs1 = _mm_add_epi32(vs1, _mm_sad_epu8(v, zero));
            vs2 = _mm_add_epi32(vs2, _mm_madd_epi16(_mm_maddubs_epi16(v, weights), ones));
            p += 16;
        }
        vs2 = _mm_add_epi32(vs2, _mm_slli_epi32(vprev, 4));
        uint32_t a[4], b[4];
        _mm_storeu_si128((__m128i *)(void *)a, vs1);
        _mm_storeu_si128((__m128i *)(void *)b, vs2);
        s1 = (uint32_t)(((uint64_t)s1 + a[0] + a[1] + a[2] + a[3]) % ADLER_BASE);
        s2 = (s2 + b[0] + b[1] + b[2] + b[3]) % ADLER_BASE;
    }
    return orr_lzop__adler32_portable((uint32_t)s2 << 16 | s1, p, n);
}

/* A load and a bit test of what libgcc found at start-up: cheap per call. */
static int lzop__have_ssse3(void)
{
    return __builtin_cpu_supports("ssse3");
}
#endif

uint32_t orr_lzop_adler32(uint32_t adler, const void *data, size_t n)
{
#if defined(__x86_64__) || defined(__i386__)
    if (lzop__have_ssse3())
        return adler_ssse3(adler, data, n);
#endif
    return orr_lzop__adler32_portable(adler, data, n);
}

static uint32_t lzop__adler(const void *p, size_t n)
{
    return orr_lzop_adler32(1, p, n);
}

static uint32_t lzop__crc(const void *p, size_t n)
{
    return (uint32_t)lzo_crc32(0, (const lzo_bytep)p, (lzo_uint)n);
}

/* Write all n bytes, retrying short writes and EINTR. 0 or an errno. */
static int lzop__write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (k == 0)
            return EIO;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* ---- writer ----------------------------------------------------------- */

/* Block buffers of closed writers, kept for the next ones: a writer that
 * rolls hands its grown buffer on instead of freeing it, so a stream that
 * opens and rolls files all day neither maps and unmaps them (glibc maps
 * buffers of 128 KiB and more; each unmap is a TLB shootdown on every core)
 * nor faults their pages in again. Only buffers of LZOP__SPARE_MIN bytes or
 * more are kept, LZOP__SPARE_BYTES at most: a bucket close rolls a few
 * hundred files at once per writer, and the next bucket's files want as
 * many buffers again. */
#define LZOP__SPARES      512
#define LZOP__SPARE_MIN   (64u * 1024u)
#define LZOP__SPARE_BYTES (32u * 1024u * 1024u)

struct orr_lzop_scratch {
    uint8_t *out; /* one block header and one worst-case compressed block */
    size_t out_cap;
    void *wrkmem;
    uint8_t *spare[LZOP__SPARES]; /* kept block buffers, spare_cap[i] bytes each */
    size_t spare_cap[LZOP__SPARES];
    size_t nspare, spare_bytes;
    uint64_t reused;
};

#define LZOP__FIRST_BLK (16u * 1024u) /* first size of a shared-scratch block buffer */

orr_lzop_scratch *orr_lzop_scratch_new(void)
{
    orr_lzop_scratch *s = orr_xcalloc(1, sizeof(*s));
    s->out_cap = LZOP__BLK_HDR_MAX + LZOP__BLOCK_BOUND;
    s->out = orr_xmalloc(s->out_cap);
    s->wrkmem = orr_xmalloc(LZO1X_1_15_MEM_COMPRESS);
    return s;
}

void orr_lzop_scratch_free(orr_lzop_scratch *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nspare; i++)
        free(s->spare[i]);
    free(s->out);
    free(s->wrkmem);
    free(s);
}

uint64_t orr_lzop_scratch_reused(const orr_lzop_scratch *s)
{
    return s ? s->reused : 0;
}

/* Keep a closed writer's block buffer (cap bytes) for the next writer on
 * the scratch, or free it. */
static void lzop__give_back(orr_lzop_scratch *s, uint8_t *blk, size_t cap)
{
    if (blk && cap >= LZOP__SPARE_MIN && s->nspare < LZOP__SPARES &&
        s->spare_bytes + cap <= LZOP__SPARE_BYTES) {
        s->spare_bytes += cap;
        s->spare[s->nspare] = blk;
        s->spare_cap[s->nspare++] = cap;
        return;
    }
    free(blk);
}

/* A kept buffer of at least want and at most max bytes (the latest kept
 * first), or NULL; *cap gets its size. */
static uint8_t *lzop__take(orr_lzop_scratch *s, size_t want, size_t max, size_t *cap)
{
    for (size_t i = s->nspare; i-- > 0;) {
        if (s->spare_cap[i] < want || s->spare_cap[i] > max)
            continue;
        uint8_t *b = s->spare[i];
        *cap = s->spare_cap[i];
        s->spare_bytes -= *cap;
        s->nspare--;
        s->spare[i] = s->spare[s->nspare];
        s->spare_cap[i] = s->spare_cap[s->nspare];
        s->reused++;
        return b;
    }
    return NULL;
}

struct orr_lzop_writer {
    int fd;
    int own_fd;
    int index_fd;
    unsigned flags;
    char *label;              /* file name for errors */
    char *index_path;         /* path mode with an index */
    orr_lzop_scratch *shared; /* borrowed out/wrkmem, or NULL */
    size_t bsize;             /* input bytes per block */
    uint8_t *blk;             /* pending input (blk_cap bytes) */
    size_t blk_len, blk_cap;
    uint8_t *out; /* bytes waiting for write(2) */
    size_t out_len, out_cap;
    void *wrkmem;
    orr_buf index; /* u64 big-endian block offsets */
    uint64_t pos;
    orr_lzop_stats st;
    orr_status failed;
    orr_err ferr;
};

static orr_status wr__fail(orr_lzop_writer *w, orr_err *err, orr_status code, const char *field,
                           const char *what, int e)
{
    orr_err_set(&w->ferr, code, field, "%s %s: %s", what, w->label, strerror(e));
    w->failed = code;
    if (err)
        *err = w->ferr;
    return code;
}

static orr_status wr__sticky(const orr_lzop_writer *w, orr_err *err)
{
    if (err)
        *err = w->ferr;
    return w->failed;
}

static orr_status wr__drain(orr_lzop_writer *w, orr_err *err)
{
    if (w->out_len == 0)
        return ORR_OK;
    int e = lzop__write_all(w->fd, w->out, w->out_len);
    if (e)
        return wr__fail(w, err, ORR_EIO, "file", "write", e);
    w->out_len = 0;
    return ORR_OK;
}

/* Compress one block of n (1..BLOCK_SIZE) bytes at src into the output. */
static orr_status wr__block(orr_lzop_writer *w, const uint8_t *src, size_t n, orr_err *err)
{
    if (w->out_cap - w->out_len < LZOP__BLK_HDR_MAX + LZOP__BLOCK_BOUND) {
        orr_status s = wr__drain(w, err);
        if (s != ORR_OK)
            return s;
    }
    int with_c = (w->flags & ORR_LZOP_ADLER_C) != 0;
    size_t hl = with_c ? 16 : 12;
    uint8_t *h = w->out + w->out_len;
    lzo_uint clen = 0;
    int rc = lzo1x_1_15_compress(src, (lzo_uint)n, h + hl, &clen, w->wrkmem);
    if (rc != LZO_E_OK) {
        orr_err_set(&w->ferr, ORR_EINTERNAL, "block", "lzo1x_1_15_compress failed (%d) for %s", rc,
                    w->label);
        w->failed = ORR_EINTERNAL;
        return wr__sticky(w, err);
    }
    uint8_t be[8];
    put_u32(be, (uint32_t)(w->pos >> 32));
    put_u32(be + 4, (uint32_t)w->pos);
    orr_buf_append(&w->index, be, 8);

    put_u32(h, (uint32_t)n);
    put_u32(h + 8, lzop__adler(src, n));
    size_t used;
    if (clen < n) {
        put_u32(h + 4, (uint32_t)clen);
        if (with_c)
            put_u32(h + 12, lzop__adler(h + hl, clen));
        used = hl + clen;
    } else {
        /* no gain: store the block; no checksum of compressed bytes then */
        put_u32(h + 4, (uint32_t)n);
        memcpy(h + 12, src, n);
        used = 12 + n;
        w->st.stored_blocks++;
    }
    w->out_len += used;
    w->pos += used;
    w->st.blocks++;
    w->st.bytes_in += n;
    if (w->shared)
        return wr__drain(w, err); /* the scratch is empty between calls */
    return ORR_OK;
}

static orr_status wr__check_opts(const orr_lzop_opts *o, orr_err *err)
{
    size_t nlen = o && o->name ? strlen(o->name) : 0;
    if (nlen > 255)
        return orr_err_set(err, ORR_EINVAL, "name",
                           "stored file name is %zu bytes; the lzop header holds at most 255",
                           nlen);
    if (o && (o->flags & ~(unsigned)(ORR_LZOP_WITH_INDEX | ORR_LZOP_ADLER_C | ORR_LZOP_FSYNC)))
        return orr_err_set(err, ORR_EINVAL, "flags", "unknown writer flags 0x%x", o->flags);
    if (o && o->block_size &&
        (o->block_size < ORR_LZOP_MIN_BLOCK || o->block_size > ORR_LZOP_BLOCK_SIZE))
        return orr_err_set(err, ORR_EINVAL, "block_size", "block size %u is outside %u..%u",
                           o->block_size, ORR_LZOP_MIN_BLOCK, ORR_LZOP_BLOCK_SIZE);
    return ORR_OK;
}

/* Put the file header at the start of the (empty) output buffer. */
static void wr__header(orr_lzop_writer *w, const orr_lzop_opts *o)
{
    const char *name = o && o->name ? o->name : "";
    size_t nlen = strlen(name);
    uint8_t *p = w->out;
    memcpy(p, lzop_magic, 9);
    uint8_t *h = p + 9, *q = h;
    uint32_t flags = ORR_LZOP_F_ADLER32_D | ORR_LZOP_F_OS_UNIX;
    if (w->flags & ORR_LZOP_ADLER_C)
        flags |= ORR_LZOP_F_ADLER32_C;
    int64_t mtime = o ? o->mtime : 0;
    put_u16(q, ORR_LZOP_VERSION);
    put_u16(q + 2, ORR_LZOP_LIB_VERSION);
    put_u16(q + 4, ORR_LZOP_VERSION_NEEDED);
    q[6] = ORR_LZOP_M_LZO1X_1_15;
    q[7] = 1; /* the level lzop -1 records for LZO1X-1(15) */
    put_u32(q + 8, flags);
    put_u32(q + 12, o && o->mode ? o->mode : 0100644);
    put_u32(q + 16, (uint32_t)((uint64_t)mtime & 0xffffffffu));
    put_u32(q + 20, (uint32_t)((uint64_t)mtime >> 32));
    q[24] = (uint8_t)nlen;
    memcpy(q + 25, name, nlen);
    q += 25 + nlen;
    put_u32(q, lzop__adler(h, (size_t)(q - h)));
    q += 4;
    w->out_len = (size_t)(q - p);
    w->pos = w->out_len;
}

/* A writer on fd with its buffers; the caller puts the header or a resume
 * position in place. */
static orr_lzop_writer *wr__new(int fd, int own_fd, const char *label, const char *path,
                                const orr_lzop_opts *opts, unsigned flags)
{
    orr_lzop_writer *w = orr_xcalloc(1, sizeof(*w));
    w->fd = fd;
    w->own_fd = own_fd;
    w->index_fd = -1;
    w->flags = flags;
    w->label = orr_xstrdup(label);
    if (w->flags & ORR_LZOP_WITH_INDEX) {
        if (path) {
            size_t n = strlen(path);
            w->index_path = orr_xmalloc(n + 7);
            memcpy(w->index_path, path, n);
            memcpy(w->index_path + n, ".index", 7);
        } else {
            w->index_fd = opts->index_fd;
        }
    }
    w->bsize = opts && opts->block_size ? opts->block_size : ORR_LZOP_BLOCK_SIZE;
    w->shared = opts ? opts->scratch : NULL;
    if (w->shared) {
        w->out = w->shared->out;
        w->out_cap = w->shared->out_cap;
        w->wrkmem = w->shared->wrkmem;
        return w; /* the block buffer grows as input arrives */
    }
    w->blk_cap = w->bsize;
    w->blk = orr_xmalloc(w->blk_cap);
    w->out_cap = LZOP__OUT_SPACE + LZOP__BLK_HDR_MAX + LZOP__BLOCK_BOUND;
    w->out = orr_xmalloc(w->out_cap);
    w->wrkmem = orr_xmalloc(LZO1X_1_15_MEM_COMPRESS);
    return w;
}

static orr_status wr__open(int fd, int own_fd, const char *label, const char *path,
                           const orr_lzop_opts *opts, orr_lzop_writer **out, orr_err *err)
{
    orr_lzop_writer *w = wr__new(fd, own_fd, label, path, opts, opts ? opts->flags : 0);
    wr__header(w, opts);
    if (w->shared) {
        orr_status s = wr__drain(w, err);
        if (s != ORR_OK) {
            orr_lzop_writer_abort(w);
            return s;
        }
    }
    *out = w;
    return ORR_OK;
}

orr_status orr_lzop_writer_open(const char *path, const orr_lzop_opts *opts, orr_lzop_writer **out,
                                orr_err *err)
{
    *out = NULL;
    if (!path || !*path)
        return orr_err_set(err, ORR_EINVAL, "path", "no file name given");
    orr_status s = wr__check_opts(opts, err);
    if (s != ORR_OK)
        return s;
    s = lzop__init(err);
    if (s != ORR_OK)
        return s;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return orr_err_set(err, ORR_EIO, "file", "open %s: %s", path, strerror(errno));
    return wr__open(fd, 1, path, path, opts, out, err);
}

orr_status orr_lzop_writer_open_fd(int fd, const char *label, const orr_lzop_opts *opts,
                                   orr_lzop_writer **out, orr_err *err)
{
    *out = NULL;
    if (fd < 0)
        return orr_err_set(err, ORR_EINVAL, "fd", "bad file descriptor %d", fd);
    if (opts && (opts->flags & ORR_LZOP_WITH_INDEX) && opts->index_fd < 0)
        return orr_err_set(err, ORR_EINVAL, "index_fd", "an index was asked for but no index fd");
    orr_status s = wr__check_opts(opts, err);
    if (s != ORR_OK)
        return s;
    s = lzop__init(err);
    if (s != ORR_OK)
        return s;
    return wr__open(fd, 0, label ? label : "fd", NULL, opts, out, err);
}

orr_status orr_lzop_writer_resume(const char *path, const orr_lzop_opts *opts,
                                  orr_lzop_recovery *recovered, orr_lzop_writer **out, orr_err *err)
{
    *out = NULL;
    orr_lzop_recovery rec;
    orr_buf offs = ORR_BUF_INIT;
    orr_status s = wr__check_opts(opts, err);
    if (s == ORR_OK)
        s = orr_lzop_recover(path, &rec, &offs, err);
    if (s != ORR_OK)
        goto done;
    if (recovered)
        *recovered = rec;
    if (rec.header_size == 0) {
        /* nothing usable: start the file again */
        s = orr_lzop_writer_open(path, opts, out, err);
        goto done;
    }
    uint32_t hf = rec.header_flags;
    if (!(hf & ORR_LZOP_F_ADLER32_D) || (hf & (ORR_LZOP_F_CRC32_D | ORR_LZOP_F_CRC32_C))) {
        s = orr_err_set(err, ORR_EINVAL, "flags",
                        "%s uses block checksums (flags 0x%08x) this writer does not write; "
                        "it cannot be continued",
                        path, hf);
        goto done;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        s = orr_err_set(err, ORR_EIO, "file", "open %s: %s", path, strerror(errno));
        goto done;
    }
    if (ftruncate(fd, (off_t)rec.good_end) != 0 ||
        lseek(fd, (off_t)rec.good_end, SEEK_SET) != (off_t)rec.good_end) {
        s = orr_err_set(err, ORR_EIO, "file", "truncate %s at %llu: %s", path,
                        (unsigned long long)rec.good_end, strerror(errno));
        close(fd);
        goto done;
    }
    unsigned flags = (opts ? opts->flags : 0) & ~(unsigned)ORR_LZOP_ADLER_C;
    if (hf & ORR_LZOP_F_ADLER32_C)
        flags |= ORR_LZOP_ADLER_C;
    orr_lzop_writer *w = wr__new(fd, 1, path, path, opts, flags);
    const uint64_t *o = (const uint64_t *)(const void *)offs.data;
    for (size_t i = 0; i < offs.len / sizeof(uint64_t); i++) {
        uint8_t be[8];
        put_u32(be, (uint32_t)(o[i] >> 32));
        put_u32(be + 4, (uint32_t)o[i]);
        orr_buf_append(&w->index, be, 8);
    }
    w->pos = rec.good_end;
    w->st.bytes_in = rec.bytes;
    w->st.blocks = rec.blocks;
    *out = w;
done:
    orr_buf_free(&offs);
    return s;
}

/* Shared-scratch writers: room for at least want more pending bytes (or up
 * to the block size), growing the block buffer by doubling. */
static void wr__grow(orr_lzop_writer *w, size_t want)
{
    size_t need = w->blk_len + want;
    if (need > w->bsize)
        need = w->bsize;
    if (need <= w->blk_cap)
        return;
    size_t cap = w->blk_cap ? w->blk_cap * 2 : LZOP__FIRST_BLK;
    while (cap < need)
        cap *= 2;
    if (cap > w->bsize)
        cap = w->bsize;
    size_t got;
    uint8_t *b =
        w->shared && cap >= LZOP__SPARE_MIN ? lzop__take(w->shared, cap, w->bsize, &got) : NULL;
    if (b) {
        if (w->blk_len > 0)
            memcpy(b, w->blk, w->blk_len);
        free(w->blk);
        w->blk = b;
        w->blk_cap = got;
        return;
    }
    w->blk = orr_xrealloc(w->blk, cap);
    w->blk_cap = cap;
}

orr_status orr_lzop_write(orr_lzop_writer *w, const void *data, size_t len, orr_err *err)
{
    if (w->failed)
        return wr__sticky(w, err);
    const uint8_t *p = data;
    const size_t bs = w->bsize;
    while (len > 0) {
        orr_status s;
        if (w->blk_len == 0 && len >= bs) {
            s = wr__block(w, p, bs, err);
            if (s != ORR_OK)
                return s;
            p += bs;
            len -= bs;
            continue;
        }
        if (w->blk_cap - w->blk_len < len && w->blk_cap < bs)
            wr__grow(w, len);
        size_t room = w->blk_cap - w->blk_len;
        size_t k = len < room ? len : room;
        memcpy(w->blk + w->blk_len, p, k);
        w->blk_len += k;
        p += k;
        len -= k;
        if (w->blk_len == bs) {
            w->blk_len = 0;
            s = wr__block(w, w->blk, bs, err);
            if (s != ORR_OK)
                return s;
        }
    }
    return ORR_OK;
}

orr_status orr_lzop_write_rec(orr_lzop_writer *w, const void *data, size_t len, char term,
                              orr_err *err)
{
    /* Both fit and leave the block short of full: nothing to compress. */
    if (!w->failed && w->blk_len + len + 1 < w->bsize && w->blk_cap - w->blk_len > len) {
        memcpy(w->blk + w->blk_len, data, len);
        w->blk[w->blk_len + len] = (uint8_t)term;
        w->blk_len += len + 1;
        return ORR_OK;
    }
    orr_status s = orr_lzop_write(w, data, len, err);
    return s == ORR_OK ? orr_lzop_write(w, &term, 1, err) : s;
}

orr_status orr_lzop_writer_flush(orr_lzop_writer *w, orr_err *err)
{
    if (w->failed)
        return wr__sticky(w, err);
    if (w->blk_len > 0) {
        size_t n = w->blk_len;
        w->blk_len = 0;
        orr_status s = wr__block(w, w->blk, n, err);
        if (s != ORR_OK)
            return s;
    }
    return wr__drain(w, err);
}

static orr_status wr__index(orr_lzop_writer *w, orr_err *err)
{
    int fd = w->index_fd;
    const char *name = w->index_path ? w->index_path : "index fd";
    if (w->index_path) {
        fd = open(w->index_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return wr__fail(w, err, ORR_EIO, "index", "open index of", errno);
    }
    int e = lzop__write_all(fd, (const uint8_t *)w->index.data, w->index.len);
    if (!e && (w->flags & ORR_LZOP_FSYNC) && fsync(fd) != 0)
        e = errno;
    if (w->index_path && close(fd) != 0 && !e)
        e = errno;
    if (e) {
        orr_err_set(&w->ferr, ORR_EIO, "index", "write %s: %s", name, strerror(e));
        w->failed = ORR_EIO;
        return wr__sticky(w, err);
    }
    return ORR_OK;
}

orr_status orr_lzop_writer_close(orr_lzop_writer *w, orr_lzop_stats *stats, orr_err *err)
{
    if (!w)
        return ORR_OK;
    orr_status s = orr_lzop_writer_flush(w, err);
    if (s == ORR_OK) {
        put_u32(w->out + w->out_len, 0); /* flush left at least a block of room */
        w->out_len += 4;
        w->pos += 4;
        s = wr__drain(w, err);
    }
    if (s == ORR_OK && (w->flags & ORR_LZOP_WITH_INDEX))
        s = wr__index(w, err);
    if (s == ORR_OK && (w->flags & ORR_LZOP_FSYNC) && fsync(w->fd) != 0)
        s = wr__fail(w, err, ORR_EIO, "file", "fsync", errno);
    if (w->own_fd) {
        int rc = close(w->fd);
        w->own_fd = 0;
        if (rc != 0 && s == ORR_OK)
            s = wr__fail(w, err, ORR_EIO, "file", "close", errno);
    }
    w->st.bytes_out = w->pos;
    if (stats)
        *stats = w->st;
    orr_lzop_writer_abort(w);
    return s;
}

void orr_lzop_writer_abort(orr_lzop_writer *w)
{
    if (!w)
        return;
    if (w->own_fd)
        close(w->fd);
    orr_buf_free(&w->index);
    if (!w->shared) {
        free(w->wrkmem);
        free(w->out);
        free(w->blk);
    } else {
        lzop__give_back(w->shared, w->blk, w->blk_cap);
    }
    free(w->index_path);
    free(w->label);
    free(w);
}

/* ---- reader ----------------------------------------------------------- */

struct orr_lzop_reader {
    int fd; /* -1 for memory */
    int own_fd;
    const uint8_t *mem;
    size_t mem_len;
    char *label;
    uint64_t off;   /* offset of the next unread byte */
    uint64_t limit; /* total size when known, else UINT64_MAX */
    uint8_t *ibuf;  /* fd: read buffer; bytes [ipos, ilen) are unread */
    size_t ipos, ilen;
    uint8_t *big; /* fd: spans longer than the read buffer */
    size_t big_cap;
    uint8_t *dbuf; /* decoded blocks */
    size_t dbuf_cap;
    const uint8_t *cur; /* current decoded block for orr_lzop_read */
    size_t cur_len, cur_pos;
    uint64_t blocks;
    orr_lzop_header h;
    int eof;
    int short_input; /* the last failure was the end of the input */
    int io_error;    /* the last failure was read(2) */
    orr_status failed;
    orr_err ferr;
};

static orr_status rd__fail(orr_lzop_reader *r, orr_err *err, orr_status code, const char *field,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static orr_status rd__fail(orr_lzop_reader *r, orr_err *err, orr_status code, const char *field,
                           const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    orr_err_set(&r->ferr, code, field, "%s: %s", r->label, msg);
    r->failed = code;
    if (err)
        *err = r->ferr;
    return code;
}

static orr_status rd__sticky(const orr_lzop_reader *r, orr_err *err)
{
    if (err)
        *err = r->ferr;
    return r->failed;
}

/* Read into ibuf until at least need bytes are unread. 0, or -1 (EOF), -2 (error). */
static int rd__fill(orr_lzop_reader *r, size_t need)
{
    if (r->ipos > 0) {
        memmove(r->ibuf, r->ibuf + r->ipos, r->ilen - r->ipos);
        r->ilen -= r->ipos;
        r->ipos = 0;
    }
    while (r->ilen < need) {
        ssize_t k = read(r->fd, r->ibuf + r->ilen, LZOP__READ_BUF - r->ilen);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -2;
        }
        if (k == 0)
            return -1;
        r->ilen += (size_t)k;
    }
    return 0;
}

/* Point *p at the next n bytes (valid until the next call) and advance.
 * what names the field for the error. */
static orr_status rd__get(orr_lzop_reader *r, size_t n, const uint8_t **p, const char *what,
                          orr_err *err)
{
    uint64_t at = r->off;
    if (r->limit != UINT64_MAX && (at > r->limit || n > r->limit - at))
        goto short_input;
    if (r->fd < 0) {
        *p = r->mem + at;
        r->off += n;
        return ORR_OK;
    }
    if (n <= LZOP__READ_BUF) {
        if (r->ilen - r->ipos < n) {
            int rc = rd__fill(r, n);
            if (rc == -2)
                goto io_error;
            if (rc == -1)
                goto short_input;
        }
        *p = r->ibuf + r->ipos;
        r->ipos += n;
        r->off += n;
        return ORR_OK;
    }
    if (r->big_cap < n) {
        free(r->big);
        r->big_cap = 0;
        r->big = malloc(n); /* n comes from the file: refused, not fatal */
        if (!r->big)
            return rd__fail(r, err, ORR_ENOMEM, what, "out of memory for %zu bytes", n);
        r->big_cap = n;
    }
    size_t have = r->ilen - r->ipos;
    memcpy(r->big, r->ibuf + r->ipos, have);
    r->ipos = r->ilen = 0;
    while (have < n) {
        ssize_t k = read(r->fd, r->big + have, n - have);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            goto io_error;
        }
        if (k == 0)
            goto short_input;
        have += (size_t)k;
    }
    *p = r->big;
    r->off += n;
    return ORR_OK;

short_input:
    r->short_input = 1;
    return rd__fail(r, err, ORR_EIO, what,
                    "file cut short: %zu bytes of %s expected at offset %llu", n, what,
                    (unsigned long long)at);
io_error:
    r->io_error = 1;
    return rd__fail(r, err, ORR_EIO, what, "read at offset %llu: %s", (unsigned long long)at,
                    strerror(errno));
}

typedef struct rd__hsum {
    uint32_t adler, crc;
} rd__hsum;

static orr_status rd__hitem(orr_lzop_reader *r, size_t n, const uint8_t **p, const char *what,
                            rd__hsum *hs, orr_err *err)
{
    orr_status s = rd__get(r, n, p, what, err);
    if (s != ORR_OK)
        return s;
    hs->adler = (uint32_t)lzo_adler32(hs->adler, (const lzo_bytep)*p, (lzo_uint)n);
    hs->crc = (uint32_t)lzo_crc32(hs->crc, (const lzo_bytep)*p, (lzo_uint)n);
    return ORR_OK;
}

static orr_status rd__header(orr_lzop_reader *r, orr_err *err)
{
    orr_lzop_header *h = &r->h;
    const uint8_t *p;
    rd__hsum hs = {1, 0};
    orr_status s = rd__get(r, 9, &p, "magic", err);
    if (s != ORR_OK)
        return s;
    if (memcmp(p, lzop_magic, 9) != 0)
        return rd__fail(r, err, ORR_EINVAL, "magic", "not an lzop file (bad magic at offset 0)");
#define HITEM(n, what)                                                                             \
    do {                                                                                           \
        s = rd__hitem(r, n, &p, what, &hs, err);                                                   \
        if (s != ORR_OK)                                                                           \
            return s;                                                                              \
    } while (0)
    HITEM(4, "version");
    h->version = get_u16(p);
    h->lib_version = get_u16(p + 2);
    if (h->version < 0x0900)
        return rd__fail(r, err, ORR_EINVAL, "version", "lzop version 0x%04x is too old",
                        h->version);
    if (h->version >= 0x0940) {
        HITEM(4, "version_needed");
        h->version_needed = get_u16(p);
        h->method = p[2];
        h->level = p[3];
        if (h->version_needed > ORR_LZOP_READ_VERSION || h->version_needed < 0x0900)
            return rd__fail(r, err, ORR_EINVAL, "version_needed",
                            "file needs lzop version 0x%04x; this reader handles 0x0900-0x%04x",
                            h->version_needed, ORR_LZOP_READ_VERSION);
    } else {
        /* headers older than lzop 0.94 have no version-needed and no level */
        HITEM(1, "method");
        h->method = p[0];
    }
    if (h->method < ORR_LZOP_M_LZO1X_1 || h->method > ORR_LZOP_M_LZO1X_999)
        return rd__fail(r, err, ORR_EINVAL, "method",
                        "compression method %u is not an LZO1X method (1, 2 or 3)", h->method);
    HITEM(4, "flags");
    h->flags = get_u32(p);
    if (h->flags & (ORR_LZOP_F_H_FILTER | ORR_LZOP_F_MULTIPART | ORR_LZOP_F_RESERVED))
        return rd__fail(r, err, ORR_EINVAL, "flags",
                        "header flags 0x%08x ask for filters, multipart or unknown features",
                        h->flags);
    HITEM(h->version >= 0x0940 ? 12 : 8, "mode");
    h->mode = get_u32(p);
    uint64_t mt = get_u32(p + 4);
    if (h->version >= 0x0940)
        mt |= (uint64_t)get_u32(p + 8) << 32;
    h->mtime = (int64_t)mt;
    HITEM(1, "name_length");
    size_t nlen = p[0];
    if (nlen > 0) {
        HITEM(nlen, "name");
        memcpy(h->name, p, nlen);
    }
    h->name[nlen] = '\0';
    uint32_t want = (h->flags & ORR_LZOP_F_H_CRC32) ? hs.crc : hs.adler;
    s = rd__get(r, 4, &p, "header_checksum", err);
    if (s != ORR_OK)
        return s;
    if (get_u32(p) != want)
        return rd__fail(r, err, ORR_EIO, "header_checksum",
                        "header checksum 0x%08x does not match the header (0x%08x)", get_u32(p),
                        want);
    if (h->flags & ORR_LZOP_F_H_EXTRA) {
        hs.adler = 1;
        hs.crc = 0;
        HITEM(4, "extra_field");
        uint32_t xlen = get_u32(p);
        if (xlen > 65536)
            return rd__fail(r, err, ORR_EINVAL, "extra_field",
                            "extra header field of %u bytes is implausible", xlen);
        if (xlen > 0)
            HITEM(xlen, "extra_field");
        want = (h->flags & ORR_LZOP_F_H_CRC32) ? hs.crc : hs.adler;
        s = rd__get(r, 4, &p, "extra_field", err);
        if (s != ORR_OK)
            return s;
        if (get_u32(p) != want)
            return rd__fail(r, err, ORR_EIO, "extra_field",
                            "extra header field checksum does not match");
    }
#undef HITEM
    h->size = r->off;
    return ORR_OK;
}

/* Decode the next block: ORR_OK with data and len set, ORR_EOF at the terminator. */
static orr_status rd__block(orr_lzop_reader *r, const uint8_t **data, size_t *len, orr_err *err)
{
    if (r->failed)
        return rd__sticky(r, err);
    if (r->eof)
        return ORR_EOF;
    const uint8_t *p;
    uint64_t boff = r->off;
    unsigned long long bno = (unsigned long long)r->blocks;
    orr_status s = rd__get(r, 4, &p, "block.uncompressed_length", err);
    if (s != ORR_OK)
        return s;
    uint32_t dlen = get_u32(p);
    if (dlen == 0) {
        r->eof = 1;
        return ORR_EOF;
    }
    if (dlen > ORR_LZOP_MAX_BLOCK)
        return rd__fail(r, err, ORR_EINVAL, "block.uncompressed_length",
                        "block %llu at offset %llu: uncompressed length %u exceeds the lzop "
                        "maximum of %u",
                        bno, (unsigned long long)boff, dlen, ORR_LZOP_MAX_BLOCK);
    s = rd__get(r, 4, &p, "block.compressed_length", err);
    if (s != ORR_OK)
        return s;
    uint32_t clen = get_u32(p);
    if (clen == 0 || clen > dlen)
        return rd__fail(r, err, ORR_EINVAL, "block.compressed_length",
                        "block %llu at offset %llu: compressed length %u with uncompressed "
                        "length %u",
                        bno, (unsigned long long)boff, clen, dlen);
    uint32_t fl = r->h.flags;
    int packed = clen < dlen;
    size_t nsum = !!(fl & ORR_LZOP_F_ADLER32_D) + !!(fl & ORR_LZOP_F_CRC32_D);
    if (packed)
        nsum += !!(fl & ORR_LZOP_F_ADLER32_C) + !!(fl & ORR_LZOP_F_CRC32_C);
    uint32_t sums[4] = {0, 0, 0, 0};
    if (nsum > 0) {
        s = rd__get(r, 4 * nsum, &p, "block.checksum", err);
        if (s != ORR_OK)
            return s;
        for (size_t i = 0; i < nsum; i++)
            sums[i] = get_u32(p + 4 * i);
    }
    s = rd__get(r, clen, &p, "block.data", err);
    if (s != ORR_OK)
        return s;
    size_t si = 0;
    if (fl & ORR_LZOP_F_ADLER32_D)
        si++;
    if (fl & ORR_LZOP_F_CRC32_D)
        si++;
    if (packed) {
        if ((fl & ORR_LZOP_F_ADLER32_C) && lzop__adler(p, clen) != sums[si++])
            goto bad_c;
        if ((fl & ORR_LZOP_F_CRC32_C) && lzop__crc(p, clen) != sums[si++])
            goto bad_c;
        if (r->dbuf_cap < dlen) {
            free(r->dbuf);
            r->dbuf_cap = 0;
            r->dbuf = malloc(dlen); /* dlen comes from the file: refused, not fatal */
            if (!r->dbuf)
                return rd__fail(r, err, ORR_ENOMEM, "block.uncompressed_length",
                                "block %llu: out of memory for %u bytes", bno, dlen);
            r->dbuf_cap = dlen;
        }
        lzo_uint out = dlen;
        int rc = lzo1x_decompress_safe(p, clen, r->dbuf, &out, NULL);
        if (rc != LZO_E_OK || out != dlen)
            return rd__fail(r, err, ORR_EIO, "block.data",
                            "block %llu at offset %llu does not decode (lzo error %d, %lu of %u "
                            "bytes)",
                            bno, (unsigned long long)boff, rc, (unsigned long)out, dlen);
        p = r->dbuf;
    }
    si = 0;
    if ((fl & ORR_LZOP_F_ADLER32_D) && lzop__adler(p, dlen) != sums[si++])
        goto bad_d;
    if ((fl & ORR_LZOP_F_CRC32_D) && lzop__crc(p, dlen) != sums[si++])
        goto bad_d;
    r->blocks++;
    *data = p;
    *len = dlen;
    return ORR_OK;
bad_c:
    return rd__fail(r, err, ORR_EIO, "block.checksum",
                    "block %llu at offset %llu: checksum of the compressed bytes does not match",
                    bno, (unsigned long long)boff);
bad_d:
    return rd__fail(r, err, ORR_EIO, "block.checksum",
                    "block %llu at offset %llu: checksum of the decoded bytes does not match", bno,
                    (unsigned long long)boff);
}

static orr_status rd__open(int fd, int own_fd, const void *mem, size_t mem_len, const char *label,
                           orr_lzop_reader **out, orr_err *err)
{
    orr_status s = lzop__init(err);
    if (s != ORR_OK)
        return s;
    orr_lzop_reader *r = orr_xcalloc(1, sizeof(*r));
    r->fd = fd;
    r->own_fd = own_fd;
    r->mem = mem;
    r->mem_len = mem_len;
    r->label = orr_xstrdup(label ? label : (fd < 0 ? "memory" : "fd"));
    r->limit = UINT64_MAX;
    if (fd < 0) {
        r->limit = mem_len;
    } else {
        struct stat st;
        off_t cur = lseek(fd, 0, SEEK_CUR);
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && cur >= 0 && st.st_size >= cur)
            r->limit = (uint64_t)(st.st_size - cur);
        r->ibuf = orr_xmalloc(LZOP__READ_BUF);
    }
    s = rd__header(r, err);
    if (s != ORR_OK) {
        r->own_fd = 0;
        orr_lzop_reader_close(r);
        return s;
    }
    *out = r;
    return ORR_OK;
}

orr_status orr_lzop_reader_open(const char *path, orr_lzop_reader **out, orr_err *err)
{
    *out = NULL;
    if (!path || !*path)
        return orr_err_set(err, ORR_EINVAL, "path", "no file name given");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return orr_err_set(err, ORR_EIO, "file", "open %s: %s", path, strerror(errno));
    orr_status s = rd__open(fd, 1, NULL, 0, path, out, err);
    if (s != ORR_OK)
        close(fd);
    return s;
}

orr_status orr_lzop_reader_open_fd(int fd, const char *label, orr_lzop_reader **out, orr_err *err)
{
    *out = NULL;
    if (fd < 0)
        return orr_err_set(err, ORR_EINVAL, "fd", "bad file descriptor %d", fd);
    return rd__open(fd, 0, NULL, 0, label, out, err);
}

orr_status orr_lzop_reader_open_mem(const void *data, size_t len, const char *label,
                                    orr_lzop_reader **out, orr_err *err)
{
    *out = NULL;
    if (!data && len > 0)
        return orr_err_set(err, ORR_EINVAL, "data", "no bytes given");
    static const uint8_t none[1];
    return rd__open(-1, 0, data ? data : none, len, label, out, err);
}

const orr_lzop_header *orr_lzop_reader_header(const orr_lzop_reader *r)
{
    return &r->h;
}

orr_status orr_lzop_read_block(orr_lzop_reader *r, const void **data, size_t *len, orr_err *err)
{
    const uint8_t *p = NULL;
    size_t n = 0;
    orr_status s = rd__block(r, &p, &n, err);
    *data = p;
    *len = n;
    r->cur = NULL;
    r->cur_len = r->cur_pos = 0;
    return s;
}

orr_status orr_lzop_read(orr_lzop_reader *r, void *buf, size_t cap, size_t *n, orr_err *err)
{
    *n = 0;
    if (r->failed)
        return rd__sticky(r, err);
    if (cap == 0)
        return ORR_OK;
    while (r->cur_pos == r->cur_len) {
        const uint8_t *p;
        size_t len;
        orr_status s = rd__block(r, &p, &len, err);
        if (s != ORR_OK)
            return s;
        r->cur = p;
        r->cur_len = len;
        r->cur_pos = 0;
    }
    size_t k = r->cur_len - r->cur_pos;
    if (k > cap)
        k = cap;
    memcpy(buf, r->cur + r->cur_pos, k);
    r->cur_pos += k;
    *n = k;
    return ORR_OK;
}

void orr_lzop_reader_close(orr_lzop_reader *r)
{
    if (!r)
        return;
    if (r->own_fd)
        close(r->fd);
    free(r->ibuf);
    free(r->big);
    free(r->dbuf);
    free(r->label);
    free(r);
}

/* ---- recovery --------------------------------------------------------- */

orr_status orr_lzop_recover(const char *path, orr_lzop_recovery *out, orr_buf *offsets,
                            orr_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!path || !*path)
        return orr_err_set(err, ORR_EINVAL, "path", "no file name given");
    orr_status s = lzop__init(err);
    if (s != ORR_OK)
        return s;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return orr_err_set(err, ORR_EIO, "file", "open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        s = orr_err_set(err, ORR_EINVAL, "file", "%s is not a regular file", path);
        close(fd);
        return s;
    }
    out->file_size = (uint64_t)st.st_size;

    orr_lzop_reader *r = orr_xcalloc(1, sizeof(*r));
    r->fd = fd;
    r->own_fd = 1;
    r->label = orr_xstrdup(path);
    r->limit = out->file_size;
    r->ibuf = orr_xmalloc(LZOP__READ_BUF);
    orr_err e;
    orr_err_clear(&e);
    s = rd__header(r, &e);
    if (s != ORR_OK) {
        if (r->short_input && !r->io_error) {
            /* cut inside the header: nothing decodable */
            out->trailing = out->file_size;
            s = ORR_OK;
        } else if (err) {
            *err = e;
        }
        goto done;
    }
    out->header_size = r->h.size;
    out->header_flags = r->h.flags;
    out->good_end = r->h.size;
    for (;;) {
        const uint8_t *p;
        size_t n;
        uint64_t boff = r->off;
        s = rd__block(r, &p, &n, &e);
        if (s == ORR_EOF) {
            out->complete = 1;
            out->trailing = out->file_size - r->off;
            s = ORR_OK;
            break;
        }
        if (s != ORR_OK) {
            if (r->io_error) {
                if (err)
                    *err = e;
                break;
            }
            /* cut short or damaged: the file is good up to the last whole block */
            out->trailing = out->file_size - out->good_end;
            s = ORR_OK;
            break;
        }
        if (offsets)
            orr_buf_append(offsets, &boff, sizeof(boff));
        out->blocks++;
        out->bytes += n;
        out->good_end = r->off;
    }
done:
    orr_lzop_reader_close(r);
    return s;
}
