-- 0003_registry.sql - API tokens, executors, code packages and the audit log
-- as the registry RPCs use them.
--
-- API tokens: a revoked token is kept (revoked_at) so the audit trail can
-- still name it; last_used_at is refreshed at most once a minute by
-- AuthenticateApiToken. A name is unique among a user's live tokens, so a
-- revoked token's name can be given again.

ALTER TABLE api_tokens
    ADD COLUMN revoked_at    timestamptz,
    ADD COLUMN last_used_at  timestamptz;
CREATE UNIQUE INDEX api_tokens_user_name_idx ON api_tokens (user_id, name)
    WHERE revoked_at IS NULL;

-- ListExecutors counts the slots in use per executor: only instances that
-- are dispatched or running, a small set, whatever the history.
CREATE INDEX instances_busy_idx ON instances (executor)
    WHERE state IN ('dispatched', 'running');

-- GetCodePackage by name takes the newest (highest id) of that name.
CREATE INDEX code_packages_name_idx ON code_packages (name, id DESC);

-- ListAudit filters by actor, newest first.
CREATE INDEX audit_log_actor_idx ON audit_log (actor, id);
