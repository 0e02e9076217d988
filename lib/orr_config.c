/*
 * orr_config.c - INI-style configuration with environment overrides (see
 * orr_config.h).
 *
 * The effective table is the daemon's schema plus the built-in [log] keys.
 * Values are validated as they are read, so an error always knows its origin.
 */
#include "orr_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_log.h"

extern char **environ;

static const orr_cfg_key cfg_builtin[] = {
    {"log", "level", ORR_CFG_STRING, "info", 0, 0, 0, "debug, info, warn, error or fatal"},
    {"log", "file", ORR_CFG_STRING, "-", 0, 0, 0, "log file path; - for stderr"},
};
#define CFG_NBUILTIN (sizeof(cfg_builtin) / sizeof(cfg_builtin[0]))

struct cfg_entry {
    const orr_cfg_key *key;
    char *value; /* malloc'd text, NULL if unset */
    int64_t num; /* parsed number for int/bool/duration/size */
    int layer;   /* where the value came from: CFG_LAYER_* */
    char origin[160];
};

enum { CFG_LAYER_DEFAULT, CFG_LAYER_FILE, CFG_LAYER_ENV };

/* The <key>_file companion of a secret key: the key's value is read from
 * the file it names (see orr_config.h). */
struct cfg_file_key {
    orr_cfg_key key; /* key.key is "<secret>_file" (malloc'd) */
    char help[160];
    size_t secret; /* index of the secret's entry */
};

struct orr_config {
    struct cfg_entry *e;
    size_t n;
    struct cfg_file_key *fk;
    size_t nfk;
};

orr_status orr_config_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return ORR_OK;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return ORR_OK;
        }
    }
    return ORR_EINVAL;
}

static orr_status cfg_parse_int(const char *s, int64_t *out, const char **rest)
{
    char *end;
    errno = 0;
    if (!*s || isspace((unsigned char)*s))
        return ORR_EINVAL;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s)
        return ORR_EINVAL;
    *out = v;
    *rest = end;
    return ORR_OK;
}

orr_status orr_config_parse_duration(const char *s, int64_t *ms)
{
    int64_t v;
    const char *u;
    if (cfg_parse_int(s, &v, &u) != ORR_OK || v < 0)
        return ORR_EINVAL;
    int64_t mul;
    if (strcmp(u, "ms") == 0)
        mul = 1;
    else if (strcmp(u, "s") == 0)
        mul = 1000;
    else if (strcmp(u, "m") == 0)
        mul = 60000;
    else if (strcmp(u, "h") == 0)
        mul = 3600000;
    else if (strcmp(u, "d") == 0)
        mul = 86400000;
    else
        return ORR_EINVAL;
    if (v > INT64_MAX / mul)
        return ORR_EINVAL;
    *ms = v * mul;
    return ORR_OK;
}

orr_status orr_config_parse_size(const char *s, int64_t *bytes)
{
    int64_t v;
    const char *u;
    if (cfg_parse_int(s, &v, &u) != ORR_OK || v < 0)
        return ORR_EINVAL;
    int64_t mul;
    if (*u == '\0' || strcasecmp(u, "b") == 0)
        mul = 1;
    else if (strcasecmp(u, "k") == 0 || strcasecmp(u, "kb") == 0 || strcasecmp(u, "kib") == 0)
        mul = 1024;
    else if (strcasecmp(u, "m") == 0 || strcasecmp(u, "mb") == 0 || strcasecmp(u, "mib") == 0)
        mul = 1024 * 1024;
    else if (strcasecmp(u, "g") == 0 || strcasecmp(u, "gb") == 0 || strcasecmp(u, "gib") == 0)
        mul = 1024LL * 1024 * 1024;
    else
        return ORR_EINVAL;
    if (v > INT64_MAX / mul)
        return ORR_EINVAL;
    *bytes = v * mul;
    return ORR_OK;
}

