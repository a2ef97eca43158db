"""Closed-chain dynamics of several arms with joints holding one rigid object.

The seed's general algorithm (closed-chain paper, eqs. 4.9a-h, the analytical solution
3.1-3.6), in three parts that :class:`ClosedChain` composes: each arm's open-chain dynamics
(:class:`.chain_arms.FreeArms`, Pinocchio's ABA, ``M^-1``, Jacobians), the object and its
grasps (:class:`.chain_grasps.GraspCoupling`: the ``l x l`` block system ``Omega``, compliant
grasps as 6-D spring-dampers of :mod:`.grasp` (Appendix B), Baumgarte stabilisation and the
minimum-norm constraint forces of Aghili's projection where ``Omega`` is singular), and, here,
the integration (classical RK4 on the object's SE(3) chart) with its drift control
(Baumgarte, or Aghili's projection as an option).
Derivation: ``docs/simulator.md``, "Arms with joints: closed-chain dynamics".
Simulator only: never imported by the nodes, the core, the engines or the bag tools.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .arm_models import ArmModel, pinocchio
from .chain_arms import FreeArms
from .chain_grasps import GraspCoupling
from .grasp import spring_energy


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
        self.object_inertia = object_inertia
        self.free_arms = FreeArms(self.arms, self.gravity)
        self.coupling = GraspCoupling(object_inertia, self.grasps, self.gravity,
                                      stabilisation_frequency, rcond)
        self.rigid = self.coupling.rigid
        self._sizes = self.free_arms.sizes
        self._shapes = [(size,) for size in self._sizes]
        ends = np.cumsum([0] + self._sizes + self._sizes)
        self._slices = [slice(start, end) for start, end in zip(ends[:-1], ends[1:])]

    @property
    def stabilisation_frequency(self) -> float:
        """Baumgarte's natural frequency, rad/s."""
        return self.coupling.stabilisation_frequency

    @property
    def rcond(self) -> float:
        """Relative eigenvalue below which ``Omega`` counts as singular."""
        return self.coupling.rcond

    # --- the closed chain (seed eqs. 4.9a-h) ----------------------------------------------
    def accelerations(self, state: ChainState, torques: Sequence[np.ndarray]
                      ) -> ChainAccelerations:
        """Closed-chain forward dynamics: joint and object accelerations, grasp wrenches.

        :param state: arms' and object's state.
        :param torques: joint torques, per arm.
        :return: the accelerations and the wrenches on the object.
        """
        torques = self._checked_torques(torques)
        terms = self.free_arms.terms(state.q, state.v, torques)
        joint, body, wrenches, couplings = self.coupling.accelerations(
            terms, state.object_placement, np.asarray(state.object_velocity, dtype=float))
        return ChainAccelerations(joint, body, self.coupling.to_grasp_frames(couplings, wrenches))

    def _checked_torques(self, torques: Sequence[np.ndarray]) -> list:
        """Return the torques as float arrays, one per arm, or raise ValueError.

        :param torques: joint torques, per arm.
        :return: the torques.
        """
        if len(torques) != len(self.arms):
            raise ValueError(f'need one torque vector per arm ({len(self.arms)}), '
                             f'got {len(torques)}')
        out = [np.asarray(torque, dtype=float) for torque in torques]
        if [torque.shape for torque in out] == self._shapes \
                and np.isfinite(np.concatenate(out)).all():
            return out
        for arm, torque, size in zip(self.arms, out, self._sizes):
            if torque.shape != (size,) or not np.isfinite(torque).all():
                raise ValueError(f'torques of {arm.name} must be {size} finite values, '
                                 f'got {torque!r}')
        return out

    # --- integration (classical Runge-Kutta 4 on the object's SE(3) chart) ---------------
    def _derivative(self, vector: np.ndarray, start: pinocchio.SE3,
                    torques: Sequence[np.ndarray]) -> tuple:
        """Time derivative of the stacked state ``[q..., v..., xi, nu]``.

        The object's placement is ``start * exp6(xi)``; ``xi' = Jexp6(xi)^-1 nu =
        Jlog6(exp6(xi)) nu`` keeps the chart exact, so RK4 keeps its 4th order.

        :param vector: stacked state.
        :param start: the object's placement at the start of the step.
        :param torques: joint torques, per arm.
        :return: ``(derivative, (joint, object, flange wrenches, couplings))`` with the
            second item from :meth:`.chain_grasps.GraspCoupling.accelerations`.
        """
        parts = [vector[part] for part in self._slices]
        count = len(self._sizes)
        chart = pinocchio.exp6(vector[-12:-6])
        velocity = vector[-6:]
        dynamics = self.coupling.accelerations(
            self.free_arms.terms(parts[:count], parts[count:], torques), start * chart,
            velocity)
        return (np.concatenate(parts[count:] + dynamics[0]
                               + [pinocchio.Jlog6(chart).dot(velocity), dynamics[1]]),
                dynamics)

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
        first, (joint, body, wrenches, couplings) = self._derivative(vector, start, torques)
        result = ChainAccelerations(joint, body, self.coupling.to_grasp_frames(couplings,
                                                                               wrenches))
        half = 0.5 * dt
        second = self._derivative(vector + half * first, start, torques)[0]
        third = self._derivative(vector + half * second, start, torques)[0]
        fourth = self._derivative(vector + dt * third, start, torques)[0]
        vector = vector + (dt / 6.0) * (first + fourth + 2.0 * (second + third))
        count = len(self._sizes)
        new = ChainState([vector[part] for part in self._slices[:count]],
                         [vector[part] for part in self._slices[count:]],
                         start * pinocchio.exp6(vector[-12:-6]), vector[-6:])
        if self.projection_tolerance > 0.0 and self.rigid:
            self._project(new)
        return new, result

    def _project(self, state: ChainState) -> None:
        """Aghili's projection of a drifted state back onto the closed chain (in place).

        Positions, when the closure error exceeds the tolerance, down to a thousandth of
        it: Newton steps ``q <- q - A+ Phi(q)`` (his eq. 39) in the mass-weighted
        norm (his eqs. 8-10), over the arms and the object
        (:meth:`.chain_grasps.GraspCoupling.impulse`); velocities: the same projection of
        the relative twist ``J v - B V_o``, every step, i.e. the impulse that cancels it
        (kinetic energy can only drop). ``Omega+`` keeps singular poses sound.

        :param state: the state after a step, changed in place.
        """
        threshold = self.projection_tolerance
        for iteration in range(6):
            terms = self.free_arms.kinematic_terms(state.q, state.v)
            couplings = [flange.actInv(state.object_placement).action
                         for flange in terms.placements]
            error = np.concatenate([self.coupling.closure(index, terms.placements[index],
                                                          state.object_placement)
                                    for index in self.rigid])
            if np.abs(error).max() <= threshold or iteration == 5:
                break
            threshold = 1e-3 * self.projection_tolerance  # once started, close it well
            changes, object_change = self.coupling.impulse(terms, couplings, error)
            for index, change in changes.items():
                state.q[index] = self.free_arms.integrate(index, state.q[index], change)
            state.object_placement = state.object_placement * pinocchio.exp6(object_change)
        relative = np.concatenate([terms.velocities[index]
                                   - couplings[index].dot(state.object_velocity)
                                   for index in self.rigid])
        changes, object_change = self.coupling.impulse(terms, couplings, relative)
        for index, change in changes.items():
            state.v[index] = state.v[index] + change
        state.object_velocity = state.object_velocity + object_change

    # --- invariants -----------------------------------------------------------------------
    def energy(self, state: ChainState) -> float:
        """Kinetic plus gravity potential energy of arms and object, plus grasp springs.

        :param state: the state.
        :return: energy, J (potential zero at the world origin's height).
        """
        total = self.free_arms.energy(state.q, state.v)
        velocity = np.asarray(state.object_velocity)
        total += 0.5 * velocity @ self.coupling.object_mass_matrix @ velocity
        centre = state.object_placement.act(self.object_inertia.lever)
        total -= self.object_inertia.mass * self.gravity @ centre
        compliant = [index for index, grasp in enumerate(self.grasps) if not grasp.rigid]
        if compliant:
            relative = [self._relative_placement(index, state) for index in compliant]
            total += spring_energy(np.array([self.grasps[index].stiffness for index in compliant],
                                            dtype=float),
                                   np.array([placement.rotation for placement in relative]),
                                   np.array([placement.translation for placement in relative]))
        return float(total)

    def _relative_placement(self, index: int, state: ChainState) -> pinocchio.SE3:
        """Return the placement of arm ``index``'s flange in its grasp frame.

        :param index: arm index.
        :param state: the state.
        :return: ``gMf``.
        """
        grasp = state.object_placement * self.grasps[index].object_to_grasp
        return grasp.actInv(self.free_arms.flange_placement(index, state.q[index]))

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
        closed = [self.free_arms.reach(index, np.array(q_guess[index], dtype=float),
                                       object_placement * grasp.object_to_grasp, tolerance,
                                       iterations)
                  for index, grasp in enumerate(self.grasps)]
        return ChainState(closed, [np.zeros(size) for size in self._sizes],
                          object_placement, np.zeros(6))
