/* sort_spec.c - strict reading of a sort stream's spec (see sort_spec.h). */
#include "sort_spec.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "orr_json.h"
#include "orr_schemas.h"

#define SPEC_TRY(x)                                                                                \
    do {                                                                                           \
        orr_status rc__ = (x);                                                                     \
        if (rc__ != ORR_OK)                                                                        \
            return rc__;                                                                           \
    } while (0)

int sort_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > SORT_NAME_MAX)
        return 0;
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

static orr_status spec__name(const json_t *obj, const char *path, const char *key, int required,
                             orr_arena *a, const char **out, orr_err *err)
{
    const char *v = NULL;
    char p[256];
    SPEC_TRY(orr_json_get_str(obj, path, key, required, &v, err));
    if (!v)
        return ORR_OK;
    if (!sort_name_ok(v, strlen(v)))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, key),
                           "must be 1..128 characters of A-Z a-z 0-9 _ . - (not . or ..)");
    *out = orr_arena_strdup(a, v);
    return ORR_OK;
}

static orr_status spec__str(const json_t *obj, const char *path, const char *key, int required,
                            orr_arena *a, const char **out, orr_err *err)
{
    const char *v = NULL;
    char p[256];
    SPEC_TRY(orr_json_get_str(obj, path, key, required, &v, err));
    if (!v)
        return ORR_OK;
    if (*v == 0)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, key),
                           "must not be empty");
    *out = orr_arena_strdup(a, v);
    return ORR_OK;
}

static orr_status spec__char(const json_t *obj, const char *path, const char *key, char *out,
                             orr_err *err)
{
    const char *v = NULL;
    char p[256];
    SPEC_TRY(orr_json_get_str(obj, path, key, 0, &v, err));
    if (!v)
        return ORR_OK;
    if (strlen(v) != 1 || v[0] == '\n' || v[0] == '\r')
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, key),
                           "must be exactly one character (not a newline)");
    *out = v[0];
    return ORR_OK;
}

static orr_status spec__source(sort_spec *s, const json_t *src, const char *path, orr_err *err)
{
    static const char *const file_keys[] = {"type", "path", "exit_at_eof", "read_size", NULL};
    static const char *const redis_keys[] = {"type",          "address", "key",    "group",
                                             "consumer",      "field",   "batch",  "block_ms",
                                             "claim_idle_ms", "packs",   "commit", NULL};
    char p[256];
    SPEC_TRY(orr_json_get_str(src, path, "type", 1, &s->source.type, err));
    if (strcmp(s->source.type, "file") == 0) {
        SPEC_TRY(orr_json_allow_keys(src, path, file_keys, err));
        SPEC_TRY(spec__str(src, path, "path", 1, s->arena, &s->source.path, err));
        SPEC_TRY(orr_json_get_bool(src, path, "exit_at_eof", 0, &s->source.exit_at_eof, err));
        s->source.read_size = 1 << 20;
        SPEC_TRY(
            orr_json_get_int(src, path, "read_size", 0, 4096, 64 << 20, &s->source.read_size, err));
        s->source.type = "file";
    } else if (strcmp(s->source.type, "redis") == 0) {
        SPEC_TRY(orr_json_allow_keys(src, path, redis_keys, err));
        SPEC_TRY(spec__str(src, path, "address", 0, s->arena, &s->source.address, err));
        SPEC_TRY(spec__str(src, path, "key", 1, s->arena, &s->source.key, err));
        s->source.group = "sortd";
        SPEC_TRY(spec__str(src, path, "group", 0, s->arena, &s->source.group, err));
        s->source.consumer = "sortd-1";
        SPEC_TRY(spec__str(src, path, "consumer", 0, s->arena, &s->source.consumer, err));
        s->source.field = "r";
        SPEC_TRY(spec__str(src, path, "field", 0, s->arena, &s->source.field, err));
        s->source.batch = 1000;
        SPEC_TRY(orr_json_get_int(src, path, "batch", 0, 1, 100000, &s->source.batch, err));
        s->source.block_ms = 200;
        SPEC_TRY(orr_json_get_int(src, path, "block_ms", 0, 1, 60000, &s->source.block_ms, err));
        s->source.claim_idle_ms = 60000;
        SPEC_TRY(orr_json_get_int(src, path, "claim_idle_ms", 0, 0, INT64_C(86400000),
                                  &s->source.claim_idle_ms, err));
        SPEC_TRY(orr_json_get_bool(src, path, "packs", 0, &s->source.packs, err));
        const char *commit = "ack";
        SPEC_TRY(orr_json_get_str(src, path, "commit", 0, &commit, err));
        snprintf(p, sizeof p, "%s.commit", path);
        if (strcmp(commit, "position") == 0)
            s->source.commit_position = 1;
        else if (strcmp(commit, "ack") != 0)
            return orr_err_set(err, ORR_EINVAL, p, "must be \"ack\" or \"position\", not \"%.64s\"",
                               commit);
        if (s->source.commit_position && s->source.packs)
            return orr_err_set(err, ORR_EINVAL, p,
                               "\"position\" is for one-record entries, not packs");
        s->source.type = "redis";
    } else if (strcmp(s->source.type, "kafka") == 0) {
        static const char *const kafka_keys[] = {"type",        "brokers",   "topic",
                                                 "group",       "batch",     "start",
                                                 "exit_at_eof", "subscribe", "session_timeout_ms",
                                                 NULL};
        const char *start = "earliest";
        SPEC_TRY(orr_json_allow_keys(src, path, kafka_keys, err));
        SPEC_TRY(spec__str(src, path, "brokers", 1, s->arena, &s->source.brokers, err));
        SPEC_TRY(spec__str(src, path, "topic", 1, s->arena, &s->source.topic, err));
        s->source.group = "sortd";
        SPEC_TRY(spec__str(src, path, "group", 0, s->arena, &s->source.group, err));
        s->source.batch = 1000;
        SPEC_TRY(orr_json_get_int(src, path, "batch", 0, 1, 100000, &s->source.batch, err));
        SPEC_TRY(orr_json_get_str(src, path, "start", 0, &start, err));
        if (strcmp(start, "earliest") == 0)
            s->source.start_latest = 0;
        else if (strcmp(start, "latest") == 0)
            s->source.start_latest = 1;
        else
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "start"),
                               "must be earliest or latest");
        SPEC_TRY(orr_json_get_bool(src, path, "exit_at_eof", 0, &s->source.exit_at_eof, err));
        SPEC_TRY(orr_json_get_bool(src, path, "subscribe", 0, &s->source.subscribe, err));
        s->source.session_timeout_ms = 45000;
        SPEC_TRY(orr_json_get_int(src, path, "session_timeout_ms", 0, 6000, 3600000,
                                  &s->source.session_timeout_ms, err));
        s->source.type = "kafka";
    } else {
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "type"),
                           "must be one of: file, redis, kafka");
    }
    return ORR_OK;
}

