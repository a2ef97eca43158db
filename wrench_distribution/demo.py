"""``python -m wrench_distribution.demo``: the whole idea, closed loop, in one command.

A simulated object is held by compliant effectors (``object_sim``); a pose controller
(``object_controller``) asks for the object wrench and a scripted squeeze; the
distributor turns both into per-effector commands; the simulated F/T sensors feed the
analyzer, which recovers the internal load. The demo starts the four nodes as
subprocesses on one private ``ROS_DOMAIN_ID`` (DDS kept on the loopback interface),
records an mcap bag in-process (the simulator's truth included), stops everything after
``--duration`` seconds of sim time, and prints a summary, judged on the truth, and writes a
plot. ``--tare on`` tares the analyzer while the grippers are open (``dual_arm_real_cell``);
``--calibrate on`` runs a user's calibration through the analyzer's services
(``dual_arm_real_cell_tilt``); where the scenario holds the object still at several internal
loads before its move (``dual_arm_admittance``, ``dual_arm_joints``) the demo identifies the
grasps from those rests (``--identify-grasps``).
See README, "The demo", and docs/simulator.md.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import time

import yaml

from .core.codec import ns_to_seconds
from .sim.scenarios.models import effector_model
from .sim.scenarios.runs import apply_feedback, load_calibration, read_calibration, without_calibration_motions
from .sim.scenarios.sections import load_sections, scenario_file, SCENARIOS, validate_sections

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
ROS_ENV = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST', 'ROS_LOCALHOST_ONLY': '1'}


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options.

    :param argv: arguments (None: ``sys.argv[1:]``).
    :return: the options
    """
    p = argparse.ArgumentParser(
        prog='python -m wrench_distribution.demo',
        description='Closed-loop demo: simulator, controller, distributor and analyzer.')
    p.add_argument('--scenario', default='dual_arm',
                   help=f'one of {", ".join(SCENARIOS)}, or a parameter file (default dual_arm)')
    p.add_argument('--duration', type=float, default=None,
                   help='sim time in seconds (default: the scenario file, 6 s); the move and '
                        'the squeeze change are rescaled to fit')
    p.add_argument('--out', default='demo_output', help='output directory (default demo_output)')
    p.add_argument('--baseline', choices=['moore_penrose'], default=None,
                   help='replace the distributor by a baseline (pinv(G)) for comparison')
    p.add_argument('--internal-load', choices=['scheduled', 'zero'], default='scheduled',
                   help="prescribe the scenario's squeeze schedule, or zero internal load")
    p.add_argument('--domain-id', type=int, default=None,
                   help='ROS_DOMAIN_ID (default: the environment, else derived from the pid)')
    p.add_argument('--real-time-factor', type=float, default=None, metavar='X',
                   help="the simulator's largest sim time per wall time (default: the scenario "
                        "file's; 0: as fast as possible); lower on a loaded machine, so that the "
                        'analyzer and the recorder, outside the lockstep, keep up')
    p.add_argument('--rate', type=float, default=None,
                   help='publish (control) rate of the simulator in Hz (default: the scenario '
                        'file, 200); a divisor of its physics rate')
    p.add_argument('--friction', choices=['check', 'auto', 'compare'], default=None,
                   help="the distributor's friction_mode (default: the scenario file); compare: "
                        'run twice with no squeeze, prescription alone then auto, and compare')
    p.add_argument('--squeeze', type=float, default=None,
                   help='replace every scheduled internal-load value by this one (N or N*m)')
    p.add_argument('--move-duration', type=float, default=None,
                   help="duration of the controller's move in s (default: the scenario file)")
    p.add_argument('--internal-load-feedback', choices=['off', 'on'], default='off',
                   help="the distributor's internal-load feedback from the analyzer's "
                        'measured/internal_load (default off: open loop)')
    p.add_argument('--friction-feedback', choices=['off', 'on'], default='off',
                   help="the distributor's friction feedback from the analyzer's measured/friction "
                        '(needs --friction auto or a scenario in auto mode; default off)')
    _calibration_arguments(p)
    p.add_argument('--summary-json', default=None, metavar='PATH',
                   help='also write the per-element summary (commanded, true and estimated '
                        'means, true error RMS, gap, within_tolerance judged on the truth, limit '
                        'violations, over the steady window) to PATH')
    p.add_argument('--no-plot', action='store_true', help='skip the PNG')
    p.add_argument('--timeout', type=float, default=None,
                   help='wall-clock limit in seconds (default 60 + 4 x duration)')
    return p.parse_args(argv)


