"""`python -m mip.demo`, as users type it: the command lives in :mod:`mip.entry.demo_command`."""

from mip.entry.demo_command import main

if __name__ == "__main__":
    main()
