"""One tool-weight model: what a sensor reads (the simulator's truth) inverts what the analyzer believes.

``SensorModel.reading`` is what the simulated sensors report; ``SensorModel.to_contact``
what the analyzer applies. The reference is written here by hand: a reading ``m`` is
signed, the tool's weight ``[M g_s; c x (M g_s)]`` (``g_s = R^T g``) added, and the sum
carried to the contact with ``f' = R f``, ``t' = R t + p x (R f)``: that must give back the
wrench applied. The simulated sensors are the models' readings plus bias and noise.
"""
from hypothesis import given, strategies as st
import numpy as np
from scipy.spatial.transform import Rotation

from wrench_distribution.core.sensor_model import SensorModel
from wrench_distribution.sim.physics.ft_sensor import SimulatedFTSensors

coordinate = st.floats(-2.0, 2.0)
vector = st.tuples(coordinate, coordinate, coordinate)
quaternion = st.tuples(*[st.floats(-1.0, 1.0)] * 4).filter(lambda q: np.linalg.norm(q) > 0.1)
wrench = st.tuples(*[st.floats(-50.0, 50.0)] * 6)


def _by_hand(model: SensorModel, reading, gravity) -> np.ndarray:
    """Return the contact wrench of a reading, carried by the transport written out."""
    rot = Rotation.from_quat(np.asarray(model.orientation) / np.linalg.norm(model.orientation))
    r, p = rot.as_matrix(), np.asarray(model.position)
    weight = model.tool_mass * (r.T @ np.asarray(gravity))
    signed = model.sign * np.asarray(reading) + np.concatenate(
        [weight, np.cross(model.tool_com, weight)])
    force = r @ signed[:3]
    return np.concatenate([force, r @ signed[3:] + np.cross(p, force)])


@given(position=vector, orientation=quaternion, sign=st.sampled_from([1, -1]),
       mass=st.floats(0.0, 3.0), com=vector, applied=wrench, gravity=vector)
def test_a_reading_carried_back_by_hand_is_the_wrench_applied(position, orientation, sign, mass,
                                                              com, applied, gravity):
    model = SensorModel(position, orientation, sign, mass, com)
    reading = model.reading(applied, gravity)
    np.testing.assert_allclose(_by_hand(model, reading, gravity), applied, atol=1e-9)
    np.testing.assert_allclose(model.to_contact(reading, gravity), applied, atol=1e-9)


@given(data=st.data(), n=st.integers(1, 4))
def test_the_simulated_sensors_read_through_their_models(data, n):
    models = [SensorModel(data.draw(vector), data.draw(quaternion), data.draw(st.sampled_from([1, -1])),
                          data.draw(st.floats(0.0, 3.0)), data.draw(vector)) for _ in range(n)]
    bias = np.array([data.draw(wrench) for _ in range(n)])
    applied = np.array([data.draw(wrench) for _ in range(n)])
    gravity = np.array([data.draw(vector) for _ in range(n)])
    sensors = SimulatedFTSensors(models, bias=bias)
    read = sensors.read(applied, gravity)
    for model, reading, a, g, b in zip(models, read, applied, gravity, bias):
        np.testing.assert_allclose(_by_hand(model, reading - b, g), a, atol=1e-9)
