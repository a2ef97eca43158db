"""The distribution engine without ROS: properties of what it sends.

References are derived here: the resultant of the commands by hand (``F = sum f_i``,
``T = sum t_i + (p_i - c) x f_i``, contact-frame commands rotated with scipy's ``Rotation``),
norms by hand, the normal force as ``n . f`` in the contact frame.
"""
from hypothesis import assume, given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from wrench_distribution.config import load_distributor_config, validate_params
from wrench_distribution.engine.distribution import DistributionEngine

SETTINGS = settings(deadline=None, max_examples=60,
                    suppress_health_check=[HealthCheck.too_slow])
MS = 1_000_000


@st.composite
def grasps(draw, max_contacts=5):
    """Draw a grasp as distributor parameters: degenerate layouts, CoM off the hull, any unit."""
    n = draw(st.integers(2, max_contacts))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    unit = draw(st.sampled_from([0.001, 1.0, 1000.0]))  # km, m, mm
    layout = draw(st.sampled_from(['general', 'collinear', 'coplanar', 'nearly_coincident']))
    positions = rng.normal(size=(n, 3)) * 0.3
    if layout == 'collinear':
        positions = np.outer(rng.normal(size=n), rng.normal(size=3)) + rng.normal(size=3) * 0.1
    elif layout == 'coplanar':
        positions[:, 2] = 0.0
    elif layout == 'nearly_coincident':
        positions[-1] = positions[0] + rng.normal(size=3) * 1e-4
    com = positions.mean(0) + rng.normal(size=3) * draw(st.sampled_from([0.0, 0.1, 1.0]))
    quats = rng.normal(size=(n, 4))
    quats /= np.linalg.norm(quats, axis=1)[:, None]
    params = {
        'effectors': [f'e{i}' for i in range(n)], 'contact_source': 'static',
        'contact_types': [draw(st.sampled_from(['rigid', 'point'])) for _ in range(n)],
        'contact_positions': (positions * unit).reshape(-1).tolist(),
        'contact_orientations': quats.reshape(-1).tolist(),
        'object_com': (com * unit).tolist(),
        'torque_share': draw(st.sampled_from([0.0, 0.5, 1.0])),
        'command_frame': draw(st.sampled_from(['object', 'contact'])),
        'command_sign': draw(st.sampled_from([1, -1])),
        'friction_mode': 'off', 'internal_load_feedback': True,
        'force_limits': [1e8], 'torque_limits': [1e8], 'internal_load_limit': 1e8,
        'feedback_correction_limit': 1e6, 'feedback_integral_limit': 1e6,
        'feedback_kp': [1.0], 'feedback_ki': [0.0],
    }
    return params, rng


def engine_for(params):
    engine = DistributionEngine(load_distributor_config(params))
    n = len(params['effectors'])
    update = engine.offer_contacts(np.reshape(params['contact_positions'], (n, 3)),
                                   np.reshape(params['contact_orientations'], (n, 4)), 0)
    assert update.rebuilt and update.refusal is None
    return engine


def resultant(params, commands):
    """Resultant about the CoM in the object frame of commands as published (by hand)."""
    n = len(params['effectors'])
    c = np.asarray(commands, float) * params['command_sign']
    if params['command_frame'] == 'contact':
        rot = Rotation.from_quat(np.reshape(params['contact_orientations'], (n, 4)))
        c = np.hstack([rot.apply(c[:, :3]), rot.apply(c[:, 3:])])
    lever = np.reshape(params['contact_positions'], (n, 3)) - np.asarray(params['object_com'])
    return np.concatenate([c[:, :3].sum(0), c[:, 3:].sum(0) + np.cross(lever, c[:, :3]).sum(0)])


def impose_correction(engine, correction, t_ns=0):
    """Drive the PI law (kp = 1, ki = 0) to a given correction through two measurements."""
    names = engine.cache.distributor.basis_names
    reference = engine.reference()
    engine.offer_measurement(names, reference, t_ns)             # e = 0: bumpless seed
    engine.offer_measurement(names, reference - correction, t_ns + MS)  # e = correction
    return t_ns + MS


