"""What a set of F/T sensors can tell about a fault (docs/theory.md, section 15.4), as properties.

Faults and internal loads are moved to the object by hand (``f' = R f``, ``t' = R t + p x
(R f)``, about the centre of mass), never with the code under test; the sensors' maps are
written here from their definition (``A = s [[R, 0], [S(p) R, R]]``).
"""
from hypothesis import assume, given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from scipy.stats import chi2

from wrench_distribution.core import consistency as C
from wrench_distribution.core.object_motion import at_rest, motion_from_poses, object_wrench

PROBABILITY = 1e-3


def skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def sensor_map(sign, position, rotation):
    """Return the map of a signed reading (sensor frame) to the wrench at the contact, contact frame."""
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = rotation
    out[3:, :3] = skew(position) @ rotation
    return sign * out


def to_object(contact_wrench, position, rotation, com, rigid=True):
    """Move a contact wrench (contact frame, about the contact) to the object frame, about the CoM."""
    f = rotation @ contact_wrench[:3]
    t = rotation @ contact_wrench[3:] if rigid else np.zeros(3)
    return np.concatenate([f, t + np.cross(position - com, f)])


@st.composite
def cells(draw, sizes=(2, 3, 4), kinds=('rigid',)):
    """Draw a random cell: contacts, their frames, sensors (offset, turned, signed), a centre of mass."""
    n = draw(st.sampled_from(sizes))
    seed = draw(st.integers(0, 2 ** 31))
    length = draw(st.sampled_from([1.0, 1e-3, 1e3]))  # the unit of length
    rng = np.random.default_rng(seed)
    positions = rng.uniform(-0.3, 0.3, (n, 3)) * length
    assume(np.linalg.norm(positions[0] - positions[1]) > 0.05 * length)
    rotations = Rotation.random(n, random_state=seed).as_matrix()
    sensor_positions = rng.uniform(-0.06, 0.06, (n, 3)) * length
    sensor_rotations = Rotation.random(n, random_state=seed + 1).as_matrix()
    signs = rng.choice([-1, 1], n)
    gains = np.stack([sensor_map(s, p, r) for s, p, r in zip(signs, sensor_positions, sensor_rotations)])
    rigid = np.array([draw(st.sampled_from(kinds)) == 'rigid' for _ in range(n)])
    com = rng.uniform(-0.1, 0.1, 3) * length
    quats = Rotation.from_matrix(rotations).as_quat()
    return {'positions': positions, 'rotations': rotations, 'quats': quats, 'gains': gains,
            'rigid': rigid, 'com': com, 'length': length, 'rng': rng}


def model_of(cell, point_torques=False):
    return C.parity_model(cell['positions'], cell['quats'], cell['com'], cell['rigid'],
                          cell['gains'], point_torques=point_torques)


def metric_of(model, cell, force_noise=0.05):
    """Return the inverse covariance of a block mean's residual (torque noise scales with length).

    Two point contacts cannot load the torque about their line: no noise reaches that direction,
    whose variance gets a floor far below the others' (as the engine floors it by its tolerance).
    """
    noise = np.tile(np.r_[[force_noise] * 3, [force_noise * 0.05 * cell['length']] * 3], (len(cell['rigid']), 1))
    covariance = C.residual_covariance(model, noise) / 32
    floor = 1e-9 * np.trace(covariance) / len(covariance)
    return np.linalg.inv(covariance + floor * np.eye(len(covariance)))


def fault_residual(cell, sensor, fault):
    """Return the resultant's change (object frame, about the CoM) when ``sensor`` reads ``fault`` more."""
    contact = cell['gains'][sensor] @ fault
    return to_object(contact, cell['positions'][sensor], cell['rotations'][sensor], cell['com'],
                     cell['rigid'][sensor])


@settings(max_examples=40, deadline=None)
@given(cell=cells(), data=st.data())
def test_any_rigid_sensor_explains_any_residual(cell, data):
    """With rigid contacts and a known resultant, a whole-sensor fault is never isolable."""
    model = model_of(cell)
    residual = cell['rng'].normal(size=6) * np.r_[[5.0] * 3, [0.5 * cell['length']] * 3]
    fits = C.explain(model, residual, metric_of(model, cell), PROBABILITY)
    whole = {h.sensor for h in fits if len(h.axes) == 6}
    assert whole == set(range(len(cell['rigid'])))
    assert not any(h.informative for h in fits if len(h.axes) == 6)
    for h in fits:  # each fit reproduces the residual through the sensor's own map, by hand
        if len(h.axes) == 6:
            np.testing.assert_allclose(fault_residual(cell, h.sensor, h.fault), residual,
                                       atol=1e-6 * np.abs(residual).max())