def _calibration_arguments(p: argparse.ArgumentParser) -> None:
    """Declare what a user does to the cell before the hold: tare, calibration, grasps."""
    p.add_argument('--tare', choices=['off', 'on', 'compare'], default='off',
                   help="tare the analyzer's sensors with the object free before the grasp "
                        "(its ~/tare; needs the scenario's grasp_time, e.g. dual_arm_real_cell); "
                        'compare: four runs, tare off/on x open/closed loop, in one table')
    p.add_argument('--calibrate', choices=['off', 'on', 'compare'], default='off',
                   help="run a user's calibration with the analyzer's services: captures at the "
                        'rests of the free and held tilts, identify tools and object, save to the '
                        "run's calibration.yaml (a scenario with tilts, e.g. dual_arm_real_cell_tilt); "
                        'compare: that run, then the hold with the identified parameters loaded '
                        'and with the typed guesses tared, in one table')
    p.add_argument('--identify-grasps', choices=['auto', 'on', 'off'], default='auto',
                   help="identify the grasps with the analyzer's services from the rests at several "
                        'internal loads before the move (captures, ~/calibration/identify_grasps, '
                        "~/save_calibration to the run's calibration.yaml); auto (default): where the "
                        'scenario holds two or more internal loads before its move (dual_arm_admittance, '
                        'dual_arm_joints)')
    p.add_argument('--hold-only', action='store_true',
                   help="skip the calibration's motions (the free tilts, the held tilts before the "
                        'last internal-load change): the grasp, the hold and its tilts come sooner; '
                        'what --calibrate compare runs after the calibration')
    p.add_argument('--calibration', default=None, metavar='FILE',
                   help='a calibration file (~/save_calibration, identify) loaded by the analyzer '
                        'and the distributor (the object into every node; the truth kept)')


def run_sections(sections: dict, duration: float | None, zero_internal: bool) -> dict:
    """Return the parameter sections of this run.

    With a duration other than the file's, the controller's times after the fixture
    release are stretched by ``(duration - release) / (nominal - release)`` so that the
    move and the squeeze change keep their place in the run.

    :param sections: node name -> parameters, from the scenario file.
    :param duration: requested sim time, or None for the file's.
    :param zero_internal: set every scheduled internal-load value to 0.
    :return: the modified sections (a copy)
    :raises ValueError: for a duration too short, or a parameter the schema refuses
        (``ConfigError``).
    """
    out = {k: dict(v) for k, v in sections.items()}
    sim, ctl = out['object_sim'], out['object_controller']
    checked = validate_sections(sections)  # the schema's values and defaults
    nominal = checked['object_sim']['duration'] or 6.0
    release = checked['object_sim']['release_time']
    duration = nominal if duration is None else float(duration)
    if duration <= release + 0.5:
        raise ValueError(f'--duration must exceed {release + 0.5:g} s (fixture release + 0.5 s)')
    sim['duration'] = duration
    sim['wait_for_subscribers'] = 2  # the analyzer and the recorder
    factor = (duration - release) / max(nominal - release, 1e-9)

    def stretch(t: float) -> float:
        return t if t <= release else release + (t - release) * factor
    start = checked['object_controller']['move_start']
    end = start + checked['object_controller']['move_duration']
    ctl['move_start'] = stretch(start)
    ctl['move_duration'] = stretch(end) - stretch(start)
    from .config.handles import format_schedule, parse_schedule
    ctl['internal_load_schedule'] = format_schedule(
        (stretch(when), {k: 0.0 if zero_internal else v for k, v in handles.items()})
        for when, handles in parse_schedule(checked['object_controller']['internal_load_schedule']))
    return out


