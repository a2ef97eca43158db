"""Identification from samples at rest: tools, sensor biases, mounting rotations, the held object.

The model fitted is the package's sensor model (:mod:`.sensor_model`): a raw reading, in the
sensor frame about its origin, is ``r = s (h moved to the sensor) - s w(m, m c, g_s) + b``
with ``w`` the weight's wrench (:func:`~.sensor_model.weight_wrench`), ``g_s`` gravity in
the sensor frame, ``s`` the sign and ``b`` the bias (docs/calibration.md).

- Tool free (``h = 0``): ``r = b - s w(m, m c, g_s)``, linear in ``(b, m, m c)`` (ft_calib's
  formulation). With a mounting rotation ``R_d`` of the sensor on its flange (the true
  sensor orientation in the contact frame is ``R R_d``), ``g_s = R_d^T R^T g_c``: nonlinear,
  solved by :func:`scipy.optimize.least_squares` from the linear solution.
- Object held at rest: the contact wrenches, each from its sensor's model, sum at the
  object origin to minus the object's weight, ``sum_i X_i h_i = -w(M, M c, g_o)``; internal
  loads do not enter the sum.

Every fit weights each channel by its noise (the scatter of the readings inside each pose),
fits with a robust loss (``soft_l1``), drops the samples beyond :data:`OUTLIER_SIGMAS` of the
robust residual scale (a bump), refits the rest plainly and reports the covariance
``s^2 (J^T J)^-1`` with ``s^2`` from the residuals. What the poses cannot determine is refused
with the motion that is missing (:class:`CalibrationRefused`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
from scipy.optimize import least_squares

from . import spatial as Q
from .errors import WrenchDistributionError
from .sensor_model import SensorModel, weight_wrench

#: gravity directions closer than this (deg) count as one
MIN_TILT_DEG = 3.0
#: the tilt the refusals advise (deg)
ADVICE_DEG = 20
#: a sample whose weighted residual exceeds this many robust scales is an outlier
OUTLIER_SIGMAS = 6.0
#: column-scaled Jacobian condition beyond which the fit is refused
MAX_CONDITION = 1e8
#: A sensor mounted by hand sits within a few degrees of its drawing: a larger mounting rotation
#: means the configured orientation is wrong (deg), which is fixed in the configuration, not here.
MAX_MOUNTING_DEG = 10.0


class CalibrationRefused(WrenchDistributionError):
    """The samples do not determine what was asked; the message names the missing motion."""


@dataclass(frozen=True)
class Fit:
    """A least-squares fit and what the data say of it.

    :param values: the parameters.
    :param covariance: their covariance ``s^2 (J^T J)^-1``.
    :param rank: numerical rank of the (column-scaled) Jacobian.
    :param condition: its condition number.
    :param samples: samples used (outliers excluded).
    :param outliers: samples dropped as outliers.
    :param rms: ``s``, the residuals' scale in units of the noise (about 1 when the model fits).
    :param inliers: indices of the samples used.
    :param noise: (c,) channel noise the residuals were divided by.
    """

    values: np.ndarray
    covariance: np.ndarray
    rank: int
    condition: float
    samples: int
    outliers: int
    rms: float
    inliers: np.ndarray
    noise: np.ndarray

    @property
    def sigma(self) -> np.ndarray:
        """One standard deviation of each parameter."""
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))


@dataclass(frozen=True)
class ToolEstimate:
    """A sensor's bias, its tool and (optionally) its mounting rotation, with 1-sigma.

    :param rotation: mounting rotation (rotation vector, rad, sensor frame): the true sensor
        orientation is the configured one times ``exp(rotation)``; zero when not estimated.
    :param orientation: the sensor orientation in the contact frame with it ``[qx, qy, qz, qw]``.
    :param com_determined: False when the mass is too small to place its centre of mass.
    :param directions: unit gravity direction of each pose, configured sensor frame.
    """

    bias: np.ndarray
    bias_sigma: np.ndarray
    mass: float
    mass_sigma: float
    com: np.ndarray
    com_sigma: np.ndarray
    rotation: np.ndarray
    rotation_sigma: np.ndarray
    orientation: np.ndarray
    com_determined: bool
    directions: np.ndarray
    fit: Fit


@dataclass(frozen=True)
class ObjectEstimate:
    """The held object's mass and centre of mass (object frame), with 1-sigma.

    :param covariance: (4, 4) covariance of ``(M, M c)``: the fit's own and, when the tools were
        identified, what their uncertainty carries into it (:func:`with_tool_covariance`).
    """

    mass: float
    mass_sigma: float
    com: np.ndarray
    com_sigma: np.ndarray
    directions: np.ndarray
    fit: Fit
    covariance: Optional[np.ndarray] = None


def _fmt(vector) -> str:
    return '[' + ', '.join(f'{x:.2f}' for x in np.asarray(vector, float)) + ']'


def pose_directions(gravity: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """Return the unit gravity direction of each pose (the normalised mean over its samples).

    :param gravity: (k, 3) gravity per sample.
    :param segments: (k,) pose label per sample.
    :return: (p, 3), one row per distinct label in sorted order.
    """
    means = np.stack([gravity[segments == label].mean(axis=0) for label in np.unique(segments)])
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    if not np.all(norms > 0):
        raise CalibrationRefused('gravity is zero in a pose: set the gravity parameter')
    return means / norms


def _spread_deg(directions: np.ndarray) -> float:
    cosines = np.clip(directions @ directions.T, -1.0, 1.0)
    return float(np.degrees(np.arccos(cosines.min())))


def _off_line(directions: np.ndarray) -> tuple:
    """Largest distance of the directions from their principal line, and that line."""
    centred = directions - directions.mean(axis=0)
    _, _, vt = np.linalg.svd(centred)
    line = vt[0]
    off = centred - np.outer(centred @ line, line)
    return float(np.linalg.norm(off, axis=1).max()), line


def check_tool_motion(directions: np.ndarray, who: str, mounting: bool) -> None:
    """Refuse poses that cannot separate a tool's weight from the bias.

    One gravity direction: the mass is the force bias' twin. Two: the centre of mass along
    their difference acts as a torque bias (and the mounting rotation about it is unseen).
    Three distinct directions determine everything (docs/calibration.md).

    :param directions: (p, 3) unit gravity directions, sensor frame.
    :param who: what is calibrated (for the message).
    :param mounting: whether the mounting rotation is estimated.
    :raises CalibrationRefused: naming the missing motion.
    """
    spread = _spread_deg(directions)
    if spread < MIN_TILT_DEG:
        raise CalibrationRefused(
            f'{who}: all samples share one gravity direction in the sensor frame '
            f'({_fmt(directions.mean(axis=0))}, spread {spread:.1f} deg): the tool mass cannot be '
            f'told from the force bias nor its centre of mass from the torque bias: tilt the tool '
            f'by {ADVICE_DEG} deg or more about two axes (three poses or more)')
    off, line = _off_line(directions)
    if off < np.radians(MIN_TILT_DEG) / 2:
        extra = f', nor the mounting rotation about {_fmt(line)}' if mounting else ''
        raise CalibrationRefused(
            f'{who}: gravity took only two directions in the sensor frame ({spread:.1f} deg '
            f'apart): the tool centre of mass along {_fmt(line)} cannot be told from the torque '
            f'bias{extra}: add a third pose, tilted {ADVICE_DEG} deg or more from both')


def check_object_motion(directions: np.ndarray) -> None:
    """Refuse object poses that share one gravity direction (the CoM along it is unseen).

    :param directions: (p, 3) unit gravity directions, object frame.
    :raises CalibrationRefused: naming the missing motion.
    """
    spread = _spread_deg(directions)
    if spread < MIN_TILT_DEG:
        raise CalibrationRefused(
            f'held object: all samples share one gravity direction in the object frame '
            f'({_fmt(directions.mean(axis=0))}, spread {spread:.1f} deg): its centre of mass along '
            f'gravity is undetermined: tilt the object by {ADVICE_DEG} deg or more about a '
            f'horizontal axis (two poses or more, better three about two axes)')


def channel_noise(rows: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """Noise of each channel: the robust scatter of the rows about their pose's median.

    :param rows: (k, c) readings.
    :param segments: (k,) pose labels.
    :return: (c,) one standard deviation per channel (floored above zero).
    """
    deviation = np.empty_like(rows)
    for label in np.unique(segments):
        mask = segments == label
        deviation[mask] = rows[mask] - np.median(rows[mask], axis=0)
    noise = 1.4826 * np.median(np.abs(deviation), axis=0)
    floor = 1e-9 * max(1.0, float(np.abs(rows).max()))
    return np.maximum(noise, floor)


def robust_fit(residual: Callable, x0: np.ndarray, segments: np.ndarray, noise: np.ndarray) -> Fit:
    """Robust fit, outliers dropped, plain refit, covariance from the residuals.

    ``s^2`` is the larger of the samples' residual variance and that of the poses' mean
    residuals (times the samples per pose): an error shared by the samples of a pose (a pose
    slightly off) inflates the second, which white noise alone leaves near 1.

    :param residual: ``residual(x, index) -> (len(index), c)`` unweighted residuals.
    :param x0: start.
    :param segments: (k,) pose label per sample.
    :param noise: (c,) channel noise (the residuals are divided by it).
    :return: the fit.
    """
    every = np.arange(len(segments))

    def weighted(x, index):
        return (residual(x, index) / noise).ravel()

    first = least_squares(weighted, x0, args=(every,), loss='soft_l1', f_scale=3.0)
    scaled = np.abs(residual(first.x, every) / noise)
    scale = 1.4826 * float(np.median(scaled))
    inliers = every[scaled.max(axis=1) <= OUTLIER_SIGMAS * max(scale, 1.0)]
    if inliers.size * scaled.shape[1] <= len(x0):  # too few left to fit: no sample is an outlier
        inliers = every
    final = least_squares(weighted, first.x, args=(inliers,), method='lm')
    jac = final.jac
    columns = np.linalg.norm(jac, axis=0)
    columns = np.where(columns > 0, columns, 1.0)
    singular = np.linalg.svd(jac / columns, compute_uv=False)
    rank = int(np.count_nonzero(singular > singular[0] * 1e-10))
    condition = float(singular[0] / singular[-1]) if singular[-1] > 0 else float('inf')
    s2 = max(float(final.fun @ final.fun) / max(jac.shape[0] - jac.shape[1], 1),
             _pose_variance(final.fun.reshape(len(inliers), -1), segments[inliers], len(x0)))
    normal = (jac / columns).T @ (jac / columns)
    covariance = s2 * np.linalg.pinv(normal) / np.outer(columns, columns)
    return Fit(final.x, covariance, rank, condition, len(inliers), len(every) - len(inliers),
               float(np.sqrt(s2)), inliers, noise)


def _pose_variance(weighted: np.ndarray, segments: np.ndarray, parameters: int) -> float:
    """Variance of the poses' mean weighted residuals, each times its sample count."""
    labels, counts = np.unique(segments, return_counts=True)
    means = np.stack([weighted[segments == label].mean(axis=0) for label in labels])
    dof = means.size - parameters
    if dof < 1:
        return 0.0
    return float(np.sum(counts[:, None] * means ** 2) / dof)


