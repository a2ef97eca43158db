"""One demo run from its options to its exit code, and the command line that runs it or a comparison."""
from __future__ import annotations

import argparse
import signal
import sys
import time

import yaml

from .compare import COMPARISONS
from .nodes import node_commands, ros_environment, run_nodes
from .options import fresh_output_dir, parse_args
from .report import calibration_record, grasps_record, report
from .sections import prepare_sections
from ...processes import Children


def main(argv=None) -> int:
    """Run the demo.

    :param argv: arguments (None: ``sys.argv[1:]``).
    :return: exit code: 0 on success, 1 when the loop did not run, 2 on bad options
    """
    return run_or_compare(parse_args(argv))


def run_or_compare(args: argparse.Namespace) -> int:
    """Run the comparison the options ask for (:data:`~.compare.COMPARISONS`), else one run.

    :param args: the parsed options.
    :return: exit code, as :func:`main`'s.
    """
    for option, compare in COMPARISONS:
        if getattr(args, option) == 'compare':
            return compare(args, run_or_compare)
    return run_once(args)


def _interrupt_on_term(signum, frame):
    """SIGTERM (e.g. from timeout): clean up as Ctrl-C does."""
    raise KeyboardInterrupt


def run_once(args: argparse.Namespace) -> int:
    """Run the nodes once with the options, record the bag and report on it.

    :param args: the parsed options (no ``compare``).
    :return: exit code, as :func:`main`'s.
    """
    try:
        path, sections, grasp_steps = prepare_sections(args)
    except (ValueError, OSError) as e:
        print(f'demo: {e}', file=sys.stderr)
        return 2
    name = path.stem.replace('demo_', '')
    out = fresh_output_dir(args, name)
    params_file = out / 'params.yaml'
    if args.calibrate == 'on' or grasp_steps is not None:  # where the analyzer's ~/save_calibration writes
        sections['wrench_analyzer']['calibration_file'] = str((out / 'calibration.yaml').resolve())
    params_file.write_text(yaml.safe_dump(
        {k: {'ros__parameters': v} for k, v in sections.items()}, sort_keys=False))
    duration = float(sections['object_sim']['duration'])
    domain, env = ros_environment(args)
    distributor, commands = node_commands(args)
    title = _title(args, name, duration)
    print(title, flush=True)
    print(f'  ROS_DOMAIN_ID={domain}, DDS on localhost; logs in {out / "logs"}', flush=True)
    signal.signal(signal.SIGTERM, _interrupt_on_term)
    wall0 = time.monotonic()
    run = {'out': out, 'params_file': params_file, 'env': env, 'commands': commands,
           'distributor': distributor, 'effectors': list(sections['object_sim']['effectors']),
           'duration': duration, 'sections': sections, 'grasp_steps': grasp_steps}
    children = Children()
    ok, interrupted = run_nodes(args, run, children, wall0)
    wall = time.monotonic() - wall0
    if interrupted:
        return 130
    for node, child in children.items():
        if child.returncode not in (0, -signal.SIGINT, 130, None):
            print(f'  note: {node} exited with {child.returncode} (log: {out / "logs" / node}.log)')
    extra = {'wall_time_s': wall, 'scenario': name, 'baseline': args.baseline,
             'ros_domain_id': domain, 'tare': None if run.get('tare') is None else
             run['tare'].summary()}
    if extra['tare'] is not None and not extra['tare']['success']:
        print(f'demo: tare failed: {extra["tare"]["message"]}', file=sys.stderr)
    if run.get('calibration') is not None:
        extra['calibration'] = calibration_record(run, out)
    if run.get('grasps') is not None:
        extra['grasps'] = grasps_record(run, out)
    return report(args, run, extra, title, ok)


def _title(args: argparse.Namespace, name: str, duration: float) -> str:
    """Return a run's title line: scenario, sim time, what distributes."""
    by = 'Moore-Penrose pinv(G) (baseline)' if args.baseline else 'the distributor (G_M+)'
    return (f'wrench_distribution demo: scenario {name}, {duration:g} s of sim time, '
            f'distribution by {by}'
            f'{", zero internal load" if args.internal_load == "zero" else ""}')
