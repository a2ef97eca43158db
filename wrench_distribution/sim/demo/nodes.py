"""A demo run's nodes: each in its own process on the loopback, the bag recorded in this one."""
from __future__ import annotations

import os
from pathlib import Path
import sys
import time

from ..scenarios.sections import validate_sections
from ...core.codec import ns_to_seconds
from ...processes import Children, console_command, loopback_environment, use_loopback

#: The source tree or install prefix holding the package (this file is wrench_distribution/sim/demo/nodes.py).
PACKAGE_ROOT = Path(__file__).resolve().parents[3]


def ros_environment(args) -> tuple:
    """Set this process's ROS environment and build the children's.

    :param args: parsed arguments.
    :return: ``(ROS_DOMAIN_ID, environment of the node processes)``.
    """
    domain = args.domain_id if args.domain_id is not None else int(
        os.environ.get('ROS_DOMAIN_ID') or 10 + os.getpid() % 90)
    use_loopback(os.environ, domain)  # the recorder, in this process
    path = os.pathsep.join([str(PACKAGE_ROOT)] + [
        x for x in os.environ.get('PYTHONPATH', '').split(os.pathsep) if x])
    return domain, loopback_environment(domain, PYTHONPATH=path)


def node_commands(args) -> tuple:
    """Return the distributor's node name and the command line of every node."""
    distributor = 'baseline_distributor' if args.baseline else 'wrench_distributor'
    commands = {
        distributor: (console_command('baseline-distributor',
                                      'wrench_distribution.sim.nodes.baseline_distributor_node')
                      if args.baseline else
                      console_command('distributor', 'wrench_distribution.distributor_node')),
        'wrench_analyzer': console_command('analyzer', 'wrench_distribution.analyzer_node'),
        'object_controller': console_command('object-controller',
                                             'wrench_distribution.sim.nodes.object_controller_node'),
        'object_sim': console_command('object-sim', 'wrench_distribution.sim.nodes.object_sim_node'),
    }
    return distributor, commands


def _recorded_topics(effectors) -> dict:
    """Topics the demo records, with their message types."""
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseArray, PoseStamped, TwistStamped, WrenchStamped
    from std_msgs.msg import Float64MultiArray
    topics = {'desired_wrench': WrenchStamped, 'internal_load': Float64MultiArray,
              'contact_poses': PoseArray, 'object_pose': PoseStamped,
              'object_twist': TwistStamped, 'measured/internal_load': Float64MultiArray,
              'measured/object_wrench': WrenchStamped, '/diagnostics': DiagnosticArray,
              'contact_slip': Float64MultiArray, 'measured/friction': Float64MultiArray,
              'friction/internal_load_added': Float64MultiArray,
              'joint_arms/status': Float64MultiArray, 'contact_weights': Float64MultiArray,
              'contact_weights/actual': Float64MultiArray}
    for e in effectors:
        topics[f'{e}/ft_sensor'] = WrenchStamped
        topics[f'{e}/wrench_command'] = WrenchStamped
        topics[f'/object_sim/truth/{e}/wrench'] = WrenchStamped
    topics.update({'/object_sim/truth/object_wrench': WrenchStamped,
                   '/object_sim/truth/internal_load': Float64MultiArray,
                   '/object_sim/truth/internal_load_true_contacts': Float64MultiArray})
    return topics


def _init_rclpy() -> None:
    """Initialise rclpy without its signal handlers, so Ctrl-C stays a KeyboardInterrupt."""
    import rclpy
    try:  # keep Ctrl-C a KeyboardInterrupt, so that the children are stopped below
        from rclpy.signals import SignalHandlerOptions
        rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)
    except ImportError:  # pragma: no cover - older rclpy
        rclpy.init(args=[])


