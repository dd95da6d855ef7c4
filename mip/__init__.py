"""mip: order effects in LLM multi-instance processing.

    make run                                   # the embedded demo, offline
    python run.py -m model=gpt_oss_120b 'pattern=glob(*)' seed=0,1,2 data_dir=../shared/data/raw dry_run=true
"""

# The one place the version is written: pyproject.toml reads it (dynamic), job.json and records too.
__version__ = "0.3.0"
