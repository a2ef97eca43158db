"""Closed-chain dynamics of arms with joints against two independent references.

1. Pinocchio's own constrained dynamics (``constraintDynamics``, one model holding every
   arm plus the object as a free-flyer, ``CONTACT_6D`` between each flange and the
   object), built here without the solver's code.
2. Aghili's projection formulation (eqs. 15, 22-24, 32 and Remark 4), written here in
   dense linear algebra over the whole system.

Plus invariants: energy conserved to the integrator's order, bounded closure, Hooke's law
per axis for compliant grasps, and stiff springs approaching the rigid grasp.
"""
from hypothesis import assume, given, Phase, settings, strategies as st
import numpy as np
import pinocchio
import pytest

from wrench_distribution.sim.physics.arm_models import load_arm
from wrench_distribution.sim.physics.closed_chain import ChainState, ClosedChain, Grasp

GRAVITY = np.array([0.0, 0.0, -9.81])
#: the slow references below are not shrunk (minutes per failing example): the failing draw
#: is printed as it is
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
LOCAL = pinocchio.ReferenceFrame.LOCAL


# --- systems ------------------------------------------------------------------------------
def rotation(angles):
    """Return a rotation matrix from roll-pitch-yaw angles."""
    return pinocchio.rpy.rpyToMatrix(*np.asarray(angles, dtype=float))


def flange_in_base(robot, q):
    """Return the flange placement of an unmounted arm at ``q``."""
    arm = load_arm(robot, 'bare')
    data = arm.model.createData()
    pinocchio.framesForwardKinematics(arm.model, data, q)
    return data.oMf[arm.flange_frame]


def mounted_arms(robots, configurations, object_placement, grasps, gripper_mass=0.7):
    """Mount each arm so that, at its configuration, its flange sits on its grasp frame."""
    arms = []
    for index, (robot, q) in enumerate(zip(robots, configurations)):
        base = object_placement * grasps[index].object_to_grasp \
            * flange_in_base(robot, q).inverse()
        arms.append(load_arm(robot, f'arm{index}', base, gripper_mass, (0.0, 0.0, 0.05)))
    return arms


def admissible_velocities(arms, configurations, object_placement, object_velocity, rng):
    """Joint velocities whose flange twists match the object's (plus null-space motion)."""
    velocities = []
    for arm, q in zip(arms, configurations):
        data = arm.model.createData()
        jacobian = pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame, LOCAL)
        pinocchio.framesForwardKinematics(arm.model, data, q)
        target = data.oMf[arm.flange_frame].actInv(object_placement).action @ object_velocity
        inverse = np.linalg.pinv(jacobian)
        null = np.eye(arm.model.nv) - inverse @ jacobian
        velocities.append(inverse @ target + null @ rng.uniform(-1.0, 1.0, arm.model.nv))
    return velocities


@st.composite
def systems(draw):
    """Random closed systems: 2-4 arms, Panda and UR5 mixed, bases, grasps, torques."""
    count = draw(st.integers(2, 4))
    robots = draw(st.lists(st.sampled_from(('panda', 'ur5')), min_size=count,
                           max_size=count))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    object_placement = pinocchio.SE3(rotation(rng.uniform(-np.pi, np.pi, 3)),
                                     rng.uniform(-1.0, 1.0, 3))
    grasps = [Grasp(pinocchio.SE3(rotation(rng.uniform(-np.pi, np.pi, 3)),
                                  rng.uniform(-0.3, 0.3, 3))) for _ in range(count)]
    gap = draw(st.sampled_from((None, 1e-9, 1e-6, 1e-3)))
    if gap is not None:  # near-coincident grasps: the second almost on the first
        nudge = pinocchio.SE3(rotation([gap, -gap, gap]), np.array([gap, 0.0, -gap]))
        grasps[1] = Grasp(grasps[0].object_to_grasp * nudge)
    configurations = [rng.uniform(*limits(robot)) for robot in robots]
    arms = mounted_arms(robots, configurations, object_placement, grasps)
    mass = draw(st.floats(0.05, 20.0))
    inertia = pinocchio.Inertia(mass, rng.uniform(-0.1, 0.1, 3),
                                mass * np.diag(rng.uniform(0.005, 0.05, 3)))
    object_velocity = rng.uniform(-1.0, 1.0, 6)
    velocities = admissible_velocities(arms, configurations, object_placement,
                                       object_velocity, rng)
    torques = [rng.uniform(-30.0, 30.0, arm.model.nv) for arm in arms]
    state = ChainState(configurations, velocities, object_placement, object_velocity)
    return arms, grasps, inertia, state, torques


def limits(robot):
    """Return the lower and upper joint limits of a robot, loaded bare."""
    arm = load_arm(robot, 'bare')
    return arm.lower, arm.upper


# --- reference 1: pinocchio.constraintDynamics on one model -------------------------------
def renamed(model, prefix):
    """Return a copy of ``model`` whose joint and frame names carry ``prefix``."""
    model = pinocchio.Model(model)
    for index in range(model.njoints):
        model.names[index] = prefix + model.names[index]
    for frame in model.frames:
        frame.name = prefix + frame.name
    return model


