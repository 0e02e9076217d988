/*
 * hl_secret.c - argon2id password hashes and secretbox credentials.
 */
#include "hl_secret.h"

#include <pthread.h>
#include <sodium.h>
#include <string.h>

orr_status hl_secret_init(orr_err *err)
{
    if (sodium_init() < 0)
        return orr_err_set(err, ORR_EINTERNAL, NULL, "libsodium failed to initialise");
    return ORR_OK;
}

orr_status hl_secret_parse_key(const char *text, unsigned char key[HL_SECRET_KEY_BYTES],
                               orr_err *err)
{
    size_t n = 0;
    const char *end = NULL;
    size_t tlen = text ? strlen(text) : 0;
    if (tlen == 2 * HL_SECRET_KEY_BYTES &&
        sodium_hex2bin(key, HL_SECRET_KEY_BYTES, text, tlen, NULL, &n, &end) == 0 &&
        n == HL_SECRET_KEY_BYTES && end == text + tlen)
        return ORR_OK;
    static const int variants[] = {
        sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
        sodium_base64_VARIANT_URLSAFE, sodium_base64_VARIANT_URLSAFE_NO_PADDING};
    for (size_t i = 0; tlen && i < sizeof variants / sizeof variants[0]; i++) {
        unsigned char tmp[HL_SECRET_KEY_BYTES + 8];
        if (sodium_base642bin(tmp, sizeof tmp, text, tlen, NULL, &n, &end, variants[i]) == 0 &&
            n == HL_SECRET_KEY_BYTES && end == text + tlen) {
            memcpy(key, tmp, HL_SECRET_KEY_BYTES);
            sodium_memzero(tmp, sizeof tmp);
            return ORR_OK;
        }
    }
    return orr_err_set(err, ORR_EINVAL, "halley.secret_key",
                       "must be 32 bytes as 64 hex digits or base64");
}

orr_status hl_secret_hash_password(const char *password, char out[128], orr_err *err)
{
    _Static_assert(crypto_pwhash_STRBYTES <= 128, "hash buffer too small");
    if (crypto_pwhash_str_alg(out, password, strlen(password), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                              crypto_pwhash_MEMLIMIT_INTERACTIVE,
                              crypto_pwhash_ALG_ARGON2ID13) != 0)
        return orr_err_set(err, ORR_ENOMEM, NULL, "cannot hash password (out of memory)");
    return ORR_OK;
}

int hl_secret_check_password(const char *hash, const char *password)
{
    if (!hash || !password || strncmp(hash, "$argon2id$", 10) != 0)
        return 0;
    return crypto_pwhash_str_verify(hash, password, strlen(password)) == 0;
}

static char hl__dummy_hash[128];
static pthread_once_t hl__dummy_once = PTHREAD_ONCE_INIT;

static void hl__dummy_make(void)
{
    unsigned char pw[24];
    char text[64];
    orr_err e;
    randombytes_buf(pw, sizeof pw);
    sodium_bin2hex(text, sizeof text, pw, sizeof pw);
    if (hl_secret_hash_password(text, hl__dummy_hash, &e) != ORR_OK)
        hl__dummy_hash[0] = '\0';
    sodium_memzero(text, sizeof text);
}

void hl_secret_check_dummy(const char *password)
{
    pthread_once(&hl__dummy_once, hl__dummy_make);
    if (!hl__dummy_hash[0])
        return;
    /* The answer is not used: only the time it takes. */
    int same = crypto_pwhash_str_verify(hl__dummy_hash, password ? password : "",
                                        password ? strlen(password) : 0);
    (void)same;
}

void hl_secret_seal(const unsigned char key[HL_SECRET_KEY_BYTES], const void *plain, size_t len,
                    orr_buf *out)
{
    size_t start = out->len;
    orr_buf_reserve(out, crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + len);
    unsigned char *nonce = (unsigned char *)out->data + start;
    randombytes_buf(nonce, crypto_secretbox_NONCEBYTES);
    crypto_secretbox_easy(nonce + crypto_secretbox_NONCEBYTES, plain, len, nonce, key);
    out->len = start + crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + len;
    out->data[out->len] = 0;
}

orr_status hl_secret_open(const unsigned char key[HL_SECRET_KEY_BYTES], const void *sealed,
                          size_t len, orr_buf *out, orr_err *err)
{
    if (len < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES)
        return orr_err_set(err, ORR_EINVAL, "secret", "stored secret is too short");
    const unsigned char *nonce = sealed;
    size_t clen = len - crypto_secretbox_NONCEBYTES;
    size_t plen = clen - crypto_secretbox_MACBYTES;
    size_t start = out->len;
    orr_buf_reserve(out, plen);
    if (crypto_secretbox_open_easy((unsigned char *)out->data + start,
                                   nonce + crypto_secretbox_NONCEBYTES, clen, nonce, key) != 0) {
        if (out->data)
            out->data[start] = 0;
        return orr_err_set(err, ORR_EINVAL, "secret",
                           "stored secret does not decrypt (tampered or another key)");
    }
    out->len = start + plen;
    out->data[out->len] = 0;
    return ORR_OK;
}

int hl_secret_token_equal(const char *token, const char *want)
{
    size_t got_len = strlen(token), want_len = strlen(want);
    unsigned diff = got_len != want_len;
    for (size_t i = 0; i < want_len; i++)
        diff |= (unsigned)((unsigned char)want[i] ^ (i < got_len ? (unsigned char)token[i] : 0));
    return diff == 0;
}
