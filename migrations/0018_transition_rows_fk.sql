-- 0018_transition_rows_fk.sql - no foreign-key check per transition row.
--
-- Every transition writes an instance_transitions row (and, into dispatched,
-- running or a finished state, an attempts row) whose instance_id comes from
-- the UPDATE (or INSERT) ... RETURNING of that same instance in the same
-- statement, and instances are never deleted. The foreign keys to instances
-- could therefore never fail, yet each inserted row paid for its check at
-- the end of the statement: a query on instances' primary key that also
-- takes a KEY SHARE lock on the row just updated (another WAL record). Which
-- rows exist, and every query plan (the (instance_id, id) index and the
-- attempts primary key stay), is unchanged. A change that deletes instances
-- must delete their transitions and attempts first.
ALTER TABLE instance_transitions DROP CONSTRAINT instance_transitions_instance_id_fkey;
ALTER TABLE attempts DROP CONSTRAINT attempts_instance_id_fkey;
