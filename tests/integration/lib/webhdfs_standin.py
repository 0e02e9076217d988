#!/usr/bin/python3
"""webhdfs_standin.py - a WebHDFS *protocol stand-in* for Orrery's tests.

This is NOT HDFS. It is a small namenode + datanode pair on loopback ports,
written with Python's standard library, that serves the subset of the
WebHDFS REST API v1 the webhdfs:// blob store uses, with the status codes,
redirects and JSON bodies the WebHDFS documentation gives:

  PUT    op=CREATE      namenode: 307 + Location on the datanode;
                        datanode: 201 (403 FileAlreadyExistsException when
                        overwrite=false and the file exists)
  PUT    op=RENAME      200 {"boolean": true|false}
  GET    op=OPEN        namenode: 307 to the datanode; datanode: 200 bytes
                        (offset= and length= for a range; an offset past the
                        end: 403 IOException, as HDFS answers)
  GET    op=LISTSTATUS  200 {"FileStatuses": {"FileStatus": [...]}}
  GET    op=GETFILESTATUS 200 {"FileStatus": {...}}
  DELETE op=DELETE      200 {"boolean": true|false}
  PUT    op=MKDIRS      200 {"boolean": true}

Errors are {"RemoteException": {"exception", "javaClassName", "message"}}
with 404 (FileNotFoundException), 403, 400 or 401. Every request must carry
user.name (401 SecurityException otherwise). Files live under a folder.

Failure injection (GET /ctl on the namenode, answers 200 "ok"):
  ?refuse_rename=N   the N-th RENAME from now answers {"boolean": false}
  ?drop_put=N        the N-th datanode PUT from now reads half the body and
                     closes the connection without an answer
  ?deny=OP           the next request with op=OP answers 403
                     AccessControlException
GET /ctl?stats=1 answers JSON counters (requests per op, users seen; the
datanode's reads also as OPEN_WHOLE or OPEN_RANGE).

Used by the sort engine's webhdfs:// tests (tests/integration/sort) and by
the code-package and log-archive test of executord and galaxyd
(tests/integration/executor/test_executor_webhdfs.py).

Run: webhdfs_standin.py DIR PORTFILE  -> writes "NAMENODE_PORT DATANODE_PORT"
to PORTFILE once both listen, serves until SIGTERM. Or import and call
start(dir[, namenode_port]) -> (namenode_port, datanode_port, stop).
"""
import json
import os
import shutil
import signal
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/webhdfs/v1"


