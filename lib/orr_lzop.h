/*
 * orr_lzop.h - lzop files: a streaming writer, a streaming reader and crash
 * recovery, on liblzo2's LZO1X block codecs.
 *
 * The sort engine lands every data unit as an lzop file (readable by
 * `lzop -d` and by hadoop-lzo, with a `<file>.index` so Hadoop can split it);
 * the transfer engine reads and writes `.lzo` files with the same code.
 *
 * File layout (every integer big-endian):
 *
 *   magic    89 4C 5A 4F 00 0D 0A 1A 0A
 *   header   version u16, library version u16, version needed u16,
 *            method u8, level u8, flags u32, mode u32, mtime u32,
 *            mtime high u32, name length u8, name, checksum u32
 *            (Adler-32 of the header after the magic)
 *   blocks   uncompressed length u32 (0 = end of file), compressed length
 *            u32, Adler-32 of the uncompressed bytes, [Adler-32 of the
 *            compressed bytes, only when the block is compressed and the
 *            flag asks for it], data
 *   end      u32 0
 *
 * A block whose compressed form is not shorter than its input is stored as
 * is (compressed length == uncompressed length). The writer cuts the input
 * into 256 KiB blocks and compresses each with LZO1X-1(15) (as `lzop -1`); readers accept any
 * LZO1X method lzop writes (LZO1X-1, LZO1X-1(15), LZO1X-999), blocks up to
 * lzop's 64 MiB limit, and the CRC-32 variants of the checksums.
 *
 * The index (`<file>.index`, hadoop-lzo's format) holds one u64 big-endian
 * file offset per block: the offset of the block's uncompressed-length field.
 *
 * Call order:
 *   writer: open | resume -> write* -> [flush] -> close   (close always frees)
 *   reader: open -> read* until ORR_EOF -> close
 *   recover: one call on a file that may have been cut short; resume opens
 *   a writer that continues such a file after its last whole block.
 *
 * Errors: bad arguments and malformed headers or block fields give
 * ORR_EINVAL naming the field and the file offset; a short file, a checksum
 * that does not match, undecodable data or a failed read/write give ORR_EIO
 * with the file's name and offset. Nothing here aborts on bad input, and the
 * reader never reads outside its buffers. Writers and readers are not
 * thread-safe: one per thread.
 */
#ifndef ORR_LZOP_H
#define ORR_LZOP_H

#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"

#define ORR_LZOP_BLOCK_SIZE (256u * 1024u)        /* input bytes per block written */
#define ORR_LZOP_MAX_BLOCK  (64u * 1024u * 1024u) /* largest block a reader accepts */

/* Header values the writer stores (hadoop-lzo refuses a version needed above
 * 0x1010), and the newest version needed the reader accepts (lzop 1.04's). */
#define ORR_LZOP_VERSION        0x1010 /* the lzop version hadoop-lzo emulates */
#define ORR_LZOP_LIB_VERSION    0x2050 /* older readers refuse newer values */
#define ORR_LZOP_VERSION_NEEDED 0x0940
#define ORR_LZOP_READ_VERSION   0x1040 /* newest "version needed" we can read */

/* Methods (header byte). */
#define ORR_LZOP_M_LZO1X_1    1
#define ORR_LZOP_M_LZO1X_1_15 2
#define ORR_LZOP_M_LZO1X_999  3

/* Header flag bits (the lzop format's own values). */
#define ORR_LZOP_F_ADLER32_D 0x00000001u
#define ORR_LZOP_F_ADLER32_C 0x00000002u
#define ORR_LZOP_F_H_EXTRA   0x00000040u
#define ORR_LZOP_F_CRC32_D   0x00000100u
#define ORR_LZOP_F_CRC32_C   0x00000200u
#define ORR_LZOP_F_MULTIPART 0x00000400u
#define ORR_LZOP_F_H_FILTER  0x00000800u
#define ORR_LZOP_F_H_CRC32   0x00001000u
#define ORR_LZOP_F_RESERVED  0x000FC000u
#define ORR_LZOP_F_OS_UNIX   0x03000000u

/* ---- writer ----------------------------------------------------------- */

/* What a scan of a file that may have been cut short found (orr_lzop_recover). */
typedef struct orr_lzop_recovery {
    uint64_t file_size;    /* bytes in the file */
    uint64_t header_size;  /* 0 when the header itself was cut short */
    uint32_t header_flags; /* the header's flags (when header_size > 0) */
    uint64_t good_end;     /* offset just past the last whole, verified block
                              (header_size if none; 0 without a header) */
    uint64_t blocks;       /* whole, verified blocks before good_end */
    uint64_t bytes;        /* decoded bytes in those blocks */
    int complete;          /* 1 if the terminator follows at good_end */
    uint64_t trailing;     /* bytes after the terminator, or after good_end when
                              the file is cut short or its tail is damaged */
} orr_lzop_recovery;

