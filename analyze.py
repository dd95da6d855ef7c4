"""Tables, figures and report.md from stored records (default) or W&B.

    python analyze.py results=[results/store]
    python analyze.py results/sweeps/2026-11-30/10-00-00                     # a sweep's own experiments, into <sweep>/report
    python analyze.py results=[results/sweeps/2026-11-30/10-00-00,results/store] out_dir=paper/figs
    python analyze.py source=wandb results=[results/sweeps]                  # offline W&B run folders
    python analyze.py source=wandb wandb.project=mip wandb.group=sweeps/2026-11-30/10-00-00-3f9a1c
    python analyze.py where.budget=100k where.model=[a,b]                    # some slices only
    python analyze.py core=[20,0.6]                                          # another core (n, p)
"""

import sys

if __name__ == "__main__" and not {"--help", "-h", "--cfg", "-c", "--info", "--hydra-help"} & set(sys.argv[1:]):
    print("analyze.py: reading the records…", flush=True)  # before the imports' seconds; stderr is for errors

from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from mip.analysis.analyze import analysis_inputs, analyze
from mip.entry.cli import check_overrides, folders_as_results
from mip.entry.reports import check_out_dir, kept
from mip.config import AnalyzeConfig
from mip.tools.config_store import register
from mip.tools.prompt_source import Rebuilder
from mip.analysis.results import ResultsError
from mip.analysis.slices import SliceError

register()

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="analyze")
def main(cfg: DictConfig) -> None:
    config: AnalyzeConfig = OmegaConf.to_object(cfg)
    if config.coverage.model_dir is None:  # what each model's traces are: the model configs shipped here
        config.coverage.model_dir = str(CONF / "model")
    try:
        path = analyze(config, show=print, prompts=Rebuilder.maker(config.paths.cache_dir, CONF))
    except (ResultsError, SliceError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("analyze.py: stopped (Ctrl-C); run it again to write the report.", file=sys.stderr)
        sys.exit(130)
    print(f"Report: {path}")


if __name__ == "__main__":
    try:
        sys.argv[1:] = folders_as_results(sys.argv[1:], "analyze.py")  # `python analyze.py <sweep folder>`
        check_overrides(sys.argv[1:], AnalyzeConfig, "analyze.py", conf_dir=CONF, config_name="analyze")
        # an out_dir holding another analysis is refused before Hydra writes there; any other refusal puts it back
        with kept(check_out_dir(sys.argv[1:], CONF, "analyze", analysis_inputs)):
            main()
    except KeyboardInterrupt:
        print("analyze.py: stopped (Ctrl-C); run it again to write the report.", file=sys.stderr)
        sys.exit(130)
