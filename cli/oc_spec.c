/* oc_spec.c - the spec file loader of `orrery` (see oc_spec.h).
 *
 * libyaml's event parser turns a file into jansson values; every node's
 * path and line are kept beside them, so a schema error ("spec.retries.max:
 * must be an integer >= 0") is reported at the line that holds it. The
 * conversion is a recursive descent over events with a depth and node
 * limit, so a hostile file costs bounded time and memory (a fuzz target
 * runs it, tests/fuzz/cli). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "oc_spec.h"
#include "orr_alloc.h"
#include "orr_jschema.h"
#include "orr_json.h"
#include "orr_schemas.h"

/* ----------------------------------------------------------- diagnostics */

void oc_diag_add(oc_diags *d, const char *file, int line, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    orr_buf_appendf(&d->text, "%s:%d: ", file, line);
    if (field && *field)
        orr_buf_appendf(&d->text, "%s: ", field);
    orr_buf_vappendf(&d->text, fmt, ap);
    orr_buf_append_byte(&d->text, '\n');
    va_end(ap);
    d->n++;
}

void oc_diags_free(oc_diags *d)
{
    orr_buf_free(&d->text);
    d->n = 0;
}

/* ------------------------------------------------------- YAML to JSON */

struct oc__conv {
    yaml_parser_t parser;
    const char *file;
    oc_diags *diags;
    oc_mark *marks;
    size_t nmarks, cap;
    size_t nodes;
    int failed;
};

static void oc__mark(struct oc__conv *c, const char *path, int line)
{
    if (c->nmarks == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 32;
        c->marks = orr_xrealloc(c->marks, c->cap * sizeof(*c->marks));
    }
    c->marks[c->nmarks].path = orr_xstrdup(path);
    c->marks[c->nmarks].line = line;
    c->nmarks++;
}

static void oc__fail(struct oc__conv *c, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void oc__fail(struct oc__conv *c, int line, const char *field, const char *fmt, ...)
{
    if (c->failed)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    oc_diag_add(c->diags, c->file, line, field, "%s", msg);
    c->failed = 1;
}

static int oc__next(struct oc__conv *c, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&c->parser, ev)) {
        oc__fail(c, (int)c->parser.problem_mark.line + 1, NULL, "not valid YAML: %s%s%s",
                 c->parser.problem ? c->parser.problem : "syntax error",
                 c->parser.context ? " " : "", c->parser.context ? c->parser.context : "");
        return -1;
    }
    return 0;
}

