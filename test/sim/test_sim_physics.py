"""Physics of the closed-loop simulator (no ROS): invariants and hand-derived equilibria."""
import numpy as np
import pytest

from wrench_distribution.core.spatial import exp_so3, log_so3
from wrench_distribution.sim.physics.ft_sensor import SimulatedFTSensors
from wrench_distribution.sim.physics.grasp import GraspCompliance
from wrench_distribution.sim.physics.held_object import HeldObjectSim

G = 9.81
MASS = 2.0
INERTIA = np.diag([0.03, 0.01, 0.03])


def dual_arm(com=(0.0, 0.0, 0.0), gravity=(0.0, 0.0, -G), **kw) -> HeldObjectSim:
    """Box held at y = +-0.2 m by two rigid grasps, object frame at the world origin + 1 m."""
    return HeldObjectSim(MASS, INERTIA, com, ['rigid', 'rigid'], [(0, 0.2, 0), (0, -0.2, 0)],
                         [(0, 0, 0, 1), (0, 0, 0, 1)], gravity=gravity, position=(0, 0, 1), **kw)


def three_fingers(gravity=(0.0, 0.0, 0.0)) -> HeldObjectSim:
    """Sphere held by three point contacts at 120 degrees in the horizontal plane."""
    angles = np.deg2rad([90.0, 210.0, 330.0])
    pos = [(0.04 * np.cos(a), 0.04 * np.sin(a), 0.0) for a in angles]
    return HeldObjectSim(0.3, np.eye(3) * 2e-4, (0, 0, 0), ['point'] * 3, pos,
                         [(0, 0, 0, 1)] * 3, effector_mass=0.05,
                         compliance=GraspCompliance(2000.0, 14.0, 0.0, 0.0), gravity=gravity)


def run(sim: HeldObjectSim, commands, seconds: float, dt: float = 1e-3) -> None:
    for _ in range(int(round(seconds / dt))):
        sim.step(commands, dt)


def test_exp_log_round_trip():
    rng = np.random.default_rng(3)
    phi = rng.normal(size=(20, 3))
    phi *= (np.minimum(np.linalg.norm(phi, axis=1), 3.0) / np.linalg.norm(phi, axis=1))[:, None]
    rot = exp_so3(phi)
    assert np.allclose(np.swapaxes(rot, 1, 2) @ rot, np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(rot), 1.0)
    assert np.allclose(log_so3(rot), phi, atol=1e-9)
    # a quarter turn about z maps x onto y
    assert np.allclose(exp_so3([0, 0, np.pi / 2]) @ [1, 0, 0], [0, 1, 0])


@pytest.mark.parametrize('damped', [False, True])
def test_momentum_conserved_without_external_forces(damped):
    comp = GraspCompliance(1e4, 100.0 if damped else 0.0, 100.0, 0.6 if damped else 0.0)
    sim = dual_arm(com=(0.02, 0.05, -0.01), gravity=(0, 0, 0), compliance=comp)
    rng = np.random.default_rng(0)
    sim.eff_vel = rng.normal(size=(2, 3))
    sim.eff_omega = rng.normal(size=(2, 3))
    sim.body.velocity = np.array([0.1, -0.2, 0.05])
    sim.body.omega = np.array([0.3, 0.1, -0.2])
    p0 = sim.momentum()
    run(sim, np.zeros((2, 6)), 0.5)
    # Linear momentum: exact (action and reaction at every step).
    assert np.allclose(sim.momentum()[:3], p0[:3], atol=1e-12)
    # Angular momentum about the origin: exact too (the body integrates L, not w).
    assert np.allclose(sim.momentum()[3:], p0[3:], atol=1e-10)


def test_point_contacts_conserve_momentum():
    sim = three_fingers()
    rng = np.random.default_rng(1)
    sim.eff_vel = rng.normal(size=(3, 3)) * 0.1
    p0 = sim.momentum()
    run(sim, np.zeros((3, 6)), 0.5)
    assert np.allclose(sim.momentum()[:3], p0[:3], atol=1e-12)
    # Angular momentum: point effectors carry none of their own, the total is still conserved.
    assert np.allclose(sim.momentum()[3:], p0[3:], atol=1e-10)


