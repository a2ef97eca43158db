"""The distributor and the analyzer in one process, on one executor (console script ``cell``).

The same two nodes as the ``distributor`` and ``analyzer`` executables, with their names,
parameters and topics; what differs is the process layout: one Python process and one
executor (:func:`~wrench_distribution.ros.runner.make_executor`) instead of two. Parameter
files are read per node name (``wrench_distributor:`` and ``wrench_analyzer:`` sections; a
``/**:`` section would reach both nodes). docs/performance.md compares the layouts.
"""
import sys

from wrench_distribution.ros.runner import run_node


def both_nodes() -> tuple:
    """Create the distributor, then the analyzer (the first is destroyed if the second fails).

    :return: ``(DistributorNode, AnalyzerNode)``.
    :raises ConfigError: on invalid parameters of either (the message names the parameter).
    """
    from wrench_distribution.analyzer_node import AnalyzerNode
    from wrench_distribution.distributor_node import DistributorNode
    distributor = DistributorNode()
    try:
        return distributor, AnalyzerNode()
    except Exception:
        distributor.destroy_node()
        raise


def main(args=None) -> int:
    """Run both nodes in this process (console script ``cell``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    return run_node(both_nodes, 'cell', args)


if __name__ == '__main__':
    sys.exit(main())