@SETTINGS
@given(grasps(), st.data())
def test_correction_leaves_the_resultant_untouched_for_every_element(grasp, data):
    params, rng = grasp
    engine = engine_for(params)
    names = engine.cache.distributor.basis_names
    wrench = rng.normal(size=6) * 10.0
    open_loop = engine.step(0, wrench, 0, 0)
    if open_loop.cause in ('unrealisable', 'rejected'):
        return  # the grasp cannot produce this wrench: nothing is sent, nothing to test
    assert open_loop.valid
    for j in range(len(names)):  # every basis element, alone, with either sign
        value = data.draw(st.sampled_from([-30.0, 0.5, 250.0]))
        t = impose_correction(engine, np.eye(len(names))[j] * value, 10 * MS * (j + 1))
        closed = engine.step(0, wrench, 0, t)
        assert closed.valid
        scale = max(1.0, np.abs(closed.commands).max())
        np.testing.assert_allclose(resultant(params, closed.commands), wrench,
                                   atol=1e-9 * scale * max(1.0, *np.abs(params['contact_positions'])))
        # the correction is really applied: the read-out sees it in its element, only there
        sent = closed.commands * params['command_sign']
        if params['command_frame'] == 'object':
            sent = np.vstack([np.concatenate([r.inv().apply(row[:3]), r.inv().apply(row[3:])])
                              for r, row in zip(Rotation.from_quat(np.reshape(
                                  params['contact_orientations'], (-1, 4))), sent)])
        read = engine.cache.distributor.analyze(sent).internal_load
        expected = np.eye(len(names))[j] * value
        np.testing.assert_allclose(read, expected, atol=1e-6 * max(1.0, abs(value)))


@SETTINGS
@given(grasps(max_contacts=4), st.sampled_from(['hold', 'zero', 'scale']),
       st.floats(1.0, 200.0), st.floats(-1e6, 1e6))
def test_no_command_beyond_a_limit_whatever_the_correction(grasp, policy, limit, correction):
    params, rng = grasp
    params = dict(params, force_limits=[limit], torque_limits=[limit / 2], on_limit=policy,
                  internal_load_limit=1e6)
    engine = engine_for(params)
    m = len(engine.cache.distributor.basis_names)
    t = impose_correction(engine, rng.normal(size=m) * correction)
    for k in range(5):
        out = engine.step(0, rng.normal(size=6) * 10.0 ** k, 0, t).commands
        if out is None:
            continue
        assert np.all(np.isfinite(out))
        assert np.all(np.linalg.norm(out[:, :3], axis=1) <= limit)
        assert np.all(np.linalg.norm(out[:, 3:], axis=1) <= limit / 2)


def test_feedback_is_cut_back_not_the_command_set():
    # two grippers 0.6 m apart; 30 N force limit: a 40 N squeeze correction does not fit
    params = {'effectors': ['l', 'r'], 'contact_source': 'static', 'command_frame': 'object',
              'contact_positions': [0, 0.3, 0, 0, -0.3, 0], 'force_limits': [30.0],
              'internal_load_feedback': True, 'feedback_kp': [1.0], 'feedback_ki': [0.0],
              'feedback_correction_limit': 100.0}
    params['contact_orientations'] = [0, 0, 0, 1] * 2
    engine = engine_for(params)
    m = len(engine.cache.distributor.basis_names)
    t = impose_correction(engine, np.eye(m)[0] * 40.0)
    out = engine.step(0, [0, 0, 10.0, 0, 0, 0], 0, t)
    assert out.valid  # the desired wrench is served; only the correction was limited
    assert np.all(np.linalg.norm(out.commands[:, :3], axis=1) <= 30.0)
    assert np.linalg.norm(out.commands[:, :3], axis=1).max() > 29.0  # as close as allowed
    np.testing.assert_allclose(out.commands[:, 2].sum(), 10.0, atol=1e-9)
    assert 0.0 < engine.internal.applied_correction[0] < 40.0


