"""The suite's own shortcuts (tests/conftest.py) give what they stand for."""

from __future__ import annotations

from .conftest import compose, vary


def test_varying_a_composed_config_equals_composing_the_variant(tmp_path):
    """test_simulated and test_analyze compose a sweep's config once and vary the pattern and seed."""
    common = ("model=simulated_first_k", "task=arith", "budget=smoke", f"paths.results_dir={tmp_path}")
    base = compose(*common)
    for pattern, seed in (("majority_last", 2), ("random", 1)):
        assert vary(base, pattern=pattern, seed=seed) == compose(*common, f"pattern={pattern}", f"seed={seed}")


def test_a_remembered_composition_follows_the_environment_and_is_a_copy(monkeypatch, tmp_path):
    monkeypatch.setenv("MIP_RESULTS_DIR", str(tmp_path / "a"))
    first = compose("model=mock")
    first.n = 999
    assert compose("model=mock").n != 999 and compose("model=mock").paths.results_dir == str(tmp_path / "a")
    monkeypatch.setenv("MIP_RESULTS_DIR", str(tmp_path / "b"))
    assert compose("model=mock").paths.results_dir == str(tmp_path / "b")
