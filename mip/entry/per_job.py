"""A swept group's key overrides, applied to each job rather than to the sweep's primary config.

Hydra composes a sweep's primary config without its swept values: with ``-m model=a,b`` it
composes the default model, and an override of a key that model's schema lacks
(``model.base_url=…`` while the default model is a local one) stops the sweep before any job,
although every swept model has the key. A one-value sweep is applied to each job alone, on the
option that job composes, so run.py passes such overrides to Hydra in that form
(``model.base_url=choice(…)``); each job's overrides read as written (``model.base_url=…``).

>>> per_job(["-m", "model=a,b", "model.base_url=http://h:8/v1", "n=5"])
['-m', 'model=a,b', 'model.base_url=choice(http://h:8/v1)', 'n=5']
>>> per_job(["-m", "model=a", "model.base_url=x"])     # one model: the primary config has it
['-m', 'model=a', 'model.base_url=x']
>>> as_given("model.base_url=choice(http://h:8/v1)"), as_given("n=5")
('model.base_url=http://h:8/v1', 'n=5')
"""

from __future__ import annotations

from typing import Any


def _parsed(arg: str) -> Any | None:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides([arg])[0]
    except HydraException:
        return None


def per_job(args: list[str]) -> list[str]:
    """``args`` with each plain override of a swept group's key as a one-value sweep (multirun only)."""
    if not {"-m", "--multirun"} & set(args):
        return list(args)
    parsed = {arg: _parsed(arg) for arg in args if "=" in arg and not arg.startswith("-")}
    swept = {o.get_key_element() for o in parsed.values() if o is not None and o.is_sweep_override()
             and "." not in o.get_key_element() and not o.get_key_element().startswith("hydra")}
    out = []
    for arg in args:
        override, value = parsed.get(arg), arg.partition("=")[2]
        key = override.get_key_element() if override is not None else ""
        if (override is not None and not override.is_sweep_override() and not arg.startswith(("+", "~")) and value
                and key.partition(".")[0] in swept and "." in key
                and (wrapped := _parsed(f"{key}=choice({value})")) is not None and wrapped.is_sweep_override()):
            arg = f"{key}=choice({value})"
        out.append(arg)
    return out


def as_given(arg: str) -> str:
    """An override as written: a one-value sweep (:func:`per_job`) as its one value."""
    override = _parsed(arg)
    if override is None or not override.is_sweep_override():
        return arg
    key, _, value = arg.partition("=")
    one = value.startswith("choice(") and value.endswith(")") and len(list(override.sweep_string_iterator())) == 1
    return f"{key}={value[len('choice('):-1]}" if one else arg
