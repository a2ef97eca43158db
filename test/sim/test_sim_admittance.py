"""The simulator's admittance-controlled arms: the law, the reference frame, the tool weight.

References are derived here by hand: the step response of ``M x'' + c x' + K x = F`` (with
``c = 2 zeta sqrt(M K) + M joint_damping``, ros2_controllers' damping plus its
``joint_damping``), the weight of a tool read by a turned sensor, and the exact first-order
lag of the position loop. No ROS.
"""
import math

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from wrench_distribution.sim.control.admittance import (accepts_reference, AdmittanceParameters,
                                                        AdmittanceRule, PositionLoop)

G = 9.81


def mass_damper_spring_step(mass: float, damping: float, stiffness: float, force: float,
                            t: np.ndarray) -> np.ndarray:
    """Solve ``m x'' + c x' + k x = F``, ``x(0) = x'(0) = 0``, by hand (every damping case)."""
    if stiffness == 0.0:  # m x'' + c x' = F: ramp after an exponential transient
        tau = mass / damping
        return force / damping * (t - tau * (1.0 - np.exp(-t / tau)))
    omega = math.sqrt(stiffness / mass)
    zeta = damping / (2.0 * math.sqrt(stiffness * mass))
    final = force / stiffness
    if zeta < 1.0:
        wd = omega * math.sqrt(1.0 - zeta ** 2)
        return final * (1.0 - np.exp(-zeta * omega * t) * (
            np.cos(wd * t) + zeta * omega / wd * np.sin(wd * t)))
    if zeta == 1.0:
        return final * (1.0 - np.exp(-omega * t) * (1.0 + omega * t))
    r1 = -omega * (zeta - math.sqrt(zeta ** 2 - 1.0))
    r2 = -omega * (zeta + math.sqrt(zeta ** 2 - 1.0))
    return final * (1.0 + (r2 * np.exp(r1 * t) - r1 * np.exp(r2 * t)) / (r1 - r2))


def run_step(params: AdmittanceParameters, reference: np.ndarray, control: np.ndarray,
             dt: float, duration: float) -> tuple:
    """Drive the law with a constant reference, no reading, ideal position tracking."""
    rule = AdmittanceRule(params)
    steps = int(round(duration / dt))
    out = np.zeros((steps, 6))
    for k in range(steps):
        # the arm is where the law put it: displacement = the offset of the last period
        out[k] = rule.update(np.zeros(6), reference, np.eye(3), control, rule.offset, dt)
    return dt * np.arange(1, steps + 1), out


@pytest.mark.parametrize('axis', range(6))
def test_step_response_is_the_mass_damper_spring_solution(axis):
    """Each axis: under-, critically, over-damped and spring-free, as derived by hand."""
    params = AdmittanceParameters(mass=[4.0, 2.0, 8.0, 0.2, 0.5, 0.1],
                                  damping_ratio=[0.3, 1.0, 2.0, 0.0, 0.7, 1.0],
                                  stiffness=[400.0, 200.0, 100.0, 0.0, 10.0, 3.0],
                                  joint_damping=2.0, filter_coefficient=1.0)
    force = [5.0, -3.0, 2.0, 0.4, -0.2, 0.1][axis]
    reference = np.zeros(6)
    reference[axis] = force
    t, offset = run_step(params, reference, np.eye(3), 2e-5, 1.0)
    m, k = params.mass[axis], params.stiffness[axis]
    c = 2.0 * params.damping_ratio[axis] * math.sqrt(m * k) + m * params.joint_damping
    expected = mass_damper_spring_step(m, c, k, force, t)
    scale = np.abs(expected).max()
    assert np.abs(offset[:, axis] - expected).max() < 2e-3 * scale
    others = np.delete(np.arange(6), axis)
    assert np.abs(offset[:, others]).max() == 0.0
    assert np.sign(offset[-1, axis]) == np.sign(force)  # the arm yields toward the push


def test_per_axis_parameters_are_taken_in_the_control_frame():
    """A force along world x with the control frame turned 90 deg about z meets the y law."""
    params = AdmittanceParameters(mass=[1.0, 3.0, 1.0, 1.0, 1.0, 1.0],
                                  damping_ratio=[1.0] * 6,
                                  stiffness=[100.0, 900.0, 100.0, 1.0, 1.0, 1.0],
                                  joint_damping=0.0, filter_coefficient=1.0)
    control = Rotation.from_rotvec([0, 0, np.pi / 2]).as_matrix()  # control y = world -x
    t, offset = run_step(params, np.array([2.0, 0, 0, 0, 0, 0]), control, 2e-5, 0.5)
    c = 2.0 * math.sqrt(3.0 * 900.0)
    expected = mass_damper_spring_step(3.0, c, 900.0, 2.0, t)
    assert np.abs(offset[:, 0] - expected).max() < 2e-3 * expected.max()
    assert np.abs(offset[:, 1:]).max() < 1e-12


