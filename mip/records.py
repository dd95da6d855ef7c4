"""Moved to :mod:`mip.experiment.records` (mip 0.4); importable from here for older scripts."""

import sys

from mip.experiment import records as _moved

sys.modules[__name__] = _moved
