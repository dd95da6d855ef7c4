"""Input × Gradient of one replay (§5.2.1, App. F.1).

A stored output is replayed with teacher forcing. With y₀, y₁ the task's two labels
(in config order), the score is

    S_r = log p(output with y₁ at the answer span) − log p(output with y₀ there),

a label string's log-probability being the sum of its tokens' — which is the
selected-minus-alternative margin with its sign reversed when y₀ was selected. For each
prompt token t, |⟨E_t, ∂S_r/∂E_t⟩| is its attribution; an instance's u_{r,i} is the mean
over the tokens of its text, and R_{r,i} = N·u_{r,i} / Σ_j u_{r,j} ("share × uniform").

Passes: the two teacher-forced sequences are identical up to the answer label, and nothing
after the label is replayed. One forward and one backward serve both labels
(``mip.attribution.packing``): the prompt and the response up to where the two part are fed
once, then each label's continuation, y₀'s blind to y₁'s through a 4D attention mask and
with its position ids restarting after the shared prefix; both log-probabilities are read
from the one set of logits and S_r has one backward into the prompt embeddings. Where the
labels differ in their last token only (``negative``/``positive``, ``LOC``/``PER`` with most
tokenizers) nothing follows the shared prefix and no mask is needed; labels of several
tokens (``even_number``/``odd_number``) take the mask. ``passes=2`` runs the two-pass
definition instead (one forward and backward per label, their gradients adding up in the
shared embeddings): the reference the one pass is tested and benchmarked against. A model
whose attention kernel takes no custom mask (flash attention) keeps two passes for labels
that need one.

Memory: gradient checkpointing (HF checkpoints only in train mode, so dropout is zeroed and
train mode set) and logits only at the label positions (``logits_to_keep``). With
``offload`` the checkpoints (each layer's input, the one thing kept per layer) are packed
into CPU memory as the forward makes them and brought back as the backward reaches them
(``mip.attribution.memory`` chooses it from the free GPU memory). Scores accumulate in
float32 whatever the weights' dtype.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from mip.attribution import memory
from mip.attribution.packing import Packed, Prepared
from mip.attribution.replay_record import Replay
from mip.attribution.teacher_forced import DEFAULT_REASONING_FORMAT, ReplayInputs


def _at_least_float32(x: Any) -> Any:
    """bf16/fp16 weights, float32 arithmetic for scores; float64 stays float64 (the tests)."""
    import torch

    return x if x.dtype in (torch.float32, torch.float64) else x.float()


class Attributor:
    """IxG replays with one model and tokenizer (``transformers`` causal LM)."""

    def __init__(self, model: Any, tokenizer: Any, checkpointing: bool = True,
                 reasoning_format: str = DEFAULT_REASONING_FORMAT, passes: int | None = None,
                 offload: bool = False, mask: bool = True):
        """``passes``: None takes one pass (two only for labels needing a mask the attention kernel
        cannot take, or ``mask`` False: the memory plan has no room for it), 1 one pass or an
        error, 2 the two-pass definition always.
        ``offload``: checkpoints kept in CPU memory (implies checkpointing, re-entrant)."""
        import contextlib

        import torch

        if passes not in (None, 1, 2):
            raise ValueError(f"passes must be None, 1 or 2, not {passes!r}")
        self.torch = torch
        self.model = model
        self.tokenizer = tokenizer
        self.inputs = ReplayInputs(tokenizer, reasoning_format)
        self.passes = passes
        self.mask = mask
        self.offload = memory.Offload(torch) if offload else None
        self._saving = self.offload if offload else contextlib.nullcontext
        checkpointing = checkpointing or offload
        for p in model.parameters():
            p.requires_grad_(False)
        for module in model.modules():  # train mode for checkpointing, but no dropout
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        for name in ("attention_dropout", "hidden_dropout", "dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop"):
            if hasattr(model.config, name):
                setattr(model.config, name, 0.0)
        self.checkpointing = checkpointing and getattr(model, "supports_gradient_checkpointing", False)
        if self.checkpointing:
            # Non-re-entrant checkpointing keeps each layer's input alive by reference, out of reach of
            # saved-tensor hooks; the re-entrant kind saves it with save_for_backward, which the
            # offload's hooks move to the CPU. Both give the same gradients (tested).
            kwargs = {"use_reentrant": bool(offload)}
            if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.2x
                model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
            model.train()
        else:
            model.eval()

    @property
    def checkpointing_active(self) -> bool:
        """Whether HF will really checkpoint (it does so only in train mode)."""
        inner = getattr(self.model, "model", self.model)
        return bool(getattr(inner, "gradient_checkpointing", False)) and self.model.training

    def label_logprob(self, prompt_embeds: Any, prompt_len: int, response_ids: list[int],
                      label_positions: list[int]) -> Any:
        """Σ log p of the label tokens (positions in the full sequence), teacher-forced, from this
        label's own forward pass: the two-pass definition."""
        torch = self.torch
        embed = self.model.get_input_embeddings()
        response = embed(torch.tensor([response_ids], device=embed.weight.device)).to(prompt_embeds.dtype)
        full = torch.cat([prompt_embeds, response.to(prompt_embeds.device)], dim=1)
        keep = torch.tensor([p - 1 for p in label_positions], device=full.device)
        with self._saving():
            out = self.model(inputs_embeds=full, use_cache=False, logits_to_keep=keep)
        logits = _at_least_float32(out.logits[0])
        if logits.shape[0] != len(label_positions):  # a model ignoring logits_to_keep returns them all
            logits = logits[keep.to(logits.device)]
        targets = torch.tensor([response_ids[p - prompt_len] for p in label_positions], device=logits.device)
        return torch.log_softmax(logits, dim=-1).gather(1, targets[:, None]).sum()

    def prepare(self, prompt: str, texts: Sequence[str], output: str, reasoning: str | None,
                labels: Sequence[str], selected: str) -> Prepared:
        """What the replay feeds the model (:meth:`mip.attribution.teacher_forced.ReplayInputs.prepare`)."""
        return self.inputs.prepare(prompt, texts, output, reasoning, labels, selected)

    def prompt_embeddings(self, prepared: Prepared) -> Any:
        embed = self.model.get_input_embeddings()
        with self.torch.no_grad():
            return embed(self.torch.tensor([prepared.prompt_ids], device=embed.weight.device))

    def score(self, prompt_embeds: Any, prepared: Prepared) -> Any:
        """S_r as a function of the prompt embeddings (one graph holding both passes)."""
        y0, y1 = prepared.labels
        n = len(prepared.prompt_ids)
        return (self.label_logprob(prompt_embeds, n, *prepared.responses[y1])
                - self.label_logprob(prompt_embeds, n, *prepared.responses[y0]))

    def _masks(self) -> bool:
        """Whether a custom 4D mask may be used: the memory plan holds it, and the model's
        attention takes one (SDPA and eager do)."""
        return self.mask and getattr(self.model.config, "_attn_implementation", None) in (None, "sdpa", "eager")

    def passes_for(self, prepared: Prepared) -> int:
        """1 unless ``passes`` forces two, or the labels need a mask the attention kernel cannot take."""
        if self.passes == 2:
            return 2
        if prepared.shared or self._masks():
            return 1
        if self.passes == 1:
            raise ValueError("passes=1 needs a custom attention mask for these labels; " + (
                f"attention {self.model.config._attn_implementation!r} takes none (use sdpa or eager)." if self.mask
                else "the memory plan has no room for it."))
        return 2

    def packed_logprobs(self, prompt_embeds: Any, packed: Packed) -> dict[str, Any]:
        """Σ log p of each label's tokens from one forward over the packed sequence."""
        torch = self.torch
        device = prompt_embeds.device
        parts = [prompt_embeds]
        if packed.ids:
            embed = self.model.get_input_embeddings()
            parts.append(embed(torch.tensor([packed.ids], device=embed.weight.device)).to(device, prompt_embeds.dtype))
        kwargs: dict[str, Any] = {}
        if packed.needs_mask:
            boolean = getattr(self.model.config, "_attn_implementation", None) in (None, "sdpa")
            kwargs["attention_mask"] = packed.mask(torch, device, None if boolean else prompt_embeds.dtype)
            kwargs["position_ids"] = torch.tensor([packed.position_ids()], device=device)
        rows = sorted({r for label_rows in packed.rows.values() for r in label_rows})
        keep = torch.tensor(rows, device=device)
        with self._saving():
            out = self.model(inputs_embeds=torch.cat(parts, dim=1), use_cache=False, logits_to_keep=keep, **kwargs)
        logits = _at_least_float32(out.logits[0])
        if logits.shape[0] != len(rows):  # a model ignoring logits_to_keep returns them all
            logits = logits[keep.to(logits.device)]
        logprobs = torch.log_softmax(logits, dim=-1)
        index = {r: i for i, r in enumerate(rows)}
        return {label: logprobs[torch.tensor([index[r] for r in label_rows], device=logprobs.device),
                                torch.tensor(packed.targets[label], device=logprobs.device)].sum()
                for label, label_rows in packed.rows.items()}

    def token_ixg(self, prepared: Prepared) -> tuple[float, Any, dict[str, float]]:
        """(S_r, ⟨E_t, ∂S_r/∂E_t⟩ for every prompt token, the two log-probabilities).

        One pass: one forward over the packed sequence, both labels' log-probabilities from its
        logits, one backward of their difference. Two passes: one after the other, each with
        its own backward, so only one graph is alive at a time; their gradients add up in the
        shared embeddings.
        """
        y0, y1 = prepared.labels
        n = len(prepared.prompt_ids)
        prompt_embeds = self.prompt_embeddings(prepared).detach().clone().requires_grad_(True)
        logps = {}
        if self.passes_for(prepared) == 1:
            lp = self.packed_logprobs(prompt_embeds, prepared.packed())
            (lp[y1] - lp[y0]).backward()
            logps = {label: float(lp[label].detach()) for label in (y1, y0)}
        else:
            for label, sign in ((y1, 1.0), (y0, -1.0)):
                logp = self.label_logprob(prompt_embeds, n, *prepared.responses[label])
                (sign * logp).backward()
                logps[label] = float(logp.detach())
        ixg = (_at_least_float32(prompt_embeds.detach()[0]) * _at_least_float32(prompt_embeds.grad[0])).sum(-1)
        return logps[y1] - logps[y0], ixg, logps

    def replay(self, key: str, prompt: str, texts: Sequence[str], output: str, reasoning: str | None,
               labels: Sequence[str], selected: str) -> Replay:
        """Attribute one stored output to the instances of its prompt."""
        torch = self.torch
        start_time = time.perf_counter()
        devices = memory.cuda_devices(self.model)
        for device in devices:
            torch.cuda.reset_peak_memory_stats(device)
        moved = self.offload.bytes if self.offload else 0
        prepared = self.prepare(prompt, texts, output, reasoning, labels, selected)
        passes = self.passes_for(prepared)
        score, ixg, logps = self.token_ixg(prepared)
        for device in devices:
            torch.cuda.synchronize(device)
        magnitude = ixg.abs()
        u = [float(magnitude[g].mean()) for g in prepared.groups]
        signed = [float(ixg[g].mean()) for g in prepared.groups]
        total = sum(u)
        share = [len(u) * x / total if total > 0 else 1.0 for x in u]
        return Replay(
            key=key, selected=selected, score=score, u=u, share=share, signed=signed,
            tokens=len(prepared.prompt_ids), instance_tokens=[len(g) for g in prepared.groups],
            seconds=time.perf_counter() - start_time, peak_rss_mb=memory.peak_rss_mb(), passes=passes,
            peak_gpu_allocated_mb=(sum(torch.cuda.max_memory_allocated(d) for d in devices) / 2**20
                                   if devices else None),
            peak_gpu_reserved_mb=(sum(torch.cuda.max_memory_reserved(d) for d in devices) / 2**20
                                  if devices else None),
            offloaded_mb=((self.offload.bytes - moved) / 2**20) if self.offload else 0.0,
            extra={"logp": logps, "checkpointing": self.checkpointing_active},
        )
