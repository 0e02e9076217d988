/*
 * fuzz_driver.c - runs a libFuzzer target over files, without libFuzzer.
 *
 * Every fuzz target defines LLVMFuzzerTestOneInput(). In the normal and the
 * sanitizer builds this driver links to it and replays each file (or each
 * file in each folder) named on the command line, so the seed corpus of every
 * target runs as a ctest test. With -DORR_FUZZ=ON (clang) the same target is
 * linked with -fsanitize=fuzzer instead, for real fuzzing:
 *   build-fuzz/bin/fuzz_cron tests/fuzz/kepler/corpus_cron -max_total_time=60
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            cap *= 2;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (!buf)
        return 1;
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "cannot stat %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= fuzz_run_file(argv[i]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            bad |= fuzz_run_file(path);
            files++;
        }
        if (d)
            closedir(d);
    }
    printf("replayed %d inputs\n", files);
    return bad || files == 0;
}
