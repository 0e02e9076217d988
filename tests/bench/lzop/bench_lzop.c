/*
 * bench_lzop.c - compress one file to .lzo with Orrery's lzop writer and say
 * how fast it went.
 *
 *   bench_lzop IN OUT [--index] [--chunk BYTES]
 *
 * Reads IN with read(2) in chunks (default 1 MiB, like a caller that gets
 * records in batches), writes OUT (and OUT.index with --index) and prints one
 * logfmt line: bytes in/out, blocks, stored blocks, seconds, MB/s (10^6
 * bytes of input per second). Exit 0 on success, 1 on failure, 2 on usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orr_lzop.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    unsigned flags = 0;
    size_t chunk = 1024 * 1024;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--index") == 0) {
            flags |= ORR_LZOP_WITH_INDEX;
        } else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc) {
            chunk = strtoul(argv[++i], NULL, 10);
        } else if (!in) {
            in = argv[i];
        } else if (!out) {
            out = argv[i];
        } else {
            in = NULL;
            break;
        }
    }
    if (!in || !out || chunk == 0 || chunk > (256u << 20)) {
        fprintf(stderr, "usage: bench_lzop IN OUT [--index] [--chunk BYTES]\n");
        return 2;
    }
    int fd = open(in, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "open %s: %s\n", in, strerror(errno));
        return 1;
    }
    char *buf = malloc(chunk);
    if (!buf)
        return 1;
    orr_lzop_opts o = {.name = in, .mtime = (int64_t)time(NULL), .flags = flags};
    orr_lzop_writer *w = NULL;
    orr_err err;
    orr_lzop_stats st;
    int rc = 1;
    double t0 = now_s();
    if (orr_lzop_writer_open(out, &o, &w, &err) != ORR_OK)
        goto fail;
    for (;;) {
        ssize_t k = read(fd, buf, chunk);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            fprintf(stderr, "read %s: %s\n", in, strerror(errno));
            orr_lzop_writer_abort(w);
            goto done;
        }
        if (k == 0)
            break;
        if (orr_lzop_write(w, buf, (size_t)k, &err) != ORR_OK) {
            orr_lzop_writer_abort(w);
            goto fail;
        }
    }
    if (orr_lzop_writer_close(w, &st, &err) != ORR_OK)
        goto fail;
    double secs = now_s() - t0;
    printf("bytes_in=%llu bytes_out=%llu blocks=%llu stored_blocks=%llu seconds=%.3f "
           "mb_per_s=%.1f ratio=%.3f\n",
           (unsigned long long)st.bytes_in, (unsigned long long)st.bytes_out,
           (unsigned long long)st.blocks, (unsigned long long)st.stored_blocks, secs,
           (double)st.bytes_in / 1e6 / (secs > 0 ? secs : 1e-9),
           st.bytes_in ? (double)st.bytes_out / (double)st.bytes_in : 0.0);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "bench_lzop: %s: %s\n", err.field, err.msg);
done:
    free(buf);
    close(fd);
    return rc;
}
