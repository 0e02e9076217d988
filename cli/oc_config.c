/* oc_config.c - the profiles file of `orrery` (see oc_config.h): read,
 * written atomically with mode 0600, and the precedence of options,
 * environment and profile. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oc_config.h"
#include "orr_alloc.h"
#include "orr_buf.h"

char *oc_config_path(void)
{
    const char *e = getenv("ORRERY_CONFIG");
    if (e && *e)
        return orr_xstrdup(e);
    orr_buf b = ORR_BUF_INIT;
    const char *x = getenv("XDG_CONFIG_HOME");
    if (x && *x == '/')
        orr_buf_appendf(&b, "%s/orrery/config", x);
    else
        orr_buf_appendf(&b, "%s/.config/orrery/config", getenv("HOME") ? getenv("HOME") : ".");
    return orr_buf_detach(&b, NULL);
}

oc_profile *oc_profile_get(oc_profiles *p, const char *name, int create)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->v[i].name, name) == 0)
            return &p->v[i];
    if (!create)
        return NULL;
    p->v = orr_xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
    oc_profile *r = &p->v[p->n++];
    memset(r, 0, sizeof(*r));
    r->name = orr_xstrdup(name);
    return r;
}

static char *oc__trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = 0;
    return s;
}

orr_status oc_profiles_load(const char *path, oc_profiles *p, orr_err *err)
{
    memset(p, 0, sizeof(*p));
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT
                   ? ORR_OK
                   : orr_err_set(err, ORR_EIO, path, "cannot read: %s", strerror(errno));
    char line[4096];
    int ln = 0;
    oc_profile *cur = NULL;
    orr_status s = ORR_OK;
    while (fgets(line, sizeof(line), f)) {
        ln++;
        char *t = oc__trim(line);
        if (!*t || *t == '#' || *t == ';')
            continue;
        if (*t == '[') {
            char *end = strchr(t, ']');
            if (!end || end == t + 1) {
                s = orr_err_set(err, ORR_EINVAL, path, "line %d: a profile is [name]", ln);
                break;
            }
            *end = 0;
            cur = oc_profile_get(p, oc__trim(t + 1), 1);
            continue;
        }
        char *eq = strchr(t, '=');
        if (!eq) {
            s = orr_err_set(err, ORR_EINVAL, path, "line %d: expected key = value", ln);
            break;
        }
        *eq = 0;
        char *k = oc__trim(t), *v = oc__trim(eq + 1);
        char **slot = NULL;
        if (!cur && strcmp(k, "current") == 0)
            slot = &p->current;
        else if (cur && strcmp(k, "url") == 0)
            slot = &cur->url;
        else if (cur && strcmp(k, "token") == 0)
            slot = &cur->token;
        if (!slot) {
            s = orr_err_set(err, ORR_EINVAL, path, "line %d: unknown key %s", ln, k);
            break;
        }
        free(*slot);
        *slot = orr_xstrdup(v);
    }
    fclose(f);
    return s;
}

/* mkdir -p of path's parent folder, mode 0700. */
static orr_status oc__mkdirs(const char *path, orr_err *err)
{
    char *d = orr_xstrdup(path);
    char *slash = strrchr(d, '/');
    orr_status s = ORR_OK;
    if (slash && slash != d) {
        *slash = 0;
        for (char *p = d + 1; *p; p++) {
            if (*p != '/')
                continue;
            *p = 0;
            if (mkdir(d, 0700) != 0 && errno != EEXIST)
                s = orr_err_set(err, ORR_EIO, d, "cannot create: %s", strerror(errno));
            *p = '/';
        }
        if (s == ORR_OK && mkdir(d, 0700) != 0 && errno != EEXIST)
            s = orr_err_set(err, ORR_EIO, d, "cannot create: %s", strerror(errno));
    }
    free(d);
    return s;
}

