"""The node executables (console scripts): parameter files refused by their size before anything is imported.

Importing a node's module (numpy, scipy, rclpy and the package) takes seconds on a loaded
machine; a parameter file over its bound (:mod:`.ros_args`) is refused before that, from its size,
with the line the node would print, and exit status 2. Everything else runs as the node's own
``main`` does (:func:`~wrench_distribution.ros.runner.run_node`).
"""
from __future__ import annotations

import sys

from .ros_args import unreadable_param_files


def _refused(name: str) -> bool:
    """Print why a parameter file of this process is refused unread; return whether one is."""
    refused = unreadable_param_files(sys.argv)
    for line in refused:
        print(f'[{name}] invalid configuration: {line}', file=sys.stderr, flush=True)
    return bool(refused)


def distributor() -> int:
    """Run the distributor node (console script ``distributor``)."""
    if _refused('wrench_distributor'):
        return 2
    from .distributor_node import main
    return main()


def analyzer() -> int:
    """Run the analyzer node (console script ``analyzer``)."""
    if _refused('wrench_analyzer'):
        return 2
    from .analyzer_node import main
    return main()


def cell() -> int:
    """Run both nodes in one process (console script ``cell``)."""
    if _refused('cell'):
        return 2
    from .cell import main
    return main()


def object_sim() -> int:
    """Run the simulated object (console script ``object-sim``)."""
    if _refused('object_sim'):
        return 2
    from .sim.nodes.object_sim_node import main
    return main()


def object_controller() -> int:
    """Run the simulated object's controller (console script ``object-controller``)."""
    if _refused('object_controller'):
        return 2
    from .sim.nodes.object_controller_node import main
    return main()


def baseline_distributor() -> int:
    """Run the baseline distributor (console script ``baseline-distributor``)."""
    if _refused('baseline_distributor'):
        return 2
    from .sim.nodes.baseline_distributor_node import main
    return main()
