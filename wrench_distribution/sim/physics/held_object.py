"""A rigid object held by n force-controlled effector bodies through compliant grasps.

Each effector is a small rigid body (a point mass for point contacts) that its own
controller pushes with the commanded wrench (its own weight compensated). It is tied to
its contact on the object by a stiff spring-damper (:mod:`.grasp`). The wrench the
spring transmits is what an F/T sensor at the effector measures; it converges to the
command at rest, and opposing commands stretch the springs against each other, so the
internal loads in the simulation are physical. Derivation: ``docs/simulator.md``.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from wrench_distribution.core.spatial import cross, exp_so3
from wrench_distribution.core.spatial import quaternion_to_matrix as matrix_from_quaternion

from .ft_sensor import SimulatedFTSensors
from .grasp import grasp_wrenches, GraspCompliance, spring_energy
from .rigid_object import RigidBody


#: A fingertip whose spring anchor has slid this far (m) from its contact has lost the object.
LOSS_DISTANCE = 0.02


class HeldObjectSim:
    """Fixed-step simulation of the object and its effector bodies.

    :param mass: object mass, kg.
    :param inertia: object inertia about its centre of mass, object axes (3, 3).
    :param com: centre of mass in the object frame.
    :param contact_types: ``'rigid'`` or ``'point'`` per effector.
    :param contact_positions: (n, 3) contact points in the object frame.
    :param contact_orientations: (n, 4) contact frame quaternions in the object frame.
    :param effector_mass: kg of each effector body.
    :param effector_inertia: kg*m^2 (isotropic) of each rigid-contact effector body.
    :param compliance: grasp spring and damper constants.
    :param gravity: world gravity vector, m/s^2.
    :param position: initial world position of the object-frame origin.
    :param orientation: initial world orientation of the object frame, ``[qx, qy, qz, qw]``.
    :param friction: Coulomb coefficient per effector, NaN (or None for all) for none; point
        contacts with one are unilateral and slip outside their cone (docs/simulator.md).
    :param normals: (n, 3) direction in which each effector pushes, in its contact frame
        (default +z).
    :param sensors: the F/T sensors the effectors carry (:class:`~.ft_sensor.SimulatedFTSensors`),
        read by whoever publishes them; None: none.
    """

    def __init__(self, mass: float, inertia, com, contact_types: Sequence[str],
                 contact_positions, contact_orientations, effector_mass: float = 0.5,
                 effector_inertia: float = 2e-3, compliance: GraspCompliance = GraspCompliance(),
                 gravity=(0.0, 0.0, -9.81), position=(0.0, 0.0, 0.0),
                 orientation=(0.0, 0.0, 0.0, 1.0), friction=None, normals=None,
                 sensors: Optional[SimulatedFTSensors] = None) -> None:
        self.sensors = sensors
        self.com = np.asarray(com, dtype=float).reshape(3)
        self.rigid = np.array([t == 'rigid' for t in contact_types])
        self.r = np.asarray(contact_positions, dtype=float).reshape(-1, 3)
        self.n = len(self.r)
        self.r_rot = np.stack([matrix_from_quaternion(q)
                               for q in np.asarray(contact_orientations, float).reshape(-1, 4)])
        self.effector_mass = float(effector_mass)
        self.effector_inertia = float(effector_inertia)
        self.compliance = compliance
        #: the grasps' six stiffnesses and dampings, per contact (point contacts: no torque)
        self.grasp_stiffness, self.grasp_damping = compliance.per_axis(self.rigid)
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        rot = matrix_from_quaternion(orientation)
        self.body = RigidBody(mass, inertia, np.asarray(position, float) + rot @ self.com, rot)
        self.time = 0.0
        p_c, r_c, _, _ = self.contact_state()
        self.eff_pos = p_c.copy()
        self.eff_rot = r_c.copy()
        self.eff_vel = np.zeros((self.n, 3))
        self.eff_omega = np.zeros((self.n, 3))
        self.last_grasp = np.zeros((self.n, 6))
        mu = np.full(self.n, np.nan) if friction is None else np.asarray(
            friction, float).reshape(self.n)
        #: Coulomb coefficient per contact (NaN: none); only point contacts slip.
        self.mu = np.where(self.rigid, np.nan, mu)
        normals = np.tile([0.0, 0.0, 1.0], (self.n, 1)) if normals is None else np.asarray(
            normals, float).reshape(self.n, 3)
        self.normals = normals / np.linalg.norm(normals, axis=1, keepdims=True)
        #: Where each sliding contact's spring is anchored, object frame, relative to its contact.
        self.slip = np.zeros((self.n, 3))
        #: Rate of change of :attr:`slip` (object frame): the damper acts relative to the anchor.
        self.slip_rate = np.zeros((self.n, 3))
        #: Distance each contact has slid along the object, m, and time it has been lifted, s.
        self.slip_distance = np.zeros(self.n)
        self.lifted_time = np.zeros(self.n)
        #: Contacts that slid off the object (:data:`LOSS_DISTANCE`): they transmit nothing.
        self.lost = np.zeros(self.n, dtype=bool)
        #: The state :meth:`turn_rig` turns (taken at its first call), or None.
        self._rig = None

    def turn_rig(self, rotation: np.ndarray) -> None:
        """Pose the object and the effectors as the initial rig turned about the object-frame origin.

        The open grippers of a tools-free calibration turn together with the fixture that holds
        the object (``free_tilts``, before ``grasp_time``): a rigid turn of the initial state, at
        rest (the sensors read their tools' weight, not their motion).

        :param rotation: (3, 3) world rotation from the initial state.
        """
        if self._rig is None:
            origin = self.object_frame_pose()[0]
            self._rig = (origin, self.body.position - origin, self.body.rotation.copy(),
                         self.eff_pos - origin, self.eff_rot.copy())
        origin, body, body_rot, eff, eff_rot = self._rig
        rotation = np.asarray(rotation, float)
        self.body.place(origin + rotation @ body, rotation @ body_rot)
        self.eff_pos, self.eff_rot = origin + eff @ rotation.T, rotation @ eff_rot

    def move_contacts(self, positions) -> None:
        """Move the contacts on the object, the effector bodies with them (legs placing a trunk).

        The effectors are carried by the same displacement, so the springs keep their
        stretch: the move itself transmits nothing and slides nothing.

        :param positions: (n, 3) contact points in the object frame.
        """
        positions = np.asarray(positions, dtype=float).reshape(self.n, 3)
        self.eff_pos = self.eff_pos + (positions - self.r) @ self.body.rotation.T
        self.r = positions

    # --- kinematics -------------------------------------------------------------
    def object_frame_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """World pose of the object frame (origin, rotation).

        :return: ``(position (3,), rotation (3, 3))``
        """
        rot = self.body.rotation
        return self.body.position - rot @ self.com, rot

    def object_frame_twist(self) -> tuple[np.ndarray, np.ndarray]:
        """World velocity of the object-frame origin and world angular velocity.

        :return: ``(velocity (3,), omega (3,))``
        """
        lever = -self.body.rotation @ self.com
        return self.body.velocity + cross(self.body.omega, lever), self.body.omega.copy()

    def contact_state(self):
        """World pose and velocity of every contact frame on the object.

        :return: ``(positions (n,3), rotations (n,3,3), velocities (n,3), omegas (n,3))``
        """
        rot = self.body.rotation
        lever = (self.r - self.com) @ rot.T
        pos = self.body.position + lever
        vel = self.body.velocity + cross(self.body.omega, lever)
        return pos, rot @ self.r_rot, vel, np.tile(self.body.omega, (self.n, 1))

    def effector_frames(self) -> np.ndarray:
        """World orientation of each effector (sensor-carrying) frame.

        Rigid-contact effectors have their own orientation; point-contact effectors carry
        no torque and keep the orientation of their contact frame.

        :return: (n, 3, 3)
        """
        _, r_c, _, _ = self.contact_state()
        return np.where(self.rigid[:, None, None], self.eff_rot, r_c)

    # --- wrenches ---------------------------------------------------------------
    def grasp_wrench_world(self) -> np.ndarray:
        """Wrench each grasp applies to the object, world axes about the effector points.

        :return: (n, 6)
        """
        p_c, r_c, v_c, w_c = self.contact_state()
        eff_rot = np.where(self.rigid[:, None, None], self.eff_rot, r_c)
        world = grasp_wrenches(self.grasp_stiffness, self.grasp_damping, self.eff_pos, eff_rot,
                               self.eff_vel, self.eff_omega, self.anchors(p_c), r_c,
                               v_c + self.slip_rate @ self.body.rotation.T, w_c)
        return self._coulomb(world, p_c, r_c, v_c, None)

    def contact_wrenches(self) -> np.ndarray:
        """Wrench each effector applies to the object, in its contact frame about the contact point.

        The truth at the simulator's contacts (the grasp wrench acts where the effector is,
        moved here to the contact point).

        :return: (n, 6)
        """
        p_c, r_c, _, _ = self.contact_state()
        world = self.grasp_wrench_world()
        torque = world[:, 3:] + cross(self.eff_pos - p_c, world[:, :3])
        back = np.swapaxes(r_c, -1, -2)
        return np.concatenate([np.einsum('nij,nj->ni', back, world[:, :3]),
                               np.einsum('nij,nj->ni', back, torque)], axis=-1)

    def anchors(self, p_c: np.ndarray) -> np.ndarray:
        """World points the grasp springs pull on: the contacts, moved by their slip.

        :param p_c: (n, 3) world contact points.
        :return: (n, 3)
        """
        return p_c + self.slip @ self.body.rotation.T

    def _coulomb(self, world: np.ndarray, p_c: np.ndarray, r_c: np.ndarray, v_c: np.ndarray,
                 dt) -> np.ndarray:
        """Cap the forces of point contacts with friction to their cones (lift: no force).

        With ``dt`` given, the spring anchors slide so that the spring keeps only the force
        the cone allows (an elasto-plastic Coulomb contact), and the slip is accounted.

        :param world: (n, 6) spring wrenches, world axes.
        :param p_c: (n, 3) world contact points.
        :param r_c: (n, 3, 3) world contact frames.
        :param v_c: (n, 3) world velocities of the contact points.
        :param dt: the step, or None to leave the state alone.
        :return: (n, 6) transmitted wrenches.
        """
        world = world.copy()
        for i in np.flatnonzero(~np.isnan(self.mu)):
            if self.lost[i]:
                world[i] = 0.0
                continue
            normal = r_c[i] @ self.normals[i]
            force = world[i, :3]
            f_n = float(normal @ force)
            tangential = force - f_n * normal
            size = float(np.linalg.norm(tangential))
            if dt is not None:
                self.slip_rate[i] = 0.0
            if f_n <= 0.0:
                world[i, :3] = 0.0
                if dt is not None:
                    # lifted off: the spring re-engages where the fingertip is now
                    self.lifted_time[i] += dt
                    stretch = self.eff_pos[i] - (p_c[i] + self.body.rotation @ self.slip[i])
                    move = stretch - (normal @ stretch) * normal
                    self._slide(i, move, normal, v_c[i])
            elif size > self.mu[i] * f_n:
                direction = tangential / size
                world[i, :3] = f_n * normal + direction * (self.mu[i] * f_n)
                if dt is not None:
                    # the anchor slides until the spring alone carries mu f_n tangentially
                    anchor = (p_c[i] + self.body.rotation @ self.slip[i])
                    stretch = self.eff_pos[i] - anchor
                    stretch_t = stretch - (normal @ stretch) * normal
                    length = float(np.linalg.norm(stretch_t))
                    allowed = self.mu[i] * f_n / self.compliance.stiffness
                    move = stretch_t * (1.0 - allowed / length) if length > allowed else 0.0 * stretch_t
                    self._slide(i, move, normal, v_c[i])
        if dt is not None:
            self.lost |= np.linalg.norm(self.slip, axis=1) > LOSS_DISTANCE
        return world

    def _slide(self, i: int, move: np.ndarray, normal: np.ndarray, v_c: np.ndarray) -> None:
        """Move contact ``i``'s anchor by ``move`` (world axes).

        While it slides the anchor travels with the fingertip, so the damper sees no tangential
        relative velocity.
        """
        self.slip[i] += self.body.rotation.T @ move
        relative = self.eff_vel[i] - v_c
        self.slip_rate[i] = self.body.rotation.T @ (relative - (normal @ relative) * normal)
        self.slip_distance[i] += float(np.linalg.norm(move))

    def transmitted(self) -> np.ndarray:
        """Wrench each effector applies to the object, in the effector frame about its point.

        This is what an ideal F/T sensor at the effector's contact frame reads with sign +1.

        :return: (n, 6)
        """
        world = self.grasp_wrench_world()
        rot_t = np.swapaxes(self.effector_frames(), -1, -2)
        return np.concatenate([np.einsum('nij,nj->ni', rot_t, world[:, :3]),
                               np.einsum('nij,nj->ni', rot_t, world[:, 3:])], axis=-1)

    # --- dynamics ---------------------------------------------------------------
    def step(self, commands: np.ndarray, dt: float, fixed: bool = False) -> None:
        """Advance by one fixed step with semi-implicit Euler.

        :param commands: (n, 6) wrench each effector is commanded to apply to the object,
            in its effector frame about its attachment point (torques of point contacts ignored).
        :param dt: step, s.
        :param fixed: hold the object in place (a fixture, e.g. the table it rests on before
            the lift); the effectors still move and load their springs.
        """
        commands = np.asarray(commands, dtype=float).reshape(self.n, 6)
        world, frames = self.step_object(dt, fixed)
        cmd_f = np.einsum('nij,nj->ni', frames, commands[:, :3])
        cmd_t = np.einsum('nij,nj->ni', frames, commands[:, 3:])
        # Effectors: command minus the reaction of the grasp at their point (own weight
        # compensated).
        moment = cmd_t - world[:, 3:]
        self.eff_vel = self.eff_vel + dt * (cmd_f - world[:, :3]) / self.effector_mass
        self.eff_pos = self.eff_pos + dt * self.eff_vel
        omega = self.eff_omega + dt * moment / self.effector_inertia
        self.eff_omega = np.where(self.rigid[:, None], omega, self.body.omega)
        self.eff_rot = exp_so3(self.eff_omega * dt) @ self.eff_rot
        self.time += dt

    def set_clock(self, time: float) -> None:
        """Set the simulation time (a node keeps it on its tick grid, free of summed rounding).

        :param time: s.
        """
        self.time = float(time)

    def step_object(self, dt: float, fixed: bool = False) -> tuple:
        """Advance the object alone by one step under the grasp wrenches and gravity.

        :param dt: step, s.
        :param fixed: hold the object in place (see :meth:`step`).
        :return: ``(world, frames)``: the grasp wrenches (n, 6) on the object, world axes
            about the effector points, and the effector frames (n, 3, 3), before the step.
        """
        p_c, r_c, v_c, w_c = self.contact_state()
        frames = np.where(self.rigid[:, None, None], self.eff_rot, r_c)
        world = grasp_wrenches(self.grasp_stiffness, self.grasp_damping, self.eff_pos, frames,
                               self.eff_vel, self.eff_omega, self.anchors(p_c), r_c,
                               v_c + self.slip_rate @ self.body.rotation.T, w_c)
        world = self._coulomb(world, p_c, r_c, v_c, dt)
        self.last_grasp = world
        # Object: grasp wrenches plus gravity.
        force = world[:, :3].sum(axis=0) + self.body.mass * self.gravity
        # A grasp acts where its effector is, as its reaction on the effector does: the pair
        # conserves angular momentum.
        torque = (world[:, 3:] + cross(self.eff_pos - self.body.position,
                                       world[:, :3])).sum(axis=0)
        if fixed:
            self.body.stop()
        else:
            self.body.step(force, torque, dt)
        return world, frames

    def preload(self, commands: np.ndarray, iterations: int = 5) -> None:
        """Place the effectors so that the springs already carry ``commands`` at rest.

        :param commands: (n, 6) as in :meth:`step`.
        :param iterations: fixed-point iterations (the effector frame depends on the twist).
        """
        commands = np.asarray(commands, dtype=float).reshape(self.n, 6)
        p_c, r_c, v_c, w_c = self.contact_state()
        self.eff_vel = v_c.copy()
        self.eff_omega = np.array(w_c)
        c = self.compliance
        self.eff_rot = r_c.copy()
        for _ in range(iterations):
            frames = self.effector_frames()
            f = np.einsum('nij,nj->ni', frames, commands[:, :3])
            t = np.einsum('nij,nj->ni', frames, commands[:, 3:])
            self.eff_pos = p_c + f / c.stiffness
            k_r = c.rot_stiffness if c.rot_stiffness > 0 else np.inf
            phi = np.where(self.rigid[:, None], t / k_r, 0.0)
            self.eff_rot = exp_so3(phi) @ r_c

    # --- invariants -------------------------------------------------------------
    def momentum(self) -> np.ndarray:
        """Return the total linear and angular momentum of object and effectors, about the world origin.

        :return: (6,)
        """
        p = self.effector_mass * self.eff_vel
        angular = cross(self.eff_pos, p).sum(axis=0)
        angular = angular + self.effector_inertia * self.eff_omega[self.rigid].sum(axis=0)
        return self.body.momentum() + np.concatenate([p.sum(axis=0), angular])

    def energy(self) -> float:
        """Kinetic plus elastic plus gravitational (object only) energy, J.

        :return: energy
        """
        p_c, r_c, _, _ = self.contact_state()
        kinetic = self.body.kinetic_energy() + 0.5 * self.effector_mass * float(
            (self.eff_vel ** 2).sum())
        kinetic += 0.5 * self.effector_inertia * float((self.eff_omega[self.rigid] ** 2).sum())
        back = np.swapaxes(r_c, -1, -2)
        frames = np.where(self.rigid[:, None, None], self.eff_rot, r_c)  # as the springs see them
        elastic = spring_energy(self.grasp_stiffness, back @ frames,
                                np.einsum('nij,nj->ni', back, self.eff_pos - self.anchors(p_c)))
        potential = -self.body.mass * float(self.gravity @ self.body.position)
        return kinetic + elastic + potential
