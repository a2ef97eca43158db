#!/usr/bin/env python3
"""Per-sample cost of the friction-aware internal load (auto mode) against a general solver.

Run from the repository root::

    .venv/bin/python benchmarks/bench_friction.py            # full run (about a minute)
    .venv/bin/python benchmarks/bench_friction.py --quick    # smoke run

For n = 2, 3, 4 point contacts (random grasps on a 5 cm sphere, random friction 0.3-1.2,
margin 0.1) and n = 2 rigid contacts with friction, along a slowly varying desired wrench
(a random walk, as in a control loop), it measures per sample:

(a) ``FrictionModel.apply``: commands, added load and check (the node's path);
(b) ``FrictionModel.required_load``: the cone program alone, its clarabel solver built once
    per geometry and only the right-hand side updated per sample;
(c) clarabel built from scratch per sample (the same program, no reuse);
(d) the independent reference (Kelley cutting planes on HiGHS, ``core/friction_reference.py``).

It prints medians (microseconds) and the largest relative gap between (b)'s objective and (d)'s
lower bound over the feasible samples, and how many samples each found infeasible. The
machine is shared: compare ratios measured in one run.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
import statistics
import sys
import time

for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from wrench_distribution.core import LoadDistributor  # noqa: E402
from wrench_distribution.core.friction import (  # noqa: E402
    ConeProgram, FrictionInfeasibleError, FrictionModel, FrictionOptions,
)
from wrench_distribution.core.friction_reference import random_grasp, reference_solve  # noqa: E402


def _walk(rng, distributor, samples: int) -> np.ndarray:
    """Realisable wrenches along a random walk (G times a walking contact-wrench stack)."""
    steps = rng.normal(size=(samples, 6 * distributor.n)) * 0.05
    steps[0] = rng.normal(size=6 * distributor.n)
    stacks = np.cumsum(steps, axis=0)
    stacks[:, 2::6] += 3.0
    return stacks @ distributor.grasp_matrix.T


def _time(function, items) -> list:
    out = []
    for item in items:
        start = time.perf_counter()
        function(item)
        out.append(time.perf_counter() - start)
    return out


def bench_case(rng, n: int, kind: str, samples: int, reference_samples: int) -> dict:
    """Figures for one (n, kind) over a few random grasps."""
    times = {'apply': [], 'warm': [], 'cold': [], 'reference': []}
    gap, infeasible, feasible = 0.0, 0, 0
    for _ in range(3):
        distributor = LoadDistributor(random_grasp(rng, n, kind))
        model = FrictionModel(distributor, FrictionOptions('auto', 0.1))
        wrenches = _walk(rng, distributor, samples)
        commands = [distributor.wrench_commands(w) for w in wrenches]

        def safe(function):
            def run(item):
                try:
                    return function(item)
                except FrictionInfeasibleError:
                    return None
            return run
        times['apply'] += _time(safe(model.apply), wrenches)
        times['warm'] += _time(safe(model.required_load), commands)
        times['cold'] += _time(lambda c: ConeProgram(model).solve_scaled(
            model.program.cone_data(c[:, :3]) / max(np.abs(c).max(), 1e-12)), commands)
        for c in commands[:reference_samples]:
            start = time.perf_counter()
            ref = reference_solve(c[:, :3], model.basis_contact[:, :3, :], model.normals, model.mu,
                                  model.unilateral, 0.1, tolerance=1e-9)
            times['reference'].append(time.perf_counter() - start)
            try:
                added = model.required_load(c)
            except FrictionInfeasibleError:
                infeasible += 1
                continue
            feasible += 1
            objective = model.program.objective(c[:, :3], added)
            if ref.feasible:
                gap = max(gap, (objective - ref.objective) / max(abs(objective), 1e-12))
    return {k: 1e6 * statistics.median(v) for k, v in times.items()} | {
        'gap': gap, 'feasible': feasible, 'infeasible': infeasible}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true')
    parser.add_argument('--seed', type=int, default=7)
    args = parser.parse_args(argv)
    samples, reference_samples = (50, 5) if args.quick else (1000, 40)
    rng = np.random.default_rng(args.seed)
    print(f'friction auto mode, per sample (median of {3 * samples} samples over 3 random grasps '
          f'per case; reference on {3 * reference_samples}); microseconds')
    header = f'{"case":<10}{"apply":>9}{"solve":>9}{"clarabel":>10}{"reference":>11}' \
             f'{"cold/warm":>11}{"max gap":>10}{"feas/infeas":>13}'
    print(header)
    for n, kind in ((2, 'point'), (3, 'point'), (4, 'point'), (2, 'rigid')):
        r = bench_case(rng, n, kind, samples, reference_samples)
        print(f'{f"{n} {kind}":<10}{r["apply"]:>9.1f}{r["warm"]:>9.1f}{r["cold"]:>10.1f}'
              f'{r["reference"]:>11.0f}{r["cold"] / r["warm"]:>11.2f}{r["gap"]:>10.1e}'
              f'{r["feasible"]:>7}/{r["infeasible"]:<5}')
    print('apply: FrictionModel.apply (commands + cone program + check); solve: the cone '
          'program, clarabel built once per geometry, right-hand side updated; clarabel: the '
          'same program built per sample; reference: Kelley cutting planes on HiGHS; max gap: '
          'largest (objective - reference lower bound) / objective.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
