"""Closed-chain dynamics of several arms with joints holding one rigid object.

The seed's general algorithm (closed-chain paper, eqs. 4.9a-h, the analytical solution
3.1-3.6): Pinocchio gives each arm's open-chain dynamics (ABA, ``M^-1``, Jacobians), the
object is one rigid body, and the coupling ``Omega`` through the object is an ``l x l``
block system solved here, with gravity, compliant grasps (Appendix B: a free grasp whose
force is a 6-D spring-damper), Baumgarte stabilisation of the closure (or, as an option,
Aghili's projection) and the minimum-norm constraint forces of Aghili's projection where
``Omega`` is singular. Integration: classical RK4 on the object's SE(3) chart.
Derivation: ``docs/simulator.md``, "Arms with joints: closed-chain dynamics".
Simulator only: never imported by the nodes, the core, the engines or the bag tools.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

import numpy as np
from scipy.linalg import lapack

from .arm_models import ArmModel, pinocchio

_LOCAL = pinocchio.ReferenceFrame.LOCAL


@dataclass(frozen=True)
class Grasp:
    """Where an arm's flange holds the object, and how stiffly.

    :param object_to_grasp: placement of the arm's flange frame in the object frame.
    :param stiffness: 6 values in the grasp frame, N/m then N*m/rad; None for a rigid grasp.
    :param damping: 6 values, N*s/m then N*m*s/rad (compliant grasps only; None = 0).
    """

    object_to_grasp: pinocchio.SE3
    stiffness: Optional[np.ndarray] = None
    damping: Optional[np.ndarray] = None

    @property
    def rigid(self) -> bool:
        """:return: True for a rigid grasp, one given no stiffness."""
        return self.stiffness is None


@dataclass
class ChainState:
    """State of the arms and the object.

    :param q: joint positions, per arm.
    :param v: joint velocities, per arm.
    :param object_placement: object frame in the world.
    :param object_velocity: 6, the object's spatial velocity in its own frame (Pinocchio
        LOCAL: linear, angular).
    """

    q: list
    v: list
    object_placement: pinocchio.SE3
    object_velocity: np.ndarray = field(default_factory=lambda: np.zeros(6))


@dataclass(frozen=True)
class ChainAccelerations:
    """Accelerations and contact wrenches at one state.

    :param joint: joint accelerations, per arm.
    :param object: 6, the object's spatial acceleration, LOCAL (derivative of
        ``object_velocity``).
    :param grasp_wrenches: (l, 6) wrench each arm applies ON THE OBJECT at its grasp frame,
        expressed in the grasp frame, ``[force, torque]``: the existing simulator's
        convention (``Simulator.transmitted``, what an ideal flange F/T sensor reads with
        sign +1 when it sits at the grasp frame). For a rigid grasp where ``Omega`` is
        singular, the minimum-norm one.
    """

    joint: list
    object: np.ndarray  # noqa: A003 (the contract's name)
    grasp_wrenches: np.ndarray


@dataclass
class _ArmTerms:
    """One arm's open-chain terms at one state (seed eqs. 4.9a-b), flange frame LOCAL."""

    free_acceleration: np.ndarray  # theta_f'' of (4.9a)
    jacobian: np.ndarray  # J (6, nv)
    inverse_mass_jacobian: np.ndarray  # M^-1 J^T (nv, 6)
    flange_velocity: np.ndarray  # V(0) = J theta'
    flange_bias: np.ndarray  # J' theta'
    flange_placement: pinocchio.SE3


