/*
 * hl_page.h - the one paging helper of halleyd's List calls.
 *
 * Every list that can grow takes page_size and page_token and answers
 * next_page_token ("" on the last page). page_size: 0 = the list's default,
 * above HL_PAGE_MAX = HL_PAGE_MAX (clamped, not refused), negative = refused.
 * A page token is opaque to clients: base64url of the list's name and the
 * keyset position (the sort key of the last row shown), so a token is only
 * accepted by the list (and order) that made it, and a page never skips or
 * repeats a row however rows are added meanwhile.
 *
 * Legal order per call: hl_page_begin (the keys feed the query, which
 * fetches size + 1 rows), then hl_page_next from the last row shown when more
 * rows came than the page holds; the list's name and kinds are given once.
 * Lists that are not paged but bounded take their "limit" through
 * hl_page_limit.
 */
#ifndef HL_PAGE_H
#define HL_PAGE_H

#include <stdint.h>

#include "orr_arena.h"
#include "orr_status.h"

#define HL_PAGE_MAX      1000
#define HL_PAGE_DEFAULT  100
#define HL_PAGE_MAX_KEYS 4

/* The rows to return for a requested size v (the request's field named
 * field): def when 0, max when above max; ORR_EINVAL naming field when
 * negative. *out is 1..max. */
orr_status hl_page_size(int32_t v, const char *field, int def, int max, int *out, orr_err *err);

/* Read token (a next_page_token of the list named list) into keys[0..n),
 * strings in arena a. kinds has one letter per key: 'i' an int64 in decimal,
 * 's' printable ASCII text. "" means the first page: returns ORR_OK with
 * *have = 0 and every key "" ('s') or "0" ('i'). Anything else that is not a
 * token of this list with these kinds: ORR_EINVAL, field "page_token". */
orr_status hl_page_parse(orr_arena *a, const char *list, const char *kinds, const char *token,
                         const char **keys, int *have, orr_err *err);

/* The "limit" of a list that is bounded but not paged: hl_page_size of
 * limit, field "limit", HL_PAGE_DEFAULT when 0, at most HL_PAGE_MAX. */
orr_status hl_page_limit(int32_t limit, int *out, orr_err *err);

/* A paged List call's request as read by hl_page_begin. */
typedef struct hl_page {
    int size;                           /* rows to show, 1..HL_PAGE_MAX */
    int have;                           /* 1 if page_token gave a position */
    const char *keys[HL_PAGE_MAX_KEYS]; /* the position (hl_page_parse) */
    const char *list, *kinds;           /* as given to hl_page_begin */
} hl_page;

/* The opening of every paged List call: hl_page_size of page_size (field
 * "page_size", def when 0, at most HL_PAGE_MAX), then hl_page_parse of token
 * for list with kinds (at most HL_PAGE_MAX_KEYS). The first error is
 * returned; *pg is filled either way. */
orr_status hl_page_begin(orr_arena *a, const char *list, const char *kinds, int32_t page_size,
                         const char *token, int def, hl_page *pg, orr_err *err);

/* hl_page_begin for a list whose request still carries limit, the
 * deprecated name of page_size: when page_size is 0 and limit is not, the
 * size comes from limit (field "limit", def when 0, at most limit_max). */
orr_status hl_page_begin_limit(orr_arena *a, const char *list, const char *kinds, int32_t page_size,
                               int32_t limit, int limit_max, const char *token, int def,
                               hl_page *pg, orr_err *err);

/* The next_page_token of pg's list at position keys (one per kind): the
 * sort key of the last row shown, when more rows came than pg->size. */
char *hl_page_next(orr_arena *a, const hl_page *pg, const char *const *keys);

/* The token of the position keys[0..strlen(kinds)) of list, in arena a.
 * Keys are decimal text for 'i', printable ASCII for 's'. */
const char *hl_page_make(orr_arena *a, const char *list, const char *kinds,
                         const char *const *keys);

#endif