/* A Kafka source in a consumer group hands partitions between processes:
 * each process would land its own files of the same units, and a unit's
 * _CHECK lists the files of one process only. (After sinks are read.) */
static orr_status spec__kafka_group(const sort_spec *s, const char *root, orr_err *err)
{
    char p[256], q[256];
    if (strcmp(s->source.type, "kafka") != 0 || !s->source.subscribe || !s->sinks.files)
        return ORR_OK;
    const char *field =
        orr_json_path(q, sizeof q, orr_json_path(p, sizeof p, root, "source"), "subscribe");
    return orr_err_set(err, ORR_EINVAL, field,
                       "needs sinks.files false: a unit's files must come from one process; "
                       "use a postgres or handoff sink and let the write stage own the files");
}

static orr_status spec__ftype(const char *name, sort_ftype *out)
{
    static const struct {
        const char *n;
        sort_ftype t;
    } tab[] = {{"u8", SORT_FT_U8},   {"u16", SORT_FT_U16}, {"u32", SORT_FT_U32},
               {"u64", SORT_FT_U64}, {"i32", SORT_FT_I32}, {"i64", SORT_FT_I64},
               {"str", SORT_FT_STR}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcmp(name, tab[i].n) == 0) {
            *out = tab[i].t;
            return ORR_OK;
        }
    }
    return ORR_EINVAL;
}