static const char *cfg_type_hint(orr_cfg_type t)
{
    switch (t) {
    case ORR_CFG_INT:
        return "an integer";
    case ORR_CFG_BOOL:
        return "a boolean (true/false/yes/no/on/off/1/0)";
    case ORR_CFG_DURATION:
        return "a duration such as 500ms, 30s, 5m, 3h or 1d";
    case ORR_CFG_SIZE:
        return "a size such as 4096, 64k, 256m or 2g";
    default:
        return "a string";
    }
}

/* Validate and store text into entry e. */
static orr_status cfg_set(struct cfg_entry *e, const char *text, const char *origin, int layer,
                          orr_err *err)
{
    char field[128];
    const orr_cfg_key *k = e->key;
    snprintf(field, sizeof(field), "%s.%s", k->section, k->key);
    int64_t num = 0;
    orr_status rc = ORR_OK;
    switch (k->type) {
    case ORR_CFG_INT: {
        const char *rest;
        rc = cfg_parse_int(text, &num, &rest);
        if (rc == ORR_OK && *rest)
            rc = ORR_EINVAL;
        break;
    }
    case ORR_CFG_BOOL: {
        int b = 0;
        rc = orr_config_parse_bool(text, &b);
        num = b;
        break;
    }
    case ORR_CFG_DURATION:
        rc = orr_config_parse_duration(text, &num);
        break;
    case ORR_CFG_SIZE:
        rc = orr_config_parse_size(text, &num);
        break;
    default:
        break;
    }
    if (rc != ORR_OK)
        return orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: must be %s, got \"%.60s\"", origin,
                           k->section, k->key, cfg_type_hint(k->type), text);
    if (k->type != ORR_CFG_STRING && k->type != ORR_CFG_SECRET && k->type != ORR_CFG_BOOL &&
        (k->min || k->max) && (num < k->min || num > k->max))
        return orr_err_set(err, ORR_EINVAL, field,
                           "%s: [%s] %s: must be between %lld and %lld, got \"%.60s\"", origin,
                           k->section, k->key, (long long)k->min, (long long)k->max, text);
    if (k->type == ORR_CFG_STRING && k->required && !*text)
        return orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: must not be empty", origin,
                           k->section, k->key);
    char *copy = orr_xstrdup(text);
    free(e->value);
    e->value = copy;
    e->num = num;
    e->layer = layer;
    snprintf(e->origin, sizeof(e->origin), "%s", origin);
    return ORR_OK;
}

static struct cfg_entry *cfg_find(const orr_config *cfg, const char *section, const char *key)
{
    for (size_t i = 0; i < cfg->n; i++)
        if (strcmp(cfg->e[i].key->section, section) == 0 && strcmp(cfg->e[i].key->key, key) == 0)
            return &cfg->e[i];
    return NULL;
}

static int cfg_section_known(const orr_config *cfg, const char *section)
{
    for (size_t i = 0; i < cfg->n; i++)
        if (strcmp(cfg->e[i].key->section, section) == 0)
            return 1;
    return 0;
}

/* Sections of the platform's other daemons: one orrery.conf serves them all,
 * so a daemon skips these (their owner checks them) but refuses any other. */
static const char *const cfg_platform_sections[] = {
    "halley", "galaxy", "kepler", "executor", "wormhole", "sort", "stack", NULL,
};

static int cfg_section_foreign(const char *section)
{
    for (const char *const *s = cfg_platform_sections; *s; s++)
        if (strcmp(*s, section) == 0)
            return 1;
    return 0;
}

