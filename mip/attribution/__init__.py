"""Attribution (§5.2.1, App. F): which instances a stored answer rests on, by Input × Gradient.

- :mod:`mip.attribution.replay` — attribute.py's work: choose stored outputs, rebuild their
  prompts, replay them, write the tables and figures;
- :mod:`mip.attribution.ixg` — one replay, both labels in one pass (the ``Attributor``), with
  :mod:`~mip.attribution.teacher_forced` (what it feeds the model), :mod:`~mip.attribution.packing`
  (one packed sequence), :mod:`~mip.attribution.spans` (where each instance lies) and
  :mod:`~mip.attribution.replay_record` (what a replay found);
- :mod:`mip.attribution.weights` and :mod:`mip.attribution.memory` — the weights, and where
  they go on the device, chosen before they load;
- :mod:`mip.attribution.profiles`, :mod:`~mip.attribution.pooled` and
  :mod:`~mip.attribution.profile_figures` — position profiles of Share (× uniform) and their figures.

Exercised by ``pytest tests/test_attribution.py``.
"""
