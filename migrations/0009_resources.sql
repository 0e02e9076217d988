-- 0009_resources.sql - "why is it waiting" and resource limits.
--
-- instance_blockers: what keplerd's own evaluation found holding back a
-- waiting or ready instance, as of evaluated_at (written by the leader
-- only when the list changes; one row per instance, replaced).
-- executors: an administrator's settings that keplerd applies on top of
-- what the executor announces (drained: no new dispatches; slots and
-- labels overrides, NULL = the executor's own).
-- team_quotas: at most max_running instances dispatched or running and
-- max_slots slots in use per team (0 = no limit), enforced by keplerd.
-- task_type_limits: per task type, a default and a maximum of each sandbox
-- limit (memory, cpu, pids, run_time) that task specs cannot exceed.
CREATE TABLE instance_blockers (
    instance_id   bigint PRIMARY KEY REFERENCES instances(id) ON DELETE CASCADE,
    attempt       integer NOT NULL,
    blockers      jsonb NOT NULL,
    evaluated_at  timestamptz NOT NULL
);

ALTER TABLE executors
    ADD COLUMN drained          boolean NOT NULL DEFAULT false,
    ADD COLUMN slots_override   integer CHECK (slots_override >= 0),
    ADD COLUMN labels_override  jsonb;

CREATE TABLE team_quotas (
    team_id      bigint PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
    max_running  integer NOT NULL DEFAULT 0 CHECK (max_running >= 0),
    max_slots    integer NOT NULL DEFAULT 0 CHECK (max_slots >= 0),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE task_type_limits (
    type        text PRIMARY KEY,
    limits      jsonb NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
