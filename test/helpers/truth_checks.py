"""Checks of a demo run against the simulator's truth, shared by the demo tests.

The true contacts and object are derived here from the scenario's configuration and its
errors (scipy rotations); the object's statics at rest (sum of the true wrenches about the
true centre of mass = the true weight) is the reference the truth topics must meet.
"""
from functools import reduce
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

#: The simulator's pace in the demo tests that identify the grasps or the cell, and in the
#: friction comparison (the scenario files' own: 0.5, the three-finger hand's 1): make test runs
#: two demos at once beside its parallel passes; the analyzer and the demo's recorder, outside
#: the lockstep, take each rest's samples in before its capture with this slack (at 0.5 a run
#: now and then missed a capture: "the grasp identification did not complete"; the calibration
#: procedure's tools answered 0.08 s of sim time after the grasp), and friction auto mode's
#: added squeeze reaches the distributor outside the lockstep too (at 0.5, one run at load 9
#: let the held grasp slip).
DEMO_PACE = 0.3
#: Belief parameters a tare cannot teach: where the grasps and their pads really are.
GRASP_PARAMETERS = ('grasp_position', 'grasp_orientation', 'pad_deflection')


def truth_of(p: dict) -> tuple:
    """Return the true contacts and object of an ``object_sim`` section (defaults filled here).

    :return: ``(positions (n, 3), rotations (n, 3, 3), mass, com (3,))``
    """
    n = len(p['effectors'])
    pos = np.asarray(p['contact_positions'], float).reshape(n, 3)
    quat = np.asarray(p.get('contact_orientations') or [0, 0, 0, 1] * n, float).reshape(n, 4)
    dpos = np.asarray(p.get('contact_position_errors') or [0.0] * 3 * n, float).reshape(n, 3)
    drot = np.asarray(p.get('contact_orientation_errors') or [0.0] * 3 * n, float).reshape(n, 3)
    rot = np.stack([(Rotation.from_rotvec(e) * Rotation.from_quat(q)).as_matrix()
                    for e, q in zip(drot, quat)])
    mass = p['object_mass'] * p.get('object_mass_ratio', 1.0)
    com = np.asarray(p['object_com'], float) + np.asarray(p.get('object_com_error', [0.0] * 3))
    return pos + dpos, rot, mass, com


def window_mean(series, lo: float, hi: float) -> np.ndarray:
    inside = (series.t >= lo) & (series.t <= hi)
    assert inside.sum() >= 20, (lo, hi, len(series.t))
    return series.v[inside].mean(axis=0)


def steps_mean(series, steps: np.ndarray) -> np.ndarray:
    """Mean of a series over the samples stamped at ``steps`` (each present once)."""
    inside = np.isin(series.t, steps)
    assert inside.sum() == len(steps) >= 20, (len(steps), int(inside.sum()))
    return series.v[inside].mean(axis=0)


def check_truth_at_rest(bag: Path, sim: dict, window: tuple) -> None:
    """Check that the truth topics exist and that their wrenches carry the TRUE object at rest.

    Over the last second of the steady window the object is still: the true wrenches, moved
    by hand to the true centre of mass, sum to the true weight (object axes) and no torque;
    ``object_sim/truth/object_wrench`` is that sum.

    :param bag: the run's bag directory.
    :param sim: the scenario's ``object_sim`` section.
    :param window: the summary's steady window.
    """
    from wrench_distribution.sim.reports.series import read_bag
    effectors = list(sim['effectors'])
    topics = [f'object_sim/truth/{e}/wrench' for e in effectors] + [
        'object_sim/truth/object_wrench', 'object_sim/truth/internal_load', 'object_pose']
    series = read_bag(bag, topics)
    assert set(topics) <= set(series), sorted(series)
    lo, hi = max(window[0], window[1] - 1.0), window[1]
    positions, rotations, mass, com = truth_of(sim)
    pose = window_mean(series['object_pose'], lo, hi)
    object_rot = Rotation.from_quat(pose[3:] / np.linalg.norm(pose[3:])).as_matrix()
    # the recorder may miss a message of one topic under load: the sum is compared over the
    # simulator steps recorded on every truth topic (one stamp per step on all of them)
    wrench_topics = topics[:len(effectors) + 1]
    steps = reduce(np.intersect1d, [series[t].t for t in wrench_topics])
    steps = steps[(steps >= lo) & (steps <= hi)]
    force, torque = np.zeros(3), np.zeros(3)
    for e, r, rot in zip(effectors, positions, rotations):
        w = steps_mean(series[f'object_sim/truth/{e}/wrench'], steps)
        f = rot @ w[:3]
        force += f
        torque += rot @ w[3:] + np.cross(r - com, f)
    weight = -mass * object_rot.T @ np.asarray(sim['gravity'], float)
    np.testing.assert_allclose(force, weight, atol=0.1)
    np.testing.assert_allclose(torque, 0.0, atol=0.02)
    resultant = steps_mean(series['object_sim/truth/object_wrench'], steps)
    np.testing.assert_allclose(resultant, np.concatenate([force, torque]), atol=1e-6)


