#!/usr/bin/env python3
"""A weft worker in Python 3, standard library only.

It speaks the worker protocol of docs/api.md: register, claim (waiting POLL_SECS when nothing fits),
run the job's command with `sh -c` in its own process group, heartbeat on a thread, poll for
cancellation, push stdout/stderr lines as batched log chunks, turn `::set-output key=value` lines
into outputs, and report complete/fail (error truncated to 4096 characters).

Env: SERVER_URL (http://localhost:3000), WORKER_LABELS (comma-separated), WORKER_ID
(hostname-random), LEASE_TTL_SECS (30), HEARTBEAT_SECS (ttl/3), POLL_SECS (2), WEFT_TOKEN (a
token with the worker role, when the server requires tokens; not passed on to jobs).
SIGTERM/SIGINT: stop claiming, finish the running job, exit 0.
"""
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER_URL = os.environ.get("SERVER_URL", "http://localhost:3000").rstrip("/")
LABELS = [l.strip() for l in os.environ.get("WORKER_LABELS", "").split(",") if l.strip()]
WORKER_ID = os.environ.get("WORKER_ID") or f"{socket.gethostname()}-{random.getrandbits(24):06x}"
LEASE_TTL_SECS = int(os.environ.get("LEASE_TTL_SECS", "30"))
HEARTBEAT_SECS = float(os.environ.get("HEARTBEAT_SECS", LEASE_TTL_SECS / 3))
POLL_SECS = float(os.environ.get("POLL_SECS", "2"))
TOKEN = os.environ.get("WEFT_TOKEN", "").strip()
CANCEL_POLL_SECS = 2.0
LOG_FLUSH_SECS = 0.25
KILL_GRACE_SECS = 5.0
MAX_ERROR = 4096
SET_OUTPUT = re.compile(r"^::set-output ([^=]+)=(.*?)\r?$")

stopping = threading.Event()


def say(msg):
    print(f"[{WORKER_ID}] {msg}", flush=True)


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body}")
        self.status = status