def pinocchio_reference(arms, grasps, inertia, state, torques, iterations=50):
    """Accelerations and grasp wrenches from Pinocchio's constrained dynamics.

    Pinocchio's ``CONTACT_6D`` force (``data.lambda_c``) is the wrench the constraint
    applies on joint 1 (here the arm) at the contact frame, in that LOCAL frame: at a
    closed grasp the flange frame is the grasp frame, and the arm receives the opposite
    of what it applies on the object, so the wrench on the object is ``-lambda_c``.
    """
    model = pinocchio.Model()
    for index, arm in enumerate(arms):
        model = pinocchio.appendModel(model, renamed(arm.model, f'a{index}_'), 0,
                                      pinocchio.SE3.Identity())
    joint = model.addJoint(0, pinocchio.JointModelFreeFlyer(), pinocchio.SE3.Identity(),
                           'object')
    model.appendBodyToJoint(joint, inertia, pinocchio.SE3.Identity())
    model.gravity = pinocchio.Motion(GRAVITY, np.zeros(3))
    constraints = []
    for index, arm in enumerate(arms):
        frame = model.frames[model.getFrameId(
            f'a{index}_' + arm.model.frames[arm.flange_frame].name)]
        constraints.append(pinocchio.RigidConstraintModel(
            pinocchio.ContactType.CONTACT_6D, model, frame.parentJoint, frame.placement,
            joint, grasps[index].object_to_grasp, LOCAL))
    constraints = pinocchio.StdVec_RigidConstraintModel(constraints)
    datas = pinocchio.StdVec_RigidConstraintData([c.createData() for c in constraints])
    data = model.createData()
    pinocchio.initConstraintDynamics(model, data, constraints, datas)
    q = np.concatenate(state.q + [pinocchio.SE3ToXYZQUAT(state.object_placement)])
    v = np.concatenate(state.v + [state.object_velocity])
    tau = np.concatenate(torques + [np.zeros(6)])
    # Proximal regularisation mu = 1e-8 and up to ``iterations`` iterations to 1e-14: the
    # exact KKT solution, and where it is singular the multipliers nearest to 0.
    settings_ = pinocchio.ProximalSettings(1e-14, 1e-8, iterations)
    acceleration = pinocchio.constraintDynamics(model, data, q, v, tau, constraints, datas,
                                                settings_)
    return acceleration, -data.lambda_c.reshape(-1, 6)


# --- reference 2: Aghili's projection, dense, written here ----------------------------------
def spatial_inertia(inertia):
    """Return the 6x6 spatial inertia ``[[m, -m c^], [m c^, I_c - m c^ c^]]`` by hand."""
    mass, centre = inertia.mass, inertia.lever
    skew = pinocchio.skew(centre)
    return np.block([[mass * np.eye(3), -mass * skew],
                     [mass * skew, inertia.inertia - mass * skew @ skew]])


def whole_system(arms, grasps, inertia, state, torques):
    """Return ``M``, ``tau - h``, the constraint Jacobian ``A`` and bias ``b`` (A a + b = 0).

    At a closed state with admissible velocities the closure acceleration of grasp i is
    ``a_flange - Ad(fMo) a_object`` (the relative-velocity term vanishes), so ``b_i`` is
    the flange's acceleration at zero joint acceleration.
    """
    blocks, forces, rows, biases = [], [], [], []
    sizes = [arm.model.nv for arm in arms]
    for index, arm in enumerate(arms):
        model = pinocchio.Model(arm.model)
        model.gravity = pinocchio.Motion(GRAVITY, np.zeros(3))
        data = model.createData()
        q, v = state.q[index], state.v[index]
        blocks.append(pinocchio.crba(model, data, q))
        blocks[-1] = np.triu(blocks[-1]) + np.triu(blocks[-1], 1).T
        forces.append(torques[index] - pinocchio.rnea(model, data, q, v, np.zeros(model.nv)))
        pinocchio.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        flange = pinocchio.updateFramePlacement(model, data, arm.flange_frame)
        biases.append(pinocchio.getFrameAcceleration(model, data, arm.flange_frame,
                                                     LOCAL).vector)
        jacobian = pinocchio.computeFrameJacobian(model, data, q, arm.flange_frame, LOCAL)
        row = np.zeros((6, sum(sizes) + 6))
        start = sum(sizes[:index])
        row[:, start:start + sizes[index]] = jacobian
        row[:, -6:] = -flange.actInv(state.object_placement).action
        rows.append(row)
    object_mass = spatial_inertia(inertia)
    omega = state.object_velocity[3:]
    momentum = object_mass @ state.object_velocity
    bias = np.concatenate([np.cross(omega, momentum[:3]),
                           np.cross(omega, momentum[3:])
                           + np.cross(state.object_velocity[:3], momentum[:3])])
    weight = object_mass @ np.concatenate(
        [state.object_placement.rotation.T @ GRAVITY, np.zeros(3)])
    blocks.append(object_mass)
    forces.append(weight - bias)
    mass = np.zeros((sum(sizes) + 6,) * 2)
    offset = 0
    for block in blocks:
        mass[offset:offset + len(block), offset:offset + len(block)] = block
        offset += len(block)
    return mass, np.concatenate(forces), np.vstack(rows), np.concatenate(biases)


def aghili_reference(mass, force, jacobian, bias):
    """Return accelerations and multipliers by Aghili's projection.

    ``P = I - A+ A`` (15); ``Mc = M + PM - (PM)^T`` (23-24);
    ``Mc a = P(tau - h) - M A+ b`` (22, with (13)); ``F = (tau - h) - M a`` (32);
    ``lambda = A+^T F``, the minimum-norm multipliers (Remark 4).
    """
    inverse = np.linalg.pinv(jacobian, rcond=1e-12)
    projector = np.eye(len(mass)) - inverse @ jacobian
    constrained = mass + projector @ mass - (projector @ mass).T
    acceleration = np.linalg.solve(constrained,
                                   projector @ force - mass @ inverse @ bias)
    constraint_force = force - mass @ acceleration
    return acceleration, np.linalg.pinv(jacobian.T, rcond=1e-12) @ constraint_force


def relative_error(value, reference):
    """Return ``|value - reference| / |reference|``."""
    return float(np.linalg.norm(np.asarray(value) - reference) / np.linalg.norm(reference))