orr_status oc_profiles_save(const char *path, const oc_profiles *p, orr_err *err)
{
    orr_status s = oc__mkdirs(path, err);
    if (s != ORR_OK)
        return s;
    orr_buf b = ORR_BUF_INIT, tmp = ORR_BUF_INIT;
    orr_buf_append_str(&b, "# orrery profiles (written by orrery login; holds API tokens)\n");
    if (p->current)
        orr_buf_appendf(&b, "current = %s\n", p->current);
    for (size_t i = 0; i < p->n; i++) {
        orr_buf_appendf(&b, "\n[%s]\n", p->v[i].name);
        if (p->v[i].url)
            orr_buf_appendf(&b, "url = %s\n", p->v[i].url);
        if (p->v[i].token)
            orr_buf_appendf(&b, "token = %s\n", p->v[i].token);
    }
    orr_buf_appendf(&tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        s = orr_err_set(err, ORR_EIO, tmp.data, "cannot create: %s", strerror(errno));
        goto out;
    }
    if (fchmod(fd, 0600) != 0 || write(fd, b.data, b.len) != (ssize_t)b.len || fsync(fd) != 0) {
        s = orr_err_set(err, ORR_EIO, tmp.data, "cannot write: %s", strerror(errno));
        close(fd);
        unlink(tmp.data);
        goto out;
    }
    close(fd);
    if (rename(tmp.data, path) != 0) {
        s = orr_err_set(err, ORR_EIO, path, "cannot replace: %s", strerror(errno));
        unlink(tmp.data);
    }
out:
    orr_buf_free(&b);
    orr_buf_free(&tmp);
    return s;
}

void oc_profiles_free(oc_profiles *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].name);
        free(p->v[i].url);
        free(p->v[i].token);
    }
    free(p->v);
    free(p->current);
    memset(p, 0, sizeof(*p));
}

static const char *oc__env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int oc_ctx_resolve(oc_ctx *ctx, const oc_args *a, int need_url)
{
    static char profile_name[256];
    char *path = oc_config_path();
    ctx->config_path = path;
    oc_profiles p;
    orr_err e;
    orr_err_clear(&e);
    if (oc_profiles_load(path, &p, &e) != ORR_OK) {
        oc_profiles_free(&p);
        return oc_fail(ctx, OC_EXIT_USAGE, "%s: %s", e.field, e.msg);
    }
    const char *name = oc_arg(a, "profile");
    if (!name)
        name = oc__env("ORRERY_PROFILE");
    if (!name)
        name = p.current ? p.current : "default";
    snprintf(profile_name, sizeof(profile_name), "%s", name);
    ctx->profile = profile_name;
    oc_profile *pr = oc_profile_get(&p, name, 0);
    if (oc_arg(a, "profile") && !pr && need_url) {
        oc_profiles_free(&p);
        return oc_fail(ctx, OC_EXIT_USAGE, "no profile \"%s\" in %s (orrery login --profile %s)",
                       name, path, name);
    }
    const char *url = oc_arg(a, "url");
    if (!url)
        url = oc__env("ORRERY_URL");
    if (!url && pr)
        url = pr->url;
    const char *token = oc_arg(a, "token");
    if (!token)
        token = oc__env("ORRERY_TOKEN");
    if (!token && pr)
        token = pr->token;
    if (url) {
        size_t n = strlen(url);
        while (n && url[n - 1] == '/')
            n--;
        ctx->url = orr_xstrndup(url, n);
    }
    ctx->token = token ? orr_xstrdup(token) : NULL;
    oc_profiles_free(&p);
    if (need_url && !ctx->url)
        return oc_fail(ctx, OC_EXIT_USAGE,
                       "no galaxyd address: run `orrery login URL`, set ORRERY_URL or pass --url");
    return OC_EXIT_OK;
}

void oc_ctx_free(oc_ctx *ctx)
{
    free(ctx->url);
    free(ctx->token);
    free((char *)ctx->config_path);
    ctx->url = ctx->token = NULL;
    ctx->config_path = NULL;
}
