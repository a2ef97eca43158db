"""Figures for docs/theory.md, section 11: unit invariance per regime, continuity on the sphere.

    .venv/bin/python benchmarks/units_continuity.py --trials 20

Part 1 describes random grasps of each regime with lengths multiplied by a scale factor, in a
rotated frame with another origin, and prints the largest relative difference (unit-consistent:
torques over the reference length) of the commands with an internal load, the basis elements,
the virtual masses and the analysed internal load, with the count of grasps whose named basis
or regime differ. Part 2 moves one of twelve rigid contacts on a ball (thin-shell inertia, mass
and inertia given) off the sphere and prints the change of the commands for a 49 N load and of
the virtual masses against the step.
"""
import argparse
import os
from typing import Dict, Tuple

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

import numpy as np  # noqa: E402

from wrench_distribution.core import (  # noqa: E402
    Contact, DistributionOptions, LoadDistributor, matrix_to_quaternion, ObjectModel, quaternion_to_matrix,
    skew, UnrealisableWrenchError,
)

SCALES = (1e-6, 1e-3, 1e3, 1e6)
REGIMES = ('rigid', 'point', 'mixed', 'two', 'collinear', 'coplanar_point', 'coplanar_mixed',
           'outside_hull', 'eq59_full', 'eq59_blend', 'sphere_auto')


def sphere(n: int, radius: float) -> np.ndarray:
    """Return ``n`` points spread on a sphere of ``radius`` about the origin."""
    k = np.arange(n) + 0.5
    z = 1 - 2 * k / n
    rho = np.sqrt(1 - z * z)
    angle = np.pi * (3 - np.sqrt(5)) * k
    return radius * np.c_[rho * np.cos(angle), rho * np.sin(angle), z]


def problem(regime: str, rng: np.random.Generator) -> Tuple[list, ObjectModel, DistributionOptions]:
    """Return a random grasp of one regime (contacts, object, options) in base units."""
    n = {'two': 2, 'eq59_full': 12, 'eq59_blend': 12, 'sphere_auto': 12}.get(regime, int(rng.integers(4, 7)))
    positions = rng.normal(size=(n, 3))
    com = positions.mean(axis=0) + 0.2 * rng.normal(size=3)
    types = ['rigid'] * n
    if regime in ('point', 'coplanar_point'):
        types = ['point'] * n
    elif regime in ('mixed', 'coplanar_mixed', 'collinear'):
        types = ['rigid' if k % 2 == 0 else 'point' for k in range(n)]
    if regime == 'collinear':
        positions = np.outer(rng.normal(size=n), rng.normal(size=3)) + rng.normal(size=3)
    if regime.startswith('coplanar'):
        positions[:, 2] = 0.0
        com = np.r_[positions[:, :2].mean(axis=0), 0.6]
    if regime == 'outside_hull':
        com = positions.mean(axis=0) + 3.0 * rng.normal(size=3)
    model, masses = ObjectModel(com=com), 'reduced' if regime != 'rigid' else 'auto'
    if regime.startswith('eq59') or regime == 'sphere_auto':
        if regime == 'sphere_auto':
            positions, com, weights = sphere(n, 0.7), np.zeros(3), np.ones(n)
        else:
            weights = rng.uniform(0.5, 1.5, n)
            com = weights @ positions / weights.sum()
        inertia = sum(w * skew(p - com) @ skew(p - com).T for w, p in zip(weights, positions)) / weights.sum()
        if regime == 'eq59_blend':
            inertia = inertia + 0.05 * np.diag(rng.uniform(0.5, 1.5, 3))
        model = ObjectModel(com=com, mass=2.0, inertia=2.0 * inertia)
        masses = 'full' if regime == 'eq59_full' else 'auto'
    contacts = [Contact(f'c{k}', t, p, q) for k, (t, p, q) in enumerate(zip(types, positions, rng.normal(size=(n, 4))))]
    return contacts, model, DistributionOptions(virtual_masses=masses)


def moved(contacts, model, options, rotation, origin, scale):
    """Return the same grasp in a turned, shifted frame with lengths multiplied by ``scale``."""
    out = [Contact(c.name, c.type, scale * rotation @ np.array(c.position) + origin,
                   matrix_to_quaternion(rotation @ c.rotation)) for c in contacts]
    inertia = None if model.inertia is None else scale ** 2 * rotation @ model.inertia_matrix @ rotation.T
    return out, ObjectModel(com=scale * rotation @ np.array(model.com) + origin, mass=model.mass, inertia=inertia), \
        DistributionOptions(virtual_masses=options.virtual_masses,
                            basis_reference_axis=rotation @ np.array(options.basis_reference_axis))


