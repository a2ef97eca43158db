#!/usr/bin/env python3
"""Contacts that come and go: a trunk on four feet steps, the closed form beside TSID's way.

Run from the repository root::

    .venv/bin/python benchmarks/bench_transitions.py              # the schedule and the costs
    .venv/bin/python benchmarks/bench_transitions.py --quick      # smoke run (seconds)
    .venv/bin/python benchmarks/bench_transitions.py --before DIR # also the costs with DIR's package

The trunk (20 kg, attitude held) stands on four point feet with friction (mu = 0.6) and steps one
foot at a time, in the order lf, rh, rf, lh. Per foot, at 1 kHz: shift the centre of mass 60 % of
the way to the centroid of the other three feet; unload the foot; swing it 10 cm forward (no
contact); place and reload it; shift back. The feet move in the trunk frame at every tick.

- **ours**: :class:`wrench_distribution.core.transitions.WeightedDistributor` updated at every tick
  to the new poses and weights with ``moved`` (the per-tick path: the same numbers as a fresh
  build; the foot's weight ramps 1 to 0 while unloading, 0 to 1 while reloading; docs/theory.md,
  section 16);
- **TSID's way** (:mod:`wrench_distribution.core.contact_qp`): the contact forces of least norm with
  the wrench as an equality, friction cones and normal-force bounds; ``removeRigidContact``
  ramps the leaving foot's maximum normal force from its normal force down to 0 over the unload,
  then removes the foot; ``addRigidContact`` adds it back at once when it is placed. The ``tsid``
  wheel itself (1.10.0, with ``pin`` 4.1.0) aborts here in ``RobotWrapper`` ("double free or
  corruption"), so its formulation is written out and solved with Clarabel.

Printed: the normal force of every foot through the first foot's unload and reload, both ways; per
transition, the largest change of a foot's force in one tick, the largest resultant error, the
released foot's force, the largest friction utilisation; the time per tick (median and 99th
percentile, ``time.perf_counter``), and the per-tick cost of a new geometry and weights at n = 4 and
8 (``moved``, and a fresh ``WeightedDistributor``) against the cached solve, the uncached rebuild
and (in a subprocess, when given) the same ways with ``--before``'s package. The per-tick costs
are the process's CPU time (``time.process_time``) per tick: on a shared machine the wall time
also counts the time spent waiting for a core, which the other processes' load decides.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Tuple

for _variable in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_variable, '1')

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wrench_distribution.core import Contact, DistributionOptions, LoadDistributor, ObjectModel  # noqa: E402
from wrench_distribution.core.contact_qp import least_norm_contact_forces  # noqa: E402
from wrench_distribution.core.contacts import ContactLayout  # noqa: E402
from wrench_distribution.core.transitions import WeightedDistributor  # noqa: E402

NAMES = ('lf', 'rf', 'lh', 'rh')
FEET = np.array([[0.3, 0.2, 0.0], [0.3, -0.2, 0.0], [-0.3, 0.2, 0.0], [-0.3, -0.2, 0.0]])
ORDER = ('lf', 'rh', 'rf', 'lh')
MASS, HEIGHT, MU, GRAVITY = 20.0, 0.4, 0.6, 9.81
PHASES = ('shift', 'unload', 'swing', 'reload', 'back')


def schedule(ticks: int) -> List[dict]:
    """Every tick of the stepping: feet (world), centre of mass (world), weights, phase and foot.

    :param ticks: ticks per phase.
    :return: one dict per tick.
    """
    feet, centre, out = FEET.copy(), np.array([0.0, 0.0, HEIGHT]), []
    for foot in ORDER:
        i = NAMES.index(foot)
        others = [k for k in range(4) if k != i]
        start = centre.copy()
        target = start + 0.6 * (np.r_[feet[others, :2].mean(axis=0), HEIGHT] - start)
        lift = feet[i].copy()
        for phase in PHASES:
            for t in range(1, ticks + 1):
                x = t / ticks
                weights = np.ones(4)
                if phase == 'shift':
                    centre = start + x * (target - start)
                elif phase == 'unload':
                    weights[i] = 1.0 - x
                elif phase == 'swing':
                    weights[i] = 0.0
                    feet[i] = lift + np.array([0.1 * x, 0.0, 0.05 * np.sin(np.pi * x)])
                elif phase == 'reload':
                    weights[i] = x
                else:
                    centre = target + x * (np.r_[feet[:, :2].mean(axis=0), HEIGHT] - target)
                out.append({'feet': feet.copy(), 'com': centre.copy(), 'weights': weights, 'phase': phase,
                            'foot': i, 'tick': t})
    return out


def desired_wrench(tick: int) -> np.ndarray:
    """Return the trunk's weight carried, and small attitude torques (N*m), about its centre of mass."""
    return np.array([0.0, 0.0, MASS * GRAVITY, 0.4 * np.sin(tick / 97.0), 0.3 * np.cos(tick / 61.0), 0.1])