def _check_fit(fit: Fit, who: str, names: Sequence[str]) -> None:
    if fit.rank < len(fit.values) or not fit.condition < MAX_CONDITION:
        raise CalibrationRefused(f'{who}: the samples do not determine {", ".join(names)} '
                                 f'(rank {fit.rank} of {len(fit.values)}, condition '
                                 f'{fit.condition:.3g}): tilt by {ADVICE_DEG} deg or more about '
                                 'two axes')


def _ratio(mass: float, moment: np.ndarray, covariance: np.ndarray) -> tuple:
    """``c = (m c) / m`` and its covariance (first order) from that of ``(m, m c)``."""
    com = moment / mass
    jac = np.hstack([-com[:, None] / mass, np.eye(3) / mass])
    return com, jac @ covariance @ jac.T


def _linear_start(readings: np.ndarray, gravity: np.ndarray, sign: int, noise: np.ndarray) -> np.ndarray:
    """ft_calib's linear least squares in ``(b, m, m c)`` (weighted), the nonlinear start."""
    k = len(readings)
    design = np.zeros((k, 6, 10))
    design[:, :, :6] = np.eye(6)
    design[:, :, 6] = -sign * weight_wrench(1.0, np.zeros(3), gravity)
    for j, axis in enumerate(np.eye(3)):
        design[:, :, 7 + j] = -sign * weight_wrench(0.0, axis, gravity)
    design = (design / noise[:, None]).reshape(-1, 10)
    return np.linalg.lstsq(design, (readings / noise).ravel(), rcond=None)[0]


