/*
 * ex_progress_line.c - wormhole's progress line read back (see
 * ex_progress.h): key=value pairs after "wormhole progress:".
 */
#include <stdlib.h>
#include <string.h>

#include "ex_progress.h"

#define EX_PROGRESS_TAG "wormhole progress:"

static int key_is(const char *k, size_t kn, const char *want)
{
    return strlen(want) == kn && memcmp(k, want, kn) == 0;
}

int ex_progress_parse(const char *line, size_t n, ex_progress_pt *out)
{
    size_t tag = sizeof EX_PROGRESS_TAG - 1;
    memset(out, 0, sizeof *out);
    out->eta_s = -1;
    if (n < tag || memcmp(line, EX_PROGRESS_TAG, tag) != 0)
        return 0;
    int have_rows = 0;
    size_t i = tag;
    while (i < n) {
        while (i < n && line[i] == ' ')
            i++;
        size_t k = i;
        while (i < n && line[i] != '=' && line[i] != ' ')
            i++;
        if (i >= n || line[i] != '=')
            continue;
        size_t kn = i - k;
        size_t v = ++i;
        while (i < n && line[i] != ' ')
            i++;
        char val[64];
        size_t vn = i - v < sizeof val - 1 ? i - v : sizeof val - 1;
        memcpy(val, line + v, vn);
        val[vn] = 0;
        char *end;
        double d = strtod(val, &end);
        if (end == val || *end)
            continue; /* "waiting=reader" and anything not a number */
        const char *key = line + k;
        if (key_is(key, kn, "rows_read")) {
            out->rows_read = (int64_t)d;
            have_rows = 1;
        } else if (key_is(key, kn, "rows_written"))
            out->rows_written = (int64_t)d;
        else if (key_is(key, kn, "dirty"))
            out->dirty_rows = (int64_t)d;
        else if (key_is(key, kn, "mb"))
            out->bytes_read = (int64_t)(d * 1048576.0);
        else if (key_is(key, kn, "rows_per_sec"))
            out->rows_per_sec = d;
        else if (key_is(key, kn, "shards_done"))
            out->shards_done = (int64_t)d;
        else if (key_is(key, kn, "shards_total"))
            out->shards_total = (int64_t)d;
        else if (key_is(key, kn, "rows_estimate"))
            out->rows_estimate = (int64_t)d;
        else if (key_is(key, kn, "elapsed_s"))
            out->elapsed_s = d;
        else if (key_is(key, kn, "eta_s"))
            out->eta_s = d;
    }
    if (out->rows_read < 0 || out->rows_written < 0 || out->dirty_rows < 0 || out->bytes_read < 0 ||
        out->shards_done < 0 || out->shards_total < 0 || out->rows_estimate < 0 ||
        !(out->rows_per_sec >= 0) || !(out->elapsed_s >= 0) || !(out->eta_s >= -1))
        return 0;
    return have_rows;
}

int ex_progress_scan(const char *buf, size_t n, ex_progress_pt *out)
{
    size_t end = n;
    /* Only complete lines: drop a last line still being written. */
    while (end > 0 && buf[end - 1] != '\n')
        end--;
    while (end > 0) {
        size_t e = end - 1; /* the newline */
        size_t s = e;
        while (s > 0 && buf[s - 1] != '\n')
            s--;
        if (ex_progress_parse(buf + s, e - s, out))
            return 1;
        end = s;
    }
    return 0;
}
