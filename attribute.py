"""Input × Gradient position profiles of stored outputs (§5.2, App. F).

    python attribute.py model=qwen3_4b_instruct task=ner results=[results/store]
    python attribute.py model=smollm2_135m task=arith results=[results/store]     # on a laptop CPU
    python attribute.py model=gemma4_31b records_model=gemma4_31b weights=/models/gemma-4-31b-it task=sentiment
"""

import sys
from pathlib import Path

from mip.entry.cli import check_overrides, folders_as_results, quiet_library_bars

quiet_library_bars()  # before transformers is imported

import hydra
from omegaconf import DictConfig, OmegaConf

from mip.attribution.replay import AttributionError, attribute, attribution_inputs
from mip.config import AttributeConfig
from mip.entry.reports import check_out_dir, kept
from mip.tools.config_store import register
from mip.data import DataError

register()

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="attribute")
def main(cfg: DictConfig) -> None:
    config: AttributeConfig = OmegaConf.to_object(cfg)
    try:
        out = attribute(config)
    except (AttributionError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"Attribution: {out}")


if __name__ == "__main__":
    sys.argv[1:] = folders_as_results(sys.argv[1:], "attribute.py")  # `python attribute.py <sweep folder>`
    check_overrides(sys.argv[1:], AttributeConfig, "attribute.py", conf_dir=CONF, config_name="attribute")
    # an out_dir holding another analysis is refused before Hydra writes there; any other refusal puts it back
    with kept(check_out_dir(sys.argv[1:], CONF, "attribute", attribution_inputs)):
        main()
