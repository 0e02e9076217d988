-- 0006_workflow_objects.sql - workflows become objects of their own: a
-- description, an owning team (already there), and a pause of the whole
-- workflow (keplerd creates and dispatches no instance of a paused
-- workflow's tasks; running ones finish). Task graphs that were only
-- tasks linked by their upstreams get a workflow row, named after their
-- first task, so every workflow the console showed before is an object now.
ALTER TABLE workflows
    ADD COLUMN description  text NOT NULL DEFAULT '',
    ADD COLUMN paused       boolean NOT NULL DEFAULT false,
    ADD COLUMN paused_by    text NOT NULL DEFAULT '',
    ADD COLUMN paused_at    timestamptz,
    ADD COLUMN updated_at   timestamptz NOT NULL DEFAULT now();

-- "Which workflows hold this task" (the pause of a task's instances).
CREATE INDEX workflow_tasks_task_idx ON workflow_tasks (task_id);
-- Task name completion: prefix matches by index.
CREATE INDEX tasks_name_prefix_idx ON tasks (lower(name) text_pattern_ops);

-- Connected groups of active tasks linked by strong or weak upstreams, none
-- of whose tasks is in a workflow yet: one workflow each, named after (and
-- owned by the team of) the group's task with the lowest id.
CREATE TEMP TABLE orr_0006_comp ON COMMIT DROP AS
WITH RECURSIVE e(a, b) AS (
    SELECT d.task_id, d.upstream_task_id FROM task_dependencies d
      JOIN tasks t1 ON t1.id = d.task_id AND t1.active
      JOIN tasks t2 ON t2.id = d.upstream_task_id AND t2.active
     WHERE d.kind IN ('strong', 'weak') AND d.task_id <> d.upstream_task_id
    UNION
    SELECT d.upstream_task_id, d.task_id FROM task_dependencies d
      JOIN tasks t1 ON t1.id = d.task_id AND t1.active
      JOIN tasks t2 ON t2.id = d.upstream_task_id AND t2.active
     WHERE d.kind IN ('strong', 'weak') AND d.task_id <> d.upstream_task_id
), reach(node, root) AS (
    SELECT a, a FROM e
    UNION
    SELECT e.b, r.root FROM reach r JOIN e ON e.a = r.node
)
SELECT node, min(root) AS root FROM reach GROUP BY node;

DELETE FROM orr_0006_comp c WHERE c.root IN (
    SELECT c2.root FROM orr_0006_comp c2 JOIN workflow_tasks wt ON wt.task_id = c2.node);

INSERT INTO workflows (name, team_id, description)
SELECT t.name, t.team_id, 'The tasks linked by upstreams to ' || t.name || '.'
  FROM (SELECT DISTINCT root FROM orr_0006_comp) g JOIN tasks t ON t.id = g.root
ON CONFLICT (name) DO NOTHING;

INSERT INTO workflow_tasks (workflow_id, task_id)
SELECT w.id, c.node FROM orr_0006_comp c
  JOIN tasks t ON t.id = c.root
  JOIN workflows w ON w.name = t.name
 WHERE NOT EXISTS (SELECT 1 FROM workflow_tasks x WHERE x.workflow_id = w.id)
ON CONFLICT DO NOTHING;
