"""test_prometheus.py - the sample monitoring of docs/deploy.md holds.

deploy/prometheus/prometheus.yml (scrape config) and alerts.yml (alert
rules) are checked three ways:

  1. both parse as YAML, `promtool check config` accepts the scrape config
     (which loads the rules), `promtool check rules` the rules, and
     `promtool test rules alerts.test.yml` runs the rules' unit tests;
  2. the ports the scrape config names per job are those the sample configs
     of deploy/etc/ set (metrics_listen, galaxyd's listen), and every job a
     rule selects (job="node", job=~"orrery-.*") is one it scrapes;
  3. every metric name an alert rule uses, and every one the "Monitoring"
     section of docs/deploy.md names, is exported by the daemon its prefix
     names (halley_ halleyd, galaxy_ galaxyd, kepler_ keplerd, executor_
     executord, sortd_ sortd): the real daemons run on the test stack as in
     the metrics test, each is scraped, and the name must be a family
     (# TYPE) of its answer. Names of other exporters (node_, up) are only
     allowed in rules of their own jobs.

halleyd's instance families are also checked against what is true: the
instances made by a backfill are counted among the live states.

Usage: test_prometheus.py BUILD_DIR (the stack of deploy/test.sh:
ORRERY_PG_DSN, ORRERY_ZK).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROM = os.path.join(ROOT, "deploy", "prometheus")
PROMTOOL = "/usr/bin/promtool"
DEADLINE_S = 60.0
FAILURES = []
DAEMON_OF = {"halley": "halleyd", "galaxy": "galaxyd", "kepler": "keplerd",
             "executor": "executord", "sortd": "sortd"}
NAME_RE = re.compile(r"\b((?:halley|galaxy|kepler|executor|sortd)_[a-z0-9_]+)")
HIST_SUFFIX = ("_bucket", "_sum", "_count")


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except OSError as e:
        return 0, str(e)


def wait_for(cond, what):
    deadline = time.time() + DEADLINE_S
    last = None
    while time.time() < deadline:
        last = cond()
        if last:
            return check(True, what)
        time.sleep(0.1)
    return check(False, f"{what} (waited {DEADLINE_S:.0f} s; last {last!r})")


def promtool(*args):
    r = subprocess.run([PROMTOOL, *args], cwd=PROM, capture_output=True, text=True)
    check(r.returncode == 0, f"promtool {' '.join(args)}"
          + ("" if r.returncode == 0 else f":\n{r.stdout}{r.stderr}"))


def families(text):
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


def wanted_names(jobs):
    """{metric name: where it is used} from the rules and the docs; every
    job a rule's selector names is one prometheus.yml scrapes."""
    want = {}
    with open(os.path.join(PROM, "alerts.yml")) as f:
        rules = yaml.safe_load(f)
    n_rules = 0
    for g in rules["groups"]:
        for r in g["rules"]:
            n_rules += 1
            expr = r["expr"]
            for op, val in re.findall(r'job\s*(=~|=)\s*"([^"]*)"', expr):
                hit = [j for j in jobs if (re.fullmatch(val, j) if op == "=~" else j == val)]
                check(bool(hit), f"{r['alert']}: job{op}\"{val}\" matches scraped jobs {hit}")
            for m in NAME_RE.findall(expr):
                want.setdefault(m, f"alerts.yml {r['alert']}")
            for m in re.findall(r"\b(node_[a-z0-9_]+)", expr):
                check('job="node"' in expr, f"{r['alert']}: {m} read from the node job only")
    check(n_rules >= 15, f"alerts.yml has the rules ({n_rules})")
    with open(os.path.join(ROOT, "docs", "deploy.md")) as f:
        doc = f.read()
    sec = re.search(r"^## Monitoring\n(.*?)(?=^## )", doc, re.S | re.M)
    if check(sec is not None, "docs/deploy.md has a Monitoring section"):
        names = set()
        for code in re.findall(r"`([^`]+)`", sec.group(1)):
            names.update(NAME_RE.findall(code))
        check(len(names) >= 20, f"the Monitoring section names the metrics ({len(names)})")
        for m in names:
            want.setdefault(m, "docs/deploy.md Monitoring")
    return want


