"""Moved to :mod:`mip.experiment.records` after mip 0.3.0 (CHANGELOG.md, Unreleased); importable from here for older scripts."""

import sys

from mip.experiment import records as _moved

sys.modules[__name__] = _moved