static char *cfg_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static orr_status cfg_read_file(orr_config *cfg, const char *path, orr_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return orr_err_set(err, ORR_EIO, "", "%s: cannot open config file: %s", path,
                           strerror(errno));
    char line[4096];
    char section[64] = "";
    char origin[160];
    int skipping = 0; /* inside another daemon's section */
    int lineno = 0;
    orr_status rc = ORR_OK;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        snprintf(origin, sizeof(origin), "%s:%d", path, lineno);
        if (!strchr(line, '\n') && !feof(f)) {
            rc = orr_err_set(err, ORR_EINVAL, "", "%s: line longer than %zu bytes", origin,
                             sizeof(line) - 2);
            goto out;
        }
        char *s = cfg_trim(line);
        if (*s == '\0' || *s == '#' || *s == ';')
            continue;
        if (skipping && *s != '[')
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (!end || end[1] != '\0') {
                rc = orr_err_set(err, ORR_EINVAL, "", "%s: malformed section header", origin);
                goto out;
            }
            *end = '\0';
            char *name = cfg_trim(s + 1);
            skipping = !cfg_section_known(cfg, name) && cfg_section_foreign(name);
            if (skipping)
                continue;
            if (!cfg_section_known(cfg, name)) {
                rc = orr_err_set(err, ORR_EINVAL, name, "%s: unknown section [%s]", origin, name);
                goto out;
            }
            snprintf(section, sizeof(section), "%s", name);
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = orr_err_set(err, ORR_EINVAL, "", "%s: expected 'key = value'", origin);
            goto out;
        }
        *eq = '\0';
        char *key = cfg_trim(s);
        char *val = cfg_trim(eq + 1);
        if (!section[0]) {
            rc = orr_err_set(err, ORR_EINVAL, key, "%s: key '%s' outside any [section]", origin,
                             key);
            goto out;
        }
        size_t vl = strlen(val);
        if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
            val[vl - 1] = '\0';
            val++;
        }
        struct cfg_entry *e = cfg_find(cfg, section, key);
        if (!e) {
            char field[128];
            snprintf(field, sizeof(field), "%s.%s", section, key);
            rc = orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: unknown key", origin, section,
                             key);
            goto out;
        }
        rc = cfg_set(e, val, origin, CFG_LAYER_FILE, err);
        if (rc != ORR_OK)
            goto out;
    }
out:
    fclose(f);
    return rc;
}

static void cfg_env_name(const orr_cfg_key *k, char *buf, size_t n)
{
    snprintf(buf, n, "ORRERY_%s_%s", k->section, k->key);
    for (char *p = buf; *p; p++)
        *p = (*p == '.' || *p == '-') ? '_' : (char)toupper((unsigned char)*p);
}

static const char *cfg_env_get(char *const *envp, const char *name)
{
    size_t nl = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, name, nl) == 0 && (*e)[nl] == '=')
            return *e + nl + 1;
    return NULL;
}

/* ---------------------------------------------------------- secrets in files */

/* Add a "<key>_file" string key for every secret key of the schema (unless
 * the schema has one of that name already). cfg->e has room for them. */
static void cfg_add_file_keys(orr_config *cfg)
{
    size_t n = cfg->n;
    for (size_t i = 0; i < n; i++) {
        const orr_cfg_key *k = cfg->e[i].key;
        if (k->type != ORR_CFG_SECRET)
            continue;
        size_t len = strlen(k->key) + sizeof("_file");
        char *name = orr_xmalloc(len);
        snprintf(name, len, "%s_file", k->key);
        if (cfg_find(cfg, k->section, name)) {
            free(name);
            continue;
        }
        struct cfg_file_key *fk = &cfg->fk[cfg->nfk++];
        snprintf(fk->help, sizeof(fk->help),
                 "file holding %s instead (a regular file of this daemon's user, mode 0600 or "
                 "0400)",
                 k->key);
        fk->key = (orr_cfg_key){k->section, name, ORR_CFG_STRING, NULL, 0, 0, 0, fk->help};
        fk->secret = i;
        cfg->e[cfg->n++].key = &fk->key;
    }
}

/* The file key of secret key k, or NULL. */
static const struct cfg_file_key *cfg_find_file_key(const orr_config *cfg, const orr_cfg_key *k)
{
    for (size_t i = 0; i < cfg->nfk; i++)
        if (cfg->e[cfg->fk[i].secret].key == k)
            return &cfg->fk[i];
    return NULL;
}

#define CFG_SECRET_MAX 65536

/* Read the secret file path named by [section] key (set at origin) into
 * *out (malloc'd): a regular file owned by the effective user, no access for
 * group or others, not empty; one trailing newline (LF or CRLF) is dropped. */
