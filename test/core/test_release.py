"""Refused before it starts (docs/theory.md, 16.6): a change of weights the contacts cannot carry.

The references are worked out here: a triangle of point feet holds the centre of mass pushing
only exactly when its barycentric coordinates are all positive (computed by hand), and the foot
that would pull is the one across the tipping edge; a friction cone's capacity by hand.
"""
from hypothesis import assume, given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np

from wrench_distribution.core import Contact, DistributionOptions, ObjectModel
from wrench_distribution.core.release import check_transition, REASONS, transition_subsets

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=40)
FEET = [('lf', (0.3, 0.2, 0.0)), ('rf', (0.3, -0.2, 0.0)), ('lh', (-0.3, 0.2, 0.0)), ('rh', (-0.3, -0.2, 0.0))]


def barycentric(triangle, point):
    """Barycentric coordinates of a point of the plane in a triangle (3, 2), by hand."""
    a, b, c = triangle
    matrix = np.column_stack([b - a, c - a])
    beta, gamma = np.linalg.solve(matrix, point - a)
    return np.array([1.0 - beta - gamma, beta, gamma])


@SETTINGS
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from([1e-3, 1.0, 1e3]), st.booleans())
def test_three_point_feet_carry_the_trunk_pushing_only_exactly_when_they_hold_its_centre(seed, unit, tilted):
    rng = np.random.default_rng(seed)
    feet = rng.uniform(-0.4, 0.4, size=(4, 2))
    com2 = rng.uniform(-0.3, 0.3, size=2)
    coordinates = barycentric(feet[1:], com2)
    assume(np.abs(coordinates).min() > 0.02)                      # away from the edges
    height = 0.5 if not tilted else 0.0
    contacts = [Contact(f'f{k}', 'point', unit * np.r_[p, 0.0]) for k, p in enumerate(feet)]
    model = ObjectModel(com=unit * np.r_[com2, height])
    weight = np.array([0.0, 0.0, 150.0, 0.0, 0.0, 0.0])
    check = check_transition(contacts, model, None, None, [0, 1, 1, 1], weight)
    if np.all(coordinates > 0):
        assert check.allowed and check.reason == '' and check.contacts == ()
        return
    assert not check.allowed and check.reason == 'not_pushing'
    assert check.contacts == ('f1', 'f2', 'f3')
    assert 'without f0' in check.message and REASONS['not_pushing'] in check.message
    # three feet share a vertical load uniquely: the normal forces are 150 N times the coordinates,
    # so the feet that would pull are those with a negative coordinate (across the tipping edge)
    # and each pulls by 150 N times it
    pulls = check.message.split('pulls on ')[1].split(' (')[0]
    for k, coordinate in enumerate(coordinates):
        if coordinate < 0:
            assert f'f{k + 1} by {-coordinate * 150.0:.4g} N' in pulls
        else:
            assert f'f{k + 1}' not in pulls


def test_a_foot_lifted_over_the_remaining_triangle_is_allowed_and_the_fourth_refused():
    feet = [Contact(n, 'point', p, friction=0.8) for n, p in FEET]
    model = ObjectModel(com=(-0.1, 0.05, 0.4))   # over the triangle rf, lh, rh, not over lf, rf, rh
    weight = np.array([0.0, 0.0, 200.0, 0.0, 0.0, 0.0])
    inside = barycentric(np.array([p[:2] for _, p in FEET[1:]]), np.array([-0.1, 0.05]))
    assert np.all(inside > 0)                              # rf, lh, rh hold it: lf may lift
    assert check_transition(feet, model, None, None, [0, 1, 1, 1], weight).allowed
    outside = barycentric(np.array([p[:2] for n, p in FEET if n != 'lh']), np.array([-0.1, 0.05]))
    assert outside.min() < 0                               # lf, rf, rh do not: lh may not
    refused = check_transition(feet, model, None, None, [1, 1, 0, 1], weight)
    assert refused.reason == 'not_pushing' and refused.contacts == ('lf', 'rf', 'rh')
    assert 'pulls on rf' in refused.message                # rf is across the lf-rh diagonal from the CoM


def test_friction_the_remaining_feet_cannot_hold_is_refused_with_the_contacts_named():
    # a sideways push of 60 N on a 200 N trunk over the triangle lf, rf, lh (its centre of pressure,
    # (0.1 + 60 * 0.4 / 200, 0.05), still inside): mu = 0.2 holds at most 40 N, mu = 0.5 at most 100 N
    model = ObjectModel(com=(0.1, 0.05, 0.4))
    push = np.array([60.0, 0.0, 200.0, 0.0, 0.0, 0.0])
    for mu, allowed in ((0.2, False), (0.5, True)):
        feet = [Contact(n, 'point', p, friction=mu) for n, p in FEET]
        check = check_transition(feet, model, None, None, [1, 1, 1, 0], push)
        assert check.allowed is allowed
        if not allowed:
            assert check.reason == 'friction' and check.contacts == ('lf', 'rf', 'lh')
            # 60 N needed, 0.2 * 200 = 40 N available over the three feet: 20 N short in all
            assert 'more tangential force' in check.message
    # the margin tightens the cones: 0.5 * (1 - 0.5) * 200 = 50 N < 60 N
    feet = [Contact(n, 'point', p, friction=0.5) for n, p in FEET]
    assert check_transition(feet, model, None, None, [1, 1, 1, 0], push, margin=0.5).reason == 'friction'


