-- Operators' runs: run now (released at once, optionally without its
-- upstreams) and paced backfills (at most N cycles of a backfill at a time).
CREATE TABLE backfills (
    id                  bigserial PRIMARY KEY,
    task_id             bigint NOT NULL REFERENCES tasks(id),
    from_time           timestamptz NOT NULL,
    to_time             timestamptz NOT NULL,
    include_downstream  boolean NOT NULL DEFAULT false,
    max_cycles          integer NOT NULL CHECK (max_cycles >= 0),
    created_by          text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE instances
    ADD COLUMN run_now           boolean NOT NULL DEFAULT false,
    ADD COLUMN ignore_upstreams  boolean NOT NULL DEFAULT false,
    ADD COLUMN backfill_id       bigint REFERENCES backfills(id),
    ADD COLUMN backfill_cycle    timestamptz,
    ADD COLUMN backfill_cycles   integer NOT NULL DEFAULT 0;
