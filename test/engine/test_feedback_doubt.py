"""The feedback loops while the analyzer doubts a sensor (engine/feedback.py), without ROS.

The health label is written here in its documented form (core/doubt.py's docstring); the
corrections expected are derived by hand from the PI law with a constant error
(``u_k = ki e dt k`` after a bumpless start, whose integral starts at ``-kp e``: ``I_k = u_k -
kp e``), the hold at the integral (the proportional part dropped) and the ramp of
``on_sensor_fault: release`` (``u (1 - t / RELEASE_S)``).
"""
from hypothesis import given, strategies as st
import numpy as np
import pytest
from test_distribution_engine import engine_for
from test_friction_feedback_law import friction_message, HAND, impose, NAMES as FINGERS

from wrench_distribution.core.codec import seconds_to_ns
from wrench_distribution.engine.feedback import FeedbackGains, InternalLoadFeedback, RELEASE_S

NAMES = ['squeeze(a,b)', 'twist(a,b)']
MS = 1_000_000  # ns
KP, KI, DT = 0.5, 4.0, 0.010
ERROR = np.array([2.0, -0.5])
REFERENCE = np.array([20.0, -1.0])
TRUSTED = 'health=ok'


def doubt(age_s: float, sensors: str = 'left:frozen', elements: str = '0,1') -> str:
    """Return a health label in the analyzer's form (core/doubt.py), written out by hand."""
    return (f'health=doubt;sensors={sensors};set=consistent;onset_age_s={age_s:.6f};'
            f'elements={elements}')


def loop(action: str = 'hold') -> InternalLoadFeedback:
    fb = InternalLoadFeedback(FeedbackGains([KP], [KI], 100.0, 100.0, seconds_to_ns(0.2),
                                            on_sensor_fault=action), enabled=True)
    fb.set_basis(NAMES, 0)
    return fb


def ramp(k: int) -> np.ndarray:
    """Return the correction after measurement k of a constant error: ``ki e dt k`` (bumpless start)."""
    return KI * ERROR * DT * k


def integral(k: int) -> np.ndarray:
    """Return the integral after measurement k of a constant error: ``ki e dt k - kp e`` (0 before the first)."""
    return ramp(k) - KP * ERROR if k >= 0 else np.zeros(2)


def run_until_doubt(fb, onset: int, detected: int) -> int:
    """Measure a constant error every 10 ms; the sensor fails at ``onset``, is doubted at ``detected``.

    The measurements between are integrated as trusted: the analyzer did not know yet.

    :return: the steady time of the first doubted measurement (ns).
    """
    for k in range(detected):
        assert fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, k * 10 * MS, health=TRUSTED) is None
        np.testing.assert_allclose(fb.current(k * 10 * MS), ramp(k), atol=1e-12)
    t = detected * 10 * MS
    age = (detected - onset) * DT
    assert fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, t, health=doubt(age)) is None
    return t


@pytest.mark.parametrize('onset, detected', [(20, 26), (20, 20), (5, 40), (1, 3)])
def test_a_doubt_holds_the_correction_it_had_at_the_onset(onset, detected):
    """What the loop integrated from the faulty readings is undone; then nothing moves it."""
    fb = loop('hold')
    t = run_until_doubt(fb, onset, detected)
    held = fb.current(t).copy()
    # the integral before the first faulty measurement was integrated (or one earlier: the
    # label's age is in the analyzer's time, the updates in the distributor's), without the
    # proportional part
    assert any(np.allclose(held, integral(k), atol=1e-12) for k in (onset - 1, onset - 2))
    # never past the onset's correction by more than the proportional part it leaves out
    assert np.all(np.abs(held) <= np.abs(ramp(onset - 1)) + KP * np.abs(ERROR) + 1e-12)
    for k in range(1, 300):  # 3 s of doubted measurements with a large error: nothing winds
        now = t + k * 10 * MS
        assert fb.measure(NAMES, REFERENCE + 50.0, REFERENCE, now,
                          health=doubt((detected - onset + k) * DT)) is None
        np.testing.assert_array_equal(fb.current(now), held)
    assert fb.counters == {'feedback_suspended_sensor': 1}
    assert fb.status() == ('suspended: sensors in doubt: left (frozen): correction held at its '
                           'integral at the onset')
    np.testing.assert_array_equal(fb.measured, REFERENCE + 50.0)  # shown, not used


