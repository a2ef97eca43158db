"""Test harness for the ROS nodes: subprocesses on a private DDS domain, a test node.

Every process keeps DDS discovery on loopback (``ROS_AUTOMATIC_DISCOVERY_RANGE=
LOCALHOST``, ``ROS_LOCALHOST_ONLY=1``) and uses a domain id of this pytest process's
own block (:func:`domain_id_for`), so concurrent tests and test runs do not see each other.
Subprocesses are started and stopped by the package's one recipe,
:mod:`wrench_distribution.processes` (a node with its parameter file: :class:`NodeProcess`;
the demo: :func:`run_demo`).
"""
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional

import yaml

from wrench_distribution.processes import ChildProcess, Finished, LOOPBACK, loopback_environment, run_to_end

#: the repository (this file is in test/helpers/)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


#: ids one test process may use: its block is ``base + block * DOMAIN_BLOCK .. + DOMAIN_BLOCK - 1``
DOMAIN_BLOCK = 5


def xdist_worker_index() -> int:
    """Index of this pytest-xdist worker (``PYTEST_XDIST_WORKER`` = ``gw<N>``), 0 without xdist.

    :return: N.
    """
    worker = os.environ.get('PYTEST_XDIST_WORKER', '')
    return int(worker[2:]) if worker.startswith('gw') and worker[2:].isdigit() else 0


def domain_id_for(module_name: str = '', offset: int = 0) -> int:
    """Return a ROS domain id of this test process: the one place every test takes it from.

    ``ROS_DOMAIN_ID`` of the environment is the run's base (``make test`` sets it; default
    57). Each pytest-xdist worker ``gw<N>`` owns the block of :data:`DOMAIN_BLOCK` ids from
    ``base + N * DOMAIN_BLOCK``; a test process without xdist owns the block at the base.
    Tests run one after the other in a worker and stop every process they start, so one
    block serves them all, and no two concurrent tests share a DDS graph. ``offset``
    (0..4) gives a test that needs several concurrent graphs its own.

    :param module_name: kept for call sites that name their module; unused.
    :param offset: index in the block, 0 to ``DOMAIN_BLOCK - 1``.
    :return: the domain id.
    :raises ValueError: for an offset outside the block.
    """
    if not 0 <= offset < DOMAIN_BLOCK:
        raise ValueError(f'domain offset {offset} outside the block 0..{DOMAIN_BLOCK - 1}')
    base = int(os.environ.get('ROS_DOMAIN_ID', '57'))
    return base + xdist_worker_index() * DOMAIN_BLOCK + offset


def ros_env(domain_id: int, **extra: str) -> Dict[str, str]:
    """Environment for a ROS subprocess: loopback-only discovery on ``domain_id``.

    A subprocess is no pytest-xdist worker: a pytest run in it takes ``domain_id`` as its
    base (its block must then fit in the caller's: offsets up to ``DOMAIN_BLOCK - 1`` in all).

    :param domain_id: ROS domain id.
    :param extra: more variables (e.g. ``MPLBACKEND='Agg'``).
    :return: a copy of ``os.environ`` with the ROS variables set (:func:`loopback_environment`).
    """
    own = {k: v for k, v in os.environ.items() if not k.startswith('PYTEST_XDIST')}
    return loopback_environment(domain_id, own, **extra)


PACKAGE = 'wrench_distribution'


def _ament_prefixes() -> List[str]:
    """Install prefixes that hold this package, from ament_index_python or AMENT_PREFIX_PATH.

    :return: prefixes, the ament index's first (empty when neither knows the package).
    """
    prefixes = []
    try:
        from ament_index_python.packages import get_package_prefix
        prefixes.append(get_package_prefix(PACKAGE))
    except Exception:  # not installed, or the package is not in the index
        pass
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix and prefix not in prefixes:
            prefixes.append(prefix)
    return prefixes


def _own_prefix() -> Optional[str]:
    """Install prefix of the imported package when it lives in ``<prefix>/lib/python*/``.

    :return: the prefix, or None (a source tree or an editable install).
    """
    import wrench_distribution
    parts = os.path.abspath(wrench_distribution.__file__).split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if parts[i].startswith('python') and parts[i - 1] == 'lib':
            return os.sep.join(parts[:i - 1]) or os.sep
    return None


