"""Frames, wrench transport and the sensor model, checked against hand derivations."""
from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from wrench_distribution.core import (
    InvalidInputError, inverse_pose, matrix_to_quaternion, quaternion_to_matrix, SensorModel, skew,
    transform_wrench,
)


def test_skew_is_the_cross_product():
    a, b = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7, -1.1])
    np.testing.assert_allclose(skew(a) @ b, np.cross(a, b))


def test_quarter_turn_about_z():
    q = [0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)]
    np.testing.assert_allclose(quaternion_to_matrix(q), [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda q: np.linalg.norm(q) > 0.1))
def test_quaternion_round_trip(q):
    r = quaternion_to_matrix(q)
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, atol=1e-12)
    np.testing.assert_allclose(quaternion_to_matrix(matrix_to_quaternion(r)), r, atol=1e-12)


def test_lever_arm_of_a_force():
    # A 10 N force along x applied at the origin of frame A; A sits at y = 2 m in B, unrotated:
    # about B's origin the torque is p x f = (0, 2, 0) x (10, 0, 0) = (0, 0, -20).
    moved = transform_wrench([10, 0, 0, 0, 0, 0], np.eye(3), [0, 2, 0])
    np.testing.assert_allclose(moved, [10, 0, 0, 0, 0, -20])


def test_rotation_then_lever_arm():
    # A is turned 90 deg about z and placed at x = 1: a force along A's x is along B's y,
    # and a torque about A's x is about B's y; lever arm (1, 0, 0) x (0, 5, 0) = (0, 0, 5).
    r = quaternion_to_matrix([0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)])
    moved = transform_wrench([5, 0, 0, 2, 0, 0], r, [1, 0, 0])
    np.testing.assert_allclose(moved, [0, 5, 0, 0, 2, 5], atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_transport_round_trip_and_point_force_equivalence(seed):
    rng = np.random.default_rng(seed)
    r, p = quaternion_to_matrix(rng.normal(size=4)), rng.normal(size=3)
    wrench = rng.normal(size=6)
    back = transform_wrench(transform_wrench(wrench, r, p), *inverse_pose(r, p))
    np.testing.assert_allclose(back, wrench, atol=1e-12)
    # independent: a pure force f at point x (in A) has torque (p + R x) x (R f) about B's origin
    f, x = rng.normal(size=3), rng.normal(size=3)
    in_a = np.r_[f, np.cross(x, f)]
    np.testing.assert_allclose(transform_wrench(in_a, r, p)[3:], np.cross(p + r @ x, r @ f), atol=1e-12)


def test_sensor_sign_offset_and_tool_weight():
    # Sensor 10 cm behind the contact along the contact's -z, turned 180 deg about x
    # (its z points back into the tool). It reports the reaction (sign -1). A 0.5 kg tool
    # has its centre of mass 4 cm along the sensor's -z (towards the contact).
    turned = [1.0, 0.0, 0.0, 0.0]
    sensor = SensorModel(position=(0, 0, -0.1), orientation=turned, sign=-1, tool_mass=0.5,
                         tool_com=(0, 0, -0.04))
    gravity = np.array([0.0, -9.81, 0.0])  # in the contact frame
    applied = np.array([3.0, -1.0, 20.0, 0.2, -0.1, 0.05])  # effector on object, contact frame
    # What the sensor reads, derived by hand: robot-side wrench on the tool at the contact is
    # applied - tool weight (weight acts at the tool CoM = contact frame (0, 0, -0.06)).
    weight = 0.5 * gravity
    tool_com_contact = np.array([0, 0, -0.06])
    at_contact = applied - np.r_[weight, np.cross(tool_com_contact, weight)]
    # move to the sensor origin (-0.1 along z): t_s = t_c + (c - s) x f with c - s = (0, 0, 0.1)
    at_sensor = np.r_[at_contact[:3], at_contact[3:] + np.cross([0, 0, 0.1], at_contact[:3])]
    rotation = np.diag([1.0, -1.0, -1.0])  # sensor axes in contact frame
    reading = -np.r_[rotation.T @ at_sensor[:3], rotation.T @ at_sensor[3:]]
    np.testing.assert_allclose(sensor.to_contact(reading, gravity), applied, atol=1e-12)
    # batch form, broadcasting the gravity vector
    batch = sensor.to_contact(np.tile(reading, (4, 1)), gravity)
    np.testing.assert_allclose(batch, np.tile(applied, (4, 1)), atol=1e-12)


@pytest.mark.parametrize('kwargs, message', [
    ({'sign': 0}, 'sign must be'),
    ({'tool_mass': -1.0}, 'tool_mass'),
    ({'orientation': (0, 0, 0, 0)}, 'quaternion'),
    ({'position': (0, float('nan'), 0)}, 'NaN'),
])
def test_sensor_model_rejects_bad_configuration(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        SensorModel(**kwargs)
