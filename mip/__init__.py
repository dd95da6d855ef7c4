"""mip: order effects in LLM multi-instance processing.

    make run                                   # the embedded demo, offline
    python run.py -m pattern=glob(*) seed=0,1,2 data_dir=../shared/data/raw dry_run=true
"""

__version__ = "0.2.0"