@settings(max_examples=40, deadline=None)
@given(cell=cells(sizes=(2, 3, 4), kinds=('rigid', 'point')), data=st.data())
def test_a_single_axis_fault_is_named_unless_another_axis_looks_the_same(cell, data):
    """The true (sensor, axis) always fits; another fits only if its column is parallel to it."""
    model = model_of(cell)
    sensor = data.draw(st.integers(0, len(cell['rigid']) - 1))
    axis = data.draw(st.integers(0, 2 if not cell['rigid'][sensor] else 5))
    fault = np.zeros(6)
    fault[axis] = 3.0 if axis < 3 else 0.3 * cell['length']
    residual = fault_residual(cell, sensor, fault)
    metric = metric_of(model, cell)
    fits = C.explain(model, residual, metric, PROBABILITY)
    assert any(h.sensor == sensor and h.axes == (axis,) for h in fits)
    root = np.linalg.cholesky(metric)
    truth = root.T @ residual
    for h in fits:
        if len(h.axes) == 1 and (h.sensor, h.axes[0]) != (sensor, axis):
            other = root.T @ model.fault_map[:, h.sensor, h.axes[0]]
            sine = np.sqrt(max(0.0, 1 - (other @ truth) ** 2 / (other @ other) / (truth @ truth)))
            assert sine * np.linalg.norm(truth) <= np.sqrt(chi2.isf(PROBABILITY, 5)) + 1e-9


def test_internal_loads_leave_no_residual():
    """A squeeze (and any wrench of N(G)) is invisible: a constant one looks like a bias in each sensor."""
    positions = np.array([[0.0, -0.2, 0.0], [0.05, 0.2, 0.01], [0.1, 0.0, 0.3]])
    rotations = Rotation.from_euler('xyz', [[10, 0, 30], [-90, 20, 0], [0, 45, 45]], degrees=True)
    com = np.array([0.01, 0.02, 0.03])
    gains = np.stack([np.eye(6)] * 3)
    model = C.parity_model(positions, rotations.as_quat(), com, [True, True, True], gains)
    line = positions[1] - positions[0]
    twist = np.r_[0.0, 0.0, 0.0, line / np.linalg.norm(line)]  # equal and opposite torques about the line
    object_frame = np.zeros((3, 6))
    object_frame[0] = np.r_[20.0 * line / np.linalg.norm(line), 0, 0, 0] + twist
    object_frame[1] = -object_frame[0]
    contact = np.stack([np.r_[r.inv().apply(w[:3]), r.inv().apply(w[3:])]
                        for r, w in zip(rotations, object_frame)])
    np.testing.assert_allclose(C.residuals(model, contact[None], None), 0.0, atol=1e-12)
    # the same load read as three constant biases: the resultant never sees it
    np.testing.assert_allclose(np.einsum('dnj,nj->d', model.fault_map, contact), 0.0, atol=1e-12)


def test_a_force_error_along_the_line_of_two_contacts_fits_both():
    """Two contacts, sensors aligned with the object: an error along the line is the squeeze's twin."""
    positions = np.array([[0.0, -0.2, 0.0], [0.0, 0.2, 0.0]])
    model = C.parity_model(positions, np.tile([0, 0, 0, 1.0], (2, 1)), [0, 0, 0.0], [True, True],
                           np.stack([np.eye(6)] * 2))
    aligned = {'gains': np.stack([np.eye(6)] * 2), 'positions': positions,
               'rotations': np.stack([np.eye(3)] * 2), 'com': np.zeros(3), 'rigid': [True, True]}
    residual = fault_residual(aligned, 0, np.r_[0, 2.0, 0, 0, 0, 0])
    noise = np.tile(np.r_[[0.05] * 3, [0.005] * 3], (2, 1))
    metric = np.linalg.inv(C.residual_covariance(model, noise) / 32)
    named = {(h.sensor, h.axes) for h in C.explain(model, residual, metric, PROBABILITY) if h.informative}
    assert named == {(0, (1,)), (1, (1,))}
    across = fault_residual(aligned, 0, np.r_[0, 0, 2.0, 0, 0, 0])
    named = {(h.sensor, h.axes) for h in C.explain(model, across, metric, PROBABILITY) if h.informative}
    assert named == {(0, (2,))}


