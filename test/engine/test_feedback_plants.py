"""The internal-load feedback against plants that are not our model, judged on their truth.

The plants (``foreign_plants.py``) have per-axis gains, cross-coupling between axes and
between effectors, biases and a transport delay of 10-20 ms, and their true internal load
is computed from their true contact wrenches by hand. The stable range of the sampled PI
with a delay is derived in docs/theory.md section 12 (eq. 12.6), checked here against the
roots of the characteristic polynomial written in ``foreign_plants.py``, and the loop is run
just inside (it converges on the truth) and just outside (it diverges at the predicted rate
and frequency) of it. Every assertion on the loop is on the plant's true output.
"""
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from foreign_plants import (coupled_arms, critical_integral_gain, named_wrenches,
                            settled_correction, spectral_radius)
from wrench_distribution.config import load_distributor_config
from wrench_distribution.engine.distribution import DistributionEngine
from wrench_distribution.engine.feedback import FeedbackGains, InternalLoadFeedback
from wrench_distribution.engine.status import WARN

MS = 1_000_000  # ns
PERIOD = 0.002  # s: measurements at 500 Hz
POSITIONS = np.array([[0.12, 0.31, 0.04], [-0.08, -0.27, 0.10]])
FORCE = np.array([0.5, -1.0, 14.7])  # holds a 1.5 kg object: a force through the CoM
TARGET = np.array([20.0, 0.5, -0.3, 0.2, 1.0, -2.0])  # squeeze 20 N and the others


# --- the derivation: closed form against the characteristic polynomial's roots -------------
@pytest.mark.parametrize('n', (1, 2, 3, 6, 9, 11))
@pytest.mark.parametrize('a', (0.0, 0.2, 0.5, 0.9))
def test_critical_integral_gain_closed_form_matches_the_polynomial_roots(n, a):
    critical, _ = critical_integral_gain(a, n)
    assert spectral_radius([1.0], a, 1e-4, n) < 1.0  # a small integral gain: stable
    assert spectral_radius([1.0], a, 0.98 * critical, n) < 1.0
    assert spectral_radius([1.0], a, 1.02 * critical, n) > 1.0
    if n == 1:  # Jury's test on z^2 + (sigma (kp + ki T) - 1) z - sigma kp, by hand
        assert critical == pytest.approx(2.0 * (1.0 - a), rel=1e-12)
    if a == 0.0:  # pure integral: z^(n-1) (z - 1) = -K on the unit circle
        assert critical == pytest.approx(2.0 * np.sin(np.pi / (2 * (2 * n - 1))), rel=1e-9)


def test_the_defaults_gain_margin_at_500_hz_and_16_ms():
    """Defaults kp = 0.2, ki = 2 /s, T = 2 ms, a 16 ms delay (n = 9): stable for g in (0, 4.94)."""
    def margin(g):
        critical, _ = critical_integral_gain(g * 0.2, 9)
        return g * 2.0 * PERIOD - critical
    low, high = 1.0, 5.0  # the proportional path alone is unstable beyond g kp = 1
    for _ in range(60):
        low, high = (0.5 * (low + high), high) if margin(0.5 * (low + high)) < 0 else \
            (low, 0.5 * (low + high))
    assert 4.9 < low < 5.0
    assert spectral_radius([0.99 * low], 0.2, 2.0 * PERIOD, 9) < 1.0
    assert spectral_radius([1.01 * low], 0.2, 2.0 * PERIOD, 9) > 1.0


# --- the law alone against a coupled, delayed, biased plant on the internal load ----------
def coupled_gain(sigmas, seed):
    """Return a full 6 x 6 gain with eigenvalues ``sigmas`` (coupling between every element)."""
    rng = np.random.default_rng(seed)
    basis = np.eye(6) + 0.3 * rng.normal(size=(6, 6))
    return basis @ np.diag(sigmas) @ np.linalg.inv(basis)


