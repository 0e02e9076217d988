-- 0011_alerts.sql - alert channels, rules, silences, alerts and their
-- deliveries (the outbox keplerd's sender claims from).
--
-- alert_channels: where a message goes (webhook, email, chat); config holds
-- everything but the secret (webhook "secret", email "password"), which is
-- sealed with secretbox under [halley] secret_key in `secret` (a JSON object
-- of the secret keys, sealed as a whole).
-- alert_rules: which events of which scope raise an alert, to which
-- channels, how loud, and how alerts of one dedup key are grouped
-- (group_window_s before the first message, at most one more message per
-- quiet_period_s).
-- alert_silences: a rule, or a scope (scope_kind, scope), held quiet from
-- starts_at to ends_at; team is the rule's or the scope's team (authz).
-- alerts: one row per (rule, dedup key) and quiet period, counting the
-- raises it groups; state 'silenced' when raised under a silence or with
-- the rule disabled. rule_name/team survive the rule's deletion.
-- alert_deliveries: one message of an alert to one channel; seq 1 is the
-- first, seq 2... the digests ("N more since"). pending -> sending (claimed
-- with a lease) -> delivered | failed | pending again (retry).
CREATE TABLE alert_channels (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    team        text NOT NULL REFERENCES teams(name),
    kind        text NOT NULL CHECK (kind IN ('webhook', 'email', 'chat')),
    config      jsonb NOT NULL CHECK (jsonb_typeof(config) = 'object'),
    secret      bytea,
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE alert_rules (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    team            text NOT NULL REFERENCES teams(name),
    scope_kind      text NOT NULL
                    CHECK (scope_kind IN ('task', 'workflow', 'team', 'stream', 'executor')),
    scope           text NOT NULL,
    events          text[] NOT NULL CHECK (cardinality(events) >= 1),
    severity        text NOT NULL DEFAULT 'warning'
                    CHECK (severity IN ('info', 'warning', 'critical')),
    channels        bigint[] NOT NULL CHECK (cardinality(channels) >= 1),
    quiet_period_s  integer NOT NULL DEFAULT 300 CHECK (quiet_period_s BETWEEN 0 AND 86400),
    group_window_s  integer NOT NULL DEFAULT 1 CHECK (group_window_s BETWEEN 0 AND 3600),
    params          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(params) = 'object'),
    enabled         boolean NOT NULL DEFAULT true,
    created_by      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alert_rules_team_idx ON alert_rules (team);

CREATE TABLE alert_silences (
    id          bigserial PRIMARY KEY,
    rule_id     bigint REFERENCES alert_rules(id) ON DELETE CASCADE,
    scope_kind  text CHECK (scope_kind IN ('task', 'workflow', 'team', 'stream', 'executor')),
    scope       text,
    team        text NOT NULL DEFAULT '',
    starts_at   timestamptz NOT NULL DEFAULT now(),
    ends_at     timestamptz NOT NULL,
    reason      text NOT NULL DEFAULT '',
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((rule_id IS NOT NULL AND scope_kind IS NULL AND scope IS NULL)
           OR (rule_id IS NULL AND scope_kind IS NOT NULL AND scope IS NOT NULL)),
    CHECK (ends_at > starts_at)
);
CREATE INDEX alert_silences_ends_idx ON alert_silences (ends_at);

CREATE TABLE alerts (
    id           bigserial PRIMARY KEY,
    rule_id      bigint REFERENCES alert_rules(id) ON DELETE SET NULL,
    rule_name    text NOT NULL DEFAULT '',
    team         text NOT NULL DEFAULT '',
    event        text NOT NULL,
    severity     text NOT NULL,
    dedup_key    text NOT NULL,
    scope_kind   text NOT NULL DEFAULT '',
    scope        text NOT NULL DEFAULT '',
    task_id      bigint,
    instance_id  bigint,
    summary      text NOT NULL DEFAULT '',
    details      jsonb NOT NULL DEFAULT '{}',
    count        integer NOT NULL DEFAULT 1,
    first_at     timestamptz NOT NULL,
    last_at      timestamptz NOT NULL,
    state        text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'silenced')),
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alerts_rule_key_idx ON alerts (rule_id, dedup_key, last_at);
CREATE INDEX alerts_team_idx ON alerts (team, id);

CREATE TABLE alert_deliveries (
    id             bigserial PRIMARY KEY,
    alert_id       bigint NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
    channel_id     bigint REFERENCES alert_channels(id) ON DELETE SET NULL,
    channel_name   text NOT NULL DEFAULT '',
    seq            integer NOT NULL DEFAULT 1,
    state          text NOT NULL DEFAULT 'pending'
                   CHECK (state IN ('pending', 'sending', 'delivered', 'failed')),
    attempts       integer NOT NULL DEFAULT 0,
    next_at        timestamptz NOT NULL DEFAULT now(),
    claimed_by     text NOT NULL DEFAULT '',
    claimed_until  timestamptz,
    last_error     text NOT NULL DEFAULT '',
    delivered_at   timestamptz,
    count_sent     integer NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alert_deliveries_state_idx ON alert_deliveries (state, next_at);
CREATE INDEX alert_deliveries_alert_idx ON alert_deliveries (alert_id, channel_id, seq);
