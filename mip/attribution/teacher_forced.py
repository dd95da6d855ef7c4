"""What a replay feeds the model (App. F.1): the prompt as the model's chat template renders it,
each instance's prompt tokens, and the two teacher-forced responses — the stored output with
each label at the answer span, cut after the label (what follows it cannot change its
probability under causal attention). The text side of :class:`mip.attribution.ixg.Attributor`.

>>> class Chars:                                    # a tokenizer of one token per character
...     def apply_chat_template(self, messages, tokenize, add_generation_prompt):
...         return "U: " + messages[0]["content"] + "\\nA: "
...     def __call__(self, text, add_special_tokens, return_offsets_mapping):
...         return {"input_ids": [ord(c) for c in text], "offset_mapping": [(i, i + 1) for i in range(len(text))]}
>>> prepared = ReplayInputs(Chars()).prepare("Instance 1: ab\\nInstance 2: c", ["ab", "c"],
...                                          '{"answer": "yes"} more', None, ["no", "yes"], "yes")
>>> prepared.groups, prepared.labels
([[15, 16], [30]], ('no', 'yes'))
>>> "".join(map(chr, prepared.responses["no"][0]))   # cut after the label
'{"answer": "no'

Exercised by ``pytest tests/test_attribution.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mip.attribution.packing import Prepared
from mip.attribution.spans import ReplaySkip, answer_span, instance_spans, tokens_per_instance

#: How a recorded reasoning trace is put back before the answer when replaying.
DEFAULT_REASONING_FORMAT = "<think>\n{reasoning}\n</think>\n\n"


class ReplayInputs:
    """Token ids of a replay, from one tokenizer (``transformers``) and reasoning format."""

    def __init__(self, tokenizer: Any, reasoning_format: str = DEFAULT_REASONING_FORMAT):
        self.tokenizer, self.reasoning_format = tokenizer, reasoning_format

    def templated(self, prompt: str) -> str:
        return self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                  add_generation_prompt=True)

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return enc["input_ids"], [tuple(o) for o in enc["offset_mapping"]]

    def prepare(self, prompt: str, texts: Sequence[str], output: str, reasoning: str | None,
                labels: Sequence[str], selected: str) -> Prepared:
        """Token ids, instance token groups and the two teacher-forced responses of a replay."""
        if selected not in labels:
            raise ReplaySkip(f"answer {selected!r} is not one of the two labels")
        y0, y1 = labels
        start, end = answer_span(output, selected)
        prefix = self.templated(prompt)
        lead = self.reasoning_format.format(reasoning=reasoning) if reasoning else ""
        prompt_ids, prompt_offsets = self.encode(prefix)
        at = prefix.find(prompt)
        spans = [(a + at, b + at) for a, b in instance_spans(prompt, texts)]
        groups = tokens_per_instance(prompt_offsets, spans)
        if any(not g for g in groups):
            raise ValueError("An instance has no token of its own; the tokenizer merged it with its neighbours.")
        responses = {}
        for label in (y1, y0):
            response = lead + output[:start] + label + output[end:]
            a, b = len(lead) + start, len(lead) + start + len(label)
            ids, offsets = self.encode(prefix + response)
            if ids[: len(prompt_ids)] == prompt_ids:
                positions = [i for i, (x, y) in enumerate(offsets)
                             if i >= len(prompt_ids) and y > x and x < len(prefix) + b and y > len(prefix) + a]
            else:  # the seam tokenised differently: tokenise the response on its own
                r_ids, r_offsets = self.encode(response)
                ids = prompt_ids + r_ids
                positions = [len(prompt_ids) + i for i, (x, y) in enumerate(r_offsets) if y > x and x < b and y > a]
            if not positions:
                raise ReplaySkip("the answer label has no token of its own")
            # What follows the label is not replayed: a model that answers first and then lists
            # every instance (SmolLM2 in the demo) costs half as much to replay.
            responses[label] = (ids[len(prompt_ids): max(positions) + 1], positions)
        return Prepared(list(prompt_ids), groups, (y0, y1), selected, responses)
