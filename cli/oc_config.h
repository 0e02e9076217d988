/*
 * oc_config.h - profiles of `orrery`: which galaxyd to talk to, with which
 * API token.
 *
 * The file is $ORRERY_CONFIG, else $XDG_CONFIG_HOME/orrery/config, else
 * ~/.config/orrery/config; it is written with mode 0600 (it holds tokens)
 * in a folder of mode 0700:
 *
 *   current = prod
 *   [prod]
 *   url = https://orrery.example.com
 *   token = orr_...
 *
 * Precedence, highest first: --url/--token, ORRERY_URL/ORRERY_TOKEN, the
 * profile (--profile, else ORRERY_PROFILE, else `current`, else "default").
 */
#ifndef OC_CONFIG_H
#define OC_CONFIG_H

#include "oc.h"
#include "orr_status.h"

typedef struct oc_profile {
    char *name;
    char *url;
    char *token;
} oc_profile;

typedef struct oc_profiles {
    char *current;
    oc_profile *v;
    size_t n;
} oc_profiles;

/* The config file's path (malloc'ed). */
char *oc_config_path(void);
/* Read path; a missing file is an empty set (ORR_OK). ORR_EINVAL naming
 * "path:line" for a line that is not `key = value` or `[name]`. */
orr_status oc_profiles_load(const char *path, oc_profiles *p, orr_err *err);
/* Write atomically (temporary file, fsync, rename) with mode 0600. */
orr_status oc_profiles_save(const char *path, const oc_profiles *p, orr_err *err);
oc_profile *oc_profile_get(oc_profiles *p, const char *name, int create);
void oc_profiles_free(oc_profiles *p);

/* Fill ctx->profile/url/token from options, environment and the file.
 * need_url: fail (usage) when no address is known. Returns an exit code. */
int oc_ctx_resolve(oc_ctx *ctx, const oc_args *a, int need_url);
void oc_ctx_free(oc_ctx *ctx);

#endif