def _spring_wrench(grasp: Grasp, grasp_to_flange: pinocchio.SE3,
                   relative_velocity: np.ndarray) -> np.ndarray:
    """Wrench the grasp spring-damper applies to the object, at the flange, flange axes.

    Potential ``V = 1/2 p^T K_p p + 1/2 phi^T K_r phi`` with ``(R, p)`` the flange in the
    grasp frame and ``phi = log(R)``; its exact gradient along the relative twist is
    ``(R^T K_p p, Jlog3^T K_r phi)``, so the spring stores energy without creating any.

    :param grasp: a compliant grasp.
    :param grasp_to_flange: placement of the flange in the grasp frame.
    :param relative_velocity: flange twist relative to the grasp frame, flange frame.
    :return: 6, the wrench on the object at the flange (the arm receives its opposite).
    """
    rotation = grasp_to_flange.rotation
    angle = pinocchio.log3(rotation)
    log_jacobian = pinocchio.Jlog3(rotation)
    stiffness = np.asarray(grasp.stiffness)
    damping = np.zeros(6) if grasp.damping is None else np.asarray(grasp.damping)
    position_rate = rotation @ relative_velocity[:3]
    angle_rate = log_jacobian @ relative_velocity[3:]
    force = rotation.T @ (stiffness[:3] * grasp_to_flange.translation
                          + damping[:3] * position_rate)
    torque = log_jacobian.T @ (stiffness[3:] * angle + damping[3:] * angle_rate)
    return np.concatenate([force, torque])


def _minimum_norm_solve(omega: np.ndarray, right: np.ndarray, rcond: float) -> np.ndarray:
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
        pivots = np.diagonal(factor)
        if pivots.min() ** 2 > rcond * 1e3 * pivots.max() ** 2:  # well away from singular
            return lapack.dpotrs(factor, right, lower=1)[0]
    eigenvalues, eigenvectors = np.linalg.eigh(omega)
    keep = eigenvalues > rcond * eigenvalues[-1]
    basis = eigenvectors[:, keep]
    return basis @ ((basis.T @ right) / eigenvalues[keep])


def _check_grasps(arms: Sequence[ArmModel], grasps: Sequence[Grasp]) -> None:
    """Raise ValueError for a grasp list that does not fit the arms.

    :param arms: the arms.
    :param grasps: one grasp per arm.
    """
    if len(arms) < 1 or len(grasps) != len(arms):
        raise ValueError(f'need one grasp per arm: {len(arms)} arms, {len(grasps)} grasps')
    for arm, grasp in zip(arms, grasps):
        for name in ('stiffness', 'damping'):
            values = getattr(grasp, name)
            if values is None:
                continue
            values = np.asarray(values, dtype=float)
            if values.shape != (6,) or not np.all(np.isfinite(values)) or np.any(values < 0):
                raise ValueError(f'grasp {name} of {arm.name} must be 6 finite values >= 0,'
                                 f' got {values!r}')
        if grasp.rigid and grasp.damping is not None:
            raise ValueError(f'grasp of {arm.name}: damping needs a stiffness (rigid grasp)')


