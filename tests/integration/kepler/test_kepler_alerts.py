"""test_kepler_alerts.py - keplerd's alert evaluation against real ZooKeeper,
halleyd and PostgreSQL.

    test_kepler_alerts.py BUILD_DIR

Two keplerd (k1 leads, k2 stands by), stand-in executors (kp_it_tool) and
alert rules made through halleyd's API; what keplerd raised is read back
with ListAlerts:

- failed: a task that fails every attempt, with two retries, raises exactly
  one "failed" alert (key failed:task:<id>:<schedule ms>), after its third
  attempt failed, and one "retried" alert that counts the two retries;
- deadlines: a task held by a gate (an executor that keeps its run until the
  test ends it) with finish_by 2s raises deadline_finish while the run is
  still going; a task no executor can take, with start_by 1s, raises
  deadline_start while it waits; the delay after each deadline is printed;
- failover: the leader is killed with SIGKILL after those alerts; k2 takes
  over, reads the alert history, finds both deadlines passed and alerted
  already (it logs so), and the alerts are still one each with count 1;
  the held run fails right after the kill, while no keplerd leads (k2
  needs k1's ZooKeeper session to expire first; whether it did lead
  already is printed): k2 evaluates that failure once it leads, and raises
  exactly one "failed" alert for it;
- rules: a rule made while k1 leads is read on its alert_rule.changed event;
- dirty_rows: process statistics of the failed instance's last attempt with
  5 dirty rows raise nothing under a rule of threshold 10 (checked after a
  barrier), 50 raise one dirty_rows alert;
- pool_starved: a pool of one token held by a run the holding executor
  keeps, and a second instance asking for it: one pool_starved alert once
  it was denied for the rule's pool_starved_minutes (1), not before;
- recovered: a run whose first attempt fails (the test fails it) and whose
  retry succeeds raises one recovered alert;
- executor_lost: an executor killed with SIGKILL (its ZooKeeper node goes
  with its session) raises one executor_lost alert naming it.

Nothing waits a fixed time: the test waits for alerts, states and log lines,
each with a generous deadline that fails naming what it waited for.
"""
import os
import signal
import sys
import time
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import orrery_it  # noqa: E402
import test_kepler as tk  # noqa: E402

check, wait_until = tk.check, tk.wait_until


def alerts(k, rule_id):
    return [json.loads(line) for line in k.tool("alerts", str(rule_id)).splitlines()]


def instance(k, prefix, name):
    for i in k.instances(prefix):
        if i["task"] == name:
            return i
    return {}