def solve(arms, grasps, inertia, state, torques):
    """Return our solver's stacked accelerations and its (l, 6) grasp wrenches."""
    chain = ClosedChain(arms, inertia, grasps, gravity=GRAVITY)
    result = chain.accelerations(state, torques)
    return np.concatenate(result.joint + [result.object]), result.grasp_wrenches


@settings(max_examples=25, deadline=None)
@given(system=systems())
def test_accelerations_and_forces_match_pinocchio_and_aghili(system):
    arms, grasps, inertia, state, torques = system
    ours, wrenches = solve(*system)
    reference, reference_wrenches = pinocchio_reference(*system)
    assert relative_error(ours, reference) < 1e-8
    assert relative_error(wrenches, reference_wrenches) < 1e-8
    projected, multipliers = aghili_reference(*whole_system(*system))
    assert relative_error(ours, projected) < 1e-8
    assert relative_error(wrenches.ravel(), multipliers) < 1e-8


def stretched_pair():
    """Two UR5s, elbows stretched, facing each other along the line no joint resists.

    At ``elbow_joint = 0`` the arm's flange Jacobian loses one rank: one wrench (a force
    along the stretched arm's line, up to the tiny pitch of the wrist offsets) is resisted
    by no joint. The second arm is the first turned half a revolution about an axis
    across that line, so both unresisted wrenches lie on the same line with opposite
    signs: squeezing the object along it is resisted by nothing, ``Omega`` and the KKT
    matrix are singular, the accelerations are still unique.
    """
    q = np.array([0.0, -0.5, 0.0, -1.0, 1.2, 0.3])
    arm = load_arm('ur5', 'bare')
    data = arm.model.createData()
    jacobian = pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame, LOCAL)
    pinocchio.framesForwardKinematics(arm.model, data, q)
    flange = data.oMf[arm.flange_frame]
    unresisted = flange.act(pinocchio.Force(np.linalg.svd(jacobian)[0][:, -1]))
    force, moment = unresisted.linear, unresisted.angular
    direction = force / np.linalg.norm(force)
    on_line = np.cross(force, moment) / (force @ force)  # a point of the wrench's axis
    centre = on_line + direction * (direction @ (flange.translation - on_line) + 0.15)
    axis = np.cross(direction, [0.0, 0.0, 1.0])
    half_turn = pinocchio.exp3(np.pi * axis / np.linalg.norm(axis))
    bases = [pinocchio.SE3.Identity(), pinocchio.SE3(half_turn, centre - half_turn @ centre)]
    arms = [load_arm('ur5', f'arm{index}', base, 0.7) for index, base in enumerate(bases)]
    object_placement = pinocchio.SE3(np.eye(3), centre)
    grasps = []
    for mounted in arms:
        data = mounted.model.createData()
        pinocchio.framesForwardKinematics(mounted.model, data, q)
        grasps.append(Grasp(object_placement.actInv(data.oMf[mounted.flange_frame])))
    inertia = pinocchio.Inertia(2.0, np.array([0.01, 0.02, 0.0]), np.diag([0.02, 0.03, 0.04]))
    state = ChainState([q.copy(), q.copy()], [np.zeros(6), np.zeros(6)], object_placement,
                       np.zeros(6))
    torques = [np.array([1.0, -2.0, 3.0, 0.5, -0.3, 0.2]),
               np.array([-1.0, 2.0, 0.3, 0.1, 0.3, -0.2])]
    return arms, grasps, inertia, state, torques


def test_the_singular_stretched_pose_gives_unique_accelerations_and_minimum_norm_forces():
    system = stretched_pair()
    mass, force, jacobian, bias = whole_system(*system)
    assert np.linalg.svd(jacobian, compute_uv=False)[-1] < 1e-12  # one unresisted load
    kkt = np.block([[mass, jacobian.T], [jacobian, np.zeros((12, 12))]])
    assert np.linalg.cond(kkt) > 1e14
    ours, wrenches = solve(*system)
    projected, multipliers = aghili_reference(mass, force, jacobian, bias)
    assert relative_error(ours, projected) < 1e-8
    assert relative_error(wrenches.ravel(), multipliers) < 1e-8
    # A naive solve of the KKT system either fails or lands on an arbitrary internal load.
    try:
        naive = np.linalg.solve(kkt, np.concatenate([force, -bias]))
    except np.linalg.LinAlgError:
        naive = None
    if naive is not None:
        assert relative_error(naive[-12:], multipliers) > 1e-3
        assert np.linalg.norm(naive[-12:]) > np.linalg.norm(multipliers)
    # Pinocchio's proximal solver agrees on the (unique) accelerations; its multipliers'
    # unresisted component is whatever its regularisation leaves (not compared).
    reference, _ = pinocchio_reference(*system, iterations=400)
    assert relative_error(ours, reference) < 1e-8


# --- energy and closure ----------------------------------------------------------------------
def two_pandas(grasp_stiffness=None, grasp_damping=None, **options):
    """Two Pandas with 0.5 kg grippers holding a 1 kg box from both sides, closed at rest."""
    arms = [load_arm('panda', 'left_arm', pinocchio.SE3(np.eye(3), np.array([0.0, 0.5, 0.0])),
                     0.5),
            load_arm('panda', 'right_arm',
                     pinocchio.SE3(np.eye(3), np.array([0.0, -0.5, 0.0])), 0.5)]
    grasps = [Grasp(pinocchio.SE3(rotation([np.pi / 2, 0.0, 0.0]), np.array([0.0, 0.15, 0.0])),
                    grasp_stiffness, grasp_damping),
              Grasp(pinocchio.SE3(rotation([-np.pi / 2, 0.0, 0.0]),
                                  np.array([0.0, -0.15, 0.0])), grasp_stiffness, grasp_damping)]
    chain = ClosedChain(arms, pinocchio.Inertia.FromBox(1.0, 0.3, 0.1, 0.1), grasps,
                        gravity=GRAVITY, **options)
    state = chain.close([arm.home for arm in arms],
                        pinocchio.SE3(np.eye(3), np.array([0.5, 0.0, 0.4])))
    return chain, state


