"""The object of a closed chain and the grasps that tie the arms to it.

The seed's coupling through the held object (closed-chain paper, eqs. 4.9c-h, 3.1): the
object's free acceleration (2.4), the compliant grasps' spring-damper wrenches (Appendix B,
:func:`.grasp.spring_damper_wrench`), the rigid grasps' wrenches from
``Omega f = ...`` with Baumgarte's term and, where ``Omega`` is singular, Aghili's
minimum-norm multipliers, and the corrections of every acceleration. Per arm the algebra is a
handful of 6-vector and 6 x 6 products (``ndarray.dot``: at two to four arms, cheaper than
one batched ``einsum`` over the arms). Derivation: ``docs/simulator.md``, "Arms with joints:
closed-chain dynamics". Simulator only (Pinocchio, ``pip install .[sim]``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.linalg import lapack

from .arm_models import pinocchio
from .chain_arms import FlangeTerms
from .grasp import spring_damper_wrench


def minimum_norm_solve(omega: np.ndarray, right: np.ndarray, rcond: float) -> np.ndarray:
    """Return the minimum-norm least-squares solution of ``omega x = right``.

    ``omega`` is symmetric positive semi-definite (seed eq. 3.1); its null space is the
    internal load no joint resists (Aghili, eq. 32 and Remark 4: the Lagrange multipliers
    are determined up to it), which the pseudo-inverse leaves out.

    :param omega: (6l, 6l) operational-space coupling.
    :param right: (6l,) right-hand side of (4.9d).
    :param rcond: eigenvalues below ``rcond`` times the largest count as zero.
    :return: (6l,) constraint wrenches.
    """
    factor, info = lapack.dpotrf(omega, lower=1)  # the regular case: Cholesky
    if info == 0:
        pivots = factor.diagonal().tolist()
        if min(pivots) ** 2 > rcond * 1e3 * max(pivots) ** 2:  # well away from singular
            return lapack.dpotrs(factor, right, lower=1)[0]
    eigenvalues, eigenvectors = np.linalg.eigh(omega)
    keep = eigenvalues > rcond * eigenvalues[-1]
    basis = eigenvectors[:, keep]
    return basis @ ((basis.T @ right) / eigenvalues[keep])


_NO_ERROR = [0.0] * 6


def _closure_terms(flange: np.ndarray, object_at_flange: np.ndarray, error: list,
                   frequency: float) -> list:
    """Return ``V x (B V(C)) + 2 w (V - B V(C)) + w^2 e``: a grasp's row of (4.9d) but accelerations.

    The spatial cross product ``[v, w] x [v', w'] = [w x v' + v x w', w x w']`` (the transport
    of the object's twist to the moving flange) and Baumgarte's terms, in plain float
    arithmetic: on six numbers it costs less than numpy's or Pinocchio's call overhead.

    :param flange: 6, the flange's twist ``V = [v, w]``.
    :param object_at_flange: 6, the object's twist at the flange ``B V(C) = [v', w']``.
    :param error: 6 floats, the closure error ``e`` (:meth:`GraspCoupling.closure`).
    :param frequency: Baumgarte's ``w``, rad/s.
    :return: 6 floats.
    """
    v0, v1, v2, w0, w1, w2 = flange.tolist()
    x0, x1, x2, y0, y1, y2 = object_at_flange.tolist()
    rate, square = 2.0 * frequency, frequency * frequency
    return [w1 * x2 - w2 * x1 + v1 * y2 - v2 * y1 + rate * (v0 - x0) + square * error[0],
            w2 * x0 - w0 * x2 + v2 * y0 - v0 * y2 + rate * (v1 - x1) + square * error[1],
            w0 * x1 - w1 * x0 + v0 * y1 - v1 * y0 + rate * (v2 - x2) + square * error[2],
            w1 * y2 - w2 * y1 + rate * (w0 - y0) + square * error[3],
            w2 * y0 - w0 * y2 + rate * (w1 - y1) + square * error[4],
            w0 * y1 - w1 * y0 + rate * (w2 - y2) + square * error[5]]


class GraspCoupling:
    """The held object and the grasps: contact wrenches and corrected accelerations.

    :param object_inertia: the object's spatial inertia in its own frame.
    :param grasps: one :class:`.closed_chain.Grasp` per arm.
    :param gravity: gravity in the world, m/s^2.
    :param stabilisation_frequency: Baumgarte's ``w``, rad/s (0: off).
    :param rcond: relative eigenvalue below which ``Omega`` counts as singular.
    """

    def __init__(self, object_inertia: pinocchio.Inertia, grasps: Sequence,
                 gravity: np.ndarray, stabilisation_frequency: float, rcond: float) -> None:
        self.object_inertia = object_inertia
        self.object_mass_matrix = object_inertia.matrix()
        self.object_inverse_mass = np.linalg.inv(self.object_mass_matrix)
        self.grasps = list(grasps)
        self.rigid = [index for index, grasp in enumerate(self.grasps) if grasp.rigid]
        self.compliant = [index for index, grasp in enumerate(self.grasps) if not grasp.rigid]
        self.gravity = np.asarray(gravity, dtype=float)
        self._gravity = pinocchio.Motion(self.gravity, np.zeros(3))
        self.stabilisation_frequency = float(stabilisation_frequency)
        self.rcond = float(rcond)
        self._placements = [grasp.object_to_grasp for grasp in self.grasps]
        self._actions = [grasp.object_to_grasp.action for grasp in self.grasps]
        self._stiffness = [np.asarray(self.grasps[index].stiffness, dtype=float).tolist()
                           for index in self.compliant]
        self._damping = [[0.0] * 6 if self.grasps[index].damping is None
                         else np.asarray(self.grasps[index].damping, dtype=float).tolist()
                         for index in self.compliant]

    def accelerations(self, terms: FlangeTerms, placement: pinocchio.SE3,
                      velocity: np.ndarray) -> tuple:
        """Seed algorithm 4.9: contact wrenches, corrected joint and object accelerations.

        :param terms: the arms' free dynamics (4.9a-b).
        :param placement: the object's placement in the world.
        :param velocity: 6, the object's LOCAL twist.
        :return: ``(joint accelerations per arm, object acceleration (6,), (l, 6) wrenches
            on the object at the flanges in flange axes, every arm's B_i = Ad(fMo))``.
        """
        placements = [flange.actInv(placement) for flange in terms.placements]
        couplings = [flange_to_object.action for flange_to_object in placements]
        joint = list(terms.free)
        wrenches = np.zeros((len(couplings), 6))
        object_wrench = None
        if self.compliant:
            object_wrench = self._springs(terms, placements, couplings, velocity, joint,
                                          wrenches)
        object_free = self.object_free_acceleration(placement, velocity, object_wrench)
        if not self.rigid:
            return joint, object_free, wrenches, couplings
        stacked = np.concatenate([couplings[index] for index in self.rigid])
        forces = minimum_norm_solve(
            self._omega(terms, stacked),
            self._right(terms, placements, velocity, stacked, object_free),
            self.rcond)
        for row, index in enumerate(self.rigid):  # (4.9e-h)
            force = forces[6 * row:6 * row + 6]
            joint[index] = joint[index] - terms.inverse_mass_jacobians[index].dot(force)
            wrenches[index] = force
        body = object_free + self.object_inverse_mass.dot(stacked.T.dot(forces))
        return joint, body, wrenches, couplings

    def object_free_acceleration(self, placement: pinocchio.SE3, velocity: np.ndarray,
                                 wrench: np.ndarray | None) -> np.ndarray:
        """Object's acceleration under gravity and ``wrench`` alone (LOCAL).

        ``M(C)^-1 (f - b(C))`` of seed eq. 2.4 with the weight ``M(C) [R^T g; 0]`` in ``f``.

        :param placement: the object's placement in the world.
        :param velocity: 6, its LOCAL twist.
        :param wrench: 6, the compliant grasps' wrenches on it, object frame (None: none).
        :return: 6, LOCAL.
        """
        bias = self.object_inertia.vxiv(pinocchio.Motion(velocity)).vector  # V x* (M V)
        if wrench is not None:
            bias -= wrench
        # the weight M(C) [R^T g; 0] alone accelerates the object by [R^T g; 0]
        return placement.actInv(self._gravity).vector - self.object_inverse_mass.dot(bias)

    def _springs(self, terms: FlangeTerms, placements: list, couplings: list,
                 velocity: np.ndarray, joint: list, wrenches: np.ndarray) -> np.ndarray:
        """Compliant grasps' spring-damper wrenches; their reactions enter the free dynamics.

        :param terms: the arms' terms.
        :param placements: every arm's ``fMo``, the object in the flange frame.
        :param couplings: every arm's ``B_i``.
        :param velocity: 6, the object's LOCAL twist.
        :param joint: joint accelerations, corrected in place (4.9e with the spring's
            reaction).
        :param wrenches: (l, 6), filled in place at the compliant rows.
        :return: 6, the springs' wrench on the object, object frame.
        """
        springs = []
        for row, index in enumerate(self.compliant):
            relative = (placements[index] * self._placements[index]).inverse()  # gMf
            springs.append(spring_damper_wrench(
                self._stiffness[row], self._damping[row], relative.rotation, relative.translation,
                terms.velocities[index] - couplings[index].dot(velocity)))
        springs = np.array(springs)
        for row, index in enumerate(self.compliant):
            joint[index] = joint[index] - terms.inverse_mass_jacobians[index].dot(springs[row])
            wrenches[index] = springs[row]
        stacked = np.concatenate([couplings[index] for index in self.compliant])
        return stacked.T.dot(springs.ravel())

    def _omega(self, terms: FlangeTerms, stacked: np.ndarray) -> np.ndarray:
        """Return ``Omega = diag(J_i M_i^-1 J_i^T) + A M(C)^-1 A^T`` over the rigid grasps (3.1).

        :param terms: the arms' terms.
        :param stacked: (6r, 6) the rigid grasps' ``B_i``, stacked.
        :return: (6r, 6r)
        """
        omega = np.zeros((len(stacked), len(stacked)))
        for row, index in enumerate(self.rigid):
            block = slice(6 * row, 6 * row + 6)
            omega[block, block] = terms.jacobians[index].dot(terms.inverse_mass_jacobians[index])
        omega += stacked.dot(self.object_inverse_mass).dot(stacked.T)
        return omega

    def _right(self, terms: FlangeTerms, placements: list, velocity: np.ndarray,
               stacked: np.ndarray, object_free: np.ndarray) -> np.ndarray:
        """Right-hand side of ``Omega f = ...`` (4.9d) over the rigid grasps, with Baumgarte's.

        The closure of grasp ``i`` in the flange frame reads
        ``J_i theta'' + J'_i theta' - B_i alpha(C) + V_i x (B_i V(C)) = a*_i`` with
        Baumgarte's ``a*_i = -2 w e'_i - w^2 e_i``, ``e'_i = V_i - B_i V(C)``.

        :param terms: the arms' terms.
        :param placements: every arm's ``fMo``, the object in the flange frame.
        :param velocity: 6, the object's LOCAL twist.
        :param stacked: (6r, 6) the rigid grasps' ``B_i``, stacked.
        :param object_free: 6, the object's free acceleration.
        :return: (6r,)
        """
        frequency = self.stabilisation_frequency
        object_at_flanges = stacked.dot(velocity)  # B_i V(C), stacked
        terms_rows = []
        for row, index in enumerate(self.rigid):
            # e_i = log6((X_o G_i)^-1 F_i) = -log6(fMo G_i)
            error = (-pinocchio.log6(placements[index] * self._placements[index]).vector).tolist() \
                if frequency else _NO_ERROR
            terms_rows += _closure_terms(terms.velocities[index],
                                         object_at_flanges[6 * row:6 * row + 6], error, frequency)
        return np.concatenate([terms.accelerations[index] for index in self.rigid]) \
            + terms_rows - stacked.dot(object_free)

    def closure(self, index: int, flange: pinocchio.SE3,
                object_placement: pinocchio.SE3) -> np.ndarray:
        """Return ``log6`` of the flange in its grasp frame (zero when the chain is closed).

        :param index: arm index.
        :param flange: flange placement in the world.
        :param object_placement: object placement in the world.
        :return: 6, ``[translation, rotation]`` error.
        """
        return pinocchio.log6((object_placement * self._placements[index]).actInv(flange)).vector

    def to_grasp_frames(self, couplings: list, wrenches: np.ndarray) -> np.ndarray:
        """Express wrenches given at each flange in each grasp frame.

        ``Ad(fMg) = B_i Ad(G_i)`` maps the grasp frame's twist to the flange, so its
        transpose maps the flange's wrench to the grasp frame.

        :param couplings: every arm's ``B_i = Ad(fMo)``.
        :param wrenches: (l, 6) at the flanges, flange axes.
        :return: (l, 6) at the grasp frames, grasp axes.
        """
        return np.array([action.T.dot(coupling.T.dot(wrench)) for action, coupling, wrench
                         in zip(self._actions, couplings, wrenches)])

    def impulse(self, terms: FlangeTerms, couplings: list, violation: np.ndarray) -> tuple:
        """Return the mass-weighted minimum-norm change that cancels ``violation``.

        Aghili's projection (his eqs. 8-10, 39) through the same ``Omega+``:
        ``Omega lambda = violation``, ``dq_i = -M_i^-1 J_i^T lambda_i``,
        ``dxi = M(C)^-1 sum B_i^T lambda_i``.

        :param terms: the arms' terms.
        :param couplings: every arm's ``B_i``.
        :param violation: (6r,) stacked over the rigid grasps, flange frames.
        :return: ``({arm index: joint change}, object change (6,))``.
        """
        stacked = np.concatenate([couplings[index] for index in self.rigid])
        impulse = minimum_norm_solve(self._omega(terms, stacked), violation, self.rcond)
        changes = {index: -terms.inverse_mass_jacobians[index].dot(impulse[6 * row:6 * row + 6])
                   for row, index in enumerate(self.rigid)}
        return changes, self.object_inverse_mass.dot(stacked.T.dot(impulse))
