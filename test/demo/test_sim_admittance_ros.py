"""The admittance arms over real DDS: the reference-frame rule, and the demo open and closed loop.

The demo tests run ``python -m wrench_distribution.sim.demo --scenario dual_arm_admittance`` in a
subprocess (its own ROS_DOMAIN_ID, DDS on localhost) and check the file written by
``--summary-json``, judged on the simulator's truth. Commanded values come from the
scenario file's schedule; the closed-loop target is max(2 %, 0.2 N or 0.02 N*m) per element.
"""
from pathlib import Path
import re

import numpy as np
import pytest
import yaml

from ros_harness import demo_summary, domain_id_for, NodeProcess, REPO, stamped_wrench, TestClient
from truth_checks import check_closed_loop_on_truth, check_grasps, check_truth_at_rest, DEMO_PACE, target

pytestmark = [pytest.mark.ros, pytest.mark.slow]

ROOT = Path(REPO)
SCENARIO = ROOT / 'config' / 'demo_dual_arm_admittance.yaml'
#: The basis the distributor names for two rigid grasps (docs/theory.md), and the units.
ELEMENTS = {'squeeze(left,right)': 'N', 'twist(left,right)': 'N*m', 'bend_u(left,right)': 'N*m',
            'bend_v(left,right)': 'N*m', 'shear_u(left,right)': 'N', 'shear_v(left,right)': 'N'}


def sections() -> dict:
    with open(SCENARIO, encoding='utf-8') as f:
        return {k: v['ros__parameters'] for k, v in yaml.safe_load(f).items()}


def last_commanded() -> dict:
    """Return the schedule's last entry, parsed here from the scenario file (not by the package)."""
    entry = sections()['object_controller']['internal_load_schedule'][-1]
    values = dict.fromkeys(ELEMENTS, 0.0)
    for name, value in re.findall(r'([a-z_]+\([a-z,]+\))\s*=\s*([-+0-9.eE]+)', entry):
        values[name] = float(value)
    assert values['squeeze(left,right)'] > 0, entry
    return values


def run_demo(tmp_path: Path, offset: int, feedback: str) -> dict:
    return demo_summary(['--scenario', 'dual_arm_admittance', '--internal-load-feedback', feedback,
                         '--out', str(tmp_path), '--timeout', '120', '--no-plot', '--real-time-factor', str(DEMO_PACE)],
                        tmp_path / 'summary' / f'feedback_{feedback}.json', domain_id_for(offset=offset), timeout=180)


def check_shape(summary: dict) -> None:
    assert set(summary['elements']) == set(ELEMENTS)
    commanded = last_commanded()
    for name, element in summary['elements'].items():
        assert element['unit'] == ELEMENTS[name]
        assert element['commanded'] == pytest.approx(commanded[name], abs=1e-9), name
        if commanded[name] == 0:  # no rounding residue printed for a zero command
            assert element['commanded'] == 0.0, (name, element['commanded'])
        for key in ('true_mean', 'estimated_mean', 'true_error_rms', 'gap_mean'):
            assert isinstance(element[key], float), (name, key)
        # the window is steady: the truth's scatter about its mean stays below the target
        scatter = np.sqrt(max(element['true_error_rms'] ** 2 - element['true_error_mean'] ** 2, 0))
        assert scatter <= 0.75 * target(element['commanded'], element['unit']), (name, element)
    assert isinstance(summary['limit_violations'], int)
    assert summary['limit_violations'] == 0
    lo, hi = summary['steady_window_s']
    assert hi - lo >= 1.0 and summary['samples_in_window'] >= 100


@pytest.mark.one_distribution
def test_open_loop_runs_and_measures_what_the_arms_really_apply(tmp_path):
    """Open loop: the summary has its shape, and the arms' real behaviour shows.

    The arms' springs and the calibration errors make the TRUE squeeze, twist and bend fall
    short of their commands by more than the target, while the arms still apply more than
    60 % of each (the loop is not broken); the truth's topics carry the true object.
    """
    summary = run_demo(tmp_path, 0, 'off')
    check_shape(summary)
    assert summary['internal_load_feedback'] is False
    for name in ('squeeze(left,right)', 'twist(left,right)', 'bend_u(left,right)'):
        e = summary['elements'][name]
        short = e['commanded'] - e['true_mean']
        assert target(e['commanded'], e['unit']) < short < 0.4 * abs(e['commanded']), (name, e)
        assert e['within_tolerance'] is False
    check_truth_at_rest(tmp_path / 'dual_arm_admittance' / 'bag', sections()['object_sim'],
                        summary['steady_window_s'])


def test_closed_loop_with_the_grasps_identified_holds_the_truth_on_target(tmp_path):
    """Closed loop, every element's TRUTH within max(2 %, 0.2 N or 0.02 N*m).

    With today's errors (grasps 1-3 mm and 1-2 deg off, grippers 20-30 g, biases 0.1-0.2 N)
    the demo does what a user would: captures the rests before the move, identifies the grasps
    (applied at once in the analyzer) and saves them; the loop then holds every estimate on its
    command, and the truth (the true contacts' basis) with it.
    """
    summary = run_demo(tmp_path, 1, 'on')
    check_shape(summary)
    check_grasps(summary, sections()['object_sim'], tmp_path / 'dual_arm_admittance_feedback')
    assert check_closed_loop_on_truth(summary, ()) == []
    assert summary['all_within_tolerance'] is True
    check_truth_at_rest(tmp_path / 'dual_arm_admittance_feedback' / 'bag',
                        sections()['object_sim'], summary['steady_window_s'])


def test_a_wrench_reference_in_another_frame_is_dropped(tmp_path):
    """object_sim with admittance arms ignores references not in the arm's F/T sensor frame.

    The clock starts only once every arm has a reference it accepted: with references in the
    contact frames it stays at zero and the node says why; in the sensor frames (or with an
    empty frame id) it runs.
    """
    from rosgraph_msgs.msg import Clock
    from geometry_msgs.msg import WrenchStamped
    params = dict(sections()['object_sim'], lockstep=False, real_time_factor=1.0,
                  duration=0.0, start_timeout=60.0)
    domain = domain_id_for(offset=2)
    client = TestClient(domain, 'wd_admittance_frames')
    try:
        with NodeProcess('object-sim', params, domain) as node:
            pubs = {e: client.publisher(WrenchStamped, f'{e}/wrench_command')
                    for e in ('left', 'right')}
            clock = client.collect(Clock, '/clock')
            assert client.wait_matched(publishers=list(pubs.values()), timeout=30.0)

            def send(frames: dict, seconds: float) -> None:
                for _ in range(int(seconds / 0.05)):
                    for e, pub in pubs.items():
                        pub.publish(stamped_wrench([0, 0, 10.0, 0, 0, 0], 0, frames[e]))
                    client.spin_for(0.05)
            send({'left': 'left_contact', 'right': 'object'}, 2.0)
            assert clock, 'no /clock from object_sim'
            assert all(m.clock.sec == 0 and m.clock.nanosec == 0 for m in clock)
            said = node.output()  # one throttled message for both arms (one call site)
            assert ("ignoring wrench reference in frame 'left_contact'" in said
                    or "ignoring wrench reference in frame 'object'" in said), said
            send({'left': 'left_ft_sensor', 'right': ''}, 1.0)
            assert client.spin_until(lambda: clock[-1].clock.sec > 0 or clock[-1].clock.nanosec > 0,
                                     15.0), node.output()[-2000:]
    finally:
        client.close()