def identify_tool(readings: np.ndarray, gravity_contact: np.ndarray, segments: np.ndarray,
                  sensor: SensorModel, mounting: bool = False, who: str = 'sensor') -> ToolEstimate:
    """Bias, tool mass and centre of mass (and mounting rotation) of a sensor whose tool is free.

    :param readings: (k, 6) raw readings at rest, sensor frame about its origin (N, N m).
    :param gravity_contact: (k, 3) gravity in the contact frame per sample (m/s^2).
    :param segments: (k,) pose label per sample (samples of one pose share a label).
    :param sensor: the configured sensor model (its ``sign`` and ``orientation`` are used).
    :param mounting: also estimate the sensor's mounting rotation.
    :param who: what is calibrated, for the messages.
    :return: the estimate.
    :raises CalibrationRefused: when the poses do not determine it.
    """
    readings, gravity_contact, segments = _checked(readings, gravity_contact, segments, who)
    gravity = gravity_contact @ sensor.rotation  # R^T g_c, configured sensor frame
    check_tool_motion(pose_directions(gravity, segments), who, mounting)
    noise = channel_noise(readings, segments)
    start = _linear_start(readings, gravity, sensor.sign, noise)
    if mounting:
        start = np.concatenate([start, np.zeros(3)])

    def residual(x, index):
        g = gravity[index] if not mounting else gravity[index] @ Q.exp_so3(x[10:13])
        return x[:6] - sensor.sign * weight_wrench(x[6], x[7:10], g) - readings[index]

    fit = robust_fit(residual, start, segments, noise)
    names = ['bias', 'mass', 'centre of mass'] + (['mounting rotation'] if mounting else [])
    _check_fit(fit, who, names)
    return _tool_estimate(fit, sensor, mounting, pose_directions(gravity, segments), who)