def target(commanded: float, unit: str) -> float:
    return max(0.02 * abs(commanded), 0.2 if unit == 'N' else 0.02)


def check_closed_loop_on_truth(summary: dict, allowed: tuple) -> list:
    """Judge a closed-loop run on the truth; return the elements outside the target.

    The loop drives the estimate to the command (each estimate within the target). The truth
    is within the target, or it is not and the summary says so, names only ``allowed``
    parameters, and their contributions explain the miss: the truth sits at minus the
    estimate's error from the command, to within the target (or 20 % of the miss: the
    contributions are finite differences taken one parameter at a time).

    :param summary: the run's ``--summary-json``.
    :param allowed: prefixes of the parameters that may limit an element.
    :return: names of the elements outside the target on the truth
    """
    assert summary['internal_load_feedback'] is True
    outside = []
    for name, e in summary['elements'].items():
        limit = target(e['commanded'], e['unit'])
        assert abs(e['estimated_mean'] - e['commanded']) <= limit, (name, e)
        miss = e['true_mean'] - e['commanded']
        assert e['within_tolerance'] is (abs(miss) <= limit), (name, e)
        if abs(miss) <= limit:
            continue
        outside.append(name)
        assert e['limited_by'], (name, e)
        assert all(c['parameter'].startswith(allowed) for c in e['limited_by']), (name, e)
        explained = sum(values[list(summary['elements']).index(name)]
                        for values in summary['contributions'].values())
        # first order: exact to the target for small errors, to 20 % for newtons of bias
        assert abs(miss + explained) <= max(limit, 0.2 * abs(miss)), (name, miss, explained)
    assert summary['all_within_tolerance'] is (not outside)
    return outside


def check_grasps(summary: dict, sim: dict, run: Path) -> None:
    """Check the run's grasp identification: the calls, and the saved contacts against the truth.

    The demo captures each rest, then identifies and saves. What squeeze rests determine is the
    second contact's pose in the first one's frame across their line (the offset and the tilt;
    the distance along the line and the roll about it stay as configured): derived here from the
    scenario's errors, the saved contacts must be within 1 mm and 0.2 deg of the truth there,
    where the configured ones are off by more.

    :param summary: the run's ``--summary-json``.
    :param sim: the scenario's ``object_sim`` section.
    :param run: the run's output directory (``calibration.yaml``).
    """
    import yaml
    record = summary['grasps']
    services = [call['service'] for call in record['calls']]
    assert record['success'] and services[-2:] == ['calibration/identify_grasps', 'save_calibration'], services
    assert services.count('calibration/capture') >= 2, services
    with open(run / 'calibration.yaml', encoding='utf-8') as f:
        saved = yaml.safe_load(f)['/**/wrench_analyzer']['ros__parameters']
    positions, rotations, _, _ = truth_of(sim)
    n = len(positions)
    found_p = np.reshape(saved['contact_positions'], (n, 3))
    found_r = [Rotation.from_quat(q).as_matrix() for q in np.reshape(saved['contact_orientations'], (n, 4))]
    configured_p = np.reshape(sim['contact_positions'], (n, 3))
    configured_r = [Rotation.from_quat(q).as_matrix() for q in np.reshape(sim['contact_orientations'], (n, 4))]

    def across(p, r) -> tuple:
        """Return the second contact's errors in the first one's frame across the true line: offset (m), tilt (rad)."""
        line = rotations[0].T @ (positions[1] - positions[0])
        line /= np.linalg.norm(line)
        offset = r[0].T @ (p[1] - p[0])
        turn = Rotation.from_matrix((rotations[0].T @ rotations[1]).T @ (r[0].T @ r[1])).as_rotvec()
        turn_line = (rotations[1].T @ rotations[0]) @ line  # the line in the second contact's frame
        true_offset = rotations[0].T @ (positions[1] - positions[0])
        return (np.linalg.norm(np.cross(line, offset - true_offset)),
                np.linalg.norm(np.cross(turn_line, turn)))
    offset, tilt = across(found_p, found_r)
    believed_offset, believed_tilt = across(configured_p, configured_r)
    # 1 mm, a third of the scenario's 3 mm: 0.61 mm was found once while another test loaded
    # the machine; the relative bar below and the closed loop's truth are the sharper checks
    assert offset < 1e-3 and np.degrees(tilt) < 0.2, (offset, np.degrees(tilt))
    assert believed_offset > 4 * offset and believed_tilt > 4 * tilt, (believed_offset, np.degrees(believed_tilt))