def run(chain, state, dt, duration, energy=None):
    """Integrate with zero torques.

    :param energy: the energy the drift is measured from (None: the start state's).
    :return: the final state, the largest energy drift and the largest closure error.
    """
    energy = chain.energy(state) if energy is None else energy
    drift = closure = 0.0
    torques = [np.zeros(arm.model.nv) for arm in chain.arms]
    for _ in range(int(round(duration / dt))):
        state, _ = chain.step(state, torques, dt)
        drift = max(drift, abs(chain.energy(state) - energy))
        closure = max(closure, float(np.abs(chain.closure_error(state)).max()))
    return state, drift, closure


def test_energy_is_conserved_to_the_integrators_order_and_the_chain_stays_closed():
    """Zero torques, gravity on, no damping: the arms fall, holding the box, for 10 s."""
    chain, state = two_pandas()
    assert chain.energy(state) > 50.0  # the arms and the box hang above the ground
    # Classical RK4: halving dt divides the drift by about 2^4 = 16 (2^2 = 4 for order 2),
    # judged over the first 3 s. Later in the fall the largest drift comes from a few steps
    # near fast configurations, and how near the trajectory passes depends on the CPU's
    # rounding: on an AMD EPYC with AVX-512 the ratio was 15.7 at 3 s, 11.5 at 5 s and 6.8 at
    # 10 s, where it had been over 10 on the machines before.
    _, coarse, _ = run(chain, state, 2e-3, 3.0)
    at_3s, fine, early_closure = run(chain, state, 1e-3, 3.0)
    assert coarse / fine > 10.0
    _, late_drift, late_closure = run(chain, at_3s, 1e-3, 7.0, energy=chain.energy(state))
    drift, closure = max(fine, late_drift), max(early_closure, late_closure)
    assert drift < 1e-3  # J, over 10 s, of about 134 J
    assert closure < 1e-5  # m and rad, Baumgarte at 20 rad/s


def test_aghilis_projection_keeps_the_chain_closed_to_its_tolerance():
    """Baumgarte off, projection on: closure within 1e-9 over 10 s, energy still kept."""
    chain, state = two_pandas(stabilisation_frequency=0.0, projection_tolerance=1e-9)
    final, drift, closure = run(chain, state, 2e-3, 10.0)
    assert closure <= 1e-9
    assert drift < 1e-2  # J, of about 134 J (RK4 at 2 ms alone: about 2e-3)
    assert max(np.abs(relative_twist(arm, q, v, final)).max()
               for arm, q, v in zip(chain.arms, final.q, final.v)) < 1e-9


def relative_twist(arm, q, v, state):
    """Return the flange's twist minus the object's at the flange, flange frame (by hand)."""
    data = arm.model.createData()
    jacobian = pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame, LOCAL)
    pinocchio.framesForwardKinematics(arm.model, data, q)
    object_at_flange = data.oMf[arm.flange_frame].actInv(state.object_placement).action \
        @ state.object_velocity
    return jacobian @ v - object_at_flange


def test_compliant_grasps_without_damping_conserve_energy_with_their_springs():
    stiffness = np.array([2e4, 2e4, 2e4, 200.0, 200.0, 200.0])
    chain, state = two_pandas(grasp_stiffness=stiffness, projection_tolerance=1e-9)
    assert chain.rigid == []  # the projection has nothing to do
    _, coarse, _ = run(chain, state, 2e-3, 1.0)
    _, fine, deflection = run(chain, state, 1e-3, 1.0)
    assert coarse / fine > 10.0
    assert fine < 1e-3
    assert 1e-3 < deflection < 0.5  # m and rad: the springs do deflect, the arms fall


# --- compliant grasps ------------------------------------------------------------------------
STIFFNESS = np.array([1e3, 2e3, 3e3, 10.0, 20.0, 30.0])
DAMPING = np.array([5.0, 6.0, 7.0, 0.1, 0.2, 0.3])


def one_compliant_arm(robot, seed, deflection, object_velocity=np.zeros(6)):
    """One arm, gravity off, at rest, its flange placed at ``deflection`` in its grasp."""
    rng = np.random.default_rng(seed)
    grasp = Grasp(pinocchio.SE3(rotation(rng.uniform(-np.pi, np.pi, 3)),
                                rng.uniform(-0.3, 0.3, 3)), STIFFNESS, DAMPING)
    q = rng.uniform(*limits(robot))
    flange = pinocchio.SE3(rotation(rng.uniform(-np.pi, np.pi, 3)), rng.uniform(-1, 1, 3))
    arm = load_arm(robot, 'arm', flange * flange_in_base(robot, q).inverse(), 0.7)
    object_placement = flange * deflection.inverse() * grasp.object_to_grasp.inverse()
    inertia = pinocchio.Inertia(1.5, np.array([0.02, -0.01, 0.03]),
                                np.diag([0.01, 0.02, 0.03]))
    chain = ClosedChain([arm], inertia, [grasp], gravity=(0.0, 0.0, 0.0))
    state = ChainState([q], [np.zeros(arm.model.nv)], object_placement, object_velocity)
    return chain, state


