"""`python -m mip.show`, as users type it: the command lives in :mod:`mip.tools.record_view`."""

import sys  # noqa: F401

from mip.tools.record_view import main

if __name__ == "__main__":
    sys.exit(main())