def _executable(script: str, module: str) -> list:
    """Return the console script next to this Python if installed, else ``python -m module``."""
    candidate = Path(sys.executable).parent / script
    if candidate.exists():
        return [str(candidate)]
    return [sys.executable, '-m', module]


def _stop(procs: dict, grace: float = 5.0) -> None:
    """Stop the children we started: SIGINT, then SIGTERM, then SIGKILL, each by pid."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        alive = [p for p in procs.values() if p.poll() is None]
        if not alive:
            return
        for p in alive:
            try:
                os.killpg(p.pid, sig)  # each child leads its own process group
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        for p in alive:
            try:
                p.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass


def _prepare_sections(args) -> tuple:
    """Load the scenario and apply the command-line overrides.

    :param args: parsed arguments.
    :return: ``(scenario path, node sections)``.
    :raises ValueError: on a bad option or parameter (``ConfigError``); ``OSError`` when the
        scenario cannot be read.
    """
    path = scenario_file(args.scenario)
    sections = run_sections(load_sections(str(path)), args.duration,
                            args.internal_load == 'zero')
    if args.rate is not None:
        if not 1.0 <= args.rate <= float(sections['object_sim']['physics_rate']):
            raise ValueError('--rate must be between 1 Hz and the physics rate')
        sections['object_sim']['publish_rate'] = float(args.rate)
    if args.real_time_factor is not None:
        if not args.real_time_factor >= 0.0:
            raise ValueError('--real-time-factor must be 0 (as fast as possible) or more')
        sections['object_sim']['real_time_factor'] = float(args.real_time_factor)
    if args.friction is not None:
        sections['wrench_distributor']['friction_mode'] = args.friction
    if args.move_duration is not None:
        sections['object_controller']['move_duration'] = float(args.move_duration)
    if args.squeeze is not None:
        _set_schedule(sections['object_controller'], args.squeeze)
    model = effector_model(sections['object_sim'])
    model.require()
    if args.tare != 'off' and not float(sections['object_sim'].get('grasp_time', 0.0)) > 0.0:
        raise ValueError('--tare needs a free phase before the grasp: a scenario with '
                         'object_sim grasp_time > 0 (e.g. dual_arm_real_cell)')
    if args.calibration is not None:
        load_calibration(sections, args.calibration)
    if args.hold_only:
        if args.calibrate != 'off':
            raise ValueError('--hold-only skips the motions --calibrate captures: use one or the other')
        without_calibration_motions(sections, validate_sections(sections))
    model.prepare(sections)
    if args.internal_load_feedback == 'on':
        apply_feedback(sections)
    if args.friction_feedback == 'on':
        sections['wrench_distributor']['friction_feedback'] = True
    checked = validate_sections(sections)
    if args.calibrate == 'on':
        from .sim.nodes.calibration_step import procedure
        procedure(checked)  # refuses a scenario without the motions
    args.grasps = _grasp_steps(args.identify_grasps, checked)
    return path, sections


def _grasp_steps(mode: str, checked: dict):
    """Return the grasp identification's calls (``--identify-grasps``), or None when it is off.

    :param mode: ``auto`` (where the scenario holds rests before its move), ``on`` or ``off``.
    :param checked: the run's validated sections.
    :raises ValueError: ``on`` for a scenario without the rests
    """
    if mode == 'off':
        return None
    from .sim.nodes.calibration_step import grasp_procedure
    try:
        return grasp_procedure(checked)
    except ValueError:
        if mode == 'on':
            raise
        return None


def _run_tag(args, name: str) -> str:
    """Return the name of a run's output directory: the scenario's, then the run's options.

    :param args: the run's parsed options.
    :param name: the scenario's name.
    :return: the directory name.
    """
    return name + ('_' + args.baseline if args.baseline else '') + (
        '_zero' if args.internal_load == 'zero' else '') + (
        f'_squeeze{args.squeeze:g}' if args.squeeze is not None else '') + (
        f'_friction_{args.friction}' if args.friction else '') + (
        '_tare' if args.tare == 'on' else '') + (
        '_calibrate' if args.calibrate == 'on' else '') + (
        '_calibrated' if args.calibration else '') + (
        '_grasps_off' if args.identify_grasps == 'off' else '') + (
        '_feedback' if args.internal_load_feedback == 'on' else '') + (
        '_friction_feedback' if args.friction_feedback == 'on' else '')


def _output_dir(args, name: str) -> Path:
    """Create a fresh output directory (with ``logs/``) named after the run's options."""
    out = Path(args.out) / _run_tag(args, name)
    if out.exists():
        shutil.rmtree(out)
    (out / 'logs').mkdir(parents=True)
    return out


