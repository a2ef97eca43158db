"""Benchmark: the distributor engine's tick while a foot's weight ramps, friction in auto mode.

A 20 kg trunk on four point feet (mu 0.8, ``friction_mode: auto``, ``hold_object_weight``), the
desired wrench at 500 Hz, ``contact_transition_time`` 0.1 s: one foot's weight ramps 1 to 0 and
back, ten times (50 ticks a ramp), then the same number of ticks with every weight steady. The
figure is the CPU time (``time.process_time``) per :meth:`DistributionEngine.step`, no ROS.

``--before DIR`` runs the same in a subprocess on the package in ``DIR`` (``git archive <commit>
wrench_distribution | tar -x -C DIR``), interleaved round by round with this tree, so the ratio
is measured in one run.

Usage::

    .venv/bin/python benchmarks/bench_ramp_ticks.py [--rounds 7] [--before DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

for _name in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_name, '1')

import numpy as np  # noqa: E402 (after the thread settings)

FEET = ['lf', 'rf', 'lh', 'rh']
POSITIONS = np.array([[0.3, 0.2, -0.4], [0.3, -0.2, -0.4], [-0.3, 0.2, -0.4], [-0.3, -0.2, -0.4]])
PERIOD_NS = 2_000_000
RAMPS = 10


def engine():
    """Return the trunk's engine with its feet in place (the centre of mass shifted off lf)."""
    from wrench_distribution.config import load_distributor_config
    from wrench_distribution.engine.distribution import DistributionEngine
    config = load_distributor_config({
        'effectors': FEET, 'contact_source': 'topic', 'contact_types': ['point'] * 4,
        'object_com': [0.0, 0.0, 0.0], 'command_frame': 'object', 'friction_mode': 'auto',
        'friction_coefficients': [0.8] * 4, 'contact_normals': [0.0, 0.0, 1.0] * 4,
        'hold_object_weight': True, 'object_mass': 20.0, 'gravity': [0.0, 0.0, -9.81],
        'force_limits': [1e4], 'torque_limits': [1e3], 'desired_force_limit': 1e3,
        'desired_torque_limit': 1e3, 'internal_load_limit': 1e3, 'contact_transition_time': 0.1})
    shifted = POSITIONS.copy()
    shifted[:, :2] += 0.2 * POSITIONS[0, :2]
    result = DistributionEngine(config)
    update = result.offer_contacts(shifted, np.tile([0.0, 0.0, 0.0, 1.0], (4, 1)), 0)
    assert update.refusal is None, update.refusal
    return result


def measure() -> dict:
    """Return the CPU microseconds per tick, ramping and steady, of this process's package."""
    subject = engine()
    stamp, wrench = 10 ** 18, np.zeros(6)
    for _ in range(50):  # warm: the solver, the friction program and the lazy imports
        stamp += PERIOD_NS
        subject.step(stamp, wrench, 0, 0)
    ramp_s, ramp_ticks = 0.0, 0
    for k in range(RAMPS):
        subject.offer_weights(['lf'], [0.0 if k % 2 == 0 else 1.0])
        while True:
            stamp += PERIOD_NS
            start = time.process_time()
            outcome = subject.step(stamp, wrench, 0, 0)
            ramp_s += time.process_time() - start
            ramp_ticks += 1
            assert outcome.commands is not None, outcome.message
            if subject.contact_weights[0] in (0.0, 1.0):
                break
    start = time.process_time()
    for _ in range(ramp_ticks):
        stamp += PERIOD_NS
        subject.step(stamp, wrench, 0, 0)
    steady_s = time.process_time() - start
    return {'ramp_us': 1e6 * ramp_s / ramp_ticks, 'steady_us': 1e6 * steady_s / ramp_ticks, 'ticks': ramp_ticks}


def run_tree(tree: str) -> dict:
    """Measure in a subprocess importing the package from ``tree``."""
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, __file__, '--measure'], env=env, check=True,
                         capture_output=True, text=True, cwd=tree).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    """Measure this tree (and ``--before``), interleaved, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--before', help='a directory holding an older wrench_distribution package')
    parser.add_argument('--measure', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure()))
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {'this tree': here} | ({'--before': os.path.abspath(args.before)} if args.before else {})
    runs = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(run_tree(tree))
    print('| tree | ramping tick (CPU us) | steady tick (CPU us) | ticks per round |')
    print('|---|---|---|---|')
    for name, rows in runs.items():
        print(f"| {name} | {statistics.median(r['ramp_us'] for r in rows):.0f} | "
              f"{statistics.median(r['steady_us'] for r in rows):.0f} | {rows[0]['ticks']} |")
    if args.before:
        ratio = (statistics.median(r['ramp_us'] for r in runs['this tree'])
                 / statistics.median(r['ramp_us'] for r in runs['--before']))
        print(f'\nramping tick, this tree / --before: {ratio:.2f}')


if __name__ == '__main__':
    main()
