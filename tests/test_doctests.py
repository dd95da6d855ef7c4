"""Every module's examples run as written (``>>>`` lines; those marked ``+SKIP`` show a call
that needs a model, a store or a config and are not run)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import mip

MODULES = sorted(m.name for m in pkgutil.walk_packages(mip.__path__, "mip."))


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
