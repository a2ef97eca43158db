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


def _rotation_vector(rotation: list) -> tuple:
    """Return ``(phi, alpha)``: the rotation vector of ``R`` and its Jacobian's coefficient.

    ``phi = t a / sin t`` with ``a = vee(R - R^T) / 2 = sin t u``, ``t = atan2(|a|, cos t)``;
    ``alpha = 1/t^2 - (1 + cos t) / (2 t sin t)`` is the coefficient of ``S(phi)^2`` in
    ``Jlog3 = I + S(phi)/2 + alpha S(phi)^2`` (series below 1e-3 rad, where both cancel).

    :param rotation: ``R``, 9 floats row by row, turned by less than pi.
    :return: ``([phi_x, phi_y, phi_z], alpha)``, floats.
    :raises ValueError: at a half turn, where the rotation vector has no unique value.
    """
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = rotation
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


def _times(matrix: list, vector: list) -> list:
    """Return ``M x`` for ``M`` given as 9 floats row by row."""
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = matrix
    x0, x1, x2 = vector
    return [m00 * x0 + m01 * x1 + m02 * x2, m10 * x0 + m11 * x1 + m12 * x2,
            m20 * x0 + m21 * x1 + m22 * x2]


def _transpose_times(matrix: list, vector: list) -> list:
    """Return ``M^T x`` for ``M`` given as 9 floats row by row."""
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = matrix
    x0, x1, x2 = vector
    return [m00 * x0 + m10 * x1 + m20 * x2, m01 * x0 + m11 * x1 + m21 * x2,
            m02 * x0 + m12 * x1 + m22 * x2]


def _spring_damper(stiffness: Sequence[float], damping: Sequence[float], rotation: list,
                   translation: list, linear: list, angular: list) -> list:
    """Return the wrench of :func:`spring_damper_wrench`, computed on floats.

    :param stiffness: 6 floats.
    :param damping: 6 floats.
    :param rotation: ``R``, 9 floats row by row.
    :param translation: ``p``, 3 floats.
    :param linear: ``v_rel``, 3 floats.
    :param angular: ``w_rel``, 3 floats.
    :return: 6 floats, ``[force, torque]``.
    """
    k0, k1, k2, k3, k4, k5 = stiffness
    d0, d1, d2, d3, d4, d5 = damping
    p0, p1, p2 = translation
    rate0, rate1, rate2 = _times(rotation, linear)  # p'
    phi, alpha = _rotation_vector(rotation)
    q0, q1, q2 = _log_jacobian_times(phi, alpha, angular, 1.0)  # phi'
    return _transpose_times(rotation, [k0 * p0 + d0 * rate0, k1 * p1 + d1 * rate1,
                                       k2 * p2 + d2 * rate2]) \
        + _log_jacobian_times(phi, alpha, [k3 * phi[0] + d3 * q0, k4 * phi[1] + d4 * q1,
                                           k5 * phi[2] + d5 * q2], -1.0)


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
    twist = relative_twist.tolist()
    return _spring_damper(stiffness, damping, rotation.ravel().tolist(), translation.tolist(),
                          twist[:3], twist[3:])


def spring_energy(stiffness: np.ndarray, rotation: np.ndarray, translation: np.ndarray) -> float:
    """Return the potential ``V`` stored in the springs of :func:`spring_damper_wrench`.

    :param stiffness: (n, 6) ``K``.
    :param rotation: (n, 3, 3) ``R``.
    :param translation: (n, 3) ``p``.
    :return: J, summed over the springs.
    """
    turns = np.asarray(rotation, dtype=float).reshape(-1, 9).tolist()
    deflection = np.concatenate([np.asarray(translation, dtype=float).reshape(-1, 3),
                                 [_rotation_vector(turn)[0] for turn in turns]], axis=-1)
    return 0.5 * float(np.sum(np.asarray(stiffness, dtype=float) * deflection ** 2))


def grasp_wrenches(stiffness: np.ndarray, damping: np.ndarray,
                   effector_position: np.ndarray, effector_rotation: np.ndarray,
                   effector_velocity: np.ndarray, effector_omega: np.ndarray,
                   contact_position: np.ndarray, contact_rotation: np.ndarray,
                   contact_velocity: np.ndarray, contact_omega: np.ndarray) -> np.ndarray:
    """Wrenches that the grasp springs apply to the object, world axes, at the effector points.

    :func:`spring_damper_wrench` between each effector frame and its contact frame, the
    contact frame moving with the contact point's velocity and the object's angular
    velocity: ``R = R_c^T R_e``, ``p = R_c^T (p_e - p_c)``, ``v_rel = R_e^T (v_e - v_c -
    w_c x (p_e - p_c))``, ``w_rel = R_e^T (w_e - w_c)``. The effector receives the opposite
    wrench at the same point.

    :param stiffness: (n, 6) per contact (:meth:`GraspCompliance.per_axis`).
    :param damping: (n, 6) per contact.
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
    out = []
    for stiff, damp, e_position, e_rotation, e_velocity, e_omega, c_position, c_rotation, \
            c_velocity, c_omega in zip(
                np.asarray(stiffness, dtype=float).tolist(),
                np.asarray(damping, dtype=float).tolist(), effector_position.tolist(),
                effector_rotation.reshape(-1, 9).tolist(), effector_velocity.tolist(),
                effector_omega.tolist(), contact_position.tolist(),
                contact_rotation.reshape(-1, 9).tolist(), contact_velocity.tolist(),
                contact_omega.tolist()):
        o0, o1, o2 = [e - c for e, c in zip(e_position, c_position)]  # p_e - p_c
        w0, w1, w2 = c_omega
        linear = [e_velocity[0] - c_velocity[0] - (w1 * o2 - w2 * o1),
                  e_velocity[1] - c_velocity[1] - (w2 * o0 - w0 * o2),
                  e_velocity[2] - c_velocity[2] - (w0 * o1 - w1 * o0)]
        columns = [_transpose_times(c_rotation, e_rotation[column::3]) for column in range(3)]
        local = _spring_damper(
            stiff, damp, [value for row in zip(*columns) for value in row],  # R_c^T R_e
            _transpose_times(c_rotation, [o0, o1, o2]), _transpose_times(e_rotation, linear),
            _transpose_times(e_rotation, [e - c for e, c in zip(e_omega, c_omega)]))
        out.append(_times(e_rotation, local[:3]) + _times(e_rotation, local[3:]))
    return np.array(out, dtype=float).reshape(-1, 6)
