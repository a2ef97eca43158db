"""The compliant grasp: one 6-D spring-damper between an effector and its contact.

One model serves both simulators: the effector bodies of :class:`.simulator.HeldObjectSim`
(isotropic constants, :class:`GraspCompliance`) and the compliant grasps of the arms with
joints (:class:`.closed_chain.Grasp`, six constants in the grasp frame). With ``(R, p)`` the
effector frame ``E`` in the contact frame ``C`` and ``phi = log(R)``, the potential is
``V = 1/2 p^T K_p p + 1/2 phi^T K_r phi`` and the wrench is its exact gradient plus a damper
on the rates of ``p`` and ``phi`` (Appendix B of the closed-chain paper, every direction
free): the springs store energy without creating any. Derivation: ``docs/simulator.md``.
"""
from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Sequence

import numpy as np

from wrench_distribution.core.spatial import cross


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

    def per_axis(self, rigid: np.ndarray) -> tuple:
        """Return the six stiffnesses and dampings of each contact, ``(n, 6)`` each.

        :param rigid: boolean mask (n,), True for rigid contacts (point contacts: no torque).
        :return: ``(stiffness, damping)``
        """
        mask = np.repeat(np.column_stack([np.ones(len(rigid)), rigid]), 3, axis=1)
        stiffness = mask * np.repeat([self.stiffness, self.rot_stiffness], 3)
        damping = mask * np.repeat([self.damping, self.rot_damping], 3)
        return stiffness, damping


def _rotation_vector(rotation: np.ndarray) -> tuple:
    """Return ``(phi, alpha)``: the rotation vector of ``R`` and its Jacobian's coefficient.

    ``phi = t a / sin t`` with ``a = vee(R - R^T) / 2 = sin t u``, ``t = atan2(|a|, cos t)``;
    ``alpha = 1/t^2 - (1 + cos t) / (2 t sin t)`` is the coefficient of ``S(phi)^2`` in
    ``Jlog3 = I + S(phi)/2 + alpha S(phi)^2`` (series below 1e-3 rad, where both cancel).

    :param rotation: (3, 3), turned by less than pi.
    :return: ``([phi_x, phi_y, phi_z], alpha)``, floats.
    :raises ValueError: at a half turn, where the rotation vector has no unique value.
    """
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = rotation.tolist()
    cosine = 0.5 * (r00 + r11 + r22 - 1.0)
    a0, a1, a2 = 0.5 * (r21 - r12), 0.5 * (r02 - r20), 0.5 * (r10 - r01)
    sine = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    angle = math.atan2(sine, cosine)
    square = angle * angle
    if angle < 1e-3:
        scale = 1.0 + square / 6.0 + 7.0 * square * square / 360.0
        alpha = 1.0 / 12.0 + square / 720.0 + square * square / 30240.0
    elif sine > 1e-9:
        scale = angle / sine
        alpha = 1.0 / square - (1.0 + cosine) / (2.0 * angle * sine)
    else:
        raise ValueError('a grasp spring turned by half a revolution has no rotation vector')
    return [scale * a0, scale * a1, scale * a2], alpha


def _log_jacobian_times(phi: list, alpha: float, vector: list, sign: float) -> list:
    """Return ``Jlog3 y`` (``sign`` = 1) or ``Jlog3^T y`` (``sign`` = -1).

    ``Jlog3 = I + S/2 + alpha S^2`` with ``S = S(phi)``; ``S^T = -S``, ``S^2`` symmetric.

    :param phi: the rotation vector.
    :param alpha: its coefficient (:func:`_rotation_vector`).
    :param vector: ``y``, 3 floats.
    :param sign: 1 or -1.
    :return: 3 floats.
    """
    x0, x1, x2 = phi
    y0, y1, y2 = vector
    c0, c1, c2 = x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0
    e0, e1, e2 = x1 * c2 - x2 * c1, x2 * c0 - x0 * c2, x0 * c1 - x1 * c0
    half = 0.5 * sign
    return [y0 + half * c0 + alpha * e0, y1 + half * c1 + alpha * e1, y2 + half * c2 + alpha * e2]