def base_name(name, exported):
    if name in exported:
        return name
    for s in HIST_SUFFIX:
        if name.endswith(s) and name[: -len(s)] in exported:
            return name[: -len(s)]
    return name


def check_ports(conf):
    """Each job's ports in prometheus.yml match the sample configs."""
    def sample_port(role, key):
        with open(os.path.join(ROOT, "deploy", "etc", f"{role}.conf.in")) as f:
            m = re.search(rf"^{key}\s*=\s*\S+:(\d+)\s*$", f.read(), re.M)
        return m.group(1) if m else None

    expect = {"orrery-halleyd": sample_port("halley", "metrics_listen"),
              "orrery-galaxyd": sample_port("galaxy", "listen"),
              "orrery-keplerd": sample_port("kepler", "metrics_listen"),
              "orrery-executord": sample_port("executor", "metrics_listen")}
    jobs = {j["job_name"]: j for j in conf["scrape_configs"]}
    for job in ("orrery-halleyd", "orrery-galaxyd", "orrery-keplerd", "orrery-executord",
                "orrery-sortd", "node"):
        check(job in jobs, f"prometheus.yml scrapes {job}")
    check("alerts.yml" in conf.get("rule_files", []), "prometheus.yml loads alerts.yml")
    for job, port in expect.items():
        targets = [t for sc in jobs.get(job, {}).get("static_configs", []) for t in sc["targets"]]
        check(port is not None and targets and all(t.endswith(":" + port) for t in targets),
              f"{job}: every target on port {port}, as deploy/etc sets ({targets})")


def start(p, args, env, log, port, what):
    proc = p._spawn(args, env, log)
    orrery_it.wait_port(port, proc, what)
    return proc


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def sample_sum(text, name):
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.split()[-1])
            seen = True
    return total if seen else None


