"""The backend contract: hand over requests, get completions back as they finish."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from pydantic import ConfigDict, Field

from mip.config.model import ModelConfig
from mip.experiment.records import CallOutput

if TYPE_CHECKING:
    from mip.config import Config
    from mip.data import Pool


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


class Completion(CallOutput):
    """What came back for one request: what the call returned (its fields are
    :class:`mip.experiment.records.CallOutput`'s, the ones a record's stage keeps), or an error.

    ``error`` marks a failure of the infrastructure (network, server, timeout): it is
    never a model verdict; the runner retries it and, if it persists, leaves the
    experiment unstored.

    >>> Completion("r1", output='{"answer": "PER"}', finish_reason="stop").output
    '{"answer": "PER"}'
    """

    # A misspelt field (mip 0.2's ``text=``) fails loudly instead of dropping the output.
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The request's id.")
    error: Optional[str] = Field(default=None, description="An infrastructure failure, never a verdict.")

    def __init__(self, id: str, /, **fields: Any) -> None:
        """``Completion(request.id, output=…, …)``: the request's id first, as backends write it."""
        super().__init__(id=id, **fields)


class Backend(ABC):
    """A model behind one method. Subclasses may count tokens. How many attempts an
    experiment gets is the model config's business (``deterministic``, :mod:`mip.experiment.keys`).

    >>> class Echo(Backend):
    ...     def generate(self, requests):
    ...         for r in requests:
    ...             yield Completion(r.id, output=r.prompt, finish_reason="stop")
    >>> [c.output for c in Echo().generate([Request("a", "hi", 4)])]
    ['hi']
    """

    #: The schema of this backend's model configs (conf/model/*.yaml extend it as
    #: ``/model_schema/<backend>``): a subclass of ModelConfig with the backend's own fields.
    schema: ClassVar[type[ModelConfig]] = ModelConfig

    #: How a dry run counts what this backend's calls cost: ``"price"`` (an API's price per
    #: token, from the model config), ``"time"`` (the GPU or CPU time of a model run here, from
    #: its throughput) or ``"none"`` (a scripted or simulated model).
    cost_basis: ClassVar[str] = "price"

    #: Whether prompt tokens are counted with the tokenizer of the weights this backend runs
    #: (named by the model id: a vLLM or transformers model), rather than one the config names.
    own_tokenizer: ClassVar[bool] = False

    #: Whether each request is retried as it runs — an event-loop backend running its requests
    #: through :class:`mip.models.calls.RequestGuard` — so that ``call_with_retries`` does not
    #: retry its errors again.
    retries_each_request: bool = False
    @classmethod
    def dry_run_note(cls, cfg: Any, max_tokens: int) -> str | None:
        """What a dry run says of how this backend sends a job's prompts (vllm: its chunk)."""
        return None

    fail_fast: Any = None
    """A backend whose requests can be refused (openai_compat): its
    :class:`mip.models.fail_fast.FailFast`, which the job carries across a sweep's jobs."""

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

    @classmethod
    def refuses(cls, cfg: Config) -> Optional[str]:
        """Why this backend cannot answer a job's tasks, prompt variant or strategy (None: it
        can), asked before any data is read or model loaded, dry runs included; the job is
        refused with this line."""
        return None

    def prepare(self, pools: Mapping[str, Pool]) -> None:
        """Before the first call of a job: its pools, for a backend that answers from them
        (a planted model looks its instances' gold labels up there)."""

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this backend cannot be built in this environment (a package it needs is not
        installed), or None. Asked before a real run launches any job (mip.entry.hydra_callbacks)."""
        return None

    def check(self) -> None:
        """Before the first call of a job: raise BackendSetupError if the backend cannot serve it."""

    def warm(self) -> None:
        """Right after the job claims its experiments, while the claim settles
        (:data:`mip.store.claims.SETTLE_S`, before any request may go out): start what the first
        request needs, so that its start-up overlaps that wait. Sends no request."""

    def reached(self, ids: Iterable[str]) -> set[str]:
        """Of ``ids`` (requests handed to :meth:`generate` and never answered), those that may have
        reached the model: a stopped job counts them as calls a provider may charge
        (:mod:`mip.job.loop`). A backend that does not know says all of them."""
        return set(ids)

    def stop_sending(self) -> None:
        """The job is stopping (:mod:`mip.job.stop`): send no request not yet sent, and retry
        none; those in flight finish. Called from a signal handler, so it only sets a flag."""

    def close(self) -> None:
        """Release what the backend holds (weights, connections)."""
