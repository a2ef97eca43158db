"""Virtual masses of the lumped elements (paper section VI-D, eqs. 59 and 64).

Masses are returned normalised to mean 1 (``sum m_i = n``); the paper's scale
invariance (section V-B) makes the choice of ``m_o*`` immaterial, and with ``n = 4`` this
is the paper's ``m_o* = 4`` of example IX-C.
"""
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .options import HULL_REGULARISATION, HULL_TOLERANCE, MASS_FLOOR


@dataclass(frozen=True)
class VirtualMasses:
    """Virtual masses and how they were obtained.

    :param masses: the masses used, mean 1, all positive.
    :param method: ``'eq64'``, ``'eq59'`` or ``'explicit'``.
    :param reasons: regime reasons (empty when the paper's conditions hold).
    """

    masses: np.ndarray
    method: str
    reasons: Tuple[str, ...]


def smooth_floor(values: np.ndarray, floor: float = MASS_FLOOR) -> np.ndarray:
    """Identity above ``floor``; below it ``floor * exp((x - floor) / floor)``.

    Continuous with a continuous derivative, always positive: a virtual mass that
    would be negative (centre of mass outside the contacts' convex hull) becomes a
    small positive weight instead of an indefinite metric.

    :param values: raw masses.
    :param floor: threshold.
    :return: floored masses.
    """
    values = np.asarray(values, dtype=float)
    low = values < floor
    out = values.copy()
    out[low] = floor * np.exp(np.maximum((values[low] - floor) / floor, -700.0))
    return out


def reduced_masses(positions: np.ndarray, com: np.ndarray) -> Tuple[np.ndarray, float]:
    """Minimum-norm solution of eq. 64 (``sum m_i = n``, ``sum m_i r_i = n c``).

    Written about the contacts' centroid ``r_bar`` with ``P = [r_i - r_bar]``:
    ``m = 1 + n P^+ (c - r_bar)``, since ``P 1 = 0`` puts ``P^+`` in the complement of
    ``1``. When eq. 64 has no solution (the centre of mass is off the contacts' affine
    hull: two contacts, three contacts, feet on a plane) this is the solution for the
    centre of mass projected on that hull. ``P^+`` is Tikhonov-regularised at a length
    ``HULL_REGULARISATION`` times the contacts' spread so that it stays continuous when
    the rank of ``P`` changes (points becoming collinear or coplanar).

    :param positions: contact positions (n, 3).
    :param com: centre of mass (3,).
    :return: raw masses (n,) (may be negative) and the projected centre's distance from
        the centre of mass relative to the spread.
    """
    n = positions.shape[0]
    centroid = positions.mean(axis=0)
    spread = positions - centroid
    scale2 = float(np.sum(spread * spread)) / n
    offset = com - centroid
    if scale2 <= 0.0:
        distance = float(np.linalg.norm(offset))
        return np.ones(n), (0.0 if distance == 0.0 else np.inf)
    p = spread.T
    gram = p @ p.T + (HULL_REGULARISATION ** 2) * scale2 * np.eye(3)
    coefficients = np.linalg.solve(gram, offset)
    masses = 1.0 + n * (spread @ coefficients)
    projected = p @ (spread @ coefficients)
    return masses, float(np.linalg.norm(projected - offset) / np.sqrt(scale2))


def full_masses(
    positions: np.ndarray, com: np.ndarray, mass: float, inertia: np.ndarray, torque_share: float
) -> Optional[np.ndarray]:
    """Minimum-norm solution of eq. 59 when it exists, else None.

    Matches mass, centre of mass and the share ``1 - torque_share`` of the inertia that
    the forces must carry (``J_f = (1 - s) J_o``), so that ``M_o*`` is proportional to the
    physical ``M_o``.

    :param positions: contact positions (n, 3).
    :param com: centre of mass (3,).
    :param mass: object mass.
    :param inertia: inertia about the centre of mass (3, 3).
    :param torque_share: the torque share ``s`` in [0, 1).
    :return: positive masses (n,) normalised to mean 1, or None.
    """
    n = positions.shape[0]
    if n < 10 or torque_share >= 1.0:
        return None
    x, y, z = (positions - com).T
    rows = np.vstack([
        np.ones(n),
        y * y + z * z, x * x + z * z, x * x + y * y, -x * y, -x * z, -y * z,  # eq. 63
        x, y, z,
    ])
    j = inertia * (1.0 - torque_share)
    target = np.array([mass, j[0, 0], j[1, 1], j[2, 2], j[0, 1], j[0, 2], j[1, 2], 0.0, 0.0, 0.0])
    solution, *_ = np.linalg.lstsq(rows, target, rcond=None)
    scale = np.abs(target).max()
    if np.abs(rows @ solution - target).max() > HULL_TOLERANCE * scale:
        return None
    solution = solution * n / solution.sum()
    return solution if np.all(solution >= MASS_FLOOR) else None
