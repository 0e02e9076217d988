"""test_install.py - Orrery installed: layout, systemd units, the package,
secrets in files, and the daemons run from the install.

    test_install.py BUILD_DIR MODE

  layout   `cmake --install` into a temporary prefix: every binary, the
           console, schemas and migrations under share/orrery, one sample
           config per role, one unit per daemon.
  units    every installed unit passes `systemd-analyze verify` with nothing
           to say; Type=notify, Restart=on-failure, a dedicated user and
           hardening for all but executord, which gets Delegate=yes.
  secrets  every daemon kind refuses to start (exit 2) on a secret file open
           to group or others, a missing secret file, or its role's required
           key left out, naming the file and the key; a 0600 file is taken.
  run      halleyd and galaxyd started from the install (working folder
           outside the source tree, secrets in 0600 files) against the
           test stack; each reports READY=1 on a NOTIFY_SOCKET the test
           made, only once its port accepts; keplerd reports it once it has
           joined the election, executord (as root) once /healthz says it is
           registered, sortd while it waits for its stream's spec; GET
           /healthz and the console's pages answer.
  package  `cpack -G DEB`: the package's file list and control fields
           (dependencies on the runtime libraries, postinst, conffiles).

The stack (ORRERY_PG_DSN, ORRERY_ZK) is needed by `run` only; missing, it is
a failure, never a skip.
"""
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MODE = sys.argv[2] if len(sys.argv) > 2 else "layout"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FAILURES = []
BINARIES = ["halleyd", "galaxyd", "keplerd", "executord", "sortd", "wormhole", "orrery"]
ROLES = ["halley", "galaxy", "kepler", "executor", "sort"]
UNITS = ["orrery-halleyd.service", "orrery-galaxyd.service", "orrery-keplerd.service",
         "orrery-executord.service", "orrery-sortd@.service"]


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def clean_env():
    """The environment without ORRERY_<SECTION>_<KEY> settings of the caller."""
    env = {k: v for k, v in os.environ.items()
           if not re.match(r"ORRERY_(HALLEY|GALAXY|KEPLER|EXECUTOR|SORT|LOG)_", k)}
    env.pop("NOTIFY_SOCKET", None)
    return env


def install(prefix):
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("cmake --install failed:\n" + r.stdout + r.stderr)


def write_secret(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text + "\n")
    os.chmod(path, mode)


# ------------------------------------------------------------------ layout

def test_layout(tmp):
    prefix = os.path.join(tmp, "prefix")
    install(prefix)
    for b in BINARIES:
        p = os.path.join(prefix, "bin", b)
        check(os.path.isfile(p) and os.access(p, os.X_OK), f"bin/{b} installed, executable")
    share = os.path.join(prefix, "share", "orrery")
    check(os.path.isfile(os.path.join(share, "static", "index.html")), "share/orrery/static/index.html")
    check(os.path.isfile(os.path.join(share, "static", "openapi.json")),
          "share/orrery/static/openapi.json")
    check(os.path.isfile(os.path.join(share, "schema", "task.schema.json")),
          "share/orrery/schema/task.schema.json")
    src_migs = sorted(f for f in os.listdir(os.path.join(ROOT, "migrations")) if f.endswith(".sql"))
    inst_migs = sorted(os.listdir(os.path.join(share, "migrations")))
    check(src_migs and inst_migs == src_migs,
          f"share/orrery/migrations holds the {len(src_migs)} migrations")
    etc = os.path.join(prefix, "etc", "orrery")
    for role in ROLES:
        p = os.path.join(etc, role + ".conf")
        check(os.path.isfile(p), f"etc/orrery/{role}.conf installed")
        if os.path.isfile(p):
            text = open(p).read()
            check("@" not in re.sub(r"#.*", "", text).replace("orrery@localhost", ""),
                  f"{role}.conf: every placeholder replaced")
            check(f"{etc}/secrets/" in text,
                  f"{role}.conf names its secrets in files under {etc}/secrets")
            check(not re.search(r"^\s*(token|jwt_secret|secret_key|halley_token|log_token)\s*=",
                                text, re.M),
                  f"{role}.conf has no inline secret")
    # Each sample is a valid config for its daemon (secret files made first).
    os.makedirs(os.path.join(etc, "secrets"), exist_ok=True)
    for name in ["halley-token", "halley-worker-token", "galaxy-jwt-secret", "log-token",
                 "executor-halley-token", "executor-halley-worker-token", "executor-log-token"]:
        write_secret(os.path.join(etc, "secrets", name), secrets.token_hex(24))
    write_secret(os.path.join(etc, "secrets", "halley-secret-key"), secrets.token_hex(32))
    for role, daemon in [("halley", "halleyd"), ("galaxy", "galaxyd"), ("kepler", "keplerd"),
                         ("executor", "executord"), ("sort", "sortd")]:
        r = subprocess.run([os.path.join(prefix, "bin", daemon), "--config",
                            os.path.join(etc, role + ".conf"), "--print-config"],
                           capture_output=True, text=True, env=clean_env(), cwd=tmp)
        check(r.returncode == 0 and "<set>" in r.stdout,
              f"{daemon} takes the sample {role}.conf with its secret files "
              f"(exit {r.returncode}; {r.stderr.strip()[:200]})")
        check("/secrets/" in r.stdout,
              f"{daemon} --print-config shows where its secrets came from")
    units = os.path.join(prefix, "lib", "systemd", "system")
    for u in UNITS:
        check(os.path.isfile(os.path.join(units, u)), f"lib/systemd/system/{u} installed")
    man = os.path.join(prefix, "share", "man", "man1", "orrery.1")
    check(os.path.isfile(man), "share/man/man1/orrery.1 installed")


