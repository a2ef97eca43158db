"""Arms with joints: admittance -> damped least squares -> joint position loop, flange F/T readings.

References are derived here by hand: the step response of ``m x'' + c x' + k x = F``
(ros2_controllers' damping ``2 zeta sqrt(m k)`` plus its ``joint_damping`` times ``m``), the
bound ``s / (s^2 + lambda^2) <= 1 / (2 lambda)`` of damped least squares, and the static
wrench a flange sensor carries under a hanging mass and the gripper. The arm's motion is
integrated here with Pinocchio's own ABA (one arm, no closed chain), the flange readings of a
held object with the closed-chain solver. No ROS.
"""
import math
import os
from pathlib import Path
import subprocess
import sys

import numpy as np
import pinocchio
import pytest
from scipy.spatial.transform import Rotation

from ros_harness import REPO
from wrench_distribution.core.sensor_model import SensorModel
from wrench_distribution.sim.control.admittance import AdmittanceParameters
from wrench_distribution.sim.physics.arm_models import load_arm
from wrench_distribution.sim.physics.ft_sensor import SimulatedFTSensors
from wrench_distribution.sim.physics.joint_arms import (damped_least_squares, DlsSettings, drive_gains,
                                                        joint_reference_step, JointArmController)

G = 9.81
ROOT = Path(REPO)
GRIPPER_MASS, GRIPPER_COM = 0.3, (0.0, 0.0, 0.04)
#: Joint loop bandwidth (rad/s): its lag 2 zeta / w = 33 ms, against the admittance's
#: natural period 2 pi / sqrt(K / M) = 2 s.
JOINT_BANDWIDTH = 60.0


def mass_damper_spring_step(mass: float, damping: float, stiffness: float, force: float,
                            t: np.ndarray) -> np.ndarray:
    """Solve ``m x'' + c x' + k x = F``, ``x(0) = x'(0) = 0``, by hand (zeta <= 1)."""
    omega = math.sqrt(stiffness / mass)
    zeta = damping / (2.0 * math.sqrt(stiffness * mass))
    final = force / stiffness
    if abs(zeta - 1.0) < 1e-12:
        return final * (1.0 - np.exp(-omega * t) * (1.0 + omega * t))
    assert zeta < 1.0
    wd = omega * math.sqrt(1.0 - zeta ** 2)
    return final * (1.0 - np.exp(-zeta * omega * t) * (
        np.cos(wd * t) + zeta * omega / wd * np.sin(wd * t)))


def free_arm(law: AdmittanceParameters, q0=None):
    """One Panda with a 0.3 kg gripper, its controller (same gripper) and flange sensor (sign -1)."""
    arm = load_arm('panda', 'arm', None, GRIPPER_MASS, GRIPPER_COM)
    q0 = arm.home.copy() if q0 is None else np.asarray(q0, float)
    controller = JointArmController(arm, law, drive_gains(arm, JOINT_BANDWIDTH), q0)
    sensors = SimulatedFTSensors([SensorModel(sign=-1, tool_mass=GRIPPER_MASS,
                                              tool_com=GRIPPER_COM)])
    return arm, controller, sensors


def run_free(arm, controller, sensors, reference: np.ndarray, duration: float, dt: float = 1e-3):
    """Integrate the arm in free space with ABA (semi-implicit Euler); record flange and torques."""
    model, data = arm.model, arm.model.createData()
    q, v = controller.q_ref.copy(), np.zeros(model.nv)
    start = controller.flange_pose(q)
    poses, torques, joints = [], [], []
    for _ in range(int(round(duration / dt))):
        rotation = controller.flange_pose(q)[1]
        gravity = rotation.T @ model.gravity.linear  # free space: the sensor carries the gripper
        reading = sensors.read(np.zeros((1, 6)), gravity[None])[0]
        tau = controller.update(q, v, reading, reference, start, dt)
        v = v + dt * pinocchio.aba(model, data, q, v, tau)
        q = pinocchio.integrate(model, q, v * dt)
        poses.append(controller.flange_pose(q))
        torques.append(tau)
        joints.append(q)
    return start, poses, np.array(torques), np.array(joints)


