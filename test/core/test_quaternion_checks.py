"""The one quaternion check (core.spatial) that messages, bags, parameters and the cache share.

A quaternion names a rotation at any scale and either sign; a zero, NaN or Inf one names
none and is refused everywhere alike (the solver cache, a bag's object poses, the core).
Rotations are compared with scipy's own ``Rotation`` as the reference.
"""
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from wrench_distribution.core.errors import InvalidInputError
from wrench_distribution.core.spatial import (quaternion_to_matrix, same_rotation,
                                              unusable_quaternions, ZERO_QUATERNION_NORM)
from wrench_distribution.engine.cache import check_poses

unit = st.tuples(*[st.floats(-1.0, 1.0)] * 4).filter(lambda q: np.linalg.norm(q) > 0.1).map(
    lambda q: np.asarray(q) / np.linalg.norm(q))
scale = st.floats(1e-6, 1e6)


@given(q=unit, s=scale, sign=st.sampled_from([1.0, -1.0]))
def test_any_scale_and_sign_is_one_rotation(q, s, sign):
    assert not unusable_quaternions(s * sign * q)
    assert same_rotation(q, s * sign * q, 1e-9)
    np.testing.assert_allclose(quaternion_to_matrix(s * sign * q), Rotation.from_quat(q).as_matrix(),
                               atol=1e-9)


@given(a=unit, b=unit)
def test_two_rotations_are_the_same_when_scipy_says_they_are(a, b):
    angle = (Rotation.from_quat(a).inv() * Rotation.from_quat(b)).magnitude()
    if angle > 1e-2:
        assert not same_rotation(a, b, 1e-6)
    if angle < 1e-5:
        assert same_rotation(a, b, 1e-6)


@pytest.mark.parametrize('bad', [[0.0] * 4, [0.0, 0.0, 0.0, ZERO_QUATERNION_NORM / 2],
                                 [np.nan, 0.0, 0.0, 1.0], [0.0, np.inf, 0.0, 1.0]])
def test_zero_nan_or_inf_names_no_rotation_anywhere(bad):
    assert unusable_quaternions(bad)
    assert not same_rotation(bad, bad, 1e-6)
    with pytest.raises(InvalidInputError):
        quaternion_to_matrix(bad)
    with pytest.raises(ValueError):
        check_poses([[0.0, 0.0, 0.0]], [bad], ['a'])
    batch = np.array([[0.0, 0.0, 0.0, 1.0], bad, [0.0, 0.0, 1.0, 0.0]])
    assert unusable_quaternions(batch).tolist() == [False, True, False]


@pytest.mark.parametrize('kind,name,per_effector', [
    ('distributor', 'contact_orientations', True), ('analyzer', 'sensor_orientations', True),
    ('object_sim', 'contact_orientations', True), ('object_sim', 'arm_base_orientations', True),
    ('object_sim', 'initial_orientation', False)])
@given(which=st.integers(0, 1), tiny=st.floats(0.0, ZERO_QUATERNION_NORM / 4))
def test_every_quaternion_parameter_refuses_a_zero_one_by_name(kind, name, per_effector, which, tiny):
    from wrench_distribution.config import ConfigError, validate_params
    params = {'effectors': ['left', 'right']}
    if kind == 'distributor':
        params['contact_positions'] = [0.0, 0.2, 0.0, 0.0, -0.2, 0.0]
    good, zero = [0.0, 0.0, 0.0, 1.0], [0.0, tiny, 0.0, 0.0]
    params[name] = (good + zero if which else zero + good) if per_effector else zero
    pattern = f"'{name}': quaternion" + (f" of '{['left', 'right'][which]}'" if per_effector else '')
    with pytest.raises(ConfigError, match=pattern + ' is zero'):
        validate_params(kind, params)
    params[name] = (good + [0.0, 0.0, 2.0, 0.0]) if per_effector else [0.0, 0.0, 2.0, 0.0]
    assert validate_params(kind, params)[name] == params[name]  # any scale is a rotation


#: Entries near every boundary of check_poses (the range, the zero quaternion, NaN and Inf), among
#: ordinary ones so that most sets pass all but one check.
EDGES = st.sampled_from([0.0, 1.0, -0.5, 0.3] * 6
                        + [1e9, -1e9, np.nextafter(1e9, np.inf), -2e9, 1e-10, 4e-10, np.nan, np.inf, -np.inf])


@given(positions=st.lists(st.lists(EDGES, min_size=3, max_size=3), min_size=1, max_size=4),
       quaternions=st.lists(st.lists(EDGES, min_size=4, max_size=4), min_size=4, max_size=4),
       missing_ok=st.booleans())
@settings(max_examples=400)
def test_check_poses_refuses_exactly_what_the_rules_say(positions, quaternions, missing_ok):
    """Refused iff an entry is Inf or beyond 1e9, a quaternion is shorter than 1e-9, or a NaN is not a missing pose."""
    count = len(positions)
    quaternions = quaternions[:count]
    rows = [p + q for p, q in zip(positions, quaternions)]
    missing = [any(np.isnan(x) for x in row) for row in rows]
    known = [row for row, gone in zip(rows, missing) if not gone]
    refused = (any(missing) and not missing_ok) or any(np.isinf(x) for row in rows for x in row) \
        or any(abs(x) > 1e9 for row in known for x in row) \
        or any(sum(x * x for x in row[3:]) ** 0.5 < ZERO_QUATERNION_NORM for row in known)
    names = [f'c{i}' for i in range(count)]
    if refused:
        with pytest.raises(ValueError):
            check_poses(positions, quaternions, names, missing_ok)
        return
    checked_positions, checked_quaternions = check_poses(positions, quaternions, names, missing_ok)
    expected = np.array(rows)
    expected[np.array(missing)] = np.nan  # a missing pose comes back NaN whole
    np.testing.assert_array_equal(np.hstack([checked_positions, checked_quaternions]), expected)