def script_candidates(name: str) -> List[str]:
    """Where a console script may be, in the order :func:`script` tries them.

    ``lib/wrench_distribution`` of the prefix the imported package was installed in (a
    colcon install, so ``colcon test`` runs the scripts it built); next to the running
    interpreter (a venv or ``pip install``); ``lib/wrench_distribution`` of every ament
    prefix (found via ``ament_index_python`` or ``AMENT_PREFIX_PATH``); then ``PATH``.

    :param name: console script name, e.g. ``distributor``.
    :return: candidate paths (not checked for existence).
    """
    own = _own_prefix()
    cands = [os.path.join(own, 'lib', PACKAGE, name)] if own else []
    cands.append(os.path.join(os.path.dirname(sys.executable), name))
    cands += [os.path.join(p, 'lib', PACKAGE, name) for p in _ament_prefixes()]
    found = shutil.which(name)
    if found:
        cands.append(found)
    return cands


def script(name: str) -> str:
    """Path of an installed console script of this package.

    :param name: ``distributor``, ``analyzer``, ``wrench-distribution``, ...
    :return: the executable path.
    :raises FileNotFoundError: naming every place looked at.
    """
    cands = script_candidates(name)
    for cand in cands:
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise FileNotFoundError(f'console script {name!r} not found in: {", ".join(cands)}; run '
                            "'pip install --no-deps --no-build-isolation -e .' or source a "
                            'colcon install (install/setup.bash)')


def node_command(name: str, param_files=(), extra_args=()) -> List[str]:
    """Return the command line of a node console script with its parameter files.

    :param name: console script (``distributor``, ``analyzer``, ...).
    :param param_files: ``--params-file`` arguments, in order.
    :param extra_args: more ``--ros-args`` arguments.
    :return: the command.
    """
    return ([script(name), '--ros-args'] + [a for f in param_files for a in ('--params-file', str(f))]
            + list(extra_args))


def start_node(name: str, param_files, domain_id: int, log=None, env: Optional[dict] = None) -> ChildProcess:
    """Start a node console script with parameter files on ``domain_id`` (stop it with ``close``).

    :param name: console script.
    :param param_files: its parameter files.
    :param domain_id: ROS domain id.
    :param log: its log file (default: a temporary one).
    :param env: more environment variables.
    :return: the running node.
    """
    return ChildProcess(node_command(name, param_files), ros_env(domain_id, **(env or {})), log=log)


class NodeProcess(ChildProcess):
    """A node console script running in a subprocess with a parameter file.

    :param name: console script (``distributor`` / ``analyzer``).
    :param params: parameters, written to a ``/**: ros__parameters:`` YAML file.
    :param domain_id: ROS domain id.
    :param extra_args: more ``--ros-args`` arguments.
    :param env: more environment variables.
    """

    def __init__(self, name: str, params: dict, domain_id: int,
                 extra_args: Optional[List[str]] = None, env: Optional[dict] = None) -> None:
        self.dir = tempfile.mkdtemp(prefix=f'wd_{name}_')
        self.param_file = os.path.join(self.dir, 'params.yaml')
        with open(self.param_file, 'w') as f:
            yaml.safe_dump({'/**': {'ros__parameters': params}}, f)
        super().__init__(node_command(name, [self.param_file], extra_args or []),
                         ros_env(domain_id, **(env or {})), log=os.path.join(self.dir, 'log.txt'))

    def close(self) -> Optional[int]:
        """Stop the node, keep its output and remove its directory.

        :return: its exit code.
        """
        code = super().close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return code


def demo_summary(args: List[str], summary_json, domain_id: int, timeout: float) -> dict:
    """Run the demo with ``--summary-json summary_json`` to its end and return that summary.

    :param args: its other options.
    :param summary_json: where it writes the per-element summary.
    :param domain_id: its ROS domain id.
    :param timeout: seconds it may run.
    :return: the summary.
    :raises AssertionError: when the demo failed or timed out (with the end of its output).
    """
    done = run_demo_command([*args, '--summary-json', str(summary_json)], domain_id, timeout)
    assert done.returncode == 0 and not done.timed_out, done.output[-6000:]
    with open(summary_json, encoding='utf-8') as f:
        return json.load(f)


