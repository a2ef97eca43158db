"""``python -m wrench_distribution.sim.demo``: run the demo (:func:`.run.main`)."""
import sys

from .run import main

if __name__ == '__main__':  # importing the module (every module is, by the tests) runs nothing
    sys.exit(main())
