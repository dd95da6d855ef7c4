"""`python -m mip.summary`, as users type it: the command lives in :mod:`mip.tools.summary`."""

import sys  # noqa: F401

from mip.tools.summary import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