def run_demo_command(args: List[str], domain_id: int, timeout: float, **env: str) -> Finished:
    """Run the demo (``python -m wrench_distribution.sim.demo``) to its end from the repository.

    :param args: its options.
    :param domain_id: its ROS domain id.
    :param timeout: seconds it may run before it is stopped (SIGINT: it stops its nodes first).
    :param env: more environment variables.
    :return: its exit code, output (stdout and stderr), and whether time ran out.
    """
    return run_to_end([sys.executable, '-m', 'wrench_distribution.sim.demo', *args],
                      ros_env(domain_id, MPLBACKEND='Agg', **env), timeout, cwd=REPO)


class TestClient:
    """A small in-process rclpy node on its own context to publish and collect.

    :param domain_id: ROS domain id (same as the nodes under test).
    :param name: node name.
    """

    __test__ = False  # not a pytest class

    def __init__(self, domain_id: int, name: str = 'wd_test_client') -> None:
        os.environ.update(LOOPBACK)
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        self.rclpy = rclpy
        self.context = Context()
        try:  # keep pytest's own SIGINT handling
            from rclpy.signals import SignalHandlerOptions
            rclpy.init(context=self.context, domain_id=domain_id,
                       signal_handler_options=SignalHandlerOptions.NO)
        except (ImportError, TypeError):
            rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.collected: Dict[str, list] = {}

    def publisher(self, msg_type, topic: str, qos=10):
        """Create a publisher.

        :return: the publisher.
        """
        return self.node.create_publisher(msg_type, topic, qos)

    def collect(self, msg_type, topic: str, qos=100) -> list:
        """Subscribe and append every message to a list (once per topic).

        :return: the list (filled while spinning; shared by later calls for the topic).
        """
        if topic in self.collected:  # one subscription per topic and client
            return self.collected[topic]
        box = self.collected[topic] = []
        self.node.create_subscription(msg_type, topic, box.append, qos)
        return box

    def spin_for(self, seconds: float) -> None:
        """Process callbacks for a while.

        :param seconds: duration.
        """
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=min(0.02, max(0.0, end - time.monotonic())))

    def spin_until(self, pred: Callable[[], bool], timeout: float) -> bool:
        """Spin until ``pred()`` is true or the timeout expires.

        :param pred: condition.
        :param timeout: seconds.
        :return: the final value of ``pred()``.
        """
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            self.executor.spin_once(timeout_sec=0.02)
        return bool(pred())

    def wait_matched(self, publishers=(), topics=(), timeout: float = 10.0) -> bool:
        """Wait until publishers have a subscriber and topics have a publisher.

        :param publishers: our publishers that need a matched subscription.
        :param topics: topics that need a publisher (the node's outputs).
        :param timeout: seconds.
        :return: True when all matched.
        """
        def ok() -> bool:
            return (all(p.get_subscription_count() > 0 for p in publishers)
                    and all(self.node.count_publishers(t) > 0 for t in topics))
        return self.spin_until(ok, timeout)

    def call(self, srv_type, name: str, request, timeout: float = 5.0,
             again_after: float = 1.0):
        """Call a service, spinning meanwhile (the collections go on filling).

        A node that ended a moment ago can leave its services in this process's graph: the
        service then looks available before the new node's server has matched this client,
        and a request sent then is lost. So a request left unanswered for ``again_after``
        seconds is sent again; the first answer counts.

        :param srv_type: the service type.
        :param name: the service name.
        :param request: the request.
        :param timeout: seconds, for the service to appear and then for the answer.
        :param again_after: seconds without an answer before the request goes again.
        :return: the response.
        :raises TimeoutError: naming the service.
        """
        cli = self.node.create_client(srv_type, name)
        try:
            if not cli.wait_for_service(timeout_sec=timeout):
                raise TimeoutError(f'{name} not available')
            end = time.monotonic() + timeout
            sent = []
            while time.monotonic() < end:
                sent.append(cli.call_async(request))
                self.spin_until(lambda: any(f.done() for f in sent),
                                min(again_after, end - time.monotonic()))
                answered = [f for f in sent if f.done()]
                if answered:
                    return answered[0].result()
            raise TimeoutError(f'{name} timed out')
        finally:
            self.node.destroy_client(cli)

    def set_parameters(self, node_name: str, params: list, timeout: float = 5.0,
                       again_after: float = 1.0):
        """Call ``/<node>/set_parameters``.

        :param node_name: target node name.
        :param params: list of ``rclpy.parameter.Parameter``.
        :param timeout: seconds.
        :param again_after: as :meth:`call` (a test that counts requests sends once: ``timeout``).
        :return: list of ``SetParametersResult``.
        """
        from rcl_interfaces.srv import SetParameters
        req = SetParameters.Request()
        req.parameters = [p.to_parameter_msg() for p in params]
        return self.call(SetParameters, f'/{node_name}/set_parameters', req, timeout, again_after).results

    def change_state(self, node_name: str, transition: str, timeout: float = 10.0) -> bool:
        """Ask a managed node for a transition, as ``ros2 lifecycle set`` does (``~/change_state``).

        :param node_name: target node name.
        :param transition: ``configure``, ``activate``, ``deactivate``, ``cleanup``,
            ``unconfigured_shutdown``, ``inactive_shutdown`` or ``active_shutdown``
            (``lifecycle_msgs/Transition``'s ids).
        :param timeout: seconds.
        :return: the response's ``success``.
        """
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState
        req = ChangeState.Request()
        req.transition.id = getattr(Transition, f'TRANSITION_{transition.upper()}')
        # sent again only after a long silence: a second request for the same transition
        # would be refused (its state has changed), the first answer counts
        return self.call(ChangeState, f'/{node_name}/change_state', req, timeout,
                         again_after=3.0).success

    def lifecycle_state(self, node_name: str, timeout: float = 10.0) -> str:
        """Return a managed node's primary state, as ``ros2 lifecycle get`` does (``~/get_state``).

        :param node_name: target node name.
        :param timeout: seconds.
        :return: the state's label (``unconfigured``, ``inactive``, ``active``, ``finalized``).
        """
        from lifecycle_msgs.srv import GetState
        return self.call(GetState, f'/{node_name}/get_state', GetState.Request(),
                         timeout).current_state.label

    def set_parameters_atomically(self, node_name: str, params: list, timeout: float = 10.0,
                                  again_after: float = 1.0):
        """Call ``/<node>/set_parameters_atomically`` (sent again when unanswered, as :meth:`call`).

        :param node_name: target node name.
        :param params: list of ``rclpy.parameter.Parameter``.
        :param timeout: seconds, for the service to appear and then for the answer.
        :param again_after: as :meth:`call` (a test that counts requests sends once: ``timeout``).
        :return: the one ``SetParametersResult`` of the whole request.
        """
        from rcl_interfaces.srv import SetParametersAtomically
        request = SetParametersAtomically.Request(parameters=[p.to_parameter_msg() for p in params])
        return self.call(SetParametersAtomically, f'/{node_name}/set_parameters_atomically', request,
                         timeout, again_after).result

    def close(self) -> None:
        """Destroy the node and shut the context down."""
        try:
            self.executor.shutdown()
            self.node.destroy_node()
        finally:
            self.rclpy.try_shutdown(context=self.context)

    def __enter__(self) -> 'TestClient':
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def diag_messages(arrays: list, name_contains: str) -> List[str]:
    """Messages of the statuses whose name contains a text.

    :param arrays: collected ``DiagnosticArray`` messages.
    :param name_contains: e.g. ``wrench_distributor``.
    :return: status messages, oldest first.
    """
    return [s.message for a in arrays for s in a.status if name_contains in s.name]


