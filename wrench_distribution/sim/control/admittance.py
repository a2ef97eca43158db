"""The admittance law of ros2_controllers' ``admittance_controller``, without ROS.

What that controller does each cycle, as its source defines it (``admittance_rule_impl.hpp``
and ``admittance_controller.cpp``; read to learn, not copied):

1. a ``~/wrench_reference`` is accepted only when its ``frame_id`` is the F/T sensor frame
   (or empty); any other is dropped and the previous reference stays;
2. the reference is added, component by component, to the raw F/T reading (sensor frame,
   about the sensor origin);
3. the sum is rotated into the world frame and the tool's weight is compensated with the
   controller's own parameters (``gravity_compensation.CoG.force`` along world -z at
   ``CoG.pos``, given in the sensor frame), then smoothed by an exponential filter
   (``ft_sensor.filter_coefficient``);
4. per axis of the control frame, ``M x'' + D x' + K x = F`` with
   ``D = 2 zeta sqrt(M K)`` (``damping_ratio``), ``x`` the pose of the sensor frame relative
   to its reference; then ``x'' -= joint_damping x'`` and semi-implicit Euler
   (velocity first, then position) with the controller's period;
5. the command to the position-controlled joints is the reference plus that offset.

:class:`AdmittanceRule` is steps 2 to 4 for one arm whose joint space is its tip's
Cartesian space (identity kinematics); :func:`accepts_reference` is step 1;
:class:`PositionLoop` is the arm's own position servo, of finite bandwidth. See
docs/simulator.md, section 8.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.spatial import cross, exp_so3, log_so3


def accepts_reference(frame_id: str, sensor_frame: str) -> bool:
    """Tell whether the controller takes a wrench reference stamped with ``frame_id``.

    :param frame_id: ``header.frame_id`` of the reference.
    :param sensor_frame: the controller's ``ft_sensor.frame.id``.
    :return: True for the sensor frame or an empty frame id (the controller's rule)
    """
    return frame_id == '' or frame_id == sensor_frame


def _six(values, name: str) -> np.ndarray:
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.size != 6 or not np.all(np.isfinite(v)):
        raise ValueError(f'{name}: expected 6 finite numbers [x, y, z, rx, ry, rz], got {v.size}')
    return v


@dataclass
class AdmittanceParameters:
    """The controller's parameters (the names of ``admittance_controller_parameters.yaml``).

    :param mass: ``admittance.mass``, kg and kg*m^2 per axis of the control frame (> 0).
    :param damping_ratio: ``admittance.damping_ratio`` per axis.
    :param stiffness: ``admittance.stiffness`` per axis, N/m and N*m/rad (>= 0).
    :param joint_damping: ``admittance.joint_damping``, 1/s (the controller's default 5).
    :param filter_coefficient: ``ft_sensor.filter_coefficient`` in (0, 1]; 1: no filter.
    :param cog_force: ``gravity_compensation.CoG.force``, the tool's weight, N.
    :param cog_position: ``gravity_compensation.CoG.pos``, in the sensor frame, m.
    :param selected_axes: ``admittance.selected_axes`` (1: compliant, 0: ignored force).
    """

    mass: np.ndarray
    damping_ratio: np.ndarray
    stiffness: np.ndarray
    joint_damping: float = 5.0
    filter_coefficient: float = 0.05
    cog_force: float = 0.0
    cog_position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    selected_axes: np.ndarray = field(default_factory=lambda: np.ones(6))

    def __post_init__(self) -> None:
        self.mass = _six(self.mass, 'admittance mass')
        self.damping_ratio = _six(self.damping_ratio, 'admittance damping_ratio')
        self.stiffness = _six(self.stiffness, 'admittance stiffness')
        self.selected_axes = _six(self.selected_axes, 'admittance selected_axes')
        self.cog_position = np.asarray(self.cog_position, dtype=float).reshape(3)
        if np.any(self.mass <= 0) or np.any(self.stiffness < 0):
            raise ValueError('admittance mass must be > 0 and stiffness >= 0 on every axis')
        if not 0.0 < self.filter_coefficient <= 1.0:
            raise ValueError('ft_sensor filter_coefficient must be in (0, 1]')

    @property
    def damping(self) -> np.ndarray:
        """Return ``D = 2 zeta sqrt(M K)`` per axis (zero where the stiffness is zero).

        :return: (6,)
        """
        return 2.0 * self.damping_ratio * np.sqrt(self.mass * self.stiffness)


class AdmittanceRule:
    """One arm's admittance law: wrench in, pose offset of the sensor frame out.

    :param params: the controller's parameters.
    """

    def __init__(self, params: AdmittanceParameters) -> None:
        self.params = params
        self.reset()

    def reset(self) -> None:
        """Zero the filtered wrench, the offset and its velocity."""
        #: Filtered, gravity-compensated wrench, world axes about the sensor origin.
        self.wrench_world = np.zeros(6)
        #: Offset of the sensor frame from its reference: translation and rotation vector.
        self.offset = np.zeros(6)
        #: Its rate of change.
        self.velocity = np.zeros(6)

    def process_wrench(self, reading: np.ndarray, reference: np.ndarray,
                       sensor_rotation: np.ndarray) -> np.ndarray:
        """Add the reference to the reading, compensate the tool's weight, filter.

        :param reading: (6,) raw F/T reading, sensor frame about its origin.
        :param reference: (6,) wrench reference in the same frame.
        :param sensor_rotation: (3, 3) world orientation of the sensor frame.
        :return: (6,) the filtered wrench, world axes.
        """
        p = self.params
        total = np.asarray(reading, float) + np.asarray(reference, float)
        world = np.concatenate([sensor_rotation @ total[:3], sensor_rotation @ total[3:]])
        weight = np.array([0.0, 0.0, -p.cog_force])  # the tool's weight, world axes
        world[:3] -= weight
        world[3:] -= cross(sensor_rotation @ p.cog_position, weight)
        alpha = p.filter_coefficient
        self.wrench_world = alpha * world + (1.0 - alpha) * self.wrench_world
        return self.wrench_world

    def update(self, reading: np.ndarray, reference: np.ndarray, sensor_rotation: np.ndarray,
               control_rotation: np.ndarray, displacement: np.ndarray, dt: float) -> np.ndarray:
        """Advance the law by one controller period.

        :param reading: (6,) raw F/T reading, sensor frame about its origin.
        :param reference: (6,) wrench reference in the same frame (what the arm should apply).
        :param sensor_rotation: (3, 3) world orientation of the sensor frame.
        :param control_rotation: (3, 3) world orientation of the control frame (the axes of
            ``mass``, ``damping_ratio`` and ``stiffness``).
        :param displacement: (6,) actual pose of the sensor frame minus its reference pose,
            world axes: translation and rotation vector ``log(R R_ref^T)``.
        :param dt: controller period, s.
        :return: (6,) the new offset to add to the reference pose.
        """
        p = self.params
        wrench = self.process_wrench(reading, reference, sensor_rotation)
        rot6 = np.zeros((6, 6))
        rot6[:3, :3] = control_rotation
        rot6[3:, 3:] = control_rotation
        in_control = (rot6.T @ wrench) * p.selected_axes
        # M x'' + D x' + K x = F, per axis of the control frame
        accel = rot6 @ ((in_control - p.damping * (rot6.T @ self.velocity)
                         - p.stiffness * (rot6.T @ np.asarray(displacement, float))) / p.mass)
        accel = accel - p.joint_damping * self.velocity
        self.velocity = self.velocity + accel * dt
        self.offset = self.offset + self.velocity * dt
        return self.offset


class PositionLoop:
    """A position-controlled tip that follows its commanded pose with a first-order lag.

    ``v = bandwidth (p_d - p)``, ``w = bandwidth log(R_d R^T)``: the joint servo of an
    industrial arm seen from its tip, bandwidth in rad/s.

    :param position: (3,) initial world position of the tip (the sensor origin).
    :param rotation: (3, 3) initial world orientation.
    :param bandwidth: rad/s (> 0).
    """

    def __init__(self, position, rotation, bandwidth: float) -> None:
        if not bandwidth > 0:
            raise ValueError('position loop bandwidth must be > 0')
        self.position = np.asarray(position, float).reshape(3).copy()
        self.rotation = np.asarray(rotation, float).reshape(3, 3).copy()
        self.bandwidth = float(bandwidth)
        self.velocity = np.zeros(3)
        self.omega = np.zeros(3)

    def place(self, position: np.ndarray, rotation: np.ndarray) -> None:
        """Put the tip at a pose (a rig that turns the arm, at rest).

        :param position: world position.
        :param rotation: world orientation, (3, 3).
        """
        self.position = np.asarray(position, float).reshape(3).copy()
        self.rotation = np.asarray(rotation, float).reshape(3, 3).copy()

    def step(self, position, rotation, dt: float) -> None:
        """Advance the tip toward the commanded pose for one period; the linear part is exact.

        :param position: (3,) commanded world position.
        :param rotation: (3, 3) commanded world orientation.
        :param dt: step, s.
        """
        gain = (1.0 - np.exp(-self.bandwidth * dt)) / dt  # exact discrete first-order lag
        self.velocity = gain * (np.asarray(position, float) - self.position)
        self.omega = gain * log_so3(np.asarray(rotation, float) @ self.rotation.T)
        self.position = self.position + self.velocity * dt
        self.rotation = exp_so3(self.omega * dt) @ self.rotation


def compose_offset(position, rotation, offset: np.ndarray) -> tuple:
    """Apply an admittance offset to a reference pose.

    :param position: (3,) reference position.
    :param rotation: (3, 3) reference orientation.
    :param offset: (6,) translation and rotation vector (world axes).
    :return: ``(position, rotation)`` commanded
    """
    return np.asarray(position, float) + offset[:3], exp_so3(offset[3:]) @ rotation


def pose_difference(position, rotation, ref_position, ref_rotation) -> np.ndarray:
    """Return the displacement of a pose from its reference, world axes.

    :return: (6,) ``[p - p_ref, log(R R_ref^T)]``
    """
    return np.concatenate([np.asarray(position, float) - ref_position,
                           log_so3(np.asarray(rotation, float) @ np.asarray(ref_rotation).T)])
