"""The entry points' plumbing (run.py, analyze.py, attribute.py, audit.py, filter.py): each root
script's command (``<script>_command``: what its Hydra app does with the composed config, and the
checks of its command line before Hydra composes), its callbacks around a sweep, the preflight
gate, and the clean-up of a refused job. A root script only declares its Hydra app; the work is
the domain packages' (:func:`mip.job.run_job`, :func:`mip.analysis.analyze.analyze`, …). What a
user runs as ``python -m mip.…`` is :mod:`mip.tools`."""
