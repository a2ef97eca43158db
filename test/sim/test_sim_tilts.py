"""Tilts of the simulator, the demo's calibration procedure and its truth table.

The held object's tilt sequence, the free grippers' turns, the calibration's calls and their
comparison with the truth, without ROS.

References are derived here: orientations from scipy's rotation vectors, rates by finite
differences of the reference itself, a hanging tool's weight in world axes.
"""
import json

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from wrench_distribution.config.handles import parse_schedule
from wrench_distribution.config.schema import ConfigError
from wrench_distribution.sim import scenarios
from wrench_distribution.sim.control.object_controller import PoseController, tilt_profile
from wrench_distribution.sim.nodes.calibration_step import CAPTURE_DEADLINE, procedure
from wrench_distribution.sim.reports.real_cell import compare_calibration, identified_vs_truth
from wrench_distribution.sim.scenarios.runs import load_calibration, without_calibration_motions

angle = st.floats(-0.6, 0.6)
vector = st.tuples(angle, angle, angle)


def _sequence(vectors, start=1.0, duration=0.5, rest=0.3) -> list:
    out, t = [], start
    for v in vectors:
        out += [t, duration, *v]
        t += duration + rest
    return out


@settings(max_examples=40, deadline=None)
@given(vectors=st.lists(vector, min_size=1, max_size=4))
def test_tilts_rest_at_each_target_and_their_rate_is_the_derivative(vectors):
    tilts = _sequence(vectors)
    rows = np.reshape(tilts, (-1, 5))
    before = np.eye(3)
    for start, duration, *v in rows:
        target = Rotation.from_rotvec(v).as_matrix()
        rest, omega, _ = tilt_profile(tilts, start + duration + 0.1)
        assert np.allclose(rest, target, atol=1e-12) and np.allclose(omega, 0.0)
        assert np.allclose(tilt_profile(tilts, start - 1e-9)[0], before, atol=1e-7)
        for t in np.linspace(start + 0.02, start + duration - 0.02, 5):
            h = 1e-6
            r0, w0, a0 = tilt_profile(tilts, t)
            r1, w1, _ = tilt_profile(tilts, t + h)
            numeric = Rotation.from_matrix(r1 @ r0.T).as_rotvec() / h  # world angular velocity
            assert np.allclose(numeric, w0, atol=1e-4 * (1 + np.abs(w0).max()))
            assert np.allclose((w1 - w0) / h, a0, atol=1e-3 * (1 + np.abs(a0).max()))
        before = target


@settings(max_examples=25, deadline=None)
@given(move=vector, tilt=vector, com=st.tuples(*[st.floats(-0.1, 0.1)] * 3))
def test_tilts_compose_with_the_move_as_a_rigid_motion(move, tilt, com):
    """The centre of mass's velocity and acceleration are the derivatives of its position."""
    plan = PoseController(2.0, np.eye(3), np.array(com), np.zeros(3), offset=np.array([0.1, 0, 0.2]),
                          rotation=np.array(move), start=0.5, duration=1.0, tilts=(1.2, 1.0, *tilt))
    plan.origin = (np.array([0.0, 0.0, 0.8]), Rotation.from_rotvec([0.1, -0.2, 0.3]).as_matrix())
    h = 1e-5
    for t in (1.0, 1.5, 1.9):  # the tilt starts while the move is still under way at 1.2
        a, b, c = (plan.reference(t + k * h) for k in (-1, 0, 1))
        assert np.allclose((c[2] - a[2]) / (2 * h), b[3], atol=1e-5)
        assert np.allclose((c[3] - a[3]) / (2 * h), b[4], atol=1e-3)
        numeric = Rotation.from_matrix(c[1] @ a[1].T).as_rotvec() / (2 * h)
        assert np.allclose(numeric, b[5], atol=1e-5)
        assert np.allclose((c[5] - a[5]) / (2 * h), b[6], atol=1e-3)
    end = plan.reference(3.0)[1]
    expected = Rotation.from_rotvec(tilt).as_matrix() @ Rotation.from_rotvec(move).as_matrix() @ plan.origin[1]
    assert np.allclose(end, expected, atol=1e-12)


def _tilt_cell() -> dict:
    return scenarios.validate_sections(scenarios.load_sections('dual_arm_real_cell_tilt'))


