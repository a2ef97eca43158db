"""The demo's comparisons: several runs of one scenario, each a variant of the options, in one table.

Each comparison is an entry of :data:`COMPARISONS`: the option whose value ``compare`` asks for
it, and the function that makes the runs (through the ``run`` it is given) and reports them.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

from .options import run_dir, variant
from .report import report_comparison
from ..scenarios.sections import scenario_file

#: Runs one variant of the options (a run, or a comparison of its own) and returns its exit code.
Run = Callable[[argparse.Namespace], int]


def _scenario_name(args: argparse.Namespace) -> str:
    return scenario_file(args.scenario).stem.replace('demo_', '')


def compare_tare(args: argparse.Namespace, run: Run) -> int:
    """Run a real cell's procedure four times: tare off/on x internal-load feedback off/on.

    :param args: the options (``--summary-json``: the comparison's JSON; each run has its own
        ``--tare`` and ``--internal-load-feedback`` and no ``--summary-json``).
    :param run: runs one variant.
    :return: 0 when the four runs completed, else the first failing run's code
    """
    from ..reports.real_cell import compare, PHASES
    name = _scenario_name(args)
    runs = {}
    for label, tare, feedback in PHASES:
        one = variant(args, tare=tare, internal_load_feedback=feedback, summary_json=None)
        code = run(one)
        if code != 0:
            return code
        runs[label] = run_dir(one, name)
    text, summary = compare(runs)
    return report_comparison(args, f'{name}_tare_compare', text, summary)


def compare_calibrate(args: argparse.Namespace, run: Run) -> int:
    """Run a user's calibration, then the hold with the identified parameters and with the guesses.

    The guesses are run as typed (no biases known) and tared with the object free (the tare
    takes in the biases and the tools' weight in the pose it was taken in). The three holds
    skip the calibration's motions (``--hold-only``): the same hold, sooner. Every run has
    internal-load feedback on.

    :param args: the options (``--summary-json``: the comparison's JSON; each run has its own
        ``--calibrate``, ``--calibration``, ``--tare``, ``--hold-only`` and no ``--summary-json``).
    :param run: runs one variant.
    :return: 0 when the four runs completed, else the first failing run's code
    """
    from ..reports.real_cell import compare_calibration
    base = variant(args, calibrate='off', calibration=None, tare='off', hold_only=False,
                   internal_load_feedback='on', summary_json=None)
    name = _scenario_name(args)
    calibrating = variant(base, calibrate='on')
    code = run(calibrating)
    calibration_dir = run_dir(calibrating, name)
    if code != 0:
        return code
    file = str(calibration_dir / 'calibration.yaml')
    runs = {}
    for label, changes in (('identified', {'calibration': file}), ('typed guesses', {}),
                           ('typed guesses, tared', {'tare': 'on'})):
        hold = variant(base, hold_only=True, **changes)  # the motions were for the calibration
        code = run(hold)
        if code != 0:
            return code
        runs[label] = run_dir(hold, name)
    record = json.loads((calibration_dir / 'summary.json').read_text())['calibration']
    text, summary = compare_calibration(runs, record['identified'])
    return report_comparison(args, f'{name}_calibrate_compare', text, summary)


def compare_friction(args: argparse.Namespace, run: Run) -> int:
    """Run a scenario twice with a light squeeze: the prescription alone, then friction auto.

    :param args: the options (``--friction-feedback`` applies to the auto run only).
    :param run: runs one variant.
    :return: 0 when both runs completed, else the first failing run's code
    """
    brisk = {'move_duration': 0.6 if args.move_duration is None else args.move_duration,  # the squeeze must follow it
             'squeeze': 0.5 if args.squeeze is None else args.squeeze}  # too light to hold the ball alone
    name = _scenario_name(args)
    runs = []
    for mode in ('check', 'auto'):
        one = variant(args, friction=mode, **brisk,  # the feedback tightens auto mode only
                      friction_feedback=args.friction_feedback if mode == 'auto' else 'off')
        code = run(one)
        if code != 0:
            return code
        runs.append(run_dir(one, name))  # this run's, not a glob
    from ..reports.friction import compare
    text = compare(runs[0], runs[1], Path(args.out) / f'{name}_friction_compare.png')
    print()
    print(text)
    return 0


#: Option -> the comparison its value ``compare`` runs, in the order they are looked for.
COMPARISONS = (('friction', compare_friction), ('tare', compare_tare),
               ('calibrate', compare_calibrate))
