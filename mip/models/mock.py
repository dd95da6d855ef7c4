"""A scripted backend, registered like any provider: tests, plumbing checks, dry demos.

It answers ``{"answer": <label>}`` with a fixed answer or with one of the two labels
named in the prompt, chosen by the prompt's hash, after ``latency_s``.

>>> from mip.config import MockModelConfig
>>> from mip.models import Request
>>> mock = MockBackend(MockModelConfig(name="mock", model_id="mock"))
>>> next(mock.generate([Request("r1", 'Choose exactly one label from: "even_number", "odd_number".', 8)])).output
'{"answer": "odd_number"}'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Iterator

from mip.config import MockModelConfig
from mip.models.base import Backend, BackendContext, Completion, Request

_CHOICES = re.compile(r'Choose exactly one label from: "([^"]+)", "([^"]+)"')


class MockBackend(Backend):
    schema = MockModelConfig
    cost_basis = "none"

    def __init__(self, cfg: MockModelConfig, context: BackendContext | None = None):
        self.cfg = cfg

    def _answer(self, prompt: str) -> str:
        if self.cfg.mock.answer is not None:
            return self.cfg.mock.answer
        labels = _CHOICES.search(prompt)
        if not labels:
            return "Follow the instructions and answer with the majority label."
        pick = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 2
        return json.dumps({"answer": labels.group(1 + pick)})

    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        for r in requests:
            start = time.perf_counter()
            if self.cfg.mock.latency_s:
                time.sleep(self.cfg.mock.latency_s)
            if self.cfg.mock.call_log:
                with open(self.cfg.mock.call_log, "a", encoding="utf-8") as f:
                    f.write(f"{os.getpid()} {r.id}\n")
            text = self._answer(r.prompt)
            yield Completion(
                r.id,
                output=text,
                finish_reason="stop",
                prompt_tokens=len(r.prompt) // 4,
                completion_tokens=len(text) // 4,
                latency_s=time.perf_counter() - start,
            )
