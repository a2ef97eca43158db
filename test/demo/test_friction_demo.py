"""The demo's friction comparison, end to end over DDS.

The lightly squeezed grasp slips, the same grasp with ``friction_mode: auto`` holds, and the
added squeeze follows the force the motion needs.
"""
import json

import pytest

from ros_harness import domain_id_for, run_demo_command
from truth_checks import DEMO_PACE

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_prescription_alone_slips_and_auto_holds(tmp_path):
    done = run_demo_command(
        ['--scenario', 'three_finger_hand', '--friction', 'compare', '--duration', '2.5', '--rate', '100',
         '--timeout', '100', '--out', str(tmp_path), '--real-time-factor', str(DEMO_PACE)],
        domain_id_for(), timeout=300)
    assert done.returncode == 0, done.output[-6000:]
    check, auto = (json.loads((tmp_path / f'three_finger_hand_squeeze0.5_friction_{m}' / 'summary.json')
                              .read_text()) for m in ('check', 'auto'))
    slipped, held = check['friction'], auto['friction']
    # 0.5 N per pair gives each fingertip 0.87 N of normal force: mu N = 0.43 N < W/3 = 0.98 N
    assert slipped['slipped'] and max(slipped['slip_m'].values()) > 5e-3
    # the lost object is reported as lost at a time, and no figure covers its fall
    assert check['lost_at_s'] is not None and 0.0 <= check['lost_at_s'] < check['duration']
    assert slipped['lost_at_s'] == check['lost_at_s']
    text = (tmp_path / 'three_finger_hand_squeeze0.5_friction_check' / 'summary.txt').read_text()
    assert f"Object LOST at {check['lost_at_s']:.2f} s" in text
    evaluated_from = check['release_time'] + check['settle']
    if check['lost_at_s'] <= evaluated_from:  # lost before the evaluation: no figure at all
        assert check['tracking']['position_rms_mm'] is None
        assert 'resultant_residual' not in check and not check['internal_load']
        assert not slipped['measured']
    else:  # figures of the held phase only: the object is near its reference
        assert check['tracking']['position_max_mm'] < 50.0
    assert auto['lost_at_s'] is None and held['lost_at_s'] is None
    assert not held['slipped'] and max(held['slip_m'].values()) < 1e-3
    assert auto['tracking']['final_position_error_mm'] < 5.0
    # the commanded internal load includes what auto mode added, so it matches the read-out
    for phase in auto['internal_load']:
        assert sum(phase['added_by_auto']) > 0
        assert max(abs(e) for e in phase['error']) < 0.5, phase
        # and what the fingertips really apply (the simulator's truth) matches it too
        assert max(abs(t - c) for t, c in zip(phase['true'], phase['commanded'])) < 0.5, phase
    assert held['added_squeeze']['min_sum'] > 0
    assert held['added_squeeze']['correlation_with_desired_force'] > 0.9
    assert 'Friction: the same grasp' in done.output
    assert (tmp_path / 'three_finger_hand_friction_compare.png').stat().st_size > 10_000


@pytest.mark.one_distribution
def test_comparison_with_friction_feedback_reads_its_own_runs(tmp_path):
    """``--friction compare --friction-feedback on`` compares the runs it just made.

    A stale auto run of an earlier comparison sits in the output directory: the comparison
    must read the feedback run (its own directory name), not the stale one and not crash.
    """
    stale = tmp_path / 'three_finger_hand_squeeze0.5_friction_auto'
    stale.mkdir()
    (stale / 'summary.json').write_text('{}')
    done = run_demo_command(
        ['--scenario', 'three_finger_hand', '--friction', 'compare', '--friction-feedback', 'on',
         '--duration', '2.5', '--rate', '100', '--timeout', '100', '--out', str(tmp_path),
         '--real-time-factor', str(DEMO_PACE)],
        domain_id_for(), timeout=300)
    assert done.returncode == 0, done.output[-6000:]
    run = tmp_path / 'three_finger_hand_squeeze0.5_friction_auto_friction_feedback'
    params = (run / 'params.yaml').read_text()
    assert 'friction_feedback: true' in params
    assert 'friction_feedback: true' not in (
        tmp_path / 'three_finger_hand_squeeze0.5_friction_check' / 'params.yaml').read_text()
    assert f'friction_mode auto ({run.name}): held' in done.output
    assert (stale / 'summary.json').read_text() == '{}'  # untouched, and not what was read
    held = json.loads((run / 'summary.json').read_text())['friction']
    assert not held['slipped'] and max(held['slip_m'].values()) < 1e-3
