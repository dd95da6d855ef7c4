"""Tools the entry points and `python -m mip.…` commands call: show, summary, demo, serve, audit, filter."""
