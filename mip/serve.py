"""`python -m mip.serve`, as users type it: the command lives in :mod:`mip.tools.embedded_server`."""

import sys  # noqa: F401

from mip.tools.embedded_server import main

if __name__ == "__main__":
    sys.exit(main())
