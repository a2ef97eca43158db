"""The distribution engine with contact weights, without ROS (docs/legs_and_hands.md).

References are independent of the weights' code: the resultant of the commands by hand, the
commands of an engine built without the released contacts (what weight 0 must equal) and with
every contact (weight 1), and the ramp's bound written out here: with one contact moving the
commands are ``w c_with + (1 - w) c_without`` (docs/theory.md, 16.4), so a tick that moves the
weight by ``dt / T`` moves each command by at most ``|c_with - c_without| dt / T``.
"""
from hypothesis import given
from hypothesis import strategies as st
import numpy as np
import pytest
from test_distribution_engine import grasps, resultant as resultant_as_sent, SETTINGS

from legs_fixtures import (
    FEET, finger_pose, FOOT_POSITIONS, resultant, shifted_feet, started_engine, subset_commands, trunk_params,
    UPRIGHT, weight_support,
)
from wrench_distribution.config import changed_config, load_distributor_config
from wrench_distribution.engine.cache import check_poses
from wrench_distribution.engine.distribution import DistributionEngine
from wrench_distribution.engine.poses import HeldPoses

TICK = 2_000_000  # 500 Hz
TRANSITION = 0.1  # s: 50 ticks


class Clock:
    """Desired wrenches at 500 Hz on one engine, the stamps as the node would give them."""

    def __init__(self, engine) -> None:
        self.engine, self.t = engine, 0

    def tick(self, wrench=np.zeros(6)):
        self.t += TICK
        return self.engine.step(self.t, wrench, 0, self.t)


def ramp(clock, ticks: int) -> list:
    """Run ``ticks`` desired wrenches; return ``(weights, commands)`` of each (commands never None)."""
    out = []
    for _ in range(ticks):
        outcome = clock.tick()
        assert outcome.commands is not None, outcome.message
        out.append((clock.engine.contact_weights.copy(), outcome.commands.copy()))
    return out


@pytest.mark.parametrize('foot', range(4))
def test_each_foot_leaves_and_returns_within_the_ramp_with_the_resultant_exact(foot):
    positions = shifted_feet(foot)
    params = trunk_params(contact_transition_time=TRANSITION)
    engine = started_engine(params, positions, UPRIGHT)
    clock = Clock(engine)
    before = clock.tick().commands
    with_foot = subset_commands(params, positions, UPRIGHT, np.ones(4, bool))
    without = subset_commands(params, positions, UPRIGHT, np.arange(4) != foot)
    np.testing.assert_allclose(before, with_foot, rtol=1e-9, atol=1e-9)  # weights 1: today's output
    span = np.abs(with_foot - without)
    assert span.max() > 1.0  # the foot carries something: the ramp has something to move
    target = np.ones(4)
    target[foot] = 0.0
    assert engine.offer_weights(list(FEET), target) is None
    run = ramp(clock, 60)
    assert engine.offer_weights([FEET[foot]], [1.0]) is None
    run += ramp(clock, 60)
    previous_weights, previous = np.ones(4), before
    size = np.linalg.norm(weight_support())
    for weights, commands in run:
        step = abs(weights[foot] - previous_weights[foot])
        assert step <= TICK * 1e-9 / TRANSITION + 1e-12
        np.testing.assert_array_equal(np.delete(weights, foot), 1.0)
        assert np.linalg.norm(resultant(commands, positions, params['object_com']) - weight_support()) <= 1e-6 * size
        assert np.all(np.abs(commands - previous) <= span * step * (1 + 1e-9) + 1e-9 * size)
        if weights[foot] == 0.0:
            np.testing.assert_array_equal(commands[foot], 0.0)  # exactly zero, released
            np.testing.assert_allclose(commands, without, rtol=1e-9, atol=1e-9 * size)
        assert np.count_nonzero(np.abs(commands[:, 2]) > 1.0) >= 3  # nothing zeroes all feet
        previous_weights, previous = weights, commands
    assert any(w[foot] == 0.0 for w, _ in run)
    np.testing.assert_array_equal(run[-1][0], 1.0)
    np.testing.assert_allclose(run[-1][1], with_foot, rtol=1e-9, atol=1e-9 * size)


