"""A two-arm cell moved as a UR5e moves it, and what its wrist F/T sensors read: Newton-Euler by hand.

Written for the calibration tests from physics, not from the package's sensor model. The grasp
frame (the object frame: the contacts are fixed in it) rests in a pose for a second, then moves to
the next along a minimum-jerk path (``s = 10 u^3 - 15 u^4 + 6 u^5``) about a fixed axis, its
origin translated along a line, no faster than a UR5e's default joint acceleration (1.4 rad/s^2)
and tool acceleration (1.2 m/s^2) allow.

Each tool (what hangs between a sensor and the object) is a rigid body of mass ``m``, centre of
mass ``c`` (true sensor frame) and inertia ``I`` about it. Its free-body diagram: the sensor's
wrench on it ``(F, T)`` (at the sensor origin), its weight ``m g`` at the centre of mass, and the
object's reaction ``(-f, -t)`` at the contact when it holds the object with ``(f, t)``:

    ``F = m (a_c - g) + f``
    ``T = I_w alpha + omega x I_w omega + (x_c - x_s) x m (a_c - g) + t + (x_k - x_s) x f``

with ``a_c = a_o + alpha x r + omega x (omega x r)`` the centre of mass's acceleration (``r`` from
the grasp frame's origin), ``I_w = R_s I R_s^T``, ``x_s``, ``x_c``, ``x_k`` the sensor origin,
the centre of mass and the contact point (world). The object, of mass ``M``, centre of mass ``C``
and inertia ``J``, needs ``M (a_C - g)`` and ``J_w alpha + omega x J_w omega`` about ``C``; the
contacts share that with an internal load (a squeeze along the line joining them, a shear, a
twist) that changes from rest to rest. A sensor of sign +1 reads ``(F, T)`` in its true frame
(the configured orientation times its mounting rotation); -1 the reaction. Bias, white noise and
knocks (bursts of a few newtons) add.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np
from scipy.spatial.transform import Rotation

G = np.array([0.0, 0.0, -9.81])
#: UR5e defaults (PolyScope): joint acceleration (rad/s^2) and tool acceleration (m/s^2)
JOINT_ACCELERATION = 1.4
TOOL_ACCELERATION = 1.2
#: peak of the minimum-jerk profile's second derivative, per unit distance and unit duration
MIN_JERK_PEAK = 10.0 / np.sqrt(3.0)


@dataclass
class Body:
    """A rigid body: mass (kg), centre of mass (its frame, m), inertia about it (its axes)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass
class Tool:
    """One wrist sensor and its tool: the truth."""

    sign: int
    body: Body                   # in the true sensor frame
    bias: np.ndarray             # (6,)
    position: np.ndarray         # sensor origin in the contact frame
    configured: Rotation         # sensor orientation in the contact frame, as configured
    mounting: Rotation           # true orientation = configured * mounting

    @property
    def orientation(self) -> Rotation:
        """Return the true orientation of the sensor in the contact frame."""
        return self.configured * self.mounting


@dataclass
class Cell:
    """Two contacts fixed in the grasp frame, their tools, the object, the noise."""

    contacts: np.ndarray                 # (n, 7) contact poses in the grasp frame
    tools: List[Tool]
    box: Body
    noise: np.ndarray                    # (6,) one standard deviation per channel
    bump_fraction: float = 0.05
    bump_force: tuple = (2.0, 8.0)       # N, range of a knock's force
    bump_torque: tuple = (0.1, 0.4)      # N m


def box_inertia(mass: float, sides) -> np.ndarray:
    """Inertia of a solid box about its centre (kg m^2)."""
    a, b, c = sides
    return mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def done_when_cell() -> Cell:
    """Return the issue's cell: tools of 0.62 and 1.15 kg, biases of 3 to 12 N, sensors turned 1.4 and 2.9 deg.

    A 3.7 kg box held at y = +-0.2 m, 0.3 N and 0.015 N m of noise, 5 % of the samples knocked.
    """
    down = Rotation.from_euler('x', 90, degrees=True)          # contact z into the box
    contacts = np.array([[0.0, 0.2, 0.0, *down.as_quat()],
                         [0.0, -0.2, 0.0, *Rotation.from_euler('x', -90, degrees=True).as_quat()]])
    first = Tool(-1, Body(0.62, np.array([0.004, -0.008, 0.055]), box_inertia(0.62, (0.08, 0.06, 0.11))),
                 np.array([3.1, -7.4, 11.8, 0.21, -0.37, 0.12]), np.array([0.0, 0.0, -0.09]),
                 Rotation.identity(), Rotation.from_rotvec(np.radians(1.4) * np.array([0.6, -0.8, 0.0])))
    second = Tool(-1, Body(1.15, np.array([-0.01, 0.005, 0.082]), box_inertia(1.15, (0.1, 0.08, 0.16))),
                  np.array([-5.3, 4.2, -8.9, -0.15, 0.28, -0.44]), np.array([0.0, 0.0, -0.11]),
                  Rotation.from_euler('z', 90, degrees=True),
                  Rotation.from_rotvec(np.radians(2.9) * np.array([0.0, 0.6, 0.8])))
    box = Body(3.7, np.array([0.015, -0.02, 0.04]), box_inertia(3.7, (0.3, 0.4, 0.2)))
    return Cell(contacts, [first, second], box, np.array([0.3] * 3 + [0.015] * 3))


