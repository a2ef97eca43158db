"""The friction feedback (engine/friction_feedback.py) in the distribution engine, without ROS.

Grasps are drawn by hypothesis: 2 to 5 fingertips (point contacts with Coulomb friction) on a
sphere of any unit, antipodal pairs, coplanar rings, nearly coincident tips, the centre of
mass inside or far outside the hull. The desired wrench is the resultant of contact forces
drawn inside cones narrowed to 4 % of ``mu``, so auto mode can meet every margin the
parameters allow. References are derived here: the resultant of the commands by hand
(``F = sum f_i``, ``T = sum t_i + (p_i - c) x f_i``), the utilisation as
``|f - (n.f) n| / (mu n.f)`` in the contact frame, the effective margin as
``friction_margin + kp * (u - (1 - friction_margin))`` clipped by hand.
"""
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from test_distribution_engine import engine_for, resultant

from wrench_distribution.config import changed_config, ConfigError, validate_params
from wrench_distribution.core.friction import FRICTION_FIELDS, STATUSES
from wrench_distribution.engine.feedback import RELEASE_S

SETTINGS = settings(deadline=None, max_examples=30,
                    suppress_health_check=[HealthCheck.too_slow])
MS = 1_000_000
OK, NEAR, SLIPPING, PULLING, UNLOADED = (STATUSES.index(s) for s in
                                         ('ok', 'near_limit', 'slipping', 'pulling', 'unloaded'))