def run_ours(steps: List[dict]) -> Tuple[np.ndarray, np.ndarray]:
    """Run the closed form, updated at every tick: forces (ticks, 4, 3) and seconds per tick."""
    contacts = [Contact(name, 'point', tuple(p), friction=MU) for name, p in zip(NAMES, FEET)]
    layout, options, model = ContactLayout(contacts), DistributionOptions(), ObjectModel()
    quaternions = np.tile([0.0, 0.0, 0.0, 1.0], (4, 1))
    forces, seconds = np.zeros((len(steps), 4, 3)), np.zeros(len(steps))
    distribution = WeightedDistributor(layout.arrays(steps[0]['feet'] - steps[0]['com'], quaternions), model,
                                       options, steps[0]['weights'])
    for k, step in enumerate(steps):
        start = time.perf_counter()
        distribution = distribution.moved(layout.arrays(step['feet'] - step['com'], quaternions), step['weights'])
        commands = distribution.wrench_commands(desired_wrench(k), object_frame=True)
        seconds[k] = time.perf_counter() - start
        forces[k] = commands[:, :3]
    return forces, seconds


def run_tsid(steps: List[dict]) -> Tuple[np.ndarray, np.ndarray]:
    """Run TSID's formulation on the same schedule: forces and seconds per tick."""
    normals, forces, seconds = np.tile([0.0, 0.0, 1.0], (4, 1)), np.zeros((len(steps), 4, 3)), np.zeros(len(steps))
    ramp_start = 0.0
    for k, step in enumerate(steps):
        start = time.perf_counter()
        i, phase = step['foot'], step['phase']
        present = np.ones(4, bool)
        limits = np.full(4, np.inf)
        if phase == 'unload':
            if step['tick'] == 1:
                ramp_start = float(forces[k - 1, i, 2]) if k else MASS * GRAVITY / 4
            limits[i] = ramp_start * step['weights'][i]       # f_max from the foot's force down to 0
        elif phase == 'swing':
            present[i] = False
        solution = least_norm_contact_forces(step['feet'][present] - step['com'], normals[present],
                                             np.full(int(present.sum()), MU), desired_wrench(k), limits[present])
        seconds[k] = time.perf_counter() - start
        forces[k, present] = solution.forces
    return forces, seconds


def resultant_error(steps: List[dict], forces: np.ndarray, ticks: List[int]) -> float:
    """Largest error of the resultant over some ticks, forces and torques over the feet's spread (N)."""
    largest, scale = 0.0, np.r_[np.ones(3), np.full(3, 1 / 0.36)]
    for k in ticks:
        r = steps[k]['feet'] - steps[k]['com']
        total = np.r_[forces[k].sum(axis=0), np.cross(r, forces[k]).sum(axis=0)]
        largest = max(largest, float(np.abs((total - desired_wrench(k)) * scale).max()))
    return largest


def utilisation(forces: np.ndarray) -> np.ndarray:
    """Friction utilisation ``|f_t| / (mu f_n)`` per tick and foot (0 where unloaded)."""
    normal = forces[..., 2]
    tangential = np.hypot(forces[..., 0], forces[..., 1])
    ratio = tangential / (MU * np.maximum(normal, 1e-9))
    return np.where(normal > 1e-9, ratio, np.where(tangential > 1e-9, np.inf, 0.0))


