"""The rests a calibration takes (engine/rests.py): still poses, settled and steady readings, every drop named.

Recordings come from :mod:`arm_motion` (Newton-Euler by hand: minimum-jerk moves at a UR5e's
default accelerations between rests of 1 s); knocks and a sensor's settling are added by hand.
"""
from hypothesis import given, settings, strategies as st
import numpy as np
from scipy.spatial.transform import Rotation

import arm_motion as A

from wrench_distribution.engine.calibration import Recording
from wrench_distribution.engine.rests import (find_rests, INERTIAL_FRACTION, KEPT, motion_thresholds, MOVING,
                                              SETTLING, UNSTEADY)

RATE = 200.0


def _recording(cell: A.Cell, motion: A.Motion, readings: np.ndarray) -> Recording:
    k = len(motion.stamps)
    poses = np.broadcast_to(cell.contacts, (k,) + cell.contacts.shape).copy()
    return Recording((motion.stamps * 1e9).astype(np.int64), readings, poses, None,
                     motion.rotation.inv().apply(A.G))


def _cell(seed: int = 0, noise: float = 0.3) -> tuple:
    cell = A.done_when_cell()
    cell.bump_fraction = 0.0
    cell.noise = np.array([noise] * 3 + [noise / 20] * 3)
    motion = A.path([(r, np.array([0.5, 0.0, 0.9])) for r in A.tilts(4, 30.0)], RATE)
    return cell, motion, A.readings(cell, motion, None, np.random.default_rng(seed))


def _masses(cell: A.Cell) -> tuple:
    return np.array([t.body.mass for t in cell.tools]), np.full(2, 0.3)


def test_moves_are_dropped_and_no_sample_kept_carries_an_inertial_load_worth_the_noise():
    cell, motion, readings = _cell()
    rests = find_rests(_recording(cell, motion, readings), *_masses(cell))
    kept = rests.labels >= 0
    assert len(np.unique(rests.labels[kept])) == 4
    alpha = np.linalg.norm(motion.alpha, axis=1)
    assert alpha[kept].max() <= rests.alpha_max and np.all(rests.reasons[alpha > 2 * rests.alpha_max] == MOVING)
    # the load a kept sample carries (0.3 m lever, the heavier tool) is within a tenth of the noise
    assert (1.15 * 0.3 * alpha[kept]).max() <= INERTIAL_FRACTION * 0.3 * 1.2
    assert rests.counts()[MOVING] > 0 and rests.counts()[KEPT] > 0.9 * np.count_nonzero(motion.rest >= 0)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(noise=st.floats(0.05, 2.0), scale=st.floats(0.5, 4.0))
def test_the_thresholds_follow_the_noise_and_the_mass(noise, scale):
    """alpha_max = eta sigma / (m l): twice the noise, twice the threshold; twice the mass, half of it."""
    readings = np.random.default_rng(1).normal(size=(2000, 2, 6)) * noise
    masses, levers = np.array([1.0, 2.0]), np.array([0.3, 0.3])
    _, alpha, _ = motion_thresholds(readings, masses, levers)
    _, scaled, _ = motion_thresholds(readings * scale, masses * scale, levers)
    assert np.isclose(scaled, alpha, rtol=0.02)
    assert np.isclose(alpha, INERTIAL_FRACTION * noise / (2.0 * 0.3), rtol=0.1)


def test_a_knock_inside_a_rest_is_dropped_and_named():
    """A burst of 10 samples, 1.2 N on each axis (4 noise: no single sample shows it), is found."""
    cell, motion, readings = _cell(seed=2)
    start = int(np.flatnonzero(motion.rest == 1)[100])
    readings[start:start + 10, 0, :3] += 1.2
    rests = find_rests(_recording(cell, motion, readings), *_masses(cell))
    assert np.all(rests.reasons[start:start + 10] == UNSTEADY)
    assert np.count_nonzero(rests.reasons[start - 10:start + 20] == UNSTEADY) <= 20
    spans = rests.spans(_recording(cell, motion, readings).stamps_ns, 0)
    assert any(s['why'] == UNSTEADY and s['from_s'] <= motion.stamps[start] <= s['to_s'] for s in spans)


