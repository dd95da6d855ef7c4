"""What a job did, as run.py prints it and ``job.json`` keeps it.

>>> done = JobSummary("job", "store", experiments=2, already_stored=0, stored_now=2, unstored=0, calls=2)
>>> done.ok, JobSummary("job", "store", experiments=2, already_stored=0, stored_now=1, unstored=1, calls=3).ok
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field


class StoreError(RuntimeError):
    """The store or the job folder cannot be written; the message says what to do."""


@dataclass
class JobSummary:
    output_dir: str
    store_dir: str
    experiments: int
    already_stored: int
    stored_now: int
    unstored: int
    calls: int
    verdicts: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    tokens_estimated: bool = False
    tokens_from: str = ""
    """How prompt tokens were counted (a tokenizer, the server, or estimated from characters)."""
    overflowing: int = 0
    """Experiments whose prompt does not fit the context window: input_overflow, found before any call."""
    overflow_prompt_tokens: int = 0
    """Dry runs: the prompt tokens of the overflowing experiments (in ``prompt_tokens``), which
    are never sent and so count in no cost or time estimate."""
    per_task: dict[str, dict[str, int]] = field(default_factory=dict)
    """Dry runs: per task, the experiments to run, their prompt tokens, how many overflow, and
    what one attempt each and every attempt allowed would send (:mod:`mip.job.dry_run`)."""
    dry_run: bool = False
    model: str = ""
    budget: str = ""
    prompt_variant: str = ""
    strategy: str = ""
    """The job's slice beside its model, which dry-run costs are split by."""
    budget_tokens: int | None = None
    budget_answer: int | None = None
    budget_stated: int | None = None
    """The limits the budget ran at (output tokens; the answer's share where the model splits it;
    the one its name stands for, ``stated_tokens``): costs slice by them, not by the budget's name
    (:func:`mip.config.budgets.labels`)."""
    attempts_allowed: int = 1
    """Dry runs: the attempts each experiment may get, which the ceiling counts."""
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    measured: str = ""
    """A dry run's numbers taken from the model's preflight (price, characters a token), and when."""
    backend: str = ""
    cost_basis: str = "price"
    """How the model's cost is counted: an API's price, a local model's time, or none
    (:attr:`mip.models.Backend.cost_basis`)."""
    device: str = "GPU"
    """Where a local model runs, for its time estimate: GPU, or CPU (``device: cpu`` of an hf model
    or of a local server's config)."""
    prompt_tokens_per_s: float | None = None
    output_tokens_per_s: float | None = None
    """Throughput of one GPU (or the CPU) from the model config, for dry-run time estimates."""
    max_output_tokens: int = 0
    """Output tokens at most (a cost bound): a dry run's, of one attempt of each experiment still
    to run, as its strategy sends it; a run's, the output limits of the calls it sent."""
    left_to_other_jobs: int = 0
    """Experiments another running job had claimed: left to it, neither called nor failed here."""
    dropped: int = 0
    """Requests handed to the model and never answered: dropped when a stopped job's wait for the
    replies in flight ended (the grace period, or a second signal). Counted in ``calls``; their
    experiments are in ``unstored``, and the rerun asks them again."""
    resumed_attempts: int = 0
    """Attempts a killed earlier run had paid for, carried on from instead of paid again."""
    elapsed_s: float | None = None
    """The job's wall time from start to manifest, measured (what a closing summary reports as
    time taken, never an estimate from the config's rates)."""
    wandb_offline_run: str = ""
    """The folder of the job's W&B run when it ran offline (what ``wandb sync`` uploads)."""
    keys: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refused: str = ""
    """Why the job's model was stopped by refusals no retry mends (:mod:`mip.models.fail_fast`):
    the status, the provider's message and the fix; its experiments are in ``unstored``."""
    reported_cost_usd: float | None = None
    """What the provider reported the job's calls cost (``usage.cost``, :mod:`mip.experiment.spend`),
    summed over the replies that reported one; None when none did."""
    stopped_by: str = ""
    """The signal that stopped the job before it finished (SIGTERM, SIGINT, SIGUSR2), if one did."""

    @property
    def ok(self) -> bool:
        return self.unstored == 0
