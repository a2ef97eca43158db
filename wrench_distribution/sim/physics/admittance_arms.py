"""The held object with position-controlled arms under admittance control (no ROS).

Each effector is the tip of an arm whose joints follow a commanded pose with a first-order
lag (:class:`~..control.admittance.PositionLoop`); the commanded pose is the arm's reference pose
plus the offset of its admittance controller (:class:`~..control.admittance.AdmittanceRule`), fed
with the raw reading of the F/T sensor on the tip and with the distributor's command as
its wrench reference. The tip carries the grasp spring of :mod:`.grasp`, as the effector
bodies of :class:`~.held_object.HeldObjectSim` do. The arms' reference poses are computed
from the configured (calibrated) contacts along the object controller's planned move, while
the grasps sit at the true contacts: see docs/simulator.md, section 8. Built from a scenario
by :mod:`..scenarios.arms`.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .ft_sensor import SimulatedFTSensors
from .held_object import HeldObjectSim
from ..control.admittance import (AdmittanceParameters, AdmittanceRule, compose_offset, pose_difference,
                                  PositionLoop)
from ...core.spatial import cross


class ArmHeldObjectSim(HeldObjectSim):
    """:class:`HeldObjectSim` whose effectors are admittance-controlled arm tips.

    :param sensors: the F/T sensors on the tips (the truth: tool masses, biases, noise).
    :param laws: one admittance parameter set per arm.
    :param bandwidth: position-loop bandwidth, rad/s.
    :param reference: ``t -> (positions (n, 3), rotations (n, 3, 3))``, the world reference
        poses of the sensor frames.
    :param kwargs: the :class:`HeldObjectSim` arguments (the true contacts; rigid only).
    """

    def __init__(self, sensors: SimulatedFTSensors, laws: Sequence[AdmittanceParameters],
                 bandwidth: float, reference: Callable, **kwargs) -> None:
        super().__init__(**kwargs)
        if not self.rigid.all():
            raise ValueError('admittance arms hold rigid grasps only')
        self.sensors = sensors
        self.rules = [AdmittanceRule(p) for p in laws]
        self.reference = reference
        self.sensor_rot = sensors.rot
        self.sensor_pos = np.stack([np.asarray(m.position, float) for m in sensors.models])
        tips = self.tip_poses()
        self.loops = [PositionLoop(p, r, bandwidth) for p, r in zip(*tips)]
        #: The last wrench reference of each arm (sensor frame about its origin).
        self.references = np.zeros((self.n, 6))

    def tip_poses(self) -> tuple:
        """World poses of the sensor frames carried by the effectors.

        :return: ``(positions (n, 3), rotations (n, 3, 3))``
        """
        rot = self.eff_rot @ self.sensor_rot
        return self.eff_pos + np.einsum('nij,nj->ni', self.eff_rot, self.sensor_pos), rot

    def turn_rig(self, rotation: np.ndarray) -> None:
        """Turn the rig as :meth:`HeldObjectSim.turn_rig`, the arm tips with it (at rest).

        :param rotation: (3, 3) world rotation from the initial state.
        """
        super().turn_rig(rotation)
        for loop, position, rot in zip(self.loops, *self.tip_poses()):
            loop.place(position, rot)

    def readings(self) -> np.ndarray:
        """Raw F/T readings now (truth: tool weight, sign, bias, noise).

        :return: (n, 6) sensor frames about their origins
        """
        gravity = np.einsum('nji,j->ni', self.effector_frames(), self.gravity)
        return self.sensors.read(self.transmitted(), gravity)

    def step(self, commands: np.ndarray, dt: float, fixed: bool = False) -> None:
        """Advance by one step: admittance laws, position loops, then the object.

        :param commands: (n, 6) wrench references, each in its F/T sensor frame about the
            sensor origin (the wrench the arm is to apply to the object).
        :param dt: step (the controllers' period), s.
        :param fixed: hold the object in place (the fixture before the release).
        """
        self.references = np.asarray(commands, dtype=float).reshape(self.n, 6)
        readings = self.readings()
        ref_pos, ref_rot = self.reference(self.time)
        for i, (rule, loop) in enumerate(zip(self.rules, self.loops)):
            shift = pose_difference(loop.position, loop.rotation, ref_pos[i], ref_rot[i])
            offset = rule.update(readings[i], self.references[i], loop.rotation, loop.rotation,
                                 shift, dt)
            loop.step(*compose_offset(ref_pos[i], ref_rot[i], offset), dt)
        self.step_object(dt, fixed)
        self._follow_tips()
        self.time += dt

    def _follow_tips(self) -> None:
        """Set the effector frames (the grasp side of each sensor) from the arm tips."""
        for i, loop in enumerate(self.loops):
            rot = loop.rotation @ self.sensor_rot[i].T
            self.eff_rot[i] = rot
            self.eff_pos[i] = loop.position - rot @ self.sensor_pos[i]
            self.eff_omega[i] = loop.omega
            self.eff_vel[i] = loop.velocity + cross(loop.omega, self.eff_pos[i] - loop.position)