def difference(base: LoadDistributor, other: LoadDistributor, rotation, scale, rng) -> float:
    """Largest relative difference of the outputs of two descriptions (unit-consistent)."""
    length = base.reference_length
    consistent = np.r_[np.ones(3), np.full(3, 1.0 / length)]
    lam_unit = np.array([scale if u == 'N*m' else 1.0 for u in base.basis_units])
    newtons = np.where(lam_unit == 1.0, 1.0, 1.0 / length)
    columns = base.basis_matrix.T.reshape(-1, base.n, 6)
    turned = other.basis_matrix.T.reshape(-1, base.n, 6)
    back = np.concatenate([turned[..., :3] @ rotation, turned[..., 3:] @ rotation / scale], axis=-1)
    back = back * lam_unit[:, None, None]
    errors = [np.abs(other.virtual_masses - base.virtual_masses).max() / np.abs(base.virtual_masses).max()]
    if columns.size:
        reference = columns * consistent * newtons[:, None, None]
        errors.append(np.abs(back * consistent * newtons[:, None, None] - reference).max() / np.abs(reference).max())
    wrench = rng.normal(size=6) * np.r_[np.ones(3), np.full(3, length)] * 10.0
    lam = 5.0 * rng.normal(size=base.internal_dimension) / newtons
    unit = np.r_[np.ones(3), np.full(3, scale)]
    try:
        first = base.synthesize(wrench, lam).wrench_contact
    except UnrealisableWrenchError:
        return max(errors)
    second = other.synthesize(np.r_[rotation @ wrench[:3], scale * rotation @ wrench[3:]], lam * lam_unit)
    second = second.wrench_contact / unit
    errors.append(np.abs((second - first) * consistent).max() / np.abs(first * consistent).max())
    measured = first + rng.normal(size=first.shape) * np.r_[np.ones(3), np.full(3, length)]
    read, read_other = base.analyze(measured).internal_load, other.analyze(measured * unit).internal_load
    if read.size:
        errors.append(np.abs((read_other / lam_unit - read) * newtons).max() / np.abs(read * newtons).max())
    return float(max(errors))


def units_table(trials: int) -> Dict[Tuple[str, float], Tuple[float, int]]:
    """Return the largest relative difference and the count of renamed grasps per (regime, scale)."""
    table = {}
    for regime in REGIMES:
        for scale in SCALES:
            rng = np.random.default_rng(22)
            worst, renamed = 0.0, 0
            for _ in range(trials):
                contacts, model, options = problem(regime, rng)
                rotation, origin = quaternion_to_matrix(rng.normal(size=4)), scale * rng.normal(size=3)
                base = LoadDistributor(contacts, model, options)
                other = LoadDistributor(*moved(contacts, model, options, rotation, origin, scale))
                if other.basis_names != base.basis_names or other.regime.reasons != base.regime.reasons:
                    renamed += 1
                    continue
                worst = max(worst, difference(base, other, rotation, scale, rng))
            table[regime, scale] = (worst, renamed)
    return table


def sphere_jumps():
    """Return (step, command change, mass change) moving one of twelve contacts off a ball."""
    positions, mass = sphere(12, 0.05), 5.0
    inertia = np.eye(3) * 2.0 / 3.0 * mass * 0.05 ** 2  # a thin shell: eq. 59 is consistent on the sphere
    wrench = np.array([0.0, 0.0, 49.0, 0.3, -0.2, 0.1])

    def build(points):
        d = LoadDistributor([Contact(f'c{k}', 'rigid', p) for k, p in enumerate(points)],
                            ObjectModel(com=(0, 0, 0), mass=mass, inertia=inertia))
        return d.wrench_commands(wrench, object_frame=True), d.virtual_masses, d.regime.message

    commands, masses, message = build(positions)
    rows = []
    direction = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    for step in 10.0 ** -np.arange(3.0, 15.0):
        points = positions.copy()
        points[0] += step * direction
        moved_commands, moved_masses, _ = build(points)
        rows.append((step, float(np.abs(moved_commands - commands).max()),
                     float(np.abs(moved_masses - masses).max())))
    return message, rows


def main() -> None:
    """Print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trials', type=int, default=20, help='grasps per regime and scale')
    trials = parser.parse_args().trials
    table = units_table(trials)
    print(f'# units: largest relative difference over {trials} grasps per cell (renamed grasps in brackets)')
    print('| regime | ' + ' | '.join(f'x {s:g}' for s in SCALES) + ' |')
    print('|---|' + '---|' * len(SCALES))
    for regime in REGIMES:
        cells = (f'{table[regime, s][0]:.1e} [{table[regime, s][1]}]' for s in SCALES)
        print(f'| {regime} | ' + ' | '.join(cells) + ' |')
    message, rows = sphere_jumps()
    print(f'\n# sphere: 12 rigid contacts on a 5 cm ball, thin-shell inertia ({message})')
    print('| step (m) | command change (N, 49 N load) | virtual-mass change (mean 1) |')
    print('|---|---|---|')
    for step, change, mass_change in rows:
        print(f'| {step:.0e} | {change:.2e} | {mass_change:.2e} |')


if __name__ == '__main__':
    main()