def run_law(gain, bias, kp, ki, delay, samples):
    """Close the PI of engine/feedback.py on ``truth = gain (target + u)(k - n) + bias``.

    :return: (samples, 6) the plant's true internal load, and the loop.
    """
    fb = InternalLoadFeedback(FeedbackGains([kp], [ki], 1e9, 1e9, 1_000_000_000), True)
    names = [f'x{j}' for j in range(6)]
    fb.set_basis(names, 0)
    fifo = [TARGET.copy()] * delay
    truths = np.empty((samples, 6))
    for k in range(samples):
        fifo.append(TARGET + fb.current(k * 2 * MS))
        truths[k] = gain @ fifo.pop(0) + bias
        fb.measure(names, truths[k], TARGET, k * 2 * MS)
    return truths, fb


def critical_ki(sigmas, kp, n):
    """Return the largest stable ki for real modes ``sigmas`` (eq. 12.6) and its frequency."""
    pairs = [critical_integral_gain(s * kp, n) for s in sigmas]
    j = int(np.argmin([k / s for (k, _), s in zip(pairs, sigmas)]))
    return pairs[j][0] / (sigmas[j] * PERIOD), pairs[j][1]


@pytest.mark.parametrize('delay', (5, 8, 10))  # 10, 16, 20 ms
def test_law_just_inside_the_derived_range_converges_on_the_truth(delay):
    sigmas = np.array([0.6, 0.8, 1.0, 1.1, 1.25, 1.4])
    gain = coupled_gain(sigmas, delay)
    ki, _ = critical_ki(sigmas, 0.2, delay + 1)
    ki *= 0.9
    radius = spectral_radius(sigmas, 0.2, ki * PERIOD, delay + 1)
    samples = int(np.log(1e-9) / np.log(radius)) + 50
    bias = np.array([3.0, -0.4, 0.2, 0.1, -1.5, 2.0])
    truths, _ = run_law(gain, bias, 0.2, ki, delay, samples)
    np.testing.assert_allclose(truths[-1], TARGET, atol=1e-5 * np.abs(TARGET).max())
    assert np.abs(truths[0] - TARGET).max() > 1.0  # it started far: gains and bias