def test_energy_conserved_without_damping():
    comp = GraspCompliance(1e4, 0.0, 100.0, 0.0)
    sim = dual_arm(com=(0.0, 0.05, 0.0), compliance=comp)
    rng = np.random.default_rng(2)
    sim.eff_vel = rng.normal(size=(2, 3)) * 0.2
    sim.eff_omega = rng.normal(size=(2, 3))
    e0 = sim.energy()
    energies = []
    for _ in range(5000):
        sim.step(np.zeros((2, 6)), 1e-4)
        energies.append(sim.energy())
    # Symplectic Euler: bounded oscillation of the energy, no drift.
    assert np.max(np.abs(np.array(energies) - e0)) < 1e-2 * max(abs(e0), 1.0)


def test_damping_dissipates():
    sim = dual_arm(gravity=(0, 0, 0))
    # Zero total linear and angular momentum: everything is internal vibration.
    sim.eff_vel = np.array([[0, 0.5, 0], [0, -0.5, 0]])
    e0 = sim.energy()
    run(sim, np.zeros((2, 6)), 0.5)
    assert sim.energy() < 0.01 * e0


def test_gravity_compensating_distribution_holds_the_object():
    # Hand-derived: CoM at y = 0.05; lever rule gives 0.625 mg at y = +0.2, 0.375 mg at -0.2.
    sim = dual_arm(com=(0.0, 0.05, 0.0))
    cmd = np.zeros((2, 6))
    cmd[0, 2] = 0.625 * MASS * G
    cmd[1, 2] = 0.375 * MASS * G
    sim.preload(cmd)
    start = sim.object_frame_pose()[0]
    run(sim, cmd, 2.0)
    pos, rot = sim.object_frame_pose()
    assert np.allclose(pos, start, atol=1e-9)
    assert np.allclose(rot, np.eye(3), atol=1e-9)
    assert np.allclose(sim.transmitted(), cmd, atol=1e-9)


def test_antagonistic_command_is_carried_by_the_springs():
    # Equal weight shares plus a 30 N squeeze: left (y = +0.2) pushes along -y, right along +y.
    squeeze = 30.0
    sim = dual_arm()
    cmd = np.zeros((2, 6))
    cmd[:, 2] = MASS * G / 2
    cmd[0, 1] = -squeeze
    cmd[1, 1] = squeeze
    sim.preload(cmd)
    run(sim, cmd, 2.0)
    assert np.allclose(sim.object_frame_pose()[0], [0, 0, 1], atol=1e-9)
    p_c = sim.contact_state()[0]
    stretch = sim.eff_pos - p_c
    k = sim.compliance.stiffness
    assert stretch[0] == pytest.approx([0, -squeeze / k, MASS * G / 2 / k], abs=1e-12)
    assert stretch[1] == pytest.approx([0, squeeze / k, MASS * G / 2 / k], abs=1e-12)
    # The springs' wrenches on the object sum to the weight only: the squeeze is internal.
    total = sim.last_grasp[:, :3].sum(axis=0)
    assert total == pytest.approx([0, 0, MASS * G], abs=1e-9)


def test_unloaded_start_converges_to_the_command():
    sim = dual_arm()
    cmd = np.zeros((2, 6))
    cmd[:, 2] = MASS * G / 2
    cmd[0, 1], cmd[1, 1] = -10.0, 10.0
    run(sim, cmd, 3.0)
    assert np.linalg.norm(sim.body.velocity) < 1e-4
    assert np.allclose(sim.transmitted(), cmd, atol=1e-4)