def _ros_environment(args) -> tuple:
    """Set this process's ROS environment and build the children's.

    :param args: parsed arguments.
    :return: ``(ROS_DOMAIN_ID, environment of the node processes)``.
    """
    domain = args.domain_id if args.domain_id is not None else int(
        os.environ.get('ROS_DOMAIN_ID') or 10 + os.getpid() % 90)
    os.environ.update(ROS_ENV)
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(PACKAGE_ROOT)] + [
        x for x in env.get('PYTHONPATH', '').split(os.pathsep) if x])
    env['PYTHONUNBUFFERED'] = '1'
    return domain, env


def _node_commands(args) -> tuple:
    """Return the distributor's node name and the command line of every node."""
    distributor = 'baseline_distributor' if args.baseline else 'wrench_distributor'
    commands = {
        distributor: (_executable('baseline-distributor',
                                  'wrench_distribution.sim.nodes.baseline_distributor_node')
                      if args.baseline else
                      _executable('distributor', 'wrench_distribution.distributor_node')),
        'wrench_analyzer': _executable('analyzer', 'wrench_distribution.analyzer_node'),
        'object_controller': _executable('object-controller',
                                         'wrench_distribution.sim.nodes.object_controller_node'),
        'object_sim': _executable('object-sim', 'wrench_distribution.sim.nodes.object_sim_node'),
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
              'joint_arms/status': Float64MultiArray}
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