# -- defect (a): friction is checked on the commands sent -------------------------------------
def test_scaled_commands_are_the_ones_checked_against_friction():
    # two fingertips pinching along y, object frame commands, a squeeze of 40 N over a
    # desired force limit: under on_limit scale everything is scaled, so must the check be
    params = {'effectors': ['a', 'b'], 'contact_types': ['point', 'point'],
              'contact_source': 'static', 'contact_positions': [0, 0.05, 0, 0, -0.05, 0],
              # contact z axes point into the object (the pushing direction)
              'contact_orientations': [0.7071067811865476, 0, 0, 0.7071067811865476,
                                       -0.7071067811865476, 0, 0, 0.7071067811865476],
              'friction_coefficients': [0.5, 0.5], 'friction_mode': 'check',
              'command_frame': 'object', 'on_limit': 'scale', 'desired_force_limit': 3.0,
              'internal_load_handles': ['squeeze(a,b)=40']}
    engine = engine_for(params)
    out = engine.step(0, [0.0, 0.0, 9.0, 0, 0, 0], 0, 0)
    assert out.cause == 'limit' and out.commands is not None
    rot = Rotation.from_quat(np.reshape(params['contact_orientations'], (2, 4)))
    normal_by_hand = [r.inv().apply(f)[2] for r, f in zip(rot, out.commands[:, :3])]
    np.testing.assert_allclose(engine.friction.check.normal_force, normal_by_hand, atol=1e-9)
    assert max(normal_by_hand) < 40.0 / 3.0 + 1e-6  # the squeeze was scaled by 3/9


def test_auto_load_reported_is_the_one_sent_when_commands_are_scaled():
    # the same pinch lifting 9 N with friction in auto mode: auto adds the squeeze that keeps
    # the 4.5 N of tangential force per finger inside the cones, then a command force limit
    # scales the whole set; the added load reported (friction_load_topic) must be the one sent
    params = {'effectors': ['a', 'b'], 'contact_types': ['point', 'point'],
              'contact_source': 'static', 'contact_positions': [0, 0.05, 0, 0, -0.05, 0],
              'contact_orientations': [0.7071067811865476, 0, 0, 0.7071067811865476,
                                       -0.7071067811865476, 0, 0, 0.7071067811865476],
              'friction_coefficients': [0.5, 0.5], 'friction_mode': 'auto',
              'command_frame': 'object', 'on_limit': 'scale', 'force_limits': [8.0]}
    engine = engine_for(params)
    out = engine.step(0, [0.0, 0.0, 9.0, 0, 0, 0], 0, 0)
    assert out.cause == 'limit' and out.commands is not None
    rot = Rotation.from_quat(np.reshape(params['contact_orientations'], (2, 4)))
    local = np.array([r.inv().apply(f) for r, f in zip(rot, out.commands[:, :3])])
    assert np.linalg.norm(out.commands[:, :3], axis=1).max() <= 8.0 + 1e-9
    assert local[0, 2] > 0 and abs(local[0, 2] - local[1, 2]) < 1e-9  # equal pinch, pushing
    # the only internal element of a two-finger pinch is the squeeze: its coordinate is the
    # pinch force each finger sends
    np.testing.assert_allclose(engine.friction.added, [local[0, 2]], rtol=1e-9)


# -- defect (b): refused inputs never reset the watchdog ----------------------------------------
@pytest.mark.parametrize('policy', ['hold', 'zero', 'scale'])
@pytest.mark.parametrize('bad', ['over_limit', 'nan', 'over_command_limit'])
def test_refused_stream_lets_the_watchdog_trip(policy, bad):
    params = {'effectors': ['l', 'r'], 'contact_source': 'static', 'input_timeout': 0.1,
              'contact_positions': [0, 0.3, 0, 0, -0.3, 0], 'on_limit': policy,
              'desired_force_limit': 100.0, 'force_limits': [80.0],
              'contact_orientations': [0, 0, 0, 1] * 2}
    engine = engine_for(params)
    assert engine.step(0, [0, 0, 10.0, 0, 0, 0], 0, 0).valid
    wrench = {'over_limit': [0, 0, 500.0, 0, 0, 0], 'nan': [0, 0, float('nan'), 0, 0, 0],
              'over_command_limit': [0, 0, 99.0, 90.0, 0, 0]}[bad]
    trips = []
    for k in range(1, 40):  # 10 ms apart, for 0.39 s: the timeout is 0.1 s
        out = engine.step(0, wrench, 0, k * 10 * MS)
        assert not out.valid
        trips.append(engine.guard.watchdog(k * 10 * MS, 0))
        if engine.guard.timed_out:  # once timed out, a refused input publishes nothing
            assert out.commands is None or trips[-1] == 'timeout'
    assert trips.count('timeout') == 1 and trips.index('timeout') in (9, 10)
    assert engine.step(0, [0, 0, 10.0, 0, 0, 0], 0, 40 * 10 * MS).valid  # a valid one resets
    assert engine.guard.watchdog(40 * 10 * MS, 0) is None and not engine.guard.timed_out


