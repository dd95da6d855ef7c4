"""Attribution and generation on a GPU, with random weights of the paper's local models' published
configurations (benchmarks/configs/*.json; no hub, no weights: time and memory do not depend on
the weights' values).

    python benchmarks/gpu.py --data-dir <shared/data/raw>              # a GPU machine: the paper's scale
    python benchmarks/gpu.py --tiny                                    # any CPU: the same path, tiny sizes

1. Records: the planted model simulated_first_k answers n-instance NER and Sentiment prompts (and one
   Math prompt) through run.py's own job path, into a store in a temporary folder (``--tiny``: arith).
2. Replays: for each configuration, a random-weight model (bfloat16 on a GPU, float32 on the CPU) is
   placed as mip.attribution.memory plans it for the longest prompt (gpu, offload or shard; refused
   with its estimate where nothing fits) and attribute.py's own path (mip.attribution.replay.attribute)
   replays the records: s/replay, passes, peak GPU memory allocated and reserved, an estimated TFLOP/s
   (a checkpointed pass with frozen weights costs three forwards: forward, recompute, input-gradient
   backward) and the ratio of s/replay to the one-pass limit (one checkpointed forward and backward of
   the same length, timed on its own).
3. Generation: the hf backend (mip.models.hf_local.HFBackend) with the first model's random weights,
   tokens/s at batch 1, 8 and 32 (``--batches``).

Needs only what ``pip install -e '.[hf]'`` brings, plus hydra-core and pydantic. The tokenizer is the
embedded SmolLM2's (``--tokenizer`` another folder); the vocabulary size is the configuration's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CONFIGS = Path(__file__).resolve().parent / "configs"
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16}


def compose(*overrides: str, config_name: str = "config"):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from mip.entry.config_store import register

    register()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return OmegaConf.to_object(hydra_compose(config_name, overrides=list(overrides)))


def make_records(root: Path, tasks: list[str], n: int, data_dir: str | None) -> str:
    """A store of the planted model's answers to n-instance prompts (majority_first, seed 0)."""
    from mip.job import run_job

    for task in tasks:
        overrides = ["model=simulated_first_k", f"task={task}", f"n={n}", "pattern=majority_first", "seed=0",
                     "progress=false", f"paths.results_dir={root}"]
        if data_dir:
            overrides.append(f"data_dir={data_dir}")
        run_job(compose(*overrides), root / f"job-{task}")
    return str(root / "store")


def tokenizer_folder(path: str | None) -> Path:
    if path:
        return Path(path)
    from mip.models.hf_local import converted_dir

    return converted_dir(compose("model=smollm2_135m").model, Path("~/.cache/mip").expanduser())


def model_config(name: str, tiny: bool, vocab: int):
    import transformers

    fields = json.loads((CONFIGS / f"{name}.json").read_text())
    if tiny:
        fields.update(TINY, vocab_size=vocab)
    return transformers.AutoConfig.for_model(**fields)


def build(config, plan, device: str, dtype):
    """A random-weight model placed as ``plan`` says."""
    import torch
    import transformers

    torch.manual_seed(0)
    if plan.placement == "shard":
        from accelerate import dispatch_model, infer_auto_device_map

        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
        device_map = infer_auto_device_map(model, max_memory=plan.max_memory,
                                           no_split_module_classes=model._no_split_modules)
        return dispatch_model(model, device_map)
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)


def forward_flops(config, tokens: int) -> float:
    """One forward over ``tokens`` tokens: 2 × parameters in the layers per token, plus causal attention."""
    text = config.get_text_config()
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    per_layer = (text.hidden_size * head_dim * (2 * text.num_attention_heads + 2 * text.num_key_value_heads)
                 + 3 * text.hidden_size * text.intermediate_size)
    matmul = 2 * per_layer * text.num_hidden_layers * tokens
    attention = 2 * text.num_hidden_layers * tokens * tokens * text.num_attention_heads * head_dim
    return float(matmul + attention)


