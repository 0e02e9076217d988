#!/usr/bin/python3
"""test_executor_fencing.py - an attempt's processes are dead before its
instance can be retried elsewhere: executord against real halleyd, galaxyd,
PostgreSQL, ZooKeeper and (for the retry) keplerd.

Checks:
  - kill -9 of executord while a task runs: every process of the attempt
    (its main process, a background child, a child that left the process
    group with setsid) is dead soon after, without a restart; a restart
    fails the attempt "executor_restarted" and replaces the dead life's
    node, which a clean stop then removes; a failure carries executord's
    log, its ZooKeeper node and the /proc status of every pid involved;
  - executord cut off from ZooKeeper (a TCP proxy of this test between them
    stops forwarding): the task tree is killed while the session still
    exists on the server (its node is read directly from ZooKeeper right
    after), the attempt ends failed "executor_fenced", and once the proxy
    forwards again the executor registers again and takes new work;
  - with keplerd: attempt 1 on executor A, kill -9 of A (or A cut off from
    ZooKeeper), keplerd retries on executor B after A's session expired;
    attempt 2 itself checks whether attempt 1's recorded pids are alive and
    writes the answer: none;
  - a main process that exits leaving background processes: they are killed
    and counted (process statistic leftover_processes, reason
    "leftover_processes: N killed"); a fork loop past the pids limit fails
    the attempt with reason pids_limit.
Every task records its pids in files before it blocks, so the test knows
them by construction; every wait polls a real condition with a deadline.

usage: test_executor_fencing.py BUILD_DIR HALLEY_PROTO
Needs ORRERY_PG_DSN and ORRERY_ZK (deploy/test.sh exports them), root and
writable cgroups.
"""
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import orrery_it  # noqa: E402
import test_executor as base  # noqa: E402  (Executor, rpc helpers)

P = None
ZK = None        # the stack's ZooKeeper, host:port
CHROOT = None    # this run's private ZooKeeper chroot
SHARED = None    # a folder tasks (run as an unprivileged user) write pids into
COUNTER = [0]
EXECUTORS = []
KEPLERS = []


def zk_get(path):
    """(owner, data) of a node read directly from ZooKeeper, or None."""
    r = subprocess.run([os.path.join(base.BUILD, "bin", "ex_zk_get"), ZK + CHROOT, path],
                       capture_output=True, text=True, timeout=30)
    if r.returncode == 3:
        return None
    if r.returncode != 0:
        raise AssertionError(f"ex_zk_get {path}: {r.stderr}")
    owner, data = r.stdout.split("\n", 1)
    return owner, data


