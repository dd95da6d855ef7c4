"""Every command's plumbing and ``main`` (the root scripts run.py, analyze.py, attribute.py, audit.py,
filter.py, and ``python -m mip.show``, ``mip.summary``, ``mip.demo``, ``mip.serve``); what the commands
do is :mod:`mip.tools`' and the domain packages' (:func:`mip.job.run_job`, :func:`mip.analysis.analyze.analyze`, …).

Here: each command's ``<name>_command`` (its Hydra app's body, or its arguments parsed, its configs
composed and its tool called), a command line's checks before Hydra composes (``cli``, ``overrides``),
the schemas Hydra composes with and ``compose_conf`` (``config_store``), the shipped task configs
composed by name (``shipped_tasks``), a sweep's callbacks and checks, the preflight gate, and the
clean-up of a refused job."""
