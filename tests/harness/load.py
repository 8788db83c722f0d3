# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bounded, steady stream of completions through a front door, while a test changes the cluster (tests only).

    with Load("http://10.213.7.41:8081", model="glm", requests=2000, seconds=300) as load:
        ...  # roll, add or remove an instance
    print(load.report("roll decode"))

``workers`` threads send one completion after another, together at most ``rate`` a second (the n-th not before n /
``rate`` seconds; None: as fast as the cluster answers), until ``requests`` were sent, ``seconds`` passed or the block
ends, whichever is first: bounded in count and time. A steady stream, not a flood: on the harness's two cores a flood
took the CPU from the change under test (a roll took twice as long) and made the figures the machine's. Send it only to loopback or to the harness's own
network. Each request's start, end and outcome is kept; the report gives requests sent, failed (with the first
errors), throughput overall and its dip: the lowest throughput of a one-second window against the median
window (1.0: no dip). Every body is read whole: a 200 with no text is a failure. With ``stream_every`` N, every N-th
request streams: a stream is answered when its last chunk has a finish reason and [DONE] follows; one cut after its
start that ends with an error event (the front door's finish_reason "error" and an SSE error) is counted apart, as
cut; one that ends silently, or with no token, is a failure.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import urllib.error
import urllib.request

# Requests a second over all workers, by default (about what the pd_a2 harness answered while a change ran beside it).
RATE = 20


class Load:
    def __init__(self, url, model, requests=2000, seconds=300, workers=4, key=None, max_tokens=4, timeout=30, prompt="steady load",
                 rate=RATE, stream_every=0):
        """``prompt``: one prompt for every request, or a function of the request's number (a shared-prefix workload:
        the same long prefix and a suffix of its own, so each request stores new blocks and looks them up)."""
        self.url = url.rstrip("/") + "/v1/completions"
        self.prompt, self.model, self.max_tokens = prompt, model, max_tokens
        self.headers = {"Content-Type": "application/json"}
        if key:
            self.headers["Authorization"] = "Bearer " + key
        self.limit, self.seconds, self.timeout, self.rate = requests, seconds, timeout, rate
        self.stream_every = stream_every
        self.results, self.lock, self.stop = [], threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _worker in range(workers)]
        self.started = None

    def __enter__(self):
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stop.set()
        for thread in self.threads:
            thread.join(self.timeout + 5)

    def wait(self):
        """Until the request count or the duration is reached (the block would otherwise end the load at once)."""
        for thread in self.threads:
            thread.join(self.seconds + self.timeout + 5)

    def _claim(self):
        with self.lock:
            if self.stop.is_set() or len(self.results) >= self.limit or time.monotonic() - self.started > self.seconds:
                return None
            number = len(self.results)
            due = number / self.rate if self.rate else 0.0  # seconds after the start this request may go
            entry = {"start": max(due, time.monotonic() - self.started), "number": number}
            self.results.append(entry)
            return entry

    def _run(self):
        while True:
            entry = self._claim()
            if entry is None:
                return
            # the request's turn; when the block ends first, it is not sent
            if self.stop.wait(max(0.0, self.started + entry["start"] - time.monotonic())):
                with self.lock:
                    self.results.remove(entry)
                return
            prompt = self.prompt(entry["number"]) if callable(self.prompt) else self.prompt
            stream = bool(self.stream_every) and entry["number"] % self.stream_every == self.stream_every - 1
            entry["stream"] = stream
            body = json.dumps({"model": self.model, "prompt": prompt, "max_tokens": self.max_tokens, "stream": stream}).encode()
            request = urllib.request.Request(self.url, data=body, headers=self.headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                    text = answer.read().decode()
                entry["error"], entry["cut"] = streamed(text) if stream else (answered(text), False)
            except urllib.error.HTTPError as err:
                entry["error"] = "HTTP %d: %s" % (err.code, err.read().decode(errors="replace")[:160])
            except (OSError, ValueError) as err:
                entry["error"] = "%s: %s" % (type(err).__name__, err)
            entry["end"] = time.monotonic() - self.started

    def cut(self):
        return [r for r in self.results if r.get("cut")]

    def sent(self):
        return len(self.results)

    def failed(self):
        return [r for r in self.results if r.get("error")]

    def report(self, what):
        """{what, sent, failed, errors, seconds, per_second, dip, line}: measured figures, no judgement."""
        done = [r for r in self.results if "end" in r]
        seconds = max((r["end"] for r in done), default=0.0)
        windows = [0] * (int(seconds) + 1)
        for result in done:
            if not result.get("error"):
                windows[int(result["end"])] += 1
        inner = windows[1:-1] or windows  # the first and last windows are partial
        median = statistics.median(inner) if inner else 0
        dip = round(min(inner) / median, 2) if median else 0.0
        failed = self.failed()
        errors = sorted({r["error"] for r in failed})[:3]
        per_second = round(len(done) / seconds, 1) if seconds else 0.0
        streams = ", %d of them streamed (%d cut after their start, each ended with an error event)" % (
            sum(bool(r.get("stream")) for r in self.results), len(self.cut())) if self.stream_every else ""
        line = ("%s under load: %d requests sent%s, %d failed, %.1f requests/s, lowest 1-s window %d against a median of %s "
                "(dip %.2f)%s" % (what, len(self.results), streams, len(failed), per_second, min(inner) if inner else 0, median,
                                  dip, "; errors: " + " | ".join(errors) if errors else ""))
        return {"what": what, "sent": len(self.results), "failed": len(failed), "errors": errors, "seconds": round(seconds, 1),
                "per_second": per_second, "dip": dip, "cut": len(self.cut()), "line": line}


def answered(text):
    """None for a completion with text, else what is wrong with it."""
    return None if json.loads(text or "{}").get("choices", [{}])[0].get("text") else "HTTP 200 with no text"


def streamed(text):
    """(what is wrong, cut): a stream whose last choice has a finish reason other than "error" and ends with [DONE] is
    answered; one ending with finish_reason "error" and an SSE error event after its first token is cut, not failed."""
    events = [line[len("data:"):].strip() for line in text.splitlines() if line.startswith("data:")]
    chunks = [json.loads(e) for e in events if e != "[DONE]"]
    choices = [c["choices"][0] for c in chunks if c.get("choices")]
    errors = [c["error"] for c in chunks if "error" in c]
    tokens = [c for c in choices if c.get("text")]
    if not events or events[-1] != "[DONE]" or not choices:
        return "a stream that ended without [DONE] or without a choice: %r" % text[-160:], False
    finish = choices[-1].get("finish_reason")
    if finish == "error" and errors and tokens:
        return None, True
    if finish and finish != "error" and not errors and tokens:
        return None, False
    return "a stream that ended with finish_reason %r and errors %s" % (finish, errors), False