def test_object_accelerates_with_the_net_commanded_wrench():
    # No gravity, net force 2 N along x: after the springs load, a = F / (m + 2 m_e).
    sim = dual_arm(gravity=(0, 0, 0))
    cmd = np.zeros((2, 6))
    cmd[:, 0] = 1.0
    v0 = sim.body.velocity.copy()
    run(sim, cmd, 1.0)
    total_mass = MASS + 2 * sim.effector_mass
    # momentum of the whole system grows by F t exactly
    assert sim.momentum()[0] == pytest.approx(2.0 * 1.0, rel=1e-9)
    assert sim.body.velocity[0] - v0[0] == pytest.approx(2.0 / total_mass, rel=0.05)


def test_point_contact_squeeze_transmits_pure_forces():
    sim = three_fingers()
    pos = sim.r
    cmd = np.zeros((3, 6))
    cmd[:, :3] = -5.0 * pos / np.linalg.norm(pos, axis=1)[:, None]  # 5 N towards the centre
    cmd[:, 3:] = 1.0  # torques must be ignored by point contacts
    sim.preload(cmd)
    run(sim, cmd, 1.0)
    assert np.allclose(sim.object_frame_pose()[0], 0, atol=1e-9)
    out = sim.transmitted()
    assert np.allclose(out[:, :3], cmd[:, :3], atol=1e-9)
    assert np.allclose(out[:, 3:], 0, atol=1e-9)


def test_fixture_holds_the_object_while_springs_load():
    sim = dual_arm()
    cmd = np.zeros((2, 6))
    cmd[:, 2] = MASS * G / 2
    for _ in range(2000):
        sim.step(cmd, 1e-3, fixed=True)
    assert np.allclose(sim.object_frame_pose()[0], [0, 0, 1])
    assert np.allclose(sim.transmitted(), cmd, atol=1e-4)


def test_sensor_reading_hand_derived():
    from wrench_distribution.core.sensor_model import SensorModel
    # Sensor 0.1 m along +z of the contact frame, same axes, reporting the reaction (-1).
    sensors = SimulatedFTSensors([SensorModel((0, 0, 0.1), (0, 0, 0, 1), -1)])
    reading = sensors.ideal(np.array([[1.0, 0, 0, 0, 0, 0]]), np.array([[0, 0, -G]]))
    # Force at the contact seen from the sensor: t = (0, 0, -0.1) x (1, 0, 0) = (0, -0.1, 0).
    assert reading[0] == pytest.approx([-1, 0, 0, 0, 0.1, 0])
    # A 0.5 kg tool below a +1 sensor: with nothing on the object the sensor holds the tool up.
    sensors = SimulatedFTSensors([SensorModel(tool_mass=0.5)])
    reading = sensors.ideal(np.zeros((1, 6)), np.array([[0, 0, -G]]))
    assert reading[0] == pytest.approx([0, 0, 0.5 * G, 0, 0, 0])


def test_sensor_model_inverts_the_simulated_reading():
    from wrench_distribution.core.sensor_model import SensorModel
    rng = np.random.default_rng(4)
    models = [SensorModel((0.01, -0.02, 0.05), (0.1, 0.2, -0.3, 0.9), -1, 0.4, (0, 0.01, 0.02)),
              SensorModel((0, 0, 0.03), (0, 0, 0.7071068, 0.7071068), 1, 0.0)]
    sensors = SimulatedFTSensors(models)
    applied = rng.normal(size=(2, 6))
    gravity = rng.normal(size=(2, 3))
    reading = sensors.ideal(applied, gravity)
    back = np.stack([m.to_contact(reading[i], gravity[i]) for i, m in enumerate(models)])
    assert np.allclose(back, applied, atol=1e-12)


def test_sensor_noise_and_bias_statistics():
    from wrench_distribution.core.sensor_model import SensorModel
    bias = np.array([[0.5, -0.5, 0.2, 0.01, 0.02, -0.03]])
    sensors = SimulatedFTSensors([SensorModel()], force_noise=0.1, torque_noise=0.01,
                                 bias=bias, seed=7)
    samples = np.array([sensors.read(np.zeros((1, 6)), np.zeros((1, 3)))[0]
                        for _ in range(4000)])
    assert samples.mean(axis=0) == pytest.approx(bias[0], abs=0.01)
    assert samples.std(axis=0) == pytest.approx([0.1] * 3 + [0.01] * 3, rel=0.1)


