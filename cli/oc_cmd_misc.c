/* oc_cmd_misc.c - `orrery login` (a password read without echo becomes an
 * API token kept in a 0600 profile), `completion`, `man` and `help`. */
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "oc_cmds.h"
#include "oc_config.h"
#include "oc_http.h"
#include "orr_alloc.h"
#include "orr_buf.h"

/* One line from f without its newline (malloc'ed), NULL at EOF. */
static char *oc__read_line(FILE *f)
{
    orr_buf b = ORR_BUF_INIT;
    int c, any = 0;
    while ((c = fgetc(f)) != EOF) {
        any = 1;
        if (c == '\n')
            break;
        orr_buf_append_byte(&b, (char)c);
    }
    if (!any) {
        orr_buf_free(&b);
        return NULL;
    }
    if (b.len && b.data[b.len - 1] == '\r')
        b.data[--b.len] = 0;
    return orr_buf_detach(&b, NULL);
}

/* Ask on the terminal (echo off for a secret) or read stdin when it is
 * not one. */
static char *oc__ask(oc_ctx *ctx, const char *prompt, int secret)
{
    if (!isatty(STDIN_FILENO))
        return oc__read_line(stdin);
    FILE *tty = fopen("/dev/tty", "r+");
    FILE *in = tty ? tty : stdin;
    fprintf(tty ? tty : ctx->err, "%s", prompt);
    fflush(tty ? tty : ctx->err);
    struct termios old, quiet;
    int restore = 0;
    if (secret && tcgetattr(fileno(in), &old) == 0) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        quiet.c_lflag |= ECHONL;
        restore = tcsetattr(fileno(in), TCSAFLUSH, &quiet) == 0;
    }
    char *line = oc__read_line(in);
    if (restore)
        tcsetattr(fileno(in), TCSAFLUSH, &old);
    if (tty)
        fclose(tty);
    return line;
}

int oc_run_login(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos > 1)
        return oc_fail(ctx, OC_EXIT_USAGE, "login: one URL at most");
    if (a->npos == 1) {
        free(ctx->url);
        size_t n = strlen(a->pos[0]);
        while (n && a->pos[0][n - 1] == '/')
            n--;
        ctx->url = orr_xstrndup(a->pos[0], n);
    }
    if (!ctx->url)
        return oc_fail(ctx, OC_EXIT_USAGE, "login: which galaxyd? (orrery login URL)");
    char *user = oc_arg(a, "user") ? orr_xstrdup(oc_arg(a, "user")) : oc__ask(ctx, "user: ", 0);
    char *pw = NULL, *session = NULL;
    json_t *body = NULL, *out = NULL;
    int rc = OC_EXIT_OK;
    orr_err e;
    orr_err_clear(&e);
    if (!user || !*user) {
        rc = oc_fail(ctx, OC_EXIT_USAGE, "login: no user name");
        goto out;
    }
    pw = oc__ask(ctx, "password: ", 1);
    if (!pw) {
        rc = oc_fail(ctx, OC_EXIT_USAGE, "login: no password");
        goto out;
    }
    body = json_pack("{s:s,s:s}", "name", user, "password", pw);
    memset(pw, 0, strlen(pw));
    if (oc_api_tok(ctx, "", "POST", "/api/v1/auth/login", body, &out, NULL, &e) != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
        goto out;
    }
    session = orr_xstrdup(json_string_value(json_object_get(out, "token")));
    json_decref(body);
    json_decref(out);
    out = NULL;
    const char *tname = oc_arg(a, "token-name");
    body = json_pack("{s:s}", "name", tname ? tname : "orrery-cli");
    if (oc_arg(a, "expires")) {
        char *t = oc_time_arg(oc_arg(a, "expires"));
        json_object_set_new(body, "expires_at", json_string(t));
        free(t);
    }
    orr_status s = oc_api_tok(ctx, session, "POST", "/api/v1/tokens", body, &out, NULL, &e);
    json_t *ignored = NULL;
    orr_err e2;
    orr_err_clear(&e2);
    oc_api_tok(ctx, session, "POST", "/api/v1/auth/logout", NULL, &ignored, NULL, &e2);
    json_decref(ignored);
    if (s != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
        goto out;
    }
    const char *secret = json_string_value(json_object_get(out, "secret"));
    if (!secret) {
        rc = oc_fail(ctx, OC_EXIT_FAILED, "login: the token answer holds no secret");
        goto out;
    }
    oc_profiles p;
    if (oc_profiles_load(ctx->config_path, &p, &e) != ORR_OK) {
        oc_profiles_free(&p);
        rc = oc_fail(ctx, OC_EXIT_USAGE, "%s: %s", e.field, e.msg);
        goto out;
    }
    oc_profile *pr = oc_profile_get(&p, ctx->profile, 1);
    free(pr->url);
    free(pr->token);
    pr->url = orr_xstrdup(ctx->url);
    pr->token = orr_xstrdup(secret);
    if (!p.current || oc_arg(a, "profile")) {
        free(p.current);
        p.current = orr_xstrdup(ctx->profile);
    }
    s = oc_profiles_save(ctx->config_path, &p, &e);
    oc_profiles_free(&p);
    if (s != ORR_OK) {
        rc = oc_fail(ctx, OC_EXIT_FAILED, "%s: %s", e.field, e.msg);
        goto out;
    }
    if (!ctx->quiet)
        fprintf(ctx->out, "logged in to %s as %s; API token kept in profile %s (%s)\n", ctx->url,
                user, ctx->profile, ctx->config_path);
out:
    if (pw)
        memset(pw, 0, strlen(pw));
    free(pw);
    free(user);
    free(session);
    json_decref(body);
    json_decref(out);
    return rc;
}

int oc_run_completion(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos != 1)
        return oc_fail(ctx, OC_EXIT_USAGE, "completion: bash or zsh?");
    if (strcmp(a->pos[0], "bash") == 0)
        oc_completion_bash(ctx->out);
    else if (strcmp(a->pos[0], "zsh") == 0)
        oc_completion_zsh(ctx->out);
    else
        return oc_fail(ctx, OC_EXIT_USAGE, "completion %s: bash or zsh", a->pos[0]);
    return OC_EXIT_OK;
}

int oc_run_man(oc_ctx *ctx, const oc_args *a)
{
    (void)a;
    oc_man_page(ctx->out);
    return OC_EXIT_OK;
}

int oc_run_help(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos == 0) {
        oc_main_help(ctx->out);
        return OC_EXIT_OK;
    }
    const oc_cmd *c = oc_cmd_find(a->pos[0]);
    if (!c)
        return oc_fail(ctx, OC_EXIT_USAGE, "no command \"%s\" (orrery help)", a->pos[0]);
    oc_cmd_help(c, ctx->out);
    return OC_EXIT_OK;
}