@pytest.mark.parametrize('delay', (5, 10))
def test_law_just_outside_the_derived_range_diverges_at_the_predicted_frequency(delay):
    sigmas = np.array([0.6, 0.8, 1.0, 1.1, 1.25, 1.4])
    gain = coupled_gain(sigmas, delay)
    ki, frequency = critical_ki(sigmas, 0.2, delay + 1)
    ki *= 1.1
    radius = spectral_radius(sigmas, 0.2, ki * PERIOD, delay + 1)
    assert radius > 1.0
    window = int(4.0 * np.pi / frequency)  # two periods of the oscillation
    span = int(np.log(1e6) / np.log(radius))  # grows a million-fold, far below any limit
    truths, _ = run_law(gain, np.zeros(6), 0.2, ki, delay, 4 * window + span)
    error = truths - TARGET
    early = np.abs(error[2 * window:3 * window]).max()
    late = np.abs(error[-window:]).max()
    # the growth predicted by the largest root, within a factor 3 either way
    predicted = radius ** (len(error) - 3 * window)
    assert predicted / 3.0 < late / early < predicted * 3.0
    # period of the growing oscillation: 2 pi / w* samples (w* of eq. 12.6, near it at 1.1x)
    worst = error[-span // 2:, np.argmax(np.abs(error[-1]))]
    crossings = np.count_nonzero(np.sign(worst[1:]) != np.sign(worst[:-1]))
    period = 2.0 * len(worst) / crossings
    assert 0.75 < period * frequency / (2.0 * np.pi) < 1.25


def test_law_outside_the_range_with_a_correction_limit_saturates_and_says_so():
    """Beyond the range with the default feedback_correction_limit: bounded, but reported."""
    sigmas = np.array([0.6, 0.8, 1.0, 1.1, 1.25, 1.4])
    ki, _ = critical_ki(sigmas, 0.2, 9)
    fb = InternalLoadFeedback(FeedbackGains([0.2], [1.5 * ki], 1e9, 20.0, 1_000_000_000), True)
    names = [f'x{j}' for j in range(6)]
    fb.set_basis(names, 0)
    gain, fifo, truths, reported = coupled_gain(sigmas, 1), [TARGET.copy()] * 8, [], set()
    for k in range(3000):
        fifo.append(TARGET + fb.current(k * 2 * MS))
        truths.append(gain @ fifo.pop(0))
        fb.measure(names, truths[-1], TARGET, k * 2 * MS)
        assert np.abs(fb.current(k * 2 * MS)).max() <= 20.0
        if np.abs(fb.correction).max() == 20.0:
            status = fb.status()
            assert status.startswith('closed loop, correction at feedback_correction_limit 20 on ')
            reported.update(status.split(' on ')[1].split(', '))
        else:
            assert fb.status() == 'closed loop'
    assert np.abs(np.array(truths[-500:]) - TARGET).max() > 5.0  # it does not settle
    assert reported and reported <= set(names)
    assert fb.counters['feedback_at_limit'] > 100


def test_a_measurement_bias_moves_the_truth_by_exactly_that_bias():
    """The loop regulates what it measures: a biased read-out leaves the truth off by it."""
    sigmas = np.array([0.7, 0.9, 1.0, 1.0, 1.2, 1.3])
    gain, sensor_bias = coupled_gain(sigmas, 3), np.array([0.5, 0.0, -0.1, 0.0, 0.2, 0.0])
    fb = InternalLoadFeedback(FeedbackGains([0.2], [2.0], 1e9, 1e9, 1_000_000_000), True)
    names = [f'x{j}' for j in range(6)]
    fb.set_basis(names, 0)
    radius = spectral_radius(sigmas, 0.2, 2.0 * PERIOD, 9)
    fifo = [TARGET.copy()] * 8
    for k in range(int(np.log(1e-9) / np.log(radius))):
        fifo.append(TARGET + fb.current(k * 2 * MS))
        truth = gain @ fifo.pop(0)
        fb.measure(names, truth + sensor_bias, TARGET, k * 2 * MS)
    np.testing.assert_allclose(truth, TARGET - sensor_bias, atol=1e-6)


# --- the distribution engine against arms with coupled per-axis gains, in equilibrium -------
def engine(kp=0.2, ki=2.0, correction_limit=1e6):
    """Return a distributor engine on the plants' grasp, commands in object axes."""
    params = {'effectors': ['left', 'right'], 'contact_source': 'static',
              'contact_types': ['rigid', 'rigid'],
              'contact_positions': POSITIONS.reshape(-1).tolist(),
              'contact_orientations': [0.0, 0.0, 0.0, 1.0, 0.3, 0.1, -0.2, 0.9],
              'object_com': POSITIONS.mean(0).tolist(), 'command_frame': 'object',
              'internal_load': TARGET.tolist(), 'internal_load_feedback': True,
              'feedback_kp': [kp], 'feedback_ki': [ki], 'feedback_timeout': 1.0,
              'feedback_correction_limit': correction_limit,
              'feedback_integral_limit': 1e6, 'internal_load_limit': 1e6,
              'force_limits': [1e6], 'torque_limits': [1e6]}
    out = DistributionEngine(load_distributor_config(params))
    update = out.offer_contacts(POSITIONS, np.reshape(params['contact_orientations'], (2, 4)), 0)
    assert update.rebuilt and update.refusal is None
    return out


def test_the_hand_named_wrenches_and_split_are_the_packages():
    """The plants' truth is the package's definition: same elements, same manipulating part."""
    dist = engine().cache.distributor
    assert dist.basis_names == [f'{name}(left,right)' for name in
                                ('squeeze', 'twist', 'bend_u', 'bend_v', 'shear_u', 'shear_v')]
    np.testing.assert_allclose(dist.internal_basis(True), named_wrenches(POSITIONS), atol=1e-12)
    split = dist.wrench_commands(np.concatenate([FORCE, np.zeros(3)]), None, True)
    np.testing.assert_allclose(split, [np.concatenate([FORCE / 2, np.zeros(3)])] * 2,
                               atol=1e-12)


def arms(seed, coupling, delay):
    """Two coupled arms on the plants' grasp (``foreign_plants.coupled_arms``)."""
    return coupled_arms(POSITIONS, FORCE, seed, coupling, delay)


def run_engine(plant, eng, samples):
    """Close the loop: engine -> plant (FIFO, gains, equilibrium) -> truth -> measurement.

    :return: (samples, 6) the true internal load.
    """
    names = eng.cache.distributor.basis_names
    truths = np.empty((samples, 6))
    wrench = np.concatenate([FORCE, np.zeros(3)])
    for k in range(samples):
        outcome = eng.step(k * 2 * MS, wrench, 0, k * 2 * MS)
        assert outcome.valid, outcome.message
        truths[k] = plant.truth(plant.deliver(outcome.commands))
        assert eng.offer_measurement(names, truths[k], k * 2 * MS) is None
    return truths


def stable_ki(plant, kp, fraction):
    """Return ``fraction`` of the critical ki on ``plant`` (bisection on the roots)."""
    sigmas = np.linalg.eigvals(plant.gamma())
    low, high = 0.0, 1000.0
    for _ in range(50):
        mid = 0.5 * (low + high)
        stable = spectral_radius(sigmas, kp, mid * PERIOD, plant.delay + 1) < 1.0
        low, high = (mid, high) if stable else (low, mid)
    return fraction * low


def test_engine_with_the_default_gains_brings_the_truth_to_the_target():
    plant, eng = arms(11, 0.05, 8), engine()  # 16 ms
    truths = run_engine(plant, eng, 4000)  # 8 s: 1 / (g ki) = 0.5 s per e-fold
    assert np.abs(truths[0] - TARGET).max() > 2.0
    np.testing.assert_allclose(truths[-1], TARGET, atol=0.01)
    np.testing.assert_allclose(eng.internal.applied_correction, settled_correction(plant, TARGET),
                               atol=0.02)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), coupling=st.floats(0.0, 0.08),
       delay=st.integers(5, 10), fraction=st.floats(0.2, 0.8), kp=st.floats(0.0, 0.5))
