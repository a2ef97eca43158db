"""The internal-load PI law (engine/feedback.py) without ROS, against hand derivations."""
import numpy as np
import pytest

from wrench_distribution.core.codec import seconds_to_ns
from wrench_distribution.engine.feedback import FeedbackGains, InternalLoadFeedback, RELEASE_S

NAMES = ['squeeze(a,b)', 'twist(a,b)']
MS = 1_000_000  # ns


def loop(kp=0.5, ki=4.0, integral_limit=100.0, correction_limit=100.0, timeout=0.2):
    fb = InternalLoadFeedback(FeedbackGains([kp], [ki], integral_limit, correction_limit,
                                            seconds_to_ns(timeout)), enabled=True)
    fb.set_basis(NAMES, 0)
    return fb


def test_open_loop_step_response_is_the_hand_derived_ramp():
    # constant error e (the plant does not respond): bumpless start gives u_0 = 0, then
    # u_k = kp e + I_k with I_0 = -kp e and I_k = I_0 + ki e dt k, i.e. u_k = ki e dt k
    fb = loop(kp=0.5, ki=4.0)
    reference = np.array([20.0, -1.0])
    measured = np.array([18.0, -0.5])  # e = [2, -0.5]
    for k in range(6):
        assert fb.measure(NAMES, measured, reference, k * 10 * MS) is None
        np.testing.assert_allclose(fb.current(k * 10 * MS),
                                   4.0 * np.array([2.0, -0.5]) * 0.010 * k, atol=1e-12)


def test_the_integral_runs_on_the_control_clock_not_the_steady_one():
    # a simulator at 1/4 real time: 40 ms of steady time per 10 ms of sim time; the ramp
    # u_k = ki e dt k must use the sim-time dt (else ki is 4x too large and the loop rings)
    fb = loop(kp=0.5, ki=4.0)
    reference, measured = np.array([20.0, -1.0]), np.array([18.0, -0.5])
    for k in range(6):
        fb.measure(NAMES, measured, reference, k * 40 * MS, clock_ns=(1000 + k * 10) * MS)
        np.testing.assert_allclose(fb.current(k * 40 * MS),
                                   4.0 * np.array([2.0, -0.5]) * 0.010 * k, atol=1e-12)


def test_closed_loop_converges_to_the_hand_derived_correction():
    # plant: measured = g * (reference + u) (an arm that delivers g of what it is told),
    # seen one sample late; at rest e = 0, so g (r + u*) = r and u* = r (1 - g) / g
    gain, reference = 0.8, np.array([20.0, 2.0])
    fb = loop(kp=0.3, ki=5.0)
    u = np.zeros(2)
    for k in range(1000):
        fb.measure(NAMES, gain * (reference + u), reference, k * 10 * MS)
        u = fb.current(k * 10 * MS)
    np.testing.assert_allclose(u, reference * (1 - gain) / gain, rtol=1e-6)
    np.testing.assert_allclose(gain * (reference + u), reference, rtol=1e-6)


def test_anti_windup_leaves_saturation_at_once_and_limits_hold():
    fb = loop(kp=0.5, ki=4.0, correction_limit=1.0, integral_limit=5.0)
    reference = np.zeros(2)
    for k in range(100):  # e = +2 for 1 s: without anti-windup the integral would reach 8
        fb.measure(NAMES, np.array([-2.0, -2.0]), reference, k * 10 * MS)
        assert np.all(np.abs(fb.current(k * 10 * MS)) <= 1.0)
    assert np.all(fb.integral <= 1.0 + 0.5 * 2.0 + 4.0 * 2.0 * 0.010)
    fb.measure(NAMES, np.array([2.0, 2.0]), reference, 100 * 10 * MS)  # error reverses
    assert np.all(fb.current(100 * 10 * MS) < 0.0)  # no windup to unwind first


def test_integral_limit_bounds_the_integral_term():
    fb = loop(kp=0.0, ki=10.0, integral_limit=0.3)
    for k in range(50):
        fb.measure(NAMES, np.array([-1.0, 1.0]), np.zeros(2), k * 10 * MS)
    np.testing.assert_allclose(fb.current(50 * 10 * MS), [0.3, -0.3])