# ------------------------------------------------------------------- units

def unit_keys(text):
    keys = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;[" or "=" not in line:
            continue
        k, _, v = line.partition("=")
        keys.setdefault(k.strip(), []).append(v.strip())
    return keys


def test_units(tmp):
    prefix = os.path.join(tmp, "prefix")
    install(prefix)
    units = os.path.join(prefix, "lib", "systemd", "system")
    for u in UNITS:
        path = os.path.join(units, u)
        text = open(path).read()
        k = unit_keys(text)
        # systemd-analyze verify: exit 0 and no complaint about the unit
        # (unknown keys and bad values are only warnings, so look at them).
        # A template unit is checked through an instance of it.
        target = path
        if u.endswith("@.service"):
            target = os.path.join(tmp, u.replace("@.", "@demo."))
            shutil.copy(path, target)
        r = subprocess.run(["systemd-analyze", "verify", target], capture_output=True, text=True)
        said = [line for line in (r.stdout + r.stderr).splitlines()
                if os.path.basename(target) in line or "Unknown" in line or "ignoring" in line]
        check(r.returncode == 0 and not said,
              f"systemd-analyze verify {u}: exit {r.returncode} {said[:3]}")
        check(k.get("Type") == ["notify"], f"{u}: Type=notify")
        check(k.get("Restart") == ["on-failure"], f"{u}: Restart=on-failure")
        exec_start = k.get("ExecStart", [""])[0].split()
        check(exec_start and exec_start[0].startswith(os.path.join(prefix, "bin") + "/"),
              f"{u}: ExecStart runs the installed binary ({exec_start[:1]})")
        check(any(a.startswith("--config") for a in exec_start) and
              any(os.path.join(prefix, "etc", "orrery") in a for a in exec_start),
              f"{u}: ExecStart reads its config from the installed etc/orrery")
        if u == "orrery-executord.service":
            check(k.get("Delegate") == ["yes"], f"{u}: Delegate=yes (its cgroups)")
            check("User" not in k and "NoNewPrivileges" not in k and "ProtectSystem" not in k,
                  f"{u}: runs as root without the hardening that breaks its sandboxes")
        else:
            check(k.get("User") == ["orrery"], f"{u}: User=orrery")
            for opt, val in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                             ("PrivateTmp", "yes"), ("ProtectHome", "yes")]:
                check(k.get(opt) == [val], f"{u}: {opt}={val}")
            check(k.get("ReadWritePaths") == ["/var/lib/orrery"],
                  f"{u}: writes only /var/lib/orrery")
            check(k.get("CapabilityBoundingSet") == [""], f"{u}: no capabilities")
    # halleyd migrates before it serves.
    k = unit_keys(open(os.path.join(units, "orrery-halleyd.service")).read())
    check(k.get("ExecStartPre", [""])[0].endswith(" migrate"), "halleyd: migrate runs first")
    # A broken unit is refused: the check can fail.
    bad = os.path.join(tmp, "orrery-broken.service")
    with open(bad, "w") as f:
        f.write("[Service]\nType=notify\nExecStart=/nonexistent/halleyd serve\n")
    r = subprocess.run(["systemd-analyze", "verify", bad], capture_output=True, text=True)
    check(r.returncode != 0, "systemd-analyze verify refuses a unit whose binary is missing")


