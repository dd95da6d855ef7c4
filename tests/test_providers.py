"""Paper models on their providers' real endpoints, as local servers that answer as the
providers document: Gemini's model ids and inline thoughts, and a context-length
refusal stored as input_overflow however it is found, with the output limit never past the
window."""

from __future__ import annotations

import pytest

from mip.job import run_job
from mip.models import build_backend
from mip.experiment.scoring import InvalidKind, Verdict
from mip.store import Store

from .conftest import compose, run_entry
from .provider_servers import THOUGHT, GeminiServer, RefusingServer, tokens

TRANSPORTS = ["aiohttp", "openai"]
COMMON = ("task=arith", "setting=smoke", "budget=smoke", "pattern=majority_first", "progress=false")


def gemini(tmp_path, server, *more):
    return compose("model=gemini31_flash_lite", f"model.base_url={server.base_url}", *COMMON,
                   f"paths.results_dir={tmp_path}", f"paths.cache_dir={tmp_path / 'cache'}", *more)


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "gm-planted-key-0123456789")
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-planted-key-0123456789")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_gemini_serves_its_bare_id_and_its_thoughts_are_the_trace_never_the_answer(tmp_path, transport):
    with GeminiServer() as server:
        cfg = gemini(tmp_path, server, f"model.transport={transport}")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.verdicts == {"correct": 2}, summary.errors
    assert {b["model"] for b in server.bodies} == {"gemini-3.1-flash-lite-preview"}  # the bare id, as Google takes it
    assert all(b["extra_body"]["google"]["thinking_config"]["include_thoughts"] is True for b in server.bodies)
    for record in Store(cfg.paths.store_dir):
        stage = record.attempts[0].stages[0]
        assert stage.reasoning == THOUGHT and stage.reasoning_from == ["content"]
        assert stage.output.startswith('{"answer"') and "<thought>" not in stage.output


def test_model_id_auto_takes_the_bare_id_of_a_listed_model(tmp_path):
    with GeminiServer() as server:
        server.MODELS = ("models/gemini-3.1-pro-preview",)
        backend = build_backend(gemini(tmp_path, server, "model.model_id=auto").model, tmp_path)
        backend.check()
    assert backend.model_id == "gemini-3.1-pro-preview"


def test_gemini_refuses_a_prompt_over_its_window_and_that_is_input_overflow(tmp_path):
    # The job's estimate (3.5 characters a token) lets the prompt through; Google counts it over the window.
    with GeminiServer(window=400) as server:
        cfg = gemini(tmp_path, server, "model.context_window=400")
        summary = run_job(cfg, tmp_path / "job")
        calls = len(server.bodies)
    assert summary.ok and summary.verdicts == {"input_overflow": 2}, summary.errors
    for record in Store(cfg.paths.store_dir):
        assert record.verdict is Verdict.INVALID and record.invalid_kind is InvalidKind.INPUT_OVERFLOW
        assert "exceeds the maximum number of tokens allowed (400)" in record.attempts[0].stages[0].context_refusal
    from .test_show import show

    shown = show(record.key, f"store={cfg.paths.store_dir}")
    assert shown.returncode == 0 and "refused by the server:" in shown.stdout and "tokens allowed (400)" in shown.stdout
    with GeminiServer(window=400) as server:  # stored: a rerun asks nothing
        again = run_job(gemini(tmp_path, server, "model.context_window=400"), tmp_path / "job2")
    assert calls == 2  # one refusal each is final: the same prompt would be refused again
    assert again.already_stored == 2 and server.bodies == []