# -- motion ------------------------------------------------------------------------------------
@dataclass
class Motion:
    """The grasp frame's motion in world, sampled.

    ``rest`` is the rest's index at samples where the frame is still, -1 while it moves.
    """

    stamps: np.ndarray            # (k,) s
    rotation: Rotation            # (k,) grasp frame in world
    position: np.ndarray          # (k, 3)
    omega: np.ndarray             # (k, 3) angular velocity, world
    alpha: np.ndarray             # (k, 3) angular acceleration, world
    acceleration: np.ndarray      # (k, 3) the origin's acceleration, world
    rest: np.ndarray              # (k,)


def min_jerk(u: np.ndarray) -> tuple:
    """Return the minimum-jerk profile and its first two derivatives, on ``u`` in [0, 1]."""
    return (10 * u ** 3 - 15 * u ** 4 + 6 * u ** 5, 30 * u ** 2 - 60 * u ** 3 + 30 * u ** 4,
            60 * u - 180 * u ** 2 + 120 * u ** 3)


def move_duration(angle: float, distance: float, reach: float) -> float:
    """Return the shortest minimum-jerk move within the UR5e's default accelerations.

    :param angle: rotation of the move (rad); the wrist joints turn by about as much.
    :param distance: translation of the grasp frame's origin (m).
    :param reach: farthest tool point from the origin (m): it swings by ``angle * reach``.
    """
    return float(max(np.sqrt(MIN_JERK_PEAK * angle / JOINT_ACCELERATION),
                     np.sqrt(MIN_JERK_PEAK * (distance + angle * reach) / TOOL_ACCELERATION), 0.2))


def path(poses: list, rate: float, rest_s: float = 1.0, reach: float = 0.35) -> Motion:
    """Rest ``rest_s`` in each pose ``(Rotation, position)``, minimum-jerk moves between them."""
    dt = 1.0 / rate
    parts = []
    for j, (rotation, position) in enumerate(poses):
        if j:
            parts.append(_move(poses[j - 1], (rotation, position), dt, reach))
        k = int(round(rest_s * rate))
        parts.append((Rotation.concatenate([rotation] * k), np.tile(position, (k, 1)), np.zeros((k, 3)),
                      np.zeros((k, 3)), np.zeros((k, 3)), np.full(k, j)))
    rotation = Rotation.concatenate([p[0] for p in parts])
    arrays = [np.concatenate([p[i] for p in parts]) for i in range(1, 6)]
    return Motion(np.arange(len(rotation)) * dt, rotation, *arrays)


def _move(start: tuple, end: tuple, dt: float, reach: float) -> tuple:
    """Sample a minimum-jerk move about a fixed axis (world), the origin along a line."""
    axis_angle = (end[0] * start[0].inv()).as_rotvec()              # world frame: R(t) = exp(s phi) R_0
    shift = np.asarray(end[1], float) - np.asarray(start[1], float)
    duration = move_duration(np.linalg.norm(axis_angle), np.linalg.norm(shift), reach)
    k = max(int(np.ceil(duration / dt)), 2)
    u = (np.arange(k) + 1) / (k + 1)                                 # strictly between the rests
    total = (k + 1) * dt
    s, ds, dds = min_jerk(u)
    rotation = Rotation.from_rotvec(np.outer(s, axis_angle)) * start[0]
    position = np.asarray(start[1], float) + np.outer(s, shift)
    return (rotation, position, np.outer(ds / total, axis_angle), np.outer(dds / total ** 2, axis_angle),
            np.outer(dds / total ** 2, shift), np.full(k, -1))


# -- what the sensors read ---------------------------------------------------------------------
def _cross(a, b):
    return np.cross(a, b)


def object_needs(box: Body, motion: Motion) -> tuple:
    """Return the force and the torque about the object's centre of mass that move it (world), (k, 3) each."""
    lever = motion.rotation.apply(box.com)
    a_com = motion.acceleration + _cross(motion.alpha, lever) + _cross(motion.omega, _cross(motion.omega, lever))
    inertia = motion.rotation.as_matrix() @ box.inertia @ motion.rotation.as_matrix().transpose(0, 2, 1)
    spin = np.einsum('kij,kj->ki', inertia, motion.omega)
    torque = np.einsum('kij,kj->ki', inertia, motion.alpha) + _cross(motion.omega, spin)
    return box.mass * (a_com - G), torque, motion.position + lever


