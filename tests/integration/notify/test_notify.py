"""test_notify.py - alert messages sent by orr_notify to real receivers on
loopback: a webhook receiver that checks the HMAC, and Debian's aiosmtpd
with STARTTLS and AUTH, or TLS from the first byte (smtps://), with a
certificate made by openssl for the test.

    test_notify.py BUILD_DIR

Each attempt runs through bin/notify_it_send, which prints the outcome the
sender would record (delivered, retry with its back-off, failed).
"""
import json
import subprocess
import sys
import tempfile

from receivers import SmtpReceiver, WebhookReceiver, free_port, make_cert

BUILD = sys.argv[1]
TOOL = f"{BUILD}/bin/notify_it_send"

ALERT = {
    "alert_id": 4, "delivery_id": 9, "dedup_key": "failed:workflow:nightly:1764547200000",
    "seq": 1, "rule": "nightly-failures", "event": "failed", "severity": "critical",
    "scope_kind": "workflow", "scope": "nightly", "summary": "3 tasks failed in nightly",
    "count": 3, "first_at_ms": 1764547200000, "last_at_ms": 1764547201000, "task_id": 12,
    "instance_id": 345, "details": {"instances": [345, 346, 347]},
    "url": "http://console.example/alerts/4",
}


def send(kind, config, alert=ALERT, ca=None, attempts=1):
    args = [TOOL, kind, json.dumps(config), json.dumps(alert)]
    if ca or attempts != 1:
        args += [ca or "", str(attempts)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 2), p.stderr
    return json.loads(p.stdout)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}")


def webhook_tests():
    with WebhookReceiver(secret="k3y") as rx:
        out = send("webhook", {"url": rx.url(), "secret": "k3y", "headers": {"X-Team": "data"}})
        check(out["outcome"] == "delivered" and out["code"] == 200, f"webhook delivered: {out}")
        r = rx.requests[-1]
        check(r["signed_ok"], "the receiver's HMAC of the body matches X-Orrery-Signature")
        h = r["headers"]
        check(h["x-orrery-dedup-key"] == ALERT["dedup_key"] + ":1", "dedup key header")
        check(h["x-orrery-delivery"] == "9", "delivery header")
        check(h["x-team"] == "data" and h["content-type"] == "application/json",
              "the channel's header and the JSON content type")
        j = r["json"]
        check(j["alert_id"] == 4 and j["count"] == 3 and j["scope"] == "nightly"
              and j["details"]["instances"] == [345, 346, 347]
              and j["first_at"] == "2025-12-01T00:00:00.000Z", f"body fields: {j}")

    # a wrong secret: the receiver can tell
    with WebhookReceiver(secret="right") as rx:
        send("webhook", {"url": rx.url(), "secret": "wrong"})
        check(not rx.requests[-1]["signed_ok"], "a body signed with another key does not verify")

    with WebhookReceiver(statuses=[500, 429, 404, 408]) as rx:
        out = send("webhook", {"url": rx.url()})
        check(out["outcome"] == "retry" and out["code"] == 500 and out["retry_in_ms"] == 1000
              and "HTTP 500" in out["error"], f"500 on the first attempt: retry in 1 s ({out})")
        out = send("webhook", {"url": rx.url()}, attempts=3)
        check(out["outcome"] == "retry" and out["retry_in_ms"] == 4000,
              f"429 on the third attempt: retry in 4 s ({out})")
        out = send("webhook", {"url": rx.url()})
        check(out["outcome"] == "failed" and out["code"] == 404, f"404: failed at once ({out})")
        out = send("webhook", {"url": rx.url()}, attempts=8)
        check(out["outcome"] == "failed" and "after 8 attempts" in out["error"],
              f"408 on the last attempt: failed ({out})")

    with WebhookReceiver(statuses=[(429, {"Retry-After": "7"}), (503, {"Retry-After": "900"})]) as rx:
        out = send("webhook", {"url": rx.url()})
        check(out["outcome"] == "retry" and out["retry_in_ms"] == 7000,
              f"429 with Retry-After: 7 waits 7 s, not 1 s ({out})")
        out = send("webhook", {"url": rx.url()})
        check(out["outcome"] == "retry" and out["retry_in_ms"] == 60000,
              f"a Retry-After past the cap waits 60 s ({out})")

    out = send("webhook", {"url": f"http://127.0.0.1:{free_port()}/"})
    check(out["outcome"] == "retry" and out["code"] == 0, f"nobody listening: retry ({out})")

    with WebhookReceiver() as rx:
        out = send("chat", {"url": rx.url("/slack"), "format": "slack"})
        j = rx.requests[-1]["json"]
        check(out["outcome"] == "delivered" and list(j) == ["text"]
              and j["text"].startswith("[Orrery critical] 3 tasks failed in nightly"),
              f"slack body: {j}")
        send("chat", {"url": rx.url("/teams"), "format": "teams"})
        j = rx.requests[-1]["json"]
        check(j["@type"] == "MessageCard" and "rule: nightly-failures" in j["text"],
              f"teams body: {j}")

    out = send("webhook", {"url": "gopher://x/"})
    check(out["outcome"] == "invalid" and out["field"] == "config.url", f"bad url: {out}")