def _wait_for_nodes(executor, recorder, others: set, procs: dict, out: Path) -> None:
    """Spin until the other nodes are discovered (30 s at most).

    :raises RuntimeError: when a node died or did not appear in time.
    """
    deadline = time.monotonic() + 30.0
    while not others <= set(recorder.get_node_names()):
        executor.spin_once(timeout_sec=0.1)
        dead = [n for n, p in procs.items() if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(
                f'{", ".join(dead) or ", ".join(others - set(recorder.get_node_names()))}'
                f' did not start; see {out / "logs"}')


def _spin_until_done(executor, recorder, procs: dict, limit: float, wall0: float,
                     duration: float, out: Path, steps=()) -> bool:
    """Record until the simulator ends, a node dies or the wall-clock limit is reached.

    :param steps: the user's service calls polled at each spin (:class:`~.sim.nodes.tare_step.TareStep`,
        :class:`~.sim.nodes.calibration_step.ServiceScript`).
    :return: True when the simulator exited with 0.
    """
    next_report = time.monotonic() + 2.0
    while True:
        executor.spin_once(timeout_sec=0.02)
        for step in steps:
            if not step.finished:
                step.poll(ns_to_seconds(recorder.get_clock().now().nanoseconds))
        sim_rc = procs['object_sim'].poll()
        if sim_rc is not None:
            if sim_rc != 0:
                print(f'demo: object_sim exited with {sim_rc}; see its log', file=sys.stderr)
            return sim_rc == 0
        # object_sim may have ended since its poll above: that is the run's end, checked next time
        dead = [n for n, p in procs.items() if n != 'object_sim' and p.poll() is not None]
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
    """Return the run's service calls (``run['tare']``, ``run['calibration']``).

    :return: the tare (``--tare on``) and the calibration (``--calibrate on``), as asked
    """
    steps = []
    if args.tare == 'on':
        from .sim.nodes.tare_step import TareStep
        run['tare'] = TareStep(recorder, run['sections']['object_sim']['grasp_time'])
        steps.append(run['tare'])
    if args.calibrate == 'on':
        from .sim.nodes.calibration_step import procedure, ServiceScript
        run['calibration'] = ServiceScript(recorder, procedure(validate_sections(run['sections'])))
        steps.append(run['calibration'])
    if args.grasps is not None:
        from .sim.nodes.calibration_step import ServiceScript
        run['grasps'] = ServiceScript(recorder, args.grasps)
        steps.append(run['grasps'])
    return steps


def _run_nodes(args, run: dict, procs: dict, wall0: float) -> tuple:
    """Start the nodes, record the bag while the simulator runs, stop everything.

    :param args: parsed arguments.
    :param run: ``out``, ``params_file``, ``env``, ``commands``, ``distributor``,
        ``effectors`` and ``duration`` of this run.
    :param procs: filled with the node processes by name.
    :param wall0: monotonic start time.
    :return: ``(ok, interrupted)``.
    """
    out = run['out']
    recorder = None
    rclpy_ctx = False
    ok = False
    interrupted = False
    try:
        from .ros.runner import make_executor
        from .sim.nodes.recorder import BagRecorder

        def start(node: str) -> None:
            log = open(out / 'logs' / f'{node}.log', 'w')
            cmd = run['commands'][node] + ['--ros-args', '--params-file',
                                           str(run['params_file'])]
            procs[node] = subprocess.Popen(cmd, env=run['env'], stdout=log,
                                           stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True)
            log.close()
        others = {run['distributor'], 'wrench_analyzer', 'object_controller'}
        for node in (run['distributor'], 'wrench_analyzer', 'object_controller'):
            start(node)
        topics = _recorded_topics(run['effectors'])
        _init_rclpy()
        rclpy_ctx = True
        recorder = BagRecorder(out / 'bag', topics)
        executor = make_executor()
        executor.add_node(recorder)
        # Start the simulator (the clock) once the other nodes are up and discovered.
        _wait_for_nodes(executor, recorder, others, procs, out)
        _spin_for(executor, 0.5)
        steps = _user_steps(args, recorder, run)
        start('object_sim')
        limit = args.timeout if args.timeout is not None else 60.0 + 4.0 * run['duration']
        ok = _spin_until_done(executor, recorder, procs, limit, wall0, run['duration'], out,
                              steps)
        _spin_for(executor, 0.3)  # let the last messages in flight arrive
        ok = ok and all(step.summary()['success'] for step in steps)
    except KeyboardInterrupt:
        interrupted = True
        print('demo: interrupted', file=sys.stderr)
    except RuntimeError as e:
        print(f'demo: {e}', file=sys.stderr)
    finally:
        _stop(procs)
        if recorder is not None:
            recorder.close()
            recorder.destroy_node()
        if rclpy_ctx:
            import rclpy
            rclpy.try_shutdown()
    return ok, interrupted


def _report(args, run: dict, summary_extra: dict, title: str, ok: bool) -> int:
    """Summarise the recorded bag, write the summary files and plot.

    :param args: parsed arguments.
    :param run: as for :func:`_run_nodes`, plus ``sections``.
    :param summary_extra: fields added to the summary (wall time, scenario...).
    :param title: the run's title line.
    :param ok: whether the run itself went well.
    :return: exit code.
    """
    out, params_file = run['out'], run['params_file']
    if not (out / 'bag').exists():
        print('demo: no bag was written', file=sys.stderr)
        return 1
    from .sim.reports.summary import format_summary, plot, read_bag, summarize, write_json
    series = read_bag(out / 'bag')
    summary = summarize(series, run['sections'], run['duration'])
    summary.update(summary_extra)
    text = format_summary(summary, title + f' (wall {summary["wall_time_s"]:.1f} s)')
    print()
    print(text)
    write_json(summary, out / 'summary.json')
    if not args.no_plot:
        plot(summary, out / 'plot.png', title)
    from .sim.reports.elements import format_elements, write_element_summary
    elements = write_element_summary(out, run['sections'], run['duration'], args.summary_json,
                                     not args.no_plot, summary_extra)
    if elements is not None:
        text += '\n\n' + format_elements(elements)
    (out / 'summary.txt').write_text(text + '\n')
    print()
    print(f'Files: {out / "summary.txt"}, {out / "summary.json"}'
          + ('' if args.no_plot else f', {out / "plot.png"}') + f', bag {out / "bag"} (mcap)')
    print(f'Replay offline: wrench-distribution analyze-bag {out / "bag"} '
          f'--config {params_file} --out {out / "analysis"}')
    needed = ('object_pose', 'desired_wrench', 'measured/internal_load')
    missing = [t for t in needed if summary['message_counts'].get(t, 0) == 0]
    if missing:
        print(f'demo: nothing recorded on {", ".join(missing)}', file=sys.stderr)
        ok = False
    return 0 if ok else 1


def main(argv=None) -> int:
    """Run the demo.

    :param argv: arguments (None: ``sys.argv[1:]``).
    :return: exit code: 0 on success, 1 when the loop did not run, 2 on bad options
    """
    args = parse_args(argv)
    if args.friction == 'compare':
        return compare_friction(list(sys.argv[1:] if argv is None else argv), args)
    if args.tare == 'compare':
        return compare_tare(list(sys.argv[1:] if argv is None else argv), args)
    if args.calibrate == 'compare':
        return compare_calibrate(list(sys.argv[1:] if argv is None else argv), args)
    try:
        path, sections = _prepare_sections(args)
    except (ValueError, OSError) as e:
        print(f'demo: {e}', file=sys.stderr)
        return 2
    name = path.stem.replace('demo_', '')
    out = _output_dir(args, name)
    params_file = out / 'params.yaml'
    if args.calibrate == 'on' or args.grasps is not None:  # where the analyzer's ~/save_calibration writes
        sections['wrench_analyzer']['calibration_file'] = str((out / 'calibration.yaml').resolve())
    params_file.write_text(yaml.safe_dump(
        {k: {'ros__parameters': v} for k, v in sections.items()}, sort_keys=False))
    duration = float(sections['object_sim']['duration'])
    domain, env = _ros_environment(args)
    distributor, commands = _node_commands(args)
    by = 'Moore-Penrose pinv(G) (baseline)' if args.baseline else 'the distributor (G_M+)'
    title = (f'wrench_distribution demo: scenario {name}, {duration:g} s of sim time, '
             f'distribution by {by}'
             f'{", zero internal load" if args.internal_load == "zero" else ""}')
    print(title, flush=True)
    print(f'  ROS_DOMAIN_ID={domain}, DDS on localhost; logs in {out / "logs"}', flush=True)
    procs: dict = {}

    def on_term(signum, frame):  # SIGTERM (e.g. from timeout): clean up like Ctrl-C
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    wall0 = time.monotonic()
    run = {'out': out, 'params_file': params_file, 'env': env, 'commands': commands,
           'distributor': distributor, 'effectors': list(sections['object_sim']['effectors']),
           'duration': duration, 'sections': sections}
    ok, interrupted = _run_nodes(args, run, procs, wall0)
    wall = time.monotonic() - wall0
    if interrupted:
        return 130
    for node, p in procs.items():
        if p.returncode not in (0, -signal.SIGINT, 130, None):
            print(f'  note: {node} exited with {p.returncode} (log: {out / "logs" / node}.log)')
    extra = {'wall_time_s': wall, 'scenario': name, 'baseline': args.baseline,
             'ros_domain_id': domain, 'tare': None if run.get('tare') is None else
             run['tare'].summary()}
    if extra['tare'] is not None and not extra['tare']['success']:
        print(f'demo: tare failed: {extra["tare"]["message"]}', file=sys.stderr)
    if run.get('calibration') is not None:
        extra['calibration'] = _calibration_record(run, out)
    if run.get('grasps') is not None:
        extra['grasps'] = _grasps_record(run, out)
    return _report(args, run, extra, title, ok)


def _grasps_record(run: dict, out: Path) -> dict:
    """Return the grasp identification's record; the run's summary then judges the identified belief.

    The analyzer's contacts in ``run['sections']`` become the identified ones (what it used after
    ``~/calibration/identify_grasps``: the attribution of the estimate's error starts from them).
    """
    from .sim.reports.real_cell import format_grasps, grasps_vs_truth
    record = run['grasps'].summary()
    for call in record['calls']:
        print(f'  grasps: {call["service"]} at {call["called_at_s"]:.2f} s: '
              f'{"ok" if call["success"] else "REFUSED"}: {call["message"]}')
    if not record['success']:
        print('demo: the grasp identification did not complete', file=sys.stderr)
    saved = read_calibration(out / 'calibration.yaml') if (out / 'calibration.yaml').exists() else {}
    if 'contact_positions' in saved:
        checked = validate_sections(run['sections'])
        record['identified'] = grasps_vs_truth(saved, checked['object_sim'])
        print(format_grasps(record['identified']))
        run['sections']['wrench_analyzer'].update(
            {k: list(saved[k]) for k in ('contact_positions', 'contact_orientations')})
    return record


def _calibration_record(run: dict, out: Path) -> dict:
    """Return the calibration's record: the calls, and the saved parameters against the truth."""
    from .sim.reports.real_cell import format_identified, identified_vs_truth
    record = run['calibration'].summary()
    for call in record['calls']:
        print(f'  calibration: {call["service"]} at {call["called_at_s"]:.2f} s: '
              f'{"ok" if call["success"] else "REFUSED"}: {call["message"]}')
    if not record['success']:
        print('demo: the calibration did not complete', file=sys.stderr)
    if (out / 'calibration.yaml').exists():
        checked = validate_sections(run['sections'])
        record['identified'] = identified_vs_truth(
            read_calibration(out / 'calibration.yaml'), checked['object_sim'], checked['wrench_analyzer'])
        print(format_identified(record['identified']))
    return record


def _set_schedule(controller: dict, value: float) -> None:
    """Give every scheduled internal-load handle the same value."""
    from .config.handles import format_schedule, parse_schedule
    controller['internal_load_schedule'] = format_schedule(
        (when, dict.fromkeys(handles, value))
        for when, handles in parse_schedule(controller.get('internal_load_schedule', [])))


def _without(argv: list, options: tuple) -> list:
    """Return a command line without some options (``--x value`` and ``--x=value`` forms)."""
    out, skip = [], False
    for item in argv:
        if skip:
            skip = False
        elif item in options:
            skip = True
        elif not item.startswith(tuple(f'{o}=' for o in options)):
            out.append(item)
    return out


def compare_tare(argv: list, args: argparse.Namespace) -> int:
    """Run a real cell's procedure four times: tare off/on x internal-load feedback off/on.

    :param argv: the command line (``--tare``, ``--internal-load-feedback`` and
        ``--summary-json`` are set per run).
    :param args: its parsed options (``--summary-json``: the comparison's JSON).
    :return: 0 when the four runs completed, else the first failing run's code
    """
    from .sim.reports.real_cell import compare, PHASES
    base = _without(argv, ('--tare', '--internal-load-feedback', '--summary-json'))
    name = scenario_file(args.scenario).stem.replace('demo_', '')
    runs = {}
    for label, tare, feedback in PHASES:
        run = base + ['--tare', tare, '--internal-load-feedback', feedback]
        code = main(run)
        if code != 0:
            return code
        runs[label] = Path(args.out) / _run_tag(parse_args(run), name)
    text, summary = compare(runs)
    return _report_comparison(args, f'{name}_tare_compare', text, summary)


def _report_comparison(args: argparse.Namespace, stem: str, text: str, summary: dict) -> int:
    """Print a comparison's table and write it (``<out>/<stem>.txt``, ``.json``, ``--summary-json``).

    :param args: the parsed options (``out``, ``summary_json``).
    :param stem: the files' name without suffix.
    :param text: the table.
    :param summary: the comparison as JSON.
    :return: 0.
    """
    print()
    print(text)
    (Path(args.out) / f'{stem}.txt').write_text(text + '\n')
    for path in filter(None, (Path(args.out) / f'{stem}.json', args.summary_json)):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(summary, indent=2) + '\n')
    return 0


