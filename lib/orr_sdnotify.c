/*
 * orr_sdnotify.c - readiness and stopping for systemd over libsystemd's
 * sd_notify (see orr_sdnotify.h).
 */
#include "orr_sdnotify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "orr_log.h"

static int sdn_send(const char *what, const char *text)
{
    const char *sock = getenv("NOTIFY_SOCKET");
    if (!sock || !*sock)
        return 0;
    int r = sd_notify(0, text);
    if (r < 0) {
        ORR_WARN("cannot notify systemd", "what=%s socket=%s err=%s", what, orr_log_q(sock),
                 orr_log_q(strerror(-r)));
        return -1;
    }
    ORR_DEBUG("systemd notified", "what=%s", what);
    return r > 0 ? 1 : 0;
}

int orr_sdnotify_ready(const char *status)
{
    char text[512];
    snprintf(text, sizeof(text), "READY=1\nMAINPID=%ld\nSTATUS=%.400s", (long)getpid(),
             status && *status ? status : "serving");
    return sdn_send("ready", text);
}

int orr_sdnotify_stopping(void)
{
    return sdn_send("stopping", "STOPPING=1");
}