def smtp_tests(tmp):
    cert, key = make_cert(tmp)
    cfg = {"starttls": True, "username": "alerts", "password": "pw", "from": "orrery@ex.org",
           "to": ["ops@ex.org", "dev@ex.org"]}
    with SmtpReceiver(tls=(cert, key), user="alerts", password="pw") as rx:
        cfg["smtp_url"] = rx.url()
        out = send("email", cfg, ca=cert)
        check(out["outcome"] == "delivered", f"mail over STARTTLS with AUTH delivered: {out}")
        check(rx.wait_count(1, 10) == 1, "the SMTP server holds one mail")
        m = rx.mails[0]
        check(m["tls"] and m["auth"], "the mail came over TLS after AUTH")
        check(m["mail_from"] == "orrery@ex.org" and m["rcpt_tos"] == ["ops@ex.org", "dev@ex.org"],
              f"envelope: {m['mail_from']} -> {m['rcpt_tos']}")
        msg = m["msg"]
        check(msg["Subject"] == "[Orrery critical] 3 tasks failed in nightly",
              f"subject: {msg['Subject']}")
        check(msg["From"] == "orrery@ex.org" and msg["To"] == "ops@ex.org, dev@ex.org",
              "From and To headers")
        check(msg["Date"] is not None and msg["X-Orrery-Dedup-Key"] == ALERT["dedup_key"] + ":1",
              "Date and X-Orrery-Dedup-Key headers")
        mid = msg["Message-ID"]
        check(mid.startswith("<orrery.") and mid.endswith(".1@ex.org>"), f"Message-ID {mid}")
        body = msg.get_content()
        check("3 tasks failed in nightly" in body and "count: 3" in body, "the body's text")
        # the same alert again (a resend after a crash): the same Message-ID
        send("email", cfg, ca=cert)
        rx.wait_count(2, 10)
        check(rx.mails[1]["msg"]["Message-ID"] == mid, "a resend carries the same Message-ID")

        bad = dict(cfg, password="nope")
        out = send("email", bad, ca=cert)
        check(out["outcome"] == "failed", f"refused credentials: failed at once ({out})")
        # an untrusted certificate (no CA given): not delivered, retried
        out = send("email", cfg)
        check(out["outcome"] == "retry", f"an unverified certificate is not trusted ({out})")

    with SmtpReceiver(implicit_tls=(cert, key), user="alerts", password="pw") as rx:
        out = send("email", dict(cfg, smtp_url=rx.url(), starttls=False), ca=cert)
        check(out["outcome"] == "delivered" and rx.wait_count(1, 10) == 1
              and rx.mails[0]["tls"] and rx.mails[0]["auth"],
              f"smtps:// (TLS from the first byte) with AUTH delivered: {out}")

    with SmtpReceiver(reject=["gone@ex.org"]) as rx:
        plain = {"smtp_url": rx.url(), "from": "orrery@ex.org", "to": ["ops@ex.org"]}
        out = send("email", plain)
        check(out["outcome"] == "delivered" and rx.wait_count(1, 10) == 1,
              f"plain SMTP without auth delivered: {out}")
        out = send("email", dict(plain, starttls=True))
        check(out["outcome"] == "failed", f"STARTTLS asked of a server without it: failed ({out})")
        out = send("email", dict(plain, to=["gone@ex.org"]))
        check(out["outcome"] == "failed" and out["code"] == 550,
              f"a recipient refused with 550: failed ({out})")
        check(len(rx.mails) == 1, "no mail for the refused attempts")


def main():
    webhook_tests()
    with tempfile.TemporaryDirectory(prefix="orr-notify-") as tmp:
        smtp_tests(tmp)
    print("notify: all passed")


if __name__ == "__main__":
    main()
