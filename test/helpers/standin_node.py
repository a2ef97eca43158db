"""Run one of the package's nodes on the tf2 stand-in (tests only; tf2_ros is not installable).

``python test/helpers/standin_node.py <distributor|analyzer|cell> [--ros-args ...]``: the same
entry point as the console script, with ``wrench_distribution.ros.tf.use_tf2_implementation``
pointing at ``test/helpers/tf2_standin.py``, whose listener subscribes to /tf and /tf_static.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tf2_standin  # noqa: E402  (after the path)
from wrench_distribution import analyzer_node, cell, distributor_node  # noqa: E402
from wrench_distribution.ros import tf  # noqa: E402

ENTRY_POINTS = {'distributor': distributor_node.main, 'analyzer': analyzer_node.main,
                'cell': cell.main}

if __name__ == '__main__':
    tf.use_tf2_implementation(tf2_standin)
    kind = sys.argv[1]
    sys.argv = [kind] + sys.argv[2:]  # what the console script sees (check-config reads argv)
    sys.exit(ENTRY_POINTS[kind]())