def expected_motion(chain, state, wrench_at_grasp):
    """Return joint and object accelerations under one grasp wrench, by hand.

    ``wrench_at_grasp`` acts on the object at its grasp frame, its reaction on the arm:
    ``M a = -J^T w`` and ``M_o a_o = Ad*(G) w``.
    """
    arm, grasp = chain.arms[0], chain.grasps[0]
    data = arm.model.createData()
    q = state.q[0]
    mass = pinocchio.crba(arm.model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    jacobian = pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame, LOCAL)
    pinocchio.framesForwardKinematics(arm.model, data, q)
    grasp_to_flange = (state.object_placement * grasp.object_to_grasp).actInv(
        data.oMf[arm.flange_frame])
    at_flange = grasp_to_flange.actInv(pinocchio.Force(wrench_at_grasp)).vector
    at_object = grasp.object_to_grasp.act(pinocchio.Force(wrench_at_grasp)).vector
    return (np.linalg.solve(mass, -jacobian.T @ at_flange),
            np.linalg.solve(spatial_inertia(chain.object_inertia), at_object))


@pytest.mark.parametrize('robot', ('panda', 'ur5'))
@pytest.mark.parametrize('axis', range(6))
@pytest.mark.parametrize('sign', (1.0, -1.0))
def test_a_compliant_grasp_follows_hookes_law_per_axis(robot, axis, sign):
    """Displace the flange by +-1 mm (or turn it by +-0.01 rad) along one grasp axis.

    The object is pulled toward the flange, ``w = K_axis * displacement`` on that axis only.
    """
    amount = sign * (1e-3 if axis < 3 else 1e-2)
    twist = np.zeros(6)
    twist[axis] = amount
    chain, state = one_compliant_arm(robot, 7 * axis + 1, pinocchio.exp6(twist))
    result = chain.accelerations(state, [np.zeros(chain.arms[0].model.nv)])
    expected = np.zeros(6)
    expected[axis] = STIFFNESS[axis] * amount
    assert np.allclose(result.grasp_wrenches[0], expected, rtol=1e-9, atol=1e-9)
    assert np.sign(result.grasp_wrenches[0][axis]) == sign
    joint, body = expected_motion(chain, state, expected)
    assert relative_error(result.joint[0], joint) < 1e-9
    assert relative_error(result.object, body) < 1e-9


@pytest.mark.parametrize('axis', range(6))
def test_a_compliant_grasp_damps_the_relative_velocity_per_axis(axis):
    """Grasp frame moving at -u along one of its axes, flange still: ``w = D_axis * u``."""
    speed = np.zeros(6)
    speed[axis] = 0.1
    chain, state = one_compliant_arm('panda', axis + 3, pinocchio.SE3.Identity())
    state.object_velocity = chain.grasps[0].object_to_grasp.act(
        pinocchio.Motion(-speed)).vector
    result = chain.accelerations(state, [np.zeros(7)])
    assert np.allclose(result.grasp_wrenches[0], DAMPING * speed, rtol=1e-9, atol=1e-12)


def test_stiff_springs_approach_the_rigid_grasp():
    """Fall for 50 ms: undamped springs 10 times stiffer deflect about 10 times less.

    The motion approaches the rigid grasp's at the rate 1/k.
    """
    rigid, state = two_pandas()
    final_rigid, _, _ = run(rigid, state, 1e-4, 0.05)
    gaps = []
    for scale in (1e5, 1e6):
        chain, start = two_pandas(scale * np.array([1.0, 1.0, 1.0, 0.01, 0.01, 0.01]))
        final, _, _ = run(chain, start, 1e-4, 0.05)
        gaps.append(max(np.linalg.norm(pinocchio.log6(
            final.object_placement.actInv(final_rigid.object_placement)).vector),
            max(np.abs(q - q_rigid).max() for q, q_rigid in zip(final.q, final_rigid.q))))
    assert gaps[1] < gaps[0] / 5.0
    assert gaps[1] < 2e-4  # rad and m


def test_the_benchmark_runs_end_to_end():
    """benchmarks/bench_closed_chain.py --quick prints its table (no timing asserted)."""
    import subprocess
    import sys
    from pathlib import Path

    from ros_harness import REPO
    root = Path(REPO)
    completed = subprocess.run(
        [sys.executable, str(root / 'benchmarks' / 'bench_closed_chain.py'), '--quick'],
        capture_output=True, text=True, timeout=120, cwd=root)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].split()[:3] == ['robot', 'arms', 'joints']
    assert [line.split()[:2] for line in lines[1:5]] == [
        ['ur5', '2'], ['ur5', '3'], ['panda', '2'], ['panda', '3']]
    assert lines[-2].startswith('two Pandas, RK4 at 1 kHz: one step')
    assert lines[-1].startswith('two Pandas, RK4 + Aghili projection at 1 kHz: one step')


def test_bad_input_gets_a_clear_error():
    chain, state = two_pandas()
    with pytest.raises(ValueError, match='one torque vector per arm'):
        chain.step(state, [np.zeros(7)], 1e-3)
    with pytest.raises(ValueError, match='torques of right_arm must be 7 finite values'):
        chain.accelerations(state, [np.zeros(7), np.full(7, np.nan)])
    with pytest.raises(ValueError, match='torques of left_arm'):
        chain.step(state, [np.zeros(6), np.zeros(7)], 1e-3)
    with pytest.raises(ValueError, match='dt must be finite and > 0'):
        chain.step(state, [np.zeros(7), np.zeros(7)], 0.0)
    with pytest.raises(ValueError, match='one grasp per arm'):
        ClosedChain(chain.arms, chain.object_inertia, chain.grasps[:1])
    with pytest.raises(ValueError, match='grasp stiffness of left_arm must be 6 finite'):
        ClosedChain(chain.arms, chain.object_inertia,
                    [Grasp(chain.grasps[0].object_to_grasp, np.ones(3)), chain.grasps[1]])
    with pytest.raises(ValueError, match='cannot reach its grasp'):
        chain.close([arm.home for arm in chain.arms],
                    pinocchio.SE3(np.eye(3), np.array([5.0, 0.0, 0.0])))