static int oc__match(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

/* A plain scalar by the YAML 1.2 core schema. NULL + failure on a number
 * JSON cannot hold. */
static json_t *oc__plain(struct oc__conv *c, const char *s, int line, const char *path)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    if (oc__match(s, nulls))
        return json_null();
    if (oc__match(s, trues))
        return json_true();
    if (oc__match(s, falses))
        return json_false();
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    size_t digits = strspn(p, "0123456789");
    if (digits && !p[digits]) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == ERANGE) {
            oc__fail(c, line, path, "integer %s out of range", s);
            return NULL;
        }
        return json_integer(v);
    }
    if ((s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) && s[2]) {
        int base = s[1] == 'x' ? 16 : 8;
        const char *ok = base == 16 ? "0123456789abcdefABCDEF" : "01234567";
        if (strspn(s + 2, ok) == strlen(s + 2)) {
            errno = 0;
            long long v = strtoll(s + 2, NULL, base);
            if (errno == ERANGE) {
                oc__fail(c, line, path, "integer %s out of range", s);
                return NULL;
            }
            return json_integer(v);
        }
    }
    /* float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
    const char *q = p;
    size_t ip = strspn(q, "0123456789");
    q += ip;
    size_t fp = 0;
    int dot = 0;
    if (*q == '.') {
        dot = 1;
        q++;
        fp = strspn(q, "0123456789");
        q += fp;
    }
    int isnum = (ip || fp) && (dot || *q == 'e' || *q == 'E');
    if (isnum && (*q == 'e' || *q == 'E')) {
        q++;
        if (*q == '-' || *q == '+')
            q++;
        size_t ep = strspn(q, "0123456789");
        isnum = ep > 0;
        q += ep;
    }
    if (isnum && !*q) {
        double v = strtod(s, NULL);
        if (!isfinite(v)) {
            oc__fail(c, line, path, "number %s out of range", s);
            return NULL;
        }
        return json_real(v);
    }
    static const char *const specials[] = {".inf",  ".Inf", ".INF", "-.inf", "-.Inf", "-.INF",
                                           "+.inf", ".nan", ".NaN", ".NAN",  NULL};
    if (oc__match(s, specials)) {
        oc__fail(c, line, path, "%s cannot be written in JSON", s);
        return NULL;
    }
    return json_string(s);
}

static json_t *oc__node(struct oc__conv *c, yaml_event_t *ev, const char *path, int depth,
                        int key_line);

static json_t *oc__scalar(struct oc__conv *c, yaml_event_t *ev, const char *path)
{
    int line = (int)ev->start_mark.line + 1;
    const char *v = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (memchr(v, 0, n)) {
        oc__fail(c, line, path, "a NUL character is not allowed");
        return NULL;
    }
    if (tag && strcmp(tag, YAML_STR_TAG) != 0 && strcmp(tag, "!") != 0) {
        oc__fail(c, line, path, "tag %s is not supported", tag);
        return NULL;
    }
    oc__mark(c, path, line);
    json_t *j;
    if (tag || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        j = json_stringn(v, n);
    else
        j = oc__plain(c, v, line, path);
    if (!j && !c->failed)
        oc__fail(c, line, path, "not valid UTF-8");
    return j;
}

static json_t *oc__seq(struct oc__conv *c, const char *path, int depth)
{
    json_t *arr = json_array();
    for (size_t i = 0;; i++) {
        yaml_event_t ev;
        if (oc__next(c, &ev))
            goto fail;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return arr;
        }
        char p[512];
        orr_json_index_path(p, sizeof(p), path, i);
        json_t *v = oc__node(c, &ev, p, depth + 1, 0);
        yaml_event_delete(&ev);
        if (!v)
            goto fail;
        json_array_append_new(arr, v);
    }
fail:
    json_decref(arr);
    return NULL;
}

static json_t *oc__map(struct oc__conv *c, const char *path, int depth)
{
    json_t *obj = json_object();
    for (;;) {
        yaml_event_t ev;
        if (oc__next(c, &ev))
            goto fail;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return obj;
        }
        int line = (int)ev.start_mark.line + 1;
        if (ev.type != YAML_SCALAR_EVENT) {
            oc__fail(c, line, path, "keys must be plain strings");
            yaml_event_delete(&ev);
            goto fail;
        }
        char *key = orr_xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
        int bad = strlen(key) != ev.data.scalar.length;
        yaml_event_delete(&ev);
        char p[512];
        orr_json_path(p, sizeof(p), path, key);
        if (bad) {
            oc__fail(c, line, path, "a key holds a NUL character");
        } else if (json_object_get(obj, key)) {
            oc__fail(c, line, p, "given twice");
        } else if (oc__next(c, &ev) == 0) {
            json_t *v = oc__node(c, &ev, p, depth + 1, line);
            yaml_event_delete(&ev);
            if (v && json_object_set_new(obj, key, v) != 0)
                oc__fail(c, line, p, "key is not valid UTF-8");
            if (v) {
                free(key);
                continue;
            }
        }
        free(key);
        goto fail;
    }
fail:
    json_decref(obj);
    return NULL;
}

/* One node; key_line: the line of its key when it is a mapping's value (a
 * block under "retries:" is marked at that line, not at its first key). */
static json_t *oc__node(struct oc__conv *c, yaml_event_t *ev, const char *path, int depth,
                        int key_line)
{
    int line = (int)ev->start_mark.line + 1;
    int cline = key_line > 0 ? key_line : line;
    if (++c->nodes > OC_SPEC_MAX_NODES) {
        oc__fail(c, line, path, "more than %d values in one file", OC_SPEC_MAX_NODES);
        return NULL;
    }
    if (depth > OC_SPEC_MAX_DEPTH) {
        oc__fail(c, line, path, "nested deeper than %d levels", OC_SPEC_MAX_DEPTH);
        return NULL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.anchor)
            break;
        return oc__scalar(c, ev, path);
    case YAML_SEQUENCE_START_EVENT:
        if (ev->data.sequence_start.anchor)
            break;
        oc__mark(c, path, cline);
        return oc__seq(c, path, depth);
    case YAML_MAPPING_START_EVENT:
        if (ev->data.mapping_start.anchor)
            break;
        oc__mark(c, path, cline);
        return oc__map(c, path, depth);
    default:
        break;
    }
    oc__fail(c, line, path, "anchors and aliases are not supported");
    return NULL;
}