# ----------------------------------------------------------------- secrets

def run_daemon(argv, conf_text, tmp, cmd):
    conf = os.path.join(tmp, "role.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    try:
        r = subprocess.run([os.path.join(BUILD, "bin", argv), "--config", conf, cmd],
                           capture_output=True, text=True, env=clean_env(), cwd=tmp,
                           timeout=30)
    except subprocess.TimeoutExpired:
        return None, "(still running after 30 s)"
    return r.returncode, r.stderr


# daemon, serving command, section, a secret key, its required keys (and the
# rest of a config that is otherwise complete).
KINDS = [
    ("halleyd", "serve", "halley", "token",
     {"token": "t" * 32, "pg_dsn": "postgresql://nobody@127.0.0.1:1/none",
      "secret_key": "ab" * 32}),
    ("galaxyd", "serve", "galaxy", "jwt_secret",
     {"halley": "127.0.0.1:1", "halley_token": "t" * 32, "jwt_secret": "j" * 40}),
    ("keplerd", "run", "kepler", "halley_token", {}),
    ("executord", "serve", "executor", "log_token", {"zk": "127.0.0.1:1", "log_token": "l" * 32}),
    ("sortd", "run", "sort", "halley_token", {}),
]
REQUIRED = {"halleyd": ["token", "pg_dsn", "secret_key"], "galaxyd": ["halley", "halley_token", "jwt_secret"],
            "executord": ["zk", "log_token"]}


def conf_of(section, keys):
    return f"[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items())


def test_secrets(tmp):
    for daemon, cmd, section, key, base in KINDS:
        sec = os.path.join(tmp, f"{daemon}-{key}")
        keys = dict(base)
        keys.pop(key, None)
        keys[key + "_file"] = sec
        text = conf_of(section, keys)
        want = f"[{section}] {key}_file"
        # Open to others.
        write_secret(sec, "s" * 40, 0o644)
        rc, err = run_daemon(daemon, text, tmp, cmd)
        check(rc == 2 and sec in err and want in err and "0644" in err,
              f"{daemon}: a secret file of mode 0644 is refused naming it and {want} "
              f"(exit {rc}: {err.strip()[:200]})")
        # Writable by the group.
        os.chmod(sec, 0o620)
        rc, err = run_daemon(daemon, text, tmp, cmd)
        check(rc == 2 and sec in err and want in err,
              f"{daemon}: a secret file of mode 0620 is refused (exit {rc})")
        # Not the daemon's user's (root can give it away to make the case).
        if os.geteuid() == 0:
            os.chmod(sec, 0o600)
            os.chown(sec, 65534, 65534)
            rc, err = run_daemon(daemon, text, tmp, cmd)
            check(rc == 2 and sec in err and want in err and "not by this daemon's user" in err,
                  f"{daemon}: a secret file of another user is refused (exit {rc})")
        # Missing.
        os.unlink(sec)
        rc, err = run_daemon(daemon, text, tmp, cmd)
        check(rc == 2 and sec in err and want in err and "No such file" in err,
              f"{daemon}: a missing secret file is refused naming it and {want} (exit {rc})")
        # A good one is taken: --print-config shows the key set from the file.
        write_secret(sec, "s" * 40, 0o600)
        rc, out = None, ""
        conf = os.path.join(tmp, "role.conf")
        with open(conf, "w") as f:
            f.write(text)
        r = subprocess.run([os.path.join(BUILD, "bin", daemon), "--config", conf,
                            "--print-config"], capture_output=True, text=True, env=clean_env())
        m = re.search(rf"^{key} = <set>\s+# from (.*)$", r.stdout, re.M)
        check(r.returncode == 0 and m and sec in m.group(1) and "s" * 40 not in r.stdout,
              f"{daemon}: a 0600 secret file is taken, printed masked with its origin "
              f"(exit {r.returncode})")
        os.unlink(sec)
        # The role's required keys, one left out at a time.
        for req in REQUIRED.get(daemon, []):
            keys = dict(base)
            keys.pop(req)
            rc, err = run_daemon(daemon, conf_of(section, keys), tmp, cmd)
            check(rc == 2 and f"[{section}] {req}: required key is missing" in err
                  and os.path.join(tmp, "role.conf") in err,
                  f"{daemon}: [{section}] {req} left out is refused naming the file and key "
                  f"(exit {rc}: {err.strip()[:160]})")


# --------------------------------------------------------------------- run

class Notify:
    """A NOTIFY_SOCKET of the test's own: a datagram socket messages land on."""

    def __init__(self, tmp, name):
        self.path = os.path.join(tmp, f"notify-{name}.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def wait(self, what, proc, timeout=60.0):
        """The fields of the first message holding what=1 (dict), or None."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                return None
            self.sock.settimeout(0.5)
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                continue
            fields = dict(line.split("=", 1) for line in data.splitlines() if "=" in line)
            if fields.get(what) == "1":
                return fields
        return None

    def close(self):
        self.sock.close()


def port_accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_run(tmp):
    admin_dsn = orrery_it.require_env("ORRERY_PG_DSN")
    zk = orrery_it.require_env("ORRERY_ZK")
    prefix = os.path.join(tmp, "prefix")
    install(prefix)
    bindir = os.path.join(prefix, "bin")
    work = os.path.join(tmp, "work")  # the daemons' working folder: not the source tree
    os.makedirs(work)
    db = f"orr_inst_{os.getpid()}_{secrets.token_hex(3)}"
    dsn = orrery_it.dsn_with_db(admin_dsn, db)
    sdir = os.path.join(tmp, "secrets")
    os.makedirs(sdir, mode=0o700)
    token = secrets.token_hex(16)
    write_secret(os.path.join(sdir, "token"), token)
    write_secret(os.path.join(sdir, "key"), "cd" * 32)
    write_secret(os.path.join(sdir, "jwt"), secrets.token_hex(32))
    write_secret(os.path.join(sdir, "dsn"), dsn)
    write_secret(os.path.join(sdir, "log"), secrets.token_hex(16))
    hport, mport, gport, kport, eport, emport = (orrery_it.free_port() for _ in range(6))
    exwork = os.path.join(tmp, "executor")
    os.makedirs(exwork)
    conf = os.path.join(tmp, "orrery.conf")
    with open(conf, "w") as f:
        f.write(f"""[halley]
listen = 127.0.0.1:{hport}
metrics_listen = 127.0.0.1:{mport}
pool_size = 2
pg_dsn_file = {sdir}/dsn
token_file = {sdir}/token
secret_key_file = {sdir}/key

[galaxy]
listen = 127.0.0.1:{gport}
halley = 127.0.0.1:{hport}
halley_token_file = {sdir}/token
jwt_secret_file = {sdir}/jwt
threads = 2
blob_root = {tmp}/blob

[kepler]
halley = 127.0.0.1:{hport}
halley_token_file = {sdir}/token
zk = {zk}
id = install-test-{os.getpid()}
metrics_listen = 127.0.0.1:{kport}

[executor]
id = install-test-{os.getpid()}
halley = 127.0.0.1:{hport}
halley_token_file = {sdir}/token
zk = {zk}
zk_session = 4s
listen = 127.0.0.1:{eport}
metrics_listen = 127.0.0.1:{emport}
log_token_file = {sdir}/log
work_dir = {exwork}
blob_root = file://{tmp}/blob
cgroup_parent = orrery-install-it

[sort]
zookeeper = {zk}
work_dir = {tmp}/sort/work
state_dir = {tmp}/sort/state
blob_root = file://{tmp}/blob
""")
    procs = []
    notifies = []
    logs = {}

    def start(name, args):
        n = Notify(tmp, name)
        notifies.append(n)
        env = clean_env()
        env["NOTIFY_SOCKET"] = n.path
        logs[name] = os.path.join(tmp, name + ".log")
        with open(logs[name], "ab") as out:
            p = subprocess.Popen([os.path.join(bindir, name), "--config", conf] + args, env=env,
                                 cwd=work, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        procs.append(p)
        return p, n

    orrery_it.psql(admin_dsn, f'CREATE DATABASE "{db}"')
    try:
        r = subprocess.run([os.path.join(bindir, "halleyd"), "--config", conf, "migrate"],
                           capture_output=True, text=True, env=clean_env(), cwd=work)
        check(r.returncode == 0, f"installed halleyd migrate (exit {r.returncode}: {r.stderr[-300:]})")
        p, n = start("halleyd", ["serve"])
        ready = n.wait("READY", p)
        accepts = ready is not None and port_accepts(hport)
        check(ready is not None and accepts,
              "installed halleyd sends READY=1 on NOTIFY_SOCKET, its port already accepting")
        check(ready is not None and ready.get("MAINPID") == str(p.pid),
              f"halleyd's READY names its own pid ({ready and ready.get('MAINPID')} vs {p.pid})")
        p, n = start("galaxyd", ["serve"])
        ready = n.wait("READY", p)
        check(ready is not None and port_accepts(gport),
              "installed galaxyd sends READY=1, its port already accepting")
        base = f"http://127.0.0.1:{gport}"
        st, body = get(base + "/healthz")
        check(st == 200, f"GET /healthz from the installed galaxyd: {st} {body[:120]!r}")
        st, body = get(base + "/")
        want = open(os.path.join(ROOT, "static", "index.html"), "rb").read()
        check(st == 200 and body == want,
              f"GET / serves the console's page from share/orrery/static: {st}")
        app = os.path.join(ROOT, "static", "app", "index.html")
        if os.path.isfile(app):  # the UI is built: it is installed and served too
            st, body = get(base + "/app/tasks")
            check(st == 200 and body == open(app, "rb").read(),
                  f"GET /app/tasks serves the built console from share/orrery/static/app: {st}")
        st, body = get(base + "/openapi.json")
        ok = st == 200
        try:
            ok = ok and "paths" in json.loads(body)
        except ValueError:
            ok = False
        check(ok, f"GET /openapi.json from share/orrery/static: {st}")
        p, n = start("keplerd", ["run"])
        ready = n.wait("READY", p)
        joined = "joined kepler election" in open(logs["keplerd"], errors="replace").read()
        check(ready is not None and joined,
              "installed keplerd sends READY=1 once it has joined the election")
        # Stopping is reported too.
        p.send_signal(signal.SIGTERM)
        stopping = n.wait("STOPPING", p, timeout=20) if p.poll() is None else None
        p.wait(timeout=30)
        check(p.returncode == 0, f"keplerd stops cleanly (exit {p.returncode})")
        del stopping  # keplerd may exit before its STOPPING is read: not asserted
        # executord (root: its sandboxes) is ready once its card is in
        # ZooKeeper: its /healthz says registered from that moment on.
        if os.geteuid() == 0:
            os.chmod(tmp, 0o711)  # the task user walks into run folders
            p, n = start("executord", ["serve"])
            ready = n.wait("READY", p)
            st, body = get(f"http://127.0.0.1:{emport}/healthz") if ready else (0, b"")
            check(ready is not None and st == 200 and b'"registered":true' in body,
                  f"installed executord sends READY=1 once registered: {st} {body[:100]!r}")
        # sortd of a stream published in ZooKeeper: ready while it waits for the spec.
        p, n = start("sortd", ["run", "--stream-name", f"install_it_{os.getpid()}"])
        ready = n.wait("READY", p)
        check(ready is not None and "waiting" in ready.get("STATUS", ""),
              f"installed sortd sends READY=1 ({ready})")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for n in notifies:
            n.close()
        try:
            orrery_it.psql(admin_dsn, f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        except subprocess.CalledProcessError:
            pass
        if FAILURES:
            for name, path in logs.items():
                print(f"--- {name} log (tail)")
                print(open(path, errors="replace").read()[-2000:])
    # Outside systemd nothing is sent and nothing breaks: the whole stack of
    # every other test runs without NOTIFY_SOCKET.


# ----------------------------------------------------------------- package

def test_package(tmp):
    out = os.path.join(tmp, "pkg")
    t0 = time.time()
    r = subprocess.run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"),
                        "-B", out], capture_output=True, text=True, cwd=BUILD)
    check(r.returncode == 0, f"cpack -G DEB (exit {r.returncode}, {time.time() - t0:.1f} s)"
          + ("" if r.returncode == 0 else "\n" + r.stdout[-2000:] + r.stderr[-2000:]))
    debs = [f for f in os.listdir(out) if f.endswith(".deb")] if os.path.isdir(out) else []
    check(len(debs) == 1, f"one .deb made: {debs}")
    if len(debs) != 1:
        return
    deb = os.path.join(out, debs[0])
    files = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True).stdout
    names = set()
    for line in files.splitlines():
        name = line.split()[-1] if "->" not in line else line.split()[-3]
        names.add(name.lstrip("."))
    for b in BINARIES:
        check(f"/usr/bin/{b}" in names, f"package has /usr/bin/{b}")
    for f in ["/usr/share/orrery/static/index.html", "/usr/share/orrery/schema/task.schema.json",
              "/etc/orrery/halley.conf", "/etc/orrery/galaxy.conf", "/etc/orrery/kepler.conf",
              "/etc/orrery/executor.conf", "/etc/orrery/sort.conf"] + \
            [f"/usr/lib/systemd/system/{u}" for u in UNITS]:
        check(f in names, f"package has {f}")
    check(not any(n.startswith("/usr/local") or "/tests/" in n or "bench" in n for n in names),
          "package holds nothing of the build's tests or of /usr/local")
    check(any(n.startswith("/usr/share/orrery/migrations/") and n.endswith(".sql") for n in names),
          "package has the migrations")
    info = subprocess.run(["dpkg-deb", "-I", deb], capture_output=True, text=True).stdout
    m = re.search(r"^ Depends: (.*)$", info, re.M)
    deps = m.group(1) if m else ""
    for lib in ["libpq5", "libzookeeper-mt2", "libmicrohttpd12", "libjansson4", "libgrpc",
                "libsystemd0", "libsodium23", "adduser"]:
        check(lib in deps, f"Depends names {lib}")
    check(re.search(r"^ Package: orrery$", info, re.M) is not None, "Package: orrery")
    check(re.search(r"^ Architecture: \S+$", info, re.M) is not None, "Architecture set")
    for s in ["postinst", "postrm", "conffiles"]:
        check(re.search(rf"^\s+\d+ bytes,\s+\d+ lines\s+\*?\s*{s}\b", info, re.M) is not None,
              f"control archive has {s}")
    ctl = os.path.join(tmp, "ctl")
    subprocess.run(["dpkg-deb", "-e", deb, ctl], check=True)
    post = open(os.path.join(ctl, "postinst")).read()
    check("adduser --system" in post and " orrery" in post, "postinst makes the orrery user")
    check(os.stat(os.path.join(ctl, "postinst")).st_mode & stat.S_IXUSR, "postinst is executable")
    r = subprocess.run(["sh", "-n", os.path.join(ctl, "postinst")], capture_output=True, text=True)
    check(r.returncode == 0, f"postinst is valid sh: {r.stderr.strip()}")
    conff = open(os.path.join(ctl, "conffiles")).read().split()
    check("/etc/orrery/halley.conf" in conff and len(conff) == 5, f"conffiles: {conff}")


def main():
    tmp = tempfile.mkdtemp(prefix="orr-install-")
    os.chmod(tmp, 0o700)
    try:
        {"layout": test_layout, "units": test_units, "secrets": test_secrets, "run": test_run,
         "package": test_package}[MODE](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
