"""Grasp identification: where the contacts really are relative to each other, from held rests.

At a rest ``k`` the contact wrenches, each from its sensor's model (:mod:`.sensor_model`), hold
the object up (docs/theory.md, section 14; docs/calibration.md):

    ``sum_i X(p_i + dp_i, exp(phi_i) R_i) h_i(k) + w(M, M c, g_k) + c0 = 0``

with ``X(p, R)`` the wrench transport of a contact pose (``f' = R f``,
``t' = R t + p x (R f)``), ``h_i(k)`` the wrench in contact ``i``'s frame, ``w`` the object's
weight (:func:`~.sensor_model.weight_wrench`), ``c0`` an optional constant offset (it takes in
the uncalibrated biases and tool errors at one orientation of gravity) and
``d_i = (dp_i, phi_i)`` the correction of the configured pose ``(p_i, R_i)`` (object frame).
Internal loads do not enter the sum on the TRUE geometry, but they do on a wrong one: rests
at different internal loads tell the contacts' relative poses.

The fit works on the rests' mean readings (the model is linear in them). The corrections are
scaled unit-free, ``dp / L`` (``L`` the contacts' RMS distance from their centroid ``o``) and
``phi``, the rows as forces ``[f, (t - o x f) / L]`` (the resultant about the centroid: neither
the unit nor the object frame's origin weighs in); the directions the rests excite are the right singular
vectors of the linearised model (``c0``'s mean removed when it is fitted) whose 1-sigma from
the rests' noise is at most :data:`MAX_GRASP_SIGMA`. At the configured poses a direction must
also reach :data:`MIN_EXCITATION` of the most excited one: there the belief's own errors make
the rests excite every direction a little (2 degrees of a 25 N squeeze put 0.9 N across the
line, and so seem to tell where along the line a contact is). Only the excited directions are
fitted (robustly, :func:`.calibration.robust_fit`, a bumped rest dropped); the others stay at the
configured value (minimum norm) and are reported. The strongly excited directions are first
moved by :data:`GAUSS_NEWTON_STEPS` Gauss-Newton steps; there the spurious excitation is gone:
the subspace is decided once more on the noise alone and fitted robustly; last, the directions
whose own 1-sigma in that fit (its misfit included) exceeds the bound are dropped and the rest
refitted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from . import spatial as Q
from .calibration import CalibrationRefused, contact_wrenches_object, Fit, OUTLIER_SIGMAS, robust_fit
from .sensor_model import SensorModel, weight_wrench

#: At the configured poses, a direction excited by less than this fraction of the most excited one
#: is not fitted: the believed geometry's own errors (a few degrees) excite every direction by a
#: few per cent.
MIN_EXCITATION = 0.1
#: At a solution, directions excited a thousand times less than the most excited one are not fitted
#: (whatever the noise: they would only slow the fit down and come out at its rounding).
SOLUTION_EXCITATION = 1e-3
#: Nor one whose 1-sigma exceeds this (rad, or a fraction of ``L``): 0.6 degree, 2 mm at
#: ``L`` = 0.2 m, about what a grasp placed by hand is known to; a less precise correction is not
#: applied. Decided on the rests' noise over the excitation, then on the fit's own covariance
#: (its misfit included: a rest not quite still, a compliant pad).
MAX_GRASP_SIGMA = 0.01
#: What a user does to excite the grasps.
ADVICE = 'step the squeeze by 10 N or more, then bend and shear, holding still at each rest'
#: Finite-difference step of the linearisation (scaled units).
STEP = 1e-6
#: Gauss-Newton steps on the directions excited at the configured poses.
GAUSS_NEWTON_STEPS = 3


@dataclass(frozen=True)
class GraspEstimate:
    """The contacts' identified poses and what the rests said of them.

    :param positions: (n, 3) contact positions, object frame.
    :param quaternions: (n, 4) contact orientations ``[qx, qy, qz, qw]``, object frame.
    :param correction: (n, 6) ``[dp, phi]`` from the configured poses (object frame, m and rad).
    :param sigma: (n, 6) one standard deviation of ``correction`` (zero along what is undetermined).
    :param covariance: (6 n, 6 n) covariance of ``correction`` (row-major per contact).
    :param offset: (6,) the resultant offset ``c0`` (zeros when not fitted).
    :param rank: directions determined, of ``6 n``.
    :param condition: ratio of the largest to the smallest determined singular value.
    :param undetermined: the directions held at the configured value, in words.
    :param rests: rests used; ``outliers``: rests dropped as outliers.
    :param length: the contacts' scale ``L`` (m).
    :param fit: the robust fit (reduced parameters, then ``c0``).
    """

    positions: np.ndarray
    quaternions: np.ndarray
    correction: np.ndarray
    sigma: np.ndarray
    covariance: np.ndarray
    offset: np.ndarray
    rank: int
    condition: float
    undetermined: list
    rests: int
    outliers: int
    length: float
    fit: Fit


@dataclass(frozen=True)
class _Rests:
    """Mean readings (p, n, 6) and gravity (p, 3) of each rest, and its sample count (p,)."""

    readings: np.ndarray
    gravity: np.ndarray
    counts: np.ndarray


def _rests(readings, gravity, segments, n: int, who: str) -> _Rests:
    readings, gravity, segments = np.asarray(readings, float), np.asarray(gravity, float), np.asarray(segments)
    k = len(readings)
    if readings.shape != (k, n, 6) or gravity.shape != (k, 3) or segments.shape != (k,):
        raise CalibrationRefused(f'{who}: expected readings (k, {n}, 6), gravity (k, 3) and rest labels (k,), '
                                 f'got {readings.shape}, {gravity.shape}, {segments.shape}')
    if not (np.isfinite(readings).all() and np.isfinite(gravity).all()):
        raise CalibrationRefused(f'{who}: the samples hold NaN or Inf')
    labels, counts = np.unique(segments, return_counts=True)
    if len(labels) < 2:
        raise CalibrationRefused(f'{who}: {len(labels)} rest captured; the grasps show only between rests at '
                                 f'different internal loads: {ADVICE}')
    return _Rests(np.stack([readings[segments == label].mean(axis=0) for label in labels]),
                  np.stack([gravity[segments == label].mean(axis=0) for label in labels]), counts)


def corrected_poses(poses: np.ndarray, correction: np.ndarray) -> np.ndarray:
    """Return contact poses moved by corrections ``[dp, phi]``: ``p + dp``, ``exp(phi) R``.

    :param poses: (n, 7) ``[x, y, z, qx, qy, qz, qw]``, object frame.
    :param correction: (n, 6).
    :return: (n, 7).
    """
    poses, correction = np.asarray(poses, float), np.asarray(correction, float).reshape(-1, 6)
    turned = np.einsum('nij,njk->nik', Q.exp_so3(correction[:, 3:]), Q.quaternion_to_matrix(poses[:, 3:]))
    return np.concatenate([poses[:, :3] + correction[:, :3], Q.matrix_to_quaternion(turned)], axis=1)


class _Model:
    """The rests' resultant as a function of the scaled corrections (``c0`` apart).

    Each contact wrench is affine in the reading and in gravity in its frame,
    ``h_i = A_i (r_i - b_i) + B_i R_i^T g`` (:meth:`.SensorModel.affine`): the reading's part is
    computed once, the tool's weight follows the corrected orientation.
    """

    def __init__(self, rests: _Rests, poses, sensors, biases, rigid, weight: np.ndarray) -> None:
        self.rests, self.poses, self.sensors, self.biases, self.rigid = rests, poses, sensors, biases, rigid
        self.weight = weight
        spread = poses[:, :3] - poses[:, :3].mean(axis=0)
        self.length = float(np.sqrt(np.mean(np.sum(spread ** 2, axis=1))))
        self.centroid = poses[:, :3].mean(axis=0)
        self.scale = np.tile([self.length] * 3 + [1.0] * 3, len(poses))
        n = len(poses)
        biases = np.zeros((n, 6)) if biases is None else np.asarray(biases, float)
        keep = np.ones((n, 6)) if rigid is None else np.array([[1.0] * 3 + [1.0 if r else 0.0] * 3 for r in rigid])
        gains = np.stack([s.affine(np.zeros(3))[0] for s in sensors])
        self.measured = np.einsum('nij,pnj->pni', gains, rests.readings - biases) * keep
        self.gravity_map = np.stack([np.stack([s.affine(axis)[1] for axis in np.eye(3)], axis=1)
                                     for s in sensors]) * keep[:, :, None]

    def resultant(self, scaled: np.ndarray, index=slice(None)) -> np.ndarray:
        """Sum of the contact wrenches plus the weight, (p, 6), at scaled corrections."""
        correction = (scaled * self.scale).reshape(-1, 6)
        rotations = np.einsum('nij,njk->nik', Q.exp_so3(correction[:, 3:]),
                              Q.quaternion_to_matrix(self.poses[:, 3:]))
        positions = self.poses[:, :3] + correction[:, :3]
        gravity = np.einsum('nji,pj->pni', rotations, self.rests.gravity[index])  # R^T g per contact
        local = self.measured[index] + np.einsum('nij,pnj->pni', self.gravity_map, gravity)
        force = np.einsum('nij,pnj->pni', rotations, local[..., :3])
        torque = np.einsum('nij,pnj->pni', rotations, local[..., 3:]) + Q.cross(positions, force)
        return np.concatenate([force.sum(axis=1), torque.sum(axis=1)], axis=1) + self.weight[index]

    def jacobian(self, scaled: np.ndarray, offset: bool, index=slice(None)) -> np.ndarray:
        """Linearised model in force units (rows ``[f, (t - o x f) / L]`` per rest), (6 p, 6 n).

        :param index: the rests used (a fit's inliers; default all).
        """
        columns = []
        for j in range(len(scaled)):
            step = np.zeros(len(scaled))
            step[j] = STEP
            change = (self.resultant(scaled + step, index) - self.resultant(scaled - step, index)) / (2 * STEP)
            change = np.concatenate([change[:, :3], (change[:, 3:] - Q.cross(self.centroid, change[:, :3]))
                                     / self.length], axis=1)
            columns.append((change - change.mean(axis=0) if offset else change).ravel())
        return np.stack(columns, axis=1)


def identify_grasps(readings: np.ndarray, gravity_object: np.ndarray, segments: np.ndarray,
                    contact_poses: np.ndarray, sensors: Sequence[SensorModel], biases: Optional[np.ndarray],
                    object_mass: float, object_com, rigid: Optional[Sequence[bool]] = None,
                    offset: bool = True, names: Optional[Sequence[str]] = None) -> GraspEstimate:
    """Identify the contacts' poses relative to each other from rests at several internal loads.

    :param readings: (k, n, 6) raw readings at rest, sensor frames.
    :param gravity_object: (k, 3) gravity in the object frame.
    :param segments: (k,) rest label per sample.
    :param contact_poses: (n, 7) configured contact poses, object frame.
    :param sensors: the n sensor models (tools, signs, poses on the contacts).
    :param biases: (n, 6) sensor biases, or None.
    :param object_mass: the object's mass (kg).
    :param object_com: its centre of mass (3,), object frame.
    :param rigid: (n,) False for point contacts (forces only), or None (all rigid).
    :param offset: fit a constant resultant offset ``c0`` (uncalibrated biases and tools).
    :param names: effector names (messages).
    :return: the estimate.
    :raises CalibrationRefused: naming the missing excitation.
    """
    poses = np.asarray(contact_poses, float)
    n = len(poses)
    names = list(names or [f'contact {i}' for i in range(n)])
    who = 'grasps'
    if n < 2 or poses.shape != (n, 7) or len(sensors) != n:
        raise CalibrationRefused(f'{who}: need two contacts or more with one sensor each, got poses '
                                 f'{poses.shape} and {len(sensors)} sensors')
    rests = _rests(readings, gravity_object, segments, n, who)
    poses = np.concatenate([poses[:, :3], Q.normalize(poses[:, 3:])], axis=1)
    mass = float(object_mass)
    weight = weight_wrench(mass, mass * np.asarray(object_com, float), rests.gravity)
    model = _Model(rests, poses, list(sensors), biases, None if rigid is None else list(rigid), weight)
    if not model.length > 0:
        raise CalibrationRefused(f'{who}: the contacts share one position: they have no relative pose')
    noise = _rest_noise(readings, gravity_object, segments, poses, model, rests)
    return _solve(model, rests, noise, offset, names, who)


def _rest_noise(readings, gravity, segments, poses, model: _Model, rests: _Rests) -> np.ndarray:
    """Covariance (6, 6) of a rest's mean resultant: the samples' scatter about their rest's median.

    Full, not per channel: the torque about the origin carries each contact's force noise
    times its lever, so the channels are correlated. Samples beyond :data:`OUTLIER_SIGMAS`
    robust deviations (a knock) are left out; the floor keeps noise-free data invertible.
    """
    per_sample = contact_wrenches_object(np.asarray(readings, float), np.asarray(gravity, float), poses,
                                         model.sensors, model.biases, model.rigid).sum(axis=1)
    segments = np.asarray(segments)
    deviation = np.empty_like(per_sample)
    for label in np.unique(segments):
        mask = segments == label
        deviation[mask] = per_sample[mask] - np.median(per_sample[mask], axis=0)
    floor = 1e-9 * max(1.0, float(np.abs(per_sample).max()))
    scale = np.maximum(1.4826 * np.median(np.abs(deviation), axis=0), floor)
    calm = deviation[(np.abs(deviation) <= OUTLIER_SIGMAS * scale).all(axis=1)]
    covariance = calm.T @ calm / max(len(calm) - len(rests.counts), 1)
    return covariance / float(np.median(rests.counts)) + np.diag((floor * np.ones(6)) ** 2)


def _solve(model: _Model, rests: _Rests, noise: np.ndarray, offset: bool, names: list, who: str) -> GraspEstimate:
    """Decide the excited subspace, fit it, decide again at the solution, prune the imprecise, refit."""
    scaled = np.zeros(6 * len(names))
    chosen, _ = _excited(model, scaled, noise, offset, who, MIN_EXCITATION)
    scaled = _gauss_newton(model, noise, offset, chosen, scaled)
    # at the solution the spurious excitation is gone: every direction above the noise...
    chosen, _ = _excited(model, scaled, noise, offset, who, SOLUTION_EXCITATION)
    chosen, fit, scaled = _refit(model, rests, noise, offset, chosen, scaled, who)
    # ... then none whose own 1-sigma (the fit's covariance: its misfit included) is too large
    variance, turns = np.linalg.eigh(fit.covariance[:chosen.shape[1], :chosen.shape[1]])
    precise = variance <= MAX_GRASP_SIGMA ** 2
    if not precise.all():
        if not precise.any():
            raise CalibrationRefused(f'{who}: the rests scatter beyond their noise (misfit {fit.rms:.3g} times the '
                                     "noise): no direction is determined to 0.6 degree or 1 % of the contacts' "
                                     f'spread; hold each rest still longer, {ADVICE}')
        chosen, fit, scaled = _refit(model, rests, noise, offset, chosen @ turns[:, precise], scaled, who)
    r = chosen.shape[1]
    cov = chosen @ fit.covariance[:r, :r] @ chosen.T * np.outer(model.scale, model.scale)
    correction = (scaled * model.scale).reshape(-1, 6)
    null = np.linalg.svd(np.eye(len(scaled)) - chosen @ chosen.T)[0][:, :len(scaled) - r]
    singular = np.linalg.svd(model.jacobian(scaled, offset, fit.inliers) @ chosen, compute_uv=False)
    return GraspEstimate(
        positions=model.poses[:, :3] + correction[:, :3],
        quaternions=corrected_poses(model.poses, correction)[:, 3:], correction=correction,
        sigma=np.sqrt(np.clip(np.diag(cov), 0.0, None)).reshape(-1, 6), covariance=cov,
        offset=fit.values[r:].copy() if offset else np.zeros(6), rank=r,
        condition=float(singular[0] / singular[-1]),
        undetermined=describe_directions(null, model.poses[:, :3] + correction[:, :3], model.length, names, offset),
        rests=fit.samples, outliers=fit.outliers, length=model.length, fit=fit)


def _gauss_newton(model: _Model, noise: np.ndarray, offset: bool, basis: np.ndarray, scaled: np.ndarray,
                  iterations: int = GAUSS_NEWTON_STEPS) -> np.ndarray:
    """Move the estimate along ``basis`` by plain Gauss-Newton steps (least squares, all rests).

    A start for the robust fit: at the configured poses only the strongly excited directions
    are trusted, and fitting them first removes most of what excited the others spuriously.

    :return: the scaled corrections.
    """
    whiten = np.linalg.inv(np.linalg.cholesky(noise))
    p = len(model.rests.readings)
    offsets = np.tile(whiten, (p, 1)) if offset else np.zeros((6 * p, 0))
    for _ in range(iterations):
        residual = (model.resultant(scaled) @ whiten.T).ravel()
        columns = []
        for direction in basis.T:
            change = model.resultant(scaled + STEP * direction) - model.resultant(scaled - STEP * direction)
            columns.append((change @ whiten.T).ravel() / (2 * STEP))
        jacobian = np.hstack([np.stack(columns, axis=1), offsets])
        step = np.linalg.lstsq(jacobian, -residual, rcond=None)[0]
        scaled = scaled + basis @ step[:basis.shape[1]]
    return scaled


def _refit(model: _Model, rests: _Rests, noise: np.ndarray, offset: bool, basis: np.ndarray,
           scaled: np.ndarray, who: str) -> tuple:
    """Fit the directions of ``basis`` from the current estimate projected on them."""
    fit = _fit(model, rests, noise, offset, basis, basis.T @ scaled, who)
    return basis, fit, basis @ fit.values[:basis.shape[1]]


def _excited(model: _Model, scaled: np.ndarray, noise: np.ndarray, offset: bool, who: str,
             relative: float) -> tuple:
    """Return the excited directions (scaled coordinates, orthonormal columns) and the singular values.

    :param noise: (6, 6) covariance of a rest's mean resultant (times the last fit's misfit squared).
    :param relative: the smallest singular value kept, relative to the largest.
    :raises CalibrationRefused: when the rests excite nothing.
    """
    jacobian = model.jacobian(scaled, offset)
    _, singular, vt = np.linalg.svd(jacobian, full_matrices=False)
    rows = np.eye(6)  # the resultant about the origin to the rows of the Jacobian
    rows[3:, :3] = -Q.skew(model.centroid)
    rows[3:] /= model.length
    level = float(np.sqrt(np.trace(rows @ noise @ rows.T) / 6.0))
    keep = (singular >= relative * singular[0]) & (level <= MAX_GRASP_SIGMA * singular)
    if not keep.any():
        spread = float(np.abs(np.diff(model.rests.readings, axis=0)).max())
        raise CalibrationRefused(f'{who}: the rests share one internal load, or their differences drown in their '
                                 f'scatter ({len(model.rests.readings)} rests, the readings differ by {spread:.3g} '
                                 f'at most, the resultant scatters by {level:.2g} N): {ADVICE}')
    return vt[keep].T, singular


def _fit(model: _Model, rests: _Rests, noise: np.ndarray, offset: bool, basis: np.ndarray,
         start: np.ndarray, who: str) -> Fit:
    """Fit the excited coordinates (and ``c0``) robustly on the rests' means."""
    r, p = basis.shape[1], len(rests.readings)
    if 6 * p <= r + (6 if offset else 0):
        raise CalibrationRefused(f'{who}: {p} rests cannot determine {r} directions'
                                 f'{" and the offset" if offset else ""}: hold more rests ({ADVICE})')

    whiten = np.linalg.inv(np.linalg.cholesky(noise))

    def residual(x, index):
        out = model.resultant(basis @ x[:r], index)
        return (out + x[r:] if offset else out) @ whiten.T

    x0 = np.concatenate([start, -model.resultant(basis @ start).mean(axis=0)]) if offset else start
    return robust_fit(residual, x0, np.arange(p), np.ones(6))


