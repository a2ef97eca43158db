"""The demo's command line: its options, and the name and directory of a run made with them."""
from __future__ import annotations

import argparse
from pathlib import Path
import shutil

from ..scenarios.sections import SCENARIOS

#: How the demo is run.
PROG = 'python -m wrench_distribution.sim.demo'


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options.

    :param argv: arguments (None: ``sys.argv[1:]``).
    :return: the options
    """
    p = argparse.ArgumentParser(
        prog=PROG,
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
    _control_arguments(p)
    _calibration_arguments(p)
    p.add_argument('--summary-json', default=None, metavar='PATH',
                   help='also write the per-element summary (commanded, true and estimated '
                        'means, true error RMS, gap, within_tolerance judged on the truth, limit '
                        'violations, over the steady window) to PATH')
    p.add_argument('--no-plot', action='store_true', help='skip the PNG')
    p.add_argument('--timeout', type=float, default=None,
                   help='wall-clock limit in seconds (default 60 + 4 x duration)')
    return p.parse_args(argv)


def _control_arguments(p: argparse.ArgumentParser) -> None:
    """Declare what the run changes in the scenario's control: friction, squeeze, move, feedback."""
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


def variant(args: argparse.Namespace, **changes) -> argparse.Namespace:
    """Return a copy of the options with some changed (one run of a comparison).

    :param args: the parsed options.
    :param changes: option name (as in the namespace) -> value.
    :return: the new options.
    """
    unknown = set(changes) - set(vars(args))
    if unknown:
        raise ValueError(f'no such option: {", ".join(sorted(unknown))}')
    return argparse.Namespace(**dict(vars(args), **changes))


def run_tag(args, name: str) -> str:
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


def run_dir(args, name: str) -> Path:
    """Return a run's output directory (``--out`` / :func:`run_tag`)."""
    return Path(args.out) / run_tag(args, name)


def fresh_output_dir(args, name: str) -> Path:
    """Create a fresh output directory (with ``logs/``) named after the run's options."""
    out = run_dir(args, name)
    if out.exists():
        shutil.rmtree(out)
    (out / 'logs').mkdir(parents=True)
    return out
