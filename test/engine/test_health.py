"""Sensor health through the analysis engine, on readings written from physics (health_fixtures).

Each fault is written as a broken sensor writes it and must be found, named, with its onset
within the bound stated in docs/theory.md (section 15.5); clean readings with noise as low as
0.05 N must raise nothing over ten minutes, at 500 Hz and at 1 kHz, quantised or not.
"""
from dataclasses import replace

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

import health_fixtures as H
from wrench_distribution.config import ConfigError
from wrench_distribution.core.health import (CLIPPED_REPEATS, CONSISTENCY_BLOCK, FROZEN_REPEATS,
                                             quiet_limit, RECOVERY, SPIKE_WIDTH)
from wrench_distribution.core.object_motion import motion_from_poses, object_wrench


def events(monitor, check=None):
    """Return the monitor's episodes as ``(check, sensor, onset, detected, detail)``."""
    return [(e.check, e.sensor, e.onset_ns, e.detected_ns, e.detail) for e in monitor.events
            if check is None or e.check == check]


def index_of(rec, stamp_ns):
    return int(np.searchsorted(rec.stamps_ns, stamp_ns))


@pytest.mark.parametrize('rate, quantum', [(500.0, 0.0), (1000.0, 0.1)])
def test_ten_minutes_of_clean_readings_raise_nothing(rate, quantum):
    """0.05 N of noise (0.005 N m), quantised at 2 sigma or not: no doubt, set consistent throughout.

    At the design point (docs/theory.md, 15.2) each check expects at most 1e-3 false alarms over
    10 minutes at 1 kHz on 4 sensors; these runs are half of that or less.
    """
    rec = H.at_rest(600, rate, noise=0.05, quantum=quantum, seed=int(rate))
    engine, monitor = H.monitor()
    stamps, doubt, consistent = H.feed(engine, rec, chunk=100_000)
    assert len(stamps) == len(rec.stamps_ns)
    assert events(monitor) == []
    assert not doubt.any() and consistent.all()
    report = monitor.report()
    assert report['set']['blocks'] == len(stamps) // CONSISTENCY_BLOCK
    for name in H.NAMES:  # the noise the checks work from is the sensors' own
        noise = np.array(report['sensors'][name]['noise'])
        expected = np.sqrt(0.05 ** 2 + quantum ** 2 / 12)
        np.testing.assert_allclose(noise[:3], expected, rtol=0.1)


@pytest.mark.parametrize('sensor, rate, quantum', [(0, 500.0, 0.0), (1, 1000.0, 0.0), (0, 500.0, 0.1)])
def test_a_frozen_sensor_is_named_from_its_first_repeat(sensor, rate, quantum):
    """A driver repeating its last reading for 4 s: found FROZEN_REPEATS readings in, onset its first repeat."""
    rec = H.at_rest(12, rate, quantum=quantum, seed=7)
    first = int(5.0 * rate)
    stop = first + int(4.0 * rate)
    rec.readings[first:stop, sensor] = rec.readings[first - 1, sensor]
    engine, monitor = H.monitor()
    _, doubt, _ = H.feed(engine, rec)
    frozen = events(monitor, 'frozen')
    assert [(c, s) for c, s, *_ in frozen] == [('frozen', H.NAMES[sensor])]
    onset = index_of(rec, frozen[0][2])
    if quantum:  # a chance repeat just before may start the run early: at most 3 readings here
        assert first - 3 <= onset <= first
    else:
        assert onset == first
    assert index_of(rec, frozen[0][3]) == onset + FROZEN_REPEATS - 1
    assert not doubt[:onset + FROZEN_REPEATS - 1, sensor].any()
    assert doubt[onset + FROZEN_REPEATS - 1:stop + RECOVERY, sensor].all()
    assert not doubt[stop + RECOVERY + 1:, sensor].any()
    assert not doubt[:, 1 - sensor].any()
    # the set agrees: the resultant no longer balances the weight, and the frozen sensor explains it
    inconsistent = events(monitor, 'inconsistent')
    assert inconsistent and f'{H.NAMES[sensor]} (frozen) explains' in inconsistent[0][4]
    assert events(monitor, 'drift') == []