def diag_values(arrays: list, name_contains: str) -> dict:
    """Key/values of the latest matching status.

    :param arrays: collected ``DiagnosticArray`` messages.
    :param name_contains: status name filter.
    :return: dict (empty when none).
    """
    for a in reversed(arrays):
        for s in a.status:
            if name_contains in s.name:
                return {kv.key: kv.value for kv in s.values}
    return {}


def stamped_wrench(values, stamp_ns: int, frame: str = ''):
    """Build a ``WrenchStamped`` with the given values, stamp (ns) and frame id.

    :param values: ``[fx, fy, fz, tx, ty, tz]``.
    :param stamp_ns: header stamp in nanoseconds.
    :param frame: header frame id.
    :return: the message.
    """
    from wrench_distribution.core.codec import ns_to_stamp
    from wrench_distribution.core.messages import fill_wrench
    from wrench_distribution.ros.conversions import make_wrench_stamped
    m = make_wrench_stamped(frame)
    m.header.stamp = ns_to_stamp(stamp_ns, type(m.header.stamp))
    fill_wrench(m.wrench, [float(v) for v in values])
    return m


def big_endian_wrench_payload(values, stamp_ns: int, frame: str) -> bytes:
    """Lay out a ``WrenchStamped`` in big-endian plain CDR by hand (an independent writer).

    XCDR1: the doubles are aligned to 8 bytes from the end of the 4-byte encapsulation header.

    :param values: ``[fx, fy, fz, tx, ty, tz]``.
    :param stamp_ns: header stamp in nanoseconds.
    :param frame: header frame id.
    :return: the payload, encapsulation header (``CDR_BE``) included.
    """
    import struct
    sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
    name = frame.encode() + b'\x00'
    body = struct.pack('>iII', sec, nanosec, len(name)) + name
    body += b'\x00' * (-len(body) % 8)
    return b'\x00\x00\x00\x00' + body + struct.pack('>6d', *[float(v) for v in values])