def alive(pid):
    """True while pid is a live (not zombie) process."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return "Z" not in line.split()[1]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return False


def cmdline(pid):
    """The command line of pid; "" for a process gone, and also for one in
    the middle of an execve (the kernel shows no arguments until the new
    program's stack is set up)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def proc_report(pid):
    """One line about pid for a failure message: alive or not, and its
    /proc status (state, parent, owner, threads), command line and cgroups."""
    try:
        with open(f"/proc/{pid}/status") as f:
            st = {k: v.strip() for k, _, v in (ln.partition(":") for ln in f)}
    except OSError:
        return f"  pid {pid}: gone"
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            cg = ",".join(ln.strip().split(":", 1)[1] for ln in f
                          if "pids" in ln or "freezer" in ln or ln.startswith("0:"))
    except OSError:
        cg = "?"
    status = " ".join(f"{k}={(st.get(k) or '?').split()[0]}" for k in ("Name", "State", "PPid", "Uid", "Threads"))
    return (f"  pid {pid}: {'ALIVE' if alive(pid) else 'dead'} {status}\n"
            f"    cmdline={cmdline(pid)!r} cgroup={cg}")


def diagnostics(ex, pids=()):
    """What a reader of a failed fencing test needs, CI printing little:
    the attempt's pids and executord's and its guardians' (alive, /proc
    status, command line), the executor's node in ZooKeeper, and the tail
    of executord's log over all its lives."""
    out = ["--- diagnostics"]
    if pids:
        out.append(f"attempt's processes {list(pids)}:")
        out += [proc_report(p) for p in pids]
    daemons = []
    if ex.proc is not None:
        daemons.append(ex.proc.pid)
    try:
        log = ex.daemon_log() if ex.n else ""
    except OSError as e:
        log = f"(cannot read executord's log: {e})"
    for line in log.splitlines():
        if 'msg="guardian started"' in line and "pid=" in line:
            pid = line.rsplit("pid=", 1)[1].split()[0]
            if pid.isdigit():
                daemons.append(int(pid))
    if daemons:
        out.append(f"executord (running: {ex.proc.pid if ex.proc else 'none'}) and the "
                   f"guardians its lives started {daemons}:")
        out += [proc_report(p) for p in daemons]
    try:
        out.append(f"node /orrery/executors/{ex.id}: {ex.node()!r}")
    except Exception as e:  # noqa: BLE001 - a diagnostic must not hide the failure
        out.append(f"node /orrery/executors/{ex.id}: cannot read: {e}")
    out.append(f"executord's log ({ex.n} lives), last 6000 characters:")
    out.append(log[-6000:])
    return "\n".join(out)


def wait_for(pred, what, timeout=30.0, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"waited {timeout} s for: {what}")


def read_pids(folder, names, timeout=30.0):
    """Wait until each file folder/<name> holds a pid; return them."""
    def ready():
        out = []
        for n in names:
            try:
                with open(os.path.join(folder, n)) as f:
                    text = f.read().strip()
            except FileNotFoundError:
                return None
            if not text.isdigit():
                return None
            out.append(int(text))
        return out
    return wait_for(ready, f"pid files {names} in {folder}", timeout)


class Ex(base.Executor):
    """An executord with its own id, and ZooKeeper address (maybe a proxy)."""

    def __init__(self, name, zk, labels=None):
        super().__init__(P, zk)
        self.id = f"fence-{name}-{os.getpid()}"
        self.labels = labels
        EXECUTORS.append(self)

    def env(self):
        env = super().env()
        if self.labels:
            env["ORRERY_EXECUTOR_LABELS"] = self.labels
        return env

    def node(self):
        return zk_get(f"/orrery/executors/{self.id}")


class ZkProxy:
    """TCP proxy between executord and ZooKeeper that this test controls.
    cut(): nothing is forwarded any more in either direction (connections stay
    open, new ones are accepted but never connected through), as when the
    network drops packets. restore(): every connection of before is closed
    and new ones are forwarded again."""

    def __init__(self, target):
        host, port = target.split(":")
        self.target = (host, int(port))
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.lsock.settimeout(0.2)
        self.port = self.lsock.getsockname()[1]
        self.mu = threading.Lock()
        self.socks = []
        self.is_cut = False
        self.closed = False
        self.forwarded = 0  # bytes from ZooKeeper to the client
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.mu:
                self.socks.append(c)
                cut = self.is_cut
            if cut:
                continue  # held open, never answered
            try:
                s = socket.create_connection(self.target, timeout=5)
            except OSError:
                c.close()
                continue
            with self.mu:
                self.socks.append(s)
            for a, b, up in ((c, s, False), (s, c, True)):
                threading.Thread(target=self._pump, args=(a, b, up), daemon=True).start()

    def _pump(self, src, dst, from_server):
        src.settimeout(0.2)
        while not self.closed:
            try:
                data = src.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            if self.is_cut:
                continue  # dropped
            try:
                dst.sendall(data)
            except OSError:
                break
            if from_server:
                self.forwarded += len(data)
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.mu:
            self.is_cut = True

    def restore(self):
        with self.mu:
            old, self.socks = self.socks, []
            self.is_cut = False
        for s in old:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.closed = True
        self.restore()
        self.lsock.close()


def make_instance(ex_id, config, dispatch=True, **spec_extra):
    """A task and one instance of it (REST); moved to dispatched on ex_id as
    keplerd would when dispatch. Returns (task id, instance id)."""
    COUNTER[0] += 1
    spec = {"name": f"ex_fence_{COUNTER[0]}", "team": "etl", "type": "shell",
            "schedule": "0 * * * *", "timezone": "UTC", "config": config}
    spec.update(spec_extra)
    r = P.http("POST", "/api/v1/tasks", spec, token=base.TOKEN)
    assert r.status == 201, r
    tid = r.json()["id"]
    r = P.http("POST", f"/api/v1/tasks/{tid}/backfill",
               {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T01:00:00Z"},
               token=base.TOKEN)
    assert r.status == 200, r
    iid = r.json()["created"][0]
    if dispatch:
        dispatch_to(ex_id, iid)
    return tid, iid


def dispatch_to(ex_id, iid):
    """waiting -> ready -> dispatched on ex_id, as keplerd would."""
    S = base.PB.InstanceState
    for frm, to, extra in (("WAITING", "READY", {}),
                           ("READY", "DISPATCHED", {"executor": ex_id})):
        base.rpc("TransitionInstance", base.PB.TransitionRequest(
            instance_id=iid, expected_state=S.Value("INSTANCE_STATE_" + frm),
            new_state=S.Value("INSTANCE_STATE_" + to), actor="kepler", **extra),
            base.PB.TransitionResult)


def psql(sql):
    return subprocess.run(["psql", P.dsn, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          check=True, capture_output=True, text=True, timeout=30).stdout.strip()


def attempt_row(iid, attempt):
    out = subprocess.run(["psql", P.dsn, "-qAtF", "|", "-c",
                          f"SELECT executor, state, reason FROM attempts "
                          f"WHERE instance_id = {iid} AND attempt = {attempt}"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return out.split("|") if out else None


def stats_of(iid):
    r = base.rpc("ListProcessStats", base.PB.ListProcessStatsRequest(instance_id=iid),
                 base.PB.ListProcessStatsResponse)
    return {(s.attempt, s.key): s.value for s in r.stats}


def task_folder(name):
    d = os.path.join(SHARED, name)
    os.mkdir(d)
    os.chmod(d, 0o777)
    return d


# A task that records its pids, then blocks: the main shell, a background
# child, and a child that left the process group (setsid).
BLOCKING = ("echo $$ > {d}/main; sleep {n} & echo $! > {d}/child; "
            "setsid sleep {n} & echo $! > {d}/escaped; wait")


def setUpModule():
    global P, ZK, CHROOT, SHARED
    import grpc
    base.BUILD = os.path.abspath(sys.argv[1])
    base.PROTO = os.path.abspath(sys.argv[2])
    ZK = orrery_it.require_env("ORRERY_ZK")
    CHROOT = f"/ex-fence-{os.getpid()}"
    subprocess.run([os.path.join(base.BUILD, "bin", "ex_zk_get"), ZK, "--create", CHROOT],
                   check=True, timeout=30)
    base.PB = orrery_it.import_proto(base.PROTO, "halley_pb2")
    try:
        SHARED = tempfile.mkdtemp(prefix="orr-exf-pids-")
        os.chmod(SHARED, 0o755)
        P = orrery_it.Platform(base.BUILD, galaxies=0).__enter__()
        base.P = P
        P.start_galaxy({})
        P.add_user("root", "root-password-1", "admin")
        P.add_user("ann", "ann-password-1", "developer", teams=["etl"])  # makes team etl
        base.TOKEN = P.login("root", "root-password-1")
        base.GRPC = grpc.insecure_channel(f"127.0.0.1:{P.halley_port}")
    except BaseException:
        base.FAILED[0] = True
        tearDownModule()
        raise


def tearDownModule():
    for k in KEPLERS:
        if k.poll() is None:
            k.send_signal(signal.SIGTERM)
            try:
                k.wait(timeout=15)
            except subprocess.TimeoutExpired:
                k.kill()
                k.wait()
    sanitizer = []
    for ex in EXECUTORS:
        ex.stop()
        log = ex.daemon_log() if ex.n else ""
        if base.FAILED[0] and ex.n:
            ex.print_log_tail()
        if "Sanitizer" in log or "runtime error:" in log:
            sanitizer.append(f"{ex.id}:\n{log[-4000:]}")
        for ctl in ("memory", "pids", "cpu", "freezer", "unified"):
            try:
                os.rmdir(f"/sys/fs/cgroup/{ctl}/orrery-it/{ex.id}")
            except OSError:
                pass
        shutil.rmtree(ex.dir, ignore_errors=True)
    if base.GRPC:
        base.GRPC.close()
    if P:
        P.__exit__(None, None, None)
    if SHARED:
        shutil.rmtree(SHARED, ignore_errors=True)
    if sanitizer:
        raise AssertionError("a sanitizer reported in executord's log:\n" + "\n".join(sanitizer))


class Fencing(base.NotesFailure):  # a failure: tearDownModule prints executord's logs
    @contextlib.contextmanager
    def diagnosed(self, ex, pids):
        """Any failure inside (an assertion, a wait that ran out, an executord
        that would not start) is raised again with diagnostics(ex, pids):
        pids is a list the body fills once it knows the attempt's pids."""
        try:
            yield
        except Exception as e:  # noqa: BLE001 - raised again, with more
            raise AssertionError(f"{type(e).__name__}: {e}\n{diagnostics(ex, pids)}") from e

    def start_executor(self, name, zk, labels=None):
        ex = Ex(name, zk, labels)
        base.EX = ex  # for base.wait_state's diagnostics
        ex.start()
        wait_for(ex.node, f"{ex.id} registered in ZooKeeper")
        return ex

    def test_kill9_of_executord_ends_the_task_tree(self):
        ex = self.start_executor("k9", ZK + CHROOT)
        pids = []
        with self.diagnosed(ex, pids):
            self.kill9_ends_the_task_tree(ex, pids)

    def kill9_ends_the_task_tree(self, ex, pids):
        owner = ex.node()[0]
        d = task_folder("k9")
        _, iid = make_instance(ex.id, {"command": BLOCKING.format(d=d, n=1101)})
        pids += read_pids(d, ["main", "child", "escaped"])
        for p in pids:
            self.assertTrue(alive(p), f"pid {p} should run before the kill")
        # The shell writes $! right after its fork: the child may still be
        # exec'ing sleep (or setsid, then sleep), when its command line reads
        # as the shell's or as empty.
        for p in pids[1:]:
            wait_for(lambda: cmdline(p) == "sleep 1101", f"pid {p} runs sleep 1101")
        ex.stop(signal.SIGKILL)
        # No restart: the processes die with their executord.
        wait_for(lambda: not any(alive(p) for p in pids),
                 f"every process of the attempt ({pids}) dead after kill -9 of executord",
                 timeout=15)
        self.assertIn("guardian started", ex.daemon_log())
        # A restart still records the attempt's end.
        ex.start()
        inst = base.wait_state(iid, ("failed",))
        self.assertEqual(inst.reason, "executor_restarted")
        # The dead life's node stays until its session expires (4 s): the new
        # life replaces it with its own, which a clean stop removes. Without
        # this wait the check below would race the restart against that
        # expiry and test either.
        wait_for(lambda: (ex.node() or (owner,))[0] != owner,
                 "the restarted executor registered in place of its dead life's node")
        proc = ex.proc
        ex.stop()
        self.assertEqual(proc.returncode, 0, "executord did not stop cleanly on SIGTERM")
        # A clean stop closes the session (the server then drops the node);
        # were it not closed, the node would go with the session's expiry:
        # 4 s after the last contact, rounded up to ZooKeeper's 2 s tick.
        wait_for(lambda: ex.node() is None, "the node removed by a clean stop", timeout=10)

    def test_cut_from_zookeeper_kills_before_the_session_expires(self):
        proxy = ZkProxy(ZK)
        self.addCleanup(proxy.close)
        ex = self.start_executor("cut", f"127.0.0.1:{proxy.port}{CHROOT}")
        owner = ex.node()[0]
        d = task_folder("cut")
        _, iid = make_instance(ex.id, {"command": BLOCKING.format(d=d, n=1102)})
        pids = read_pids(d, ["main", "child", "escaped"])
        base.wait_state(iid, ("running",))
        self.assertTrue(all(alive(p) for p in pids))
        before = proxy.forwarded
        wait_for(lambda: proxy.forwarded > before, "ZooKeeper traffic through the proxy")
        proxy.cut()
        t_cut = time.time()
        wait_for(lambda: not any(alive(p) for p in pids),
                 f"the task tree ({pids}) killed after the cut", timeout=20, step=0.02)
        t_dead = time.time()
        # The session, and so the node keplerd watches, still exists on the
        # server: nobody could have retried the instance yet.
        node = ex.node()
        self.assertIsNotNone(node, f"the session expired before the kill "
                                   f"({t_dead - t_cut:.2f} s after the cut)")
        self.assertEqual(node[0], owner)
        self.assertIn("fencing", ex.daemon_log())
        inst = base.wait_state(iid, ("failed",))
        self.assertEqual(inst.reason, "executor_fenced")
        # Nothing new starts while fenced: dispatched work waits.
        _, iid2 = make_instance(ex.id, {"command": "echo after"})
        # The session expires on the server (its node goes), then the
        # executor is let back in: it registers with a new session...
        wait_for(lambda: ex.node() is None, "the cut-off session expired on the server",
                 timeout=60, step=0.2)
        self.assertEqual(base.state_name(base.instance(iid2).state), "dispatched")
        self.assertTrue(os.path.exists(os.path.join(ex.work, "logs")))
        self.assertFalse(os.path.exists(os.path.join(ex.work, "logs", f"{iid2}-1.log")),
                         "an instance started while fenced")
        proxy.restore()
        wait_for(lambda: ex.node() is not None, "the executor registered again", timeout=60,
                 step=0.2)
        self.assertNotEqual(ex.node()[0], owner)
        # ... and takes work again.
        inst2 = base.wait_state(iid2, ("success", "failed"), timeout=60)
        self.assertEqual(base.state_name(inst2.state), "success", inst2.reason)
        self.assertIn("zookeeper contact is back", ex.daemon_log())
        ex.stop()

    def test_cut_while_the_running_report_hangs_kills_at_once(self):
        # A run that outlasts running_hold is reported running by its job
        # thread while the process runs. Here that call hangs: halleyd's
        # UPDATE waits on a lock this test holds (a trigger), and executord's
        # deadline is a minute. A cut from ZooKeeper must still kill the task
        # tree before the session expires: the fence kills the group itself,
        # not through the job thread, which is inside the call.
        lock_key = 7_100_000 + os.getpid() % 1_000_000
        trigger = f"orr_fence_hold_{os.getpid()}"
        holder = subprocess.Popen(["psql", P.dsn, "-qAt", "-v", "ON_ERROR_STOP=1"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        proxy = ZkProxy(ZK)
        self.addCleanup(proxy.close)
        pids = []
        ex = Ex("held", f"127.0.0.1:{proxy.port}{CHROOT}")
        ex.extra = {"ORRERY_EXECUTOR_RPC_TIMEOUT": "60s"}
        try:
            holder.stdin.write(f"SELECT pg_advisory_lock({lock_key});\n")
            holder.stdin.flush()
            self.assertEqual(holder.stdout.readline().strip(), "")  # the lock is ours
            base.EX = ex
            ex.start()
            wait_for(ex.node, f"{ex.id} registered in ZooKeeper")
            with self.diagnosed(ex, pids):
                d = task_folder("held")
                _, iid = make_instance(ex.id, {"command": BLOCKING.format(d=d, n=1105)},
                                       dispatch=False)
                psql(f"""CREATE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN PERFORM pg_advisory_xact_lock({lock_key}); RETURN NEW; END $$;
                    CREATE TRIGGER {trigger} BEFORE UPDATE ON instances FOR EACH ROW
                    WHEN (NEW.id = {iid} AND OLD.state = 'dispatched'
                          AND NEW.state = 'running')
                    EXECUTE FUNCTION {trigger}();""")
                dispatch_to(ex.id, iid)
                pids += read_pids(d, ["main", "child", "escaped"])
                # the running report is in halleyd, waiting on the lock
                wait_for(lambda: psql(f"SELECT count(*) FROM pg_locks WHERE locktype = "
                                      f"'advisory' AND objid = {lock_key} AND NOT granted")
                         == "1", "the running report held in halleyd")
                self.assertTrue(all(alive(p) for p in pids))
                before = proxy.forwarded
                wait_for(lambda: proxy.forwarded > before, "ZooKeeper traffic through the proxy")
                proxy.cut()
                wait_for(lambda: not any(alive(p) for p in pids),
                         f"the task tree ({pids}) killed after the cut", timeout=20, step=0.02)
                self.assertIsNotNone(ex.node(), "the session expired before the kill")
                self.assertEqual(base.state_name(base.instance(iid).state), "dispatched")
                holder.stdin.write(f"SELECT pg_advisory_unlock({lock_key});\n")
                holder.stdin.flush()
                self.assertEqual(holder.stdout.readline().strip(), "t")
                inst = base.wait_state(iid, ("failed", "success"))
                self.assertEqual((base.state_name(inst.state), inst.reason),
                                 ("failed", "executor_fenced"))
        finally:
            base.release_hold(holder, trigger)
        ex.stop()

    def test_leftover_processes_killed_and_counted(self):
        ex = self.start_executor("left", ZK + CHROOT)
        d = task_folder("left")
        _, iid = make_instance(ex.id, {"command": (
            f"sleep 1103 & echo $! > {d}/a; sleep 1103 & echo $! > {d}/b; echo main-done")})
        inst = base.wait_state(iid, ("success", "failed"))
        self.assertEqual(base.state_name(inst.state), "success", inst.reason)
        self.assertEqual(inst.reason, "leftover_processes: 2 killed")
        pids = read_pids(d, ["a", "b"])
        self.assertFalse(any(alive(p) for p in pids), "a leftover process survived")
        self.assertEqual(stats_of(iid).get((1, "leftover_processes")), 2.0)
        self.assertIn("still ran: killed", ex.get_log(iid)[1])
        # A main process that waits for its children leaves nothing: no count.
        _, iid2 = make_instance(ex.id, {"command": "sleep 0.1 & wait"})
        inst2 = base.wait_state(iid2, ("success", "failed"))
        self.assertEqual((base.state_name(inst2.state), inst2.reason), ("success", ""))
        self.assertNotIn((1, "leftover_processes"), stats_of(iid2))
        ex.stop()

    def test_pids_limit_fails_the_attempt(self):
        ex = self.start_executor("pids", ZK + CHROOT)  # 64 pids per slot
        d = task_folder("pids")
        _, iid = make_instance(ex.id, {"command": (
            f"i=0; while [ $i -lt 200 ]; do sleep 1104 & echo $! >> {d}/pids; "
            f"i=$((i+1)); done; echo loop-done")})
        inst = base.wait_state(iid, ("success", "failed"))
        self.assertEqual(base.state_name(inst.state), "failed")
        self.assertEqual(inst.reason, "pids_limit")
        with open(os.path.join(d, "pids")) as f:
            pids = [int(x) for x in f.read().split()]
        self.assertGreater(len(pids), 10)
        self.assertLess(len(pids), 200, "the limit did not hold")
        self.assertFalse(any(alive(p) for p in pids), "a process of the fork loop survived")
        self.assertGreaterEqual(stats_of(iid).get((1, "leftover_processes"), 0), 1)
        self.assertIn("process limit", ex.get_log(iid)[1])
        ex.stop()

    def start_kepler(self):
        if KEPLERS:
            return
        env = dict(os.environ)
        env.update({
            "ORRERY_KEPLER_HALLEY": f"127.0.0.1:{P.halley_port}",
            "ORRERY_KEPLER_HALLEY_TOKEN": P.token,
            "ORRERY_KEPLER_ZK": ZK + CHROOT,
            "ORRERY_KEPLER_ID": "kp-fence",
            "ORRERY_KEPLER_SWEEP_INTERVAL": "2s",
            "ORRERY_KEPLER_ZK_SESSION_TIMEOUT": "4s",
        })
        KEPLERS.append(P._spawn([P.bin("keplerd"), "run"], env, "keplerd.log"))

    def retry_task(self, d, a_id, label, retries=1):
        """A task whose attempt 1 records its pids and blocks, and whose
        attempt 2 writes which of attempt 1's pids are alive, then
        "checked". keplerd dispatches it (label: only our executors)."""
        f = f"{d}/$ORRERY_INSTANCE_ID"
        cmd = (f'if [ "$ORRERY_ATTEMPT" = 1 ]; then echo $$ > {f}.main; '
               f'sleep 1105 & echo $! > {f}.child; wait; else '
               f'for p in $(cat {f}.main {f}.child); do '
               f'if [ -e /proc/$p/status ] && ! grep -q "^State:.*Z" /proc/$p/status; '
               f'then echo "alive $p"; fi; done > {f}.check; echo checked >> {f}.check; fi')
        # a yearly schedule: keplerd materialises nothing else meanwhile
        _, iid = make_instance(a_id, {"command": cmd}, dispatch=False, schedule="0 0 1 1 *",
                               retries={"max": retries, "delay": "1s"}, labels={"fence": label})
        return iid

    def check_retry(self, iid, d, pids, b, reasons, retries=1):
        """The instance ends in success on b; attempt 1 failed for one of
        reasons; the successful attempt found none of attempt 1's pids alive."""
        def retried_and_done():
            i = base.instance(iid)
            st = base.state_name(i.state)
            return i if st == "success" or (st == "failed" and i.attempt == 1 + retries) \
                else None
        inst = wait_for(retried_and_done, "the instance succeeded or used up its retries",
                        timeout=90, step=0.2)
        self.assertGreaterEqual(inst.attempt, 2)
        self.assertEqual(base.state_name(inst.state), "success", inst.reason)
        row1, last = attempt_row(iid, 1), attempt_row(iid, inst.attempt)
        self.assertEqual(row1[1], "failed")
        self.assertIn(row1[2], reasons)
        self.assertEqual(last[0], b.id)
        with open(os.path.join(d, f"{iid}.check")) as f:
            self.assertEqual(f.read(), "checked\n",
                             "attempt 1 still had live processes when the retry started")
        self.assertFalse(any(alive(p) for p in pids))
        return inst

    def test_z_retry_starts_after_the_old_attempt_is_dead(self):
        self.start_kepler()
        a = self.start_executor("ra", ZK + CHROOT, labels="fence=retry")
        d = task_folder("retry")
        iid = self.retry_task(d, a.id, "retry")
        # keplerd dispatches attempt 1 to the only executor alive: a.
        pids = read_pids(d, [f"{iid}.main", f"{iid}.child"], timeout=60)
        self.assertEqual(attempt_row(iid, 1)[0], a.id)
        b = self.start_executor("rb", ZK + CHROOT, labels="fence=retry")
        a.stop(signal.SIGKILL)
        self.check_retry(iid, d, pids, b, ("executor_lost",))
        b.stop()

    def test_z_zookeeper_cut_retry_starts_after_the_old_attempt_is_dead(self):
        self.start_kepler()
        proxy = ZkProxy(ZK)
        self.addCleanup(proxy.close)
        a = self.start_executor("ca", f"127.0.0.1:{proxy.port}{CHROOT}", labels="fence=cut")
        d = task_folder("cutretry")
        # Two retries: a retry keplerd dispatches to a while a is fenced but
        # its session not yet expired waits there, and is failed
        # executor_lost with the session (see docs/operations.md).
        iid = self.retry_task(d, a.id, "cut", retries=2)
        pids = read_pids(d, [f"{iid}.main", f"{iid}.child"], timeout=60)
        self.assertEqual(attempt_row(iid, 1)[0], a.id)
        proxy.cut()
        # keplerd retries once a's session has expired (or a reported the
        # fence); the retry can only go to b, started once a's node is gone.
        wait_for(lambda: a.node() is None, "the cut-off session expired on the server",
                 timeout=60, step=0.2)
        b = self.start_executor("cb", ZK + CHROOT, labels="fence=cut")
        self.check_retry(iid, d, pids, b, ("executor_fenced", "executor_lost"), retries=2)
        self.assertIn("fencing", a.daemon_log())
        b.stop()
        proxy.restore()
        a.stop()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
