"""The demo's grasp identification (sim/nodes/calibration_step.py, sim/demo/, sim/reports/real_cell.py), no ROS.

The calls the demo makes are derived here from the scenario file's schedule (parsed with a
regular expression, not by the package): a capture at the end of each held rest before the
move, then ``~/calibration/identify_grasps`` and ``~/save_calibration`` as the move starts.
The comparison with the truth is checked on contacts built here from the scenario's errors.
"""
from pathlib import Path
import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
import yaml

from ros_harness import REPO
from wrench_distribution.sim.demo.run import main as demo_main
from wrench_distribution.sim.demo.sections import grasp_steps, run_sections
from wrench_distribution.sim.nodes.calibration_step import CAPTURE_DEADLINE, CAPTURE_LEAD, grasp_procedure
from wrench_distribution.sim.reports.real_cell import grasps_vs_truth
from wrench_distribution.sim.scenarios import load_sections, validate_sections

ROOT = Path(REPO)


def schedule_times(name: str) -> tuple:
    """Return the schedule's change times and the move's start, read from the scenario file."""
    with open(ROOT / 'config' / f'demo_{name}.yaml', encoding='utf-8') as f:
        controller = yaml.safe_load(f)['object_controller']['ros__parameters']
    times = [float(re.match(r'\s*([0-9.]+)\s*:', entry).group(1)) for entry in controller['internal_load_schedule']]
    return times, float(controller['move_start'])


@pytest.mark.parametrize('name', ['dual_arm_admittance', 'dual_arm_joints'])
def test_the_demo_captures_each_rest_then_identifies_as_the_move_starts(name):
    times, start = schedule_times(name)
    rest_ends = [t for t in times[1:] if t <= start]  # each rest ends where the next entry begins
    assert len(rest_ends) >= 3 and rest_ends[-1] == start
    steps = grasp_procedure(validate_sections(load_sections(name)))
    captures = [(at, deadline) for at, service, deadline in steps if service == 'calibration/capture']
    np.testing.assert_allclose(captures, [(end - CAPTURE_LEAD, end - CAPTURE_DEADLINE) for end in rest_ends])
    assert steps[-2:] == [(start, 'calibration/identify_grasps', None), (start, 'save_calibration', None)]


def test_rests_too_short_or_contacts_not_static_are_refused():
    sections = load_sections('dual_arm_admittance')
    short = run_sections(sections, 4.0, False)  # the schedule squeezed into 4 s: rests of 0.5 s
    with pytest.raises(ValueError, match='held still for 1 s or more'):
        grasp_procedure(validate_sections(short))
    assert grasp_steps('auto', validate_sections(short)) is None
    with pytest.raises(ValueError, match='held still'):
        grasp_steps('on', validate_sections(short))
    topic = {k: dict(v) for k, v in sections.items()}
    topic['wrench_analyzer']['contact_source'] = 'topic'
    with pytest.raises(ValueError, match="contact_source is 'topic'"):
        grasp_procedure(validate_sections(topic))
    assert grasp_steps('off', validate_sections(sections)) is None


def test_identify_grasps_on_a_scenario_without_rests_is_refused(tmp_path, capsys):
    """The ideal dual arm: contacts from a topic (the controller's), and no rest before the move."""
    assert demo_main(['--scenario', 'dual_arm', '--identify-grasps', 'on', '--out', str(tmp_path)]) == 2
    assert "contact_source is 'topic'" in capsys.readouterr().err
    # the real cell: static contacts, one internal load before its move
    assert demo_main(['--scenario', 'dual_arm_real_cell', '--identify-grasps', 'on', '--out', str(tmp_path)]) == 2
    assert 'two or more different internal loads held still' in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_grasps_against_the_truth_are_the_relative_poses_errors():
    """Identified contacts equal to the truth: no relative error; the belief's is derived here."""
    sim = validate_sections(load_sections('dual_arm_admittance'))['object_sim']
    n = len(sim['effectors'])
    believed_p = np.reshape(sim['contact_positions'], (n, 3))
    believed_r = [Rotation.from_quat(q) for q in np.reshape(sim['contact_orientations'], (n, 4))]
    true_p = believed_p + np.reshape(sim['contact_position_errors'], (n, 3))
    true_r = [Rotation.from_rotvec(e) * r for e, r in zip(np.reshape(sim['contact_orientation_errors'], (n, 3)),
                                                          believed_r)]
    perfect = {'contact_positions': true_p.ravel().tolist(),
               'contact_orientations': np.concatenate([r.as_quat() for r in true_r]).tolist()}
    rows = grasps_vs_truth(perfect, sim)
    relative = rows['relative'][0]
    assert relative['identified_mm'] == pytest.approx(0.0, abs=1e-6)
    assert relative['identified_deg'] == pytest.approx(0.0, abs=1e-6)
    # the belief: the right contact seen from the left one, against the truth's
    believed = believed_r[0].inv().apply(believed_p[1] - believed_p[0])
    truth = true_r[0].inv().apply(true_p[1] - true_p[0])
    assert relative['believed_mm'] == pytest.approx(1e3 * np.linalg.norm(believed - truth), rel=1e-6)
    turn = ((true_r[0].inv() * true_r[1]).inv() * (believed_r[0].inv() * believed_r[1])).magnitude()
    assert relative['believed_deg'] == pytest.approx(np.degrees(turn), rel=1e-6)
    for row, error in zip(rows['effectors'], np.reshape(sim['contact_position_errors'], (n, 3))):
        np.testing.assert_allclose(row['true_error_mm'], 1e3 * error, atol=1e-9)
        np.testing.assert_allclose(row['correction_mm'], 1e3 * error, atol=1e-6)