def _tool_estimate(fit: Fit, sensor: SensorModel, mounting: bool, directions: np.ndarray,
                   who: str) -> ToolEstimate:
    x, sigma = fit.values, fit.sigma
    mass, mass_sigma = float(x[6]), float(sigma[6])
    if mass < -3 * mass_sigma:
        raise CalibrationRefused(f'{who}: the tool weighs {mass:.3g} kg (negative): the sensor '
                                 'sign is likely wrong (sensor_signs; wrench-distribution check-signs)')
    determined = mass > 5 * mass_sigma
    com, com_cov = _ratio(mass, x[7:10], fit.covariance[6:10, 6:10]) if determined else \
        (np.zeros(3), np.zeros((3, 3)))
    rotation = x[10:13] if mounting else np.zeros(3)
    if np.degrees(np.linalg.norm(rotation)) > MAX_MOUNTING_DEG:
        raise CalibrationRefused(f'{who}: the sensor is turned {np.degrees(np.linalg.norm(rotation)):.3g} deg from its '
                                 f'configured orientation, beyond a mounting rotation ({MAX_MOUNTING_DEG:g} deg): '
                                 'sensor_orientations is likely wrong; fix it, then identify again')
    orientation = Q.matrix_to_quaternion(sensor.rotation @ Q.exp_so3(rotation))
    return ToolEstimate(
        bias=x[:6].copy(), bias_sigma=sigma[:6].copy(), mass=max(mass, 0.0), mass_sigma=mass_sigma,
        com=com, com_sigma=np.sqrt(np.clip(np.diag(com_cov), 0, None)),
        rotation=np.array(rotation), rotation_sigma=sigma[10:13].copy() if mounting else np.zeros(3),
        orientation=orientation, com_determined=bool(determined), directions=directions, fit=fit)


