"""`python -m mip.demo`, as users type it: the command lives in :mod:`mip.tools.embedded_demo`."""

from mip.tools.embedded_demo import main

if __name__ == "__main__":
    main()
