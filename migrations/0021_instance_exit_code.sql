-- 0021_instance_exit_code.sql - the exit code of an instance's current
-- attempt, kept on the instance's row.
--
-- Every read of an instance returned its current attempt's exit code
-- through a subquery on attempts' primary key, once a row: for a page of
-- 1,000 rows newest first (the console's instance page) 2,800 of the
-- 2,930 buffers the page read, and, on a database whose attempts table is
-- still small, a sequential scan of it per row. The transition statements
-- (hl_api_instances.c, hl_tcomb.c), the only writers of attempts, now set
-- instances.exit_code in the same UPDATE that moves the state, so it always
-- equals attempts.exit_code of (id, attempt), NULL when that row has none
-- or does not exist: a new attempt starts without one. The UPDATE rewrites
-- the row anyway (every transition changes the state), so the column costs
-- no extra write.
--
-- Adding a column without a default rewrites nothing, but it locks the
-- table until this migration commits. The UPDATE below then makes every
-- instance's copy agree with attempts: it rewrites each instance whose
-- current attempt has an exit code (100,000 instances, 80,000 of them
-- with one: 2.4 s; a second run, finding nothing to change, 0.1 s). Run
-- beforehand, without the lock, it leaves this migration little to do
-- (docs/deploy.md, "Upgrades"). The state and attempt conditions skip a row
-- that a transition moved while the statement ran: that transition wrote
-- the row's copy itself.
ALTER TABLE instances ADD COLUMN IF NOT EXISTS exit_code integer;
UPDATE instances i SET exit_code = a.exit_code
  FROM instances j LEFT JOIN attempts a ON a.instance_id = j.id AND a.attempt = j.attempt
 WHERE j.id = i.id AND i.attempt = j.attempt AND i.state = j.state
   AND i.exit_code IS DISTINCT FROM a.exit_code;
