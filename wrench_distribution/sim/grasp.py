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

import numpy as np

from wrench_distribution.core.spatial import cross, log_so3, log_so3_jacobian


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


def spring_damper_wrenches(stiffness: np.ndarray, damping: np.ndarray, rotation: np.ndarray,
                           translation: np.ndarray, relative_twist: np.ndarray) -> np.ndarray:
    """Wrenches of 6-D spring-dampers on their contact bodies, at the effector, effector axes.

    ``w = [R^T (K_p p + D_p p'), Jlog3^T (K_r phi + D_r phi')]`` with ``p' = R v_rel`` and
    ``phi' = Jlog3 w_rel``: the gradient of ``V`` along a relative twist of ``E`` is
    ``(R^T K_p p, Jlog3^T K_r phi)``. The effector receives the opposite wrench at the same
    point.

    :param stiffness: (n, 6) ``K``, in ``C``'s axes: N/m then N*m/rad.
    :param damping: (n, 6) ``D``: N*s/m then N*m*s/rad.
    :param rotation: (n, 3, 3) ``R``, the effector frame's orientation in the contact frame
        (rotation angle below pi).
    :param translation: (n, 3) ``p``, the effector frame's origin in the contact frame.
    :param relative_twist: (n, 6) the effector frame's twist relative to the contact frame,
        effector axes, ``[linear, angular]``.
    :return: (n, 6) ``[force, torque]`` on the contact's body at the effector frame's origin,
        effector axes.
    """
    angle = log_so3(rotation)
    jacobian = log_so3_jacobian(angle)
    position_rate = np.einsum('nij,nj->ni', rotation, relative_twist[:, :3])
    angle_rate = np.einsum('nij,nj->ni', jacobian, relative_twist[:, 3:])
    force = np.einsum('nji,nj->ni', rotation,
                      stiffness[:, :3] * translation + damping[:, :3] * position_rate)
    torque = np.einsum('nji,nj->ni', jacobian,
                       stiffness[:, 3:] * angle + damping[:, 3:] * angle_rate)
    return np.concatenate([force, torque], axis=-1)


def spring_energy(stiffness: np.ndarray, rotation: np.ndarray, translation: np.ndarray) -> float:
    """Return the potential ``V`` stored in the springs of :func:`spring_damper_wrenches`.

    :param stiffness: (n, 6) ``K``.
    :param rotation: (n, 3, 3) ``R``.
    :param translation: (n, 3) ``p``.
    :return: J, summed over the springs.
    """
    deflection = np.concatenate([np.asarray(translation, dtype=float), log_so3(rotation)],
                                axis=-1)
    return 0.5 * float(np.sum(stiffness * deflection ** 2))


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