def describe_directions(null: np.ndarray, positions: np.ndarray, length: float, names: Sequence[str],
                        offset: bool) -> list:
    """Say in words which corrections the rests left undetermined.

    A common rigid motion of all contacts is named as such (with ``c0`` fitted and gravity the
    same at every rest, nothing ties the grasps to the object frame); every other direction by
    the contacts' positions and rotations it moves.

    :param null: (6 n, q) orthonormal undetermined directions, scaled coordinates.
    :param positions: (n, 3) contact positions.
    :param length: the scale ``L``.
    :param names: effector names.
    :param offset: whether ``c0`` was fitted (the message says why the common motion is free).
    :return: one sentence per direction group.
    """
    if not null.shape[1]:
        return []
    gauge = np.linalg.qr(_common_motion(positions, length))[0]
    inside = np.linalg.svd(gauge.T @ null, compute_uv=False)
    common = int(np.count_nonzero(inside > 0.9))
    out = []
    if common:
        out.append(f'a common rigid motion of all contacts ({common} of 6 directions; '
                   + ('the resultant offset takes it in: rests at more orientations of gravity tie '
                      'the grasps to the object' if offset else 'it leaves the weight unchanged') + ')')
    rest = null - gauge @ (gauge.T @ null)
    u, s, _ = np.linalg.svd(rest, full_matrices=False)
    for direction in u[:, s > 0.5].T:
        out.append(_direction_words(direction, names))
    return out


def _common_motion(positions: np.ndarray, length: float) -> np.ndarray:
    """Return the six common rigid motions of all contacts (translations, rotations about the origin), scaled."""
    n = len(positions)
    out = np.zeros((6 * n, 6))
    for i, p in enumerate(positions):
        out[6 * i:6 * i + 3, :3] = np.eye(3) / length
        out[6 * i:6 * i + 3, 3:] = -Q.skew(p) / length
        out[6 * i + 3:6 * i + 6, 3:] = np.eye(3)
    return out


def _direction_words(direction: np.ndarray, names: Sequence[str]) -> str:
    parts = []
    for i, name in enumerate(names):
        for offset, what in ((0, 'position along'), (3, 'rotation about')):
            part = direction[6 * i + offset:6 * i + offset + 3]
            size = float(np.linalg.norm(part))
            if size >= 0.2:
                axis = ', '.join(f'{x:.2f}' for x in part / size)
                parts.append(f'{name} {what} [{axis}]')
    return ' with '.join(parts)
