/*
 * hl_page.c - page sizes and opaque keyset page tokens (see hl_page.h).
 *
 * Token text before encoding: "<list>\n<key1>\n<key2>..." (keys cannot hold
 * a newline), encoded as unpadded base64url so it travels in URLs as is.
 */
#include "hl_page.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "orr_buf.h"

#define HL_PAGE_TOKEN_MAX 2048 /* decoded bytes */

orr_status hl_page_size(int32_t v, const char *field, int def, int max, int *out, orr_err *err)
{
    if (v < 0)
        return orr_err_set(err, ORR_EINVAL, field, "must be >= 0 (0 = %d, at most %d)", def, max);
    *out = v == 0 ? def : v > max ? max : (int)v;
    return ORR_OK;
}

orr_status hl_page_limit(int32_t limit, int *out, orr_err *err)
{
    return hl_page_size(limit, "limit", HL_PAGE_DEFAULT, HL_PAGE_MAX, out, err);
}

orr_status hl_page_begin(orr_arena *a, const char *list, const char *kinds, int32_t page_size,
                         const char *token, int def, hl_page *pg, orr_err *err)
{
    return hl_page_begin_limit(a, list, kinds, page_size, 0, HL_PAGE_MAX, token, def, pg, err);
}

orr_status hl_page_begin_limit(orr_arena *a, const char *list, const char *kinds, int32_t page_size,
                               int32_t limit, int limit_max, const char *token, int def,
                               hl_page *pg, orr_err *err)
{
    pg->size = def;
    pg->have = 0;
    pg->list = list;
    pg->kinds = kinds;
    for (size_t i = 0; i < HL_PAGE_MAX_KEYS; i++)
        pg->keys[i] = "";
    orr_status s = page_size || !limit
                       ? hl_page_size(page_size, "page_size", def, HL_PAGE_MAX, &pg->size, err)
                       : hl_page_size(limit, "limit", def, limit_max, &pg->size, err);
    if (s != ORR_OK)
        return s;
    return hl_page_parse(a, list, kinds, token, pg->keys, &pg->have, err);
}

static int hl__page_key_ok(char kind, const char *k, size_t n)
{
    if (kind == 'i') {
        if (n == 0 || n > 20)
            return 0;
        char buf[24];
        memcpy(buf, k, n);
        buf[n] = 0;
        char *end;
        errno = 0;
        long long v = strtoll(buf, &end, 10);
        (void)v;
        return errno == 0 && *end == 0 && (buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9'));
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x20 || (unsigned char)k[i] > 0x7e)
            return 0;
    return kind == 's';
}

orr_status hl_page_parse(orr_arena *a, const char *list, const char *kinds, const char *token,
                         const char **keys, int *have, orr_err *err)
{
    size_t nk = strlen(kinds);
    *have = 0;
    for (size_t i = 0; i < nk; i++)
        keys[i] = kinds[i] == 'i' ? "0" : "";
    if (!token || !token[0])
        return ORR_OK;
    size_t tl = strlen(token);
    unsigned char *raw = orr_arena_alloc(a, HL_PAGE_TOKEN_MAX + 1);
    size_t n = 0;
    const char *end = NULL;
    if (tl > HL_PAGE_TOKEN_MAX * 2 ||
        sodium_base642bin(raw, HL_PAGE_TOKEN_MAX, token, tl, NULL, &n, &end,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        end != token + tl)
        goto bad;
    raw[n] = 0;
    if (memchr(raw, 0, n))
        goto bad;
    char *p = (char *)raw;
    size_t ll = strlen(list);
    if (strncmp(p, list, ll) != 0 || p[ll] != '\n')
        goto bad;
    p += ll + 1;
    for (size_t i = 0; i < nk; i++) {
        char *nl = strchr(p, '\n');
        size_t kl = nl ? (size_t)(nl - p) : strlen(p);
        if ((i + 1 < nk) != (nl != NULL) || !hl__page_key_ok(kinds[i], p, kl))
            goto bad;
        char *k = orr_arena_alloc(a, kl + 1);
        memcpy(k, p, kl);
        k[kl] = 0;
        keys[i] = k;
        p += kl + (nl ? 1 : 0);
    }
    *have = 1;
    return ORR_OK;
bad:
    for (size_t i = 0; i < nk; i++)
        keys[i] = kinds[i] == 'i' ? "0" : "";
    return orr_err_set(err, ORR_EINVAL, "page_token",
                       "not a next_page_token of this list (and order)");
}

char *hl_page_next(orr_arena *a, const hl_page *pg, const char *const *keys)
{
    return (char *)hl_page_make(a, pg->list, pg->kinds, keys);
}

const char *hl_page_make(orr_arena *a, const char *list, const char *kinds, const char *const *keys)
{
    orr_buf b = ORR_BUF_INIT;
    orr_buf_appendf(&b, "%s", list);
    for (size_t i = 0; kinds[i]; i++)
        orr_buf_appendf(&b, "\n%s", keys[i]);
    size_t need = sodium_base64_ENCODED_LEN(b.len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *out = orr_arena_alloc(a, need);
    sodium_bin2base64(out, need, (const unsigned char *)orr_buf_cstr(&b), b.len,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    orr_buf_free(&b);
    return out;
}
