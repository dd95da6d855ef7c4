"""The commands a researcher runs beside the entry points (``python -m mip.show``, ``mip.summary``,
``mip.demo``, ``mip.serve``, ``preflight=…``, ``audit.py``, ``filter.py``) and what they print; the entry
points' own plumbing is :mod:`mip.entry`."""