class ClosedChain:
    """Arms with joints holding one rigid object: forward dynamics and integration.

    :param arms: the arms (:func:`.arm_models.load_arm`).
    :param object_inertia: the object's spatial inertia in its own frame.
    :param grasps: one per arm.
    :param gravity: gravity in the world, m/s^2 (arms, grippers and object).
    :param stabilisation_frequency: Baumgarte's natural frequency ``w``, rad/s: a rigid
        grasp's closure error ``e`` obeys ``e'' + 2 w e' + w^2 e = 0`` (0 switches it off).
    :param rcond: relative eigenvalue below which ``Omega`` counts as singular.
    :param projection_tolerance: when > 0 (m, rad), Aghili's projection after every step:
        velocities back onto the closed chain, and positions too when the closure error
        exceeds the tolerance (see :meth:`_project`); 0 switches it off.
    """

    def __init__(self, arms: Sequence[ArmModel], object_inertia: pinocchio.Inertia,
                 grasps: Sequence[Grasp], gravity: Sequence[float] = (0.0, 0.0, -9.81),
                 stabilisation_frequency: float = 20.0, rcond: float = 1e-10,
                 projection_tolerance: float = 0.0) -> None:
        _check_grasps(arms, grasps)
        for name, value in (('stabilisation_frequency', stabilisation_frequency),
                            ('projection_tolerance', projection_tolerance)):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f'{name} must be finite and >= 0, got {value!r}')
        self.projection_tolerance = float(projection_tolerance)
        self.arms = list(arms)
        self.grasps = list(grasps)
        self.gravity = np.asarray(gravity, dtype=float)
        self.models = [pinocchio.Model(arm.model) for arm in self.arms]
        for model in self.models:
            model.gravity = pinocchio.Motion(self.gravity, np.zeros(3))
        self.datas = [model.createData() for model in self.models]
        self.object_inertia = object_inertia
        self.object_mass_matrix = object_inertia.matrix()
        self.object_inverse_mass = np.linalg.inv(self.object_mass_matrix)
        self.rigid = [index for index, grasp in enumerate(self.grasps) if grasp.rigid]
        self.stabilisation_frequency = float(stabilisation_frequency)
        self.rcond = float(rcond)
        self._sizes = [model.nv for model in self.models]
        self._grasp_actions = np.array([grasp.object_to_grasp.action for grasp in self.grasps])
        if any(model.nq != model.nv for model in self.models):
            raise ValueError('every arm needs as many joint positions as velocities')

    # --- open-chain terms (seed eq. 4.9a-b) -------------------------------------------
    def _arm_terms(self, index: int, q: np.ndarray, v: np.ndarray,
                   torque: np.ndarray) -> _ArmTerms:
        """Free dynamics of one arm under ``torque`` (Pinocchio's C++ algorithms).

        :param index: arm index.
        :param q: joint positions.
        :param v: joint velocities.
        :param torque: joint torques (the grasp springs' reaction already included).
        :return: the arm's terms at its flange frame.
        """
        model, data = self.models[index], self.datas[index]
        frame = self.arms[index].flange_frame
        pinocchio.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        placement = pinocchio.updateFramePlacement(model, data, frame)
        velocity = pinocchio.getFrameVelocity(model, data, frame, _LOCAL).vector
        bias = pinocchio.getFrameAcceleration(model, data, frame, _LOCAL).vector
        jacobian = pinocchio.computeFrameJacobian(model, data, q, frame, _LOCAL)
        inverse_mass = pinocchio.computeMinverse(model, data, q)
        free = pinocchio.aba(model, data, q, v, torque)
        return _ArmTerms(free, jacobian, inverse_mass @ jacobian.T, velocity, bias,
                         pinocchio.SE3(placement))

    def _object_free_acceleration(self, state: ChainState, wrench: np.ndarray) -> np.ndarray:
        """Object's acceleration under gravity and ``wrench`` alone (LOCAL).

        :param state: the state (placement and LOCAL velocity).
        :param wrench: 6, the sum of the compliant grasps' wrenches, object frame.
        :return: 6, ``M(C)^-1 (f - b(C))`` of seed eq. 2.4 with gravity in ``f``.
        """
        velocity = pinocchio.Motion(state.object_velocity)
        gravity = np.concatenate([state.object_placement.rotation.T @ self.gravity,
                                  np.zeros(3)])
        bias = self.object_inertia.vxiv(velocity).vector
        force = self.object_mass_matrix @ gravity + wrench - bias
        return self.object_inverse_mass @ force

    # --- the closed chain (seed eqs. 4.9c-h, Appendix B) -------------------------------
    def accelerations(self, state: ChainState, torques: Sequence[np.ndarray]
                      ) -> ChainAccelerations:
        """Closed-chain forward dynamics: joint and object accelerations, grasp wrenches.

        :param state: arms' and object's state.
        :param torques: joint torques, per arm.
        :return: the accelerations and the wrenches on the object.
        """
        torques = self._checked_torques(torques)
        joint, object_acceleration, wrenches, couplings = self._dynamics(state, torques)
        return ChainAccelerations(joint, object_acceleration,
                                  self._to_grasp_frames(couplings, wrenches))

    def _checked_torques(self, torques: Sequence[np.ndarray]) -> list:
        """Return the torques as float arrays, one per arm, or raise ValueError.

        :param torques: joint torques, per arm.
        :return: the torques.
        """
        if len(torques) != len(self.arms):
            raise ValueError(f'need one torque vector per arm ({len(self.arms)}), '
                             f'got {len(torques)}')
        out = [np.asarray(torque, dtype=float) for torque in torques]
        for arm, torque, size in zip(self.arms, out, self._sizes):
            if torque.shape != (size,) or not np.all(np.isfinite(torque)):
                raise ValueError(f'torques of {arm.name} must be {size} finite values, '
                                 f'got {torque!r}')
        return out

    def _dynamics(self, state: ChainState, torques: Sequence[np.ndarray]) -> tuple:
        """Seed algorithm 4.9: free dynamics, ``Omega``, contact wrenches, corrections.

        :param state: arms' and object's state.
        :param torques: joint torques, per arm.
        :return: ``(joint accelerations, object acceleration, (l, 6) wrenches on the
            object at the flanges in flange axes, every arm's B_i)``.
        """
        terms = [self._arm_terms(index, state.q[index], state.v[index], torques[index])
                 for index in range(len(self.arms))]
        couplings, wrenches = [], np.zeros((len(self.arms), 6))
        object_wrench = np.zeros(6)
        for index, term in enumerate(terms):
            flange_to_object = term.flange_placement.actInv(state.object_placement)
            coupling = flange_to_object.action  # B_i = Ad(fMo): object twist -> flange
            couplings.append(coupling)
            if not self.grasps[index].rigid:
                wrenches[index] = self._compliant(index, term, flange_to_object,
                                                  coupling, state.object_velocity)
                object_wrench += coupling.T @ wrenches[index]
        object_free = self._object_free_acceleration(state, object_wrench)
        joint = [term.free_acceleration for term in terms]
        object_acceleration = object_free
        if self.rigid:
            forces = self._constraint_forces(state, terms, couplings, object_free)
            for index, force in zip(self.rigid, forces):
                joint[index] = joint[index] - terms[index].inverse_mass_jacobian @ force
                wrenches[index] = force
            object_acceleration = object_free + self.object_inverse_mass @ np.einsum(
                'kji,kj->i', np.asarray(couplings)[self.rigid], wrenches[self.rigid])
        return joint, object_acceleration, wrenches, couplings

    def _compliant(self, index: int, term: _ArmTerms, flange_to_object: pinocchio.SE3,
                   coupling: np.ndarray, object_velocity: np.ndarray) -> np.ndarray:
        """Spring-damper wrench of a compliant grasp; its reaction enters the free dynamics.

        :param index: arm index.
        :param term: the arm's terms, its free acceleration corrected in place (4.9e).
        :param flange_to_object: placement of the object in the flange frame.
        :param coupling: ``Ad(flange_to_object)``.
        :param object_velocity: 6, LOCAL.
        :return: 6, the wrench on the object at the flange, flange axes.
        """
        grasp_to_flange = (flange_to_object * self.grasps[index].object_to_grasp).inverse()
        relative = term.flange_velocity - coupling @ object_velocity
        wrench = _spring_wrench(self.grasps[index], grasp_to_flange, relative)
        term.free_acceleration = term.free_acceleration - term.inverse_mass_jacobian @ wrench
        return wrench

    def _constraint_forces(self, state: ChainState, terms: list, couplings: list,
                           object_free: np.ndarray) -> list:
        """Rigid grasps' wrenches ``f(0)`` from ``Omega f(0) = ...`` (seed eqs. 4.9c-d).

        The closure of grasp ``i`` in the flange frame reads
        ``J_i theta'' + J'_i theta' - B_i alpha(C) + V_i x (B_i V(C)) = a*_i`` with
        ``B_i = Ad(fMo)`` and Baumgarte's ``a*_i = -2 w e'_i - w^2 e_i``.

        :param state: the state.
        :param terms: every arm's terms.
        :param couplings: every arm's ``B_i``.
        :param object_free: 6, the object's free acceleration.
        :return: one wrench (6,) per rigid grasp, on the object at the flange, flange axes.
        """
        count = len(self.rigid)
        omega = np.zeros((6 * count, 6 * count))
        right = np.zeros(6 * count)
        stacked = np.empty((6 * count, 6))
        frequency = self.stabilisation_frequency
        for row, index in enumerate(self.rigid):
            term, coupling = terms[index], couplings[index]
            block = slice(6 * row, 6 * row + 6)
            omega[block, block] = term.jacobian @ term.inverse_mass_jacobian
            stacked[block] = coupling
            object_at_flange = coupling @ state.object_velocity
            relative = term.flange_velocity - object_at_flange
            transport = pinocchio.Motion(term.flange_velocity).cross(
                pinocchio.Motion(object_at_flange)).vector
            error = self._closure(index, term.flange_placement, state.object_placement)
            target = -2.0 * frequency * relative - frequency ** 2 * error
            right[block] = (term.jacobian @ term.free_acceleration + term.flange_bias
                            - coupling @ object_free + transport - target)
        omega += stacked @ self.object_inverse_mass @ stacked.T  # (3.1): + A M(C)^-1 A^T
        forces = _minimum_norm_solve(omega, right, self.rcond)
        return [forces[6 * row:6 * row + 6] for row in range(count)]

    def _closure(self, index: int, flange: pinocchio.SE3,
                 object_placement: pinocchio.SE3) -> np.ndarray:
        """Return ``log6`` of the flange in its grasp frame (zero when the chain is closed).

        :param index: arm index.
        :param flange: flange placement in the world.
        :param object_placement: object placement in the world.
        :return: 6, ``[translation, rotation]`` error.
        """
        grasp = object_placement * self.grasps[index].object_to_grasp
        return pinocchio.log6(grasp.actInv(flange)).vector

    def _to_grasp_frames(self, couplings: list, wrenches: np.ndarray) -> np.ndarray:
        """Express wrenches given at each flange in each grasp frame.

        ``Ad(fMg) = B_i Ad(G_i)`` maps the grasp frame's twist to the flange, so its
        transpose maps the flange's wrench to the grasp frame.

        :param couplings: every arm's ``B_i = Ad(fMo)``.
        :param wrenches: (l, 6) at the flanges, flange axes.
        :return: (l, 6) at the grasp frames, grasp axes.
        """
        return np.einsum('kji,kj->ki', np.asarray(couplings) @ self._grasp_actions, wrenches)

    # --- integration (classical Runge-Kutta 4 on the object's SE(3) chart) ---------------
    def _unpack(self, vector: np.ndarray, start: pinocchio.SE3) -> ChainState:
        """Return the state held in ``vector = [q..., v..., xi, nu]``.

        :param vector: the stacked state; the object's placement is ``start * exp6(xi)``.
        :param start: the object's placement at the start of the step.
        :return: the state.
        """
        q, v, offset = [], [], 0
        for size in self._sizes:
            q.append(vector[offset:offset + size])
            offset += size
        for size in self._sizes:
            v.append(vector[offset:offset + size])
            offset += size
        placement = start * pinocchio.exp6(vector[offset:offset + 6])
        return ChainState(q, v, placement, vector[offset + 6:offset + 12])

    def _derivative(self, vector: np.ndarray, start: pinocchio.SE3,
                    torques: Sequence[np.ndarray]) -> tuple:
        """Time derivative of the stacked state.

        ``xi' = Jexp6(xi)^-1 nu`` keeps the chart exact, so RK4 keeps its 4th order.

        :param vector: stacked state (see :meth:`_unpack`).
        :param start: the object's placement at the start of the step.
        :param torques: joint torques, per arm.
        :return: ``(derivative, state, dynamics)`` with ``dynamics`` from :meth:`_dynamics`.
        """
        state = self._unpack(vector, start)
        dynamics = self._dynamics(state, torques)
        chart = np.linalg.solve(pinocchio.Jexp6(vector[-12:-6]), state.object_velocity)
        derivative = np.concatenate(state.v + dynamics[0] + [chart, dynamics[1]])
        return derivative, state, dynamics

    def step(self, state: ChainState, torques: Sequence[np.ndarray],
             dt: float) -> tuple:
        """Advance by ``dt`` with classical Runge-Kutta 4, torques held over the step.

        With a ``projection_tolerance``, Aghili's projection follows (:meth:`_project`).

        :param state: the state at the start.
        :param torques: joint torques, per arm.
        :param dt: time step, s (> 0).
        :return: ``(new state, accelerations and grasp wrenches at the start state)``.
        """
        if not (np.isfinite(dt) and dt > 0.0):
            raise ValueError(f'dt must be finite and > 0, got {dt!r}')
        torques = self._checked_torques(torques)
        start = state.object_placement
        vector = np.concatenate([np.asarray(q, dtype=float) for q in state.q]
                                + [np.asarray(v, dtype=float) for v in state.v]
                                + [np.zeros(6), np.asarray(state.object_velocity, float)])
        first, _, (joint, body, wrenches, couplings) = self._derivative(vector, start, torques)
        result = ChainAccelerations(joint, body, self._to_grasp_frames(couplings, wrenches))
        second = self._derivative(vector + 0.5 * dt * first, start, torques)[0]
        third = self._derivative(vector + 0.5 * dt * second, start, torques)[0]
        fourth = self._derivative(vector + dt * third, start, torques)[0]
        vector = vector + dt / 6.0 * (first + 2.0 * second + 2.0 * third + fourth)
        new = self._unpack(vector, start)
        new = replace(new, q=[q.copy() for q in new.q], v=[v.copy() for v in new.v],
                      object_velocity=new.object_velocity.copy())
        if self.projection_tolerance > 0.0 and self.rigid:
            self._project(new)
        return new, result

    def _project(self, state: ChainState) -> None:
        """Aghili's projection of a drifted state back onto the closed chain (in place).

        Positions, when the closure error exceeds the tolerance, down to a thousandth of
        it: Newton steps ``q <- q - A+ Phi(q)`` (his eq. 39) in the mass-weighted
        norm (his eqs. 8-10), over the arms and the object: ``Omega mu = e``,
        ``dq_i = -M_i^-1 J_i^T mu_i``, ``dxi = M_o^-1 sum B_i^T mu_i``; velocities: the
        same projection of the relative twist ``J v - B V_o``, every step, i.e. the
        impulse that cancels it (kinetic energy can only drop). ``Omega+`` keeps singular poses sound.

        :param state: the state after a step, changed in place.
        """
        zeros = [np.zeros(size) for size in self._sizes]
        threshold = self.projection_tolerance
        for iteration in range(6):
            terms = [self._arm_terms(index, state.q[index], state.v[index], zeros[index])
                     for index in range(len(self.arms))]
            couplings = [term.flange_placement.actInv(state.object_placement).action
                         for term in terms]
            error = np.concatenate([self._closure(index, terms[index].flange_placement,
                                                  state.object_placement)
                                    for index in self.rigid])
            if np.abs(error).max() <= threshold or iteration == 5:
                break
            threshold = 1e-3 * self.projection_tolerance  # once started, close it well
            impulse = self._impulse(terms, couplings, error)
            for index, change in impulse[0].items():
                state.q[index] = pinocchio.integrate(self.models[index], state.q[index],
                                                     change)
            state.object_placement = state.object_placement * pinocchio.exp6(impulse[1])
        relative = np.concatenate([terms[index].flange_velocity
                                   - couplings[index] @ state.object_velocity
                                   for index in self.rigid])
        changes, object_change = self._impulse(terms, couplings, relative)
        for index, change in changes.items():
            state.v[index] = state.v[index] + change
        state.object_velocity = state.object_velocity + object_change

    def _impulse(self, terms: list, couplings: list, violation: np.ndarray) -> tuple:
        """Return the mass-weighted minimum-norm change that cancels ``violation``.

        :param terms: every arm's terms.
        :param couplings: every arm's ``B_i``.
        :param violation: (6r,) stacked over the rigid grasps, flange frames.
        :return: ``({arm index: joint change}, object change (6,))``.
        """
        stacked = np.array([couplings[index] for index in self.rigid]).reshape(-1, 6)
        omega = np.zeros((len(stacked), len(stacked)))
        for row, index in enumerate(self.rigid):
            block = slice(6 * row, 6 * row + 6)
            omega[block, block] = terms[index].jacobian @ terms[index].inverse_mass_jacobian
        omega += stacked @ self.object_inverse_mass @ stacked.T
        impulse = _minimum_norm_solve(omega, violation, self.rcond)
        changes = {index: -terms[index].inverse_mass_jacobian @ impulse[6 * row:6 * row + 6]
                   for row, index in enumerate(self.rigid)}
        return changes, self.object_inverse_mass @ stacked.T @ impulse

    # --- invariants -----------------------------------------------------------------------
    def energy(self, state: ChainState) -> float:
        """Kinetic plus gravity potential energy of arms and object, plus grasp springs.

        :param state: the state.
        :return: energy, J (potential zero at the world origin's height).
        """
        total = 0.0
        for model, data, q, v in zip(self.models, self.datas, state.q, state.v):
            total += pinocchio.computeKineticEnergy(model, data, q, v)
            total += pinocchio.computePotentialEnergy(model, data, q)
        velocity = np.asarray(state.object_velocity)
        total += 0.5 * velocity @ self.object_mass_matrix @ velocity
        centre = state.object_placement.act(self.object_inertia.lever)
        total -= self.object_inertia.mass * self.gravity @ centre
        for index, grasp in enumerate(self.grasps):
            if grasp.rigid:
                continue
            relative = self._relative_placement(index, state)
            stiffness = np.asarray(grasp.stiffness)
            deflection = np.concatenate([relative.translation, pinocchio.log3(relative.rotation)])
            total += 0.5 * deflection @ (stiffness * deflection)
        return float(total)

    def _relative_placement(self, index: int, state: ChainState) -> pinocchio.SE3:
        """Return the placement of arm ``index``'s flange in its grasp frame.

        :param index: arm index.
        :param state: the state.
        :return: ``gMf``.
        """
        model, data = self.models[index], self.datas[index]
        frame = self.arms[index].flange_frame
        pinocchio.framesForwardKinematics(model, data, state.q[index])
        grasp = state.object_placement * self.grasps[index].object_to_grasp
        return grasp.actInv(data.oMf[frame])

    def closure_error(self, state: ChainState) -> np.ndarray:
        """Return ``log6`` of each flange in its grasp frame, ``[translation, rotation]``.

        For a rigid grasp it is the closure drift; for a compliant one, the deflection of its
        spring.

        :param state: the state.
        :return: (l, 6), m and rad.
        """
        return np.array([pinocchio.log6(self._relative_placement(index, state)).vector
                         for index in range(len(self.arms))])

    def close(self, q_guess: Sequence[np.ndarray], object_placement: pinocchio.SE3,
              tolerance: float = 1e-12, iterations: int = 200) -> ChainState:
        """Close the chain: each flange onto its grasp frame by inverse kinematics, at rest.

        Damped Gauss-Newton on ``log6`` per arm (Aghili's eq. 39 with a damped
        pseudo-inverse), kept within the joint limits; the object stays where it is given.

        :param q_guess: starting joint positions, per arm.
        :param object_placement: the object's placement in the world.
        :param tolerance: largest accepted ``|log6|``.
        :param iterations: most Newton steps per arm.
        :return: the closed state with zero velocities.
        :raises ValueError: when an arm cannot reach its grasp.
        """
        closed = []
        for index, arm in enumerate(self.arms):
            target = object_placement * self.grasps[index].object_to_grasp
            closed.append(self._reach(index, np.array(q_guess[index], dtype=float), target,
                                      tolerance, iterations))
        return ChainState(closed, [np.zeros(size) for size in self._sizes],
                          object_placement, np.zeros(6))

    def _reach(self, index: int, q: np.ndarray, target: pinocchio.SE3, tolerance: float,
               iterations: int) -> np.ndarray:
        """Inverse kinematics of one arm's flange onto ``target``.

        :param index: arm index.
        :param q: starting joint positions (changed).
        :param target: the flange's wanted placement in the world.
        :param tolerance: largest accepted ``|log6|``.
        :param iterations: most Newton steps.
        :return: the joint positions.
        :raises ValueError: when the target is not reached.
        """
        model, data = self.models[index], self.datas[index]
        frame = self.arms[index].flange_frame
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
