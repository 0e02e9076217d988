#!/usr/bin/python3
"""test_executor.py - executord against real halleyd, galaxyd, PostgreSQL and
ZooKeeper. The test plays keplerd's part: it creates tasks and instances
through galaxyd's REST API and moves instances waiting -> ready ->
dispatched(executor) with Halley's TransitionInstance (gRPC, from the .proto).

Checks: the ZooKeeper card; a run ends success with its exit code recorded,
its log served over HTTP with the token (401 without) and landed in the blob
root; a failing command ends failed; a kill through the REST API ends the
whole process tree; a timeout ends timed_out; a memory hog ends failed with
reason memory_limit; a live log can be followed; an executord killed and
restarted with a running instance fails it with reason executor_restarted, and
its processes died with it; a report that cannot reach halleyd waits in the
outbox and lands once halleyd is back.

usage: test_executor.py BUILD_DIR HALLEY_PROTO
Needs ORRERY_PG_DSN and ORRERY_ZK (deploy/test.sh exports them), root and
writable cgroups.
"""
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
PROTO = None
P = None
STARTED = time.time()  # before executord starts: its first beat is later
PB = None
GRPC = None
EX = None
TOKEN = None
COUNTER = [0]
FAILED = [False]  # a test failed: tearDownModule prints executord's log


def pids_of(pattern):
    r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


