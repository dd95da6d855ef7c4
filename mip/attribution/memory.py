"""Where a replay's memory goes, estimated before the weights are loaded, and the placement
chosen from it (App. F.1's replays at n = 2,000 with a 31B-class model on one 80 GB GPU).

A checkpointed IxG replay of L tokens holds, on the device:

* the weights: their parameter count (from the configuration, on the meta device) × dtype bytes;
* the checkpoints: each decoder layer's input, ``layers × L × hidden × b``;
* the working set of the one layer being recomputed and differentiated, the prompt
  embeddings, their gradient and the float32 IxG: ``L × b × (26·hidden + 3·intermediate)``.
* where the labels need it (``even_number``/``odd_number``: :mod:`mip.attribution.packing`), the
  one pass's attention mask: ``L² × (1 + b)``, mip's booleans and the additive form attention
  makes of them (17 + 34 GiB at Math's 135,418 tokens in bfloat16, near the 4B model's whole
  two-pass peak there). Where the plan cannot hold it, those replays take two passes and no mask
  (:attr:`Plan.mask`); on the CPU, where the mask would take over half the free memory.

The working set's coefficients are fitted to the peaks torch allocated on an H200 at
L = 36,644 (bfloat16): 20.1 GiB for Qwen3-4B's shape and 97.1 GiB for Qwen3-32B's; this
module's estimates for those are 20.3 and 97.7 GiB; with offload, 14.0 and 75.4 GiB.

Placements, in order of preference: ``gpu`` (all of it on one GPU), ``offload`` (the
checkpoints in CPU memory, :class:`Offload`: on the GPU only the weights and
the working set), ``shard`` (the weights and their layers' checkpoints spread over the GPUs
present, ``device_map="auto"`` with a per-GPU cap that leaves room for the working set).
A replay that fits none of them is refused with its estimate before any weight is read.

>>> est = Estimate(tokens=36_644, weights=8 * GiB, checkpoints=3 * GiB, working=9 * GiB)
>>> choose(est, free=[80 * GiB], host_free=64 * GiB).placement
'gpu'
>>> choose(est, free=[18 * GiB], host_free=64 * GiB).placement    # the checkpoints go to the CPU
'offload'
>>> mask_bytes(135_418, 2) / GiB > 50    # Math's prompt, multi-token labels: one pass costs its mask
True

Exercised by ``pytest tests/test_attribution.py``.
"""

from __future__ import annotations

import dataclasses
import resource
from dataclasses import dataclass
from typing import Any

GiB = 2**30
PLACEMENTS = ("auto", "gpu", "offload", "shard")


class DoesNotFit(RuntimeError):
    """No placement holds the replay; the message gives the estimate and the free memory."""


@dataclass(frozen=True)
class Estimate:
    tokens: int
    weights: int
    checkpoints: int
    working: int
    mask: int = 0
    """The one pass's attention mask, where the labels need one (held on the GPU with the working set)."""

    @property
    def total(self) -> int:
        return self.weights + self.checkpoints + self.working + self.mask

    def describe(self) -> str:
        mask = f" + mask {self.mask / GiB:.1f} GiB" if self.mask else ""
        return (f"{self.tokens:,} tokens: weights {self.weights / GiB:.1f} GiB + checkpoints "
                f"{self.checkpoints / GiB:.1f} GiB + working set {self.working / GiB:.1f} GiB{mask} "
                f"= {self.total / GiB:.1f} GiB")


@dataclass(frozen=True)
class Plan:
    placement: str
    """cpu, gpu, offload or shard."""
    estimate: Estimate | None
    free: tuple[int, ...] = ()
    """Free bytes of each GPU when the plan was made."""
    max_memory: dict[Any, int] | None = None
    """Per-GPU cap on the weights for ``device_map="auto"`` (shard)."""
    mask: bool = True
    """Whether replays whose labels need the attention mask take it (one pass); False: the mask
    would not fit, and they take two passes (:class:`mip.attribution.ixg.Attributor`)."""

    @property
    def offload(self) -> bool:
        return self.placement == "offload"

    def describe(self) -> str:
        free = ", ".join(f"{f / GiB:.1f}" for f in self.free)
        est = f"; estimate {self.estimate.describe()}" if self.estimate else ""
        passes = "" if self.mask else "; two passes for multi-token labels: their one pass's mask would not fit"
        return f"placement {self.placement}{est}" + (f"; free GiB per GPU: {free}" if free else "") + passes


def parameter_count(config: Any) -> int:
    """Parameters of the model a configuration describes, counted without allocating them."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def _intermediate(text: Any) -> int:
    """The MLP width one token passes through (experts per token × expert width for a MoE)."""
    experts = getattr(text, "num_experts_per_tok", None)
    width = getattr(text, "moe_intermediate_size", None)
    if experts and width:
        shared = getattr(text, "shared_expert_intermediate_size", 0) or 0
        return int(experts * width + shared)
    return int(text.intermediate_size)


def mask_bytes(tokens: int, dtype_bytes: int) -> int:
    """The one pass's (tokens)² attention mask: booleans, and attention's additive copy in the dtype."""
    return tokens * tokens * (1 + dtype_bytes)


def estimate(config: Any, tokens: int, dtype_bytes: int, parameters: int | None = None,
             masked: bool = False) -> Estimate:
    """Bytes a checkpointed replay of ``tokens`` tokens holds on the device (see the module's
    docstring); ``masked``: its labels need the one pass's mask."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden, layers = int(text.hidden_size), int(text.num_hidden_layers)
    count = parameters if parameters is not None else parameter_count(config)
    return Estimate(tokens=tokens, weights=count * dtype_bytes,
                    checkpoints=layers * tokens * hidden * dtype_bytes,
                    working=tokens * dtype_bytes * (26 * hidden + 3 * _intermediate(text)),
                    mask=mask_bytes(tokens, dtype_bytes) if masked else 0)


