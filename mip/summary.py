"""`python -m mip.summary`, as users type it: the command lives in :mod:`mip.entry.summary_command`."""

import sys

from mip.entry.summary_command import main

if __name__ == "__main__":
    sys.exit(main())