def run(k):
    t0 = 1_700_000_000_000
    # rules first: a keplerd reads them as it gains leadership
    r_fail = int(k.tool("alert-rule", "al-fail-rule", "task", "al-fail-x", "failed,retried"))
    r_dl = int(k.tool("alert-rule", "al-dl-rule", "team", "data", "deadline_start,deadline_finish"))
    r_ex = int(k.tool("alert-rule", "al-ex-rule", "executor", "*", "executor_lost"))
    r_gap = int(k.tool("alert-rule", "al-gap-rule", "task", "al-dl-held", "failed"))
    plain = {"plain": "yes"}  # never the holding executor
    k.start_executor("exec-a", 8, 100, labels=plain)
    k.start_executor("exec-hold", 4, -1, labels={"hold": "yes"})
    k.start_kepler("k1")
    check(wait_until(lambda: k.leader()[0] == "k1", 60), "k1 leads")
    k.start_kepler("k2")
    check(k.wait_log("k2", r"joined kepler election"), "k2 stands by in the election")
    check(k.wait_log("k1", r"alert rules read.* rules=4"), "k1 read the four alert rules")
    # a rule made while k1 leads: its alert_rule.changed event has k1 read them again
    r_dirty = int(k.tool("alert-rule", "al-dirty-rule", "task", "*", "dirty_rows",
                         '{"dirty_rows": 10}'))
    check(k.wait_log("k1", r"alert rules read.* rules=5"), "k1 read the new rule on its event")

    # --- a task failing every attempt: one "failed" alert after the last
    fail = k.task("al-fail-x", retries={"max": 2, "delay": "100ms"}, labels=plain)
    k.wait_indexed("al-fail-x")
    k.create(fail, [t0])
    ok = wait_until(lambda: instance(k, "al-fail-", "al-fail-x").get("state") == "failed"
                    and instance(k, "al-fail-", "al-fail-x").get("attempt") == 3, 60)
    check(ok, "failed: the instance failed its third (last) attempt")
    got = wait_until(lambda: [a for a in alerts(k, r_fail) if a["event"] == "failed"], 30)
    check(got, "failed: an alert was raised")
    k.barrier("al-one", labels=plain)  # every event before it is handled: nothing more can come
    al = alerts(k, r_fail)
    failed = [a for a in al if a["event"] == "failed"]
    retried = [a for a in al if a["event"] == "retried"]
    inst = instance(k, "al-fail-", "al-fail-x")
    check(len(failed) == 1, f"failed: exactly one alert ({len(failed)})")
    if failed:
        check(failed[0]["dedup_key"] == f"failed:task:{fail}:{t0}",
              f"failed: its dedup key ({failed[0]['dedup_key']})")
        check(failed[0]["count"] == 1, f"failed: count 1 ({failed[0]['count']})")
        check(inst.get("finished") and failed[0]["first_at_ms"] >= inst["finished"] - 1000,
              "failed: raised after the last attempt ended")
    check(len(retried) == 1 and retried[0]["count"] == 2,
          f"retried: one alert counting both retries ({retried})")

    # --- dirty rows above a rule's threshold
    k.tool("stats", str(inst["id"]), "3", "dirty_rows", "5")
    k.barrier("al-dirty", labels=plain)
    check(alerts(k, r_dirty) == [], "dirty_rows: 5 rows under a threshold of 10 raise nothing")
    k.tool("stats", str(inst["id"]), "3", "dirty_rows", "50")
    got = wait_until(lambda: alerts(k, r_dirty), 30)
    # a raise for the 5 rows would have been sent first (one queue, in order)
    # and counted on the same key: count 1 says there was none
    check(len(got or []) == 1 and got[0]["dedup_key"] == f"dirty_rows:task:{fail}:{t0}"
          and got[0]["count"] == 1, f"dirty_rows: 50 rows raise one alert, counted once ({got})")

    # --- deadlines fire while the run goes on
    now = int(time.time() * 1000)
    held = k.task("al-dl-held", labels={"hold": "yes"}, deadlines={"finish_by": "2s"})
    stuck = k.task("al-dl-stuck", labels={"nowhere": "yes"}, deadlines={"start_by": "1s"})
    k.wait_indexed("al-dl-held", "al-dl-stuck")
    sched = now + 500
    (held_id,) = k.create(held, [sched])
    (stuck_id,) = k.create(stuck, [sched])
    ok = wait_until(lambda: instance(k, "al-dl-", "al-dl-held").get("state") == "running", 30)
    check(ok, "deadline: the held run is running")

    def dl_alert(kind, iid):
        return [a for a in alerts(k, r_dl) if a["dedup_key"] == f"{kind}:{iid}"]

    got = wait_until(lambda: dl_alert("deadline_finish", held_id), 30)
    check(got, "deadline_finish: raised")
    st = instance(k, "al-dl-", "al-dl-held").get("state")
    check(st == "running", f"deadline_finish: raised while the run still goes on ({st})")
    if got:
        print(f"     deadline_finish stored {got[0]['created_at_ms'] - (sched + 2000)} ms "
              f"after its deadline", flush=True)
        check(got[0]["first_at_ms"] >= sched + 2000, "deadline_finish: not before the deadline")
    got = wait_until(lambda: dl_alert("deadline_start", stuck_id), 30)
    check(got, "deadline_start: raised for the instance no executor takes")
    st = instance(k, "al-dl-", "al-dl-stuck").get("state")
    check(st in ("waiting", "ready"), f"deadline_start: it still waits ({st})")
    if got:
        print(f"     deadline_start stored {got[0]['created_at_ms'] - (sched + 1000)} ms "
              f"after its deadline", flush=True)

    # --- failover: the standby raises nothing twice
    name, proc = k.leader()
    check(name == "k1", f"failover: k1 leads before the kill ({name})")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    k.tool("fail", str(held_id), "1")  # no retries: its final failure
    print(f"     the held run failed while {k.leader()[0] or 'no keplerd'} led", flush=True)
    check(wait_until(lambda: k.leader()[0] == "k2", 60), "failover: k2 takes over")
    check(k.wait_log("k2", r"alert history read.* deadline_alerts=2"),
          "failover: k2 read the two deadline alerts")
    check(k.wait_log("k2", r"deadline missed.* instance=%d .*raised=0 alerted_before=1" % held_id),
          "failover: k2 found the held run's deadline alerted already")
    check(k.wait_log("k2", r"deadline missed.* instance=%d .*raised=0 alerted_before=1" % stuck_id),
          "failover: k2 found the waiting one's deadline alerted already")
    k.barrier("al-fo", labels=plain)
    for kind, iid in (("deadline_finish", held_id), ("deadline_start", stuck_id)):
        got = dl_alert(kind, iid)
        check(len(got) == 1 and got[0]["count"] == 1,
              f"failover: {kind} still one alert with count 1 ({got})")

    got = wait_until(lambda: alerts(k, r_gap), 30)
    check(len(got or []) == 1 and got[0]["count"] == 1
          and got[0]["dedup_key"] == f"failed:task:{held}:{sched}",
          f"failover: the failure in the gap raised one alert ({got})")

    # --- a pool starved for a minute
    r_pool = int(k.tool("alert-rule", "al-pool-rule", "task", "al-pool-x", "pool_starved",
                        '{"pool_starved_minutes": 1}'))
    check(k.wait_log("k2", r"alert rules read.* rules=6"), "k2 read the pool rule")
    k.tool("pool", "al-pool", "1")
    pool_task = k.task("al-pool-x", pools={"al-pool": 1}, labels={"hold": "yes"})
    k.wait_indexed("al-pool-x")
    pool_ids = k.create(pool_task, [t0, t0 + 60_000])

    def pool_states():
        return [i["state"] for i in k.instances("al-pool-")]
    ok = wait_until(lambda: sorted(pool_states()) == ["ready", "running"], 30)
    check(ok, f"pool: one runs, the other is ready and denied ({pool_states()})")
    got = wait_until(lambda: alerts(k, r_pool), 150)
    check(len(got or []) == 1 and got[0]["dedup_key"].startswith("pool_starved:al-pool:"),
          f"pool_starved: one alert for the pool ({got})")
    if got:
        since = int(got[0]["dedup_key"].rsplit(":", 1)[1])
        check(got[0]["first_at_ms"] - since >= 60_000,
              f"pool_starved: raised {got[0]['first_at_ms'] - since} ms after the first denial "
              f"(>= 1 minute)")
    for _ in range(2):  # end both runs: the second gets the token when the first ends
        ok = wait_until(lambda: [i for i in k.instances("al-pool-") if i["state"] == "running"], 30)
        if ok:
            k.tool("finish", str(ok[0]["id"]), "1")
            wait_until(lambda: ok[0]["id"] in [i["id"] for i in k.instances("al-pool-")
                                               if i["state"] == "success"], 30)
    check(pool_states() == ["success", "success"], f"pool: both runs ended ({pool_states()})")

    # --- a recovery: attempt 1 fails, attempt 2 succeeds
    r_rec = int(k.tool("alert-rule", "al-rec-rule", "task", "al-rec-x", "recovered"))
    check(k.wait_log("k2", r"alert rules read.* rules=7"), "k2 read the recovery rule")
    rec = k.task("al-rec-x", retries={"max": 1, "delay": "100ms"}, labels={"hold": "yes"})
    k.wait_indexed("al-rec-x")
    (rec_id,) = k.create(rec, [t0])

    def rec_at(attempt):
        i = instance(k, "al-rec-", "al-rec-x")
        return i.get("state") == "running" and i.get("attempt") == attempt
    check(wait_until(lambda: rec_at(1), 30), "recovered: attempt 1 runs")
    k.tool("fail", str(rec_id), "1")
    check(wait_until(lambda: rec_at(2), 30), "recovered: attempt 2 runs after the retry")
    k.tool("finish", str(rec_id), "2")
    got = wait_until(lambda: alerts(k, r_rec), 30)
    check(len(got or []) == 1 and got[0]["dedup_key"] == f"recovered:task:{rec}:{t0}",
          f"recovered: one alert ({got})")

    # --- an executor lost
    k.start_executor("exec-gone", 2, 100, labels={"gone": "yes"})
    k.wait_executor_seen("exec-gone")
    k.kill_executor("exec-gone", signal.SIGKILL)
    got = wait_until(lambda: [a for a in alerts(k, r_ex)
                              if a["dedup_key"].startswith("executor_lost:exec-gone:")], 60)
    check(len(got or []) == 1, f"executor_lost: one alert for the killed executor ({got})")



def main():
    if len(sys.argv) != 2:
        print("usage: test_kepler_alerts.py BUILD_DIR", file=sys.stderr)
        return 2
    orrery_it.require_env("ORRERY_ZK")
    with orrery_it.Platform(sys.argv[1], galaxies=0) as p:
        k = tk.Kepler(p)
        try:
            run(k)
        except Exception as e:  # report, then fail
            tk.FAILURES.append(f"exception: {e!r}")
            print(f"FAIL exception: {e!r}", flush=True)
        if tk.FAILURES:
            for name, _ in k.keplers:
                print(f"--- keplerd-{name}.log (tail)")
                print("\n".join(p.log(f"keplerd-{name}.log").splitlines()[-60:]))
            print(f"--- kept logs in {p.tmp}")
    print(f"{len(tk.FAILURES)} failed", flush=True)
    return 1 if tk.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
