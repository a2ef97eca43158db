"""Readings at rest for the calibration tests, derived by hand (not from the package's model).

Statics, written out: a sensor with sign +1 reads the wrench it applies to what lies beyond it
(tool and object). The tool, at rest, is held by the sensor against its weight ``m g`` acting
at ``c``, and pushes on the object with ``h``: the sensor's wrench on the tool is
``h (moved to the sensor) - [m g; c x m g]``. A wrench is moved from the contact to the sensor
frame by inverting ``f' = R f, t' = R t + p x (R f)``: ``f = R^T f'``, ``t = R^T (t' - p x f')``.
A sign of -1 reads the reaction. The bias adds; white noise adds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

G = np.array([0.0, 0.0, -9.81])
NOISE = np.array([0.05] * 3 + [0.003] * 3)


@dataclass
class Tool:
    """The truth of one sensor and its tool."""

    sign: int
    mass: float
    com: np.ndarray             # sensor frame
    bias: np.ndarray            # (6,)
    position: np.ndarray        # sensor origin in the contact frame
    configured: Rotation        # sensor orientation in the contact frame, as configured
    mounting: Rotation          # true orientation = configured * mounting

    @property
    def true_rotation(self) -> np.ndarray:
        """Return the true orientation of the sensor in the contact frame."""
        return (self.configured * self.mounting).as_matrix()


def read(tool: Tool, applied: np.ndarray, g_contact: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Return the readings (k, 6) of ``tool``'s sensor: ``applied`` (k, 6) on the object at the contact."""
    rs = tool.true_rotation
    g_sensor = g_contact @ rs                                     # R_s^T g, row-wise
    f, t = applied[:, :3], applied[:, 3:]
    f_s = f @ rs
    t_s = (t - np.cross(tool.position, f)) @ rs
    weight = tool.mass * g_sensor
    held = np.concatenate([f_s - weight, t_s - np.cross(tool.com, weight)], axis=1)
    return tool.sign * held + tool.bias + rng.normal(size=held.shape) * NOISE


def tilts(count: int, degrees: float = 35.0) -> list:
    """``count`` orientations of a tool or an object, spread over two axes."""
    out = [Rotation.identity()]
    for j in range(1, count):
        angle = 2 * np.pi * (j - 1) / max(count - 1, 1)
        out.append(Rotation.from_rotvec(np.radians(degrees) * np.array([np.cos(angle), np.sin(angle), 0.0])))
    return out


def free_phase(tool: Tool, flange_rotations: list, samples: int, rng: np.random.Generator,
               bump: int = 0) -> tuple:
    """Read a free tool at rest in each flange orientation (contact frame in the world).

    :param bump: samples of the third pose hit by a 20 N, 1 N m knock.
    :return: ``(readings (k, 6), gravity in the contact frame (k, 3), pose labels (k,))``.
    """
    readings, gravity, labels = [], [], []
    for j, rotation in enumerate(flange_rotations):
        g_contact = np.tile(rotation.inv().apply(G), (samples, 1))
        r = read(tool, np.zeros((samples, 6)), g_contact, rng)
        if bump and j == 2:
            r[:bump] += [20.0, -15.0, 10.0, 1.0, -1.0, 0.5]
        readings.append(r)
        gravity.append(g_contact)
        labels.append(np.full(samples, j))
    return np.concatenate(readings), np.concatenate(gravity), np.concatenate(labels)


def held_phase(tools: list, contacts: np.ndarray, mass: float, com: np.ndarray,
               object_rotations: list, samples: int, rng: np.random.Generator,
               squeeze: float = 15.0) -> tuple:
    """Read an object held at rest by the tools, with an internal load, in each orientation.

    :param contacts: (n, 7) contact poses in the object frame.
    :return: ``(readings (k, n, 6), gravity in the object frame (k, 3), labels (k,))``.
    """
    n = len(tools)
    readings, gravity, labels = [], [], []
    rotations = [Rotation.from_quat(c[3:]) for c in contacts]
    for j, rotation in enumerate(object_rotations):
        g_object = rotation.inv().apply(G)
        weight = mass * g_object
        need = -np.concatenate([weight, np.cross(com, weight)])    # sum of contact wrenches, object origin
        world = np.zeros((n, 6))                                   # object frame, about the origin
        forces = rng.normal(size=(n - 1, 3)) * squeeze             # the internal load's share
        world[:-1, :3] = forces
        world[:-1, 3:] = np.cross(contacts[:-1, :3], forces)       # no torque about those contacts
        world[-1] = need - world[:-1].sum(axis=0)
        per_sensor = np.zeros((samples, n, 6))
        for i, tool in enumerate(tools):
            p, r = contacts[i, :3], rotations[i].as_matrix()
            f_c = r.T @ world[i, :3]
            t_c = r.T @ (world[i, 3:] - np.cross(p, world[i, :3]))
            g_contact = np.tile(r.T @ g_object, (samples, 1))
            per_sensor[:, i] = read(tool, np.tile(np.concatenate([f_c, t_c]), (samples, 1)), g_contact, rng)
        readings.append(per_sensor)
        gravity.append(np.tile(g_object, (samples, 1)))
        labels.append(np.full(samples, j))
    return np.concatenate(readings), np.concatenate(gravity), np.concatenate(labels)
