#!/usr/bin/python3
"""test_cli.py - the `orrery` command line against a real platform: halleyd,
galaxyd, keplerd and one executord on a fresh database and a ZooKeeper chroot
of their own (ORRERY_PG_DSN and ORRERY_ZK from the test stack; unset is a
failure, never a skip).

Checks: `orrery login` reads the password from stdin, keeps an API token in
$XDG_CONFIG_HOME/orrery/config with mode 0600, and the environment overrides
the profile; the demo-style workflow exported and applied back is unchanged;
a plan changes nothing, --yes applies it, a second apply does nothing, a
changed field is shown as a diff, --prune deactivates what the files no
longer hold; a YAML file with an error is reported at its line; `logs -f`
follows a live run (held by a gate file the test creates) to its end; the
exit codes (2 usage/validation, 3 not found, 4 conflict); --help on every
command, completion scripts that the shells parse, the man page.

usage: test_cli.py BUILD_DIR
ORRERY_IT_CLI=PATH tests another orrery binary (a sanitizer build's) against
the same daemons.
"""
import json
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
HOME = None
GATES = None
ADMIN_PW = "root-password-1"


def zk_chroot(connect):
    """Create the chroot node of host:port/path (one level), speaking
    ZooKeeper's wire protocol: connect, create, close."""
    hosts, _, path = connect.partition("/")
    host, port = hosts.split(",")[0].rsplit(":", 1)

    def frame(body):
        return struct.pack(">i", len(body)) + body

    def zstr(x):
        x = x.encode()
        return struct.pack(">i", len(x)) + x

    with socket.create_connection((host, int(port)), timeout=10) as s:
        f = s.makefile("rb")

        def answer():
            n = struct.unpack(">i", f.read(4))[0]
            return f.read(n)

        s.sendall(frame(struct.pack(">iqiq", 0, 0, 10000, 0) + struct.pack(">i", 16) + bytes(16)))
        answer()
        acl = struct.pack(">i", 1) + struct.pack(">i", 31) + zstr("world") + zstr("anyone")
        s.sendall(frame(struct.pack(">ii", 1, 1) + zstr("/" + path) + struct.pack(">i", -1)
                        + acl + struct.pack(">i", 0)))
        err = struct.unpack(">iqi", answer()[:16])[2]
        s.sendall(frame(struct.pack(">ii", 2, -11)))
        if err not in (0, -110):  # ZOK, ZNODEEXISTS
            raise RuntimeError(f"zookeeper create /{path}: error {err}")


def orrery_bin():
    """The binary under test: ORRERY_IT_CLI (e.g. a sanitizer build's) or the build's."""
    return os.environ.get("ORRERY_IT_CLI") or os.path.join(BUILD, "bin", "orrery")


