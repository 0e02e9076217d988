/*
 * fuzz_wh_dirty.c - a reject line must be one valid JSON object on one line
 * whatever the bytes of the row, and must give back every field byte for
 * byte (through "fields_hex" where a field is not valid UTF-8).
 *
 * Input: byte 0 picks raw (odd) or fields (even); the rest is split into
 * fields at each 0x1f byte; a field that is exactly "\x1e" is NULL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_buf.h"
#include "orr_json.h"
#include "wh_dirty.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX 32

static size_t fz_unhex(const char *h, char *out)
{
    size_t n = strlen(h) / 2;
    for (size_t k = 0; k < n; k++) {
        unsigned v = 0;
        if (sscanf(h + 2 * k, "%2x", &v) != 1)
            abort();
        out[k] = (char)v;
    }
    return n;
}

/* The bytes the line holds for one value: its hex when present, else its text. */
static void fz_same(json_t *text, json_t *hex, const char *want, size_t n)
{
    char *got = malloc(n + 1);
    size_t k;
    if (hex) {
        if (strlen(json_string_value(hex)) != 2 * n)
            abort();
        k = fz_unhex(json_string_value(hex), got);
    } else {
        if (!json_is_string(text) || !wh_utf8_valid(want, n))
            abort();
        k = json_string_length(text);
        if (k != n)
            abort();
        memcpy(got, json_string_value(text), k);
    }
    if (k != n || memcmp(got, want, n) != 0)
        abort();
    free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    json_t *line;
    const char *vals[FZ_MAX];
    int64_t lens[FZ_MAX];
    size_t nf = 0;
    if (data[0] & 1) {
        line = wh_dirty_line("reader", 1, 2, "bad record", NULL, NULL, 0, p, n);
    } else {
        size_t start = 0;
        for (size_t i = 0; i <= n && nf < FZ_MAX; i++) {
            if (i < n && p[i] != 0x1f)
                continue;
            vals[nf] = p + start;
            lens[nf] = (int64_t)(i - start);
            if (lens[nf] == 1 && p[start] == 0x1e)
                lens[nf] = -1;
            nf++;
            start = i + 1;
        }
        char reason[64];
        snprintf(reason, sizeof(reason), "column %.20s", n ? p : "");
        line = wh_dirty_line("pg#0", 0, 3, reason, vals, lens, nf, NULL, 0);
    }
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(line, &b);
    json_decref(line);
    if (memchr(b.data, '\n', b.len))
        abort();
    json_error_t je;
    json_t *back = json_loadb(b.data, b.len, JSON_ALLOW_NUL, &je);
    if (!back || !json_is_object(back))
        abort();
    if (data[0] & 1) {
        fz_same(json_object_get(back, "raw"), json_object_get(back, "raw_hex"), p, n);
    } else {
        json_t *fields = json_object_get(back, "fields"),
               *hex = json_object_get(back, "fields_hex");
        if (json_array_size(fields) != nf)
            abort();
        for (size_t i = 0; i < nf; i++) {
            json_t *f = json_array_get(fields, i);
            if (lens[i] < 0) {
                if (!json_is_null(f))
                    abort();
                continue;
            }
            char key[24];
            snprintf(key, sizeof(key), "%zu", i);
            fz_same(f, json_object_get(hex, key), vals[i], (size_t)lens[i]);
        }
    }
    json_decref(back);
    orr_buf_free(&b);
    return 0;
}
