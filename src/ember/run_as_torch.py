"""``python -m ember.run_as_torch program.py [args]``: run a PyTorch program on Ember (``ember.as_torch``)."""

import sys

from ._as_torch import main

if __name__ == "__main__":
    main(sys.argv[1:])
