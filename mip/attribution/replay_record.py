"""What one replay found (:meth:`mip.attribution.ixg.Attributor.replay`): its score, each
instance's IxG and share, and what it cost.

>>> replay = Replay("k", "odd", 0.7, u=[1.0, 3.0], share=[0.5, 1.5], signed=[1.0, -3.0], tokens=40,
...                 instance_tokens=[8, 8], seconds=0.2, peak_rss_mb=900.0, passes=1)
>>> sum(replay.share) / len(replay.share), replay.peak_gpu_allocated_mb
(1.0, None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Replay:
    key: str
    selected: str
    score: float
    """S_r, oriented from y₀ to y₁."""
    u: list[float]
    """Length-normalised IxG magnitude per instance, in prompt order."""
    share: list[float]
    """R_{r,i} = N·u_i / Σ u (1 = uniform)."""
    signed: list[float]
    """Length-normalised signed IxG per instance (beyond the paper)."""
    tokens: int
    instance_tokens: list[int]
    seconds: float
    peak_rss_mb: float
    """The process's peak resident set size so far (CPU memory; not this replay's alone)."""
    passes: int = 2
    """Forward-and-backward passes over the prompt this replay took (1 or 2)."""
    peak_gpu_allocated_mb: float | None = None
    """Peak GPU memory torch allocated during this replay (all GPUs together); None on the CPU."""
    peak_gpu_reserved_mb: float | None = None
    """Peak GPU memory torch's caching allocator reserved during this replay; None on the CPU."""
    offloaded_mb: float = 0.0
    """Saved activations moved to CPU memory during this replay (``offload``)."""
    extra: dict[str, Any] = field(default_factory=dict)
