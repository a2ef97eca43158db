"""The relay benchmark's command line: orchestrate the runs and print the figures, or run one role."""
import argparse
import json
import os

from .fanout import DEFAULT_EFFECTORS
from .roles import ROLES, run_role
from .rule import choose
from .runs import latency_rows
from .startup import startup_figures
from .tables import print_tables

DESCRIPTION = 'Distributor node vs a bare rclpy relay, side by side, over real DDS.'


def _loop_arguments(ap: argparse.ArgumentParser) -> None:
    """Add the options of the whole loop: fan-out and the analyzer's F/T rate."""
    ap.add_argument('--effectors', type=int, default=DEFAULT_EFFECTORS, choices=[2, 3, 4],
                    help='fan-out of the relay and contacts of the distributor (first corners '
                         'of the rectangle)')
    ap.add_argument('--analyzer-rate', type=float, default=0.0,
                    help='with --feedback: the measurement comes from the analyzer on two F/T '
                         'streams at this rate (needs --effectors 2: the analyzer and the '
                         'distributor must name the same basis)')
    ap.add_argument('--layouts', nargs='+', default=['processes'],
                    choices=['processes', 'one-process'],
                    help='with --analyzer-rate: the distributor and the analyzer each in its '
                         "own process (the launch files' default), or both in one process (the "
                         'cell executable)')
    ap.add_argument('--ft-sweeps', type=float, default=2.0,
                    help='with --analyzer-rate: F/T periods by which the F/T phase against the '
                         'desired wrench drifts over one window, as a sensor on its own clock '
                         '(the F/T rate is raised by FT_SWEEPS / duration Hz); 0: the phase '
                         'stays where the processes happened to start')


def _repeat_arguments(ap: argparse.ArgumentParser) -> None:
    """Add the options that repeat the latency runs: rounds, and windows within a round."""
    ap.add_argument('--rounds', type=int, default=1,
                    help='rounds of the latency runs; with more than one, medians over rounds')
    ap.add_argument('--windows', type=int, default=1,
                    help='windows per run and round, each --duration / WINDOWS seconds, the '
                         'runs alternating window by window; their cycles pooled into one row')


def main(argv=None) -> int:
    """Command line: orchestrate (default) or run one role.

    :param argv: arguments.
    :return: exit code.
    """
    ap = argparse.ArgumentParser(prog='bench_relay.py', description=DESCRIPTION)
    ap.add_argument('--role', choices=list(ROLES))
    ap.add_argument('--out')
    ap.add_argument('--ready', help=argparse.SUPPRESS)
    ap.add_argument('--closed-loop', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--rate', type=float, default=500.0)
    ap.add_argument('--rates', type=float, nargs='*', default=[500.0, 1000.0],
                    help='input rates (Hz) of the latency runs (none: start-up trials only)')
    ap.add_argument('--duration', type=float, default=10.0)
    ap.add_argument('--settle', type=float, default=3.0,
                    help='seconds of unmeasured warm-up publishing')
    ap.add_argument('--executors', nargs='+', default=['single', 'multi', 'events'],
                    help='executor kinds to compare (wrench_distribution.ros.runner.EXECUTOR_KINDS)')
    ap.add_argument('--reference', default='single',
                    help='executor kind of the reference bare relay (the ratio columns)')
    ap.add_argument('--relay-executor', default='single', help=argparse.SUPPRESS)
    ap.add_argument('--sink-executor', default='events',
                    help='executor kind of the sink (the same for every run)')
    ap.add_argument('--startup-trials', type=int, default=9,
                    help='start-up trials per executor kind (0: none)')
    ap.add_argument('--probe-delay', type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument('--durability', nargs='+', default=['transient_local', 'volatile'],
                    help='QoS durability of the start-up trials; transient_local isolates the '
                         'executor, volatile adds the DDS discovery race')
    ap.add_argument('--feedback', action='store_true',
                    help='also run the distributor with internal_load_feedback on')
    ap.add_argument('--moving-contacts', action='store_true',
                    help='also run the distributor with its contacts from the topic: new poses '
                         'every tick (each contact moved by up to 1 mm and 0.1 deg) and the first '
                         "contact's weight ramping between 1 and 0.3 all along (a walking trunk)")
    _loop_arguments(ap)
    _repeat_arguments(ap)
    ap.add_argument('--markdown', action='store_true')
    args = ap.parse_args(argv)
    if args.role:
        return run_role(args)
    if args.analyzer_rate > 0 and (args.effectors != 2 or not args.feedback):
        ap.error('--analyzer-rate needs --feedback and --effectors 2 (the analyzer sees two '
                 "contacts; its measured internal load must be in the distributor's basis)")
    domain = int(os.environ.get('ROS_DOMAIN_ID', '77'))
    startup = []
    for kind in args.executors if args.startup_trials > 0 else []:
        for durability in args.durability:
            startup.append(startup_figures(kind, args.startup_trials, domain, durability))
            print(json.dumps(startup[-1]), flush=True)
    rows = latency_rows(args, domain)
    if args.markdown:
        print_tables(rows, startup, args.reference)
    print(f'\nrule: the whole loop (else the distributor) loses no more than the relay '
          f'({args.reference}), p50 and p99 <= 1.2x its, at every rate, no start-up miss; '
          f'kinds meeting it: {choose(rows, startup, args.reference) or "none"}')
    return 0
