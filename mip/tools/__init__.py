"""What the commands beside the pipeline do (``python -m mip.show``, ``mip.summary``, ``mip.demo``,
``mip.serve``, ``preflight=…``, ``audit.py``, ``filter.py``) and what they print, from configs already
composed; every command's plumbing and ``main`` is :mod:`mip.entry`'s."""