def test_two_point_contacts_asked_for_a_torque_about_their_line_are_refused():
    fingers = [Contact('thumb', 'point', (0.05, 0.0, 0.0)), Contact('index', 'point', (-0.025, 0.043, 0.0)),
               Contact('middle', 'point', (-0.025, -0.043, 0.0))]
    model = ObjectModel(com=(0.0, 0.0, 0.0))
    # index and middle lie on the line x = -0.025, along y: a torque about y they cannot make
    check = check_transition(fingers, model, None, None, [0, 1, 1], [0, 0, 0, 0, 0.01, 0])
    assert check.reason == 'unrealisable' and check.contacts == ('index', 'middle')
    assert 'ty=' in check.message and 'cannot be produced' in check.message
    # a torque across their line is a couple of tangential forces: allowed (no friction given)
    assert check_transition(fingers, model, None, None, [0, 1, 1], [0, 0, 0, 0, 0, 0.01]).allowed
    # a push up through their line, with their normals up: allowed; down: they would pull
    on_line = ObjectModel(com=(-0.025, 0.0, 0.0))
    assert check_transition(fingers, on_line, None, None, [0, 1, 1], [0, 0, 1.0, 0, 0, 0]).allowed
    assert check_transition(fingers, on_line, None, None, [0, 1, 1], [0, 0, -1.0, 0, 0, 0]).reason == 'not_pushing'


def test_releasing_every_contact_or_against_the_options_is_refused():
    arms = [Contact('a', 'rigid', (0, 0.3, 0)), Contact('b', 'rigid', (0, -0.3, 0)), Contact('c', 'point', (0.3, 0, 0))]
    model = ObjectModel(com=(0, 0, -0.1))
    lift = np.array([0.0, 0.0, 50.0, 0.0, 0.0, 0.0])
    gone = check_transition(arms, model, None, [1, 1, 1], [0, 0, 0], lift)
    assert gone.reason == 'no_contact_left' and gone.contacts == ()
    only_a = DistributionOptions(torque_weights=[1.0, 0.0, 0.0])
    refused = check_transition(arms, model, only_a, None, [0, 1, 1], lift)
    assert refused.reason == 'options' and 'torque_weights' in refused.message
    assert check_transition(arms, model, None, None, [0, 1, 1], lift).allowed


def test_a_simultaneous_hand_over_checks_the_contact_that_stays_alone():
    rigid = [Contact('a', 'rigid', (0, 0.3, 0)), Contact('b', 'rigid', (0, -0.3, 0)),
             Contact('c', 'rigid', (0.3, 0, 0))]
    points = [Contact(c.name, 'point', c.position) for c in rigid]
    # the load's line (vertical through the centre of mass) crosses the line b-c: b and c can lift it
    model, wrench = ObjectModel(com=(0.1, -0.2, -0.05)), np.array([0, 0, 30.0, 0, 0, 0])
    masks = transition_subsets(np.array([1.0, 1.0, 0.0]), np.array([0.0, 1.0, 1.0]))
    assert [tuple(m) for m in masks] == [(False, True, True), (False, True, False)]
    assert check_transition(rigid, model, None, [1, 1, 0], [0, 1, 1], wrench).allowed   # b alone holds it
    check = check_transition(points, model, None, [1, 1, 0], [0, 1, 1], wrench)
    assert not check.allowed and check.contacts == ('b',) and check.reason == 'unrealisable'
    # one at a time: first add c (nothing can get weaker), then release a with b and c holding
    assert transition_subsets(np.array([1.0, 1.0, 0.0]), np.array([1.0, 1.0, 1.0])) == []
    assert check_transition(points, model, None, [1, 1, 0], [1, 1, 1], wrench).allowed
    assert check_transition(points, model, None, [1, 1, 1], [0, 1, 1], wrench).allowed


def test_the_check_is_the_same_in_any_unit():
    feet = [Contact(n, 'point', p, friction=0.3) for n, p in FEET]
    model = ObjectModel(com=(-0.2, 0.15, 0.4))
    push = np.array([20.0, -10.0, 200.0, 1.0, -2.0, 0.5])
    base = check_transition(feet, model, None, None, [1, 0, 1, 1], push)
    for unit in (1e-3, 1e3):
        moved = [Contact(f.name, f.type, unit * np.array(f.position), friction=0.3) for f in feet]
        other = check_transition(moved, ObjectModel(com=unit * np.array(model.com)), None, None, [1, 0, 1, 1],
                                 np.r_[push[:3], unit * push[3:]])
        assert (other.allowed, other.reason, other.contacts) == (base.allowed, base.reason, base.contacts)


def test_a_partial_weight_mixes_in_the_set_without_the_contact_and_is_checked_like_a_release():
    feet = [Contact(n, 'point', p) for n, p in FEET]
    model = ObjectModel(com=(0.2, 0.1, 0.4))       # over lf's corner: no triangle without lf holds it
    weight = np.array([0.0, 0.0, 200.0, 0.0, 0.0, 0.0])
    assert check_transition(feet, model, None, None, [1, 1, 1, 1], weight).allowed      # nothing moves
    for target in ([0.5, 1, 1, 1], [0, 1, 1, 1]):
        check = check_transition(feet, model, None, None, target, weight)
        assert check.reason == 'not_pushing' and check.contacts == ('rf', 'lh', 'rh')
    # from a partial weight back to 1: nothing gets weaker
    assert check_transition(feet, model, None, [0.5, 1, 1, 1], [1, 1, 1, 1], weight).allowed
