"""Consistency of a set of F/T sensors: parity equations, fault map, single-fault hypotheses.

The corrected readings give the contact wrenches ``h_i`` (contact frames); where the
object's wrench ``h_o`` is known, ``r = sum_i G_i R_i h_i - h_o`` (object frame, about the
centre of mass) is zero up to noise and model error, and so is the contact torque of a point
contact read by a six-axis sensor. A sensor fault ``phi_i`` (sensor frame) moves ``r`` by
``F_i phi_i`` with ``F_i = G_i R_i A_i`` (``A_i``: the sensor's reading-to-contact map). What
that can and cannot single out is derived in docs/theory.md, section 15.4. No ROS, no state.
"""
from dataclasses import dataclass
from functools import lru_cache
from typing import List, Optional, Sequence

import numpy as np
from scipy.spatial.transform import Rotation
from scipy.stats import chi2

from .spatial import skew

#: residual groups and the tolerance each one uses: 0 force (N), 1 torque (N m)
FORCE, TORQUE = 0, 1


@dataclass(frozen=True)
class ParityModel:
    """The residual rows of one contact configuration.

    :param contact_map: (d, n, 6) residual rows per contact wrench (contact frame).
    :param fault_map: (d, n, 6) residual rows per sensor reading error (sensor frame).
    :param groups: ``(start, stop, kind)`` per group of three rows; kind :data:`FORCE` or
        :data:`TORQUE`.
    :param rank: dimension of the residual space the sensors' faults reach.
    :param sensor_ranks: (n,) dimension each sensor's faults reach.
    """

    contact_map: np.ndarray
    fault_map: np.ndarray
    groups: tuple
    rank: int
    sensor_ranks: np.ndarray

    @property
    def rows(self) -> int:
        """Return the number of residual components ``d``."""
        return self.contact_map.shape[0]


def parity_model(positions: np.ndarray, quaternions: np.ndarray, com: Sequence[float],
                 rigid: Sequence[bool], gains: np.ndarray, resultant: bool = True,
                 point_torques: bool = False) -> ParityModel:
    """Build the parity equations of a contact configuration.

    :param positions: (n, 3) contact positions in the object frame.
    :param quaternions: (n, 4) contact orientations in the object frame.
    :param com: centre of mass in the object frame.
    :param rigid: (n,) False for point contacts (no torque reaches the object).
    :param gains: (n, 6, 6) ``A_i``: signed reading (sensor frame) to contact wrench.
    :param resultant: include the six rows of the resultant (the object's wrench is known).
    :param point_torques: include the contact torque of each point contact (six-axis sensors
        on point contacts: that torque is zero).
    :return: the model.
    """
    positions = np.asarray(positions, float)
    n = len(positions)
    rotations = Rotation.from_quat(np.asarray(quaternions, float)).as_matrix().reshape(n, 3, 3)
    rigid = np.asarray(rigid, bool)
    blocks, groups = [], []
    if resultant:
        block = np.zeros((6, n, 6))
        for i in range(n):
            block[:3, i, :3] = rotations[i]
            block[3:, i, :3] = skew(positions[i] - np.asarray(com, float)) @ rotations[i]
            block[3:, i, 3:] = rotations[i] if rigid[i] else 0.0
        blocks.append(block)
        groups += [(0, 3, FORCE), (3, 6, TORQUE)]
    for i in np.flatnonzero(~rigid) if point_torques else ():
        block = np.zeros((3, n, 6))
        block[:, i, 3:] = np.eye(3)
        start = sum(len(b) for b in blocks)
        blocks.append(block)
        groups.append((start, start + 3, TORQUE))
    contact_map = np.concatenate(blocks) if blocks else np.zeros((0, n, 6))
    fault_map = np.einsum('dnj,njk->dnk', contact_map, np.asarray(gains, float))
    return ParityModel(contact_map, fault_map, tuple(groups), _rank(fault_map.reshape(len(fault_map), -1)),
                       np.array([_rank(fault_map[:, i]) for i in range(n)], int))


def _rank(matrix: np.ndarray) -> int:
    """Numerical rank (relative tolerance 1e-9) of a fault map's columns."""
    if not matrix.size:
        return 0
    s = np.linalg.svd(matrix, compute_uv=False)
    return int(np.count_nonzero(s > 1e-9 * max(s[0], 1e-300)))


def residuals(model: ParityModel, contact: np.ndarray, expected: Optional[np.ndarray]) -> np.ndarray:
    """Return the parity residual of each samples contact wrenches, (k, d).

    :param model: the parity equations.
    :param contact: (k, n, 6) contact wrenches, contact frames.
    :param expected: (k, 6) or (6,) the object's wrench (about the centre of mass, object
        frame, applied by the effectors), or None: not subtracted (the residual's own
        baseline is the reference).
    :return: the residuals.
    """
    out = np.einsum('dnj,knj->kd', model.contact_map, contact)
    if expected is not None and model.groups and model.groups[0][0] == 0 and model.rows >= 6:
        out[:, :6] -= expected
    return out