class State:
    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        self.refuse_rename = 0
        self.drop_put = 0
        self.deny = set()
        self.ops = {}
        self.users = set()
        self.dn_port = 0

    def local(self, hpath):
        parts = [p for p in hpath.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise ValueError("bad path")
        return os.path.join(self.root, *parts)


def status_of(st, path, name):
    s = os.stat(path)
    isdir = os.path.isdir(path)
    return {"accessTime": int(s.st_atime * 1000), "blockSize": 134217728, "group": "supergroup",
            "length": 0 if isdir else s.st_size, "modificationTime": int(s.st_mtime * 1000),
            "owner": "orrery", "pathSuffix": name, "permission": "755" if isdir else "644",
            "replication": 0 if isdir else 3, "type": "DIRECTORY" if isdir else "FILE"}


def make_handler(st, role):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def send(self, code, body=b"", ctype="application/json", headers=()):
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def remote(self, code, exc, msg):
            self.send(code, {"RemoteException": {
                "exception": exc, "javaClassName": "org.apache.hadoop." + exc, "message": msg}})

        def boolean(self, v):
            self.send(200, {"boolean": v})

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def route(self, method):
            u = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(u.query))
            if role == "nn" and u.path == "/ctl":
                with st.lock:
                    if "refuse_rename" in q:
                        st.refuse_rename = int(q["refuse_rename"])
                    if "drop_put" in q:
                        st.drop_put = int(q["drop_put"])
                    if "deny" in q:
                        st.deny.add(q["deny"])
                    if "stats" in q:
                        return self.send(200, {"ops": st.ops, "users": sorted(st.users)})
                return self.send(200, b"ok", "text/plain")
            if not u.path.startswith(PREFIX + "/"):
                return self.remote(404, "FileNotFoundException", "not a WebHDFS path")
            hpath = urllib.parse.unquote(u.path[len(PREFIX):])
            op = q.get("op", "").upper()
            user = q.get("user.name")
            if method in ("PUT", "POST") and role == "nn":
                self.body()
            if not user:
                return self.remote(401, "SecurityException", "user.name is required")
            try:
                lp = st.local(hpath)
            except ValueError:
                return self.remote(400, "IllegalArgumentException", "Invalid path " + hpath)
            with st.lock:
                st.ops[op] = st.ops.get(op, 0) + 1
                st.users.add(user)
                if role == "nn" and op in st.deny:
                    st.deny.discard(op)
                    return self.remote(403, "security.AccessControlException",
                                       "Permission denied: user=%s, access=WRITE, inode=\"%s\""
                                       % (user, hpath))
            getattr(self, "%s_%s" % (role, op), self.bad_op)(method, hpath, lp, q)

        def bad_op(self, method, hpath, lp, q):
            self.remote(400, "IllegalArgumentException", "Invalid value for webhdfs parameter \"op\"")

        def redirect(self, hpath, q):
            loc = "http://127.0.0.1:%d%s%s?%s" % (
                st.dn_port, PREFIX, urllib.parse.quote(hpath),
                urllib.parse.urlencode(dict(q, namenoderpcaddress="localhost:8020")))
            self.send(307, b"", headers=[("Location", loc)])

        # ---- namenode ----
        def nn_CREATE(self, method, hpath, lp, q):
            if method != "PUT":
                return self.bad_op(method, hpath, lp, q)
            self.redirect(hpath, q)

        def nn_OPEN(self, method, hpath, lp, q):
            if not os.path.isfile(lp):
                return self.remote(404, "FileNotFoundException", "File does not exist: " + hpath)
            self.redirect(hpath, dict({"offset": "0"}, **q))

        def nn_RENAME(self, method, hpath, lp, q):
            dst = q.get("destination", "")
            if not dst.startswith("/"):
                return self.remote(400, "IllegalArgumentException", "Invalid destination")
            with st.lock:
                if st.refuse_rename > 0:
                    st.refuse_rename -= 1
                    if st.refuse_rename == 0:
                        return self.boolean(False)
                ldst = st.local(dst)
                if (not os.path.exists(lp) or os.path.exists(ldst)
                        or not os.path.isdir(os.path.dirname(ldst))):
                    return self.boolean(False)
                os.rename(lp, ldst)
            self.boolean(True)

        def nn_LISTSTATUS(self, method, hpath, lp, q):
            if not os.path.exists(lp):
                return self.remote(404, "FileNotFoundException", "File " + hpath + " does not exist.")
            if os.path.isdir(lp):
                ents = [status_of(st, os.path.join(lp, n), n) for n in sorted(os.listdir(lp))
                        if not n.startswith(".standin-")]
            else:
                ents = [status_of(st, lp, "")]
            self.send(200, {"FileStatuses": {"FileStatus": ents}})

        def nn_GETFILESTATUS(self, method, hpath, lp, q):
            if not os.path.exists(lp):
                return self.remote(404, "FileNotFoundException", "File does not exist: " + hpath)
            self.send(200, {"FileStatus": status_of(st, lp, "")})

        def nn_DELETE(self, method, hpath, lp, q):
            if method != "DELETE":
                return self.bad_op(method, hpath, lp, q)
            with st.lock:
                if not os.path.exists(lp):
                    return self.boolean(False)
                if os.path.isdir(lp):
                    if os.listdir(lp) and q.get("recursive") != "true":
                        return self.remote(403, "PathIsNotEmptyDirectoryException",
                                           hpath + " is non empty': Directory is not empty")
                    shutil.rmtree(lp)
                else:
                    os.unlink(lp)
            self.boolean(True)

        def nn_MKDIRS(self, method, hpath, lp, q):
            try:
                os.makedirs(lp, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                return self.remote(403, "fs.FileAlreadyExistsException",
                                   "Path is not a directory: " + hpath)
            self.boolean(True)

        # ---- datanode ----
        def dn_CREATE(self, method, hpath, lp, q):
            n = int(self.headers.get("Content-Length") or 0)
            with st.lock:
                drop = False
                if st.drop_put > 0:
                    st.drop_put -= 1
                    drop = st.drop_put == 0
            if drop:
                self.rfile.read(n // 2)
                self.close_connection = True
                self.connection.shutdown(2)
                return
            data = self.rfile.read(n)
            with st.lock:
                if os.path.exists(lp) and q.get("overwrite", "false") != "true":
                    return self.remote(403, "FileAlreadyExistsException",
                                       hpath + " for client 127.0.0.1 already exists")
                if os.path.isdir(lp):
                    return self.remote(403, "FileAlreadyExistsException", hpath + " is a directory")
                os.makedirs(os.path.dirname(lp), exist_ok=True)
                part = os.path.join(os.path.dirname(lp), ".standin-" + os.path.basename(lp))
                with open(part, "wb") as f:
                    f.write(data)
                os.rename(part, lp)
            self.send(201, b"", headers=[("Location", "hdfs://localhost:8020" + hpath)])

        def dn_OPEN(self, method, hpath, lp, q):
            try:
                offset = int(q.get("offset", "0"))
                length = int(q["length"]) if "length" in q else None
            except ValueError:
                return self.remote(400, "IllegalArgumentException", "Invalid offset or length")
            if offset < 0 or (length is not None and length < 0):
                return self.remote(400, "IllegalArgumentException", "Invalid offset or length")
            try:
                with open(lp, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    if offset > size:
                        return self.remote(403, "IOException", "Offset=%d out of the range [0, %d]"
                                           % (offset, size))
                    f.seek(offset)
                    data = f.read() if length is None else f.read(length)
            except FileNotFoundError:
                return self.remote(404, "FileNotFoundException", "File does not exist: " + hpath)
            kind = "OPEN_RANGE" if length is not None or offset else "OPEN_WHOLE"
            with st.lock:
                st.ops[kind] = st.ops.get(kind, 0) + 1
            self.send(200, data, "application/octet-stream")

        def do_GET(self):
            self.route("GET")

        def do_PUT(self):
            self.route("PUT")

        def do_DELETE(self):
            self.route("DELETE")

        def do_POST(self):
            self.route("POST")

    return H


def start(root, nn_port=0):
    """Start both servers on free loopback ports (the namenode on nn_port if
    given, e.g. to come back where it was); returns (nn, dn, stop)."""
    st = State(root)
    dn = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(st, "dn"))
    nn = ThreadingHTTPServer(("127.0.0.1", nn_port), make_handler(st, "nn"))
    dn.daemon_threads = nn.daemon_threads = True
    st.dn_port = dn.server_address[1]
    ts = [threading.Thread(target=s.serve_forever, daemon=True) for s in (nn, dn)]
    for t in ts:
        t.start()

    def stop():
        for s in (nn, dn):
            s.shutdown()
            s.server_close()
    return nn.server_address[1], dn.server_address[1], stop


def main():
    root, portfile = sys.argv[1], sys.argv[2]
    nn, dn, stop = start(root)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    with open(portfile + ".part", "w") as f:
        f.write("%d %d\n" % (nn, dn))
    os.rename(portfile + ".part", portfile)
    while not done.wait(0.5):
        pass
    stop()


if __name__ == "__main__":
    main()