/* --------------------------------------------------------- documents */

static json_t *oc__schema_src(const char *kind)
{
    static const char wf[] =
        "{\"type\":\"object\",\"required\":[\"name\",\"team\",\"tasks\"],"
        "\"additionalProperties\":false,\"properties\":{"
        "\"name\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$\"},"
        "\"team\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"
        "\"description\":{\"type\":\"string\",\"maxLength\":2000},"
        "\"tasks\":{\"type\":\"array\",\"maxItems\":1000,\"uniqueItems\":true,"
        "\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128}}}}";
    static const char pool[] =
        "{\"type\":\"object\",\"required\":[\"name\",\"capacity\"],"
        "\"additionalProperties\":false,\"properties\":{"
        "\"name\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$\"},"
        "\"capacity\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":100000}}}";
    static const char ds[] =
        "{\"type\":\"object\",\"required\":[\"name\",\"kind\",\"params\"],"
        "\"additionalProperties\":false,\"properties\":{"
        "\"name\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$\"},"
        "\"kind\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64},"
        "\"params\":{\"type\":\"object\"},"
        "\"password_env\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z_][A-Za-z0-9_]*$\"}}}";
    const char *src = strcmp(kind, "workflow") == 0 ? wf : strcmp(kind, "pool") == 0 ? pool : ds;
    return orr_xcheck(json_loads(src, 0, NULL));
}

/* The compiled schema of a kind, kept for the life of the process. */
static const orr_jschema *oc__schema(const char *kind, orr_err *err)
{
    static orr_jschema *cache[3];
    if (strcmp(kind, "task") == 0) {
        const orr_jschema *s = NULL;
        return orr_schema_get("task.schema.json", &s, err) == ORR_OK ? s : NULL;
    }
    int i = strcmp(kind, "workflow") == 0 ? 0 : strcmp(kind, "pool") == 0 ? 1 : 2;
    if (!cache[i]) {
        json_t *src = oc__schema_src(kind);
        orr_jschema_load(src, &cache[i], err);
        json_decref(src);
    }
    return cache[i];
}

static const char *const oc__kinds[] = {"task", "workflow", "pool", "datasource", NULL};

int oc_doc_line(const oc_doc *d, const char *path)
{
    char p[512];
    snprintf(p, sizeof(p), "%s", path);
    for (;;) {
        for (size_t i = 0; i < d->nmarks; i++)
            if (strcmp(d->marks[i].path, p) == 0)
                return d->marks[i].line;
        char *cut = strrchr(p, '.'), *br = strrchr(p, '[');
        if (br && (!cut || br > cut))
            cut = br;
        if (!cut)
            return d->line;
        *cut = 0;
    }
}

static void oc__doc_free(oc_doc *d)
{
    free(d->file);
    free(d->kind);
    free(d->name);
    json_decref(d->spec);
    for (size_t i = 0; i < d->nmarks; i++)
        free(d->marks[i].path);
    free(d->marks);
}