def one_pass_limit(model, tokens: int, offload: bool) -> float:
    """Seconds of one checkpointed forward and backward of ``tokens`` tokens into the input embeddings."""
    import torch

    from mip.attribution.ixg import Attributor

    attributor = Attributor(model, None, offload=offload)
    embed = model.get_input_embeddings()
    ids = torch.randint(0, 1000, (1, tokens), device=embed.weight.device)
    sync = torch.cuda.synchronize if embed.weight.device.type == "cuda" else (lambda: None)
    with torch.no_grad():
        embeds = embed(ids)
    embeds = embeds.detach().requires_grad_(True)
    sync()
    start = time.perf_counter()
    with attributor._saving():
        logits = model(inputs_embeds=embeds, use_cache=False, logits_to_keep=1).logits
    logits.float().logsumexp(-1).sum().backward()
    sync()
    return time.perf_counter() - start


def replays(name: str, store: str, tasks: list[str], args, tok_folder: Path, device: str, dtype) -> dict:
    import torch
    import transformers

    from mip.attribution import memory
    from mip.attribution.replay import attribute, eligible, placement, rebuilt
    from mip.attribution.weights import AttributionError
    from mip.config import AttributeConfig

    tok = transformers.AutoTokenizer.from_pretrained(tok_folder)
    config = model_config(name, args.tiny, len(tok))
    data = [f"data_dir={args.data_dir}"] if args.data_dir else []
    every = compose("task=arith", *data).task if tasks == ["arith"] else compose("task=all", *data).task
    task_cfg = {t: every[t] for t in tasks}
    out = Path(args.out) / name / "-".join(tasks)
    cfg = AttributeConfig(model=compose("model=smollm2_135m").model, task=task_cfg, results=[store],
                          records_model="simulated_first_k", out_dir=str(out), data_dir=args.data_dir,
                          max_replays=args.replays, pools_dir=None, device=device, memory=args.memory)
    jobs, _ = rebuilt(cfg, eligible(cfg))
    try:  # the mask of multi-token labels (Math) counted, as attribute.py plans it
        plan = placement(cfg, config, tok, jobs, device, dtype)
    except AttributionError as e:
        return {"model": name, "tasks": tasks, "error": str(e)}
    print(f"{name} {tasks}: {plan.describe()}", file=sys.stderr, flush=True)
    model = build(config, plan, device, dtype)
    try:
        attribute(cfg, loaded=(model, tok), plan=plan)
        rows = [json.loads(line) for line in (out / "replays.jsonl").read_text().splitlines()]
        limit = one_pass_limit(model, max(r["tokens"] for r in rows), plan.offload)
    finally:
        del model
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    seconds = [r["seconds"] for r in rows]
    flops = sum(3 * r["passes"] * forward_flops(config, r["tokens"]) for r in rows)
    peak = lambda key: max((r[key] for r in rows if r[key] is not None), default=None)  # noqa: E731
    return {"model": name, "tasks": tasks, "placement": plan.placement, "replays": len(rows),
            "tokens": max(r["tokens"] for r in rows), "passes": sorted({r["passes"] for r in rows}),
            "s_per_replay_mean": statistics.mean(seconds), "s_per_replay_min": min(seconds),
            "peak_gpu_allocated_gib": None if peak("peak_gpu_allocated_mb") is None else peak("peak_gpu_allocated_mb") / 1024,
            "peak_gpu_reserved_gib": None if peak("peak_gpu_reserved_mb") is None else peak("peak_gpu_reserved_mb") / 1024,
            "estimate_gib": (plan.estimate.total / memory.GiB) if plan.estimate else None,
            "offloaded_gib": max(r["offloaded_mb"] for r in rows) / 1024,
            "process_rss_gib": max(r["peak_rss_mb"] for r in rows) / 1024,
            "tflops": flops / sum(seconds) / 1e12, "one_pass_limit_s": limit,
            "ratio_to_limit": statistics.mean(seconds) / limit}


