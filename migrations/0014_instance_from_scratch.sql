-- 0014_instance_from_scratch.sql - a rerun that starts from scratch.
--
-- instances.scratch_attempt: the attempt a rerun asked to start from
-- scratch (0 = none). A transfer task's attempt resumes the splits an
-- earlier attempt of the instance committed unless it is this attempt
-- (GetInstance answers from_scratch); automatic retries after it resume
-- again.
ALTER TABLE instances ADD COLUMN scratch_attempt integer NOT NULL DEFAULT 0;