def transitions(steps: List[dict], results: Dict[str, Tuple[np.ndarray, np.ndarray]]) -> None:
    """Print per foot and transition: the largest step of a force in a tick, errors, utilisation."""
    print('| foot | transition | method | largest force step in a tick (N) | largest resultant error (N) '
          '| released foot force, largest (N) | largest utilisation | smallest normal force of the others (N) |')
    print('|' + '---|' * 8)
    for foot in ORDER:
        i = NAMES.index(foot)
        for phase in ('unload', 'reload'):
            ticks = [k for k, s in enumerate(steps) if s['foot'] == i and s['phase'] == phase]
            window = [ticks[0] - 1] + ticks + [ticks[-1] + 1]
            swing = [k for k, s in enumerate(steps) if s['foot'] == i and s['phase'] == 'swing']
            for method, (forces, _) in results.items():
                jumps = np.linalg.norm(np.diff(forces[window], axis=0), axis=2).max()
                error = resultant_error(steps, forces, window)
                released = np.abs(forces[swing, i]).max()
                others = np.delete(forces[window], i, axis=1)[..., 2].min()
                print(f'| {foot} | {phase} | {method} | {jumps:.3g} | {error:.2g} | {released:.2g} | '
                      f'{utilisation(forces[window]).max():.3f} | {others:.2f} |')


def trace(steps: List[dict], results: Dict[str, Tuple[np.ndarray, np.ndarray]], every: int) -> None:
    """Print the normal force of every foot through the first foot's unload and reload."""
    first = NAMES.index(ORDER[0])
    ticks = [k for k, s in enumerate(steps) if s['foot'] == first and s['phase'] in ('unload', 'swing', 'reload')]
    print('| tick | phase | weight of ' + ORDER[0] + ' | ' + ' | '.join(
        f'{m} f_n {n} (N)' for m in results for n in NAMES) + ' |')
    print('|' + '---|' * (3 + 4 * len(results)))
    for k in ticks[::every] + [ticks[-1]]:
        row = ' | '.join(f'{results[m][0][k, j, 2]:.2f}' for m in results for j in range(4))
        print(f'| {k} | {steps[k]["phase"]} | {steps[k]["weights"][first]:.2f} | {row} |')


def tick_costs(sizes: List[int], ticks: int, rounds: int, before: str) -> None:
    """Per-tick cost of a new geometry and weights, against the cached solve and the rebuilds."""
    print('CPU time per tick (time.process_time), us:\n')
    print('| n | new poses and weights per tick, moved (us) | new poses, weights 1, moved (us) '
          '| new weights, same poses, moved (us) | new poses and weights, fresh WeightedDistributor (us) '
          '| uncached rebuild, weights 1 (us) | cached solve (us) | moved / cached | moved / uncached |')
    print('|' + '---|' * 9)
    modes = ('moved', 'poses', 'weights', 'fresh', 'uncached', 'cached')
    compared = ('moved', 'poses', 'weights', 'uncached')
    earlier: Dict[int, Dict[str, float]] = {}
    for n in sizes:
        figures: Dict[str, List[float]] = {mode: [] for mode in modes}
        figures.update({'before ' + mode: [] for mode in compared})
        for _ in range(rounds):
            for mode in modes:
                figures[mode].append(_measure(n, ticks, mode))
            for mode in compared if before else ():
                figures['before ' + mode].append(_measure_before(before, n, ticks, mode))
        median = {mode: statistics.median(values) for mode, values in figures.items() if values}
        earlier[n] = median
        print(f"| {n} | {median['moved']:.0f} | {median['poses']:.0f} | {median['weights']:.0f} | "
              f"{median['fresh']:.0f} | {median['uncached']:.0f} | "
              f"{median['cached']:.2f} | {median['moved'] / median['cached']:.0f} | "
              f"{median['moved'] / median['uncached']:.2f} |", flush=True)
    if before:
        print(f'\nThe same ways with the package of --before ({before}), measured in the same rounds (us), '
              'and --before / ours:\n')
        print('| n | ' + ' | '.join(f'{mode} (us) | {mode}, --before / ours' for mode in compared) + ' |')
        print('|' + '---|' * (1 + 2 * len(compared)))
        for n, median in earlier.items():
            cells = [f"{median['before ' + mode]:.0f} | {median['before ' + mode] / median[mode]:.2f}"
                     for mode in compared]
            print(f'| {n} | ' + ' | '.join(cells) + ' |')


def _grasp(n: int) -> np.ndarray:
    """Deterministic, well spread contacts (the ones of bench_core.py: a Fibonacci sphere)."""
    k = np.arange(n) + 0.5
    z = 1.0 - 2.0 * k / n
    phi = np.pi * (1.0 + 5.0 ** 0.5) * k
    return 0.3 * np.stack([np.sqrt(1 - z * z) * np.cos(phi), np.sqrt(1 - z * z) * np.sin(phi), z], axis=1)


