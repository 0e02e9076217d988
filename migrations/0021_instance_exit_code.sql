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
-- Adding a column without a default rewrites nothing; the UPDATE below
-- rewrites each instance whose current attempt has an exit code, once
-- (on 1.5 million instances about as long as building an index: see
-- docs/deploy.md, "Upgrades").
ALTER TABLE instances ADD COLUMN IF NOT EXISTS exit_code integer;
UPDATE instances i SET exit_code = a.exit_code FROM attempts a
 WHERE a.instance_id = i.id AND a.attempt = i.attempt AND a.exit_code IS NOT NULL
   AND i.exit_code IS DISTINCT FROM a.exit_code;