def test_the_filter_is_an_exponential_smoothing_of_reading_plus_reference():
    """``w_k = a (reading + reference) + (1 - a) w_(k-1)``: after k periods, 1 - (1 - a)^k."""
    params = AdmittanceParameters(mass=[1.0] * 6, damping_ratio=[1.0] * 6, stiffness=[0.0] * 6,
                                  filter_coefficient=0.1)
    rule = AdmittanceRule(params)
    reading = np.array([1.0, -2.0, 0.5, 0.1, 0.0, -0.3])
    reference = np.array([0.5, 0.5, 0.5, 0.0, 0.2, 0.1])
    for k in range(1, 30):
        wrench = rule.process_wrench(reading, reference, np.eye(3))
        assert wrench == pytest.approx((reading + reference) * (1.0 - 0.9 ** k), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(rotvec=st.lists(st.floats(-3.1, 3.1), min_size=3, max_size=3),
       cog=st.lists(st.floats(-0.2, 0.2), min_size=3, max_size=3),
       mass=st.floats(0.0, 5.0))
def test_gravity_compensation_removes_the_tool_weight_in_every_orientation(rotvec, cog, mass):
    """A sensor carrying only its tool reads the tool's weight; the controller's CoG cancels it.

    By hand: in world axes the tool's weight is ``w = (0, 0, -m g)`` at ``R c``; a sensor
    reporting the wrench acting on it reads ``R^T w`` and ``c x R^T w`` in its frame.
    """
    rot = Rotation.from_rotvec(rotvec).as_matrix()
    cog = np.array(cog)
    weight = np.array([0.0, 0.0, -mass * G])
    force_sensor = rot.T @ weight
    reading = np.concatenate([force_sensor, np.cross(cog, force_sensor)])
    params = AdmittanceParameters(mass=[1.0] * 6, damping_ratio=[1.0] * 6, stiffness=[0.0] * 6,
                                  filter_coefficient=1.0, cog_force=mass * G, cog_position=cog)
    wrench = AdmittanceRule(params).process_wrench(reading, np.zeros(6), rot)
    assert np.abs(wrench).max() < 1e-9 * max(1.0, mass * G)


@settings(max_examples=40, deadline=None)
@given(rotvec=st.lists(st.floats(-3.1, 3.1), min_size=3, max_size=3),
       reference=st.lists(st.floats(-50, 50), min_size=6, max_size=6))
def test_a_reference_is_read_in_the_sensor_frame_about_its_origin(rotvec, reference):
    """The reference, like the reading, is rotated from the sensor frame into the world."""
    rot = Rotation.from_rotvec(rotvec).as_matrix()
    reference = np.array(reference)
    params = AdmittanceParameters(mass=[1.0] * 6, damping_ratio=[1.0] * 6, stiffness=[0.0] * 6,
                                  filter_coefficient=1.0)
    wrench = AdmittanceRule(params).process_wrench(np.zeros(6), reference, rot)
    assert wrench[:3] == pytest.approx(rot @ reference[:3], abs=1e-9)
    assert wrench[3:] == pytest.approx(rot @ reference[3:], abs=1e-9)


@pytest.mark.parametrize('frame_id,accepted', [
    ('left_ft_sensor', True), ('', True), ('left_contact', False), ('object', False),
    ('right_ft_sensor', False), ('left_ft_sensor ', False), ('/left_ft_sensor', False)])
def test_a_reference_in_another_frame_is_dropped(frame_id, accepted):
    """As admittance_controller: only its ft_sensor.frame.id, or an empty frame id."""
    assert accepts_reference(frame_id, 'left_ft_sensor') is accepted


def test_position_loop_is_an_exact_first_order_lag():
    """From rest, the tip covers ``1 - exp(-w t)`` of a step, in translation and rotation."""
    loop = PositionLoop(np.zeros(3), np.eye(3), bandwidth=40.0)
    target = np.array([0.1, -0.05, 0.02])
    turn = np.array([0.0, 0.0, 0.3])
    dt = 1e-3
    for k in range(1, 101):
        loop.step(target, Rotation.from_rotvec(turn).as_matrix(), dt)
        share = 1.0 - math.exp(-40.0 * k * dt)
        assert loop.position == pytest.approx(share * target, rel=1e-9, abs=1e-15)
        assert Rotation.from_matrix(loop.rotation).as_rotvec() == pytest.approx(
            share * turn, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize('bad', [
    {'mass': [1.0] * 5}, {'mass': [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]},
    {'stiffness': [-1.0] + [0.0] * 5}, {'filter_coefficient': 0.0},
    {'damping_ratio': [float('nan')] * 6}])
def test_bad_parameters_are_refused_by_name(bad):
    values = {'mass': [1.0] * 6, 'damping_ratio': [1.0] * 6, 'stiffness': [0.0] * 6}
    values.update(bad)
    with pytest.raises(ValueError, match='admittance|filter'):
        AdmittanceParameters(**values)


def _arm_sim(stiffness: float, position_errors: list):
    """Build the dual_arm_admittance physics with ideal sensors and the tool weight known exactly."""
    from wrench_distribution.sim import scenarios
    p = scenarios.load_sections('dual_arm_admittance')['object_sim']
    p.update(sensor_biases=[], sensor_force_noise=0.0, sensor_torque_noise=0.0,
             tool_masses=[0.3, 0.3], admittance_cog_forces=[0.3 * G, 0.3 * G],
             contact_orientation_errors=[], contact_position_errors=position_errors,
             admittance_stiffness=[stiffness] * 3 + [6.0] * 3, admittance_filter_coefficient=1.0,
             arm_move_offset=[0.0, 0.0, 0.0], arm_move_rotation=[0.0, 0.0, 0.0])  # held still
    return scenarios.build_sim(p), scenarios.sim_params(p)


@pytest.mark.parametrize('stiffness', [0.0, 300.0])
def test_arms_at_rest_apply_the_reference_less_the_admittance_spring(stiffness):
    """Held in the fixture, each arm settles where ``f = (u - K e) / (1 + K / k)``.

    By hand, per arm and world axis, at rest: the grasp spring carries the force ``f`` on the
    object, so the tip sits at ``p_true + f / k``; the arm's reference is the configured
    contact, ``e = p_true - p_configured`` away; the sensor reads ``-f`` and the law stops
    where ``-f + u = K (e + f / k)``. With ``K = 0`` the arm applies its reference ``u``.
    """
    errors = [0.002, -0.003, 0.001, -0.001, 0.002, 0.002]
    sim, p = _arm_sim(stiffness, errors)
    k_grasp = p['grasp_stiffness']
    squeeze = np.array([[0.0, 0.0, 20.0, 0.0, 0.0, 0.0], [1.0, -2.0, 15.0, 0.0, 0.0, 0.0]])
    for _ in range(4000):
        sim.step(squeeze, 1e-3, fixed=True)
    reference_world = np.einsum('nij,nj->ni', sim.r_rot, squeeze[:, :3])  # object = world here
    expected = (reference_world - stiffness * np.reshape(errors, (2, 3))) / (
        1.0 + stiffness / k_grasp)
    assert sim.last_grasp[:, :3] == pytest.approx(expected, abs=2e-3)


def test_the_scenario_tells_the_nodes_a_slightly_wrong_world():
    """dual_arm_admittance: the nodes' configuration agrees where it must, differs as documented."""
    from wrench_distribution.sim import scenarios
    sections = scenarios.load_sections('dual_arm_admittance')
    assert scenarios.check_consistency(sections) == []
    checked = scenarios.validate_sections(sections)
    sim, analyzer = checked['object_sim'], checked['wrench_analyzer']
    distributor, controller = checked['wrench_distributor'], checked['object_controller']
    assert sim['effector_model'] == 'admittance'
    # the commands reach each arm in its F/T sensor frame, the frame it accepts
    assert distributor['contact_frames'] == [f'{e}_ft_sensor' for e in sim['effectors']]
    assert distributor['command_sign'] == 1 and analyzer['sensor_signs'] == sim['sensor_signs']
    # the grasps are off by millimetres and degrees, not more
    position_errors = np.abs(sim['contact_position_errors'])
    angle_errors = np.linalg.norm(np.reshape(sim['contact_orientation_errors'], (-1, 3)), axis=1)
    assert 0 < position_errors.max() <= 0.005 and 0 < angle_errors.max() <= np.radians(3.0)
    # the tools weigh a little more or less than the analyzer and the controllers think
    truth, believed = np.array(sim['tool_masses']), np.array(analyzer['tool_masses'])
    assert np.all(truth != believed) and np.all(np.abs(truth - believed) <= 0.1 * believed)
    assert sim['admittance_cog_forces'] == pytest.approx(list(believed * G), rel=1e-3)
    assert np.any(np.array(sim['sensor_biases']) != 0) and sim['sensor_force_noise'] > 0
    # the arms' reference move is the controller's
    for name in ('move_start', 'move_duration', 'move_offset', 'move_rotation'):
        assert sim['arm_' + name] == controller[name], name
    # the analyzer's output is what the distributor's feedback listens to by default
    assert analyzer['internal_load_topic'] == 'measured/internal_load'
