"""The simulator's truth (sim/scenarios/truth.py): the wrenches it reports are the ones that move the object.

References are derived here: the true contacts from the scenario file's configuration and
errors (scipy rotations), the object's acceleration from two states of the simulator, the
wrench transport ``f' = R f, t' = R t + p x (R f)`` written out, and the summary's rule
checked on arrays where the estimate and the truth disagree.
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from wrench_distribution.sim.reports.elements import _element
from wrench_distribution.sim.reports.sensitivity import limiting_parameters
from wrench_distribution.sim.scenarios import build_sim, load_sections, sim_params
from wrench_distribution.sim.scenarios.truth import TruthReadout

#: Scenarios of the models whose object steps by semi-implicit Euler (ideal effectors with
#: rigid and point contacts, admittance arms), with and without calibration errors.
EULER_SCENARIOS = ('dual_arm', 'three_finger_hand', 'quadruped_stance', 'dual_arm_admittance',
                   'dual_arm_real_cell')


def truth_of(p: dict) -> tuple:
    """Return the true contacts and object, from the configuration and its errors (here)."""
    n = len(p['effectors'])
    pos = np.asarray(p['contact_positions'], float).reshape(n, 3)
    quat = np.asarray(p['contact_orientations'] or [0, 0, 0, 1] * n, float).reshape(n, 4)
    dpos = np.asarray(p['contact_position_errors'] or [0.0] * 3 * n, float).reshape(n, 3)
    drot = np.asarray(p['contact_orientation_errors'] or [0.0] * 3 * n, float).reshape(n, 3)
    rot = np.stack([(Rotation.from_rotvec(e) * Rotation.from_quat(q)).as_matrix()
                    for e, q in zip(drot, quat)])
    mass = p['object_mass'] * p['object_mass_ratio']
    com = np.asarray(p['object_com'], float) + np.asarray(p['object_com_error'], float)
    return pos + dpos, rot, mass, com


def stirred(name: str, steps: int = 400):
    """Return a scenario's simulator after some steps under uneven commands, and its params."""
    p = sim_params(load_sections(name)['object_sim'])
    sim = build_sim(p)
    rng = np.random.default_rng(7)
    commands = rng.normal(0.0, 1.0, (sim.n, 6)) + np.array([0, 0, 8.0, 0, 0, 0])  # pushing
    for k in range(steps):
        sim.step(commands * (1.0 + 0.3 * np.sin(0.01 * k)), 1e-3)
    return sim, p


@pytest.mark.parametrize('name', EULER_SCENARIOS)
def test_the_true_wrenches_are_what_accelerates_the_object(name):
    """Sum of the true wrenches, about the true CoM = m (a - g) and dL/dt, object axes."""
    sim, p = stirred(name)
    positions, rotations, mass, com = truth_of(p)
    wrenches = sim.contact_wrenches()
    r0, v0, w0 = sim.body.rotation.copy(), sim.body.velocity.copy(), sim.body.omega.copy()
    inertia = sim.body.inertia
    dt = 1e-3
    sim.step(np.zeros((sim.n, 6)), dt)
    r1 = sim.body.rotation
    force_world = mass * ((sim.body.velocity - v0) / dt - np.asarray(p['gravity']))
    torque_world = (r1 @ inertia @ r1.T @ sim.body.omega - r0 @ inertia @ r0.T @ w0) / dt
    forces = np.einsum('nij,nj->ni', rotations, wrenches[:, :3])
    torques = np.einsum('nij,nj->ni', rotations, wrenches[:, 3:]) + np.cross(
        positions - com, forces)
    np.testing.assert_allclose(forces.sum(axis=0), r0.T @ force_world, atol=1e-9)
    np.testing.assert_allclose(torques.sum(axis=0), r0.T @ torque_world, atol=1e-9)
    assert np.abs(forces).max() > 1.0  # the check saw real wrenches
    readout = TruthReadout(p, sim.r, sim.r_rot)  # the published resultant is that sum
    np.testing.assert_allclose(readout.resultant(wrenches),
                               np.concatenate([forces.sum(axis=0), torques.sum(axis=0)]),
                               atol=1e-9)


