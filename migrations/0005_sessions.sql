-- 0005_sessions.sql - login sessions, so that a logout or a change to a user
-- ends sessions at once on every galaxyd (session.revoked events).
CREATE TABLE sessions (
    id             text PRIMARY KEY,              -- 32 hex digits, random
    user_id        bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    revoked_at     timestamptz,
    revoke_reason  text
);
CREATE INDEX sessions_user_live_idx ON sessions (user_id) WHERE revoked_at IS NULL;
CREATE INDEX sessions_revoked_idx ON sessions (expires_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX sessions_expires_idx ON sessions (expires_at);