static orr_status cfg_read_secret(const char *path, const orr_cfg_key *fkey, const char *origin,
                                  char **out, orr_err *err)
{
    char field[128];
    snprintf(field, sizeof(field), "%s.%s", fkey->section, fkey->key);
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: %s: cannot open: %s", origin,
                           fkey->section, fkey->key, path, strerror(errno));
    orr_status rc = ORR_OK;
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: %s: cannot stat: %s", origin,
                         fkey->section, fkey->key, path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: %s: not a regular file", origin,
                         fkey->section, fkey->key, path);
        goto out;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        rc = orr_err_set(err, ORR_EINVAL, field,
                         "%s: [%s] %s: %s: open to group or others (mode %04o; must be 0600 or "
                         "0400)",
                         origin, fkey->section, fkey->key, path, (unsigned)(st.st_mode & 07777));
        goto out;
    }
    if (st.st_uid != geteuid()) {
        rc = orr_err_set(err, ORR_EINVAL, field,
                         "%s: [%s] %s: %s: owned by uid %u, not by this daemon's user (uid %u)",
                         origin, fkey->section, fkey->key, path, (unsigned)st.st_uid,
                         (unsigned)geteuid());
        goto out;
    }
    if (st.st_size > CFG_SECRET_MAX) {
        rc = orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: %s: larger than %d bytes", origin,
                         fkey->section, fkey->key, path, CFG_SECRET_MAX);
        goto out;
    }
    buf = orr_xmalloc(CFG_SECRET_MAX + 2);
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, CFG_SECRET_MAX + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: %s: cannot read: %s", origin,
                             fkey->section, fkey->key, path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len > CFG_SECRET_MAX) {
            rc = orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: %s: larger than %d bytes",
                             origin, fkey->section, fkey->key, path, CFG_SECRET_MAX);
            goto out;
        }
    }
    if (len && buf[len - 1] == '\n')
        len--;
    if (len && buf[len - 1] == '\r')
        len--;
    buf[len] = '\0';
    if (strlen(buf) != len) {
        rc = orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: %s: holds a NUL byte", origin,
                         fkey->section, fkey->key, path);
        goto out;
    }
    if (len == 0) {
        rc = orr_err_set(err, ORR_EINVAL, field, "%s: [%s] %s: %s: is empty", origin, fkey->section,
                         fkey->key, path);
        goto out;
    }
    *out = buf;
    buf = NULL;
out:
    if (buf) {
        memset(buf, 0, CFG_SECRET_MAX + 2);
        free(buf);
    }
    close(fd);
    return rc;
}

/* Give every secret whose <key>_file is set the file's content. The key and
 * its file key set at the same level (both in the file, or both in the
 * environment) is an error; an environment setting wins over the file's. */
static orr_status cfg_resolve_file_keys(orr_config *cfg, orr_err *err)
{
    for (size_t i = 0; i < cfg->nfk; i++) {
        const struct cfg_file_key *fk = &cfg->fk[i];
        struct cfg_entry *fe = cfg_find(cfg, fk->key.section, fk->key.key);
        struct cfg_entry *se = &cfg->e[fk->secret];
        if (!fe->value || !*fe->value)
            continue;
        if (se->layer == fe->layer) {
            char field[128];
            snprintf(field, sizeof(field), "%s.%s", fk->key.section, fk->key.key);
            return orr_err_set(err, ORR_EINVAL, field,
                               "%s: [%s] %s: set %s or %s, not both (%s is set at %s)", fe->origin,
                               fk->key.section, fk->key.key, se->key->key, fk->key.key,
                               se->key->key, se->origin);
        }
        if (se->layer > fe->layer)
            continue; /* the environment's inline value wins over the file's *_file */
        char *text = NULL;
        orr_status rc = cfg_read_secret(fe->value, &fk->key, fe->origin, &text, err);
        if (rc != ORR_OK)
            return rc;
        char origin[160];
        snprintf(origin, sizeof(origin), "%.60s (%s at %.80s)", fe->value, fk->key.key, fe->origin);
        rc = cfg_set(se, text, origin, fe->layer, err);
        memset(text, 0, strlen(text));
        free(text);
        if (rc != ORR_OK)
            return rc;
    }
    return ORR_OK;
}