def test_the_real_cells_truth_differs_from_its_belief():
    """The real cell's object weighs 5 % more, 1 cm off: the resultant at rest says so."""
    p = sim_params(load_sections('dual_arm_real_cell')['object_sim'])
    positions, rotations, mass, com = truth_of(p)
    assert mass == pytest.approx(1.05 * p['object_mass'])
    assert np.linalg.norm(com - np.asarray(p['object_com'])) == pytest.approx(0.0104, abs=2e-4)
    sim = build_sim(p)
    np.testing.assert_allclose(sim.r, positions, atol=1e-12)
    np.testing.assert_allclose(sim.r_rot, rotations, atol=1e-12)
    assert sim.body.mass == pytest.approx(mass)
    readout = TruthReadout(p, sim.r, sim.r_rot)
    assert readout.true is not None and readout.true_basis_names == readout.basis_names


def test_moving_to_the_believed_contacts_is_the_hand_transport():
    """at_believed: each wrench moved by hand from its true to its believed contact frame."""
    p = sim_params(load_sections('dual_arm_real_cell')['object_sim'])
    positions, rotations, _, _ = truth_of(p)
    believed_pos = np.asarray(p['contact_positions'], float).reshape(2, 3)
    believed_rot = Rotation.from_quat(np.reshape(p['contact_orientations'], (2, 4))).as_matrix()
    wrenches = np.array([[1.0, -2.0, 25.0, 0.3, -0.1, 0.8], [-0.5, 1.5, 24.0, -0.2, 0.4, -0.6]])
    expected = []
    for w, p_t, r_t, p_b, r_b in zip(wrenches, positions, rotations, believed_pos, believed_rot):
        f_object, t_object = r_t @ w[:3], r_t @ w[3:]
        t_believed = t_object + np.cross(p_t - p_b, f_object)
        expected.append(np.concatenate([r_b.T @ f_object, r_b.T @ t_believed]))
    readout = TruthReadout(p, positions, rotations)
    np.testing.assert_allclose(readout.at_believed(wrenches), expected, atol=1e-12)
    # same resultant about any point: the believed grasp matrix sees the true wrenches' sum
    believed, true = readout.internal_loads(wrenches)
    assert believed.shape == true.shape == (6,)
    assert not np.allclose(believed, true, atol=1e-3)  # 3 mm and 2 deg move the elements


def test_without_errors_the_two_bases_are_one():
    """A scenario without calibration errors has no second basis (no true-contacts topic)."""
    p = sim_params(load_sections('dual_arm')['object_sim'])
    sim = build_sim(p)
    readout = TruthReadout(p, sim.r, sim.r_rot)
    assert readout.true is None and readout.true_basis_names == []
    believed, true = readout.internal_loads(sim.contact_wrenches())
    assert true is None and believed.shape == (len(readout.basis_names),)


def test_within_tolerance_is_judged_on_the_truth():
    """An estimate on the command with the truth off is outside; the reverse is inside."""
    rng = np.random.default_rng(3)
    on_target = 25.0 + rng.normal(0.0, 0.05, 400)
    off_target = 25.9 + rng.normal(0.0, 0.05, 400)
    believed_basis = 25.3 + rng.normal(0.0, 0.05, 400)  # a secondary figure: reported, not judged
    wrong_truth = _element('N', 25.0, off_target, on_target, 0.5, believed_basis)
    assert wrong_truth['true_believed_basis_mean'] == pytest.approx(believed_basis.mean())
    assert wrong_truth['within_tolerance'] is False
    assert wrong_truth['estimate_within_tolerance'] is True
    assert wrong_truth['gap_mean'] == pytest.approx(on_target.mean() - off_target.mean())
    right_truth = _element('N', 25.0, on_target, off_target, 0.5, off_target)
    assert right_truth['within_tolerance'] is True
    assert right_truth['estimate_within_tolerance'] is False
    assert wrong_truth['true_error_rms'] == pytest.approx(
        np.sqrt(np.mean((off_target - 25.0) ** 2)))


def hand_readings(p: dict, wrenches: np.ndarray) -> np.ndarray:
    """Raw readings of sensors on the true contacts (no pad), by hand: ``s (w - tool) + bias``.

    The object rests level (gravity in the object frame as configured); a sensor at its
    contact carries the wrench on the object less its tool's weight (mass times gravity in
    its true frame, about the sensor: ``c x (m g)``), reports it with its sign ``s``, and adds
    its bias.
    """
    _, rotations, _, _ = truth_of(p)
    gravity = np.asarray(p['gravity'], float)
    n = len(p['effectors'])
    masses, coms = np.asarray(p['tool_masses'], float), np.reshape(p['tool_coms'], (n, 3))
    biases = np.reshape(p['sensor_biases'], (n, 6))
    out = []
    for i in range(n):
        weight = masses[i] * rotations[i].T @ gravity
        tool = np.concatenate([weight, np.cross(coms[i], weight)])
        out.append(p['sensor_signs'][i] * (wrenches[i] - tool) + biases[i])
    return np.array(out)