def test_a_late_update_before_the_doubt_winds_back_one_update_at_most():
    """Updates every 10 ms, the last trusted one 200 ms late (a stalled process), then the doubt.

    The state held is still the one before the first update at or after the onset (or one
    earlier), not one as far before the onset as the stall was long.
    """
    fb = loop('hold')
    onset, detected = 20, 26
    for k in range(detected - 1):
        fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, k * 10 * MS, health=TRUSTED)
    late = (detected - 1) * 10 * MS + 200 * MS
    fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, late, health=TRUSTED)
    t = late + 10 * MS
    fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, t, health=doubt((t - onset * 10 * MS) / 1e9))
    held = fb.current(t)
    assert any(np.allclose(held, integral(k), atol=1e-12) for k in (onset - 1, onset - 2)), held


@given(onset=st.integers(1, 30), repeats=st.integers(0, 30), start_s=st.integers(0, 10**6),
       latencies_ms=st.lists(st.floats(0.0, 150.0), min_size=61, max_size=61))
def test_with_the_samples_stamps_the_hold_is_the_onsets_whatever_the_latencies(
        onset, repeats, start_s, latencies_ms):
    """Read-outs stamped every 10 ms (one process with the analyzer) arrive with any latencies.

    The arrival clock then says little of when the onset was; the stamps say it exactly: the
    integral held is the one the loop had before the onset's read-out, derived here from the
    PI law with a constant error (the integral grows by ``ki e dt`` per update, ``dt`` between
    arrivals, from ``-kp e`` at the bumpless start).
    """
    fb = loop('hold')
    detected = onset + repeats
    stamps = [start_s * 1_000_000_000 + k * 10 * MS for k in range(detected + 1)]
    arrivals, last = [], 0
    for stamp, latency_ms in zip(stamps, latencies_ms):  # in order, each after its stamp
        last = max(last + 1, stamp + int(latency_ms * MS))
        arrivals.append(last)
    for k in range(detected):
        assert fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, arrivals[k], health=TRUSTED,
                          stamp_ns=stamps[k]) is None
    age = (stamps[detected] - stamps[onset]) / 1e9
    assert fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, arrivals[detected], health=doubt(age),
                      stamp_ns=stamps[detected]) is None
    dt = np.diff(arrivals[:onset]) / 1e9 if onset > 1 else np.zeros(0)
    before_onset = KI * ERROR * dt.sum() - KP * ERROR  # after read-out onset - 1
    np.testing.assert_allclose(fb.current(arrivals[detected]), before_onset, rtol=0, atol=1e-9)


def test_trusted_again_the_loop_resumes_bumplessly_from_the_held_correction():
    fb = loop('hold')
    t = run_until_doubt(fb, 10, 15)
    held = fb.current(t).copy()
    fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, t + 10 * MS, health=doubt(0.06))
    fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, t + 20 * MS, health=TRUSTED)
    assert fb.status() == 'closed loop'
    np.testing.assert_allclose(fb.current(t + 20 * MS), held, atol=1e-12)  # no jump
    fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, t + 30 * MS, health=TRUSTED)
    np.testing.assert_allclose(fb.current(t + 30 * MS), held + KI * ERROR * DT, atol=1e-12)
    # a second episode is counted again
    fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, t + 40 * MS, health=doubt(0.0))
    assert fb.counters == {'feedback_suspended_sensor': 2}


def test_release_ramps_the_onset_correction_to_zero_and_resumes_where_the_ramp_is():
    fb = loop('release')
    t = run_until_doubt(fb, 30, 34)
    start = fb.correction.copy()
    assert any(np.allclose(start, integral(k), atol=1e-12) for k in (29, 28))
    for fraction in (0.0, 0.25, 0.5, 0.9):
        now = t + int(fraction * RELEASE_S * 1e9)
        fb.measure(NAMES, REFERENCE + 50.0, REFERENCE, now, health=doubt(0.04 + fraction))
        np.testing.assert_allclose(fb.current(now), start * (1.0 - fraction), atol=1e-9)
    gone = t + int(1.5 * RELEASE_S * 1e9)
    fb.measure(NAMES, REFERENCE + 50.0, REFERENCE, gone, health=doubt(1.54))
    np.testing.assert_array_equal(fb.current(gone), np.zeros(2))
    assert 'released to zero in 1 s' in fb.status()
    half = t + int(0.5 * RELEASE_S * 1e9)
    fb = loop('release')
    t = run_until_doubt(fb, 30, 34)
    fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, half, health=TRUSTED)  # trusted mid-ramp
    np.testing.assert_allclose(fb.current(half), 0.5 * start, atol=1e-9)
    fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, half + 10 * MS, health=TRUSTED)
    np.testing.assert_allclose(fb.current(half + 10 * MS), 0.5 * start + KI * ERROR * DT, atol=1e-9)