def test_a_wrapped_context_length_refusal_is_input_overflow_and_not_asked_again(tmp_path):
    """OpenRouter's "Provider returned error", the provider's refusal in error.metadata.raw."""
    with RefusingServer("openrouter_wrapped", window=400) as server:
        cfg = refusing(tmp_path, server, 400)
        summary = run_job(cfg, tmp_path / "job")
        calls = len(server.bodies)
    assert summary.ok and summary.verdicts == {"input_overflow": 2}, summary.errors
    for record in Store(cfg.paths.store_dir):
        refusal = record.attempts[-1].stages[0].context_refusal
        assert "Provider returned error (DeepInfra): This model's maximum context length is 400 tokens" in refusal
    with RefusingServer("openrouter_wrapped", window=400) as server:
        again = run_job(refusing(tmp_path, server, 400), tmp_path / "job2")
    assert calls == 2 and again.already_stored == 2 and server.bodies == []


def refusing(tmp_path, server, window, *more):
    return compose("model=gpt_oss_120b", f"model.base_url={server.base_url}", "model.tokenizer=null",
                   f"model.context_window={window}", *COMMON, f"paths.results_dir={tmp_path}",
                   f"paths.cache_dir={tmp_path / 'cache'}", *more)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("provider", ["openrouter", "vllm"])
def test_a_context_length_refusal_is_stored_as_input_overflow(tmp_path, provider, transport):
    with RefusingServer(provider, window=400) as server:
        cfg = refusing(tmp_path, server, 400, f"model.transport={transport}")
        summary = run_job(cfg, tmp_path / "job")
    assert summary.ok and summary.verdicts == {"input_overflow": 2}, summary.errors
    for record in Store(cfg.paths.store_dir):
        assert record.invalid_kind is InvalidKind.INPUT_OVERFLOW and record.answer is None
        assert "maximum context length is 400 tokens" in record.attempts[-1].stages[0].context_refusal


@pytest.mark.parametrize("provider", ["openrouter", "vllm"])
def test_the_output_limit_never_pushes_prompt_and_output_past_the_window(tmp_path, provider):
    """The estimate leaves 320 output tokens beside the prompt; the provider counts the prompt
    denser and refuses prompt + 320. The request goes again with what the window leaves,
    and the answer is the model's (for vLLM after a probe with an output limit of 1)."""
    window = 600
    with RefusingServer(provider, window=window) as server:
        cfg = refusing(tmp_path, server, window)
        summary = run_job(cfg, tmp_path / "job")
        sent = [(tokens(b["messages"][-1]["content"]), b["max_tokens"]) for b in server.bodies]
    assert summary.ok and summary.verdicts == {"correct": 2}, summary.errors
    answered = [(n, k) for n, k in sent if n + k <= window]
    assert len(answered) == (4 if provider == "vllm" else 2) and all(n + k == window for n, k in answered if k > 1)
    for record in Store(cfg.paths.store_dir):  # the limit it ran under is the one sent last
        assert record.attempts[0].stages[0].max_tokens in {window - n for n, _ in sent}


