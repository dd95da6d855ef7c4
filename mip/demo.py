"""`python -m mip.demo`, as users type it: the command lives in :mod:`mip.tools.demo`."""

import sys  # noqa: F401

from mip.tools.demo import main

if __name__ == "__main__":
    main()
