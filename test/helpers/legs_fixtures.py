"""Legs and hands for the contact-weight tests: a trunk on four point feet, three arms, a hand.

The references are independent of the weights' code: the resultant of the commands by hand
(``F = sum f_i``, ``T = sum (p_i - c) x f_i + t_i``, object axes), and the commands of an engine
built *without* the contacts a weight 0 removes (what weight 0 must equal, docs/theory.md 16).
"""
from typing import Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from wrench_distribution.config import load_distributor_config
from wrench_distribution.engine.distribution import DistributionEngine

FEET = ('lf', 'rf', 'lh', 'rh')
#: Feet in the trunk frame (m): a 0.6 x 0.4 rectangle 0.4 below the centre of mass.
FOOT_POSITIONS = np.array([[0.3, 0.2, -0.4], [0.3, -0.2, -0.4], [-0.3, 0.2, -0.4], [-0.3, -0.2, -0.4]])
TRUNK_MASS = 20.0
GRAVITY = 9.81
UPRIGHT = np.tile([0.0, 0.0, 0.0, 1.0], (4, 1))


def trunk_params(**extra) -> dict:
    """Return distributor parameters of the trunk: point feet with friction, holding its weight.

    Commands in object axes, friction auto, ``on_timeout: hold_object_weight``; ``extra`` overrides.
    """
    params = {'effectors': list(FEET), 'contact_source': 'topic', 'contact_types': ['point'] * 4,
              'object_com': [0.0, 0.0, 0.0], 'command_frame': 'object', 'friction_mode': 'auto',
              'friction_coefficients': [0.8] * 4, 'contact_normals': [0.0, 0.0, 1.0] * 4,
              'hold_object_weight': True, 'object_mass': TRUNK_MASS, 'gravity': [0.0, 0.0, -GRAVITY],
              'on_timeout': 'hold_object_weight', 'force_limits': [1e4], 'torque_limits': [1e3],
              'desired_force_limit': 1e3, 'desired_torque_limit': 1e3, 'internal_load_limit': 1e3,
              'contact_transition_time': 0.1, 'input_timeout': 0.5}
    params.update(extra)
    return params


def shifted_feet(foot: int, share: float = 0.2) -> np.ndarray:
    """Return the feet as the trunk sees them once it leaned away from ``foot``.

    The feet move by ``share`` of the lifted foot's offset: the centre of mass is then inside
    the triangle of the other three (the body shift before a step).
    """
    positions = FOOT_POSITIONS.copy()
    positions[:, :2] += share * FOOT_POSITIONS[foot, :2]
    return positions


def resultant(commands: np.ndarray, positions: np.ndarray, com: Sequence[float]) -> np.ndarray:
    """Return the resultant about the centre of mass of commands in object axes (by hand)."""
    commands = np.asarray(commands, float)
    lever = np.asarray(positions, float) - np.asarray(com, float)
    return np.concatenate([commands[:, :3].sum(0), commands[:, 3:].sum(0) + np.cross(lever, commands[:, :3]).sum(0)])


def weight_support() -> np.ndarray:
    """Return what the feet apply to hold the trunk's weight: ``[0, 0, m g, 0, 0, 0]``."""
    return np.array([0.0, 0.0, TRUNK_MASS * GRAVITY, 0.0, 0.0, 0.0])


def started_engine(params: dict, positions: np.ndarray, quaternions: np.ndarray) -> DistributionEngine:
    """Return an engine of ``params`` with its contacts in place."""
    engine = DistributionEngine(load_distributor_config(params))
    update = engine.offer_contacts(positions, quaternions, 0)
    assert update.rebuilt and update.refusal is None, update
    return engine


def subset_commands(params: dict, positions: np.ndarray, quaternions: np.ndarray, keep: Sequence[bool],
                    wrench=np.zeros(6)) -> np.ndarray:
    """Return the (n, 6) commands of an engine built with only the contacts ``keep`` (zero rows elsewhere).

    Every per-effector parameter is cut to the kept effectors: this engine never hears of the
    others, so it is what weight 0 must reproduce.
    """
    keep = np.asarray(keep, bool)
    n = len(params['effectors'])
    cut = dict(params)
    for name, width in (('effectors', 1), ('contact_types', 1), ('friction_coefficients', 1),
                        ('contact_normals', 3), ('force_limits', 1), ('torque_limits', 1),
                        ('contact_positions', 3), ('contact_orientations', 4)):
        values = params.get(name)
        if values is not None and len(values) == n * width:
            cut[name] = [v for v, k in zip(values, np.repeat(keep, width)) if k]
    cut.pop('contact_weights', None)
    engine = started_engine(cut, positions[keep], quaternions[keep])
    out = engine.step(1, wrench, 0, 1).commands
    assert out is not None
    full = np.zeros((n, 6))
    full[keep] = out
    return full


def finger_pose(angle: float, radius: float, height: float = 0.0) -> tuple:
    """Return the position and quaternion of a fingertip on a ball, its z axis pointing inward."""
    position = np.array([radius * np.cos(angle), radius * np.sin(angle), height])
    inward = -position / np.linalg.norm(position)
    rotation, _ = Rotation.align_vectors([inward], [[0.0, 0.0, 1.0]])
    return position, rotation.as_quat()