def generation(name: str, args, tok_folder: Path, device: str, dtype) -> list[dict]:
    """tokens/s of the hf backend's batched greedy generation with random weights."""
    import torch
    import transformers

    from mip.models.base import BackendContext, Request
    from mip.models.hf_local import HFBackend

    tok = transformers.AutoTokenizer.from_pretrained(tok_folder)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    config = model_config(name, args.tiny, len(tok))
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype).eval()
    model.generation_config.eos_token_id = None  # random weights: every sequence runs to max_tokens
    out = []
    for batch in args.batches:
        # the backend's dtype must be the model's (bfloat16 on a GPU), or its first call casts against it
        cfg = compose("model=smollm2_135m", f"model.max_batch_size={batch}", f"model.device={device}",
                      f"model.dtype={str(dtype).split('.')[-1]}").model
        backend = HFBackend(cfg, BackendContext(Path(tempfile.gettempdir())))
        backend._model, backend._tokenizer = model, tok
        requests = [Request(f"r{i}", f"Instance {i}: a review to classify, number {i}.", args.new_tokens)
                    for i in range(batch)]
        start = time.perf_counter()
        done = list(backend.generate(requests))
        seconds = time.perf_counter() - start
        made = sum(c.completion_tokens or 0 for c in done)
        out.append({"model": name, "batch": batch, "new_tokens": made, "seconds": seconds, "tokens_per_s": made / seconds})
        print(out[-1], file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (n=10 arith, 2-layer models): any CPU")
    parser.add_argument("--models", nargs="+", default=["qwen3_4b_instruct_2507", "qwen3_32b"],
                        help="configuration files in benchmarks/configs (without .json)")
    parser.add_argument("--n", type=int, default=None, help="instances per prompt (default 2000; --tiny 10)")
    parser.add_argument("--replays", type=int, default=2, help="replays per model and task group")
    parser.add_argument("--no-math", action="store_true", help="skip the one Math replay (first model only)")
    parser.add_argument("--data-dir", default=None, help="a folder laid out as the shared raw data (ner, sentiment, math)")
    parser.add_argument("--tokenizer", default=None, help="tokenizer folder (default: the embedded SmolLM2's)")
    parser.add_argument("--memory", default="auto", help="auto, gpu, offload or shard (mip.attribution.memory)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--new-tokens", type=int, default=None, help="tokens generated per prompt (default 128; --tiny 8)")
    parser.add_argument("--out", default=None, help="where summary tables and replays go (default: a temporary folder)")
    args = parser.parse_args()

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    n = args.n or (10 if args.tiny else 2000)
    args.new_tokens = args.new_tokens or (8 if args.tiny else 128)
    if args.tiny and args.batches == [1, 8, 32]:
        args.batches = [1, 2]
    root = Path(tempfile.mkdtemp(prefix="mip-gpu-bench-"))
    args.out = args.out or str(root / "out")
    tok_folder = tokenizer_folder(args.tokenizer)
    groups = [["arith"]] if args.tiny else [["ner", "sentiment"]]
    math = [] if args.tiny or args.no_math else [["math"]]
    store = make_records(root, [t for g in groups + math for t in g], n, args.data_dir)
    name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(f"device: {name}; torch {torch.__version__}; n = {n}; dtype {str(dtype).split('.')[-1]}", flush=True)
    results = []
    for i, model in enumerate(args.models):
        for group in groups + (math if i == 0 else []):
            results.append(replays(model, store, group, args, tok_folder, device, dtype))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    gen = generation(args.models[0], args, tok_folder, device, dtype)
    (Path(args.out) / "gpu_bench.json").write_text(json.dumps({"device": name, "replays": results, "generation": gen},
                                                              indent=1))
    fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
    print("\nmodel                    tasks            placement  tokens  passes  s/replay (mean, min)  "
          "peak GPU alloc / reserved GiB  est. GiB  TFLOP/s  × one-pass limit")
    for r in results:
        if "error" in r:
            print(f"{r['model']:24s} {'+'.join(r['tasks']):16s} does not fit: {r['error']}")
            continue
        print(f"{r['model']:24s} {'+'.join(r['tasks']):16s} {r['placement']:9s}  {r['tokens']:6d}  "
              f"{','.join(map(str, r['passes'])):6s}  {r['s_per_replay_mean']:8.2f}, {r['s_per_replay_min']:8.2f}   "
              f"{fmt(r['peak_gpu_allocated_gib'], '13.1f')} / {fmt(r['peak_gpu_reserved_gib'], '.1f'):>13s}  "
              f"{fmt(r['estimate_gib'], '8.1f')}  {r['tflops']:7.3f}  {r['ratio_to_limit']:6.2f}")
    print("\nhf backend generation (random weights)\nmodel                    batch  new tokens  seconds  tokens/s")
    for g in gen:
        print(f"{g['model']:24s} {g['batch']:5d}  {g['new_tokens']:10d}  {g['seconds']:7.2f}  {g['tokens_per_s']:8.1f}")
    print(f"\nwritten: {Path(args.out) / 'gpu_bench.json'}")


if __name__ == "__main__":
    main()