@pytest.mark.parametrize('axis,zeta', [(0, 1.0), (1, 0.5), (2, 1.0), (3, 0.7), (5, 1.0)])
def test_a_wrench_step_moves_the_flange_as_the_admittance_law_says(axis, zeta):
    """A step in the wrench reference along one sensor axis: ``x(t)`` of ``M x'' + c x' + K x = F``.

    Free in space, with the controller's gripper compensation equal to the truth, the law sees
    the reference alone; the flange moves along (about) that sensor axis, toward the push,
    settles at ``F / K``, and nothing else moves. Tolerance: the joint loop follows with a
    lag of about ``2 / w`` (33 ms), so the flange trails the law by at most that lag times the
    largest speed of ``x(t)``, taken 1.5 times, plus 0.3 mm (0.3 mrad) for the DLS steps and
    the law's stiffness acting on the lagging flange.
    """
    mass = [10.0, 10.0, 10.0, 0.5, 0.5, 0.5]
    stiffness = [100.0, 100.0, 100.0, 5.0, 5.0, 5.0]
    law = AdmittanceParameters(mass, [zeta] * 6, stiffness, joint_damping=0.0,
                               filter_coefficient=1.0, cog_force=GRIPPER_MASS * G,
                               cog_position=GRIPPER_COM)
    push = 5.0 if axis < 3 else 0.25
    reference = np.zeros(6)
    reference[axis] = push
    arm, controller, sensors = free_arm(law)
    (p0, r0), poses, torques, joints = run_free(arm, controller, sensors, reference, 3.0)
    t = 1e-3 * np.arange(1, len(poses) + 1)
    m, k = mass[axis], stiffness[axis]
    c = 2.0 * zeta * math.sqrt(m * k) + m * law.joint_damping
    expected = mass_damper_spring_step(m, c, k, push, t)
    # displacement of the flange in the initial sensor axes: translation, rotation vector
    moved = np.array([np.concatenate([r0.T @ (p - p0), r0.T @ Rotation.from_matrix(
        r @ r0.T).as_rotvec()]) for p, r in poses])
    speed = np.abs(np.diff(expected)).max() / 1e-3
    tolerance = 1.5 * (2.0 / JOINT_BANDWIDTH) * speed + 3e-4
    assert np.abs(moved[:, axis] - expected).max() < tolerance, (
        np.abs(moved[:, axis] - expected).max(), tolerance)
    assert moved[-1, axis] == pytest.approx(push / k, rel=0.02)  # settled at F / K, toward F
    others = np.delete(np.arange(6), axis)
    assert np.abs(moved[:, others]).max() < 0.05 * push / k
    assert np.all(np.abs(torques) <= arm.effort_limit)
    assert np.all((joints >= arm.lower) & (joints <= arm.upper))


def test_torques_are_clipped_to_the_effort_limits_and_joints_stay_within_theirs():
    """A 300 N pull and no admittance spring: the drives saturate, the limits hold.

    The flange is pulled up and out until the arm meets its joint limits; every torque stays
    within ``effort_limit``, every joint within its limits, and the controller counts the
    saturated periods and the clamped references.
    """
    law = AdmittanceParameters([2.0] * 3 + [0.2] * 3, [1.0] * 6, [0.0] * 6, joint_damping=1.0,
                               filter_coefficient=1.0, cog_force=GRIPPER_MASS * G,
                               cog_position=GRIPPER_COM)
    arm, controller, sensors = free_arm(law)
    _, _, torques, joints = run_free(arm, controller, sensors,
                                     np.array([150.0, 0.0, -250.0, 0.0, 0.0, 0.0]), 2.0)
    assert np.all(np.abs(torques) <= arm.effort_limit)
    assert np.any(np.isclose(np.abs(torques), arm.effort_limit))
    assert controller.saturation_count > 0
    assert controller.limit_clamp_count > 0
    assert np.all((joints >= arm.lower - 1e-9) & (joints <= arm.upper + 1e-9))
    assert np.all((controller.q_ref >= arm.lower) & (controller.q_ref <= arm.upper))


def stretched_ur5(elbow: float) -> np.ndarray:
    """UR5 flange Jacobian with the elbow at ``elbow`` rad (0: fully stretched, singular)."""
    arm = load_arm('ur5', 'arm')
    q = np.array([0.0, -math.pi / 2, elbow, -math.pi / 2, math.pi / 2, 0.0])
    data = arm.model.createData()
    return pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame,
                                          pinocchio.ReferenceFrame.LOCAL_WORLD_ALIGNED)