@pytest.mark.parametrize('rated', [True, False])
def test_a_saturated_sensor_is_named_at_its_first_clipped_reading(rated):
    """The left sensor clips its squeeze axis at 20 N (the truth reaches 25 N)."""
    rec = H.at_rest(8, 500.0, seed=3)
    axis = 2  # the left sensor's z: along the line to the right contact, the squeeze's axis
    clipped = np.abs(rec.readings[:, 0, axis]) >= 20.0
    rec.readings[:, 0, axis] = np.clip(rec.readings[:, 0, axis], -20.0, 20.0)
    first = int(np.argmax(clipped))
    ratings = [100.0, 100.0, 20.0, 10.0, 10.0, 10.0] + [100.0] * 3 + [10.0] * 3 if rated else []
    engine, monitor = H.monitor(sensor_ranges=ratings)
    H.feed(engine, rec)
    found = events(monitor, 'out_of_range')
    assert found and all(s == 'left' for _, s, *_ in found)
    assert index_of(rec, found[0][2]) == first
    assert index_of(rec, found[0][3]) == first + (0 if rated else CLIPPED_REPEATS)
    assert events(monitor, 'frozen') == [] and events(monitor, 'spike') == []
    if rated:  # each clip of the 0.5 Hz squeeze is an episode; a flicker within RECOVERY is not
        at = np.flatnonzero(clipped)
        assert len(found) == 1 + int(np.count_nonzero(np.diff(at) > RECOVERY + 1))


@pytest.mark.parametrize('sensor, axis, width', [(0, 1, 1), (1, 3, 2), (0, 5, 3), (1, 2, 1)])
def test_a_spike_is_named_at_its_first_reading(sensor, axis, width):
    rec = H.at_rest(6, 500.0, seed=5)
    start = 1650
    rec.readings[start:start + width, sensor, axis] += 2.0 if axis < 3 else 0.2
    engine, monitor = H.monitor()
    _, doubt, _ = H.feed(engine, rec)
    assert [(c, s, index_of(rec, o), index_of(rec, d)) for c, s, o, d, _ in events(monitor)] == [
        ('spike', H.NAMES[sensor], start, start + SPIKE_WIDTH)]
    assert doubt[start + SPIKE_WIDTH:start + SPIKE_WIDTH + RECOVERY + 1, sensor].all()


def test_a_knock_felt_by_both_sensors_is_no_spike_and_a_step_is_no_spike():
    """A transient on the object moves every sensor; a step does not come back."""
    rec = H.at_rest(6, 500.0, seed=6)
    rec.readings[1650, 0, 0] += 2.0
    rec.readings[1650, 1, 1] -= 1.5
    rec.readings[2200:, 0, 4] += 0.3  # a step of one torque channel
    engine, monitor = H.monitor(consistency_tolerance=[1.0, 1.0])
    H.feed(engine, rec)
    assert events(monitor, 'spike') == []


def _drift_bound(rate: float) -> float:
    """How late a force drift's onset may be found: one block, plus the quiet band over the rate.

    A block is quiet while its departure from the baseline is within sqrt(chi2_6(0.999)) of
    the noise of a block mean; for a resultant force component that noise is that of two
    sensors' 0.05 N over 32 samples: sigma sqrt(2 / 32).
    """
    block_s = CONSISTENCY_BLOCK / 500.0
    return block_s + np.sqrt(quiet_limit(6)) * 0.05 * np.sqrt(2 / CONSISTENCY_BLOCK) / rate