def _checked(readings, gravity, segments, who: str) -> tuple:
    readings = np.asarray(readings, float)
    gravity = np.asarray(gravity, float)
    segments = np.asarray(segments)
    if readings.ndim != 2 or readings.shape[1] != 6 or gravity.shape != (len(readings), 3) \
            or segments.shape != (len(readings),):
        raise CalibrationRefused(f'{who}: expected readings (k, 6), gravity (k, 3) and pose labels '
                                 f'(k,), got {readings.shape}, {gravity.shape}, {segments.shape}')
    finite = np.isfinite(readings).all(axis=1) & np.isfinite(gravity).all(axis=1)
    if not finite.all():
        raise CalibrationRefused(f'{who}: {np.count_nonzero(~finite)} samples hold NaN or Inf')
    if len(readings) < 12:
        raise CalibrationRefused(f'{who}: {len(readings)} samples; at least 12 (three poses) needed')
    return readings, gravity, segments


def contact_wrenches_object(readings: np.ndarray, gravity_object: np.ndarray, contact_poses: np.ndarray,
                            sensors: Sequence[SensorModel], biases: Optional[np.ndarray] = None,
                            rigid: Optional[Sequence[bool]] = None) -> np.ndarray:
    """Each contact wrench from its sensor's model, object frame about the object origin.

    :param readings: (k, n, 6) raw readings.
    :param gravity_object: (k, 3) gravity in the object frame.
    :param contact_poses: (n, 7) or (k, n, 7) contact poses ``[x, y, z, qx, qy, qz, qw]``.
    :param sensors: the n sensor models (tools, signs, sensor poses).
    :param biases: (n, 6) sensor biases, or None.
    :param rigid: (n,) False for point contacts (their torque about the contact is dropped), or
        None (all rigid).
    :return: (k, n, 6).
    """
    readings = np.asarray(readings, float)
    poses = np.broadcast_to(np.asarray(contact_poses, float), (len(readings), len(sensors), 7))
    biases = np.zeros((len(sensors), 6)) if biases is None else np.asarray(biases, float)
    out = np.zeros((len(readings), len(sensors), 6))
    for i, sensor in enumerate(sensors):
        quat = poses[:, i, 3:]
        contact = sensor.to_contact(readings[:, i] - biases[i], Q.rotate_inverse(quat, gravity_object))
        if rigid is not None and not rigid[i]:
            contact[:, 3:] = 0.0
        out[:, i] = Q.transform_wrench(contact, Q.quaternion_to_matrix(quat), poses[:, i, :3])
    return out


def object_resultant(readings: np.ndarray, gravity_object: np.ndarray, contact_poses: np.ndarray,
                     sensors: Sequence[SensorModel], biases: Optional[np.ndarray] = None) -> np.ndarray:
    """Sum of the contact wrenches at the object origin, object frame, from each sensor's model.

    :param readings: (k, n, 6) raw readings.
    :param gravity_object: (k, 3) gravity in the object frame.
    :param contact_poses: (n, 7) or (k, n, 7) contact poses ``[x, y, z, qx, qy, qz, qw]``.
    :param sensors: the n sensor models (tools, signs, sensor poses).
    :param biases: (n, 6) sensor biases, or None.
    :return: (k, 6).
    """
    return contact_wrenches_object(readings, gravity_object, contact_poses, sensors, biases).sum(axis=1)


def _object_design(gravity: np.ndarray) -> np.ndarray:
    """Return the design of ``sum_i X_i h_i = -w(M, M c, g_o)`` in ``(M, M c)``: (k, 6, 4)."""
    design = np.zeros((len(gravity), 6, 4))
    design[:, :, 0] = -weight_wrench(1.0, np.zeros(3), gravity)
    for j, axis in enumerate(np.eye(3)):
        design[:, :, 1 + j] = -weight_wrench(0.0, axis, gravity)
    return design


def object_solution(resultant: np.ndarray, gravity: np.ndarray, fit: Fit) -> np.ndarray:
    """``(M, M c)`` by least squares on a fit's samples and weights, for another resultant.

    What an error of the resultant (a tool's parameter off) does to the object: the fit's own
    inliers and channel noise, the model linear.

    :param resultant: (k, 6) the resultant (all the samples the fit was given).
    :param gravity: (k, 3) gravity in the object frame.
    :param fit: the object's fit.
    :return: (4,).
    """
    index = fit.inliers
    design = (_object_design(gravity[index]) / fit.noise[:, None]).reshape(-1, 4)
    return np.linalg.lstsq(design, (resultant[index] / fit.noise).ravel(), rcond=None)[0]