@SETTINGS
@given(grasps(), st.floats(0.05, 80.0), st.sampled_from(['', 'world']))
def test_hold_object_weight_adds_the_weight_at_the_centre_of_mass(grasp, mass, gravity_frame):
    """Resultant of the commands = desired - m g_o, about the CoM (the weight has no torque there).

    ``g_o``, gravity in the object frame, is derived here: ``R^T g`` with ``R`` the object's
    orientation in ``gravity_frame`` as a scipy matrix (any orientation), or ``g`` itself
    when gravity is given in the object frame. Until the orientation comes, no command.
    """
    params, rng = grasp
    n = len(params['effectors'])
    gravity = rng.normal(size=3) * 5.0
    params.update(contact_types=['rigid'] * n, hold_object_weight=True, object_mass=mass,
                  gravity=gravity.tolist(), gravity_frame=gravity_frame,
                  contact_source='tf' if gravity_frame else 'static',
                  contact_frames=[f'c{i}' for i in range(n)], internal_load_feedback=False,
                  desired_force_limit=1e9, desired_torque_limit=1e9, force_limits=[1e9],
                  torque_limits=[1e9])
    engine = engine_for(params)
    desired = rng.normal(size=6) * 10.0
    g_object = gravity
    if gravity_frame:
        missing = engine.step(0, desired, 0, 0)
        assert missing.commands is None and 'hold_object_weight' in missing.message
        orientation = Rotation.random(random_state=int(rng.integers(2 ** 31)))
        engine.weight.offer_orientation(orientation.as_quat())
        g_object = orientation.as_matrix().T @ gravity
    out = engine.step(0, desired, 0, MS)
    # nearly coincident contacts in km need commands beyond the largest configurable limit
    # (1e9): refused, as test_no_command_beyond_a_limit_whatever_the_correction checks
    assume(out.cause != 'limit')
    assert out.valid, out.message
    expected = desired + np.concatenate([-mass * g_object, np.zeros(3)])
    scale = max(1.0, np.abs(out.commands).max())
    np.testing.assert_allclose(resultant(params, out.commands), expected,
                               atol=1e-9 * scale * max(1.0, *np.abs(params['contact_positions'])))
    assert 'on: ' in engine.report(MS).values['hold_object_weight']


def test_hold_object_weight_refuses_what_it_cannot_hold():
    """No mass, or a gravity frame without tf: a ConfigError naming the parameter."""
    from wrench_distribution.config import ConfigError
    base = {'effectors': ['a', 'b'], 'contact_source': 'static',
            'contact_positions': [0.0, 0.1, 0.0, 0.0, -0.1, 0.0], 'hold_object_weight': True}
    with pytest.raises(ConfigError, match="'hold_object_weight'.*object_mass > 0"):
        validate_params('distributor', base)
    with pytest.raises(ConfigError, match="'gravity_frame'.*contact_source tf"):
        validate_params('distributor', dict(base, object_mass=2.0, gravity_frame='world'))
    engine = engine_for(dict(base, object_mass=2.0, contact_orientations=[0, 0, 0, 1.0] * 2))
    out = engine.step(0, [0.0] * 6, 0, 0)  # gravity -9.81 z in the object frame
    assert out.commands[:, 2].sum() == pytest.approx(2.0 * 9.81)


