"""A rerun under a changed setting is a slice of its own, named by what it changes.

Each record's model name gains a suffix naming how its answer-shaping settings
(:func:`mip.experiment.identity.settings_of`) differ from those most of its model's records ran
under; a strategy's own settings (``strategy.*``) are named against the other records of that
strategy, since the strategy is a slice of its own already: they are a column of their own
(``strategy_settings``), part of the strategy compared when strategies are.

>>> import pandas as pd
>>> split(pd.Series(['{"read_first": 5, "strategy.batch_size": 5}']))[1].tolist()
['{"strategy.batch_size": 5}']
>>> frame = pd.DataFrame({"base_model": ["m"] * 3, "strategy": ["single_call"] * 3,
...                       "settings": ['{}', '{}', '{"read_first": 5}'], "strategy_settings": ['{}'] * 3})
>>> suffixes(frame).tolist()
['', '', ' [read_first=5]']
"""

from __future__ import annotations

import json

import pandas as pd

from mip.experiment.identity import differences


def split(settings: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The model's settings and the strategy's own (``strategy.*``), each as sorted JSON."""
    parts = {s: [json.dumps({k: v for k, v in json.loads(s).items() if k.startswith("strategy.") == own},
                            sort_keys=True) for own in (False, True)] for s in settings.unique()}
    return settings.map(lambda s: parts[s][0]), settings.map(lambda s: parts[s][1])


def suffixes(frame: pd.DataFrame) -> pd.Series:
    """Each row's model-name suffix: empty for the settings most of its model's records ran under
    (on a tie, those that set fewest fields), else what they change, ``" [read_first=5]"``."""
    out = pd.Series("", index=frame.index, dtype=object)
    for column, by in (("settings", ["base_model"]), ("strategy_settings", ["base_model", "strategy"])):
        for _, index in frame.groupby(by, sort=False).groups.items():
            counts = frame.loc[index, column].value_counts()
            reference = sorted(counts.index, key=lambda s: (-counts[s], len(json.loads(s)), s))[0]
            for value in counts.index.drop(reference):
                out[index[frame.loc[index, column] == value]] += f" [{differences(reference, value) or value}]"
    return out
