"""One packed sequence for both labels of a replay: the prompt and the response up to where
the two teacher-forced responses part, then the rest of y₁'s, then the rest of y₀'s.

The two responses are identical up to the answer label, and a label's log-probability needs
the logits of the rows before each of its tokens only: a response is fed without its last
token. What the two then share (the prompt, the response before the label, and any common
first tokens of the labels) is fed once; the two continuations follow it, and

- y₀'s continuation attends to the shared prefix and to itself, not to y₁'s (a 4D mask);
- its position ids restart where the shared prefix ends, so each continuation sees exactly
  the positions and keys it has in its own sequence.

Every row a label's log-probability reads is then computed from the same tokens, at the same
positions, as in that label's own forward pass (tested against two passes in float64).
Where one continuation is empty (``negative``/``positive``: the labels differ in their last
token only) the packed sequence is a plain causal one and needs no mask.

The mask has (tokens)² entries, booleans (1.3 GB at 36,644 tokens), and attention adds a copy in
the model's dtype; :mod:`mip.attribution.memory` counts both where :func:`labels_need_mask`, and
else those replays take two passes. A flash-attention kernel cannot take it.

>>> packed = pack(3, {"y1": ([10, 11, 20, 21], [5, 6]), "y0": ([10, 11, 30, 31, 32], [5, 6, 7])}, ("y0", "y1"))
>>> packed.ids, packed.continuations, packed.position_ids()
([10, 11, 20, 30, 31], (1, 2), [0, 1, 2, 3, 4, 5, 5, 6])
>>> packed.rows
{'y1': [4, 5], 'y0': [4, 6, 7]}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Packed:
    prompt_len: int
    ids: list[int]
    """Response-side tokens fed after the prompt: the shared part, y₁'s continuation, y₀'s."""
    shared: int
    """How many of ``ids`` both responses share."""
    continuations: tuple[int, int]
    """Lengths of y₁'s and y₀'s continuations after the shared part."""
    rows: dict[str, list[int]]
    """Per label: the packed sequence's rows whose logits predict its label tokens."""
    targets: dict[str, list[int]]
    """Per label: the label's token ids, in the order of ``rows``."""

    @property
    def length(self) -> int:
        return self.prompt_len + len(self.ids)

    @property
    def needs_mask(self) -> bool:
        """Whether both continuations have tokens: y₀'s must then not see y₁'s."""
        return min(self.continuations) > 0

    def position_ids(self) -> list[int]:
        """0… through the shared prefix and y₁'s continuation; y₀'s restart after the prefix."""
        start = self.prompt_len + self.shared
        a, b = self.continuations
        return list(range(start + a)) + list(range(start, start + b))

    def mask(self, torch: Any, device: Any, dtype: Any = None) -> Any:
        """(1, 1, L, L) attention mask: causal, y₀'s rows blind to y₁'s columns. Booleans (True:
        attend) without ``dtype``; else additive, 0 or the dtype's minimum."""
        length, start = self.length, self.prompt_len + self.shared
        a = self.continuations[0]
        allowed = torch.ones(length, length, dtype=torch.bool, device=device).tril_()
        allowed[start + a:, start:start + a] = False
        if dtype is None:
            return allowed[None, None]
        additive = torch.zeros(length, length, dtype=dtype, device=device)
        additive.masked_fill_(~allowed, torch.finfo(dtype).min)
        return additive[None, None]


def pack(prompt_len: int, responses: dict[str, tuple[list[int], list[int]]], labels: tuple[str, str]) -> Packed:
    """The packed sequence for ``responses`` (label → teacher-forced response ids and the
    full-sequence positions of its label tokens; each response ends with its label's last
    token), ``labels`` = (y₀, y₁)."""
    y0, y1 = labels
    feeds = {label: ids[:-1] for label, (ids, _) in responses.items()}  # the last token only a target
    shared = 0
    for x, y in zip(feeds[y1], feeds[y0]):
        if x != y:
            break
        shared += 1
    rest = {label: feeds[label][shared:] for label in (y1, y0)}
    start = prompt_len + shared
    offset = {y1: 0, y0: len(rest[y1])}  # y₀'s continuation sits after y₁'s
    rows, targets = {}, {}
    for label in (y1, y0):
        ids, positions = responses[label]
        rows[label] = [p - 1 if p - 1 < start else p - 1 + offset[label] for p in positions]
        targets[label] = [ids[p - prompt_len] for p in positions]
    return Packed(prompt_len, feeds[y1][:shared] + rest[y1] + rest[y0], shared,
                  (len(rest[y1]), len(rest[y0])), rows, targets)


def labels_need_mask(tokenizer: Any, labels: tuple[str, str] | list[str]) -> bool:
    """Whether a replay of these labels will take the mask (:attr:`Packed.needs_mask`), read from
    the labels' own tokens, alone and after a space (the answer's may join its neighbours; the
    memory plan counts the mask where either form needs it).

    >>> class Words:  # one token per "_"-separated part
    ...     def encode(self, text, add_special_tokens=False): return text.strip().replace("_", " _").split()
    >>> labels_need_mask(Words(), ["even_number", "odd_number"]), labels_need_mask(Words(), ["LOC", "PER"])
    (True, False)
    """
    for space in ("", " "):
        y0, y1 = (list(tokenizer.encode(space + label, add_special_tokens=False)) for label in labels)
        shared = next((i for i, (a, b) in enumerate(zip(y0, y1)) if a != b), min(len(y0), len(y1)))
        if len(y0) - 1 > shared and len(y1) - 1 > shared:  # both feed a token past the shared part
            return True
    return False


@dataclass
class Prepared:
    """A replay's prompt and both labels' teacher-forced responses as token ids (what is packed)."""

    prompt_ids: list[int]
    groups: list[list[int]]
    """Prompt token indices of each instance."""
    labels: tuple[str, str]
    selected: str
    responses: dict[str, tuple[list[int], list[int]]]
    """Per label: the teacher-forced response ids and the sequence positions of the label's tokens."""

    def packed(self) -> Packed:
        """The one packed sequence serving both labels."""
        return pack(len(self.prompt_ids), self.responses, self.labels)

    @property
    def shared(self) -> bool:
        """Whether one plain causal sequence serves both labels (no mask): their responses
        differ in their last token only, which is a target and never fed."""
        return not self.packed().needs_mask