static orr_status spec__fields(sort_spec *s, const json_t *fmt, const char *path, int binary,
                               int required, orr_err *err)
{
    char fp[256], ip[256], np[256];
    json_t *arr = NULL;
    SPEC_TRY(orr_json_get_array(fmt, path, "fields", required, &arr, err));
    orr_json_path(fp, sizeof fp, path, "fields");
    if (!arr)
        return ORR_OK;
    size_t n = json_array_size(arr);
    if (n == 0 || n > SORT_MAX_FIELDS)
        return orr_err_set(err, ORR_EINVAL, fp, "must list 1..%d fields", SORT_MAX_FIELDS);
    s->format.fields = orr_arena_calloc(s->arena, n, sizeof *s->format.fields);
    s->format.nfields = n;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        orr_json_index_path(ip, sizeof ip, fp, i);
        const char *name = NULL;
        sort_field_spec *f = &s->format.fields[i];
        if (binary) {
            static const char *const keys[] = {"name", "type", NULL};
            const char *type = NULL;
            if (!json_is_object(e))
                return orr_err_set(err, ORR_EINVAL, ip, "must be an object {name, type}");
            SPEC_TRY(orr_json_allow_keys(e, ip, keys, err));
            SPEC_TRY(orr_json_get_str(e, ip, "name", 1, &name, err));
            SPEC_TRY(orr_json_get_str(e, ip, "type", 1, &type, err));
            if (spec__ftype(type, &f->type) != ORR_OK)
                return orr_err_set(err, ORR_EINVAL, orr_json_path(np, sizeof np, ip, "type"),
                                   "must be one of: u8, u16, u32, u64, i32, i64, str");
        } else {
            if (!json_is_string(e))
                return orr_err_set(err, ORR_EINVAL, ip, "must be a string");
            name = json_string_value(e);
            f->type = SORT_FT_TEXT;
        }
        if (*name == 0)
            return orr_err_set(err, ORR_EINVAL, ip, "field name must not be empty");
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->format.fields[j].name, name) == 0)
                return orr_err_set(err, ORR_EINVAL, ip, "duplicate field name \"%s\"", name);
        f->name = orr_arena_strdup(s->arena, name);
    }
    return ORR_OK;
}

static orr_status spec__format(sort_spec *s, const json_t *fmt, const char *path, orr_err *err)
{
    static const char *const keys[] = {"type",         "delimiter",  "fields", "pair_separator",
                                       "kv_separator", "max_record", NULL};
    char p[256];
    SPEC_TRY(orr_json_allow_keys(fmt, path, keys, err));
    SPEC_TRY(orr_json_get_str(fmt, path, "type", 1, &s->format.type, err));
    const char *t = s->format.type;
    s->format.max_record = 1 << 20;
    SPEC_TRY(
        orr_json_get_int(fmt, path, "max_record", 0, 16, 64 << 20, &s->format.max_record, err));
    if (strcmp(t, "delimited") == 0) {
        s->format.type = "delimited";
        s->format.delimiter = '\t';
        SPEC_TRY(spec__char(fmt, path, "delimiter", &s->format.delimiter, err));
        SPEC_TRY(spec__fields(s, fmt, path, 0, 1, err));
    } else if (strcmp(t, "kv") == 0) {
        s->format.type = "kv";
        s->format.pair_sep = '&';
        s->format.kv_sep = '=';
        SPEC_TRY(spec__char(fmt, path, "pair_separator", &s->format.pair_sep, err));
        SPEC_TRY(spec__char(fmt, path, "kv_separator", &s->format.kv_sep, err));
        if (s->format.pair_sep == s->format.kv_sep)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "kv_separator"),
                               "must differ from pair_separator");
        SPEC_TRY(spec__fields(s, fmt, path, 0, 0, err));
    } else if (strcmp(t, "jsonl") == 0) {
        s->format.type = "jsonl";
        SPEC_TRY(spec__fields(s, fmt, path, 0, 0, err));
    } else if (strcmp(t, "binary") == 0) {
        s->format.type = "binary";
        SPEC_TRY(spec__fields(s, fmt, path, 1, 1, err));
    } else {
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "type"),
                           "must be one of: delimited, kv, jsonl, binary");
    }
    if (strcmp(t, "delimited") != 0 && json_object_get(fmt, "delimiter"))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "delimiter"),
                           "only for type delimited");
    if (strcmp(t, "kv") != 0 &&
        (json_object_get(fmt, "pair_separator") || json_object_get(fmt, "kv_separator")))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "pair_separator"),
                           "only for type kv");
    return ORR_OK;
}

/* Index of field name; for kv/jsonl an undeclared name is appended (those
 * formats look fields up by name). -1 if a positional format lacks it. */
static int spec__field_index(sort_spec *s, const char *name)
{
    for (size_t i = 0; i < s->format.nfields; i++)
        if (strcmp(s->format.fields[i].name, name) == 0)
            return (int)i;
    if (strcmp(s->format.type, "kv") != 0 && strcmp(s->format.type, "jsonl") != 0)
        return -1;
    if (s->format.nfields >= SORT_MAX_FIELDS)
        return -1;
    sort_field_spec *nf = orr_arena_calloc(s->arena, s->format.nfields + 1, sizeof *nf);
    if (s->format.nfields)
        memcpy(nf, s->format.fields, s->format.nfields * sizeof *nf);
    nf[s->format.nfields].name = orr_arena_strdup(s->arena, name);
    nf[s->format.nfields].type = SORT_FT_TEXT;
    s->format.fields = nf;
    return (int)s->format.nfields++;
}