def test_diagnostics_show_the_shipped_dual_arm_internal_load_without_residue():
    """config/dual_arm.yaml squeezes 15 N: diagnostics read 15, 0, ..., with the regime in words.

    Its solver leaves rounding residue in the other elements (2.8e-33, -1.2e-15, ...); the
    values shown follow core.codec's one rule, the internal load itself is left as computed.
    """
    import os

    from ros_harness import REPO
    from wrench_distribution.config import read_ros_params_yaml
    path = os.path.join(REPO, 'config', 'dual_arm.yaml')
    engine = engine_for(read_ros_params_yaml(path, 'wrench_distributor'))
    assert engine.step(1, [0.0, 0.0, 39.24, 0.0, 0.0, 0.0], 1, 1).commands is not None
    report = engine.report(2)
    values, per = report.values, report.per_concern
    assert values['internal_load'] == '15, 0, 0, 0, 0, 0'
    assert per['feedback']['twist(left,right)'] == 'commanded 0, measured -, correction -'
    assert values['regime'] == 'extension'
    assert values['regime_message'].startswith('extension (not a fault:')
    assert 'collinear' in values['regime_message']


def test_markers_are_made_only_while_they_have_a_reader():
    """No reader: no marker data, so nobody pays for it.

    The first wrench read gets them at once, then one per ``markers_period``; their resultant
    arrow is the desired wrench as received.
    """
    params = {'effectors': ['a', 'b'], 'contact_source': 'static',
              'contact_positions': [0.3, 0.0, 0.0, -0.3, 0.0, 0.0],
              'contact_orientations': [0.0, 0.0, 0.0, 1.0] * 2, 'object_com': [0.0, 0.0, 0.0],
              'markers_period': 0.1}
    engine = engine_for(params)
    wrench = [1.0, -2.0, 3.0, 0.1, 0.0, -0.1]
    assert engine.step(1, wrench, 0, 0, markers_read=False).markers is None
    assert engine.step(2, wrench, 0, 200 * MS, markers_read=False).markers is None
    first = engine.step(3, wrench, 0, 201 * MS, markers_read=True).markers
    assert first is not None
    assert list(first.resultant) == wrench
    assert engine.step(4, wrench, 0, 250 * MS, markers_read=True).markers is None  # within the period
    assert engine.step(5, wrench, 0, 302 * MS, markers_read=True).markers is not None


# -- the managed node's stop and resume -------------------------------------------------------
@SETTINGS
@given(grasps())
def test_the_stop_is_zero_wrenches_to_every_effector_and_leaves_the_commands(grasp):
    """The stop is no fault: what the engine commands next for a wrench is what it did before."""
    params, rng = grasp
    engine = engine_for(params)
    wrench = rng.uniform(-20.0, 20.0, 6)
    before = engine.step(0, wrench, 0, 0).commands
    stop = engine.stop()
    n = len(params['effectors'])
    assert stop.commands.shape == (n, 6) and not stop.commands.any()
    assert stop.key == 'stops_published' and stop.message == 'zero wrenches to every effector'
    np.testing.assert_array_equal(engine.step(0, wrench, 0, MS).commands, before)


@pytest.mark.parametrize('on_timeout', ['zero', 'stop'])
def test_resume_starts_the_input_timeout_afresh_and_only_after_an_input(on_timeout):
    """A pause longer than input_timeout trips nothing at activate: the timeout counts from then."""
    params = {'effectors': ['l', 'r'], 'contact_source': 'static', 'input_timeout': 0.1,
              'on_timeout': on_timeout, 'contact_positions': [0, 0.3, 0, 0, -0.3, 0],
              'contact_orientations': [0, 0, 0, 1] * 2}
    engine = engine_for(params)
    engine.resume(0, 0)  # before any input: still waiting for one
    assert engine.guard.last_valid_ns is None and engine.tick(10_000 * MS, 0).cause is None
    assert engine.step(0, [0, 0, 10.0, 0, 0, 0], 0, 0).valid
    paused = 5_000 * MS  # 5 s inactive
    engine.resume(paused, 0)
    assert engine.tick(paused + 90 * MS, 0).cause is None  # within 0.1 s of the resume
    tripped = engine.tick(paused + 110 * MS, 0)
    assert tripped.cause == 'timeout' and (tripped.commands is not None) == (on_timeout == 'zero')
