"""The compliant grasp: a spring-damper between an effector body and its contact."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wrench_distribution.core.spatial import log_so3


@dataclass(frozen=True)
class GraspCompliance:
    """Stiffness and damping of the grasp (isotropic, in any frame).

    A ``rigid`` contact couples all six degrees of freedom; a ``point`` contact only the
    three translations, so it transmits a pure force.

    :param stiffness: translational stiffness, N/m.
    :param damping: translational damping, N*s/m.
    :param rot_stiffness: rotational stiffness, N*m/rad (rigid contacts).
    :param rot_damping: rotational damping, N*m*s/rad (rigid contacts).
    """

    stiffness: float = 1.0e4
    damping: float = 100.0
    rot_stiffness: float = 100.0
    rot_damping: float = 0.6


def grasp_wrenches(compliance: GraspCompliance, rigid: np.ndarray,
                   effector_position: np.ndarray, effector_rotation: np.ndarray,
                   effector_velocity: np.ndarray, effector_omega: np.ndarray,
                   contact_position: np.ndarray, contact_rotation: np.ndarray,
                   contact_velocity: np.ndarray, contact_omega: np.ndarray) -> np.ndarray:
    """Wrenches that the grasp springs apply to the object, world axes about the contacts.

    ``f = k (p_e - p_c) + c (v_e - v_c)`` and, for rigid contacts,
    ``t = k_r log(R_e R_c^T) + c_r (w_e - w_c)``. The effector receives the opposite
    wrench at the same point (action and reaction).

    :param compliance: spring and damper constants.
    :param rigid: boolean mask (n,), True for rigid contacts.
    :param effector_position: (n, 3) world positions of the effector attachment points.
    :param effector_rotation: (n, 3, 3) world orientations of the effectors.
    :param effector_velocity: (n, 3)
    :param effector_omega: (n, 3)
    :param contact_position: (n, 3) world positions of the contact points on the object.
    :param contact_rotation: (n, 3, 3) world orientations of the contact frames.
    :param contact_velocity: (n, 3) world velocities of the contact points on the object.
    :param contact_omega: (n, 3) angular velocity of the object, repeated.
    :return: (n, 6) wrenches ``[f, t]`` applied to the object, world axes, about each
        contact point.
    """
    c = compliance
    force = c.stiffness * (effector_position - contact_position) + c.damping * (
        effector_velocity - contact_velocity)
    angle = log_so3(effector_rotation @ np.swapaxes(contact_rotation, -1, -2))
    torque = c.rot_stiffness * angle + c.rot_damping * (effector_omega - contact_omega)
    torque = np.where(np.asarray(rigid)[:, None], torque, 0.0)
    return np.concatenate([force, torque], axis=-1)
