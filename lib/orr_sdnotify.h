/*
 * orr_sdnotify.h - readiness and stopping reported to systemd (a unit of
 * Type=notify) through libsystemd's sd_notify.
 *
 * Every daemon calls orr_sdnotify_ready() once it serves: halleyd after its
 * schema check and listen, galaxyd after listen, keplerd once it has joined
 * the election, executord once its ZooKeeper card is up, sortd once its
 * pipeline runs. Outside systemd (NOTIFY_SOCKET unset) every call is a
 * no-op, so the same binary runs from a shell, the quickstart or a test.
 */
#ifndef ORR_SDNOTIFY_H
#define ORR_SDNOTIFY_H

/* Send "READY=1" with a STATUS= line (status may be NULL) and MAINPID.
 * Returns 1 when a message was sent, 0 when NOTIFY_SOCKET is unset, -1 when
 * sending failed (logged as a warning; the daemon goes on). */
int orr_sdnotify_ready(const char *status);

/* Send "STOPPING=1" (same returns). */
int orr_sdnotify_stopping(void);

#endif
