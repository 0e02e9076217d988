/*
 * orr_hash.h - the one non-cryptographic hash of Orrery: 64-bit FNV-1a.
 *
 * Used wherever a byte string picks a slot or an owner (response and token
 * caches, rate-limit tables, the RPC method table, JSON Schema value sets,
 * the sort engine's unit-to-writer routing). Not for anything an attacker
 * must not steer: it is fast and well spread, not keyed.
 *
 * FNV-1a: start from the offset basis, and for every byte XOR it in and
 * multiply by the FNV prime (mod 2^64). A hash of several pieces continues
 * from the previous value (orr_hash_fnv1a_add). The low bits are weaker than
 * the high ones; a caller that reduces modulo a small power of two may mix
 * the result first (orr_hash_mix).
 *
 * Header-only: every function is static inline, pure and thread-safe.
 */
#ifndef ORR_HASH_H
#define ORR_HASH_H

#include <stddef.h>
#include <stdint.h>

#define ORR_HASH_FNV_BASIS 0xcbf29ce484222325ULL /* 14695981039346656037 */
#define ORR_HASH_FNV_PRIME 0x100000001b3ULL      /* 1099511628211 */

/* Continue hash h over n bytes at p (p may be NULL when n is 0). */
static inline uint64_t orr_hash_fnv1a_add(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= ORR_HASH_FNV_PRIME;
    }
    return h;
}

/* FNV-1a of n bytes at p. */
static inline uint64_t orr_hash_fnv1a(const void *p, size_t n)
{
    return orr_hash_fnv1a_add(ORR_HASH_FNV_BASIS, p, n);
}

/* FNV-1a of a NUL-terminated string (the NUL not included). */
static inline uint64_t orr_hash_fnv1a_str(const char *s)
{
    uint64_t h = ORR_HASH_FNV_BASIS;
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        h ^= *q;
        h *= ORR_HASH_FNV_PRIME;
    }
    return h;
}

/* The 64-bit finaliser of MurmurHash3: spreads every input bit over the
 * whole word, so the low bits of the result are as good as the high ones. */
static inline uint64_t orr_hash_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

#endif