static orr_status spec__interface(sort_spec *s, const json_t *doc, const char *root, orr_err *err)
{
    static const char *const keys[] = {"field", "const", NULL};
    char path[256], p[256];
    json_t *o = NULL;
    SPEC_TRY(orr_json_get_obj(doc, root, "interface", 1, &o, err));
    orr_json_path(path, sizeof path, root, "interface");
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object {field} or {const}");
    SPEC_TRY(orr_json_allow_keys(o, path, keys, err));
    const char *field = NULL;
    SPEC_TRY(orr_json_get_str(o, path, "field", 0, &field, err));
    SPEC_TRY(spec__name(o, path, "const", 0, s->arena, &s->iface_const, err));
    if ((field == NULL) == (s->iface_const == NULL))
        return orr_err_set(err, ORR_EINVAL, path, "must have exactly one of: field, const");
    s->iface_field = -1;
    if (field) {
        s->iface_field = spec__field_index(s, field);
        if (s->iface_field < 0)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "field"),
                               "\"%s\" is not a declared field of the format", field);
        if (s->format.fields[s->iface_field].type != SORT_FT_TEXT &&
            s->format.fields[s->iface_field].type != SORT_FT_STR)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "field"),
                               "must be a str field");
    }

    json_t *arr = NULL;
    SPEC_TRY(orr_json_get_array(doc, root, "interfaces", 0, &arr, err));
    SPEC_TRY(orr_json_get_bool(doc, root, "strict_interfaces", 0, &s->strict_interfaces, err));
    if (arr) {
        char ap[256], ip[256];
        orr_json_path(ap, sizeof ap, root, "interfaces");
        size_t n = json_array_size(arr);
        s->interfaces = orr_arena_calloc(s->arena, n ? n : 1, sizeof *s->interfaces);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(arr, i);
            orr_json_index_path(ip, sizeof ip, ap, i);
            if (!json_is_string(e) || !sort_name_ok(json_string_value(e), json_string_length(e)))
                return orr_err_set(err, ORR_EINVAL, ip,
                                   "must be an interface name of A-Z a-z 0-9 _ . -");
            s->interfaces[i] = orr_arena_strdup(s->arena, json_string_value(e));
        }
        s->ninterfaces = n;
    }
    if (s->strict_interfaces && s->ninterfaces == 0)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, root, "interfaces"),
                           "strict_interfaces needs a non-empty interfaces list");
    if (s->iface_const && s->ninterfaces == 0) {
        s->interfaces = orr_arena_calloc(s->arena, 1, sizeof *s->interfaces);
        s->interfaces[0] = s->iface_const;
        s->ninterfaces = 1;
    }
    return ORR_OK;
}

static orr_status spec__time(sort_spec *s, const json_t *doc, const char *root, orr_err *err)
{
    static const char *const keys[] = {"field", "format", "timezone", NULL};
    char path[256], p[256];
    json_t *o = NULL;
    const char *field = NULL, *fmt = NULL, *tz = "UTC", *bucket = NULL;
    SPEC_TRY(orr_json_get_obj(doc, root, "time", 1, &o, err));
    orr_json_path(path, sizeof path, root, "time");
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object");
    SPEC_TRY(orr_json_allow_keys(o, path, keys, err));
    SPEC_TRY(orr_json_get_str(o, path, "field", 1, &field, err));
    SPEC_TRY(orr_json_get_str(o, path, "format", 1, &fmt, err));
    SPEC_TRY(orr_json_get_str(o, path, "timezone", 0, &tz, err));
    if (sort_time_fmt_parse(fmt, &s->time_fmt) != ORR_OK)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "format"),
                           "must be one of: epoch_s, epoch_ms, %%Y-%%m-%%d %%H:%%M:%%S, "
                           "%%Y%%m%%d%%H%%M%%S, iso8601");
    orr_err tzerr = {0};
    if (sort_tz_parse(tz, &s->tz, &tzerr) != ORR_OK)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "timezone"),
                           "%s (UTC, a fixed offset like +08:00 or an IANA zone name like "
                           "Europe/Berlin)",
                           tzerr.msg);
    s->time_field = spec__field_index(s, field);
    if (s->time_field < 0)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "field"),
                           "\"%s\" is not a declared field of the format", field);
    sort_ftype ft = s->format.fields[s->time_field].type;
    if (ft != SORT_FT_TEXT && ft != SORT_FT_STR && s->time_fmt != SORT_TF_EPOCH_S &&
        s->time_fmt != SORT_TF_EPOCH_MS)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "format"),
                           "an integer time field needs epoch_s or epoch_ms");
    SPEC_TRY(orr_json_get_str(doc, root, "bucket", 1, &bucket, err));
    if (sort_bucket_parse(bucket, &s->bucket) != ORR_OK)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, root, "bucket"),
                           "must be one of: 15m, hour, day");
    return ORR_OK;
}

