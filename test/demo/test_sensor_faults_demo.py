"""The sensor-fault demo end to end over DDS, judged on the simulator's truth.

``dual_arm_faults`` writes a saturation, a freeze, a spike and a drift into the simulated F/T
streams (their times and sizes read here from the scenario file) with the internal-load
feedback closed. Each fault must be found within the bound the checks state (docs/health.md: a
reading at its sensor's rating at once, a freeze at its FROZEN_REPEATS-th equal reading, a
spike SPIKE_WIDTH readings after it, a drift once the resultant is off by more than
consistency_tolerance plus two blocks), and the simulator's true internal load must stay on the
command while the sensor is in doubt: the feedback held at its integral, the prescription open
loop (the scenario steps the squeeze while the right sensor is saturated and while the left one
is frozen).
"""
import json
from pathlib import Path
import re

import pytest
import yaml

from ros_harness import domain_id_for, REPO, run_demo_command
from truth_checks import DEMO_PACE
from wrench_distribution.core.health import CONSISTENCY_BLOCK, FROZEN_REPEATS, SPIKE_WIDTH

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def scenario() -> dict:
    with open(Path(REPO) / 'config' / 'demo_dual_arm_faults.yaml', encoding='utf-8') as f:
        return {k: v['ros__parameters'] for k, v in yaml.safe_load(f).items()}


def test_each_fault_is_found_in_time_and_the_truth_stays_on_the_command(tmp_path):
    params = scenario()
    sim = params['object_sim']
    period = 1.0 / sim['publish_rate']
    # at the tests' pace: the analyzer runs outside the lockstep, and at the scenario's real
    # time on a loaded machine its late read-outs changed what the feedback did (at a load of
    # about 10, a spurious spike, the spike at 7 s and the drift not found)
    done = run_demo_command(['--scenario', 'dual_arm_faults', '--out', str(tmp_path),
                             '--timeout', '150', '--no-plot', '--real-time-factor', str(DEMO_PACE)],
                            domain_id_for(), timeout=240)
    assert done.returncode == 0, done.output[-6000:]
    summary = json.loads((tmp_path / 'dual_arm_faults' / 'summary.json').read_text())
    faults = {f['kind']: f for f in summary['sensor_faults']['faults']}
    entries = {entry.split()[1]: entry.split() for entry in sim['sensor_faults']}
    tolerance = params['wrench_analyzer'].get('consistency_tolerance', [1.0, 0.2])[0]
    # a clip: the reading crosses the rating as the squeeze rises after its step (5 ms in the
    # runs here; 0.1 s allows for messages late under load); the check itself finds it at its
    # first reading at the rating (below)
    bounds = {'clip': 0.1,
              'freeze': (FROZEN_REPEATS - 1) * period + period,
              'spike': SPIKE_WIDTH * period + period,
              'drift': tolerance / float(entries['drift'][5]) + 2 * CONSISTENCY_BLOCK * period}
    for kind, bound in bounds.items():
        fault, entry = faults[kind], entries[kind]
        assert fault['sensor'] == entry[0] and fault['start_s'] == float(entry[2])
        assert fault['found'] is not None, fault
        assert 0.0 <= fault['delay_s'] <= bound, (kind, fault, bound)
    # a freeze and a spike are named with their onset, the reading at their start
    for kind in ('freeze', 'spike'):
        assert abs(faults[kind]['onset_s'] - faults[kind]['start_s']) <= period + 1e-9, faults[kind]
    assert faults['freeze']['found'] == 'frozen' and faults['spike']['found'] == 'spike'
    # a reading at the rating is out of range at once (sensor_ranges: the right fz at 35 N)
    clip = faults['clip']
    assert clip['found'] == 'out_of_range' and clip['detected_s'] == clip['onset_s'], clip
    rated = params['wrench_analyzer']['sensor_ranges']
    assert rated[6 + 2] == float(entries['clip'][5]) and entries['clip'][4] == 'fz'
    # the drift on a rigid sensor: named by its axis, or the set inconsistent with it among
    # the sensors that could explain it (docs/health.md: what the set cannot tell)
    assert faults['drift']['found'] in ('drift', 'inconsistent')
    assert 'right' in faults['drift']['detail'] or faults['drift']['found'] == 'drift'
    # the truth while the left sensor was frozen and the squeeze stepped: on the command
    # within three sigma of one force and torque reading
    units = [b['unit'] for b in summary['basis']]
    freeze = faults['freeze']
    assert freeze['true_samples'] > 50
    for error, unit in zip(freeze['true_max_abs_error'], units):
        assert error <= 3 * (sim['sensor_force_noise'] if unit == 'N' else sim['sensor_torque_noise'])
    # the truth while the right sensor was saturated (from the squeeze's step on): the held
    # integral took in at most the read-outs between the step and the onset, each error at
    # most the step of its element: ki |step| (onset - step + two read-out periods), besides
    # three sigma of one reading
    ki = params['wrench_distributor']['feedback_ki'][0]
    steps = dict(map(schedule_entry, params['object_controller']['internal_load_schedule']))
    step = float(entries['clip'][2])
    before = steps[max(when for when in steps if when < step)]
    after = steps[step]
    assert clip['true_samples'] > 50
    for name, error, unit in zip([b['name'] for b in summary['basis']], clip['true_max_abs_error'], units):
        jump = abs(after.get(name, 0.0) - before.get(name, 0.0))
        noise = sim['sensor_force_noise'] if unit == 'N' else sim['sensor_torque_noise']
        assert error <= ki * jump * (clip['onset_s'] - step + 2 * period) + 3 * noise, (name, error, clip)
    assert 'Sensor faults' in done.output


def schedule_entry(entry: str) -> tuple:
    """``"3.0: squeeze(a,b)=40, twist(a,b)=-0.5"`` -> ``(3.0, {'squeeze(a,b)': 40.0, ...})``, read by hand."""
    when, handles = entry.split(':', 1)
    return float(when), {name: float(value) for name, value in
                         re.findall(r'(\w+\([^)]*\))\s*=\s*([-+0-9.eE]+)', handles)}
