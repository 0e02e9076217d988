/*
 * floor.c - the parts of sortd's work that no sort engine can skip, timed
 * alone in CPU seconds (user + system, getrusage), to set a floor beside
 * tests/bench/sort/run.sh:
 *   read   read(2) the input files in 1 MiB pieces and frame lines (memchr)
 *   lzo    the same, and compress the bytes in 256 KiB blocks with
 *          LZO1X-1(15) (what lzop -1 and sortd use), no checksum, no output
 *   tree   create what 1,000 landed units hold: business/iface/label folders
 *          (250 x 4), and per unit a data file, its index and a _CHECK, each
 *          written under a temporary name in a work folder and renamed in
 *          (as sortd lands them), with OUT as the root; no fsync
 * Usage: floor read|lzo|lzo1 FILE... ; floor tree OUT
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <lzo/lzo1x.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    double t0 = cpu_s();
    unsigned long long bytes = 0, lines = 0, out = 0;
    if (strcmp(argv[1], "tree") == 0) {
        char p[4096], q[4096];
        snprintf(p, sizeof p, "%s/work", argv[2]);
        mkdir(argv[2], 0755);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/bench", argv[2]);
        mkdir(p, 0755);
        for (int i = 0; i < 250; i++) {
            snprintf(p, sizeof p, "%s/bench/if%d", argv[2], i);
            mkdir(p, 0755);
            for (int h = 0; h < 4; h++) {
                snprintf(p, sizeof p, "%s/bench/if%d/202405010%d", argv[2], i, h);
                mkdir(p, 0755);
                static const char *names[] = {"part-0.lzo", "part-0.lzo.index", "_CHECK"};
                for (int k = 0; k < 3; k++) {
                    snprintf(q, sizeof q, "%s/work/w-%d-%d-%d", argv[2], i, h, k);
                    int fd = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                    if (fd < 0 || write(fd, "x", 1) != 1 || close(fd) != 0)
                        return 1;
                    snprintf(p, sizeof p, "%s/bench/if%d/202405010%d/%s", argv[2], i, h, names[k]);
                    if (rename(q, p) != 0)
                        return 1;
                    lines++;
                }
            }
        }
        printf("tree   %llu files, 1251 folders: CPU %.3f s\n", lines, cpu_s() - t0);
        return 0;
    }
    int lzo1 = strcmp(argv[1], "lzo1") == 0;
    int lzo = lzo1 || strcmp(argv[1], "lzo") == 0;
    if (lzo_init() != LZO_E_OK)
        return 1;
    enum { RD = 1 << 20, BS = 256 * 1024 };
    char *buf = malloc(RD);
    unsigned char *blk = malloc(BS), *cout = malloc(BS + BS / 16 + 64 + 3);
    void *wrk = malloc(LZO1X_1_15_MEM_COMPRESS > LZO1X_1_MEM_COMPRESS ? LZO1X_1_15_MEM_COMPRESS
                                                                      : LZO1X_1_MEM_COMPRESS);
    size_t bl = 0;
    for (int a = 2; a < argc; a++) {
        int fd = open(argv[a], O_RDONLY);
        if (fd < 0)
            return 1;
        ssize_t n;
        while ((n = read(fd, buf, RD)) > 0) {
            bytes += (unsigned long long)n;
            for (const char *s = buf, *e = buf + n; (s = memchr(s, '\n', (size_t)(e - s))); s++)
                lines++;
            for (size_t o = 0; lzo && o < (size_t)n;) {
                size_t k = (size_t)n - o < BS - bl ? (size_t)n - o : BS - bl;
                memcpy(blk + bl, buf + o, k);
                bl += k;
                o += k;
                if (bl == BS) {
                    lzo_uint cl;
                    if (lzo1)
                        lzo1x_1_compress(blk, bl, cout, &cl, wrk);
                    else
                        lzo1x_1_15_compress(blk, bl, cout, &cl, wrk);
                    out += cl;
                    bl = 0;
                }
            }
        }
        close(fd);
    }
    printf("%-6s %llu bytes, %llu lines, %llu compressed: CPU %.3f s\n", argv[1], bytes, lines, out,
           cpu_s() - t0);
    return 0;
}
