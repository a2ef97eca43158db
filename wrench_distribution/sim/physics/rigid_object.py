"""State and Newton-Euler integration of one free rigid body."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wrench_distribution.core.spatial import cross, exp_so3


@dataclass
class RigidBody:
    """A rigid body: pose and twist of its centre of mass in the world frame.

    :param mass: kg, positive.
    :param inertia: inertia tensor about the centre of mass in body axes, (3, 3).
    :param position: world position of the centre of mass.
    :param rotation: world orientation of the body axes, (3, 3).
    :param velocity: world linear velocity of the centre of mass.
    :param omega: world angular velocity.
    """

    mass: float
    inertia: np.ndarray
    position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    omega: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        self.inertia = np.asarray(self.inertia, dtype=float).reshape(3, 3)
        self.inertia_inv = np.linalg.inv(self.inertia)
        for name in ('position', 'velocity', 'omega'):
            setattr(self, name, np.asarray(getattr(self, name), dtype=float).copy())
        self.rotation = np.asarray(self.rotation, dtype=float).copy()

    def place(self, position: np.ndarray, rotation: np.ndarray) -> None:
        """Put the body at a pose (a rig that turns it), its twist unchanged.

        :param position: world position of the centre of mass.
        :param rotation: world orientation, (3, 3).
        """
        self.position = np.asarray(position, dtype=float).copy()
        self.rotation = np.asarray(rotation, dtype=float).copy()

    def stop(self) -> None:
        """Hold the body still: zero twist (it is fixed)."""
        self.velocity = np.zeros(3)
        self.omega = np.zeros(3)

    def world_inertia(self) -> np.ndarray:
        """Inertia tensor about the centre of mass in world axes.

        :return: (3, 3)
        """
        return self.rotation @ self.inertia @ self.rotation.T

    def step(self, force: np.ndarray, torque: np.ndarray, dt: float) -> None:
        """Advance by ``dt`` with semi-implicit (symplectic) Euler.

        The linear and the angular momentum (about the centre of mass, world axes) are
        updated first from the world force and torque, then the pose from the new
        velocities; the orientation moves on SO(3) by the exponential map. Updating the
        angular momentum rather than the angular velocity keeps it exactly constant when
        no torque acts (Euler's gyroscopic term is implicit in ``L = R I R^T w``).

        :param force: total world force on the body, N.
        :param torque: total world torque about the centre of mass, N*m.
        :param dt: time step, s.
        """
        angular = self.world_inertia() @ self.omega + dt * np.asarray(torque, dtype=float)
        self.velocity = self.velocity + dt * np.asarray(force, dtype=float) / self.mass
        omega_mid = self.rotation @ (self.inertia_inv @ (self.rotation.T @ angular))
        self.position = self.position + dt * self.velocity
        self.rotation = exp_so3(omega_mid * dt) @ self.rotation
        self.omega = self.rotation @ (self.inertia_inv @ (self.rotation.T @ angular))

    def momentum(self) -> np.ndarray:
        """Linear momentum and angular momentum about the world origin.

        :return: (6,) ``[p, L]``
        """
        p = self.mass * self.velocity
        angular = self.world_inertia() @ self.omega + cross(self.position, p)
        return np.concatenate([p, angular])

    def kinetic_energy(self) -> float:
        """Return the translational plus rotational kinetic energy, J.

        :return: energy
        """
        return 0.5 * self.mass * float(self.velocity @ self.velocity) + 0.5 * float(
            self.omega @ self.world_inertia() @ self.omega)
