"""test_metrics_health.py - every daemon answers /metrics and /healthz.

The real daemons run on the test stack: halleyd and galaxyd (the Platform),
two keplerd, two executord and sortd, each with its metrics address set.
For each daemon the test

  1. reads GET /metrics and gives the text to `promtool check metrics`
     (Prometheus's own checker, which also refuses a family without # HELP
     or # TYPE) and looks for the daemon's own families;
  2. reads GET /healthz and checks what it says against what is true:
     halleyd's database is up; keplerd k1 leads and k2 stands by, both with
     a connected ZooKeeper session, and k2 leads once k1 is stopped (the
     kepler_leader gauge agrees); executord is registered in ZooKeeper,
     while one given a ZooKeeper address where nothing listens answers 503
     and "registered": false; sortd names its stream.

Nothing waits a fixed time: each check polls until its condition holds or a
generous deadline passes.

Usage: test_metrics_health.py BUILD_DIR (the stack of deploy/test.sh:
ORRERY_PG_DSN, ORRERY_ZK).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
DEADLINE_S = 60.0
PROMTOOL = "/usr/bin/promtool"
FAILURES = []


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


def get(port, path):
    """(status, body text) of GET path on 127.0.0.1:port; (0, error) when
    nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except OSError as e:
        return 0, str(e)


def health(port):
    st, body = get(port, "/healthz")
    try:
        return st, json.loads(body)
    except ValueError:
        return st, {"unparsed": body}


def wait_for(cond, what):
    deadline = time.time() + DEADLINE_S
    last = None
    while time.time() < deadline:
        last = cond()
        if last:
            return check(True, what)
        time.sleep(0.1)
    return check(False, f"{what} (waited {DEADLINE_S:.0f} s; last {last!r})")


def check_metrics(name, port, families):
    st, text = get(port, "/metrics")
    check(st == 200, f"{name}: GET /metrics answers 200 (got {st})")
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True)
    check(r.returncode == 0,
          f"{name}: promtool check metrics accepts the exposition"
          + ("" if r.returncode == 0 else f":\n{r.stdout}{r.stderr}"))
    for f in families:
        check(f"# HELP {f} " in text and f"# TYPE {f} " in text,
              f"{name}: family {f} with HELP and TYPE")
    return text