def test_an_api_model_names_its_tokenizer_and_a_dry_run_says_why_it_estimates(tmp_path):
    model = compose("model=gpt_oss_120b").model
    assert model.tokenizer == "openai/gpt-oss-120b"  # the open weights' tokenizer, counted exactly where it loads
    proc = run_entry("run.py", "model=gpt_oss_120b", "dry_run=true", *COMMON,
                     env={"MIP_RESULTS_DIR": str(tmp_path / "results"), "HF_HUB_OFFLINE": "1",
                          "HF_HOME": str(tmp_path / "hf")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = proc.stdout + proc.stderr
    assert "estimated at 3.5 characters per token, not counted: the tokenizer openai/gpt-oss-120b is not in the" in said
    assert "huggingface-cli download openai/gpt-oss-120b" in said


def pair_tokenizer(folder):
    """A tokenizer folder that reads two characters a token, as the servers here count."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]{1,2}"), behavior="isolated")
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]").save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize(("window", "calls"), [(400, 0), (600, 2)])
def test_where_its_tokenizer_loads_an_api_model_counts_exactly_before_any_call(tmp_path, window, calls):
    """Counted as the provider counts: a prompt over the window is input_overflow without a call,
    and one under it goes out once, with an output limit that fits beside it."""
    folder = pair_tokenizer(tmp_path / "tokenizer")
    with RefusingServer("openrouter", window=window) as server:
        cfg = refusing(tmp_path, server, window, f"model.tokenizer={folder}")
        summary = run_job(cfg, tmp_path / "job")
        sent = [(tokens(b["messages"][-1]["content"]), b["max_tokens"]) for b in server.bodies]
    assert summary.ok and not summary.tokens_estimated, summary.errors
    assert summary.verdicts == ({"input_overflow": 2} if window == 400 else {"correct": 2})
    assert len(sent) == calls and all(n + k <= window for n, k in sent)  # never refused


def test_the_app_c1_filter_runs_with_gemini_as_its_second_model(tmp_path):
    """Gemini 3.1 Flash-Lite is the paper's second filter model (App. C.1): its listed ids and
    inline thoughts no longer stop the stage, and every instance it answers right is kept."""
    from mip.tools.filtering import run_filter

    from .test_filtering import filter_config

    cfg = filter_config(tmp_path, "task=arith", "task.arith.pool_size=10", "filter_models=[gemini31_flash_lite]",
                        "max_tokens=64")
    with GeminiServer() as server:
        model = compose("model=gemini31_flash_lite", f"model.base_url={server.base_url}").model
        report = run_filter(cfg, [model])
    assert report["calls"][0]["unstored"] == 0
    assert report["pools"]["arith"]["kept"] == {"even_number": 5, "odd_number": 5}  # the server is always right


@pytest.mark.parametrize(("n", "window", "usage", "sent", "verdict"), [
    (437, 600, True, [320, 1, 163], "answer"),  # probed, then the room the exact count leaves
    (437, 400, True, [320, 1], "overflow"),  # the probe is refused too: at least the whole window
    (437, 600, False, [320, 1], "error"),  # no count in the probe's answer: never a 1-token verdict
])
def test_a_lower_bound_refusal_is_probed_once_and_resolved(n, window, usage, sent, verdict):
    """vLLM's "at least P" (mip.models.overflow.send_within_window), against a stand-in for its server."""
    import asyncio

    import orjson

    from mip.models import Request
    from mip.models.overflow import send_within_window

    seen = []

    async def send(k):
        seen.append(k)
        if n + k > window:
            bound = min(n, window - k + 1)
            message = (f"This model's maximum context length is {window} tokens. However, you requested {k} output "
                       f"tokens and your prompt contains at least {bound} input tokens, for a total of at least "
                       f"{bound + k} tokens.")
            return 400, {}, orjson.dumps({"error": {"message": message}})
        return 200, {}, orjson.dumps({"usage": {"prompt_tokens": n}} if usage else {"choices": []})

    (status, _, _), request, refusal = asyncio.run(send_within_window(send, lambda r: r.max_tokens, Request("r", "p", 320), 320))
    assert seen == sent
    outcome = "answer" if refusal is None else "overflow" if refusal.overflows else "error"
    assert outcome == verdict and (status == 200) == (verdict != "overflow")


def test_a_vllm_models_dry_run_says_why_it_estimates(tmp_path):
    """A vLLM model names no model.tokenizer: its weights' tokenizer is its model id, and a dry run
    on a machine without it says that it estimates, and why (it said nothing before)."""
    model = compose("model=qwen36_35b").model
    assert model.backend == "vllm" and not model.tokenizer
    proc = run_entry("run.py", "model=qwen36_35b", "dry_run=true", *COMMON,
                     env={"MIP_RESULTS_DIR": str(tmp_path / "results"), "HF_HUB_OFFLINE": "1",
                          "HF_HOME": str(tmp_path / "hf")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = proc.stdout + proc.stderr
    assert f"not counted: the tokenizer {model.model_id} is not in the Hugging Face cache" in said
    assert f"the tokenizer {model.model_id} could not be loaded, see the warning above" in said
