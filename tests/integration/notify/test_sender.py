"""test_sender.py - keplerd's alert sender with halleyd's outbox and real
receivers on loopback (a webhook receiver that checks the HMAC, Debian's
aiosmtpd with STARTTLS and AUTH).

    test_sender.py BUILD_DIR delivery|kill|stop

delivery: alerts raised through halleyd (RaiseAlert) reach a signed webhook,
a Slack-format chat hook and a mailbox over STARTTLS with AUTH; a receiver
answering 500 then 200 gets the message twice and the delivery ends
delivered after 2 attempts; a receiver that always answers 500 gets 8
attempts and the delivery ends failed with the last error kept. Three
raises of one key before the sender starts make one message with count 3.

kill: 12 alerts to a receiver that holds its answers behind a gate; once
the receiver holds as many requests as the sender sends at once
(notify_inflight = 4), keplerd is killed with SIGKILL, so the kill lands
mid-delivery by construction. A new keplerd takes over: after it every
alert has arrived, the only duplicates are the 4 that were in flight, and
each duplicate carries the same dedup key and delivery id as its first copy.

stop: keplerd stopped with SIGTERM while 3 transfers are held hands them
back to the outbox (pending, due now, the reason kept) before it exits; the
next keplerd delivers them.

Waits are for states (receiver counts, halleyd's delivery states) with
generous deadlines; the back-off's first wait is set to 50 ms
([kepler] notify_backoff) so 8 attempts take seconds, not minutes.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import orrery_it  # noqa: E402
from receivers import SmtpReceiver, WebhookReceiver, make_cert  # noqa: E402

FAILURES = []


def check(cond, what):
    if cond:
        print(f"ok: {what}", flush=True)
    else:
        FAILURES.append(what)
        print(f"FAIL: {what}", flush=True)


def wait_until(pred, timeout, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class Sender:
    def __init__(self, p):
        self.p = p
        self.zk = orrery_it.require_env("ORRERY_ZK") + f"/notify-it-{os.getpid()}"
        self.env = dict(os.environ)
        self.env.update({"NOTIFY_IT_HALLEY": f"127.0.0.1:{p.halley_port}",
                         "NOTIFY_IT_TOKEN": p.token, "NOTIFY_IT_ZK": self.zk})
        self.keplers = {}
        self.tool("zk-root")
        self.tool("team", "alerts")

    def tool(self, *args):
        r = subprocess.run([self.p.bin("notify_it_tool"), *map(str, args)], env=self.env,
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"notify_it_tool {args[0]}: {r.stderr.strip()}")
        return r.stdout

    def channel(self, name, kind, config):
        return int(self.tool("channel", "alerts", name, kind, json.dumps(config)))

    def rule(self, name, channels, quiet=300, group=0):
        return int(self.tool("rule", "alerts", name, ",".join(map(str, channels)), quiet, group))

    def raise_(self, rule, key, summary="a task failed"):
        return int(self.tool("raise", rule, key, summary))

    def alerts(self):
        return [json.loads(x) for x in self.tool("alerts").splitlines()]

    def deliveries(self):
        return [d for a in self.alerts() for d in a["deliveries"]]

    def start_kepler(self, name, inflight=16, ca_file="", lease="3s"):
        env = dict(os.environ)
        env.update({
            "ORRERY_KEPLER_HALLEY": f"127.0.0.1:{self.p.halley_port}",
            "ORRERY_KEPLER_HALLEY_TOKEN": self.p.token,
            "ORRERY_KEPLER_ZK": self.zk,
            "ORRERY_KEPLER_ID": name,
            "ORRERY_KEPLER_ZK_SESSION_TIMEOUT": "2s",
            "ORRERY_KEPLER_NOTIFY_INFLIGHT": str(inflight),
            "ORRERY_KEPLER_NOTIFY_LEASE": lease,
            "ORRERY_KEPLER_NOTIFY_POLL": "100ms",
            "ORRERY_KEPLER_NOTIFY_BACKOFF": "50ms",
            "ORRERY_KEPLER_NOTIFY_CA_FILE": ca_file,
            "ORRERY_KEPLER_CONSOLE_URL": "http://console.example/",
            "ORRERY_LOG_LEVEL": "info",
        })
        proc = self.p._spawn([self.p.bin("keplerd"), "run"], env, f"keplerd-{name}.log")
        self.keplers[name] = proc
        ok = wait_until(lambda: "alert delivery: sending" in self.p.log(f"keplerd-{name}.log"),
                        30)
        if not ok:
            raise RuntimeError(f"keplerd {name} did not start sending within 30 s")
        return proc

    def log_tail(self):
        for name in self.keplers:
            print(f"--- keplerd-{name}.log (tail)")
            print("\n".join(self.p.log(f"keplerd-{name}.log").splitlines()[-30:]))


def delivery(s, tmp):
    cert, key = make_cert(tmp)
    with WebhookReceiver(secret="hmac-key") as hook, \
            WebhookReceiver(statuses=[500], then=200) as flaky, \
            WebhookReceiver(then=500) as broken, \
            SmtpReceiver(tls=(cert, key), user="alerts", password="pw") as smtp:
        ch_hook = s.channel("hook", "webhook", {"url": hook.url(), "secret": "hmac-key"})
        ch_chat = s.channel("chat", "chat", {"url": hook.url("/slack"), "format": "slack"})
        ch_mail = s.channel("mail", "email", {
            "smtp_url": smtp.url(), "starttls": True, "username": "alerts", "password": "pw",
            "from": "orrery@ex.org", "to": ["ops@ex.org"]})
        ch_flaky = s.channel("flaky", "webhook", {"url": flaky.url()})
        ch_broken = s.channel("broken", "webhook", {"url": broken.url()})
        r_main = s.rule("main", [ch_hook, ch_chat, ch_mail])
        r_flaky = s.rule("flaky", [ch_flaky])
        r_broken = s.rule("broken", [ch_broken])
        # grouping: three raises of one key before any sender runs (so none
        # can be sent in between, whatever the machine's speed): one message
        r_group = s.rule("grouped", [ch_hook], quiet=300, group=0)
        for _ in range(3):
            s.raise_(r_group, "failed:workflow:grouped:1", "grouped failures")
        s.start_kepler("k1", ca_file=cert)
        check(hook.wait_count(1, 30) == 1, "one message for three raises")
        g = hook.requests[0]["json"]
        check(g["count"] == 3 and g["dedup_key"] == "failed:workflow:grouped:1",
              f"the grouped message counts 3: {g['count']}")
        hook.requests.clear()

        aid = s.raise_(r_main, "failed:workflow:nightly:1", "nightly failed")
        check(hook.wait_count(2, 30) == 2, "the webhook and the chat hook each got a message")
        by_path = {r["path"]: r for r in hook.requests}
        h = by_path.get("/hook")
        check(h is not None and h["signed_ok"], "the webhook's HMAC matches its body")
        check(h is not None and h["headers"].get("x-orrery-dedup-key")
              == "failed:workflow:nightly:1:1", "the webhook carries the dedup key and seq")
        j = (h or {}).get("json") or {}
        check(j.get("alert_id") == aid and j.get("rule") == "main" and j.get("count") == 1
              and j.get("url") == f"http://console.example/alerts/history?alert={aid}",
              f"the webhook body names the alert, its rule and count: {j}")
        c = by_path.get("/slack")
        check(c is not None and c["json"]["text"].startswith("[Orrery critical] nightly failed"),
              "the chat hook got a Slack text")
        check(smtp.wait_count(1, 30) == 1, "the mailbox got one mail")
        if smtp.mails:
            m = smtp.mails[0]
            check(m["tls"] and m["auth"], "the mail came over STARTTLS after AUTH")
            check(m["msg"]["Subject"] == "[Orrery critical] nightly failed"
                  and m["msg"]["X-Orrery-Dedup-Key"] == "failed:workflow:nightly:1:1",
                  "the mail's subject and dedup header")

        s.raise_(r_flaky, "failed:workflow:flaky:1")
        check(flaky.wait_count(2, 30) == 2, "500 then 200: the message was sent twice")

        s.raise_(r_broken, "failed:workflow:broken:1")
        check(broken.wait_count(8, 60) == 8, "always 500: 8 attempts")

        def states():
            return {d["channel_id"]: d for d in s.deliveries()}

        def settled():
            st = states()
            return (st.get(ch_flaky, {}).get("state") == "delivered"
                    and st.get(ch_broken, {}).get("state") == "failed"
                    and all(st.get(c, {}).get("state") == "delivered"
                            for c in (ch_hook, ch_chat, ch_mail)))
        wait_until(settled, 30)
        st = states()
        check(st[ch_flaky]["state"] == "delivered" and st[ch_flaky]["attempts"] == 2,
              f"the flaky channel's delivery: delivered after 2 attempts ({st[ch_flaky]})")
        check(st[ch_broken]["state"] == "failed" and st[ch_broken]["attempts"] == 8
              and "HTTP 500" in st[ch_broken]["last_error"],
              f"the broken channel's delivery: failed after 8 attempts ({st[ch_broken]})")
        check(all(st[c]["state"] == "delivered" for c in (ch_hook, ch_chat, ch_mail)),
              "the webhook, chat and mail deliveries are delivered")
        check(len(broken.requests) == 8, "no attempt after the delivery failed")


# The held tests give the sender a lease of HELD_LEASE: a transfer times out
# one second before its lease ends, and a held request that timed out would be
# sent again before the test has seen the first ones arrive (a slow or loaded
# machine takes seconds between the sends). The kill test's restart then waits
# for the lease of the killed sender's claims to run out.
HELD_LEASE = "10s"


def kill(s, tmp):
    n, inflight = 12, 4
    with WebhookReceiver(secret="k") as hook:
        hook.hold()
        s.start_kepler("k1", inflight=inflight, lease=HELD_LEASE)
        ch = s.channel("held", "webhook", {"url": hook.url(), "secret": "k", "timeout_s": 30})
        r = s.rule("held", [ch])
        for i in range(n):
            s.raise_(r, f"failed:workflow:w{i}:1")
        got = hook.wait_count(inflight, 30)
        check(got == inflight, f"the receiver holds {inflight} requests ({got})")
        first = {rq["headers"]["x-orrery-dedup-key"] for rq in hook.requests}
        s.keplers["k1"].send_signal(signal.SIGKILL)
        s.keplers["k1"].wait()
        check(len(hook.requests) == inflight, "no more requests arrived than were in flight")
        hook.release()
        s.start_kepler("k2", inflight=inflight, lease=HELD_LEASE)

        def all_delivered():
            ds = s.deliveries()
            return len(ds) == n and all(d["state"] == "delivered" for d in ds)
        check(wait_until(all_delivered, 60), "every delivery ends delivered after the restart")
        keys = [rq["headers"]["x-orrery-dedup-key"] for rq in hook.requests]
        want = {f"failed:workflow:w{i}:1:1" for i in range(n)}
        check(set(keys) == want, "every alert arrived")
        dups = {k for k in keys if keys.count(k) > 1}
        check(dups == first, f"the duplicates are exactly the {inflight} in flight at the kill "
              f"({sorted(dups)})")
        check(all(keys.count(k) <= 2 for k in keys), "nothing arrived more than twice")
        for k in dups:
            copies = [rq for rq in hook.requests if rq["headers"]["x-orrery-dedup-key"] == k]
            check(len({c["headers"]["x-orrery-delivery"] for c in copies}) == 1
                  and all(c["signed_ok"] for c in copies),
                  f"both copies of {k} carry the same delivery id and a valid signature")
        attempts = {d["attempts"] for d in s.deliveries()}
        check(attempts <= {1, 2}, f"attempts are 1, or 2 for the resent ones ({attempts})")


def stop(s, tmp):
    inflight = 3
    with WebhookReceiver(secret="k") as hook:
        hook.hold()
        s.start_kepler("k1", inflight=inflight, lease=HELD_LEASE)
        ch = s.channel("held", "webhook", {"url": hook.url(), "secret": "k", "timeout_s": 30})
        r = s.rule("held", [ch])
        for i in range(inflight):
            s.raise_(r, f"failed:workflow:s{i}:1")
        check(hook.wait_count(inflight, 30) == inflight, f"the receiver holds {inflight} requests")
        proc = s.keplers["k1"]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        ds = s.deliveries()
        check(len(ds) == inflight and all(d["state"] == "pending" for d in ds)
              and all("stopped during the transfer" in d["last_error"] for d in ds),
              f"a clean stop hands its transfers back to the outbox at once ({ds})")
        hook.release()
        t0 = time.time()
        s.start_kepler("k2", inflight=inflight, lease=HELD_LEASE)

        def all_delivered():
            ds = s.deliveries()
            return len(ds) == inflight and all(d["state"] == "delivered" for d in ds)
        check(wait_until(all_delivered, 60), "the next keplerd delivers them")
        print(f"(resent {time.time() - t0:.2f} s after the restart; the lease is {HELD_LEASE})")


def main():
    modes = {"delivery": delivery, "kill": kill, "stop": stop}
    if len(sys.argv) != 3 or sys.argv[2] not in modes:
        print("usage: test_sender.py BUILD_DIR delivery|kill|stop", file=sys.stderr)
        return 2
    orrery_it.require_env("ORRERY_ZK")
    with orrery_it.Platform(sys.argv[1], galaxies=0) as p, \
            tempfile.TemporaryDirectory(prefix="orr-sender-") as tmp:
        s = Sender(p)
        try:
            modes[sys.argv[2]](s, tmp)
        except Exception as e:  # report, then fail
            FAILURES.append(f"exception: {e!r}")
            print(f"FAIL exception: {e!r}", flush=True)
        if FAILURES:
            s.log_tail()
            print(f"--- kept logs in {p.tmp}")
    print(f"{len(FAILURES)} failed", flush=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