def test_every_belief_parameter_true_reads_the_truths_yardstick():
    """The attribution's reference is the yardstick: the truth on the true contacts and object.

    The analyzer given the whole truth (derived here: true contacts, tools, biases, object)
    reads hand-made readings as the true contacts' basis does; the contributions of the belief
    parameters, each taken from the belief and from the truth, add up to the estimate minus that
    truth (to second order: 1 % of it here, with biases of newtons and grasps turned by 2 deg).
    """
    from wrench_distribution.core.spatial import matrix_to_quaternion
    from wrench_distribution.sim.scenarios import validate_sections
    from wrench_distribution.sim.reports.sensitivity import contributions, readout
    checked = validate_sections(load_sections('dual_arm_real_cell'))
    p = checked['object_sim']
    positions, rotations, mass, com = truth_of(p)
    wrenches = np.array([[0.3, -10.6, 24.0, 0.9, 0.4, -0.2], [-0.2, -10.1, 26.0, -1.1, 0.1, 0.3]])
    readings = hand_readings(p, wrenches)
    truth = dict(checked['wrench_analyzer'], contact_positions=positions.ravel().tolist(),
                 contact_orientations=np.concatenate([matrix_to_quaternion(r) for r in rotations]).tolist(),
                 sensor_biases=list(p['sensor_biases']), tool_masses=list(p['tool_masses']),
                 tool_coms=list(p['tool_coms']), object_mass=mass, object_com=com.tolist())
    readout_true = TruthReadout(p, positions, rotations).internal_loads(wrenches)[1]
    np.testing.assert_allclose(readout(truth, readings), readout_true, atol=1e-9)
    estimate = readout(checked['wrench_analyzer'], readings)
    shares = sum(contributions(checked, readings).values())
    np.testing.assert_allclose(shares, estimate - readout_true, atol=0.01 * np.abs(estimate - readout_true).max())
    assert np.abs(estimate - readout_true).max() > 0.5


def test_limiting_parameters_are_named_largest_first():
    """Contributions of at least a quarter of the target are named, by size."""
    contributions = {'a': np.array([0.01, 0.0]), 'b': np.array([-0.3, 0.0]),
                     'c': np.array([0.06, 1.0])}
    assert limiting_parameters(contributions, 0, 0.2) == [('b', -0.3), ('c', 0.06)]
    assert limiting_parameters(contributions, 1, 0.2) == [('c', 1.0)]


def test_a_tare_needs_a_free_phase(tmp_path, capsys):
    """--tare on a scenario whose grippers never open is refused before anything starts."""
    from wrench_distribution.sim.demo.run import main
    assert main(['--scenario', 'dual_arm', '--tare', 'on', '--out', str(tmp_path)]) == 2
    assert 'grasp_time' in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_real_cell_table_marks_the_truth_and_names_the_limits(tmp_path):
    """The four runs' table: true / estimated per run, * on the truth, the limits named."""
    import json
    from wrench_distribution.sim.reports.real_cell import compare, PHASES

    def element(true, estimated, within, limited=()):
        return {'unit': 'N', 'commanded': 25.0, 'tolerance': 0.5, 'true_mean': true,
                'estimated_mean': estimated, 'true_error_rms': abs(true - 25.0),
                'gap_mean': estimated - true, 'within_tolerance': within,
                'limited_by': [{'parameter': p, 'contribution': c} for p, c in limited]}
    runs = {}
    for k, (label, _, _) in enumerate(PHASES):
        runs[label] = tmp_path / str(k)
        runs[label].mkdir()
        final = label == 'tared, closed loop'
        squeeze = element(24.2 if not final else 25.6, 25.0, False,
                          [('grasp_orientation(left)', -0.6)] if final else ())
        (runs[label] / 'elements.json').write_text(json.dumps(
            {'elements': {'squeeze(a,b)': squeeze}}))
    text, summary = compare(runs)
    assert '24.200*/' in text and '25.600*/' in text
    assert 'squeeze(a,b): grasp_orientation(left) -0.600' in text
    assert summary['tared_closed_loop_limited_by']['squeeze(a,b)'][0]['contribution'] == -0.6
    assert summary['elements']['squeeze(a,b)']['untared, open loop']['true_mean'] == 24.2
