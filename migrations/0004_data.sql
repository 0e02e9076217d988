-- 0004_data.sql - sort stream versions, transfer watermarks, and the indexes
-- behind the data listings (data units, lineage).
--
-- sort_streams.version starts at 1 and grows by one with every change, so a
-- sortd that watches stream.changed events can tell a stale reload.
-- transfer_watermarks holds one value per (task, watermark name); it is moved
-- by compare-and-set only (PutWatermark).

ALTER TABLE sort_streams ADD COLUMN version bigint NOT NULL DEFAULT 1;

CREATE TABLE transfer_watermarks (
    task_id      bigint NOT NULL REFERENCES tasks(id),
    name         text NOT NULL,
    value        text NOT NULL,
    instance_id  bigint REFERENCES instances(id),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, name)
);

-- ListDataUnits: one stream, newest bucket first.
CREATE INDEX data_units_stream_bucket_idx ON data_units (stream, bucket DESC);

-- An edge without a task (task_id NULL) is unique too: the table's UNIQUE
-- constraint treats NULLs as distinct. This index also serves lookups by
-- source; the next one serves lookups by target (ListLineage upstream).
CREATE UNIQUE INDEX lineage_edges_identity_idx
    ON lineage_edges (source_kind, source_name, target_kind, target_name, coalesce(task_id, 0));
CREATE INDEX lineage_edges_target_idx ON lineage_edges (target_kind, target_name);

-- ListProcessStats by task walks the task's newest instances
-- (instances (task_id, schedule_time) is already unique); by instance it
-- uses the primary key of process_stats.