orr_status orr_config_load(const orr_cfg_key *schema, size_t n, const char *path, char *const *envp,
                           orr_config **out, orr_err *err)
{
    *out = NULL;
    orr_config *cfg = orr_xcalloc(1, sizeof(*cfg));
    size_t nsecret = 0;
    for (size_t i = 0; i < n; i++)
        nsecret += schema[i].type == ORR_CFG_SECRET;
    cfg->e = orr_xcalloc(n + CFG_NBUILTIN + nsecret, sizeof(*cfg->e));
    cfg->fk = orr_xcalloc(nsecret ? nsecret : 1, sizeof(*cfg->fk));
    orr_status rc = ORR_OK;
    for (size_t i = 0; i < CFG_NBUILTIN; i++)
        cfg->e[cfg->n++].key = &cfg_builtin[i];
    for (size_t i = 0; i < n; i++) {
        if (cfg_find(cfg, schema[i].section, schema[i].key))
            continue; /* a daemon may restate a built-in key */
        cfg->e[cfg->n++].key = &schema[i];
    }
    cfg_add_file_keys(cfg);
    for (size_t i = 0; i < cfg->n; i++) {
        if (cfg->e[i].key->def) {
            rc = cfg_set(&cfg->e[i], cfg->e[i].key->def, "default", CFG_LAYER_DEFAULT, err);
            if (rc != ORR_OK)
                goto fail;
        }
    }
    if (path) {
        rc = cfg_read_file(cfg, path, err);
        if (rc != ORR_OK)
            goto fail;
    }
    if (!envp)
        envp = environ;
    for (size_t i = 0; i < cfg->n; i++) {
        char name[160], origin[180];
        cfg_env_name(cfg->e[i].key, name, sizeof(name));
        const char *v = cfg_env_get(envp, name);
        if (!v)
            continue;
        snprintf(origin, sizeof(origin), "environment %s", name);
        rc = cfg_set(&cfg->e[i], v, origin, CFG_LAYER_ENV, err);
        if (rc != ORR_OK)
            goto fail;
    }
    rc = cfg_resolve_file_keys(cfg, err);
    if (rc != ORR_OK)
        goto fail;
    for (size_t i = 0; i < cfg->n; i++) {
        const orr_cfg_key *k = cfg->e[i].key;
        if (k->required && !cfg->e[i].value) {
            char name[160], field[128];
            cfg_env_name(k, name, sizeof(name));
            snprintf(field, sizeof(field), "%s.%s", k->section, k->key);
            if (k->type == ORR_CFG_SECRET && cfg_find_file_key(cfg, k))
                rc =
                    orr_err_set(err, ORR_EINVAL, field,
                                "%s: [%s] %s: required key is missing (set it in the file or in "
                                "%s, or name a file holding it in %s_file)",
                                path ? path : "(no config file)", k->section, k->key, name, k->key);
            else
                rc = orr_err_set(err, ORR_EINVAL, field,
                                 "%s: [%s] %s: required key is missing (set it in the file or in "
                                 "%s)",
                                 path ? path : "(no config file)", k->section, k->key, name);
            goto fail;
        }
    }
    *out = cfg;
    return ORR_OK;
fail:
    orr_config_free(cfg);
    return rc;
}

void orr_config_free(orr_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n; i++)
        free(cfg->e[i].value);
    for (size_t i = 0; i < cfg->nfk; i++)
        free((char *)cfg->fk[i].key.key);
    free(cfg->fk);
    free(cfg->e);
    free(cfg);
}

static struct cfg_entry *cfg_must(const orr_config *cfg, const char *section, const char *key)
{
    struct cfg_entry *e = cfg_find(cfg, section, key);
    if (!e) {
        fprintf(stderr, "level=fatal msg=\"config key not in schema\" key=%s.%s\n", section, key);
        abort();
    }
    return e;
}