class Executor:
    """One executord process with its own folders and ports."""

    def __init__(self, platform, zk):
        self.p = platform
        self.id = f"it-ex-{os.getpid()}"
        self.dir = tempfile.mkdtemp(prefix="orr-ex-it-")
        os.chmod(self.dir, 0o711)  # the run_as user walks into runs/
        self.work = os.path.join(self.dir, "work")
        self.blob = os.path.join(self.dir, "blob")
        self.port = orrery_it.free_port()
        self.log_token = secrets.token_hex(16)
        self.zk = zk
        self.proc = None
        self.n = 0
        self.extra = {}  # settings of the next start beyond the defaults below

    def env(self):
        env = dict(os.environ)
        env.update({
            "ORRERY_EXECUTOR_ID": self.id,
            "ORRERY_EXECUTOR_HALLEY": f"127.0.0.1:{self.p.halley_port}",
            "ORRERY_EXECUTOR_HALLEY_TOKEN": self.p.token,
            "ORRERY_EXECUTOR_ZK": self.zk,
            "ORRERY_EXECUTOR_ZK_SESSION": "4s",
            "ORRERY_EXECUTOR_SLOTS": "4",
            "ORRERY_EXECUTOR_LABELS": "zone=it,disk=ssd",
            "ORRERY_EXECUTOR_LISTEN": f"127.0.0.1:{self.port}",
            "ORRERY_EXECUTOR_LOG_TOKEN": self.log_token,
            "ORRERY_EXECUTOR_WORK_DIR": self.work,
            "ORRERY_EXECUTOR_BLOB_ROOT": "file://" + self.blob,
            "ORRERY_EXECUTOR_SLOT_MEMORY": "64m",
            "ORRERY_EXECUTOR_SLOT_PIDS": "64",
            "ORRERY_EXECUTOR_CGROUP_PARENT": "orrery-it",
            "ORRERY_EXECUTOR_SWEEP_INTERVAL": "2s",
            "ORRERY_EXECUTOR_HEARTBEAT_INTERVAL": "1s",
            "ORRERY_EXECUTOR_DEFAULT_TIMEOUT": "2m",
            "ORRERY_EXECUTOR_RPC_TIMEOUT": "2s",
            "ORRERY_LOG_LEVEL": "debug",
        })
        env.update(self.extra)
        return env

    def start(self):
        self.n += 1
        with open(os.path.join(self.dir, f"executord-{self.n}.log"), "ab") as out:
            self.proc = subprocess.Popen([os.path.join(BUILD, "bin", "executord"), "serve"],
                                         env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        orrery_it.stop_at_exit(self.proc)  # also when setUpModule fails after this
        orrery_it.wait_port(self.port, self.proc, "executord")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def daemon_log(self):
        text = ""
        for i in range(1, self.n + 1):
            with open(os.path.join(self.dir, f"executord-{i}.log"), "rb") as f:
                text += f.read().decode("utf-8", "replace")
        return text

    def print_log_tail(self):
        """The end of executord's log over all its lives on stderr, for a
        failed test: the folder is removed next."""
        sys.stderr.write(f"---- {self.id}: executord's log (end)\n{self.daemon_log()[-3000:]}\n")

    def get_log(self, instance, attempt=1, token="default", query=""):
        url = f"http://127.0.0.1:{self.port}/logs/{instance}/{attempt}{query}"
        hdrs = {}
        tok = self.log_token if token == "default" else token
        if tok:
            hdrs["Authorization"] = f"Bearer {tok}"
        req = urllib.request.Request(url, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")


def rpc(method, req, resp_cls):
    fn = GRPC.unary_unary("/orrery.halley.v1.Halley/" + method,
                          request_serializer=req.__class__.SerializeToString,
                          response_deserializer=resp_cls.FromString)
    return fn(req, metadata=(("authorization", "Bearer " + P.token),), timeout=10)


def instance(iid):
    return rpc("GetInstance", PB.GetInstanceRequest(id=iid), PB.Instance)


def state_name(st):
    return PB.InstanceState.Name(st).replace("INSTANCE_STATE_", "").lower()


def wait_state(iid, states, timeout=30.0):
    """Poll until the instance is in one of states. UNAVAILABLE counts as not
    yet: a test that restarts halleyd leaves the channel's old connection
    broken, and the first call on it fails so before the channel reconnects."""
    import grpc
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = instance(iid)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            time.sleep(0.1)
            continue
        if state_name(last.state) in states:
            return last
        time.sleep(0.1)
    seen = f"{state_name(last.state)} reason={last.reason!r}" if last else "halleyd unavailable"
    raise AssertionError(f"instance {iid} not in {states} within {timeout} s: "
                         f"{seen}\n{EX.daemon_log()[-3000:]}")


def make_instance_ready(config, **spec_extra):
    """A task (REST) and one instance of it (REST backfill), moved to ready.
    Returns (task id, instance id)."""
    COUNTER[0] += 1
    spec = {"name": f"ex_it_{COUNTER[0]}", "team": "etl", "type": "shell",
            "schedule": "0 * * * *", "timezone": "UTC", "config": config}
    spec.update(spec_extra)
    r = P.http("POST", "/api/v1/tasks", spec, token=TOKEN)
    assert r.status == 201, r
    tid = r.json()["id"]
    r = P.http("POST", f"/api/v1/tasks/{tid}/backfill",
               {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T01:00:00Z"}, token=TOKEN)
    assert r.status == 200, r
    iid = r.json()["created"][0]
    S = PB.InstanceState
    rpc("TransitionInstance", PB.TransitionRequest(
        instance_id=iid, expected_state=S.Value("INSTANCE_STATE_WAITING"),
        new_state=S.Value("INSTANCE_STATE_READY"), actor="kepler"), PB.TransitionResult)
    return tid, iid


def dispatch(iid):
    """ready -> dispatched on our executor (gRPC, as keplerd would)."""
    S = PB.InstanceState
    rpc("TransitionInstance", PB.TransitionRequest(
        instance_id=iid, expected_state=S.Value("INSTANCE_STATE_READY"),
        new_state=S.Value("INSTANCE_STATE_DISPATCHED"), actor="kepler", executor=EX.id),
        PB.TransitionResult)


def make_instance(config, **spec_extra):
    """A task (REST), one instance of it (REST backfill), moved to dispatched
    on our executor (gRPC, as keplerd would). Returns (task id, instance id)."""
    tid, iid = make_instance_ready(config, **spec_extra)
    dispatch(iid)
    return tid, iid


def exit_code(iid, attempt=1):
    out = subprocess.run(["psql", P.dsn, "-qAtc",
                          f"SELECT coalesce(exit_code::text, 'null') FROM attempts "
                          f"WHERE instance_id = {iid} AND attempt = {attempt}"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return None if out in ("", "null") else int(out)


def history(iid):
    """The instance's transitions, oldest first, as (from, to, at_ms)."""
    r = rpc("ListTransitions", PB.ListTransitionsRequest(instance_id=iid),
            PB.ListTransitionsResponse)
    return [(state_name(t.from_state), state_name(t.to_state), t.at_ms) for t in r.transitions]


def events_of(iid):
    """The instance's transition events, oldest first, as (from, to)."""
    out = subprocess.run(["psql", P.dsn, "-qAt", "-F", " ", "-c",
                          f"SELECT payload->>'from', payload->>'to' FROM events "
                          f"WHERE instance_id = {iid} AND kind = 'instance.transition' "
                          f"ORDER BY id"], check=True, capture_output=True, text=True).stdout
    return [tuple(ln.split()) for ln in out.splitlines() if ln.strip()]


def release_hold(holder, trigger):
    """Drop a test's trigger that holds an UPDATE on an advisory lock (and
    its function), and end the psql session that held the lock."""
    subprocess.run(["psql", P.dsn, "-qAt", "-c",
                    f"DROP TRIGGER IF EXISTS {trigger} ON instances; "
                    f"DROP FUNCTION IF EXISTS {trigger}()"], capture_output=True)
    holder.stdin.close()
    holder.wait(timeout=20)


class HoldLeavingDispatched:
    """Halleyd's UPDATE that moves an instance out of dispatched waits, by
    construction, for an advisory lock the test holds: a trigger takes the
    lock in that UPDATE's transaction. on(iid) arms it for one instance,
    unlock() lets the UPDATE commit, close() drops the trigger."""

    def __init__(self, name, key_base):
        self.lock_key = key_base + os.getpid() % 1_000_000
        self.trigger = f"orr_it_{name}_{os.getpid()}"
        self.holder = subprocess.Popen(["psql", P.dsn, "-qAt", "-v", "ON_ERROR_STOP=1"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.holder.stdin.write(f"SELECT pg_advisory_lock({self.lock_key});\n")
        self.holder.stdin.flush()
        self.locked = self.holder.stdout.readline().strip() == ""  # the lock is ours

    def on(self, iid):
        subprocess.run(["psql", P.dsn, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", f"""
            CREATE FUNCTION {self.trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_advisory_xact_lock({self.lock_key}); RETURN NEW; END $$;
            CREATE TRIGGER {self.trigger} BEFORE UPDATE ON instances FOR EACH ROW
            WHEN (NEW.id = {iid} AND OLD.state = 'dispatched')
            EXECUTE FUNCTION {self.trigger}();"""], check=True, capture_output=True)

    def unlock(self):
        """True once the lock is let go."""
        self.holder.stdin.write(f"SELECT pg_advisory_unlock({self.lock_key});\n")
        self.holder.stdin.flush()
        return self.holder.stdout.readline().strip() == "t"

    def close(self):
        release_hold(self.holder, self.trigger)


def gate_dir():
    """A folder the task user can read and write, for gates and markers."""
    d = tempfile.mkdtemp(prefix="gate-", dir=EX.dir)
    os.chmod(d, 0o777)
    return d


def wait_gone(pattern, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not pids_of(pattern):
            return True
        time.sleep(0.1)
    return False


def cgroup_dir(iid, attempt=1):
    return f"/sys/fs/cgroup/pids/orrery-it/{EX.id}/{iid}-{attempt}"


class NotesFailure(unittest.TestCase):
    """A test case whose failure sets FAILED[0]."""

    def run(self, result=None):
        result = super().run(result)
        if not result.wasSuccessful():
            FAILED[0] = True
        return result


def setUpModule():
    global P, PB, GRPC, EX, TOKEN
    import grpc
    zk = orrery_it.require_env("ORRERY_ZK")
    PB = orrery_it.import_proto(PROTO, "halley_pb2")
    P = orrery_it.Platform(BUILD, galaxies=0).__enter__()
    try:
        EX = Executor(P, zk)
        # galaxyd sees the executor through ZooKeeper and reads its logs.
        P.start_galaxy({"ORRERY_GALAXY_ZK": zk,
                        "ORRERY_GALAXY_EXECUTOR_LOG_TOKEN": EX.log_token,
                        "ORRERY_GALAXY_BLOB_ROOT": "file://" + EX.blob})
        P.add_user("root", "root-password-1", "admin")
        P.add_user("ann", "ann-password-1", "developer", teams=["etl"])  # makes team etl
        TOKEN = P.login("root", "root-password-1")
        GRPC = grpc.insecure_channel(f"127.0.0.1:{P.halley_port}")
        EX.start()
    except BaseException:
        FAILED[0] = True
        tearDownModule()
        raise


def tearDownModule():
    if EX:
        EX.stop()
        if FAILED[0] and EX.n:
            EX.print_log_tail()
        for ctl in ("memory", "pids", "cpu", "freezer", "unified"):
            try:  # the executor's (now empty) parent group
                os.rmdir(f"/sys/fs/cgroup/{ctl}/orrery-it/{EX.id}")
            except OSError:
                pass
        shutil.rmtree(EX.dir, ignore_errors=True)
    if GRPC:
        GRPC.close()
    if P:
        P.__exit__(None, None, None)


class Executord(NotesFailure):
    def test_a_registers_card_in_zookeeper(self):
        deadline = time.time() + 15
        out = None
        while time.time() < deadline:
            out = subprocess.run([os.path.join(BUILD, "bin", "ex_zk_get"), EX.zk,
                                  f"/orrery/executors/{EX.id}"], capture_output=True, text=True)
            if out.returncode == 0:
                break
            time.sleep(0.2)
        self.assertEqual(out.returncode, 0, out.stderr)
        owner, data = out.stdout.split("\n", 1)
        self.assertNotEqual(owner, "owner=0", "the node must be ephemeral")
        card = json.loads(data)
        self.assertEqual(card["id"], EX.id)
        self.assertEqual(card["http_port"], EX.port)
        self.assertEqual(card["slots"], 4)
        self.assertEqual(card["labels"], {"zone": "it", "disk": "ssd"})
        self.assertIn(card["cgroup"], ("v1", "v2"))

    def test_success_log_served_and_copied(self):
        tid, iid = make_instance({"command": "echo hello-$ORRERY_INSTANCE_ID; id -un; pwd"})
        inst = wait_state(iid, ("success", "failed"))
        self.assertEqual(state_name(inst.state), "success", inst.reason)
        self.assertEqual(exit_code(iid), 0)
        status, body = EX.get_log(iid)
        self.assertEqual(status, 200)
        lines = body.splitlines()
        self.assertEqual(lines[0], f"hello-{iid}")
        self.assertEqual(lines[1], "orrery-task")  # ran as the unprivileged task user
        self.assertTrue(lines[2].endswith(f"/runs/{iid}-1"), lines[2])
        # offset and follow on a finished attempt
        self.assertEqual(EX.get_log(iid, query="?offset=6")[1], body[6:])
        self.assertEqual(EX.get_log(iid, query="?follow=1")[1], body)
        # the token is required; parameters are integers only
        self.assertEqual(EX.get_log(iid, token=None)[0], 401)
        self.assertEqual(EX.get_log(iid, token="wrong")[0], 401)
        self.assertEqual(EX.get_log("abc")[0], 400)
        self.assertEqual(EX.get_log(iid, query="?offset=-1")[0], 400)
        self.assertEqual(EX.get_log(iid + 100000)[0], 404)
        blob = os.path.join(EX.blob, "logs", str(tid), f"{iid}-1.log")
        with open(blob) as f:
            self.assertEqual(f.read(), body)
        # one file system: the log and its index land by a hard link (the
        # work folder's file under a second name, no copy), with the store's mode
        for ext in ("log", "idx"):
            b = os.stat(os.path.join(EX.blob, "logs", str(tid), f"{iid}-1.{ext}"))
            w = os.stat(os.path.join(EX.work, "logs", f"{iid}-1.{ext}"))
            self.assertEqual((b.st_dev, b.st_ino), (w.st_dev, w.st_ino), ext)
            self.assertEqual(b.st_mode & 0o777, 0o644, ext)
        self.assertFalse(os.path.exists(cgroup_dir(iid)))

    def test_galaxy_lists_the_executor(self):
        deadline = time.time() + 15
        items = []
        while time.time() < deadline:
            r = P.http("GET", "/api/v1/executors", token=TOKEN)
            self.assertEqual(r.status, 200, r)
            items = [c for c in r.json()["items"] if c["id"] == EX.id]
            if items:
                break
            time.sleep(0.2)
        self.assertEqual(len(items), 1)
        self.assertEqual(items[0]["slots"], 4)
        self.assertTrue(items[0]["alive"])
        self.assertEqual(P.http("GET", "/api/v1/executors").status, 401)

    def test_galaxy_shows_the_last_heartbeat(self):
        # executord reports itself to halleyd at every heartbeat: the row
        # carries what it announces, and last_seen moves on beat after beat
        def seen():
            r = P.http("GET", "/api/v1/executors", token=TOKEN)
            self.assertEqual(r.status, 200, r)
            x = next(c for c in r.json()["items"] if c["id"] == EX.id)
            t = x.get("last_seen")
            return x, (datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() if t else 0)

        deadline = time.time() + 30
        x, first = seen()
        while time.time() < deadline and first < STARTED - 5:
            time.sleep(0.2)
            x, first = seen()
        self.assertGreaterEqual(first, STARTED - 5, x)
        self.assertEqual((x["slots"], x["labels"]), (4, {"zone": "it", "disk": "ssd"}), x)
        later = first
        while time.time() < deadline and later <= first:
            time.sleep(0.2)
            x, later = seen()
        self.assertGreater(later, first, "the next beat moves last_seen on")

    def test_galaxy_serves_live_and_archived_logs(self):
        _, iid = make_instance({"command": "for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.5; done"})
        wait_state(iid, ("running",))
        # While it runs the log comes from the executor, in chunks by offset.
        got, offset, deadline, sources, stamped = "", 0, time.time() + 30, set(), {}
        while "line-2" not in got and time.time() < deadline:
            r = P.http("GET", f"/api/v1/instances/{iid}/log?offset={offset}&timestamps=1",
                       token=TOKEN)
            self.assertEqual(r.status, 200, r)
            body = r.json()
            if body["data"]:
                sources.add(body["source"])
            got += body["data"]
            stamped.update({o: ms for o, ms in body["lines"]})
            self.assertEqual(body["next_offset"], offset + len(body["data"].encode()))
            offset = body["next_offset"]
            time.sleep(0.05)
        self.assertIn("line-1", got)
        self.assertEqual(sources, {"executor"})  # read live, before the archive exists
        # A live chunk never holds a line the executor has not stamped yet.
        starts = [0] + [i + 1 for i, ch in enumerate(got) if ch == "\n" and i + 1 < len(got)]
        self.assertTrue(set(starts) <= set(stamped), (starts, stamped))
        # Server-Sent Events follow it to the end.
        req = urllib.request.Request(P.base + f"/api/v1/instances/{iid}/log?follow=1",
                                     headers={"Authorization": "Bearer " + TOKEN,
                                              "Accept": "text/event-stream"})
        with urllib.request.urlopen(req, timeout=60) as r:
            self.assertEqual(r.headers["Content-Type"], "text/event-stream")
            stream = r.read().decode()
        events = [e for e in stream.split("\n\n") if e.startswith("event:")]
        data = "".join(json.loads(e.split("data: ", 1)[1])["data"]
                       for e in events if e.startswith("event: log"))
        self.assertEqual(data, "".join(f"line-{i}\n" for i in range(1, 7)))
        self.assertTrue(events[-1].startswith("event: end"), events[-1])
        wait_state(iid, ("success",))
        # Finished: served from the blob archive, complete.
        deadline = time.time() + 10
        while time.time() < deadline:
            body = P.http("GET", f"/api/v1/instances/{iid}/log", token=TOKEN).json()
            if body["source"] == "archive":
                break
            time.sleep(0.2)
        self.assertEqual(body["source"], "archive")
        self.assertTrue(body["complete"])
        self.assertEqual(body["data"], data)
        r = P.http("GET", f"/api/v1/instances/{iid}/log?attempt=9", token=TOKEN)
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["error"]["field"], "attempt")

    def test_lines_stamped_as_read_raw_log_kept(self):
        gate = os.path.join(EX.dir, "gate-" + secrets.token_hex(4))
        # Bytes that are not UTF-8, an empty line, a line over 64 KiB, a pause
        # at a gate (the test opens it), a last line without newline.
        cmd = ("printf 'one\\n\\n'; head -c 70000 /dev/zero | tr '\\0' x; echo; "
               "printf '\\377\\376 caf\\303\\251\\n'; "
               f"while [ ! -e {gate} ]; do sleep 0.05; done; printf 'tail-no-newline'")
        want = b"one\n\n" + b"x" * 70000 + b"\n" + b"\xff\xfe caf\xc3\xa9\n" + b"tail-no-newline"
        starts = [0, 4, 5, 70006, 70006 + 9]
        before = int(time.time() * 1000)
        tid, iid = make_instance({"command": cmd})
        base = f"/api/v1/instances/{iid}/log"

        # Live, at the gate: the stamps come from the executor's index.
        deadline, body = time.time() + 30, {}
        while time.time() < deadline:
            body = P.http("GET", base + "?timestamps=1", token=TOKEN).json()
            if len(body.get("lines", [])) >= 4:
                break
            time.sleep(0.1)
        self.assertEqual(body["source"], "executor")
        self.assertTrue(body["stamped"])
        self.assertEqual(body["first_line"], 1)
        self.assertEqual([ln[0] for ln in body["lines"]], starts[:4])
        gate_ms = int(time.time() * 1000)
        with open(gate, "w"):
            pass
        inst = wait_state(iid, ("success", "failed"))
        self.assertEqual(state_name(inst.state), "success", inst.reason)
        after = int(time.time() * 1000)

        # The log is byte for byte what the task wrote.
        req = urllib.request.Request(f"http://127.0.0.1:{EX.port}/logs/{iid}/1",
                                     headers={"Authorization": "Bearer " + EX.log_token})
        with urllib.request.urlopen(req, timeout=30) as r:
            self.assertEqual(r.read(), want)
        with open(os.path.join(EX.blob, "logs", str(tid), f"{iid}-1.log"), "rb") as f:
            self.assertEqual(f.read(), want)
        # One stamp per line, in order, never going back, taken when read.
        with open(os.path.join(EX.blob, "logs", str(tid), f"{iid}-1.idx"), "rb") as f:
            raw = f.read()
        self.assertEqual(len(raw), 16 * len(starts))
        recs = [(int.from_bytes(raw[i:i + 8], "little"), int.from_bytes(raw[i + 8:i + 16], "little"))
                for i in range(0, len(raw), 16)]
        self.assertEqual([o for o, _ in recs], starts)
        stamps = [t for _, t in recs]
        self.assertEqual(stamps, sorted(stamps))
        self.assertGreaterEqual(stamps[0], before)
        self.assertGreaterEqual(stamps[-1], gate_ms)  # read after the gate opened
        self.assertLessEqual(stamps[-1], after)

        # Archived: the API's stamped form, from any offset.
        deadline = time.time() + 10
        while time.time() < deadline:
            body = P.http("GET", base + "?timestamps=1", token=TOKEN).json()
            if body["source"] == "archive":
                break
            time.sleep(0.1)
        self.assertEqual(body["source"], "archive")
        self.assertEqual(body["lines"], [list(r) for r in recs])
        body = P.http("GET", base + "?timestamps=1&offset=10", token=TOKEN).json()
        self.assertEqual(body["first_line"], 3)  # byte 10 lies in the long line
        self.assertEqual(body["lines"][0], list(recs[2]))
        self.assertNotIn("lines", P.http("GET", base, token=TOKEN).json())

        # Download: the raw bytes as an attachment; or each line behind its time.
        r = P.http("GET", base + "/download", token=TOKEN)
        self.assertEqual(r.status, 200, r)
        self.assertIn("attachment", r.headers["Content-Disposition"])
        self.assertIn(f"instance-{iid}-attempt-1", r.headers["Content-Disposition"])
        self.assertEqual(r.body, want)
        r = P.http("GET", base + "/download?timestamps=1&attempt=1", token=TOKEN)
        self.assertEqual(r.status, 200, r)
        out = r.body.split(b"\n")
        self.assertEqual(len(out), len(starts))
        import datetime
        for line, (_, ms), orig in zip(out, recs, want.split(b"\n")):
            iso = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
            prefix = iso.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z "
            self.assertEqual(line, prefix.encode() + orig)

        # Bad input: unknown attempt 404, bad numbers 400 naming the field.
        for path, status, field in ((base + "?attempt=2", 404, "attempt"),
                                    (base + "/download?attempt=2", 404, "attempt"),
                                    (base + "?offset=-1", 400, "offset"),
                                    (base + "?offset=abc", 400, "offset"),
                                    (base + "?timestamps=maybe", 400, "timestamps"),
                                    (base + "/download?timestamps=2", 400, "timestamps"),
                                    (base + "/download?attempt=x", 400, "attempt")):
            r = P.http("GET", path, token=TOKEN)
            self.assertEqual(r.status, status, path)
            self.assertEqual(r.json()["error"]["field"], field, path)
        self.assertEqual(P.http("GET", base + "/download").status, 401)

    def test_failing_command_fails_with_exit_code(self):
        _, iid = make_instance({"command": "/bin/sh", "args": ["-c", "echo bad >&2; exit 7"]})
        inst = wait_state(iid, ("success", "failed"))
        self.assertEqual(state_name(inst.state), "failed")
        self.assertEqual(inst.reason, "exit code 7")
        self.assertEqual(exit_code(iid), 7)
        self.assertEqual(EX.get_log(iid)[1], "bad\n")

    def test_missing_package_fails_as_bad_spec(self):
        _, iid = make_instance({"command": "true", "package": "not-installed"})
        inst = wait_state(iid, ("failed",))
        self.assertTrue(inst.reason.startswith("bad_spec: config.package"), inst.reason)

    def test_kill_through_rest_ends_process_tree(self):
        _, iid = make_instance({"command": "sleep 301 & sleep 301 & echo started; wait"})
        wait_state(iid, ("running",))
        deadline = time.time() + 10
        while "started" not in EX.get_log(iid)[1] and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(len(pids_of("^sleep 301$")), 2)
        r = P.http("POST", f"/api/v1/instances/{iid}/actions/kill", {}, token=TOKEN)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(wait_gone("^sleep 301$"), "the process tree survived the kill")
        inst = wait_state(iid, ("killed",))
        self.assertEqual(state_name(inst.state), "killed")
        deadline = time.time() + 10
        while os.path.exists(cgroup_dir(iid)) and time.time() < deadline:
            time.sleep(0.1)
        self.assertFalse(os.path.exists(cgroup_dir(iid)))

    def test_timeout_ends_timed_out(self):
        t0 = time.time()
        _, iid = make_instance({"command": "sleep 302 & sleep 302"}, timeout="2s")
        inst = wait_state(iid, ("timed_out", "success", "failed"))
        self.assertEqual(state_name(inst.state), "timed_out")
        self.assertLess(time.time() - t0, 20)
        self.assertTrue(wait_gone("^sleep 302$"))
        self.assertEqual(exit_code(iid), 128 + signal.SIGKILL)

    def test_timeout_while_the_running_report_hangs(self):
        # The run outlasts the hold (it never ends by itself), and its
        # running report hangs: a trigger holds that UPDATE on an advisory
        # lock the test holds. The task's timeout must end the process tree
        # all the same, while the instance is still dispatched; once the
        # report lands, the end follows from running as timed_out.
        hold = HoldLeavingDispatched("hang", 7_100_000)
        try:
            self.assertTrue(hold.locked)
            _, iid = make_instance_ready({"command": "sleep 306"}, timeout="3s")
            hold.on(iid)
            dispatch(iid)
            deadline = time.time() + 30
            while not pids_of("(^|/)sleep 306$") and time.time() < deadline:
                time.sleep(0.05)
            self.assertTrue(pids_of("(^|/)sleep 306$"), "the run never started")
            # Nothing but the timeout ends it: the report cannot land.
            self.assertTrue(wait_gone("(^|/)sleep 306$", timeout=60),
                            "the timeout did not end the run while its report hung")
            self.assertEqual(state_name(instance(iid).state), "dispatched")
            # The try in flight held the kill back until its deadline: its
            # retry was logged before the timeout could act.
            self.assertTrue(any("report failed, retrying" in ln and f"instance={iid} " in ln
                                for ln in EX.daemon_log().splitlines()),
                            "the running report was not held")
            self.assertTrue(hold.unlock())
            inst = wait_state(iid, ("timed_out", "success", "failed"), timeout=60)
            self.assertEqual((state_name(inst.state), inst.reason, inst.attempt),
                             ("timed_out", "timeout after 3000 ms", 1))
            self.assertEqual(events_of(iid)[-2:],
                             [("dispatched", "running"), ("running", "timed_out")])
            self.assertEqual(exit_code(iid), 128 + signal.SIGKILL)
        finally:
            hold.close()

    def test_memory_hog_fails_with_memory_limit(self):
        _, iid = make_instance({"command": "/usr/bin/python3", "args": [
            "-c", "b = [bytearray(1 << 20) for _ in range(400)]; print('survived')"]})
        inst = wait_state(iid, ("success", "failed"), timeout=60)
        self.assertEqual(state_name(inst.state), "failed")
        self.assertEqual(inst.reason, "memory_limit")
        self.assertNotIn("survived", EX.get_log(iid)[1])

    def test_follow_streams_a_live_log(self):
        _, iid = make_instance(
            {"command": "for i in 1 2 3 4; do echo line$i; sleep 0.5; done"})
        wait_state(iid, ("running",))
        t0 = time.time()
        status, body = EX.get_log(iid, query="?follow=1")
        took = time.time() - t0
        self.assertEqual(status, 200)
        self.assertEqual(body, "line1\nline2\nline3\nline4\n")
        self.assertGreater(took, 0.8)  # it waited for the lines as they came
        wait_state(iid, ("success",))

    def test_long_run_reported_running_while_it_runs(self):
        # A run that outlasts the hold is reported running while it runs:
        # the task cannot end before the test opens its gate.
        d = gate_dir()
        gate = os.path.join(d, "open")
        _, iid = make_instance({"command": f"while [ ! -e {gate} ]; do sleep 0.05; done"})
        wait_state(iid, ("running",))
        self.assertEqual(events_of(iid)[-1], ("dispatched", "running"))
        open(gate, "w").close()
        inst = wait_state(iid, ("success", "failed"))
        self.assertEqual(state_name(inst.state), "success", inst.reason)
        self.assertEqual(events_of(iid)[-2:], [("dispatched", "running"), ("running", "success")])

    def test_w_report_landed_but_answer_lost(self):
        # halleyd commits the move out of dispatched (a short run's report in
        # one step) but executord never hears the answer (its call's deadline
        # passes first), so its retry finds the move made. That is its own
        # report delivered. Built by construction: a trigger makes that UPDATE
        # wait for an advisory lock the test holds until executord has logged
        # its retry; then the first UPDATE commits.
        hold = HoldLeavingDispatched("hold", 7_000_000)
        try:
            self.assertTrue(hold.locked)
            tid, iid = make_instance_ready({"command": "echo ran"})
            hold.on(iid)
            dispatch(iid)
            marker = "report failed, retrying"
            deadline = time.time() + 60
            while time.time() < deadline:
                log = EX.daemon_log()
                if any(marker in ln and f"instance={iid} " in ln for ln in log.splitlines()):
                    break
                time.sleep(0.1)
            else:
                self.fail("executord never retried the held report\n" + EX.daemon_log()[-3000:])
            self.assertEqual(state_name(instance(iid).state), "dispatched")
            self.assertTrue(hold.unlock())
            inst = wait_state(iid, ("success", "failed"), timeout=60)
            self.assertEqual(state_name(inst.state), "success", inst.reason)
            self.assertEqual(inst.attempt, 1)
            # the retry's answer is logged after the state it finds is visible
            deadline = time.time() + 30
            while time.time() < deadline:
                log = EX.daemon_log()
                if any("instance state already reported" in ln and f"instance={iid} " in ln
                       for ln in log.splitlines()):
                    break
                time.sleep(0.1)
            else:
                self.fail("the retry did not find its report delivered\n" + log[-3000:])
            status, body = EX.get_log(iid)
            self.assertEqual(status, 200)
            self.assertIn("ran", body)
        finally:
            hold.close()

    def test_x_outbox_file_reused_silent_log_archived(self):
        spare = os.path.join(EX.work, "outbox-spare")

        def run_true():
            tid, iid = make_instance({"command": "true"})
            inst = wait_state(iid, ("success", "failed"))
            self.assertEqual(state_name(inst.state), "success", inst.reason)
            # the report's file is kept as a spare before this line is logged
            deadline = time.time() + 30
            while time.time() < deadline:
                if any("instance state reported" in ln and f"instance={iid} " in ln
                       and "to=success" in ln for ln in EX.daemon_log().splitlines()):
                    break
                time.sleep(0.1)
            else:
                self.fail("no success report logged\n" + EX.daemon_log()[-3000:])
            return tid, iid

        def spares():
            """The spares' inodes once the run's outbox files (its start
            record and its end report) are back among them, emptied: they go
            back after the success is logged."""
            outbox = os.path.join(EX.work, "outbox")
            deadline = time.time() + 30
            while time.time() < deadline:
                try:
                    st = [os.stat(os.path.join(spare, n)) for n in os.listdir(spare)]
                except FileNotFoundError:  # a spare renamed back meanwhile
                    continue
                if not os.listdir(outbox) and st and all(s.st_size == 0 for s in st):
                    return sorted(s.st_ino for s in st)
                time.sleep(0.05)
            self.fail(f"outbox {os.listdir(outbox)}, spares {os.listdir(spare)}")

        run_true()
        first = spares()
        self.assertTrue(first)  # the delivered report's file was kept
        tid, iid = run_true()
        # the next run took the spares and gave them back: no file made or removed
        self.assertEqual(spares(), first)
        # a run that wrote nothing has no index file; its empty log is
        # archived under both names (one inode)
        self.assertFalse(os.path.exists(os.path.join(EX.work, "logs", f"{iid}-1.idx")))
        log = os.stat(os.path.join(EX.blob, "logs", str(tid), f"{iid}-1.log"))
        idx = os.stat(os.path.join(EX.blob, "logs", str(tid), f"{iid}-1.idx"))
        self.assertEqual(log.st_size, 0)
        self.assertEqual((log.st_dev, log.st_ino), (idx.st_dev, idx.st_ino))
        body = P.http("GET", f"/api/v1/instances/{iid}/log?timestamps=1", token=TOKEN).json()
        self.assertEqual(body["data"], "")
        self.assertEqual(body["lines"], [])

    def test_x_run_folder_kept_only_as_made(self):
        """Under a cgroup backend, a run's folder that its run left as a new
        one is kept for a later run (renamed, not made anew); one that holds
        a file, or whose mode or extended attributes the task changed, is
        removed, so no run sees another's."""
        spare = os.path.join(EX.work, "run-spare")
        start = [ln for ln in EX.daemon_log().splitlines() if "kept_for_reuse=" in ln]
        self.assertTrue(start, "executord says whether it keeps run folders")
        if "when left as new" not in start[-1]:
            self.skipTest("this executord keeps no run folder: " + start[-1])

        def run(command):
            """Run command; its log, once its folder has left runs/ (the
            folder is kept or removed after the state is reported)."""
            tid, iid = make_instance({"command": command})
            inst = wait_state(iid, ("success", "failed"))
            self.assertEqual(state_name(inst.state), "success", inst.reason)
            folder = os.path.join(EX.work, "runs", f"{iid}-1")
            deadline = time.time() + 30
            while os.path.exists(folder) and time.time() < deadline:
                time.sleep(0.05)
            self.assertFalse(os.path.exists(folder), "the run's folder left runs/")
            status, body = EX.get_log(iid)
            self.assertEqual(status, 200)
            return body.split()

        def kept():
            inodes = set()
            for n in os.listdir(spare):
                try:
                    inodes.add(os.stat(os.path.join(spare, n)).st_ino)
                except FileNotFoundError:  # taken by a run meanwhile
                    pass
            return inodes

        # empty at its end (a file made and removed): kept, and a later run
        # is given a kept folder, empty and private
        a = run("touch scratch; rm scratch; stat -c %i .")
        before_b = kept()
        self.assertIn(int(a[0]), before_b)
        b = run("stat -c %i .; ls -A | wc -l; stat -c %a .")
        self.assertIn(int(b[0]), before_b)
        self.assertEqual(b[1:], ["0", "700"])
        # a file left behind: removed with it
        c = run("touch left; stat -c %i .")
        self.assertNotIn(int(c[0]), kept())
        # its mode changed: removed
        d = run("chmod 755 .; stat -c %i .")
        self.assertNotIn(int(d[0]), kept())
        # an extended attribute set: removed
        e = run("python3 -c \"import os; os.setxattr('.', 'user.x', b'1')\" && stat -c %i .")
        self.assertNotIn(int(e[0]), kept())
        # and the run after sees an empty, private folder without attributes
        # (inode numbers of removed folders may come back, so they cannot
        # tell it apart)
        f = run("ls -A | wc -l; stat -c %a .; python3 -c \"import os; print(len([n for n in os.listxattr('.') if not n.startswith('security.')]))\"")
        self.assertEqual(f, ["0", "700", "0"])

    def test_y_lost_report_is_retried_until_halley_returns(self):
        _, iid = make_instance({"command": "sleep 1; echo finished"})
        wait_state(iid, ("running",))
        halley = P.procs[0]
        halley.send_signal(signal.SIGTERM)
        halley.wait(timeout=20)
        # the attempt ends while halleyd is down: its report waits in the
        # outbox once a try to send it has failed (read, not slept for)
        outbox = os.path.join(EX.work, "outbox")
        tried = re.compile(rf"report failed, retrying.*instance={iid} to=success")
        deadline = time.time() + 60
        while not tried.search(EX.daemon_log()) and time.time() < deadline:
            time.sleep(0.1)
        self.assertRegex(EX.daemon_log(), tried)
        self.assertIn(f"{iid}-1-5.json", os.listdir(outbox))
        P.procs[0] = P._spawn([P.bin("halleyd"), "serve"], P.halley_env(), "halleyd-2.log")
        orrery_it.wait_port(P.halley_port, P.procs[0], "halleyd")
        inst = wait_state(iid, ("success", "failed"), timeout=30)
        self.assertEqual(state_name(inst.state), "success")
        self.assertIn("report failed, retrying", EX.daemon_log())
        # the file goes once executord has read halleyd's answer, which may
        # come after the state above is visible
        deadline = time.time() + 30
        while os.listdir(outbox) and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(os.listdir(outbox), [])

    def test_z_restart_fails_running_instance(self):
        _, iid = make_instance({"command": "sleep", "args": ["303"]})
        wait_state(iid, ("running",))
        deadline = time.time() + 10
        while not pids_of("(^|/)sleep 303$") and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(len(pids_of("(^|/)sleep 303$")), 1)
        EX.stop(signal.SIGKILL)  # the guardian ends the attempt's processes
        self.assertTrue(wait_gone("(^|/)sleep 303$"), "the process outlived its executord")
        # a report the crash cut short while it was written (the outbox file
        # is written once, without a temporary): the replay drops it as a
        # report never made, and the restart fails the attempt as usual
        torn = os.path.join(EX.work, "outbox", f"{iid}-1-6.json")
        with open(torn, "w") as f:
            f.write('{"instance_id":%d,"attempt":1,"from":4,"to":6,"rea' % iid)
        EX.start()
        inst = wait_state(iid, ("failed",))
        self.assertEqual(inst.reason, "executor_restarted")
        self.assertFalse(os.path.exists(torn))
        self.assertIn("dropping an unreadable outbox file", EX.daemon_log())
        # the restarted executord still runs new work
        _, iid2 = make_instance({"command": "true"})
        self.assertEqual(state_name(wait_state(iid2, ("success", "failed")).state), "success")

    def test_z_the_hold_one_step_and_a_restart_that_does_not_run_again(self):
        # executord with a hold of an hour: every run that ends is reported
        # in one step, and a run still going is only staged (dispatched in
        # Halley) however slow the machine.
        EX.stop()
        EX.extra = {"ORRERY_EXECUTOR_RUNNING_HOLD": "1h"}
        try:
            EX.start()
            # A short run: one event dispatched -> success, none to running,
            # and two history rows, the first at the run's start, after its
            # dispatch.
            _, iid = make_instance({"command": "true"})
            inst = wait_state(iid, ("success", "failed"))
            self.assertEqual(state_name(inst.state), "success", inst.reason)
            self.assertEqual(events_of(iid)[-1], ("dispatched", "success"))
            self.assertNotIn(("dispatched", "running"), events_of(iid))
            h = history(iid)
            self.assertEqual([(f, t) for f, t, _ in h[-3:]],
                             [("ready", "dispatched"), ("dispatched", "running"),
                              ("running", "success")], h)
            dispatched_at, started_at, ended_at = (at for _, _, at in h[-3:])
            self.assertTrue(dispatched_at <= started_at <= ended_at, h)
            self.assertEqual(inst.started_at_ms, started_at)
            self.assertEqual(exit_code(iid), 0)
            # A halleyd that refuses the step in one (here a trigger refuses
            # any move out of dispatched but to running, as a check would):
            # the run is reported in two steps, the start record first, and
            # its command ran once.
            d = gate_dir()
            marker_r = os.path.join(d, "r")
            _, iid = make_instance_ready({"command": f"echo ran >> {marker_r}"})
            refuse = f"orr_it_refuse_{os.getpid()}"
            subprocess.run(["psql", P.dsn, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", f"""
                CREATE FUNCTION {refuse}() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'no step in one' USING ERRCODE = 'check_violation';
                END $$;
                CREATE TRIGGER {refuse} BEFORE UPDATE ON instances FOR EACH ROW
                WHEN (NEW.id = {iid} AND OLD.state = 'dispatched' AND NEW.state <> 'running')
                EXECUTE FUNCTION {refuse}();"""], check=True, capture_output=True)
            try:
                dispatch(iid)
                inst = wait_state(iid, ("success", "failed"))
            finally:
                subprocess.run(["psql", P.dsn, "-qAt", "-c",
                                f"DROP TRIGGER IF EXISTS {refuse} ON instances; "
                                f"DROP FUNCTION IF EXISTS {refuse}()"], capture_output=True)
            self.assertEqual((state_name(inst.state), inst.attempt), ("success", 1), inst.reason)
            self.assertEqual(events_of(iid)[-2:],
                             [("dispatched", "running"), ("running", "success")])
            self.assertRegex(EX.daemon_log(),
                             rf"the report in one step was refused.* instance={iid}\b")
            self.assertEqual(exit_code(iid), 0)
            with open(marker_r) as f:
                self.assertEqual(f.read(), "ran\n")  # it ran once
            # executord dies while a run it started is only staged: the
            # restart must not run the same attempt again. The start record
            # is re-sent and the attempt fails "executor_restarted", as a run
            # reported running would.
            marker = os.path.join(d, "runs")
            _, iid = make_instance({"command": f"echo run >> {marker}; sleep 304"})
            deadline = time.time() + 30
            while not pids_of("(^|/)sleep 304$") and time.time() < deadline:
                time.sleep(0.1)
            self.assertEqual(len(pids_of("(^|/)sleep 304$")), 1)
            self.assertEqual(state_name(instance(iid).state), "dispatched")
            outbox = os.path.join(EX.work, "outbox")
            self.assertIn(f"{iid}-1-4.json", os.listdir(outbox))
            EX.stop(signal.SIGKILL)  # the guardian ends the attempt's processes
            self.assertTrue(wait_gone("(^|/)sleep 304$"), "the process outlived its executord")
        finally:
            EX.extra = {}
        # A run whose one-step report was written but not sent when its
        # executord died, its start record still beside it (the crash came
        # between the two): the replay sends the report and drops the start,
        # which sent first would make the report fail. Its command never
        # runs: the instance is already over when the sweep looks.
        marker_b = os.path.join(d, "b")
        _, iid_b = make_instance({"command": f"echo ran > {marker_b}"})
        started = int(time.time() * 1000) - 1000

        def report(iid, **body):
            return json.dumps({"instance_id": iid, "attempt": 1, "reason": "", **body})

        start_b, end_b = report(iid_b, **{"from": 3, "to": 4}), report(
            iid_b, **{"from": 3, "to": 5, "exit_code": 0, "started_at_ms": started})
        for name, text in ((f"{iid_b}-1-4.json", start_b), (f"{iid_b}-1-5.json", end_b)):
            with open(os.path.join(outbox, name), "w") as f:
                f.write(text)
        # The usual form: the end appended to the start record's own file
        # (C), and the same with the append cut short by the crash (D: the
        # start stands, so the attempt fails "executor_restarted").
        marker_c, marker_d = os.path.join(d, "c"), os.path.join(d, "d")
        _, iid_c = make_instance({"command": f"echo ran > {marker_c}"})
        _, iid_d = make_instance({"command": f"echo ran > {marker_d}"})
        end_d = report(iid_d, **{"from": 3, "to": 5, "exit_code": 0, "started_at_ms": started})
        for iid, tail in ((iid_c, report(iid_c, **{"from": 3, "to": 5, "exit_code": 0,
                                                   "started_at_ms": started}) + "\n"),
                          (iid_d, end_d[:len(end_d) // 2])):
            with open(os.path.join(outbox, f"{iid}-1-4.json"), "w") as f:
                f.write(report(iid, **{"from": 3, "to": 4}) + "\n" + tail)
        EX.start()
        inst = wait_state(iid, ("failed", "success"))  # run again: running, then a timeout
        self.assertEqual((state_name(inst.state), inst.reason), ("failed", "executor_restarted"))
        self.assertEqual(inst.attempt, 1)
        with open(marker) as f:
            self.assertEqual(f.read(), "run\n")  # it ran once
        self.assertEqual(events_of(iid)[-2:], [("dispatched", "running"), ("running", "failed")])
        self.assertFalse(pids_of("(^|/)sleep 304$"))
        inst_b = wait_state(iid_b, ("failed", "success"))
        self.assertEqual((state_name(inst_b.state), inst_b.attempt), ("success", 1))
        self.assertEqual(events_of(iid_b)[-1], ("dispatched", "success"))
        self.assertNotIn(("dispatched", "running"), events_of(iid_b))
        self.assertIn("dropping a start record", EX.daemon_log())
        inst_c = wait_state(iid_c, ("failed", "success"))
        self.assertEqual((state_name(inst_c.state), inst_c.attempt), ("success", 1))
        self.assertEqual(events_of(iid_c)[-1], ("dispatched", "success"))
        inst_d = wait_state(iid_d, ("failed", "success"))
        self.assertEqual((state_name(inst_d.state), inst_d.reason, inst_d.attempt),
                         ("failed", "executor_restarted", 1))
        for m in (marker_b, marker_c, marker_d):
            self.assertFalse(os.path.exists(m), f"{m}: a run reported before the crash ran again")
        self.assertEqual(os.listdir(outbox), [])


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv[1])
    PROTO = os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
