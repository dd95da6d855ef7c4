"""Input × Gradient (App. F.1): the gradient, the token spans, the shares, real replays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mip.attribution.ixg import Attributor
from mip.attribution.spans import ReplaySkip
from mip.attribution.spans import answer_span, instance_spans, tokens_per_instance
from mip.attribution.profiles import profile, region_shares
from mip.data import build_pool
from mip.strategies.rebuild import build_prompt
from mip.models.hf_local import converted_dir

from .conftest import RAW, compose, needs_raw

torch: Any = None
transformers: Any = None


@pytest.fixture(scope="module", autouse=True)
def _stack():
    """torch and transformers, imported when this module's tests run rather than when every
    test worker collects it (~3 s of CPU each)."""
    global torch, transformers
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tokenizer():
    folder = converted_dir(compose("model=smollm2_135m").model, Path("~/.cache/mip").expanduser())
    return transformers.AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def tiny_weights(tokenizer, tmp_path_factory):
    """A folder holding a tiny random llama and SmolLM2's tokenizer, for ``weights=``: a replay
    on it takes the path a real one takes, in a fraction of a second (the real SmolLM2 replays
    are test_real_smollm2_replays_give_profiles_and_refuse_tampered_records, a slow test)."""
    folder = tmp_path_factory.mktemp("tiny_weights")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def tiny(tokenizer, monkeypatch):
    """A tiny random llama in float64, its RMSNorm kept in float64 for a tight check."""
    from transformers.models.llama import modeling_llama

    def rms_float64(self, hidden):
        variance = hidden.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden * torch.rsqrt(variance + self.variance_epsilon))

    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", rms_float64)
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
    return Attributor(transformers.LlamaForCausalLM(cfg).to(torch.float64), tokenizer)


WSD = ["place", "programming_language"]
TEXTS = ["the colonial authorities exiled him to java", "written in java 1.5 by paul", "java and sumatra"]


def wsd_prompt():
    return build_prompt(compose("task=wsd").task["wsd"], "standard", TEXTS)


def test_gradient_matches_a_finite_difference_and_score_matches_a_plain_forward(tiny):
    prompt = wsd_prompt()
    output = 'Instance 2 is code. {"answer": "programming_language"}'
    prepared = tiny.prepare(prompt, TEXTS, output, None, WSD, "programming_language")
    assert tiny.checkpointing_active
    score, ixg, logps = tiny.token_ixg(prepared)
    embeds = tiny.prompt_embeddings(prepared)
    eps = 1e-5
    with torch.no_grad():
        directional = (tiny.score(embeds * (1 + eps), prepared) - tiny.score(embeds * (1 - eps), prepared)) / (2 * eps)
    # Σ_t ⟨E_t, ∂S/∂E_t⟩ is the derivative of S along E.
    assert float(ixg.sum()) == pytest.approx(float(directional), rel=1e-6, abs=1e-9)
    # S against an independent forward on token ids, no checkpointing, no logits_to_keep.
    tiny.model.eval()
    with torch.no_grad():
        def logp(label):
            ids, positions = prepared.responses[label]
            full = torch.tensor([prepared.prompt_ids + ids])
            out = torch.log_softmax(tiny.model(full).logits[0], -1)
            return sum(float(out[p - 1, full[0, p]]) for p in positions)

        assert score == pytest.approx(logp("programming_language") - logp("place"), rel=1e-9)
        assert logps["place"] == pytest.approx(logp("place"), rel=1e-9)


def test_score_points_from_y0_to_y1_whichever_label_was_selected(tiny):
    prompt = wsd_prompt()
    a = tiny.replay("a", prompt, TEXTS, '{"answer": "place"}', None, WSD, "place")
    b = tiny.replay("b", prompt, TEXTS, '{"answer": "programming_language"}', None, WSD, "programming_language")
    assert a.score == pytest.approx(a.extra["logp"]["programming_language"] - a.extra["logp"]["place"])
    assert b.score == pytest.approx(b.extra["logp"]["programming_language"] - b.extra["logp"]["place"])
    for replay in (a, b):
        assert sum(replay.share) == pytest.approx(len(TEXTS))  # R sums to N
        assert all(x > 0 for x in replay.share)


@needs_raw
@pytest.mark.parametrize("task", ["math", "ner", "occurrence", "sentiment", "wsd", "arith"])
def test_every_instance_gets_its_own_tokens_and_no_instruction_token(tokenizer, task):
    cfg = compose(f"task={task}", f"data_dir={RAW}")
    pool = build_pool(cfg.task[task], cfg.data_dir, cfg.paths.cache_dir)
    texts = [x.text for x in pool.instances[:25]]
    prompt = build_prompt(cfg.task[task], "standard", texts)
    enc = tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
    spans = instance_spans(prompt, texts)
    groups = tokens_per_instance(enc["offset_mapping"], spans)
    assert all(groups)
    flat = [t for g in groups for t in g]
    assert len(flat) == len(set(flat))  # no token in two instances
    instructions_end = prompt.index("Instance 1: ") + len("Instance 1: ")
    assert all(enc["offset_mapping"][t][1] > instructions_end for t in flat)
    for (start, end), group in zip(spans, groups):
        assert all(enc["offset_mapping"][t][0] < end and enc["offset_mapping"][t][1] > start for t in group)


def test_what_follows_the_answer_is_not_replayed_and_changes_nothing(tiny):
    output = '{"answer": "place"} and then a long list of every instance, which the label cannot see'
    prepared = tiny.prepare(wsd_prompt(), TEXTS, output, None, WSD, "place")
    for ids, positions in prepared.responses.values():
        assert len(prepared.prompt_ids) + len(ids) == max(positions) + 1  # the label's last token ends it
    score, _, _ = tiny.token_ixg(prepared)
    tiny.model.eval()
    with torch.no_grad():
        def logp(label):  # the whole output, as the model wrote it
            ids, offsets = tiny.inputs.encode(tiny.inputs.templated(wsd_prompt()) + output.replace("place", label))
            out = torch.log_softmax(tiny.model(torch.tensor([ids])).logits[0], -1)
            return sum(float(out[p - 1, ids[p]]) for p in prepared.responses[label][1])

        assert score == pytest.approx(logp("programming_language") - logp("place"), rel=1e-9)


def test_multi_token_labels_are_found(tiny):
    prepared = tiny.prepare(wsd_prompt(), TEXTS, '{"answer": "programming_language"}', None, WSD, "programming_language")
    assert len(prepared.responses["programming_language"][1]) > 1


def test_an_output_without_the_answer_span_is_skipped():
    with pytest.raises(ReplaySkip):
        answer_span("The majority is place.", "place")
    assert answer_span('x {"answer": "PER"} then {"answer": "LOC"}', "LOC") == (37, 40)


def test_profiles_average_replays_within_tasks_then_tasks():
    replays = pd.DataFrame({"task": ["a", "a", "b"], "share": [[2.0, 0.0], [0.0, 2.0], [3.0, 1.0]]})
    assert profile(replays, "binned", 1).tolist() == [2.0, 1.0]
    assert profile(pd.DataFrame({"task": ["a"], "share": [[1.0, 3.0, 2.0, 2.0]]}), "binned", 2).tolist() == [2.0, 2.0]
    assert profile(pd.DataFrame({"task": ["a"], "share": [[1.0] * 40]}), "relative", bins=20).tolist() == [1.0] * 20


def test_region_shares_on_a_constructed_case():
    # majority_middle, n = 10, p = 0.6: minority 1–2, majority 3–8, minority 9–10.
    share = [2.0, 2.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 2.0, 1.0]
    regions = region_shares(pd.DataFrame({"pattern": ["majority_middle"], "n": [10], "p": [0.6], "share": [share],
                                          "signed": [[1.0] * 10]}))
    assert list(regions["kind"]) == ["minority", "majority", "minority"]
    assert regions["attribution_share"].tolist() == pytest.approx([0.4, 0.3, 0.3])
    assert regions["instance_share"].tolist() == pytest.approx([0.2, 0.6, 0.2])


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_real_smollm2_replays_give_profiles_and_refuse_tampered_records(results, tmp_path):
    from mip.attribution.replay import AttributionError, attribute
    from mip.config import AttributeConfig
    from mip.store import Store
    from mip.job import run_job

    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_middle", "progress=false")
    run_job(cfg, tmp_path / "job")
    store = Store(cfg.paths.store_dir)
    records = list(store)
    tampered = records[0].model_copy(update={"key": "tampered", "prompt_hash": "0" * 64})
    store.put(tampered)
    no_span = records[1].model_copy(update={"key": "nospan"})
    no_span.attempts[0].stages[0].output = "I think it is even_number."
    store.put(no_span)

    attr = AttributeConfig(model=compose("model=smollm2_135m").model, task=compose("task=arith").task,
                           results=[str(cfg.paths.store_dir)], records_model="mock", out_dir=str(tmp_path / "attr"))
    out = attribute(attr)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["replays"] == 2 and summary["checkpointing"] is True
    assert summary["skipped"] == {"refused: prompt does not match its record": 1,
                                  "no answer span holding the selected label": 1}
    rows = [json.loads(line) for line in (out / "replays.jsonl").read_text().splitlines()]
    for row in rows:
        assert sum(row["share"]) == pytest.approx(10) and row["peak_rss_mb"] > 0 and row["seconds"] > 0
    tag = "n10_p0.6_smoke_standard_single_call_unfiltered_core"  # the slice the figure shows
    assert (out / "figures" / f"profile_majority_middle_{tag}.png").stat().st_size > 5000
    assert set(pd.read_csv(out / "regions.csv")["kind"]) == {"majority", "minority"}

    attr.weights = str(tmp_path / "no-weights-here")
    with pytest.raises(AttributionError, match="No weights"):
        attribute(attr)


def _record(key, pattern, label, seed):
    from mip.experiment.records import Experiment, Record

    e = Experiment(model="m", task="arith", n=10, p=0.6, majority_label=label, seed=seed, pattern=pattern,
                   order_seed=0 if pattern == "random" else None, prompt_variant="standard", budget="smoke")
    return Record(key=key, experiment=e, pool_version="v", instance_ids=[], instance_labels=[], prompt_hash="",
                  verdict="correct", created_at="")


def test_max_replays_are_spread_round_robin_over_patterns_labels_and_seeds():
    from mip.attribution.replay import spread

    records = [_record(f"{pattern}-{label}-{seed}-{i}", pattern, label, seed)
               for pattern in ("majority_first", "majority_last") for label in ("even", "odd") for seed in (0, 1)
               for i in range(3)]
    chosen = spread(records, 8)
    cells = {(r.experiment.pattern, r.experiment.majority_label, r.experiment.seed) for r in chosen}
    assert len(chosen) == 8 and len(cells) == 8  # one from each of the 8 cells, not the first 8 keys
    assert [r.key for r in spread(records, 8)] == [r.key for r in chosen]  # deterministic
    assert len({r.experiment.pattern for r in spread(records, 2)}) == 2
    assert {(r.experiment.pattern, r.experiment.majority_label) for r in spread(records, 4)} == \
        {(p, label) for p in ("majority_first", "majority_last") for label in ("even", "odd")}
    assert spread(records, 0) == records


def test_records_from_a_filtered_pool_are_replayed_from_that_pool(results, tmp_path, tiny_weights):
    from mip.attribution.replay import attribute
    from mip.config import AttributeConfig
    from mip.data.pools import save_pool
    from mip.tools.filtering import filtered_path, filtered_pool
    from mip.store import Store
    from mip.job import run_job

    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "progress=false")
    pool = build_pool(cfg.task["arith"], None, cfg.paths.cache_dir)
    kept = filtered_pool(pool, {"judge": {x.id: i % 3 != 0 for i, x in enumerate(pool.instances)}}, ["judge"])
    save_pool(kept, filtered_path(cfg.paths.results_dir, "arith", pool.version))
    run_job(cfg, tmp_path / "job")
    records = list(Store(cfg.paths.store_dir))
    assert records and all(r.pool_filtered and r.pool_version == kept.version for r in records)
    attr = AttributeConfig(model=compose("model=smollm2_135m").model, task=compose("task=arith").task,
                           results=[str(cfg.paths.store_dir)], records_model="mock", out_dir=str(tmp_path / "attr"),
                           pools_dir=str(results / "pools"), max_replays=1, weights=str(tiny_weights))
    attr.where.pool = "filtered"
    out = attribute(attr)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["replays"] == 1, summary  # before: "refused: prompt does not match its record"
    assert not any("refused" in k or "not found" in k for k in summary["skipped"])
    assert set(pd.read_csv(out / "regions.csv")["pool"]) == {"filtered"}


SENTIMENT = ["negative", "positive"]
REVIEWS = ["a gripping , beautifully acted drama", "dull and lifeless from start to finish", "warm and funny"]


def _replays(tiny, prompt, texts, output, reasoning, labels, selected, **kwargs):
    """The same replay through the one-pass route (passes=None) and the two-pass reference."""
    out = []
    for passes in (None, 2):
        attributor = Attributor(tiny.model, tiny.tokenizer, passes=passes, **kwargs)
        out.append(attributor.replay("k", prompt, texts, output, reasoning, labels, selected))
    return out


@pytest.mark.parametrize("reasoning", [None, "Instance 1 is positive, instance 2 negative, so positive wins."])
@pytest.mark.parametrize("selected", SENTIMENT)
def test_one_pass_gives_the_two_pass_scores_for_single_token_labels(tiny, reasoning, selected):
    prompt = build_prompt(compose("task=example_reviews").task["example_reviews"], "standard", REVIEWS)
    output = f'Counting the reviews. {{"answer": "{selected}"}} and a list after it'
    prepared = tiny.prepare(prompt, REVIEWS, output, reasoning, SENTIMENT, selected)
    assert prepared.shared  # negative / positive differ in one token with this tokenizer
    one, two = _replays(tiny, prompt, REVIEWS, output, reasoning, SENTIMENT, selected)
    assert (one.passes, two.passes) == (1, 2)
    assert one.score == pytest.approx(two.score, abs=1e-10, rel=0)
    assert one.extra["logp"] == pytest.approx(two.extra["logp"], abs=1e-10, rel=0)
    assert one.u == pytest.approx(two.u, abs=1e-10, rel=0)
    assert one.share == pytest.approx(two.share, abs=1e-10, rel=0)
    assert one.signed == pytest.approx(two.signed, abs=1e-10, rel=0)
    assert max(one.u) > 1e-6  # a gradient that is there, not two zeros


def _assert_same(one, two):
    """S_r, the log-probabilities, u, R and the signed IxG of two replays, to 1e-10."""
    assert one.score == pytest.approx(two.score, abs=1e-10, rel=0)
    assert one.extra["logp"] == pytest.approx(two.extra["logp"], abs=1e-10, rel=0)
    assert one.u == pytest.approx(two.u, abs=1e-10, rel=0)
    assert one.share == pytest.approx(two.share, abs=1e-10, rel=0)
    assert one.signed == pytest.approx(two.signed, abs=1e-10, rel=0)
    assert max(one.u) > 1e-6


ARITH_TEXTS = ["3 + 4", "2 * 5", "7 - 1"]


def _model(tokenizer, monkeypatch, family, attention):
    """A tiny random Llama or Qwen3 in float64 (RMSNorm and eager attention's softmax too) with
    the given attention kernel."""
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen3 import modeling_qwen3

    def rms_float64(self, hidden):
        return self.weight * (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    def eager_float64(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        """transformers' eager attention with its softmax in the weights' dtype (it takes float32)."""
        key = modeling_llama.repeat_kv(key, module.num_key_value_groups)
        value = modeling_llama.repeat_kv(value, module.num_key_value_groups)
        weights = torch.matmul(query, key.transpose(2, 3)) * scaling
        if attention_mask is not None:
            weights = weights + attention_mask
        weights = torch.softmax(weights, dim=-1)
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights

    for module, norm in ((modeling_llama, "LlamaRMSNorm"), (modeling_qwen3, "Qwen3RMSNorm")):
        monkeypatch.setattr(getattr(module, norm), "forward", rms_float64)
        monkeypatch.setattr(module, "eager_attention_forward", eager_float64)
    torch.manual_seed(0)
    kinds = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
             "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM)}
    config_cls, model_cls = kinds[family]
    cfg = config_cls(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=4096,
                     attn_implementation=attention)
    return model_cls(cfg).to(torch.float64)


@pytest.mark.parametrize("reasoning", [None, "Instance 2 mentions a version number: code."])
@pytest.mark.parametrize("family,attention", [("llama", "sdpa"), ("llama", "eager"), ("qwen3", "sdpa"),
                                              ("qwen3", "eager")])
def test_multi_token_labels_take_one_packed_pass_and_the_two_pass_scores(tokenizer, monkeypatch, reasoning,
                                                                         family, attention):
    """wsd's place / programming_language and arith's even_number / odd_number (whose first
    tokens differ, "_number" following different words): one pass over the packed sequence,
    S_r, u and R of the two-pass definition to 1e-10, whichever label was selected."""
    model = _model(tokenizer, monkeypatch, family, attention)
    arith = compose("task=arith").task["arith"]
    cases = [(wsd_prompt(), TEXTS, WSD, 'Instance 2 is code. {"answer": "programming_language"}', "programming_language"),
             (build_prompt(arith, "standard", ARITH_TEXTS), ARITH_TEXTS, list(arith.labels),
              'Two of three are odd. {"answer": "odd_number"} done', "odd_number"),
             (build_prompt(arith, "standard", ARITH_TEXTS), ARITH_TEXTS, list(arith.labels),
              '{"answer": "even_number"}', "even_number")]
    for prompt, texts, labels, output, selected in cases:
        attributor = Attributor(model, tokenizer)
        prepared = attributor.prepare(prompt, texts, output, reasoning, labels, selected)
        # place is one token, all of it a target: its continuation is empty and needs no mask
        assert prepared.packed().needs_mask == (labels != WSD) and not prepared.shared == (labels != WSD)
        one, two = (Attributor(model, tokenizer, passes=passes).replay("k", prompt, texts, output, reasoning,
                                                                        labels, selected) for passes in (None, 2))
        assert (one.passes, two.passes) == (1, 2)
        _assert_same(one, two)


@pytest.mark.slow
@pytest.mark.parametrize("reasoning", [None, "Instance 1 is odd and instance 3 is even."])
def test_the_embedded_smollm2_in_float64_gives_the_two_pass_scores_in_one_pass(tokenizer, monkeypatch, reasoning):
    """The real SmolLM2-135M weights in float64, single- and multi-token labels."""
    from transformers.models.llama import modeling_llama

    def rms_float64(self, hidden):
        return self.weight * (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", rms_float64)
    folder = converted_dir(compose("model=smollm2_135m").model, Path("~/.cache/mip").expanduser())
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64)
    arith = compose("task=arith").task["arith"]
    sentiment = build_prompt(compose("task=example_reviews").task["example_reviews"], "standard", REVIEWS)
    for prompt, texts, labels, output, selected in (
            (build_prompt(arith, "standard", ARITH_TEXTS), ARITH_TEXTS, list(arith.labels),
             '{"answer": "odd_number"}', "odd_number"),
            (sentiment, REVIEWS, SENTIMENT, '{"answer": "negative"}', "negative")):
        one, two = (Attributor(model, tokenizer, passes=passes).replay("k", prompt, texts, output, reasoning,
                                                                        labels, selected) for passes in (None, 2))
        assert (one.passes, two.passes) == (1, 2)
        _assert_same(one, two)


def test_the_packed_sequence_restarts_y0s_positions_and_hides_y1s_tokens():
    from mip.attribution.packing import pack

    # prompt of 3 tokens; responses [10, 11, 20, 21] (label 20 21 at 5, 6) and [10, 11, 30, 31, 32] (label at 5–7)
    packed = pack(3, {"y1": ([10, 11, 20, 21], [5, 6]), "y0": ([10, 11, 30, 31, 32], [5, 6, 7])}, ("y0", "y1"))
    assert packed.ids == [10, 11, 20, 30, 31] and packed.shared == 2 and packed.continuations == (1, 2)
    assert packed.position_ids() == [0, 1, 2, 3, 4, 5, 5, 6]
    assert packed.rows == {"y1": [4, 5], "y0": [4, 6, 7]}
    assert packed.targets == {"y1": [20, 21], "y0": [30, 31, 32]}
    mask = packed.mask(torch, "cpu")[0, 0]
    assert mask[6].tolist() == [True] * 5 + [False, True, False]  # y0's first continuation row: not y1's
    assert mask[5].tolist() == [True] * 6 + [False] * 2
    assert torch.equal(packed.mask(torch, "cpu", torch.float64)[0, 0] == 0, mask)
    # labels differing in their last token only: nothing after the shared part, no mask
    plain = pack(3, {"y1": ([10, 20], [4]), "y0": ([10, 30], [4])}, ("y0", "y1"))
    assert not plain.needs_mask and plain.ids == [10] and plain.rows == {"y1": [3], "y0": [3]}
    # one label a prefix of the other's continuation: one continuation empty, still no mask
    prefix = pack(3, {"y1": ([10, 20], [4]), "y0": ([10, 20, 21], [4, 5])}, ("y0", "y1"))
    assert prefix.continuations == (0, 1) and not prefix.needs_mask and prefix.rows == {"y1": [3], "y0": [3, 4]}


def test_flash_attention_keeps_two_passes_for_labels_that_need_a_mask(tiny):
    arith = compose("task=arith").task["arith"]
    prompt = build_prompt(arith, "standard", ARITH_TEXTS)
    prepared = tiny.prepare(prompt, ARITH_TEXTS, '{"answer": "odd_number"}', None, list(arith.labels), "odd_number")
    assert prepared.packed().needs_mask
    tiny.model.config._attn_implementation = "flash_attention_2"
    try:
        assert Attributor(tiny.model, tiny.tokenizer).passes_for(prepared) == 2
        with pytest.raises(ValueError, match="passes=1"):
            Attributor(tiny.model, tiny.tokenizer, passes=1).passes_for(prepared)
    finally:
        tiny.model.config._attn_implementation = "sdpa"


def test_labels_sharing_a_tail_are_not_read_from_one_set_of_logits(tiny):
    """even_number / odd_number differ in their first token: "_number" follows different
    words, so its probability is not the same for both: they need the packed sequence's mask."""
    arith = compose("task=arith").task["arith"]
    texts = ["3 + 4", "2 * 5", "7 - 1"]
    prompt = build_prompt(arith, "standard", texts)
    prepared = tiny.prepare(prompt, texts, '{"answer": "odd_number"}', None, list(arith.labels), "odd_number")
    (ids1, pos1), (ids0, pos0) = (prepared.responses[label] for label in reversed(arith.labels))
    assert len(ids1) == len(ids0) and pos1 == pos0 and ids1[:-1] != ids0[:-1]
    assert not prepared.shared


def test_offloaded_checkpoints_give_the_same_scores_and_are_counted(tiny):
    """offload: re-entrant checkpointing with the saved tensors packed for the CPU. On the CPU
    nothing moves, but every layer's checkpointed input passes through the pack hook."""
    prompt = build_prompt(compose("task=example_reviews").task["example_reviews"], "standard", REVIEWS)
    output = '{"answer": "positive"}'
    plain = Attributor(tiny.model, tiny.tokenizer).replay("k", prompt, REVIEWS, output, None, SENTIMENT, "positive")
    attributor = Attributor(tiny.model, tiny.tokenizer, offload=True)
    attributor.offload.min_bytes = 0
    moved = attributor.replay("k", prompt, REVIEWS, output, None, SENTIMENT, "positive")
    assert attributor.checkpointing_active
    assert moved.score == pytest.approx(plain.score, abs=1e-10, rel=0)
    assert moved.u == pytest.approx(plain.u, abs=1e-10, rel=0)
    config = tiny.model.config
    length = moved.tokens + len(attributor.prepare(prompt, REVIEWS, output, None, SENTIMENT, "positive")
                                .packed().ids)
    per_layer_input = length * config.hidden_size * 8  # float64
    assert moved.offloaded_mb * 2**20 >= config.num_hidden_layers * per_layer_input
    assert plain.offloaded_mb == 0 and plain.peak_gpu_allocated_mb is None


CONFIGS = Path(__file__).resolve().parent.parent / "benchmarks" / "configs"
GIB = 2**30


def _estimate(name, tokens=36644):
    from mip.attribution.memory import estimate

    return estimate(transformers.AutoConfig.for_model(**json.loads((CONFIGS / f"{name}.json").read_text())),
                    tokens, 2)


def test_the_estimate_is_near_what_an_h200_measured():
    """Peaks torch allocated on one H200 at 36,644 tokens in bfloat16 (20.1 and 97.1 GiB)."""
    small, large = _estimate("qwen3_4b_instruct_2507"), _estimate("qwen3_32b")
    assert small.total / GIB == pytest.approx(20.1, rel=0.05)
    assert large.total / GIB == pytest.approx(97.1, rel=0.03)
    assert large.weights / GIB == pytest.approx(61.0, rel=0.01)  # 32.8 B parameters in bfloat16


def test_the_placement_follows_the_free_memory():
    from mip.attribution.memory import DoesNotFit, choose

    large = _estimate("qwen3_32b")
    host = 200 * GIB
    assert choose(large, [139 * GIB], host).placement == "gpu"  # an H200
    plan = choose(large, [79 * GIB], host)  # an H100 80 GB
    assert plan.placement == "offload" and plan.offload
    shard = choose(large, [70 * GIB, 70 * GIB], host, want="shard")
    assert shard.placement == "shard" and sum(shard.max_memory.values()) >= large.weights
    assert choose(large, [70 * GIB, 70 * GIB], host).placement == "shard"  # auto: neither GPU holds weights alone
    with pytest.raises(DoesNotFit, match=r"97\.\d GiB.*free GPU memory \(GiB\): 40\.0"):
        choose(large, [40 * GIB], host)
    with pytest.raises(DoesNotFit):  # the checkpoints do not fit in CPU memory either
        choose(large, [79 * GIB], 8 * GIB)
    with pytest.raises(DoesNotFit, match="memory=gpu"):
        choose(large, [79 * GIB], host, want="gpu")
    assert choose(_estimate("qwen3_4b_instruct_2507"), [79 * GIB], host).placement == "gpu"


def test_the_plan_holds_the_one_pass_mask_where_it_fits_and_else_takes_two_passes():
    """Multi-token labels (Math's even_number/odd_number) take a (tokens)² mask in one pass: at
    Math's 135,418 tokens 51 GiB in bfloat16, nearly the 4B replay's whole two-pass peak (54.9 GiB on
    an H200). The plan counts it; where it does not fit those replays take two passes, no mask."""
    from mip.attribution.memory import mask_bytes, planned

    config = transformers.AutoConfig.for_model(**json.loads((CONFIGS / "qwen3_4b_instruct_2507.json").read_text()))
    math = 135_418
    assert mask_bytes(math, 2) / GIB == pytest.approx(51.2, rel=0.01)
    h100 = planned(config, math, 2, [79 * GIB], 200 * GIB, masked=True)
    assert h100.placement == "gpu" and not h100.mask and h100.estimate.mask == 0
    assert "two passes for multi-token labels" in h100.describe()
    h200 = planned(config, math, 2, [139 * GIB], 200 * GIB, masked=True)
    assert h200.mask and h200.estimate.mask == mask_bytes(math, 2) and "mask 51.2 GiB" in h200.describe()
    ner = planned(config, 36_644, 2, [79 * GIB], 200 * GIB, masked=False)  # single-token labels: no mask to hold
    assert ner.mask and ner.estimate.mask == 0 and "two passes" not in ner.describe()


def test_which_labels_take_the_mask_is_read_from_their_tokens(tokenizer, tiny):
    """The memory plan's guess (the labels' own tokens) agrees with what a replay packs."""
    from mip.attribution.ixg import Attributor
    from mip.attribution.packing import labels_need_mask

    attributor, model = tiny, tiny.model
    for labels, output in ((("even_number", "odd_number"), "even_number"), (("negative", "positive"), "positive")):
        prepared = attributor.prepare(wsd_prompt(), TEXTS, f'{{"answer": "{output}"}}', None, labels, output)
        assert labels_need_mask(tokenizer, labels) == prepared.packed().needs_mask == (labels[0] == "even_number")
        assert Attributor(model, tokenizer, mask=False).passes_for(prepared) == (2 if prepared.packed().needs_mask else 1)


def test_a_replay_whose_mask_would_not_fit_takes_two_passes(results, tmp_path, tiny_weights, monkeypatch, capfd):
    """On the CPU the mask may take at most half the free memory: with none free, arith's
    even_number/odd_number replay takes two passes, and attribute.py says why."""
    from mip.attribution import memory

    monkeypatch.setattr(memory, "host_available", lambda: 0)
    summary = one_replay_summary(tmp_path, tiny_weights, "cpu")
    assert summary["passes"] == {"2": 1}
    assert "two passes for multi-token labels: their one pass's mask would not fit" in capfd.readouterr().err


def test_a_replay_that_cannot_fit_is_refused_with_its_estimate_before_the_weights_load(
        results, tmp_path, tiny_weights, monkeypatch):
    from mip.attribution import replay as replay_module
    from mip.config import AttributeConfig
    from mip.job import run_job

    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "progress=false")
    run_job(cfg, tmp_path / "job")
    attr = AttributeConfig(model=compose("model=smollm2_135m").model, task=compose("task=arith").task,
                           results=[str(cfg.paths.store_dir)], records_model="mock", out_dir=str(tmp_path / "attr"),
                           max_replays=1, weights=str(tiny_weights), device="cuda")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i=0: (2**20, 80 * GIB))  # 1 MiB free

    def no_loading(*args, **kwargs):
        raise AssertionError("the weights were loaded")

    monkeypatch.setattr(replay_module, "load_model", no_loading)
    with pytest.raises(replay_module.AttributionError, match=r"does not fit .*tokens: weights .* GiB"):
        replay_module.attribute(attr)
    assert not (tmp_path / "attr" / "replays.jsonl").exists()