def choose(est: Estimate, free: list[int], host_free: int, want: str = "auto", margin: int = GiB // 2) -> Plan:
    """The placement for an estimate, given each GPU's free bytes and the CPU's, ``margin`` left
    free on each GPU (fragmentation); pure (tested)."""
    if want not in PLACEMENTS:
        raise ValueError(f"memory must be one of {', '.join(PLACEMENTS)}, not {want!r}")
    usable = [f - margin for f in free]
    working = est.working + est.mask  # on every GPU that runs a layer
    fits = {
        "gpu": bool(usable) and est.total <= usable[0],
        "offload": bool(usable) and est.weights + working <= usable[0] and est.checkpoints <= host_free,
        "shard": len(usable) > 1 and all(u > working for u in usable)
        and est.weights + est.checkpoints <= sum(u - working for u in usable),
    }
    order = ("gpu", "offload", "shard") if want == "auto" else (want,)
    for placement in order:
        if fits[placement]:
            max_memory = None
            if placement == "shard":  # the weights' share of what each GPU holds beside the working set
                scale = est.weights / (est.weights + est.checkpoints)
                max_memory = {i: int((u - working) * scale) for i, u in enumerate(usable)}
            return Plan(placement, est, tuple(free), max_memory)
    gpus = ", ".join(f"{f / GiB:.1f}" for f in free) or "none"
    raise DoesNotFit(
        f"The replay does not fit ({'any placement' if want == 'auto' else 'memory=' + want}): {est.describe()}; "
        f"free GPU memory (GiB): {gpus}; free CPU memory {host_free / GiB:.1f} GiB. With offload the GPU must hold "
        f"{(est.weights + working) / GiB:.1f} GiB. Use a GPU with more memory, more GPUs (shard), a smaller "
        "dtype, or shorter prompts (where.n=…).")


def host_available() -> int:
    """Bytes of CPU memory available now (``MemAvailable``; 0 where unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def plan(config: Any, tokens: int, dtype_bytes: int, device: str, want: str = "auto", masked: bool = False) -> Plan:
    """The placement of replays of up to ``tokens`` tokens on this machine's free memory;
    ``masked``: some replays' labels need the one pass's mask, which the plan holds where it can
    and else leaves out (those replays take two passes)."""
    import torch

    if not device.startswith("cuda"):
        return Plan("cpu", None, mask=not masked or mask_bytes(tokens, dtype_bytes) <= host_available() // 2)
    free = [torch.cuda.mem_get_info(i)[0] for i in range(torch.cuda.device_count())]
    if device != "cuda" and ":" in device:  # one named GPU: only it
        index = int(device.split(":")[1])
        free = [free[index]]
    return planned(config, tokens, dtype_bytes, free, host_available(), want, masked)


def planned(config: Any, tokens: int, dtype_bytes: int, free: list[int], host_free: int, want: str = "auto",
            masked: bool = False, parameters: int | None = None) -> Plan:
    """:func:`choose` with the mask where the labels need it, else without it and two passes for
    them; pure given the free memory (tested)."""
    if masked:
        try:
            return choose(estimate(config, tokens, dtype_bytes, parameters, masked=True), free, host_free, want)
        except DoesNotFit:
            pass
    chosen = choose(estimate(config, tokens, dtype_bytes, parameters), free, host_free, want)
    return dataclasses.replace(chosen, mask=not masked)


# ---------------------------------------------------------------------------- during a replay
def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cuda_devices(model: Any) -> list[Any]:
    """The CUDA devices holding the model's parameters (several where it is sharded)."""
    return sorted({p.device for p in model.parameters() if p.device.type == "cuda"}, key=str)


class Offload:
    """Saved tensors of a forward pass go to CPU memory and come back for the backward
    (``torch.autograd.graph.saved_tensors_hooks``). With re-entrant checkpointing the tensors
    saved are each checkpointed layer's inputs and what lies between the layers; a layer's own
    activations are recomputed in the backward, on the GPU, one layer at a time. Counts the
    bytes it moved (on the CPU it moves nothing but counts what it would move: the tests)."""

    def __init__(self, torch: Any, min_bytes: int = 1 << 16):
        self.torch = torch
        self.min_bytes = min_bytes
        self.bytes = 0

    def pack(self, tensor: Any) -> Any:
        size = tensor.numel() * tensor.element_size()
        if size < self.min_bytes:
            return tensor
        self.bytes += size
        if tensor.device.type == "cpu":
            return tensor
        host = self.torch.empty(tensor.size(), dtype=tensor.dtype, layout=tensor.layout, pin_memory=True)
        host.copy_(tensor, non_blocking=False)
        return tensor.device, host

    @staticmethod
    def unpack(packed: Any) -> Any:
        if isinstance(packed, tuple):
            device, host = packed
            return host.to(device, non_blocking=True)
        return packed

    def __call__(self) -> Any:
        return self.torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)
