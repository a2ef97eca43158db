#!/usr/bin/env python3
"""Per-call cost of the rotation helpers in the simulator's 1 kHz loop: numpy formulas vs scipy.

Run from the repository root::

    .venv/bin/python benchmarks/bench_geometry.py

For 1 and 4 rotations (the simulator handles one object and a few effectors per step) it
prints the best-of-5 mean per call (microseconds) of the exponential map (rotation vector to
matrix), the logarithm map (matrix to rotation vector) and the cross product, each as the
formula in ``core.spatial`` and as the scipy / numpy call it could be replaced by. The machine
is shared: compare the ratios within one run.
"""
from __future__ import annotations

from pathlib import Path
import sys
import timeit

import numpy as np
from scipy.spatial.transform import Rotation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from wrench_distribution.core import spatial  # noqa: E402

CALLS = 2000


def per_call_us(fn) -> float:
    """Best-of-5 mean time of one call, microseconds.

    :param fn: the call.
    :return: microseconds.
    """
    return min(timeit.repeat(fn, number=CALLS, repeat=5)) / CALLS * 1e6


def main() -> int:
    """Print the table.

    :return: exit code.
    """
    rng = np.random.default_rng(0)
    print(f'{"n":>2} {"operation":<10} {"core.spatial":>13} {"alternative":>12}  alternative')
    for n in (1, 4):
        phi = rng.normal(size=(n, 3)) * 0.01
        rot = spatial.exp_so3(phi)
        a, b = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
        rows = [
            ('exp_so3', lambda: spatial.exp_so3(phi), lambda: rodrigues(phi), 'numpy Rodrigues'),
            ('log_so3', lambda: spatial.log_so3(rot),
             lambda: Rotation.from_matrix(rot).as_rotvec(), 'scipy from_matrix().as_rotvec()'),
            ('cross', lambda: spatial.cross(a, b), lambda: np.cross(a, b), 'numpy.cross'),
        ]
        for name, ours, other, label in rows:
            print(f'{n:>2} {name:<10} {per_call_us(ours):>10.1f} us {per_call_us(other):>9.1f} us  {label}')
    return 0


def rodrigues(phi: np.ndarray) -> np.ndarray:
    """Rotation matrices of rotation vectors by Rodrigues' formula in numpy (the former helper).

    :param phi: rotation vectors (n, 3).
    :return: matrices (n, 3, 3).
    """
    theta2 = (phi * phi).sum(axis=-1)[..., None, None]
    theta = np.sqrt(theta2)
    k = spatial.skew(phi)
    safe = np.maximum(theta, 1e-4)
    a = np.where(theta < 1e-4, 1.0 - theta2 / 6.0, np.sin(safe) / safe)
    b = np.where(theta < 1e-4, 0.5 - theta2 / 24.0, (1.0 - np.cos(safe)) / (safe * safe))
    return np.eye(3) + a * k + b * (k @ k)


if __name__ == '__main__':
    sys.exit(main())