@pytest.mark.parametrize('sensor, axis, name', [(0, 0, 'fx'), (1, 0, 'fx'), (0, 1, 'fy')])
def test_a_drifting_force_axis_is_named_with_its_onset(sensor, axis, name):
    rec = H.at_rest(14, 500.0, seed=8)
    t = (rec.stamps_ns - H.START_NS) * 1e-9
    rate, start = 0.5, 6.0
    rec.readings[:, sensor, axis] += rate * np.clip(t - start, 0, None)
    engine, monitor = H.monitor()
    H.feed(engine, rec)
    drift = events(monitor, 'drift')
    assert [(c, s) for c, s, *_ in drift] == [('drift', H.NAMES[sensor])]
    assert f'({name})' in drift[0][4]
    onset_s = (drift[0][2] - H.START_NS) * 1e-9
    assert start - CONSISTENCY_BLOCK / 500.0 <= onset_s <= start + _drift_bound(rate)
    # found once the resultant is beyond the tolerance (1 N) and the noise: a few seconds at 0.5 N/s
    assert (drift[0][3] - H.START_NS) * 1e-9 < start + 4.0
    assert not monitor.trusted[sensor] and monitor.trusted[1 - sensor]


def test_a_drift_of_every_axis_of_one_rigid_sensor_cannot_be_singled_out():
    """The resultant has six components and each rigid sensor six: any one of them explains it."""
    rec = H.at_rest(14, 500.0, seed=9)
    t = (rec.stamps_ns - H.START_NS) * 1e-9
    rec.readings[:, 1] += 0.3 * np.clip(t - 6.0, 0, None)[:, None] * [1.0, -0.5, 0.7, 0.02, 0.03, -0.01]
    engine, monitor = H.monitor()
    H.feed(engine, rec)
    assert events(monitor, 'drift') == []
    inconsistent = events(monitor, 'inconsistent')
    assert inconsistent and 'not isolated (could be: left, right' in inconsistent[0][4]
    assert not monitor.consistent and monitor.trusted.all()


def test_a_moving_box_is_checked_against_its_pose_derivatives():
    """The box swings and sways; its wrench comes from its poses (Newton-Euler); a drift is named."""
    rec, poses = H.moving(14, 500.0)
    motion = motion_from_poses(rec.stamps_ns, poses[:, :3], poses[:, 3:], H.COM, H.GRAVITY, 5)
    table = dict(zip(rec.stamps_ns.tolist(), object_wrench(H.MASS, motion, H.INERTIA)))

    def source(stamps_ns):
        return np.array([table[s] for s in stamps_ns.tolist()])
    engine, monitor = H.monitor(tools=False, consistency='off')
    monitor.wrench_source = source
    H.feed(engine, rec)
    assert events(monitor) == [] and monitor.set.blocks > 200
    t = (rec.stamps_ns - H.START_NS) * 1e-9
    rec.readings[:, 1, 0] += 0.5 * np.clip(t - 6.0, 0, None)
    engine, monitor = H.monitor(tools=False, consistency='off')
    monitor.wrench_source = source
    H.feed(engine, rec)
    assert [(c, s) for c, s, *_ in events(monitor, 'drift')] == [('drift', 'right')]


def test_with_the_mass_unknown_the_set_is_checked_against_its_own_baseline():
    """At rest with object_mass 0: a constant resultant; a drift away from it is still named."""
    rec = H.at_rest(14, 500.0, seed=10)
    engine, monitor = H.monitor(object_mass=0.0)
    H.feed(engine, rec)
    assert events(monitor) == [] and monitor.set.baseline is not None
    t = (rec.stamps_ns - H.START_NS) * 1e-9
    rec.readings[:, 0, 0] += 0.5 * np.clip(t - 6.0, 0, None)
    engine, monitor = H.monitor(object_mass=0.0)
    H.feed(engine, rec)
    assert [(c, s) for c, s, *_ in events(monitor, 'drift')] == [('drift', 'left')]


