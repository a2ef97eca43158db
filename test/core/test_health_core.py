"""The health checks' thresholds, checked against their derivations (docs/theory.md, section 15).

Each false-alarm rate is derived in ``core/health.py``; here it is measured on simulated
healthy sensors at a lower threshold (where alarms are frequent enough to count) and compared
with the same formula, which then sets the threshold at the design point.
"""
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from scipy.stats import norm, poisson

from wrench_distribution.core import health as H
from wrench_distribution.engine.sensor_health import excursions, run_lengths


def _poisson_ok(count: int, mean: float, slack: float = 1e-4) -> bool:
    """Tell whether ``count`` is a plausible draw of a Poisson law of mean ``mean``."""
    return poisson.ppf(slack, mean) <= count <= poisson.isf(slack, mean)


@settings(max_examples=60, deadline=None)
@given(ratio=st.floats(0.05, 10.0), offset=st.floats(0.0, 1.0))
def test_repeat_probability_bounds_the_chance_that_a_still_reading_repeats(ratio, offset):
    """``sum_b P_b^2`` over the bins of a quantised Gaussian never exceeds ``2 Phi(q / 2 sigma) - 1``."""
    q = 1.0
    sigma = q / ratio
    edges = (np.arange(-60, 61) - 0.5) * q
    bins = np.diff(norm.cdf(edges, loc=offset * q, scale=sigma))
    assert float(bins @ bins) <= H.repeat_probability(ratio) + 1e-12
    assert np.isclose(float(bins.max()), H.repeat_probability(ratio)) or offset not in (0.0, 1.0)


def test_frozen_runs_of_a_coarse_still_sensor_match_the_derivation():
    """Runs of whole repeats on a sensor quantised at 4 sigma: counted, against the exact mean and the bound.

    An alarm at reading t needs readings t - R .. t in one bin on every axis and reading
    t - R - 1 elsewhere: ``prod_a sum_b P_b^(R+1) - prod_a sum_b P_b^(R+2)`` per reading, by
    hand from the bins' probabilities; the threshold's bound ``samples rho^R`` lies above it.
    """
    rng = np.random.default_rng(3)
    samples, axes, ratio = 400_000, 6, 4.0
    rho = H.repeat_probability(ratio) ** axes
    repeats = H.repeats_needed(rho, false_alarms=20.0, samples=samples)
    readings = np.round(rng.normal(scale=1.0 / ratio, size=(samples, axes)))  # q = 1, mean on a bin centre
    same = (readings[1:] == readings[:-1]).all(axis=1)
    runs = run_lengths(same, np.zeros((), np.int64))
    alarms = int(np.count_nonzero(runs == repeats))  # each run reaching R raises one alarm
    bins = np.diff(norm.cdf((np.arange(-8, 9) - 0.5), scale=1.0 / ratio))
    exact = (samples - repeats - 1) * (np.sum(bins ** (repeats + 1)) ** axes
                                       - np.sum(bins ** (repeats + 2)) ** axes)
    assert _poisson_ok(alarms, exact)
    assert exact <= H.run_false_alarms(rho, repeats, samples)


def test_the_design_point_gives_its_false_alarm_budget():
    """The constants are the derivations' values, and each meets the budget it was made for."""
    rho = H.repeat_probability(H.DESIGN_RESOLUTION) ** H.DESIGN_NOISY_AXES
    assert H.FROZEN_REPEATS == 19 and H.CLIPPED_REPEATS == 57
    assert H.run_false_alarms(rho, H.FROZEN_REPEATS) <= H.FALSE_ALARMS
    assert H.run_false_alarms(rho, H.FROZEN_REPEATS - 1) > H.FALSE_ALARMS
    assert H.run_false_alarms(H.repeat_probability(H.DESIGN_RESOLUTION), H.CLIPPED_REPEATS) <= H.FALSE_ALARMS
    assert H.spike_false_alarms(H.SPIKE_Z, noise_error=H.NOISE_ERROR) == pytest.approx(H.FALSE_ALARMS)
    assert H.spike_false_alarms(H.SPIKE_Z) < 1e-8  # with the noise learned exactly
    assert 8.0 < H.SPIKE_Z < 8.3


def test_spikes_of_white_noise_match_the_derivation_at_a_low_threshold():
    """At 3.5 scales, the excursions found in white noise are what ``6 N 2 (1 - Phi(z))`` bounds."""
    rng = np.random.default_rng(11)
    samples, z = 200_000, 3.5
    rows = rng.normal(size=(samples, 1, 6))
    scale = np.full((1, 6), np.sqrt(1.5)) * z / H.SPIKE_Z  # SPIKE_Z * scale = z sqrt(1.5) sigma
    # a spike's first reading jumps by more than 3/4 of its threshold: the others need no look
    jumps = np.flatnonzero((np.abs(rows[1:-H.SPIKE_WIDTH] - rows[:-H.SPIKE_WIDTH - 1])
                            > 0.75 * H.SPIKE_Z * scale).any(axis=(1, 2))) + 1
    found = sum(int(excursions(rows, int(j), scale)[0]) for j in jumps)
    bound = H.spike_false_alarms(z, samples)
    assert found <= poisson.isf(1e-4, bound)
    assert found >= 0.6 * bound  # the return condition keeps most of them (0.87 of them at z = 3.5)


def test_block_noise_is_unbiased_on_white_quantised_and_moving_readings():
    rng = np.random.default_rng(2)
    k, sigma = 256 * 40, 0.05
    t = np.arange(k) * 0.002
    white = rng.normal(scale=sigma, size=(k, 6))
    moving = white + 10.0 * np.sin(np.pi * t)[:, None]
    quantised = np.round(white / (2 * sigma)) * 2 * sigma

    def estimate(x):
        second = x[2:] - 2 * x[1:-1] + x[:-2]
        return np.median([H.block_noise(second[a:a + 256]) for a in range(0, len(second) - 255, 256)], axis=0)
    assert estimate(white) == pytest.approx(np.full(6, sigma), rel=0.04)
    assert estimate(moving) == pytest.approx(estimate(white), rel=0.01)
    # quantised: the spread of the readings themselves (noise plus quantisation)
    assert estimate(quantised) == pytest.approx(quantised.std(axis=0), rel=0.05)


def test_block_noise_leaves_a_spike_out():
    rng = np.random.default_rng(4)
    x = rng.normal(scale=0.05, size=(258, 6))
    clean = H.block_noise(x[2:] - 2 * x[1:-1] + x[:-2])
    x[100, 2] += 50.0
    hit = H.block_noise(x[2:] - 2 * x[1:-1] + x[:-2])
    assert hit[2] < 1.25 * clean[2]
    np.testing.assert_allclose(np.delete(hit, 2), np.delete(clean, 2), rtol=0.02)


def test_trim_factor_is_the_truncated_second_moment():
    rng = np.random.default_rng(0)
    z = np.sort(rng.normal(size=2_000_000) ** 2)
    kept = 0.99
    assert H.trim_factor(kept) == pytest.approx(z[:int(kept * len(z))].mean(), rel=2e-3)
