"""The analyzer follows the contact weights, without ROS (docs/legs_and_hands.md, "The analyzer follows").

References are independent of the weights' code: forces written here from statics (a trunk on
three point feet with its centre of mass at their centroid: each foot carries a third of its
weight), the resultant of the live feet's forces by hand (``F = sum f_i``, ``T = sum (p_i - c)
x f_i``), and the read-out of an analyzer configured *without* the released foot (what weight 0
must equal). The contact-state thresholds are checked on simulated Gaussian noise.
"""
from hypothesis import assume, given, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from legs_fixtures import FEET, FOOT_POSITIONS, GRAVITY, TRUNK_MASS
from wrench_distribution.config import load_analyzer_config
from wrench_distribution.engine import AnalysisEngine, StaticPoses
from wrench_distribution.engine.contact_states import ContactStates, FollowedWeights, thresholds
from wrench_distribution.engine.poses import HeldPoses
from wrench_distribution.engine.sensing import TareWindow

UPRIGHT = np.tile([0.0, 0.0, 0.0, 1.0], (4, 1))
STAMP = 1_000_000_000
#: the part quantities with one wrench per effector
PARTS = ('manipulating', 'constraint', 'internal')


def trunk_engine(keep=(True,) * 4, com=(0.0, 0.0, 0.0)) -> AnalysisEngine:
    """Return an analysis engine of the trunk's feet ``keep`` (static poses, sensors at the feet)."""
    keep = np.asarray(keep, bool)
    names = [f for f, k in zip(FEET, keep) if k]
    poses = np.concatenate([FOOT_POSITIONS, UPRIGHT], axis=1)[keep]
    config = load_analyzer_config({
        'effectors': names, 'contact_types': ['point'] * len(names), 'contact_source': 'static',
        'contact_positions': poses[:, :3].ravel().tolist(), 'contact_orientations': poses[:, 3:].ravel().tolist(),
        'object_com': list(com), 'sync_tolerance': 0.001, 'max_age': 0.0})
    return AnalysisEngine(config, StaticPoses(poses))


def read_out(engine: AnalysisEngine, forces: np.ndarray) -> dict:
    """Analyse one sample of foot forces (object axes = contact axes, no torques)."""
    readings = np.concatenate([forces, np.zeros_like(forces)], axis=1)[None]
    result = engine.analyze(np.array([STAMP], np.int64), readings)
    assert len(result) == 1
    return {k: np.asarray(result.values[k][0]) for k in ('resultant', 'internal_load') + PARTS}


def by_hand(forces: np.ndarray, positions: np.ndarray, com) -> np.ndarray:
    """Return the resultant about the centre of mass of point forces (statics, written out)."""
    lever = positions - np.asarray(com, float)
    return np.concatenate([forces.sum(0), np.cross(lever, forces).sum(0)])