def cli(*args, stdin=None, env=None, timeout=120):
    e = dict(os.environ)
    e.update({"HOME": HOME, "XDG_CONFIG_HOME": os.path.join(HOME, "config")})
    for k in ("ORRERY_URL", "ORRERY_TOKEN", "ORRERY_PROFILE", "ORRERY_CONFIG"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([orrery_bin(), *args], input=stdin, env=e,
                          capture_output=True, text=True, timeout=timeout)


def api(method, path, body=None):
    token = P.login("root", ADMIN_PW)
    return P.http(method, path, body, token=token)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def wait_until(fn, timeout=60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    return None


def setUpModule():
    global P, HOME, GATES
    zk = orrery_it.require_env("ORRERY_ZK").split("/")[0] + f"/orrery-cli-it-{os.getpid()}"
    zk_chroot(zk)
    P = orrery_it.Platform(BUILD, galaxies=0).__enter__()
    try:
        os.chmod(P.tmp, 0o755)  # tasks run as an unprivileged user
        HOME = tempfile.mkdtemp(prefix="orr-cli-home-")
        GATES = os.path.join(P.tmp, "gates")
        os.makedirs(GATES)
        os.chmod(GATES, 0o777)
        blob = "file://" + os.path.join(P.tmp, "blob")
        P.start_galaxy({"ORRERY_GALAXY_ZK": zk, "ORRERY_GALAXY_EXECUTOR_LOG_TOKEN": "cli-it",
                        "ORRERY_GALAXY_BLOB_ROOT": blob})
        env = dict(os.environ)
        env.update({
            "ORRERY_EXECUTOR_ID": f"cli-it-{os.getpid()}",
            "ORRERY_EXECUTOR_HOST": "127.0.0.1",
            "ORRERY_EXECUTOR_HALLEY": f"127.0.0.1:{P.halley_port}",
            "ORRERY_EXECUTOR_HALLEY_TOKEN": P.token,
            "ORRERY_EXECUTOR_ZK": zk,
            "ORRERY_EXECUTOR_SLOTS": "4",
            "ORRERY_EXECUTOR_LISTEN": f"127.0.0.1:{orrery_it.free_port()}",
            "ORRERY_EXECUTOR_LOG_TOKEN": "cli-it",
            "ORRERY_EXECUTOR_WORK_DIR": os.path.join(P.tmp, "work"),
            "ORRERY_EXECUTOR_BLOB_ROOT": blob,
            "ORRERY_EXECUTOR_CGROUP": "rlimit",
        })
        P._spawn([P.bin("executord"), "serve"], env, "executord.log")
        env = dict(os.environ)
        env.update({
            "ORRERY_KEPLER_HALLEY": f"127.0.0.1:{P.halley_port}",
            "ORRERY_KEPLER_HALLEY_TOKEN": P.token,
            "ORRERY_KEPLER_ZK": zk,
            "ORRERY_KEPLER_ID": f"cli-it-kepler-{os.getpid()}",
            "ORRERY_KEPLER_SWEEP_INTERVAL": "5s",
            "ORRERY_KEPLER_ZK_SESSION_TIMEOUT": "4s",
        })
        P._spawn([P.bin("keplerd"), "run"], env, "keplerd.log")
        if not wait_until(lambda: "kepler leadership gained" in P.log("keplerd.log"), 60):
            raise RuntimeError("keplerd did not lead within 60 s")
        P.add_user("root", ADMIN_PW, "admin", teams=["demo", "cli", "cyc"])
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    if P:
        P.__exit__(None, None, None)
    if HOME:
        shutil.rmtree(HOME, ignore_errors=True)


class Cli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = cli("login", P.base, "--user", "root", stdin=ADMIN_PW + "\n")
        if r.returncode != 0:
            raise AssertionError(f"login: {r.stderr}")

    def ok(self, r):
        self.assertEqual(r.returncode, 0, f"stdout: {r.stdout}\nstderr: {r.stderr}")
        return r

    def test_login_profile_and_overrides(self):
        path = os.path.join(HOME, "config", "orrery", "config")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(f"url = {P.base}", text)
        self.assertIn("token = orr_", text)
        self.assertNotIn(ADMIN_PW, text)
        self.ok(cli("ls", "pools"))
        # --verbose logs each call in logfmt, never the token.
        r = self.ok(cli("ls", "pools", "-v"))
        self.assertRegex(r.stderr, r'level=debug msg="api call" method=GET '
                                   r'path="/api/v1/pools\?limit=100" status=200 ms=')
        token = [x for x in text.splitlines() if x.startswith("token = ")][0][8:]
        self.assertNotIn(token, r.stderr)
        # The environment overrides the profile: a bad token is refused (1).
        r = cli("ls", "pools", env={"ORRERY_TOKEN": "orr_not-a-token"})
        self.assertEqual(r.returncode, 1, r.stderr)
        r = cli("ls", "pools", env={"ORRERY_URL": "http://127.0.0.1:1"})
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot reach", r.stderr)
        # A wrong password: no token, exit 1.
        r = cli("login", P.base, "--user", "root", "--profile", "other", stdin="wrong\n")
        self.assertEqual(r.returncode, 1, r.stderr)
        r = cli("ls", "pools", "--profile", "nosuch")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_demo_workflow_export_then_apply_changes_nothing(self):
        # The demo workflow of the quickstart, made through the REST API.
        ids, up = [], None
        for name in ("demo.extract", "demo.transform", "demo.load"):
            spec = {"name": name, "team": "demo", "type": "shell", "schedule": "0 0 * * * ?",
                    "timezone": "UTC",
                    "upstreams": [{"task": up, "kind": "strong"}] if up else [],
                    "config": {"command": f"echo {name} at $ORRERY_SCHEDULE_TIME; sleep 2"}}
            r = api("POST", "/api/v1/tasks", spec)
            self.assertEqual(r.status, 201, r)
            ids.append(r.json()["id"])
            up = name
        r = api("PUT", "/api/v1/workflows/demo", {"team": "demo", "task_ids": ids,
                                                  "description": "the quickstart's demo"})
        self.assertIn(r.status, (200, 201), r)
        out = os.path.join(HOME, "export-demo")
        self.ok(cli("export", "--workflow", "demo", "--dir", out))
        with open(os.path.join(out, "tasks", "demo.load.yaml"), encoding="utf-8") as f:
            load = f.read()
        # Keys in the order people write them, strings quoted.
        self.assertTrue(load.startswith('kind: task\nspec:\n  name: "demo.load"\n'
                                        '  team: "demo"\n  type: "shell"\n'
                                        '  schedule: "0 0 * * * ?"\n'), load)
        self.assertIn('  upstreams:\n    - kind: "strong"\n      task: "demo.transform"\n',
                      load)
        self.assertTrue(os.path.exists(os.path.join(out, "workflows", "demo.yaml")))
        with open(os.path.join(out, "workflows", "demo.yaml"), encoding="utf-8") as f:
            self.assertIn('description: "the quickstart\'s demo"', f.read())
        self.ok(cli("validate", out))
        r = self.ok(cli("apply", out, "-o", "json"))
        plan = json.loads(r.stdout)
        self.assertEqual(plan["summary"], {"create": 0, "update": 0, "unchanged": 4,
                                           "deactivate": 0}, r.stdout)
        # The whole platform to stdout, applied back with --yes: nothing to do.
        r = self.ok(cli("export"))
        write(os.path.join(HOME, "all.yaml"), r.stdout)
        r = self.ok(cli("apply", os.path.join(HOME, "all.yaml"), "--yes"))
        self.assertIn("nothing to do", r.stdout)
        self.assertEqual(api("GET", f"/api/v1/tasks/{ids[2]}").json()["version"], 1)

    def test_plan_apply_prune_cycle(self):
        d = os.path.join(HOME, "cycle")
        write(os.path.join(d, "a.yaml"), """\
kind: task
spec:
  name: cyc.a
  team: cyc
  type: shell
  schedule: "0 0 0 1 1 ?"
  config:
    command: "true"
""")
        write(os.path.join(d, "b.yaml"), """\
kind: task
spec:
  name: cyc.b
  team: cyc
  type: shell
  schedule: "0 0 0 1 1 ?"
  upstreams:
    - {kind: strong, task: cyc.a}
  config: {command: "true"}
---
kind: workflow
spec:
  name: cyc-flow
  team: cyc
  description: every new year
  tasks: [cyc.a, cyc.b]
""")
        write(os.path.join(d, "pool.json"), '{"kind": "pool", "spec": {"name": "cyc-pool", '
                                            '"capacity": 2}}\n')
        # The plan alone changes nothing.
        r = self.ok(cli("apply", d))
        self.assertIn("+ create task cyc.a", r.stdout)
        self.assertIn("+ create workflow cyc-flow", r.stdout)
        self.assertIn("run again with --yes", r.stdout)
        self.assertEqual(api("GET", "/api/v1/tasks?q=cyc.&active=any").json()["items"], [])
        # --yes applies it, upstream first.
        r = self.ok(cli("apply", d, "--yes"))
        self.assertIn("plan: 4 to create", r.stdout)
        tasks = {t["name"]: t for t in api("GET", "/api/v1/tasks?q=cyc.").json()["items"]}
        self.assertEqual(set(tasks), {"cyc.a", "cyc.b"})
        wf = api("GET", "/api/v1/workflows/cyc-flow").json()
        self.assertEqual(sorted(wf["task_ids"]), sorted(t["id"] for t in tasks.values()))
        self.assertEqual(wf["description"], "every new year")
        pools = {p["name"]: p for p in api("GET", "/api/v1/pools").json()["items"]}
        self.assertEqual(pools["cyc-pool"]["capacity"], 2)
        # A second apply does nothing.
        plan = json.loads(self.ok(cli("apply", d, "--yes", "-o", "json")).stdout)
        self.assertEqual(plan["summary"], {"create": 0, "update": 0, "unchanged": 4,
                                           "deactivate": 0})
        self.assertFalse(plan["applied"])
        # A changed field is shown as a diff, then applied as a new version.
        with open(os.path.join(d, "a.yaml"), encoding="utf-8") as fa:
            text = fa.read()
        write(os.path.join(d, "a.yaml"), text.replace('"0 0 0 1 1 ?"', '"0 30 0 1 1 ?"'))
        r = self.ok(cli("apply", d))
        self.assertIn("~ update task cyc.a", r.stdout)
        self.assertIn('spec.schedule: "0 0 0 1 1 ?" -> "0 30 0 1 1 ?"', r.stdout)
        self.ok(cli("apply", d, "--yes"))
        a = api("GET", f"/api/v1/tasks/{tasks['cyc.a']['id']}").json()
        self.assertEqual(a["version"], 2)
        self.assertEqual(a["schedule"], "0 30 0 1 1 ?")
        # cyc.b leaves the files: without --prune it stays, with it it goes.
        write(os.path.join(d, "b.yaml"), """\
kind: workflow
spec:
  name: cyc-flow
  team: cyc
  tasks: [cyc.a]
""")
        r = self.ok(cli("apply", d))
        self.assertNotIn("deactivate task cyc.b", r.stdout)
        r = self.ok(cli("apply", d, "--prune"))
        self.assertIn("- deactivate task cyc.b", r.stdout)
        self.assertTrue(api("GET", f"/api/v1/tasks/{tasks['cyc.b']['id']}").json()["active"])
        self.ok(cli("apply", d, "--prune", "--yes"))
        self.assertFalse(api("GET", f"/api/v1/tasks/{tasks['cyc.b']['id']}").json()["active"])
        self.assertEqual(api("GET", "/api/v1/workflows/cyc-flow").json()["task_ids"],
                         [tasks["cyc.a"]["id"]])
        plan = json.loads(self.ok(cli("apply", d, "--prune", "-o", "json")).stdout)
        self.assertEqual(plan["summary"]["deactivate"], 0)
        self.assertEqual(plan["summary"]["update"], 0)
        # cyc.b comes back to the files: it is reactivated, once.
        write(os.path.join(d, "b2.yaml"), """\
kind: task
spec:
  name: cyc.b
  team: cyc
  type: shell
  schedule: "0 0 0 1 1 ?"
  upstreams:
    - {kind: strong, task: cyc.a}
  config: {command: "true"}
""")
        r = self.ok(cli("apply", d))
        self.assertIn("~ update task cyc.b", r.stdout)
        self.assertIn("reactivated", r.stdout)
        self.ok(cli("apply", d, "--yes"))
        self.assertTrue(api("GET", f"/api/v1/tasks/{tasks['cyc.b']['id']}").json()["active"])
        plan = json.loads(self.ok(cli("apply", d, "-o", "json")).stdout)
        self.assertEqual(plan["summary"]["update"], 0, plan)

    def test_yaml_error_reported_at_its_line(self):
        f = os.path.join(HOME, "bad", "orders.yaml")
        write(f, """\
kind: task
spec:
  name: cli.orders
  team: cli
  type: shell
  retries:
    max: 300
  config:
    command: "true"
""")
        for cmd in ("validate", "apply"):
            r = cli(cmd, f)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(f"{f}:7: spec.retries.max: must be", r.stderr)
        write(f, "kind: task\nspec:\n  name: [unclosed\n")
        r = cli("validate", f)
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{f}:", r.stderr)
        self.assertIn("not valid YAML", r.stderr)
        # A workflow naming a task that exists nowhere: the plan says where.
        write(f, "kind: workflow\nspec:\n  name: cli-w\n  team: cli\n  tasks:\n"
                 "    - cli.nothing-here\n")
        r = cli("apply", f)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"{f}:6: spec.tasks[0]: no task named", r.stderr)
        write(f, "kind: task\nspec:\n  name: cli.orphan\n  team: cli\n  type: shell\n"
                 "  upstreams:\n    - kind: strong\n      task: cli.nowhere\n"
                 "  config: {command: \"true\"}\n")
        r = cli("apply", f)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"{f}:8: spec.upstreams[0].task: no task named", r.stderr)

    def test_logs_follow_a_live_run_to_its_end(self):
        gate = os.path.join(GATES, "logs-follow")
        f = os.path.join(HOME, "gated.yaml")
        # Yearly on Jan 1: no run of its own during the test, one by backfill.
        write(f, f"""\
kind: task
spec:
  name: cli.gated
  team: cli
  type: shell
  schedule: "0 0 0 1 1 ?"
  timezone: UTC
  config:
    command: "echo before-gate; while [ ! -e {gate} ]; do sleep 0.1; done; echo after-gate"
""")
        self.ok(cli("apply", f, "--yes"))
        r = self.ok(cli("backfill", "cli.gated", "--from", "2026-01-01", "--to", "2026-01-02",
                        "-o", "json"))
        body = json.loads(r.stdout)
        self.assertEqual(body["fire_times"], 1, r.stdout)
        self.assertEqual(len(body["created"]), 1, r.stdout)
        iid = str(body["created"][0])
        proc = subprocess.Popen([orrery_bin(), "logs", iid, "-f"],
                                env={**os.environ, "HOME": HOME,
                                     "XDG_CONFIG_HOME": os.path.join(HOME, "config")},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The first line arrives while the run waits for the gate: the
            # command follows a live log, the run cannot have ended.
            first = proc.stdout.readline()
            self.assertEqual(first, "before-gate\n")
            self.assertIsNone(proc.poll())
            with open(gate, "w"):
                pass
            rest, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(rest, "after-gate\n")
        self.assertIn("ended success", err)
        # The finished log, read in chunks, is the same.
        self.assertEqual(self.ok(cli("logs", iid)).stdout, "before-gate\nafter-gate\n")
        stamped = self.ok(cli("logs", iid, "--timestamps")).stdout.splitlines()
        self.assertEqual(len(stamped), 2, stamped)
        for line, text in zip(stamped, ("before-gate", "after-gate")):
            self.assertRegex(line, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z " + text + "$")
        self.assertEqual(cli("logs", iid, "--attempt", "9").returncode, 3)
        self.assertEqual(cli("logs", iid, "-f", "--timestamps").returncode, 2)
        # ls instances finds it, as a table and as JSON.
        r = self.ok(cli("ls", "instances", "--task", "cli.gated"))
        self.assertIn(iid, r.stdout)
        self.assertIn("success", r.stdout)
        items = json.loads(self.ok(cli("ls", "instances", "--task", "cli.gated", "-o",
                                       "json")).stdout)["items"]
        self.assertEqual([i["id"] for i in items], [int(iid)])
        # Exit codes on a finished instance: resume is a conflict (4),
        # rerun makes a new attempt (0).
        r = cli("resume", iid)
        self.assertEqual(r.returncode, 4, r.stderr)
        r = self.ok(cli("rerun", iid, "--reason", "from the cli test"))
        self.assertIn(f"instance {iid}", r.stdout)
        self.assertTrue(wait_until(lambda: api("GET", f"/api/v1/instances/{iid}").json()[
            "state"] in ("success", "failed"), 60))
        # --from-scratch marks the new attempt (a transfer would not resume).
        self.assertFalse(api("GET", f"/api/v1/instances/{iid}").json()["from_scratch"])
        self.ok(cli("rerun", iid, "--from-scratch"))
        self.assertTrue(api("GET", f"/api/v1/instances/{iid}").json()["from_scratch"])
        self.assertTrue(wait_until(lambda: api("GET", f"/api/v1/instances/{iid}").json()[
            "state"] in ("success", "failed"), 60))

    def test_run_now_and_rerun_with_downstream(self):
        f = os.path.join(HOME, "updown.yaml")
        # Yearly on Jan 1: the latest slot is 2026-01-01, no run of their own.
        write(f, """\
kind: task
spec:
  name: cli.up
  team: cli
  type: shell
  schedule: "0 0 0 1 1 ?"
  config: {command: "echo up"}
---
kind: task
spec:
  name: cli.down
  team: cli
  type: shell
  schedule: "0 0 0 1 1 ?"
  upstreams: [{kind: strong, task: cli.up}]
  config: {command: "echo down"}
---
kind: workflow
spec: {name: cli-updown, team: cli, tasks: [cli.up, cli.down]}
""")
        self.ok(cli("apply", f, "--yes"))
        out = json.loads(self.ok(cli("run", "cli.up", "--reason", "cli test", "-o",
                                     "json")).stdout)
        self.assertTrue(out["created"])
        up = out["instance"]
        year = time.gmtime().tm_year
        self.assertEqual(up["schedule_time"], f"{year}-01-01T00:00:00Z")
        r = self.ok(cli("logs", str(up["id"]), "-f"))
        self.assertEqual(r.stdout, "up\n")
        # The same slot again while it is finished: a new attempt.
        r = self.ok(cli("run", "cli.up", "--at", f"{year}-01-01"))
        self.assertIn(f"instance {up['id']} cli.up", r.stdout)
        self.ok(cli("logs", str(up["id"]), "-f"))
        # A slot that is not a fire time: 2.
        self.assertEqual(cli("run", "cli.up", "--at", f"{year}-01-02").returncode, 2)
        # The downstream of that cycle, by backfill with --downstream.
        out = json.loads(self.ok(cli("backfill", "cli.up", "--from", f"{year}-01-01", "--to",
                                     f"{year}-01-02", "--downstream", "-o", "json")).stdout)
        self.assertEqual(out["existing"], [up["id"]])
        self.assertEqual(len(out["created"]), 1, out)
        down = out["created"][0]
        r = self.ok(cli("logs", str(down), "-f"))
        self.assertEqual(r.stdout, "down\n")
        # rerun --downstream: the dry run lists both, then both run again.
        plan = json.loads(self.ok(cli("rerun", str(up["id"]), "--downstream", "--dry-run",
                                      "-o", "json")).stdout)[0]
        self.assertTrue(plan["dry_run"])
        self.assertEqual(sorted(m["instance"]["id"] for m in plan["members"]),
                         sorted([up["id"], down]))
        self.assertEqual(api("GET", f"/api/v1/instances/{down}").json()["attempt"], 1)
        r = self.ok(cli("rerun", str(up["id"]), "--downstream"))
        self.assertIn("2 instance(s) back to waiting", r.stdout)

        def again():
            d = api("GET", f"/api/v1/instances/{down}").json()
            return d["attempt"] == 2 and d["state"] == "success"
        self.assertTrue(wait_until(again, 60))
        # Nothing of that run failed: rerun-failed has nothing to do.
        out = json.loads(self.ok(cli("rerun-failed", "cli-updown", "--at", f"{year}-01-01",
                                     "--dry-run", "-o", "json")).stdout)
        self.assertEqual(out["rerun"], 0, out)
        self.assertEqual(cli("rerun-failed", "cli-nothing", "--at", f"{year}-01-01").returncode, 3)
        r = self.ok(cli("ls", "workflows", "--team", "cli"))
        self.assertIn("cli-updown", r.stdout)

    def test_instance_actions(self):
        f = os.path.join(HOME, "held.yaml")
        # cli.held is in a paused workflow: keplerd moves none of its
        # instances, they stay waiting until the test acts on them.
        write(f, """\
kind: task
spec:
  name: cli.held
  team: cli
  type: shell
  schedule: "0 0 0 1 1 ?"
  config: {command: "true"}
---
kind: workflow
spec: {name: cli-held, team: cli, tasks: [cli.held]}
""")
        self.ok(cli("apply", f, "--yes"))
        r = api("POST", "/api/v1/workflows/cli-held/pause", {})
        self.assertEqual(r.status, 200, r)
        out = json.loads(self.ok(cli("backfill", "cli.held", "--from", "2024-06-01", "--to",
                                     "2026-06-01", "-o", "json")).stdout)
        a, b = sorted(out["created"])

        def state(i):
            return api("GET", f"/api/v1/instances/{i}").json()["state"]
        self.assertEqual((state(a), state(b)), ("waiting", "waiting"))
        r = self.ok(cli("suspend", str(a), str(b), "--reason", "hold"))
        self.assertEqual(r.stdout.count(": suspended (attempt 1)"), 2, r.stdout)
        self.assertEqual((state(a), state(b)), ("suspended", "suspended"))
        # Several ids: each in turn, the exit code of the first failure.
        r = cli("resume", str(a), "999999")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(state(a), "waiting")
        self.ok(cli("kill", str(a)))
        self.assertEqual(state(a), "killed")
        self.ok(cli("mark-success", str(b)))
        self.assertEqual(state(b), "marked_success")
        self.assertEqual(cli("suspend", str(b)).returncode, 4)
        out = json.loads(self.ok(cli("rerun", str(a), str(b), "-o", "json")).stdout)
        self.assertEqual([o["rerun"] for o in out], [1, 1])
        self.assertEqual((state(a), state(b)), ("waiting", "waiting"))
        self.ok(cli("kill", str(a), str(b)))

    def test_backfill_with_parameter_values(self):
        f = os.path.join(HOME, "param.yaml")
        write(f, """\
kind: task
spec:
  name: cli.param
  team: cli
  type: shell
  schedule: "0 0 0 1 1 ?"
  parameters:
    region: {default: eu}
  config: {command: "echo region=${region}"}
""")
        self.ok(cli("apply", f, "--yes"))
        self.assertEqual(cli("backfill", "cli.param", "--from", "2026-01-01", "--to",
                             "2026-01-02", "--param", "nosuch=1").returncode, 2)
        out = json.loads(self.ok(cli("backfill", "cli.param", "--from", "2026-01-01", "--to",
                                     "2026-01-02", "--param", "region=us", "-o",
                                     "json")).stdout)
        iid = out["created"][0]
        r = self.ok(cli("logs", str(iid), "-f"))
        self.assertEqual(r.stdout, "region=us\n")
        # run now with a value: an undeclared name changes nothing (2);
        # a declared one is the new attempt's value
        self.assertEqual(cli("run", "cli.param", "--at", "2026-01-01", "--param",
                             "nosuch=1").returncode, 2)
        inst = api("GET", f"/api/v1/instances/{iid}").json()
        self.assertEqual((inst["attempt"], inst["state"]), (1, "success"))
        out = json.loads(self.ok(cli("run", "cli.param", "--at", "2026-01-01", "--param",
                                     "region=ap", "-o", "json")).stdout)
        self.assertEqual(out["instance"]["id"], iid)
        r = self.ok(cli("logs", str(iid), "-f"))
        self.assertEqual(r.stdout, "region=ap\n")
        self.assertEqual(api("GET", f"/api/v1/instances/{iid}").json()["attempt"], 2)
        # export then apply: the parameters come back unchanged
        r = self.ok(cli("export", "--team", "cli"))
        write(os.path.join(HOME, "cli-team.yaml"), r.stdout)
        self.assertIn('  parameters:\n    region:\n      default: "eu"\n', r.stdout)
        plan = json.loads(self.ok(cli("apply", os.path.join(HOME, "cli-team.yaml"), "-o",
                                      "json")).stdout)
        self.assertEqual(plan["summary"]["update"] + plan["summary"]["create"], 0, plan)

    def test_exit_codes(self):
        self.assertEqual(cli("logs", "999999").returncode, 3)
        self.assertEqual(cli("backfill", "cli.no-such-task", "--from", "2026-01-01", "--to",
                             "2026-01-02").returncode, 3)
        self.assertEqual(cli("ls", "everything").returncode, 2)
        self.assertEqual(cli("rerun", "abc").returncode, 2)
        self.assertEqual(cli("no-such-command").returncode, 2)
        self.assertEqual(cli("apply").returncode, 2)
        self.assertEqual(cli("ls", "tasks", "--output", "xml").returncode, 2)
        self.assertEqual(cli("validate", os.path.join(HOME, "missing.yaml")).returncode, 1)
        r = cli("backfill", "cli.gated", "--from", "2026-01-01")
        self.assertEqual(r.returncode, 2)

    def test_help_completion_and_man(self):
        r = self.ok(cli("--help"))
        names = [line.split()[0] for line in r.stdout.split("commands:\n")[1].split("\n\n")[0]
                 .splitlines()]
        self.assertIn("apply", names)
        for n in names:
            h = self.ok(cli(n, "--help"))
            self.assertTrue(h.stdout.startswith(f"usage: orrery {n}"), h.stdout)
            self.assertIn("exit codes", h.stdout)
        bash = self.ok(cli("completion", "bash")).stdout
        subprocess.run(["bash", "-n"], input=bash, text=True, check=True)
        # The script completes commands and options in a real bash.
        script = bash + '\nCOMP_WORDS=(orrery app); COMP_CWORD=1; _orrery; echo "${COMPREPLY[@]}"' \
                        '\nCOMP_WORDS=(orrery rerun --dow); COMP_CWORD=2; _orrery; ' \
                        'echo "${COMPREPLY[@]}"\n'
        out = subprocess.run(["bash"], input=script, text=True, capture_output=True,
                             check=True).stdout.splitlines()
        self.assertEqual(out, ["apply", "--downstream"])
        zsh = self.ok(cli("completion", "zsh")).stdout
        self.assertTrue(zsh.startswith("#compdef orrery"))
        if shutil.which("zsh"):
            subprocess.run(["zsh", "-n"], input=zsh, text=True, check=True)
        man = self.ok(cli("man")).stdout
        self.assertTrue(man.startswith(".TH ORRERY 1"))
        for n in names:
            self.assertIn(f'.SS "orrery {n.replace("-", chr(92) + "-")}', man)
        if not os.environ.get("ORRERY_IT_CLI"):
            with open(os.path.join(BUILD, "share", "man", "man1", "orrery.1"),
                      encoding="utf-8") as f:
                self.assertEqual(f.read(), man)


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