# --- controller law and schedule --------------------------------------------------------
def test_min_jerk_profile():
    from wrench_distribution.sim.control.object_controller import min_jerk
    assert min_jerk(0.0, 1.0, 2.0) == (0.0, 0.0, 0.0)
    assert min_jerk(5.0, 1.0, 2.0) == (1.0, 0.0, 0.0)
    s, ds, dds = min_jerk(2.0, 1.0, 2.0)  # midpoint: s = 1/2, peak rate 15/8 / T, no acceleration
    assert (s, ds, dds) == pytest.approx((0.5, 15.0 / 8.0 / 2.0, 0.0))


def test_schedule_parsing():
    from wrench_distribution.config import ConfigError
    from wrench_distribution.config.handles import parse_schedule
    from wrench_distribution.sim.control.object_controller import scheduled
    sched = parse_schedule(['3: squeeze(a,b)=40, twist(a,b)=-1.5', '0.0: squeeze(a,b)=20'])
    assert scheduled(sched, -1.0) == {}
    assert scheduled(sched, 1.0) == {'squeeze(a,b)': 20.0}
    assert scheduled(sched, 3.0) == {'squeeze(a,b)': 40.0, 'twist(a,b)': -1.5}
    for bad in ('squeeze(a,b)=1', '0: squeeze(a,b)', '0: squeeze(a,b)=nan', 'x: s(a,b)=1'):
        with pytest.raises(ConfigError):
            parse_schedule([bad])


def test_controller_supports_the_weight_in_the_object_frame():
    from wrench_distribution.sim.control.object_controller import PoseController
    # Object rolled 90 deg about x, at rest on its reference: the effectors must push up
    # with m g; world z is the object's y axis (R^T z = y for a roll of +90 deg).
    roll = exp_so3([np.pi / 2, 0, 0])
    law = PoseController(MASS, INERTIA, np.array([0.01, 0.02, 0.03]), np.array([0, 0, -G]))
    w = law.wrench(0.0, [0.1, 0.2, 0.3], roll, np.zeros(3), np.zeros(3))
    assert w == pytest.approx([0, MASS * G, 0, 0, 0, 0], abs=1e-12)


def test_controller_pushes_back_towards_the_reference():
    from wrench_distribution.sim.control.object_controller import PoseController
    law = PoseController(MASS, INERTIA, np.zeros(3), np.zeros(3), gains=(100.0, 20.0, 0, 0))
    law.origin = (np.zeros(3), np.eye(3))
    w = law.wrench(0.0, [0.01, 0, 0], np.eye(3), [0.0, 0.1, 0], np.zeros(3))
    assert w[:3] == pytest.approx([-MASS * 100 * 0.01, -MASS * 20 * 0.1, 0.0])


# --- demo scenario files --------------------------------------------------------------
SCENARIO_NAMES = ('dual_arm', 'three_finger_hand', 'quadruped_stance')


@pytest.mark.parametrize('name', SCENARIO_NAMES)
def test_scenario_file_is_consistent_and_valid(name):
    from wrench_distribution.config import validate_params
    from wrench_distribution.sim import scenarios
    from wrench_distribution.config.sim import BASELINE_DEFAULTS, CONTROLLER_DEFAULTS
    sections = scenarios.load_sections(name)
    assert set(sections) == set(scenarios.NODES)
    assert scenarios.check_consistency(sections) == []
    validate_params('distributor', sections['wrench_distributor'])
    validate_params('analyzer', sections['wrench_analyzer'])
    scenarios.sim_params(sections['object_sim'])
    assert set(sections['object_controller']) <= set(CONTROLLER_DEFAULTS) | {'use_sim_time'}
    assert set(sections['baseline_distributor']) <= set(BASELINE_DEFAULTS) | {
        'use_sim_time'}
    # the analyzer's sensor description is the simulator's
    sim = sections['object_sim']
    for key in ('sensor_positions', 'sensor_orientations', 'sensor_signs', 'tool_masses',
                'tool_coms'):
        assert sections['wrench_analyzer'].get(key, []) == sim[key], key
    # the analyzer must not publish on the distributor's input
    assert sections['wrench_analyzer']['internal_load_topic'] != 'internal_load'


