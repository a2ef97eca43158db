"""The noise learner fed reading by reading (the live path) learns what its definition says.

The reference is written here from the definition (docs/theory.md, section 15.2): each
sensor's healthy second differences ``m_{k-1} - 2 m_k + m_{k+1}``, formed in Python floats,
cut in blocks of ``NOISE_BLOCK`` in the order they come; each full block gives an estimate
(``block_noise``, the estimator itself), the noise is the median of the last ``NOISE_BLOCKS``
estimates, and it changes at the reading that completes a block. The learner is fed as the
live checks feed it: three readings in a row at a time, interrupted by readings a sensor's own
checks doubt (left out of that sensor's blocks) and by rows that are copies (not the reading
after the last one).
"""
from hypothesis import given, settings, strategies as st
import numpy as np

from wrench_distribution.core.health import block_noise, NOISE_BLOCK, NOISE_BLOCKS
from wrench_distribution.engine.noise import NoiseLearner


def _reference(readings: list, healthy: np.ndarray) -> tuple:
    """Return ``(noise (n, 6), reading index of each estimate, in order)`` from the definition."""
    n = healthy.shape[1]
    seconds = [[] for _ in range(n)]
    estimates = [[] for _ in range(n)]
    changes = []
    for k in range(2, len(readings)):
        row = [a - 2.0 * b + c for a, b, c in zip(readings[k - 2], readings[k - 1], readings[k])]
        for i in range(n):
            if not healthy[k, i]:
                continue
            seconds[i].append(row[6 * i:6 * i + 6])
            if len(seconds[i]) == NOISE_BLOCK:
                estimates[i].append(block_noise(np.array(seconds[i])))
                seconds[i] = []
                if not changes or changes[-1] != k:
                    changes.append(k)
    noise = np.full((n, 6), np.nan)
    for i in range(n):
        if estimates[i]:
            noise[i] = np.median(np.stack(estimates[i][-NOISE_BLOCKS:]), axis=0)
    return noise, changes


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), seed=st.integers(0, 2**16), blocks=st.integers(1, 3),
       quantum=st.sampled_from([0.0, 0.01]), doubted=st.floats(0.0, 0.05),
       copied=st.floats(0.0, 0.05))
def test_readings_added_one_by_one_give_the_noise_of_the_definition(n, seed, blocks, quantum, doubted,
                                                                    copied):
    rng = np.random.default_rng(seed)
    count = blocks * NOISE_BLOCK + int(rng.integers(0, NOISE_BLOCK))
    scale = rng.uniform(0.01, 3.0, (n, 6))
    values = rng.normal(size=(count, n, 6)) * scale + np.linspace(0.0, 5.0, count)[:, None, None]
    if quantum:
        values = np.round(values / quantum) * quantum
    readings = values.reshape(count, 6 * n).tolist()
    healthy = rng.random((count, n)) >= doubted
    learner = NoiseLearner(n)
    for k in range(2, count):
        before, centre = readings[k - 2], readings[k - 1]
        if rng.random() < copied:
            before, centre = list(before), list(centre)  # equal rows, other objects
        if healthy[k].all():
            learner.add_row(before, centre, readings[k], k)
        else:
            second = np.array([a - 2.0 * b + c for a, b, c in zip(before, centre, readings[k])])
            learner.add(second.reshape(1, n, 6), healthy[k][None], [k])
    noise, changes = _reference(readings, healthy)
    learner.add(np.zeros((0, n, 6)), np.zeros((0, n), bool), [])  # writes what waits
    np.testing.assert_array_equal(learner.noise, noise)
    assert learner.estimates == sum(int(b) for b in learner.blocks)
    assert [index for index, _, _ in learner.changes] == changes
    assert learner.blocks.tolist() == [int(healthy[2:, i].sum()) // NOISE_BLOCK for i in range(n)]