def test_a_released_foot_is_out_of_the_read_out_and_three_feet_carry_the_trunk():
    com = FOOT_POSITIONS[1:].mean(axis=0) * [1, 1, 0]   # the centroid of rf, lh, rh
    engine = trunk_engine(com=com)
    follow = FollowedWeights(engine, ContactStates(FEET, floor=1.0))
    assert engine.check_static(FOOT_POSITIONS, UPRIGHT) is None
    assert 'lf' in ';'.join(engine.basis_names)
    assert follow.follow([0.0, 1.0, 1.0, 1.0]) is None
    third = TRUNK_MASS * GRAVITY / 3
    forces = np.array([[0.0, 0.0, 40.0], [0.0, 0.0, third], [0.0, 0.0, third], [0.0, 0.0, third]])
    out = read_out(engine, forces)   # lf reads 40 N: a foot that did not lift, not in the solve
    np.testing.assert_allclose(out['resultant'], [0, 0, TRUNK_MASS * GRAVITY, 0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(out['internal_load'], 0.0, atol=1e-9)   # statics: nothing squeezed
    for part in PARTS:
        assert not out[part][0].any(), part   # the released foot's outputs are exactly zero
    assert engine.basis_names and not any('lf' in name for name in engine.basis_names)
    states = follow.states
    assert states.observe(np.concatenate([forces, np.zeros((4, 3))], axis=1)) == [(0, 'did not lift')]
    assert "contact 'lf' did not lift" in states.conditions()[0][1]
    assert follow.values()['released'] == 'lf'


@settings(max_examples=30, deadline=None)
@given(foot=st.integers(0, 3),
       forces=st.lists(st.floats(-200.0, 200.0), min_size=12, max_size=12),
       com=st.tuples(st.floats(-0.2, 0.2), st.floats(-0.2, 0.2), st.floats(-0.1, 0.3)))
def test_weight_zero_reads_out_as_the_analyzer_without_that_foot(foot, forces, com):
    forces = np.array(forces).reshape(4, 3)
    keep = np.arange(4) != foot
    engine = trunk_engine(com=com)
    weights = keep.astype(float)
    assert FollowedWeights(engine).follow(weights) is None
    assert engine.check_static(FOOT_POSITIONS, UPRIGHT) is None
    followed = read_out(engine, forces)
    alone = trunk_engine(keep, com)
    without = read_out(alone, forces[keep])
    np.testing.assert_allclose(followed['resultant'], by_hand(forces[keep], FOOT_POSITIONS[keep], com),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(followed['resultant'], without['resultant'], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(followed['internal_load'], without['internal_load'], rtol=1e-8, atol=1e-8)
    for part in PARTS:
        np.testing.assert_allclose(followed[part][keep], without[part], rtol=1e-8, atol=1e-8)
        assert not followed[part][foot].any()
    assert engine.basis_names == alone.basis_names   # the outputs' labels: the feet in the solve


def held_trunk_engine(com) -> tuple:
    """Return an analysis engine of the trunk whose poses come from a topic (NaN rows accepted), and that source.

    Its sensors' health is checked, the set against the trunk's weight at rest (what uses
    every contact's pose besides the solver).
    """
    config = load_analyzer_config({
        'effectors': list(FEET), 'contact_types': ['point'] * 4, 'contact_source': 'topic',
        'object_com': list(com), 'sync_tolerance': 0.001, 'max_age': 0.0,
        'actual_weights_topic': 'contact_weights/actual', 'consistency_check': 'rest',
        'object_mass': TRUNK_MASS, 'gravity': [0.0, 0.0, -GRAVITY]})
    held = HeldPoses(list(FEET), config.object_frame, missing_ok=True)
    return AnalysisEngine(config, held, health=True), held


@settings(max_examples=20, deadline=None)
@given(foot=st.integers(0, 3),
       forces=st.lists(st.floats(-200.0, 200.0), min_size=12, max_size=12),
       com=st.tuples(st.floats(-0.2, 0.2), st.floats(-0.2, 0.2), st.floats(-0.1, 0.3)))
def test_a_released_foot_without_a_pose_reads_out_as_with_its_pose(foot, forces, com):
    """A lifted foot's pose may be missing (NaN, as its tracker or tf gives none).

    Released, the read-out is the one with its pose and every output is finite; carrying, the
    sample is refused and the reason names the foot.
    """
    forces = np.array(forces).reshape(4, 3)
    keep = np.arange(4) != foot
    poses = np.concatenate([FOOT_POSITIONS, UPRIGHT], axis=1)
    blind = poses.copy()
    blind[foot] = np.nan
    results = []
    for given_poses in (poses, blind):
        engine, held = held_trunk_engine(com)
        assert FollowedWeights(engine).follow(keep.astype(float)) is None
        held.add(STAMP - 1, held.check('', given_poses[:, :3], given_poses[:, 3:]))
        results.append(read_out(engine, forces))
        engine.health.settle()
    with_pose, without_pose = results
    for key, value in without_pose.items():
        assert np.isfinite(value).all(), key
        np.testing.assert_allclose(value, with_pose[key], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(without_pose['resultant'], by_hand(forces[keep], FOOT_POSITIONS[keep], com),
                               rtol=1e-9, atol=1e-9)
    engine, held = held_trunk_engine(com)   # every weight 1: the foot without a pose carries
    held.add(STAMP - 1, held.check('', blind[:, :3], blind[:, 3:]))
    readings = np.concatenate([forces, np.zeros_like(forces)], axis=1)[None]
    assert len(engine.analyze(np.array([STAMP], np.int64), readings)) == 0
    assert f'no pose of {FEET[foot]}' in engine.contact_problem


def test_weights_one_read_out_as_before():
    forces = np.array([[1.0, -2.0, 50.0], [0.5, 3.0, 40.0], [-4.0, 0.0, 60.0], [2.0, 2.0, 45.0]])
    plain, followed = trunk_engine(), trunk_engine()
    FollowedWeights(followed).follow(np.ones(4))
    a, b = read_out(plain, forces), read_out(followed, forces)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def _wrenches(sizes) -> np.ndarray:
    """Contact wrenches whose forces have the sizes given, in varied directions."""
    directions = np.array([[0.0, 0.0, 1.0], [0.6, 0.0, 0.8], [0.0, -1.0, 0.0], [0.48, 0.6, 0.64]])
    return np.concatenate([directions * np.asarray(sizes, float)[:, None], np.ones((4, 3))], axis=1)


def test_hysteresis_between_the_two_thresholds():
    states = ContactStates(FEET, floor=0.01)
    noise = np.full(4, 0.5)
    loaded, free = thresholds(noise, 0.01)
    # by hand: 6.83 sigma and half of it, from the chi-3 quantile of 1e-3 over 2.4e6 readings
    np.testing.assert_allclose(loaded, 3.414, atol=2e-3)
    np.testing.assert_allclose(free, 1.707, atol=1e-3)
    sequence = [(10.0, True), (2.5, True), (1.6, False), (2.5, False), (3.3, False), (3.5, True)]
    for size, expected in sequence:
        states.observe(_wrenches([size] * 4), noise)
        assert states.loaded.tolist() == [expected] * 4, size


def test_thresholds_hold_the_design_rate_on_simulated_noise():
    """A free sensor never reads loaded; one loaded above free + 6.14 sigma never reads free."""
    rng = np.random.default_rng(7)
    sigma = 0.8
    loaded, free = thresholds([sigma], 0.01)
    samples = 400_000
    free_force = np.linalg.norm(rng.normal(0.0, sigma, (samples, 3)), axis=1)
    assert (free_force > loaded[0]).sum() == 0
    assert (free_force < free[0]).mean() > 0.98          # a free contact is seen free at once
    carried = np.array([0.0, 0.0, free[0] + 6.2 * sigma])
    loaded_force = np.linalg.norm(carried + rng.normal(0.0, sigma, (samples, 3)), axis=1)
    assert (loaded_force < free[0]).sum() == 0


def test_unknown_noise_uses_the_floor():
    loaded, free = thresholds([np.nan, 0.0, 0.01, 2.0], 1.5)
    np.testing.assert_allclose(loaded[:3], 1.5)
    assert loaded[3] > 13.0 and free[3] == pytest.approx(loaded[3] / 2)


def _step(follow, weights, sizes) -> list:
    follow.follow(weights)
    return follow.states.observe(_wrenches(sizes), np.zeros(4))


def test_findings_against_the_commanded_weights():
    engine = trunk_engine()
    follow = FollowedWeights(engine, ContactStates(FEET, floor=2.0))
    carrying = [60.0, 60.0, 60.0, 60.0]
    assert _step(follow, np.ones(4), carrying) == []
    assert _step(follow, [0.5, 1, 1, 1], [30.0, 60, 60, 60]) == []        # in transition: not judged
    assert _step(follow, [0.0, 1, 1, 1], [0.5, 60, 60, 60]) == []         # lifted as commanded
    assert _step(follow, [0.0, 1, 1, 1], [25.0, 60, 60, 60]) == [(0, 'early touchdown')]
    assert _step(follow, [0.0, 1, 1, 1], [0.2, 60, 60, 60]) == []
    assert _step(follow, [0.0, 1, 1, 1], [0.2, 60, 0.1, 60]) == [(2, 'lost contact')]
    assert follow.states.counters['contact_state_faults'] == 2
    assert len(follow.states.conditions()) == 1 and 'lh' in follow.states.conditions()[0][1]
    # a foot released while still loaded and never lifted; one raised that never touches down
    assert _step(follow, [1.0, 0, 1, 1], [0.2, 60, 60, 60]) == [(0, 'did not touch down'), (1, 'did not lift')]
    values = follow.states.values()
    assert values['measured_contact_states'] == 'lf: free, rf: loaded, lh: loaded, rh: loaded'
    assert values['commanded_contact_states'] == 'lf: carrying, rf: released, lh: carrying, rh: carrying'


@pytest.mark.parametrize('labels, values, why', [
    (None, [0.0, 1, 1, 1], 'no layout label'),
    (['lf', 'xx'], [0.0, 1.0], 'each label must be one of'),
    (list(FEET), [np.nan, 1, 1, 1], 'NaN'),
    (list(FEET), [1.5, 1, 1, 1], 'must be in [0, 1]'),
    (list(FEET), [0.0, 0, 0, 0], 'every weight 0'),
])
def test_bad_weights_are_refused_and_the_weights_stay(labels, values, why):
    engine = trunk_engine()
    follow = FollowedWeights(engine)
    assert follow.offer(['rf'], [0.0]) is None
    basis = list(engine.basis_names)
    message = follow.offer(labels, values)
    assert message is not None and why in message and message.startswith('contact weights not followed')
    np.testing.assert_array_equal(follow.weights, [1.0, 0.0, 1.0, 1.0])
    assert engine.basis_names == basis and follow.counters['refused_weights'] == 1
    assert follow.values()['last_refused_weights'] == message


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.lists(st.floats(0.0, 30.0), min_size=4, max_size=4), min_size=1, max_size=12),
       noise=st.lists(st.floats(0.0, 2.0), min_size=4, max_size=4), scale=st.floats(1e-3, 1e3),
       angles=st.tuples(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0), st.floats(-3.0, 3.0)))
def test_states_depend_on_the_force_size_only_in_any_unit(sizes, noise, scale, angles):
    """Rotating every force, or changing the force unit with the noise and the floor, changes no state."""
    rotation = Rotation.from_euler('xyz', angles)
    loaded, free = thresholds(noise, 1.0)
    for limit in (loaded, free):  # rounding decides a size at a threshold itself: not a property
        assume(np.all(np.abs(np.asarray(sizes) - limit) > 1e-6 * (1.0 + limit)))
    plain, turned, scaled = (ContactStates(FEET, floor=f) for f in (1.0, 1.0, scale))
    for row in sizes:
        wrenches = _wrenches(row)
        moved = wrenches.copy()
        moved[:, :3] = rotation.apply(wrenches[:, :3])
        plain.observe(wrenches, np.array(noise))
        turned.observe(moved, np.array(noise))
        scaled.observe(wrenches * scale, np.array(noise) * scale)
        assert plain.loaded.tolist() == turned.loaded.tolist() == scaled.loaded.tolist()
        # hysteresis: a contact is loaded above the loaded threshold and free below the free one
        force = np.asarray(row)
        assert plain.loaded[force > loaded].all() and not plain.loaded[force < free].any()


def test_a_held_tare_puts_the_weight_on_the_feet_that_carry_and_refuses_a_window_they_changed_in():
    """Live (``~/tare``): lf lifted, each other foot carries a third; then lf returns within the window."""
    com = FOOT_POSITIONS[1:].mean(axis=0) * [1, 1, 0]   # the centroid of rf, lh, rh
    poses = np.concatenate([FOOT_POSITIONS, UPRIGHT], axis=1)
    config = load_analyzer_config({
        'effectors': list(FEET), 'contact_types': ['point'] * 4, 'contact_source': 'static',
        'contact_positions': FOOT_POSITIONS.ravel().tolist(), 'contact_orientations': UPRIGHT.ravel().tolist(),
        'object_com': com.tolist(), 'object_mass': TRUNK_MASS, 'sync_tolerance': 0.001, 'max_age': 0.0})
    engine = AnalysisEngine(config, StaticPoses(poses))
    follow = FollowedWeights(engine, ContactStates(FEET, floor=1.0))
    assert engine.check_static(FOOT_POSITIONS, UPRIGHT) is None
    assert follow.follow([0.0, 1.0, 1.0, 1.0]) is None
    engine.record_tare(TareWindow(8))
    biases = np.random.default_rng(3).uniform(-2.0, 2.0, (4, 6))
    third = TRUNK_MASS * GRAVITY / 3
    readings = np.array([[0.0, 0.0, 0.0, 0, 0, 0]] + [[0.0, 0.0, third, 0, 0, 0]] * 3) + biases
    for j in range(8):
        assert len(engine.analyze(np.array([STAMP + j * 2_000_000], np.int64), readings[None])) == 1
    found, _, count = engine.tare('held')
    assert count == 8
    np.testing.assert_allclose(found, biases, atol=1e-9)   # lf's bias from its sensor alone
    assert follow.follow([1.0, 1.0, 1.0, 1.0]) is None
    assert len(engine.analyze(np.array([STAMP + 8 * 2_000_000], np.int64), readings[None])) == 1
    with pytest.raises(ValueError, match=r'the contact weights changed within the tare window \(at the sample '
                                         r'stamped 1\.016000 s, from 0, 1, 1, 1 to 1, 1, 1, 1\)'):
        engine.tare('held')
    np.testing.assert_allclose(engine.tare('free')[0], readings, atol=1e-9)  # free: no weight to place
