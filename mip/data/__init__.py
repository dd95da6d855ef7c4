"""Task data: one loader per source format, label rules, pools (App. A, C.1).

>>> from mip.data import build_pool          # doctest: +SKIP
>>> pool = build_pool(task_cfg, data_dir="../shared/data/raw", cache_dir="~/.cache/mip")   # doctest: +SKIP

Exercised by ``pytest tests/test_data.py``.
"""

from mip.data.pools import Instance, Pool, PoolMeta, build_pool
from mip.data.sources import LOADERS, DataError, LoadResult

__all__ = ["Instance", "Pool", "PoolMeta", "build_pool", "LOADERS", "DataError", "LoadResult"]
