"""The real cell over real DDS: what the tare and the loop buy, judged on the truth.

Each test runs ``python -m wrench_distribution.sim.demo --scenario dual_arm_real_cell`` closed loop
in a subprocess (separate processes, DDS on localhost), once untared and once tared with the
object free (the analyzer's ``~/tare`` before the grasp). References are derived here: the
biases a free tare must find (true bias + true tool weight - believed tool weight, gravity
turned into the true and the believed sensor frames with scipy), the true object at rest
(:mod:`truth_checks`).
"""
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
import yaml

from ros_harness import demo_summary, domain_id_for, REPO, run_demo_command
from truth_checks import (check_closed_loop_on_truth, check_truth_at_rest, DEMO_PACE, GRASP_PARAMETERS,
                          target, truth_of)

# timing: the demo's tare and calibration calls must be answered at given sim times, which the
# simulator does not wait for: under CPU contention they come late (make test runs them in its
# timing lane, one at a time)
pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timing]

ROOT = Path(REPO)
SCENARIO = ROOT / 'config' / 'demo_dual_arm_real_cell.yaml'


def sections() -> dict:
    with open(SCENARIO, encoding='utf-8') as f:
        return {k: v['ros__parameters'] for k, v in yaml.safe_load(f).items()}


def run_demo(tmp_path: Path, offset: int, tare: str) -> dict:
    return demo_summary(['--scenario', 'dual_arm_real_cell', '--tare', tare, '--internal-load-feedback', 'on',
                         '--out', str(tmp_path), '--timeout', '150', '--no-plot'],
                        tmp_path / 'summary' / f'tare_{tare}.json', domain_id_for(offset=offset), timeout=200)


def tool_wrench(mass: float, com, gravity_sensor) -> np.ndarray:
    weight = mass * np.asarray(gravity_sensor, float)
    return np.concatenate([weight, np.cross(com, weight)])


def expected_tare(cell: dict) -> np.ndarray:
    """Biases a free tare finds: reading = -(0 - tool_true) + bias; b = reading - tool_believed.

    The sensors (sign -1) sit on the true contact frames; the analyzer turns gravity into the
    believed ones. The object rests in its fixture at its initial orientation (identity).
    """
    sim, analyzer = cell['object_sim'], cell['wrench_analyzer']
    quats = np.reshape(sim['contact_orientations'], (2, 4))
    errors = np.reshape(sim['contact_orientation_errors'], (2, 3))
    gravity = np.asarray(sim['gravity'], float)
    out = []
    for i in range(2):
        believed = Rotation.from_quat(quats[i])
        true = Rotation.from_rotvec(errors[i]) * believed
        reading = (tool_wrench(sim['tool_masses'][i], sim['tool_coms'][3 * i:3 * i + 3],
                               true.inv().apply(gravity)) + sim['sensor_biases'][6 * i:6 * i + 6])
        out.append(reading - tool_wrench(analyzer['tool_masses'][i],
                                         analyzer['tool_coms'][3 * i:3 * i + 3],
                                         believed.inv().apply(gravity)))
    return np.array(out)


@pytest.mark.one_distribution
def test_untared_the_loop_regulates_a_wrong_estimate(tmp_path):
    """Untared: every estimate on its command, the truth newtons away, the biases named.

    The loop cannot tell: within the target on the estimate, the true squeeze and shear_u
    are off by more than the target, and the sensor biases are what the summary names first.
    """
    summary = run_demo(tmp_path, 0, 'off')
    assert summary['tare'] is None
    assert summary['estimate_all_within_tolerance'] is True
    assert summary['all_within_tolerance'] is False  # judged on the truth
    for name in ('squeeze(left,right)', 'shear_u(left,right)'):
        e = summary['elements'][name]
        assert abs(e['true_mean'] - e['commanded']) > target(e['commanded'], e['unit']), e
        assert e['limited_by'][0]['parameter'].startswith('sensor_bias'), e
    check_closed_loop_on_truth(summary, ('sensor_bias',) + GRASP_PARAMETERS + (
        'tool_', 'object_'))
    check_truth_at_rest(tmp_path / 'dual_arm_real_cell_feedback' / 'bag',
                        sections()['object_sim'], summary['steady_window_s'])


def test_tared_closed_loop_is_within_target_where_the_belief_allows(tmp_path):
    """Tared with the object free, closed loop: what is left is the grasps' errors.

    The tare answers before the grasp with the biases derived here; gravity keeps its
    direction in the sensor frames (the move turns about the vertical), so the tools' mass
    and centre-of-mass errors taken in by the tare contribute nothing; every element is
    within the target on the truth, or is limited by the grasps alone, as the summary says.
    """
    cell = sections()
    summary = run_demo(tmp_path, 1, 'on')
    tare = summary['tare']
    assert tare['success'] is True, tare
    assert tare['answered_at_s'] < tare['grasp_time_s'] == cell['object_sim']['grasp_time']
    np.testing.assert_allclose(np.reshape(tare['biases'], (2, 6)), expected_tare(cell),
                               atol=0.03)
    for name, values in summary['contributions'].items():
        assert not name.startswith('sensor_bias'), name  # the tare set them
        if name.startswith(('tool_mass', 'tool_com')):
            np.testing.assert_allclose(values, 0.0, atol=1e-9)
    outside = check_closed_loop_on_truth(summary, GRASP_PARAMETERS)
    for name in ('squeeze(left,right)', 'twist(left,right)', 'shear_v(left,right)'):
        assert name not in outside, summary['elements'][name]
    check_truth_at_rest(tmp_path / 'dual_arm_real_cell_tare_feedback' / 'bag',
                        cell['object_sim'], summary['steady_window_s'])


