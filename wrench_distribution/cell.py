"""The distributor and the analyzer in one process, on one executor (console script ``cell``).

The same two nodes as the ``distributor`` and ``analyzer`` executables, with their names,
parameters and topics; what differs is the process layout: one Python process and one
executor (:func:`~wrench_distribution.ros.runner.make_executor`) instead of two. Parameter
files are read per node name (``wrench_distributor:`` and ``wrench_analyzer:`` sections; a
``/**:`` section would reach both nodes). Both are managed nodes, each with its own
lifecycle services and ``autostart``. The launch files start it with ``layout:=one-process``
(:func:`launch_actions`); docs/performance.md compares the layouts.
"""
import hashlib
import os
import sys
import tempfile
from typing import Dict, List, Sequence, Tuple

import yaml

#: The launch files' ``layout:=`` values: both nodes in one process, or each in its own.
LAYOUTS = ('one-process', 'processes')
#: The launch files' default: each node in its own process (docs/performance.md says why).
DEFAULT_LAYOUT = 'processes'
#: The launch files' ``autostart:=`` values (the nodes' ``autostart`` parameter), and what it does.
AUTOSTART_CHOICES = ['true', 'false']
AUTOSTART_HELP = ('true: each node configures and activates itself; false: the nodes wait '
                  'unconfigured for a lifecycle manager (ros2 lifecycle set, '
                  'nav2_lifecycle_manager, ...; docs/wiring.md)')
#: Executable -> node name.
NODE_NAMES = {'distributor': 'wrench_distributor', 'analyzer': 'wrench_analyzer'}


def both_nodes() -> tuple:
    """Create the distributor, then the analyzer (the first is destroyed if the second fails).

    Each is a managed node: with ``autostart`` (the default) it configures and activates itself,
    else it waits for a lifecycle manager (``/wrench_distributor/change_state``, ...). When the
    analyzer's internal-load topic is the distributor's ``feedback_topic`` and the executor runs
    one callback at a time (not ``multi``), the distributor takes the measurements from it
    directly (``take_measurements_from``), connected again after each transition of either node
    (a configure makes the subscription and the listeners anew).

    :return: ``(DistributorNode, AnalyzerNode)``.
    :raises ConfigError: on invalid parameters of either (the message names the parameter).
    """
    from wrench_distribution.analyzer_node import AnalyzerNode
    from wrench_distribution.distributor_node import DistributorNode
    from wrench_distribution.ros.runner import executor_kind
    distributor = DistributorNode()
    try:
        analyzer = AnalyzerNode()
    except Exception:
        distributor.destroy_node()
        raise
    # on one thread only: the multi-threaded executor may run the two nodes' callbacks at
    # once, and the subscription keeps the distributor's own callbacks one at a time
    if executor_kind() != 'multi':
        connect = _measurement_link(distributor, analyzer)
        distributor.add_state_listener(connect)
        analyzer.add_state_listener(connect)
        connect()
    return distributor, analyzer


def _measurement_link(distributor, analyzer):
    """Return the call that connects the analyzer's measurements to the distributor, when it can."""
    said = []

    def connect() -> None:
        if distributor.take_measurements_from(analyzer) and not said:
            said.append(True)
            distributor.get_logger().info(f'measured internal load taken from '
                                          f'{analyzer.get_name()} in this process '
                                          f'({analyzer.internal_load_topic})')
    return connect


def launch_actions(actions, layout: str, namespace, shared: Sequence,
                   own: Dict[str, dict], remappings: Dict[str, List[Tuple[str, str]]],
                   **options) -> list:
    """Build the launch files' node actions for a process layout.

    Each node in its own process is a ``LifecycleNode`` action (launch's lifecycle events reach
    it). Both in one process are one ``Node`` action, the ``cell``: a ``LifecycleNode`` action
    stands for one node, and its name would rename both; the cell's two nodes are managed
    nodes all the same (their ``autostart`` parameters, or a lifecycle manager by their
    names). In one process, what belongs to one node only is scoped to it: its own parameters
    go to a parameter file section ``/**/<node name>`` (any namespace), its remappings are
    prefixed ``<node name>:``.

    :param actions: ``launch_ros.actions`` (its ``LifecycleNode`` and ``Node``).
    :param layout: ``one-process`` or ``processes``; one node alone always runs on its own.
    :param namespace: both nodes' namespace.
    :param shared: parameter files and dicts both nodes read, in order.
    :param own: executable (``distributor``, ``analyzer``) -> its own parameters, read after
        the shared ones, for each node started.
    :param remappings: executable -> its ``(from, to)`` topic remappings.
    :param options: further keywords of every action (``output``, ``emulate_tty``).
    :return: the node actions.
    :raises ValueError: on an unknown layout (names the accepted ones).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout:='{layout}': accepted: {', '.join(LAYOUTS)}")
    if layout == 'processes' or len(own) < 2:
        return [actions.LifecycleNode(
            package='wrench_distribution', executable=exe, name=NODE_NAMES[exe],
            namespace=namespace, parameters=[*shared, own[exe]] if own[exe] else list(shared),
            remappings=list(remappings.get(exe, [])), **options) for exe in own]
    scoped = [_scoped_parameters(NODE_NAMES[exe], own[exe]) for exe in own if own[exe]]
    return [actions.Node(package='wrench_distribution', executable='cell', namespace=namespace,
                         parameters=[*shared, *scoped],
                         remappings=[(f'{NODE_NAMES[exe]}:{source}', target) for exe in own
                                     for source, target in remappings.get(exe, [])], **options)]


def _scoped_parameters(node_name: str, values: dict) -> str:
    """Write a parameter file whose one section reaches ``node_name`` in any namespace.

    :return: its path, in the temporary directory and named after its content (launching
        again with the same values rewrites the same file; written whole, then renamed).
    """
    text = yaml.safe_dump({f'/**/{node_name}': {'ros__parameters': values}})
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f'{node_name}_{digest}.yaml')
    descriptor, partial = tempfile.mkstemp(prefix=f'{node_name}_', suffix='.partial')
    with os.fdopen(descriptor, 'w') as stream:
        stream.write(text)
    os.replace(partial, path)
    return path


def main(args=None) -> int:
    """Run both nodes in this process (console script ``cell``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    from wrench_distribution.ros.runner import run_node
    return run_node(both_nodes, 'cell', args)


if __name__ == '__main__':
    sys.exit(main())
