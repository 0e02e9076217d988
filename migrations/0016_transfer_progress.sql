-- 0016_transfer_progress.sql - live progress of running transfers.
--
-- transfer_progress: the points executord reports for an attempt while its
-- transfer runs (from wormhole's progress line, at most one a second), for
-- the instance page's figures and rate chart. RecordTransferProgress keeps
-- at most 600 points per attempt: when an attempt has more, every second
-- point of its older half goes, so a long run keeps its whole span at a
-- coarser step. The final figures stay in process_stats (from the summary).
CREATE TABLE transfer_progress (
    instance_id    bigint NOT NULL REFERENCES instances(id),
    attempt        integer NOT NULL,
    seq            bigserial,
    at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    rows_read      bigint NOT NULL,
    rows_written   bigint NOT NULL,
    dirty_rows     bigint NOT NULL,
    rows_per_sec   double precision NOT NULL,
    bytes_read     bigint NOT NULL,
    shards_done    bigint NOT NULL,
    shards_total   bigint NOT NULL,
    rows_estimate  bigint NOT NULL,
    elapsed_s      double precision NOT NULL,
    eta_s          double precision NOT NULL,
    PRIMARY KEY (instance_id, attempt, seq)
);
