/*
 * orr_rpc_tls.c - halleyd's TLS settings and its callers' (see orr_rpc_tls.h):
 * certificate files read and checked at start, so a daemon with a wrong
 * path refuses to start naming the file and the key.
 */
#include "orr_rpc_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orr_alloc.h"

#define TLS_PEM_MAX (1 << 20)

orr_status orr_rpc_tls_read_pem(const char *path, const char *section, const char *key, char **out,
                                orr_err *err)
{
    char field[128];
    snprintf(field, sizeof field, "%s.%s", section, key);
    *out = NULL;
    orr_status rc = ORR_OK;
    char *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return orr_err_set(err, ORR_EINVAL, field, "[%s] %s: %s: cannot open: %s", section, key,
                           path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TLS_PEM_MAX) {
        rc = orr_err_set(err, ORR_EINVAL, field,
                         "[%s] %s: %s: not a regular file of at most %d bytes", section, key, path,
                         TLS_PEM_MAX);
        goto out;
    }
    buf = orr_xmalloc((size_t)st.st_size + 2);
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, (size_t)st.st_size + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = orr_err_set(err, ORR_EINVAL, field, "[%s] %s: %s: cannot read: %s", section, key,
                             path, strerror(errno));
            goto out;
        }
        if (r == 0 || len + (size_t)r > (size_t)st.st_size)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    if (!strstr(buf, "-----BEGIN ")) {
        rc = orr_err_set(err, ORR_EINVAL, field, "[%s] %s: %s: holds no PEM block", section, key,
                         path);
        goto out;
    }
    *out = buf;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

/* A secret read by orr_config lost its last newline: PEM text wants it. */
static char *tls_key_text(const char *v)
{
    size_t n = strlen(v);
    char *k = orr_xmalloc(n + 2);
    memcpy(k, v, n);
    k[n] = '\n';
    k[n + 1] = '\0';
    return k;
}

static int tls_set(const char *v)
{
    return v && v[0];
}

void orr_rpc_tls_conf_free(orr_rpc_tls_conf *c)
{
    if (!c)
        return;
    free(c->ca);
    free(c->cert);
    if (c->key) {
        memset(c->key, 0, strlen(c->key));
        free(c->key);
    }
    memset(c, 0, sizeof *c);
}

/* Load ca/cert/key of the given key names into out. */
static orr_status tls_load(const orr_config *cfg, const char *section, const char *ca_key,
                           const char *cert_key, const char *key_key, orr_rpc_tls_conf *out,
                           orr_err *err)
{
    memset(out, 0, sizeof *out);
    const char *ca = orr_config_str(cfg, section, ca_key);
    const char *cert = orr_config_str(cfg, section, cert_key);
    const char *key = orr_config_str(cfg, section, key_key);
    char kf[64];
    snprintf(kf, sizeof kf, "%s_file", key_key);
    char field[128];
    if (tls_set(cert) != tls_set(key)) {
        snprintf(field, sizeof field, "%s.%s", section, tls_set(cert) ? kf : cert_key);
        return orr_err_set(err, ORR_EINVAL, field,
                           "[%s] %s and %s go together: set both or neither", section, cert_key,
                           kf);
    }
    orr_status rc = ORR_OK;
    if (tls_set(ca) && (rc = orr_rpc_tls_read_pem(ca, section, ca_key, &out->ca, err)) != ORR_OK)
        goto fail;
    if (tls_set(cert) &&
        (rc = orr_rpc_tls_read_pem(cert, section, cert_key, &out->cert, err)) != ORR_OK)
        goto fail;
    if (tls_set(key)) {
        if (!strstr(key, "-----BEGIN ")) {
            snprintf(field, sizeof field, "%s.%s", section, kf);
            rc = orr_err_set(err, ORR_EINVAL, field, "[%s] %s: holds no PEM private key", section,
                             kf);
            goto fail;
        }
        out->key = tls_key_text(key);
    }
    out->tls = (orr_rpc_tls){.ca_pem = out->ca, .cert_pem = out->cert, .key_pem = out->key};
    return ORR_OK;
fail:
    orr_rpc_tls_conf_free(out);
    return rc;
}

orr_status orr_rpc_tls_server_load(const orr_config *cfg, const char *section,
                                   orr_rpc_tls_conf *out, orr_err *err)
{
    orr_status rc =
        tls_load(cfg, section, "tls_client_ca_file", "tls_cert_file", "tls_key", out, err);
    if (rc == ORR_OK && out->cert)
        out->on = 1;
    else if (rc == ORR_OK && out->ca) {
        char field[128];
        snprintf(field, sizeof field, "%s.tls_client_ca_file", section);
        orr_rpc_tls_conf_free(out);
        return orr_err_set(err, ORR_EINVAL, field,
                           "[%s] tls_client_ca_file needs tls_cert_file and tls_key_file", section);
    }
    return rc;
}

orr_status orr_rpc_tls_client_setup(const orr_config *cfg, const char *section, orr_err *err)
{
    orr_rpc_tls_conf c;
    orr_status rc = tls_load(cfg, section, "halley_tls_ca_file", "halley_tls_cert_file",
                             "halley_tls_key", &c, err);
    if (rc != ORR_OK)
        return rc;
    c.tls.server_name = orr_config_str(cfg, section, "halley_tls_server_name");
    if (c.ca || c.cert)
        orr_rpc_client_set_tls(&c.tls);
    orr_rpc_tls_conf_free(&c);
    return ORR_OK;
}