def test_close_puts_each_flange_on_its_grasp_within_the_joint_limits_at_rest():
    chain, state = two_pandas()
    assert np.abs(chain.closure_error(state)).max() < 1e-10
    for arm, q, v in zip(chain.arms, state.q, state.v):
        assert np.all(arm.lower <= q) and np.all(q <= arm.upper)
        assert not np.any(v)
        data = arm.model.createData()
        pinocchio.framesForwardKinematics(arm.model, data, q)
        # The flange by forward kinematics, against the object's placement times the grasp.
        grasp = chain.grasps[chain.arms.index(arm)].object_to_grasp
        target = state.object_placement * grasp
        assert np.allclose(data.oMf[arm.flange_frame].homogeneous, target.homogeneous,
                           atol=1e-10)
    assert not np.any(state.object_velocity)


@settings(max_examples=15, deadline=None)
@given(mass=st.floats(0.05, 20.0), seed=st.integers(0, 2**32 - 1))
def test_at_the_singular_pose_any_load_gives_aghilis_accelerations_and_minimum_norm_forces(
        mass, seed):
    """Random torques, object mass and centre of mass at the stretched pose."""
    arms, grasps, _, state, _ = stretched_pair()
    rng = np.random.default_rng(seed)
    inertia = pinocchio.Inertia(mass, rng.uniform(-0.1, 0.1, 3),
                                mass * np.diag(rng.uniform(0.005, 0.05, 3)))
    torques = [rng.uniform(-30.0, 30.0, 6), rng.uniform(-30.0, 30.0, 6)]
    system = (arms, grasps, inertia, state, torques)
    ours, wrenches = solve(*system)
    projected, multipliers = aghili_reference(*whole_system(*system))
    assert relative_error(ours, projected) < 1e-8
    assert relative_error(wrenches.ravel(), multipliers) < 1e-8


# --- off the constraint manifold: Baumgarte and transport terms against the closure's FD ----
def closure_placement(arm, grasp, q, object_placement):
    """Return ``P = (X_o G)^-1 F(q)``, the flange in its grasp frame (identity when closed)."""
    data = arm.model.createData()
    pinocchio.framesForwardKinematics(arm.model, data, q)
    return (object_placement * grasp.object_to_grasp).actInv(data.oMf[arm.flange_frame])


def closure_derivatives(arm, grasp, state, index, joint, body, step):
    """Return ``phi``, ``nu`` and ``nu'`` of the closure along the solver's motion, by FD.

    The motion: ``q(t) = q + t v + t^2/2 a``, ``X_o(t) = X_o exp6(t V_o + t^2/2 alpha)``
    (body velocity ``V_o + t alpha + O(t^2)``). ``nu`` is the body velocity of ``P(t)``,
    ``log6(P(t - h)^-1 P(t + h)) / 2h``; ``nu'`` its central difference. Both with the step
    ``step`` and half of it, Richardson-extrapolated (errors O(h^4)).
    """
    def placement(t):
        q = state.q[index] + t * state.v[index] + 0.5 * t * t * joint
        xi = t * state.object_velocity + 0.5 * t * t * body
        return closure_placement(arm, grasp, q, state.object_placement * pinocchio.exp6(xi))

    def estimates(h):
        at = {k: placement(k * h) for k in (-2, -1, 0, 1, 2)}
        velocity = pinocchio.log6(at[-1].actInv(at[1])).vector / (2 * h)
        later = pinocchio.log6(at[0].actInv(at[2])).vector / (2 * h)  # nu(h)
        earlier = pinocchio.log6(at[-2].actInv(at[0])).vector / (2 * h)  # nu(-h)
        return velocity, (later - earlier) / (2 * h)
    coarse, fine = estimates(step), estimates(0.5 * step)
    velocity, acceleration = ((4.0 * f - c) / 3.0 for c, f in zip(coarse, fine))
    return pinocchio.log6(placement(0.0)).vector, velocity, acceleration


@settings(max_examples=15, deadline=None, phases=NO_SHRINK)
@given(system=systems(), frequency=st.sampled_from((0.0, 5.0, 20.0)),
       closure=st.sampled_from((0.0, 1e-3, 3e-2)), seed=st.integers(0, 2**32 - 1))