@pytest.mark.parametrize('name', SCENARIO_NAMES)
def test_core_distribution_holds_each_scenario_still(name):
    """Hold each scenario still with the core's exact distribution.

    With the core's exact distribution of the weight plus the scheduled squeeze, the object
    does not move and each grasp spring carries exactly its command.
    """
    from wrench_distribution.core import Contact, LoadDistributor, ObjectModel
    from wrench_distribution.sim import scenarios
    from wrench_distribution.config.handles import parse_schedule
    sections = scenarios.load_sections(name)
    p = scenarios.sim_params(sections['object_sim'])
    # Rigid grasps apply their command in the effector frame, which the command's torque
    # turns by t / k_r against the contact frame (2 mrad in dual_arm): the squeeze then
    # leaks a small net force that the demo's pose controller absorbs. Here the rotational
    # grasp is made stiff (and the effector heavy, for the time step) to remove that effect.
    p.update(grasp_rot_stiffness=1e5, grasp_rot_damping=20.0, effector_inertia=0.05)
    sim = scenarios.build_sim(p)
    contacts = [Contact(e, 'rigid' if rigid else 'point', tuple(r), tuple(q))
                for e, rigid, r, q in zip(
                    p['effectors'], sim.rigid, sim.r,
                    np.asarray(p['contact_orientations'] or [0, 0, 0, 1] * sim.n).reshape(-1, 4))]
    dist = LoadDistributor(contacts, ObjectModel(com=tuple(p['object_com']),
                                                 mass=p['object_mass']))
    handles = parse_schedule(sections['object_controller']['internal_load_schedule'])[-1][1]
    weight = np.array([0, 0, p['object_mass'] * G, 0, 0, 0])  # initial orientation: identity
    cmd = dist.synthesize(weight, dist.internal_load_from_handles(handles)).wrench_contact
    sim.preload(cmd)
    start = sim.object_frame_pose()[0]
    run(sim, cmd, 0.5, dt=2e-4)
    # the dual arm's scheduled twist and bend turn the effector frames by t / k_r too (5 urad)
    assert np.allclose(sim.object_frame_pose()[0], start, atol=3e-5)
    assert np.allclose(sim.transmitted(), cmd, atol=1e-4)


def test_demo_run_sections_stretch_the_timeline():
    from wrench_distribution.sim.demo.sections import run_sections
    from wrench_distribution.sim import scenarios
    sections = scenarios.load_sections('dual_arm')
    # nominal 6 s, release 0.5 s: a 3.25 s run halves every time after the release
    out = run_sections(sections, 3.25, zero_internal=False)
    ctl = out['object_controller']
    assert out['object_sim']['duration'] == 3.25
    assert ctl['move_start'] == pytest.approx(0.75)
    assert ctl['move_duration'] == pytest.approx(1.0)
    assert ctl['internal_load_schedule'] == [  # each number exact (format_schedule: repr)
        '0.0: squeeze(left,right)=20.0',
        '1.0: squeeze(left,right)=20.0, twist(left,right)=1.0, bend_u(left,right)=0.5',
        '1.75: squeeze(left,right)=40.0, twist(left,right)=-0.5, bend_v(left,right)=0.5']
    zero = run_sections(sections, None, zero_internal=True)['object_controller']
    assert zero['internal_load_schedule'] == [
        '0.0: squeeze(left,right)=0.0',
        '1.5: squeeze(left,right)=0.0, twist(left,right)=0.0, bend_u(left,right)=0.0',
        '3.0: squeeze(left,right)=0.0, twist(left,right)=0.0, bend_v(left,right)=0.0']
    with pytest.raises(ValueError):
        run_sections(sections, 0.8, zero_internal=False)
