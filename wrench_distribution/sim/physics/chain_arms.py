"""The arms of a closed chain, each on its own: open-chain dynamics and kinematics.

The seed's free dynamics (closed-chain paper, eqs. 4.9a-b): per arm, what it would do if it
held nothing, and the terms the coupling through the object needs (flange Jacobian,
``M^-1 J^T``, flange twist and acceleration). One kinematic sweep per arm and evaluation:
ABA in the WORLD convention leaves behind the placements, the joint Jacobians, the
articulated inertias that ``computeMinverse(model, data)`` reuses, and the joints' spatial
accelerations, whose value at the flange is ``J a_f + J' v``. Derivation: ``docs/simulator.md``, "Arms with
joints: closed-chain dynamics". Simulator only (Pinocchio, ``pip install .[sim]``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .arm_models import ArmModel, pinocchio

_LOCAL = pinocchio.ReferenceFrame.LOCAL
_WORLD = pinocchio.Convention.WORLD


class FlangeTerms:
    """Every arm's open-chain terms at one state (seed eqs. 4.9a-b), flange frames, LOCAL.

    Lists with one entry per arm.

    :param free: joint accelerations ``theta_f''`` of (4.9a) under the given torques.
    :param jacobians: flange Jacobians ``J`` (6, nv).
    :param inverse_mass_jacobians: ``M^-1 J^T`` (nv, 6).
    :param velocities: flange twists ``V(0) = J theta'`` (6,).
    :param accelerations: flange accelerations ``alpha_f(0) = J theta_f'' + J' theta'`` of
        (4.9b) (6,).
    :param placements: flange placements in the world (``pinocchio.SE3``).
    """

    __slots__ = ('free', 'jacobians', 'inverse_mass_jacobians', 'velocities',
                 'accelerations', 'placements')

    def __init__(self, free: list, jacobians: list, inverse_mass_jacobians: list,
                 velocities: list, accelerations: list, placements: list) -> None:
        self.free = free
        self.jacobians = jacobians
        self.inverse_mass_jacobians = inverse_mass_jacobians
        self.velocities = velocities
        self.accelerations = accelerations
        self.placements = placements


class FreeArms:
    """Open-chain dynamics and kinematics of several fixed-base arms (Pinocchio's C++).

    :param arms: the arms (:func:`.arm_models.load_arm`).
    :param gravity: gravity in the world, m/s^2.
    :raises ValueError: for an arm with more joint positions than velocities.
    """

    def __init__(self, arms: Sequence[ArmModel], gravity: np.ndarray) -> None:
        self.arms = list(arms)
        self.models = [pinocchio.Model(arm.model) for arm in self.arms]
        for model in self.models:
            model.gravity = pinocchio.Motion(np.asarray(gravity, dtype=float), np.zeros(3))
        self.datas = [model.createData() for model in self.models]
        if any(model.nq != model.nv for model in self.models):
            raise ValueError('every arm needs as many joint positions as velocities')
        self.sizes = [model.nv for model in self.models]
        self._frames = [arm.flange_frame for arm in self.arms]
        self._joints = [model.frames[frame].parentJoint
                        for model, frame in zip(self.models, self._frames)]
        self._zeros = [np.zeros(size) for size in self.sizes]
        # each Data's joint spatial accelerations, WORLD (a view that follows the Data)
        self._joint_accelerations = [data.oa for data in self.datas]

    def terms(self, q: Sequence[np.ndarray], v: Sequence[np.ndarray],
              torques: Sequence[np.ndarray]) -> FlangeTerms:
        """Free dynamics of every arm under ``torques`` (seed eqs. 4.9a-b).

        :param q: joint positions, per arm.
        :param v: joint velocities, per arm.
        :param torques: joint torques, per arm.
        :return: the arms' terms at their flanges.
        """
        free, jacobians, inverse_mass_jacobians = [], [], []
        velocities, accelerations, placements = [], [], []
        aba, minverse = pinocchio.aba, pinocchio.computeMinverse
        frame_jacobian, frame_placement = pinocchio.getFrameJacobian, pinocchio.updateFramePlacement
        for model, data, frame, joint, joint_accelerations, positions, rates, torque in zip(
                self.models, self.datas, self._frames, self._joints, self._joint_accelerations,
                q, v, torques):
            free.append(aba(model, data, positions, rates, torque, _WORLD))
            placement = frame_placement(model, data, frame)
            # the flange's spatial acceleration under a_f: J a_f + J' v (4.9b)
            accelerations.append(placement.actInv(joint_accelerations[joint]).vector)
            jacobian = frame_jacobian(model, data, frame, _LOCAL)
            jacobians.append(jacobian)
            inverse_mass_jacobians.append(minverse(model, data).dot(jacobian.T))
            velocities.append(jacobian.dot(rates))
            placements.append(placement)
        return FlangeTerms(free, jacobians, inverse_mass_jacobians, velocities, accelerations,
                           placements)

    def kinematic_terms(self, q: Sequence[np.ndarray], v: Sequence[np.ndarray]) -> FlangeTerms:
        """Return the terms at zero torque (the projection needs no more than them).

        :param q: joint positions, per arm.
        :param v: joint velocities, per arm.
        :return: the arms' terms at their flanges.
        """
        return self.terms(q, v, self._zeros)

    def flange_placement(self, index: int, q: np.ndarray) -> pinocchio.SE3:
        """Return arm ``index``'s flange placement in the world at ``q``.

        :param index: arm index.
        :param q: its joint positions.
        :return: a copy of the placement.
        """
        model, data = self.models[index], self.datas[index]
        pinocchio.framesForwardKinematics(model, data, q)
        return data.oMf[self._frames[index]].copy()

    def integrate(self, index: int, q: np.ndarray, change: np.ndarray) -> np.ndarray:
        """Return arm ``index``'s joint positions moved by ``change``.

        :param index: arm index.
        :param q: joint positions.
        :param change: joint displacement.
        :return: the new joint positions.
        """
        return pinocchio.integrate(self.models[index], q, change)

    def energy(self, q: Sequence[np.ndarray], v: Sequence[np.ndarray]) -> float:
        """Return the arms' kinetic plus gravity potential energy.

        :param q: joint positions, per arm.
        :param v: joint velocities, per arm.
        :return: J (potential zero at the world origin's height).
        """
        total = 0.0
        for model, data, positions, rates in zip(self.models, self.datas, q, v):
            total += pinocchio.computeKineticEnergy(model, data, positions, rates)
            total += pinocchio.computePotentialEnergy(model, data, positions)
        return float(total)

    def reach(self, index: int, q: np.ndarray, target: pinocchio.SE3, tolerance: float,
              iterations: int) -> np.ndarray:
        """Inverse kinematics of one arm's flange onto ``target``, within the joint limits.

        Damped Gauss-Newton on ``log6`` (Aghili's eq. 39 with a damped pseudo-inverse).

        :param index: arm index.
        :param q: starting joint positions.
        :param target: the flange's wanted placement in the world.
        :param tolerance: largest accepted ``|log6|``.
        :param iterations: most Newton steps.
        :return: the joint positions.
        :raises ValueError: when the target is not reached.
        """
        model, data = self.models[index], self.datas[index]
        frame = self._frames[index]
        lower, upper = model.lowerPositionLimit, model.upperPositionLimit
        for _ in range(iterations):
            pinocchio.framesForwardKinematics(model, data, q)
            error = pinocchio.log6(data.oMf[frame].actInv(target)).vector
            if np.linalg.norm(error) < tolerance:
                return q
            jacobian = pinocchio.Jlog6(data.oMf[frame].actInv(target)) @ \
                pinocchio.computeFrameJacobian(model, data, q, frame, _LOCAL)
            damping = 1e-12 + 1e-4 * min(1.0, float(error @ error))
            step = np.zeros(model.nv)
            for _ in range(2):  # a second pass without the joints held at their limits
                free = ~(((q <= lower) & (step < 0)) | ((q >= upper) & (step > 0)))
                columns = jacobian * free
                step = columns.T @ np.linalg.solve(
                    columns @ columns.T + damping * np.eye(6), error)
            q = np.clip(pinocchio.integrate(model, q, step), lower, upper)
        raise ValueError(f'arm {self.arms[index].name} cannot reach its grasp '
                         f'(|log6| = {np.linalg.norm(error):.3g} after {iterations} steps)')