def contact_wrenches(cell: Cell, motion: Motion, loads: np.ndarray) -> np.ndarray:
    """Return the wrench each contact applies to the object, world, at its contact point: (k, n, 6).

    :param loads: (k, 6) the internal load, object frame: contact 0 adds it (about the object's
        centre of mass), contact 1 takes it away; half the object's needs each.
    """
    force, torque, centre = object_needs(cell.box, motion)
    loads = np.concatenate([motion.rotation.apply(loads[:, :3]), motion.rotation.apply(loads[:, 3:])], axis=1)
    points = [motion.position + motion.rotation.apply(c[:3]) for c in cell.contacts]
    out = np.zeros((len(force), 2, 6))
    for i, sign in enumerate((1.0, -1.0)):
        f = force / 2 + sign * loads[:, :3]
        about_centre = torque / 2 + sign * loads[:, 3:]
        out[:, i, :3] = f
        out[:, i, 3:] = about_centre - _cross(points[i] - centre, f)
    return out


def readings(cell: Cell, motion: Motion, held: Optional[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Return what each sensor reads, (k, n, 6): its tool's free-body diagram, the contact's wrench if held.

    :param held: (k, n, 6) the contact wrenches on the object (world, at the contact points), or
        None with the tools free.
    """
    k = len(motion.stamps)
    out = np.zeros((k, len(cell.tools), 6))
    for i, tool in enumerate(cell.tools):
        contact = cell.contacts[i]
        frame = motion.rotation * Rotation.from_quat(contact[3:])            # contact frame in world
        sensor = frame * tool.orientation                                     # true sensor frame in world
        x_k = motion.position + motion.rotation.apply(contact[:3])
        x_s = x_k + frame.apply(tool.position)
        x_c = x_s + sensor.apply(tool.body.com)
        lever = x_c - motion.position
        a_c = (motion.acceleration + _cross(motion.alpha, lever)
               + _cross(motion.omega, _cross(motion.omega, lever)))
        push = tool.body.mass * (a_c - G)
        matrix = sensor.as_matrix()
        inertia = matrix @ tool.body.inertia @ matrix.transpose(0, 2, 1)
        spin = np.einsum('kij,kj->ki', inertia, motion.omega)
        force = push.copy()
        torque = (np.einsum('kij,kj->ki', inertia, motion.alpha) + _cross(motion.omega, spin)
                  + _cross(x_c - x_s, push))
        if held is not None:
            force += held[:, i, :3]
            torque += held[:, i, 3:] + _cross(x_k - x_s, held[:, i, :3])
        local = np.concatenate([sensor.inv().apply(force), sensor.inv().apply(torque)], axis=1)
        out[:, i] = tool.sign * local + tool.bias + rng.normal(size=(k, 6)) * cell.noise
        out[:, i] += knocks(cell, k, rng)
    return out


def knocks(cell: Cell, k: int, rng: np.random.Generator, burst: int = 10) -> np.ndarray:
    """Bursts of ``burst`` samples hit by a knock, ``bump_fraction`` of the samples in all, (k, 6)."""
    out = np.zeros((k, 6))
    for start in rng.choice(max(k - burst, 1), size=int(round(cell.bump_fraction * k / burst)), replace=False):
        direction = rng.normal(size=6)
        force = direction[:3] / np.linalg.norm(direction[:3]) * rng.uniform(*cell.bump_force)
        torque = direction[3:] / np.linalg.norm(direction[3:]) * rng.uniform(*cell.bump_torque)
        out[start:start + burst] += np.concatenate([force, torque])
    return out


def internal_loads(motion: Motion, rng: np.random.Generator, squeeze=(15.0, 30.0)) -> np.ndarray:
    """Draw internal loads (object frame): a squeeze along y (the line joining the contacts), a shear, a twist.

    Constant at each rest, a new level drawn for each; along a move, the minimum-jerk blend of the
    two rests' levels.
    """
    rests = int(motion.rest.max()) + 1
    levels = np.zeros((rests, 6))
    levels[:, 1] = rng.uniform(*squeeze, size=rests)            # contact 0 at +y pushes towards -y
    levels[:, 1] *= -1.0
    levels[:, [0, 2]] = rng.normal(size=(rests, 2)) * 2.0
    levels[:, 3:] = rng.normal(size=(rests, 3)) * 0.3
    out = np.zeros((len(motion.stamps), 6))
    index = np.maximum.accumulate(np.where(motion.rest >= 0, motion.rest, 0))
    following = np.minimum(index + 1, rests - 1)
    moving = motion.rest < 0
    blend = np.zeros(len(out))
    if moving.any():  # each move's progress from its start to its end
        starts = np.flatnonzero(moving & ~np.r_[False, moving[:-1]])
        ends = np.flatnonzero(moving & ~np.r_[moving[1:], False])
        for a, b in zip(starts, ends):
            blend[a:b + 1] = min_jerk((np.arange(b - a + 1) + 1) / (b - a + 2))[0]
    out[:] = levels[index] * (1 - blend[:, None]) + levels[following] * blend[:, None]
    return out


def tilts(count: int, degrees: float, first_axis_deg: float = 0.0) -> list:
    """``count`` grasp-frame orientations: level, then tilted by ``degrees`` about horizontal axes."""
    out = [Rotation.identity()]
    for j in range(1, count):
        angle = np.radians(first_axis_deg) + 2 * np.pi * (j - 1) / max(count - 1, 1)
        out.append(Rotation.from_rotvec(np.radians(degrees) * np.array([np.cos(angle), np.sin(angle), 0.0])))
    return out
