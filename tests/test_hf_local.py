"""mip.models.hf_local: a batch says how far its decoding has got while it runs, and counting
the steps changes no answer."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

import mip.models.hf_local as hf_local
from mip.models import Request
from mip.models.base import BackendContext
from mip.models.hf_local import HFBackend

from .conftest import compose


class Tokenizer:
    """Each character one token (5); outputs decoded as their ids."""

    pad_token_id, eos_token_id = 0, 2

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return messages[0]["content"]

    def __call__(self, texts, add_special_tokens=False):
        return {"input_ids": [[5] * len(t) for t in texts]}

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


class Model:
    """generate as transformers calls a streamer: the prompt first, then one put per step."""

    generation_config = SimpleNamespace(eos_token_id=2)
    device = "cpu"

    def generate(self, input_ids, attention_mask, max_new_tokens, streamer=None, **kwargs):
        import torch  # here, not at the top: collecting the tests should not load torch

        new = torch.full((input_ids.shape[0], max_new_tokens), 7)
        if streamer is not None:
            streamer.put(input_ids)
            for step in range(max_new_tokens):
                streamer.put(new[:, step])
            streamer.end()
        return torch.cat([input_ids, new], dim=1)


def test_a_batch_logs_its_decoding_steps_while_it_runs(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(hf_local, "STEPS_EVERY_S", 0)  # a line per step
    backend = HFBackend(compose("model=smollm2_135m").model, BackendContext(tmp_path))
    backend._tokenizer, backend._model = Tokenizer(), Model()
    with caplog.at_level(logging.INFO, logger="mip.progress"):
        out = list(backend.generate([Request("a", "abc", 4), Request("b", "de", 3)]))
    assert [(c.id, c.output, c.finish_reason) for c in out] == [("a", "7 7 7 7", "length"), ("b", "7 7 7", "length")]
    lines = [r.getMessage().rsplit(" (", 1)[0] for r in caplog.records if r.name == "mip.progress"]
    assert lines == [f"smollm2_135m: batch 1/1 of 2 prompts: {k}/4 tokens" for k in (1, 2, 3, 4)]


@pytest.mark.slow
def test_counting_steps_leaves_smollm2_s_answers_as_they_were(monkeypatch, caplog):
    """The real model, 8 tokens for two prompts: the same text with the counting streamer and without."""
    cfg = compose("model=smollm2_135m").model
    cache = Path(os.environ.get("MIP_CACHE_DIR", "~/.cache/mip")).expanduser()
    requests = [Request("a", "What is 2 + 3? Answer with a number.", 8), Request("b", "Name a colour.", 8)]
    monkeypatch.setattr(hf_local, "STEPS_EVERY_S", 0)
    with caplog.at_level(logging.INFO, logger="mip.progress"):
        counted = [c.output for c in HFBackend(cfg, BackendContext(cache)).generate(requests)]
    assert sum(r.name == "mip.progress" for r in caplog.records) >= 2

    class Silent:  # generate gets no streamer at all
        def __new__(cls, lines):
            return None

    monkeypatch.setattr(hf_local, "Steps", Silent)
    plain = [c.output for c in HFBackend(cfg, BackendContext(cache)).generate(requests)]
    assert counted == plain and all(counted)


def test_the_token_bar_starts_at_the_first_new_token():
    """The batch's token bar is made when the first new token comes, so its rate and ETA count
    the decoding and not the prompt's reading before it (10 s of it once read "ETA 58:15")."""
    made = []

    class Counted:
        def __init__(self):
            self.n, self.closed = 0, False
            made.append(self)

        def update(self, n=1):
            self.n += n

        def close(self):
            self.closed = True

    steps = hf_local.Steps(Counted)
    steps.put("the prompt's ids")
    assert made == []  # still reading the prompt: no bar, no clock running
    steps.put(1)
    steps.put(2)
    steps.end()
    assert len(made) == 1 and made[0].n == 2 and made[0].closed
    hf_local.Steps(Counted).end()  # a batch that made no token has no bar to close
    assert len(made) == 1
