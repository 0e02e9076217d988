-- 0010_task_versions.sql - task versions carry their author's comment and,
-- for a rollback, the version whose spec they restore; an instance keeps the
-- parameter values it overrides; an attempt records the task version it ran.
--
-- Every column has a default, so rows written before stay valid: versions
-- without a comment, instances with the task's defaults, attempts of the
-- instance's version.

ALTER TABLE task_versions
    ADD COLUMN comment text NOT NULL DEFAULT '',
    ADD COLUMN restored_from integer;

ALTER TABLE instances
    ADD COLUMN params jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(params) = 'object');

ALTER TABLE attempts
    ADD COLUMN task_version integer;
UPDATE attempts a SET task_version = i.task_version FROM instances i WHERE i.id = a.instance_id;