def test_bumpless_on_and_off():
    fb = loop(kp=0.5, ki=4.0)
    reference = np.array([10.0, 0.0])
    for k in range(10):
        fb.measure(NAMES, np.array([9.0, 0.5]), reference, k * 10 * MS)
    before = fb.current(90 * MS).copy()
    assert np.all(before != 0)
    fb.set_enabled(False, 100 * MS)  # off: a linear ramp to zero over RELEASE_S
    np.testing.assert_allclose(fb.current(100 * MS), before)
    half = int(100 * MS + 0.5 * RELEASE_S * 1e9)
    np.testing.assert_allclose(fb.current(half), 0.5 * before)
    fb.set_enabled(True, half)  # on again mid-ramp: starts where the ramp was
    np.testing.assert_allclose(fb.current(half), 0.5 * before)
    fb.measure(NAMES, np.array([7.0, 3.0]), reference, half + 10 * MS)  # another error
    np.testing.assert_allclose(fb.current(half + 10 * MS), 0.5 * before)  # still no jump
    fb.set_enabled(False, half + 20 * MS)
    assert not fb.current(half + 20 * MS + int(RELEASE_S * 1e9)).any()


@pytest.mark.parametrize('names, key', [
    (list(reversed(NAMES)), 'feedback_rejected_basis'),  # same size, other order
    (['squeeze(a,c)', 'twist(a,b)'], 'feedback_rejected_basis'),
    (None, 'feedback_rejected_basis'),  # unlabelled: never matched by position alone
])
def test_measurement_in_another_basis_is_refused_and_counted(names, key):
    fb = loop()
    fb.measure(NAMES, np.array([1.0, 1.0]), np.zeros(2), 0)
    fb.measure(NAMES, np.array([0.0, 0.0]), np.array([1.0, 1.0]), 10 * MS)
    held = fb.current(10 * MS).copy()
    why = fb.measure(names, np.array([-50.0, 50.0]), np.zeros(2), 20 * MS)
    assert why is not None and 'basis' in why and fb.counters[key] == 1
    np.testing.assert_array_equal(fb.current(20 * MS), held)
    assert fb.status().startswith('suspended')


def test_stale_and_absent_measurements_suspend_once_each():
    fb = loop(timeout=0.2)
    assert fb.current(150 * MS) is not None and fb.suspended == 'no measurement yet'
    fb.current(250 * MS)  # nothing for > timeout since the loop started: absent
    assert fb.counters['feedback_suspended_stale'] == 1 and 'no measured' in fb.suspended
    fb.measure(NAMES, np.array([1.0, 0.0]), np.zeros(2), 300 * MS)
    fb.measure(NAMES, np.array([1.0, 0.0]), np.zeros(2), 310 * MS)
    assert fb.suspended is None
    held = fb.current(310 * MS).copy()
    fb.current(600 * MS)
    fb.current(700 * MS)
    assert fb.counters['feedback_suspended_stale'] == 2 and 'stale' in fb.suspended
    np.testing.assert_array_equal(fb.current(700 * MS), held)


def test_contacts_change_keeps_same_named_basis_and_resets_another():
    fb = loop()
    fb.measure(NAMES, np.array([1.0, 0.0]), np.zeros(2), 0)
    fb.measure(NAMES, np.array([0.0, 1.0]), np.array([1.0, 1.0]), 10 * MS)
    kept = fb.current(10 * MS).copy()
    fb.set_basis(NAMES, 20 * MS)
    assert fb.counters['feedback_suspended_contacts'] == 1
    np.testing.assert_array_equal(fb.current(20 * MS), kept)
    fb.set_basis(['squeeze(a,b)'], 30 * MS)
    np.testing.assert_array_equal(fb.current(30 * MS), [0.0])


def test_gain_arrays_of_the_wrong_length_suspend_with_the_parameter_name():
    fb = InternalLoadFeedback(FeedbackGains([0.1, 0.2, 0.3], [1.0], 1.0, 1.0, 200_000_000), True)
    fb.set_basis(NAMES, 0)
    assert "'feedback_kp' has 3 values, the basis has 2" in fb.status()
    fb.set_gains(FeedbackGains([0.1, 0.2], [1.0], 1.0, 1.0, 200_000_000))
    np.testing.assert_array_equal(fb.kp, [0.1, 0.2])
    np.testing.assert_array_equal(fb.ki, [1.0, 1.0])