def test_off_the_manifold_the_closure_obeys_baumgartes_law_by_finite_differences(
        system, frequency, closure, seed):
    """Closure error and inconsistent velocities: ``nu' + 2 w nu + w^2 phi = 0`` per grasp.

    ``phi = log6(P)``, ``nu`` the relative twist (body velocity of ``P``) and ``nu'`` come
    from finite differences of the closure ``P(t)`` written here, along the motion the
    solver's accelerations give; with ``w = 0`` it is ``nu' = 0``: the transport term
    ``V_f x (B V_o)`` alone (the relative velocity is far from zero).
    """
    arms, grasps, inertia, state, torques = system
    rng = np.random.default_rng(seed)
    state = ChainState([q + closure * rng.normal(size=q.size) for q in state.q],
                       [v + rng.uniform(-1.0, 1.0, v.size) for v in state.v],
                       state.object_placement, state.object_velocity)
    # at an exactly singular arm, off the manifold, no bounded force closes the chain (the
    # solver drops Omega's eigenvalues below rcond): keep the arms away from it
    assume(min(smallest_singular_value(arm, q) for arm, q in zip(arms, state.q)) > 1e-3)
    chain = ClosedChain(arms, inertia, grasps, gravity=GRAVITY,
                        stabilisation_frequency=frequency)
    result = chain.accelerations(state, torques)
    largest = np.abs(np.concatenate(result.joint + [result.object])).max()
    step = 1e-4 * min(1.0, np.sqrt(100.0 / largest))  # the path's curvature sets the step
    for index, (arm, grasp) in enumerate(zip(arms, grasps)):
        phi, nu, rate = closure_derivatives(arm, grasp, state, index, result.joint[index],
                                            result.object, step)
        assert np.linalg.norm(nu) > 0.1  # inconsistent velocities indeed
        if closure:  # off the closure by about the joints' offset, or closed as drawn
            assert np.abs(phi).max() >= 0.1 * closure
        else:
            assert np.abs(phi).max() < 1e-9
        terms = [rate, 2.0 * frequency * nu, frequency ** 2 * phi]
        # the scale: the largest term, the flange's acceleration (what cancels in nu'), or
        # the transport term's size |nu| (|nu| + |V_o|); the differences' rounding and
        # truncation leave up to 4e-8 of it (80 draws at w = 0)
        scale = max(max(np.linalg.norm(term) for term in terms),
                    flange_acceleration(arm, state.q[index], state.v[index], result.joint[index]),
                    np.linalg.norm(nu) * (np.linalg.norm(nu) + np.linalg.norm(state.object_velocity)))
        assert np.linalg.norm(sum(terms)) <= 1e-7 * scale, (index, terms)


def smallest_singular_value(arm, q):
    """Return the flange Jacobian's smallest singular value (0 at a singular pose)."""
    data = arm.model.createData()
    jacobian = pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame, LOCAL)
    return np.linalg.svd(jacobian, compute_uv=False)[-1]


def flange_acceleration(arm, q, v, a):
    """Return the size of the flange's spatial acceleration (Pinocchio's forward kinematics)."""
    data = arm.model.createData()
    pinocchio.forwardKinematics(arm.model, data, q, v, a)
    return np.linalg.norm(pinocchio.getFrameAcceleration(arm.model, data, arm.flange_frame,
                                                         LOCAL).vector)


# --- compliant and mixed rigid/compliant grasps at non-zero velocities, against Pinocchio ----
def spring_coordinates(placement):
    """Return ``s = (p, log3(R))`` of the flange in its grasp frame, ``P = (R, p)``."""
    return np.concatenate([placement.translation, pinocchio.log3(placement.rotation)])


def spring_on_object(grasp, placement, relative):
    """Return the grasp spring-damper's wrench on the object at the flange, flange axes.

    Written from the potential ``V = 1/2 s^T K s`` and the dissipation ``1/2 s'^T D s'``: a
    flange twist ``delta`` relative to the grasp changes ``s`` by ``S delta``, so the wrench
    pulling the object is ``S^T (K s + D S nu_rel)``; ``S`` by central differences of ``s``
    along ``P exp6(delta)`` (no Jacobian of log3 taken from anywhere).

    :param placement: ``P``, the flange in its grasp frame.
    :param relative: the flange's twist relative to the grasp frame, flange axes.
    """
    step = 1e-6
    jacobian = np.column_stack([
        (spring_coordinates(placement * pinocchio.exp6(step * unit))
         - spring_coordinates(placement * pinocchio.exp6(-step * unit))) / (2 * step)
        for unit in np.eye(6)])
    coordinates = spring_coordinates(placement)
    return jacobian.T @ (grasp.stiffness * coordinates + grasp.damping * (jacobian @ relative))


def mixed_reference(arms, grasps, inertia, state, torques):
    """Return accelerations and grasp wrenches by Pinocchio, compliant grasps as forces.

    Rigid grasps are ``CONTACT_6D``; compliant ones the generalised forces of their
    spring-dampers (written here).

    :return: stacked accelerations and the (l, 6) wrenches on the object at each grasp
        frame, grasp axes.
    """
    tau, object_force, springs = [t.copy() for t in torques], np.zeros(6), {}
    for index, (arm, grasp) in enumerate(zip(arms, grasps)):
        if grasp.rigid:
            continue
        data = arm.model.createData()
        q, v = state.q[index], state.v[index]
        pinocchio.forwardKinematics(arm.model, data, q, v)
        flange = pinocchio.updateFramePlacement(arm.model, data, arm.flange_frame)
        flange_to_object = flange.actInv(state.object_placement)
        relative = pinocchio.getFrameVelocity(arm.model, data, arm.flange_frame, LOCAL).vector \
            - flange_to_object.action @ state.object_velocity
        placement = (state.object_placement * grasp.object_to_grasp).actInv(flange)
        wrench = spring_on_object(grasp, placement, relative)
        jacobian = pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame, LOCAL)
        tau[index] = tau[index] - jacobian.T @ wrench  # the arm gets the opposite
        object_force += flange_to_object.inverse().act(pinocchio.Force(wrench)).vector
        springs[index] = placement.act(pinocchio.Force(wrench)).vector  # at the grasp frame
    rigid = [index for index, grasp in enumerate(grasps) if grasp.rigid]
    acceleration, forces = constrained_whole(arms, grasps, inertia, state, tau, object_force,
                                             rigid)
    wrenches = np.array([springs[index] if index in springs else forces[rigid.index(index)]
                         for index in range(len(arms))])
    return acceleration, wrenches


