"""Sensor health: the checks' thresholds, derived, and the noise estimator (no ROS, no state).

Every threshold comes from one design point (docs/theory.md, section 15.2): a healthy sensor
must give at most :data:`FALSE_ALARMS` expected false alarms per check over
:data:`DESIGN_SAMPLES` readings (10 minutes at 1 kHz on 4 sensors), with noise as low as
0.05 N and readings quantised up to twice their noise on three axes (the others silent).
The functions below are the derivations; the constants are their values at that point.
"""
from functools import lru_cache
from math import ceil, log

import numpy as np
from scipy.stats import chi2, norm

#: readings the design point covers: 10 minutes at 1 kHz on 4 sensors
DESIGN_SAMPLES = 4 * 600 * 1000
#: expected false alarms of each check over :data:`DESIGN_SAMPLES` healthy readings
FALSE_ALARMS = 1e-3
#: quantisation step over noise standard deviation on the design sensor's noisy axes
DESIGN_RESOLUTION = 2.0
#: axes of the design sensor that carry noise (the others may repeat forever)
DESIGN_NOISY_AXES = 3
#: largest relative error of the learned noise scale the spike threshold allows for
NOISE_ERROR = 0.2
#: longest excursion (readings) that counts as a spike
SPIKE_WIDTH = 3
#: another sensor's excursion beyond this many noise scales makes a spike a common event
CORROBORATION_Z = 4.0
#: healthy readings per block of the noise estimate, and blocks whose median is used
NOISE_BLOCK = 256
NOISE_BLOCKS = 8
#: share of the largest squared second differences a noise block leaves out (spikes)
NOISE_TRIM = 0.01


def repeat_probability(resolution: float) -> float:
    """Largest chance that one axis of a still, healthy sensor repeats its last reading.

    Two readings ``Q(x + n1)``, ``Q(x + n2)`` (quantiser step ``q``, Gaussian noise ``sigma``)
    fall in the same bin with probability ``sum_b P_b^2 <= max_b P_b``, largest for the bin
    centred on ``x``: ``2 Phi(q / (2 sigma)) - 1``; ``R + 1`` readings in a row, at most
    ``(max_b P_b)^R``.

    :param resolution: ``q / sigma``.
    :return: the bound (0 for unquantised readings).
    """
    return float(2.0 * norm.cdf(0.5 * resolution) - 1.0)


def repeats_needed(probability: float, false_alarms: float = FALSE_ALARMS,
                   samples: int = DESIGN_SAMPLES) -> int:
    """Smallest run of repeats whose chance over ``samples`` healthy readings is ``false_alarms``.

    A run of ``R`` repeats starts at a given reading with probability at most
    ``probability^R``; over ``samples`` readings, ``samples * probability^R <= false_alarms``.

    :param probability: chance that one reading repeats the previous one.
    :param false_alarms: expected false alarms allowed.
    :param samples: healthy readings.
    :return: ``R``.
    """
    return int(ceil(log(false_alarms / samples) / log(probability)))


def run_false_alarms(probability: float, repeats: int, samples: int = DESIGN_SAMPLES) -> float:
    """Return the expected false alarms of a run of ``repeats`` repeats over ``samples`` readings.

    :param probability: chance that one reading repeats the previous one.
    :param repeats: the run that raises the alarm.
    :param samples: healthy readings.
    :return: the expected count (an upper bound).
    """
    return samples * probability ** repeats


def spike_threshold(false_alarms: float = FALSE_ALARMS, samples: int = DESIGN_SAMPLES,
                    noise_error: float = NOISE_ERROR) -> float:
    """Excursion, in noise scales, beyond which a reading is a spike.

    A healthy reading departs from the mean of its two neighbours by ``e ~ N(0, 1.5 sigma^2)``;
    with the scale ``s = sqrt(1.5) sigma``, ``P(|e| > z s) = 2 (1 - Phi(z))`` per axis and
    reading (wider excursions need two or more such departures: far rarer). Six axes, and
    the learned scale up to ``noise_error`` low: ``6 samples 2 (1 - Phi((1 - err) z)) <=
    false_alarms``.

    :param false_alarms: expected false alarms allowed.
    :param samples: healthy readings.
    :param noise_error: relative error of the learned scale allowed for.
    :return: ``z``.
    """
    return float(norm.isf(false_alarms / (2 * 6 * samples)) / (1.0 - noise_error))