def identify_object(resultant: np.ndarray, gravity_object: np.ndarray, segments: np.ndarray) -> ObjectEstimate:
    """Mass and centre of mass of an object held at rest, from the resultant of its contacts.

    At rest ``sum_i X_i h_i + w(M, M c, g_o) = 0``: linear in ``(M, M c)``.

    :param resultant: (k, 6) sum of the contact wrenches at the object origin (:func:`object_resultant`).
    :param gravity_object: (k, 3) gravity in the object frame.
    :param segments: (k,) pose labels.
    :return: the estimate.
    :raises CalibrationRefused: when the poses do not determine it.
    """
    who = 'held object'
    resultant, gravity, segments = _checked(resultant, gravity_object, segments, who)
    directions = pose_directions(gravity, segments)
    check_object_motion(directions)
    noise = channel_noise(resultant, segments)
    design = _object_design(gravity)
    start = np.linalg.lstsq((design / noise[:, None]).reshape(-1, 4), (resultant / noise).ravel(),
                            rcond=None)[0]

    def residual(x, index):
        return -weight_wrench(x[0], x[1:4], gravity[index]) - resultant[index]

    fit = robust_fit(residual, start, segments, noise)
    _check_fit(fit, who, ['mass', 'centre of mass'])
    if not fit.values[0] > 5 * fit.sigma[0]:
        raise CalibrationRefused(
            f'{who}: the contacts carry no weight ({fit.values[0]:.3g} +- {fit.sigma[0]:.2g} kg): is the '
            'object held by the effectors alone, and are sensor_signs right (check-signs)?')
    return with_tool_covariance(ObjectEstimate(0.0, 0.0, np.zeros(3), np.zeros(3), directions, fit),
                                np.zeros((4, 4)))


def with_tool_covariance(estimate: ObjectEstimate, tools_covariance: np.ndarray) -> ObjectEstimate:
    """Return the object's estimate with its 1-sigma from the fit's covariance plus the tools' share.

    :param estimate: the estimate (its ``fit`` gives ``(M, M c)`` and their own covariance).
    :param tools_covariance: (4, 4) covariance of ``(M, M c)`` the tools' uncertainty carries
        (:func:`tool_sigma_points` propagated by the caller), zeros for tools taken as known.
    :return: the estimate, mass, centre of mass and their 1-sigma from the sum.
    """
    covariance = estimate.fit.covariance + tools_covariance
    mass = float(estimate.fit.values[0])
    com, com_cov = _ratio(mass, estimate.fit.values[1:4], covariance)
    return ObjectEstimate(mass, float(np.sqrt(max(covariance[0, 0], 0.0))), com,
                          np.sqrt(np.clip(np.diag(com_cov), 0, None)), estimate.directions, estimate.fit,
                          covariance)


def tool_sigma_points(tool: ToolEstimate) -> list:
    """Pairs of tools one standard deviation apart along each principal axis of the tool's covariance.

    The object's covariance from the tools' is ``sum ((f(plus) - f(minus)) / 2) (...)^T`` over
    the pairs (a central difference along each axis, which also follows the model's curvature in
    the mounting rotation).

    :param tool: an identified tool (bias, mass, first moment, rotation in its fit).
    :return: ``[((bias, mass, com, rotation), (bias, mass, com, rotation)), ...]``, the rotation a
        rotation vector applied after the identified orientation.
    """
    values, covariance = tool.fit.values, tool.fit.covariance
    eigenvalues, eigenvectors = np.linalg.eigh((covariance + covariance.T) / 2)
    pairs = []
    for value, vector in zip(eigenvalues, eigenvectors.T):
        if value <= 0:
            continue
        step = np.sqrt(value) * vector
        pairs.append(tuple(_tool_values(values + sign * step, tool) for sign in (1.0, -1.0)))
    return pairs


def _tool_values(x: np.ndarray, tool: ToolEstimate) -> tuple:
    mass = float(x[6])
    com = x[7:10] / mass if tool.com_determined else tool.com
    rotation = x[10:13] - tool.fit.values[10:13] if len(x) > 10 else np.zeros(3)
    return x[:6], max(mass, 0.0), com, rotation