def constrained_whole(arms, grasps, inertia, state, tau, object_force, rigid):
    """Pinocchio on one model (every arm and the object as a free-flyer), ``rigid`` closed.

    :return: accelerations, and ``-lambda_c`` per rigid grasp (the wrench on the object).
    """
    model = pinocchio.Model()
    for index, arm in enumerate(arms):
        model = pinocchio.appendModel(model, renamed(arm.model, f'a{index}_'), 0,
                                      pinocchio.SE3.Identity())
    joint = model.addJoint(0, pinocchio.JointModelFreeFlyer(), pinocchio.SE3.Identity(),
                           'object')
    model.appendBodyToJoint(joint, inertia, pinocchio.SE3.Identity())
    model.gravity = pinocchio.Motion(GRAVITY, np.zeros(3))
    data = model.createData()
    q = np.concatenate(state.q + [pinocchio.SE3ToXYZQUAT(state.object_placement)])
    v = np.concatenate(state.v + [state.object_velocity])
    tau = np.concatenate(tau + [object_force])  # the free-flyer's force: a body wrench
    if not rigid:
        return pinocchio.aba(model, data, q, v, tau), np.zeros((0, 6))
    constraints = []
    for index in rigid:
        frame = model.frames[model.getFrameId(
            f'a{index}_' + arms[index].model.frames[arms[index].flange_frame].name)]
        constraints.append(pinocchio.RigidConstraintModel(
            pinocchio.ContactType.CONTACT_6D, model, frame.parentJoint, frame.placement,
            joint, grasps[index].object_to_grasp, LOCAL))
    constraints = pinocchio.StdVec_RigidConstraintModel(constraints)
    datas = pinocchio.StdVec_RigidConstraintData([c.createData() for c in constraints])
    pinocchio.initConstraintDynamics(model, data, constraints, datas)
    acceleration = pinocchio.constraintDynamics(model, data, q, v, tau, constraints, datas,
                                                pinocchio.ProximalSettings(1e-14, 1e-8, 50))
    return acceleration, -data.lambda_c.reshape(-1, 6)


@st.composite
def mixed_systems(draw):
    """Draw a closed system (``systems``), some grasps made compliant, deflected, moving."""
    arms, grasps, inertia, state, torques = draw(systems())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    compliant = draw(st.lists(st.booleans(), min_size=len(arms), max_size=len(arms)).filter(any))
    q, v = list(state.q), list(state.v)
    for index in np.flatnonzero(compliant):
        grasps[index] = Grasp(grasps[index].object_to_grasp,
                              rng.uniform(1e3, 1e5, 6) * np.repeat([1.0, 1e-2], 3),
                              rng.uniform(1.0, 100.0, 6) * np.repeat([1.0, 1e-2], 3))
        q[index] = q[index] + rng.normal(0.0, 0.02, q[index].size)  # deflects the pad
        v[index] = v[index] + rng.uniform(-1.0, 1.0, v[index].size)  # slides in it
    return arms, grasps, inertia, ChainState(q, v, state.object_placement,
                                             state.object_velocity), torques


@settings(max_examples=20, deadline=None, phases=NO_SHRINK)
@given(system=mixed_systems())
def test_compliant_and_mixed_grasps_in_motion_match_pinocchio(system):
    """Springs deflected, pads sliding, rigid grasps closed and moving: as Pinocchio.

    Joints 2 cm off where they close the compliant grasps, up to 1 rad/s more per joint:
    accelerations and every grasp's wrench as Pinocchio's.
    """
    ours, wrenches = solve(*system)
    reference, reference_wrenches = mixed_reference(*system)
    assert relative_error(ours, reference) < 1e-8
    assert relative_error(wrenches, reference_wrenches) < 1e-8
    compliant = [index for index, grasp in enumerate(system[1]) if not grasp.rigid]
    assert np.linalg.norm(wrenches[compliant]) > 1.0  # the springs do pull


@settings(max_examples=8, deadline=None, phases=NO_SHRINK)
@given(system=systems(), seed=st.integers(0, 2**32 - 1))
def test_off_the_manifold_aghilis_projection_is_the_least_kinetic_energy_change(system, seed):
    """Project a state off the closure with inconsistent velocities (his eqs. 8-10, 39).

    Closure error 1e-3 and velocities up to 1 rad/s off: after the projection the chain is
    closed to a thousandth of the tolerance, the relative twists vanish, and the velocity
    change ``d`` is the mass-weighted least one: ``M d`` lies in the range of ``A^T``
    (``M`` and ``A`` of the whole system written here, at the projected positions), so the
    kinetic energy drops by exactly ``1/2 d^T M d``.
    """
    arms, grasps, inertia, state, torques = system
    rng = np.random.default_rng(seed)
    state = ChainState([q + 1e-3 * rng.normal(size=q.size) for q in state.q],
                       [v + rng.uniform(-1.0, 1.0, v.size) for v in state.v],
                       state.object_placement, state.object_velocity)
    assume(min(smallest_singular_value(arm, q) for arm, q in zip(arms, state.q)) > 1e-2)
    chain = ClosedChain(arms, inertia, grasps, gravity=GRAVITY, stabilisation_frequency=0.0,
                        projection_tolerance=1e-9)
    before = np.concatenate(state.v + [state.object_velocity])
    projected = ChainState([q.copy() for q in state.q], [v.copy() for v in state.v],
                           state.object_placement, state.object_velocity.copy())
    chain._project(projected)  # what step() runs after each RK4 step
    assert np.abs(chain.closure_error(projected)).max() <= 1e-12
    mass, _, jacobian, _ = whole_system(arms, grasps, inertia, projected, torques)
    after = np.concatenate(projected.v + [projected.object_velocity])
    assert np.abs(jacobian @ after).max() <= 1e-9 * np.abs(jacobian @ before).max()
    change = after - before
    impulse = np.linalg.lstsq(jacobian.T, mass @ change, rcond=None)[0]
    assert relative_error(jacobian.T @ impulse, mass @ change) < 1e-8
    drop = 0.5 * before @ mass @ before - 0.5 * after @ mass @ after
    assert drop == pytest.approx(0.5 * change @ mass @ change, rel=1e-8)
