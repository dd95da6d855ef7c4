"""`python -m mip.serve`, as users type it: the command lives in :mod:`mip.entry.serve_command`."""

import sys

from mip.entry.serve_command import main

if __name__ == "__main__":
    sys.exit(main())