def _faulty(seed: int):
    rec = H.at_rest(6, 500.0, seed=seed)
    rec.readings[900:1300, 0] = rec.readings[899, 0]
    rec.readings[1500, 1, 2] += 3.0
    rec.readings[1700:2000, 1, 2] = np.minimum(rec.readings[1700:2000, 1, 2], -24.0)
    rec.readings[2000:, 1, 0] += 0.01 * np.arange(len(rec.stamps_ns) - 2000)
    return rec


@settings(max_examples=6, deadline=None)
@given(cuts=st.lists(st.integers(1, 400), min_size=1, max_size=12), seed=st.integers(0, 3))
def test_live_and_chunks_give_the_same_health(cuts, seed):
    """Message by message (the node) or in chunks cut anywhere (a bag): the same events and doubts."""
    rec = _faulty(seed)
    ratings = [0.0] * 6 + [0.0, 0.0, 24.0, 0.0, 0.0, 0.0]  # the right sensor's squeeze axis, rated
    live_engine, live = H.monitor(sensor_ranges=ratings)
    for j, stamp in enumerate(rec.stamps_ns.tolist()):
        for i in range(2):
            live_engine.offer(i, stamp, rec.readings[j, i], stamp + 100_000)
    engine, chunked = H.monitor(sensor_ranges=ratings)
    edges = np.unique(np.clip(np.cumsum(cuts) * 7, 0, len(rec.stamps_ns)))
    parts, last = [], 0
    for edge in list(edges) + [len(rec.stamps_ns)]:
        if edge > last:
            part = H.Recording(rec.stamps_ns[last:edge], rec.readings[last:edge], rec.period_ns)
            parts.append(H.feed(engine, part))
            last = edge

    def said(monitor):  # the figures of the excess are sums in another order: their last bits differ
        return [(c, s, o, d, detail.split(' (excess')[0]) for c, s, o, d, detail in events(monitor)]
    assert said(live) == said(chunked)
    assert {c for c, *_ in said(live)} == {'frozen', 'spike', 'out_of_range', 'inconsistent', 'drift'}
    stamps, doubt, consistent = live.take()
    np.testing.assert_array_equal(doubt, np.concatenate([p[1] for p in parts]))
    np.testing.assert_array_equal(consistent, np.concatenate([p[2] for p in parts]))
    np.testing.assert_array_equal(live.checks.learner.noise, chunked.checks.learner.noise)


def test_settings_from_parameters():
    """``sensor_ranges`` for every sensor or per effector, and the tolerance, in the typed settings."""
    ranges = [100.0, 200.0, 300.0, 40.0, 50.0, 60.0]
    health = H.config(sensor_ranges=ranges).settings.health
    assert health.ratings == (tuple(ranges),) * 2
    assert health.tolerance == (1.0, 0.2) and health.consistency == 'off'
    each = [0.0] + [100.0 + 10.0 * k for k in range(1, 12)]  # 0: an axis not rated
    per = H.config(sensor_ranges=each, consistency_tolerance=[0.5, 0.05]).settings.health
    assert per.ratings == (tuple(each[:6]), tuple(each[6:])) and per.tolerance == (0.5, 0.05)
    assert H.config().settings.health.ratings == ((0.0,) * 6,) * 2
    with pytest.raises(ValueError, match='consistency'):
        replace(health, consistency='moving')


@pytest.mark.parametrize('values, name', [
    ({'sensor_ranges': [1.0] * 7}, 'sensor_ranges'),
    ({'sensor_ranges': [-1.0] * 6}, 'sensor_ranges'),
    ({'consistency_tolerance': [1.0]}, 'consistency_tolerance'),
    ({'consistency_tolerance': [1.0, 0.0]}, 'consistency_tolerance')])
def test_bad_health_parameters_are_refused_by_name(values, name):
    with pytest.raises(ConfigError, match=f"parameter '{name}'"):
        H.config(**values)
