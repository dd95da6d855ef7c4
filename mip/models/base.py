"""The backend contract: hand over requests, get completions back as they finish."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mip.config.model import ModelConfig


class BackendSetupError(RuntimeError):
    """A backend cannot start (missing key, package or server): the message says what to do."""


@dataclass(frozen=True)
class BackendContext:
    """What a backend may need beyond its config, read once where it is built
    (:func:`mip.models.build_backend`): the cache folder and the API key."""

    cache_dir: Path
    api_key: str | None = None

    def __repr__(self) -> str:  # never show the key
        return f"BackendContext({str(self.cache_dir)!r}, api_key={'***' if self.api_key else None})"


@dataclass(frozen=True)
class Request:
    """One chat request: a single user message and an output-token limit."""

    id: str
    prompt: str
    max_tokens: int


@dataclass
class Completion:
    """What came back for one request.

    ``error`` marks a failure of the infrastructure (network, server, timeout): it is
    never a model verdict; the runner retries it and, if it persists, leaves the
    experiment unstored.
    """

    id: str
    text: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    latency_s: float | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    """The backend's usage report in full (tokens, cached tokens, cost where reported)."""
    reasoning_raw: dict[str, Any] = field(default_factory=dict)
    """The server's other reasoning fields, verbatim: reasoning_details, or one whose text differs from the trace."""
    reasoning_from: list[str] = field(default_factory=list)
    """The response fields whose value was exactly ``reasoning`` (so it is kept once)."""
    provider: str | None = None
    """Who served the request (OpenRouter's provider), where the server says."""
    served_model: str | None = None
    error: str | None = None


class Backend(ABC):
    """A model behind one method. Subclasses may count tokens. How many attempts an
    experiment gets is the model config's business (``deterministic``, :mod:`mip.keys`).

    >>> class Echo(Backend):
    ...     def generate(self, requests):
    ...         for r in requests:
    ...             yield Completion(r.id, text=r.prompt, finish_reason="stop")
    >>> [c.text for c in Echo().generate([Request("a", "hi", 4)])]
    ['hi']
    """

    #: The schema of this backend's model configs (conf/model/*.yaml extend it as
    #: ``/model_schema/<backend>``): a subclass of ModelConfig with the backend's own fields.
    schema: ClassVar[type[ModelConfig]] = ModelConfig

    #: Whether the backend applies the retry rules to each request itself (then the wrapper,
    #: :mod:`mip.models.calls`, does not retry its errors again).
    retries_each_request: bool = False

    @abstractmethod
    def generate(self, requests: Iterable[Request]) -> Iterator[Completion]:
        """Yield exactly one completion per request, in any order, as each finishes.

        ``requests`` may be lazy: a streaming backend pulls the next one only when it has
        room for it (the runner builds prompts as they are pulled); a batching backend
        takes them all first.
        """

    def count_tokens(self, prompts: Sequence[str]) -> list[int] | None:
        """Prompt tokens as the model sees them (chat template included), or None if unknown."""
        return None

    def check(self) -> None:
        """Before the first call of a job: raise BackendSetupError if the backend cannot serve it."""

    def close(self) -> None:
        """Release what the backend holds (weights, connections)."""
