"""Object-level controller of the demo.

PD on the object pose plus feed-forward, and a scripted internal-load schedule. Pure numpy;
the ROS node is ``object_controller_node``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from wrench_distribution.core.contacts import inertia_matrix
from wrench_distribution.core.spatial import cross, exp_so3, log_so3


def min_jerk(t: float, start: float, duration: float) -> tuple[float, float, float]:
    """Minimum-jerk profile from 0 to 1: value, rate and acceleration.

    :param t: time, s.
    :param start: start time, s.
    :param duration: duration, s (> 0).
    :return: ``(s, ds/dt, d2s/dt2)``
    """
    tau = (t - start) / duration
    if tau <= 0.0:
        return 0.0, 0.0, 0.0
    if tau >= 1.0:
        return 1.0, 0.0, 0.0
    s = tau ** 3 * (10 - 15 * tau + 6 * tau ** 2)
    ds = 30 * tau ** 2 * (1 - tau) ** 2 / duration
    dds = 60 * tau * (1 - tau) * (1 - 2 * tau) / duration ** 2
    return s, ds, dds


def tilt_profile(tilts, t: float) -> tuple:
    """Orientation along a sequence of tilts (minimum-jerk turns with rests between them).

    Tilt ``k`` turns, from ``start`` for ``duration``, from the orientation ``exp(r_{k-1})``
    reached by the previous one (the identity before the first) to ``exp(r_k)``, about the
    fixed world axis ``phi = log(exp(r_k) exp(r_{k-1})^T)``: ``R = exp(s phi) exp(r_{k-1})``,
    so ``omega = ds phi`` and ``alpha = dds phi`` (world axes).

    :param tilts: flat ``[start, duration, rx, ry, rz]`` per tilt, in time order.
    :param t: time, s.
    :return: ``(rotation (3, 3), omega (3,), alpha (3,))``
    """
    rows = np.asarray(tilts, dtype=float).reshape(-1, 5)
    before = np.eye(3)
    for start, duration, *vector in rows:
        target = exp_so3(np.asarray(vector))
        if t < start + duration:
            phi = log_so3(target @ before.T)
            s, ds, dds = min_jerk(t, start, duration)
            return exp_so3(s * phi) @ before, ds * phi, dds * phi
        before = target
    return before, np.zeros(3), np.zeros(3)


def shift_profile(shifts, t: float) -> np.ndarray:
    """Offset along a sequence of shifts (minimum-jerk moves with rests between them).

    Shift ``k`` moves, from ``start`` for ``duration``, from the offset the previous one reached
    (zero before the first) to its own ``[dx, dy, dz]``.

    :param shifts: flat ``[start, duration, dx, dy, dz]`` per shift, in time order.
    :param t: time, s.
    :return: (3,) offset
    """
    before = np.zeros(3)
    for start, duration, *offset in np.asarray(shifts, dtype=float).reshape(-1, 5):
        if t < start + duration:
            return before + min_jerk(t, start, duration)[0] * (np.asarray(offset) - before)
        before = np.asarray(offset)
    return before


def scheduled(schedule: list, t: float) -> dict:
    """Return the handles in force at time ``t`` (the last entry at or before it).

    :param schedule: from :func:`~wrench_distribution.config.handles.parse_schedule`.
    :param t: time, s.
    :return: ``{name: value}`` (empty before the first entry)
    """
    current: dict = {}
    for when, handles in schedule:
        if when <= t + 1e-9:
            current = handles
    return current


@dataclass
class PoseController:
    """PD on the centre-of-mass position and the orientation, with feed-forward.

    The feed-forward is acceleration and gravity, along a minimum-jerk move from the start
    pose.

    Output: the wrench the effectors together must apply, in the object frame about the
    centre of mass: ``f = m (a_d + kp e_p + kd e_v - g)`` and
    ``t = I (alpha_d + kp_r e_R + kd_r e_w) + w x I w`` (world), rotated into the object frame.

    :param mass: object mass, kg.
    :param inertia: inertia about the CoM, object axes (3, 3).
    :param com: centre of mass in the object frame.
    :param gravity: world gravity, m/s^2.
    :param gains: ``(kp, kd, kp_r, kd_r)`` in 1/s^2 and 1/s.
    :param offset: world translation of the object frame over the move, m.
    :param rotation: world rotation vector of the move, rad.
    :param start: start time of the move, s.
    :param duration: duration of the move, s.
    :param origin: the start pose ``(position, rotation)`` (None: the first pose measured).
    :param tilts: ``[start, duration, rx, ry, rz]`` per tilt after the move (:func:`tilt_profile`).
    """

    mass: float
    inertia: np.ndarray
    com: np.ndarray
    gravity: np.ndarray
    gains: tuple = (100.0, 20.0, 100.0, 20.0)
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    start: float = 1.0
    duration: float = 2.0
    origin: tuple | None = None
    tilts: tuple = ()

    def __post_init__(self) -> None:
        self.inertia = np.asarray(self.inertia, dtype=float).reshape(3, 3)
        self.com = np.asarray(self.com, dtype=float)
        self.gravity = np.asarray(self.gravity, dtype=float)
        self.offset = np.asarray(self.offset, dtype=float)
        self.rotation = np.asarray(self.rotation, dtype=float)

    def reference(self, t: float) -> tuple:
        """Desired object-frame pose and CoM motion at ``t``.

        :param t: time, s (the start pose must be set).
        :return: ``(frame position, rotation, com position, com velocity, com acceleration,
            omega, alpha)``, world frame
        """
        p0, r0 = self.origin
        s, ds, dds = min_jerk(t, self.start, self.duration)
        tilt, tilt_omega, tilt_alpha = tilt_profile(self.tilts, t)
        # the tilts turn the moved frame: R = R_tilt R_move R_0, angular rates composed
        rot = tilt @ exp_so3(s * self.rotation) @ r0
        omega = tilt_omega + tilt @ (ds * self.rotation)
        alpha = tilt_alpha + tilt @ (dds * self.rotation) + cross(tilt_omega, tilt @ (ds * self.rotation))
        lever = rot @ self.com
        frame = p0 + s * self.offset
        com = frame + lever
        vel = ds * self.offset + cross(omega, lever)
        acc = dds * self.offset + cross(alpha, lever) + cross(omega, cross(omega, lever))
        return frame, rot, com, vel, acc, omega, alpha

    def wrench(self, t: float, position, rotation, velocity, omega) -> np.ndarray:
        """Desired object wrench.

        :param t: time, s.
        :param position: world position of the object-frame origin.
        :param rotation: world orientation of the object frame (3, 3).
        :param velocity: world velocity of the object-frame origin.
        :param omega: world angular velocity.
        :return: (6,) ``[f, t]`` in the object frame about the centre of mass
        """
        position = np.asarray(position, float)
        rotation = np.asarray(rotation, float)
        omega = np.asarray(omega, float)
        if self.origin is None:
            self.origin = (position.copy(), rotation.copy())
        _, rot_d, com_d, vel_d, acc_d, omega_d, alpha_d = self.reference(t)
        lever = rotation @ self.com
        com = position + lever
        vel = np.asarray(velocity, float) + cross(omega, lever)
        kp, kd, kp_r, kd_r = self.gains
        force = self.mass * (acc_d + kp * (com_d - com) + kd * (vel_d - vel) - self.gravity)
        inertia_w = rotation @ self.inertia @ rotation.T
        e_rot = log_so3(rot_d @ rotation.T)
        torque = inertia_w @ (alpha_d + kp_r * e_rot + kd_r * (omega_d - omega)) + cross(
            omega, inertia_w @ omega)
        return np.concatenate([rotation.T @ force, rotation.T @ torque])


def controller_from(params: Mapping) -> PoseController:
    """Build the controller of the ``object_controller`` parameters.

    :param params: validated ``object_controller`` parameters
        (``validate_params('object_controller', ...)``).
    :return: the controller (its start pose unset).
    """
    return PoseController(
        params['object_mass'], inertia_matrix(params['object_inertia']),
        np.array(params['object_com']), np.array(params['gravity']),
        (params['position_gain'], params['velocity_gain'], params['orientation_gain'],
         params['angular_velocity_gain']),
        np.array(params['move_offset']), np.array(params['move_rotation']),
        params['move_start'], params['move_duration'], tilts=tuple(params['tilts']))
