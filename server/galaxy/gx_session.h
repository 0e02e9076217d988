/*
 * gx_session.h - which login sessions galaxyd still accepts.
 *
 * A session token (gx_jwt.h) names its halleyd session (sid). A session
 * ends on logout or on any change to its user (halleyd: RevokeSession,
 * UpdateUser), and halleyd tells every galaxyd with a "session.revoked"
 * event. This module keeps the ended, unexpired session ids in memory:
 * loaded (ListRevokedSessions) each time the event stream is in place
 * (orr_watch.h), kept current by the events, and added to at once by this
 * galaxyd's own logouts. So a session ends at once on the galaxyd that
 * ended it and, on every other, as soon as the event arrives (the event
 * stream's delay: well under a second while it is connected).
 *
 * While the stream is not in place (halleyd restarting, the network down)
 * nothing is assumed: every session is checked with halleyd (CheckSession)
 * on each request, and refused when halleyd cannot say.
 *
 * A "user.updated" event (a disabled user, a new role or team list) also
 * empties the API-token cache it is given (gx_sessions_set_tokcache), so
 * every galaxyd asks halleyd again about every token at once, as it does
 * each time the stream is back in place.
 *
 * Thread-safe (one mutex); memory bounded by the ended sessions that have
 * not expired (at most session_ttl's worth of logouts and user changes).
 */
#ifndef GX_SESSION_H
#define GX_SESSION_H

#include <stdint.h>

#include "orr_rpc.h"
#include "orr_status.h"

typedef struct gx_sessions gx_sessions;

/* Start watching halleyd through client c (which must outlive the result). */
orr_status gx_sessions_start(orr_rpc_client *c, int rpc_timeout_ms, gx_sessions **out,
                             orr_err *err);
void gx_sessions_stop(gx_sessions *s);
/* The API-token cache to empty on every "user.updated" event and at each
 * stream start (NULL: none). c must outlive s. */
struct gx_tokcache;
void gx_sessions_set_tokcache(gx_sessions *s, struct gx_tokcache *c);

/* ORR_OK when session sid may be used at now_ms; ORR_EAUTH (err says why)
 * when it has ended; ORR_EUNAVAIL when the stream is not in place and
 * halleyd cannot be asked. */
orr_status gx_sessions_check(gx_sessions *s, const char *sid, int64_t now_ms, orr_err *err);

/* Note here, at once, that sid ended (this galaxyd's logout); it is
 * forgotten after exp_ms. */
void gx_sessions_ended(gx_sessions *s, const char *sid, int64_t exp_ms);

/* 1 while the event stream is in place and loaded (for /healthz and tests). */
int gx_sessions_synced(const gx_sessions *s);

#endif