/* Check one document and append it to docs; 0 when it was fine. */
static int oc__document(const char *file, int line, json_t *root, struct oc__conv *c, oc_docs *docs,
                        oc_diags *diags)
{
    oc_doc d = {.file = orr_xstrdup(file), .line = line, .marks = c->marks, .nmarks = c->nmarks};
    c->marks = NULL;
    c->nmarks = c->cap = 0;
    int bad = 1;
    if (!json_is_object(root)) {
        oc_diag_add(diags, file, line, NULL,
                    "a document is a mapping with kind and spec (kind: task, workflow, pool or "
                    "datasource)");
        goto out;
    }
    const char *it;
    json_t *v;
    json_object_foreach(root, it, v)
    {
        if (strcmp(it, "kind") != 0 && strcmp(it, "spec") != 0) {
            oc_diag_add(diags, file, oc_doc_line(&d, it), it,
                        "unknown field (a document holds kind and spec)");
            goto out;
        }
    }
    const char *kind = json_string_value(json_object_get(root, "kind"));
    if (!kind) {
        oc_diag_add(diags, file, oc_doc_line(&d, "kind"), "kind",
                    "is required: task, workflow, pool or datasource");
        goto out;
    }
    if (!oc__match(kind, oc__kinds)) {
        if (strcmp(kind, "calendar") == 0 || strcmp(kind, "alert_rule") == 0 ||
            strcmp(kind, "alert-rule") == 0)
            oc_diag_add(diags, file, oc_doc_line(&d, "kind"), "kind",
                        "%s specs are not supported yet by this platform", kind);
        else
            oc_diag_add(diags, file, oc_doc_line(&d, "kind"), "kind",
                        "must be one of: task, workflow, pool, datasource");
        goto out;
    }
    json_t *spec = json_object_get(root, "spec");
    if (!json_is_object(spec)) {
        oc_diag_add(diags, file, oc_doc_line(&d, "spec"), "spec", "is required: a mapping");
        goto out;
    }
    orr_err e;
    orr_err_clear(&e);
    const orr_jschema *schema = oc__schema(kind, &e);
    if (!schema || orr_jschema_validate(schema, spec, "spec", &e) != ORR_OK) {
        oc_diag_add(diags, file, oc_doc_line(&d, e.field), e.field, "%s", e.msg);
        goto out;
    }
    if (strcmp(kind, "datasource") == 0) {
        static const char *const secret[] = {"password", "secret", "passwd", "token", NULL};
        json_t *params = json_object_get(spec, "params");
        for (int i = 0; secret[i]; i++)
            if (json_object_get(params, secret[i])) {
                char p[256];
                snprintf(p, sizeof(p), "spec.params.%s", secret[i]);
                oc_diag_add(diags, file, oc_doc_line(&d, p), p,
                            "credentials never sit in a file: name the environment variable "
                            "that holds the password in spec.password_env");
                goto out;
            }
    }
    d.kind = orr_xstrdup(kind);
    d.name = orr_xstrdup(json_string_value(json_object_get(spec, "name")));
    d.spec = json_incref(spec);
    docs->v = orr_xrealloc(docs->v, (docs->n + 1) * sizeof(*docs->v));
    docs->v[docs->n++] = d;
    return 0;
out:
    oc__doc_free(&d);
    return bad;
}

orr_status oc_spec_parse(const char *file, const char *text, size_t len, oc_docs *docs,
                         oc_diags *diags)
{
    int before = diags->n;
    if (len > OC_SPEC_MAX_BYTES) {
        oc_diag_add(diags, file, 1, NULL, "larger than %d MiB", OC_SPEC_MAX_BYTES >> 20);
        return ORR_EINVAL;
    }
    struct oc__conv c;
    memset(&c, 0, sizeof(c));
    c.file = file;
    c.diags = diags;
    if (!yaml_parser_initialize(&c.parser))
        orr_xcheck(NULL);
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
    int ndocs = 0;
    for (;;) {
        yaml_event_t ev;
        if (oc__next(&c, &ev))
            break;
        yaml_event_type_t t = ev.type;
        int line = (int)ev.start_mark.line + 1;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
        if (t != YAML_DOCUMENT_START_EVENT)
            continue; /* stream start, document end */
        if (oc__next(&c, &ev))
            break;
        c.nodes = 0;
        line = (int)ev.start_mark.line + 1; /* the document's first node */
        json_t *root = oc__node(&c, &ev, "", 0, 0);
        yaml_event_delete(&ev);
        if (!root)
            break;
        if (json_is_array(root)) {
            /* A JSON file holding a list of documents. */
            size_t i;
            json_t *item;
            oc_mark *all = c.marks;
            size_t nall = c.nmarks;
            c.marks = NULL;
            c.nmarks = c.cap = 0;
            json_array_foreach(root, i, item)
            {
                char pre[32];
                int n = snprintf(pre, sizeof(pre), "[%zu]", i), iline = line;
                for (size_t k = 0; k < nall; k++) {
                    const char *p = all[k].path;
                    if (strncmp(p, pre, (size_t)n) != 0 || (p[n] && p[n] != '.'))
                        continue;
                    if (!p[n])
                        iline = all[k].line;
                    oc__mark(&c, p[n] ? p + n + 1 : "", all[k].line);
                }
                oc__document(file, iline, item, &c, docs, diags);
                ndocs++;
            }
            for (size_t k = 0; k < nall; k++)
                free(all[k].path);
            free(all);
        } else if (!json_is_null(root)) {
            oc__document(file, line, root, &c, docs, diags);
            ndocs++;
        }
        json_decref(root);
    }
    if (!c.failed && ndocs == 0 && diags->n == before)
        oc_diag_add(diags, file, 1, NULL, "holds no document");
    for (size_t k = 0; k < c.nmarks; k++)
        free(c.marks[k].path);
    free(c.marks);
    yaml_parser_delete(&c.parser);
    return diags->n == before ? ORR_OK : ORR_EINVAL;
}

