-- 0015_lineage_origin.sql - where a lineage edge comes from and what it
-- carries.
--
-- origin: 'api' (AddLineage), 'save' (derived from a task's spec when it is
-- saved; replaced at every save), 'run' (reported by executord from the job
-- a successful run moved; replaced at every run of the task), 'stream'
-- (derived from a sort stream's spec; owner is the stream's name).
-- detail: what the edge carries beyond its ends (a column edge's cast, a
-- table edge's writer and constants, a dependency's kind).
-- The same edge may be held once per origin and owner, so the identity
-- constraint of 0001 and the index of 0004 make way for one that names
-- them; ListLineage folds the origins of one edge together.
ALTER TABLE lineage_edges ADD COLUMN origin text NOT NULL DEFAULT 'api';
ALTER TABLE lineage_edges ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE lineage_edges ADD COLUMN detail jsonb;

DO $$
DECLARE c text;
BEGIN
    FOR c IN SELECT conname FROM pg_constraint
             WHERE conrelid = 'lineage_edges'::regclass AND contype = 'u' LOOP
        EXECUTE format('ALTER TABLE lineage_edges DROP CONSTRAINT %I', c);
    END LOOP;
END $$;

DROP INDEX lineage_edges_identity_idx;
CREATE UNIQUE INDEX lineage_edges_identity_idx
    ON lineage_edges (source_kind, source_name, target_kind, target_name, coalesce(task_id, 0),
                      origin, owner);
-- Replacing a task's (or a stream's) edges of one origin.
CREATE INDEX lineage_edges_task_idx ON lineage_edges (task_id, origin) WHERE task_id IS NOT NULL;
CREATE INDEX lineage_edges_owner_idx ON lineage_edges (owner) WHERE owner <> '';
