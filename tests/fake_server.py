"""A small OpenAI-compatible server for tests that must inject faults a real server won't.

It speaks just enough HTTP/1.1 (keep-alive, Content-Length) for the ``openai`` client,
serves ``GET /v1/models`` and ``POST /v1/chat/completions``, and answers the synthetic
arithmetic task *correctly*: it evaluates every ``Instance i: What is …?`` line, counts
parities and returns the majority label, so a clean run's verdicts are all ``correct``
and any other verdict after a fault would be a bug.

Faults (``server.faults = {"kind": k}``): the first ``k`` calls of every distinct prompt
get that fault, later calls succeed. Kinds: ``429`` (with Retry-After), ``500``,
``503``, ``stall`` (no answer past the client's timeout), ``reset`` (connection
dropped), ``error200`` (HTTP 200 with an error body), ``truncated`` (half a JSON body),
``empty`` (no choices) — the retryable repertoire in ``KINDS`` — ``400`` (the request
refused, which no retry can mend), ``302`` (a redirect, not followed) and ``garbage`` (a whole reply with no answer in it: an
invalid attempt, paid for). ``server.hold_call = 2`` holds the second call of every prompt
until ``server.release()``; ``server.answered`` counts the replies sent whole per prompt. ``server.fault_rate = 0.2`` instead faults a random 20 %
of all calls, cycling through ``KINDS``. ``server.arrivals`` holds (prompt hash, outcome,
monotonic time) per call. Requests through it as an HTTP proxy (absolute URIs) are
answered the same way. ``reasoning_shape`` picks where the reasoning text
goes: ``reasoning``, ``reasoning_content``, ``reasoning_details`` or ``both`` (``reasoning`` and
a ``reasoning.text`` item of ``reasoning_details``, as OpenRouter sends it); ``trace_chars``
pads the trace to that length. ``echo = True`` repeats the request's Authorization header and
target (a key in its query) in every reasoning trace and 500's error message, as a careless
server does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import time
from collections import Counter

from .local_server import LocalServer

KINDS = ("429", "500", "503", "stall", "reset", "error200", "truncated", "empty")

_INSTANCE = re.compile(r"^Instance \d+: What is (.+)\?$", re.M)
_CHOICES = re.compile(r'Choose exactly one label from: "([^"]+)", "([^"]+)"')


def majority_answer(prompt: str) -> str:
    """The correct answer to an arithmetic MIP prompt, as the model should give it."""
    values = [eval(e.replace("×", "*"), {"__builtins__": {}}) for e in _INSTANCE.findall(prompt)]  # noqa: S307
    labels = _CHOICES.search(prompt)
    even_label, odd_label = (labels.group(1), labels.group(2)) if labels else ("even_number", "odd_number")
    even = sum(v % 2 == 0 for v in values)
    odd = len(values) - even
    return "-1" if even == odd else (even_label if even > odd else odd_label)


class FakeServer(LocalServer):
    def __init__(self, model: str = "fake-model", reasoning_shape: str = "reasoning", latency_s: float = 0.0,
                 stall_s: float = 30.0, seed: int = 0, retry_after: str = "0.1", trace_chars: int = 0):
        super().__init__()
        self.trace_chars = trace_chars
        self.model = model
        self.reasoning_shape = reasoning_shape
        self.latency_s = latency_s
        self.stall_s = stall_s
        self.retry_after = retry_after
        self.arrivals: list[tuple[str, str, float]] = []
        self.faults: dict[str, int] = {}
        self.fault_rate = 0.0
        self.rng = random.Random(seed)
        self.calls: Counter = Counter()  # per prompt hash
        self.log: list[tuple[str, str]] = []  # (prompt hash, outcome)
        self.batch_fault: str | None = None  # decomposed answers: missing, duplicate, extra
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict] = []
        self.answered: Counter = Counter()  # per prompt hash: replies sent whole (what a client pays for)
        self.hold_call: int | None = None  # that call of every prompt (2: the second) waits for release()
        self.answers_as: str | None = None  # the model id its replies name (a router's fallback), if not ``model``
        self.echo = False  # replies and error messages repeat the Authorization header and the target (a key with them)

    def release(self) -> None:
        """Let the held calls (``hold_call``) go on."""
        self._loop.call_soon_threadsafe(self._released.set)

    @property
    def held(self) -> int:
        return self._held

    def started(self) -> None:
        self._released = asyncio.Event()
        self._held = 0

    # ------------------------------------------------------------------ HTTP
    async def _send(self, writer, status: int, payload: bytes, extra: str = "", length: int | None = None) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
                  503: "Service Unavailable"}.get(status, "X")
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {length if length is not None else len(payload)}\r\n{extra}\r\n")
        writer.write(head.encode() + payload)
        await writer.drain()

    async def route(self, method: str, path: str, body: bytes, writer, reader=None) -> bool:
        if method == "GET" and path.endswith("/models"):
            await self._send(writer, 200, json.dumps({"object": "list", "data": [{"id": self.model, "object": "model"}]}).encode())
            return True
        if method == "POST" and path == "/tokenize":
            text = json.loads(body)["messages"][-1]["content"]
            await self._send(writer, 200, json.dumps({"count": len(text) // 4 + 7, "max_model_len": 8192}).encode())
            return True
        if not (method == "POST" and path.endswith("/chat/completions")):
            await self._send(writer, 404, b'{"error": {"message": "not found"}}')
            return True
        request = json.loads(body)
        with self._lock:
            self.bodies.append(request)
        prompt = request["messages"][-1]["content"]
        key = hashlib.sha256(prompt.encode()).hexdigest()[:16]
        fault = self._fault(key)
        if self.hold_call is not None and self.calls[key] == self.hold_call and not self._released.is_set():
            self._held += 1
            try:
                await self._released.wait()
            finally:
                self._held -= 1
            if reader is not None and reader.at_eof():  # the client is gone: nothing is sent or paid
                return False
        with self._lock:
            self.log.append((key, fault or "ok"))
            self.arrivals.append((key, fault or "ok", time.monotonic()))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(fault, request, prompt, writer)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _answer(self, fault: str | None, request: dict, prompt: str, writer) -> bool:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if fault in ("429", "503"):
            await self._send(writer, int(fault), b'{"error": {"message": "slow down"}}', f"Retry-After: {self.retry_after}\r\n")
        elif fault == "302":  # an http:// address moved to https:// (a redirect mip does not follow)
            await self._send(writer, 302, b"", "Location: https://moved.example/v1/chat/completions\r\n")
        elif fault == "400":
            await self._send(writer, 400, b'{"error": {"message": "prompt is too long", "code": 400}}')
        elif fault == "500":
            await self._send(writer, 500, json.dumps({"error": {"message": f"boom{self._echoed()}"}}).encode())
        elif fault == "stall":
            await asyncio.sleep(self.stall_s)
            return False
        elif fault == "reset":
            writer.transport.abort()
            return False
        elif fault == "error200":
            await self._send(writer, 200, b'{"error": {"message": "upstream provider failed", "code": 502}}')
        elif fault == "truncated":
            payload = json.dumps(self._completion(request, prompt)).encode()
            await self._send(writer, 200, payload[: len(payload) // 2], length=len(payload) // 2)
        elif fault == "empty":
            await self._send(writer, 200, json.dumps({**self._completion(request, prompt), "choices": []}).encode())
        elif fault == "garbage":  # a paid reply with no answer in it: an invalid (parse) attempt
            completion = self._completion(request, prompt)
            completion["choices"][0]["message"]["content"] = "I could not decide."
            await self._send(writer, 200, json.dumps(completion).encode())
            self._paid(prompt)
        else:
            await self._send(writer, 200, json.dumps(self._completion(request, prompt)).encode())
            self._paid(prompt)
        return True

    def _echoed(self) -> str:
        """What an echoing server repeats of the last request: its Authorization header and target."""
        if not self.echo:
            return ""
        with self._lock:
            return f" (you sent {self.headers_seen[-1].get('authorization')} to {self.targets_seen[-1]})"

    def _paid(self, prompt: str) -> None:
        with self._lock:
            self.answered[hashlib.sha256(prompt.encode()).hexdigest()[:16]] += 1

    def _fault(self, key: str) -> str | None:
        with self._lock:
            self.calls[key] += 1
            n = self.calls[key]
            for kind, count in self.faults.items():
                if n <= count:
                    return kind
            if self.fault_rate and self.rng.random() < self.fault_rate:
                return KINDS[self.rng.randrange(len(KINDS))]
        return None

    def _batch_answer(self, prompt: str) -> str:
        labels = _CHOICES.search(prompt)
        even_label, odd_label = labels.group(1), labels.group(2)
        items = [{"id": int(i), "label": even_label if eval(e.replace("×", "*"), {"__builtins__": {}}) % 2 == 0 else odd_label}  # noqa: S307
                 for i, e in re.findall(r"^Instance (\d+): What is (.+)\?$", prompt, re.M)]
        # Faults hit first-round batches (five or more instances); the smaller re-asks are answered in full.
        if len(items) >= 5 and self.batch_fault == "missing":
            items = items[1:]
        elif len(items) >= 5 and self.batch_fault == "duplicate":
            flipped = odd_label if items[0]["label"] == even_label else even_label
            items = items + [{"id": items[0]["id"], "label": flipped}]
        elif self.batch_fault == "extra":
            items = items + [{"id": 99999, "label": even_label}, {"id": items[0]["id"] + 100000, "label": "maybe"}]
        return "Labelling each instance.\n" + json.dumps(items)

    def _completion(self, request: dict, prompt: str) -> dict:
        single = re.search(r"^Instance: What is (.+)\?$", prompt, re.M)
        counts = 'Return only a JSON object with the fields "counts"' in prompt
        if prompt.startswith("Task: Label every provided instance."):
            content, answer = self._batch_answer(prompt), None
        elif counts:
            values = [eval(e.replace("×", "*"), {"__builtins__": {}}) for e in _INSTANCE.findall(prompt)]  # noqa: S307
            labels = _CHOICES.search(prompt)
            even = sum(v % 2 == 0 for v in values)
            answer = majority_answer(prompt)
            content = json.dumps({"counts": {labels.group(1): even, labels.group(2): len(values) - even},
                                  "answer": answer if answer != "-1" else -1})
        elif single:  # a filtering question: the value of one expression
            content, answer = json.dumps({"answer": eval(single.group(1).replace("×", "*"), {"__builtins__": {}})}), None  # noqa: S307
        elif prompt.startswith("Write the instruction prompt"):
            content, answer = "Evaluate each expression, count even and odd values, answer the majority as JSON.", None
        else:
            answer = majority_answer(prompt)
            content = json.dumps({"answer": answer if answer != "-1" else -1})
        trace = "Instance 1 is even. Instance 2 is odd. Counting all instances." + self._echoed()
        trace += " Checking again." * max(0, (self.trace_chars - len(trace)) // 16)
        message: dict = {"role": "assistant", "content": content}
        if self.reasoning_shape == "both":  # OpenRouter: the trace as text, and again as reasoning_details
            message["reasoning"] = trace
            message["reasoning_details"] = [{"type": "reasoning.text", "text": trace, "format": "unknown", "index": 0}]
        elif self.reasoning_shape == "reasoning_details":
            message["reasoning_details"] = [{"type": "reasoning.summary", "summary": trace},
                                            {"type": "reasoning.encrypted", "data": "xxx"}]
        else:
            message[self.reasoning_shape] = trace
        return {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": self.answers_as or self.model,
            "provider": "FakeProvider",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 12, "total_tokens": len(prompt) // 4 + 12,
                      "completion_tokens_details": {"reasoning_tokens": 8},
                      "prompt_tokens_details": {"cached_tokens": 0}, "cost": 0.00042},
        }