def test_a_release_the_remaining_feet_cannot_carry_is_refused_with_its_reason_and_changes_nothing():
    positions = FOOT_POSITIONS + [0.02, 0.01, 0.0]  # the centre of mass toward rh: off the lf-less triangle
    params = trunk_params()
    engine = started_engine(params, positions, UPRIGHT)
    clock = Clock(engine)
    before = clock.tick().commands
    refusal = engine.offer_weights(['rh'], [0.0])
    assert refusal is not None and 'pushing only' in refusal.message and 'rh' in refusal.message
    for _ in range(10):  # friction's auto mode solves again at every tick: equal to rounding
        np.testing.assert_allclose(clock.tick().commands, before, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(engine.contact_weights, 1.0)
    report = engine.report(0)
    assert report.values['contact_weight_targets'] == '1, 1, 1, 1'
    assert report.counters['refused_weight_changes'] == 1
    assert any('pushing only' in text for _, text in report.conditions['contacts'])
    with pytest.raises(ValueError, match="parameter 'contact_weights'.*pushing only.*stay"):
        engine.plan(changed_config(engine.config, {'contact_weights': [1.0, 1.0, 1.0, 0.0]}))
    for message in (['rh', 'rh'], ['xx']):  # a repeated or unknown label
        assert engine.offer_weights(message, [0.5] * len(message)) is not None
    assert engine.offer_weights(None, [1.0, 1.0, 1.0, 0.0]) is not None  # unlabelled
    assert engine.offer_weights(list(FEET), [0.0] * 4) is not None  # nothing would carry it
    np.testing.assert_allclose(clock.tick().commands, before, rtol=1e-9, atol=1e-9)


def test_a_runtime_parameter_sets_the_targets_and_the_ramp_follows():
    positions = shifted_feet(2)
    engine = started_engine(trunk_params(contact_transition_time=TRANSITION), positions, UPRIGHT)
    clock = Clock(engine)
    clock.tick()
    engine.adopt(engine.plan(changed_config(engine.config, {'contact_weights': [1.0, 1.0, 0.0, 1.0]})), 0)
    run = ramp(clock, 10)
    np.testing.assert_allclose(run[-1][0], [1.0, 1.0, 1.0 - 10 * TICK * 1e-9 / TRANSITION, 1.0])
    assert engine.report(0).values['contact_weights_source'] == 'parameter'
    with pytest.raises(Exception, match='contact_transition_time'):  # only slower at runtime
        changed_config(engine.config, {'contact_transition_time': TRANSITION / 2})


def test_the_hold_on_timeout_carries_the_weight_on_the_feet_in_the_solve():
    positions = shifted_feet(1)
    params = trunk_params(contact_weights=[1.0, 0.0, 1.0, 1.0], input_timeout=0.01)
    engine = started_engine(params, positions, UPRIGHT)
    Clock(engine).tick()
    outcome = engine.tick(10 ** 9, 10 ** 9)
    assert outcome.cause == 'timeout' and "holding the object's weight" in outcome.message
    held = outcome.commands
    assert held is not None
    np.testing.assert_array_equal(held[1], 0.0)
    size = np.linalg.norm(weight_support())
    assert np.linalg.norm(resultant(held, positions, params['object_com']) - weight_support()) <= 1e-6 * size
    assert np.all(held[[0, 2, 3], 2] > 1.0)
    np.testing.assert_allclose(held, subset_commands(params, positions, UPRIGHT, [True, False, True, True]),
                               rtol=1e-9, atol=1e-9 * size)
    later = engine.tick(2 * 10 ** 9, 2 * 10 ** 9)  # every later check keeps holding
    np.testing.assert_allclose(later.commands, held, rtol=1e-12, atol=1e-12 * size)


def test_hold_on_timeout_keeps_the_command_limits():
    positions = shifted_feet(0)
    engine = started_engine(trunk_params(input_timeout=0.01), positions, UPRIGHT)
    Clock(engine).tick()
    engine.adopt(engine.plan(changed_config(engine.config, {'force_limits': [40.0]})), 0)  # m g / 4 = 49 N
    outcome = engine.tick(10 ** 9, 10 ** 9)
    assert outcome.commands is not None
    assert np.linalg.norm(outcome.commands[:, :3], axis=1).max() <= 40.0 * (1 + 1e-12)
    assert np.all(outcome.commands[:, 2] > 0.0)


def test_a_released_foot_without_a_pose_does_not_stall_the_others():
    positions = shifted_feet(3)
    params = trunk_params(contact_weights=[1.0, 1.0, 1.0, 0.0])
    engine = started_engine(params, positions, UPRIGHT)
    clock = Clock(engine)
    first = clock.tick().commands
    moved = positions + [0.01, 0.0, 0.0]
    missing = moved.copy()
    missing[3] = np.nan
    update = engine.offer_contacts(missing, np.where(np.isnan(missing[:, :1]), np.nan, UPRIGHT), 0)
    assert update.refusal is None and update.rebuilt
    commands = clock.tick().commands
    np.testing.assert_array_equal(commands[3], 0.0)
    assert not np.allclose(commands, first)  # the other feet's new poses are used
    size = np.linalg.norm(weight_support())
    assert np.linalg.norm(resultant(commands, moved, params['object_com']) - weight_support()) <= 1e-6 * size
    gone = moved.copy()
    gone[0] = np.nan  # a foot of weight 1 without a pose: refused, the poses in force stay
    update = engine.offer_contacts(gone, UPRIGHT, 0)
    assert update.refusal is not None and 'lf' in update.refusal.message
    np.testing.assert_allclose(clock.tick().commands, commands, rtol=1e-12, atol=1e-12 * size)
    assert engine.offer_weights(['rh'], [1.0]) is None  # it returns where it was last seen


def test_the_pose_array_of_the_distributor_takes_nan_for_a_released_contact_and_names_the_count():
    held = HeldPoses(list(FEET), 'trunk', missing_ok=True)
    positions, quaternions = FOOT_POSITIONS.copy(), UPRIGHT * 2.0
    positions[1] = np.nan
    quaternions[1] = np.nan
    pose = held.check('trunk', positions, quaternions)
    assert np.isnan(pose[1]).all() and np.allclose(np.linalg.norm(pose[[0, 2, 3], 3:], axis=1), 1.0)
    with pytest.raises(ValueError, match="expected 4 contact poses .*released contact's may be NaN.*got 3"):
        held.check('trunk', FOOT_POSITIONS[:3], UPRIGHT[:3])
    with pytest.raises(ValueError, match='NaN'):  # the analyzer's (and any other) stays strict
        HeldPoses(list(FEET), 'trunk').check('trunk', positions, quaternions)
    with pytest.raises(ValueError, match='NaN or Inf'):
        check_poses(np.where(np.isnan(positions), np.inf, positions), UPRIGHT, FEET, missing_ok=True)


def test_lowering_a_limit_leaves_on_limit_hold_something_to_hold():
    positions = shifted_feet(0)
    params = trunk_params(on_limit='hold')
    engine = started_engine(params, positions, UPRIGHT)
    clock = Clock(engine)
    good = clock.tick().commands
    top = np.linalg.norm(good[:, :3], axis=1).max()
    engine.adopt(engine.plan(changed_config(engine.config, {'force_limits': [0.5 * top]})), 0)
    outcome = clock.tick()
    assert outcome.cause == 'limit' and outcome.commands is not None
    held = outcome.commands
    assert np.linalg.norm(held[:, :3], axis=1).max() <= 0.5 * top * (1 + 1e-12)
    np.testing.assert_allclose(held, good * 0.5, rtol=1e-6)  # the same split, scaled into the limit
    assert np.all(held[:, 2] > 0.0)


def test_weights_ramp_on_the_stamps_and_a_pause_is_no_jump():
    positions = shifted_feet(0)
    engine = started_engine(trunk_params(contact_transition_time=TRANSITION), positions, UPRIGHT)
    clock = Clock(engine)
    clock.tick()
    engine.offer_weights(['lf'], [0.0])
    clock.tick()
    clock.t += 10 ** 9  # a second without desired wrenches
    clock.tick()
    assert engine.contact_weights[0] >= 1.0 - 2 * 0.1 / TRANSITION - 1e-12  # at most 100 ms counted


def hand_params(**extra) -> tuple:
    """Return a ball (0.5 kg) in three fingertips at 0, 90 and 180 degrees on its equator, friction auto."""
    poses = [finger_pose(angle, 0.04) for angle in (0.0, np.pi / 2, np.pi)]
    positions = np.array([p for p, _ in poses])
    quaternions = np.array([q for _, q in poses])
    params = {'effectors': ['thumb', 'index', 'middle'], 'contact_source': 'topic',
              'contact_types': ['point'] * 3, 'object_com': [0.0, 0.0, 0.0], 'command_frame': 'contact',
              'friction_mode': 'auto', 'friction_coefficients': [0.8] * 3, 'friction_margin': 0.1,
              'contact_normals': [0.0, 0.0, 1.0] * 3, 'hold_object_weight': True, 'object_mass': 0.5,
              'gravity': [0.0, 0.0, -9.81], 'force_limits': [100.0], 'torque_limits': [10.0],
              'desired_force_limit': 100.0, 'desired_torque_limit': 10.0, 'internal_load_limit': 100.0,
              'contact_transition_time': TRANSITION}
    params.update(extra)
    return params, positions, quaternions


def test_a_finger_leaves_a_ball_with_friction_auto_recomputed_at_every_tick():
    params, positions, quaternions = hand_params()
    engine = started_engine(params, positions, quaternions)
    clock = Clock(engine)
    clock.tick()
    assert engine.offer_weights(['index'], [0.0]) is None
    run = ramp(clock, 60)
    from scipy.spatial.transform import Rotation
    rotations = Rotation.from_quat(quaternions)
    support = np.array([0.0, 0.0, 0.5 * 9.81, 0.0, 0.0, 0.0])
    released = False
    for weights, commands in run:  # contact frames: z is the inward normal
        normal, tangent = commands[:, 2], np.linalg.norm(commands[:, :2], axis=1)
        carrying = weights > 0.0
        assert np.all(tangent[carrying] <= 0.9 * 0.8 * normal[carrying] * (1 + 1e-9) + 1e-9)
        axes = np.hstack([rotations.apply(commands[:, :3]), rotations.apply(commands[:, 3:])])
        np.testing.assert_allclose(resultant(axes, positions, [0, 0, 0]), support, atol=1e-6 * 5)
        if weights[1] == 0.0:
            released = True
            np.testing.assert_array_equal(commands[1], 0.0)
    assert released
    # two opposed fingers hold it by friction alone: the squeeze auto mode added
    assert run[-1][1][0, 2] >= 0.5 * 9.81 / (2 * 0.9 * 0.8) * (1 - 1e-9)


def test_a_box_is_handed_over_from_two_arms_to_the_next_pair():
    """Weights 1, 1, 0 to 0, 1, 1 at once: both move, the resultant stays exact, the bound holds."""
    positions = np.array([[0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [-0.2, 0.0, 0.0]])
    quaternions = np.tile([0.0, 0.0, 0.0, 1.0], (3, 1))
    params = {'effectors': ['a', 'b', 'c'], 'contact_source': 'topic', 'contact_types': ['rigid'] * 3,
              'object_com': [0.01, 0.02, 0.0], 'command_frame': 'object', 'contact_weights': [1.0, 1.0, 0.0],
              'force_limits': [1e4], 'torque_limits': [1e3], 'desired_force_limit': 1e3,
              'desired_torque_limit': 1e3, 'internal_load_limit': 1e3, 'contact_transition_time': TRANSITION}
    wrench = np.array([1.0, -2.0, 30.0, 0.3, -0.2, 0.1])
    engine = started_engine(params, positions, quaternions)
    clock = Clock(engine)
    corners = {mask: subset_commands(params, positions, quaternions, mask, wrench)
               for mask in ((1, 1, 1), (1, 1, 0), (0, 1, 1))}
    alone = np.zeros((3, 6))  # b alone carries it all: the wrench moved to its point, by hand
    alone[1, :3] = wrench[:3]
    alone[1, 3:] = wrench[3:] - np.cross(positions[1] - params['object_com'], wrench[:3])
    corners[(0, 1, 0)] = alone
    first = clock.tick(wrench).commands
    np.testing.assert_allclose(first, corners[(1, 1, 0)], rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(first[2], 0.0)
    assert engine.offer_weights(['a', 'c'], [0.0, 1.0]) is None
    # bilinear in (w_a, w_c): |dc/dw_a| and |dc/dw_c| are at most their largest edge
    slope_a = np.maximum(np.abs(corners[(1, 1, 1)] - corners[(0, 1, 1)]), np.abs(corners[(1, 1, 0)] - alone))
    slope_c = np.maximum(np.abs(corners[(1, 1, 1)] - corners[(1, 1, 0)]), np.abs(corners[(0, 1, 1)] - alone))
    previous, previous_weights = first, np.array([1.0, 1.0, 0.0])
    for _ in range(60):
        commands = clock.tick(wrench).commands
        weights = engine.contact_weights.copy()
        step = np.abs(weights - previous_weights)
        assert step.max() <= TICK * 1e-9 / TRANSITION + 1e-12
        np.testing.assert_allclose(resultant(commands, positions, params['object_com']), wrench, atol=1e-6 * 31)
        assert np.all(np.abs(commands - previous) <= slope_a * step[0] + slope_c * step[2] + 1e-9)
        previous, previous_weights = commands, weights
    np.testing.assert_array_equal(previous_weights, [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(previous[0], 0.0)
    np.testing.assert_allclose(previous, corners[(0, 1, 1)], rtol=1e-9, atol=1e-9)


@SETTINGS
@given(grasps(max_contacts=5), st.data())
def test_weight_zero_is_the_grasp_without_the_contact_and_weight_one_is_today(grasp, data):
    """Any geometry, unit, torque share, frame and sign: the engine's commands at weights 0 and 1."""
    params, rng = grasp
    n = len(params['effectors'])
    released = data.draw(st.integers(0, n - 1))
    positions = np.reshape(params['contact_positions'], (n, 3))
    quaternions = np.reshape(params['contact_orientations'], (n, 4))
    wrench = rng.normal(size=6) * 10.0
    plain = started_engine(params, positions, quaternions).step(0, wrench, 0, 0)
    ones = started_engine(dict(params, contact_weights=[1.0] * n), positions, quaternions).step(0, wrench, 0, 0)
    assert (plain.commands is None) == (ones.commands is None)
    if plain.commands is not None:
        np.testing.assert_array_equal(ones.commands, plain.commands)
    weights = [0.0 if k == released else 1.0 for k in range(n)]
    outcome = started_engine(dict(params, contact_weights=weights), positions, quaternions).step(0, wrench, 0, 0)
    if n == 2 or outcome.commands is None:
        return  # one contact left, or the others cannot produce this wrench (refused, nothing sent)
    commands = outcome.commands
    np.testing.assert_array_equal(commands[released], 0.0)
    scale = max(1.0, np.abs(commands).max()) * max(1.0, np.abs(positions).max())
    np.testing.assert_allclose(resultant_as_sent(params, commands), wrench, atol=1e-7 * scale)
    keep = np.arange(n) != released
    cut = dict(params, effectors=[e for e, k in zip(params['effectors'], keep) if k],
               contact_types=[t for t, k in zip(params['contact_types'], keep) if k],
               contact_positions=positions[keep].reshape(-1).tolist(),
               contact_orientations=quaternions[keep].reshape(-1).tolist())
    reference = started_engine(cut, positions[keep], quaternions[keep]).step(0, wrench, 0, 0).commands
    np.testing.assert_allclose(commands[keep], reference, rtol=1e-7, atol=1e-7 * scale)


@pytest.mark.parametrize('policy', ['hold_object_weight', 'zero'])
def test_a_deactivation_holds_the_weight_of_a_standing_robot(policy):
    positions = shifted_feet(2)
    params = trunk_params(contact_weights=[1.0, 1.0, 0.0, 1.0], on_timeout=policy)
    engine = started_engine(params, positions, UPRIGHT)
    Clock(engine).tick()
    stop = engine.stop()
    if policy == 'zero':
        np.testing.assert_array_equal(stop.commands, 0.0)
        return
    size = np.linalg.norm(weight_support())
    np.testing.assert_array_equal(stop.commands[2], 0.0)
    assert np.linalg.norm(resultant(stop.commands, positions, params['object_com']) - weight_support()) <= 1e-6 * size
    assert "hold the object's weight" in stop.message


def test_a_contact_never_seen_cannot_return_until_its_pose_comes():
    positions = shifted_feet(3)
    engine = DistributionEngine(load_distributor_config(trunk_params(contact_weights=[1.0, 1.0, 1.0, 0.0])))
    unseen = positions.copy()
    unseen[3] = np.nan
    quaternions = UPRIGHT.copy()
    quaternions[3] = np.nan
    assert engine.offer_contacts(unseen, quaternions, 0).refusal is None
    clock = Clock(engine)
    assert clock.tick().commands is not None
    refusal = engine.offer_weights(['rh'], [1.0])
    assert refusal is not None and 'no pose of rh' in refusal.message
    np.testing.assert_array_equal(engine.contact_weights, [1.0, 1.0, 1.0, 0.0])
    assert engine.offer_contacts(positions, UPRIGHT, 0).refusal is None
    assert engine.offer_weights(['rh'], [1.0]) is None


def test_the_ramp_tick_benchmark_runs_each_ramp_in_its_transition_time():
    """benchmarks/bench_ramp_ticks.py end to end: 0.1 s ramps at 500 Hz are 50 ticks each (no timing asserted)."""
    import importlib.util
    from pathlib import Path

    from ros_harness import REPO
    spec = importlib.util.spec_from_file_location('bench_ramp_ticks', Path(REPO) / 'benchmarks' / 'bench_ramp_ticks.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = module.measure()
    assert figures['ticks'] == module.RAMPS * round(0.1 / 0.002)
    assert figures['ramp_us'] > 0 and figures['steady_us'] > 0
