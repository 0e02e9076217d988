"""receivers.py - real receivers for alert delivery tests, on loopback ports.

    WebhookReceiver(secret)   an HTTP server that records every POST (headers,
                              body, arrival time, whether its HMAC matched),
                              answers from a script of statuses, and can hold
                              its answers behind a gate
    SmtpReceiver(...)         Debian's aiosmtpd: plain, or STARTTLS required
                              with AUTH (a self-signed certificate made with
                              openssl by make_cert), recording every mail
    make_cert(dir)            a self-signed certificate for 127.0.0.1

Both are context managers and stop their threads on exit.
"""
import hashlib
import hmac
import json
import os
import socket
import ssl
import subprocess
import threading
import time
from email import message_from_bytes
from email.policy import default as email_policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_cert(folder):
    """cert.pem and key.pem for CN=localhost, IP 127.0.0.1; returns paths."""
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", key, "-out", cert],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


class WebhookReceiver:
    """statuses: answers in order (a status, or (status, {header: value})),
    then `then` for every later request.
    hold(): later answers wait until release() (the request is recorded
    first, so a test can count arrivals while the sender waits)."""

    def __init__(self, secret="", statuses=(), then=200):
        self.secret = secret.encode()
        self.statuses = list(statuses)
        self.then = then
        self.requests = []
        self.cv = threading.Condition()
        self.gate = threading.Event()
        self.gate.set()
        self.port = None
        self.server = None

    def url(self, path="/hook"):
        return f"http://127.0.0.1:{self.port}{path}"

    def hold(self):
        self.gate.clear()

    def release(self):
        self.gate.set()

    def wait_count(self, n, timeout):
        """Wait until n requests arrived; returns the count seen."""
        end = time.time() + timeout
        with self.cv:
            while len(self.requests) < n and time.time() < end:
                self.cv.wait(max(0.01, end - time.time()))
            return len(self.requests)

    def __enter__(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                want = "sha256=" + hmac.new(outer.secret, body, hashlib.sha256).hexdigest()
                rec = {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                    "at": time.time(),
                    "signed_ok": hmac.compare_digest(
                        self.headers.get("X-Orrery-Signature", ""), want),
                }
                try:
                    rec["json"] = json.loads(body)
                except ValueError:
                    rec["json"] = None
                with outer.cv:
                    outer.requests.append(rec)
                    status = outer.statuses.pop(0) if outer.statuses else outer.then
                    outer.cv.notify_all()
                outer.gate.wait()
                extra = {}
                if isinstance(status, tuple):
                    status, extra = status
                payload = b'{"ok":true}' if status < 300 else b"receiver says no"
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


class SmtpReceiver:
    """tls=(cert, key): STARTTLS required, and AUTH (user/password) required
    after it. implicit_tls=(cert, key): TLS from the first byte (smtps://),
    AUTH required. reject: recipients answered 550."""

    def __init__(self, tls=None, user=None, password=None, reject=(), implicit_tls=None):
        self.tls, self.user, self.password = tls, user, password
        self.implicit_tls = implicit_tls
        self.reject = set(reject)
        self.mails = []
        self.cv = threading.Condition()
        self.port = free_port()
        self.controller = None

    def url(self):
        scheme = "smtps" if self.implicit_tls else "smtp"
        return f"{scheme}://127.0.0.1:{self.port}"

    def wait_count(self, n, timeout):
        end = time.time() + timeout
        with self.cv:
            while len(self.mails) < n and time.time() < end:
                self.cv.wait(max(0.01, end - time.time()))
            return len(self.mails)

    def __enter__(self):
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult, LoginPassword

        outer = self

        class Handler:
            async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
                if address in outer.reject:
                    return "550 5.1.1 no such user"
                envelope.rcpt_tos.append(address)
                return "250 OK"

            async def handle_DATA(self, server, session, envelope):
                msg = message_from_bytes(envelope.original_content or envelope.content,
                                         policy=email_policy)
                with outer.cv:
                    outer.mails.append({
                        "mail_from": envelope.mail_from,
                        "rcpt_tos": list(envelope.rcpt_tos),
                        "msg": msg,
                        "raw": envelope.original_content or envelope.content,
                        "tls": session.ssl is not None
                        or server.transport.get_extra_info("ssl_object") is not None,
                        "auth": session.authenticated,
                        "at": time.time(),
                    })
                    outer.cv.notify_all()
                return "250 Message accepted for delivery"

        def authenticator(server, session, envelope, mechanism, auth_data):
            ok = (isinstance(auth_data, LoginPassword)
                  and auth_data.login == (outer.user or "").encode()
                  and auth_data.password == (outer.password or "").encode())
            # handled=False: the server answers 535 itself
            return AuthResult(success=ok, handled=False)

        kw = {}
        if self.tls:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(*self.tls)
            kw = dict(tls_context=ctx, require_starttls=True, authenticator=authenticator,
                      auth_required=True, auth_require_tls=True)
        if self.implicit_tls:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(*self.implicit_tls)
            # the whole session is TLS: AUTH needs no STARTTLS first
            kw = dict(ssl_context=ctx, authenticator=authenticator, auth_required=True,
                      auth_require_tls=False, server_hostname="127.0.0.1")
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port, **kw)
        self.controller.start()
        return self

    def __exit__(self, *exc):
        self.controller.stop()