def sample(text, name):
    """The value of the unlabelled sample name in an exposition, or None."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def spawn(p, args, env, log):
    return p._spawn(args, env, log)


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    zk = orrery_it.require_env("ORRERY_ZK")
    check(os.access(PROMTOOL, os.X_OK), f"{PROMTOOL} is installed (deploy/install-deps.sh)")
    # the daemons' folders, removed once the Platform stopped them, also when
    # a check raised
    with tempfile.TemporaryDirectory(prefix="orr-metrics-", ignore_cleanup_errors=True) as tmp, \
            orrery_it.Platform(BUILD) as p:
        os.chmod(tmp, 0o711)
        # ---- halleyd
        hport = p.halley_metrics_port
        orrery_it.wait_port(hport, p.procs[0], "halleyd metrics")
        wait_for(lambda: (lambda r: r[0] == 200 and r[1].get("db_ok") is True
                          and r[1].get("status") == "ok")(health(hport)),
                 "halleyd: /healthz 200, the database up, once PostgreSQL answers")
        p.http("GET", "/api/v1/me")  # one RPC through galaxyd, so the RPC families have rows
        check_metrics("halleyd", hport, ["halley_db_pool_size", "halley_db_connected",
                                         "halley_event_listener_up", "halley_task_cache_entries",
                                         "halley_rpc_calls_total", "halley_rpc_latency_seconds",
                                         "halley_rpc_worker_events_total",
                                         "halley_rpc_worker_busy_seconds_total",
                                         "halley_rpc_worker_let_ins_total", "halley_rpc_queues"])
        # A login is one Authenticate call to halleyd: events its workers
        # took and time they spent, counted once the worker is back from it.
        p.add_user("metrics-owner", "metrics-password-1", "admin")
        p.login("metrics-owner", "metrics-password-1")

        def workers_counted():
            st, text = get(hport, "/metrics")
            ev, busy = (sample(text, f) for f in ("halley_rpc_worker_events_total",
                                                    "halley_rpc_worker_busy_seconds_total"))
            return st == 200 and ev is not None and ev >= 1 and busy is not None and busy > 0

        wait_for(workers_counted, "halleyd: its RPC workers took events and spent time on them")

        # ---- galaxyd: /metrics and /healthz on its own port
        # (its answer asks halleyd's Health within 1 s: a loaded machine can
        # miss that once, so it is polled like every other check here)
        gport = p.galaxy_ports[0]
        wait_for(lambda: (lambda r: r[0] == 200 and r[1].get("status") == "ok")(health(gport)),
                 "galaxyd: /healthz 200 ok")
        check_metrics("galaxyd", gport, ["galaxy_http_requests_total",
                                         "galaxy_http_request_seconds", "galaxy_http_in_flight",
                                         "galaxy_http_cache_total"])

        # ---- keplerd: k1 leads, k2 stands by; k2 takes over when k1 stops
        def kepler(name):
            port = orrery_it.free_port()
            env = dict(os.environ)
            env.update({
                "ORRERY_KEPLER_HALLEY": f"127.0.0.1:{p.halley_port}",
                "ORRERY_KEPLER_HALLEY_TOKEN": p.token,
                "ORRERY_KEPLER_ZK": zk,
                "ORRERY_KEPLER_ID": f"it-metrics-{name}-{os.getpid()}",
                "ORRERY_KEPLER_ZK_SESSION_TIMEOUT": "4s",
                "ORRERY_KEPLER_METRICS_LISTEN": f"127.0.0.1:{port}",
            })
            proc = spawn(p, [p.bin("keplerd"), "run"], env, f"keplerd-{name}.log")
            orrery_it.wait_port(port, proc, f"keplerd {name} metrics")
            return proc, port

        k1, k1port = kepler("k1")
        wait_for(lambda: health(k1port)[1].get("role") == "leader", "keplerd k1: /healthz role leader")
        st, h = health(k1port)
        check(st == 200 and h.get("zookeeper") == "connected" and h.get("epoch", 0) > 0,
              f"keplerd k1: 200, ZooKeeper connected, an epoch ({st} {h})")
        k2, k2port = kepler("k2")
        wait_for(lambda: health(k2port)[1].get("zookeeper") == "connected",
                 "keplerd k2: /healthz ZooKeeper connected")
        st, h = health(k2port)
        check(st == 200 and h.get("role") == "standby" and h.get("epoch") == 0,
              f"keplerd k2: 200, standby ({st} {h})")
        text1 = check_metrics("keplerd k1", k1port, ["kepler_leader", "kepler_zk_connected",
                                                     "kepler_leader_epoch",
                                                     "kepler_dispatched_total"])
        text2 = check_metrics("keplerd k2", k2port, ["kepler_leader"])
        check(sample(text1, "kepler_leader") == 1 and sample(text2, "kepler_leader") == 0,
              "kepler_leader is 1 on k1 and 0 on k2")
        check(sample(text1, "kepler_zk_connected") == 1, "kepler_zk_connected is 1 on k1")
        stop(k1)
        wait_for(lambda: health(k2port)[1].get("role") == "leader",
                 "keplerd k2: /healthz role leader once k1 stopped")
        _, text2 = get(k2port, "/metrics")
        check(sample(text2, "kepler_leader") == 1, "kepler_leader is 1 on k2 once it leads")
        stop(k2)

        # ---- executord: registered in ZooKeeper; one that cannot reach it is not
        def executor(name, zk_hosts):
            port = orrery_it.free_port()
            xdir = os.path.join(tmp, name)
            os.makedirs(xdir)
            os.chmod(xdir, 0o711)
            env = dict(os.environ)
            env.update({
                "ORRERY_EXECUTOR_ID": f"it-metrics-{name}-{os.getpid()}",
                "ORRERY_EXECUTOR_HALLEY": f"127.0.0.1:{p.halley_port}",
                "ORRERY_EXECUTOR_HALLEY_TOKEN": p.token,
                "ORRERY_EXECUTOR_ZK": zk_hosts,
                "ORRERY_EXECUTOR_ZK_SESSION": "4s",
                "ORRERY_EXECUTOR_SLOTS": "2",
                "ORRERY_EXECUTOR_LISTEN": f"127.0.0.1:{orrery_it.free_port()}",
                "ORRERY_EXECUTOR_METRICS_LISTEN": f"127.0.0.1:{port}",
                "ORRERY_EXECUTOR_LOG_TOKEN": "metrics-test-token",
                "ORRERY_EXECUTOR_WORK_DIR": os.path.join(xdir, "work"),
                "ORRERY_EXECUTOR_BLOB_ROOT": "file://" + os.path.join(xdir, "blob"),
                "ORRERY_EXECUTOR_CGROUP_PARENT": f"orrery-it-metrics-{name}",
            })
            proc = spawn(p, [p.bin("executord"), "serve"], env, f"executord-{name}.log")
            orrery_it.wait_port(port, proc, f"executord {name} metrics")
            return proc, port

        x1, x1port = executor("x1", zk)
        wait_for(lambda: health(x1port)[1].get("registered") is True,
                 "executord: /healthz registered once ZooKeeper answered")
        st, h = health(x1port)
        check(st == 200 and h.get("slots") == 2, f"executord: 200 with its slots ({st} {h})")
        text = check_metrics("executord", x1port, ["executor_slots", "executor_used_slots",
                                                   "executor_jobs_running",
                                                   "executor_registered"])
        check(sample(text, "executor_registered") == 1 and sample(text, "executor_slots") == 2,
              "executor_registered is 1 and executor_slots 2")
        nowhere = f"127.0.0.1:{orrery_it.free_port()}"
        x2, x2port = executor("x2", nowhere)
        st, h = health(x2port)
        check(st == 503 and h.get("registered") is False and h.get("status") == "degraded",
              f"executord without ZooKeeper: /healthz 503, not registered ({st} {h})")
        _, text = get(x2port, "/metrics")
        check(sample(text, "executor_registered") == 0, "executor_registered is 0 without ZooKeeper")
        stop(x2)
        stop(x1)

        # ---- sortd: a file source that never ends, so it serves until stopped
        sport = orrery_it.free_port()
        spec, env = orrery_it.sortd_file_stream(os.path.join(tmp, "sort"), "metrics",
                                                ["1|1714528800", "2|1714528801"], sport)
        so = spawn(p, [p.bin("sortd"), "run", "--stream", spec], env, "sortd.log")
        orrery_it.wait_port(sport, so, "sortd metrics")
        wait_for(lambda: health(sport)[1].get("stream") == "metrics",
                 "sortd: /healthz names its stream once the pipeline published")
        st, _ = health(sport)
        check(st == 200, f"sortd: /healthz 200 (got {st})")
        wait_for(lambda: "sortd_records_in_total{stream=\"metrics\"} 2" in get(sport, "/metrics")[1],
                 "sortd: both records counted")
        check_metrics("sortd", sport, ["sortd_records_in_total", "sortd_records_rejected_total",
                                       "sortd_open_units", "sortd_lag"])
        stop(so)

    if FAILURES:
        print(f"{len(FAILURES)} failed", flush=True)
        return 1
    print("PASS metrics and health of every daemon", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
