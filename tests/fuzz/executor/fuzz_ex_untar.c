/*
 * fuzz_ex_untar.c - the code-package unpacker on arbitrary bytes: any input
 * is refused or unpacked inside the scratch folder, never written outside
 * it (nothing but the archive and that folder appears in the scratch root),
 * never a crash. zlib reads plain tar as well as gzip, so the fuzzer
 * reaches the tar layer directly.
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ex_untar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char root[] = "/tmp/orr-fuzz-untar-XXXXXX";
    if (!mkdtemp(root))
        return 0;
    char arch[64], dir[64];
    snprintf(arch, sizeof arch, "%s/a.tar", root);
    snprintf(dir, sizeof dir, "%s/d", root);
    FILE *f = fopen(arch, "wb");
    if (f && mkdir(dir, 0755) == 0 && fwrite(data, 1, size, f) == size && fclose(f) == 0) {
        f = NULL;
        orr_err err;
        orr_err_clear(&err);
        (void)ex_untar(arch, dir, 1 << 20, 64, &err);
    }
    if (f)
        fclose(f);
    /* Nothing may appear next to d/ and a.tar, whatever its name. */
    DIR *top = opendir(root);
    struct dirent *de;
    while (top && (de = readdir(top))) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
            strcmp(de->d_name, "a.tar") != 0 && strcmp(de->d_name, "d") != 0)
            abort();
    }
    if (top)
        closedir(top);
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
