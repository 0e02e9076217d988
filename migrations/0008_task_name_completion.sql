-- 0008_task_name_completion.sql - task name completion reads its prefix
-- matches in order from one index range (lower-cased names in byte order),
-- stopping at the page's end, instead of sorting every match.
DROP INDEX IF EXISTS tasks_name_prefix_idx;
CREATE INDEX tasks_name_lower_idx ON tasks ((lower(name) COLLATE "C"));
