"""What a model's preflight measured, for a dry run of a model whose config lacks it:
the provider's own count of the preflight prompt's tokens (characters per token, where the
config has no tokenizer) and the cost the provider reported for the request (a price, where
the config has none). The preflight (:mod:`mip.tools.preflight`) keeps one JSON file per
request under ``<results_dir>/preflight/<model>/``; the newest that passed and carries the
numbers is read here.

A price, best first:

1. The prompt and completion prices the provider's model listing gives the model
   (OpenRouter's ``GET /models`` ``pricing``, :mod:`mip.tools.listed_price`), read by the
   preflight: input and output tokens priced apart. Where the reply also reported its cost,
   the dry run says whether the listed prices account for it (a pinned provider may charge
   more than OpenRouter's headline price).
2. Else the one total the reply reports (OpenRouter's ``usage.cost``) for a short prompt and a
   long answer, which cannot be split into input and output prices: every token at the total
   over the output tokens — the output price, a little over — input tokens included, and the
   dry run says "upper bound" (input costs no more than output at every provider mip ships a
   config for).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from mip.config import Config
    from mip.job.job_summary import JobSummary


def newest(results_dir: str | Path, model: str, cfg: Config | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The newest passing preflight of ``model`` that carries the provider's counts (and, given
    ``cfg``, speaks for it: :func:`mip.job.preflight_match.why_not_for`).

    >>> newest("/nonexistent/results", "qwen36_plus") is None
    True
    """
    hit, _ = _newest(results_dir, model, cfg)
    return hit


def _newest(results_dir: str | Path, model: str, cfg: Config | None) -> tuple[tuple[Path, dict] | None, str]:
    """:func:`newest`, and why the newest passing preflight it passed over is not used."""
    from mip.job.preflight_match import why_not_for

    folder = Path(results_dir).expanduser() / "preflight" / model
    why = ""
    for path in sorted(folder.glob("*.json"), reverse=True):  # named <date>T<time>-<key>.json
        try:
            found = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(found, dict) and found.get("passed") is True and found.get("prompt_tokens"):
            if cfg is None or (not_used := why_not_for(cfg, found)) is None:
                return (path, found), ""
            why = why or f"not using the preflight {path} ({not_used}): run preflight=only again to measure"
    return None, why


def fill_in(cfg: Config, summary: JobSummary) -> None:
    """Put the preflight's measured price and characters per token into a dry run's ``cfg``
    and ``summary`` where the config has none, and say which numbers are measured and when
    (``summary.measured``)."""
    hit, why = _newest(cfg.paths.results_dir, cfg.model.name, cfg)
    if hit is None:
        summary.measured = why
        return
    path, found = hit
    said = []
    chars, prompt = found.get("prompt_chars"), found.get("prompt_tokens")
    if not cfg.model.tokenizer and chars and prompt:
        cfg.model.chars_per_token = round(chars / prompt, 2)
        said.append(f"{cfg.model.chars_per_token:g} characters a token (the provider counted {prompt:,} tokens in "
                    f"the preflight's {chars:,}-character prompt, chat template included: errs on the long side)")
    cost, output = found.get("cost_usd"), found.get("completion_tokens")
    unpriced = cfg.model.price_input_per_mtok is None or cfg.model.price_output_per_mtok is None
    listed_in, listed_out = found.get("listed_prompt_per_mtok"), found.get("listed_completion_per_mtok")
    reported = found.get("cost_from") == "the provider's usage.cost" and cost
    if unpriced and listed_in is not None and listed_out is not None:
        cfg.model.price_input_per_mtok, cfg.model.price_output_per_mtok = listed_in, listed_out
        summary.price_input_per_mtok, summary.price_output_per_mtok = listed_in, listed_out
        said.append(f"${listed_in:g} input and ${listed_out:g} output per million tokens, as "
                    f"{found.get('listed_from') or 'the provider'} lists them" + _against(found, listed_in, listed_out))
    elif unpriced and reported and output:
        per_mtok = round(cost / output * 1e6, 4)
        cfg.model.price_input_per_mtok = cfg.model.price_output_per_mtok = per_mtok
        summary.price_input_per_mtok = summary.price_output_per_mtok = per_mtok
        said.append(f"${per_mtok:g} per million tokens, input and output alike (the provider reported ${cost:g} for "
                    f"{prompt:,} prompt + {output:,} output tokens; input priced as output: an upper bound)")
    if said:
        summary.measured = f"measured by the preflight of {found.get('when', '?')} ({path}): " + "; ".join(said)


def _against(found: dict[str, Any], listed_in: float, listed_out: float) -> str:
    """How the listed prices compare with the cost the preflight's reply reported, if any."""
    cost, prompt, output = found.get("cost_usd"), found.get("prompt_tokens"), found.get("completion_tokens")
    if found.get("cost_from") != "the provider's usage.cost" or not cost or not prompt or not output:
        return ""
    expected = (prompt * listed_in + output * listed_out) / 1e6
    verdict = "as listed" if abs(expected - cost) <= 0.05 * cost else ("more than listed: the prices are a lower bound"
                                                                      if cost > expected else "less than listed")
    return (f" (the preflight's reply reported ${cost:g} for {prompt:,} prompt + {output:,} output tokens, "
            f"${expected:.6g} at these prices: {verdict})")