def test_dls_stays_bounded_at_the_stretched_arm_where_the_pseudo_inverse_blows_up():
    """UR5 with its elbow 1e-5 rad from straight: 1 mm along the lost direction.

    By hand: each DLS gain ``s / (s^2 + lambda^2)`` is at most ``1 / (2 lambda)``, and at
    ``s_min << epsilon`` the damping is ``lambda_max``; so ``|dq| <= |e| / (2 lambda_max)``,
    while the pseudo-inverse's ``|e| / s_min`` is hundreds of radians.
    """
    jacobian = stretched_ur5(1e-5)
    u, s, _ = np.linalg.svd(jacobian)
    assert s[-1] < 1e-4  # singular in the elbow
    error = 1e-3 * u[:, 5]
    settings = DlsSettings(damping=0.05, singular_threshold=0.08)
    plain = np.linalg.pinv(jacobian, rcond=1e-15) @ error
    assert np.linalg.norm(plain) > 10.0
    dq, s_min, damping = damped_least_squares(jacobian, error, settings)
    assert s_min == pytest.approx(s[-1], abs=1e-12)
    assert damping == pytest.approx(0.05, rel=1e-3)
    assert np.linalg.norm(dq) <= 1e-3 / (2 * 0.05) + 1e-15


def test_dls_is_the_pseudo_inverse_away_from_singularities():
    """Bent elbow, ``s_min`` above the threshold: no damping, ``J dq = e`` exactly (6 x 6)."""
    jacobian = stretched_ur5(1.2)
    error = np.array([0.01, -0.02, 0.005, 0.02, 0.0, -0.01])
    dq, s_min, damping = damped_least_squares(jacobian, error, DlsSettings(0.05, 0.01))
    assert s_min > 0.01 and damping == 0.0
    assert jacobian @ dq == pytest.approx(error, abs=1e-12)


@pytest.mark.parametrize('joint,side', [(3, 'upper'), (5, 'upper'), (0, 'lower')])
def test_a_joint_near_its_limit_is_weighted_down_then_clamped(joint, side):
    """A Panda joint 0.05 rad from a limit, the error asking to move it beyond: clamped there.

    The pose error is the flange motion the joint alone would make moving 0.3 rad: the
    unweighted DLS step moves it beyond the limit; the weighted step moves it less, and the
    reference stops at the limit.
    """
    arm = load_arm('panda', 'arm')
    q = arm.home.copy()
    limit = arm.upper[joint] if side == 'upper' else arm.lower[joint]
    q[joint] = limit - 0.05 if side == 'upper' else limit + 0.05
    data = arm.model.createData()
    jacobian = pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame,
                                              pinocchio.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    direction = 1.0 if side == 'upper' else -1.0
    error = jacobian[:, joint] * 0.3 * direction
    settings = DlsSettings()
    new, _, _, clamped = joint_reference_step(jacobian, error, q, arm.lower, arm.upper, settings)
    assert np.all((new >= arm.lower) & (new <= arm.upper))
    assert direction * (new[joint] - q[joint]) <= 0.05 + 1e-12
    unweighted = damped_least_squares(jacobian, error, settings)[0]
    assert direction * unweighted[joint] > 0.05  # without the limits it would go beyond
    weights = np.ones(arm.model.nv)
    weights[joint] = (0.05 / settings.limit_margin) ** 2
    weighted = damped_least_squares(jacobian, error, settings, weights)[0]
    assert direction * weighted[joint] < direction * unweighted[joint]
    assert clamped == bool(direction * weighted[joint] > 0.05)


