-- 0001_init.sql - Orrery's metadata schema, first version.
--
-- Applied by `halleyd migrate` inside one transaction and recorded in
-- schema_migrations (which halleyd creates itself). Covers everything the
-- design describes, including tables whose daemons arrive later.
-- Instance states are text checked against the list of the state machine in
-- server/halley/hl_sm.c.

CREATE TABLE teams (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id             bigserial PRIMARY KEY,
    name           text NOT NULL UNIQUE,
    password_hash  text NOT NULL,                 -- argon2id, libsodium string form
    role           text NOT NULL CHECK (role IN ('admin', 'developer', 'viewer')),
    active         boolean NOT NULL DEFAULT true,
    created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE user_teams (
    user_id  bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    team_id  bigint NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, team_id)
);

CREATE TABLE api_tokens (
    id          bigserial PRIMARY KEY,
    user_id     bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash  bytea NOT NULL UNIQUE,            -- hash only, never the token
    name        text NOT NULL DEFAULT '',
    expires_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tasks (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    team_id          bigint NOT NULL REFERENCES teams(id),
    type             text NOT NULL,
    active           boolean NOT NULL DEFAULT true,
    current_version  integer NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_team_idx ON tasks (team_id, id);

-- Immutable: a version is never updated once written.
CREATE TABLE task_versions (
    task_id     bigint NOT NULL REFERENCES tasks(id),
    version     integer NOT NULL,
    spec        jsonb NOT NULL,
    schedule    text NOT NULL DEFAULT '',
    timezone    text NOT NULL DEFAULT 'UTC',
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, version)
);

-- Dependencies of a task's current version. upstream_task_id is NULL for a
-- data_unit dependency (then data_unit names the stream's unit).
CREATE TABLE task_dependencies (
    task_id           bigint NOT NULL REFERENCES tasks(id),
    upstream_task_id  bigint REFERENCES tasks(id),
    kind              text NOT NULL CHECK (kind IN ('strong', 'weak', 'self', 'data_unit')),
    cycle             text NOT NULL DEFAULT 'latest' CHECK (cycle IN ('same', 'latest')),
    data_unit         jsonb,
    position          integer NOT NULL,
    PRIMARY KEY (task_id, position)
);
CREATE INDEX task_dependencies_upstream_idx ON task_dependencies (upstream_task_id);

CREATE TABLE workflows (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    team_id     bigint NOT NULL REFERENCES teams(id),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workflow_tasks (
    workflow_id  bigint NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    task_id      bigint NOT NULL REFERENCES tasks(id),
    PRIMARY KEY (workflow_id, task_id)
);

CREATE TABLE executors (
    id         text PRIMARY KEY,
    host       text NOT NULL,
    slots      integer NOT NULL CHECK (slots >= 0),
    labels     jsonb NOT NULL DEFAULT '{}',
    active     boolean NOT NULL DEFAULT true,
    last_seen  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE instances (
    id             bigserial PRIMARY KEY,
    task_id        bigint NOT NULL REFERENCES tasks(id),
    task_version   integer NOT NULL,
    schedule_time  timestamptz NOT NULL,
    state          text NOT NULL CHECK (state IN ('waiting', 'ready', 'dispatched', 'running',
                       'success', 'failed', 'killed', 'timed_out', 'suspended',
                       'marked_success')),
    attempt        integer NOT NULL DEFAULT 1,
    executor       text NOT NULL DEFAULT '',
    priority       integer NOT NULL DEFAULT 0,
    reason         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz,
    finished_at    timestamptz,
    UNIQUE (task_id, schedule_time),
    FOREIGN KEY (task_id, task_version) REFERENCES task_versions (task_id, version)
);
CREATE INDEX instances_state_idx ON instances (state, priority DESC, schedule_time, id);
CREATE INDEX instances_executor_idx ON instances (executor) WHERE executor <> '';

CREATE TABLE attempts (
    instance_id  bigint NOT NULL REFERENCES instances(id),
    attempt      integer NOT NULL,
    executor     text NOT NULL DEFAULT '',
    state        text NOT NULL,
    exit_code    integer,
    reason       text NOT NULL DEFAULT '',
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    PRIMARY KEY (instance_id, attempt)
);

CREATE TABLE instance_transitions (
    id           bigserial PRIMARY KEY,
    instance_id  bigint NOT NULL REFERENCES instances(id),
    attempt      integer NOT NULL,
    from_state   text NOT NULL,
    to_state     text NOT NULL,
    actor        text NOT NULL,
    reason       text NOT NULL DEFAULT '',
    executor     text NOT NULL DEFAULT '',
    at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX instance_transitions_instance_idx ON instance_transitions (instance_id, id);

CREATE TABLE resource_pools (
    name        text PRIMARY KEY,
    capacity    integer NOT NULL CHECK (capacity >= 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pool_leases (
    pool         text NOT NULL REFERENCES resource_pools(name),
    instance_id  bigint NOT NULL REFERENCES instances(id),
    tokens       integer NOT NULL CHECK (tokens > 0),
    acquired_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (pool, instance_id)
);
CREATE INDEX pool_leases_instance_idx ON pool_leases (instance_id);

CREATE TABLE data_sources (
    name        text PRIMARY KEY,
    kind        text NOT NULL,
    params      jsonb NOT NULL DEFAULT '{}',
    secret      bytea,                            -- secretbox nonce || ciphertext
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE code_packages (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL,
    sha256      text NOT NULL,
    size        bigint NOT NULL,
    source      text NOT NULL DEFAULT '',         -- upload or git URL
    deadline    timestamptz,
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (name, sha256)
);

CREATE TABLE package_deployments (
    package_id   bigint NOT NULL REFERENCES code_packages(id),
    executor_id  text NOT NULL,
    result       text NOT NULL CHECK (result IN ('pending', 'ok', 'failed')),
    message      text NOT NULL DEFAULT '',
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (package_id, executor_id)
);

CREATE TABLE sort_streams (
    name        text PRIMARY KEY,
    spec        jsonb NOT NULL,
    active      boolean NOT NULL DEFAULT true,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE data_units (
    stream         text NOT NULL REFERENCES sort_streams(name),
    business       text NOT NULL,
    interface      text NOT NULL,
    bucket         timestamptz NOT NULL,
    records        bigint NOT NULL DEFAULT 0,
    files          integer NOT NULL DEFAULT 0,
    bytes          bigint NOT NULL DEFAULT 0,
    late_records   bigint NOT NULL DEFAULT 0,
    check_version  integer NOT NULL DEFAULT 0,
    reconciled     boolean NOT NULL DEFAULT false,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, business, interface, bucket)
);

CREATE TABLE lineage_edges (
    id            bigserial PRIMARY KEY,
    source_kind   text NOT NULL,                  -- table, file, data_unit, task
    source_name   text NOT NULL,
    target_kind   text NOT NULL,
    target_name   text NOT NULL,
    task_id       bigint REFERENCES tasks(id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_kind, source_name, target_kind, target_name, task_id)
);

CREATE TABLE process_stats (
    instance_id  bigint NOT NULL REFERENCES instances(id),
    attempt      integer NOT NULL,
    key          text NOT NULL,
    value        double precision NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_id, attempt, key)
);

CREATE TABLE audit_log (
    id       bigserial PRIMARY KEY,
    actor    text NOT NULL,
    action   text NOT NULL,
    object   text NOT NULL,
    detail   jsonb NOT NULL DEFAULT '{}',
    at       timestamptz NOT NULL DEFAULT now()
);

-- Events: written in the transaction of the change they describe; ids are
-- allocated in insertion order. created_at is the allocation time (clock, not
-- transaction start) so a reader can tell a long-dead gap in the ids.
CREATE TABLE events (
    id           bigserial PRIMARY KEY,
    kind         text NOT NULL,
    task_id      bigint,
    instance_id  bigint,
    executor     text NOT NULL DEFAULT '',
    payload      jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX events_created_idx ON events (created_at);

-- The highest event id removed by retention (resume points at or below it,
-- other than 0, have expired).
CREATE TABLE event_horizon (
    one          boolean PRIMARY KEY DEFAULT true CHECK (one),
    pruned_upto  bigint NOT NULL DEFAULT 0
);
INSERT INTO event_horizon DEFAULT VALUES;

-- Leaving ready/dispatched/running releases the instance's pool tokens, in
-- the transaction of the transition. A trigger (VOLATILE, so its DELETE
-- takes a fresh snapshot under READ COMMITTED) also sees leases committed by
-- an acquirer that held the instance row lock while this update waited.
CREATE FUNCTION orr_release_leases() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NEW.state NOT IN ('ready', 'dispatched', 'running') THEN
        DELETE FROM pool_leases WHERE instance_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER instances_release_leases
    AFTER UPDATE OF state ON instances
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION orr_release_leases();