@pytest.mark.parametrize('turn', [[0.4363, 0.0, 0.0], [0.0, 0.4363, 0.0], [0.3, -0.2, 1.0]])
def test_free_grippers_read_their_tools_weight_fixed_in_the_world(turn):
    """A turned rig at rest: each sensor's force, in world axes, is its tool's weight (m g).

    Its torque is the weight's moment about the sensor origin: the same at every orientation.
    """
    sim_p = dict(_tilt_cell()['object_sim'], sensor_force_noise=0.0, sensor_torque_noise=0.0,
                 sensor_biases=[])
    sim = scenarios.build_sim(sim_p)
    rotation = Rotation.from_rotvec(turn).as_matrix()
    sim.turn_rig(rotation)
    readings = sim.readings()
    positions, frames = sim.tip_poses()
    masses, coms = np.array(sim_p['tool_masses']), np.reshape(sim_p['tool_coms'], (-1, 3))
    gravity = np.array([0.0, 0.0, -9.81])
    for i in range(2):
        force = frames[i] @ readings[i, :3]
        # the sensor reports the wrench acting on it (sign -1): the tool pulls it down
        assert np.allclose(force, masses[i] * gravity, atol=1e-9)
        assert np.allclose(frames[i] @ readings[i, 3:], np.cross(frames[i] @ coms[i], masses[i] * gravity),
                           atol=1e-9)
    object_rotation = sim.object_frame_pose()[1]
    start = Rotation.from_quat(sim_p['initial_orientation']).as_matrix()
    assert np.allclose(object_rotation, rotation @ start, atol=1e-12)


def test_free_tilts_are_refused_when_not_back_level_before_the_grasp():
    sim_p = dict(_tilt_cell()['object_sim'])
    late = sim_p['grasp_time'] - 0.2  # back level, but after the grasp
    for bad in ([1.0, 0.5, 0.3, 0.0, 0.0], [1.0, 0.5, 0.3, 0.0, 0.0, late, 0.5, 0.0, 0.0, 0.0]):
        with pytest.raises(ConfigError, match="'free_tilts'.*grasp_time"):
            scenarios.sim_params(dict(sim_p, free_tilts=bad))


def test_procedure_captures_every_rest_and_identifies_before_the_grasp_and_the_hold():
    checked = _tilt_cell()
    steps = procedure(checked)
    free = np.reshape(checked['object_sim']['free_tilts'], (-1, 5))
    held = np.reshape(checked['object_controller']['tilts'], (-1, 5))
    lift = [[checked['object_controller']['move_start'], checked['object_controller']['move_duration']]]
    moves = np.vstack([free[:, :2], held[:, :2], lift])
    names = [name for _, name, _ in steps]
    assert names.count('calibration/capture') == len(free) + len(held) - 1  # the last tilt: the hold
    grasp = checked['object_sim']['grasp_time']
    for at, name, deadline in steps:
        if name == 'calibration/capture':
            assert deadline > at and deadline - at >= 0.3 - 1e-9
            for start, duration in moves:  # the window of samples is a rest: no motion in it
                assert not (start < deadline and at - 0.5 < start + duration), (at, start)
    tools = names.index('calibration/identify_tools')
    assert steps[tools][0] < grasp and all(s[0] < grasp for s in steps[:tools])
    assert all(s[0] > checked['object_sim']['release_time'] for s in steps[tools + 1:])
    assert names[-2:] == ['calibration/identify_object', 'save_calibration']
    assert steps[-1][0] + CAPTURE_DEADLINE < held[-1, 0]


def test_procedure_refuses_a_scenario_without_tilts():
    with pytest.raises(ValueError, match='free_tilts'):
        procedure(scenarios.validate_sections(scenarios.load_sections('dual_arm_real_cell')))


def _truth_as_calibration(sim: dict) -> dict:
    mass, com = scenarios.true_object(sim)
    return {'object_mass': mass, 'object_com': com.tolist(), 'tool_masses': list(sim['tool_masses']),
            'tool_coms': list(sim['tool_coms']), 'sensor_biases': list(sim['sensor_biases'])}