@settings(max_examples=30, deadline=None)
@given(cell=cells(sizes=(3, 4), kinds=('point',)), data=st.data())
def test_a_point_contact_force_fault_is_isolated_off_the_lines_joining_contacts(cell, data):
    """Point contacts: a force fault of one contact is told from the others' (forces off their lines).

    With the contacts' torques read (six-axis sensors), the fault is told by the contact alone.
    """
    sensor = data.draw(st.integers(0, len(cell['rigid']) - 1))
    fault = np.r_[cell['rng'].normal(size=3) * 3.0, 0, 0, 0]
    error = cell['gains'][sensor] @ fault  # the contact wrench's error, contact frame
    n = len(cell['rigid'])
    noise = np.tile(np.r_[[0.05] * 3, [0.005 * cell['length']] * 3], (n, 1))
    for point_torques in (False, True):
        model = model_of(cell, point_torques)
        residual = fault_residual(cell, sensor, fault)
        if point_torques:  # each point contact's torque, in its order: only this one's is not zero
            residual = np.concatenate([residual] + [error[3:] if i == sensor else np.zeros(3)
                                                    for i in range(n)])
        metric = np.linalg.inv(C.residual_covariance(model, noise) / 32)
        whole = {h.sensor for h in C.explain(model, residual, metric, PROBABILITY)
                 if len(h.axes) == 6 and h.informative}
        assert sensor in whole
        for other in whole - {sensor}:  # only where the force lies along the line joining them
            assert not point_torques
            line = cell['positions'][other] - cell['positions'][sensor]
            force = cell['rotations'][sensor] @ error[:3]
            assert np.linalg.norm(np.cross(line, force)) < 0.2 * np.linalg.norm(line) * np.linalg.norm(force)


def test_at_rest_the_object_wrench_is_minus_its_weight():
    gravity = np.array([[0.0, 1.2, -9.73], [0, 0, -9.81]])
    np.testing.assert_allclose(object_wrench(2.0, at_rest(gravity)),
                               [[0, -2.4, 19.46, 0, 0, 0], [0, 0, 19.62, 0, 0, 0]])


def test_motion_from_poses_gives_newton_euler_on_an_analytic_trajectory():
    """A box moved and turned about a fixed axis; accelerations derived by hand."""
    rate, w, a = 1000.0, 2.0, 0.4
    t = np.arange(0, 2.0, 1 / rate)
    stamps = 1_700_000_000 * 10 ** 9 + np.round(t * 1e9).astype(np.int64)
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    angle = a * np.sin(w * t)
    rates, accel = a * w * np.cos(w * t), -a * w ** 2 * np.sin(w * t)
    rotation = Rotation.from_rotvec(angle[:, None] * axis) * Rotation.from_euler('x', 20, degrees=True)
    origin = np.column_stack([0.3 * np.sin(3 * t), 0.2 * np.cos(3 * t), 0.1 * t ** 2])
    origin_acc = np.column_stack([-2.7 * np.sin(3 * t), -1.8 * np.cos(3 * t), np.full_like(t, 0.2)])
    com = np.array([0.05, -0.02, 0.1])
    omega_world, alpha_world = rates[:, None] * axis, accel[:, None] * axis
    arm = rotation.apply(com)
    com_acc = origin_acc + np.cross(alpha_world, arm) + np.cross(omega_world, np.cross(omega_world, arm))
    g = np.array([0, 0, -9.81])
    motion = motion_from_poses(stamps, origin, rotation.as_quat(), com, g, half_window=5)
    inner = slice(10, -10)
    np.testing.assert_allclose(motion.acceleration[inner], rotation.inv().apply(com_acc)[inner], atol=2e-3)
    np.testing.assert_allclose(motion.angular_velocity[inner], rotation.inv().apply(omega_world)[inner], atol=1e-4)
    np.testing.assert_allclose(motion.angular_acceleration[inner], rotation.inv().apply(alpha_world)[inner], atol=2e-3)
    np.testing.assert_allclose(motion.gravity, rotation.inv().apply(np.tile(g, (len(t), 1))), atol=1e-12)
    inertia = np.diag([0.05, 0.04, 0.06])
    wrench = object_wrench(2.0, motion, inertia)
    omega_b, alpha_b = rotation.inv().apply(omega_world), rotation.inv().apply(alpha_world)
    by_hand = np.column_stack([2.0 * (rotation.inv().apply(com_acc) - rotation.inv().apply(g)),
                               alpha_b @ inertia + np.cross(omega_b, omega_b @ inertia)])
    np.testing.assert_allclose(wrench[inner], by_hand[inner], atol=5e-3)


def test_motion_from_poses_refuses_too_few_or_unordered_poses():
    with pytest.raises(ValueError, match='at least 11'):
        motion_from_poses(np.arange(5), np.zeros((5, 3)), np.tile([0, 0, 0, 1.0], (5, 1)), [0, 0, 0], [0, 0, -9.81])
    with pytest.raises(ValueError, match='increase'):
        motion_from_poses(np.r_[np.arange(10), 3], np.zeros((11, 3)), np.tile([0, 0, 0, 1.0], (11, 1)),
                          [0, 0, 0], [0, 0, -9.81])
