-- The lease-release trigger is queued only for a transition that leaves the
-- leased states (ready, dispatched, running): the same test the trigger
-- function makes, now in its WHEN clause, so the many transitions into those
-- states (waiting -> ready, ready -> dispatched -> running) no longer queue an
-- after-trigger event and call the PL/pgSQL function only to do nothing.
-- Which leases go, and when, is unchanged.
DROP TRIGGER instances_release_leases ON instances;
CREATE TRIGGER instances_release_leases
    AFTER UPDATE OF state ON instances
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
                       AND NEW.state NOT IN ('ready', 'dispatched', 'running'))
    EXECUTE FUNCTION orr_release_leases();
