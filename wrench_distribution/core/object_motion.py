"""The object's wrench from its motion: at rest, or from its pose and the pose's derivatives.

What the effectors apply to a rigid object (object frame, about its centre of mass) is fixed
by its motion: ``f = m (a - g)``, ``t = I alpha + omega x I omega``. That is the wrench a set
of sensors is checked against (:mod:`.consistency`). No ROS, no state.
"""
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from scipy.spatial.transform import Rotation


@dataclass(frozen=True)
class Motion:
    """The object's motion at each sample, object axes.

    :param acceleration: (k, 3) acceleration of the centre of mass.
    :param angular_velocity: (k, 3) body angular velocity.
    :param angular_acceleration: (k, 3) body angular acceleration.
    :param gravity: (k, 3) gravity in the object frame.
    """

    acceleration: np.ndarray
    angular_velocity: np.ndarray
    angular_acceleration: np.ndarray
    gravity: np.ndarray


def at_rest(gravity: np.ndarray) -> Motion:
    """Return the motion of an object at rest under ``gravity`` ((k, 3) or (3,), object frame)."""
    gravity = np.atleast_2d(np.asarray(gravity, float))
    zero = np.zeros_like(gravity)
    return Motion(zero, zero, zero, gravity)


def object_wrench(mass: float, motion: Motion, inertia: Optional[np.ndarray] = None) -> np.ndarray:
    """Return the wrench the effectors apply to the object (object frame, about its centre of mass).

    Newton-Euler with gravity: ``f = m (a - g)``, ``t = I alpha + omega x I omega`` (body
    axes); at rest ``[-m g; 0]``.

    :param mass: object mass (kg).
    :param motion: the object's motion.
    :param inertia: (3, 3) inertia about the centre of mass, object axes (None: the torque
        that turns it is left out, as for a point mass).
    :return: (k, 6).
    """
    force = mass * (np.asarray(motion.acceleration, float) - np.asarray(motion.gravity, float))
    torque = np.zeros_like(force)
    if inertia is not None:
        inertia = np.asarray(inertia, float)
        omega = np.asarray(motion.angular_velocity, float)
        torque = (np.asarray(motion.angular_acceleration, float) @ inertia.T
                  + np.cross(omega, omega @ inertia.T))
    return np.concatenate([force, torque], axis=1)


def _windows(stamps_ns: np.ndarray, half: int) -> tuple:
    """Return the indices (k, 2 h + 1) of each sample's window (shifted inward at the ends), its times."""
    k = len(stamps_ns)
    width = 2 * half + 1
    if k < width:
        raise ValueError(f'{k} poses: the derivatives need at least {width} (2 half_window + 1)')
    start = np.clip(np.arange(k) - half, 0, k - width)
    index = start[:, None] + np.arange(width)
    seconds = (np.asarray(stamps_ns, np.int64) - int(stamps_ns[0])) * 1e-9
    if not np.all(np.diff(seconds) > 0):
        raise ValueError('pose stamps must increase strictly')
    return index, seconds[index] - seconds[:, None]


def _fit(tau: np.ndarray, values: np.ndarray, through_zero: bool) -> np.ndarray:
    """Fit ``values`` (k, w, 3) on ``[1,] tau, tau^2 / 2`` per sample; return (k, p, 3)."""
    columns = [tau, 0.5 * tau ** 2] if through_zero else [np.ones_like(tau), tau, 0.5 * tau ** 2]
    design = np.stack(columns, axis=-1)
    normal = np.einsum('kwp,kwq->kpq', design, design)
    return np.linalg.solve(normal, np.einsum('kwp,kwc->kpc', design, values))


def motion_from_poses(stamps_ns: np.ndarray, positions: np.ndarray, quaternions: np.ndarray,
                      com: Sequence[float], gravity: Sequence[float], half_window: int = 5) -> Motion:
    """Return the object's motion from samples of its pose in an inertial frame.

    Local quadratic fits over ``2 half_window + 1`` poses centred on each sample (shifted
    inward at the ends): the centre of mass's position gives its acceleration; the rotation
    vectors ``log(R_k^T R_j)`` (body frame at ``k``) give the body angular velocity and,
    because their second derivative at ``k`` is ``d omega_body / dt``, the angular
    acceleration. A wider window trades lag for less amplified pose noise.

    :param stamps_ns: (k,) increasing stamps.
    :param positions: (k, 3) the object frame's origin in the inertial frame.
    :param quaternions: (k, 4) the object frame's orientation in it ``[qx, qy, qz, qw]``.
    :param com: centre of mass in the object frame.
    :param gravity: gravity in the inertial frame.
    :param half_window: poses on each side of a sample.
    :return: the motion, object axes.
    :raises ValueError: on too few poses or stamps that do not increase.
    """
    index, tau = _windows(np.asarray(stamps_ns), int(half_window))
    rotation = Rotation.from_quat(np.asarray(quaternions, float))
    centre = np.asarray(positions, float) + rotation.apply(np.asarray(com, float))
    acceleration = _fit(tau, centre[index], through_zero=False)[:, 2]
    k, width = index.shape
    relative = (Rotation.from_quat(np.repeat(rotation.as_quat(), width, axis=0)).inv()
                * Rotation.from_quat(rotation.as_quat()[index.ravel()]))
    turn = _fit(tau, relative.as_rotvec().reshape(k, width, 3), through_zero=True)
    return Motion(rotation.inv().apply(acceleration), turn[:, 0], turn[:, 1],
                  rotation.inv().apply(np.tile(np.asarray(gravity, float), (k, 1))))
