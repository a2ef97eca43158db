"""The simulator's sensor faults (config/sensor_faults.py, sim/physics/sensor_faults.py).

Each fault is checked against what a broken sensor publishes, written here by hand from the
healthy readings: a repeated reading, a clip, a ramp, a jump; and the entries that are not
faults are refused naming the parameter.
"""
import numpy as np
import pytest

from wrench_distribution.config import ConfigError
from wrench_distribution.config.sensor_faults import parse_fault, parse_faults, SensorFault
from wrench_distribution.sim.physics.sensor_faults import FaultyStreams

NAMES = ['left', 'right']
PERIOD = 0.005


def healthy(k: int, seed: int = 0) -> tuple:
    """Return ``(times (k,), readings (k, 2, 6))``: noisy, never repeating."""
    rng = np.random.default_rng(seed)
    t = PERIOD * np.arange(k)
    readings = 10.0 * np.sin(t)[:, None, None] + rng.normal(size=(k, 2, 6)) * 0.05
    return t, readings


def publish(faults, times, readings) -> np.ndarray:
    streams = FaultyStreams(faults, 2)
    return np.array([streams.apply(t, r) for t, r in zip(times, readings)])


def test_a_freeze_repeats_the_last_published_reading_bit_for_bit_then_lets_go():
    times, readings = healthy(400)
    out = publish(parse_faults(['left freeze 0.5 0.6'], NAMES), times, readings)
    first, stop = 100, 220  # 0.5 s and 1.1 s at 5 ms
    np.testing.assert_array_equal(out[:first], readings[:first])
    for j in range(first, stop):
        assert out[j, 0].tobytes() == readings[first - 1, 0].tobytes()
    np.testing.assert_array_equal(out[stop:], readings[stop:])
    np.testing.assert_array_equal(out[:, 1], readings[:, 1])  # the other sensor untouched


def test_a_clip_a_drift_and_a_spike_on_their_axis_only():
    times, readings = healthy(600, seed=1)
    faults = parse_faults(['right clip 0.5 1.0 fz 4.0', 'left drift 1.0 1.0 ty 0.3',
                           'left spike 2.5 0.004 fx 2.0'], NAMES)
    out = publish(faults, times, readings)
    expected = readings.copy()
    window = (times >= 0.5) & (times < 1.5)
    expected[window, 1, 2] = np.clip(readings[window, 1, 2], -4.0, 4.0)
    expected[:, 0, 4] += 0.3 * np.clip(times - 1.0, 0.0, 1.0)  # ramps 1 s, then stays
    expected[(times >= 2.5) & (times < 2.504), 0, 0] += 2.0     # one reading
    np.testing.assert_allclose(out, expected, atol=1e-12)
    assert np.count_nonzero(out[:, 0, 0] != readings[:, 0, 0]) == 1
    assert np.abs(out[window, 1, 2]).max() <= 4.0 < np.abs(readings[window, 1, 2]).max()


def test_entries_are_read_with_their_names():
    assert parse_fault('right drift 5.0 4.0 fx -0.5', NAMES) == SensorFault(1, 'drift', 5.0, 4.0, 0, -0.5)
    assert parse_fault('left freeze 3 2', NAMES) == SensorFault(0, 'freeze', 3.0, 2.0)


@pytest.mark.parametrize('entry', [
    'middle freeze 1 1', 'left melt 1 1', 'left freeze 1', 'left freeze 1 1 fx 2',
    'left clip 1 1', 'left clip 1 1 fw 2', 'left clip 1 1 fx 0', 'left drift -1 1 fx 1',
    'left drift 1 0 fx 1', 'left spike 1 nan fx 1', 'left spike 1 1 fx inf', 'left spike one 1 fx 1'])
def test_bad_entries_are_refused_naming_the_parameter(entry):
    with pytest.raises(ConfigError, match=r"parameter 'sensor_faults'"):
        parse_fault(entry, NAMES)