def _measure(n: int, ticks: int, mode: str) -> float:
    """Return the CPU microseconds per tick of one way to the commands.

    :param mode: ``moved`` (new poses and a weight ramp each tick, the per-tick update), ``poses``
        (new poses, weights 1), ``weights`` (the weight ramp at fixed poses), ``fresh``
        (the same inputs, a new :class:`WeightedDistributor` each tick), ``uncached`` (a new
        :class:`LoadDistributor` of fixed contacts each tick) or ``cached`` (its commands only).
    """
    positions = _grasp(n)
    contacts = [Contact(f'c{i}', 'point', tuple(p)) for i, p in enumerate(positions)]
    model, options = ObjectModel(com=(0.01, -0.02, 0.015)), DistributionOptions()
    wrench = np.array([1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
    layout, rng = ContactLayout(contacts), np.random.default_rng(1)
    poses = positions + 1e-3 * rng.normal(size=(ticks, n, 3))
    quaternions = np.tile([0.0, 0.0, 0.0, 1.0], (ticks, n, 1)) + 1e-3 * rng.normal(size=(ticks, n, 4))
    weights = np.ones((ticks, n))
    weights[:, 0] = np.linspace(1.0, 0.01, ticks)
    distribution = WeightedDistributor(layout.arrays(poses[0], quaternions[0]), model, options, weights[0])
    fixed, ones = LoadDistributor(contacts, model, options), np.ones(n)
    start = time.process_time()
    for k in range(ticks):
        if mode == 'moved':
            distribution = distribution.moved(layout.arrays(poses[k], quaternions[k]), weights[k])
            distribution.wrench_commands(wrench)
        elif mode == 'poses':
            distribution = distribution.moved(layout.arrays(poses[k], quaternions[k]), ones)
            distribution.wrench_commands(wrench)
        elif mode == 'weights':
            distribution = distribution.moved(None, weights[k])
            distribution.wrench_commands(wrench)
        elif mode == 'fresh':
            WeightedDistributor(layout.arrays(poses[k], quaternions[k]), model, options,
                                weights[k]).wrench_commands(wrench)
        elif mode == 'uncached':
            LoadDistributor(contacts, model, options).wrench_commands(wrench)
        else:
            fixed.wrench_commands(wrench)
    return (time.process_time() - start) / ticks * 1e6


def _measure_before(tree: str, n: int, ticks: int, mode: str) -> float:
    """Time one way of :func:`_measure` with the package in ``tree`` (an older checkout), in a subprocess.

    The package of ``tree`` is imported first, so this file's functions run on it.
    """
    code = (f'import sys; sys.path.insert(0, {tree!r})\n'
            'import wrench_distribution.core.transitions, wrench_distribution.core.contact_qp\n'
            f'sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n'
            'import bench_transitions as bench\n'
            f'bench._measure({n}, 20, {mode!r})\n'
            f'print(bench._measure({n}, {ticks}, {mode!r}))\n')
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=tree, check=True)
    return float(done.stdout.strip())


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='short phases, few rounds (smoke run)')
    parser.add_argument('--before', default='', help='a directory holding an older wrench_distribution package')
    args = parser.parse_args(argv)
    ticks, rounds, every = (20, 2, 5) if args.quick else (300, 7, 50)
    print('# bench_transitions: ' + ' '.join([Path(sys.executable).name, *sys.argv]))
    print(f'# load average at start: {os.getloadavg()[0]:.2f}; phases of {ticks} ticks (1 kHz)\n')
    steps = schedule(ticks)
    results = {'ours': run_ours(steps), 'tsid': run_tsid(steps)}
    trace(steps, results, every)
    print()
    transitions(steps, results)
    print()
    print('| method | time per tick, median (us) | 99th percentile (us) |')
    print('|---|---|---|')
    for method, (_, seconds) in results.items():
        print(f'| {method} | {np.median(seconds) * 1e6:.0f} | {np.percentile(seconds, 99) * 1e6:.0f} |')
    ratio = np.median(results['tsid'][1]) / np.median(results['ours'][1])
    print(f"\nTSID's way / ours, time per tick: {ratio:.1f}x\n")
    tick_costs([4, 8], 100 if args.quick else 1000, rounds, args.before)
    print(f'\n# load average at end: {os.getloadavg()[0]:.2f}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
