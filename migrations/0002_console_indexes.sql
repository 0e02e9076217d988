-- 0002_console_indexes.sql - indexes for the console's listings and stats.
--
-- ListInstances in descending order pages on (schedule_time, id);
-- InstanceStats counts instances by finished_at over a time range.

CREATE INDEX instances_schedule_idx ON instances (schedule_time, id);
CREATE INDEX instances_finished_idx ON instances (finished_at) WHERE finished_at IS NOT NULL;