def test_a_settling_sensor_is_trimmed_by_the_settle_time_measured():
    """After each move the readings decay to their level (a 2 N, 0.1 s filter lag): trimmed as settling."""
    cell, motion, readings = _cell(seed=3)
    for rest in range(1, 4):
        first = int(np.flatnonzero(motion.rest == rest)[0])
        t = motion.stamps[first:] - motion.stamps[first]
        readings[first:, 1, 2] += 2.0 * np.exp(-t / 0.1) * (t < 1.0)
    rests = find_rests(_recording(cell, motion, readings), *_masses(cell))
    # the transient stays beyond 4 standard errors of a 10-sample block until 2 exp(-t/0.1) < 0.38
    expected = 0.1 * np.log(2.0 / (4 * 0.3 / np.sqrt(10)))
    assert expected - 0.06 <= rests.settle_s <= expected + 0.06, rests.settle_s
    for rest in range(1, 4):
        first = int(np.flatnonzero(motion.rest == rest)[0])
        assert np.all(rests.reasons[first:first + int(0.75 * expected * RATE)] != KEPT)
        assert SETTLING in set(rests.reasons[first:first + int(expected * RATE) + 10])


def test_a_steady_turn_is_no_rest():
    cell = A.done_when_cell()
    k = 600
    turn = A.Motion(np.arange(k) / RATE, Rotation.from_rotvec(np.outer(np.linspace(0, 1.5, k), [1.0, 0.5, 0.0])),
                    np.tile([0.5, 0.0, 0.9], (k, 1)), np.tile([0.5, 0.25, 0.0], (k, 1)),  # 1.5 over 3 s
                    np.zeros((k, 3)), np.zeros((k, 3)), np.full(k, -1))
    readings = A.readings(cell, turn, None, np.random.default_rng(4))
    rests = find_rests(_recording(cell, turn, readings), *_masses(cell))
    assert not (rests.labels >= 0).any() and rests.counts() == {MOVING: k}


def test_noisy_poses_are_differentiated_over_a_longer_fit_and_say_so():
    """Poses jittering by 0.05 deg (a noisy tf): a longer fit, the rests still found, the moves dropped."""
    cell, motion, readings = _cell(seed=5)
    recording = _recording(cell, motion, readings)
    jitter = Rotation.from_rotvec(np.random.default_rng(6).normal(size=(len(motion.stamps), 3)) * np.radians(0.05))
    noisy = Recording(recording.stamps_ns, readings, recording.poses, None, jitter.apply(recording.gravity))
    clean, rests = find_rests(recording, *_masses(cell)), find_rests(noisy, *_masses(cell))
    assert 'noisy poses' in rests.basis and 'noisy poses' not in clean.basis
    assert len(np.unique(rests.labels[rests.labels >= 0])) == 4, rests.counts()
    alpha = np.linalg.norm(motion.alpha, axis=1)
    assert np.all(rests.reasons[alpha > 2 * rests.alpha_max] == MOVING) and (alpha > 2 * rests.alpha_max).any()


def test_a_gap_in_the_samples_is_no_motion_and_no_new_rest():
    """A live node that stalls 0.1 s drops no sample as moving; the pose unchanged, the rest stays one."""
    cell, motion, readings = _cell(seed=7)
    recording = _recording(cell, motion, readings)
    stamps = recording.stamps_ns.copy()
    middle = int(np.flatnonzero(motion.rest == 2)[100])
    stamps[middle:] += 100_000_000
    rests = find_rests(Recording(stamps, readings, recording.poses, None, recording.gravity), *_masses(cell))
    inside = motion.rest == 2
    assert np.all(rests.reasons[inside] != MOVING)
    assert len(np.unique(rests.labels[inside & (rests.labels >= 0)])) == 1


def test_a_move_hidden_in_a_gap_ends_the_rest():
    """The samples of a move lost (a stalled recorder): the poses either side differ, two rests."""
    cell, motion, readings = _cell(seed=8)
    recording = _recording(cell, motion, readings)
    lost = (motion.rest == -1) & (np.cumsum(motion.rest == 2) > 0) & (np.cumsum(motion.rest == 3) == 0)
    keep = ~lost
    rests = find_rests(Recording(recording.stamps_ns[keep], readings[keep], recording.poses[keep], None,
                                 recording.gravity[keep]), *_masses(cell))
    rest = motion.rest[keep]
    before = np.unique(rests.labels[(rest == 2) & (rests.labels >= 0)])
    after = np.unique(rests.labels[(rest == 3) & (rests.labels >= 0)])
    assert len(before) == 1 and len(after) == 1 and before[0] != after[0], (before, after)
