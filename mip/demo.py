"""`python -m mip.demo`, as users type it: the command lives in :mod:`mip.tools.demo`."""

from mip.tools.demo import main

if __name__ == "__main__":
    main()