def spring_damper_wrench(stiffness: Sequence[float], damping: Sequence[float],
                         rotation: np.ndarray, translation: np.ndarray,
                         relative_twist: np.ndarray) -> list:
    """Wrench of one 6-D spring-damper on its contact body, at the effector, effector axes.

    ``w = [R^T (K_p p + D_p p'), Jlog3^T (K_r phi + D_r phi')]`` with ``p' = R v_rel`` and
    ``phi' = Jlog3 w_rel``: the gradient of ``V`` along a relative twist of ``E`` is
    ``(R^T K_p p, Jlog3^T K_r phi)``. The effector receives the opposite wrench at the same
    point. Plain float arithmetic: on one grasp it costs a tenth of numpy's call overhead.

    :param stiffness: 6 values ``K`` in ``C``'s axes: N/m then N*m/rad.
    :param damping: 6 values ``D``: N*s/m then N*m*s/rad.
    :param rotation: (3, 3) ``R``, the effector frame's orientation in the contact frame
        (turned by less than pi).
    :param translation: (3,) ``p``, the effector frame's origin in the contact frame.
    :param relative_twist: (6,) the effector frame's twist relative to the contact frame,
        effector axes, ``[linear, angular]``.
    :return: 6 floats ``[force, torque]`` on the contact's body at the effector frame's origin,
        effector axes.
    """
    k0, k1, k2, k3, k4, k5 = stiffness
    d0, d1, d2, d3, d4, d5 = damping
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = rotation.tolist()
    p0, p1, p2 = translation.tolist()
    v0, v1, v2, w0, w1, w2 = relative_twist.tolist()
    pull = [k0 * p0 + d0 * (r00 * v0 + r01 * v1 + r02 * v2),
            k1 * p1 + d1 * (r10 * v0 + r11 * v1 + r12 * v2),
            k2 * p2 + d2 * (r20 * v0 + r21 * v1 + r22 * v2)]
    phi, alpha = _rotation_vector(rotation)
    q0, q1, q2 = _log_jacobian_times(phi, alpha, [w0, w1, w2], 1.0)
    torque = _log_jacobian_times(phi, alpha, [k3 * phi[0] + d3 * q0, k4 * phi[1] + d4 * q1,
                                              k5 * phi[2] + d5 * q2], -1.0)
    return [r00 * pull[0] + r10 * pull[1] + r20 * pull[2],
            r01 * pull[0] + r11 * pull[1] + r21 * pull[2],
            r02 * pull[0] + r12 * pull[1] + r22 * pull[2]] + torque


def spring_damper_wrenches(stiffness: np.ndarray, damping: np.ndarray, rotation: np.ndarray,
                           translation: np.ndarray, relative_twist: np.ndarray) -> np.ndarray:
    """:func:`spring_damper_wrench` of ``n`` grasps.

    :param stiffness: (n, 6)
    :param damping: (n, 6)
    :param rotation: (n, 3, 3)
    :param translation: (n, 3)
    :param relative_twist: (n, 6)
    :return: (n, 6)
    """
    return np.array([spring_damper_wrench(*grasp) for grasp in zip(
        np.asarray(stiffness, dtype=float).tolist(), np.asarray(damping, dtype=float).tolist(),
        rotation, translation, relative_twist)], dtype=float).reshape(-1, 6)


def spring_energy(stiffness: np.ndarray, rotation: np.ndarray, translation: np.ndarray) -> float:
    """Return the potential ``V`` stored in the springs of :func:`spring_damper_wrench`.

    :param stiffness: (n, 6) ``K``.
    :param rotation: (n, 3, 3) ``R``.
    :param translation: (n, 3) ``p``.
    :return: J, summed over the springs.
    """
    deflection = np.concatenate([np.asarray(translation, dtype=float).reshape(-1, 3),
                                 [_rotation_vector(turn)[0] for turn in rotation]], axis=-1)
    return 0.5 * float(np.sum(np.asarray(stiffness, dtype=float) * deflection ** 2))


def grasp_wrenches(compliance: GraspCompliance, rigid: np.ndarray,
                   effector_position: np.ndarray, effector_rotation: np.ndarray,
                   effector_velocity: np.ndarray, effector_omega: np.ndarray,
                   contact_position: np.ndarray, contact_rotation: np.ndarray,
                   contact_velocity: np.ndarray, contact_omega: np.ndarray) -> np.ndarray:
    """Wrenches that the grasp springs apply to the object, world axes, at the effector points.

    :func:`spring_damper_wrenches` between each effector frame and its contact frame, the
    contact frame moving with the contact point's velocity and the object's angular
    velocity. The effector receives the opposite wrench at the same point.

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
        effector point.
    """
    offset = effector_position - contact_position
    back = np.swapaxes(effector_rotation, -1, -2)
    linear = effector_velocity - contact_velocity - cross(contact_omega, offset)
    twist = np.concatenate([np.einsum('nij,nj->ni', back, linear),
                            np.einsum('nij,nj->ni', back, effector_omega - contact_omega)],
                           axis=-1)
    stiffness, damping = compliance.per_axis(rigid)
    local = spring_damper_wrenches(
        stiffness, damping, np.swapaxes(contact_rotation, -1, -2) @ effector_rotation,
        np.einsum('nji,nj->ni', contact_rotation, offset), twist)
    return np.concatenate([np.einsum('nij,nj->ni', effector_rotation, local[:, :3]),
                           np.einsum('nij,nj->ni', effector_rotation, local[:, 3:])], axis=-1)