def test_the_doubt_keeps_the_loop_from_going_stale_and_staleness_still_holds_after():
    """Doubted measurements are measurements: no stale suspension while they come; when they stop, held."""
    fb = loop('hold')
    t = run_until_doubt(fb, 10, 12)
    held = fb.current(t).copy()
    fb.measure(NAMES, REFERENCE, REFERENCE, t + 150 * MS, health=doubt(0.5))
    fb.current(t + 300 * MS)
    assert 'feedback_suspended_stale' not in fb.counters
    fb.current(t + 400 * MS)  # nothing for > 0.2 s: stale (the suspension goes on, counted once)
    assert 'stale' in fb.suspended and fb.counters == {'feedback_suspended_sensor': 1}
    np.testing.assert_array_equal(fb.current(t + 400 * MS), held)


@pytest.mark.parametrize('label', [
    'health=doubt',
    'health=doubt;sensors=left:frozen;set=consistent;onset_age_s=nan;elements=0',
    'health=doubt;sensors=left:frozen;set=consistent;onset_age_s=-1;elements=0',
    'health=doubt;sensors=left;set=consistent;onset_age_s=0.1;elements=0',
    'health=doubt;sensors=;set=consistent;onset_age_s=0.1;elements=0',  # doubt of nothing
    'health=doubt;sensors=left:frozen;set=maybe;onset_age_s=0.1;elements=0',
    'health=bad'])
def test_a_malformed_health_label_is_refused_counted_and_holds(label):
    fb = loop('hold')
    for k in range(5):
        fb.measure(NAMES, REFERENCE - ERROR, REFERENCE, k * 10 * MS, health=TRUSTED)
    held = fb.current(40 * MS).copy()
    why = fb.measure(NAMES, REFERENCE + 50.0, REFERENCE, 50 * MS, health=label)
    assert why is not None and 'health label' in why
    assert fb.counters == {'feedback_rejected_health': 1}
    np.testing.assert_array_equal(fb.current(50 * MS), held)
    assert fb.status().startswith('suspended: ')


def test_the_distribution_engine_holds_the_internal_load_on_a_doubted_read_out():
    """Through the engine and its parameter: commands carry the held correction."""
    params = {'effectors': ['a', 'b'], 'contact_source': 'static',
              'contact_positions': [0.0, 0.3, 0.0, 0.0, -0.3, 0.0],
              'contact_orientations': [0.0, 0.0, 0.0, 1.0] * 2, 'input_timeout': 0.0,
              'internal_load_handles': ['squeeze(a,b)=20'], 'internal_load_feedback': True,
              'feedback_kp': [0.0], 'feedback_ki': [5.0], 'on_sensor_fault': 'hold'}
    engine = engine_for(params)
    names = engine.basis_names
    measured = np.zeros(len(names))  # the squeeze reads 0: e = 20 on it
    for k in range(10):
        assert engine.offer_measurement(names, measured, k * 10 * MS, k * 10 * MS, TRUSTED) is None
    before = engine.internal.feedback.current(90 * MS).copy()
    assert before[0] == pytest.approx(5.0 * 20.0 * DT * 9)
    for k in range(10, 60):
        engine.offer_measurement(names, measured, k * 10 * MS, k * 10 * MS,
                                 doubt(0.0, 'b:out_of_range+spike', '0'))
    np.testing.assert_array_equal(engine.internal.feedback.current(600 * MS), before)
    assert engine.internal.feedback.counters == {'feedback_suspended_sensor': 1}
    assert 'b (out_of_range, spike)' in engine.internal.feedback.status()


def test_the_friction_feedback_holds_its_margin_on_a_doubted_friction_state():
    engine = engine_for(HAND)
    t = impose(engine, 0.1, 0)
    fb = engine.friction.feedback
    before = fb.effective_margin(t)
    assert before == pytest.approx(0.2)
    labels, data = friction_message(FINGERS, [1.2, 0.5, 0.5])  # far above target: would tighten
    for k in range(1, 20):
        now = t + k * MS
        assert engine.friction.offer_measurement(
            labels + [doubt((k - 1) * 1e-3, 'thumb:frozen', '0')], data, now) is None
        assert fb.effective_margin(now) == before
    assert fb.counters == {'friction_feedback_suspended_sensor': 1}
    assert 'thumb (frozen)' in engine.friction.feedback_condition(t + 20 * MS)[1]
    assert engine.friction.offer_measurement(labels + [TRUSTED], data, t + 21 * MS) is None
    assert fb.status() == 'closed loop'
    why = engine.friction.offer_measurement(labels + ['not=health'], data, t + 22 * MS)
    assert why is not None and fb.counters['friction_feedback_rejected_labels'] == 1