static orr_status spec__split(sort_spec *s, const json_t *doc, const char *root, orr_err *err)
{
    json_t *o = NULL;
    char path[256], p[256];
    SPEC_TRY(orr_json_get_obj(doc, root, "split", 0, &o, err));
    if (!o)
        return ORR_OK;
    orr_json_path(path, sizeof path, root, "split");
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object {interface: factor}");
    size_t n = json_object_size(o), i = 0;
    s->splits = orr_arena_calloc(s->arena, n ? n : 1, sizeof *s->splits);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        int64_t f = 1;
        if (!sort_name_ok(k, strlen(k)))
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, k),
                               "not a valid interface name");
        SPEC_TRY(orr_json_get_int(o, path, k, 1, 1, SORT_MAX_SPLIT, &f, err));
        s->splits[i].interface = orr_arena_strdup(s->arena, k);
        s->splits[i].factor = (uint32_t)f;
        i++;
    }
    s->nsplits = n;
    return ORR_OK;
}

static orr_status spec__output(sort_spec *s, const json_t *doc, const char *root, orr_err *err)
{
    static const char *const keys[] = {"roll_size", "roll_age_ms", "catchup_age_ms", "fsync", NULL};
    json_t *o = NULL;
    char path[256];
    s->output.roll_size = 256LL << 20;
    s->output.roll_age_ms = 600000;
    s->output.catchup_age_ms = 60000;
    s->output.fsync = 1;
    SPEC_TRY(orr_json_get_obj(doc, root, "output", 0, &o, err));
    if (!o) {
        s->output.catchup_age_ms = s->output.roll_age_ms;
        return ORR_OK;
    }
    orr_json_path(path, sizeof path, root, "output");
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object");
    SPEC_TRY(orr_json_allow_keys(o, path, keys, err));
    SPEC_TRY(orr_json_get_int(o, path, "roll_size", 0, 1024, INT64_C(64) << 30,
                              &s->output.roll_size, err));
    SPEC_TRY(orr_json_get_int(o, path, "roll_age_ms", 0, 100, INT64_C(86400000),
                              &s->output.roll_age_ms, err));
    /* Catching up, a file per unit per roll_age_ms would be many small
     * files for records that are late already: they fill for longer. */
    if (s->output.roll_age_ms > s->output.catchup_age_ms)
        s->output.catchup_age_ms = s->output.roll_age_ms;
    json_t *cu = json_object_get(o, "catchup_age_ms");
    SPEC_TRY(orr_json_get_int(o, path, "catchup_age_ms", 0, 100, INT64_C(86400000),
                              &s->output.catchup_age_ms, err));
    if (cu && s->output.catchup_age_ms < s->output.roll_age_ms) {
        char p[256];
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "catchup_age_ms"),
                           "must be at least roll_age_ms (%" PRId64 ")", s->output.roll_age_ms);
    }
    SPEC_TRY(orr_json_get_bool(o, path, "fsync", 0, &s->output.fsync, err));
    return ORR_OK;
}

static orr_status spec__check(sort_spec *s, const json_t *doc, const char *root, orr_err *err)
{
    static const char *const keys[] = {"enabled", "grace_ms", "clock", "late", NULL};
    json_t *o = NULL;
    char path[256], p[256];
    s->check.enabled = 1;
    s->check.grace_ms = 600000;
    SPEC_TRY(orr_json_get_obj(doc, root, "check", 0, &o, err));
    if (!o)
        return ORR_OK;
    orr_json_path(path, sizeof path, root, "check");
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object");
    SPEC_TRY(orr_json_allow_keys(o, path, keys, err));
    SPEC_TRY(orr_json_get_bool(o, path, "enabled", 0, &s->check.enabled, err));
    SPEC_TRY(orr_json_get_int(o, path, "grace_ms", 0, 0, INT64_C(7) * 86400000, &s->check.grace_ms,
                              err));
    const char *clock = "wall", *late = "amend";
    SPEC_TRY(orr_json_get_str(o, path, "clock", 0, &clock, err));
    SPEC_TRY(orr_json_get_str(o, path, "late", 0, &late, err));
    if (strcmp(clock, "wall") == 0)
        s->check.clock = SORT_CLOCK_WALL;
    else if (strcmp(clock, "data") == 0)
        s->check.clock = SORT_CLOCK_DATA;
    else
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "clock"),
                           "must be one of: wall, data");
    if (strcmp(late, "amend") == 0)
        s->check.late = SORT_LATE_AMEND;
    else if (strcmp(late, "drop") == 0)
        s->check.late = SORT_LATE_DROP;
    else
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "late"),
                           "must be one of: amend, drop");
    return ORR_OK;
}