def one_replay_summary(tmp_path: Path, weights: Path, device: str) -> dict:
    """attribute.py's summary.json after one replay of a mock record with ``weights`` on ``device``."""
    from mip.attribution.replay import attribute
    from mip.config import AttributeConfig
    from mip.job import run_job

    cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "progress=false")
    run_job(cfg, tmp_path / "job")
    attr = AttributeConfig(model=compose("model=smollm2_135m").model, task=compose("task=arith").task,
                           results=[str(cfg.paths.store_dir)], records_model="mock", out_dir=str(tmp_path / "attr"),
                           max_replays=1, weights=str(weights), device=device)
    return json.loads((attribute(attr) / "summary.json").read_text())


def test_summary_reports_passes_and_the_process_rss_not_a_gpu_peak_on_the_cpu(results, tmp_path, tiny_weights):
    summary = one_replay_summary(tmp_path, tiny_weights, "cpu")
    assert summary["placement"] == "cpu" and summary["passes"] == {"1": 1}  # even_number / odd_number: one packed pass
    assert summary["peak_gpu_allocated_mb"] is None and summary["peak_gpu_reserved_mb"] is None
    assert summary["process_peak_rss_mb"] > 0 and "peak_rss_mb" not in summary


def test_the_gpu_benchmark_runs_tiny_on_a_cpu(tmp_path):
    """benchmarks/gpu.py --tiny: records, the replays through attribute's own path with random
    weights of both shipped configurations (shrunk), the one-pass limit, the hf backend's
    generation; its table and JSON come out."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(repo / "benchmarks" / "gpu.py"), "--tiny", "--replays", "1",
                           "--batches", "1", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600,
                          cwd=repo, env={**__import__("os").environ, "PYTHONPATH": str(repo), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "× one-pass limit" in done.stdout and "tokens/s" in done.stdout
    result = json.loads((tmp_path / "gpu_bench.json").read_text())
    assert [r["model"] for r in result["replays"]] == ["qwen3_4b_instruct_2507", "qwen3_32b"]
    for r in result["replays"]:
        assert r["replays"] == 1 and r["placement"] == "cpu" and r["tokens"] > 100
        assert r["s_per_replay_mean"] > 0 and r["tflops"] > 0 and r["ratio_to_limit"] > 0
        assert r["peak_gpu_allocated_gib"] is None  # no GPU: no GPU memory reported
    (gen,) = result["generation"]
    assert gen["batch"] == 1 and gen["new_tokens"] == 8 and gen["tokens_per_s"] > 0


needs_cuda = pytest.mark.skipif("not __import__('torch').cuda.is_available()", reason="needs a CUDA GPU")


@pytest.mark.gpu
@needs_cuda
def test_replays_on_cuda_agree_with_the_cpu_and_report_gpu_memory(tokenizer):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
    cpu_model = transformers.LlamaForCausalLM(cfg).to(torch.float64)
    gpu_model = transformers.LlamaForCausalLM(cfg).to(torch.float64)
    gpu_model.load_state_dict(cpu_model.state_dict())
    gpu_model = gpu_model.cuda()
    prompt = build_prompt(compose("task=example_reviews").task["example_reviews"], "standard", REVIEWS)
    args = (prompt, REVIEWS, '{"answer": "positive"}', None, SENTIMENT, "positive")
    on_cpu = Attributor(cpu_model, tokenizer).replay("k", *args)
    runs = {name: Attributor(gpu_model, tokenizer, **kw).replay("k", *args)
            for name, kw in (("one", {}), ("two", {"passes": 2}), ("offload", {"offload": True}))}
    assert runs["one"].passes == 1 and runs["two"].passes == 2
    for replay in runs.values():
        assert replay.score == pytest.approx(on_cpu.score, rel=1e-9)
        assert replay.share == pytest.approx(on_cpu.share, rel=1e-8)
        assert 0 < replay.peak_gpu_allocated_mb <= replay.peak_gpu_reserved_mb
    assert runs["offload"].offloaded_mb > 0 and runs["one"].offloaded_mb == 0


@pytest.mark.gpu
@needs_cuda
def test_attribute_on_cuda_writes_gpu_memory_beside_the_rss(results, tmp_path, tiny_weights):
    summary = one_replay_summary(tmp_path, tiny_weights, "cuda")
    assert summary["placement"] == "gpu"
    assert 0 < summary["peak_gpu_allocated_mb"] <= summary["peak_gpu_reserved_mb"]
    assert summary["process_peak_rss_mb"] > 0


@pytest.mark.gpu
@needs_cuda
def test_the_hf_backend_generates_on_cuda(tiny_weights):
    from mip.models.base import BackendContext, Request
    from mip.models.hf_local import HFBackend

    cfg = compose("model=smollm2_135m", "model.device=cuda", "model.dtype=bfloat16").model
    backend = HFBackend(cfg, BackendContext(Path("~/.cache/mip").expanduser()))
    done = list(backend.generate([Request(f"r{i}", f"Is {i} even or odd?", 8) for i in range(3)]))
    assert len(done) == 3 and all(c.error is None and c.completion_tokens for c in done)
    assert backend.model.device.type == "cuda"


def test_attribution_slices_a_budget_by_its_value(results, tmp_path, tiny_weights):
    """``budget.max_tokens=999`` over smoke is its own slice in attribute.py too, labelled
    as analyze.py labels it (``999 tokens``), in its tables and in ``where.budget``."""
    from mip.attribution.replay import attribute, eligible
    from mip.config import AttributeConfig
    from mip.job import run_job

    for i, extra in enumerate([(), ("budget.max_tokens=999",)]):
        cfg = compose("model=mock", "task=arith", "setting=smoke", "pattern=majority_first", "budget=smoke", *extra,
                      "progress=false", f"paths.results_dir={tmp_path / 'results'}")
        run_job(cfg, tmp_path / "jobs" / str(i))
    store = str(tmp_path / "results" / "store")

    def attr(**where) -> AttributeConfig:
        made = AttributeConfig(model=compose("model=smollm2_135m").model, task=compose("task=arith").task,
                               results=[store], records_model="mock", out_dir=str(tmp_path / f"attr{len(where)}"),
                               pools_dir=str(results / "pools"), max_replays=0, weights=str(tiny_weights))
        for k, v in where.items():
            setattr(made.where, k, v)
        return made

    chosen = eligible(attr(budget="999 tokens"))
    assert chosen and {r.config["budget"]["max_tokens"] for r in chosen} == {999}
    out = attribute(attr())
    assert set(pd.read_csv(out / "regions.csv")["budget"]) == {"smoke", "999 tokens"}
    assert sorted((out / "figures").glob("profile_majority_first_*999*"))  # a figure per slice, by its value