/* Writer option bits. */
enum {
    ORR_LZOP_WITH_INDEX = 1 << 0, /* also write the hadoop-lzo index */
    ORR_LZOP_ADLER_C = 1 << 1,    /* also checksum the compressed bytes */
    ORR_LZOP_FSYNC = 1 << 2,      /* fsync the file (and index) on close */
};

/*
 * Shared compression scratch: the LZO work memory and the output buffer for
 * one compressed block (about 420 KiB). A writer opened with a scratch in its
 * options allocates neither: it keeps only its pending input, in a buffer
 * that grows with what is pending up to the block size, and writes each block
 * to its file as soon as it is compressed (nothing stays in the scratch
 * between calls). So many writers can be open at once for little memory,
 * e.g. one per data unit, all fed by one thread.
 *
 * Not thread-safe: every writer using a scratch must be called from the same
 * thread (or under the caller's lock). The scratch must outlive its writers.
 */
typedef struct orr_lzop_scratch orr_lzop_scratch;

/* A new scratch (aborts if memory runs out, as every allocation here). The
 * scratch also keeps up to 32 MiB of block buffers (of 64 KiB or more) of closed
 * writers and hands them to writers whose pending input grows that far,
 * instead of freeing and allocating them again. */
orr_lzop_scratch *orr_lzop_scratch_new(void);

/* How many times a writer took a kept block buffer (for tests). */
uint64_t orr_lzop_scratch_reused(const orr_lzop_scratch *s);
/* Free it. NULL is a no-op. */
void orr_lzop_scratch_free(orr_lzop_scratch *s);

#define ORR_LZOP_MIN_BLOCK 4096u /* smallest block_size option */

typedef struct orr_lzop_opts {
    const char *name;          /* name stored in the header (<= 255 bytes); NULL = "" */
    int64_t mtime;             /* seconds since the epoch stored in the header */
    uint32_t mode;             /* stored file mode; 0 = 0100644 */
    unsigned flags;            /* ORR_LZOP_WITH_INDEX | ORR_LZOP_ADLER_C | ORR_LZOP_FSYNC */
    int index_fd;              /* fd mode with ORR_LZOP_WITH_INDEX: where the index goes
                                  (the caller keeps it open and closes it) */
    orr_lzop_scratch *scratch; /* NULL: the writer has its own buffers (about
                                  630 KiB); else shared (see above) */
    uint32_t block_size;       /* input bytes per block: 0 = ORR_LZOP_BLOCK_SIZE, else
                                  ORR_LZOP_MIN_BLOCK..ORR_LZOP_BLOCK_SIZE (ORR_EINVAL,
                                  field "block_size", otherwise). Smaller blocks
                                  bound the memory of a shared-scratch writer; the
                                  file format is the same. */
} orr_lzop_opts;

typedef struct orr_lzop_stats {
    uint64_t bytes_in;      /* uncompressed bytes written */
    uint64_t bytes_out;     /* file bytes: header, blocks and terminator */
    uint64_t blocks;        /* data blocks */
    uint64_t stored_blocks; /* of which stored uncompressed */
} orr_lzop_stats;

typedef struct orr_lzop_writer orr_lzop_writer;

/* Create (or truncate) path, mode 0644, and write the header. With
 * ORR_LZOP_WITH_INDEX the index goes to "<path>.index", written on close.
 * opts may be NULL (defaults). On failure *out is NULL and err says why
 * (ORR_EIO with the path, ORR_EINVAL for a bad option). */
orr_status orr_lzop_writer_open(const char *path, const orr_lzop_opts *opts, orr_lzop_writer **out,
                                orr_err *err);

/* Same on an open fd, written from its current position; the writer does not
 * close fd. label names the destination in errors (NULL = "fd"). Offsets in
 * the index are relative to the start of the lzop data. */
orr_status orr_lzop_writer_open_fd(int fd, const char *label, const orr_lzop_opts *opts,
                                   orr_lzop_writer **out, orr_err *err);

/* Continue a file that was cut short (a crash while writing): recover it
 * (see orr_lzop_recover), truncate it after its last whole block and write
 * on from there, keeping its header. recovered (may be NULL) gets what the
 * scan found: the caller resumes its input at recovered->bytes. A file
 * without a usable header is started again (recovered->bytes == 0). The
 * index and the stats cover the whole file (stored_blocks only the new
 * part). ORR_EINVAL (field "flags") for a file with CRC-32 block checksums,
 * which this writer does not produce; ORR_EINVAL/ORR_EIO as for recover. */