static orr_status spec__pg(sort_spec *s, const json_t *o, const char *path, orr_err *err)
{
    static const char *const keys[] = {"dsn",        "dsn_env",  "table", "columns",
                                       "batch_rows", "batch_ms", NULL};
    char p[256];
    const char *dsn = NULL, *env = NULL, *table = NULL;
    json_t *cols = NULL;
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object");
    SPEC_TRY(orr_json_allow_keys(o, path, keys, err));
    SPEC_TRY(orr_json_get_str(o, path, "dsn", 0, &dsn, err));
    SPEC_TRY(orr_json_get_str(o, path, "dsn_env", 0, &env, err));
    if ((dsn != NULL) == (env != NULL))
        return orr_err_set(err, ORR_EINVAL, path, "exactly one of dsn, dsn_env is required");
    SPEC_TRY(orr_json_get_str(o, path, "table", 1, &table, err));
    size_t tl = strlen(table);
    const char *dot = strchr(table, '.');
    if (tl == 0 || tl > SORT_NAME_MAX ||
        (dot && (dot == table || dot[1] == 0 || strchr(dot + 1, '.'))))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "table"),
                           "must be table or schema.table");
    SPEC_TRY(orr_json_get_array(o, path, "columns", 1, &cols, err));
    orr_json_path(p, sizeof p, path, "columns");
    size_t n = json_array_size(cols);
    if (n == 0 || n > SORT_MAX_FIELDS)
        return orr_err_set(err, ORR_EINVAL, p, "must list 1..%d field names", SORT_MAX_FIELDS);
    s->sinks.columns = orr_arena_calloc(s->arena, n, sizeof *s->sinks.columns);
    s->sinks.col_field = orr_arena_calloc(s->arena, n, sizeof *s->sinks.col_field);
    for (size_t i = 0; i < n; i++) {
        const char *c = json_string_value(json_array_get(cols, i));
        char pi[300];
        snprintf(pi, sizeof pi, "%s[%zu]", p, i);
        if (!c)
            return orr_err_set(err, ORR_EINVAL, pi, "must be a string");
        int f = -1;
        for (size_t k = 0; k < s->format.nfields && f < 0; k++)
            if (strcmp(s->format.fields[k].name, c) == 0)
                f = (int)k;
        if (f < 0)
            return orr_err_set(err, ORR_EINVAL, pi, "not a field of format.fields: %s", c);
        s->sinks.columns[i] = orr_arena_strdup(s->arena, c);
        s->sinks.col_field[i] = f;
    }
    s->sinks.ncolumns = n;
    s->sinks.batch_rows = 1000;
    s->sinks.batch_ms = 1000;
    SPEC_TRY(orr_json_get_int(o, path, "batch_rows", 0, 1, 100000, &s->sinks.batch_rows, err));
    SPEC_TRY(orr_json_get_int(o, path, "batch_ms", 0, 10, 600000, &s->sinks.batch_ms, err));
    s->sinks.dsn = dsn ? orr_arena_strdup(s->arena, dsn) : NULL;
    s->sinks.dsn_env = env ? orr_arena_strdup(s->arena, env) : NULL;
    s->sinks.table = orr_arena_strdup(s->arena, table);
    s->sinks.pg = 1;
    return ORR_OK;
}

const char *const sort_codec_names[3] = {"auto", "lz4", "snappy"};

