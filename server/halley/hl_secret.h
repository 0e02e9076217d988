/*
 * hl_secret.h - passwords and stored credentials (libsodium).
 *
 * Passwords: argon2id hashes in libsodium's string form ("$argon2id$v=19$...");
 * the clear password is never stored. Credentials of data sources: secretbox
 * (XSalsa20-Poly1305) under the key from [halley] secret_key, stored as
 * nonce || ciphertext. Call hl_secret_init() once before anything else.
 */
#ifndef HL_SECRET_H
#define HL_SECRET_H

#include <stddef.h>

#include "orr_buf.h"
#include "orr_status.h"

#define HL_SECRET_KEY_BYTES 32

/* Initialise libsodium. ORR_EINTERNAL if it cannot. */
orr_status hl_secret_init(orr_err *err);

/* Parse a 32-byte key given as 64 hex digits or as base64 (standard or URL
 * alphabet, padded or not). ORR_EINVAL (field "halley.secret_key") otherwise. */
orr_status hl_secret_parse_key(const char *text, unsigned char key[HL_SECRET_KEY_BYTES],
                               orr_err *err);

/* argon2id hash of password into out (NUL-terminated text, at most 128 bytes).
 * ORR_ENOMEM if the hashing memory cannot be had. Blocks ~0.1 s (interactive
 * limits). */
orr_status hl_secret_hash_password(const char *password, char out[128], orr_err *err);
/* 1 when password matches hash, 0 otherwise (including a malformed hash). */
int hl_secret_check_password(const char *hash, const char *password);
/* Spend the time of hl_secret_check_password on a dummy argon2id hash (made
 * once, from a random password, with the same parameters): for a login of an
 * unknown user, so its answer takes as long as a wrong password's. */
void hl_secret_check_dummy(const char *password);

/* Encrypt len bytes: out gets nonce || ciphertext (appended). */
void hl_secret_seal(const unsigned char key[HL_SECRET_KEY_BYTES], const void *plain, size_t len,
                    orr_buf *out);
/* Decrypt what hl_secret_seal produced into out (appended, NUL-terminated).
 * ORR_EINVAL if it was tampered with, is too short, or the key differs. */
orr_status hl_secret_open(const unsigned char key[HL_SECRET_KEY_BYTES], const void *sealed,
                          size_t len, orr_buf *out, orr_err *err);

/* 1 when token equals want, in time that depends only on want's length. */
int hl_secret_token_equal(const char *token, const char *want);

#endif
