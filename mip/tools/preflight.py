"""Preflight: one short request per model of a sweep, with exactly the body the sweep will
send, before the sweep spends.

    # send one request per model (not per job), report, and keep the result; no job runs:
    python run.py -m model=gpt_oss_120b,qwen36_plus 'pattern=glob(*)' seed=0,1,2 preflight=only
    # the sweep itself, refused in one line (exit 2) unless a passing preflight of its body is on file:
    python run.py -m +experiment=core model=qwen36_plus preflight=required

The body is built by the job's own builders (:meth:`mip.strategies.Context.request`,
:func:`mip.models.chat_api.request_body`): reasoning settings, provider pinning with
``require_parameters``/``allow_fallbacks``, the split budget (``max_tokens`` plus
``reasoning.max_tokens``) — only the prompt differs. A result is keyed by a hash of that body
without its messages (and the endpoint), so a changed setting needs a new preflight. Results:
``<results_dir>/preflight/<model>/<date>T<time>-<key>.json``. The Hydra hook that runs this
before any job is :mod:`mip.entry.preflight_hook`.

The prompt asks for long reasoning and then an answer of a few hundred tokens, so one reply
can tell whether the provider counts reasoning inside ``max_tokens``: output past
``max_tokens`` means it does not (the answer has ``max_tokens`` of its own, and a split budget
can reach ``max_tokens`` + ``reasoning.max_tokens``); output cut at ``max_tokens`` means it
does; a model that stops on its own before either limit leaves it undecided (run the preflight
once more with a small budget, e.g. ``budget=smoke``, to settle it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import orjson

import mip
from mip.experiment.spend import usage_cost
from mip.config import Config
from mip.models import BackendContext, api_key
from mip.models.chat_api import completion_from, error_message, request_body
from mip.models.safe_http import SameOrigin, read_capped, with_deadline
from mip.tools.preflight_checks import REASONING_FIELDS, settle, split_error, trace_error

MODES = ("off", "only", "required")
PROMPT = ("Think step by step, at length, before you answer: go through the whole numbers from 2 to 1000 one by "
          "one and check for each whether it is prime. Then answer with every prime below 1000, in one line, "
          "separated by commas, and nothing else.")
INLINE = re.compile(r"<(think|thought)>", re.I)


@dataclasses.dataclass
class Preflight:
    """What one preflight request found; stored as JSON, one file per request."""

    model: str
    key: str
    when: str
    base_url: str
    body: dict[str, Any]
    """The body sent, without its messages: what the key hashes."""
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The model's answer-shaping settings (:func:`mip.job.preflight_match.model_settings`)."""
    passed: bool = False
    status: Optional[int] = None
    why: str = ""
    provider: Optional[str] = None
    pinned: list[str] = dataclasses.field(default_factory=list)
    reasoning_in: list[str] = dataclasses.field(default_factory=list)
    """Where the reasoning came back: reasoning, reasoning_content, reasoning_details, inline, or none."""
    max_tokens: Optional[int] = None
    reasoning_budget: Optional[int] = None
    completion_tokens: Optional[int] = None
    reasoning_tokens: Optional[int] = None
    answer_tokens: Optional[int] = None
    finish_reason: Optional[str] = None
    max_tokens_counts_reasoning: str = "undecided"
    """yes | no | undecided, with the reason in ``counting``."""
    counting: str = ""
    latency_s: Optional[float] = None
    cost_usd: Optional[float] = None
    cost_from: str = "unknown"
    prompt_tokens: Optional[int] = None
    """The prompt's tokens as the provider counted them (``usage.prompt_tokens``)."""
    prompt_chars: Optional[int] = None
    """The characters of the prompt sent: with ``prompt_tokens``, the characters a token a dry run uses."""
    listed_prompt_per_mtok: Optional[float] = None
    """USD per million prompt tokens as the provider's model listing gives them
    (:mod:`mip.tools.listed_price`; read only for a model whose config has no price)."""
    listed_completion_per_mtok: Optional[float] = None
    listed_from: str = ""