static orr_status spec__handoff(sort_spec *s, const json_t *o, const char *path, orr_err *err)
{
    static const char *const keys[] = {"key",        "address",  "streams",   "max_packs",
                                       "max_bytes",  "flush_ms", "pack_size", "partition",
                                       "pack_codec", NULL};
    char p[256];
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object");
    SPEC_TRY(orr_json_allow_keys(o, path, keys, err));
    s->sinks.ho_key = orr_arena_sprintf(s->arena, "orrery:handoff:%s", s->name);
    SPEC_TRY(spec__str(o, path, "key", 0, s->arena, &s->sinks.ho_key, err));
    if (strlen(s->sinks.ho_key) > 200)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "key"),
                           "at most 200 bytes");
    SPEC_TRY(spec__str(o, path, "address", 0, s->arena, &s->sinks.ho_address, err));
    SPEC_TRY(
        orr_json_get_int(o, path, "streams", 1, 1, SORT_MAX_HANDOFF, &s->sinks.ho_streams, err));
    s->sinks.ho_max_packs = 16384;
    SPEC_TRY(orr_json_get_int(o, path, "max_packs", 0, 1, 100000, &s->sinks.ho_max_packs, err));
    s->sinks.ho_max_bytes = INT64_C(256) << 20;
    SPEC_TRY(orr_json_get_int(o, path, "max_bytes", 0, INT64_C(1) << 20, INT64_C(1) << 40,
                              &s->sinks.ho_max_bytes, err));
    s->sinks.ho_flush_ms = 200;
    SPEC_TRY(orr_json_get_int(o, path, "flush_ms", 0, 1, 60000, &s->sinks.ho_flush_ms, err));
    s->sinks.ho_pack_bytes = 256 << 10;
    SPEC_TRY(
        orr_json_get_int(o, path, "pack_size", 0, 4096, 64 << 20, &s->sinks.ho_pack_bytes, err));
    /* Parse stages feeding the same write stages must not share a partition:
     * the write stage orders each (unit, partition) by offset. */
    s->sinks.ho_partition = -1;
    SPEC_TRY(orr_json_get_int(o, path, "partition", 0, 0, 63, &s->sinks.ho_partition, err));
    if (s->sinks.ho_partition >= 0 && strcmp(s->source.type, "kafka") == 0)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "partition"),
                           "not with a kafka source: packs carry the topic's partitions");
    const char *codec = sort_codec_names[SORT_CODEC_AUTO];
    SPEC_TRY(spec__str(o, path, "pack_codec", 0, s->arena, &codec, err));
    s->sinks.ho_codec = -1;
    for (int c = SORT_CODEC_AUTO; c <= SORT_CODEC_SNAPPY; c++)
        if (strcmp(codec, sort_codec_names[c]) == 0)
            s->sinks.ho_codec = c;
    if (s->sinks.ho_codec < 0)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "pack_codec"),
                           "must be \"auto\", \"lz4\" or \"snappy\", not \"%.40s\"", codec);
    s->sinks.handoff = 1;
    return ORR_OK;
}

static orr_status spec__sinks(sort_spec *s, const json_t *doc, const char *root, orr_err *err)
{
    static const char *const keys[] = {"files", "postgres", "handoff", NULL};
    json_t *o = NULL, *pg = NULL, *ho = NULL;
    char path[256], p[256];
    s->sinks.files = 1;
    SPEC_TRY(orr_json_get_obj(doc, root, "sinks", 0, &o, err));
    if (!o)
        return ORR_OK;
    orr_json_path(path, sizeof path, root, "sinks");
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, path, "must be an object");
    SPEC_TRY(orr_json_allow_keys(o, path, keys, err));
    SPEC_TRY(orr_json_get_bool(o, path, "files", 0, &s->sinks.files, err));
    SPEC_TRY(orr_json_get_obj(o, path, "postgres", 0, &pg, err));
    if (pg)
        SPEC_TRY(spec__pg(s, pg, orr_json_path(p, sizeof p, path, "postgres"), err));
    SPEC_TRY(orr_json_get_obj(o, path, "handoff", 0, &ho, err));
    if (ho) {
        SPEC_TRY(spec__handoff(s, ho, orr_json_path(p, sizeof p, path, "handoff"), err));
        if (s->sinks.files)
            return orr_err_set(err, ORR_EINVAL, p,
                               "needs \"files\": false: the write stages land the unit files");
    }
    if (!s->sinks.files && !s->sinks.pg && !s->sinks.handoff)
        return orr_err_set(err, ORR_EINVAL, path, "at least one sink is required");
    return ORR_OK;
}

/* The fields a record's parse must store: up to the last one the route or
 * a sink reads (sort_record_route, sort_sink_pg.c). */
static void spec__parse_upto(sort_spec *s)
{
    size_t upto = 0;
    if (s->iface_field >= 0)
        upto = (size_t)s->iface_field + 1;
    if (s->time_field >= 0 && (size_t)s->time_field + 1 > upto)
        upto = (size_t)s->time_field + 1;
    for (size_t i = 0; s->sinks.pg && i < s->sinks.ncolumns; i++)
        if ((size_t)s->sinks.col_field[i] + 1 > upto)
            upto = (size_t)s->sinks.col_field[i] + 1;
    s->format.parse_upto = upto;
}