def test_identified_vs_truth_is_zero_on_the_truth_and_names_an_error(tmp_path):
    checked = _tilt_cell()
    sim, analyzer = checked['object_sim'], checked['wrench_analyzer']
    rows = identified_vs_truth(_truth_as_calibration(sim), sim, analyzer)
    gauge = next(r for r in rows if r['parameter'] == 'object com, contacts')
    assert all(r['error'] < 1e-9 and r['within'] in (True, None) for r in rows if r is not gauge)
    # the frame the configured contacts define: the true one shifted by their mean error, by hand
    errors = sim['contact_position_errors']
    shift = [(errors[0] + errors[3]) / 2, (errors[1] + errors[4]) / 2, (errors[2] + errors[5]) / 2]
    assert np.allclose(gauge['truth'], np.subtract(scenarios.true_object(sim)[1], shift), atol=1e-12)
    assert gauge['error'] == pytest.approx(np.linalg.norm(shift))
    off = _truth_as_calibration(sim)
    off['tool_masses'][1] += 0.006  # beyond the 5 g of the issue
    off['sensor_biases'][4] -= 0.0015  # within 0.002 N*m
    rows = {(r['parameter'], r['effector']): r for r in identified_vs_truth(off, sim, analyzer)}
    assert rows[('tool mass', 'right')]['within'] is False
    assert rows[('tool mass', 'right')]['error'] == pytest.approx(0.006)
    assert rows[('torque bias', 'left')]['within'] is True


def test_mounting_truth_is_the_grasp_turn_seen_from_the_sensor():
    """Contact +90 deg about x, grasp error e in the object frame: the sensor sees R_c^T e."""
    checked = _tilt_cell()
    sim, analyzer = checked['object_sim'], checked['wrench_analyzer']
    errors = np.reshape(sim['contact_orientation_errors'], (-1, 3))
    quats = np.reshape(sim['contact_orientations'], (-1, 4))
    calibration = _truth_as_calibration(sim)
    # written orientations: the configured (identity) times exp(R_c^T e), derived by hand
    written = [Rotation.from_rotvec(Rotation.from_quat(q).inv().apply(e)).as_quat() for q, e in zip(quats, errors)]
    calibration['sensor_orientations'] = np.concatenate(written).tolist()
    rows = [r for r in identified_vs_truth(calibration, sim, analyzer) if r['parameter'] == 'mounting rotation']
    assert len(rows) == 2 and all(r['error'] < 1e-9 for r in rows)
    assert np.allclose(rows[0]['truth'], np.degrees([errors[0][0], errors[0][2], -errors[0][1]]), atol=1e-9)


def test_loading_a_calibration_keeps_the_truth_and_shares_the_object(tmp_path):
    sections = scenarios.load_sections('dual_arm_real_cell_tilt')
    before = scenarios.true_object(scenarios.sim_params(sections['object_sim']))
    path = tmp_path / 'calibration.yaml'
    path.write_text('/**/wrench_analyzer:\n  ros__parameters:\n    object_mass: 2.093\n'
                    '    object_com: [0.026, 0.044, 0.002]\n    tool_masses: [0.331, 0.269]\n'
                    '/**/wrench_distributor:\n  ros__parameters:\n    object_mass: 2.093\n')
    load_calibration(sections, path)
    after = scenarios.true_object(scenarios.sim_params(sections['object_sim']))
    assert after[0] == pytest.approx(before[0]) and np.allclose(after[1], before[1])
    assert scenarios.check_consistency(sections) == []
    assert sections['wrench_distributor']['object_mass'] == 2.093
    assert sections['wrench_analyzer']['tool_masses'] == [0.331, 0.269]
    scenarios.validate_sections(sections)


def test_compare_table_marks_the_truth_outside_its_target_and_names_what_is_not_identified(tmp_path):
    def run(label: str, shear: float) -> None:
        (tmp_path / label).mkdir()
        element = {'unit': 'N', 'commanded': 0.0, 'tolerance': 0.2, 'true_mean': shear,
                   'estimated_mean': 0.0, 'true_error_rms': abs(shear), 'within_tolerance': abs(shear) <= 0.2}
        (tmp_path / label / 'elements.json').write_text(json.dumps(
            {'steady_window_s': [1.0, 2.0], 'elements': {'shear_u(left,right)': element}}))
    run('a', -0.19)
    run('b', -0.23)
    checked = _tilt_cell()
    rows = identified_vs_truth(_truth_as_calibration(checked['object_sim']), checked['object_sim'],
                               checked['wrench_analyzer'])
    text, summary = compare_calibration({'identified': tmp_path / 'a', 'guesses': tmp_path / 'b'}, rows)
    line = next(x for x in text.splitlines() if x.strip().startswith('shear_u'))
    assert '-0.190 /' in line and '-0.230*/' in line, line
    assert summary['not_identified'] == ['grasp_position(left)', 'grasp_position(right)']
    assert summary['elements']['shear_u(left,right)']['guesses']['within_tolerance'] is False


