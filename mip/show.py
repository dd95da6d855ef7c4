"""`python -m mip.show`, as users type it: the command lives in :mod:`mip.entry.show_command`."""

import sys

from mip.entry.show_command import main

if __name__ == "__main__":
    sys.exit(main())
