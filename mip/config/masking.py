r"""What leaves the process is safe. Masking by value: every secret this process knows, replaced
by ``***`` wherever its value appears — in a reply or an error message as stored
(:meth:`Masker.model`), in a line logged (:class:`SecretFilter`), in what is printed
(:class:`MaskedStream`). And stored text shown on a terminal (a model's reply, an error quoting
one) has its control characters escaped (:func:`printable`): a reply cannot clear the screen,
set the title, move the cursor or overwrite a line.

The secrets are gathered once per process (:func:`remember`: the job's config, its overrides
as typed, the value of the variable ``api_key_env`` names; :mod:`mip.config.redact` finds
them) into one :class:`Masker`, compiled once: each text is searched for all of them in one
pass of C-level substring scans (no regular expression runs over a reply that holds none), and
only a text that holds one is rewritten, by one precompiled pattern.

>>> m = Masker({"sk-123456", 'Qk"7'})
>>> m.text("Bearer sk-123456 and Qk\"7"), m.text("no key here")
('Bearer *** and ***', 'no key here')
>>> m.json(b'{"echo":"Qk\\"7"}')
b'{"echo":"***"}'
>>> printable("ok\x1b[2J\rverdict: correct\tdone\n")
'ok\\x1b[2J\\rverdict: correct\tdone\n'
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

import orjson

MASK = "***"
SHORTEST = 4  # a shorter secret would mask ordinary words


class Masker:
    """One precompiled matcher of the known secret values: each as given and as it stands
    inside a JSON string (a quote or backslash escaped), the longest first."""

    def __init__(self, secrets: set[str] | frozenset[str] = frozenset()):
        self.secrets = frozenset(s for s in secrets if len(s) >= SHORTEST and s != MASK)
        forms = {f for s in self.secrets for f in (s, orjson.dumps(s).decode()[1:-1])}
        self._forms = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, self._forms))) if forms else None
        self._bytes = [f.encode() for f in self._forms]
        self._bytes_pattern = re.compile(b"|".join(map(re.escape, self._bytes))) if forms else None

    def __bool__(self) -> bool:
        return bool(self._forms)

    def holds(self, text: str) -> bool:
        """Whether ``text`` holds a secret (substring scans: no pattern runs on a clean text)."""
        return any(form in text for form in self._forms)

    def text(self, text: str) -> str:
        return self._pattern.sub(MASK, text) if self._pattern is not None and self.holds(text) else text

    def json(self, data: bytes) -> bytes:
        """JSON bytes (a record, a line) with each secret inside a string masked."""
        if self._bytes_pattern is None or not any(form in data for form in self._bytes):
            return data
        return self._bytes_pattern.sub(MASK.encode(), data)

    def value(self, value: Any) -> Any:
        """A plain value (str, list, dict) with every string masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def model(self, record: Any) -> Any:
        """A pydantic model (a completion, a record) as it is when it holds no secret, else a copy
        with its string fields masked. Its strings are joined and searched once, not field by field."""
        if not self._forms:
            return record
        fields = {k: v for k, v in record.__dict__.items() if isinstance(v, (str, dict, list)) and v}
        if not fields or not self.holds("\0".join(_strings(fields.values()))):
            return record
        return record.model_copy(update={k: self.value(v) for k, v in fields.items()})


def _strings(values: Any) -> Any:
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            yield from _strings(value.values())
        elif isinstance(value, (list, tuple)):
            yield from _strings(value)


_known: set[str] = set()
_masker = Masker()


def remember(secrets: set[str]) -> Masker:
    """Add ``secrets`` to what this process masks; the matcher is compiled again only when one is new."""
    global _masker
    new = {s for s in secrets if len(s) >= SHORTEST and s != MASK} - _known
    if new:
        _known.update(new)
        _masker = Masker(_known)
    return _masker


def masker() -> Masker:
    """The matcher of every secret this process was told of (:func:`remember`)."""
    return _masker


# C0 controls but tab and newline, DEL, C1 controls (0x9b is a CSI), and the bidirectional overrides
# that reorder what follows them on screen.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` for a terminal: each control character as its escape (``\\x1b``, ``\\r``)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class SecretFilter(logging.Filter):
    """A logging filter that masks the known secrets (``secrets`` and all :func:`remember` was
    told) in every message it passes (run.log, the console), its control characters escaped (a
    reply's first bytes quoted in a warning)."""

    def __init__(self, secrets: set[str]):
        super().__init__()
        remember(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = printable(_masker.text(message))
        if masked is not message:
            record.msg, record.args = masked, None
        return True


class MaskedStream:
    """A text stream (``sys.stdout``, ``sys.stderr``) that masks the known secrets in what is
    written to it: a line printed (``error: …``), a progress bar, a library's warning."""

    def __init__(self, stream: Any, secrets: set[str]):
        self.stream = stream
        remember(secrets)

    def write(self, text: str) -> int:
        self.stream.write(_masker.text(text) if isinstance(text, str) else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding …
        return getattr(self.stream, name)


def mask_streams(secrets: set[str]) -> None:
    """Mask ``secrets`` from now on in all that this process prints (once per stream; a later call
    adds its secrets)."""
    remember(secrets)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, MaskedStream):
            setattr(sys, name, MaskedStream(stream, secrets))