def _hold_only(checked: dict) -> dict:
    sections = {name: dict(section) for name, section in checked.items()}
    without_calibration_motions(sections, checked)
    return scenarios.validate_sections(sections)


def test_hold_only_cuts_the_calibration_motions_of_the_tilt_scenario():
    """The holds of ``--calibrate compare``, times derived by hand from the scenario file.

    Free turns from 1.2 s to 7.2 s (6.0 s cut), held turns from 11.2 s to 16.4 s (5.2 s cut):
    the grasp at 8.1 - 6.0, the load change at 16.8 - 11.2, the judged tilt at 17.8 - 11.2.
    """
    hold = _hold_only(_tilt_cell())
    sim, controller = hold['object_sim'], hold['object_controller']
    assert sim['free_tilts'] == []
    assert (sim['grasp_time'], sim['release_time'], sim['arm_move_start'], controller['move_start']) == \
        pytest.approx((2.1, 2.6, 3.0, 3.0))
    assert sim['duration'] == pytest.approx(10.1)
    assert np.allclose(controller['tilts'], [6.6, 1.5, 0.5236, 0.0, 0.0])
    assert np.allclose(sim['arm_tilts'], controller['tilts'])
    schedule = parse_schedule(controller['internal_load_schedule'])
    assert [when for when, _ in schedule] == pytest.approx([0.0, 5.6])
    original = parse_schedule(_tilt_cell()['object_controller']['internal_load_schedule'])
    assert [handles for _, handles in schedule] == [handles for _, handles in original]
    with pytest.raises(ValueError, match='--calibrate needs the free tilts'):  # nothing left to calibrate
        procedure(hold)


@settings(max_examples=40, deadline=None)
@given(free=st.lists(vector, min_size=0, max_size=3), held=st.lists(vector, min_size=0, max_size=3),
       rest=st.floats(0.3, 2.0))
def test_hold_only_keeps_the_hold_and_moves_it_by_the_motions_cut(free, held, rest):
    """Any free and held turns: what follows each cut keeps its spacing, earlier by the cut.

    The hold being judged (the load change, the tilt after it, the end) keeps its times
    relative to the load change; the grasp keeps its distance to the free turns' end.
    """
    checked = _tilt_cell()
    sim, controller = dict(checked['object_sim']), dict(checked['object_controller'])
    free_rows = _sequence(free + [(0.0, 0.0, 0.0)] if free else [], start=0.5, duration=0.4, rest=rest)
    free_end = free_rows[-5] + 0.4 if free else None
    grasp = (free_end if free else 0.5) + 0.9
    sim.update(free_tilts=free_rows, grasp_time=grasp, release_time=grasp + 0.5)
    move = grasp + 0.9
    sim['arm_move_start'] = controller['move_start'] = move
    held_rows = _sequence(held, start=move + 2.0, duration=0.8, rest=rest)
    held_end = held_rows[-5] + 0.8 if held else move + 2.0
    change = held_end + 0.4
    judged = [change + 1.0, 1.5, 0.5, 0.0, 0.0]
    controller['tilts'] = sim['arm_tilts'] = held_rows + judged
    controller['internal_load_schedule'] = ['0.0: squeeze(left,right)=5', f'{change!r}: squeeze(left,right)=25']
    sim['duration'] = change + 4.0
    checked = scenarios.validate_sections(dict(checked, object_sim=sim, object_controller=controller))
    hold = _hold_only(checked)
    cut_free = free_end - 0.5 if free else 0.0
    cut_held = held_end - (move + 2.0) if held else 0.0
    h_sim, h_controller = hold['object_sim'], hold['object_controller']
    assert h_sim['grasp_time'] == pytest.approx(grasp - cut_free)
    assert h_controller['move_start'] == pytest.approx(move - cut_free)
    new_change = parse_schedule(h_controller['internal_load_schedule'])[-1][0]
    assert new_change == pytest.approx(change - cut_free - cut_held, abs=1e-6)
    assert np.allclose(h_controller['tilts'], [new_change + 1.0, 1.5, 0.5, 0.0, 0.0])
    assert np.allclose(h_sim['arm_tilts'], h_controller['tilts'])
    assert h_sim['duration'] - new_change == pytest.approx(4.0)
    assert h_sim['free_tilts'] == []
