/*
 * orr_daemon.c - the daemon skeleton (see orr_daemon.h).
 *
 * Stop signals: SIGINT and SIGTERM are blocked in the main thread before a
 * serving command runs, so no thread ever runs a handler for them; they
 * stay pending until a sigwait-family call in a thread that asks for them
 * takes one. The stopper thread asks in 100 ms slices so that ending it
 * needs no signal of its own.
 */
#include "orr_daemon.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_log.h"

struct orr_daemon {
    const orr_daemon_def *def;
    orr_config *cfg;
    const char *argv0;
};

orr_config *orr_daemon_config(const orr_daemon *d)
{
    return d->cfg;
}

const char *orr_daemon_argv0(const orr_daemon *d)
{
    return d->argv0;
}

const orr_daemon_def *orr_daemon_definition(const orr_daemon *d)
{
    return d->def;
}

static void daemon__usage(const orr_daemon_def *def, FILE *f)
{
    if (def->usage) {
        def->usage(f);
        return;
    }
    fprintf(f, "usage: %s [--config FILE] [--print-config] ", def->prog);
    for (size_t i = 0; i < def->ncmds; i++)
        fprintf(f, "%s%s", i ? "|" : "", def->cmds[i].name);
    fputc('\n', f);
}

/* 1 if the schema has [section] key. */
static int daemon__has_key(const orr_daemon_def *def, const char *key)
{
    if (!def->section)
        return 0;
    for (size_t i = 0; i < def->nschema; i++)
        if (strcmp(def->schema[i].section, def->section) == 0 &&
            strcmp(def->schema[i].key, key) == 0)
            return 1;
    return 0;
}

/* The value of [section] key, or NULL when the schema lacks it or it is unset/empty. */
static const char *daemon__key(const orr_daemon *d, const char *key)
{
    if (!d->cfg || !daemon__has_key(d->def, key))
        return NULL;
    const char *v = orr_config_str(d->cfg, d->def->section, key);
    return v && *v ? v : NULL;
}

orr_status orr_daemon_write_file(const char *path, const char *field, const char *text,
                                 orr_err *err)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return orr_err_set(err, ORR_EIO, field, "path too long: %.200s", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        goto fail;
    if (fputs(text, f) < 0) {
        fclose(f);
        goto fail;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        goto fail;
    return ORR_OK;
fail:;
    int e = errno;
    unlink(tmp);
    return orr_err_set(err, ORR_EIO, field, "cannot write %.200s: %s", path, strerror(e));
}

orr_status orr_daemon_port_file(orr_daemon *d, orr_err *err, const char *fmt, ...)
{
    const char *path = daemon__key(d, "port_file");
    if (!path)
        return ORR_OK;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char field[96];
    snprintf(field, sizeof field, "%s.port_file", d->def->section);
    return orr_daemon_write_file(path, field, text, err);
}

int orr_daemon_main(const orr_daemon_def *def, int argc, char **argv)
{
    orr_daemon d = {.def = def, .argv0 = argc > 0 ? argv[0] : def->prog};
    /* --help before the command, whatever the configuration says. */
    for (int i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            daemon__usage(def, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--config") == 0)
            i++;
    }
    for (size_t i = 0; argc > 1 && i < def->ncmds; i++)
        if ((def->cmds[i].flags & ORR_DAEMON_NO_CONFIG) && strcmp(argv[1], def->cmds[i].name) == 0)
            return def->cmds[i].run(&d, argc - 1, argv + 1);
    int argi = 0, code = 0;
    d.cfg = orr_config_from_args(def->prog, argc, argv, def->schema, def->nschema, &argi, &code);
    if (!d.cfg)
        return code;
    const orr_daemon_cmd *cmd = NULL;
    for (size_t i = 0; argi < argc && i < def->ncmds; i++)
        if (strcmp(argv[argi], def->cmds[i].name) == 0)
            cmd = &def->cmds[i];
    if (!cmd) {
        if (argi < argc)
            fprintf(stderr, "%s: unknown command \"%s\"\n", def->prog, argv[argi]);
        daemon__usage(def, stderr);
        orr_config_free(d.cfg);
        orr_log_close();
        return 2;
    }
    const char *pid_file = NULL;
    if (cmd->flags & ORR_DAEMON_SERVES) {
        orr_daemon_block_signals();
        pid_file = daemon__key(&d, "pid_file");
        if (pid_file) {
            char text[32], field[96];
            orr_err err;
            snprintf(text, sizeof text, "%ld\n", (long)getpid());
            snprintf(field, sizeof field, "%s.pid_file", def->section);
            if (orr_daemon_write_file(pid_file, field, text, &err) != ORR_OK) {
                fprintf(stderr, "%s: %s: %s\n", def->prog, err.field, err.msg);
                orr_config_free(d.cfg);
                orr_log_close();
                return 1;
            }
        }
    }
    code = cmd->run(&d, argc - argi, argv + argi);
    if (pid_file)
        unlink(pid_file);
    orr_config_free(d.cfg);
    orr_log_close();
    return code;
}

/* ------------------------------------------------------------ stop signals */

static void daemon__stop_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
}

void orr_daemon_block_signals(void)
{
    sigset_t set;
    daemon__stop_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int orr_daemon_wait_stop(int timeout_ms)
{
    sigset_t set;
    daemon__stop_set(&set);
    if (timeout_ms < 0) {
        int sig = 0;
        while (sigwait(&set, &sig) != 0)
            ;
        return sig;
    }
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    for (;;) {
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig > 0)
            return sig;
        if (errno == EAGAIN)
            return 0;
        /* EINTR: another signal's handler ran; wait again (a little longer
         * in total at worst). */
    }
}

struct orr_daemon_stopper {
    pthread_t th;
    volatile sig_atomic_t *flag;
    void (*on_stop)(void *ctx, int sig);
    void *ctx;
    atomic_int quit, fired;
};

static void *daemon__stopper_main(void *arg)
{
    orr_daemon_stopper *s = arg;
    while (!atomic_load(&s->quit)) {
        int sig = orr_daemon_wait_stop(100);
        if (sig <= 0)
            continue;
        ORR_INFO("stop signal", "signal=%d", sig);
        atomic_store(&s->fired, 1);
        if (s->flag)
            *s->flag = 1;
        if (s->on_stop)
            s->on_stop(s->ctx, sig);
        break;
    }
    return NULL;
}

orr_status orr_daemon_stopper_start(volatile sig_atomic_t *flag,
                                    void (*on_stop)(void *ctx, int sig), void *ctx,
                                    orr_daemon_stopper **out, orr_err *err)
{
    orr_daemon_stopper *s = orr_xcalloc(1, sizeof(*s));
    s->flag = flag;
    s->on_stop = on_stop;
    s->ctx = ctx;
    if (pthread_create(&s->th, NULL, daemon__stopper_main, s) != 0) {
        free(s);
        *out = NULL;
        return orr_err_set(err, ORR_EINTERNAL, NULL, "cannot start the signal thread");
    }
    *out = s;
    return ORR_OK;
}

int orr_daemon_stopper_fired(const orr_daemon_stopper *s)
{
    return s && atomic_load((atomic_int *)&s->fired);
}

void orr_daemon_stopper_end(orr_daemon_stopper *s)
{
    if (!s)
        return;
    atomic_store(&s->quit, 1);
    pthread_join(s->th, NULL);
    free(s);
}