def compare_calibrate(argv: list, args: argparse.Namespace) -> int:
    """Run a user's calibration, then the hold with the identified parameters and with the guesses.

    The guesses are run as typed (no biases known) and tared with the object free (the tare
    takes in the biases and the tools' weight in the pose it was taken in). The three holds
    skip the calibration's motions (``--hold-only``): the same hold, sooner.

    :param argv: the command line (``--calibrate``, ``--calibration``, ``--tare``,
        ``--internal-load-feedback`` and ``--summary-json`` are set per run).
    :param args: its parsed options (``--summary-json``: the comparison's JSON).
    :return: 0 when the four runs completed, else the first failing run's code
    """
    from .sim.reports.real_cell import compare_calibration
    base = _without([a for a in argv if a != '--hold-only'],
                    ('--calibrate', '--calibration', '--tare', '--internal-load-feedback',
                     '--summary-json')) + ['--internal-load-feedback', 'on']
    name = scenario_file(args.scenario).stem.replace('demo_', '')
    calibrating = base + ['--calibrate', 'on']
    code = main(calibrating)
    calibration_dir = Path(args.out) / _run_tag(parse_args(calibrating), name)
    if code != 0:
        return code
    file = str(calibration_dir / 'calibration.yaml')
    runs = {}
    for label, extra in (('identified', ['--calibration', file]), ('typed guesses', []),
                         ('typed guesses, tared', ['--tare', 'on'])):
        code = main(base + extra + ['--hold-only'])  # the motions were for the calibration
        if code != 0:
            return code
        runs[label] = Path(args.out) / _run_tag(parse_args(base + extra), name)
    record = json.loads((calibration_dir / 'summary.json').read_text())['calibration']
    text, summary = compare_calibration(runs, record['identified'])
    return _report_comparison(args, f'{name}_calibrate_compare', text, summary)


def compare_friction(argv: list, args: argparse.Namespace) -> int:
    """Run a scenario twice with a light squeeze: the prescription alone, then friction auto.

    :param argv: the command line (``--friction compare`` is replaced for each run;
        ``--friction-feedback`` applies to the auto run only).
    :param args: its parsed options.
    :return: 0 when both runs completed, else the first failing run's code
    """
    base = _without(argv, ('--friction', '--friction-feedback'))  # set per run below
    if args.move_duration is None:
        base += ['--move-duration', '0.6']  # a brisk lift: the squeeze must follow it
    if args.squeeze is None:
        base += ['--squeeze', '0.5']  # too light to hold the ball by friction alone
    name = scenario_file(args.scenario).stem.replace('demo_', '')
    runs = []
    for mode in ('check', 'auto'):
        run = base + ['--friction', mode] + (  # the feedback tightens auto mode only
            ['--friction-feedback', args.friction_feedback] if mode == 'auto' else [])
        code = main(run)
        if code != 0:
            return code
        runs.append(Path(args.out) / _run_tag(parse_args(run), name))  # this run's, not a glob
    from .sim.reports.friction import compare
    text = compare(runs[0], runs[1], Path(args.out) / f'{name}_friction_compare.png')
    print()
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