def big_endian_pose_array_payload(poses, stamp_ns: int, frame: str) -> bytes:
    """Lay out a ``PoseArray`` in big-endian plain CDR by hand (an independent writer).

    XCDR1: the pose count aligns to 4 bytes and the doubles to 8, from the end of the 4-byte
    encapsulation header; no padding follows the count of an empty array.

    :param poses: (m, 7) ``[x, y, z, qx, qy, qz, qw]``.
    :param stamp_ns: header stamp in nanoseconds.
    :param frame: header frame id.
    :return: the payload, encapsulation header (``CDR_BE``) included.
    """
    import struct
    sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
    name = frame.encode() + b'\x00'
    numbers = [float(v) for pose in poses for v in pose]
    body = struct.pack('>iII', sec, nanosec, len(name)) + name
    body += b'\x00' * (-len(body) % 4) + struct.pack('>I', len(numbers) // 7)
    if numbers:
        body += b'\x00' * (-len(body) % 8) + struct.pack(f'>{len(numbers)}d', *numbers)
    return b'\x00\x00\x00\x00' + body


def taken_in(outputs: list, stamp_ns: int) -> bool:
    """Tell whether a node has taken in its input stamped ``stamp_ns``.

    The node's outputs keep their input's stamp: the newest collected output stamped
    ``stamp_ns`` or later says every input up to it has been processed (a capture asked before
    that could miss readings still on their way).

    :param outputs: the node's stamped outputs, as :meth:`TestClient.collect` fills them.
    :param stamp_ns: the stamp of the last input published.
    :return: whether it has been taken in.
    """
    from wrench_distribution.core.codec import stamp_to_ns
    return bool(outputs) and stamp_to_ns(outputs[-1].header.stamp) >= stamp_ns


def wrench_values(msg) -> list:
    """Return ``[fx, fy, fz, tx, ty, tz]`` of a ``WrenchStamped``.

    :param msg: the message.
    :return: the six values.
    """
    f, t = msg.wrench.force, msg.wrench.torque
    return [f.x, f.y, f.z, t.x, t.y, t.z]


def resultant_at(positions, wrenches):
    """Resultant about the origin of wrenches applied at points, axes aligned (by hand).

    ``F = sum f_i``, ``T = sum (t_i + p_i x f_i)``.

    :param positions: (n, 3) points of application.
    :param wrenches: n wrenches ``[fx, fy, fz, tx, ty, tz]`` about those points.
    :return: the resultant, 6 values.
    """
    import numpy as np
    p, w = np.asarray(positions, float), np.asarray(wrenches, float)
    return np.concatenate([w[:, :3].sum(0), w[:, 3:].sum(0) + np.cross(p, w[:, :3]).sum(0)])