def residual_covariance(model: ParityModel, noise: np.ndarray) -> np.ndarray:
    """Covariance (d, d) of one sample's residual from each sensor's white noise.

    :param model: the parity equations.
    :param noise: (n, 6) noise standard deviation per sensor axis (sensor frame).
    :return: ``sum_i F_i diag(sigma_i^2) F_i^T``.
    """
    weighted = model.fault_map * np.asarray(noise, float)[None]
    flat = weighted.reshape(model.rows, -1)
    return flat @ flat.T


def group_spreads(covariance: np.ndarray, groups: Sequence[tuple]) -> np.ndarray:
    """Largest standard deviation of each group of a residual, ``sqrt(lambda_max(S_gg))``.

    :param covariance: (d, d) the residual's noise covariance.
    :param groups: ``(start, stop, kind)`` per group.
    :return: (groups,) the spreads.
    """
    return np.array([np.sqrt(max(np.linalg.eigvalsh(covariance[a:b, a:b])[-1], 0.0))
                     for a, b, _ in groups])


def group_excess(values: np.ndarray, spreads: np.ndarray, groups: Sequence[tuple],
                 tolerance: Sequence[float], z: float) -> np.ndarray:
    """How far each group of a residual lies beyond its tolerance and noise allowance.

    ``|r_g| - tol_g - z sqrt(lambda_max(S_gg))``: positive means inconsistent (the model error
    allowed, ``tol``, and the noise, ``S``, do not explain it).

    :param values: (m, d) or (d,) residuals.
    :param spreads: (groups,) :func:`group_spreads` of their noise covariance.
    :param groups: ``(start, stop, kind)`` per group.
    :param tolerance: ``(force, torque)`` model tolerance (N, N m).
    :param z: the noise allowance (:func:`~.health.block_threshold`).
    :return: (m, groups) or (groups,) the excess (N or N m).
    """
    values = np.asarray(values, float)
    out = np.empty(values.shape[:-1] + (len(groups),))
    for g, (start, stop, kind) in enumerate(groups):
        out[..., g] = (np.linalg.norm(values[..., start:stop], axis=-1) - tolerance[kind]
                       - z * spreads[g])
    return out


def tolerance_rows(model: ParityModel, tolerance: Sequence[float]) -> np.ndarray:
    """Tolerance of each residual row (d,), from its group's kind."""
    rows = np.zeros(model.rows)
    for start, stop, kind in model.groups:
        rows[start:stop] = tolerance[kind]
    return rows


@dataclass(frozen=True)
class Hypothesis:
    """One single-sensor fault hypothesis that explains a residual.

    :param sensor: the sensor's index.
    :param axes: the sensor axes of the fault (0-5: fx..tz); all six for a whole-sensor fault.
    :param informative: False when the hypothesis reaches every residual direction the
        sensors' faults reach (any residual fits: the fit names nothing).
    :param fault: (6,) the fitted fault, sensor frame (N, N m).
    """

    sensor: int
    axes: tuple
    informative: bool
    fault: np.ndarray


@lru_cache(maxsize=64)
def chi2_limit(probability: float, free: int) -> float:
    """``chi2(1 - probability, free)``, the bound of a whitened squared remainder (cached)."""
    return float(chi2.isf(probability, free))


def explain(model: ParityModel, residual: np.ndarray, metric: np.ndarray,
            probability: float) -> List[Hypothesis]:
    """Every single-sensor hypothesis (one axis, or the whole sensor) that explains a residual.

    Each is fitted by least squares in ``metric`` (the inverse of the residual's noise
    covariance: unit-consistent) and explains the residual when what it leaves is noise:
    ``q = e^T M e <= chi2(1 - probability, d - rank)``, ``d - rank`` the directions the
    hypothesis cannot reach (none for a rigid sensor's whole fault: it explains anything).
    A single axis has the closed form ``q = |v|^2 - (w . v)^2 / |w|^2`` (whitened ``v``, ``w``).

    :param model: the parity equations.
    :param residual: (d,) the residual's departure from what the model explains.
    :param metric: (d, d) positive definite ``M``.
    :param probability: chance of refusing the true hypothesis.
    :return: the hypotheses that fit, per sensor: its single axes, then the whole sensor.
    """
    root = np.linalg.cholesky(metric)
    value = root.T @ residual
    columns = np.einsum('dk,dnj->knj', root, model.fault_map)  # whitened, (d, n, 6)
    power = np.einsum('knj,knj->nj', columns, columns)
    dot = np.einsum('knj,k->nj', columns, value)
    seen = power > 0
    share = np.where(seen, dot / np.where(seen, power, 1.0), 0.0)
    left = float(value @ value) - share * dot
    single = seen & (left <= chi2_limit(probability, model.rows - 1) if model.rows > 1 else seen)
    out = []
    for i in range(model.fault_map.shape[1]):
        for axis in np.flatnonzero(single[i]):
            fault = np.zeros(6)
            fault[axis] = share[i, axis]
            out.append(Hypothesis(i, (int(axis),), model.rank > 1, fault))
        free = model.rows - int(model.sensor_ranks[i])
        if not model.sensor_ranks[i]:
            continue
        coefficients = np.linalg.lstsq(columns[:, i], value, rcond=None)[0]
        remainder = value - columns[:, i] @ coefficients
        if free == 0 or float(remainder @ remainder) <= chi2_limit(probability, free):
            out.append(Hypothesis(i, tuple(range(6)), bool(model.sensor_ranks[i] < model.rank),
                                  coefficients))
    return out