static int oc__cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int oc__spec_name(const char *n)
{
    size_t l = strlen(n);
    return (l > 5 && strcmp(n + l - 5, ".yaml") == 0) ||
           (l > 4 && strcmp(n + l - 4, ".yml") == 0) || (l > 5 && strcmp(n + l - 5, ".json") == 0);
}

orr_status oc_spec_load(const char *path, oc_docs *docs, oc_diags *diags)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        oc_diag_add(diags, path, 0, NULL, "%s", strerror(errno));
        return ORR_EIO;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *dir = opendir(path);
        if (!dir) {
            oc_diag_add(diags, path, 0, NULL, "%s", strerror(errno));
            return ORR_EIO;
        }
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_name[0] == '.')
                continue;
            names = orr_xrealloc(names, (n + 1) * sizeof(*names));
            names[n++] = orr_xstrdup(de->d_name);
        }
        closedir(dir);
        qsort(names, n, sizeof(*names), oc__cmp_str);
        orr_status s = ORR_OK;
        for (size_t i = 0; i < n; i++) {
            orr_buf p = ORR_BUF_INIT;
            orr_buf_appendf(&p, "%s/%s", path, names[i]);
            struct stat cs;
            if (stat(p.data, &cs) == 0 && (S_ISDIR(cs.st_mode) || oc__spec_name(names[i]))) {
                orr_status r = oc_spec_load(p.data, docs, diags);
                if (r != ORR_OK && (s == ORR_OK || r == ORR_EIO))
                    s = r;
            }
            orr_buf_free(&p);
            free(names[i]);
        }
        free(names);
        return s;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        oc_diag_add(diags, path, 0, NULL, "%s", strerror(errno));
        return ORR_EIO;
    }
    orr_buf b = ORR_BUF_INIT;
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len <= OC_SPEC_MAX_BYTES)
        orr_buf_append(&b, chunk, got);
    int rerr = ferror(f);
    fclose(f);
    if (rerr) {
        orr_buf_free(&b);
        oc_diag_add(diags, path, 0, NULL, "read error");
        return ORR_EIO;
    }
    orr_status s = oc_spec_parse(path, b.data ? b.data : "", b.len, docs, diags);
    orr_buf_free(&b);
    return s;
}

void oc_docs_free(oc_docs *docs)
{
    for (size_t i = 0; i < docs->n; i++)
        oc__doc_free(&docs->v[i]);
    free(docs->v);
    docs->v = NULL;
    docs->n = 0;
}

/* ---------------------------------------------------------- YAML out */

static int oc__plain_key(const char *k)
{
    if (!*k)
        return 0;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.' || *p == '/'))
            return 0;
    /* a key that reads as something else (true, 12, null) is quoted */
    static const char *const special[] = {"true", "True", "TRUE", "false", "False", "FALSE", "null",
                                          "Null", "NULL", "~",    "-",     ".inf",  ".nan",  NULL};
    if (oc__match(k, special))
        return 0;
    if ((k[0] >= '0' && k[0] <= '9') || k[0] == '-' || k[0] == '.')
        return 0;
    return 1;
}