def call(method, path, body=None, timeout=10.0):
    """One JSON request. Raises ApiError on a non-2xx answer, OSError/URLError when unreachable."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"} if data is not None else {}
    if TOKEN:
        headers["authorization"] = f"Bearer {TOKEN}"
    req = urllib.request.Request(SERVER_URL + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            text = res.read().decode()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        raise ApiError(e.code, e.read().decode(errors="replace")) from None


def transient(err):
    return not isinstance(err, ApiError) or err.status >= 500 or err.status in (408, 429)


def backoff(n, cap=15.0):
    return min(cap, 0.5 * 2 ** min(n, 10)) * random.uniform(0.8, 1.2)


def truncate_error(head, stderr_tail):
    tail = stderr_tail.rstrip()
    if not tail:
        return head[:MAX_ERROR]
    sep = "; stderr:\n"
    if len(head) + len(sep) + len(tail) <= MAX_ERROR:
        return head + sep + tail
    room = MAX_ERROR - len(head) - len(sep) - 1
    return head + sep + "…" + tail[len(tail) - room:]


def env_name(*parts):
    return "_".join(re.sub(r"[^A-Za-z0-9]", "_", p).upper() for p in parts)


class JobRun:
    def __init__(self, job, lease, claimed_at):
        self.job, self.lease = job, lease
        self.lease_id = urllib.parse.quote(lease["lease_id"], safe="")
        self.expires_at = claimed_at + lease["ttl_secs"]
        self.lock = threading.Lock()
        self.flush_lock = threading.Lock()
        self.pending = []  # chunks not yet accepted by the server, in sequence order
        self.sequence = 0
        self.outputs = {}
        self.stderr_tail = ""
        self.done = threading.Event()  # the job's own threads stop
        self.aborted = threading.Event()  # cancelled or lease lost: stop reporting
        self.proc = None

    # -- logs
    def log(self, line, stream):
        with self.lock:
            self.pending.append({"sequence": self.sequence, "data": line + "\n", "stream": stream,
                                 "timestamp_ms": int(time.time() * 1000)})
            self.sequence += 1

    def flush(self):
        """Pushes everything buffered, in order. True when it all went out."""
        with self.flush_lock:  # one push at a time, or chunks could be dropped twice
            while not self.aborted.is_set():
                with self.lock:
                    batch = self.pending[:1000]
                if not batch:
                    return True
                try:
                    call("POST", f"/api/jobs/{self.lease_id}/logs", {"chunks": batch})
                except ApiError as e:
                    if e.status == 409:
                        self.abort("lease lost (409 on logs)")
                        return False
                    if transient(e):
                        return False
                    say(f"log chunks rejected, dropped: {e}")
                except OSError:
                    return False
                with self.lock:
                    del self.pending[:len(batch)]
            return False

    def flusher(self):
        while not self.done.wait(LOG_FLUSH_SECS):
            self.flush()

    # -- lease upkeep
    def heartbeats(self):
        while not self.done.wait(HEARTBEAT_SECS):
            sent = time.monotonic()
            try:
                call("POST", f"/api/jobs/{self.lease_id}/heartbeat", timeout=max(1.0, LEASE_TTL_SECS / 2))
                self.expires_at = sent + self.lease["ttl_secs"]
            except ApiError as e:
                if e.status == 409:
                    return self.abort("lease lost (409 on heartbeat)")
            except OSError as e:
                say(f"heartbeat failed: {e}")
            if time.monotonic() > self.expires_at:
                return self.abort("lease expired while the server was unreachable")

    def cancel_poll(self):
        # The run of the job held: a workflow may have several runs at once.
        path = "/api/jobs/{}/{}/cancelled?run={}".format(
            urllib.parse.quote(self.job["workflow_id"], safe=""), urllib.parse.quote(self.job["job_id"], safe=""),
            int(self.job["run_number"]))
        while not self.done.wait(CANCEL_POLL_SECS):
            try:
                if call("GET", path) is True:
                    return self.abort("cancelled")
            except (ApiError, OSError):
                pass

    def abort(self, why):
        if self.aborted.is_set():
            return
        say(f"aborting {self.job['workflow_id']}/{self.job['job_id']}: {why}")
        self.aborted.set()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            self.kill_group(signal.SIGTERM)
            threading.Timer(KILL_GRACE_SECS, self.kill_group, (signal.SIGKILL,)).start()

    def kill_group(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # -- the command
    def environment(self):
        job, upstream = self.job, self.job.get("upstream_outputs") or {}
        env = dict(os.environ)
        env.pop("WEFT_TOKEN", None)  # the worker's credential, not the job's
        env.update(job.get("env") or {})
        env.update({
            "WEFT_WORKFLOW_ID": job["workflow_id"],
            "WEFT_JOB_ID": job["job_id"],
            "WEFT_RUN": str(job.get("run_number", "")),
            "WEFT_ATTEMPT": str(job["attempt"]),
            "WEFT_UPSTREAM_OUTPUTS": json.dumps(upstream),
        })
        for up_job, outputs in sorted(upstream.items()):
            for key, value in sorted(outputs.items()):
                env[env_name("UPSTREAM", up_job, key)] = str(value)
        return env

    def read(self, pipe, stream):
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            if stream == "stdout":
                m = SET_OUTPUT.match(line)
                if m and m.group(1).strip():
                    self.outputs[m.group(1).strip()] = m.group(2)
            else:
                self.stderr_tail = (self.stderr_tail + line + "\n")[-8192:]
            self.log(line, stream)
        pipe.close()

    def run(self):
        threads = [threading.Thread(target=f, daemon=True) for f in (self.flusher, self.heartbeats, self.cancel_poll)]
        for t in threads:
            t.start()
        try:
            self.proc = subprocess.Popen(["sh", "-c", self.job["command"]], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         env=self.environment(), start_new_session=True)
            readers = [threading.Thread(target=self.read, args=(self.proc.stdout, "stdout"), daemon=True),
                       threading.Thread(target=self.read, args=(self.proc.stderr, "stderr"), daemon=True)]
            for r in readers:
                r.start()
            code = self.proc.wait()
            for r in readers:
                r.join(timeout=2)
        except OSError as e:
            code, self.stderr_tail = 127, f"could not start sh: {e}"
        if self.aborted.is_set():
            self.done.set()
            return
        if code == 0:
            path, body = "complete", {"outputs": self.outputs}
        else:
            head = (f"command exited with code {code}" if code > 0
                    else f"command was killed by signal {signal.Signals(-code).name}")
            path, body = "fail", {"error": truncate_error(head, self.stderr_tail), "retryable": True}
        self.report(path, body)
        self.done.set()

    def report(self, path, body):
        """Flushes logs, then reports; retried until it lands or the lease is known to be gone."""
        failures = 0
        while not self.aborted.is_set():
            if time.monotonic() > self.expires_at:
                return say("lease expired before the result could be reported; the job will be re-run")
            if not self.flush():
                failures += 1
                time.sleep(backoff(failures))
                continue
            try:
                call("POST", f"/api/jobs/{self.lease_id}/{path}", body)
                return say(f"{self.job['workflow_id']}/{self.job['job_id']}: reported {path}")
            except ApiError as e:
                if e.status == 409:
                    return say("lease lost (409); result dropped")
                if not transient(e):
                    return say(f"server refused the {path} report: {e}")
            except OSError as e:
                say(f"report failed, retrying: {e}")
            failures += 1
            time.sleep(backoff(failures))


def main():
    def on_signal(signum, _frame):
        if stopping.is_set():
            sys.exit(128 + signum)
        say("signal received: finishing the running job, then exiting")
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    failures = 0
    while not stopping.is_set():
        try:
            call("POST", "/api/workers/register", {"worker_id": WORKER_ID, "labels": LABELS})
            break
        except (ApiError, OSError) as e:
            failures += 1
            say(f"register failed ({e}); retrying")
            stopping.wait(backoff(failures))
    say(f"weft python worker {WORKER_ID} started: labels {LABELS}, server {SERVER_URL}")

    failures = 0
    while not stopping.is_set():
        sent = time.monotonic()
        try:
            claim = call("POST", "/api/jobs/claim",
                         {"worker_id": WORKER_ID, "labels": LABELS, "lease_ttl_secs": LEASE_TTL_SECS})
            failures = 0
        except (ApiError, OSError) as e:
            failures += 1
            say(f"claim failed ({e}); retrying")
            stopping.wait(backoff(failures))
            continue
        if claim is None:
            stopping.wait(POLL_SECS)
            continue
        job = claim["job"]
        say(f"running {job['workflow_id']}/{job['job_id']} (attempt {job['attempt']})")
        JobRun(job, claim["lease"], sent).run()
    say("stopped")


if __name__ == "__main__":
    main()
