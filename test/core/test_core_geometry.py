"""The one geometry module and the message codecs, against hand derivations and invariants."""
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from wrench_distribution.core import InvalidInputError
from wrench_distribution.core.codec import join_labels, ns_to_stamp, split_labels, stamp_to_ns
from wrench_distribution.core.contacts import inertia_matrix, ObjectModel
from wrench_distribution.core.spatial import (
    compose, exp_so3, identity, invert, log_so3, quaternion_to_matrix, rotate, rotate_inverse,
    same_poses, slerp,
)

quaternions = st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(
    lambda q: np.linalg.norm(q) > 0.1).map(lambda q: np.asarray(q) / np.linalg.norm(q))


def hand_matrix(q) -> np.ndarray:
    """Rotation matrix of a unit quaternion, written out (Shoemake 1985)."""
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def hand_slerp(q0, q1, s) -> np.ndarray:
    """Shoemake's slerp on the shorter arc: sin-weighted sum of the two unit quaternions."""
    if np.dot(q0, q1) < 0:
        q1 = -q1
    theta = np.arccos(np.clip(np.dot(q0, q1), -1.0, 1.0))
    if theta < 1e-9:
        return q0
    return (np.sin((1 - s) * theta) * q0 + np.sin(s * theta) * q1) / np.sin(theta)


def same_rotation(a, b, atol=1e-12) -> None:
    np.testing.assert_allclose(abs(np.dot(a, b)), 1.0, atol=atol)


@settings(max_examples=60, deadline=None)
@given(quaternions, st.lists(st.floats(-5, 5), min_size=3, max_size=3))
def test_matrix_and_rotate_match_the_hand_formula(q, v):
    np.testing.assert_allclose(quaternion_to_matrix(q), hand_matrix(q), atol=1e-12)
    np.testing.assert_allclose(rotate(q, v), hand_matrix(q) @ v, atol=1e-11)
    np.testing.assert_allclose(rotate_inverse(q, v), hand_matrix(q).T @ v, atol=1e-11)
    np.testing.assert_allclose(rotate_inverse(q, rotate(q, v)), v, atol=1e-11)


@settings(max_examples=60, deadline=None)
@given(quaternions, quaternions, st.floats(0, 1), st.sampled_from(['random', 'equal', 'opposite']))
def test_slerp_matches_shoemake(q0, q1, s, case):
    q1 = {'random': q1, 'equal': q0, 'opposite': -q0}[case]  # degenerate: no turn, or sign flip
    got = slerp(q0[None], q1[None], np.array([s]))[0]
    same_rotation(got, hand_slerp(q0, q1, s) / np.linalg.norm(hand_slerp(q0, q1, s)), atol=1e-10)


def test_slerp_end_points_and_midpoint_of_a_quarter_turn():
    q0 = np.array([0.0, 0.0, 0.0, 1.0])
    q1 = np.array([0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)])  # 90 deg about z
    got = slerp(np.stack([q0] * 3), np.stack([q1] * 3), np.array([0.0, 0.5, 1.0]))
    same_rotation(got[0], q0)
    same_rotation(got[1], [0.0, 0.0, np.sin(np.pi / 8), np.cos(np.pi / 8)])  # 45 deg
    same_rotation(got[2], q1)


@settings(max_examples=40, deadline=None)
@given(quaternions, quaternions, st.lists(st.floats(-3, 3), min_size=6, max_size=6))
def test_compose_and_invert_are_homogeneous_matrix_products(qa, qb, t):
    def homogeneous(p):
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = hand_matrix(p[3:] / np.linalg.norm(p[3:])), p[:3]
        return m
    a, b = np.r_[t[:3], qa], np.r_[t[3:], qb]
    np.testing.assert_allclose(homogeneous(compose(a, b)), homogeneous(a) @ homogeneous(b), atol=1e-11)
    np.testing.assert_allclose(homogeneous(invert(a)), np.linalg.inv(homogeneous(a)), atol=1e-11)
    np.testing.assert_allclose(homogeneous(compose(invert(a[None]), a[None])[0]),
                               homogeneous(identity()), atol=1e-11)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=3, max_size=3))