def test_engine_converges_on_the_truth_anywhere_in_the_stable_range(seed, coupling, delay,
                                                                    fraction, kp):
    plant = arms(seed, coupling, delay)
    sigmas = np.linalg.eigvals(plant.gamma())
    ki = stable_ki(plant, kp, fraction)
    radius = spectral_radius(sigmas, kp, ki * PERIOD, delay + 1)
    samples = min(int(np.log(1e-7) / np.log(radius)) + 2 * delay, 6000)
    truths = run_engine(plant, engine(kp, ki), samples)
    floor = radius ** samples * np.abs(truths[0] - TARGET).max()
    np.testing.assert_allclose(truths[-1], TARGET, atol=max(1e-4, 10 * floor))


def test_engine_just_outside_the_range_diverges_on_the_truth():
    plant = arms(11, 0.05, 8)
    truths = run_engine(plant, engine(0.2, stable_ki(plant, 0.2, 1.15)), 3000)
    error = np.abs(truths - TARGET).max(1)
    assert error[-300:].max() > 10.0 * error[300:600].max()


def test_engine_outside_the_range_with_the_default_limit_warns_in_its_diagnostics():
    """With feedback_correction_limit 20 the divergence is bounded, and a WARN says why."""
    plant = arms(11, 0.05, 8)
    eng = engine(0.2, stable_ki(plant, 0.2, 1.5), correction_limit=20.0)
    truths = run_engine(plant, eng, 2500)
    assert np.abs(truths[-500:] - TARGET).max() > 5.0  # never settles
    assert eng.internal.feedback.counters['feedback_at_limit'] > 100
    names, wrench, hits = eng.cache.distributor.basis_names, np.r_[FORCE, np.zeros(3)], 0
    for k in range(2500, 2700):  # each instant: a WARN exactly while a correction is at 20
        outcome = eng.step(k * 2 * MS, wrench, 0, k * 2 * MS)
        assert np.abs(eng.internal.applied_correction).max() <= 20.0
        eng.offer_measurement(names, plant.truth(plant.deliver(outcome.commands)), k * 2 * MS)
        warned = [(level, text) for level, text in eng.report(k * 2 * MS).conditions['feedback']]
        at_limit = [name for name, u in zip(names, eng.internal.feedback.correction) if abs(u) == 20.0]
        hits += bool(at_limit)
        assert [text for _, text in warned] == ([
            'internal-load feedback closed loop, correction at feedback_correction_limit 20 on '
            + ', '.join(at_limit)] if at_limit else [])
        assert all(level == WARN for level, _ in warned)
    assert hits > 20
