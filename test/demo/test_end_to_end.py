"""End to end over real DDS: simulator, controller, distributor, analyzer, via the demo.

Each test runs ``python -m wrench_distribution.sim.demo`` in a subprocess (which starts the
four nodes on its own ROS_DOMAIN_ID, DDS on localhost) for a few seconds of sim time and
checks its ``summary.json``. Reference values come from the scenario files (commanded
squeezes, sensor noise levels), never from the code under test.
"""
import json
from pathlib import Path
import re

import pytest
import yaml

from ros_harness import domain_id_for, REPO, run_demo_command

pytestmark = [pytest.mark.ros, pytest.mark.slow]

ROOT = Path(REPO)


def scenario(name: str) -> dict:
    with open(ROOT / 'config' / f'demo_{name}.yaml', encoding='utf-8') as f:
        return {k: v['ros__parameters'] for k, v in yaml.safe_load(f).items()}


def run_demo(tmp_path: Path, offset: int, *args: str) -> dict:
    # 100 Hz control instead of the demo's 200 Hz: half the lockstep round trips.
    done = run_demo_command(
        ['--out', str(tmp_path), '--timeout', '100', '--rate', '100', *args],
        domain_id_for(offset=offset), timeout=150)
    assert done.returncode == 0, done.output[-6000:]
    (out,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((out / 'summary.json').read_text())
    summary['_dir'] = out
    summary['_stdout'] = done.output
    return summary


def tolerance(params: dict, unit: str) -> float:
    """Return the allowed error of a phase mean: three standard deviations of one sensor sample.

    The short runs of these tests put the evaluation windows close to the accelerations of
    the move, where the effector bodies' own inertia (centripetal terms included, the
    paper's section V-A) adds small real internal loads, a few hundredths of a newton; the
    demo's longer phases show errors of a few thousandths.
    """
    sigma = params['sensor_force_noise'] if unit == 'N' else params['sensor_torque_noise']
    return 3.0 * sigma


def check_recovered(summary: dict, params: dict) -> None:
    """Check the estimate and the simulator's truth of every phase against the command."""
    assert summary['internal_load'], 'no internal-load phases evaluated'
    for phase in summary['internal_load']:
        assert phase['true'] is not None, phase  # object_sim/truth/internal_load recorded
        for j, basis in enumerate(summary['basis']):
            tol = tolerance(params, basis['unit'])
            assert abs(phase['error'][j]) <= tol, (basis['name'], phase)
            assert abs(phase['true'][j] - phase['commanded'][j]) <= tol, (basis['name'], phase)


def check_tracking(summary: dict) -> None:
    tr = summary['tracking']
    assert tr['final_position_error_mm'] < 5.0
    assert tr['distance_moved_mm'] == pytest.approx(tr['reference_distance_mm'], rel=0.05)


@pytest.mark.one_distribution
@pytest.mark.parametrize('name,offset', [('dual_arm', 0), ('three_finger_hand', 1),
                                         ('quadruped_stance', 2)])
def test_scenario_recovers_commanded_internal_load(tmp_path, name, offset):
    params = scenario(name)
    plot = [] if name == 'dual_arm' else ['--no-plot']  # the PNG costs seconds: once is enough
    summary = run_demo(tmp_path, offset, '--scenario', name, '--duration', '2.5', *plot)
    check_tracking(summary)
    check_recovered(summary, params['object_sim'])
    # The schedule's values, read from the scenario file, are what was commanded.
    schedule = params['object_controller']['internal_load_schedule']
    handles = [dict(re.findall(r'(\w+\([^)]*\))\s*=\s*([-+\d.eE]+)', entry))
               for entry in schedule]
    names = [b['name'] for b in summary['basis']]
    for phase, wanted in ((summary['internal_load'][0], handles[0]),
                          (summary['internal_load'][-1], handles[-1])):
        assert wanted
        for key, value in wanted.items():
            assert phase['recovered'][names.index(key)] == pytest.approx(
                float(value), abs=tolerance(params['object_sim'], 'N'))
    out = summary['_dir']
    if not plot:
        assert (out / 'plot.png').stat().st_size > 10_000
    assert (out / 'bag' / 'metadata.yaml').exists()
    assert 'Internal load' in summary['_stdout']


def test_zero_internal_load_stays_near_zero(tmp_path):
    params = scenario('dual_arm')['object_sim']
    summary = run_demo(tmp_path, 3, '--scenario', 'dual_arm', '--duration', '2.0',
                       '--internal-load', 'zero', '--no-plot')
    check_tracking(summary)
    for phase in summary['internal_load']:
        assert max(abs(x) for x in phase['commanded']) == 0.0
        for j, basis in enumerate(summary['basis']):
            tol = tolerance(params, basis['unit'])
            assert abs(phase['recovered'][j]) <= tol, (basis['name'], phase)
        # single samples: noise only (well under 10 standard deviations)
        assert phase['max_abs_recovered_sample'] < 10 * params['sensor_force_noise']
        assert phase['rms_norm'] < 3 * params['sensor_force_noise']


def test_moore_penrose_baseline_produces_internal_load(tmp_path):
    # Centre of mass 5 cm off the middle of the grasps: pinv(G) loads the object internally
    # although no internal load is commanded, and the analyzer sees it. Hand estimate at
    # rest: pinv shares the weight equally, the lever rule does not, so the contacts
    # carry opposite vertical forces of m g dy / L = 2 * 9.81 * 0.05 / 0.4 = 2.45 N.
    params = scenario('dual_arm')['object_sim']
    dy = params['object_com'][1]
    length = params['contact_positions'][1] - params['contact_positions'][4]
    expected = params['object_mass'] * 9.81 * dy / length
    summary = run_demo(tmp_path, 4, '--scenario', 'dual_arm', '--duration', '2.0',
                       '--internal-load', 'zero', '--baseline', 'moore_penrose', '--no-plot')
    check_tracking(summary)
    for phase in summary['internal_load']:
        # The magnitude (RMS over the phase of the norm of the coordinates) is what counts:
        # with a resultant torque near zero the analyzer spreads it over the shear elements
        # differently from sample to sample.
        assert phase['rms_norm'] > 20 * params['sensor_force_noise'], phase
        assert 0.5 * expected < phase['rms_norm'] < 1.5 * expected, phase