def sent_body(cfg: Config) -> dict[str, Any]:
    """The body a job of ``cfg`` sends for a short prompt, built by the job's own builders."""
    from mip.job.tokens import context_for  # the job's request: its output limit is the budget here

    request = context_for(cfg, None).request("preflight", PROMPT, len(PROMPT) // 2)
    return request_body(cfg.model, request, cfg.model.model_id)


def body_key(cfg: Config) -> tuple[dict[str, Any], str]:
    """The body without its messages, and its key: a hash of it and the endpoint."""
    body = {k: v for k, v in sent_body(cfg).items() if k != "messages"}
    blob = orjson.dumps({"base_url": (cfg.model.base_url or "").rstrip("/"), "body": body}, option=orjson.OPT_SORT_KEYS)
    return body, hashlib.sha256(blob).hexdigest()[:16]


def folder(cfg: Config) -> Path:
    return Path(cfg.paths.results_dir).expanduser() / "preflight" / cfg.model.name


def passing_on_file(cfg: Config) -> tuple[Optional[Path], str]:
    """The newest stored preflight of this model and body that passed and speaks for ``cfg``
    (:func:`mip.job.preflight_match.why_not_for`), if any; else why the newest passing one does not."""
    from mip.job.preflight_match import why_not_for

    _, key = body_key(cfg)
    why = ""
    for path in sorted(folder(cfg).glob(f"*-{key}.json"), reverse=True):
        try:
            found = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if found.get("passed") is True:
            if (not_used := why_not_for(cfg, found)) is None:
                return path, ""
            why = why or f"{path.name}: {not_used}"
    return None, why


def run_preflight(cfg: Config) -> Preflight:
    """Send the one request and read what came back."""
    body, key = body_key(cfg)
    from mip.job.preflight_match import masked_url, model_settings

    found = Preflight(cfg.model.name, key, datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S"),
                      masked_url(cfg.model.base_url or ""), body, model_settings(cfg),
                      pinned=list(cfg.model.provider.order))
    full = sent_body(cfg)
    if cfg.model.model_id == "auto":  # the one model a local server lists, as the job would take it
        full["model"] = _served_model(cfg)
    start = time.perf_counter()
    status, raw = _post(cfg, full)
    found.latency_s = round(time.perf_counter() - start, 3)
    found.status = status
    if status != 200:
        found.why = f"{error_message(raw)}{_hint(cfg, status, raw)}"
        return found
    _read_reply(cfg, found, raw)
    if cfg.model.price_input_per_mtok is None or cfg.model.price_output_per_mtok is None:
        from mip.tools.listed_price import listed_price

        if listed := listed_price(cfg.model.base_url or "", full["model"]):
            found.listed_prompt_per_mtok, found.listed_from = listed.prompt_per_mtok, listed.url
            found.listed_completion_per_mtok = listed.completion_per_mtok
    return found


def _post(cfg: Config, body: dict[str, Any]) -> tuple[int | None, bytes]:
    url = f"{cfg.model.base_url.rstrip('/')}/chat/completions"
    key = api_key(cfg.model) or "EMPTY"
    request = urllib.request.Request(url, data=orjson.dumps(body), headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json", "User-Agent": f"mip/{mip.__version__}"})
    opener = urllib.request.build_opener(SameOrigin(url))
    limit = cfg.model.request_timeout_s

    def exchange() -> bytes:
        return read_capped(opener.open(request, timeout=limit), cfg.model.max_response_bytes)

    try:
        return 200, with_deadline(exchange, limit, f"{url} did not answer within {limit:g} s")
    except urllib.error.HTTPError as e:
        return e.code, e.read()[:10_000]
    except (urllib.error.URLError, OSError, RuntimeError) as e:
        return None, str(getattr(e, "reason", e)).encode()


def _served_model(cfg: Config) -> str:
    from mip.models.openai_compat import OpenAICompatBackend

    backend = OpenAICompatBackend(cfg.model, BackendContext(Path(cfg.paths.cache_dir).expanduser(), api_key(cfg.model)))
    backend.check()
    return backend.model_id


def _hint(cfg: Config, status: int | None, raw: bytes) -> str:
    """What to do about a refusal, as the provider's documented refusals mean it
    (:func:`mip.models.fail_fast.fix_for`: the same words a job stopped by them ends with)."""
    from mip.models.fail_fast import fix_for

    if status is None:
        return " — the endpoint could not be reached; check model.base_url and the network"
    message = error_message(raw)
    if status == 404 and "no endpoints" in message.lower():
        return (f" — no provider in model.provider.order {list(cfg.model.provider.order)} serves every parameter of "
                "this body (require_parameters) or its max_tokens; drop the parameter or choose another provider")
    fix = fix_for(status, message, cfg.model.api_key_env)
    return "" if fix == "see the provider's message" else f" — {fix}"


def _read_reply(cfg: Config, found: Preflight, raw: bytes) -> None:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        found.why = f"HTTP 200 with no JSON ({len(raw)} bytes)"
        return
    completion = completion_from("preflight", data, found.latency_s or 0.0)
    if completion.error:
        found.why = completion.error
        return
    message = data["choices"][0].get("message") or {}
    found.reasoning_in = [f for f in REASONING_FIELDS if message.get(f) not in (None, "", [])]
    if isinstance(message.get("content"), str) and INLINE.search(message["content"]):
        found.reasoning_in.append("inline")
    found.reasoning_in = found.reasoning_in or ["none"]
    found.provider = data.get("provider") if isinstance(data.get("provider"), str) else None
    found.finish_reason = completion.finish_reason
    found.completion_tokens, found.reasoning_tokens = completion.completion_tokens, completion.reasoning_tokens
    found.prompt_tokens, found.prompt_chars = completion.prompt_tokens, len(PROMPT)
    if found.completion_tokens is not None and found.reasoning_tokens is not None:
        found.answer_tokens = found.completion_tokens - found.reasoning_tokens
    _counting(cfg, found)
    settle(cfg, found, folder(cfg))  # undecided here: a smaller budget's preflight may have settled it
    _cost(cfg, found, completion.usage or {}, completion.prompt_tokens)
    found.why = _pinning_error(cfg, found.provider) or split_error(cfg, found) or trace_error(cfg, found)
    found.passed = not found.why


def _counting(cfg: Config, found: Preflight) -> None:
    """Whether ``max_tokens`` counts reasoning, from the output against the limits."""
    found.max_tokens = found.body.get(cfg.model.max_tokens_param)
    split = cfg.model.budget_split
    if split.answer_tokens is not None:
        node: Any = found.body
        for part in split.reasoning_field.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        found.reasoning_budget = node
    used, limit = found.completion_tokens, found.max_tokens
    if used is None or limit is None:
        found.counting = "the reply has no usage.completion_tokens"
    elif used > limit:
        found.max_tokens_counts_reasoning = "no"
        reach = limit + (found.reasoning_budget or 0) if found.reasoning_budget else None
        found.counting = (f"{used:,} output tokens > max_tokens {limit:,}: the provider does not count reasoning in "
                          f"max_tokens" + (f"; output can reach about {reach:,} tokens" if reach else ""))
    elif found.finish_reason == "length":
        found.max_tokens_counts_reasoning = "yes"
        found.counting = f"cut at {used:,} of max_tokens {limit:,} with reasoning inside: max_tokens bounds all output"
    else:
        found.counting = (f"the model stopped on its own at {used:,} of max_tokens {limit:,}; run once more with a "
                          "small budget (e.g. budget=smoke) to settle it")


def _cost(cfg: Config, found: Preflight, usage: dict[str, Any], prompt_tokens: int | None) -> None:
    if (reported := usage_cost(usage)) is not None:  # a number, or a number as text
        found.cost_usd, found.cost_from = reported, "the provider's usage.cost"
    elif None not in (cfg.model.price_input_per_mtok, cfg.model.price_output_per_mtok, prompt_tokens,
                      found.completion_tokens):
        found.cost_usd = (prompt_tokens * cfg.model.price_input_per_mtok
                          + found.completion_tokens * cfg.model.price_output_per_mtok) / 1e6
        found.cost_from = "the model config's prices"


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _pinning_error(cfg: Config, provider: str | None) -> str:
    """A reply served by a provider the pinning excludes (fallbacks off) fails the preflight."""
    pinned = cfg.model.provider.order
    if provider and pinned and not cfg.model.provider.allow_fallbacks and \
            _slug(provider) not in {_slug(p) for p in pinned}:
        return f"served by {provider}, not by the pinned {', '.join(pinned)}"
    return ""


def write(cfg: Config, found: Preflight) -> Path:
    path = folder(cfg) / f"{found.when}-{found.key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(dataclasses.asdict(found), option=orjson.OPT_INDENT_2))
    return path


def describe(found: Preflight, path: Path) -> str:
    """One line per model for the terminal."""
    head = f"{found.model}: {'PASS' if found.passed else 'FAIL'} HTTP {found.status or '-'}"
    if found.status != 200 or not found.completion_tokens:
        return f"{head} · {found.why} · {found.latency_s or 0:.1f} s → {path}"
    pinned = f" (pinned {', '.join(found.pinned)})" if found.pinned else ""
    budget = f", reasoning budget {found.reasoning_budget:,}" if found.reasoning_budget else ""
    cost = f"${found.cost_usd:.4f} ({found.cost_from})" if found.cost_usd is not None else "cost unknown"
    reasoning, answer = (f"{n:,}" if n is not None else "?" for n in (found.reasoning_tokens, found.answer_tokens))
    return (f"{head} · served by {found.provider or '?'}{pinned} · reasoning in {', '.join(found.reasoning_in)} · "
            f"{reasoning} reasoning + {answer} answer = {found.completion_tokens:,} "
            f"output tokens of max_tokens {found.max_tokens:,}{budget} ({found.finish_reason}) · max_tokens counts "
            f"reasoning: {found.max_tokens_counts_reasoning} — {found.counting} · {found.latency_s:.1f} s · {cost}"
            f"{' · ' + found.why if found.why else ''} → {path}")