def spike_false_alarms(z: float, samples: int = DESIGN_SAMPLES, noise_error: float = 0.0) -> float:
    """Return the expected false spikes over ``samples`` healthy readings (six axes).

    :param z: the threshold in noise scales.
    :param samples: healthy readings.
    :param noise_error: how far the learned scale is below the truth (relative).
    :return: the expected count.
    """
    return float(6 * samples * 2 * norm.sf((1.0 - noise_error) * z))


def block_threshold(rows: int, blocks: float, groups: int,
                    false_alarms: float = FALSE_ALARMS) -> float:
    """Noise allowance, in standard deviations, of a group of ``rows`` residual components.

    A block mean of white noise with covariance ``S`` has ``r^T S^-1 r ~ chi2(rows)``, and
    ``|r| > z sqrt(lambda_max(S))`` implies ``r^T S^-1 r > z^2``; ``z^2`` is the quantile that
    leaves ``false_alarms`` over ``blocks`` blocks of ``groups`` groups.

    :param rows: components of a group (3: a force or a torque).
    :param blocks: blocks evaluated at the design point.
    :param groups: groups tested per block.
    :param false_alarms: expected false alarms allowed.
    :return: ``z``.
    """
    return float(np.sqrt(chi2.isf(false_alarms / (blocks * groups), rows)))


#: readings that repeat the previous one bit for bit (all six axes) before a sensor is frozen
FROZEN_REPEATS = repeats_needed(repeat_probability(DESIGN_RESOLUTION) ** DESIGN_NOISY_AXES)
#: readings of one axis that repeat at its largest magnitude (rating unknown) before it is clipped
CLIPPED_REPEATS = repeats_needed(repeat_probability(DESIGN_RESOLUTION))
#: clean readings after which a sensor in doubt is trusted again
RECOVERY = FROZEN_REPEATS + 1
#: excursion (noise scales) of a spike
SPIKE_Z = spike_threshold()


@lru_cache(maxsize=16)
def trim_factor(kept: float) -> float:
    """``E[Z^2 | |Z| <= z]`` for the central share ``kept`` of a standard normal.

    :param kept: share of the values kept (the smallest squares).
    :return: the factor that makes a trimmed mean of squares unbiased.
    """
    z = norm.isf(0.5 * (1.0 - kept))
    return float((kept - 2.0 * z * norm.pdf(z)) / kept)


def block_noise(second_differences: np.ndarray) -> np.ndarray:
    """Noise standard deviation per column from one block of second differences.

    ``d_k = m_{k+1} - 2 m_k + m_{k-1}`` has variance ``6 sigma^2`` under white noise and
    takes smooth motion out (``a T^2``); the largest :data:`NOISE_TRIM` of the squares are
    left out (spikes) and the mean of the rest corrected by :func:`trim_factor`. The mean of
    squares, not a median, because quantised readings give many exact zeros.

    :param second_differences: (b, ...) one block.
    :return: (...) the standard deviations.
    """
    squares = np.asarray(second_differences, float) ** 2
    b = squares.shape[0]
    keep = max(1, b - int(ceil(NOISE_TRIM * b)))
    kept = np.partition(squares, keep - 1, axis=0)[:keep] if keep < b else squares
    return np.sqrt(kept.mean(axis=0) / (6.0 * trim_factor(keep / b)))


#: samples per block of the set's consistency check (the residual's mean over a block is tested)
CONSISTENCY_BLOCK = 32
#: consistent blocks whose mean residual is the set's baseline (the reference of a departure)
BASELINE_BLOCKS = 8
#: consistent blocks after which an inconsistent set is trusted again
RECOVERY_BLOCKS = 2
#: residual groups a set has at most in the design (force, torque, a point contact's torque each)
DESIGN_GROUPS = 8
#: noise allowance (standard deviations) of a group of three residual components of a block mean
SET_Z = block_threshold(3, DESIGN_SAMPLES / 4 / CONSISTENCY_BLOCK, DESIGN_GROUPS)
#: chance that a block of noise alone looks like a departure from the baseline (onset search)
QUIET_PROBABILITY = 1e-3
#: share of the tolerance below which a departure from the baseline is always quiet (keeps
#: the metric invertible where an axis carries no noise)
QUIET_FLOOR = 1e-3


@lru_cache(maxsize=64)
def quiet_limit(rows: int) -> float:
    """Whitened squared departure from the baseline below which a block is quiet (chi2 quantile).

    :param rows: residual components.
    :return: the limit.
    """
    return float(chi2.isf(QUIET_PROBABILITY, rows))
