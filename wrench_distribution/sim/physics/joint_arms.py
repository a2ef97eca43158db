"""Arms with joints under admittance control, as on the robots (no ROS).

Each arm's controller, every period (docs/simulator.md, "Running the arms with joints"):

1. the admittance law of ros2_controllers' ``admittance_controller``
   (:class:`~..control.admittance.AdmittanceRule`, the same law as the Cartesian arm tips of
   :mod:`.admittance_arms`) turns the flange F/T reading plus the wrench reference into an offset of
   the flange from its reference pose;
2. damped least squares on the flange Jacobian (:func:`damped_least_squares`; the damping
   grows as the smallest singular value falls below a threshold, and joints that move toward
   a limit within a margin are weighted down, then the reference is clamped to the limits)
   turns the error between the commanded flange pose and the flange pose of the joint
   reference into a step of the joint reference;
3. a joint position loop (:class:`JointPositionLoop`: PID plus gravity compensation from
   the controller's own model of the arm, as a real arm's drive) tracks the joint reference
   with torques clipped to ``effort_limit``.

The flange F/T sensors read the wrench the arm applies to the object at its grasp (the
closed-chain solver's ``grasp_wrenches``) through :class:`~.ft_sensor.SimulatedFTSensors`:
the gripper's weight, the sign convention, bias and noise, as the other simulated sensors.

``pinocchio`` is an optional dependency of the simulator (``pip install .[sim]``): this
module imports it through :mod:`.arm_models` (whose error names the extra); the nodes, the
core and the engines never import it.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .arm_models import pinocchio
from ..control.admittance import AdmittanceParameters, AdmittanceRule, compose_offset, pose_difference


# --- damped least squares -------------------------------------------------------------
@dataclass(frozen=True)
class DlsSettings:
    """Damped least squares near singularities and joint limits.

    :param damping: largest damping ``lambda_max`` (reached at a singular pose).
    :param singular_threshold: ``epsilon``: the damping starts when the smallest singular
        value of the (weighted) flange Jacobian falls below it.
    :param limit_margin: rad; a joint closer than this to a limit and moving toward it is
        weighted down, quadratically to zero at the limit.
    """

    damping: float = 0.05
    singular_threshold: float = 0.08
    limit_margin: float = 0.15

    def __post_init__(self) -> None:
        if not (self.damping > 0 and self.singular_threshold > 0 and self.limit_margin > 0):
            raise ValueError('DLS damping, singular_threshold and limit_margin must be > 0')


def damped_least_squares(jacobian: np.ndarray, error: np.ndarray, settings: DlsSettings,
                         weights=None) -> tuple:
    """Return ``dq = W J^T (J W J^T + lambda^2 I)^-1 e`` with a damping that grows near singularities.

    With ``J W^(1/2) = U S V^T``, ``dq = W^(1/2) V diag(s / (s^2 + lambda^2)) U^T e``; the
    damping is zero while the smallest singular value ``s_min`` is above ``epsilon`` and
    ``lambda^2 = lambda_max^2 (1 - (s_min / epsilon)^2)`` below (Nakamura and Hanafusa 1986;
    Maciejewski and Klein 1988; Chiaverini 1997). Every gain ``s / (s^2 + lambda^2)`` is at
    most ``1 / (2 lambda)``, so the step stays bounded where the pseudo-inverse's ``1 / s``
    blows up.

    :param jacobian: (6, nv) flange Jacobian (world axes: linear velocity of the flange
        origin, angular velocity).
    :param error: (6,) pose error in the same axes (translation, rotation vector).
    :param settings: damping and threshold.
    :param weights: (nv,) joint weights in [0, 1] (None: all 1).
    :return: ``(dq, s_min, damping)``
    """
    nv = jacobian.shape[1]
    root = np.ones(nv) if weights is None else np.sqrt(np.clip(weights, 0.0, 1.0))
    u, s, vt = np.linalg.svd(jacobian * root, full_matrices=False)
    s_min = float(s[-1]) if len(s) >= 6 else 0.0
    ratio = min(1.0, s_min / settings.singular_threshold)
    damping = settings.damping * np.sqrt(1.0 - ratio ** 2)
    gains = s / (s ** 2 + damping ** 2)
    gains[s <= 1e-12 * max(1.0, s[0])] = 0.0  # an exactly singular direction moves nothing
    dq = root * (vt.T @ (gains * (u.T @ error)))
    return dq, s_min, float(damping)


def limit_weights(q: np.ndarray, dq: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                  margin: float) -> np.ndarray:
    """Weights that slow the joints moving toward a limit within ``margin``.

    :param q: (nv,) joint positions.
    :param dq: (nv,) the step they would take.
    :param lower: (nv,) lower limits.
    :param upper: (nv,) upper limits.
    :param margin: rad.
    :return: (nv,) ``(distance / margin)^2`` for those joints, 1 for the others
    """
    distance = np.where(dq > 0, upper - q, q - lower)
    share = np.clip(distance / margin, 0.0, 1.0) ** 2
    return np.where(dq != 0, share, 1.0)


def joint_reference_step(jacobian: np.ndarray, error: np.ndarray, q_ref: np.ndarray,
                         lower: np.ndarray, upper: np.ndarray, settings: DlsSettings) -> tuple:
    """Move the joint reference toward a flange pose: DLS, limit weighting, clamping.

    :param jacobian: (6, nv) flange Jacobian at ``q_ref``.
    :param error: (6,) commanded flange pose minus the flange pose at ``q_ref``.
    :param q_ref: (nv,) joint reference.
    :param lower: (nv,) lower joint limits.
    :param upper: (nv,) upper joint limits.
    :param settings: DLS settings.
    :return: ``(new q_ref, s_min, damping, clamped)``; ``clamped``: a joint hit its limit
    """
    dq, s_min, damping = damped_least_squares(jacobian, error, settings)
    weights = limit_weights(q_ref, dq, lower, upper, settings.limit_margin)
    if np.any(weights < 1.0):  # s_min stays the unweighted Jacobian's
        dq, _, damping = damped_least_squares(jacobian, error, settings, weights)
    wanted = q_ref + dq
    new = np.clip(wanted, lower, upper)
    return new, s_min, damping, bool(np.any(new != wanted))


# --- joint position loop ----------------------------------------------------------------
@dataclass(frozen=True)
class JointGains:
    """PID gains of a joint position loop, per joint.

    :param kp: N*m/rad.
    :param kd: N*m*s/rad.
    :param ki: N*m/(rad*s).
    """

    kp: np.ndarray
    kd: np.ndarray
    ki: np.ndarray


def drive_gains(arm, bandwidth: float, configuration=None, damping_ratio: float = 1.0,
                integral_ratio: float = 0.1) -> JointGains:
    """Gains that give each joint, alone, the bandwidth ``w``: ``kp = m w^2``, ``kd = 2 zeta m w``.

    ``m = 1 / (M^-1)_jj`` is the inertia joint ``j`` moves when the other joints are held
    (their drives are stiff), at ``configuration``: smaller than the diagonal ``M_jj``
    wherever the links are coupled, and the one that sets the loop's stability (a gain
    tuned on ``M_jj`` makes ``M^-1 kd dt`` reach the sampled loop's limit of 2 at
    ``w`` = 120 rad/s and 1 kHz on a Panda); ``ki = integral_ratio w kp``.

    :param arm: an :class:`~.arm_models.ArmModel`.
    :param bandwidth: rad/s.
    :param configuration: (nq,) where to take the inertia (None: the arm's home).
    :param damping_ratio: zeta.
    :param integral_ratio: the integral's corner frequency relative to ``w``.
    :return: the gains
    """
    if not bandwidth > 0:
        raise ValueError('joint loop bandwidth must be > 0')
    q = np.asarray(arm.home if configuration is None else configuration, float)
    data = arm.model.createData()
    pinocchio.computeMinverse(arm.model, data, q)
    inverse = np.triu(data.Minv) + np.triu(data.Minv, 1).T
    inertia = 1.0 / np.diag(inverse)
    kp = inertia * bandwidth ** 2
    return JointGains(kp, 2.0 * damping_ratio * inertia * bandwidth,
                      integral_ratio * bandwidth * kp)


class JointPositionLoop:
    """A joint position servo: PID plus gravity compensation, torques clipped to the limits.

    ``tau = clip(g(q) + kp (q_ref - q) + kd (v_ref - v) + ki integral, +-effort_limit)``;
    the integral stops on a saturated joint (anti-windup). ``g`` comes from the
    controller's own model of the arm (its own gripper mass), not the simulator's truth.

    :param arm: the controller's :class:`~.arm_models.ArmModel`.
    :param gains: PID gains.
    :param integral_limit: largest integral term, as a fraction of ``effort_limit``.
    """

    def __init__(self, arm, gains: JointGains, integral_limit: float = 0.2) -> None:
        self.pin = pinocchio
        self.arm = arm
        self.data = arm.model.createData()
        self.gains = gains
        self.limit = np.asarray(arm.effort_limit, float)
        self.integral_cap = integral_limit * self.limit
        self.integral = np.zeros(arm.model.nv)
        #: Joints whose torque was clipped at the last call.
        self.saturated = np.zeros(arm.model.nv, dtype=bool)

    def torques(self, q: np.ndarray, v: np.ndarray, q_ref: np.ndarray, v_ref: np.ndarray,
                dt: float) -> np.ndarray:
        """Return the joint torques for one period.

        :param q: (nq,) measured joint positions.
        :param v: (nv,) measured joint velocities.
        :param q_ref: (nq,) joint reference.
        :param v_ref: (nv,) its rate.
        :param dt: period, s.
        :return: (nv,) torques within ``+-effort_limit``
        """
        g = self.gains
        gravity = self.pin.computeGeneralizedGravity(self.arm.model, self.data, q)
        error = q_ref - q
        raw = gravity + g.kp * error + g.kd * (v_ref - v) + g.ki * self.integral
        tau = np.clip(raw, -self.limit, self.limit)
        self.saturated = tau != raw
        self.integral = np.where(self.saturated, self.integral, self.integral + error * dt)
        cap = self.integral_cap / np.maximum(g.ki, 1e-12)
        self.integral = np.clip(self.integral, -cap, cap)
        return tau


# --- one arm's controller ---------------------------------------------------------------
class JointArmController:
    """One arm as on the robot: admittance law, DLS to joint references, joint position loop.

    :param arm: the controller's :class:`~.arm_models.ArmModel` (its gripper mass is the
        configured one; kinematics as the truth's).
    :param law: the admittance controller's parameters (control frame: the flange frame).
    :param gains: the joint loop's gains.
    :param q: (nq,) the arm's joint positions now (the reference starts there).
    :param dls: DLS settings.
    """

    def __init__(self, arm, law: AdmittanceParameters, gains: JointGains, q: np.ndarray,
                 dls: DlsSettings = DlsSettings()) -> None:
        self.pin = pinocchio
        self.arm = arm
        self.data = arm.model.createData()
        self.rule = AdmittanceRule(law)
        self.loop = JointPositionLoop(arm, gains)
        self.dls = dls
        self.q_ref = np.asarray(q, float).copy()
        self.v_ref = np.zeros(arm.model.nv)
        self.lower = np.asarray(arm.lower, float)
        self.upper = np.asarray(arm.upper, float)
        self.step_limit = np.asarray(arm.velocity_limit, float)
        #: The reference keeps this far from the limits (rad), so that the joints, which
        #: trail it, stop before them (a third of the DLS limit margin).
        self.guard = np.minimum(dls.limit_margin / 3.0, 0.25 * (self.upper - self.lower))
        #: Periods in which a torque was clipped, and the reference clamped at a joint limit.
        self.saturation_count = 0
        self.limit_clamp_count = 0
        #: Smallest singular value of the flange Jacobian met along the joint reference.
        self.sigma_min = float(np.linalg.svd(self.flange_jacobian(self.q_ref),
                                             compute_uv=False)[-1])

    def flange_pose(self, q: np.ndarray) -> tuple:
        """World pose of the flange (F/T sensor) frame at ``q``.

        :param q: (nq,) joint positions.
        :return: ``(position (3,), rotation (3, 3))``
        """
        pin, model = self.pin, self.arm.model
        pin.framesForwardKinematics(model, self.data, q)
        placement = self.data.oMf[self.arm.flange_frame]
        return placement.translation.copy(), placement.rotation.copy()

    def flange_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Flange Jacobian at ``q``, world axes about the flange origin.

        :param q: (nq,) joint positions.
        :return: (6, nv) ``[linear; angular]``
        """
        pin = self.pin
        return pin.computeFrameJacobian(self.arm.model, self.data, q, self.arm.flange_frame,
                                        pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)

    def update(self, q: np.ndarray, v: np.ndarray, reading: np.ndarray,
               wrench_reference: np.ndarray, reference_pose: tuple, dt: float) -> np.ndarray:
        """One controller period: the joint torques.

        :param q: (nq,) measured joint positions.
        :param v: (nv,) measured joint velocities.
        :param reading: (6,) raw flange F/T reading (sensor frame about its origin).
        :param wrench_reference: (6,) the wrench reference in the same frame.
        :param reference_pose: ``(position (3,), rotation (3, 3))`` world reference of the flange.
        :param dt: period, s.
        :return: (nv,) torques within ``effort_limit``
        """
        ref_pos, ref_rot = reference_pose
        position, rotation = self.flange_pose(q)
        shift = pose_difference(position, rotation, ref_pos, ref_rot)
        offset = self.rule.update(reading, wrench_reference, rotation, rotation, shift, dt)
        goal_pos, goal_rot = compose_offset(ref_pos, ref_rot, offset)
        at_pos, at_rot = self.flange_pose(self.q_ref)
        error = pose_difference(goal_pos, goal_rot, at_pos, at_rot)
        new, s_min, _, clamped = joint_reference_step(
            self.flange_jacobian(self.q_ref), error, self.q_ref, self.lower + self.guard,
            self.upper - self.guard, self.dls)
        step = np.clip(new - self.q_ref, -self.step_limit * dt, self.step_limit * dt)
        self.v_ref = step / dt
        self.q_ref = self.q_ref + step
        self.sigma_min = min(self.sigma_min, s_min)
        self.limit_clamp_count += int(clamped)
        tau = self.loop.torques(q, v, self.q_ref, self.v_ref, dt)
        self.saturation_count += int(self.loop.saturated.any())
        return tau


# --- the held object with arms with joints ----------------------------------------------
class JointArmsSim:
    """The object held by arms with joints, each under its controller; the physics of ``object_sim``.

    The closed chain (:class:`~.closed_chain.ClosedChain`, compliant grasps at the true
    contacts) is integrated with the controllers' torques held over each step; each flange
    F/T sensor reads the grasp wrench moved into the flange frame, through ``sensors``.
    Offers what :class:`~..nodes.object_sim_node.ObjectSimNode` reads of a simulator.

    :param chain: the closed chain (the truth: gripper masses, true grasps).
    :param controllers: one :class:`JointArmController` per arm (their own models).
    :param sensors: the flange F/T sensors (sensor frame = flange frame).
    :param reference: ``t -> (positions (n, 3), rotations (n, 3, 3))``, the flanges' world
        reference poses.
    :param state: the initial state (:meth:`ClosedChain.close`).
    :param com: the object's centre of mass in its frame.
    """

    def __init__(self, chain, controllers, sensors, reference, state, com) -> None:
        self.chain = chain
        self.controllers = list(controllers)
        self.sensors = sensors
        self.reference = reference
        self.state = state
        self.n = len(self.controllers)
        self.com = np.asarray(com, float).reshape(3)
        self.gravity = np.asarray(chain.gravity, float)
        self.time = 0.0
        self.tau = [np.zeros(arm.model.nv) for arm in chain.arms]
        self.r = np.stack([g.object_to_grasp.translation for g in chain.grasps])
        self.r_rot = np.stack([g.object_to_grasp.rotation for g in chain.grasps])
        self.mu = np.full(self.n, np.nan)
        self.rigid = np.ones(self.n, dtype=bool)
        self._data = [arm.model.createData() for arm in chain.arms]
        self._wrenches = None
        self._placements = None
        #: Steps in which a measured joint position was outside its limits, per arm.
        self.limit_violations = np.zeros(self.n, dtype=int)

    # --- kinematics of the state ------------------------------------------------------
    def flange_placements(self) -> list:
        """World placements of the flanges (the F/T sensor frames).

        :return: ``pinocchio.SE3`` per arm (computed once per state)
        """
        if self._placements is None:
            out = []
            for arm, data, q in zip(self.chain.arms, self._data, self.state.q):
                pinocchio.framesForwardKinematics(arm.model, data, q)
                out.append(data.oMf[arm.flange_frame].copy())
            self._placements = out
        return self._placements

    def effector_frames(self) -> np.ndarray:
        """World orientation of each flange (sensor) frame.

        :return: (n, 3, 3)
        """
        return np.stack([p.rotation for p in self.flange_placements()])

    @property
    def eff_pos(self) -> np.ndarray:
        """World position of each flange, (n, 3)."""
        return np.stack([p.translation for p in self.flange_placements()])

    def object_frame_pose(self) -> tuple:
        """World pose of the object frame.

        :return: ``(position (3,), rotation (3, 3))``
        """
        placement = self.state.object_placement
        return placement.translation.copy(), placement.rotation.copy()

    def object_frame_twist(self) -> tuple:
        """World velocity of the object-frame origin and world angular velocity.

        :return: ``(velocity (3,), omega (3,))``
        """
        rotation = self.state.object_placement.rotation
        velocity = np.asarray(self.state.object_velocity, float)
        return rotation @ velocity[:3], rotation @ velocity[3:]

    @property
    def body(self):
        """Return the object's centre of mass in the world (``.position``), for the markers."""
        placement = self.state.object_placement
        return SimpleNamespace(position=placement.act(self.com))

    # --- wrenches -----------------------------------------------------------------------
    def transmitted(self) -> np.ndarray:
        """Wrench each arm applies to the object, in its flange frame about the flange origin.

        The chain's ``grasp_wrenches`` (grasp frame) moved to the flange through the grasp
        spring's deflection. A compliant grasp's wrench depends on the state alone; a rigid
        one's also on the torques, here the last ones applied.

        :return: (n, 6)
        """
        if self._wrenches is None:
            self._wrenches = self.chain.accelerations(self.state, self.tau).grasp_wrenches
        out = np.zeros((self.n, 6))
        for i, flange in enumerate(self.flange_placements()):
            grasp = self.state.object_placement * self.chain.grasps[i].object_to_grasp
            flange_from_grasp = flange.actInv(grasp)
            force = pinocchio.Force(self._wrenches[i, :3], self._wrenches[i, 3:])
            out[i] = flange_from_grasp.act(force).vector
        return out

    def contact_wrenches(self) -> np.ndarray:
        """Wrench each arm applies to the object, in its (true) grasp frame about its origin.

        :return: (n, 6)
        """
        if self._wrenches is None:
            self._wrenches = self.chain.accelerations(self.state, self.tau).grasp_wrenches
        return np.array(self._wrenches, float)

    def readings(self) -> np.ndarray:
        """Raw flange F/T readings now (gripper weight, sign, bias, noise).

        :return: (n, 6)
        """
        gravity = np.einsum('nji,j->ni', self.effector_frames(), self.gravity)
        return self.sensors.read(self.transmitted(), gravity)

    # --- time ---------------------------------------------------------------------------
    def step(self, commands: np.ndarray, dt: float, fixed: bool = False) -> None:
        """Advance one controller period: the controllers' torques, then the closed chain.

        :param commands: (n, 6) wrench references, each in its flange F/T sensor frame.
        :param dt: step, s.
        :param fixed: hold the object in place (the fixture before the release).
        """
        commands = np.asarray(commands, float).reshape(self.n, 6)
        readings = self.readings()
        ref_pos, ref_rot = self.reference(self.time)
        self.tau = [c.update(q, v, readings[i], commands[i], (ref_pos[i], ref_rot[i]), dt)
                    for i, (c, q, v) in enumerate(zip(self.controllers, self.state.q,
                                                      self.state.v))]
        placement = self.state.object_placement
        self.state, _ = self.chain.step(self.state, self.tau, dt)
        if fixed:
            self.state.object_placement = placement
            self.state.object_velocity = np.zeros(6)
        self._wrenches = self._placements = None
        for i, (arm, q) in enumerate(zip(self.chain.arms, self.state.q)):
            self.limit_violations[i] += int(np.any((q < arm.lower) | (q > arm.upper)))
        self.time += dt

    def set_clock(self, time: float) -> None:
        """Set the simulation time (a node keeps it on its tick grid, free of summed rounding).

        :param time: s.
        """
        self.time = float(time)

    def status(self) -> np.ndarray:
        """Return the state of the arms, the columns of ``joint_arms/status``.

        Per arm: smallest flange-Jacobian singular value now and so far, torque saturations,
        reference clamps at a joint limit, joint-limit violations.

        :return: (n, 5)
        """
        now = [np.linalg.svd(c.flange_jacobian(q), compute_uv=False)[-1]
               for c, q in zip(self.controllers, self.state.q)]
        return np.column_stack([now, [c.sigma_min for c in self.controllers],
                                [c.saturation_count for c in self.controllers],
                                [c.limit_clamp_count for c in self.controllers],
                                self.limit_violations])