static orr_status spec__parse(sort_spec *s, const json_t *doc, const char *root, orr_err *err)
{
    static const char *const keys[] = {
        "name", "business", "source", "format", "interface", "interfaces", "strict_interfaces",
        "time", "bucket",   "split",  "output", "check",     "$schema",    "sinks",
        NULL};
    char p[256];
    if (!json_is_object(doc))
        return orr_err_set(err, ORR_EINVAL, root, "must be a JSON object");
    SPEC_TRY(orr_json_allow_keys(doc, root, keys, err));
    SPEC_TRY(spec__name(doc, root, "name", 1, s->arena, &s->name, err));
    SPEC_TRY(spec__name(doc, root, "business", 1, s->arena, &s->business, err));
    json_t *o = NULL;
    SPEC_TRY(orr_json_get_obj(doc, root, "source", 1, &o, err));
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, root, "source"),
                           "must be an object");
    SPEC_TRY(spec__source(s, o, orr_json_path(p, sizeof p, root, "source"), err));
    SPEC_TRY(orr_json_get_obj(doc, root, "format", 1, &o, err));
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, root, "format"),
                           "must be an object");
    SPEC_TRY(spec__format(s, o, orr_json_path(p, sizeof p, root, "format"), err));
    SPEC_TRY(spec__time(s, doc, root, err));
    SPEC_TRY(spec__interface(s, doc, root, err));
    SPEC_TRY(spec__split(s, doc, root, err));
    SPEC_TRY(spec__output(s, doc, root, err));
    SPEC_TRY(spec__check(s, doc, root, err));
    SPEC_TRY(spec__sinks(s, doc, root, err));
    SPEC_TRY(spec__kafka_group(s, root, err));
    spec__parse_upto(s);
    return ORR_OK;
}

orr_status sort_spec_parse(const json_t *doc, const char *root_path, sort_spec **out, orr_err *err)
{
    /* Shape and ranges first, by the schema halleyd checks a stream with:
     * both refuse the same spec with the same message. */
    const orr_jschema *js = NULL;
    orr_status rc = orr_schema_get("sort-stream.schema.json", &js, err);
    if (rc == ORR_OK)
        rc = orr_jschema_validate(js, doc, root_path ? root_path : "", err);
    if (rc != ORR_OK)
        return rc;
    orr_arena *a = orr_arena_create(0);
    sort_spec *s = orr_arena_calloc(a, 1, sizeof *s);
    s->arena = a;
    rc = spec__parse(s, doc, root_path ? root_path : "", err);
    if (rc != ORR_OK) {
        orr_arena_destroy(a);
        return rc;
    }
    *out = s;
    return ORR_OK;
}

orr_status sort_spec_load_file(const char *path, sort_spec **out, orr_err *err)
{
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        if (je.line < 0 || strstr(je.text, "unable to open"))
            return orr_err_set(err, ORR_EIO, path, "%s", je.text);
        return orr_err_set(err, ORR_EINVAL, path, "line %d column %d: %s", je.line, je.column,
                           je.text);
    }
    orr_status rc = sort_spec_parse(doc, "spec", out, err);
    json_decref(doc);
    return rc;
}

void sort_spec_free(sort_spec *s)
{
    if (s)
        orr_arena_destroy(s->arena);
}

orr_status sort_spec_write_stage(const sort_spec *parent, int64_t index, sort_spec **out,
                                 orr_err *err)
{
    if (!parent->sinks.handoff)
        return orr_err_set(err, ORR_EINVAL, "--handoff-stream", "stream %s has no sinks.handoff",
                           parent->name);
    if (index < 0 || index >= parent->sinks.ho_streams)
        return orr_err_set(err, ORR_EINVAL, "--handoff-stream",
                           "must be 0..%" PRId64 " (sinks.handoff.streams)",
                           parent->sinks.ho_streams - 1);
    orr_arena *a = orr_arena_create(0);
    sort_spec *w = orr_arena_calloc(a, 1, sizeof *w);
    *w = *parent; /* strings and arrays stay the parent's */
    w->arena = a;
    memset(&w->source, 0, sizeof w->source);
    w->source.type = "redis";
    w->source.address = parent->sinks.ho_address;
    w->source.key = orr_arena_sprintf(a, "%s.%" PRId64, parent->sinks.ho_key, index);
    w->source.group = "sortd-write";
    w->source.consumer = orr_arena_sprintf(a, "write-%" PRId64, index);
    w->source.field = "r";
    w->source.batch = 64;
    w->source.block_ms = 200;
    w->source.claim_idle_ms = 0; /* one consumer per hand-off stream */
    w->source.packs = 1;
    memset(&w->sinks, 0, sizeof w->sinks);
    w->sinks.files = 1;
    w->stage_index = index;
    w->stage_count = parent->sinks.ho_streams;
    *out = w;
    return ORR_OK;
}

uint32_t sort_spec_split(const sort_spec *s, const char *iface, size_t len)
{
    for (size_t i = 0; i < s->nsplits; i++)
        if (strlen(s->splits[i].interface) == len &&
            memcmp(s->splits[i].interface, iface, len) == 0)
            return s->splits[i].factor;
    return 1;
}

int sort_spec_iface_index(const sort_spec *s, const char *iface, size_t len)
{
    for (size_t i = 0; i < s->ninterfaces; i++)
        if (strlen(s->interfaces[i]) == len && memcmp(s->interfaces[i], iface, len) == 0)
            return (int)i;
    return -1;
}