@st.composite
def hands(draw):
    """Draw fingertips on a sphere, as distributor parameters, and a reachable desired wrench."""
    layout = draw(st.sampled_from(['general', 'antipodal', 'coplanar', 'nearly_coincident']))
    n = 2 if layout == 'antipodal' else draw(st.integers(3, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    unit = draw(st.sampled_from([0.001, 1.0, 1000.0]))
    directions = rng.normal(size=(n, 3))
    if layout == 'antipodal':
        directions[1] = -directions[0]
    elif layout == 'coplanar':
        directions[:, 2] = 0.0
    elif layout == 'nearly_coincident':
        directions[-1] = directions[0] + rng.normal(size=3) * 1e-3
    directions /= np.linalg.norm(directions, axis=1)[:, None]
    radius = 0.04 * unit
    positions = directions * radius
    # contact frame: z along the inward normal, a random turn about it
    frames = [Rotation.align_vectors([-d], [[0.0, 0.0, 1.0]])[0]
              * Rotation.from_euler('z', rng.uniform(0, 2 * np.pi)) for d in directions]
    mu = rng.uniform(0.3, 1.2, size=n)
    com = positions.mean(0) + rng.normal(size=3) * radius * draw(st.sampled_from([0.0, 0.3, 3.0]))
    # forces deep inside the cones: utilisation <= 0.04, pressing 1 to 10 N
    normal = rng.uniform(1.0, 10.0, size=n)
    tangent = rng.normal(size=(n, 2))
    tangent *= (rng.uniform(0, 0.04, size=n) * mu * normal / np.linalg.norm(tangent, axis=1))[:, None]
    local = np.column_stack([tangent, normal])
    forces = np.array([r.apply(f) for r, f in zip(frames, local)])
    wrench = np.concatenate([forces.sum(0), np.cross(positions - com, forces).sum(0)])
    params = {
        'effectors': [f'f{i}' for i in range(n)], 'contact_source': 'static',
        'contact_types': ['point'] * n, 'friction_coefficients': mu.tolist(),
        'contact_positions': positions.reshape(-1).tolist(),
        'contact_orientations': np.array([r.as_quat() for r in frames]).reshape(-1).tolist(),
        'object_com': com.tolist(),
        'command_frame': draw(st.sampled_from(['object', 'contact'])),
        'command_sign': draw(st.sampled_from([1, -1])),
        'friction_mode': 'auto', 'friction_feedback': True,
        'friction_margin': draw(st.sampled_from([0.0, 0.1, 0.3])),
        'friction_feedback_kp': 1.0, 'friction_feedback_ki': 0.0,
        'friction_feedback_limit': 0.6,
        'force_limits': [1e8], 'torque_limits': [1e8], 'internal_load_limit': 1e8,
        'desired_force_limit': 1e8, 'desired_torque_limit': 1e8, 'input_timeout': 0.0,
    }
    return params, wrench


def in_contact_frames(params, commands):
    """Return the forces on the object, contact frames, of commands as published (by hand)."""
    n = len(params['effectors'])
    f = np.asarray(commands, float)[:, :3] * params['command_sign']
    if params['command_frame'] == 'object':
        rot = Rotation.from_quat(np.reshape(params['contact_orientations'], (n, 4)))
        f = rot.inv().apply(f)
    return f


def utilisations(params, commands):
    """``(n.f, |f_t| / (mu n.f))`` per contact, normal +z in the contact frame (by hand).

    A contact left unloaded (force below 1e-6 of the largest: the solver's accuracy) has no
    meaningful utilisation: NaN.
    """
    f = in_contact_frames(params, commands)
    normal = f[:, 2]
    size = np.linalg.norm(f, axis=1)
    loaded = size > 1e-6 * size.max()
    with np.errstate(divide='ignore', invalid='ignore'):
        ratio = np.linalg.norm(f[:, :2], axis=1) / (np.array(params['friction_coefficients'])
                                                    * normal)
    return np.where(loaded, normal, np.abs(normal)), np.where(loaded, ratio, np.nan)


def friction_message(names, utilisation, codes=None, normal=1.0):
    """Labels and data as the analyzer's friction topic lays them out (ros/friction.py)."""
    codes = [OK] * len(names) if codes is None else codes
    rows = np.column_stack([utilisation, np.full(len(names), normal), codes])
    return [';'.join(names), FRICTION_FIELDS], rows.reshape(-1)


def impose(engine, excess, t_ns):
    """Measure at the target (bumpless seed), then ``excess`` above it: kp = 1 sets the margin."""
    names = engine.names
    target = 1.0 - engine.settings.friction.margin
    assert engine.friction.offer_measurement(*friction_message(names, [target] * len(names)),
                                             t_ns) is None
    assert engine.friction.offer_measurement(
        *friction_message(names, [target + excess] + [0.0] * (len(names) - 1)), t_ns + MS) is None
    return t_ns + MS


@SETTINGS
@given(hands())
def test_utilisation_above_target_tightens_the_cones_and_pushes_harder(hand):
    params, wrench = hand
    margin, limit = params['friction_margin'], params['friction_feedback_limit']
    scale = np.abs(wrench).max() * max(1.0, *np.abs(params['contact_positions']))
    previous = None
    for excess in (0.0, 0.05, 0.2, 0.8):  # the last is beyond friction_feedback_limit
        engine = engine_for(params)
        t = impose(engine, excess, 0)
        expected = margin + min(excess, limit)
        assert engine.friction.feedback.effective_margin(t) == pytest.approx(expected, abs=1e-12)
        outcome = engine.step(0, wrench, 0, t)
        assert outcome.valid, outcome.message
        np.testing.assert_allclose(resultant(params, outcome.commands), wrench, atol=1e-8 * scale)
        normal, utilisation = utilisations(params, outcome.commands)
        assert np.all(normal > 0)  # pressing (or unloaded)
        assert np.nanmax(utilisation) <= 1.0 - expected + 1e-6  # inside the tightened cones
        total = normal.sum()
        if previous is not None:  # tighter cones: at least as much squeeze, never less
            assert total >= previous[0] - 1e-6 * previous[0]
            if np.nanmax(previous[1]) > 1.0 - expected + 1e-5:  # the looser commands would not do
                assert total > previous[0]
        previous = (total, utilisation)


@SETTINGS
@given(hands(), st.floats(0.3, 3.0))
def test_no_command_beyond_a_limit_the_extra_squeeze_is_cut_back(hand, share):
    params, wrench = hand
    open_loop = engine_for(dict(params, friction_feedback=False)).step(0, wrench, 0, 0)
    assert open_loop.valid, open_loop.message
    limit = share * np.linalg.norm(open_loop.commands[:, :3], axis=1).max()
    params = dict(params, force_limits=[limit])
    engine = engine_for(params)
    t = impose(engine, 0.8, 0)
    outcome = engine.step(0, wrench, 0, t)
    if outcome.commands is not None:
        assert np.all(np.linalg.norm(outcome.commands[:, :3], axis=1) <= limit)
    if share >= 1.0:  # the open loop fits: the feedback is cut back, the command set is not
        assert outcome.valid, outcome.message
        scale = np.abs(wrench).max() * max(1.0, *np.abs(params['contact_positions']))
        np.testing.assert_allclose(resultant(params, outcome.commands), wrench,
                                   atol=1e-8 * scale)
        _, utilisation = utilisations(params, outcome.commands)
        assert np.nanmax(utilisation) <= 1.0 - params['friction_margin'] + 1e-6


# -- one hand, the loop's states -----------------------------------------------------------
QUATS = [[0.5, -0.5, 0.5, 0.5], [-0.6830127, -0.1830127, -0.6830127, 0.1830127],
         [-0.1830127, -0.6830127, -0.1830127, 0.6830127]]
HAND = {'effectors': ['thumb', 'index', 'middle'], 'contact_types': ['point'] * 3,
        'contact_source': 'static', 'friction_coefficients': [0.5] * 3,
        'contact_positions': [0.0, 0.04, 0.0, -0.034641, -0.02, 0.0, 0.034641, -0.02, 0.0],
        'contact_orientations': sum(QUATS, []), 'object_com': [0.004, 0.0, -0.005],
        'command_frame': 'contact', 'command_sign': 1, 'friction_margin': 0.1,
        'friction_mode': 'auto', 'friction_feedback': True, 'friction_feedback_kp': 1.0,
        'friction_feedback_ki': 0.0, 'friction_feedback_limit': 0.3,
        'friction_feedback_timeout': 0.2, 'input_timeout': 0.0}
NAMES = HAND['effectors']
WRENCH = np.array([0.5, 0.3, 3.0, 0.01, 0.0, 0.0])


@pytest.mark.parametrize('labels, values, key', [
    (['index;thumb;middle', FRICTION_FIELDS], None, 'rejected_labels'),   # same data, swapped
    (['thumb;index;middle', 'utilisation;normal_force'], None, 'rejected_labels'),
    (['thumb;index;middle'], None, 'rejected_labels'),
    ([], None, 'rejected_labels'),
    (None, None, 'rejected_labels'),
    (['thumb;index;middle', FRICTION_FIELDS], np.ones(6), 'rejected_values'),
    (['thumb;index;middle', FRICTION_FIELDS], np.full(9, np.nan), 'rejected_values'),
    (['thumb;index;middle', FRICTION_FIELDS],
     np.array([-1.0, -2.0, PULLING, 0.0, 0.0, UNLOADED, -1.0, -1.0, PULLING]),
     'suspended_no_contact'),
])
def test_mislabelled_or_unusable_measurement_suspends_and_holds_the_margin(labels, values, key):
    engine = engine_for(HAND)
    t = impose(engine, 0.1, 0)
    before = engine.friction.feedback.effective_margin(t)
    assert before == pytest.approx(0.2)
    good = friction_message(NAMES, [1.2, 0.5, 0.5])[1]  # far above target: would tighten
    why = engine.friction.offer_measurement(labels, good if values is None else values, t + MS)
    assert why is not None
    fb = engine.friction.feedback
    assert fb.counters == {f'friction_feedback_{key}': 1}
    assert fb.status().startswith('suspended: ')
    assert fb.effective_margin(t + MS) == before
    level, text = engine.friction.feedback_condition(t + MS)
    assert 'friction feedback suspended' in text and level > 0


def test_only_contacts_in_contact_count_and_slipping_does():
    engine = engine_for(HAND)
    t = impose(engine, 0.0, 0)
    labels, data = friction_message(NAMES, [-1.0, 1.3, 0.95], codes=[PULLING, SLIPPING, NEAR])
    assert engine.friction.offer_measurement(labels, data, t + MS) is None
    assert engine.friction.feedback.measured[0] == 1.3  # the slipping one; pulling ignored
    # unloaded (utilisation 0) and undefined slipping (-1) do not count either
    labels, data = friction_message(NAMES, [0.0, -1.0, 0.7], codes=[UNLOADED, SLIPPING, OK])
    assert engine.friction.offer_measurement(labels, data, t + 2 * MS) is None
    assert engine.friction.feedback.measured[0] == 0.7


def test_stale_measurement_suspends_counts_once_and_holds_then_resumes():
    engine = engine_for(HAND)
    t = impose(engine, 0.1, 0)
    fb = engine.friction.feedback
    late = t + 201 * MS  # friction_feedback_timeout 0.2 s
    assert fb.effective_margin(late) == pytest.approx(0.2)  # held
    assert 'stale' in fb.suspended and 'friction_feedback_timeout 0.2' in fb.suspended
    fb.effective_margin(late + 500 * MS)
    assert fb.counters == {'friction_feedback_suspended_stale': 1}
    assert 'friction feedback suspended' in engine.report(late).conditions['friction'][-1][1]
    # resumes bumplessly: the first measurement after keeps the margin, the next moves it
    labels, data = friction_message(NAMES, [0.95, 0.1, 0.1])
    assert engine.friction.offer_measurement(labels, data, late + MS) is None
    assert fb.status() == 'closed loop'
    assert fb.effective_margin(late + MS) == pytest.approx(0.2)
    labels, data = friction_message(NAMES, [1.0, 0.1, 0.1])
    engine.friction.offer_measurement(labels, data, late + 2 * MS)
    assert fb.effective_margin(late + 2 * MS) == pytest.approx(0.25)


def test_contact_change_suspends_until_a_new_measurement():
    engine = engine_for(HAND)
    t = impose(engine, 0.1, 0)
    moved = np.reshape(HAND['contact_positions'], (3, 3)) * 1.5
    update = engine.offer_contacts(moved, np.reshape(HAND['contact_orientations'], (3, 4)), t + MS)
    assert update.rebuilt and update.refusal is None
    fb = engine.friction.feedback
    assert fb.suspended.startswith('contacts changed')
    assert fb.counters == {'friction_feedback_suspended_contacts': 1}
    assert fb.effective_margin(t + MS) == pytest.approx(0.2)
    labels, data = friction_message(NAMES, [0.9, 0.1, 0.1])
    assert engine.friction.offer_measurement(labels, data, t + 2 * MS) is None
    assert fb.suspended is None


def test_switching_off_ramps_the_margin_back_and_on_starts_where_it_is():
    engine = engine_for(HAND)
    t = impose(engine, 0.2, 0)
    fb = engine.friction.feedback
    assert fb.effective_margin(t) == pytest.approx(0.3)
    engine.adopt(engine.plan(changed_config(engine.config, {'friction_feedback': False})), t)
    assert fb.effective_margin(t) == pytest.approx(0.3)  # no jump
    half = t + int(RELEASE_S * 0.5e9)
    assert fb.effective_margin(half) == pytest.approx(0.2)
    engine.adopt(engine.plan(changed_config(engine.config, {'friction_feedback': True})), half)
    assert fb.effective_margin(half) == pytest.approx(0.2)  # on again: from where it was
    labels, data = friction_message(NAMES, [0.95, 0.1, 0.1])
    engine.friction.offer_measurement(labels, data, half + MS)
    assert fb.effective_margin(half + MS) == pytest.approx(0.2)  # first measurement: bumpless
    engine.adopt(engine.plan(changed_config(engine.config, {'friction_feedback': False})),
                 half + 2 * MS)
    assert fb.effective_margin(half + 2 * MS + int(RELEASE_S * 1e9) + MS) == 0.1


def test_integral_clamps_at_the_limit_and_unwinds_at_once():
    engine = engine_for(dict(HAND, friction_feedback_kp=0.0, friction_feedback_ki=10.0))
    fb = engine.friction.feedback
    t = 0
    for _ in range(200):  # 2 s at 1.0 > 0.9: ki * e * t = 2, far beyond the limit 0.3
        t += 10 * MS
        engine.friction.offer_measurement(*friction_message(NAMES, [1.0, 0.1, 0.1]), t)
    assert fb.effective_margin(t) == pytest.approx(0.1 + 0.3)
    assert fb.integral[0] <= 0.3 + 10.0 * 0.1 * 0.01 + 1e-12  # one step beyond at most
    t += 10 * MS
    engine.friction.offer_measurement(*friction_message(NAMES, [0.8, 0.1, 0.1]), t)
    assert fb.effective_margin(t) < 0.4  # below target: the margin comes down at once


def test_margin_stays_at_friction_margin_while_measured_under_target():
    engine = engine_for(HAND)
    t = impose(engine, -0.3, 0)  # measured 0.6, target 0.9
    assert engine.friction.feedback.effective_margin(t) == 0.1


@pytest.mark.parametrize('change, name', [
    ({'friction_mode': 'check'}, 'friction_feedback'),
    ({'friction_margin': 0.7, 'friction_feedback_limit': 0.3}, 'friction_feedback_limit'),
])
def test_parameters_refused_naming_the_parameter(change, name):
    with pytest.raises(ConfigError, match=f"parameter '{name}'.*accepted"):
        validate_params('distributor', dict(HAND, **change))


def test_a_large_first_error_does_not_hold_the_margin_down_afterwards():
    # bumpless seed at utilisation 1.5 (e = 0.6): I = -kp e = -0.3; then e = 0.05 at 10 ms
    engine = engine_for(dict(HAND, friction_feedback_kp=0.5, friction_feedback_ki=2.0))
    fb = engine.friction.feedback
    engine.friction.offer_measurement(*friction_message(NAMES, [1.5, 0.1, 0.1]), 10 * MS)
    assert fb.effective_margin(10 * MS) == 0.1  # bumpless: no jump at the first one
    for k in range(2, 12):
        engine.friction.offer_measurement(*friction_message(NAMES, [0.95, 0.1, 0.1]), 10 * MS * k)
    # tracking anti-windup: I is at -kp e after the second, then grows by ki e dt = 0.001 a step
    assert fb.effective_margin(110 * MS) == pytest.approx(0.1 + 9 * 0.001, abs=1e-9)


def test_margin_floor_is_checked_only_with_the_loop_on():
    # a large friction_margin alone stays valid with the feedback off (default limit 0.3)
    validate_params('distributor', dict(HAND, friction_margin=0.9, friction_feedback=False))
    with pytest.raises(ConfigError, match="'friction_feedback_limit'.*<= 0.95"):
        validate_params('distributor', dict(HAND, friction_margin=0.9))