def scrape(tmp):
    """Start each daemon in turn (files under tmp); {daemon: families}."""
    zk = orrery_it.require_env("ORRERY_ZK")
    exported = {}
    with orrery_it.Platform(BUILD) as p:
        p.add_user("prom-dev", "prom-dev-password-1", "developer", teams=["prom"])
        dev = p.login("prom-dev", "prom-dev-password-1")
        r = p.http("POST", "/api/v1/tasks",
                   {"name": "prom.hourly", "team": "prom", "type": "shell",
                    "schedule": "0 * * * *", "timezone": "UTC",
                    "config": {"command": "/bin/true"}}, token=dev)
        check(r.status == 201, f"task created ({r.status})")
        task = r.json()["id"]
        r = p.http("POST", f"/api/v1/tasks/{task}/backfill",
                   {"from": "2026-03-01T00:00:00Z", "to": "2026-03-01T03:00:00Z"}, token=dev)
        check(r.status == 200, f"backfill of three hours ({r.status})")
        live = [i for i in p.http("GET", f"/api/v1/instances?task_id={task}",
                                  token=dev).json()["items"]
                if i["state"] in ("waiting", "ready", "dispatched", "running")]
        hport = p.halley_metrics_port
        _, text = get(hport, "/metrics")
        check(len(live) >= 2 and sample_sum(text, "halley_instances") == len(live),
              f"halley_instances counts the {len(live)} live instances "
              f"({[ln for ln in text.splitlines() if ln.startswith('halley_instances{')]})")
        check(all(f'halley_instance_oldest_seconds{{state="{s}"}}' in text
                  for s in ("waiting", "ready", "dispatched", "running")),
              "halley_instance_oldest_seconds has every live state")
        check(all(f'halley_instances_finished_15m{{state="{s}"}}' in text
                  for s in ("success", "failed", "timed_out", "killed")),
              "halley_instances_finished_15m has every final state")
        exported["halleyd"] = families(text)
        _, text = get(p.galaxy_ports[0], "/metrics")
        exported["galaxyd"] = families(text)

        kport = orrery_it.free_port()
        env = dict(os.environ)
        env.update({"ORRERY_KEPLER_HALLEY": f"127.0.0.1:{p.halley_port}",
                    "ORRERY_KEPLER_HALLEY_TOKEN": p.token, "ORRERY_KEPLER_ZK": zk,
                    "ORRERY_KEPLER_ID": f"it-prom-{os.getpid()}",
                    "ORRERY_KEPLER_ZK_SESSION_TIMEOUT": "4s",
                    "ORRERY_KEPLER_METRICS_LISTEN": f"127.0.0.1:{kport}"})
        k = start(p, [p.bin("keplerd"), "run"], env, "keplerd.log", kport, "keplerd metrics")
        # kepler_alert_deliveries_total appears once the leader runs its sender
        wait_for(lambda: "kepler_alert_deliveries_total" in get(kport, "/metrics")[1],
                 "keplerd exports its alert sender's families")
        exported["keplerd"] = families(get(kport, "/metrics")[1])
        stop(k)

        xport = orrery_it.free_port()
        xdir = os.path.join(tmp, "x")
        os.makedirs(xdir)
        os.chmod(xdir, 0o711)
        env = dict(os.environ)
        env.update({"ORRERY_EXECUTOR_ID": f"it-prom-{os.getpid()}",
                    "ORRERY_EXECUTOR_HALLEY": f"127.0.0.1:{p.halley_port}",
                    "ORRERY_EXECUTOR_HALLEY_TOKEN": p.token, "ORRERY_EXECUTOR_ZK": zk,
                    "ORRERY_EXECUTOR_ZK_SESSION": "4s", "ORRERY_EXECUTOR_SLOTS": "1",
                    "ORRERY_EXECUTOR_LISTEN": f"127.0.0.1:{orrery_it.free_port()}",
                    "ORRERY_EXECUTOR_METRICS_LISTEN": f"127.0.0.1:{xport}",
                    "ORRERY_EXECUTOR_LOG_TOKEN": "prom-test-token",
                    "ORRERY_EXECUTOR_WORK_DIR": os.path.join(xdir, "work"),
                    "ORRERY_EXECUTOR_BLOB_ROOT": "file://" + os.path.join(xdir, "blob"),
                    "ORRERY_EXECUTOR_CGROUP_PARENT": "orrery-it-prom"})
        x = start(p, [p.bin("executord"), "serve"], env, "executord.log", xport,
                  "executord metrics")
        exported["executord"] = families(get(xport, "/metrics")[1])
        stop(x)

        sport = orrery_it.free_port()
        spec, env = orrery_it.sortd_file_stream(os.path.join(tmp, "sort"), "prom",
                                                ["1|1714528800"], sport)
        so = start(p, [p.bin("sortd"), "run", "--stream", spec], env, "sortd.log", sport,
                   "sortd metrics")
        wait_for(lambda: 'sortd_records_in_total{stream="prom"} 1' in get(sport, "/metrics")[1],
                 "sortd read its record")
        exported["sortd"] = families(get(sport, "/metrics")[1])
        stop(so)

    return exported


def main():
    orrery_it.require_env("ORRERY_ZK")  # before anything runs: fails early when unset
    # ---- 1. YAML, promtool
    with open(os.path.join(PROM, "prometheus.yml")) as f:
        conf = yaml.safe_load(f)
    check(isinstance(conf, dict) and "scrape_configs" in conf, "prometheus.yml parses as YAML")
    check_ports(conf)
    promtool("check", "config", "prometheus.yml")
    promtool("check", "rules", "alerts.yml")
    promtool("test", "rules", "alerts.test.yml")
    want = wanted_names([j["job_name"] for j in conf["scrape_configs"]])

    # ---- 3. the daemons, scraped
    tmp = tempfile.mkdtemp(prefix="orr-prom-")
    os.chmod(tmp, 0o711)
    try:
        exported = scrape(tmp)
    finally:  # the daemons' folders, also when a check raised
        shutil.rmtree(tmp, ignore_errors=True)
    for name, where in sorted(want.items()):
        daemon = DAEMON_OF[name.split("_")[0]]
        fams = exported.get(daemon, set())
        check(base_name(name, fams) in fams, f"{name} ({where}) is exported by {daemon}")
    if FAILURES:
        print(f"{len(FAILURES)} failed", flush=True)
        return 1
    print(f"PASS promtool accepts the files; {len(want)} metric names of the rules and the docs "
          "exported",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