def hanging_object(q0, object_mass: float, com: np.ndarray):
    """One Panda holding an object (compliant pads) at its flange, position-held, settled 2.5 s."""
    from wrench_distribution.sim.physics.closed_chain import ClosedChain, Grasp
    from wrench_distribution.sim.physics.joint_arms import JointArmsSim
    arm = load_arm('panda', 'arm', None, GRIPPER_MASS, GRIPPER_COM)
    law = AdmittanceParameters([10.0] * 3 + [0.5] * 3, [1.0] * 6, [100.0] * 3 + [5.0] * 3,
                               filter_coefficient=1.0, selected_axes=np.zeros(6))
    grasp = Grasp(pinocchio.SE3.Identity(), np.array([3000.0] * 3 + [60.0] * 3),
                  np.array([60.0] * 3 + [0.4] * 3))
    inertia = pinocchio.Inertia(object_mass, com, np.diag([0.01, 0.012, 0.008]))
    chain = ClosedChain([arm], inertia, [grasp])
    data = arm.model.createData()
    pinocchio.framesForwardKinematics(arm.model, data, q0)
    state = chain.close([q0], data.oMf[arm.flange_frame].copy())
    sensors = SimulatedFTSensors([SensorModel(sign=1, tool_mass=GRIPPER_MASS,
                                              tool_com=GRIPPER_COM)])
    controller = JointArmController(arm, law, drive_gains(arm, JOINT_BANDWIDTH), state.q[0])
    start = controller.flange_pose(state.q[0])
    sim = JointArmsSim(chain, [controller], sensors,
                       lambda t: (start[0][None], start[1][None]), state, com)
    for _ in range(2500):
        sim.step(np.zeros((1, 6)), 1e-3)
    return sim


