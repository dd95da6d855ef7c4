"""`python -m mip.summary`, as users type it: the command lives in :mod:`mip.tools.run_summary`."""

import sys  # noqa: F401

from mip.tools.run_summary import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