/* A double-quoted YAML string. s is valid UTF-8 (it came from jansson).
 * What YAML does not allow raw in a stream (controls, C1, U+FEFF, U+FFFE,
 * U+FFFF) is escaped; everything else is written as it is. */
static void oc__yaml_str(orr_buf *out, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    orr_buf_append_byte(out, '"');
    while (p < end) {
        unsigned c = *p;
        size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (len > (size_t)(end - p))
            len = (size_t)(end - p);
        uint32_t cp = c;
        if (len == 2)
            cp = ((c & 0x1Fu) << 6) | (p[1] & 0x3Fu);
        else if (len == 3)
            cp = ((c & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
        else if (len == 4)
            cp = ((c & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) |
                 (p[3] & 0x3Fu);
        if (cp == '"' || cp == '\\')
            orr_buf_appendf(out, "\\%c", (char)cp);
        else if (cp == '\n')
            orr_buf_append_str(out, "\\n");
        else if (cp == '\t')
            orr_buf_append_str(out, "\\t");
        else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || cp == 0xFEFF ||
                 cp == 0xFFFE || cp == 0xFFFF || (cp >= 0xD800 && cp < 0xE000))
            orr_buf_appendf(out, "\\u%04X", (unsigned)cp);
        else
            orr_buf_append(out, p, len);
        p += len;
    }
    orr_buf_append_byte(out, '"');
}

static void oc__yaml_key(orr_buf *out, const char *k)
{
    if (oc__plain_key(k))
        orr_buf_append_str(out, k);
    else
        oc__yaml_str(out, k, strlen(k));
}

static int oc__empty_container(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) == 0) ||
           (json_is_array(v) && json_array_size(v) == 0);
}

static void oc__yaml_value(orr_buf *out, const json_t *v, int indent);

static void oc__yaml_scalar(orr_buf *out, const json_t *v)
{
    if (json_is_string(v))
        oc__yaml_str(out, json_string_value(v), json_string_length(v));
    else if (json_is_object(v))
        orr_buf_append_str(out, "{}");
    else if (json_is_array(v))
        orr_buf_append_str(out, "[]");
    else
        orr_json_dump_buf(v, out);
}

static void oc__yaml_value(orr_buf *out, const json_t *v, int indent)
{
    if (json_is_object(v) && json_object_size(v)) {
        const char *k;
        json_t *c;
        int first = 1;
        json_object_foreach((json_t *)v, k, c)
        {
            if (!first)
                orr_buf_appendf(out, "%*s", indent, "");
            first = 0;
            oc__yaml_key(out, k);
            orr_buf_append_byte(out, ':');
            if ((json_is_object(c) || json_is_array(c)) && !oc__empty_container(c)) {
                orr_buf_append_byte(out, '\n');
                orr_buf_appendf(out, "%*s", indent + 2, "");
                oc__yaml_value(out, c, indent + 2);
            } else {
                orr_buf_append_byte(out, ' ');
                oc__yaml_scalar(out, c);
                orr_buf_append_byte(out, '\n');
            }
        }
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c)
        {
            if (i)
                orr_buf_appendf(out, "%*s", indent, "");
            orr_buf_append_str(out, "- ");
            if ((json_is_object(c) || json_is_array(c)) && !oc__empty_container(c))
                oc__yaml_value(out, c, indent + 2);
            else {
                oc__yaml_scalar(out, c);
                orr_buf_append_byte(out, '\n');
            }
        }
    } else {
        oc__yaml_scalar(out, v);
        orr_buf_append_byte(out, '\n');
    }
}

void oc_yaml_write(orr_buf *out, const char *kind, const json_t *spec)
{
    orr_buf_appendf(out, "kind: %s\nspec:", kind);
    if (oc__empty_container(spec) || !json_is_object(spec)) {
        orr_buf_append_byte(out, ' ');
        oc__yaml_scalar(out, spec);
        orr_buf_append_byte(out, '\n');
        return;
    }
    orr_buf_append_str(out, "\n  ");
    oc__yaml_value(out, spec, 2);
}