def _spin_for(executor, seconds: float) -> None:
    """Spin the executor for a while (messages in flight, discovery)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)


def _wait_for_nodes(executor, recorder, others: set, children: Children, out: Path) -> None:
    """Spin until the other nodes are discovered (30 s at most).

    :raises RuntimeError: when a node died or did not appear in time.
    """
    deadline = time.monotonic() + 30.0
    while not others <= set(recorder.get_node_names()):
        executor.spin_once(timeout_sec=0.1)
        dead = children.ended()
        if dead or time.monotonic() > deadline:
            raise RuntimeError(
                f'{", ".join(dead) or ", ".join(others - set(recorder.get_node_names()))}'
                f' did not start; see {out / "logs"}')


def _spin_until_done(executor, recorder, children: Children, limit: float, wall0: float,
                     duration: float, out: Path, steps=()) -> bool:
    """Record until the simulator ends, a node dies or the wall-clock limit is reached.

    :param steps: the user's service calls polled at each spin (:class:`~..nodes.tare_step.TareStep`,
        :class:`~..nodes.calibration_step.ServiceScript`).
    :return: True when the simulator exited with 0.
    """
    next_report = time.monotonic() + 2.0
    while True:
        executor.spin_once(timeout_sec=0.02)
        for step in steps:
            if not step.finished:
                step.poll(ns_to_seconds(recorder.get_clock().now().nanoseconds))
        sim_rc = children['object_sim'].poll()
        if sim_rc is not None:
            if sim_rc != 0:
                print(f'demo: object_sim exited with {sim_rc}; see its log', file=sys.stderr)
            return sim_rc == 0
        # object_sim may have ended since its poll above: that is the run's end, checked next time
        dead = [n for n in children.ended() if n != 'object_sim']
        if dead:
            print(f'demo: {", ".join(dead)} stopped early; see {out / "logs"}',
                  file=sys.stderr)
            return False
        if time.monotonic() - wall0 > limit:
            print(f'demo: wall-clock limit of {limit:g} s reached', file=sys.stderr)
            return False
        if time.monotonic() > next_report:
            sim_t = ns_to_seconds(recorder.get_clock().now().nanoseconds)
            print(f'  ... sim time {sim_t:4.1f} s of {duration:g} s', flush=True)
            next_report = time.monotonic() + 2.0


def _user_steps(args, recorder, run: dict) -> list:
    """Return the run's service calls (``run['tare']``, ``run['calibration']``, ``run['grasps']``).

    :return: the tare (``--tare on``), the calibration (``--calibrate on``) and the grasp
        identification (``run['grasp_steps']``), as asked
    """
    steps = []
    if args.tare == 'on':
        from ..nodes.tare_step import TareStep
        run['tare'] = TareStep(recorder, run['sections']['object_sim']['grasp_time'])
        steps.append(run['tare'])
    if args.calibrate == 'on':
        from ..nodes.calibration_step import procedure, ServiceScript
        run['calibration'] = ServiceScript(recorder, procedure(validate_sections(run['sections'])))
        steps.append(run['calibration'])
    if run['grasp_steps'] is not None:
        from ..nodes.calibration_step import ServiceScript
        run['grasps'] = ServiceScript(recorder, run['grasp_steps'])
        steps.append(run['grasps'])
    return steps


def run_nodes(args, run: dict, children: Children, wall0: float) -> tuple:
    """Start the nodes, record the bag while the simulator runs, stop everything.

    :param args: parsed arguments.
    :param run: ``out``, ``params_file``, ``env``, ``commands``, ``distributor``,
        ``effectors``, ``duration``, ``sections`` and ``grasp_steps`` of this run.
    :param children: where the node processes are started, by name.
    :param wall0: monotonic start time.
    :return: ``(ok, interrupted)``.
    """
    out = run['out']
    recorder = None
    rclpy_ctx = False
    ok = False
    interrupted = False
    try:
        from ...ros.runner import make_executor
        from ..nodes.recorder import BagRecorder

        def start(node: str) -> None:
            children.start(node, run['commands'][node] + ['--ros-args', '--params-file', str(run['params_file'])],
                           run['env'], log=out / 'logs' / f'{node}.log')
        others = {run['distributor'], 'wrench_analyzer', 'object_controller'}
        for node in (run['distributor'], 'wrench_analyzer', 'object_controller'):
            start(node)
        _init_rclpy()
        rclpy_ctx = True
        recorder = BagRecorder(out / 'bag', _recorded_topics(run['effectors']))
        executor = make_executor()
        executor.add_node(recorder)
        # Start the simulator (the clock) once the other nodes are up and discovered.
        _wait_for_nodes(executor, recorder, others, children, out)
        _spin_for(executor, 0.5)
        steps = _user_steps(args, recorder, run)
        start('object_sim')
        limit = args.timeout if args.timeout is not None else 60.0 + 4.0 * run['duration']
        ok = _spin_until_done(executor, recorder, children, limit, wall0, run['duration'], out,
                              steps)
        _spin_for(executor, 0.3)  # let the last messages in flight arrive
        ok = ok and all(step.summary()['success'] for step in steps)
    except KeyboardInterrupt:
        interrupted = True
        print('demo: interrupted', file=sys.stderr)
    except RuntimeError as e:
        print(f'demo: {e}', file=sys.stderr)
    finally:
        children.stop()
        if recorder is not None:
            recorder.close()
            recorder.destroy_node()
        if rclpy_ctx:
            import rclpy
            rclpy.try_shutdown()
    return ok, interrupted
