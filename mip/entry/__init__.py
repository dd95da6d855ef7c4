"""The entry points' plumbing (run.py, analyze.py, attribute.py, audit.py, filter.py): the checks of a
command line before Hydra composes, the schemas Hydra composes with, its callbacks around a sweep, the
preflight gate, and the clean-up of a refused job. What a user runs as ``python -m mip.…`` is
:mod:`mip.tools`."""