@pytest.mark.parametrize('q0', [[0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
                                [0.4, -0.3, 0.2, -2.0, 0.6, 2.2, -0.5]])
def test_the_flange_sensor_reads_the_held_weight_and_the_gripper(q0):
    """An arm holding a 1.5 kg object at rest: the reading derived by hand.

    The sensor (sign +1: the wrench the arm applies beyond it) carries the object and the
    gripper: in world axes the force is ``-(m_o + m_g) g`` and the moment about the flange
    origin ``p`` is ``-(c_o - p) x m_o g - (R c_g) x m_g g``; in the sensor (flange) frame,
    ``R^T`` of both. The object's centre ``c_o`` is where the simulation put it (the pads
    sag a little); the residual motion after settling bounds the tolerance.
    """
    com = np.array([0.03, -0.02, 0.06])
    sim = hanging_object(np.array(q0), 1.5, com)
    assert np.abs(sim.state.object_velocity).max() < 2e-3
    flange = sim.flange_placements()[0]
    rotation, origin = flange.rotation, flange.translation
    gravity = np.array([0.0, 0.0, -G])
    centre = sim.state.object_placement.act(com)
    force = -(1.5 + GRIPPER_MASS) * gravity
    moment = -np.cross(centre - origin, 1.5 * gravity) - np.cross(
        rotation @ np.array(GRIPPER_COM), GRIPPER_MASS * gravity)
    expected = np.concatenate([rotation.T @ force, rotation.T @ moment])
    reading = sim.readings()[0]
    assert reading[:3] == pytest.approx(expected[:3], abs=0.03)
    assert reading[3:] == pytest.approx(expected[3:], abs=0.003)
    assert np.linalg.norm(reading[:3]) == pytest.approx(1.8 * G, rel=2e-3)


def test_nodes_core_engines_and_bag_tools_never_import_pinocchio():
    """Pinocchio is the simulator's extra: nothing a robot runs imports it."""
    code = ('import sys\n'
            'import wrench_distribution, wrench_distribution.core, wrench_distribution.engine\n'
            'import wrench_distribution.distributor_node, wrench_distribution.analyzer_node\n'
            'import wrench_distribution.cli, wrench_distribution.bag\n'
            'import wrench_distribution.sim.scenarios, wrench_distribution.sim.nodes.object_sim_node\n'
            'import wrench_distribution.sim.demo.run\n'
            'print(sorted(m for m in sys.modules if "pinocchio" in m or "example_robot" in m))\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == '[]', out.stdout


def test_without_the_extra_the_scenario_says_how_to_install_it(tmp_path):
    """Pinocchio hidden: the demo refuses dual_arm_joints before starting anything, naming .[sim]."""
    code = ('import sys\n'
            'sys.modules["pinocchio"] = None\n'
            'from wrench_distribution.sim.demo.run import main\n'
            f'rc = main(["--scenario", "dual_arm_joints", "--out", {str(tmp_path)!r}])\n'
            'try:\n'
            '    import wrench_distribution.sim.physics.arm_models\n'
            'except ImportError as e:\n'
            '    print("import:", e)\n'
            'sys.exit(rc)\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert 'pip install .[sim]' in out.stderr
    assert 'import:' in out.stdout and 'pip install .[sim]' in out.stdout
    assert not any(tmp_path.iterdir())  # nothing started, nothing written


def test_a_panda_and_a_ur5_hold_the_box_together():
    """dual_arm_joints with its right Panda replaced by a UR5: the two arms carry the box.

    Held 0.5 s in the fixture, then free for 1 s with each arm asked for half the weight
    (its share along world z, turned into its sensor frame) and a 20 N squeeze: the box
    stays within 2 cm of where it was, and the vertical forces the two flanges apply sum to
    the box's weight within 2 % (by hand: m g = 19.62 N; the box is nearly at rest).
    """
    from wrench_distribution.sim import scenarios
    p = scenarios.load_sections('dual_arm_joints')['object_sim']
    p.update(arm_robots=['panda', 'ur5'], arm_base_positions=[0.0, 0.615, 0.105, 0.109, -0.76, 0.631],
             arm_base_orientations=[0.0, 0.0, -0.7071068, 0.7071068, 0.0, 0.0, 0.0, 1.0],
             arm_joint_guesses=[0.0, -0.5, 0.0, -2.4, 0.0, 3.5, 0.785,
                                1.57, -1.2, 1.8, -0.6, 1.57, 3.14],
             sensor_force_noise=0.0, sensor_torque_noise=0.0, sensor_biases=[],
             arm_move_offset=[0.0, 0.0, 0.0], arm_move_rotation=[0.0, 0.0, 0.0])
    sim = scenarios.build_sim(p)
    assert [arm.robot for arm in sim.chain.arms] == ['panda', 'ur5']
    start = sim.object_frame_pose()[0]
    frames = sim.effector_frames()
    commands = np.array([[0.0, 0.0, 20.0, 0.0, 0.0, 0.0]] * 2)
    commands[:, :3] += np.einsum('nji,j->ni', frames, [0.0, 0.0, 2.0 * G / 2])
    for k in range(1500):
        sim.step(commands, 1e-3, fixed=k < 500)
    assert np.linalg.norm(sim.object_frame_pose()[0] - start) < 0.02
    world = np.einsum('nij,nj->ni', sim.effector_frames(), sim.transmitted()[:, :3])
    assert world[:, 2].sum() == pytest.approx(2.0 * G, rel=0.02)
    assert np.all(np.abs(np.concatenate(sim.tau)) <= np.concatenate(
        [arm.effort_limit for arm in sim.chain.arms]))


def test_the_joint_scenario_tells_the_nodes_a_slightly_wrong_world():
    """dual_arm_joints: the truth's grippers are the sensors' tool masses, the controllers' their belief.

    The physics' arm models carry ``tool_masses`` (0.32, 0.28 kg), the controllers' models the
    0.3 kg of ``admittance_cog_forces / g``: the total masses differ by exactly that much.
    """
    from wrench_distribution.sim import scenarios
    sections = scenarios.load_sections('dual_arm_joints')
    assert scenarios.check_consistency(sections) == []
    checked = scenarios.validate_sections(sections)
    sim_p, analyzer = checked['object_sim'], checked['wrench_analyzer']
    assert sim_p['effector_model'] == 'joints'
    assert checked['wrench_distributor']['contact_frames'] == [
        f'{e}_ft_sensor' for e in sim_p['effectors']]
    assert 0 < np.abs(sim_p['contact_position_errors']).max() <= 0.005
    truth, believed = np.array(sim_p['tool_masses']), np.array(analyzer['tool_masses'])
    assert np.all(truth != believed) and np.all(np.abs(truth - believed) <= 0.1 * believed)
    assert sim_p['admittance_cog_forces'] == pytest.approx(list(believed * G), rel=1e-3)
    for name in ('move_start', 'move_duration', 'move_offset', 'move_rotation'):
        assert sim_p['arm_' + name] == checked['object_controller'][name], name
    sim = scenarios.build_sim(sections['object_sim'])
    for i, (arm, controller) in enumerate(zip(sim.chain.arms, sim.controllers)):
        difference = pinocchio.computeTotalMass(arm.model) - pinocchio.computeTotalMass(
            controller.arm.model)
        assert difference == pytest.approx(truth[i] - believed[i], abs=1e-4)