const char *orr_config_str(const orr_config *cfg, const char *section, const char *key)
{
    return cfg_must(cfg, section, key)->value;
}

int64_t orr_config_int(const orr_config *cfg, const char *section, const char *key)
{
    return cfg_must(cfg, section, key)->num;
}

int orr_config_bool(const orr_config *cfg, const char *section, const char *key)
{
    return cfg_must(cfg, section, key)->num != 0;
}

const char *orr_config_origin(const orr_config *cfg, const char *section, const char *key)
{
    struct cfg_entry *e = cfg_must(cfg, section, key);
    return e->value ? e->origin : "unset";
}

void orr_config_print(const orr_config *cfg, FILE *f)
{
    const char *section = NULL;
    for (size_t pass = 0; pass < cfg->n; pass++) {
        /* Group by section in first-seen order. */
        const char *s = cfg->e[pass].key->section;
        int seen = 0;
        for (size_t j = 0; j < pass; j++)
            if (strcmp(cfg->e[j].key->section, s) == 0)
                seen = 1;
        if (seen)
            continue;
        section = s;
        fprintf(f, "%s[%s]\n", pass ? "\n" : "", section);
        for (size_t i = 0; i < cfg->n; i++) {
            const struct cfg_entry *e = &cfg->e[i];
            if (strcmp(e->key->section, section) != 0)
                continue;
            if (e->key->help)
                fprintf(f, "# %s\n", e->key->help);
            if (!e->value)
                fprintf(f, "# %s = (unset)\n", e->key->key);
            else if (e->key->type == ORR_CFG_SECRET)
                fprintf(f, "%s = <set>    # from %s\n", e->key->key, e->origin);
            else
                fprintf(f, "%s = %s    # from %s\n", e->key->key, e->value, e->origin);
        }
    }
}

static void cfg_usage(const char *prog, FILE *f)
{
    fprintf(f,
            "usage: %s [--config FILE] [--print-config] [--help] [COMMAND ARGS...]\n"
            "  --config FILE    read settings from FILE (sections and key = value)\n"
            "  --print-config   print the effective configuration and exit\n"
            "Every key can also be set as ORRERY_<SECTION>_<KEY> in the environment.\n",
            prog);
}

orr_config *orr_config_from_args(const char *prog, int argc, char **argv, const orr_cfg_key *schema,
                                 size_t n, int *argi, int *exit_code)
{
    const char *path = NULL;
    int print = 0, i = 1;
    *exit_code = 0;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: --config needs a file name\n", prog);
                *exit_code = 2;
                return NULL;
            }
            path = argv[++i];
        } else if (strncmp(argv[i], "--config=", 9) == 0) {
            path = argv[i] + 9;
        } else if (strcmp(argv[i], "--print-config") == 0) {
            print = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cfg_usage(prog, stdout);
            return NULL;
        } else {
            break;
        }
    }
    *argi = i;
    orr_config *cfg = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (orr_config_load(schema, n, path, NULL, &cfg, &err) != ORR_OK) {
        fprintf(stderr, "%s: config error: %s\n", prog, err.msg);
        *exit_code = 2;
        return NULL;
    }
    if (print) {
        orr_config_print(cfg, stdout);
        orr_config_free(cfg);
        return NULL;
    }
    orr_log_level lvl;
    if (orr_log_level_parse(orr_config_str(cfg, "log", "level"), &lvl) != ORR_OK) {
        fprintf(stderr,
                "%s: config error: %s: [log] level: must be debug, info, warn, error or fatal\n",
                prog, orr_config_origin(cfg, "log", "level"));
        orr_config_free(cfg);
        *exit_code = 2;
        return NULL;
    }
    if (orr_log_open(lvl, orr_config_str(cfg, "log", "file"), &err) != ORR_OK) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        orr_config_free(cfg);
        *exit_code = 2;
        return NULL;
    }
    return cfg;
}