def test_exp_and_log_so3_are_inverse_below_pi(phi):
    phi = np.asarray(phi)
    if np.linalg.norm(phi) >= np.pi - 1e-3:
        phi = phi / np.linalg.norm(phi) * (np.pi - 1e-3)
    r = exp_so3(phi)
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(log_so3(r), phi, atol=1e-8)
    np.testing.assert_allclose(exp_so3(np.stack([phi, -phi])) @ exp_so3(phi)[None].swapaxes(-1, -2),
                               np.stack([np.eye(3), exp_so3(-2 * phi)]), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(quaternions, min_size=1, max_size=4), st.floats(0.1, 10), st.booleans())
def test_same_poses_ignores_quaternion_scale_and_sign(qs, scale, flip):
    q = np.array(qs)
    p = np.arange(3 * len(q), dtype=float).reshape(-1, 3)
    other = q * scale * (-1 if flip else 1)
    assert same_poses(p, q, p, other, 1e-9)
    assert not same_poses(p, q, p + 1e-3, other, 1e-6)
    turned = np.array([hand_slerp(qi, np.array([1.0, 0, 0, 0]) if abs(qi[3]) > 0.5 else
                                  np.array([0, 0, 0, 1.0]), 0.1) for qi in q])
    assert not same_poses(p, q, p, turned, 1e-6)


@dataclass
class Stamp:
    sec: int
    nanosec: int


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 62))
def test_stamp_round_trip(ns):
    stamp = ns_to_stamp(ns, Stamp)
    assert 0 <= stamp.nanosec < 1_000_000_000
    assert stamp_to_ns(stamp) == ns
    assert stamp.sec + stamp.nanosec * 1e-9 == pytest.approx(ns * 1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_characters=';'), min_size=1).map(str.strip)
                .filter(bool), min_size=1, max_size=6))
def test_label_round_trip(names):
    assert split_labels(join_labels(names)) == names
    assert split_labels(' a ; b(c,d) ') == ['a', 'b(c,d)']


def test_inertia_forms_agree():
    full = np.array([[2.0, 0.1, 0.2], [0.1, 3.0, 0.3], [0.2, 0.3, 4.0]])
    for form in ([2, 3, 4, 0.1, 0.2, 0.3], full.ravel().tolist(), full.tolist()):
        np.testing.assert_array_equal(inertia_matrix(form), full)
    np.testing.assert_array_equal(inertia_matrix([2, 3, 4]), np.diag([2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(ObjectModel(inertia=[2, 3, 4]).inertia_matrix, np.diag([2.0, 3.0, 4.0]))


@pytest.mark.parametrize('value, message', [
    ([1.0, 2.0], 'object inertia'), ([1.0, 2.0, np.nan], 'object inertia'),
    ([1.0, 1.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0], 'symmetric'), ([1.0, -1.0, 1.0], 'positive definite'),
])
def test_inertia_rejects_bad_values(value, message):
    with pytest.raises(InvalidInputError, match=message):
        inertia_matrix(value)


@pytest.mark.parametrize('bad', [[0.0, 0.0, 0.0, 0.0], [np.nan, 0.0, 0.0, 1.0], [0.0, np.inf, 0.0, 1.0]])
def test_bad_quaternions_are_rejected_by_every_helper(bad):
    good, bad = np.array([[0.0, 0.0, 0.0, 1.0]]), np.array([bad])
    pose = np.r_[0.0, 0.0, 0.0, bad[0]][None]
    calls = [lambda: quaternion_to_matrix(bad), lambda: rotate(bad, [1.0, 0.0, 0.0]),
             lambda: rotate_inverse(bad, [1.0, 0.0, 0.0]), lambda: slerp(good, bad, [0.5]),
             lambda: compose(identity((1,)), pose), lambda: invert(pose)]
    for call in calls:
        with pytest.raises(InvalidInputError, match='zero, NaN or Inf'):
            call()