TILT_SCENARIO = ROOT / 'config' / 'demo_dual_arm_real_cell_tilt.yaml'


@pytest.mark.one_distribution
@pytest.mark.serial  # which samples a capture takes depends on when its answer comes: another demo's load beside
# it moves the identified mountings across their 0.2 deg target
def test_calibration_procedure_identifies_the_cell_and_holds_the_load_through_the_tilt(tmp_path):
    """A user's calibration through the analyzer's services, then a 30 deg tilt.

    ``--calibrate compare``: the free tools turned through five orientations and the held box
    through three (captured at each rest, identified, saved), then the hold with the saved file
    loaded by both nodes, with the typed guesses as typed, and with them tared. The saved parameters are compared
    here with the scenario's truth (the targets of ``sim/reports/real_cell.py``); the internal load is judged on the
    simulator's truth while the box tilts by 30 deg: within the target with the identified
    parameters; not with the guesses (visibly as typed, by a little once tared).
    """
    with open(TILT_SCENARIO, encoding='utf-8') as f:
        cell = {k: v['ros__parameters'] for k, v in yaml.safe_load(f).items()}
    sim = cell['object_sim']
    done = run_demo_command(
        ['--scenario', 'dual_arm_real_cell_tilt', '--calibrate', 'compare', '--out', str(tmp_path),
         '--timeout', '300', '--no-plot', '--real-time-factor', str(DEMO_PACE)],
        domain_id_for(offset=2), timeout=700)
    assert done.returncode == 0, done.output[-6000:]
    calibrating = json.loads((tmp_path / 'dual_arm_real_cell_tilt_calibrate_feedback' / 'summary.json').read_text())
    calls = calibrating['calibration']['calls']
    assert calibrating['calibration']['success'] and len(calls) == 11, calls
    tools = next(c for c in calls if c['service'] == 'calibration/identify_tools')
    assert tools['answered_at_s'] < sim['grasp_time'], tools
    with open(tmp_path / 'dual_arm_real_cell_tilt_calibrate_feedback' / 'calibration.yaml', encoding='utf-8') as f:
        saved = yaml.safe_load(f)['/**/wrench_analyzer']['ros__parameters']
    _positions, _rotations, mass, com = truth_of(sim)
    assert abs(saved['object_mass'] - mass) <= max(0.005 * mass, 0.005), saved['object_mass']
    # the object frame the configured contacts define (their mean position error kept at zero):
    # the held object's statics cannot tell a common shift of the contacts from the object's
    shift = np.reshape(sim['contact_position_errors'], (2, 3)).mean(axis=0)
    assert np.linalg.norm(saved['object_com'] - (com - shift)) <= 0.002, saved['object_com']
    assert np.linalg.norm(np.subtract(saved['object_com'], com)) <= 0.002 + np.linalg.norm(shift)
    np.testing.assert_allclose(saved['tool_masses'], sim['tool_masses'], atol=0.005)
    biases, true_biases = np.reshape(saved['sensor_biases'], (2, 6)), np.reshape(sim['sensor_biases'], (2, 6))
    np.testing.assert_allclose(biases[:, :3], true_biases[:, :3], atol=0.02)
    np.testing.assert_allclose(biases[:, 3:], true_biases[:, 3:], atol=0.002)
    identified = json.loads((tmp_path / 'dual_arm_real_cell_tilt_calibrated_feedback' / 'elements.json').read_text())
    typed = json.loads((tmp_path / 'dual_arm_real_cell_tilt_feedback' / 'elements.json').read_text())
    guessed = json.loads((tmp_path / 'dual_arm_real_cell_tilt_tare_feedback' / 'elements.json').read_text())
    lo, hi = identified['steady_window_s']
    from wrench_distribution.sim.reports.series import read_bag
    pose = read_bag(tmp_path / 'dual_arm_real_cell_tilt_calibrated_feedback' / 'bag', ['object_pose'])['object_pose']
    inside = (pose.t >= lo) & (pose.t <= hi)
    tilt = np.degrees(Rotation.from_quat(pose.v[inside, 3:]).magnitude())
    # through the tilt: from about level (the box hangs a few degrees off under the
    # controller) to 30 deg, judged over the whole turn
    assert tilt.min() < 5.0 and tilt.max() > 29.0 and np.ptp(tilt) > 25.0, (tilt.min(), tilt.max())

    def misses(run: dict) -> dict:  # each element's true miss in units of its target
        return {name: abs(e['true_mean'] - e['commanded']) / target(e['commanded'], e['unit'])
                for name, e in run['elements'].items()}
    assert max(misses(identified).values()) <= 1.0, identified['elements']
    # the guesses as typed (the biases unknown): visibly off, two elements or more by 3 targets
    # or more; tared with the object free: worse than identified on the element worst hit
    assert sum(m >= 3.0 for m in misses(typed).values()) >= 2, typed['elements']
    assert max(misses(guessed).values()) > max(misses(identified).values()), guessed['elements']