orr_status orr_lzop_writer_resume(const char *path, const orr_lzop_opts *opts,
                                  orr_lzop_recovery *recovered, orr_lzop_writer **out,
                                  orr_err *err);

/* Append len bytes. Full blocks are compressed and written as they fill.
 * Any failure (ORR_EIO with the path, e.g. disk full) is sticky: later calls
 * return it again. Blocks while the kernel takes the bytes. */
orr_status orr_lzop_write(orr_lzop_writer *w, const void *data, size_t len, orr_err *err);

/* orr_lzop_write of len bytes and then the one byte term (a text record and
 * its newline) in one call: the same bytes, without a second call and copy
 * for the terminator when both fit in the pending block. */
orr_status orr_lzop_write_rec(orr_lzop_writer *w, const void *data, size_t len, char term,
                              orr_err *err);

/* End the current (partial) block now and hand every buffered byte to the
 * kernel, so the file on disk ends at a block boundary. */
orr_status orr_lzop_writer_flush(orr_lzop_writer *w, orr_err *err);

/* Write the last block and the terminator, the index if asked, fsync if
 * asked, close what the writer opened and free w (always, even on error).
 * stats (may be NULL) receives the totals. NULL w is a no-op returning OK. */
orr_status orr_lzop_writer_close(orr_lzop_writer *w, orr_lzop_stats *stats, orr_err *err);

/* Drop the writer without finishing the file (an error path). Frees w. */
void orr_lzop_writer_abort(orr_lzop_writer *w);

/* ---- reader ----------------------------------------------------------- */

typedef struct orr_lzop_header {
    uint16_t version, lib_version, version_needed;
    uint8_t method, level;
    uint32_t flags, mode;
    int64_t mtime;
    char name[256];
    uint64_t size; /* header bytes, magic included: offset of the first block */
} orr_lzop_header;

typedef struct orr_lzop_reader orr_lzop_reader;

/* Open path and parse its header (checked: magic, checksum, version needed,
 * method, flags). On failure *out is NULL. Free with orr_lzop_reader_close. */
orr_status orr_lzop_reader_open(const char *path, orr_lzop_reader **out, orr_err *err);

/* Same on an fd read from its current position; the reader does not close it. */
orr_status orr_lzop_reader_open_fd(int fd, const char *label, orr_lzop_reader **out, orr_err *err);

/* Same on bytes in memory (not copied: they must outlive the reader). */
orr_status orr_lzop_reader_open_mem(const void *data, size_t len, const char *label,
                                    orr_lzop_reader **out, orr_err *err);

const orr_lzop_header *orr_lzop_reader_header(const orr_lzop_reader *r);

/* Copy up to cap decoded bytes into buf; *n gets the count (> 0 with ORR_OK).
 * ORR_EOF with *n == 0 after the terminator. Errors are sticky. */
orr_status orr_lzop_read(orr_lzop_reader *r, void *buf, size_t cap, size_t *n, orr_err *err);

/* The next whole decoded block, without a copy: *data stays valid until the
 * next read call or close. ORR_EOF after the terminator. Do not mix with
 * orr_lzop_read in the middle of a block. */
orr_status orr_lzop_read_block(orr_lzop_reader *r, const void **data, size_t *len, orr_err *err);

/* Free the reader (closes the fd only if the reader opened it). NULL is ok. */
void orr_lzop_reader_close(orr_lzop_reader *r);

/* ---- recovery --------------------------------------------------------- */

/* Scan a file that may have been cut short (a crash while writing), decoding
 * and verifying every block. Returns ORR_OK with the last whole block
 * boundary in out->good_end: truncating the file there and appending a
 * terminator gives a valid file holding out->bytes decoded bytes. A file
 * whose existing header is not an lzop header gives ORR_EINVAL; an unreadable
 * file ORR_EIO. offsets (may be NULL) gets the u64 offsets of the whole
 * blocks appended in host order (the index of the recovered part). */
orr_status orr_lzop_recover(const char *path, orr_lzop_recovery *out, orr_buf *offsets,
                            orr_err *err);

/* ---- checksum --------------------------------------------------------- */

/* Adler-32 of n bytes continuing from adler (start with 1), as lzop stores
 * it; vectorised where the CPU allows. */
uint32_t orr_lzop_adler32(uint32_t adler, const void *data, size_t n);
/* The same without vector instructions (internal; for tests). */
uint32_t orr_lzop__adler32_portable(uint32_t adler, const void *data, size_t n);

#endif
